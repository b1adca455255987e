"""A small parser for the Metrics Insights queries gpudash writes, so lint can check them.

Grammar (AWS user guide, "Metrics Insights query components and syntax"):
SELECT FUNCTION(metric) FROM namespace | SCHEMA(namespace, dim, ...)
[WHERE dim = 'value' [AND ...]] [GROUP BY dim, ...] [ORDER BY FUNCTION() ASC|DESC] [LIMIT n]

Identifiers may be double-quoted; string literals are single-quoted, and a quote or a
backslash inside either is escaped with a backslash.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterator

from ..resources import reserved_keywords

FUNCTIONS = ("AVG", "COUNT", "MAX", "MIN", "SUM")

_TOKEN = re.compile(r"""\s*(?:
    (?P<string>'(?:[^'\\]|\\.)*')
  | (?P<quoted>"(?:[^"\\]|\\.)*")
  | (?P<number>\d+(?:\.\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>!=|<=|>=|[(),=<>*])
)""", re.X)


class QueryError(ValueError):
    pass


@dataclass
class Token:
    kind: str  # string, quoted, number, word, op
    text: str  # the raw text
    value: str  # unescaped


@dataclass
class Parsed:
    function: str = ""
    metric: str = ""
    namespace: str = ""
    schema: list[str] | None = None  # None: FROM namespace without SCHEMA
    where: list[tuple[str, str, str]] = field(default_factory=list)  # (dimension, operator, value)
    group: list[str] = field(default_factory=list)
    order: tuple[str, str] | None = None  # (function, ASC|DESC)
    limit: int | None = None
    unquoted: list[str] = field(default_factory=list)  # identifiers written without quotes


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", r"\1", body) if "\\" in body else body


def scan(pattern: re.Pattern[str], text: str) -> list[tuple[str, str]]:
    """(group name, text) of each token `pattern` (one named group per kind) reads in `text`, end to
    end; raises ValueError naming where it cannot read on."""
    result, position = [], 0
    text = text.rstrip()
    while position < len(text):
        match = pattern.match(text, position)
        if not match or match.end() == position:
            raise ValueError(f"cannot read {text[position:position + 20]!r}")
        kind = match.lastgroup or ""
        result.append((kind, match[kind]))
        position = match.end()
    return result


def tokens(text: str) -> list[Token]:
    try:
        read = scan(_TOKEN, text)
    except ValueError as error:
        raise QueryError(f"{error} in the query") from None
    return [Token(kind, raw, _unescape(raw[1:-1]) if kind in ("string", "quoted") else raw) for kind, raw in read]


class _Reader:
    def __init__(self, items: list[Token]):
        self.items, self.index = items, 0

    def peek(self, word: str | None = None) -> Token | None:
        token = self.items[self.index] if self.index < len(self.items) else None
        if word is None or token is None:
            return token
        return token if token.kind == "word" and token.value.upper() == word else None

    def take(self, word: str | None = None, kind: str | None = None) -> Token:
        token = self.peek()
        if token is None:
            raise QueryError(f"the query ends where {word or kind or 'more'} was expected")
        if word is not None and not (token.kind == "word" and token.value.upper() == word) \
                and not (token.kind == "op" and token.value == word):
            raise QueryError(f"expected {word}, found {token.text!r}")
        if kind is not None and token.kind != kind:
            raise QueryError(f"expected a {kind}, found {token.text!r}")
        self.index += 1
        return token


def _identifier(reader: _Reader, parsed: Parsed) -> str:
    token = reader.take()
    if token.kind == "quoted":
        return token.value
    if token.kind != "word":
        raise QueryError(f"expected a name, found {token.text!r}")
    parsed.unquoted.append(token.value)
    return token.value


def parse(text: str) -> Parsed:
    """The query's parts; QueryError where it is not a query Metrics Insights takes. Each text is read once (lint's
    rules, cost and generate's limits each read the same queries, a fleet's clusters many): the answer is the
    caller's own copy."""
    parsed = _held.get(text) if _held is not None else None
    if parsed is None:
        parsed = _parse(text)
        if _held is not None:
            _held[text] = parsed
    if isinstance(parsed, str):
        raise QueryError(parsed)
    return Parsed(function=parsed.function, metric=parsed.metric, namespace=parsed.namespace,
                  schema=None if parsed.schema is None else list(parsed.schema), where=list(parsed.where),
                  group=list(parsed.group), order=parsed.order, limit=parsed.limit, unquoted=list(parsed.unquoted))


# Every text read while `each_read_once` is open: lint's rules read each of a fleet's queries about ten times over,
# and a fleet holds more distinct queries than the cache below (43 a cluster: 12,900 at 300 clusters, which read
# in turn evicted each other before their next reading and were parsed ten times each).
_held: dict[str, Parsed | str] | None = None


@contextmanager
def each_read_once() -> Iterator[None]:
    """Within it, every query is parsed once, however many (lint over a fleet); the answers are let go at its end.
    Nested, the outer one's answers are kept."""
    global _held
    outer = _held
    if outer is None:
        _held = {}
    try:
        yield
    finally:
        _held = outer


@lru_cache(maxsize=8192)
def _parse(text: str) -> Parsed | str:
    """parse's answer, or the message of the QueryError it raises. A query is read by its shape: its string literals
    (a WHERE's values, the only place one may stand) numbered in turn, so that the queries of a fleet's clusters, alike
    but for the cluster's name, are read once; then its values set back. A shape that does not parse: the text itself
    is read, for the message naming what it holds."""
    literals: list[str] = []

    def numbered(literal: re.Match[str]) -> str:
        if literal[0][0] == '"':  # a quoted name: as it is
            return literal[0]
        literals.append(_unescape(literal[0][1:-1]))
        return f"'{len(literals) - 1}'"

    shape = _LITERALS.sub(numbered, text)
    parsed = _parsed_text(shape) if literals else None
    if not isinstance(parsed, Parsed):
        return _parsed_text(text)
    return Parsed(function=parsed.function, metric=parsed.metric, namespace=parsed.namespace, schema=parsed.schema,
                  where=[(name, operator, literals[int(value)]) for name, operator, value in parsed.where],
                  group=parsed.group, order=parsed.order, limit=parsed.limit, unquoted=parsed.unquoted)


# A quoted name or a string literal, as the tokens read them (a quote inside a name is no literal's)
_LITERALS = re.compile(r"'(?:[^'\\]|\\.)*'" r'|"(?:[^"\\]|\\.)*"')


@lru_cache(maxsize=1024)
def _parsed_text(text: str) -> Parsed | str:
    try:
        return _read(text)
    except QueryError as error:
        return str(error)


def _read(text: str) -> Parsed:
    reader, parsed = _Reader(tokens(text)), Parsed()
    reader.take("SELECT")
    parsed.function = reader.take(kind="word").value.upper()
    if parsed.function not in FUNCTIONS:
        raise QueryError(f"{parsed.function} is not one of {', '.join(FUNCTIONS)}")
    reader.take("(")
    parsed.metric = _identifier(reader, parsed)
    reader.take(")")
    reader.take("FROM")
    if reader.peek("SCHEMA"):
        reader.take("SCHEMA")
        reader.take("(")
        parsed.namespace = _identifier(reader, parsed)
        parsed.schema = []
        while reader.peek() is not None and reader.peek().text == ",":
            reader.take(",")
            parsed.schema.append(_identifier(reader, parsed))
        reader.take(")")
    else:
        parsed.namespace = _identifier(reader, parsed)
    if reader.peek("WHERE"):
        reader.take("WHERE")
        while True:
            name = _identifier(reader, parsed)
            operator = reader.take(kind="op").value
            value = reader.take(kind="string")
            following = reader.peek()
            if following is not None and following.kind == "string":
                raise QueryError("a quote inside a string is escaped with a backslash, not doubled")
            parsed.where.append((name, operator, value.value))
            if not reader.peek("AND"):
                break
            reader.take("AND")
    if reader.peek("GROUP"):
        reader.take("GROUP")
        reader.take("BY")
        parsed.group.append(_identifier(reader, parsed))
        while reader.peek() is not None and reader.peek().text == ",":
            reader.take(",")
            parsed.group.append(_identifier(reader, parsed))
    if reader.peek("ORDER"):
        reader.take("ORDER")
        reader.take("BY")
        function = reader.take(kind="word").value.upper()
        reader.take("(")
        reader.take(")")
        direction = "ASC"
        if reader.peek("ASC") or reader.peek("DESC"):
            direction = reader.take().value.upper()
        parsed.order = (function, direction)
    if reader.peek("LIMIT"):
        reader.take("LIMIT")
        number = reader.take(kind="number")
        if not (number.value.isascii() and number.value.isdigit()):  # 5.5, 1e2: Metrics Insights takes none
            raise QueryError(f"LIMIT takes a whole number of series, found {number.text!r}")
        parsed.limit = int(number.value)
    if reader.peek() is not None:
        raise QueryError(f"unexpected {reader.peek().text!r} at the end of the query")
    return parsed


def needs_quotes(name: str) -> bool:
    """An identifier that must be double-quoted: a reserved keyword (any of the 917 AWS lists: gpudash quotes every
    identifier), or characters beyond letters, digits, _."""
    return name.upper() in reserved_keywords() or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)



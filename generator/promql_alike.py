"""Whether two PromQL texts are one expression: a rule gpudash wrote, and the same rule as Prometheus lists it back.

Prometheus' rule listing (/api/v1/rules) gives each rule's expression as its parser prints the tree back, not as it
was written: spaces its own, numbers as Go formats a float (`9e18` is `9e+18`, `1000000` is `1e+06`), durations in
its units (`90s` is `1m30s`, `29999ms` is `29s999ms`), strings double-quoted, a selector's label matchers sorted by
name. The parentheses written stay (each is a node of the tree). So two texts are one expression where their tokens
are the same once each number, duration and string is read as its value and each selector's matchers are put in one
order: a rule of another build (another scrape interval, another counter reading) differs in a token, whatever the
spacing.
"""

from __future__ import annotations

import functools
import re

from .promql_parens import EACH_TOKEN

_MILLISECONDS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000,
                 "y": 31_536_000_000}
_DURATION = re.compile(r"(?:[0-9]+(?:ms|[smhdwy]))+")
_DURATION_PART = re.compile(r"([0-9]+)(ms|[smhdwy])")
# Go's escapes in a quoted string (strconv.Unquote, which PromQL's lexer follows)
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)", re.S)
_LITERAL_START = frozenset("\"'`0123456789")  # how a string, a number or a duration begins
_NAMED = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unescaped(match: re.Match) -> str:
    escape = match.group(1)
    if escape[0] in "xuU":
        return chr(int(escape[1:], 16))
    if escape[0].isdigit():
        return chr(int(escape, 8))
    return _NAMED.get(escape, escape)


def _read(token: str) -> object:
    """A token as its value where its spelling may differ: a string, a number, a duration; else the token."""
    if token[0] in "\"'":
        return ("string", _ESCAPE.sub(_unescaped, token[1:-1]))
    if token[0] == "`":
        return ("string", token[1:-1])
    if token[0].isdigit():
        try:
            return ("number", float(token))
        except ValueError:
            pass
        if _DURATION.fullmatch(token):
            return ("duration", sum(int(n) * _MILLISECONDS[unit] for n, unit in _DURATION_PART.findall(token)))
    return token


def tokens(text: str) -> list[object]:
    """`text`'s tokens, each number, duration and string as its value, and each selector's label matchers in one order
    (Prometheus prints them sorted by label name: `{node="",hostname!=""}` is `{hostname!="",node=""}`; they are all
    required alike, in any order)."""
    parts = EACH_TOKEN.split(text)
    if "".join(parts[::2]).strip():  # a character no token reads (`.5`, `|`): compared as written
        return [text]
    found = parts[1::2]
    # each distinct literal read once: a counter's recording rule (20-45 KB) repeats the same few hundred tokens
    values = {token: _read(token) for token in set(found) if token[0] in _LITERAL_START}
    read = list(map(values.get, found, found))
    out: list[object] = []
    at = 0
    while True:
        try:  # a selector's braces hold matchers alone (a brace in a string is in its token)
            opening = read.index("{", at)
            closing = read.index("}", opening)
        except ValueError:  # none left (or, in what is not PromQL, one unclosed: compared token by token)
            return out + read[at:]
        matchers, one = [], []
        for token in read[opening + 1:closing]:
            if token == ",":
                matchers.append(tuple(one))
                one = []
            else:
                one.append(token)
        if one:
            matchers.append(tuple(one))
        out += read[at:opening] + ["{", *sorted(matchers, key=repr), "}"]
        at = closing + 1


@functools.lru_cache(maxsize=256)
def _tokens_of(text: str) -> tuple[object, ...]:
    """tokens(text), kept: a process that verifies more than once (apply's preflight beside verify, the test suite's
    workers) compares the same rules' texts again, some of them 30-45 KB."""
    return tuple(tokens(text))


def alike(one: str, other: str) -> bool:
    """Whether the PromQL texts `one` and `other` are one expression (module docstring)."""
    return one == other or _tokens_of(one) == _tokens_of(other)

"""Every text gpudash makes from data: byte-stable JSON and YAML, in one place.

  * `to_json`: files (sorted keys, 2-space indent, UTF-8, trailing newline);
  * `compact_json`: text embedded in other artifacts (a CloudWatch DashboardBody);
  * `canonical_json`: what ownership hashes;
  * `to_yaml`: YAML files, multi-line strings (embedded JSON, PromQL) as literal blocks.

The fast encoders (orjson for indented JSON, libyaml's emitter for YAML) are used only
where their output is byte-for-byte the standard library's / PyYAML's own: each has a
guard for the inputs on which the two differ, and those inputs take the reference path.
"""

from __future__ import annotations

import codecs
import functools
import json
import re
from typing import Any, Callable

import yaml

try:  # optional accelerators; the reference encoders below give the same bytes
    import orjson
except ImportError:  # pragma: no cover - depends on the installation
    orjson = None

_PRETTY = json.JSONEncoder(indent=2, sort_keys=True, ensure_ascii=False)
_COMPACT_ASCII = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
# to_json's options for orjson: sorted keys, 2-space indent, a trailing newline
_PRETTY_OPTIONS = 0 if orjson is None else orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE


def to_json(data: Any, *, ascii: bool = False) -> bytes:
    """A JSON file: sorted keys, 2-space indent, non-ASCII as UTF-8 (or escaped), trailing newline.

    The standard library indents in Python, not C; orjson writes the same bytes far faster, so it
    is used wherever it agrees (see _orjson_writes_json)."""
    fast = _pretty_fast(data)
    if fast is not None:
        return ascii_json(fast.decode()).encode() if ascii else fast
    text = _PRETTY.encode(data) + "\n"
    return (ascii_json(text) if ascii else text).encode()


def nested_json_size(value: Any, depth: int) -> int:
    """The bytes `value` takes in a file `to_json` writes as the value of a key `depth` levels in (its lines after
    the first indented 2 * `depth` spaces further), without what follows it (a comma, a line break): what a
    CloudFormation template's resource adds to it, which its split counts."""
    text = to_json(value)  # its last line break is not the value's
    return len(text) - 1 + 2 * depth * (text.count(b"\n") - 1)


def nested_json_size_bound(value: Any, depth: int) -> int:
    """At least `nested_json_size(value, depth)`, for a fraction of its cost: orjson's indented text, neither sorted
    (the order of keys changes no length) nor checked. orjson writes each character of a string as json does, and
    writes a float at most 5 bytes shorter (null for -Infinity, 1e-7 for 1e-07); a line of indented JSON holds one
    value at most. Where orjson does not write the value (a type json would not, a lone surrogate), the exact size."""
    if orjson is not None:
        try:
            text = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_PASSTHROUGH_DATACLASS
                                | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS)
        except TypeError:
            pass
        else:
            breaks = text.count(b"\n")
            return len(text) + 2 * depth * breaks + 5 * (breaks + 1)
    return nested_json_size(value, depth)


def json_string(text: str) -> bytes:
    """The JSON string `text` is in a file `to_json` writes (UTF-8, escapes as json writes them)."""
    if orjson is not None:
        try:
            return orjson.dumps(text)
        except TypeError:  # a lone surrogate
            pass
    return _PRETTY.encode(text).encode()


_SLOT = "gpudash-json-string-slot-"
_SLOT_OPENING = ('"' + _SLOT).encode()  # how a slot's JSON string starts; its number and closing quote follow


def string_slot(index: int) -> str:
    """What stands for the `index`th string of `to_json_filled` in its data."""
    return f"{_SLOT}{index}"


def to_json_filled(data: Any, strings: list[bytes | list[bytes]], whole: Callable[[], Any]) -> bytes:
    """`to_json(whole())`, where `data` is `whole` with `string_slot(i)` in place of a long string whose
    `json_string` is strings[i], or of a value whose text (as written where the slot is) is strings[i]: each long
    string is escaped once, however many files hold it (a CloudWatch dashboard's body, in its file and its
    template), a value written from the text of another (alarm_texts.AlarmTexts) is not written again, and the checks of
    the fast path (`_orjson`) read the rest only. A text may be given as the list of the pieces it joins (copied
    once, into the file). `whole()` is written instead where the slots are not each found once."""
    text = to_json(data)
    if text.count(_SLOT.encode()) != len(strings):  # a slot's text elsewhere in the data
        return to_json(whole())
    pieces = text.split(_SLOT_OPENING)  # the text before the first slot, then each slot's number, quote and the rest
    quotes = [piece.find(b'"') for piece in pieces[1:]]
    if not all(quote > 0 and piece[:quote].isdigit() for quote, piece in zip(quotes, pieces[1:])):
        return to_json(whole())
    numbers = [int(piece[:quote]) for quote, piece in zip(quotes, pieces[1:])]
    if sorted(numbers) != list(range(len(strings))):
        return to_json(whole())
    filled = [pieces[0]]
    for number, quote, piece in zip(numbers, quotes, pieces[1:]):
        value = strings[number]
        if type(value) is list:
            filled += value
        else:
            filled.append(value)
        filled.append(memoryview(piece)[quote + 1:])
    return b"".join(filled)


def to_json_strings(strings: dict[str, bytes | list[bytes]]) -> bytes:
    """`to_json` of a dict of strings, each value given as its `json_string` (a CloudWatch dashboard's file: its
    name and its body, escaped once for the file and the template), or as the list of the pieces that joins: a line
    per key, keys sorted."""
    if not strings:
        return b"{}\n"
    pieces = [b"{\n  "]
    for key, value in sorted(strings.items()):
        pieces += (json_string(key), b": ")
        if type(value) is list:
            pieces += value
        else:
            pieces.append(value)
        pieces.append(b",\n  ")
    pieces[-1] = b"\n}\n"
    return b"".join(pieces)  # each value copied once (a dashboard's body is tens of KB)


def _pretty_fast(data: Any) -> bytes | None:
    if orjson is None:
        return None
    return _orjson(data, _PRETTY_OPTIONS)


def to_json_and_line(data: Any) -> tuple[bytes, bytes]:
    """(`to_json(data)`, `canonical_json(data)` and a line break): a file and the same JSON on one line (a Grafana
    dashboard's file and the text its sidecar ConfigMap carries), the data checked once for what orjson writes unlike
    json."""
    if orjson is not None:
        texts = _orjson_texts(data, (_PRETTY_OPTIONS, orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE))
        if texts is not None:
            return texts[0], texts[1]
    return to_json(data), canonical_json(data) + b"\n"


def _orjson(data: Any, option: int) -> bytes | None:
    """orjson's text of `data`, or None where it could differ from the standard library's."""
    texts = _orjson_texts(data, (option,))
    return None if texts is None else texts[0]


def _orjson_texts(data: Any, options: tuple[int, ...]) -> list[bytes] | None:
    """orjson's text of `data` with each of `options`, or None where they could differ from the standard library's."""
    try:  # types json does not encode (dataclasses, dates, subclasses) pass through, and are refused
        texts = [orjson.dumps(data, option=option | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
                              | orjson.OPT_PASSTHROUGH_SUBCLASS) for option in options]
    except TypeError:  # non-string keys, integers beyond 64 bits, lone surrogates, deep nesting, the above
        return None
    # Scanning the text costs a fraction of walking the data; only a text that could hold a float
    # orjson writes unlike json (0.0000x, 1.5e-7, or null for NaN) has its data walked (once for every option: each
    # writes the same numbers).
    text = texts[0]
    if b"0.0000" in text or b"null" in text or _short_exponent(text):
        return texts if _orjson_writes_json(data) else None
    return texts


_SHORT_EXPONENT = re.compile(rb"e-[1-9](?![0-9])")


def _short_exponent(text: bytes) -> bool:
    """`e-` followed by exactly one digit 1-9: orjson's 1.5e-7 (json writes 1.5e-07)."""
    return _SHORT_EXPONENT.search(text) is not None


def _orjson_writes_json(data: Any) -> bool:
    """False when a float inside is one orjson writes unlike json: NaN and infinities (null where json
    writes NaN, Infinity) and magnitudes below 1e-4 (0.00001 or 1.5e-7 where json writes 1e-05 and
    1.5e-07). Every other float is written with the same shortest digits in the same notation."""
    stack = [data]
    pop, extend = stack.pop, stack.extend
    while stack:
        value = pop()
        kind = type(value)
        if kind is str or kind is int or kind is bool or value is None:
            continue
        if isinstance(value, float):
            if value - value != 0.0 or (value != 0.0 and -1e-4 < value < 1e-4):
                return False
        elif isinstance(value, dict):
            extend(value.values())
        elif isinstance(value, (list, tuple)):
            extend(value)
    return True


def compact_json(data: Any) -> str:
    """JSON text with no spaces, sorted keys and ASCII escapes (a CloudWatch DashboardBody)."""
    return _COMPACT_ASCII.encode(data)  # compact output is the standard library's C encoder already


def canonical_json(data: Any) -> bytes:
    """The form ownership hashes: compact, sorted keys, UTF-8 (orjson's bytes where they are json's)."""
    fast = None if orjson is None else _orjson(data, orjson.OPT_SORT_KEYS)
    return fast if fast is not None else _CANONICAL.encode(data).encode()


def _ascii_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xd800 | code >> 10:04x}\\u{0xdc00 | code & 0x3ff:04x}"


def _escape_unencodable(error: UnicodeEncodeError) -> tuple[str, int]:
    return "".join(_ascii_escape(char) for char in error.object[error.start:error.end]), error.end


# The ASCII codec finds what ensure_ascii escapes beyond the escapes both forms share (everything
# past DEL) in C and hands each run of it to this handler; DEL itself is replaced before.
codecs.register_error("gpudash.json-ascii", _escape_unencodable)


def ascii_json(text: str) -> str:
    """JSON text written with ensure_ascii=False, as ensure_ascii=True writes it (\\uXXXX escapes)."""
    if "\x7f" in text:
        text = text.replace("\x7f", "\\u007f")
    return text.encode("ascii", "gpudash.json-ascii").decode("ascii")


def _literal_blocks(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


class PureDumper(yaml.SafeDumper):
    """PyYAML's own emitter: the reference for every YAML file gpudash writes."""


PureDumper.add_representer(str, _literal_blocks)

if getattr(yaml, "__with_libyaml__", False):
    class FastDumper(yaml.CSafeDumper):
        """libyaml's emitter, used where it writes the same bytes as PureDumper."""

    FastDumper.add_representer(str, _literal_blocks)
else:  # pragma: no cover - PyYAML built without libyaml
    FastDumper = None

# Characters on which libyaml and PyYAML disagree: control characters but newline (a tab makes a string
# double-quoted, and the two fold a long double-quoted string at other places), DEL
# and the C1 controls (NEL among them), the line/paragraph separators, surrogates, the BOM, the
# two non-characters ending the Basic Multilingual Plane, and everything beyond it (libyaml
# escapes those; PyYAML writes them as they are). Written as the set that disagrees: the
# complement of this small set, as a character class, takes milliseconds to compile.
_EMITTERS_DISAGREE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff"
                                "\U00010000-\U0010ffff]")


# Of ASCII, the emitters agree on newline and the printable characters: deleting those (in C)
# leaves nothing. Far faster than the pattern on the long texts ConfigMaps carry.
_ASCII_AGREEING = bytes([0x0a, *range(0x20, 0x7f)])


def _agreeing_characters(text: str) -> bool:
    if text.isascii():
        return not text.encode("ascii").translate(None, _ASCII_AGREEING)
    return _EMITTERS_DISAGREE.search(text) is None


def emitters_agree(value: Any) -> bool:
    """True when libyaml writes `value` exactly as PyYAML does."""
    if isinstance(value, str):
        # A string ending in two line breaks is a "keep" literal block (|+); libyaml then
        # ends the document with `...` when more keys follow it.
        # A space before a line break makes a multi-line string quoted, folded otherwise by the two.
        return _agreeing_characters(value) and not (value.endswith("\n\n") or value == "\n" or " \n" in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and k and emitters_agree(k) and emitters_agree(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(emitters_agree(item) for item in value)
    return value is None or isinstance(value, (bool, int, float))


# A scalar PyYAML writes as itself, unquoted, in any block context: no space (plain scalars fold
# only at spaces), no indicator character, and nothing the resolver reads as another type (checked
# apart: 123, true, null, 1e3, dates).
_PLAIN_TOKEN = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./-]*")
_STR_TAG = "tag:yaml.org,2002:str"


def _plain(value: str) -> bool:
    return (_PLAIN_TOKEN.fullmatch(value) is not None
            and yaml.resolver.Resolver().resolve(yaml.ScalarNode, value, (True, False)) == _STR_TAG)


def writes_as_itself(value: str) -> bool:
    """PyYAML writes `value` as itself, unquoted, wherever it is a value in a block, and reads it back as text."""
    return _plain(value)


def _value_counts(value: Any, counts: dict[str, int]) -> dict[str, int]:
    """How often each string is a value (not a key) in `value`."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        if isinstance(item, str):
            counts[item] = counts.get(item, 0) + 1
        else:
            _value_counts(item, counts)
    return counts


def _differences(first: Any, other: Any, found: list[tuple[str, str]]) -> bool:
    """False unless `other` is `first` with some string values replaced; those go into `found`."""
    if first is other:
        return True
    if isinstance(first, dict):
        return (isinstance(other, dict) and first.keys() == other.keys()
                and all(_differences(value, other[key], found) for key, value in first.items()))
    if isinstance(first, list):
        return (isinstance(other, list) and len(first) == len(other)
                and all(_differences(a, b, found) for a, b in zip(first, other)))
    if type(first) is not type(other):
        return False
    if first != other:
        if not isinstance(first, str):
            return False
        found.append((first, other))
    return True


def to_yaml_alike(documents: list[Any]) -> list[bytes]:
    """`to_yaml(document)` of each document, for documents that differ from the first only in some
    string values (the clusters' agent pipelines: a cluster's name, Region, log group).

    The first is written; each other one is the first's text with those values replaced, where
    that is the text PyYAML writes: every replaced and replacing value is a plain token (written
    as itself at the end of its `key: ` or `- ` line), and every place the replaced value holds in
    the first document is replaced, and nothing else matches. A document for which that does not
    hold is written in full."""
    if not documents:
        return []
    first_text = to_yaml(documents[0]).decode()
    counts = _value_counts(documents[0], {})
    texts = [first_text.encode()]
    splits: dict[tuple[str, ...], tuple[list[str], dict[str, int]]] = {}
    plain: dict[str, bool] = {}
    for document in documents[1:]:
        text = _substituted(documents[0], first_text, counts, document, splits, plain)
        texts.append(text.encode() if text is not None else to_yaml(document))
    return texts


def _substituted(first: Any, first_text: str, counts: dict[str, int], document: Any,
                 splits: dict[tuple[str, ...], tuple[list[str], dict[str, int]]] | None = None,
                 plain: dict[str, bool] | None = None) -> str | None:
    """`document`'s text made from the first's, or None. The first text split at the places of one set of
    replaced values (and how often each matched) is the same for every document replacing that set: it is
    worked out once, in `splits` (kept for one first document only); whether a value is a plain token, once,
    in `plain`."""
    splits = {} if splits is None else splits
    plain = {} if plain is None else plain
    found: list[tuple[str, str]] = []
    if not _differences(first, document, found):
        return None
    if not found:
        return first_text
    replacing: dict[str, str] = {}
    places: dict[str, int] = {}
    for old, new in found:
        if replacing.setdefault(old, new) != new:
            return None  # one value replaced by two
        places[old] = places.get(old, 0) + 1
    for value in (*replacing, *replacing.values()):
        if value not in plain:
            plain[value] = _plain(value)
    if any(places[old] != counts[old] or not plain[old] or not plain[new] for old, new in replacing.items()):
        return None
    olds = tuple(sorted(replacing, key=lambda value: (-len(value), value)))
    if olds not in splits:
        pattern = re.compile("(?<=: |- )(" + "|".join(map(re.escape, olds)) + ")(?=\n)")
        pieces = pattern.split(first_text)  # the text between matches, and each value matched (odd places)
        matched: dict[str, int] = {}
        for value in pieces[1::2]:
            matched[value] = matched.get(value, 0) + 1
        splits[olds] = pieces, matched
    pieces, matched = splits[olds]
    if matched != places:
        return None
    text = pieces[:]
    text[1::2] = [replacing[value] for value in pieces[1::2]]
    return "".join(text)


def to_yaml(*documents: Any) -> bytes:
    """YAML documents, keys sorted, block style, multi-line strings as literal blocks. A `bytes` value is the UTF-8 of
    a text, written as that text is (a long text made as bytes, a dashboard's JSON, is then never decoded only to be
    encoded again).

    A literal block holds its text as it is, each line indented: the emitters would copy the long texts
    ConfigMaps carry (agent configs, dashboards) character by character. Each text PyYAML writes as a plain `|`
    block (`_literal_as_is`) is replaced by a one-line stand-in, the rest is written, and each stand-in's block
    is then given its text, indented as the emitter indented the stand-in."""
    return to_yaml_many([documents])[0]


def to_yaml_many(files: list[tuple[Any, ...]] | list[list[Any]]) -> list[bytes]:
    """`to_yaml(*documents)` of each file's documents. Files whose documents differ only in the texts written as
    literal blocks (a ConfigMap per cluster) share the rest's text, written once."""
    written: dict[tuple[bool, str], str] = {}  # (emitter, the stand-ins' documents' repr where it says them exactly)
    agreeing: dict[str, bool] = {}  # the stand-ins' documents' repr -> whether the emitters agree on them
    # what is worked out of one text, once however many files carry it (the clusters' ConfigMaps share their scrape
    # config and, mostly, their agent JSON: 1,000 clusters' 3,000 texts are 1,003 distinct)
    as_is: dict[str, bool] = {}  # text -> _literal_as_is(text)
    styles: dict[str, str | None] = {}  # long one-line text -> _one_line_style(text) (a rule's, in both rule files)
    indented: dict[tuple[str, str], _Pieces | None] = {}  # (text, indent) -> _indented(text, indent), once seen twice
    out = []
    for documents in files:
        texts: list[str] = []
        exact = [True]
        skeleton = [_stand_ins(document, texts, {}, exact, as_is, styles) for document in documents]
        if texts:
            # the emitter is chosen by the documents, texts included, as when they are dumped whole: where the
            # emitters disagree on a text, PyYAML writes the rest too (libyaml folds some quoted strings otherwise).
            # A stand-in is a string the emitters agree on, in a value's place: they agree on the documents where
            # they agree on the stand-ins' documents (worked out once for files that share them) and on each text.
            shared = repr(skeleton) if exact[0] else None
            agree = agreeing.get(shared) if shared is not None else None
            if agree is None:
                agree = _fast(skeleton)
                if shared is not None:
                    agreeing[shared] = agree
            # (an ASCII text _literal_as_is let through holds only characters both emitters write alike: not read again)
            fast = agree and all(text.isascii() or emitters_agree(_str(text)) for text in texts)
            key = (fast, shared) if shared is not None else None
            shape = written.get(key) if key is not None else None
            if shape is None:
                shape = _dump(skeleton, fast)
                if key is not None:
                    written[key] = shape
            text = _with_texts(shape, texts, indented)
            if text is not None:
                out.append(text)
                continue
        copies: dict[int, Any] = {}
        out.append(_dump([_decoded(document, copies) for document in documents]).encode())
    return out


def _str(text: str | bytes) -> str:
    return text.decode() if isinstance(text, bytes) else text


def _decoded(value: Any, copies: dict[int, Any] | None = None) -> Any:
    """`value` with each `bytes` in it as the text it holds (the emitters write bytes as base64): a dict or list
    holding none is itself, and one object found twice gives one copy (written as an anchor and its alias still)."""
    copies = {} if copies is None else copies
    if isinstance(value, bytes):
        return value.decode()
    if not isinstance(value, (dict, list)):
        return value
    if id(value) not in copies:
        items = value.items() if isinstance(value, dict) else enumerate(value)
        made = {key: _decoded(item, copies) for key, item in items}
        if all(made[key] is item for key, item in (value.items() if isinstance(value, dict) else enumerate(value))):
            copies[id(value)] = value
        else:
            copies[id(value)] = made if isinstance(value, dict) else list(made.values())
    return copies[id(value)]


def _fast(documents) -> bool:
    return FastDumper is not None and all(isinstance(d, (dict, list)) and emitters_agree(d) for d in documents)


def _dump(documents: list[Any], fast: bool | None = None) -> str:
    fast = _fast(documents) if fast is None else fast
    return yaml.dump_all(documents, Dumper=FastDumper if fast else PureDumper, sort_keys=True,
                         default_flow_style=False, allow_unicode=True, width=100)


# What PyYAML writes in a block as it is: line breaks, printable ASCII, and the characters it writes as
# themselves with allow_unicode (not NEL, the line and paragraph separators, the BOM, U+FFFE, U+FFFF, U+10FFFF).
_BLOCK_ASCII = bytes([0x0a, *range(0x20, 0x7f)])
# Written as the characters a block cannot hold (the complement of \n, \x20-\x7e, \xa0-\u2027, \u202a-\ud7ff,
# \ue000-\ufefe, \uff00-\ufffd and \U00010000-\U0010fffe): the complement, as a character class, took ~10 ms to compile
# at every start.
_NOT_IN_BLOCK = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff\U0010ffff]")


def _literal_as_is(value: str | bytes) -> bool:
    """PyYAML writes `value` (or the text of UTF-8 bytes) as `|` and then its lines, each indented, empty ones bare:
    it ends with one line break (no chomping indicator), starts with neither a space nor a break (no indentation
    indicator), has no space before a break (which only a quoted scalar holds), and no character the block cannot
    hold."""
    if isinstance(value, bytes):
        if value.find(b"\n") == len(value) - 1:  # one line and its break (a dashboard's JSON): the break is found by
            # memchr, where looking for " \n" reads each byte of a long line again, several times slower
            if len(value) < 2 or value[0] == 0x20 or value[-2] == 0x20:
                return False
        elif not value.endswith(b"\n") or value.endswith(b"\n\n") or value[:1] in b" \n" or b" \n" in value:
            return False
        return not value.translate(None, _BLOCK_ASCII) if value.isascii() else _literal_as_is(value.decode())
    if not value.endswith("\n") or value.endswith("\n\n") or value[0] in " \n" or " \n" in value:
        return False
    if value.isascii():
        return not value.encode("ascii").translate(None, _BLOCK_ASCII)
    return _NOT_IN_BLOCK.search(value) is None


_STAND_IN = "gpudash-literal-block-"
_STAND_INS = re.compile(r"\|\n( *)" + _STAND_IN + r"([0-9]+)\n")


_Pieces = tuple[bytes | memoryview, ...]  # bytes to be joined


def _indented(text: str | bytes, indent: str) -> _Pieces:
    """Each non-empty line of `text` (which ends with a line break; bytes: UTF-8) after `indent`, UTF-8: a literal
    block's body, as pieces to be joined (a long text is copied twice, encoded and indented, not once more for each
    end; bytes once)."""
    data, space = text if isinstance(text, bytes) else text.encode(), indent.encode()
    if data.find(b"\n") == len(data) - 1:  # one line and its break (found by memchr, as in _literal_as_is)
        return space, data
    if b"\n\n" not in data:  # every line after one, the last line break's indent left out
        indented = data.replace(b"\n", b"\n" + space)
        return space, memoryview(indented)[:len(indented) - len(space)]
    return b"\n".join(space + line if line else line for line in data[:-1].split(b"\n")) + b"\n",


_EXACT_REPR = (str, int, float, bool, type(None))  # types whose repr names the type and value YAML writes

# A text this long or longer is worked out again wherever it is met, not looked up by its value among those met before:
# hashing it reads it whole, slower than working out whether it is a block as it is (_literal_as_is) or indenting it
# (_indented). Texts met many times (the clusters' scrape configs and agent JSON) are shorter.
_LOOKED_UP_BELOW = 1 << 16


def _remembered_as_is(value: str | bytes, as_is: dict[str | bytes, bool] | None) -> bool:
    """`_literal_as_is(value)`, kept in `as_is` (if given) for a text shorter than _LOOKED_UP_BELOW."""
    if as_is is None or len(value) >= _LOOKED_UP_BELOW:
        return _literal_as_is(value)
    literal = as_is.get(value)
    if literal is None:
        literal = as_is[value] = _literal_as_is(value)
    return literal


def _stand_ins(value: Any, texts: list[str], copies: dict[int, Any], exact: list[bool],
               as_is: dict[str, bool] | None = None, styles: dict[str, str | None] | None = None) -> Any:
    """`value` with each string value written as it is in a literal block replaced by a stand-in (the string
    appended to `texts`). A dict or list holding none is itself; one object found twice gives one copy (PyYAML
    writes an object seen twice in a document as an anchor and an alias: so it still does). `exact[0]` is made
    False unless the result's repr tells everything its YAML depends on: dicts, lists and the types of
    _EXACT_REPR only (no subclass), no object found twice. `as_is`, if given, keeps _literal_as_is's verdicts, `styles`
    _one_line_style's."""
    kind = type(value)
    if kind is bytes:  # a text as UTF-8: set in as it is where it is a `|` block as it is, else written as the text
        if not _remembered_as_is(value, as_is):
            return _stand_ins(value.decode(), texts, copies, exact, as_is, styles)
        texts.append(value)
        return f"{_STAND_IN}{len(texts) - 1}\n"
    if kind is str:
        if "\n" not in value:
            style = None
            if len(value) >= LONG_LINE:
                style = styles.get(value, False) if styles is not None else False
                if style is False:
                    style = _one_line_style(value)
                    if styles is not None:
                        styles[value] = style
            if style is not None:
                texts.append(value)
                return f"{_LINE_STAND_IN}{style}{len(texts) - 1}"
            return value
        if _remembered_as_is(value, as_is):
            texts.append(value)
            return f"{_STAND_IN}{len(texts) - 1}\n"
        return value
    if kind is not dict and kind is not list:
        if kind not in _EXACT_REPR:
            exact[0] = False
        return value
    if id(value) in copies:
        exact[0] = False
        return copies[id(value)]
    copy = value  # copied at the first item replaced
    if kind is dict:
        for key, item in value.items():
            if type(key) not in _EXACT_REPR:
                exact[0] = False
            made = _stand_ins(item, texts, copies, exact, as_is, styles)
            if made is not item:
                if copy is value:
                    copy = dict(value)
                copy[key] = made
    else:
        for index, item in enumerate(value):
            made = _stand_ins(item, texts, copies, exact, as_is, styles)
            if made is not item:
                if copy is value:
                    copy = list(value)
                copy[index] = made
    copies[id(value)] = copy
    return copy


# A long one-line string (a PromQL expression of a thousand clusters is megabytes) is written in place of its
# stand-in as the emitters write it, plain or single-quoted, folded at spaces (`_one_line_style`, `_folded`): libyaml
# folds it a character at a time. Shorter ones are left to the emitter.
LONG_LINE = 1000
_LINE_STAND_IN = "gpudash-one-line-"  # then p (plain) or q (single-quoted), and the text's number
# the line a one-line stand-in ends, as the value of a plain key in a block mapping (whose indent is the key's column)
_LINE_KEY = re.compile(r"( *(?:- )*)([A-Za-z0-9_][A-Za-z0-9_./-]*): ")
_LINE_REST = re.compile(r"([pq])([0-9]+)\n")
_WIDTH = 100  # the emitters' best width (`_dump`): a one-line scalar breaks at a space past it
_PRINTABLE_ASCII = bytes(range(0x20, 0x7f))


def _one_line_style(value: str) -> str | None:
    """How the emitters write `value` as a block mapping's value, where its only change is a line break for a space
    here and there (`_folded`): "p" plain, "q" single-quoted (its quotes doubled); None for any other value. Such a
    value is printable ASCII with no leading or trailing space and no two spaces together (where the emitters break a
    line depends on nothing else). It is plain unless an indicator makes it quoted (first, or ': ' or ' #' inside, or
    ':' last) or it reads back as another type (a number, a date, a boolean...)."""
    if value[0] == " " or value[-1] == " " or "  " in value or not value.isascii() \
            or value.encode("ascii").translate(None, _PRINTABLE_ASCII) or _STAND_IN in value:
        return None  # (one holding a literal block's stand-in, which `_with_texts` seeks, is left to the emitter)
    indicated = value[0] in "#,[]{}&*!|>'\"%@`" or (value[0] in "?:-" and value[1:2] in ("", " ")) \
        or value.startswith(("---", "...")) or value[-1] == ":" or ": " in value or " #" in value
    if indicated or yaml.resolver.Resolver().resolve(yaml.ScalarNode, value, (True, False)) != _STR_TAG:
        return "q"
    return "p"


def written_itself(value: str) -> bool:
    """`to_yaml` writes `value`, the value of a plain key of a block mapping, itself, never leaving it to the emitter:
    as a `|` block holding its text as it is (a multi-line text, `_literal_as_is`), or plain or single-quoted, folded
    at its spaces (a one-line text of at least LONG_LINE characters, `_one_line_style`, `_folded`)."""
    if "\n" in value:
        return _literal_as_is(value)
    return len(value) >= LONG_LINE and _one_line_style(value) is not None


def _folded(text: bytes, column: int, indent: int) -> bytes:
    """A one-line scalar's text (printable ASCII, as bytes) as the emitters write it from `column`: at a space past
    `_WIDTH` columns (counted before the space), the space becomes a line break and `indent` spaces. The lines after
    the first each start at `indent`: each is found by one pattern (`_fold_lines`), all of them in one call."""
    at = text.find(b" ", max(0, _WIDTH + 1 - column))
    if at < 0:
        return text
    # searched up to the last space: every break is at a space, and past the last break the pattern is tried at each
    # position, each try reading to where the search ends (from the last break to the text's end, a long last word
    # made it quadratic; to the last space, fewer than `width` + 1 characters are left after the last break)
    lines = _fold_lines(max(0, _WIDTH + 1 - indent)).findall(text, at + 1, text.rfind(b" ") + 1)
    rest = at + 1 + sum(map(len, lines)) + len(lines)  # each line found ends at the space that breaks it
    return (b"\n" + b" " * indent).join([text[:at], *lines, text[rest:]])


@functools.lru_cache(maxsize=None)
def _fold_lines(width: int) -> re.Pattern[bytes]:
    """A folded line starting at the indent and the space that ends it: its first `width` characters (a space among
    them breaks nothing), the rest of its last word, then the first space past them."""
    return re.compile(f"(.{{{width}}}[^ ]*) ".encode(), re.DOTALL)


def _with_lines(text: str, lines: list[str], seen: list[int]) -> list[str | bytes] | None:
    """`text` with each one-line stand-in replaced by its scalar (each number added to `seen`), as the pieces it
    joins: the text between them, and each scalar written as UTF-8 (a rule's expression of 1,000 clusters is
    megabytes: folded once, into bytes, and never copied into a string of the whole file first); None where a
    stand-in is not the value of a plain key in a block mapping."""
    pieces = text.split(_LINE_STAND_IN)
    out: list[str | bytes] = [pieces[0]]
    for piece in pieces[1:]:
        line = out[-1][out[-1].rfind("\n") + 1:]
        key = _LINE_KEY.fullmatch(line)
        rest = _LINE_REST.match(piece)
        if key is None or rest is None or int(rest[2]) >= len(lines):
            return None
        seen.append(int(rest[2]))
        indent, column = len(key[1]) + 2, len(line)
        value = lines[int(rest[2])].encode()  # printable ASCII (`_one_line_style`): a column a byte
        if rest[1] == "p":
            scalar = _folded(value, column, indent)
        else:  # the opening quote takes a column; each quote inside is written twice
            scalar = b"'" + _folded(value.replace(b"'", b"''"), column + 1, indent) + b"'"
        out += (scalar, piece[len(rest[0]) - 1:])
    return out


def _with_texts(skeleton: str, texts: list[str], indented: dict[tuple[str, str], _Pieces | None] | None = None) \
        -> bytes | None:
    """The skeleton's text, UTF-8, with each stand-in's block holding its text, and each plain stand-in replaced by
    its folded text; None unless every stand-in was written once, as a `|` block or as a block mapping's value, and
    nothing else in the skeleton reads like one. The blocks are set in as bytes: a ConfigMap's texts (dashboards,
    tens of MB for hundreds) are indented and joined once, never copied into one string first and encoded after.
    `indented`, if given, keeps the block body of each (text, indent) met before, of a text shorter than
    _LOOKED_UP_BELOW (None the first time: a text met once keeps no second copy)."""
    if skeleton.count(_STAND_IN) + skeleton.count(_LINE_STAND_IN) != len(texts):
        return None
    seen: list[int] = []
    indented = {} if indented is None else indented
    # the skeleton's text between the folded one-line scalars (bytes already), where the blocks' stand-ins are sought:
    # a scalar holds none (`_one_line_style` leaves a text holding one to the emitter)
    parts = _with_lines(skeleton, texts, seen) if _LINE_STAND_IN in skeleton else [skeleton]
    if parts is None:
        return None
    out: list[bytes | memoryview] = []
    for part in parts:
        if type(part) is bytes:
            out.append(part)
            continue
        start = 0
        for match in _STAND_INS.finditer(part):
            seen.append(int(match[2]))
            key = (texts[int(match[2])], match[1])
            body = indented.get(key) if len(key[0]) < _LOOKED_UP_BELOW else _indented(*key)
            if body is None:
                body = _indented(*key)
                if key in indented:  # met a second time: kept for the next ones
                    indented[key] = body
                else:
                    indented[key] = None
            out += (part[start:match.start()].encode(), b"|\n", *body)
            start = match.end()
        out.append(part[start:].encode())
    return b"".join(out) if sorted(seen) == list(range(len(texts))) else None

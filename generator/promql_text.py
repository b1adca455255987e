"""The one place a value becomes PromQL text: string literals and label matchers.

Prometheus reads a double-quoted string with Go's escapes: a backslash and a double quote inside are written
escaped (`"a\\\\b"` is the value a\\b; `"a\\b"` would be a backspace), and a line break cannot stand in it raw.
A regex matcher's literal parts are escaped twice: for RE2 (its metacharacters), then as a string. Every label
value gpudash writes into a query or a rule (cluster labels, namespaces, DaemonSet and container names, job
names, scope regexes) goes through here. No imports: every module that writes PromQL may use it.
"""

from __future__ import annotations

import functools
import re

# A PromQL string literal (double- or single-quoted with escapes, or a raw backtick string): what code reading PromQL
# text skips over or reads apart. Each quoted form's loop unrolled (a run of plain characters, then an escape and its
# run, ...): the same matches as one character at a time, fewer steps of the engine.
STRING_LITERAL = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|\'[^\'\\]*(?:\\.[^\'\\]*)*\'|`[^`]*`')
_NEEDS_ESCAPE = re.compile(r'[\\"\x00-\x1f\x7f]')
_NEEDS_ESCAPE_SINGLE = re.compile(r"[\\'\x00-\x1f\x7f]")
_NAMED = {"\\": "\\\\", '"': '\\"', "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_RE2_META = re.compile(r"[\\.+*?()|\[\]{}^$]")
_NOT_IN_LABEL_NAME = re.compile(r"[^a-zA-Z0-9_]")


def label_name(name: str) -> str:
    """A Kubernetes name (a label's key, a resource's name) as Prometheus' Kubernetes discovery and kube-state-metrics
    write it into a label's name: each character outside [a-zA-Z0-9_] an underscore (nvidia.com/a100: nvidia_com_a100,
    app.kubernetes.io/name: app_kubernetes_io_name)."""
    return _NOT_IN_LABEL_NAME.sub("_", name)


def pod_label_meta(key: str) -> str:
    """The Kubernetes discovery meta label that carries a pod's label `key` on its target."""
    return "__meta_kubernetes_pod_label_" + label_name(key)


def quoted(value: str) -> str:
    """`value` as a PromQL double-quoted string literal."""
    return _quoted(value, '"')


def _quoted(value: str, quote: str) -> str:
    """`value` as a PromQL string literal in `quote` (a double or a single quote): a backslash, that quote, a line break
    and every other control character escaped."""
    needs = _NEEDS_ESCAPE if quote == '"' else _NEEDS_ESCAPE_SINGLE
    if not needs.search(value):
        return f"{quote}{value}{quote}"
    return quote + needs.sub(lambda m: _NAMED.get(m.group()) or f"\\x{ord(m.group()):02x}", value) + quote


def regex_literal(value: str) -> str:
    """An RE2 pattern that matches exactly `value` (its metacharacters escaped)."""
    return _RE2_META.sub(lambda m: "\\" + m.group(), value)


def matcher(label: str, value: str) -> str:
    """`label="value"`: the series whose `label` is `value`."""
    return f"{label}={quoted(value)}"


def one_of(label: str, values) -> str:
    """The series whose `label` is one of `values`: an equality matcher for one, a regex of the literals for more."""
    values = list(dict.fromkeys(values))
    if len(values) == 1:
        return matcher(label, values[0])
    return f"{label}=~{quoted('|'.join(map(regex_literal, values)))}"


def double_quoted(raw: str) -> str:
    """`raw` as a double-quoted PromQL string as promql_parser reads it (backslash, quote and newline escaped)."""
    return '"' + raw.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# a space PromQL's lexer needs no more than a parenthesis, bracket or comma beside it: after `(`, `[` or `,`; before
# `(`, `)`, `]` or `,`; after `)` or `]` before a word or `@` (`) or`, `] @ end()`); nor one beside an arithmetic or
# comparison operator (`x * 0.5`, `x >= -30`, `or -1`: a number's exponent takes its sign from the `e` alone, `1e7+0.5`
# is 1e7 plus 0.5; no operator character stands in a word, a duration or a Grafana variable's name outside strings),
# nor one after `@` (`@ end()`). Kept: after `offset` (`offset -30s`), beside braces before or after a word (`${x} or`
# would join a variable's value to the word). The space first: the engine then looks for spaces alone (4x faster than
# trying each lookbehind at every character)
_SPARE_SPACE = re.compile(r" (?:(?<=[(\[,@] )|(?<!offset )(?=[()\],*/%^+\-<>=!])|(?<=[)\]] )(?=[\w@])"
                          r"|(?<=[*/%^+\-<>=!] ))")


def single_quoted(literal: str) -> str:
    """A PromQL string literal (double- or single-quoted, or raw in backticks) as the single-quoted literal of the same
    value. The quoted forms take the same escapes but their own quote's: a double-quoted string's `\\"` is a plain `"`
    in single quotes, and its plain `'` is written `\\'`; a raw string's backslashes, quotes and control characters are
    escaped as `quoted` escapes them."""
    quote, body = literal[0], literal[1:-1]
    if quote == "'":
        return literal
    if quote == "`":
        return _quoted(body, "'")
    if "\\" not in body and "'" not in body:
        return f"'{body}'"
    return "'" + _DOUBLE_QUOTED_BODY.sub(lambda m: _TO_SINGLE.get(m.group(), m.group()), body) + "'"


_DOUBLE_QUOTED_BODY = re.compile(r"\\.|'", re.S)  # an escape (its first character: no other is a quote) or a quote
_TO_SINGLE = {'\\"': '"', "'": "\\'"}
# the pieces of PromQL text: outside strings, a string literal or a comment (its quotes none), outside, ...
_LITERAL_OR_COMMENT = re.compile(f"({STRING_LITERAL.pattern}|#[^\n]*)")


# fewest_parens' answers recur from build to build (a test process builds many, fewest_parens keeps them): so do these
@functools.lru_cache(maxsize=512)
def packed(text: str, free_text: tuple[str, ...] = ()) -> str:
    """PromQL `text` in fewer bytes where it is JSON inside JSON, as client-side `kubectl apply` writes a dashboard's
    ConfigMap into its last-applied annotation (262,144 bytes at most): every string literal single-quoted
    (single_quoted: the same value to Prometheus; a double quote is two bytes in the dashboard's JSON and four in the
    annotation, a single quote one in both), and outside strings no space beside a parenthesis, bracket or comma where
    the lexer needs none, nor beside an operator (_SPARE_SPACE: `sum by(a)(x)or(y)`, `x*0.5>=-30`, the same expression
    to Prometheus). A string holding a Grafana variable too, but one of the variables `free_text` (whose values may
    hold a quote) keeps its double quotes: Grafana escapes a picked value for a double-quoted string, and a picked `'`
    (written as it is or as `\\\\'`) or, with its prometheusSpecialCharsInLabelValues toggle, `"` (as `\\\\\\"`)
    ends or breaks a single-quoted one (tests/integration/test_single_quoted_dashboards.py). Comments are left as they
    are."""
    pieces = _LITERAL_OR_COMMENT.split(text)  # outside, a literal or comment, outside, ...
    # each distinct piece worked out once: a panel's query repeats its pieces (a selector's matchers and variables, the
    # copies' joins) many times, 3,286 outside pieces and 3,274 literals of 350 and 20 distinct in a per-pod panel's
    outside = {piece: _SPARE_SPACE.sub("", piece) if " " in piece else piece for piece in set(pieces[0::2])}
    pieces[0::2] = map(outside.__getitem__, pieces[0::2])
    kept = _references(free_text) if free_text else None
    literals = {piece: piece if piece[0] == "#" or (kept is not None and piece[0] == '"' and kept.search(piece))
                else single_quoted(piece) for piece in set(pieces[1::2])}
    pieces[1::2] = map(literals.__getitem__, pieces[1::2])
    return "".join(pieces)


@functools.lru_cache(maxsize=8)
def _references(names: tuple[str, ...]) -> re.Pattern[str]:
    """A reference to one of the Grafana variables `names`: `$name`, `${name}`, `${name:format}` or `[[name]]`."""
    alternatives = "|".join(map(re.escape, names))
    return re.compile(rf"\$(?:{alternatives})(?!\w)|\$\{{(?:{alternatives})[}}:]|\[\[(?:{alternatives})\]\]")

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
_NAMED = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
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
    if not _NEEDS_ESCAPE.search(value):
        return f'"{value}"'
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _NAMED.get(m.group()) or f"\\x{ord(m.group()):02x}", value) + '"'


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


# a Grafana variable reference ($name, ${name...}, [[name]]): Grafana replaces it, escaping the value for a
# double-quoted string (its Prometheus escapes write `'` as `\\'`, which would end a single-quoted one)
_GRAFANA_VARIABLE = re.compile(r"\$[A-Za-z_{]|\[\[")
# a space PromQL's lexer needs no more than a parenthesis, bracket or comma beside it: after `(`, `[` or `,`; before
# `(`, `)`, `]` or `,`; after `)` or `]` before a word or `@` (`) or`, `] @ end()`). Kept: beside braces (`${x} or`
# would join a variable's value to the word), and before an arithmetic or comparison operator (`) * 30000`, as written)
# The space first: the engine then looks for spaces alone (4x faster than trying each lookbehind at every character)
_SPARE_SPACE = re.compile(r" (?:(?<=[(\[,] )|(?=[()\],])|(?<=[)\]] )(?=[\w@]))")


# fewest_parens' answers recur from build to build (a test process builds many, fewest_parens keeps them): so do these
@functools.lru_cache(maxsize=512)
def packed(text: str) -> str:
    """PromQL `text` in fewer bytes where it is JSON inside JSON, as client-side `kubectl apply` writes a dashboard's
    ConfigMap into its last-applied annotation (262,144 bytes at most): each double-quoted string that holds no single
    quote and no Grafana variable in single quotes (a double quote there is four bytes, a single quote one; the same
    string to Prometheus), and no space after a comma outside strings. A string holding a variable keeps its double
    quotes: Grafana escapes a value for them. Outside strings, no space beside a parenthesis, bracket or comma where
    the lexer needs none (_SPARE_SPACE: `sum by(a)(x)or(y)`, the same expression to Prometheus). Text with a backslash
    or a single or raw quote is left as it is."""
    if "\\" in text or "'" in text or "`" in text:
        return text
    parts = text.split('"')  # outside, inside, outside, ...: no escaped quote in the text
    if any(" " in part for part in parts[1::2]):
        for k in range(0, len(parts), 2):
            parts[k] = _SPARE_SPACE.sub("", parts[k])
    else:  # no space inside a string: the whole text at once, the same (a quote is in none of _SPARE_SPACE's classes)
        parts = _SPARE_SPACE.sub("", text).split('"')
    for k in range(1, len(parts), 2):
        parts[k] = f'"{parts[k]}"' if _GRAFANA_VARIABLE.search(parts[k]) else f"'{parts[k]}'"
    return "".join(parts)

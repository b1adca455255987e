"""An aggregation written as briefly as its value allows (`aggregated`): what a panel's PromQL repeats for every field
costs the all-metrics dashboard's ConfigMap once per panel, and client-side kubectl apply counts it twice.

Three forms compute what a shorter one does (on a real Prometheus: tests/integration/test_brief_aggregations.py), the
same floats but where a sum or mean over GPUs after them adds its GPUs in another order (the last binary place):
* `how by (L) (agg by (L) (x))`, `how` one of max, min, sum and avg: the inner aggregation leaves one series per group
  of L, with the labels L alone, and max, min, sum or avg of one sample is that sample (NaN too); so it is `agg by (L)
  (x)`.
* `max by (L) (max by (M) (x))` with every label of L among M: the highest of the groups' highest is the highest of
  L's group (max passes over NaN while a group has a number); so it is `max by (L) (x)`, and min alike. Not sum nor
  avg: a sum of sums adds the same floats in another order, which may round otherwise.
* `max by (L) (topk by (I) (1, x))` with every label of L among I: each group of I lies within one group of L, topk
  keeps a group's highest series, and the highest of the groups' highest is the highest of L's group (topk and max
  alike pass over NaN while a group has a number); so it is `max by (L) (x)`."""

from __future__ import annotations

import re

from .promql_text import STRING_LITERAL

_ONE_A_GROUP = ("max", "min", "sum", "avg")  # of one sample, that sample
_OF_ITS_OWN = ("max", "min")  # the highest of the groups' highest is the highest (the lowest alike)
_GROUPING = re.compile(r"(max|min|sum|avg|count|group|topk) by \(([^()]*)\) \(")
_NOT_PAREN = re.compile(r"[^()]+")


def aggregated(how: str, by: str, value: str) -> str:
    """`how by (by) (value)`, or a shorter form of the same value (the module's docstring)."""
    outer = _outermost(value)
    if outer is not None:
        inner, labels, body = outer
        if how in _ONE_A_GROUP and inner != "topk" and labels == _names(by):
            return value
        if how in _OF_ITS_OWN and inner == how and _names(by) <= labels:
            return f"{how} by ({by}) ({body})"
        if how == "max" and inner == "topk" and body.startswith("1, ") and _names(by) <= labels:
            return f"max by ({by}) ({body[3:]})"
    return f"{how} by ({by}) ({value})"


def _names(listed: str) -> frozenset[str]:
    return frozenset(name.strip() for name in listed.split(",") if name.strip())


def _outermost(value: str) -> tuple[str, frozenset[str], str] | None:
    """(aggregation, its grouping labels, its argument) where `value` is one aggregation `agg by (L) (...)` whole."""
    head = _GROUPING.match(value)
    if head is None or not _closes_last(value, head.end() - 1):
        return None
    return head[1], _names(head[2]), value[head.end():-1]


def _closes_last(text: str, start: int) -> bool:
    """Whether the parenthesis at `start` is closed by the last character of `text`, string literals passed over whole
    (a quote opening no literal is a character as any): the parentheses between, out of the literals, are balanced
    (taking each innermost pair out in turn leaves none). Each step a regex's or str's over the whole text: a panel's
    PromQL runs to thousands of characters, read a character at a time in Python it was over half a build's CPU."""
    if text[start:start + 1] != "(" or not text.endswith(")") or len(text) - start < 2:
        return False
    parens = _NOT_PAREN.sub("", STRING_LITERAL.sub("", text[start + 1:-1]))
    while "()" in parens:
        parens = parens.replace("()", "")
    return not parens

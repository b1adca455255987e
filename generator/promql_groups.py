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
_DEPTH_MARKS = re.compile(f"[()]|{STRING_LITERAL.pattern}")  # a parenthesis, or a string literal whole


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
    if head is None or _closing(value, head.end() - 1) != len(value) - 1:
        return None
    return head[1], _names(head[2]), value[head.end():-1]


def _closing(text: str, start: int) -> int | None:
    """The place of the parenthesis closing the one at `start`, string literals passed over whole. Read as the
    characters one at a time would be: the string literals from `start` passed over; the first other character, not a
    parenthesis, closes nothing (its own place); from a parenthesis on, only parentheses and string literals change
    anything (_DEPTH_MARKS: a quote opening no literal is a character as any)."""
    at = start
    while at < len(text) and (literal := STRING_LITERAL.match(text, at)) is not None:
        at = literal.end()
    if at >= len(text):
        return None
    if text[at] not in "()":
        return at
    depth = 0
    for mark in _DEPTH_MARKS.finditer(text, at):
        sign = mark[0]
        if sign == "(" or sign == ")":
            depth += 1 if sign == "(" else -1
            if depth == 0:
                return mark.start()
    return None

"""Argument types of CloudWatch metric math, as the user guide documents them, so lint can check them.

Source: "Using math expressions with CloudWatch metrics" (AWS CloudWatch user guide,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html). Its tables give,
per function, the argument types it accepts and its return type: S a number, TS one time series, TS[]
an array of time series. A Metrics Insights query is TS[] when it has GROUP BY, else TS; a metric (a
MetricStat, or a metric line of a widget) is TS; SEARCH and METRICS() are TS[].

* Arithmetic (+ - * / ^): the cell "S, S S, TS TS, TS S, TS[] TS, TS[]" read as pairs: (S, S), (S, TS),
  (TS, TS), (S, TS[]), (TS, TS[]), in either order, as the examples show (`100/[m1, m2]`, `AVG([m1,m2]/m3)`,
  `METRICS()*100`): an array with a number or with one series. Two arrays combined by an operator are not
  documented, whether or not they hold the same series.
* Comparison and logical operators: "either a pair of time series or a pair of single scalar values",
  and a series with a number (the page's `metric1 >= 30`); never an array.
* IF: the page's list of syntaxes, each with a single-series output: IF(TS, S|TS[, S|TS]), IF(S, TS[, TS]).
* The functions' rows below. A final result must be a series or an array (a number is not valid).
* PERIOD: "Valid input is metrics, not the results of other expressions": the id of a metric (a Metrics
  Insights query is an expression).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .metrics_insights import scan

NUMBER, SERIES, ARRAY, WORD = "S", "TS", "TS[]", "keyword"

# name -> {argument types: result}; ARRAY as a result keeps the argument array's series
ONE_EACH = {(SERIES,): SERIES, (ARRAY,): ARRAY}
ONE_FOR_ALL = {(SERIES,): NUMBER, (ARRAY,): SERIES}
FUNCTIONS: dict[str, dict[tuple[str, ...], str]] = {
    "ABS": ONE_EACH, "CEIL": ONE_EACH, "FLOOR": ONE_EACH, "LOG": ONE_EACH, "LOG10": ONE_EACH, "DIFF": ONE_EACH,
    "DIFF_TIME": ONE_EACH, "RATE": ONE_EACH, "RUNNING_SUM": ONE_EACH,
    "AVG": ONE_FOR_ALL, "SUM": ONE_FOR_ALL, "MIN": ONE_FOR_ALL, "MAX": ONE_FOR_ALL, "STDDEV": ONE_FOR_ALL,
    "DATAPOINT_COUNT": ONE_FOR_ALL,
    "FILL": {(SERIES, NUMBER): SERIES, (SERIES, WORD): SERIES, (ARRAY, NUMBER): ARRAY, (ARRAY, SERIES): ARRAY,
             (ARRAY, WORD): ARRAY},
    "FIRST": {(ARRAY,): SERIES}, "LAST": {(ARRAY,): SERIES}, "METRIC_COUNT": {(ARRAY,): NUMBER},
    "REMOVE_EMPTY": {(ARRAY,): ARRAY}, "TIME_SERIES": {(NUMBER,): SERIES}, "PERIOD": {(SERIES,): NUMBER},
    "SORT": {(ARRAY, WORD, WORD): ARRAY, (ARRAY, WORD, WORD, NUMBER): ARRAY},
    "SLICE": {(ARRAY, NUMBER): ARRAY, (ARRAY, NUMBER, NUMBER): ARRAY},
    "ANOMALY_DETECTION_BAND": {(SERIES,): ARRAY, (SERIES, NUMBER): ARRAY},
    **{name: {(SERIES,): SERIES} for name in ("MINUTE", "HOUR", "DAY", "DATE", "MONTH", "YEAR", "EPOCH")},
}
ARITHMETIC = {(NUMBER, NUMBER), (SERIES, SERIES), (SERIES, NUMBER), (ARRAY, SERIES), (ARRAY, NUMBER)}
COMPARISON = {(NUMBER, NUMBER), (SERIES, SERIES), (SERIES, NUMBER)}
IF_FORMS = {(c, t) for c in (SERIES,) for t in (NUMBER, SERIES)} | \
    {(SERIES, t, f) for t in (NUMBER, SERIES) for f in (NUMBER, SERIES)} | {(NUMBER, SERIES), (NUMBER, SERIES, SERIES)}
KEYWORDS = frozenset({"REPEAT", "LINEAR", "ASC", "DESC", "AVG", "MIN", "MAX", "SUM"})

_TOKEN = re.compile(r"""\s*(?:(?P<number>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(?P<op>\|\||&&|==|!=|<=|>=|[-+*/^<>()\[\],]))""", re.X)


class MathError(ValueError):
    """An expression lint cannot read, or a form the user guide does not document."""


@dataclass(frozen=True)
class Kind:
    name: str  # S, TS, TS[], keyword
    series: str = ""  # for an array: the query or array whose series it holds
    metric: bool = False  # a metric (a MetricStat, or a widget's metric line), not an expression's result

    def __str__(self) -> str:
        return self.name


def _tokens(text: str) -> list[tuple[str, str]]:
    try:
        return scan(_TOKEN, text)
    except ValueError as error:
        raise MathError(str(error)) from None


class _Checker:
    """A recursive-descent reading of one expression that returns its type, or raises MathError."""

    def __init__(self, text: str, ids: dict[str, Kind]):
        self.items, self.at, self.ids, self.arrays = _tokens(text), 0, ids, 0

    def peek(self) -> str | None:
        return self.items[self.at][1] if self.at < len(self.items) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.at >= len(self.items) or (expected is not None and self.items[self.at][1] != expected):
            raise MathError(f"expected {expected or 'more'} at token {self.at + 1}")
        self.at += 1
        return self.items[self.at - 1]

    def binary(self, operators: tuple[str, ...], operand, forms, what: str) -> Kind:
        left = operand()
        while self.peek() in operators or (self.peek() or "").upper() in operators:
            operator = self.take()[1]
            right = operand()
            left = _combine(operator, left, right, forms, what)
        return left

    def expression(self) -> Kind:
        return self.binary(("OR", "||"), self.conjunction, COMPARISON, "a logical operator")

    def conjunction(self) -> Kind:
        return self.binary(("AND", "&&"), self.comparison, COMPARISON, "a logical operator")

    def comparison(self) -> Kind:
        return self.binary(("==", "!=", "<=", ">=", "<", ">"), self.sum, COMPARISON, "a comparison")

    def sum(self) -> Kind:
        return self.binary(("+", "-"), self.product, ARITHMETIC, "arithmetic")

    def product(self) -> Kind:
        return self.binary(("*", "/"), self.power, ARITHMETIC, "arithmetic")

    def power(self) -> Kind:
        return self.binary(("^",), self.unary, ARITHMETIC, "arithmetic")

    def unary(self) -> Kind:
        if self.peek() == "-":
            self.take()
            return self.unary()  # unary subtraction: S, TS, TS[]
        return self.primary()

    def primary(self) -> Kind:
        kind, text = self.take()
        if kind == "number":
            return Kind(NUMBER)
        if kind == "string":
            raise MathError(f"a string {text} outside a function")
        if text == "(":
            inner = self.expression()
            self.take(")")
            return inner
        if text == "[":  # an array literal of series
            items = [self.expression()]
            while self.peek() == ",":
                self.take()
                items.append(self.expression())
            self.take("]")
            if any(i.name not in (SERIES, ARRAY) for i in items):
                raise MathError("an array literal holds series")
            self.arrays += 1
            return Kind(ARRAY, f"[...]#{self.arrays}")
        if kind != "name":
            raise MathError(f"unexpected {text!r}")
        if self.peek() == "(":
            return self.call(text)
        if text in self.ids:
            return self.ids[text]
        if text in KEYWORDS:
            return Kind(WORD)
        raise MathError(f"{text!r} names no metric or expression of its own widget or alarm")

    def call(self, name: str) -> Kind:
        self.take("(")
        if name in ("SEARCH", "METRICS", "INSIGHT_RULE_METRIC"):  # strings inside; their result only
            depth = 1
            while depth:
                text = self.take()[1]
                depth += {"(": 1, ")": -1}.get(text, 0)
            self.arrays += 1
            return Kind(SERIES) if name == "INSIGHT_RULE_METRIC" else Kind(ARRAY, f"{name}#{self.arrays}")
        arguments: list[Kind] = []
        if self.peek() != ")":
            arguments.append(self.expression())
            while self.peek() == ",":
                self.take()
                arguments.append(self.expression())
        self.take(")")
        types = tuple(a.name for a in arguments)
        shown = f"{name}({', '.join(types)})"
        if name == "PERIOD" and not (len(arguments) == 1 and arguments[0].metric):
            raise MathError(f"{shown}: PERIOD takes a metric, \"not the results of other expressions\" (a Metrics "
                            f"Insights query is one)")
        if name == "IF":
            if types not in IF_FORMS:
                raise MathError(f"{shown} is not one of IF's documented syntaxes (IF takes single series and "
                                f"numbers: IF(TS, S|TS[, S|TS]), IF(S, TS[, TS]))")
            return Kind(SERIES)
        forms = FUNCTIONS.get(name)
        if forms is None:
            raise MathError(f"{name}() is not a metric-math function the user guide lists")
        if types not in forms:
            accepted = "; ".join(f"{name}({', '.join(f)})" for f in forms)
            raise MathError(f"{shown} is not documented (the user guide lists {accepted})")
        result = forms[types]
        return next(a for a in arguments if a.name == ARRAY) if result == ARRAY and ARRAY in types else Kind(result)


def _combine(operator: str, left: Kind, right: Kind, forms, what: str) -> Kind:
    pair = (left.name, right.name)
    if pair not in forms and pair[::-1] not in forms:
        raise MathError(f"{what} {operator!r} between {left} and {right} is not documented")
    for side in (left, right):
        if side.name == ARRAY:
            return side
    return Kind(SERIES) if SERIES in pair else Kind(NUMBER)


def kind_of(expression: str, ids: dict[str, Kind]) -> Kind:
    """The type of a metric-math expression over ids of known types; raises MathError for an undocumented
    form, and for a result that is a number (a math expression's final result must be a series)."""
    checker = _Checker(expression, ids)
    result = checker.expression()
    if checker.peek() is not None:
        raise MathError(f"unexpected {checker.peek()!r} after the expression")
    if result.name not in (SERIES, ARRAY):
        raise MathError("the result is a number: a math expression's final result must be a time series")
    return result

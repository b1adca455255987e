"""The tests' CloudWatch metric-math evaluator computes the user guide's own examples.

Source: "Using math expressions with CloudWatch metrics"
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html, read in
awsdocs/amazon-cloudwatch-user-guide doc_source/using-metric-math.md). Its tables give series as
lists with `-` for a timestamp without a value; here a series is {timestamp index: value}. Every
example is checked in both forms the evaluator has: a widget's (ids bound to arrays of series, as a
GROUP BY query returns them) and an alarm's (ids bound to single series).
"""

from __future__ import annotations

import pytest

from tests.support import cloudwatch_eval


def series(*values):
    """[30, None, 20] -> {0: 30.0, 2: 20.0} (None: the page's `-`)."""
    return {t: float(v) for t, v in enumerate(values) if v is not None}


def both(expression: str, **ids):
    """The expression's value in the alarm form and in the widget form (ids as one-series arrays)."""
    alarm = cloudwatch_eval.alarm_math(expression, ids)
    widget = cloudwatch_eval.math(expression, {k: {(): v} if isinstance(v, dict) else v for k, v in ids.items()})
    assert widget == {(): alarm}, expression
    return alarm


COMPARISONS = dict(metric1=series(30, 20, 0, 0), metric2=series(20, None, 20, None))


@pytest.mark.parametrize(("expression", "expected"), [
    ("(metric1 < metric2)", series(0, 0, 1, 0)),
    ("(metric1 >= 30)", series(1, 0, 0, 0)),
    ("(metric1 > 15 AND metric2 > 15)", series(1, 0, 0, 0)),
])
def test_comparison_and_logical_operators_table(expression, expected):
    """"When comparison operators are used between two time series, and only one of the time series has a
    value for a particular time stamp, the function treats the missing value in the other time series as 0"."""
    assert both(expression, **COMPARISONS) == expected


IFS = dict(metric1=series(1, 1, 0, 0, None), metric2=series(30, None, 0, 0, 30), metric3=series(0, 0, 20, None, 20))


@pytest.mark.parametrize(("expression", "expected"), [
    ("IF(metric1, metric2, metric3)", series(30, 0, 20, None, None)),
    ("IF(metric1, 5, metric3)", series(5, 5, 20, None, None)),
    ("IF(metric1, metric2, 5)", series(30, 0, 5, 5, None)),
    ("IF(metric1, metric2)", series(30, 0, None, None, None)),  # falseValue omitted: dropped where false
    ("IF(1, metric2, metric3)", series(30, None, 0, 0, 30)),
    ("IF(0, metric2)", {}),  # IF(scalar, ...) without metric3 when false: an empty time series
])
def test_if_tables(expression, expected):
    assert both(expression, **IFS) == expected


def test_arithmetic_between_series_reads_a_missing_value_as_0_and_drops_a_division_by_zero():
    """"Missing values in a time series are treated as 0. If the value of a data point causes a function to
    attempt to divide by zero, the data point is dropped"."""
    m1, m2 = series(6, None, 4, 3), series(2, 5, 0, None)
    assert both("m1 + m2", m1=m1, m2=m2) == series(8, 5, 4, 3)
    assert both("m1 / m2", m1=m1, m2=m2) == series(3, 0, None, None)


def test_arithmetic_with_a_number_applies_to_each_data_point_of_each_series_and_creates_none():
    """"METRICS()/100 returns an array of time series, each of which is a time series showing each data point
    of one of the metrics divided by 100": a series without a point at a timestamp gets none there, so
    `x * 0 + 1` marks exactly the points x has, and their SUM counts the series reporting at each timestamp."""
    array = {(("gpu", "0"),): series(50, 60, None), (("gpu", "1"),): series(None, 70, 80)}
    assert cloudwatch_eval.math("q / 100", {"q": array}) == {
        (("gpu", "0"),): series(0.5, 0.6, None), (("gpu", "1"),): series(None, 0.7, 0.8)}
    assert cloudwatch_eval.math("q * 0 + 1", {"q": array}) == {
        (("gpu", "0"),): series(1, 1, None), (("gpu", "1"),): series(None, 1, 1)}
    assert cloudwatch_eval.math("SUM(q * 0 + 1)", {"q": array}) == {(): series(1, 2, 1)}
    # the mean over the GPUs with a value there, where AVG reads a missing value as 0 ("Missing values are
    # treated as 0", the page's AVG row)
    assert cloudwatch_eval.math("SUM(q) / SUM(q * 0 + 1)", {"q": array}) == {(): series(50, 65, 80)}
    assert cloudwatch_eval.math("AVG(q)", {"q": array}) == {(): series(25, 65, 40)}


@pytest.mark.parametrize("expression", [
    "IF(q < 100000000000000, q)",  # IF's syntaxes are for single series ("the output is a single time series")
    "SUM(IF(q < 100000000000000, q))",
    "q < 5",  # comparison: two series, two numbers, or a series with a number
    "q > 1 AND m > 1",
    "q + r",  # two arrays: the arithmetic row pairs an array with a number or one series only
    "q - q",  # two arrays of the same series are two arrays too
    "q / (FLOOR(q) / FLOOR(q))",
    "q / (FLOOR(1000000000.0 / (ABS(q) + 1)) / FLOOR(1000000000.0 / (ABS(q) + 1)))",
    "FLOOR(q, 2)",
    "AVG(m)",  # a number: the final result must be a time series
    "TIME_SERIES(m)",
    "IF(q, m)",
    "q / PERIOD(q)",  # PERIOD: "Valid input is metrics, not the results of other expressions"
    "q / PERIOD(m)",  # m is an expression's result here (no metric line)
])
def test_undocumented_argument_types_are_refused(expression):
    """Every function and operator takes only the argument types the page lists for it; the evaluator refuses
    the rest rather than guessing what CloudWatch would do with them."""
    array = {(("gpu", "0"),): series(5, 2e19)}
    with pytest.raises(cloudwatch_eval.Undocumented):
        cloudwatch_eval.math(expression, {"q": array, "r": {(("gpu", "1"),): series(1)}, "m": {(): series(1, 2)}},
                             {"q": ("TS[]", "q"), "r": ("TS[]", "r"), "m": "TS"})


@pytest.mark.parametrize("expression", [
    "q / 100", "100 / q", "q * m", "-q", "FLOOR(q)", "CEIL(ABS(q))", "SUM(q) / SUM(q * 0 + 1)", "MAX(q) - m",
    "m / q", "q - m", "FLOOR(1000000000.0 / (ABS(q) + 1))", "IF(m < 5, m)", "IF(m > 0, m / 2, 1)",
    "IF(SUM(q) < 5, SUM(q))",
])
def test_documented_forms_are_evaluated(expression):
    array = {(("gpu", "0"),): series(5, 2e19)}
    cloudwatch_eval.math(expression, {"q": array, "m": {(): series(1, 2)}}, {"q": ("TS[]", "q"), "m": "TS"})


def test_period_is_the_period_a_metric_line_was_requested_with():
    """PERIOD(p) of a widget's metric line is the period the console requests the widget with: the widget's own,
    or the one its period selector sets instead."""
    from tests.support.cloudwatch_agent import Datapoint

    points = [Datapoint("N", "m", (("ClusterName", "c"), ("gpu", "0")), float(t), 2.0) for t in range(0, 600, 30)]
    properties = {"period": 300, "stat": "Average", "metrics": [
        [{"expression": 'SELECT SUM("m") FROM SCHEMA("N", "ClusterName", "gpu") GROUP BY "gpu"', "id": "q1",
          "visible": False}],
        ["N", "m", "ClusterName", "c", {"id": "p1", "visible": False}],
        [{"expression": "q1 / PERIOD(p1)", "id": "e1", "label": "${PROP('Dim.gpu')}"}]]}
    assert cloudwatch_eval.widget(properties, points, 0, 600) == {"0": {0: 20 / 300, 300: 20 / 300}}
    assert cloudwatch_eval.widget(properties, points, 0, 600, period=60) == {"0": {t: 4 / 60 for t in range(0, 600, 60)}}

"""Evaluates CloudWatch dashboard widgets and alarms over datapoints, with the documented semantics.

* Metrics Insights (user guide, "query components and syntax"): SCHEMA(namespace, dims)
  matches metrics with exactly that dimension set; WHERE filters on dimension values;
  the function aggregates every *observation* of the matched metrics in each period (COUNT
  counts observations); GROUP BY makes one series per distinct value combination; ORDER BY
  FUNC() sorts the series by the function over the whole time range; at most LIMIT (and at
  most 500) series are returned.
* Metric math, as the user guide's "Using math expressions with CloudWatch metrics" page documents it
  (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html; read in its
  source, awsdocs/amazon-cloudwatch-user-guide doc_source/using-metric-math.md), in widgets and alarms alike:
  - arithmetic with a number applies to each data point of each series, creating none: "METRICS()/100
    returns an array of time series, each of which is a time series showing each data point of one of
    the metrics divided by 100" (so `x * 0 + 1` is 1 exactly where x has a point);
  - arithmetic between two series: "Missing values in a time series are treated as 0", so the result
    has a point wherever either has one; "If the value of a data point causes a function to attempt to
    divide by zero, the data point is dropped";
  - a comparison (or AND / OR) of a series with a number gives 0 or 1 at each of its points; of two
    series "the function treats the missing value in the other time series as 0" (the page's
    metric1 / metric2 table);
  - IF(condition, trueValue[, falseValue]) has a point only where the condition has one: trueValue
    where it is not 0 (0 when trueValue is a series without a point there), falseValue where it is 0,
    dropped when falseValue is a series without a point there or is omitted (the page's IF tables).
    The page lists IF's forms for single series only ("For each of these syntaxes, the output is a single
    time series"): IF over an array of series is refused;
  - an array of series with a single series or a number, in either order: each series of the array with it
    (the arithmetic row's "S, S S, TS TS, TS S, TS[] TS, TS[]" read as pairs, and its examples 100/[m1, m2],
    AVG([m1,m2]/m3), METRICS()*100); two arrays combined by an operator are not documented;
  - every function and operator is checked against the argument types the page lists for it (S scalar,
    TS one series, TS[] an array; a GROUP BY query is TS[], a query without GROUP BY or a MetricStat is
    TS): an undocumented form raises Undocumented, whatever it would evaluate to;
  - PERIOD(m) is the period of the metric m in seconds: "Valid input is metrics, not the results of other
    expressions" (a Metrics Insights query is an expression: refused); a widget's metric line is requested
    with the widget's period, as its query is;
  - AVG of an array: "Missing values are treated as 0", so it divides by every series of the array;
    SUM of an array adds the values there are (a missing value adds 0); MIN and MAX of an array take
    the values there are (the page says nothing of missing values for them).
* Widgets: every line is requested with the widget's period (the time range with setPeriodToTimeRange); a
  period the console sets instead (its period selector, or the automatic period) is the `period` argument;
  with live data off (the default), a period is shown once it ended at least a minute before `now`.
* Alarms: a GROUP BY alarm evaluates each series (contributor); a datapoint breaches when it
  compares to the threshold as ComparisonOperator says; DatapointsToAlarm of the last
  EvaluationPeriods periods must breach; TreatMissingData decides for periods without data. It evaluates the
  500 series its query returns (past 500, those its ORDER BY ranks first; without ORDER BY "you can't control which
  500", here the first 500 the datapoints give; the ranking is over the queried window, the evaluation range, whose
  length is not published: a contributor in ALARM over one length and left out over another raises RangeDependent)
  and names at most 100 contributors in ALARM (alarm-limits.html):
  past 100, which it names is not documented, and `alarm` raises ContributorsCapped unless asked for every series
  it evaluated.
  The periods are those of the evaluation window the user guide describes ("Alarm evaluation window",
  alarm-evaluation-window.html): Period x EvaluationPeriods long, and with SlidingWindow, the default
  when PutMetricAlarm gives no EvaluationWindow (gpudash gives none), it "advances each time the alarm
  is evaluated, forming a rolling time window" - it ends at the evaluation, not at a period boundary
  (WallClockWindow aligns it to the period's clock boundaries). So `alarm(request, points, end)` reads
  [end - N x period, end) in N consecutive periods from its start (a query's time buckets start at the
  requested start: "SQL inference", time bucketing, start inclusive, end exclusive), and ORDER BY ranks
  each series by the function "performed on all matching data points of each individual time series
  over the queried time window" ("SQL inference", ORDER BY global aggregate): the evaluation window.
* Alarms and missing data: the evaluation range. The user guide, "Configuring how CloudWatch alarms treat missing
  data", section "How alarm state is evaluated when data is missing" (alarms-and-missing-data.html; read in its
  source, awsdocs/amazon-cloudwatch-user-guide doc_source/AlarmThatSendsEmail.md before the repository was archived):
  "Whenever an alarm evaluates whether to change state, CloudWatch attempts to retrieve a higher number of data
  points than the number specified as Evaluation Periods. The exact number of data points it attempts to retrieve
  depends on the length of the alarm period and whether it is based on a metric with standard resolution or high
  resolution. The time frame of the data points that it attempts to retrieve is the evaluation range." Then:
  "If no data points in the evaluation range are missing, CloudWatch evaluates the alarm based on the most recent
  data points collected"; "If some data points in the evaluation range are missing, but the total number of
  existing data points that were successfully retrieved from the evaluation range is equal to or more than the
  alarm's Evaluation Periods, CloudWatch evaluates the alarm state based on the most recent real data points that
  were successfully retrieved, including the necessary extra data points from farther back in the evaluation
  range. In this case, the value you set for how to treat missing data is not needed and is ignored."; "If some
  data points in the evaluation range are missing, and the number of actual data points that were retrieved is
  lower than the alarm's number of Evaluation Periods, CloudWatch fills in the missing data points with the result
  you specified for how to treat missing data, and then evaluates the alarm. However, all real data points in the
  evaluation range are included in the evaluation. CloudWatch uses missing data points only as few times as
  possible." `missing`: "If all data points in the alarm evaluation range are missing, the alarm transitions to
  INSUFFICIENT_DATA." Premature alarm state ("Avoiding premature transitions to alarm state"): with `missing`, an
  alarm "always go[es] into ALARM state when the oldest available breaching datapoint during the Evaluation Periods
  number of data points is at least as old as the value of Datapoints to Alarm, and all other more recent data
  points are breaching or missing", "even if the total number of datapoints available is lower than M"; `- - - - X`
  does not alarm ("the next data point may be non-breaching"). That sentence read literally contradicts the page's
  own table (`0 - X - -`, 2 of 3, missing: OK; awsdocs/amazon-cloudwatch-user-guide issue 129), so it is applied
  when fewer real data points than Datapoints to Alarm are in the range: every row of both tables holds
  (test_cloudwatch_evaluation_range.py). The same page says of alarms on math expressions "you can specify how you
  want CloudWatch to treat missing data points for the underlying metrics", and the Metrics Insights alarm pages
  link to this section: nothing documents another rule for them, so every alarm (metric, metric math, Metrics
  Insights, each contributor of a GROUP BY alarm) is judged so, on the data points its expression returns.
  The range's length is not published (the page's tables use 5 for 3 evaluation periods of 5 minutes;
  awsdocs/amazon-cloudwatch-user-guide issue 102 asked for the rule and got none): `alarm()` judges every length
  from EvaluationPeriods + 1 (the page: "a higher number of data points than the number specified as Evaluation
  Periods") to EvaluationPeriods + EXTRA_PERIODS (5: the page's example adds 2; 5 allows for longer ranges at
  other periods) and returns the state only when every length gives the same one (RangeDependent otherwise), so a
  test passes only where the range's length cannot decide. An alarm on a Metrics Insights query reads the latest 3
  hours of data only ("Only the latest 3 hours of data can be used for evaluating the alarm's conditions",
  alarm-limits.html): its range is cut there (range_lengths).

Written independently of gpudash's generator: it parses the generated text itself.
"""

from __future__ import annotations

import ast
import bisect
import functools
import math as math_module
import re
from dataclasses import dataclass
from typing import Iterable

from tests.support.cloudwatch_agent import Datapoint

Series = dict[int, float]  # period start -> value
Result = dict[tuple[tuple[str, str], ...], Series]  # group key -> series

_IDENT = r'"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*'
_STRING = r"'(?:[^'\\]|\\.)*'"
_QUERY = re.compile(
    rf"^SELECT\s+(?P<fn>AVG|SUM|MIN|MAX|COUNT)\((?P<metric>{_IDENT})\)\s+FROM\s+SCHEMA\((?P<schema>.*?)\)"
    rf"(?:\s+WHERE\s+(?P<where>.*?))?(?:\s+GROUP BY\s+(?P<group>.*?))?"
    rf"(?:\s+ORDER BY\s+(?P<ofn>AVG|SUM|MIN|MAX|COUNT)\(\)\s+(?P<dir>ASC|DESC))?(?:\s+LIMIT\s+(?P<limit>\d+))?$",
    re.I | re.S)


def _name(token: str) -> str:
    token = token.strip()
    return re.sub(r"\\(.)", r"\1", token[1:-1]) if token.startswith('"') else token


def _names(text: str) -> list[str]:
    return [_name(t) for t in re.findall(_IDENT, text)]


FUNCTIONS = {"AVG": lambda v: sum(v) / len(v), "SUM": sum, "MIN": min, "MAX": max, "COUNT": len}


@dataclass
class Query:
    function: str
    metric: str
    namespace: str
    schema: list[str]
    where: list[tuple[str, str, str]]
    group: list[str]
    order: tuple[str, str] | None
    limit: int | None


def parse(text: str) -> Query:
    match = _QUERY.match(text.strip())
    assert match, f"not a Metrics Insights query this evaluator reads: {text}"
    schema = _names(match["schema"])
    where = []
    for clause in re.split(r"\s+AND\s+", match["where"] or "") if match["where"] else []:
        m = re.fullmatch(rf"\s*({_IDENT})\s*(=|!=)\s*({_STRING})\s*", clause)
        assert m, f"WHERE clause not understood: {clause}"
        where.append((_name(m[1]), m[2], re.sub(r"\\(.)", r"\1", m[3][1:-1])))
    order = (match["ofn"].upper(), match["dir"].upper()) if match["ofn"] else None
    return Query(match["fn"].upper(), _name(match["metric"]), schema[0], schema[1:], where,
                 _names(match["group"] or ""), order, int(match["limit"]) if match["limit"] else None)


_INDEX: dict[int, tuple[list, int, dict[str, list[Datapoint]], dict[str, tuple]]] = {}


def _indexed(datapoints: list[Datapoint]) -> tuple[list, int, dict[str, list[Datapoint]], dict[str, tuple]]:
    """(the list, its length, its datapoints by metric name, the time order of each name's), built once per list
    (the list is kept so its id stays its own; a list that grew since is indexed again)."""
    cached = _INDEX.get(id(datapoints))
    if cached is None or cached[0] is not datapoints or cached[1] != len(datapoints):
        index: dict[str, list[Datapoint]] = {}
        for point in datapoints:
            index.setdefault(point.metric, []).append(point)
        cached = _INDEX[id(datapoints)] = (datapoints, len(datapoints), index, {})
    return cached


def _by_metric(datapoints: list[Datapoint]) -> dict[str, list[Datapoint]]:
    """Datapoints by metric name, each name's in the list's order."""
    return _indexed(datapoints)[2]


def _of_metric(datapoints: Iterable[Datapoint], metric: str, start: float | None = None,
               end: float | None = None) -> Iterable[Datapoint]:
    """The datapoints that may be of `metric`, in their order (those of a list: its points of that name; with
    `start` and `end`, only those whose timestamp is in [start, end), found by bisection in the time order of the
    name's points and given in the list's order: the same points, in the same order, as filtering them all)."""
    if not isinstance(datapoints, list):
        return datapoints
    _, _, index, orders = _indexed(datapoints)
    points = index.get(metric, [])
    if start is None or end is None or len(points) < 64:
        return points
    if metric not in orders:
        positions = sorted(range(len(points)), key=lambda i: points[i].timestamp)
        orders[metric] = ([points[i].timestamp for i in positions], positions)
    times, positions = orders[metric]
    return [points[i] for i in sorted(positions[bisect.bisect_left(times, start):bisect.bisect_left(times, end)])]


def _group_key(query: Query, namespace: str, dimensions: tuple) -> tuple | None:
    """The series a point of `namespace` with these dimensions counts in (its GROUP BY values); None when the
    query does not read it (another namespace, another dimension set than SCHEMA's, or WHERE leaves it out)."""
    dims = dict(dimensions)
    if namespace != query.namespace or set(dims) != set(query.schema):
        return None
    if not all((dims.get(d) == v) == (op == "=") for d, op, v in query.where):
        return None
    return tuple((g, dims[g]) for g in query.group)


def _read_by(query: Query, datapoints: list[Datapoint]) -> tuple[list[float], list[tuple], bool]:
    """The points of the list the query reads (its metric, namespace, dimension set and WHERE), as (timestamp,
    position in the list, group key, value) in time order (the list's order among equal times), with their
    timestamps, and whether that is the list's order too: worked out once per list and query (an alarm judged at
    every minute reads the same list again and again; a list that grew since is indexed again)."""
    _, _, index, orders = _indexed(datapoints)
    tag = ("insights", query.metric, query.namespace, tuple(query.schema), tuple(query.where), tuple(query.group))
    found = orders.get(tag)
    if found is None:
        keys: dict[tuple, tuple | None] = {}  # (namespace, dimensions) -> _group_key: a fleet repeats them
        read = []
        for position, point in enumerate(index.get(query.metric, [])):
            seen = (point.namespace, point.dimensions)
            key = keys[seen] if seen in keys else keys.setdefault(seen, _group_key(query, *seen))
            if key is not None:
                read.append((point.timestamp, position, key, point.value))
        in_order = all(read[i][0] <= read[i + 1][0] for i in range(len(read) - 1))
        if not in_order:
            read.sort(key=lambda r: (r[0], r[1]))
        found = orders[tag] = ([r[0] for r in read], read, in_order)
    return found


def _whole_periods(start: float, end: float, period: int) -> float | None:
    """The phase of the period grid (start modulo period) when [start, end) is a whole number of periods on whole
    seconds: then every period of the range holds exactly the points of the list in it, whatever else the range
    holds; else None."""
    if not (float(start).is_integer() and float(end).is_integer()) or (end - start) % period:
        return None
    return start % period


def _period_buckets(cache: dict, tag: tuple, period: int, phase: float, points, function) -> dict:
    """{series key: (its period starts in time order, their values each in the list's order, `function` of each
    period's values, each period's first position in the list, whether those positions rise with time)} of
    `points()` ((timestamp, position, key, value) in the list's order) cut into the periods of the grid of `phase`,
    worked out once per list, query, period and phase: the periods of a range whose start is on that grid hold the
    same values, in the same order, as cutting the range's points does (int(start + (t - start) // period * period)
    names the same period start for every start on the grid: whole seconds, exact)."""
    found = cache.get((tag, period, phase))
    if found is None:
        series: dict[tuple, dict[int, tuple[int, list[float]]]] = {}
        for timestamp, position, key, value in points():
            bucket = int(phase + (timestamp - phase) // period * period)
            periods = series.setdefault(key, {})
            if bucket in periods:
                periods[bucket][1].append(value)
            else:
                periods[bucket] = (position, [value])
        found = cache[(tag, period, phase)] = {}
        for key, periods in series.items():
            starts = sorted(periods)
            values = [periods[b][1] for b in starts]
            firsts = [periods[b][0] for b in starts]
            found[key] = (starts, values, [function(v) for v in values], firsts,
                          all(a < b for a, b in zip(firsts, firsts[1:])))  # a list in time order: no sort needed
    return found


def _window_of(buckets: dict, start: float, end: float) -> list[tuple[tuple, range | list[int], tuple]]:
    """[(key, its periods in [start, end) as indexes, (starts, values, aggregates, first positions))] of the keys
    with any, keys and periods in the order their first points come in the list (the order cutting the range's
    points in the list's order gives)."""
    window = []
    for key, found in buckets.items():
        starts = found[0]
        i, j = bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)
        if i < j:
            window.append((_in_list_order(found, i, j), key, found))
    window.sort(key=lambda w: w[2][3][w[0][0]])
    return [(key, kept, found) for kept, key, found in window]


def _in_list_order(found: tuple, i: int, j: int) -> range | list[int]:
    """The periods i..j-1 of a _period_buckets entry in the order their first points come in the list."""
    return range(i, j) if found[4] else sorted(range(i, j), key=found[3].__getitem__)


def metrics_insights(text: str, datapoints: Iterable[Datapoint], start: float, end: float, period: int) -> Result:
    query = parse(text)
    buckets: dict[tuple, dict[int, list[float]]] = {}
    phase = _whole_periods(start, end, period) if isinstance(datapoints, list) else None
    if phase is not None:  # the range's periods, cut once per list, query and grid (an alarm judged at every minute)
        _, read, in_order = _read_by(query, datapoints)
        tag = ("insights periods", query.function, query.metric, query.namespace, tuple(query.schema),
               tuple(query.where), tuple(query.group))
        window = _window_of(_period_buckets(_indexed(datapoints)[3], tag, period, phase, lambda: read if in_order else
                                            sorted(read, key=lambda r: r[1]), FUNCTIONS[query.function]), start, end)
        result = {key: {found[0][k]: found[2][k] for k in kept} for key, kept, found in window}
        buckets = {key: {found[0][k]: found[1][k] for k in kept} for key, kept, found in window} \
            if query.order else {}
        return _ordered(query, result, buckets)
    if isinstance(datapoints, list):  # the points in [start, end) it reads, in the list's order
        times, read, in_order = _read_by(query, datapoints)
        window = read[bisect.bisect_left(times, start):bisect.bisect_left(times, end)]
        if not in_order:
            window.sort(key=lambda r: r[1])
        for timestamp, _, key, value in window:
            bucket = int(start + (timestamp - start) // period * period)
            buckets.setdefault(key, {}).setdefault(bucket, []).append(value)
    else:
        keys: dict[tuple, tuple | None] = {}  # (namespace, dimensions) -> _group_key
        for point in datapoints:
            if point.metric != query.metric or not start <= point.timestamp < end:
                continue
            seen = (point.namespace, point.dimensions)
            key = keys[seen] if seen in keys else keys.setdefault(seen, _group_key(query, *seen))
            if key is None:
                continue
            bucket = int(start + (point.timestamp - start) // period * period)
            buckets.setdefault(key, {}).setdefault(bucket, []).append(point.value)
    result = {key: {b: FUNCTIONS[query.function](values) for b, values in series.items()}
              for key, series in buckets.items()}
    return _ordered(query, result, buckets)


def _ordered(query: Query, result: Result, buckets: dict[tuple, dict[int, list[float]]]) -> Result:
    """The query's series ordered by ORDER BY (its function over each series' values, `buckets`), at most LIMIT."""
    if query.order:
        whole = {key: FUNCTIONS[query.order[0]]([v for vs in buckets[key].values() for v in vs]) for key in result}
        keys = sorted(result, key=lambda k: whole[k], reverse=query.order[1] == "DESC")
        result = {k: result[k] for k in keys}
    limit = min(query.limit or 500, 500)
    return dict(list(result.items())[:limit])


def _atom(node: ast.AST, env: dict):
    """A number or an id's value; None for anything else."""
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -float(node.operand.value)
    return None


def _per_series(operation, *operands):
    """`operation` over numbers and series, applied series by series where operands are arrays of series
    (a Result): an array with a number or with a single series (key ()) pairs each of its series with it."""
    arrays = [o for o in operands if isinstance(o, dict)]
    if not arrays:
        return operation(*operands)
    keys = next((set(a) for a in arrays if set(a) != {()}), {()})
    assert all(set(a) in (keys, {()}) for a in arrays), "metric math between two different arrays of series"
    result = {}
    for key in keys:
        parts = [(o[key] if key in o else o[()]) if isinstance(o, dict) else o for o in operands]
        value = operation(*parts)
        result[key] = value if isinstance(value, dict) else {}
    return result


class Undocumented(AssertionError):
    """Metric math that applies a function or operator to argument types the user guide does not list."""


# The user guide's argument types, per function: {argument types: return type}; "A" stands for TS[].
_ELEMENTWISE = {("TS",): "TS", ("A",): "A"}  # ABS, CEIL, FLOOR, LOG, LOG10, DIFF, RATE, ...
_REDUCING = {("TS",): "S", ("A",): "TS"}  # AVG, SUM, MIN, MAX, STDDEV, DATAPOINT_COUNT
_SIGNATURES = {
    **{name: _ELEMENTWISE for name in ("ABS", "CEIL", "FLOOR", "LOG", "LOG10", "DIFF", "DIFF_TIME", "RATE",
                                        "RUNNING_SUM")},
    **{name: _REDUCING for name in ("AVG", "SUM", "MIN", "MAX", "STDDEV", "DATAPOINT_COUNT")},
    "FILL": {("TS", "S"): "TS", ("A", "S"): "A", ("A", "TS"): "A"},
    "METRIC_COUNT": {("A",): "S"}, "REMOVE_EMPTY": {("A",): "A"}, "FIRST": {("A",): "TS"}, "LAST": {("A",): "TS"},
    "TIME_SERIES": {("S",): "TS"}, "PERIOD": {("TS",): "S"},
}
# Arithmetic, the page's cell read as pairs in either order: (S, S), (S, TS), (TS, TS), (S, TS[]), (TS, TS[])
# (its examples 100/[m1, m2], AVG([m1,m2]/m3), METRICS()*100); never two arrays. Comparison and logical
# operators: two series or two numbers, and a series with a number (the page's `metric1 >= 30`).
_ARITHMETIC = {frozenset({"S"}), frozenset({"TS"}), frozenset({"TS", "S"}), frozenset({"A", "TS"}),
               frozenset({"A", "S"})}
_COMPARISON = {frozenset({"S"}), frozenset({"TS"}), frozenset({"TS", "S"})}
# IF(condition, trueValue[, falseValue]): the page's list of valid syntaxes, each giving a single series.
_IF_FORMS = {("TS", "S"), ("TS", "TS"), ("TS", "S", "S"), ("TS", "S", "TS"), ("TS", "TS", "S"),
             ("TS", "TS", "TS"), ("S", "TS"), ("S", "TS", "TS")}


class Metric(str):
    """The type of a metric's id (a widget's metric line, an alarm's MetricStat): TS, and valid in PERIOD()."""


class MetricSeries(dict):
    """A metric's series ({timestamp: value}) and the period it was requested with."""

    def __init__(self, values: dict, period: int):
        super().__init__(values)
        self.period = period


def _base(kind) -> str:
    return "A" if isinstance(kind, tuple) else kind


def _text(kind) -> str:
    return "TS[]" if isinstance(kind, tuple) else kind


def _pair(operator: str, left, right, table):
    if frozenset({_base(left), _base(right)}) not in table:
        raise Undocumented(f"{operator} of {_text(left)} and {_text(right)} is not a form the user guide lists")
    arrays = [k for k in (left, right) if isinstance(k, tuple)]
    return arrays[0] if arrays else "TS" if "TS" in (left, right) else "S"


def kind(node: ast.AST, kinds: dict) -> object:
    """The type of an expression (S, TS, or ("TS[]", the query it derives from)); raises Undocumented."""
    if isinstance(node, ast.Expression):
        return kind(node.body, kinds)
    if isinstance(node, ast.Constant):
        return "S"
    if isinstance(node, ast.Name):
        return kinds[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return kind(node.operand, kinds)
    if isinstance(node, ast.BinOp):
        return _pair(type(node.op).__name__, kind(node.left, kinds), kind(node.right, kinds), _ARITHMETIC)
    if isinstance(node, ast.Compare):
        (operator,), (right,) = node.ops, node.comparators
        return _pair(type(operator).__name__, kind(node.left, kinds), kind(right, kinds), _COMPARISON)
    if isinstance(node, ast.BoolOp):
        result = kind(node.values[0], kinds)
        for value in node.values[1:]:
            result = _pair(type(node.op).__name__, result, kind(value, kinds), _COMPARISON)
        return result
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        arguments = tuple(_base(kind(a, kinds)) for a in node.args)
        name = node.func.id
        if name == "PERIOD" and not (len(node.args) == 1 and isinstance(node.args[0], ast.Name)
                                     and isinstance(kinds.get(node.args[0].id), Metric)):
            raise Undocumented("PERIOD takes a metric, not the result of an expression (a Metrics Insights query is "
                               "one)")
        if name == "IF":
            if arguments not in _IF_FORMS:
                raise Undocumented(f"IF({', '.join('TS[]' if a == 'A' else a for a in arguments)}) is not a form "
                                   f"the user guide lists")
            return "TS"
        signature = _SIGNATURES.get(name)
        if signature is None or arguments not in signature:
            raise Undocumented(f"{name}({', '.join('TS[]' if a == 'A' else a for a in arguments)}) is not a form "
                               f"the user guide lists")
        result = signature[arguments]
        if result == "A":  # an elementwise function keeps its array's series
            return next(kind(a, kinds) for a in node.args if _base(kind(a, kinds)) == "A")
        return result
    raise Undocumented(f"metric math not understood: {ast.dump(node)}")


def _checked(expression: str, kinds: dict) -> ast.Expression:
    """The expression parsed, after checking every argument type; a final result must be a series. An alarm
    judged at every minute asks the same of each expression: each is parsed and checked once per ids' types (the
    tree is read, never changed; a refusal is raised again each time)."""
    return _checked_once(expression, tuple((k, type(v).__name__, v) for k, v in sorted(kinds.items())))


@functools.lru_cache(maxsize=4096)
def _checked_once(expression: str, kinds: tuple) -> ast.Expression:
    python = re.sub(r"\bAND\b|&&", " and ", re.sub(r"\bOR\b|\|\|", " or ", expression))
    tree = ast.parse(python, mode="eval")
    if kind(tree, {k: v for k, _, v in kinds}) == "S":  # a Metric id and a "TS" one are told apart by type
        raise Undocumented(f"{expression} is a number; a math expression's result must be a time series")
    return tree


def _kinds(env: dict) -> dict:
    """Ids' types read from their values: a number S, a lone series TS, an array of series TS[]."""
    return {name: "S" if isinstance(value, (int, float)) else
            "TS" if not isinstance(value, dict) or set(value) == {()} or all(
                isinstance(k, int) for k in value) else ("TS[]", name) for name, value in env.items()}


def _math(node: ast.AST, env: dict[str, Result]):
    """A widget's metric math over Metrics Insights results (arrays of series) and numbers."""
    if isinstance(node, ast.Expression):
        return _math(node.body, env)
    if (value := _atom(node, env)) is not None:
        return value
    if isinstance(node, ast.BinOp):
        operator = _OPERATORS[type(node.op)]
        return _per_series(lambda a, b: _binary(operator, a, b), _math(node.left, env), _math(node.right, env))
    if isinstance(node, ast.Compare):
        (operator,), (right,) = node.ops, node.comparators
        return _per_series(lambda a, b: _binary(_OPERATORS[type(operator)], a, b), _math(node.left, env),
                           _math(right, env))
    if isinstance(node, ast.BoolOp):
        values = [_math(v, env) for v in node.values]
        result = values[0]
        for value in values[1:]:
            result = _per_series(lambda a, b: _binary(_OPERATORS[type(node.op)], a, b), result, value)
        return result
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "IF":
        return _per_series(_if, *(_math(argument, env) for argument in node.args))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "FILL":
        series, value = (_math(a, env) for a in node.args)
        return _per_series(_fill, series, value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "PERIOD":
        (argument,) = node.args
        return float(env[argument.id][()].period)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _POINTWISE:
        (argument,) = node.args
        return _per_series(lambda a: _pointwise(_POINTWISE[node.func.id], a), _math(argument, env))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _per_series(lambda a: _pointwise(lambda v: -v, a), _math(node.operand, env))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "METRIC_COUNT":
        (argument,) = node.args  # "the number of metrics in the time series array": the series the query returned
        return float(len(_math(argument, env)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
        (argument,) = node.args
        array = _math(argument, env)
        times = sorted({t for s in array.values() for t in s})
        if node.func.id == "AVG":  # a missing value is 0: the mean over every series of the array
            return {(): {t: sum(s.get(t, 0.0) for s in array.values()) / len(array) for t in times}}
        return {(): {t: FUNCTIONS[node.func.id]([s[t] for s in array.values() if t in s]) for t in times}}
    raise AssertionError(f"metric math not understood: {ast.dump(node)}")


def math(expression: str, env: dict[str, Result], kinds: dict | None = None) -> Result | float:
    """A widget's metric-math expression over ids bound to arrays of series ({group key: series}); `kinds`
    gives each id's type (read from the values when omitted: {(): series} is one series)."""
    return _math(_checked(expression, kinds if kinds is not None else _kinds(env)), env)


def widget_range(properties: dict, start: float, end: float) -> tuple[float, int]:
    """(start, period) a metric widget reads when the dashboard shows [start, end): a widget's own relative
    `start` (-PT5M) ends now, whatever the dashboard's range; setPeriodToTimeRange makes the range one period."""
    own = re.fullmatch(r"-PT(\d+)([MS])", properties.get("start", ""))
    if own:
        start = end - int(own[1]) * (60 if own[2] == "M" else 1)
    return start, int(end - start) if properties.get("setPeriodToTimeRange") else properties["period"]


LIVE_DATA_SECONDS = 60  # live data off: a period is shown once it ended at least a minute ago
# A Metrics Insights query in a widget reads the latest two weeks of data only (user guide, "Metrics Insights
# quotas": "Query up to two weeks of data for visualization in your metrics, widgets, and alarm graphs"; its
# troubleshooting page: graphed over a longer range, the oldest point holds only the data within the two weeks).
# A metric line (MetricStat) reads CloudWatch's whole retention.
INSIGHTS_HORIZON_SECONDS = 14 * 86400


def widget(properties: dict, datapoints: list[Datapoint], start: float, end: float,
           period: int | None = None, now: float | None = None) -> dict[str, Series]:
    """The visible lines of a metric widget: {label with dynamic labels resolved: series}. `period`: the period
    the console requests instead of the widget's (its period selector, its automatic period). `now`: when the
    console draws the widget (None: a minute or more after `end`, so every period of the range has ended). The
    user guide ("Use live data", cloudwatch-live-data.html): with live data off, the default, only data points
    whose aggregation period ended at least one minute in the past are shown (a 5-minute period from 12:35 is
    shown at 12:41); with `liveData` on, the latest one is shown while its period is still filling. A widget
    whose one period is its range (setPeriodToTimeRange) is drawn as it is."""
    start, own_period = widget_range(properties, start, end)
    horizon = (end if now is None else now) - INSIGHTS_HORIZON_SECONDS
    lines = _widget_lines(properties, datapoints, start, end, period or own_period, horizon)
    if now is None or properties.get("liveData") or properties.get("setPeriodToTimeRange"):
        return lines
    step = period or own_period
    return {label: {t: v for t, v in series.items() if t + step <= now - LIVE_DATA_SECONDS}
            for label, series in lines.items()}


def _widget_lines(properties: dict, datapoints: list[Datapoint], start: float, end: float,
                  period: int, horizon: float | None = None) -> dict[str, Series]:
    """`horizon`: the oldest time a Metrics Insights query reads (INSIGHTS_HORIZON_SECONDS before now)."""
    recent = datapoints if horizon is None or horizon <= start else \
        [point for point in datapoints if point.timestamp >= horizon]
    env: dict[str, Result] = {}
    kinds: dict = {}
    shown: list[tuple[str, str]] = []
    for line in properties["metrics"]:
        options = line[-1]
        if "expression" not in options:  # a metric line: namespace, name, dimension name / value pairs
            namespace, metric, *pairs = line[:-1]
            stat = {"Metric": {"Namespace": namespace, "MetricName": metric,
                               "Dimensions": [{"Name": n, "Value": v} for n, v in zip(pairs[::2], pairs[1::2])]},
                    "Period": period, "Stat": options.get("stat", properties.get("stat", "Average"))}
            env[options["id"]] = {(): MetricSeries(_metric_stat(stat, datapoints, start, end), period)}
            kinds[options["id"]] = Metric("TS")
            if options.get("visible", True):
                shown.append((options["id"], options.get("label", "")))
            continue
        expression = options["expression"]
        if expression.lstrip().upper().startswith("SELECT"):
            env[options["id"]] = metrics_insights(expression, recent, start, end, period)
            kinds[options["id"]] = ("TS[]", options["id"]) if parse(expression).group else "TS"
        else:
            tree = _checked(expression, kinds)
            kinds[options["id"]] = kind(tree, kinds)
            env[options["id"]] = _math(tree, env)
        if options.get("visible", True):
            shown.append((options["id"], options.get("label", "")))
    lines: dict[str, Series] = {}
    for identifier, label in shown:
        for key, series in env[identifier].items():
            dims = dict(key)
            text = re.sub(r"\$\{PROP\('Dim\.([^']+)'\)\}", lambda m: dims.get(m[1], "?"), label)
            assert text not in lines, f"two lines labelled {text!r}"
            lines[text] = series
    return lines


_OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.Div: lambda a, b: a / b if b else None, ast.Gt: lambda a, b: float(a > b),
              ast.GtE: lambda a, b: float(a >= b), ast.Lt: lambda a, b: float(a < b),
              ast.LtE: lambda a, b: float(a <= b), ast.Eq: lambda a, b: float(a == b),
              ast.NotEq: lambda a, b: float(a != b),
              ast.And: lambda a, b: float(bool(a) and bool(b)), ast.Or: lambda a, b: float(bool(a) or bool(b))}


# What metric math makes of a series with no data point in the whole range (a metric nothing published then),
# which the user guide does not say ("Using math expressions with CloudWatch metrics" says how a missing value of a
# series that has data points is read; FILL "fills the missing values of a time series"; neither says whether an
# empty series is a series of missing values or no series): ABSENT_SERIES "zero" reads it as a series of missing
# values, 0 at the other operand's timestamps, as a missing value is read; "empty" makes any arithmetic or comparison
# with it empty. FILL_FROM_NOTHING: whether FILL gives an empty series the value at every period of the range. The
# defaults are the reading the alarms were built on; tests/unit/test_data_missing_absent_series.py judges the
# data-missing alarm under all four.
ABSENT_SERIES = "zero"
FILL_FROM_NOTHING = False


def _binary(operator, left, right):
    """A number or a series ({timestamp: value}) from two operands, as metric math combines them."""
    if isinstance(left, dict) and isinstance(right, dict):  # two series: their timestamps, a missing value 0
        if ABSENT_SERIES == "empty" and not (left and right):
            return {}
        values = {t: operator(left.get(t, 0.0), right.get(t, 0.0)) for t in sorted(set(left) | set(right))}
    elif isinstance(left, dict):
        values = {t: operator(v, right) for t, v in left.items()}
    elif isinstance(right, dict):
        values = {t: operator(left, v) for t, v in right.items()}
    else:
        return operator(left, right)
    return {t: v for t, v in values.items() if v is not None}


_POINTWISE = {"FLOOR": math_module.floor, "CEIL": math_module.ceil, "ABS": abs}


def _pointwise(function, value):
    """A function of each data point of a series (a number: of the number), creating none."""
    return {t: float(function(v)) for t, v in value.items()} if isinstance(value, dict) else float(function(value))


def _if(condition, true, false=None):
    """IF(condition, trueValue[, falseValue]) of numbers and single series, as the user guide's IF tables give it."""
    if not isinstance(condition, dict):  # IF(scalar, ...)
        chosen = true if condition else false
        return chosen if chosen is not None else {}
    result = {}
    for t, value in condition.items():
        if value:
            result[t] = true.get(t, 0.0) if isinstance(true, dict) else true
        elif isinstance(false, dict):
            if t in false:
                result[t] = false[t]
        elif false is not None:
            result[t] = false
    return result


def _series_math(node: ast.AST, env: dict[str, Series]):
    if (value := _atom(node, env)) is not None:
        return value
    if isinstance(node, ast.BinOp):
        return _binary(_OPERATORS[type(node.op)], _series_math(node.left, env), _series_math(node.right, env))
    if isinstance(node, ast.Compare):
        (operator,), (right,) = node.ops, node.comparators
        return _binary(_OPERATORS[type(operator)], _series_math(node.left, env), _series_math(right, env))
    if isinstance(node, ast.BoolOp):
        values = [_series_math(v, env) for v in node.values]
        result = values[0]
        for value in values[1:]:
            result = _binary(_OPERATORS[type(node.op)], result, value)
        return result
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "IF":
        return _if(*(_series_math(a, env) for a in node.args))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _POINTWISE:
        (argument,) = node.args
        return _pointwise(_POINTWISE[node.func.id], _series_math(argument, env))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "FILL":
        series, value = (_series_math(a, env) for a in node.args)
        return _fill(series, value)
    raise AssertionError(f"metric math not understood: {ast.dump(node)}")


_GRID: list[list[int]] = []  # the period starts of the range an alarm's expressions are evaluated over (innermost last)


def _fill(series: dict, value: float) -> dict:
    """FILL(series, number): the user guide's "Fills the missing values of a time series" ("FILL replaces that
    missing data point with the requested value", of the latest period too), over the periods of the queried range.
    A series with no data point in the range is left empty (whether FILL makes one from nothing is not written:
    FILL_FROM_NOTHING)."""
    assert isinstance(value, float) and _GRID, "FILL with a number, inside an alarm's range, is what is modelled"
    return {t: series.get(t, value) for t in _GRID[-1]} if series or FILL_FROM_NOTHING else {}


def alarm_math(expression: str, env: dict[str, Series]) -> Series | float:
    """An alarm's metric-math expression over ids bound to single series ({timestamp: value}) and numbers."""
    return _series_math(_checked(expression, _kinds(env)).body, env)


def _alarm_expression(text: str, env: dict[str, Series]) -> Series:
    result = alarm_math(text, env)
    assert isinstance(result, dict), f"{text} is not a time series"
    return result


def _metric_stat(stat: dict, datapoints: list[Datapoint], start: float, end: float) -> Series:
    """One metric's statistic per period: the metric with exactly these dimensions."""
    metric, period = stat["Metric"], stat["Period"]
    statistic = {"Average": "AVG", "Sum": "SUM", "Maximum": "MAX", "Minimum": "MIN", "SampleCount": "COUNT"}
    wanted = {(d["Name"], d["Value"]) for d in metric.get("Dimensions", [])}
    name, namespace = metric["MetricName"], metric["Namespace"]
    exact: dict[tuple, bool] = {}  # a point's dimensions -> whether they are exactly these (once per set)
    values: dict[int, list[float]] = {}
    phase = _whole_periods(start, end, period) if isinstance(datapoints, list) else None
    if phase is not None:  # the range's periods, cut once per list, metric and grid (an alarm judged at every minute)
        tag = ("stat periods", name, namespace, frozenset(wanted), stat["Stat"])
        found = _period_buckets(_indexed(datapoints)[3], tag, period, phase, lambda: (
            (point.timestamp, position, (), point.value) for position, point in enumerate(_of_dimensions(
                datapoints, name, namespace, frozenset(wanted), -math_module.inf, math_module.inf))),
            FUNCTIONS[statistic[stat["Stat"]]]).get((), ([], [], [], [], True))
        starts, aggregated = found[0], found[2]
        return {starts[k]: aggregated[k] for k in _in_list_order(
            found, bisect.bisect_left(starts, start), bisect.bisect_left(starts, end))}
    if isinstance(datapoints, list):
        for point in _of_dimensions(datapoints, name, namespace, frozenset(wanted), start, end):
            values.setdefault(int(start + (point.timestamp - start) // period * period), []).append(point.value)
        return {t: FUNCTIONS[statistic[stat["Stat"]]](v) for t, v in values.items()}
    for point in _of_metric(datapoints, name, start, end):
        if point.metric == name and point.namespace == namespace and start <= point.timestamp < end:
            dimensions = point.dimensions
            same = exact[dimensions] if dimensions in exact else exact.setdefault(dimensions, set(dimensions) == wanted)
            if same:
                values.setdefault(int(start + (point.timestamp - start) // period * period), []).append(point.value)
    return {t: FUNCTIONS[statistic[stat["Stat"]]](v) for t, v in values.items()}


def _of_dimensions(datapoints: list[Datapoint], metric: str, namespace: str, wanted: frozenset, start: float,
                   end: float) -> list[Datapoint]:
    """The datapoints of the list of `metric` in `namespace` with exactly the dimensions `wanted` (as a set) whose
    timestamp is in [start, end), in the list's order: the points filtering every point of the metric gives, found
    in the metric's points grouped once per list by namespace and dimension set (a fleet's per-GPU alarm read every
    GPU's points at every judged minute), then by bisection in each group's time order."""
    _, _, index, orders = _indexed(datapoints)
    grouped = orders.get((metric,))  # (a tuple key: the time orders are kept by metric name)
    if grouped is None:
        grouped = orders[(metric,)] = {}
        for point in index.get(metric, []):
            grouped.setdefault((point.namespace, frozenset(point.dimensions)), []).append(point)
    points = grouped.get((namespace, wanted), [])
    if len(points) < 64:
        return [point for point in points if start <= point.timestamp < end]
    order = orders.get((metric, namespace, wanted))
    if order is None:
        positions = sorted(range(len(points)), key=lambda i: points[i].timestamp)
        order = orders[(metric, namespace, wanted)] = ([points[i].timestamp for i in positions], positions)
    times, positions = order
    return [points[i] for i in sorted(positions[bisect.bisect_left(times, start):bisect.bisect_left(times, end)])]


def _metric_math_alarm(request: dict, datapoints: list[Datapoint], end: float, stat=None,
                       periods: int | None = None) -> tuple[int, Result]:
    """(period, result) of an alarm whose Metrics hold static metrics and one expression over them, over the last
    `periods` periods (EvaluationPeriods unless given); `stat` (MetricStat, start, end) -> Series reads a metric
    elsewhere (e.g. GetMetricData), instead of `datapoints`."""
    queries = request["Metrics"]
    period = next(q["MetricStat"]["Period"] for q in queries if "MetricStat" in q)
    start = end - (periods or request["EvaluationPeriods"]) * period
    if any(_is_query(q.get("Expression", "")) for q in queries):
        return period, _mixed_alarm(queries, datapoints, start, end, stat)
    env: dict[str, Series] = {}
    for query in queries:
        if "MetricStat" in query:
            env[query["Id"]] = (stat or (lambda s, a, b: _metric_stat(s, datapoints, a, b)))(query["MetricStat"], start,
                                                                                              end)
        else:
            env[query["Id"]] = _alarm_expression(query["Expression"], env)
    (returned,) = [q for q in queries if q.get("ReturnData", True)]
    series = env[returned["Id"]]
    return period, ({(): series} if series else {})


def _is_query(expression: str) -> bool:
    return expression.lstrip().upper().startswith("SELECT")


def _mixed_alarm(queries: list[dict], datapoints: list[Datapoint], start: float, end: float, stat=None) -> Result:
    """An alarm's Metrics holding a Metrics Insights query with metrics and expressions: the query is the input of
    metric math ("Use Metrics Insights queries with metric math": with GROUP BY an array of time series, without
    one a single series; an alarm's GROUP BY query must be wrapped in math that returns one series), requested
    with its own Period; every expression is type-checked as in a widget. The returned expression must be one
    series."""
    env: dict[str, Result] = {}
    kinds: dict = {}
    for query in queries:
        identifier = query["Id"]
        if "MetricStat" in query:
            series = (stat or (lambda s, a, b: _metric_stat(s, datapoints, a, b)))(query["MetricStat"], start, end)
            env[identifier], kinds[identifier] = {(): series}, Metric("TS")
        elif _is_query(query["Expression"]):
            parsed = parse(query["Expression"])
            result = metrics_insights(query["Expression"], datapoints, start, end, query["Period"])
            env[identifier] = result if parsed.group else {(): result.get((), {})}
            kinds[identifier] = ("TS[]", identifier) if parsed.group else "TS"
        else:
            tree = _checked(query["Expression"], kinds)
            kinds[identifier] = kind(tree, kinds)
            value = _math(tree, env)
            env[identifier] = value if isinstance(value, dict) else {(): {}}
    (returned,) = [q for q in queries if q.get("ReturnData", True)]
    assert kinds[returned["Id"]] == "TS", f"{returned['Expression']} is not a single time series"
    series = env[returned["Id"]].get((), {})
    return {(): series} if series else {}


COMPARE = {"GreaterThanThreshold": lambda v, t: v > t, "GreaterThanOrEqualToThreshold": lambda v, t: v >= t,
           "LessThanThreshold": lambda v, t: v < t, "LessThanOrEqualToThreshold": lambda v, t: v <= t}


EXTRA_PERIODS = 5  # the evaluation range is judged at every length from one period more than EvaluationPeriods to this many more
# The user guide's example range: 5 periods for 3 evaluation periods of 5 minutes (both tables of "How alarm state is
# evaluated when data is missing" hold at 5; 5 of their rows read otherwise at 4). Its only published length.
EXAMPLE_EXTRA_PERIODS = 2


# "Only the latest 3 hours of data can be used for evaluating the alarm's conditions" (user guide, alarm-limits.html,
# "Limits that apply to alarms based on Metrics Insights queries"): a Metrics Insights alarm's evaluation range holds
# no period that starts more than 3 hours back, whatever length it would otherwise have.
INSIGHTS_ALARM_SECONDS = 3 * 3600


def range_lengths(request: dict, evaluation_range: int | None = None) -> list[int]:
    """The evaluation range's plausible lengths in periods (every one `alarm` judges): from EvaluationPeriods + 1 to
    EvaluationPeriods + EXTRA_PERIODS (or `evaluation_range` alone), cut at the 3 hours an alarm on a Metrics Insights
    query reads (never fewer than its EvaluationPeriods, which generate keeps within them)."""
    periods = request["EvaluationPeriods"]
    lengths = [evaluation_range] if evaluation_range else list(range(periods + 1, periods + EXTRA_PERIODS + 1))
    queries = [m for m in request.get("Metrics", []) if _is_query(m.get("Expression", ""))]
    if queries:
        readable = max(INSIGHTS_ALARM_SECONDS // queries[0]["Period"], periods)
        lengths = sorted({min(length, readable) for length in lengths})
    return lengths


def example_range(request: dict) -> int:
    """The evaluation range's length, in periods, as the user guide's example has it for `request`'s
    EvaluationPeriods (N + EXAMPLE_EXTRA_PERIODS): for tests that judge a state the range's length decides."""
    return request["EvaluationPeriods"] + EXAMPLE_EXTRA_PERIODS


class RangeDependent(AssertionError):
    """An alarm whose state depends on the evaluation range's length, which CloudWatch does not publish."""


def judge(values: list, needed: int, periods: int, missing: str, breaches) -> str:
    """The state of one series from its evaluation range, oldest first (None for a period without a data point), as
    the user guide's "How alarm state is evaluated when data is missing" says (see the module's docstring)."""
    real = [v for v in values if v is not None]
    if len(real) >= periods:  # the most recent real data points; TreatMissingData is not used
        return "ALARM" if sum(map(breaches, real[-periods:])) >= needed else "OK"
    if missing == "ignore":
        raise AssertionError("TreatMissingData ignore keeps the state the alarm had: not a stateless evaluation")
    if not real:
        return {"missing": "INSUFFICIENT_DATA", "breaching": "ALARM" if periods >= needed else "OK",
                "notBreaching": "OK"}[missing]
    breaching = sum(map(breaches, real)) + (periods - len(real) if missing == "breaching" else 0)
    if breaching >= needed:
        return "ALARM"
    if missing == "missing" and len(real) < needed:  # premature alarm state
        recent = values[-periods:]
        flagged = [i for i, v in enumerate(recent) if v is not None and breaches(v)]
        if flagged and len(recent) - flagged[0] >= needed and all(
                v is None or breaches(v) for v in recent[flagged[0] + 1:]):
            return "ALARM"
    return "OK"


# "Alarms evaluating multiple time series will limit the number of contributors in ALARM to 100": with 150 series
# evaluated and 95 in ALARM the StateReason is "95 out of 150 time series evaluated to ALARM", with 105 "100+ time
# series evaluated to ALARM"; "if the volume of attributes is too large, the number of contributors in ALARM can be
# limited to less than 100" (user guide, alarm-limits.html, "Limits that apply to alarms based on Metrics Insights
# queries"). Which 100 are reported past 100 is not documented.
CONTRIBUTORS_REPORTED = 100


class ContributorsCapped(AssertionError):
    """More contributors of a GROUP BY alarm in ALARM than CloudWatch reports (CONTRIBUTORS_REPORTED): the alarm is in
    ALARM, but which of them it names is not documented."""


def alarm(request: dict, datapoints: list[Datapoint], end: float, stat=None,
          evaluation_range: int | None = None, evaluated: bool = False) -> dict[tuple, str]:
    """{contributor (group key; () for a single series): ALARM / OK / INSUFFICIENT_DATA} at `end`; `stat`: see
    _metric_math_alarm. `evaluation_range`: the range's length in periods; None judges every length from
    EvaluationPeriods + 1 ("a higher number of data points") to EvaluationPeriods + EXTRA_PERIODS and raises
    RangeDependent where they differ. Past CONTRIBUTORS_REPORTED contributors in ALARM CloudWatch names only some of
    them (which, it does not say): ContributorsCapped is raised, unless `evaluated` asks for every series the alarm
    evaluates (its state: ALARM, state_reason "100+ ...") knowing that the names past 100 are not all reported."""
    states = {}
    for key, judged in alarm_ranges(request, datapoints, end, stat, evaluation_range).items():
        if len(set(judged.values())) > 1:
            raise RangeDependent(f"{request.get('AlarmName', '')} {dict(key)} at {end}: the state depends on the "
                                 f"evaluation range's length (periods: state): {judged}")
        (states[key],) = set(judged.values())
    if not evaluated and sum(1 for key, state in states.items() if key and state == "ALARM") > CONTRIBUTORS_REPORTED:
        raise ContributorsCapped(f"{request.get('AlarmName', '')} at {end}: {state_reason(states)}; CloudWatch names "
                                 f"at most {CONTRIBUTORS_REPORTED} of them, which ones it does not say")
    return states


def state_reason(states: dict[tuple, str]) -> str:
    """A GROUP BY alarm's StateReason of its contributors' states, as alarm-limits.html words it."""
    alarming = sum(1 for key, state in states.items() if key and state == "ALARM")
    if alarming > CONTRIBUTORS_REPORTED:
        return f"{CONTRIBUTORS_REPORTED}+ time series evaluated to ALARM"
    return f"{alarming} out of {sum(1 for key in states if key)} time series evaluated to ALARM"


def alarm_state(states: dict[tuple, str]) -> str:
    """The alarm's own state from its contributors': ALARM when any contributor is."""
    values = set(states.values())
    return "ALARM" if "ALARM" in values else "OK" if "OK" in values else "INSUFFICIENT_DATA"


def fired_at(request: dict, datapoints: list[Datapoint], ends, dimension: str,
             evaluated: bool = False, evaluation_range: int | None = None) -> dict[str, set[float]]:
    """{the `dimension` of each contributor in ALARM: the `ends` at which it is} (`alarm` judged at each end, over
    `evaluation_range`)."""
    fired: dict[str, set[float]] = {}
    for end in ends:
        for key, state in alarm(request, datapoints, end, evaluation_range=evaluation_range,
                                evaluated=evaluated).items():
            if state == "ALARM":
                fired.setdefault(dict(key)[dimension], set()).add(end)
    return fired


def alarm_ranges(request: dict, datapoints: list[Datapoint], end: float, stat=None,
                 evaluation_range: int | None = None) -> dict[tuple, dict[int, str]]:
    """{contributor: {the evaluation range's length in periods: state}} at `end` (see `alarm`)."""
    periods = request["EvaluationPeriods"]
    lengths = range_lengths(request, evaluation_range)
    widest = max(lengths)
    period, result = _alarm_series(request, datapoints, end, widest, stat)
    start = end - widest * period
    needed = request.get("DatapointsToAlarm", periods)
    missing = request.get("TreatMissingData", "missing")
    threshold, compare = request["Threshold"], COMPARE[request["ComparisonOperator"]]
    states = {}
    for key, series in (result or {(): {}}).items():
        values = [series.get(int(start + index * period)) for index in range(widest)]
        states[key] = {length: judge(values[widest - length:], needed, periods, missing,
                                     lambda v: compare(v, threshold)) for length in lengths}
    if len(result or {}) >= SERIES_RETURNED and "Metrics" in request \
            and not any("MetricStat" in m for m in request["Metrics"]):
        # Past 500 series the ones evaluated are those its ORDER BY ranks first over the queried window, whose length
        # is the range's (unpublished): a contributor in ALARM over one length but left out over another makes the
        # alarm's contributors depend on it (alarm raises RangeDependent). Seen: 505 GPUs at 95 C until 20 minutes
        # before, one at 88 C now (test_cloudwatch_group_alarms_over_500.py).
        shorter = {length: _alarm_series(request, datapoints, end, length, stat)[1] for length in lengths
                   if length != widest}
        for length, returned in shorter.items():
            for key in states:
                if key not in returned and states[key][length] == "ALARM":
                    states[key][length] = NOT_EVALUATED
        for key in {key for returned in shorter.values() for key in returned} - set(states):
            judged = {widest: NOT_EVALUATED}
            for length, returned in shorter.items():
                values = [returned[key].get(int(end - (length - index) * period)) for index in range(length)] \
                    if key in returned else None
                judged[length] = NOT_EVALUATED if values is None else \
                    judge(values, needed, periods, missing, lambda v: compare(v, threshold))
            if "ALARM" in judged.values():
                states[key] = {length: judged[length] for length in lengths}
    return states


SERIES_RETURNED = 500  # a Metrics Insights query returns at most 500 series (its LIMIT or fewer)
NOT_EVALUATED = "NOT_EVALUATED"  # a contributor left out of the 500 series evaluated over one range's length


def _alarm_series(request: dict, datapoints: list[Datapoint], end: float, periods: int, stat=None) -> tuple[int, Result]:
    """(period, {contributor: series}) of an alarm over the last `periods` periods before `end`."""
    if any("MetricStat" in m for m in request.get("Metrics", [])):
        period = next(q["MetricStat"]["Period"] for q in request["Metrics"] if "MetricStat" in q)
        _GRID.append([int(end - (periods - index) * period) for index in range(periods)])
        try:
            return _metric_math_alarm(request, datapoints, end, stat, periods)
        finally:
            _GRID.pop()
    if "Metrics" in request:
        (query,) = [m for m in request["Metrics"] if m.get("ReturnData", True)]
        period = query["Period"]
        return period, metrics_insights(query["Expression"], datapoints, end - periods * period, end, period)
    period = request["Period"]
    start = end - periods * period
    statistic = {"Average": "AVG", "Sum": "SUM", "Maximum": "MAX", "Minimum": "MIN", "SampleCount": "COUNT"}
    wanted = {(d["Name"], d["Value"]) for d in request["Dimensions"]}
    values: dict[int, list[float]] = {}
    for point in _of_metric(datapoints, request["MetricName"], start, end):
        if point.metric == request["MetricName"] and point.namespace == request["Namespace"] \
                and set(point.dimensions) == wanted and start <= point.timestamp < end:
            values.setdefault(int(start + (point.timestamp - start) // period * period), []).append(point.value)
    return period, ({(): {t: FUNCTIONS[statistic[request["Statistic"]]](v) for t, v in values.items()}}
                    if values else {})


def reads(*read: dict) -> frozenset[tuple[str, str, frozenset]]:
    """The datapoints alarms and widgets read, as (namespace, metric, dimension names) (each of `read`: an alarm's
    request or a metric widget's properties): a Metrics Insights query's SCHEMA, a metric's or MetricStat's dimensions;
    metric math reads only what those return. Every function here reads a datapoint only where its namespace, metric
    and exact dimension set are one of these, so the datapoints of the others (an agent model's `only`) change
    nothing it returns."""
    found = set()

    def query(expression: str) -> None:
        if _is_query(expression):
            parsed = parse(expression)
            found.add((parsed.namespace, parsed.metric, frozenset(parsed.schema)))

    for item in read:
        if "metrics" in item:  # a widget: metric lines (namespace, name, dimension name / value pairs) and expressions
            for line in item["metrics"]:
                if "expression" in line[-1]:
                    query(line[-1]["expression"])
                else:
                    found.add((line[0], line[1], frozenset(line[2:-1][::2])))
        elif "Metrics" in item:  # an alarm on MetricStats, expressions and a query
            for metric in item["Metrics"]:
                if "MetricStat" in metric:
                    stat = metric["MetricStat"]["Metric"]
                    found.add((stat["Namespace"], stat["MetricName"],
                               frozenset(d["Name"] for d in stat.get("Dimensions", []))))
                else:
                    query(metric["Expression"])
        else:  # an alarm on one metric
            found.add((item["Namespace"], item["MetricName"], frozenset(d["Name"] for d in item["Dimensions"])))
    return frozenset(found)

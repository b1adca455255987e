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
    The page lists IF's forms for single series; widgets apply it to a GROUP BY query's array of
    series (user guide, "Use Metrics Insights queries with metric math"), read here series by series;
  - an array of series with a single series or a number: each series of the array with it (TS[] TS);
  - AVG of an array: "Missing values are treated as 0", so it divides by every series of the array;
    SUM of an array adds the values there are (a missing value adds 0); MIN and MAX of an array take
    the values there are (the page says nothing of missing values for them).
* Alarms: a GROUP BY alarm evaluates each series (contributor); a datapoint breaches when it
  compares to the threshold as ComparisonOperator says; DatapointsToAlarm of the last
  EvaluationPeriods periods must breach; TreatMissingData decides for periods without data.

Written independently of gpudash's generator: it parses the generated text itself.
"""

from __future__ import annotations

import ast
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


_INDEX: dict[int, tuple[list, dict[str, list[Datapoint]]]] = {}


def _by_metric(datapoints: list[Datapoint]) -> dict[str, list[Datapoint]]:
    """Datapoints by metric name, built once per list (the list is kept so its id stays its own)."""
    cached = _INDEX.get(id(datapoints))
    if cached is None or cached[0] is not datapoints:
        index: dict[str, list[Datapoint]] = {}
        for point in datapoints:
            index.setdefault(point.metric, []).append(point)
        cached = _INDEX[id(datapoints)] = (datapoints, index)
    return cached[1]


def metrics_insights(text: str, datapoints: Iterable[Datapoint], start: float, end: float, period: int) -> Result:
    query = parse(text)
    buckets: dict[tuple, dict[int, list[float]]] = {}
    points = _by_metric(datapoints) if isinstance(datapoints, list) else {query.metric: list(datapoints)}
    for point in points.get(query.metric, []):
        dims = point.dims()
        if point.namespace != query.namespace or point.metric != query.metric or set(dims) != set(query.schema):
            continue
        if not start <= point.timestamp < end:
            continue
        if not all((dims.get(d) == v) == (op == "=") for d, op, v in query.where):
            continue
        key = tuple((g, dims[g]) for g in query.group)
        bucket = int(start + (point.timestamp - start) // period * period)
        buckets.setdefault(key, {}).setdefault(bucket, []).append(point.value)
    result = {key: {b: FUNCTIONS[query.function](values) for b, values in series.items()}
              for key, series in buckets.items()}
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
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
        (argument,) = node.args
        array = _math(argument, env)
        times = sorted({t for s in array.values() for t in s})
        if node.func.id == "AVG":  # a missing value is 0: the mean over every series of the array
            return {(): {t: sum(s.get(t, 0.0) for s in array.values()) / len(array) for t in times}}
        return {(): {t: FUNCTIONS[node.func.id]([s[t] for s in array.values() if t in s]) for t in times}}
    raise AssertionError(f"metric math not understood: {ast.dump(node)}")


def math(expression: str, env: dict[str, Result]) -> Result | float:
    """A widget's metric-math expression over ids bound to arrays of series ({group key: series})."""
    python = re.sub(r"\bAND\b|&&", " and ", re.sub(r"\bOR\b|\|\|", " or ", expression))
    return _math(ast.parse(python, mode="eval"), env)


def widget(properties: dict, datapoints: list[Datapoint], start: float, end: float) -> dict[str, Series]:
    """The visible lines of a metric widget: {label with dynamic labels resolved: series}."""
    period = int(end - start) if properties.get("setPeriodToTimeRange") else properties["period"]
    env: dict[str, Result] = {}
    shown: list[tuple[str, str]] = []
    for line in properties["metrics"]:
        options = line[-1]
        expression = options["expression"]
        if expression.lstrip().upper().startswith("SELECT"):
            env[options["id"]] = metrics_insights(expression, datapoints, start, end, period)
        else:
            env[options["id"]] = math(expression, env)
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


def _binary(operator, left, right):
    """A number or a series ({timestamp: value}) from two operands, as metric math combines them."""
    if isinstance(left, dict) and isinstance(right, dict):  # two series: their timestamps, a missing value 0
        values = {t: operator(left.get(t, 0.0), right.get(t, 0.0)) for t in sorted(set(left) | set(right))}
    elif isinstance(left, dict):
        values = {t: operator(v, right) for t, v in left.items()}
    elif isinstance(right, dict):
        values = {t: operator(left, v) for t, v in right.items()}
    else:
        return operator(left, right)
    return {t: v for t, v in values.items() if v is not None}


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
    raise AssertionError(f"metric math not understood: {ast.dump(node)}")


def alarm_math(expression: str, env: dict[str, Series]) -> Series | float:
    """An alarm's metric-math expression over ids bound to single series ({timestamp: value}) and numbers."""
    python = re.sub(r"\bAND\b|&&", " and ", re.sub(r"\bOR\b|\|\|", " or ", expression))
    return _series_math(ast.parse(python, mode="eval").body, env)


def _alarm_expression(text: str, env: dict[str, Series]) -> Series:
    result = alarm_math(text, env)
    assert isinstance(result, dict), f"{text} is not a time series"
    return result


def _metric_stat(stat: dict, datapoints: list[Datapoint], start: float, end: float) -> Series:
    """One metric's statistic per period: the metric with exactly these dimensions."""
    metric, period = stat["Metric"], stat["Period"]
    statistic = {"Average": "AVG", "Sum": "SUM", "Maximum": "MAX", "Minimum": "MIN", "SampleCount": "COUNT"}
    wanted = {(d["Name"], d["Value"]) for d in metric.get("Dimensions", [])}
    values: dict[int, list[float]] = {}
    for point in datapoints:
        if point.metric == metric["MetricName"] and point.namespace == metric["Namespace"] \
                and set(point.dimensions) == wanted and start <= point.timestamp < end:
            values.setdefault(int(start + (point.timestamp - start) // period * period), []).append(point.value)
    return {t: FUNCTIONS[statistic[stat["Stat"]]](v) for t, v in values.items()}


def _metric_math_alarm(request: dict, datapoints: list[Datapoint], end: float) -> tuple[int, Result]:
    """(period, result) of an alarm whose Metrics hold static metrics and one expression over them."""
    queries = request["Metrics"]
    period = next(q["MetricStat"]["Period"] for q in queries if "MetricStat" in q)
    start = end - request["EvaluationPeriods"] * period
    env: dict[str, Series] = {}
    for query in queries:
        if "MetricStat" in query:
            env[query["Id"]] = _metric_stat(query["MetricStat"], datapoints, start, end)
        else:
            env[query["Id"]] = _alarm_expression(query["Expression"], env)
    (returned,) = [q for q in queries if q.get("ReturnData", True)]
    series = env[returned["Id"]]
    return period, ({(): series} if series else {})


COMPARE = {"GreaterThanThreshold": lambda v, t: v > t, "GreaterThanOrEqualToThreshold": lambda v, t: v >= t,
           "LessThanThreshold": lambda v, t: v < t, "LessThanOrEqualToThreshold": lambda v, t: v <= t}


def alarm(request: dict, datapoints: list[Datapoint], end: float) -> dict[tuple, str]:
    """{contributor (group key; () for a single series): ALARM / OK / INSUFFICIENT_DATA} at `end`."""
    periods = request["EvaluationPeriods"]
    needed = request.get("DatapointsToAlarm", periods)
    if any("MetricStat" in m for m in request.get("Metrics", [])):
        period, result = _metric_math_alarm(request, datapoints, end)
        start = end - periods * period
    elif "Metrics" in request:
        (query,) = [m for m in request["Metrics"] if m.get("ReturnData", True)]
        period = query["Period"]
        start = end - periods * period
        result = metrics_insights(query["Expression"], datapoints, start, end, period)
    else:
        period = request["Period"]
        start = end - periods * period
        statistic = {"Average": "AVG", "Sum": "SUM", "Maximum": "MAX", "Minimum": "MIN", "SampleCount": "COUNT"}
        wanted = {(d["Name"], d["Value"]) for d in request["Dimensions"]}
        values: dict[int, list[float]] = {}
        for point in datapoints:
            if point.metric == request["MetricName"] and set(point.dimensions) == wanted \
                    and start <= point.timestamp < end:
                values.setdefault(int(start + (point.timestamp - start) // period * period), []).append(point.value)
        result = {(): {t: FUNCTIONS[statistic[request["Statistic"]]](v) for t, v in values.items()}} if values else {}
    missing = request.get("TreatMissingData", "missing")
    if not result:
        result = {(): {}}
    states = {}
    for key, series in result.items():
        breaching = 0
        for index in range(periods):
            t = int(start + index * period)
            if t in series:
                breaching += COMPARE[request["ComparisonOperator"]](series[t], request["Threshold"])
            elif missing == "breaching":
                breaching += 1
        if breaching >= needed:
            states[key] = "ALARM"
        elif not any(series) and missing == "missing":
            states[key] = "INSUFFICIENT_DATA"
        else:
            states[key] = "OK"
    return states

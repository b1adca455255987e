"""gpudash's own CloudWatch validator: local test servers accept any body, so this checks it.

Schemas (schemas/cloudwatch-*.schema.json) cover shapes; the rules here cover the
limits and cross-field facts a schema cannot express.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any, Callable, Iterable, Iterator

from ..artifacts import AlarmRequest, CloudWatchDashboard
from ..blanks import UNREAD_AT_ZERO
from ..catalog import MIG_UNSUPPORTED, PER_PROCESS_FIELDS
from ..cloudwatch_query import (ALARM_WINDOW_SECONDS, COPY_CHANGE, DASHBOARD_NAME, ONE_SERIES_CHANGE, SERIES_PER_QUERY,
                                UNUSED_SHARE, OTEL_GAP_EITHER, dimension_sets, gap_said, is_query, level_of,
                                evaluation_limit, node_total, otel_gap, pod_dimensions,
                                pod_total_kind)
from ..data_missing import KSM_METRICS
from ..dashboard_limit import METRICS_PER_DASHBOARD, METRICS_PER_WIDGET, metrics_shown, widget_metrics
from ..markers import ALARM_OWNER_TAG, ALARM_OWNER_TEXT, CLUSTER_DIMENSION
from ..render.alarms import METRICS_INSIGHTS_ALARM_QUOTA, insights_alarm_counts, never_firing_fix, never_firing_unsaid
from ..output import ALARMS_FILE, BodyStrings, cloudwatch_dashboard_file, template_bytes, template_file
from ..resources import schema as schema_path
from . import Finding, Rule, schema_errors
from .subject import LintInput
from .metrics_insights import Parsed, QueryError, needs_quotes, parse
from .metric_math import ARRAY, SERIES, Kind, MathError, kind_of

SEARCH_MAX_CHARS = 1024
SEARCHES_PER_GRAPH = 100
CONTRIBUTORS_REPORTED = 100
ID = re.compile(r"^[a-z][a-zA-Z0-9_]*$")
_SEARCH = re.compile(r"SEARCH\(\s*'((?:[^']|'')*)'", re.I)


@cache
def _validator(name: str):
    import jsonschema

    return jsonschema.Draft202012Validator(json.loads(schema_path(name).read_text()))


def _bodies(subject: LintInput) -> Iterator[tuple[str, Any]]:
    for dashboard in sorted(subject.cloudwatch_dashboards, key=lambda d: d.name):
        yield dashboard.name, dashboard.body


def _where(name: str, index: int | None = None) -> str:
    place = cloudwatch_dashboard_file(name)
    return place if index is None else f"{place} widget {index}"


def _metric_widgets(subject: LintInput) -> Iterator[tuple[str, int, dict[str, Any]]]:
    for name, body in _bodies(subject):
        if isinstance(body, dict):
            for index, widget in enumerate(body.get("widgets", [])):
                if isinstance(widget, dict) and widget.get("type") == "metric" \
                        and isinstance(widget.get("properties"), dict):
                    yield name, index, widget["properties"]


def _expressions(properties: dict[str, Any]) -> Iterator[str]:
    for line in properties.get("metrics", []):
        if isinstance(line, list) and line and isinstance(line[-1], dict) and "expression" in line[-1]:
            yield str(line[-1]["expression"])


def body_schema(subject: LintInput) -> Iterable[Finding]:
    for name, body in _bodies(subject):
        for path, message in schema_errors(_validator("cloudwatch-dashboard.schema.json"), body):
            yield Finding("CW001", "error", _where(name), f"{path or 'body'}: {message}")


def names(subject: LintInput) -> Iterable[Finding]:
    for name, _ in _bodies(subject):
        if not DASHBOARD_NAME.match(name):
            yield Finding("CW002", "error", _where(name),
                          "dashboard names are 1-255 characters of A-Z a-z 0-9 - _")


def metric_count(subject: LintInput) -> Iterable[Finding]:
    """A widget reads at most 500 metrics, counted as CW011 counts a dashboard's 2,500 (the quotas count alike
    "all metrics retrieved for use in metric math"): a metric line one, a GROUP BY query its LIMIT."""
    for name, index, properties in _metric_widgets(subject):
        total = widget_metrics(properties)
        if total > METRICS_PER_WIDGET:
            yield Finding("CW003", "error", _where(name, index),
                          f"up to {total} metrics (a GROUP BY query counts as its LIMIT, 500 without one): a widget "
                          f"reads at most {METRICS_PER_WIDGET}")


def _line_problem(line: Any) -> str | None:
    if not isinstance(line, list) or not line:
        return "a metric line must be a non-empty array"
    options = line[-1] if isinstance(line[-1], dict) else None
    values = line[:-1] if options is not None else line
    if options is not None and "expression" in options:
        if values:
            return "an expression line holds only its options object"
        if not options.get("id"):
            return "an expression needs an id"
        return None
    if any(not isinstance(v, str) for v in values):
        return "metric line values must be strings before the options object"
    if values and values[0] == "...":
        return None  # repeats the previous line's leading values
    if len(values) < 2 or len(values) % 2:
        return "expected [namespace, metric name, dimension name, value, ..., {options}]"
    return None


def metric_shape(subject: LintInput) -> Iterable[Finding]:
    for name, index, properties in _metric_widgets(subject):
        for number, line in enumerate(properties.get("metrics", [])):
            problem = _line_problem(line)
            if problem:
                yield Finding("CW004", "error", _where(name, index), f"metrics[{number}]: {problem}")


def searches(subject: LintInput) -> Iterable[Finding]:
    for name, index, properties in _metric_widgets(subject):
        found = [m.group(1) for e in _expressions(properties) for m in _SEARCH.finditer(e)]
        for text in found:
            if len(text) > SEARCH_MAX_CHARS:
                yield Finding("CW005", "error", _where(name, index),
                              f"a SEARCH expression is {len(text)} characters; the limit is {SEARCH_MAX_CHARS}")
        if len(found) > SEARCHES_PER_GRAPH:
            yield Finding("CW005", "error", _where(name, index),
                          f"{len(found)} SEARCH expressions; a graph allows {SEARCHES_PER_GRAPH}")


def ids(subject: LintInput) -> Iterable[Finding]:
    for name, index, properties in _metric_widgets(subject):
        seen: set[str] = set()
        for line in properties.get("metrics", []):
            if isinstance(line, list) and line and isinstance(line[-1], dict) and "id" in line[-1]:
                identifier = str(line[-1]["id"])
                if not ID.match(identifier):
                    yield Finding("CW006", "error", _where(name, index),
                                  f"id {identifier!r} must start with a lower-case letter, then letters, digits, _")
                if identifier in seen:
                    yield Finding("CW006", "error", _where(name, index), f"id {identifier!r} is used twice")
                seen.add(identifier)


def grid(subject: LintInput) -> Iterable[Finding]:
    for name, body in _bodies(subject):
        if not isinstance(body, dict):
            continue
        for index, widget in enumerate(body.get("widgets", [])):
            if isinstance(widget, dict) and isinstance(widget.get("x"), int) and isinstance(widget.get("width"), int) \
                    and widget["x"] + widget["width"] > 24:
                yield Finding("CW007", "error", _where(name, index), "the widget runs past the 24-column grid")


def _queries(subject: LintInput) -> Iterator[tuple[str, str]]:
    """(where, expression) of every Metrics Insights query in dashboards and alarms."""
    for name, index, properties in _metric_widgets(subject):
        for expression in _expressions(properties):
            if is_query(expression):
                yield _where(name, index), expression
    for item in subject.alarms:
        for query in item.request.get("Metrics", []):
            if is_query(str(query.get("Expression", ""))):
                yield _alarm_where(item), str(query["Expression"])


def _parsed(expression: str) -> Parsed | None:
    try:
        return parse(expression)
    except QueryError:
        return None


def declared_shape(subject: LintInput) -> Iterable[Finding]:
    """Metrics Insights queries read the declared namespace and one of the published dimension sets: the sets the
    settings make the agent publish (cloudwatch_query.dimension_sets) and those the built agent configs declare.

    With cloudwatch.source: container-insights, the add-on's namespace and the sets it publishes each
    metric with (container_insights_table, from the agent's source)."""
    from .. import container_insights
    from ..container_insights_table import NAMESPACE, published_sets

    if container_insights.enabled(subject.settings):
        namespace, publisher, by_metric = NAMESPACE, "the add-on", published_sets()
        agent_sets = None
    else:
        namespace, publisher, by_metric = subject.settings.cloudwatch.namespace, "the agent", {}
        agent_sets = [tuple(d) for d in dimension_sets(subject.settings)]
        # and the sets the built agent configs declare besides (render/agent.published decides them: the cluster's
        # for the data-missing alarm, the exporter targets' scrapes without DCGM samples per node for its second)
        agent_sets += sorted({tuple(dims) for agent in subject.artifacts.agents
                              for declaration in agent.publishing()["emf_processor"]["metric_declaration"]
                              for dims in declaration.get("dimensions") or []} - set(agent_sets))
    for where, expression in _queries(subject):
        query = _parsed(expression)
        if query is None:
            continue  # CW012 reports it
        if query.namespace != namespace or query.schema is None:
            yield Finding("CW008", "error", where, f'the query does not read SCHEMA("{namespace}", ...)')
            continue
        sets = agent_sets if agent_sets is not None else by_metric.get(query.metric)
        if sets is None:
            yield Finding("CW008", "error", where, f"{publisher} publishes no {query.metric}")
            continue
        if set(query.schema) not in [set(d) for d in sets]:
            detail = "" if agent_sets is not None else f" ({query.metric} has " + \
                "; ".join("[" + ", ".join(d) + "]" for d in sets) + ")"
            yield Finding("CW008", "error", where,
                          f"SCHEMA({', '.join(query.schema)}): {publisher} publishes no such dimension set{detail}")
        for dimension in query.group:
            if dimension not in query.schema:
                yield Finding("CW008", "error", where,
                              f"GROUP BY {dimension}: {publisher} does not publish that dimension with this set")
    if agent_sets is None:  # the add-on's metrics a metric-math alarm reads (the data-missing alarm)
        yield from _static_metrics_published(subject, namespace, by_metric)


def _static_metrics_published(subject: LintInput, namespace: str,
                              by_metric: dict[str, tuple[tuple[str, ...], ...]]) -> Iterable[Finding]:
    for item in subject.alarms:
        for query in item.request.get("Metrics", []):
            metric = query.get("MetricStat", {}).get("Metric") if isinstance(query, dict) else None
            if not isinstance(metric, dict):
                continue
            name, dims = metric.get("MetricName"), {d.get("Name") for d in metric.get("Dimensions", [])}
            if metric.get("Namespace") != namespace or name not in by_metric:
                yield Finding("CW008", "error", _alarm_where(item), f"the add-on publishes no {name} in {namespace}")
            elif dims not in [set(d) for d in by_metric[name]]:
                yield Finding("CW008", "error", _alarm_where(item),
                              f"{name} [{', '.join(sorted(dims))}]: the add-on publishes no such dimension set")


def one_query_per_widget(subject: LintInput) -> Iterable[Finding]:
    for name, index, properties in _metric_widgets(subject):
        count = sum(1 for e in _expressions(properties) if is_query(e))
        if count > 1:
            yield Finding("CW010", "error", _where(name, index),
                          f"{count} Metrics Insights queries: a widget may hold one")


def dashboard_metrics(subject: LintInput) -> Iterable[Finding]:
    """A dashboard shows at most 2,500 metrics; a GROUP BY query counts as its LIMIT (500 without one)."""
    totals = {name: metrics_shown(body) for name, body in _bodies(subject)}
    for name, total in sorted(totals.items()):
        if total > METRICS_PER_DASHBOARD:
            yield Finding("CW011", "error", _where(name),
                          f"up to {total:,} metrics: a dashboard shows at most {METRICS_PER_DASHBOARD:,} "
                          f"(lower cloudwatch.top_pods / top_gpus or split the dashboard)")


def quoting(subject: LintInput) -> Iterable[Finding]:
    """Queries parse; quotes in strings are backslash-escaped; reserved words and odd names are double-quoted."""
    for where, expression in _queries(subject):
        try:
            query = parse(expression)
        except QueryError as exc:
            yield Finding("CW012", "error", where, f"Metrics Insights query: {exc}")
            continue
        for name in query.unquoted:
            if needs_quotes(name):
                yield Finding("CW012", "error", where,
                              f"{name} must be double-quoted (a reserved keyword or a character beyond A-Z a-z 0-9 _)")


def gauge_bounds(subject: LintInput) -> Iterable[Finding]:
    for name, index, properties in _metric_widgets(subject):
        axis = properties.get("yAxis", {}).get("left", {}) if isinstance(properties.get("yAxis"), dict) else {}
        if properties.get("view") == "gauge" and ("min" not in axis or "max" not in axis):
            yield Finding("CW009", "error", _where(name, index), "a gauge needs yAxis.left min and max")


def _typed(entries: Iterable[tuple[str, str | None]], where: str) -> Iterator[Finding]:
    """CW014 findings of one widget's or alarm's entries, in order: (id, expression; None for a metric)."""
    _, problems = _kinds(entries)
    for identifier, problem in problems.items():
        yield Finding("CW014", "error", where, problem)


def _kinds(entries: Iterable[tuple[str, str | None]]) -> tuple[dict[str, Kind], dict[str, str]]:
    """The type of each entry that has one, and why each other expression has none."""
    ids: dict[str, Kind] = {}
    maths = []
    for identifier, expression in entries:
        if expression is None:
            ids[identifier] = Kind(SERIES, metric=True)
        elif is_query(expression):
            query = _parsed(expression)
            ids[identifier] = Kind(ARRAY, identifier) if query is not None and query.group else Kind(SERIES)
        else:
            maths.append((identifier, expression))
    problems: dict[str, str] = {}
    while maths:  # an expression may name one written after it: type those it names first
        left = []
        for identifier, expression in maths:
            try:
                ids[identifier] = kind_of(expression, ids)
            except MathError as exc:
                left.append((identifier, expression))
                problems[identifier] = str(exc)
        if len(left) == len(maths):
            break
        maths = left
    return ids, {identifier: f"{identifier} = {expression}: {problems[identifier]}" for identifier, expression in maths}


def _widget_entries(properties: dict[str, Any]) -> list[tuple[str, str | None, bool]]:
    """A widget's lines as (id, expression or None for a metric, shown)."""
    entries = []
    for position, line in enumerate(properties.get("metrics", [])):
        options = line[-1] if isinstance(line, list) and line and isinstance(line[-1], dict) else {}
        expression = str(options["expression"]) if "expression" in options else None
        shown = options.get("visible", True) is not False
        entries.append((str(options.get("id", f"m{position + 1}")), expression, shown))
    return entries


def math_types(subject: LintInput) -> Iterable[Finding]:
    """Every metric-math expression applies each function and operator only to the argument types the user
    guide lists for it (generator/lint/metric_math.py): CloudWatch may reject another form, or compute it
    otherwise than the title says."""
    for name, index, properties in _metric_widgets(subject):
        entries = [(identifier, expression) for identifier, expression, _ in _widget_entries(properties)]
        title = properties.get("title", "")
        yield from _typed(entries, f"{_where(name, index)} ({title})" if title else _where(name, index))
    for item in subject.alarms:
        queries = [m for m in item.request.get("Metrics", []) if isinstance(m, dict)]
        entries = [(str(m.get("Id")), None if "MetricStat" in m else str(m.get("Expression", ""))) for m in queries]
        yield from _typed(entries, _alarm_where(item))


# --- alarms -------------------------------------------------------------------------------

def _alarm_where(item: AlarmRequest) -> str:
    return f"{ALARMS_FILE} {item.request.get('AlarmName', '?')}"


def alarm_schema(subject: LintInput) -> Iterable[Finding]:
    """Each request validates against the alarm schema. A text AlarmDescription is measured as generate lays it out
    (render/alarm_text.length: UTF-16 units, an emoji counting 2), not by the schema's maxLength, which counts
    characters: a description generate would not write passes neither."""
    from ..render.alarm_text import DESCRIPTION_LIMIT, length

    for item in subject.alarms:
        request, description = item.request, item.request.get("AlarmDescription")
        if isinstance(description, str):
            request = {key: value for key, value in request.items() if key != "AlarmDescription"}
        for path, message in schema_errors(_validator("cloudwatch-alarm.schema.json"), request):
            yield Finding("AL001", "error", _alarm_where(item), f"{path or 'request'}: {message}")
        if isinstance(description, str) and length(description) > DESCRIPTION_LIMIT:
            yield Finding("AL001", "error", _alarm_where(item),
                          f"AlarmDescription: has {length(description)} UTF-16 units ({len(description)} characters); "
                          f"at most {DESCRIPTION_LIMIT} allowed")


def alarm_source(subject: LintInput) -> Iterable[Finding]:
    for item in subject.alarms:
        request = item.request
        present = [key for key in ("MetricName", "Metrics", "EvaluationCriteria") if key in request]
        if len(present) != 1:
            yield Finding("AL002", "error", _alarm_where(item),
                          f"exactly one of MetricName, Metrics, EvaluationCriteria is allowed; found "
                          f"{', '.join(present) or 'none'}")
        elif present == ["MetricName"] and not all(k in request for k in ("Namespace", "Statistic", "Period")):
            yield Finding("AL002", "error", _alarm_where(item), "a MetricName alarm needs Namespace, Statistic, Period")


def alarm_returned_data(subject: LintInput) -> Iterable[Finding]:
    for item in subject.alarms:
        queries = item.request.get("Metrics")
        if isinstance(queries, list):
            returned = [m for m in queries if isinstance(m, dict) and m.get("ReturnData", True)]
            if len(returned) != 1:
                yield Finding("AL003", "error", _alarm_where(item),
                              f"{len(returned)} queries return data; an alarm needs exactly one")


def alarm_periods(subject: LintInput) -> Iterable[Finding]:
    for item in subject.alarms:
        request = item.request
        if request.get("DatapointsToAlarm", 1) > request.get("EvaluationPeriods", 1):
            yield Finding("AL004", "error", _alarm_where(item), "DatapointsToAlarm exceeds EvaluationPeriods")


def alarm_descriptions(subject: LintInput) -> Iterable[Finding]:
    """A description gpudash wrote (it names who made it) keeps its runbook and the alarm's own sentence whole
    (render/alarm_text): an error where the own sentence was cut to leave room for the runbook (ELIDED before it), or
    no runbook is there before who made it. Its length is AL001's (1,024 UTF-16 units, as generate counts)."""
    from ..markers import ALARM_DESCRIPTION_NOTE
    from ..render.alarm_text import RUNBOOK, own_cut

    for item in subject.alarms:
        text = str(item.request.get("AlarmDescription", ""))
        made = text.find(f" {ALARM_DESCRIPTION_NOTE} (")
        if made < 0:
            continue  # not written by gpudash
        if RUNBOOK not in text[:made]:
            yield Finding("AL026", "error", _alarm_where(item),
                          "its description holds no runbook before who made it: whoever the alarm pages has no steps")
        elif own_cut(text):
            yield Finding("AL026", "error", _alarm_where(item),
                          "its own sentence was cut to fit CloudWatch's 1,024 characters beside its runbook (marked "
                          "[...]): shorten the alarm's description, title or runbook in its definition")


def alarm_names(subject: LintInput) -> Iterable[Finding]:
    seen: set[tuple[str, str]] = set()
    for item in subject.alarms:
        key = (item.region, item.request.get("AlarmName", ""))
        if key in seen:
            yield Finding("AL005", "error", _alarm_where(item), f"the name is used twice in {item.region}")
        seen.add(key)


def alarm_quota(subject: LintInput) -> Iterable[Finding]:
    for region, count in sorted(insights_alarm_counts(subject.alarms).items()):
        if count > METRICS_INSIGHTS_ALARM_QUOTA:
            yield Finding("AL006", "warning", ALARMS_FILE,
                          f"{count} Metrics Insights alarms in {region}: the default quota is "
                          f"{METRICS_INSIGHTS_ALARM_QUOTA} per Region")


_ONE = {"pods": "pod", "pod GPUs": "GPU a pod holds", "GPU instances": "GPU instance", "GPUs": "GPU",
        "GPU nodes": "GPU node"}


def regional_metrics(subject: LintInput) -> Iterable[Finding]:
    """A fleet alarm runs one query over every cluster of its Region, which processes the first 10,000 metrics it
    matches (fleet_limits.METRICS_PER_QUERY): past them in the Region, what it judges is partial. Lint knows the
    clusters, not their size: a note per such alarm of the size at which its Region passes the limit (`gpudash cost`
    counts it for a fleet, from the same facts: fleet_limits)."""
    from ..fleet_limits import METRICS_PER_QUERY, objects, regional_reads, unread_here

    said: set[str] = set()
    for region, clusters, read in regional_reads(subject.settings, subject.artifacts):
        if read.who in said:
            continue
        said.add(read.who)
        what = objects(read.schema)
        started = ", pods started in it included" if what in ("pods", "pod GPUs") else ""
        unread = unread_here(subject.settings, region, read)
        yield Finding("AL021", "note", f"{ALARMS_FILE} {read.who}",
                      f"a fleet alarm: one query over every cluster of {region}"
                      f"{' but ' + ', '.join(unread) if unread else ''} publishing to "
                      f"{read.namespace or subject.settings.cloudwatch.namespace} ({clusters} in the settings), one "
                      f"metric per "
                      f"{_ONE[what]} with data in its {read.seconds // 60} min window{started}: past "
                      f"{METRICS_PER_QUERY:,} in the Region (more than {METRICS_PER_QUERY / max(clusters, 1):,.0f} "
                      f"per cluster) it processes the first {METRICS_PER_QUERY:,} it finds, the rest in no value, and "
                      f"reports PARTIAL_DATA (`gpudash cost` counts a fleet's; an alarm of cluster scope reads one "
                      f"cluster)")


def regions_apart(subject: LintInput) -> Iterable[Finding]:
    """A fleet alarm that judges its clusters' value together (grouped by nothing, or a model: not by ClusterName) is
    one alarm per Region on CloudWatch, each reading its Region's clusters (Metrics Insights queries one Region).
    Its Prometheus rule on a shared Prometheus (clusters[].prometheus_label) judges the same: a value per Region of
    the settings' clusters there where they span several (render.alarms.judged_regions), the whole Prometheus where
    they lie in one. On a Prometheus per cluster the rule reads its own cluster alone: where a Region holds several
    of the settings' clusters the two judge different GPUs and fire on different situations, a warning per alarm and
    Region (no Prometheus there holds the Region's clusters). Not warned of: the alarm also reads any cluster of its
    Region outside the settings that publishes to the namespace (Metrics Insights' WHERE takes `=`, `!=` and AND, no
    list of clusters; AL021 says it reads every cluster of the Region), while the rule over several Regions reads the
    settings' clusters alone, and over one every cluster its Prometheus holds."""
    from ..fleet_limits import alarm_reads, read_here

    settings = subject.settings
    said: set[tuple[str, str]] = set()
    for region, clusters, read in alarm_reads(subject.artifacts):
        here = sorted(read_here(settings, region, read))
        apart = not settings.shared_prometheus and len(here) > 1
        if clusters or CLUSTER_DIMENSION in read.group or not apart or (region, read.who) in said:
            continue
        said.add((region, read.who))
        yield Finding("AL022", "warning", f"{ALARMS_FILE} {read.who}",
                      f"a fleet alarm judging its clusters together: on CloudWatch it reads the clusters of {region} "
                      f"({', '.join(here)}; a Metrics Insights query reads one Region), its Prometheus rule its own "
                      f"cluster alone (a Prometheus per cluster), so the two judge different GPUs and fire on "
                      f"different situations; judge each cluster on its own (scope=\"cluster\", or group the query "
                      f"by cluster), or hold the clusters on one Prometheus (clusters[].prometheus_label: its rule "
                      f"then judges each Region's clusters, as CloudWatch does)")


def template_quota(subject: LintInput) -> Iterable[Finding]:
    """Each CloudFormation template within CloudFormation's quotas (resources, bytes as the build writes it)."""
    from ..render.cloudformation import QUOTA_FIX, over_quota

    body_string = BodyStrings(subject.artifacts)
    for stack, template in sorted(subject.artifacts.cloudformation.items()):
        over = over_quota(template, len(template_bytes(template, body_string)))
        if over:
            yield Finding("CF001", "warning", template_file(stack),
                          f"{over}: CloudFormation refuses the template; {QUOTA_FIX}")


def alarm_tags(subject: LintInput) -> Iterable[Finding]:
    for item in subject.alarms:
        if ALARM_OWNER_TAG not in item.request.get("Tags", []):
            yield Finding("AL007", "error", _alarm_where(item),
                          f"no {ALARM_OWNER_TEXT} tag: gpudash could not tell it owns this alarm")


def insights_window(subject: LintInput) -> Iterable[Finding]:
    """A Metrics Insights alarm is evaluated over the latest 3 hours of data only; any alarm over seven days at most, a
    day where its period is under an hour (PutMetricAlarm refuses more: cloudwatch_query.evaluation_limit)."""
    for item in subject.alarms:
        request = item.request
        metrics = [m for m in request.get("Metrics", []) if isinstance(m, dict)]
        queries = [m for m in metrics if is_query(str(m.get("Expression", "")))]
        periods = [_number(m.get("Period", (m.get("MetricStat") or {}).get("Period"))) for m in metrics] \
            + [_number(request.get("Period"))]
        periods = [p for p in periods if p]
        if not periods:
            continue
        evaluations = _number(request.get("EvaluationPeriods")) or 1
        if queries:
            window = max(_number(m.get("Period")) for m in queries) * evaluations
            if window > ALARM_WINDOW_SECONDS:
                yield Finding("AL009", "error", _alarm_where(item),
                              f"Period x EvaluationPeriods spans {window / 3600:g} hours; CloudWatch evaluates a "
                              f"Metrics Insights alarm over the latest 3 hours only")
                continue
        window = max(periods) * evaluations
        limit, said = evaluation_limit(max(periods))
        if window > limit:
            yield Finding("AL009", "error", _alarm_where(item),
                          f"Period x EvaluationPeriods spans {window / 3600:g} hours; CloudWatch evaluates an alarm "
                          f"over {said} at most, and PutMetricAlarm refuses more")


def _number(value: Any) -> int:
    """An integer field of a request as a number (0: absent or not a number: the schema, AL001, says so)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


_BLANK_EFFECT = {"GreaterThanThreshold": "fires for it", "GreaterThanOrEqualToThreshold": "fires for it",
                 "LessThanThreshold": "never fires for it", "LessThanOrEqualToThreshold": "never fires for it"}
# what a field's 0 that stands for "not supported" (blanks.UNREAD_AT_ZERO) does where the blank does the above
_ZERO_EFFECT = {"fires for it": "is read at 0, below every level", "never fires for it": "fires for it"}


def _blank_fields(subject: LintInput) -> tuple[str, Callable[[str], str | None], str] | None:
    """Where DCGM's blanks are published, if anywhere: (the namespace, the DCGM field a published metric is of (None:
    none), who publishes them and what would drop them). The Container Insights add-on publishes them (its agent drops no
    reading by value and its configuration cannot make it: container_insights.ARRAY_BLANKS); so does the agent's
    JSON path (agent.pipeline: classic); the OTel pipeline drops them before they are published (None)."""
    from .. import container_insights
    from ..container_insights_table import LEVELS, MAPPINGS, NAMESPACE, metric_name

    if container_insights.enabled(subject.settings):
        return (NAMESPACE, {metric_name(level, m): m.field for m in MAPPINGS for level in LEVELS}.get,
                "the Container Insights add-on publishes it and its configuration has no way to drop it; "
                "cloudwatch.source: prometheus-emf with agent.pipeline: otel drops it before it is published")
    agents = [subject.agent(cluster) for cluster in subject.clusters()]
    if agents and all(agent is not None and agent.otel is not None for agent in agents):
        return None
    return (subject.settings.cloudwatch.namespace, lambda name: name if name.startswith("DCGM_") else None,
            "the agent's JSON path (agent.pipeline: classic) publishes it; agent.pipeline: otel (agent 1.300066.0 or "
            "later) drops it before it is published")


def alarm_blanks(subject: LintInput) -> Iterable[Finding]:
    """Alarms on the exporter's DCGM fields see a blank sentinel as a reading where it is published (the agent's
    JSON path, agent.pipeline: classic, and the Container Insights add-on): a GROUP BY alarm has no way to drop it,
    and a count (COUNT, SampleCount) counts a GPU that writes only the blank, which its Prometheus rule does not count
    (promql.counted). The OTel pipeline drops blanks before they are published, so nothing is noted there."""
    source = _blank_fields(subject)
    if source is None:
        return
    namespace, field_of, why = source
    for item in subject.alarms:
        request = item.request
        metrics = [_parsed(str(m.get("Expression", ""))) for m in request.get("Metrics", [])
                   if is_query(str(m.get("Expression", "")))]
        names = [q.metric for q in metrics if q is not None and q.namespace == namespace and q.function != "COUNT"]
        if request.get("Namespace") == namespace and request.get("MetricName") \
                and request.get("Statistic") != "SampleCount":  # a count of readings: any value counts
            names.append(request["MetricName"])
        counted = _counted_fields(request, metrics, namespace, field_of)
        if counted:
            yield Finding("AL010", "note", _alarm_where(item),
                          f"counts a GPU whose exporter reports only DCGM's blank value (about 9.2e18, 'not "
                          f"supported') for {counted[0]} as reporting it, where its Prometheus rule counts GPUs with "
                          f"a reading: a count takes any value, and {why}; `gpudash verify` names such GPUs")
        effect = _BLANK_EFFECT.get(str(request.get("ComparisonOperator")))
        if not names or effect is None or field_of(names[0]) is None:
            continue
        field = field_of(names[0])
        zero = (f"; one whose exporter writes 0 for it (DCGM's 'not supported' on GPUs without the sensor) "
                f"{_ZERO_EFFECT[effect]}") if field in UNREAD_AT_ZERO else ""
        yield Finding("AL010", "note", _alarm_where(item),
                      f"a GPU whose exporter reports DCGM's blank value (about 9.2e18, 'not supported') for "
                      f"{field} {effect}{zero}: {why}, and a GROUP BY alarm takes no metric math; "
                      f"`gpudash verify` names such GPUs")


def _counted_fields(request: dict, metrics: list, namespace: str, field_of: Callable[[str], str | None]) -> list[str]:
    """The DCGM fields an alarm counts the readings of, whatever their value: a Metrics Insights COUNT, a
    SampleCount of its metric or of a metric-math alarm's metric (the data-missing alarm's GPU observations);
    `field_of`: the DCGM field a published metric is of (_blank_fields)."""
    found = [q.metric for q in metrics if q is not None and q.namespace == namespace and q.function == "COUNT"]
    if request.get("Namespace") == namespace and request.get("Statistic") == "SampleCount":
        found.append(str(request.get("MetricName", "")))
    for entry in request.get("Metrics", []):
        stat = entry.get("MetricStat") or {}
        metric = stat.get("Metric") or {}
        if stat.get("Stat") == "SampleCount" and metric.get("Namespace") == namespace:
            found.append(str(metric.get("MetricName", "")))
    return [field for field in dict.fromkeys(map(field_of, found)) if field is not None]


def widget_blanks(subject: LintInput) -> Iterable[Finding]:
    """Where a DCGM blank is published (the agent's JSON path, agent.pipeline: classic; the Container Insights
    add-on), a widget of one line drops the period it falls in with IF; a widget that shows a GROUP BY query's lines
    (an array of series) cannot: IF and comparisons take no array, and arithmetic combines an array only with a
    number or one series. A note per such widget; the OTel pipeline drops blanks before they are published, so
    nothing is noted there."""
    source = _blank_fields(subject)
    if source is None:
        return
    namespace, field_of, why = source
    for name, index, properties in _metric_widgets(subject):
        entries = _widget_entries(properties)
        queries = {identifier: _parsed(expression) for identifier, expression, _ in entries
                   if expression is not None and is_query(expression)}
        fields = sorted({field_of(q.metric) for q in queries.values() if q is not None and q.group
                         and q.namespace == namespace and q.function != "COUNT" and field_of(q.metric)})
        kinds, _ = _kinds((identifier, expression) for identifier, expression, _ in entries)
        if fields and any(shown and kinds.get(identifier, Kind(SERIES)).name == ARRAY
                          for identifier, _, shown in entries):
            yield Finding("CW015", "note", f"{_where(name, index)} ({properties.get('title', '')})",
                          f"a GPU whose exporter reports DCGM's blank value (about 9.2e18 or 1.4e14) for "
                          f"{', '.join(fields)} shows it as a value on its line: {why}, and metric math documents "
                          f"no way to drop one point of a GROUP BY query's lines; `gpudash verify` names such GPUs")


def addon_mig_instances(subject: LintInput) -> Iterable[Finding]:
    """On the Container Insights add-on a GPU split into MIG instances is published as one of its instances (its
    agent drops GPU_I_ID and GPU_I_PROFILE from the GPU metrics, so the instances' readings of a collection are one
    metric and the EMF exporter keeps the first: container_insights.MIG_ONE_INSTANCE). A note per widget and alarm
    reading a field MIG reports per instance, or does not report at all (utilization), where the GPU's reading
    differs from one instance's: a query of a cluster whose GPUs may be split (exporter.mig, clusters[].exporter.mig),
    a query naming no cluster where one of its Region's may be (a fleet alarm reads its Region's clusters)."""
    from .. import container_insights
    from ..container_insights_table import NAMESPACE
    from ..settings import mig_of

    settings = subject.settings
    if not container_insights.enabled(settings):
        return
    fields = container_insights.one_instance_fields()
    split = {cluster.name for cluster in settings.clusters if mig_of(settings, cluster) != "none"}

    def may_be_split(query: Parsed, region: str) -> bool:
        """The query reads a cluster whose GPUs may be split: the one it names, else one of its Region's it does not
        leave out (`!=`: a fleet rule's alarm of the clusters saying none beside split ones)."""
        named = next((v for d, op, v in query.where if d == CLUSTER_DIMENSION and op == "="), None)
        apart = {v for d, op, v in query.where if d == CLUSTER_DIMENSION and op == "!="}
        return named in split if named is not None else \
            any(c.region == region and c.name in split and c.name not in apart for c in settings.clusters)

    def read(expressions: Iterable[str], region: str) -> list[str]:
        parsed = (_parsed(e) for e in expressions if is_query(e))
        return sorted({fields[q.metric] for q in parsed if q is not None and q.namespace == NAMESPACE
                       and q.function != "COUNT" and q.metric in fields and may_be_split(q, region)})

    message = ("a GPU split into MIG instances reads one instance's {} here: the Container Insights add-on's agent "
               "drops the instance labels (GPU_I_ID, GPU_I_PROFILE) from its GPU metrics and keeps one of a "
               "collection's instances (its log says \"Duplicate metric found\"){}; cloudwatch.source: prometheus-emf "
               "reads each instance")
    unreported = ", and MIG reports no {} per instance: what its exporter writes there, 0 on some exporter versions"

    def said(found: list[str]) -> str:
        missing = [field for field in found if field in MIG_UNSUPPORTED]
        return message.format(", ".join(found), unreported.format(", ".join(missing)) if missing else "")
    regions = {dashboard.name: dashboard.region for dashboard in subject.cloudwatch_dashboards}
    for name, index, properties in _metric_widgets(subject):
        found = read(_expressions(properties), properties.get("region") or regions[name])
        if found:
            yield Finding("CW021", "note", f"{_where(name, index)} ({properties.get('title', '')})", said(found))
    for item in subject.alarms:
        found = read((str(m.get("Expression", "")) for m in item.request.get("Metrics", [])), item.region)
        if found:
            yield Finding("CW021", "note", _alarm_where(item), said(found))


def tables_now(subject: LintInput) -> Iterable[Finding]:
    """A table of one row per pod or GPU now ("Pods on GPUs") draws the latest whole period of its own range, which
    ends now (a widget's `end` can only be an absolute time), and its query's ORDER BY ranks the rows over that whole
    range: past its LIMIT a row of the period drawn (a pod that left early in it) may give its place to one that came
    since, blank in the period drawn. No ranking of the range's observations tells the two apart. A note per such
    widget (its dashboard's header says it too)."""
    for name, index, properties in _metric_widgets(subject):
        if properties.get("view") != "table" or not str(properties.get("start", "")).startswith("-P"):
            continue
        for expression in _expressions(properties):
            query = _parsed(expression) if is_query(expression) else None
            if query is not None and query.group and query.limit:
                yield Finding("CW020", "note", f"{_where(name, index)} ({properties.get('title', '')})",
                              f"past {query.limit} rows, the rows are those its ORDER BY ranks first over its own "
                              f"range, the period it draws and the time since (a widget's range ends now): a row "
                              f"that left early in the period drawn may give its place to one that came since, "
                              f"blank in the period drawn")


def _summed_shared_counters(subject: LintInput, expressions: Iterable[str]) -> list[str]:
    """The counter fields that `expressions` sum per GPU, node or cluster (not per pod): on the agent's JSON path
    each pod's copy of a shared GPU's counter is one more observation of such a sum."""
    return _summed_counters(subject, expressions, pods=False)


def _summed_counters(subject: LintInput, expressions: Iterable[str], pods: bool = True) -> list[str]:
    """The counter fields whose deltas `expressions` add up (SUM), in every dimension set (`pods`) or in those
    without a pod."""
    namespace = subject.settings.cloudwatch.namespace
    pod = set(pod_dimensions(subject.settings))
    fields = set()
    for expression in expressions:
        query = _parsed(expression) if is_query(expression) else None
        if query is None or query.namespace != namespace or query.function != "SUM" or query.schema is None \
                or (not pods and pod <= set(query.schema)) or query.metric not in subject.catalog:
            continue
        if subject.catalog.get(query.metric).is_counter:
            fields.add(query.metric)
    return sorted(fields)


FAILED_SCRAPE = ("a failed scrape, or a scrape that leaves a series out, loses the counter's increase across it: "
                 "the scrape loop marks each series of the scrape before stale and the agent's JSON path then "
                 "forgets the previous reading, so the next reading is only a new baseline (awsemf on "
                 "agent.pipeline: otel keeps it)")
SHARED_COUNTER = ("a GPU that k pods share by time-slicing or MPS reads k times its increase of {}: the agent's "
                  "JSON path (agent.pipeline: classic) publishes each pod's copy of the GPU's counter under the "
                  "per-GPU dimensions and no statistic of the query undoes that (a device counter, which every "
                  "MIG instance of a GPU repeats, is read per GPU instance there too: a MIG GPU is listed once "
                  "per instance, and counted once per instance in a sum or mean); agent.pipeline: otel (agent "
                  "1.300066.0 or later) merges the pods' copies, and a device counter's over a GPU's MIG "
                  "instances, into one series per GPU before they are published"
                  f"; and on agent.pipeline: classic {COPY_CHANGE} (the agent computes each delta per series, "
                  "pods included, before the declarations choose the dimensions); " + FAILED_SCRAPE)


SERIES_CHANGE = ("on agent.pipeline: classic the increase of {} is read per series: " + ONE_SERIES_CHANGE + " (the "
                 "agent computes each delta per series, pods included, before the declarations choose the "
                 "dimensions); agent.pipeline: otel (agent 1.300066.0 or later) merges a GPU's series into one "
                 "before the deltas are taken; " + FAILED_SCRAPE)


def widget_shared_counters(subject: LintInput) -> Iterable[Finding]:
    """On agent.pipeline: classic, a widget that sums a counter's deltas per GPU, node or cluster counts a shared
    GPU's increase once per pod sharing it where the exporter writes a copy per pod (exporter.virtual_gpus), and
    misses the increase where a GPU's series change (a note per widget; the OTel pipeline merges the copies)."""
    message = SHARED_COUNTER if subject.settings.exporter.virtual_gpus else SERIES_CHANGE
    yield from _per_widget(subject, "CW016", "note", _summed_shared_counters, message)


def _per_widget(subject: LintInput, rule: str, severity: str, fields_of, message: str) -> Iterable[Finding]:
    """A finding per metric widget whose expressions `fields_of` names fields of (`message` names them). Every such
    rule is about the agent's JSON path: without a classic agent no widget is read."""
    if not subject.classic_agents:
        return
    for name, index, properties in _metric_widgets(subject):
        fields = fields_of(subject, (e for _, e, _ in _widget_entries(properties) if e is not None))
        if fields:
            yield Finding(rule, severity, f"{_where(name, index)} ({properties.get('title', '')})",
                          message.format(", ".join(fields)))


def _counter_alarms(subject: LintInput, pods: bool = False) -> Iterator[tuple[AlarmRequest, list[str]]]:
    """Each alarm that sums a counter's deltas per GPU, node or cluster (and, with `pods`, per pod or namespace),
    with the counter fields it sums."""
    for item in subject.alarms:
        fields = _summed_counters(subject, (str(m.get("Expression", "")) for m in item.request.get("Metrics", [])),
                                  pods)
        if fields:
            yield item, fields


def alarm_shared_counters(subject: LintInput) -> Iterable[Finding]:
    """On agent.pipeline: classic, an alarm that sums a counter's deltas per GPU instance reads a shared GPU's
    increase once per pod sharing it: k times the increase against a threshold other than 0 fires at 1/k of it
    (an error). Against 0 it is true for any k (k x increase compares to 0 as the increase does): no finding. The
    exporter writes a copy per pod only with KUBERNETES_VIRTUAL_GPUS (exporter.virtual_gpus; verify fails an exporter
    run with it otherwise): without it a GPU pods share is one series, its increase read once."""
    if not subject.classic_agents or not subject.settings.exporter.virtual_gpus:
        return
    for item, fields in _counter_alarms(subject):
        if float(item.request.get("Threshold", 0)) != 0:
            yield Finding("AL013", "error", _alarm_where(item),
                          SHARED_COUNTER.format(", ".join(fields)) + ", so on such a GPU it fires when the increase "
                          "passes its threshold divided by the number of pods sharing it. Set agent.pipeline: otel "
                          "(agent 1.300066.0 or later), or alarm on any increase (threshold 0), which the copies do "
                          "not change")


def copy_change_alarm(fields: str, virtual_gpus: bool) -> str:
    """AL015's message: a GPU's copies per pod (exporter.virtual_gpus) or its one series under a changing pod."""
    change, merged = (COPY_CHANGE, "copies") if virtual_gpus else (ONE_SERIES_CHANGE, "series")
    return (f"on agent.pipeline: classic this alarm does not see every increase of {fields}: {change} (the agent "
            "computes each delta per series, pods included, before the declarations choose the dimensions, so no "
            "dimension set without a pod holds it either), so an increase made when a job lands on a GPU, leaves it, "
            "or hands it to the next is missed at any threshold; agent.pipeline: otel (agent 1.300066.0 or later) "
            f"merges a GPU's {merged} into one series before the deltas are taken; and {FAILED_SCRAPE}, so an "
            "increase first seen after a failed scrape is missed too")


def alarm_copy_changes(subject: LintInput) -> Iterable[Finding]:
    """On agent.pipeline: classic, an alarm that sums a counter's deltas per GPU misses the increase between two
    scrapes where a GPU's series all change, and across a failed scrape (a warning per alarm, whatever its
    threshold: it may stay OK where its Prometheus twin fires)."""
    if not subject.classic_agents:
        return
    for item, fields in _counter_alarms(subject):
        yield Finding("AL015", "warning", _alarm_where(item),
                      copy_change_alarm(", ".join(fields), subject.settings.exporter.virtual_gpus))


def alarm_gap_growth(subject: LintInput) -> Iterable[Finding]:
    """On agent.pipeline: otel, an alarm that sums a counter's deltas (per GPU, node, pod or cluster) gets a gap's growth in the GPU's data as
    the first delta after it, while awsemf keeps the reading before it (15 to 30 minutes): an event alarm (any
    increase, `> 0`) misses a longer gap's, a level per period can fire on a steady count the gap's growth landed
    in one period, a rate `> 0` counts a gap's growth further back than its rule (cloudwatch_query.otel_gap; a note
    per alarm). A rate `> 0` and an increase `> 0` make the same request: which one it is, is read from its
    description, where the generator writes the same text (gap_said); a `> 0` request that says neither gets both."""
    if not subject.otel_agents:
        return
    for item, fields in _counter_alarms(subject, pods=True):  # a pod's copy of a counter has its deltas alike
        kind = gap_said(str(item.request.get("AlarmDescription", "")))
        above_0 = item.request.get("ComparisonOperator") == "GreaterThanThreshold" and item.request.get("Threshold") == 0
        text = otel_gap(kind) if kind else OTEL_GAP_EITHER if above_0 else otel_gap("level")
        yield Finding("AL018", "note", _alarm_where(item), f"on agent.pipeline: otel, for {', '.join(fields)}: {text}")


def silent_when_gone(subject: LintInput) -> Iterable[Finding]:
    """An alarm on a count or total of readings under a level (`COUNT(...) < 7` GPUs, `SUM(power) < 1200`) whose
    missing data does not breach: when the GPUs it counts stop reporting (node group scaled to zero, exporter or agent
    gone) its query returns no datapoint, which CloudWatch does not judge as 0, and its Prometheus rule reads no
    series: neither fires when the count reaches 0 (a note per alarm). TreatMissingData breaching makes both fire
    then (render.alarms._of_range and _nothing); the data-missing alarm already says the exporter stopped, and its
    alarm on the agent's reads of kube-state-metrics (a count of the desired count's datapoints, not of GPUs' readings)
    leaves the agent stopped to it."""
    for item in subject.alarms:
        request = item.request
        if not str(request.get("ComparisonOperator", "")).startswith("LessThan") \
                or request.get("TreatMissingData", "missing") == "breaching":
            continue
        returned = [m for m in request.get("Metrics", []) if m.get("ReturnData", True)]
        expression = str(returned[0].get("Expression", "")) if len(returned) == 1 else ""
        query = _parsed(expression) if is_query(expression) else None
        # (a node's count or total per scrape, made at the agent, is read as MAX or AVG: the same silence)
        kind = pod_total_kind(query.schema or []) if query is not None and query.function in ("AVG", "MAX") \
            and node_total(query.schema or []) else None
        if query is not None and (query.function in ("COUNT", "SUM") or kind) and query.metric not in KSM_METRICS:
            yield Finding("AL023", "note", _alarm_where(item),
                          f"a {kind or query.function.lower()} of readings under a level with missing data "
                          f"{request.get('TreatMissingData', 'missing')}: when every GPU it reads stops reporting, "
                          f"neither this alarm nor its Prometheus rule fires (no datapoint is not 0); set "
                          f"missing_data='breaching' to alarm then")


def never_alarms(subject: LintInput) -> Iterable[Finding]:
    """An alarm on a count of readings (a Metrics Insights COUNT, a SampleCount) below 1 whose missing data does not
    breach can never be in ALARM: a period without a reading has no datapoint, which CloudWatch does not judge as a
    count of 0 (TreatMissingData decides, and only `breaching` breaches), and one with a reading counts 1 or more
    (render.alarms.never_firing). The bundled data-missing alarms count under half a period's scrapes: at
    scrape.interval 150 s (two a period) that is none (a warning per alarm); of the bundled rule AL029 says it, with its
    period (render.alarms.never_firing_unsaid)."""
    unsaid = never_firing_unsaid([item.request for item in subject.alarms], subject.alarm_definitions, subject.settings)
    for item in subject.alarms:
        request = item.request
        if any(request is never for never in unsaid):
            operator = "<" if request["ComparisonOperator"] == "LessThanThreshold" else "<="
            yield Finding("AL028", "warning", _alarm_where(item),
                          f"a count of readings {operator} {request['Threshold']:g} with missing data "
                          f"{request.get('TreatMissingData', 'missing')} can never be in ALARM: a period without a "
                          f"reading has no datapoint (not a count of 0), and one with a reading counts 1 or more; "
                          f"{never_firing_fix(request, subject.settings, subject.alarm_definitions, subject.catalog)}"
                          f", or count on the cluster's "
                          f"alarm")


def _mixed_shares(subject: LintInput, expressions: Iterable[str]) -> list[str]:
    """The fields the exporter splits per process that `expressions` read outside the per-pod dimension set, when
    exporter.virtual_gpus is set and the agent's JSON path publishes (it cannot keep the pods' shares out)."""
    if not subject.settings.exporter.virtual_gpus:  # (a classic agent: _per_widget and _per_alarm ask)
        return []
    namespace = subject.settings.cloudwatch.namespace
    pod = set(pod_dimensions(subject.settings))
    fields = set()
    for expression in expressions:
        query = _parsed(expression) if is_query(expression) else None
        if query is not None and query.namespace == namespace and query.metric in PER_PROCESS_FIELDS \
                and query.schema is not None and not pod <= set(query.schema):
            fields.add(query.metric)
    return sorted(fields)


MIXED_SHARES = ("exporter.virtual_gpus: the agent's JSON path (agent.pipeline: classic) publishes each pod's own share "
                "of {} under the per-GPU dimensions beside the device's value, and no statistic of the query tells "
                "them apart (a GPU at 90 % that three pods share at 30 % averages 45 %); use agent.pipeline: otel "
                "(agent 1.300066.0 or later), which publishes the device's value alone per GPU")


def widget_mixed_shares(subject: LintInput) -> Iterable[Finding]:
    """With exporter.virtual_gpus on agent.pipeline: classic, a widget reading GPU utilization or framebuffer used
    per GPU, node or cluster mixes the device's value with the pods' shares (an error per widget)."""
    yield from _per_widget(subject, "CW017", "error", _mixed_shares, MIXED_SHARES)


def _per_alarm(subject: LintInput, rule: str, severity: str, fields_of, message: str) -> Iterable[Finding]:
    """A finding per alarm whose expressions `fields_of` names fields of (`message` names them); none without a
    classic agent (as `_per_widget`)."""
    if not subject.classic_agents:
        return
    for item in subject.alarms:
        fields = fields_of(subject, (str(m.get("Expression", "")) for m in item.request.get("Metrics", [])))
        if fields:
            yield Finding(rule, severity, _alarm_where(item), message.format(", ".join(fields)))


def alarm_mixed_shares(subject: LintInput) -> Iterable[Finding]:
    """The same for an alarm (an error per alarm)."""
    yield from _per_alarm(subject, "AL014", "error", _mixed_shares, MIXED_SHARES)


def _retyped(subject: LintInput, expressions: Iterable[str]) -> list[str]:
    """The fields `expressions` read that the exporter serves as the other of gauge and counter than their meaning
    (catalog.Metric.retyped: a state or windowed count served as a counter, a running total served as a gauge), when
    the agent's JSON path publishes: it turns every counter into deltas and publishes every gauge as it reads
    (_per_widget and _per_alarm ask only then)."""
    fields = set()
    for expression in expressions:
        query = _parsed(expression) if is_query(expression) else None
        if query is not None and query.metric in subject.catalog and subject.catalog.get(query.metric).retyped:
            fields.add(query.metric)
    return sorted(fields)


RETYPED = ("{} reads a field the counters CSV types the other of gauge and counter than DCGM says it is, so the "
           "exporter serves it so and the agent's JSON path (agent.pipeline: classic) would publish a level (a state, a "
           "count over the exporter's window, a throughput) typed counter as differences between readings (a GPU "
           "failing all along reads 0), and a running total typed gauge as the total itself where its growth is read: gpudash does not ship "
           "it on that path, and this reads nothing. Use agent.pipeline: otel (agent 1.300066.0 or later), which "
           "publishes each as it is meant, or type the field in the counters CSV as DCGM says (gpudash lint: CSV003)")


def widget_retyped(subject: LintInput) -> Iterable[Finding]:
    """On agent.pipeline: classic, a widget reading a field the exporter serves as the other of gauge and counter than
    its meaning (an error per widget)."""
    yield from _per_widget(subject, "CW018", "error", _retyped, RETYPED)


def alarm_retyped(subject: LintInput) -> Iterable[Finding]:
    """The same for an alarm (an error per alarm)."""
    yield from _per_alarm(subject, "AL016", "error", _retyped, RETYPED)


MATH_ALARM_METRICS = 10  # an alarm on a metric-math expression reads at most 10 metrics (user guide)
# Functions the user guide says act differently when an alarm asks for more datapoints than it evaluates,
# and SEARCH, which returns several series (an alarm watches one).
NOT_IN_ALARMS = ("AVG", "DATAPOINT_COUNT", "MAX", "MIN", "REMOVE_EMPTY", "RUNNING_SUM", "STDDEV", "SUM", "SEARCH")
# An alarm on a GROUP BY Metrics Insights query must wrap it in math that returns one series (user guide, "Create a
# Metrics Insights alarm"): SUM of that array adds, at each timestamp, the values there are, whatever else the
# alarm requests, so it is allowed over an array that holds a query's series (and over nothing else).
_SUMMED = re.compile(r"\bSUM\s*\(((?:[^()]|\([^()]*\))*)\)")


def _sums_of_arrays(expression: str, kinds: dict[str, Kind]) -> int:
    """How many SUM( ) in the expression add an array of a query's series."""
    count = 0
    for argument in _SUMMED.findall(expression):
        try:
            count += kind_of(argument, kinds).name == ARRAY
        except MathError:
            pass
    return count


def math_alarms(subject: LintInput) -> Iterable[Finding]:
    """Metric-math alarms: at most 10 metrics, each entry a metric or an expression over known ids, and
    no function that misbehaves in an alarm."""
    for item in subject.alarms:
        queries = [m for m in item.request.get("Metrics", []) if isinstance(m, dict)]
        if not any("MetricStat" in m for m in queries):
            continue
        where = _alarm_where(item)
        stats = [m for m in queries if "MetricStat" in m]
        if len(stats) > MATH_ALARM_METRICS:
            yield Finding("AL020", "error", where, f"{len(stats)} metrics: an alarm on metric math reads at most "
                                                   f"{MATH_ALARM_METRICS}")
        ids = {m.get("Id") for m in queries}
        kinds, _ = _kinds((str(m.get("Id")), None if "MetricStat" in m else str(m.get("Expression", "")))
                          for m in queries)
        for query in queries:
            if ("MetricStat" in query) == ("Expression" in query):
                yield Finding("AL020", "error", where, f"{query.get('Id')}: give exactly one of MetricStat, Expression")
                continue
            expression = str(query.get("Expression", ""))
            if is_query(expression):  # its names are the query's own (CW012 and the GROUP BY rules read it)
                continue
            for word in re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b(?!\s*\()", expression):
                if word not in ids and word not in ("AND", "OR"):
                    yield Finding("AL020", "error", where, f"{query.get('Id')}: {word!r} names no metric of the alarm")
            summed = _sums_of_arrays(expression, kinds)
            for function in re.findall(r"\b([A-Z_]+)\s*\(", expression):
                if function == "SUM" and summed:
                    summed -= 1
                elif function in NOT_IN_ALARMS:
                    yield Finding("AL020", "error", where, f"{query.get('Id')}: {function}() does not belong in an "
                                                           f"alarm (it returns several series, or reads more "
                                                           f"datapoints than the alarm evaluates)")


_ORDER_FOR = {"GreaterThanThreshold": "DESC", "GreaterThanOrEqualToThreshold": "DESC",
              "LessThanThreshold": "ASC", "LessThanOrEqualToThreshold": "ASC"}


def grouped_alarms(subject: LintInput) -> Iterable[Finding]:
    """GROUP BY alarms: ORDER BY the SELECT function toward the threshold, at most 500 series evaluated."""
    for item in subject.alarms:
        request = item.request
        for metric in request.get("Metrics", []):
            query = _parsed(str(metric.get("Expression", ""))) if is_query(str(metric.get("Expression", ""))) else None
            if query is None or not query.group:
                continue
            if query.limit is not None and query.limit > SERIES_PER_QUERY:
                yield Finding("AL008", "error", _alarm_where(item),
                              f"LIMIT {query.limit}: a multi-time-series alarm evaluates at most {SERIES_PER_QUERY}"
                              if metric.get("ReturnData") is not False else
                              f"LIMIT {query.limit}: a query returns at most {SERIES_PER_QUERY} series")
            if metric.get("ReturnData") is False:  # the input of the alarm's math, not its contributors
                continue
            wanted = _ORDER_FOR.get(request.get("ComparisonOperator", ""), "DESC")
            # over a field's unused share (cloudwatch_query.unused_plan) a mean above a level ranks by the share's
            # sum over the window, the most first
            # over a field's flags past a level (cloudwatch_query.level_plan) the lowest flag at least 1 ranks by the
            # flags' sum over the window, the most first
            ranked = ("SUM" if query.function == "AVG" and wanted == "DESC" and UNUSED_SHARE[0] in (query.schema or [])
                      else "SUM" if query.function == "MIN" and wanted == "DESC" and level_of(query.schema or [])
                      else query.function)
            if query.order is None:
                yield Finding("AL008", "error", _alarm_where(item),
                              f"GROUP BY without ORDER BY {ranked}() {wanted}: which {SERIES_PER_QUERY} "
                              f"series are evaluated is not controlled")
            elif query.order != (ranked, wanted):
                yield Finding("AL008", "error", _alarm_where(item),
                              f"ORDER BY {' '.join(query.order)}: the series nearest the threshold come first "
                              f"with ORDER BY {ranked}() {wanted}")
            if query.limit is not None and SERIES_PER_QUERY >= query.limit > CONTRIBUTORS_REPORTED:
                yield Finding("AL008", "warning", _alarm_where(item),
                              f"LIMIT {query.limit}: only {CONTRIBUTORS_REPORTED} contributors are reported")


RULES = (
    Rule("CW001", "CloudWatch dashboard bodies validate against schemas/cloudwatch-dashboard.schema.json", body_schema),
    Rule("CW002", "dashboard names are 1-255 characters of A-Za-z0-9-_", names),
    Rule("CW003", "at most 500 metrics per widget", metric_count),
    Rule("CW004", "metric lines have the [namespace, name, dim, value, ..., {options}] shape", metric_shape),
    Rule("CW005", "SEARCH expressions are at most 1024 characters and 100 per graph", searches),
    Rule("CW006", "metric ids are valid and unique within a widget", ids),
    Rule("CW007", "widgets fit the 24-column grid", grid),
    Rule("CW008", "queries read the declared namespace and a published dimension set", declared_shape),
    Rule("CW009", "gauges have y-axis bounds", gauge_bounds),
    Rule("CW010", "one Metrics Insights query per widget", one_query_per_widget),
    Rule("CW011", "at most 2,500 metrics per dashboard", dashboard_metrics),
    Rule("CW012", "Metrics Insights queries parse, with backslash escapes and quoted reserved words", quoting),
    Rule("CW014", "metric-math expressions apply each function and operator only to argument types the user "
                  "guide documents (IF and comparisons on no array of series)", math_types),
    Rule("CW015", "GROUP BY widgets on DCGM fields cannot drop DCGM's blank sentinel on agent.pipeline: classic "
                  "and the Container Insights add-on (a note per widget)", widget_blanks),
    Rule("CW016", "widgets summing a counter per GPU, node or cluster count a shared GPU's increase once per pod, and "
                  "miss it where a GPU's pods all change, on agent.pipeline: classic (a note per widget)",
         widget_shared_counters),
    Rule("CW017", "with exporter.virtual_gpus, no widget reads GPU utilization or framebuffer used outside the per-pod "
                  "dimensions on agent.pipeline: classic", widget_mixed_shares),
    Rule("CW018", "no widget reads a field the exporter serves as the other of gauge and counter than its meaning "
                  "(health or windowed counts typed counter, running totals typed gauge) on agent.pipeline: classic",
         widget_retyped),
    Rule("CW021", "on the Container Insights add-on, widgets and alarms on a field MIG reports per instance (or not "
                  "at all) read one instance of a GPU split into MIG instances (a note per widget and alarm)",
         addon_mig_instances),
    Rule("CW020", "tables of rows now rank their rows over the period drawn and the time since (a note per table "
                  "with a LIMIT)", tables_now),
    Rule("AL001", "alarm requests validate against schemas/cloudwatch-alarm.schema.json, an AlarmDescription "
                  "counted in UTF-16 units as generate counts it (an emoji counts 2)", alarm_schema),
    Rule("AL002", "an alarm names exactly one of MetricName, Metrics, EvaluationCriteria", alarm_source),
    Rule("AL003", "exactly one of an alarm's queries returns data", alarm_returned_data),
    Rule("AL004", "DatapointsToAlarm does not exceed EvaluationPeriods", alarm_periods),
    Rule("AL005", "alarm names are unique per Region", alarm_names),
    Rule("AL026", "alarm descriptions keep the alarm's own sentence and its runbook whole within 1,024 characters "
                  "(notes give way first)", alarm_descriptions),
    Rule("AL006", "Metrics Insights alarms stay within 200 per Region", alarm_quota),
    Rule("AL007", f"every alarm carries the {ALARM_OWNER_TEXT} tag", alarm_tags),
    Rule("AL008", "GROUP BY alarms ORDER BY their function toward the threshold, within 500 series", grouped_alarms),
    Rule("AL009", "Metrics Insights alarms evaluate at most the latest 3 hours, and every alarm at most seven days (a "
                  "day where its period is under an hour)", insights_window),
    Rule("AL010", "alarms on DCGM fields cannot drop DCGM's blank sentinel, and their counts count it (a note per "
                  "alarm)", alarm_blanks),
    Rule("AL013", "alarms summing a counter per GPU instance against a threshold other than 0 read a shared GPU's "
                  "increase once per pod on agent.pipeline: classic (an error per alarm)", alarm_shared_counters),
    Rule("AL014", "with exporter.virtual_gpus, no alarm reads GPU utilization or framebuffer used outside the per-pod "
                  "dimensions on agent.pipeline: classic", alarm_mixed_shares),
    Rule("AL015", "alarms summing a counter per GPU miss, on agent.pipeline: classic, the increase between two scrapes "
                  "no one series of the GPU spans and across a failed scrape (a warning per alarm: it may stay OK where its "
                  "Prometheus twin fires)", alarm_copy_changes),
    Rule("AL016", "no alarm reads a field the exporter serves as the other of gauge and counter than its meaning on "
                  "agent.pipeline: classic",
         alarm_retyped),
    Rule("AL018", "alarms summing a counter's deltas (per GPU, node, pod or cluster) on agent.pipeline: otel say "
                  "what a gap in a GPU's data does to them (a note per alarm: an event alarm misses a gap's growth "
                  "past 15 minutes, a level can fire on a gap's growth landed in one period, a rate `> 0` counts a gap's "
                  "growth past its rule's 10 minutes)", alarm_gap_growth),
    Rule("AL021", "fleet alarms, one query over every cluster of their Region, say at what size the Region passes "
                  "the 10,000 metrics a Metrics Insights query processes (a note per alarm)", regional_metrics),
    Rule("AL022", "fleet alarms judging their clusters together say where CloudWatch reads a Region's clusters and "
                  "the Prometheus rule one cluster's (a Prometheus per cluster; a warning per alarm and Region)",
         regions_apart),
    Rule("AL023", "alarms on a count or total of readings under a level say that neither form fires when every GPU "
                  "they read stops reporting, unless missing data breaches (a note per alarm)", silent_when_gone),
    Rule("AL028", "no alarm counts readings below 1 unless its missing data breaches: a period without a reading has "
                  "no datapoint, so it could never fire (a warning per alarm)", never_alarms),
    Rule("AL020", "metric-math alarms read at most 10 metrics, name only their own, and use no function unfit "
                  "for alarms", math_alarms),
    Rule("CF001", "each CloudFormation template within CloudFormation's quotas (500 resources, 1,000,000 bytes)",
         template_quota),
)

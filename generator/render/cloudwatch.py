"""Neutral dashboards -> CloudWatch dashboard bodies, one per cluster. Pure.

Every metric widget holds one Metrics Insights query (the documented limit) and, where
the title needs it, one metric-math expression over it (see cloudwatch_query.plan):
gauges are never summed over time, counts count GPUs or pods rather than observations,
counters (per-scrape deltas from the agent) are summed for increases and averaged over
the scrape interval for rates. Per-pod lines are `GROUP BY namespace, pod`, labelled
`Pod <namespace>/<pod>`, so new pods appear without re-applying; fleet and health views
read the per-GPU set, which every GPU publishes whether a pod holds it or not.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Iterable

from .. import data_missing, stopped_gpus
from ..build_memo import BuildMemo
from ..catalog import MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL, PER_PROCESS_FIELDS, PRESENCE, Catalog
from ..errors import InputError
from ..cloudwatch_query import (ARRAY_BLANK_NOTE, INTERVAL_CHANGED, NODE_MEAN, NODE_MEAN_KINDS, ONCE_PER_GPU, PERIOD,
                                SERIES_PER_QUERY, SERVED_UNLIKE_FIX, Plan, Unsupported, blank_floor, mig_only_set,
                                node_mean_dimensions, number, pod_total_kind, quote_identifier, quote_string,
                                readings_dimensions, series_label, served_unlike)
from ..container_insights_table import CONTAINER as ADDON_CONTAINER, NAMESPACE_DIM as ADDON_NAMESPACE, \
    NODE as ADDON_NODE, POD as ADDON_POD
from ..container_insights import (MIG_ONE_INSTANCE, NotPublished, enabled as addon_source, layout_of,
                                  observed_every, plan as addon_plan, source_plan)
from ..model import Alarm, Dashboard, Panel, Query, Row, layout, source_file
from ..markers import CLUSTER_DIMENSION, GPU_DIMENSION, NAMESPACE_DIMENSION, NODE_DIMENSION, POD_DIMENSION
from ..dashboard_limit import ADDON_FLEET_METRICS, METRICS_PER_DASHBOARD, METRICS_PER_WIDGET
from ..names import cloudwatch_dashboard_name
from ..promql import LABEL_LOOKBACK_SCRAPES
from ..ownership import with_publication
from ..settings import Cluster, Settings
from .alarms import alarm_forms, alarm_plan, made_parts
from .fleet_parts import WHERE, said_where

VIEWS = {"timeseries": "timeSeries", "stat": "singleValue", "gauge": "gauge", "bargauge": "bar",
         "table": "table", "heatmap": "timeSeries"}
SINGLE_VALUE_KINDS = ("stat", "gauge", "bargauge", "table")
NOW_VALUE_KINDS = tuple(kind for kind in SINGLE_VALUE_KINDS if kind != "table")  # one value each, not a row per pod
HEADER_HEIGHT = 2
LINES_KEPT = "Lines drawn:"  # the header paragraph saying which lines each chart of one line per pod or GPU draws
PERIOD_ID = "p1"  # the hidden metric whose PERIOD() a widget's math divides by
READINGS_IDS = ("p2", "p3")  # the hidden Sum and SampleCount of a fleet mean's field per cluster (past 500 GPUs)
WARNING_COLOUR, CRITICAL_COLOUR = "#ff7f0e", "#d62728"


# panel_plan's answers (a Plan, or why there is none) by query, per catalog and settings: a project's panels repeat
# the same queries, and each panel is planned twice (what the agent publishes, then the widget)
_PLANS = BuildMemo()


def panel_plan(panel: Panel, catalog: Catalog, settings: Settings) -> Plan:
    """The one query a CloudWatch widget runs; Unsupported when CloudWatch cannot show the panel truthfully."""
    if len(panel.queries) != 1:
        raise Unsupported("a CloudWatch widget runs one Metrics Insights query; this panel has "
                          f"{len(panel.queries)}")
    plans = _PLANS.table(catalog, settings)
    query = panel.queries[0]
    now = panel.kind in NOW_VALUE_KINDS  # (the add-on reads a fleet value now in its per-GPU form)
    answer = plans.get((query, now))
    if answer is None:
        try:
            answer = source_plan(query, catalog, settings, settings.cloudwatch.period, now=now)
        except Unsupported as exc:
            answer = exc.with_fix()
        plans[(query, now)] = answer
    if isinstance(answer, str):
        raise Unsupported(answer)
    return answer


def unsupported_panels(dashboard: Dashboard, catalog: Catalog, settings: Settings) -> list[tuple[Panel, str]]:
    """Panels left out of CloudWatch, with the reason (raw PromQL, ratios, what CloudWatch cannot compute)."""
    result = []
    for panel in dashboard.panels():
        try:
            panel_plan(panel, catalog, settings)
        except Unsupported as exc:
            result.append((panel, str(exc)))
    return result


def queried_sets(dashboards: Iterable[Dashboard], alarms: Iterable[Alarm], catalog: Catalog,
                 settings: Settings, cluster: Cluster | None = None) -> dict[str, set[tuple[str, ...]]]:
    """{metric: dimension sets} that the CloudWatch dashboards and alarms read: what the agent must publish. With
    `cluster`, what that cluster's agent must publish: its dashboards' reads as made for it (its exporter.mig) and
    those of each alarm made where it is (render/alarms.made_parts: its exporter.mig group's, and its Region's for a
    fleet-scope rule, which reads every cluster of the Region together and is made for GPUs that may be split where
    one of them may be). Without it, every cluster's together (reads_by_cluster)."""
    if cluster is None:
        result: dict[str, set[tuple[str, ...]]] = {}
        for reads in reads_by_cluster(dashboards, alarms, catalog, settings).values():
            for name, sets in reads.items():
                result.setdefault(name, set()).update(sets)
        return result
    settings_here = settings.for_clusters([cluster])
    plans = []
    periods = False  # a widget reads PERIOD() of the cluster's metric of period_field
    per_cluster: set[str] = set()  # fields a fleet mean reads per cluster past 500 GPUs (readings_past_500)
    expected_signal = False  # a data-missing alarm of the cluster reads kube-state-metrics' counts
    shipped_only: set[str] = set()  # fields the agent scrapes for a count of its own, published in no set for it
    for dashboard in dashboards:
        for panel in dashboard.panels():  # the panels cloudwatch_panels keeps: those with a plan
            try:
                plan_ = panel_plan(panel, catalog, settings_here)
            except Unsupported:
                continue
            periods = periods or (not plan_.namespace and _period_line(panel, plan_, catalog))
            if readings_past_500(panel, plan_, catalog, settings_here):
                per_cluster.add(plan_.metric)
                if node_mean_dimensions(settings_here):
                    continue  # its query reads each node's series (per_node_form), never the plan's own set
            plans.append(plan_)
    for alarm in alarms:
        for held, members, _ in made_parts(alarm, catalog, settings):  # the alarms that are made, where
            if cluster is not None and cluster.name not in {member.name for member in members}:
                continue
            try:  # (a cluster saying exporter.mig: none publishes nothing in a MIG-only set: mig_only_set)
                forms = alarm_forms(alarm, catalog, held)
            except Unsupported:
                continue  # generate refuses such an alarm with its file and line
            plans += [form.plan for form in forms if not (settings_here.no_mig and mig_only_set(form.plan.dims))]
            # the GPU stopped reporting rule's alarm reads each node's GPUs unread, which the agent counts from the
            # presence fields: shipped (scraped), published with no set of their own for it
            shipped_only.update(field for form in forms if form.kind == "unread"
                                for field in stopped_gpus.read_fields(catalog, held))
            # the data-missing metric-math alarm reads the expected signal: kube-state-metrics' counts
            expected_signal = expected_signal or any(form.kind == "math" for form in forms)
    result = {}
    for item in plans:
        result.setdefault(item.metric, set()).add(item.dims)
    for name in sorted(shipped_only):
        result.setdefault(name, set())
    if expected_signal:
        for name in data_missing.KSM_METRICS:
            result.setdefault(name, set()).add(data_missing.ksm_set(settings))
        if not addon_source(settings):  # the agent alarm's: the desired count per kube-state-metrics target
            result[data_missing.DESIRED].add(data_missing.agent_set(settings))
        for name in data_missing.NODE_METRICS:
            result.setdefault(name, set()).add(data_missing.CLUSTER_SET)
    field = period_field(catalog, settings) if periods else None
    if field:
        result.setdefault(field, set()).add((CLUSTER_DIMENSION,))
    nodes = node_mean_dimensions(settings)
    for name in sorted(per_cluster):
        result.setdefault(name, set()).add(readings_dimensions(settings))
        if nodes:  # each node's total and count of GPUs read (per_node_form), the readings past its LIMIT
            result[name].add(nodes)
    return result


def reads_by_cluster(dashboards: Iterable[Dashboard], alarms: Iterable[Alarm], catalog: Catalog,
                     settings: Settings) -> dict[str, dict[str, set[tuple[str, ...]]]]:
    """{cluster name: queried_sets of the cluster}, worked out once for the clusters alike in exporter.mig and in
    their Region's (Settings.for_clusters: one object per answer), which read alike: once where every cluster is."""
    dashboards, alarms = list(dashboards), list(alarms)
    regions: dict[str, list[Cluster]] = {}
    for each in settings.clusters:
        regions.setdefault(each.region, []).append(each)
    held = {region: settings.for_clusters(members) for region, members in regions.items()}  # once per Region
    worked: dict[tuple[int, int], dict[str, set[tuple[str, ...]]]] = {}
    result = {}
    for each in settings.clusters:
        key = (id(settings.for_clusters([each])), id(held[each.region]))
        if key not in worked:
            worked[key] = queried_sets(dashboards, alarms, catalog, settings, each)
        result[each.name] = worked[key]
    return result


def node_mean_kinds(dashboards: Iterable[Dashboard], catalog: Catalog,
                    settings: Settings) -> dict[str, tuple[str, ...]]:
    """{field: the kinds of a node's per scrape (NODE_MEAN_KINDS' marks: its total, its count of GPUs read) the fleet's
    values now read of it (per_node_form: a count the counts, a total the totals, a mean both)}: what the agent makes
    and publishes in the set node_mean_dimensions names, and `gpudash cost` prices; each kind is one metric per GPU
    node, so a kind no widget reads (the count of the field "Total power draw" totals) is billed for nothing. Empty on
    classic."""
    if node_mean_dimensions(settings) is None:
        return {}
    read: dict[str, set[str]] = {}
    for dashboard in dashboards:
        for panel in dashboard.panels():
            try:
                plan_ = panel_plan(panel, catalog, settings)
            except Unsupported:
                continue
            if readings_past_500(panel, plan_, catalog, settings):
                kind = PER_NODE_READ[panel.queries[0].aggregation][1]
                read.setdefault(plan_.metric, set()).update([kind] if kind else NODE_MEAN_KINDS)
    return {name: tuple(kind for kind in NODE_MEAN_KINDS if kind in kinds) for name, kinds in sorted(read.items())}


@dataclass(frozen=True)
class _MetricWidget:
    """A metric widget as it is in every cluster: `in_cluster` adds the cluster's Region and filter."""

    plan: Plan
    properties: dict[str, Any]  # all but region and metrics
    query: tuple[str, str]  # the Metrics Insights query before and after its cluster filter
    label: str
    position: dict[str, int]
    namespace: str  # the query's namespace: its PERIOD() metric's
    true_at: int | None = None  # a value that means now: the only period it is drawn at
    period_field: str | None = None  # the field whose [ClusterName] metric the PERIOD() line names (period_field())
    readings: str | None = None  # past 500 GPUs, the mean of the cluster's readings ({s}: their Sum, {c}: count)
    readings_set: tuple[str, ...] = (CLUSTER_DIMENSION,)  # the set they are read from (readings_dimensions)
    combined: int = SERIES_PER_QUERY  # the LIMIT of a query whose series combine into one line (combined_limit)
    bounded: bool = False  # past the LIMIT both forms read at most what is there (a count, a total): the larger shown
    per_node: str | None = None  # the value from a query of one series per node (per_node_form), over `q1`

    def in_cluster(self, cluster: Cluster) -> dict[str, Any]:
        expression = self.query[0] + self.plan.cluster_filter(cluster) + self.query[1]
        shown = self._shown
        if shown is None:
            metrics = [[{"expression": expression, "id": "q1", "label": self.label}]]
        else:
            metrics = [[{"expression": expression, "id": "q1", "label": self.label, "visible": False}]]
            if PERIOD in (self.plan.math or "") or self.true_at is not None:
                metrics.append(self._period_metric(cluster))
            if self.readings is not None:  # the per-cluster statistics the readings' form names ({s}, {c})
                once = list(ONCE_PER_GPU) if ONCE_PER_GPU[0] in self.readings_set else []
                metrics += [[self.namespace, self.plan.metric, CLUSTER_DIMENSION, cluster.name, *once,
                             {"id": identifier, "stat": stat, "visible": False}]
                            for identifier, stat, mark in zip(READINGS_IDS, ("Sum", "SampleCount"), ("{s}", "{c}"))
                            if mark in self.readings]
            metrics.append([{"expression": shown, "id": "e1", "label": self.label}])
        properties = {**self.properties, "region": cluster.region, "metrics": metrics}
        return {"type": "metric", "properties": properties, **self.position}

    @cached_property
    def _shown(self) -> str | None:
        """The expression the widget draws from its query `q1` (the same in every cluster), or None where it draws
        the query itself."""
        if self.plan.math is None and self.true_at is None:
            return None
        shown = self.per_node or ("q1" if self.plan.math is None else
                                  self.plan.math.format(q="q1", p=f"PERIOD({PERIOD_ID})"))
        if self.readings is not None:
            # Past 500 GPUs the query returns 500 of them: the mean of every reading of the cluster instead. A count
            # or a total of the query's series then misses GPUs it did not return, and the readings' one counts a
            # GPU read at some of the period's scrapes as a share: each is at most what is there, so the larger is
            # nearer (a node roll whose range passes the LIMIT with fewer GPUs in the cluster: the series' count)
            past = self.readings.format(s=READINGS_IDS[0], c=READINGS_IDS[1])
            if self.bounded:
                past = f"IF({shown} > {past}, {shown}, {past})"
            shown = f"IF(METRIC_COUNT(q1) < {self.combined}, {shown}, {past})"
        if self.true_at is not None:
            # A period picked in the console (Actions > Period override) replaces the widget's: the value of a
            # longer period is no longer now, so it is not drawn (a division by 0 drops the data point).
            shown = f"{_grouped(shown)} / (PERIOD({PERIOD_ID}) == {self.true_at})"
        return shown

    def _period_metric(self, cluster: Cluster) -> list[Any]:
        """A hidden metric line whose PERIOD() is the period the widget's query used: the user guide documents
        PERIOD for metrics, "not the results of other expressions" (a Metrics Insights query is one). It is the
        widget's field with the cluster's dimension; the console requests it with the widget's period, the one
        the dashboard's period selector or its automatic period sets, as it requests the query."""
        dimensions = [CLUSTER_DIMENSION, cluster.name] if CLUSTER_DIMENSION in self.plan.dims else []
        return [self.namespace, self.period_field or self.plan.metric, *dimensions, {"id": PERIOD_ID, "visible": False}]


def period_field(catalog: Catalog, settings: Settings) -> str | None:
    """The field whose metric per cluster ([ClusterName]) every widget's PERIOD() line names on the agent's metrics:
    the first collected of the fields every GPU reports (catalog.PRESENCE, GPU temperature first: the data-missing
    alarm's too), which queried_sets makes the agent publish with [ClusterName]. A widget's own field per cluster is
    published for none of them (its sets are per pod and per GPU), and CloudWatch documents PERIOD() for a metric,
    not what it gives for one without data. None on the Container Insights add-on (its widgets keep their own)."""
    if addon_source(settings):
        return None
    return next((name for name in PRESENCE if name in catalog), None)


def _period_line(panel: Panel, plan_: Plan, catalog: Catalog) -> bool:
    """Whether the panel's widget has a hidden PERIOD() line (as _MetricWidget.in_cluster writes one)."""
    query = panel.queries[0]
    return (plan_.math is not None and PERIOD in plan_.math) or _now_value(panel, query, catalog, plan_) \
        or _now_table(panel, query, catalog)


def _grouped(expression: str) -> str:
    """`expression` as one operand of a division: in parentheses unless it is an id or one call."""
    if _WORD.fullmatch(expression) or (_CALL.fullmatch(expression)
                                       and _balanced(expression[expression.index("(") + 1:-1])):
        return expression
    return f"({expression})"


_WORD, _CALL = re.compile(r"\w+"), re.compile(r"\w+\((.*)\)")


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def _metric_widget(panel: Panel, plan_: Plan, catalog: Catalog, settings: Settings,
                   position: dict[str, int]) -> _MetricWidget:
    query = panel.queries[0]
    label = series_label(plan_, query.per_pod, panel.title if not plan_.series else query.metric)
    if not plan_.series:
        # per-GPU lines combined by math: all of them the widget can read
        limit = combined_limit(panel, plan_, catalog, settings) if plan_.group else None
    else:
        limit = settings.cloudwatch.top_pods if query.per_pod else settings.cloudwatch.top_gpus
    rank, order = line_rank(query, plan_, catalog, _now_table(panel, query, catalog))
    past_500 = readings_past_500(panel, plan_, catalog, settings)
    if past_500 and query.aggregation == "sum":
        # past its LIMIT the larger of its series' total and the readings' is shown (_MetricWidget.bounded): ranked
        # by how many scrapes saw each, its series are the GPUs reporting longest in its range, those a node roll
        # keeps (ranked by the value, GPUs gone within the range took the places of GPUs there all along)
        rank, order = "COUNT", "DESC"
    true_at = None
    properties: dict[str, Any] = {
        "title": widget_title(panel, plan_, catalog, settings, limit),
        "view": VIEWS[panel.kind],
        "period": settings.cloudwatch.period,
        "stat": "Average",
        "yAxis": {"left": {"label": panel.shown_unit(catalog).label, "showUnits": False}},
        "legend": {"position": "bottom"},
    }
    for bound in ("min", "max"):
        if getattr(panel, bound) is not None:
            properties["yAxis"]["left"][bound] = getattr(panel, bound)
    if panel.kind == "gauge":  # a gauge widget needs both ends (lint CW009)
        low, high = panel.gauge_range(catalog)
        if high is None:
            raise InputError(f"panel {panel.title!r}: a CloudWatch gauge needs a range, and "
                             f"{panel.shown_unit(catalog).label} has no top of its own",
                             where=panel.defined_at, hint="write max= on the panel (and min=: 0 unless written), draw "
                                                          "it as a stat, or publish the dashboard to Grafana only "
                                                          "(backends=(\"grafana\",)), whose gauge scales to its values")
        properties["yAxis"]["left"].update(min=low, max=high)
    if panel.thresholds:
        warning, critical = panel.thresholds
        properties["annotations"] = {"horizontal": [
            {"label": "warning", "value": warning, "color": WARNING_COLOUR},
            {"label": "critical", "value": critical, "color": CRITICAL_COLOUR}]}
    if _now_value(panel, query, catalog, plan_):
        # A gauge's value now (a total, count, mean or extreme over GPUs), as Grafana's instant query of the same
        # title: the latest whole minute the console draws. The widget's period is the shortest
        # CloudWatch keeps for these metrics (a minute, or whole scrape intervals), its own range a few of them;
        # with live data off (no generated widget turns it on) the console draws a period a minute after it
        # ended, so the period still filling (at its start + 10 s it holds the GPUs scraped in those 10 s) is
        # never the value. A GPU that stopped reporting before that minute is not in it.
        properties["period"] = true_at = now_period(settings)
        properties["start"] = _relative(NOW_PERIODS * now_period(settings))
    elif _now_table(panel, query, catalog):
        # A table of pods now: a row per pod a scrape named on a GPU in the latest whole period the console draws,
        # a period as long as the look-back of Grafana's per-pod panels (table_period). Its own range starts a
        # period and a minute before now (TABLE_START): its periods run from its start, so its first ends a minute
        # before now (up to a minute earlier, the range's start rounded down to the minute), the latest the console
        # draws with live data off, and the one still filling is not drawn, so the table has one column. Two
        # periods before now, the first period ended a period before now and was drawn while the one after it
        # waited for its minute: the table read the look-back 240 to 120 s ago at 30 s scrapes, listing a pod
        # 2 minutes after it came. Read as one period of the last 5 minutes, it listed a pod that left in them;
        # read a minute at a time, it left out pods named in turn on a GPU they share.
        properties["period"] = true_at = table_period(settings)
        properties["start"] = _relative(table_period(settings) + TABLE_START)
    elif panel.kind in SINGLE_VALUE_KINDS and _whole_range(query, catalog, plan_):
        properties["setPeriodToTimeRange"] = True  # an increase over the selected range, as Grafana's $__range
    elif query.as_increase and _whole_range(query, catalog, plan_):
        # An increase per line over the selected range (as Grafana's increase over $__range): one bar per
        # line, its period the whole range (setPeriodToTimeRange applies to bar and pie views).
        properties["view"] = "bar"
        properties["setPeriodToTimeRange"] = True
    readings = readings_form(query, catalog, settings, _scale(plan_, settings)) if past_500 else None
    per_node = per_node_form(plan_, query, settings, limit) if past_500 else None
    return _MetricWidget(plan_, properties, per_node[0] if per_node else
                         plan_.around_cluster(settings, order=order, limit=limit, rank=rank),
                         label, position,
                         plan_.namespace or settings.cloudwatch.namespace, true_at,
                         None if plan_.namespace else period_field(catalog, settings), readings,
                         readings_dimensions(settings), limit if plan_.group and not plan_.series else SERIES_PER_QUERY,
                         query.aggregation in ("count", "sum"), per_node[1] if per_node else None)


# The math over a query of one series per node and kind (per_node_form), by the fleet value's aggregation: a count is
# the nodes' negated counts added (each node's MIN over the minute: its most GPUs read at one scrape); a total the
# nodes' totals (each their mean over the minute's scrapes) added; a mean their totals over their counts, from one
# query of both: totals are never below 0 and counts are negated, so SUM(ABS) + SUM is twice the totals and
# SUM(ABS) - SUM twice the counts (ABS of an array is an array, SUM of it one line).
PER_NODE_MATH = {"count": "0 - SUM(q1)", "sum": "SUM(q1)",
                 "avg": "(SUM(ABS(q1)) + SUM(q1)) / (SUM(ABS(q1)) - SUM(q1))"}
PER_NODE_READ = {"count": ("MIN", "count"), "sum": ("AVG", "sum"), "avg": ("AVG", None)}  # SELECT's, the kind read


def per_node_form(plan_: Plan, query: Query, settings: Settings, limit: int) -> tuple[tuple[str, str], str] | None:
    """(the query before and after its cluster filter, the math over it as `q1`) of a fleet value now
    (readings_past_500) on the OTel pipeline, which reads each node's total and count of GPUs read per scrape
    (cloudwatch_query.NODE_MEAN, made at the agent: render/agent_otel.node_means) instead of one series per GPU: a
    node's GPUs weigh whole however many of its scrapes arrived in the minute (a node that came or left within it, a
    failed scrape, two exporter pods reading it in a DaemonSet's surge), which over one series per GPU, ranked to its
    LIMIT, read 24.19 % for 27.90 % through a node roll of 496 GPUs. A GPU read at fewer of the minute's scrapes than
    its node (DCGM's blank at one, a GPU that came or left while its node reported on) weighs by its share of the
    node's readings (readings_note says so). Its series are nodes, ranked by how many scrapes saw each (the nodes
    reporting longest in the range, those a node roll keeps), to the same LIMIT; past it the readings' form. None on
    classic (nothing merges at its agent)."""
    dims = node_mean_dimensions(settings)
    if dims is None:
        return None
    function, kind = PER_NODE_READ[query.aggregation]
    group = (NODE_DIMENSION,) if kind else (NODE_DIMENSION, NODE_MEAN)
    nodes = replace(plan_, function=function, dims=dims, group=group)
    before, after = nodes.around_cluster(settings, order="DESC", limit=limit, rank="COUNT")
    if kind:  # the one kind the value reads (the cluster's filter comes first: every cluster's query has one)
        after = f" AND {quote_identifier(NODE_MEAN)} = {quote_string(NODE_MEAN_KINDS[kind])}{after}"
    return (before, after), PER_NODE_MATH[query.aggregation]


NOW_PERIODS = 4  # a now value's own range, in its periods: the minute drawn, the one filling, and room for both
# A table of pods now starts its own range this much before its period (a minute): with live data off the console
# draws a period once it ended at least a minute ago (user guide, "Use live data"), so its period is the latest it draws
TABLE_START = 60


def now_period(settings: Settings) -> int:
    """The period of a value that means now: a minute (EMF metrics are stored at one-minute resolution), or the
    least multiple of a minute that holds a whole number of a GPU's observations (scrapes, or the add-on's
    collections: observed_every), so every GPU reports in it, and at least two of them: a node whose scrape failed
    then has another in the period, and reads whole, as on Grafana (its instant panels look back over 4 scrape
    intervals). Holding one (a scrape every 60 s: a minute), a failed scrape left the node out of the period drawn:
    "GPUs reporting" read 125 for 129 and "Total power draw" 32,081 W for 32,607 for a minute, where the header said
    such a node counts whole (tests/unit/test_cloudwatch_now_one_scrape.py). Not on the Container Insights add-on,
    whose values per collection and tables keep its collection's period: its fleet values read the cluster's
    observations over the collections a period holds (per_scrape), not a mean per GPU or node of what arrived, so a
    second collection in the period would not make a node whose collection failed whole: measured on the add-on's
    two nodes (6 GPUs, 963 W), its 4-GPU node's collection failing once reads "GPUs reporting" 2 and 401 W for a
    minute at 60 s, and 4 and 664.5 W for two minutes at 120 s. They read classic's per-GPU form now (node_* by
    NodeName and GpuDevice, each GPU's mean over the period: container_insights.fleet_per_gpu, with its own fallback
    past its LIMIT: readings_past_500), so the add-on's values hold two collections too: every single failed
    collection of the last 5 minutes reads the truth (tests/unit/test_container_insights_now_missed_collection.py).
    Its table of pods keeps its collection's period (table_period)."""
    every = observed_every(settings)
    period = collection_period(settings)
    if not every or period >= 2 * every:
        return period
    return 2 * period


def collection_period(settings: Settings) -> int:
    """A minute, or the least multiple of a minute that holds a whole number of a GPU's observations."""
    every = observed_every(settings)
    return math.lcm(60, every) if every else 60


def _now_value(panel: Panel, query: Query, catalog: Catalog, plan_: Plan) -> bool:
    """A single value of a gauge now ("GPUs reporting", "Total power draw", "Average GPU utilization", "Hottest
    GPU"): Grafana's panel of the same title is an instant query. Over the whole range a mean weighed a GPU there
    for 10 minutes of 6 hours like one there all along, and a maximum showed a spike long gone."""
    return panel.kind in NOW_VALUE_KINDS and not catalog.get(query.metric).is_counter


def table_period(settings: Settings) -> int:
    """The period of a table of pods now ("Pods on GPUs"): the least multiple of now_period covering the look-back
    of Grafana's per-pod panels and table (promql.label_lookback: 4 scrape intervals, 120 s at 30 s scrapes), so it
    lists every pod a scrape within that look-back named on a GPU, as its Grafana twin does. An exporter without
    KUBERNETES_VIRTUAL_GPUS names a GPU pods share by time-slicing under one of them per scrape, in turn: a minute
    holds two scrapes at 30 s, and listed 2 of 3 such pods. On the Container Insights add-on, its collection's period
    (collection_period: published under one of the pods sharing a GPU, its value a pod's GPUs per collection, which a
    longer period would read low for a pod that came or left within it; a pod whose collection failed in it is left
    out of it, and the header says so: now_note)."""
    if addon_source(settings):
        return collection_period(settings)
    period = now_period(settings)
    return -(-LABEL_LOOKBACK_SCRAPES * settings.scrape.seconds // period) * period


def readings_past_500(panel: Panel, plan_: Plan, catalog: Catalog, settings: Settings) -> bool:
    """A fleet value now ("GPUs reporting", "Total power draw", "Average GPU utilization", "Average GPU temperature")
    reads, past 500 GPUs, every reading of the cluster in its minute, from the set readings_dimensions names (on
    the OTel pipeline each GPU's reading once per scrape, on classic the field per cluster; readings_form): a GROUP BY query returns 500 series (a count read 500, a total the 500 highest),
    and no ORDER BY keeps the GPUs of the minute drawn through churn (ranked by the highest mean, GPUs that left took
    places; ranked by how many scrapes saw each, through a node roll the new GPUs were left out: 20 % for 40 %), and
    a widget holds one Metrics Insights query. Up to 500 it stays the count, total or mean of each GPU's mean. Not
    per pod (the per-cluster field holds idle GPUs too), nor with exporter.virtual_gpus for a field the exporter
    splits per process (a copy of it is a pod's share there: lint CW017 refuses such a field outside the per-pod
    sets); a device field's copies (temperature, power) are each the GPU's reading there, merged once per GPU as any
    other's (5,000 GPUs read 499 and 191,568 W for 1,237,500 where this was left out for every field). On the
    Container Insights add-on the node_ field per cluster (its per-GPU form: container_insights.fleet_per_gpu; its
    node_ metrics are the device's readings, its own exporter runs without KUBERNETES_VIRTUAL_GPUS)."""
    query = panel.queries[0]
    addon = addon_source(settings)
    return ((not plan_.namespace or addon) and bool(plan_.group) and not plan_.series
            and query.aggregation in ("avg", "count", "sum") and not query.per_pod and POD_DIMENSION not in plan_.dims
            and not (settings.exporter.virtual_gpus and query.metric in PER_PROCESS_FIELDS and not addon)
            and _now_value(panel, query, catalog, plan_))


def readings_per_gpu(settings: Settings) -> int:
    """How many readings one GPU read once per scrape gives in a now value's period: one per scrape."""
    return now_period(settings) // observed_every(settings)


def readings_form(query: Query, catalog: Catalog, settings: Settings, scale: float = 1.0) -> str:
    """The value past 500 GPUs (readings_past_500) from the field's Sum ({s}) and SampleCount ({c}) per cluster in
    the period drawn: a mean is Sum / SampleCount; a count of GPUs is the readings over those one GPU gives in the
    period (readings_per_gpu), a total the Sum over them. On agent.pipeline: classic a blank reading (DCGM's
    sentinel) may arrive: a period whose total only a blank explains is a gap, as the per-GPU form's guard makes it
    (a count reads no value: a blank is a GPU reporting). So on the Container Insights add-on, which publishes a field
    in its own unit: `scale` (bytes for MiB, percent for a ratio) divides it back, and the guard is scaled alike."""
    per_gpu = readings_per_gpu(settings)
    shown = {"avg": "{s} / {c}", "sum": "{s}" if per_gpu == 1 else "{s} / " + str(per_gpu),
             "count": "{c}" if per_gpu == 1 else "{c} / " + str(per_gpu)}[query.aggregation]
    if scale != 1 and query.aggregation != "count":
        shown = f"({shown}) / {number(scale)}"
    if (settings.agent.pipeline == "classic" or addon_source(settings)) and query.aggregation != "count":
        return "IF({s} < " + number(blank_floor(query, catalog) * scale) + ", " + shown + ")"
    return shown


def _scale(plan_: Plan, settings: Settings) -> float:
    """What the add-on publishes a fleet value's field in, over its own unit (its plan's divisor: the per-GPU form's
    math divides by it); 1 on the agent's metrics."""
    return plan_.divisor if addon_source(settings) and plan_.function != "COUNT" else 1.0


def _now_table(panel: Panel, query: Query, catalog: Catalog) -> bool:
    """A table of the pods (or GPUs) holding a gauge now ("Pods on GPUs")."""
    return panel.kind == "table" and not catalog.get(query.metric).is_counter


def line_rank(query: Query, plan_: Plan, catalog: Catalog, now_table: bool = False) -> tuple[str | None, str]:
    """(ORDER BY's function, its direction) for a widget's GROUP BY query: what a chart of one line per pod or GPU
    keeps past its LIMIT (a query returns the series its ORDER BY ranks first). A chart of a mean of how busy GPUs
    are (BUSY_FAMILIES) ranks by its lines' mean over the time range, as its title says. A gauge's other lines rank by
    their single highest reading in the time range (lowest for a minimum): a GPU that reached the top of the chart once
    is kept, where its mean would rank it below GPUs steady at a lower reading and the chart's top would be cut
    (Grafana's panel draws every line). A line that adds several series per scrape (a pod's GPUs on agent.pipeline:
    classic and on the add-on: a SUM of the period's observations) ranks so too, by the highest reading of one of
    them: ranked by the SUM over the time range, a line's rank grew with how long its pod ran (50 pods of 10,000 MiB
    for two hours cut one of 80,000 MiB started 5 minutes ago). A counter's increases, and counts, rank by
    themselves. A table of pods now (`now_table`: "Pods on GPUs") reads the minute drawn and the one still filling,
    which is not drawn: its rows rank by how many observations each has there (on the OTel pipeline one per pod and
    scrape), so a pod seen all along ranks above one that came in the minute still filling, whose row would be
    blank (ranked by its most GPUs, a pod of 8 GPUs that came there took a row from one of the minute drawn). None:
    the SELECT function."""
    if now_table and plan_.series:
        return "COUNT", "DESC"
    if plan_.group and not plan_.series and query.aggregation in ("avg", "count"):  # a mean or count over GPUs
        # Past 500 GPUs it combines the 500 ranked first: by the highest mean, GPUs that left within the range (a
        # value now reads 4 minutes) took places and the mean was the busiest remaining (104 that left at 95 % took
        # 104 of 500 places: 46 % for 40 %); ranked by how many scrapes saw each, GPUs reporting all along, whatever
        # they read. A total, maximum or minimum keeps ranking by the value: the GPUs it leaves out weigh least.
        return "COUNT", "DESC"
    low = query.aggregation == "min" or bool(plan_.series and _low_matters(query, catalog))
    order = "ASC" if low else "DESC"
    if plan_.series and plan_.function == "AVG" and order == "DESC" and _busy(query, catalog):
        # A chart of how busy each GPU or pod is, whose title says the least busy are not drawn (widget_title): its
        # lines rank by their mean over the time range. Ranked by one reading, a GPU busy for a moment (any kernel
        # reads 100 %) outranked one busy all along, and a pod at 90 % and 0 % on two GPUs (45 %) one at 50 %.
        return "AVG", order
    if plan_.series and plan_.function in ("AVG", "MAX", "MIN", "SUM") and not catalog.get(query.metric).is_counter:
        return ("MIN" if order == "ASC" else "MAX"), order
    return None, order


def _busy(query: Query, catalog: Catalog) -> bool:
    """A field that reads how busy a GPU is (BUSY_FAMILIES): an idle one reads the lowest."""
    return catalog.get(query.metric).family in BUSY_FAMILIES


BUSY_FAMILIES = ("utilization", "profiling")  # fields that read how busy a GPU is: an idle one reads the lowest
# Units of fields whose lowest readings are the ones a reader looks for: a GPU throttled (by power, heat or a fault)
# runs its clocks below the others', so a chart of one line per GPU keeps the lowest past its LIMIT (line_rank);
# ranked by the highest, the throttled GPUs were the ones cut. A clock's frequency, not the clocks family: its
# event and throttle reasons are bitmasks whose highest readings are the ones that matter.
LOW_UNITS = ("mhz",)


def _low_matters(query: Query, catalog: Catalog) -> bool:
    return catalog.get(query.metric).unit.key in LOW_UNITS


def idle_cut_first(query: Query, plan_: Plan, catalog: Catalog) -> bool:
    """A chart of one line per GPU or pod of how busy they are whose LIMIT leaves the idle ones out first: its lines
    rank by their mean or their highest reading (line_rank)."""
    return bool(plan_.series and plan_.group) and line_rank(query, plan_, catalog)[0] in ("AVG", "MAX") \
        and _busy(query, catalog)


def low_cut_last(query: Query, plan_: Plan, catalog: Catalog) -> bool:
    """A chart of one line per GPU or pod of a clock's frequency (LOW_UNITS) whose LIMIT leaves the highest out: its
    lines rank by their lowest reading (line_rank)."""
    return bool(plan_.series and plan_.group) and line_rank(query, plan_, catalog) == ("MIN", "ASC") \
        and _low_matters(query, catalog)


def widget_title(panel: Panel, plan_: Plan, catalog: Catalog, settings: Settings, limit: int | None) -> str:
    """The widget's title: the panel's, and for a chart of how busy each GPU or pod is that its query's LIMIT cuts
    from the idle end (idle_cut_first), or of clocks that it cuts from the fastest (low_cut_last), which lines it
    draws. Grafana's panel of the same title draws every GPU; on CloudWatch past the LIMIT the lines left out would
    go with nothing on the chart saying so (the header's "Lines drawn" paragraph is a screen away)."""
    query = panel.queries[0]
    if limit is None or _now_table(panel, query, catalog):
        return panel.title
    what = _lines_of(plan_, settings)
    if idle_cut_first(query, plan_, catalog):
        return f"{panel.title} (the {limit} {what} {CUT_TITLE}: past {limit}, {CUT_LEFT})"
    if low_cut_last(query, plan_, catalog):
        return f"{panel.title} (the {limit} {what} {LOW_CUT_TITLE}: past {limit}, {LOW_CUT_LEFT})"
    return panel.title


CUT_TITLE = "that read highest"  # what widget_title says of the lines a utilization chart draws
CUT_LEFT = "the least busy are not drawn"  # ... and of those its LIMIT leaves out
LOW_CUT_TITLE, LOW_CUT_LEFT = "that read lowest", "the fastest are not drawn"  # ... and of a clocks chart
_CUT_TITLE = re.compile(rf" \(the \d+ (?:pods|nodes|GPUs|GPUs or MIG instances|MIG instances|containers|namespaces|"
                        rf"clusters) "
                        rf"(?:{CUT_TITLE}: past \d+, {CUT_LEFT}|{LOW_CUT_TITLE}: past \d+, {LOW_CUT_LEFT})\)$")


def panel_title(title: str) -> str:
    """The panel's title of a widget titled `title` (widget_title's words on the lines drawn left out)."""
    return _CUT_TITLE.sub("", title)
_RANKED = {"MAX": "the highest single reading", "MIN": "the lowest single reading", "AVG": "the highest mean",
           "COUNT": "the most readings"}


def lines_note(query: Query, plan_: Plan, catalog: Catalog, settings: Settings, now_table: bool = False) -> str:
    """Which lines a chart of one line per pod or GPU draws (its query's LIMIT and ORDER BY), for its dashboard's
    header: Grafana's panel of the same title draws every pod or GPU. A line's rank is one reading where its point is
    a period's mean: no query ranks by the highest period mean, so a GPU that read high for one scrape outranks one
    steadily higher (63 GPUs at 50 W reading 400 W once, a period mean of 85 W, cut one at 300 W: the chart's top read
    85 W), and an idle GPU is the first cut; the note says both."""
    setting = "top_pods" if query.per_pod else "top_gpus"
    rank = line_rank(query, plan_, catalog, now_table)[0] or plan_.function
    what = _lines_of(plan_, settings)
    cap = f"at most {getattr(settings.cloudwatch, setting)} {what} (cloudwatch.{setting})"
    drawn = span(table_period(settings))
    if now_table and pod_total_kind(plan_.dims):  # one observation per pod and scrape
        return (f"{cap}, those seen at the most scrapes of the {drawn} drawn and the one still filling (past "
                f"{getattr(settings.cloudwatch, setting)}, one that left early in the {drawn} drawn may give its row "
                f"to one that came since, whose row is blank)")
    if now_table:  # one observation per GPU of the pod and scrape
        return (f"{cap}, those of the most readings (one per GPU and scrape) in the {drawn} drawn and the one still "
                f"filling: a pod that took GPUs in the one still filling counts them too (past "
                f"{getattr(settings.cloudwatch, setting)}, one of several GPUs may take a row, blank, from one of the "
                f"{drawn} drawn holding fewer)")
    said = []
    one = _ONE_LINE.get(what, "GPU")
    if rank == "SUM":
        ranked = "the largest increase"
    elif plan_.function == "SUM":  # a line adding several series per scrape, ranked by one of them
        ranked = f"{_RANKED[rank]} of one of {'their GPUs' if what == 'pods' else 'the series each adds up'}"
        said.append("one reading, not the total the line adds up")
    elif averages_gpus(plan_) and rank in ("MAX", "MIN"):  # a line's mean over GPUs, ranked by one of them
        ranked = f"{_RANKED[rank]} of one of their GPUs"
        higher = "higher" if rank == "MAX" else "lower"
        said.append(f"one GPU's reading, not the {one}'s mean the line draws: a {one} whose GPUs read far apart "
                    f"outranks one whose mean is {higher}")
    elif averages_gpus(plan_) and rank == "AVG":  # a line's mean over GPUs, ranked by its readings' mean
        ranked = f"{_RANKED[rank]} of their GPUs' readings"
    else:
        ranked = _RANKED[rank]
    if rank == "AVG" and _busy(query, catalog):
        said.append(f"an idle {one} ranks last, and one busy for a moment below one busy all along")
    if rank in ("MAX", "MIN") and not catalog.get(query.metric).is_counter:
        if rank == "MAX" and _busy(query, catalog):
            said.append(f"an idle {one} ranks last")
        if plan_.function != rank:  # a point is the period's mean (or its mean total), the rank one reading
            high, higher = ("high", "higher") if rank == "MAX" else ("low", "lower")
            said.append(f"as a point is its period's mean, a {one} that read {high} for a moment outranks one "
                        f"steadily {higher}")
    if rank in ("MAX", "AVG") and ARRAY_BLANK_NOTE in plan_.notes:
        # agent.pipeline: classic publishes DCGM's blank, a value above any reading: its mean over the range too
        said.append(f"a {one} with a reading of DCGM's blank in the time range ranks first, whatever it read else")
    after = f" ({', and '.join(said)})" if said else ""
    return f"{cap}, those of {ranked} in the time range shown{after}"


def averages_gpus(plan_: Plan) -> bool:
    """Whether each line of a chart is a mean over several GPUs' readings per scrape: a pod's (a node's, a
    namespace's) GPUs each an observation of its one series, averaged, where the line names no GPU (a line per GPU, or
    per GPU a pod holds, is that GPU's) and no total per scrape is read (a pod's total per scrape is one observation).
    Its ORDER BY MAX() or MIN() ranks it by one GPU's reading, not by its mean."""
    return plan_.function == "AVG" and bool(plan_.series) and plan_.gpu_series[1] not in plan_.series \
        and not pod_total_kind(plan_.dims)


def _lines_of(plan_: Plan, settings: Settings | None = None) -> str:
    """What one series of a GROUP BY query is: pods, GPU instances, nodes or GPUs (where `settings` say no GPU is
    split into MIG instances, exporter.mig: none, a GPU instance is a GPU, and a set of MIG instances alone's are
    MIG instances)."""
    group = set(plan_.group)
    if "pod" not in group and MIG_INSTANCE_LABEL in group and settings is not None and settings.no_mig:
        return "MIG instances" if MIG_PROFILE_LABEL in group else "GPUs"
    if POD_DIMENSION in group or ADDON_POD in group:
        return "pods"
    if MIG_INSTANCE_LABEL in group:
        return "GPUs or MIG instances"
    if plan_.gpu_series[1] in group:  # the GPU's index (on the add-on, its GpuDevice)
        return "GPUs"
    # a line per workload or node: each adds up (or takes the extreme of) its GPUs' series
    return next((words for key, words in _GROUP_WORDS if key in group), "GPUs")


# the dimensions naming a workload, a node or a cluster, the agent's and the add-on's, and what their lines are
_GROUP_WORDS = (("container", "containers"), (ADDON_CONTAINER, "containers"), (NAMESPACE_DIMENSION, "namespaces"),
                (ADDON_NAMESPACE, "namespaces"), (NODE_DIMENSION, "nodes"), (ADDON_NODE, "nodes"),
                (CLUSTER_DIMENSION, "clusters"))
_ONE_LINE = {"pods": "pod", **{words: words[:-1] for _, words in _GROUP_WORDS}}  # what one line of _lines_of's is


def combined_note(query: Query, plan_: Plan, catalog: Catalog, settings: Settings | None = None,
                  n: int = SERIES_PER_QUERY) -> str:
    """What a line combining a GROUP BY query's series (a fleet total, count or mean) reads past `n` of them (its
    LIMIT: combined_limit), said in its dashboard's header: a Metrics Insights query returns at most 500 series, those
    its ORDER BY ranks first."""
    what = _lines_of(plan_, settings)
    rank, order = line_rank(query, plan_, catalog)
    first = ("those seen at the most scrapes in its time range, whatever they read" if rank == "COUNT" else
             f"those of the {'lowest' if order == 'ASC' else 'highest'} value in its time range")
    return (f"combines at most {n} {what} of the cluster ({_returns(n)}, {first}): "
            f"past {n} it reads those {n} only (`gpudash cost` says when a cluster passes it)")


def _returns(n: int, budget: int = METRICS_PER_WIDGET) -> str:
    """Why a widget's query returns at most `n` series (its LIMIT: combined_limit); `budget`: the metrics the widget
    reads in all (ADDON_FLEET_METRICS for a fleet value now on the Container Insights add-on)."""
    if n == SERIES_PER_QUERY:
        return f"a Metrics Insights query returns {n} series"
    if budget != METRICS_PER_WIDGET:
        return (f"each of the fleet's values now reads at most {budget} metrics on the Container Insights add-on, "
                f"so that they and the dashboard's charts fit CloudWatch's {METRICS_PER_DASHBOARD:,} per dashboard, "
                f"{budget - n} of them its other metric lines, so its query returns {n} series")
    return (f"a widget reads at most {METRICS_PER_WIDGET} metrics, {METRICS_PER_WIDGET - n} of them its other metric "
            f"lines, so its query returns {n} series")


def combined_limit(panel: Panel, plan_: Plan, catalog: Catalog, settings: Settings) -> int:
    """The LIMIT of a widget combining its query's per-GPU series into one line (a fleet total, count or mean): the
    metrics a widget may read (CloudWatch's dashboard quotas: 500 per widget, 2,500 per dashboard, "all metrics
    retrieved for use in metric math functions", counted alike: a metric line one, a GROUP BY query its LIMIT;
    dashboard_limit.widget_metrics) less its other metric lines (the PERIOD() line, the readings' Sum and SampleCount
    past it: readings_form). LIMIT 500 beside them read 502 or 503. On the Container Insights add-on such a value
    reads ADDON_FLEET_METRICS in all (its overview holds five of them)."""
    others = int(_period_line(panel, plan_, catalog))
    if readings_past_500(panel, plan_, catalog, settings):
        others += sum(mark in readings_form(panel.queries[0], catalog, settings) for mark in ("{s}", "{c}"))
        if addon_source(settings):
            return ADDON_FLEET_METRICS - others
    return METRICS_PER_WIDGET - others


def readings_note(plan_: Plan, query: Query, settings: Settings, n: int = SERIES_PER_QUERY) -> str:
    """What a fleet value that reads every reading past 500 GPUs (readings_past_500) shows, for its header. On the
    OTel pipeline the agent publishes a GPU's reading once per scrape of its exporter, its copies merged
    (agent_otel.once_per_gpu); on classic each copy is one observation of the per-cluster metric, whoever wrote it:
    nothing in one query of it tells copies apart. The header names every way copies still count. `n`: the widget's
    LIMIT (combined_limit). On the Container Insights add-on its node_ field per cluster, a GPU's reading once per
    collection (its agent keeps one reading of a label set: a MIG GPU's first instance, MIG_ONE_INSTANCE)."""
    dims = readings_dimensions(settings)
    addon = addon_source(settings)
    seen, every = layout_of(settings).observation, observed_every(settings)  # a scrape or the add-on's collection
    where = ", ".join(dims) + (f": {ONCE_PER_GPU[1]}" if ONCE_PER_GPU[0] in dims else "")
    kind = "a GPU's reading once per scrape" if ONCE_PER_GPU[0] in dims else "the field published per cluster"
    drawn = span(now_period(settings))  # the period drawn: a minute, 120 s at 60 s scrapes, 300 s at 75 s
    scrapes = f"the minute's {seen}s" if drawn == "minute" else f"the {seen}s of the {drawn}"
    budget = ADDON_FLEET_METRICS if addon else METRICS_PER_WIDGET
    source = (f"({_returns(n, budget)}) {{}} of the cluster in the {drawn} ({kind}, "
              f"{plan_.metric} [{where}])")
    surge = "two exporter pods on its node each read it while the exporter's DaemonSet rolls with a surge"

    # the copies one exporter pod writes of a GPU: none where no GPU is split (exporter.mig: none) and the exporter
    # names a shared GPU under one pod at a time (no exporter.virtual_gpus)
    copies = "one per pod sharing it" if settings.no_mig else "one per MIG instance or per pod sharing it"
    copied = not settings.no_mig or settings.exporter.virtual_gpus

    def twice(verb: str) -> str:  # what a GPU read more than once in a scrape interval does, after ", and "
        if addon:  # (where no GPU is split the add-on reads a GPU once per collection: nothing to say)
            return "" if settings.no_mig else \
                f", and a GPU split into MIG instances {verb} once, as its first instance (the add-on keeps one)"
        return ", and " + _read_twice(verb)

    def _read_twice(verb: str) -> str:
        if ONCE_PER_GPU[0] in dims:
            return (f"a GPU read by two exporter pods at once {verb} once per pod (" + (
                    f"the copies one exporter pod writes of a GPU, {copies}, are merged at the agent, but {surge})"
                    if copied else f"{surge})"))
        return (f"a GPU read more than once per scrape {verb} once per copy (" + (
                f"the exporter repeats its reading {copies.replace('one per', 'once per')}, and {surge})" if copied
                else f"{surge})"))
    # the switch counts the query's series over the widget's time range, not the GPUs (nodes) of the cluster now
    per_node = node_mean_dimensions(settings) is not None  # its series are nodes (per_node_form)
    kinds = len(NODE_MEAN_KINDS) if per_node and query.aggregation == "avg" else 1  # a total and a count per node
    switch = -(-n // kinds)
    one, many = ("node", "nodes") if per_node else ("GPU", "GPUs")
    until = (f"while under {switch} {many} reported within the widget's time range (" +
             (f"its query returns two series per node, a total and a count, and " if kinds == 2 else "") +
             f"a {one} that left or came within it counts, so a node roll can reach {switch} with fewer in the "
             f"cluster), and from {switch} on ")
    if per_node:  # what one series per node reads, and what it weighs by its share
        verb = {"avg": "weigh", "count": "count", "sum": "add"}[query.aggregation]
        whole = (f"a node that came or left within the {drawn}, or whose scrape failed in it, {verb}s its GPUs whole, "
                 f"and two exporter pods reading a node at once (a DaemonSet's surge) {verb} them once")
        share = (f"a GPU read at fewer of the {drawn}'s scrapes than its node (DCGM's blank at one, or it came or left "
                 f"while its node reported on) {{}} the share of its node's scrapes that read it")
    if query.aggregation == "avg" and per_node:
        return (f"the mean over the GPUs reporting in the {drawn}: the nodes' totals of their GPUs' readings added, "
                f"over their counts of GPUs read added (each node's a mean over its scrapes in the {drawn}) ({whole}, but "
                f"{share.format('weighs by')}), {until}"
                + source.format("the mean of every reading")
                + f": a GPU weighs by its readings there, so one that came or left within the {drawn}, or whose "
                  f"node's scrape failed in it, weighs less than one read at every scrape" + twice("weighs"))
    if query.aggregation == "avg":
        return (f"the mean of each GPU's mean {until}"
                + source.format("the mean of every reading")
                + f": a GPU weighs by its readings there, so one that came or left within the {drawn}, or whose "
                  f"node's {seen} failed in it, weighs less than one read at every {seen}" + twice("weighs"))
    per_gpu = readings_per_gpu(settings)
    # (the count of readings per GPU in the latter)
    changed = f", and in the latter {INTERVAL_CHANGED.format(layout_of(settings).interval_setting)}"
    each = (f"the {per_gpu} readings one GPU gives there (one per {seen} of {every} s)"
            if per_gpu > 1 else f"the one reading one GPU gives there (a {seen} every {every} s)")
    if query.aggregation == "count":
        counted = (f": each node's most GPUs read at one scrape of the {drawn}, added over the nodes ({whole}, but "
                   f"two of a node's GPUs each missing from another of its scrapes (DCGM's blank there) count as one), "
                   if per_node else "")
        return (f"the number of GPUs reporting{counted or ' '}{until}"
                + source.format(f"the larger of two counts: the GPUs of those {n} {many if per_node else 'series'} "
                                f"reporting in the {drawn}, and the number of readings")
                + f" over {each}: every GPU is in the latter, but one that came "
                  f"or left within the {drawn}, or whose node's {seen} failed in it, counts as the share of "
                  f"{scrapes} that read it" + twice("counts") + changed)
    added = (f"the total of each node's GPUs' readings, a mean over its scrapes in the {drawn}, added over the nodes "
             f"({whole}, but {share.format('adds its mean times')}), " if per_node else "the total of each GPU's mean ")
    return (f"{added}{until}"
            + source.format(f"the larger of two totals: the {'totals' if per_node else 'means'} of those {n} "
                            f"{many if per_node else 'series'} reporting in the {drawn} added up, and the total of "
                            f"every reading")
            + f" over {each}: every GPU is in the latter, but one that came or "
              f"left within the {drawn}, or whose node's {seen} failed in it, adds its share of {scrapes} "
              f"that read it" + twice("adds") + changed)


def now_note(settings: Settings, who: str = "a GPU that stopped or started reporting", period: int | None = None,
             what: str = "") -> str:
    """What a now value (or, `period` and `what` given, a table of pods now: table_note) shows on CloudWatch, said
    in its dashboard's header: the latest whole period the console draws, which ended a minute ago or up to a period
    earlier (a now value's range, of NOW_PERIODS periods, starts at no set place on their grid), or, for the table,
    whose range starts a period and a minute before now, up to a minute earlier (its start rounded down to the
    minute)."""
    table = period is not None
    period = period or now_period(settings)
    stale = 60 + (TABLE_START if table else period) + period  # the most before now the period drawn may start
    every = observed_every(settings)
    once = (f", and as it holds one collection of each node (cloudwatch.addon_gpu_interval {every} s), a node whose "
            f"collection failed in it is left out of it (its GPUs not counted, added, averaged or compared there)"
            if addon_source(settings) and period == every else "")  # (now_period: not the agent's two scrapes)
    return (f"the latest whole period of {period} s{what} that ended at least a minute ago (the console draws a "
            f"period a minute after it ends, live data off): {who} within the last "
            f"{stale // 60} minutes may be counted as it was then{once}")


def table_note(settings: Settings) -> str:
    """What a table of pods now ("Pods on GPUs", table_period) shows on CloudWatch, said in its dashboard's header."""
    looked_back = ("" if addon_source(settings) else
                   f" (at least the {LABEL_LOOKBACK_SCRAPES} scrape intervals Grafana's per-pod panels look back "
                   f"over: every pod a scrape in it named on a GPU is listed, pods named in turn on a GPU they share "
                   f"included)")
    return now_note(settings, "a pod that left or took a GPU", table_period(settings), looked_back)


def _relative(seconds: int) -> str:
    """A widget's relative start `seconds` before now (ISO 8601 duration)."""
    return f"-PT{seconds // 60}M" if seconds % 60 == 0 else f"-PT{seconds}S"


def _whole_range(query: Query, catalog: Catalog, plan_: Plan) -> bool:
    """Values over the whole time range: a counter's increases (as Grafana's increase over $__range).

    Gauges' single values mean now (_now_value), rates the latest period; their normalisation assumes the
    widget's period.
    """
    return not plan_.needs_period and catalog.get(query.metric).is_counter and query.as_increase


def cloudwatch_panels(dashboard: Dashboard, catalog: Catalog, settings: Settings) -> Dashboard:
    """The dashboard without the panels CloudWatch cannot show truthfully (see unsupported_panels)."""
    return _without(dashboard, unsupported_panels(dashboard, catalog, settings))


def _without(dashboard: Dashboard, left_out: list[tuple[Panel, str]]) -> Dashboard:
    ids = {id(panel) for panel, _ in left_out}
    rows = [Row(row.title, [p for p in row.panels if id(p) not in ids]) for row in dashboard.rows]
    return Dashboard(dashboard.id, dashboard.title, rows, dashboard.description, dashboard.tags,
                     dashboard.backends, defined_at=dashboard.defined_at)


@dataclass(frozen=True)
class _Body:
    """A dashboard's body as it is in every cluster: only the header, each widget's Region and each
    query's cluster filter differ between clusters, so panels are planned and laid out once."""

    title: str
    description: str
    left_out: list[tuple[Panel, str]]
    widgets: list[dict[str, Any] | _MetricWidget]  # row titles as they are; metric widgets per cluster
    # Who drops DCGM blanks: "agent" (its OTel pipeline), "widgets" (the agent's JSON path publishes them: the
    # widgets' metric math), "addon" (the Container Insights add-on publishes them: the widgets' metric math)
    blanks: str
    notes: list[tuple[str, str]]  # (panel title, how its lines differ from the title on CloudWatch)
    kept: list[tuple[str, str]]  # (panel title, which of its lines a chart of one line per pod or GPU draws)
    period_follows: bool  # a widget's math divides by the period its query used (PERIOD of its hidden metric)
    now: list[tuple[str, int]]  # (title, the one period it is drawn at) of each value or table that means now
    observation: str = "scrape"  # what observes a GPU once on the dashboard's source (its layout's)
    # GPUs of its clusters may be split into MIG instances (not exporter.mig: none): the add-on's header says what it
    # publishes of one (MIG_ONE_INSTANCE)
    split: bool = True

    def in_cluster(self, cluster: Cluster, source: str) -> dict[str, Any]:
        header = (f"# {self.title} — {cluster.name}\n{self.description}\n\n"
                  f"Generated by gpudash from `{source}`. Edit the definition and re-apply; "
                  f"changes made here are overwritten.") + self._header_notes
        widgets: list[dict[str, Any]] = [{"type": "text", "x": 0, "y": 0, "width": 24, "height": HEADER_HEIGHT,
                                          "properties": {"markdown": header}}]
        widgets += [w.in_cluster(cluster) if isinstance(w, _MetricWidget) else w for w in self.widgets]
        return {"start": "-PT6H", "periodOverride": "inherit", "widgets": widgets}

    @cached_property
    def _header_notes(self) -> str:
        """The header after its first paragraph (the dashboard, its cluster and source): the same in every cluster."""
        header = ""
        if self.blanks == "agent":
            header += ("\n\nA reading DCGM could not take (its blank value, about 9.2e18 or 1.4e14) is dropped by the "
                       "CloudWatch agent before it is published: a GPU's line shows a gap there, pod, node and fleet "
                       "lines hold the GPUs that have a reading, and alarms never see it.")
        elif self.blanks == "widgets":
            header += ("\n\nA reading DCGM could not take (its blank value, about 9.2e18 or 1.4e14) is published by "
                       "the agent's JSON path (agent.pipeline: classic). " + _BLANK_WIDGETS + " A counter stuck on "
                       "the blank reads 0. Alarms cannot drop it. The default agent.pipeline: otel drops blanks in "
                       "the agent before they are published.")
        elif self.blanks == "addon":
            header += ("\n\nA reading DCGM could not take (its blank value, about 9.2e18 or 1.4e14; a GPU split into "
                       "MIG instances reads it for utilization on some exporter versions) is published by the "
                       "Container Insights add-on: its agent drops no reading by value, and its configuration has no "
                       "way to. " + _BLANK_WIDGETS + " A GPU that never reads a field (a MIG GPU's utilization "
                       "where its exporter writes the blank) leaves the fleet's mean, total and extreme of it empty. "
                       "Alarms cannot drop it: one firing above a threshold fires for such a GPU or pod, one firing "
                       "below it never does." + ("\n\n" + MIG_ONE_INSTANCE if self.split else ""))
        whole = any(isinstance(w, _MetricWidget) and w.properties.get("setPeriodToTimeRange") for w in self.widgets)
        header += "\n\n" + periods_note(self.period_follows, self.now, whole_range=whole,
                                          observation=self.observation)
        if self.notes:
            titles: dict[str, list[str]] = {}  # each note once, with the panels it holds for
            for title, note in self.notes:
                titles.setdefault(note, []).append(title)
            header += "\n\nOn CloudWatch: " + "; ".join(f"{', '.join(names)}: {note}"
                                                       for note, names in titles.items()) + "."
        if self.kept:
            kept: dict[str, list[str]] = {}
            for title, note in self.kept:
                kept.setdefault(note, []).append(title)
            header += (f"\n\n{LINES_KEPT} a chart of one line per pod or GPU draws the lines its query returns, "
                       f"those its ORDER BY ranks first, where Grafana's panel of the same title draws every one: "
                       + "; ".join(f"{_listed(names)}: {note}" for note, names in kept.items())
                       + ". A cluster of more pods or GPUs shows those only.")
        if self.left_out:
            left_out = "; ".join(f"{panel.title} ({why})" for panel, why in self.left_out)
            header += f"\n\nOn Grafana only: {left_out}."
        return header


def _prepared(dashboard: Dashboard, catalog: Catalog, settings: Settings) -> _Body:
    plans: dict[int, Plan] = {}
    left_out = []
    for panel in dashboard.panels():
        try:
            plans[id(panel)] = panel_plan(panel, catalog, settings)
        except Unsupported as exc:
            left_out.append((panel, str(exc)))
    shown = _without(dashboard, left_out)
    widgets: list[dict[str, Any] | _MetricWidget] = []
    for placed in layout(shown):
        position = {"x": placed.x, "y": placed.y + HEADER_HEIGHT, "width": placed.w, "height": placed.h}
        if isinstance(placed.item, Row):
            widgets.append({"type": "text", **position, "properties": {"markdown": f"## {placed.item.title}"}})
        else:
            widgets.append(_metric_widget(placed.item, plans[id(placed.item)], catalog, settings, position))
    blanks = "addon" if addon_source(settings) else "agent" if settings.agent.pipeline == "otel" else "widgets"
    notes = [(panel.title, note) for panel in shown.panels() for note in plans[id(panel)].notes]
    notes += [(panel.title, readings_note(plans[id(panel)], panel.queries[0], settings,
                                          combined_limit(panel, plans[id(panel)], catalog, settings))
               if readings_past_500(panel, plans[id(panel)], catalog, settings)
               else combined_note(panel.queries[0], plans[id(panel)], catalog, settings,
                                  combined_limit(panel, plans[id(panel)], catalog, settings)))
              for panel in shown.panels() if plans[id(panel)].group and not plans[id(panel)].series]
    notes += [(panel.title, now_note(settings)) for panel in shown.panels()
              if _now_value(panel, panel.queries[0], catalog, plans[id(panel)])]
    notes += [(panel.title, table_note(settings)) for panel in shown.panels()
              if _now_table(panel, panel.queries[0], catalog)]
    kept = [(panel.title, lines_note(panel.queries[0], plans[id(panel)], catalog, settings,
                                     _now_table(panel, panel.queries[0], catalog)))
            for panel in shown.panels() if plans[id(panel)].series and plans[id(panel)].group]
    period_follows = any(PERIOD in (plans[id(panel)].math or "") for panel in shown.panels())
    now = [(w.properties["title"], w.true_at) for w in widgets if isinstance(w, _MetricWidget) and w.true_at]
    return _Body(shown.title, shown.description, left_out, widgets, blanks, notes, kept, period_follows,
                 now, layout_of(settings).observation, split=not settings.no_mig)


_BLANK_WIDGETS = ("A widget of one line shows a gap for a period it falls in (a sum, mean or extreme over GPUs too) "
                  "while the blank outweighs the readings it is averaged with (a mean over many GPUs can show it as a "
                  "large value); a widget of one line per pod, node or GPU shows it as a value on that line "
                  "(CloudWatch's metric math documents no way to drop one point of an array of lines).")


# A widget's Metrics Insights query reads the latest two weeks of data only (user guide, "Metrics Insights quotas"): an
# increase over a longer time range counts its latest two weeks (tests/unit/test_cloudwatch_two_weeks.py, a strict
# xfail).
WHOLE_RANGE_HORIZON = ("up to two weeks (Metrics Insights reads a widget's latest two weeks only: over a longer time "
                       "range it counts the latest two weeks)")


def periods_note(period_follows: bool, now: list[tuple[str, int]], whole_range: bool = True,
                 observation: str = "scrape") -> str:
    """What a widget's period means, and what a period picked in the console does to it, for the header;
    `now`: (title, its own period) of each value or table that means now; `whole_range`: the dashboard has values
    over the whole time range (a counter's increase); `observation`: what observes a GPU once on the source (a
    scrape, the add-on's collection)."""
    periods: dict[int, list[str]] = {}  # the titles drawn at each period, in the widgets' order
    for title, period in now:
        periods.setdefault(period, []).append(title)
    text = ("Periods: each widget loads with its own period (the dashboard's period override is \"Do not override\"): "
            "a graph's point is the statistic over its period")
    if whole_range:
        text += ", an increase over the time range covers it whole " + WHOLE_RANGE_HORIZON
    if periods:
        text += ", and " + ", and ".join(f"{_listed(titles)} the latest whole {span(period)}"
                                         for period, titles in periods.items()) + " (below)"
    text += (". A period picked under Actions > Period override (Auto included) replaces every widget's: a graph's "
             "points become that period's statistic")
    if whole_range:
        text += " and an increase over the time range may show its latest period's instead"
    if period_follows:
        text += (f"; rates, and values per {observation}, stay true: they divide by the period each widget's query "
                 f"used (PERIOD() of a hidden metric of the widget)")
    for period, titles in periods.items():
        many = len(titles) > 1
        text += (f"; {_listed(titles)} {'are' if many else 'is'} drawn only at {'their' if many else 'its'} own "
                 f"period of {period} s (a longer one would count what left within it): pick \"Do not override\" to "
                 f"see {'them' if many else 'it'} again")
    return text + "."


def span(period: int) -> str:
    """A period of `period` seconds in a sentence: "minute", or "period of 300 s"."""
    return "minute" if period == 60 else f"period of {period} s"


def _listed(titles: list[str]) -> str:
    return ", ".join(f"\"{t}\"" for t in titles[:-1]) + (" and " if len(titles) > 1 else "") + f"\"{titles[-1]}\""


def body(dashboard: Dashboard, catalog: Catalog, settings: Settings, cluster: Cluster, source: str) -> dict[str, Any]:
    return _prepared(dashboard, catalog, settings.for_clusters([cluster])).in_cluster(cluster, source)


# A cluster name that a body's canonical text, both its escapes and a Metrics Insights string literal hold as itself
# (settings allow no other: 1 to 100 letters, digits, '_' or '-')
PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True, eq=False)
class ClusterBodies:
    """One CloudWatch dashboard as it is in every cluster: `body(cluster)` is its body in one, which shows the
    cluster's name and Region and nothing else of it (the clusters alike in those have one body)."""

    ready: _Body
    source: str
    publication: tuple[str, ...] | None  # the clusters a project's dashboard says published it; None: no project

    def body(self, cluster: Cluster) -> dict[str, Any]:
        body = self.ready.in_cluster(Cluster(cluster.name, cluster.region), self.source)
        # A project's dashboard says which settings published it (one project may span several files).
        return body if self.publication is None else with_publication(body, self.publication)


class PendingBody:
    """A cluster's body of a CloudWatch dashboard, rendered when it is first asked for (`rendered`) and then kept: what
    renders it (`made`: its ClusterBodies and the cluster). generate writes the clusters' bodies of one dashboard from
    one text (output.BodyStrings) and measures one of them (cloudformation.templates, limits): 1,000 clusters' 3,000
    bodies, each rendered whole, were 87 MB and some 7 % of that build's CPU, for dicts nothing read. It equals what
    it renders (a set read back from a build holds each body itself)."""

    __slots__ = ("made", "_body")

    def __init__(self, bodies: ClusterBodies, cluster: Cluster) -> None:
        self.made = (bodies, cluster)
        self._body: dict[str, Any] | None = None

    def rendered(self) -> dict[str, Any]:
        if self._body is None:
            self._body = self.made[0].body(self.made[1])
        return self._body

    @property
    def is_rendered(self) -> bool:
        return self._body is not None

    def __eq__(self, other: Any) -> bool:
        return self.rendered() == rendered(other)

    __hash__ = None  # (a dict's)


def rendered(body: Any) -> dict[str, Any]:
    """The body itself of one held as a build holds it: a PendingBody's, rendered now if it was not, else `body`."""
    return body.rendered() if type(body) is PendingBody else body


def dashboards(dashboards: tuple[Dashboard, ...], catalog: Catalog,
               settings: Settings) -> list[tuple[str, str, PendingBody, tuple[ClusterBodies, Cluster]]]:
    """(DashboardName, Region, body (rendered when first asked for), what makes the body: its ClusterBodies and
    cluster) for every cluster and CloudWatch dashboard, sorted by name."""
    publication = tuple(cluster.name for cluster in settings.clusters) if settings.project else None
    # the bodies as they are in the clusters alike in exporter.mig (what a header says of MIG GPUs)
    prepared = {cluster.name: ready for held, clusters in settings.mig_groups()
                for ready in [[(dashboard, ClusterBodies(_prepared(dashboard, catalog, held),
                                                         source_file(dashboard.defined_at), publication))
                               for dashboard in dashboards]]
                for cluster in clusters}
    result = []
    for cluster in settings.clusters:
        for dashboard, bodies in prepared[cluster.name]:
            name = cloudwatch_dashboard_name(settings.cloudwatch.dashboard_prefix, cluster.name, dashboard.id)
            pending = PendingBody(bodies, cluster)
            result.append((name, cluster.region, pending, pending.made))
    return sorted(result, key=lambda item: item[0])


def left_out_as_served(project) -> list[tuple[str, str]]:
    """(where, message) of each CloudWatch panel left out because the agent's JSON path would publish a field it reads
    as the exporter's image types it, unlike the bundled CSV (cloudwatch_query.served_unlike: the NVLink throughput's
    differences); its dashboard's header says it too. Empty on the Container Insights add-on and agent.pipeline: otel."""
    settings, catalog = project.settings, project.catalog
    if addon_source(settings):
        return []
    result = []
    for dashboard in project.cloudwatch_definitions():
        for panel in dashboard.panels():
            unlike = next(filter(None, (served_unlike(q.metric, catalog, settings) for q in panel.queries)), None)
            if unlike is not None:
                result.append((panel.defined_at, f"panel {panel.title!r} ({source_file(dashboard.defined_at)}) is left "
                                                 f"out of CloudWatch: {unlike}; {SERVED_UNLIKE_FIX}"))
    return result


def left_out_on_addon(project) -> list[tuple[str, str]]:
    """(where, message) of each CloudWatch panel and alarm left out because the add-on does not publish
    its fields or dimensions; empty on the Prometheus -> EMF source. Each planned as it is made in each part of the
    fleet (a dashboard for the clusters alike in exporter.mig, an alarm where made_parts makes it), the part named
    where it is left out of some alone (fleet_parts.said_where)."""
    settings, catalog = project.settings, project.catalog
    if not addon_source(settings):
        return []
    result = []
    groups = settings.mig_groups()
    for dashboard in project.cloudwatch_definitions():
        for panel in dashboard.panels():
            told = []
            for held, clusters in groups:
                try:
                    for query in panel.queries:
                        addon_plan(query, catalog, held, held.cloudwatch.period)
                except NotPublished as exc:
                    told.append((f"panel {panel.title!r} ({source_file(dashboard.defined_at)}) is left out of "
                                 f"CloudWatch{WHERE}: {exc}", clusters, None))
                except Unsupported:
                    continue  # left out for another reason, which the dashboard's header gives
            result += [(panel.defined_at, message) for message in said_where(settings, told)]
    for alarm in project.alarms:
        if alarm.stopped:
            continue  # on no CloudWatch source (lint AL027)
        told = []
        for held, clusters, region in made_parts(alarm, catalog, settings):
            try:
                alarm_plan(alarm, catalog, held)
            except NotPublished as exc:
                told.append((f"alarm {alarm.id!r} is left out of CloudWatch{WHERE}: {exc}", clusters, region))
            except Unsupported:
                continue  # generate refuses it with its file and line
        result += [(alarm.defined_at, message) for message in said_where(settings, told)]
    return result


def ranked_by_one_reading(project) -> list[tuple[str, str]]:
    """(where, message) of each chart of one line per pod whose line adds several series per scrape (a pod's GPUs
    on agent.pipeline: classic and on the Container Insights add-on, which publish one series per GPU) and so ranks
    them by one of them: Metrics Insights' ORDER BY takes a function of every observation of a series over the time
    range, and none of MAX, MIN, AVG, SUM or COUNT of a pod's GPUs' readings is the pod's total (a SUM grows with
    how long the pod ran). Past the chart's LIMIT a pod of many GPUs using the most can be cut: 50 pods of one GPU at
    20,000 MiB outrank one of 8 GPUs at 15,000 MiB each (120,000 MiB). agent.pipeline: otel publishes each pod's
    total per scrape, ranked by itself."""
    settings, catalog = project.settings, project.catalog
    fix = ("agent.pipeline: otel publishes each pod's total per scrape and ranks by it" if not addon_source(settings)
           else "the agent's source (cloudwatch.source: prometheus-emf) with agent.pipeline: otel publishes each "
                "pod's total per scrape and ranks by it")
    result = []
    groups = settings.mig_groups()  # each dashboard as made for the clusters alike in exporter.mig
    for dashboard in project.cloudwatch_definitions():
        for panel in dashboard.panels():
            told = []
            for held, clusters in groups:
                try:
                    plan_ = panel_plan(panel, catalog, held)
                except Unsupported:
                    continue
                query = panel.queries[0]
                if not (plan_.series and plan_.group and plan_.function == "SUM" and query.per_pod) \
                        or _now_table(panel, query, catalog) \
                        or line_rank(query, plan_, catalog)[0] not in ("MAX", "MIN"):
                    continue
                told.append((f"panel {panel.title!r} ({source_file(dashboard.defined_at)}){WHERE} ranks its pods by "
                             f"one GPU's reading, not the pod's total: past cloudwatch.top_pods "
                             f"({settings.cloudwatch.top_pods}) pods, a pod of many GPUs using the most can be left "
                             f"out; {fix}", clusters, None))
            result += [(panel.defined_at, message) for message in said_where(settings, told)]
    return result

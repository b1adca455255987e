"""The Metrics Insights limits a fleet passes, counted from the artifact set's own queries. Pure.

What the CloudWatch user guide documents, and what each limit counts:

* "A single query can process no more than 10,000 metrics. This means that if the SELECT, FROM, and WHERE
  clauses match more than 10,000 metrics, the query only processes the first 10,000 of these metrics that it
  finds" (Metrics Insights quotas, cloudwatch-metrics-insights-limits.html). What a query matches is the metrics
  of its SCHEMA in its cluster with data in the range it reads: every pod or GPU there now, and on a set that
  names pods every pod that ran within the range (a pod's metric stays one of its own while its data is in the
  range): a widget reads its own range (the dashboards' 6 hours, a value now's few minutes), an alarm its
  evaluation window (period x evaluation periods);
* "A single query can return no more than 500 time series" (the same page); an alarm on a GROUP BY query
  evaluates those 500, the first its ORDER BY ranks, and its EvaluationState is PARTIAL_DATA "if the Metrics
  Insights query returns more than 500 time series" or "matches more than 10,000 metrics" (alarms on Metrics
  Insights queries, alarm-limits.html);
* "You can have as many as 200 Metrics Insights alarms per Region" (both pages; a default quota, raised on
  request);
* 2,500 metrics per dashboard, at most 500 per widget, and the latest 3 hours an alarm evaluates depend on the
  configuration alone, not the fleet: generate refuses them before anything is written (limits.check_dashboards;
  render.alarms) and lint names them (CW011, CW003, AL009; AL006 the 200 alarms of the configured clusters).

The fleet is `cost.Fleet` (clusters alike: one cluster's queries stand for each, the first of each kind where the
clusters differ in exporter.mig); the counts are per cluster.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterable

from .catalog import MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL, MIG_UNSUPPORTED
from .cloudwatch_query import NODE_MEAN, NODE_MEAN_KINDS, SERIES_PER_QUERY, is_query, mig_only_set
from .container_insights_table import DEVICE as ADDON_GPU, NODE as ADDON_NODE, POD as ADDON_POD
from .markers import CLUSTER_DIMENSION, GPU_DIMENSION, NODE_DIMENSION, POD_DIMENSION
from .render.alarms import METRICS_INSIGHTS_ALARM_QUOTA
from .settings import mig_of

if TYPE_CHECKING:
    from .artifacts import Artifacts
    from .cost import Fleet
    from .project import Project
    from .settings import Settings

METRICS_PER_QUERY = 10_000  # Metrics Insights quotas: a query processes the first 10,000 metrics it matches
CONSOLE_RANGE = 3 * 3600  # a dashboard body without `start` opens on the console's default, 3 hours
POD_KEYS, GPU_KEYS, NODE_KEYS = {POD_DIMENSION, ADDON_POD}, {GPU_DIMENSION, ADDON_GPU}, {NODE_DIMENSION, ADDON_NODE}


@dataclass(frozen=True)
class Read:
    """One Metrics Insights query of the artifact set, as one cluster runs it."""

    who: str  # the alarm (its rule and severity) or the widget ("title" on <dashboard>)
    metric: str
    schema: tuple[str, ...]
    group: tuple[str, ...]
    seconds: int  # the range it reads: a widget's time range, an alarm's evaluation window
    alarm: bool  # an alarm's query (its contributors', or one its metric math reads), else a widget's
    regional: bool = False  # a fleet alarm: one query over every cluster of its Region
    apart: tuple[str, ...] = ()  # a fleet alarm's: the clusters of its Region its WHERE leaves out (`!=`)
    region: str | None = None  # a fleet alarm's Region (its share of that Region's clusters is counted there)
    each: int = 1  # metrics per object of its SCHEMA it matches (a node's total and count: two, or one its WHERE names)
    # where the fleet's clusters differ in exporter.mig and another kind of cluster does not run it: the clusters of
    # the kind that does (reads)
    only: tuple[str, ...] = ()
    namespace: str | None = None  # an alarm's: the namespace its query reads (the add-on's, or the agent's)

    @property
    def named(self) -> str:
        """Who runs it, and where when some kinds of cluster alone do."""
        return self.who + (f" (cluster{'s' if len(self.only) > 1 else ''} {', '.join(self.only)})" if self.only else "")


@dataclass(frozen=True)
class Matched:
    metrics: float  # metrics the query's SCHEMA holds with data in its range, in one cluster
    what: str  # what each is: a pod, a GPU ...


def _seconds(duration: str, default: int) -> int:
    """A dashboard's or widget's relative start (-PT6H, -PT4M, -PT90S) in seconds."""
    found = re.fullmatch(r"-PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?", duration or "")
    if not found or not any(found.groups()):
        return default
    hours, minutes, seconds = (int(g or 0) for g in found.groups())
    return hours * 3600 + minutes * 60 + seconds


def _parsed(expression: str):
    """A Metrics Insights query parsed, or None (metric math, or a query lint reports)."""
    from .lint.metrics_insights import QueryError, parse

    try:
        return parse(expression) if is_query(expression) else None
    except QueryError:
        return None


def reads(project: Project, artifacts: Artifacts) -> list[Read]:
    """The queries of the first cluster's dashboards and alarms, and of the fleet alarms of its Region (_cluster_reads);
    where the clusters differ in exporter.mig, those of the first cluster of each kind alike in it (their dashboards
    and alarms differ), a query some kinds alone run marked with their clusters (Read.only), and the fleet alarms of
    every Region (a Region mixing the kinds judges its clusters in two alarms, one alike in them in one: a fleet rule's
    alarms differ by Region)."""
    kinds = [clusters for _, clusters in project.settings.mig_groups()]
    alarms = list(alarm_reads(artifacts))  # (each alarm's query parsed once, whatever the kinds)
    each = [_cluster_reads(project, artifacts, clusters[0], alarms) for clusters in kinds]
    if len(each) == 1:
        return each[0]
    found: list[Read] = []
    for clusters, kind in zip(kinds, each):
        for read in kind:
            if read.regional or all(read in other for other in each):  # (a fleet alarm's name says its Region)
                if read not in found:
                    found.append(read)
            else:
                found.append(replace(read, only=tuple(cluster.name for cluster in clusters)))
    found += [read for _, named, read in alarms if not named and read not in found]
    return found


def _cluster_reads(project: Project, artifacts: Artifacts, cluster,
                   alarms: list[tuple[str, set[str], Read]]) -> list[Read]:
    """The queries of `cluster`'s dashboards and alarms, and of the fleet alarms of its Region (of `alarms`:
    alarm_reads)."""
    from .names import cloudwatch_dashboard_name
    from .render.cloudwatch import panel_title

    settings = project.settings
    names = {cloudwatch_dashboard_name(settings.cloudwatch.dashboard_prefix, cluster.name, d.id): d.id
             for d in project.cloudwatch_definitions()}
    found: list[Read] = []
    for dashboard in artifacts.cloudwatch_dashboards:
        if dashboard.name not in names:
            continue
        whole = _seconds(dashboard.body.get("start", ""), CONSOLE_RANGE)
        for widget in dashboard.body.get("widgets", []):
            properties = widget.get("properties", {}) if widget.get("type") == "metric" else {}
            for line in properties.get("metrics", []):
                options = line[-1] if line and isinstance(line[-1], dict) else {}
                query = _parsed(str(options.get("expression", "")))
                if query is not None:
                    # a fleet value's query per node reads its total and count, or the one its WHERE names
                    each = len(NODE_MEAN_KINDS) if NODE_MEAN in (query.schema or ()) \
                        and not any(dimension == NODE_MEAN for dimension, _, _ in query.where) else 1
                    found.append(Read(f"\"{panel_title(properties.get('title', ''))}\" ({names[dashboard.name]})",
                                      query.metric, tuple(query.schema or ()), tuple(query.group),
                                      _seconds(properties.get("start", ""), whole), False, each=each))
    prefix = f"{settings.alarms.name_prefix}-{cluster.name}-"
    for region, clusters, read in alarms:
        if clusters and clusters != {cluster.name} or not clusters and region != cluster.region:
            continue
        found.append(replace(read, who=read.who.removeprefix(prefix)))
    return found


def alarm_reads(artifacts: Artifacts) -> Iterable[tuple[str, set[str], Read]]:
    """(its Region, the clusters its WHERE names, the query) of each Metrics Insights query of the alarms: a fleet
    alarm's names none (it reads every cluster of its Region, but those its WHERE leaves out: Read.apart)."""
    for item in artifacts.alarms:
        request = item.request
        for metric in request.get("Metrics", []):
            query = _parsed(str(metric.get("Expression", "")))
            if query is None:
                continue
            named = [(op, value) for dimension, op, value in query.where if dimension == CLUSTER_DIMENSION]
            clusters = {value for op, value in named if op == "="}
            apart = tuple(value for op, value in named if op == "!=")
            window = int(metric.get("Period", request.get("Period", 60))) * int(request.get("EvaluationPeriods", 1))
            yield item.region, clusters, Read(request["AlarmName"], query.metric, tuple(query.schema or ()),
                                              tuple(query.group), window, True, regional=not clusters, apart=apart,
                                              region=None if clusters else item.region, namespace=query.namespace)


def read_here(settings: Settings, region: str, read: Read) -> list[str]:
    """The settings' clusters of `region` a fleet alarm's query reads: all but those its WHERE leaves out and, where
    its set is one of MIG instances alone, those saying exporter.mig: none (mig_only_set: nothing of theirs is
    there)."""
    mig_only = mig_only_set(read.schema)
    return [c.name for c in settings.clusters if c.region == region and c.name not in read.apart
            and not (mig_only and mig_of(settings, c) == "none")]


def unread_here(settings: Settings, region: str, read: Read) -> list[str]:
    """The settings' clusters of `region` a fleet alarm's query does not read (read_here)."""
    here = set(read_here(settings, region, read))
    return [c.name for c in settings.clusters if c.region == region and c.name not in here]


def matched(read: Read, fleet: Fleet) -> Matched:
    """The metrics `read` matches in one cluster: those of its set with data in its range."""
    clusters = max(fleet.clusters, 1)
    schema = set(read.schema)
    if MIG_PROFILE_LABEL in schema and not fleet.mig:
        return Matched(0, "MIG instances (none: the fleet's GPUs are whole)")
    if fleet.mig and read.metric in MIG_UNSUPPORTED and MIG_PROFILE_LABEL not in schema:
        return Matched(0, "whole GPUs (none: MIG does not report the field)")
    started = fleet.started_per_hour * read.seconds / 3600  # pods started within the range, fleet-wide
    what = objects(read.schema)
    count = {"pods": fleet.pods + started, "pod GPUs": fleet.pods + started, "GPU instances": fleet.instances,
             "GPUs": fleet.gpu_count, "GPU nodes": fleet.node_count}
    if what not in count:
        return Matched(read.each, what)
    return Matched(count[what] * read.each / clusters, f"{what}' totals and counts" if read.each > 1 else what)


def objects(schema: Iterable[str]) -> str:
    """What each metric of a SCHEMA is in one cluster: a pod's series, or its GPU's (instance's), one per pod, each
    holding one, with the pods started within the range a query reads (without KUBERNETES_VIRTUAL_GPUS the exporter
    names a shared GPU under one of its pods at a time, not always the same one: dcgm-exporter #340, so within a
    range every pod sharing it may have a series); a GPU instance; a GPU; a GPU node; or the cluster (one)."""
    schema = set(schema)
    if schema & POD_KEYS:
        return "pod GPUs" if schema & GPU_KEYS or MIG_INSTANCE_LABEL in schema else "pods"
    if MIG_INSTANCE_LABEL in schema:
        return "GPU instances"
    if schema & GPU_KEYS:
        return "GPUs"
    if schema & NODE_KEYS:
        return "GPU nodes"
    return "cluster"


def regional_reads(settings: Settings, artifacts: Artifacts) -> list[tuple[str, int, Read]]:
    """(Region, the settings' clusters there, the query) of each fleet alarm's query that matches one metric per pod,
    GPU or node of every cluster of its Region (METRICS_PER_QUERY counts them all: past it, the query processes the
    first it finds)."""
    return [(region, len(read_here(settings, region, read)), read) for region, clusters, read in alarm_reads(artifacts)
            if not clusters and objects(read.schema) != "cluster"]


def _minutes(seconds: int) -> str:
    return f"{seconds // 3600} h" if seconds % 3600 == 0 else f"{seconds // 60} min" if seconds % 60 == 0 \
        else f"{seconds} s"


def _listed(names: Iterable[str]) -> str:
    names = sorted(set(names))
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]


def _who(queries: list[Read]) -> str:
    """The alarms by name, the widgets by dashboard (a dashboard's widgets over one set read alike)."""
    dashboards: dict[str, int] = {}
    for read in queries:
        if not read.alarm:
            dashboard = replace(read, who=read.who.rsplit(" (", 1)[1].rstrip(")")).named
            dashboards[dashboard] = dashboards.get(dashboard, 0) + 1
    widgets = [f"{count} widget{'s' if count > 1 else ''} of {name}" for name, count in sorted(dashboards.items())]
    return _listed([r.named for r in queries if r.alarm] + widgets)


def notes(project: Project, artifacts: Artifacts, fleet: Fleet) -> list[str]:
    """Each documented Metrics Insights limit the fleet passes, with the queries that pass it and by how much."""
    found = reads(project, artifacts)
    regions = max(len({c.region for c in project.settings.clusters}), 1)
    per_region = math.ceil(max(fleet.clusters, 1) / regions)  # the fewest clusters the busiest Region holds
    nodes = "" if fleet.nodes is not None else " (one per GPU without --nodes)"

    # the fleet as each kind of cluster alike in exporter.mig has it (--mig-instances splits the GPUs of the clusters
    # that may be split alone), by the names of its clusters (Read.only)
    kinds = {tuple(c.name for c in clusters): fleet.of_kind(project.settings, clusters)
             for _, clusters in project.settings.mig_groups()}

    def count(read: Read) -> Matched:
        """What `read` matches in a cluster of its kind (Read.only), or the most in a cluster of any kind (named where
        another kind's matches fewer); a fleet alarm's, of the kinds of the clusters it reads (read_here), named by
        those clusters."""
        if read.only:
            one = matched(read, kinds[read.only])
        else:
            here = set(read_here(project.settings, read.region, read)) if read.region else None
            each = {names: matched(read, kind) for names, kind in kinds.items()
                    if here is None or here.intersection(names)} or \
                {names: matched(read, kind) for names, kind in kinds.items()}
            names, one = max(each.items(), key=lambda item: item[1].metrics)
            if any(other.metrics < one.metrics for other in each.values()):
                named = [name for name in names if here is None or name in here] or list(names)
                one = Matched(one.metrics, f"{one.what} in cluster{'s' if len(named) > 1 else ''} {', '.join(named)}")
        scale = per_region if read.regional else 1  # a fleet alarm reads every cluster of its Region
        if read.region:  # but those another alarm of its rule judges: the share of its Region's it reads (the Region
            # of the first cluster of a kind, which may not be the first cluster's)
            region = [c for c in project.settings.clusters if c.region == read.region]
            scale *= len(read_here(project.settings, read.region, read)) / max(len(region), 1)
        return Matched(one.metrics * scale, one.what + (nodes if one.what.startswith("GPU nodes") else ""))

    def series(read: Read) -> Matched:
        """The series a GROUP BY query returns: one per group, so what its keys name (the nodes of a query grouped
        by node, however many GPUs its set holds), never more than the metrics it matches."""
        kept = tuple(key for key in read.schema if key in read.group or key == MIG_PROFILE_LABEL)
        grouped, whole = count(replace(read, schema=kept)), count(read)
        return grouped if grouped.metrics < whole.metrics else whole

    result = []
    # GROUP BY alarms past 500 series: 500 evaluated (or read, where a query feeds the alarm's math), PARTIAL_DATA
    returned = [(series(r), r.named) for r in found if r.alarm and r.group]
    over = sorted(((s.metrics, s.what, who) for s, who in returned if s.metrics > SERIES_PER_QUERY),
                  key=lambda o: (-o[0], o[2]))
    if over:
        result.append("GROUP BY alarms past 500 series per cluster: "
                      + "; ".join(f"{who} {series:,.0f} {what}" for series, what, who in over)
                      + f" (in each alarm's window: those there and, per pod, those started in it): a Metrics "
                        f"Insights query returns at most {SERIES_PER_QUERY} series, so each alarm evaluates the "
                        f"{SERIES_PER_QUERY} its ORDER BY ranks first, never the rest, and reports PARTIAL_DATA")
    # queries past 10,000 metrics: the first 10,000 found, the rest in no value
    past: dict[tuple[float, str, int], list[Read]] = {}
    for read in found:
        counted = count(read)
        if counted.metrics > METRICS_PER_QUERY:
            past.setdefault((counted.metrics, counted.what, read.seconds), []).append(read)
    if past:
        alarmed = any(r.alarm for queries in past.values() for r in queries)
        result.append(f"queries past {METRICS_PER_QUERY:,} metrics per cluster: "
                      + "; ".join(f"{metrics:,.0f} {what} over {_minutes(seconds)} ({_who(queries)})"
                                  for (metrics, what, seconds), queries in sorted(past.items(), key=lambda p: (
                                      -p[0][0], p[0][1], -p[0][2])))
                      + f": a Metrics Insights query processes the first {METRICS_PER_QUERY:,} metrics its SCHEMA and "
                        f"WHERE match (per pod, every pod with data in its range, not only those running), so the rest "
                        f"are in no value" + (" and an alarm reports PARTIAL_DATA" if alarmed else ""))
    # Metrics Insights alarms per Region
    alarms = {(r.who, r.regional, r.only) for r in found if r.alarm}
    # a cluster's own: those every kind of cluster makes, and those of the kind that makes most of its own
    per_cluster = sum(1 for _, regional, only in alarms if not regional and not only) + \
        max(Counter(only for _, regional, only in alarms if not regional and only).values(), default=0)
    regional = len({who for who, regional, _ in alarms if regional})
    busiest = per_cluster * per_region + regional
    if busiest > METRICS_INSIGHTS_ALARM_QUOTA:
        result.append(f"{busiest:,} Metrics Insights alarms in a Region at least ({per_cluster} per cluster x "
                      f"{per_region:,} clusters" + (f" + {regional} of fleet scope" if regional else "")
                      + f", the {fleet.clusters:,} clusters spread over {regions} Region"
                      + ("s" if regions > 1 else "") + f"): the quota is {METRICS_INSIGHTS_ALARM_QUOTA} per Region "
                      f"(ask for an increase, or put fewer clusters in one Region); PutMetricAlarm refuses the rest")
    return result

"""Where DCGM metrics live in CloudWatch, and how a neutral query becomes a true CloudWatch query.

The agent config, the dashboards, the alarms, the lint and `verify` all ask this
module; none of them spells the namespace, the dimension sets or the statistics.

Two dimension sets are published (settings `cloudwatch.dimensions` and
`cloudwatch.gpu_dimensions`): the per-pod set (cluster, workload namespace, pod),
emitted only for samples of a GPU that a pod holds, and the per-GPU set (cluster,
node, GPU), emitted for every GPU, held or idle. Two more follow from them, for what MIG
needs, and carry only the fields queried with them:

* the per-instance set (the per-GPU set and GPU_I_ID): the agent's scrape job gives a GPU not split
  into MIG instances GPU_I_ID="none", so every GPU publishes it, a MIG GPU once per instance (on the
  OTel pipeline only fields MIG reports per instance: a device counter is merged over a GPU's instances
  into one series per physical GPU; on classic device counters too, once per instance). Fields
  a MIG GPU's instances add up (framebuffer) are read from it: under the per-GPU set alone a MIG
  GPU's instances, and the pods that share a GPU by time-slicing, are observations of one metric
  that no statistic adds up once each;
* the MIG per-pod and per-GPU sets (those sets and GPU_I_PROFILE), which only MIG instances carry:
  an alarm on a field MIG does not report (GPU utilization) watches MIG pods and GPUs through the
  field that stands in for it there (graphics engine activity), in a second alarm (see mig_plan).

A MIG GPU, and a GPU that pods share by time-slicing, writes several series of one GPU: device fields
(power, temperature, counters) repeat on each. Per GPU, averages and extremes of the observations are
the GPU's value, and a counter's increase is the sum of its deltas per GPU instance (_instance_increase:
exact over missed scrapes, one line per MIG instance; the OTel pipeline merges the pods' copies of a GPU's
counter into one series, agent.pipeline: classic reads k times the increase on a GPU k pods time-slice);
across GPUs, lines are those per-GPU-instance sums combined by metric math (exact too). A mean of per-GPU
increases or rates per pod or node, or in an alarm (no math), has no exact form (the mean delta per scrape
reads n / (n - m) of it when m of a period's n scrapes are missed) and is refused.

Metrics Insights aggregates *observations* (one per scrape and GPU) in each period,
and the agent sends counters as per-scrape deltas. `plan()` turns a neutral query
into a Metrics Insights SELECT plus, where needed, one metric-math expression, so
that the number shown is what the title says:

* gauge avg / min / max: the function over the observations (each GPU weighs the same);
* gauge sum / count over GPUs: per-GPU series summed by metric math when one line is
  wanted; per group, SUM / COUNT divided by the observations one GPU makes per period
  (period / scrape interval);
* counter increase: SUM(delta) over the period (per GPU: per GPU instance; over GPUs: those sums
  combined by metric math); counter rate: the same over the period's length, PERIOD().

DCGM's blank sentinels (see blank_floor) from exporters that pass them through are dropped in
the agent by the default OTel pipeline (render/agent_otel.py): there widgets carry no blank guard.
On the classic pipeline (`agent.pipeline: classic`) they reach CloudWatch: nothing on that way drops a
sample by value (the scrape job relabels labels only, the agent drops only NaN and infinities, Metrics
Insights filters on dimensions only); so do they on the Container Insights add-on (container_insights:
its pipeline filters by name only, and its configuration cannot add a filter). There a widget that shows
one line drops (blanks_dropped, one form for both), with the
documented `IF(value < floor, value)`, a period whose value only a blank can produce (a pod, node or fleet
line with one blank GPU, per-GPU lines combined by math included, shows a gap for that period, and a
field that one GPU never reads leaves its fleet line empty), as long as the blank averaged with its
GPU's other observations of the period stays above the floor (the bounds are at blank_floor; a mean over GPUs
is guarded through their total, so the number of GPUs does not dilute it; the add-on's fleet mean is one query of its
per-cluster set, whose observations of every GPU count against the bound). A GROUP BY widget's lines (an array) are shown
unguarded: IF and comparisons take no array, arithmetic combines an array only with a number or one
series, and no chain of the functions documented on arrays (ABS, FLOOR, CEIL, FILL, LOG, ...) applied to
the array alone is its value at a reading and a division by zero at a blank; the header notes such
widgets (ARRAY_BLANK_NOTE) and so does lint (CW015). Alarms take no metric math (a GROUP BY alarm
evaluates the query itself), so they cannot drop blanks.

Combinations CloudWatch cannot compute truthfully (for example the largest per-GPU
increase inside each pod) raise `Unsupported`; dashboards leave such panels out of
CloudWatch and say so, alarms refuse them at generate time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache
from typing import Callable, Iterable

from .blanks import INCREASE_FLOOR, READING_FLOOR, UNREAD_AT_ZERO
from .catalog import (MIG_INSTANCE_LABEL, MIG_MEMORY_SHARES, MIG_PROFILE_LABEL, MIG_UNSUPPORTED, PER_PROCESS_FIELDS,
                      PER_PROCESS_COPIES_ADDED, per_process_copies_added,
                      Catalog, image_served_kind, per_device_headroom)
from .derived_sets import derived, mig_only, with_instance
from .markers import CLUSTER_DIMENSION, GPU_DIMENSION, NAMESPACE_DIMENSION, NODE_DIMENSION, POD_DIMENSION
from .model import WORKLOAD_KEYS, Query
from .series_labels import MAX_DIMENSIONS
from .settings import Cluster, Settings


def is_query(expression: str) -> bool:
    """A Metrics Insights query (SELECT ...), not metric math."""
    return expression.lstrip().upper().startswith("SELECT")

MI_FUNCTIONS = {"avg": "AVG", "max": "MAX", "min": "MIN", "sum": "SUM", "count": "COUNT"}
STATISTICS = {"avg": "Average", "max": "Maximum", "min": "Minimum", "sum": "Sum", "count": "SampleCount"}
DASHBOARD_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
# Metrics Insights quotas (user guide, cloudwatch-metrics-insights-limits.html): "A single query can return no
# more than 500 time series"; an alarm's query returning more is evaluated PARTIAL_DATA (alarm-limits.html).
SERIES_PER_QUERY = 500  # Metrics Insights returns at most 500 series
ALARM_WINDOW_SECONDS = 3 * 3600  # a Metrics Insights alarm evaluates the latest 3 hours of data
# PutMetricAlarm's Period (botocore): "An alarm's total current evaluation period can be no longer than seven days, so
# Period multiplied by EvaluationPeriods can't be more than 604,800 seconds. For alarms with a period of less than one
# hour (3,600 seconds), the total evaluation period can't be longer than one day (86,400 seconds)."
EVALUATION_SECONDS, SHORT_PERIOD_EVALUATION_SECONDS, SHORT_PERIOD = 7 * 86400, 86400, 3600


def evaluation_limit(period: int) -> tuple[int, str]:
    """(the most seconds PutMetricAlarm takes for Period x EvaluationPeriods at `period`, that limit in words)."""
    if period < SHORT_PERIOD:
        return SHORT_PERIOD_EVALUATION_SECONDS, "a day where the period is under an hour"
    return EVALUATION_SECONDS, "seven days"


# A value at or above these floors can only come from a DCGM blank sentinel: about 2**63 (9.2e18) for
# integer fields, 2**47 (1.4e14) for floating-point ones (power, the profiling ratios). No real
# reading, nor a line's total, of a temperature, clock, power, share or MiB reaches 1e9, nor a
# per-second rate 1e14. A floor drops a blank only while the blank, averaged with the other
# observations of its period, stays above it, so each holds within a bound, not for every period:
# * gauges in small units (1e9): a float blank averaged with at most 140,000 observations (2**47 / 1e9),
#   e.g. one GPU's 10 s scrapes over the two weeks a Metrics Insights widget reads (an integer blank holds
#   over 9e9 observations); a mean over GPUs is guarded through the GPUs' total (plan), so it is one GPU's
#   observations that count, not the line's;
# * gauges in large units (bytes, counts, totals since boot; 1e14): integer fields, whose blank holds
#   averaged with at most 92,000 observations;
# * counter rates (1e14 per second): the blank's delta (2**63 minus the reading) divided by the seconds
#   of observations averaged, so at most 92,000 s of them (2**63 / 1e14): one GPU's period up to about
#   25 hours (periods are at most 1 hour, and rate widgets never take the whole time range); a mean rate
#   over GPUs is guarded through their total rate, which holds the blank GPU's whole;
# * counter increases (1e18): a SUM of deltas (one GPU's increase, a sum over GPUs) holds the blank's delta
#   whole, above it whatever the period or time range; a mean increase over GPUs is guarded through their
#   total, which holds it whole too.
# A rate shown in a scaled unit (ns per second as a share of time) is compared in that unit: the
# per-second floor times the unit's scale. The Prometheus side needs no such bound: a counter gives no
# data for a window that holds a blank (generator/promql.py).
SMALL_UNITS_BLANK_FLOOR = 1e9
# readings that may pass 1e9: bytes, counts, and totals since boot (mJ, ns) a CSV may call gauges
LARGE_UNITS = ("byte", "bytes_per_s", "count", "count_per_s", "millijoule", "nanosecond", "microsecond")


def blank_floor(query: Query, catalog: Catalog) -> float:
    """The value at or above which a period of `query` can only hold a DCGM blank."""
    field = catalog.get(query.metric)
    if field.is_counter:
        return INCREASE_FLOOR if query.as_increase else READING_FLOOR * field.unit.rate_scale
    return READING_FLOOR if field.unit.key in LARGE_UNITS else SMALL_UNITS_BLANK_FLOOR


class Unsupported(ValueError):
    """CloudWatch cannot compute this query truthfully from the published dimension sets; `fix`, what the user can
    write instead that CloudWatch computes (None or "": nothing but another condition, which the caller says of every
    refusal)."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix

    def with_fix(self) -> str:
        """The refusal and its fix in one sentence, as a dashboard's note on a panel left out says it."""
        return f"{self}; {self.fix}" if self.fix else f"{self}"


NO_MIG_INSTANCES = (f"the settings say no GPU is split into MIG instances (exporter.mig or clusters[].exporter.mig: "
                    f"none), and a query per MIG instance reads MIG instances only ({MIG_PROFILE_LABEL}, which they "
                    f"alone carry): it would read nothing, as its Prometheus query, which reads the series with a MIG "
                    f"instance, does")


class NoMigInstances(Unsupported):
    """A query per MIG instance (a set naming GPU_I_PROFILE, which MIG instances alone carry) where no GPU is split into
    MIG instances (exporter.mig: none): it reads nothing for good. A dashboard leaves the panel out of CloudWatch and
    says so; an alarm is refused, and where the fleet's clusters differ in exporter.mig made only in the clusters whose
    GPUs may be split (render/alarms.made_parts: its Prometheus rule fires nowhere else either)."""


def pod_dimensions(settings: Settings) -> list[str]:
    return list(settings.cloudwatch.dimensions)


def gpu_dimensions(settings: Settings) -> list[str]:
    return list(settings.cloudwatch.gpu_dimensions)


def pod_gpu_dimensions(settings: Settings) -> list[str]:
    """Per GPU a pod holds: the per-pod set and the GPU's index (a pod's GPUs are on its node). Published only for
    the fields queried with it (the idle alarm judges each GPU of a pod on its own)."""
    pods = pod_dimensions(settings)
    return pods if GPU_DIMENSION in pods else [*pods, GPU_DIMENSION]


def instance_dimensions(settings: Settings) -> list[str]:
    """Per GPU instance: a MIG instance, or a whole GPU (GPU_I_ID "none", set by the agent's scrape job)."""
    return with_instance(gpu_dimensions(settings))


def explored_sets(settings: Settings) -> list[list[str]]:
    """The sets that carry every shipped field with agent.metric_selection: all (per pod, per GPU)."""
    return [pod_dimensions(settings), gpu_dimensions(settings)]


def mig_instance_dimensions(settings: Settings) -> list[str]:
    """Per MIG instance, with its profile: MIG instances only (panels per MIG instance)."""
    return mig_only(instance_dimensions(settings))


def mig_only_set(dims: Iterable[str]) -> bool:
    """A dimension set no cluster saying exporter.mig: none publishes a metric in: one naming GPU_I_PROFILE, which
    MIG instances alone carry (derived_sets.mig_only). Such a cluster's agent declares no such set (a query per MIG
    instance is NoMigInstances there, and agent.metric_selection: all adds the per-pod and per-GPU sets alone), and
    the agent emits a set only for a sample that carries each of its dimensions, which a whole GPU's never does. A
    query over it reads none of those clusters whatever its WHERE says."""
    return MIG_PROFILE_LABEL in dims


def dimension_sets(settings: Settings) -> list[list[str]]:
    """Every dimension set the agent may publish: per pod, per GPU, then the sets derived from them
    (derived_sets: per GPU instance, and the MIG-only per-pod, per-GPU and per-MIG-instance sets), and on the
    OTel pipeline the sets of a pod's totals per scrape; all but the first two carry only the fields queried
    with them."""
    totals = [*(pod_total_dimensions(settings, kind, per_gpu) for per_gpu in (False, True) for kind in POD_TOTALS),
              *(node_total_dimensions(kind) for kind in NODE_TOTALS)] if settings.agent.pipeline == "otel" else []
    return explored_sets(settings) + derived({"dimensions": pod_dimensions(settings),
                                              "gpu_dimensions": gpu_dimensions(settings)}) + totals


def dimensions(settings: Settings) -> list[str]:
    """The per-pod dimension set (kept for callers that name one set)."""
    return pod_dimensions(settings)


# A pod's total per scrape, which the OTel pipeline (agent.pipeline: otel) makes at the agent from one node's
# scrape (render/agent_otel.pod_totals) and publishes under the pod's name and one of these marks
# (dimension: value), which no scraped series carries: the sum of a gauge over the pod's GPUs, and how many
# GPUs the pod holds; and the same per GPU the pod holds (POD_GPU_TOTALS, the set naming the GPU too: a pod's MIG
# instances of one GPU, or its copy of a GPU pods share, read per scrape as the pod's GPU once).
POD_TOTALS = {"sum": ("pod_total", "sum"), "count": ("pod_gpus", "count")}
POD_GPU_TOTALS = {"sum": ("pod_gpu_total", "sum"), "count": ("pod_gpu_count", "count")}
# A node's total per scrape, made the same way from one scrape of its exporter (each GPU once) and published under the
# cluster, the node and one of these marks: a widget's or alarm's count or total per node reads its AVG (a count its
# MAX), the mean of the totals of the scrapes that arrived (_plan), where a COUNT or SUM over the period's scrapes read
# a failed scrape, or a node added or removed inside the period, as part of its GPUs, and two exporter pods scraping the
# node at once (a DaemonSet rolling with a surge) as twice them (a user's framebuffer per node, 174,000 MiB for 87,000:
# tests/unit/test_cloudwatch_surge_pod_totals.py).
NODE_TOTALS = {"sum": ("node_total", "sum"), "count": ("node_gpus", "count")}


def pod_total_dimensions(settings: Settings, aggregation: str, per_gpu: bool = False) -> list[str]:
    """The set of a pod's total per scrape (`aggregation`: sum or count): the cluster, the pod by namespace and
    name (not the other names cloudwatch.dimensions may add: a GPU's would split the total per GPU) and the
    total's mark; `per_gpu`: the pod's total per GPU it holds, the GPU's index too and its own mark."""
    if per_gpu:
        return [CLUSTER_DIMENSION, NAMESPACE_DIMENSION, POD_DIMENSION, GPU_DIMENSION, POD_GPU_TOTALS[aggregation][0]]
    return [CLUSTER_DIMENSION, NAMESPACE_DIMENSION, POD_DIMENSION, POD_TOTALS[aggregation][0]]


def node_total_dimensions(aggregation: str) -> list[str]:
    """The set of a node's total per scrape (`aggregation`: sum or count): the cluster, the node and the mark."""
    return [CLUSTER_DIMENSION, NODE_DIMENSION, NODE_TOTALS[aggregation][0]]


def node_total(dims: tuple[str, ...] | list[str]) -> bool:
    """Whether `dims` is the set of a node's total per scrape (one metric per node)."""
    return any(mark in dims for mark, _ in NODE_TOTALS.values())


def pod_total_kind(dims: tuple[str, ...] | list[str]) -> str | None:
    """sum or count when `dims` is the set of a pod's (or a node's) total per scrape (or per GPU it holds), else
    None."""
    return next((kind for marks in (POD_TOTALS, POD_GPU_TOTALS, NODE_TOTALS) for kind, (mark, _) in marks.items()
                 if mark in dims), None)


def pod_total_mark(dims: tuple[str, ...] | list[str]) -> tuple[str, str] | None:
    """(the mark, its value) of a set of a pod's (or a node's) total per scrape or per GPU it holds, else None."""
    return next((marked for marks in (POD_TOTALS, POD_GPU_TOTALS, NODE_TOTALS) for marked in marks.values()
                 if marked[0] in dims), None)


# A GPU's reading once per scrape of its exporter, which the OTel pipeline makes at the agent from the copies the
# exporter writes of it (one per MIG instance of a device field, one per pod sharing the GPU: render/agent_otel.
# once_per_gpu) and publishes under the field's name, the cluster and this mark (dimension: value), which no scraped
# series carries. The fleet's values now read it past 500 GPUs (render/cloudwatch.readings_past_500): its
# SampleCount per period counts each GPU once per scrape.
ONCE_PER_GPU = ("readings", "once per GPU")
# A node's total and its count of GPUs read, per scrape of its exporter, of a field the fleet's values now read
# (render/cloudwatch.readings_past_500), which the OTel pipeline makes at the agent from each GPU's reading once
# (render/agent_otel.node_means) and publishes under the field's name, the cluster, the node and this mark, valued
# NODE_MEAN_KINDS: the total of the node's GPUs' readings, and their count negated (so that one query over the set
# tells the two apart: a total is never below 0). The fleet's values read one series per node (render/cloudwatch.
# per_node_form): a node's GPUs weigh whole however many of its scrapes arrived in the minute (a node roll, a failed
# scrape, two exporter pods in a surge), where the readings per GPU weighed them by the scrapes that read them.
NODE_MEAN = "node_mean"
NODE_MEAN_KINDS = {"sum": "sum", "count": "count"}  # aggregateutil's word for the points made -> the mark's value
NODE_MEAN_KEY = "node_mean_kinds"  # a NODE_MEAN declaration's kinds (render/agent.emf_processor): the widgets' reads


# A namespace's use of each GPU per scrape, which the OTel pipeline makes at the agent from one node's scrape
# (render/agent_otel.namespace_readings) and publishes under the per-GPU set's names, the namespace and this mark
# (dimension: value), which no scraped series carries: a device field's reading once however many series of the GPU
# the namespace's pods hold (MIG instances, pods sharing it), a field MIG reports per instance combined over the
# namespace's instances of the GPU as its per_gpu_aggregation says (framebuffer added, engine activity averaged), as
# the Prometheus rule and the panels read a namespace's use of a GPU. One GPU and namespace is one series: a
# namespace's count per period is its GPUs times the scrapes (per_scrape), its SUM the GPUs' readings added, its AVG,
# MAX and MIN over its GPUs. See namespace_plan.
NAMESPACE_GPU = ("namespace_gpu", "use per GPU")


def namespace_gpu_dimensions(settings: Settings) -> tuple[str, ...]:
    """The set of a namespace's use of each GPU per scrape: the per-GPU set, the namespace and the mark."""
    gpu = gpu_dimensions(settings)
    return (*gpu, *([NAMESPACE_DIMENSION] if NAMESPACE_DIMENSION not in gpu else []), NAMESPACE_GPU[0])


def namespace_plan(result: Plan, query: Query, catalog: Catalog, settings: Settings) -> Plan | None:
    """A widget's or alarm's plan per namespace (a line or a group per namespace) of a gauge, reading the namespace's
    use of each GPU per scrape (namespace_gpu_dimensions) on the OTel pipeline, where the agent merges the series the
    namespace's pods hold of one GPU into one point per scrape: over the per-pod set a GPU split into MIG instances
    was counted, added and weighed once per instance the namespace holds (a namespace on a whole GPU of 300 W and
    three instances of one of 200 W read 4 GPUs and 900 W for 2 and 500 W), a field MIG reports per instance read
    each instance as a GPU (its mean framebuffer 4,000 MiB for 8,000), and with exporter.virtual_gpus a GPU shared
    by k of its pods counted k times. A field MIG does not report whose stand-in the CSV collects (GPU utilization)
    reads a MIG GPU there by the mean stand-in of the instances the namespace holds on it (x 100), as the rule's MIG
    branch does: one alarm, no MIG instances' half (render/alarms.mig_plan), where the per-pod set had the whole
    GPUs alone. The plan's function and math stay (a count or a total is the period's readings over its scrapes).
    None for the largest or least of a device field (its copies are equal: the per-pod set reads it, an alarm over
    several periods by its flags past the level, level_plan), on agent.pipeline: classic (nothing merges them: the
    description says what it reads), for a counter (the agent merges a device counter's copies per pod already; a
    pod's copy is the GPU's whole increase), a field MIG does not report without a stand-in (no MIG instance has
    it), a share of memory (MIG_MEMORY_SHARES: its GPU value is no sum or mean of its instances'), a field the agent
    merges otherwise (merged_copies: with exporter.virtual_gpus a field split per process), where no GPU is split
    into MIG instances nor shared by pods with copies (exporter.mig: none without exporter.virtual_gpus: a
    namespace's series are one per GPU already), or where the set has no room."""
    if settings.agent.pipeline != "otel" or result.namespace or query.per_pod \
            or tuple(result.dims) != tuple(pod_dimensions(settings)) or tuple(result.series) != (NAMESPACE_DIMENSION,):
        return None
    if settings.no_mig and not settings.exporter.virtual_gpus:
        return None
    field = catalog.get(query.metric)
    stand_in = stands_in_once(query, catalog)  # a MIG GPU's reading is its instances' stand-in (GPU utilization)
    # a field split per process (merged_copies: its pods' copies are each pod's share on 4.5.3, the device's value
    # before) has no one use of a GPU per namespace, but a count of the GPUs the namespace holds is one either way
    copies = merged_copies(field, settings) and not (field.name in PER_PROCESS_FIELDS and result.function == "COUNT")
    if field.is_counter or field.across_own_labels or query.metric in MIG_UNSUPPORTED and not stand_in \
            or query.metric in MIG_MEMORY_SHARES or copies:
        return None
    if not field.per_instance and not stand_in and result.function in ("MAX", "MIN"):  # equal copies: it stands
        return None
    dims = namespace_gpu_dimensions(settings)
    if len(dims) > MAX_DIMENSIONS:  # the agent drops a set of more than 10 names
        return None
    return replace(result, dims=dims)


def read_by_stand_in(result: Plan, query: Query, catalog: Catalog) -> bool:
    """A plan over a set the agent makes of each GPU once (a GPU's reading once, a namespace's use of a GPU) of a field
    MIG does not report: a MIG GPU is read there by its instances' stand-in (render/agent_otel._stand_in_once)."""
    return (ONCE_PER_GPU[0] in result.dims or NAMESPACE_GPU[0] in result.dims) and stands_in_once(query, catalog)


def made_at_agent(dims: tuple[str, ...] | list[str]) -> bool:
    """A set of points the OTel pipeline makes at the agent from a scrape's series (a pod's total, a GPU's reading
    once, a namespace's use of a GPU): no share of a whole, no flag past a level is made of it."""
    return bool(pod_total_kind(dims)) or ONCE_PER_GPU[0] in dims or NAMESPACE_GPU[0] in dims


# A field's unused share at each reading (its bound less the reading: 100 - GPU utilization), which the OTel pipeline
# makes at the agent (render/agent_otel.unused_shares) and publishes under the field's name, its alarm's set and this
# mark. A GROUP BY alarm judging a share below a level ranks its series by the SUM of it over its window, the most
# first: a series read low all along ranks before one that came within the window reading lower (ranked by AVG
# ASC, such newcomers took the 500 places an alarm evaluates). See unused_plan.
UNUSED_SHARE = ("share", "unused")
SHARE_BOUNDS = {"percent": 100.0, "ratio": 1.0}  # a share's unit and its whole

# The marks of points made at the agent that a scraped series could carry as a label of its own: "which no scraped
# series carries" holds only because the agent's exporter job drops a scraped label of these names
# (render/scrape.agent_scrape_job). dcgm-exporter's --kubernetes-enable-pod-labels (the chart's
# kubernetes.enablePodLabels) writes each workload pod's Kubernetes labels, sanitized, on its GPUs' series: a pod
# labelled `share` made its GPUs' every reading fail the unmarked sets' label_matchers (a GPU at 92 °C left the
# temperature alarm) and put its raw utilization beside the unused share (an idle pod read 50, never under 5). A
# level's mark (`above 80`) holds a space: no scraped label is named so.
SCRAPED_MARKS = tuple(dict.fromkeys((*(mark for marks in (POD_TOTALS, POD_GPU_TOTALS, NODE_TOTALS)
                                       for mark, _ in marks.values()),
                                     ONCE_PER_GPU[0], NODE_MEAN, NAMESPACE_GPU[0], UNUSED_SHARE[0])))


def device_read(plan: Plan, settings: Settings) -> bool:
    """A plan over a set without a pod of a field the exporter splits per process (exporter.virtual_gpus: GPU
    utilization, framebuffer used): it reads the device's own reading, which the agent picks from a GPU's copies
    (render/agent_otel.device_or_copies; a pod's share can read above it: an MPS share at 55 % on a device at 50 %).
    The copies the agent makes of a field's readings for one alarm (unused_plan's unused share, level_plan's flags)
    are made before that pick, from the largest copy: such an alarm reads the plain set, as its `>` form does, and
    ranks by its own function (lint AL017 notes it past 500 series)."""
    return settings.exporter.virtual_gpus and plan.metric in PER_PROCESS_FIELDS and POD_DIMENSION not in plan.dims


def unused_plan(plan: Plan, comparison: str, catalog: Catalog, settings: Settings) -> Plan | None:
    """The plan of a GROUP BY alarm that judges the mean of a share (a percent or a ratio) below a level, reading the
    field's unused share (UNUSED_SHARE) instead, on the OTel pipeline; None for any other alarm. Its mean is the
    whole less the field's mean, so `mean < T` is `unused mean > whole - T` in every period; its ranking, SUM()
    DESC, is the sum of the unused share over the alarm's window: a pod idle at 2 % for the 60 scrapes of 30
    minutes sums 5,880, one that came 2 minutes ago at 0 % 400, one busy at 90 % all along 600. What holds: of series
    read once at each scrape of the window, one whose every period's mean is under T sums more than any whose mean
    over the window is T or more. Across unequal counts of readings it need not: a series that came, left or missed
    scrapes within the window sums less than the same readings all along would (a pod that came 2 minutes ago at 0 %
    ranks after one at 2 % all along), and a series read twice per scrape (two exporter pods on one node during a
    rollout) sums twice. Nor is every series ranked before one in ALARM itself in ALARM: a pod at 0 % but for a busy
    last period sums more than one at 2 % all along."""
    if settings.agent.pipeline != "otel" or not plan.group or plan.function != "AVG" or comparison not in ("<", "<="):
        return None
    if plan.namespace or plan.metric not in catalog or made_at_agent(plan.dims):  # (a GPU's readings once: once_plan;
        return None  # a pod's total or count of its GPUs, a namespace's use of a GPU: made at the agent, no share)
    if device_read(plan, settings):
        return None
    whole = SHARE_BOUNDS.get(catalog.get(plan.metric).unit_key)
    if whole is None or len(plan.dims) >= MAX_DIMENSIONS:  # the agent drops a set of more than 10 names
        return None
    # the agent makes the share of each GPU instance, its pods' copies merged first: none weighs once per pod
    return replace(plan, dims=(*plan.dims, UNUSED_SHARE[0]), complement=whole,
                   notes=tuple(note for note in plan.notes if note != SHARED_INSTANCE_WEIGHS))


# A GROUP BY alarm that judges every reading of each of its periods against a level (MIN() > T: the lowest reading of
# each period above it) ranked by its own function over the window (MIN() DESC) evaluates, past 500 series, those
# whose lowest reading over the whole window is highest: a GPU that came within the window hot (no cooler reading yet)
# ranks before one hot all along, and 500 such newcomers push it out. On the OTel pipeline the agent publishes instead
# a flag of each reading, 1 where it passes the level and 0 where not (render/agent_otel.level_flags), under the
# field's name, the alarm's set and a mark whose name says the level (LEVEL_WORDS, level_mark); the alarm reads MIN()
# of the flags at least 1 in each period (every reading past the level: the same condition) ranked by their SUM()
# over the window, the most first: the count of readings past the level. See level_plan.
LEVEL_WORDS = {">": "above", ">=": "at or above"}
LEVEL_FLAG = "1 past the level"  # the mark's value: the flag is 1 where the reading passes the level, 0 where not
_LEVEL_MARK = re.compile(r"^(above|at or above) (-?[0-9]+(?:\.[0-9]+)?)$")


def level_mark(comparison: str, level: float) -> str:
    """The name of the mark of a field's flags past `level` (`comparison`: > or >=): e.g. `above 80`."""
    return f"{LEVEL_WORDS[comparison]} {number(level)}"


def marked_level(name: str) -> tuple[str, float] | None:
    """(comparison, level) of a level mark's name (level_mark), None for any other dimension name."""
    found = _LEVEL_MARK.match(name)
    if not found:
        return None
    return {words: op for op, words in LEVEL_WORDS.items()}[found[1]], float(found[2])


def level_of(dims: tuple[str, ...] | list[str]) -> tuple[str, float] | None:
    """(comparison, level) of the first level mark of a set, None when it has none."""
    return next((found for name in dims if (found := marked_level(name))), None)


def level_plan(plan: Plan, comparison: str, level: float, periods: int, catalog: Catalog,
               settings: Settings) -> Plan | None:
    """The plan of a GROUP BY alarm that judges every reading of each of several periods past a level (MIN() > T or
    >= T), reading the field's flags past the level (LEVEL_WORDS) instead, on the OTel pipeline; None for any other
    alarm (one period: the lowest reading of its one period ranks the series breaching first). Its MIN() per period
    is 1 where every reading passes, so `MIN() > T` is `MIN(flag) >= 1` in every period; its ranking, SUM() DESC, is
    the count of readings past the level over the alarm's window: of series read once at each scrape of the window,
    one past it at every reading counts them all and any other fewer (a newcomer hot for one period counts that
    period's, a GPU cool in any period misses those readings). The agent merges the copies of one reading (MIG
    instances, pods sharing the GPU) before the flag; two exporter pods on one node during a rollout still count a
    GPU's readings twice."""
    if settings.agent.pipeline != "otel" or not plan.group or plan.function != "MIN" or comparison not in LEVEL_WORDS:
        return None
    if periods < 2 or plan.namespace or plan.metric not in catalog or plan.divisor != 1 or ONCE_PER_GPU[0] in plan.dims:
        return None  # (a GPU's readings once: once_plan, whose MIG points no flag is made of)
    if device_read(plan, settings) or made_at_agent(plan.dims):  # (a pod's totals are made at the agent: no flags)
        return None
    if len(plan.dims) >= MAX_DIMENSIONS:  # the agent drops a set of more than 10 names
        return None
    # the agent flags each GPU's reading, its copies merged first by max: none weighs once per pod
    return replace(plan, dims=(*plan.dims, level_mark(comparison, level)), flagged=(comparison, level),
                   notes=tuple(note for note in plan.notes if note != SHARED_INSTANCE_WEIGHS))


def once_dimensions(settings: Settings) -> tuple[str, ...]:
    """The per-GPU set marked ONCE_PER_GPU: each GPU's reading once per scrape, its copies merged at the agent (the OTel
    pipeline's render/agent_otel.once_per_gpu), one series per GPU (once_plan)."""
    return (*gpu_dimensions(settings), ONCE_PER_GPU[0])


def _counts_copies(result: Plan, settings: Settings) -> bool:
    """An alarm's plan over the per-GPU set that counts, adds or averages observations of several GPUs, or counts one
    GPU's: a GPU the exporter writes several series of (one per MIG instance of a device field, one per pod sharing it
    by time-slicing with exporter.virtual_gpus) is that many observations a scrape, so it counts, adds and weighs
    that many times (a maximum or minimum of equal copies stands). A GPU's mean of its own copies is its reading at
    one scrape, but over a period a scrape weighs by its copies: pods come and go on a GPU they share (one pod at
    100 W, then three at 400 W, read 325 W for 250), so with exporter.virtual_gpus a GPU's mean counts copies too."""
    one_gpu = all(d in result.series for d in result.gpu_series)
    return tuple(result.dims) == tuple(gpu_dimensions(settings)) and not result.namespace \
        and (result.function == "COUNT" or (result.function in ("SUM", "AVG") and not one_gpu)
             or (result.function == "AVG" and settings.exporter.virtual_gpus))


def _pods_counters_added(result: Plan, catalog: Catalog, settings: Settings) -> bool:
    """A plan adding a counter's deltas over the per-pod set of several pods (per namespace): each pod's copy of a
    device counter is the whole GPU's (a pod's share of it does not exist), so a GPU that k pods of the group share
    by time-slicing or MPS adds k times its increase. On the OTel pipeline with or without exporter.virtual_gpus: a
    pod named in turn catches up at each naming (NAMED_TURNS), so its deltas too add up to the GPU's increase (one
    200 W GPU shared by three pods of a namespace read 600,000 mJ/s, the Prometheus rule 200,000); on
    agent.pipeline: classic with exporter.virtual_gpus (without it, a pod's series that scrapes naming another pod
    mark stale loses the increase: NAMED_LOSS)."""
    if result.function != "SUM" or result.namespace or POD_DIMENSION in result.series \
            or tuple(result.dims) != tuple(pod_dimensions(settings)) or not catalog.get(result.metric).is_counter:
        return False
    if copies_counted_note(result):
        return False
    return settings.agent.pipeline == "otel" or settings.exporter.virtual_gpus


def stands_in_once(query: Query, catalog: Catalog) -> bool:
    """A field MIG does not report (GPU utilization) whose stand-in the CSV collects: a GPU's reading once holds a MIG
    GPU's too, its instances' stand-in averaged (render/agent_otel._stand_in_once), as the Prometheus rule reads it."""
    return query.metric in MIG_UNSUPPORTED and catalog.mig_substitute(query.metric) is not None


def _stand_in_over_gpus(result: Plan, query: Query, catalog: Catalog, settings: Settings) -> bool:
    """An alarm's plan over the per-GPU set of a field MIG does not report, whatever it takes of a GPU or a group of
    GPUs: over the per-GPU set MIG GPUs have no reading (the scrape job drops it there), and the stand-in's second alarm
    reads MIG instances, not GPUs (a GPU of instances at 80 and 40 % is at 60 %: its largest instance read 80 for a
    GPU's or a node's largest), and judges part of a group against the whole group's threshold."""
    return tuple(result.dims) == tuple(gpu_dimensions(settings)) and not result.namespace \
        and stands_in_once(query, catalog)


def once_plan(result: Plan, query: Query, catalog: Catalog, settings: Settings) -> Plan | None:
    """An alarm that counts GPUs, or adds or averages their readings, over a group of GPUs (a node's, the cluster's;
    or counts one GPU's), reading each GPU's reading once per scrape (once_dimensions) on the OTel pipeline: the agent
    merges the copies the exporter writes of a GPU (MIG instances, pods sharing it) into one point per GPU and scrape,
    so COUNT over the scrapes of a period is the GPUs times the scrapes, SUM the GPUs' totals, AVG each GPU weighed
    once, as the Prometheus rule counts and adds each GPU once. A node of 11 GPUs, two of them split into two MIG
    instances, writes 13 series of a device field: the per-GPU set counted 13 and added the two MIG GPUs' power twice.
    A field MIG does not report (GPU utilization) reads there a MIG GPU's stand-in (its instances' engine activity
    averaged, x 100: stands_in_once), so its counts, sums, means and extremes over a GPU or several (_stand_in_over_gpus)
    read every physical GPU once, a MIG GPU as the Prometheus rule reads it (11 GPUs of the mixed fleet, not the 9
    whole ones), in one alarm (no MIG stand-in alarm is split off: mig_plan).
    None where the per-GPU set is already one series per GPU (a counter, merged per physical GPU by the OTel pipeline;
    a field split per process with exporter.virtual_gpus, read from the device's series), where the merged reading is
    not the GPU's (a field MIG reports per instance: the GPU's value is its instances' sum or mean), on
    agent.pipeline: classic (nothing merges the copies: _copies_noted), or where the set has no room for the mark."""
    if settings.agent.pipeline != "otel" or not (_counts_copies(result, settings)
                                                 or _stand_in_over_gpus(result, query, catalog, settings)):
        return None
    return _read_once(result, query, catalog, settings)


def _read_once(result: Plan, query: Query, catalog: Catalog, settings: Settings) -> Plan | None:
    """The plan over the set of each GPU's reading once, where the agent merges the field's copies there: a gauge the
    exporter repeats per MIG instance or per pod sharing the GPU, not one MIG reports per instance (its reading once is
    an instance's) nor one the agent merges otherwise (merged_copies), in a set with room for the mark."""
    field = catalog.get(query.metric)
    if field.is_counter or field.per_instance or field.across_own_labels or merged_copies(field, settings):
        return None
    if len(result.dims) >= MAX_DIMENSIONS:  # the agent drops a set of more than 10 names
        return None
    return replace(result, dims=once_dimensions(settings))


def instances_once(query: Query, field, dims: tuple[str, ...], one_gpu: bool, layout: Layout,
                   settings: Settings) -> bool:
    """A widget or an alarm over the per-GPU set whose lines or groups are groups of GPUs (a node's, the cluster's) of a
    gauge MIG reports per instance (framebuffer, whose GPU value is its instances' sum; engine activity, their mean),
    read from each GPU's reading once (once_dimensions) on the OTel pipeline, where the agent combines a GPU's instances
    as the field's per_gpu_aggregation says (render/agent_otel.once_per_gpu), as the Grafana panel and the Prometheus
    rule do: a count, total, mean or extreme over GPUs then takes each GPU once. Over the per-GPU set each MIG
    instance is a series: the mixed fleet's MIG node, two A100s of two instances, counted 4 GPUs and added its engine
    activity to 1.8 (truth 2, and 0.9: the GPUs' means 0.6 and 0.3), and a node's mean, largest or smallest
    framebuffer was refused. Where each line or group is one GPU only for a mean of a field whose instances average
    (engine activity) with exporter.virtual_gpus: each pod sharing a MIG instance writes its copy, which weighed the
    instance once per pod in the per-GPU set (an A100's instances at 0.8, shared by two pods, and 0.2 read 0.6 for 0.5);
    the reading once merges them first. Not where each line or group is one GPU otherwise (its instances' lines, said in
    the header), a
    share of memory (MIG_MEMORY_SHARES: its GPU value is no sum
    or mean of its instances'), a field the agent merges otherwise (merged_copies: with exporter.virtual_gpus a field
    split per process), on agent.pipeline: classic (nothing combines a GPU's instances: the header says what each
    chart reads, or the panel is left out), nor where the set has no room for the mark."""
    if not layout.instances or settings.agent.pipeline != "otel" or layout.namespace:
        return False
    if not field.per_instance or field.is_counter or field.across_own_labels or query.metric in MIG_MEMORY_SHARES:
        return False
    if one_gpu and not (settings.exporter.virtual_gpus and query.aggregation == "avg"
                        and field.per_gpu_aggregation == "avg"):
        return False
    if merged_copies(field, settings) or "mig_instance" in query.by:
        return False
    return tuple(dims) == tuple(gpu_dimensions(settings)) and len(dims) < MAX_DIMENSIONS


def stand_in_widget(result: Plan, query: Query, catalog: Catalog, settings: Settings) -> Plan | None:
    """A widget's plan over the per-GPU set (a line per GPU, or a node's or the cluster's count, total, mean or extreme,
    by lines or combined by math) of a field MIG does not report, reading each GPU's reading once (once_dimensions) on
    the OTel pipeline, where the agent merges a MIG GPU's stand-in into it (stands_in_once): every physical GPU once,
    as Grafana shows it (the per-GPU set leaves MIG GPUs out: 9 of the mixed fleet's 11 GPUs, no line for a MIG GPU).
    The same query, over a set with one series per GPU, which replaces the per-GPU set's metric where nothing else
    reads it. None elsewhere: a field split per process with exporter.virtual_gpus (the per-GPU set reads the
    device's series), agent.pipeline: classic, a set with no room for the mark."""
    if settings.agent.pipeline != "otel" or not stands_in_once(query, catalog) or result.namespace:
        return None
    if tuple(result.dims) != tuple(gpu_dimensions(settings)):
        return None
    if merged_copies(catalog.get(query.metric), settings) or len(result.dims) >= MAX_DIMENSIONS:
        return None
    return replace(result, dims=once_dimensions(settings))


def once_widget(result: Plan, query: Query, catalog: Catalog, settings: Settings) -> Plan | None:
    """A widget's lines over the per-GPU set, each a group of GPUs (a node's: "Node power draw", "GPUs per node"), that
    count GPUs, or add or average their readings, of a field whose copies the exporter writes per MIG instance or per
    pod sharing the GPU, reading each GPU's reading once (once_dimensions) on the OTel pipeline, as the alarm of the
    same query does (once_plan) and the Prometheus side does: the mixed fleet's MIG node, two A100s of 350 and 150 W
    split into two instances each, drew 1,000 W and 4 GPUs (truth 500 W, 2). With exporter.virtual_gpus a single GPU's
    line of a mean too: each pod sharing the GPU writes its copy, so over the per-GPU set a scrape weighed by the pods
    on the GPU then (one pod at 100 W, then three at 400 W, read 325 W for 250). None where the lines are single GPUs
    otherwise or the combined forms take each GPU once already (per-GPU lines combined by math), for a field MIG
    reports per instance (its reading once is an instance's) or one the agent merges otherwise (merged_copies), on
    agent.pipeline: classic (nothing merges the copies: the header says so, WEIGHS_PER_SERIES), or where the set has no
    room for the mark."""
    if settings.agent.pipeline != "otel" or result.namespace or tuple(result.dims) != tuple(gpu_dimensions(settings)):
        return None
    if not result.series or result.function not in ("SUM", "COUNT", "AVG"):
        return None
    if all(d in result.series for d in result.gpu_series) and not (settings.exporter.virtual_gpus
                                                                    and result.function == "AVG"):
        return None
    return _read_once(result, query, catalog, settings)


# What an alarm that counts, adds or averages GPUs over the per-GPU set reads where nothing merges a GPU's copies
# (_copies_noted): its description says it, and lint notes it (AL019).
COPIES_COUNTED = ("a GPU split into MIG instances, or shared by time-slicing, counts, adds and weighs once per "
                  "instance or pod (each of its series is an observation)")
# COPIES_COUNTED where no GPU is split into MIG instances (exporter.mig: none): a shared GPU's copies per pod, which
# the exporter writes with KUBERNETES_VIRTUAL_GPUS alone (exporter.virtual_gpus); without it there are none
# (_whole_gpus)
WHOLE_COPIES_COUNTED = ("a GPU shared by time-slicing or MPS counts, adds and weighs once per pod sharing it (each of "
                        "its series is an observation)")


# COPIES_COUNTED of a field whose pods' copies the agent merges per GPU instance (merged_copies "instance": with
# exporter.virtual_gpus framebuffer used): a GPU pods share is one series, a MIG GPU still one per instance (the note
# said a shared GPU counted once per pod where the agent had merged its copies)
MIG_COPIES_COUNTED = ("a GPU split into MIG instances counts, adds and weighs once per instance (each of its "
                      "instances' series is an observation; a GPU pods share, once)")


# What an alarm per pod or namespace of a field MIG reports per instance reads where it takes the instances a group
# holds as if each were a GPU (_instances_judged): its description says it, and lint notes it (AL019).
INSTANCES_JUDGED = ("a field MIG reports per instance is read per instance a pod or namespace holds, not per GPU (its "
                    "instances of a GPU added, framebuffer, or averaged, engine activity, as its Prometheus rule and "
                    "the panels read it)")


def copies_counted_note(plan_: Plan) -> str | None:
    """The note of a plan that counts a GPU's copies as GPUs (COPIES_COUNTED, or WHOLE_COPIES_COUNTED where no GPU is
    split) or a group's MIG instances as GPUs (INSTANCES_JUDGED), None where it does not."""
    return next((note for note in plan_.notes if note in (COPIES_COUNTED, WHOLE_COPIES_COUNTED, MIG_COPIES_COUNTED,
                                                           INSTANCES_JUDGED)), None)


def _instances_judged(result: Plan, query: Query, catalog: Catalog, settings: Settings) -> bool:
    """An alarm's plan per pod, per (pod, gpu) or per namespace of a gauge MIG reports per instance that reads the
    instances the group holds as series of the per-pod set (or the per-pod-GPU set), where the truth, which the
    Prometheus rule and the panels read (tests/support/two_instances.py), is the group's use of each GPU: the
    instances it holds there added (framebuffer, per_gpu_aggregation sum) or averaged (engine activity), then over
    its GPUs. Only a sum of a field its instances add up is the same either way, and per (pod, gpu) a mean of a field
    its instances average; the pod's totals (per GPU) the OTel pipeline makes (_pod_total) read the truth, the
    pod's instances of each GPU added or averaged at the agent (render/agent_otel.ONCE_AGGREGATION). A pod on
    1,000 and 3,000 MiB of one A100 and a namespace with a third instance of 2,000 read 1,000 and 1,000 for the
    least of 4,000 and 6,000; the pod's busiest engine activity on that GPU 0.75 for the mean 0.5."""
    field = catalog.get(query.metric)
    if settings.no_mig or not field.per_instance or field.is_counter or field.across_own_labels \
            or query.aggregation == "count" or query.metric in MIG_MEMORY_SHARES \
            or per_device_headroom(query) and query.per_pod:  # (a pod's: per instance, as its rule reads it)
        return False
    if not ({POD_DIMENSION, NAMESPACE_DIMENSION} & set(query.by) or query.per_pod):
        return False
    adds = field.per_gpu_aggregation == "sum"
    if pod_total_kind(result.dims):  # the agent combines the pod's instances of each GPU as the field's do
        return False
    if tuple(result.dims) not in (tuple(pod_dimensions(settings)), tuple(pod_gpu_dimensions(settings))):
        return False
    pod_gpu = {POD_DIMENSION, GPU_DIMENSION} <= set(result.series)
    if query.aggregation == "sum" and adds or pod_gpu and query.aggregation == "avg":
        return False  # (a pod's GPU's mean of the instances it holds of it, read per period from their observations)
    return True


def _pod_counts_copies(result: Plan, query: Query, catalog: Catalog, settings: Settings) -> bool:
    """An alarm's plan over the per-pod set (per pod, per namespace) or the per-pod-GPU set that counts GPUs, or adds
    or averages a field of the whole device over them: a pod holding several MIG instances of one GPU has a series
    of the GPU's reading per instance (team-q/dual, a whole GPU of 300 W and two instances of one of 200 W, read 3
    GPUs, 700 W, a mean of 233 W, for 2, 500 W and 250 W), and a namespace's pods one per instance or per pod sharing
    the GPU with exporter.virtual_gpus; the Prometheus rule reads each GPU once. The pod's totals the OTel pipeline
    makes at the agent (_pod_total) read it once; a field MIG reports per instance is judged per instance there, and a
    field MIG does not report reads no MIG instance in these sets."""
    field = catalog.get(query.metric)
    # a GPU the group's pods share, with exporter.virtual_gpus: one copy per pod, whatever MIG reports (a namespace
    # of two pods sharing one GPU counted 2 GPUs of its utilization, unsaid)
    shared = settings.exporter.virtual_gpus and POD_DIMENSION not in result.series
    if result.namespace or field.is_counter or query.metric in MIG_UNSUPPORTED and not shared:
        return False
    if tuple(result.dims) not in (tuple(pod_dimensions(settings)), tuple(pod_gpu_dimensions(settings))):
        return False
    pod_gpu = GPU_DIMENSION in result.series  # a line per GPU a pod holds: its mean of equal copies is the reading
    if result.function != "COUNT" and (field.per_instance or result.function not in ("SUM", "AVG")
                                       or pod_gpu and result.function == "AVG"):
        return False
    return not settings.no_mig or bool(shared)


def _copies_noted(result: Plan, query: Query, catalog: Catalog, settings: Settings) -> Plan:
    """An alarm's plan that counts a GPU's copies as GPUs and has no merged form (once_plan): noted COPIES_COUNTED.
    A counter on the OTel pipeline is one series per physical GPU (merged_counters), and a field split per process
    with exporter.virtual_gpus one per GPU instance: not noted."""
    if _pod_counts_copies(result, query, catalog, settings):
        return replace(result, notes=(*result.notes, COPIES_COUNTED))
    if _instances_judged(result, query, catalog, settings):
        return replace(result, notes=(*result.notes, INSTANCES_JUDGED))
    if not _counts_copies(result, settings):
        return result
    field = catalog.get(query.metric)
    merged = merged_copies(field, settings)
    if merged == "gpu" or (merged == "instance" and not field.per_instance):  # one series per GPU (a whole one)
        return result
    return replace(result, notes=(*result.notes, MIG_COPIES_COUNTED if merged else COPIES_COUNTED))


def readings_dimensions(settings: Settings) -> tuple[str, ...]:
    """The set the fleet's values now read every reading of the cluster from past 500 GPUs: on the OTel pipeline a
    GPU's reading once per scrape (ONCE_PER_GPU), on classic every copy the exporter writes ([ClusterName]: the
    JSON path publishes each series as it is scraped, so nothing there merges a GPU's copies), and on the Container
    Insights add-on its node_ field per cluster (a GPU's reading once per collection: its agent keeps one of a
    label set)."""
    if settings.agent.pipeline == "otel" and settings.cloudwatch.source != "container-insights":
        return (CLUSTER_DIMENSION, ONCE_PER_GPU[0])
    return (CLUSTER_DIMENSION,)


def node_mean_dimensions(settings: Settings) -> tuple[str, ...] | None:
    """The set of a node's total and count of GPUs read per scrape (NODE_MEAN), which the fleet's values now read on
    the OTel pipeline; None on classic, whose agent merges nothing (its values read one series per GPU), and on the
    Container Insights add-on, whose agent gpudash does not configure (its values read one series per GPU too)."""
    if settings.agent.pipeline == "otel" and settings.cloudwatch.source != "container-insights":
        return (CLUSTER_DIMENSION, NODE_DIMENSION, NODE_MEAN)
    return None


# The agent scrapes with gpudash's own job, which keeps the exporter's workload labels as
# pod / namespace / container (whatever labels.* says about a Prometheus that scrapes through
# another path) and attaches the Kubernetes node as `node`; ClusterName is the agent's cluster_name.
CLOUDWATCH_KEYS = {"cluster": CLUSTER_DIMENSION, "node": NODE_DIMENSION, "gpu": GPU_DIMENSION, "model": "modelName",
                   "pod": POD_DIMENSION, "namespace": NAMESPACE_DIMENSION, "container": "container",
                   "mig_instance": MIG_INSTANCE_LABEL}


def dimension_for(key: str, settings: Settings) -> str:
    """The CloudWatch dimension name that carries a neutral grouping key."""
    if key not in CLOUDWATCH_KEYS:
        raise Unsupported(f"CloudWatch has no dimension for {key}")
    return CLOUDWATCH_KEYS[key]


def scrape_seconds(settings: Settings) -> int:
    return settings.scrape.seconds


# --- quoting (backslash escapes, every identifier double-quoted) --------------------------

def quote_string(value: str) -> str:
    """A Metrics Insights string literal: a quote inside is escaped with a backslash."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def quote_identifier(name: str) -> str:
    """A double-quoted identifier: reserved keywords (AWS lists hundreds) can never clash."""
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def schema_clause(dims: list[str], settings: Settings, namespace: str | None = None) -> str:
    return f"SCHEMA({quote_identifier(namespace or settings.cloudwatch.namespace)}, " \
           f"{', '.join(quote_identifier(d) for d in dims)})"


# --- planning -------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """One Metrics Insights query and how its result becomes the value named by the title.

    `math` is a metric-math expression over the query's id (`{q}`), or None when the
    query's result is already the value. `divisor` is the same normalisation as a scalar
    (value = result / divisor), for alarms, which take no math: their threshold is scaled.
    """

    metric: str
    function: str  # AVG, SUM, ...
    dims: tuple[str, ...]  # the SCHEMA dimension set
    group: tuple[str, ...]  # GROUP BY
    series: tuple[str, ...]  # the dimensions that name one result line (empty: one line)
    math: str | None = None
    divisor: float = 1.0
    needs_period: bool = False  # the normalisation assumes the widget's fixed period
    namespace: str | None = None  # None: the settings' cloudwatch.namespace
    gpu_series: tuple[str, str] = ("node", "gpu")  # the dimensions that name one GPU (for labels)
    notes: tuple[str, ...] = ()  # how the lines differ from the title on CloudWatch (the dashboard header says it)
    complement: float | None = None  # an alarm's: it reads the field's unused share, this whole less the reading
    flagged: tuple[str, float] | None = None  # an alarm's: it reads the field's flags past this level (level_plan)
    # each series one GPU instance's reading per scrape, none a copy of another (instances_summed): nothing to merge
    # or note of MIG instances and pods sharing a GPU
    instances_apart: bool = False

    def expression(self, settings: Settings, cluster: Cluster | None, order: str = "DESC",
                   limit: int | None = None) -> str:
        before, after = self.around_cluster(settings, order, limit)
        return before + self.cluster_filter(cluster) + after

    def around_cluster(self, settings: Settings, order: str = "DESC", limit: int | None = None,
                       rank: str | None = None) -> tuple[str, str]:
        """The query before and after its cluster filter, which is all that differs between clusters; `rank` is
        the function ORDER BY ranks the series by (the SELECT function unless given)."""
        schema = schema_clause(list(self.dims), settings, self.namespace)
        after = ""
        if self.group:
            after = (f" GROUP BY {', '.join(quote_identifier(d) for d in self.group)} "
                     f"ORDER BY {rank or self.function}() {order}")
            if limit:
                after += f" LIMIT {limit}"
        return f"SELECT {self.function}({quote_identifier(self.metric)}) FROM {schema}", after

    def cluster_filter(self, cluster: Cluster | None, apart: tuple[str, ...] = ()) -> str:
        """The query's filter on `cluster`; a fleet alarm's (None) on the clusters of its Region another alarm of the
        rule judges (`apart`, by name: `!=` each, Metrics Insights' WHERE having no NOT IN or OR)."""
        if CLUSTER_DIMENSION not in self.dims:
            return ""
        if cluster is None:
            return " WHERE " + " AND ".join(f"{quote_identifier(CLUSTER_DIMENSION)} != {quote_string(name)}"
                                            for name in apart) if apart else ""
        return _cluster_where(cluster.name)


@cache
def _cluster_where(name: str) -> str:
    """The filter on one cluster's name: the same text in each of its widgets and alarms (tens per cluster)."""
    return f" WHERE {quote_identifier(CLUSTER_DIMENSION)} = {quote_string(name)}"


def _dimension_set(query: Query, settings: Settings) -> tuple[str, ...]:
    keys = [k for k in query.by if k != "cluster"]
    pod_keyed = any(k in WORKLOAD_KEYS for k in keys)
    if "mig_instance" in keys:  # MIG instances alone, with their profile (which names them on the lines)
        candidates = [] if pod_keyed else [mig_instance_dimensions(settings)]
    else:
        candidates = [pod_dimensions(settings), pod_gpu_dimensions(settings)] if pod_keyed \
            else [gpu_dimensions(settings)]
    wanted = {dimension_for(k, settings) for k in keys}
    if query.per_pod:
        wanted.add(dimension_for("namespace", settings))  # a pod is named within its namespace
    for dims in candidates:
        if wanted <= set(dims):
            return tuple(dims)
    if not candidates:  # a pod's MIG instance: no set is published per pod and MIG instance
        raise Unsupported(f"no published dimension set carries {', '.join(sorted(wanted))}",
                          fix="group it by pod and gpu")
    raise Unsupported(f"no published dimension set carries {', '.join(sorted(wanted))}",
                      fix="publish a dimension set that carries them (cloudwatch.dimensions / cloudwatch.gpu_dimensions)")


def _series_key(query: Query, settings: Settings) -> tuple[str, ...]:
    keys = [k for k in query.by if k != "cluster"]
    if query.per_pod and "namespace" not in keys:
        keys.insert(keys.index("pod"), "namespace")
    series = [dimension_for(k, settings) for k in keys]
    if "mig_instance" in keys:  # an instance is shown with its profile, as on Grafana
        series.insert(series.index(MIG_INSTANCE_LABEL) + 1, MIG_PROFILE_LABEL)
    return tuple(series)


@dataclass(frozen=True)
class Layout:
    """Where a CloudWatch source publishes: the dimension set a query reads, the dimensions that
    name its lines, the two that name one GPU, and how often one GPU is observed."""

    dimension_set: Callable[[Query, Settings], tuple[str, ...]]
    series_key: Callable[[Query, Settings], tuple[str, ...]]
    per_gpu: tuple[str, str]
    interval: Callable[[Settings], int]
    namespace: str | None = None  # None: the settings' cloudwatch.namespace
    interval_setting: str = "scrape.interval"  # the setting `interval` reads (said in the headers' notes)
    observation: str = "scrape"  # what observes a GPU once
    blanks: bool = False  # DCGM blank sentinels can arrive (the exporter's own readings)
    instances: bool = False  # MIG instances and time-sliced pods arrive as several series of one GPU


# agent.pipeline: classic publishes a field as the exporter types it (`# TYPE`), and the bundled counters CSV is not the
# exporter's: an exporter on its image's default CSV serves the NVLink throughput typed counter, whose differences the
# JSON path would publish (0 while it holds 300 MB/s, a fall to 100 read as a reset); the OTel pipeline makes every
# level a Gauge whatever type it is served as (catalog.image_served_kind,
# tests/integration/test_nvlink_throughput_level.py)
SERVED_UNLIKE = ("agent.pipeline: classic publishes {name} as the exporter types it, and an exporter on its image's "
                 "default counters CSV (NVIDIA's) types it {served}: the agent would publish the differences between its "
                 "readings (0 while the reading holds); the bundled counters CSV, which types it as DCGM means it, is "
                 "not the exporter's")
SERVED_UNLIKE_FIX = ("set agent.pipeline: otel, which publishes it as it reads, or set `counters` to the CSV the exporter "
                     "reads (DCGM_EXPORTER_COLLECTORS), typing it as DCGM means it")


def served_unlike(metric: str, catalog: Catalog, settings: Settings) -> str | None:
    """SERVED_UNLIKE of `metric` where the agent's JSON path (agent.pipeline: classic) would publish it as an exporter
    on its image's default CSV types it, unlike the bundled CSV (catalog.image_served_kind); None elsewhere."""
    served = image_served_kind(catalog, metric) if settings.agent.pipeline == "classic" else None
    return None if served is None else SERVED_UNLIKE.format(name=metric, served=served)


def plan(query: Query, catalog: Catalog, settings: Settings, period: int, *, alarm: bool = False,
         layout: Layout | None = None, pod_gpus: bool = True) -> Plan:
    """How CloudWatch computes `query` per `period` so that it means what Prometheus means; on a
    source that carries DCGM's blank sentinels, widgets drop the periods only a blank explains. `pod_gpus`: a pod's
    mean, largest or smallest over its GPUs may read its totals per GPU (not in a static per-pod alarm, which names
    each dimension's value ahead, nor in a rule's MIG alarm, which judges the MIG instances a pod holds as the rule's
    MIG branch does: they read the pod's series as before)."""
    layout = layout or AGENT_LAYOUT
    if layout is AGENT_LAYOUT:
        unlike = served_unlike(query.metric, catalog, settings)
        if unlike is not None:
            raise Unsupported(unlike, SERVED_UNLIKE_FIX)
    result = _plan(query, catalog, settings, period, alarm, layout, pod_gpus)
    if layout.instances and not result.instances_apart:
        if alarm:
            result = namespace_plan(result, query, catalog, settings) or once_plan(result, query, catalog, settings) \
                or _copies_noted(result, query, catalog, settings)
        else:
            result = namespace_plan(result, query, catalog, settings) \
                or stand_in_widget(result, query, catalog, settings) or once_widget(result, query, catalog, settings) \
                or result
        result = _with_notes(result, query, catalog, settings)
    if layout.instances:
        _instances_published(result, catalog, settings)
    if settings.no_mig:
        result = _whole_gpus(result, settings)
    if not alarm and layout.observation == "scrape" and catalog.get(query.metric).is_counter:
        lost = GROWTH_LOST_OTEL if settings.agent.pipeline == "otel" else GROWTH_LOST
        result = replace(result, notes=result.notes + (SURGE_COUNTED, lost))
    elif not alarm and layout.observation == "scrape" and result.series and result.function == "AVG" \
            and not result.math:  # a line's mean of its period's readings, each exporter pod's an observation
        result = replace(result, notes=result.notes + (SURGE_WEIGHED,))
    if layout.blanks and settings.agent.pipeline == "classic" and catalog.get(query.metric).is_counter:
        named = (NAMED_LOSS,) if query.per_pod else ()
        result = replace(result, notes=result.notes + (FAILED_SCRAPE_LOSS, *named))
    elif layout.blanks and catalog.get(query.metric).is_counter and query.per_pod:
        result = replace(result, notes=result.notes + (NAMED_TURNS,))
    elif layout.blanks and query.per_pod and query.aggregation in ("min", "max"):
        result = replace(result, notes=result.notes + ((NAMED_EXTREME,) if alarm else (NAMED_EXTREME_LINE,)))
    elif layout.blanks and query.per_pod and query.aggregation in ("avg", "sum") and not alarm:
        result = replace(result, notes=result.notes + (NAMED_MEAN_LINE,))
    if blank_weighed(query, result, settings, layout, alarm) and (pod_gpus or not alarm):  # (not a static per-pod
        # alarm's classic metric, nor a rule's MIG alarm, which reads instances)
        result = replace(result, notes=result.notes + (BLANK_WEIGHED,))  # the agent drops a blank: no reading
    if not alarm and (query.aggregation == "max" or result.function == "MAX" and not result.math) \
            and largest_state(query, catalog) \
            and period > layout.interval(settings):
        result = replace(result, notes=result.notes + (LARGEST_STATE,))
    if not alarm and layout.instances and instance_copies_weigh(result, catalog, settings):
        result = replace(result, notes=result.notes + (INSTANCE_COPIES_WEIGH,))
    if layout.instances and _pods_counters_added(result, catalog, settings):
        result = replace(result, notes=result.notes + (WHOLE_COPIES_COUNTED,))
    if layout.instances and POD_DIMENSION in result.dims \
            and per_process_copies_added(query, settings.exporter.virtual_gpus):
        result = replace(result, notes=result.notes + (PER_PROCESS_COPIES_ADDED,))  # the pods' copies added
    if alarm or not layout.blanks or settings.agent.pipeline != "classic":
        return result  # alarms take no math; no blank arrives (OTel pipeline; the add-on guards its own plans)
    if query.metric in UNREAD_AT_ZERO:  # a 0 no math tells from a reading (render/alarms says it of alarms)
        result = replace(result, notes=result.notes + (UNREAD_ZERO_NOTE,))
    return blanks_dropped(result, query, catalog, ARRAY_BLANK_NOTE, COUNTED_BLANK_NOTE)


# A line per MIG instance of a mean of a field MIG reports per instance (engine activity) with exporter.virtual_gpus:
# each pod sharing the instance writes its copy, an observation of the line's metric, so a scrape weighs by the pods on
# the instance then, and pods come and go on it within a period. Nothing the agent publishes holds an instance's
# reading once (its merges per instance feed the per-GPU and per-namespace sets only), so the line is pinned
# (tests/unit/test_cloudwatch_instance_copies.py, a strict xfail: 0.2 under one pod, then 0.8 under three, read 0.65
# for 0.5) and the header says it.
INSTANCE_COPIES_WEIGH = ("with KUBERNETES_VIRTUAL_GPUS (exporter.virtual_gpus) a MIG instance's mean weighs each "
                         "scrape once per pod sharing the instance then (each pod's copy is an observation): pods "
                         "coming or going within a period move it (0.2 under one pod, then 0.8 under three, read "
                         "0.65 for 0.5)")


def instance_copies_weigh(result: Plan, catalog: Catalog, settings: Settings) -> bool:
    """A widget's line per MIG instance (not per pod) of a mean of a gauge MIG reports per instance whose pods' copies
    nothing merges (merged_copies), with exporter.virtual_gpus: INSTANCE_COPIES_WEIGH."""
    field = catalog.get(result.metric) if result.metric in catalog else None
    return settings.exporter.virtual_gpus and field is not None and field.per_instance and not field.is_counter \
        and not merged_copies(field, settings) and result.function == "AVG" \
        and MIG_INSTANCE_LABEL in result.series and POD_DIMENSION not in result.series and not settings.no_mig


def largest_state(query: Query, catalog: Catalog) -> bool:
    """A line of a field whose reading is a state (a code, a flag, a bitmask: units "state"), not its count."""
    field = catalog.get(query.metric) if query.metric in catalog else None
    return field is not None and not field.is_counter and field.unit_key == "state" and not query.over


def blanks_dropped(result: Plan, query: Query, catalog: Catalog, array_note: str, count_note: str) -> Plan:
    """A widget's plan on a source that publishes DCGM's blank sentinels: a widget of one line (per-GPU lines
    combined by math included) shows a gap for a period whose value only a blank explains, by the documented
    `IF(value < floor, value)` on the value shown (in the query's own unit, after any scale); a GROUP BY widget's
    lines (an array: no documented form drops one line's point) are shown as they are, with `array_note` (the
    header says it; lint CW015). A count counts series, a blank among them, with `count_note` (the header says it; an
    alarm's lint AL010: Grafana and the rules count GPUs with a reading, promql.counted). A mean over GPUs is guarded through
    their total, scaled alike: a blank GPU's share of the total is whole, however many GPUs the mean divides it
    among (the mean of 10 increases holds a blank's delta / 10)."""
    if query.aggregation == "count":
        return replace(result, notes=result.notes + (count_note,))
    shown = result.math or "{q}"
    if result.series and result.group:
        return replace(result, notes=result.notes + (array_note,))
    guard = shown.replace(across("AVG"), "SUM({q})")
    return replace(result, math=f"IF({guard} < {number(blank_floor(query, catalog))}, {shown})")


# How a count of GPUs reads on the classic pipeline, where the blank is published and a count counts series or
# observations whatever their value (its header says it; an alarm's lint AL010): Grafana, the rules and the OTel
# pipeline count a GPU with a reading of the field (promql.counted).
COUNTED_BLANK_OPENING = ("a GPU whose field reads only DCGM's blank (about 9.2e18 or 1.4e14, 'not supported') counts "
                         "as reporting it")
COUNTED_BLANK_NOTE = (f"{COUNTED_BLANK_OPENING} (agent.pipeline: classic publishes the blank, where the default "
                      "agent.pipeline: otel drops it before it is published and Grafana does not count it)")
# How a GROUP BY widget's lines differ from its title on the classic pipeline (its header says it; lint CW015).
ARRAY_BLANK_NOTE = ("a GPU's blank reading (about 9.2e18 or 1.4e14) shows as a value on its line "
                    "(agent.pipeline: classic; the default agent.pipeline: otel drops blanks before they are "
                    "published)")


# How a field whose 0 is DCGM's "not supported" (blanks.UNREAD_AT_ZERO) reads on the classic pipeline, which publishes
# every value its declarations' labels match (a declaration matches labels, never a value): a GPU without the sensor
# reads 0, and no math tells that 0 from a reading inside a mean or minimum over GPUs (its header says it; its alarms'
# descriptions: render/alarms). The OTel pipeline's filter drops it.
UNREAD_ZERO_OPENING = ("a GPU without a memory temperature sensor (L4 and the like: DCGM writes 0 for 'not supported') "
                       "reads 0")
UNREAD_ZERO_NOTE = (f"{UNREAD_ZERO_OPENING}, on its line and in a mean, minimum or count over GPUs (agent.pipeline: "
                    "classic publishes it, where the default agent.pipeline: otel drops it before it is published)")


# Metric math as the user guide documents it ("Using math expressions with CloudWatch metrics",
# https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html): arithmetic with a
# number applies to each data point of each series of an array and creates none ("METRICS()/100 returns
# an array of time series, each of which is a time series showing each data point of one of the metrics
# divided by 100"), so `{q} * 0 + 1` is 1 exactly where a GPU has a value and SUM of it counts the GPUs
# with one; IF(condition, value) without a false value has no data point where the condition is 0 (the
# page's IF tables; single series only), which is how a blank is dropped from one line; AVG of an array
# reads a missing value as 0. Lint (CW014) checks every expression's argument types against the page's tables.
# tests/unit/test_cloudwatch_eval_semantics.py runs the page's examples through the tests' evaluator.


def across(function: str, series: str = "{q}") -> str:
    """`function` (AVG, MAX, ...) of an array of per-GPU series, per timestamp. Metric math's AVG of an
    array reads a missing value as 0 (a GPU whose node left, or whose blank was dropped, would count
    as a GPU reading 0): the mean is the sum over the GPUs that have a value there, divided by
    how many have one."""
    if function == "AVG":
        return f"SUM({series}) / SUM({series} * 0 + 1)"
    return f"{function}({series})"


def _instances_published(result: Plan, catalog: Catalog, settings: Settings) -> None:
    """Unsupported where the plan reads a set no point of its field reaches: a set naming GPU_I_PROFILE holds MIG
    instances only, on which the agent's scrape job drops the fields DCGM does not measure there (MIG_UNSUPPORTED,
    render/scrape.py); on agent.pipeline: otel a set naming GPU_I_ID holds no device counter, merged to one series
    per physical GPU with the instance labels left out (render/agent_otel merged_counters). Such a widget or alarm
    would read nothing for good (a count of PCIe replay series per MIG instance did)."""
    field = catalog.get(result.metric) if result.metric in catalog else None
    if field is None:
        return
    if settings.no_mig and MIG_PROFILE_LABEL in result.dims:
        # (a set the exporter writes on MIG instances alone: where none is, a line per MIG instance never has a point,
        # as its Grafana twin, which reads the series with a MIG instance, draws none; the widget drew 0 lines and an
        # alarm on it could never fire, lint silent)
        raise NoMigInstances(NO_MIG_INSTANCES, fix="group it by node and gpu")
    if result.metric in MIG_UNSUPPORTED and MIG_PROFILE_LABEL in result.dims:
        raise Unsupported(f"DCGM does not measure {result.metric} on a MIG instance (the agent's scrape job drops it "
                          f"there), and a line per MIG instance reads MIG instances only: it would read nothing",
                          fix="chart it per GPU")
    if settings.agent.pipeline == "otel" and field.is_counter and not field.per_instance \
            and MIG_INSTANCE_LABEL in result.dims:
        raise _per_physical_gpu(result.metric)


def _per_physical_gpu(metric: str) -> Unsupported:
    """A device counter read per MIG instance on the OTel pipeline, which publishes it once per physical GPU."""
    return Unsupported(f"the OTel pipeline publishes {metric}, a device counter every MIG instance of a GPU repeats, "
                       f"once per physical GPU, not per MIG instance: chart it per GPU", fix="group it by node and gpu")


def _plan(query: Query, catalog: Catalog, settings: Settings, period: int, alarm: bool, layout: Layout,
          pod_gpus: bool = True) -> Plan:
    if query.raw_promql or query.over:
        raise Unsupported("raw PromQL and ratios of two fields are Grafana-only", fix="")
    field = catalog.get(query.metric)
    dims = layout.dimension_set(query, settings)
    series = layout.series_key(query, settings)
    per_gpu_dims = layout.per_gpu
    one_gpu = all(d in series for d in per_gpu_dims)  # each result line is a single GPU
    can_split = all(d in dims for d in per_gpu_dims)  # per-GPU lines exist to combine with math
    agg = query.aggregation
    interval = layout.interval(settings)
    n = period / interval
    base = dict(metric=query.metric, dims=dims, group=series, series=series, namespace=layout.namespace,
                gpu_series=per_gpu_dims)
    split_ok = not series and not alarm and can_split
    pod_keyed = tuple(dims) == tuple(pod_dimensions(settings))
    worst_of_own = field.across_own_labels == "max" and agg in ("avg", "min", "sum")  # _own_series_worst
    if layout.instances and settings.agent.pipeline == "otel" and not field.is_counter \
            and field.across_own_labels != "sum" and not worst_of_own and not per_device_headroom(query) \
            and (pod_keyed and per_pod_lines(query, series)
                 and (agg in ("count", "sum") or alarm and pod_gpus and agg in ("avg", "max", "min")
                      and instances_combined(field)
                      or alarm and pod_gpus and agg == "avg" and not field.per_instance
                      and query.metric not in MIG_UNSUPPORTED)
                 or pod_gpu_lines(query, series, dims, settings)
                 and (agg in ("count", "sum") or agg in ("avg", "max", "min") and instances_added(field)
                      or agg in ("max", "min") and instances_combined(field))):
        # (awsemf would send a counter's total as deltas); a pod's GPU's mean, largest or smallest of a field its MIG
        # instances add up (framebuffer) or average (engine activity) is that of the pod's totals on that GPU; a
        # pod's over its GPUs, that of its totals per GPU (not of its instances: a pod on 1,000 and 3,000 MiB of one
        # A100 uses 4,000 of it, on 0.25 and 0.75 of its engine 0.5); a pod's mean of a device field, that of its
        # totals per GPU (the GPU's reading once: a pod on a whole GPU of 300 W and two instances of one of 200 W
        # draws 250 W on average, not 233) (an alarm's: a chart per pod reads as before, its header saying what)
        return _pod_total(query, settings, series, per_gpu=agg in ("avg", "max", "min"))
    if layout.instances and settings.agent.pipeline == "otel" and agg in ("count", "sum") \
            and series == (NODE_DIMENSION,) and not query.per_pod and not field.is_counter \
            and not field.across_own_labels and query.metric not in MIG_UNSUPPORTED \
            and query.metric not in MIG_MEMORY_SHARES:
        # a node's count or total per scrape, made at the agent (each GPU instance's copies once: pods sharing it with
        # exporter.virtual_gpus, a pod named in turn beside the marker ending the other's; render/agent_otel pod_totals;
        # of framebuffer used with exporter.virtual_gpus, the GPU instances' merged copies, node_merged_totals), read as
        # AVG (in a widget's line per node and an alarm's contributor alike): a mean of the scrapes that arrived, so a
        # failed scrape, or a node added or removed inside the period, loses none of its GPUs, and two exporter pods'
        # scrapes of a node (a surge) each hold it whole; a count as MAX, the most GPUs one scrape read (the agent
        # counts after its blank filter: a GPU reading DCGM's blank at every other scrape read 3.5 GPUs of 4 as a mean),
        # as a pod's count is read (_pod_total)
        return Plan(metric=query.metric, function="MAX" if agg == "count" else "AVG",
                    dims=tuple(node_total_dimensions(agg)), group=series, series=series)
    if instances_once(query, field, dims, one_gpu, layout, settings):
        # a field MIG reports per instance over groups of GPUs: each GPU's reading once, read as a device field's
        dims = once_dimensions(settings)
        base["dims"] = dims
    # (an alarm's largest or smallest per GPU where no GPU is split, exporter.mig: none: a GPU is one instance, its
    # series its own readings, repeated alike for pods sharing it; a widget draws it per instance, one line a GPU)
    if layout.instances and not (alarm and settings.no_mig and agg in ("max", "min")) \
            and field.per_instance and not field.is_counter \
            and not field.across_own_labels and agg != "count" and not pod_keyed and "mig_instance" not in query.by \
            and ONCE_PER_GPU[0] not in dims \
            and (instances_added(field) or agg in ("max", "min") or query.metric in MIG_MEMORY_SHARES):
        return _instances_added(query, field, settings, series, one_gpu, alarm, layout, dims, n)

    def line(function: str, math: str | None = None, divisor: float = 1.0, needs_period: bool = False) -> Plan:
        return Plan(function=function, math=math, divisor=divisor, needs_period=needs_period, **base)

    def split(function: str, math: str) -> Plan:
        """Per-GPU lines (every GPU its own series), combined into one line by metric math."""
        return Plan(metric=query.metric, function=function, dims=dims, group=per_gpu_dims, series=(), math=math,
                    namespace=layout.namespace, gpu_series=per_gpu_dims)

    if field.across_own_labels == "sum":
        return _own_series_added(query, field, line, split_ok, one_gpu, period, interval, base,
                                 per_scrape_note(layout, agent_drops_blanks(layout, settings)))
    if worst_of_own:
        return _own_series_worst(query, field, line, split, one_gpu, split_ok, alarm)
    if agg == "count":  # GPUs (series) reporting, whatever the field's kind
        if one_gpu:
            return line("COUNT", "{q} * 0 + 1", n)
        if split_ok:
            return split("COUNT", "SUM({q} * 0 + 1)")
        if field.across_own_labels == "max":  # (the series per scrape: each GPU's several)
            raise _every_series_taken(query, field, alarm)
        return replace(line("COUNT", per_scrape(interval), n, True),
                       notes=per_scrape_notes(settings, pod_keyed or query.per_pod and layout.instances, layout))
    if not field.is_counter:
        if agg == "avg" and split_ok and layout.instances:  # each GPU once, however many series it writes
            return split("AVG", across("AVG"))
        if agg in ("avg", "min", "max"):
            return line(MI_FUNCTIONS[agg])
        if one_gpu:  # sum: one GPU per line, its sum is its average
            return line("AVG")
        if split_ok:
            return split("AVG", "SUM({q})")
        return replace(line("SUM", per_scrape(interval), n, True),
                       notes=per_scrape_notes(settings, pod_keyed or query.per_pod and layout.instances, layout))

    # Counters: the agent sends each scrape's delta, and the delta after a missed scrape covers the gap, so
    # the SUM of a series' deltas in a period is its increase over the period, however many scrapes arrived
    # and whatever the interval; divided by the period's length (PERIOD, which follows the period the console
    # uses) it is the rate. A mean delta (AVG) times the scrapes per period would read n / (n - m) of it when
    # m of n scrapes are missed, and depend on the scrape interval being the one the settings give.
    scale = field.unit.rate_scale

    def per_time(result: Plan) -> Plan:
        if query.as_increase:
            return result
        return replace(result, math=per_second(result.math, scale), divisor=result.divisor * period / scale)

    # The OTel pipeline merges a device counter's copies over a GPU's MIG instances too (agent_otel.merged_counters):
    # one series per physical GPU under the per-GPU sets, read there; classic publishes one per instance.
    by_instance = layout.instances and (field.per_instance or settings.agent.pipeline == "classic")
    if layout.instances and "mig_instance" in query.by and not by_instance:
        raise _per_physical_gpu(query.metric)
    if by_instance and not pod_keyed and one_gpu:
        return per_time(_instance_increase(query, field, settings, series, alarm, layout))
    if by_instance and not pod_keyed and split_ok:
        return per_time(_instance_split(query, field, settings, layout))
    if agg == "sum" or one_gpu:
        return per_time(line("SUM"))
    if split_ok:
        return per_time(split("SUM", across(MI_FUNCTIONS[agg])))
    # A mean per GPU of a group (or in an alarm, which takes no math) has no exact form: the mean delta per scrape
    # times the scrapes per period reads n / (n - m) of it when m of n scrapes are missed (the delta after a
    # missed scrape covers the gap), where the split form above counts each GPU's deltas whatever arrived.
    what = "increases" if query.as_increase else "rates"
    why = (f"; the mean delta per scrape would read n / (n - m) of the {'increase' if query.as_increase else 'rate'} "
           f"when m of a period's n scrapes are missed") if agg == "avg" else ""
    where = "in an alarm" if alarm and not series else f"per {', '.join(series) or 'cluster'}"
    raise Unsupported(f"CloudWatch cannot take the {agg} of per-GPU {what} {where} in one query{why}",
                      fix=f"{'sum them, or ' if agg == 'avg' else ''}group it by node and gpu")


def per_pod_lines(query: Query, series: tuple[str, ...]) -> bool:
    """The query's lines are pods, each named by namespace and name, and nothing else."""
    return query.per_pod and set(series) == {NAMESPACE_DIMENSION, POD_DIMENSION}


def pod_gpu_lines(query: Query, series: tuple[str, ...], dims: list[str], settings: Settings) -> bool:
    """The query's lines are a pod's GPUs, each named by the pod's namespace and name and the GPU's index, read from
    the per-pod set with the GPU (cloudwatch.dimensions may name it): a count or sum of such a line per period, divided
    by the scrapes of a period, reads a GPU pods share, which an exporter without KUBERNETES_VIRTUAL_GPUS names under
    one of them at a time (dcgm-exporter #340), as the share of the scrapes that named the pod (0.5 GPUs for 1), where
    the pod's total per GPU and scrape made at the agent reads it whole at each scrape it is named at."""
    return query.per_pod and set(series) == {NAMESPACE_DIMENSION, POD_DIMENSION, GPU_DIMENSION} \
        and set(dims) == {*pod_dimensions(settings), GPU_DIMENSION}


def _pod_total(query: Query, settings: Settings, series: tuple[str, ...], per_gpu: bool = False) -> Plan:
    """A sum of a gauge, or the GPUs counted, per pod on the OTel pipeline: the agent adds up each scrape of a
    node's exporter per pod (each GPU once: a device field's MIG instances of one GPU count once, a field MIG
    reports per instance adds the pod's instances up) and publishes the pod's total of that scrape, so the AVG
    of a period is the mean of the totals of the scrapes that arrived, whatever the scrape interval and however
    many were missed. A pod runs on one node, and moving to another (a StatefulSet's pod) its totals continue;
    the agent cannot add up scrapes of two nodes (each is its own resource, read at its own time), so a name
    that two nodes' exporters list at once (Kubernetes runs a pod on one node) would read the mean of the two
    nodes' totals. `per_gpu`: read the pod's totals per GPU it holds (a mean, largest or smallest over them per pod,
    of a field its MIG instances add up); so are lines per GPU a pod holds (pod_gpu_lines)."""
    kind = "count" if query.aggregation == "count" else "sum"
    per_gpu = per_gpu or GPU_DIMENSION in series
    # a pod's largest or smallest per GPU it holds (pod_gpu_lines, of a field its MIG instances add up): that of its
    # totals on the GPU over the period's scrapes, each the GPU's whole reading for the pod
    # a pod's count: the most GPUs one scrape of the period read (MAX), each with a reading there (the agent counts after
    # its blank filter). Each scrape's count is at most the GPUs with a reading in the period, the rule's count: a GPU
    # reading DCGM's blank at every other scrape read 3.5 GPUs of 4 as a mean (AVG), and a GPU shared with pods named
    # in turn 1.5 GPUs of 2; a failed scrape sends none
    function = MI_FUNCTIONS[query.aggregation] if query.aggregation in ("max", "min") else \
        "MAX" if kind == "count" else "AVG"
    # a pod's total of a scrape holds a GPU it shares with pods named in turn only at the scrapes naming it: a pod
    # holding a GPU of its own of 300 W and one named in turn of 100 W reads 350 W (its total per GPU reads each whole)
    named = (NAMED_PART,) if not per_gpu and kind == "sum" else ()
    if kind == "count" and not per_gpu:  # no scrape may read all of a pod's GPUs of the period (COUNT_MOST)
        named += (COUNT_MOST,)
    if pod_mean_weighed(query, series):  # its totals per GPU, as many as the scrapes naming the pod there
        named += (NAMED_WEIGHED,)
    return Plan(metric=query.metric, function=function, dims=tuple(pod_total_dimensions(settings, kind, per_gpu)),
                group=series, series=series, notes=named)



PERIOD = "{p}"  # in a plan's math: the period, in seconds, of the widget's query (the widget writes PERIOD() of it)


def per_second(math: str | None, scale: float = 1.0) -> str:
    """`math` (None: the query) per second of the period, times `scale` (a rate's unit, e.g. ns/s as a share)."""
    shown = "{q}" if math is None else f"({math})"
    return f"{shown} / {PERIOD}" if scale == 1 else f"{shown} * {number(scale)} / {PERIOD}"


PER_SCRAPE_OPENING = "the period's observations divided by the "  # per_scrape_note's opening (per_scrape_read)


def per_scrape_note(layout: Layout, dropped: bool = False) -> str:
    """What a mean per observation (per_scrape) reads, in the source's own words: its interval's setting.
    `dropped`: the agent drops DCGM's blank (agent.pipeline: otel), so a GPU blank at some scrapes of a period
    is read at the others only, as a missed scrape is (where the rules count a GPU with a reading in the period)."""
    what = layout.observation + "s"
    blank = (f", and a GPU reading DCGM's blank at m of them (the agent drops it) reads as (n - m) / n of that GPU"
             if dropped else "")
    return (f"{PER_SCRAPE_OPENING}{what} {layout.interval_setting} gives it: a period missing "
            f"m of its n {what} reads (n - m) / n of it{blank} (the period still filling is not drawn, unless live "
            f"data is on, which draws it low until it ends), {SURGE_SCRAPES if layout.observation == 'scrape' else ''}"
            f"and {INTERVAL_CHANGED.format(layout.interval_setting)}")


# Two exporter pods on one node (a DaemonSet rollout with maxSurge) each answer the agent's scrapes: a per-scrape
# form counts both pods' observations (measured: tests/unit/test_cloudwatch_surge_pod_totals.py, a 60 s overlap read
# 1.2 times a pod's framebuffer and power on agent.pipeline: classic, a 10-minute one twice).
SURGE_SCRAPES = ("one where a node's GPUs were scraped m more times (two exporter pods at once: the exporter's "
                 "DaemonSet rolling with a surge) reads (n + m) / n of it, ")


# The widgets' math counts the observations the interval now set gives (per_scrape, readings_form): data from before
# the interval was changed made period / old of them per GPU, so it reads new / old times its value (measured:
# tests/unit/test_cloudwatch_interval_changed.py, a strict xfail).
INTERVAL_CHANGED = ("a period from before {} was changed reads its value times the new interval over the old "
                    "(twice it where 30 s became 60 s, half where 60 s became 30 s)")


def agent_drops_blanks(layout: Layout, settings: Settings) -> bool:
    """Whether the agent drops DCGM's blank before a per_scrape form counts (agent.pipeline: otel, the agent's
    layout): a GPU blank at some scrapes is read as part of a GPU."""
    return layout.blanks and settings.agent.pipeline == "otel"


# Without KUBERNETES_VIRTUAL_GPUS the exporter names a GPU pods share under one of them, not always the same one
# (dcgm-exporter #340): a pod's observations in a period are then those of the scrapes it was named at.
NAMED_SHARE = ("a pod holding a GPU that pods share by time-slicing or MPS, which the exporter names under one of them "
               "at a time (without KUBERNETES_VIRTUAL_GPUS), reads the share of the period's scrapes it was named at")


# A pod's least or largest reading (an alarm's MIN or MAX per pod) where the exporter names a shared GPU under one of
# its pods at a time: each reading is published in the set of the pod its scrape named, and in no other (the agent
# keeps no record of which pods a GPU had), where the rule reads every pod a scrape named on the GPU within the per-pod
# look-back: a GPU nearly full at one scrape alarms the pod named there alone
# (tests/integration/test_shared_gpu_full_twins.py, a strict xfail; the truth: every pod sharing it).
NAMED_EXTREME = ("a pod the exporter names in turn with the other pods of a GPU they share (without "
                 "KUBERNETES_VIRTUAL_GPUS) reads only the scrapes naming it: a reading named under another of them "
                 "does not count for it, where the rule judges every pod sharing the GPU")
# The same on a widget's line of a pod's largest or smallest reading: Grafana's per-pod panel gives a GPU's reading to
# every pod a scrape within its look-back named on it (tests/unit/test_pod_extreme_widget.py, a strict xfail).
NAMED_EXTREME_LINE = ("a pod's largest or smallest reading, where the exporter names a GPU pods share (without "
                      "KUBERNETES_VIRTUAL_GPUS) under one of them at a time, reads only the scrapes naming the pod: a "
                      "reading named under another of them does not count for it, where Grafana's panel reads it for "
                      "every pod sharing the GPU")

# A widget's line of a state's largest value (the last XID code, a failure flag, a bitmask of reasons): its point is the
# MAX of the period's readings, and no CloudWatch statistic is a period's latest reading, where the title means the
# state now and Grafana's panel draws the latest (tests/unit/test_cloudwatch_latest_state.py, a strict xfail: XID 79
# then 13 within one 5-minute period read 79 for it).
LARGEST_STATE = ("a point is the largest state its period read, not the latest (CloudWatch has no statistic of a "
                 "period's latest reading): a state that followed a larger one within the period (XID 79, then 13) "
                 "shows from the next period on, where Grafana draws the latest")

# The same on a widget's line of a pod's mean or total (a pod's GPUs per scrape, or its readings pooled): each reading is
# the pod's only at the scrapes naming it, so its point is the mean of a sample of the period's readings, where
# Grafana's per-pod panels give each pod a scrape within the look-back named the GPU's every reading
# (tests/unit/test_cloudwatch_named_in_turn_means.py, a strict xfail).
NAMED_MEAN_LINE = ("a pod's mean or total, where the exporter names a GPU pods share (without KUBERNETES_VIRTUAL_GPUS) "
                   "under one of them at a time, is read from the scrapes naming the pod only: a point is the mean of "
                   "those readings, not of the period's, where Grafana's panel gives every pod sharing the GPU each "
                   "reading (a GPU drawing 100 W and 400 W at alternate scrapes, named under each of two pods in turn, "
                   "read 100 W and 400 W for 250 W)")


# A pod's total per scrape (_pod_total, OTel) where the exporter names a shared GPU under one of its pods at a time
NAMED_PART = ("a pod holding a GPU of its own and one that pods share by time-slicing or MPS, which the exporter names "
              "under one of them at a time (without KUBERNETES_VIRTUAL_GPUS), reads the shared one at the share of the "
              "period's scrapes it was named at (300 W and one of 100 W named every other scrape read 350 W), where "
              "one holding only the shared GPU reads it whole")
# NAMED_PART where a period holds one scrape of each exporter (the scrape interval or less): the period's one scrape
# names the pod on the shared GPU or not, so its total reads both GPUs or its own alone, at alternate periods, where its
# Prometheus rule reads both at every period (the pods a scrape within the look-back named)
NAMED_PART_ONE_SCRAPE = ("a pod holding a GPU of its own and one that pods share by time-slicing or MPS, which the "
                         "exporter names under one of them at a time (without KUBERNETES_VIRTUAL_GPUS), reads the "
                         "shared one only in the periods whose scrape named it (300 W and one of 100 W named every "
                         "other scrape read 400 W and 300 W at alternate periods), where its Prometheus rule reads "
                         "both at every period")


# A pod's mean over its GPUs (a line per pod of AVG: the per-pod set's readings, or its totals per GPU made at the
# agent) pools the period's readings of its GPUs, each GPU's as many as the scrapes that named the pod on it.
NAMED_WEIGHED = ("a pod's mean weighs each of its GPUs by the scrapes naming the pod on it: a GPU pods share by "
                 "time-slicing or MPS, which the exporter names under one of them at a time (without "
                 "KUBERNETES_VIRTUAL_GPUS), weighs the share of the period's scrapes it was named at (300 W of its own "
                 "and 200 W named every other scrape read 266.7 W for 250), where Grafana and the Prometheus rules "
                 "take each GPU's mean")


# A pod's, node's or namespace's mean over its GPUs on the OTel pipeline: the agent drops DCGM's blank before it
# publishes, so a GPU reading it at some scrapes has fewer readings in the period pooled than the group's other GPUs
# and weighs by them, where Grafana (each GPU's latest reading within the look-back) and the Prometheus rule (each
# GPU's mean over its readings, then their mean) weigh each GPU once (tests/integration/test_blank_pod_mean_twins.py,
# a strict xfail). No one-query form weighs each GPU once: a mean per GPU, then over them, is a nested aggregation,
# and no processor the agent ships keeps a GPU's reading across scrapes.
def blank_weighed(query: Query, result: Plan, settings: Settings, layout: Layout, alarm: bool) -> bool:
    """A mean over the GPUs of a pod, node, namespace or container (not per GPU, not the fleet's values, whose widgets
    read the agent's totals per node and say it of them) on the OTel pipeline, which drops DCGM's blank: a GPU blank at
    some of a period's scrapes weighs by the others (BLANK_WEIGHED). An alarm of a mean whose failed-scrape note says
    it already (read_weighed: a namespace's, a container's) is not told twice."""
    keys = set(query.by)
    if not (layout.blanks and settings.agent.pipeline == "otel" and query.aggregation == "avg"
            and result.function == "AVG" and "gpu" not in keys and keys & {"pod", "node", "namespace", "container"}):
        return False
    return not alarm or bool(keys & {"pod", "node"})


BLANK_WEIGHED = ("a mean over a pod's, node's or namespace's GPUs weighs each by its readings in the period: the "
                 "agent drops DCGM's blank, so a GPU reading it at some scrapes weighs by the scrapes it was read at "
                 "(one GPU at 50 % and one at 100 % read at every other scrape: 66.7 % for 75), where Grafana and the "
                 "Prometheus rules take each GPU's mean")


# A namespace's (or a container's) mean over its GPUs (a line per namespace of AVG: the per-pod set's readings, or its
# use of each GPU made at the agent) pools the period's readings of its GPUs: a GPU shared with pods of other namespaces
# named in turn arrives at the scrapes naming one of its own pods there only.
NAMESPACE_WEIGHED = ("a namespace's or container's mean weighs each of its GPUs by the scrapes naming one of its pods "
                     "on it: a GPU pods of different namespaces share by time-slicing or MPS, which the exporter names "
                     "under one of them at a time (without KUBERNETES_VIRTUAL_GPUS), weighs the share of the period's "
                     "scrapes it was named at (300 W of its own and 200 W named every other scrape read 266.7 W for "
                     "250), where Grafana and the Prometheus rules take each GPU's mean")


def in_collections(note: str) -> str:
    """A note on the exporter's scrapes, worded for the Container Insights add-on, whose agent observes a GPU once a
    collection (DCGM's collection interval), not once a scrape of the project's exporter."""
    return note.replace("scrapes", "collections").replace("every other scrape", "every other collection")


NAMED_WEIGHED_COLLECTIONS, NAMESPACE_WEIGHED_COLLECTIONS = in_collections(NAMED_WEIGHED), \
    in_collections(NAMESPACE_WEIGHED)


def group_mean_weighed(query: Query, series: tuple[str, ...]) -> bool:
    """A line per namespace or container (no pod, no GPU) of a mean over its GPUs, where an exporter names a GPU pods
    share under one of them at a time (one without KUBERNETES_VIRTUAL_GPUS: exporter.virtual_gpus says only that some
    exporters run with it, so it is said with the setting too): NAMESPACE_WEIGHED."""
    keys = set(query.by)
    return query.aggregation == "avg" and POD_DIMENSION not in series and GPU_DIMENSION not in series \
        and "pod" not in keys and "gpu" not in keys and bool(keys & {"namespace", "container"}) \
        and not query.whole_gpu


def pod_mean_weighed(query: Query, series: tuple[str, ...]) -> bool:
    """A line per pod of a mean over its GPUs (not per GPU), where an exporter names a GPU pods share under one of
    them at a time (as group_mean_weighed: with exporter.virtual_gpus too): NAMED_WEIGHED."""
    return query.aggregation == "avg" and POD_DIMENSION in series and GPU_DIMENSION not in series


# A pod's count of GPUs per scrape (_pod_total, OTel) read as the most one scrape of the period counted (MAX): the
# agent counts within one scrape of one node's exporter, and neither it (no processor it ships keeps a look-back) nor
# CloudWatch (no count of distinct series per group) counts the GPUs of a period's several scrapes.
COUNT_MOST = ("a pod's count of GPUs is the most one scrape of the period counted, where Grafana and the Prometheus "
              "rules count each GPU with a reading in it that a scrape within the look-back named the pod on: GPUs "
              "read at different scrapes, never all at one, count fewer (3 GPUs shared by time-slicing, named under the "
              "pod at alternate scrapes, 2 for 3, and a pod that moved to another node inside the period 1 for 2)")
# COUNT_MOST where a period holds one scrape of each exporter (the scrape interval or less): the alarm counts the GPUs
# that one scrape named the pod on, where its rule counts those a scrape within the look-back named it on (a GPU named in
# turn at every period), and a pod that moved to another node inside the period is read at each node's scrape apart
COUNT_MOST_ONE_SCRAPE = ("a pod's count of GPUs is the most one scrape of the period counted, where Grafana and the "
                         "Prometheus rules count each GPU with a reading in it that a scrape within the look-back "
                         "named the pod on: a GPU of its own and one named under it every other scrape count 1 for 2 "
                         "at alternate periods, and a pod that moved to another node inside the period, read at each "
                         "node's scrape apart, 1 for 2")


def per_scrape_read(plan_: Plan) -> bool:
    """Whether a plan reads a COUNT or SUM of a period's observations over the scrapes a period holds (per_scrape):
    a GPU's reading missed in a period (a failed scrape) reads as that part of the GPU lost, not as a GPU reporting
    or drawing all along. A pod's total per scrape (_pod_total, AVG of the totals that arrived) and a line per GPU
    are not: they are a mean of what arrived."""
    return any(note.startswith(PER_SCRAPE_OPENING) for note in plan_.notes)


def partly_blank(scrapes: float) -> tuple[int, float] | None:
    """failed_scrape_note's example of a GPU blank at some of a period's `scrapes`: (scrapes blank, the share of the
    GPU a count reads), about 3 in 10; None where a period holds fewer than 2 scrapes (a GPU is read in it or not, as
    its rule reads it)."""
    if scrapes < 2:
        return None
    blank = min(max(1, round(0.3 * scrapes)), int(scrapes) - 1)
    return blank, (scrapes - blank) / scrapes


def failed_scrape_note(aggregation: str, comparison: str, period: int, interval: float, lint: bool = True,
                       blanks: bool = False) -> str:
    """An alarm's words for per_scrape_read: what a failed scrape, and a GPU joining or leaving inside a period, do to
    its value and verdict, and how its Prometheus rule reads the same period (each GPU with a reading in it counted,
    its mean over its readings added); for a mean over the GPUs of several nodes (aggregation "avg", read_weighed),
    how it weighs them; `lint`: naming the lint note that says it too (not in that note itself); `blanks`: the agent
    drops DCGM's blank (agent.pipeline: otel), so a GPU blank at some of a period's scrapes is read at the others only,
    as a failed scrape's GPU is (where its rule counts it, and takes its mean over its readings)."""
    n = period / interval
    lint_ = '; lint AL024' if lint else ''
    if aggregation == "avg":
        blank = ", or a GPU reading DCGM's blank at some of its scrapes (dropped by the agent)," \
            if blanks and partly_blank(n) else ""
        return (f"its mean weighs each GPU by its readings in the period: a node added or removed inside it, or whose "
                f"scrape failed{blank} weighs its GPUs for the part of it they were read in (its Prometheus rule "
                f"averages each GPU's mean over its readings in the period{lint_})")
    what = "count of GPUs" if aggregation == "count" else "total"
    verdict = "fire" if comparison in ("<", "<=") else "miss"
    adds = "" if aggregation == "count" else " and adds its mean over them"
    counts = "counts" if aggregation == "count" else "adds"
    example = partly_blank(n) if blanks else None
    blank = (f"; a GPU reading DCGM's blank at some of its scrapes (dropped by the agent) {counts} for the share of "
             f"them it was read at (blank at {example[0]} of {n:g}: {example[1]:.2g} of it)") if example else ""
    return (f"its {what} is the period's readings over the {n:g} scrapes it holds: one failed scrape of a node's "
            f"exporter in a period reads that node's GPUs as {n - 1:g}/{n:g} of them, so it can {verdict} for the "
            f"period, and a node added or removed inside a period {counts} "
            f"its GPUs for the part of it they were there for{blank} (a failed scrape is not a lost GPU; its "
            f"Prometheus rule counts a GPU with a reading in the period{adds}{lint_})")


def read_weighed(plan_: Plan, keys: Iterable[str]) -> bool:
    """Whether a mean (`plan_`'s AVG over observations) of a query grouped by `keys` (promql.group_keys) weighs the
    GPUs of several nodes by their readings in a period: not per node, pod or GPU, whose GPUs are scraped together
    (come, go and miss a scrape alike)."""
    return plan_.function == "AVG" and not {"node", "pod"} & set(keys)


def per_scrape_notes(settings: Settings, pod_keyed: bool, layout: Layout) -> tuple[str, ...]:
    """The notes of a per-scrape mean: a pod's line also reads low where a shared GPU is named under another pod."""
    return (per_scrape_note(layout, agent_drops_blanks(layout, settings)),) + \
        ((NAMED_SHARE,) if pod_keyed else ())


def per_scrape(interval: float) -> str:
    """Math turning a period's SUM or COUNT of observations into their mean per scrape: the observations one
    series makes in a period are the period over the scrape interval (when every scrape arrived)."""
    return f"{{q}} * {number(interval)} / {PERIOD}"


INSTANCE_LINES = ("one line per GPU instance (MIG <id>, MIG none for a GPU not split into MIG instances): "
                  "CloudWatch cannot {} a MIG GPU's instances per GPU")
INSTANCE_COUNTER_LINES = ("one line per GPU instance (MIG <id>, MIG none for a GPU not split into MIG instances): "
                          "each MIG instance shows its GPU's increase")
INSTANCE_CONTRIBUTORS = ("it evaluates each GPU instance (a GPU not split into MIG instances is one), so a GPU split "
                         "into MIG instances over the threshold is listed once per instance, each with its GPU's "
                         "increase")
# agent.pipeline: classic publishes each pod's copy of a GPU's counter under the per-GPU sets (the OTel pipeline
# merges them into one series per GPU first: render/agent_otel.merged_counters); lint CW016 / AL013 / AL015. Its
# scraper computes each delta per series, every label included (plugins/inputs/prometheus/delta_calculator.go,
# keyed by getUniqMetricKey: the name and all tags), before the declarations choose the dimensions; so an increase
# between two scrapes no one copy of the GPU spans is in no delta, whatever dimension set reads it.
COPY_CHANGE = ("the increase between two scrapes that no one series of a GPU spans (its pods all change: one pod's "
               "series ends as the next one's begins, a GPU no pod held is taken, or its last pod leaves) is in no "
               "series' deltas, so it is not counted")
TIME_SLICED_INCREASE = ("a GPU shared by time-slicing or MPS reads its increase once per pod sharing it (each pod's "
                        f"series carries the GPU's deltas; agent.pipeline: classic), and {COPY_CHANGE}")
# Without KUBERNETES_VIRTUAL_GPUS (exporter.virtual_gpus unset; verify fails an exporter run with it then) the exporter
# writes a GPU pods share once, under one of them, which need not stay the same from one scrape to the next
# (dcgm-exporter #340): no copies to count twice, but a series that changes with the pod named.
ONE_SERIES_CHANGE = ("the increase between two scrapes that no one series of a GPU spans (the exporter names a GPU "
                     "pods share by time-slicing or MPS under one of them, not always the same one from scrape to "
                     "scrape, or a GPU no pod held is taken, or its last pod leaves) is in no series' deltas, so it "
                     "is not counted (none of the GPU's increase where the pod named changes at every scrape)")


def time_sliced_increase(settings: Settings) -> str:
    """What agent.pipeline: classic reads of a counter per GPU where pods share a GPU: the exporter's copies per pod
    with KUBERNETES_VIRTUAL_GPUS (exporter.virtual_gpus), one series under one of the pods without it."""
    return TIME_SLICED_INCREASE if settings.exporter.virtual_gpus else ONE_SERIES_CHANGE


# Two exporter pods on one node (a DaemonSet rollout with maxSurge) each send a GPU's counter deltas: on the OTel
# pipeline each revision is a delta series of its own (docs/cloudwatch.md, "Two exporter pods on one node"), on classic
# each exporter pod's series; a widget adds both (measured: tests/unit/test_cloudwatch_surge_pod_totals.py, a
# 10-minute overlap read twice a GPU's PCIe replays and a pod's energy on both pipelines). Alarms say it in the
# documentation and `gpudash verify` warns of maxSurge.
SURGE_COUNTED = ("two exporter pods on a node at once (the exporter's DaemonSet rolling with a surge) each send the "
                 "node's GPUs' increase: the seconds they run together count twice")
# The same for a gauge: each exporter pod's reading is an observation of the GPU's series (each pod its own target,
# scraped at its own instant; no processor merges points across targets), so a line's mean of its period's readings
# weighs the minutes they run together twice (measured: tests/unit/test_cloudwatch_overlap_gauge_weights.py, a
# 2-minute overlap in which the draw went from 100 W to 300 W: 171.4 W for 220, a strict xfail). A reading steady
# through the overlap reads true.
SURGE_WEIGHED = ("two exporter pods on a node at once (the exporter's DaemonSet rolling with a surge) each send the "
                 "node's GPUs' readings: a period's mean weighs the time they run together twice")
# A counter's increase between two readings that no one delta series of the agent spans is published nowhere: across
# an exporter rollout (otel: each exporter revision is a delta series of its own; classic: each exporter pod's series)
# and across a restart of the agent (it keeps each series' previous reading in memory only: the new agent's first
# reading is its baseline). The Prometheus rules count it (tests/integration/test_rollout_counter_twins.py;
# tests/integration/test_agent_restart_counter_twins.py: a row remapped while the agent restarts reads 0 on the
# health dashboard's "Rows remapped (uncorrectable)" bar, 0 replays a second for 60 in the period). Alarms say it in
# their descriptions (OTEL_ROLLOUT_LOST, CLASSIC_COUNTER_ALARM). On agent.pipeline: otel so is one across a gap in a
# GPU's data past 15 minutes (30, by the sweep of awsemf's cache: OTEL_GAP_EVENTS), which the rules count up to an
# hour or 10 minutes (gap_reach) and Grafana's bar up to an hour (a row remapped in a 20- or 40-minute gap read 0 on
# the bar, in a 10-minute gap 1); classic loses one across any failed scrape (FAILED_SCRAPE_LOSS).
GROWTH_LOST = ("an increase across an exporter rollout or an agent restart is in no delta (a new exporter revision's "
               "series and a restarted agent start from a baseline): it is not shown, where the Prometheus rules count "
               "it")
GROWTH_LOST_OTEL = ("an increase across a gap in a GPU's data past 15 minutes (30, by when the agent's cache is "
                    "swept), an exporter rollout or an agent restart is in no delta (the agent forgot the reading "
                    "before it, or starts from a baseline): it is not shown, where the Prometheus rules count a "
                    "rollout's and a restart's, and a gap's up to an hour (an event) or 10 minutes (a level)")
# The agent's JSON path drops a series' previous reading when the scrape loop marks it stale (a failed scrape, or a
# scrape that leaves the series out), so its next reading is only a new baseline: the increase between the two
# readings is in no delta. awsemf (agent.pipeline: otel) drops the stale point and keeps the previous reading.
FAILED_SCRAPE_LOSS = ("a failed scrape loses the counter's increase across it (the agent forgets the previous "
                      "reading then on agent.pipeline: classic, and keeps it on agent.pipeline: otel)")
# The same per pod: without KUBERNETES_VIRTUAL_GPUS a pod's series of a GPU pods share is left out of the scrapes
# that name another pod (dcgm-exporter #340), and each such scrape marks it stale.
NAMED_LOSS = ("a pod holding a GPU that pods share by time-slicing or MPS, which the exporter names under one of them "
              "at a time (without KUBERNETES_VIRTUAL_GPUS), reads no increase across the scrapes it was not named at "
              "on agent.pipeline: classic (none where the name changes at every scrape)")
# The same on the OTel pipeline: awsemf keeps a series' previous reading across the scrapes that leave it out, so a
# pod's delta at a scrape naming it covers the GPU's growth since the last one that did (k pods named in turn: k
# scrape intervals at each naming, every k-th scrape). A period's SUM of deltas holds the namings inside it: 3 pods
# in turn at 30 s read 270 or 360 s of growth in a 300 s period (0.9 or 1.2 times the rate) and one 90 s delta or
# none in a 60 s one. Over consecutive periods the deltas add up to the GPU's growth from the first scrape naming the
# pod to its last. No processor can hand a pod the growth of a scrape that does not name it (the agent keeps no
# record of which pods a GPU had); with KUBERNETES_VIRTUAL_GPUS every pod is named at every scrape.
NAMED_TURNS = ("a pod holding a GPU that pods share by time-slicing or MPS, which the exporter names under one of "
               "them at a time (without KUBERNETES_VIRTUAL_GPUS), reads at each scrape naming it the GPU's increase "
               "since the last scrape that did: a period holds the increase up to its last scrape naming the pod "
               "from the last one before the period, off by up to one gap between the scrapes naming it (k pods "
               "named in turn: k scrape intervals, none in a period shorter than that), and over consecutive periods "
               "it adds up to the GPU's increase from the first scrape naming the pod to its last")
# NAMED_TURNS within the 1,024 characters of an alarm's description, beside its gap and stale notes.
NAMED_TURNS_ALARM = ("a pod the exporter names in turn with the other pods of a GPU they share (without "
                     "KUBERNETES_VIRTUAL_GPUS) reads at each naming the GPU's increase since its last one: a period "
                     "is off by up to one gap between its namings, none in a period shorter than that")
# What a counter alarm per GPU instance misses on agent.pipeline: classic, within the 1,024 characters of a
# description (the longer TIME_SLICED_INCREASE and FAILED_SCRAPE_LOSS say it in dashboard headers).
CLASSIC_COUNTER_ALARM = ("on agent.pipeline: classic a GPU shared by time-slicing or MPS reads its increase once per "
                         "pod sharing it, and an increase is not counted across a failed scrape nor between two "
                         "scrapes no one series of the GPU spans (the agent restarts, its exporter pod is replaced, "
                         "its pods all change: one pod's series ends as the next one's begins, a GPU no pod held is "
                         "taken, or its last pod leaves)")
# awsemf (agent.pipeline: otel) keeps a counter's reading until the first sweep of its cache (every 15 minutes) that
# finds it 15 minutes old (internal/aws/metrics/metric_calculator.go of the amazon-contributing fork, cleanInterval,
# a constant no setting changes, which every agent the otel pipeline runs on builds): the growth across a gap of up to
# 15 minutes in a GPU's data is the first delta after it, one across 15 to 30 minutes by when the cache is swept, a
# longer one in none; the delta is sent at the first reading back, in one period whatever the gap's length. No
# CloudWatch form tells that delta from a period's own growth (the deltas carry no interval), so neither truth holds
# there: an event alarm (model.Condition.counts_events: a row remapped) misses the growth of a gap past 15 minutes,
# which its rule counts up to an hour (render.alarms.gap_reach); a level per period (`> N` replays per 5 minutes) can
# fire on a steady count under the level, a gap's growth landed in one period, where its rule shares a gap's growth
# of up to promql.WINDOW_PREVIOUS_WITHIN (10 minutes) out over the periods its scrapes were due in
# (promql._prorated). The description says which (docs/cloudwatch.md, "A counter across a gap");
# lint AL018 says it too. Classic: CLASSIC_COUNTER_ALARM (a failed scrape loses the growth across it).
# An exporter rollout (a new DaemonSet revision) starts a delta series of its own (series_labels.REVISION_LABEL): the
# growth from the old pod's last reading to the new pod's first is published nowhere, where the rule counts it
# (docs/cloudwatch.md, "Two exporter pods on one node"; tests/integration/test_rollout_counter_twins.py). So is the
# growth across a restart of the agent (it keeps a counter's previous reading in memory only: the new agent's first
# reading is its baseline; tests/integration/test_agent_restart_counter_twins.py), on either pipeline.
OTEL_ROLLOUT_LOST = "the growth across an exporter rollout or agent restart is lost (the rule counts it)"
OTEL_GAP_EVENTS = ("growth across a gap in a GPU's data is missed past 15 minutes (always past 30: the agent forgets "
                   "the reading before it), where the rule counts it up to an hour; " + OTEL_ROLLOUT_LOST)
OTEL_GAP_LEVEL = ("the first period after a gap in a GPU's data of up to 15 minutes (30, by when the agent's cache is "
                  "swept) holds the whole gap's growth, so a steady count under the level can fire then; the rule "
                  "shares a gap's growth (up to 10 minutes) over its periods; " + OTEL_ROLLOUT_LOST)
# A rate compared `> 0` (any growth per period, model.Condition.rises): its rule keeps a level's horizon (gap_reach 0,
# promql.WINDOW_PREVIOUS_WITHIN), so a gap's growth counts there up to 10 minutes, on CloudWatch up to 15 (30).
OTEL_GAP_RATE = ("growth across a gap in a GPU's data of up to 15 minutes (30, by when the agent's cache is swept) is "
                 "sent as the first delta after it and counted in the period it lands in, where the rule counts a "
                 "gap's growth up to 10 minutes: after a gap of 10 to 30 minutes the alarm can fire where "
                 "the rule does not (past 30 minutes neither counts it); " + OTEL_ROLLOUT_LOST)
# What AL018 says of a `> 0` alarm whose description holds none of the three (made otherwise than by this generator)
OTEL_GAP_EITHER = (f"if it is an increase `> 0` (an event alarm): {OTEL_GAP_EVENTS}; if it is a rate `> 0`: "
                   f"{OTEL_GAP_RATE}")
GAP_TEXTS = {"events": OTEL_GAP_EVENTS, "rate": OTEL_GAP_RATE, "level": OTEL_GAP_LEVEL}
# Each in a few words: the short form an alarm's description gives it where the notes do not fit whole
# (render/alarm_text; docs/alarm-notes.md)
GAP_SHORT = {"events": "a gap's growth past 15 minutes, an exporter rollout's or an agent restart's is missed (the "
                        "rule's: past an hour)",
             "rate": "a gap's growth of 10 to 30 minutes can fire it, an exporter rollout's or agent restart's never "
                     "(the rule's: up to 10)",
             "level": "a gap's growth of up to 15 minutes lands in one period, an exporter rollout's or agent "
                      "restart's nowhere (the rule shares it out)"}


def reads_gap_growth(plan: Plan, catalog: Catalog, settings: Settings) -> bool:
    """Whether a query adds up a counter's deltas as the OTel pipeline's awsemf sends them (per GPU, node, pod or
    the cluster alike), so that a gap in a GPU's data does what otel_gap says; a count of a counter's series does not
    read its deltas' values."""
    return settings.agent.pipeline == "otel" and plan.namespace is None and plan.function == "SUM" \
        and plan.metric in catalog and catalog.get(plan.metric).is_counter


def gap_kind(condition) -> str:
    """Which of GAP_TEXTS a counter alarm's condition is: "events" (an increase `> 0`, model.Condition.counts_events),
    "rate" (a rate `> 0`: any growth, its rule's horizon a level's) or "level" (a level per period)."""
    if condition.counts_events:
        return "events"
    return "rate" if condition.rises else "level"


def otel_gap(kind: str) -> str:
    """What a counter alarm on agent.pipeline: otel makes of a gap in a GPU's data, by its gap_kind."""
    return GAP_TEXTS[kind]


def gap_said(description: str) -> str | None:
    """The gap_kind an alarm's description says (the generator writes otel_gap's text in it, whole or as GAP_SHORT:
    render/alarm_text), None when it says none: a `> 0` request is the same for a rate and an increase, so lint
    AL018 reads which one the description says (whole, or its short form GAP_SHORT)."""
    return next((kind for kind, text in GAP_TEXTS.items() if text in description or GAP_SHORT[kind] in description),
                None)


CLASSIC_COUNTER_ALARM_ONE_SERIES = (
    "on agent.pipeline: classic an increase is not counted across a failed scrape nor between two scrapes no one "
    "series of the GPU spans (the agent restarts, the exporter pod is replaced, the pod the exporter names a shared "
    "GPU under changes, a GPU no pod held is taken, or its last pod leaves)")


# INSTANCE_CONTRIBUTORS where no GPU is split into MIG instances (exporter.mig: none)
WHOLE_GPU_CONTRIBUTORS = "it evaluates each GPU (labelled MIG none: no GPU is split into MIG instances)"


def instance_contributors(settings: Settings, kind: str) -> tuple[str, str]:
    """What a counter alarm per GPU instance lists, and what its increase misses, said in its description (`kind`: its
    gap_kind, otel_gap)."""
    listed = WHOLE_GPU_CONTRIBUTORS if settings.no_mig else INSTANCE_CONTRIBUTORS
    if settings.agent.pipeline == "classic":
        return listed, CLASSIC_COUNTER_ALARM if settings.exporter.virtual_gpus else CLASSIC_COUNTER_ALARM_ONE_SERIES
    return listed, otel_gap(kind)


def _instance_increase(query: Query, field, settings: Settings, series: tuple[str, ...], alarm: bool,
                       layout: Layout) -> Plan:
    """A counter's increase per GPU: the SUM of its deltas per GPU instance, for a counter MIG reports per
    instance and, on agent.pipeline: classic, a device counter (the OTel pipeline merges a device counter over
    a GPU's MIG instances and pods into one series per physical GPU, read per GPU by the caller). The agent's
    delta after a missed scrape covers the gap, so the SUM is the increase over the period, whatever the period
    and however many scrapes it missed; on classic a device counter repeats on each MIG instance of its GPU
    with the GPU's full deltas, so each instance's line is the GPU's increase (a GPU not split into MIG
    instances has one line, MIG none). A GPU that k pods share by time-slicing or MPS has, with
    KUBERNETES_VIRTUAL_GPUS (exporter.virtual_gpus), k copies of its counter, one per pod: agent.pipeline: classic
    publishes each, which CloudWatch stores as k observations of one metric: its SUM
    is k times the increase, and no statistic of one query undoes that when scrapes may be missing (the
    mean delta times the scrapes per period would, only while every scrape arrives): a note says so. A counter MIG reports per instance (a DCGM_FI_PROF_* field typed counter) makes its GPU's
    increase the sum of its instances': its lines are the instances' own, and an alarm per GPU is refused."""
    if field.per_instance and alarm:
        raise Unsupported(f"a MIG GPU's increase of {query.metric} is the sum of its instances', which CloudWatch "
                          f"holds as separate series: it can chart each instance, not alarm per GPU",
                          fix="group it by mig_instance (each instance judged on its own)")
    shared = (time_sliced_increase(settings),) if settings.agent.pipeline == "classic" else ()
    if MIG_INSTANCE_LABEL in series:  # per MIG instance, named with its profile: the MIG-only set holds it
        return Plan(metric=query.metric, function="SUM", dims=tuple(mig_instance_dimensions(settings)),
                    group=series, series=series, gpu_series=layout.per_gpu, notes=shared)
    lines = (*series, MIG_INSTANCE_LABEL)
    return Plan(metric=query.metric, function="SUM", dims=tuple(instance_dimensions(settings)), group=lines,
                series=lines, gpu_series=layout.per_gpu,
                notes=(INSTANCE_LINES.format("add") if field.per_instance else INSTANCE_COUNTER_LINES, *shared))


MIG_DEVICE_REPEATS = ("a GPU split into MIG instances counts once per instance (each instance's series carries "
                      "the GPU's deltas)")
MIG_INSTANCE_SHARES = "a GPU split into MIG instances counts each instance as a GPU (each with its own share)"


def _instance_split(query: Query, field, settings: Settings, layout: Layout) -> Plan:
    """One line over GPUs of a counter: the SUM of deltas per GPU instance (each GPU's increase over the
    period, exact however many of its scrapes arrived: a GPU that joins, leaves or misses scrapes inside the
    period counts the deltas it sent), combined across the instances by metric math. A GPU not split into MIG
    instances is one instance (MIG none). Read here: a counter MIG reports per instance (it adds up over them,
    the total is exact) and, on agent.pipeline: classic, a device counter, which repeats on each MIG instance of
    its GPU, so a MIG GPU counts once per instance in a sum or mean (its maximum and minimum stand). The OTel
    pipeline publishes a device counter once per physical GPU, read per GPU by the caller."""
    agg = query.aggregation
    notes = []
    if field.per_instance and agg != "sum":
        notes.append(MIG_INSTANCE_SHARES)
    elif not field.per_instance and agg in ("sum", "avg"):
        notes.append(MIG_DEVICE_REPEATS)
    if settings.agent.pipeline == "classic":  # the OTel pipeline merges a shared GPU's copies first
        notes.append(time_sliced_increase(settings))
    return Plan(metric=query.metric, function="SUM", dims=tuple(instance_dimensions(settings)),
                group=(*layout.per_gpu, MIG_INSTANCE_LABEL), series=(), math=across(MI_FUNCTIONS[agg]),
                gpu_series=layout.per_gpu, notes=tuple(notes))


def instances_combined(field) -> bool:
    """A gauge MIG reports per instance whose GPU value combines its instances (added, framebuffer; averaged, engine
    activity), not a share of memory (MIG_MEMORY_SHARES: no sum or mean of its instances')."""
    return field.per_instance and not field.is_counter and not field.across_own_labels \
        and field.name not in MIG_MEMORY_SHARES


def instances_added(field) -> bool:
    """A gauge a MIG GPU's instances add up to (framebuffer): read per GPU instance on CloudWatch."""
    return field.per_instance and field.per_gpu_aggregation == "sum" and not field.is_counter \
        and not field.across_own_labels


def _instances_added(query: Query, field, settings: Settings, series: tuple[str, ...], one_gpu: bool,
                     alarm: bool, layout: Layout, dims: tuple[str, ...], n: float) -> Plan:
    """A field of MIG instances whose GPU value is the sum over them (framebuffer), or the extreme of their
    mean (activity), from the per-instance set: each GPU instance (a whole GPU is one) is one series there,
    the pods that share it by time-slicing observations of it. Per instance the observations give its
    value; a sum's total over the cluster is the sum of the per-instance lines. No one Metrics Insights
    query combines a GPU's instances per GPU (a period's SUM adds the time-sliced repeats too, its AVG
    averages the instances, its MAX takes one instance), so per-GPU lines are per-instance lines, said
    in the dashboard header. A total per group of GPUs (a node's, a GPU's, a pod's on one GPU; an alarm's over the
    cluster) is the SUM of the group's observations over the scrapes per period, where each GPU instance is one
    series (instances_summed); a mean, a maximum or a minimum over several GPUs, which would take each GPU's sum
    first, has no form."""
    adds_up = instances_added(field)
    instances = tuple(instance_dimensions(settings))
    instance = (*layout.per_gpu, MIG_INSTANCE_LABEL)
    agg = query.aggregation
    if adds_up and not series and agg == "sum" and not alarm:
        return Plan(metric=query.metric, function="AVG", dims=instances, group=instance, series=(),
                    math="SUM({q})", gpu_series=layout.per_gpu)
    if one_gpu and not alarm:
        lines = (*series, MIG_INSTANCE_LABEL)
        share = query.metric in MIG_MEMORY_SHARES
        return Plan(metric=query.metric, function="AVG" if agg == "sum" else MI_FUNCTIONS[agg], dims=instances,
                    group=lines, series=lines, gpu_series=layout.per_gpu,
                    notes=(INSTANCE_LINES.format('add' if adds_up else 'combine' if share else 'average'),))
    pods = POD_DIMENSION in dims
    one_each = one_gpu or (pods and GPU_DIMENSION in series)  # a line per GPU (a pod's GPUs are on its node)
    if adds_up and (agg == "sum" or (agg == "avg" and one_each)):
        summed = instances_summed(field, settings, dims)
        if summed is not None:
            return Plan(metric=query.metric, function="SUM", dims=summed, group=series, series=series,
                        math=per_scrape(layout.interval(settings)), divisor=n, needs_period=True,
                        namespace=layout.namespace, gpu_series=layout.per_gpu,
                        notes=per_scrape_notes(settings, pods, layout), instances_apart=True)
        raise Unsupported(f"a MIG GPU's {query.metric} is the sum of its instances, and with exporter.virtual_gpus "
                          f"the exporter writes a GPU instance once per pod sharing it: agent.pipeline: classic "
                          f"publishes every copy, so the {agg} {_where(series, one_gpu)} would add a shared GPU "
                          f"once per pod", fix="agent.pipeline: otel (which merges the copies), or group it by pod")
    value = "the sum of its instances" if adds_up else MEMORY_SHARE if query.metric in MIG_MEMORY_SHARES else \
        "the mean of its instances"
    summable = adds_up and instances_summed(field, settings, dims) is not None
    fixes = ("sum", "avg" if one_each else None) if summable else ()
    raise Unsupported(f"a MIG GPU's {query.metric} is {value}, which CloudWatch holds as separate series: it can "
                      f"chart each instance{', or their total over the cluster' if adds_up else ''}, not the {agg} "
                      f"{_where(series, one_gpu)}",
                      fix=f"group it by mig_instance (each instance judged on its own)"
                          + (f", or take its {' or '.join(f for f in fixes if f)}" if fixes else ""))


def _where(series: tuple[str, ...], one_gpu: bool) -> str:
    return "per GPU" if one_gpu else f"per {', '.join(series)}" if series else "over the cluster"


def instances_summed(field, settings: Settings, dims: tuple[str, ...]) -> tuple[str, ...] | None:
    """The dimension set in which a field a MIG GPU's instances add up to (framebuffer: each instance a disjoint slice
    of the GPU's memory) is one series per GPU instance at each scrape, so that a period's SUM over a group's series
    over the scrapes per period is the group's total: the set `dims` the query reads, unless pods sharing a GPU by
    time-slicing or MPS each write a copy of it (exporter.virtual_gpus), which the OTel pipeline merges per GPU
    instance (merged_copies; once_dimensions for a field it does not merge so: its points of a GPU instance merged by
    `max`, the copies being the device's reading, or a share of it, render/agent_otel.once_per_gpu). None: copies
    no set merges (agent.pipeline: classic). A pod's sets hold each pod's own copy."""
    if POD_DIMENSION in dims or not settings.exporter.virtual_gpus:
        return dims
    if settings.agent.pipeline != "otel":
        return None
    return dims if merged_copies(field, settings) else once_dimensions(settings)


MEMORY_SHARE = ("the share of the memory its instances hold (their used over their used + free, not the mean of "
                "their shares)")
MIG_LEFT_OUT = "GPUs split into MIG instances do not report it and are left out"
WEIGHS_PER_SERIES = "a GPU split into MIG instances, or shared by time-slicing, weighs once per instance or pod"
MIG_INSTANCES_WEIGH = "a GPU split into MIG instances weighs once per instance (a GPU pods share, once)"
POD_INSTANCES = "a pod holding several MIG instances of one GPU weighs that GPU once per instance"
# POD_INSTANCES of a line per namespace or container: the group's pods, each on its own slice of a GPU (the usual MIG
# layout), weigh it once per instance too
GROUP_INSTANCES = "a GPU split into MIG instances weighs once per instance the group's pods hold"
# GROUP_INSTANCES with exporter.virtual_gpus, where nothing merges the group's copies of a GPU (agent.pipeline:
# classic; on the OTel pipeline a namespace reads its use of each GPU, namespace_plan): each pod sharing the GPU has
# its copy, so a namespace of two pods on one GPU counted 2 GPUs, said of MIG alone
GROUP_COPIES = "a GPU split into MIG instances, or shared by time-slicing, weighs once per instance or pod the group holds"
# A GPU's own mean of a field MIG reports per instance (a line per GPU, or those lines combined): its instances' series
# each an observation, so with exporter.virtual_gpus an instance pods share, written once per pod and merged by
# nothing before this set, weighs once per pod (an A100's instances at 0.8, shared by two pods, and 0.2 read 0.6 for
# 0.5; without the setting an instance is written once, and a whole GPU's copies are equal readings). On the OTel
# pipeline a mean of a field whose instances average reads each GPU's reading once instead (instances_once): said on
# classic, and of the other aggregations and fields
SHARED_INSTANCE_WEIGHS = ("with KUBERNETES_VIRTUAL_GPUS (exporter.virtual_gpus) a MIG instance pods share weighs once "
                          "per pod in its GPU's mean (each pod's copy is an observation)")
POD_MEMORY_SHARES = ("a pod holding several GPUs or MIG instances reads the mean of their shares, not its used over "
                     "the memory they hold (Grafana's value)")
# What each note above that speaks of MIG instances says where no GPU is split (exporter.mig: none): None, nothing
# (_whole_gpus); WEIGHS_PER_SERIES's copies are then a shared GPU's per pod, which exist with exporter.virtual_gpus
# only (without KUBERNETES_VIRTUAL_GPUS the exporter names a shared GPU under one pod at a time: one series).
WHOLE_GPUS_WEIGH = "a GPU shared by time-slicing or MPS weighs once per pod sharing it"
WHOLE_GROUP_COPIES = "a GPU shared by time-slicing or MPS weighs once per pod of the group sharing it"
WHOLE_GPU_LINES = "one line per GPU (labelled MIG none: no GPU is split into MIG instances)"
WHOLE_GPUS_MEMORY_SHARES = ("a pod holding several GPUs reads the mean of their shares, not its used over the memory "
                            "they hold (Grafana's value)")


def merged_copies(field, settings: Settings) -> str | None:
    """How the agent merges the copies of a field before publishing it (render/agent_otel.merged_counters, the OTel
    pipeline's metricstransform): "gpu", a device counter (energy, PCIe replays, rows remapped), one series
    per physical GPU in the per-GPU sets and per pod and GPU in the per-pod sets, however many pods share it by
    time-slicing and however many MIG instances repeat its reading; "instance", a counter MIG reports per instance
    and, with exporter.virtual_gpus, a field the exporter splits per process, one series per GPU instance; None: each
    copy is its own series (a gauge, or every field on the classic pipeline)."""
    if settings.agent.pipeline != "otel" or not (field.is_counter or settings.exporter.virtual_gpus
                                                 and field.name in PER_PROCESS_FIELDS):
        return None
    return "gpu" if field.is_counter and not field.per_instance else "instance"


def _whole_gpus(result: Plan, settings: Settings) -> Plan:
    """A plan's notes as they are where no GPU is split into MIG instances (exporter.mig: none, of the clusters the
    settings hold for): what they say of MIG GPUs left out, counted once per instance or read per instance is not so
    there, and is left out (or said of a GPU shared by time-slicing alone, where it is)."""
    notes = []
    for note in result.notes:
        if note.startswith(MIG_LEFT_OUT) or note in (POD_INSTANCES, GROUP_INSTANCES, MIG_DEVICE_REPEATS,
                                                     MIG_INSTANCE_SHARES, MIG_INSTANCES_WEIGH, MIG_COPIES_COUNTED,
                                                     SHARED_INSTANCE_WEIGHS):
            continue
        if note in (INSTANCE_COUNTER_LINES, *(INSTANCE_LINES.format(verb) for verb in ("add", "combine", "average"))):
            note = WHOLE_GPU_LINES
        if note in (WEIGHS_PER_SERIES, COPIES_COUNTED, GROUP_COPIES):
            if not settings.exporter.virtual_gpus:
                continue
            note = {WEIGHS_PER_SERIES: WHOLE_GPUS_WEIGH, GROUP_COPIES: WHOLE_GROUP_COPIES}.get(note, WHOLE_COPIES_COUNTED)
        notes.append(WHOLE_GPUS_MEMORY_SHARES if note == POD_MEMORY_SHARES else note)
    return result if len(notes) == len(result.notes) and tuple(notes) == result.notes else \
        replace(result, notes=tuple(notes))


def _with_notes(result: Plan, query: Query, catalog: Catalog, settings: Settings) -> Plan:
    """What a line on the agent's metrics cannot tell apart, said where a MIG GPU or time-slicing makes it differ:
    a pod's series are one per MIG instance it holds, a node's one per instance and time-sliced pod."""
    notes = list(result.notes)
    field = catalog.get(query.metric)
    if read_by_stand_in(result, query, catalog):  # MIG GPUs read by their stand-in
        return result
    if result.function == "AVG" and tuple(result.dims) == tuple(pod_dimensions(settings)) \
            and pod_mean_weighed(query, tuple(result.series)) and NAMED_WEIGHED not in notes:
        notes.append(NAMED_WEIGHED)  # the per-pod set's readings of the pod's GPUs pooled
        result = replace(result, notes=tuple(notes))
    if result.function == "AVG" and group_mean_weighed(query, tuple(result.series)) \
            and NAMESPACE_WEIGHED not in notes:
        notes.append(NAMESPACE_WEIGHED)  # the namespace's readings (or its use of each GPU) of its GPUs pooled
        result = replace(result, notes=tuple(notes))
    per_pod = tuple(result.dims) == tuple(pod_dimensions(settings))
    # a group of pods' count over the per-pod set: a GPU its pods share has a copy per pod (exporter.virtual_gpus)
    group_copies = settings.exporter.virtual_gpus and per_pod and result.function == "COUNT" \
        and POD_DIMENSION not in result.series and bool(result.series)
    if query.metric in MIG_UNSUPPORTED:  # the scrape job drops it on MIG instances: only whole GPUs remain (counted
        # too: a count of the GPUs reporting it showed 9 of the mixed fleet's 11 on classic, unsaid)
        substitute = catalog.mig_substitute(query.metric)
        notes.append(MIG_LEFT_OUT + (f" (their {substitute[0]} stands in on Grafana and in alarms)"
                                     if substitute else ""))
        notes += [GROUP_COPIES] if group_copies else []
        return replace(result, notes=tuple(notes))
    if made_at_agent(result.dims):  # the agent's, each GPU once
        return result
    grouped = result.series and not all(d in result.series for d in result.gpu_series)
    # Each copy its own series: a node's or a cluster's sum, count or mean reads a GPU once per copy. Merged copies
    # (merged_copies) are one series per GPU, or per GPU instance: a field MIG reports per instance is then still a
    # series per MIG instance (with exporter.virtual_gpus framebuffer used per node counted the MIG node's 2 GPUs as 4,
    # unsaid).
    merged = merged_copies(field, settings)
    if grouped and not per_pod and result.function in ("SUM", "COUNT", "AVG"):
        if not merged:
            notes.append(WEIGHS_PER_SERIES)
        elif merged == "instance" and field.per_instance:
            notes.append(MIG_INSTANCES_WEIGH)
    elif settings.exporter.virtual_gpus and field.per_instance and not merged and result.function == "AVG" \
            and tuple(result.dims) == tuple(gpu_dimensions(settings)) \
            and tuple(result.group) == tuple(result.gpu_series):
        # each GPU's mean over its instances' copies as published (a set the agent makes of the field, the idle
        # alarm's unused share or the flags past a level, merges each instance's copies first)
        notes.append(SHARED_INSTANCE_WEIGHS)
    # A device field repeats on each of a pod's instances of one GPU: its maximum and minimum stand, its sums,
    # counts and means count that GPU once per instance; an instance field's value per GPU is its instances'
    # sum (framebuffer, which a sum per pod adds up alike) or mean, which no statistic of the pod's takes.
    # A pod's copies of a device counter merged per physical GPU (merged_copies) are one series of its instances.
    exact = result.function in ("MAX", "MIN") if not field.per_instance else \
        instances_added(field) and result.function == "SUM"
    exact = exact or merged_copies(field, settings) == "gpu"
    if per_pod and grouped and not exact:
        notes.append(POD_MEMORY_SHARES if query.metric in MIG_MEMORY_SHARES else
                     POD_INSTANCES if POD_DIMENSION in result.series else
                     GROUP_COPIES if settings.exporter.virtual_gpus else GROUP_INSTANCES)
    return replace(result, notes=tuple(notes))


# A line combining each GPU's largest series over the cluster (_own_series_worst): a GPU weighs in by its period's worst.
EACH_LARGEST = ("each GPU weighs in by the largest state its period read (its worst series at its worst reading), not "
                "its latest: a GPU failing for one scrape of the period counts as failing for the period")


def _own_series_worst(query: Query, field, line, split, one_gpu: bool, split_ok: bool, alarm: bool) -> Plan:
    """A mean, least or total of a field whose GPU value is the largest of several series (DCGM's health per watched
    system: the worst, 0 pass, 10 warn, 20 fail): the agent sends each series as its own observation under the GPU's
    dimensions, so a mean, least or total of the observations takes every series (a GPU failing one of ten watches
    read 2 for 20). A line per GPU is the GPU's largest; over the cluster each GPU's largest, then their mean, least or
    total, by metric math; per node, namespace or pod no query reads a GPU's largest before the group's function, nor
    an alarm over the cluster (no metric math over an array): refused, as a count of its GPUs per group is (a node of
    two GPUs counted 20)."""
    agg = query.aggregation
    if one_gpu:
        return line("MAX")
    if split_ok:
        return replace(split("MAX", "SUM({q})" if agg == "sum" else across(MI_FUNCTIONS[agg])), notes=(EACH_LARGEST,))
    raise _every_series_taken(query, field, alarm)


def _every_series_taken(query: Query, field, alarm: bool) -> Unsupported:
    """The refusal of a statistic per group of GPUs (or an alarm's over the cluster) of a field whose GPU value is the
    largest of its several series (_own_series_worst)."""
    agg, own = query.aggregation, ", ".join(field.own_labels)
    where = f"per {', '.join(query.by)}" if query.by else "over the cluster"
    return Unsupported(f"{query.metric} is written as several series per GPU (by {own}), the GPU's value their "
                       f"largest, and CloudWatch holds each as an observation of the GPU: its {agg} {where} would take "
                       f"every series, not each GPU's value",
                       fix="take its max (each GPU's largest series)" + (
                           "" if alarm else ", or its mean, least, total or count over the cluster"))


def _own_series_added(query: Query, field, line, split_ok: bool, one_gpu: bool, period: int, interval: int,
                      base: dict, note: str) -> Plan:
    """A field whose GPU value is the sum of several series (a count per XID code): the agent sends each
    series as its own observation under the GPU's dimensions, so a GPU makes (series x scrapes)
    observations a period. Their SUM adds the series up; divided by the scrapes per period it is the
    mean of the GPU's per-scrape totals (a gauge), over the period a rate. MAX or AVG of the
    observations would take one series, or average the codes: never the GPU's total."""
    agg, n = query.aggregation, period / interval
    own = ", ".join(field.own_labels)

    def per_gpu_then(function: str, math: str, divisor: float) -> Plan:
        """Each GPU's total as its own line, combined into one line by metric math."""
        return Plan(function=function, math=math, divisor=divisor, needs_period=True,
                    **{**base, "group": base["gpu_series"], "series": ()})

    if field.is_counter and query.as_increase:
        if agg == "sum" or one_gpu:
            return line("SUM")
        if split_ok and agg in ("avg", "max", "min"):
            return replace(per_gpu_then("SUM", across(MI_FUNCTIONS[agg]), 1.0), needs_period=False)
    elif field.is_counter:  # a rate: the period's deltas over the period
        scale = period / field.unit.rate_scale
        if agg == "sum" or one_gpu:
            return line("SUM", per_second(None, field.unit.rate_scale), scale, True)
        if split_ok and agg in ("avg", "max", "min"):
            return per_gpu_then("SUM", per_second(across(MI_FUNCTIONS[agg]), field.unit.rate_scale), scale)
    else:
        if agg == "sum" or (one_gpu and agg == "avg"):
            return replace(line("SUM", per_scrape(interval), n, True), notes=(note,))
        if split_ok and agg == "avg":
            return replace(per_gpu_then("SUM", per_scrape(interval).replace("{q}", f"({across('AVG')})"), n),
                           notes=(note,))
    if agg == "count" and (one_gpu or split_ok):
        if one_gpu:
            return line("COUNT", "{q} * 0 + 1", n)
        return replace(per_gpu_then("COUNT", "SUM({q} * 0 + 1)", 1.0), needs_period=False)
    raise Unsupported(f"CloudWatch receives each {own} of {query.metric} as its own observation, not the GPU's "
                      f"total: it can show sums and per-GPU averages of it, not the {agg}"
                      + (f" per {', '.join(base['series'])}" if base["series"] and not one_gpu else ""))


# The Prometheus -> EMF path: the agent gpudash configures, its dimension sets from the settings.
AGENT_LAYOUT = Layout(_dimension_set, _series_key, (NODE_DIMENSION, GPU_DIMENSION), scrape_seconds, blanks=True,
                      instances=True)


def number(value: float) -> str:
    """A plain decimal for metric math (no exponent): the shortest digits that read back as the float
    (its repr), with the exponent written out as zeros."""
    text = repr(float(value))
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign, mantissa = ("-", mantissa[1:]) if mantissa.startswith("-") else ("", mantissa)
        whole, _, fraction = mantissa.partition(".")
        digits, point = whole + fraction, len(whole) + int(exponent)
        if point <= 0:
            text = f"{sign}0.{'0' * -point}{digits}"
        elif point >= len(digits):
            text = sign + digits + "0" * (point - len(digits))
        else:
            text = f"{sign}{digits[:point]}.{digits[point:]}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def series_label(plan_: Plan, per_pod: bool, metric: str) -> str:
    """Dynamic label of each result line: `Pod <namespace>/<pod>`, `<node> GPU <n>`, ..."""
    if not plan_.series:
        return metric
    parts = {d: f"${{PROP('Dim.{d}')}}" for d in plan_.series}
    if per_pod and len(plan_.series) == 2:
        return "Pod " + "/".join(parts[d] for d in plan_.series)
    if plan_.series == (NODE_DIMENSION, GPU_DIMENSION):
        return f"{parts[NODE_DIMENSION]} GPU {parts[GPU_DIMENSION]}"
    if plan_.series == (NODE_DIMENSION, GPU_DIMENSION, MIG_INSTANCE_LABEL):  # per GPU instance
        return f"{parts[NODE_DIMENSION]} GPU {parts[GPU_DIMENSION]} MIG {parts[MIG_INSTANCE_LABEL]}"
    if plan_.series == (NODE_DIMENSION, GPU_DIMENSION, MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL):  # per MIG instance
        return (f"{parts[NODE_DIMENSION]} GPU {parts[GPU_DIMENSION]} MIG {parts[MIG_INSTANCE_LABEL]} "
                f"({parts[MIG_PROFILE_LABEL]})")
    if plan_.series == plan_.gpu_series:  # a device name (nvidia0) says it is a GPU
        return " ".join(parts[d] for d in plan_.gpu_series)
    return " ".join(parts.values())

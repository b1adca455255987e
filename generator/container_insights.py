"""`cloudwatch.source: container-insights`: the same definitions on the add-on's own GPU metrics. Pure.

The Amazon CloudWatch Observability add-on publishes each DCGM field it collects three times
(container_, pod_, node_; see container_insights_table). A neutral query is read at the level
its grouping names:

* pod views (grouped by pod or namespace) read `pod_*`, one line per pod named by Namespace and
  FullPodName (PodName is the pod's owner), labelled `Pod <namespace>/<pod>`;
* container views read `container_*`;
* GPU views (node, gpu) read `node_*` by NodeName and GpuDevice, and fleet views read `node_*`
  cluster-wide: node metrics cover every GPU, held by a pod or idle.

The statistics are planned exactly as for the Prometheus -> EMF path (cloudwatch_query.plan),
with this source's dimension sets and its DCGM collections (cloudwatch.addon_gpu_interval: gpu_interval); a field the add-on publishes in
other units (bytes for DCGM's MiB, percent for a 0-1 ratio) is divided back by its scale in the
widget's math, and an alarm's threshold is scaled instead, so thresholds mean the same on both
sources. A query whose field the add-on does not publish raises NotPublished: dashboards leave
the panel out and say so, alarms are left out with a note (generate prints it, lint lists it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .catalog import PER_PROCESS_FIELDS, Catalog
from .cloudwatch_query import (AGENT_LAYOUT, COUNTED_BLANK_OPENING, NAMED_WEIGHED_COLLECTIONS,
                               NAMESPACE_WEIGHED_COLLECTIONS, across, group_mean_weighed, Layout, Plan, Unsupported,
                               blanks_dropped, number, per_scrape_notes, plan as agent_plan)
from .container_insights_table import (
    CLUSTER, CONTAINER, DEVICE, INSTANCE, INSTANCE_TYPE, NAMESPACE, NAMESPACE_DIM, NODE, POD,
    POD_OWNER, RATIOS, Mapping, by_field, metric_name)
from .model import Alarm, Condition, Query
from .settings import Settings

AGENT_SOURCE, ADDON_SOURCE = "prometheus-emf", "container-insights"
SOURCES = (AGENT_SOURCE, ADDON_SOURCE)
KEYS = {"cluster": CLUSTER, "namespace": NAMESPACE_DIM, "pod": POD, "container": CONTAINER, "node": NODE,
        "gpu": DEVICE}
POD_KEYS, GPU_KEYS = {"namespace", "pod", "container"}, {"node", "gpu"}


class NotPublished(Unsupported):
    """The add-on does not publish a field (or the ratio of fields) the query reads."""


def source(settings: Settings) -> str:
    return settings.cloudwatch.source


def enabled(settings: Settings) -> bool:
    return source(settings) == ADDON_SOURCE


# --- which metric, which level ---------------------------------------------------------

def mapped(query: Query) -> tuple[Query, Mapping]:
    """The query on one published DCGM field, and that field's mapping; NotPublished when there is none.

    A ratio the add-on publishes as its own metric (framebuffer used over used + free) keeps the
    numerator as the query's field: its kind (a gauge) is what the statistics depend on."""
    if query.raw_promql:
        raise Unsupported("raw PromQL is Grafana-only")
    field = query.metric
    if query.over:
        field = RATIOS.get((query.metric, frozenset(query.over)), "")
        if not field:
            raise NotPublished(f"the Container Insights add-on publishes no ratio of {query.metric} over "
                               f"{' + '.join(query.over)}")
        query = replace(query, over=())
    mapping = by_field().get(field)
    if mapping is None:
        raise NotPublished(f"the Container Insights add-on does not publish {field}")
    return query, mapping


def level(query: Query) -> str:
    keys = {k for k in query.by if k != "cluster"}
    unknown = sorted(keys - POD_KEYS - GPU_KEYS)
    if unknown:
        raise NotPublished(f"the Container Insights add-on publishes no dimension for {', '.join(unknown)}")
    if "container" in keys:
        return "container"
    if keys & POD_KEYS:
        if "node" in keys:
            raise Unsupported("the add-on's pod metrics carry no node dimension; group by pod or by node and gpu")
        return "pod"
    return "node"


def _dimension_set(query: Query, _settings: Settings | None = None) -> tuple[str, ...]:
    keys = {k for k in query.by if k != "cluster"}
    device = (DEVICE,) if "gpu" in keys else ()
    where = level(query)
    if where == "container":
        return (CLUSTER, NAMESPACE_DIM, POD_OWNER, POD, CONTAINER) + device
    if where == "pod":
        if keys & {"pod", "gpu"}:
            return (CLUSTER, NAMESPACE_DIM, POD_OWNER, POD) + device
        return CLUSTER, NAMESPACE_DIM
    if "gpu" in keys:
        return CLUSTER, NODE, INSTANCE, INSTANCE_TYPE, DEVICE
    return (CLUSTER, NODE, INSTANCE) if "node" in keys else (CLUSTER,)


def _series_key(query: Query, _settings: Settings | None = None) -> tuple[str, ...]:
    keys = [k for k in query.by if k != "cluster"]
    if query.per_pod and "namespace" not in keys:
        keys.insert(keys.index("pod"), "namespace")  # a pod is named within its namespace
    return tuple(KEYS[k] for k in keys)


def gpu_interval(settings: Settings) -> int:
    """Seconds between two observations of one GPU on the add-on: its agent's DCGM collections
    (cloudwatch.addon_gpu_interval, written into its accelerated_compute_gpu_metrics_collection_interval:
    addon_configuration). Below 60 s the agent sends a minute's collections as one distribution whose SampleCount is
    the collections, so a period's observations of a GPU are period / gpu_interval either way."""
    return settings.cloudwatch.addon_gpu_interval


def node_interval(settings: Settings) -> int:
    """Seconds between the add-on agent's collections of a node's metrics (cloudwatch.addon_metrics_interval)."""
    return settings.cloudwatch.addon_metrics_interval


LAYOUT = Layout(_dimension_set, _series_key, (NODE, DEVICE), gpu_interval, NAMESPACE,
                interval_setting="cloudwatch.addon_gpu_interval", observation="collection")


def layout_of(settings: Settings) -> Layout:
    """Where the configured source publishes, and how often it observes one GPU (its `interval`, named by its
    `interval_setting`)."""
    return LAYOUT if enabled(settings) else AGENT_LAYOUT


def observed_every(settings: Settings) -> int:
    """Seconds between two observations of one GPU on the configured source, the one fact every widget, alarm,
    price and header that counts a GPU's observations reads: the add-on's DCGM collection interval
    (cloudwatch.addon_gpu_interval) on container-insights, the scrape interval (scrape.interval) on the agent's
    pipelines."""
    return layout_of(settings).interval(settings)


def plan(query: Query, catalog: Catalog, settings: Settings, period: int, *, alarm: bool = False,
         now: bool = False) -> Plan:
    """The add-on's metric for `query`, computed as cloudwatch_query.plan computes it, in the query's own unit. `now`:
    the widget shows one value now (render/cloudwatch._now_value), the only kind the per-GPU form of a fleet value is
    for (fleet_per_gpu): its fallback past its LIMIT is a now value's (readings_past_500), and a chart over a range in
    that form would read the LIMIT's GPUs only, counted as distinct series over the whole range (a fleet whose nodes
    are replaced daily passes 500 in a week at 100 GPUs)."""
    bare, mapping = mapped(query)
    if settings.exporter.virtual_gpus and query.metric in PER_PROCESS_FIELDS and not query.whole_gpu \
            and level(bare) != "node":
        raise NotPublished(POD_SHARES.format(query.metric))
    result = agent_plan(bare, catalog, settings, period, alarm=alarm, layout=LAYOUT)
    result = replace(result, metric=metric_name(level(bare), mapping))
    if now and not alarm and fleet_per_gpu(bare, catalog):
        result = _per_gpu_form(bare, result, settings)
    if level(bare) != "node":
        result = replace(result, notes=result.notes + (SHARED_UNDER_ONE,))
    if pod_mean_pooled(bare, result):
        result = replace(result, notes=result.notes + (NAMED_WEIGHED_COLLECTIONS,))
    if result.function == "AVG" and group_mean_weighed(bare, ()) \
            and NAMESPACE_WEIGHED_COLLECTIONS not in result.notes:  # a namespace's GPUs' collections pooled alike
        result = replace(result, notes=result.notes + (NAMESPACE_WEIGHED_COLLECTIONS,))
    if result.function != "COUNT" and mapping.scale != 1:  # a count of GPUs or pods has no unit
        scale = number(mapping.scale)
        math = f"{{q}} / {scale}" if result.math is None else f"({result.math}) / {scale}"
        result = replace(result, math=math, divisor=result.divisor * mapping.scale)
    if alarm:
        return result  # alarms take no math: their descriptions say a blank reads as a value (ALARM_BLANKS)
    return blanks_dropped(result, bare, catalog, ARRAY_BLANKS, COUNTED_BLANKS)


def fleet_per_gpu(query: Query, catalog: Catalog) -> bool:
    """A widget's count, total or mean of a gauge over the cluster's GPUs ("GPUs reporting", "Total power draw", the
    average utilization and temperature, "Framebuffer in use"): read in classic's per-GPU form (_per_gpu_form)."""
    field = catalog.get(query.metric) if query.metric in catalog else None
    return field is not None and not field.is_counter and not field.across_own_labels and not query.per_pod \
        and query.aggregation in ("count", "sum", "avg") and not {k for k in query.by if k != "cluster"}


def _per_gpu_form(query: Query, result: Plan, settings: Settings) -> Plan:
    """A fleet value (fleet_per_gpu) in the per-GPU form agent.pipeline: classic reads: node_* by NodeName and
    GpuDevice, each GPU's mean over the period (AVG), then counted, added or averaged over the GPUs by metric math, so
    a GPU weighs whole whatever share of the period's collections arrived. Over the cluster's observations
    ([ClusterName]) a count or total divided by the collections a period holds, and a mean pooling them, weighed a
    node by its collections that arrived: its 4-GPU node's one collection failing read the add-on's fleet of 6 GPUs
    and 963 W as 2 GPUs and 401 W over a minute of one collection, 4 and 664.5 W over two minutes
    (tests/unit/test_container_insights_now_missed_collection.py). Past its LIMIT the widget reads the cluster's
    observations instead (render/cloudwatch.readings_past_500)."""
    math = {"count": "SUM({q} * 0 + 1)", "sum": "SUM({q})", "avg": across("AVG")}[query.aggregation]
    per_scrape = set(per_scrape_notes(settings, False, LAYOUT))  # the period's observations over its collections
    return replace(result, function="AVG" if query.aggregation != "count" else "COUNT",
                   dims=(CLUSTER, NODE, INSTANCE, INSTANCE_TYPE, DEVICE), group=(NODE, DEVICE), series=(), math=math,
                   divisor=1.0, needs_period=False, notes=tuple(n for n in result.notes if n not in per_scrape))


# DCGM's blank sentinels reach CloudWatch on the add-on: its agent's Container Insights pipeline drops no reading by
# value (amazon-cloudwatch-agent, translator/translate/otel/pipeline/containerinsights: a batch processor, a filter of
# the scrape's own series by name, filter_containerinsights_config.yaml, the metric renames and scales and the GPU
# label filter, then awsemf), and nothing gpudash writes can change that pipeline: the add-on takes the agent's JSON,
# whose kubernetes keys make it as it is, and an OTel YAML merged beside it may not redefine a pipeline or processor
# the JSON made (internal/merge/confmap: a merge conflict). So widgets drop them as on agent.pipeline: classic.
ARRAY_BLANKS = ("a GPU's blank reading (about 9.2e18 or 1.4e14) shows as a value on its line (the Container Insights "
                "add-on publishes DCGM's blanks and its configuration has no way to drop them)")
COUNTED_BLANKS = (f"{COUNTED_BLANK_OPENING} (the Container Insights add-on publishes DCGM's blanks, where Grafana "
                  "does not count it)")
ALARM_BLANKS = "DCGM's blank (about 9.2e18 or 1.4e14: no reading) is a reading here"  # short: a description holds 1,024

# A GPU split into MIG instances on the add-on: its agent's GPU processor keeps only ClusterName, InstanceId,
# GpuDevice, NodeName, Type, InstanceType, Version, Sources and Timestamp on node_ metrics
# (plugins/processors/gpuattributes/internal/metricFilters/gpumetricfilters.go NodeGpuLabelFilter: GPU_I_ID and
# GPU_I_PROFILE go), so the instances' readings of one collection carry one label set and the EMF exporter keeps the
# first ("Duplicate metric found", awsemfexporter grouped_metric.go); the pod_ and container_ filters keep the pod
# but not the instance, so a pod holding several instances of one GPU keeps one of them too.
MIG_ONE_INSTANCE = ("A GPU split into MIG instances is published by the Container Insights add-on as one of its "
                    "instances: the add-on's agent drops the instance labels (GPU_I_ID, GPU_I_PROFILE) from its GPU "
                    "metrics, so the instances' readings of a collection are one metric and it keeps the first (its "
                    "log says \"Duplicate metric found\"). A MIG GPU's line, and the fleet values it is in, read one "
                    "instance's framebuffer (a slice, not the GPU's total) and utilization, which MIG does not "
                    "report: what the exporter writes for an instance, 0 on some exporter versions (DCGM's blank on "
                    "others); a pod holding several instances of one GPU reads one of them; alarms judge that one "
                    "instance, so the idle alarm calls every pod on MIG instances idle where the exporter writes 0. "
                    "Per MIG instance, read cloudwatch.source: prometheus-emf.")
# MIG_ONE_INSTANCE in an alarm's description: its notes, whole and short (render/alarm_text)
ALARM_MIG_ONE_INSTANCE = ("a GPU split into MIG instances is read as one of its instances (the add-on's agent drops "
                          "the instance labels and keeps one instance's reading of a collection; lint CW021)")
ALARM_MIG_ONE_INSTANCE_SHORT = "a MIG GPU reads as one of its instances (lint CW021)"
# ... where the field is one MIG does not report at all (utilization): an instance's series carries what its exporter
# writes, 0 on some versions (DCGM's blank on others: ALARM_BLANKS), so an alarm below a positive level fires for a
# GPU or pod on MIG instances whatever its use (tests/unit/test_container_insights_mig.py); {fires} is said by the
# alarm's comparison, as ALARM_BLANKS' is
ALARM_MIG_UNREPORTED = ("a GPU split into MIG instances reports no {field}: the add-on publishes what its exporter "
                        "writes for an instance, 0 on some exporter versions, so this alarm {fires} for a GPU or pod on "
                        "MIG instances whatever its use (lint CW021)")
ALARM_MIG_UNREPORTED_SHORT = ("a MIG GPU's {field} reads 0 on some exporters: it {fires} for its pods whatever their use "
                              "(lint CW021)")


def one_instance_fields() -> dict[str, str]:
    """{the add-on's metric: its DCGM field} of the fields MIG reports per instance, or does not report at all
    (utilization): on a GPU split into MIG instances the add-on reads one instance's (MIG_ONE_INSTANCE), which differs
    from the GPU's reading. Lint CW021 notes each widget and alarm on one; an alarm's description says it."""
    from .catalog import MIG_UNSUPPORTED, per_instance_field
    from .container_insights_table import LEVELS, MAPPINGS

    return {metric_name(level, m): m.field for m in MAPPINGS for level in LEVELS
            if m.field in MIG_UNSUPPORTED or per_instance_field(m.field)}


def reads_one_instance(plan_: Plan, settings: Settings) -> bool:
    """Whether an alarm's plan on the add-on reads one instance of a GPU split into MIG instances (one_instance_fields;
    a count of series reads none of their values), where GPUs may be split."""
    return enabled(settings) and not settings.no_mig and plan_.namespace == NAMESPACE \
        and plan_.function != "COUNT" and plan_.metric in one_instance_fields()


# The add-on's chart runs its own DCGM exporter (templates/linux/dcgm-exporter-daemonset.yaml, a DcgmExporter whose
# env is DCGM_EXPORTER_KUBERNETES, DCGM_EXPORTER_LISTEN and NODE_NAME only): never with KUBERNETES_VIRTUAL_GPUS. It
# writes a GPU several pods share once, the device's value labelled with one of them, so the add-on's pod_ and
# container_ metrics hold no pod's own share of the fields the exporter splits per process. Its node_ metrics are
# the device's value: per-GPU and fleet views stay true.
POD_SHARES = ("exporter.virtual_gpus: the Container Insights add-on's own DCGM exporter runs without "
              "KUBERNETES_VIRTUAL_GPUS, so it publishes no pod's own share of {} (a GPU several pods share is "
              "published under one of them with the whole GPU's value); per pod, read it from cloudwatch.source: "
              "prometheus-emf with agent.pipeline: otel")


SHARED_UNDER_ONE = ("a GPU several pods share by time-slicing or MPS is published under one of them (the add-on's "
                    "DCGM exporter runs without KUBERNETES_VIRTUAL_GPUS), with the whole GPU's value: the other pods "
                    "show none of it")


def pod_mean_pooled(query: Query, result: Plan) -> bool:
    """A pod's mean over its GPUs on the add-on (not per GPU): the agent publishes each GPU's collection at the pod's
    dimension set, so AVG pools the period's collections of its GPUs, and its exporter (never with
    KUBERNETES_VIRTUAL_GPUS, SHARED_UNDER_ONE) names a GPU pods share under one of them at a time: a GPU named under
    the pod at some collections weighs by them (NAMED_WEIGHED_COLLECTIONS; tests/support/container_insights_addon)."""
    return result.function == "AVG" and level(query) == "pod" and query.per_pod and "gpu" not in query.by \
        and NAMED_WEIGHED_COLLECTIONS not in result.notes


def source_plan(query: Query, catalog: Catalog, settings: Settings, period: int, *, alarm: bool = False,
                pod_gpus: bool = True, now: bool = False) -> Plan:
    """The plan of `query` on the configured source (`cloudwatch.source`); `pod_gpus`: cloudwatch_query.plan's; `now`:
    the add-on plan's."""
    if enabled(settings):
        return plan(query, catalog, settings, period, alarm=alarm, now=now)
    return agent_plan(query, catalog, settings, period, alarm=alarm, pod_gpus=pod_gpus)


def publishes(query: Query) -> bool:
    try:
        mapped(query)
    except NotPublished:
        return False
    return True


def condition(alarm: Alarm, settings: Settings) -> Condition:
    """The condition CloudWatch evaluates. On the add-on: the CloudWatch-specific one when the add-on
    publishes its fields, else the alarm's own (the add-on publishes framebuffer use as a ratio, so
    the ratio condition that the Prometheus -> EMF path cannot compute works here)."""
    if not enabled(settings):
        return alarm.cloudwatch or alarm.condition
    for candidate in (alarm.cloudwatch, alarm.condition):
        if candidate is not None and publishes(candidate.query):
            return candidate
    return alarm.cloudwatch or alarm.condition


# --- the add-on's configuration -----------------------------------------------------------

def addon_configuration(settings: Settings) -> dict[str, Any]:
    """The EKS add-on's configuration values: enhanced observability with accelerated compute metrics, collected at
    the intervals the data-missing alarm counts (cloudwatch.addon_metrics_interval, addon_gpu_interval), written
    explicitly so that a configuration these keys are merged into keeps them.

    Keys from the CloudWatch agent's configuration (logs.metrics_collected.kubernetes
    .enhanced_container_insights, .accelerated_compute_metrics, .metrics_collection_interval,
    .accelerated_compute_gpu_metrics_collection_interval: translator/translate/otel/receiver/awscontainerinsight);
    the add-on's chart takes the agent's configuration under agent.config."""
    kubernetes = {"enhanced_container_insights": True, "accelerated_compute_metrics": True,
                  "metrics_collection_interval": node_interval(settings),
                  "accelerated_compute_gpu_metrics_collection_interval": gpu_interval(settings)}
    return {"agent": {"config": {"logs": {"metrics_collected": {"kubernetes": kubernetes}}}}}

"""Monthly CloudWatch cost of a fleet, from the project's artifact set and a dated price file. Pure.

What the bill has, line by line (rates, sources and dates in defaults/cloudwatch-prices.json):

* custom metrics: every shipped field once per GPU (the per-GPU set) and once per pod
  holding GPUs (the per-pod set), as the generated agent config publishes them; pod churn
  adds metrics prorated by the hour; priced by each Region's tiers (region_shares: the fleet's clusters spread
  over the settings' Regions);
* the agent's EMF log events, ingested and stored (compressed, for the log group's retention): the exporter
  groups a scrape's datapoints into one event per label set and metric type (log_events), which
  every scraped field reaches, published or not;
* dashboards: per cluster; the free tier covers 3 dashboards of at most 50 metrics;
* the free tier's other allowances (free_tier): 10 custom metrics, 10 alarm metrics of standard alarms that
  list their metrics, 5 GB of logs ingested and stored, taken from the fleet's bill (the account's other use
  shares them);
* alarms: a Metrics Insights alarm is billed per metric its query analyzes (every pod or
  GPU of its cluster), a static alarm per metric;
* dashboard reads: each widget's query analyzes every metric its SCHEMA matches in the
  cluster, at every refresh while someone looks; the console runs them free of charge, so they
  are counted at the console's rate (0 unless a price file says otherwise).
"""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from . import data_missing, stopped_gpus
from .catalog import MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL, MIG_UNSUPPORTED
from .cloudwatch_query import (NAMESPACE_GPU, NODE_MEAN, NODE_MEAN_KINDS, ONCE_PER_GPU, UNUSED_SHARE, is_query,
                               level_of, pod_dimensions, node_total, pod_total_kind, pod_total_mark, readings_dimensions)
from .dashboard_limit import ADDON_FLEET_METRICS, METRICS_PER_WIDGET
from .errors import InputError
from .guesses import did_you_mean
from .exporter_styles import named_daemonsets
from .markers import GPU_DIMENSION, POD_DIMENSION
from .project import Project
from .reading import read_json
from .render.agent import Published, published, selected_metrics

if TYPE_CHECKING:
    from .artifacts import Artifacts, CloudWatchDashboard

PRICES = Path(__file__).resolve().parent / "defaults" / "cloudwatch-prices.json"
HOURS_PER_MONTH = 730
MINUTES_PER_MONTH = HOURS_PER_MONTH * 60


# What Fleet.held_copies counts, said where it is used
HELD_PAIRS = ("estimated as one per GPU held, or per pod where pods share GPUs: each pod holding several GPUs while "
              "others share one adds one per GPU more")


@dataclass(frozen=True)
class Fleet:
    clusters: int
    pods: int  # GPU pods running at once, across the fleet
    churn: int  # GPU pods started per month
    dashboard_view_hours: float = 40.0  # per cluster per month
    refresh_minutes: int = 5
    gpus: int | None = None  # GPUs across the fleet; default: one per pod
    nodes: int | None = None  # GPU nodes across the fleet; default: one per GPU (an upper bound)
    mig_instances: int | None = None  # GPU instances each GPU is split into (MIG); None: not said (whole GPUs)
    # the exporter runs with KUBERNETES_VIRTUAL_GPUS (settings exporter.virtual_gpus): a copy of a shared GPU
    # instance's series per pod holding it; without it one series, under one of the pods
    virtual_gpus: bool = False

    def of_kind(self, settings, clusters) -> "Fleet":
        """The fleet as `clusters` of the settings have it: --mig-instances describes the GPUs of the clusters that may
        be split (exporter.mig, clusters[].exporter.mig); where each of `clusters` says none, their GPUs are whole."""
        return replace(self, mig_instances=None) if self.mig and settings.for_clusters(clusters).no_mig else self

    @property
    def gpu_count(self) -> int:
        return self.pods if self.gpus is None else self.gpus

    @property
    def instances(self) -> int:
        """The GPU instances pods can hold: a whole GPU is one, a MIG GPU as many as it is split into."""
        return self.gpu_count * (self.mig_instances or 1)

    @property
    def mig(self) -> bool:
        return (self.mig_instances or 1) > 1

    @property
    def copies(self) -> int:
        """The exporter's copies of the GPUs' series at one scrape: one per GPU instance, and where more pods run
        than there are instances (time-slicing, MPS) and the exporter runs with KUBERNETES_VIRTUAL_GPUS, one per pod
        holding an instance (each pod holds one: the copies carry the pod's labels, so each is a label set of its
        own). Without the setting the exporter writes a shared instance once, labelled with one of its pods
        (dcgm-exporter #307, #340)."""
        return max(self.instances, self.pods) if self.virtual_gpus else self.instances

    @property
    def named_pods(self) -> int:
        """The pods the exporter names at one scrape: each with KUBERNETES_VIRTUAL_GPUS, else one per GPU instance
        at most."""
        return self.pods if self.virtual_gpus else min(self.pods, self.instances)

    @property
    def held_copies(self) -> int:
        """The label sets of a pod and a GPU instance it holds that a month publishes, estimated from the counts the
        fleet gives: one per GPU instance held, or per pod where more pods run than instances (pods sharing one).
        Without KUBERNETES_VIRTUAL_GPUS a scrape names one pod of a shared instance, but not always the same one
        (kubelet's order is not fixed: dcgm-exporter #340), so every pod sharing it counts. Not a bound: where some
        pods share a GPU while others hold several, every pair of a pod and a GPU it holds is one (5 pods on 5 GPUs,
        three sharing one and one holding two: 6), which the pods and GPUs alone do not tell (HELD_PAIRS)."""
        return max(self.instances, self.pods)

    @property
    def namespace_gpus(self) -> int:
        """The pairs of a namespace and a GPU its pods hold (cloudwatch_query.NAMESPACE_GPU), at most: one per GPU
        instance a pod holds (a MIG GPU's instances may be held by as many namespaces), and no more than the pods."""
        return min(self.pods, self.instances)

    def warnings(self, no_mig: bool = False) -> list[str]:
        """What the fleet's figures leave open, and how it is counted. `no_mig`: every cluster of the settings says no
        GPU is split (exporter.mig: none), so pods beyond the GPUs can only share them."""
        if self.mig_instances is None and self.pods > self.gpu_count:
            writes = ("once per pod holding it (exporter.virtual_gpus)" if self.virtual_gpus else
                      "once, under one of the pods holding it (exporter.virtual_gpus is not set)")
            return [f"{self.pods:,} pods on {self.gpu_count:,} GPUs: counted as pods sharing GPUs (time-slicing or "
                    f"MPS), the exporter writing each GPU's series {writes}" + (
                        "" if no_mig else
                        "; if the GPUs are split into MIG instances, give --mig-instances N (the instances per GPU; "
                        "1: whole GPUs, which also says the pods time-slice them)")]
        return []

    @property
    def started_per_hour(self) -> float:
        """GPU pods started in an hour across the fleet (the month's churn spread evenly)."""
        return self.churn / HOURS_PER_MONTH

    @property
    def node_count(self) -> int:
        return self.gpu_count if self.nodes is None else self.nodes


@dataclass(frozen=True)
class Line:
    item: str
    quantity: float
    unit_price: float
    monthly: float
    basis: str


OVERRIDE_HINT = 'give a JSON object like {"rates": {"dashboard_month": {"price": 3.0}}}'
_TEXT_FIELDS = ("unit", "source", "as_of")  # what a rate may carry besides its numbers
# the fields of rates that count things, with what they count: a whole number of them (3.0 is 3)
_COUNTS = {("free_dashboards", "count"): "dashboards", ("free_dashboards", "max_metrics"): "metrics",
           ("free_tier", "custom_metrics"): "metrics", ("free_tier", "alarm_metrics"): "alarm metrics"}


def _whole(value: Any) -> bool:
    return _amount(value) and float(value).is_integer()


def _one_of(name: str, known, what: str) -> str:
    return did_you_mean(name, known) + f"{what}: {', '.join(known)}"


def _amount(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def check_overrides(extra: Any, prices: dict[str, Any], where: str) -> None:
    """An override file that would not change what its author meant is an error, never ignored:
    an unknown key or rate (a typo), a field a rate does not have, a price that is not a number."""
    if not isinstance(extra, dict):
        raise InputError(f"the prices must be a JSON object, not {type(extra).__name__}", where=where,
                         hint=OVERRIDE_HINT)
    for key in extra:
        if key in prices["rates"]:  # a rate written at the top, as the bundled file's keys are not
            field = next(f for f in prices["rates"][key] if f not in (*_TEXT_FIELDS, "uncertain"))
            raise InputError(f"unknown key {key!r}: a rate, which goes under \"rates\" with its fields", where=where,
                             hint="write " + json.dumps({"rates": {key: {field: prices["rates"][key][field]}}}))
        if key not in ("rates", "as_of", "source", "region", "currency"):
            raise InputError(f"unknown key {key!r}", where=where,
                             hint=_one_of(key, ("rates", "as_of", "source", "region", "currency"), "the keys are"))
    # a copy of the bundled file carries its currency: the same one only (the bill prints every amount in it)
    if "currency" in extra and extra["currency"] != prices["currency"]:
        raise InputError(f"currency is {json.dumps(extra['currency'])}: gpudash prices in {prices['currency']} "
                         f"(every amount of the bill is printed in it)", where=where,
                         hint=f"write the rates in {prices['currency']} and currency {json.dumps(prices['currency'])}, "
                              f"or leave currency out")
    if "region" in extra and not (isinstance(extra["region"], str) and extra["region"].strip()):
        raise InputError(f"region must be the Region the rates are for, such as \"eu-west-1\", not "
                         f"{json.dumps(extra['region'])}", where=where, hint=OVERRIDE_HINT)
    rates = extra.get("rates", {})
    if not isinstance(rates, dict):
        raise InputError("rates must be an object of rate name to its fields", where=where, hint=OVERRIDE_HINT)
    for name, fields in rates.items():
        if name not in prices["rates"]:
            raise InputError(f"unknown rate {name!r}", where=where, hint=_one_of(name, prices["rates"], "the rates are"))
        if not isinstance(fields, dict):
            raise InputError(f"rates.{name} must be an object like {{\"price\": 3.0}}, not {json.dumps(fields)}",
                             where=where, hint=OVERRIDE_HINT)
        numbers = [f for f in prices["rates"][name] if f not in (*_TEXT_FIELDS, "uncertain")]
        for field, value in fields.items():
            if field == "uncertain":  # a copy of the bundled file's flag, or false for a rate its author checked
                if not isinstance(value, bool):
                    raise InputError(f"rates.{name}.uncertain is {json.dumps(value)}, not true or false",
                                     where=where, hint="write true (a rate to check) or false (checked)")
                continue
            if field not in numbers and field not in _TEXT_FIELDS:
                raise InputError(f"rates.{name} has no field {field!r}", where=where,
                                 hint=_one_of(field, numbers, f"rates.{name} takes"))
            if field == "tiers":
                expected = "a list of [units in the tier (null for the rest), price] pairs"
                good = isinstance(value, list) and value and all(
                    isinstance(t, list) and len(t) == 2 and (t[0] is None or _amount(t[0])) and _amount(t[1])
                    for t in value)
            elif (name, field) in _COUNTS:
                expected, good = f"a whole number of {_COUNTS[name, field]}, 0 or more", _whole(value)
            elif field in numbers:
                expected, good = "a number of 0 or more", _amount(value)
            else:
                expected, good = "text", isinstance(value, str)
            if not good:
                raise InputError(f"rates.{name}.{field} is {json.dumps(value)}, not {expected}", where=where,
                                 hint=f"write {expected}, e.g. " + json.dumps({field: prices["rates"][name][field]}))
            if field == "tiers":
                _check_tiers(value, f"rates.{name}.tiers", where)


def _check_tiers(tiers: list, name: str, where: str) -> None:
    """Tiers price every unit: the last is of null units (the rest), and none comes after it (`tiered` prices what
    passes the last bounded tier at nothing, and stops at the rest's)."""
    hint = "end the tiers with one of null units (the rest), e.g. [[10000, 0.3], [null, 0.1]]"
    for k, (size, _) in enumerate(tiers):
        if size is not None and not (_whole(size) and size >= 1):
            raise InputError(f"{name}[{k}] is a tier of {json.dumps(size)} units: a tier holds a whole number of "
                             f"units, 1 or more (what the Region's metrics are counted in), or null for the rest",
                             where=where, hint="write each tier's units as a whole number, e.g. [[10000, 0.3], "
                                               "[240000, 0.1], [null, 0.05]]; leave out a tier of none")
    rest = [k for k, (size, _) in enumerate(tiers) if size is None]
    if rest and rest[0] < len(tiers) - 1:
        raise InputError(f"{name} holds a tier after the one of null units (the rest): it is never reached",
                         where=where, hint=hint)
    if not rest:
        raise InputError(f"{name} ends with a tier of {json.dumps(tiers[-1][0])} units: what passes it would be "
                         f"priced at nothing", where=where, hint=hint)


def load_prices(path: Path = PRICES, overrides: Path | None = None) -> dict[str, Any]:
    """The price file; `overrides` (same shape, any subset of `rates`) replaces single rates."""
    prices = json.loads(path.read_text())
    if overrides is not None:
        extra = read_json(overrides, "prices file", OVERRIDE_HINT, unique_keys=True)
        check_overrides(extra, prices, str(overrides))
        prices = copy.deepcopy(prices)
        for key, value in extra.get("rates", {}).items():
            prices["rates"][key] = {**prices["rates"].get(key, {}), **value, "overridden": True}
        for key in ("as_of", "source", "region"):
            if key in extra:
                prices[key] = extra[key]
    return prices


def tiered(quantity: float, tiers: list[list[float | None]]) -> float:
    """Cost of `quantity` units under [[units in the tier (None: the rest), price], ...]."""
    total, left = 0.0, quantity
    for size, price in tiers:
        step = left if size is None else min(left, size)
        total += step * price
        left -= step
        if left <= 0:
            break
    return total


def region_shares(project: Project, fleet: Fleet) -> list[float]:
    """The share of the fleet's clusters (all alike) each Region holds: the fleet's clusters spread as evenly as they
    go over the Regions the settings name (one cluster: one Region), as fleet_limits spreads them. Custom metrics are
    priced by each Region's own tiers: the bill has a line per Region ("$0.30 per metric-month for the first 10,000
    metrics - Asia Pacific (Tokyo)"; the price file's unit)."""
    clusters = max(fleet.clusters, 1)
    regions = min(max(len({c.region for c in project.settings.clusters}), 1), clusters)
    each, more = divmod(clusters, regions)
    return [(each + 1) / clusters] * more + [each / clusters] * (regions - more)


def _rate(prices: dict[str, Any], key: str) -> dict[str, Any]:
    return prices["rates"][key]


def _price(prices: dict[str, Any], key: str) -> float:
    return float(_rate(prices, key)["price"])


def _free(prices: dict[str, Any], field: str) -> float:
    """The free tier's allowance of `field` a month (free_tier), 0 for a price file without one."""
    return float(prices["rates"].get("free_tier", {}).get(field, 0))


def _scrape_seconds(project: Project) -> int:
    return project.settings.scrape.seconds


def _per_cluster(fleet: Fleet) -> tuple[float, float]:
    clusters = max(fleet.clusters, 1)
    return fleet.pods / clusters, fleet.gpu_count / clusters


def _analyzed(dims: tuple[str, ...] | list[str], project: Project, fleet: Fleet) -> float:
    """Metrics one query over a dimension set analyzes in one cluster: its pods, its GPUs, or its GPU nodes (the
    exporter targets' scrapes without DCGM samples; on the Container Insights add-on a cluster-wide set is one
    metric)."""
    from .container_insights import enabled
    from .container_insights_table import CLUSTER, POD

    pods, gpus = _per_cluster(fleet)
    if enabled(project.settings):
        return 1.0 if list(dims) == [CLUSTER] else pods if POD in dims else gpus
    if tuple(dims) == data_missing.SAMPLES_SET:  # the exporter targets' scrapes without data: one per GPU node
        return fleet.node_count / max(fleet.clusters, 1)
    if list(dims) == pod_dimensions(project.settings) or _per_pod_total(dims):
        return pods
    if node_total(dims):  # a node's totals per scrape (a widget's or alarm's count or total per node)
        return fleet.node_count / max(fleet.clusters, 1)
    if NODE_MEAN in dims:  # a node's total and count of GPUs read per scrape (the fleet's values now): one of each
        return len(NODE_MEAN_KINDS) * fleet.node_count / max(fleet.clusters, 1)
    if NAMESPACE_GPU[0] in dims:  # a namespace's use of each GPU its pods hold
        return fleet.namespace_gpus / max(fleet.clusters, 1)
    if set(pod_dimensions(project.settings)) <= set(dims):  # an agent-made copy of the per-pod set (a mark added)
        return fleet.held_copies / max(fleet.clusters, 1) if _judges_pod_gpus(dims, project) else pods
    return gpus * (fleet.mig_instances or 1) if MIG_INSTANCE_LABEL in dims else gpus  # a MIG GPU's instances


def _judges_pod_gpus(dims: tuple[str, ...] | list[str], project: Project) -> bool:
    """Whether a per-pod GROUP BY alarm's set names the GPU: it analyzes one metric per GPU instance a pod holds (the
    idle alarm's: each of a pod's GPUs judged on its own), not one per pod."""
    from .container_insights import enabled

    return not enabled(project.settings) and not _per_pod_total(dims) \
        and (GPU_DIMENSION in dims or MIG_INSTANCE_LABEL in dims)


def _per_pod_total(dims: tuple[str, ...] | list[str]) -> bool:
    """A set of a pod's totals per scrape, one metric per pod; a pod's totals per GPU it holds (the set names the GPU)
    are one per GPU a pod holds, as the pod's fields per GPU. (A node's totals, node_total: one per node.)"""
    return bool(pod_total_kind(dims)) and GPU_DIMENSION not in dims and not node_total(dims)


def _addon_metric_lines(project: Project, fleet: Fleet, prices: dict[str, Any]) -> list[Line]:
    """The add-on's GPU metrics, priced per observation: every DCGM collection (every cloudwatch.addon_gpu_interval,
    container_insights.gpu_interval) gives each published metric one value per dimension set (the price file's
    observation; below 60 s the agent sends a minute's collections as one distribution, whose SampleCount is still
    the collections); node metrics for every GPU, pod and container metrics for the GPUs pods hold (one per pod, at
    the least; the Service set only for pods behind a Service)."""
    from .container_insights import gpu_interval
    from .container_insights_table import GPU_DIMENSION_SETS, MAPPINGS, SERVICE

    every = gpu_interval(project.settings)
    metrics = len(MAPPINGS)
    node_sets = len(GPU_DIMENSION_SETS["node"])
    held_sets = len([d for d in GPU_DIMENSION_SETS["pod"] if SERVICE not in d]) + len(GPU_DIMENSION_SETS["container"])
    held = min(fleet.pods, fleet.gpu_count)
    collections = MINUTES_PER_MONTH * 60 / every
    observations = collections * metrics * (fleet.gpu_count * node_sets + held * held_sets)
    price = _price(prices, "container_insights_observation_per_million")
    return [Line("Container Insights GPU observations (millions)", observations / 1e6, price,
                 observations / 1e6 * price,
                 f"{metrics} GPU metrics every {every} s (cloudwatch.addon_gpu_interval): x {node_sets} node sets x "
                 f"{fleet.gpu_count:,} GPUs + x {held_sets} pod and container sets x {held:,} GPUs pods hold; the "
                 f"add-on's CPU, memory and network metrics are billed alike and not counted here")]


@dataclass(frozen=True)
class Events:
    """EMF log events the agent writes at each scrape interval, fleet-wide, of one kind."""

    what: str
    count: float  # events per scrape interval across the fleet
    fields: int  # metrics each holds
    published: int  # of them, those a declaration publishes (named in the event's CloudWatchMetrics directive)
    full: bool  # carries a GPU's every label, else a few
    mig: bool = False  # a MIG instance's: its every label and GPU_I_PROFILE, GPU_I_ID
    directives: int = 1  # CloudWatchMetrics entries where it publishes any (one per group of metrics alike in sets)


def _what_is_published(project: Project) -> tuple[Published, dict[str, set[tuple[str, ...]]]]:
    from .render.cloudwatch import node_mean_kinds, queried_sets

    queried = queried_sets(project.cloudwatch_definitions(), project.alarms, project.catalog, project.settings)
    kinds = node_mean_kinds(project.cloudwatch_definitions(), project.catalog, project.settings)
    return published(project.catalog, project.settings, queried, kinds), queried


def _published_kinds(project: Project, fleet: Fleet) -> list[tuple[Published, dict[str, set[tuple[str, ...]]], float,
                                                                  tuple[Any, ...]]]:
    """(what the agents of a kind of cluster publish, what their widgets and alarms read, the share of the fleet's
    clusters they stand for, the settings' clusters of the kind) of each kind of cluster whose agents publish alike
    (artifacts.agents: what each cluster's own widgets and alarms read) and whose GPUs are alike (exporter.mig), the
    first cluster's kind last. Clusters read alike by value, not only by the object reads_by_cluster works out once
    per kind and Region: a cluster saying exporter.mig: none in a Region of its kind alone and one beside split
    clusters were two kinds, counted and named apart, where their agents publish the same. One kind, the whole fleet:
    as _what_is_published."""
    from .render.cloudwatch import node_mean_kinds, reads_by_cluster

    settings = project.settings
    reads = reads_by_cluster(project.cloudwatch_definitions(), project.alarms, project.catalog, settings)
    frozen: dict[int, Any] = {}  # each reads object's value, worked out once (a thousand clusters share a few)
    groups: dict[tuple[Any, bool], tuple[dict[str, set[tuple[str, ...]]], list]] = {}
    for cluster in settings.clusters:
        read = reads[cluster.name]
        if id(read) not in frozen:
            frozen[id(read)] = frozenset((name, frozenset(sets)) for name, sets in read.items())
        key = (frozen[id(read)], settings.for_clusters([cluster]).no_mig)
        groups.setdefault(key, (read, []))[1].append(cluster)
    if len(groups) < 2:
        return [(*_what_is_published(project), 1.0, settings.clusters)]
    result = []
    for queried, clusters in groups.values():
        kinds = node_mean_kinds(project.cloudwatch_definitions(), project.catalog, settings.for_clusters(clusters))
        share = _fleet_share(fleet, settings, clusters) / fleet.clusters if fleet.clusters >= 1 else \
            len(clusters) / len(settings.clusters)
        result.append((published(project.catalog, settings, queried, kinds), queried, share, tuple(clusters)))
    return result[::-1]


def log_events(project: Project, fleet: Fleet) -> list[Events]:
    """The EMF log events of one scrape of every target (_kind_events), where the fleet's clusters differ in what their
    agents publish (_published_kinds) each kind's on its share of the fleet's clusters: an event of one description
    and content in several kinds once, its counts added; told apart by the kind's clusters where its content differs."""
    kinds = _published_kinds(project, fleet)
    if len(kinds) == 1:
        what, queried, _, clusters = kinds[0]
        return _kind_events(project, fleet.of_kind(project.settings, clusters), what, queried)
    merged: dict[Events, float] = {}
    of: dict[Events, list[tuple[str, ...]]] = {}
    for what, queried, share, clusters in kinds[::-1]:  # the first cluster's kind first
        names = tuple(cluster.name for cluster in clusters)
        for event in _kind_events(project, fleet.of_kind(project.settings, clusters), what, queried):
            key = replace(event, count=0)
            merged[key] = merged.get(key, 0.0) + event.count * share
            of.setdefault(key, []).append(names)
    described = Counter(key.what for key in merged)
    return [replace(key, count=count) if described[key.what] == 1 else
            replace(key, count=count, what=f"{key.what}, in cluster{'s' if len(in_) > 1 else ''} {', '.join(in_)}")
            for key, count in merged.items() if count
            for in_ in [[name for names in of[key] for name in names]]]


def _kind_events(project: Project, fleet: Fleet, what: Published,
                 queried: dict[str, set[tuple[str, ...]]]) -> list[Events]:
    """The EMF log events of one scrape of every target, each agent publishing `what` of `queried` (the reads of its
    widgets and alarms), as the agent groups the datapoints into them.

    awsemf makes one event of the datapoints of one scrape (a target's points share its timestamp) with the same
    labels and metric type (Gauge, Sum: grouped_metric.go, the key of metric_translator.go's
    groupedMetricMetadata and the labels), and writes it whether or not a declaration publishes any of its
    metrics; on agent.pipeline: classic the scraper merges a scrape's samples by their labels first,
    prom_metric_type among them (plugins/inputs/prometheus mergeMetrics). The exporter writes a GPU's series
    once per GPU instance (a whole GPU is one; a MIG GPU's device fields repeat on every instance) and a shared
    instance once per pod holding it (time-slicing, MPS) with KUBERNETES_VIRTUAL_GPUS, each copy with its own labels,
    once under one of its pods without it (Fleet.copies). So per
    copy its gauges are one event, its counters another (classic), or on the OTel pipeline two: each pod's copy
    and the merged one, per GPU for device counters and per instance for the others
    (render/agent_otel.merged_counters); per pod on the OTel
    pipeline one event per kind of total per scrape of each pod named (pod_total, pod_gpus), and as many per node with a GPU no pod
    holds (its totals, without a pod, which no set publishes); per cluster kube-state-metrics' series. The filter
    drops `up` and `scrape_*` but, where the per-node alarm reads it, every scrape's
    scrape_samples_post_metric_relabeling (made a flag of no GPU data): one event per scrape of each exporter target
    (published per node) and of kube-state-metrics' (no `node` label: published in no set)."""
    from .cloudwatch_query import POD_GPU_TOTALS
    from .render.agent_otel import _merged_names

    per_gpu_marks = {mark for mark, _ in POD_GPU_TOTALS.values()}

    settings, catalog = project.settings, project.catalog
    # the scrape job drops the fields MIG does not report from a MIG instance's series
    dropped = set(MIG_UNSUPPORTED) if fleet.mig else set()
    gauges = [m.name for m in catalog if m.kind in ("gauge", "summary") and m.name not in dropped]
    counters = [m.name for m in catalog if m.kind == "counter" and m.name not in dropped]
    pod_set = tuple(pod_dimensions(settings))
    per_pod = set(what.fields.get(pod_set, []))
    # a GPU's readings once per scrape (render/agent_otel.once_per_gpu), in every set marked so: the fleet's values
    # past 500 GPUs (readings_dimensions), the alarms that count or add GPUs (cloudwatch_query.once_dimensions); one
    # point per GPU of each field, which every such set publishes
    once = sorted({m for dims, metrics in what.fields.items() if ONCE_PER_GPU[0] in dims for m in metrics})
    per_gpu = {m for dims, metrics in what.fields.items() if dims != pod_set and not pod_total_kind(dims)
               and ONCE_PER_GPU[0] not in dims and NAMESPACE_GPU[0] not in dims for m in metrics}
    # a namespace's use of each GPU its pods hold per scrape (render/agent_otel.namespace_readings, namespace_sums): one
    # point per namespace and GPU of each field, which its set publishes
    namespaces = sorted({m for dims, metrics in what.fields.items() if NAMESPACE_GPU[0] in dims for m in metrics})
    # a node's total and count of its GPUs' readings once per scrape (render/agent_otel.node_means; the fleet's values
    # now): an event per node and kind, each holding the fields whose widgets read that kind (Published.kinds)
    node_means = {kind: sorted({m for dims, metrics in what.fields.items() if NODE_MEAN in dims for m in metrics
                                if kind in what.kinds(m)}) for kind in NODE_MEAN_KINDS}

    def shown(names: list[str], sets: set[str]) -> int:
        return sum(1 for n in names if n in sets)

    gpus, pods, nodes, clusters = fleet.gpu_count, fleet.pods, fleet.node_count, fleet.clusters
    copies, instances = fleet.copies, fleet.instances
    # each pod holds a GPU instance at least: those no pod holds are at most the rest, on as many nodes at most
    idle_nodes = min(nodes, max(instances - pods, 0))
    # the agent scrapes kube-state-metrics where it publishes its counts (render/agent.reads_ksm): one event per
    # exporter DaemonSet
    ksm = int(what.ksm) * _fleet_daemonsets(fleet, settings)
    ksm_metrics = len(data_missing.KSM_METRICS)
    # each published in kube-state-metrics' set, the desired count in the agent alarm's too (data_missing.agent_set):
    # a second entry of the directive
    ksm_series = Events("kube-state-metrics' series", ksm, ksm_metrics, (ksm_metrics + 1) * what.ksm, False,
                        directives=2)
    # and kube-state-metrics' node series (data_missing.NODES): each GPU node's info and its GPU capacity, an event
    # each (their labels differ); a node without GPUs adds its info, not counted (the fleet counts GPU nodes)
    node_series = Events("kube-state-metrics' node series (a GPU node's info and GPU capacity; a CPU node's info is "
                         "not counted)", 2 * nodes if ksm else 0, 1, int(what.ksm), False)
    if settings.agent.pipeline == "classic":
        events = [Events("a GPU's gauges", copies, len(gauges), shown(gauges, per_gpu | per_pod), True),
                  Events("a GPU's counters", copies, len(counters), shown(counters, per_gpu | per_pod), True),
                  ksm_series,
                  node_series]
        return [replace(e, mig=fleet.mig and e.full) for e in events if e.count and e.fields]
    merged = [n for n in _merged_names(catalog, settings, selected_metrics(catalog, settings, queried.keys()))
              if n not in dropped]
    split = [n for n in merged if n not in counters]  # exporter.virtual_gpus: fields split per process
    merged_counters = [n for n in merged if n in counters]
    kept = [n for n in gauges if n not in split]
    unmerged = [n for n in counters if n not in merged]
    device = [n for n in merged_counters if not catalog.get(n).per_instance]
    instance = [n for n in merged_counters if n not in device]
    shares = _copy_events(what.fields, lambda dims: UNUSED_SHARE[0] if UNUSED_SHARE[0] in dims else None, dropped)
    levels = _copy_events(what.fields, level_mark_of, set())
    marks: dict[str, int] = {}  # the pods' totals per scrape: their mark -> fields
    node_marks: dict[str, int] = {}  # a node's totals per scrape (node_total): their mark -> fields
    for dims, metrics in what.fields.items():
        marked = pod_total_mark(dims)
        if marked and metrics:
            made = node_marks if node_total(dims) else marks
            made[marked[0]] = made.get(marked[0], 0) + len(metrics)
    events = [
        Events("a GPU's gauges", copies, len(kept), shown(kept, per_gpu | per_pod), True),
        Events("a GPU's counters its pods' labels do not keep", copies, len(unmerged),
               shown(unmerged, per_gpu | per_pod), True),
        Events("a GPU's counters per pod", copies, len(merged_counters), shown(merged_counters, per_pod), False),
        Events("a GPU's device counters, merged", gpus, len(device), shown(device, per_gpu), False),
        Events("a GPU instance's counters, merged", instances, len(instance), shown(instance, per_gpu), False),
        Events("a GPU's fields split per process, per pod", copies, len(split), shown(split, per_pod), False),
        Events("a GPU's fields split per process, merged", instances, len(split), shown(split, per_gpu), False),
        # a pod's totals per GPU it holds (POD_GPU_TOTALS): an event per GPU instance a pod holds at the scrape
        *(Events(f"a pod's totals ({mark})", min(copies, pods) if mark in per_gpu_marks else fleet.named_pods, count,
                 count, False) for mark, count in marks.items()),
        *(Events(f"the totals of a node's GPUs no pod holds ({mark})", idle_nodes, count, 0, False)
          for mark, count in marks.items()),
        # a node's totals per scrape (the alarms' count or total per node): an event per node and mark at the scrape
        *(Events(f"a node's totals ({mark})", nodes, count, count, False) for mark, count in node_marks.items()),
        # a GPU's readings once per scrape (render/agent_otel.once_per_gpu; the fleet's values past their LIMIT)
        Events("a GPU's readings once", gpus, len(once), len(once), False),
        *(Events(f"a node's {shown}", nodes, len(node_means[kind]), len(node_means[kind]), False)
          for kind, shown in (("sum", "total of its GPUs' readings once"), ("count", "count of GPUs read"))
          if node_means[kind]),
        # a namespace's use of a GPU: an event per namespace and GPU its pods hold at the scrape
        Events("a namespace's use of a GPU", min(fleet.named_pods, instances), len(namespaces), len(namespaces),
               False),
        # the unused share of each GPU (instance) reading the idle alarms read (render/agent_otel.unused_copies), one
        # copy per grouping: an event per GPU instance of the grouping at the scrape, one a pod holds for a grouping
        # naming the pod (MIG instances' with their profile, on a MIG fleet)
        *_told_apart([(dims, Events(f"a {'pod ' if POD_DIMENSION in dims else ''}GPU's unused share"
                                    f"{' (MIG instances)' if MIG_PROFILE_LABEL in dims else ''}",
                                    min(copies, pods) if POD_DIMENSION in dims else instances, len(names), len(names),
                                    False))
                      for dims, names in shares if fleet.mig or MIG_PROFILE_LABEL not in dims]),
        # the flags of each reading past a level an alarm judges all its periods' readings by (render/agent_otel
        # .level_copies), one copy per grouping: an event per GPU and scrape (per GPU instance of a field MIG reports
        # per instance, whose copy keeps GPU_I_ID: an event of its own), per pod GPU for a set that names the pod
        # (a set naming the MIG profile keeps MIG instances' points only: one per instance, none on whole GPUs)
        *_told_apart([(dims, Events(f"a GPU{' instance' if each else ''}'s flags {level_mark_of(dims)}",
                                    min(copies, pods) if POD_DIMENSION in dims else
                                    instances if each or MIG_PROFILE_LABEL in dims else gpus,
                                    len(group), len(group), False))
                      for dims, names in levels for each in (False, True)
                      if (group := [n for n in names if catalog.get(n).per_instance == each])
                      and (fleet.mig or MIG_PROFILE_LABEL not in dims)]),
        ksm_series,
        node_series,
        *([Events("an exporter scrape's flag of no GPU data (per node)", nodes, 1, 1, False),
           Events("kube-state-metrics' scrape's flag of no GPU data", ksm, 1, 0, False)]
          if what.no_data else []),
        # each node's GPUs unread below its highest index (the GPU stopped reporting rule's alarm): an event per node
        # and scrape
        *([Events("a node's GPUs unread (per node)", nodes, 1, 1, False)] if what.unread else []),
    ]
    return [replace(e, mig=fleet.mig and e.full) for e in events if e.count and e.fields]


def level_mark_of(dims: tuple[str, ...]) -> str | None:
    """The level mark a set names (cloudwatch_query.level_mark), or None."""
    return next((d for d in dims if level_of((d,))), None)


def _copy_events(fields: dict[tuple[str, ...], list[str]], mark_of, dropped: set[str]) -> list[tuple]:
    """[(a set of copies made at the agent under a mark `mark_of` names, its fields)]: the agent makes one copy per
    grouping (render/agent_otel._copies), an EMF event per GPU (instance) of the grouping and scrape holding the
    grouping's fields."""
    marked = [(dims, [m for m in names if m not in dropped]) for dims, names in sorted(fields.items()) if mark_of(dims)]
    # groupings whose copy keeps one label set share it (each copy keeps the GPU's index: a pod's and a pod GPU's)
    seen: set[tuple] = set()
    shared = []
    for dims, names in marked:
        key = (mark_of(dims), frozenset(d for d in dims if d != mark_of(dims)) | {GPU_DIMENSION})
        shared.append((dims, [n for n in names if (key, n) not in seen]))
        seen.update((key, n) for n in names)
    return [(dims, names) for dims, names in shared if names]


def _told_apart(events: list[tuple[tuple[str, ...], Events]]) -> list[Events]:
    """The events, those of one description told apart by their grouping (the set's names but its mark)."""
    seen = Counter(e.what for _, e in events)
    return [replace(e, what=f"{e.what} by {', '.join(d for d in dims if d != UNUSED_SHARE[0] and not level_of((d,)))}")
            if seen[e.what] > 1 else e for dims, e in events]


def event_bytes(events: Events, prices: dict[str, Any]) -> float:
    """The size of one such event (emf_event_bytes)."""
    rate = _rate(prices, "emf_event_bytes")
    return (rate["labels"] if events.full else rate["small_labels"]) + rate["per_field"] * events.fields + \
        (rate.get("mig_labels", 0) if events.mig else 0) + \
        (rate["directive"] * events.directives + rate["per_metric"] * events.published if events.published else 0)


# What each metric the agent makes per GPU node of each exporter scrape (data_missing.SAMPLES_SET) is, in the custom
# metrics' line
PER_NODE_SAID = {data_missing.SAMPLES: "flag of its exporter scrapes without GPU data",
                 stopped_gpus.UNREAD: "GPUs unread below its highest index (the GPU stopped reporting alarm)"}


def _metric_lines(project: Project, fleet: Fleet, prices: dict[str, Any]) -> list[Line]:
    from .container_insights import enabled

    settings = project.settings
    if enabled(settings):
        return _addon_metric_lines(project, fleet, prices)
    # Clusters whose agents publish alike (render/cloudwatch.reads_by_cluster: those differing in exporter.mig read
    # their own sets), each kind priced on its share of the fleet's clusters; the detail counts the first cluster's.
    alike = _published_kinds(project, fleet)
    weighed = 0.0
    for what, _, share, clusters in alike:
        kind = fleet.of_kind(settings, clusters)  # whole GPUs where the kind says exporter.mig: none
        sets = what.sets()
        if kind.mig:  # the scrape job drops the fields MIG does not report from a MIG instance's series; a GPU's
            # reading once (and a node's total and count of them) holds a MIG GPU's stand-in of such a field
            # (render/agent_otel._stand_in_once)
            sets = {dims: [m for m in metrics if m not in MIG_UNSUPPORTED
                           or ((ONCE_PER_GPU[0] in dims or NAMESPACE_GPU[0] in dims or NODE_MEAN in dims)
                               and project.catalog.mig_substitute(m))]
                    for dims, metrics in sets.items()}
        # Per pod: the per-pod set, and on the OTel pipeline the sets of a pod's totals per scrape (one metric per
        # pod and total).
        pod_sets = [tuple(pod_dimensions(settings)), *(dims for dims in sets if _per_pod_total(dims))]
        per_pod = sum(len(sets.get(dims, [])) for dims in pod_sets)
        # The cluster's own metrics: the data-missing alarm's (its GPU field, kube-state-metrics' three series and two node
        # series), the GPU field per cluster the widgets' PERIOD() lines read (the same metric as the alarm's, where it has
        # one) and the fields of the fleet's values now that read every reading of the cluster past 500 GPUs (GPU utilization,
        # power draw).
        per_cluster = len(sets.get(data_missing.CLUSTER_SET, []))
        # on the OTel pipeline, the fields of those values as a GPU's reading once per scrape (ONCE_PER_GPU), their own set
        readings_set = readings_dimensions(settings)
        if readings_set != data_missing.CLUSTER_SET:
            per_cluster += len(sets.get(readings_set, []))
        # kube-state-metrics' three series per exporter DaemonSet where a cluster names several (data_missing.ksm_set)
        daemonsets = _fleet_daemonsets(fleet, settings)  # the fleet's, each cluster's own
        per_daemonset = len(sets.get(data_missing.DAEMONSET_SET, []))
        # and the desired count per kube-state-metrics pod (the agent alarm's: data_missing.agent_set), of a cluster or
        # of each DaemonSet: one pod each counted (a second replica or install publishes its own)
        targets = [(*dims, data_missing.KSM_TARGET) for dims in (data_missing.CLUSTER_SET, data_missing.DAEMONSET_SET)]
        per_cluster += len(sets.get(targets[0], []))
        per_daemonset += len(sets.get(targets[1], []))
        # The per-instance set (GPU_I_ID) publishes once per GPU instance: a whole GPU is one, a MIG GPU as many as
        # --mig-instances says. On the OTel pipeline it holds the fields MIG reports per instance only (device
        # counters are merged to one series per physical GPU); on classic device counters too. The MIG sets
        # (GPU_I_PROFILE) publish for MIG instances only: per MIG pod, per instance, or per GPU and profile (one
        # profile a GPU: its instances alike), counted when the fleet is split into MIG instances.
        mig_sets = {dims: len(m) for dims, m in sets.items() if MIG_PROFILE_LABEL in dims}
        mig_only = sum(mig_sets.values())
        # A pod's fields per GPU it holds (the idle alarms' utilization): one metric per copy of a GPU, a pod holding it.
        pod_set = tuple(pod_dimensions(settings))
        pod_gpus = kind.held_copies if kind.pods else 0  # an estimate (Fleet.held_copies; none without pods)
        per_pod_gpu = sum(len(m) for dims, m in sets.items() if dims not in pod_sets and set(pod_set) <= set(dims)
                          and MIG_PROFILE_LABEL not in dims)
        # each pod started in the month publishes them for each GPU instance it holds (as many as a pod holds on average)
        churned_gpus = kind.churn / HOURS_PER_MONTH * pod_gpus / kind.pods if kind.pods else 0.0
        # A namespace's use of each GPU its pods hold (NAMESPACE_GPU): one metric per namespace and GPU (Fleet.namespace_gpus)
        per_namespace_gpu = sum(len(m) for dims, m in sets.items() if NAMESPACE_GPU[0] in dims)
        # A node's totals per scrape (node_total: a widget's or alarm's count or total per node): one metric per node
        # and total
        per_node_total = sum(len(m) for dims, m in sets.items() if node_total(dims))
        # and a node's total and count of GPUs read per scrape (NODE_MEAN: the fleet's values now): one metric per node,
        # field and kind its widgets read (a total alone of the field "Total power draw" reads)
        per_node_mean = sum(len(what.kinds(name)) for dims, m in sets.items() if NODE_MEAN in dims for name in m)
        gpu_sets = {dims: len(m) for dims, m in sets.items()
                    if dims not in pod_sets and not node_total(dims) and NODE_MEAN not in dims
                    and dims not in (data_missing.CLUSTER_SET, data_missing.SAMPLES_SET, data_missing.DAEMONSET_SET,
                                     readings_set, *targets)
                    and MIG_PROFILE_LABEL not in dims and not set(pod_set) <= set(dims) and NAMESPACE_GPU[0] not in dims}
        per_gpu = sum(n for dims, n in gpu_sets.items() if MIG_INSTANCE_LABEL not in dims)
        per_instance = sum(n for dims, n in gpu_sets.items() if MIG_INSTANCE_LABEL in dims)
        mig_months = 0.0
        if kind.mig:
            # per pod and MIG instance (the idle alarm's): one metric per instance a pod holds, at most every copy
            mig_months = sum(n * (pod_gpus if "pod" in dims and MIG_INSTANCE_LABEL in dims else kind.pods
                                  if "pod" in dims else kind.instances if MIG_INSTANCE_LABEL in dims
                                  else kind.gpu_count) for dims, n in mig_sets.items())
        # The exporter targets' flags of no GPU data, one metric per GPU node (the data-missing rule's alarm per node),
        # published at every scrape.
        per_node = len(sets.get(data_missing.SAMPLES_SET, []))
        nodes = "" if kind.nodes is not None else " (counted per GPU without --nodes: an upper bound)"
        metric_months = per_gpu * kind.gpu_count + per_instance * kind.instances + per_node * kind.node_count + \
            per_pod * (kind.pods + kind.churn / HOURS_PER_MONTH) + per_pod_gpu * (pod_gpus + churned_gpus) + \
            per_cluster * kind.clusters + per_daemonset * daemonsets + mig_months + \
            per_namespace_gpu * kind.namespace_gpus + (per_node_total + per_node_mean) * kind.node_count
        weighed += share * metric_months
    metric_months = weighed
    rate = _rate(prices, "custom_metric_month")
    free_metrics = min(_free(prices, "custom_metrics"), metric_months)
    shares = region_shares(project, fleet)  # each Region's tiers; the free tier's metrics once, for the account
    monthly = sum(tiered(metric_months * share, rate["tiers"]) for share in shares) \
        - tiered(free_metrics, rate["tiers"])
    events = log_events(project, fleet)
    scrapes = MINUTES_PER_MONTH * 60 / _scrape_seconds(project)
    per_scrape = sum(e.count for e in events)
    ingested_gb = sum(e.count * event_bytes(e, prices) for e in events) * scrapes / 1e9
    retention_days = settings.agent.log_retention_days
    # what the group holds once it has run its retention: that many days of ingestion, a day being the month's
    # ingestion (HOURS_PER_MONTH, as it is counted) over its HOURS_PER_MONTH / 24 days
    stored_gb = ingested_gb * retention_days * 24 / HOURS_PER_MONTH * _rate(prices, "log_compression_ratio")["ratio"]
    # the free tier's GB of logs count ingestion and storage together: taken by ingestion first
    free_ingested = min(_free(prices, "log_gb"), ingested_gb)
    free_stored = min(_free(prices, "log_gb") - free_ingested, stored_gb)
    full = [e for e in events if e.full]
    return [
        Line("custom metrics", metric_months, monthly / metric_months if metric_months else 0.0, monthly,
             (f"{per_gpu + per_instance} fields x {fleet.gpu_count:,} GPUs" if not kind.mig else
              f"{per_gpu} fields x {fleet.gpu_count:,} GPUs + {per_instance} x {kind.instances:,} MIG instances")
             + f" + {per_pod} fields x {fleet.pods:,} pods (+ {fleet.churn:,} pod starts, prorated)"
             + (f" + {per_pod_gpu} x {pod_gpus:,} GPUs held by pods (the idle alarms' per GPU, {HELD_PAIRS}; pod "
                f"starts prorated alike)"
                if per_pod_gpu and pod_gpus else "")
             + (f" + {per_namespace_gpu} x {fleet.namespace_gpus:,} pairs of a namespace and a GPU its pods hold "
                f"(widgets and alarms per namespace; at most one per GPU instance a pod holds)"
                if per_namespace_gpu and fleet.namespace_gpus else "")
             + (f" + {per_node_total} x {fleet.node_count:,} GPU nodes (a node's totals per scrape: widgets and alarms "
                f"counting or adding GPUs per node){nodes}" if per_node_total else "")
             + (f" + {per_node_mean} x {fleet.node_count:,} GPU nodes (a node's total and count of GPUs read per "
                f"scrape: the fleet's values now){nodes}" if per_node_mean else "")
             + (f" + {per_cluster} per cluster ("
                + ("data-missing alarm, " if any(published.ksm for published, *_ in alike) else "")
                + "the widgets' PERIOD() metric, the fleet's values now past their query's LIMIT)"
                if per_cluster else "")
             + (f" + {per_daemonset} x {daemonsets:,} exporter DaemonSets (data-missing alarms; each cluster's, "
                f"exporter.more_daemonsets)" if per_daemonset else "")
             + (" + each GPU node's " + " and ".join(dict.fromkeys(
                    PER_NODE_SAID[name] for published, *_ in alike
                    for name in published.sets().get(data_missing.SAMPLES_SET, []))) + nodes
                if per_node else "")
             + (f" + the MIG sets' {mig_only} per MIG pod, instance or GPU" if kind.mig and mig_only else
                f"; a GPU split into MIG instances publishes the per-instance set once per instance, and "
                f"{mig_only} more per MIG pod or GPU (--mig-instances counts them)" if mig_only else "")
             + (f"; {len(alike)} kinds of cluster publish their own sets (exporter.mig), each priced on its share of "
                f"the clusters (the counts are the first cluster's kind's)" if len(alike) > 1 else "")
             + (f"; the free tier's first {free_metrics:,.0f} free" if free_metrics else "")
             + ((f"; {fleet.pods:,} pods on {kind.instances:,} GPU instances: each pod's copy of its GPU's series "
                 f"logged" if fleet.virtual_gpus else
                 f"; {fleet.pods:,} pods on {kind.instances:,} GPU instances: the exporter (without "
                 f"KUBERNETES_VIRTUAL_GPUS) writes each instance once, under one of its pods, so each is logged once; "
                 f"every pod is counted per pod, as the pod it names may change between scrapes (an upper bound)")
                if fleet.pods > kind.instances else "")
             + (f"; tiered per Region ({len(shares)} Regions)" if len(shares) > 1 else "; tiered")),
        Line("EMF log ingestion (GB)", ingested_gb, _price(prices, "log_ingestion_gb"),
             (ingested_gb - free_ingested) * _price(prices, "log_ingestion_gb"),
             f"{per_scrape:,.0f} events every {_scrape_seconds(project)} s (one per label set and metric type): "
             + "; ".join(f"{e.count:,.0f} x {e.what} ({e.fields})" for e in events)
             + (f"; each GPU's {'events' if len(full) > 1 else 'event'} with its every label, the others with a few"
                if full else "") + (f"; per node{nodes}" if fleet.nodes is None and any(
                    "node" in e.what or "target" in e.what for e in events) else "")
             + (f"; {len(alike)} kinds of cluster log their own events (exporter.mig), each counted on its share "
                f"of the clusters" if len(alike) > 1 else "")
             + (f"; the free tier's first {free_ingested:,.1f} GB free" if free_ingested else "")),
        Line("EMF log storage (GB-month)", stored_gb, _price(prices, "log_storage_gb_month"),
             (stored_gb - free_stored) * _price(prices, "log_storage_gb_month"),
             f"{retention_days} days retained (agent.log_retention_days), compressed: what the group holds once it "
             f"has run that long"
             + ("; on agent.pipeline: classic only where the CloudFormation stack (or aws logs put-retention-policy) "
                "set it: a group the agent creates itself never expires (its JSON has no retention setting)"
                if settings.agent.pipeline == "classic" else "")
             + (f"; {free_stored:,.1f} GB free (what ingestion leaves of the free tier's)" if free_stored else "")),
    ]


def _dashboard_lines(project: Project, fleet: Fleet, prices: dict[str, Any],
                     dashboards: Sequence[CloudWatchDashboard]) -> list[Line]:
    """The CloudWatch dashboards of the artifact set, priced: those of the first cluster of each kind of cluster
    alike in exporter.mig (whose dashboards are made alike: render/cloudwatch.dashboards), each kind's for its share
    of the fleet's clusters (one kind: the first cluster's, as many times as the fleet has clusters)."""
    settings = project.settings
    kinds = [(*_dashboards_shown(project, fleet.of_kind(settings, clusters), dashboards, clusters[0]),
              _fleet_share(fleet, settings, clusters))
             for _, clusters in settings.mig_groups()]
    free = prices["rates"]["free_dashboards"]
    count = sum(len(shown) * share for shown, _, share in kinds)
    small = sum(sum(1 for m in shown if m <= free["max_metrics"]) * share for shown, _, share in kinds)
    paid = count - min(free["count"], small)
    reads = sum(analyzed * (fleet.dashboard_view_hours * 60 / fleet.refresh_minutes * share)
                for _, analyzed, share in kinds)  # each cluster's refreshes while viewed
    read_price = _price(prices, "console_metrics_analyzed_per_1000")
    most = max((m for shown, _, _ in kinds for m in shown), default=0)
    return [
        Line("dashboards", paid, _price(prices, "dashboard_month"), paid * _price(prices, "dashboard_month"),
             f"{count} dashboards; {min(free['count'], small)} free (the free tier takes 3 of at most "
             f"{free['max_metrics']} metrics; these show up to {most:,.0f})"),
        Line("dashboard reads (metrics analyzed, thousands)", reads / 1000, read_price, reads / 1000 * read_price,
             f"{fleet.dashboard_view_hours:g} h viewed per cluster, refresh every {fleet.refresh_minutes} min; "
             f"each query analyzes every pod or GPU of its cluster; free in the console"
             + (f"; {len(kinds)} kinds of cluster (exporter.mig) show their own widgets, each priced on its share of "
                f"the clusters" if len(kinds) > 1 else "")),
    ]


def _dashboards_shown(project: Project, fleet: Fleet, dashboards: Sequence[CloudWatchDashboard],
                      cluster) -> tuple[list[float], float]:
    """(the metrics each of `cluster`'s CloudWatch dashboards shows, the metrics one refresh of them all analyzes)."""
    from .lint.metrics_insights import QueryError, parse
    from .names import cloudwatch_dashboard_name

    settings = project.settings
    own = {cloudwatch_dashboard_name(settings.cloudwatch.dashboard_prefix, cluster.name, d.id)
           for d in project.cloudwatch_definitions()}
    shown, analyzed = [], 0.0
    for body in [d.body for d in dashboards if d.name in own]:
        metrics = 0.0
        for widget in body["widgets"]:
            for line in widget.get("properties", {}).get("metrics", []):
                options = line[-1] if line and isinstance(line[-1], dict) else {}
                if "expression" not in options:  # a metric line (the hidden metric a widget's PERIOD() reads)
                    metrics += 1
                    continue
                expression = options["expression"]
                if not is_query(expression):
                    continue
                try:
                    query = parse(expression)
                except QueryError:
                    continue
                matched = _analyzed(query.schema or [], project, fleet)
                if any(dimension == NODE_MEAN for dimension, _, _ in query.where):  # one kind of a node's (a total)
                    matched /= len(NODE_MEAN_KINDS)
                analyzed += matched
                metrics += min(matched, query.limit or 500) if query.group else 1
        shown.append(metrics)
    return shown, analyzed


def _alarm_lines(project: Project, fleet: Fleet, prices: dict[str, Any], mode: str) -> tuple[list[Line], int]:
    from .cloudwatch_query import Unsupported
    from .container_insights import enabled
    from .render.alarms import METRICS_INSIGHTS_ALARM_QUOTA, alarm_forms, made_parts

    settings = project.settings
    insights_rate = _price(prices, "metrics_insights_alarm_metric_month")
    cluster_analyzed, cluster_alarms, per_pod_alarms, per_pod_analyzed, static_rules, math_alarms = 0.0, 0, 0, 0, 0, 0
    per_pod_rules, fleet_rules, agent_alarms, per_pod_gpu_rules = 0, 0, 0, 0
    # static per-pod rules judging each GPU of a pod: a Metrics Insights alarm per listed pod, analyzing its GPUs.
    # alarms.static_pods is one list for every cluster: each cluster makes each listed pod's alarms (those of a pod
    # running elsewhere get no data), so a static rule makes one alarm per pod and cluster (every pod listed)
    pod_rules, pod_analyzed, pod_alarms, static_alarms, pod_mig_alarms = 0, 0, 0, 0, 0
    # A rule on a field MIG does not report has a second GROUP BY alarm on its stand-in (its "mig" form); it
    # analyzes MIG pods and GPUs only, which the fleet does not describe: counted, not priced.
    mig_alarms, per_node = 0, []  # the rules whose alarm analyzes every GPU node (data_missing.SAMPLES_SET)
    # the data-missing rule's metric-math alarms per cluster: one per exporter DaemonSet on the DCGM source
    math_clusters = 0  # the clusters the data-missing rule's metric-math alarms are made in
    for alarm in project.alarms:
        try:  # the alarms the build makes in this mode, in each part of the fleet (its clusters' exporter.mig)
            parts = [(alarm_forms(alarm, project.catalog, held, mode), _fleet_share(fleet, settings, clusters),
                      clusters) for held, clusters, _ in made_parts(alarm, project.catalog, settings, mode)]
            # each part's fleet as its clusters have it: whole GPUs where they say exporter.mig: none
            kind_of = {id(members): fleet.of_kind(settings, members) for _, _, members in parts}
        except Unsupported:
            continue  # generate refuses it with its file and line
        kinds = {form.kind for forms, _, _ in parts for form in forms}
        static_rules += "static" in kinds
        pod_rules += "pod" in kinds
        for forms, clusters, members in parts:
            made = 1 if alarm.scope == "fleet" else clusters  # alarms per form: one per Region, or per cluster
            for form in forms:
                if form.kind == "math":  # a metric-math alarm over static metrics, billed per metric it reads
                    # one per exporter DaemonSet of a cluster (exporter.more_daemonsets) on the DCGM source
                    math_clusters += clusters
                    math_alarms += clusters if enabled(settings) else _fleet_daemonsets(fleet, settings, members)
                elif form.kind == "mig":
                    mig_alarms += made
                elif form.kind == "static":
                    static_alarms += fleet.pods * clusters
                elif form.kind == "pod-mig":  # each listed pod's second alarm, on the MIG instances it holds:
                    pod_mig_alarms += fleet.pods * clusters  # counted, not priced, as the "mig" form
                elif form.kind == "pod":  # each pod's alarm analyzes the GPUs it holds: every pod GPU, once
                    pod_alarms += fleet.pods * clusters
                    pod_analyzed += _analyzed(form.plan.dims, project, kind_of[id(members)]) * clusters
                elif alarm.per_pod:  # every pod of the part a contributor, in one alarm per cluster or Region
                    per_pod_alarms += made
                    # the fleet's pods, or the GPU instances they hold (an upper bound, as the custom metrics count
                    # them)
                    per_pod_analyzed += _analyzed(form.plan.dims, project, kind_of[id(members)]) * clusters
                else:
                    cluster_alarms += made
                    cluster_analyzed += _analyzed(form.plan.dims, project, kind_of[id(members)]) * clusters
                    if tuple(form.plan.dims) == data_missing.SAMPLES_SET and alarm.id not in per_node:
                        per_node.append(alarm.id)
        judged = [form for forms, _, _ in parts for form in forms if form.kind == "insights"]
        if alarm.per_pod and judged:
            per_pod_rules += 1
            fleet_rules += alarm.scope == "fleet"
            per_pod_gpu_rules += _judges_pod_gpus(judged[0].plan.dims, project)
    # the data-missing rule's alarm on the agent's reads, one per cluster of its metric-math alarms on the DCGM source:
    # a GROUP BY alarm analyzing the cluster's kube-state-metrics pods (one counted), each exporter DaemonSet's where a
    # cluster names several (as many as its metric-math alarms: data_missing.agent_query)
    agent_alarms = 0 if enabled(settings) else math_clusters
    agent_analyzed = 0 if enabled(settings) else math_alarms
    lines = [Line("GPU and cluster alarms (Metrics Insights)", cluster_analyzed + agent_analyzed, insights_rate,
                  (cluster_analyzed + agent_analyzed) * insights_rate,
                  f"{cluster_alarms} alarms, each analyzing every GPU (or pod, a namespace's) of its cluster"
                  + (f" ({' and '.join(repr(rule) for rule in per_node)} per node: every GPU node"
                     f"{'' if fleet.nodes is not None else ', counted per GPU without --nodes'})" if per_node else "")
                  + (f" + {agent_alarms} analyzing the kube-state-metrics pod{'s' if agent_alarms != 1 else ''} the "
                     f"agent reads (the data-missing rule's on the agent's reads; one pod a cluster"
                     f"{', of each exporter DaemonSet' if agent_analyzed > agent_alarms else ''})"
                     if agent_alarms else ""))]
    # the free tier's alarm metrics: standard alarms that list their metrics (not Metrics Insights alarms)
    free_alarm_metrics = _free(prices, "alarm_metrics")
    if math_alarms:
        rate = _price(prices, "standard_alarm_metric_month")
        if enabled(settings):
            each, read = data_missing.ADDON_METRIC_COUNT, ("the add-on's running agent, the GPU nodes' capacity and "
                                                           "DaemonSet count, the cluster's GPU observations; its "
                                                           "query of the GPU nodes reporting is not counted")
        else:
            each, read = len(data_missing.KSM_STATS) + 1 + len(data_missing.NODE_STATS), (
                "the exporter DaemonSet's desired, available and updated pods (most and least), the cluster's GPU "
                "observations, its nodes and GPU nodes" + ("; one alarm per exporter DaemonSet" if
                                                           math_alarms > math_clusters else ""))
        metrics = math_alarms * each
        free = min(free_alarm_metrics, metrics)
        free_alarm_metrics -= free
        lines.append(Line("data-missing alarms (metric math)", metrics, rate, (metrics - free) * rate,
                          f"{math_alarms} alarm{'s' if math_alarms != 1 else ''} x {each} metrics ({read})"
                          + (f"; the free tier's {free:,.0f} alarm metrics free" if free else "")))
    if per_pod_alarms or mode == "group_by":
        lines.append(Line("per-pod alarms (GROUP BY pod)", per_pod_analyzed, insights_rate,
                          per_pod_analyzed * insights_rate,
                          (f"{per_pod_rules} rules x {fleet.clusters} clusters" if not fleet_rules else
                           f"{per_pod_rules} rules ({fleet_rules} of fleet scope: one alarm per Region)")
                          + f" = {per_pod_alarms} alarms; every pod a contributor"
                          + (f" ({per_pod_gpu_rules} rule{'s' if per_pod_gpu_rules != 1 else ''} judging each GPU a "
                             f"pod holds: every pod's GPU, {fleet.held_copies:,}, {HELD_PAIRS})" if per_pod_gpu_rules
                             else "")
                          + (f" (+ {mig_alarms} on MIG instances' stand-in field, analyzing MIG pods only: not "
                             f"counted)" if mig_alarms else "")))
    in_clusters = f" x {fleet.clusters} clusters (each makes every listed pod's)" if fleet.clusters > 1 else ""
    if static_rules or mode == "static":
        rate = _price(prices, "standard_alarm_metric_month")
        free = min(free_alarm_metrics, static_alarms)
        lines.append(Line("per-pod alarms (static, one per pod)", static_alarms, rate, (static_alarms - free) * rate,
                          f"{static_rules} rules x {fleet.pods:,} pods{in_clusters} = {static_alarms:,} alarms; "
                          f"{fleet.churn:,} new pods a month each need an apply"
                          + (f"; {free:,.0f} free (the free tier's alarm metrics)" if free else "")))
    if pod_rules:
        lines.append(Line("per-pod alarms (static, Metrics Insights, one per pod)", pod_analyzed, insights_rate,
                          pod_analyzed * insights_rate,
                          f"{pod_rules} rule{'s' if pod_rules != 1 else ''} judging each GPU a pod holds x "
                          f"{fleet.pods:,} pods{in_clusters} = {pod_alarms:,} alarms, each GPU of its pod a contributor "
                          f"where it runs (every pod's "
                          f"GPU, {fleet.held_copies:,}, {HELD_PAIRS}); each counts toward the "
                          f"{METRICS_INSIGHTS_ALARM_QUOTA} Metrics Insights alarms of its Region; {fleet.churn:,} new "
                          f"pods a month each need an apply"
                          + (f" (+ {pod_mig_alarms:,} on the MIG instances each pod holds, on the stand-in field, "
                             f"analyzing MIG pods only: not counted)" if pod_mig_alarms else "")))
    return lines, cluster_alarms + math_alarms + agent_alarms + per_pod_alarms + static_alarms + mig_alarms + \
        pod_alarms + pod_mig_alarms


def _fleet_share(fleet: Fleet, settings, clusters) -> int:
    """The fleet's clusters (fleet.clusters) that `clusters` of the settings stand for: each settings' cluster an
    equal share, the shares whole numbers adding up to fleet.clusters (the i-th cluster of n stands for
    floor(F (i + 1) / n) - floor(F i / n) of F). Clusters are told by name (the settings' are unique), not compared
    field by field: a thousand clusters' kind of 750 took a quarter of a million comparisons a call."""
    named = {cluster.name for cluster in clusters}
    return sum(share for cluster, share in _shares(fleet, settings) if cluster.name in named)


def _fleet_daemonsets(fleet: Fleet, settings, clusters=None) -> int:
    """The exporter DaemonSets of the fleet's clusters that `clusters` of the settings (all of them by default) stand
    for: each one's own (exporter.more_daemonsets) times its share (_fleet_share)."""
    named = None if clusters is None else {cluster.name for cluster in clusters}
    return sum(share * len(named_daemonsets(settings, cluster)) for cluster, share in _shares(fleet, settings)
               if named is None or cluster.name in named)


def _shares(fleet: Fleet, settings) -> list[tuple[Any, int]]:
    """(cluster, the fleet's clusters it stands for) of each settings' cluster (_fleet_share)."""
    listed = settings.clusters
    total = max(len(listed), 1)
    return [(cluster, fleet.clusters * (i + 1) // total - fleet.clusters * i // total)
            for i, cluster in enumerate(listed)]


def estimate(project: Project, fleet: Fleet, prices: dict[str, Any], mode: str,
             dashboards: Sequence[CloudWatchDashboard]) -> dict[str, Any]:
    """One estimate; `dashboards` are the CloudWatch dashboards of the project's artifact set."""
    alarm_lines, alarm_count = _alarm_lines(project, fleet, prices, mode)
    lines = [*_metric_lines(project, fleet, prices), *_dashboard_lines(project, fleet, prices, dashboards),
             *alarm_lines]
    result = {"mode": mode, "alarms": alarm_count, "lines": [asdict(line) for line in lines],
              "total": round(sum(line.monthly for line in lines), 2)}
    from .container_insights import enabled

    if not enabled(project.settings):  # the agent's EMF log events (the add-on's are priced per observation)
        events = log_events(project, fleet)
        result["log_events"] = {"per_scrape": sum(e.count for e in events),
                                "bytes_per_scrape": sum(e.count * event_bytes(e, prices) for e in events),
                                "kinds": [asdict(e) for e in events]}
    return result


def with_source(project: Project, source: str) -> Project:
    """The same project with cloudwatch.source set to `source`."""
    from dataclasses import replace

    return replace(project, settings=project.settings.with_cloudwatch_source(source))


def limits(fleet: Fleet, project: Project | None = None, artifacts: Artifacts | None = None) -> list[str]:
    """Where this fleet passes the Metrics Insights limits that no generated artifact can see: those of the
    queries `artifacts` (`project`'s artifact set; built when not given; None: the bundled project) run on a
    cluster of this fleet (fleet_limits), and how the fleet's values now read past 500 GPUs per cluster."""
    from .artifacts import build
    from .cloudwatch_query import SERIES_PER_QUERY
    from .container_insights import enabled
    from .cloudwatch_query import node_mean_dimensions
    from .fleet_limits import notes as fleet_notes
    from .render.cloudwatch import now_period, span

    if project is None:
        from .project import load_project

        project = load_project(None, None)
    _, gpus = _per_cluster(fleet)
    nodes = fleet.node_count / max(fleet.clusters, 1)
    addon = enabled(project.settings)
    per_node = not addon and node_mean_dimensions(project.settings) is not None  # (render/cloudwatch.per_node_form)
    drawn = span(now_period(project.settings))  # a minute, 120 s at 60 s scrapes, 300 s at 75 s
    scrapes = "the minute's scrapes" if drawn == "minute" else f"the scrapes of the {drawn}"
    values = None  # how the fleet's values now read this fleet, where it is past their query's LIMIT
    if per_node and fleet.nodes is not None and nodes > NODES_PER_MEAN:
        # one series per node: a mean's query returns a total and a count per node, a count's or total's one
        which = "the average utilization and temperature" if nodes <= NODES_PER_TOTAL else \
            "GPUs reporting, Total power draw, the average utilization and temperature"
        values = (f"the fleet's values now read one series per node up to {NODES_PER_MEAN} nodes (the means: a total "
                  f"and a count each) and {NODES_PER_TOTAL} (the count and the total): past them {which} read every "
                  f"reading of the cluster in the {drawn} instead (a GPU counts, adds and weighs by its share of {scrapes} that "
                  f"read it, once per exporter pod reading it)")
    elif per_node and fleet.nodes is None and gpus > SERIES_PER_QUERY:  # (how many nodes: --nodes)
        values = (f"the fleet's values now read one series per node up to {NODES_PER_MEAN} nodes (the means: a total "
                  f"and a count each) and {NODES_PER_TOTAL} (the count and the total), past them every reading of the "
                  f"cluster in the {drawn} (a GPU counts, adds and weighs by its share of {scrapes} that read it, once "
                  f"per exporter pod reading it; --nodes says whether this fleet passes them)")
    elif not per_node and not addon and gpus > SERIES_PER_QUERY:  # the add-on's fleet values read per cluster
        values = (f"the fleet's values now (GPUs reporting, Total power draw, the average utilization and "
                  f"temperature) read every reading of the cluster in the {drawn} instead of one series per GPU (a "
                  f"GPU counts, adds and weighs by its share of {scrapes} that read it, once per copy, per MIG "
                  f"instance or pod sharing it)")
    found = []
    if addon and gpus > ADDON_MEAN_GPUS:  # one series per GPU to their LIMIT (render/cloudwatch.ADDON_FLEET_METRICS)
        collections = "the minute's collections" if drawn == "minute" else f"the collections of the {drawn}"
        found.append(f"{gpus:,.0f} GPUs per cluster: the fleet's values now (GPUs reporting, Total power draw, the "
                     f"average utilization, temperature and framebuffer share) read one series per GPU up to "
                     f"{ADDON_MEAN_GPUS} GPUs (the means) and {ADDON_MEAN_GPUS + 1} (the count and the total): past "
                     f"them every reading of the cluster in the {drawn} (a GPU counts, adds and weighs by its share "
                     f"of {collections} that read it)")
    if values and gpus <= SERIES_PER_QUERY:
        found.append(f"{nodes:,.0f} GPU nodes per cluster: {values}")
    elif gpus > SERIES_PER_QUERY and not addon:
        found.append(f"{gpus:,.0f} GPUs per cluster" + (f" on {nodes:,.0f} nodes" if fleet.nodes is not None else "") +
                     f": a query returns at most {SERIES_PER_QUERY} series, so " + (f"{values}, and " if values else "") +
                     f"GROUP BY alarms evaluate the "
                     f"{SERIES_PER_QUERY} nearest their threshold over their window (PARTIAL_DATA): the bundled "
                     f"idle-GPU alarm (gpu-idle) on agent.pipeline: otel the {SERIES_PER_QUERY} pod GPUs of the largest "
                     f"unused share summed over its 30 minutes (the pods idle longest), on classic those of the lowest "
                     f"mean, where a pod that came within them reading low (still loading) ranks before one idle all "
                     f"along at a few percent and can take its place (alarms.per_pod: static with the long-running pods "
                     f"in alarms.static_pods evaluates each of them); the temperature-high alarm (gpu-temp-high) on "
                     f"agent.pipeline: otel the {SERIES_PER_QUERY} GPUs of the most readings above its level over its "
                     f"window (the GPUs hot longest), on classic those of the highest lowest reading, where a GPU that "
                     f"came within it hot ranks before one hot all along and can take its place (lint AL017 names such "
                     f"alarms)")
    return found + fleet_notes(project, artifacts or build(project), fleet)


# The nodes a fleet value's query holds (render/cloudwatch.per_node_form) while it reads one series per node: under its
# LIMIT (combined_limit: the widget's 500 metrics less its other lines, the PERIOD() line and the readings' Sum and
# SampleCount of a mean, 497, or the readings' one of a count or a total, 498), a mean's two series per node
NODES_PER_MEAN = (METRICS_PER_WIDGET - 3 - 1) // 2
# On the Container Insights add-on a fleet value reads one series per GPU to its LIMIT: its widget's metrics
# (render/cloudwatch.ADDON_FLEET_METRICS) less a mean's PERIOD() line and its readings' Sum and SampleCount
ADDON_MEAN_GPUS = ADDON_FLEET_METRICS - 3
NODES_PER_TOTAL = METRICS_PER_WIDGET - 2 - 1


def estimates(project: Project, fleet: Fleet, prices: dict[str, Any] | None = None,
              artifacts: Artifacts | None = None) -> dict[str, Any]:
    """The configured source's estimate with GROUP BY and with static per-pod alarms, and both CloudWatch
    sources side by side for the same fleet (GROUP BY alarms; the add-on takes no static ones).

    The dashboards priced are those of `artifacts`, the project's artifact set (built when not given); the
    other source's, which no build holds, are those `artifacts.cloudwatch_dashboards` makes for it."""
    from .artifacts import build, cloudwatch_dashboards
    from .container_insights import SOURCES, enabled, source

    prices = prices or load_prices()
    artifacts = artifacts or build(project)
    shipped = artifacts.cloudwatch_dashboards
    configured = source(project.settings)
    uncertain = sorted(key for key, rate in prices["rates"].items() if rate.get("uncertain"))
    overridden = sorted(key for key, rate in prices["rates"].items() if rate.get("overridden"))
    sources = {}
    for name in SOURCES:
        other = with_source(project, name)
        result = estimate(other, fleet, prices, "group_by",
                          shipped if name == configured else cloudwatch_dashboards(other))
        sources[name] = {"total": result["total"], "lines": result["lines"]}
    return {"fleet": {**asdict(fleet), "gpus": fleet.gpu_count, "nodes": fleet.node_count,
                      "mig_instances": fleet.mig_instances or 1}, "prices_as_of": prices["as_of"],
            "source": prices["source"], "uncertain_rates": uncertain, "overridden_rates": overridden,
            "cloudwatch_source": configured,
            "group_by": estimate(project, fleet, prices, "group_by", shipped),
            "static": None if enabled(project.settings) else estimate(project, fleet, prices, "static", shipped),
            "sources": sources, "limits": limits(fleet, project, artifacts),
            "warnings": fleet.warnings(project.settings.no_mig),
            # the rules priced at nothing, judged by their Prometheus rule alone (lint AL027)
            "prometheus_only": [message for _, message in stopped_gpus.no_cloudwatch(project)],
            # the Region the rates are for, and the settings' clusters' other Regions, billed at their own rates
            "rates_region": prices.get("region"), "clusters_priced_elsewhere": priced_elsewhere(project, prices)}


def refuse_unbounded(result: dict[str, Any], where: str) -> None:
    """An estimate whose every figure is a finite number, or InputError naming the prices file (`where`): a rate that
    is a finite number can still make a line's product pass the largest float (a price of 1e308 for 3 dashboards),
    which the table printed as `$inf` and `--output json` as `Infinity` (no JSON value: a parser reading it fails)."""
    kinds = [(mode, result[mode]) for mode in ("group_by", "static") if result[mode]] + \
        [(name, source) for name, source in result["sources"].items()]
    for kind, figures in kinds:
        for line in [*figures["lines"], {"item": "total", "monthly": figures["total"]}]:
            numbers = [line.get(key) for key in ("quantity", "unit_price", "monthly")]
            if any(isinstance(n, float) and not math.isfinite(n) for n in numbers):
                raise InputError(f"its rates make {line['item']!r} ({kind}) no finite sum of money a month "
                                 f"(a rate beyond any bill: the product passes the largest number the estimate holds)",
                                 where=where, hint="give rates of a real bill, such as the bundled file's "
                                                   "(gpudash cost without --prices)")


def priced_elsewhere(project: Project, prices: dict[str, Any]) -> list[str]:
    """The Regions of the settings' clusters other than the one the rates are for (the price file's `region`): each
    bills at its own rates, which differ (CloudWatch Logs' ingestion among them); the estimate holds one Region's."""
    region = prices.get("region")
    return sorted({c.region for c in project.settings.clusters} - {region}) if region else []

"""The data-missing alarm: GPU data missing where exporters are expected to run, and only there.

Silence alone cannot tell a stopped exporter or agent from a GPU node group scaled to zero. The
expected signal comes from off the GPU nodes: kube-state-metrics' view of the exporter DaemonSet
(`alarms.expected_gpus: kube-state-metrics`):

* `kube_daemonset_status_desired_number_scheduled` - nodes the exporter should run on: 0 with the
  GPU node group at zero; missing when the DaemonSet is deleted or kube-state-metrics (or, on
  CloudWatch, the agent that scrapes it) stops;
* `kube_daemonset_status_number_available` - of those, nodes whose exporter pod is available.

The Prometheus rule reads every DaemonSet kube-state-metrics labels as an exporter (`kube_daemonset_labels`
with the operator's `app` or the Helm chart's `app.kubernetes.io/name`; see exporter_label_matchers), so a
chart installed per node pool under other names is read too; kube-state-metrics exposes those labels only
with `--metric-labels-allowlist=daemonsets=[app,app.kubernetes.io/name]`. The CloudWatch agent's scrape job
cannot join on labels and keeps the DaemonSets the settings name for its cluster (exporter.daemonset, or the
cluster's own clusters[].exporter.daemonset, and exporter.more_daemonsets: render/scrape.ksm_scrape_job); with several,
each has its own alarm over its own counts (ksm_set), as the rule judges each DaemonSet apart. One alarm cannot judge
them all: each DaemonSet's condition joins its desired, available and updated counts, and a Metrics Insights query
GROUP BY daemonset gives each count as an array of its own, which metric math does not combine with another array
(the user guide lists arithmetic of an array with a series or a number only, and IF on single series); a metric-math
alarm reads at most 10 metrics (7 per DaemonSet).

Over each period the alarm fires when
  1. the desired count is missing (DaemonSet deleted, kube-state-metrics or the agent stopped), unless
     kube-state-metrics read nodes and none has a GPU resource (no GPU node yet: the GPU operator creates no DaemonSet
     before one; NODES), or
  2. exporters are expected (desired > 0) but no GPU reported at all (a GPU reports when it has a reading of the
     presence field: one whose exporter writes only DCGM's blank for it reports none, as the counts of GPUs
     reporting a field read it, promql.counted; the OTel pipeline's agent drops the blank, so the alarm reads the
     same; agent.pipeline: classic publishes it, and there a GPU writing only the blank counts: lint AL010), or
  3. fewer exporter pods were available than desired all period long (an exporter down on a node), and no
     rollout of the DaemonSet progressed in it (its updated pods did not change) or the shortfall was more than
     a rollout keeps (exporter.max_unavailable, the DaemonSet's maxUnavailable: 1 by default): a rollout of many nodes
     (RollingUpdate, maxUnavailable 1) keeps one pod unavailable nearly all the time, each node's data
     missing a minute once; a rollout stuck on a node fires, and so does an exporter down on one node while a
     rollout replaces the others (two unavailable all period). A rollout keeping more unavailable (maxUnavailable
     above 1) is read as its own when exporter.max_unavailable says so. One pod down while a rollout progresses
     within its maxUnavailable is not told from the rollout's own (the DaemonSet controller counts it against
     maxUnavailable, so the rollout slows rather than the shortfall growing) until the rollout ends or stops on it
     (and for the period holding its last move).
   Both forms judge each of these per period, CloudWatch's metric math over each of its periods and the rule's
   branches over the periods that end at each evaluation (the condition of each period, `offset` one period
   for the one before, joined with `and`, a DaemonSet's branches on the DaemonSet whatever their reason:
   render/alarms.prometheus_expression; no `for`, which a condition that is not monotone would reset, a rollout's
   move and a brief recovery in different windows of one `for` firing minutes after CloudWatch).
   A known gap (tests/integration/test_data_missing.py pins it): GPU nodes added every few minutes hide an exporter
   lost on another node (each period reads as a node joining: the least desired against the most available, the
   updated count rising), the rule never firing and the alarm only at single minutes. The CloudWatch agent in a
   crash loop (running a minute of every five) passes these, every period holding an observation of each series:
   the agent alarm (AGENT_SUFFIX) counts its reads of kube-state-metrics per period instead, and the rule's
   branch 5 the same count of kube-state-metrics' own target (its `up`).
The rule also fires on 4. a node whose exporter brought no GPU data most of the time: more than half
(NO_DATA_SHARE) of the node's scrapes over the rule's window (period x evaluation periods, 10 minutes by default) failed
(`up` 0) or answered without one DCGM sample (`scrape_samples_post_metric_relabeling` 0, which a failed scrape
reports too): an exporter in a crash loop, hung with its pod available, or answering 200 with an empty page
(its DCGM host engine lost, NVML failing; dcgm-exporter keeps serving HTTP). It names the node. An exporter in
a crash loop (available a minute of every five at CrashLoopBackOff's cap) fires through 4 only: one moment of
full availability in each period clears 3. A rolling restart (each target down under a minute, once), a
failed scrape and a node added whose exporter fails its first scrapes do not fire.
The count is each node's, whatever exporter pod answered (both sides): a broken exporter deleted by hand and
recreated still broken, or replaced by a rollout whose pod fails too, goes on counting (counted per pod, the rule
cleared at the delete and missed 8 + 9 empty scrapes of 20 that CloudWatch's per-node sum fired for). Two exporter
pods on one node at once (a rollout with maxSurge, two exporter DaemonSets on a node) add their scrapes: 6 + 7 failed
of their 40 fire, though one pod or the other brought the node's data at every scrape. A CloudWatch GROUP BY alarm
is one aggregate of one value per scrape against a threshold, which cannot require both more than half the window's
scrapes and more bad scrapes than good (one share alone fires a new node's first failed scrape), so both forms say
this limit (per_node_description; tests/integration/test_data_missing_node_pods.py pins the truth).

Branch 4 is one situation on both sides, judged over one window, not over two periods: a mean is not
monotone, so "below half in each of two periods" (CloudWatch's two datapoints) and "below half over the last
period, kept for a period" (a Prometheus `for`) fire on different patterns (an outage of 6 minutes straddling
two periods breaches both halves, never a 15-minute mean; down 70% of one period and 40% of the next breaches
a 10-minute mean, never both halves). Counted over the same window it is the same on both:
  * CloudWatch (the OTel pipeline): the agent's receiver writes `scrape_samples_post_metric_relabeling` at
    every scrape with the target's labels; the filter keeps it and a transform makes it a flag (1: the scrape
    brought no GPU data, 0: it did; render/agent_otel.NO_DATA_FLAG), published with [ClusterName, node]
    (declared in render/agent.emf_processor). A GROUP BY alarm per node (render/alarms.second_plan) sums the flags
    over one period the length of the window and fires above NO_DATA_SHARE of the window's scrapes; a node with no
    target (gone) has no data: notBreaching. Every scrape is published so that a scraped node's latest period always holds a
    datapoint: with only the bad scrapes, a recovered node's empty window let CloudWatch judge the breaching
    period before it (the evaluation range, see the CloudWatch form below) and the node was in ALARM again.
  * Prometheus: a rule of its own (no `for`), the same count over the same window ((t - window, t]), each scrape
    read once within a 5 s step as the other rules read readings (no_data_expression), summed over the node's
    targets, above the same number, kept while the node is scraped.
On the JSON path (agent.pipeline: classic), whose scraper drops `up` and `scrape_*`, the second alarm counts
each GPU's observations below SCRAPE_SHARE of its scrapes in each of two periods (a crash loop; a GPU that k
series repeat only below 1/(2k); a GPU silent altogether, or an exporter answering empty, is not seen). A GROUP
BY alarm judges each series apart, so a node removed early in one period and another added late in the next do
not fire, as `MIN(query) < n/2` in the metric math would. No CloudWatch alarm reads DaemonSets other than those
the settings name.

CloudWatch form: a metric-math alarm over six static metrics of the cluster (dimension set
[ClusterName]; the agent scrapes the three kube-state-metrics series with its own job; with several DaemonSets, of
each DaemonSet, [ClusterName, namespace, daemonset], and the cluster's GPU observations g), the updated pods read
twice (their Maximum u and Minimum v), and the nodes' series n and k (NODES):
`FILL(IF(d > 0, g * (a >= d OR (u > v AND d - a <= 1)), 1), 0) + ((n > 0) > FILL(k, 0) + FILL(d, 0)) < 1`, TreatMissingData breaching. FILL gives a period without a datapoint 0 (breaching, as TreatMissingData says): an alarm
retrieves more periods than EvaluationPeriods (its "evaluation range", of unpublished length) and judges the most
recent real datapoints when enough exist, so an empty latest period would be skipped for older, healthy ones (user
guide, "How alarm state is evaluated when data is missing"). By the documented semantics (user
guide, "Using math expressions with CloudWatch metrics",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html: its IF tables
and "Missing values in a time series are treated as 0"), IF drops a timestamp where its condition
series has no datapoint (1: missing, so breaching), gives 0 where the condition holds and the value
series has none (2), and a comparison of two series, or arithmetic between them, reads a missing
value as 0 (3).

On the Container Insights add-on (`cloudwatch.source: container-insights`) kube-state-metrics is not
among the sources, so the CloudWatch form reads the add-on's own metrics of the cluster (dimension
set [ClusterName], namespace ContainerInsights; see addon_metrics):

* `node_gpu_limit` - each GPU node's `nvidia.com/gpu` capacity, from the Node object the kubelet
  reports, not from DCGM. The add-on's agent adds it to a node's metrics only when that capacity is
  not 0 (awscontainerinsightreceiver, stores/podstore.go `decorateNode`), so with the GPU node group
  at zero it is missing, not 0. It comes once per node and collection (the receiver merges a node's
  CPU, memory and network metrics into one before decorating it), so its Sum over a period is one
  per GPU and collection;
* `node_gpu_temperature` - one observation per GPU and DCGM scrape; node metrics keep a GPU no pod
  holds (the agent's gpuattributes processor drops only container_ and pod_ GPU metrics without a
  pod), so idle GPUs count;
* `cluster_node_count` - published by the agent's elected leader from the API server whatever the
  nodes are: the add-on's agent is running.

The node metrics are collected every cloudwatch.addon_metrics_interval and the DCGM fields every
addon_gpu_interval (60 s unless set, the agent's DefaultMetricsCollectionInterval), both written in the add-on's
configuration gpudash writes (metrics_collection_interval, accelerated_compute_gpu_metrics_collection_interval), so
in a healthy cluster the GPU observations equal the capacity's Sum times N / D (the period's node collections over
its DCGM collections).

The agent on a GPU node publishes both that node's capacity and its GPU metrics, so a ratio of the two
cannot see that agent stop. The count that can comes from the leader: the add-on's DCGM exporter
DaemonSet (`dcgm-exporter` in `amazon-cloudwatch`; its affinity selects GPU instance types) with its
available and unavailable pods, dimension set [ClusterName, Namespace, PodName] (see
container_insights_table.DAEMONSET_COUNTS): their sum is the GPU nodes it should run on, w, averaged
over the period. It is compared with the GPU NODES reporting, r, not with their collections: a Metrics
Insights query q over node_gpu_limit in its per-node set [ClusterName, NodeName, InstanceId], GROUP BY
NodeName, gives one series per node with a point in each period in which that node's agent collected at
least once; `r = SUM(q * 0 + 1)` makes each point 1 ("arithmetic with a number applies to each data
point", the user guide's METRICS()/100) and adds them per period (SUM of an array of time series is a
time series; a GROUP BY query in an alarm must be wrapped in such math). A query returns at most 500
series, so r counts at most 500 GPU nodes per cluster (LIMIT 500): a larger cluster would read 500 and fire.

The alarm reads `x = c + 0 * n`, `w = da + du + ea + eu + 0 * n` (the two names of each count; a
receiver publishes one; 0 where the leader publishes neither) and `FILL(IF(x > 0, g > 0, 1) * (w - r < 0.5), 0)` (FILL:
an empty period breaches, in the evaluation range too, see above)
below 1 for two periods in a row, TreatMissingData breaching:

  1. the agent stopped everywhere: no `n`, no `c`, no DaemonSet counts: no datapoint (breaching);
  2. GPU nodes exist but no GPU reported at all: g > 0 is 0 (IF gives 0 where g has no point);
  3. the agent stopped on one GPU node (its exporter still counted): w - r = 1 in every period with no
     collection of it, so ALARM 10 to 15 minutes after it stopped (at the default 5-minute period);
  4. the add-on's agent restarted on every node, one at a time (an add-on upgrade, a configuration change):
     each node misses a collection or two but still reports in every period; never fires;
  5. the node group at zero: x = 0 and w = 0, the value is 1; no pod holds a GPU: node metrics still
     count; a node drained keeps its DaemonSet pods and reports;
  6. nodes removed, several at once: each agent stops about 90 s before the DaemonSet stops counting its
     node, which breaches at most the one period holding that gap; the alarm needs two in a row. Removals
     in consecutive periods whose gaps add up to half a node in each can fire;
  7. a node added counts in w from when the DaemonSet counts it and in r from its agent's first
     collection: a gap under one period breaches at most one period and never fires; a node counted but
     silent over two whole periods (10 minutes or more) always does.

The per-GPU alarm. GPUs missing on nodes whose agent collects (an exporter stopped or crash-looping on a
node, a GPU DCGM does not report) are the rule's second alarm per cluster (render/alarms.second_plan), as on
the DCGM source a GPU is missing when it reported in under half its collections (SCRAPE_SHARE): a GPU
missing one collection, or a few minutes of a restart, is not. A cluster-wide ratio of observations cannot
say that: 20 nodes of an exporter rollout missing a minute each, one after the other, miss as many
observations in a period as one node missing all of it, and CloudWatch evaluates each minute a window of
the latest periods (user guide, "Alarm evaluation"), so a restart's gap falls across a period edge at some
minute. The alarm reads, per period of n DCGM collections (n = period / addon_gpu_interval; c below is scaled by
addon_metrics_interval / addon_gpu_interval to the same unit when the two differ, addon_capacity_scale):

* p, a Metrics Insights query of each GPU's observations of the field in the add-on's per-GPU set
  (ADDON_GPU_SET), GROUP BY NodeName, GpuDevice, ORDER BY COUNT() ASC LIMIT 500: the 500 least
  reporting GPUs; f = FLOOR((p + a) / b) (addon_gpu_reporting), 1 for a GPU with at least half its
  collections and 0 below (arithmetic with a number and FLOOR apply to each point of each series);
* c, the capacity's Sum (GPUs times the collections of their nodes' agents), and g, the observations.

`(c - g + SUM(p * f)) / n - SUM(f)`, at or above 0.5 two periods running (TreatMissingData notBreaching: with
nothing collected the cluster's alarm fires). Per GPU that is its node's collections, less its observations
when it sent at least half of them, over n, less 1 when it did: 0 for a GPU reporting at least half (an
exporter rollout, a restart under half a period); 1 for a GPU that sent nothing; (n - p) / n, over a half, for
one that sent fewer than half while its node's agent collected; 0 for a node whose agent and data stop or
start together (a node removed or added inside the period), so removals in consecutive periods do not add
up. Metric math does not combine two arrays, so SUM(p * f) is taken apart into sums of single chains
(addon_gpu_expression). A collection a node's agent misses is missing from c and g alike: an agent restart
never counts (it reads -1/n a GPU, which can hide a GPU missing in that one period). While fewer than 500
GPUs miss data at once (the least reporting come first) the count is exact; beyond, the misses of the GPUs
left out count as silence. A period holding one collection more than n (agents' clocks drift) overcounts
that one period only.

What it cannot see, or sees wrong: the add-on's DaemonSet counts exist only with enhanced observability
(without them w = 0 and point 4 is not seen). A GPU node whose GPUs the kubelet does not count as
nvidia.com/gpu (no device plugin, or every GPU split by MIG's mixed strategy into nvidia.com/mig-*) is
in w but never in r, so the alarm would stay in ALARM: `verify` fails such nodes. So is a node the exporter
DaemonSet counts whose GPUs are not NVIDIA (its affinity lists g4ad, AMD Radeon: its exporter pod never becomes
available and the node publishes no node_gpu_limit). MIG's single strategy
advertises each instance as nvidia.com/gpu, so the kubelet counts k GPUs for a GPU split into k instances, while the
add-on publishes that GPU's DCGM data once per collection: the per-GPU alarm stays in ALARM there; a GPU the mixed
strategy splits beside whole GPUs is not counted but published, and hides a GPU missing elsewhere (MIG_SENTENCE;
`verify` fails such nodes).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Callable, Iterable

from . import container_insights_table as addon
from .blanks import READING_FLOOR, short
from .cloudwatch_query import quote_identifier, quote_string
from .markers import CLUSTER_DIMENSION
from .promql import LOOKBACK_SECONDS, step_reading
from .promql_text import label_name, matcher, one_of
from .exporter_styles import (EXPORTER_LABELS, daemonset_key, exporter_daemonset, fleet_styles, named_daemonsets,
                              namespace_matcher, several_daemonsets)
from .settings import Cluster, Settings

DESIRED = "kube_daemonset_status_desired_number_scheduled"
# A DaemonSet's Kubernetes labels as label_<name> labels; kube-state-metrics exposes only those its
# --metric-labels-allowlist names (daemonsets=[app,app.kubernetes.io/name]).
LABELS, LABEL_PREFIX = "kube_daemonset_labels", "label_"
KSM_ALLOWLIST = "daemonsets=[app,app.kubernetes.io/name]"
AVAILABLE = "kube_daemonset_status_number_available"
# Nodes running the DaemonSet's current pod template: it rises as a rollout replaces pods (the new pod counts once
# scheduled), and stays while a rollout is stuck or no rollout runs.
UPDATED = "kube_daemonset_status_updated_number_scheduled"
KSM_METRICS = (DESIRED, AVAILABLE, UPDATED)
# A cluster where no GPU node has joined yet (GPU nodes launched from zero on demand) has no exporter DaemonSet to
# count: the GPU operator creates none while no node carries its GPU labels (NVIDIA/gpu-operator
# controllers/object_controls.go, DaemonSet(): "No GPU node in the cluster, do not create DaemonSets"), so a missing
# DaemonSet is no missing data there. kube-state-metrics tells it apart by default (its nodes collector): one
# kube_node_info per node (it reads the nodes), and kube_node_status_capacity of each resource a node's status lists,
# the device plugin's GPU resources among them (nvidia.com/gpu, nvidia.com/gpu.shared renamed by time-slicing,
# nvidia.com/mig-* of MIG's mixed strategy; the kubelet keeps a resource at 0 once its plugin stopped, so a GPU node
# whose device plugin was removed with its exporter still counts). A missing DaemonSet breaches only where a GPU node
# is (or was) or kube-state-metrics' nodes are not read: positive evidence of no GPU node silences it.
NODES = "kube_node_info"
CAPACITY = "kube_node_status_capacity"
GPU_RESOURCES = "nvidia_com_(gpu|mig)(_.+)?"  # kube-state-metrics' resource label: the name's . / - made _
NODE_METRICS = (NODES, CAPACITY)  # the agent keeps the GPU resources' capacity only (render/scrape.ksm_scrape_job)


def ksm_resource(name: str) -> str:
    """A resource's name as kube-state-metrics writes it in its resource label (nvidia.com/a100: nvidia_com_a100)."""
    return label_name(name)


def gpu_resources_pattern(settings: Settings) -> str:
    """The resource labels of the capacity that makes a node a GPU node: the device plugin's own names
    (GPU_RESOURCES) and those exporter.resource_names adds (a rename: or custom name of the plugin's config, which
    would otherwise make a node of such GPUs no GPU node, and silence the alarm of a cluster of them)."""
    named = sorted({ksm_resource(name) for name in settings.exporter.resource_names})
    return f"({'|'.join((GPU_RESOURCES, *named))})" if named else GPU_RESOURCES
NODE_STATS = (("n", NODES, "SampleCount"), ("k", CAPACITY, "SampleCount"))
CLUSTER_SET = (CLUSTER_DIMENSION,)
# kube-state-metrics' labels of a DaemonSet's series, and the set its counts are published with when a cluster has
# several exporter DaemonSets (ksm_set)
DAEMONSET_NAMESPACE, DAEMONSET_LABEL = "namespace", "daemonset"
DAEMONSET_SET = (CLUSTER_DIMENSION, DAEMONSET_NAMESPACE, DAEMONSET_LABEL)
SOURCE = "kube-state-metrics"
# (id, metric, statistic over the period): the least desired against the most available, so a pod
# restarting inside a period, or a node joining, is not an exporter down; and the updated pods' most and least, so
# a rollout that progressed in the period is not one either (RollingUpdate with maxUnavailable 1 deletes the next
# old pod as soon as the new one is available: kube-state-metrics rarely sees all available while it runs).
KSM_STATS = (("d", DESIRED, "Minimum"), ("a", AVAILABLE, "Maximum"), ("u", UPDATED, "Maximum"),
             ("v", UPDATED, "Minimum"))
# The most exporter pods a rollout keeps unavailable at once: the DaemonSet's RollingUpdate maxUnavailable, which
# kube-state-metrics does not expose (settings exporter.max_unavailable; 1, the DaemonSet's default, which the GPU
# operator and the dcgm-exporter chart keep). A shortfall above it, all period long, is not the rollout's: it fires while
# a rollout progresses (an exporter without a scrape target on one node during a rollout elsewhere that keeps fewer
# unavailable). The DaemonSet controller counts every unavailable pod against it (pkg/controller/daemon/update.go
# rollingUpdate: a node whose pod is missing or not available adds to numUnavailable, and no old pod is deleted beyond
# maxUnavailable), so a pod lost elsewhere during a rollout slows the rollout instead of adding to the shortfall: it is
# seen when the shortfall exceeds maxUnavailable, or when the rollout halts or ends.


def rollout_unavailable(settings: Settings, desired: str, ceil: str) -> str:
    """The pods a rollout may keep unavailable, as an expression: exporter.max_unavailable, or its percentage of
    `desired` rounded up (`ceil`: the function's name in the form's language), as the DaemonSet controller scales it
    (GetScaledValueFromIntOrPercent, rounding up)."""
    allowed = settings.exporter.max_unavailable
    if isinstance(allowed, str):
        return f"{ceil}({desired} * {allowed.removesuffix('%')} / 100)"
    return str(allowed)


def expression(settings: Settings) -> str:
    """The CloudWatch form's metric math (see the module's docstring); its last term is 1 in a period where
    kube-state-metrics read nodes (n) and no GPU node's capacity (k) nor the DaemonSet's count (d): no GPU node yet,
    no DaemonSet to count (a comparison of two series reads a missing value as 0). k and d are FILLed: with no GPU
    node, or the GPU node group at zero, k has no data point in the whole range, and what arithmetic makes of such
    a series is not written (the comment below)."""
    return (f"FILL(IF(d > 0, g * (a >= d OR (u > v AND d - a <= {rollout_unavailable(settings, 'd', 'CEIL')})), 1), 0)"
            f" + ((n > 0) > FILL(k, 0) + FILL(d, 0))")


# What metric math makes of a series with no data point in the whole range (k without a GPU node, everything when
# the agent stops) is not written in the user guide ("Using math expressions with CloudWatch metrics" says how a
# missing value of a series with data points is read, FILL that it "fills the missing values of a time series"; not
# whether an empty series is a series of missing values or no series, nor whether FILL makes values from nothing;
# searched the guide, AWS pages and issue threads on 2026-12-03: one thread reports `missing + 0` reading 0 where the
# other operand had data, the documented case; nothing on an empty series). The alarm is
# built to be fail-safe under every reading: each outage (the agent, kube-state-metrics or the exporter stopped, its
# DaemonSet deleted) leaves the expression 0 or empty, and TreatMissingData breaching fires it. A cluster without GPU
# nodes (or with its GPU node group at zero) is OK where an empty series reads as missing values, or where FILL fills
# it; only where arithmetic with an empty series is empty AND FILL makes nothing from nothing does it fire (loud, not
# silent). tests/unit/test_data_missing_absent_series.py judges each case under all four readings.


# The Container Insights add-on's form (see the module's docstring).
ADDON_ALIVE = addon.CLUSTER_NODE_COUNT  # published by the add-on agent's leader while it runs
ADDON_CAPACITY = addon.NODE_GPU_LIMIT  # each GPU node's nvidia.com/gpu capacity, from the kubelet
ADDON_REPORTED = "DCGM_FI_DEV_GPU_TEMP"  # the field the add-on's exporter reports for every GPU
ADDON_STATS = (("n", ADDON_ALIVE, "SampleCount"), ("c", ADDON_CAPACITY, "Sum"))
# The add-on's DCGM exporter DaemonSet as the leader publishes it (id, metric), both names of each count.
ADDON_DESIRED = tuple(zip(("da", "du", "ea", "eu"), addon.DAEMONSET_COUNTS + addon.DAEMONSET_COUNTS_EARLIER))
ADDON_METRIC_COUNT = len(ADDON_STATS) + len(ADDON_DESIRED) + 1  # and g, the GPU observations (the query aside)
ADDON_EXPECTED = "c + 0 * n"
ADDON_GPU_NODES = " + ".join(i for i, _ in ADDON_DESIRED) + " + 0 * n"  # 0 where the leader runs and publishes none
# The GPU nodes with at least one node_gpu_limit collection in the period: one series per node (its per-node set),
# each point made 1 and the array summed. A Metrics Insights query returns at most 500 series.
ADDON_NODE_SET = addon.CAPACITY_DIMENSION_SETS[addon.NODE_GPU_LIMIT][0]  # (ClusterName, NodeName, InstanceId)
ADDON_REPORTING = "SUM(q * 0 + 1)"
NODES_PER_QUERY = 500
# The add-on's per-GPU alarm: each GPU's DCGM observations in its per-GPU set, one series per GPU (at most 500).
ADDON_GPU_SET = addon.GPU_DIMENSION_SETS["node"][2]  # (ClusterName, NodeName, InstanceId, InstanceType, GpuDevice)
ADDON_GPU_GROUP = (addon.NODE, addon.DEVICE)
GPUS_PER_QUERY = 500
MISSING_GPU = 0.5  # GPUs missing, counted over a period, that breach it
# The rule's branch 4 (a node whose exporter brought no GPU data most of the time), the same on both sides: more
# than this share of the node's scrapes over the rule's window (period x evaluation periods) failed or answered without a
# DCGM sample. A crash loop (CrashLoopBackOff answers a minute or two of every five) fires; a rolling restart (each
# target down under a minute, once) and a failed scrape do not.
NO_DATA_SHARE = 0.5
MISSING_NODE = 0.5  # GPU nodes not reporting, on average over a period, that breach it


# The rule's second CloudWatch alarm on agent.pipeline: classic (render/alarms.second_plan), a GROUP BY alarm: a GPU
# with under this share of its scrapes' observations in each of two periods running.
SCRAPE_SHARE = 0.5
PER_GPU_SUFFIX = "-per-gpu"
# On the OTel pipeline, what branch 4 of the Prometheus rule reads: the samples each exporter target's scrape kept
# after the job's metric relabelling (only DCGM fields), which the agent's receiver writes at every scrape, 0 for a
# failed one, with the target's labels; gpudash's scrape job attaches the node (render/scrape.py). The filter keeps
# it, a transform makes it a flag (1: no DCGM sample, 0: some); published with [ClusterName, node].
SAMPLES = "scrape_samples_post_metric_relabeling"
NODE_LABEL = "node"
POD_INFO = "kube_pod_info"  # kube-state-metrics: one series per pod, with its namespace, name and node
SAMPLES_SET = (CLUSTER_DIMENSION, NODE_LABEL)
PER_NODE_SUFFIX = "-per-node"


# The rule's third CloudWatch alarm (prometheus-emf source): the agent's own scrapes of each kube-state-metrics target,
# counted per period as the datapoints of the desired count it publishes from that target (one per scrape that reached
# it), below SCRAPE_SHARE of the period's scrapes in each of AGENT_PERIODS periods running, missing data not
# breaching. A CloudWatch agent in a crash loop (running a minute of every five) publishes a little of every period,
# which the cluster's alarm passes; a partial period next to an empty one (the agent starting, or stopping; a
# kube-state-metrics pod replaced) breaches one period only, and an agent stopped is the cluster's alarm (its missing
# data breaching).
# Counted per target, as the rule's twin counts (kube-state-metrics' own target answering under half its scrapes, its
# `up` by job and instance): the agent's job keeps every pod kube_state_metrics.pod_label names (two replicas, a second
# install in another namespace), each scraped at every round, and CloudWatch keeps every datapoint of a metric, so in
# one metric two targets' reads of 4 rounds of 10 counted 8, over the threshold. The job writes each target's
# namespace/pod into KSM_TARGET, and the desired count is published with it too (agent_set, declared in
# render/agent.emf_processor): a Metrics Insights GROUP BY alarm, each target a contributor (agent_query).
# Its periods: a kube-state-metrics pod read at every scrape of its life is short of a period's scrapes in its first
# and last period only (it started, or went, within them), so a contributor short in AGENT_PERIODS periods running had
# a whole period between them read under half: a gap in its reads. At two, a pod living under two periods (a new pod
# replaced again within minutes, a replica added then removed) breached both though every scrape answered, and a pod
# gone after two short periods kept its contributor in ALARM while those were its latest datapoints (after three or
# more it still does, where its twin has stopped: docs/alarms.md). The rule's twin judges its branch over the same
# periods (agent_periods; render/alarms.prometheus_expression).
AGENT_PERIODS = 3
AGENT_SUFFIX = "-agent"
KSM_READ_REASON = "kube-state-metrics answered under half its scrapes"
KSM_TARGET = "kube_state_metrics_pod"  # the label (and dimension) the agent's job writes: the target's namespace/pod


def agent_periods(evaluation_periods: int, datapoints_to_alarm: int | None) -> int:
    """The periods running in which the agent alarm's contributor (and its twin, kube-state-metrics' target) must
    breach, all of them (its EvaluationPeriods and DatapointsToAlarm): the rule's where it needs AGENT_PERIODS or more,
    else AGENT_PERIODS."""
    return max(AGENT_PERIODS, datapoints_to_alarm or evaluation_periods)


def agent_threshold(settings: Settings, period: int) -> float:
    """The agent's scrapes of one kube-state-metrics target per period below which the period breaches."""
    return SCRAPE_SHARE * period / settings.scrape.seconds


def agent_set(settings: Settings) -> tuple[str, ...]:
    """The dimension set the desired count is published with for the agent alarm: kube-state-metrics' (ksm_set) and
    the target that served it."""
    return (*ksm_set(settings), KSM_TARGET)


def agent_query(settings: Settings, cluster: Cluster) -> str:
    """The agent alarm's Metrics Insights query: each kube-state-metrics target's datapoints of the desired count per
    period, a series per target (per target and exporter DaemonSet where a cluster names several: the agent's job keeps
    the cluster's named DaemonSets only, and a sharded kube-state-metrics serves each from one shard, so a shard in a
    crash loop is seen whichever DaemonSet it serves, as the rule's twin sees its target), the fewest first (past 500,
    those read least)."""
    dims = agent_set(settings)
    groups = [d for d in dims if d != CLUSTER_DIMENSION]
    return (f"SELECT COUNT({quote_identifier(DESIRED)}) FROM SCHEMA({quote_identifier(settings.cloudwatch.namespace)}, "
            f"{', '.join(quote_identifier(d) for d in dims)}) WHERE {quote_identifier(CLUSTER_DIMENSION)} = "
            f"{quote_string(cluster.name)} GROUP BY {', '.join(quote_identifier(d) for d in groups)} "
            f"ORDER BY COUNT() ASC")


# What a data-missing alarm gpudash writes means: its own sentence, then further sentences each with its short form
# (a sentence too), the one a description gives way to where there is no room for the whole (render/alarm_text)
About = tuple[tuple[str, str], ...]


def whole_text(about: About) -> str:
    """An About's sentences as one text."""
    return " ".join(sentence for sentence, _ in about)


def agent_description(settings: Settings, period: int, periods: int) -> About:
    """What the agent alarm sees, and what it cannot."""
    look = f"`kubectl -n {settings.agent.namespace} get pods`"
    return ((f"The CloudWatch agent read a kube-state-metrics pod (each a contributor) in fewer than "
             f"{agent_threshold(settings, period):g} of its "
             f"{counted(period // settings.scrape.seconds, 'scrape')} of a period "
             f"{periods_running(periods)}: the agent in a crash loop (running a minute of every five), or "
             f"kube-state-metrics answering under half the time, so most GPU data of every period never reaches "
             f"CloudWatch.", ""),
            ("An agent or kube-state-metrics pod starting, stopped or short-lived is not (short in end periods); "
             "an agent stopped is the cluster's alarm.",
             "It does not fire for an agent starting or stopped: the cluster's alarm does."),
            (f"Look at {look} (cwagent-prometheus restarts and its logs) and at kube-state-metrics' pod.",
             f"Look at {look} and kube-state-metrics' pod."))


def per_node(settings: Settings) -> bool:
    """The rule's second CloudWatch alarm counts each exporter target's scrapes that brought no GPU data, per node
    (the OTel pipeline, whose receiver passes the scrape's own series on); on the JSON path, whose scraper drops
    them, it counts each GPU's observations."""
    return settings.agent.pipeline == "otel"


def fewest_periods(settings: Settings) -> int:
    """The fewest evaluation periods the rule judges right: on agent.pipeline: classic its per-GPU alarm over one period
    fires for a GPU node added or removed (node_churn; a copy of 600 s x 1 at 150 s scrapes was in ALARM 18 minutes
    after a node removed and 3 after one added, over two periods at none); on the OTel pipeline one (600 s x 1 there
    fired at the minutes 300 s x 2 fired, an exporter or the agent stopped, and at none of a node coming or going)."""
    return 1 if per_node(settings) else 2


def fewest_periods_why(settings: Settings) -> str:
    """Why the rule needs fewest_periods ("" where it needs one)."""
    return "" if fewest_periods(settings) == 1 else \
        "its alarm per GPU (agent.pipeline: classic) firing over one period for a GPU node added or removed"


def window_seconds(period: int, evaluation_periods: int) -> int:
    """The rule's window: branch 4 and the per-node alarm count over it as one period."""
    return period * evaluation_periods


def no_data_threshold(settings: Settings, window: int) -> float:
    """The scrapes that brought no GPU data over `window` above which a node's data is missing."""
    return NO_DATA_SHARE * window / settings.scrape.seconds


def per_node_description(settings: Settings, window: int) -> About:
    """What the per-node alarm sees, and what it cannot."""
    scrapes = window // settings.scrape.seconds
    return ((f"A GPU node whose exporter brought no GPU data (scrape failed, or answered without a DCGM sample) in "
             f"more than {no_data_threshold(settings, window):g} of its {counted(scrapes, 'scrape')} over the last "
             f"{counted(window // 60, 'minute')} is a contributor in ALARM (crash loop, exporter hung, or up with "
             f"DCGM lost), as "
             f"the rule counts (each scrape a flag, 1: no GPU data).", ""),
            ("A rolling restart, a failed scrape are not; a node without exporter target is notBreaching (the "
             "cluster's alarm sees its pod missing); one removed while failing clears late.",
             "It does not fire for a rolling restart, a failed scrape or a node without exporter target (the "
             "cluster's alarm does); one removed while failing clears late."),
            ("Two exporter pods on one node at once (a rollout's maxSurge) add their failed scrapes: it can fire "
             "while one brings data.",
             "Two exporter pods on one node at once add their failed scrapes."))


def per_gpu_threshold(settings: Settings, period: int) -> float:
    """The observations per GPU and period below which its data is missing: SCRAPE_SHARE of its scrapes."""
    return SCRAPE_SHARE * period / settings.scrape.seconds


def counted(count: float, noun: str) -> str:
    """`count` `noun`s, one without the plural's s ("1 period", "2 periods", "0.5 readings")."""
    return f"{count:g} {noun}{'' if count == 1 else 's'}"


def periods_running(periods: int) -> str:
    """`in each of two periods running`, as many as the alarm's evaluation periods."""
    if periods == 1:
        return "in one period"
    return f"in each of {dict(enumerate(('', '', 'two', 'three', 'four'))).get(periods) or periods} periods running"


def node_churn(periods: int) -> tuple[str, str]:
    """What a GPU node added or removed does to the per-GPU alarm judged over `periods` (and its short form): its
    GPUs are short of observations in the one period holding the moment it came or left (the periods before or after
    hold none, which is not breaching), so the alarm, needing every one of its periods, fires only over one period;
    a removed node's short datapoint stays the most recent one while it is in the evaluation range."""
    if periods > 1:
        return "A node added or removed is short one period only.", "A node added or removed: one period short."
    return ("A node added or removed leaves its GPUs short in the period it came or left, so it can fire this alarm, "
            "judged over one period; one removed clears late.",
            "A node added or removed can fire it; one removed clears late.")


def per_gpu_description(settings: Settings, field: str, period: int, periods: int) -> About:
    """What the per-GPU alarm (agent.pipeline: classic) sees, and what it cannot."""
    return ((f"A GPU with fewer than {per_gpu_threshold(settings, period):g} of its "
             f"{period // settings.scrape.seconds} observations of {field} {periods_running(periods)} (its exporter "
             f"crash-looping or failing half its scrapes) is a contributor in ALARM.", ""),
            (f"A GPU that k series repeat ({'pods sharing it' if settings.no_mig else 'MIG instances, pods sharing it'}) "
             f"counts k per scrape: it is seen only below 1/(2k) of its scrapes.",
             "A GPU k series repeat is seen only below 1/(2k) of its scrapes."),
            node_churn(periods),
            ("A GPU silent altogether (an exporter hung with its pod available, or answering without DCGM samples, or "
             "a removed node) has no data and is notBreaching: the cluster's alarm sees a pod not available; the "
             "agent's JSON path drops up and scrape_*.",
             "A GPU silent altogether does not fire it; the cluster's alarm sees only a pod not available."),
            *((("Past 500 GPUs it judges the 500 of fewest observations over its periods: GPUs that came within them "
                "can rank before one missing data all along and leave it unjudged (lint AL017).",
                "Past 500 GPUs, newcomers can leave one missing all along unjudged (lint AL017)."),) if periods > 1
              else ()))


def cluster_limits(settings: Settings, cluster: Cluster | None = None,
                   daemonset: tuple[str, str] | None = None) -> tuple[str, str]:
    """What the alarm of `daemonset` (the cluster's first exporter DaemonSet unless given) cannot see on the DCGM source
    (two notes of its description: which DaemonSet it reads, what it does not see)."""
    second = ("per-node alarm sees them through each exporter target's scrapes" if per_node(settings) else
              "per-GPU alarm sees a GPU reporting under half its scrapes, not one silent altogether")
    named = named_daemonsets(settings, cluster)
    daemonset = daemonset or named[0]
    setting = "".join("[]" if isinstance(part, int) else f".{part}"
                      for part in daemonset_key(settings, cluster, daemonset == named[0])).lstrip(".")
    read = (f"the agent reads one exporter DaemonSet, {daemonset[0]}/{daemonset[1]} ({setting}; others are not seen)"
            if len(named) == 1 else
            f"this alarm reads the exporter DaemonSet {daemonset[0]}/{daemonset[1]} ({setting}), one of the cluster's "
            f"{len(named)} each with its alarm (others are not seen)")
    return read, (f"a crash loop (a moment of full availability each period) and an exporter silent with its pod "
                  f"available are not seen here: the rule's {second}")


def cluster_limits_short(settings: Settings, cluster: Cluster | None = None,
                         daemonset: tuple[str, str] | None = None) -> tuple[str, str]:
    """cluster_limits' short forms: the DaemonSet read (others not seen), and what is not seen (it does not fire)."""
    daemonset = daemonset or named_daemonsets(settings, cluster)[0]
    return (f"reads DaemonSet {daemonset[0]}/{daemonset[1]} only: it does not fire for others",
            "it does not fire for a crash loop or an exporter silent with its pod available")


def addon_expression() -> str:
    """Below 1 when the add-on's agent stopped, everywhere or on a GPU node, or no GPU reported at all (see the
    module's docstring); GPUs missing on nodes whose agent collects are the per-GPU alarm's (addon_gpu_expression)."""
    return f"FILL(IF(x > 0, g > 0, 1) * (w - r < {MISSING_NODE:g}), 0)"


def addon_collections(period: int, gpu_interval: int) -> int:
    """The add-on's DCGM collections of one GPU in a period (its GPU metrics' SampleCount: one per collection, also
    as distributions below 60 s)."""
    return period // gpu_interval


def addon_capacity_scale(metrics_interval: int, gpu_interval: int) -> str:
    """c (the capacity's Sum: one per GPU and node collection) in DCGM collections: times D / N, the DCGM
    collections of a period over its node collections (written as the intervals' ratio)."""
    if metrics_interval == gpu_interval:
        return "c"
    return f"c * {metrics_interval} / {gpu_interval}"


def addon_gpu_expression(period: int, metrics_interval: int, gpu_interval: int) -> str:
    """The GPUs the kubelet counts on nodes whose agent collects that reported in fewer than half the period's
    collections, (c D / N - g + SUM(p * f)) / D - SUM(f) (see the module's docstring, "The per-GPU alarm": D the
    period's DCGM collections, N its node collections), with p * f = max(0, p - b) + b * f (b = the half, less
    one: p * f is p at or above the half, 0 below; on whole counts) and max(0, x) = (x + ABS(x)) / 2 taken apart
    into sums of single chains, since metric math does not combine two arrays."""
    n = addon_collections(period, gpu_interval)
    below = (n + 1) // 2 - 1
    capacity = addon_capacity_scale(metrics_interval, gpu_interval)
    return f"({capacity} - g + (SUM(p) + SUM(v) - {below} * SUM(p * 0 + 1)) / 2 - {n - below} * SUM(f)) / {n}"


def addon_gpu_reporting(period: int, gpu_interval: int) -> str:
    """Each GPU of the query p: 1 when it reported in half the period's collections or more, 0 below (exact for up
    to twice the collections a period holds)."""
    n = addon_collections(period, gpu_interval)
    enough = (n + 1) // 2
    width = 2 * n + 1 - enough  # FLOOR((p + width - enough) / width) is 1 for p in [enough, 2n], 0 below
    return f"FLOOR((p + {width - enough}) / {width})"


def addon_gpu_distance(period: int, gpu_interval: int) -> str:
    """Each GPU of the query p: how far its count is from the half, less one (ABS(p - b))."""
    return f"ABS(p - {(addon_collections(period, gpu_interval) + 1) // 2 - 1})"


def addon_gpu_metrics(plan_expression: str, reported_metric: str, cluster: Cluster, period: int,
                      label: str, metrics_interval: int, gpu_interval: int) -> list[dict]:
    """The `Metrics` of the add-on's per-GPU alarm: the GPU nodes' capacity (c, GPU-collections), the cluster's
    GPU observations (g), each GPU's observations (p, the plan's query), each GPU reporting or not (f), its
    distance from the half (v) and the expression, at the add-on's collection intervals."""
    def stat(identifier: str, metric: str, statistic: str) -> dict[str, Any]:
        return {"Id": identifier, "ReturnData": False,
                "MetricStat": {"Metric": {"Namespace": addon.NAMESPACE, "MetricName": metric,
                                          "Dimensions": [{"Name": CLUSTER_DIMENSION, "Value": cluster.name}]},
                               "Period": period, "Stat": statistic}}

    return [stat("c", ADDON_CAPACITY, "Sum"), stat("g", reported_metric, "SampleCount"),
            {"Id": "p", "Expression": plan_expression, "Period": period, "ReturnData": False},
            {"Id": "f", "Expression": addon_gpu_reporting(period, gpu_interval), "ReturnData": False},
            {"Id": "v", "Expression": addon_gpu_distance(period, gpu_interval), "ReturnData": False},
            {"Id": "e", "Expression": addon_gpu_expression(period, metrics_interval, gpu_interval), "Label": label,
             "ReturnData": True}]


# A GPU split into MIG instances is counted otherwise by the kubelet (node_gpu_limit, its nvidia.com/gpu) than by the
# add-on, which publishes a MIG GPU's DCGM data once per collection (its agent keeps no instance label on node metrics,
# and the EMF exporter keeps the first instance's reading): MIG's single strategy advertises each instance as an
# nvidia.com/gpu, so a GPU split into k instances reads k - 1 GPUs missing with every GPU reporting; the mixed strategy
# advertises nvidia.com/mig-*, so a MIG GPU is not counted and its readings make up for a GPU of another node gone
# (tests/unit/test_container_insights_data_missing.py). `gpudash verify` fails such nodes (checks/kube.py).
MIG_SENTENCE = ("A GPU split into MIG instances misleads it: under MIG's single strategy the kubelet counts each "
                "instance as a GPU and the add-on publishes the GPU once, so it stays in ALARM with every GPU "
                "reporting; under the mixed strategy the kubelet counts no MIG GPU and the add-on publishes it, which "
                "hides a GPU missing elsewhere (`gpudash verify` fails such nodes; write alarms.expected_gpus: none).")


def addon_gpu_description(period: int, metrics_interval: int, gpu_interval: int, mig: bool = True) -> About:
    """What the add-on's per-GPU alarm sees, and what it cannot; what MIG does to it only where GPUs may be split
    (`mig`: the cluster does not say exporter.mig: none)."""
    n = addon_collections(period, gpu_interval)
    intervals = f"node metrics every {metrics_interval} s and DCGM every {gpu_interval} s"
    return ((f"GPUs the kubelet counts (node_gpu_limit) on nodes whose agent collects, whose DCGM data came in fewer "
             f"than {(n + 1) // 2} of the {n} collections of a period, in each of two periods running: an exporter "
             f"stopped or crash-looping on a node, a GPU DCGM does not report.", ""),
            ("An exporter rollout or a restart (each GPU missing under half a period) is not missing data.",
             "It does not fire for an exporter rollout or restart."),
            (f"At most {GPUS_PER_QUERY} GPUs per cluster are read one by one (the least reporting first): exact while "
             f"fewer than {GPUS_PER_QUERY} miss data at once.",
             f"Exact while fewer than {GPUS_PER_QUERY} miss data at once."),
            ("A GPU node whose agent stopped is the cluster's alarm.", "An agent stopped is the cluster's alarm."),
            *(((MIG_SENTENCE, "A GPU split into MIG instances keeps it in ALARM or hides a GPU missing elsewhere "
                              "(alarms.expected_gpus: none)."),) if mig else ()),
            *(() if (metrics_interval, gpu_interval) == (60, 60) else
              ((f"Counted for {intervals} (cloudwatch.addon_metrics_interval, addon_gpu_interval): the agent must "
                f"collect at these intervals.", f"The agent must collect {intervals}."),)))


def addon_nodes_query(cluster: Cluster) -> str:
    """Metrics Insights: each GPU node's node_gpu_limit, one series per node (at most 500)."""
    schema = ", ".join(quote_identifier(d) for d in (addon.NAMESPACE, *ADDON_NODE_SET))
    return (f"SELECT MAX({quote_identifier(addon.NODE_GPU_LIMIT)}) FROM SCHEMA({schema}) "
            f"WHERE {quote_identifier(CLUSTER_DIMENSION)} = {quote_string(cluster.name)} "
            f"GROUP BY {quote_identifier(addon.NODE)} ORDER BY MAX() DESC LIMIT {NODES_PER_QUERY}")


_ADDON_LOOK = f"`kubectl -n {addon.ADDON_NAMESPACE} get ds,pods -o wide`"
ADDON_DESCRIPTION: About = (
    ("The add-on's agent stopped, everywhere or on a GPU node its DCGM exporter DaemonSet runs on, or no GPU the kubelet "
     "counts (node_gpu_limit) reported (GPUs missing on nodes whose agent collects: the per-GPU alarm).", ""),
    ("A GPU node group at zero, a node drained or removed and GPUs no pod holds are not missing data; a GPU node "
     "reporting over 5 minutes after joining can be, over 10 is.",
     "It does not fire for a node group at zero, a node drained or removed, GPUs no pod holds; for a node reporting "
     "over 5 minutes after joining it can, over 10 it does."),
    (f"On this source: {_ADDON_LOOK} (the {addon.EXPORTER_DAEMONSET} and {addon.AGENT_DAEMONSET} DaemonSets: a pod not "
     f"Ready on a GPU node, its logs).", f"Look at {_ADDON_LOOK}."))


def expected(settings: Settings) -> bool:
    """True when an expected signal tells the alarm whether GPUs should be reporting."""
    return settings.alarms.expected_gpus == SOURCE


def left_out_reason(settings: Settings) -> str | None:
    """Why the data-missing alarm is left out of both backends (None: it is not)."""
    if expected(settings):
        return None
    return ("alarms.expected_gpus is none: nothing tells a stopped exporter from a GPU node group at zero "
            "(set alarms.expected_gpus: kube-state-metrics to have it)")


def left_out(project) -> list[tuple[str, str]]:
    """(where, message) of each data-missing alarm left out because nothing tells it GPUs are expected."""
    reason = left_out_reason(project.settings)
    return [(alarm.defined_at, f"alarm {alarm.id!r} is left out: {reason}")
            for alarm in project.alarms if alarm.absent and reason]


def on_addon(project) -> bool:
    """The data-missing alarm is generated on the Container Insights add-on's metrics (it counts the GPUs the
    kubelet advertises as nvidia.com/gpu)."""
    from .container_insights import enabled

    return enabled(project.settings) and expected(project.settings) and any(a.absent for a in project.alarms)


def guessed_daemonset(project) -> tuple[str, str, str] | None:
    """(where, what, fix) when the CloudWatch data-missing alarm reads a Helm release's DaemonSet by the chart's bare
    name (a cluster of deployment helm, exporter.deployment or its clusters[].exporter.deployment, whose DaemonSet no
    setting names): the chart names it <release>-dcgm-exporter, so only a release named dcgm-exporter (or holding it:
    then the release name alone) matches, and the alarm stays in ALARM for any other; None when the name is written, or
    no such alarm is generated."""
    from .exporter_styles import exporter_namespace, style_for
    from .settings import setting_place

    settings = project.settings
    fleet_helm = settings.exporter.deployment == "helm"
    unnamed = [c for c in settings.clusters if style_for(settings, c).key == "helm" and not c.exporter_daemonset
               and not (settings.exporter.daemonset and style_for(settings, c).key == settings.exporter.deployment)]
    if not unnamed or _daemonset_unread(project):
        return None
    # the DaemonSet each such cluster's alarm reads, in the cluster's own exporter namespace: one (namespace, name)
    # for the fleet, or each with its clusters
    reads: dict[tuple[str, str], list[str]] = {}
    for cluster in unnamed:
        reads.setdefault((exporter_namespace(settings, cluster), exporter_daemonset(settings, cluster)), []).append(
            cluster.name)

    def of(clusters: list[str]) -> str:
        return "" if len(reads) == 1 else f" (cluster{'s' * (len(clusters) > 1)} {', '.join(clusters)})"
    read = " and ".join(f"{namespace}/{name}{of(clusters)}" for (namespace, name), clusters in reads.items())
    look = "; ".join(f"`kubectl -n {namespace} get ds -l app.kubernetes.io/name=dcgm-exporter`{of(clusters)}"
                     for (namespace, _), clusters in reads.items())
    name = next(iter(reads))[1]  # the chart's bare name, the same in each (no setting names one)
    if fleet_helm and all(c.exporter_deployment in (None, "helm") for c in unnamed):
        which = "" if len(unnamed) == len(settings.clusters) else \
            f" (clusters without clusters[].exporter.daemonset: {', '.join(c.name for c in unnamed)})"
        what, place = f"exporter.deployment: helm without exporter.daemonset{which}", ["exporter", "deployment"]
    else:
        what = (f"clusters[].exporter.deployment: helm without clusters[].exporter.daemonset (clusters "
                f"{', '.join(c.name for c in unnamed)})")
        index = settings.clusters.index(next(c for c in unnamed if c.exporter_deployment == "helm"))
        place = ["clusters", index, "exporter", "deployment"]
    setting = "exporter.daemonset" if place[0] == "exporter" else "clusters[].exporter.daemonset"
    return (setting_place(settings, place),
            f"{what}: the CloudWatch data-missing alarm reads kube-state-metrics' counts of the "
            f"DaemonSet{'s' * (len(reads) > 1)} {read}, which the chart names so only for a release named {name} (else "
            f"<release>-{name}, or the release name when it holds {name}); for any other release the alarm stays in "
            f"ALARM",
            f"write {setting}: <the release's DaemonSet> ({look}; `gpudash verify` names it), or {setting}: {name} "
            f"when that is its name")


def unread_daemonset(project) -> tuple[str, str, str] | None:
    """(where, what, fix) when exporter.daemonset or a cluster's clusters[].exporter.daemonset is written but nothing
    generated reads it: only the CloudWatch agent's data-missing alarm does (not on the Container Insights source,
    not with alarms.expected_gpus: none or without a data-missing rule); None otherwise. exporter.more_daemonsets is
    always read: the scrape jobs keep the pods each listed DaemonSet owns (render/scrape.exporter_pods_rule)."""
    from .settings import setting_place

    settings = project.settings
    written = [["exporter", "daemonset"]] if settings.exporter.daemonset else []
    written += [["clusters", i, "exporter", "daemonset"] for i, cluster in enumerate(settings.clusters)
                if cluster.exporter_daemonset]
    why = _daemonset_unread(project) if written else None
    if not why:
        return None
    names = ", ".join(_setting_name(path) for path in written)
    return (setting_place(settings, written[0]), f"{names} is written but nothing generated reads it: {why}",
            f"remove {names}, or see why it is unread")


def addon_uncounted_names(project) -> tuple[str, str, str] | None:
    """(where, what, fix) when exporter.resource_names names GPU resources the CloudWatch data-missing alarm cannot
    count: on the Container Insights source the alarm reads the add-on's node_gpu_limit, a node's nvidia.com/gpu
    capacity alone, so a cluster whose GPUs the device plugin advertises under such a name is never judged there
    (the Prometheus rule counts them); None when no such name is written or no data-missing alarm is made."""
    from .container_insights import enabled
    from .settings import setting_place

    settings = project.settings
    uncounted = [name for name in settings.exporter.resource_names if name != "nvidia.com/gpu"]
    if not uncounted or not enabled(settings) or not expected(settings) or not any(a.absent for a in project.alarms):
        return None
    return (setting_place(settings, ["exporter", "resource_names"]),
            f"exporter.resource_names lists {', '.join(uncounted)}, but on the Container Insights source "
            f"(cloudwatch.source) the CloudWatch data-missing alarm counts a node's GPUs by its nvidia.com/gpu capacity "
            f"({ADDON_CAPACITY}) alone: a cluster whose GPUs are advertised under "
            f"{'this name' if len(uncounted) == 1 else 'these names'} raises no CloudWatch data-missing alarm when "
            f"its exporter stops (the Prometheus rule does)",
            "publish through gpudash's agent (cloudwatch.source: prometheus-emf), whose kube-state-metrics job counts these "
            "resources, or have the device plugin advertise the GPUs as nvidia.com/gpu")


def reads_daemonset(project) -> bool:
    """Whether the CloudWatch agent's data-missing alarm reads exporter DaemonSets' counts (kube-state-metrics'
    desired count of each DaemonSet exporter.daemonset and exporter.more_daemonsets name)."""
    return _daemonset_unread(project) is None


def _daemonset_unread(project) -> str | None:
    """Why no generated alarm reads an exporter DaemonSet's counts by name (None: the CloudWatch agent's data-missing
    alarm does)."""
    from .container_insights import enabled

    if enabled(project.settings):
        return "the data-missing alarm reads the Container Insights add-on's own exporter (cloudwatch.source)"
    if not expected(project.settings):
        return "no data-missing alarm reads a DaemonSet's counts (alarms.expected_gpus: none)"
    if not any(alarm.absent for alarm in project.alarms):
        return "the definitions hold no data-missing rule"
    return None


def _setting_name(path: list) -> str:
    """clusters[1].exporter.daemonset, exporter.daemonset: a setting's name as a person writes it."""
    return "".join(f"[{part}]" if isinstance(part, int) else (f".{part}" if i else part)
                   for i, part in enumerate(path))


def exporter_label_matchers() -> list[str]:
    """kube_daemonset_labels matchers of the labels that identify a DCGM exporter DaemonSet, whatever its name and
    namespace: the GPU operator's `app=nvidia-dcgm-exporter` and the Helm chart's (and static manifest's)
    `app.kubernetes.io/name=dcgm-exporter` (a chart installed per node pool under fullnameOverride keeps it)."""
    return list(_exporter_label_matchers())


@cache
def _exporter_label_matchers() -> tuple[str, ...]:  # the same for every cluster: made once (16,000 asks at 1,000)
    return tuple(f'{LABEL_PREFIX}{label_name(key)}="{value}"' for key, value in EXPORTER_LABELS)


def exporter_labels_text() -> str:
    """The identifying labels, as a person writes them."""
    return " or ".join(f"{k}={v}" for k, v in EXPORTER_LABELS)


def exporter_daemonsets(extra: str = "", offset: str = "") -> str:
    """PromQL: kube_daemonset_labels of every DCGM exporter DaemonSet (`extra`: more matchers, e.g. a cluster;
    `offset`: the modifier that reads them at an earlier instant)."""
    extra = f"{extra}, " if extra else ""
    return "(" + " or ".join(f"{LABELS}{{{extra}{m}}}{offset}" for m in exporter_label_matchers()) + ")"


def ksm_set(settings: Settings) -> tuple[str, ...]:
    """The dimension set the agent publishes kube-state-metrics' counts with: the cluster's ([ClusterName]) while each
    cluster names one exporter DaemonSet, each DaemonSet's ([ClusterName, namespace, daemonset], the labels
    kube-state-metrics gives its series) when a cluster names several (exporter.more_daemonsets): in one [ClusterName]
    set their counts would mix (one DaemonSet's least desired against another's most available)."""
    return DAEMONSET_SET if several_daemonsets(settings) else CLUSTER_SET


def no_gpu_node(settings: Settings, extra: str, span: str) -> str:
    """PromQL: 1 (with the cluster's label on a shared Prometheus) where kube-state-metrics read nodes over the period
    and none had a GPU resource's capacity (NODES); `extra`: more matchers (the cluster's)."""
    by = f" by ({settings.labels.cluster})" if settings.shared_prometheus else ""
    nodes = f"{NODES}{{{extra}}}" if extra else NODES
    gpus = ", ".join(m for m in (extra, f'resource=~"{gpu_resources_pattern(settings)}"') if m)
    return (f"(count{by} (max_over_time({nodes}{span})) unless {cluster_join(settings)} "
            f"count{by} (max_over_time({CAPACITY}{{{gpus}}}{span})))")


def ksm_dimensions(settings: Settings, cluster: Cluster, daemonset: tuple[str, str]) -> list[dict[str, str]]:
    """The dimensions of one exporter DaemonSet's counts as the agent publishes them (ksm_set)."""
    values = {CLUSTER_DIMENSION: cluster.name, DAEMONSET_NAMESPACE: daemonset[0], DAEMONSET_LABEL: daemonset[1]}
    return [{"Name": name, "Value": values[name]} for name in ksm_set(settings)]


def cloudwatch_metrics(field: str, settings: Settings, cluster: Cluster, period: int, label: str,
                       daemonset: tuple[str, str]) -> list[dict]:
    """The `Metrics` of the CloudWatch alarm of one exporter DaemonSet (namespace, name) of the cluster: four static
    metrics of its counts (one read twice), the cluster's GPU observations and the expression."""
    namespace = settings.cloudwatch.namespace
    cluster_only = [{"Name": CLUSTER_DIMENSION, "Value": cluster.name}]
    counted = ksm_dimensions(settings, cluster, daemonset)

    def stat(identifier: str, metric: str, statistic: str, dimensions: list[dict[str, str]]) -> dict[str, Any]:
        return {"Id": identifier, "ReturnData": False,
                "MetricStat": {"Metric": {"Namespace": namespace, "MetricName": metric, "Dimensions": dimensions},
                               "Period": period, "Stat": statistic}}

    return [*(stat(i, m, s, counted) for i, m, s in KSM_STATS), stat("g", field, "SampleCount", cluster_only),
            *(stat(i, m, s, cluster_only) for i, m, s in NODE_STATS),
            {"Id": "e", "Expression": expression(settings), "Label": label, "ReturnData": True}]


def addon_metrics(reported_metric: str, cluster: Cluster, period: int, label: str) -> list[dict]:
    """The `Metrics` of the alarm on the Container Insights add-on: metrics of the cluster and of the add-on's
    DCGM exporter DaemonSet, the expected GPU observations (x), the GPU nodes it should run on (w) and the
    expression (see the module's docstring)."""
    def stat(identifier: str, metric: str, statistic: str, workload: bool = False) -> dict[str, Any]:
        dimensions = [{"Name": CLUSTER_DIMENSION, "Value": cluster.name}]
        if workload:
            dimensions += [{"Name": addon.NAMESPACE_DIM, "Value": addon.ADDON_NAMESPACE},
                           {"Name": addon.POD_OWNER, "Value": addon.EXPORTER_DAEMONSET}]
        return {"Id": identifier, "ReturnData": False,
                "MetricStat": {"Metric": {"Namespace": addon.NAMESPACE, "MetricName": metric,
                                          "Dimensions": dimensions}, "Period": period, "Stat": statistic}}

    return [*(stat(i, m, s) for i, m, s in ADDON_STATS), stat("g", reported_metric, "SampleCount"),
            *(stat(i, m, "Average", workload=True) for i, m in ADDON_DESIRED),
            {"Id": "q", "Expression": addon_nodes_query(cluster), "Period": period, "ReturnData": False},
            {"Id": "r", "Expression": ADDON_REPORTING, "ReturnData": False},
            {"Id": "x", "Expression": ADDON_EXPECTED, "ReturnData": False},
            {"Id": "w", "Expression": ADDON_GPU_NODES, "ReturnData": False},
            {"Id": "e", "Expression": addon_expression(), "Label": label, "ReturnData": True}]


NO_DATA_REASON = "a node's exporter brought no GPU data most of the time"
# The labels that tell apart the targets of one node on gpudash's own scrape paths (the scrape job's and the
# ServiceMonitor's): each exporter pod's own, summed away so that the rule counts each node's scrapes
OWN_POD_LABELS = "exporter_pod, pod, instance"


def operator_targets(settings: Settings, *, node: bool) -> str:
    """The exporter targets of the operator's or the chart's ServiceMonitor (their own `container` and `namespace`: the
    namespace of an exporter DaemonSet the settings name, exporter.more_daemonsets' too), with `node` (relabelled by the
    user) or without it (as shipped: its node is then kube_pod_info's). Their `container` is the exporter's of each
    deployment style the fleet's clusters use (clusters[].exporter.deployment)."""
    container = one_of("container", (style.container for style in fleet_styles(settings)))
    operator = f'{container}, {namespace_matcher(settings)}'
    return f'{SAMPLES}{{exporter_pod="", node{"!=" if node else "="}"", {operator}}}'


def pod_join_keys(settings: Settings) -> str:
    """The labels a target without `node` is joined to kube_pod_info on: its exporter pod's (cluster), namespace
    and pod."""
    return ", ".join((*((settings.labels.cluster,) if settings.shared_prometheus else ()), "namespace", "pod"))


def exporter_pods(settings: Settings) -> str:
    """kube-state-metrics' kube_pod_info of the pods in the exporters' namespaces that name their node."""
    return f'{POD_INFO}{{{namespace_matcher(settings)}, {NODE_LABEL}!=""}}'


def no_data_expression(settings: Settings, window: int, threshold: float, step: int) -> str:
    """The rule's branch 4, a rule of its own (no `for`): each node whose exporter targets' scrapes taken in the last
    `window` seconds ((t - window, t], as the per-node alarm counts them) failed or answered without a DCGM sample
    more than `threshold` times (summed over the node's targets, as the alarm sums its flags: one exporter pod
    replaced by another goes on counting), kept while the node has a target scraped (a target gone from discovery,
    its pod replaced, goes stale and drops out). The scrapes are read as the other rules read readings (render/alarms.rule_step): the
    latest sample taken within each `step` seconds (promql.step_reading), so each scrape counts once, at the first
    step at or after it, and the count lags the evaluation by at most `step` (at a step of the scrape interval,
    placed at multiples of it since the epoch, it lagged by up to one scrape interval). The subquery's range is the
    window less a millisecond, so its first step is the first after the window's start on Prometheus 2's closed
    ranges as on 3's left-open ones: a scrape taken exactly a window before is not counted. Both generated scrape
    paths attach `exporter_pod` to a target; the GPU operator's or the chart's own ServiceMonitor gives it, as it
    gives every ServiceMonitor target, the exporter pod's `container` and `namespace` instead, and scrapes at its own
    interval (the operator's and the chart's default 15 s, not scrape.interval): on those targets the branch counts
    more than NO_DATA_SHARE of the scrapes in the window. Where the ServiceMonitor's relabelling gives its targets the
    node (`node`, from `__meta_kubernetes_pod_node_name`), it counts each node's scrapes whatever exporter pod answered
    them, as the CloudWatch twin counts each node's (a pod replaced by one answering empty fires once more than half
    the node's window is empty; pods replaced every few minutes are judged too), for a node scraped since a window
    ago (a new node's first failed scrapes do not fire, as on gpudash's own job). A target without `node` (the
    operator's ServiceMonitor as shipped: prometheus-operator writes `node` only for Node endpoints) takes its node
    from kube-state-metrics' `kube_pod_info` of its exporter pod (joined on the target's `namespace` and `pod`, the
    exporter pod's own on a ServiceMonitor target; the node the pod had at any time in the window, so a replaced
    pod's scrapes keep the node they were taken on) and is counted with its node's scrapes the same way. Where kube_pod_info does not name the pod's node
    (kube-state-metrics not scraped, or scraped without honorLabels so its `pod` is renamed), the target is judged
    alone, once it is a window old: its pod and address change when the pod is replaced."""
    own = f'{SAMPLES}{{exporter_pod!=""}}'
    per_node, per_target = operator_targets(settings, node=True), operator_targets(settings, node=False)

    # a target without `node`: its exporter pod's node as kube-state-metrics reports it. A pod never changes node, so
    # each target's counts take the node its pod had at any time in the window (and the lookback before it: a pod
    # replaced within the window, gone from kube-state-metrics since, keeps the node its scrapes were taken on),
    # joined once, after the counting. One series per pod (topk by pod): two (kube-state-metrics replicas, or another
    # pod of that name recreated on another node within the range, a StatefulSet's) would make the join an error,
    # and the whole rule with it.
    keys, pods = pod_join_keys(settings), exporter_pods(settings)
    known = {"window": f"last_over_time({pods}[{window + LOOKBACK_SECONDS}s])", "now": pods,
             "then": f"{pods} offset {window}s"}

    def as_is(expression: str, when: str) -> str:
        return expression

    def on_its_node(expression: str, when: str) -> str:
        return f"({expression} * on({keys}) group_left({NODE_LABEL}) topk by ({keys}) (1, {known[when]}))"

    def scrapes(selector: str, kept: str | None = None) -> str:
        return f"count_over_time({step_reading(selector, f'{step}s', kept=kept)}[{window * 1000 - 1}ms:{step}s])"

    def share(selector: str, each: str = "", place: Callable[[str, str], str] = as_is) -> str:
        """More than NO_DATA_SHARE of the scrapes of each group (`each`: an aggregation, none: each target) in the
        window were empty, while the group is scraped and was a window ago; `place` gives a series its node."""
        def of(expression: str, when: str) -> str:
            placed = place(expression, when)
            return f"{each}({placed})" if each else placed
        return (f"{of(scrapes(selector, f'{selector} == 0'), 'window')} > {NO_DATA_SHARE:g} * "
                f"{of(scrapes(selector), 'window')} and {of(selector, 'now')} "
                f"and {of(f'{selector} offset {window}s', 'then')}")
    # the operator's or the chart's ServiceMonitor scrapes at its own interval (15 s by default), which the settings
    # do not know: the share of the scrapes, of each node (a node outlives its pods) where the targets name it or
    # kube-state-metrics names their pods' nodes, else of each target alone
    each_node = "sum without (pod, instance) "
    # gpudash's own targets: each node's scrapes, whatever exporter pod answered them (a pod deleted and recreated
    # broken, or replaced by a rollout, goes on counting), as the per-node alarm sums its flags over the node
    own_node = f"sum without ({OWN_POD_LABELS}) "
    branches = [f"{own_node}({scrapes(own, f'{own} == 0')}) > {threshold:g} and {own_node}({own})",
                share(per_node, each_node), share(per_target, each_node, on_its_node),
                f"({share(per_target)}) unless on({keys}) {pods}"]
    expression = " or ".join(f"({b})" for b in branches)
    return f'label_replace({expression}, "reason", "{NO_DATA_REASON}", "", "")'


def _seconds(duration: str) -> int:
    """Seconds of a PromQL duration of one unit (`5m`, `300s`)."""
    return int(duration[:-1]) * {"s": 1, "m": 60, "h": 3600}[duration[-1]]


def reported(field: str, span: str) -> str:
    """The GPUs (series) with a reading of the presence field (catalog.PRESENCE, a gauge) in the period `span`
    (`[5m] offset 5m`): one whose samples are all DCGM's blank reports none (promql.counted). Its exporter runs, but
    delivers no reading of the GPU (DCGM lost it, or does not read the field there), and the OTel pipeline's agent,
    which drops the blank, publishes no observation of it for the alarm's `g`."""
    return f"min_over_time({field}{span}) < {short(READING_FLOOR)}"


def prometheus_expression(field: str, settings: Settings, window: str, offset: str | None = None,
                          part: str | None = None, evaluated: str | None = None) -> str:
    """The rule's branches 1 to 3 over one period: the period `window` long that ends `offset` before the
    evaluation (none: at it), as CloudWatch computes the metric math over each period. Each branch carries a
    `reason` label that the alert's summary shows. It reads every exporter DaemonSet kube-state-metrics reports
    with an identifying label (exporter_label_matchers), one or many. Branch 4 (an exporter target that brought no
    GPU data) is a rule of its own (no_data_expression). `part`: EACH_DAEMONSET (the branches that judge one
    DaemonSet: 2, 3 and each named DaemonSet's counts gone), NONE_FOUND (branch 1 alone), KSM_READS (branch 5,
    kube-state-metrics' target answering under half its scrapes, the agent alarm's twin, judged over its periods:
    agent_periods) or none (all but branch 5). `evaluated`: the span of the periods an evaluation judges (their number
    times `window`; none: one period)."""
    cluster = settings.labels.cluster
    by = f" by ({cluster})" if settings.shared_prometheus else ""
    on = cluster_join(settings)
    each = daemonset_join(settings)
    shift = f" offset {offset}" if offset else ""
    span = f"[{window}]{shift}"  # the period
    # the DaemonSets the settings name: judged by name where a cluster names several, and where each names one in
    # joining a period's breaches to the other's (EACH_DAEMONSET)
    by_name = several_daemonsets(settings) or part == EACH_DAEMONSET
    found = exporter_daemonsets(offset=shift)  # an exporter DaemonSet: labelled so at the period's end
    counted = _counts(_counted_selectors(settings), cluster, span) if by_name else ""  # the named ones' counts
    if counted:
        # or one the settings name, over the period by its own counts, as its alarm reads it by name (labelled at the
        # period's end only, one deleted in the period's last scrape interval, or whose kube-state-metrics was being
        # replaced then, went unjudged for that period; an unnamed DaemonSet living minutes, a rename rolled back,
        # stays judged at the end alone: its counts over a period it barely lived in are no period of missing data)
        found = f"({found} or {counted})"

    def reason(expression: str, text: str) -> str:
        return f'label_replace({expression}, "reason", "{text}", "", "")'

    def none_labelled(extra: str) -> str:
        """No exporter DaemonSet all period long; absent_over_time keeps the equality matchers' labels, of which
        only the cluster's stays (one alert per silent cluster)."""
        extra = f"{extra}, " if extra else ""
        absent = " and on() ".join(f"absent_over_time({LABELS}{{{extra}{m}}}{span})"
                                   for m in exporter_label_matchers())
        for name in dict.fromkeys(m.split("=", 1)[0] for m in exporter_label_matchers()):
            absent = f'label_replace({absent}, "{name}", "", "", "")'
        # none where no GPU node is: the GPU operator creates its DaemonSet with the first GPU node (NODES)
        return f"({absent} unless {on} {no_gpu_node(settings, extra[:-2], span)})"

    exact = f"[{_seconds(window) * 1000 - 1}ms]{shift}"  # the period's scrapes, (t - period, t] on Prometheus 2 and 3
    target = f"on({cluster}, job, instance)" if settings.shared_prometheus else "on(job, instance)"
    serving = " or ".join(f"max_over_time({LABELS}{{{m}}}{span})" for m in exporter_label_matchers())
    if counted:  # or a DaemonSet the settings name, by its counts, as `found`: the agent's job keeps those
        serving = f"{serving} or {counted}"
    labelled = [c.prometheus_label for c in settings.clusters if c.prometheus_label] if settings.shared_prometheus \
        else []
    absent = _each_filled(none_labelled, [matcher(cluster, value) for value in labelled]) or [none_labelled("")]
    none_found = [
        reason(a, "kube-state-metrics reports no exporter DaemonSet (deleted, kube-state-metrics not scraped, or "
                  f"its --metric-labels-allowlist lacks {KSM_ALLOWLIST})") for a in absent]
    judged = [
        reason(f"(min_over_time({DESIRED}{span}) > 0 and {each} {found}) "
               f"unless {on} count{by} ({reported(field, span)})",
               "exporters are expected but no GPU reported"),
        reason(f"(min_over_time({DESIRED}{span}) > max_over_time({AVAILABLE}{span})) and {each} {found} "
               f"unless {each} ((max_over_time({UPDATED}{span}) > min_over_time({UPDATED}{span})) "
               f"and {each} (min_over_time({DESIRED}{span}) - max_over_time({AVAILABLE}{span}) "
               f"<= {rollout_unavailable(settings, f'min_over_time({DESIRED}{span})', 'ceil')}))",
               "fewer exporter pods available than desired"),
    ]
    # kube-state-metrics' target (the one serving an exporter DaemonSet's labels, or a named one's counts: a shard of a
    # sharded kube-state-metrics may serve a named DaemonSet alone) answering under half its scrapes
    ksm = reason(f"(sum_over_time(up{exact}) < {SCRAPE_SHARE:g} * count_over_time(up{exact})) and {target} ({serving})",
                 KSM_READ_REASON)
    # each exporter DaemonSet the settings name: its counts gone all period (deleted, or its node pool removed), as its
    # CloudWatch alarm reads its desired count missing, where the rule's Prometheus is one of a cluster naming it
    # (_gone_branches): judged alone where its cluster names several, and where it names one only while no exporter
    # DaemonSet is labelled all period either (branch 1, the cluster's own alert), for the join of a period to the
    # other (its pod gone, then it deleted: both periods breach its alarm)
    def gate(branch: Gone) -> str:
        evidence = [_counts(branch.markers, cluster, span)] if branch.markers else []
        evidence += [none_labelled(branch.alone)] if branch.alone is not None else []
        return f" and {on} ({' or '.join(evidence)})" if evidence else ""

    def absent(branch: Gone) -> str:
        if branch.seen:  # counted within the periods judged, none in this one
            keys = f"{cluster}, namespace, exported_namespace, daemonset" if settings.shared_prometheus else \
                "namespace, exported_namespace, daemonset"
            return (f"(max by ({keys}) ({_counts(branch.daemonsets, cluster, f'[{evaluated or window}]')}) "
                    f"unless on({keys}) ({_counts(branch.daemonsets, cluster, span)}))")
        each = [_absent(one, cluster, span) for one in branch.daemonsets]
        return each[0] if len(each) == 1 else f"({' or '.join(each)})"

    gone = [reason(f"{absent(branch)}{gate(branch)}", NAMED_ABSENT_REASON.format(fix=branch.fix))
            for branch in (_gone_branches(settings) if by_name else [])]
    if part == EACH_DAEMONSET:
        # each DaemonSet in its own namespace, to be joined to the other period's on it: kube-state-metrics scraped
        # without honorLabels gives its counts its own pod's `namespace` (the DaemonSet's in `exported_namespace`),
        # while a named DaemonSet's gone counts carry the namespace the settings write
        return f'label_replace({" or ".join([*judged, *gone])}, "namespace", "$1", "exported_namespace", "(.+)")'
    parts = {KSM_READS: [ksm], NONE_FOUND: none_found}
    return " or ".join(parts[part] if part else [*none_found, *judged, *gone])


# prometheus_expression's parts; none: branches 1 to 3 whole (KSM_READS, judged over the agent alarm's periods, apart)
EACH_DAEMONSET, KSM_READS, NONE_FOUND = "each daemonset", "kube-state-metrics reads", "none found"


def _each_filled(text: Callable[[str], str], values: list[str]) -> list[str]:
    """`text(value)` of each value, where `text` writes its value into fixed text as it is (a cluster's matcher into
    the branch of its cluster, 1,000 times an expression of 1,000 clusters): written once with a stand-in, then
    filled in. Where the texts of two stand-ins (of other lengths, neither in PromQL) do not split alike, or the first
    value's text is not its filled one, each value's is written in full."""
    if len(values) < 2:
        return [text(value) for value in values]
    pieces = text("\x00").split("\x00")
    first = text(values[0])
    if pieces != text("\x01\x01").split("\x01\x01") or first != values[0].join(pieces):
        return [first] + [text(value) for value in values[1:]]
    return [first] + [value.join(pieces) for value in values[1:]]


def cluster_join(settings: Settings) -> str:
    """The labels that tell one cluster's rule results from another's: the cluster's on a shared Prometheus."""
    return f"on({settings.labels.cluster})" if settings.shared_prometheus else "on()"


def daemonset_labels(settings: Settings) -> tuple[str, ...]:
    """The labels that tell one exporter DaemonSet from another in the rule: (cluster,) namespace and name."""
    return (settings.labels.cluster,) * settings.shared_prometheus + ("namespace", "daemonset")


def daemonset_join(settings: Settings) -> str:
    return f"on({', '.join(daemonset_labels(settings))})"


@dataclass(frozen=True)
class Named:
    """kube-state-metrics' series of exporter DaemonSets the settings name, as the rule selects them: one namespace
    and one name or several (`names`: a regex of their literals); on a shared Prometheus, one cluster's (`cluster`: its
    labels.cluster value)."""
    namespace: str
    names: tuple[str, ...]
    cluster: str | None = None


def _named_matchers(named: Named, cluster_label: str) -> tuple[str, str]:
    """Matchers of a named DaemonSet's series: its namespace in `namespace` (kube-state-metrics scraped with
    honorLabels) or in `exported_namespace` (without: `namespace` is then kube-state-metrics' own pod's)."""
    where = f"{matcher(cluster_label, named.cluster)}, " if named.cluster is not None else ""
    name = one_of("daemonset", named.names)
    return (f'{where}{matcher("namespace", named.namespace)}, exported_namespace="", {name}',
            f'{where}{matcher("exported_namespace", named.namespace)}, {name}')


def _counts(selectors: Iterable[Named], cluster_label: str, span: str) -> str:
    """The desired counts over the period of the DaemonSets `selectors` select (each in both namespace labels)."""
    return " or ".join(f"max_over_time({DESIRED}{{{m}}}{span})"
                       for each in selectors for m in _named_matchers(each, cluster_label))


def _absent(named: Named, cluster_label: str, span: str) -> str:
    """No count of one named DaemonSet all period, with its namespace and name (and cluster) as labels."""
    return " and on() ".join(f"absent_over_time({DESIRED}{{{m}}}{span})" for m in _named_matchers(named, cluster_label))


# {fix}: what to change, by the setting that names the DaemonSet (FIRST_ABSENT_FIX: exporter.daemonset, the first of
# a cluster's; MORE_ABSENT_FIX: exporter.more_daemonsets; both where clusters differ)
NAMED_ABSENT_REASON = ("kube-state-metrics reports no counts of an exporter DaemonSet the settings name (deleted, or its "
                       "node pool removed: {fix})")
FIRST_ABSENT_FIX = "correct exporter.daemonset, or clusters[].exporter.daemonset where the cluster sets it"
MORE_ABSENT_FIX = "remove it from exporter.more_daemonsets"


def _by_namespace(daemonsets: Iterable[tuple[str, str]]) -> list[Named]:
    """One selector per namespace, its names in one regex, so that a rule listing DaemonSets any cluster names grows
    with the namespaces, not with the clusters (1,000 clusters naming 500 releases: 55 KB of rules, 680 KB with a
    selector per DaemonSet)."""
    names: dict[str, list[str]] = {}
    for ns, ds in dict.fromkeys(daemonsets):
        names.setdefault(ns, []).append(ds)
    return [Named(ns, tuple(each)) for ns, each in names.items()]


def _counted_selectors(settings: Settings) -> list[Named]:
    """Each exporter DaemonSet judged over the period by its own counts: on a shared Prometheus each cluster's (with
    its labels.cluster value; a cluster without one: none), else each one any cluster names (one rules file for every
    cluster's Prometheus: a DaemonSet of that namespace and name is one a cluster's settings call its exporter, so its
    counts are judged as its alarm reads them wherever they are)."""
    if settings.shared_prometheus:
        return [Named(ns, (ds,), cluster=cluster.prometheus_label) for cluster in settings.clusters
                if cluster.prometheus_label for ns, ds in named_daemonsets(settings, cluster)]
    return _by_namespace(d for cluster in settings.clusters for d in named_daemonsets(settings, cluster))


@dataclass(frozen=True)
class Gone:
    """Named DaemonSets judged by their counts gone all period (each its own alert, `fix` in its reason), where the
    rule's Prometheus shows it is one of a cluster that names them: the counts of one of `markers` in the period
    (DaemonSets only clusters naming these name), or, where `alone` is not None, no exporter DaemonSet labelled all
    period (`alone`: the matcher of the cluster's label value, "" without one); neither: judged wherever they are
    gone (a cluster's own on a shared Prometheus). `seen`: `daemonsets` select several, each judged gone in a period
    where it has no count but had one within the periods an evaluation judges (see _gone_branches)."""
    daemonsets: tuple[Named, ...]
    fix: str
    markers: tuple[Named, ...] = ()
    alone: str | None = None
    seen: bool = False


def _gone_branches(settings: Settings) -> list[Gone]:
    """The named DaemonSets whose counts gone all period breach their period (see Gone), as their CloudWatch alarms
    read them: a cluster naming several judges each one alone (its alarm reads it by name), a cluster naming one only
    while no exporter DaemonSet is labelled either (case 1, the cluster's alert, where it holds in every period).

    On a shared Prometheus each cluster's DaemonSets, with its labels.cluster value (each alone where any cluster of
    the fleet names several). Else one rules file runs on every cluster's Prometheus, none of which tells which cluster
    it is: a DaemonSet every cluster names is judged as on a shared Prometheus; another where the Prometheus holds
    counts of a marker, a DaemonSet that only clusters naming it name (a sibling in exporter.more_daemonsets), or no
    exporter DaemonSet labelled all period. On a cluster that does not name
    it neither holds over the periods its alert joins unless no exporter DaemonSet is labelled in each of them, where
    the cluster's case-1 alert alone fires (render/alarms.prometheus_expression). A DaemonSet judged wrongly on another
    cluster's Prometheus would need a DaemonSet of a marker's namespace and name there that its settings do not name.
    Where every DaemonSet beside it is also named by a cluster that does not name it, it has no marker: deleted while
    another exporter DaemonSet is labelled it is not seen (its alarm is; `prometheus_label` tells clusters apart)."""
    if settings.shared_prometheus:  # (each alone where a cluster of the fleet names several)
        several = several_daemonsets(settings)
        return [Gone((Named(ns, (ds,), cluster=cluster.prometheus_label),), MORE_ABSENT_FIX if k else FIRST_ABSENT_FIX,
                     alone=None if several else matcher(settings.labels.cluster, cluster.prometheus_label))
                for cluster in settings.clusters if cluster.prometheus_label
                for k, (ns, ds) in enumerate(named_daemonsets(settings, cluster))]
    # the clusters by what they name (clusters naming alike are one to the rule), and which of them name each DaemonSet
    kinds = list(dict.fromkeys(named_daemonsets(settings, cluster) for cluster in settings.clusters))
    naming: dict[tuple[str, str], set[int]] = {}
    for k, kind in enumerate(kinds):
        for daemonset in kind:
            naming.setdefault(daemonset, set()).add(k)

    def fix(daemonset: tuple[str, str]) -> str:  # first of every cluster naming it, of none, or of some
        first = {kinds[k][0] == daemonset for k in naming[daemonset]}
        return " or ".join([FIRST_ABSENT_FIX] * (True in first) + [MORE_ABSENT_FIX] * (False in first))

    def markers(daemonset: tuple[str, str]) -> tuple[tuple[str, str], ...]:
        """The other DaemonSets only clusters naming `daemonset` name (each a DaemonSet of those clusters' kinds)."""
        clusters = naming[daemonset]
        return tuple(dict.fromkeys(other for k in clusters for other in kinds[k]
                                   if other != daemonset and naming[other] <= clusters))

    # A DaemonSet without a marker is judged gone only while no exporter DaemonSet is labelled (case 1), so its alert
    # survives case 1's (render/alarms.prometheus_expression) only where one of the periods it joins breached with
    # its counts there (case 2 or 3): that it had counts within the periods judged is all the rule needs of it, read
    # for all of them by one selector per namespace (1,000 clusters naming a release each: a selector per DaemonSet
    # made the rule 3.4 times larger).
    # One every cluster names needs no evidence: each alone where a cluster names several, else while none is labelled
    # (as when every cluster names the same).
    several = several_daemonsets(settings)
    branches: dict[tuple[str, tuple[tuple[str, str], ...], bool], list[tuple[str, str]]] = {}
    for daemonset in naming:
        everywhere = len(naming[daemonset]) == len(kinds)
        evidence = () if everywhere else markers(daemonset)
        branches.setdefault((fix(daemonset), evidence, everywhere), []).append(daemonset)
    return [Gone(tuple(Named(ns, (ds,)) for ns, ds in daemonsets), text, alone=None if several else "")
            if everywhere else
            Gone(tuple(Named(ns, (ds,)) for ns, ds in daemonsets), text, tuple(_by_namespace(evidence)), alone="")
            if evidence else Gone(tuple(_by_namespace(daemonsets)), text, seen=True, alone="")
            for (text, evidence, everywhere), daemonsets in branches.items()]

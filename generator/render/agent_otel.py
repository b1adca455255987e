"""The CloudWatch agent's OpenTelemetry pipeline (settings `agent.pipeline: otel`). Pure.

The agent's JSON `prometheus` section publishes every scraped value: its scraper drops only NaN
and infinities, so DCGM's blank sentinels reach CloudWatch, where no alarm can drop them and a
counter coming back from one is sent as its whole running total. This pipeline drops them first:

    prometheus/gpudash -> transform/gpudash-gauges -> filter/gpudash-markers -> metricstransform/gpudash-pods
        -> filter/gpudash -> metricstransform/gpudash -> transform/gpudash -> batch/gpudash -> awsemf/gpudash

* the receiver runs the scrape jobs of prometheus.yaml (render/scrape.py), each with one more
  target label, `ClusterName` (the JSON path's `cluster_name`); a `$` is escaped (see `escaped`), as
  the agent expands `$` in its collector configuration twice;
* transform/gpudash-gauges makes a Gauge of each level shipped (a state, a count over a window, a throughput: DCGM's
  health status, a count of XIDs in the exporter's window, the NVLink throughput, ...), whatever type the exporter
  serves it as (its own counters file's, which may type it counter): awsemf would send the difference between two
  readings of a level served as a counter (0 for a GPU failing all along); OTTL's convert_sum_to_gauge() in the
  metric context (the
  transform processor, in the agent since 1.300025.0); and a cumulative monotonic Sum of each running total the
  exporter serves as a gauge (a counters CSV typing DCGM's energy counter gauge), whose growth awsemf then sends,
  not the total: OTTL's convert_gauge_to_sum("cumulative", true);
* filter/gpudash-markers drops the exporter's staleness markers (see STALE_MARKER), before any metricstransform
  merges points: a merge takes a marker first or not at random (a pod's total over its GPUs, with
  exporter.virtual_gpus the pick of each GPU's reading of a field split per process from its device series and
  copies);
* metricstransform/gpudash-pods makes, from each scrape, each pod's total of the gauges the by-pod panels
  sum (see `pod_totals`), from every point the exporter served, blanks included, and with exporter.virtual_gpus
  each GPU instance's reading of a field split per process, its device's own where the exporter writes one, DCGM's
  blank included (see `device_merges`);
* the filter drops each datapoint of a shipped DCGM field at or above the field's blank floor
  (blanks.py, the floors the PromQL side uses), and at 0 of a field whose 0 is DCGM's "not supported"
  (blanks.UNREAD_AT_ZERO: memory temperature on GPUs without the sensor) - before the exporter turns counters into deltas,
  so a counter back from a blank gives its true increase since its last reading -, a pod's sum at or
  above its field's floor (it holds a blank: the pod's total at that scrape is unknown), a GPU's reading of a field
  split per process that is DCGM's blank (its device read the blank at that scrape: no reading, not its pods'
  largest share), and the scrape's own series (up, scrape_*; but each scrape's scrape_samples_post_metric_relabeling,
  which the data-missing rule's alarm per node counts), which the JSON path's scraper drops too;
* metricstransform/gpudash merges the copies of a counter the exporter writes for one GPU instance, one per
  pod that shares the GPU by time-slicing or MPS (see `merged_counters`; its `max` needs the blanks gone),
  into one series per GPU instance for the per-GPU dimension sets, and keeps each pod's copy for the per-pod
  sets (with exporter.virtual_gpus, the per-GPU sets read a split field's reading metricstransform/gpudash-pods
  picked, see `device_merges`); then the pods' totals take their field's name back, published in their own sets;
* transform/gpudash-unused and transform/gpudash-levels (where an alarm reads them) make the copies that
  metricstransform/gpudash-pods inserted before the filter a field's unused share (see `unused_shares`) and its flags
  past a level (see `level_flags`: the GROUP BY alarms that judge every reading of several periods past a level);
* metricstransform/gpudash first counts each pod's GPUs with a reading of the fields the by-pod panels count (see
  `pod_totals`: after the filter, so a GPU reading DCGM's blank is not counted, as the Prometheus side counts; a
  node's total of a field whose MIG instances average is made there too, its staleness markers dropped),
  then makes, where the fleet's values past 500 GPUs read it, each GPU's reading once per
  scrape of the fields they read, its copies (MIG instances, pods sharing it) merged and marked (see `once_per_gpu`);
* transform/gpudash (where the alarm per node is made) makes each scrape's scrape_samples_post_metric_relabeling a
  flag, 1 for a scrape that brought no DCGM sample and 0 for one that did (see `NO_DATA_FLAG`);
* the exporter has the JSON path's settings (the agent's awsemf_default_prometheus.yaml and
  translator awsemf/prometheus.go): namespace, log group, no dimension rollup, EMF version 0, no
  initial value of a delta, the declarations' dimension sets and metric selectors, and the units as
  metric descriptors. The declarations carry no label matcher: only gpudash's jobs feed this
  pipeline, and their metric names tell them apart (the JSON path matched `job`, which this receiver
  moves into the resource).

The agent (1.300048.0 and later) passes every `*.yaml` file of /etc/cwagentconfig, where the
`prometheus-cwagentconfig` ConfigMap is mounted, to its collector with `-otelconfig`, merged with its
own; every name here carries the suffix `gpudash` (`gpudash-pods`: a second metricstransform, `gpudash-gauges` a
second transform), so none
collides with the agent's own pipelines.
The JSON config then holds no pipeline, which the agent's translator accepts: it writes no
amazon-cloudwatch-agent.yaml. The agent's merge skips that missing file from 1.300066.0 on
(cmd/amazon-cloudwatch-agent/merge.go); 1.300048.0 to 1.300065.x fail to load it and exit at start.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Collection, Iterable

from ..blanks import UNREAD_AT_ZERO, reading_floor
from ..catalog import MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL, PER_PROCESS_FIELDS, Catalog
from ..cloudwatch_query import (LEVEL_FLAG, NAMESPACE_GPU, NODE_MEAN, NODE_MEAN_KEY, NODE_MEAN_KINDS, ONCE_PER_GPU,
                                SHARE_BOUNDS, UNUSED_SHARE, marked_level, merged_copies, number, pod_total_kind,
                                pod_total_mark)
from ..errors import InputError
from ..markers import CLUSTER_DIMENSION, GPU_DIMENSION, NAMESPACE_DIMENSION, NODE_DIMENSION, POD_DIMENSION
from ..series_labels import REVISION_LABEL
from ..settings import Cluster, Settings
from ..stopped_gpus import read_fields

OTEL_KEY = "gpudash-otel.yaml"  # the key of the agent's ConfigMap: a file /etc/cwagentconfig/gpudash-otel.yaml
SUFFIX = "gpudash"
RECEIVER, FILTER, MERGE, BATCH, EXPORTER = (f"{kind}/{SUFFIX}" for kind in
                                            ("prometheus", "filter", "metricstransform", "batch", "awsemf"))
MARKERS = f"filter/{SUFFIX}-markers"  # the exporter's staleness markers, dropped before any merge (STALE_MARKER)
RETYPE = f"transform/{SUFFIX}-gauges"  # the fields the exporter serves typed against their meaning, retyped first
PIPELINE = f"metrics/{SUFFIX}"
TOTALS = f"metricstransform/{SUFFIX}-pods"  # the pods' totals per scrape, made before the filter (pod_totals)
READS_YAML_VERSION = "1.300048.0"  # the first release that reads *.yaml from /etc/cwagentconfig
MIN_AGENT_VERSION = "1.300066.0"  # the first that starts when its JSON translates to no pipeline
LOG_STREAM = "{ServiceName}"  # the scrape job's name (the receiver's service.name)


# The agent resolves its collector configuration in two passes (service/configprovider/provider.go): the
# confmap resolver turns `$$` into `$`, then the expandconverter expands what is left as Go's os.Expand does
# - `$NAME`, `${...}` and the special `$1`, `$$`, `$*`, ... - from the environment (an unset one is empty).
# A `$` before a character os.Expand reads as a name is written `$$$$` (first pass `$$`, second `$`); any
# other `$` is written `$$` (first pass `$`, which the second keeps). The agent's translator escapes its own
# Prometheus configs so (common.EscapeDollarDigit); a `$1` written `$$1` would reach Prometheus empty.
_EXPANDED_AFTER = re.compile(r"\$(?=([A-Za-z0-9_{*#$@!?-])?)")
_ESCAPE = re.compile(r"\$\$\$\$|\$\$")


def escaped(value: Any) -> Any:
    """`value` with every `$` in its strings written so that the agent's two passes read it back as `$`."""
    if isinstance(value, str):
        return _EXPANDED_AFTER.sub(lambda m: "$$$$" if m.group(1) else "$$", value)
    if isinstance(value, list):
        return [escaped(v) for v in value]
    if isinstance(value, dict):
        return {k: escaped(v) for k, v in value.items()}
    return value


def unescaped(text: str) -> str:
    """What `escaped` wrote, read back."""
    return _ESCAPE.sub("$", text)


def _read_back(value: Any) -> Any:
    """A string of the collector configuration as the agent reads it (`unescaped`); anything else as it is."""
    return unescaped(value) if isinstance(value, str) else value


def receiver(scrape_config: dict[str, Any], cluster: Cluster) -> dict[str, Any]:
    """prometheus.yaml's jobs, each attaching the cluster's name as the `ClusterName` label."""
    return cluster_receiver(escaped(scrape_config), cluster)


def cluster_receiver(jobs: dict[str, Any], cluster: Cluster) -> dict[str, Any]:
    """The receiver of one cluster from the escaped scrape config `jobs`, whose objects it shares: only
    each job and its relabel list are the cluster's own (the encoder writes shared parts once). No object
    appears twice in one configuration: YAML would write the second as an alias."""
    rule = {"target_label": CLUSTER_DIMENSION, "replacement": escaped(cluster.name), "action": "replace"}
    config = dict(jobs)
    config["scrape_configs"] = [{**job, "relabel_configs": [*(job.get("relabel_configs") or []), dict(rule)]}
                                for job in jobs["scrape_configs"]]
    return {"config": config}


def _ottl_number(value: float) -> str:
    """An OTTL float literal (its grammar wants a decimal point: 1.0e+14)."""
    mantissa, _, exponent = f"{value:.1e}".partition("e")
    return f"{mantissa}e{int(exponent)}"


# The receiver adds the scrape's own series to every target's (up, scrape_duration_seconds, ...); the
# JSON path's scraper drops them, and so does this filter: no EMF event is made of them - but
# scrape_samples_post_metric_relabeling when a declaration publishes it (the data-missing rule's alarm per node,
# data_missing.SAMPLES): the declarations are render/agent.published's answer, which `cost` and `lint` read too.
# Every scrape's is kept, and NO_DATA_FLAG makes it 1 for a scrape that brought no DCGM sample (failed: 0 samples,
# or answered without one) and 0 for one that did, so that each node has a datapoint in every period its target is
# scraped: an alarm whose latest periods hold none judges older ones of its evaluation range (data_missing.py).
SAMPLES_NAME = "scrape_samples_post_metric_relabeling"
SCRAPE_SERIES = 'IsMatch(metric.name, "^(?:up|scrape_.+)$")'
SCRAPE_SERIES_BUT_SAMPLES = f'{SCRAPE_SERIES} and not IsMatch(metric.name, "^{SAMPLES_NAME}$")'
TRANSFORM = f"transform/{SUFFIX}"
_SAMPLES_POINT = f'metric.name == "{SAMPLES_NAME}"'
# transformprocessor (bundled by the agent: service/defaultcomponents) runs a datapoint's statements in order:
# no samples -> -1, some -> 0, then -1 -> 1 (a marker value no sample count can have)
NO_DATA_FLAG = [f"set(value_double, -1.0) where {_SAMPLES_POINT} and value_double == 0.0",
                f"set(value_double, 0.0) where {_SAMPLES_POINT} and value_double > 0.0",
                f"set(value_double, 1.0) where {_SAMPLES_POINT} and value_double == -1.0"]


# A node's GPUs unread below its highest index at each scrape (stopped_gpus.UNREAD, the GPU stopped reporting rule's
# CloudWatch alarm): each GPU's reading of the presence fields once (metricstransform/gpudash, after the blank filter:
# DCGM's blank is no reading), as its index plus one and as -1 (UNREAD_TRANSFORM: OTTL's Double of the `gpu` label),
# then per node the largest of the first added to the second's sum (UNREAD_MERGE).
UNREAD_TRANSFORM = f"transform/{SUFFIX}-gpus"
UNREAD_MERGE = f"metricstransform/{SUFFIX}-gpus"
_UNREAD_INDEX, _UNREAD_COUNT = "gpudash.gpus.index", "gpudash.gpus.count"  # (taken back into UNREAD per node)


def unread_published(declarations: list[dict[str, Any]]) -> bool:
    """A declaration publishes the node's GPUs unread (stopped_gpus.UNREAD)."""
    from ..stopped_gpus import UNREAD

    return _declared(declarations, UNREAD)


def unread_copies(fields: Iterable[str]) -> list[dict[str, Any]]:
    """metricstransform/gpudash's first transforms (after the blank filter) where the node's GPUs unread are published:
    each GPU's reading of `fields` (the presence field and its MIG stand-in: stopped_gpus.read_fields) once per scrape,
    its copies (MIG instances, pods sharing it) merged by `max` over the cluster, node and index, twice (_UNREAD_INDEX,
    _UNREAD_COUNT)."""
    gpu = [CLUSTER_DIMENSION, NODE_DIMENSION, GPU_DIMENSION]
    each = [{"include": f"^{re.escape(name)}$", "match_type": "regexp", "action": "insert",
             "new_name": f"{_UNREAD_INDEX}.{index}",
             "operations": [{"action": "aggregate_labels", "label_set": gpu, "aggregation_type": "max"}]}
            for index, name in enumerate(fields)]
    return [*each,
            {"include": f"^{re.escape(_UNREAD_INDEX)}\\.\\d+$", "match_type": "regexp", "action": "combine",
             "new_name": _UNREAD_INDEX, "aggregation_type": "max"},
            {"include": f"^{re.escape(_UNREAD_INDEX)}$", "match_type": "regexp", "action": "insert",
             "new_name": _UNREAD_COUNT}]


def unread_values() -> dict[str, Any]:
    """UNREAD_TRANSFORM: each GPU's point of _UNREAD_COUNT -1, of _UNREAD_INDEX its index plus one (OTTL's Double of the
    `gpu` label, an integer NVML writes). A GPU whose `gpu` is no number (a scrape relabelling it, another exporter) has
    no index to hold a place among its node's: both its points are 0, neither raising the node's highest index nor
    counted, and its node is judged on its other GPUs. Double of such a label is nil, the math on it fails and, with
    error_mode ignore, the statement is skipped, so each point is first set to 0. (Before, the point kept its reading:
    a node of GPUs labelled so, all reporting, published 39 GPUs unread at 40-43 C, and the alarm named it.)"""
    double = f'Double(attributes["{GPU_DIMENSION}"])'
    return {"error_mode": "ignore", "metric_statements": [{"context": "datapoint", "statements": [
        f'set(value_double, 0.0) where metric.name == "{_UNREAD_COUNT}" or metric.name == "{_UNREAD_INDEX}"',
        f'set(value_double, {double} + 1.0) where metric.name == "{_UNREAD_INDEX}"',
        f'set(value_double, {double} * 0.0 - 1.0) where metric.name == "{_UNREAD_COUNT}"']}]}


def unread_merge() -> dict[str, Any]:
    """UNREAD_MERGE: per node (cluster and node) the highest index plus one and minus the GPUs read, added into
    stopped_gpus.UNREAD."""
    from ..stopped_gpus import UNREAD

    node = [CLUSTER_DIMENSION, NODE_DIMENSION]
    return {"transforms": [
        {"include": f"^{re.escape(_UNREAD_INDEX)}$", "match_type": "regexp", "action": "update",
         "operations": [{"action": "aggregate_labels", "label_set": node, "aggregation_type": "max"}]},
        {"include": f"^{re.escape(_UNREAD_COUNT)}$", "match_type": "regexp", "action": "update",
         "operations": [{"action": "aggregate_labels", "label_set": node, "aggregation_type": "sum"}]},
        {"include": f"^{re.escape(_UNREAD_INDEX)}$|^{re.escape(_UNREAD_COUNT)}$", "match_type": "regexp",
         "action": "combine", "new_name": UNREAD, "aggregation_type": "sum"}]}


def selects(selector: str, name: str) -> bool:
    """A metric_name_selectors regex selects the metric `name` (Go's regexp.MatchString, as awsemf matches; one Go
    refuses selects nothing)."""
    return _found(selector, name)


def _declared(declarations: list[dict[str, Any]], name: str) -> bool:
    """A declaration selects the metric `name`."""
    return any(selects(selector, name) for d in declarations for selector in d["metric_name_selectors"])


def samples_published(declarations: list[dict[str, Any]]) -> bool:
    return _declared(declarations, SAMPLES_NAME)


def scrape_series(declarations: list[dict[str, Any]]) -> str:
    return SCRAPE_SERIES_BUT_SAMPLES if samples_published(declarations) else SCRAPE_SERIES


def no_data_flag() -> dict[str, Any]:
    """The transform processor that makes each scrape's kept sample count a flag: 1 brought no DCGM sample, else 0."""
    return {"error_mode": "ignore", "metric_statements": [{"context": "datapoint", "statements": NO_DATA_FLAG}]}


def retyped(catalog: Catalog, shipped: Iterable[str]) -> dict[str, Any] | None:
    """The transform processor that gives each shipped field the type of its meaning before awsemf: a Gauge of every
    level (a state, a windowed count, a throughput: catalog kind gauge), whatever type the exporter serves it as, and
    a cumulative monotonic Sum of a running total the exporter serves as a gauge (catalog.Metric.retyped; awsemf then
    publishes its growth); None when neither is shipped. Every level, not only those the counters CSV types counter:
    the exporter serves the type of its own counters file, which need not be the one gpudash reads (the image's
    default types DCGM's NVLink throughput counter, gpudash's bundled CSV gauge), and awsemf would publish a level
    served as a counter as the differences between its readings; convert_sum_to_gauge leaves a Gauge as it is."""
    names = [n for n in shipped if n in catalog]
    levels = [n for n in names if catalog.get(n).kind == "gauge"]
    totals = [n for n in names if catalog.get(n).kind == "counter" and catalog.get(n).retyped]
    if not levels and not totals:
        return None
    statements = [f'convert_sum_to_gauge() where IsMatch(name, "^(?:{"|".join(levels)})$")'] if levels else []
    statements += [f'convert_gauge_to_sum("cumulative", true) where IsMatch(name, "^(?:{"|".join(totals)})$")'] \
        if totals else []
    return {"error_mode": "ignore", "metric_statements": [{"context": "metric", "statements": statements}]}


ZERO_UNREAD_TEST = " and value_double == 0.0"  # blank_conditions' test of a field whose 0 is "not supported"


def blank_conditions(catalog: Catalog, names: Iterable[str], prefix: str = "") -> list[str]:
    """OTTL datapoint conditions, one per floor: the fields' values that are blanks, not readings (of the
    metrics named `prefix` + a field's name: a pod's totals, see pod_totals)."""
    by_floor: dict[float, list[str]] = {}
    for name in names:
        field = catalog.get(name)
        if field.kind in ("gauge", "counter"):
            by_floor.setdefault(reading_floor(field.is_counter), []).append(name)
    # a `.` of the prefix is written [.]: the pattern is an OTTL string, whose escapes are not the regexp's
    start = "^" + prefix.replace(".", "[.]")
    conditions = [f'IsMatch(metric.name, "{start}(?:{"|".join(fields)})$") and value_double >= {_ottl_number(floor)}'
                  for floor, fields in sorted(by_floor.items())]
    # a field whose 0 is DCGM's "not supported" (blanks.UNREAD_AT_ZERO): its 0 too (a pod's total of it is 0 only where
    # every GPU in it wrote 0; its count of GPUs with a reading is made after this filter and leaves them out)
    zero = [name for fields in by_floor.values() for name in fields if name in UNREAD_AT_ZERO]
    if zero:
        conditions.append(f'IsMatch(metric.name, "{start}(?:{"|".join(zero)})$"){ZERO_UNREAD_TEST}')
    return conditions


# The exporter's labels that tell a GPU instance from the others of one exporter: the GPU's UUID, and the
# MIG instance (the scrape job gives a GPU not split into MIG instances GPU_I_ID="none").
GPU_IDENTITY = ("UUID", MIG_INSTANCE_LABEL)
# The labels that tell a GPU's MIG instances apart: a device counter's copies, one per instance with the GPU's reading,
# merge per physical GPU without them (a GPU split 4g.20gb + 3g.20gb kept apart by its profiles would count twice).
MIG_INSTANCE_LABELS = frozenset({MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL})
MERGED_PREFIX = "gpudash.gpu."  # a merged copy's name between two of the processor's transforms


def _merged_names(catalog: Catalog, settings: Settings, shipped: Iterable[str]) -> list[str]:
    """The shipped fields whose copies merged_counters merges (cloudwatch_query.merged_copies): the counters, and with
    exporter.virtual_gpus the fields the exporter splits per process."""
    return [n for n in shipped if n in catalog and merged_copies(catalog.get(n), settings)]


def _pods_set(dims: Iterable[str]) -> bool:
    """Whether a dimension set is a pod's: it names the pod. The per-pod set and the sets derived from it name it, and
    so do the sets of a pod's totals per scrape ([ClusterName, namespace, pod, pod_total]), which name the pod alone
    whatever else cloudwatch.dimensions adds; no per-GPU set may name it (settings refuse it there)."""
    return POD_DIMENSION in dims


def _copy_labels(catalog: Catalog, settings: Settings, declarations: list[dict[str, Any]],
                 names: list[str]) -> tuple[set[str], set[str], list[tuple[str, ...]]]:
    """(the labels a pod's copy of the fields `names` keeps, those their merged copy keeps, the dimension sets
    that publish them)."""
    sets = [tuple(d) for declaration in declarations for d in declaration["dimensions"]
            if any(selects(selector, name) for selector in declaration["metric_name_selectors"]
                   for name in names)]
    own = {label for name in names for label in catalog.get(name).own_labels}
    # every copy keeps its exporter pod's revision: the delta series of a rollout's old and new exporter stay apart
    kept = {*GPU_IDENTITY, *own, REVISION_LABEL}
    # a namespace's use of a GPU is made from the pods' points apart (namespace_readings): its namespace kept in a
    # GPU's merged copy would split the GPU's reading per namespace of the pods sharing it (3 readings for 1)
    merged = [dims for dims in sets if NAMESPACE_GPU[0] not in dims]
    per_pod = {*kept, *(label for dims in merged if _pods_set(dims) for label in dims)}
    per_gpu = {*kept, *(label for dims in merged if not _pods_set(dims) for label in dims)}
    # a pod's copy keeps the GPU's index too (GPU_ONCE: an exporter writing no UUID merged a pod's GPUs into one), but
    # only where that leaves it outside every per-GPU set (a per-pod set naming the node would put it in one)
    indexed = per_pod | {GPU_DIMENSION}
    if not any(not _pods_set(dims) and set(dims) <= indexed for dims in sets):
        per_pod = indexed
    return per_pod, per_gpu, sets


def _pod_copies_per_gpu(settings: Settings, dims: tuple[str, ...], per_pod: set[str]) -> InputError:
    """The refusal of a per-GPU set `dims` that holds only labels a pod's copy keeps (`per_pod`): each pod's copy would
    be published per GPU too. The per-pod set shares the per-GPU set's names it names (the node, where a pod's copy also
    keeps the GPU's index: with exporter.virtual_gpus, for the alarms per pod and GPU); the fix is there, or in a label
    the per-GPU set adds that no pod's copy keeps."""
    named = [name for name in dims if name in settings.cloudwatch.dimensions and name != CLUSTER_DIMENSION]
    label = next((name for name in ("modelName", "device") if name not in per_pod), None)
    other = f"name in cloudwatch.gpu_dimensions a label no pod's copy keeps (such as {label})" if label else \
        "name in cloudwatch.gpu_dimensions a label no pod's copy keeps"
    because = f", {' and '.join(named)} because cloudwatch.dimensions names {'them' if len(named) > 1 else 'it'}" \
        if named else ""
    return InputError(f"the per-GPU dimension set [{', '.join(dims)}] names only labels a pod's copy of a counter "
                      f"keeps ({', '.join(sorted(per_pod))}){because}: each pod sharing a GPU would be published in "
                      f"it, so it would read the GPU's increase once per pod",
                      where="cloudwatch.dimensions" if named else "cloudwatch.gpu_dimensions",
                      hint=(f"leave {named[-1]} out of cloudwatch.dimensions, or {other}" if named else other))


def pod_copies(catalog: Catalog, settings: Settings, declarations: list[dict[str, Any]],
               shipped: Iterable[str]) -> dict[str, list[str]]:
    """{field: the labels each pod's copy keeps} of the fields whose pod copies merged_counters merges by `max`
    (a pod's total of such a field starts from the same merge, see pod_totals)."""
    names = _merged_names(catalog, settings, shipped)
    if not names:
        return {}
    per_pod = _copy_labels(catalog, settings, declarations, names)[0]
    device = set(_device_counters(catalog, settings, names))
    return {name: sorted(per_pod - MIG_INSTANCE_LABELS if name in device else per_pod) for name in names}


def _device_counters(catalog: Catalog, settings: Settings, names: list[str]) -> list[str]:
    """The device counters of `names` (PCIe replays, rows remapped, energy): each MIG instance of a GPU
    repeats the GPU's reading, so their copies are merged per physical GPU (GPU_I_ID left out); a counter MIG
    reports per instance, and a field split per process (virtual_gpus), are kept per GPU instance
    (cloudwatch_query.merged_copies)."""
    return [n for n in names if merged_copies(catalog.get(n), settings) == "gpu"]


def merged_counters(catalog: Catalog, settings: Settings, declarations: list[dict[str, Any]],
                    shipped: Iterable[str]) -> dict[str, Any] | None:
    """metricstransform's transforms that give each GPU one series of each device counter for the per-GPU
    dimension sets, however many pods share the GPU and however many MIG instances repeat it, and each GPU
    instance one series of a counter MIG reports per instance (None: no counter is shipped).

    The exporter writes a GPU's series once per pod holding it: k pods sharing a GPU by time-slicing or MPS
    write k copies of its counter, one reading of one device, and an idle GPU one copy without pod labels.
    awsemf sends each copy's deltas, so a per-GPU set would hold k observations of every increase (k times the
    truth), and a pod arriving or leaving would start or end a copy. The processor (contrib's
    metricstransformprocessor with internal/coreinternal/aggregateutil, bundled from agent 1.300028.0 on) runs
    its transforms in order on the metrics of each scrape of each target:

    1. insert: a copy of each counter, renamed MERGED_PREFIX + name, keeping only the labels the per-GPU sets
       name and the GPU's identity, whose datapoints of one label set and timestamp are merged into one by
       `max` (the copies of one reading are equal; a copy that is a staleness marker, NaN or blank is none of
       them: the filter dropped blanks before, and awsemf drops a merged point that is a marker): one series
       whose labels do not change when pods come and go. A device counter (PCIe replays, rows remapped,
       NVLink, energy) repeats on every MIG instance of its GPU with the GPU's reading, so its copy leaves
       GPU_I_ID and GPU_I_PROFILE out too (MIG_INSTANCE_LABELS, though a set of another field names them): one
       series per physical GPU (the GPU's UUID is its instances'); a counter MIG
       reports per instance keeps GPU_I_ID: one series per GPU instance;
    2. update: each pod's copy keeps only the labels the per-pod sets name and the GPU's identity, so that it
       lacks a dimension of every per-GPU set and is published in the per-pod sets only; a device counter's
       copy leaves them out as its merged copy does, so a pod holding several MIG instances of one GPU has
       one series of that GPU's reading (by `max`), not one per instance that would add the GPU's increase once
       per instance;
    3. update: the merged copies take their field's name back.

    awsemf then turns each series into deltas: the merged one's are the GPU's increase, once, across pods
    arriving and leaving, missed scrapes and counter resets; a pod's copy reads the GPU's increase while the
    pod held it (from its first scrape with the pod to its last).

    With exporter.virtual_gpus, the fields the exporter splits per process (catalog.PER_PROCESS_FIELDS) are
    merged per GPU instance too: a GPU pods hold has the device's own series, without a pod, and each pod's share
    (4.5.3 and later), or only copies of the device's value (before, or with the exporter's setting off). The
    merged series is the device's own series where there is one, else the largest copy (device_readings,
    device_or_copies: a share can read above the device's value in one scrape), published per GPU once, while
    each pod's copy keeps its share for the per-pod sets and the device's own series is published in neither. That
    merged series is made before the blank filter (device_merges: a device's blank is the GPU's reading at that
    scrape, which the filter drops); here each pod's copy is kept and the merged series takes its name back."""
    names = _merged_names(catalog, settings, shipped)
    shared = PER_PROCESS_FIELDS if settings.exporter.virtual_gpus else ()
    if not names:
        return None
    per_pod, per_gpu, sets = _copy_labels(catalog, settings, declarations, names)
    for dims in sets:
        if not _pods_set(dims) and set(dims) <= per_pod:
            raise _pod_copies_per_gpu(settings, dims, per_pod)
    # A device counter (PCIe replays, rows remapped, energy) repeats on each MIG instance of its GPU: its merged copy,
    # and each pod's copy, drop GPU_I_ID and GPU_I_PROFILE too (a set of another field may name them: with
    # exporter.virtual_gpus, framebuffer used per GPU instance and profile), one series per physical GPU (a pod
    # holding two instances of one GPU has one copy of its reading, not two); a counter MIG reports per instance, and
    # a field split per process (virtual_gpus), keep one per GPU instance.
    device = _device_counters(catalog, settings, names)
    instance = [n for n in names if n not in device]

    def grouped(action: str, labels_of: tuple[tuple[list[str], set[str]], ...], **extra) -> list[dict[str, Any]]:
        return [{"include": f"^({'|'.join(re.escape(n) for n in group)})$", "match_type": "regexp",
                 "action": action, **extra,
                 "operations": [{"action": "aggregate_labels", "label_set": sorted(labels),
                                 "aggregation_type": "max"}]}
                for group, labels in labels_of if group]

    split = [n for n in names if n in shared]  # merged before the blank filter (device_merges)
    return {"transforms": [
        *grouped("insert", ((device, per_gpu - MIG_INSTANCE_LABELS),
                            ([n for n in instance if n not in split], per_gpu)), new_name=MERGED_PREFIX + "${1}"),
        *grouped("update", ((device, per_pod - MIG_INSTANCE_LABELS), (instance, per_pod))),
        {"include": f"^{re.escape(MERGED_PREFIX)}(.+)$", "match_type": "regexp", "action": "update",
         "new_name": "${1}"},
    ]}


def split_fields(catalog: Catalog, settings: Settings, shipped: Iterable[str]) -> list[str]:
    """The shipped fields the exporter splits per process whose copies the agent merges (exporter.virtual_gpus)."""
    return [n for n in _merged_names(catalog, settings, shipped) if n in PER_PROCESS_FIELDS] \
        if settings.exporter.virtual_gpus else []


def device_merges(catalog: Catalog, settings: Settings, declarations: list[dict[str, Any]],
                  shipped: Iterable[str]) -> list[dict[str, Any]]:
    """The pods' totals processor's transforms (BEFORE the blank filter, after the marker filter) that make, of each
    field the exporter splits per process (exporter.virtual_gpus), each GPU instance's one reading for the per-GPU
    sets, named MERGED_PREFIX + field (merged_counters' last transform gives the name back): the device's own series
    inserted twice (device_readings), the largest of the GPU instance's points (an insert merging them by `max`), and
    the three combined by `median` (device_or_copies): the device's reading where the exporter writes one, else the
    largest copy. Made from every point, blanks included: where the device's own series reads DCGM's blank at a
    scrape, the merged reading is that blank, and the blank filter drops it (merged_blank_conditions): the GPU has no
    reading at that scrape, not its pods' largest share (which a merge after the filter took: a GPU at 90 % whose
    own series read the blank at alternate scrapes, shared at 30/25/0 %, read 60 over a period). Where the exporter
    writes no device series (before 4.5.3, or the setting off), every copy is the device's value: the largest is a
    blank exactly when the device's is. The marker filter drops the fields' staleness markers first
    (STALE_MARKER)."""
    split = split_fields(catalog, settings, shipped)
    if not split:
        return []
    per_gpu = _copy_labels(catalog, settings, declarations, _merged_names(catalog, settings, shipped))[1]
    return [*device_readings(split, per_gpu),
            {"include": f"^({'|'.join(re.escape(n) for n in split)})$", "match_type": "regexp", "action": "insert",
             "new_name": MERGED_PREFIX + "${1}",
             "operations": [{"action": "aggregate_labels", "label_set": sorted(per_gpu), "aggregation_type": "max"}]},
            *(device_or_copies(name) for name in split)]


def merged_blank_conditions(catalog: Catalog, settings: Settings, shipped: Iterable[str]) -> list[str]:
    """The blank filter's conditions on each GPU instance's merged reading of a field split per process
    (device_merges): at or above the field's floor, the device read DCGM's blank at that scrape."""
    return blank_conditions(catalog, split_fields(catalog, settings, shipped), prefix=MERGED_PREFIX)


DEVICE_PREFIX = "gpudash.device."  # a GPU's own reading of a field split per process, before it is combined


def device_readings(names: list[str], per_gpu: set[str]) -> list[dict[str, Any]]:
    """Two inserts, alike, of the device's own series of each field the exporter splits per process: its
    datapoints without a pod (experimental_match_labels: the processor's matchAttrs takes a point lacking the
    label when the pattern matches ""), one per GPU instance. With the setting on (4.5.3 and later), that is the
    series the exporter writes beside the pods' shares; a GPU no pod holds has only it. The same test tells the
    device apart on the Grafana side (promql.py: the series whose pod label is empty)."""
    if not names:
        return []
    insert = {"include": f"^({'|'.join(re.escape(n) for n in names)})$", "match_type": "regexp", "action": "insert",
              "experimental_match_labels": {POD_DIMENSION: "^$"}, "new_name": DEVICE_PREFIX + "${1}",
              "operations": [{"action": "aggregate_labels", "label_set": sorted(per_gpu), "aggregation_type": "max"}]}
    return [insert, {**insert, "experimental_match_labels": dict(insert["experimental_match_labels"]),
                     "operations": [dict(insert["operations"][0], label_set=sorted(per_gpu))]}]


def device_or_copies(name: str) -> dict[str, Any]:
    """combine, by `median`, of a field's device reading inserted twice (device_readings) and the largest of the
    GPU's copies (the merged insert): per GPU instance and scrape, the median of [d, d, c] is d whatever c is, and
    of [c] alone c. So a GPU reads its device's own series where the exporter writes one, even when a pod's share
    reads above it (NVML samples processes and the device apart: under MPS processes run at once), and the
    largest copy where it writes none (an exporter before 4.5.3, or with the setting off: every copy holds the
    device's value). The device's points come first: a group whose first point is a staleness marker stays one
    (aggregateutil merges into the first point), which awsemf drops, instead of reading a marker as 0."""
    return {"include": f"^(?:{re.escape(DEVICE_PREFIX)}|{re.escape(MERGED_PREFIX)}){re.escape(name)}$",
            "match_type": "regexp", "action": "combine", "new_name": MERGED_PREFIX + name,
            "aggregation_type": "median"}


# The marker filter's condition (MARKERS, before the pods' totals processor) that drops the staleness markers of every
# DCGM field (OTTL's datapoint `flags`, 1: NoRecordedValue, the receiver's mark of a series the scrape no longer has;
# the exporter's job keeps DCGM_ names alone). A marker carries no value and awsemf drops one anyway (a counter's
# previous reading kept), so only merges ever read it, and there by chance: aggregateutil merges a group into its
# first point, a first point without value stays a marker whatever else the group holds, and it writes its groups in
# Go's map order (mergeNumberDataPoints ranges over a map), so a later merge of them (a pod's total over its GPUs
# after each GPU's copies are merged, a GPU's over its MIG instances, the pods' GPU counts) takes a marker first or
# not at random. A pod holding a GPU of its own and one named in turn under the pods sharing it (without
# KUBERNETES_VIRTUAL_GPUS) has the shared GPU's series end with a marker at every other scrape: its total at such a
# scrape was published or not at random, half the time (300 W and a shared 100 W read about 367 W where NAMED_PART
# says 350, a different value at each period). Dropped before any metricstransform, no marker reaches a merge: a group
# holds readings alone, or is not made. The device_or_copies pick of a field split per process (exporter.virtual_gpus)
# needs it too: a GPU a pod starts to hold on an exporter without per-process shares ends its series without a pod as
# its copy begins, and a marker first would lose that scrape's reading. A filter of its own: the pods' totals are made
# before the blank filter, and need the markers gone and the blanks still there.
STALE_MARKER = 'IsMatch(metric.name, "^DCGM_") and flags == 1'


TOTAL_PREFIX = "gpudash.pod."  # a pod's total's name from the processor that makes it to the one that renames it
# The labels that name one GPU of a node's exporter, whatever its MIG instances: its UUID, and its index (an exporter
# writing no UUID, or a relabelling dropping it, merged a pod's GPUs into one by their UUID alone: a pod on GPUs of 300
# and 400 W read 400 W; tests/unit/test_cloudwatch_uuid_less.py).
GPU_ONCE = ("UUID", GPU_DIMENSION)


def _total_fields(catalog: Catalog,
                  declarations: list[dict[str, Any]]) -> list[tuple[str, tuple[str, str], list[str], str]]:
    """(kind, (mark, its value), the pod's labels, field) of each pod total a pod-total set
    (cloudwatch_query.pod_total_dimensions) publishes: per pod, or per GPU the pod holds (the GPU's index among the
    pod's labels)."""
    result = []
    for declaration in declarations:
        for dims in declaration.get("dimensions") or []:
            kind, marked = pod_total_kind(dims), pod_total_mark(dims)
            if kind is None or marked is None:
                continue
            pod = sorted(d for d in dims if d != marked[0])
            result += [(kind, marked, pod, name) for selector in declaration.get("metric_name_selectors") or []
                       for name in [next((m.name for m in catalog if selects(selector, m.name)), None)] if name]
    return result


def _total_name(kind: str, pod: list[str], name: str) -> str:
    """The name of a pod's total of `name` from the transform that makes it to the one that renames it: one per set
    (a pod's total per GPU apart from its total, so that each set's chain of transforms matches its own metrics)."""
    apart = '-gpu' if GPU_DIMENSION in pod else '-node' if POD_DIMENSION not in pod else ''  # (a node's total)
    return f"{TOTAL_PREFIX}{kind}{apart}.{name}"


def pod_totals(catalog: Catalog, declarations: list[dict[str, Any]],
               copies: dict[str, list[str]] | None = None, after_filter: bool | None = None) -> list[dict[str, Any]]:
    """metricstransform's transforms that make, from each scrape of a node's exporter, each pod's total of the
    gauges published in a pod-total set (cloudwatch_query.pod_total_dimensions): the sum of a gauge over the
    pod's GPUs, or how many GPUs the pod holds, marked with the set's mark (POD_TOTALS), named TOTAL_PREFIX +
    kind + field until `totals_renamed` gives them their field's name back.

    The sums run BEFORE the blank filter, on every point the exporter served: a pod's total holds each of its
    GPUs. A sum holding a GPU's blank is at or above the field's floor (a blank is, and the other readings are not
    negative), and the filter drops it (`total_blank_conditions`): the pod's total at that scrape is unknown,
    not the total of its other GPUs. (Made after the filter, a sum would hold only the GPUs that read a value and
    be published as the pod's whole.) The counts run AFTER it (in metricstransform/gpudash, first): a count of the
    pod's GPUs counts those with a reading of the field, DCGM's blank none (promql.counted, as the Prometheus side
    counts them). A node's total (the set names no pod: [ClusterName, node], made the same way, each GPU once
    whatever pods hold it, a GPU no pod holds too) of a field whose MIG instances average (engine activity) runs
    AFTER it as well (_made_after_filter). `after_filter`: the totals made after the filter only (True), those made
    before it (False), or all.

    The processor (aggregateutil, see merged_counters) runs on one scrape of one target, whose points share the
    scrape's timestamp; aggregate_labels keeps the labels of `label_set`, and merges the points of one label
    set and timestamp into the first of them: `sum` adds them, `max` takes the largest, `count` writes how many
    there are, but only when there are two or more (a lone point keeps its value). So:

    * a field whose pod copies merged_counters merges (`copies`: one per pod of each GPU instance, by `max`,
      with exporter.virtual_gpus) starts from the same merge, so that the pod's copies are its share once;
    * sum: each GPU once per pod (the max over the pod's series of one UUID: a device field repeats on a MIG
      GPU's instances), or, of a field MIG reports per instance, each GPU instance's copies merged by `max` (the
      copies of one reading: a node's pods sharing the GPU, each with a copy of the device's value with
      exporter.virtual_gpus; a pod's replicas of it; the pod a GPU is named under in turn with the marker ending
      the one named before) and then the instances of the GPU combined as the field combines them
      (ONCE_AGGREGATION: framebuffer adds up, `sum`; engine activity averages, `mean`: a pod on 0.25 and 0.75 of
      one GPU's engine uses 0.5 of it, not 1.0), then the sum over the pod's GPUs (a pod's total per GPU stops
      there: its use of the GPU). Added per instance without the merge, a node's total read a GPU two pods share
      twice (24,000 MiB free for 12,000);
    * count: one point per GPU of the pod (the max over its series of one UUID), inserted a second time under
      the same name; `combine` merges the two copies' points of one label set by `count`, which writes 2 (two
      points, whatever their values), then their sum over the pod is twice its GPUs, scaled by 0.5.

    A GPU no pod holds groups without pod labels, and the per-pod set needs them: it publishes no total. No
    staleness marker reaches these merges: the marker filter drops them first (STALE_MARKER; a merge whose groups
    come in Go's map order would take one first at random, and the pod's total at that scrape with it). So a node's mean over a GPU's instances is made
    after the filter, which drops the field's markers (stand_in_conditions): an instance gone (its series all
    markers) would be averaged as 0. The other declarations' label matchers keep the totals out of the sets that do
    not name their mark."""
    copies = copies or {}
    result = []
    for kind, (mark, value), pod, name in _total_fields(catalog, declarations):
        if after_filter is not None and _made_after_filter(catalog, kind, pod, name) != after_filter:
            continue
        if kind == "sum" and POD_DIMENSION not in pod and name in copies:
            continue  # a node's total of a field whose copies merged_counters merges: node_merged_totals
        # a node's count of GPUs of a field split per process (exporter.virtual_gpus): of each GPU instance's merged
        # reading (device_merges), which the blank filter dropped where the device's own series read DCGM's blank; from
        # the scraped points a pod's share counted that GPU where its rule and the per-GPU views do not (4 GPUs for 3)
        merged = kind == "count" and name in copies and POD_DIMENSION not in pod
        include = f"^{re.escape(MERGED_PREFIX + name if merged else name)}$"
        total = _total_name(kind, pod, name)
        once = ONCE_AGGREGATION[catalog.get(name).per_gpu_aggregation] if kind == "sum" else "max"
        # (a node's count: its `max` per GPU merges every copy, the device's own series too; the pods' merge, whose
        # labels name no node, left the node's count of GPUs of framebuffer used without its node: published nowhere)
        shares = [{"action": "aggregate_labels", "label_set": copies[name], "aggregation_type": "max"}] \
            if name in copies and POD_DIMENSION in pod else []
        gpu = sorted({*pod, *GPU_ONCE})
        # a field MIG reports per instance: each GPU instance's copies (pods sharing it, a pod's replicas of it) one
        # reading by `max` first, then the GPU's instances combined (a count's `max` per GPU merges every copy)
        per_gpu = [*shares, *(_instances_combined(gpu, once) if kind == "sum" and catalog.get(name).per_instance
                              else [{"action": "aggregate_labels", "label_set": gpu, "aggregation_type": once}])]
        marked = {"action": "add_label", "new_label": mark, "new_value": value}
        if kind == "sum":
            result.append({"include": include, "match_type": "regexp", "action": "insert", "new_name": total,
                           "operations": [*per_gpu, {"action": "aggregate_labels", "label_set": pod,
                                                     "aggregation_type": "sum"}, marked]})
            continue
        copy = f"^{re.escape(total)}$"
        result += [
            {"include": include, "match_type": "regexp", "action": "insert", "new_name": total,
             "operations": per_gpu},
            {"include": copy, "match_type": "regexp", "action": "insert", "new_name": total},
            {"include": copy, "match_type": "regexp", "action": "combine", "new_name": total,
             "aggregation_type": "count",
             "operations": [{"action": "aggregate_labels", "label_set": pod, "aggregation_type": "sum"},
                            {"action": "experimental_scale_value", "experimental_scale": 0.5}, marked]},
        ]
    return result


def node_merged_totals(catalog: Catalog, declarations: list[dict[str, Any]],
                       copies: dict[str, list[str]]) -> list[dict[str, Any]]:
    """metricstransform's inserts (in metricstransform/gpudash, from the merged copies metricstransform/gpudash-pods
    made (device_merges) once the blank filter dropped those that are DCGM's blank, before they take their field's name
    back) of a node's total of a field whose copies merged_counters merges per GPU instance
    (exporter.virtual_gpus: framebuffer used, whose pods' copies are each pod's own share on dcgm-exporter 4.5.3 and
    later, the device's value before): the sum over the node's GPU instances of each one's merged reading, the device's
    own series where the exporter writes one, else its largest copy (device_or_copies). Added from the copies, a node's
    total would read the pods' shares beside the device's value; their largest, a share read above the device's in
    one scrape. After the blank filter: a GPU instance reading DCGM's blank (its device's own series, where the
    exporter writes one, whatever its pods' shares read) is left out, as its rule leaves it out."""
    return [{"include": f"^{re.escape(MERGED_PREFIX + name)}$", "match_type": "regexp", "action": "insert",
             "new_name": _total_name(kind, pod, name),
             # (each GPU instance's one point by `max`: where the processor left a GPU's device series and copies
             # uncombined, device_or_copies, its largest; then its instances added, then the node's GPUs)
             "operations": [*_instances_combined(sorted({*pod, *GPU_ONCE}), "sum"),
                            {"action": "aggregate_labels", "label_set": pod, "aggregation_type": "sum"},
                            {"action": "add_label", "new_label": mark, "new_value": value}]}
            for kind, (mark, value), pod, name in _total_fields(catalog, declarations)
            if kind == "sum" and POD_DIMENSION not in pod and name in copies]


def _made_after_filter(catalog: Catalog, kind: str, pod: list[str], name: str) -> bool:
    """Whether a pod's or node's total (pod_totals) is made after the blank filter: a count of GPUs (a blank is no
    reading), and a node's total of a field whose MIG instances average (engine activity), made once the filter
    dropped its staleness markers, as a namespace's use of a GPU is (namespace_readings): a GPU's instances are
    averaged over those with a reading, a GPU reading none left out (as its Prometheus rule adds the GPUs' means)."""
    field = catalog.get(name)
    return kind == "count" or POD_DIMENSION not in pod and field.per_instance and field.per_gpu_aggregation == "avg"


def _node_averaged(catalog: Catalog, declarations: list[dict[str, Any]]) -> list[str]:
    """The fields of a node's totals made after the filter of a field whose instances average (_made_after_filter)."""
    return sorted({name for kind, _, pod, name in _total_fields(catalog, declarations)
                   if kind == "sum" and _made_after_filter(catalog, kind, pod, name)})


# how a pod's total combines its series of one GPU (catalog.Metric.per_gpu_aggregation, in aggregateutil's words): a
# device field's copies are one reading (max), a field MIG reports per instance adds up (framebuffer) or averages
# (engine activity) over the pod's instances of the GPU
ONCE_AGGREGATION = {"max": "max", "sum": "sum", "avg": "mean"}


def total_blank_conditions(catalog: Catalog, declarations: list[dict[str, Any]], merged: Collection[str]) -> list[str]:
    """The filter's conditions on the pods' sums made before it (pod_totals): a sum at or above its field's floor holds
    a blank. Not on a node's total of a field whose copies merged_counters merges (`merged`, pod_copies' fields): it is
    made after the filter, from the merged readings (node_merged_totals)."""
    sums: dict[str, list[str]] = {}
    for kind, _, pod, name in _total_fields(catalog, declarations):
        if kind == "sum" and not _made_after_filter(catalog, kind, pod, name) \
                and not (POD_DIMENSION not in pod and name in merged):
            sums.setdefault(_total_name(kind, pod, "").removesuffix("."), []).append(name)
    return [condition for prefix, names in sorted(sums.items())
            for condition in blank_conditions(catalog, names, prefix=f"{prefix}.")]


def totals_renamed(per_gpu: bool = False, per_node: bool = False) -> dict[str, Any]:
    """The transform that gives the pods' totals their field's name back (after the filter and merged_counters,
    whose transforms match the field's name); `per_gpu`: a pod's totals per GPU are made too; `per_node`: a node's."""
    apart = "|".join(name for name, made in (("-gpu", per_gpu), ("-node", per_node)) if made)
    return {"include": f"^{re.escape(TOTAL_PREFIX)}(?:sum|count){f'(?:{apart})?' if apart else ''}\\.(.+)$",
            "match_type": "regexp", "action": "update", "new_name": "${1}"}


def _marked(dims: list[str] | tuple[str, ...]) -> str | None:
    """The mark of a set of points made at the agent (a pod's total, a GPU's reading once), or None."""
    marked = pod_total_mark(dims)
    if marked:
        return marked[0]
    return next((mark for mark in (ONCE_PER_GPU[0], NAMESPACE_GPU[0], UNUSED_SHARE[0], NODE_MEAN) if mark in dims),
                None) or \
        next((name for name in dims if marked_level(name)), None)


def _kept_apart(declarations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The declarations, those of sets without a mark of points made at the agent (a pod's total, a GPU's reading
    once) matching only points without one, so that such points are published in their own set alone (awsemf reads
    a missing label as empty)."""
    marks = sorted({mark for d in declarations for dims in d["dimensions"] if (mark := _marked(dims))})
    if not marks:
        return declarations
    def unmarked() -> dict[str, Any]:  # one object per declaration (YAML would write a shared one as an alias)
        return {"label_names": list(marks), "separator": ";", "regex": "^" + ";" * (len(marks) - 1) + "$"}
    return [d if any(_marked(dims) for dims in d["dimensions"]) else {**d, "label_matchers": [unmarked()]}
            for d in declarations]


def copy_marks(transforms: list[dict[str, Any]]) -> dict[tuple[str, str], list[tuple[frozenset[str], frozenset[str]]]]:
    """{(field, mark): [(the labels a copy keeps, those a point must carry to be copied)]} of the inserts of the pods'
    totals processor that make a field's copies marked UNUSED_SHARE or with a level mark (unused_copies, level_copies),
    as a configuration holds them (read by lint)."""
    result: dict[tuple[str, str], list[tuple[frozenset[str], frozenset[str]]]] = {}
    for transform in transforms:
        new_name = str(transform.get("new_name") or "")
        if transform.get("action") != "insert" or not new_name.startswith((UNUSED_PREFIX, LEVEL_PREFIX)):
            continue
        operations = transform.get("operations") or []
        kept = next((op.get("label_set") for op in operations if op.get("action") == "aggregate_labels"), None)
        mark = next((op.get("new_label") for op in operations if op.get("action") == "add_label"), None)
        name = new_name.removeprefix(UNUSED_PREFIX) if new_name.startswith(UNUSED_PREFIX) else \
            new_name.removeprefix(LEVEL_PREFIX).partition(".")[2]
        if kept is None or mark is None:
            continue
        needed = frozenset(label for label, regex in (transform.get("experimental_match_labels") or {}).items()
                           if not _found(str(regex), ""))
        result.setdefault((name, mark), []).append((frozenset(kept), needed))
    return result


def instance_kept(transforms: list[dict[str, Any]], name: str) -> bool:
    """Whether the points of field `name` can carry GPU_I_ID after the merge processor's `transforms`, as a
    configuration holds them (read by lint): False where a transform updates the field's own points keeping a label set
    without it (merged_counters' update of a device counter's pods' copies) and every copy an insert makes of the field
    without a mark keeps none either (its per-GPU merge): the field is then one series per physical GPU."""
    constrained, kept = False, False
    for transform in transforms:
        if not _found(_read_back(str(transform.get("include") or "")), name):
            continue
        operations = transform.get("operations") or []
        if any(op.get("action") == "add_label" for op in operations):
            continue  # a marked copy: read under its mark's set only
        label_set = next((op.get("label_set") for op in operations if op.get("action") == "aggregate_labels"), None)
        if label_set is None:
            continue
        constrained = constrained or transform.get("action") == "update"
        kept = kept or MIG_INSTANCE_LABEL in label_set
    return kept or not constrained


MadePoint = tuple[str, str, str, "frozenset[str] | None"]  # (field, mark, the mark's value, the labels kept)


def made_points(transforms: list[dict[str, Any]], names: Iterable[str]) -> list[MadePoint]:
    """(field, mark, the mark's value, the labels its points keep besides the mark: None where no aggregate_labels
    says) of each kind of point a transform of a configuration makes under a mark (an add_label operation: a GPU's
    reading once, a namespace's use of a GPU, a pod's total, a flag past a level, ...), read by lint: a field a marked
    set publishes that no transform makes reads nothing, and a set without a mark must not take them."""
    result = []
    names = list(names)
    for transform in transforms:
        operations = [op for op in transform.get("operations") or [] if isinstance(op, dict)]
        new_name = _read_back(str(transform.get("new_name") or ""))
        if not any(op.get("action") == "add_label" for op in operations):
            continue
        if "${1}" in new_name:  # the include's names, each under its own
            include = _read_back(str(transform.get("include") or ""))
            fields = sorted(name for name in names if _found(include, name))
        else:  # a prefix then the field's name (a stand-in's insert, a pod's total)
            fields = [new_name.rsplit(".", 1)[-1]]
        kept: frozenset[str] | None = None
        for op in operations:
            if op.get("action") == "aggregate_labels":
                kept = frozenset(map(str, op.get("label_set") or []))
            elif op.get("action") == "add_label":
                result += [(field, str(op.get("new_label")), str(op.get("new_value")), kept) for field in fields]
    return result


def matched_by(declaration: dict[str, Any], labels: dict[str, str]) -> bool:
    """awsemf takes a point of `labels` into the declaration: it has no label matcher, or each is one awsemf takes
    (else it drops the declaration: matcher_initialised) and one of them matches (one_matches)."""
    matchers = declaration.get("label_matchers") or []
    return not matchers or all(map(matcher_initialised, matchers)) and one_matches(matchers, labels)


def matcher_initialised(matcher: dict[str, Any]) -> bool:
    """awsemf's LabelMatcher.init takes the matcher: it names labels and has a regex Go's regexp compiles (one it
    refuses, or none, makes Config.Validate drop the whole declaration: "Dropped metric declaration.")."""
    regex = matcher.get("regex")
    if not matcher.get("label_names") or not regex or not isinstance(regex, str):
        return False
    if _TEXTS.fullmatch(regex):
        return True
    from ..go_regex_python import unreadable  # (a hand-written regex)

    problem = unreadable(regex)
    return problem is None or not problem.refused


def one_matches(matchers: Iterable[dict[str, Any]], labels: dict[str, str]) -> bool:
    """One of awsemf's label matchers (each initialised) finds its regex in the values of its label names joined by its
    separator, a missing label read as empty (a regex lint cannot read as Go does finds nothing: PR005 says so)."""
    return any(_found(m["regex"], (m.get("separator") or ";").join(labels.get(name, "") for name in m["label_names"]))
               for m in matchers)


# The texts a regex of the forms gpudash writes for the agent matches whole, one (`^name$`) or some (`^(?:a|b)$`):
# plain characters between Go's `^` and `$` (the text's start and end: no final line break before it), read without
# the Go reading of go_regex_python (its import and judgement: generate's own selectors and matchers are all such)
_TEXTS = re.compile(r"\^(?:([\w;]*)|\(\?:([\w;|]*)\))\$", re.ASCII)


def _found(regex: str, text: str) -> bool:
    """Go's regexp finds `regex` in `text` (as the collector's processors and awsemf match; one Go refuses, or lint
    cannot read, finds nothing: lint's PR005 says which)."""
    texts = _TEXTS.fullmatch(regex)
    if texts:
        return text in (texts[2].split("|") if texts[1] is None else (texts[1],))
    from ..go_regex_python import go_readable  # (a hand-written regex)

    pattern = go_readable(regex)
    return pattern is not None and pattern.search(text) is not None


NO_ROLLUP = "NoDimensionRollup"  # awsemf publishes the declared sets alone (its default rolls up: lint AG001)
UNUSED_PREFIX = "gpudash.unused."  # a field's unused share from the transform that makes it to the one that renames it
UNUSED = f"transform/{SUFFIX}-unused"  # the processor that makes a copy's value its unused share (unused_shares)


def _copy_sets(catalog: Catalog, declarations: list[dict[str, Any]], mark_of) -> dict[str, dict[str, set[frozenset[str]]]]:
    """{mark: {field: the sets (dimensions but the mark) that publish the field under it}} of the sets `mark_of`
    (dims -> the mark's name or None) names a mark of copies made at the agent."""
    result: dict[str, dict[str, set[frozenset[str]]]] = {}
    for declaration in declarations:
        for dims in declaration["dimensions"]:
            mark = mark_of(dims)
            if mark is None:
                continue
            for selector in declaration["metric_name_selectors"]:
                name = next((m.name for m in catalog if selects(selector, m.name)), None)
                if name:
                    result.setdefault(mark, {}).setdefault(name, set()).add(frozenset(d for d in dims if d != mark))
    return result


def _copies(sets: set[frozenset[str]], identity: Iterable[str]) -> list[list[str]]:
    """The label sets of a field's copies under one mark: one per set that publishes it (its dimensions and the GPU's
    identity), sets of one label set sharing one copy. One copy per set, not one of every set's labels: a copy keeps
    only the points that carry each label it keeps, so one copy of a pod's set and a node's missed every GPU no pod
    holds in both (the two alarms silenced each other's)."""
    return sorted({tuple(sorted({*dims, *identity})) for dims in sets}, key=lambda labels: (len(labels), labels))


def _unused_fields(catalog: Catalog, declarations: list[dict[str, Any]]) -> dict[str, list[list[str]]]:
    """{field: the label sets of its unused shares, one per set} of the fields published in a set marked UNUSED_SHARE
    (an alarm judging a share below a level: cloudwatch_query.unused_plan): a set's dimensions and the GPU instance's
    identity (each a copy, see _copies)."""
    fields = _copy_sets(catalog, declarations, lambda dims: UNUSED_SHARE[0] if UNUSED_SHARE[0] in dims else None)
    return {name: [list(labels) for labels in _copies(sets, (*GPU_IDENTITY, GPU_DIMENSION))]
            for name, sets in sorted(fields.get(UNUSED_SHARE[0], {}).items())}


def _carried(labels: Iterable[str]) -> dict[str, str]:
    """experimental_match_labels of a copy keeping `labels`: only the points that carry each of them (a GPU a pod
    holds; a MIG instance's profile), but the cluster and the GPU instance's identity, which every point carries."""
    return {label: ".+" for label in labels if label not in (CLUSTER_DIMENSION, *GPU_IDENTITY)}


def unused_copies(fields: dict[str, list[list[str]]]) -> list[dict[str, Any]]:
    """metricstransform's inserts (in the processor of the pods' totals, before the blank filter, which drops a copy
    of a blank by its floor) of each field's copies that become its unused share, one per set that publishes it
    (_copies): its points that carry the labels the set names, with those and the GPU instance's (each point of one
    scrape has its own: `max` merges none), marked UNUSED_SHARE. The copies of one field share its name (the processor
    appends each insert's metric, whatever metrics of that name there are: metrics_transform_processor_otlp.go); the
    set's declaration publishes its own copy alone (_copies_apart)."""
    mark = {"action": "add_label", "new_label": UNUSED_SHARE[0], "new_value": UNUSED_SHARE[1]}
    return [{"include": f"^{re.escape(name)}$", "match_type": "regexp", "action": "insert",
             "new_name": UNUSED_PREFIX + name,
             # a copy of any other point would be published in no set, and still logged (awsemf writes every group)
             "experimental_match_labels": _carried(labels),
             "operations": [{"action": "aggregate_labels", "label_set": labels, "aggregation_type": "max"}, dict(mark)]}
            for name, copies in fields.items() for labels in copies]


def unused_shares(catalog: Catalog, fields: dict[str, list[list[str]]]) -> dict[str, Any]:
    """The transform processor (after the blank filter) that makes each copy's value its field's unused share, the
    whole less the reading (cloudwatch_query.SHARE_BOUNDS: 100 - a percent, 1 - a ratio), an OTTL math expression
    in a datapoint statement (pkg/ottl: `+ - * /` on numbers and paths)."""
    by_whole: dict[float, list[str]] = {}
    for name in fields:
        by_whole.setdefault(SHARE_BOUNDS[catalog.get(name).unit_key], []).append(name)
    start = "^" + UNUSED_PREFIX.replace(".", "[.]")
    return {"error_mode": "ignore", "metric_statements": [{"context": "datapoint", "statements": [
        f'set(value_double, {whole!r} - value_double) where IsMatch(metric.name, "{start}(?:{"|".join(names)})$")'
        for whole, names in sorted(by_whole.items())]}]}


def unused_renamed() -> dict[str, Any]:
    """The transform that gives the unused shares their field's name back (last: the merges match the field's name)."""
    return {"include": f"^{re.escape(UNUSED_PREFIX)}(.+)$", "match_type": "regexp", "action": "update",
            "new_name": "${1}"}


LEVEL_PREFIX = "gpudash.level."  # a field's flags past a level, `<n>.<field>`, until they take the field's name back
LEVELS = f"transform/{SUFFIX}-levels"  # the processor that makes a copy's value its flag past the level (level_flags)


def _level_fields(catalog: Catalog, declarations: list[dict[str, Any]]) -> list[tuple[str, dict[str, list[list[str]]]]]:
    """[(a level mark, {field: the label sets of its flags, one per set})] of the fields published in a set with a
    level mark (an alarm judging every reading of several periods past a level: cloudwatch_query.level_plan), marks
    in their order: a set's other dimensions and the GPU's UUID (and GPU_I_ID for a field MIG reports per instance),
    each a copy (_copies): the copies of one reading (a device field's MIG instances, the pods sharing a GPU) are one
    point."""
    marked = _copy_sets(catalog, declarations, lambda dims: next((name for name in dims if marked_level(name)), None))
    return [(mark, {name: [list(labels) for labels in _copies(sets, _level_identity(catalog, name))]
                    for name, sets in sorted(fields.items())})
            for mark, fields in sorted(marked.items())]


def _level_identity(catalog: Catalog, name: str) -> tuple[str, ...]:
    """The labels that tell one reading of a field from another of its flags' copies: the GPU's UUID, and GPU_I_ID for a
    field MIG reports per instance."""
    return (GPU_IDENTITY[0], GPU_DIMENSION, *((MIG_INSTANCE_LABEL,) if catalog.get(name).per_instance else ()))


def level_copies(levels: list[tuple[str, dict[str, list[list[str]]]]]) -> list[dict[str, Any]]:
    """metricstransform's inserts (in the processor of the pods' totals, before the blank filter, which drops a copy
    of a blank by its floor) of each field's copies that become its flags past a level, one per set (_copies): its
    points that carry every label the set names, one per GPU (instance) and scrape (`max` merges the equal copies of
    one reading), marked."""
    return [{"include": f"^{re.escape(name)}$", "match_type": "regexp", "action": "insert",
             "new_name": f"{LEVEL_PREFIX}{index}.{name}", "experimental_match_labels": _carried(labels),
             "operations": [{"action": "aggregate_labels", "label_set": labels, "aggregation_type": "max"},
                            {"action": "add_label", "new_label": mark, "new_value": LEVEL_FLAG}]}
            for index, (mark, fields) in enumerate(levels) for name, copies in fields.items() for labels in copies]


def _copies_apart(catalog: Catalog, declarations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The declarations, each set of copies made at the agent (an unused share, flags past a level) publishing its own
    copy of each field alone. Another set's copy of the field under the same mark keeps more labels where its set names
    more (a pod's GPU beside a node's GPU; a node's GPU beside the node), so it carries every dimension of this set too
    and awsemf would publish it here as well: this set's declaration matches only points lacking the labels the other
    copies keep and its own do not (awsemf reads a missing label as empty; one label matcher, since a declaration
    takes a point that any of its matchers match). Fields of one set whose copies lack different labels get a
    declaration each. With one copy per field and mark (the bundled alarms) the declarations are unchanged."""
    copies: dict[tuple[str, str], list[list[str]]] = {}
    for mark, fields in [(UNUSED_SHARE[0], _unused_fields(catalog, declarations)),
                         *_level_fields(catalog, declarations)]:
        copies.update({(mark, name): labels for name, labels in fields.items()})
    if all(len(labels) == 1 for labels in copies.values()):
        return declarations
    result = []
    for declaration in declarations:
        dims = declaration["dimensions"][0] if len(declaration["dimensions"]) == 1 else None
        mark = dims and next((d for d in dims if d == UNUSED_SHARE[0] or marked_level(d)), None)
        if mark is None:
            result.append(declaration)
            continue
        by_lacking: dict[tuple[str, ...], list[str]] = {}
        for selector in declaration["metric_name_selectors"]:
            name = next((m.name for m in catalog if selects(selector, m.name)), None)
            all_copies = copies.get((mark, name), [])
            own = next((labels for labels in all_copies if set(dims) - {mark} <= set(labels)
                        and set(labels) - set(dims) <= {*GPU_IDENTITY, GPU_DIMENSION}), None)
            lacking = tuple(sorted({label for labels in all_copies for label in labels} - set(own or ())))
            by_lacking.setdefault(lacking if own else (), []).append(selector)
        for lacking, selectors in by_lacking.items():
            apart = {**declaration, "metric_name_selectors": selectors}
            if lacking:
                apart["label_matchers"] = [{"label_names": list(lacking), "separator": ";",
                                            "regex": "^" + ";" * (len(lacking) - 1) + "$"}]
            result.append(apart)
    return result


def level_blank_conditions(catalog: Catalog, levels: list[tuple[str, dict[str, list[list[str]]]]]) -> list[str]:
    """The filter's conditions on the flags' copies: a copy of a blank is dropped (its flag would pass any level)."""
    return [condition for index, (_, fields) in enumerate(levels)
            for condition in blank_conditions(catalog, fields, prefix=f"{LEVEL_PREFIX}{index}.")]


FAILS = {">": "<=", ">=": "<"}  # a reading that does not pass the level (a NaN passes neither: awsemf drops it)


def level_flags(levels: list[tuple[str, dict[str, list[list[str]]]]]) -> dict[str, Any]:
    """The transform processor (after the blank filter) that makes each copy's value its flag: 1.0 where the reading
    passes the mark's level, 0.0 where not. A datapoint runs the statements in order, a later one reading what an
    earlier one set: the statement that sets 0.0 first where 0.0 does not pass the level (a level of 0 or more), else
    the one that sets 1.0 first (1.0 passes every level under 0)."""
    statements = []
    for index, (mark, fields) in enumerate(levels):
        comparison, level = marked_level(mark)
        copy = (f'IsMatch(metric.name, "^{LEVEL_PREFIX.replace(".", "[.]")}{index}[.]'
                f'(?:{"|".join(re.escape(n) for n in fields)})$")')
        literal = number(level) if "." in number(level) else f"{number(level)}.0"
        passes = f"set(value_double, 1.0) where {copy} and value_double {comparison} {literal}"
        fails = f"set(value_double, 0.0) where {copy} and value_double {FAILS[comparison]} {literal}"
        zero_passes = level < 0 if comparison == ">" else level <= 0
        statements += [passes, fails] if zero_passes else [fails, passes]
    return {"error_mode": "ignore", "metric_statements": [{"context": "datapoint", "statements": statements}]}


def level_renamed() -> dict[str, Any]:
    """The transform that gives the flags their field's name back (last: the merges match the field's name)."""
    return {"include": f"^{re.escape(LEVEL_PREFIX)}[0-9]+\\.(.+)$", "match_type": "regexp", "action": "update",
            "new_name": "${1}"}


ONCE_PREFIX = "gpudash.once."  # a GPU's reading once, from the transform that makes it to the one that renames it


def once_per_gpu(catalog: Catalog, declarations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """metricstransform's transforms that make, from each scrape of a node's exporter, each GPU's reading once of the
    fields published in the set marked ONCE_PER_GPU (cloudwatch_query.readings_dimensions): the exporter writes a
    GPU's series once per MIG instance (a device field repeats the GPU's reading on each) and once per pod sharing
    it by time-slicing or MPS, each copy a reading of the cluster's per-cluster metric, so a count or total of
    those readings counted the GPU once per copy. aggregate_labels keeps the cluster and the GPU's UUID and merges the
    copies of one scrape by `max` (the copies of one reading are equal); the mark tells the point apart from the
    field's own points (_kept_apart). A field MIG reports per instance is merged so per GPU instance (its UUID and
    GPU_I_ID), then the GPU's instances by `mean` (engine activity: the GPU's value is its instances' mean, as
    catalog.Metric.per_gpu_aggregation says and the Prometheus side reads it); one whose instances add up
    (framebuffer) is made before the blank filter (once_sums). They run after the blank filter (a blank is no
    reading, and would be the largest), on one scrape of one target: two exporter pods on one node (a DaemonSet's
    surge) still read the GPU twice. Before the last (their rename), each node's total and count of them
    (node_means)."""
    result = _readings_once(catalog, declarations, ONCE_PER_GPU, ONCE_PREFIX)
    result[-1:-1] = node_means(catalog, declarations) if result else []
    return result


NODE_MEAN_PREFIX = "gpudash.nodemean."  # a node's total or count, `<kind>.<field>`, until they take the field's name back


def node_means(catalog: Catalog, declarations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """metricstransform's transforms (in metricstransform/gpudash, from the GPUs' readings once that once_per_gpu
    inserts, before their rename) that make, from each scrape of a node's exporter, the node's total of the readings
    of the fields published in the set marked NODE_MEAN (cloudwatch_query.node_mean_dimensions: the fleet's values
    now) and its count of GPUs read, negated, each only where a declaration publishes it (node_mean_fields: the kinds
    the widgets read, render/cloudwatch.node_mean_kinds; a node's count of a field only totalled is one metric per node
    billed for nothing): each GPU's reading once (its copies merged, a MIG GPU's instances
    averaged or its stand-in, DCGM's blanks dropped) inserted under NODE_MEAN_PREFIX + kind + field, then per field
    `combine`d into one metric (a node whose GPUs are some whole and some MIG has two metrics of a GPU's readings
    once: one of each insert) and its points added over the cluster and the node, marked. The count is the sum over
    the node of 2 per GPU, times -0.5: each GPU's reading inserted twice, the two merged by `count` (which writes 2
    for two points; a lone point keeps its value), as pod_totals counts. aggregate_labels keeps only the cluster and
    the node (and adds the mark): one point per node, kind and scrape, published in the marked set alone (the other
    declarations' label matchers keep the mark out, _kept_apart). A DaemonSet's surge (two exporter pods on a node)
    scrapes it twice: two points of one total, which a mean over the minute reads once."""
    once = set(once_fields(catalog, declarations))
    made = {kind: [name for name in names if name in once]
            for kind, names in node_mean_fields(catalog, declarations).items()}
    if not any(made.values()):
        return []
    node = [CLUSTER_DIMENSION, NODE_DIMENSION]
    result: list[dict[str, Any]] = [
        {"include": f"^{re.escape(ONCE_PREFIX)}({'|'.join(re.escape(n) for n in names)})$", "match_type": "regexp",
         "action": "insert", "new_name": f"{NODE_MEAN_PREFIX}{kind}.${{1}}"} for kind, names in made.items() if names]
    for name in sorted({name for names in made.values() for name in names}):
        kinds = [kind for kind in NODE_MEAN_KINDS if name in made[kind]]
        if "count" in kinds:
            counted = f"^{re.escape(f'{NODE_MEAN_PREFIX}count.{name}')}$"
            result.append({"include": counted, "match_type": "regexp", "action": "insert",
                           "new_name": f"{NODE_MEAN_PREFIX}count.{name}"})
        for kind in kinds:
            result.append({"include": f"^{re.escape(f'{NODE_MEAN_PREFIX}{kind}.{name}')}$", "match_type": "regexp",
                           "action": "combine", "new_name": f"{NODE_MEAN_PREFIX}{kind}.{name}",
                           "aggregation_type": kind,
                           "operations": [{"action": "aggregate_labels", "label_set": node, "aggregation_type": "sum"},
                                          *([{"action": "experimental_scale_value", "experimental_scale": -0.5}]
                                            if kind == "count" else []),
                                          {"action": "add_label", "new_label": NODE_MEAN,
                                           "new_value": NODE_MEAN_KINDS[kind]}]})
    result.append({"include": f"^{re.escape(NODE_MEAN_PREFIX)}(?:{'|'.join(NODE_MEAN_KINDS)})\\.(.+)$",
                   "match_type": "regexp", "action": "update", "new_name": "${1}"})
    return result


def node_means_made(transforms: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """{(field, mark's value)} of the node's totals and counts (NODE_MEAN) a configuration's transforms make
    (node_means' combines, as it holds them: read by lint)."""
    made = set()
    for transform in transforms:
        new_name = _read_back(str(transform.get("new_name") or ""))
        for op in transform.get("operations") or []:
            if op.get("action") == "add_label" and op.get("new_label") == NODE_MEAN and \
                    new_name.startswith(NODE_MEAN_PREFIX):
                made.add((new_name.removeprefix(NODE_MEAN_PREFIX).partition(".")[2], str(op.get("new_value"))))
    return made


def kinds_matcher(kinds: Iterable[str]) -> dict[str, Any]:
    """The label matcher of a NODE_MEAN declaration: the points of its kinds (those the widgets read)."""
    return {"label_names": [NODE_MEAN], "regex": f"^(?:{'|'.join(NODE_MEAN_KINDS[kind] for kind in kinds)})$"}


def node_mean_fields(catalog: Catalog, declarations: list[dict[str, Any]],
                     taken: Callable[[dict[str, Any], list[str], str], bool] | None = None) -> dict[str, list[str]]:
    """{kind: the fields the declarations publish that kind of a node's of (NODE_MEAN: its total, its count of GPUs
    read)}, as awsemf takes a point marked so into a declaration (matched_by; `taken(declaration, its set, the mark's
    value)`: whether it takes such points, lint's judgement of a hand-edited matcher over the set's real values)."""
    taken = taken or (lambda declaration, dims, value: matched_by(declaration, {NODE_MEAN: value}))
    return {kind: sorted({m.name for d in declarations for dims in d["dimensions"]
                          if NODE_MEAN in dims and taken(d, dims, value)
                          for selector in d["metric_name_selectors"] for m in catalog if selects(selector, m.name)})
            for kind, value in NODE_MEAN_KINDS.items()}


def _readings_once(catalog: Catalog, declarations: list[dict[str, Any]], marked: tuple[str, str], prefix: str,
                   match: dict[str, str] | None = None, renamed: bool = True) -> list[dict[str, Any]]:
    """The transforms of once_per_gpu (marked ONCE_PER_GPU) or namespace_readings (marked NAMESPACE_GPU) after the
    blank filter, of the fields published in the sets marked `marked`, named `prefix` + field until the last gives
    them their field's name back; `match`: experimental_match_labels of the inserts (only the points a pod holds)."""
    names = once_fields(catalog, declarations, marked[0])
    labels = _once_labels(declarations, marked[0])
    mark = {"action": "add_label", "new_label": marked[0], "new_value": marked[1]}
    matched = {"experimental_match_labels": dict(match)} if match else {}
    result = []
    device = [name for name in names if not catalog.get(name).per_instance]
    if device:
        result.append({"include": f"^({'|'.join(re.escape(n) for n in device)})$", "match_type": "regexp",
                       "action": "insert", **matched, "new_name": prefix + "${1}",
                       "operations": [{"action": "aggregate_labels", "label_set": labels, "aggregation_type": "max"},
                                      dict(mark)]})
    averaged = [name for name in names if catalog.get(name).per_instance and name not in once_summed(catalog, names)]
    if averaged:
        result.append({"include": f"^({'|'.join(re.escape(n) for n in averaged)})$", "match_type": "regexp",
                       "action": "insert", **matched, "new_name": prefix + "${1}",
                       "operations": [*_instances_combined(labels, "mean"), dict(mark)]})
    for name, (stand_in, factor) in once_stand_ins(catalog, names).items():
        result.append(_stand_in_once(name, stand_in, factor, labels, mark, prefix, match))
    if renamed and (result or once_summed(catalog, names)):
        result.append({"include": f"^{re.escape(prefix)}(.+)$", "match_type": "regexp", "action": "update",
                       "new_name": "${1}"})
    return result


NAMESPACE_PREFIX = "gpudash.namespace."  # a namespace's use of a GPU, from the transform that makes it to its rename
_HELD = {NAMESPACE_DIMENSION: ".+"}  # the points a pod holds: a GPU no pod holds has no namespace, no use of one


def namespace_readings(catalog: Catalog, declarations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """metricstransform's transforms (after the blank filter) that make, from each scrape of a node's exporter, each
    namespace's use of each GPU its pods hold of the fields published in the set marked NAMESPACE_GPU
    (cloudwatch_query.namespace_plan), as once_per_gpu makes a GPU's reading once, the namespace kept: a device
    field's series of the GPU the namespace's pods hold (one per MIG instance, one per pod sharing it with
    exporter.virtual_gpus) merged by `max` (equal copies of one reading), a field MIG reports per instance merged per
    GPU instance by `max` (pods sharing it), then the namespace's instances of the GPU by `mean` (engine activity: the
    filter dropped their staleness markers before, stand_in_conditions, which would be averaged as 0); one whose
    instances add up (framebuffer) is made before the filter (namespace_sums). Only the points a pod holds (its
    namespace label): a GPU no pod holds makes none, which no set would publish and awsemf would still log."""
    return _readings_once(catalog, declarations, NAMESPACE_GPU, NAMESPACE_PREFIX, _HELD, renamed=False)


def namespace_renamed(catalog: Catalog, declarations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The transform that gives a namespace's use of each GPU (namespace_readings, namespace_sums) its field's name
    back, last: the merge of a pod's copies of a field split per process (merged_counters' update of the field's
    points, with exporter.virtual_gpus) would otherwise take them in and keep only the per-pod sets' labels (a
    namespace's count of GPUs of GPU utilization read nothing; over the per-pod set, a GPU two of its pods share
    counted 2)."""
    if not once_fields(catalog, declarations, NAMESPACE_GPU[0]):
        return []
    return [{"include": f"^{re.escape(NAMESPACE_PREFIX)}(.+)$", "match_type": "regexp", "action": "update",
             "new_name": "${1}"}]


def namespace_sums(catalog: Catalog, declarations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods' totals processor's inserts (before the blank filter) of each namespace's use of each GPU of a field
    whose MIG instances add up (framebuffer), as once_sums makes a GPU's: an instance's copies merged by `max`, the
    namespace's instances of the GPU added, marked NAMESPACE_GPU; a sum holding a blank is dropped by the filter
    (namespace_blank_conditions): the namespace's use of that GPU at that scrape is unknown."""
    return _sums_once(catalog, declarations, NAMESPACE_GPU, NAMESPACE_PREFIX, _HELD)


def namespace_blank_conditions(catalog: Catalog, declarations: list[dict[str, Any]]) -> list[str]:
    """The filter's conditions on the sums namespace_sums makes: a sum at or above its field's floor holds a blank."""
    return blank_conditions(catalog, once_summed(catalog, once_fields(catalog, declarations, NAMESPACE_GPU[0])),
                            prefix=NAMESPACE_PREFIX)


def _once_labels(declarations: list[dict[str, Any]], marked: str = ONCE_PER_GPU[0]) -> list[str]:
    """The labels a GPU's reading once keeps: the names the marked sets carry besides the mark (the node and GPU of
    the per-GPU set's: cloudwatch_query.once_dimensions), the cluster and the GPU's UUID. One GPU's copies name one node
    and index, so they merge alike, and every field's point of a GPU has one label set (one EMF event per GPU and
    scrape)."""
    named = {name for d in declarations for dims in d["dimensions"]
             if marked in dims or marked == ONCE_PER_GPU[0] and NODE_MEAN in dims  # (node_means adds them per node)
             for name in dims if name not in (marked, NODE_MEAN)}
    return sorted({*named, CLUSTER_DIMENSION, *GPU_ONCE})


def _instances_combined(labels: list[str], how: str) -> list[dict[str, Any]]:
    """aggregate_labels that merge the copies of each GPU instance (pods sharing it) by `max`, then the GPU's
    instances by `how` (sum, mean; a whole GPU is its one instance, GPU_I_ID "none")."""
    return [{"action": "aggregate_labels", "label_set": sorted({*labels, MIG_INSTANCE_LABEL}),
             "aggregation_type": "max"},
            {"action": "aggregate_labels", "label_set": labels, "aggregation_type": how}]


def once_summed(catalog: Catalog, names: Iterable[str]) -> list[str]:
    """The fields of a GPU's readings once whose MIG instances add up to the GPU's value (framebuffer used, free)."""
    return [name for name in names if catalog.get(name).per_instance and catalog.get(name).per_gpu_aggregation == "sum"]


def once_sums(catalog: Catalog, declarations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods' totals processor's inserts (before the blank filter) of each GPU's reading once of a field whose MIG
    instances add up (once_summed): each instance's copies merged by `max`, the GPU's instances added, marked, named
    ONCE_PREFIX + field (once_per_gpu's last transform gives the name back). Made before the filter, as a pod's total
    is (pod_totals): a GPU one of whose instances reads DCGM's blank has a sum at or above the field's floor, which
    the filter drops (once_blank_conditions): the GPU's value at that scrape is unknown, not the sum of its other
    instances (the Prometheus side gives such a GPU no value either: promql.merged). An instance gone (its staleness
    markers) adds nothing: the marker filter dropped them (STALE_MARKER)."""
    return _sums_once(catalog, declarations, ONCE_PER_GPU, ONCE_PREFIX)


def _sums_once(catalog: Catalog, declarations: list[dict[str, Any]], marked: tuple[str, str], prefix: str,
               match: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """once_sums or namespace_sums: the inserts of the fields of the sets marked `marked` whose instances add up."""
    names = once_summed(catalog, once_fields(catalog, declarations, marked[0]))
    if not names:
        return []
    mark = {"action": "add_label", "new_label": marked[0], "new_value": marked[1]}
    return [{"include": f"^({'|'.join(re.escape(n) for n in names)})$", "match_type": "regexp", "action": "insert",
             **({"experimental_match_labels": dict(match)} if match else {}), "new_name": prefix + "${1}",
             "operations": [*_instances_combined(_once_labels(declarations, marked[0]), "sum"), mark]}]


def once_blank_conditions(catalog: Catalog, declarations: list[dict[str, Any]]) -> list[str]:
    """The filter's conditions on the sums once_sums makes: a sum at or above its field's floor holds a blank."""
    return blank_conditions(catalog, once_summed(catalog, once_fields(catalog, declarations)), prefix=ONCE_PREFIX)


def once_stand_ins(catalog: Catalog, names: Iterable[str]) -> dict[str, tuple[str, float]]:
    """{field: (the field that stands in for it on MIG instances, its factor)} of the fields of a GPU's readings once
    that MIG does not report (GPU utilization: graphics engine activity x 100), where the CSV collects the stand-in."""
    return {name: substitute for name in names if (substitute := catalog.mig_substitute(name))}


def _stand_in_once(name: str, stand_in: str, factor: float, labels: list[str], mark: dict[str, str],
                   prefix: str = ONCE_PREFIX, match: dict[str, str] | None = None) -> dict[str, Any]:
    """The insert that makes a MIG GPU's reading once of a field MIG does not report (the agent's scrape job drops it on
    MIG instances, render/scrape.py) from its stand-in, as the Prometheus rule reads it (promql's MIG branch): the
    points of MIG instances (those with a profile), each instance's copies (pods sharing it) merged by `max`, then the
    GPU's instances by `mean` (aggregateutil adds a group's values and divides by their number), times the factor that
    puts it in the field's unit, named and marked as the field's reading once: a count, sum, mean or extreme over the
    set reads every physical GPU once, a whole GPU by its own reading, a MIG GPU by its instances' mean activity. The
    filter dropped the stand-in's blanks and staleness markers before (stand_in_conditions): a marker would be averaged
    as 0."""
    return {"include": f"^{re.escape(stand_in)}$", "match_type": "regexp", "action": "insert",
            "new_name": prefix + name, "experimental_match_labels": {**(match or {}), MIG_PROFILE_LABEL: ".+"},
            "operations": [{"action": "aggregate_labels", "label_set": sorted({*labels, MIG_INSTANCE_LABEL}),
                            "aggregation_type": "max"},
                           {"action": "aggregate_labels", "label_set": labels, "aggregation_type": "mean"},
                           {"action": "experimental_scale_value", "experimental_scale": factor},
                           dict(mark)]}


def once_fields(catalog: Catalog, declarations: list[dict[str, Any]], marked: str = ONCE_PER_GPU[0]) -> list[str]:
    """The fields published in a set marked ONCE_PER_GPU (or `marked`)."""
    return sorted({name for d in declarations for dims in d["dimensions"] if marked in dims
                   for selector in d["metric_name_selectors"]
                   for name in [next((m.name for m in catalog if selects(selector, m.name)), None)] if name})


def stand_in_conditions(catalog: Catalog, declarations: list[dict[str, Any]], shipped: Iterable[str]) -> list[str]:
    """The filter's conditions on the stand-ins a GPU's reading once is made of on MIG (_stand_in_once): their blanks
    where no declaration publishes them (a blank would be averaged into the GPU's reading) and their staleness markers
    (averaged as 0; awsemf drops a marker anyway), and on the markers of the fields whose readings once, or a node's
    totals, average a GPU's MIG instances (once_per_gpu, namespace_readings, pod_totals: an instance gone would be
    averaged as 0)."""
    names = [*once_fields(catalog, declarations), *once_fields(catalog, declarations, NAMESPACE_GPU[0])]
    stand_ins = sorted({stand_in for stand_in, _ in once_stand_ins(catalog, names).values()})
    averaged = [*(name for marked in (ONCE_PER_GPU[0], NAMESPACE_GPU[0])
                  for name in once_fields(catalog, declarations, marked)
                  if catalog.get(name).per_instance and not catalog.get(name).per_gpu_aggregation == "sum"),
                *_node_averaged(catalog, declarations)]
    marked = sorted({*stand_ins, *averaged})
    if not marked:
        return []
    return [*blank_conditions(catalog, [name for name in stand_ins if name not in set(shipped)]),
            f'IsMatch(metric.name, "^(?:{"|".join(marked)})$") and flags == 1']


def filter_conditions(catalog: Catalog, settings: Settings, declarations: list[dict[str, Any]],
                      shipped: Iterable[str]) -> list[str]:
    """The blank filter's conditions, in order, for awsemf's `declarations` and the `shipped` fields: every datapoint
    it drops and nothing else (lint AG005 names a condition missing, and one more, which may drop readings)."""
    shipped = list(shipped)
    unused = _unused_fields(catalog, declarations)
    return [*blank_conditions(catalog, shipped),
            *total_blank_conditions(catalog, declarations, pod_copies(catalog, settings, declarations, shipped)),
            *blank_conditions(catalog, unused, prefix=UNUSED_PREFIX),
            *level_blank_conditions(catalog, _level_fields(catalog, declarations)),
            *once_blank_conditions(catalog, declarations), *namespace_blank_conditions(catalog, declarations),
            *merged_blank_conditions(catalog, settings, shipped), scrape_series(declarations),
            *stand_in_conditions(catalog, declarations, shipped)]


def _publishes(catalog: Catalog, emf: dict[str, Any]) -> dict[str, Any]:
    """What awsemf publishes, the same for every cluster."""
    declarations = [{"dimensions": d["dimensions"], "metric_name_selectors": d["metric_selectors"],
                     **({"label_matchers": [kinds_matcher(d[NODE_MEAN_KEY])]} if NODE_MEAN_KEY in d else {})}
                    for d in emf["metric_declaration"]]
    return {
        "namespace": emf["metric_namespace"],
        "metric_declarations": _copies_apart(catalog, _kept_apart(declarations)),
        "metric_descriptors": [{"metric_name": name, "unit": unit} for name, unit in emf["metric_unit"].items()],
    }


def cluster_exporter(publishes: dict[str, Any], cluster: Cluster, log_group: str, retention_days: int) -> dict[str, Any]:
    """awsemf of one cluster; the strings settings give (namespace, Region, log group) escaped as the receiver's.
    `log_retention`: awsemf creates a missing log group and sets a retention on it only from this (0 or none: the
    group never expires; internal/aws/cwlogs/cwlog_client.go CreateStream), so a group first written by the agent
    (gpudash apply, no CloudFormation stack) keeps its events as long as agent.log_retention_days says."""
    return {
        "namespace": escaped(publishes["namespace"]),
        "region": escaped(cluster.region),
        "log_group_name": escaped(log_group),
        "log_stream_name": LOG_STREAM,
        "log_retention": retention_days,
        "dimension_rollup_option": NO_ROLLUP,
        "version": "0",
        "retain_initial_value_of_delta_metric": False,
        "metric_declarations": publishes["metric_declarations"],
        "metric_descriptors": publishes["metric_descriptors"],
    }


def processors(catalog: Catalog, settings: Settings, declarations: list[dict[str, Any]],
               shipped: Iterable[str]) -> dict[str, Any]:
    """The pipeline's processors, in the order it runs them, for awsemf's `declarations` and the `shipped` fields
    (lint AG005 compares the running ones with them)."""
    shipped = list(shipped)
    copied = pod_copies(catalog, settings, declarations, shipped)
    # a pod's sums before the blank filter (one holding a blank is dropped), its counts of GPUs (and a node's
    # total of a field whose instances average) after it
    totals = pod_totals(catalog, declarations, copied, after_filter=False)
    counts = pod_totals(catalog, declarations, copied, after_filter=True)
    unused = _unused_fields(catalog, declarations)
    levels = _level_fields(catalog, declarations)
    gauges = retyped(catalog, shipped)
    result = {RETYPE: gauges} if gauges else {}
    result[MARKERS] = {"error_mode": "ignore", "metrics": {"datapoint": [STALE_MARKER]}}
    copies = [*unused_copies(unused), *level_copies(levels), *totals, *once_sums(catalog, declarations),
              *namespace_sums(catalog, declarations), *device_merges(catalog, settings, declarations, shipped)]
    result.update({TOTALS: escaped({"transforms": copies})} if copies else {})
    result[FILTER] = {"error_mode": "ignore", "metrics": {
        "datapoint": filter_conditions(catalog, settings, declarations, shipped)}}
    if unused:
        result[UNUSED] = unused_shares(catalog, unused)
    if levels:
        result[LEVELS] = level_flags(levels)
    merge = merged_counters(catalog, settings, declarations, shipped) or {"transforms": []}
    # a node's total of a field whose copies it merges, from the merged copy before it takes its name back
    node_merged = node_merged_totals(catalog, declarations, copied)
    merge["transforms"][-1:-1] = node_merged
    # a GPU's readings once first: the pods' totals take their field's name back after it (totals_renamed)
    unread = unread_published(declarations)
    merge["transforms"] = [*(unread_copies(read_fields(catalog, settings)) if unread else []), *counts,
                           *once_per_gpu(catalog, declarations), *namespace_readings(catalog, declarations),
                           *merge["transforms"]]
    made = _total_fields(catalog, declarations)
    merge["transforms"] += [totals_renamed(any(GPU_DIMENSION in pod for _, _, pod, _ in made),
                                           any(POD_DIMENSION not in pod for _, _, pod, _ in made))] \
        if totals or counts or node_merged else []
    merge["transforms"] += namespace_renamed(catalog, declarations)
    merge["transforms"] += [unused_renamed()] if unused else []
    merge["transforms"] += [level_renamed()] if levels else []
    if merge["transforms"]:
        result[MERGE] = escaped(merge)
    if unread:  # each node's GPUs unread below its highest index (stopped_gpus.UNREAD)
        result[UNREAD_TRANSFORM] = unread_values()
        result[UNREAD_MERGE] = escaped(unread_merge())
    if samples_published(declarations):
        result[TRANSFORM] = no_data_flag()
    result[BATCH] = {"timeout": f"{settings.agent.force_flush_interval}s"}
    return result


class Pipeline:
    """The parts of the collector configuration every cluster shares, made once and held by every
    cluster's configuration (serialize.to_yaml_alike compares the rest, a few values, and writes them)."""

    def __init__(self, catalog: Catalog, settings: Settings, emf: dict[str, Any], shipped: Iterable[str]):
        self.jobs: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}  # id(scrape config) -> (it, escaped)
        self.publishes = _publishes(catalog, emf)
        self.processors = processors(catalog, settings, self.publishes["metric_declarations"], shipped)
        self.retention_days = settings.agent.log_retention_days
        self.service = {"pipelines": {PIPELINE: {"receivers": [RECEIVER], "processors": list(self.processors),
                                                 "exporters": [EXPORTER]}}}

    def config(self, cluster: Cluster, log_group: str, scrape_config: dict[str, Any]) -> dict[str, Any]:
        """One cluster's collector configuration: scrape (its prometheus.yaml, escaped once per object the clusters
        share), drop blanks, batch, publish."""
        if id(scrape_config) not in self.jobs:
            self.jobs[id(scrape_config)] = (scrape_config, escaped(scrape_config))
        return {
            "receivers": {RECEIVER: cluster_receiver(self.jobs[id(scrape_config)][1], cluster)},
            "processors": self.processors,
            "exporters": {EXPORTER: cluster_exporter(self.publishes, cluster, log_group,
                                                          self.retention_days)},
            "service": self.service,
        }


def json_config(cluster: Cluster) -> dict[str, Any]:
    """cwagentconfig.json beside the pipeline: no pipeline of its own, only the agent's Region."""
    return {"agent": {"region": cluster.region}}


def running(otel: dict[str, Any]) -> dict[str, Any]:
    """A collector configuration as the collector runs it: the processors of the metrics pipelines that carry the
    prometheus receiver's scrapes to the awsemf exporter, no other (a processor defined and named by no such pipeline
    does nothing: opentelemetry-collector's service.pipelines), and with no such pipeline an exporter that publishes
    nothing (no declaration). Read by lint."""
    pipelines = [p for name, p in ((otel.get("service") or {}).get("pipelines") or {}).items()
                 if isinstance(p, dict) and str(name).split("/")[0] == "metrics"
                 and RECEIVER in (p.get("receivers") or []) and EXPORTER in (p.get("exporters") or [])]
    names = {str(n) for p in pipelines for n in p.get("processors") or []}
    result = {**otel, "processors": {k: v for k, v in (otel.get("processors") or {}).items() if k in names}}
    exporters = otel.get("exporters")
    if not pipelines and isinstance(exporters, dict) and isinstance(exporters.get(EXPORTER), dict):
        result["exporters"] = {**exporters, EXPORTER: {**exporters[EXPORTER], "metric_declarations": []}}
    return result


def publishing(otel: dict[str, Any]) -> dict[str, Any]:
    """What a collector configuration written by Pipeline.config publishes, in the JSON path's terms
    (cluster_name, emf_processor), for the readers of either (lint, verify, cost); a declaration
    here has no source_labels, since it applies to every job of the pipeline, and keeps awsemf's
    label_matchers (label_names, separator, regex) where it has them."""
    emf = otel["exporters"][EXPORTER]
    jobs = otel["receivers"][RECEIVER]["config"]["scrape_configs"]
    names = {next((rule.get("replacement") for rule in job.get("relabel_configs") or []
                   if rule.get("target_label") == CLUSTER_DIMENSION), None) for job in jobs}
    name = next(iter(names)) if len(names) == 1 else None  # every job attaches the same one
    return {"cluster_name": unescaped(name) if isinstance(name, str) else None,
            "log_group_name": _read_back(emf.get("log_group_name")),
            "emf_processor": {
                "metric_namespace": _read_back(emf["namespace"]),
                "metric_unit": {d["metric_name"]: d["unit"] for d in emf.get("metric_descriptors") or []},
                "metric_declaration": [{"dimensions": d.get("dimensions"),
                                        "metric_selectors": d.get("metric_name_selectors"),
                                        **({"label_matchers": d["label_matchers"]} if d.get("label_matchers") else {})}
                                       for d in emf.get("metric_declarations") or []]}}

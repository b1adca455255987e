"""The DCGM scrape job, the kube-prometheus-stack values snippet and the ServiceMonitor. Pure.

Fixes over the job that is usually copied by hand:
  * exporter pods are selected by their pod label and container port, not by a
    container-name regex that matches no exporter container;
  * no address rewrite is needed: pod discovery already yields podIP:9400;
  * the exporter's own pod name goes to `exporter_pod`, never to `pod`, so the
    workload's `pod`/`namespace`/`container` labels arrive untouched;
  * the path is the exporter's /metrics; metric names are filtered after the scrape
    with metric_relabel_configs on __name__.
"""

from __future__ import annotations

import re
from typing import Any

from .. import agent_timing
from ..catalog import MIG_UNSUPPORTED, WHOLE_GPU_INSTANCE
from ..cloudwatch_query import SCRAPED_MARKS
from ..data_missing import CAPACITY, KSM_METRICS, KSM_TARGET, NODES, gpu_resources_pattern
from ..exporter_styles import (EXPORTER_PORT, METRICS_PATH, ExporterStyle, exporter_namespace, exporter_namespaces,
                               fleet_styles, named_daemonsets, style_for)
from ..promql import MIG_INSTANCE_LABEL
from ..promql_text import pod_label_meta
from ..markers import KUBERNETES_MANAGED_BY, NAMESPACE_DIMENSION, POD_DIMENSION, kubernetes_publisher
from ..names import KUBE_STATE_METRICS_JOB, SERVICE_MONITOR
from ..series_labels import GENERATION_META, OLD_WORKLOAD, REVISION_LABEL, REVISION_META, SCRAPED_NODE, UUID_LABELS
from ..settings import Cluster, Settings, interval_seconds

GPU_ID = UUID_LABELS[0]  # the label of a GPU's UUID (the agent's pipeline merges a GPU's series by it)

METRIC_NAME_FILTER = "DCGM_.*"
SAMPLE_LIMIT = 50000  # samples of one scrape past which Prometheus (and the agent's receiver) fails it whole
# The names the agent's dimension sets give the workload's pod, namespace and container (series_labels.WORKLOAD).
AGENT_WORKLOAD = (POD_DIMENSION, NAMESPACE_DIMENSION, "container")


# Kubernetes SD's meta labels of a pod's namespace and of the controller that owns it (a DaemonSet's pods: its name)
POD_NAMESPACE_META, POD_CONTROLLER_META = "__meta_kubernetes_namespace", "__meta_kubernetes_pod_controller_name"


def exporter_pods_rule(styles: tuple[ExporterStyle, ...], daemonsets: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """The relabel rule keeping the exporter's pods: those labelled as `styles`' pods are (one style: its pod label
    alone), and, where `daemonsets` holds more than the first (exporter.more_daemonsets), the pods of each of those
    DaemonSets by their namespace and owning controller's name, whatever their deployment style (a chart's release
    listed beside the GPU operator's exporter carries app.kubernetes.io/name, not app)."""
    if len(styles) == 1 and len(daemonsets) < 2:
        return {"source_labels": [styles[0].pod_label_meta], "regex": styles[0].pod_label[1], "action": "keep"}
    metas = list(dict.fromkeys(style.pod_label_meta for style in styles))
    labelled = [";".join(re.escape(style.pod_label[1]) if meta == style.pod_label_meta else ".*"
                         for meta in metas) + ";.*;.*" for style in styles]
    # label values, namespaces and names hold no `;` (the separator)
    owned = [";".join([".*"] * len(metas)) + f";{re.escape(ns)};{re.escape(ds)}" for ns, ds in daemonsets[1:]]
    return {"source_labels": [*metas, POD_NAMESPACE_META, POD_CONTROLLER_META],
            "regex": "|".join(dict.fromkeys(labelled + owned)), "action": "keep"}


def scrape_job(settings: Settings, cluster: Cluster | None = None) -> dict[str, Any]:
    """The exporter's scrape job of `cluster`'s CloudWatch agent (its deployment style's pods, in its exporter
    DaemonSets' namespaces), or without a cluster of the fleet's Prometheus (every cluster's)."""
    exporter = style_for(settings, cluster)
    if cluster:
        styles, daemonsets = (exporter,), named_daemonsets(settings, cluster)
    else:
        styles = fleet_styles(settings)
        daemonsets = named_daemonsets(settings)[:1] + tuple(dict.fromkeys(
            d for c in settings.clusters for d in named_daemonsets(settings, c)[1:]))
    scrape = settings.scrape
    return {
        "job_name": scrape.job_name,
        "scrape_interval": scrape.interval,
        "scrape_timeout": scrape_timeout(scrape.interval),
        "metrics_path": METRICS_PATH,
        "scheme": "http",
        "sample_limit": SAMPLE_LIMIT,
        "kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": exporter_namespaces(settings, cluster)}}],
        "relabel_configs": [
            exporter_pods_rule(styles, daemonsets),
            {"source_labels": ["__meta_kubernetes_pod_container_port_number"], "regex": str(EXPORTER_PORT),
             "action": "keep"},
            {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "Namespace", "action": "replace"},
            {"target_label": "Service", "replacement": exporter.service, "action": "replace"},
            # the fleet's Prometheus job: a pod of another style the fleet uses gets that style's Service
            *({"source_labels": [meta], "regex": re.escape(value), "target_label": "Service", "replacement": service,
               "action": "replace"}
              for meta, value, service in dict.fromkeys((style.pod_label_meta, style.pod_label[1], style.service)
                                                        for style in styles if style.service != exporter.service)),
            {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": SCRAPED_NODE, "action": "replace"},
            {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "exporter_pod", "action": "replace"},
        ],
        "metric_relabel_configs": [
            {"source_labels": ["__name__"], "regex": METRIC_NAME_FILTER, "action": "keep"},
            # DCGM does not measure these on a MIG instance: its series read 0, nothing or the blank sentinel.
            # Dropped here, CloudWatch (which cannot filter on a label value's absence per field) never charts
            # a busy MIG pod at 0 % nor alarms it as idle; PromQL reads them with GPU_I_ID="" anyway.
            {"source_labels": ["__name__", MIG_INSTANCE_LABEL],
             "regex": f"({'|'.join(MIG_UNSUPPORTED)});.+", "action": "drop"},
        ],
    }


def agent_scrape_job(settings: Settings, cluster: Cluster | None = None) -> dict[str, Any]:
    """The CloudWatch agent's exporter job: the scrape job, and a GPU instance on every series. A GPU not
    split into MIG instances gets GPU_I_ID="none", so the agent's per-instance dimension set (which it
    emits only for samples that carry every dimension) covers whole GPUs and MIG instances alike. Only the
    agent's job does this: PromQL tells MIG series by GPU_I_ID being set at all.

    On the OTel pipeline each target also carries its exporter pod's DaemonSet revision (REVISION_LABEL, from the
    pod's controller-revision-hash, and its pod-template-generation where it has one: a rollback reuses the earlier
    hash, never the generation), which the merged counters keep (agent_otel.merged_counters): awsemf keys a
    counter's previous reading by every label, so the old and the new exporter of a node during a rollout with
    maxSurge, each reading DCGM on its own clock, are two delta series instead of one whose readings go down and up
    (a reading below the previous one is sent whole, as a reset). No dimension set names it: no metric is added.
    On the OTel pipeline a scraped label named like a mark of the points the agent makes (cloudwatch_query.
    SCRAPED_MARKS: dcgm-exporter --kubernetes-enable-pod-labels writes a pod's own labels) is dropped last."""
    job = scrape_job(settings, cluster)
    if settings.agent.pipeline == "otel":
        job["relabel_configs"] += [
            {"source_labels": [REVISION_META], "target_label": REVISION_LABEL, "action": "replace"},
            {"source_labels": [REVISION_LABEL, GENERATION_META], "regex": "(.+);(.+)", "replacement": "$1-$2",
             "target_label": REVISION_LABEL, "action": "replace"}]
    job["metric_relabel_configs"].append(
        {"source_labels": [MIG_INSTANCE_LABEL], "regex": "", "target_label": MIG_INSTANCE_LABEL,
         "replacement": WHOLE_GPU_INSTANCE, "action": "replace"})
    job["metric_relabel_configs"] += renaming_rules(agent_renames(settings))
    if settings.agent.pipeline == "otel":  # a scraped label named like a mark of the agent's own points goes
        job["metric_relabel_configs"].append({"regex": "|".join(SCRAPED_MARKS), "action": "labeldrop"})
    return job


def scrape_timeout(interval: str) -> str:
    """10s, or the interval when that is shorter (a timeout may not exceed its interval)."""
    return f"{agent_timing.scrape_timeout(interval_seconds(interval))}s"


def ksm_pod_label(settings: Settings) -> tuple[str, str]:
    name, _, value = settings.kube_state_metrics.pod_label.partition("=")
    return name, value


def ksm_scrape_job(settings: Settings, cluster: Cluster | None = None) -> dict[str, Any]:
    """The CloudWatch agent's job for kube-state-metrics: the exporter DaemonSets' three series and the node series
    that say whether a GPU node exists (data_missing.NODES), nothing else
    (every other sample would be a custom metric, or merge into the cluster's). The DaemonSets are those the settings
    name (named_daemonsets): the series carry no label of the DaemonSet's own (kube_daemonset_labels is a series
    apart, which relabelling cannot join), so they are kept by namespace and name. Each cluster's agent keeps its own
    cluster's DaemonSets (clusters[].exporter.daemonset, .more_daemonsets); several are published apart
    (data_missing.ksm_set)."""
    ksm = settings.kube_state_metrics
    name, value = ksm_pod_label(settings)
    discovery: dict[str, Any] = {"role": "pod"}
    if ksm.namespace:
        discovery["namespaces"] = {"names": [ksm.namespace]}
    meta = pod_label_meta(name)
    daemonsets = [f"{re.escape(ns)};{re.escape(ds)}" for ns, ds in named_daemonsets(settings, cluster)]
    kept = f"({'|'.join(KSM_METRICS)});" + (daemonsets[0] if len(daemonsets) == 1 else f"({'|'.join(daemonsets)})")
    # and the node series that say whether a GPU node exists (data_missing.NODES): each node's info, and the capacity
    # of the GPU resources only (none of them carries a namespace or daemonset)
    kept = f"{kept};|{NODES};;;|{CAPACITY};;;{gpu_resources_pattern(settings)}"
    return {
        "job_name": KUBE_STATE_METRICS_JOB,
        "scrape_interval": settings.scrape.interval,
        "scrape_timeout": scrape_timeout(settings.scrape.interval),
        "metrics_path": "/metrics",
        "scheme": "http",
        "kubernetes_sd_configs": [discovery],
        "relabel_configs": [
            {"source_labels": [meta], "regex": re.escape(value), "action": "keep"},
            {"source_labels": ["__meta_kubernetes_pod_container_port_number"], "regex": str(ksm.port),
             "action": "keep"},
            # which kube-state-metrics pod served a series: the agent alarm counts each one's reads apart
            # (data_missing.agent_set), the job keeping every pod the label names
            {"source_labels": ["__meta_kubernetes_namespace", "__meta_kubernetes_pod_name"], "separator": "/",
             "target_label": KSM_TARGET, "action": "replace"},
        ],
        "metric_relabel_configs": [
            {"source_labels": ["__name__", "namespace", "daemonset", "resource"], "regex": kept, "action": "keep"},
        ],
    }


def prometheus_config(settings: Settings, cluster: Cluster | None = None, *, ksm: bool) -> dict[str, Any]:
    """prometheus.yaml for the CloudWatch agent of `cluster`: the exporter's job, and, where the agent publishes the
    data-missing alarm's expected signal (`ksm`: render/agent.reads_ksm), kube-state-metrics' job, which keeps the
    cluster's exporter DaemonSets (named_daemonsets). Scraped where nothing reads them, its series would be logged as
    EMF events the log group bills, and published nowhere."""
    interval = settings.scrape.interval
    jobs = [agent_scrape_job(settings, cluster)] + ([ksm_scrape_job(settings, cluster)] if ksm else [])
    return {"global": {"scrape_interval": interval, "scrape_timeout": scrape_timeout(interval)},
            "scrape_configs": jobs}


def written_labels(settings: Settings) -> tuple[str, str, str]:
    """The labels the exporter writes the workload's pod, namespace and container under, as `labels:` says (the
    `exported_` prefix is Prometheus' when it does not honor them: the exporter writes the name without it)."""
    labels = settings.labels
    return tuple(declared.removeprefix("exported_")  # type: ignore[return-value]
                 for declared in (labels.pod, labels.namespace, labels.container))


def agent_renames(settings: Settings) -> tuple[tuple[str, str], ...]:
    """(the label the exporter writes, the dimension the agent publishes it as) for each workload label the
    exporter writes under another name than the agent's dimension sets use (`pod_name`, `pod_namespace`,
    `container_name` with --use-old-namespace): the agent's job renames them, so that the per-pod sets
    ([ClusterName, namespace, pod]) hold the workload whatever the exporter's flags. The same flag writes the GPU's
    UUID as `uuid`, which the agent's pipeline merges a GPU's series by: renamed to `UUID` too (left as it was, every
    GPU of a pod read as one)."""
    workload = tuple((written, dimension) for written, dimension in zip(written_labels(settings), AGENT_WORKLOAD)
                     if written != dimension)
    gpu_id = settings.labels.uuid
    return workload + (((gpu_id, GPU_ID),) if gpu_id != GPU_ID else ())


def workload_renames(settings: Settings) -> tuple[tuple[str, str], ...]:
    """(the label the exporter writes, the label the settings query) for each workload label the settings
    name `exported_*`: the names the GPU operator's own ServiceMonitor (honorLabels: false) gives them.
    gpudash's Prometheus scrape paths deliver the workload labels under exactly the names `labels:` declares,
    so the queries built on those names match the series whichever of the three paths scrapes the exporter.
    The CloudWatch agent's job names them as its dimensions do instead (agent_renames)."""
    labels = settings.labels
    return tuple((written, declared) for written, declared in zip(written_labels(settings),
                                                                  (labels.pod, labels.namespace, labels.container))
                 if written != declared)


def renaming_rules(renames: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    """metric_relabel_configs moving each label (written, to) of `renames` to its new name (none when empty).
    A series without the label (a GPU no pod holds) gets none: `(.+)` does not match the empty value."""
    if not renames:
        return []
    return [*({"source_labels": [written], "regex": "(.+)", "target_label": declared, "replacement": "$1",
               "action": "replace"} for written, declared in renames),
            {"regex": "|".join(written for written, _ in renames), "action": "labeldrop"}]


def prometheus_scrape_job(settings: Settings) -> dict[str, Any]:
    """The scrape job for Prometheus: the agent's job, with the workload labels named as `labels:` says."""
    job = scrape_job(settings)
    job["metric_relabel_configs"] += renaming_rules(workload_renames(settings))
    return job


def additional_scrape_configs(settings: Settings) -> dict[str, Any]:
    """Values for kube-prometheus-stack: prometheus.prometheusSpec.additionalScrapeConfigs."""
    return {"prometheus": {"prometheusSpec": {"additionalScrapeConfigs": [prometheus_scrape_job(settings)]}}}


# prometheus-operator gives every ServiceMonitor target the exporter pod's own `pod`,
# `namespace` and `container`. With honorLabels a series that lacks them (a GPU no pod holds)
# would take the exporter's: they are moved aside so only the workload's labels remain.
TARGET_WORKLOAD_LABELS = ("pod", "namespace", "container")


def object_metadata(name: str, settings: Settings, namespace: str | None = None) -> dict[str, Any]:
    """Metadata of a prometheus-operator object: namespace (prometheus_stack.namespace, else `namespace`, else
    exporter.namespace) and the kube-prometheus-stack release label."""
    stack = settings.prometheus_stack
    labels = dict(KUBERNETES_MANAGED_BY)
    if stack.release:
        labels["release"] = stack.release
    return {"name": name, "namespace": stack.namespace or namespace or settings.exporter.namespace, "labels": labels,
            "annotations": publisher_annotations(settings)}


def publisher_annotations(settings: Settings) -> dict[str, str]:
    """The settings that write the object, as verify reads them back (markers.KUBERNETES_PROJECT)."""
    return kubernetes_publisher(settings.project, (cluster.name for cluster in settings.clusters))


_CAMEL_CASE = {"source_labels": "sourceLabels", "target_label": "targetLabel"}


def _camel_case(rule: dict[str, Any]) -> dict[str, Any]:
    """A relabel rule as prometheus-operator spells it."""
    return {_CAMEL_CASE.get(key, key): value for key, value in rule.items()}


def service_monitors(settings: Settings) -> list[dict[str, Any]]:
    """The ServiceMonitors: one per way of labelling and naming the exporter's Service the fleet's deployment styles
    use (exporter.deployment's first, named SERVICE_MONITOR; a cluster's clusters[].exporter.deployment of another
    label or port adds one named SERVICE_MONITOR-<style>): a ServiceMonitor selects Services by one label set and
    endpoints by port name, so one cannot select the GPU operator's Service and the chart's."""
    styles = {(style.pod_label, style.service_port): style for style in reversed(fleet_styles(settings))}
    first = style_for(settings)
    return [service_monitor(settings, style if style.key != first.key else None)
            for style in sorted(styles.values(), key=lambda s: s.key != first.key)]


def service_monitor(settings: Settings, style: ExporterStyle | None = None) -> dict[str, Any]:
    """The ServiceMonitor alternative: honorLabels keeps the workload's labels (as `pod`, `namespace`,
    `container`, or under the `exported_*` names the settings declare); relabelings attach the node and
    the exporter pod as the scrape job does. Of exporter.deployment's Service, or of `style`'s."""
    exporter = style or style_for(settings)
    label_name, label_value = exporter.pod_label
    name = f"{SERVICE_MONITOR}-{exporter.key}" if style else SERVICE_MONITOR
    # another style's: in the exporter namespace of the first cluster of that style (where verify reads it there)
    home = next((exporter_namespace(settings, c) for c in settings.clusters
                 if style_for(settings, c).pod_label == exporter.pod_label), None) if style else None
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": object_metadata(name, settings, home),
        "spec": {
            "selector": {"matchLabels": {label_name: label_value}},
            "namespaceSelector": {"matchNames": exporter_namespaces(settings)},
            "endpoints": [{
                "port": exporter.service_port,
                "path": METRICS_PATH,
                "interval": settings.scrape.interval,
                "honorLabels": True,
                "relabelings": [
                    {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": SCRAPED_NODE, "action": "replace"},
                    {"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "exporter_pod",
                     "action": "replace"},
                    {"regex": "|".join(TARGET_WORKLOAD_LABELS), "action": "labeldrop"},
                ],
                "metricRelabelings": [{"sourceLabels": ["__name__"], "regex": METRIC_NAME_FILTER, "action": "keep"},
                                      *(_camel_case(rule) for rule in renaming_rules(workload_renames(settings)))],
            }],
        },
    }

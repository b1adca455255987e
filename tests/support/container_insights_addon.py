"""A small model of the Amazon CloudWatch Observability add-on's GPU path, as its sources document it.

Written from the sources, not from gpudash's table, so that the two can disagree:

* the agent scrapes the add-on's DCGM exporter once a minute (opentelemetry-collector-contrib,
  awscontainerinsightreceiver dcgm scraper: `collectionInterval = 60 * time.Second`);
* each DCGM field below is inserted three times, as container_<name>, pod_<name> and
  node_<name> (amazon-cloudwatch-agent, metricstransformprocessor translator.go
  `renameMapForDcgm`); FB_USED and FB_TOTAL are multiplied by 1024 * 1024 and FB_USED_PERCENT
  by 100 (`experimental_scale_value`); the others pass unchanged;
* container and pod metrics exist only for a GPU a pod holds (the exporter attaches the pod);
  node metrics for every GPU;
* the EMF exporter publishes each metric with each dimension set of its declaration
  (awsemf kubernetes.go `getGPUMetricDeclarations`) whose dimensions are all attributes;
* `PodName` is the pod's owner, `FullPodName` the pod (awscontainerinsightreceiver
  `addPodOwnersAndPodName`); here every pod belongs to a StatefulSet named like the pod
  without its ordinal.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.cloudwatch_agent import Datapoint
from tests.support.dcgm_fleet import FLEET, STEP, Gpu, value

NAMESPACE = "ContainerInsights"
EVERY = 60
INSTANCE_TYPE = "g5.12xlarge"
RENAMED = {"DCGM_FI_DEV_GPU_UTIL": ("gpu_utilization", 1.0), "DCGM_FI_DEV_FB_USED_PERCENT": ("gpu_memory_utilization", 100.0),
           "DCGM_FI_DEV_FB_USED": ("gpu_memory_used", 1048576.0), "DCGM_FI_DEV_FB_TOTAL": ("gpu_memory_total", 1048576.0),
           "DCGM_FI_DEV_GPU_TEMP": ("gpu_temperature", 1.0), "DCGM_FI_DEV_POWER_USAGE": ("gpu_power_draw", 1.0),
           "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("gpu_tensor_core_utilization", 1.0)}
DECLARATIONS = {
    "container": [["ClusterName"], ["ClusterName", "Namespace", "PodName", "ContainerName"],
                  ["ClusterName", "Namespace", "PodName", "FullPodName", "ContainerName"],
                  ["ClusterName", "Namespace", "PodName", "FullPodName", "ContainerName", "GpuDevice"]],
    "pod": [["ClusterName"], ["ClusterName", "Namespace"], ["ClusterName", "Namespace", "Service"],
            ["ClusterName", "Namespace", "PodName"], ["ClusterName", "Namespace", "PodName", "FullPodName"],
            ["ClusterName", "Namespace", "PodName", "FullPodName", "GpuDevice"]],
    "node": [["ClusterName"], ["ClusterName", "NodeName", "InstanceId"],
             ["ClusterName", "NodeName", "InstanceId", "InstanceType", "GpuDevice"]],
}


def reading(field: str, gpu: Gpu, k: int) -> float:
    """What the add-on's exporter serves for `field` at the k-th 30 s step (DCGM: Total = Used + Free + Reserved,
    no memory reserved here; FB_USED_PERCENT is Used / (Total - Reserved), 0-1)."""
    used, free = value("DCGM_FI_DEV_FB_USED", gpu, k, "gauge"), value("DCGM_FI_DEV_FB_FREE", gpu, k, "gauge")
    if field == "DCGM_FI_DEV_FB_TOTAL":
        return used + free
    if field == "DCGM_FI_DEV_FB_USED_PERCENT":
        return used / (used + free)
    return value(field, gpu, k, "gauge")


def attributes(cluster: str, gpu: Gpu) -> dict[str, str]:
    result = {"ClusterName": cluster, "NodeName": gpu.node, "InstanceId": f"i-{gpu.node[-1] * 8}",
              "InstanceType": INSTANCE_TYPE, "GpuDevice": f"nvidia{gpu.index}"}
    if gpu.held:
        result.update(Namespace=gpu.namespace, PodName=gpu.pod.rsplit("-", 1)[0], FullPodName=gpu.pod,
                      ContainerName="main")
    return result


def datapoints(cluster: str, first: int, last: int, gpus=FLEET, every: int = EVERY,
               metrics: set[str] | None = None, blank=None) -> list[Datapoint]:
    """What CloudWatch stores for collections at t = first..last seconds (multiples of `every`, the DCGM
    collection interval; below 60 s the agent sends each minute's values as one distribution, whose SampleCount is
    the collections: stored here as one datapoint per collection). `metrics`: only the datapoints of these metrics
    (those a test reads; None: all), in the same order. `blank(field, gpu, t)`: the blank sentinel the exporter
    serves for a field DCGM cannot read at that collection (None: a reading). Nothing on the add-on's way drops it
    (its pipeline filters the scrape's own series by name, filter_containerinsights_config.yaml, and nothing by
    value): it is scaled as a reading is, and published."""
    result = []
    # each GPU's (level, dimensions with their values) in the declarations' order: the same at every collection
    sets = []
    for gpu in gpus:
        labels = attributes(cluster, gpu)
        sets.append((gpu, [(level, tuple(sorted((d, labels[d]) for d in dims)))
                           for level in (("container", "pod", "node") if gpu.held else ("node",))
                           for dims in DECLARATIONS[level] if all(d in labels for d in dims)]))
    # each field's name, scale and the levels published of it
    fields = [(field, name, scale, {level for level in ("container", "pod", "node")
                                    if metrics is None or f"{level}_{name}" in metrics})
              for field, (name, scale) in RENAMED.items()]
    fields = [(field, name, scale, levels) for field, name, scale, levels in fields if levels]
    for t in range(first, last + 1, every):
        k = t // STEP
        for gpu, published_sets in sets:
            for field, name, scale, levels in fields:
                served = blank(field, gpu, t) if blank is not None else None
                published = (reading(field, gpu, k) if served is None else served) * scale
                for level, dimensions in published_sets:
                    if level in levels:
                        result.append(Datapoint(NAMESPACE, f"{level}_{name}", dimensions, float(t), published))
    return result


# --- a GPU split into MIG instances, as the add-on's agent publishes it ---------------------------
# The exporter writes one series per MIG instance (GPU_I_ID, GPU_I_PROFILE; the pod holding the instance). The
# agent's GPU processor then keeps only its own attributes on each level (amazon-cloudwatch-agent,
# plugins/processors/gpuattributes/internal/metricFilters/gpumetricfilters.go): node_ metrics keep ClusterName,
# InstanceId, GpuDevice, NodeName, Type, InstanceType, Version, Sources, Timestamp and kubernetes.host; pod_ and
# container_ metrics keep the pod too; none keeps GPU_I_ID or GPU_I_PROFILE. Instances of one GPU (held by one pod,
# for pod_ and container_) so carry one label set at a collection, and the EMF exporter keeps the first point of a
# name per label set and logs "Duplicate metric found" for the others (awsemfexporter grouped_metric.go
# addToGroupedMetric). The exporter writes a GPU's instances in the order of their GPU_I_ID.


@dataclass(frozen=True)
class MigInstance:
    instance: int
    profile: str
    used: float  # framebuffer used, MiB
    free: float
    util: float  # what the exporter writes for GPU utilization on an instance (DCGM reports none: 0 or the blank)
    namespace: str | None = None
    pod: str | None = None


def mig_datapoints(cluster: str, node: str, index: int, instances: list[MigInstance], first: int, last: int,
                   every: int = EVERY, temperature: float = 55.0, power: float = 200.0) -> list[Datapoint]:
    """What CloudWatch stores for one GPU split into `instances` (served in the order of their GPU_I_ID) at each
    collection: per level and label set, the first instance's reading; device fields (temperature, power) are
    the GPU's, repeated on every instance's series by the exporter."""
    labels = {"ClusterName": cluster, "NodeName": node, "InstanceId": f"i-{node[-1] * 8}",
              "InstanceType": INSTANCE_TYPE, "GpuDevice": f"nvidia{index}"}
    result = []
    for t in range(first, last + 1, every):
        kept: set[tuple[str, tuple]] = set()  # (metric, all the attributes the agent keeps) already published
        for item in sorted(instances, key=lambda i: i.instance):
            own = dict(labels)
            if item.pod is not None:
                own.update(Namespace=item.namespace, PodName=item.pod.rsplit("-", 1)[0], FullPodName=item.pod,
                           ContainerName="main")
            fields = {"DCGM_FI_DEV_GPU_UTIL": item.util, "DCGM_FI_DEV_FB_USED": item.used,
                      "DCGM_FI_DEV_FB_TOTAL": item.used + item.free,
                      "DCGM_FI_DEV_FB_USED_PERCENT": item.used / (item.used + item.free),
                      "DCGM_FI_DEV_GPU_TEMP": temperature, "DCGM_FI_DEV_POWER_USAGE": power}
            for level in ("container", "pod", "node") if item.pod is not None else ("node",):
                attributes = labels if level == "node" else own  # what the agent's label filter leaves
                for field, reading_ in fields.items():
                    name, scale = RENAMED[field]
                    metric = f"{level}_{name}"
                    key = (metric, tuple(sorted(attributes.items())))
                    if key in kept:
                        continue  # "Duplicate metric found": the EMF exporter keeps the first
                    kept.add(key)
                    for dims in DECLARATIONS[level]:
                        if all(d in attributes for d in dims):
                            result.append(Datapoint(NAMESPACE, metric, tuple(sorted((d, attributes[d]) for d in dims)),
                                                    float(t), reading_ * scale))
    return result


# --- what the add-on's agent publishes about the cluster and its nodes (not from DCGM) ------------
# * node_gpu_limit: a node's `nvidia.com/gpu` capacity from its Node object, added to the node's
#   metrics by the agent on that node, only when the capacity is not 0 (awscontainerinsightreceiver,
#   stores/podstore.go `decorateNode`, nodeinfo.go `getNodeStatusCapacityGPUs`); declared with
#   [NodeName, InstanceId, ClusterName] and [ClusterName] (awsemf kubernetes.go `getNodeMetricDeclarations`).
#   Once per node and collection: the receiver merges a node's CPU, memory and network metrics into one
#   before decorating it (cadvisor extractors `MergeMetrics`). Collected every metrics_collection_interval
#   (60 s by default), at its own phase: CAPACITY_PHASE.
# * cluster_node_count: every node, from the API server, published by the agent's elected leader
#   only (k8sapiserver.go `GetMetrics`, `getClusterMetrics`); declared with [ClusterName].

# * each DaemonSet's available and unavailable pods, from the API server by the leader only
#   (k8sapiserver.go `getDaemonSetMetrics`, PodName = the DaemonSet's name), declared with
#   [PodName, Namespace, ClusterName] and [ClusterName]: daemonset_status_number_* in the agent's
#   declarations (kubernetes.go `getDaemonSetMetricDeclarations`); the fork's receiver of 2024-12 names the
#   fields status_replicas_*, which the Deployment declaration publishes with the same sets (EARLIER).

CAPACITY_PHASE = 17  # seconds after the DCGM scrape: the two collections are not in step
LEADER_PHASE = 41  # the leader's own collection, at another phase again
DAEMONSET_NAMES = ("daemonset_status_number_available", "daemonset_status_number_unavailable")
EARLIER = ("status_replicas_available", "status_replicas_unavailable")
OTHER_DAEMONSETS = {("kube-system", "kube-proxy"): (3, 0), ("amazon-cloudwatch", "cloudwatch-agent"): (2, 1)}


def daemonsets(cluster: str, t: int, exporter: tuple[int, int] | None, names=DAEMONSET_NAMES) -> list[Datapoint]:
    """The leader's DaemonSet metrics at t: the add-on's DCGM exporter (available, unavailable; None: no such
    DaemonSet) and others that must not be read for it."""
    result = []
    counts = dict(OTHER_DAEMONSETS)
    if exporter is not None:
        counts[(ADDON_NAMESPACE, "dcgm-exporter")] = exporter
    for (namespace, name), values in counts.items():
        for metric, value in zip(names, values):
            for dims in ((("ClusterName", cluster),),
                         (("ClusterName", cluster), ("Namespace", namespace), ("PodName", name))):
                result.append(Datapoint(NAMESPACE, metric, dims, float(t), float(value)))
    return result


def capacity(cluster: str, first: int, last: int, gpu_nodes: dict[str, int], all_nodes: int,
             leader: bool = True, exporter=None, names=DAEMONSET_NAMES, every: int = EVERY) -> list[Datapoint]:
    """What CloudWatch stores from the agent's collections at first..last (multiples of 60, shifted by
    CAPACITY_PHASE): each of `gpu_nodes` (node -> GPUs the kubelet counts; the agent runs there) and,
    while the leader runs, the cluster's node count and the DaemonSets' pods: `exporter` is the add-on's DCGM
    exporter DaemonSet's (available, unavailable) or a function of t giving them (None: not published). A node
    whose capacity is 0 publishes no GPU limit. `every`: the agent's metrics_collection_interval."""
    result = []
    for t in range(first + CAPACITY_PHASE % every, last + CAPACITY_PHASE % every + 1, every):
        if leader:
            result.append(Datapoint(NAMESPACE, "cluster_node_count", (("ClusterName", cluster),), float(t),
                                    float(all_nodes)))
            counts = exporter(t) if callable(exporter) else exporter
            if counts is not None:
                result += daemonsets(cluster, t - CAPACITY_PHASE + LEADER_PHASE, counts, names)
        for node, gpus in gpu_nodes.items():
            if not gpus:
                continue
            labels = {"ClusterName": cluster, "NodeName": node, "InstanceId": f"i-{node[-1] * 8}"}
            for dims in (["ClusterName"], ["ClusterName", "NodeName", "InstanceId"]):
                result.append(Datapoint(NAMESPACE, "node_gpu_limit", tuple(sorted((d, labels[d]) for d in dims)),
                                        float(t), float(gpus)))
    return result


# --- the add-on's objects in a cluster -------------------------------------------------------
# As the CloudWatch agent operator makes them from the chart's custom resources
# (internal/manifests/manifestutils/labels.go SelectorLabels, dcgmexporter/service.go): DaemonSets
# named after the resources (`cloudwatch-agent`, `dcgm-exporter`) in `amazon-cloudwatch`, their pods
# selected by app.kubernetes.io/component, the exporter's Service `dcgm-exporter-service` labelled
# k8s-app=dcgm-exporter-service on port `metrics` 9400.

ADDON_NAMESPACE = "amazon-cloudwatch"


def _selector(name: str, component: str) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": "amazon-cloudwatch-agent-operator",
            "app.kubernetes.io/instance": f"{ADDON_NAMESPACE}.{name}",
            "app.kubernetes.io/part-of": "amazon-cloudwatch-agent", "app.kubernetes.io/component": component}


WORKLOADS = {"cloudwatch-agent": ("amazon-cloudwatch-agent", "cloudwatch-agent"),
             "dcgm-exporter": ("dcgm-exporter", "dcgm-exporter")}


def addon_pod(name: str, node: str, ready: bool = True) -> dict:
    component, container = WORKLOADS[name]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-{node[-1]}z", "namespace": ADDON_NAMESPACE,
                         "labels": {**_selector(name, component), "app.kubernetes.io/name": name}},
            "spec": {"nodeName": node, "containers": [{"name": container, "image": name}]},
            "status": {"phase": "Running" if ready else "Pending",
                       "containerStatuses": [{"name": container, "ready": ready, "restartCount": 0,
                                              "image": name, "imageID": "", "state": {}}]}}


def install_addon(cluster, nodes) -> None:
    """The add-on's agent and DCGM exporter on `nodes` of a tests.support.kube_server.KubeCluster."""
    for name, (component, _) in WORKLOADS.items():
        cluster.daemonsets[(ADDON_NAMESPACE, name)] = {
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": ADDON_NAMESPACE, "labels": _selector(name, component)},
            "spec": {"selector": {"matchLabels": _selector(name, component)},
                     "template": {"metadata": {"labels": _selector(name, component)},
                                  "spec": {"containers": [{"name": WORKLOADS[name][1], "image": name}]}}},
            "status": {}}
        cluster.pods += [addon_pod(name, node) for node in nodes]
    cluster.services["dcgm-exporter-service"] = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "dcgm-exporter-service", "namespace": ADDON_NAMESPACE,
                     "labels": {**_selector("dcgm-exporter", "dcgm-exporter"), "k8s-app": "dcgm-exporter-service"}},
        "spec": {"type": "ClusterIP", "internalTrafficPolicy": "Local",
                 "selector": _selector("dcgm-exporter", "dcgm-exporter"),
                 "ports": [{"name": "metrics", "port": 9400, "targetPort": 9400, "protocol": "TCP"}]}}
    refresh_addon(cluster)


def refresh_addon(cluster) -> None:
    for (namespace, name), daemonset in cluster.daemonsets.items():
        pods = [p for p in cluster.pods if p["metadata"]["namespace"] == namespace
                and p["metadata"]["name"].startswith(f"{name}-")]
        ready = sum(1 for p in pods if p["status"]["containerStatuses"][0]["ready"])
        daemonset["status"] = {"currentNumberScheduled": len(pods), "desiredNumberScheduled": len(pods),
                               "numberMisscheduled": 0, "numberReady": ready, "numberAvailable": ready,
                               "updatedNumberScheduled": len(pods), "observedGeneration": 1}


def put_addon_metrics(cloudwatch, cluster: str = "gpu-cluster", node: str = "ip-10-0-1-1", device: str = "nvidia0",
                      metrics=("node_gpu_utilization", "node_gpu_temperature", "node_gpu_memory_used",
                               "node_gpu_power_draw"),
                      signals=("node_gpu_limit", "cluster_node_count", DAEMONSET_NAMES[0])) -> None:
    """The add-on's node GPU metrics for one GPU, with its three node dimension sets, and the node's GPU capacity,
    the cluster's node count and the exporter DaemonSet's available pods with theirs (boto3 client)."""
    sets = [{}, {"NodeName": node, "InstanceId": "i-1"},
            {"NodeName": node, "InstanceId": "i-1", "InstanceType": INSTANCE_TYPE, "GpuDevice": device}]
    workload = {"Namespace": ADDON_NAMESPACE, "PodName": "dcgm-exporter"}
    published = [(metric, dims) for metric in metrics for dims in sets]
    published += [(metric, dims) for metric in signals for dims in
                  ([{}] if metric == "cluster_node_count" else [{}, workload] if metric in DAEMONSET_NAMES + EARLIER
                   else sets[:2])]
    for metric, dims in published:
        cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=[{
            "MetricName": metric, "Value": 50, "Dimensions": [
                {"Name": "ClusterName", "Value": cluster}, *({"Name": k, "Value": v} for k, v in dims.items())]}])

"""What the Amazon CloudWatch Observability add-on publishes for NVIDIA GPUs: the one table.

Container Insights with enhanced observability (`cloudwatch.source: container-insights`)
runs its own DCGM exporter and publishes GPU metrics in the `ContainerInsights` namespace.
Every fact gpudash relies on about it is written down here, once; the renderers, the lint,
`verify`, `cost` and the tests read it from here. Where each fact comes from (docs/container-insights.md,
"CloudWatch Container Insights as the source"):

* metric names, scale factors: amazon-cloudwatch-agent,
  translator/translate/otel/processor/metricstransformprocessor/translator.go
  (`renameMapForDcgm`; `experimental_scale_value` 1024*1024 for memory used / total, 100 for
  memory utilization and nothing else, tensor core activity included, as read at the agent's
  ab55b8da of 2026-08-07; every DCGM field is inserted three times, as container_, pod_ and node_);
  internal/containerinsightscommon/const.go (the suffixes);
* dimension sets: amazon-cloudwatch-agent, translator/translate/otel/exporter/awsemf/kubernetes.go
  (`getGPUMetricDeclarations`; capacity metrics in the pod and node declarations), matching the
  user guide's "Amazon EKS and Kubernetes Container Insights with enhanced observability metrics";
* `PodName` is the pod's owner (Deployment, ReplicaSet ...) and `FullPodName` the pod itself
  (opentelemetry-collector-contrib, awscontainerinsightreceiver k8sapiserver / podstore
  `addPodOwnersAndPodName`): a pod is named by Namespace and FullPodName;
* the exporter's fields: the add-on's Helm chart, templates/linux/dcgm-exporter-daemonset.yaml
  (`metricsConfig`); its Service label: the receiver's dcgm scraper (`k8s-app=dcgm-exporter-service`);
* how often it collects is no fact of this table but the settings' (the agent's configuration,
  which gpudash writes: cloudwatch.addon_metrics_interval, addon_gpu_interval;
  container_insights.gpu_interval).
"""

from __future__ import annotations

from dataclasses import dataclass

from .markers import CLUSTER_DIMENSION

NAMESPACE = "ContainerInsights"

CLUSTER = CLUSTER_DIMENSION
NAMESPACE_DIM, POD_OWNER, POD, CONTAINER = "Namespace", "PodName", "FullPodName", "ContainerName"
NODE, INSTANCE, INSTANCE_TYPE, DEVICE, SERVICE = "NodeName", "InstanceId", "InstanceType", "GpuDevice", "Service"

LEVELS = ("container", "pod", "node")


@dataclass(frozen=True)
class Mapping:
    """One DCGM field as the add-on publishes it: `<level>_<suffix>` = field value x `scale`.

    `unit` is the CloudWatch unit of the published value. gpudash reads it back in the unit
    the definitions and their thresholds mean (the DCGM field's own) by dividing by `scale`.
    """

    field: str
    suffix: str
    scale: float
    unit: str
    note: str = ""


MAPPINGS: tuple[Mapping, ...] = (
    Mapping("DCGM_FI_DEV_GPU_UTIL", "gpu_utilization", 1, "Percent"),
    Mapping("DCGM_FI_DEV_FB_USED_PERCENT", "gpu_memory_utilization", 100, "Percent",
            "DCGM reports Used/(Total - Reserved) as 0-1; the agent multiplies it by 100"),
    Mapping("DCGM_FI_DEV_FB_USED", "gpu_memory_used", 1024 * 1024, "Bytes", "DCGM's MiB times 1,048,576"),
    Mapping("DCGM_FI_DEV_FB_TOTAL", "gpu_memory_total", 1024 * 1024, "Bytes", "DCGM's MiB times 1,048,576"),
    Mapping("DCGM_FI_DEV_GPU_TEMP", "gpu_temperature", 1, "None", "degrees C"),
    Mapping("DCGM_FI_DEV_POWER_USAGE", "gpu_power_draw", 1, "None", "watts"),
    Mapping("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gpu_tensor_core_utilization", 1, "None",
            "DCGM's ratio 0-1 (the exporter's help text says %): renameMapForDcgm scales it by nothing"),
)

# A ratio of DCGM fields the add-on publishes as one metric: FB_USED / (FB_USED + FB_FREE) is
# Used / (Total - Reserved) (DCGM: Total = Used + Free + Reserved), i.e. FB_USED_PERCENT.
RATIOS: dict[tuple[str, frozenset[str]], str] = {
    ("DCGM_FI_DEV_FB_USED", frozenset({"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"})): "DCGM_FI_DEV_FB_USED_PERCENT",
}

# Dimension sets per level, exactly as the agent's EMF declarations list them.
GPU_DIMENSION_SETS: dict[str, tuple[tuple[str, ...], ...]] = {
    "container": ((CLUSTER,), (CLUSTER, NAMESPACE_DIM, POD_OWNER, CONTAINER),
                  (CLUSTER, NAMESPACE_DIM, POD_OWNER, POD, CONTAINER),
                  (CLUSTER, NAMESPACE_DIM, POD_OWNER, POD, CONTAINER, DEVICE)),
    "pod": ((CLUSTER,), (CLUSTER, NAMESPACE_DIM), (CLUSTER, NAMESPACE_DIM, SERVICE), (CLUSTER, NAMESPACE_DIM, POD_OWNER),
            (CLUSTER, NAMESPACE_DIM, POD_OWNER, POD), (CLUSTER, NAMESPACE_DIM, POD_OWNER, POD, DEVICE)),
    "node": ((CLUSTER,), (CLUSTER, NODE, INSTANCE), (CLUSTER, NODE, INSTANCE, INSTANCE_TYPE, DEVICE)),
}

# Capacity metrics (from the kubelet / API server, not DCGM), with their own sets.
POD_CAPACITY = ("pod_gpu_request", "pod_gpu_limit", "pod_gpu_usage_total", "pod_gpu_reserved_capacity")
NODE_GPU_LIMIT = "node_gpu_limit"  # a node's nvidia.com/gpu capacity; published only where it is not 0
NODE_CAPACITY = (NODE_GPU_LIMIT, "node_gpu_usage_total", "node_gpu_reserved_capacity",
                 "node_gpu_unreserved_capacity", "node_gpu_available_capacity")
CAPACITY_DIMENSION_SETS: dict[str, tuple[tuple[str, ...], ...]] = {
    **{name: ((CLUSTER, NAMESPACE_DIM, POD_OWNER), (CLUSTER,), (CLUSTER, NAMESPACE_DIM, POD_OWNER, POD),
              (CLUSTER, NAMESPACE_DIM, SERVICE)) for name in POD_CAPACITY},
    **{name: ((CLUSTER, NODE, INSTANCE), (CLUSTER,)) for name in NODE_CAPACITY},
}

# The cluster's node count, published by the agent's elected leader from the API server
# (awscontainerinsightreceiver k8sapiserver `getClusterMetrics`; kubernetes.go
# `getClusterMetricDeclarations`): the data-missing alarm reads it as "the add-on's agent runs".
CLUSTER_NODE_COUNT = "cluster_node_count"
# Each DaemonSet's status, also from the leader (k8sapiserver `getDaemonSetMetrics`: PodName is the DaemonSet's
# name): its available and unavailable pods, whose sum is the nodes it should run on. The agent declares them as
# daemonset_status_number_* (kubernetes.go `getDaemonSetMetricDeclarations`, with enhanced observability);
# receivers up to at least the fork's 2024-12 aws-cwa-dev branch name the fields status_replicas_*, which the
# Deployment declaration (`getDeploymentMetricDeclarations`) publishes with the same sets. Both are read.
DAEMONSET_COUNTS = ("daemonset_status_number_available", "daemonset_status_number_unavailable")
DAEMONSET_COUNTS_EARLIER = ("status_replicas_available", "status_replicas_unavailable")
WORKLOAD_SET = (CLUSTER, NAMESPACE_DIM, POD_OWNER)
CLUSTER_DIMENSION_SETS: dict[str, tuple[tuple[str, ...], ...]] = {
    CLUSTER_NODE_COUNT: ((CLUSTER,),),
    **{name: (WORKLOAD_SET, (CLUSTER,)) for name in DAEMONSET_COUNTS + DAEMONSET_COUNTS_EARLIER}}

# What runs in the cluster (the add-on's chart and the CloudWatch agent operator's manifests).
ADDON_NAME = "amazon-cloudwatch-observability"
ADDON_NAMESPACE = "amazon-cloudwatch"
AGENT_DAEMONSET = "cloudwatch-agent"  # AmazonCloudWatchAgent `cloudwatch-agent`, mode daemonset
EXPORTER_DAEMONSET = "dcgm-exporter"  # DcgmExporter `dcgm-exporter`
EXPORTER_SERVICE_LABEL = ("k8s-app", "dcgm-exporter-service")
COMPONENT_LABEL = "app.kubernetes.io/component"  # the operator's selector label on each workload's pods
AGENT_COMPONENT, EXPORTER_COMPONENT = "amazon-cloudwatch-agent", "dcgm-exporter"


def metric_name(level: str, mapping: Mapping) -> str:
    return f"{level}_{mapping.suffix}"


def by_field() -> dict[str, Mapping]:
    return {m.field: m for m in MAPPINGS}


def published_sets() -> dict[str, tuple[tuple[str, ...], ...]]:
    """{CloudWatch metric name: the dimension sets it is published with}: every GPU metric of the add-on, and
    the cluster metric the data-missing alarm reads."""
    result = {metric_name(level, m): GPU_DIMENSION_SETS[level] for m in MAPPINGS for level in LEVELS}
    result.update(CAPACITY_DIMENSION_SETS)
    result.update(CLUSTER_DIMENSION_SETS)
    return result

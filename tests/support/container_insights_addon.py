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


def datapoints(cluster: str, first: int, last: int, gpus=FLEET) -> list[Datapoint]:
    """What CloudWatch stores for collections at t = first..last seconds (multiples of 60)."""
    result = []
    for t in range(first, last + 1, EVERY):
        k = t // STEP
        for gpu in gpus:
            labels = attributes(cluster, gpu)
            for field, (name, scale) in RENAMED.items():
                published = reading(field, gpu, k) * scale
                for level in ("container", "pod", "node") if gpu.held else ("node",):
                    for dims in DECLARATIONS[level]:
                        if all(d in labels for d in dims):
                            result.append(Datapoint(NAMESPACE, f"{level}_{name}",
                                                    tuple(sorted((d, labels[d]) for d in dims)), float(t), published))
    return result

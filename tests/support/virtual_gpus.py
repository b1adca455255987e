"""A fleet whose exporters run with and without KUBERNETES_VIRTUAL_GPUS, as they write it, and its truth.

The payload shape comes from dcgm-exporter's source (github.com/NVIDIA/dcgm-exporter, tag 4.5.3-4.8.2 and main):

* `internal/pkg/transformation/kubernetes.go` `PodMapper.Process` with `KubernetesVirtualGPUs`: for each
  field and each GPU (or MIG instance) pods hold, a per-process field (`process_metrics.go`
  `isPerProcessMetric`: `DCGM_FI_DEV_GPU_UTIL` and `DCGM_FI_DEV_FB_USED` only) is written as "the original
  device-level metric" - no pod, namespace, container - followed by `createPerProcessMetrics`' copies:
  one per pod holding the device, with `pod`, `namespace`, `container`, always `pod_uid`, `vgpu` when the
  pod's device id names a replica (`GPU-...::N`), and as value the sum over the pod's processes
  (`buildPodValueMap`: NVML's per-process SM utilization, per-process memory / 2^20 MiB), "0" for a pod with no
  process on the GPU (`buildIdlePodValues`). Every other field is written once per holding pod, the device's
  value with `pod`, `namespace`, `container` and `vgpu` (`pod_uid` only with KUBERNETES_ENABLE_POD_UID), and
  no device-level series. A GPU no pod holds keeps its device-level series ("Preserve the original
  device-level metric for GPUs not currently used by any pod").
* tag 4.5.2-4.8.1 (before per-process metrics; the mid-upgrade node): with the setting on, every field of a
  held GPU is written once per pod, each copy the device's value with `pod_uid` and `vgpu`; and a GPU no pod
  holds loses its series when another GPU of the node is held (the copies replace the field's whole list).
* without the setting (`toDeviceToPod`): one series per GPU, with the labels of one pod holding it.

`truth` answers a neutral query from the facts (device readings, each pod's own share), never from a payload.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean

from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels

UTIL, FB_USED, FB_FREE = "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"
TEMP, POWER = "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"
FIELDS = (UTIL, FB_USED, FB_FREE, TEMP, POWER)
PER_PROCESS = (UTIL, FB_USED)  # what the exporter splits per process (process_metrics.go)


@dataclass(frozen=True)
class Holder:
    namespace: str
    pod: str
    util: float  # its processes' share of the GPU (what a per-process copy carries)
    fb_used: float
    vgpu: str | None = None


@dataclass(frozen=True)
class Gpu:
    index: int
    util: float
    fb_used: float
    fb_free: float
    temp: float
    power: float
    holders: tuple[Holder, ...] = ()

    def reading(self, field: str) -> float:
        return {UTIL: self.util, FB_USED: self.fb_used, FB_FREE: self.fb_free, TEMP: self.temp,
                POWER: self.power}[field]


@dataclass(frozen=True)
class Node:
    name: str
    mode: str  # "per-process" (4.5.3+, setting on), "copies" (4.5.2, setting on), "off" (setting off)
    gpus: tuple[Gpu, ...]

    @property
    def exporter_pod(self) -> str:
        return f"nvidia-dcgm-exporter-{self.name[-3:]}"


FLEET = (
    Node("gpu-node-on", "per-process", (
        # three pods time-slice GPU 0: 90 % busy, their processes 30 %, 25 % and none
        Gpu(0, 90, 30000, 10000, 71, 250, (Holder("team-a", "ts-0", 30, 12000, "0"),
                                           Holder("team-a", "ts-1", 25, 9000, "1"),
                                           Holder("team-b", "ts-0", 0, 0, "2"))),
        Gpu(1, 60, 20000, 20000, 65, 200, (Holder("team-c", "solo", 58, 19000),)),  # a whole GPU, one pod
        Gpu(2, 0, 300, 39700, 40, 50),  # no pod
        # two pods share GPU 3 by MPS: their processes run at once, and NVML samples them apart from the device,
        # so one pod's share of utilization reads above the device's own 50 % in the same scrape
        Gpu(3, 50, 16000, 24000, 60, 150, (Holder("team-f", "mps-a", 55, 9000, "0"),
                                           Holder("team-f", "mps-b", 20, 6000, "1"))),
    )),
    Node("gpu-node-off", "off", (
        Gpu(0, 70, 25000, 15000, 68, 220, (Holder("team-d", "train", 70, 25000),)),
        Gpu(1, 0, 200, 39800, 38, 40),
    )),
    # mid-upgrade: still 4.5.2 with the setting on, two pods time-slicing its only GPU
    Node("gpu-node-old", "copies", (
        Gpu(0, 80, 39200, 800, 75, 180, (Holder("team-e", "a", 40, 20000, "0"), Holder("team-e", "b", 40, 19200, "1"))),
    )),
)


def _labels(node: Node, gpu: Gpu) -> str:
    return (f'gpu="{gpu.index}",UUID="GPU-{node.name}-{gpu.index}",pci_bus_id="00000000:{gpu.index + 16:02X}:00.0",'
            f'device="nvidia{gpu.index}",modelName="NVIDIA A10G",Hostname="{node.name}",'
            f'DCGM_FI_DRIVER_VERSION="570.133.20"')


def _pod(holder: Holder, uid: bool) -> str:
    text = f',container="main",namespace="{holder.namespace}",pod="{holder.pod}"'
    if uid:
        text += f',pod_uid="uid-{holder.namespace}-{holder.pod}"'
    return text + (f',vgpu="{holder.vgpu}"' if holder.vgpu is not None else "")


def _series(node: Node, gpu: Gpu, field: str) -> list[tuple[str, float]]:
    """(labels, value) of each series the node's exporter writes for one GPU and field."""
    device = _labels(node, gpu)
    value = gpu.reading(field)
    if not gpu.holders:
        if node.mode == "copies" and any(g.holders for g in node.gpus):
            return []  # 4.5.2 drops it (the copies of the held GPUs replace the field's list)
        return [(device, value)]
    if node.mode == "off":
        return [(device + _pod(gpu.holders[0], False), value)]
    if node.mode == "copies":
        return [(device + _pod(h, True), value) for h in gpu.holders]
    if field in PER_PROCESS:
        share = {UTIL: lambda h: h.util, FB_USED: lambda h: h.fb_used}[field]
        return [(device, value), *((device + _pod(h, True), share(h)) for h in gpu.holders)]
    return [(device + _pod(h, False), value) for h in gpu.holders]


def payload(node: Node) -> str:
    lines = []
    for field in FIELDS:
        lines += [f"# HELP {field} {field}.", f"# TYPE {field} gauge"]
        lines += [f"{field}{{{labels}}} {value:g}" for gpu in node.gpus for labels, value in _series(node, gpu, field)]
    return "\n".join(lines) + "\n"


BLANK = "9223372036854775792"  # DCGM_INT64_BLANK (0x7ffffffffffffff0; both fields are int64): no reading


def own_series_blank(node: Node, gpus: tuple[int, ...]) -> str:
    """The node's payload with the own series (the one without a pod, 4.5.3 and later) of the GPUs `gpus` (indexes)
    reading DCGM's blank in both fields the exporter splits per process; their pods' shares as in `payload`."""
    lines = []
    for line in payload(node).splitlines():
        series, _, value = line.rpartition(" ")
        if line.startswith(tuple(f"{field}{{" for field in PER_PROCESS)) and "pod=" not in series and \
                any(f'UUID="GPU-{node.name}-{index}"' in series for index in gpus):
            value = BLANK
        lines.append(f"{series} {value}" if series else line)
    return "\n".join(lines) + "\n"


def series_count(field: str) -> int:
    return sum(len(_series(node, gpu, field)) for node in FLEET for gpu in node.gpus)


# --- truth ------------------------------------------------------------------------------------

def _visible(node: Node, gpu: Gpu) -> bool:
    """A GPU the exporter writes at all (4.5.2 loses an idle GPU beside a held one)."""
    return bool(_series(node, gpu, TEMP))


def pod_value(node: Node, gpu: Gpu, holder: Holder, field: str) -> float:
    """A pod's value of a field: its own share where the exporter gives it (4.5.3+ with the setting on),
    else the copy the exporter writes (the device's reading: 4.5.2's copies of a shared GPU carry it too)."""
    if node.mode == "per-process" and field in PER_PROCESS:
        return {UTIL: holder.util, FB_USED: holder.fb_used}[field]
    return gpu.reading(field)


def truth(query) -> dict[str, float]:
    """Legend -> value of a neutral query (by nothing, by node and GPU, or by pod) over the fleet."""
    aggregate = {"avg": mean, "sum": sum, "max": max, "min": min, "count": len}[query.aggregation]

    def value(node: Node, gpu: Gpu, holder: Holder | None) -> float:
        if query.aggregation == "count":
            return 1.0
        whole = holder is None or query.whole_gpu
        top = gpu.reading(query.metric) if whole else pod_value(node, gpu, holder, query.metric)
        if query.over:
            return top / sum(gpu.reading(m) for m in query.over)  # the whole GPU's total
        return top

    groups: dict[str, list[float]] = {}
    for node in FLEET:
        for gpu in node.gpus:
            if not _visible(node, gpu):
                continue
            if "pod" in query.by:
                for holder in gpu.holders:
                    pod = f"Pod {holder.namespace}/{holder.pod}" + (f" GPU {gpu.index}" if "gpu" in query.by else "")
                    groups.setdefault(pod, []).append(value(node, gpu, holder))
            elif query.by:
                groups.setdefault(f"{node.name} GPU {gpu.index}", []).append(value(node, gpu, None))
            else:
                groups.setdefault("", []).append(value(node, gpu, None))
    return {legend: float(aggregate(values)) for legend, values in groups.items()}


STEP, END = 30, 2100  # seven 5-minute periods of 30 s scrapes
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"


def published_points(files) -> list:
    """The datapoints the build's agent publishes of the fleet, scraped every STEP until END."""
    config, job = agent_config(files[AGENT_FILE])
    return Agent(config, job).run([Scrape(float(k * STEP), payload(node), target_labels(job, node.name))
                                   for k in range(-1, END // STEP) for node in FLEET])

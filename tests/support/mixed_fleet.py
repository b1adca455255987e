"""A mixed GPU fleet as exporters really write it, and the truth about it.

The fleet is described by facts about GPUs (a GPU's power, the pods that hold
its MIG instances, ...). `payload` writes what each node's DCGM exporter would
serve: labels in the exporter's order, `Hostname` or `hostname` depending on the
exporter version, the exporter pod's name in `Hostname` where NODE_NAME is not
set, one series per MIG instance with `GPU_I_PROFILE`/`GPU_I_ID` and the device
fields repeated on every instance (dcgm-exporter issues #50, #216, #272, #561),
no pod labels on GPUs that no pod holds, and DCGM's "not supported" sentinel. A GPU pods share by time-slicing
or MPS is written once, under one of its pods, by an exporter without KUBERNETES_VIRTUAL_GPUS (`Node.labelled`):
the exporter maps each device to the pods kubelet's pod-resources API lists for it, and a later pod of one device
overwrites an earlier one (dcgm-exporter issues #307: "Device to pod mapping: map[nvidia0:{Name:...vkkcb}
nvidia0/vgpu0:... nvidia0/vgpu1:...]", metrics for one pod only; #340; PR #432: the pod "not guaranteed to be
consistently associated" across scrapes, as kubelet's order is not fixed). The model writes the last pod it lists
(a fixed one; the other sharing pods are named by no series: `unnamed`) or, on a node that `moves`, the sharing
pods in turn, each for `moves` scrapes (scrape k names pod k // moves mod n: every pod is named, one at a time). An
exporter of 4.4 or later run with --kubernetes-enable-pod-uid and --kubernetes-enable-pod-labels adds to each
pod's copy the pod's UID (`pod_uid`) and the pod's own Kubernetes labels, their names sanitized (dcgm-exporter
internal/pkg/transformation/kubernetes.go: `metric.Attributes[uidAttribute] = podInfo.UID`, and the pod's
labels through `utils.SanitizeLabelName`), so two pods' copies of one GPU differ by more than the workload's
labels.
Counters carry their own timestamps on a whole-second grid and grow linearly with them, so a
rate over any window with a sample at each end is exact whatever the machine's load
(`settled_time` finds such an instant).
`truth` answers a neutral query from the facts, never from the payload.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from statistics import mean

from generator.promql import taken_within

NOT_SUPPORTED = "9223372036854775794"  # DCGM's int64 "not supported" sentinel
INT64_BLANK = "9223372036854775792"  # DCGM_INT64_BLANK (0x7ffffffffffffff0): a value the device could not read
# what dcgm-exporter 4.5.3 and later split per process with KUBERNETES_VIRTUAL_GPUS (Node.per_process)
PER_PROCESS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED")

# DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL is DCGM's throughput in MB/s (a level), served typed gauge as the bundled CSV types it
# (tests/integration/test_nvlink_throughput_level.py serves it typed counter, as NVIDIA's CSVs type it)
GAUGES = ("DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
          "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_XID_ERRORS",
          "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")
COUNTERS = ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER")
# Where each counter starts
COUNTER_START: dict[str, int] = {}
FIELDS = GAUGES + COUNTERS
# What each field is a fact about: the whole device, or one MIG instance.
DEVICE = {"DCGM_FI_DEV_SM_CLOCK": "sm_clock", "DCGM_FI_DEV_MEMORY_TEMP": "memory_temp",
          "DCGM_FI_DEV_GPU_TEMP": "temp", "DCGM_FI_DEV_POWER_USAGE": "power", "DCGM_FI_DEV_XID_ERRORS": "xid",
          "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "energy_mw", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "replays_per_s",
          "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "nvlink_mb_per_s"}
INSTANCE_SUM = {"DCGM_FI_DEV_FB_USED": "fb_used", "DCGM_FI_DEV_FB_FREE": "fb_free"}
INSTANCE_AVG = {"DCGM_FI_PROF_GR_ENGINE_ACTIVE": "engine"}


@dataclass(frozen=True)
class Instance:
    """A MIG instance (`id` set) or a whole GPU (`id` None)."""

    fb_used: float
    fb_free: float
    engine: float  # ratio of time the graphics engine was busy
    pod: tuple[str, str] | None = None  # (namespace, pod) holding it
    id: str | None = None
    profile: str | None = None
    mig_util: str | None = None  # what a MIG series carries as GPU_UTIL: None (absent), "0", the sentinel
    # more pods sharing it by time-slicing or MPS (the facts). What the exporter writes for them depends on its
    # setting: Node.labelled.
    also: tuple[tuple[str, str], ...] = ()
    # on an exporter writing per-process shares (Node.per_process), the instance's own series (without a pod) of the
    # fields split per process reads DCGM's blank while pods hold it; their shares read as ever
    own_blank: bool = False

    def pods(self) -> tuple[tuple[str, str], ...]:
        return ((self.pod,) if self.pod else ()) + self.also


@dataclass(frozen=True)
class Gpu:
    index: int
    temp: float
    power: float
    sm_clock: float
    xid: float
    energy_mw: float  # energy counter growth, mJ per second
    replays_per_s: float | None  # None: the counter reads "not supported"
    memory_temp: float | None  # None: "not supported" (GDDR boards)
    instances: tuple[Instance, ...]
    util: float = 0.0  # GPU utilization; MIG GPUs do not report it
    nvlink_mb_per_s: float = 40_000  # NVLink traffic, MB/s (DCGM's throughput)
    model: str = "NVIDIA A10G"

    @property
    def mig(self) -> bool:
        return any(i.id is not None for i in self.instances)

    def holders(self) -> set[tuple[str, str]]:
        return {pod for i in self.instances for pod in i.pods()}


@dataclass(frozen=True)
class Node:
    name: str  # the Kubernetes node
    spelling: str | None  # "Hostname" (exporter releases), "hostname" (main branch), None (--no-hostname)
    exporter_pod: str
    gpus: tuple[Gpu, ...]
    node_name_set: bool = True  # False: the exporter writes its own pod name as Hostname
    pod_identity: bool = False  # True: --kubernetes-enable-pod-uid and --kubernetes-enable-pod-labels (4.4+)
    # True: the exporter runs with KUBERNETES_VIRTUAL_GPUS, before 4.5.3 (one copy per sharing pod, each the
    # device's value, no `vgpu` label; tests/support/virtual_gpus.py models 4.5.3's per-process copies)
    virtual_gpus: bool = False
    # True (with virtual_gpus): dcgm-exporter 4.5.3 or later, which writes GPU utilization and framebuffer used of a
    # held GPU (instance) as its own series, without a pod, beside each holding pod's share (`share`; the source:
    # tests/support/virtual_gpus.py's docstring); every other field one copy per pod, the device's value
    per_process: bool = False
    # m > 0 (without KUBERNETES_VIRTUAL_GPUS): the pod a shared GPU is named under changes every m scrapes (1: at
    # every scrape), the sharing pods in turn (kubelet's order is not fixed: #340, PR #432); 0: it never changes
    moves: int = 0

    def labelled(self, instance: Instance, scrape: int | None = None) -> tuple[tuple[str, str], ...]:
        """The pods the exporter writes the instance's series under at scrape `scrape`: each pod holding it with
        KUBERNETES_VIRTUAL_GPUS, else one (none: no pod holds it): the last pod kubelet lists for the device, or
        on a node that `moves` pod `scrape // moves` mod n; `scrape` None: every pod some scrape names."""
        pods = instance.pods()
        if self.virtual_gpus or (self.moves and scrape is None):
            return pods
        return pods[scrape // self.moves % len(pods):][:1] if self.moves and pods else pods[-1:]

    @property
    def written_hostname(self) -> str:
        return self.name if self.node_name_set else self.exporter_pod


def _whole(pod=None, **values) -> tuple[Instance, ...]:
    return (Instance(pod=pod, **values),)


FLEET = (
    # main-branch exporter: `hostname`; one busy GPU, one GPU no pod holds
    Node("gpu-node-a", "hostname", "nvidia-dcgm-exporter-a1b2c", (
        Gpu(0, temp=84, power=250, sm_clock=1710, xid=0, energy_mw=250_000, replays_per_s=50, memory_temp=61,
            util=90, instances=_whole(("team-a", "worker-0"), fb_used=9000, fb_free=15000, engine=0.85)),
        Gpu(1, temp=40, power=60, sm_clock=210, xid=0, energy_mw=60_000, replays_per_s=0, memory_temp=40,
            util=0, instances=_whole(None, fb_used=0, fb_free=24000, engine=0.0)),
    )),
    # release exporter: `Hostname`; the same pod name as on node a, in another namespace; an XID
    Node("gpu-node-b", "Hostname", "nvidia-dcgm-exporter-d3e4f", (
        Gpu(0, temp=75, power=300, sm_clock=1410, xid=43, energy_mw=300_000, replays_per_s=0, memory_temp=70,
            util=35, model="NVIDIA A100 80GB PCIe",
            instances=_whole(("team-b", "worker-0"), fb_used=40000, fb_free=41000, engine=0.3)),
    )),
    # old exporter without NODE_NAME: its own pod name in Hostname; a counter and a gauge "not supported"
    Node("gpu-node-c", "Hostname", "nvidia-dcgm-exporter-48cwd", (
        Gpu(0, temp=60, power=150, sm_clock=1200, xid=0, energy_mw=150_000, replays_per_s=None, memory_temp=None,
            util=2, instances=_whole(("team-a", "infer-1"), fb_used=2000, fb_free=20000, engine=0.02)),
    ), node_name_set=False),
    # time-slicing: one GPU shared by two pods, the exporter (without KUBERNETES_VIRTUAL_GPUS, the GPU operator's
    # default) writing its series once, under ts-0 at even scrapes and ts-1 at odd ones (Node.labelled); idle (3 %):
    # both pods hold an idle GPU
    Node("gpu-node-ts", "hostname", "nvidia-dcgm-exporter-t7u8v", (
        Gpu(0, temp=50, power=200, sm_clock=1500, xid=0, energy_mw=200_000, replays_per_s=0, memory_temp=50,
            util=3, instances=_whole(("team-d", "ts-0"), fb_used=12000, fb_free=12000, engine=0.03,
                                      also=(("team-d", "ts-1"),))),
    ), moves=1),
    # two exporters run with --no-hostname: without a node label their GPUs 0 must stay apart
    Node("gpu-node-e", None, "nvidia-dcgm-exporter-e9f0g", (
        Gpu(0, temp=55, power=180, sm_clock=1500, xid=0, energy_mw=180_000, replays_per_s=0, memory_temp=50,
            util=70, instances=_whole(("team-e", "solo-0"), fb_used=3000, fb_free=21000, engine=0.7)),
    )),
    Node("gpu-node-f", None, "nvidia-dcgm-exporter-f1g2h", (
        Gpu(0, temp=56, power=190, sm_clock=1500, xid=0, energy_mw=190_000, replays_per_s=0, memory_temp=50,
            util=71, instances=_whole(("team-e", "solo-1"), fb_used=4000, fb_free=20000, engine=0.71)),
    )),
    # a pod holding two whole GPUs of one node (averages and sums over its GPUs differ); a node and a
    # pod whose names hold dots, as EC2 node names and many pod names do
    Node("ip-10-0-3-7.ec2.internal", "hostname", "nvidia-dcgm-exporter-g3h4j", (
        Gpu(0, temp=66, power=280, sm_clock=1600, xid=0, energy_mw=280_000, replays_per_s=0, memory_temp=60,
            util=80, instances=_whole(("team-f", "trainer.v2-0"), fb_used=30000, fb_free=10000, engine=0.8)),
        Gpu(1, temp=62, power=220, sm_clock=1400, xid=0, energy_mw=220_000, replays_per_s=0, memory_temp=58,
            util=40, instances=_whole(("team-f", "trainer.v2-0"), fb_used=10000, fb_free=30000, engine=0.4)),
    )),
    # MIG: two A100s split into instances; device fields repeat on each instance
    Node("gpu-node-mig", "Hostname", "nvidia-dcgm-exporter-m5n6p", (
        Gpu(0, temp=70, power=350, sm_clock=1410, xid=0, energy_mw=350_000, replays_per_s=0, memory_temp=55,
            model="NVIDIA A100-SXM4-40GB", instances=(
                Instance(id="1", profile="3g.20gb", pod=("team-a", "mig-a"), fb_used=19600, fb_free=400,
                         engine=0.8, mig_util="0"),
                Instance(id="2", profile="3g.20gb", pod=("team-c", "mig-b"), fb_used=5000, fb_free=15000,
                         engine=0.4, mig_util="0"),
            )),
        Gpu(1, temp=91, power=150, sm_clock=1410, xid=0, energy_mw=150_000, replays_per_s=0, memory_temp=80,
            model="NVIDIA A100-SXM4-40GB", instances=(
                Instance(id="1", profile="4g.20gb", pod=("team-c", "mig-b"), fb_used=8000, fb_free=12000,
                         engine=0.6, mig_util=NOT_SUPPORTED),
                Instance(id="2", profile="3g.20gb", fb_used=0, fb_free=20000, engine=0.0),
            )),
    )),
)

# The fleet as a cluster saying exporter.mig: none runs it: its whole GPUs alone (the nodes that hold any).
WHOLE = tuple(node for node in (Node(n.name, n.spelling, n.exporter_pod, tuple(g for g in n.gpus if not g.mig))
                                for n in FLEET) if node.gpus)
# 4.4+ with the pods' UIDs and labels: a MIG GPU whose two instances two pods hold, a whole GPU (a fleet
# variant: FLEET + (POD_IDENTITY,))
POD_IDENTITY = Node("gpu-node-uid", "Hostname", "nvidia-dcgm-exporter-u1v2w", (
    Gpu(0, temp=60, power=250, sm_clock=1410, xid=0, energy_mw=250_000, replays_per_s=0, memory_temp=50,
        model="NVIDIA A100-SXM4-40GB", instances=(
            Instance(id="1", profile="3g.20gb", pod=("team-u", "train-0"), fb_used=10000, fb_free=10000,
                     engine=0.5, mig_util="0"),
            Instance(id="2", profile="3g.20gb", pod=("team-v", "infer-0"), fb_used=5000, fb_free=15000,
                     engine=0.3, mig_util="0"),
        )),
    Gpu(1, temp=40, power=100, sm_clock=1410, xid=0, energy_mw=100_000, replays_per_s=0, memory_temp=40,
        util=80, instances=_whole(("team-u", "train-1"), fb_used=20000, fb_free=20000, engine=0.8)),
), pod_identity=True)
STARTED = int(time.time())  # counters start here, on the whole second


def _labels(node: Node, gpu: Gpu, instance: Instance, pod: tuple[str, str] | None) -> str:
    parts = [f'gpu="{gpu.index}"', f'UUID="GPU-{node.name}-{gpu.index}"', f'pci_bus_id="00000000:{gpu.index:02X}:00.0"',
             f'device="nvidia{gpu.index}"', f'modelName="{gpu.model}"']
    if instance.id is not None:
        parts += [f'GPU_I_PROFILE="{instance.profile}"', f'GPU_I_ID="{instance.id}"']
    if node.spelling:
        parts.append(f'{node.spelling}="{node.written_hostname}"')
    parts.append('DCGM_FI_DRIVER_VERSION="535.161.08"')
    if pod:
        parts += ['container="main"', f'namespace="{pod[0]}"', f'pod="{pod[1]}"']
        if node.pod_identity:
            uid = hashlib.sha256("/".join(pod).encode()).hexdigest()
            parts += [f'pod_uid="{uid[:8]}-{uid[8:12]}-4{uid[13:16]}-8{uid[17:20]}-{uid[20:32]}"',
                      f'app_kubernetes_io_name="{pod[1].rsplit("-", 1)[0]}"', 'pod_template_hash="5d8f7c9b6"']
    return ",".join(parts)


def _value(metric: str, gpu: Gpu, instance: Instance, elapsed: int) -> str | None:
    if metric == "DCGM_FI_DEV_GPU_UTIL":
        return instance.mig_util if gpu.mig else f"{gpu.util:g}"
    if metric in INSTANCE_SUM or metric in INSTANCE_AVG:
        return f"{getattr(instance, (INSTANCE_SUM | INSTANCE_AVG)[metric]):g}"
    value = getattr(gpu, DEVICE[metric])
    if value is None:
        return NOT_SUPPORTED
    if metric in COUNTERS:  # whole numbers: exact in float64 (below 2^53)
        return f"{COUNTER_START.get(metric, 1_000_000_000) + int(value * elapsed)} {(STARTED + elapsed) * 1000}"
    return f"{value:g}"


def payload(node: Node, elapsed: int | None = None, interval: int = 1, scrape: int | None = None) -> str:
    """/metrics of the node's exporter now (or `elapsed` seconds after the counters started): counters
    stamped with the current whole second and grown linearly with it (two scrapes in one second write
    the same sample). `scrape`, the scrape's number, names a moving GPU's pod (Node.moves); a live exporter gives
    each scraper's own count (`served`), so the stored data names the sharing pods in turn whatever the load;
    None: `elapsed // interval` (scraped every `interval` seconds). A function of its arguments: each is written
    once."""
    elapsed = int(time.time()) - STARTED if elapsed is None else elapsed
    scrape = elapsed // interval if scrape is None else scrape
    if not node.moves:
        scrape = 0  # names the same pods at every scrape
    key = (node, elapsed, scrape)
    text = _PAYLOADS.get(key)
    if text is None:
        if len(_PAYLOADS) > 2_000:
            _PAYLOADS.clear()
        text = _PAYLOADS[key] = _payload(node, elapsed, scrape)
    return text


def served(node: Node):
    """The node's exporter as a live server answers (ReplayExporter(served(node), counted=True)): the counters at
    the current second, a moving GPU under the pod the scraper's own scrape count names. Scrape jobs sharing the
    exporter each send their own query string (`params`), as each counts its own scrapes."""
    return lambda number: payload(node, scrape=number)


_PAYLOADS: dict[tuple, str] = {}


def _payload(node: Node, elapsed: int, scrape: int) -> str:
    lines = []
    for metric in FIELDS:
        lines += [f"# HELP {metric} {metric}.", f"# TYPE {metric} {'counter' if metric in COUNTERS else 'gauge'}"]
        for gpu in node.gpus:
            for instance in gpu.instances:
                value = _value(metric, gpu, instance, elapsed)
                if value is not None:
                    lines += [f"{metric}{{{_labels(node, gpu, instance, pod)}}} {written}"
                              for pod, written in _copies(node, instance, metric, value, scrape)]
    return "\n".join(lines) + "\n"


def split(node: Node, metric: str) -> bool:
    """Whether the node's exporter splits the field per process (its own series beside each pod's share)."""
    return node.virtual_gpus and node.per_process and metric in PER_PROCESS


def share(instance: Instance, pod: tuple[str, str], value: float) -> float:
    """A pod's share of a field split per process: the n pods holding the instance split its value, the j-th of them
    (from 0) (j + 1) / (n (n + 1) / 2) of it (a lone pod all of it). A sentinel (a MIG instance's GPU utilization,
    which the agent's job drops) splits as 0."""
    pods = instance.pods()
    n = len(pods)
    return 0.0 if value >= 1e14 else value * (pods.index(pod) + 1) * 2 / (n * (n + 1))


def _copies(node: Node, instance: Instance, metric: str, value: str,
            scrape: int) -> list[tuple[tuple[str, str] | None, str]]:
    """(pod or None, value) of each series the node's exporter writes of the instance's field."""
    pods = node.labelled(instance, scrape)
    if split(node, metric) and pods:
        own = INT64_BLANK if instance.own_blank else value
        return [(None, own), *((pod, repr(share(instance, pod, float(value)))) for pod in pods)]
    return [(pod, value) for pod in pods or (None,)]


def reads_own(node: Node, instance: Instance, metric: str) -> bool:
    """Whether the instance has a reading of the field per GPU (instance): not where its own series reads DCGM's blank
    (Instance.own_blank), whatever its pods' shares read."""
    return not (split(node, metric) and instance.own_blank and instance.pods())


def moving(fleet: tuple[Node, ...] = FLEET) -> tuple[str, ...]:
    """The UUIDs of the GPUs whose series move from pod to pod (Node.moves): no series of theirs is sampled at every
    scrape."""
    return tuple(f"GPU-{node.name}-{gpu.index}" for node in fleet if node.moves for gpu in node.gpus
                 if any(len(i.pods()) > 1 for i in gpu.instances))


def stored(node: Node, prefixes: tuple[str, ...], steps: int, step: int, served=None) -> dict[str, list[str]]:
    """{series with the node attached: its values at each of `steps` scrapes `step` s apart ("_": none)} of the node's
    series whose line starts with one of `prefixes` (`FIELD{` for one field) as Prometheus stores them from `served(node, k)` (default: its payload at scrape k): a series a scrape
    leaves out (a moving pod label's) gets a staleness marker there, as Prometheus writes one (promtool's "stale")."""
    values: dict[str, list[str]] = {}
    for k in range(steps):
        text = served(node, k) if served else payload(node, k * step, step)
        for line in text.splitlines():
            if not line.startswith("#") and line.startswith(prefixes):
                series, value = line.rsplit(" ", 1)
                values.setdefault(f'{series[:-1]},node="{node.name}"}}', ["_"] * steps)[k] = value
    for readings in values.values():
        for k in range(1, steps):
            if readings[k] == "_" and readings[k - 1] not in ("_", "stale"):
                readings[k] = "stale"
    return values


def read_at_a_step(selector: str, window: int) -> str:
    """Per series of `selector`, the whole-second steps of the `window` seconds up to the instant that read it (a
    sample within the step's last second, no staleness marker since): what the alerts judged at 1 s steps see."""
    return f"count_over_time(({selector} and {taken_within(selector, 1)})[{window}s:1s])"


def settled_time(prometheus, window: int, series: int, timeout: float = 120, fleet: tuple[Node, ...] = FLEET,
                 named: int = 0) -> int:
    """The latest whole second T at which each of the `series` counter series of GPUs whose series do not move
    (`moving`) has a sample at T and samples back to the start of a `window`-second range ending at T: a rate over
    that range extrapolates a linear counter exactly (Prometheus 2's closed and 3's left-open ranges alike); and
    where `named` is given, `named` series of the moving GPUs' (one per sharing pod, per cluster) are each read at a
    whole-second step of that range: every sharing pod was named within it (a loaded machine's scrape that timed out
    was answered, and counted, and stored nothing: consecutive stored scrapes may name one pod) and a step saw it.
    A step reads a series with a sample within the last second and no staleness marker since: a scrape started
    late (its sample stamped just past a whole second) and the next on time (stamped before the next whole second,
    ending the series with a marker) leave that sample to no step. At 1 s scrapes judged at 1 s steps that happens
    on a loaded machine; where the fleet settles after three scrapes, one such sample is all a sharing pod has, and
    the alerts judged at 1 s steps never see that pod. (At the 30 s scrapes the rules are made for, read at 5 s
    steps, two scrapes would have to come 25 s apart from their schedule.)"""
    deadline = time.monotonic() + timeout
    selector = f'{COUNTERS[0]}{{UUID!~"{"|".join(moving(fleet))}"}}'
    sharing = f'DCGM_FI_DEV_GPU_TEMP{{UUID=~"{"|".join(moving(fleet))}"}}'
    read = read_at_a_step(sharing, window)
    while True:
        latest = int(time.time())
        for at in range(latest, latest - 10, -1):
            counts = prometheus.query(f"count_over_time({selector}[{window}s]) and timestamp({selector}) == {at}",
                                      at=at)
            if len(counts) == series and all(int(s["value"][1]) >= window for s in counts) and \
                    (not named or len(prometheus.query(read, at=at)) == named):
                return at
        if time.monotonic() > deadline:
            raise AssertionError(f"no instant in the last 10 s with {series} counter series sampled every second")
        time.sleep(0.5)


# --- truth ----------------------------------------------------------------------------------

def _per_gpu(metric: str, gpu: Gpu, instances: list[Instance], collected: frozenset[str], node: Node | None = None,
             pod: tuple[str, str] | None = None) -> float | None:
    """What the field says about one GPU, for the instances a group holds on it (None: unknown); on a node whose
    exporter splits the field per process, `pod`'s shares (a pod's group), or the instances with a reading of their own
    (a group of GPUs)."""
    if node is not None and split(node, metric) and not (gpu.mig and metric == "DCGM_FI_DEV_GPU_UTIL"):
        if pod is not None:
            return sum(share(i, pod, gpu.util if metric == "DCGM_FI_DEV_GPU_UTIL" else i.fb_used)
                       for i in instances if pod in i.pods())
        instances = [i for i in instances if reads_own(node, i, metric)]
        if not instances:
            return None
    if metric == "DCGM_FI_DEV_GPU_UTIL":
        if not gpu.mig:
            return gpu.util
        # MIG reports no GPU utilization: only the engine activity of its instances tells it
        return mean(i.engine * 100 for i in instances) if "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in collected else None
    if metric in INSTANCE_SUM:
        return sum(getattr(i, INSTANCE_SUM[metric]) for i in instances)
    if metric in INSTANCE_AVG:
        return mean(getattr(i, INSTANCE_AVG[metric]) for i in instances)
    return getattr(gpu, DEVICE[metric])


def _aggregate(how: str, values: list[float]) -> float:
    return {"avg": mean, "sum": sum, "max": max, "min": min, "count": len}[how](values)


def truth(query, node_names: dict[str, str], clusters: tuple[str, ...] = ("",),
          collected: frozenset[str] = frozenset(FIELDS), fleet: tuple[Node, ...] = FLEET,
          scrape: int | dict[str, int] | None = None) -> dict[str, float]:
    """Expected {legend: value} of a neutral query over the whole fleet.

    `node_names` maps a Kubernetes node to the name the scrape path can know it by; `clusters`
    names the clusters that each run this same fleet (one Prometheus holding them all); `fleet`, a
    variant of FLEET; `scrape`, the scrape whose readings an instant shows (per pod: a moving GPU under the one
    pod that scrape names; per cluster: {cluster: scrape}), None: over scrapes that name each pod (a moving GPU
    under each of its pods).
    """
    keys = set(query.by) - {"cluster"}
    groups: dict[str, list[tuple[float, float]]] = {}  # legend -> (value, its share's total) per GPU
    for cluster in clusters:
        prefix = f"{cluster} " if "cluster" in query.by else ""
        _add_cluster(query, keys, node_names, prefix, groups, collected, fleet,
                     scrape.get(cluster) if isinstance(scrape, dict) else scrape)
    if query.over and query.aggregation == "avg" and "pod" in keys and "gpu" not in keys \
            and all(name in INSTANCE_SUM for name in (query.metric, *query.over)):
        # a pod's share of the memory it holds: its GPUs' used over their total (memory adds up), not their mean
        return {legend: sum(n for n, _ in values) / sum(d for _, d in values) for legend, values in groups.items()}
    return {legend: _aggregate(query.aggregation, [v / d if query.over else v for v, d in values])
            for legend, values in groups.items()}


def _add_cluster(query, keys: set[str], node_names: dict[str, str], prefix: str,
                 groups: dict[str, list[tuple[float, float]]], collected: frozenset[str], fleet: tuple[Node, ...],
                 scrape: int | None) -> None:
    for node in fleet:
        for gpu in node.gpus:
            if "pod" in keys:  # per pod: the pods the exporter names (a pod it names on no series has no view)
                named = _named(node, gpu, scrape)
                parts = [(holder, [i for i in gpu.instances if holder in node.labelled(i, scrape)]) for holder in named]
            elif "mig_instance" in keys:
                parts = [(i, [i]) for i in gpu.instances if i.id is not None]
            else:
                parts = [(None, list(gpu.instances))]
            for holder, instances in parts:
                total = 1.0  # a share's total (query.over), else 1
                if query.aggregation == "count":
                    value = 1.0
                else:
                    pod = holder if "pod" in keys else None
                    value = _per_gpu(query.metric, gpu, instances, collected, node, pod)
                    if value is None:
                        continue  # not supported: no data
                    if query.over:
                        # the GPU's total: the device's values (a pod's share over the memory of the GPU it holds)
                        total = sum(_per_gpu(m, gpu, instances, collected) for m in query.over)
                if "pod" in keys:
                    legend = f"Pod {holder[0]}/{holder[1]}" + (f" GPU {gpu.index}" if "gpu" in keys else "")
                elif keys == {"node", "gpu", "mig_instance"}:
                    legend = f"{node_names[node.name]} GPU {gpu.index} MIG {holder.id} ({holder.profile})"
                elif keys == {"node", "gpu"}:
                    legend = f"{node_names[node.name]} GPU {gpu.index}"
                elif not keys:
                    legend = ""
                else:
                    raise NotImplementedError(query.by)
                groups.setdefault(prefix + legend if legend else legend, []).append((value, total))


def _named(node: Node, gpu: Gpu, scrape: int | None = None) -> set[tuple[str, str]]:
    """The pods the exporter names on the GPU's series (at `scrape`; None: at some scrape)."""
    return {pod for i in gpu.instances for pod in node.labelled(i, scrape)}


def unnamed(fleet: tuple[Node, ...] = FLEET) -> set[tuple[str, str]]:
    """Pods that hold a GPU no series names them on: a time-sliced GPU's other pods where an exporter without
    KUBERNETES_VIRTUAL_GPUS names the same pod at every scrape (on a node that `moves`, none).
    No per-pod view, variable or alarm can show them (docs/cloudwatch.md: "A GPU's counters when pods share it";
    `gpudash verify` warns, `GPUs shared by pods`)."""
    return {pod for node in fleet for gpu in node.gpus for pod in gpu.holders() - _named(node, gpu)}


def nodes(fleet: tuple[Node, ...] = FLEET) -> set[str]:
    return {node.name for node in fleet}


def namespaces_and_pods(fleet: tuple[Node, ...] = FLEET) -> set[tuple[str, str]]:
    """The pods the exporters name, with their namespaces (`unnamed`: the pods that hold a GPU and are not)."""
    return {holder for node in fleet for gpu in node.gpus for holder in _named(node, gpu)}


def scraped_series(fields: tuple[str, ...], step: int, steps: int, fleet=FLEET) -> list[dict[str, str]]:
    """`fleet`'s `fields` as Prometheus stores them from `steps` scrapes `step` seconds apart (promtool input series),
    each series with its node."""
    values: dict[str, list[str]] = {}
    for node in fleet:
        for k in range(steps):
            for line in payload(node, k * step, step).splitlines():
                if line.startswith(tuple(f"{field}{{" for field in fields)):
                    series, value = line.rsplit(" ", 1)
                    values.setdefault(f'{series[:-1]},node="{node.name}"}}', ["_"] * steps)[k] = value
    return [{"series": series, "values": " ".join(readings)} for series, readings in values.items()]

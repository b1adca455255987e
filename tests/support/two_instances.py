"""A pod holding two MIG instances of one GPU, and the truth about what its rules and alarms read.

team-q/dual asks for a whole GPU and for two 1g.10gb slices, which land on one A100 (both instances of GPU 1 on
gpu-node-dual); team-q/other holds that A100's third instance. The exporter writes one series per MIG instance, with
GPU_I_PROFILE and GPU_I_ID, and repeats the device's fields (power, temperature, clocks) on each, the same value on
each instance's series (tests/support/mixed_fleet.payload, after dcgm-exporter issues #50, #216, #272, #561). The values are exact in binary (a mean of them
is the same float whatever the order of the sum).

The truth, per group that keeps the pod (by pod, by (pod, gpu)) and per namespace:
- a count counts GPUs: a GPU once however many of its instances a group holds (dual: 2 GPUs, 1 on GPU 1);
- a field of the whole device (power, temperature) is one reading per GPU the group holds, aggregated over those GPUs
  (dual: 300 + 200 = 500 W, mean 250 W; namespace team-q: the same two GPUs, 500 W);
- a field of the instance (framebuffer used, graphics engine activity) is read per GPU the group holds: the group's
  use of a GPU is the sum (framebuffer) or the mean (engine activity) of the instances it holds on that GPU (a whole
  GPU is one instance), then aggregated over the group's GPUs as the query says: dual uses 10,000 MiB of GPU 0 and
  1,000 + 3,000 = 4,000 MiB of GPU 1 (its total 14,000, mean 7,000, least 4,000); its engine activity is 0.5 on GPU 0
  and (0.25 + 0.75) / 2 = 0.5 on GPU 1; namespace team-q uses 10,000 MiB of GPU 0 and 6,000 of GPU 1 (dual's two
  instances and other's), its engine activity there (0.25 + 0.75 + 0.125) / 3 = 0.375. Why this one: it is what the
  dashboards' panels show (a GPU's instances the group holds combined, then over the group's GPUs), and it answers the
  question the grouping asks (how much of each GPU the pod or the namespace uses), the same way for every grouping: a
  pod's smallest framebuffer use is not one of its slices but its least-used GPU. The rules read it; a CloudWatch
  alarm reads it where the agent makes the group's value per GPU (a pod's total per GPU on agent.pipeline: otel), and
  is refused or says what it reads where it cannot.
- but a pod's least free memory (and its largest share of memory used) is judged on each instance on its own
  (generator/catalog.HEADROOM): it is the alarm before an allocation fails, and an allocation lives in one instance
  (dual's least free memory 7,000 MiB, on instance 2, not 16,000 on GPU 1), as the rule and the CloudWatch alarm read
  it; the panel of it shows the pod's total per GPU (a namespace's reads its use of each GPU, 24,000 on GPU 1).
"""

from __future__ import annotations

from statistics import mean

from tests.support.mixed_fleet import Gpu, Instance, Node

POWER, TEMP, UTIL = "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL"
FB_USED, FB_FREE, ENGINE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
DEVICE = {POWER: "power", TEMP: "temp"}
INSTANCE = {FB_USED: "fb_used", FB_FREE: "fb_free", ENGINE: "engine"}


def _slice(id_: str, pod: str, engine: float, used: float, profile: str = "1g.10gb") -> Instance:
    return Instance(id=id_, profile=profile, pod=("team-q", pod), fb_used=used, fb_free=10000 - used, engine=engine,
                    mig_util="0")


DUAL = Node("gpu-node-dual", "Hostname", "nvidia-dcgm-exporter-q1r2s", (
    Gpu(0, temp=70, power=300, sm_clock=1500, xid=0, energy_mw=300_000, replays_per_s=0, memory_temp=50, util=50,
        model="NVIDIA A100-SXM4-80GB",
        instances=(Instance(pod=("team-q", "dual"), fb_used=10000, fb_free=70000, engine=0.5),)),
    Gpu(1, temp=60, power=200, sm_clock=1410, xid=0, energy_mw=200_000, replays_per_s=0, memory_temp=50,
        model="NVIDIA A100-SXM4-80GB",
        instances=(_slice("1", "dual", 0.25, 1000), _slice("2", "dual", 0.75, 3000),
                   _slice("3", "other", 0.125, 2000, "2g.20gb"))),
))
FLEET = (DUAL,)


def _held(fleet=FLEET):
    """(namespace, pod, node, gpu, instance) of each whole GPU and MIG instance a pod holds."""
    return [(*instance.pod, node, gpu, instance) for node in fleet for gpu in node.gpus
            for instance in gpu.instances if instance.pod]


def _key(by: tuple[str, ...], namespace: str, pod: str, gpu: Gpu) -> tuple[tuple[str, str], ...]:
    labels = {"namespace": namespace, "pod": pod, "gpu": str(gpu.index)}
    return tuple(sorted((name, labels[name]) for name in {"namespace", *by}))


AGGREGATE = {"sum": sum, "avg": mean, "max": max, "min": min, "count": len}


def truth(metric: str, aggregation: str, by: tuple[str, ...], fleet=FLEET) -> dict[tuple, float]:
    """{sorted (label, value) pairs of the group: the value} of a rule or alarm of `metric`'s `aggregation` `by`
    (("pod",), ("pod", "gpu") or ("namespace",)), as the module's docstring says."""
    values: dict[tuple, dict] = {}  # group -> {what is counted once: its value}
    for namespace, pod, node, gpu, instance in _held(fleet):
        key = _key(by, namespace, pod, gpu)
        one = (node.name, gpu.index)  # the GPU, once
        if aggregation == "count":
            values.setdefault(key, {})[one] = 1
        elif metric in DEVICE:
            values.setdefault(key, {})[one] = getattr(gpu, DEVICE[metric])
        elif metric == FB_FREE and aggregation == "min" and "pod" in by:  # a pod's headroom: each instance apart
            values.setdefault(key, {})[(*one, instance.id)] = getattr(instance, INSTANCE[metric])
        else:  # the group's instances of the GPU, combined below
            values.setdefault(key, {}).setdefault(one, []).append(getattr(instance, INSTANCE[metric]))
    combine = sum if metric in (FB_USED, FB_FREE) else mean
    return {key: AGGREGATE[aggregation]([combine(v) if isinstance(v, list) else v for v in each.values()])
            for key, each in values.items()}

"""The mixed fleet with a node whose exporter names a shared GPU under one pod per scrape, in turn (TS2), the per-pod
and per-namespace rule forms judged on it (FORMS), and the labels each form's alert fires with by the fleet's truth
(breaching_labels)."""

from __future__ import annotations

from generator.model import Query
from tests.support import mixed_fleet

UTIL, POWER = "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"
NAMES = {UTIL: "util", POWER: "power"}
# a pod of its own GPU beside one it shares: gpu-node-ts2 names ts-b on GPU 1 at even scrapes, ts-a at odd ones; ts-a
# holds GPU 0 alone (a pod's sum or mean over its GPUs read GPU 1 at half the scrapes); ts-b of another namespace (a
# namespace's GPUs named in turn too)
TS2 = mixed_fleet.Node("gpu-node-ts2", "hostname", "nvidia-dcgm-exporter-t9w0x", (
    mixed_fleet.Gpu(0, temp=52, power=120, sm_clock=1500, xid=0, energy_mw=120_000, replays_per_s=0, memory_temp=50,
                    util=20, instances=mixed_fleet._whole(("team-g", "ts-a"), fb_used=1000, fb_free=23000,
                                                          engine=0.2)),
    mixed_fleet.Gpu(1, temp=53, power=160, sm_clock=1500, xid=0, energy_mw=160_000, replays_per_s=0, memory_temp=50,
                    util=40, instances=mixed_fleet._whole(("team-h", "ts-b"), fb_used=2000, fb_free=22000,
                                                          engine=0.4, also=(("team-g", "ts-a"),))),
), moves=1)
FLEET = (*mixed_fleet.FLEET, TS2)
SHARED_PODS = {("team-d", "ts-0"), ("team-d", "ts-1"), ("team-g", "ts-a"), ("team-h", "ts-b")}


# (rule, field, aggregation, grouping, comparison, level): levels just past the sharing pods' truth, so a pod read at
# half the scrapes (or half its GPUs) is judged otherwise
FORMS = [(f"{aggregation}-{NAMES[field]}-{'-'.join(by)}-{'gt' if comparison == '>' else 'lt'}-{level:g}".replace(".", "-"), field,
          aggregation, by, comparison, level)
         for by in (("pod", "gpu"), ("pod",))
         for field, aggregation, comparison, level in (
             (POWER, "count", ">", 0.5), (POWER, "count", "<", 1), (POWER, "count", ">", 1.5),
             (UTIL, "sum", ">", 2.5), (POWER, "sum", ">", 250), (POWER, "sum", "<", 250),
             (UTIL, "avg", ">", 2.5), (POWER, "avg", "<", 150),
             (UTIL, "max", ">", 30), (POWER, "min", "<", 130))] + [
    (f"{aggregation}-power-namespace-{'gt' if comparison == '>' else 'lt'}-{level:g}".replace(".", "-"), POWER,
     aggregation, ("namespace",), comparison, level)
    for aggregation, comparison, level in (("count", ">", 0.5), ("count", ">", 1.5), ("count", "<", 1),
                                           ("sum", ">", 250), ("sum", "<", 250), ("avg", "<", 150))]


def namespace_truth(aggregation: str) -> dict[str, float]:
    """{legend: a namespace's count or sum of the power of the GPUs its pods hold, or their mean}: each GPU once (a MIG
    GPU whose instances its pods hold too), whichever of its pods a scrape names."""
    held: dict[str, list[float]] = {}
    for node in FLEET:
        for gpu in node.gpus:
            for namespace in sorted({pod[0] for pod in mixed_fleet._named(node, gpu)}):
                held.setdefault(f"Pod {namespace}/", []).append(gpu.power)
    return {legend: {"count": len, "sum": sum, "avg": lambda v: sum(v) / len(v)}[aggregation](values)
            for legend, values in held.items()}


def breaching_labels(field: str, aggregation: str, by: tuple, comparison: str, level: float) -> list[dict[str, str]]:
    """The labels of the pods (or pods' GPUs, or namespaces) whose truth breaches the level: each pod named on a GPU
    holds it whole (a MIG GPU's utilization is its instances' engine activity, each instance judged on its own: one a
    pod)."""
    truth = namespace_truth(aggregation) if by == ("namespace",) else \
        mixed_fleet.truth(Query(field, aggregation, by), {}, fleet=FLEET)
    breach = {">": float.__gt__, "<": float.__lt__}[comparison]
    fired = []
    for legend, value in truth.items():
        namespace, rest = legend.removeprefix("Pod ").split("/", 1)
        pod, _, gpu = rest.partition(" GPU ")
        if field == UTIL and gpu and pod.startswith("mig-"):
            continue  # judged per MIG instance, below
        if breach(float(value), level):
            fired.append({"namespace": namespace, **({"pod": pod} if pod else {}), **({"gpu": gpu} if gpu else {})})
    if field == UTIL and "gpu" in by:  # per (pod, GPU) a MIG GPU's instances are judged each on its own, named so
        fired += [{"namespace": i.pod[0], "pod": i.pod[1], "gpu": str(gpu.index), "GPU_I_ID": i.id,
                   "GPU_I_PROFILE": i.profile} for node in FLEET for gpu in node.gpus if gpu.mig
                  for i in gpu.instances if i.pod and breach(i.engine * 100, level)]
    return sorted(fired, key=str)

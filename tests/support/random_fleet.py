"""Seeded random mixed fleets (tests/support/mixed_fleet.py's facts), for checks over fleets no test wrote by hand.

A fleet of 1-4 nodes of 1-3 GPUs: about a third of the GPUs split into 1-3 MIG instances of mixed profiles (their
GPU_UTIL absent, 0 or the blank), the rest whole; GPUs and instances held by a pod or idle, a pod on several GPUs or
instances of its node, one pod name in two namespaces; each node's exporter writes `Hostname`, `hostname` or no node
name, with or without NODE_NAME; a counter or the memory temperature "not supported" on some GPUs. With `shared`, every
node's exporter runs with KUBERNETES_VIRTUAL_GPUS and some whole GPUs and MIG instances a pod holds are shared by a
second pod of the node (time-slicing or MPS, on MIG instances too: one copy of each series per pod); with `per_process`
too, some nodes' exporters are 4.5.3 or later (GPU utilization and framebuffer used as each held GPU's own series beside
each pod's share), some held GPUs' and instances' own series reading DCGM's blank. `firing` is each bundled rule's truth
from the facts.
"""

from __future__ import annotations

import random
from dataclasses import replace

from tests.support.mixed_fleet import NOT_SUPPORTED, Gpu, Instance, Node, share, split

PODS = (("ns-a", "w-0"), ("ns-b", "w-0"), ("ns-a", "w-1"), ("ns-b", "w-2"), ("ns-c", "x-0"), ("ns-c", "x-1"))


def fleet(seed: int, shared: bool = False, per_process: bool = False) -> tuple[Node, ...]:
    """The fleet of `seed`; `per_process` (with `shared`): some nodes' exporters are 4.5.3 or later, writing GPU
    utilization and framebuffer used as each held GPU (instance)'s own series beside its pods' shares, and some held
    instances' own series read DCGM's blank (drawn apart: the fleet of the seed is otherwise the same)."""
    nodes = _fleet(seed, shared)
    if not per_process:
        return nodes
    r = random.Random(f"per-process-{seed}")
    return tuple(replace(node, per_process=True, gpus=tuple(
        replace(gpu, instances=tuple(replace(i, own_blank=bool(i.pods()) and r.random() < 0.4) for i in gpu.instances))
        for gpu in node.gpus)) if r.random() < 0.7 else node for node in nodes)


def _fleet(seed: int, shared: bool) -> tuple[Node, ...]:
    r = random.Random(seed)
    free = list(PODS)
    r.shuffle(free)
    nodes = []
    for n in range(r.randint(1, 4)):
        name = f"ip-10-0-{n}-{r.randint(1, 9)}.ec2.internal"
        mine = [free.pop()] if free else []  # a pod runs on one node
        if free and r.random() < 0.5:
            mine.append(free.pop())

        def holder():
            return r.choice(mine) if mine and r.random() < 0.7 else None

        gpus = []
        for index in range(r.randint(1, 3)):
            if r.random() < 0.35:
                instances = tuple(Instance(id=str(i + 1), profile=r.choice(["3g.20gb", "2g.10gb"]), pod=holder(),
                                           fb_used=float(r.randint(0, 19) * 1000),
                                           fb_free=float(r.choice([300, 5000, 12000])),
                                           engine=r.choice([0.0, 0.01, 0.3, 0.8]),
                                           mig_util=r.choice([None, "0", NOT_SUPPORTED]))
                                  for i in range(r.randint(1, 3)))
                util = 0.0
            else:
                instances = (Instance(pod=holder(), fb_used=float(r.randint(0, 40) * 1000),
                                      fb_free=float(r.choice([500, 8000, 30000])),
                                      engine=r.choice([0.0, 0.02, 0.5, 0.9])),)
                util = float(r.choice([0, 1, 3, 40, 95]))
            gpus.append(Gpu(index, temp=float(r.choice([40, 60, 82, 90])), power=float(r.randint(50, 400)),
                            sm_clock=float(r.choice([210, 1410, 1710])), xid=float(r.choice([0, 0, 0, 79])),
                            energy_mw=float(r.randint(50, 400) * 1000), replays_per_s=r.choice([0, 0.1, 1, None]),
                            memory_temp=r.choice([50.0, None]), instances=instances, util=util))
        node = Node(name, r.choice(["Hostname", "hostname", None]), f"nvidia-dcgm-exporter-{n}x", tuple(gpus),
                    node_name_set=r.random() < 0.7)
        nodes.append(_shared(node, r, seed) if shared else node)
    return tuple(nodes)


def _shared(node: Node, r: random.Random, seed: int) -> Node:
    """The node's exporter with KUBERNETES_VIRTUAL_GPUS, some whole GPUs a pod holds shared with a second pod, and some
    MIG instances a pod holds shared by time-slicing on top of MIG: with a pod of the node's own (`ns-s/share-<node>`)
    or with the pod of another instance of the same GPU (which then holds two instances of it, one of them shared).
    The MIG instances' draws are their own (seeded by the fleet's seed and the node), so the whole GPUs' stay those
    of fleets before MIG instances were shared."""
    gpus = []
    mig = random.Random(f"mig-shared-{seed}-{node.name}")
    for gpu in node.gpus:
        first = gpu.instances[0]
        if not gpu.mig and first.pod and r.random() < 0.6:
            other = r.choice([("ns-s", "share-" + node.name.split(".")[0]), first.pod])
            if other != first.pod:
                gpu = replace(gpu, instances=(replace(first, also=(other,)),))
        elif gpu.mig:
            instances = []
            for instance in gpu.instances:
                if instance.pod and mig.random() < 0.6:
                    neighbours = sorted({i.pod for i in gpu.instances if i.pod and i.pod != instance.pod})
                    other = mig.choice([("ns-s", "share-" + node.name.split(".")[0]), *neighbours])
                    instance = replace(instance, also=(other,))
                instances.append(instance)
            gpu = replace(gpu, instances=tuple(instances))
        gpus.append(gpu)
    return replace(node, gpus=tuple(gpus), virtual_gpus=True)


def several_instances(fleet_: tuple[Node, ...]) -> set[str]:
    """The pods ("Pod <namespace>/<pod>") holding several MIG instances of one GPU (holding one, or sharing it with
    another pod by time-slicing on top of MIG: Instance.pods)."""
    found = set()
    for node in fleet_:
        for gpu in node.gpus:
            pods = [pod for i in gpu.instances for pod in i.pods()]
            found |= {f"Pod {ns}/{pod}" for ns, pod in pods if pods.count((ns, pod)) > 1}
    return found


def firing(fleet_: tuple[Node, ...]) -> dict[str, set[str]]:
    """What each bundled rule's Prometheus twin names on the fleet (the default thresholds), from its facts: a GPU
    ("<node> GPU <index>") with an XID, hotter than 80 and 87 C, replaying more than 50 times in 5 minutes; a pod
    ("Pod <namespace>/<pod>") on a GPU or instance with under 1,024 MiB free, or using under 5 % of one (a MIG
    instance's graphics engine activity)."""
    out: dict[str, set[str]] = {rule: set() for rule in ("xid-error", "gpu-temp-high", "gpu-temp-critical",
                                                         "framebuffer-full", "gpu-idle", "pcie-replays")}
    for node in fleet_:
        for gpu in node.gpus:
            name = f"{node.name} GPU {gpu.index}"
            for rule, fires in (("xid-error", gpu.xid > 0), ("gpu-temp-high", gpu.temp > 80),
                                ("gpu-temp-critical", gpu.temp > 87),
                                ("pcie-replays", gpu.replays_per_s is not None and gpu.replays_per_s * 300 > 50)):
                if fires:
                    out[rule].add(name)
            for instance in gpu.instances:
                for ns, pod in instance.pods():
                    if instance.fb_free < 1024:
                        out["framebuffer-full"].add(f"Pod {ns}/{pod}")
                    util = instance.engine * 100 if gpu.mig else \
                        share(instance, (ns, pod), gpu.util) if split(node, "DCGM_FI_DEV_GPU_UTIL") else gpu.util
                    if util < 5:  # (each pod's own share, on an exporter that splits it per process)
                        out["gpu-idle"].add(f"Pod {ns}/{pod}")
    return out

"""Fleets for alarms that judge GPUs no pod holds beside alarms per pod: an idle-GPU fleet, and the mixed fleet with its
GPU no pod holds hot.

IDLE (mixed_fleet's model, so the exporters write it as the mixed fleet's do: `Hostname`/`hostname`, no pod labels on
a GPU no pod holds, MIG instances with their profile):
- idle-node-1: GPU 0 held by team-x/held-idle at 1 % (60 °C); GPU 1 held by no pod, 0 % and 92 °C; GPU 2 held by
  team-x/hot-busy at 95 % and 85 °C;
- idle-node-2: team-y/pair holds GPU 0 (0 %, 86 °C) and GPU 1 (50 %, 70 °C); GPU 2 held by no pod, 4 % (50 °C);
- idle-mig: one A100 at 88 °C split in two instances, instance 1 held by team-z/mig-idle (engine 1 %), instance 2 by
  no pod (0 %).
Graphics engine activity follows utilization on whole GPUs (0.01 for 1 %)."""

from __future__ import annotations

from dataclasses import replace

from tests.support.mixed_fleet import FLEET, Gpu, Instance, Node


def _gpu(index: int, temp: float, util: float, pod: tuple[str, str] | None = None) -> Gpu:
    return Gpu(index, temp=temp, power=100, sm_clock=1400, xid=0, energy_mw=100_000, replays_per_s=0, memory_temp=50,
               util=util, instances=(Instance(pod=pod, fb_used=1000, fb_free=20000, engine=util / 100),))


IDLE = (
    Node("idle-node-1", "Hostname", "nvidia-dcgm-exporter-b2c3d", (
        _gpu(0, 60, 1, ("team-x", "held-idle")), _gpu(1, 92, 0), _gpu(2, 85, 95, ("team-x", "hot-busy")))),
    Node("idle-node-2", "hostname", "nvidia-dcgm-exporter-c3d4f", (
        _gpu(0, 86, 0, ("team-y", "pair")), _gpu(1, 70, 50, ("team-y", "pair")), _gpu(2, 50, 4))),
    Node("idle-mig", "Hostname", "nvidia-dcgm-exporter-d4f5g", (
        Gpu(0, temp=88, power=120, sm_clock=1410, xid=0, energy_mw=120_000, replays_per_s=0, memory_temp=55,
            model="NVIDIA A100-SXM4-40GB", instances=(
                Instance(id="1", profile="3g.20gb", pod=("team-z", "mig-idle"), fb_used=100, fb_free=19900,
                         engine=0.01, mig_util="0"),
                Instance(id="2", profile="3g.20gb", fb_used=0, fb_free=20000, engine=0.0, mig_util="0"))),)),
)

# the mixed fleet with the GPU no pod holds (gpu-node-a's GPU 1, 0 %) at 90 °C
HOT_MIXED = tuple(replace(node, gpus=(node.gpus[0], replace(node.gpus[1], temp=90))) if node.name == "gpu-node-a"
                  else node for node in FLEET)

"""The idle rule judges each GPU a pod holds (a pod using one of its two GPUs leaves the other idle, which a mean over
the pod's GPUs hides): its Prometheus rule and the GROUP BY alarm (alarms.per_pod: group_by, one contributor per pod
and GPU) fire for the idle GPU. The static alarm of a listed pod (alarms.per_pod: static) reads the pod's mean over
its GPUs, so it fires on another situation than its twin: a pod at 100 % on GPU 0 and 0 % on GPU 1 reads 50 % and
never fires. Its description says so; the twins still differ (strict xfail below).

The fleet goes through the model of the agent running each build's configuration; the truth is its facts.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import through_agent
from tests.support.projects import defined_project

STEP, END = 30, 3000  # 50 minutes of GPU 1 at 0 %: idle past the rule's 30 minutes


def _gpu(index: int, util: float) -> mixed_fleet.Gpu:
    return mixed_fleet.Gpu(index, temp=50, power=200, sm_clock=1500, xid=0, energy_mw=200_000, replays_per_s=0,
                           memory_temp=50, util=util, instances=(mixed_fleet.Instance(
                               fb_used=9000, fb_free=15000, engine=util / 100, pod=("ml", "train-0")),))


# one pod on two GPUs of one node: GPU 0 busy, GPU 1 idle all along
FLEET = (mixed_fleet.Node("ip-10-0-1-1", "Hostname", "nvidia-dcgm-exporter-a1b2c", (_gpu(0, 100), _gpu(1, 0))),)


def _idle_states(folder, settings: str) -> dict:
    """{contributor: state} of the build's idle alarms on whole GPUs (gpu-idle, not its MIG form) at END."""
    files = encode(build(defined_project(folder, settings), grafana=False))
    points = through_agent(files, STEP, END, fleet=FLEET)
    states = {}
    for alarm in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        request = alarm["Request"]
        if "-gpu-idle-warning" in request["AlarmName"]:
            for key, state in cloudwatch_eval.alarm(request, points, END).items():
                states[(request["AlarmName"], key)] = state
    return states


def test_the_group_by_alarm_fires_for_the_idle_gpu_of_a_pod_as_its_rule_does(tmp_path):
    states = _idle_states(tmp_path, "")
    fired = {dict(key).get("gpu") for (_, key), state in states.items() if state == "ALARM"}
    assert fired == {"1"}, states


@pytest.mark.xfail(strict=True, reason="a static per-pod idle alarm reads the pod's mean over its GPUs (MetricStat of "
                                       "[ClusterName, namespace, pod]): a pod busy on one GPU and idle on the other "
                                       "reads 50 % and never fires, where its Prometheus rule and the GROUP BY alarm "
                                       "fire for the idle GPU (its description says so; the twins differ)")
def test_the_static_alarm_of_a_listed_pod_fires_for_its_idle_gpu(tmp_path):
    states = _idle_states(tmp_path, "alarms:\n  per_pod: static\n  static_pods: [ml/train-0]\n")
    assert states and "ALARM" in states.values(), states

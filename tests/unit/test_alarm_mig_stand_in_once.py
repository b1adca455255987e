"""An alarm that counts the GPUs reporting GPU utilization, or adds, averages or takes the extreme of it over a node's
or the cluster's GPUs, reads on CloudWatch what its Prometheus rule reads: every physical GPU once, a MIG GPU's value
its instances' graphics engine activity (x 100) averaged, the field that stands in for the utilization MIG does not
report (mixed_fleet.truth's _per_gpu, promql's MIG branch).

The mixed fleet (tests/support/mixed_fleet.FLEET) has 11 GPUs, two of them A100s split into two MIG instances each.
Over the per-GPU set the alarm counted 9 (the agent's scrape job drops GPU utilization on MIG instances), added and
averaged the whole GPUs only, and no MIG stand-in alarm could be split off (each half judged part of the GPUs against
the whole threshold: lint AL012 noted it). On the OTel pipeline the agent merges, per GPU and scrape, the MIG
instances' engine activity into the GPU's reading once ([ClusterName, node, gpu, readings]), so one alarm reads every
GPU. The values are read through the build's own agent model and Metrics Insights' semantics (agent_points,
cloudwatch_eval)."""

from __future__ import annotations

from statistics import mean

import pytest

from tests.support import mixed_fleet
from tests.support.alarm_copies import built_alarms, read_alarm

UTIL = "DCGM_FI_DEV_GPU_UTIL"
GROUPS = {"all": (), "node": ("node",)}
CASES = [(aggregation, group, scope) for aggregation in ("count", "sum", "avg", "max", "min") for group in GROUPS
         for scope in ("cluster", "fleet")]


def _rule(aggregation: str, group: str, scope: str) -> str:
    return f"{aggregation}-{group}-{scope}"


ALARMS = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm({_rule(a, g, s)!r}, 'X', Condition(Query({UTIL!r}, {a!r}, {GROUPS[g]!r}), "
    f"{'<' if a in ('min', 'avg') else '>'!r}, 1), scope={s!r}, description='x', runbook='y')\n"
    for a, g, s in CASES)


def _utilization(gpu: mixed_fleet.Gpu) -> float:
    """What the Prometheus rule reads as a GPU's utilization: its own, or on MIG its instances' engine activity."""
    return mean(i.engine * 100 for i in gpu.instances) if gpu.mig else gpu.util


def _truth(aggregation: str, group: str, scope: str) -> dict[tuple, float]:
    readings: dict[tuple, list[float]] = {}
    for node in mixed_fleet.FLEET:
        key = () if group == "all" else (("node", node.name),)
        if scope == "fleet" and group == "node":  # a fleet alarm per node groups by the cluster first
            key = (("ClusterName", "gpu-cluster"), *key)
        readings.setdefault(key, []).extend(_utilization(gpu) for gpu in node.gpus)
    how = {"count": len, "sum": sum, "avg": mean, "max": max, "min": min}[aggregation]
    return {key: how(values) for key, values in readings.items()}


@pytest.fixture(scope="module")
def mig(tmp_path_factory):
    requests, points = built_alarms(tmp_path_factory.mktemp("mig-util"), "", mixed_fleet.FLEET, ALARMS)
    return {name.removeprefix("gpudash-").removeprefix("fleet-"): request for name, request in requests.items()}, points


def test_the_premise_mig_gpus_report_no_utilization():
    mig_gpus = [gpu for node in mixed_fleet.FLEET for gpu in node.gpus if gpu.mig]
    assert len(mig_gpus) == 2 and sum(len(node.gpus) for node in mixed_fleet.FLEET) == 11


@pytest.mark.parametrize("aggregation,group,scope", CASES)
def test_every_gpu_is_read_once(mig, aggregation, group, scope):
    requests, points = mig
    request = requests[_rule(aggregation, group, scope)]
    assert read_alarm(request, points) == pytest.approx(_truth(aggregation, group, scope))


def test_no_mig_half_and_no_note(mig, tmp_path):
    from generator.artifacts import notes
    from tests.support.projects import defined_project

    requests, _ = mig
    assert not [name for name in requests if "-mig" in name]
    project = defined_project(tmp_path, "", alarms=ALARMS)
    assert not [note.message for note in notes(project) if note.rule == "AL012"]


def test_on_classic_lint_still_says_mig_gpus_are_left_out(tmp_path):
    """agent.pipeline: classic has no processor to merge a GPU's instances: the note stays (AL012) where the whole GPUs'
    alarm can only miss a MIG GPU; a mean, which the whole GPUs alone can read below or above the group's, is refused
    (tests/unit/test_mig_half_alarms.py)."""
    from generator.artifacts import notes
    from tests.support.projects import defined_project

    kept = [case for case in CASES if case[0] != "avg"]
    text = "\n".join(line for line in ALARMS.splitlines() if "'avg-" not in line) + "\n"
    project = defined_project(tmp_path, "agent:\n  pipeline: classic\n", alarms=text)
    noted = {note.message.split("'")[1] for note in notes(project) if note.rule == "AL012"}
    assert noted == {_rule(*case) for case in kept}

"""Alarms on agent.pipeline: otel that judge a share below a level, or every reading of several periods past one,
read copies of the field's readings the agent makes (an unused share; flags past the level), one per field and mark.
A pod's total or count of its GPUs below a level is no share of a whole: it reads the pod's total as made. Two such
alarms of one field over different groupings would need two copies: one made of both groupings' labels missed every
point lacking either (a GPU no pod holds, a pod's total), silencing both alarms, the bundled ones too: refused."""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.errors import InputError
from tests.support import cloudwatch_eval
from tests.support.agent_points import alarms_through_agent
from tests.support.projects import defined_project

HEAD = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"


def _alarm(name: str, field: str, aggregation: str, group: tuple, comparison: str, level: float,
           periods: int = 1) -> str:
    return (f"    yield Alarm({name!r}, 'T', Condition(Query({field!r}, {aggregation!r}, {group!r}), {comparison!r}, "
            f"{level}), evaluation_periods={periods}, description='d', runbook='r')\n")


def _states(folder, text: str) -> dict[str, dict[str, str]]:
    requests, points = alarms_through_agent(defined_project(folder, alarms=HEAD + text), 30, 1800)
    return {name: {"/".join(v for _, v in key): state for key, state in
                   cloudwatch_eval.alarm(request, points, 1800).items()} for name, request in requests.items()}


def test_a_pods_count_or_total_below_a_level_reads_the_pods_own_gpus(tmp_path):
    """The mixed fleet: 7 pods hold one GPU (trainer.v2-0 two); the pods whose GPUs' utilization adds up under 75.5
    are infer-1 (2), team-b's worker-0 (35), ts-0 and ts-1 (3 each), solo-0 (70) and solo-1 (71). Read as an unused
    share these were 100 - count and 100 - total: no datapoint at all, and trainer.v2-0 (120) would have fired."""
    states = _states(tmp_path, _alarm("one-gpu", "DCGM_FI_DEV_GPU_UTIL", "count", ("pod",), "<", 1.5)
                     + _alarm("low-total", "DCGM_FI_DEV_GPU_UTIL", "sum", ("pod",), "<", 75.5))
    firing = {name: sorted(k for k, s in by.items() if s == "ALARM") for name, by in states.items()}
    assert firing["gpudash-gpu-cluster-one-gpu-warning"] == sorted(
        ["team-a/worker-0", "team-b/worker-0", "team-a/infer-1", "team-d/ts-0", "team-d/ts-1", "team-e/solo-0",
         "team-e/solo-1"])
    assert firing["gpudash-gpu-cluster-low-total-warning"] == sorted(
        ["team-a/infer-1", "team-b/worker-0", "team-d/ts-0", "team-d/ts-1", "team-e/solo-0", "team-e/solo-1"])
    assert set(states["gpudash-gpu-cluster-low-total-warning"]) == {
        "team-a/worker-0", "team-b/worker-0", "team-a/infer-1", "team-d/ts-0", "team-d/ts-1", "team-e/solo-0",
        "team-e/solo-1", "team-f/trainer.v2-0"}


@pytest.mark.parametrize("first, second", [
    (_alarm("idle", "DCGM_FI_DEV_GPU_UTIL", "avg", ("pod", "gpu"), "<", 10, 2),
     _alarm("any-idle", "DCGM_FI_DEV_GPU_UTIL", "avg", ("node", "gpu"), "<", 5)),
    (_alarm("hot", "DCGM_FI_DEV_GPU_TEMP", "min", ("node", "gpu"), ">", 80, 2),
     _alarm("pod-hot", "DCGM_FI_DEV_GPU_TEMP", "min", ("pod",), ">", 80, 2)),
], ids=("share below a level", "every reading past a level"))
def test_two_groupings_of_one_copy_are_refused_naming_both(tmp_path, first, second):
    project = defined_project(tmp_path, alarms=HEAD + first + second)
    with pytest.raises(InputError, match="over different groupings") as refused:
        build(project)
    assert "node" in str(refused.value) and "pod" in str(refused.value)  # both groupings named
    (tmp_path / "alone").mkdir()
    alone = build(defined_project(tmp_path / "alone", alarms=HEAD + first))  # each alone builds
    assert alone.alarms

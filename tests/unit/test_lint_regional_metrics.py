"""A fleet alarm's one query over every cluster of its Region, and the 10,000 metrics a Metrics Insights query
processes: lint notes each such alarm (AL021) with the size at which its Region passes the limit, and `gpudash cost`
(generator/fleet_limits.py, the same facts) names it exactly past that size.

A fleet-scope alarm has no WHERE on ClusterName: it matches one metric per pod, GPU or node of every cluster of the
Region publishing to the namespace. `gpudash cost` counted that for a fleet (per cluster times the Region's clusters);
lint, which knows the clusters and not their size, said nothing of it.
"""

from __future__ import annotations

import math

import pytest

from generator.artifacts import build
from generator.cost import Fleet, limits
from generator.lint.runner import lint_project
from tests.support.projects import defined_project

SETTINGS = """\
clusters:
  - {name: train-a, region: us-east-1}
  - {name: train-b, region: us-east-1}
  - {name: train-c, region: us-east-1}
  - {name: infer-w, region: us-west-2}
"""
ALARMS = """\
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("pod-memory", "X", Condition(Query("DCGM_FI_DEV_FB_USED", "sum", ("pod",)), ">", 1), scope="fleet")
    yield Alarm("gpu-hot", "X", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), ">", 90),
                scope="fleet")
    yield Alarm("node-power", "X", Condition(Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("node",)), ">", 4000),
                scope="fleet")
    yield Alarm("gpu-hot-here", "X", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), ">", 90))
"""
PER_CLUSTER = {"us-east-1": math.ceil(10_000 / 3), "us-west-2": 10_000}  # the size past which a Region passes


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return defined_project(tmp_path_factory.mktemp("regions"), SETTINGS, alarms=ALARMS)


@pytest.fixture(scope="module")
def noted(project):
    return [f for f in lint_project(project) if f.rule == "AL021"]


def test_each_fleet_alarm_is_noted_once_per_region_with_the_size_its_region_passes_at(noted):
    said = {f.where.rsplit(" ", 1)[1]: f.message for f in noted}
    fleet = {f"gpudash-fleet-{rule}-warning" for rule in ("pod-memory", "gpu-hot", "node-power")}
    assert {name.replace("-us-east-1", "").replace("-us-west-2", "") for name in said} <= fleet
    assert len(noted) == 2 * len(fleet)  # one alarm per Region each, none of cluster scope
    for name, message in said.items():
        region = "us-east-1" if any(f.where == f"cloudwatch/alarms.json {name}" and "us-east-1" in f.message
                                    for f in noted) else "us-west-2"
        clusters = 3 if region == "us-east-1" else 1
        assert f"every cluster of {region} publishing to" in message and f"({clusters} in the settings)" in message
        assert f"more than {10_000 / clusters:,.0f} per cluster" in message and "PARTIAL_DATA" in message
    pods = [m for n, m in said.items() if "pod-memory" in n]
    assert pods and all("one metric per pod with data in its 5 min window, pods started in it included" in m
                        for m in pods)
    assert all("one metric per GPU with data" in m for n, m in said.items() if "gpu-hot" in n)
    # a node's power is the agent's total of its GPUs per scrape (one metric per node)
    assert all("one metric per GPU node with data" in m for n, m in said.items() if "node-power" in n)


@pytest.mark.parametrize("gpus,past", [(3 * 3_333, False), (3 * 3_334, True)])
def test_cost_names_the_alarm_exactly_past_the_size_lint_says(tmp_path, gpus, past):
    """Three clusters of one Region with 3,333 GPUs each are 9,999 metrics of the per-GPU set; 3,334 pass 10,000."""
    project = defined_project(tmp_path, SETTINGS.replace("  - {name: infer-w, region: us-west-2}\n", ""),
                              alarms=ALARMS)
    (message,) = [f.message for f in lint_project(project) if f.rule == "AL021" and "gpu-hot" in f.where]
    assert "more than 3,333 per cluster" in message
    said = [note for note in limits(Fleet(clusters=3, pods=0, churn=0, gpus=gpus, nodes=3), project, build(project))
            if note.startswith("queries past 10,000 metrics")]
    assert any(f"{gpus:,} GPUs over 5 min (gpudash-fleet-gpu-hot-warning" in note for note in said) is past, said

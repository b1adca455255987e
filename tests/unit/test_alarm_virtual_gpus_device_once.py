"""With exporter.virtual_gpus (pods sharing a GPU by time-slicing or MPS, an exporter run with
KUBERNETES_VIRTUAL_GPUS), every CloudWatch alarm over GPUs (a GPU's, a node's, the cluster's value; every aggregation,
either comparison, one period or several) reads the device's own GPU utilization once per GPU, as its `>` form and
the Prometheus rule do, never a pod's share of it.

The fleet (tests/support/virtual_gpus.FLEET) has a GPU two pods share by MPS whose device reads 50 % while one pod's
share reads 55 % in the same scrape (NVML samples processes and the device apart). A `<` alarm judged a share below a
level through the field's unused share (unused_plan), and a minimum above a level over several periods through flags
past it (level_plan), both made by the agent from the largest of a GPU's copies: the MPS GPU read 55 % there (its
node's mean 51.25 % for 50 %), where the `>` form reads the device (agent_otel.device_or_copies). Each alarm's state,
per contributor, is evaluated through the build's agent model and Metrics Insights' semantics."""

from __future__ import annotations

from statistics import mean

import pytest

from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval, virtual_gpus
from tests.support.alarm_requests import alarm_requests
from tests.support.virtual_gpus import END, FLEET, UTIL, published_points

VIRTUAL = "exporter:\n  virtual_gpus: true\n"
GROUPS = {"gpu": ("node", "gpu"), "node": ("node",), "all": ()}
# levels between the device's reading and the largest copy's: the MPS GPU (50 / 55), its node's mean (50 / 51.25) and
# total (200 / 205), the cluster's mean (50 / 50.71) and total (350 / 355); a count of GPUs (4 on the node, 7 in all)
LEVELS = {"avg": (50.5, 52.5), "max": (52.5,), "min": (52.5,), "sum": (202.5, 352.5), "count": (3.5, 6.5)}
CASES = [(how, group, comparison, level, periods) for how, levels in LEVELS.items() for group in GROUPS
         for comparison in ("<", ">") for level in levels for periods in (1, 2)
         if not (group == "gpu" and how in ("sum", "count"))]


def _rule(how, group, comparison, level, periods) -> str:
    return f"{how}-{group}-{'lt' if comparison == '<' else 'gt'}{LEVELS[how].index(level)}-{periods}"


ALARMS = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm({_rule(*case)!r}, 'X', Condition(Query({UTIL!r}, {case[0]!r}, {GROUPS[case[1]]!r}), "
    f"{case[2]!r}, {case[3]!r}), evaluation_periods={case[4]}, description='x', runbook='y')\n" for case in CASES)


def _readings() -> dict[tuple[str, str], float]:
    """{(node, GPU index): the device's utilization} of the GPUs the exporters write."""
    return {(node.name, str(gpu.index)): gpu.util for node in FLEET for gpu in node.gpus
            if virtual_gpus._visible(node, gpu)}


def _firing_truth(how, group, comparison, level) -> set[tuple]:
    values: dict[tuple, list[float]] = {}
    for (node, gpu), reading in _readings().items():
        key = {"gpu": (node, gpu), "node": (node,), "all": ()}[group]
        values.setdefault(key, []).append(reading)
    aggregate = {"avg": mean, "sum": sum, "max": max, "min": min, "count": len}[how]
    breach = (lambda v: v < level) if comparison == "<" else (lambda v: v > level)
    return {key for key, readings in values.items() if breach(aggregate(readings))}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    files, _ = built_with(tmp_path_factory.mktemp("virtual-once"), {"once.py": ALARMS}, virtual_gpus.FIELDS, VIRTUAL)
    return alarm_requests(files), published_points(files)


def test_the_premise_a_share_reads_above_its_device():
    (node,) = [n for n in FLEET if n.name == "gpu-node-on"]
    assert node.gpus[3].util == 50 and max(h.util for h in node.gpus[3].holders) == 55


@pytest.mark.parametrize("how,group,comparison,level,periods", CASES)
def test_the_alarm_reads_the_device_once(built, how, group, comparison, level, periods):
    alarms, points = built
    request = alarms[_rule(how, group, comparison, level, periods)]
    states = cloudwatch_eval.alarm(request, points, END)
    keys = {"gpu": ("node", "gpu"), "node": ("node",), "all": ()}[group]
    firing = {tuple(dict(key)[k] for k in keys) for key, state in states.items() if state == "ALARM"}
    assert firing == _firing_truth(how, group, comparison, level)

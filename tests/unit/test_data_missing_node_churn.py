"""A GPU node added or removed, as the per-GPU data-missing alarm (agent.pipeline: classic) judges it over 1, 2 and 3
evaluation periods: its GPUs are short of observations in the one period holding the moment the node came or left, so
the alarm fires only when judged over one period, and a removed node's short datapoint, its most recent one, holds it in
ALARM while it is in the evaluation range. Its description says what is true for each setting
(data_missing.node_churn)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from generator import data_missing
from generator.render.alarms import cloudwatch_alarms
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Datapoint
from tests.support.projects import bundled_project

CLASSIC = "agent:\n  pipeline: classic\n"
HOUR = 3600


def _per_gpu_request(periods: int) -> dict:
    project = bundled_project(CLASSIC)
    alarms = tuple(replace(a, evaluation_periods=periods, datapoints_to_alarm=periods) if a.absent else a
                   for a in project.alarms)
    (request,) = [i["Request"] for i in cloudwatch_alarms(alarms, project.settings, project.catalog)
                  if i["Request"]["AlarmName"].endswith("gpu-data-missing" + data_missing.PER_GPU_SUFFIX + "-critical")]
    return request


def _observations(request: dict, scrape: int, start: float, end: float) -> list[Datapoint]:
    """One GPU's observations of the alarm's field, one a scrape from `start` (the node added) until `end` (removed)."""
    field = request["Metrics"][0]["Expression"].split('COUNT("')[1].split('"')[0]
    dimensions = (("ClusterName", "gpu-cluster"), ("gpu", "0"), ("node", "ip-10-0-9-9"))
    return [Datapoint("ContainerInsights/Prometheus", field, dimensions, float(t), 60.0)
            for t in range(int(start), int(end), scrape)]


def _fired(request: dict, points: list[Datapoint]) -> list[int]:
    """The minutes of three hours at which the GPU is a contributor in ALARM, at some evaluation range's length."""
    minutes = []
    for minute in range(1, 3 * HOUR // 60):
        ranges = cloudwatch_eval.alarm_ranges(request, points, minute * 60)
        if any(state == "ALARM" for judged in ranges.values() for state in judged.values()):
            minutes.append(minute)
    return minutes


@pytest.mark.parametrize("periods", [1, 2, 3])
@pytest.mark.parametrize("offset", [0, 17, 45, 150, 229])  # where in a minute / period the node comes and goes
def test_a_node_added_or_removed_fires_the_per_gpu_alarm_only_when_judged_over_one_period(periods, offset):
    request = _per_gpu_request(periods)
    scrape = bundled_project(CLASSIC).settings.scrape.seconds
    assert request["EvaluationPeriods"] == request["DatapointsToAlarm"] == periods
    added = _fired(request, _observations(request, scrape, HOUR + offset, 3 * HOUR))
    removed = _fired(request, _observations(request, scrape, 0, HOUR + offset))
    period = request["Metrics"][0]["Period"]
    if periods > 1:
        assert (added, removed) == ([], [])
        assert "A node added or removed is short one period only." in request["AlarmDescription"]
        return
    # judged over one period, each fires: added, while the period ending now holds fewer than half its scrapes;
    # removed, from then until its short datapoint leaves the evaluation range
    assert added and all(HOUR < m * 60 < HOUR + offset + period for m in added), added
    assert removed and min(removed) * 60 < HOUR + offset + period, removed
    assert max(removed) * 60 >= HOUR + offset + 2 * period, removed  # clears late
    assert ("A node added or removed leaves its GPUs short in the period it came or left, so it can fire this alarm"
            in request["AlarmDescription"] or "A node added or removed can fire it; one removed clears late."
            in request["AlarmDescription"]), request["AlarmDescription"]

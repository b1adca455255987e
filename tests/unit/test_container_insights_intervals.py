"""cloudwatch.source: container-insights: the data-missing alarms count collections at the add-on's intervals.

The add-on's agent collects node metrics (node_gpu_limit, the GPUs expected) every metrics_collection_interval and
the DCGM exporter every accelerated_compute_gpu_metrics_collection_interval (below 60 s its GPU metrics come as
distributions, one count per collection). gpudash writes both in the add-on's configuration
(cloudwatch.addon_metrics_interval, addon_gpu_interval) and builds the per-GPU alarm's counts from them. Stories told
in what the add-on publishes at those intervals (tests/support/container_insights_addon), judged at every minute:
a healthy cluster never pages, an exporter stopped on one node pages, whatever the intervals.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support.container_insights_addon import capacity, datapoints
from tests.support.container_insights_story import (ALARM, CLUSTER, GPUS, NODES, ONSET, PER_GPU_ALARM, SYSTEM_NODES,
                                                    paged_at, read_points)
from tests.support.dcgm_fleet import FLEET

END, CHANGE, FIRST = 2700, 1200, 600  # judged from minute 10 to minute 45; the exporter stops at minute 20
# (node metrics, DCGM) collection intervals, seconds: the defaults, node metrics faster and slower, high frequency.
INTERVALS = ((60, 60), (30, 60), (100, 60), (60, 10), (30, 10), (60, 30), (150, 60))


def _requests(folder, metrics_interval: int, gpu_interval: int) -> tuple[dict, dict, dict]:
    (folder / "gpudash.yaml").write_text(f"cloudwatch:\n  source: container-insights\n"
                                         f"  addon_metrics_interval: {metrics_interval}\n"
                                         f"  addon_gpu_interval: {gpu_interval}\n")
    files = encode(build(load_project(folder / "gpudash.yaml"), grafana=False))  # alarms and the add-on's config
    found = {i["Request"]["AlarmName"]: i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    addon = json.loads(files["cloudwatch/container-insights-addon.json"])
    return found[ALARM], found[PER_GPU_ALARM], addon["agent"]["config"]["logs"]["metrics_collected"]["kubernetes"]


def _story(requests, metrics_interval: int, gpu_interval: int, stopped: bool) -> list:
    """Two GPU nodes and a system node; with `stopped`, the exporter on the second node stops at CHANGE (its agent
    still collects the node's metrics; the DaemonSet counts its pod unavailable)."""
    before = CHANGE if stopped else END
    read = {m["MetricStat"]["Metric"]["MetricName"] for r in requests for m in r["Metrics"] if "MetricStat" in m}
    points = datapoints(CLUSTER, 0, before - gpu_interval, FLEET, every=gpu_interval, metrics=read)
    points += capacity(CLUSTER, 0, before - metrics_interval, GPUS, len(GPUS) + SYSTEM_NODES, exporter=(2, 0),
                       every=metrics_interval)
    if stopped:
        points += datapoints(CLUSTER, CHANGE, END - gpu_interval, tuple(g for g in FLEET if g.node == NODES[0]),
                             every=gpu_interval, metrics=read)
        points += capacity(CLUSTER, CHANGE, END - metrics_interval, GPUS, len(GPUS) + SYSTEM_NODES,
                           exporter=(1, 1), every=metrics_interval)
    return read_points(points, requests)


@pytest.mark.parametrize("intervals", INTERVALS, ids=lambda i: f"node {i[0]} s, dcgm {i[1]} s")
def test_the_alarms_count_collections_at_the_add_on_s_intervals(tmp_path, intervals):
    cluster_alarm, per_gpu, kubernetes = _requests(tmp_path, *intervals)
    assert (kubernetes["metrics_collection_interval"],
            kubernetes["accelerated_compute_gpu_metrics_collection_interval"]) == intervals
    requests = cluster_alarm, per_gpu
    healthy = _story(requests, *intervals, stopped=False)
    paged = [end // 60 for end in range(FIRST, END + 1, 60) if paged_at(requests, healthy, end)]
    assert paged == [], f"a healthy cluster paged at minutes {paged}"
    stopped = _story(requests, *intervals, stopped=True)
    quiet = [end // 60 for end in range(FIRST, END + 1, 60)
             if (end <= CHANGE or end >= CHANGE + ONSET) and paged_at(requests, stopped, end) != (end > CHANGE)]
    assert quiet == [], f"an exporter stopped at minute {CHANGE // 60}: wrong at minutes {quiet}"


def test_a_period_that_is_not_a_whole_number_of_the_add_on_s_collections_is_refused(tmp_path, cli):
    """120 s node metrics hold 2 or 3 collections in a 5-minute period: no count of them is exact. (In process: an
    exception the command does not turn into its message would raise here.)"""
    (tmp_path / "gpudash.yaml").write_text("cloudwatch:\n  source: container-insights\n  addon_metrics_interval: 120\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "build"))
    assert code == 2, stderr
    assert "cloudwatch.addon_metrics_interval 120 s" in stderr and "Traceback" not in stderr
    assert not (tmp_path / "build").exists()

"""cloudwatch.source: container-insights: the data-missing alarm fires when GPUs exist but their DCGM metrics
stop arriving, and not when no pod holds a GPU or the GPU node group is at zero.

The same kind of stories as tests/integration/test_data_missing.py (two GPU nodes and a system node,
healthy for 20 minutes, then the change, judged at minute 35), told in what the add-on publishes: its
DCGM node and pod metrics (tests/support/container_insights_addon.datapoints) and, from the kubelet and
the API server, each GPU node's `node_gpu_limit` and the cluster's `cluster_node_count`, collected at
another phase than the DCGM scrape (container_insights_addon.capacity). The generated alarm is evaluated
with CloudWatch's documented metric-math and missing-data semantics (tests/support/cloudwatch_eval.py).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Datapoint
from tests.support.container_insights_addon import (DAEMONSET_NAMES, DECLARATIONS, EARLIER, EVERY, NAMESPACE,
                                                    MigInstance, attributes, capacity, datapoints, mig_datapoints)
from tests.support.container_insights_story import (ALARM, CHANGE, CLUSTER, END, FIRST, GPUS,  # noqa: F401 (fixtures)
                                                    NODES, ONSET, SITUATIONS, alarm_states, paged_at, read_points,
                                                    request_, requests_, story_points)
from tests.support.dcgm_fleet import FLEET, Gpu


@pytest.mark.parametrize("situation", SITUATIONS, ids=lambda s: s.name)
def test_the_alarm_fires_when_gpus_exist_but_their_metrics_stop(requests_, situation):
    """Judged at every minute, as CloudWatch evaluates an alarm (its window advances each minute): a firing story
    pages at every minute from ONSET after its change, a quiet one never; none before its change."""
    story = story_points(situation, requests_)
    for end in range(FIRST, END + 1, EVERY):
        states = alarm_states(requests_, story, end)
        if end <= CHANGE or not situation.fires:
            assert "ALARM" not in states.values(), f"{situation.name} at minute {end // 60}: {states}"
        elif end >= CHANGE + ONSET:
            assert "ALARM" in states.values(), f"{situation.name} at minute {end // 60}: {states}"


ROLLOUT_NODES = tuple(f"ip-10-0-3-{i:02d}" for i in range(20))
ROLLOUT_START, ROLLOUT_END = 1200, 3600


def _rollout(requests, gpus_per_node: int, stopped: str | None = None) -> list:
    """The add-on's DCGM exporter DaemonSet rolls (an add-on upgrade changes its image), one node a minute from
    minute 20, each node's exporter pod replaced within the minute: one DCGM collection missed on that node; the
    DaemonSet counts one pod unavailable meanwhile; the agent is untouched. `stopped`: a node whose exporter
    does not come back."""
    fleet = tuple(Gpu(node, i) for node in ROLLOUT_NODES for i in range(gpus_per_node))

    def rolling(t):
        i = (t - ROLLOUT_START) // EVERY
        return ROLLOUT_NODES[i] if 0 <= i < len(ROLLOUT_NODES) else None

    points = []
    for t in range(0, ROLLOUT_END, EVERY):
        node = rolling(t)
        points += capacity(CLUSTER, t, t, dict.fromkeys(ROLLOUT_NODES, gpus_per_node), len(ROLLOUT_NODES) + 1,
                           exporter=(len(ROLLOUT_NODES) - (node is not None), int(node is not None)))
        points += [Datapoint(NAMESPACE, "node_gpu_temperature", tuple(sorted((d, labels[d]) for d in dims)),
                             float(t), 40.0)
                   for gpu in fleet if gpu.node != node and not (gpu.node == stopped and t >= ROLLOUT_START)
                   for labels in [attributes(CLUSTER, gpu)]
                   for dims in DECLARATIONS["node"]]
    return read_points(points, requests)


@pytest.mark.parametrize("gpus_per_node", (1, 8))
def test_a_rolling_update_of_the_exporter_daemonset_never_pages(requests_, gpus_per_node):
    """Each node's GPU data missing one minute is not missing data (its exporter is back within a period), however
    the misses of 20 nodes fall into the periods."""
    story = _rollout(requests_, gpus_per_node)
    paged = [end // 60 for end in range(FIRST, ROLLOUT_END + 1, EVERY) if paged_at(requests_, story, end)]
    assert paged == []


def test_an_exporter_stopped_during_the_rollout_pages(requests_):
    """The other side: the same rollout, with one node's exporter never coming back, pages."""
    story = _rollout(requests_, 1, stopped=ROLLOUT_NODES[0])
    assert paged_at(requests_, story, ROLLOUT_START + ONSET)
    assert all(paged_at(requests_, story, end) for end in range(ROLLOUT_START + ONSET, ROLLOUT_END + 1, EVERY))


def test_a_node_that_takes_longer_than_the_documented_period_to_report_fires(request_):
    """The other side of the bound the alarm's description states (a gap under one period never fires): a GPU
    node the DaemonSet counts that reports its GPUs 12 minutes later breaches the two periods it covers whole."""
    late = replace(SITUATIONS[-2], added=720)
    states = cloudwatch_eval.alarm(request_, story_points(late, request_), CHANGE + 600)
    assert states == {(): "ALARM"}


def test_a_node_whose_gpus_are_all_mig_instances_of_the_mixed_strategy_keeps_it_in_alarm(request_):
    """Why verify fails such nodes: the kubelet advertises nvidia.com/mig-* and no nvidia.com/gpu, so the node
    publishes no node_gpu_limit, while the exporter DaemonSet runs there and its DCGM metrics arrive."""
    mig = replace(SITUATIONS[0], name="MIG mixed", gpu_nodes={NODES[0]: GPUS[NODES[0]]})
    states = cloudwatch_eval.alarm(request_, story_points(mig, request_), END)
    assert states == {(): "ALARM"}


MIG_SINGLE = "ip-10-0-1-3"
SEVEN = [MigInstance(i, "1g.5gb", 1000.0, 3864.0, 0.0, "team-a", f"mig-{i}") for i in range(1, 8)]  # one A100


@pytest.mark.xfail(strict=True, reason="MIG's single strategy advertises each MIG instance as nvidia.com/gpu, so "
                                       "node_gpu_limit counts 7 for an A100 split seven ways, while the add-on "
                                       "publishes that GPU's DCGM data once per collection (its agent keeps no "
                                       "instance label, the EMF exporter the first instance's reading): the per-GPU "
                                       "alarm reads 6 GPUs missing on a healthy node and stays in ALARM")
def test_a_healthy_node_of_mig_s_single_strategy_keeps_the_per_gpu_alarm_ok(requests_):
    """A whole-GPU node and a node whose A100 MIG's single strategy splits into seven 1g.5gb instances (the kubelet
    counts 7 nvidia.com/gpu there, GPU feature discovery's count 7), every GPU reporting at every collection: no GPU
    misses data, so neither alarm fires."""
    whole = (Gpu("ip-10-0-1-1", 0),)
    points = (datapoints(CLUSTER, 0, END, whole) + mig_datapoints(CLUSTER, MIG_SINGLE, 0, SEVEN, 0, END)
              + capacity(CLUSTER, 0, END, {"ip-10-0-1-1": 1, MIG_SINGLE: 7}, 3, exporter=(2, 0)))
    assert alarm_states(requests_, read_points(points, requests_), END) == dict.fromkeys(
        (r["AlarmName"] for r in requests_), "OK")


@pytest.mark.xfail(strict=True, reason="a GPU MIG's mixed strategy splits is no nvidia.com/gpu (the kubelet counts "
                                       "nvidia.com/mig-*), so node_gpu_limit leaves it out while the add-on publishes "
                                       "its DCGM data: its readings make up for a GPU of another node that stopped "
                                       "reporting, and the per-GPU alarm stays OK")
def test_a_gpu_that_stops_beside_a_mig_gpu_of_the_mixed_strategy_fires_the_per_gpu_alarm(requests_):
    """ip-10-0-1-2 holds a whole GPU and one MIG's mixed strategy splits in two (the kubelet counts 1 nvidia.com/gpu
    there); ip-10-0-1-1's one GPU stops reporting at minute 20 while its agent goes on: a GPU the kubelet counts
    misses its data from then on, which the per-GPU alarm fires for (it does without the MIG GPU)."""
    mixed, stopped = "ip-10-0-1-2", "ip-10-0-1-1"
    split = [MigInstance(1, "3g.20gb", 1000.0, 19000.0, 0.0, "team-a", "mig-a-0"),
             MigInstance(2, "4g.20gb", 1000.0, 19000.0, 0.0, "team-b", "mig-b-0")]
    points = (datapoints(CLUSTER, 0, END, (Gpu(mixed, 0),)) + datapoints(CLUSTER, 0, CHANGE - EVERY, (Gpu(stopped, 0),))
              + capacity(CLUSTER, 0, END, {mixed: 1, stopped: 1}, 3, exporter=(2, 0)))
    per_gpu = requests_[1]
    assert cloudwatch_eval.alarm(per_gpu, points, END) == {(): "ALARM"}  # the story without the MIG GPU
    points += mig_datapoints(CLUSTER, mixed, 1, split, 0, END)
    assert cloudwatch_eval.alarm(per_gpu, read_points(points, requests_), END) == {(): "ALARM"}


def test_the_per_gpu_alarm_says_what_gpus_split_into_mig_instances_do_to_it(requests_):
    """What the two strict xfails above pin, its description says (in full or in its short form)."""
    described = requests_[1]["AlarmDescription"]
    assert "A GPU split into MIG instances" in described and "alarms.expected_gpus: none" in described


def test_the_add_on_publishes_node_metrics_for_gpus_no_pod_holds():
    """What the 'no pod holds a GPU' story rests on: idle GPUs publish node_ metrics, no container_ or pod_ ones."""
    idle = tuple(Gpu(g.node, g.index) for g in FLEET)
    names = {p.metric.split("_", 1)[0] for p in datapoints(CLUSTER, 0, 240, idle)}
    assert names == {"node"}
    counted = [p for p in datapoints(CLUSTER, 0, 240, idle)
               if p.metric == "node_gpu_temperature" and p.dimensions == (("ClusterName", CLUSTER),)]
    assert len(counted) == len(FLEET) * 5  # one observation per GPU and scrape


def test_the_alarm_reads_the_add_on_s_own_metrics_of_the_cluster(request_):
    """Metrics of the cluster and of the add-on's exporter DaemonSet in ContainerInsights: no kube-state-metrics
    series, no custom metric."""
    stats = {m["Id"]: m["MetricStat"] for m in request_["Metrics"] if "MetricStat" in m}
    assert {i: (s["Metric"]["Namespace"], s["Metric"]["MetricName"], s["Stat"]) for i, s in stats.items()} == {
        "n": ("ContainerInsights", "cluster_node_count", "SampleCount"),
        "c": ("ContainerInsights", "node_gpu_limit", "Sum"),
        "g": ("ContainerInsights", "node_gpu_temperature", "SampleCount"),
        **{i: ("ContainerInsights", name, "Average") for i, name in zip(("da", "du", "ea", "eu"),
                                                                       DAEMONSET_NAMES + EARLIER)}}
    cluster = [{"Name": "ClusterName", "Value": CLUSTER}]
    exporter = cluster + [{"Name": "Namespace", "Value": "amazon-cloudwatch"}, {"Name": "PodName", "Value": "dcgm-exporter"}]
    assert {i: s["Metric"]["Dimensions"] == (exporter if i in ("da", "du", "ea", "eu") else cluster)
            for i, s in stats.items()} == dict.fromkeys(stats, True)
    assert request_["TreatMissingData"] == "breaching" and request_["ComparisonOperator"] == "LessThanThreshold"

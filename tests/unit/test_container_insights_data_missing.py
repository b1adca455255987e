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

import json
from dataclasses import dataclass, replace

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Datapoint
from tests.support.container_insights_addon import (DAEMONSET_NAMES, DECLARATIONS, EARLIER, EVERY, NAMESPACE,
                                                    attributes, capacity, datapoints)
from tests.support.dcgm_fleet import FLEET, Gpu

CLUSTER = "gpu-cluster"
END, CHANGE = 2100, 1200  # judged at minute 35; the change at minute 20
NODES = ("ip-10-0-1-1", "ip-10-0-1-2")
GPUS = {node: sum(1 for g in FLEET if g.node == node) for node in NODES}  # what the kubelet counts: 4 and 2
SYSTEM_NODES = 1
ALARM = f"gpudash-{CLUSTER}-gpu-data-missing-critical"
PER_GPU_ALARM = f"gpudash-{CLUSTER}-gpu-data-missing-per-gpu-critical"
FIRST = 600  # the first minute judged: two periods of history
ONSET = 660  # a firing story pages from this long after its change on


@dataclass(frozen=True)
class Situation:
    name: str
    reporting: tuple[str, ...]  # nodes whose DCGM metrics arrive after the change
    gpu_nodes: dict[str, int]  # GPU nodes after the change whose agent runs: the GPUs the kubelet counts
    fires: bool
    leader: bool = True  # the add-on's agent runs somewhere (its leader publishes the cluster's metrics)
    idle: bool = False  # no pod holds a GPU
    unreported: int = 0  # GPUs of the first reporting node that DCGM does not report
    joins: int = 0  # seconds after the change at which the reporting nodes' DCGM metrics start
    exporter: object = (2, 0)  # the add-on's exporter DaemonSet after the change: (available, unavailable),
    #                            a function of t, or None (not published)
    names: tuple[str, str] = DAEMONSET_NAMES
    added: int = 0  # seconds after the change at which a third GPU node (2 GPUs) reports (0: no such node)


def _until(seconds: int, before, after):
    """The DaemonSet's counts: `before` until `seconds` after the change, then `after`."""
    return lambda t: before if t < CHANGE + seconds else after


SITUATIONS = (
    Situation("healthy", NODES, GPUS, False),
    Situation("no pod holds a GPU (a node drained keeps its DaemonSet pods)", NODES, GPUS, False, idle=True),
    Situation("GPU node group scaled to zero", (), {}, False, exporter=(0, 0)),
    Situation("exporters restarted, reporting again 3 minutes later", NODES, GPUS, False, joins=180),
    Situation("exporter pod stopped on one node", NODES[:1], GPUS, True, exporter=(1, 1)),
    Situation("exporter DaemonSet deleted", (), GPUS, True, exporter=None),
    Situation("DCGM reports 3 of the 4 GPUs the kubelet counts on a node", NODES, GPUS, True, unreported=1),
    Situation("the add-on's agent stopped", (), {}, True, leader=False),
    Situation("the add-on's agent stopped on one GPU node only", NODES[:1], {NODES[0]: GPUS[NODES[0]]}, True),
    Situation("the same, with the receiver's earlier DaemonSet metric names", NODES[:1],
              {NODES[0]: GPUS[NODES[0]]}, True, names=EARLIER),
    # Known gap: without enhanced observability the leader publishes no DaemonSet counts, and nothing says
    # the node's GPUs are expected.
    Situation("the agent stopped on one GPU node, no DaemonSet counts published", NODES[:1],
              {NODES[0]: GPUS[NODES[0]]}, False, exporter=None),
    Situation("a GPU node removed: its agent stops 90 s before the DaemonSet stops counting it", NODES[:1],
              {NODES[0]: GPUS[NODES[0]]}, False, exporter=_until(90, (2, 0), (1, 0))),
    Situation("autoscaling adds a GPU node that reports 4 minutes after the DaemonSet counts it", NODES, GPUS,
              False, exporter=_until(120, (2, 1), (3, 0)), added=240),
    Situation("an added GPU node whose agent never reports", NODES, GPUS, True,
              exporter=_until(120, (2, 1), (3, 0)), added=10 ** 6),
)


@pytest.fixture(scope="module")
def requests_(tmp_path_factory):
    """The rule's two alarms: the cluster's (the add-on's agent) and the per-GPU one (each GPU's DCGM data)."""
    folder = tmp_path_factory.mktemp("addon")
    (folder / "gpudash.yaml").write_text("cloudwatch:\n  source: container-insights\n")
    files = encode(build(load_project(folder / "gpudash.yaml")))
    found = {i["Request"]["AlarmName"]: i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    return found[ALARM], found[PER_GPU_ALARM]


@pytest.fixture(scope="module")
def request_(requests_):
    return requests_[0]


def _states(requests: tuple, story: list, end: int) -> dict[str, str]:
    """{alarm name: state} of the rule's alarms at `end`."""
    return {r["AlarmName"]: cloudwatch_eval.alarm(r, story, end)[()] for r in requests}


def _paged(requests: tuple, story: list, end: int) -> bool:
    """The rule pages at `end`: one of its alarms is in ALARM."""
    return "ALARM" in _states(requests, story, end).values()


def _as_node(points: list, node: str) -> list:
    """Datapoints of another node: the same GPUs' readings under its NodeName and InstanceId."""
    rename = {"NodeName": node, "InstanceId": f"i-{node[-1] * 8}"}
    return [replace(p, dimensions=tuple((k, rename.get(k, v)) for k, v in p.dimensions)) for p in points]


def _story(situation: Situation, requests) -> list:
    gpus = tuple(Gpu(g.node, g.index) for g in FLEET) if situation.idle else FLEET
    points = datapoints(CLUSTER, 0, CHANGE - EVERY, gpus)
    points += capacity(CLUSTER, 0, CHANGE - EVERY, GPUS, len(GPUS) + SYSTEM_NODES, exporter=(2, 0),
                       names=situation.names)
    after = [g for g in gpus if g.node in situation.reporting]
    if situation.unreported:
        first = [g for g in after if g.node == situation.reporting[0]]
        after = [g for g in after if g not in first[-situation.unreported:]]
    if after:
        points += datapoints(CLUSTER, CHANGE + situation.joins, END - EVERY, tuple(after))
    if situation.leader:
        points += capacity(CLUSTER, CHANGE, END - EVERY, situation.gpu_nodes, len(situation.gpu_nodes) + SYSTEM_NODES,
                           exporter=situation.exporter, names=situation.names)
    if situation.added and CHANGE + situation.added < END:
        added = "ip-10-0-1-3"
        copied = tuple(g for g in gpus if g.node == NODES[1])
        points += _as_node(datapoints(CLUSTER, CHANGE + situation.added, END - EVERY, copied), added)
        points += [p for p in capacity(CLUSTER, CHANGE + situation.added, END - EVERY, {added: len(copied)}, 0)
                   if p.metric == "node_gpu_limit"]
    return _read(points, requests)


def _read(points: list, requests) -> list:
    """What the alarms read of `points`: what they cannot read changes nothing; it costs time."""
    requests = requests if isinstance(requests, tuple) else (requests,)
    read = {m["MetricStat"]["Metric"]["MetricName"] for r in requests for m in r["Metrics"] if "MetricStat" in m}
    return [p for p in points if p.metric in read]


@pytest.mark.parametrize("situation", SITUATIONS, ids=lambda s: s.name)
def test_the_alarm_fires_when_gpus_exist_but_their_metrics_stop(requests_, situation):
    """Judged at every minute, as CloudWatch evaluates an alarm (its window advances each minute): a firing story
    pages at every minute from ONSET after its change, a quiet one never; none before its change."""
    story = _story(situation, requests_)
    for end in range(FIRST, END + 1, EVERY):
        states = _states(requests_, story, end)
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
    return _read(points, requests)


@pytest.mark.parametrize("gpus_per_node", (1, 8))
def test_a_rolling_update_of_the_exporter_daemonset_never_pages(requests_, gpus_per_node):
    """Each node's GPU data missing one minute is not missing data (its exporter is back within a period), however
    the misses of 20 nodes fall into the periods."""
    story = _rollout(requests_, gpus_per_node)
    paged = [end // 60 for end in range(FIRST, ROLLOUT_END + 1, EVERY) if _paged(requests_, story, end)]
    assert paged == []


def test_an_exporter_stopped_during_the_rollout_pages(requests_):
    """The other side: the same rollout, with one node's exporter never coming back, pages."""
    story = _rollout(requests_, 1, stopped=ROLLOUT_NODES[0])
    assert _paged(requests_, story, ROLLOUT_START + ONSET)
    assert all(_paged(requests_, story, end) for end in range(ROLLOUT_START + ONSET, ROLLOUT_END + 1, EVERY))


def test_a_node_that_takes_longer_than_the_documented_period_to_report_fires(request_):
    """The other side of the bound the alarm's description states (a gap under one period never fires): a GPU
    node the DaemonSet counts that reports its GPUs 12 minutes later breaches the two periods it covers whole."""
    late = replace(SITUATIONS[-2], added=720)
    states = cloudwatch_eval.alarm(request_, _story(late, request_), CHANGE + 600)
    assert states == {(): "ALARM"}


def test_a_node_whose_gpus_are_all_mig_instances_of_the_mixed_strategy_keeps_it_in_alarm(request_):
    """Why verify fails such nodes: the kubelet advertises nvidia.com/mig-* and no nvidia.com/gpu, so the node
    publishes no node_gpu_limit, while the exporter DaemonSet runs there and its DCGM metrics arrive."""
    mig = replace(SITUATIONS[0], name="MIG mixed", gpu_nodes={NODES[0]: GPUS[NODES[0]]})
    states = cloudwatch_eval.alarm(request_, _story(mig, request_), END)
    assert states == {(): "ALARM"}


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

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
from dataclasses import dataclass

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.container_insights_addon import EVERY, capacity, datapoints
from tests.support.dcgm_fleet import FLEET, Gpu

CLUSTER = "gpu-cluster"
END, CHANGE = 2100, 1200  # judged at minute 35; the change at minute 20
NODES = ("ip-10-0-1-1", "ip-10-0-1-2")
GPUS = {node: sum(1 for g in FLEET if g.node == node) for node in NODES}  # what the kubelet counts: 4 and 2
SYSTEM_NODES = 1
ALARM = f"gpudash-{CLUSTER}-gpu-data-missing-critical"


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


SITUATIONS = (
    Situation("healthy", NODES, GPUS, False),
    Situation("no pod holds a GPU", NODES, GPUS, False, idle=True),
    Situation("GPU node group scaled to zero", (), {}, False),
    Situation("exporters restarted, reporting again 3 minutes later", NODES, GPUS, False, joins=180),
    Situation("exporter pod stopped on one node", NODES[:1], GPUS, True),
    Situation("exporter DaemonSet deleted", (), GPUS, True),
    Situation("DCGM reports 3 of the 4 GPUs the kubelet counts on a node", NODES, GPUS, True, unreported=1),
    Situation("the add-on's agent stopped", (), {}, True, leader=False),
    # Known gap: the agent on a GPU node publishes both that node's DCGM metrics and its capacity, so
    # with the agent stopped there (and running elsewhere) nothing says the node's GPUs are expected.
    Situation("the add-on's agent stopped on one GPU node only", NODES[:1], {NODES[0]: GPUS[NODES[0]]}, False),
)


@pytest.fixture(scope="module")
def request_(tmp_path_factory):
    folder = tmp_path_factory.mktemp("addon")
    (folder / "gpudash.yaml").write_text("cloudwatch:\n  source: container-insights\n")
    files = encode(build(load_project(folder / "gpudash.yaml")))
    (item,) = [i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]
               if i["Request"]["AlarmName"] == ALARM]
    return item


def _story(situation: Situation) -> list:
    gpus = tuple(Gpu(g.node, g.index) for g in FLEET) if situation.idle else FLEET
    points = datapoints(CLUSTER, 0, CHANGE - EVERY, gpus)
    points += capacity(CLUSTER, 0, CHANGE - EVERY, GPUS, len(GPUS) + SYSTEM_NODES)
    after = [g for g in gpus if g.node in situation.reporting]
    if situation.unreported:
        first = [g for g in after if g.node == situation.reporting[0]]
        after = [g for g in after if g not in first[-situation.unreported:]]
    if after:
        points += datapoints(CLUSTER, CHANGE + situation.joins, END - EVERY, tuple(after))
    if situation.leader:
        points += capacity(CLUSTER, CHANGE, END - EVERY, situation.gpu_nodes,
                           len(situation.gpu_nodes) + SYSTEM_NODES)
    return points


@pytest.mark.parametrize("situation", SITUATIONS, ids=lambda s: s.name)
def test_the_alarm_fires_when_gpus_exist_but_their_metrics_stop(request_, situation):
    story = _story(situation)
    for end in (CHANGE + 600, END):  # the change's own period and the next; the two after it
        states = cloudwatch_eval.alarm(request_, story, end)
        assert states == {(): "ALARM" if situation.fires else "OK"}, f"{situation.name} at {end} s"
    assert cloudwatch_eval.alarm(request_, story, CHANGE) == {(): "OK"}, f"{situation.name}: healthy before"


def test_the_add_on_publishes_node_metrics_for_gpus_no_pod_holds():
    """What the 'no pod holds a GPU' story rests on: idle GPUs publish node_ metrics, no container_ or pod_ ones."""
    idle = tuple(Gpu(g.node, g.index) for g in FLEET)
    names = {p.metric.split("_", 1)[0] for p in datapoints(CLUSTER, 0, 240, idle)}
    assert names == {"node"}
    counted = [p for p in datapoints(CLUSTER, 0, 240, idle)
               if p.metric == "node_gpu_temperature" and p.dimensions == (("ClusterName", CLUSTER),)]
    assert len(counted) == len(FLEET) * 5  # one observation per GPU and scrape


def test_the_alarm_reads_the_add_on_s_own_metrics_of_the_cluster(request_):
    """Three metrics of the cluster in ContainerInsights: no kube-state-metrics series, no custom metric."""
    stats = {m["Id"]: m["MetricStat"] for m in request_["Metrics"] if "MetricStat" in m}
    assert {i: (s["Metric"]["Namespace"], s["Metric"]["MetricName"], s["Stat"]) for i, s in stats.items()} == {
        "n": ("ContainerInsights", "cluster_node_count", "SampleCount"),
        "c": ("ContainerInsights", "node_gpu_limit", "Sum"),
        "g": ("ContainerInsights", "node_gpu_temperature", "SampleCount")}
    assert all(s["Metric"]["Dimensions"] == [{"Name": "ClusterName", "Value": CLUSTER}] for s in stats.values())
    assert request_["TreatMissingData"] == "breaching" and request_["ComparisonOperator"] == "LessThanThreshold"

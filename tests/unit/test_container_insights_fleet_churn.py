"""cloudwatch.source: container-insights: the data-missing alarm counts GPU NODES reporting, so the churn of a
healthy fleet (the add-on's agent restarted node by node, several nodes removed at once, a node joining) never
fires it, nor its per-GPU alarm, while an agent stopped on one node of many does within three periods.

A fleet of 20 GPU nodes (one GPU each) and a system node, told in what the add-on publishes
(tests/support/container_insights_addon.capacity: node_gpu_limit per node and collection, the leader's
cluster and DaemonSet metrics) plus one DCGM observation per GPU and collection from the same agent. The
generated alarm is evaluated with CloudWatch's documented semantics (tests/support/cloudwatch_eval.py).
"""

from __future__ import annotations

import pytest

from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Datapoint
from tests.support.container_insights_addon import EVERY, NAMESPACE, capacity
from tests.support.container_insights_story import CLUSTER, request_, requests_  # noqa: F401 (fixtures)

NODES = tuple(f"ip-10-0-3-{i:02d}" for i in range(20))
START, END = 1200, 3600  # the fleet's changes happen from minute 20; stories run to minute 60


def _fleet(request, up, exporter) -> list[Datapoint]:
    """Each minute t: `up(t)` the GPU nodes whose agent collects at t, `exporter(t)` the exporter DaemonSet's
    (available, unavailable) pods as the leader reads them at t."""
    (observed,) = [m["MetricStat"]["Metric"]["MetricName"] for m in request["Metrics"] if m["Id"] == "g"]
    points = []
    for t in range(0, END, EVERY):
        nodes = up(t)
        points += capacity(CLUSTER, t, t, dict.fromkeys(nodes, 1), len(NODES) + 1, exporter=exporter(t))
        points += [Datapoint(NAMESPACE, observed, dims, float(t + 7), 40.0) for node in nodes
                   for dims in ((("ClusterName", CLUSTER),), _gpu_set(node))]
    return points


def _gpu_set(node: str) -> tuple:
    """The node's one GPU in the add-on's per-GPU set (what the per-GPU alarm's query reads)."""
    return tuple(sorted({"ClusterName": CLUSTER, "NodeName": node, "InstanceId": f"i-{node[-2:]}",
                         "InstanceType": "p4d.24xlarge", "GpuDevice": "nvidia0"}.items()))


def _states(request, story, first: int, last: int) -> dict[int, str]:
    """The alarm's state at each minute; of several alarms (a tuple), ALARM when one of them is."""
    requests = request if isinstance(request, tuple) else (request,)
    return {end: "ALARM" if any(cloudwatch_eval.alarm(r, story, end)[()] == "ALARM" for r in requests) else "OK"
            for end in range(first, last + 1, EVERY)}


def test_a_rolling_restart_of_the_add_on_s_agent_never_fires(requests_):
    """An add-on upgrade or agent configuration change: the agent DaemonSet rolls one node at a time, each node
    missing one collection; the exporter DaemonSet is untouched."""
    def up(t):
        restarting = (t - START) // EVERY
        return [n for i, n in enumerate(NODES) if i != restarting]

    story = _fleet(requests_[0], up, lambda t: (len(NODES), 0))
    states = _states(requests_, story, START, END)  # neither the cluster's alarm nor the per-GPU one
    assert set(states.values()) == {"OK"}, {t: s for t, s in states.items() if s != "OK"}


@pytest.mark.parametrize("stop", range(START, START + 300, 30))
def test_four_nodes_removed_at_once_never_fire(requests_, stop):
    """Consolidation removes 4 of the 20 nodes at once, at any phase of the period: their agents stop 90 s before
    the exporter DaemonSet stops counting them."""
    removed = 4
    story = _fleet(requests_[0], lambda t: NODES if t < stop else NODES[removed:],
                   lambda t: (len(NODES) - (removed if t >= stop + 90 else 0), 0))
    states = _states(requests_, story, START, END)
    assert set(states.values()) == {"OK"}, {t: s for t, s in states.items() if s != "OK"}


@pytest.mark.parametrize("stop", range(START, START + 300, 60))
def test_the_agent_stopped_on_one_node_of_twenty_fires_within_fifteen_minutes(request_, stop):
    """The exporter keeps running there (the DaemonSet counts the node), its agent publishes nothing: OK before,
    ALARM from at most 15 minutes after, and ALARM while it stays stopped."""
    story = _fleet(request_, lambda t: NODES if t < stop else NODES[1:], lambda t: (len(NODES), 0))
    states = _states(request_, story, stop, END)
    fired = min(t for t, s in states.items() if s == "ALARM")
    assert fired <= stop + 900
    assert all(s == "ALARM" for t, s in states.items() if t >= fired)
    assert cloudwatch_eval.alarm(request_, story, START)[()] == "OK"


def test_the_alarm_counts_nodes_with_one_query_of_the_per_node_set(request_):
    """The nodes reporting are one Metrics Insights query over node_gpu_limit's per-node dimension set, grouped by
    node and ordered, within the 500 series a query returns, and summed to one series by documented math."""
    (query,) = [m for m in request_["Metrics"] if m.get("Expression", "").startswith("SELECT")]
    parsed = cloudwatch_eval.parse(query["Expression"])
    assert (parsed.namespace, parsed.metric, set(parsed.schema), parsed.group) == (
        "ContainerInsights", "node_gpu_limit", {"ClusterName", "NodeName", "InstanceId"}, ["NodeName"])
    assert parsed.where == [("ClusterName", "=", CLUSTER)] and parsed.order and parsed.limit == 500
    assert query["Period"] == next(m["MetricStat"]["Period"] for m in request_["Metrics"] if "MetricStat" in m)
    assert sum("MetricStat" in m for m in request_["Metrics"]) <= 10


def test_nodes_removed_in_consecutive_periods_never_page_the_per_gpu_alarm(requests_):
    """A scale-down removing 4 GPU nodes, then 4 more 5 minutes later: each removed node's last period holds part
    of its collections, of its capacity and of its GPU data alike, which is not GPU data missing (the per-GPU
    alarm weighs a GPU's missed collections against its node's), whichever minute the alarm is judged at."""
    def up(t):
        return NODES[(4 if t >= START + 120 else 0) + (4 if t >= START + 420 else 0):]

    story = _fleet(requests_[1], up, lambda t: (len(up(t - 90)), 0))
    states = _states(requests_[1], story, START, END)
    assert set(states.values()) == {"OK"}, {t: s for t, s in states.items() if s != "OK"}

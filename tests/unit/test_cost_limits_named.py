"""`gpudash cost` names the Metrics Insights limits a fleet passes: pinned cases where it stays silent.

Metrics Insights (user guide, "Metrics Insights quotas"): a query returns at most 500 series (a GROUP BY alarm
evaluates 500, PARTIAL_DATA beyond), and "if the SELECT, FROM, and WHERE clauses match more than 10,000 metrics,
the query only processes the first 10,000 of these metrics that it finds". `cost.limits` says so of GPUs per
cluster; what the queries count is series and metrics, which per pod are not the GPUs:

* a fleet of MIG GPUs has more pod series than GPUs: 400 GPUs split seven ways hold 2,000 pods, each a series of
  the per-pod GROUP BY alarms (framebuffer-full groups by namespace and pod, the MIG idle alarm by pod and
  instance): 2,000 series, of which 500 are evaluated;
* a pod is a metric of its own for as long as its data is in a query's range: a by-pod widget over the dashboards'
  6 hours (`start: -PT6H`) matches every pod that ran in them, the running ones and those started since, so 2,000
  pods running with 1,000,000 started a month (1,370 an hour) match 2,000 + 6 x 1,370 = 10,219 pods per metric.

Now `cost.limits` counts each query of the artifact set (generator/fleet_limits.py): its dimension set's metrics in
one cluster (pods, pod GPUs, GPUs, MIG instances, GPU nodes), the pods started within its range (a widget's range,
an alarm's window), per Region for a fleet alarm, and the Metrics Insights alarms in a Region. The cases below are
fleets the pins did not name.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.cost import HOURS_PER_MONTH, Fleet, limits
from generator.project import load_project


def test_the_bundled_per_pod_alarms_group_by_pod():
    """The facts the cases below rest on: the bundled per-pod alarms are GROUP BY alarms over pods, and the
    by-pod dashboard reads six hours."""
    artifacts = build(load_project(None, None))
    pod_alarms = [a.request["AlarmName"] for a in artifacts.alarms
                  if any('GROUP BY "namespace", "pod"' in m.get("Expression", "") for m in a.request.get("Metrics", []))]
    assert {"gpudash-gpu-cluster-framebuffer-full-warning", "gpudash-gpu-cluster-gpu-idle-mig-warning"} <= set(pod_alarms)
    (by_pod,) = [d for d in artifacts.cloudwatch_dashboards if d.name.endswith("-by-pod")]
    assert by_pod.body["start"] == "-PT6H"


def test_pods_past_500_series_on_fewer_gpus_are_told():
    fleet = Fleet(clusters=1, pods=2000, churn=0, gpus=400, mig_instances=7)
    pod_series = fleet.pods  # one series per pod (framebuffer-full), per pod instance (MIG idle)
    assert fleet.gpu_count < 500 < pod_series
    notes = limits(fleet)
    assert any("500" in note and "2,000" in note for note in notes), notes


def test_pod_churn_past_10000_metrics_in_the_dashboards_range_is_told():
    fleet = Fleet(clusters=1, pods=2000, churn=1_000_000)
    matched = fleet.pods + 6 * fleet.churn / HOURS_PER_MONTH
    assert matched > 10_000  # 10,219 pods' metrics in six hours
    notes = limits(fleet)
    assert any("10,000" in note for note in notes), notes


@pytest.fixture(scope="module")
def bundled():
    project = load_project(None, None)
    return project, build(project)


def _notes(bundled, **fleet):
    project, artifacts = bundled
    return limits(Fleet(**{"clusters": 1, "churn": 0, **fleet}), project, artifacts)


def _one(notes, text):
    (found,) = [note for note in notes if text in note]
    return found


def test_time_sliced_pods_past_500_on_few_gpus_name_the_per_pod_alarms(bundled):
    """800 pods sharing 100 GPUs: the framebuffer alarm's 800 pods and the idle alarm's 800 pod GPUs are past 500;
    the per-GPU alarms' 100 GPUs and the per-node alarm's 10 nodes are not."""
    note = _one(_notes(bundled, pods=800, gpus=100, nodes=10), "GROUP BY alarms past 500 series")
    assert "framebuffer-full-warning 800 pods" in note and "gpu-idle-warning 800 pod GPUs" in note, note
    assert "temp" not in note and "per-node" not in note and "mig" not in note, note
    assert "evaluates the 500 its ORDER BY ranks first" in note and "PARTIAL_DATA" in note


def test_pods_started_within_an_alarm_s_window_count(bundled):
    """400 pods running and 876,000 started a month (1,200 an hour): the 5-minute framebuffer alarm reads 400 + 100
    pods (not past 500), the idle alarm's 30 minutes 400 + 600 pod GPUs."""
    note = _one(_notes(bundled, pods=400, churn=876_000), "GROUP BY alarms past 500 series")
    assert "gpu-idle-warning 1,000 pod GPUs" in note and "framebuffer-full" not in note, note


def test_within_the_limits_nothing_is_said(bundled):
    assert _notes(bundled, pods=500, gpus=500, nodes=60) == []
    assert _notes(bundled, pods=5000, gpus=5000, nodes=600, clusters=10) == []


def test_gpu_nodes_count_per_node_and_one_per_gpu_without_nodes(bundled):
    """The per-node data-missing alarm groups by node: 600 GPUs on 75 nodes are 75 series; without --nodes a node
    per GPU (an upper bound, said)."""
    assert "per-node" not in _one(_notes(bundled, pods=600, gpus=600, nodes=75), "GROUP BY alarms past 500")
    note = _one(_notes(bundled, pods=600, gpus=600), "GROUP BY alarms past 500")
    assert "gpu-data-missing-per-node-critical 600 GPU nodes (one per GPU without --nodes)" in note, note


def test_queries_past_10000_metrics_name_alarms_and_widgets_per_range(bundled):
    """12,000 GPUs in a cluster: every per-GPU query matches 12,000; 9,000 pods with 100,000 started a month: the
    by-pod widgets' 6 hours hold 9,822 (within), no alarm's window passes."""
    note = _one(_notes(bundled, pods=12_000, gpus=12_000, nodes=1_500), "queries past 10,000 metrics")
    assert "12,000 GPUs over 5 min (gpu-temp-critical-critical" in note, note
    assert "12,000 pods over 6 h (" in note and "widgets of by-pod" in note, note
    assert "an alarm reports PARTIAL_DATA" in note
    assert not [n for n in _notes(bundled, pods=9_000, gpus=9_000, nodes=1_000, churn=100_000) if "10,000" in n]


def test_metrics_insights_alarms_past_200_in_a_region(bundled):
    """The bundled project makes 12 Metrics Insights alarms per cluster (the agent alarm, grouped by
    kube-state-metrics pod, and the GPU stopped reporting alarm per node among them; the cluster's data-missing alarm
    is metric math): 16 clusters in its one Region are 192, 17 are 204."""
    project, artifacts = bundled
    per_cluster = sum(1 for a in artifacts.alarms if any(str(m.get("Expression", "")).startswith("SELECT")
                                                         for m in a.request.get("Metrics", [])))
    assert per_cluster == 12
    assert not [n for n in _notes(bundled, pods=100, clusters=16) if "Region" in n]
    note = _one(_notes(bundled, pods=100, clusters=17), "Metrics Insights alarms in a Region")
    assert note.startswith("204 Metrics Insights alarms") and "the quota is 200 per Region" in note, note


def test_the_add_on_s_queries_are_counted_and_its_fleet_values_not_said_to_read_readings(tmp_path):
    """On the Container Insights add-on the fleet's values read the cluster-wide set (one metric), never past 500
    series; its per-pod and per-GPU alarms do pass it."""
    (tmp_path / "gpudash.yaml").write_text("cloudwatch:\n  source: container-insights\n")
    project = load_project(tmp_path / "gpudash.yaml")
    notes = limits(Fleet(clusters=1, pods=3000, churn=0, gpus=3000, nodes=400), project, build(project))
    assert not [n for n in notes if "read every reading" in n], notes
    note = _one(notes, "GROUP BY alarms past 500 series")
    assert "framebuffer-full-warning 3,000 pods" in note and "gpu-temp-high-warning 3,000 GPUs" in note, note


def test_cost_prints_each_limit(project_dir, cli):
    code, stdout, _ = cli("cost", "--config", str(project_dir("")), "--pods", "2000", "--gpus", "400",
                          "--mig-instances", "7")
    assert code == 0
    (line,) = [line for line in stdout.splitlines() if line.startswith("limit: GROUP BY alarms past 500")]
    assert "framebuffer-full-warning 2,000 pods" in line and "gpu-idle-mig-warning 2,000 pod GPUs" in line


def test_an_alarm_grouped_by_node_returns_a_series_per_group_not_per_gpu(tmp_path):
    """A GROUP BY query returns one series per group: an alarm over 3,000 GPUs grouped by node returns the 100
    nodes' series, not past 500 (its SCHEMA still matches 3,000 GPUs' metrics: within 10,000). The per-GPU alarm
    beside it is."""
    from tests.support.projects import defined_project

    project = defined_project(tmp_path, alarms="""
from generator.model import Alarm, Condition, Query

def alarms(ctx):
    temp = "DCGM_FI_DEV_GPU_TEMP"
    return [Alarm("node-hot", "A node's hottest GPU", Condition(Query(temp, "max", ("node",)), ">", 85)),
            Alarm("gpu-hot", "A hot GPU", Condition(Query(temp, "max", ("node", "gpu")), ">", 85))]
""")
    notes = limits(Fleet(clusters=1, pods=3000, churn=0, gpus=3000, nodes=100), project, build(project))
    note = _one(notes, "GROUP BY alarms past 500 series")
    assert "gpu-hot-warning 3,000 GPUs" in note, note
    assert "node-hot" not in note, note

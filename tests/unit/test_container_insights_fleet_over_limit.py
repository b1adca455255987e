"""cloudwatch.source: container-insights: the fleet's values now past their query's LIMIT.

The add-on's fleet values now read classic's per-GPU form (container_insights.fleet_per_gpu: node_* by NodeName and
GpuDevice, each GPU's mean over two collections, combined by metric math). A widget reads at most 400 metrics there
(dashboard_limit.ADDON_FLEET_METRICS: the overview's five such values and its five charts of top_gpus lines within
CloudWatch's 2,500 per dashboard), so its query returns 397 or 398 series: past them the widget reads its own fallback,
the node_ field per cluster ([ClusterName]: Sum and SampleCount over the collections a period holds), as classic does
past 500 GPUs (render/cloudwatch.readings_past_500). A fleet of 504 GPUs (63 nodes of 8), every collection arrived,
reads each value exact; with 6 GPUs it reads the per-GPU form; the overview's metrics fit CloudWatch's dashboard
quota.
"""

from __future__ import annotations

import json

import pytest

from generator.dashboard_limit import METRICS_PER_DASHBOARD, metrics_shown
from tests.support import built, cloudwatch_eval
from tests.support.cloudwatch_agent import Datapoint
from tests.support.cloudwatch_widgets import header

CLUSTER, END, EVERY = "gpu-cluster", 600, 60
ADDON = "cloudwatch:\n  source: container-insights\n"
OVERVIEW = f"cloudwatch/dashboards/gpudash-{CLUSTER}-overview.json"
TITLES = ("GPUs reporting", "Total power draw", "Average GPU utilization", "Average GPU temperature",
          "Framebuffer in use")
NODES, PER_NODE = 63, 8


def _readings(node: int, gpu: int) -> dict[str, float]:
    """What the add-on publishes of one GPU at each collection (its units: percent for the framebuffer's share)."""
    return {"node_gpu_temperature": 50.0 + gpu, "node_gpu_power_draw": 100.0 + node,
            "node_gpu_utilization": float(node % 100), "node_gpu_memory_utilization": 10.0 + gpu}


def _points(nodes: int, per_node: int) -> list[Datapoint]:
    """Every collection of the last 10 minutes, in the add-on's node_ sets (awsemf's GPU declarations)."""
    points = []
    for node in range(nodes):
        for gpu in range(per_node):
            labels = {"ClusterName": CLUSTER, "NodeName": f"n{node}", "InstanceId": f"i-{node:08d}",
                      "InstanceType": "g5.48xlarge", "GpuDevice": f"nvidia{gpu}"}
            sets = [("ClusterName",), ("ClusterName", "NodeName", "InstanceId", "InstanceType", "GpuDevice")]
            for metric, value in _readings(node, gpu).items():
                for dims in sets:
                    dimensions = tuple(sorted((d, labels[d]) for d in dims))
                    points += [Datapoint("ContainerInsights", metric, dimensions, float(t), value)
                               for t in range(0, END, EVERY)]
    return points


def _truth(nodes: int, per_node: int) -> dict[str, float]:
    gpus = [(n, g) for n in range(nodes) for g in range(per_node)]
    mean = lambda metric: sum(_readings(n, g)[metric] for n, g in gpus) / len(gpus)  # noqa: E731
    return {"GPUs reporting": len(gpus),
            "Total power draw": sum(_readings(n, g)["node_gpu_power_draw"] for n, g in gpus),
            "Average GPU utilization": mean("node_gpu_utilization"),
            "Average GPU temperature": mean("node_gpu_temperature"),
            "Framebuffer in use": mean("node_gpu_memory_utilization") / 100}


@pytest.mark.parametrize("nodes, per_node", [(NODES, PER_NODE), (3, 2)], ids=["504-gpus", "6-gpus"])
def test_the_fleets_values_are_true_past_their_limit(nodes, per_node):
    files = built.files(ADDON)
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    points = _points(nodes, per_node)
    truth = _truth(nodes, per_node)
    for title in TITLES:
        (line,) = cloudwatch_eval.widget(widgets[title], points, 0, END + 10, now=END + 10).values()
        assert abs(line[max(line)] - truth[title]) < 1e-9, (title, line, truth[title])


def test_the_overview_fits_the_dashboard_quota_and_says_where_the_fallback_starts():
    files = built.files(ADDON)
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    assert metrics_shown(body) <= METRICS_PER_DASHBOARD
    text = header(files, OVERVIEW)
    assert "from 397 on" in text and "from 398 on" in text, text
    assert "at most 400 metrics on the Container Insights add-on" in text


CHARTS = '''
from generator.model import Dashboard, Panel, Query, Row

def dashboards(ctx):
    yield Dashboard(id="trend", title="Fleet trend", description="the fleet over time", rows=[Row("Fleet", [
        Panel("Mean GPU utilization", Query("DCGM_FI_DEV_GPU_UTIL", "avg")),
        Panel("Total power", Query("DCGM_FI_DEV_POWER_USAGE", "sum")),
        Panel("GPUs", Query("DCGM_FI_DEV_GPU_TEMP", "count"))])])
'''


def test_a_fleet_chart_over_a_range_reads_every_gpu_past_the_limit(tmp_path):
    """Charts of the fleet over a range (a user's definitions: not now values) read the cluster's observations, every
    GPU at every period: the per-GPU form, whose fallback is a now value's, would read its LIMIT's GPUs only (8351ec81
    gave it to them too: 500 of 504 GPUs, and a LIMIT counts distinct series over the whole range)."""
    from generator.artifacts import build
    from generator.output import encode
    from generator.project import load_project

    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "trend.py").write_text(CHARTS)
    (tmp_path / "gpudash.yaml").write_text(ADDON + "definitions:\n  dashboards: [dashboards]\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml"), grafana=False))
    body = json.loads(json.loads(files[f"cloudwatch/dashboards/gpudash-{CLUSTER}-trend.json"])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    truth = _truth(NODES, PER_NODE)
    points = _points(NODES, PER_NODE)
    for title, value in (("Mean GPU utilization", truth["Average GPU utilization"]),
                         ("Total power", truth["Total power draw"]), ("GPUs", truth["GPUs reporting"])):
        (line,) = cloudwatch_eval.widget(widgets[title], points, 0, END).values()
        assert line and all(abs(v - value) < 1e-9 for v in line.values()), (title, line, value)

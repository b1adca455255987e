"""cloudwatch.source: container-insights: a value now when one node's DCGM collection failed in the period drawn.

The add-on's agent collects each node's DCGM exporter every cloudwatch.addon_gpu_interval (60 s unless set). A value
now ("GPUs reporting", "Total power draw", the average utilization, temperature and framebuffer share, "Hottest GPU")
was drawn over a minute, one collection of each node, from the cluster's observations (node_* [ClusterName]) over
the collections a period holds, so a node whose collection failed in the minute drawn was left out of it: the
add-on's fleet (tests/support/container_insights_addon: 6 GPUs on two nodes, 963 W) read "GPUs reporting" 2 and
"Total power draw" 401 W for a minute when its 4-GPU node's collection failed, where Grafana's instant panels look
back over 4 scrape intervals; at 120 s the same failure read 4 GPUs and 664.5 W for two minutes. They now read
classic's per-GPU form (node_* by NodeName and GpuDevice, each GPU's mean over the period, counted, added or averaged
over the GPUs: container_insights.fleet_per_gpu) over two collections (render/cloudwatch.now_period: 120 s), so the
node has another collection in the period and its GPUs count whole.

Truth: on a fleet whose readings hold still (each GPU reads at every collection what it read at the first), a lost
collection loses no reading, so every value reads what it reads with every collection arrived; on the moving fleet
of the story each GPU's period mean is of the collections that arrived, and "GPUs reporting" stays exact.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.support import built, cloudwatch_eval
from tests.support.cloudwatch_widgets import header
from tests.support.container_insights_addon import EVERY, datapoints
from tests.support.dcgm_fleet import FLEET

CLUSTER, END = "gpu-cluster", 2100
ADDON = "cloudwatch:\n  source: container-insights\n"
OVERVIEW = f"cloudwatch/dashboards/gpudash-{CLUSTER}-overview.json"
BY_POD = f"cloudwatch/dashboards/gpudash-{CLUSTER}-by-pod.json"
TITLES = ("GPUs reporting", "Total power draw", "Average GPU utilization", "Average GPU temperature", "Hottest GPU",
          "Framebuffer in use")
MISSED = "ip-10-0-1-1"  # 4 of the 6 GPUs
LEFT_OUT = "a node whose collection failed in it is left out of it"


def _shown(files, missed_at: int | None, steady: bool) -> dict[str, float]:
    """Each value drawn at END + 10 with MISSED's collection at `missed_at` failing; `steady`: every collection reads
    what the first did."""
    points = []
    for t in range(0, END, EVERY):
        gpus = tuple(g for g in FLEET if (g.node, t) != (MISSED, missed_at))
        if steady:
            points += [replace(p, timestamp=float(t)) for p in datapoints(CLUSTER, 0, 0, gpus)]
        else:
            points += datapoints(CLUSTER, t, t, gpus)
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    shown = {}
    for title in TITLES:
        (line,) = cloudwatch_eval.widget(widgets[title], points, END - 6 * 3600, END + 10, now=END + 10).values()
        shown[title] = line[max(line)]
    return shown


def test_the_values_now_hold_two_collections_and_the_table_its_own():
    files = built.files(ADDON)
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    periods = {w["properties"]["title"]: w["properties"]["period"] for w in body["widgets"] if w["type"] == "metric"}
    assert {periods[t] for t in TITLES} == {2 * EVERY}, periods
    assert LEFT_OUT not in header(files, OVERVIEW)
    # the table of pods keeps its collection's minute (a pod's GPUs per collection), and says what a failure does
    assert LEFT_OUT in header(files, BY_POD), header(files, BY_POD)
    every_10 = built.files(ADDON + "  addon_gpu_interval: 10\n")  # six collections a minute
    assert LEFT_OUT not in header(every_10, BY_POD)


@pytest.mark.parametrize("steady", [True, False], ids=["steady", "moving"])
def test_a_failed_collection_in_the_period_drawn_reads_every_gpu(steady):
    files = built.files(ADDON)
    truth = _shown(files, None, steady)  # every collection arrived: the truth (tests/unit/test_container_insights)
    assert truth["GPUs reporting"] == len(FLEET)
    wrong = {}
    for missed_at in range(END - 300, END, EVERY):  # each collection of the last 5 minutes, one at a time
        shown = _shown(files, missed_at, steady)
        checked = TITLES if steady else ("GPUs reporting",)  # (moving: a GPU's mean is of its collections that came)
        wrong.update({(missed_at, t): (shown[t], truth[t]) for t in checked if abs(shown[t] - truth[t]) > 1e-9})
    assert not wrong, wrong  # before (a minute, [ClusterName]): {(2040, 'GPUs reporting'): (2.0, 6.0), ...}

"""cloudwatch.source: container-insights: a value now when one node's DCGM collection failed in the period drawn.

The add-on's agent collects each node's DCGM exporter every cloudwatch.addon_gpu_interval (60 s unless set), and a
value now ("GPUs reporting", "Total power draw", the average utilization and temperature, "Hottest GPU") is drawn
over now_period: a minute, one collection of each node. Its fleet values read the cluster's observations
(node_* [ClusterName]) over the collections a period holds, so a node whose collection failed in the minute drawn is
left out of it: the add-on's fleet (tests/support/container_insights_addon: 6 GPUs on two nodes, 963 W) read
"GPUs reporting" 2 and "Total power draw" 401 W for a minute when its 4-GPU node's collection failed (the means
22 % and 74.5 C for 35.33 % and 64.5 C), where Grafana's instant panels look back over 4 scrape intervals. Doubling
the period as render/cloudwatch.now_period does on the agent's pipelines (1fa09760) does not make it whole here:
at 120 s the same failure read 4 GPUs and 664.5 W for two minutes. The header says it (now_note); a failure of each
collection of the last 5 minutes is pinned against the truth (strict xfail: reading it whole needs the per-GPU
form of agent.pipeline: classic, node_* by NodeName and GpuDevice, with its fallback past 500 GPUs).
"""

from __future__ import annotations

import json

import pytest

from tests.support import built, cloudwatch_eval
from tests.support.cloudwatch_widgets import header
from tests.support.container_insights_addon import EVERY, datapoints
from tests.support.dcgm_fleet import FLEET

CLUSTER, END = "gpu-cluster", 2100
ADDON = "cloudwatch:\n  source: container-insights\n"
OVERVIEW = f"cloudwatch/dashboards/gpudash-{CLUSTER}-overview.json"
TITLES = ("GPUs reporting", "Total power draw", "Average GPU utilization", "Average GPU temperature", "Hottest GPU")
MISSED = "ip-10-0-1-1"  # 4 of the 6 GPUs


def _shown(files, missed_at: int | None) -> dict[str, float]:
    """Each value drawn at END + 10 with MISSED's collection at `missed_at` failing."""
    points = []
    for t in range(0, END, EVERY):
        points += datapoints(CLUSTER, t, t, tuple(g for g in FLEET if (g.node, t) != (MISSED, missed_at)))
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    shown = {}
    for title in TITLES:
        (line,) = cloudwatch_eval.widget(widgets[title], points, END - 6 * 3600, END + 10, now=END + 10).values()
        shown[title] = line[max(line)]
    return shown


def test_the_header_says_a_node_whose_collection_failed_is_left_out():
    text = header(built.files(ADDON), OVERVIEW)
    assert "a node whose collection failed in it is left out of it" in text, text
    every_10 = header(built.files(ADDON + "  addon_gpu_interval: 10\n"), OVERVIEW)  # six collections a minute
    assert "a node whose collection failed in it is left out" not in every_10


@pytest.mark.xfail(strict=True, reason="the add-on's fleet values read observations over collections: a node whose "
                                       "only collection in the minute drawn failed is left out (2 GPUs for 6)")
def test_a_failed_collection_in_the_period_drawn_reads_every_gpu():
    files = built.files(ADDON)
    truth = _shown(files, None)  # every collection arrived: each value is the truth (tests/unit/test_container_insights)
    assert truth["GPUs reporting"] == len(FLEET)
    wrong = {}
    for missed_at in range(END - 300, END, EVERY):  # each collection of the last 5 minutes, one at a time
        shown = _shown(files, missed_at)
        wrong.update({(missed_at, t): (shown[t], truth[t]) for t in TITLES if abs(shown[t] - truth[t]) > 1e-9})
    assert not wrong, wrong  # measured: {(2040, 'GPUs reporting'): (2.0, 6.0), (2040, 'Total power draw'): (401, 963),
    #                           (2040, 'Average GPU utilization'): (22.0, 35.33), (2040, '...temperature'): (74.5, 64.5)}

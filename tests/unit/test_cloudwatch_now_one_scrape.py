"""The fleet's values now at scrape intervals of a minute or more: a node's failed scrape is not a lost node.

The mixed fleet of test_cloudwatch_fleet_per_node_mixed (30 nodes of 1 to 8 GPUs, one of MIG GPUs: 129 GPUs, 32,607 W,
47.71 % and 55.05 °C), scraped every 60 s on agent.pipeline: otel, node 3's scrape failing once.
Grafana's twins are instant queries looking back over 4 scrape intervals: one failed scrape changes nothing there, and
the overview's header says a node "whose scrape failed in it counts its GPUs whole". A value now was drawn at the
least multiple of a minute holding whole scrapes: one scrape of each node at 60 s (the one interval settings allow
that a minute holds once: 75, 100 and 150 s make periods of 300 s, 4, 3 and 2 scrapes), so the failed scrape
left node 3 out of the period drawn: "GPUs reporting" read 125 for 129 and "Total power draw" 32,081 W for 32,607
for a minute (the means 48.42 % and 55.44 °C). The period now holds two scrapes at least (render/cloudwatch.
now_period: 120 s at 60 s scrapes), so a failed scrape leaves the node another. Whatever scrape of
the drawn period's fails, each value reads the truth; the header says the period.
"""

from __future__ import annotations

import json

import pytest

from tests.support import built, cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header
from tests.support.dcgm_fleet import exporter_targets
from tests.unit.test_cloudwatch_fleet_per_node_mixed import FAILED, NODES, TITLES, _page, _truth
from tests.unit.test_cloudwatch_fleet_over_500 import AGENT_FILE, OVERVIEW

END = 7200


def _now(interval: int, failed_at: int | None) -> tuple[dict, dict[str, float]]:
    """(each value's widget, the value drawn at END) with node 3's scrape at `failed_at` failing."""
    files = built.files(f"scrape:\n  interval: {interval}s\n")
    config, job = agent_config(files[AGENT_FILE])
    targets = exporter_targets(job, NODES)
    scrapes = [Scrape(float(t), "" if (n, t) == (FAILED, failed_at) else _page(n), targets[n])
               for t in range(END - 20 * interval, END, interval) for n in range(NODES)]
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    points = Agent(config, job, only=cloudwatch_eval.reads(*(widgets[t] for t in TITLES))).run(
        sorted(scrapes, key=lambda scrape: scrape.timestamp))
    shown = {}
    for title in TITLES:
        (line,) = cloudwatch_eval.widget(widgets[title], points, END - 6 * 3600, END, now=END).values()
        shown[title] = line[max(line)]
    return files, shown


@pytest.mark.parametrize("interval, period", [(60, 120), (30, 60), (20, 60), (150, 300)])
def test_a_value_now_holds_two_scrapes_at_least(interval, period):
    files = built.files(f"scrape:\n  interval: {interval}s\n")
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    for widget in body["widgets"]:
        if widget["type"] == "metric" and widget["properties"]["title"] in TITLES:
            assert widget["properties"]["period"] == period, widget["properties"]["title"]
    drawn = "latest whole minute" if period == 60 else f"latest whole period of {period} s"
    assert drawn in header(files, OVERVIEW), header(files, OVERVIEW)


@pytest.mark.parametrize("interval", [60])
def test_a_failed_scrape_in_the_period_drawn_reads_every_gpu(interval):
    truth = _truth()
    for failed_at in range(END - 300, END, interval):  # each scrape of the last 5 minutes, one at a time
        _, shown = _now(interval, failed_at)
        assert all(abs(shown[t] - truth[t]) < 1e-9 for t in TITLES), (interval, failed_at, shown, truth)

"""Counter widgets read the truth when the agent scrapes every 60 s (scrape.interval: 60s), on both agent pipelines.

The crafted fleet is scraped every 60 s: each published delta is a minute's growth, and a widget's increase over a
period is the growth since the reading before it. The truth (dcgm_fleet.truth with every=60) takes each reading's
growth since the collector's reading before it, a minute earlier, not since the exporter's value 30 s earlier.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.model import Query
from generator.output import encode
from generator.project import load_project
from generator.render.cloudwatch import panel_title
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.cloudwatch_widgets import assert_shows, panel, widgets
from tests.support.dcgm_fleet import STEP, scrapes, truth

EVERY, START, END = 60, 0, 2400
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
PCIE = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"


def test_the_truth_of_a_counters_increase_is_its_growth_over_the_period_at_any_interval():
    """PCIe replays grow 40 per 5 minutes on a GPU of the fleet (4 a scrape of 30 s) whatever the collector's
    interval: read every 60 s the growth of a period is still 40 (it read 20, the growth of 30 s at each reading)."""
    metric = load_project().catalog.get(PCIE)
    increase = Query(PCIE, "sum", ("node", "gpu"), as_increase=True)
    for every in (STEP, EVERY):
        assert truth(increase, metric, START, 600, 300, every=every)["ip-10-0-1-1 GPU 0"] == {0: 40.0, 300: 40.0}, every


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_every_counter_widget_reads_the_truth_at_a_60_s_scrape(tmp_path, pipeline):
    (tmp_path / "gpudash.yaml").write_text(f"agent:\n  pipeline: {pipeline}\nscrape:\n  interval: 60s\n")
    project = load_project(tmp_path / "gpudash.yaml")
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    datapoints = Agent(config, job).run([s for s in scrapes(job, project.catalog, -2, END // STEP - 1)
                                         if s.timestamp % EVERY == 0])
    checked = 0
    for path, properties in widgets(files):
        title = panel_title(properties["title"])
        query = panel(project, path, title, "gpu-cluster").queries[0]
        metric = project.catalog.get(query.metric)
        if not metric.is_counter:
            continue
        shown = cloudwatch_eval.widget(properties, datapoints, START, END)
        start, period = cloudwatch_eval.widget_range(properties, START, END)
        expected = {(label or title): series
                    for label, series in truth(query, metric, start, END, period, every=EVERY).items()}
        if any(" MIG " in label for label in shown):  # classic: one line per GPU instance, these GPUs whole
            expected = {f"{label} MIG none": series for label, series in expected.items()}
        assert_shows(shown, expected, title)
        checked += 1
    assert checked >= 4

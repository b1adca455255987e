"""A CloudWatch dashboard header says a chart "weighs" a MIG GPU once per instance (or a shared GPU once per pod)
exactly where the chart does: where the MIG node's value on the chart differs from its GPUs' truth.

The note is derived from how the agent publishes the field (cloudwatch_query.merged_copies: the OTel pipeline
merges a counter's copies per GPU, the classic pipeline publishes each copy), not from the chart's title; each
pipeline is run through the agent model on the mixed fleet, whose MIG node has two A100s of two instances each.
"""

from __future__ import annotations

import pytest

from generator.cloudwatch_query import WEIGHS_PER_SERIES
from tests.support import mixed_fleet
from tests.support.cloudwatch_widgets import said, shown_through_agent

STEP, END = 30, 2100
DASHBOARD = """\
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="nodes", title="Nodes", rows=[Row("All", [
        Panel("Node energy rate", Query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "sum", ("node",)), unit="milliwatt"),
        Panel("Node power", Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("node",)), unit="watt"),
        Panel("Node GPUs", Query("DCGM_FI_DEV_POWER_USAGE", "count", ("node",))),
    ])])
"""
(MIG,) = [node for node in mixed_fleet.FLEET if node.name == "gpu-node-mig"]
TRUTH = {"Node energy rate": sum(g.energy_mw for g in MIG.gpus), "Node power": sum(g.power for g in MIG.gpus),
         "Node GPUs": len(MIG.gpus)}
NOTE = WEIGHS_PER_SERIES[:40]


@pytest.fixture(scope="module", params=["otel", "classic"])
def shown(request, tmp_path_factory):
    return shown_through_agent(tmp_path_factory.mktemp(request.param), request.param, DASHBOARD, 'nodes', STEP, END)


def test_the_note_is_said_of_a_chart_exactly_where_the_mig_node_reads_other_than_its_gpus(shown):
    pipeline, values, text = shown
    assert set(values) == set(TRUTH), values
    off = {title for title in TRUTH if values[title]["gpu-node-mig"] != pytest.approx(TRUTH[title])}
    noted = {title for title in TRUTH if said(text, title, NOTE)}
    assert noted == off, (pipeline, {title: (values[title]["gpu-node-mig"], TRUTH[title]) for title in TRUTH})
    # the fleet's MIG node repeats a device field per instance: classic adds each copy; the OTel pipeline reads each
    # GPU's reading once (its copies merged at the agent), the power and the GPUs counted as the alarm reads them
    assert off == ({"Node energy rate", "Node power", "Node GPUs"} if pipeline == "classic" else set())

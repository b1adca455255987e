"""A dashboard header that says a chart reads a MIG GPU once per instance, where the chart reads it once.

A per-node sum of a device counter (`Query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "sum", ("node",))`) on the OTel
pipeline (the default) reads the per-GPU set, whose counter the agent merges per GPU (metricstransform/gpudash:
`gpudash.gpu.<field>`, max by ClusterName, UUID, exporter_revision, gpu, node): a MIG GPU's instances give one
series. Through the agent model on the mixed fleet the MIG node's "Node energy rate" reads 500,000 mW, its GPUs'
350 + 150 W: the truth. Its header says otherwise: "Node energy rate, Node power: a GPU split into MIG instances, or
shared by time-slicing, weighs once per instance or pod" - true of the power then (1,000 W for 500), not of the
energy. A reader correcting the chart by the note would halve a true value. (The power reads each GPU once now.)
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support import mixed_fleet
from tests.support.agent_points import through_agent
from tests.support.cloudwatch_widgets import header, latest_values, said, widgets_read
from tests.support.projects import defined_project

STEP, END = 30, 2100
DASHBOARD = """\
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="nodes", title="Nodes", rows=[Row("All", [
        Panel("Node energy rate", Query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "sum", ("node",)), unit="milliwatt"),
        Panel("Node power", Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("node",)), unit="watt"),
    ])])
"""
NOTE = "a GPU split into MIG instances"


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    files = encode(build(defined_project(tmp_path_factory.mktemp("nodes"), dashboards=DASHBOARD)))
    values = latest_values(files, through_agent(files, STEP, END, only=widgets_read(files)), END)
    return values, header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-nodes.json")


def test_the_mig_node_reads_its_gpus_energy_and_power_once(shown):
    """The power too reads each GPU's reading once now (it read 1,000 W, once per instance, and was noted so:
    tests/unit/test_dashboard_mig_copies_once.py)."""
    values, text = shown
    (mig,) = [n for n in mixed_fleet.FLEET if n.name == "gpu-node-mig"]
    assert values["Node energy rate"]["gpu-node-mig"] == pytest.approx(sum(g.energy_mw for g in mig.gpus))  # 500,000
    assert values["Node power"]["gpu-node-mig"] == pytest.approx(sum(g.power for g in mig.gpus))  # 500 W
    assert not said(text, "Node power", NOTE)


def test_the_header_does_not_say_the_energy_chart_weighs_instances(shown):
    _, text = shown
    assert not said(text, "Node energy rate", NOTE)

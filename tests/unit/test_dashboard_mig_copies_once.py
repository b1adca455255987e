"""A CloudWatch widget's lines per node that count GPUs, or add or average a device field's readings (power,
temperature, SM clock), read each physical GPU once on the OTel pipeline, as the alarm of the same query does
(tests/unit/test_alarm_copies.py) and its Prometheus rule does (tests/integration/test_gpu_count_twins.py: a node's
power over 450 W fires for the MIG node's 500 W, over 700 W for none). The exporter writes a device field once per MIG
instance: over the per-GPU set the mixed fleet's MIG node (two A100s of 350 and 150 W, two instances each) drew
1,000 W and 4 GPUs per node; the widget now reads each GPU's reading once ([ClusterName, node, gpu, readings], the
copies merged at the agent). On agent.pipeline: classic nothing merges the copies: the header says a GPU weighs once
per instance, and a count of the GPUs reporting GPU utilization (9 of 11 there: MIG does not report it) says MIG GPUs
are left out (it said nothing). Values and legends read through the build's agent model and Metrics Insights'
semantics (cloudwatch_widgets.shown_through_agent)."""

from __future__ import annotations

from statistics import mean

import pytest

from generator.cloudwatch_query import MIG_LEFT_OUT, WEIGHS_PER_SERIES
from tests.support import mixed_fleet
from tests.support.cloudwatch_widgets import said, shown_through_agent

STEP, END = 30, 1800
FIELDS = {"DCGM_FI_DEV_POWER_USAGE": ("power", "watt"), "DCGM_FI_DEV_GPU_TEMP": ("temp", "celsius"),
          "DCGM_FI_DEV_SM_CLOCK": ("sm_clock", "mhz")}
HOW = {"count": len, "sum": sum, "avg": mean, "max": max, "min": min}
DASHBOARD = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
             "    yield Dashboard(id='copies', title='Copies', rows=[Row('Nodes', [\n" + "".join(
                 f"        Panel({f'{how} {fact}'!r}, Query({field!r}, {how!r}, ('node',)), "
                 f"unit={'count' if how == 'count' else unit!r}),\n"
                 for field, (fact, unit) in FIELDS.items() for how in HOW)
             + "        Panel('GPUs reporting utilization', Query('DCGM_FI_DEV_GPU_UTIL', 'count'), unit='count'),\n"
             + "    ])])\n")


def _truth(how: str, fact: str) -> dict[str, float]:
    return {node.name: HOW[how]([1 if how == "count" else getattr(gpu, fact) for gpu in node.gpus])
            for node in mixed_fleet.FLEET}


@pytest.fixture(scope="module", params=["otel", "classic"])
def shown(request, tmp_path_factory):
    return shown_through_agent(tmp_path_factory.mktemp(request.param), request.param, DASHBOARD, "copies", STEP, END)


def test_the_premise_the_mig_node_writes_each_device_reading_twice():
    (node,) = [node for node in mixed_fleet.FLEET if node.name == "gpu-node-mig"]
    assert [len(gpu.instances) for gpu in node.gpus] == [2, 2] and _truth("sum", "power")[node.name] == 500


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("field", FIELDS)
def test_each_gpu_is_read_once_per_node(shown, field, how):
    pipeline, values, text = shown
    fact = FIELDS[field][0]
    title, truth = f"{how} {fact}", _truth(how, fact)
    if pipeline == "otel" or how in ("max", "min"):  # a copy's extreme is the GPU's
        assert values[title] == pytest.approx(truth)
        assert not said(text, title, WEIGHS_PER_SERIES[:40])
    else:  # classic: each instance's copy is an observation; said in the header
        assert values[title]["gpu-node-mig"] == pytest.approx(truth["gpu-node-mig"] * (1 if how == "avg" else 2))
        assert said(text, title, WEIGHS_PER_SERIES[:40])


def test_a_count_of_gpus_reporting_utilization_says_mig_gpus_are_left_out(shown):
    pipeline, values, text = shown
    title = "GPUs reporting utilization"
    if pipeline == "otel":  # a MIG GPU's reading once is its instances' engine activity
        assert values[title] == {title: 11} and not said(text, title, MIG_LEFT_OUT[:40])
    else:
        assert values[title] == {title: 9} and said(text, title, MIG_LEFT_OUT[:40])

"""A CloudWatch widget that counts the GPUs reporting GPU utilization, or adds, averages or takes the extreme of it
over a node's or the cluster's GPUs, shows what Grafana shows: every physical GPU once, a MIG GPU by its instances'
graphics engine activity (x 100) averaged, the field that stands in for the utilization MIG does not report (the
Prometheus side's MIG branch, mixed_fleet.truth). Over the per-GPU set the widgets counted 9 of the mixed fleet's 11
GPUs and left the MIG node out (the header said so); on the OTel pipeline they read a GPU's reading once
([ClusterName, node, gpu, readings]), into which the agent merges a MIG GPU's stand-in. Values and legends read
through the build's agent model and Metrics Insights' semantics; agent.pipeline: classic, which merges nothing, still
leaves MIG GPUs out and says so."""

from __future__ import annotations

from statistics import mean

import pytest

from generator.cloudwatch_query import MIG_LEFT_OUT
from tests.support import mixed_fleet
from tests.support.cloudwatch_widgets import said, shown_through_agent

STEP, END = 30, 2100
UTIL = "DCGM_FI_DEV_GPU_UTIL"
HOW = {"count": len, "sum": sum, "avg": mean, "max": max, "min": min}
DASHBOARD = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
             "    yield Dashboard(id='util', title='Util', rows=[Row('All', [\n" + "".join(
                 f"        Panel({f'{how} {kind}'!r}, Query({UTIL!r}, {how!r}, {by!r}), kind={kind!r}"
                 f"{', unit=' + repr('percent') if how != 'count' else ''}),\n"
                 for how in HOW for kind, by in (("stat", ()), ("timeseries", ("node",)))) + "    ])])\n")


def _utilization(gpu: mixed_fleet.Gpu) -> float:
    return mean(i.engine * 100 for i in gpu.instances) if gpu.mig else gpu.util


def _truth(how: str, kind: str) -> dict[str, float]:
    if kind == "stat":
        return {f"{how} {kind}": HOW[how]([_utilization(gpu) for node in mixed_fleet.FLEET for gpu in node.gpus])}
    return {node.name: HOW[how]([_utilization(gpu) for gpu in node.gpus]) for node in mixed_fleet.FLEET}


@pytest.fixture(scope="module", params=["otel", "classic"])
def shown(request, tmp_path_factory):
    return shown_through_agent(tmp_path_factory.mktemp(request.param), request.param, DASHBOARD, 'util', STEP, END)


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("kind", ["stat", "timeseries"])
def test_every_gpu_is_shown_once(shown, how, kind):
    pipeline, values, text = shown
    title = f"{how} {kind}"
    if pipeline == "otel":
        assert values[title] == pytest.approx(_truth(how, kind))
        assert not said(text, title, MIG_LEFT_OUT[:40])
    else:  # nothing merges a MIG GPU's instances: the whole GPUs only, said in the header
        whole = tuple(node for node in mixed_fleet.FLEET if not any(gpu.mig for gpu in node.gpus))
        assert "gpu-node-mig" not in values[title]
        if how == "count" and kind == "stat":
            assert values[title] == pytest.approx({title: sum(len(node.gpus) for node in whole)})
        if how != "count":
            assert said(text, title, MIG_LEFT_OUT[:40])

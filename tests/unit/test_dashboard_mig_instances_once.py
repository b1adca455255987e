"""A CloudWatch widget over groups of GPUs (a node's, the cluster's) of a field MIG reports per instance - framebuffer
used and free (a MIG GPU's value is its instances' sum) and graphics engine activity (their mean) - reads each
physical GPU once on agent.pipeline: otel, as the Grafana panel of the same query does (promql: the instances combined
per GPU by the field's per_gpu_aggregation, then the group's aggregation over GPUs).

Before, the per-GPU set held one series per MIG instance: the mixed fleet's MIG node (two A100s of two instances each)
counted 4 GPUs for 2 and added engine activity to 1.8 for 0.9 (the GPUs' means 0.6 and 0.3), its mean weighed
instances, and a node's largest, smallest or mean framebuffer was refused. The agent now publishes each GPU's reading
once per scrape of such a field too (render/agent_otel.once_per_gpu: a GPU instance's copies by `max`, then the GPU's
instances by the field's sum or mean), read as a device field's is.

On agent.pipeline: classic nothing merges a GPU's instances: each chart is true, or its header says how it differs
(a MIG GPU weighs once per instance), or it is left out with its reason ("On Grafana only"). Values read through the
build's agent model and Metrics Insights' semantics (cloudwatch_widgets.shown_through_agent)."""

from __future__ import annotations

from statistics import mean

import pytest

from generator.cloudwatch_query import WEIGHS_PER_SERIES
from tests.support import mixed_fleet
from tests.support.cloudwatch_widgets import notes, said, shown_through_agent

STEP, END = 30, 1800
# field: (the instance's fact, the unit, how a GPU's instances make its value)
FIELDS = {"DCGM_FI_DEV_FB_USED": ("fb_used", "mebibyte", sum), "DCGM_FI_DEV_FB_FREE": ("fb_free", "mebibyte", sum),
          "DCGM_FI_PROF_GR_ENGINE_ACTIVE": ("engine", "ratio", mean)}
HOW = {"count": len, "sum": sum, "avg": mean, "max": max, "min": min}
GROUPS = {"node": ("node",), "cluster": ()}
PANELS = {f"{how} {field} per {group}": (field, how, by) for field in FIELDS for how in HOW
          for group, by in GROUPS.items()}
DASHBOARD = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
             "    yield Dashboard(id='instances', title='Instances', rows=[Row('Groups', [\n" + "".join(
                 f"        Panel({title!r}, Query({field!r}, {how!r}, {by!r}), "
                 f"unit={'count' if how == 'count' else FIELDS[field][1]!r}),\n"
                 for title, (field, how, by) in PANELS.items())
             + "    ])])\n")


def _gpu_value(field: str, gpu: mixed_fleet.Gpu) -> float:
    fact, _, combine = FIELDS[field]
    return combine([getattr(instance, fact) for instance in gpu.instances])


def _truth(field: str, how: str, by: tuple) -> dict[str, float]:
    """{group: value} from the fleet's facts: each GPU's value (its instances combined), then the group's."""
    groups: dict[str, list[float]] = {}
    for node in mixed_fleet.FLEET:
        for gpu in node.gpus:
            groups.setdefault(node.name if by else "", []).append(1.0 if how == "count" else _gpu_value(field, gpu))
    return {group: HOW[how](values) for group, values in groups.items()}


def _shown(values: dict[str, float], by: tuple) -> dict[str, float]:
    """A widget's lines by group: a node's line is labelled by the node; the cluster's one line by ""."""
    return values if by else {"": value for value in values.values()}


@pytest.fixture(scope="module", params=["otel", "classic"])
def shown(request, tmp_path_factory):
    return shown_through_agent(tmp_path_factory.mktemp(request.param), request.param, DASHBOARD, "instances",
                               STEP, END)


def test_the_premise_the_mig_node_has_two_gpus_of_two_instances_each():
    (node,) = [node for node in mixed_fleet.FLEET if node.name == "gpu-node-mig"]
    assert [len(gpu.instances) for gpu in node.gpus] == [2, 2]
    assert _truth("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "sum", ("node",))[node.name] == pytest.approx(0.9)
    assert _truth("DCGM_FI_DEV_FB_USED", "count", ("node",))[node.name] == 2


@pytest.mark.parametrize("title", PANELS)
def test_each_chart_reads_each_gpu_once_or_says_how_it_does_not(shown, title):
    """OTel: every chart shows the truth, and nothing of MIG is said of it (a count's or total's per-scrape mean and
    the 500 GPUs a query returns are said as of any field). Classic: true, or its header says a MIG GPU weighs once
    per instance, or it is left out with its reason."""
    pipeline, values, text = shown
    field, how, by = PANELS[title]
    truth = _truth(field, how, by)
    if pipeline == "otel":
        assert title in values, notes(text)  # shown, not left out
        assert _shown(values[title], by) == pytest.approx(truth)
        assert not [note for note in notes(text).get(title, ()) if "MIG" in note], notes(text)[title]
    elif title not in values:  # left out, with its reason
        assert f"{title} (" in text.split("On Grafana only: ", 1)[1]
    else:
        assert _shown(values[title], by) == pytest.approx(truth) or said(text, title, WEIGHS_PER_SERIES[:40]), \
            (values[title], truth)

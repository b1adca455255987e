"""A panel grouped by GPU model across an exporter rollout that respells the model: each GPU counts once, under the
model its exporter now writes, on a real Prometheus holding the history (backfilled).

dcgm-exporter writes the GPU's product name as `modelName`, with `--replace-blanks-in-model-name` its blanks as dashes
(collector.getGPUModel): a rollout that turns the flag on (or a release whose chart does) respells every GPU's model
at once, "NVIDIA H100 80GB HBM3" becoming "NVIDIA-H100-80GB-HBM3", while the GPUs stay the same.

The story (30 s scrapes, 1 hour): node n1's two H100 GPUs draw 300 and 500 W (their energy counters grow at that rate),
both held by no pod; the exporter pod is replaced at ROLLOUT (another pod and address) by one writing the model with
dashes (the flag turned on) or, the other way, without them (turned off). Truth at every instant: 2 GPUs of one model,
drawing 800 W, under the spelling the serving exporter writes; over the hour they used 800 W x 3600 s.
"""

from __future__ import annotations

import pytest

from generator.artifacts import grafana_dashboards
from tests.support.projects import defined_project
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from tests.support.prometheus_server import backfilled_fixture, counted_inline, range_macros
from tests.support.range_panels import panel_at

SPAN, STEP, ROLLOUT = 3600, 30, 1800
OLD, NEW = "NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3"
WATTS = {0: 300.0, 1: 500.0}
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
FIELDS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", ENERGY)
DASHBOARD = '''from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="models", title="Models", rows=[Row("GPU", [
        Panel("GPUs by model", [Query("DCGM_FI_DEV_GPU_TEMP", "count", ("model",))], kind="timeseries"),
        Panel("Power by model", [Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("model",))], kind="timeseries"),
        Panel("Energy rate by model", [Query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "sum", ("model",))],
              kind="timeseries"),
        Panel("Energy by model", [Query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "sum", ("model",), as_increase=True)],
              kind="bargauge"),
    ])])
'''
TRUTH = {"GPUs by model": 2.0, "Power by model": sum(WATTS.values()),
         "Energy rate by model": sum(WATTS.values()) * 1000}  # mJ/s
USED = sum(WATTS.values()) * 1000 * SPAN  # mJ over the hour, the range ending at the hour's end
DIRECTIONS = {"turned on": (OLD, NEW), "turned off": (NEW, OLD)}
AFTER = (ROLLOUT + 15, ROLLOUT + 45, ROLLOUT + 90)  # within the look-back of the old exporter's last scrape


def _openmetrics(start: int, before: str, after: str, node_renamed: bool = False) -> str:
    """The story's series; `node_renamed`: scraped without gpudash's node label, the old exporter (given no NODE_NAME)
    writing its own pod's name into Hostname, the new one the node into hostname."""
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} {'counter' if metric == ENERGY else 'gauge'}")
        for t in range(0, SPAN + 1, STEP):
            model, pod, address = (before, "nvidia-dcgm-exporter-x7k2p", "10.0.0.5") if t < ROLLOUT else \
                (after, "nvidia-dcgm-exporter-q8w2z", "10.0.0.6")
            node = ('Hostname="nvidia-dcgm-exporter-x7k2p"' if t < ROLLOUT else 'hostname="n1"') if node_renamed \
                else 'hostname="n1",node="n1"'
            for gpu, watts in WATTS.items():
                value = {"DCGM_FI_DEV_POWER_USAGE": watts, ENERGY: 10 ** 9 + watts * 1000 * t}.get(metric, 40 + gpu)
                lines.append(f'{metric}{{gpu="{gpu}",UUID="GPU-n1-{gpu}",device="nvidia{gpu}",modelName="{model}",'
                             f'{node},instance="{address}:9400",job="gpu-metrics",exporter_pod="{pod}"}} '
                             f'{value:g} {start + t}')
    return "\n".join(lines) + "\n# EOF\n"


turned_on = backfilled_fixture("model-dashed-in-rollout", lambda start: _openmetrics(start, OLD, NEW), SPAN, STEP)
turned_off = backfilled_fixture("model-undashed-in-rollout", lambda start: _openmetrics(start, NEW, OLD), SPAN, STEP)
node_renamed = backfilled_fixture("model-and-node-renamed", lambda start: _openmetrics(start, OLD, NEW, True), SPAN,
                                  STEP)


@pytest.fixture(params=sorted(DIRECTIONS))
def history(request):
    """(prometheus, start, spelling before, spelling after) of one direction of the rollout."""
    prometheus, start = request.getfixturevalue(request.param.replace(" ", "_"))
    return (prometheus, start, *DIRECTIONS[request.param])


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    project = defined_project(folder, "", dashboards=DASHBOARD)
    (dashboard,) = grafana_dashboards(project)
    return project, {p["title"]: p for p in dashboard.model["panels"] if "targets" in p}


def _shown(prometheus, start: int, project, panel: dict, at: int) -> dict[str, float]:
    return panel_at(prometheus, project, panel, start + at, SPAN)


@pytest.mark.parametrize("title", sorted(TRUTH))
def test_each_gpu_counts_once_under_its_model_before_and_long_after_the_rollout(history, project, title):
    prometheus, start, before, after = history
    built, panels = project
    assert {at: _shown(prometheus, start, built, panels[title], at) for at in (ROLLOUT - 300, ROLLOUT + 600)} == {
        ROLLOUT - 300: pytest.approx({before: TRUTH[title]}), ROLLOUT + 600: pytest.approx({after: TRUTH[title]})}


@pytest.mark.parametrize("title", sorted(TRUTH))
def test_each_gpu_counts_once_under_the_serving_exporters_model_just_after_the_rollout(history, project, title):
    """Each model spelling was kept apart before a GPU's copy was chosen: for the look-back after the rollout (the
    rate's window) each GPU counted under both spellings (4 GPUs for 2, 1,600 W for 800)."""
    prometheus, start, _, after = history
    built, panels = project
    shown = {at: _shown(prometheus, start, built, panels[title], at) for at in AFTER}
    assert shown == {at: pytest.approx({after: TRUTH[title]}) for at in AFTER}, shown


def test_the_hours_energy_is_the_serving_exporters_models_whole(history, project):
    """An increase over a range holding the rollout is one GPU's counter read across its copies: the whole under the
    model the serving exporter writes, not each spelling's part under its own."""
    prometheus, start, _, after = history
    built, panels = project
    assert _shown(prometheus, start, built, panels["Energy by model"], SPAN) == pytest.approx({after: USED})


@pytest.mark.parametrize("title", sorted(TRUTH))
def test_over_an_hour_renaming_the_node_too_each_step_shows_the_gpus_under_that_steps_model(node_renamed, project,
                                                                                              title):
    """Drawn over the hour (a range query, a step a minute), the rollout also renaming the node (the old exporter's
    own pod name in Hostname, then the node in hostname): the GPUs are named by the node over the whole range, and
    their model, keyed by each copy's own node at a step, was found for no step before the rollout: the panel drew
    nothing for its first half hour."""
    prometheus, start = node_renamed
    built, panels = project
    (target,) = panels[title]["targets"]
    expr = interpolate(counted_inline(target["expr"], built), {
        **range_macros(f"{SPAN}s"), "__interval": "60s", "__rate_interval": "120s",
        **variables({}, ("namespace", "pod", "node", "gpu"))})
    steps = prometheus.query_at(expr, start + 60, SPAN // 60 - 1, 60)
    shown = {at - start: {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in lines}
             for at, lines in steps.items() if at - start != ROLLOUT}  # the switch's own step reads either spelling
    assert shown == {at: pytest.approx({OLD if at < ROLLOUT else NEW: TRUTH[title]}) for at in shown}

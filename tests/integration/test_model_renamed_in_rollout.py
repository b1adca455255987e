"""A panel grouped by GPU model across an exporter rollout that respells the model: each GPU counts once, under the
model its exporter now writes, on a real Prometheus holding the history (backfilled).

dcgm-exporter writes the GPU's product name as `modelName`, with `--replace-blanks-in-model-name` its blanks as dashes
(collector.getGPUModel): a rollout that turns the flag on (or a release whose chart does) respells every GPU's model
at once, "NVIDIA H100 80GB HBM3" becoming "NVIDIA-H100-80GB-HBM3", while the GPUs stay the same.

The story (30 s scrapes, 1 hour): node n1's two H100 GPUs draw 300 and 500 W, both held by no pod; the exporter pod is
replaced at ROLLOUT (another pod and address) by one writing the model with dashes. Truth at every instant: 2 GPUs of
one model, drawing 800 W, under the spelling the serving exporter writes.
"""

from __future__ import annotations

import pytest

from generator.artifacts import grafana_dashboards
from tests.support.projects import defined_project
from tests.support.prometheus_server import backfilled_fixture
from tests.support.range_panels import panel_at

SPAN, STEP, ROLLOUT = 3600, 30, 1800
OLD, NEW = "NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3"
WATTS = {0: 300.0, 1: 500.0}
FIELDS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE")
DASHBOARD = '''from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="models", title="Models", rows=[Row("GPU", [
        Panel("GPUs by model", [Query("DCGM_FI_DEV_GPU_TEMP", "count", ("model",))], kind="timeseries"),
        Panel("Power by model", [Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("model",))], kind="timeseries"),
    ])])
'''
TRUTH = {"GPUs by model": 2.0, "Power by model": sum(WATTS.values())}
AFTER = (ROLLOUT + 15, ROLLOUT + 45, ROLLOUT + 90)  # within the look-back of the old exporter's last scrape


def _openmetrics(start: int) -> str:
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        for t in range(0, SPAN + 1, STEP):
            model, pod, address = (OLD, "nvidia-dcgm-exporter-x7k2p", "10.0.0.5") if t < ROLLOUT else \
                (NEW, "nvidia-dcgm-exporter-q8w2z", "10.0.0.6")
            for gpu, watts in WATTS.items():
                value = watts if metric == "DCGM_FI_DEV_POWER_USAGE" else 40 + gpu
                lines.append(f'{metric}{{gpu="{gpu}",UUID="GPU-n1-{gpu}",device="nvidia{gpu}",modelName="{model}",'
                             f'hostname="n1",instance="{address}:9400",job="gpu-metrics",node="n1",'
                             f'exporter_pod="{pod}"}} {value:g} {start + t}')
    return "\n".join(lines) + "\n# EOF\n"


history = backfilled_fixture("model-renamed-in-rollout", _openmetrics, SPAN, STEP)


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
    prometheus, start = history
    built, panels = project
    assert {at: _shown(prometheus, start, built, panels[title], at) for at in (ROLLOUT - 300, ROLLOUT + 600)} == {
        ROLLOUT - 300: pytest.approx({OLD: TRUTH[title]}), ROLLOUT + 600: pytest.approx({NEW: TRUTH[title]})}


@pytest.mark.xfail(strict=True, reason=(
    "a panel grouped by model keeps each model spelling apart before a GPU's copy is chosen: for the look-back after "
    "a rollout respells modelName (--replace-blanks-in-model-name), each GPU counts under both spellings (4 GPUs for "
    "2, 1,600 W for 800); the model should be the chosen copy's, as the node spelling is"))
@pytest.mark.parametrize("title", sorted(TRUTH))
def test_each_gpu_counts_once_under_the_serving_exporters_model_just_after_the_rollout(history, project, title):
    prometheus, start = history
    built, panels = project
    shown = {at: _shown(prometheus, start, built, panels[title], at) for at in AFTER}
    assert shown == {at: pytest.approx({NEW: TRUTH[title]}) for at in AFTER}, shown

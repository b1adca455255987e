"""Panels grouped by GPU model in a fleet of two models, one H100 split into MIG instances, on a real Prometheus
(backfilled): each model's line holds its GPUs' readings, each GPU once, whatever else the panel groups by.

The fleet (30 s scrapes, 1 hour, no change in it):
- n1 GPU 0, an H100 held whole by ml/a: 80 % busy, 500 W, 60 °C, 20,000 of 80,000 MiB used;
- n1 GPU 1, an H100 split into two 3g.40gb instances: GPU_I_ID 1 held by ml/b (10,000 MiB used, engine 50 % busy),
  GPU_I_ID 2 no pod's (5,000 MiB, 10 %); 300 W, 50 °C; no GPU utilization (MIG does not report it);
- n2 GPU 0, an A10G held by ml/c: 40 % busy, 150 W, 45 °C, 6,000 of 24,000 MiB used.
"""

from __future__ import annotations

import pytest

from generator.artifacts import grafana_dashboards
from tests.support.projects import defined_project
from tests.support.prometheus_server import backfilled_fixture
from tests.support.range_panels import panel_at

SPAN, STEP = 3600, 30
H100, A10G = "NVIDIA H100 80GB HBM3", "NVIDIA A10G"
# (node, gpu, model, MIG instance or None, pod or None): {field: reading}
SERIES = {
    ("n1", "0", H100, None, ("ml", "a")): {"DCGM_FI_DEV_GPU_UTIL": 80, "DCGM_FI_DEV_POWER_USAGE": 500,
                                            "DCGM_FI_DEV_GPU_TEMP": 60, "DCGM_FI_DEV_FB_USED": 20_000,
                                            "DCGM_FI_DEV_FB_FREE": 60_000, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.8},
    ("n1", "1", H100, "1", ("ml", "b")): {"DCGM_FI_DEV_POWER_USAGE": 300, "DCGM_FI_DEV_GPU_TEMP": 50,
                                           "DCGM_FI_DEV_FB_USED": 10_000, "DCGM_FI_DEV_FB_FREE": 30_000,
                                           "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.5},
    ("n1", "1", H100, "2", None): {"DCGM_FI_DEV_POWER_USAGE": 300, "DCGM_FI_DEV_GPU_TEMP": 50,
                                    "DCGM_FI_DEV_FB_USED": 5_000, "DCGM_FI_DEV_FB_FREE": 35_000,
                                    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.1},
    ("n2", "0", A10G, None, ("ml", "c")): {"DCGM_FI_DEV_GPU_UTIL": 40, "DCGM_FI_DEV_POWER_USAGE": 150,
                                            "DCGM_FI_DEV_GPU_TEMP": 45, "DCGM_FI_DEV_FB_USED": 6_000,
                                            "DCGM_FI_DEV_FB_FREE": 18_000, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.4},
}
FIELDS = sorted({field for readings in SERIES.values() for field in readings})
DASHBOARD = '''from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    def panel(title, query):
        return Panel(title, [query], kind="timeseries")
    yield Dashboard(id="models", title="Models", rows=[Row("GPU", [
        panel("GPUs by model", Query("DCGM_FI_DEV_GPU_TEMP", "count", ("model",))),
        panel("Hottest by model", Query("DCGM_FI_DEV_GPU_TEMP", "max", ("model",))),
        panel("Utilization by model", Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("model",))),
        panel("Framebuffer by model", Query("DCGM_FI_DEV_FB_USED", "sum", ("model",))),
        panel("Framebuffer share by model", Query("DCGM_FI_DEV_FB_USED", "avg", ("model",),
                                                  over=("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"))),
        panel("Power by pod and model", Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("pod", "model"))),
        panel("Framebuffer by instance and model", Query("DCGM_FI_DEV_FB_USED", "sum", ("mig_instance", "model"))),
        panel("Power by node and model", Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("node", "model"))),
    ])])
'''
TRUTH = {
    "GPUs by model": {H100: 2.0, A10G: 1.0},
    "Hottest by model": {H100: 60.0, A10G: 45.0},
    # the MIG GPU's utilization is its instances' engine activity, averaged: 30 %
    "Utilization by model": {H100: (80 + 30) / 2, A10G: 40.0},
    "Framebuffer by model": {H100: 35_000.0, A10G: 6_000.0},
    "Framebuffer share by model": {H100: (20_000 / 80_000 + 15_000 / 80_000) / 2, A10G: 6_000 / 24_000},
    "Power by pod and model": {f"Pod ml/a {H100}": 500.0, f"Pod ml/b {H100}": 300.0, f"Pod ml/c {A10G}": 150.0},
    "Framebuffer by instance and model": {f"MIG 1 (3g.40gb) {H100}": 10_000.0, f"MIG 2 (3g.40gb) {H100}": 5_000.0},
    "Power by node and model": {f"n1 {H100}": 800.0, f"n2 {A10G}": 150.0},
}


def _openmetrics(start: int) -> str:
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        for t in range(0, SPAN + 1, STEP):
            for (node, gpu, model, instance, pod), readings in SERIES.items():
                if metric not in readings:
                    continue
                mig = "" if instance is None else f',GPU_I_PROFILE="3g.40gb",GPU_I_ID="{instance}"'
                held = "" if pod is None else f',container="main",namespace="{pod[0]}",pod="{pod[1]}"'
                lines.append(f'{metric}{{gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",'
                             f'modelName="{model}"{mig},hostname="{node}"{held},instance="{node}:9400",'
                             f'job="gpu-metrics",node="{node}"}} {readings[metric]:g} {start + t}')
    return "\n".join(lines) + "\n# EOF\n"


history = backfilled_fixture("panels-by-model", _openmetrics, SPAN, STEP)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    project = defined_project(tmp_path_factory.mktemp("models"), "", dashboards=DASHBOARD)
    (dashboard,) = grafana_dashboards(project)
    return project, {p["title"]: p for p in dashboard.model["panels"] if "targets" in p}


@pytest.mark.parametrize("title", sorted(TRUTH))
def test_each_models_line_holds_its_gpus_once(history, project, title):
    prometheus, start = history
    built, panels = project
    assert panel_at(prometheus, built, panels[title], start + SPAN - 60, SPAN) == pytest.approx(TRUTH[title])

"""A plain grafanalib Dashboard in dashboards/ goes through the same output and lint path."""

from __future__ import annotations

import json

import pytest

GRAFANALIB_FILE = '''
from grafanalib.core import Dashboard, GridPos, Target, TimeSeries

dashboard = Dashboard(
    title="Legacy GPU board",
    uid="legacy-gpu",
    panels=[TimeSeries(
        title="Util", description="GPU utilization", unit="percent",
        dataSource={"type": "prometheus", "uid": "${datasource}"},
        targets=[Target(expr='avg by (pod) (DCGM_FI_DEV_GPU_UTIL)', legendFormat="Pod {{pod}}", refId="A",
                        datasource={"type": "prometheus", "uid": "${datasource}"})],
        gridPos=GridPos(h=8, w=12, x=0, y=0),
    )],
).auto_panel_ids()
'''


def test_grafanalib_dashboard_is_generated_beside_neutral_ones(tmp_path, cli, project_dir):
    config = project_dir(dashboards={"legacy.py": GRAFANALIB_FILE})
    out = tmp_path / "build"
    code, stdout, stderr = cli("generate", "--config", str(config), "--out", str(out))
    assert code == 0, stderr
    model = json.loads((out / "grafana/legacy-gpu.json").read_text())
    assert model["title"] == "Legacy GPU board"
    assert model["panels"][0]["targets"][0]["expr"] == "avg by (pod) (DCGM_FI_DEV_GPU_UTIL)"
    assert "legacy-gpu.json" in (out / "k8s/grafana-dashboards.yaml").read_text()
    assert "grafana/legacy-gpu.json" in json.loads((out / "manifest.json").read_text())["files"]


def test_grafanalib_dashboard_is_linted(cli, project_dir, reference):
    broken = GRAFANALIB_FILE.replace("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER")
    config = project_dir(dashboards={"legacy.py": broken})
    code, stdout, _ = cli("lint", "--config", str(config), "--output", "json",
                          "--grafana-schema", str(reference / "grafana" / "schema"))
    findings = json.loads(stdout)["findings"]
    assert code == 1
    assert any(f["rule"] == "GF006" and "legacy-gpu" in f["where"] for f in findings)
    # grafanalib writes an old schemaVersion: schema differences are warnings, not failures.
    assert all(f["severity"] == "warning" for f in findings if f["rule"] == "GF010")


ROWS_FILE = '''
from grafanalib.core import Dashboard, Row, Target, TimeSeries

dashboard = Dashboard(
    title="Legacy rows board",
    uid="legacy-rows",
    rows=[Row(panels=[TimeSeries(
        title="Util", unit="percent", dataSource={"type": "prometheus", "uid": "${datasource}"},
        targets=[Target(expr='avg by (pod) (DCGM_FI_DEV_PCIE_REPLAY_COUNTER)', legendFormat="Pod {{pod}}", refId="A",
                        datasource={"type": "prometheus", "uid": "${datasource}"})],
    )])],
).auto_panel_ids()
'''


@pytest.mark.xfail(strict=True, reason="a grafanalib dashboard laid out with rows=[Row(panels=...)] (grafanalib's older "
                                       "layout; schemaVersion 12, which Grafana migrates to panels on load) "
                                       "keeps its panels under 'rows': lint reads 'panels' only and judges none of "
                                       "its queries, preview draws 0 panels, plan's diff and the dashboard split see "
                                       "none")
def test_grafanalib_dashboard_of_rows_is_linted_and_previewed(cli, project_dir):
    from generator.artifacts import grafana_dashboards
    from generator.preview.site import visual_panels
    from generator.project import load_project

    config = project_dir(dashboards={"legacy.py": ROWS_FILE})
    (dashboard,) = grafana_dashboards(load_project(config))
    assert [p["title"] for p in visual_panels(dashboard.model)] == ["Util"]
    code, stdout, _ = cli("lint", "--config", str(config), "--output", "json")
    assert code == 1 and any(f["rule"] == "GF006" and "legacy-rows" in f["where"]
                             for f in json.loads(stdout)["findings"])

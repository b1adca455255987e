"""Fields split by labels of their own, on a real Prometheus: each panel's values and legends.

The exporter writes one `DCGM_EXP_XID_ERRORS_COUNT` series per XID code; a per-GPU, per-pod or
cluster panel adds the codes up (before, a per-GPU max showed the largest code's count), and a
panel grouped by `xid` shows each code with the code in its legend.
"""

from __future__ import annotations

import math

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from tests.support import field_labels
from tests.support.projects import project_fixture
from tests.support.prometheus_server import Prometheus, range_macros
from tests.support.replay_exporter import ReplayExporter


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with ReplayExporter(field_labels.payload()) as exporter:
        workdir = tmp_path_factory.mktemp("field-labels")
        config = {"global": {"scrape_interval": "1s"},
                  "scrape_configs": [{"job_name": "dcgm", "static_configs": [
                      {"targets": [exporter.url.removeprefix("http://").split("/")[0]]}]}]}
        with Prometheus(workdir, config) as prometheus:
            # an instant with every series stored, before the latest scrapes: a query at "now" reads nothing of a series
            # whose latest scrape timed out on a loaded machine (marked stale)
            prometheus.at = prometheus.settled(field_labels.COUNTS, count=5)
            yield prometheus


project = project_fixture(write=field_labels.write_project)


def test_every_panel_adds_up_the_codes_or_names_them(stack, project):
    (dashboard,) = [d for d in grafana_dashboards(project) if d.uid.endswith("-xid")]
    panels = [p for p in dashboard.model["panels"] if p["type"] != "row"]
    assert len(panels) == 5
    values = {"__rate_interval": "1m", **range_macros("1m"), **variables({}, ("namespace", "pod", "node", "gpu", "cluster"))}
    for panel in panels:
        (target,) = panel["targets"]
        result = stack.query(interpolate(target["expr"], values), at=stack.at)
        grouped = panel["title"] != "XID errors in the cluster"
        shown = {render_legend(target["legendFormat"], s["metric"]) if grouped else "": float(s["value"][1])
                 for s in result}
        assert len(shown) == len(result), (panel["title"], result)
        expected = field_labels.truth(panel["title"])
        assert set(shown) == set(expected), (panel["title"], target["expr"])
        assert all(math.isclose(shown[k], v) for k, v in expected.items()), (panel["title"], shown, expected)


def test_the_per_code_panel_stays_on_grafana_and_cloudwatch_says_why(project):
    import json

    from generator.artifacts import build
    from generator.output import encode

    files = encode(build(project))
    (name,) = [p for p in files if p.startswith("cloudwatch/dashboards/") and p.endswith("-xid.json")]
    body = json.loads(json.loads(files[name])["DashboardBody"])
    titles = {w["properties"]["title"] for w in body["widgets"] if w["type"] == "metric"}
    assert titles == {"XID errors (mean)", "XID errors by pod", "XID errors in the cluster"}
    header = body["widgets"][0]["properties"]["markdown"]
    assert "XID errors by code (CloudWatch has no dimension for xid)" in header
    assert "XID errors (CloudWatch receives each xid of DCGM_EXP_XID_ERRORS_COUNT as its own observation" in header

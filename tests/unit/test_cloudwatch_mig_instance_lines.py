"""A user's panel per MIG instance of a field no MIG instance publishes reads nothing on CloudWatch.

The set a line per MIG instance reads ([ClusterName, node, gpu, GPU_I_ID, GPU_I_PROFILE]) holds MIG instances only
(the exporter writes GPU_I_PROFILE on them alone). Two fields never reach it: one DCGM does not measure on a MIG
instance (GPU utilization: the agent's scrape job drops it there, render/scrape.py), and on agent.pipeline: otel a
device counter (PCIe replays), which the agent merges to one series per physical GPU, the instance labels left out.
Before 3a32da84 such a panel became a widget reading no line at all (a count of PCIe replay series per MIG instance
slipped past the refusal its sum met), and lint passed it: AG001 compared the declarations' dimension names, and the
declaration is there. Now the panel is left out of CloudWatch, said in the header (On Grafana only), and lint's AG001
names a widget or alarm reading such a set (an older build, an edited one).
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from generator.artifacts import build
from generator.lint.feed_rules import used_metrics_selected
from generator.output import encode
from generator.render.agent_otel import EXPORTER
from tests.support import cloudwatch_eval
from tests.support.agent_points import through_agent
from tests.support.cloudwatch_widgets import header, widgets, widgets_read
from tests.support.lint_input import lint_input
from tests.support.projects import defined_project

DASHBOARD = '''
from generator.model import Dashboard, Panel, Query, Row

def dashboards(ctx):
    yield Dashboard(id="mig", title="MIG", backends=("cloudwatch",), rows=[Row("r", [
        Panel("Utilization per MIG instance", (Query("DCGM_FI_DEV_GPU_UTIL", "max", ("node", "gpu", "mig_instance")),)),
        Panel("Utilization MIG profiles", (Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("mig_instance",)),)),
        Panel("Replay series per MIG instance", (Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "count",
                                                       ("node", "gpu", "mig_instance")),)),
        Panel("Framebuffer per MIG instance", (Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")),)),
    ])])
'''
EMPTY_ON = {"otel": {"Utilization per MIG instance", "Utilization MIG profiles", "Replay series per MIG instance"},
            "classic": {"Utilization per MIG instance", "Utilization MIG profiles"}}
PATH = "cloudwatch/dashboards/gpudash-gpu-cluster-mig.json"


@pytest.fixture(scope="module", params=["otel", "classic"])
def built(request, tmp_path_factory):
    pipeline = request.param
    project = defined_project(tmp_path_factory.mktemp(pipeline), f"agent:\n  pipeline: {pipeline}\n",
                              dashboards=DASHBOARD)
    artifacts = build(project, grafana=False)
    return pipeline, project, artifacts, encode(artifacts)


def test_every_mig_instance_widget_the_user_gets_draws_a_line(built):
    pipeline, _, _, files = built
    points = through_agent(files, 30, 900, only=widgets_read(files))
    drawn = {}
    for path, properties in widgets(files):
        if path == PATH:
            lines = cloudwatch_eval.widget(properties, points, 0, 900)
            drawn[properties["title"].split(" (")[0]] = bool(lines and any(lines.values()))
    assert drawn.get("Framebuffer per MIG instance") is True
    empty = sorted(title for title, line in drawn.items() if not line)
    assert empty == [], f"{pipeline}: widgets reading nothing through the agent: {empty}"


def test_a_panel_no_mig_instance_publishes_is_said_grafana_only(built):
    pipeline, _, _, files = built
    text = header(files, PATH)
    assert "On Grafana only" in text
    for title in EMPTY_ON[pipeline]:
        assert f"{title} (" in text.split("On Grafana only", 1)[1], (pipeline, title)


def _widget(expression: str) -> dict:
    return {"type": "metric", "x": 0, "y": 0, "width": 12, "height": 6,
            "properties": {"title": "Edited", "region": "us-east-1", "period": 300, "view": "timeSeries",
                           "metrics": [[{"expression": expression, "id": "q1"}]]}}


SET = '"ClusterName", "node", "gpu", "GPU_I_ID", "GPU_I_PROFILE"'
UTIL_PER_INSTANCE = (f'SELECT MAX("DCGM_FI_DEV_GPU_UTIL") FROM SCHEMA("ContainerInsights/Prometheus", {SET}) '
                     f'WHERE "ClusterName" = \'gpu-cluster\' GROUP BY "node", "gpu", "GPU_I_ID", "GPU_I_PROFILE"')
REPLAYS_PER_INSTANCE = (f'SELECT SUM("DCGM_FI_DEV_PCIE_REPLAY_COUNTER") FROM SCHEMA("ContainerInsights/Prometheus", '
                        f'"ClusterName", "node", "gpu", "GPU_I_ID") WHERE "ClusterName" = \'gpu-cluster\' '
                        f'GROUP BY "node", "gpu", "GPU_I_ID"')


def _declared(agent, metric: str, dims: list[str]):
    """`agent` (an AgentConfig) with one more declaration publishing `metric` in `dims`, as a build made before 3a32da84
    declared what such a widget read (a copy of its first declaration, its selectors and sets replaced)."""
    agent = copy.deepcopy(agent)
    if agent.otel is not None:
        declarations = agent.otel["exporters"][EXPORTER]["metric_declarations"]
        key = "metric_name_selectors"
    else:
        declarations = agent.config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]["metric_declaration"]
        key = "metric_selectors"
    declarations.append({**copy.deepcopy(declarations[0]), key: [f"^{metric}$"], "dimensions": [dims]})
    return agent


def _lint_with(built, expression: str, metric: str, dims: list[str]) -> list[str]:
    _, project, artifacts, _ = built
    dashboard = next(d for d in artifacts.cloudwatch_dashboards if d.name.endswith("-mig"))
    body = {**dashboard.body, "widgets": [*dashboard.body["widgets"], _widget(expression)]}
    edited = tuple(replace(d, body=body) if d is dashboard else d for d in artifacts.cloudwatch_dashboards)
    agents = (_declared(artifacts.agents[0], metric, dims), *artifacts.agents[1:])
    subject = lint_input(project, artifacts, cloudwatch_dashboards=edited, agents=agents)
    return [f.message for f in used_metrics_selected(subject) if f.rule == "AG001" and "'Edited'" in f.where]


def test_lint_names_a_widget_reading_a_field_mig_instances_never_publish(built):
    pipeline, *_ = built
    found = _lint_with(built, UTIL_PER_INSTANCE, "DCGM_FI_DEV_GPU_UTIL",
                       ["ClusterName", "node", "gpu", "GPU_I_ID", "GPU_I_PROFILE"])
    assert not any("does not publish it" in m for m in found), found  # declared: the names match
    assert any("GPU_I_PROFILE" in m and "MIG instance" in m for m in found), (pipeline, found)


def test_lint_names_a_device_counter_read_per_gpu_instance_on_otel_only(built):
    pipeline, *_ = built
    found = _lint_with(built, REPLAYS_PER_INSTANCE, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
                       ["ClusterName", "node", "gpu", "GPU_I_ID"])
    assert not any("does not publish it" in m for m in found), found
    found = [m for m in found if "physical GPU" in m]
    assert bool(found) == (pipeline == "otel"), (pipeline, found)

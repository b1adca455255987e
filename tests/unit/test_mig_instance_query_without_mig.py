"""A query per MIG instance where no GPU is split into MIG instances (exporter.mig: none) reads nothing for good.

A line per MIG instance reads the set [ClusterName, node, gpu, GPU_I_ID, GPU_I_PROFILE], which MIG instances alone
publish (the exporter writes GPU_I_PROFILE on them alone), as its Grafana twin reads the series with a MIG instance
(GPU_I_ID != ""): GPUs not split are left out on both (panels.per_mig_instance says so). Where a cluster says no GPU
is split, such a widget drew no line at all (0 of the whole-GPU fleet's 9 GPUs, on both pipelines) and an alarm on it
could never fire, lint silent. Now (cloudwatch_query.NoMigInstances) the panel
is left out of CloudWatch and the header says why (On Grafana only); the alarm is refused by generate (exit 2,
nothing written), and where the fleet's clusters differ in exporter.mig it is made in the clusters whose GPUs may be
split only (render/alarms.made_parts); lint's AG001 names a widget or alarm of such a cluster reading that set (an
older build, an edited one). The per-GPU panel beside it draws every GPU as before, each at its value.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from generator.artifacts import build
from generator.lint.feed_rules import used_metrics_selected
from generator.model import Query
from generator.output import encode
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import scrapes, through_agent
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.cloudwatch_widgets import header, widgets, widgets_read
from tests.support.lint_input import lint_input
from tests.support.projects import defined_project

DASHBOARD = '''
from generator.model import Dashboard, Panel, Query, Row

def dashboards(ctx):
    yield Dashboard(id="mig", title="MIG", backends=("cloudwatch",), rows=[Row("r", [
        Panel("Framebuffer per GPU instance", (Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")),)),
        Panel("Framebuffer per GPU", (Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu")),)),
    ])])
'''
ALARM = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("mig-fb", "MIG instance framebuffer high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")), ">", 15000))
'''
TWO_CLUSTERS = """clusters:
  - {name: gpu-cluster, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
"""
WHOLE = mixed_fleet.WHOLE
NAMES = {node.name: node.name for node in mixed_fleet.FLEET}
END = 900


def _lines(files: dict[str, bytes], path: str, points: list) -> dict[str, dict[int, float]]:
    """{widget title: {line label: series}} of the dashboard at `path`."""
    return {properties["title"].split(" (")[0]: cloudwatch_eval.widget(properties, points, 0, END) or {}
            for where, properties in widgets(files) if where == path}


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_without_mig_the_panel_per_mig_instance_is_said_grafana_only_and_every_gpu_is_drawn_per_gpu(tmp_path,
                                                                                                    pipeline):
    project = defined_project(tmp_path, f"agent:\n  pipeline: {pipeline}\nexporter:\n  mig: none\n",
                              dashboards=DASHBOARD)
    files = encode(build(project, grafana=False))
    path = "cloudwatch/dashboards/gpudash-gpu-cluster-mig.json"
    text = header(files, path)
    left_out = text.split("On Grafana only", 1)[1]
    assert "Framebuffer per GPU instance (the settings say no GPU is split into MIG instances (exporter.mig or " \
        "clusters[].exporter.mig: none)" in left_out, text
    points = through_agent(files, 30, END, fleet=WHOLE, only=widgets_read(files))
    drawn = _lines(files, path, points)
    assert set(drawn) == {"Framebuffer per GPU"}, sorted(drawn)
    truth = mixed_fleet.truth(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu")), NAMES, fleet=WHOLE)
    assert len(truth) == 9
    per_gpu = {label.removesuffix(" MIG none"): series for label, series in drawn["Framebuffer per GPU"].items()}
    assert set(per_gpu) == set(truth), (sorted(per_gpu), sorted(truth))
    for label, value in truth.items():
        assert per_gpu[label] and all(v == value for v in per_gpu[label].values()), (label, per_gpu[label], value)
    # nothing declared for the left-out panel: no set naming GPU_I_PROFILE is published
    assert b"GPU_I_PROFILE" not in files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"]


def test_generate_refuses_an_alarm_per_mig_instance_without_mig_and_writes_nothing(tmp_path):
    from click.testing import CliRunner

    from generator.cli import main

    defined_project(tmp_path, "exporter:\n  mig: none\n", alarms=ALARM)
    out = tmp_path / "build"
    result = CliRunner().invoke(main, ["generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(out)])
    assert result.exit_code == 2, result.output
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "alarm 'mig-fb'" in text and "alarms/alarms.py" in text and "Traceback" not in text
    assert "no GPU is split into MIG instances (exporter.mig or clusters[].exporter.mig: none)" in text \
        and "group it by node and gpu" in text
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_clusters_differing_in_mig_read_per_mig_instance_where_gpus_are_split_only(tmp_path, pipeline):
    """Two clusters, one saying exporter.mig: none: the alarm and the widget per MIG instance are made in the other,
    each MIG instance of the mixed fleet at its value there (the alarm fires for the instance above 15,000 MiB alone);
    the plain cluster's dashboard says the panel is Grafana's only, its agent declares no MIG instance's set, and no
    alarm of it reads one."""
    project = defined_project(tmp_path, TWO_CLUSTERS + f"agent:\n  pipeline: {pipeline}\n", dashboards=DASHBOARD,
                              alarms=ALARM)
    files = encode(build(project, grafana=False))
    names = [a["Request"]["AlarmName"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    mine = [name for name in names if "-mig-fb-" in name]
    assert mine and all(name.startswith("gpudash-gpu-cluster-") for name in mine), names
    assert "On Grafana only: Framebuffer per GPU instance (the settings say no GPU is split" in \
        header(files, "cloudwatch/dashboards/gpudash-plain-mig.json")
    assert b"GPU_I_PROFILE" not in files["k8s/cwagent-prometheus-config-plain.yaml"]
    points = through_agent(files, 30, END, only=widgets_read(files))
    drawn = _lines(files, "cloudwatch/dashboards/gpudash-gpu-cluster-mig.json", points)
    truth = mixed_fleet.truth(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")), NAMES)
    assert len(truth) == 4 and set(drawn["Framebuffer per GPU instance"]) == set(truth), \
        (sorted(drawn["Framebuffer per GPU instance"]), sorted(truth))
    for label, value in truth.items():
        assert all(v == value for v in drawn["Framebuffer per GPU instance"][label].values()), label
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if "-mig-fb-" in a["Request"]["AlarmName"]]
    alarm_points = through_agent(files, 30, END, only=cloudwatch_eval.reads(request))
    firing = {key for key, state in cloudwatch_eval.alarm(request, alarm_points, END).items() if state == "ALARM"}
    above = {label for label, value in truth.items() if value > 15000}
    assert above == {"gpu-node-mig GPU 0 MIG 1 (3g.20gb)"}
    assert {f"{dict(key)['node']} GPU {dict(key)['gpu']} MIG {dict(key)['GPU_I_ID']} ({dict(key)['GPU_I_PROFILE']})"
            for key in firing} == above, firing
    # the plain cluster's agent publishes the per-GPU lines of its whole GPUs
    config, job = agent_config(files["k8s/cwagent-prometheus-config-plain.yaml"])
    plain = Agent(config, job, only=widgets_read(files)).run(scrapes(job, 30, END, WHOLE))
    per_gpu = _lines(files, "cloudwatch/dashboards/gpudash-plain-mig.json", plain)
    assert set(per_gpu) == {"Framebuffer per GPU"} and len(per_gpu["Framebuffer per GPU"]) == 9, per_gpu


def _widget(expression: str) -> dict:
    return {"type": "metric", "x": 0, "y": 0, "width": 12, "height": 6,
            "properties": {"title": "Edited", "region": "us-east-1", "period": 300, "view": "timeSeries",
                           "metrics": [[{"expression": expression, "id": "q1"}]]}}


def test_lint_names_a_widget_per_mig_instance_of_a_cluster_without_mig(tmp_path):
    """An edited build: the plain cluster's dashboard given the widget as gpu-cluster's reads it (its cluster filter
    the plain cluster's): AG001 names it; the same widget of gpu-cluster is not named."""
    project = defined_project(tmp_path, TWO_CLUSTERS, dashboards=DASHBOARD)
    artifacts = build(project, grafana=False)
    mig = next(d for d in artifacts.cloudwatch_dashboards if d.name == "gpudash-gpu-cluster-mig")
    expression = next(line[-1]["expression"] for w in mig.body["widgets"] if w["type"] == "metric"
                      and w["properties"]["title"].startswith("Framebuffer per GPU instance")
                      for line in w["properties"]["metrics"] if "expression" in line[-1]
                      and "GPU_I_PROFILE" in line[-1]["expression"])
    edited = []
    for dashboard in artifacts.cloudwatch_dashboards:
        if dashboard.name in ("gpudash-plain-mig", "gpudash-gpu-cluster-mig"):
            cluster = dashboard.name.split("-")[1] if "plain" in dashboard.name else "gpu-cluster"
            widget = _widget(expression.replace("'gpu-cluster'", f"'{cluster}'"))
            dashboard = replace(dashboard, body={**dashboard.body, "widgets": [*dashboard.body["widgets"], widget]})
        edited.append(dashboard)
    subject = lint_input(project, artifacts, cloudwatch_dashboards=tuple(edited))
    found = [(f.where, f.message) for f in used_metrics_selected(subject)
             if f.rule == "AG001" and "'Edited'" in f.where]
    assert found and all("gpudash-plain-mig" in where for where, _ in found), found
    assert any("exporter.mig: none" in message and "reads nothing" in message for _, message in found), found

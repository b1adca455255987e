"""A count of GPUs reporting a field counts the GPUs with a reading of it: DCGM's blank ("not supported") is none.

Two nodes, 11 GPUs, half an hour of 30 s scrapes. ip-10-0-1-1's GPU 3 never reads its temperature (DCGM's int64
"not supported" sentinel, about 9.2e18) and ip-10-0-1-2's GPU 0 never reads its energy counter; every other GPU
reads both, the counter from 3e15 mJ up (a reading past the gauges' floor of 1e14, under the counters' 9e18). Pod
ml/train-0 holds ip-10-0-1-1's GPUs 0 to 3, ml/train-1 its GPUs 4 and 5, ml/infer-<k> ip-10-0-1-2's GPU k.

So 10 GPUs report each field, and ml/train-0 holds 3 GPUs with a temperature. The same readings are read by the
Grafana panels (instant queries on a real Prometheus holding them), by `promtool test rules` for alert rules whose
thresholds pin the count (under 11 fires, under 10 does not), and through the model of the agent's OTel pipeline
(the generated collector configuration) by the CloudWatch widgets and alarms. Before, the Prometheus side counted
each series whatever its value (11 GPUs) where CloudWatch, whose agent drops the blank, counted 10; and the agent
counted each pod's GPUs before dropping blanks (4 for ml/train-0) where Grafana's table, whose copies are chosen by
their readings, showed 3.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.prometheus_server import SCENE_RANGE, backfilled_fixture
from tests.support.promtool_rules import alert_names, expected_alert, promtool_test

NOT_SUPPORTED = 9223372036854775794
STEP, STEPS = 30, 60  # half an hour of 30 s scrapes
END = STEP * STEPS
PERIOD = 300
TEMP, UTIL, ENERGY = "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
FIELDS = (TEMP, UTIL, ENERGY)
NODES = {"ip-10-0-1-1": 6, "ip-10-0-1-2": 5}
GPUS = [(node, gpu) for node, count in NODES.items() for gpu in range(count)]
BLANK = {TEMP: ("ip-10-0-1-1", 3), ENERGY: ("ip-10-0-1-2", 0)}  # the GPU that never reads the field
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
VARIABLES = ("cluster", "namespace", "pod", "node", "gpu")
RULES = f'''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    for field, name in (("{TEMP}", "temp"), ("{ENERGY}", "energy")):
        for level in (10, 11):
            yield Alarm(f"{{name}}-under-{{level}}", "Few GPUs report",
                        Condition(Query(field, "count", ()), "<", level),
                        description="Few GPUs report the field.", runbook="Look at the GPUs.")
'''


def pod(node: str, gpu: int) -> str:
    if node == "ip-10-0-1-1":
        return "train-0" if gpu < 4 else "train-1"
    return f"infer-{gpu}"


def reading(metric: str, node: str, gpu: int, t: int) -> int:
    if BLANK.get(metric) == (node, gpu):
        return NOT_SUPPORTED
    if metric == ENERGY:
        return 3_000_000_000_000_000 + 1_000_000 * t
    return 60 + gpu if metric == TEMP else 50


def _labels(node: str, gpu: int) -> str:
    return (f'gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",'
            f'Hostname="{node}",DCGM_FI_DRIVER_VERSION="535.161.08",container="main",namespace="ml",'
            f'pod="{pod(node, gpu)}"')


def _payload(node: str, t: int) -> str:
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} {'counter' if metric == ENERGY else 'gauge'}")
        lines += [f"{metric}{{{_labels(at, gpu)}}} {reading(metric, at, gpu, t)}" for at, gpu in GPUS if at == node]
    return "\n".join(lines) + "\n"


def _openmetrics(start: int) -> str:
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        lines += [f'{metric}{{{_labels(node, gpu)},node="{node}",job="dcgm-exporter"}} {reading(metric, node, gpu, t)} '
                  f'{start + t}' for t in range(0, END, STEP) for node, gpu in GPUS]
    return "\n".join(lines) + "\n# EOF\n"


backfilled = backfilled_fixture("blank-counts", _openmetrics, END, STEP)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("blank-counts"), {"counts.py": RULES}, fields=FIELDS)


@pytest.fixture(scope="module")
def points(built):
    files, _ = built
    config, job = agent_config(files[AGENT_FILE])
    return Agent(config, job).run([Scrape(float(t), _payload(node, t), target_labels(job, node))
                                   for t in range(0, END, STEP) for node in NODES])


def test_the_premise():
    assert len(GPUS) == 11
    assert reading(ENERGY, "ip-10-0-1-1", 0, END) > 1e14  # a reading, past the gauges' floor


def _panel(folder, uid: str, title: str) -> dict:
    project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
    dashboard = next(d for d in grafana_dashboards(project) if d.uid == uid)
    (panel,) = [p for p in dashboard.model["panels"] if p.get("title") == title]
    (target,) = panel["targets"]
    return target


def test_grafana_counts_the_gpus_with_a_reading(built, backfilled):
    _, folder = built
    prometheus, start = backfilled
    at = start + END - STEP + 10
    target = _panel(folder, "gpudash-overview", "GPUs reporting")
    (result,) = prometheus.query(interpolate(target["expr"], {**SCENE_RANGE, **variables({}, VARIABLES)}), at=at)
    assert float(result["value"][1]) == 10


def test_grafana_counts_each_pods_gpus_with_a_reading(built, backfilled):
    _, folder = built
    prometheus, start = backfilled
    at = start + END - STEP + 10
    target = _panel(folder, "gpudash-by-pod", "Pods on GPUs")
    shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1])
             for s in prometheus.query(interpolate(target["expr"], {**SCENE_RANGE, **variables({}, VARIABLES)}), at=at)}
    assert shown == {"Pod ml/train-0": 3, "Pod ml/train-1": 2, **{f"Pod ml/infer-{k}": 1 for k in range(5)}}


def test_the_rules_count_the_gpus_with_a_reading(built):
    _, folder = built
    alerts = alert_names(folder)
    series = [{"series": f'{metric}{{{_labels(node, gpu)},node="{node}"}}',
               "values": " ".join(str(reading(metric, node, gpu, k * STEP)) for k in range(STEPS))}
              for metric in FIELDS for node, gpu in GPUS]
    checks = [{"eval_time": f"{END // 60 - 1}m", "alertname": alerts[f"{name}-under-{level}"],
               "exp_alerts": [expected_alert(folder, alerts[f"{name}-under-{level}"])] if level == 11 else []}
              for name in ("temp", "energy") for level in (10, 11)]
    promtool_test(folder, "blank_counts.yaml", [{"interval": f"{STEP}s", "input_series": series,
                                                  "alert_rule_test": checks}], evaluation_interval=f"{STEP}s")


def test_cloudwatch_counts_the_gpus_with_a_reading(built, points):
    files, _ = built
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    (series,) = cloudwatch_eval.widget(widgets["GPUs reporting"], points, END - 3 * 3600, END, now=END).values()
    assert series[max(series)] == pytest.approx(10)
    requests = {next(t["Value"] for t in a["Request"]["Tags"] if t["Key"] == "gpudash:rule"): a["Request"]
                for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    for name in ("temp", "energy"):
        (metric,) = requests[f"{name}-under-10"]["Metrics"]
        (value,) = cloudwatch_eval.metrics_insights(metric["Expression"], points, END - PERIOD, END, PERIOD).values()
        assert value[END - PERIOD] / (PERIOD / STEP) == pytest.approx(10), name  # the readings over the scrapes
        for level in (10, 11):
            states = cloudwatch_eval.alarm(requests[f"{name}-under-{level}"], points, END)
            assert set(states.values()) == {"ALARM" if level == 11 else "OK"}, (name, level, states)


def test_cloudwatch_counts_each_pods_gpus_with_a_reading(built, points):
    """The OTel pipeline counts a pod's GPUs per scrape at the agent: after its blank filter, so a GPU whose field
    reads the blank is not one of them (before, counted before the filter, ml/train-0 held 4)."""
    files, _ = built
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"])["DashboardBody"])
    (table,) = [w["properties"] for w in body["widgets"] if w["properties"].get("title") == "Pods on GPUs"]
    shown = {label: series[max(series)] for label, series in
             cloudwatch_eval.widget(table, points, END - 3600, END, now=END).items()}
    assert shown == {"Pod ml/train-0": 3, "Pod ml/train-1": 2, **{f"Pod ml/infer-{k}": 1 for k in range(5)}}


def test_on_the_classic_pipeline_a_count_counts_the_blank_and_says_so(tmp_path_factory):
    """agent.pipeline: classic publishes the blank, and a count counts series or observations whatever their value:
    "GPUs reporting" reads 11 there, its header says so, and lint notes each counting alarm (AL010)."""
    from generator.cloudwatch_query import COUNTED_BLANK_NOTE
    from generator.lint.runner import lint_project
    from tests.support.cloudwatch_widgets import header, said

    files, folder = built_with(tmp_path_factory.mktemp("classic-counts"), {"counts.py": RULES}, fields=FIELDS,
                               settings="agent:\n  pipeline: classic\n")
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(t), _payload(node, t), target_labels(job, node))
                                     for t in range(0, END, STEP) for node in NODES])
    path = "cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"
    body = json.loads(json.loads(files[path])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    (series,) = cloudwatch_eval.widget(widgets["GPUs reporting"], points, END - 3 * 3600, END, now=END).values()
    assert series[max(series)] == pytest.approx(11)
    assert said(header(files, path), "GPUs reporting", COUNTED_BLANK_NOTE)
    notes = {f.where.rsplit(" ", 1)[-1] for f in lint_project(load_project(folder / "gpudash.yaml",
                                                                           folder / "counters.csv"))
             if f.rule == "AL010" and f.message.startswith("counts a GPU whose exporter reports only DCGM's blank")}
    assert {f"gpudash-gpu-cluster-{name}-under-{level}-warning" for name in ("temp", "energy")
            for level in (10, 11)} | {"gpudash-gpu-cluster-gpu-data-missing-critical"} <= notes

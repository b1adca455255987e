"""The overview's single values of a gauge mean the same quantity on Grafana and on CloudWatch: the fleet now.

Grafana's "Hottest GPU", "Average GPU temperature" and "Average GPU utilization" are instant queries (the latest
readings). Their CloudWatch twins took the whole dashboard range (6 hours) as one period: a GPU that spiked to
91 °C five hours ago and has read 62 °C since showed 91 there, and a mean over the range weighed a GPU there for
10 minutes like one there all along (ten idle GPUs and ten at 100 % for 10 minutes of 6 hours read 50 %, where
their GPU-time was 2.7 % busy and the fleet is idle now).

Six hours of 30 s scrapes: ten GPUs (five nodes of two) idle all along at 55 °C, but ip-10-0-1-0's GPU 0, which
read 91 °C for five minutes five hours before the end and 62 °C otherwise; a burst of ten more GPUs (five more
nodes) at 100 % and 70 °C for ten minutes three hours in, then scaled in. Each side is read at two moments, the
end and five minutes into the burst: Grafana's panel as an instant query on a real Prometheus holding the
readings, CloudWatch's widget through the model of the agent (the generated config) and the widget evaluator, at
its default range of 6 hours. The readings hold still for minutes, so the latest reading (Grafana) and the latest
whole minute drawn (CloudWatch) are the same number: the truth, computed here from the readings.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build, grafana_dashboards
from generator.output import encode
from generator.preview.interpolate import interpolate, variables
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.prometheus_server import SCENE_RANGE, backfilled as backfilled_prometheus

STEP, END = 30, 6 * 3600
SPIKE = (3600, 3600 + 300)  # ip-10-0-1-0 GPU 0 at 91 °C
BURST = (3 * 3600, 3 * 3600 + 600)  # the burst's GPUs report
BASE = [f"ip-10-0-1-{n}" for n in range(5)]
BURSTING = [f"ip-10-0-2-{n}" for n in range(5, 10)]
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
VARIABLES = ("cluster", "namespace", "pod", "node", "gpu")
TITLES = ("Hottest GPU", "Average GPU temperature", "Average GPU utilization")
# The moments read: the end (the burst long gone), and five minutes into the burst
MOMENTS = (END + 10, BURST[0] + 360)


def readings(t: int) -> dict[tuple[str, int], tuple[float, float]]:
    """{(node, GPU): (utilization %, temperature °C)} of the GPUs reporting at `t`."""
    found = {}
    for node in BASE:
        for gpu in range(2):
            hot = node == BASE[0] and gpu == 0
            found[node, gpu] = (0.0, (91.0 if SPIKE[0] <= t < SPIKE[1] else 62.0) if hot else 55.0)
    if BURST[0] <= t < BURST[1]:
        found.update({(node, gpu): (100.0, 70.0) for node in BURSTING for gpu in range(2)})
    return found


def truth(now: int) -> dict[str, float]:
    """The fleet at `now`: its latest readings (constant over the minutes before either moment read)."""
    latest = readings(now - STEP)
    utils = [u for u, _ in latest.values()]
    temps = [c for _, c in latest.values()]
    return {"Hottest GPU": max(temps), "Average GPU temperature": sum(temps) / len(temps),
            "Average GPU utilization": sum(utils) / len(utils)}


def _labels(node: str, gpu: int) -> str:
    return (f'gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA H100",'
            f'Hostname="{node}"')


def _payload(node: str, t: int) -> str:
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for (at, gpu), (util, temp) in readings(t).items():
        if at == node:
            lines += [f"DCGM_FI_DEV_GPU_UTIL{{{_labels(node, gpu)}}} {util:g}",
                      f"DCGM_FI_DEV_GPU_TEMP{{{_labels(node, gpu)}}} {temp:g}"]
    return "\n".join(lines) + "\n"


def _openmetrics(start: int) -> str:
    lines = []
    for index, name in enumerate(("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP")):
        lines.append(f"# TYPE {name} gauge")
        lines += [f'{name}{{{_labels(node, gpu)},node="{node}",job="dcgm-exporter"}} {values[index]:g} {start + t}'
                  for t in range(0, END, STEP) for (node, gpu), values in readings(t).items()]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def project():
    return load_project()


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    with backfilled_prometheus(tmp_path_factory.mktemp("overview-prometheus"), _openmetrics, END, STEP) as started:
        yield started


@pytest.fixture(scope="module")
def cloudwatch(project):
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(t), _payload(node, t), target_labels(job, node))
                                     for t in range(0, END, STEP) for node in {n for n, _ in readings(t)}])
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"])["DashboardBody"])
    return {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}, points


def _grafana(project, prometheus, start: int, title: str, now: int) -> float:
    dashboard = next(d for d in grafana_dashboards(project) if d.uid == "gpudash-overview")
    (panel,) = [p for p in dashboard.model["panels"] if p.get("title") == title]
    (target,) = panel["targets"]
    assert target["instant"] is True, title
    (result,) = prometheus.query(interpolate(target["expr"], {**SCENE_RANGE,
                                                              **variables({}, VARIABLES)}), at=start + now)
    return float(result["value"][1])


def _cloudwatch(widgets: dict, points, title: str, now: int) -> float:
    """The number the single value shows at `now` on the dashboard's default range (6 hours): its latest drawn
    data point."""
    (series,) = cloudwatch_eval.widget(widgets[title], points, now - 6 * 3600, now, now=now).values()
    return series[max(series)]


@pytest.mark.parametrize("now", MOMENTS)
@pytest.mark.parametrize("title", TITLES)
def test_an_overview_value_is_the_fleet_now_on_both_sides(project, backfilled, cloudwatch, title, now):
    prometheus, start = backfilled
    widgets, points = cloudwatch
    want = truth(now)[title]
    assert _grafana(project, prometheus, start, title, now) == pytest.approx(want), (title, now)
    assert _cloudwatch(widgets, points, title, now) == pytest.approx(want), (title, now)


def test_the_story_is_the_audit_case():
    assert truth(END + 10) == {"Hottest GPU": 62.0, "Average GPU temperature": pytest.approx(55.7),
                               "Average GPU utilization": 0.0}
    assert truth(BURST[0] + 360) == {"Hottest GPU": 70.0, "Average GPU temperature": pytest.approx(62.85),
                                     "Average GPU utilization": 50.0}

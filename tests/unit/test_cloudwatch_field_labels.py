"""Fields split by labels of their own, on CloudWatch: the agent sends each XID code's series as its own
observation under the GPU's dimensions; the generated widgets must still show each GPU's total.

Payloads whose counts change from scrape to scrape go through the agent model fed with the generated
config, and the widgets are evaluated with Metrics Insights semantics against the truth (the mean over
the period's scrapes of the per-scrape totals).
"""

from __future__ import annotations

import json
from statistics import mean

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval, field_labels
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import close
from tests.support.dcgm_fleet import STEP, target_labels

START, END, PERIOD = 0, 1800, 300


def _scale(k: int) -> int:
    return k % 3 + 1


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    files = encode(build(load_project(field_labels.write_project(tmp_path_factory.mktemp("project")))))
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    labels = target_labels(job, field_labels.NODE)
    points = Agent(config, job).run([Scrape(float(k * STEP), field_labels.payload(_scale(k)), labels)
                                     for k in range(END // STEP)])
    (name,) = [p for p in files if p.endswith("-xid.json") and p.startswith("cloudwatch/")]
    body = json.loads(json.loads(files[name])["DashboardBody"])
    return {w["properties"]["title"]: cloudwatch_eval.widget(w["properties"], points, START, END)
            for w in body["widgets"] if w["type"] == "metric"}, points


def _truth(title: str) -> dict[str, dict[int, float]]:
    lines: dict[str, dict[int, float]] = {}
    for bucket in range(START, END, PERIOD):
        scrapes = [field_labels.truth(title, _scale(k)) for k in range(bucket // STEP, (bucket + PERIOD) // STEP)]
        for label in scrapes[0]:
            lines.setdefault(label or title, {})[bucket] = mean(s[label] for s in scrapes)
    return lines


@pytest.mark.parametrize("title", ["XID errors (mean)", "XID errors by pod", "XID errors in the cluster"])
def test_each_widget_shows_the_gpus_total_over_its_codes(shown, title):
    widgets, _ = shown
    expected = _truth(title)
    assert set(widgets[title]) == set(expected)
    for label, series in expected.items():
        assert set(widgets[title][label]) == set(series), (title, label)
        for bucket, value in series.items():
            assert close(widgets[title][label][bucket], value), (title, label, bucket, widgets[title][label][bucket],
                                                                 value)


def test_the_agent_sends_one_observation_per_code(shown):
    """Why MAX or AVG per GPU would be wrong: two codes of GPU 0 are two observations a scrape."""
    _, points = shown
    gpu0 = [p for p in points if p.metric == field_labels.COUNTS and p.timestamp == 0.0
            and p.dims() == {"ClusterName": "gpu-cluster", "node": field_labels.NODE, "gpu": "0"}]
    assert sorted(p.value for p in gpu0) == [1.0, 2.0]


COUNTER_DASHBOARD = f'''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="xid", title="XID", rows=[Row("errors", [
        Panel("XID rate", Query("{field_labels.COUNTS}", "avg", ("node", "gpu")), description="per GPU"),
        Panel("XID increase", Query("{field_labels.COUNTS}", "max", ("node", "gpu"), as_increase=True),
              description="per GPU")])])
'''


def test_as_a_counter_each_gpus_rate_and_increase_add_up_its_codes(tmp_path):
    """The exporter's default CSV once typed the XID count a counter: rates and increases per GPU add the
    codes' deltas (the agent sends one delta per code and scrape)."""
    path = field_labels.write_project(tmp_path)
    (tmp_path / "counters.csv").write_text(field_labels.CSV.replace(", gauge, Count of XID", ", counter, Count of XID"))
    (tmp_path / "dashboards" / "xid.py").write_text(COUNTER_DASHBOARD)
    files = encode(build(load_project(path)))
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    labels = target_labels(job, field_labels.NODE)
    typed = f"# TYPE {field_labels.COUNTS} "  # the exporter types a series as its CSV says
    points = Agent(config, job).run([Scrape(float(k * STEP), field_labels.payload(k + 1).replace(
        typed + "gauge", typed + "counter"), labels) for k in range(-1, END // STEP)])
    (name,) = [p for p in files if p.endswith("-xid.json") and p.startswith("cloudwatch/")]
    body = json.loads(json.loads(files[name])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    per_scrape = field_labels.truth("XID errors")  # each scrape adds the counts once more
    rate = cloudwatch_eval.widget(widgets["XID rate"], points, START, END)
    assert set(rate) == set(per_scrape)
    for label, total in per_scrape.items():
        assert rate[label] and all(close(value, total / STEP) for value in rate[label].values()), (label, rate)
    increase = cloudwatch_eval.widget(widgets["XID increase"], points, START, END)
    assert {label: set(series.values()) for label, series in increase.items()} == {  # over the whole range
        label: {total * (END - START) // STEP} for label, total in per_scrape.items()}

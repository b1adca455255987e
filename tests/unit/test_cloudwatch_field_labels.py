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


@pytest.mark.parametrize("title", ["XID errors (mean)", "XID errors by pod", "XID errors in the cluster"])
def test_typed_counter_in_the_csv_each_widget_still_shows_the_count_in_the_window(tmp_path, title):
    """The exporter's default-counters.csv types the XID count `counter` (`reported XIDs during last window`) and the
    exporter serves it so; it is a count over the exporter's window (the catalog of DCGM's fields,
    catalog.dcgm_meaning): the widgets show the same counts as with the gauge type, not a rate of them (the agent's OTel
    pipeline publishes the readings)."""
    path = field_labels.write_project(tmp_path)
    (tmp_path / "counters.csv").write_text(field_labels.CSV.replace(", gauge, Count of XID", ", counter, Count of XID"))
    files = encode(build(load_project(path)))
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    labels = target_labels(job, field_labels.NODE)
    typed = f"# TYPE {field_labels.COUNTS} "  # the exporter types a series as its CSV says
    points = Agent(config, job).run([Scrape(float(k * STEP), field_labels.payload(_scale(k)).replace(
        typed + "gauge", typed + "counter"), labels) for k in range(END // STEP)])
    (name,) = [p for p in files if p.endswith("-xid.json") and p.startswith("cloudwatch/")]
    body = json.loads(json.loads(files[name])["DashboardBody"])
    (properties,) = [w["properties"] for w in body["widgets"] if w["type"] == "metric"
                     and w["properties"]["title"] == title]
    shown, expected = cloudwatch_eval.widget(properties, points, START, END), _truth(title)
    assert set(shown) == set(expected)
    for label, series in expected.items():
        for bucket, value in series.items():
            assert close(shown[label][bucket], value), (title, label, bucket, shown[label][bucket], value)

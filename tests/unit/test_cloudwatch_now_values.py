"""Single values that mean "now" and increases over the selected range show what their titles say on CloudWatch.

"GPUs reporting" and "Total power draw" read the last period ending now (the widget's own range, one period):
the latest period on the dashboard's grid is still filling, and at its start + 10 s it held only the GPUs
scraped in those 10 s (4 of 6, 520 of 940 W). The fleet's nodes are scraped 20 s apart, as Prometheus spreads
targets over the interval. "Rows remapped" is the increase per GPU over the selected range, as on Grafana
(increase over $__range), not per period: one bar per GPU. Each is checked against the fleet's readings, through
the model of the agent driven by the generated config, at several moments within a period.
"""

from __future__ import annotations

import json
from statistics import mean

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval, dcgm_fleet as F
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
LATE_NODE, LATE = "ip-10-0-1-2", 20  # this node's exporter is scraped 20 s after the other's
PERIOD = 300


@pytest.fixture(scope="module")
def built():
    project = load_project()
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(s.timestamp + (LATE if s.target_labels.get("node") == LATE_NODE else 0), s.payload,
                      s.target_labels) for s in F.scrapes(job, project.catalog, -1, 90, F.FLEET)]
    return files, Agent(config, job).run(scrapes)


def _widgets(files, dashboard: str) -> dict[str, dict]:
    body = json.loads(json.loads(files[f"cloudwatch/dashboards/gpudash-gpu-cluster-{dashboard}.json"])["DashboardBody"])
    return {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}


def _scraped(gpu: F.Gpu, k: int) -> float:
    return k * F.STEP + (LATE if gpu.node == LATE_NODE else 0)


@pytest.mark.parametrize("now", [2100 + 10, 2100 + 25, 2100 + 150, 2100 + 290])
def test_now_values_hold_every_gpu_at_any_moment_of_a_period(built, now):
    files, points = built
    widgets = _widgets(files, "overview")
    (reporting,) = cloudwatch_eval.widget(widgets["GPUs reporting"], points, now - 6 * 3600, now).values()
    assert list(reporting.values()) == [len(F.FLEET)], now
    # Each GPU's mean over the last 5 minutes, added up
    truth = sum(mean(F.value("DCGM_FI_DEV_POWER_USAGE", gpu, k, "gauge") for k in range(91)
                     if now - PERIOD <= _scraped(gpu, k) < now) for gpu in F.FLEET)
    (power,) = cloudwatch_eval.widget(widgets["Total power draw"], points, now - 6 * 3600, now).values()
    assert list(power.values()) == [pytest.approx(truth)], now
    assert 900 < truth < 1000


def test_the_dashboards_grid_period_alone_misses_the_gpus_not_yet_scraped(built):
    """The same widgets without their own range (the latest period of the dashboard's grid) at start + 10 s."""
    files, points = built
    widget = {k: v for k, v in _widgets(files, "overview")["GPUs reporting"].items()
              if k not in ("start", "setPeriodToTimeRange")}
    series = cloudwatch_eval.widget(widget, points, 0, 2110)
    (values,) = series.values()
    assert values[max(values)] == 4  # only ip-10-0-1-1's four GPUs were scraped in the 10 s


def test_rows_remapped_is_the_increase_over_the_selected_range(built):
    files, points = built
    widget = _widgets(files, "health")["Rows remapped (uncorrectable)"]
    assert widget["view"] == "bar" and widget["setPeriodToTimeRange"] is True
    for start, end in ((0, 2700), (1200, 2700), (0, 1200)):
        shown = cloudwatch_eval.widget(widget, points, start, end)
        # ip-10-0-1-1 GPU 3 remaps one row at scrape 50 (1,500 s); no other GPU remaps any
        want = 1.0 if start < 1500 < end else 0.0
        line = next(series for label, series in shown.items() if label.startswith("ip-10-0-1-1 GPU 3"))
        assert list(line.values()) == [want], (start, end)
        assert all(list(s.values()) == [0.0] for label, s in shown.items() if not label.startswith("ip-10-0-1-1 GPU 3"))

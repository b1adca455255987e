"""DCGM's blank sentinels on the CloudWatch side.

Exporters that pass a blank through (the exporter README's own sample reads MEMORY_TEMP
9223372036854775794, "not supported"; profiling pauses read 2**47) put it into the payload; the
scrape job cannot drop a sample by value and the agent drops only NaN and infinities, so the
blank reaches CloudWatch. The generated widgets must not show it: payloads with blanks go
through the agent model fed with the generated config, and the generated widgets are evaluated
with Metrics Insights and metric-math semantics, against the truth without the blank readings.
Alarms take no metric math: the tests show what a blank does to them, which the header, lint
and README say.
"""

from __future__ import annotations

import json
import re

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import close, widgets
from tests.support.dcgm_fleet import FLEET, STEP, scrapes, target_labels, truth

START, END = 0, 2100
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
NOT_SUPPORTED = "9223372036854775794"  # int64 blank + 2
FP_BLANK = "140737488355328"  # 2**47


def _blank(payload: str, metric: str, node: str, gpu: int, value: str) -> str:
    """The payload with `metric` of one GPU reading `value` (the exporter's label order kept)."""
    uuid = f'UUID="GPU-{node}-{gpu}"'
    return "\n".join(re.sub(r"\S+$", value, line) if line.startswith(metric + "{") and uuid in line else line
                     for line in payload.split("\n"))


@pytest.fixture(scope="module")
def blank_fleet(tmp_path_factory):
    """ip-10-0-1-2 GPU 1 never reads its temperature (not supported); ip-10-0-1-1 GPU 0 reads the
    floating-point blank for power, and the blank for its power-throttling counter (ns), during scrapes
    10-12 (a profiling pause), inside the 300-600 s period."""
    csv = tmp_path_factory.mktemp("counters") / "counters.csv"  # the defaults, with power throttling collected
    csv.write_text(load_project().settings.counters_path.read_text()
                   + "DCGM_FI_DEV_POWER_VIOLATION, counter, Throttling duration due to power constraints (in ns).\n")
    project = load_project(counters=csv)
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    runs = []
    for scrape in scrapes(job, project.catalog, -1, END // STEP - 1):
        payload = scrape.payload
        if scrape.target_labels["node"] == "ip-10-0-1-2":
            payload = _blank(payload, "DCGM_FI_DEV_GPU_TEMP", "ip-10-0-1-2", 1, NOT_SUPPORTED)
        elif 10 * STEP <= scrape.timestamp <= 12 * STEP:
            payload = _blank(payload, "DCGM_FI_DEV_POWER_USAGE", "ip-10-0-1-1", 0, FP_BLANK)
            payload = _blank(payload, "DCGM_FI_DEV_POWER_VIOLATION", "ip-10-0-1-1", 0, NOT_SUPPORTED)
        runs.append(Scrape(scrape.timestamp, payload, scrape.target_labels))
    return project, files, Agent(config, job).run(runs)


def _widget(files, title, dashboard):
    (properties,) = [p for path, p in widgets(files) if p["title"] == title and dashboard in path]
    return properties


def _raw(properties, datapoints):
    """What the widget's query alone returns (the blank reaches CloudWatch; the math must drop it)."""
    expression = properties["metrics"][0][0]["expression"]
    period = END - START if properties.get("setPeriodToTimeRange") else properties["period"]
    return cloudwatch_eval.metrics_insights(expression, datapoints, START, END, period)


def test_the_blank_reaches_cloudwatch(blank_fleet):
    _, files, datapoints = blank_fleet
    temperatures = {p.value for p in datapoints if p.metric == "DCGM_FI_DEV_GPU_TEMP"
                    and p.dims().get("node") == "ip-10-0-1-2" and p.dims().get("gpu") == "1"}
    assert temperatures == {float(NOT_SUPPORTED)}
    hottest = _raw(_widget(files, "Hottest GPU", "overview"), datapoints)
    assert list(hottest[()].values()) == [float(NOT_SUPPORTED)]


def test_per_gpu_lines_leave_out_the_gpu_that_reads_a_blank(blank_fleet):
    project, files, datapoints = blank_fleet
    properties = _widget(files, "GPU temperature", "overview")
    shown = cloudwatch_eval.widget(properties, datapoints, START, END)
    assert shown.get("ip-10-0-1-2 GPU 1", {}) == {}
    query = project.catalog.get("DCGM_FI_DEV_GPU_TEMP")
    from generator.model import Query

    expected = truth(Query(query.name, "avg", ("node", "gpu")), query, START, END, properties["period"])
    del expected["ip-10-0-1-2 GPU 1"]
    shown = {label: series for label, series in shown.items() if series}
    assert set(shown) == set(expected)
    for label, series in expected.items():
        assert set(shown[label]) == set(series)
        assert all(close(shown[label][bucket], value) for bucket, value in series.items()), label


def test_a_line_over_several_gpus_shows_a_gap_not_the_blank(blank_fleet):
    """Hottest GPU and the average: every period holds the never-read GPU, so the line is empty."""
    _, files, datapoints = blank_fleet
    for title in ("Hottest GPU", "Average GPU temperature"):
        shown = cloudwatch_eval.widget(_widget(files, title, "overview"), datapoints, START, END)
        assert all(series == {} for series in shown.values()), title


def test_a_pods_period_with_a_blank_is_a_gap_and_the_other_periods_are_true(blank_fleet):
    project, files, datapoints = blank_fleet
    properties = _widget(files, "Power draw by pod", "by-pod")
    shown = cloudwatch_eval.widget(properties, datapoints, START, END)
    from generator.model import Query

    power = project.catalog.get("DCGM_FI_DEV_POWER_USAGE")
    expected = truth(Query(power.name, "sum", ("pod",)), power, START, END, properties["period"])
    assert set(shown["Pod ml/train-0"]) == set(expected["Pod ml/train-0"]) - {300}
    for label, series in expected.items():
        for bucket, value in shown[label].items():
            assert close(value, series[bucket]), (label, bucket)
    assert _raw(properties, datapoints)[(("namespace", "ml"), ("pod", "train-0"))][300] > 1e13


def test_a_sum_over_gpus_drops_the_blank_gpu_alone(blank_fleet):
    """Total power draw sums per-GPU lines: in the period of the blank, the other GPUs still add up."""
    project, files, datapoints = blank_fleet
    properties = _widget(files, "Total power draw", "overview")
    (series,) = cloudwatch_eval.widget(properties, datapoints, START, END).values()
    from generator.model import Query

    power = project.catalog.get("DCGM_FI_DEV_POWER_USAGE")
    period = properties["period"]
    everyone = truth(Query(power.name, "sum", ()), power, START, END, period)[""]
    others = truth(Query(power.name, "sum", ()), power, START, END, period, gpus=FLEET[1:])[""]
    assert set(series) == set(everyone)
    for bucket, value in series.items():
        assert close(value, others[bucket] if bucket == 300 else everyone[bucket]), bucket


def test_a_rate_in_a_scaled_unit_drops_the_jump_into_a_blank(blank_fleet):
    """Throttling counters count ns and are shown as a share of time (x 1e-9): the delta into the blank
    (about 2**63 ns) reads as a share near 1e8, not above the per-second floor, unless the floor
    is taken in the shown unit too. The period of the jump is a gap; every other period is true."""
    project, files, datapoints = blank_fleet
    properties = _widget(files, "Throttled by power", "health")
    shown = cloudwatch_eval.widget(properties, datapoints, START, END)
    from generator.model import Query

    field = project.catalog.get("DCGM_FI_DEV_POWER_VIOLATION")
    expected = truth(Query(field.name, "avg", ("node", "gpu")), field, START, END, properties["period"])
    assert set(shown["ip-10-0-1-1 GPU 0"]) == set(expected["ip-10-0-1-1 GPU 0"]) - {300}
    for label, series in expected.items():
        for bucket, value in shown[label].items():
            assert close(value, series[bucket]), (label, bucket)


def test_alarms_cannot_drop_a_blank_and_say_so(blank_fleet):
    """A GROUP BY alarm evaluates its query itself: the never-read temperature breaches the threshold.
    The dashboards' header, `gpudash lint` (AL010 notes) and the README name the limit."""
    _, files, datapoints = blank_fleet
    alarms = {a["Request"]["AlarmName"]: a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    states = cloudwatch_eval.alarm(alarms["gpudash-gpu-cluster-gpu-temp-high-warning"], datapoints, END)
    assert states[(("node", "ip-10-0-1-2"), ("gpu", "1"))] == "ALARM"
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"])["DashboardBody"])
    assert "blank" in body["widgets"][0]["properties"]["markdown"]


def test_the_exporter_readme_sample_shows_no_memory_temperature(reference):
    """The recorded README payload: MEMORY_TEMP reads "not supported" on its GPU."""
    project = load_project()
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    lines = (reference / "exporter" / "dcgm-exporter-readme-k8s.prom").read_text().splitlines()
    payload = "\n".join(line for line in lines if line.strip() != "...") + "\n"
    points = Agent(config, job).run([Scrape(float(t), payload, target_labels(job, "ip-10-0-1-1"))
                                     for t in range(START, END, STEP)])
    properties = _widget(files, "Memory temperature", "health")
    assert _raw(properties, points)  # the sentinel arrived
    shown = cloudwatch_eval.widget(properties, points, START, END)
    assert all(series == {} for series in shown.values())
    clocks = cloudwatch_eval.widget(_widget(files, "SM clock", "health"), points, START, END)
    assert set(clocks["ip-10-0-1-1 GPU 0"].values()) == {139.0}  # the GPU's readable fields still show


def test_the_agent_drops_only_nan_and_infinities():
    """The agent's one check of a value (plugins/inputs/prometheus: isValueValid): no sentinel is dropped."""
    payload = "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + "".join(
        f'DCGM_FI_DEV_GPU_TEMP{{gpu="{i}",UUID="GPU-{i}",Hostname="h"}} {v}\n'
        for i, v in enumerate(("NaN", "+Inf", "-Inf", NOT_SUPPORTED, FP_BLANK, "51")))
    config = {"logs": {"metrics_collected": {"prometheus": {"emf_processor": {"metric_declaration": [
        {"source_labels": ["job"], "label_matcher": ".*", "dimensions": [["gpu"]], "metric_selectors": [".*"]}]}}}}}
    points = Agent(config).run([Scrape(0.0, payload, {"job": "dcgm"})])
    assert sorted(p.value for p in points) == [51.0, float(FP_BLANK), float(NOT_SUPPORTED)]


def test_verify_names_the_gpu_and_field_that_read_a_blank(reference):
    """`gpudash verify` on the README payload: MEMORY_TEMP of GPU 0 reads "not supported"."""
    from generator.checks.exporter import analyse

    text = (reference / "exporter" / "dcgm-exporter-readme-k8s.prom").read_text()
    payload = "\n".join(line for line in text.splitlines() if line.strip() != "...") + "\n"
    (check,) = [c for c in analyse(load_project(), payload, "readme") if c.name == "blank values"]
    assert check.status == "warn"
    assert check.detail.endswith("published): gpu 0: DCGM_FI_DEV_MEMORY_TEMP")
    clean = (reference / "exporter" / "blog-a10g-k8s.prom").read_text()
    assert not [c for c in analyse(load_project(), clean, "blog") if c.name == "blank values"]


def test_lint_notes_each_alarm_a_blank_would_fool():
    from generator.lint.runner import lint_project

    notes = {f.where.rsplit(" ", 1)[-1]: f.message for f in lint_project(load_project()) if f.rule == "AL010"}
    assert all(f.severity == "note" for f in lint_project(load_project()) if f.rule == "AL010")
    assert {"gpudash-gpu-cluster-gpu-temp-high-warning", "gpudash-gpu-cluster-gpu-idle-warning"} <= set(notes)
    assert not [where for where in notes if "data-missing" in where]  # a count of readings is not fooled
    assert any("fires for it" in m for w, m in notes.items() if "gpu-temp-high" in w)
    assert any("never fires for it" in m for w, m in notes.items() if "gpu-idle" in w)


def test_a_gauge_of_energy_since_boot_is_shown_not_cut_as_a_blank(tmp_path):
    """A counters CSV may declare the energy counter (mJ since boot) a gauge: 5e11 mJ (a GPU at 300 W
    for 20 days) is a real reading, far above the floor that suits temperatures and clocks."""
    from tests.support.cloudwatch_agent import Datapoint

    defaults = load_project().settings.counters_path.read_text()
    csv = tmp_path / "counters.csv"
    csv.write_text(re.sub(r"(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION\s*,\s*)counter", r"\1gauge", defaults))
    project = load_project(counters=csv)
    assert not project.catalog.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").is_counter
    files = encode(build(project))
    properties = _widget(files, "Energy use rate by pod", "by-pod")
    dims = (("ClusterName", "gpu-cluster"), ("namespace", "ml"), ("pod", "train-0"))
    points = [Datapoint("ContainerInsights/Prometheus", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", dims, t, 5e11)
              for t in range(START, END, STEP)]
    (series,) = cloudwatch_eval.widget(properties, points, START, END).values()
    assert series and all(close(value, 5e11) for value in series.values()), series

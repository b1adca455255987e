"""Counter rates and increases on CloudWatch are exact from what CloudWatch stores, whatever the scrape
interval, the period the console uses, missed scrapes, counter resets and GPUs joining mid-range.

The agent sends a counter as the difference to the series' previous reading, so the deltas a period
holds add up to the counter's growth between the readings that bound the period: a missed scrape's
growth arrives in the next reading's delta. The truth here is that growth, computed from each GPU's
cumulative work at the times its exporter was read (and from nothing the agent, CloudWatch or gpudash
compute): per GPU, per pod (its GPUs' sum) and over the fleet (sum, mean and maximum over the GPUs that
have a delta in the period), and the rate is the growth over the period's length. The widgets are
evaluated with the period the settings give and with the periods the console's period selector may
set instead (60 s, 1 hour): their math divides by PERIOD() of the widget's hidden metric, never by a
number fixed at generate time. No value here is a blank. The OTel pipeline publishes the replay counter once
per GPU, and its per-GPU lines are named by node and GPU; agent.pipeline: classic publishes it per GPU instance
too (each whole GPU of this fleet is one, GPU_I_ID "none") and its per-GPU lines are those, `MIG none`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from statistics import mean

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import close, header, said, widgets
from tests.support.dcgm_fleet import target_labels

START, END = 0, 7200  # two hours: two whole periods of an hour
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
REPLAYS, ENERGY = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
PIPELINES = {"otel": "", "classic": "agent:\n  pipeline: classic\n"}

DASHBOARD = f'''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="rates", title="Rates", rows=[Row("counters", [
        Panel("Replay rate per GPU", Query("{REPLAYS}", "avg", ("node", "gpu"))),
        Panel("Replays per GPU", Query("{REPLAYS}", "sum", ("node", "gpu"), as_increase=True)),
        Panel("Mean replays per GPU", Query("{REPLAYS}", "avg", (), as_increase=True)),
        Panel("Replays", Query("{REPLAYS}", "sum", (), as_increase=True)),
        Panel("Replay rate", Query("{REPLAYS}", "sum", ())),
        Panel("Mean replay rate per GPU", Query("{REPLAYS}", "avg", ())),
        Panel("Highest replay rate", Query("{REPLAYS}", "max", ())),
        Panel("Energy use rate by pod", Query("{ENERGY}", "sum", ("pod",))),
    ])])
'''

# (node, gpu index, (namespace, pod) or None): the fleet
GPUS = (("ip-10-0-1-1", 0, ("ml", "train-0")), ("ip-10-0-1-1", 1, ("ml", "train-0")),
        ("ip-10-0-1-2", 0, None), ("ip-10-0-1-2", 1, ("research", "train-0")))
JOINS = {("ip-10-0-1-2", 1): 2530}  # first served at 2,530 s (rounded up to its node's next scrape)
RESET = ("ip-10-0-1-2", 0, 4000)  # the driver reloads right after the reading at or before 4,000 s


def work(metric: str, gpu: tuple[str, int], t: int) -> int:
    """Everything the GPU counted by time t (never reset): its rate changes every 700 s."""
    index = [g[:2] for g in GPUS].index(gpu)
    if metric == REPLAYS:
        return (index + 1) * t + (3 + index) * (t // 700) ** 2
    return (150_000 + 20_000 * index) * t + 7_000 * (t // 700) ** 2  # mJ


@lru_cache(maxsize=None)
def times(interval: int) -> tuple[int, ...]:
    """When the exporters are scraped: every `interval`, from one scrape before START."""
    return tuple(range(START - interval, END, interval))


@lru_cache(maxsize=None)
def missed(interval: int) -> dict[str, frozenset[int]]:
    """Scrapes that never arrive: node 1 misses one in seven and a run of three, node 2 every fifth in its
    second hour. None is next to the reset (the growth between the reading before it and the reload would be
    lost to any collector)."""
    ts = times(interval)
    reset = reset_at(interval)
    first = {t for i, t in enumerate(ts) if i % 7 == 3} | set(ts[40:43])
    second = {t for i, t in enumerate(ts) if i % 5 == 2 and t >= 3600}
    return {"ip-10-0-1-1": frozenset(first), "ip-10-0-1-2": frozenset(second - {reset, reset + interval})}


@lru_cache(maxsize=None)
def reset_at(interval: int) -> int:
    """The reading after which the driver reloads."""
    return max(t for t in times(interval) if t <= RESET[2])


def reading(metric: str, gpu: tuple[str, int], t: int, interval: int) -> int:
    """What the exporter serves at t: the work since the driver loaded."""
    if metric == REPLAYS and gpu == RESET[:2] and t > reset_at(interval):
        return work(metric, gpu, t) - work(metric, gpu, reset_at(interval))
    return work(metric, gpu, t)


def payload(node: str, t: int, interval: int) -> str:
    lines = []
    for metric in (REPLAYS, ENERGY):
        lines += [f"# HELP {metric} {metric}.", f"# TYPE {metric} counter"]
        for name, index, pod in GPUS:
            if name != node or t < JOINS.get((name, index), START - interval):
                continue
            labels = {"gpu": str(index), "UUID": f"GPU-{node}-{index}", "device": f"nvidia{index}",
                      "modelName": "NVIDIA A10G", "Hostname": node, "DCGM_FI_DRIVER_VERSION": "535.104.05"}
            if pod:
                labels.update(container="main", namespace=pod[0], pod=pod[1])
            text = ",".join(f'{key}="{value}"' for key, value in labels.items())
            lines.append(f"{metric}{{{text}}} {reading(metric, (name, index), t, interval)}")
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=None)
def arrived(node: str, interval: int) -> tuple[int, ...]:
    lost = missed(interval)[node]
    return tuple(t for t in times(interval) if t not in lost)


@lru_cache(maxsize=None)
def _read(gpu: tuple[str, int], interval: int) -> tuple[int, ...]:
    """The times of the GPU's readings that arrived: its node's scrapes that arrived, from its first."""
    return tuple(t for t in arrived(gpu[0], interval) if t >= JOINS.get(gpu, START - interval))


@lru_cache(maxsize=None)
def growth(metric: str, gpu: tuple[str, int], interval: int, start: int, period: int,
           pipeline: str = "otel") -> float | None:
    """The counter's growth between the reading before the period (or the GPU's first) and the period's last
    reading; None when the GPU has no reading in the period after its first (worked out once: every panel of
    replays reads the same growths). On agent.pipeline: classic a
    failed scrape's staleness markers make the agent forget the previous reading, so the growth across a failed
    scrape is in no delta: only the readings whose scrape before answered count (None when none does)."""
    read = _read(gpu, interval)
    if pipeline == "classic":
        steps = [(before, t) for before, t in zip(read, read[1:])
                 if start <= t < start + period and t - before == interval]
        return float(sum(work(metric, gpu, t) - work(metric, gpu, before) for before, t in steps)) if steps else None
    inside = [t for t in read[1:] if start <= t < start + period]
    if not inside:
        return None
    before = max(t for t in read if t < inside[0])
    return float(work(metric, gpu, inside[-1]) - work(metric, gpu, before))


def truth(title: str, interval: int, period: int, energy_scale: float,
          pipeline: str = "otel") -> dict[str, dict[int, float]]:
    """{line: {period start: value}} of each panel, from the fleet's work and the readings that arrived."""
    lines: dict[str, dict[int, float]] = {}
    instance = " MIG none" if pipeline == "classic" else ""  # classic: per GPU instance, a whole GPU is one
    for start in range(START, END, period):
        replays = {g[:2]: growth(REPLAYS, g[:2], interval, start, period, pipeline) for g in GPUS}
        replays = {g: v for g, v in replays.items() if v is not None}
        values: dict[str, float] = {}
        if title == "Replay rate per GPU":
            values = {f"{n} GPU {i}{instance}": v / period for (n, i), v in replays.items()}
        elif title == "Replays per GPU":
            values = {f"{n} GPU {i}{instance}": v for (n, i), v in replays.items()}
        elif title == "Energy use rate by pod":
            for node, index, pod in GPUS:
                energy = growth(ENERGY, (node, index), interval, start, period, pipeline)
                if pod and energy is not None:
                    key = f"Pod {pod[0]}/{pod[1]}"
                    values[key] = values.get(key, 0.0) + energy / period * energy_scale
        elif replays:
            values = {title: {"Mean replays per GPU": mean(replays.values()), "Replays": sum(replays.values()),
                              "Replay rate": sum(replays.values()) / period,
                              "Mean replay rate per GPU": mean(replays.values()) / period,
                              "Highest replay rate": max(replays.values()) / period}[title]}
        for line, value in values.items():
            lines.setdefault(line, {})[start] = value
    return lines


_BUILDS: dict = {}


def _built(tmp_path_factory, pipeline: str, interval: int, period: int = 300):
    """(project, files, datapoints) of the settings, generated and run through the agent's model once."""
    key = (pipeline, interval, period)
    if key not in _BUILDS:
        folder = tmp_path_factory.mktemp("rates")
        (folder / "dashboards").mkdir()
        (folder / "dashboards" / "rates.py").write_text(DASHBOARD)
        (folder / "gpudash.yaml").write_text(f"{PIPELINES[pipeline]}scrape:\n  interval: {interval}s\n"
                                             f"cloudwatch:\n  period: {period}\ndefinitions:\n  dashboards: [dashboards]\n")
        project = load_project(folder / "gpudash.yaml")
        files = encode(build(project, grafana=False))  # CloudWatch's widgets and the agent's ConfigMaps
        config, job = agent_config(files[AGENT_FILE])
        # a scrape that never arrives is a failed one: the agent's scrape loop runs at every interval
        scrapes = [Scrape(float(t), payload(node, t, interval) if t in arrived(node, interval) else "",
                          target_labels(job, node))
                   for node in ("ip-10-0-1-1", "ip-10-0-1-2") for t in times(interval)]
        _BUILDS[key] = project, files, Agent(config, job).run(scrapes)
    return _BUILDS[key]


def _widgets(files) -> dict[str, dict]:
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-rates.json"])["DashboardBody"])
    return {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
@pytest.mark.parametrize("interval", [15, 30, 60])
def test_rates_and_increases_are_exact_at_any_interval_and_any_period_the_console_sets(
        tmp_path_factory, pipeline, interval):
    project, files, datapoints = _built(tmp_path_factory, pipeline, interval)
    energy_scale = 1.0  # the counter is in mJ, and the panel shows its rate in milliwatts (mJ per second)
    checked = 0
    for title, properties in _widgets(files).items():
        assert properties["period"] == 300
        for period in (60, 300, 3600):  # 300: the widget's own; 60 and 3600: the console's period selector
            shown = cloudwatch_eval.widget(properties, datapoints, START, END, period=period)
            expected = truth(title, interval, period, energy_scale, pipeline)
            assert set(shown) == set(expected), (title, period)
            for line, series in expected.items():
                assert set(shown[line]) == set(series), (title, period, line)
                wrong = {t: (shown[line][t], v) for t, v in series.items() if not close(shown[line][t], v)}
                assert not wrong, (title, interval, period, line, wrong)
                checked += len(series)
    assert checked > 900


def test_the_period_in_the_settings_is_the_widgets_and_still_followed(tmp_path_factory):
    """cloudwatch.period: 60 gives the widgets that period, and their math no number of its own."""
    project, files, datapoints = _built(tmp_path_factory, "otel", 30, period=60)
    energy_scale = 1.0  # the counter is in mJ, and the panel shows its rate in milliwatts (mJ per second)
    # an increase is over the selected range (as Grafana's increase over $__range), every rate per period of 60 s
    increases = {"Replays per GPU", "Mean replays per GPU", "Replays"}
    widgets = _widgets(files)
    assert increases < set(widgets)
    for title, properties in widgets.items():
        assert properties["period"] == 60
        shown = cloudwatch_eval.widget(properties, datapoints, START, END)
        expected = truth(title, 30, END - START if title in increases else 60, energy_scale)
        assert set(shown) == set(expected)
        for line, series in expected.items():
            assert all(close(shown[line][t], v) for t, v in series.items()), (title, line)


def test_the_cases_are_messy():
    """The fleet holds what the title says it does: missed scrapes inside periods and at their ends, a reset
    counter, and a GPU whose first period holds only part of its scrapes."""
    for interval in (15, 30, 60):
        assert len(missed(interval)["ip-10-0-1-1"]) > 10 and missed(interval)["ip-10-0-1-2"]
        reset = reset_at(interval)
        after = reading(REPLAYS, RESET[:2], reset + interval, interval)
        assert after < reading(REPLAYS, RESET[:2], reset, interval)  # the counter went down
        assert reset in arrived(RESET[0], interval) and reset + interval in arrived(RESET[0], interval)
    # a mean delta times the scrapes per period would read a period with a missed scrape high
    interval, period = 30, 300
    start = next(s for s in range(START, END, period)
                 if any(s <= t < s + period - interval for t in missed(interval)["ip-10-0-1-1"]))
    inside = [t for t in arrived("ip-10-0-1-1", interval) if start <= t < start + period]
    assert len(inside) < period // interval


ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"


def _rows_payload(k: int, gap: str) -> str:
    """One GPU whose one row is remapped between scrape 19 and scrape 21; scrape 20 fails, or answers without the
    counter (an exporter leaving out a reading it cannot make)."""
    labels = 'gpu="0",UUID="GPU-a",device="nvidia0",modelName="NVIDIA A100",Hostname="ip-10-0-1-1"'
    temperature = f"# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{{{labels}}} 60\n"
    if k == 20:
        return "" if gap == "failed" else temperature
    return f"{temperature}# TYPE {ROWS} counter\n{ROWS}{{{labels}}} {int(k > 20)}\n"


_LINTED: dict[str, list] = {}  # settings text -> lint_project's findings


@pytest.mark.parametrize("gap", ["failed", "left out"])
@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_a_remap_first_seen_after_a_failed_scrape_fires_on_otel_and_is_stated_on_classic(tmp_path, pipeline, gap):
    """A failed scrape: the scrape loop marks the series stale. awsemf (otel) keeps the previous reading, so the
    next delta holds the remap and the alarm fires, as its Prometheus rule does over the same readings; the JSON
    path (classic) forgets it, so the remap is in no delta: the alarm stays OK, and lint says so on the alarm."""
    from generator.lint.runner import lint_project

    (tmp_path / "gpudash.yaml").write_text(PIPELINES[pipeline])
    project = load_project(tmp_path / "gpudash.yaml")
    files = encode(build(project, grafana=False))
    config, job = agent_config(files[AGENT_FILE])
    target = target_labels(job, "ip-10-0-1-1")
    datapoints = Agent(config, job).run([Scrape(float(k * 30), _rows_payload(k, gap), target) for k in range(40)])
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if {"Key": "gpudash:rule", "Value": "uncorrectable-rows"} in a["Request"]["Tags"]]
    states = set(cloudwatch_eval.alarm(request, datapoints, 900).values())
    if PIPELINES[pipeline] not in _LINTED:  # the findings of the pipeline's settings, linted once for both gaps
        _LINTED[PIPELINES[pipeline]] = lint_project(project)
    findings = _LINTED[PIPELINES[pipeline]]
    notes = [f.message for f in findings if f.rule == "AL015" and "uncorrectable-rows" in f.where]
    # Where a user reads it: the health dashboard's bar of rows remapped over the range, and its header
    path = "cloudwatch/dashboards/gpudash-gpu-cluster-health.json"
    (bar,) = [p for where, p in widgets(files) if where == path and p["title"] == "Rows remapped (uncorrectable)"]
    shown = {line.removesuffix(" MIG none"): series  # classic: a line per GPU instance
             for line, series in cloudwatch_eval.widget(bar, datapoints, 0, 1200).items()}
    told = "a failed scrape loses the counter's increase across it"
    if pipeline == "otel":
        assert states == {"ALARM"} and not notes and shown == {"ip-10-0-1-1 GPU 0": {0: 1.0}}
        assert "failed scrape" not in request["AlarmDescription"] and "failed scrape" not in header(files, path)
    else:
        assert states == {"OK"} and shown == {"ip-10-0-1-1 GPU 0": {0: 0.0}}
        (note,) = notes
        assert "a failed scrape" in note and "an increase first seen after a failed scrape is missed" in note
        assert [f.severity for f in findings if f.rule == "AL015"] == ["warning"] * 2
        # (its short form since the description says what DCGM's blank does on classic, which comes first)
        assert "an increase is missed across a failed scrape, an agent restart or a change of pods (lint AL015)" \
            in request["AlarmDescription"]
        assert len(request["AlarmDescription"]) <= 1024 and request["AlarmDescription"].endswith(
            "(lint AL015); a GPU whose data stops in ALARM stays so while its last datapoints are in the "
            "evaluation range (the rule clears 15 minutes after the last reading). [1 note shortened: "
            "docs/alarm-notes.md]")
        assert said(header(files, path), "Rows remapped (uncorrectable)", told)

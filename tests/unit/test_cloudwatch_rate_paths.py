"""Every path CloudWatch takes to a counter's rate or increase reads the truth, or the panel is refused.

A small fleet is served through the model of the CloudWatch agent driven by the generated config (both agent
pipelines): a GPU that joins in the middle of a period, one that leaves in the middle of another, scrapes
missed on one node, and a counter whose GPU value is the sum of several series (DCGM_EXP_XID_ERRORS_TOTAL: the XID
errors counted since the exporter started, one series per code). The truth is computed from the GPUs' cumulative counts at the readings that arrived: a period's
increase is the growth between the reading before the period (or the GPU's first) and the period's last
reading, its rate that growth over the period's length, so a GPU that joins or leaves inside a period counts
what it did in the period, spread over the whole period (what Prometheus's rate() over a window the series
starts or ends in reads too: it divides by the window). The period still in progress is not shown: the console
shows a period a minute after it ends unless the widget turns live data on, and no generated widget does.
"""

from __future__ import annotations

import json
from functools import lru_cache
from statistics import mean

import pytest

from generator.artifacts import build
from generator.cloudwatch_query import Unsupported, plan
from generator.errors import InputError
from generator.model import Query
from generator.output import encode
from generator.project import load_project
from generator.resources import default_counters
from tests.support import cloudwatch_eval
from tests.support.agent_points import alarm_values
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import close, header
from tests.support.dcgm_fleet import target_labels

REPLAYS, XIDS = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_EXP_XID_ERRORS_TOTAL"
INTERVAL, PERIOD, START, END = 30, 300, 0, 7200
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
PATH = "cloudwatch/dashboards/gpudash-gpu-cluster-rates.json"
PIPELINES = {"otel": "", "classic": "agent:\n  pipeline: classic\n"}
A, B = "ip-10-0-1-1", "ip-10-0-1-2"
# (node, gpu index, (namespace, pod) or None, first served, last served)
ON = 10**6  # still served
GPUS = ((A, 0, ("ml", "train-0"), -INTERVAL, ON), (A, 1, ("ml", "train-0"), -INTERVAL, 4980),
        (B, 0, None, -INTERVAL, ON), (B, 1, ("research", "infer"), 1530, ON))
CODES = ("13", "31")  # the XID codes each GPU counts, one series each

PANELS = {  # title: (field, aggregation, grouping, increase)
    "Replay rate": (REPLAYS, "sum", (), False),
    "Replay rate per GPU": (REPLAYS, "avg", ("node", "gpu"), False),
    "Mean replay rate per GPU": (REPLAYS, "avg", (), False),
    "Highest replay rate": (REPLAYS, "max", (), False),
    "XID error rate": (XIDS, "sum", (), False),
    "XID error rate per GPU": (XIDS, "sum", ("node", "gpu"), False),
    "Mean XID error rate per GPU": (XIDS, "avg", (), False),
    "Mean replays per GPU of each pod": (REPLAYS, "avg", ("pod",), True),
    "Mean replay rate per GPU of each node": (REPLAYS, "avg", ("node",), False),
}
REFUSED = {"Mean replays per GPU of each pod", "Mean replay rate per GPU of each node"}
DASHBOARD = f'''
from generator.model import Dashboard, Panel, Query, Row

PANELS = {PANELS!r}


def dashboards(ctx):
    yield Dashboard(id="rates", title="Rates", rows=[Row("counters", [
        Panel(title, Query(metric, aggregation, by, as_increase=increase))
        for title, (metric, aggregation, by, increase) in PANELS.items()])])
'''


def work(metric: str, gpu: tuple[str, int], t: int, code: str = "") -> int:
    """What the GPU counted by time t (never reset), per XID code for XIDS: its pace changes every 700 s."""
    index = [g[:2] for g in GPUS].index(gpu)
    if metric == REPLAYS:
        return (index + 2) * t + (1 + index) * (t // 700) ** 2
    return (index + 1) * (t // 90) + int(code) * (t // 1100)


@lru_cache(maxsize=None)
def arrived(node: str, until: int) -> tuple[int, ...]:
    """Scrape times that reached the agent before `until`: node A misses one in seven and a run of three."""
    times = range(-INTERVAL, until, INTERVAL)
    lost = {t for i, t in enumerate(times) if i % 7 == 3} | set(times[60:63]) if node == A else set()
    return tuple(t for t in times if t not in lost)


def served(gpu: tuple) -> range:
    node, index, _, first, last = gpu
    return range(first, last + 1)


def payload(node: str, t: int) -> str:
    lines = []
    for metric in (REPLAYS, XIDS):
        lines += [f"# HELP {metric} {metric}.", f"# TYPE {metric} counter"]
        for gpu in GPUS:
            if gpu[0] != node or t not in served(gpu):
                continue
            labels = {"gpu": str(gpu[1]), "UUID": f"GPU-{node}-{gpu[1]}", "device": f"nvidia{gpu[1]}",
                      "modelName": "NVIDIA A10G", "Hostname": node, "DCGM_FI_DRIVER_VERSION": "535.104.05"}
            if gpu[2]:
                labels.update(container="main", namespace=gpu[2][0], pod=gpu[2][1])
            for code in CODES if metric == XIDS else ("",):
                text = ",".join(f'{k}="{v}"' for k, v in {**labels, **({"xid": code} if code else {})}.items())
                lines.append(f"{metric}{{{text}}} {work(metric, gpu[:2], t, code)}")
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=None)
def _read(gpu: tuple, until: int) -> tuple[int, ...]:
    """The times of the GPU's readings that reached the agent before `until`."""
    return tuple(t for t in arrived(gpu[0], until) if t in served(gpu))


def growth(metric: str, gpu: tuple, start: int, period: int, until: int) -> float | None:
    """The GPU's growth (all its codes for XIDS) from the reading before the period, or its first, to the
    period's last reading; None when it has no reading in the period after its first."""
    read = _read(gpu, until)
    inside = [t for t in read[1:] if start <= t < start + period]
    if not inside:
        return None
    before = max(t for t in read if t < inside[0])
    return float(sum(work(metric, gpu[:2], inside[-1], c) - work(metric, gpu[:2], before, c)
                     for c in (CODES if metric == XIDS else ("",))))


def truth(title: str, start: int, period: int, until: int = END, pipeline: str = "otel") -> dict[str, float]:
    """{line: value} of a panel in the period from `start`."""
    metric, aggregation, by, _ = PANELS[title]
    grown = {gpu[:2]: growth(metric, gpu, start, period, until) for gpu in GPUS}
    rates = {gpu: value / period for gpu, value in grown.items() if value is not None}
    if by:  # one line per GPU; on classic a device counter's per GPU instance (MIG none: a whole GPU)
        suffix = " MIG none" if metric == REPLAYS and pipeline == "classic" else ""
        return {f"{node} GPU {index}{suffix}": value for (node, index), value in rates.items()}
    if not rates:
        return {}
    return {title: {"sum": sum, "avg": mean, "max": max}[aggregation](rates.values())}


def project_in(folder, pipeline: str, counters: str = ""):
    (folder / "dashboards").mkdir(exist_ok=True)
    (folder / "dashboards" / "rates.py").write_text(DASHBOARD.replace("{PANELS!r}", repr(PANELS)))
    (folder / "counters.csv").write_text(default_counters().read_text() + counters)
    (folder / "gpudash.yaml").write_text(f"{PIPELINES[pipeline]}definitions:\n  dashboards: [dashboards]\n")
    return load_project(folder / "gpudash.yaml", folder / "counters.csv")


XID_COUNTER = f"{XIDS}, counter, Cumulative XID errors observed since exporter start.\n"
_BUILT: dict = {}


def _built(tmp_path_factory, pipeline: str, until: int = END):
    """(files, datapoints): the generated build, and what the agent published of the scrapes before `until`."""
    if (pipeline, until) not in _BUILT:
        project = project_in(tmp_path_factory.mktemp("rates"), pipeline, XID_COUNTER)
        files = encode(build(project))
        config, job = agent_config(files[AGENT_FILE])
        scrapes = [Scrape(float(t), payload(node, t), target_labels(job, node))
                   for node in (A, B) for t in arrived(node, until)]
        _BUILT[pipeline, until] = files, Agent(config, job).run(scrapes)
    return _BUILT[pipeline, until]


def _widgets(files) -> dict[str, dict]:
    body = json.loads(json.loads(files[PATH])["DashboardBody"])
    return {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}


def test_the_fleet_is_messy():
    """A GPU joins and one leaves inside a period, node A misses scrapes inside periods, each GPU counts XIDs
    under two codes (two series of one GPU)."""
    assert 1530 % PERIOD and 4980 % PERIOD and (4980 + INTERVAL) % PERIOD
    missed = set(range(-INTERVAL, END, INTERVAL)) - set(arrived(A, END))
    assert len(missed) > 30 and any(t % PERIOD not in (0, PERIOD - INTERVAL) for t in missed)
    assert payload(A, 0).count(f'{XIDS}{{') == 2 * len(CODES)


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_every_rate_path_reads_the_truth_in_every_period_joins_and_leaves_included(tmp_path_factory, pipeline):
    files, datapoints = _built(tmp_path_factory, pipeline)
    widgets = _widgets(files)
    assert set(widgets) == set(PANELS) - REFUSED
    checked = 0
    for title, properties in widgets.items():
        for period in (PERIOD, 60, 3600):  # the widget's own, and periods the console's selector may set
            shown = cloudwatch_eval.widget(properties, datapoints, START, END, period=period)
            expected: dict[str, dict[int, float]] = {}
            for start in range(START, END, period):
                for line, value in truth(title, start, period, pipeline=pipeline).items():
                    expected.setdefault(line, {})[start] = value
            assert set(shown) == set(expected), (title, period)
            for line, series in expected.items():
                assert set(shown[line]) == set(series), (title, period, line)
                wrong = {t: (shown[line][t], v) for t, v in series.items() if not close(shown[line][t], v)}
                assert not wrong, (title, period, line, wrong)
                checked += len(series)
    assert checked > 1000


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_a_mean_of_per_gpu_increases_per_pod_or_node_is_refused_and_named(tmp_path_factory, pipeline):
    """No one query gives a mean of per-GPU increases per group exactly: the header names the panels left out."""
    files, _ = _built(tmp_path_factory, pipeline)
    text = header(files, PATH)
    on_grafana = text.split("On Grafana only: ", 1)[1]
    for title in REFUSED:
        assert f"{title} (" in on_grafana and "n / (n - m)" in on_grafana, title


def test_an_alarm_on_the_mean_increase_over_the_fleet_is_refused_at_generate(tmp_path):
    project = project_in(tmp_path, "otel", XID_COUNTER)
    for increase in (True, False):
        with pytest.raises(Unsupported, match=r"mean delta per scrape would read n / \(n - m\)"):
            plan(Query(REPLAYS, "avg", (), as_increase=increase), project.catalog, project.settings, 300, alarm=True)
    (tmp_path / "alarms").mkdir()
    (tmp_path / "alarms" / "mean.py").write_text(
        "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
        f"    yield Alarm('mean-replays', 'Replays', Condition(Query({REPLAYS!r}, 'avg', (), as_increase=True), "
        "'>', 10))\n")
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [dashboards]\n  alarms: [alarms]\n")
    with pytest.raises(InputError, match="mean-replays|mean.py"):
        build(load_project(tmp_path / "gpudash.yaml", tmp_path / "counters.csv"))


NOW = END + 90  # 90 s into a period


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_the_period_in_progress_is_not_shown_as_if_complete(tmp_path_factory, pipeline):
    """Drawn 90 s into a period, each widget shows every period that ended a minute before, each true, and not
    the one still filling. Live data on would show that one at a third of the fleet's pace: no widget turns it
    on."""
    files, datapoints = _built(tmp_path_factory, pipeline, until=NOW)
    for title, properties in _widgets(files).items():
        assert "liveData" not in properties, title
        shown = cloudwatch_eval.widget(properties, datapoints, START, NOW, now=NOW)
        expected: dict[str, dict[int, float]] = {}
        for start in range(START, END, PERIOD):  # the periods that ended; none from END on
            for line, value in truth(title, start, PERIOD, NOW, pipeline).items():
                expected.setdefault(line, {})[start] = value
        assert {line: set(series) for line, series in shown.items()} == \
            {line: set(series) for line, series in expected.items()}, title
        assert all(close(v, expected[line][t]) for line, series in shown.items() for t, v in series.items()), title
    live = cloudwatch_eval.widget({**_widgets(files)["Replay rate"], "liveData": True}, datapoints, START, NOW,
                                  now=NOW)
    filling = live["Replay rate"][END]  # the deltas of 90 s over 300 s
    assert close(filling, truth("Replay rate", END, PERIOD, NOW)["Replay rate"])
    pace = sum(growth(REPLAYS, gpu, END, PERIOD, NOW) for gpu in GPUS if gpu[4] == ON) / (NOW - END)
    assert filling < 0.5 * pace


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_every_whole_gpu_publishes_its_device_counter_idle_or_held(tmp_path_factory, pipeline):
    """Every whole GPU, held by a pod or idle, publishes the replay counter where the widgets read it. On
    classic that is the per-GPU-instance set (GPU_I_ID): the agent's scrape job writes GPU_I_ID="none" on a
    series without one. The OTel pipeline merges a device counter over a GPU's pods and MIG instances into one
    series per physical GPU, published in the per-GPU set alone: one delta per GPU and scrape."""
    files, datapoints = _built(tmp_path_factory, pipeline)
    mine = [p for p in datapoints if p.metric == REPLAYS and "pod" not in p.dims()]
    instances = {(p.dims()["node"], p.dims()["gpu"], p.dims()["GPU_I_ID"]) for p in mine if "GPU_I_ID" in p.dims()}
    gpus = {(node, str(index)) for node, index, *_ in GPUS}
    if pipeline == "classic":
        assert instances == {(node, index, "none") for node, index in gpus}
    else:
        assert instances == set()
        per_gpu = [(p.dims()["node"], p.dims()["gpu"], p.timestamp) for p in mine if set(p.dims()) >= {"node", "gpu"}]
        assert {(node, gpu) for node, gpu, _ in per_gpu} == gpus and len(per_gpu) == len(set(per_gpu))


BLANK, BLANK_AT, MANY = 9223372036854775792, 1800, 30  # one of 30 GPUs reads DCGM's blank at 1,800 s
MEANS = '''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="means", title="Means", rows=[Row("counters", [
        Panel("Mean replay rate per GPU", Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "avg", ())),
        Panel("Mean replays per GPU", Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "avg", (), as_increase=True)),
    ])])
'''


def many_payload(t: int) -> str:
    lines = [f"# TYPE {REPLAYS} counter"]
    for index in range(MANY):
        labels = f'gpu="{index}",UUID="GPU-{index}",device="nvidia{index}",modelName="NVIDIA H100",Hostname="{A}"'
        value = BLANK if (index, t) == (0, BLANK_AT) else (index + 1) * (t + INTERVAL)
        lines.append(f"{REPLAYS}{{{labels}}} {value}")
    return "\n".join(lines) + "\n"


def test_classic_a_mean_over_many_gpus_drops_a_blank_gpus_period_whatever_the_number_of_gpus(tmp_path):
    """agent.pipeline: classic publishes the jump into the blank (about 9.2e18). Averaged over 30 GPUs it reads
    3e17 as a mean increase and, over an hour, 8.5e13 per second as a mean rate: below the floors of one GPU's
    line (1e18, 1e14). The mean is guarded through the GPUs' total, which holds the jump whole: the period that
    holds the blank is a gap at every period the console may use, every other period the true mean."""
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "means.py").write_text(MEANS)
    (tmp_path / "gpudash.yaml").write_text(f"{PIPELINES['classic']}definitions:\n  dashboards: [dashboards]\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    config, job = agent_config(files[AGENT_FILE])
    datapoints = Agent(config, job).run([Scrape(float(t), many_payload(t), target_labels(job, A))
                                         for t in range(-INTERVAL, END, INTERVAL)])
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-means.json"])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    for title, properties in widgets.items():
        increase = title == "Mean replays per GPU"
        for period in (None,) if increase else (PERIOD, 60, 3600):
            (series,) = cloudwatch_eval.widget(properties, datapoints, START, END, period=period).values()
            length = period or END - START  # an increase: one bar over the range
            expected = {start: mean((i + 1) * length for i in range(MANY)) / (1 if increase else length)
                        for start in range(START, END, length) if not start <= BLANK_AT < start + length}
            assert set(series) == set(expected), (title, period)
            assert all(close(series[t], v) for t, v in expected.items()), (title, period)


def test_a_value_per_scrape_still_filling_is_not_drawn_and_the_header_says_when_it_is(tmp_path):
    """Power draw of each pod's GPUs on agent.pipeline: classic (a sum of a gauge's observations per scrape) drawn 100 s into
    a period: every period that ended a minute before is each pod's true power, the one still filling is not drawn
    (its sum holds 3 of 10 scrapes: with live data on it reads 30 %), and the header says both."""
    from tests.support import dcgm_fleet
    from tests.support.cloudwatch_widgets import notes

    (tmp_path / "gpudash.yaml").write_text(PIPELINES["classic"])  # its per-pod sums are per scrape
    project = load_project(tmp_path / "gpudash.yaml")
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    now = 1900  # periods of 300 s from 0: [1800, 2100) is filling
    datapoints = Agent(config, job).run(dcgm_fleet.scrapes(job, project.catalog, -1, now // dcgm_fleet.STEP))
    path = "cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"
    body = json.loads(json.loads(files[path])["DashboardBody"])
    (properties,) = [w["properties"] for w in body["widgets"] if w.get("properties", {}).get("title") ==
                     "Power draw of each pod's GPUs"]
    power = project.catalog.get("DCGM_FI_DEV_POWER_USAGE")
    expected = dcgm_fleet.truth(Query(power.name, "sum", ("pod",)), power, START, 1800, PERIOD)
    shown = cloudwatch_eval.widget(properties, datapoints, START, now, now=now)
    assert {line: set(series) for line, series in shown.items()} == \
        {line: set(series) for line, series in expected.items()}
    assert all(close(v, expected[line][t]) for line, series in shown.items() for t, v in series.items())
    live = cloudwatch_eval.widget({**properties, "liveData": True}, datapoints, START, now, now=now)
    assert all(series[1800] < 0.4 * expected[line][1500] for line, series in live.items())
    (note,) = [n for n in notes(header(files, path))["Power draw of each pod's GPUs"] if "still filling" in n]
    assert "the period still filling is not drawn, unless live data is on, which draws it low" in note


XID_ALARM = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
             f"    yield Alarm('xid-burst', 'XID errors', Condition(Query({XIDS!r}, 'sum', ('node', 'gpu'), "
             "as_increase=True), '>', 1), severity='critical')\n")


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_an_alarm_on_each_gpus_xid_errors_adds_its_codes_in_every_period(tmp_path, pipeline):
    """The alarm's value per GPU in each period is the growth of all the GPU's codes (it read one code's before)."""
    project_in(tmp_path, pipeline, XID_COUNTER)
    (tmp_path / "alarms").mkdir()
    (tmp_path / "alarms" / "xid.py").write_text(XID_ALARM)
    (tmp_path / "gpudash.yaml").write_text(f"{PIPELINES[pipeline]}definitions:\n  dashboards: [dashboards]\n"
                                           "  alarms: [alarms]\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml", tmp_path / "counters.csv")))
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(t), payload(node, t), target_labels(job, node))
                                     for node in (A, B) for t in arrived(node, END)])
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if "xid-burst" in a["Request"]["AlarmName"]]
    for end in range(START + PERIOD, END + 1, PERIOD):
        read = {(dict(key)["node"], int(dict(key)["gpu"])): value
                for key, value in alarm_values(request, points, end, PERIOD).items()}
        grown = {gpu[:2]: growth(XIDS, gpu, end - PERIOD, PERIOD, END) for gpu in GPUS}
        assert read == {gpu: value for gpu, value in grown.items() if value is not None}, end

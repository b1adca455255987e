"""DCGM's blank sentinels on the CloudWatch side.

Exporters that pass a blank through (the exporter README's own sample reads MEMORY_TEMP
9223372036854775794, "not supported"; profiling pauses read 2**47) put it into the payload; the
scrape job cannot drop a sample by value. The agent's OTel pipeline (the default, agent.pipeline:
otel) drops it before it is published: payloads with blanks go through the model of that pipeline
run on the GENERATED collector configuration (its filter conditions parsed and evaluated), and
the generated widgets and alarms are evaluated with Metrics Insights and metric-math semantics
against the truth over the readings DCGM really took. The agent's JSON path (agent.pipeline:
classic) publishes the blank: there a widget of one line drops its period with IF; a GROUP BY widget's
lines (an array, which no documented metric math can drop one point of) and the alarms cannot, which
the header, lint (CW015, AL010) and README say.
"""

from __future__ import annotations

import json
import re

import pytest

from generator.render.cloudwatch import panel_title
from generator.artifacts import build
from generator.model import Query
from generator.output import encode
from generator.project import load_project
from generator.stopped_gpus import UNREAD
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import close, widgets
from tests.support.dcgm_fleet import FLEET, STEP, scrapes, target_labels, truth, value

START, END = 0, 2100
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
NOT_SUPPORTED = "9223372036854775794"  # int64 blank + 2
FP_BLANK = "140737488355328"  # 2**47
NEVER_READ = ("ip-10-0-1-2", 1)  # never reads its temperature nor its last XID (pod ml/infer-1, idle)
PAUSED = ("ip-10-0-1-1", 0)  # reads blanks during scrapes 10-12 (300-360 s): power, two counters
PAUSE = range(10, 13)


def _blank(payload: str, metric: str, node: str, gpu: int, value: str) -> str:
    """The payload with `metric` of one GPU reading `value` (the exporter's label order kept)."""
    uuid = f'UUID="GPU-{node}-{gpu}"'
    return "\n".join(re.sub(r"\S+$", value, line) if line.startswith(metric + "{") and uuid in line else line
                     for line in payload.split("\n"))


def _fleet(tmp_path_factory, settings: str):
    """The fleet with blanks: NEVER_READ's temperature and last XID read "not supported" at every scrape, its
    utilization during PAUSE; PAUSED's power reads the floating-point blank and its power-throttling and energy
    counters the integer blank during PAUSE (a profiling pause), inside the 300-600 s period."""
    folder = tmp_path_factory.mktemp("blanks")
    csv = folder / "counters.csv"  # the defaults, with power throttling collected
    csv.write_text(load_project().settings.counters_path.read_text()
                   + "DCGM_FI_DEV_POWER_VIOLATION, counter, Throttling duration due to power constraints (in ns).\n")
    (folder / "gpudash.yaml").write_text(f"counters: counters.csv\ncloudwatch:\n  top_gpus: 3\n{settings}")
    project = load_project(folder / "gpudash.yaml")
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    runs = []
    for scrape in scrapes(job, project.catalog, -1, END // STEP - 1):
        payload, k = scrape.payload, round(scrape.timestamp / STEP)
        if scrape.target_labels["node"] == NEVER_READ[0]:
            for metric in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS"):
                payload = _blank(payload, metric, *NEVER_READ, NOT_SUPPORTED)
            if k in PAUSE:
                payload = _blank(payload, "DCGM_FI_DEV_GPU_UTIL", *NEVER_READ, NOT_SUPPORTED)
        elif k in PAUSE:
            payload = _blank(payload, "DCGM_FI_DEV_POWER_USAGE", *PAUSED, FP_BLANK)
            for counter in ("DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"):
                payload = _blank(payload, counter, *PAUSED, NOT_SUPPORTED)
        runs.append(Scrape(scrape.timestamp, payload, scrape.target_labels))
    agent = Agent(config, job)
    return project, files, agent.run(runs), agent


# agent.metric_selection: all: the energy counter is published per GPU too, where these tests read each GPU's deltas
# through a blank (the default, used, publishes it per pod only, as the by-pod panel reads it); every pair a widget
# or alarm here queries is published either way, with the same datapoints.
@pytest.fixture(scope="module")
def otel_fleet(tmp_path_factory):
    return _fleet(tmp_path_factory, "agent:\n  metric_selection: all\n")


@pytest.fixture(scope="module")
def classic_fleet(tmp_path_factory):
    return _fleet(tmp_path_factory, "agent:\n  pipeline: classic\n  metric_selection: all\n")


def _widget(files, title, dashboard):
    (properties,) = [p for path, p in widgets(files) if panel_title(p["title"]) == title and dashboard in path]
    return properties


def _raw(properties, datapoints):
    """What the widget's query alone returns."""
    expression = properties["metrics"][0][0]["expression"]
    start, period = cloudwatch_eval.widget_range(properties, START, END)
    return cloudwatch_eval.metrics_insights(expression, datapoints, start, END, period)


def _alarms(files):
    return {a["Request"]["AlarmName"]: a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}


def _reads(gpu, metric):
    """True when `gpu` reads `metric` at all (the never-read GPU does not read its temperature)."""
    return not ((gpu.node, gpu.index) == NEVER_READ and metric in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS"))


# --- the OTel pipeline (the default): blanks are dropped before they are published ----------------

def test_the_filter_drops_exactly_the_blank_readings(otel_fleet):
    _, _, datapoints, agent = otel_fleet
    assert all(p.value < 1e14 or p.metric == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" for p in datapoints)
    dropped = {(name, labels["node"], labels["gpu"], value) for name, labels, value in agent.dropped
               if name.startswith("DCGM_")}
    # and the scrape's own series, as the JSON path's scraper drops them: no log event is made of them (but each
    # scrape's kept sample count, published per node as a flag for the data-missing rule's second alarm)
    assert {name for name, _, _ in agent.dropped
            if not name.startswith(("DCGM_", "gpudash.pod.", "gpudash.unused.", "gpudash.level."))} \
        == {"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_series_added"}
    # and the copy of a blank temperature the temperature-high alarm's flag would be made of (a blank is above 80)
    assert {(name, labels["node"], labels["gpu"], value) for name, labels, value in agent.dropped
            if name.startswith("gpudash.level.")} == {
        ("gpudash.level.0.DCGM_FI_DEV_GPU_TEMP", *map(str, NEVER_READ), float(NOT_SUPPORTED))}
    # and the copy of a blank utilization the idle alarm's unused share would be made of (100 - a blank: far below 0)
    assert {(name, labels["gpu"], value) for name, labels, value in agent.dropped
            if name.startswith("gpudash.unused.")} <= {
        ("gpudash.unused.DCGM_FI_DEV_GPU_UTIL", str(NEVER_READ[1]), float(NOT_SUPPORTED))}
    # and the power total per scrape of the pod PAUSED's GPU serves, at each scrape of the pause: a pod's sum
    # holding a blank is unknown, not the sum of its other GPUs (test_cloudwatch_pod_totals.py)
    paused = next(g for g in FLEET if (g.node, g.index) == PAUSED)
    assert sorted((name, labels["namespace"], labels["pod"]) for name, labels, _ in agent.dropped
                  if name.startswith("gpudash.pod.")) == [
        ("gpudash.pod.sum.DCGM_FI_DEV_POWER_USAGE", paused.namespace, paused.pod)] * len(PAUSE)
    # (and each node's count of GPUs unread below its highest index, the stopped-GPU alarm's)
    assert all(name.startswith(("DCGM_", "kube_")) or name in ("scrape_samples_post_metric_relabeling", UNREAD)
               for name in agent.exported)
    assert dropped == {
        ("DCGM_FI_DEV_GPU_TEMP", *map(str, NEVER_READ), float(NOT_SUPPORTED)),
        ("DCGM_FI_DEV_XID_ERRORS", *map(str, NEVER_READ), float(NOT_SUPPORTED)),
        ("DCGM_FI_DEV_GPU_UTIL", *map(str, NEVER_READ), float(NOT_SUPPORTED)),
        ("DCGM_FI_DEV_POWER_USAGE", *map(str, PAUSED), float(FP_BLANK)),
        ("DCGM_FI_DEV_POWER_VIOLATION", *map(str, PAUSED), float(NOT_SUPPORTED)),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", *map(str, PAUSED), float(NOT_SUPPORTED))}
    assert not [p for p in datapoints if p.metric == "DCGM_FI_DEV_GPU_TEMP"
                and (p.dims().get("node"), p.dims().get("gpu")) == tuple(map(str, NEVER_READ))]


def test_a_blank_gpu_fires_no_temperature_or_xid_alarm(otel_fleet):
    """The never-read GPU fires neither; the GPU with the real XID 79 still fires."""
    _, files, datapoints, _ = otel_fleet
    alarms = _alarms(files)
    never = (("node", NEVER_READ[0]), ("gpu", str(NEVER_READ[1])))
    for name in ("gpudash-gpu-cluster-gpu-temp-high-warning", "gpudash-gpu-cluster-gpu-temp-critical-critical",
                 "gpudash-gpu-cluster-xid-error-critical"):
        states = cloudwatch_eval.alarm(alarms[name], datapoints, END)
        assert never not in states and set(states.values()) <= {"OK", "ALARM"}, name
    xid = cloudwatch_eval.alarm(alarms["gpudash-gpu-cluster-xid-error-critical"], datapoints, END)
    assert {key for key, state in xid.items() if state == "ALARM"} == {(("node", "ip-10-0-1-2"), ("gpu", "0"))}


def _pod_states(states: dict, namespace: str, pod: str) -> set[str]:
    """The states of the contributors of one pod (the idle alarm judges each GPU a pod holds)."""
    return {state for key, state in states.items() if {("namespace", namespace), ("pod", pod)} <= set(key)}


def test_a_blank_reading_does_not_hide_an_idle_pod(otel_fleet):
    """ml/infer-1 holds a GPU at 2 % that read blank for three scrapes: still idle all along."""
    _, files, datapoints, _ = otel_fleet
    states = cloudwatch_eval.alarm(_alarms(files)["gpudash-gpu-cluster-gpu-idle-warning"], datapoints, END)
    assert _pod_states(states, "ml", "infer-1") == {"ALARM"}


def test_a_blank_gpu_takes_no_top_n_slot(otel_fleet):
    """GPU temperature shows the 3 hottest GPUs (top_gpus: 3): the three that truly are, with their values."""
    project, files, datapoints, _ = otel_fleet
    properties = _widget(files, "GPU temperature", "overview")
    field = project.catalog.get("DCGM_FI_DEV_GPU_TEMP")
    readers = [g for g in FLEET if _reads(g, field.name)]
    expected = truth(Query(field.name, "avg", ("node", "gpu")), field, START, END, properties["period"], gpus=readers)
    hottest = sorted(expected, key=lambda label: -max(expected[label].values()))[:3]
    shown = {label: series for label, series in cloudwatch_eval.widget(properties, datapoints, START, END).items()
             if series}
    assert set(shown) == set(hottest)
    for label in hottest:
        assert all(close(shown[label][b], v) for b, v in expected[label].items()), label


@pytest.mark.parametrize("title, function", [("Hottest GPU", "max"), ("Average GPU temperature", "avg")])
def test_fleet_lines_are_the_truth_over_the_gpus_that_read_the_field(otel_fleet, title, function):
    project, files, datapoints, _ = otel_fleet
    properties = _widget(files, title, "overview")
    field = project.catalog.get("DCGM_FI_DEV_GPU_TEMP")
    readers = [g for g in FLEET if _reads(g, field.name)]
    start, period = cloudwatch_eval.widget_range(properties, START, END)
    expected = truth(Query(field.name, function, ()), field, start, END, period, gpus=readers)[""]
    (series,) = cloudwatch_eval.widget(properties, datapoints, START, END).values()
    assert set(series) == set(expected) and expected
    assert all(close(series[bucket], value) for bucket, value in expected.items()), series


def test_a_counter_back_from_the_blank_gives_its_true_increase(otel_fleet):
    """Energy and power-throttling counters of PAUSED read the blank for three scrapes: the deltas published
    add up to the counter's true increase, and the period of the pause shows the truth, not a gap."""
    project, files, datapoints, _ = otel_fleet
    paused = tuple(map(str, PAUSED))
    first, last = 0, END // STEP - 1  # the first scrape's reading gives no delta (nothing before it)
    for metric in ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_POWER_VIOLATION"):
        deltas = [p.value for p in datapoints if p.metric == metric and "GPU_I_ID" not in p.dims()
                  and (p.dims().get("node"), p.dims().get("gpu")) == paused]  # the per-GPU set's
        gpu = next(g for g in FLEET if (g.node, g.index) == PAUSED)
        kind = project.catalog.get(metric).kind
        assert close(sum(deltas), value(metric, gpu, last, kind) - value(metric, gpu, first - 1, kind)), metric
        assert max(deltas) < 1e13, metric  # no running total sent as a delta
    properties = _widget(files, "Throttled by power", "health")
    field = project.catalog.get("DCGM_FI_DEV_POWER_VIOLATION")
    gpu = next(g for g in FLEET if (g.node, g.index) == PAUSED)
    (expected,) = truth(Query(field.name, "avg", ("node", "gpu")), field, START, END, properties["period"],
                        gpus=[gpu]).values()
    own = [p for p in datapoints if (p.dims().get("node"), p.dims().get("gpu")) == paused]  # its line alone
    shown = cloudwatch_eval.widget(properties, own, START, END)["ip-10-0-1-1 GPU 0"]  # one line per GPU
    assert set(shown) == set(expected) and 300 in shown  # the period of the pause is no gap
    assert all(close(shown[b], v) for b, v in expected.items()), shown


def test_the_sum_and_per_pod_power_in_the_pause_are_the_other_readings(otel_fleet):
    """Power reads the blank in three of the period's ten scrapes on one GPU: Total power draw in that period is
    the mean of what was read, as a Prometheus sum over time of the readings would be, never 1.4e14; the pod
    holding that GPU and another reads the mean of its totals at the seven scrapes where both GPUs read a value
    (at the pause its total is unknown, not its other GPU's reading)."""
    _, files, datapoints, _ = otel_fleet
    for title, dashboard in (("Total power draw", "overview"), ("Power draw of each pod's GPUs", "by-pod")):
        shown = cloudwatch_eval.widget(_widget(files, title, dashboard), datapoints, START, END)
        assert all(series for series in shown.values()), title
        assert max(v for series in shown.values() for v in series.values()) < 2000, title
    paused = next(g for g in FLEET if (g.node, g.index) == PAUSED)
    pods_gpus = [g for g in FLEET if (g.namespace, g.pod) == (paused.namespace, paused.pod)]
    assert len(pods_gpus) == 2
    known = [sum(value("DCGM_FI_DEV_POWER_USAGE", g, k, "gauge") for g in pods_gpus)
             for k in range(300 // STEP, 600 // STEP) if k not in PAUSE]
    shown = cloudwatch_eval.widget(_widget(files, "Power draw of each pod's GPUs", "by-pod"), datapoints, START, END)
    assert close(shown[f"Pod {paused.namespace}/{paused.pod}"][300], sum(known) / len(known))


def test_the_header_says_the_agent_drops_blanks(otel_fleet):
    _, files, _, _ = otel_fleet
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"])["DashboardBody"])
    assert "dropped by the CloudWatch agent" in body["widgets"][0]["properties"]["markdown"]


def test_no_widget_carries_a_blank_guard_where_the_agent_drops_blanks(otel_fleet):
    """Blanks cannot arrive: the widgets' metric math is only what the title needs (means over the GPUs that
    have a value, unit scaling, a fleet mean's choice past 500 GPUs), with no IF over a value and no FLOOR mask."""
    _, files, _, _ = otel_fleet
    maths = [line[-1]["expression"] for _, properties in widgets(files) for line in properties["metrics"]
             if not line[-1].get("expression", "SELECT").startswith("SELECT")]  # not a query nor PERIOD's metric
    past_500 = re.compile(r"IF\(METRIC_COUNT\(q1\) < \d+, ")  # a choice between two forms by the series returned
    larger = re.compile(r"IF\((.+?) > (.+?), \1, \2\)")  # past it, the larger of a count's or a total's two forms
    assert maths and not [m for m in maths if "IF(" in larger.sub("", past_500.sub("", m)) or "FLOOR(" in m]
    # a mean over the GPUs that have a value stays: the fleet's, per node, the nodes' totals over their counts
    assert any("(SUM(ABS(q1)) + SUM(q1)) / (SUM(ABS(q1)) - SUM(q1))" in m for m in maths)


def _noted(project):
    """(dashboard file, widget title) of each widget lint notes a blank can show on (CW015)."""
    from generator.lint.runner import lint_project

    found = [f for f in lint_project(project) if f.rule == "CW015"]
    assert all(f.severity == "note" for f in found)
    return {(f.where.split(" widget ")[0], panel_title(f.where.split(" (", 1)[1][:-1])): f.message for f in found}


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_every_widget_uses_documented_math_and_shows_a_blank_only_where_noted(otel_fleet, classic_fleet, pipeline):
    """Each widget of each dashboard, evaluated with the user guide's argument types enforced (the evaluator
    raises on any undocumented form). With the OTel pipeline no line shows a blank value. On the JSON path a
    blank shows only on a GROUP BY widget that lint (CW015) and the dashboard's header name; no widget of one
    line shows one. The JSON path's one known exception is a counter back from the blank, whose running total
    the agent sends as a delta (far below the floors)."""
    project, files, datapoints, _ = otel_fleet if pipeline == "otel" else classic_fleet
    noted = _noted(project)
    assert bool(noted) == (pipeline == "classic")
    shown, blanks = 0, set()
    for path, properties in widgets(files):
        for label, series in cloudwatch_eval.widget(properties, datapoints, START, END).items():
            if any(abs(v) >= 1e13 for v in series.values()):
                blanks.add((path, panel_title(properties["title"])))
                body = json.loads(json.loads(files[path])["DashboardBody"])
                header = body["widgets"][0]["properties"]["markdown"]
                assert re.search(re.escape(panel_title(properties["title"])) + r"[^:]*: a GPU's blank reading", header), path
            shown += len(series)
    assert shown > 100
    assert blanks <= set(noted)
    assert bool(blanks) == (pipeline == "classic")  # the fleet's blanks do show there


# --- the JSON path (agent.pipeline: classic): the blank is published ------------------------------

def test_classic_the_blank_reaches_cloudwatch(classic_fleet):
    _, files, datapoints, _ = classic_fleet
    temperatures = {p.value for p in datapoints if p.metric == "DCGM_FI_DEV_GPU_TEMP"
                    and (p.dims().get("node"), p.dims().get("gpu")) == tuple(map(str, NEVER_READ))}
    assert temperatures == {float(NOT_SUPPORTED)}
    hottest = _raw(_widget(files, "Hottest GPU", "overview"), datapoints)
    assert hottest[()] and set(hottest[()].values()) == {float(NOT_SUPPORTED)}  # each minute of its own range
    # ORDER BY sorts raw values: the never-read GPU takes a top-3 slot of GPU temperature
    ranked = _raw(_widget(files, "GPU temperature", "overview"), datapoints)
    assert (("node", NEVER_READ[0]), ("gpu", str(NEVER_READ[1]))) in ranked


def test_classic_per_gpu_lines_show_the_blank_on_its_gpu_alone_and_lint_names_the_widget(classic_fleet):
    """GPU temperature per GPU is a GROUP BY query's array of lines: no documented metric math drops one point
    of it, so the never-read GPU's line reads the blank; every other GPU's line is its true temperature."""
    project, files, datapoints, _ = classic_fleet
    properties = _widget(files, "GPU temperature", "overview")
    assert not [line for line in properties["metrics"] if not line[-1]["expression"].startswith("SELECT")]
    shown = cloudwatch_eval.widget(properties, datapoints, START, END)
    assert set(shown.pop("ip-10-0-1-2 GPU 1").values()) == {float(NOT_SUPPORTED)}
    temperature = project.catalog.get("DCGM_FI_DEV_GPU_TEMP")
    function = properties["metrics"][0][0]["expression"].split("(", 1)[0].split()[-1].lower()  # SELECT AVG(...)
    expected = truth(Query(temperature.name, function, ("node", "gpu")), temperature, START, END, properties["period"])
    assert shown
    for label, series in shown.items():
        assert series and all(close(v, expected[label][bucket]) for bucket, v in series.items()), label
    notes = _noted(project)
    assert "DCGM_FI_DEV_GPU_TEMP" in notes["cloudwatch/dashboards/gpudash-gpu-cluster-overview.json", "GPU temperature"]
    assert ("cloudwatch/dashboards/gpudash-gpu-cluster-overview.json", "Hottest GPU") not in notes  # one line


def test_classic_a_line_over_several_gpus_shows_a_gap_not_the_blank(classic_fleet):
    """Hottest GPU and Average GPU temperature (a mean of per-GPU lines): every period holds the never-read
    GPU, so each line is empty, never the blank. The mean of GPU utilization has the blank GPU in its PAUSE
    periods only: those are gaps, every other period is the true mean over every GPU."""
    project, files, datapoints, _ = classic_fleet
    shown = cloudwatch_eval.widget(_widget(files, "Hottest GPU", "overview"), datapoints, START, END)
    assert all(series == {} for series in shown.values())
    shown = cloudwatch_eval.widget(_widget(files, "Average GPU temperature", "overview"), datapoints, START, END)
    assert all(series == {} for series in shown.values())
    properties = _widget(files, "Average GPU utilization", "overview")
    utilization = project.catalog.get("DCGM_FI_DEV_GPU_UTIL")
    gaps = 0
    for now in (390, 420, 450, 480, 510, 900, END):  # a value now: the minutes its own range holds at each moment
        (series,) = cloudwatch_eval.widget(properties, datapoints, now - 6 * 3600, now, now=now).values()
        start, period = cloudwatch_eval.widget_range(properties, now - 6 * 3600, now)
        expected = truth(Query(utilization.name, "avg", ()), utilization, start, now, period)[""]
        drawn = {bucket for bucket in expected if bucket + period <= now - cloudwatch_eval.LIVE_DATA_SECONDS}
        paused = {bucket for bucket in drawn if any(bucket <= k * STEP < bucket + period for k in PAUSE)}
        assert drawn and set(series) == drawn - paused, now
        assert all(close(value, expected[bucket]) for bucket, value in series.items()), now
        gaps += len(paused)
    assert gaps


def test_classic_a_pods_period_with_a_blank_is_a_gap_and_the_other_periods_are_true(classic_fleet):
    project, files, datapoints, _ = classic_fleet
    properties = _widget(files, "Power draw of each pod's GPUs", "by-pod")
    shown = cloudwatch_eval.widget(properties, datapoints, START, END)
    power = project.catalog.get("DCGM_FI_DEV_POWER_USAGE")
    expected = truth(Query(power.name, "sum", ("pod",)), power, START, END, properties["period"])
    assert set(shown["Pod ml/train-0"]) == set(expected["Pod ml/train-0"])
    assert shown["Pod ml/train-0"].pop(300) > 1e13  # a GROUP BY widget: the blank shows, as lint notes
    for label, series in expected.items():
        for bucket, value in shown[label].items():
            assert close(value, series[bucket]), (label, bucket)
    assert "DCGM_FI_DEV_POWER_USAGE" in _noted(project)["cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json",
                                                       "Power draw of each pod's GPUs"]


def test_classic_a_sum_over_gpus_is_a_gap_in_the_period_of_the_blank(classic_fleet):
    """Total power draw sums per-GPU lines into one value (the latest minute drawn), guarded with IF: viewed while
    the blank is in that minute it is a gap (dropping the blank GPU alone would take arithmetic between two
    arrays, which the user guide does not document); viewed at any other moment it is the true sum."""
    project, files, datapoints, _ = classic_fleet
    properties = _widget(files, "Total power draw", "overview")
    power = project.catalog.get("DCGM_FI_DEV_POWER_USAGE")
    period = properties["period"]
    gaps = 0
    for now in range(period + cloudwatch_eval.LIVE_DATA_SECONDS, END + 1, period):
        end = now - cloudwatch_eval.LIVE_DATA_SECONDS  # the latest period drawn ends a minute before now
        (series,) = cloudwatch_eval.widget(properties, datapoints, START, now, now=now).values()
        if any(end - period <= k * STEP < end for k in PAUSE):
            assert end - period not in series, now
            gaps += 1
            continue
        everyone = truth(Query(power.name, "sum", ()), power, end - period, end, period)[""]
        assert max(series) == end - period and close(series[end - period], everyone[end - period]), now
    assert gaps == len({k * STEP // period for k in PAUSE}) >= 1


def test_classic_a_rate_per_gpu_shows_the_jump_into_a_blank_and_every_other_period_true(classic_fleet):
    """Throttling counters count ns and are shown as a share of time (x 1e-9), one line per GPU (an array):
    the delta into the blank (about 2**63 ns) shows as a share near 1e8 in its period, which lint notes;
    every other period is true."""
    project, files, datapoints, _ = classic_fleet
    properties = _widget(files, "Throttled by power", "health")
    shown = cloudwatch_eval.widget(properties, datapoints, START, END)
    field = project.catalog.get("DCGM_FI_DEV_POWER_VIOLATION")
    expected = truth(Query(field.name, "avg", ("node", "gpu")), field, START, END, properties["period"])
    shown = {label.removesuffix(" MIG none"): series for label, series in shown.items()}  # whole GPUs
    assert set(shown["ip-10-0-1-1 GPU 0"]) == set(expected["ip-10-0-1-1 GPU 0"])
    assert shown["ip-10-0-1-1 GPU 0"].pop(300) > 1e5
    assert ("cloudwatch/dashboards/gpudash-gpu-cluster-health.json", "Throttled by power") in _noted(project)
    for label, series in shown.items():
        for bucket, value in series.items():
            assert close(value, expected[label][bucket]), (label, bucket)


def test_classic_a_counter_back_from_the_blank_sends_its_running_total(classic_fleet):
    """The JSON path's delta calculator takes the fall from the blank as a reset: the whole running total is
    sent as the delta (energy in mJ since boot), which no floor catches."""
    _, _, datapoints, _ = classic_fleet
    paused = tuple(map(str, PAUSED))
    deltas = [p.value for p in datapoints if p.metric == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
              and (p.dims().get("node"), p.dims().get("gpu")) == paused and p.value < 1e18]
    gpu = next(g for g in FLEET if (g.node, g.index) == PAUSED)
    assert max(deltas) == value("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu, PAUSE[-1] + 1, "counter")  # the total


def test_classic_alarms_cannot_drop_a_blank_and_say_so(classic_fleet):
    """A GROUP BY alarm evaluates its query itself: the never-read temperature and XID breach the threshold,
    and the idle pod hides. The dashboards' header, `gpudash lint` (AL010 notes) and the README name the limit."""
    _, files, datapoints, _ = classic_fleet
    alarms = _alarms(files)
    never = (("node", NEVER_READ[0]), ("gpu", str(NEVER_READ[1])))
    assert cloudwatch_eval.alarm(alarms["gpudash-gpu-cluster-gpu-temp-high-warning"], datapoints, END)[never] == "ALARM"
    assert cloudwatch_eval.alarm(alarms["gpudash-gpu-cluster-xid-error-critical"], datapoints, END)[never] == "ALARM"
    idle = cloudwatch_eval.alarm(alarms["gpudash-gpu-cluster-gpu-idle-warning"], datapoints, END)
    assert "ALARM" not in _pod_states(idle, "ml", "infer-1") and _pod_states(idle, "ml", "infer-1")
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"])["DashboardBody"])
    assert "Alarms cannot drop it" in body["widgets"][0]["properties"]["markdown"]


@pytest.mark.xfail(strict=True, reason="agent.pipeline: classic publishes DCGM's blank and a GROUP BY alarm cannot "
                                       "drop it: the GPU that never read its temperature is critical (9.2e18 above "
                                       "87), where its rule, which drops blanks, does not fire (its description "
                                       "says so)")
def test_classic_a_gpu_that_never_read_its_temperature_is_not_critical(classic_fleet):
    """The truth from the story: NEVER_READ served "not supported" for its temperature at every scrape, so it read
    no temperature at all and is above no level (the Prometheus rule reads `< 1e14` only)."""
    _, files, datapoints, _ = classic_fleet
    never = (("node", NEVER_READ[0]), ("gpu", str(NEVER_READ[1])))
    readings = [value("DCGM_FI_DEV_GPU_TEMP", gpu, k, "gauge") for gpu in FLEET if (gpu.node, gpu.index) == NEVER_READ
                for k in range((END - 300) // STEP, END // STEP) if _reads(gpu, "DCGM_FI_DEV_GPU_TEMP")]
    assert not readings
    states = cloudwatch_eval.alarm(_alarms(files)["gpudash-gpu-cluster-gpu-temp-critical-critical"], datapoints, END)
    assert states.get(never, "OK") != "ALARM"


@pytest.mark.parametrize("pipeline", ["classic", "otel"])
def test_each_alarm_a_published_blank_fools_says_so_in_its_description(classic_fleet, otel_fleet, pipeline):
    """Where the alarm is read, not only in lint (AL010) and the dashboards' header: on agent.pipeline: classic every
    alarm on a DCGM field's readings says what the blank does to it (above a level it fires for the GPU, below one
    it never does), as the Container Insights add-on's alarms do (test_container_insights_blanks.py); a count of
    readings counts a blank as any reading (AL010 says it) and says nothing here. The OTel pipeline drops the blank
    before it is published: none says it. Before, only the add-on's descriptions said it: classic's
    gpu-temp-critical fired for a GPU that never read its temperature and its description was silent."""
    from generator.container_insights import ALARM_BLANKS

    _, files, _, _ = classic_fleet if pipeline == "classic" else otel_fleet
    alarms = _alarms(files)
    effects = {"GreaterThanThreshold": "fires", "GreaterThanOrEqualToThreshold": "fires",
               "LessThanThreshold": "never fires", "LessThanOrEqualToThreshold": "never fires"}
    said, silent = {}, []
    for name, request in alarms.items():
        queries = [m["Expression"] for m in request.get("Metrics", []) if m.get("Expression", "").startswith("SELECT")]
        text = request["AlarmDescription"]
        if queries and all(re.match(r'SELECT (MIN|MAX|SUM|AVG)\("DCGM_', q) for q in queries):
            said[name] = (effects[request["ComparisonOperator"]], text)
        else:
            silent.append((name, text))
    assert {"gpudash-gpu-cluster-gpu-temp-critical-critical", "gpudash-gpu-cluster-xid-error-critical",
            "gpudash-gpu-cluster-gpu-idle-warning", "gpudash-gpu-cluster-pcie-replays-warning"} <= set(said)
    short = {"fires": "DCGM's blank is a reading: it fires for its GPU",
             "never fires": "DCGM's blank is a reading: it never fires for its GPU"}
    for name, (effect, text) in said.items():
        whole = f"{ALARM_BLANKS}: this alarm {effect} for it"
        assert (whole in text or short[effect] in text) == (pipeline == "classic"), (name, text)
    assert not [name for name, text in silent if ALARM_BLANKS in text or "DCGM's blank is a reading" in text]


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_the_exporter_readme_sample_shows_no_memory_temperature(reference, project_dir, pipeline):
    """The recorded README payload: MEMORY_TEMP reads "not supported" on its GPU. The OTel pipeline does not
    publish it; the JSON path does, and the per-GPU widget (an array of lines) shows it, as lint notes."""
    project = load_project(project_dir(f"agent:\n  pipeline: {pipeline}\n"))
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    lines = (reference / "exporter" / "dcgm-exporter-readme-k8s.prom").read_text().splitlines()
    payload = "\n".join(line for line in lines if line.strip() != "...") + "\n"
    points = Agent(config, job).run([Scrape(float(t), payload, target_labels(job, "ip-10-0-1-1"))
                                     for t in range(START, END, STEP)])
    properties = _widget(files, "Memory temperature", "health")
    assert bool(_raw(properties, points)) == (pipeline == "classic")  # the sentinel arrived
    shown = cloudwatch_eval.widget(properties, points, START, END)
    if pipeline == "otel":
        assert all(series == {} for series in shown.values())
    else:
        assert {v for series in shown.values() for v in series.values()} == {float(NOT_SUPPORTED)}
        assert ("cloudwatch/dashboards/gpudash-gpu-cluster-health.json", "Memory temperature") in _noted(project)
    clocks = cloudwatch_eval.widget(_widget(files, "SM clock", "health"), points, START, END)
    assert set(clocks["ip-10-0-1-1 GPU 0"].values()) == {139.0}  # the GPU's readable fields still show


def test_classic_the_agent_drops_only_nan_and_infinities():
    """The JSON path's one check of a value (plugins/inputs/prometheus: isValueValid): no sentinel is dropped."""
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


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_verify_names_the_gpu_writing_0_for_memory_temperature(project_dir, pipeline):
    """An L4 writes 0 for memory temperature (DCGM #311), an H100 beside it 45: verify names the L4 as unread, and on
    agent.pipeline: classic says CloudWatch takes that 0 for a reading (the OTel pipeline drops it)."""
    from generator.checks.exporter import analyse

    payload = "# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge\n" + "".join(
        f'DCGM_FI_DEV_MEMORY_TEMP{{gpu="{i}",UUID="GPU-{i}",modelName="{model}",Hostname="n1"}} {v}\n'
        for i, (model, v) in enumerate((("NVIDIA L4", "0"), ("NVIDIA H100 80GB HBM3", "45"))))
    (check,) = [c for c in analyse(load_project(project_dir(f"agent:\n  pipeline: {pipeline}\n")), payload, "l4")
                if c.name == "blank values"]
    assert check.status == "warn"
    assert check.detail == ("DCGM could not read (blank value published): n1 gpu 0: DCGM_FI_DEV_MEMORY_TEMP (memory "
                            "temperature at 0: DCGM's 'not supported' on GPUs without the sensor)")
    assert ("cannot tell memory temperature's 0 from a reading" in check.fix) == (pipeline == "classic")


def test_lint_notes_what_memory_temperatures_unsupported_0_does_to_an_alarm_on_the_json_path(tmp_path):
    """agent.pipeline: classic publishes the 0 DCGM writes for memory temperature on GPUs without the sensor: a '<'
    alarm fires for such a GPU, a '>' one reads it at 0 (AL010 says it beside the blank's effect)."""
    from generator.lint.runner import lint_project
    from tests.integration.test_memory_temp_unsupported_zero import ALARMS
    from tests.support.projects import defined_project

    project = defined_project(tmp_path, "agent:\n  pipeline: classic\n", alarms=ALARMS,
                              dashboards="def dashboards(ctx):\n    return []\n")
    notes = {f.where.rsplit(" ", 1)[-1]: f.message for f in lint_project(project) if f.rule == "AL010"}
    cold = [m for w, m in notes.items() if "-memory-cold" in w]
    hot = [m for w, m in notes.items() if "-memory-hot" in w]
    assert cold and all("writes 0 for it (DCGM's 'not supported' on GPUs without the sensor) fires for it" in m
                        for m in cold)
    assert hot and all("writes 0 for it (DCGM's 'not supported' on GPUs without the sensor) is read at 0" in m
                       for m in hot)


def test_lint_notes_each_alarm_a_blank_would_fool_on_the_json_path_only(project_dir):
    from generator.lint.runner import lint_project

    assert not [f for f in lint_project(load_project()) if f.rule == "AL010"]  # the OTel pipeline drops blanks
    project = load_project(project_dir("agent:\n  pipeline: classic\n"))
    notes = {f.where.rsplit(" ", 1)[-1]: f.message for f in lint_project(project) if f.rule == "AL010"}
    assert all(f.severity == "note" for f in lint_project(project) if f.rule == "AL010")
    assert all("agent.pipeline: classic" in m and "agent.pipeline: otel" in m for m in notes.values())
    assert {"gpudash-gpu-cluster-gpu-temp-high-warning", "gpudash-gpu-cluster-gpu-idle-warning"} <= set(notes)
    # a count of readings counts a GPU writing only the blank, where the rule counts GPUs with a reading
    counted = [m for w, m in notes.items() if "data-missing" in w]
    assert counted and all(m.startswith("counts a GPU whose exporter reports only DCGM's blank") for m in counted)
    assert any("fires for it" in m for w, m in notes.items() if "gpu-temp-high" in w)
    assert any("never fires for it" in m for w, m in notes.items() if "gpu-idle" in w)

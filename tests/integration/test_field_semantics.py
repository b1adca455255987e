"""Fields the exporter serves as counters whose readings are states or counts over a window are charted as they read,
on Grafana (a real Prometheus) and on CloudWatch (the agent model, the widget evaluator).

dcgm-exporter's etc/default-counters.csv types DCGM_EXP_GPU_HEALTH_STATUS, DCGM_EXP_P2P_STATUS,
DCGM_EXP_XID_ERRORS_COUNT and DCGM_EXP_CLOCK_EVENTS_COUNT `counter` (commented lines a user uncomments), and the
exporter's CSVs type DCGM_FI_DEV_RETIRED_PENDING `counter`: the exporter writes that type in `# TYPE`. A rate or a
delta of a state is 0 while the state holds (a GPU failing all hour read 0). The CSV here is the bundled one with
those lines added, as the exporter writes them.

One node, an hour of 30 s scrapes (15 s past each half minute): GPU 0's memory health reads 20 (fail) from minute 10 on
while its PCIe health reads 0; GPU 1's PCIe health reads 10 (warn) from minute 30 to 40, 0 otherwise; GPU 1's P2P
status reads 2 all hour; GPU 0 had XID 79 at minute 20, which the exporter counts in its 5-minute window (1 from minute
20 to 25, then 0); GPU 1 has 2 pages pending retirement from minute 5 to minute 50 (they retire at a reset). An
alarm on a failing health check fires for GPU 0 on both sides (promtool on the generated rule; the evaluator on the
generated alarm over what the agent model publishes). Last, fields a CSV may add whose unit DCGM's field list or
the help text gives (reason bitmasks, P-state, framebuffer ratio, fan percent, KB and byte counters).
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build, grafana_dashboards
from generator.errors import InputError
from generator.limits import checked_build
from generator.output import encode
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from generator.lint.runner import lint_project
from generator.model import Dashboard, Panel, Query, Row
from generator.panels import fleet_stat, per_gpu, per_pod
from generator.promql_text import packed
from generator.render import grafana as grafana_render
from generator.resources import default_counters
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.projects import counters_with, panels_of, project_fixture
from tests.support.prometheus_server import SCENE_RANGE, backfilled as backfilled_prometheus, counted_inline
from tests.support.promtool_rules import expected_alert, parsed_rules, promtool_test

STEP, SCRAPES, OFFSET = 30, 120, 15
NODE = "gpu-node-1"
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")
HEALTH, P2P = "DCGM_EXP_GPU_HEALTH_STATUS", "DCGM_EXP_P2P_STATUS"
XIDS, EVENTS, PENDING = "DCGM_EXP_XID_ERRORS_COUNT", "DCGM_EXP_CLOCK_EVENTS_COUNT", "DCGM_FI_DEV_RETIRED_PENDING"
ADDED = (f"{EVENTS}, counter, reported clock events\n{XIDS}, counter, reported XIDs during last window\n"
         f"{HEALTH}, counter, DCGM reported health status\n{P2P}, counter, P2P NvLink status\n"
         f"{PENDING}, counter, Total number of pages pending retirement.\n")


def readings(minute: float) -> list[tuple[str, int, str, int]]:
    """(field, GPU, its own labels, value) of every series at `minute`."""
    return [
        (HEALTH, 0, 'health_watch="memory",health_error_code="DCGM_FR_VOLATILE_DBE_DETECTED"', 20 if minute >= 10 else 0),
        (HEALTH, 0, 'health_watch="pcie",health_error_code="DCGM_FR_OK"', 0),
        (HEALTH, 1, 'health_watch="memory",health_error_code="DCGM_FR_OK"', 0),
        (HEALTH, 1, 'health_watch="pcie",health_error_code="DCGM_FR_PCI_REPLAY_RATE"', 10 if 30 <= minute < 40 else 0),
        (P2P, 0, "", 0), (P2P, 1, "", 2),
        (XIDS, 0, 'xid="79",window_size_in_ms="300000"', 1 if 20 <= minute < 25 else 0),
        (EVENTS, 0, 'clock_event="sw_power_cap",window_size_in_ms="300000"', 0),
        (PENDING, 0, "", 0), (PENDING, 1, "", 2 if 5 <= minute < 50 else 0),
    ]


def _time(k: int) -> int:
    return OFFSET + k * STEP


def _labels(gpu: int, own: str) -> str:
    return ",".join(filter(None, (f'gpu="{gpu}",UUID="GPU-{gpu}",device="nvidia{gpu}",modelName="NVIDIA H100",'
                                  f'Hostname="{NODE}"', own)))


def _openmetrics(start: int) -> str:
    lines = []
    for name in (HEALTH, P2P, XIDS, EVENTS, PENDING):
        lines.append(f"# TYPE {name} gauge")  # stored under its own name (an OpenMetrics counter's end in _total)
        lines += [f'{name}{{{_labels(gpu, own)},node="{NODE}",job="dcgm-exporter"}} {value} {start + _time(k)}'
                  for k in range(SCRAPES) for field, gpu, own, value in readings(_time(k) / 60) if field == name]
    return "\n".join(lines) + "\n# EOF\n"


def _payload(k: int) -> str:
    """One scrape as the exporter serves it: each field with the CSV's type."""
    lines = []
    for name in (HEALTH, P2P, XIDS, EVENTS, PENDING):
        lines.append(f"# TYPE {name} counter")
        lines += [f"{name}{{{_labels(gpu, own)}}} {value}" for field, gpu, own, value in readings(_time(k) / 60)
                  if field == name]
    return "\n".join(lines) + "\n"


project = project_fixture(added_counters=ADDED)


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    with backfilled_prometheus(tmp_path_factory.mktemp("semantics-prometheus"), _openmetrics, SCRAPES * STEP,
                               STEP) as started:
        yield started


def _panel(project, title: str) -> dict:
    return next(p for p in panels_of(grafana_dashboards(project), "gpudash-all-metrics") if p.get("title") == title)


_CALCS = {"mean": lambda v: sum(v) / len(v), "max": max, "lastNotNull": lambda v: v[-1]}


def _shown(prometheus, panel: dict, start: int, first: int, last: int, project=None) -> dict[str, dict[str, float]]:
    """{legend line: {calc: value}} of the panel over minutes [first, last], a point a minute (`project`: the one
    that made it, whose counters' recordings a rate reads)."""
    (target,) = panel["targets"]
    expr = counted_inline(target["expr"], project) if project is not None else target["expr"]
    expr = interpolate(expr, {**SCENE_RANGE, "__rate_interval": "2m", "__interval": "1m", **variables({}, VARIABLES)})
    result = prometheus.api("query_range", query=expr, start=start + first * 60, end=start + last * 60,
                            step=60)["result"]
    return {render_legend(target["legendFormat"], s["metric"]): {
        calc: _CALCS[calc]([float(v) for _, v in s["values"]]) for calc in panel["options"]["legend"]["calcs"]}
        for s in result}


# panel -> {legend line: {calc: value}} over the hour: a state's worst and last; a count its readings
STATES = {
    "EXP_GPU_HEALTH_STATUS": {f"{NODE} GPU 0": {"max": 20.0, "lastNotNull": 20.0},
                              f"{NODE} GPU 1": {"max": 10.0, "lastNotNull": 0.0}},
    "EXP_P2P_STATUS": {f"{NODE} GPU 0": {"max": 0.0, "lastNotNull": 0.0},
                       f"{NODE} GPU 1": {"max": 2.0, "lastNotNull": 2.0}},
}


@pytest.mark.parametrize("title", list(STATES))
def test_grafana_shows_a_state_as_it_reads(backfilled, project, title):
    prometheus, start = backfilled
    panel = _panel(project, title)
    assert panel["fieldConfig"]["defaults"]["unit"] == "none"
    assert panel["options"]["legend"]["calcs"] == ["max", "lastNotNull"]
    assert _shown(prometheus, panel, start, 0, 60) == STATES[title]


def test_grafana_shows_a_windowed_count_and_a_level_as_they_read(backfilled, project):
    """The XIDs of the exporter's window: 1 while XID 79 is in it (minutes 20 to 25), 0 after; pages pending: 2
    until they retire at minute 50. Neither is a rate."""
    prometheus, start = backfilled
    xids = _panel(project, "EXP_XID_ERRORS_COUNT")
    assert xids["fieldConfig"]["defaults"]["unit"] == "short"
    shown = _shown(prometheus, xids, start, 21, 24)
    assert shown == {f"{NODE} GPU 0": {"mean": 1.0, "max": 1.0, "lastNotNull": 1.0}}
    assert _shown(prometheus, xids, start, 30, 60)[f"{NODE} GPU 0"]["max"] == 0.0
    pending = _panel(project, "DEV_RETIRED_PENDING")
    assert pending["fieldConfig"]["defaults"]["unit"] == "short"
    assert _shown(prometheus, pending, start, 10, 45)[f"{NODE} GPU 1"] == {"mean": 2.0, "max": 2.0, "lastNotNull": 2.0}
    assert _shown(prometheus, pending, start, 51, 60)[f"{NODE} GPU 1"]["max"] == 0.0


DASHBOARD = f'''
from generator.model import Dashboard, Row
from generator.panels import per_gpu


def dashboards(ctx):
    yield Dashboard(id="states", title="GPU states", description="States and windowed counts per GPU.",
                    rows=[Row("States", [per_gpu("{HEALTH}", "GPU health", aggregation="max"),
                                         per_gpu("{XIDS}", "XIDs in the window", aggregation="sum"),
                                         per_gpu("{PENDING}", "Pages pending retirement", aggregation="max")])],
                    backends=("cloudwatch",))
'''


def _cloudwatch(folder, settings: str = "", dashboard: str = DASHBOARD, added: str = ADDED, payload=None):
    """(project, {title: widget properties}, datapoints the agent model publishes of the story's scrapes)."""
    (folder / "dashboards").mkdir()
    (folder / "dashboards" / "states.py").write_text(dashboard)
    (folder / "gpudash.yaml").write_text(settings + "definitions:\n  dashboards: [dashboards]\n")
    project = load_project(folder / "gpudash.yaml", counters_with(folder, added))
    files = encode(build(project))
    (body,) = [json.loads(json.loads(data)["DashboardBody"]) for path, data in files.items()
               if path.startswith("cloudwatch/dashboards/") and path.endswith("-states.json")]
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    config, job = agent_config(files[AGENT_FILE])
    target = target_labels(job, NODE)
    points = Agent(config, job).run([Scrape(float(_time(k)), (payload or _payload)(k), target) for k in range(SCRAPES)])
    return project, widgets, points


def _truth(name: str, first: int, last: int, period: int) -> dict[str, dict[float, float]]:
    """Each GPU's largest reading of `name` in each period of [first, last) minutes (the worst of its series)."""
    truth: dict[str, dict[float, float]] = {}
    for k in range(SCRAPES):
        t = _time(k)
        if first * 60 <= t < last * 60:
            for field, gpu, _, value in readings(t / 60):
                if field == name:
                    line = truth.setdefault(f"{NODE} GPU {gpu}", {})
                    at = float(t - t % period)
                    line[at] = max(line.get(at, value), value)
    return truth


@pytest.mark.parametrize("title, name", [("GPU health", HEALTH), ("XIDs in the window", XIDS),
                                         ("Pages pending retirement", PENDING)])
def test_cloudwatch_shows_them_as_they_read(tmp_path, title, name):
    """Through the agent's OTel pipeline (the default): the readings reach CloudWatch, not their differences."""
    _, widgets, points = _cloudwatch(tmp_path)
    properties = widgets[title]
    period = properties["period"]
    shown = cloudwatch_eval.widget(properties, points, 0, 60 * 60)
    shown = {label: {t: v for t, v in series.items() if t >= period} for label, series in shown.items()}
    assert shown == _truth(name, period // 60, 60, period), (title, shown)


def test_the_classic_path_does_not_publish_differences_of_a_state(tmp_path):
    """The agent's JSON path types a field by the exporter's `# TYPE` and sends a counter's differences (GPU 0's
    failing health would read 0): gpudash does not ship these fields there, and lint errs on each widget reading
    them instead of letting it chart 0."""
    project, widgets, points = _cloudwatch(tmp_path, "agent:\n  pipeline: classic\n")
    assert not [p for p in points if p.metric in (HEALTH, XIDS, PENDING)]
    flagged = {f.where.split(" (", 1)[1].rstrip(")") for f in lint_project(project) if f.rule == "CW018"}
    assert flagged == set(widgets) and {f.severity for f in lint_project(project) if f.rule == "CW018"} == {"error"}
    with pytest.raises(InputError) as refused:  # and generate does not write them (it exited 0 before)
        checked_build(project)
    assert "agent.pipeline: classic: " in str(refused.value) and "(GPU health)" in str(refused.value)


# Fields a user's CSV may add whose unit the help text or DCGM's field list gives (help texts as NVIDIA writes them)
REASONS, EVENT_REASONS = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
FB_PERCENT, FAN, PSTATE = "DCGM_FI_DEV_FB_USED_PERCENT", "DCGM_FI_DEV_FAN_SPEED", "DCGM_FI_DEV_PSTATE"
PCIE_KB, NVLINK_L0 = "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0"
EXTRA = (f"{REASONS}, gauge, Current clock throttle reasons.\n{EVENT_REASONS}, gauge, Current clock event reasons.\n"
         f"{FB_PERCENT}, gauge, Percentage used of Frame Buffer: 'Used/(Total - Reserved)'. Range 0.0-1.0\n"
         f"{FAN}, gauge, Fan speed (in 0-100%).\n{PSTATE}, gauge, Performance state (P-State) 0-15. 0=highest\n"
         f"{PCIE_KB}, counter, Total number of bytes transmitted through PCIe TX (in KB) via NVML.\n"
         f"{NVLINK_L0}, counter, The number of bytes of active NVLink rx or tx data including both header and "
         f"payload.\n")


def extra_reading(name: str, minute: float) -> float:
    """GPU 0's reading at `minute`: throttled by the SW power cap (0x4) for the first half hour, by HW thermal slowdown
    (0x40) after; P2 then P0; framebuffer 85 % used; fan at 40 %; 2,000 KB a second over PCIe; 5,000 MB/s over NVLink
    link 0, the throughput DCGM serves (NVIDIA's line types it counter)."""
    seconds = minute * 60
    return {REASONS: 0x4 if minute < 30 else 0x40, EVENT_REASONS: 0x4 if minute < 30 else 0x40,
            PSTATE: 2 if minute < 30 else 0, FB_PERCENT: 0.85, FAN: 40, PCIE_KB: 2000 * seconds,
            NVLINK_L0: 5000.0}[name]


# GPU 1, an A100 80GB split into MIG instances as the exporter writes them (GPU_I_ID, GPU_I_PROFILE; framebuffer per
# instance): a full 3g.40gb beside an empty 1g.10gb. Of the memory the instances hold, 40,192 of 50,048 MiB is used
MIG_FB = {("1", "3g.40gb"): {FB_PERCENT: 1.0, "DCGM_FI_DEV_FB_USED": 40192, "DCGM_FI_DEV_FB_FREE": 0},
          ("2", "1g.10gb"): {FB_PERCENT: 0.0, "DCGM_FI_DEV_FB_USED": 0, "DCGM_FI_DEV_FB_FREE": 9856}}
MIG_FB_SHARE = 40192 / (40192 + 9856)  # 0.803; the mean of the instances' shares reads 0.5
USED, FREE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"
BLANK = 9223372036854775792  # DCGM's int64 blank (0x7ffffffffffffff0), as the exporter writes it
# GPUs 2-4, A100 80GB split alike, one instance reading DCGM's blank for its free memory, its used memory, or both.
# GPU 2's 3g.40gb uses 20,000 MiB of its 40,000 (its free memory read blank), its 1g.10gb none of 10,000: 0.4 of the
# memory the instances hold is used. No reading says so: the instances that read both fields are not the GPU (GPU 2
# read 20,000 / (20,000 + 10,000) = 0.667 with the blank left out of the total only; 0 with the instance left out of
# both), so such a GPU has no share. Each GPU's instances are one pod's.
MIG_BLANKS = {2: ("blank-free", {("1", "3g.40gb"): {FB_PERCENT: 0.5, USED: 20000, FREE: BLANK},
                                 ("2", "1g.10gb"): {FB_PERCENT: 0.0, USED: 0, FREE: 10000}}),
              3: ("blank-used", {("1", "3g.40gb"): {FB_PERCENT: 0.5, USED: BLANK, FREE: 20000},
                                 ("2", "1g.10gb"): {FB_PERCENT: 0.5, USED: 5000, FREE: 5000}}),
              4: ("blank-both", {("1", "3g.40gb"): {FB_PERCENT: 0.5, USED: BLANK, FREE: BLANK},
                                 ("2", "1g.10gb"): {FB_PERCENT: 0.25, USED: 2500, FREE: 7500}})}
# GPUs 5 and 6: one pod holds a full 3g.40gb on GPU 5 and an empty 1g.10gb on GPU 6 (GPU 1's instances, on two GPUs)
MIG_SPREAD = {5: ("spread-pod", {("1", "3g.40gb"): MIG_FB[("1", "3g.40gb")]}),
              6: ("spread-pod", {("2", "1g.10gb"): MIG_FB[("2", "1g.10gb")]})}
MIG_GPUS = {1: ("mig-pod", MIG_FB), **MIG_BLANKS, **MIG_SPREAD}
WHOLE_FB = {USED: 8500, FREE: 1500}  # GPU 0, a whole GPU: 0.85 used, as its own FB_USED_PERCENT reads
# GPUs 7 and 8, whole, one pod's: a full 80 GB GPU and an empty 24 GB one (the pod uses 80,000 of 104,000 MiB);
# GPUs 9 and 10, whole, another's: 1,000 of 10,000 MiB used, and 5,000 used with its free memory (and share) blank
FLOAT_BLANK = 140737488355328.0  # DCGM's float blank (2**47), as the exporter writes FB_USED_PERCENT's
WHOLE_PAIR = {7: ("whole-pod", {FB_PERCENT: 1.0, USED: 80000, FREE: 0}),
              8: ("whole-pod", {FB_PERCENT: 0.0, USED: 0, FREE: 24000}),
              9: ("mixed-pod", {FB_PERCENT: 0.1, USED: 1000, FREE: 9000}),
              10: ("mixed-pod", {FB_PERCENT: FLOAT_BLANK, USED: 5000, FREE: BLANK})}


def _extra_openmetrics(start: int) -> str:
    lines = []
    for name in (REASONS, EVENT_REASONS, FB_PERCENT, FAN, PSTATE, PCIE_KB, NVLINK_L0):
        lines.append(f"# TYPE {name} gauge")
        lines += [f'{name}{{{_labels(0, "")},node="{NODE}",job="dcgm-exporter"}} {extra_reading(name, _time(k) / 60)!r}'
                  f' {start + _time(k)}' for k in range(SCRAPES)]
        if name == FB_PERCENT:
            lines += _mig_framebuffer(start, (FB_PERCENT,)) + _whole_pair(start, FB_PERCENT)
    for name in (USED, FREE):
        lines += [f"# TYPE {name} gauge"]
        lines += [f'{name}{{{_labels(0, "")},node="{NODE}",job="dcgm-exporter"}} {WHOLE_FB[name]} {start + _time(k)}'
                  for k in range(SCRAPES)]
        lines += _mig_framebuffer(start, (name,)) + _whole_pair(start, name)
    return "\n".join(lines) + "\n# EOF\n"


def _whole_pair(start: int, name: str) -> list[str]:
    return [f'{name}{{{_labels(gpu, "")},node="{NODE}",job="dcgm-exporter",namespace="team-m",pod="{pod}"}} '
            f'{values[name]} {start + _time(k)}' for k in range(SCRAPES) for gpu, (pod, values) in WHOLE_PAIR.items()]


def _mig_framebuffer(start: int, names: tuple[str, ...]) -> list[str]:
    return [f'{name}{{{_labels(gpu, f"GPU_I_PROFILE={chr(34)}{profile}{chr(34)},GPU_I_ID={chr(34)}{i}{chr(34)}")},'
            f'node="{NODE}",job="dcgm-exporter",namespace="team-m",pod="{pod}"}} {values[name]} {start + _time(k)}'
            for name in names for k in range(SCRAPES) for gpu, (pod, instances) in MIG_GPUS.items()
            for (i, profile), values in instances.items()]


@pytest.fixture(scope="module")
def extra(tmp_path_factory):
    folder = tmp_path_factory.mktemp("extra")
    project = load_project(None, counters_with(folder, EXTRA))
    with backfilled_prometheus(folder, _extra_openmetrics, SCRAPES * STEP, STEP) as (prometheus, start):
        yield project, prometheus, start


GPU0 = f"{NODE} GPU 0"
# Each GPU's share (GPUs 2-4: none), and their mean, each GPU weighing once
GPU_SHARES = {GPU0: 0.85, f"{NODE} GPU 1": MIG_FB_SHARE, f"{NODE} GPU 5": 1.0, f"{NODE} GPU 6": 0.0,
              f"{NODE} GPU 7": 1.0, f"{NODE} GPU 8": 0.0, f"{NODE} GPU 9": 0.1}
FLEET_SHARE = sum(GPU_SHARES.values()) / len(GPU_SHARES)
# Each pod's: the share of the memory it holds (the spread pod's and the whole pod's GPUs' means read 0.5); the mixed
# pod's GPU 10 left out (its free memory blank: 6,000 / 10,000 = 0.6 with its used memory counted)
POD_SHARES = {"Pod team-m/mig-pod": MIG_FB_SHARE, "Pod team-m/spread-pod": MIG_FB_SHARE,
              "Pod team-m/whole-pod": 80000 / 104000, "Pod team-m/mixed-pod": 0.1}
# panel -> (unit, legend over the hour): a bitmask and a P-state are states (their mean, 34 = 0x22 or P1, never
# happened); the framebuffer ratio 0-1 in percent units; the KB counter as a rate of KB; NVLink's throughput as it
# reads, in MB/s
EXTRA_SHOWN = {
    "DEV_CLOCK_THROTTLE_REASONS": ("none", {"max": 64.0, "lastNotNull": 64.0}),
    "DEV_CLOCKS_EVENT_REASONS": ("none", {"max": 64.0, "lastNotNull": 64.0}),
    "DEV_PSTATE": ("none", {"max": 2.0, "lastNotNull": 0.0}),
    "DEV_FB_USED_PERCENT": ("percentunit", {"mean": 0.85, "max": 0.85, "lastNotNull": 0.85}),
    "DEV_FAN_SPEED": ("percent", {"mean": 40.0, "max": 40.0, "lastNotNull": 40.0}),
    "DEV_PCIE_TX_THROUGHPUT": ("KBs", {"mean": 2000.0, "max": 2000.0, "lastNotNull": 2000.0}),
    "DEV_NVLINK_BANDWIDTH_L0": ("MBs", {"mean": 5000.0, "max": 5000.0, "lastNotNull": 5000.0}),
}


@pytest.mark.parametrize("title", list(EXTRA_SHOWN))
def test_grafana_units_and_legends_of_fields_a_csv_may_add(extra, title):
    project, prometheus, start = extra
    panel = _panel(project, title)
    unit, legend = EXTRA_SHOWN[title]
    assert panel["fieldConfig"]["defaults"]["unit"] == unit
    shown = _shown(prometheus, panel, start, 5, 60, project)
    if title == "DEV_FB_USED_PERCENT":  # the MIG GPUs: the share of the memory their instances hold, and it says so
        for line, share in GPU_SHARES.items():
            if line != GPU0:
                mig = shown.pop(line)
                assert all(abs(value - share) <= 1e-9 for value in mig.values()), (line, mig)
        assert "On a GPU split into MIG instances: the sum of its instances' DCGM_FI_DEV_FB_USED over the sum of " \
               "their DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE" in panel["description"]
    assert list(shown) == [GPU0] and shown[GPU0].keys() == legend.keys()
    assert all(abs(shown[GPU0][calc] - value) <= 1e-6 * abs(value) for calc, value in legend.items()), shown


def test_grafana_reads_a_mig_pods_and_the_fleets_memory_share(extra):
    """A pod holding both instances of the MIG GPU: its share is 0.803 of the memory they hold (their mean read 0.5),
    and so is that of a pod holding the same instances on two GPUs (the mean of the GPUs' shares read 0.5); the
    fleet's mean share over GPUs is that of GPU 0 (0.85), the MIG GPU (0.803) and GPUs 5 and 6 (1 and 0)."""
    project, prometheus, start = extra
    model = grafana_render.render(Dashboard(id="share", title="Share", description="Framebuffer shares.", rows=[
        Row("Share", [per_pod(FB_PERCENT, "Share by pod"), fleet_stat(FB_PERCENT, "Fleet share")])]),
        project.catalog, project.settings)
    panels = {p["title"]: p for row in model["panels"] for p in [row, *row.get("panels", [])]}
    by_pod = _shown(prometheus, panels["Share by pod"], start, 5, 60)
    assert by_pod.keys() == POD_SHARES.keys() and all(abs(v - POD_SHARES[pod]) <= 1e-9 for pod, values in
                                                      by_pod.items() for v in values.values()), by_pod
    assert "Per pod: the sum of DCGM_FI_DEV_FB_USED of the GPUs and MIG instances it holds over the sum of their " \
           "DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE" in panels["Share by pod"]["description"]
    (target,) = panels["Fleet share"]["targets"]
    expr = interpolate(target["expr"], {**SCENE_RANGE,
                                        "__rate_interval": "2m", "__interval": "1m", **variables({}, VARIABLES)})
    (fleet,) = prometheus.api("query", query=expr, time=start + 30 * 60)["result"]
    assert abs(float(fleet["value"][1]) - FLEET_SHARE) <= 1e-9, fleet


# panel -> {legend: value} at minute 30: GPUs 0 (whole, 0.85) and 1 (MIG, 0.803); GPUs 2-4 (a blank instance) none,
# alone or in a mean (per node, over the fleet), under their pods neither
FRAMEBUFFER_SHARES = {
    ("gpudash-overview", "Framebuffer in use"): {USED: FLEET_SHARE},  # a stat: its field names it
    ("gpudash-by-pod", "Framebuffer used share by pod"): POD_SHARES,
    ("share", "Used over total per GPU"): GPU_SHARES,
    ("share", "Used over total per node"): {NODE: FLEET_SHARE},
    ("share", "Share per node"): {NODE: FLEET_SHARE},
    ("share", "Share per GPU"): GPU_SHARES,
}


def test_grafana_gives_a_mig_gpu_whose_instance_reads_a_blank_no_framebuffer_share(extra):
    """A MIG GPU one of whose instances reads DCGM's blank for its used or free memory (or both) has no framebuffer
    share, in the default panels (used over used + free) and in DCGM_FI_DEV_FB_USED_PERCENT's, per GPU, per pod, per
    node and over the fleet: GPU 2 read 0.667 (truth 0.4), GPU 3 0.167, GPU 4 0.25, and the means with them."""
    project, prometheus, start = extra
    share = grafana_render.render(Dashboard(id="share", title="Share", description="Framebuffer shares.", rows=[
        Row("Share", [per_gpu(USED, "Used over total per GPU", over=(USED, FREE)),
                      Panel("Used over total per node", (Query(USED, "avg", ("node",), over=(USED, FREE)),)),
                      Panel("Share per node", (Query(FB_PERCENT, "avg", ("node",)),)),
                      per_gpu(FB_PERCENT, "Share per GPU")])]), project.catalog, project.settings)
    panels, shown = _at_minute_30(prometheus, start, project, FRAMEBUFFER_SHARES, {"share": share})
    assert all("reads DCGM's blank for any of the fields" in panel["description"] for panel in panels.values()), panels
    assert {key: lines.keys() for key, lines in shown.items()} == \
        {key: lines.keys() for key, lines in FRAMEBUFFER_SHARES.items()}, shown
    assert all(abs(value - FRAMEBUFFER_SHARES[key][line]) <= 1e-9 for key, lines in shown.items()
               for line, value in lines.items()), shown


def _line(gpu: int) -> str:
    return f"{NODE} GPU {gpu}"


# panel -> {legend: MiB} at minute 30: a MIG GPU's memory is its instances' sum, and none where one of them reads the
# blank for the field (GPU 2's free memory read 10,000 MiB, its 1g.10gb's alone; GPU 3's used 5,000), per GPU and per
# pod (the blank-used and blank-both pods read 5,000 and 2,500)
MEMORY = {
    ("gpudash-overview", "Framebuffer memory used"): {
        _line(0): 8500, _line(1): 40192, _line(2): 20000, _line(5): 40192, _line(6): 0, _line(7): 80000, _line(8): 0,
        _line(9): 1000, _line(10): 5000},
    ("gpudash-all-metrics", "DEV_FB_FREE"): {
        _line(0): 1500, _line(1): 9856, _line(3): 25000, _line(5): 0, _line(6): 9856, _line(7): 0, _line(8): 24000,
        _line(9): 9000},
    ("gpudash-by-pod", "Framebuffer used by pod"): {
        "Pod team-m/mig-pod": 40192, "Pod team-m/blank-free": 20000, "Pod team-m/spread-pod": 40192,
        "Pod team-m/whole-pod": 80000, "Pod team-m/mixed-pod": 6000},
}


def test_grafana_gives_a_mig_gpu_whose_instance_reads_a_blank_no_memory_total(extra):
    """A MIG GPU's used or free memory is the sum of its instances': one of them reading DCGM's blank for the field
    leaves the GPU (and a pod's total holding it) without a value, not the sum of the others."""
    project, prometheus, start = extra
    assert _at_minute_30(prometheus, start, project, MEMORY)[1] == MEMORY


def _at_minute_30(prometheus, start: int, project, wanted, more=None) -> tuple[dict, dict]:
    """({(dashboard uid, title): panel}, {(uid, title): {legend: value}}) of the `wanted` panels at minute 30, of the
    project's dashboards and `more` ({uid: model})."""
    dashboards = grafana_dashboards(project)
    models = {uid: panels_of(dashboards, uid) for uid, _ in wanted} | {
        uid: [p for row in model["panels"] for p in [row, *row.get("panels", [])]]
        for uid, model in (more or {}).items()}
    panels = {(uid, title): next(p for p in models[uid] if p["title"] == title) for uid, title in wanted}
    shown = {}
    for key, panel in panels.items():
        (target,) = panel["targets"]
        expr = interpolate(target["expr"], {**SCENE_RANGE,
                                            "__rate_interval": "2m", "__interval": "1m", **variables({}, VARIABLES)})
        shown[key] = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1])
                      for s in prometheus.api("query", query=expr, time=start + 30 * 60)["result"]}
    return panels, shown


def test_grafana_says_mig_gpus_are_left_out_of_a_share_it_cannot_weigh(tmp_path):
    """Without DCGM_FI_DEV_FB_FREE in the CSV a MIG GPU's share cannot be weighed: the panel reads whole GPUs only and
    its description says MIG GPUs are left out."""
    csv = tmp_path / "counters.csv"
    csv.write_text("".join(line for line in default_counters().read_text().splitlines(keepends=True)
                           if not line.startswith("DCGM_FI_DEV_FB_FREE")) + EXTRA)
    panel = _panel(load_project(None, csv), "DEV_FB_USED_PERCENT")
    expr = panel["targets"][0]["expr"]  # packed (promql_text): its plain strings single-quoted
    assert packed('GPU_I_ID=""') in expr and packed('GPU_I_ID!=""') not in expr
    assert "GPUs split into MIG instances are left out" in panel["description"]


EXTRA_DASHBOARD = f'''
from generator.model import Dashboard, Row
from generator.panels import per_gpu


def dashboards(ctx):
    yield Dashboard(id="states", title="GPU units", description="Framebuffer ratio and PCIe traffic per GPU.",
                    rows=[Row("Units", [per_gpu("{FB_PERCENT}", "Framebuffer used"),
                                        per_gpu("{PCIE_KB}", "PCIe transmitted")])],
                    backends=("cloudwatch",))
'''


def _extra_payload(k: int) -> str:
    mig = [f'{FB_PERCENT}{{{_labels(1, f"GPU_I_ID={chr(34)}{i}{chr(34)},GPU_I_PROFILE={chr(34)}{profile}{chr(34)}")}}} '
           f'{values[FB_PERCENT]}\n' for (i, profile), values in MIG_FB.items()]
    return "".join(f"# TYPE {name} {kind}\n{name}{{{_labels(0, '')}}} {extra_reading(name, _time(k) / 60)!r}\n"
                   + ("".join(mig) if name == FB_PERCENT else "")
                   for name, kind in ((FB_PERCENT, "gauge"), (PCIE_KB, "counter")))


# widget -> (axis label, {line: value}): the framebuffer's share per GPU instance, the MIG GPU's instances apart (no
# one query weighs them by the memory each holds: the widget says so), never their mean (0.5)
EXTRA_WIDGETS = {"Framebuffer used": ("ratio 0-1", {f"{GPU0} MIG none": 0.85, f"{NODE} GPU 1 MIG 1": 1.0,
                                                    f"{NODE} GPU 1 MIG 2": 0.0}),
                 "PCIe transmitted": ("KB/s", {GPU0: 2000.0})}


@pytest.mark.parametrize("title", list(EXTRA_WIDGETS))
def test_cloudwatch_units_of_fields_a_csv_may_add(tmp_path, title):
    """The exporter serves the framebuffer's share 0-1 and the agent publishes it as it is (the Container Insights
    add-on's gpu_memory_utilization is the one scaled to percent); NVML's PCIe counter counts KB."""
    project, widgets, points = _cloudwatch(tmp_path, dashboard=EXTRA_DASHBOARD, added=EXTRA, payload=_extra_payload)
    properties = widgets[title]
    label, lines = EXTRA_WIDGETS[title]
    assert properties["yAxis"]["left"]["label"] == label
    shown = cloudwatch_eval.widget(properties, points, 0, 60 * 60)
    assert shown.keys() == lines.keys(), shown
    assert all(abs(v - lines[line]) <= 1e-9 * lines[line] for line, values in shown.items()
               for t, v in values.items() if t >= properties["period"]), shown


ALARM = f'''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpu-health-fail", "GPU health check failed",
                Condition(Query("{HEALTH}", "max", ("node", "gpu")), ">=", 20), severity="critical",
                missing_data="notBreaching", description="DCGM's health check of a GPU reads FAIL.",
                runbook="Read the health_watch and health_error_code labels; drain the node.")
'''


@pytest.fixture(scope="module")
def alarmed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("health-alarm")
    (folder / "alarms").mkdir()
    (folder / "alarms" / "health.py").write_text(ALARM)
    (folder / "gpudash.yaml").write_text("definitions:\n  alarms: [alarms]\n")
    files = encode(build(load_project(folder / "gpudash.yaml", counters_with(folder, ADDED))))
    (folder / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    return files, folder


def test_the_prometheus_rule_fires_for_the_failing_gpu(alarmed):
    """GPU 0's memory health reads 20 from minute 10: the rule names it (and not GPU 1, warned at 10) at minute 30."""
    _, folder = alarmed
    groups = parsed_rules((folder / "rules.yaml").read_text())["groups"]
    (alert,) = [r["alert"] for g in groups for r in g["rules"] if "alert" in r and r["labels"].get("gpudash_rule") == "gpu-health-fail"]
    series = []
    for gpu, own in ((0, 'health_watch="memory"'), (0, 'health_watch="pcie"'), (1, 'health_watch="memory"'),
                     (1, 'health_watch="pcie"')):
        values = [next(v for f, g, o, v in readings(_time(k) / 60) if f == HEALTH and g == gpu and o.startswith(own))
                  for k in range(SCRAPES)]
        series.append({"series": f'{HEALTH}{{{_labels(gpu, own)},node="{NODE}",job="dcgm-exporter"}}',
                       "values": " ".join(str(v) for v in values)})
    promtool_test(folder, "health.yaml", [{"interval": f"{STEP}s", "input_series": series, "alert_rule_test": [
        {"eval_time": "30m", "alertname": alert, "exp_alerts": [expected_alert(folder, alert, node=NODE, gpu="0")]},
        {"eval_time": "8m", "alertname": alert, "exp_alerts": []}]}], evaluation_interval=f"{STEP}s")


def test_the_cloudwatch_alarm_fires_for_the_failing_gpu(alarmed):
    """The same readings through the agent's OTel pipeline: GPU 0's contributor is in ALARM at minute 30, GPU 1's
    (10: warn) OK; both OK at minute 8, before GPU 0 failed."""
    files, _ = alarmed
    config, job = agent_config(files[AGENT_FILE])
    target = target_labels(job, NODE)
    points = Agent(config, job).run([Scrape(float(_time(k)), _payload(k), target) for k in range(SCRAPES)])
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if {"Key": "gpudash:rule", "Value": "gpu-health-fail"} in a["Request"]["Tags"]]
    gpu = {str(g): (("node", NODE), ("gpu", str(g))) for g in (0, 1)}
    assert cloudwatch_eval.alarm(request, points, 8 * 60) == {gpu["0"]: "OK", gpu["1"]: "OK"}
    assert cloudwatch_eval.alarm(request, points, 30 * 60) == {gpu["0"]: "ALARM", gpu["1"]: "OK"}



SHARE_ALARM = f'''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("fb-share", "GPU framebuffer share high", Condition(Query("{FB_PERCENT}", "{{}}", ({{}})), ">", 0.7))
'''


@pytest.mark.parametrize("aggregation, by", [("avg", ""), ("avg", '"node", "gpu"'), ("min", '"node"')])
def test_cloudwatch_refuses_an_alarm_on_a_mig_gpus_memory_share(tmp_path, aggregation, by):
    """CloudWatch holds a MIG GPU's instances as separate series and no one query weighs their shares by the memory
    each holds: an alarm per GPU or over the fleet is refused with its file and line, not made on the mean of the
    instances' shares (the MIG GPU here read 0.5 where 0.803 of its instances' memory is used)."""
    (tmp_path / "alarms").mkdir()
    (tmp_path / "alarms" / "share.py").write_text(SHARE_ALARM.format(aggregation, by + "," if by else ""))
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  alarms: [alarms]\n")
    with pytest.raises(InputError) as refused:
        build(load_project(tmp_path / "gpudash.yaml", counters_with(tmp_path, EXTRA)))
    assert "share.py:6: alarm 'fb-share': a MIG GPU's DCGM_FI_DEV_FB_USED_PERCENT is the share of the memory its " \
           "instances hold" in str(refused.value)

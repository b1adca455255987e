"""cloudwatch.source: container-insights: DCGM's blank sentinels reach CloudWatch, and the widgets and alarms say so.

The add-on's own DCGM exporter serves a field DCGM cannot read as its blank (9223372036854775794 "not supported" for
integer fields, 2**47 for floating-point ones), and nothing on the add-on's way drops it: its agent's Container
Insights pipeline filters the scrape's own series by name only (amazon-cloudwatch-agent,
filter_containerinsights_config.yaml), and its configuration cannot add a filter (an OTel YAML merged beside it may
not redefine the pipeline the JSON makes). The add-on model (tests/support/container_insights_addon.py) serves such
blanks; the *generated* widgets and alarms are evaluated over what CloudWatch stores, against the truth over the
readings DCGM really took:

* a widget of one line shows a gap for a period holding a blank (the metric math classic's widgets use), never the
  blank as a value;
* a widget of one line per pod or GPU shows it on that line, the others true; its header and lint (CW015) say so;
* alarms take no math: one above a threshold fires for a GPU reading the blank, one below never does; their
  descriptions and lint (AL010) say so.
"""

from __future__ import annotations

import json
import re

import pytest

from generator.artifacts import build
from generator.container_insights import ALARM_BLANKS, ARRAY_BLANKS
from generator.container_insights_table import LEVELS, MAPPINGS, metric_name
from generator.lint.runner import lint_project
from generator.output import encode
from generator.project import load_project
from generator.render.cloudwatch import panel_title
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_widgets import close, header, notes, panel, widgets
from tests.support.container_insights_addon import EVERY, datapoints, reading
from tests.support.dcgm_fleet import FLEET, truth

START, END = 0, 2100
CLUSTER = "gpu-cluster"
NOT_SUPPORTED = 9223372036854775794.0  # the integer blank + 2, as the exporter serves it
FP_BLANK = 140737488355328.0  # 2**47
IDLE_GPU = FLEET[4]  # ip-10-0-1-2 nvidia0, no pod: its utilization reads the blank a minute in four from 1200 s
POWER_GPU = FLEET[0]  # ml/train-0's first GPU: its power reads the floating-point blank at these collections
POWER_PAUSE = (300, 360, 1980)
HOT_IDLE = FLEET[3]  # ip-10-0-1-1 nvidia3, no pod, about 65 C: its temperature reads the blank at 1800-1920 s
TEMP_BLANK = range(1800, 1980)
IDLE_POD = FLEET[5]  # ml/infer-1, 2 % all along (idle): its utilization reads the blank a minute in four from 900 s
ADDON = "cloudwatch:\n  source: container-insights\n"


def _blank_minute(t: int) -> bool:
    """One minute in four (the 2nd): a value now's period of two collections (120 s) holds one, or none."""
    return (t // 60) % 4 == 1


def blank(field: str, gpu, t: int) -> float | None:
    """What the add-on's exporter serves in place of a reading (None: the reading): values DCGM cannot read now and
    then, so that the widgets of a value now (the latest minutes) hold periods with a blank and periods without."""
    if field == "DCGM_FI_DEV_GPU_UTIL" and _blank_minute(t) and (gpu == IDLE_GPU and t >= 1200
                                                               or gpu == IDLE_POD and t >= 900):
        return NOT_SUPPORTED
    if field == "DCGM_FI_DEV_POWER_USAGE" and gpu == POWER_GPU and t in POWER_PAUSE:
        return FP_BLANK
    if field == "DCGM_FI_DEV_GPU_TEMP" and gpu == HOT_IDLE and t in TEMP_BLANK:
        return NOT_SUPPORTED
    return None


def _blank_periods(field: str, gpus, start: int, period: int) -> set[int]:
    """The periods in which one of `gpus` reads the blank for `field` at a collection."""
    return {bucket for bucket in range(start, END, period) for gpu in gpus
            for t in range(bucket, bucket + period, EVERY) if blank(field, gpu, t) is not None}


@pytest.fixture(scope="module")
def addon(tmp_path_factory):
    folder = tmp_path_factory.mktemp("addon-blanks")
    (folder / "gpudash.yaml").write_text(ADDON)
    project = load_project(folder / "gpudash.yaml")
    return project, encode(build(project)), datapoints(CLUSTER, START, END - EVERY, blank=blank)


def _label(label: str) -> str:
    return re.sub(r" GPU (\d+)$", r" nvidia\1", label)


def _field(project, query) -> str:
    return "DCGM_FI_DEV_FB_USED_PERCENT" if query.over else query.metric


def _expected(project, query, start: int, period: int) -> dict[str, dict[int, float]]:
    """The truth over the readings DCGM took (as if no blank were served), by the widget's labels."""
    if query.over:  # the share of framebuffer used (a mean over the line's GPUs): no blank is served for it here
        assert query.aggregation == "avg"
        lines: dict[str, dict[int, list[float]]] = {}
        for bucket in range(start, END, period):
            for gpu in FLEET:
                if "pod" in query.by and not gpu.held:
                    continue
                label = f"Pod {gpu.namespace}/{gpu.pod}" if "pod" in query.by else ""
                lines.setdefault(label, {}).setdefault(bucket, []).append(
                    sum(reading("DCGM_FI_DEV_FB_USED_PERCENT", gpu, t // 30) for t in range(bucket, bucket + period,
                                                                                             EVERY)) / (period // EVERY))
        return {label: {b: sum(v) / len(v) for b, v in buckets.items()} for label, buckets in lines.items()}
    return {_label(k): v for k, v in truth(query, project.catalog.get(query.metric), start, END, period,
                                           every=EVERY).items()}


def _line_gpus(query, label: str):
    """The GPUs a line of `query` holds."""
    keys = [k for k in query.by if k != "cluster"]
    if not keys:
        return FLEET
    if "pod" in keys:
        return [g for g in FLEET if g.held and label.startswith(f"Pod {g.namespace}/{g.pod}")]
    return [g for g in FLEET if f"{g.node} nvidia{g.index}" == label]


def test_a_widget_of_one_line_drops_a_period_holding_a_blank(addon):
    """"Average GPU utilization" read 1.5e18 % once one idle GPU's utilization read the blank; now its periods with the
    blank are gaps, every other period the truth; "Total power draw" likewise through a floating-point blank."""
    project, files, points = addon
    checked = set()
    for path, properties in widgets(files):
        query = panel(project, path, panel_title(properties["title"]), CLUSTER).queries[0]
        if [k for k in query.by if k != "cluster"]:
            continue  # lines per pod or GPU: the next test
        title = panel_title(properties["title"])
        shown = cloudwatch_eval.widget(properties, points, START, END).get(title, {})
        start, period = cloudwatch_eval.widget_range(properties, START, END)
        expected = _expected(project, query, start, period)[""]
        dropped = set() if query.aggregation == "count" else _blank_periods(_field(project, query), FLEET, start,
                                                                             period)
        assert all(value < 1e9 for value in shown.values()), (title, shown)
        assert set(shown) == set(expected) - dropped, (title, sorted(set(expected) - dropped - set(shown)),
                                                        sorted(set(shown) - set(expected) + dropped))
        assert all(close(shown[b], expected[b]) for b in shown), title
        checked.add(title)
    assert {"Average GPU utilization", "Total power draw", "Average GPU temperature", "Hottest GPU",
            "GPUs reporting"} <= checked
    overview = {panel_title(p["title"]): p for path, p in widgets(files) if "overview" in path}
    for title, read, gap in (("Average GPU utilization", {1620, 1860}, {1740, 1980}),  # (periods of 120 s)
                             ("Total power draw", {1620, 1740, 1860}, {1980}),
                             ("Average GPU temperature", {1620, 1980}, {1740, 1860}),
                             ("Hottest GPU", {1620, 1980}, {1740, 1860})):
        shown = cloudwatch_eval.widget(overview[title], points, START, END)[title]
        assert set(shown) == read and not gap & set(shown), (title, shown)


def test_a_widget_of_lines_shows_the_blank_on_its_line_and_says_so(addon):
    """Per GPU and per pod, the lines without a blank are the truth; the blank GPU's (or pod's) line shows it, which
    the dashboard's header and lint (CW015) say for that widget."""
    project, files, points = addon
    noted = {(f.where.split(" widget ")[0].rsplit("/", 1)[-1], panel_title(f.where.split("(", 1)[1][:-1]))
             for f in lint_project(project) if f.rule == "CW015"}
    seen_blank = set()
    for path, properties in widgets(files):
        query = panel(project, path, panel_title(properties["title"]), CLUSTER).queries[0]
        if not [k for k in query.by if k != "cluster"]:
            continue
        title = panel_title(properties["title"])
        shown = cloudwatch_eval.widget(properties, points, START, END)
        start, period = cloudwatch_eval.widget_range(properties, START, END)
        expected = _expected(project, query, start, period)
        field = _field(project, query)
        for label, series in shown.items():
            blanks = set() if query.aggregation == "count" else _blank_periods(field, _line_gpus(query, label),
                                                                                start, period)
            for bucket, value in series.items():
                if bucket in blanks:
                    assert value >= 1e9, (title, label, bucket, value)  # the blank, as a value
                    seen_blank.add(title)
                else:
                    assert close(value, expected[label][bucket]), (title, label, bucket, value)
        if title in seen_blank:
            assert ARRAY_BLANKS in notes(header(files, path)).get(title, set()), title
            assert (path.rsplit("/", 1)[-1], title) in noted, title
    assert {"GPU utilization", "Power draw", "GPU temperature", "GPU utilization by pod",
            "Power draw of each pod's GPUs"} <= seen_blank


def test_alarms_read_the_blank_and_their_descriptions_say_it(addon):
    """The idle alarm (below 5 %) never fires for a pod whose utilization reads the blank; the temperature alarm
    (above its level) fires for an idle GPU whose temperature reads it. No alarm takes math; each says so."""
    project, files, points = addon
    alarms = {a["Request"]["AlarmName"]: a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    idle, hot = alarms["gpudash-gpu-cluster-gpu-idle-warning"], alarms["gpudash-gpu-cluster-gpu-temp-critical-critical"]
    clean = datapoints(CLUSTER, START, END - EVERY)
    pod = (("FullPodName", IDLE_POD.pod), ("Namespace", IDLE_POD.namespace))
    assert {k: v for k, v in cloudwatch_eval.alarm(idle, clean, END).items() if set(pod) <= set(k)} \
        and all(v == "ALARM" for k, v in cloudwatch_eval.alarm(idle, clean, END).items() if set(pod) <= set(k))
    assert all(v == "OK" for k, v in cloudwatch_eval.alarm(idle, points, END).items() if set(pod) <= set(k))
    gpu = (("GpuDevice", f"nvidia{HOT_IDLE.index}"), ("NodeName", HOT_IDLE.node))
    assert all(v == "OK" for v in cloudwatch_eval.alarm(hot, clean, END).values())
    fired = [k for k, v in cloudwatch_eval.alarm(hot, points, END).items() if v == "ALARM"]
    assert fired and all(set(gpu) <= set(k) for k in fired)
    assert f"{ALARM_BLANKS}: this alarm never fires for it" in idle["AlarmDescription"]
    assert f"{ALARM_BLANKS}: this alarm fires for it" in hot["AlarmDescription"]
    gpu_metrics = {metric_name(level, m) for m in MAPPINGS for level in LEVELS}
    for name, request in alarms.items():  # every alarm on a reading of a DCGM field says it; a count reads none
        reads = [m["Expression"] for m in request["Metrics"] if m.get("Expression", "").startswith("SELECT")
                 and re.search(r'\("(\w+)"\)', m["Expression"]).group(1) in gpu_metrics]
        assert (ALARM_BLANKS in request["AlarmDescription"]) == any(not r.startswith("SELECT COUNT(") for r in reads), \
            name
    said = {f.where.split()[-1] for f in lint_project(project) if f.rule == "AL010"}
    assert {idle["AlarmName"], hot["AlarmName"]} <= said


def test_every_addon_dashboard_says_blanks_and_mig_instances_read_as_one(addon):
    _, files, _ = addon
    for path in [p for p in files if p.startswith("cloudwatch/dashboards/")]:
        text = header(files, path)
        assert "is published by the Container Insights add-on: its agent drops no reading by value" in text, path
        assert "A GPU split into MIG instances is published by the Container Insights add-on as one of its " \
               "instances" in text, path

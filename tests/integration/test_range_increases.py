"""A panel of a counter's increase "during the selected time range" shows, per GPU, the rows remapped in that range
and nothing from before it, on Grafana (a real Prometheus) and on its CloudWatch twin (the agent model's deltas).

Three hours of one node's 30 s scrapes (15 s past each half minute) are backfilled into a real Prometheus: GPU 0
remaps 3 rows at minute 45 and none after; GPU 1 one row at minute 100 and one at minute 120; GPU 2 reads 5 rows
until its reset at minute 95 (the counter starts over from 0) and remaps one row at minute 110. The health
dashboard's "Rows remapped (uncorrectable)" panel is judged over ranges that start after GPU 0's remaps, that
hold them, and the whole three hours: each GPU's value is the sum of its readings' deltas in the range (a reading
after a fall counted as it is), the same on both sides. A state's legend (GPU 0's last XID code: 79 at minute 60,
13 at minute 120) lists its largest and last values, not a mean of codes. Each panel of the build whose value is an increase over
the range reads one value per series (an instant query), never a chart of increases over ranges ending earlier.
"""

from __future__ import annotations

import re

import pytest

from generator.artifacts import build, grafana_dashboards
from generator.output import encode
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import widgets
from tests.support.dcgm_fleet import target_labels
from tests.support.prometheus_server import backfilled_fixture

STEP, SCRAPES, OFFSET = 30, 360, 15  # three hours, scraped 15 s past each half minute
ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
TITLE = "Rows remapped (uncorrectable)"
NODE = "gpu-node-1"
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")


def rows(gpu: int, minute: float) -> int:
    """GPU `gpu`'s counter at `minute` of the story."""
    if gpu == 0:
        return 3 if minute >= 45 else 0
    if gpu == 1:
        return (minute >= 100) + (minute >= 120)
    return 5 if minute < 95 else int(minute >= 110)  # reset at 95, one row at 110


def _time(k: int) -> int:
    return OFFSET + k * STEP


def _labels(gpu: int) -> str:
    return f'gpu="{gpu}",UUID="GPU-{gpu}",device="nvidia{gpu}",modelName="NVIDIA H100",Hostname="{NODE}"'


def _openmetrics(start: int) -> str:
    lines = [f"# TYPE {ROWS} gauge"]  # stored under its own name (an OpenMetrics counter's samples end in _total)
    for gpu in range(3):
        lines += [f'{ROWS}{{{_labels(gpu)},node="{NODE}",job="dcgm-exporter"}} {rows(gpu, _time(k) / 60)} '
                  f"{start + _time(k)}" for k in range(SCRAPES)]
    lines.append(f"# TYPE {XID} gauge")
    lines += [f'{XID}{{{_labels(0)},node="{NODE}",job="dcgm-exporter"}} {xid(_time(k) / 60)} {start + _time(k)}'
              for k in range(SCRAPES)]
    return "\n".join(lines) + "\n# EOF\n"


XID = "DCGM_FI_DEV_XID_ERRORS"


def xid(minute: float) -> int:
    """GPU 0's last XID code: 79 from minute 60, 13 from minute 120."""
    return 13 if minute >= 120 else 79 if minute >= 60 else 0


# (first minute, last minute) of the selected ranges, and each GPU's rows remapped in it (the truth)
RANGES = {(90, 150): {0: 0, 1: 2, 2: 1}, (30, 90): {0: 3, 1: 0, 2: 0}, (0, 180): {0: 3, 1: 2, 2: 1}}


def _truth(first: int, last: int) -> dict[str, float]:
    """Each GPU's sum of deltas over the scrapes in [first, last) minutes (none on an edge), a fall's reading as it
    is; the first scrape sends nothing."""
    shown = {}
    for gpu in range(3):
        readings = [(_time(k), rows(gpu, _time(k) / 60)) for k in range(SCRAPES)]
        deltas = [(b - a if b >= a else b) for (_, a), (t, b) in zip(readings, readings[1:])
                  if first * 60 <= t < last * 60]
        shown[f"{NODE} GPU {gpu}"] = float(sum(deltas))
    return shown


def test_the_truth_is_what_the_story_says():
    assert {r: {int(k.rsplit(" ", 1)[1]): v for k, v in _truth(*r).items()} for r in RANGES} == RANGES


backfilled = backfilled_fixture("range-increases", _openmetrics, SCRAPES * STEP, STEP)


@pytest.fixture(scope="module")
def project():
    return load_project()


def _panel(project, title: str = TITLE) -> dict:
    dashboard = next(d for d in grafana_dashboards(project) if d.uid == "gpudash-health")
    return next(p for p in dashboard.model["panels"] if p.get("title") == title)


def test_the_panel_is_one_value_per_gpu_over_the_range(project):
    panel = _panel(project)
    assert "during the selected time range" in panel["description"]
    assert panel["type"] == "bargauge"
    assert panel["options"]["reduceOptions"]["calcs"] == ["lastNotNull"]
    (target,) = panel["targets"]
    assert target["instant"] is True and target["range"] is False
    assert "[${__range_ms}ms:" in target["expr"]


def test_no_panel_charts_increases_over_ranges_ending_earlier(project):
    """A range query's points are each evaluated with the whole $__range behind it: no panel may draw one. A GPU's
    name read over the range at its end (`[$__range] @ end()`, promql.gpus_named) is the same at every point."""
    for dashboard in grafana_dashboards(project):
        for panel in dashboard.model["panels"]:
            for target in panel.get("targets", []):
                if "__range" in re.sub(r"\[\$__range\] ?@ ?end\(\)", "", target.get("expr", "")):
                    assert target["instant"] is True and target["range"] is False, (dashboard.uid, panel["title"])


_CALCS = {"mean": lambda v: sum(v) / len(v), "max": max, "lastNotNull": lambda v: v[-1]}


def shown_by_grafana(prometheus, panel: dict, start: int, first: int, last: int) -> dict[str, dict[str, float]]:
    """{bar or legend line: {calc: value}} as Grafana shows the panel over [first, last] minutes: an instant query at
    the range's end, or a range query (a point a minute) reduced by the legend's calcs."""
    (target,) = panel["targets"]
    expr = interpolate(target["expr"], {"__range": f"{(last - first) * 60}s", "__range_ms": str((last - first) * 60_000),
                                        **variables({}, VARIABLES)})
    if target["instant"]:
        result = [{"metric": s["metric"], "values": [s["value"]]} for s in prometheus.query(expr, at=start + last * 60)]
        calcs = panel["options"]["reduceOptions"]["calcs"]
    else:
        result = prometheus.api("query_range", query=expr, start=start + first * 60, end=start + last * 60,
                                step=60)["result"]
        calcs = panel["options"]["legend"]["calcs"]
    shown = {render_legend(target["legendFormat"], s["metric"]): {
        calc: _CALCS[calc]([float(v) for _, v in s["values"]]) for calc in calcs} for s in result}
    assert len(shown) == len(result)
    return shown


@pytest.mark.parametrize("first, last", list(RANGES))
def test_grafana_shows_the_rows_remapped_in_the_range(backfilled, project, first, last):
    prometheus, start = backfilled
    shown = shown_by_grafana(prometheus, _panel(project), start, first, last)
    truth = _truth(first, last)
    assert set(shown) == set(truth) and all(shown[line] and set(shown[line].values()) == {truth[line]}
                                            for line in truth), (first, last, shown)


@pytest.fixture(scope="module")
def published(project):
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    target = target_labels(job, NODE)
    scrapes = [Scrape(float(_time(k)), f"# TYPE {ROWS} counter\n" + "".join(
        f"{ROWS}{{{_labels(gpu)}}} {rows(gpu, _time(k) / 60)}\n" for gpu in range(3)), target)
        for k in range(SCRAPES)]
    (properties,) = [p for path, p in widgets(files) if path.endswith("-health.json") and p["title"] == TITLE]
    return properties, Agent(config, job).run(scrapes)


@pytest.mark.parametrize("first, last", list(RANGES))
def test_the_cloudwatch_twin_shows_the_same(published, first, last):
    properties, points = published
    assert properties["view"] == "bar" and properties["setPeriodToTimeRange"] is True
    lines = cloudwatch_eval.widget(properties, points, first * 60, last * 60)
    shown = {label: sum(series.values()) for label, series in lines.items() if series}
    assert all(len(series) == 1 for series in lines.values())
    assert shown == _truth(first, last), (first, last)


def test_a_state_panels_legend_lists_what_a_code_means(backfilled, project):
    """The last XID code per GPU: its legend lists the largest code and the last one in the range, not a mean of
    codes (79 and 13 would read 46)."""
    prometheus, start = backfilled
    panel = _panel(project, "Last XID error code")
    assert panel["options"]["legend"]["calcs"] == ["max", "lastNotNull"]
    shown = shown_by_grafana(prometheus, panel, start, 90, 150)
    assert shown == {f"{NODE} GPU 0": {"max": 79.0, "lastNotNull": 13.0}}

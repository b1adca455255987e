"""A GPU's counter read from more than one series: the health dashboard's "Rows remapped (uncorrectable)" panel (the
rows remapped per GPU during the selected time range) on a real Prometheus holding three hours of 30 s scrapes (15 s
past each half minute), judged against the GPU's own readings summed as the CloudWatch agent's deltas.

* `node-upgrade`: the exporter is upgraded with the new pod up before the old one leaves (minutes 80 to 100 both
  are scraped): the old one spells the node `Hostname`, the new one `hostname`, and the new one's DCGM reports the
  field as not supported (the int64 sentinel) until minute 95. GPU 0 remaps a row at minute 85 (2 -> 3), while only
  the old exporter reads it, and one at minute 150. The blank of the new copy is no reading: the old copy's
  readings are the GPU's.
"""

from __future__ import annotations

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from tests.support.mixed_fleet import NOT_SUPPORTED
from tests.support.prometheus_server import backfilled as backfilled_prometheus

STEP, SCRAPES, OFFSET = 30, 360, 15
ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
TITLE = "Rows remapped (uncorrectable)"
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")
BLANK = float(NOT_SUPPORTED)


def _time(k: int) -> int:
    return OFFSET + k * STEP


def upgrade_rows(minute: float) -> int:
    return 2 + (minute >= 85) + (minute >= 150)


# node -> [(labels of one series, [(seconds, reading)])]: what the exporters served
def _series() -> dict[str, list[tuple[str, list[tuple[int, float]]]]]:
    gpu = 'gpu="0",UUID="GPU-7f3a",device="nvidia0",modelName="NVIDIA H100",job="dcgm-exporter"'
    old = [(_time(k), float(upgrade_rows(_time(k) / 60))) for k in range(SCRAPES) if _time(k) < 100 * 60]
    new = [(_time(k), BLANK if _time(k) < 95 * 60 else float(upgrade_rows(_time(k) / 60)))
           for k in range(SCRAPES) if _time(k) >= 80 * 60]
    return {"node-upgrade": [(f'{gpu},Hostname="node-upgrade",instance="10.0.0.1:9400"', old),
                             (f'{gpu},hostname="node-upgrade",instance="10.0.0.2:9400"', new)]}


def _openmetrics(start: int) -> str:
    lines = [f"# TYPE {ROWS} gauge"]  # stored under its own name (an OpenMetrics counter's samples end in _total)
    for series in _series().values():
        for labels, samples in series:
            lines += [f"{ROWS}{{{labels}}} {value:.0f} {start + t}" for t, value in samples]
    return "\n".join(lines) + "\n# EOF\n"


def _readings(node: str) -> list[tuple[int, float]]:
    """The GPU's readings: at each scrape, what its exporters read that is not a blank (the copies agree)."""
    taken: dict[int, float] = {}
    for _, samples in _series()[node]:
        for t, value in samples:
            if value < 9e18:
                taken[t] = max(taken.get(t, value), value)
    return sorted(taken.items())


def _truth(node: str, first: int, last: int) -> float:
    """The sum of the deltas of the readings taken in [first, last) minutes (a fall's reading counts as it is)."""
    readings = _readings(node)
    return float(sum(b - a if b >= a else b for (_, a), (t, b) in zip(readings, readings[1:])
                     if first * 60 <= t < last * 60))


RANGES = ((60, 120), (0, 180), (120, 180))


def test_the_truth_is_what_the_story_says():
    assert [_truth("node-upgrade", *r) for r in RANGES] == [1.0, 2.0, 1.0]


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    with backfilled_prometheus(tmp_path_factory.mktemp("counter-copies"), _openmetrics, SCRAPES * STEP,
                               STEP) as started:
        yield started


@pytest.fixture(scope="module")
def panel():
    dashboard = next(d for d in grafana_dashboards(load_project()) if d.uid == "gpudash-health")
    return next(p for p in dashboard.model["panels"] if p.get("title") == TITLE)


def shown(prometheus, panel: dict, start: int, first: int, last: int) -> dict[str, float]:
    """{bar: value} as Grafana shows the panel over [first, last) minutes: an instant query at the range's end."""
    (target,) = panel["targets"]
    assert target["instant"] is True
    expr = interpolate(target["expr"], {"__range": f"{(last - first) * 60}s", **variables({}, VARIABLES)})
    result = prometheus.query(expr, at=start + last * 60)
    bars = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
    assert len(bars) == len(result)
    return bars


@pytest.mark.parametrize("first, last", RANGES)
def test_a_blank_on_one_exporters_copy_is_no_reading(backfilled, panel, first, last):
    """Before: the copies' largest reading was taken before the blank filter, so from minute 80 to 95 the GPU's
    reading was the blank and dropped; at minute 95 the reading before it was more than 5 minutes old, so the remap at
    minute 85 counted nowhere (0 for 60-120 minutes, 1 for the three hours)."""
    prometheus, start = backfilled
    assert shown(prometheus, panel, start, first, last) == {"node-upgrade GPU 0": _truth("node-upgrade", first, last)}

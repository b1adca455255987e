"""A counter that reads DCGM's blank for one scrape gives, over a window holding that scrape, the rate or increase
of its other readings, whatever the window's length, on a real Prometheus; a GPU two exporters scrape, one of them
reading the blank at every scrape, reads as the other copy says.

Three days of three GPUs' counters are backfilled (`promtool tsdb create-blocks-from openmetrics`) into the
storage of a real Prometheus: GPU 0 reads the integer blank (0x7ffffffffffffff0) for one scrape half way,
GPU 1 never does; GPU 2 is written twice, as an exporter upgrade leaves it (the old exporter pod and the new one,
each its own `instance`, both scraping the GPU): the new one reads the not-supported blank (0x7ffffffffffffff2, as
the exporter writes a field its DCGM cannot read) at every scrape, the old one the real readings. The generated panel
queries run with their window (`$__rate_interval`, `$__range`) set as long as a dashboard's time range can make it:
every window shows the three GPUs, each with its true rate or increase (CloudWatch's agent drops each blank datapoint
before its deltas: the rate over a window is its growth over the readings it has); a window whose first sample is
the blank reads GPU 0's rate from its first real reading (Prometheus extrapolates from it to the window's start by
half an interval only: one interval's share of the window low).
"""

from __future__ import annotations

import math

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from tests.support.prometheus_server import Prometheus, backfilled as backfilled_prometheus, counted_read, \
    range_macros, recorded

BLANK = "9223372036854775792"  # DCGM's int64 blank, 0x7ffffffffffffff0
NOT_SUPPORTED = "9223372036854775794"  # 0x7ffffffffffffff2
STEP = 300  # one sample every 5 minutes
SAMPLES = 3 * 24 * 12 + 1  # three days
BLANK_AT = SAMPLES // 2  # the one scrape that reads the blank
REPLAYS_PER_STEP = 3  # PCIe replays: a steady 0.01 per second
ROWS_EVERY = 36  # uncorrectable rows remapped: one every 3 hours
START_REPLAYS, START_ROWS = 5_000_000, 7  # readings since boot
LABELS = 'gpu="{gpu}",UUID="GPU-{gpu}",device="nvidia{gpu}",modelName="NVIDIA H100",Hostname="gpu-node-a"'
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")


def _readings(step: int) -> dict[str, int]:
    return {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER": START_REPLAYS + REPLAYS_PER_STEP * step,
            "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": START_ROWS + step // ROWS_EVERY}


# GPU 2's two copies: the old exporter's (real readings) and the new one's (the not-supported blank at every scrape)
COPIES = {'instance="10.0.1.11:9400"': None, 'instance="10.0.1.12:9400"': NOT_SUPPORTED}


def _openmetrics(start: int) -> str:
    lines = []
    for metric in _readings(0):
        for gpu in (0, 1):
            for step in range(SAMPLES):
                value = BLANK if gpu == 0 and step == BLANK_AT else str(_readings(step)[metric])
                lines.append(f"{metric}{{{LABELS.format(gpu=gpu)}}} {value} {start + step * STEP}")
        for copy, blank in COPIES.items():
            for step in range(SAMPLES):
                lines.append(f"{metric}{{{LABELS.format(gpu=2)},{copy}}} {blank or _readings(step)[metric]} "
                             f"{start + step * STEP}")
    return "\n".join(lines) + "\n# EOF\n"


# the interval these readings were scraped at; the agent's counter cache cannot span it, so CloudWatch reads the
# add-on's metrics (the Grafana panels are the same)
SETTINGS = f"scrape:\n  interval: {STEP // 60}m\ncloudwatch:\n  source: container-insights\n"
PANELS = (("health", "PCIe replays", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", True),
          ("health", "Rows remapped (uncorrectable)", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", False))


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    """The backfilled server, holding the counters' recordings the panels read as a Prometheus evaluating SETTINGS'
    recording rules at their 5-minute interval records them (prometheus_server.recorded)."""
    with backfilled_prometheus(tmp_path_factory.mktemp("blanks"), _openmetrics, SAMPLES * STEP, STEP) as started:
        prometheus, start = started
        settings = tmp_path_factory.mktemp("blanks-settings") / "gpudash.yaml"
        settings.write_text(SETTINGS)
        project = load_project(settings)
        group = counted_read([_panel(project, uid, title)["expr"] for uid, title, _, _ in PANELS], project)
        recorded(prometheus, group, start - 2 * STEP, start + (SAMPLES + 1) * STEP)
        yield started


def _panel(project, uid: str, title: str) -> dict:
    dashboard = next(d for d in grafana_dashboards(project) if d.uid == f"gpudash-{uid}")
    return next(p for p in dashboard.model["panels"] if p.get("title") == title)["targets"][0]


def _shown(prometheus: Prometheus, target: dict, window: str, at: float, project) -> dict[str, float]:
    expr = interpolate(target["expr"],
                       {"__rate_interval": window, **range_macros(window), **variables({}, VARIABLES)})
    return {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1])
            for s in prometheus.query(expr, at=at)}


# (window, the sample it ends at): holding the blank (from 26 h up, the floor once put on rates let the
# blank's climb through), starting at the blank (its first sample), and not holding it.
BLANK_INSIDE = [("2h", BLANK_AT + 12), ("26h", BLANK_AT + 100), ("40h", SAMPLES - 1), ("71h", SAMPLES - 1)]
BLANK_FIRST = [("26h", BLANK_AT + 311), ("30h", BLANK_AT + 359)]
BLANK_OUTSIDE = [("1h", SAMPLES - 1), ("30h", BLANK_AT - 1)]


def _true(metric: str, window: str, end: int, rate: bool) -> float:
    """The counter's real rate (per second) or increase over `window` ending at sample `end`."""
    seconds = int(window[:-1]) * 3600
    first = end - seconds // STEP + 1  # the first sample inside (end - window, end]
    if not rate:  # the growth since the reading before the window, as CloudWatch sums the agent's deltas
        return _readings(end)[metric] - _readings(first - 1)[metric]
    change = _readings(end)[metric] - _readings(first)[metric]
    covered = (end - first) * STEP
    # rate extrapolates from the samples to the window's edges, here half a step away at each end
    return change * seconds / covered / seconds


@pytest.mark.parametrize("window, end", BLANK_INSIDE + BLANK_FIRST + BLANK_OUTSIDE)
def test_a_window_holding_one_blank_reading_gives_the_rate_and_increase_of_its_other_readings(backfilled, window,
                                                                                              end, tmp_path):
    prometheus, start = backfilled
    settings = tmp_path / "gpudash.yaml"
    settings.write_text(SETTINGS)
    project = load_project(settings)
    for uid, title, metric, rate in PANELS:
        # half a step after the sample `end`: no sample sits on the window's edges (Prometheus 2 includes a
        # sample at the start edge, Prometheus 3 does not), both are half a step from one
        shown = _shown(prometheus, _panel(project, uid, title), window, start + end * STEP + STEP / 2, project)
        # every GPU, one line each, GPU 2's copies one line (the blank copy's readings left out)
        assert set(shown) == {"gpu-node-a GPU 0", "gpu-node-a GPU 1", "gpu-node-a GPU 2"}, (title, window, shown)
        truth = _true(metric, window, end, rate)
        for line, value in shown.items():
            # GPU 0's rate from its first real reading, 1.5 intervals after the window's start, too: the growth of
            # its readings over the seconds they grew in (rate() of the readings extrapolated by half an interval
            # there and read that much low)
            assert math.isclose(value, truth, rel_tol=1e-6), (title, window, line, value, truth)

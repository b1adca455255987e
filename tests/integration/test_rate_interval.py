"""Counter-rate panels are full whatever the data source's scrape interval says. Grafana (pkg/promlib,
calculateRateInterval) works `$__rate_interval` out as max($__interval + s, 4 s), s the query's own min step (the
target's `interval`) when it has one, else the data source's scrape interval (15 s unless someone set it); the
panel's min interval only bounds `$__interval`. With 60 s scrapes and no min step that gave rate(x[75s:60s]) with
the panel's min interval (two readings: a missed scrape empties two points), rate(x[60s:60s]) without it (two points
in three empty). Every query that uses `$__rate_interval` carries the scrape interval as its min step, and on a real
Prometheus holding one GPU's 10, 30 or 60 s scrapes, one in 53 missed, each point of a 6-hour chart, at the step
Grafana asks for, has the true rate."""

from __future__ import annotations

import math

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.project import load_project
from tests.support.prometheus_server import backfilled as backfilled_prometheus, counted_inline, range_macros

SCRAPES = (10, 30, 60)  # seconds between scrapes
HOURS = 8
MISSED = 53  # every 53rd scrape is missed (about one an hour, at a new minute of the hour each time)
REPLAYS = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
PER_SECOND = 0.1  # 1, 3 or 6 replays a scrape
DATA_SOURCE_DEFAULT = 15  # Grafana's scrape interval for a Prometheus data source that does not set one
CHART, AUTO = 6 * 3600, 20  # a 6-hour chart: Grafana's auto interval, range over its data points, rounds to 20 s


def _openmetrics(start: int, scrape: int) -> str:
    labels = 'gpu="0",UUID="GPU-0",device="nvidia0",modelName="NVIDIA H100",Hostname="node-a",node="node-a"'
    lines = [f"# TYPE {REPLAYS} gauge"]
    lines += [f'{REPLAYS}{{{labels},job="dcgm-exporter"}} {k * scrape * PER_SECOND:.0f} {start + 7 + k * scrape}'
              for k in range(HOURS * 3600 // scrape) if k % MISSED != MISSED - 1]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module", params=SCRAPES, ids=[f"{s}s" for s in SCRAPES])
def backfilled(request, tmp_path_factory):
    scrape = request.param
    with backfilled_prometheus(tmp_path_factory.mktemp("rate-interval"), lambda start: _openmetrics(start, scrape),
                               HOURS * 3600, scrape) as (prometheus, start):
        yield prometheus, start, scrape


def _seconds(text: str | None) -> int:
    return int(text.rstrip("s")) if text else 0


def _asked(panel: dict, target: dict) -> tuple[int, int]:
    """The step and $__rate_interval Grafana asks Prometheus for: $__interval is the auto interval bounded below
    by the panel's min interval (else the data source's scrape interval); the step by the target's min step (else
    $__interval); the rate interval is max($__interval + s, 4 s), s the target's min step, else the data source's
    scrape interval."""
    interval = max(AUTO, _seconds(panel.get("interval")) or DATA_SOURCE_DEFAULT)
    step = max(AUTO, _seconds(target.get("interval")) or interval)
    scrape = _seconds(target.get("interval")) or DATA_SOURCE_DEFAULT
    return step, max(interval + scrape, 4 * scrape)


def _filled(prometheus, start: int, panel: dict, target: dict) -> tuple[int, int, list[float]]:
    step, window = _asked(panel, target)
    expr = interpolate(target["expr"], {"__rate_interval": f"{window}s", **range_macros(f"{CHART}s"),
                                        **variables({}, ("namespace", "pod", "node", "gpu", "cluster"))})
    first = (start + 3600) // step * step  # Grafana aligns a range query's start to its step
    count = CHART // step
    shown = prometheus.query_at(expr, first, count, step)
    return count, sum(1 for result in shown.values() if result), [float(r["value"][1]) for res in shown.values()
                                                                  for r in res]


def test_a_counter_rate_panel_has_a_value_at_every_point_whatever_the_scrape_interval(backfilled, tmp_path):
    prometheus, start, scrape = backfilled
    settings = tmp_path / "gpudash.yaml"
    settings.write_text(f"scrape:\n  interval: {scrape}s\n")
    project = load_project(settings)
    health = next(d for d in grafana_dashboards(project) if d.uid == "gpudash-health")
    (panel,) = [p for p in health.model["panels"] if p.get("title") == "PCIe replays"]
    (target,) = panel["targets"]
    assert "$__rate_interval" in target["expr"] and target.get("interval") == f"{scrape}s"
    target = {**target, "expr": counted_inline(target["expr"], project)}  # the recording's history (backfilled)
    count, filled, values = _filled(prometheus, start, panel, target)
    assert filled == count, (_asked(panel, target), filled, count)
    assert all(math.isclose(value, PER_SECOND, rel_tol=1e-6) for value in values)
    if scrape != 60:
        return
    # as it was with 60 s scrapes: the panel's min interval alone (a missed scrape empties points), and none at all
    # (a window of one interval: each missed scrape empties points)
    for before in ({**panel, "interval": f"{scrape}s"}, {**panel, "interval": None}):
        count, filled, _ = _filled(prometheus, start, before, {**target, "interval": None})
        assert filled < count, (_asked(before, {**target, "interval": None}), filled, count)

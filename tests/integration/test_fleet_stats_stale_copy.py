"""A rollout of the exporter of a node reached by a scrape path that attaches no `node` label, its GPUs' load falling
after the old exporter left, as a scraping Prometheus stores it (30 s scrapes, 1 hour, staleness markers written).

The old exporter (no NODE_NAME: its own pod's name in `Hostname`) serves GPUs D, E, F at indexes 0, 1, 2, scraped at
0 s of each interval, its last scrape at ROLLOUT + 90 (then its target is gone: a staleness marker for each series).
The new one writes `hostname` n2, numbers them F, D, E, is scraped 11 s into each interval from ROLLOUT. Both read
the device: 200, 400 and 600 W, until a job ends and from the scrapes at ROLLOUT + 120 on each GPU draws a tenth (20,
40, 60 W). The same UUIDs under both.
"""

from __future__ import annotations

import pytest

from tests.support.projects import bundled_panels, bundled_project
from tests.support.prometheus_server import written_fixture
from tests.support.range_panels import panel_at
from tests.support.scraped_gpus import scraped

SPAN, STEP, ROLLOUT, NEW_PHASE, FALL = 3600, 30, 1800, 11, 120
WATTS = {"D": 200, "E": 400, "F": 600}
EXPORTER_POD = "nvidia-dcgm-exporter-x7k2p"


def _uuid(name: str) -> str:
    return f"GPU-{ord(name):08x}-5d3e-0a2f-91c4-7e20b6{ord(name):06x}"


def _scraped(start: int) -> dict[tuple, list[tuple[float, str]]]:
    def held(host: tuple[str, str], order: str, first: int, last: int):
        return lambda t: [({"gpu": str(index), "UUID": _uuid(name), host[0]: host[1]},
                           WATTS[name] if t < ROLLOUT + FALL else WATTS[name] // 10)
                          for index, name in enumerate(order)] if first <= t <= last else []
    return scraped(start, [("10.0.2.5", 0, held(("Hostname", EXPORTER_POD), "DEF", 0, ROLLOUT + 3 * STEP)),
                           ("10.0.2.6", NEW_PHASE, held(("hostname", "n2"), "FDE", ROLLOUT, SPAN))], SPAN, STEP)


rolled = written_fixture("fleet-stats-stale-copy", _scraped, SPAN, STEP)


def _total(prometheus, start: int, after: int) -> tuple[list[float], list[float]]:
    panels = bundled_panels()
    return tuple(list(panel_at(prometheus, bundled_project(), panels[title], start + ROLLOUT + after, SPAN).values())
                 for title in ("GPUs reporting", "Total power draw"))


@pytest.mark.parametrize("after", [-60, 15, 89, 119])
def test_before_the_load_falls_the_fleet_draws_1200_watts(rolled, after):
    """Before the fall each GPU once, 1,200 W, through the overlap too (promql.one_per_uuid)."""
    prometheus, start = rolled
    assert _total(prometheus, start, after) == ([3.0], [1200.0])


@pytest.mark.parametrize("after", [135, 150, 180, 209])
def test_after_the_old_exporter_left_the_fleet_draws_what_the_live_copies_read(rolled, after):
    """From the new exporter's scrape at 131 s the only live copies read 20, 40, 60 W: 'Total power draw' 120 W
    (promql.one_per_uuid keeps a UUID's live copy). When it kept a UUID's highest copy it read 1,200 W to 210 s (the
    old copies' 200, 400, 600 W from their last scrape at 90 s, held through the 120 s look-back), 120 W from 211 s;
    before one copy per UUID, 1,320 W (both)."""
    prometheus, start = rolled
    assert _total(prometheus, start, after) == ([3.0], [120.0])


def test_once_the_old_copies_leave_the_look_back_the_fleet_draws_120_watts(rolled):
    """From 211 s only the new exporter's copies are left: 120 W."""
    prometheus, start = rolled
    assert _total(prometheus, start, 215) == ([3.0], [120.0])

"""Two exporters of one node numbering its GPUs apart through a rollout's overlap, as a scraping Prometheus stores them.

The story (30 s scrapes, 1 hour, written into a real Prometheus with the staleness markers its scrape loop writes):
node n1's GPUs A (300 W), B (500 W) and C (700 W) at indexes 0, 1 and 2 under the old exporter, scraped at 0 s of
each interval until ROLLOUT + 60, then gone (its target removed: a staleness marker for each series); the new
exporter from ROLLOUT numbers them C, A, B (0, 1, 2), reads 10 W more, scraped 11 s into each interval. Each GPU is
keyed by its UUID and index, so for the overlap each is two GPUs, named alike at their indexes; a gauge panel keeps
one GPU per node and index (promql.gpus_named's slot).
"""

from __future__ import annotations

import pytest

from tests.support.projects import bundled_panels, bundled_project
from tests.support.prometheus_server import written_fixture
from tests.support.range_panels import panel_at
from tests.support.scraped_gpus import scraped

SPAN, STEP, ROLLOUT, OVERLAP, NEW_PHASE = 3600, 30, 1800, 60, 11
WATTS = {"A": 300, "B": 500, "C": 700}


def _scraped(start: int) -> dict[tuple, list[tuple[float, str]]]:
    """The old exporter scraped to its last scrape, its target then removed (each series gone: a staleness marker);
    the new one from the rollout."""
    def held(order: str, more: int, first: int, last: int):
        return lambda t: [({"gpu": str(index), "UUID": f"GPU-{name}", "Hostname": "n1", "node": "n1"},
                           WATTS[name] + more) for index, name in enumerate(order)] if first <= t <= last else []
    return scraped(start, [("10.0.0.5", 0, held("ABC", 0, 0, ROLLOUT + OVERLAP - STEP)),
                           ("10.0.0.6", NEW_PHASE, held("CAB", 10, ROLLOUT, SPAN))], SPAN, STEP)


rotated = written_fixture("exporter-overlap-numbered-apart", _scraped, SPAN, STEP)


def test_each_index_reads_the_new_exporters_gpu_from_its_first_scrape_on(rotated):
    """Every 3 s from the rollout: before the new exporter's first scrape each index's line reads the old exporter's
    GPU, from it on the new one's (10 W more), never back, and 'GPUs reporting' 3, 'Total power draw' the lines' sum.
    Before a fresh copy weighed its target's longest-lived copy (promql._present), the copy scraped last won each
    index: the lines read the old exporter's GPUs again from its scrape at 30 s to the new one's at 41 s."""
    prometheus, start = rotated
    panels = bundled_panels()
    old = {"n1 GPU 0": 300.0, "n1 GPU 1": 500.0, "n1 GPU 2": 700.0}
    new = {"n1 GPU 0": 710.0, "n1 GPU 1": 310.0, "n1 GPU 2": 510.0}
    for at in [*range(ROLLOUT - 9, ROLLOUT + OVERLAP + 2 * STEP, 3), ROLLOUT + 600]:
        shown = {title: panel_at(prometheus, bundled_project(), panels[title], start + at, SPAN)
                 for title in ("Power draw", "GPUs reporting", "Total power draw")}
        lines = new if at >= ROLLOUT + NEW_PHASE else old
        assert (shown["Power draw"], list(shown["GPUs reporting"].values()),
                list(shown["Total power draw"].values())) == (lines, [3.0], [pytest.approx(sum(lines.values()))]), \
            (at - ROLLOUT, shown)

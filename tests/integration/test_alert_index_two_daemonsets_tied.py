"""The one index a per-GPU alert names a GPU of NVIDIA's UUID form at (promql.gpus_named's `one_index`, as a rule
names it: promql._newest_index, over the naming's hour) where two exporters (two DaemonSets) numbering a node's GPUs
apart have both served it longer than that hour, as a scraping Prometheus stores them.

The story (30 s scrapes, 2 hours, written into a real Prometheus with the staleness markers its scrape loop writes):
node n1 (a `node` label), GPUs A, B, C; one exporter numbers them A, B, C at 0, 1, 2 and is scraped 5 s into each
interval, the other C, A, B, scraped 20 s in, both throughout. Both copies of each GPU hold a sample within the
look-back and as many samples within the hour: ranked by those alone they tied, each GPU's index taken as Prometheus
met its copies. Measured at the test's 27 instants: A and C both named at index 0 at 18 of them (two GPUs under one
alert label set), the one numbering at 5, the other at 4. Ties now fall by each target's newest sample at the hour's
aligned step (its scrape phase: the same at every evaluation): the second numbering at all 27.
"""

from __future__ import annotations

from generator import promql
from generator.project import load_project
from tests.support.prometheus_server import written_fixture
from tests.support.scraped_gpus import scraped

SPAN, STEP = 7200, 30
WATTS = {"A": 300, "B": 500, "C": 700}


def _uuid(name: str) -> str:
    return f"GPU-{ord(name):08x}-5d3e-0a2f-91c4-7e20b6{ord(name):06x}"


def _story(start: int):
    def held(order: str):
        return lambda t: [({"gpu": str(index), "UUID": _uuid(name), "Hostname": "n1", "node": "n1"}, WATTS[name])
                          for index, name in enumerate(order)]
    return scraped(start, [("10.0.1.5", 5, held("ABC")), ("10.0.1.6", 20, held("CAB"))], SPAN, STEP)


both = written_fixture("alert-index-two-daemonsets", _story, SPAN, STEP)


def test_each_gpu_is_named_at_one_index_of_one_numbering_at_every_evaluation(both):
    """At 27 instants a minute apart in the second hour (each at another second of the scrape interval, but the two an
    exporter is scraped at), each GPU is named at one index, the same at every instant, and no two GPUs at one: one
    exporter's numbering."""
    prometheus, start = both
    labels = load_project().settings.labels
    naming = promql.gpus_named(("DCGM_FI_DEV_POWER_USAGE",), [], "1h", "5s", labels, one_index=True)
    names = {_uuid(name): name for name in WATTS}
    seen = []
    for k in range(29):
        at = start + SPAN - 1800 + 60 * k + (k * 7) % 30
        if (at - start) % STEP in (5, 20):  # a window's edge on an exporter's scrape: its hour holds 121 samples
            continue
        seen.append({names[s["metric"][promql.GPU_LABEL]]: s["metric"]["gpu"] for s in prometheus.query(naming, at=at)})
    assert len(seen) > 20
    assert all(indexes == seen[0] for indexes in seen), seen
    assert sorted(seen[0].values()) == ["0", "1", "2"], seen[0]

"""Fleet rules of a counter (the energy counter's increase and rate summed over the fleet) through
test_exporter_overlap_long_and_unnamed.py's rollouts, as a scraping Prometheus stores them: three nodes of 3 GPUs,
each old exporter scraped at 0 s of each interval, each new one from ROLLOUT, 11 s into each interval, numbering the
GPUs apart (C, A, B for A, B, C at indexes 0, 1, 2). n1 and n3 with a `node` label (n1's exporters overlapping 8
intervals, n3's 4), n2 through a scrape path without one, its old exporter writing its own pod's name into
`Hostname`, its new one the node into `hostname` (4 intervals). Both exporters read one device counter per GPU: each
GPU's DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION grows by its watts (4,500 W over the fleet) times 1,000 mJ a second.
"""

from __future__ import annotations

import pytest

from generator.render.alarms import period_value
from tests.support.projects import defined_project
from tests.support.prometheus_server import STALE, written_fixture

SPAN, STEP, ROLLOUT, NEW_PHASE = 3600, 30, 1800, 11
WATTS = {"A": 300, "B": 500, "C": 700, "D": 200, "E": 400, "F": 600, "G": 100, "H": 800, "I": 900}
EXPORTER_POD = "nvidia-dcgm-exporter-x7k2p"
# (node label, host label and value, address, phase, GPUs at 0, 1, 2, first scrape, last scrape)
EXPORTERS = (({"node": "n1"}, ("Hostname", "n1"), "10.0.1.5", 0, "ABC", 0, ROLLOUT + 7 * STEP),
             ({"node": "n1"}, ("Hostname", "n1"), "10.0.1.6", NEW_PHASE, "CAB", ROLLOUT, SPAN),
             ({}, ("Hostname", EXPORTER_POD), "10.0.2.5", 0, "DEF", 0, ROLLOUT + 3 * STEP),
             ({}, ("hostname", "n2"), "10.0.2.6", NEW_PHASE, "FDE", ROLLOUT, SPAN),
             ({"node": "n3"}, ("Hostname", "n3"), "10.0.3.5", 0, "GHI", 0, ROLLOUT + 3 * STEP),
             ({"node": "n3"}, ("Hostname", "n3"), "10.0.3.6", NEW_PHASE, "IGH", ROLLOUT, SPAN))


def _uuid(name: str) -> str:
    """The UUID of the GPU `name` as NVIDIA writes it (nvidia-smi -L)."""
    return f"GPU-{ord(name):08x}-5d3e-0a2f-91c4-7e20b6{ord(name):06x}"


def _scraped(start: int) -> dict[tuple, list[tuple[float, str]]]:
    """Each exporter's energy series from its first scrape to its last, then a staleness marker for each."""
    series: dict[tuple, list[tuple[float, str]]] = {}
    for node, host, address, phase, order, first, last in EXPORTERS:
        before: set[tuple] = set()
        for t in range(0, SPAN + 1, STEP):
            at, now = start + t + phase, set()
            for index, name in enumerate(order if first <= t <= last else ()):
                labels = tuple(sorted({"__name__": "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "device": f"nvidia{index}",
                                       "modelName": "NVIDIA L4", "instance": f"{address}:9400", "job": "gpu-metrics",
                                       "gpu": str(index), "UUID": _uuid(name), host[0]: host[1], **node}.items()))
                series.setdefault(labels, []).append((at, str(WATTS[name] * 1000 * (at - start + 100_000))))
                now.add(labels)
            for labels in before - now:
                series[labels].append((at, STALE))
            before = now
    return series


rolled = written_fixture("fleet-counter-rollout-apart", _scraped, SPAN, STEP)

ALARMS = """\
from generator.model import Alarm, Condition, Query

ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"


def alarms(ctx):
    yield Alarm("fleet-energy-1m", "Fleet energy", Condition(Query(ENERGY, "sum", (), as_increase=True), ">", 1),
                severity="warning", scope="fleet", period_seconds=60, description="d.", runbook="r.")
    yield Alarm("fleet-energy-5m", "Fleet energy", Condition(Query(ENERGY, "sum", (), as_increase=True), ">", 1),
                severity="warning", scope="fleet", period_seconds=300, description="d.", runbook="r.")
    yield Alarm("fleet-energy-rate", "Fleet energy rate", Condition(Query(ENERGY, "sum", ()), ">", 1),
                severity="warning", scope="fleet", period_seconds=300, description="d.", runbook="r.")
"""
TRUTH = {"fleet-energy-1m": 4500 * 1000 * 60, "fleet-energy-5m": 4500 * 1000 * 300, "fleet-energy-rate": 4500 * 1000}


@pytest.fixture(scope="module")
def fleet_rules(tmp_path_factory):
    project = defined_project(tmp_path_factory.mktemp("fleet"), alarms=ALARMS)
    return {alarm.id: period_value(alarm, project.catalog, project.settings) for alarm in project.alarms}


def test_before_the_rollouts_the_fleets_energy_is_the_truth(rolled, fleet_rules):
    """A minute before the rollouts each rule reads the fleet's energy: 270,000,000 and 1,350,000,000 mJ over 1 and 5
    minutes, 4,500,000 mJ/s."""
    prometheus, start = rolled
    values = {name: [float(s["value"][1]) for s in prometheus.query(expr, at=start + ROLLOUT - 60)]
              for name, expr in fleet_rules.items()}
    assert values == {name: [float(truth)] for name, truth in TRUTH.items()}


@pytest.mark.xfail(strict=True, reason="a fleet rule of a counter reads a GPU's copies per UUID and index: two "
                                       "exporters numbering a node's GPUs apart are two counters of each GPU")
def test_a_fleet_rule_of_a_counter_reads_each_gpu_once_through_rollouts_numbering_apart(rolled, fleet_rules):
    """Every 30 s from 60 s before the rollouts to 600 s after, each rule within 5 % of the fleet's energy. Measured
    (every 10 s): the 1-minute increase 1.5 to 2.0 times it from 50 to 260 s after the rollouts, the 5-minute increase
    up to 1.47 times to 480 s, the 5-minute rate up to 1.52 times to 480 s: while the old and the new exporter serve
    a GPU under two indexes (`gpu`), its counter is read as two (promql._Merge.physical keys a counter's copies by
    UUID and index), with a `node` label or without. A fleet energy alarm fires on half again the energy."""
    prometheus, start = rolled
    wrong = {}
    for after in range(-60, 601, 30):
        values = {name: [float(s["value"][1]) for s in prometheus.query(expr, at=start + ROLLOUT + after)]
                  for name, expr in fleet_rules.items()}
        if not all(len(values[name]) == 1 and abs(values[name][0] / truth - 1) <= 0.05
                   for name, truth in TRUTH.items()):
            wrong[after] = {name: [round(v / TRUTH[name], 3) for v in each] for name, each in values.items()}
    assert not wrong, wrong

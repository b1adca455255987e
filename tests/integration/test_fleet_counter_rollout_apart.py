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
from tests.support.counter_rollout import ROLLOUT, SPAN, STEP, counters_scraped
from tests.support.projects import defined_project
from tests.support.prometheus_server import written_fixture


def _scraped(start: int) -> dict[tuple, list[tuple[float, str]]]:
    """Each exporter's energy series from its first scrape to its last, then a staleness marker for each."""
    return counters_scraped(start, {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 1000})


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

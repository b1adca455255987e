"""Fleet rules of a counter (the energy counter's increase and rate summed over the fleet) through
test_exporter_overlap_long_and_unnamed.py's rollouts, as a scraping Prometheus stores them: three nodes of 3 GPUs,
each old exporter scraped at 0 s of each interval, each new one from ROLLOUT, 11 s into each interval, numbering the
GPUs apart (C, A, B for A, B, C at indexes 0, 1, 2). n1 and n3 with a `node` label (n1's exporters overlapping 8
intervals, n3's 4), n2 through a scrape path without one, its old exporter writing its own pod's name into
`Hostname`, its new one the node into `hostname` (4 intervals). Both exporters read one device counter per GPU: each
GPU's DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION grows by its watts (4,500 W over the fleet) times 1,000 mJ a second.
Beside it the same rollouts with the new exporters numbering the GPUs alike (A, B, C), the rollout a fleet rule of a
counter reads as one counter per GPU already.
"""

from __future__ import annotations

import pytest

from tests.support.counter_rollout import ALIKE, ROLLOUT, SPAN, STEP, counters_scraped, fleet_counter_rules
from tests.support.prometheus_server import written_fixture


def _scraped(start: int) -> dict[tuple, list[tuple[float, str]]]:
    """Each exporter's energy series from its first scrape to its last, then a staleness marker for each."""
    return counters_scraped(start, {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 1000})


rolled = written_fixture("fleet-counter-rollout-apart", _scraped, SPAN, STEP)
alike = written_fixture("fleet-counter-rollout-alike",
                        lambda start: counters_scraped(start, {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 1000}, ALIKE),
                        SPAN, STEP)

TRUTH = {"fleet-energy-1m": 4500 * 1000 * 60, "fleet-energy-5m": 4500 * 1000 * 300, "fleet-energy-rate": 4500 * 1000}


@pytest.fixture(scope="module")
def fleet_rules(tmp_path_factory):
    return fleet_counter_rules(tmp_path_factory.mktemp("fleet"))


def test_before_the_rollouts_the_fleets_energy_is_the_truth(rolled, fleet_rules):
    """A minute before the rollouts each rule reads the fleet's energy: 270,000,000 and 1,350,000,000 mJ over 1 and 5
    minutes, 4,500,000 mJ/s."""
    prometheus, start = rolled
    values = {name: [float(s["value"][1]) for s in prometheus.query(expr, at=start + ROLLOUT - 60)]
              for name, expr in fleet_rules.items()}
    assert values == {name: [float(truth)] for name, truth in TRUTH.items()}


def _values(prometheus, at: int, rules: dict[str, str]) -> dict[str, list[float]]:
    return {name: [float(s["value"][1]) for s in prometheus.query(expr, at=at)] for name, expr in rules.items()}


def test_a_fleet_rule_of_a_counter_reads_each_gpu_once_through_rollouts_numbering_apart(rolled, alike, fleet_rules):
    """Every 10 s from 60 s before the rollouts to 600 s after, each rule reads what it reads where the new exporters
    number the GPUs alike, and while both exporters serve every GPU (30 to 120 s after) within 1.5 % of the fleet's
    energy. A GPU of a UUID of NVIDIA's form is one counter whatever index its copies give it (promql.unindexed): keyed
    by UUID and index, the 1-minute increase read 1.5 to 2.0 times the fleet's energy from 50 to 260 s after the
    rollouts, the 5-minute increase up to 1.47 times and the rate up to 1.52 times to 480 s, with a `node` label or
    without. (Where they number alike, a period holding the switch to the new exporter's readings reads the GPU's
    growth between the readings it holds, its scrapes 11 s later: the 1-minute increase 0.79 of the fleet's energy at
    150 s, the 5-minute one and the rate, its increase over 300 s, 0.94 to 1.04 to 480 s.)"""
    (prometheus, start), (twin, twin_start) = rolled, alike
    wrong = {}
    for after in range(-60, 601, 10):
        values = _values(prometheus, start + ROLLOUT + after, fleet_rules)
        expected = _values(twin, twin_start + ROLLOUT + after, fleet_rules)
        if not all(len(values[name]) == 1 and values[name][0] == pytest.approx(expected[name][0], rel=1e-9)
                   for name in TRUTH):
            wrong[after] = {name: (values[name], expected[name]) for name in TRUTH}
        if 30 <= after <= 120 and not all(abs(values[name][0] / truth - 1) <= 0.015 for name, truth in TRUTH.items()):
            wrong[after] = {name: round(values[name][0] / truth, 3) for name, truth in TRUTH.items()}
    assert not wrong, wrong

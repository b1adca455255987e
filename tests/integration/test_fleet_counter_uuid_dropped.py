"""Fleet rules of a counter (the energy counter's increase and rate summed over the fleet) through a rollout whose new
exporter writes no UUID label, as a scraping Prometheus stores them: the counter twin of
test_fleet_rule_uuid_dropped.py, whose gauge rules read each GPU once.

The story (30 s scrapes, 1 hour, written into a real Prometheus with the staleness markers its scrape loop writes):
node n1 (a `node` label), 3 GPUs A, B, C at indexes 0, 1, 2 (300, 500, 700 W: the fleet's energy grows 1,500,000 mJ a
second). The old exporter writes each GPU's UUID (of NVIDIA's form), scraped at 0 s of each interval to ROLLOUT + 90;
the new one, from ROLLOUT, 11 s into each interval, writes no UUID (the same indexes). Both read one device counter per
GPU (its watts x 1,000 mJ a second since long before the story).
"""

from __future__ import annotations

import pytest

from tests.support.counter_rollout import ROLLOUT, SPAN, STEP, counters_scraped, fleet_counter_rules
from tests.support.prometheus_server import written_fixture

NEW_PHASE = 11
# n1 (a `node` label): the old exporter writes each GPU's UUID, the new one none (the same indexes)
EXPORTERS = (({"node": "n1"}, ("Hostname", "n1"), "10.0.1.5", 0, "ABC", 0, ROLLOUT + 3 * STEP),
             ({"node": "n1"}, ("Hostname", "n1"), "10.0.1.6", NEW_PHASE, "ABC", ROLLOUT, SPAN))
dropped = written_fixture("fleet-counter-uuid-dropped", lambda start: counters_scraped(
    start, {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 1000}, EXPORTERS, frozenset({"10.0.1.6"})), SPAN, STEP)
TRUTH = {"fleet-energy-1m": 1500 * 1000 * 60, "fleet-energy-5m": 1500 * 1000 * 300, "fleet-energy-rate": 1500 * 1000}


@pytest.fixture(scope="module")
def fleet_rules(tmp_path_factory):
    return fleet_counter_rules(tmp_path_factory.mktemp("fleet"))


def _ratios(prometheus, at: int, rules: dict[str, str]) -> dict[str, list[float]]:
    return {name: [round(float(s["value"][1]) / TRUTH[name], 2) for s in prometheus.query(expr, at=at)]
            for name, expr in rules.items()}


def test_before_the_rollout_the_fleets_energy_is_the_truth(dropped, fleet_rules):
    prometheus, start = dropped
    assert _ratios(prometheus, start + ROLLOUT - 60, fleet_rules) == {name: [1.0] for name in TRUTH}


# what the rules read today (measured): a GPU's old copies (UUID) are one counter keyed by UUID (promql.unindexed), its
# new ones (no UUID) another keyed by node and index, two counters while both exporters serve it
TWICE = ("each GPU two counters while both exporters serve it: the 1-minute increase reads 2.0 times the fleet's energy "
         "at 90 and 120 s after the rollout (1.5 at 60 s), the 5-minute one and the rate (its increase over 300 s) 1.2 "
         "to 1.4 times from 90 to 300 s")


@pytest.mark.xfail(strict=True, reason=TWICE)
def test_a_fleet_rule_of_a_counter_reads_each_gpu_once_through_a_rollout_dropping_the_uuid(dropped, fleet_rules):
    """At 90, 120, 180 and 300 s after the rollout each rule reads the fleet's energy within 5 % (a period holding the
    switch to the new exporter's readings, 11 s later, may read a little less: test_fleet_counter_rollout_apart.py)."""
    prometheus, start = dropped
    ratios = {after: _ratios(prometheus, start + ROLLOUT + after, fleet_rules) for after in (90, 120, 180, 300)}
    assert all(len(got) == 1 and 0.95 <= got[0] <= 1.05 for row in ratios.values() for got in row.values()), ratios

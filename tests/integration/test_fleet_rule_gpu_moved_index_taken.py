"""A fleet rule's period values (a Prometheus of one cluster) while a GPU moves between nodes to an index other than
its old one, the node it moves to holding another GPU at its old index: 30 s scrapes over an hour, each node's
exporter scraped at 0 s of each interval under gpudash's scrape job (a `node` label).

* GPU J at n5 index 0 to ROLLOUT - 30 s, at n6 index 1 from ROLLOUT; K at n5 index 1 and L at n6 index 0 all along
  (each node's exporter restarted at ROLLOUT: a new target).

Each instant the fleet holds 3 GPUs (J 350 W, K 450 W, L 550 W: 1,350 W, mean 450 W)."""

from __future__ import annotations

import pytest

from tests.support.fleet_rule import fleet_period_values
from tests.support.prometheus_server import written_fixture
from tests.support.scraped_gpus import scraped

SPAN, STEP, ROLLOUT = 3600, 30, 1800
WATTS = {"J": 350, "K": 450, "L": 550}


def _uuid(name: str) -> str:
    return f"GPU-{ord(name):08x}-5d3e-0a2f-91c4-7e20b6{ord(name):06x}"


def _scraped(start: int):
    def held(node: str, gpus: dict[int, str], first: int, last: int):
        return lambda t: [({"gpu": str(index), "UUID": _uuid(name), "Hostname": node, "node": node}, WATTS[name])
                          for index, name in gpus.items()] if first <= t <= last else []
    return scraped(start, (("10.0.5.5", 0, held("n5", {0: "J", 1: "K"}, 0, ROLLOUT - STEP)),
                           ("10.0.5.6", 0, held("n5", {1: "K"}, ROLLOUT, SPAN)),
                           ("10.0.6.5", 0, held("n6", {0: "L"}, 0, ROLLOUT - STEP)),
                           ("10.0.6.6", 0, held("n6", {0: "L", 1: "J"}, ROLLOUT, SPAN))), SPAN, STEP)


moved = written_fixture("fleet-rule-gpu-moved-index-taken", _scraped, SPAN, STEP)


@pytest.fixture(scope="module")
def fleet_rules(tmp_path_factory):
    return fleet_period_values(tmp_path_factory.mktemp("fleet"))


@pytest.mark.parametrize("after", [-60, 15, 45, 120, 250])
def test_a_fleet_rule_counts_a_gpu_moved_to_another_nodes_index_once_beside_the_gpu_at_its_old_index(
        moved, fleet_rules, after):
    """Over 1- and 5-minute periods holding the move: 3 GPUs, 1,350 W, mean 450 W. Keyed by node and index alone the
    rules counted J twice (at n5 0 and n6 1) over such periods: 'fleet-gpus' 4, 'fleet-power' 1,700 W, 'fleet-mean'
    425 at 15 and 45 s after the move, the 5-minute ones to 250 s; put under the node its newest copy names
    (promql.newest_nodes) J is one GPU, its old copy at n6 index 0 not merged with L there."""
    prometheus, start = moved
    values = {name: [float(s["value"][1]) for s in prometheus.query(expr, at=start + ROLLOUT + after)]
              for name, expr in fleet_rules.items()}
    assert values == {"fleet-power": [1350.0], "fleet-gpus": [3.0], "fleet-mean": [450.0],
                      "cluster-power-5m": [1350.0], "fleet-gpus-5m": [3.0]}

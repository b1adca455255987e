"""A fleet rule (a gauge grouped by nothing or by cluster) through a rollout whose new exporter writes no UUID label,
and through a GPU swapped at one node and index, as a scraping Prometheus stores them: what the fix of the fleet
rules' double count in test_exporter_overlap_long_and_unnamed.py (an old exporter named like its pod, a new one
numbering apart: each GPU under the node its newest copy names, promql.newest_nodes) keeps.

The story (30 s scrapes, 1 hour, written into a real Prometheus with the staleness markers its scrape loop writes):
node n1 (a `node` target label), 3 GPUs A, B, C at indexes 0, 1, 2 (300, 500, 700 W). The old exporter writes each
GPU's UUID (of NVIDIA's form), scraped at 0 s of each interval to ROLLOUT + 90; the new one, from ROLLOUT, 11 s into
each interval, writes no UUID (the same indexes, 10 W more). A GPU's old copies are named by its UUID, its new ones by
the node (promql's GPU_LABEL): they share only the node and index. Keying a fleet rule's per-GPU values by UUID where
the UUID is of NVIDIA's form (as the overview's fleet stats merge copies, promql.one_per_uuid) puts the old and the
new copies of each GPU in two series of one period: measured with such a key, 6 GPUs and 3,030 W from 15 to 150 s
after the rollout over 1-minute periods, to ~390 s over 5-minute ones.
"""

from __future__ import annotations

import pytest

from tests.support.fleet_rule import fleet_period_values
from tests.support.prometheus_server import written_fixture
from tests.support.scraped_gpus import scraped

SPAN, STEP, ROLLOUT, NEW_PHASE = 3600, 30, 1800, 11
WATTS = {"A": 300, "B": 500, "C": 700, "D": 200}


def _uuid(name: str) -> str:
    """The UUID of the GPU `name` as NVIDIA writes it (nvidia-smi -L)."""
    return f"GPU-{ord(name):08x}-5d3e-0a2f-91c4-7e20b6{ord(name):06x}"


def _scraped(start: int) -> dict[tuple, list[tuple[float, str]]]:
    def held(uuid: bool, more: int, first: int, last: int):
        return lambda t: [({"gpu": str(index), **({"UUID": _uuid(name)} if uuid else {}), "Hostname": "n1",
                            "node": "n1"}, WATTS[name] + more)
                          for index, name in enumerate("ABC")] if first <= t <= last else []
    return scraped(start, [("10.0.1.5", 0, held(True, 0, 0, ROLLOUT + 3 * STEP)),
                           ("10.0.1.6", NEW_PHASE, held(False, 10, ROLLOUT, SPAN))], SPAN, STEP)


def _swapped(start: int) -> dict[tuple, list[tuple[float, str]]]:
    def held(names: str, first: int, last: int):
        return lambda t: [({"gpu": str(index), "UUID": _uuid(name), "Hostname": "n1", "node": "n1"}, WATTS[name])
                          for index, name in enumerate(names)] if first <= t <= last else []
    return scraped(start, [("10.0.1.5", 0, held("ABC", 0, ROLLOUT)),
                           ("10.0.1.6", 0, held("DBC", ROLLOUT + 2 * STEP, SPAN))], SPAN, STEP)


dropped = written_fixture("fleet-rule-uuid-dropped", _scraped, SPAN, STEP)
swapped = written_fixture("fleet-rule-gpu-swapped", _swapped, SPAN, STEP)

@pytest.fixture(scope="module")
def fleet_rules(tmp_path_factory):
    return fleet_period_values(tmp_path_factory.mktemp("fleet"))


def test_a_fleet_rule_counts_each_gpu_once_through_a_rollout_dropping_the_uuid(dropped, fleet_rules):
    """Every 5 s from 60 s before the rollout to 400 s after, each fleet rule's period value (a Prometheus of one
    cluster; its statistic, as the rule evaluates it), grouped by nothing or by cluster, over 1- and 5-minute periods:
    3 GPUs, the fleet's power 1,500 to 1,530 W, its mean per GPU 500 to 510 W. The old copies (UUID) and the new ones
    (no UUID) of a GPU are one GPU: its node and index (measured so)."""
    prometheus, start = dropped
    wrong = {}
    for after in range(-60, 401, 5):
        values = {name: [float(s["value"][1]) for s in prometheus.query(expr, at=start + ROLLOUT + after)]
                  for name, expr in fleet_rules.items()}
        (gpus,), (gpus_5m,), (power,), (power_5m,), (mean,) = (
            values["fleet-gpus"], values["fleet-gpus-5m"], values["fleet-power"], values["cluster-power-5m"],
            values["fleet-mean"])
        if not (gpus == gpus_5m == 3.0 and 1500.0 <= round(power, 6) <= 1530.0
                and 1500.0 <= round(power_5m, 6) <= 1530.0 and 500.0 <= round(mean, 6) <= 510.0):
            wrong[after] = values
    assert not wrong, wrong


def test_a_fleet_rule_counts_a_gpu_swapped_at_one_node_and_index_once(swapped, fleet_rules):
    """Every 3 s from 60 s before the swap to 400 s after, each fleet rule's period value, over 1- and 5-minute
    periods: 3 GPUs (n1's indexes), the fleet's power 1,400 W (D, B, C) to 1,500 W (A, B, C), between them while a
    period holds both A's and D's readings (1,450 W at 60 s over a minute), its mean 466.7 to 500 W."""
    prometheus, start = swapped
    wrong = {}
    for after in range(-60, 401, 3):
        values = {name: [round(float(s["value"][1]), 6) for s in prometheus.query(expr, at=start + ROLLOUT + after)]
                  for name, expr in fleet_rules.items()}
        (gpus,), (gpus_5m,), (power,), (power_5m,), (mean,) = (
            values["fleet-gpus"], values["fleet-gpus-5m"], values["fleet-power"], values["cluster-power-5m"],
            values["fleet-mean"])
        if not (gpus == gpus_5m == 3.0 and 1400.0 <= power <= 1500.0 and 1400.0 <= power_5m <= 1500.0
                and 466.666 <= mean <= 500.0):
            wrong[after] = values
    assert not wrong, wrong

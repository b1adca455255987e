"""A fleet rule (a gauge grouped by nothing or by cluster) where a GPU of a UUID of NVIDIA's form, put under the index
its newest copy names, meets another GPU at that index: one the newest exporter does not serve, or one without a UUID
of that form (kept at each copy's own index), as a scraping Prometheus stores them.

The stories (30 s scrapes, 1 hour, written into a real Prometheus with the staleness markers its scrape loop writes):
node n1 (a `node` label on every series), GPUs A, B, C (300, 500, 700 W) at indexes 0, 1, 2 on the old exporter, to
ROLLOUT + 240; a new exporter from ROLLOUT.

- `lacking`: the new exporter serves A and C alone, at 0 and 1, its scrapes (20 s into each interval) newer than the
  old one's (5 s): while both serve, the old exporter still reads B every scrape: 3 GPUs, 1,500 W, 500 W a GPU.
  C is put at index 1, where B's only copy is: 'fleet-gpus' read 2 and 'fleet-power' 1,000 W from 45 to 240 s after
  the rollout (each copy at its own index: 3 GPUs, 1,567 to 1,633 W, the pre-existing slot max of two GPUs).
- `mixed`: B's UUID is not of NVIDIA's form (a fake GPU operator's), the new exporter (11 s into each interval)
  numbers C, A, B. After the old exporter's last scrape A is put at the new copy's index 1, where B's old copy is:
  'fleet-power' 1,550 to 1,600 W for 1,500 over 1-minute periods from 270 to 300 s, 'cluster-power-5m' 1,518 to
  1,605 W to 540 s (each copy at its own index: 1,500 exact).

Pinned strict: the values the rules should read.
"""

from __future__ import annotations

import pytest

from tests.support.fleet_rule import fleet_period_values
from tests.support.prometheus_server import written_fixture
from tests.support.scraped_gpus import scraped

SPAN, STEP, ROLLOUT = 3600, 30, 1800
WATTS = {"A": 300, "B": 500, "C": 700}
TRUTH = {"fleet-power": [1500.0], "fleet-gpus": [3.0], "fleet-mean": [500.0], "cluster-power-5m": [1500.0],
         "fleet-gpus-5m": [3.0]}


def _uuid(name: str, nvidia: bool = True) -> str:
    return f"GPU-{ord(name):08x}-5d3e-0a2f-91c4-7e20b6{ord(name):06x}" if nvidia else f"fake-gpu-{name.lower()}"


def _story(new_order: str, old_phase: int, new_phase: int, nvidia: str):
    def story(start: int):
        def held(order: str, first: int, last: int):
            return lambda t: [({"gpu": str(index), "UUID": _uuid(name, name in nvidia), "Hostname": "n1",
                                "node": "n1"}, WATTS[name])
                              for index, name in enumerate(order)] if first <= t <= last else []
        return scraped(start, [("10.0.1.5", old_phase, held("ABC", 0, ROLLOUT + 8 * STEP)),
                               ("10.0.1.6", new_phase, held(new_order, ROLLOUT, SPAN))], SPAN, STEP)
    return story


lacking = written_fixture("fleet-rule-slot-lacking", _story("AC", 5, 20, "ABC"), SPAN, STEP)
mixed = written_fixture("fleet-rule-slot-mixed", _story("CAB", 0, 11, "AC"), SPAN, STEP)


@pytest.fixture(scope="module")
def fleet_rules(tmp_path_factory):
    return fleet_period_values(tmp_path_factory.mktemp("fleet"))


def _wrong(prometheus, start: int, rules: dict[str, str], afters, names) -> dict:
    wrong = {}
    for after in afters:
        read = {name: [round(float(sample["value"][1]), 2)
                       for sample in prometheus.query(rules[name], at=start + ROLLOUT + after)] for name in names}
        if read != {name: TRUTH[name] for name in names}:
            wrong[after] = read
    return wrong


@pytest.mark.xfail(strict=True, reason="a GPU the newest exporter does not serve shares its index with the GPU the "
                   "newest copy names there: 2 GPUs and 1,000 W for 3 and 1,500 while the old exporter reads it")
def test_a_gpu_only_the_old_exporter_serves_is_counted_while_it_reads(lacking, fleet_rules):
    """Every 15 s from 45 to 240 s after the rollout every rule reads 3 GPUs, 1,500 W, 500 W a GPU."""
    prometheus, start = lacking
    assert not _wrong(prometheus, start, fleet_rules, range(45, 241, 15), TRUTH), "read wrong"


@pytest.mark.xfail(strict=True, reason="a GPU of NVIDIA's UUID form put at its newest copy's index meets the old copy "
                   "of a GPU without one there: 1,550 to 1,600 W for 1,500")
def test_a_gpu_without_nvidias_uuid_form_is_not_read_in_anothers_slot(mixed, fleet_rules):
    """Every 15 s from 255 to 540 s after the rollout (the old exporter's readings in the periods' steps) the power
    rules read 1,500 W and the counts 3 GPUs."""
    prometheus, start = mixed
    assert not _wrong(prometheus, start, fleet_rules, range(255, 541, 15), TRUTH), "read wrong"


def test_before_the_rollout_every_rule_reads_the_truth(lacking, mixed, fleet_rules):
    """Every 30 s in the 5 minutes before the rollout, both stories read 3 GPUs, 1,500 W, 500 W a GPU."""
    for prometheus, start in (lacking, mixed):
        assert not _wrong(prometheus, start, fleet_rules, range(-300, 1, 30), TRUTH)

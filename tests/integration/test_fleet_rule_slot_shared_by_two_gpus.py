"""A fleet rule (a gauge grouped by nothing or by cluster) where a GPU of a UUID of NVIDIA's form, put under the index
its chosen copy names, could meet another GPU at that index: one the newest exporter does not serve, one without a
UUID of that form (kept at each copy's own index), or one whose copy was chosen from the other exporter (two exporters
scraped at one millisecond for longer than INCUMBENT_SINCE, so that their copies tie), as a scraping Prometheus
stores them.

The stories (30 s scrapes, 1 hour, written into a real Prometheus with the staleness markers its scrape loop writes):
node n1 (a `node` label on every series), GPUs A, B, C (300, 500, 700 W) at indexes 0, 1, 2 on the old exporter, to
ROLLOUT + 240 (`tied`: ROLLOUT + 900); a new exporter from ROLLOUT.

- `lacking`: the new exporter serves A and C alone, at 0 and 1, its scrapes (20 s into each interval) newer than the
  old one's (5 s): while both serve, the old exporter still reads B every scrape: 3 GPUs, 1,500 W, 500 W a GPU.
  With C put at index 1, where B's only copy is, 'fleet-gpus' read 2 and 'fleet-power' 1,000 W from 45 to 240 s after
  the rollout (each copy at its own index: 3 GPUs, 1,567 to 1,633 W). B is now a slot of its own: the old exporter
  numbers apart from where the chosen copies are (C at 2 there, at 1 on the new one: promql.newest_nodes).
- `mixed`: B's UUID is not of NVIDIA's form (a fake GPU operator's), the new exporter (11 s into each interval)
  numbers C, A, B. After the old exporter's last scrape A was put at the new copy's index 1, where B's old copy is:
  'fleet-power' 1,550 to 1,600 W for 1,500 over 1-minute periods from 270 to 300 s, 'cluster-power-5m' 1,518 to
  1,605 W to 540 s. B's copy on the exporter numbering apart is now read through its other copy alone.
- `tied`: the new exporter numbers C, A, B, both exporters scraped at the same millisecond (0 s) for 15 minutes: their
  copies' tie-break (fewest samples within INCUMBENT_SINCE) ties from 10 minutes on, each GPU's copy then taken as
  Prometheus meets them: 2 GPUs and 1,200 W for 3 and 1,500 from 580 s to the old exporter's end. A GPU whose copy is
  taken from the exporter numbering apart is now a slot of its own.
"""

from __future__ import annotations

import pytest

from tests.support.fleet_rule import fleet_period_values, wrong_reads
from tests.support.prometheus_server import written_fixture
from tests.support.scraped_gpus import scraped

SPAN, STEP, ROLLOUT = 3600, 30, 1800
WATTS = {"A": 300, "B": 500, "C": 700}
TRUTH = {"fleet-power": [1500.0], "fleet-gpus": [3.0], "fleet-mean": [500.0], "cluster-power-5m": [1500.0],
         "fleet-gpus-5m": [3.0]}


def _uuid(name: str, nvidia: bool = True) -> str:
    return f"GPU-{ord(name):08x}-5d3e-0a2f-91c4-7e20b6{ord(name):06x}" if nvidia else f"fake-gpu-{name.lower()}"


def _story(new_order: str, old_phase: int, new_phase: int, nvidia: str, old_until: int = ROLLOUT + 8 * STEP):
    def story(start: int):
        def held(order: str, first: int, last: int):
            return lambda t: [({"gpu": str(index), "UUID": _uuid(name, name in nvidia), "Hostname": "n1",
                                "node": "n1"}, WATTS[name])
                              for index, name in enumerate(order)] if first <= t <= last else []
        return scraped(start, [("10.0.1.5", old_phase, held("ABC", 0, old_until)),
                               ("10.0.1.6", new_phase, held(new_order, ROLLOUT, SPAN))], SPAN, STEP)
    return story


lacking = written_fixture("fleet-rule-slot-lacking", _story("AC", 5, 20, "ABC"), SPAN, STEP)
mixed = written_fixture("fleet-rule-slot-mixed", _story("CAB", 0, 11, "AC"), SPAN, STEP)
tied = written_fixture("fleet-rule-slot-tied", _story("CAB", 0, 0, "ABC", ROLLOUT + 30 * STEP), SPAN, STEP)


@pytest.fixture(scope="module")
def fleet_rules(tmp_path_factory):
    return fleet_period_values(tmp_path_factory.mktemp("fleet"))


def _wrong(prometheus, start: int, rules: dict[str, str], afters, names) -> dict:
    return wrong_reads(prometheus, start + ROLLOUT, rules, afters, {name: TRUTH[name] for name in names})


def test_a_gpu_only_the_old_exporter_serves_is_counted_while_it_reads(lacking, fleet_rules):
    """Every 5 s from the rollout to 240 s after (the old exporter's last scrape 215 s after), every rule reads
    3 GPUs, 1,500 W, 500 W a GPU."""
    prometheus, start = lacking
    assert not _wrong(prometheus, start, fleet_rules, range(0, 241, 5), TRUTH), "read wrong"


def test_a_gpu_without_nvidias_uuid_form_is_not_read_in_anothers_slot(mixed, fleet_rules):
    """Every 5 s from the rollout to 600 s after (through the overlap, and the 5-minute periods holding the old
    exporter's readings to 540 s), every rule reads 3 GPUs, 1,500 W, 500 W a GPU."""
    prometheus, start = mixed
    assert not _wrong(prometheus, start, fleet_rules, range(0, 601, 5), TRUTH), "read wrong"


def test_two_exporters_scraped_at_one_millisecond_beyond_the_tie_break_count_each_gpu_once(tied, fleet_rules):
    """Every 5 s from the rollout to 1,260 s after (the copies tied from 600 s, the old exporter gone at 900 s, its
    readings in the 5-minute periods to 1,200 s), every rule reads 3 GPUs, 1,500 W, 500 W a GPU."""
    prometheus, start = tied
    assert not _wrong(prometheus, start, fleet_rules, range(0, 1261, 5), TRUTH), "read wrong"


def test_before_the_rollout_every_rule_reads_the_truth(lacking, mixed, tied, fleet_rules):
    """Every 30 s in the 5 minutes before the rollout, every story reads 3 GPUs, 1,500 W, 500 W a GPU."""
    for prometheus, start in (lacking, mixed, tied):
        assert not _wrong(prometheus, start, fleet_rules, range(-300, 1, 30), TRUTH)

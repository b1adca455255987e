"""A fleet rule (a gauge grouped by nothing or by cluster) through a rollout whose new exporter numbers a node's GPUs
apart, its scrapes landing in the same 5 s rule step as the old exporter's (a few seconds before them, or at the same
second), as a scraping Prometheus stores them.

The story (30 s scrapes, 1 hour, written into a real Prometheus with the staleness markers its scrape loop writes):
node n1, 3 GPUs A, B, C (300, 500, 700 W). The old exporter (Hostname its pod's name) holds them at indexes 0, 1, 2,
scraped at 0 s of each interval to ROLLOUT + 240; the new one (hostname n1), from ROLLOUT, at NEW_PHASE s of each
interval (27: 3 s before the old one's next scrape; 0: at the same second), holds C, A, B at 0, 1, 2. With `node`, both
exporters' samples carry a `node` label (n1); without, the node is each exporter's host label. The fleet holds 3 GPUs,
1,500 W, 500 W a GPU, at every instant.

Each 5 s rule step reads the samples that arrived within it, then the max per node and index (the slot). Each GPU put
under its newest copy's node but at each copy's own index, a slot held two GPUs at once where both exporters' scrapes
shared a step (index 0: A 300 W and C 700 W) and read the larger: 'fleet-power' 1,900 W for 1,500 and 'fleet-mean'
633.3 for 500 from 105 to 250 s after the rollout (1,700 W at 45 s), with a `node` label or without; at the same
second without one, 'fleet-gpus' 5 for 3 and 'fleet-power' up to 2,700 W (the newest copy's node a tie, taken per GPU).
"""

from __future__ import annotations

import pytest

from tests.support.fleet_rule import fleet_period_values
from tests.support.prometheus_server import written_fixture
from tests.support.scraped_gpus import scraped

SPAN, STEP, ROLLOUT = 3600, 30, 1800
WATTS = {"A": 300, "B": 500, "C": 700}
POD = "nvidia-dcgm-exporter-x7k2p"
TRUTH = {"fleet-power": [1500.0], "fleet-gpus": [3.0], "fleet-mean": [500.0], "cluster-power-5m": [1500.0],
         "fleet-gpus-5m": [3.0]}


def _uuid(name: str) -> str:
    return f"GPU-{ord(name):08x}-5d3e-0a2f-91c4-7e20b6{ord(name):06x}"


def _story(new_phase: int, node: bool):
    def story(start: int):
        def held(order: str, host: tuple[str, str], first: int, last: int):
            return lambda t: [({"gpu": str(index), "UUID": _uuid(name), host[0]: host[1],
                                **({"node": "n1"} if node else {})}, WATTS[name])
                              for index, name in enumerate(order)] if first <= t <= last else []
        return scraped(start, [("10.0.1.5", 0, held("ABC", ("Hostname", POD), 0, ROLLOUT + 8 * STEP)),
                               ("10.0.1.6", new_phase, held("CAB", ("hostname", "n1"), ROLLOUT, SPAN))], SPAN, STEP)
    return story


apart = written_fixture("fleet-rule-numbered-apart-same-step", _story(27, True), SPAN, STEP)
apart_unnamed = written_fixture("fleet-rule-numbered-apart-same-step-unnamed", _story(27, False), SPAN, STEP)
same_second = written_fixture("fleet-rule-numbered-apart-same-second", _story(0, True), SPAN, STEP)
same_second_unnamed = written_fixture("fleet-rule-numbered-apart-same-second-unnamed", _story(0, False), SPAN, STEP)


@pytest.fixture(scope="module")
def fleet_rules(tmp_path_factory):
    return fleet_period_values(tmp_path_factory.mktemp("fleet"))


@pytest.mark.parametrize("story", ["apart", "apart_unnamed", "same_second", "same_second_unnamed"])
def test_a_fleet_rule_reads_a_rollout_numbered_apart_whose_scrapes_share_a_rule_step_right(story, fleet_rules,
                                                                                         request):
    """Every 5 s from 60 s before the rollout to 600 s after (the old exporter gone at 240 s, the 5-minute periods
    holding it to 545 s), each fleet rule's period value over 1- and 5-minute periods: 3 GPUs, 1,500 W, 500 W a GPU.
    Each GPU of a UUID of NVIDIA's form is put under the node and index its newest copy names (the copy of the target
    that began last where two are scraped at one millisecond), so each step's slot holds one GPU."""
    prometheus, start = request.getfixturevalue(story)
    wrong = {}
    for after in range(-60, 601, 5):
        values = {name: [round(float(s["value"][1]), 6) for s in prometheus.query(expr, at=start + ROLLOUT + after)]
                  for name, expr in fleet_rules.items()}
        if values != TRUTH:
            wrong[after] = values
    assert not wrong, wrong

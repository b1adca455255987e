"""User rules of a counter (the energy counter's rate and increase summed over the fleet, and per node) through
tests/support/counter_rollout.py's rollouts, numbered apart and alike, with each new exporter serving a reading taken
20 s before its scrape: dcgm-exporter serves what it collected at its own interval (`-c`, 30 s by default), so the new
pod, scraped 11 s after the old one, serves a reading taken 9 s before the old pod's latest (f(S - 9) after f(S)): the
two copies of a GPU read out of scrape order while both serve it (n2's and n3's for 4 intervals, n1's for 8).

A rate read from the copies sampled at each 5 s step of the rule (one series per node the copies name) went down and
up at every scrape of the new pod, each step down a counter reset to rate(): the fleet's 5-minute rate read 250 to
1,530 times its energy from 30 to 300 s after the rollouts, the rate per node 340 to 1,700 times where the new
exporters number the GPUs alike (1.2 to 1.8 times numbered apart). A rule's rate is now its period's increase over
the period's seconds (promql._per_gpu: each exporter's copy held, the copies' own deltas where their merged reading
goes down), as CloudWatch's rate is its period's deltas over PERIOD().
"""

from __future__ import annotations

import pytest

from tests.support.counter_rollout import ALIKE, EXPORTERS, FLEET_COUNTER_ALARMS, ROLLOUT, SPAN, STEP, \
    counters_scraped
from tests.support.projects import defined_project
from tests.support.prometheus_server import written_fixture

ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
LAG = 20  # seconds a new exporter's reading is taken before its scrape

NODE_COUNTER_ALARMS = FLEET_COUNTER_ALARMS + """
    yield Alarm("node-energy-rate", "Node energy rate", Condition(Query(ENERGY, "sum", ("node",)), ">", 1),
                severity="warning", scope="cluster", period_seconds=300, description="d.", runbook="r.")
    yield Alarm("node-energy-5m", "Node energy", Condition(Query(ENERGY, "sum", ("node",), as_increase=True), ">", 1),
                severity="warning", scope="cluster", period_seconds=300, description="d.", runbook="r.")
"""


def _lagged(exporters: tuple):
    """The rollouts of `exporters` (EXPORTERS or ALIKE), each new exporter's readings taken LAG s before its scrape."""
    return lambda start: counters_scraped(start, {ENERGY: 1000}, exporters, lag=LAG)


apart = written_fixture("counter-rules-out-of-order-apart", _lagged(EXPORTERS), SPAN, STEP)
alike = written_fixture("counter-rules-out-of-order-alike", _lagged(ALIKE), SPAN, STEP)

# mJ (a second, for a rate) per node: n1 holds A, B, C (300 + 500 + 700 W), n2 D, E, F, n3 G, H, I; before the rollouts
# n2's GPUs are named by the old exporter's own pod's name (its Hostname: no `node` label on that scrape path)
NODE_WATTS = {"n1": 1500, "n2": 1200, "nvidia-dcgm-exporter-x7k2p": 1200, "n3": 1800}
SECONDS = {"fleet-energy-1m": 60, "fleet-energy-5m": 300, "fleet-energy-rate": 1, "node-energy-rate": 1,
           "node-energy-5m": 300}


@pytest.fixture(scope="module")
def counter_rules(tmp_path_factory) -> dict[str, str]:
    from generator.render.alarms import period_value

    project = defined_project(tmp_path_factory.mktemp("rules"), alarms=NODE_COUNTER_ALARMS)
    return {alarm.id: period_value(alarm, project.catalog, project.settings) for alarm in project.alarms}


def _read(prometheus, at: int, rules: dict[str, str]) -> dict[str, dict[str, float]]:
    """Each rule's values at `at` over its truth ({node or "fleet": value / truth})."""
    read = {}
    for name, expr in rules.items():
        values = {}
        for sample in prometheus.query(expr, at=at):
            node = sample["metric"].get("node", "fleet") if name.startswith("node") else "fleet"
            watts = 4500 if node == "fleet" else NODE_WATTS[node]
            values[node] = round(float(sample["value"][1]) / (watts * 1000 * SECONDS[name]), 4)
        read[name] = values
    return read


@pytest.mark.parametrize("story", ["apart", "alike"])
def test_counter_rules_read_the_truth_while_two_copies_read_out_of_scrape_order(story, request, counter_rules):
    """Every 10 s from 60 s before the rollouts to 120 s after (through n2's and n3's overlaps and most of n1's),
    every rule reads its truth within 0.5 %: the fleet's 1- and 5-minute energy and its rate (4,500 W), each node's
    rate and 5-minute energy (1,500, 1,200 and 1,800 W), one value per node."""
    prometheus, start = request.getfixturevalue(story)
    wrong = {}
    for after in range(-60, 121, 10):
        read = _read(prometheus, start + ROLLOUT + after, counter_rules)
        if any(len(values) != (1 if name.startswith("fleet") else 3) or
               any(abs(ratio - 1) > 0.005 for ratio in values.values()) for name, values in read.items()):
            wrong[after] = read
    assert not wrong, wrong


@pytest.mark.parametrize("story", ["apart", "alike"])
def test_a_rate_rule_is_its_periods_increase_over_its_seconds_after_the_copies_hand_over(story, request,
                                                                                          counter_rules):
    """Every 30 s from 120 to 600 s after the rollouts the rate (fleet and per node) is the 5-minute increase over
    300 s, and reads 0.87 to 1.0 of the truth: where a period holds a GPU's switch from the old copy's readings to the
    new one's (taken 20 s before its scrapes), it holds the growth up to the new copy's latest reading, 39 s short of
    the truth (the new copy's first reading after the switch, below the old copy's last, adds nothing; its next counts
    from the old copy's last); read from the copies sampled at each step, the fleet's rate read 1,140 to 1,530 times
    its energy to 300 s."""
    prometheus, start = request.getfixturevalue(story)
    wrong = {}
    for after in range(120, 601, 30):
        read = _read(prometheus, start + ROLLOUT + after, counter_rules)
        pairs = (("fleet-energy-rate", "fleet-energy-5m"), ("node-energy-rate", "node-energy-5m"))
        if any(read[rate] != read[increase] or not all(0.869 <= ratio <= 1.0 for ratio in read[rate].values())
               for rate, increase in pairs):
            wrong[after] = read
    assert not wrong, wrong


# The handover of each GPU from the old copy (readings taken at its scrapes) to the new one (readings taken `lag`
# seconds before its scrapes), through and after the old exporters' last scrapes (n2's and n3's at +90 s, n1's at
# +210 s): the 1- and 5-minute increases and the rate of the fleet, each node's rate and 5-minute increase, and the
# bundled pcie-replays alert's 5-minute replays (a node's GPUs summed: numbered apart, an index holds another GPU after
# the rollout), every 30 s from the rollout to 600 s after, over their truths.
REPLAYS = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
REPLAYS_PER_WATT = 1 / 10_000  # A (300 W) replays 0.03 a second, 9 per 5 minutes
# Each numbering at one lag while the handover reads short (a strict xfail): the lag's 0 and 28 s apart and alike
# read alike (0.937 / 0.843, the docstring below), and each story costs a Prometheus of its own. A fix is to be judged
# at every lag of each numbering.
HANDED = (("apart", 0), ("alike", 28))
HANDOVER_TOLERANCE = 0.02


def _handed_over(exporters: tuple, lag: int):
    return lambda start: counters_scraped(start, {ENERGY: 1000, REPLAYS: REPLAYS_PER_WATT}, exporters, lag=lag)


handover = {(story, lag): written_fixture(f"counter-handover-{story}-{lag}",
                                          _handed_over(EXPORTERS if story == "apart" else ALIKE, lag), SPAN, STEP)
            for story, lag in HANDED}
for (_story, _lag), _fixture in handover.items():
    globals()[f"handover_{_story}_{_lag}"] = _fixture


@pytest.fixture(scope="module")
def replays_rule() -> str:
    from generator.render.alarms import period_value
    from tests.support.projects import bundled_project

    project = bundled_project()
    (alarm,) = (alarm for alarm in project.alarms if alarm.id == "pcie-replays")
    return period_value(alarm, project.catalog, project.settings)


def _replays(prometheus, at: int, rule: str) -> dict[str, float]:
    """The pcie-replays alert's 5-minute replays summed per node, over the node's truth."""
    nodes: dict[str, float] = {}
    for sample in prometheus.query(rule, at=at):
        node = sample["metric"].get("node") or sample["metric"].get("Hostname") or sample["metric"].get("hostname")
        nodes[node] = nodes.get(node, 0) + float(sample["value"][1])
    return {node: round(value / (NODE_WATTS[node] * REPLAYS_PER_WATT * 300), 4) for node, value in nodes.items()}


def _handover_misread(prometheus, start: int, counter_rules: dict[str, str], replays_rule: str) -> dict:
    wrong = {}
    for after in range(0, 601, 30):
        read = _read(prometheus, start + ROLLOUT + after, counter_rules)
        read["pcie-replays"] = _replays(prometheus, start + ROLLOUT + after, replays_rule)
        if any(not values or any(abs(ratio - 1) > HANDOVER_TOLERANCE for ratio in values.values())
               for values in read.values()):
            wrong[after] = read
    return wrong


@pytest.mark.xfail(strict=True, reason="a period holding a GPU's handover to the new exporter's copy reads the "
                                       "merged readings' rise up to the new copy's latest reading, short by its age "
                                       "at the period's end (the time since its scrape and its lag)")
@pytest.mark.parametrize("story, lag", HANDED)
def test_counter_rules_read_the_truth_through_a_handover(story, lag, request, counter_rules, replays_rule):
    """New exporters scraped 11 s after the old ones, their readings taken `lag` s before their scrapes (dcgm-exporter
    serves what it collected at its own interval, 30 s by default): every 30 s from the rollouts to 600 s after, the
    fleet's 1- and 5-minute energy and its rate, each node's rate and 5-minute energy, and the bundled pcie-replays
    alert's replays summed per node read their truths within 2 %. Read on the copies' merged steps where the copy
    leading at a period's start is gone at its end, a 5-minute period (and the rate, and the pcie-replays alert)
    holding a node's handover reads 0.937 of the truth at lag 0, 0.870 at lag 20, 0.843 at lag 28 for the 5 minutes
    after the old exporter's last scrape (the new copy's latest reading 19, 39, 47 s old at the period's end, the old
    copy's at its start none), the fleet's 1-minute energy down to 0.789, 0.567, 0.478 (numbered apart and alike)."""
    prometheus, start = request.getfixturevalue(f"handover_{story}_{lag}")
    assert not _handover_misread(prometheus, start, counter_rules, replays_rule)

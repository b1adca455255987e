"""Fleet rules (gauges grouped by nothing or by cluster) through a rollout across several nodes, each node's exporters
scraped at phases of the interval drawn at random, the new exporter numbering the node's GPUs apart, as a scraping
Prometheus stores them.

The story (30 s scrapes, 1 hour 20 minutes, written into a real Prometheus with the staleness markers its scrape
loop writes): 8 nodes of 2 to 4 GPUs (UUIDs of NVIDIA's form, 60 to 690 W each), drawn with a fixed seed. Node k's old
exporter holds its GPUs at indexes 0, 1, ... and is scraped at its phase to its rollout (ROLLOUT + 40 k s) plus an
overlap of 4 or 8 intervals; the new one, from the rollout at its own phase, holds them rotated (each GPU at another
index). Even nodes carry a `node` label on both exporters' samples; odd ones none (the old exporter's Hostname its own
pod's name, the new one's hostname the node). Some nodes' exporters land in one 5 s rule step (the story holds at
least one scraped at the same second and one whose new exporter is scraped 1 to 4 s before the old one), about 1 in 6
of a rollout with random phases: there, each GPU put under its newest copy's node at each copy's own index, a slot held
two GPUs at once and read the larger. The fleet holds the same GPUs at every instant.
"""

from __future__ import annotations

import random

import pytest

from tests.support.fleet_rule import fleet_period_values
from tests.support.prometheus_server import written_fixture
from tests.support.scraped_gpus import scraped

SPAN, STEP, ROLLOUT, STAGGER = 4800, 30, 1800, 40


def _nodes(seed: int = 142) -> list[dict]:
    """The fleet: per node its name, GPUs (UUID, watts) in the old exporter's order, the new one's rotation, both
    exporters' phases, its overlap in intervals and whether a `node` label is written."""
    rng = random.Random(seed)
    nodes = []
    for k in range(8):
        count = rng.choice((2, 3, 4))
        old, new = rng.randrange(30), rng.randrange(30)
        gpus = [(f"GPU-{k:08x}-5d3e-0a2f-91c4-{index:012x}", rng.randrange(60, 700, 10)) for index in range(count)]
        nodes.append({"name": f"gpu-node-{k}", "gpus": gpus, "rotation": rng.randrange(1, count), "old": old,
                      "new": new, "overlap": rng.choice((4, 8)), "labelled": k % 2 == 0,
                      "rollout": ROLLOUT + STAGGER * k})
    return nodes


NODES = _nodes()
GPUS = [watts for node in NODES for _, watts in node["gpus"]]


def _step(phase: int) -> int:
    """The 5 s rule step (of an interval's 6) a scrape at `phase` s into the interval is read at."""
    return -(-phase // 5) % 6


def _scraped(start: int):
    exporters = []
    for k, node in enumerate(NODES):
        gpus, turn = node["gpus"], node["rotation"]
        labels = {"node": node["name"]} if node["labelled"] else {}

        def held(order, host, first, last, labels=labels):
            return lambda t: [({"gpu": str(index), "UUID": uuid, host[0]: host[1], **labels}, watts)
                              for index, (uuid, watts) in enumerate(order)] if first <= t <= last else []
        rollout = node["rollout"]
        exporters += [(f"10.0.{k}.5", node["old"], held(gpus, ("Hostname", f"nvidia-dcgm-exporter-{k}x7k2p"), 0,
                                                        rollout + node["overlap"] * STEP)),
                      (f"10.0.{k}.6", node["new"], held(gpus[turn:] + gpus[:turn], ("hostname", node["name"]),
                                                        rollout, SPAN))]
    return scraped(start, exporters, SPAN, STEP)


rollout = written_fixture("fleet-rule-rollout-phases", _scraped, SPAN, STEP)


@pytest.fixture(scope="module")
def fleet_rules(tmp_path_factory):
    return fleet_period_values(tmp_path_factory.mktemp("fleet"))


def test_the_story_holds_exporters_sharing_a_rule_step():
    shared = [node for node in NODES if _step(node["old"]) == _step(node["new"])]
    assert any(node["old"] == node["new"] for node in shared)
    assert any(1 <= node["old"] - node["new"] <= 4 for node in shared)


def test_fleet_rules_read_the_fleet_through_a_rollout_of_random_phases(rollout, fleet_rules):
    """Every 5 s from 60 s before the first rollout to 600 s after the last (the 5-minute periods holding the last
    overlap to its end plus 305 s), each fleet rule's period value over 1- and 5-minute periods: the fleet's GPUs
    counted once each, its total power and its mean per GPU."""
    prometheus, start = rollout
    total, count = float(sum(GPUS)), float(len(GPUS))
    truth = {"fleet-power": [total], "fleet-gpus": [count], "fleet-mean": [round(total / count, 6)],
             "cluster-power-5m": [total], "fleet-gpus-5m": [count]}
    wrong = {}
    for after in range(-60, NODES[-1]["rollout"] - ROLLOUT + 601, 5):
        values = {name: [round(float(s["value"][1]), 6) for s in prometheus.query(expr, at=start + ROLLOUT + after)]
                  for name, expr in fleet_rules.items()}
        if values != truth:
            wrong[after] = values
    assert not wrong, (truth, wrong)

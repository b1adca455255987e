"""A fleet's hours in phases, through the CloudWatch agent model: tests/unit/test_cloudwatch_phase_stories.py tells
the story, tests/integration/test_phase_story_twins.py runs its Prometheus twin.

Phase by phase (each a whole number of 5-minute periods): an hour of the seeded random fleet's GPUs held by no pod
(`unheld`: the exporters write their series without pod labels), an hour of the same GPUs held as the seed says (idle
pods, busy pods, GPUs pods share), half an hour of the GPU node group at zero (no exporter scraped), and an hour of
another seed's fleet on new nodes (`renamed`: the node group back on new instances). Scraped every 30 s, each node's
scrapes in a phase from its start (the first phase two scrapes earlier, so that its counters have a reading before
it)."""

from __future__ import annotations

from dataclasses import replace

from tests.support import mixed_fleet, random_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.mig_variant import AGENT_FILE

STEP, HOUR = 30, 3600


def unheld(fleet: tuple) -> tuple:
    """The fleet with no pod holding any of its GPUs or MIG instances."""
    return tuple(replace(node, gpus=tuple(replace(gpu, instances=tuple(replace(i, pod=None, also=())
                                                                       for i in gpu.instances))
                                          for gpu in node.gpus)) for node in fleet)


def renamed(fleet: tuple, tag: str) -> tuple:
    """The fleet on other nodes (other names, other exporter pods and GPU UUIDs)."""
    return tuple(replace(node, name=node.name.replace("ip-10-0-", f"ip-10-{tag}-"),
                         exporter_pod=node.exporter_pod + tag) for node in fleet)


def phases(seed: int, shared: bool = False, per_process: bool = False) -> list[tuple[int, int, tuple]]:
    """[(start, end, the fleet then)]: idle, held, none, new nodes."""
    fleet = random_fleet.fleet(seed, shared, per_process=per_process)
    back = renamed(random_fleet.fleet(seed + 100, shared, per_process=per_process), "9")
    return [(0, HOUR, unheld(fleet)), (HOUR, 2 * HOUR, fleet), (2 * HOUR, 2 * HOUR + 1800, ()),
            (2 * HOUR + 1800, 3 * HOUR + 1800, back)]


def scrapes(job: dict, story: list[tuple[int, int, tuple]]) -> list[Scrape]:
    """Every node's scrapes of each phase, in time order."""
    found = [Scrape(k * STEP, mixed_fleet.payload(node, k * STEP, STEP), target_labels(job, node.name))
             for start, end, fleet in story for k in range(start // STEP - (2 if start == 0 else 0), end // STEP)
             for node in fleet]
    return sorted(found, key=lambda s: s.timestamp)


def published(files, story: list[tuple[int, int, tuple]]) -> list:
    """What the build's agent publishes of the story."""
    config, job = agent_config(files[AGENT_FILE])
    return Agent(config, job).run(scrapes(job, story))

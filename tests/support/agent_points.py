"""A fleet's payloads through the agent model of a build's own agent config: the datapoints CloudWatch would hold."""

from __future__ import annotations

from tests.support import mixed_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"  # the bundled cluster's agent ConfigMaps


def through_agent(files: dict[str, bytes], step: int, end: int, fleet=mixed_fleet.FLEET) -> list:
    """The datapoints of each node of `fleet` scraped every `step` seconds from two scrapes before 0 until `end`."""
    config, job = agent_config(files[AGENT_FILE])
    return Agent(config, job).run([Scrape(k * step, mixed_fleet.payload(node, k * step, step),
                                          target_labels(job, node.name))
                                   for k in range(-2, end // step) for node in fleet])

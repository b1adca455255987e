"""A fleet's payloads through the agent model of a build's own agent config: the datapoints CloudWatch would hold."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Iterable, NamedTuple

from generator.artifacts import build
from generator.output import encode
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"  # the bundled cluster's agent ConfigMaps


def scrapes(job: str, step: int, end: int, fleet=mixed_fleet.FLEET, scraped=None) -> list[Scrape]:
    """Each node of `fleet` scraped every `step` seconds from two scrapes before 0 until `end` by the agent's `job`
    (`scraped(node, t)`: whether that scrape of the node happens; all unless given)."""
    return [Scrape(k * step, mixed_fleet.payload(node, k * step, step), target_labels(job, node.name))
            for k in range(-2, end // step) for node in fleet if scraped is None or scraped(node, k * step)]


def through_agent(files: dict[str, bytes], step: int, end: int, fleet=mixed_fleet.FLEET, only=None) -> list:
    """The datapoints of each node of `fleet` scraped every `step` seconds from two scrapes before 0 until `end`
    (`only`: those of these dimension sets, cloudwatch_agent.Pipeline.only)."""
    config, job = agent_config(files[AGENT_FILE])
    return Agent(config, job, only=only).run(scrapes(job, step, end, fleet))


class AgentBuild(NamedTuple):
    """A build for the agent model: alarm requests by name, a CloudWatch dashboard's header, the agent's config and
    job, the build's lint findings."""
    requests: dict[str, dict]
    header: str
    config: Any
    job: str
    findings: list


def agent_build(project, names: Iterable[str], dashboard: str) -> AgentBuild:
    """`project`'s build (no Grafana dashboard): the request of each alarm of `names` (the one whose AlarmName holds
    `-<name>-`), the header of the CloudWatch dashboard of id `dashboard`, and what agent_config reads of its agent."""
    from generator.lint.runner import lint
    from tests.support.cloudwatch_widgets import header

    artifacts = build(project, grafana=False)
    files = encode(artifacts)
    requests = {name: a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                for name in names if f"-{name}-" in a["Request"]["AlarmName"]}
    config, job = agent_config(files[AGENT_FILE])
    return AgentBuild(requests, header(files, f"cloudwatch/dashboards/gpudash-gpu-cluster-{dashboard}.json"), config,
                      job, lint(project, artifacts))


def alarms_through_agent(project, step: int, end: int, fleet=mixed_fleet.FLEET) -> tuple[dict[str, dict], list]:
    """Each CloudWatch alarm's request of the project's build by its name, and `fleet`'s datapoints through the build's
    agent model (through_agent) that the alarms read (the agent publishes each reading in more sets: dashboards'
    ones, only=cloudwatch_eval.reads of the alarms). No Grafana dashboard is rendered: neither the agent's
    configuration nor the alarms read them."""
    files = encode(build(project, grafana=False))
    requests = {a["Request"]["AlarmName"]: a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    return requests, through_agent(files, step, end, fleet, only=cloudwatch_eval.reads(*requests.values()))


# the mixed fleet with its time-sliced GPU on an exporter run with KUBERNETES_VIRTUAL_GPUS: one copy per pod sharing it
SHARED = tuple(replace(node, virtual_gpus=True, moves=0) if node.name == "gpu-node-ts" else node
               for node in mixed_fleet.FLEET)


def alarm_values(request: dict, points: list, end: int, period: int) -> dict[tuple, float]:
    """{group key: an alarm's value} over the period ending at `end`: its query's result over its threshold's scale
    (the Threshold of a definition's threshold of 1 is the normalisation the query needs)."""
    (metric,) = request["Metrics"]
    result = cloudwatch_eval.metrics_insights(metric["Expression"], points, end - period, end, period)
    return {key: series[end - period] / request["Threshold"] for key, series in result.items()}

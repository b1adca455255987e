"""Lint proves that each widget and alarm reads its cluster's metrics in the Region that cluster's agent publishes into.

CloudWatch metrics are regional. AG001 compared metric names, namespaces and dimension sets only: a build whose
dashboard for infer-west (us-west-2) was made in us-east-1, whose alarm for it was made there, or whose agent's awsemf
exporter wrote into us-east-1 (an edited or stale build) passed lint and read nothing (issue 10).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import pytest

from generator.artifacts import build
from generator.lint.runner import lint
from generator.project import load_project
from generator.render.agent_otel import EXPORTER

SETTINGS = Path(__file__).parents[1] / "golden" / "builds" / "multi-region.yaml"
WEST = "infer-west"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("regions")
    (folder / "gpudash.yaml").write_text(SETTINGS.read_text())
    project = load_project(folder / "gpudash.yaml")
    return project, build(project, grafana=False)


def _regional(project, artifacts) -> list[str]:
    return [f.message for f in lint(project, artifacts) if f.rule == "AG001" and "publishes into" in f.message]


def test_the_build_as_made_reads_every_cluster_where_its_agent_publishes(built):
    assert _regional(*built) == []


def test_a_dashboard_of_a_cluster_read_in_another_region_is_named(built):
    project, artifacts = built
    dashboard = next(d for d in artifacts.cloudwatch_dashboards if f"-{WEST}-" in d.name)
    body = copy.deepcopy(dashboard.body)
    for widget in body["widgets"]:
        if "region" in widget.get("properties", {}):
            widget["properties"]["region"] = "us-east-1"
    edited = tuple(replace(d, body=body) if d is dashboard else d for d in artifacts.cloudwatch_dashboards)
    found = _regional(project, replace(artifacts, cloudwatch_dashboards=edited))
    assert found and all(f"reads cluster {WEST} in us-east-1" in m and "into us-west-2" in m for m in found)


def test_an_alarm_made_in_another_region_than_its_clusters_agent_publishes_is_named(built):
    project, artifacts = built
    alarms = tuple(replace(a, region="us-east-1") if f"-{WEST}-" in a.request["AlarmName"] else a
                   for a in artifacts.alarms)
    found = _regional(project, replace(artifacts, alarms=alarms))
    assert len(found) == sum(f"-{WEST}-" in a.request["AlarmName"] for a in artifacts.alarms) > 0


def test_an_agent_publishing_into_another_region_is_named_on_otel(built):
    project, artifacts = built
    agent = next(a for a in artifacts.agents if a.cluster == WEST)
    otel = copy.deepcopy(agent.otel)
    otel["exporters"][EXPORTER]["region"] = "us-east-1"
    agents = tuple(replace(a, otel=otel) if a is agent else a for a in artifacts.agents)
    found = _regional(project, replace(artifacts, agents=agents))
    assert found and all("publishes into us-east-1" in m for m in found)


def test_an_agent_publishing_into_another_region_is_named_on_classic(tmp_path_factory):
    """On agent.pipeline: classic the agent publishes into the Region its JSON's `agent.region` names (the agent's
    configuration file reference: the Region the metrics are sent to; left out, the node's own). A build's
    cwagentconfig.json given `agent.region` by hand passed lint, AG001 reading every classic agent as publishing into
    its cluster's Region, while the cluster's widgets and alarms read nothing."""
    folder = tmp_path_factory.mktemp("classic")
    (folder / "gpudash.yaml").write_text(SETTINGS.read_text().replace("agent:\n", "agent:\n  pipeline: classic\n", 1))
    project = load_project(folder / "gpudash.yaml")
    artifacts = build(project, grafana=False)
    assert _regional(project, artifacts) == []
    agent = next(a for a in artifacts.agents if a.cluster == WEST)
    config = {**copy.deepcopy(agent.config), "agent": {"region": "us-east-1"}}
    agents = tuple(replace(a, config=config) if a is agent else a for a in artifacts.agents)
    found = _regional(project, replace(artifacts, agents=agents))
    assert found and all(f"cluster {WEST}" in m and "publishes into us-east-1: it reads nothing" in m
                         for m in found), found
    same = {**copy.deepcopy(agent.config), "agent": {"region": "us-west-2"}}  # its own Region, written out
    agents = tuple(replace(a, config=same) if a is agent else a for a in artifacts.agents)
    assert _regional(project, replace(artifacts, agents=agents)) == []

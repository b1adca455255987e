"""The agent configuration publishes what the dashboards and alarms query, whatever the settings name: the
workload's labels as the exporter writes them, user strings the agent would expand, scrape jobs Prometheus loads."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import pytest

from generator.artifacts import build
from generator.lint import run
from generator.lint.feed_rules import RULES
from generator.output import encode
from generator.project import load_project
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, exposition
from tests.support.dcgm_fleet import target_labels
from tests.support.lint_input import lint_input

ROOT = Path(__file__).resolve().parents[2]
AGENT = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
OLD_LABELS = "labels:\n  pod: pod_name\n  namespace: pod_namespace\n  container: container_name\n"


def _old_namespace_payload() -> str:
    """The sample payload as an exporter run with --use-old-namespace writes it (pod_name, pod_namespace,
    container_name instead of pod, namespace, container)."""
    sample = (ROOT / "generator/defaults/sample-exporter.prom").read_text()
    return (sample.replace('container="', 'container_name="').replace('namespace="', 'pod_namespace="')
            .replace('pod="', 'pod_name="'))


def _agent_points(files: dict[str, bytes], payload: str) -> list:
    config, job = agent_config(files[AGENT])
    agent = Agent(config, job)
    points = []
    for k in range(3):
        for node in ("gpu-node-a", "gpu-node-b"):
            served = "\n".join(line for line in payload.splitlines()
                               if line.startswith("#") or f'Hostname="{node}"' in line)
            points += agent.scrape(Scrape(k * 30, served, target_labels(job, node)))
    return points


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_an_exporter_writing_the_old_pod_labels_publishes_every_pod_in_the_per_pod_set(project_dir, pipeline):
    """labels.pod: pod_name (the exporter's --use-old-namespace): the agent's job renames the workload's labels
    to the names its dimension sets use, so every pod holding a GPU is published as [ClusterName, namespace, pod]."""
    payload = _old_namespace_payload()
    truth = {(labels["pod_namespace"], labels["pod_name"]) for _, _, labels, _ in exposition(payload)
             if "pod_name" in labels}
    assert len(truth) >= 2
    files = encode(build(load_project(project_dir(OLD_LABELS + f"agent:\n  pipeline: {pipeline}\n"))))
    points = _agent_points(files, payload)
    per_pod = {(p.dims()["namespace"], p.dims()["pod"]) for p in points
               if {"ClusterName", "namespace", "pod"} == set(p.dims())}
    assert per_pod == truth
    # the old names are not published beside the new ones
    assert not any({"pod_name", "pod_namespace", "container_name"} & set(p.dims()) for p in points)


def _without_renames(artifacts):
    """The build with the agent's scrape job keeping the exporter's label names (as before it renamed them)."""
    agent = artifacts.agents[0]
    scrape = copy.deepcopy(agent.scrape)
    job = scrape["scrape_configs"][0]
    job["metric_relabel_configs"] = [rule for rule in job["metric_relabel_configs"]
                                     if rule.get("target_label") not in ("pod", "namespace", "container")
                                     and rule.get("action") != "labeldrop"]
    return replace(artifacts, agents=(replace(agent, scrape=scrape), *artifacts.agents[1:]))


def test_lint_reads_the_published_labels_from_the_settings(project_dir):
    """AG002 derives the labels the agent's series carry from `labels:` and the job's relabeling: with the exporter's
    old pod labels, a job that does not rename them publishes no per-pod set, and lint says so."""
    project = load_project(project_dir(OLD_LABELS + "agent:\n  pipeline: classic\n"))
    artifacts = build(project)
    ag002 = [r for r in RULES if r.id == "AG002"]
    assert run(ag002, lint_input(project, artifacts)) == []
    findings = run(ag002, lint_input(project, _without_renames(artifacts)))
    assert {f.message for f in findings} >= {
        "dimension 'pod' is not a label on the scraped DCGM series: the agent emits no metric with this set",
        "dimension 'namespace' is not a label on the scraped DCGM series: the agent emits no metric with this set"}
    # the defaults' names need no rename, and lint does not ask for one
    defaults = load_project(project_dir("agent:\n  pipeline: classic\n"))
    assert run(ag002, lint_input(defaults, build(defaults))) == []


def test_verify_reads_the_pod_labels_under_the_names_the_settings_give(project_dir):
    """`gpudash verify` on an exporter writing pod_name: busy GPUs held by pods carry pod labels (not 'busy GPUs
    without a pod label'), and a GPU that really lacks them is still named."""
    from generator.checks.exporter import analyse

    project = load_project(project_dir(OLD_LABELS))
    checks = {c.name: c for c in analyse(project, _old_namespace_payload(), "node")}
    assert checks["pod labels"].status == "ok", checks["pod labels"].detail
    unheld = _old_namespace_payload().replace('pod_name="trainer-0"', 'job_name="trainer-0"')
    checks = {c.name: c for c in analyse(project, unheld, "node")}
    assert checks["pod labels"].status == "fail" and "without a pod label" in checks["pod labels"].detail

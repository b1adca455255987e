"""The agent's exporter job keeps the exporter's workload labels: a relabel rule writing the target label `pod` (the
blog's job writes `__meta_kubernetes_pod_name` there, bug 3 of its scrape job) makes the scrape rename each series' own
`pod` to `exported_pod` (honor_labels false, Prometheus' default), so every per-pod set names the exporter's pod. Through
the agent model of each pipeline: the per-pod point of ml/train's GPU reads pod 'nvidia-dcgm-exporter-1'; lint said
nothing (AG002 checked that each dimension is a label, which `pod` still is)."""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.lint.feed_rules import RULES
from generator.lint.runner import run
from generator.output import encode
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.lint_input import exporter_job_edited, lint_input
from tests.support.projects import bundled_project

AGENT = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
NODE = "ip-10-0-1-1"
PAYLOAD = ("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
           f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-0",Hostname="{NODE}",pod="train",namespace="ml",container="main"}} 30\n'
           f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="GPU-1",Hostname="{NODE}"}} 0\n')
PIPELINES = {"otel": "", "classic": "agent:\n  pipeline: classic\n"}
BLOG = {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod", "action": "replace"}


def _edited(artifacts, rule: dict):
    """The build with `rule` added to the relabel_configs of the exporter job the agent runs."""
    return exporter_job_edited(artifacts, lambda job: job["relabel_configs"].append(rule))


def _pods(artifacts) -> list[tuple[str, str, float]]:
    """(namespace, pod, value) of GPU utilization per pod the agent model publishes at the second scrape."""
    config, job = agent_config(encode(artifacts)[AGENT])
    agent = Agent(config, job)
    return sorted((p.dims()["namespace"], p.dims()["pod"], p.value) for k in range(2)
                  for p in agent.scrape(Scrape(k * 30.0, PAYLOAD, target_labels(job, NODE)))
                  if p.timestamp == 30.0 and p.metric == "DCGM_FI_DEV_GPU_UTIL"
                  and set(p.dims()) == {"ClusterName", "namespace", "pod"})


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_a_relabel_rule_writing_pod_fails_ag002(pipeline):
    project = bundled_project(PIPELINES[pipeline])
    artifacts = build(project, grafana=False)
    assert _pods(artifacts) == [("ml", "train", 30.0)]
    assert [f for f in run([r for r in RULES if r.id == "AG002"], lint_input(project, artifacts))] == []
    edited = _edited(artifacts, BLOG)
    assert _pods(edited) == [("ml", "nvidia-dcgm-exporter-1", 30.0)]
    where = "gpudash-otel.yaml job" if pipeline == "otel" else "prometheus.yaml job"
    assert [f"{f.where}: {f.message}" for f in run([r for r in RULES if r.id == "AG002"],
                                                   lint_input(project, edited))] == [
        f"{AGENT} {where} 'dcgm-exporter': its relabel_configs write the target label 'pod', a label the exporter "
        "names the workload with: the scrape renames the exporter's own 'pod' of each series exported_pod "
        "(honor_labels false), so the per-pod sets name the exporter's pod, not the workload's (with honor_labels "
        "true, GPUs no pod holds get it); remove the rule (the job keeps the exporter's pod as exporter_pod)"]

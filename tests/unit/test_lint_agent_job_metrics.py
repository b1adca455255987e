"""AG001: a field a CloudWatch widget or alarm reads reaches the agent through its exporter job as the agent runs it:
the OTel pipeline's receiver job (agent.pipeline: otel; its prometheus.yaml is not what the collector reads) or
prometheus.yaml's (classic), whose metric_relabel_configs keep and drop rules Prometheus applies to every sample
before the agent sees it.

A build's agent config edited by hand so that its exporter job drops a field the widgets read (a drop rule on
`__name__`, or its keep rule narrowed to DCGM_FI_DEV_*, which leaves out every DCGM_FI_PROF_* field): the agent model
shows the field published nowhere; lint must say it.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from generator.artifacts import build
from generator.lint import run
from generator.lint.feed_rules import RULES
from generator.output import encode
from generator.project import load_project
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.lint_input import exporter_job_edited, lint_input

AGENT = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
NODE = "ip-10-0-1-1"
PAYLOAD = "".join(f"# TYPE {name} gauge\n{name}{{gpu=\"0\",UUID=\"GPU-0\",Hostname=\"{NODE}\"}} {value}\n"
                  for name, value in (("DCGM_FI_DEV_GPU_TEMP", 60), ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.5)))
DROPS = {
    "temperature dropped": ({"action": "drop", "source_labels": ["__name__"], "regex": "DCGM_FI_DEV_GPU_TEMP"},
                            "DCGM_FI_DEV_GPU_TEMP"),
    "profiling fields not kept": ({"action": "keep", "source_labels": ["__name__"], "regex": "DCGM_FI_DEV_.*"},
                                  "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
}
@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    made = {}
    for name, settings in (("otel", ""), ("classic", "agent:\n  pipeline: classic\n")):
        folder = tmp_path_factory.mktemp(name)
        (folder / "gpudash.yaml").write_text(settings)
        made[name] = load_project(folder / "gpudash.yaml")
    return made


def _with_rule(project, rule: dict):
    """The build with `rule` appended to the metric_relabel_configs of the exporter job the agent runs."""
    return exporter_job_edited(build(project, grafana=False), lambda job: job["metric_relabel_configs"].append(rule))


def _published(artifacts, metric: str) -> list[tuple[str, ...]]:
    """The dimension sets (names) in which the agent model publishes `metric` at the second of two scrapes."""
    config, job = agent_config(encode(artifacts)[AGENT])
    agent = Agent(config, job)
    return sorted({tuple(sorted(p.dims())) for k in range(2)
                   for p in agent.scrape(Scrape(k * 30.0, PAYLOAD, target_labels(job, NODE)))
                   if p.metric == metric and p.timestamp == 30.0})


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
@pytest.mark.parametrize("case", DROPS)
def test_a_read_field_the_agents_job_drops_fails_ag001(projects, pipeline, case):
    rule, metric = DROPS[case]
    project = projects[pipeline]
    assert ("ClusterName", "gpu", "node") in _published(build(project, grafana=False), metric)
    artifacts = _with_rule(project, rule)
    assert _published(artifacts, metric) == []
    findings = [f.message for f in run([r for r in RULES if r.id == "AG001"], lint_input(project, artifacts))]
    assert any(metric in f and "metric_relabel_configs" in f for f in findings), findings


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_rule_dropping_a_field_nothing_reads_is_quiet(projects, pipeline):
    project = projects[pipeline]
    artifacts = _with_rule(project, {"action": "drop", "source_labels": ["__name__"], "regex": "DCGM_FI_DEV_ENC_UTIL"})
    assert [f.message for f in run([r for r in RULES if r.id == "AG001"], lint_input(project, artifacts))] == []


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_the_daemonsets_counts_dropped_by_the_kube_state_metrics_job_fail_ag001(projects, pipeline):
    """The data-missing alarm reads the exporter DaemonSet's desired, available and updated counts over the cluster
    ([ClusterName]: the job keeps the one DaemonSet's alone): a drop rule on the desired count leaves the alarm
    without it (never the numbers it compares)."""
    project = projects[pipeline]
    artifacts = build(project, grafana=False)
    agent = artifacts.agents[0]
    rule = {"action": "drop", "source_labels": ["__name__"], "regex": "kube_daemonset_status_desired_number_scheduled"}
    if agent.otel is not None:
        otel = copy.deepcopy(agent.otel)
        jobs = otel["receivers"]["prometheus/gpudash"]["config"]["scrape_configs"]
        agent = replace(agent, otel=otel)
    else:
        scrape = copy.deepcopy(agent.scrape)
        jobs = scrape["scrape_configs"]
        agent = replace(agent, scrape=scrape)
    next(j for j in jobs if j["job_name"] == "gpudash-kube-state-metrics")["metric_relabel_configs"].append(rule)
    artifacts = replace(artifacts, agents=(agent, *artifacts.agents[1:]))
    findings = [f.message for f in run([r for r in RULES if r.id == "AG001"], lint_input(project, artifacts))]
    assert any("kube_daemonset_status_desired_number_scheduled" in f and "does not keep" in f for f in findings), \
        findings

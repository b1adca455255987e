"""AG008: each cluster's agent runs the scrape jobs gpudash writes for its settings, and AG002 reads the job the agent
runs.

A job the agent runs edited by hand (or written wrong) publishes values the dashboards and alarms misread, and lint
said nothing of it on either pipeline: its interval at 60 s where the widgets' math per scrape and the alarms' counts
of observations take scrape.interval's 30 s (a pod's framebuffer on agent.pipeline: classic read 4,500 MiB for
9,000), a sample_limit below a node's samples (every scrape of it fails whole), the rule giving whole GPUs GPU_I_ID
removed (no whole GPU in the per-instance framebuffer chart), the exporter revision's rules removed (two exporter pods
of a rollout one delta series, a reading below the other's sent whole), the drop of MIG instances' GPU utilization
removed. AG002's check of the GPU_I_ID rule read prometheus.yaml's job on the OTel pipeline, which the collector does
not run: the rule removed from the receiver's job passed it.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.lint.feed_rules import RULES
from generator.lint.runner import run
from generator.output import encode
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import through_agent
from tests.support.cloudwatch_widgets import widgets
from tests.support.lint_input import exporter_job_edited, lint_input, scrape_config_edited
from tests.support.projects import bundled_project

CLASSIC = "agent:\n  pipeline: classic\n"
PIPELINES = {"otel": "", "classic": CLASSIC}


def _messages(project, artifacts, rule: str) -> list[str]:
    return [f"{f.where}: {f.message}" for f in run([r for r in RULES if r.id == rule], lint_input(project, artifacts))]


def _without(key: str, target: str):
    """An edit removing the job's `key` rules that write `target`."""
    def edit(job):
        job[key] = [r for r in job[key] if r.get("target_label") != target]
    return edit


def _mig_utilization_kept(job):
    job["metric_relabel_configs"] = [r for r in job["metric_relabel_configs"] if r.get("action") != "drop"]


EDITS = {
    "interval": (lambda job: job.update(scrape_interval="60s"), "scrape_interval '60s'"),
    "sample limit": (lambda job: job.update(sample_limit=10), "sample_limit 10"),
    "whole GPUs' GPU_I_ID": (_without("metric_relabel_configs", "GPU_I_ID"), "metric_relabel_configs"),
    "MIG utilization kept": (_mig_utilization_kept, "metric_relabel_configs"),
}


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
@pytest.mark.parametrize("case", sorted(EDITS))
def test_an_exporter_job_edited_fails_ag008(pipeline, case):
    project = bundled_project(PIPELINES[pipeline])
    artifacts = build(project, grafana=False)
    edit, said = EDITS[case]
    found = _messages(project, exporter_job_edited(artifacts, edit), "AG008")
    assert len(found) == 1 and said in found[0], found
    assert found[0].startswith("k8s/cwagent-prometheus-config-gpu-cluster.yaml: the dcgm-exporter job "), found


def _interval_from_global(interval: str):
    """An edit leaving the exporter job's interval to the configuration's global one, `interval`."""
    def edit(config):
        del config["scrape_configs"][0]["scrape_interval"]
        config["global"]["scrape_interval"] = interval
    return edit


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_a_job_without_an_interval_is_read_at_the_global_one_as_the_agent_runs_it(pipeline):
    """Prometheus (and the collector's receiver) scrape a job that sets no interval at the global one: the same 30 s
    is the job gpudash writes, 60 s is not."""
    project = bundled_project(PIPELINES[pipeline])
    artifacts = build(project, grafana=False)
    assert _messages(project, scrape_config_edited(artifacts, _interval_from_global("30s")), "AG008") == []
    (found,) = _messages(project, scrape_config_edited(artifacts, _interval_from_global("60s")), "AG008")
    assert "scrape_interval '60s'" in found, found


def test_the_exporter_revision_rules_removed_fail_ag008():
    project = bundled_project()
    edited = exporter_job_edited(build(project, grafana=False), _without("relabel_configs", "exporter_revision"))
    (found,) = _messages(project, edited, "AG008")
    assert "relabel_configs" in found, found


def test_the_kube_state_metrics_job_edited_fails_ag008():
    """The agent alarm counts kube-state-metrics' scrapes of a period at scrape.interval (fewer than 5 of its 10)."""
    project = bundled_project()

    def edit(config):
        next(j for j in config["scrape_configs"] if j["job_name"] == "gpudash-kube-state-metrics")["scrape_interval"] \
            = "60s"
    edited = scrape_config_edited(build(project, grafana=False), edit)
    (found,) = _messages(project, edited, "AG008")
    assert "the gpudash-kube-state-metrics job" in found and "scrape_interval '60s'" in found, found


SETTINGS = ["", CLASSIC, "exporter:\n  virtual_gpus: true\n  more_daemonsets: [pool-b, monitoring/gpu-metrics]\n",
            "alarms:\n  expected_gpus: none\n", "scrape:\n  interval: 60s\n  job_name: gpu-metrics\n",
            "clusters:\n  - {name: a, region: us-east-1}\n"
            "  - {name: b, region: eu-west-1, exporter: {deployment: helm, namespace: dcgm}}\n",
            "labels:\n  pod: exported_pod\n  namespace: exported_namespace\n  container: exported_container\n"]


@pytest.mark.parametrize("settings", SETTINGS)
def test_the_jobs_gpudash_writes_pass(settings):
    project = bundled_project(settings)
    assert _messages(project, build(project, grafana=False), "AG008") == []


def test_a_60s_job_reads_half_a_pods_framebuffer_on_classic():
    """What the interval edit does to a value: "Framebuffer used by pod" adds a pod's readings over the period and
    divides by the period's scrapes at scrape.interval, so the agent scraping every 60 s halves it."""
    project = bundled_project(CLASSIC)
    files = encode(build(project, grafana=False))
    (properties,) = [p for _, p in widgets(files) if p["title"] == "Framebuffer used by pod"]
    pod = "Pod team-a/worker-0"
    for step, value in ((30, 9000.0), (60, 4500.0)):
        shown = cloudwatch_eval.widget(properties, through_agent(files, step, 600), 0, 600)[pod]
        assert set(shown.values()) == {value}, (step, shown)
    assert mixed_fleet.FLEET[0].gpus[0].instances[0].fb_used == 9000.0


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_ag002_reads_the_gpu_instance_rule_of_the_job_the_agent_runs(pipeline):
    project = bundled_project(PIPELINES[pipeline])
    edited = exporter_job_edited(build(project, grafana=False), _without("metric_relabel_configs", "GPU_I_ID"))
    assert any("replace an empty GPU_I_ID" in m for m in _messages(project, edited, "AG002"))
    # what it does: no whole GPU in the per-instance framebuffer chart
    (properties,) = [p for _, p in widgets(encode(edited)) if p["title"] == "Framebuffer memory used"]
    shown = cloudwatch_eval.widget(properties, through_agent(encode(edited), 30, 600), 0, 600)
    assert not any(label.endswith("MIG none") for label, series in shown.items() if series), sorted(shown)

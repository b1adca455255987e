"""verify's CloudWatch group on a healthy cluster whose agent publishes exactly what the generated configuration says.

The test worlds of test_verify.py put the sampled metrics with the per-pod and per-GPU sets only. The generated agent
configuration publishes more sets of those same metrics: GPU temperature per cluster ([ClusterName], the data-missing
alarm's GPU observations), GPU utilization per pod and GPU ([ClusterName, namespace, pod, gpu], the idle alarm's),
framebuffer per GPU instance, a pod's totals. Here the datapoints are what the model of the agent's OTel pipeline
(tests/support/cloudwatch_otel.py, run on the generated configuration) publishes for the crafted fleet, put into moto's
CloudWatch as they come (every metric with its dimension set), and verify must say "ok" of them.
"""

from __future__ import annotations

import json

from generator.cloudwatch_query import NODE_MEAN
from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, scrape_jobs
from tests.support import kube_state
from tests.support.dcgm_fleet import scrapes

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"


EXPORTER = {"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter"}


def _generated_agent(config):
    """The project at `config`, the agent config gpudash generates for it, its exporter and kube-state-metrics jobs."""
    project = load_project(config)
    files = encode(build(project))
    agent, job = agent_config(files[AGENT_FILE])
    return project, agent, job, scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]


def _verify_cloudwatch(moto, cli, monkeypatch, config, published):
    """`gpudash verify`'s CloudWatch group over a moto holding exactly the `published` (metric, dimensions):
    (exit code, stdout, stderr, the "gpu-cluster metrics" check)."""
    moto.reset()
    client = moto.client("cloudwatch", "us-east-1")
    data = [{"MetricName": metric, "Value": 1.0, "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions]}
            for metric, dimensions in sorted(published)]
    for start in range(0, len(data), 500):
        client.put_metric_data(Namespace="ContainerInsights/Prometheus", MetricData=data[start:start + 500])
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
    code, stdout, stderr = cli("verify", "--output", "json", "--config", str(config),
                               "--skip", "kube", "--skip", "exporter", "--skip", "prometheus")
    checks = {(c["group"], c["name"]): c for c in json.loads(stdout)["checks"]}
    return code, stdout, stderr, checks[("cloudwatch", "gpu-cluster metrics")]


def test_verify_passes_what_the_generated_agent_publishes(moto, project_dir, cli, monkeypatch):
    config = project_dir("project: test\n")
    project, agent, job, ksm_job = _generated_agent(config)
    points = Agent(agent, job, others=[ksm_job]).run(
        scrapes(job, project.catalog, -1, 10) + [kube_state.scrape(ksm_job, t, EXPORTER, 2, 2) for t in range(-30, 330, 30)])
    published = {(p.metric, p.dimensions) for p in points}
    assert any(dict(d).keys() == {"ClusterName"} for m, d in published if m == "DCGM_FI_DEV_GPU_TEMP")
    code, stdout, stderr, metrics = _verify_cloudwatch(moto, cli, monkeypatch, config, published)
    # seen on main: fail, "published with dimensions [ClusterName; ClusterName, gpu, namespace, pod], declared ..."
    assert (metrics["status"], metrics["detail"]) == ("ok", "4 sampled metrics arriving in ContainerInsights/Prometheus"), \
        metrics["detail"]
    assert code == 0, (stdout, stderr)


def test_verify_passes_a_healthy_cluster_whose_gpus_are_all_split_into_mig_instances(moto, project_dir, cli,
                                                                                     monkeypatch):
    """A fleet of A100s all split into MIG instances (inference clusters often are): the exporter writes no GPU
    utilization for a MIG instance and the agent's scrape job drops what it writes, so DCGM_FI_DEV_GPU_UTIL is never
    published, as README says ("GPU utilization panels leave MIG GPUs out"). That is the healthy state of such a
    cluster, not a missing metric; verify (and apply's preflight, which runs it) must not fail on it."""
    from tests.support import mixed_fleet
    from tests.support.dcgm_fleet import target_labels

    config = project_dir("project: test\n")
    _, agent, job, ksm_job = _generated_agent(config)
    (mig,) = [node for node in mixed_fleet.FLEET if node.name == "gpu-node-mig"]
    points = Agent(agent, job, others=[ksm_job]).run(
        [Scrape(30 * k, mixed_fleet.payload(mig, 30 * k, 30), target_labels(job, mig.name)) for k in range(-1, 10)]
        + [kube_state.scrape(ksm_job, t, EXPORTER, 1, 1) for t in range(-30, 300, 30)])
    published = {(p.metric, p.dimensions) for p in points}
    # only each MIG GPU's stand-in (its instances' engine activity) as its utilization once, where widgets read it
    # (and, on otel, the node's total and count of those stand-ins, which the fleet widgets read per node)
    utilization = [dict(d) for m, d in published if m == "DCGM_FI_DEV_GPU_UTIL"]
    assert {d.get("readings") for d in utilization if NODE_MEAN not in d} == {"once per GPU"}
    assert {d[NODE_MEAN] for d in utilization if NODE_MEAN in d} == {"sum", "count"}
    code, stdout, stderr, metrics = _verify_cloudwatch(moto, cli, monkeypatch, config, published)
    # seen on main: fail, "missing in ContainerInsights/Prometheus: DCGM_FI_DEV_GPU_UTIL" (exit 1; apply refused)
    assert metrics["status"] != "fail", metrics
    assert code == 0, (stdout, stderr)


def test_verify_fails_a_whole_gpu_cluster_that_publishes_no_gpu_utilization(moto, project_dir, cli, monkeypatch):
    """The MIG allowance is for clusters whose published metrics show MIG instances and no whole GPU: a cluster of
    whole GPUs whose agent publishes everything but DCGM_FI_DEV_GPU_UTIL (a metric_selectors drift) fails."""
    config = project_dir("project: test\n")
    project, agent, job, ksm_job = _generated_agent(config)
    points = Agent(agent, job, others=[ksm_job]).run(
        scrapes(job, project.catalog, -1, 10) + [kube_state.scrape(ksm_job, t, EXPORTER, 2, 2) for t in range(-30, 330, 30)])
    published = {(p.metric, p.dimensions) for p in points if p.metric != "DCGM_FI_DEV_GPU_UTIL"}
    code, stdout, stderr, metrics = _verify_cloudwatch(moto, cli, monkeypatch, config, published)
    # seen before: warn, "no DCGM_FI_DEV_GPU_UTIL ...: DCGM does not report it on MIG instances", exit 0
    assert metrics["status"] == "fail" and "DCGM_FI_DEV_GPU_UTIL" in metrics["detail"], metrics
    assert code == 1, (stdout, stderr)

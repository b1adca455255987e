"""The README's CI workflow, run as written: its steps in order, each `run:` through bash as GitHub's
runner does (`bash -eo pipefail`), against local stand-ins — the Grafana API test server, moto's
CloudWatch, the Kubernetes API test server and a real Prometheus scraping a replayed exporter.

`kubectl` is the real one when it is installed (the test server then speaks TLS and serves the
discovery and OpenAPI documents kubectl reads). Stand-ins replace what only exists on a runner:
`actions/checkout` (the repository is already here), `make install` (gpudash is already
installed; its pacing waits are skipped), `aws-actions/configure-aws-credentials` (moto's endpoint
and test keys), `aws eks update-kubeconfig`, and kubectl where it is not installed
(tests/support/standins.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from generator.project import load_project
from generator.render.scrape import scrape_job
from tests.conftest import REPO
from tests.support.grafana_server import ADMIN, GrafanaTestServer
from tests.support.kube_server import KubeCluster, KubeTestServer
from tests.support.moto_server import MotoServer
from tests.support.prometheus_server import Prometheus, for_file_sd
from tests.support.replay_exporter import ReplayExporter, relabel_payload

WORKLOAD_POD = "train-a-0"


def readme_workflow() -> dict:
    text = (REPO / "README.md").read_text()
    block = re.search(r"```yaml\n(# \.github/workflows/gpudash\.yml\n.*?)```", text, re.S)
    assert block, "the README's CI workflow block"
    return yaml.safe_load(block.group(1))


class Runner:
    """Runs the workflow's steps for one event, the way GitHub's runner would."""

    def __init__(self, repo: Path, tools: Path, variables: dict[str, str], moto_url: str):
        self.repo, self.tools, self.variables, self.moto_url = repo, tools, variables, moto_url

    def expand(self, text: str) -> str:
        return re.sub(r"\$\{\{\s*(?:vars|secrets)\.(\w+)\s*\}\}", lambda m: self.variables[m.group(1)], str(text))

    @staticmethod
    def condition(expression: str | None, event: str, ref: str) -> bool:
        if not expression:
            return True
        context = {"event_name": event, "ref": ref}
        terms = [re.fullmatch(r"\s*github\.(\w+) == '([^']*)'\s*", term) for term in expression.split("&&")]
        assert all(terms), f"unsupported condition {expression!r}"
        return all(context[t.group(1)] == t.group(2) for t in terms)

    def run(self, event: str, ref: str = "refs/heads/main") -> list[tuple[str, int, str]]:
        workflow = readme_workflow()
        job = workflow["jobs"]["gpudash"]
        env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "GRAFANA_",
                                                                                      "GPUDASH_", "KUBECONFIG"))}
        env.update({key: self.expand(value) for key, value in job.get("env", {}).items()})
        env.update({"PATH": f"{self.tools}:{env['PATH']}", "PYTHONPATH": str(REPO),
                    "HOME": str(self.repo.parent / "home"), "KUBECONFIG": str(self.repo.parent / "home/.kube/config"),
                    "KUBE_TEST_SERVER": self.variables["KUBE_TEST_SERVER"],
                    "KUBE_TEST_CA": self.variables.get("KUBE_TEST_CA", "")})
        results = []
        for step in job["steps"]:
            name = step.get("name") or step.get("uses") or step["run"].splitlines()[0]
            if not self.condition(step.get("if"), event, ref):
                continue
            uses = step.get("uses", "")
            if uses.startswith("actions/checkout@"):
                continue
            if uses.startswith("aws-actions/configure-aws-credentials@"):
                assert workflow["permissions"]["id-token"] == "write"  # OIDC needs it
                assert self.expand(step["with"]["role-to-assume"]).startswith("arn:aws:iam::")
                env.update({"AWS_REGION": step["with"]["aws-region"], "AWS_ACCESS_KEY_ID": "testing",
                            "AWS_SECRET_ACCESS_KEY": "testing", "AWS_ENDPOINT_URL": self.moto_url})
                continue
            assert not uses, f"no stand-in for {uses}"
            script = self.expand(step["run"])
            if script.strip() == "make install":
                self.install()
                continue
            result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                                    cwd=self.repo, env={**env, **{k: self.expand(v) for k, v in
                                                                  step.get("env", {}).items()}},
                                    capture_output=True, text=True, timeout=300)
            results.append((name, result.returncode, result.stdout + result.stderr))
            if result.returncode != 0:
                break  # a failed step fails the job
        return results

    def install(self) -> None:
        assert re.search(r"^install:", (REPO / "Makefile").read_text(), re.M)
        bin_dir = self.repo / ".venv" / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        launcher = bin_dir / "gpudash"
        launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tests.support.standins gpudash "$@"\n')
        launcher.chmod(0o755)


def _tool(folder: Path, name: str) -> None:
    path = folder / name
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tests.support.standins {name} "$@"\n')
    path.chmod(0o755)


@pytest.fixture(scope="module")
def stack(reference, tmp_path_factory):
    payload = relabel_payload((reference / "exporter" / "blog-a10g-k8s.prom").read_text(), pod=WORKLOAD_POD)
    work = tmp_path_factory.mktemp("ci")
    targets = work / "targets.json"
    with ReplayExporter(payload) as exporter, MotoServer() as moto, \
            GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana:
        targets.write_text(json.dumps([{"targets": [exporter.address], "labels": {
            "__meta_kubernetes_namespace": "gpu-operator", "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
            "__meta_kubernetes_pod_container_port_number": "9400",
            "__meta_kubernetes_pod_name": "nvidia-dcgm-exporter-ax", "__meta_kubernetes_pod_node_name": "gpu-node-a"}}]))
        job = for_file_sd(scrape_job(load_project().settings), [str(targets)])
        job["scrape_interval"], job["scrape_timeout"] = "1s", "1s"
        with Prometheus(work, {"global": {"scrape_interval": "1s"}, "scrape_configs": [job]}) as prometheus:
            prometheus.wait_for('DCGM_FI_DEV_GPU_UTIL{pod="%s"}' % WORKLOAD_POD)
            moto.put_dcgm_metrics(WORKLOAD_POD)
            cluster = KubeCluster(reference)
            real_kubectl = shutil.which("kubectl") is not None and shutil.which("openssl") is not None
            with KubeTestServer(cluster, tls=real_kubectl, reference=reference) as kube:
                yield {"grafana": grafana, "moto": moto, "kube": kube, "cluster": cluster, "prometheus": prometheus}


@pytest.fixture
def repository(tmp_path):
    """A user's repository: settings, their definitions, and the committed build/."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (tmp_path / "home").mkdir()
    for folder in ("dashboards", "alarms"):
        shutil.copytree(REPO / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "gpudash.yaml").write_text("definitions:\n  dashboards: dashboards\n  alarms: alarms\n"
                                       "clusters:\n  - {name: gpu-cluster, region: us-east-1}\n")
    return repo


def _generate(repo: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GPUDASH_CONFIG", None)
    result = subprocess.run([sys.executable, "-m", "tests.support.standins", "gpudash", "generate"], cwd=repo,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_the_readme_workflow_checks_plans_and_publishes(stack, repository, tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("aws",) if stack["kube"].ca_data else ("kubectl", "aws"):
        _tool(tools, name)
    runner = Runner(repository, tools, {
        "GRAFANA_URL": stack["grafana"].url, "GRAFANA_TOKEN": ADMIN, "PROMETHEUS_URL": stack["prometheus"].url,
        "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/gpudash-ci", "KUBE_TEST_SERVER": stack["kube"].url,
        "KUBE_TEST_CA": stack["kube"].ca_data or "",
    }, stack["moto"].url)
    _generate(repository)  # the user generates and commits build/

    # merge to main: everything passes and is published, each manifest into its namespace
    results = runner.run("push")
    assert [(name, code) for name, code, _ in results] == [
        ("build/ is what the definitions generate", 0), ("Lint what ships", 0), ("Cluster access", 0),
        ("Publish", 0)], results
    assert "configmap/prometheus-cwagentconfig serverside-applied" in results[-1][2]
    # the test's Prometheus loads no PrometheusRule: the counters' recordings are missing, which the push says and
    # publishes anyway (the rate panels draw once the rule group is loaded; it failed the publish before)
    assert "step_seconds (rule group 'gpudash-counters'); " in results[-1][2]
    assert "step_seconds (rule group 'gpudash-counters-3'): not loaded, failing or stopped" in results[-1][2]
    assert "published anyway (they draw once the group is loaded)" in results[-1][2]
    assert "prometheusrule.monitoring.coreos.com/gpudash-gpu-alerts serverside-applied" in results[-1][2] or \
        not stack["kube"].ca_data  # what the real kubectl prints
    assert sorted(stack["grafana"].state.dashboards) == [
        "gpudash-all-metrics", "gpudash-by-pod", "gpudash-health", "gpudash-overview"]
    alarms = stack["moto"].client("cloudwatch", "us-east-1").describe_alarms()["MetricAlarms"]
    assert alarms and all(a["AlarmName"].startswith("gpudash-gpu-cluster-") for a in alarms)
    cluster = stack["cluster"]
    assert {("amazon-cloudwatch", "prometheus-cwagentconfig"), ("amazon-cloudwatch", "prometheus-config")} <= \
        set(cluster.configmaps)
    assert not [key for key in cluster.configmaps if key[0] == "default"]
    assert ("gpu-operator", "gpudash-dcgm-exporter") in {
        (m["metadata"]["namespace"], m["metadata"]["name"]) for m in cluster.service_monitors}
    # one PrometheusRule per rule group, each in the namespace the settings give
    built = list(yaml.safe_load_all((repository / "build" / "k8s" / "prometheusrule.yaml").read_text()))
    assert sorted((r["metadata"]["namespace"], r["metadata"]["name"]) for r in cluster.prometheus_rules) == \
        sorted(("gpu-operator", r["metadata"]["name"]) for r in built)
    assert len(built) >= 3 and {"gpudash-gpu-alerts", "gpudash-counters"} <= {r["metadata"]["name"] for r in built}

    # a pull request that changes a definition but not build/: --check fails the job
    overview = repository / "dashboards" / "gpu_overview.py"
    overview.write_text(overview.read_text().replace('"GPU temperature"', '"GPU die temperature"'))
    results = runner.run("pull_request", ref="refs/pull/7/merge")
    assert [(name, code) for name, code, _ in results] == [("build/ is what the definitions generate", 1)]
    assert "changed  grafana/gpudash-overview.json" in results[0][2]
    assert "run `gpudash generate` and commit the result" in results[0][2]

    # the same pull request with build/ regenerated: checks pass and the plan shows the change
    _generate(repository)
    results = runner.run("pull_request", ref="refs/pull/7/merge")
    assert [(name, code) for name, code, _ in results] == [
        ("build/ is what the definitions generate", 0), ("Lint what ships", 0), ("Plan", 0)], results
    plan = results[-1][2]
    assert re.search(r"update\s+grafana dashboard gpudash-overview", plan), plan
    assert "GPU die temperature" in plan

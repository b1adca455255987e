"""Benchmark: wall time of `gpudash verify` as a whole process against a healthy local stack: a Kubernetes
API test server, a real Prometheus scraping a replay exporter, moto's CloudWatch. Median of 5 fresh
processes for all four groups, then for each group alone (the others skipped), to show where it goes. Run where
`gpudash generate` wrote its build (./build), as a user runs it after generating and applying: the kube group reads the
dashboards' uids there (grafana_inputs); the kube group alone is measured without the build too, rendering them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._timing import RUNS, SMOKE, measure, record, reference_dir, run_printing  # noqa: E402
from generator.artifacts import build  # noqa: E402
from generator.names import is_counter_group  # noqa: E402
from generator.output import RULES_FILE, SERVICE_MONITOR_FILE, agent_file, encode  # noqa: E402
from generator.project import load_project  # noqa: E402
from generator.render.scrape import scrape_job  # noqa: E402
from tests.support import kube_state  # noqa: E402
from tests.support.kube_server import KubeCluster, KubeTestServer  # noqa: E402
from tests.support.moto_server import MotoServer  # noqa: E402
from tests.support.prometheus_server import Prometheus, for_file_sd, scraped_every  # noqa: E402
from tests.support.replay_exporter import ReplayExporter, relabel_payload  # noqa: E402

REFERENCE = reference_dir()
TARGET_SECONDS = 0.5
GROUPS = ("kube", "exporter", "prometheus", "cloudwatch")
# At the smallest size (GPUDASH_BENCH_SMOKE=1) one group alone shows that the per-group line runs: each group's
# figure means nothing there, and every verify process costs the suite about half a second of CPU.
ALONE = GROUPS[-1:] if SMOKE else GROUPS


def _stack(work: Path, project, payload: str, exporter, ksm, moto) -> tuple[KubeCluster, dict, list[str]]:
    cluster = KubeCluster(REFERENCE)
    cluster.metrics_payload = payload
    files = encode(build(project))
    for document in yaml.safe_load_all(files[agent_file("gpu-cluster")]):
        cluster.configmap(document["metadata"]["namespace"], document["metadata"]["name"], document["data"])
    # applied as kubectl applies them: gpudash's labels and settings marks kept (verify fails one without them)
    cluster.service_monitors = [{**m, "metadata": {**m["metadata"], "namespace": "gpu-operator"}}
                                for m in yaml.safe_load_all(files[SERVICE_MONITOR_FILE])]
    # what the agent publishes of one busy GPU, and the exporter DaemonSet's desired count (the data-missing alarm's)
    moto.put_dcgm_metrics("train-a-0")
    targets = work / "targets.json"
    targets.write_text(json.dumps([{"targets": [exporter.address], "labels": {
        "__meta_kubernetes_namespace": "gpu-operator", "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
        "__meta_kubernetes_pod_container_port_number": "9400", "__meta_kubernetes_pod_name": "nvidia-dcgm-exporter-ax",
        "__meta_kubernetes_pod_node_name": "gpu-node-a"}}]))
    job = {**for_file_sd(scrape_job(project.settings), [str(targets)]), "scrape_interval": "1s", "scrape_timeout": "1s"}
    # kube-state-metrics of the exporter DaemonSet, as the data-missing rule reads it
    ksm_job = {"job_name": "kube-state-metrics", "honor_labels": True, "scrape_interval": "1s",
               "static_configs": [{"targets": [ksm.address]}]}
    # the counters' recording rules the Grafana rate panels read, deployed as the build ships them, made for this
    # stack's scrape interval (a stack without them fails verify's `counter recording rules`): made for the build's
    # 30 s their first step waits for a whole 30 s boundary's scrapes, up to a minute of an otherwise idle stack
    counters = [g for g in yaml.safe_load(files[RULES_FILE])["groups"] if is_counter_group(g["name"])]
    seconds = project.settings.scrape.seconds
    rules = work / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": [{**group, "interval": "1s", "rules": [
        {**rule, "expr": scraped_every(rule["expr"], seconds, 1)} for rule in group["rules"]]} for group in counters]}))
    # and the groups as the build ships them, evaluated once a minute: verify reads back whether the rules Prometheus
    # lists for the recordings are the build's
    shipped = work / "shipped-rules.yaml"
    shipped.write_text(yaml.safe_dump({"groups": [{**group, "interval": "1m"} for group in counters]}))
    recorded = [rule["record"] for group in counters for rule in group["rules"]
                if rule["record"].split(":")[1] in payload]  # those of the counters the exporter writes
    return cluster, {"global": {"scrape_interval": "1s"}, "scrape_configs": [job, ksm_job],
                     "rule_files": [str(rules), str(shipped)]}, recorded


def main() -> None:
    if REFERENCE is None:
        return
    project = load_project()
    payload = relabel_payload((REFERENCE / "exporter" / "blog-a10g-k8s.prom").read_text(), pod="train-a-0")
    counts = kube_state.payload({"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter",
                                 **kube_state.OPERATOR_LABELS}, 2, 2)
    with tempfile.TemporaryDirectory() as scratch, ReplayExporter(payload) as exporter, \
            ReplayExporter(counts) as ksm, MotoServer() as moto:
        work = Path(scratch)
        (work / "empty").mkdir()
        cluster, config, recorded = _stack(work, project, payload, exporter, ksm, moto)
        with Prometheus(work, config) as prometheus, KubeTestServer(cluster) as kube:
            prometheus.wait_for('DCGM_FI_DEV_GPU_UTIL{pod="train-a-0"}')
            prometheus.wait_for("kube_daemonset_status_desired_number_scheduled")
            for name in recorded:  # verify's `counter recording rules` looks for each, over every rule group
                prometheus.wait_for(name)
            # recorded: from now on evaluated once a minute (verify reads whether each is written), not every second
            # beside the measured runs (about 0.2 CPU-s an evaluation, a tenth of this two-CPU machine's time)
            prometheus.evaluate_every("1m")
            env = {**os.environ, "KUBECONFIG": str(kube.kubeconfig(work / "kubeconfig")),
                   "AWS_ENDPOINT_URL": moto.url, "PROMETHEUS_URL": prometheus.url}
            gpudash = str(Path(sys.executable).parent / "gpudash")
            # the build, where verify runs (the bundled settings: no gpudash.yaml there)
            subprocess.run([gpudash, "generate", "--out", str(work / "build")], env=env, check=True,
                           stdout=subprocess.DEVNULL)
            command = [gpudash, "verify", "--output", "json"]
            if SMOKE:  # the suite runs this beside other work: a loaded machine must not read as an unhealthy stack
                command += ["--timeout", "120"]
            # the health check; at the smallest size (one run, GPUDASH_BENCH_SMOKE=1) it is the measured run too
            first, printed = run_printing(command, env=env, cwd=work)
            checks = json.loads(printed)["checks"]
            failing = [f"{c['group']}/{c['name']}" for c in checks if c["status"] == "fail"]
            if failing:
                raise SystemExit(f"the stack is not healthy: {', '.join(failing)}")
            # the one warning a healthy stack keeps: the A10G of the recorded payload reports no HBM temperature
            # and that exporter no reserved framebuffer (a fact of the payload, not of the stack)
            warned = [f"{c['group']}/{c['name']}: {c['detail']}" for c in checks if c["status"] == "warn"]
            whole = first if SMOKE else measure(command, env=env, cwd=work)
            alone = {group: measure(command + [arg for other in GROUPS if other != group for arg in ("--skip", other)],
                                    env=env, cwd=work) for group in ALONE}
            if not SMOKE:  # the kube group where no build is at hand (a CI job that did not generate): rendered
                alone["kube (no build at hand)"] = measure(
                    command + [arg for other in GROUPS if other != "kube" for arg in ("--skip", other)], env=env,
                    cwd=work / "empty")
    verdict = "within" if whole.seconds <= TARGET_SECONDS else "over"
    print(f"gpudash verify, 4 groups, {len(checks)} checks, whole process: {whole} median of {RUNS} "
          f"({verdict} the {TARGET_SECONDS} s target)")
    for group, timing in alone.items():
        print(f"  {group} group alone: {timing}")
    record(f"`gpudash verify`, 4 groups ({len(checks)} checks), healthy local stack", str(whole),
           f"≤ {TARGET_SECONDS} s", whole.seconds <= TARGET_SECONDS)
    for warning in warned:
        print(f"  warning: {warning}")


if __name__ == "__main__":
    main()

"""A GPU no pod holds, scraped through a ServiceMonitor whose targets keep the exporter pod's own labels, carries the
exporter pod as its workload pod: `gpudash verify` says so, on a real Prometheus.

Real exporters differ on an idle GPU: an older one writes `container="",namespace="",pod=""`
(NVIDIA/dcgm-exporter #188), current releases write no pod label at all (transformation/kubernetes.go sets them only
where a pod holds the device). Users who find the workload renamed `exported_pod` set `honorLabels: true` on the GPU
operator's or the chart's ServiceMonitor (#85, #27). Then
Prometheus writes the target's `pod`, `namespace` and `container` (the exporter pod's) on every series that has none:
the current exporter's idle GPU reads as held by `gpu-operator/nvidia-dcgm-exporter-x7k2p`, the older exporter's empty
labels count as present and keep it without. The ServiceMonitor as shipped (honorLabels: false) with no workload
running writes the exporter pod on every GPU, and the workload label arrives as `pod` alike. gpudash's own
ServiceMonitor drops the target's three labels: nothing is named. An exporter run as a sidecar in the workload's pod
(no Kubernetes mapping, no pod labels) is scraped as that pod, which does hold the GPUs: nothing is wrong there.

Truth: node-a's GPU 1 and (as shipped) node-b's GPU 1 are held by no pod. verify said "'pod' as configured" on each.
gpudash's panels and alerts read such a GPU as held by no pod (tests/integration/test_exporter_pod_as_no_pod.py);
verify warns, naming the exporter pods and the ServiceMonitor that writes none (other queries of the Prometheus show
the exporter pod holding the GPU).
"""

from __future__ import annotations

import copy
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from generator.preview.interpolate import interpolate, variables
from generator.render.scrape import service_monitor
from tests.support.operator_scrape import endpoint_target, operator_monitor, scrape_config
from tests.support.projects import bundled_panel, bundled_project
from tests.support.prometheus_server import Prometheus, counted_inline
from tests.support.replay_exporter import ReplayExporter
from tests.support.verify_deadline import deadline

ONLY_PROMETHEUS = ("--skip", "kube", "--skip", "exporter", "--skip", "cloudwatch")
FIELDS = {"DCGM_FI_DEV_GPU_TEMP": 50, "DCGM_FI_DEV_POWER_USAGE": 100, "DCGM_FI_DEV_GPU_UTIL": 80,
          "DCGM_FI_DEV_FB_USED": 1000, "DCGM_FI_DEV_FB_FREE": 9000}
# node -> (exporter pod, the exporter release's way of writing an idle GPU: None = no labels, "" = empty labels)
NODES = {"node-a": ("nvidia-dcgm-exporter-x7k2p", None), "node-b": ("nvidia-dcgm-exporter-q8w2z", "")}


def _page(node: str, idle: str | None, held: bool = True, gpus: tuple[int, ...] = (0, 1), split: int = 0) -> str:
    """`split`: GPU 1 split into that many MIG instances (none held), each its series (GPU_I_ID)."""
    lines = []
    for metric, value in FIELDS.items():
        lines.append(f"# TYPE {metric} gauge")
        for gpu in gpus:
            labels = (f'gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A10G",'
                      f'Hostname="{node}"')
            if gpu == 0 and held:
                labels += f',container="main",namespace="ml",pod="train-{node}"'
            elif idle is not None:
                labels += f',container="{idle}",namespace="{idle}",pod="{idle}"'
            instances = [f',GPU_I_ID="{k}",GPU_I_PROFILE="1g.10gb"' for k in range(1, split + 1)] \
                if gpu == 1 and split else [""]
            lines += [f"{metric}{{{labels}{instance}}} {value}" for instance in instances]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def scrapes(reference, tmp_path_factory):
    """{path: Prometheus} scraping node-a's and node-b's exporters every second through the GPU operator's
    ServiceMonitor with honorLabels: true, as shipped (no workload running), and gpudash's own."""
    honoring = operator_monitor(reference, node_relabeling=True)
    honoring["spec"]["endpoints"][0]["honorLabels"] = True
    monitors = {"operator, honorLabels": (honoring, True), "operator as shipped, no workload": (
        operator_monitor(reference, node_relabeling=True), False),
        "gpudash": ({**service_monitor(bundled_project().settings)}, True),
        "sidecar, honorLabels": (copy.deepcopy(honoring), None),
        "operator, honorLabels, MIG": (copy.deepcopy(honoring), True)}
    with ReplayExporter(_page("node-a", None)) as a, ReplayExporter(_page("node-b", "")) as b, \
            ReplayExporter(_page("node-a", None, held=False)) as idle_a, \
            ReplayExporter(_page("node-b", "", held=False)) as idle_b, \
            ReplayExporter(_page("node-a", None, held=False, gpus=(0,))) as sidecar, \
            ReplayExporter(_page("node-a", None, split=3)) as mig_a, ReplayExporter(_page("node-b", "", split=3)) as mig_b:
        servers = {}
        for name, (monitor, held) in monitors.items():
            monitor["metadata"]["namespace"] = "gpu-operator"
            folder = tmp_path_factory.mktemp("prom-target-pod")
            endpoint = monitor["spec"]["endpoints"][0]
            targets = [(exporter, "gpu-operator", pod, node) for exporter, (node, (pod, _)) in
                       zip((mig_a, mig_b) if name.endswith("MIG") else (a, b) if held else (idle_a, idle_b),
                           NODES.items())] if held is not None else \
                [(sidecar, "ml", "train-sidecar-0", "node-a")]  # the workload's pod, its GPU 0 the exporter's
            (folder / "sd.json").write_text(json.dumps([endpoint_target(
                exporter.address, namespace=namespace, service="nvidia-dcgm-exporter",
                service_labels=monitor["spec"]["selector"]["matchLabels"], port=endpoint["port"], pod=pod,
                container="nvidia-dcgm-exporter", node=node) for exporter, namespace, pod, node in targets]))
            servers[name] = Prometheus(folder, {"global": {"scrape_interval": "1s"},
                                                "scrape_configs": [scrape_config(monitor, str(folder / "sd.json"))]})
        try:
            with ThreadPoolExecutor(len(servers)) as pool:
                list(pool.map(Prometheus.start, servers.values()))
            for name, server in servers.items():
                server.wait_for('DCGM_FI_DEV_GPU_TEMP', count=1 if name.startswith("sidecar") else
                                8 if name.endswith("MIG") else 4)
            yield servers
        finally:
            for server in servers.values():
                server.stop()


def _pod_check(cli, url: str) -> dict:
    code, stdout, stderr = cli("verify", "--output", "json", *ONLY_PROMETHEUS, "--prometheus-url", url, *deadline(()))
    assert "Traceback" not in stderr, stderr
    return next(c for c in json.loads(stdout)["checks"] if c["name"] == "workload pod label")


def test_a_gpu_carrying_its_scrape_targets_own_pod_is_warned_of_by_the_workload_pod_check(scrapes, cli):
    check = _pod_check(cli, scrapes["operator, honorLabels"].url)
    assert check["status"] == "warn", check
    assert check["detail"].startswith("1 GPU carries its scrape target's own pod as the workload's 'pod': "
                                      "gpu-operator/nvidia-dcgm-exporter-x7k2p (1 GPU): "), check["detail"]
    assert "build/k8s/servicemonitor.yaml" in check["fix"], check["fix"]
    assert "labeldrop, regex: pod|namespace|container" in check["fix"], check["fix"]

    check = _pod_check(cli, scrapes["operator as shipped, no workload"].url)
    assert check["status"] == "warn" and check["detail"].startswith(
        "4 GPUs carry their scrape target's own pod as the workload's 'pod': gpu-operator/nvidia-dcgm-exporter-q8w2z "
        "(2 GPUs), gpu-operator/nvidia-dcgm-exporter-x7k2p (2 GPUs): "), check


def test_a_mig_gpu_whose_instances_carry_the_exporter_pod_counts_once(scrapes, cli):
    """node-a's GPU 1 split into 3 instances, none held: one GPU carries the exporter pod (each instance's series)."""
    check = _pod_check(cli, scrapes["operator, honorLabels, MIG"].url)
    assert check["status"] == "warn" and check["detail"].startswith(
        "1 GPU carries its scrape target's own pod as the workload's 'pod': gpu-operator/nvidia-dcgm-exporter-x7k2p "
        "(1 GPU): "), check


def test_a_federated_prometheus_still_shows_the_exporter_pod_a_gpu_carries(scrapes, cli, tmp_path):
    """A Prometheus that federates the one scraping the exporters (honor_labels, as federation is set up) holds the
    same series, the exporter pod on node-a's idle GPU as its workload's. Its own `up` is the federation job's, not
    the exporter's target: the GPU is named all the same."""
    upstream = scrapes["operator, honorLabels"]
    federating = Prometheus(tmp_path, {"global": {"scrape_interval": "1s"}, "scrape_configs": [{
        "job_name": "federate", "honor_labels": True, "metrics_path": "/federate",
        "params": {"match[]": ['{__name__=~"DCGM_FI_.+"}']},
        "static_configs": [{"targets": [upstream.url.removeprefix("http://")]}]}]}).start()
    try:
        federating.wait_for("DCGM_FI_DEV_GPU_TEMP", count=4)
        check = _pod_check(cli, federating.url)
    finally:
        federating.stop()
    assert check["status"] == "warn" and check["detail"].startswith(
        "1 GPU carries its scrape target's own pod as the workload's 'pod': gpu-operator/nvidia-dcgm-exporter-x7k2p "
        "(1 GPU): "), check


@pytest.mark.parametrize("path", ["gpudash", "sidecar, honorLabels"])
def test_gpudash_s_servicemonitor_or_an_exporter_in_the_workloads_pod_names_no_target_pod(scrapes, cli, path):
    check = _pod_check(cli, scrapes[path].url)
    assert (check["status"], check["detail"]) == ("ok", "'pod' as configured"), check


def test_pods_on_gpus_lists_the_workload_pods_alone_under_a_servicemonitor_keeping_its_targets_pod(scrapes):
    """Live scrapes through the honoring ServiceMonitor: node-a's idle GPU (the exporter pod its `pod`) is held by no
    pod in 'Pods on GPUs' (promql.pod_named; every panel, variable and alert: test_exporter_pod_as_no_pod)."""
    prometheus = scrapes["operator, honorLabels"]
    (target,) = bundled_panel("Pods on GPUs")["targets"]
    expr = interpolate(counted_inline(target["expr"], bundled_project()),
                       {"__range": "60s", "__interval": "1s", "__rate_interval": "4s",
                        **variables({}, ("namespace", "pod", "node", "gpu"))})
    shown = {(s["metric"].get("namespace"), s["metric"].get("pod")): float(s["value"][1])
             for s in prometheus.query(expr)}
    assert shown == {("ml", "train-node-a"): 1.0, ("ml", "train-node-b"): 1.0}, shown

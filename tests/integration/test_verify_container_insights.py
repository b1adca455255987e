"""gpudash verify and apply with cloudwatch.source: container-insights, against the Kubernetes API test server
(official client) holding the add-on's objects shaped as the CloudWatch agent operator makes them, and
moto's CloudWatch holding (or not) the add-on's GPU metrics."""

from __future__ import annotations

import json

import pytest

from tests.support.container_insights_addon import addon_pod, install_addon, put_addon_metrics, refresh_addon
from tests.support.kube_server import KubeCluster, KubeTestServer
from tests.support.moto_server import MotoServer
from tests.support.verify_deadline import deadline

GPU_NODES = ("gpu-node-a", "gpu-node-b")


@pytest.fixture(scope="module")
def moto():
    with MotoServer() as server:
        yield server


@pytest.fixture
def addon_stack(reference, moto, tmp_path, monkeypatch, cli):
    (tmp_path / "gpudash.yaml").write_text("cloudwatch:\n  source: container-insights\n")
    monkeypatch.chdir(tmp_path)
    cluster = KubeCluster(reference, gpu_nodes=GPU_NODES)
    install_addon(cluster, GPU_NODES)
    moto.reset()
    put_addon_metrics(moto.client("cloudwatch", "us-east-1"))
    with KubeTestServer(cluster) as kube:
        monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig(tmp_path / "kubeconfig")))
        monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)

        def verify(*args):
            code, stdout, stderr = cli("verify", "--output", "json", "--skip", "exporter", "--skip", "prometheus",
                                       *deadline(args), *args)
            assert stdout.startswith("{"), stderr
            return code, {(c["group"], c["name"]): c for c in json.loads(stdout)["checks"]}

        yield cluster, verify


def _failures(checks):
    return {key: c["detail"] for key, c in checks.items() if c["status"] == "fail"}


def test_the_addon_deployed_and_feeding_passes(addon_stack):
    _, verify = addon_stack
    code, checks = verify()
    assert _failures(checks) == {}
    assert code == 0
    assert checks[("kube", "add-on GPU node coverage")]["detail"] == \
        "agent and DCGM exporter ready on all 2 GPU nodes"
    assert checks[("kube", "add-on exporter Service")]["detail"] == "dcgm-exporter-service exposes 9400"
    assert checks[("cloudwatch", "gpu-cluster metrics")]["detail"] == \
        "4 sampled GPU metrics arriving in ContainerInsights"
    assert checks[("cloudwatch", "gpu-cluster data-missing signals")]["status"] == "ok"
    # The Prometheus path's agent is not looked for: the add-on replaces it.
    assert ("kube", "CloudWatch agent") not in checks


def test_an_exporter_not_ready_on_a_gpu_node_fails(addon_stack):
    cluster, verify = addon_stack
    cluster.pods = [p for p in cluster.pods if p["metadata"]["name"] != "dcgm-exporter-bz"]
    cluster.pods.append(addon_pod("dcgm-exporter", "gpu-node-b", ready=False))
    refresh_addon(cluster)
    code, checks = verify()
    assert code == 1
    failures = _failures(checks)
    assert failures[("kube", "add-on GPU node coverage")] == "no ready DCGM exporter pod on gpu-node-b"
    assert failures[("kube", "add-on DCGM exporter")] == (
        "1/2 pods available (1 ready), 2 of 2 on the current pod template")


def test_a_gpu_node_without_the_agent_fails(addon_stack):
    cluster, verify = addon_stack
    cluster.nodes.append(cluster.node("gpu-node-c", gpus=4))
    cluster.pods.append(addon_pod("dcgm-exporter", "gpu-node-c"))
    code, checks = verify()
    assert code == 1
    assert _failures(checks)[("kube", "add-on GPU node coverage")] == "no ready agent pod on gpu-node-c"


def test_the_addon_not_installed_says_how_to_install_it(addon_stack):
    cluster, verify = addon_stack
    cluster.daemonsets.clear()
    cluster.services.pop("dcgm-exporter-service")
    code, checks = verify()
    assert code == 1
    failed = {key: c for key, c in checks.items() if c["status"] == "fail"}
    assert failed[("kube", "add-on agent")]["detail"] == "no DaemonSet amazon-cloudwatch/cloudwatch-agent"
    assert "build/cloudwatch/container-insights-addon.json" in failed[("kube", "add-on agent")]["fix"]
    assert failed[("kube", "add-on exporter Service")]["detail"].startswith(
        "no Service labelled k8s-app=dcgm-exporter-service in amazon-cloudwatch")


def test_no_gpu_metrics_in_container_insights_fails_with_the_update_addon_command(addon_stack, moto):
    _, verify = addon_stack
    moto.reset()
    # Prometheus-path metrics do not count: the add-on publishes in ContainerInsights.
    moto.put_dcgm_metrics("train-0")
    code, checks = verify()
    assert code == 1
    check = checks[("cloudwatch", "gpu-cluster metrics")]
    assert check["detail"] == "no GPU metrics in ContainerInsights for gpu-cluster in the last 3 h"
    assert "aws eks update-addon --cluster-name gpu-cluster --addon-name amazon-cloudwatch-observability" in check["fix"]


def test_the_data_missing_alarm_s_signals_are_checked(addon_stack, moto):
    """The alarm reads each GPU node's capacity and the cluster's node count: GPU metrics without the capacity
    leave it expecting no GPU (a warning), no node count leaves it alarming (a failure)."""
    _, verify = addon_stack
    moto.reset()
    put_addon_metrics(moto.client("cloudwatch", "us-east-1"), signals=("cluster_node_count",))
    code, checks = verify()
    check = checks[("cloudwatch", "gpu-cluster data-missing signals")]
    assert (code, check["status"]) == (0, "warn")
    assert check["detail"].startswith("GPU metrics arrive but no node_gpu_limit [ClusterName]")
    moto.reset()
    put_addon_metrics(moto.client("cloudwatch", "us-east-1"), signals=("node_gpu_limit",))
    code, checks = verify()
    assert code == 1
    assert _failures(checks) == {("cloudwatch", "gpu-cluster data-missing signals"): (
        "no cluster_node_count [ClusterName] in ContainerInsights in the last 3 h: the data-missing alarm reads it "
        "as the add-on's agent running and alarms without it")}
    # The DaemonSet counts (the agent stopped on one GPU node), under either name of the leader's receiver.
    for signals, status in ((("status_replicas_available",), "ok"), (("daemonset_status_number_available",), "ok")):
        moto.reset()
        put_addon_metrics(moto.client("cloudwatch", "us-east-1"),
                          signals=("node_gpu_limit", "cluster_node_count", *signals))
        code, checks = verify()
        check = checks[("cloudwatch", "gpu-cluster data-missing signals")]
        assert (code, check["status"]) == (0, status), signals
    assert check["detail"].startswith("cluster_node_count, node_gpu_limit and DaemonSet pod counts arriving")
    moto.reset()
    put_addon_metrics(moto.client("cloudwatch", "us-east-1"), signals=("node_gpu_limit", "cluster_node_count"))
    code, checks = verify()
    assert checks[("cloudwatch", "gpu-cluster data-missing signals")]["detail"] == (
        "no DaemonSet pod counts [ClusterName, Namespace, PodName] in ContainerInsights in the last 3 h: the "
        "data-missing alarm cannot see the agent stop on one GPU node")


def test_gpus_shared_as_several_nvidia_com_gpu_fail_the_data_missing_alarm_s_check(addon_stack, tmp_path):
    """The alarm expects one GPU observation per nvidia.com/gpu: a node that time-slices each GPU into 4 (GPU feature
    discovery's labels say so) would keep it in ALARM (named first: gpu-node-a's MIG devices are the next test's)."""
    cluster, verify = addon_stack
    code, checks = verify()
    assert checks[("kube", "add-on data-missing GPU count")]["status"] == "ok"
    sliced = cluster.share_gpus()
    code, checks = verify()
    assert code == 1
    assert _failures(checks) == {("kube", "add-on data-missing GPU count"): (
        "gpu-node-b advertises 4 nvidia.com/gpu (nvidia.com/gpu.sharing-strategy time-slicing): the data-missing "
        "alarm expects one GPU per nvidia.com/gpu and would stay in ALARM while any share is free")}
    sliced["metadata"]["labels"].pop("nvidia.com/gpu.sharing-strategy")  # an older feature discovery: the count
    code, checks = verify()
    assert checks[("kube", "add-on data-missing GPU count")]["detail"].startswith(
        "gpu-node-b advertises 4 nvidia.com/gpu (nvidia.com/gpu.count 1)")
    no_alarm = tmp_path / "no-alarm.yaml"  # without the alarm there is nothing to check
    no_alarm.write_text("cloudwatch:\n  source: container-insights\nalarms:\n  expected_gpus: none\n")
    code, checks = verify("--config", str(no_alarm))
    assert ("kube", "add-on data-missing GPU count") not in checks


def test_gpus_split_into_mig_instances_fail_the_data_missing_alarm_s_check(addon_stack):
    """The add-on publishes a GPU split into MIG instances once per collection: MIG devices counted as nvidia.com/gpu
    (the single strategy, GPU feature discovery's product naming the profile) keep the per-GPU alarm in ALARM with
    every GPU reporting, and a GPU the mixed strategy splits beside whole GPUs, published but not counted, hides a GPU
    missing elsewhere (tests/unit/test_container_insights_data_missing.py): both fail, whole GPUs pass."""
    cluster, verify = addon_stack
    single = cluster.node("gpu-node-a", gpus=7)
    single["metadata"]["labels"].update({"nvidia.com/gpu.count": "7", "nvidia.com/mig.strategy": "single",
                                         "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"})
    assert _gpu_count_failure(cluster, verify, single) == (
        "gpu-node-a advertises 7 nvidia.com/gpu MIG devices (nvidia.com/gpu.product NVIDIA-A100-SXM4-40GB-MIG-1g.5gb, "
        "MIG's single strategy): the per-GPU data-missing alarm expects one GPU per nvidia.com/gpu, and the add-on "
        "publishes a GPU split into MIG instances once: the single strategy's instances keep it in ALARM with every GPU "
        "reporting, the mixed strategy's GPUs hide a GPU missing elsewhere")
    assert verify()[1][GPU_COUNT]["fix"].startswith("write alarms.expected_gpus: none")
    mixed = cluster.node("gpu-node-a", gpus=1)
    mixed["status"]["capacity"]["nvidia.com/mig-3g.20gb"] = "2"
    assert _gpu_count_failure(cluster, verify, mixed).startswith(
        "gpu-node-a advertises 1 nvidia.com/gpu beside 2 nvidia.com/mig-3g.20gb (MIG's mixed strategy): ")
    cluster.nodes = [cluster.node("gpu-node-a", gpus=1), *cluster.nodes[1:]]
    assert verify()[1][GPU_COUNT]["status"] == "ok"


GPU_COUNT = ("kube", "add-on data-missing GPU count")


def _gpu_count_failure(cluster, verify, node) -> str:
    """The add-on GPU count check's failure with `node` in place of gpu-node-a (verify fails)."""
    cluster.nodes = [node, *cluster.nodes[1:]]
    code, checks = verify()
    assert code == 1
    return _failures(checks)[GPU_COUNT]


def test_a_gpu_node_advertising_no_nvidia_com_gpu_fails_the_data_missing_alarm_s_check(addon_stack):
    """The alarm counts the nodes the add-on's DCGM exporter runs on against those publishing node_gpu_limit (their
    nvidia.com/gpu capacity): a node whose GPUs are all MIG instances of the mixed strategy, or whose GPUs no device
    plugin counts, is in the first count only and would keep it in ALARM."""
    cluster, verify = addon_stack
    mixed = cluster.node("gpu-node-a", gpus=0)
    mixed["status"]["capacity"].update({"nvidia.com/mig-1g.10gb": "4", "nvidia.com/mig-3g.40gb": "1"})
    assert _gpu_count_failure(cluster, verify, mixed) == (
        "gpu-node-a runs the add-on's DCGM exporter and advertises no nvidia.com/gpu: nvidia.com/mig-1g.10gb, "
        "nvidia.com/mig-3g.40gb (MIG's mixed strategy): the data-missing alarm counts such a node among the GPU "
        "nodes the exporter DaemonSet runs on, but never among those reporting nvidia.com/gpu, and would stay in ALARM")
    cluster.nodes = [cluster.node("gpu-node-a", gpus=0), *cluster.nodes[1:]]
    code, checks = verify()
    assert _failures(checks)[("kube", "add-on data-missing GPU count")].startswith(
        "gpu-node-a runs the add-on's DCGM exporter and advertises no nvidia.com/gpu: no device plugin counting its "
        "GPUs")
    cluster.pods = [p for p in cluster.pods if p["spec"]["nodeName"] != "gpu-node-a"]  # the exporter not there
    refresh_addon(cluster)
    code, checks = verify()
    assert checks[("kube", "add-on data-missing GPU count")]["status"] == "ok"


def test_metrics_of_another_cluster_name_do_not_count(addon_stack, moto):
    _, verify = addon_stack
    moto.reset()
    put_addon_metrics(moto.client("cloudwatch", "us-east-1"), cluster="some-other-cluster")
    code, checks = verify()
    assert code == 1
    assert _failures(checks)[("cloudwatch", "gpu-cluster metrics")].startswith("no GPU metrics in ContainerInsights")


def test_apply_publishes_with_a_wait_when_the_addon_is_ready_but_no_data_yet(addon_stack, moto, cli):
    moto.reset()
    code, stdout, stderr = cli("apply", "--dry-run")
    assert code == 0, stderr
    assert "no data yet in cloudwatch (no GPU metrics in ContainerInsights for gpu-cluster" in stderr
    assert "the add-on collects GPU metrics every 60 s (cloudwatch.addon_gpu_interval)" in stderr


def test_apply_is_refused_when_the_addon_is_not_deployed(addon_stack, moto, cli):
    cluster, _ = addon_stack
    moto.reset()
    cluster.daemonsets.pop(("amazon-cloudwatch", "dcgm-exporter"))
    code, _, stderr = cli("apply", "--dry-run")
    assert code == 3
    assert "kube/add-on DCGM exporter: no DaemonSet amazon-cloudwatch/dcgm-exporter" in stderr


def test_the_exporter_service_is_found_among_every_service_with_its_label(addon_stack):
    """Another Service with the add-on's label, listed first, does not hide the one that serves 9400."""
    cluster, verify = addon_stack
    service = cluster.services["dcgm-exporter-service"]
    other = json.loads(json.dumps(service))
    other["metadata"]["name"] = "dcgm-exporter-headless"
    other["spec"]["ports"] = [{"name": "other", "port": 8080}]
    cluster.services = {"dcgm-exporter-headless": other, **cluster.services}
    _, checks = verify()
    assert checks[("kube", "add-on exporter Service")]["status"] == "ok"
    assert checks[("kube", "add-on exporter Service")]["detail"] == "dcgm-exporter-service exposes 9400"
    cluster.services.pop("dcgm-exporter-service")
    _, checks = verify()
    assert checks[("kube", "add-on exporter Service")]["detail"] == \
        "Service dcgm-exporter-headless exposes [8080], not 9400"

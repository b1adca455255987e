"""gpudash verify against a local stack: a Kubernetes API test server (official client, kubeconfig),
a real Prometheus scraping a replay exporter, and moto's CloudWatch. Each scenario asserts the
exact failing check and its fix."""

from __future__ import annotations

import base64
import copy
import json
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from generator.artifacts import build
from generator.checks.kube import NO_PROMETHEUS_OBJECT
from generator.last_applied import LAST_APPLIED
from generator.markers import KUBERNETES_SELECTOR
from generator.output import encode
from generator.project import load_project
from generator.promql import counted_fields
from generator.render.alarms import counter_groups
from generator.render.scrape import scrape_job
from generator.resources import default_counters
from tests.support import kube_state
from tests.support.kube_server import TOKEN, KubeCluster, KubeTestServer
from tests.support.moto_server import MotoServer
from tests.support.projects import builds_kept, by_value, projects_kept
from tests.support.prometheus_server import READY_WITHIN, Prometheus, for_file_sd, scraped_every
from tests.support.replay_exporter import ReplayExporter, relabel_payload
from tests.support.verify_deadline import HANG_DETECTOR, deadline

WORKLOAD_POD = "train-a-0"
# libyaml where PyYAML was built with it: the same documents as safe_load, at ~1/40 of the CPU on the build's
# 370-650 KB rule and dashboard files the stand-in cluster is given (0.15 s each in pure Python)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@pytest.fixture(scope="module")
def payload(reference):
    return relabel_payload((reference / "exporter" / "blog-a10g-k8s.prom").read_text(), pod=WORKLOAD_POD)


@pytest.fixture(scope="module")
def exporter(payload):
    with ReplayExporter(payload) as server:
        yield server


# How often the counter recording group is evaluated. verify reads whether each recording is written (its latest
# sample within Prometheus' 5-minute look-back), never a recorded value; at every second, as a deployment evaluates
# it at its scrape interval, the group cost the module's Prometheus 14 of its 14.2 CPU-s (79 evaluations). Every
# RECORDED_EVERY until each recording is written (its second step), then every RECORDED_LATER: an evaluation costs
# the server about 0.17 CPU-s, and the module runs a minute or more.
RECORDED_EVERY = "5s"
RECORDED_LATER = "1m"


def _prometheus(workdir, *jobs, rules: bool = False, first_group_only: bool = False):
    """A Prometheus scraping every second; `rules`: with the counter recording rules Grafana's rate panels read
    (alarms.counter_groups), in the groups a deployment of the PrometheusRules has them, made for its 1 s scrapes
    (scraped_every) and evaluated every RECORDED_EVERY, and beside them, in a file of their own, as the build writes
    them (verify reads back whether the rules Prometheus lists are the build's), evaluated every RECORDED_LATER (made
    for 30 s scrapes, they would write the recordings a minute later); `first_group_only`: only the first 1 s group,
    gpudash-counters (what an apply by a role that may update PrometheusRules but not create them leaves where one
    object held every counter)."""
    config = {"global": {"scrape_interval": "1s"}, "scrape_configs": list(jobs)}
    if rules:
        project = load_project()
        built = [{**group, "interval": RECORDED_LATER} for group in counter_groups(
            counted_fields([q for d in project.grafana_definitions() for q in d.queries() if not q.raw_promql],
                           project.catalog), project.catalog, project.settings)]
        fast = [{**group, "interval": RECORDED_EVERY, "rules": [{**rule, "expr": scraped_every(rule["expr"], 30, 1)}
                                                               for rule in group["rules"]]}
                for group in built][:1 if first_group_only else None]
        (workdir / "rules.yaml").write_text(json.dumps({"groups": fast}))
        config["rule_files"] = [str(workdir / "rules.yaml")]
        if not first_group_only:
            (workdir / "built-rules.yaml").write_text(json.dumps({"groups": built}))
            config["rule_files"].append(str(workdir / "built-rules.yaml"))
    return Prometheus(workdir, config)


@pytest.fixture(scope="module")
def kube_state_metrics():
    """kube-state-metrics of the test cluster: the exporter DaemonSet on its two GPU nodes, both available."""
    with ReplayExporter(kube_state.payload({"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter",
                                            **kube_state.OPERATOR_LABELS}, 2, 2)) as server:
        yield server


def _file_sd_job(workdir, address, *, interval, timeout):
    """gpudash's own scrape job over a file_sd target shaped as the dcgm-exporter pod Kubernetes discovery finds."""
    targets = workdir / "targets.json"
    targets.write_text(json.dumps([{"targets": [address], "labels": {
        "__meta_kubernetes_namespace": "gpu-operator", "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
        "__meta_kubernetes_pod_container_port_number": "9400", "__meta_kubernetes_pod_name": "nvidia-dcgm-exporter-ax",
        "__meta_kubernetes_pod_node_name": "gpu-node-a"}}]))
    job = for_file_sd(scrape_job(load_project().settings), [str(targets)])
    job["scrape_interval"], job["scrape_timeout"] = interval, timeout
    return job


@pytest.fixture(scope="module")
def prometheuses(tmp_path_factory, exporter, kube_state_metrics):
    """The module's Prometheus servers, started side by side (each start waits for its readiness):
    `plain` runs gpudash's own job (workload labels arrive as `pod`); `exported` what a ServiceMonitor
    without honorLabels does (the target's own pod label wins); `new` has not scraped the exporter yet;
    `job_new` has gpudash's additional-scrape-configs job loaded with its exporter target, whose first
    scrape falls somewhere in a year (Prometheus places it at the target's own offset within the interval: at a day,
    it fell within the module's minute at one time of day, 12:4x UTC on 2026-12-05, and the target read down)."""
    plain = tmp_path_factory.mktemp("prom-plain")
    job_new = tmp_path_factory.mktemp("prom-job-new")
    servers = {
        "plain": _prometheus(plain, _file_sd_job(plain, exporter.address, interval="1s", timeout="1s"),
                             {"job_name": "kube-state-metrics", "honor_labels": True, "scrape_interval": "1s",
                              "static_configs": [{"targets": [kube_state_metrics.address]}]}, rules=True),
        "exported": _prometheus(tmp_path_factory.mktemp("prom-exported"), {
            "job_name": "dcgm-exporter", "scrape_interval": "1s", "scrape_timeout": "1s", "honor_labels": False,
            "static_configs": [{"targets": [exporter.address],
                                "labels": {"pod": "nvidia-dcgm-exporter-ax", "namespace": "gpu-operator"}}]},
            rules=True, first_group_only=True),
        "new": _prometheus(tmp_path_factory.mktemp("prom-new"), {"job_name": "other", "static_configs": []}),
        "job_new": _prometheus(job_new, _file_sd_job(job_new, "127.0.0.1:9", interval="1y", timeout="10s")),
    }
    try:
        with ThreadPoolExecutor(len(servers)) as pool:
            list(pool.map(Prometheus.start, servers.values()))
        yield servers
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture(scope="module")
def prometheus(prometheuses):
    """gpudash's own job: workload labels arrive as `pod`."""
    server = prometheuses["plain"]
    server.wait_for('DCGM_FI_DEV_GPU_UTIL{pod="%s"}' % WORKLOAD_POD)
    server.wait_for('kube_daemonset_status_number_available{daemonset="nvidia-dcgm-exporter"}')
    server.wait_for('{__name__=~"gpudash:.+:step_seconds"}', count=4)  # every counter's recording, at its second step
    server.evaluate_every(RECORDED_LATER)  # verify reads only whether each is written
    return server


@pytest.fixture(scope="module")
def prometheus_exported(prometheuses):
    """What a ServiceMonitor without honorLabels does: the target's own pod label wins."""
    server = prometheuses["exported"]
    server.wait_for('DCGM_FI_DEV_GPU_UTIL{exported_pod="%s"}' % WORKLOAD_POD)
    server.wait_for('{__name__=~"gpudash:.+:step_seconds"}')  # the first group's counters, at their second step
    server.evaluate_every(RECORDED_LATER)
    return server


@pytest.fixture(scope="module")
def moto():
    with MotoServer() as server:
        yield server


@pytest.fixture(autouse=True)
def loaded_once(monkeypatch):
    """A command here gets back the project loaded before from the same settings, counters and definitions
    (tests/support/projects.projects_kept), and a push, apply or plan the build of a project built before
    (builds_kept): these tests are about what verify and the publishing preflight find."""
    projects_kept(monkeypatch)
    builds_kept(monkeypatch)


@pytest.fixture(scope="module")
def default_documents():
    """The documents of the two files of the default project's build that the cluster installs, built and read
    once: each test gets its own copy of them."""
    files = encode(build(load_project(), grafana=False))  # the cluster's files: no dashboard needed
    return {name: list(yaml.safe_load_all(files[name]))
            for name in ("k8s/cwagent-prometheus-config-gpu-cluster.yaml", "k8s/servicemonitor.yaml")}


@pytest.fixture
def stack(reference, payload, moto, tmp_path, monkeypatch, cli, prometheus, default_documents):
    """A healthy cluster; tests break one thing each."""
    cluster = KubeCluster(reference)
    documents = copy.deepcopy(default_documents)
    for document in documents["k8s/cwagent-prometheus-config-gpu-cluster.yaml"]:
        cluster.applied(document)
    cluster.metrics_payload = payload
    # gpudash's ServiceMonitor in place of the operator's (which does not honor labels), as applied: its labels and
    # annotations say it is gpudash's, of these settings
    cluster.service_monitors = [{**m, "metadata": {**m["metadata"], "namespace": "gpu-operator"}}
                                for m in documents["k8s/servicemonitor.yaml"]]
    moto.reset()
    moto.put_dcgm_metrics(WORKLOAD_POD)
    with KubeTestServer(cluster) as kube:
        monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig(tmp_path / "kubeconfig")))
        monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)

        def verify(*args, prometheus_url=prometheus.url):
            code, stdout, stderr = cli("verify", "--output", "json", "--prometheus-url", prometheus_url,
                                       *deadline(args), *args)
            assert stdout.startswith("{"), stderr
            checks = json.loads(stdout)["checks"]
            return code, {(c["group"], c["name"]): c for c in checks}

        yield cluster, verify


def _failures(checks):
    return {key: (c["detail"], c["fix"]) for key, c in checks.items() if c["status"] == "fail"}


def test_all_healthy(stack):
    _, verify = stack
    code, checks = verify()
    assert _failures(checks) == {}
    assert code == 0
    assert {g for g, _ in checks} == {"kube", "exporter", "prometheus", "cloudwatch"}
    pinned = checks[("prometheus", "PromQL @ and negative offset")]["detail"]  # the range bars' modifiers
    assert re.fullmatch(r"a query with `@ end\(\)` and a negative offset is answered as Prometheus answers it "
                        r"\(Prometheus 2\.\d+\.\d+.*\)", pinned), pinned
    assert checks[("prometheus", "exporter pods in kube_pod_info")]["detail"] == (  # gpudash's job names the node
        "no exporter target without `node` (the GPU operator's ServiceMonitor as shipped): the data-missing rule takes "
        "no node from kube_pod_info")
    assert checks[("exporter", "metrics endpoint")]["detail"].startswith("service proxy gpu-operator/nvidia-dcgm-exporter")
    assert checks[("prometheus", "workload pod label")]["detail"] == "'pod' as configured"
    assert checks[("prometheus", "counter recording rules")]["detail"] == (
        "4 counters recorded by rule groups 'gpudash-counters', 'gpudash-counters-2', 'gpudash-counters-3', each by "
        "this build's rules")


def test_a_prometheus_missing_counter_recording_groups_is_a_failure_naming_each_unwritten_recording(
        stack, prometheus_exported):
    """The exporter's five counters with rate panels arrive; the Prometheus evaluates the first counters' group alone
    (gpudash-counters), as an apply by a role that may update PrometheusRules but not create them leaves it: kubectl
    goes on past the two it may not create, and the old object, updated, then holds the first group's counters alone.
    The check named one recording (the first missing) and the groups; it names each recording Prometheus does not
    write, by its group, and the PrometheusRules that hold them. A Prometheus with every group (test_all_healthy)
    passes it."""
    _, verify = stack
    _, checks = verify(prometheus_url=prometheus_exported.url)
    check = checks[("prometheus", "counter recording rules")]
    unwritten = ("gpudash:DCGM_FI_DEV_PCIE_REPLAY_COUNTER:step_increase, "
                 "gpudash:DCGM_FI_DEV_PCIE_REPLAY_COUNTER:step_seconds, "
                 "gpudash:DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS:step_increase, "
                 "gpudash:DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS:step_seconds (rule group 'gpudash-counters-2'); "
                 "gpudash:DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS:step_increase, "
                 "gpudash:DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS:step_seconds (rule group 'gpudash-counters-3')")
    assert check["status"] == "fail" and check["detail"] == (
        f"Prometheus writes no {unwritten}: not loaded, failing or stopped; the Grafana rate panels of "
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER, DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, "
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS show no data"), check
    assert check["fix"].startswith("apply build/k8s/prometheusrule.yaml, whose PrometheusRules gpudash-counters-2, "
                                   "gpudash-counters-3 hold them (kubectl apply goes on past an object it may not "
                                   "create"), check


def test_counter_recordings_by_rules_of_other_settings_than_these_are_a_failure_naming_them(stack, tmp_path):
    """The settings' scrape interval changed to 15 s and the rules not applied since: Prometheus goes on recording
    every counter by the rules of the 30 s settings (the build's, and the test's own made for its 1 s scrapes), and the
    rate panels show what those compute. The check read only that each recording is written, and said ok. It
    compares the rules Prometheus lists with the build's now (test_all_healthy: the 30 s settings' own build, each
    alike) and names those that differ."""
    _, verify = stack
    settings = tmp_path / "gpudash.yaml"
    settings.write_text("scrape:\n  interval: 15s\n")
    _, checks = verify("--skip", "kube", "--skip", "exporter", "--skip", "cloudwatch", "--config", str(settings))
    check = checks[("prometheus", "counter recording rules")]
    assert check["status"] == "fail" and check["detail"].startswith(
        "Prometheus records gpudash:DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION:step_increase, "
        "gpudash:DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION:step_seconds, "
        "gpudash:DCGM_FI_DEV_PCIE_REPLAY_COUNTER:step_increase, gpudash:DCGM_FI_DEV_PCIE_REPLAY_COUNTER:step_seconds, "
        "gpudash:DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS:step_increase and 3 more by rules other than this build's "
        "(expression or labels differ; loaded from "), check
    assert check["detail"].endswith(
        "): the Grafana rate panels of DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, DCGM_FI_DEV_PCIE_REPLAY_COUNTER, "
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, "
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS show what those rules compute"), check
    assert check["fix"].startswith("apply build/k8s/prometheusrule.yaml"), check


def test_a_run_loads_the_kubeconfig_once_and_reads_the_nodes_once(stack, tmp_path, monkeypatch):
    """The kube and exporter groups share one client: the kubeconfig's exec plugin (on EKS `aws eks get-token`, a
    process of its own) runs once a run, not once per group and again for the exporter's proxy read; the kube group's
    checks that look at the nodes and at the exporter's Services share one read of each."""
    cluster, verify = stack
    runs = tmp_path / "plugin-runs"
    plugin = tmp_path / "get-token.py"
    plugin.write_text(f"import json\nwith open({str(runs)!r}, 'a') as f:\n    f.write('run\\n')\n"
                      f"print(json.dumps({{'apiVersion': 'client.authentication.k8s.io/v1beta1', "
                      f"'kind': 'ExecCredential', 'status': {{'token': {TOKEN!r}}}}}))\n")
    with KubeTestServer(cluster) as kube:
        config = yaml.safe_load(kube.kubeconfig(tmp_path / "kubeconfig-exec").read_text())
        config["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                               "command": sys.executable, "args": [str(plugin)]}}
        (tmp_path / "kubeconfig-exec").write_text(yaml.safe_dump(config))
        monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig-exec"))
        code, checks = verify()
    assert _failures(checks) == {} and code == 0
    assert runs.read_text() == "run\n"
    assert kube.reads.count("/api/v1/nodes") == 1
    services = "/api/v1/namespaces/gpu-operator/services?labelSelector=app=nvidia-dcgm-exporter"
    assert kube.reads.count(services) == 2  # the kube group's checks, and the exporter group's choice of Service


def test_exporter_not_ready_on_one_gpu_node(stack):
    cluster, verify = stack
    cluster.pods[1] = cluster.exporter_pod("gpu-node-b", ready=False)
    cluster.refresh_status()
    code, checks = verify()
    assert code == 1
    assert _failures(checks)[("kube", "exporter pods ready")] == (
        "exporter not ready on gpu-node-b", "kubectl describe the exporter pod on that node; look at its events and logs")
    assert _failures(checks)[("kube", "exporter rollout")][0] == (
        "1/2 pods available (1 ready), 2 of 2 on the current pod template")


def test_gpu_node_without_an_exporter_pod(stack):
    cluster, verify = stack
    cluster.nodes.append(cluster.node("gpu-node-c", gpus=8))
    code, checks = verify()
    assert code == 1
    assert _failures(checks)[("kube", "GPU node coverage")] == (
        "GPU nodes without an exporter pod: gpu-node-c",
        "check the DaemonSet's nodeSelector and tolerations (the operator needs the label "
        "nvidia.com/gpu.deploy.dcgm-exporter=true)")


def test_pod_labels_missing_when_the_kubernetes_mapping_is_off(stack, payload):
    cluster, verify = stack
    cluster.set_env("DCGM_EXPORTER_KUBERNETES", "false")
    cluster.metrics_payload = re.sub(r',?(container|namespace|pod)="[^"]*"', "", payload)
    code, checks = verify("--skip", "prometheus")
    failures = _failures(checks)
    assert failures[("kube", "pod labels setting")] == (
        "DCGM_EXPORTER_KUBERNETES is not true: series carry no workload pod",
        "set DCGM_EXPORTER_KUBERNETES=true on container nvidia-dcgm-exporter and mount /var/lib/kubelet/pod-resources")
    assert failures[("exporter", "pod labels")] == (
        "busy GPUs without a pod label: gpu 0",
        "set DCGM_EXPORTER_KUBERNETES=true on the exporter and mount /var/lib/kubelet/pod-resources into it")


def test_the_exporters_virtual_gpus_setting_must_be_read_apart(stack, tmp_path):
    """KUBERNETES_VIRTUAL_GPUS=true on the exporter while exporter.virtual_gpus is unset fails, naming the setting;
    set, it passes, also on a DaemonSet without it (a mixed fleet)."""
    cluster, verify = stack
    only_kube = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    _, checks = verify(*only_kube)
    assert ("kube", "virtual GPUs setting") not in checks  # both off: nothing to say
    cluster.daemonset["spec"]["template"]["spec"]["containers"][0].setdefault("env", []).append(
        {"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"})
    code, checks = verify(*only_kube)
    assert code == 1
    assert _failures(checks)[("kube", "virtual GPUs setting")][1] == \
        "set exporter.virtual_gpus: true in gpudash.yaml and generate again"
    (tmp_path / "gpudash.yaml").write_text("exporter:\n  virtual_gpus: true\n")
    _, checks = verify(*only_kube, "--config", str(tmp_path / "gpudash.yaml"))
    assert checks[("kube", "virtual GPUs setting")]["status"] == "ok"


def test_gpus_shared_by_time_slicing_without_virtual_gpus_warn_what_per_pod_views_read(stack, tmp_path):
    """Without KUBERNETES_VIRTUAL_GPUS the exporter labels a time-sliced GPU with one of the pods sharing it (the last
    kubelet lists), not each: a node that GPU feature discovery labels time-slicing, or whose nvidia.com/gpu capacity
    exceeds nvidia.com/gpu.count, is a warning naming it and the setting; with the setting on, nothing to say."""
    cluster, verify = stack
    only_kube = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    name = ("kube", "GPUs shared by pods")
    _, checks = verify(*only_kube)
    assert name not in checks  # whole GPUs: nothing to say
    # gpu-node-a: MIG single strategy, not shared; gpu-node-b: time-sliced into 4
    sliced = cluster.share_gpus()
    code, checks = verify(*only_kube)
    assert code == 0 and checks[name]["status"] == "warn"
    assert checks[name]["detail"] == (
        "gpu-node-b advertises 4 nvidia.com/gpu (nvidia.com/gpu.sharing-strategy time-slicing): the exporter runs "
        "without KUBERNETES_VIRTUAL_GPUS, so it labels a GPU pods share with one of them per scrape (the last kubelet "
        "lists): Grafana's per-pod panels show each pod a scrape of the last 4 scrape intervals (a rate: of its window) "
        "named, as do the per-pod Prometheus rules of gauges and counts, but CloudWatch's per-pod alarms and widgets "
        "read a pod only at the scrapes that name it")
    assert "KUBERNETES_VIRTUAL_GPUS=true" in checks[name]["fix"]
    assert "exporter.virtual_gpus: true" in checks[name]["fix"]
    sliced["metadata"]["labels"].pop("nvidia.com/gpu.sharing-strategy")  # an older feature discovery: the count
    _, checks = verify(*only_kube)
    assert checks[name]["status"] == "warn"
    assert checks[name]["detail"].startswith("gpu-node-b advertises 4 nvidia.com/gpu (nvidia.com/gpu.count 1): ")
    cluster.daemonset["spec"]["template"]["spec"]["containers"][0].setdefault("env", []).append(
        {"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"})
    (tmp_path / "gpudash.yaml").write_text("exporter:\n  virtual_gpus: true\n")
    _, checks = verify(*only_kube, "--config", str(tmp_path / "gpudash.yaml"))
    assert checks[("kube", "virtual GPUs setting")]["status"] == "ok" and name not in checks  # a copy per pod


def _kube_failure(verify, name, detail: str, fix: str):
    """The checks of the kube group alone, where `name` fails with `detail` and a fix starting with `fix`, and so does
    verify."""
    code, checks = verify("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    assert (code, checks[name]["status"], checks[name]["detail"]) == (1, "fail", detail)
    assert checks[name]["fix"].startswith(fix), checks[name]["fix"]
    return checks


def test_gpus_shared_under_a_renamed_resource_are_named(stack):
    """The device plugin's time-slicing with `renameByDefault: true` advertises a shared GPU as nvidia.com/gpu.shared,
    not nvidia.com/gpu. dcgm-exporter gives a GPU's series a pod only for a device of nvidia.com/gpu, nvidia.com/mig-*
    or a resource its --nvidia-resource-names (NVIDIA_RESOURCE_NAMES) lists (internal/pkg/transformation/
    kubernetes.go, iterateGPUDevices: "Skipping non-NVIDIA resource"): without it every pod holding such a GPU is
    missing from every per-pod view and alarm (both forms), its GPU reads as held by no pod. verify must name the
    node and the resource."""
    cluster, verify = stack
    only_kube = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    sliced = cluster.share_gpus()
    for place in ("capacity", "allocatable"):
        sliced["status"][place] = {**{k: v for k, v in sliced["status"][place].items() if k != "nvidia.com/gpu"},
                                   "nvidia.com/gpu.shared": "4"}
    sliced["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A10G-SHARED"
    name = ("kube", "GPU resource names")
    checks = _kube_failure(verify, name, (
        "gpu-node-b advertises 4 nvidia.com/gpu.shared: the exporter gives a pod only the devices of nvidia.com/gpu, "
        "nvidia.com/mig-* and the resources its --nvidia-resource-names lists, so the series of these GPUs carry no "
        "pod and every per-pod panel, widget and alarm (both forms) misses the pods holding them"),
        "set NVIDIA_RESOURCE_NAMES=nvidia.com/gpu.shared on container nvidia-dcgm-exporter of the exporter DaemonSet")
    # the node has a GPU: coverage counts it (its exporter pod is there and ready), no "no GPU" verdict
    assert checks[("kube", "GPU node coverage")]["detail"] == "all 2 GPU nodes run the exporter"
    assert ("kube", "GPUs shared by pods") not in checks  # no pod is named at all: the sharing caveat is moot
    container = cluster.daemonset["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [*container.get("args", []), "--nvidia-resource-names", "nvidia.com/a100"]
    _, checks = verify(*only_kube)  # another resource listed: still missed, the fix keeps what is listed
    assert checks[name]["status"] == "fail" and "lists (now nvidia.com/a100)" in checks[name]["detail"]
    assert checks[name]["fix"].startswith("set NVIDIA_RESOURCE_NAMES=nvidia.com/a100,nvidia.com/gpu.shared ")
    container["args"][-1] = "nvidia.com/a100,nvidia.com/gpu.shared"
    _, checks = verify(*only_kube)  # listed: the exporter names one pod per scrape, as with nvidia.com/gpu
    assert checks[name]["status"] == "ok"
    assert checks[("kube", "GPUs shared by pods")]["detail"].startswith(
        "gpu-node-b advertises 4 nvidia.com/gpu.shared (nvidia.com/gpu.sharing-strategy time-slicing): ")
    container["args"] = container["args"][:-2]
    container.setdefault("env", []).append({"name": "NVIDIA_RESOURCE_NAMES", "value": "nvidia.com/gpu.shared"})
    _, checks = verify(*only_kube)  # the variable, as the GPU operator's ClusterPolicy dcgmExporter.env sets it
    assert checks[name]["status"] == "ok"


def test_gpus_under_a_custom_resource_name_are_counted_by_the_data_missing_alarm_only_when_named(stack, tmp_path):
    """A device plugin's config can advertise GPUs under a name of its own (nvidia.com/a100), which the exporter
    attributes once NVIDIA_RESOURCE_NAMES lists it. The data-missing alarm and rule count a GPU node by its capacity in
    the device plugin's names (nvidia.com/gpu, nvidia.com/gpu.*, nvidia.com/mig-*): a node of nvidia.com/a100 alone is
    no GPU node to them, and a cluster of such nodes would never be judged. verify names the nodes and the setting
    (exporter.resource_names), and says ok once it is set."""
    cluster, verify = stack
    only_kube = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    for node in cluster.nodes:
        for place in ("capacity", "allocatable"):
            gpus = node["status"][place].pop("nvidia.com/gpu", None)
            if gpus is not None:
                node["status"][place]["nvidia.com/a100"] = gpus
    name = ("kube", "GPU nodes the data-missing alarm counts")
    code, checks = verify(*only_kube)  # the exporter lists it not either: a warning naming both settings
    assert checks[name]["status"] == "warn", checks[name]
    assert checks[name]["detail"].startswith("gpu-node-a, gpu-node-b advertise only nvidia.com/a100: ")
    assert checks[name]["fix"] == ("set exporter.resource_names: [nvidia.com/a100] in gpudash.yaml and generate again "
                                   "(and NVIDIA_RESOURCE_NAMES=nvidia.com/a100 on the exporter), if these are GPUs")
    container = cluster.daemonset["spec"]["template"]["spec"]["containers"][0]
    container.setdefault("env", []).append({"name": "NVIDIA_RESOURCE_NAMES", "value": "nvidia.com/a100"})
    _kube_failure(verify, name, (
        "gpu-node-a, gpu-node-b advertise GPUs as nvidia.com/a100: the data-missing alarm and rule count a node as a "
        "GPU node by its capacity in nvidia.com/gpu, nvidia.com/gpu.*, nvidia.com/mig-* and the resources "
        "exporter.resource_names names, so these nodes are no GPU node to them: where no other node is, an exporter "
        "that stops raises nothing"),
        "set exporter.resource_names: [nvidia.com/a100] in gpudash.yaml and generate again")
    (tmp_path / "gpudash.yaml").write_text("exporter:\n  resource_names: [nvidia.com/a100]\n")
    _, checks = verify(*only_kube, "--config", str(tmp_path / "gpudash.yaml"))
    assert checks[name]["status"] == "ok", checks[name]
    assert checks[name]["detail"] == "a node advertising nvidia.com/a100 counts as a GPU node (exporter.resource_names)"
    assert checks[("kube", "GPU node coverage")]["detail"] == "all 2 GPU nodes run the exporter"  # counted there too
    gpu_node = next(n for n in cluster.nodes if "nvidia.com/a100" in n["status"]["capacity"])
    gpu_node["status"]["capacity"]["nvidia.com/gpu"] = "1"  # a node counted by one of its resources is counted
    (tmp_path / "gpudash.yaml").write_text("")
    _, checks = verify(*only_kube, "--config", str(tmp_path / "gpudash.yaml"))
    assert checks[name]["detail"].startswith(
        f"{'gpu-node-b' if gpu_node['metadata']['name'] == 'gpu-node-a' else 'gpu-node-a'} advertise GPUs as "), \
        checks[name]


def test_an_exporter_pod_on_a_node_without_gpus_is_named(stack):
    """The dcgm-exporter chart schedules its DaemonSet on every node unless nodeSelector or affinity is set (its
    values.yaml: `nodeSelector: {}`, `affinity: {}`): on a CPU node the exporter cannot start DCGM and never becomes
    available, so the DaemonSet's desired count exceeds its available one for good and the data-missing alarm and
    rule fire, with the GPU node group at zero too. verify must name the node that has no GPU."""
    cluster, verify = stack
    only_kube = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    name = ("kube", "exporter pods on nodes without GPUs")
    cluster.pods.append(cluster.exporter_pod("cpu-node-1", ready=False))
    cluster.refresh_status()
    checks = _kube_failure(verify, name, (
        "exporter pods not ready on nodes without GPUs: cpu-node-1 (nvidia-dcgm-exporter-1x); the DaemonSet counts "
        "them as desired and they never become available, so its rollout never completes: gpudash's GPU data missing "
        "alarm and rule read that as missing GPU data"),
        "keep the exporter DaemonSet off nodes without GPUs: a nodeSelector (the dcgm-exporter chart's `nodeSelector`, "
        "e.g. nvidia.com/gpu.present: ")
    assert checks[("kube", "exporter pods ready")]["status"] == "ok"  # the GPU nodes' pods serve
    cpu = next(n for n in cluster.nodes if n["metadata"]["name"] == "cpu-node-1")
    cpu["metadata"]["labels"]["nvidia.com/gpu.present"] = "true"  # a GPU node whose device plugin advertises none
    _, checks = verify(*only_kube)
    assert checks[name]["detail"].startswith("exporter pods not ready on nodes labelled as holding an NVIDIA GPU "
                                             "that advertise none (nvidia.com/gpu, nvidia.com/gpu.*, nvidia.com/mig-*)"
                                             ": cpu-node-1 (nvidia-dcgm-exporter-1x); ")
    assert checks[name]["fix"].startswith("check the NVIDIA driver and device plugin on those nodes")
    cluster.pods[-1] = cluster.exporter_pod("cpu-node-1", ready=True)  # ready: it holds nothing back
    cluster.refresh_status()
    _, checks = verify(*only_kube)
    assert name not in checks


def test_the_cloudwatch_agent_runs_exactly_one_replica(stack):
    """Two cwagent-prometheus replicas each scrape every exporter pod and publish every reading, which CloudWatch
    keeps side by side: every Sum doubles (the PCIe replay alarm fires at half its threshold). verify said "2/2
    replicas available", ok. Zero replicas publish nothing: it said "0/0 replicas available", ok."""
    cluster, verify = stack
    agent = cluster.deployments[("amazon-cloudwatch", "cwagent-prometheus")]
    agent["spec"]["replicas"] = 2
    agent["status"] = {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "updatedReplicas": 2}
    name = ("kube", "CloudWatch agent replicas")
    checks = _kube_failure(verify, name, (
        "Deployment amazon-cloudwatch/cwagent-prometheus asks for 2 replicas (spec.replicas): each scrapes every "
        "exporter pod and publishes every reading, and CloudWatch keeps them all, so a Sum or a SampleCount reads 2 "
        "times its truth: counter increases (PCIe replays, rows remapped, XID errors, energy) and counts of data "
        "points, and an alarm on a sum fires at 1/2 of its threshold (PCIe replays); Average, Minimum and Maximum "
        "hold"), "kubectl -n amazon-cloudwatch scale deployment cwagent-prometheus --replicas=1, and keep replicas: 1")
    assert checks[("kube", "CloudWatch agent")]["detail"] == "2/2 replicas available"
    agent["spec"]["replicas"] = 0
    agent["status"] = {"replicas": 0}
    checks = _kube_failure(verify, ("kube", "CloudWatch agent"), (
        "Deployment amazon-cloudwatch/cwagent-prometheus is scaled to 0 replicas: nothing scrapes the exporter or "
        "publishes to CloudWatch"), "kubectl -n amazon-cloudwatch scale deployment cwagent-prometheus --replicas=1")
    assert name not in checks and checks[("kube", "CloudWatch agent")]["cause"] == "not-deployed"
    agent["spec"].pop("replicas")  # the API's default: 1
    agent["status"] = {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 1}
    _, checks = verify("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    assert checks[("kube", "CloudWatch agent")]["status"] == "ok" and name not in checks


def test_an_exporter_daemonset_of_another_name_is_named_with_the_setting_to_write(stack, tmp_path):
    """A Helm release names its DaemonSet and Service <release>-dcgm-exporter: the Service is found by its label; with
    exporter.daemonset unset, verify fails naming
    the DaemonSet it finds by the exporter's labels and the setting to write (the CloudWatch agent reads the named one's
    counts: the data-missing alarm stayed in ALARM, verify said only "no DaemonSet"); written, it passes. A named
    DaemonSet not labelled as an exporter fails naming the exporter's; a second exporter DaemonSet warns that the
    CloudWatch alarm reads one."""
    cluster, verify = stack
    only_kube = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    name = ("kube", "exporter DaemonSet")
    fix = ("write exporter.daemonset: gpu-metrics-dcgm-exporter in gpudash.yaml, generate and apply again (the "
           "CloudWatch agent reads kube-state-metrics' counts of that DaemonSet for the data-missing alarm, which "
           "stays in ALARM without them)")
    cluster.daemonset["metadata"].update(name="gpu-metrics-dcgm-exporter", labels={
        "app.kubernetes.io/name": "dcgm-exporter", "app.kubernetes.io/instance": "gpu-metrics"})
    # its Service too, found by the label the ServiceMonitor selects (read by the style's name, it was "no Service",
    # and the exporter group unreachable)
    (service,) = cluster.services.values()
    service["metadata"]["name"] = "gpu-metrics-dcgm-exporter"
    cluster.services = {"gpu-metrics-dcgm-exporter": service}
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch")
    assert checks[("kube", "exporter Service")]["detail"] == "gpu-metrics-dcgm-exporter exposes 9400"
    assert checks[("exporter", "metrics endpoint")]["detail"].startswith(
        "service proxy gpu-operator/gpu-metrics-dcgm-exporter: ")
    assert code == 1 and _failures(checks)[name] == (
        "no DaemonSet gpu-operator/nvidia-dcgm-exporter (exporter.daemonset unset: gpu-operator's name); the exporter "
        "DaemonSet in gpu-operator (labelled app=nvidia-dcgm-exporter or app.kubernetes.io/name=dcgm-exporter): "
        "gpu-metrics-dcgm-exporter",
        fix)
    assert checks[("kube", "exporter rollout")]["status"] == "ok"  # the DaemonSet found is read on
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  daemonset: gpu-metrics-dcgm-exporter\n")
    checks = verify(*only_kube, "--config", str(config))[1]
    assert checks[name] == {**checks[name], "status": "ok",
                            "detail": "gpu-operator/gpu-metrics-dcgm-exporter labelled as a DCGM exporter"}
    discovery = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {
        "name": "gpu-feature-discovery", "namespace": "gpu-operator", "labels": {"app": "gpu-feature-discovery"}}}
    cluster.daemonsets[("gpu-operator", "gpu-feature-discovery")] = discovery
    config.write_text("exporter:\n  daemonset: gpu-feature-discovery\n")
    assert _failures(verify(*only_kube, "--config", str(config))[1])[name] == (
        "DaemonSet gpu-operator/gpu-feature-discovery (exporter.daemonset) is not labelled as a DCGM exporter "
        "(app=nvidia-dcgm-exporter or app.kubernetes.io/name=dcgm-exporter); the exporter DaemonSets in gpu-operator: "
        "gpu-metrics-dcgm-exporter",
        fix)
    pool_b = copy.deepcopy(cluster.daemonset)
    pool_b["metadata"].update(name="gpu-metrics-pool-b-dcgm-exporter")
    cluster.daemonsets[("gpu-operator", "gpu-metrics-pool-b-dcgm-exporter")] = pool_b
    config.write_text("exporter:\n  daemonset: gpu-metrics-dcgm-exporter\n")
    checks = verify(*only_kube, "--config", str(config))[1]
    assert (checks[name]["status"], checks[name]["detail"]) == ("warn", (
        "exporter DaemonSets in gpu-operator: gpu-metrics-dcgm-exporter (exporter.daemonset) and "
        "gpu-metrics-pool-b-dcgm-exporter: the CloudWatch data-missing alarms read kube-state-metrics' counts of "
        "gpu-operator/gpu-metrics-dcgm-exporter only, so an exporter pod gone from a node of "
        "gpu-metrics-pool-b-dcgm-exporter is not seen there (the Prometheus rule reads each)"))
    assert checks[name]["fix"] == ("name them in exporter.more_daemonsets (gpu-metrics-pool-b-dcgm-exporter), generate "
                                   "and apply again: each gets its data-missing alarm")
    # named in exporter.more_daemonsets: each has its alarm, nothing to warn of; one named that is not there fails
    config.write_text("exporter:\n  daemonset: gpu-metrics-dcgm-exporter\n"
                      "  more_daemonsets: [gpu-metrics-pool-b-dcgm-exporter]\n")
    checks = verify(*only_kube, "--config", str(config))[1]
    assert (checks[name]["status"], checks[name]["detail"]) == ("ok", (
        "gpu-operator/gpu-metrics-dcgm-exporter, gpu-operator/gpu-metrics-pool-b-dcgm-exporter labelled as a DCGM "
        "exporter"))
    config.write_text("exporter:\n  daemonset: gpu-metrics-dcgm-exporter\n"
                      "  more_daemonsets: [gpu-metrics-pool-b-dcgm-exporter, gpu-operator/pool-c]\n")
    assert _failures(verify(*only_kube, "--config", str(config))[1])[name][0] == (
        "no exporter DaemonSet (labelled app=nvidia-dcgm-exporter or app.kubernetes.io/name=dcgm-exporter) "
        "gpu-operator/pool-c, which exporter.more_daemonsets names: the data-missing alarm of each reads no counts and "
        "stays in ALARM; exporter DaemonSets there are: gpu-operator/gpu-metrics-dcgm-exporter, "
        "gpu-operator/gpu-metrics-pool-b-dcgm-exporter")
    # another namespace named: the exporter DaemonSets of every namespace are named, with both settings to write
    config.write_text("exporter:\n  namespace: dcgm\n")
    assert _failures(verify(*only_kube, "--config", str(config))[1])[name] == (
        "no DaemonSet dcgm/nvidia-dcgm-exporter (exporter.daemonset unset: gpu-operator's name), and none in dcgm "
        "labelled app=nvidia-dcgm-exporter or app.kubernetes.io/name=dcgm-exporter; exporter DaemonSets elsewhere: "
        "gpu-operator/gpu-metrics-dcgm-exporter, gpu-operator/gpu-metrics-pool-b-dcgm-exporter",
        "write exporter.namespace: gpu-operator and exporter.daemonset: gpu-metrics-dcgm-exporter (or another of them) "
        "in gpudash.yaml, generate and apply again")


def _helm_release(cluster) -> None:
    """The stack's exporter DaemonSet as the Helm chart's release gpu-metrics names and labels it."""
    cluster.daemonset["metadata"].update(name="gpu-metrics-dcgm-exporter",
                                         labels={"app.kubernetes.io/name": "dcgm-exporter"})


def test_each_cluster_s_exporter_daemonset_is_read_by_verify_where_the_clusters_name_different_ones(stack, tmp_path):
    """Two clusters whose Helm releases are named differently: the kube group reads the DaemonSet of the cluster its
    context is (the one the live agent config names), not exporter.daemonset's for every cluster (it failed with "no
    DaemonSet gpu-operator/ml-a-dcgm-exporter" in gpu-cluster, whose release is gpu-metrics); the cloudwatch group's
    data-missing signals name each cluster's own (gpu-cluster's read as exporter.daemonset's before)."""
    cluster, verify = stack
    _helm_release(cluster)
    config = tmp_path / "gpudash.yaml"
    config.write_text("clusters:\n  - {name: ml-a, region: us-east-1}\n"
                      "  - {name: gpu-cluster, region: us-east-1, exporter: {daemonset: gpu-metrics-dcgm-exporter}}\n"
                      "exporter:\n  daemonset: ml-a-dcgm-exporter\n")
    checks = verify("--skip", "exporter", "--skip", "prometheus", "--config", str(config))[1]
    check = checks[("kube", "exporter DaemonSet")]
    assert (check["status"], check["detail"]) == ("ok", "gpu-operator/gpu-metrics-dcgm-exporter labelled as a DCGM "
                                                         "exporter"), check
    # the cloudwatch group names each cluster's own DaemonSet with its desired count (only gpu-cluster's arrives)
    signals = {name: checks[("cloudwatch", f"{name} data-missing signals")] for name in ("gpu-cluster", "ml-a")}
    assert signals["gpu-cluster"]["status"] == "ok", signals
    assert signals["gpu-cluster"]["detail"].endswith("(the exporter DaemonSet gpu-operator/gpu-metrics-dcgm-exporter)")
    assert signals["ml-a"]["status"] == "warn" and "DaemonSet gpu-operator/ml-a-dcgm-exporter" in \
        signals["ml-a"]["detail"], signals


MIXED_FLEET = ("clusters:\n  - {name: gpu-cluster, region: us-east-1}\n"
               "  - {name: b, region: us-east-1, exporter: {deployment: helm, namespace: dcgm-exporter}}\n")


def _helm_chart_install(cluster, namespace: str = "dcgm-exporter") -> None:
    """The stack's exporter as the dcgm-exporter chart installs it (release dcgm-exporter) in `namespace`: DaemonSet,
    pods and Service named dcgm-exporter and labelled app.kubernetes.io/name=dcgm-exporter, container `exporter`,
    Service port `metrics`."""
    labels = {"app.kubernetes.io/name": "dcgm-exporter"}
    cluster.namespace = namespace
    daemonset = cluster.daemonset
    daemonset["metadata"].update(name="dcgm-exporter", namespace=namespace, labels=dict(labels))
    daemonset["spec"]["selector"] = {"matchLabels": dict(labels)}
    daemonset["spec"]["template"]["metadata"]["labels"] = dict(labels)
    daemonset["spec"]["template"]["spec"]["containers"][0]["name"] = "exporter"
    service = cluster.services.pop("nvidia-dcgm-exporter")
    service["metadata"].update(name="dcgm-exporter", namespace=namespace, labels=dict(labels))
    service["spec"]["selector"] = dict(labels)
    service["spec"]["ports"][0]["name"] = "metrics"
    cluster.services["dcgm-exporter"] = service
    for pod in cluster.pods:
        pod["metadata"].update(namespace=namespace, labels=dict(labels),
                               name=pod["metadata"]["name"].replace("nvidia-dcgm-exporter", "dcgm-exporter"))
        pod["spec"]["containers"][0]["name"] = "exporter"
        pod["status"]["containerStatuses"][0]["name"] = "exporter"


MIXED_CHECKS = (("kube", "exporter DaemonSet"), ("kube", "exporter rollout"), ("kube", "GPU node coverage"),
                ("kube", "exporter Service"), ("exporter", "metrics endpoint"))


def _mixed_checks(checks: dict) -> dict:
    """(status, the detail's start) of each of MIXED_CHECKS (absent: not run)."""
    return {key: (checks[key]["status"], checks[key]["detail"][:60]) if key in checks else ("absent", "")
            for key in MIXED_CHECKS}


def test_verify_reads_each_clusters_exporter_of_its_own_deployment_style(stack, tmp_path):
    """A fleet of the GPU operator's exporter in gpu-cluster and the Helm chart's in b (clusters[].exporter.deployment,
    .namespace): in gpu-cluster (the live agent config names it) verify reads gpu-operator/nvidia-dcgm-exporter; in b
    (--cluster b) dcgm-exporter/dcgm-exporter, its pods, its Service and its /metrics through that Service, each
    check passing (b's exporter was looked for as gpu-operator/nvidia-dcgm-exporter)."""
    cluster, verify = stack
    config = tmp_path / "gpudash.yaml"
    config.write_text(MIXED_FLEET)
    results = {}
    checks = verify("--skip", "prometheus", "--skip", "cloudwatch", "--config", str(config))[1]
    results["gpu-cluster"] = _mixed_checks(checks)
    _helm_chart_install(cluster)
    # the ServiceMonitors the fleet's build holds, in the namespaces they name (b's own in b's exporter namespace)
    monitors = list(yaml.safe_load_all(encode(build(load_project(config), grafana=False))["k8s/servicemonitor.yaml"]))
    cluster.service_monitors = monitors
    checks = verify("--skip", "cloudwatch", "--config", str(config), "--cluster", "b")[1]
    results["b"] = _mixed_checks(checks)
    scrape = checks[("kube", "Prometheus scrape config")]
    assert (scrape["status"], scrape["detail"]) == (
        "ok", f"ServiceMonitor gpudash-dcgm-exporter-helm ({NO_PROMETHEUS_OBJECT})"), scrape
    assert {name: {key: status for key, (status, _) in each.items()} for name, each in results.items()} == {
        name: {key: "ok" for key in MIXED_CHECKS} for name in results}, results
    assert results["gpu-cluster"][("kube", "exporter DaemonSet")][1].startswith("gpu-operator/nvidia-dcgm-exporter ")
    assert results["b"][("kube", "exporter DaemonSet")][1].startswith("dcgm-exporter/dcgm-exporter ")
    assert results["b"][("exporter", "metrics endpoint")][1].startswith("service proxy dcgm-exporter/dcgm-exporter")


def test_a_cluster_whose_exporter_is_of_another_style_than_the_settings_say_is_told_what_to_write(stack, tmp_path):
    """Two clusters, no clusters[].exporter settings, and cluster b runs the Helm chart's exporter in dcgm-exporter:
    verify in b fails its exporter DaemonSet and names b's own exporter settings to write, deployment helm and the
    namespace (it named exporter.namespace and exporter.daemonset, for every cluster, keeping the operator's style)."""
    cluster, verify = stack
    _helm_chart_install(cluster)
    config = tmp_path / "gpudash.yaml"
    config.write_text("clusters:\n  - {name: gpu-cluster, region: us-east-1}\n  - {name: b, region: us-east-1}\n")
    checks = verify("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch", "--config", str(config),
                    "--cluster", "b")[1]
    check = checks[("kube", "exporter DaemonSet")]
    assert check["status"] == "fail" and check["fix"].startswith(
        "write exporter: {deployment: helm, namespace: dcgm-exporter} in cluster b's entry of clusters"), check


def test_every_cluster_naming_the_same_daemonset_in_its_own_entry_is_read_by_verify(stack, tmp_path):
    """Every cluster names the same DaemonSet in clusters[].exporter.daemonset, the global one unset: the agents keep
    that DaemonSet's counts, and verify reads it (it read the deployment's default dcgm-exporter name, failed it as
    missing and judged the rollout by another DaemonSet)."""
    cluster, verify = stack
    _helm_release(cluster)
    config = tmp_path / "gpudash.yaml"
    config.write_text("clusters:\n"
                      "  - {name: ml-a, region: us-east-1, exporter: {daemonset: gpu-metrics-dcgm-exporter}}\n"
                      "  - {name: gpu-cluster, region: us-east-1, exporter: {daemonset: gpu-metrics-dcgm-exporter}}\n")
    checks = verify("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch", "--config", str(config))[1]
    check = checks[("kube", "exporter DaemonSet")]
    assert (check["status"], check["detail"]) == ("ok", "gpu-operator/gpu-metrics-dcgm-exporter labelled as a DCGM "
                                                         "exporter"), check


def _owned_by(cluster, name: str) -> None:
    """The stack's exporter pods as the DaemonSet controller writes them: owned by DaemonSet `name`."""
    for pod in cluster.pods:
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name,
                                               "uid": "1", "controller": True}]


COVERAGE = ("kube", "GPU node coverage")
ONLY_KUBE = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")


def test_the_named_daemonset_of_another_style_than_exporter_deployment_is_told_to_write_the_deployment(stack, tmp_path):
    """exporter.daemonset names the Helm chart's release, exporter.deployment stays gpu-operator: the agent's job keeps
    pods labelled app=nvidia-dcgm-exporter, so the release's pods are not scraped. Verify said they belong to "a
    DaemonSet the settings do not name" and to add it to exporter.more_daemonsets (it is named); the setting to write
    is exporter.deployment (in the cluster's own entry where the cluster names its DaemonSet there). Written, the
    coverage passes."""
    cluster, verify = stack
    _helm_chart_install(cluster, "gpu-operator")
    cluster.daemonset["metadata"]["name"] = "gpu-metrics-dcgm-exporter"
    _owned_by(cluster, "gpu-metrics-dcgm-exporter")
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  daemonset: gpu-metrics-dcgm-exporter\n")
    code, checks = verify("--skip", "exporter", "--skip", "cloudwatch", "--config", str(config))
    fix = "write exporter.deployment: helm in gpudash.yaml, then generate and apply again"
    # the cause, said once where the DaemonSet is read; the Service and container checks give its fix (they asked for
    # a Service labelled app=nvidia-dcgm-exporter to be created, and the container to be renamed)
    assert _failures(checks)[("kube", "exporter DaemonSet")] == (
        "DaemonSet gpu-operator/gpu-metrics-dcgm-exporter (exporter.daemonset): it runs pods labelled "
        "app.kubernetes.io/name=dcgm-exporter, the helm style's, not app=nvidia-dcgm-exporter as exporter.deployment "
        "gpu-operator's are: the agent's exporter job keeps pods, and the generated ServiceMonitor selects Services, "
        "by that label", fix)
    assert checks[("kube", "exporter Service")]["fix"] == fix and checks[("kube", "exporter Service")]["status"] == "fail"
    assert checks[("kube", "exporter container name")]["fix"] == fix
    # gpudash's ServiceMonitor selects Services labelled app=nvidia-dcgm-exporter, which none carries (the chart's
    # carries app.kubernetes.io/name=dcgm-exporter): Prometheus scrapes nothing through it (it said "ok")
    scrape = checks[("kube", "Prometheus scrape config")]
    assert (scrape["status"], scrape["fix"]) == ("fail", fix), scrape
    # the exporter group's read through the operator's Service name, which no Service has: said so, not "check the
    # cluster's API server"
    reachable = verify("--skip", "kube", "--skip", "prometheus", "--skip", "cloudwatch", "--config", str(config))[1][
        ("exporter", "reachable")]
    assert reachable["detail"].endswith(": no Service in gpu-operator labelled app=nvidia-dcgm-exporter exposes 9400, "
                                        "so /metrics was read through nvidia-dcgm-exporter, exporter.deployment "
                                        "gpu-operator's name"), reachable
    assert reachable["fix"] == ("the kube group's exporter DaemonSet and exporter Service checks say what to write or "
                                "create; or pass --exporter-url")
    pods = ("{node} (gpu-operator/dcgm-exporter-{x}x of DaemonSet gpu-operator/gpu-metrics-dcgm-exporter, the "
            "exporter DaemonSet the settings name, labelled app.kubernetes.io/name=dcgm-exporter, not "
            "app=nvidia-dcgm-exporter as exporter.deployment gpu-operator's pods are)")
    assert code == 1 and _failures(checks)[COVERAGE] == (
        "GPU nodes whose exporter pod the scrape jobs do not keep: " + pods.format(node="gpu-node-a", x="a") + ", "
        + pods.format(node="gpu-node-b", x="b"), fix)
    config.write_text("exporter:\n  deployment: helm\n  daemonset: gpu-metrics-dcgm-exporter\n")
    code, checks = verify("--skip", "exporter", "--skip", "cloudwatch", "--config", str(config))
    assert (checks[COVERAGE]["status"], checks[COVERAGE]["detail"]) == ("ok", "all 2 GPU nodes run the exporter")
    assert {name: checks[("kube", name)]["status"] for name in ("exporter DaemonSet", "exporter Service")} == {
        "exporter DaemonSet": "ok", "exporter Service": "ok"}
    assert ("kube", "exporter container name") not in checks
    # the cluster names the release in its own entry: that entry is the place to write
    config.write_text("clusters:\n"
                      "  - {name: gpu-cluster, region: us-east-1, exporter: {daemonset: gpu-metrics-dcgm-exporter}}\n"
                      "  - {name: ml-a, region: us-east-1}\n")
    code, checks = verify(*ONLY_KUBE, "--config", str(config))
    assert code == 1 and checks[COVERAGE]["fix"] == (
        "write exporter: {deployment: helm} in cluster gpu-cluster's entry of clusters, then generate and apply "
        "again"), checks[COVERAGE]
    config.write_text("clusters:\n  - {name: gpu-cluster, region: us-east-1, exporter: {deployment: helm, "
                      "daemonset: gpu-metrics-dcgm-exporter}}\n  - {name: ml-a, region: us-east-1}\n")
    assert verify(*ONLY_KUBE, "--config", str(config))[1][COVERAGE]["status"] == "ok"


def test_pods_of_the_named_daemonset_whose_style_cannot_be_told_are_told_what_is_known(stack):
    """The operator's DaemonSet (the default name) runs pods labelled app.kubernetes.io/name=dcgm-exporter, whose
    container is neither the chart's `exporter` nor the static manifest's `dcgm-exporter`: the label is both
    styles', so the fix names both and says why, with the DaemonSet's name (the chart's default would differ)."""
    cluster, verify = stack
    _owned_by(cluster, "nvidia-dcgm-exporter")
    for pod in cluster.pods:
        pod["metadata"]["labels"] = {"app.kubernetes.io/name": "dcgm-exporter"}
        pod["spec"]["containers"][0]["name"] = "main"
    code, checks = verify(*ONLY_KUBE)
    assert code == 1 and _failures(checks)[COVERAGE][1] == (
        "write exporter.deployment: <helm or static> and exporter.daemonset: nvidia-dcgm-exporter in gpudash.yaml "
        "(its pods are labelled app.kubernetes.io/name=dcgm-exporter, which both the helm and the static styles "
        "write, and running main, none of their exporter containers (helm: exporter, static: dcgm-exporter): which "
        "of them it is cannot be told (helm where the dcgm-exporter chart installed it)), then generate and apply "
        "again")


def test_an_exporter_daemonset_whose_style_cannot_be_told_is_not_given_a_guessed_deployment(stack, tmp_path):
    """Cluster b runs an exporter labelled app.kubernetes.io/name=dcgm-exporter whose container is `main`: the chart
    and the static manifest share the label, so which style it is cannot be told. Verify wrote "deployment: helm"
    (the first style of the label) as a definite fix; it names both, and says why."""
    cluster, verify = stack
    _helm_chart_install(cluster)
    cluster.daemonset["spec"]["template"]["spec"]["containers"][0]["name"] = "main"
    config = tmp_path / "gpudash.yaml"
    config.write_text("clusters:\n  - {name: gpu-cluster, region: us-east-1}\n  - {name: b, region: us-east-1}\n")
    code, checks = verify(*ONLY_KUBE, "--config", str(config), "--cluster", "b")
    assert code == 1 and _failures(checks)[("kube", "exporter DaemonSet")][1] == (
        "write exporter: {deployment: <helm or static>, namespace: dcgm-exporter} in cluster b's entry of clusters "
        "(clusters[].exporter: its exporter is labelled app.kubernetes.io/name=dcgm-exporter, which both the helm and "
        "the static styles write, and running main, none of their exporter containers (helm: exporter, static: "
        "dcgm-exporter): which of them it is cannot be told (helm where the dcgm-exporter chart installed it), not "
        "gpu-operator's) in gpudash.yaml, generate and apply again")


def _advice(checks):
    return " ".join(c["fix"] for (group, _), c in checks.items() if group == "kube")


def test_verify_does_not_judge_a_cluster_by_the_first_entry_before_its_agent_config_is_applied(stack, tmp_path, cli):
    """Two clusters naming different exporter DaemonSets, the context ml-b's, no agent ConfigMap yet (first install):
    verify judged by clusters[0] (ml-a), failing "no DaemonSet gpu-operator/gpu-metrics-dcgm-exporter" with the fix
    "write exporter.daemonset: ml-b-dcgm-exporter (in cluster ml-a's entry)" and "kubectl apply -f
    build/k8s/cwagent-prometheus-config-ml-a.yaml", which break both clusters. It cannot tell: it says so, and
    --cluster names the entry."""
    cluster, verify = stack
    cluster.daemonset["metadata"]["name"] = "ml-b-dcgm-exporter"
    for key in [k for k in cluster.configmaps if k[0] == "amazon-cloudwatch"]:
        del cluster.configmaps[key]
    config = tmp_path / "gpudash.yaml"
    config.write_text("clusters:\n"
                      "  - {name: ml-a, region: us-east-1, exporter: {daemonset: gpu-metrics-dcgm-exporter}}\n"
                      "  - {name: ml-b, region: us-east-1, exporter: {daemonset: ml-b-dcgm-exporter}}\n")
    skip = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch", "--config", str(config))
    checks = verify(*skip)[1]
    daemonset = checks[("kube", "exporter DaemonSet")]
    assert (daemonset["status"], daemonset["fix"]) == (
        "warn", "pass --cluster NAME (the entry of clusters this kube context is)"), daemonset
    assert daemonset["detail"] == (
        "cannot tell which cluster this kube context is: the live agent config (amazon-cloudwatch/"
        "prometheus-cwagentconfig) names no cluster (missing or unread), and there are 2 clusters; the clusters name "
        "different exporter DaemonSets (ml-a: gpu-metrics-dcgm-exporter, ml-b: ml-b-dcgm-exporter), so which is this "
        "cluster's is not judged; the exporter DaemonSets in gpu-operator (labelled app=nvidia-dcgm-exporter or "
        "app.kubernetes.io/name=dcgm-exporter): ml-b-dcgm-exporter")
    assert checks[("kube", "exporter rollout")]["status"] == "ok"  # the one exporter DaemonSet there is read on
    missing = checks[("kube", "ConfigMap prometheus-config")]
    assert (missing["status"], missing["detail"], missing["fix"]) == (
        "fail", "amazon-cloudwatch/prometheus-config (key prometheus.yaml) is missing",
        "kubectl apply --server-side -f build/k8s/cwagent-prometheus-config-<cluster>.yaml with <cluster> the entry of clusters this "
        "kube context is (one of ml-a, ml-b; then restart cwagent-prometheus), and verify --cluster <cluster>")
    assert "ml-a.yaml" not in _advice(checks) and "exporter.daemonset" not in _advice(checks)
    # --cluster ml-b: ml-b's DaemonSet and ml-b's file
    checks = verify(*skip, "--cluster", "ml-b")[1]
    assert checks[("kube", "exporter DaemonSet")]["detail"] == (
        "gpu-operator/ml-b-dcgm-exporter labelled as a DCGM exporter")
    assert checks[("kube", "ConfigMap prometheus-config")]["fix"] == (
        "kubectl apply --server-side -f build/k8s/cwagent-prometheus-config-ml-b.yaml (then restart cwagent-prometheus)")
    assert "ml-a" not in _advice(checks)
    code, _, stderr = cli("verify", *skip, "--cluster", "ml-c")
    assert code == 2 and "--cluster ml-c: no such entry in clusters (ml-a, ml-b)" in stderr, stderr
    # the clusters differ by exporter.more_daemonsets alone: each one's DaemonSets are named (read as one name before)
    config.write_text("clusters:\n  - {name: ml-a, region: us-east-1}\n"
                      "  - {name: ml-b, region: us-east-1, exporter: {more_daemonsets: [pool-b]}}\n"
                      "exporter:\n  daemonset: ml-b-dcgm-exporter\n")
    assert "the clusters name different exporter DaemonSets (ml-a: gpu-operator/ml-b-dcgm-exporter, ml-b: " \
           "gpu-operator/ml-b-dcgm-exporter + gpu-operator/pool-b)" in verify(*skip)[1][("kube", "exporter DaemonSet")][
               "detail"]


def test_the_exporter_group_says_it_cannot_tell_the_cluster_and_reads_the_one_exporter_there(stack, tmp_path):
    """A fleet of the operator's exporter (gpu-cluster) and the chart's in dcgm-exporter (b), the context b's before
    its agent config is applied: the kube group says it cannot tell the cluster; the exporter group read /metrics
    through the fleet's exporter settings, gpu-operator's Service nvidia-dcgm-exporter (none there: "reachable"
    failed), saying nothing of why. It reads the one exporter DaemonSet there as what it is, and says why and what
    it read; the kube group's node coverage looks for that DaemonSet's pods."""
    cluster, verify = stack
    _helm_chart_install(cluster)
    for key in [k for k in cluster.configmaps if k[0] == "amazon-cloudwatch"]:
        del cluster.configmaps[key]
    config = tmp_path / "gpudash.yaml"
    config.write_text(MIXED_FLEET)
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch", "--config", str(config))
    assert ("exporter", "reachable") not in checks, checks[("exporter", "reachable")]
    endpoint = checks[("exporter", "metrics endpoint")]
    assert endpoint["status"] == "ok" and endpoint["detail"].startswith("service proxy dcgm-exporter/dcgm-exporter: ")
    # the kube group reads the same DaemonSet's pods (it looked in gpu-operator: "GPU nodes without an exporter pod")
    assert (checks[COVERAGE]["status"], checks[COVERAGE]["detail"]) == ("ok", "all 2 GPU nodes run the exporter")
    which = checks[("exporter", "which cluster")]
    assert (which["status"], which["detail"], which["fix"]) == (
        "warn", "cannot tell which cluster this kube context is: the live agent config (amazon-cloudwatch/"
        "prometheus-cwagentconfig) names no cluster (missing or unread), and there are 2 clusters; /metrics is read "
        "through the Service dcgm-exporter/dcgm-exporter of the one exporter DaemonSet in gpu-operator, "
        "dcgm-exporter, dcgm-exporter/dcgm-exporter, read as the helm style's",
        "pass --cluster NAME (the entry of clusters this kube context is)")


def test_the_agent_config_that_tells_the_cluster_is_read_once_a_run(stack, tmp_path, monkeypatch):
    """The kube and exporter groups both tell the cluster from the live agent config: one read of it serves both
    (the exporter group read it again with a reader of its own)."""
    cluster, verify = stack
    config = tmp_path / "gpudash.yaml"
    config.write_text(MIXED_FLEET)
    with KubeTestServer(cluster) as kube:
        monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig(tmp_path / "kubeconfig-count")))
        code, checks = verify("--skip", "cloudwatch", "--config", str(config))
    assert _failures(checks) == {} and code == 0
    assert checks[("exporter", "metrics endpoint")]["detail"].startswith("service proxy gpu-operator/")
    assert kube.reads.count("/api/v1/namespaces/amazon-cloudwatch/configmaps/prometheus-cwagentconfig") == 1


def test_verify_does_not_judge_a_renamed_cluster_by_the_first_entry(stack, tmp_path):
    """The live agent config names gpu-cluster; the settings renamed it gpu-cluster-2 and list ml-a first: verify
    compared the ConfigMaps (and the DaemonSet, where the clusters name different ones) with ml-a's, advising to
    apply ml-a's file here. It warns that it cannot tell, and --cluster names the entry."""
    _, verify = stack
    config = tmp_path / "gpudash.yaml"
    skip = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch", "--config", str(config))
    unknown = ("cannot tell which cluster this kube context is: the live agent config (amazon-cloudwatch/"
               "prometheus-cwagentconfig) names cluster gpu-cluster, none of clusters (ml-a, gpu-cluster-2)")
    configmaps = ("ConfigMap prometheus-cwagentconfig", "ConfigMap prometheus-cwagentconfig key gpudash-otel.yaml",
                  "ConfigMap prometheus-config")
    for per_cluster in (", exporter: {daemonset: ml-a-dcgm-exporter}", ""):
        config.write_text(f"clusters:\n  - {{name: ml-a, region: us-east-1{per_cluster}}}\n"
                          "  - {name: gpu-cluster-2, region: us-east-1}\n")
        checks = verify(*skip)[1]
        daemonset = checks[("kube", "exporter DaemonSet")]
        if per_cluster:
            assert daemonset["status"] == "warn" and daemonset["detail"].startswith(unknown + "; the clusters name "
                                                                                    "different exporter DaemonSets")
        else:
            assert daemonset["status"] == "ok", daemonset
        for name in configmaps:
            assert (checks[("kube", name)]["status"], checks[("kube", name)]["detail"]) == (
                "warn", f"{unknown}: not compared with any cluster's generated config"), name
        assert "ml-a" not in _advice(checks).replace("one of ml-a, gpu-cluster-2", "")
        checks = verify(*skip, "--cluster", "gpu-cluster-2")[1]
        assert checks[("kube", "exporter DaemonSet")]["status"] == "ok"
        assert checks[("kube", "ConfigMap prometheus-cwagentconfig key gpudash-otel.yaml")]["fix"] == (
            "kubectl apply --server-side -f build/k8s/cwagent-prometheus-config-gpu-cluster-2.yaml (then restart cwagent-prometheus)")


def test_a_service_monitor_in_the_prometheus_stack_namespace_selects_the_exporter(stack, tmp_path):
    """gpudash writes its ServiceMonitor into prometheus_stack.namespace; verify read exporter.namespace only and
    warned "no ServiceMonitor selects the exporter", advising to apply the file already applied. One there without a
    namespaceSelector naming exporter.namespace selects Services of its own namespace only."""
    cluster, verify = stack
    config = tmp_path / "gpudash.yaml"
    config.write_text("prometheus_stack:\n  release: kube-prometheus-stack\n  namespace: monitoring\n")
    cluster.service_monitors = [{**m, "metadata": {**m["metadata"], "namespace": "monitoring"}}
                                for m in cluster.service_monitors]
    (monitor,) = [m["metadata"]["name"] for m in cluster.service_monitors]
    name = ("kube", "Prometheus scrape config")
    check = verify("--skip", "exporter", "--skip", "cloudwatch", "--config", str(config))[1][name]
    assert (check["status"], check["detail"]) == ("ok", f"ServiceMonitor {monitor} ({NO_PROMETHEUS_OBJECT})"), check
    del cluster.service_monitors[0]["spec"]["namespaceSelector"]
    check = verify("--skip", "exporter", "--skip", "cloudwatch", "--config", str(config))[1][name]
    assert (check["status"], check["detail"]) == ("warn", "no ServiceMonitor selects the exporter"), check


def test_a_service_monitor_whose_match_names_leave_out_the_exporter_namespace_does_not_select_it(stack):
    """A ServiceMonitor in the exporter's namespace whose namespaceSelector.matchNames lists other namespaces only
    selects Services there, not in its own (prometheus-operator reads matchNames before the default of its own
    namespace): verify counted it as selecting the exporter ("ok"), and Prometheus scraped nothing through it."""
    cluster, verify = stack
    (monitor,) = cluster.service_monitors
    assert monitor["metadata"]["namespace"] == "gpu-operator"
    monitor["spec"]["namespaceSelector"] = {"matchNames": ["monitoring"]}
    check = verify("--skip", "exporter", "--skip", "cloudwatch")[1][("kube", "Prometheus scrape config")]
    assert (check["status"], check["detail"]) == ("warn", "no ServiceMonitor selects the exporter"), check
    monitor["spec"]["namespaceSelector"] = {"matchNames": ["monitoring", "gpu-operator"]}
    check = verify("--skip", "exporter", "--skip", "cloudwatch")[1][("kube", "Prometheus scrape config")]
    assert check["status"] == "ok", check


def test_cloudwatch_without_the_exporter_daemonsets_count_warns_that_the_data_missing_alarm_fires(stack, moto):
    """The data-missing alarm reads the exporter DaemonSet's desired count the agent publishes with [ClusterName]:
    verify's cloudwatch group says whether it arrives, naming the DaemonSet the settings name (without it the alarm
    is in ALARM for good while GPU metrics arrive, and verify said nothing)."""
    _, verify = stack
    only_cloudwatch = ("--skip", "kube", "--skip", "exporter", "--skip", "prometheus")
    name = ("cloudwatch", "gpu-cluster data-missing signals")
    checks = verify(*only_cloudwatch)[1]
    assert (checks[name]["status"], checks[name]["detail"]) == ("ok", (
        "kube_daemonset_status_desired_number_scheduled [ClusterName] arriving (the exporter DaemonSet "
        "gpu-operator/nvidia-dcgm-exporter)"))
    moto.reset()
    moto.put_dcgm_metrics(WORKLOAD_POD, daemonset_counts=False)
    code, checks = verify(*only_cloudwatch)
    assert code == 0 and checks[name]["status"] == "warn"
    assert checks[("cloudwatch", "gpu-cluster metrics")]["status"] == "ok"
    assert checks[name]["detail"] == (
        "no kube_daemonset_status_desired_number_scheduled [ClusterName] in ContainerInsights/Prometheus for "
        "gpu-cluster in the last 3 h: the data-missing alarm reads it as the desired count of the exporter DaemonSet "
        "gpu-operator/nvidia-dcgm-exporter and is in ALARM without it (ListMetrics lists a new metric up to 15 minutes "
        "late)")
    assert checks[name]["fix"].startswith("check that exporter.daemonset names the exporter DaemonSet")


def test_cloudwatch_without_the_count_per_kube_state_metrics_pod_warns_that_the_agent_alarm_never_fires(stack, moto):
    """The agent alarm counts the desired count the agent publishes with [ClusterName, kube_state_metrics_pod], which
    the agent's kube-state-metrics job makes by writing each pod into that label. An agent still running a
    prometheus.yaml without it publishes the [ClusterName] count alone: the data-missing alarm reads it, the agent
    alarm has nothing to count and never fires (an agent in a crash loop unseen), and verify said all was well."""
    _, verify = stack
    only_cloudwatch = ("--skip", "kube", "--skip", "exporter", "--skip", "prometheus")
    name = ("cloudwatch", "gpu-cluster data-missing signals")
    moto.reset()
    moto.put_dcgm_metrics(WORKLOAD_POD, daemonset_counts=False)
    desired = {"MetricName": "kube_daemonset_status_desired_number_scheduled", "Value": 2,
               "Dimensions": [{"Name": "ClusterName", "Value": "gpu-cluster"}]}
    moto.client("cloudwatch", "us-east-1").put_metric_data(Namespace="ContainerInsights/Prometheus",
                                                           MetricData=[desired])
    code, checks = verify(*only_cloudwatch)
    assert code == 0 and (checks[name]["status"], checks[name]["detail"]) == ("warn", (
        "no kube_daemonset_status_desired_number_scheduled [ClusterName, kube_state_metrics_pod] in "
        "ContainerInsights/Prometheus for gpu-cluster in the last 3 h (the exporter DaemonSet "
        "gpu-operator/nvidia-dcgm-exporter), though it arrives with [ClusterName]: the agent alarm counts the agent's "
        "reads of each kube-state-metrics pod in it and never fires without it, an agent in a crash loop unseen "
        "(ListMetrics lists a new metric up to 15 minutes late)")), checks[name]
    assert checks[name]["fix"].startswith("apply build/k8s/cwagent-prometheus-config-gpu-cluster.yaml")
    per_pod = {**desired, "Dimensions": [*desired["Dimensions"],
                                         {"Name": "kube_state_metrics_pod", "Value": "monitoring/ksm-0"}]}
    moto.client("cloudwatch", "us-east-1").put_metric_data(Namespace="ContainerInsights/Prometheus",
                                                           MetricData=[per_pod])
    assert verify(*only_cloudwatch)[1][name]["status"] == "ok"


def test_cloudwatch_names_each_exporter_daemonset_whose_count_is_missing(stack, moto, tmp_path):
    """exporter.more_daemonsets: the agent publishes each DaemonSet's desired count with [ClusterName, namespace,
    daemonset] and each DaemonSet has its alarm; verify's cloudwatch group looks for each, and names the ones whose
    count does not arrive (pool b's: its alarm is in ALARM for good), not the cluster's [ClusterName] count, which the
    agent no longer publishes."""
    _, verify = stack
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  more_daemonsets: [pool-b, gpu-pools/pool-c]\n")
    only_cloudwatch = ("--skip", "kube", "--skip", "exporter", "--skip", "prometheus", "--config", str(config))
    name = ("cloudwatch", "gpu-cluster data-missing signals")
    moto.reset()
    moto.put_dcgm_metrics(WORKLOAD_POD, daemonset_counts=False)
    moto.client("cloudwatch", "us-east-1").put_metric_data(Namespace="ContainerInsights/Prometheus", MetricData=[
        {"MetricName": "kube_daemonset_status_desired_number_scheduled", "Value": 2,
         "Dimensions": [{"Name": "ClusterName", "Value": "gpu-cluster"}, {"Name": "namespace", "Value": namespace},
                        {"Name": "daemonset", "Value": daemonset}]}
        for namespace, daemonset in (("gpu-operator", "nvidia-dcgm-exporter"), ("gpu-pools", "pool-c"))] + [
        {"MetricName": "kube_daemonset_status_desired_number_scheduled", "Value": 2,
         "Dimensions": [{"Name": "ClusterName", "Value": "gpu-cluster"}, {"Name": "namespace", "Value": "gpu-operator"},
                        {"Name": "daemonset", "Value": "nvidia-dcgm-exporter"},
                        {"Name": "kube_state_metrics_pod", "Value": "monitoring/ksm-0"}]}])
    code, checks = verify(*only_cloudwatch)
    assert code == 0 and (checks[name]["status"], checks[name]["detail"]) == ("warn", (
        "no kube_daemonset_status_desired_number_scheduled [ClusterName, namespace, daemonset] in "
        "ContainerInsights/Prometheus for gpu-cluster in the last 3 h of the exporter DaemonSet gpu-operator/pool-b: "
        "the data-missing alarm of each reads it as its desired count and is in ALARM without it (ListMetrics lists a "
        "new metric up to 15 minutes late)"))
    moto.client("cloudwatch", "us-east-1").put_metric_data(Namespace="ContainerInsights/Prometheus", MetricData=[
        {"MetricName": "kube_daemonset_status_desired_number_scheduled", "Value": 1,
         "Dimensions": [{"Name": "ClusterName", "Value": "gpu-cluster"}, {"Name": "namespace", "Value": "gpu-operator"},
                        {"Name": "daemonset", "Value": "pool-b"}]}])
    checks = verify(*only_cloudwatch)[1]
    assert (checks[name]["status"], checks[name]["detail"]) == ("ok", (
        "kube_daemonset_status_desired_number_scheduled [ClusterName, namespace, daemonset] arriving (the exporter "
        "DaemonSets gpu-operator/nvidia-dcgm-exporter, gpu-operator/pool-b, gpu-pools/pool-c)"))


def test_an_exporter_container_of_another_name_warns_that_the_rule_misses_its_stock_targets(stack):
    """The data-missing rule tells the targets of the operator's or the chart's own ServiceMonitor by the container
    name the deployment gives the exporter: a container of another name (found by its port 9400) is a warning naming
    both names and the fix; the deployment's name says nothing."""
    cluster, verify = stack
    in_use = ("--skip", "exporter", "--skip", "cloudwatch")  # Prometheus in use: the rule matters
    name = ("kube", "exporter container name")
    assert name not in verify(*in_use)[1]
    cluster.daemonset["spec"]["template"]["spec"]["containers"][0]["name"] = "dcgm"
    checks = verify(*in_use)[1]
    assert (checks[name]["status"], checks[name]["detail"]) == ("warn", (
        "the exporter's container is named dcgm, not nvidia-dcgm-exporter (exporter.deployment: gpu-operator): the "
        "data-missing rule tells the targets of the GPU operator's or the chart's own ServiceMonitor by "
        "container=\"nvidia-dcgm-exporter\", so their scrapes without GPU data are not counted for this exporter"))
    assert checks[("kube", "pod labels setting")]["status"] == "ok"  # found by its port, read on


def test_a_service_monitor_selecting_a_port_the_service_does_not_name_fails(stack):
    """A ServiceMonitor endpoint selects the Service's port by name: the exporter's Service naming its 9400 port
    otherwise than the style's (which gpudash's ServiceMonitor selects) leaves Prometheus scraping nothing through it,
    and verify said "ServiceMonitor ... ok"."""
    cluster, verify = stack
    in_use = ("--skip", "exporter", "--skip", "cloudwatch")
    name = ("kube", "Prometheus scrape config")
    (service,) = cluster.services.values()
    service["spec"]["ports"][0]["name"] = "http"
    (monitor,) = [m["metadata"]["name"] for m in cluster.service_monitors]
    assert _failures(verify(*in_use)[1])[name] == (
        f"ServiceMonitor {monitor} (port gpu-metrics) selects a Service port that no Service labelled "
        "app=nvidia-dcgm-exporter names (nvidia-dcgm-exporter: http 9400): Prometheus scrapes nothing through it",
        "name the Service's 9400 port gpu-metrics (the port build/k8s/servicemonitor.yaml selects for "
        "exporter.deployment: gpu-operator), or point the ServiceMonitor's endpoint at the Service's port name")


def test_the_exporter_rollout_strategy_is_the_one_the_data_missing_alarm_reads(stack, tmp_path):
    """exporter.max_unavailable is the rollout allowance the data-missing alarm and rule read; only the DaemonSet tells
    what it really is (kube-state-metrics does not), so verify compares them."""
    cluster, verify = stack
    only_kube = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    name = ("kube", "exporter rollout strategy")
    # the operator's manifest leaves it out: the API server's default, 1, as the settings' default
    _, checks = verify(*only_kube)
    assert checks[name]["status"] == "ok" and "maxUnavailable 1" in checks[name]["detail"]
    cluster.daemonset["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 3}}
    code, checks = verify(*only_kube)
    assert code == 1
    assert _failures(checks)[name] == (
        "the exporter DaemonSet rolls out with maxUnavailable 3 (3 of 2 nodes), gpudash.yaml says "
        "exporter.max_unavailable: 1 (1): the data-missing alarm and rule read a rollout's own unavailable pods as "
        "data missing",
        "write exporter.max_unavailable: 3 in gpudash.yaml, generate and apply again (or change the DaemonSet's "
        "updateStrategy)")
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  max_unavailable: 3\n")
    assert verify(*only_kube, "--config", str(config))[1][name]["status"] == "ok"
    config.write_text("exporter:\n  max_unavailable: 4\n")
    assert "a pod lost during a rollout as the rollout's own" in \
        _failures(verify(*only_kube, "--config", str(config))[1])[name][0]
    # a percentage of 2 nodes, rounded up: 1 pod today, as the setting; it differs once nodes come or go
    cluster.daemonset["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = "50%"
    _, checks = verify(*only_kube)
    assert checks[name]["status"] == "warn" and 'exporter.max_unavailable: "50%"' in checks[name]["fix"]
    config.write_text('exporter:\n  max_unavailable: "50%"\n')
    assert verify(*only_kube, "--config", str(config))[1][name]["status"] == "ok"
    # a setting written 1.0 is the number 1 (it stopped verify with a TypeError)
    config.write_text("exporter:\n  max_unavailable: 1.0\n")
    cluster.daemonset["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = 1
    assert verify(*only_kube, "--config", str(config))[1][name]["status"] == "ok"
    # 0% is no pod at any node count, as 0 is, where a surge replaces the pods (maxSurge 1: each new pod starts
    # before the old one stops)
    rolling = cluster.daemonset["spec"]["updateStrategy"]["rollingUpdate"]
    rolling.update(maxUnavailable="0%", maxSurge=1)
    config.write_text("exporter:\n  max_unavailable: 0\n")
    assert verify(*only_kube, "--config", str(config))[1][name]["status"] == "ok"
    # maxUnavailable and maxSurge both 0 (or 0%) roll out one pod at a time: the DaemonSet controller reads
    # maxUnavailable 1 (the API's documentation: maxUnavailable "cannot be 0 if MaxSurge is 0")
    for surge in (0, "0%"):
        rolling["maxSurge"] = surge
        failure = _failures(verify(*only_kube, "--config", str(config))[1])[name][0]
        assert failure.startswith("the exporter DaemonSet rolls out with maxUnavailable 1 (1 of 2 nodes) "
                                  "(maxUnavailable and maxSurge both 0: the DaemonSet controller rolls out with 1), "
                                  "gpudash.yaml says exporter.max_unavailable: 0 (0)"), failure
    del rolling["maxSurge"]
    checks = verify(*only_kube)[1]  # the settings' default, 1
    assert checks[name]["status"] == "ok" and "both 0" in checks[name]["detail"]
    rolling["maxSurge"] = "many"  # an answer not shaped as the API's
    assert _failures(verify(*only_kube)[1])[name][0].startswith("odd answer from")
    del rolling["maxSurge"]
    # no node runs the exporter: a percentage and a number cannot be told apart yet (not a failure)
    cluster.daemonset["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = "50%"
    cluster.daemonset["status"]["desiredNumberScheduled"] = 0
    _, checks = verify(*only_kube)
    assert checks[name]["status"] == "warn" and "no node runs the exporter now" in checks[name]["detail"]
    # an answer not shaped as the API's is a failed check, not a guess
    cluster.daemonset["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = "half"
    assert _failures(verify(*only_kube)[1])[name][0].startswith("odd answer from")
    cluster.daemonset["spec"]["updateStrategy"] = {"type": "OnDelete"}
    assert verify(*only_kube)[1][name]["status"] == "ok"


def test_a_rollout_running_two_exporter_pods_on_a_node_at_once_is_a_warning_naming_the_doubled_counters(stack):
    """With maxSurge above 0 a rollout runs a node's new exporter pod beside the old one until the new one is available;
    the CloudWatch agent publishes a counter's increase per exporter revision (per exporter pod on the JSON path), so
    both pods' increases are published for the seconds they run together
    (tests/unit/test_cloudwatch_exporter_overlap.py: twice the energy and replays in an overlap's period)."""
    cluster, verify = stack
    only_kube = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    name = ("kube", "exporter rollout overlap")
    checks = verify(*only_kube)[1]  # the operator's manifest leaves maxSurge out: the API server's default, 0
    assert checks[name]["status"] == "ok" and "maxSurge 0" in checks[name]["detail"]
    for surge in (1, "10%"):
        cluster.daemonset["spec"]["updateStrategy"] = {"type": "RollingUpdate",
                                                       "rollingUpdate": {"maxUnavailable": 1, "maxSurge": surge}}
        code, checks = verify(*only_kube)
        assert checks[name]["status"] == "warn" and code == 0  # a warning: publishing goes ahead
        assert checks[name]["detail"].startswith(f"RollingUpdate with maxSurge {surge}: a rollout runs a node's new "
                                                 "exporter pod beside the old one")
        assert "read twice the increase" in checks[name]["detail"]
        assert checks[name]["fix"].startswith("set the exporter DaemonSet's updateStrategy.rollingUpdate.maxSurge to 0")
    cluster.daemonset["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"] = "0%"
    assert verify(*only_kube)[1][name]["status"] == "ok"
    cluster.daemonset["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"] = "many"  # not shaped as the API's
    assert _failures(verify(*only_kube)[1])[name][0].startswith("odd answer from")
    cluster.daemonset["spec"]["updateStrategy"] = {"type": "OnDelete"}
    assert verify(*only_kube)[1][name]["status"] == "ok"


def test_on_the_classic_agent_a_surge_rollout_warning_names_the_pod_totals_it_doubles_too(stack, tmp_path):
    """On agent.pipeline classic a pod's totals are sums of every GPU reading published per scrape: while a rollout
    runs two exporter pods on a node, "Framebuffer used by pod", "Power draw of each pod's GPUs" and "Pods on GPUs" read
    twice their value (tests/unit/test_cloudwatch_overlap_pod_totals.py), not only the counters; the JSON path keys its
    deltas per exporter pod, not per revision. The OTel pipeline's totals are made per scrape and stay true."""
    cluster, verify = stack
    only_kube = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    name = ("kube", "exporter rollout overlap")
    cluster.daemonset["spec"]["updateStrategy"] = {"type": "RollingUpdate",
                                                   "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}
    classic = tmp_path / "classic.yaml"
    classic.write_text("agent:\n  pipeline: classic\nthresholds:\n  pcie_replays_per_minute: 0\n")
    detail = verify(*only_kube, "--config", str(classic))[1][name]["detail"]
    assert "(one delta series per exporter pod)" in detail
    assert detail.endswith("; on agent.pipeline classic each pod's totals (framebuffer used, power draw and PCIe "
                           "traffic by pod) and the GPUs \"Pods on GPUs\" counts read twice their value too")
    detail = verify(*only_kube)[1][name]["detail"]
    assert "(one delta series per exporter revision)" in detail and "classic" not in detail


def test_exported_pod_renaming_is_detected(stack, prometheus_exported):
    _, verify = stack
    code, checks = verify(prometheus_url=prometheus_exported.url)
    assert code == 1
    assert _failures(checks)[("prometheus", "workload pod label")] == (
        "the workload pod arrives as 'exported_pod', settings say 'pod'",
        "set labels.pod: exported_pod, labels.namespace: exported_namespace and labels.container: exported_container "
        "in gpudash.yaml, or scrape with gpudash's job or ServiceMonitor (honorLabels: true)")


def test_exported_pod_alone_is_not_enough_when_the_namespace_is_renamed_too(stack, prometheus_exported, tmp_path):
    """A ServiceMonitor without honorLabels renames the namespace with the pod: settings that follow the pod
    alone would show every pod in the exporter's namespace (gpu-operator), so verify fails on the namespace."""
    _, verify = stack
    config = tmp_path / "pod-only.yaml"
    config.write_text("labels:\n  pod: exported_pod\n")
    code, checks = verify("--config", str(config), prometheus_url=prometheus_exported.url)
    assert code == 1
    assert _failures(checks)[("prometheus", "workload pod label")] == (
        "the workload's namespace arrives as 'exported_namespace', settings say 'namespace'",
        "set labels.namespace: exported_namespace in gpudash.yaml")
    config.write_text("labels:\n  pod: exported_pod\n  namespace: exported_namespace\n")  # container: not renamed here
    code, checks = verify("--config", str(config), prometheus_url=prometheus_exported.url)
    assert checks[("prometheus", "workload pod label")]["status"] == "ok"


def test_hostname_spelling_is_detected(stack, payload, tmp_path):
    cluster, verify = stack
    cluster.metrics_payload = payload.replace("Hostname=", "hostname=")
    code, checks = verify("--skip", "prometheus")
    assert checks[("exporter", "node label")]["status"] == "ok"  # the default list accepts both spellings
    config = tmp_path / "only-hostname-upper.yaml"
    config.write_text("labels:\n  node: Hostname\n")
    code, checks = verify("--skip", "prometheus", "--config", str(config))
    assert _failures(checks)[("exporter", "node label")] == (
        "the exporter writes 'hostname', settings say 'Hostname'", "set labels.node: hostname in gpudash.yaml")


def test_agent_configmap_missing_a_selector(stack):
    """The OTel pipeline publishes: a selector missing from its exporter is drift."""
    cluster, verify = stack
    configmap = cluster.configmaps[("amazon-cloudwatch", "prometheus-cwagentconfig")]
    config = yaml.safe_load(configmap["data"]["gpudash-otel.yaml"])
    for declaration in config["exporters"]["awsemf/gpudash"]["metric_declarations"]:
        if "^DCGM_FI_DEV_GPU_UTIL$" in declaration["metric_name_selectors"]:
            declaration["metric_name_selectors"].remove("^DCGM_FI_DEV_GPU_UTIL$")
    configmap["data"]["gpudash-otel.yaml"] = yaml.safe_dump(config)
    code, checks = verify()
    assert code == 1
    assert _failures(checks)[("kube", "ConfigMap prometheus-cwagentconfig key gpudash-otel.yaml")] == (
        "differs from what gpudash generates: metric selector missing: ^DCGM_FI_DEV_GPU_UTIL$",
        "kubectl apply --server-side -f build/k8s/cwagent-prometheus-config-gpu-cluster.yaml (then restart cwagent-prometheus)")


def test_an_agent_configmap_gpudash_did_not_write_is_said_to_be_replaced_whole(stack):
    """A ConfigMap of the agent without gpudash's label (AWS's, or one a person wrote after a blog) whose every job and
    declaration is of gpudash's form: the drift is said as before, and that it is not gpudash's and an apply replaces
    it whole (it said only that it differs)."""
    cluster, verify = stack
    configmap = cluster.configmaps[("amazon-cloudwatch", "prometheus-cwagentconfig")]
    configmap["metadata"].pop("labels")
    configmap["metadata"].pop("annotations", None)
    config = yaml.safe_load(configmap["data"]["gpudash-otel.yaml"])
    for declaration in config["exporters"]["awsemf/gpudash"]["metric_declarations"]:
        if "^DCGM_FI_DEV_GPU_UTIL$" in declaration["metric_name_selectors"]:
            declaration["metric_name_selectors"].remove("^DCGM_FI_DEV_GPU_UTIL$")
    configmap["data"]["gpudash-otel.yaml"] = yaml.safe_dump(config)
    code, checks = verify("--skip", "cloudwatch")
    assert _failures(checks)[("kube", "ConfigMap prometheus-cwagentconfig key gpudash-otel.yaml")] == (
        "differs from what gpudash generates: metric selector missing: ^DCGM_FI_DEV_GPU_UTIL$; "
        "amazon-cloudwatch/prometheus-cwagentconfig is not gpudash's (no app.kubernetes.io/managed-by=gpudash label: "
        "AWS's or a person's): applying build/k8s/cwagent-prometheus-config-gpu-cluster.yaml replaces it whole",
        "kubectl apply --server-side -f build/k8s/cwagent-prometheus-config-gpu-cluster.yaml (then restart cwagent-prometheus)")


def test_agent_json_left_on_its_own_pipeline_publishes_twice(stack):
    """The live JSON still holds the prometheus section beside the OTel pipeline: every metric twice."""
    cluster, verify = stack
    configmap = cluster.configmaps[("amazon-cloudwatch", "prometheus-cwagentconfig")]
    configmap["data"]["cwagentconfig.json"] = json.dumps(
        {"logs": {"metrics_collected": {"prometheus": {"cluster_name": "gpu-cluster"}}}})
    code, checks = verify()
    assert code == 1
    assert _failures(checks)[("kube", "ConfigMap prometheus-cwagentconfig")][0] == (
        "differs from what gpudash generates: it holds a pipeline of its own (the agent would publish twice)")


def test_filter_edited_out_of_the_live_pipeline_is_drift(stack):
    cluster, verify = stack
    configmap = cluster.configmaps[("amazon-cloudwatch", "prometheus-cwagentconfig")]
    config = yaml.safe_load(configmap["data"]["gpudash-otel.yaml"])
    config["processors"]["filter/gpudash"]["metrics"]["datapoint"] = []
    configmap["data"]["gpudash-otel.yaml"] = yaml.safe_dump(config)
    code, checks = verify()
    assert code == 1
    assert _failures(checks)[("kube", "ConfigMap prometheus-cwagentconfig key gpudash-otel.yaml")][0] == (
        "differs from what gpudash generates: the filter that drops DCGM's blank values differs")


def _stock_agent_configmaps(reference):
    """The agent ConfigMaps of AWS's own manifest (cloudwatch-agent/prometheus-eks.yaml): its scrape jobs (App Mesh,
    Fluent Bit, service endpoints, JMX) and their metric declarations, as a cluster set up by AWS's guide holds them."""
    return {document["metadata"]["name"]: document for document in yaml.safe_load_all(
        (reference / "k8s/cloudwatch-agent/prometheus-eks.yaml").read_text())
        if document and document.get("kind") == "ConfigMap"}


STOCK_JOBS = "kubernetes-pod-appmesh-envoy, kubernetes-pod-fluentbit-plugin, kubernetes-service-endpoints, kubernetes-pod-jmx"
KEEP_THEIRS = ("before applying build/k8s/cwagent-prometheus-config-gpu-cluster.yaml, move them to an agent of their own "
               "(a second CloudWatch agent Deployment mounting ConfigMaps of other names), or add them back to the "
               "file after each generate")


def test_an_agent_config_of_jobs_gpudash_does_not_write_is_not_one_to_apply_over_without_a_word(stack, reference):
    """The cluster's agent runs AWS's stock config (its own scrape jobs and metric declarations). `kubectl apply` of
    gpudash's file replaces both ConfigMaps' texts whole: verify said only that they differ and told the user to
    apply it, and the agent then stopped scraping and publishing every one of those metrics. Now it names what
    applying would drop and says how to keep it."""
    cluster, verify = stack
    for name, document in _stock_agent_configmaps(reference).items():
        cluster.configmaps[("amazon-cloudwatch", name)] = copy.deepcopy(document)
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch")
    assert code == 1
    failures = _failures(checks)
    replaced = ("applying build/k8s/cwagent-prometheus-config-gpu-cluster.yaml replaces the ConfigMap's texts whole, "
                "and the agent stops scraping and publishing them")
    assert failures[("kube", "ConfigMap prometheus-config")] == (
        "differs from what gpudash generates: scrape job dcgm-exporter missing; scrape job gpudash-kube-state-metrics "
        "missing; amazon-cloudwatch/prometheus-config holds what gpudash does not write (scrape jobs "
        f"{STOCK_JOBS}): " + replaced, KEEP_THEIRS)
    detail, fix = failures[("kube", "ConfigMap prometheus-cwagentconfig key gpudash-otel.yaml")]
    assert detail == ("amazon-cloudwatch/prometheus-cwagentconfig (key gpudash-otel.yaml) is missing; "
                      "amazon-cloudwatch/prometheus-cwagentconfig holds what gpudash does not write (14 metric "
                      "declarations of 52 metric selectors (^nginx_ingress_controller_(requests|success)$, "
                      "^nginx_ingress_controller_nginx_process_connections$, "
                      "^nginx_ingress_controller_nginx_process_connections_total$, "
                      "^nginx_ingress_controller_nginx_process_resident_memory_bytes$, "
                      "^nginx_ingress_controller_nginx_process_cpu_seconds_total$ and 47 more)): " + replaced)
    assert fix == KEEP_THEIRS
    assert "kubectl apply" not in " ".join(fix for _, fix in failures.values() if "holds what gpudash" in _)


def test_an_agent_config_nested_deeper_than_gpudash_reads_is_its_check_s_failure_and_verify_goes_on(stack):
    """A hostile or broken agent ConfigMap: a scrape job of gpudash's holds a value nested 900 deep (libyaml loads
    it) beside a job gpudash does not write. Writing gpudash's part without the other job recursed past Python's
    limit: verify ended "a bug in gpudash" (RecursionError) with no check reported. Now that ConfigMap's check fails
    saying it is nested deeper than gpudash reads, and every other check is reported."""
    cluster, verify = stack
    configmap = cluster.configmaps[("amazon-cloudwatch", "prometheus-config")]
    config = yaml.safe_load(configmap["data"]["prometheus.yaml"])
    config["scrape_configs"][0]["deep"] = "DEEP"
    config["scrape_configs"].append({"job_name": "team-jmx"})
    configmap["data"]["prometheus.yaml"] = yaml.safe_dump(config).replace("DEEP", "[" * 900 + "]" * 900)
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch")
    detail, fix = _failures(checks)[("kube", "ConfigMap prometheus-config")]
    assert detail == ("amazon-cloudwatch/prometheus-config holds a text nested deeper than gpudash reads: not compared "
                      "with what gpudash generates"), detail
    assert checks[("kube", "exporter DaemonSet")]["status"] == "ok" and code == 1


def test_an_agent_config_of_jobs_gpudash_does_not_write_is_named_on_the_classic_pipeline_too(stack, reference, tmp_path):
    """agent.pipeline: classic, whose JSON holds gpudash's declarations: AWS's stock declarations are told from them
    (they select none of gpudash's jobs) and named, as on the OTel pipeline."""
    cluster, verify = stack
    for name, document in _stock_agent_configmaps(reference).items():
        cluster.configmaps[("amazon-cloudwatch", name)] = copy.deepcopy(document)
    settings = _settings_file(tmp_path, "classic", "agent:\n  pipeline: classic\n")
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch", "--config", str(settings))
    detail, fix = _failures(checks)[("kube", "ConfigMap prometheus-cwagentconfig")]
    assert detail.startswith("differs from what gpudash generates: metric selector missing: ")
    assert ("; amazon-cloudwatch/prometheus-cwagentconfig holds what gpudash does not write (14 metric declarations of "
            "52 metric selectors (") in detail
    assert fix == KEEP_THEIRS


def test_gpudash_s_agent_config_with_jobs_of_its_own_added_warns_that_applying_drops_them(stack, reference):
    """A user who added their own scrape job and declaration to the ConfigMaps gpudash wrote: gpudash's part matches
    (no failure), and verify warns that applying the next build drops what they added."""
    cluster, verify = stack
    stock = _stock_agent_configmaps(reference)
    jmx = next(j for j in yaml.safe_load(stock["prometheus-config"]["data"]["prometheus.yaml"])["scrape_configs"]
               if j["job_name"] == "kubernetes-pod-jmx")
    scrape = cluster.configmaps[("amazon-cloudwatch", "prometheus-config")]["data"]
    config = yaml.safe_load(scrape["prometheus.yaml"])
    config["scrape_configs"].append(jmx)
    scrape["prometheus.yaml"] = yaml.safe_dump(config)
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch")
    assert _failures(checks) == {}
    # gpudash's label, as its file applied it: the job may be an earlier build's or theirs
    assert checks[("kube", "ConfigMap prometheus-config")]["fix"] == (
        "if a gpudash build of earlier settings wrote them, apply build/k8s/cwagent-prometheus-config-gpu-cluster.yaml; "
        "if a person added them, " + KEEP_THEIRS)
    del cluster.configmaps[("amazon-cloudwatch", "prometheus-config")]["metadata"]["labels"]  # a ConfigMap of theirs
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch")
    assert checks[("kube", "ConfigMap prometheus-config")]["fix"] == KEEP_THEIRS
    assert (checks[("kube", "ConfigMap prometheus-config")]["status"], checks[("kube", "ConfigMap prometheus-config")]
            ["detail"]) == ("warn", "gpudash's part matches what gpudash generates; amazon-cloudwatch/prometheus-config "
                            "holds what gpudash does not write (scrape job kubernetes-pod-jmx): applying "
                            "build/k8s/cwagent-prometheus-config-gpu-cluster.yaml replaces the ConfigMap's texts whole, "
                            "and the agent stops scraping and publishing them")
    assert checks[("kube", "ConfigMap prometheus-cwagentconfig")]["status"] == "ok"


def _settings_file(tmp_path, name, text):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def _applied_rules(cluster, settings):
    """The PrometheusRules of a build of `settings`, as `kubectl apply -f build/k8s/prometheusrule.yaml` leaves them:
    the objects of the same names before replaced."""
    files = encode(build(load_project(settings), grafana=False))
    for document in yaml.load_all(files["k8s/prometheusrule.yaml"], Loader=_LOADER):
        key = (document["metadata"]["namespace"], document["metadata"]["name"])
        cluster.prometheus_rules = [r for r in cluster.prometheus_rules
                                    if (r["metadata"]["namespace"], r["metadata"]["name"]) != key] + [document]


ONE_PROMETHEUS = "prometheus_stack:\n  namespace: monitoring\n"
RULE_OBJECTS = ("monitoring/gpudash-gpu-alerts, monitoring/gpudash-gpu-alerts-2, monitoring/gpudash-gpu-alerts-3, "
                "monitoring/gpudash-counters, monitoring/gpudash-counters-2 and 2 more")


@pytest.mark.parametrize("first, second, whose, fix", [
    ("project: team-a\nclusters:\n  - {name: a, region: us-east-1, prometheus_label: a}\n",
     "project: team-b\nclusters:\n  - {name: b, region: us-east-1, prometheus_label: b}\n",
     "project team-a (clusters a)", "give these settings PrometheusRules of their own: set prometheus_stack.namespace"),
    ("project: ml\nclusters:\n  - {name: east, region: us-east-1, prometheus_label: east}\n",
     "project: ml\nclusters:\n  - {name: west, region: us-west-2, prometheus_label: west}\n",
     "another settings file of project ml (clusters east)",
     "if these settings renamed every one of those clusters since, apply build/k8s/prometheusrule.yaml; else give "
     "these settings PrometheusRules of their own"),
    ("project: team-a\n", "project: team-b\n", "project team-a (clusters gpu-cluster)",
     "judge these clusters from one settings file: two settings' rules for one cluster on one Prometheus raise "
     "alerts of the same names and labels, which Alertmanager takes for one alert"),
], ids=["two projects on one Prometheus", "a project split in two settings files", "two projects of one cluster"])
def test_prometheus_rules_another_settings_file_applied_are_named_before_this_build_replaces_them(
        stack, tmp_path, first, second, whose, fix):
    """Two settings files writing PrometheusRules into one namespace write objects of the same names: `kubectl apply`
    of the second's build silently replaced the first's alerts, counter recordings and watched clusters (on a
    Prometheus of several clusters, the first file's clusters then had no alert and no rate panel). verify now reads
    the live objects' annotations and fails naming whose they are, before the second build is applied; the first
    settings' own verify is ok."""
    cluster, verify = stack
    first = _settings_file(tmp_path, "first", first + ONE_PROMETHEUS)
    second = _settings_file(tmp_path, "second", second + ONE_PROMETHEUS)
    _applied_rules(cluster, first)
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(first))
    assert checks[("kube", "PrometheusRules of other settings")]["status"] == "ok"
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(second))
    detail, given = _failures(checks)[("kube", "PrometheusRules of other settings")]
    assert detail == (f"gpudash's PrometheusRules here were applied from other settings: {RULE_OBJECTS} of {whose}; "
                      "these settings write objects of the same names, and applying build/k8s/prometheusrule.yaml "
                      "replaces them: their alerts and recording rules stop being evaluated")
    assert given.startswith(fix)
    _applied_rules(cluster, second)  # applied all the same: the second's now, and the first's verify says so
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(first))
    assert "applied from other settings" in _failures(checks)[("kube", "PrometheusRules of other settings")][0]


def _applied_monitors(cluster, settings):
    """The ServiceMonitors of a build of `settings`, as `kubectl apply -f build/k8s/servicemonitor.yaml` leaves them."""
    files = encode(build(load_project(settings), grafana=False))
    for document in yaml.safe_load_all(files["k8s/servicemonitor.yaml"]):
        key = (document["metadata"]["namespace"], document["metadata"]["name"])
        cluster.service_monitors = [m for m in cluster.service_monitors
                                    if (m["metadata"]["namespace"], m["metadata"]["name"]) != key] + [document]


@pytest.mark.parametrize("second, status, detail", [
    ("project: team-b\nscrape:\n  interval: 15s\n", "fail",
     "a ServiceMonitor here was applied from other settings and scrapes the exporter otherwise: "
     "monitoring/gpudash-dcgm-exporter of project team-a (clusters gpu-cluster) (spec.endpoints[0].interval differ); "
     "these settings write one of the same name, and applying build/k8s/servicemonitor.yaml replaces it: the other "
     "settings' panels and alarms then read series scraped as these say"),
    ("project: team-b\n", "ok", "none applied from other settings scrapes otherwise"),
], ids=["scraped otherwise", "scraped alike"])
def test_a_service_monitor_another_project_applied_is_named_when_this_build_would_scrape_otherwise(
        stack, tmp_path, second, status, detail):
    """Two projects of one cluster write the ServiceMonitor gpudash-dcgm-exporter into one namespace. The second's
    build, at another scrape interval, replaced the first's on `kubectl apply`: the first project's counter
    recordings (evaluated at its own interval) and panels then read series scraped at the second's. verify names it
    before; a ServiceMonitor the two would write alike is no one's loss."""
    cluster, verify = stack
    first = _settings_file(tmp_path, "first", "project: team-a\n" + ONE_PROMETHEUS)
    second = _settings_file(tmp_path, "second", second + ONE_PROMETHEUS)
    _applied_monitors(cluster, first)
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(first))
    assert checks[("kube", "ServiceMonitors of other settings")]["status"] == "ok"
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(second))
    check = checks[("kube", "ServiceMonitors of other settings")]
    assert (check["status"], check["detail"]) == (status, detail)


def test_a_service_monitor_of_the_build_s_name_that_is_not_gpudash_s_is_a_failure(stack, tmp_path):
    """A ServiceMonitor of the name this build writes, where it writes it, made by a person or another tool (no gpudash
    label): the check listed gpudash-labelled objects alone and said ok, and `kubectl apply` of the build replaced it.
    Now it is named, a failure (as a PrometheusRule of the build's names is)."""
    cluster, verify = stack
    settings = _settings_file(tmp_path, "mine", "project: team-a\n" + ONE_PROMETHEUS)
    _applied_monitors(cluster, settings)
    for monitor in cluster.service_monitors:
        if monitor["metadata"]["name"] == "gpudash-dcgm-exporter":
            monitor["metadata"]["labels"] = {"team": "sre"}
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(settings))
    check = checks[("kube", "ServiceMonitors of other settings")]
    assert (check["status"], check["detail"]) == ("fail", "monitoring/gpudash-dcgm-exporter here is not gpudash's (no "
                                                  f"{KUBERNETES_SELECTOR} label: a person's or another tool's) and "
                                                  "named as these settings name theirs: applying "
                                                  "build/k8s/servicemonitor.yaml replaces it, and the exporter is then "
                                                  "scraped as these settings say"), check
    assert check["fix"].startswith("if it is a ServiceMonitor of the exporter made by hand, delete it"), check


def _applied_dashboards(cluster, settings, namespace="monitoring", relabel=None, recorded=False):
    """The dashboard ConfigMaps of a build of `settings`, as `kubectl apply -n NAMESPACE -f
    build/k8s/grafana-dashboards.yaml` leaves them (`relabel`: what a person or older gpudash left instead;
    `recorded`: with client-side apply's last-applied-configuration annotation, the object it applied)."""
    for document in yaml.load_all(_dashboards_file(load_project(settings)), Loader=_LOADER):
        document["metadata"]["namespace"] = namespace
        if recorded:
            document["metadata"]["annotations"][LAST_APPLIED] = json.dumps(document, sort_keys=True)
        if relabel is not None:
            relabel(document["metadata"])
        cluster.configmaps[(namespace, document["metadata"]["name"])] = document


_DASHBOARD_FILES: dict[str, bytes] = {}  # a project by value -> its build's k8s/grafana-dashboards.yaml


def _dashboards_file(project) -> bytes:
    """The build's k8s/grafana-dashboards.yaml of `project`, built once per project by value (tests apply the same
    settings' dashboards in many folders), but where it names the settings' folder."""
    key = by_value(project)
    if key not in _DASHBOARD_FILES:
        text = encode(build(project))["k8s/grafana-dashboards.yaml"]
        if str(project.settings.base_dir).encode() in text:
            return text
        _DASHBOARD_FILES[key] = text
    return _DASHBOARD_FILES[key]


DASHBOARD_MAPS = ("monitoring/gpudash-all-metrics-dashboard, monitoring/gpudash-by-pod-dashboard, "
                  "monitoring/gpudash-health-dashboard, monitoring/gpudash-overview-dashboard")


@pytest.mark.parametrize("applied, status, detail", [
    ({}, "ok", "none is applied (in any namespace)"),
    ({"settings": "mine"}, "ok", "none was applied from other settings"),
    ({"settings": "theirs"}, "fail",
     f"gpudash's dashboard ConfigMaps were applied from other settings: {DASHBOARD_MAPS} of project team-b (clusters "
     "gpu-cluster); these settings name theirs alike, and applying build/k8s/grafana-dashboards.yaml in that "
     "namespace replaces them (their dashboards become these settings'); in another, a Grafana sidecar reading both "
     "loads two dashboards of one uid"),
    ({"settings": "mine", "relabel": lambda m: m.update(labels={"grafana_dashboard": "1"})}, "fail",
     f"{DASHBOARD_MAPS} here are not gpudash's (no app.kubernetes.io/managed-by=gpudash label: a person's or another "
     "tool's) and named as these settings name theirs: applying build/k8s/grafana-dashboards.yaml in that namespace "
     "replaces them, and the dashboard it carries is lost"),
    ({"settings": "mine", "relabel": lambda m: m.update(annotations={"grafana_folder": "GPU monitoring"})}, "warn",
     f"{DASHBOARD_MAPS} were applied by a gpudash that recorded no settings: whether these settings applied them "
     "cannot be told, and applying build/k8s/grafana-dashboards.yaml in that namespace replaces them"),
    ({"person": "team-ml"}, "fail",
     "team-ml/gpudash-overview-dashboard here is not gpudash's (no app.kubernetes.io/managed-by=gpudash label: a "
     "person's or another tool's) and named as these settings name theirs: applying "
     "build/k8s/grafana-dashboards.yaml in that namespace replaces it, and the data it holds is lost"),
    ({"refused": True}, "skip", "not judged (it concerns kubectl apply of build/k8s/grafana-dashboards.yaml alone): "
     "the Kubernetes API refused access to ConfigMaps named gpudash-by-pod-dashboard in every namespace (403)"),
    ({"settings": "mine", "also": "grafana"}, "warn",
     "these settings' dashboard ConfigMaps are applied in 2 namespaces (grafana, monitoring: "
     "grafana/gpudash-all-metrics-dashboard, grafana/gpudash-by-pod-dashboard, grafana/gpudash-health-dashboard, "
     "grafana/gpudash-overview-dashboard, monitoring/gpudash-all-metrics-dashboard and 3 more): a Grafana sidecar "
     "reading more than one of them loads two dashboards of one uid and writes both to one file, the last it read "
     "shown (an older build's panels, where one copy is)"),
], ids=["none", "these settings'", "another project's", "a person's", "an older gpudash's",
        "a person's, not labelled for the sidecar", "listing refused", "these settings' in two namespaces"])
def test_dashboard_configmaps_of_other_settings_or_not_gpudash_s_are_named_before_this_build_replaces_them(
        stack, tmp_path, applied, status, detail):
    """Every settings file names its dashboards' sidecar ConfigMaps alike (gpudash-<id>-dashboard), and they carried no
    mark of the settings that wrote them: `kubectl apply` of one project's k8s/grafana-dashboards.yaml replaced
    another's dashboards, or a person's ConfigMap of that name, and verify read none of them. They now record their
    project and clusters, and verify reads the live ones in every namespace: another's, or one without gpudash's
    label, fails (its failure stops no publish: publishing does not apply them)."""
    cluster, verify = stack
    mine = _settings_file(tmp_path, "mine", "project: team-a\n")
    files = {"mine": mine, "theirs": _settings_file(tmp_path, "theirs", "project: team-b\n")}
    if "settings" in applied:
        _applied_dashboards(cluster, files[applied["settings"]], relabel=applied.get("relabel"))
    if "also" in applied:  # applied in a second namespace too (moved to another Grafana's, the first copy left)
        _applied_dashboards(cluster, files[applied["settings"]], namespace=applied["also"])
    if "person" in applied:  # a team's ConfigMap of its own that happens to hold a build's name: no label, no mark
        cluster.configmap(applied["person"], "gpudash-overview-dashboard", {"notes.md": "GPU quota: 8 per team"})
    if applied.get("refused"):
        cluster.readable_only = {"configmaps": ("amazon-cloudwatch",)}
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus", "--config", str(mine))
    check = checks[("kube", "dashboard ConfigMaps of other settings")]
    assert (check["status"], check["detail"].split(" (User ")[0]) == (status, detail), check


PART_2 = "gpudash-all-metrics-2-dashboard"


def _person_s_part(cluster):
    cluster.configmap("monitoring", PART_2, {"notes.md": "GPU quota: 8 per team"})


def _older_gpudash_s_part(cluster):  # gpudash's labels, no settings recorded (edited by hand)
    del cluster.configmaps[("monitoring", PART_2)]["metadata"]["annotations"]["gpudash.io/project"]


def _part_without_its_annotation(cluster):  # applied by a build before parts said "gpudash.io/dashboard-part"
    del cluster.configmaps[("monitoring", PART_2)]["metadata"]["annotations"]["gpudash.io/dashboard-part"]


@pytest.mark.parametrize("applied, now, status, named", [
    ("every field", "bundled CSV", "warn", ["monitoring/" + PART_2]),
    ("every field", "every field", "ok", []),
    ("every field, in grafana too", "bundled CSV", "warn", None),
    ("another project's, every field", "bundled CSV", "fail", []),
    ("a person's part", "bundled CSV", "ok", []),
    ("an older gpudash's part", "bundled CSV", "ok", []),
    ("every field, applied server-side", "bundled CSV", "warn", ["monitoring/" + PART_2]),
    ("every field, applied server-side by an older build", "bundled CSV", "ok", []),
    ("every field, an older build's, applied client-side", "bundled CSV", "warn", ["monitoring/" + PART_2]),
    ("another file's dashboard health-2", "bundled CSV", "ok", []),
    ("another file's, every field, in grafana-b", "bundled CSV", "warn", None),
], ids=["cut in two, now whole", "still cut", "in two namespaces", "another project's", "a person's ConfigMap",
        "no settings recorded", "applied server-side: its part annotation", "no record of a part",
        "an older build's: kubectl's record", "another file's dashboard named like a part",
        "another file's part in its own namespace"])
def test_a_dashboard_part_no_longer_made_is_named_with_its_kubectl_delete(stack, tmp_path, reference, applied, now,
                                                                         status, named):
    """A dashboard's number of parts follows its size, which data alone changes (the counters CSV's fields, label
    names, clusters): all-metrics of a CSV of every field is cut in two, of the bundled CSV whole. kubectl apply of the
    new build leaves `gpudash-all-metrics-2-dashboard`, and Grafana's sidecar goes on loading "part 2 of 2" with the
    old build's queries; generate named it only when run over the old build folder (not in a CI job's clean checkout),
    and verify looked for the names the build writes alone. It lists gpudash's dashboard ConfigMaps in every namespace
    now (one list, by gpudash's and the sidecar's labels) and names each part these settings applied that no dashboard
    of theirs is cut into now, with the kubectl delete of it. Never one of another project, a person's ConfigMap of
    that name (no labels) or one whose settings are not recorded; nor one neither its gpudash.io/dashboard-part
    annotation (the build's, kept by server-side apply, the command docs/artifacts.md gives) nor kubectl's record
    (client-side apply's last-applied-configuration: "..., part 2 of 2", an older build's evidence) shows as a part: a
    dashboard health-2 another settings file of the project sharing a cluster (these settings' by its annotations)
    defines, which verify told the user to delete as "part 2 of gpudash-health", or a part an older
    build applied server-side. Where these settings' ConfigMaps are in two namespaces, which namespace's part is theirs
    cannot be told: another settings file of the project sharing a cluster may cut the dashboard otherwise in its own
    namespace (verify told the user to delete its live part 2): the parts are listed with the two
    namespaces' warning, none for deletion."""
    from tests.unit.test_dashboard_parts import _every_field

    cluster, verify = stack
    every = _every_field(tmp_path, reference)
    mine = _settings_file(tmp_path, "mine", "project: team-a\n" + (every if now == "every field" else ""))
    if applied.startswith("another project's"):
        _applied_dashboards(cluster, _settings_file(tmp_path, "theirs", "project: team-b\n" + every), recorded=True)
    elif applied.startswith("another file's, every field"):  # (same project and cluster: these settings' by its
        # annotations) its all-metrics cut in two, in its own namespace; these settings' whole, in monitoring
        _applied_dashboards(cluster, _settings_file(tmp_path, "other", "project: team-a\n" + every),
                            namespace="grafana-b", recorded=True)
        _applied_dashboards(cluster, mine, recorded=True)
    elif applied.startswith("another file's"):
        (tmp_path / "dash-b").mkdir()
        (tmp_path / "dash-b" / "health_2.py").write_text(
            "from generator.model import Dashboard, Row\nfrom generator.panels import per_pod\n"
            "dashboard = Dashboard('health-2', 'Team B', [Row('r', [per_pod('DCGM_FI_DEV_GPU_UTIL', 'U')])])\n")
        _applied_dashboards(cluster, _settings_file(tmp_path, "other", "project: team-a\ndefinitions:\n"
                                                    "  dashboards: [dash-b]\n"), recorded=True)
        _applied_dashboards(cluster, _settings_file(tmp_path, "mine-before", "project: team-a\n"), recorded=True)
    else:
        _applied_dashboards(cluster, _settings_file(tmp_path, "mine-before", "project: team-a\n" + every),
                            recorded="server-side" not in applied)
        if "older build" in applied:
            _part_without_its_annotation(cluster)
        if "grafana" in applied:
            _applied_dashboards(cluster, tmp_path / "mine-before.yaml", namespace="grafana", recorded=True)
        if applied == "a person's part":
            _person_s_part(cluster)
        if applied == "an older gpudash's part":
            _older_gpudash_s_part(cluster)
    assert any(key in cluster.configmaps for key in (("monitoring", PART_2), ("monitoring", "gpudash-health-2-dashboard"),
                                                     ("grafana-b", PART_2)))
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus", "--config", str(mine))
    check = checks[("kube", "dashboard ConfigMaps of other settings")]
    assert check["status"] == status, check
    if named is None:  # these settings' ConfigMaps in two namespaces: which namespace's part is theirs cannot be told
        where = "grafana-b" if "grafana-b" in applied else "grafana"
        assert check["detail"].startswith("these settings' dashboard ConfigMaps are applied in 2 namespaces") \
            and f"{where}/{PART_2} (part 2 of gpudash-all-metrics)" in check["detail"], check
        assert "delete them" not in check["fix"] and PART_2 not in check["fix"], check
    elif named:
        assert check["detail"] == (
            "these settings applied dashboard parts they no longer make: " + "; ".join(
                f"{where} (part 2 of gpudash-all-metrics, now whole)" for where in named)
            + ". kubectl apply of build/k8s/grafana-dashboards.yaml leaves each, and Grafana's sidecar goes on "
            "loading it, with the queries of the build that made it (a dashboard is cut into parts by its size: the "
            "counters CSV's fields, label names and clusters change their number)"), check
        assert check["fix"] == "delete them: " + "; ".join(
            f"kubectl delete configmap -n {where.split('/')[0]} {PART_2}" for where in named), check
    else:
        assert PART_2 not in check["detail"] + check["fix"] and "delete them" not in check["fix"], check


def _labelled_answer(items):
    """/api/v1/configmaps as something in front of the API server may answer it: `items` for the list by gpudash's
    labels (the selector dropped: others' ConfigMaps in it), none of the names asked for by field."""
    def answer(query):
        listed = items if "labelSelector" in query else []
        return 200, json.dumps({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": "1"},
                                "items": listed})
    return answer


def test_a_listing_of_gpudash_s_dashboard_configmaps_without_their_labels_is_not_an_answer(stack, tmp_path):
    """The list by gpudash's labels holding a ConfigMap without them (the selector dropped on the way) is no answer:
    the check's failure, never a part named for deletion nor "none"."""
    cluster, verify = stack
    mine = _settings_file(tmp_path, "mine", "project: team-a\n")
    person = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"todo": "x"},
              "metadata": {"name": PART_2, "namespace": "monitoring", "labels": {"grafana_dashboard": "1"}}}
    cluster.fronted["/api/v1/configmaps"] = _labelled_answer([person])
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus", "--config", str(mine))
    check = checks[("kube", "dashboard ConfigMaps of other settings")]
    assert check["status"] == "fail" and check["detail"] == (
        "odd answer from ConfigMaps labelled app.kubernetes.io/managed-by=gpudash,grafana_dashboard in every "
        f"namespace: it lists monitoring/{PART_2}, which does not carry the labels "
        "app.kubernetes.io/managed-by=gpudash,grafana_dashboard: the label selector asked for was not applied "
        "(something in front of the API server may drop the query)"), check


def _stack_objects(kind, count, namespace="monitoring"):
    """`count` objects of `kind` as kube-prometheus-stack's Helm release leaves them in its namespace, each of some
    20 KB (a PrometheusRule's alerts, a dashboard ConfigMap's JSON), none of gpudash's."""
    labels = {"app": "kube-prometheus-stack", "release": "kube-prometheus-stack",
              "app.kubernetes.io/managed-by": "Helm"}
    rate = 'sum by (namespace) (rate(container_cpu_usage_seconds_total{{job="x{}"}}[5m])) > {}'
    bulk = [{"alert": f"KubeAlert{i}", "expr": rate.format(i, i),
             "annotations": {"description": "x" * 150, "runbook_url": f"https://runbooks.example/{i}"}}
            for i in range(80)]
    if kind == "ConfigMap":
        return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": f"kube-prometheus-stack-board-{n}", "namespace": namespace,
            "labels": {**labels, "grafana_dashboard": "1"}}, "data": {f"board-{n}.json": json.dumps(bulk)}}
            for n in range(count)]
    return [{"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": {
        "name": f"kube-prometheus-stack-rules-{n}", "namespace": namespace, "labels": labels},
        "spec": {"groups": [{"name": f"group-{n}", "rules": bulk}]}} for n in range(count)]


def _answered(kube, path):
    """(how many reads of `path`, with any query, the test API server answered; the bytes of their bodies)."""
    sizes = [size for read, size in kube.answered if read.split("?")[0] == path]
    return len(sizes), sum(sizes)


def test_dashboard_configmaps_are_read_by_name_as_their_metadata(stack, tmp_path, monkeypatch):
    """The check listed ConfigMaps in every namespace once per dashboard of the build, each answer carrying the
    ConfigMap's whole dashboard (678,298 bytes beside kube-prometheus-stack's 25 dashboards); a6f117ac read them in one
    listing of those labelled grafana_dashboard, and stopped seeing a person's ConfigMap of a build's name without that
    label. It reads them by name again (one read per dashboard: four for the defaults), their metadata alone: beside
    kube-prometheus-stack's 25 dashboards and these settings' four (1.4 MB of dashboards) the answers are a few KB, and
    what the check finds is unchanged (another project's applied copies are still named)."""
    cluster, verify = stack
    mine = _settings_file(tmp_path, "mine", "project: team-a\n")
    for configmap in _stack_objects("ConfigMap", 25):
        cluster.configmaps[("monitoring", configmap["metadata"]["name"])] = configmap
    _applied_dashboards(cluster, _settings_file(tmp_path, "theirs", "project: team-b\n"))
    with KubeTestServer(cluster) as kube:
        monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig(tmp_path / "kubeconfig-counted")))
        code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus", "--config",
                              str(mine))
    check = checks[("kube", "dashboard ConfigMaps of other settings")]
    assert check["status"] == "fail" and check["detail"].startswith(
        f"gpudash's dashboard ConfigMaps were applied from other settings: {DASHBOARD_MAPS} of project team-b"), check
    reads, size = _answered(kube, "/api/v1/configmaps")
    assert reads == 5 and size < 20_000, (reads, size)  # and one list of gpudash's (its parts no longer made)
    assert sorted(read.split("fieldSelector=")[1].split("&")[0] for read, _ in kube.answered
                  if read.startswith("/api/v1/configmaps?") and "fieldSelector=" in read) == [
        f"metadata.name={name}" for name in DASHBOARD_NAMES]


DASHBOARD_NAMES = ("gpudash-all-metrics-dashboard", "gpudash-by-pod-dashboard", "gpudash-health-dashboard",
                   "gpudash-overview-dashboard")


def _busy_cluster(cluster, namespaces):
    """ConfigMaps as a cluster of `namespaces` namespaces holds them, none of a build's names: the API server's
    kube-root-ca.crt in every namespace, and an application's config beside it."""
    for n in range(namespaces):
        cluster.configmap(f"app-{n:04}", "kube-root-ca.crt", {"ca.crt": "-----BEGIN CERTIFICATE-----"})
        cluster.configmap(f"app-{n:04}", "settings", {"LOG_LEVEL": "info"})


@pytest.mark.parametrize("expired", [False, True], ids=["read in pages", "a page expired"])
def test_a_person_s_configmap_of_a_dashboard_configmap_s_name_is_found_on_any_page_of_a_big_cluster(
        stack, tmp_path, monkeypatch, expired):
    """a6f117ac listed only the ConfigMaps labelled grafana_dashboard: a team's ConfigMap that happens to be named as a
    build's dashboard ConfigMap, without the sidecar's label or gpudash's marks, was not found (verify said "none is
    applied"), and `kubectl apply -n team-ml` of k8s/grafana-dashboards.yaml replaced its data with a dashboard. Each
    name is looked for again in every namespace, labelled or not, in pages of 500 as kubectl reads: in a cluster of
    1,200 ConfigMaps the one in the last namespace is on the third page of each read (a page may hold none of the name
    and still say more remain), and it is named, with what to do, beside these settings' own copies.

    A continued page expires (410 Gone, a Status of reason Expired) once etcd compacts past the first page's
    resourceVersion (five minutes by default: a slow reader, a busy cluster). The check then failed ("cannot tell")
    where client-go's pager, and so kubectl and every controller, reads the list again whole, once (FullListIfExpired:
    no limit, no continue). It does so now: the ConfigMap on the pages not read is named all the same, the pages read
    before are not mixed with the list read again (one snapshot), and the Status's inconsistent continue token is not
    followed (a second 410: the check's failure, below)."""
    cluster, verify = stack
    mine = _settings_file(tmp_path, "mine", "project: team-a\n")
    _busy_cluster(cluster, 600)
    _applied_dashboards(cluster, mine)
    cluster.continue_refused = 410 if expired else None
    cluster.configmap("zz-team-ml", "gpudash-overview-dashboard", {"notes.md": "GPU quota: 8 per team"})
    with KubeTestServer(cluster) as kube:
        monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig(tmp_path / "kubeconfig-counted")))
        code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus", "--config",
                              str(mine))
    check = checks[("kube", "dashboard ConfigMaps of other settings")]
    assert (check["status"], check["detail"]) == (
        "fail", "zz-team-ml/gpudash-overview-dashboard here is not gpudash's (no app.kubernetes.io/managed-by=gpudash "
        "label: a person's or another tool's) and named as these settings name theirs: applying "
        "build/k8s/grafana-dashboards.yaml in that namespace replaces it, and the data it holds is lost"), check
    assert check["fix"] == ("rename that ConfigMap, or give these settings' dashboards other uids "
                            "(grafana.uid_prefix), so that their ConfigMaps are named otherwise; generate and apply "
                            "build/k8s/grafana-dashboards.yaml"), check
    reads, size = _answered(kube, "/api/v1/configmaps")
    # 3 pages of 500 for each of the four names, and for the list of gpudash's dashboard ConfigMaps
    assert reads == 5 * 3 and size < 20_000, (reads, size)
    if expired:  # each name: its first page, its second (410), then the list whole
        asked = [read.split("?")[1] for read in kube.reads if read.startswith("/api/v1/configmaps?")
                 and "metadata.name=gpudash-by-pod-dashboard" in read]
        assert len(asked) == 3 and "limit=500" in asked[0] and "continue=" in asked[1], asked
        assert "limit=" not in asked[2] and "continue=" not in asked[2], asked


def _pages_expiring(again):
    """An answer for /api/v1/configmaps whose continued pages expire (410 Gone): the first page gives a continue token;
    the list asked again without `limit` is answered `again` ("expired": 410 Expired itself; "paged": a page with a
    token, as something in front of the API server that pages on its own would); a 410 is the API server's Status of
    reason Expired, or "a proxy's" page."""
    def page(version, token):
        return 200, json.dumps({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
                                "metadata": {"resourceVersion": version, "continue": token}, "items": None})
    expired = (410, json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {"continue": "eyJydiI6LTF9"},
                                "status": "Failure", "message": "The provided continue parameter is too old to "
                                "display a consistent list result.", "reason": "Expired", "code": 410}))

    def answer(query):
        if "continue" in query:
            return (410, "<html><body><h1>410 Gone</h1></body></html>") if again == "a proxy's" else expired
        if "limit" in query:
            return page("7", "eyJydiI6N30")
        return expired if again == "expired" else page("9", "eyJydiI6OX0")
    return answer


@pytest.mark.parametrize("refusal, said", [
    (400, "400 for ConfigMaps named gpudash-by-pod-dashboard in every namespace: Bad Request (asked for the list's page "
          "2"),
    ("expired", "410 for ConfigMaps named gpudash-by-pod-dashboard in every namespace: Gone (asked for the whole list "
                "again, its page 2 having expired (410 Gone)"),
    ("paged", "410 for ConfigMaps named gpudash-by-pod-dashboard in every namespace: Gone (asked for the whole list "
              "again, its page 2 having expired (410 Gone), then for its page 2"),
    ("a proxy's", "410 for ConfigMaps named gpudash-by-pod-dashboard in every namespace: Gone (asked for the list's "
                  "page 2"),
])
def test_a_configmap_listing_cut_short_at_a_page_is_a_failure_not_the_whole_list(stack, tmp_path, refusal, said):
    """A list read in pages ends where a page is refused: 400 where the API server cannot read its continue token
    (altered on the way); a second 410 where the page expired and the list read again whole (see above) expires too,
    on its first answer or a later page (something in front of the API server paging on its own); a 410 that is not the
    API server's Status of reason Expired (a proxy's page), which says nothing of a compacted token, at once, as
    client-go's pager has it. The pages read before it are not the list: the check fails saying it cannot tell, never
    "none is applied" (the person's ConfigMap of a build's name is on the page not read), nor reads a third time."""
    cluster, verify = stack
    mine = _settings_file(tmp_path, "mine", "project: team-a\n")
    _busy_cluster(cluster, 300)
    cluster.configmap("zz-team-ml", "gpudash-by-pod-dashboard", {"notes.md": "GPU quota: 8 per team"})
    if refusal == 400:
        cluster.continue_refused = 400
    else:
        cluster.fronted["/api/v1/configmaps"] = _pages_expiring(refusal)
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus", "--config", str(mine))
    check = checks[("kube", "dashboard ConfigMaps of other settings")]
    assert check["status"] == "fail" and check["detail"] == (
        "cannot tell whether a ConfigMap named as these settings' dashboards' is another's: the Kubernetes API "
        f"answered {said}: it was not read whole)"), check
    assert check["fix"].startswith("run verify again"), check


def test_a_configmap_listing_that_gives_back_its_continue_token_is_not_an_answer(stack, tmp_path):
    """Something in front of the API server that answers every page alike (a cache keyed without the query) gives the
    continue token it was sent back: read on, the list never ends; read as it is, it is a first page taken for the
    whole. It is an odd answer, the check's failure."""
    cluster, verify = stack
    mine = _settings_file(tmp_path, "mine", "project: team-a\n")
    cluster.fronted["/api/v1/configmaps"] = (200, json.dumps({
        "apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": "1", "continue": "eyJ2IjoxfQ"},
        "items": []}))
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus", "--config", str(mine))
    check = checks[("kube", "dashboard ConfigMaps of other settings")]
    assert check["status"] == "fail" and check["detail"] == (
        "odd answer from ConfigMaps named gpudash-by-pod-dashboard in every namespace: its page 2 gives the "
        "continue token of a page before ('eyJ2IjoxfQ'): read on, the list would never end"), check


def test_a_configmap_listing_whose_pages_are_each_a_new_list_is_not_an_answer(stack, tmp_path):
    """Something in front of the API server that drops the `continue` parameter answers every page as the list's
    first, at the cluster's resourceVersion then, with a new continue token whenever the cluster wrote meanwhile:
    read on, the list never ends (no token comes twice). A list's pages are one snapshot, at one resourceVersion:
    pages at another are an odd answer, the check's failure, never read on."""
    cluster, verify = stack
    mine = _settings_file(tmp_path, "mine", "project: team-a\n")
    served = iter(range(1, 1_000_000))

    def first_page_again(query):
        version = next(served)
        token = base64.b64encode(json.dumps({"rv": version, "start": "a"}).encode()).decode()
        return 200, json.dumps({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
                                "metadata": {"resourceVersion": str(version), "continue": token}, "items": None})
    cluster.fronted["/api/v1/configmaps"] = first_page_again
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus", "--config", str(mine))
    check = checks[("kube", "dashboard ConfigMaps of other settings")]
    assert check["status"] == "fail" and check["detail"] == (
        "odd answer from ConfigMaps named gpudash-by-pod-dashboard in every namespace: its page 2 is of the list at "
        "resourceVersion '2', its page 1 of the list at '1': pages of one list are one snapshot (something in front "
        "of the API server may drop the continue token)"), check
    assert next(served) == 3  # two pages read, not more


@pytest.mark.parametrize("answer, said", [
    ({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": "1"}, "items": None},
     "items is null, expected a list"),
    ({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": {"resourceVersion": "1"}},
     "items is missing, expected a list"),
], ids=["a ConfigMapList's items null", "a metadata list without items"])
def test_a_configmap_listing_without_its_items_is_odd_not_none(stack, tmp_path, answer, said):
    """The API server writes an empty PartialObjectMetadataList's items as null (the stand-in answers so: the case
    "none" of the table above, which read "items is null" before the client took it for none). Null there alone:
    a whole ConfigMapList (a server or proxy that drops the metadata form) has `[]` for none since Kubernetes 1.5.3,
    and a list without `items` is no list. Either is an odd answer, never "none is applied"."""
    cluster, verify = stack
    mine = _settings_file(tmp_path, "mine", "project: team-a\n")
    cluster.fronted["/api/v1/configmaps"] = (200, json.dumps(answer))
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus", "--config", str(mine))
    check = checks[("kube", "dashboard ConfigMaps of other settings")]
    assert check["status"] == "fail" and check["detail"] == (
        f"odd answer from ConfigMaps named gpudash-by-pod-dashboard in every namespace: {said}"), check


def test_prometheus_rules_are_read_without_their_specs(stack, tmp_path, monkeypatch):
    """A kube-prometheus-stack namespace holds some 30 PrometheusRules of large specs: the check read them whole on
    every verify (with gpudash's own seven), to find the build's names among them. It reads their metadata alone now: what it
    finds is unchanged (a person's object of a build's name is still named), the answer a few KB."""
    cluster, verify = stack
    settings = _settings_file(tmp_path, "mine", "project: team-a\n" + ONE_PROMETHEUS)
    _applied_rules(cluster, settings)
    cluster.prometheus_rules += _stack_objects("PrometheusRule", 30)
    next(r for r in cluster.prometheus_rules if r["metadata"]["name"] == "gpudash-counters-2")["metadata"]["labels"] = \
        {"team": "sre"}
    with KubeTestServer(cluster) as kube:
        monkeypatch.setenv("KUBECONFIG", str(kube.kubeconfig(tmp_path / "kubeconfig-counted")))
        code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(settings))
    check = checks[("kube", "PrometheusRules of other settings")]
    assert (check["status"], check["detail"].split(" here is not gpudash's")[0]) == (
        "fail", "monitoring/gpudash-counters-2"), check
    reads, size = _answered(kube, "/apis/monitoring.coreos.com/v1/namespaces/monitoring/prometheusrules")
    assert reads == 1 and size < 30_000, (reads, size)


def test_a_configmap_listing_that_names_configmaps_it_was_not_asked_for_is_not_an_answer(stack, tmp_path):
    """The dashboards' ConfigMaps are looked for in every namespace by name (fieldSelector metadata.name). An answer
    listing a ConfigMap of another name (something in front of the API server that drops the query) is no answer to
    what was asked: the check's failure says so, naming what it listed, and never reads it as a person's ConfigMap
    that applying the build replaces."""
    cluster, verify = stack
    mine = _settings_file(tmp_path, "mine", "project: team-a\n")
    notes = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"todo": "rotate keys"},
             "metadata": {"name": "team-ml-notes", "namespace": "default"}}
    cluster.fronted["/api/v1/configmaps"] = (200, json.dumps({"apiVersion": "v1", "kind": "ConfigMapList",
                                                              "metadata": {"resourceVersion": "1"}, "items": [notes]}))
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus", "--config", str(mine))
    check = checks[("kube", "dashboard ConfigMaps of other settings")]
    assert check["status"] == "fail" and "team-ml-notes" in check["detail"], check
    assert check["detail"].startswith("odd answer from ConfigMaps named gpudash-by-pod-dashboard in every "
                                      "namespace: it lists default/team-ml-notes, which is not named "
                                      "gpudash-by-pod-dashboard"), check
    assert "replaces" not in check["detail"], check


@pytest.mark.parametrize("resource, kind, check", [
    ("prometheusrules", "PrometheusRule", "PrometheusRules of other settings"),
    ("servicemonitors", "ServiceMonitor", "ServiceMonitors of other settings"),
])
def test_an_operator_listing_holding_objects_of_another_namespace_is_not_an_answer(stack, tmp_path, resource, kind,
                                                                                  check):
    """PrometheusRules and ServiceMonitors are listed in the namespace the build writes them to. An answer holding an
    object of another namespace (a cluster-wide listing in its place) was read as this namespace's: a person's
    object of the build's name in team-b was said to be here, 'applying ... replaces it', though no apply of the build
    touches it. It is no answer to what was asked: the check's failure says so."""
    cluster, verify = stack
    mine = _settings_file(tmp_path, "mine", "project: team-a\n" + ONE_PROMETHEUS)
    name = "gpudash-gpu-alerts" if kind == "PrometheusRule" else "gpudash-dcgm-exporter"
    theirs = {"apiVersion": "monitoring.coreos.com/v1", "kind": kind, "spec": {},
              "metadata": {"name": name, "namespace": "team-b"}}
    cluster.fronted[f"/apis/monitoring.coreos.com/v1/namespaces/monitoring/{resource}"] = (
        200, json.dumps({"apiVersion": "monitoring.coreos.com/v1", "kind": f"{kind}List", "metadata": {},
                         "items": [theirs]}))
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(mine))
    found = checks[("kube", check)]
    assert found["status"] == "fail" and found["detail"].startswith("odd answer from"), found
    assert "team-b" in found["detail"] and "replaces" not in found["detail"], found


def test_the_agent_config_another_project_of_the_cluster_applied_is_named_before_this_build_replaces_it(stack, tmp_path):
    """Two projects publish one cluster to CloudWatch, the second with agent.metric_selection: all. Both write the
    agent's two ConfigMaps (the names its Deployment mounts), and `kubectl apply` of either replaced the other's:
    verify said the first project's config "differs" and told the second to apply over it. It now names whose it is
    (the annotations the ConfigMaps carry) and says that one config serves the cluster."""
    cluster, verify = stack
    first = _settings_file(tmp_path, "first", "project: team-a\n")
    second = _settings_file(tmp_path, "second", "project: team-b\nagent:\n  metric_selection: all\n")
    for document in yaml.safe_load_all(encode(build(load_project(first), grafana=False))[
            "k8s/cwagent-prometheus-config-gpu-cluster.yaml"]):
        cluster.configmaps[(document["metadata"]["namespace"], document["metadata"]["name"])] = document
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(first))
    assert checks[("kube", "ConfigMap prometheus-cwagentconfig key gpudash-otel.yaml")]["status"] == "ok"
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(second))
    detail, fix = _failures(checks)[("kube", "ConfigMap prometheus-cwagentconfig key gpudash-otel.yaml")]
    assert detail.startswith("amazon-cloudwatch/prometheus-cwagentconfig was applied from project team-a (clusters "
                             "gpu-cluster) and differs from what these settings generate: metric selector missing: ")
    assert detail.endswith("; one agent config serves a cluster: applying "
                           "build/k8s/cwagent-prometheus-config-gpu-cluster.yaml replaces that one, and its next apply "
                           "replaces this one, each dropping what only the other publishes")
    assert fix == ("publish this cluster's CloudWatch metrics from one settings file (one project's definitions holding "
                   "both's dashboards and alarms)")


def test_an_alert_two_settings_load_with_different_conditions_is_named(tmp_path_factory, cli):
    """Two projects of one cluster (a Prometheus of its own) each deploy their rules, the second with a lower GPU
    temperature threshold (or a rules file of an earlier build left beside the new one): Prometheus evaluates both,
    their alerts carry the same names and labels, and Alertmanager takes them for one, so the first team was paged at
    the second's 70 °C. verify said nothing. Now it fails naming the alert and the files; rules loaded twice alike
    (one build's file in two places) are one alert, and ok."""
    second = "project: team-b\nthresholds:\n  gpu_temp_celsius: {warning: 70, critical: 87}\n"
    found = _rules_check(tmp_path_factory, cli, {"alike": ("{}\n", "{}\n"), "otherwise": ("{}\n", second)}, "{}\n")
    assert found["alike"]["status"] == "ok", found["alike"]
    assert found["otherwise"]["status"] == "fail"
    assert re.fullmatch(r"Prometheus evaluates GpudashGpuTempHigh \(warning\) from 2 rule files with 2 different "
                        r"conditions \(.*/rules-0\.yaml, .*/rules-1\.yaml\): Alertmanager takes alerts of one name "
                        r"and labels for one, so it fires at whichever condition holds", found["otherwise"]["detail"]), \
        found["otherwise"]["detail"]


def test_an_alert_loaded_by_a_condition_other_than_these_settings_is_named(tmp_path_factory, cli):
    """The settings' GPU temperature warning lowered to 70 °C and the rules not applied since: Prometheus evaluates
    GpudashGpuTempHigh at the old 80 °C, once. `alert rules loaded once` looked only for two conditions of one alert
    and said ok; it now reads the one loaded against these settings' (promql_alike) and names it."""
    lowered = "thresholds:\n  gpu_temp_celsius: {warning: 70, critical: 87}\n"
    found = _rules_check(tmp_path_factory, cli, {"old": ("{}\n",), "applied": (lowered,)}, lowered)
    assert (found["applied"]["status"], found["applied"]["detail"].split(" loaded")[1]) == (
        "ok", ", each with one condition: these settings'"), found["applied"]
    assert found["old"]["status"] == "fail" and re.fullmatch(
        r"Prometheus evaluates GpudashGpuTempHigh \(warning\) by a condition other than these settings' "
        r"\(.*/rules-0\.yaml\): it fires as that condition says \(an earlier build's rules, or another settings "
        r"file's, or edited\), not as these settings do", found["old"]["detail"]), found["old"]["detail"]
    assert found["old"]["fix"].startswith("apply build/k8s/prometheusrule.yaml"), found["old"]


def _rules_check(tmp_path_factory, cli, cases: dict, config: str):
    """verify's `alert rules loaded once` against a Prometheus per case, each loading the rules files of the settings
    texts given (prometheus/rules.yaml of each build), started side by side; `config` is the settings verify reads."""
    servers = {}
    for case, texts in cases.items():
        workdir = tmp_path_factory.mktemp(f"prom-rules-{case}")
        for number, text in enumerate(texts):
            settings = workdir / f"settings-{number}.yaml"
            settings.write_text(text)
            (workdir / f"rules-{number}.yaml").write_bytes(
                encode(build(load_project(settings), grafana=False))["prometheus/rules.yaml"])
        servers[case] = Prometheus(workdir, {"global": {"evaluation_interval": "1h"}, "scrape_configs": [],
                                             "rule_files": [str(workdir / f"rules-{n}.yaml") for n in range(len(texts))]})
    try:
        with ThreadPoolExecutor(len(servers)) as pool:
            list(pool.map(Prometheus.start, servers.values()))
        found = {}
        settings = tmp_path_factory.mktemp("verify") / "gpudash.yaml"
        settings.write_text(config)
        for case, server in servers.items():
            code, stdout, stderr = cli("verify", "--output", "json", "--prometheus-url", server.url, "--skip", "kube",
                                       "--skip", "exporter", "--skip", "cloudwatch", "--config", str(settings))
            found[case] = next(c for c in json.loads(stdout)["checks"] if c["name"] == "alert rules loaded once")
        return found
    finally:
        for server in servers.values():
            server.stop()


@pytest.mark.parametrize("status, body, said", [
    (503, '{"status": "error", "errorType": "unavailable", "error": "rule manager overloaded"}',
     ("fail", "cannot tell: Prometheus at {url} refused the rule listing: rule manager overloaded")),
    (403, "forbidden by the auth proxy", ("fail", "cannot tell: Prometheus at {url} answered HTTP 403")),
    (404, "404 page not found", ("ok", "not judged: the server lists no rules (Prometheus at {url} has no rule "
                                       "listing (HTTP 404 for /api/v1/rules))"))])
def test_a_rule_listing_that_failed_is_not_read_as_no_rules(cli, tmp_path, status, body, said):
    """A Prometheus whose /api/v1/rules failed (a 503 while its rule manager is busy, an auth proxy's 403) holds rules
    verify did not read: `alert rules loaded once` said ok ("the server lists no rules") for any failure, so two
    settings' alerts of one name and labels passed unseen. Now only a server with no rule listing (HTTP 404) is not
    judged; a listing that failed is this check's failure, saying what was answered."""
    from tests.support.canned_server import CannedServer

    settings = tmp_path / "gpudash.yaml"
    settings.write_text("{}\n")
    with CannedServer('{"status": "success", "data": {"resultType": "vector", "result": []}}') as prometheus:
        prometheus.routes["/api/v1/rules"] = (status, body)
        code, stdout, stderr = cli("verify", "--output", "json", "--prometheus-url", prometheus.url, "--skip", "kube",
                                   "--skip", "exporter", "--skip", "cloudwatch", "--config", str(settings))
    found = next(c for c in json.loads(stdout)["checks"] if c["name"] == "alert rules loaded once")
    assert (found["status"], found["detail"]) == (said[0], said[1].format(url=prometheus.url)), (found, stderr)


def _watching(*clusters):
    return "clusters:\n" + "".join(f"  - {{name: {c}, region: us-east-1, prometheus_label: {c}}}\n" for c in clusters)


def test_a_cluster_two_settings_watch_on_a_prometheus_of_several_is_named(tmp_path_factory, cli):
    """On a Prometheus of several clusters each settings file's rules read its own clusters, so their conditions differ
    rightly; two files that both list cluster b judge b twice, with alerts Alertmanager takes for one. verify names
    the cluster and the two files; files of other clusters are ok."""
    found = _rules_check(tmp_path_factory, cli, {
        "overlapping": (_watching("a", "b"), "project: team-b\n" + _watching("b", "c")),
        "apart": (_watching("a", "b"), "project: team-b\n" + _watching("c"))}, _watching("a", "b"))
    assert (found["apart"]["status"], found["apart"]["detail"]) == (
        "ok", "each of the 3 clusters watched is watched by one settings' rules")
    assert found["overlapping"]["status"] == "fail"
    assert re.fullmatch(r"clusters b are watched by the rules of two settings \(.*/rules-0\.yaml, .*/rules-1\.yaml\): "
                        r"each judges them, with alerts of the same names and labels, which Alertmanager takes for one "
                        r"alert \(it fires at whichever condition holds\)", found["overlapping"]["detail"]), \
        found["overlapping"]["detail"]


def test_prometheus_rules_of_a_gpudash_that_recorded_no_settings_are_a_warning(stack, tmp_path):
    cluster, verify = stack
    settings = _settings_file(tmp_path, "mine", "project: team-a\n" + ONE_PROMETHEUS)
    _applied_rules(cluster, settings)
    for rule in cluster.prometheus_rules:
        del rule["metadata"]["annotations"]
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(settings))
    check = checks[("kube", "PrometheusRules of other settings")]
    assert (check["status"], check["detail"]) == ("warn", f"{RULE_OBJECTS} were applied by a gpudash that recorded no "
                                                  "settings: whether these settings applied them cannot be told, and "
                                                  "applying build/k8s/prometheusrule.yaml replaces them")


def test_a_prometheus_rule_whose_clusters_annotation_is_empty_is_said_so(stack, tmp_path):
    """A gpudash PrometheusRule of these settings' project whose gpudash.io/clusters annotation a person emptied:
    nothing ties it to these settings' clusters, so the check fails, but it named "another settings file of project
    team-a (clusters )", an empty list. It says the annotation names none."""
    cluster, verify = stack
    settings = _settings_file(tmp_path, "mine", "project: team-a\n" + ONE_PROMETHEUS)
    _applied_rules(cluster, settings)
    cluster.prometheus_rules[0]["metadata"]["annotations"]["gpudash.io/clusters"] = ""
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(settings))
    detail, _ = _failures(checks)[("kube", "PrometheusRules of other settings")]
    assert "of another settings file of project team-a (its gpudash.io/clusters annotation names none)" in detail, \
        detail


def test_prometheus_rules_of_the_build_s_names_that_are_not_gpudash_s_are_a_failure(stack, tmp_path):
    """PrometheusRules of the names this build writes, where it writes them, made by a person or another tool (no
    gpudash label): the check listed gpudash-labelled objects alone and said ok ("none in monitoring was applied from
    other settings"), and `kubectl apply` of the build replaced them. Now they are named, a failure."""
    cluster, verify = stack
    settings = _settings_file(tmp_path, "mine", "project: team-a\n" + ONE_PROMETHEUS)
    _applied_rules(cluster, settings)
    for rule in cluster.prometheus_rules:
        rule["metadata"]["labels"] = {"team": "sre"}
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(settings))
    check = checks[("kube", "PrometheusRules of other settings")]
    assert (check["status"], check["detail"]) == ("fail", f"{RULE_OBJECTS} here are not gpudash's (no "
                                                  f"{KUBERNETES_SELECTOR} label: a person's or another tool's) and "
                                                  "named as these settings name theirs: applying "
                                                  "build/k8s/prometheusrule.yaml replaces them, and their rules stop "
                                                  "being evaluated"), check


def test_prometheus_rules_of_gpudash_s_name_form_the_build_does_not_write_are_not_said_to_be_replaced(stack, tmp_path):
    """A person's PrometheusRule named gpudash-counters-4, and another project's gpudash-gpu-alerts-9 (its alerts past
    nine groups' worth), where this build writes three of each: the check judged names by gpudash's name form, so it
    failed ("applying build/k8s/prometheusrule.yaml replaces them"), which stops a publish's preflight, though no apply
    of this build touches either. Only the names the build writes are judged now."""
    cluster, verify = stack
    settings = _settings_file(tmp_path, "mine", "project: team-a\n" + ONE_PROMETHEUS)
    _applied_rules(cluster, settings)
    person = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "spec": {"groups": []},
              "metadata": {"name": "gpudash-counters-4", "namespace": "monitoring", "labels": {"team": "sre"}}}
    other = copy.deepcopy(person)
    other["metadata"].update(name="gpudash-gpu-alerts-9", labels={"app.kubernetes.io/managed-by": "gpudash"},
                             annotations={"gpudash.io/project": "team-b", "gpudash.io/clusters": "gpu-cluster"})
    cluster.prometheus_rules += [person, other]
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--config", str(settings))
    check = checks[("kube", "PrometheusRules of other settings")]
    assert (check["status"], check["detail"]) == ("ok", "none in monitoring was applied from other settings"), check


def test_classic_pipeline_with_a_pipeline_left_in_the_configmap_publishes_twice(stack, tmp_path, monkeypatch):
    """agent.pipeline: classic, and the ConfigMap still holds gpudash-otel.yaml from an earlier apply."""
    cluster, verify = stack
    settings = tmp_path / "gpudash.yaml"
    settings.write_text("agent:\n  pipeline: classic\n")
    monkeypatch.setenv("GPUDASH_CONFIG", str(settings))
    files = encode(build(load_project(settings), grafana=False))
    for document in yaml.safe_load_all(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"]):
        cluster.applied(document)
    code, checks = verify()
    assert checks[("kube", "ConfigMap prometheus-cwagentconfig key gpudash-otel.yaml")]["status"] == "ok"
    assert checks[("kube", "ConfigMap prometheus-cwagentconfig")]["status"] == "ok"
    configmap = cluster.configmaps[("amazon-cloudwatch", "prometheus-cwagentconfig")]
    configmap["data"]["gpudash-otel.yaml"] = "receivers: {}\n"
    code, checks = verify()
    assert code == 1
    assert _failures(checks)[("kube", "ConfigMap prometheus-cwagentconfig key gpudash-otel.yaml")][0] == (
        "amazon-cloudwatch/prometheus-cwagentconfig still holds gpudash-otel.yaml: with the JSON path "
        "(agent.pipeline: classic) the agent would publish every metric twice")


@pytest.mark.parametrize("image, status, detail", [
    ("public.ecr.aws/cloudwatch-agent/cloudwatch-agent:1.300066.1b1374", "ok",
     "1.300066.1b1374 reads gpudash-otel.yaml (needs 1.300066.0 or later)"),
    ("public.ecr.aws/cloudwatch-agent/cloudwatch-agent:1.300047.1", "fail",
     "1.300047.1 is older than 1.300066.0: it does not read gpudash-otel.yaml, so the agent publishes nothing"),
    ("public.ecr.aws/cloudwatch-agent/cloudwatch-agent:1.300065.0b1300", "fail",
     "1.300065.0b1300 is older than 1.300066.0: it reads gpudash-otel.yaml but, its JSON holding no pipeline, "
     "finds no amazon-cloudwatch-agent.yaml and exits at start (failed to load OTEL configs), so the agent "
     "publishes nothing"),
    ("public.ecr.aws/cloudwatch-agent/cloudwatch-agent@sha256:" + "0" * 64, "warn",
     "cannot tell the release from the image public.ecr.aws/cloudwatch-agent/cloudwatch-agent@sha256:" + "0" * 64
     + ": the OTel pipeline (agent.pipeline: otel) needs 1.300066.0 or later"),
])
def test_the_agent_must_be_recent_enough_for_the_otel_pipeline(stack, image, status, detail):
    """With a JSON holding no pipeline the agent publishes nothing at all unless it is 1.300066.0 or later: an
    agent older than 1.300048.0 ignores gpudash-otel.yaml; one older than 1.300066.0 reads it, but its translator
    writes no amazon-cloudwatch-agent.yaml for a JSON without a pipeline and loading that missing file stops it."""
    cluster, verify = stack
    deployment = cluster.deployments[("amazon-cloudwatch", "cwagent-prometheus")]
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = image
    code, checks = verify()
    check = checks[("kube", "CloudWatch agent version")]
    assert (check["status"], check["detail"]) == (status, detail)
    assert code == (1 if status == "fail" else 0)


def test_kube_state_metrics_is_the_data_missing_alarms_expected_signal(stack):
    """The data-missing alarm reads kube-state-metrics; verify says whether the cluster runs it."""
    cluster, verify = stack
    code, checks = verify()
    assert checks[("prometheus", "exporter DaemonSet in kube-state-metrics")]["detail"] == (
        "2 of 2 exporter pods available")
    assert checks[("kube", "kube-state-metrics")]["detail"] == (
        "monitoring/kube-prometheus-stack-kube-state-metrics-6d9f ready, port 8080 (the data-missing alarm's "
        "expected signal)")
    cluster.other_pods = [cluster.kube_state_metrics_pod(ready=False)]
    code, checks = verify()
    assert code == 1 and _failures(checks)[("kube", "kube-state-metrics")][0] == (
        "kube-state-metrics not ready (1 pod(s) in any namespace)")
    cluster.other_pods = []
    code, checks = verify()
    detail, fix = _failures(checks)[("kube", "kube-state-metrics")]
    assert code == 1 and detail == "no pod labelled app.kubernetes.io/name=kube-state-metrics in any namespace"
    assert "alarms.expected_gpus: none" in fix and "kube_state_metrics.namespace" in fix


def test_cloudwatch_namespace_empty(stack, moto):
    _, verify = stack
    moto.reset()
    code, checks = verify()
    assert code == 1
    assert _failures(checks)[("cloudwatch", "gpu-cluster metrics")] == (
        "no DCGM metrics in ContainerInsights/Prometheus for gpu-cluster in the last 3 h",
        "apply build/k8s/cwagent-prometheus-config-gpu-cluster.yaml and check the cwagent-prometheus logs")


def test_prometheus_unreachable(stack):
    _, verify = stack
    code, checks = verify(prometheus_url="http://127.0.0.1:9")
    assert code == 1
    assert _failures(checks)[("prometheus", "reachable")] == (
        "cannot query Prometheus at http://127.0.0.1:9 (ConnectionError)",
        "check --prometheus-url (PROMETHEUS_URL) and that Prometheus is up, or --skip prometheus")


def test_a_missing_metric_in_the_exporters_csv(stack):
    cluster, verify = stack
    cluster.set_env("DCGM_EXPORTER_COLLECTORS", "/etc/dcgm-exporter/custom/dcgm-metrics.csv")
    spec = cluster.daemonset["spec"]["template"]["spec"]
    spec["volumes"].append({"name": "metrics-config", "configMap": {"name": "custom-dcgm-metrics"}})
    spec["containers"][0]["volumeMounts"].append({"name": "metrics-config", "mountPath": "/etc/dcgm-exporter/custom"})
    cluster.configmap("gpu-operator", "custom-dcgm-metrics", {"dcgm-metrics.csv": (
        "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\nDCGM_FI_DEV_GPU_TEMP, gauge, t (in C).\n")})
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch", "--skip", "exporter")
    detail, fix = _failures(checks)[("kube", "counters CSV")]
    assert detail.startswith("ConfigMap gpu-operator/custom-dcgm-metrics key dcgm-metrics.csv lacks DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS, ")
    assert "DCGM_FI_DEV_GPU_UTIL" not in detail
    assert fix == "add those fields to the exporter's counters CSV, or stop using them in definitions"


def test_a_byte_order_mark_in_the_exporters_csv(stack):
    """The exporter reads its counters with Go's encoding/csv, which keeps a UTF-8 byte order mark: the first line is
    then no field it knows and it exits, whatever fields the file lists."""
    cluster, verify = stack
    cluster.set_env("DCGM_EXPORTER_COLLECTORS", "/etc/dcgm-exporter/custom/dcgm-metrics.csv")
    spec = cluster.daemonset["spec"]["template"]["spec"]
    spec["volumes"].append({"name": "metrics-config", "configMap": {"name": "custom-dcgm-metrics"}})
    spec["containers"][0]["volumeMounts"].append({"name": "metrics-config", "mountPath": "/etc/dcgm-exporter/custom"})
    bundled = default_counters().read_text()
    cluster.configmap("gpu-operator", "custom-dcgm-metrics", {"dcgm-metrics.csv": "\ufeff" + bundled})
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch", "--skip", "exporter")
    detail, fix = _failures(checks)[("kube", "counters CSV")]
    assert code == 1 and detail.startswith("ConfigMap gpu-operator/custom-dcgm-metrics key dcgm-metrics.csv is invalid: "
                                           "the file starts with a UTF-8 byte order mark (BOM)")
    assert "without a BOM" in fix


def test_table_output_and_skip(stack):
    _, verify = stack
    code, checks = verify("--skip", "kube", "--skip", "exporter", "--skip", "cloudwatch")
    assert code == 0 and {g for g, _ in checks} == {"prometheus"}


def test_a_system_that_never_answers_is_a_failed_check_not_a_hang(stack):
    import socket

    _, verify = stack
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        code, checks = verify("--skip", "kube", "--skip", "exporter", "--skip", "cloudwatch", "--timeout", "1",
                              prometheus_url=url)
    assert code == 1
    assert _failures(checks)[("prometheus", "reachable")] == (
        "no answer within 1 s", "check that the prometheus endpoint is reachable, or --skip prometheus")


def test_a_silent_server_is_one_check_whichever_timeout_notices_it_first():
    """The socket's timeout is the time left in the run, so on a loaded machine the client may notice a silent
    server before the run's deadline does: the check is the same either way (the test above lets the
    deadline win; here the client's read gives up first, after one check of the group was made)."""
    import socket

    from generator import verify
    from generator.checks.result import OK, Check
    from generator.clients.http import get
    from generator.clients.options import Options

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"

        def group(project, options):
            yield Check("prometheus", "first", OK, "made before the silence")
            get(url, options, "Prometheus", "check it")  # the run's deadline is the socket's timeout

        options = Options(timeout=0.5)
        options.start()
        out = __import__("queue").Queue()
        verify._work("prometheus", group, None, options, out)  # one group, on its own: nothing else waits
    checks = [item for _, item in iter(out.get, ("prometheus", verify._DONE))]
    assert [(c.name, c.status, c.detail, c.fix, c.cause) for c in checks][1:] == [
        ("reachable", "fail", "no answer within 0.5 s (after 1 checks)",
         "check that the prometheus endpoint is reachable, or --skip prometheus", "unreachable")]


def test_the_operators_service_monitor_renames_the_workload_labels(stack, reference):
    cluster, verify = stack
    cluster.service_monitors = KubeCluster(reference).service_monitors  # the GPU operator's own
    code, checks = verify("--skip", "exporter", "--skip", "cloudwatch")
    assert _failures(checks)[("kube", "Prometheus scrape config")] == (
        "ServiceMonitor nvidia-dcgm-exporter does not honor labels: the workload pod arrives as exported_pod",
        "apply build/k8s/servicemonitor.yaml (honorLabels: true) in its place, or set labels.pod: exported_pod "
        "in gpudash.yaml")


# --- a deadline for the whole command -------------------------------------------------------------

def _gpudash(*args, env=None, timeout=60, **kwargs):
    """gpudash as its own process, with another CPU free whatever this machine's load (verify forks its child as on an
    idle machine); `timeout` is a hang detector, not a timing assertion."""
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", "from generator import forked; forked.spare_cpu = lambda: True\n"
                           "from generator.cli import run; run()", *args],
                          env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout, **kwargs)


def test_verify_as_its_own_process_makes_the_checks_the_in_process_run_makes(stack, prometheus):
    """As a command, verify runs the groups that use the Kubernetes client in a child process where another CPU is
    free; an exporter pod not ready, found there, is reported as the in-process run (threads only) reports it."""
    cluster, verify = stack
    cluster.pods[1] = cluster.exporter_pod("gpu-node-b", ready=False)
    cluster.refresh_status()
    code, threaded = verify()
    # the run's deadline is raised far past the default 10 s: at load 16 the child process's imports alone took
    # that long and the groups read "no answer within 10 s"; what this test compares is the checks, not the time
    result = _gpudash("verify", "--output", "json", "--prometheus-url", prometheus.url, *deadline(()),
                      timeout=HANG_DETECTOR + 60)
    assert result.returncode == code == 1, result.stderr
    forked = {(c["group"], c["name"]): c for c in json.loads(result.stdout)["checks"]}
    assert {k: c["status"] for k, c in forked.items()} == {k: c["status"] for k, c in threaded.items()}
    assert forked[("kube", "exporter pods ready")]["status"] == "fail"


def test_verify_leaves_no_kubeconfig_key_or_certificate_files_behind(reference, tmp_path):
    """The official client writes a kubeconfig's certificate-authority-data, client-certificate-data and
    client-key-data to temporary files and removes them when the process exits; verify's child process ends without
    the usual exit steps: each run left them (the client's private key among them) in the temporary folder."""
    import base64

    from tests.support import kube_discovery

    issued = kube_discovery.certificate()
    if issued is None:
        pytest.skip("openssl is needed for TLS")
    with KubeTestServer(KubeCluster(reference), tls=True, reference=reference) as kube:
        config = yaml.safe_load(kube.kubeconfig(tmp_path / "kubeconfig").read_text())
        config["users"][0]["user"].update({"client-certificate-data": issued[2],
                                           "client-key-data": base64.b64encode(issued[1].read_bytes()).decode()})
        (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
        scratch = tmp_path / "tmp"
        scratch.mkdir()
        result = _gpudash("verify", "--output", "json", "--prometheus-url", "http://127.0.0.1:9", "--timeout", "60",
                          env={"KUBECONFIG": str(tmp_path / "kubeconfig"), "TMPDIR": str(scratch),
                               "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_DEFAULT_REGION": "us-east-1",
                               "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"},
                          timeout=HANG_DETECTOR + 60)
    checks = {(c["group"], c["name"]): c["status"] for c in json.loads(result.stdout)["checks"]}
    assert checks[("kube", "exporter DaemonSet")] == "ok"  # the kube group read the cluster over TLS, with the key
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_the_verify_process_does_not_walk_the_objects_its_run_made(tmp_path):
    """verify runs with the cycle collector off (its imports make tens of thousands of objects that live until the
    process ends); turned back on before the output, the collector's next young collection walked every one of them
    (none had been collected): a tenth of the command's CPU spent just before the process ends."""
    import os
    import subprocess

    code = ("import gc, sys\n"
            "walked = [0]\n"
            "gc.callbacks.append(lambda phase, info: walked.append(sum(len(gc.get_objects(g)) for g in "
            "range(info['generation'] + 1))) if phase == 'start' and info['generation'] < 2 else None)\n"
            "import atexit\n"
            "atexit.register(lambda: print(f'\\nwalked {max(walked)}', end=''))\n"
            "sys.argv = ['gpudash'] + sys.argv[1:]\n"
            "from generator.cli import run\n"
            "run()\n")
    closed = "http://127.0.0.1:9"  # nothing listens: every group fails at once, after importing its client
    result = subprocess.run([sys.executable, "-c", code, "verify", "--output", "json", "--prometheus-url", closed,
                             "--exporter-url", f"{closed}/metrics", "--endpoint-url", closed],
                            env={**os.environ, "KUBECONFIG": str(tmp_path / "none"), "AWS_ACCESS_KEY_ID": "testing",
                                 "AWS_SECRET_ACCESS_KEY": "testing"},
                            capture_output=True, text=True, timeout=HANG_DETECTOR + 60)
    checks, walked = result.stdout.rsplit("\n", 1)
    assert result.returncode == 1 and json.loads(checks)["failed"], result.stderr
    # a young collection walks about a thousand objects (gc.get_threshold()); the run made about 70,000
    assert int(walked.removeprefix("walked ")) < 20_000, walked


def test_the_timeout_is_a_deadline_for_the_whole_run_silent_and_dripping_servers():
    """A CloudWatch endpoint that never answers, an exporter and a Prometheus that drip one byte at a time:
    the process ends with each group failed, not when the servers give up (they never do)."""
    from tests.support.canned_server import CannedServer

    with CannedServer(mode="silent") as cloudwatch, CannedServer(mode="drip") as exporter, \
            CannedServer(mode="drip") as prometheus:
        result = _gpudash("verify", "--output", "json", "--skip", "kube", "--timeout", "1",
                          "--endpoint-url", cloudwatch.url, "--exporter-url", exporter.url + "/metrics",
                          "--prometheus-url", prometheus.url,
                          env={"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}, timeout=120)
    assert result.returncode == 1, result.stderr
    checks = {c["group"]: c for c in json.loads(result.stdout)["checks"]}
    for group in ("exporter", "prometheus", "cloudwatch"):
        assert checks[group]["status"] == "fail"
        assert checks[group]["cause"] == "unreachable"
        # On a loaded machine the second can pass before CloudWatch's first call is made (the client is made
        # first): the listing then stops at the deadline without asking, and says so.
        assert re.search(r"(no answer|did not finish answering) within 1 s|deadline \(1 s\) had passed before its "
                         r"first page",
                         checks[group]["detail"]), checks[group]


def test_a_read_cut_short_by_the_deadline_is_reported_as_the_deadline():
    """The socket's own timeout is the time left in the run: when it fires, the deadline has come, and the
    check says so (not a bare ReadTimeout), whichever of the two the machine's load lets happen first."""
    from generator.clients.http import SlowAnswer, get
    from generator.clients.options import Options
    from tests.support.canned_server import CannedServer

    # A drip whose headers come late on a busy machine has given no answer yet: either wording is true.
    for mode, says in (("silent", r"no answer within 0\.3 s"),
                       ("drip", r"(no answer|did not finish answering) within 0\.3 s")):
        options = Options(timeout=0.3)
        options.start()
        with CannedServer(mode=mode, drip_every=1.0) as server, pytest.raises(SlowAnswer) as late:
            get(server.url + "/metrics", options, "the exporter", hint="-")
        assert re.search(says, late.value.what), late.value.what


# --- nothing to verify -------------------------------------------------------------------------

def test_every_group_skipped_is_a_usage_error(cli):
    code, stdout, stderr = cli("verify", "--skip", "kube", "--skip", "exporter", "--skip", "prometheus",
                               "--skip", "cloudwatch")
    assert code == 2 and stdout == ""
    assert "every group of checks is skipped: nothing to verify" in stderr
    assert "leave out one of the --skip options" in stderr


# --- credentials in URLs -----------------------------------------------------------------------

MARKER = "s3cr3t-Marker"


def test_credentials_in_urls_are_never_printed(cli, tmp_path, monkeypatch):
    """user:password@ in every URL gpudash takes, through verify (table, JSON, --debug), push's preflight,
    apply and plan: the password never appears; where the URL is shown, it is redacted."""
    from generator.errors import RemoteError
    from tests.support.canned_server import CannedServer

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    dead = f"http://gpudash:{MARKER}@127.0.0.1:9"
    shown = {
        "verify table": ("verify", "--exporter-url", dead + "/metrics", *deadline(())),
        "verify json": ("verify", "--output", "json", "--exporter-url", dead + "/metrics", *deadline(())),
        "verify debug": ("--debug", "verify", "--exporter-url", dead + "/metrics", *deadline(())),
        "push preflight": ("push",),
        "push preflight debug": ("--debug", "push"),
    }
    env = {"PROMETHEUS_URL": dead, "AWS_ENDPOINT_URL": dead, "GRAFANA_URL": dead, "GRAFANA_TOKEN": "t"}
    for name, args in shown.items():
        code, stdout, stderr = cli(*args, env=env)
        assert code in (1, 3), (name, code, stderr)
        assert MARKER not in stdout + stderr, (name, stdout + stderr)
        assert "http://***@127.0.0.1:9" in stdout + stderr, (name, stdout + stderr)
    refusing = '{"__type": "AccessDenied", "message": "not allowed"}'
    with CannedServer(refusing, status=400, content_type="application/x-amz-json-1.0") as aws:
        env["AWS_ENDPOINT_URL"] = aws.url.replace("http://", f"http://gpudash:{MARKER}@")
        for args in (("apply", "--skip-verify"), ("--debug", "apply", "--skip-verify"), ("plan", "--no-grafana")):
            code, stdout, stderr = cli(*args, env=env)
            assert code == 3 and "AccessDenied" in stderr and MARKER not in stdout + stderr, (args, stderr)
    # botocore names the endpoint when it cannot connect; every error message is redacted
    error = RemoteError(f'Could not connect to the endpoint URL: "{dead}/"', where=dead, hint=f"check {dead}")
    assert MARKER not in str(error) and 'URL: "http://***@127.0.0.1:9/"' in str(error)
    # and progress lines
    import io

    from generator.targets.progress import Progress

    stream = io.StringIO()
    with Progress(stream=stream, interactive=False).phase(f"reading {dead}", 1) as tick:
        tick()
    assert stream.getvalue().startswith("reading http://***@127.0.0.1:9: 1/1")


def test_credentials_in_a_url_still_authenticate(cli):
    """The user-info becomes basic auth on the request, and leaves the message."""
    import base64

    from tests.support.canned_server import CannedServer

    with CannedServer('{"status": "success", "data": {"resultType": "vector", "result": "odd"}}') as prometheus:
        url = prometheus.url.replace("http://", f"http://gpudash:{MARKER}@")
        code, stdout, stderr = cli("verify", "--output", "json", "--skip", "kube", "--skip", "exporter",
                                   "--skip", "cloudwatch", "--prometheus-url", url, *deadline(()))
    assert prometheus.requests[0][2]["Authorization"] == \
        "Basic " + base64.b64encode(f"gpudash:{MARKER}".encode()).decode()
    detail = json.loads(stdout)["checks"][0]["detail"]
    assert detail == (f"odd answer from Prometheus at http://***@{prometheus.address}: data.result is 'odd', "
                      "expected a list")
    assert MARKER not in stdout + stderr


@pytest.mark.parametrize("in_url", [False, True], ids=["no credentials given", "credentials in the URLs"])
def test_a_netrc_entry_for_prometheus_or_the_exporter_is_never_sent(cli, tmp_path, monkeypatch, in_url):
    """requests adds the ~/.netrc ($NETRC) login for a host to a request that has no auth of its own, and again at
    every redirect, over credentials the URL gave: Prometheus and the exporter got the netrc login (a credential the
    user never gave gpudash for them). Only the URL's user-info is sent now, to its own host: not after a redirect
    to another host, and never netrc's, on the first request or after a redirect on the same host."""
    import base64

    from tests.support.canned_server import CannedServer

    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login netrc-user password netrc-secretpart\n"
                     "machine localhost login netrc-user password netrc-secretpart\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    given = "Basic " + base64.b64encode(f"gpudash:{MARKER}".encode()).decode()
    with CannedServer('{"status": "success", "data": {"resultType": "vector", "result": []}}') as prometheus, \
            CannedServer("# no samples\n", content_type="text/plain") as exporter:
        exporter.redirects["/metrics"] = "/metrics-moved"  # the same host
        exporter.redirects["/metrics-moved"] = exporter.url.replace("127.0.0.1", "localhost") + "/metrics-there"
        urls = [server.url.replace("http://", f"http://gpudash:{MARKER}@") if in_url else server.url
                for server in (prometheus, exporter)]
        cli("verify", "--output", "json", "--skip", "kube", "--skip", "cloudwatch", "--prometheus-url", urls[0],
            "--exporter-url", urls[1] + "/metrics", *deadline(()))
    sent = {(server, path): headers.get("Authorization") for server in ("prometheus", "exporter")
            for _, path, headers in (prometheus if server == "prometheus" else exporter).requests}
    assert [path for server, path in sent if server == "exporter"] == ["/metrics", "/metrics-moved", "/metrics-there"]
    assert len(sent) > 3 and not any("netrc" in base64.b64decode(v.split()[-1]).decode() for v in sent.values() if v)
    assert sent == {key: given if in_url and key[1] != "/metrics-there" else None for key in sent}, sent


# --- colour and alignment ----------------------------------------------------------------------

def _on_a_terminal(*args, no_color: bool):
    """Run gpudash with stdout on a pseudo-terminal; its exit code and what it printed there."""
    import os
    import pty
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if no_color:
        env["NO_COLOR"] = "1"
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen([sys.executable, "-c", "from generator.cli import run; run()", *args],
                                   env=env, stdout=follower, stderr=subprocess.DEVNULL)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is done
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=60)
        return process.returncode, b"".join(chunks).decode().replace("\r\n", "\n")
    finally:
        os.close(leader)


def test_the_table_is_aligned_with_colour_on_a_terminal_and_plain_with_no_color():
    import click

    args = ("verify", "--skip", "kube", "--skip", "exporter", "--skip", "cloudwatch", "--prometheus-url",
            "http://127.0.0.1:9", *deadline(()))
    code, coloured = _on_a_terminal(*args, no_color=False)
    assert code == 1 and "\x1b[" in coloured  # colour on a terminal
    header, rule, row = click.unstyle(coloured).split("\n")[:3]
    assert row.index("FAIL") == header.index("STATUS")
    assert row.index("cannot query Prometheus") == header.index("DETAIL") == rule.index(" -", header.index("STATUS")) + 1
    code, plain = _on_a_terminal(*args, no_color=True)
    assert code == 1 and "\x1b[" not in plain
    assert plain.split("\n")[:3] == [header, rule, row]


# --- structure -----------------------------------------------------------------------------------

def test_checks_import_without_verify():
    """The check groups depend on their result types, not on the verify command that runs them."""
    import subprocess
    import sys

    loaded = subprocess.run([sys.executable, "-c", "import sys, generator.checks.kube, generator.checks.prometheus, "
                             "generator.checks.exporter, generator.checks.cloudwatch; "
                             "print('generator.verify' in sys.modules)"], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "False"


# --- a brand-new cluster: deployed and ready, no data yet --------------------------------------

@pytest.fixture(scope="module")
def prometheus_new(prometheuses):
    """A Prometheus that has not scraped the exporter yet."""
    return prometheuses["new"]


def test_apply_on_a_new_cluster_publishes_with_a_wait_when_the_agent_is_ready(stack, moto, cli):
    _, _ = stack
    moto.reset()  # nothing has reached CloudWatch yet
    code, stdout, stderr = cli("apply", "--dry-run")
    assert code == 0, stderr
    assert "warning: no data yet in cloudwatch (no DCGM metrics in ContainerInsights/Prometheus for gpu-cluster in " \
           "the last 3 h), but the exporter and its data path are deployed and ready, so this is published anyway; " \
           "expect metrics within about 15 minutes" in stderr
    assert "create" in stdout


def test_apply_on_a_new_cluster_is_refused_when_the_agent_is_not_deployed(stack, moto, cli):
    cluster, _ = stack
    moto.reset()
    cluster.deployments.clear()
    code, _, stderr = cli("apply", "--dry-run")
    assert code == 3
    assert "preflight checks failed, nothing was published: cloudwatch/gpu-cluster metrics: no DCGM metrics" in stderr
    assert "not deployed and ready (kube/CloudWatch agent: no Deployment amazon-cloudwatch/cwagent-prometheus)" in stderr


def test_apply_on_a_new_cluster_is_refused_when_the_scrape_jobs_keep_no_exporter_pod(stack, moto, cli):
    """The operator's DaemonSet runs pods labelled as the chart's (exporter.deployment gpu-operator): the agent's job
    keeps none of them, so no GPU metric will ever arrive. apply on a new cluster published "with a wait" (its kube
    evidence read "exporter pods ready: ok, 0 exporter pods ready"); it is refused, saying so."""
    cluster, verify = stack
    _owned_by(cluster, "nvidia-dcgm-exporter")
    for pod in cluster.pods:
        pod["metadata"]["labels"] = {"app.kubernetes.io/name": "dcgm-exporter"}
    ready = verify(*ONLY_KUBE)[1][("kube", "exporter pods ready")]
    assert (ready["status"], ready["detail"], ready["cause"]) == (
        "fail", "no exporter pod the scrape jobs keep runs on the 2 GPU nodes: none will publish GPU metrics (GPU node "
        "coverage says why)", "")
    moto.reset()
    code, _, stderr = cli("apply", "--dry-run")
    assert code == 3, stderr
    assert "and not deployed and ready (kube/exporter pods ready: no exporter pod the scrape jobs keep runs on the 2 " \
           "GPU nodes" in stderr


def test_push_on_a_new_cluster_publishes_with_a_wait_when_the_scrape_config_is_ready(stack, prometheus_new, cli,
                                                                                     reference):
    from tests.support.grafana_server import ADMIN, GrafanaTestServer

    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana:
        env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN, "PROMETHEUS_URL": prometheus_new.url}
        code, _, stderr = cli("push", env=env)
        assert code == 0, stderr
        assert "warning: no data yet in prometheus" in stderr and "then scrapes every 30s" in stderr
        assert len(grafana.state.dashboards) >= 4  # published


def test_push_on_a_new_cluster_is_refused_without_a_scrape_config(stack, prometheus_new, cli, reference):
    from tests.support.grafana_server import ADMIN, GrafanaTestServer

    cluster, _ = stack
    cluster.service_monitors = []
    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana:
        env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN, "PROMETHEUS_URL": prometheus_new.url}
        code, _, stderr = cli("push", env=env)
        assert code == 3
        assert "kube/Prometheus scrape config: no ServiceMonitor selects the exporter" in stderr
        assert "prometheus/Prometheus scrape job: Prometheus has no target for scrape job 'dcgm-exporter'" in stderr
        assert grafana.state.dashboards == {}


@pytest.fixture(scope="module")
def prometheus_job_new(prometheuses):
    """gpudash's additional-scrape-configs job loaded, its exporter target discovered but not scraped yet
    (its first scrape falls somewhere in a day)."""
    server = prometheuses["job_new"]
    found = time.monotonic() + READY_WITHIN  # discovery hands targets to the scrape manager every few seconds
    while not server.api("targets", state="active")["activeTargets"]:
        assert time.monotonic() < found, "Prometheus never discovered the file_sd target"
        time.sleep(0.25)
    return server


def _push(prometheus_url, cli, reference):
    from tests.support.grafana_server import ADMIN, GrafanaTestServer

    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana:
        code, _, stderr = cli("push", env={"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN,
                                           "PROMETHEUS_URL": prometheus_url})
        return code, stderr, len(grafana.state.dashboards)


def test_push_on_a_new_cluster_scraped_by_the_additional_scrape_config_publishes_with_a_wait(
        stack, prometheus_job_new, cli, reference):
    """No ServiceMonitor: Prometheus' own job, with the exporter's targets found, is the scrape path deployed."""
    cluster, _ = stack
    cluster.service_monitors = []
    code, stderr, published = _push(prometheus_job_new.url, cli, reference)
    assert code == 0, stderr
    assert "warning: no data yet in prometheus (no scrape target for job 'dcgm-exporter'" in stderr
    assert "are deployed and ready, so this is published anyway; expect series within a few minutes" in stderr
    assert "then scrapes every 30s" in stderr
    assert published >= 4


def test_push_on_a_new_cluster_with_the_scrape_job_but_no_ready_exporter_is_refused(
        stack, prometheus_job_new, cli, reference):
    cluster, _ = stack
    cluster.service_monitors = []
    cluster.pods[1] = cluster.exporter_pod("gpu-node-b", ready=False)
    cluster.refresh_status()
    code, stderr, published = _push(prometheus_job_new.url, cli, reference)
    assert code == 3 and published == 0
    assert "not deployed and ready (kube/exporter" in stderr and "Prometheus scrape" not in stderr.split("not deployed")[1]


# --- MIG -------------------------------------------------------------------------------------------

MIG_ABSENT = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL")


def _split_into_mig(payload: str, busy_without_pod: bool = False, mig_labels: bool = True) -> str:
    """The A10G payload as the exporter writes a GPU split into two 3g.20gb instances: one series per
    instance (GPU_I_PROFILE, GPU_I_ID), the device utilization fields absent, instance 1 held by the
    workload pod and busy, instance 2 held by no pod (idle unless `busy_without_pod`)."""
    lines = []
    for line in payload.splitlines():
        name = line.split(" ")[2] if line.startswith("#") else line.split("{")[0]
        if name in MIG_ABSENT:
            continue
        if line.startswith("#") or "{" not in line:
            lines.append(line)
            continue
        for instance in ("1", "2"):
            labels = f'GPU_I_PROFILE="3g.20gb",GPU_I_ID="{instance}",' if mig_labels else ""
            series = line.replace('modelName="NVIDIA A10G",', f'modelName="NVIDIA A100-SXM4-40GB",{labels}')
            if instance == "2":
                series = re.sub(r',(container|namespace|pod)="[^"]*"', "", series)
                if name == "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
                    series = series.rsplit(" ", 1)[0] + (" 0.750000" if busy_without_pod else " 0.000000")
            elif name == "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
                series = series.rsplit(" ", 1)[0] + " 0.820000"
            lines.append(series)
    return "\n".join(lines) + "\n"


def test_mig_names_the_fields_it_does_not_report_instead_of_failing_on_them(stack, payload):
    cluster, verify = stack
    cluster.metrics_payload = _split_into_mig(payload)
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch", "--skip", "kube")
    assert _failures(checks) == {} and code == 0
    expected = checks[("exporter", "expected metrics")]
    assert expected["status"] == "ok" and expected["detail"].endswith("expected absent, below)")
    mig = checks[("exporter", "MIG")]
    assert mig["status"] == "warn"
    assert mig["detail"] == ("GPU 0 split into MIG instances (3g.20gb); not reported for MIG instances: "
                             + ", ".join(MIG_ABSENT))
    assert mig["fix"].startswith("on MIG instances the dashboards and alerts read DCGM_FI_PROF_GR_ENGINE_ACTIVE for "
                                 "DCGM_FI_DEV_GPU_UTIL")
    assert checks[("exporter", "pod labels")]["detail"] == "1 busy GPUs carry pod labels"


def test_a_busy_mig_instance_without_a_pod_label_is_named(stack, payload):
    cluster, verify = stack
    cluster.metrics_payload = _split_into_mig(payload, busy_without_pod=True)
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch", "--skip", "kube")
    assert code == 1
    assert _failures(checks)[("exporter", "pod labels")][0] == "busy GPUs without a pod label: gpu 0 MIG instance 2"


def test_each_clusters_exporter_is_judged_by_its_own_exporter_mig(stack, payload, tmp_path):
    """clusters[].exporter.mig: the context is gpu-cluster (its live agent config names it, read through the API
    server as the kube group reads it); its exporter serves MIG instances. Said none there, `no MIG` fails naming the
    cluster, the node and each instance, and the setting to write; said none of the other cluster only, no such
    check (gpu-cluster's GPUs may be split)."""
    cluster, verify = stack
    cluster.metrics_payload = _split_into_mig(payload)
    config = tmp_path / "gpudash.yaml"
    config.write_text("clusters:\n  - {name: gpu-cluster, region: us-east-1, exporter: {mig: none}}\n"
                      "  - {name: other, region: us-east-1}\n")
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch", "--skip", "kube", "--config", str(config))
    said = checks[("exporter", "no MIG")]
    assert code == 1 and said["status"] == "fail", said
    assert re.fullmatch(r"cluster gpu-cluster says clusters\[\]\.exporter\.mig: none, but 2 MIG instance\(s\) report "
                        r"on node (\S+): \1 gpu 0 MIG instance 1 \(3g\.20gb\), \1 gpu 0 MIG instance 2 \(3g\.20gb\)",
                        said["detail"]), said["detail"]
    assert said["fix"].startswith("write clusters[].exporter.mig: some for cluster gpu-cluster (it says none)")
    config.write_text("clusters:\n  - {name: gpu-cluster, region: us-east-1}\n"
                      "  - {name: other, region: us-east-1, exporter: {mig: none}}\n")
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch", "--skip", "kube", "--config", str(config))
    assert ("exporter", "no MIG") not in checks and checks[("exporter", "MIG")]["status"] == "warn"


def test_the_same_fields_missing_without_mig_fail(stack, payload):
    cluster, verify = stack
    cluster.metrics_payload = _split_into_mig(payload, mig_labels=False)
    code, checks = verify("--skip", "prometheus", "--skip", "cloudwatch", "--skip", "kube")
    assert code == 1
    assert _failures(checks)[("exporter", "expected metrics")][0].startswith("missing: DCGM_FI_DEV_DEC_UTIL")
    assert ("exporter", "MIG") not in checks


def test_a_prometheus_without_kube_state_metrics_is_warned_of(stack, prometheus_exported):
    """This Prometheus holds the DCGM series but no kube-state-metrics: the data-missing alert would fire."""
    _, verify = stack
    _, checks = verify(prometheus_url=prometheus_exported.url)
    check = checks[("prometheus", "exporter DaemonSet in kube-state-metrics")]
    assert check["status"] == "warn" and check["detail"] == (
        "no kube_daemonset_status_desired_number_scheduled of a DaemonSet labelled app=nvidia-dcgm-exporter or "
        "app.kubernetes.io/name=dcgm-exporter (kube_daemonset_labels): the data-missing alert fires until it arrives")
    assert "scrape kube-state-metrics with this Prometheus" in check["fix"]


OPERATOR_DAEMONSET = {"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter", **kube_state.OPERATOR_LABELS}


@pytest.fixture
def kube_state_now(kube_state_metrics, prometheus):
    """Replace what kube-state-metrics serves to the module's Prometheus; waits until `expr` shows it, and
    afterwards until the test's series are gone again."""
    served = kube_state_metrics.payload
    added: list[str] = []

    def serve(text: str, expr: str) -> None:
        kube_state_metrics.payload = text
        added.append(expr)
        prometheus.wait_for(expr)

    yield serve
    kube_state_metrics.payload = served
    for expr in added:
        prometheus.wait_for(f"absent({expr})")


def test_every_exporter_daemonset_in_kube_state_metrics_is_counted(stack, kube_state_now, project_dir, prometheus):
    """The data-missing rule reads every DaemonSet labelled as an exporter, whatever its name: the operator's beside
    a Helm release per node pool under custom names (fullnameOverride) are all counted. An exporter DaemonSet whose
    labels kube-state-metrics does not expose (its allowlist unset) is named, and alone it fails: the alert would
    fire for good. On a shared Prometheus each cluster's DaemonSet counts."""
    _, verify = stack
    only = ("--skip", "kube", "--skip", "cloudwatch", "--skip", "exporter")
    pool = {"namespace": "dcgm", "daemonset": "gpu-metrics-pool-b", **kube_state.HELM_LABELS}
    kube_state_now(kube_state.payload(OPERATOR_DAEMONSET, 2, 2, more=((pool, 3, 1),)),
                   'kube_daemonset_status_number_available{daemonset="gpu-metrics-pool-b"}')
    _, checks = verify(*only)
    check = checks[("prometheus", "exporter DaemonSet in kube-state-metrics")]
    assert (check["status"], check["detail"], check["fix"]) == (
        "warn", "3 of 5 exporter pods available (dcgm/gpu-metrics-pool-b: 1 of 3, gpu-operator/nvidia-dcgm-exporter: "
        "2 of 2)", "kubectl -n dcgm rollout status daemonset/gpu-metrics-pool-b")
    # The generated rule's condition over the latest period on this real Prometheus (which holds no earlier one):
    # the pool's DaemonSet, whatever its name, is read and short.
    from generator import data_missing
    from generator.render.alarms import _alert_query

    project = load_project()
    (alarm,) = [a for a in project.alarms if a.absent]
    rules = yaml.load(encode(build(project, grafana=False))["prometheus/rules.yaml"], Loader=_LOADER)
    rule = next(r["expr"] for g in rules["groups"] for r in g["rules"] if r.get("alert") == "GpudashGpuDataMissing")
    cluster_wide, each = (data_missing.prometheus_expression(_alert_query(alarm, project.settings).metric,
                                                             project.settings, "5m", part=part)
                          for part in (data_missing.NONE_FOUND, data_missing.EACH_DAEMONSET))
    # the rule: this period's condition and the one before's, the cluster's branches and each DaemonSet's apart
    assert rule.startswith(f"(({cluster_wide}) and (") and f" or ((({each}) and on(namespace, daemonset) (" in rule
    expr = f"{cluster_wide} or {each}"
    assert {(s["metric"]["reason"], s["metric"].get("daemonset")) for s in prometheus.query(expr)
            if s["metric"]["reason"] != "a node's exporter brought no GPU data most of the time"} == {
        ("fewer exporter pods available than desired", "gpu-metrics-pool-b")}
    # kube-state-metrics without --metric-labels-allowlist: kube_daemonset_labels carries no label_*.
    bare = {"namespace": "dcgm", "daemonset": "dcgm-exporter"}
    kube_state_now(kube_state.payload(bare, 2, 2), 'kube_daemonset_status_number_available{daemonset="dcgm-exporter"}')
    code, checks = verify(*only)
    check = checks[("prometheus", "exporter DaemonSet in kube-state-metrics")]
    assert (code, check["status"]) == (1, "fail") and check["detail"] == (
        "no kube_daemonset_status_desired_number_scheduled of a DaemonSet labelled app=nvidia-dcgm-exporter or "
        "app.kubernetes.io/name=dcgm-exporter (kube_daemonset_labels): the data-missing alert fires until it arrives; "
        "kube-state-metrics reports exporter DaemonSets without those labels: dcgm/dcgm-exporter (2 desired)")
    assert check["fix"].startswith("run kube-state-metrics with "
                                   "--metric-labels-allowlist=daemonsets=[app,app.kubernetes.io/name]")
    # One Prometheus for two clusters: the DaemonSet of each, summed.
    shared = project_dir("clusters:\n  - {name: a, region: us-east-1, prometheus_label: a}\n"
                         "  - {name: b, region: us-east-1, prometheus_label: b}\n")
    kube_state_now(kube_state.payload({**OPERATOR_DAEMONSET, "cluster": "a"}, 2, 2,
                                      more=(({**OPERATOR_DAEMONSET, "cluster": "b"}, 4, 3),)),
                   'kube_daemonset_status_number_available{cluster="b"}')
    _, checks = verify(*only, "--config", str(shared))
    check = checks[("prometheus", "exporter DaemonSet in kube-state-metrics")]
    assert check["status"] == "warn" and check["detail"] == (
        "5 of 6 exporter pods available (gpu-operator/nvidia-dcgm-exporter in a: 2 of 2, "
        "gpu-operator/nvidia-dcgm-exporter in b: 3 of 4)")
    assert check["fix"] == "kubectl -n gpu-operator rollout status daemonset/nvidia-dcgm-exporter"


@pytest.mark.parametrize("answer, says", [
    (b"<html><body>Sign in</body></html>", "odd answer from"),
    (None, "cannot list the targets of Prometheus"),
], ids=["odd-answer", "unreachable"])
def test_push_says_it_cannot_tell_whether_the_scrape_job_is_deployed_when_the_target_listing_fails(
        stack, prometheus_job_new, cli, reference, answer, says):
    """Without a ServiceMonitor the scrape job decides; a target listing that is no answer is not "not deployed"."""
    from tests.support.fault_proxy import FaultProxy, Rule

    cluster, _ = stack
    cluster.service_monitors = []
    with FaultProxy(prometheus_job_new.url) as proxy:
        rule = Rule(path="^/api/v1/targets", action="body", times=10**6, body=answer) if answer else \
            Rule(path="^/api/v1/targets", status=400, times=10**6, body=b'{"status":"error","error":"no"}')
        proxy.inject(rule)
        code, stderr, published = _push(proxy.url, cli, reference)
    assert code == 3 and published == 0
    assert f"prometheus/Prometheus scrape job: cannot tell whether it is deployed: {says}" in stderr


# A Prometheus 2.30 without --enable-feature refuses any query using `@` or a negative offset with HTTP 400.
PINNED_REFUSED = json.dumps({"status": "error", "errorType": "bad_data",
                             "error": 'invalid parameter "query": 1:52: parse error: @ modifier is disabled'}).encode()


def _refusing_pinned_queries(prometheus_url):
    """A proxy in front of the healthy Prometheus that refuses verify's `@ end()` / negative offset query as Prometheus
    2.30 does and forwards every other request."""
    from tests.support.fault_proxy import FaultProxy, Rule

    proxy = FaultProxy(prometheus_url)
    proxy.inject(Rule(path="^/api/v1/query$", query=r"timestamp\(vector\(0\)\)", status=400, times=10**6,
                      headers={"Content-Type": "application/json"}, body=PINNED_REFUSED))
    return proxy


def test_push_is_refused_on_a_prometheus_without_at_and_negative_offsets_when_the_build_uses_them(
        stack, prometheus, cli, reference):
    """The bundled dashboards hold the range bars, which query with both, and name each GPU by the dashboard range's
    copies read at its end (`@ end()`, promql.gpus_named) in every per-GPU and per-pod rate panel: nothing is
    published, and the refusal names the panels."""
    _, verify = stack
    with _refusing_pinned_queries(prometheus.url) as proxy:
        _, checks = verify("--skip", "cloudwatch", prometheus_url=proxy.url)
        code, stderr, published = _push(proxy.url, cli, reference)
    pinned = checks[("prometheus", "PromQL @ and negative offset")]
    assert list(_failures(checks)) == [("prometheus", "PromQL @ and negative offset")], _failures(checks)
    assert "@ modifier is disabled): a panel whose query uses either shows an error" in pinned["detail"], pinned
    assert (code, published) == (3, 0), stderr
    assert "preflight checks failed, nothing was published: prometheus/PromQL @ and negative offset: " in stderr
    assert ("62 panel(s) of the dashboards to publish use them: 'GPU usage by pod' panel 'GPU utilization by pod', "
            "'GPU usage by pod' panel 'Tensor core activity by pod', 'GPU usage by pod' panel 'Memory bandwidth "
            "activity (DRAM) by pod' and 59 more") in stderr, stderr


def test_push_publishes_with_a_warning_on_a_prometheus_without_at_and_negative_offsets_when_no_query_uses_them(
        stack, prometheus, cli, reference, tmp_path):
    """A project whose only dashboard is a team's panel of its own PromQL: no query uses `@` or a negative offset, so
    nothing it publishes shows an error on that Prometheus. (A generated per-GPU or per-pod panel uses `@ end()`:
    its GPUs are named and placed on the node picked by the dashboard range's copies, promql.gpus_named, on_node.)"""
    from tests.support.grafana_server import ADMIN, GrafanaTestServer

    (tmp_path / "dash").mkdir()
    (tmp_path / "dash" / "team.py").write_text(
        "from generator.model import Dashboard, Panel, Query, Row\n"
        "dashboard = Dashboard('team-a-training', 'Team A training GPUs', [Row('r', [Panel('Util', (Query("
        "'DCGM_FI_DEV_GPU_UTIL', raw_promql='avg by (pod) (DCGM_FI_DEV_GPU_UTIL{pod=~\"$pod\"})'),))])])\n")
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [dash]\n")
    with _refusing_pinned_queries(prometheus.url) as proxy, \
            GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana:
        code, _, stderr = cli("push", "--config", str(tmp_path / "gpudash.yaml"),
                              env={"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN, "PROMETHEUS_URL": proxy.url})
        refused = [entry for entry in proxy.log if entry[2] == "status"]
        titles = sorted(d["dashboard"]["title"] for d in grafana.state.dashboards.values())
    assert code == 0, stderr
    assert refused, "the proxy never refused verify's query"
    assert titles == ["Team A training GPUs"], titles
    assert ("refuses a query with `@ end()` and a negative offset (invalid parameter \"query\": 1:52: parse error: @ "
            "modifier is disabled): a panel whose query uses either shows an error") in stderr, stderr
    assert ("; no query of the 1 dashboard(s) published uses `@` or a negative offset, so they are published anyway; "
            "before adding one: upgrade Prometheus to 2.33 or later") in stderr, stderr


def test_a_node_running_a_new_exporter_pod_beside_its_ready_one_is_served(stack):
    """A rolling update that surges starts the new pod beside the ready old one: the node is served whichever
    pod is listed first; a node whose every exporter pod is not ready is not."""
    cluster, verify = stack
    starting = cluster.exporter_pod("gpu-node-a", ready=False)
    starting["metadata"]["name"] = "nvidia-dcgm-exporter-new"
    cluster.pods.append(starting)
    _, checks = verify("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    assert checks[("kube", "exporter pods ready")]["status"] == "ok", checks[("kube", "exporter pods ready")]
    assert checks[("kube", "exporter pods ready")]["detail"] == "2 exporter pods ready"
    cluster.pods[0] = cluster.exporter_pod("gpu-node-a", ready=False)
    _, checks = verify("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    assert checks[("kube", "exporter pods ready")]["detail"] == "exporter not ready on gpu-node-a"


def test_failures_that_are_not_the_systems_state_name_their_cause(stack, monkeypatch):
    """A CloudWatch that cannot be reached is unreachable, and no kube-state-metrics pod is not deployed: a
    caller (the publish preflight, a CI reading --output json) is told why, not only that."""
    cluster, verify = stack
    cluster.other_pods = []
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    _, checks = verify("--skip", "exporter", "--skip", "prometheus")
    assert checks[("cloudwatch", "gpu-cluster metrics")]["status"] == "fail"
    assert checks[("cloudwatch", "gpu-cluster metrics")]["cause"] == "unreachable"
    assert checks[("kube", "kube-state-metrics")]["cause"] == "not-deployed"


def test_the_exporter_s_settings_are_read_from_its_own_container_never_a_sidecar(stack):
    """The exporter's container under another name than exporter.deployment's, behind a sidecar listed first:
    its settings are read from the container serving 9400; with none recognisable, the checks say so."""
    import copy

    cluster, verify = stack
    spec = cluster.daemonset["spec"]["template"]["spec"]
    exporter = copy.deepcopy(spec["containers"][0])
    exporter["name"] = "dcgm"
    exporter["args"] = ["-f", "/etc/dcgm-exporter/site.csv"]  # inside the image: gpudash cannot read it
    sidecar = {"name": "kube-rbac-proxy", "image": "quay.io/brancz/kube-rbac-proxy:v0.18.0",
               "ports": [{"name": "https", "containerPort": 8443}]}
    spec["containers"] = [sidecar, exporter]
    only_kube = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    _, checks = verify(*only_kube)
    assert checks[("kube", "pod labels setting")]["status"] == "ok"
    assert checks[("kube", "counters CSV")]["status"] == "warn"  # not judged by the image's default set
    assert checks[("kube", "counters CSV")]["detail"] == \
        "cannot read /etc/dcgm-exporter/site.csv from outside the image"
    exporter["ports"] = []
    _, checks = verify(*only_kube)
    for name in ("pod labels setting", "counters CSV"):
        assert checks[("kube", name)]["status"] == "fail"
        assert checks[("kube", name)]["detail"] == (
            "no container named nvidia-dcgm-exporter or alone declaring port 9400 among kube-rbac-proxy, dcgm: "
            "the exporter's settings cannot be read")


def test_a_helm_release_named_in_exporter_daemonset_passes_the_exporter_service_and_endpoint_checks(stack, tmp_path):
    """`helm install gpu-metrics gpu-helm-charts/dcgm-exporter` names both its DaemonSet and its Service
    `gpu-metrics-dcgm-exporter` (the chart's templates/service.yaml: name: dcgm-exporter.fullname). With that name in
    exporter.daemonset, as README and verify's own fix ask, nothing is wrong with the release: verify must not fail
    looking for a Service `dcgm-exporter` (the style's fixed name), nor read /metrics through that Service."""
    cluster, verify = stack
    release = "gpu-metrics-dcgm-exporter"
    chart_labels = {"app.kubernetes.io/name": "dcgm-exporter", "app.kubernetes.io/instance": "gpu-metrics"}
    cluster.daemonset["metadata"].update(name=release, labels=chart_labels)
    cluster.daemonset["spec"]["template"]["metadata"]["labels"] = dict(chart_labels)  # its pods', as the chart writes
    (service,) = cluster.services.values()
    service["metadata"].update(name=release, labels=chart_labels)
    service["spec"]["selector"] = dict(chart_labels)  # the chart's Service selects its pods by these
    cluster.services = {release: service}
    for pod in cluster.pods:
        pod["metadata"]["labels"] = {**chart_labels, "controller-revision-hash": "1"}
    config = tmp_path / "gpudash.yaml"
    config.write_text(f"exporter:\n  deployment: helm\n  namespace: gpu-operator\n  daemonset: {release}\n")
    _, checks = verify("--skip", "prometheus", "--skip", "cloudwatch", "--config", str(config))
    assert checks[("kube", "exporter DaemonSet")]["status"] == "ok", checks[("kube", "exporter DaemonSet")]
    failed = _failures(checks)
    assert ("kube", "exporter Service") not in failed, failed[("kube", "exporter Service")]
    assert ("exporter", "reachable") not in failed, failed[("exporter", "reachable")]
    assert checks[("exporter", "metrics endpoint")]["status"] == "ok"


def test_an_exporter_daemonset_in_another_namespace_is_warned_of_as_one_in_exporter_namespace(stack, tmp_path):
    """The data-missing rule reads every DaemonSet labelled as an exporter, in any namespace; the CloudWatch alarm
    reads the one exporter.daemonset names, and the agent scrapes exporter pods of exporter.namespace only. A second
    exporter (the chart installed in `monitoring` beside the GPU operator's) makes the two forms judge different
    DaemonSets: verify warns of a second one in exporter.namespace, and must warn of this one too."""
    cluster, verify = stack
    second = copy.deepcopy(cluster.daemonset)
    second["metadata"].update(name="dcgm-exporter", namespace="monitoring",
                              labels={"app.kubernetes.io/name": "dcgm-exporter"})
    cluster.daemonsets[("monitoring", "dcgm-exporter")] = second
    _, checks = verify("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch")
    check = checks[("kube", "exporter DaemonSet")]
    assert check["status"] == "warn" and "monitoring/dcgm-exporter" in check["detail"], check
    assert "name monitoring/dcgm-exporter in exporter.more_daemonsets (as namespace/name)" in check["fix"], check


def test_a_node_pool_exporter_in_another_namespace_named_in_the_settings_covers_its_nodes(stack, tmp_path):
    """A third GPU node whose exporter pod belongs to a DaemonSet in another namespace (a node pool's), named in
    exporter.more_daemonsets: its node is covered and the DaemonSet read (verify failed the node as one without an
    exporter pod: it looked for exporter pods in exporter.namespace only), its rollout and strategy judged as the
    first one's (they were not read)."""
    cluster, verify = stack
    cluster.nodes.append(cluster.node("gpu-node-c", gpus=1))
    pod = cluster.exporter_pod("gpu-node-c")
    pod["metadata"].update(name="pool-c-exporter-1", namespace="gpu-pools")
    cluster.pods.append(pod)
    pool_c = copy.deepcopy(cluster.daemonset)
    pool_c["metadata"].update(name="pool-c", namespace="gpu-pools")
    pool_c["status"].update(desiredNumberScheduled=1, currentNumberScheduled=1, numberReady=1, numberAvailable=1,
                            updatedNumberScheduled=1)
    cluster.daemonsets[("gpu-pools", "pool-c")] = pool_c
    cluster.refresh_status()
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  more_daemonsets: [gpu-pools/pool-c]\n")
    checks = verify("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch", "--config", str(config))[1]
    assert [(checks[("kube", n)]["status"], checks[("kube", n)]["detail"]) for n in (
        "exporter DaemonSet", "GPU node coverage", "exporter rollout gpu-pools/pool-c")] == [
        ("ok", "gpu-operator/nvidia-dcgm-exporter, gpu-pools/pool-c labelled as a DCGM exporter"),
        ("ok", "all 3 GPU nodes run the exporter"), ("ok", "1/1 pods ready")]
    assert checks[("kube", "exporter rollout strategy gpu-pools/pool-c")]["status"] == "ok"
    # its rollout stuck, or its maxUnavailable other than exporter.max_unavailable (its alarm reads rollouts so)
    pool_c["status"].update(numberReady=0, numberAvailable=0, updatedNumberScheduled=0)
    pool_c["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 3}}
    checks = verify("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch", "--config", str(config))[1]
    assert (checks[("kube", "exporter rollout gpu-pools/pool-c")]["status"],
            checks[("kube", "exporter rollout gpu-pools/pool-c")]["detail"]) == (
        "fail", "rolling out: 0 of 1 pods run the current pod template, 0/1 available")
    assert checks[("kube", "exporter rollout strategy gpu-pools/pool-c")]["status"] != "ok"
    assert checks[("kube", "exporter rollout")]["status"] == "ok"
    # a surge rollout of that pool's exporter doubles its nodes' CloudWatch counters as the first one's would
    assert checks[("kube", "exporter rollout overlap gpu-pools/pool-c")]["status"] == "ok"
    pool_c["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}
    checks = verify("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch", "--config", str(config))[1]
    assert checks[("kube", "exporter rollout overlap gpu-pools/pool-c")]["status"] == "warn"
    assert checks[("kube", "exporter rollout overlap")]["status"] == "ok"


def _one_pod_daemonset(cluster, namespace: str, name: str, **metadata) -> dict:
    """Another exporter DaemonSet (a copy of the first one's) in the test cluster, one pod scheduled and available."""
    daemonset = copy.deepcopy(cluster.daemonset)
    daemonset["metadata"].update(name=name, namespace=namespace, **metadata)
    daemonset["status"].update(desiredNumberScheduled=1, currentNumberScheduled=1, numberReady=1, numberAvailable=1,
                               updatedNumberScheduled=1)
    cluster.daemonsets[(namespace, name)] = daemonset
    cluster.refresh_status()
    return daemonset


def test_a_gpu_node_served_by_exporter_pods_of_two_daemonsets_is_a_warning_naming_the_doubled_counters(stack, tmp_path):
    """A node pool's DaemonSet named in exporter.more_daemonsets that also schedules on a node the first DaemonSet
    serves: the CloudWatch agent keeps both pods, each its own delta series, so every counter reads twice its increase
    there for as long as both run (a maxSurge overlap that never ends: tests/unit/test_cloudwatch_exporter_overlap.py),
    and on agent.pipeline classic each pod's totals twice. verify said "all GPU nodes run the exporter"."""
    cluster, verify = stack
    first = cluster.pods[0]
    node = first["spec"]["nodeName"]
    first["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "uid": "1",
                                             "name": "nvidia-dcgm-exporter", "controller": True}]
    pod = cluster.exporter_pod(node)
    pod["metadata"].update(name="pool-c-exporter-1", namespace="gpu-pools",
                           ownerReferences=[{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "pool-c",
                                             "uid": "2", "controller": True}])
    cluster.pods.append(pod)
    _one_pod_daemonset(cluster, "gpu-pools", "pool-c")
    only_kube = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch", "--config")
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  more_daemonsets: [gpu-pools/pool-c]\n")
    check = verify(*only_kube, str(config))[1][("kube", "GPU node coverage")]
    assert check["status"] == "warn"  # a warning: publishing goes ahead
    assert check["detail"] == (
        f"all 2 GPU nodes run the exporter, but {node} runs pods of DaemonSets gpu-operator/nvidia-dcgm-exporter and "
        "gpu-pools/pool-c: on CloudWatch every counter (energy, PCIe replays, rows remapped) reads twice its "
        "value on such a node while both run (Grafana reads one copy per GPU)")
    assert check["fix"].startswith("keep one exporter DaemonSet per GPU node")
    config.write_text("agent:\n  pipeline: classic\nthresholds:\n  pcie_replays_per_minute: 0\n"
                      "exporter:\n  more_daemonsets: [gpu-pools/pool-c]\n")
    assert "rows remapped) and each pod's totals (framebuffer, power, PCIe by pod, Pods on GPUs) reads twice" in verify(
        *only_kube, str(config))[1][("kube", "GPU node coverage")]["detail"]


def test_the_chart_beside_the_operator_named_in_more_daemonsets_covers_its_node(stack, tmp_path):
    """README's example: the operator's exporter (exporter.deployment gpu-operator) and the Helm chart in `monitoring`
    named in exporter.more_daemonsets, the chart's pod the only exporter on a third GPU node. The scrape jobs keep that
    DaemonSet's pods by their owner (render/scrape.exporter_pods_rule), so the node is covered; verify failed it as
    "without an exporter pod" with a fix about the DaemonSet's nodeSelector (it listed pods by the operator's label
    only). The same pod under a DaemonSet no setting names is not scraped: the failure says so and what to write."""
    cluster, verify = stack
    cluster.nodes.append(cluster.node("gpu-node-c", gpus=1))
    pod = cluster.exporter_pod("gpu-node-c")
    pod["metadata"].update(name="dcgm-exporter-x7", namespace="monitoring",
                           labels={"app.kubernetes.io/name": "dcgm-exporter"},
                           ownerReferences=[{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "dcgm-exporter",
                                             "uid": "1", "controller": True}])
    cluster.pods.append(pod)
    chart = _one_pod_daemonset(cluster, "monitoring", "dcgm-exporter",
                               labels={"app.kubernetes.io/name": "dcgm-exporter"})
    only_kube = ("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch", "--config")
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  more_daemonsets: [monitoring/dcgm-exporter]\n")
    check = verify(*only_kube, str(config))[1][("kube", "GPU node coverage")]
    assert (check["status"], check["detail"]) == ("ok", "all 3 GPU nodes run the exporter")
    (tmp_path / "other.yaml").write_text("exporter:\n  more_daemonsets: [monitoring/pool-b]\n")
    cluster.daemonsets[("monitoring", "pool-b")] = copy.deepcopy(chart)
    check = verify(*only_kube, str(tmp_path / "other.yaml"))[1][("kube", "GPU node coverage")]
    assert (check["status"], check["detail"], check["fix"]) == (
        "fail", "GPU nodes whose exporter pod the scrape jobs do not keep: gpu-node-c (monitoring/dcgm-exporter-x7 of "
        "DaemonSet monitoring/dcgm-exporter, labelled app.kubernetes.io/name=dcgm-exporter, not "
        "app=nvidia-dcgm-exporter, and not a DaemonSet the settings name)",
        "name monitoring/dcgm-exporter in exporter.more_daemonsets (or the cluster's clusters[].exporter."
        "more_daemonsets), then generate and apply again")


@pytest.mark.parametrize("ready", [True, False])
def test_a_user_who_may_not_read_the_nodes_gets_the_pods_of_a_named_daemonset_of_another_label_counted(
        stack, tmp_path, ready):
    """The chart in `monitoring` named in exporter.more_daemonsets (pods labelled app.kubernetes.io/name=dcgm-exporter,
    kept by the scrape jobs by their owner) beside the operator's exporter, and a kubeconfig user refused the Nodes.
    "exporter pods ready" counted the operator's label only: the chart's pod went uncounted, and one not ready read
    "ok: 2 exporter pods ready on 2 nodes". It counts every pod the scrape jobs keep, as with the Nodes readable."""
    cluster, verify = stack
    cluster.nodes.append(cluster.node("gpu-node-c", gpus=1))
    pod = cluster.exporter_pod("gpu-node-c", ready=ready)
    pod["metadata"].update(name="dcgm-exporter-x7", namespace="monitoring",
                           labels={"app.kubernetes.io/name": "dcgm-exporter"},
                           ownerReferences=[{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "dcgm-exporter",
                                             "uid": "1", "controller": True}])
    cluster.pods.append(pod)
    _one_pod_daemonset(cluster, "monitoring", "dcgm-exporter", labels={"app.kubernetes.io/name": "dcgm-exporter"})
    cluster.readable_only = {"nodes": ()}
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  more_daemonsets: [monitoring/dcgm-exporter]\n")
    check = verify("--skip", "exporter", "--skip", "prometheus", "--skip", "cloudwatch", "--config", str(config)
                   )[1][("kube", "exporter pods ready")]
    if ready:
        assert (check["status"], check["detail"]) == ("ok", "3 exporter pods ready on 3 nodes (whether every GPU node "
                                                            "runs one: GPU node coverage cannot tell)"), check
    else:
        assert check["status"] != "ok" and check["detail"].startswith(
            "exporter not ready on gpu-node-c (whether it is a GPU node: cannot tell: "), check


def test_a_kubeconfig_variable_naming_no_file_is_said_so_with_what_to_do(cli, tmp_path, monkeypatch):
    """KUBECONFIG pointing nowhere (a typo, a file of another machine): the check names the path and that it does not
    exist, and its fix does not tell the user to set the variable they have set."""
    missing = tmp_path / "no-such-dir" / "config"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    code, stdout, stderr = cli("verify", "--skip", "prometheus", "--skip", "cloudwatch", "--skip", "exporter",
                               "--output", "json")
    (check,) = json.loads(stdout)["checks"]
    assert code == 1 and (check["group"], check["status"]) == ("kube", "fail")
    assert check["detail"] == f"no usable kubeconfig: KUBECONFIG names {missing}, which does not exist"
    assert check["fix"].startswith("point KUBECONFIG at your kubeconfig file, or unset it to read ~/.kube/config")
    assert "Traceback" not in stderr


def test_an_empty_kubeconfig_variable_reads_the_home_kubeconfig_as_kubectl_does(stack, tmp_path, monkeypatch):
    """KUBECONFIG set but empty (`export KUBECONFIG=` in a profile) is unset to kubectl, which then reads
    ~/.kube/config: verify read no file at all and failed the kube group with "no usable kubeconfig"."""
    cluster, verify = stack
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text((tmp_path / "kubeconfig").read_text())  # the stack's
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KUBECONFIG", "")
    code, checks = verify()
    assert _failures(checks) == {} and code == 0
    assert checks[("kube", "exporter rollout")]["status"] == "ok"


def test_a_cluster_scaled_to_zero_gpu_nodes_is_not_a_failed_rollout_and_apply_publishes_with_a_wait(stack, moto, cli):
    """Every GPU node scaled away (an autoscaled pool at zero): the exporter DaemonSet schedules 0 pods, which
    `kubectl rollout status` reports as rolled out. Verify failed "exporter rollout: 0/0 pods ready, 0 updated" with
    the fix "kubectl -n gpu-operator rollout status daemonset/nvidia-dcgm-exporter" (which says it is done), exit 1;
    apply on a new cluster was refused "not deployed and ready (kube/exporter rollout: 0/0 pods ready, 0 updated;
    kube/exporter pods ready: not checked)" with "deploy what is missing", where nothing is missing: the metrics come
    when GPU nodes do, and the alarms should be there then."""
    cluster, verify = stack
    cluster.nodes = [n for n in cluster.nodes if n["metadata"]["name"] == "cpu-node-1"]
    cluster.pods = []
    cluster.refresh_status()
    code, checks = verify(*ONLY_KUBE)
    rollout = checks[("kube", "exporter rollout")]
    assert rollout["status"] != "fail", rollout
    assert checks[COVERAGE]["status"] == "warn" and code == 0, _failures(checks)
    moto.reset()
    code, stdout, stderr = cli("apply", "--dry-run")
    assert "not checked" not in stderr and "deploy what is missing" not in stderr, stderr
    assert code == 0, stderr
    assert "metrics come once GPU nodes join" in stderr and "within about" not in stderr, stderr  # no wait helps
    assert checks[COVERAGE]["fix"].startswith("none while the GPU node group is scaled to zero"), checks[COVERAGE]


def test_no_exporter_daemonset_before_the_first_gpu_node_is_not_an_exporter_to_install(stack):
    """GPU nodes launched from zero, none yet: the GPU operator creates no DaemonSet while no node carries its GPU
    labels ("No GPU node in the cluster, do not create DaemonSets"). Verify failed "no DaemonSet
    gpu-operator/nvidia-dcgm-exporter ..., and none in any namespace labelled ..." with the fix "install the DCGM exporter
    (gpu-operator)", cause not deployed, sending the user to install what the operator makes with the first GPU node.
    With a GPU node there and no exporter DaemonSet, that failure stands."""
    cluster, verify = stack
    gpu_nodes = [n for n in cluster.nodes if n["metadata"]["name"] != "cpu-node-1"]
    assert gpu_nodes and all("nvidia.com/gpu" in n["status"]["capacity"] for n in gpu_nodes)
    cluster.nodes = [n for n in cluster.nodes if n["metadata"]["name"] == "cpu-node-1"]
    cluster.pods = []
    # the only DaemonSet there: the cluster's own, no exporter's
    cluster.daemonset["metadata"].update(name="aws-node", namespace="kube-system", labels={"k8s-app": "aws-node"})
    cluster.refresh_status()
    check = verify(*ONLY_KUBE)[1][("kube", "exporter DaemonSet")]
    assert check["status"] == "warn", check
    assert "the GPU operator creates its exporter DaemonSet when the first GPU node joins" in check["detail"], check
    assert "install the DCGM exporter" not in check["fix"], check
    cluster.nodes.append(gpu_nodes[0])  # a GPU node, and still no exporter DaemonSet: not deployed
    check = verify(*ONLY_KUBE)[1][("kube", "exporter DaemonSet")]
    assert check["status"] == "fail" and check["fix"].startswith("install the DCGM exporter (gpu-operator)"), check


def test_a_helm_install_with_exporter_deployment_left_at_gpu_operator_is_told_to_write_the_deployment(stack, tmp_path):
    """The chart installed in dcgm-exporter (DaemonSet dcgm-exporter, the helm style's default name), gpudash.yaml
    writing exporter.namespace: dcgm-exporter and leaving exporter.deployment at gpu-operator. The DaemonSet the
    settings name for that style (nvidia-dcgm-exporter) is absent, the one there is read in its place, and the GPU
    node coverage says its pods are "not a DaemonSet the settings name" with the fix "name dcgm-exporter/dcgm-exporter
    in exporter.more_daemonsets" (the advice a34d0c3 removed for a DaemonSet named in exporter.daemonset); the
    DaemonSet check's fix is "write exporter.daemonset: dcgm-exporter", which leaves the agent's job keeping
    app=nvidia-dcgm-exporter pods only. Meanwhile the exporter Service check says "write exporter.deployment: helm":
    one run, three different fixes. The one that fixes it is exporter.deployment: helm."""
    cluster, verify = stack
    _helm_chart_install(cluster)
    _owned_by(cluster, "dcgm-exporter")
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  namespace: dcgm-exporter\n")
    code, checks = verify(*ONLY_KUBE, "--config", str(config))
    fix = "write exporter.deployment: helm in gpudash.yaml, then generate and apply again"
    failures = _failures(checks)
    assert checks[("kube", "exporter Service")]["fix"] == fix  # what the product itself says elsewhere
    assert "more_daemonsets" not in failures[COVERAGE][1] and "not a DaemonSet the settings name" not in \
        failures[COVERAGE][0], failures[COVERAGE]
    assert failures[COVERAGE][1] == fix, failures[COVERAGE]
    assert "exporter.deployment: helm" in failures[("kube", "exporter DaemonSet")][1], \
        failures[("kube", "exporter DaemonSet")]


def test_the_charts_own_service_monitor_under_settings_of_the_operator_style_is_told_to_write_the_deployment(
        stack, tmp_path):
    """The chart installed in dcgm-exporter with its own ServiceMonitor (selecting app.kubernetes.io/name=
    dcgm-exporter), gpudash.yaml leaving exporter.deployment at gpu-operator. The scrape-config check said "no
    ServiceMonitor selects the exporter" with the fix "apply build/k8s/servicemonitor.yaml", whose selector
    (app=nvidia-dcgm-exporter) selects nothing there; every other check says to write exporter.deployment: helm."""
    cluster, verify = stack
    _helm_chart_install(cluster)
    _owned_by(cluster, "dcgm-exporter")
    monitor = cluster.service_monitors[0]
    monitor["metadata"].update(name="dcgm-exporter", namespace="dcgm-exporter")
    monitor["spec"]["selector"] = {"matchLabels": {"app.kubernetes.io/name": "dcgm-exporter"}}
    monitor["spec"]["namespaceSelector"] = {"matchNames": ["dcgm-exporter"]}
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  namespace: dcgm-exporter\n")
    code, checks = verify("--skip", "exporter", "--skip", "cloudwatch", "--config", str(config))
    fix = "write exporter.deployment: helm in gpudash.yaml, then generate and apply again"
    assert checks[("kube", "exporter Service")]["fix"] == fix
    scrape = checks[("kube", "Prometheus scrape config")]
    assert scrape["status"] != "ok" and scrape["fix"] == fix, scrape


def test_the_operator_exporter_under_a_cluster_entry_saying_helm_is_told_to_write_the_deployment(stack, tmp_path):
    """Cluster gpu-cluster's entry says exporter: {deployment: helm}; the GPU operator's exporter runs there. The
    coverage said its pods are "not a DaemonSet the settings name" (fix: more_daemonsets), the DaemonSet check
    "write exporter.daemonset: nvidia-dcgm-exporter" (still the helm style: its label keeps no pod), the Service
    check "write exporter: {deployment: gpu-operator} in cluster gpu-cluster's entry of clusters", which is the fix."""
    cluster, verify = stack
    _owned_by(cluster, "nvidia-dcgm-exporter")
    config = tmp_path / "gpudash.yaml"
    config.write_text("clusters:\n  - {name: gpu-cluster, region: us-east-1, exporter: {deployment: helm}}\n"
                      "  - {name: b, region: us-east-1}\n")
    code, checks = verify(*ONLY_KUBE, "--config", str(config))
    fix = "write exporter: {deployment: gpu-operator} in cluster gpu-cluster's entry of clusters, then generate and " \
          "apply again"
    failures = _failures(checks)
    assert checks[("kube", "exporter Service")]["fix"] == fix
    assert failures[COVERAGE][1] == fix, failures[COVERAGE]
    assert "deployment: gpu-operator" in failures[("kube", "exporter DaemonSet")][1], \
        failures[("kube", "exporter DaemonSet")]


def test_pods_of_the_named_daemonset_without_an_exporter_label_are_not_told_to_fix_a_node_selector(stack):
    """The DaemonSet the settings name (labelled app=nvidia-dcgm-exporter itself, 2/2 ready) runs pods labelled
    app=my-dcgm only: the agent's job keeps none. Verify said "exporter DaemonSet: ok", and the coverage "GPU nodes
    without an exporter pod: gpu-node-a, gpu-node-b" with "check the DaemonSet's nodeSelector and tolerations"
    (cause not-deployed): the pods run on both nodes; what is wrong is their label (the pod template's)."""
    cluster, verify = stack
    _owned_by(cluster, "nvidia-dcgm-exporter")
    cluster.daemonset["spec"]["template"]["metadata"]["labels"] = {"app": "my-dcgm"}
    for pod in cluster.pods:
        pod["metadata"]["labels"] = {"app": "my-dcgm"}
    code, checks = verify(*ONLY_KUBE)
    failures = _failures(checks)
    assert code == 1
    assert "nodeSelector" not in failures[COVERAGE][1] and "without an exporter pod" not in failures[COVERAGE][0], \
        failures[COVERAGE]
    assert "app=nvidia-dcgm-exporter" in failures[COVERAGE][1], failures[COVERAGE]
    assert checks[("kube", "exporter pods ready")]["cause"] != "not-deployed"
    assert checks[("kube", "exporter DaemonSet")]["status"] == "fail", checks[("kube", "exporter DaemonSet")]


def test_a_service_monitor_selecting_the_exporter_from_another_namespace_is_found(stack):
    """kube-prometheus-stack users keep ServiceMonitors in `monitoring`: one there with namespaceSelector any: true (or
    matchNames: [gpu-operator]) selects the exporter's Service, and Prometheus scrapes it. With prometheus_stack.namespace
    unset, verify read ServiceMonitors in gpu-operator only and said "no ServiceMonitor selects the exporter", fix "apply
    build/k8s/servicemonitor.yaml": a second ServiceMonitor over the same targets."""
    cluster, verify = stack
    (monitor,) = cluster.service_monitors
    monitor["metadata"]["namespace"] = "monitoring"
    for selector in ({"any": True}, {"matchNames": ["gpu-operator"]}):
        monitor["spec"]["namespaceSelector"] = selector
        check = verify("--skip", "exporter", "--skip", "cloudwatch")[1][("kube", "Prometheus scrape config")]
        assert check["detail"] != "no ServiceMonitor selects the exporter", (selector, check)


def test_a_service_monitor_whose_selector_the_service_does_not_match_does_not_select_it(stack):
    """A ServiceMonitor selects Services carrying every label of its matchLabels (and meeting its matchExpressions):
    one asking for app=nvidia-dcgm-exporter and release=kube-prometheus-stack selects no exporter Service here (it
    carries no `release`), and Prometheus scrapes nothing through it. Verify looked at the one label and said "ok"."""
    cluster, verify = stack
    (monitor,) = cluster.service_monitors
    monitor["spec"]["selector"]["matchLabels"] = {**monitor["spec"]["selector"]["matchLabels"],
                                                  "release": "kube-prometheus-stack"}
    check = verify("--skip", "exporter", "--skip", "cloudwatch")[1][("kube", "Prometheus scrape config")]
    assert check["status"] != "ok", check


def test_a_service_monitor_selecting_the_exporter_by_match_expressions_is_found(stack):
    """A ServiceMonitor selects Services by a Kubernetes label selector, matchExpressions as well as matchLabels: one
    with app In [nvidia-dcgm-exporter] and release NotIn [other] (the Service carries no release) and no matchLabels
    selects the exporter's Service, and Prometheus scrapes it; verify read matchLabels only and said "no ServiceMonitor
    selects the exporter". Adding app DoesNotExist makes it select none."""
    cluster, verify = stack
    (monitor,) = cluster.service_monitors
    monitor["spec"]["selector"] = {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["nvidia-dcgm-exporter"]},
        {"key": "release", "operator": "NotIn", "values": ["other"]}]}
    name = ("kube", "Prometheus scrape config")
    check = verify("--skip", "exporter", "--skip", "cloudwatch")[1][name]
    assert check["status"] == "ok", check
    monitor["spec"]["selector"]["matchExpressions"].append({"key": "app", "operator": "DoesNotExist"})
    check = verify("--skip", "exporter", "--skip", "cloudwatch")[1][name]
    assert (check["status"], check["detail"]) == ("warn", "no ServiceMonitor selects the exporter"), check


ROLLOUT = ("kube", "exporter rollout")


def test_the_exporter_rollout_is_judged_as_kubectl_rollout_status_judges_it(stack):
    """`kubectl rollout status daemonset` waits until the controller has observed the DaemonSet's generation, every
    scheduled pod runs the current template and every one is available (ready for minReadySeconds). Verify compared
    numberReady and updatedNumberScheduled with the desired count only: a spec just changed (generation 2, the
    controller's status still of generation 1, 2/2 ready) read "ok: 2/2 pods ready", as did a DaemonSet just created
    (no status yet: 0/0) and one whose pods are ready but not yet available."""
    cluster, verify = stack
    wait = "wait for it: kubectl -n gpu-operator rollout status daemonset/nvidia-dcgm-exporter"
    cluster.daemonset["metadata"]["generation"] = 2  # a new spec applied; the controller has not caught up
    rollout = verify(*ONLY_KUBE)[1][ROLLOUT]
    assert (rollout["status"], rollout["detail"], rollout["fix"]) == ("fail", (
        "rolling out: the DaemonSet controller has not yet observed generation 2 (observed 1), so its counts (2/2 "
        "pods ready) are an earlier spec's"), wait), rollout
    cluster.daemonset["metadata"]["generation"] = 1  # just created: the controller has written no status yet
    cluster.daemonset["status"] = {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0,
                                   "numberReady": 0}
    code, checks = verify(*ONLY_KUBE)
    assert (checks[ROLLOUT]["status"], checks[ROLLOUT]["detail"], checks[ROLLOUT]["cause"]) == ("fail", (
        "rolling out: the DaemonSet controller has not yet observed generation 1 (observed none), so its counts (0/0 "
        "pods ready) are an earlier spec's"), "not-deployed"), checks[ROLLOUT]
    assert code == 1
    cluster.refresh_status()  # observed; one node's pod still of the old template
    cluster.daemonset["status"]["updatedNumberScheduled"] = 1
    rollout = verify(*ONLY_KUBE)[1][ROLLOUT]
    assert (rollout["status"], rollout["detail"]) == (
        "fail", "rolling out: 1 of 2 pods run the current pod template, 2/2 available"), rollout
    cluster.refresh_status()  # every pod updated and ready, one not yet available (minReadySeconds)
    cluster.daemonset["status"]["numberAvailable"] = 1
    rollout = verify(*ONLY_KUBE)[1][ROLLOUT]
    assert (rollout["status"], rollout["detail"]) == (
        "fail", "1/2 pods available (2 ready), 2 of 2 on the current pod template"), rollout
    # OnDelete: an older template's pod stays until deleted, serving: said, not a rollout that never ends
    cluster.refresh_status()
    cluster.daemonset["status"]["updatedNumberScheduled"] = 1
    cluster.daemonset["spec"]["updateStrategy"] = {"type": "OnDelete"}
    rollout = verify(*ONLY_KUBE)[1][ROLLOUT]
    assert (rollout["status"], rollout["detail"]) == ("warn", (
        "2/2 pods available; 1 of 2 run the current pod template (updateStrategy OnDelete: the others keep the older "
        "one until they are deleted)")), rollout
    cluster.daemonset["spec"].pop("updateStrategy")
    cluster.refresh_status()
    code, checks = verify(*ONLY_KUBE)
    assert (checks[ROLLOUT]["status"], checks[ROLLOUT]["detail"]) == ("ok", "2/2 pods ready") and code == 0


def _chart_labels(cluster, release: str = "dcgm-exporter") -> None:
    """The labels the dcgm-exporter chart writes on its DaemonSet (its `dcgm-exporter.labels` template)."""
    cluster.daemonset["metadata"]["labels"].update({
        "helm.sh/chart": "dcgm-exporter-4.8.2", "app.kubernetes.io/instance": release,
        "app.kubernetes.io/version": "4.8.2", "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/component": "dcgm-exporter"})


def test_settings_of_the_static_style_over_the_charts_exporter_are_told_to_write_the_deployment(stack, tmp_path):
    """gpudash.yaml says exporter.deployment: static; the cluster runs the dcgm-exporter chart (helm.sh/chart labels
    on its DaemonSet, container `exporter`). The two share the pod label and the Service, so the agent keeps its pods;
    only the container the data-missing rule reads differs. Verify said "name its container dcgm-exporter" (the chart
    names it `exporter`, no value renames it); the one fix is exporter.deployment: helm. The reverse (helm settings
    over the static manifest's exporter) is told exporter.deployment: static."""
    cluster, verify = stack
    _helm_chart_install(cluster)
    _owned_by(cluster, "dcgm-exporter")
    _chart_labels(cluster)
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  deployment: static\n  namespace: dcgm-exporter\n")
    in_use = ("--skip", "exporter", "--skip", "cloudwatch")  # Prometheus in use: the rule's container matters
    checks = verify(*in_use, "--config", str(config))[1]
    name = ("kube", "exporter container name")
    assert (checks[name]["status"], checks[name]["fix"]) == (
        "warn", "write exporter.deployment: helm in gpudash.yaml, then generate and apply again"), checks[name]
    assert checks[name]["detail"].endswith("; DaemonSet dcgm-exporter/dcgm-exporter is the helm style's (container "
                                           "exporter, helm.sh/chart=dcgm-exporter-4.8.2), not static's")
    assert "name its container" not in _advice(checks), _advice(checks)
    config.write_text("exporter:\n  deployment: helm\n  namespace: dcgm-exporter\n")
    assert name not in verify(*in_use, "--config", str(config))[1]
    # the static manifest's exporter (container dcgm-exporter, no chart labels) under settings of the helm style
    cluster.daemonset["metadata"]["labels"] = {"app.kubernetes.io/name": "dcgm-exporter"}
    cluster.daemonset["spec"]["template"]["spec"]["containers"][0]["name"] = "dcgm-exporter"
    checks = verify(*in_use, "--config", str(config))[1]
    assert checks[name]["fix"] == "write exporter.deployment: static in gpudash.yaml, then generate and apply again"


ONLY_EXPORTER = ("--skip", "kube", "--skip", "prometheus", "--skip", "cloudwatch")


def test_an_exporter_pod_being_deleted_is_said_terminating_not_not_ready(stack):
    """A rollout deletes the exporter's pods (their containers still ready, the EndpointSlices marking them
    terminating, not ready) before their replacements start: the proxy answers 503 and verify said the pods "are not
    ready" with the fix to describe a pod and read its logs. It says they are terminating, and to wait."""
    cluster, verify = stack
    for pod in cluster.pods:
        pod["metadata"]["deletionTimestamp"] = "2026-12-02T07:00:00Z"
    check = verify(*ONLY_EXPORTER)[1][("exporter", "metrics endpoint")]
    assert (check["status"], check["detail"]) == ("fail", (
        "Service gpu-operator/nvidia-dcgm-exporter has no ready endpoints: its 2 exporter pods (nvidia-dcgm-exporter-ax "
        "on gpu-node-a, nvidia-dcgm-exporter-bx on gpu-node-b) are terminating (being deleted: by a rollout that "
        "replaces them, or a node drain), so the API server has no exporter to read /metrics from (and Prometheus none "
        "to scrape through it)")), check
    assert check["fix"].startswith("wait for the pods that replace them"), check


def test_a_user_refused_the_services_still_reads_metrics_through_the_service_proxy(stack):
    """A kubeconfig user refused listing Services (403) may still have services/proxy, a permission of its own: the
    exporter group ended at the Services refusal ("reachable" failed), the proxy never tried. It reads /metrics
    through the settings' Service name; refused the proxy too, it fails naming both."""
    cluster, verify = stack
    cluster.readable_only = {"services": ()}
    checks = verify(*ONLY_EXPORTER)[1]
    assert ("exporter", "reachable") not in checks, checks[("exporter", "reachable")]
    assert checks[("exporter", "metrics endpoint")]["status"] == "ok", checks[("exporter", "metrics endpoint")]
    assert checks[("exporter", "metrics endpoint")]["detail"].startswith(
        "service proxy gpu-operator/nvidia-dcgm-exporter: "), checks[("exporter", "metrics endpoint")]
    cluster.readable_only = {"services": (), "services/proxy": ()}
    failed = [c for c in verify(*ONLY_EXPORTER)[1].values() if c["status"] == "fail"]
    assert len(failed) == 1 and "services/proxy" not in failed[0]["detail"], failed
    detail = failed[0]["detail"]
    assert "refused access to service proxy gpu-operator/nvidia-dcgm-exporter (403)" in detail, detail
    assert "Services in gpu-operator could not be listed" in detail, detail


def test_a_503_whose_endpointslices_cannot_be_read_keeps_the_503_and_says_both(stack):
    """The service proxy answers 503 (no exporter pod ready) and the EndpointSlices that would tell why answer 500:
    the 500 alone was reported, as if the exporter had never been asked. Both are said, the 503 first."""
    cluster, verify = stack
    cluster.pods = [cluster.exporter_pod(node, ready=False) for node in ("gpu-node-a", "gpu-node-b")]
    cluster.refresh_status()
    cluster.failing = {"/apis/discovery.k8s.io/v1/namespaces/gpu-operator/endpointslices": 500}
    code, checks = verify(*ONLY_EXPORTER)
    failed = [c for c in checks.values() if c["status"] == "fail"]
    assert code != 0 and len(failed) == 1, checks
    detail = failed[0]["detail"]
    assert "answered 503 for service proxy" in detail and "EndpointSlices" in detail and "500" in detail, detail
    assert detail.index("503") < detail.index("500"), detail


def test_an_exporter_service_without_ready_endpoints_is_said_so_not_blamed_on_the_api_server(stack):
    """The API server's service proxy answers 503 "no endpoints available for service" where no pod behind the
    Service is ready: every exporter pod not ready, every GPU node scaled away, or a Service whose selector matches
    none of the exporter's pods. Verify said "the Kubernetes API answered 503 for service proxy ...: Service
    Unavailable", fix "check the cluster's API server". It says what the Service's EndpointSlices say."""
    cluster, verify = stack
    name = ("exporter", "metrics endpoint")
    look = "kubectl -n gpu-operator get endpointslices -l kubernetes.io/service-name=nvidia-dcgm-exporter"
    cluster.pods = [cluster.exporter_pod(node, ready=False) for node in ("gpu-node-a", "gpu-node-b")]
    cluster.refresh_status()
    code, checks = verify(*ONLY_EXPORTER)
    assert ("exporter", "reachable") not in checks and code == 1, checks
    assert (checks[name]["status"], checks[name]["detail"], checks[name]["fix"]) == ("fail", (
        "Service gpu-operator/nvidia-dcgm-exporter has no ready endpoints: its 2 exporter pods (nvidia-dcgm-exporter-ax "
        "on gpu-node-a, nvidia-dcgm-exporter-bx on gpu-node-b) are not ready, so the API server has no exporter to "
        "read /metrics from (and Prometheus none to scrape through it)"),
        f"kubectl -n gpu-operator describe pod nvidia-dcgm-exporter-ax; look at its events and logs ({look})")
    cluster.readable_only = {"endpointslices": ()}  # a user who may not read them: the 503's two causes, said
    check = verify(*ONLY_EXPORTER)[1][name]
    assert (check["status"], check["detail"]) == ("fail", (
        "the API server's proxy to Service gpu-operator/nvidia-dcgm-exporter answered 503: the Service has no ready "
        "endpoint, or the API server is unavailable; its EndpointSlices, which tell which, could not be read (403)"))
    cluster.readable_only = {}
    no_endpoints = (
        "Service gpu-operator/nvidia-dcgm-exporter has no endpoints: no running pod matches its selector, so the API "
        "server has no exporter to read /metrics from (and Prometheus none to scrape through it)")
    cluster.pods = []  # the GPU node group scaled to zero
    cluster.refresh_status()
    check = verify(*ONLY_EXPORTER)[1][name]
    assert (check["status"], check["detail"]) == ("fail", no_endpoints), check
    cluster.pods = [cluster.exporter_pod(node) for node in ("gpu-node-a", "gpu-node-b")]
    cluster.refresh_status()
    assert verify(*ONLY_EXPORTER)[1][name]["status"] == "ok"
    (service,) = cluster.services.values()
    service["spec"]["selector"] = {"app": "dcgm-exporter"}  # selects none of the exporter's pods
    check = verify(*ONLY_EXPORTER)[1][name]
    assert (check["status"], check["detail"]) == ("fail", no_endpoints), check
    assert check["fix"].endswith(f"make the Service's spec.selector match their labels ({look})"), check
    # the kube group tells it from the Service and the DaemonSet: the push preflight published "with a wait" for
    # series that never come (Prometheus discovers no target through a Service with no endpoint)
    check = verify(*ONLY_KUBE)[1][("kube", "exporter Service")]
    assert (check["status"], check["detail"], check["cause"]) == ("fail", (
        "nvidia-dcgm-exporter selects app=dcgm-exporter, none of the pods of DaemonSet "
        "gpu-operator/nvidia-dcgm-exporter (labelled app=nvidia-dcgm-exporter): the Service has no endpoint, so "
        "Prometheus discovers no target through it and verify cannot read /metrics"), "not-deployed"), check


SCRAPE = ("kube", "Prometheus scrape config")
ONLY_KUBE_PROMETHEUS = ("--skip", "exporter", "--skip", "cloudwatch")  # Prometheus in use, its group not needed


def test_a_user_with_namespace_only_rights_gets_the_service_monitors_of_the_namespaces_that_matter(stack, tmp_path):
    """A kubeconfig user allowed to list ServiceMonitors in some namespaces only (a Role, not a ClusterRole): listing
    them in every namespace (7ede69b) is refused 403, and the whole kube group ended there ("reachable: the Kubernetes
    API refused access to ServiceMonitors in every namespace (403)"), where the namespaced read worked before. Verify
    reads them in the namespaces that matter (the exporter's, prometheus_stack.namespace, the Prometheus objects' own
    and those their serviceMonitorNamespaceSelector names) and says what it could not read; finding none there is
    "cannot tell", never "no ServiceMonitor selects the exporter"."""
    cluster, verify = stack
    cluster.readable_only = {"servicemonitors": ("gpu-operator",)}
    code, checks = verify(*ONLY_KUBE_PROMETHEUS)
    refused = "the Kubernetes API refused listing them in every namespace (403)"
    assert (checks[SCRAPE]["status"], checks[SCRAPE]["detail"]) == ("ok", (
        f"ServiceMonitor gpudash-dcgm-exporter ({NO_PROMETHEUS_OBJECT}); ServiceMonitors were read in gpu-operator "
        f"only: {refused}")), checks[SCRAPE]
    assert ("kube", "reachable") not in checks and _failures(checks) == {} and code == 0, _failures(checks)
    # Prometheus objects unreadable too: whether one selects it cannot be told
    cluster.readable_only["prometheuses"] = ("gpu-operator",)
    check = verify(*ONLY_KUBE_PROMETHEUS)[1][SCRAPE]
    assert (check["status"], check["detail"], check["cause"]) == ("warn", (
        "ServiceMonitor gpudash-dcgm-exporter selects the exporter; cannot tell whether a Prometheus selects it: the "
        "Kubernetes API refused listing Prometheus objects in every namespace (403); ServiceMonitors were read in "
        f"gpu-operator only: {refused}"), "unreachable"), check
    del cluster.readable_only["prometheuses"]
    # gpudash's ServiceMonitor in prometheus_stack.namespace, which the user may read too
    (monitor,) = cluster.service_monitors
    monitor["metadata"]["namespace"] = "monitoring"
    cluster.readable_only["servicemonitors"] = ("gpu-operator", "monitoring")
    config = tmp_path / "gpudash.yaml"
    config.write_text("prometheus_stack:\n  namespace: monitoring\n")
    check = verify(*ONLY_KUBE_PROMETHEUS, "--config", str(config))[1][SCRAPE]
    assert (check["status"], check["detail"]) == ("ok", (
        f"ServiceMonitor gpudash-dcgm-exporter ({NO_PROMETHEUS_OBJECT}); ServiceMonitors were read in gpu-operator, "
        f"monitoring only: {refused}")), check
    # one the user may not read: not "no ServiceMonitor selects the exporter", and the publish preflight says it
    # cannot tell rather than that it is missing
    cluster.readable_only["servicemonitors"] = ("gpu-operator",)
    check = verify(*ONLY_KUBE_PROMETHEUS, "--config", str(config))[1][SCRAPE]
    assert (check["status"], check["detail"], check["cause"]) == ("warn", (
        "cannot tell whether a ServiceMonitor selects the exporter: none in gpu-operator does; ServiceMonitors were "
        "read in gpu-operator only: the Kubernetes API refused listing them in every namespace (403), monitoring "
        "(403)"), "unreachable"), check
    assert check["fix"].startswith("grant the kubeconfig user list on servicemonitors.monitoring.coreos.com"), check
    # the namespace a Prometheus object reads ServiceMonitors in (serviceMonitorNamespaceSelector by name) is read
    monitor["metadata"]["namespace"] = "team-mon"
    cluster.readable_only = {"servicemonitors": ("gpu-operator", "team-mon")}
    prometheus = cluster.kube_prometheus_stack()
    prometheus["spec"].update(serviceMonitorSelector={}, serviceMonitorNamespaceSelector={
        "matchLabels": {"kubernetes.io/metadata.name": "team-mon"}})
    cluster.prometheuses = [prometheus]
    check = verify(*ONLY_KUBE_PROMETHEUS)[1][SCRAPE]
    assert (check["status"], check["detail"]) == ("ok", (
        "ServiceMonitor gpudash-dcgm-exporter (selected: team-mon/gpudash-dcgm-exporter by Prometheus "
        "monitoring/kube-prometheus-stack-prometheus); ServiceMonitors were read in gpu-operator, team-mon only: "
        f"{refused}, monitoring (403)")), check  # the Prometheus' own namespace, tried


def test_a_service_monitor_no_prometheus_selects_is_not_a_deployed_scrape_path(stack, tmp_path):
    """kube-prometheus-stack's Prometheus selects ServiceMonitors labelled release=<its release> (its default
    serviceMonitorSelectorNilUsesHelmValues), in every namespace. gpudash's ServiceMonitor written without
    prometheus_stack.release carries no release label: Prometheus never scrapes through it, and verify said "ok"
    (and push on a new cluster published, saying series would come). It fails naming what the Prometheus selects and
    the setting to write; each way a Prometheus leaves it out (its labels, its own namespace only, the namespace's
    labels) is told."""
    cluster, verify = stack
    cluster.prometheuses = [cluster.kube_prometheus_stack()]
    (monitor,) = cluster.service_monitors
    monitor["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "gpudash"}  # as generated without a release
    code, checks = verify(*ONLY_KUBE_PROMETHEUS)
    assert (checks[SCRAPE]["status"], checks[SCRAPE]["detail"], checks[SCRAPE]["fix"]) == ("fail", (
        "ServiceMonitor gpudash-dcgm-exporter selects the exporter, but no Prometheus selects it: Prometheus "
        "monitoring/kube-prometheus-stack-prometheus selects ServiceMonitors labelled release=kube-prometheus-stack: "
        "Prometheus scrapes nothing through it"),
        "write prometheus_stack.release: kube-prometheus-stack in gpudash.yaml (gpudash labels its ServiceMonitor "
        "release=<prometheus_stack.release>), generate and apply build/k8s/servicemonitor.yaml again"), checks[SCRAPE]
    assert code == 1
    # written as the fix says: the build labels it so, and the Prometheus selects it
    config = tmp_path / "gpudash.yaml"
    config.write_text("prometheus_stack:\n  release: kube-prometheus-stack\n")
    (built,) = yaml.safe_load_all(encode(build(load_project(config), grafana=False))["k8s/servicemonitor.yaml"])
    monitor["metadata"]["labels"] = built["metadata"]["labels"]
    check = verify(*ONLY_KUBE_PROMETHEUS, "--config", str(config))[1][SCRAPE]
    assert (check["status"], check["detail"]) == ("ok", (
        "ServiceMonitor gpudash-dcgm-exporter (selected: gpu-operator/gpudash-dcgm-exporter by Prometheus "
        "monitoring/kube-prometheus-stack-prometheus)")), check
    # a Prometheus reading ServiceMonitors of its own namespace only (serviceMonitorNamespaceSelector unset)
    del cluster.prometheuses[0]["spec"]["serviceMonitorNamespaceSelector"]
    check = verify(*ONLY_KUBE_PROMETHEUS, "--config", str(config))[1][SCRAPE]
    assert (check["status"], check["detail"]) == ("fail", (
        "ServiceMonitor gpudash-dcgm-exporter selects the exporter, but no Prometheus selects it: Prometheus "
        "monitoring/kube-prometheus-stack-prometheus reads ServiceMonitors in its own namespace monitoring only: "
        "Prometheus scrapes nothing through it")), check
    assert check["fix"].startswith("write prometheus_stack.release: kube-prometheus-stack and "
                                   "prometheus_stack.namespace: monitoring"), check
    # namespaces chosen by their labels: the exporter's namespace labelled so, or not
    cluster.prometheuses[0]["spec"]["serviceMonitorNamespaceSelector"] = {"matchLabels": {"monitoring": "on"}}
    check = verify(*ONLY_KUBE_PROMETHEUS, "--config", str(config))[1][SCRAPE]
    assert check["status"] == "fail" and "reads ServiceMonitors in namespaces labelled monitoring=on" in \
        check["detail"], check
    cluster.namespace_labels["gpu-operator"] = {"monitoring": "on"}
    assert verify(*ONLY_KUBE_PROMETHEUS, "--config", str(config))[1][SCRAPE]["status"] == "ok"
    # a user who may not read the namespace's labels: cannot tell, not a failure
    cluster.readable_only = {"namespaces": ()}
    check = verify(*ONLY_KUBE_PROMETHEUS, "--config", str(config))[1][SCRAPE]
    assert (check["status"], check["cause"]) == ("warn", "unreachable"), check
    cluster.readable_only = {}
    cluster.namespace_labels.clear()
    # a PrometheusAgent (remote-writing, to Amazon Managed Prometheus say) selects ServiceMonitors as a Prometheus does
    agent = {**cluster.kube_prometheus_stack(), "apiVersion": "monitoring.coreos.com/v1alpha1",
             "kind": "PrometheusAgent", "metadata": {"name": "amp-agent", "namespace": "monitoring"}}
    agent["spec"] = {"serviceMonitorSelector": {}, "serviceMonitorNamespaceSelector": {}}
    cluster.prometheuses.append(agent)
    check = verify(*ONLY_KUBE_PROMETHEUS, "--config", str(config))[1][SCRAPE]
    assert (check["status"], check["detail"]) == ("ok", (
        "ServiceMonitor gpudash-dcgm-exporter (selected: gpu-operator/gpudash-dcgm-exporter by PrometheusAgent "
        "monitoring/amp-agent)")), check


def test_push_on_a_new_cluster_whose_service_monitors_cannot_be_read_says_it_cannot_tell_once(
        stack, prometheus_new, cli, reference):
    """No data yet and a user refused ServiceMonitors everywhere: push is refused, and said "kube/Prometheus scrape
    config: cannot tell whether it is deployed: cannot tell whether a ServiceMonitor selects the exporter; ...". It
    says it cannot tell once."""
    from tests.support.grafana_server import ADMIN, GrafanaTestServer

    cluster, _ = stack
    cluster.readable_only = {"servicemonitors": ()}
    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana:
        env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN, "PROMETHEUS_URL": prometheus_new.url}
        code, _, stderr = cli("push", env=env)
        assert code == 3 and grafana.state.dashboards == {}, stderr
    assert "kube/Prometheus scrape config: cannot tell whether a ServiceMonitor selects the exporter; no " \
           "ServiceMonitor could be read" in stderr, stderr
    assert "cannot tell whether it is deployed: cannot tell" not in stderr, stderr


def test_push_on_a_new_cluster_is_refused_where_no_prometheus_selects_the_service_monitor(
        stack, prometheus_new, cli, reference):
    """No data yet, gpudash's ServiceMonitor selecting the exporter, and kube-prometheus-stack's Prometheus selecting
    ServiceMonitors labelled release=kube-prometheus-stack, which it does not carry: push published, promising series
    after the next reload. It is refused: the scrape path is not deployed."""
    from tests.support.grafana_server import ADMIN, GrafanaTestServer

    cluster, _ = stack
    cluster.prometheuses = [cluster.kube_prometheus_stack()]
    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana:
        env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN, "PROMETHEUS_URL": prometheus_new.url}
        code, _, stderr = cli("push", env=env)
        assert code == 3, stderr
        assert "kube/Prometheus scrape config: ServiceMonitor gpudash-dcgm-exporter selects the exporter, but no " \
               "Prometheus selects it" in stderr, stderr
        assert grafana.state.dashboards == {}


def test_a_user_with_namespace_only_rights_gets_every_check_it_can_read(stack):
    """A kubeconfig user with a Role in the exporter's and the agent's namespaces, no ClusterRole: listing DaemonSets
    in every namespace, the Nodes, and kube-state-metrics pods in any namespace are refused 403. The first refusal
    ended the kube group: one "reachable" failure, and nothing said of the DaemonSet, its rollout, its Service or the
    agent's ConfigMaps, all readable. Each check that needed a refused read now says it cannot tell and why; the rest
    are made; the DaemonSet check reads the exporter DaemonSets of the namespaces the settings name and says which it
    could not look for."""
    cluster, verify = stack
    cluster.readable_only = {resource: ("gpu-operator", "amazon-cloudwatch") for resource in (
        "daemonsets", "pods", "services", "servicemonitors", "configmaps", "deployments", "endpointslices")}
    cluster.readable_only["nodes"] = ()
    code, checks = verify("--skip", "cloudwatch")
    assert ("kube", "reachable") not in checks and code == 1, checks.get(("kube", "reachable"))
    made = {name: (c["status"], c["cause"]) for (group, name), c in checks.items() if group == "kube"}
    assert {name: made.get(name) for name in ("exporter rollout", "exporter Service", "pod labels setting",
                                              "counters CSV", "CloudWatch agent", "ConfigMap prometheus-config")} == {
        name: ("ok", "") for name in ("exporter rollout", "exporter Service", "pod labels setting", "counters CSV",
                                      "CloudWatch agent", "ConfigMap prometheus-config")}, made
    daemonset = checks[("kube", "exporter DaemonSet")]
    assert (daemonset["status"], daemonset["detail"]) == ("warn", (
        "exporter DaemonSets outside gpu-operator could not be looked for: the Kubernetes API refused listing "
        "DaemonSets in every namespace (403), so one there that no setting names (the agent would not scrape it, the "
        "Prometheus rule would judge it) is not told")), daemonset
    coverage = checks[COVERAGE]
    assert (coverage["status"], coverage["detail"], coverage["cause"]) == (
        "fail", "cannot tell: the Kubernetes API refused access to Nodes (403)", "unreachable"), coverage
    assert coverage["fix"] == ("check the kubeconfig user's RBAC (get/list on pods, nodes, daemonsets, deployments, "
                               "services, configmaps, endpointslices, servicemonitors, prometheuses, prometheusagents, "
                               "namespaces)")  # every kind verify reads
    assert checks[("kube", "kube-state-metrics")]["detail"] == (
        "cannot tell: the Kubernetes API refused access to kube-state-metrics pods in any namespace (403)")
    assert checks[("exporter", "metrics endpoint")]["status"] == "ok"


def test_apply_on_a_new_cluster_by_a_user_who_may_not_read_the_nodes_counts_the_ready_exporter_pods(stack, moto, cli):
    """No data yet and a kubeconfig user refused the Nodes: which nodes have GPUs cannot be read, so the GPU node
    coverage cannot tell, and "exporter pods ready" (which apply needs to publish with a wait) said it could not tell
    either, refusing apply on every new cluster, though the exporter's pods, readable, were ready. It counts them;
    with none ready it still cannot tell, and says why."""
    cluster, verify = stack
    moto.reset()
    cluster.readable_only = {"nodes": ()}
    checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus")[1]
    assert (checks[COVERAGE]["status"], checks[COVERAGE]["cause"]) == ("fail", "unreachable"), checks[COVERAGE]
    ready = checks[("kube", "exporter pods ready")]
    assert (ready["status"], ready["detail"]) == ("ok", "2 exporter pods ready on 2 nodes (whether every GPU node runs "
                                                        "one: GPU node coverage cannot tell)"), ready
    code, _, stderr = cli("apply", "--dry-run")
    assert code == 0 and "published anyway" in stderr, stderr
    cluster.pods = [cluster.exporter_pod(node, ready=False) for node in ("gpu-node-a", "gpu-node-b")]
    cluster.refresh_status()
    code, _, stderr = cli("apply", "--dry-run")
    assert code == 3, stderr
    assert ("kube/exporter pods ready: cannot tell whether it is deployed: the Kubernetes API refused access to Nodes "
            "(403)") in stderr, stderr


def test_a_user_who_may_not_read_the_nodes_is_not_told_ok_while_a_node_s_exporter_pod_is_not_ready(stack):
    """Nodes refused, one exporter pod ready on gpu-node-a and the one on gpu-node-b not ready (Pending): the
    DaemonSet is not all ready (kubectl shows 1/2), and with the Nodes readable verify fails "exporter not ready on
    gpu-node-b". It read "ok: 1 exporter pod ready on 1 node", the not-ready pod unsaid. Whether gpu-node-b has GPUs
    cannot be read, so it cannot tell, naming the node: never ok."""
    cluster, verify = stack
    cluster.readable_only = {"nodes": ()}
    cluster.pods = [cluster.exporter_pod("gpu-node-a"), cluster.exporter_pod("gpu-node-b", ready=False)]
    cluster.refresh_status()
    checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus")[1]
    ready = checks[("kube", "exporter pods ready")]
    assert ready["status"] != "ok", ready
    assert ready["detail"].startswith("exporter not ready on gpu-node-b (whether it is a GPU node: cannot tell: "), ready


def test_a_user_refused_the_exporter_namespace_gets_the_agent_checks_and_the_refusal_named(stack):
    """A kubeconfig user whose Role covers the agent's namespace only: reading the exporter DaemonSet is refused 403.
    The refusal ended the kube group ("reachable"), the agent's checks unread though readable. The DaemonSet check
    says it cannot tell, naming the refusal; the agent's checks are made."""
    cluster, verify = stack
    cluster.readable_only = {"daemonsets": ("amazon-cloudwatch",)}
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus")
    assert ("kube", "reachable") not in checks, checks.get(("kube", "reachable"))
    refused = "cannot tell: the Kubernetes API refused access to DaemonSet gpu-operator/nvidia-dcgm-exporter (403)"
    for name in ("exporter DaemonSet", "exporter rollout", "exporter pods ready"):  # the publish preflight reads two
        check = checks[("kube", name)]
        assert (check["status"], check["detail"], check["cause"]) == ("fail", refused, "unreachable"), check
    assert checks[("kube", "CloudWatch agent")]["status"] == "ok", checks[("kube", "CloudWatch agent")]
    # Services and ServiceMonitors readable: their checks are made (push's preflight said "Prometheus scrape config:
    # not checked")
    cluster.readable_only = {"daemonsets": ("amazon-cloudwatch",)}
    checks = verify(*ONLY_KUBE_PROMETHEUS)[1]
    assert {name: checks[("kube", name)]["status"] for name in ("exporter Service", "Prometheus scrape config")} == {
        "exporter Service": "ok", "Prometheus scrape config": "ok"}


def test_a_more_daemonsets_entry_the_user_may_not_read_is_that_entry_s_cannot_tell(stack, tmp_path):
    """exporter.more_daemonsets names a DaemonSet in a namespace the user's Role does not cover: its read is refused
    403. The refusal ended the kube group; it is that DaemonSet's rollout check's "cannot tell", the rest made."""
    cluster, verify = stack
    cluster.readable_only = {"daemonsets": ("gpu-operator", "amazon-cloudwatch")}
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  more_daemonsets: [gpu-addon/dcgm-exporter]\n")
    code, checks = verify("--skip", "cloudwatch", "--skip", "exporter", "--skip", "prometheus", "--config", str(config))
    assert ("kube", "reachable") not in checks, checks.get(("kube", "reachable"))
    assert checks[("kube", "CloudWatch agent")]["status"] == "ok"
    check = checks[("kube", "exporter rollout gpu-addon/dcgm-exporter")]
    assert (check["status"], check["detail"], check["cause"]) == ("fail", (
        "cannot tell: the Kubernetes API refused access to DaemonSet gpu-addon/dcgm-exporter (403)"), "unreachable")
    assert checks[("kube", "exporter rollout")]["status"] == "ok"


def test_a_service_monitor_endpoint_naming_a_service_port_other_than_the_exporter_s_scrapes_no_exporter(stack):
    """The exporter Service exposes two ports: gpu-metrics 9400 (the exporter) and http 8080 (a sidecar's). A
    ServiceMonitor whose endpoint selects port `http` makes Prometheus scrape 8080, not /metrics of the exporter:
    no DCGM series. Verify checked only that some Service names the port, and said "ok"."""
    cluster, verify = stack
    (service,) = cluster.services.values()
    service["spec"]["ports"].append({"name": "http", "port": 8080, "targetPort": 8080, "protocol": "TCP"})
    (monitor,) = cluster.service_monitors
    monitor["spec"]["endpoints"][0]["port"] = "http"
    check = verify(*ONLY_KUBE_PROMETHEUS)[1][SCRAPE]
    assert (check["status"], check["detail"], check["fix"]) == ("fail", (
        "ServiceMonitor gpudash-dcgm-exporter (port http) selects a Service port that is not the exporter's 9400 on any "
        "Service labelled app=nvidia-dcgm-exporter (nvidia-dcgm-exporter: gpu-metrics 9400, http 8080): Prometheus "
        "scrapes another port than the exporter's through it"), "point the ServiceMonitor's endpoint at port "
        "gpu-metrics (the Service's 9400), or apply build/k8s/servicemonitor.yaml in its place"), check


def test_prometheus_selectors_of_match_expressions_and_an_empty_namespace_selector_are_read_as_the_operator_does(
        stack):
    """prometheus-operator: serviceMonitorSelector is a label selector (matchExpressions too); a ServiceMonitor's
    namespaceSelector {} is its own namespace, `any: true` every one; a Prometheus with serviceMonitorNamespaceSelector
    unset reads ServiceMonitors in its own namespace only."""
    cluster, verify = stack
    prometheus = cluster.kube_prometheus_stack()
    prometheus["spec"]["serviceMonitorSelector"] = {"matchExpressions": [
        {"key": "release", "operator": "In", "values": ["kube-prometheus-stack", "other"]}]}
    cluster.prometheuses = [prometheus]
    (monitor,) = cluster.service_monitors
    monitor["metadata"]["labels"] = {"release": "kube-prometheus-stack"}
    assert verify(*ONLY_KUBE_PROMETHEUS)[1][SCRAPE]["status"] == "ok"
    prometheus["spec"]["serviceMonitorSelector"]["matchExpressions"][0]["operator"] = "NotIn"
    assert verify(*ONLY_KUBE_PROMETHEUS)[1][SCRAPE]["status"] == "fail"
    prometheus["spec"]["serviceMonitorSelector"]["matchExpressions"][0]["operator"] = "In"
    # the ServiceMonitor in monitoring with namespaceSelector {}: it selects Services in monitoring only
    monitor["metadata"]["namespace"] = "monitoring"
    monitor["spec"]["namespaceSelector"] = {}
    check = verify(*ONLY_KUBE_PROMETHEUS)[1][SCRAPE]
    assert (check["status"], check["detail"]) == ("warn", "no ServiceMonitor selects the exporter"), check
    monitor["spec"]["namespaceSelector"] = {"any": True}
    assert verify(*ONLY_KUBE_PROMETHEUS)[1][SCRAPE]["status"] == "ok"
    # the Prometheus reading its own namespace only (monitoring), the ServiceMonitor there: selected
    del prometheus["spec"]["serviceMonitorNamespaceSelector"]
    assert verify(*ONLY_KUBE_PROMETHEUS)[1][SCRAPE]["status"] == "ok"
    monitor["metadata"]["namespace"] = "gpu-operator"
    assert verify(*ONLY_KUBE_PROMETHEUS)[1][SCRAPE]["status"] == "fail"


def test_a_named_daemonset_absent_from_a_namespace_the_user_may_read_is_said_absent(stack, tmp_path):
    """Namespace-only rights (DaemonSets readable in gpu-operator), exporter.daemonset naming one that is not there
    and no exporter DaemonSet in gpu-operator: that it is absent is known (the namespaced reads answered); only
    whether one is elsewhere cannot be told. Verify said only "cannot tell" (the refused list in every namespace)."""
    cluster, verify = stack
    cluster.readable_only = {"daemonsets": ("gpu-operator", "amazon-cloudwatch")}
    cluster.daemonset["metadata"]["labels"] = {"app": "something-else"}
    cluster.daemonset["metadata"]["name"] = "other"
    config = tmp_path / "gpudash.yaml"
    config.write_text("exporter:\n  daemonset: nvidia-dcgm-exporter\n")
    check = verify(*ONLY_KUBE, "--config", str(config))[1][("kube", "exporter DaemonSet")]
    assert (check["status"], check["detail"]) == ("fail", (
        "no DaemonSet gpu-operator/nvidia-dcgm-exporter (exporter.daemonset), and none in gpu-operator labelled "
        "app=nvidia-dcgm-exporter or app.kubernetes.io/name=dcgm-exporter; exporter DaemonSets in other namespaces "
        "could not be looked for: the Kubernetes API refused listing DaemonSets in every namespace (403)")), check


def test_a_404_that_is_not_the_kubernetes_api_s_is_not_read_as_an_absent_daemonset(stack):
    """A proxy in front of the API server answers the DaemonSet's read with its own 404 page (text, not the API's
    Status NotFound). Verify read it as "no DaemonSet ...": not deployed, a false failure. It is not an API answer."""
    cluster, verify = stack
    meta = cluster.daemonset["metadata"]
    cluster.fronted[f"/apis/apps/v1/namespaces/{meta['namespace']}/daemonsets/{meta['name']}"] = (
        404, "<html><body><h1>404 Not Found</h1>nginx</body></html>")
    checks = verify(*ONLY_KUBE)[1]
    assert not any("no DaemonSet" in c["detail"] for c in checks.values()), checks
    assert [(c["status"], c["detail"].split(":")[0]) for c in checks.values() if "404" in c["detail"]] == [
        ("fail", "odd answer from DaemonSet gpu-operator/nvidia-dcgm-exporter")], checks


def test_an_exporter_daemonset_that_is_not_there_leaves_the_service_and_service_monitor_checked(stack):
    """No exporter DaemonSet at all (not yet installed, or deleted): verify said so, but made no exporter Service nor
    Prometheus scrape config check (push's preflight read "Prometheus scrape config: not checked"), though neither
    needs the DaemonSet. Both are made, as where the DaemonSet read is refused."""
    cluster, verify = stack
    cluster.daemonset["metadata"].update(name="something-else", labels={"app": "something-else"})
    checks = verify(*ONLY_KUBE_PROMETHEUS)[1]
    assert checks[("kube", "exporter DaemonSet")]["status"] == "fail", checks[("kube", "exporter DaemonSet")]
    made = {name: checks[("kube", name)]["status"] for name in ("exporter Service", "Prometheus scrape config")
            if ("kube", name) in checks}
    assert made == {"exporter Service": "ok", "Prometheus scrape config": "ok"}, made


def test_an_exporter_service_whose_target_port_names_no_port_of_the_pods_reaches_no_exporter(stack):
    """The exporter Service's 9400 port has targetPort `gpu-metrics`, a name no container port of the exporter's pods
    carries (the operator's names its 9400 port `metrics`): the EndpointSlice controller finds that port on no pod,
    so no endpoint serves it, Prometheus discovers no target through it and the API server's proxy answers 503 "no
    endpoints available", however ready the pods are. The kube group said "exporter Service: ok" (the push preflight
    published for series that never come), and the exporter group blamed the API server."""
    cluster, verify = stack
    (service,) = cluster.services.values()
    service["spec"]["ports"][0]["targetPort"] = "gpu-metrics"
    check = verify(*ONLY_KUBE)[1][("kube", "exporter Service")]
    assert (check["status"], check["detail"], check["cause"]) == ("fail", (
        "nvidia-dcgm-exporter's port 9400 targets port gpu-metrics, which no container of DaemonSet "
        "gpu-operator/nvidia-dcgm-exporter's pods names (they name: metrics 9400): the Service has no endpoint for "
        "it, so Prometheus discovers no target through it and verify cannot read /metrics"), "not-deployed"), check
    assert check["fix"] == "set the Service port's targetPort to metrics (or 9400)", check
    check = verify(*ONLY_EXPORTER)[1][("exporter", "metrics endpoint")]
    assert (check["status"], check["detail"]) == ("fail", (
        "Service gpu-operator/nvidia-dcgm-exporter has no endpoint for its port 9400 (gpu-metrics): its 2 ready pods "
        "(nvidia-dcgm-exporter-ax on gpu-node-a, nvidia-dcgm-exporter-bx on gpu-node-b) have no port its targetPort "
        "names, so the API server has no exporter to read /metrics from (and Prometheus none to scrape through it)")), \
        check
    service["spec"]["ports"][0]["targetPort"] = "metrics"  # the pods' name: served
    assert verify(*ONLY_EXPORTER)[1][("exporter", "metrics endpoint")]["status"] == "ok"
    assert verify(*ONLY_KUBE)[1][("kube", "exporter Service")]["status"] == "ok"


def test_a_user_who_may_read_no_service_monitor_is_told_so_in_words(stack):
    """A user refused ServiceMonitors in every namespace it tried: verify said "none in any namespace read does;
    ServiceMonitors were read in no namespace only" (no namespace was read). It says none could be read, and where."""
    cluster, verify = stack
    cluster.readable_only = {"servicemonitors": ()}
    check = verify(*ONLY_KUBE_PROMETHEUS)[1][SCRAPE]
    assert (check["status"], check["detail"], check["cause"]) == ("warn", (
        "cannot tell whether a ServiceMonitor selects the exporter; no ServiceMonitor could be read: the Kubernetes "
        "API refused listing them in every namespace (403), gpu-operator (403)"), "unreachable"), check


def test_a_namespace_selector_by_name_is_judged_without_reading_the_namespace(stack):
    """A Prometheus whose serviceMonitorNamespaceSelector selects namespaces by kubernetes.io/metadata.name (the label
    the API server writes on every namespace, its name) and a user who may not read Namespaces: whether it reads
    gpu-operator is known from the name alone. Verify said it cannot tell (it read the namespace's labels)."""
    cluster, verify = stack
    prometheus = cluster.kube_prometheus_stack()
    prometheus["spec"]["serviceMonitorNamespaceSelector"] = {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["gpu-operator", "monitoring"]}]}
    cluster.prometheuses = [prometheus]
    (monitor,) = cluster.service_monitors
    monitor["metadata"]["labels"] = {"release": "kube-prometheus-stack"}
    cluster.readable_only = {"namespaces": ()}
    check = verify(*ONLY_KUBE_PROMETHEUS)[1][SCRAPE]
    assert (check["status"], check["detail"]) == ("ok", (
        "ServiceMonitor gpudash-dcgm-exporter (selected: gpu-operator/gpudash-dcgm-exporter by Prometheus "
        "monitoring/kube-prometheus-stack-prometheus)")), check
    prometheus["spec"]["serviceMonitorNamespaceSelector"]["matchExpressions"][0]["values"] = ["monitoring"]
    check = verify(*ONLY_KUBE_PROMETHEUS)[1][SCRAPE]
    assert check["status"] == "fail", check


_OPERATOR_PATHS = ("/apis/monitoring.coreos.com/v1/servicemonitors", "/apis/monitoring.coreos.com/v1/prometheuses",
                   "/apis/monitoring.coreos.com/v1alpha1/prometheusagents")
_NOT_FOUND = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": "the server could not find the requested resource", "reason": "NotFound", "details": {},
              "code": 404}


def _api_groups(*group_versions: str) -> dict:
    """An API server's discovery of its groups (GET /apis), serving `group_versions` (group/version)."""
    groups: dict[str, list[str]] = {}
    for group_version in group_versions:
        group, version = group_version.split("/")
        groups.setdefault(group, []).append(version)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": name, "versions": [{"groupVersion": f"{name}/{v}", "version": v} for v in versions],
         "preferredVersion": {"groupVersion": f"{name}/{versions[0]}", "version": versions[0]}}
        for name, versions in groups.items()]}


@pytest.mark.parametrize("discovered, odd", [
    (("apps/v1", "discovery.k8s.io/v1"), False),
    (("apps/v1", "discovery.k8s.io/v1", "monitoring.coreos.com/v1", "monitoring.coreos.com/v1alpha1"), True),
], ids=["not served: not installed", "served: the 404 is odd"])
def test_an_api_server_before_1_24_answering_an_uninstalled_crd_with_go_s_404_page_is_read_as_not_installed(
        stack, discovered, odd):
    """prometheus-operator is not installed. An API server since 1.24 answers a list of its resources with a Status
    NotFound; one before answers Go's plain "404 page not found", which verify read as an odd answer (a proxy's page)
    and so failed where the newer server's cluster passed. The API server's own discovery (/apis) shows that group
    version is not served: the same checks as on the newer server. Where discovery serves it, the page stays odd."""
    cluster, verify = stack
    for path in _OPERATOR_PATHS:
        cluster.fronted[path] = (404, _NOT_FOUND)
    newer = verify(*ONLY_KUBE_PROMETHEUS)
    for path in _OPERATOR_PATHS:
        cluster.fronted[path] = (404, "404 page not found\n")
    cluster.fronted["/apis"] = (200, _api_groups(*discovered))
    older = verify(*ONLY_KUBE_PROMETHEUS)
    said = [c["detail"] for c in older[1].values() if "404" in c["detail"]]
    if odd:
        assert said and all("odd answer" in detail for detail in said), older
    else:
        assert older == newer and not said, (older, newer)

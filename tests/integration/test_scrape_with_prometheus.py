"""The generated scrape job, run unchanged by a real Prometheus against replayed exporters.

Kubernetes discovery is swapped for file discovery whose targets carry the same
__meta_kubernetes_* labels pod discovery gives: the exporter pod of each
deployment style, plus decoys that must be dropped.
"""

from __future__ import annotations

import json
import re
import subprocess
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import yaml

from generator.artifacts import build, grafana_dashboards
from generator.output import encode
from generator.cloudwatch_query import SCRAPED_MARKS
from generator.catalog import parse_counters
from generator.exporter_styles import STYLES
from generator.project import Project, load_project
from generator.promql_text import packed
from generator.render.scrape import ksm_scrape_job, prometheus_config, scrape_job
from generator.resources import default_counters
from generator.settings import parse_settings
from tests.support.prometheus_server import Prometheus, binary, counted_inline, for_file_sd, scraped_every
from tests.support.replay_exporter import ReplayExporter, relabel_payload
from tests.support.side_by_side import module_scenes, scene

SENTINEL = "9223372036854775794"
# One exporter per deployment style, each on its own node with its own workload pod.
WORKLOADS = {"gpu-operator": ("train-a-0", "gpu-node-a"), "helm": ("infer-b-0", "gpu-node-b"),
             "static": ("notebook-c-0", "gpu-node-c")}
NAMESPACE = {"gpu-operator": "gpu-operator", "helm": "monitoring", "static": "default"}


SETTLED = "20s"  # the window every rate in the dashboards is given here ($__rate_interval)


def _settings(style: str, interval: str = "1s"):
    text = yaml.safe_dump({"exporter": {"deployment": style, "namespace": NAMESPACE[style]},
                           "scrape": {"interval": interval, "job_name": f"dcgm-{style}"}})
    return parse_settings(text, "<test>", Path("."))


def _meta(address: str, namespace: str, labels: dict[str, str], container: str, port: int, pod: str, node: str):
    meta = {"__meta_kubernetes_namespace": namespace, "__meta_kubernetes_pod_name": pod,
            "__meta_kubernetes_pod_node_name": node, "__meta_kubernetes_pod_container_name": container,
            "__meta_kubernetes_pod_container_port_number": str(port)}
    for name, value in labels.items():
        meta["__meta_kubernetes_pod_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", name)] = value
    return {"targets": [address], "labels": meta}


@contextmanager
def _stack(tmp_path_factory):
    reference = _reference()
    workdir = tmp_path_factory.mktemp("prometheus")
    blog = (reference / "exporter" / "blog-a10g-k8s.prom").read_text()
    memory_temp = ('DCGM_FI_DEV_MEMORY_TEMP{gpu="0",UUID="GPU-x-%s",device="nvidia0",modelName="NVIDIA A10G",'
                   'Hostname="%s",container="main",namespace="kube-system",pod="%s"} %s\n')
    exporters = {}
    for style, (pod, node) in WORKLOADS.items():
        # Node a reads memory temperature; node b reports DCGM's "blank" sentinel instead.
        value = {"gpu-operator": "61", "helm": SENTINEL}.get(style)
        extra = memory_temp % (node, node, pod, value) if value else ""
        exporters[style] = ReplayExporter(relabel_payload(blog, pod=pod, hostname=node, extra=extra,
                                                          uuid_suffix=node)).__enter__()
    decoy = ReplayExporter(relabel_payload(blog, pod="decoy-pod", hostname="decoy-node",
                                           uuid_suffix="decoy-node")).__enter__()

    jobs = []
    for style, exporter in exporters.items():
        info = STYLES[style]
        namespace = NAMESPACE[style]
        pod, node = WORKLOADS[style]
        label_name, label_value = info.pod_label
        other_style = {"gpu-operator": STYLES["helm"], "helm": STYLES["gpu-operator"],
                       "static": STYLES["gpu-operator"]}[style]
        groups = [
            _meta(exporter.address, namespace, {label_name: label_value}, info.container, 9400,
                  f"{info.daemonset}-x1", node),
            # another workload's container in the same namespace, on the exporter's port
            _meta(decoy.address, namespace, {"app": "redis"}, "redis", 9400, "redis-0", node),
            # the exporter pod, but another container port
            _meta(decoy.address, namespace, {label_name: label_value}, info.container, 5555,
                  f"{info.daemonset}-x1", node),
            # an exporter of another deployment style
            _meta(decoy.address, namespace, dict([other_style.pod_label]), other_style.container, 9400,
                  "someone-elses-exporter", node),
        ]
        sd_file = workdir / f"{style}.json"
        sd_file.write_text(json.dumps(groups))
        jobs.append(for_file_sd(scrape_job(_settings(style)), [str(sd_file)]))
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "scrape_configs": jobs}
    with Prometheus(workdir, config) as prometheus:
        # An instant at which every exporter has been scraped successfully for the last 20 s, at least
        # twice: gauges, rates over 20 s and targets are all there. A busy machine delays scrapes, or
        # times one out (the series go stale until the next), so the tests query at this instant, not "now".
        # The counter queries read at at + 1 (below): no scrape failed up to then either.
        window = f"{int(SETTLED[:-1]) + 1}s"
        at = prometheus.settled(f"count_over_time(up[{SETTLED}] offset 1s) >= 2 and min_over_time(up[{window}]) == 1",
                                count=len(jobs)) - 1
        yield prometheus, exporters, decoy, at
    for server in (*exporters.values(), decoy):
        server.__exit__(None, None, None)


def _reference() -> Path:
    from tests.conftest import REFERENCE

    if not REFERENCE.is_dir():
        pytest.skip(f"reference data not found at {REFERENCE} (it sits beside the repository in CI)")
    return REFERENCE


def test_exporter_targets_are_kept_and_decoys_dropped(stack):
    prometheus, exporters, decoy, at = stack
    targets = prometheus.api("targets")
    active = {t["labels"]["job"]: t for t in targets["activeTargets"]}
    assert set(active) == {"dcgm-gpu-operator", "dcgm-helm", "dcgm-static"}
    for style, exporter in exporters.items():
        target = active[f"dcgm-{style}"]
        assert target["scrapeUrl"] == exporter.url
        assert target["labels"]["Service"] == STYLES[style].service
        assert target["labels"]["node"] == WORKLOADS[style][1]
        assert target["labels"]["exporter_pod"] == f"{STYLES[style].daemonset}-x1"
        assert "pod" not in target["labels"]  # the exporter's own pod never takes the workload's label
    up = {s["metric"]["job"]: s["value"][1] for s in prometheus.query("up", at=at)}
    assert up == {f"dcgm-{style}": "1" for style in exporters}  # each scraped successfully
    assert len(targets["droppedTargets"]) == 9
    assert decoy.scrapes == 0
    assert prometheus.query('count({pod="decoy-pod"})') == []


def test_workload_pod_labels_arrive_intact(stack):
    prometheus, _, _, at = stack
    series = prometheus.query("DCGM_FI_DEV_GPU_UTIL", at=at)
    assert {(s["metric"]["pod"], s["metric"]["namespace"], s["metric"]["container"]) for s in series} == {
        (pod, "kube-system", "main") for pod, _ in WORKLOADS.values()}
    assert not any("exported_pod" in s["metric"] for s in series)


def test_only_dcgm_series_are_kept(stack):
    prometheus, _, _, _ = stack
    names = prometheus.api("label/__name__/values")
    scraped = [n for n in names if not n.startswith(("up", "scrape_"))]
    assert scraped and all(n.startswith("DCGM_") for n in scraped)


def _project_for_payload(reference) -> Project:
    """Dashboards for the fields this exporter reports (the A10G payload, plus memory temperature)."""
    reported = set(re.findall(r"^(DCGM_\w+)\{", (reference / "exporter" / "blog-a10g-k8s.prom").read_text(), re.M))
    reported.add("DCGM_FI_DEV_MEMORY_TEMP")
    lines = [line for line in default_counters().read_text().splitlines()
             if not line or line.startswith("#") or line.split(",")[0].strip() in reported]
    project = load_project()
    catalog = parse_counters("\n".join(lines) + "\n", "payload-fields.csv")
    from generator.definitions import Context, load
    ctx = Context(catalog, project.settings)
    dashboards = tuple(item.value for item in load("dashboards", project.settings.definition_dirs("dashboards"), ctx))
    return Project(project.settings, catalog, dashboards, ())


def _substitute(expr: str) -> str:
    expr = scraped_every(expr, 30, 1)  # made for the default 30 s scrape interval; this Prometheus scrapes every 1 s
    expr = expr.replace("$__rate_interval", SETTLED).replace("${__range_ms}", "60000").replace("$__range", "1m")
    return re.sub(r"\$(namespace|pod|node|gpu|cluster)\b", ".*", expr)


def _legend(template: str, labels: dict[str, str]) -> str:
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)


def test_every_grafana_query_returns_series_with_the_right_legends(stack, reference):
    prometheus, _, _, at = stack
    pods = {pod for pod, _ in WORKLOADS.values()}
    nodes = {node for _, node in WORKLOADS.values()}
    checked = per_pod = per_gpu = 0
    project = _project_for_payload(reference)
    for dashboard in grafana_dashboards(project):
        for panel in dashboard.model["panels"]:
            for target in panel.get("targets", []):
                expr = _substitute(counted_inline(target["expr"], project))  # a counter's recording, over the scrapes
                # a counter read once per 1 s step (whole seconds) needs two steps after the first of the two scrapes
                # `at` is settled on: the second scrape is fresh at the whole second after it
                result = prometheus.query(expr, at=at + 1 if ":1s]" in expr else at)
                where = f"{dashboard.uid} / {panel['title']}: {target['expr']}"
                if "per MIG instance" in panel["title"]:
                    assert result == [], where  # this fleet has no MIG GPU (test_fleet_truth has one)
                    continue
                assert result, where
                legends = {_legend(target["legendFormat"], s["metric"]) for s in result}
                # (the text as written: promql_text.packed; unpacked, these never matched and checked no legend)
                if target["expr"].startswith((packed("avg by (namespace, pod) ("), packed("sum by (namespace, pod) ("))):
                    assert legends == {f"Pod kube-system/{pod}" for pod in pods}, where
                    per_pod += 1
                elif packed(" by (node, gpu) (") in target["expr"] and "MEMORY_TEMP" not in target["expr"]:
                    assert legends == {f"{node} GPU 0" for node in nodes}, where
                    per_gpu += 1
                checked += 1
    assert checked >= 40 and per_pod and per_gpu, (checked, per_pod, per_gpu)


def test_blank_sentinel_values_are_left_out(stack, reference):
    prometheus, _, _, at = stack
    dashboards = {d.uid: d.model for d in grafana_dashboards(_project_for_payload(reference))}
    panel = next(p for p in dashboards["gpudash-health"]["panels"] if p["title"] == "Memory temperature")
    result = prometheus.query(_substitute(panel["targets"][0]["expr"]), at=at)
    assert [(s["metric"]["node"], s["value"][1]) for s in result] == [("gpu-node-a", "61")]
    assert prometheus.query('DCGM_FI_DEV_MEMORY_TEMP{Hostname="gpu-node-b"} > 1e18', at=at)  # the raw blank is there


def test_promtool_accepts_the_generated_configs(tmp_path):
    promtool = binary("promtool")
    for style in STYLES:
        settings = _settings(style, interval="30s")
        config = prometheus_config(settings, ksm=True)
        sd_file = tmp_path / "targets.json"
        sd_file.write_text("[]")
        config["scrape_configs"] = [for_file_sd(job, [str(sd_file)]) for job in config["scrape_configs"]]
        path = tmp_path / f"{style}.yml"
        path.write_text(yaml.safe_dump(config))
        result = subprocess.run([promtool, "check", "config", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


def test_agent_configmap_scrape_job_is_the_same_job(tmp_path):
    project = load_project()
    files = encode(build(project))
    configmaps = list(yaml.safe_load_all(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"]))
    agent_scrape = yaml.safe_load(configmaps[1]["data"]["prometheus.yaml"])
    # the agent's job is Prometheus' job and, on the OTel pipeline (the default), the exporter pod's revision and
    # template generation as a label (awsemf's delta key: an old and a new exporter during a rollout, or a rollout
    # undone, are two counters), and one metric rule: a whole GPU gets GPU_I_ID "none" (the per-instance set)
    assert project.settings.agent.pipeline == "otel"
    job = scrape_job(project.settings)
    job["relabel_configs"] += [
        {"source_labels": ["__meta_kubernetes_pod_label_controller_revision_hash"], "target_label": "exporter_revision",
         "action": "replace"},
        {"source_labels": ["exporter_revision", "__meta_kubernetes_pod_label_pod_template_generation"],
         "regex": "(.+);(.+)", "replacement": "$1-$2", "target_label": "exporter_revision", "action": "replace"}]
    job["metric_relabel_configs"].append({"source_labels": ["GPU_I_ID"], "regex": "", "target_label": "GPU_I_ID",
                                          "replacement": "none", "action": "replace"})
    # and, last, a scraped label named like a mark of the agent's own points dropped (a pod's own labels, which
    # dcgm-exporter --kubernetes-enable-pod-labels writes, may be named so)
    job["metric_relabel_configs"].append({"regex": "|".join(SCRAPED_MARKS), "action": "labeldrop"})
    assert agent_scrape["scrape_configs"] == [job, ksm_scrape_job(project.settings)]
    values = yaml.safe_load(files["prometheus/additional-scrape-configs.yaml"])
    assert values["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"] == [scrape_job(project.settings)]


@contextmanager
def _agents_job(tmp_path_factory):
    """The agent's job, as its ConfigMap carries it, run by Prometheus against two nodes of the mixed fleet; (the
    Prometheus, an instant with both targets' series stored)."""
    from tests.support import mixed_fleet

    tmp_path = tmp_path_factory.mktemp("agents-job")
    files = encode(build(load_project()))
    configmaps = list(yaml.safe_load_all(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"]))
    job = yaml.safe_load(configmaps[1]["data"]["prometheus.yaml"])["scrape_configs"][0]
    nodes = [n for n in mixed_fleet.FLEET if n.name in ("gpu-node-a", "gpu-node-mig")]
    with ExitStack() as stack:
        exporters = {n.name: stack.enter_context(ReplayExporter(lambda n=n: mixed_fleet.payload(n))) for n in nodes}
        sd_file = tmp_path / "targets.json"
        # a DaemonSet's pods: the revision hash, and the template generation on one of them (the other an older
        # kind of pod without it): exporter_revision "<hash>-<generation>", or the hash alone
        pod_labels = {"gpu-node-a": {"controller-revision-hash": "5d8f7c9b6d", "pod-template-generation": "3"},
                      "gpu-node-mig": {"controller-revision-hash": "5d8f7c9b6d"}}
        sd_file.write_text(json.dumps([_meta(exporters[n.name].address, "gpu-operator",
                                             {"app": "nvidia-dcgm-exporter", **pod_labels[n.name]},
                                             "nvidia-dcgm-exporter", 9400, n.exporter_pod, n.name) for n in nodes]))
        job = for_file_sd(job, [str(sd_file)])
        job["scrape_interval"], job["scrape_timeout"] = "1s", "1s"
        prometheus = stack.enter_context(Prometheus(tmp_path, {"global": {"scrape_interval": "1s"},
                                                               "scrape_configs": [job]}))
        # an instant with both targets' series stored (a query at "now" reads nothing of a series whose latest
        # scrape timed out on a loaded machine): both queries read it
        yield prometheus, prometheus.settled('{__name__=~"DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_GPU_UTIL"}', count=6 + 2)


# each waits in real time for its first scrapes (Prometheus scrapes ~5 s after it is ready): side by side
scenes = module_scenes({"stack": _stack, "agents_job": _agents_job})
stack = scene("stack")
agents_job = scene("agents_job")


def test_the_agents_job_gives_whole_gpus_an_instance_in_a_real_prometheus(agents_job):
    """The agent's job, as its ConfigMap carries it, run by Prometheus (whose scrape and relabel code the agent
    runs): a whole GPU's series get GPU_I_ID "none", a MIG instance's keep their own, so the per-instance set
    is published for every GPU; GPU utilization stays on the whole GPU only."""
    prometheus, at = agents_job
    framebuffer = prometheus.query("DCGM_FI_DEV_FB_USED", at=at)
    assert sorted((s["metric"]["node"], s["metric"]["gpu"], s["metric"]["GPU_I_ID"]) for s in framebuffer) == [
        ("gpu-node-a", "0", "none"), ("gpu-node-a", "1", "none"), ("gpu-node-mig", "0", "1"),
        ("gpu-node-mig", "0", "2"), ("gpu-node-mig", "1", "1"), ("gpu-node-mig", "1", "2")]
    assert all("GPU_I_PROFILE" in s["metric"] for s in framebuffer if s["metric"]["GPU_I_ID"] != "none")
    assert {(s["metric"]["node"], s["metric"]["exporter_revision"]) for s in framebuffer} == {
        ("gpu-node-a", "5d8f7c9b6d-3"), ("gpu-node-mig", "5d8f7c9b6d")}
    utilization = prometheus.query("DCGM_FI_DEV_GPU_UTIL", at=at)
    assert sorted((s["metric"]["node"], s["metric"]["GPU_I_ID"]) for s in utilization) == [
        ("gpu-node-a", "none"), ("gpu-node-a", "none")]

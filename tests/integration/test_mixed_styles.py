"""A fleet whose clusters deploy the DCGM exporter differently: the GPU operator's in cluster a
(gpu-operator/nvidia-dcgm-exporter, pods labelled app=nvidia-dcgm-exporter), the Helm chart's in cluster b
(dcgm-exporter/dcgm-exporter, pods labelled app.kubernetes.io/name=dcgm-exporter), written as b's
clusters[].exporter.deployment and .namespace. Each cluster's agent, run on its generated config (the agent model),
must publish its own exporters' GPUs under its ClusterName, and each cluster's data-missing alarm (cloudwatch_eval)
must read its own DaemonSet's counts: in ALARM while that cluster's exporter is gone, OK otherwise.

The stories are an hour of 30 s steps: healthy until minute 20, the change until minute 40, healthy after.
"""

from __future__ import annotations

import json
import re

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.integration.test_data_missing import CHANGE, RECOVER, _in_alarm, _one_gpu_page
from tests.support import kube_state
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, scrape_jobs
from tests.support.dcgm_fleet import STEP, _relabel

STEPS = 120
MIXED = ("clusters:\n  - {name: a, region: us-east-1}\n  - name: b\n    region: us-east-1\n"
         "    exporter: {deployment: helm, namespace: dcgm-exporter}\n")
# cluster -> (exporter namespace, DaemonSet, its pods' label, kube-state-metrics' labels of the DaemonSet, GPU nodes)
CLUSTERS = {"a": ("gpu-operator", "nvidia-dcgm-exporter", ("app", "nvidia-dcgm-exporter"), kube_state.OPERATOR_LABELS,
                  ("ip-10-0-1-1", "ip-10-0-1-2")),
            "b": ("dcgm-exporter", "dcgm-exporter", ("app_kubernetes_io_name", "dcgm-exporter"),
                  kube_state.HELM_LABELS, ("ip-10-1-1-1", "ip-10-1-1-2"))}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mixed")
    (folder / "gpudash.yaml").write_text(MIXED)
    return encode(build(load_project(folder / "gpudash.yaml")))


def _pod_meta(namespace: str, daemonset: str, label: tuple[str, str], node: str, index: int) -> dict[str, str]:
    """An exporter pod as Kubernetes SD meets it: its namespace, owning DaemonSet, node, port and pod label."""
    return {"__address__": f"10.0.9.{index}:9400", "__meta_kubernetes_namespace": namespace,
            "__meta_kubernetes_pod_name": f"{daemonset}-{index}", "__meta_kubernetes_pod_node_name": node,
            "__meta_kubernetes_pod_container_port_number": "9400",
            "__meta_kubernetes_pod_controller_kind": "DaemonSet",
            "__meta_kubernetes_pod_controller_name": daemonset,
            f"__meta_kubernetes_pod_label_{label[0]}": label[1]}


def _target(job: dict, meta: dict[str, str]) -> dict[str, str] | None:
    """The labels the job gives the target, or None when it drops it (an exporter the agent never scrapes)."""
    labels = _relabel(job.get("relabel_configs", []), meta)
    if labels is None:
        return None
    return {"job": job["job_name"], "instance": meta["__address__"],
            **{k: v for k, v in labels.items() if not k.startswith("__")}}


def _published(files, cluster: str, gone: bool) -> list:
    """What cluster's agent publishes of its exporters (gone from minute 20 to 40 when `gone`) and of
    kube-state-metrics' counts of its exporter DaemonSet (its pods unavailable meanwhile)."""
    agent_file = f"k8s/cwagent-prometheus-config-{cluster}.yaml"
    config, job = agent_config(files[agent_file])
    ksm_job = scrape_jobs(files[agent_file])["gpudash-kube-state-metrics"]
    namespace, daemonset, label, ksm_labels, nodes = CLUSTERS[cluster]
    away = range(CHANGE // STEP, RECOVER // STEP)
    scrapes = []
    for index, node in enumerate(nodes):
        target = _target(job, _pod_meta(namespace, daemonset, label, node, index))
        scrapes += [Scrape(k * STEP, _one_gpu_page(node), target) for k in range(STEPS)
                    if target is not None and not (gone and k in away)]
    exporter = {"namespace": namespace, "daemonset": daemonset, **ksm_labels}
    scrapes += [kube_state.scrape(ksm_job, k * STEP, exporter, len(nodes), 0 if gone and k in away else len(nodes))
                for k in range(STEPS)]
    return Agent(config, job, others=[ksm_job]).run(scrapes)


def _data_missing_alarms(files) -> list[dict]:
    return [i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]
            if "-gpu-data-missing-" in i["Request"]["AlarmName"]]


def test_each_cluster_agent_publishes_its_own_styles_exporters(mixed):
    """Cluster b's agent scrapes the Helm chart's exporter pods in dcgm-exporter (its job kept only pods labelled
    app=nvidia-dcgm-exporter in gpu-operator: b's GPUs never reached CloudWatch), a's the operator's; each GPU's
    temperature is published with its own cluster's ClusterName."""
    published = {cluster: sorted({(p.dims()["ClusterName"], p.dims()["node"])
                                  for p in _published(mixed, cluster, gone=False)
                                  if p.metric == "DCGM_FI_DEV_GPU_TEMP" and "node" in p.dims()})
                 for cluster in CLUSTERS}
    assert published == {cluster: [(cluster, node) for node in CLUSTERS[cluster][4]] for cluster in CLUSTERS}


STORIES = {"healthy": None, "cluster b's exporters gone": "b", "cluster a's exporters gone": "a"}


@pytest.mark.parametrize("story", STORIES)
def test_each_clusters_data_missing_alarm_reads_its_own_exporter(mixed, story):
    """The data-missing alarm of each cluster is OK while its exporters run and in ALARM (by minute 30, until 40) while
    they are gone, the other cluster's staying OK: b's read the counts of gpu-operator/nvidia-dcgm-exporter (none in
    b: ALARM for good) and no GPU of b was published."""
    gone = STORIES[story]
    points = [p for cluster in CLUSTERS for p in _published(mixed, cluster, gone=cluster == gone)]
    requests = _data_missing_alarms(mixed)
    fired = {minute: sorted(_in_alarm(requests, points, minute * 60)) for minute in (15, 31, 38, 55)}
    expected = [f"gpudash-{gone}-gpu-data-missing-critical"] if gone else []
    assert fired == {15: [], 31: expected, 38: expected, 55: []}


# Cluster b's Prometheus scraping b's exporters through the dcgm-exporter chart's own ServiceMonitor: no exporter_pod,
# the exporter pod's own container (`exporter`) and namespace on every target
CHART_SAMPLES = ('scrape_samples_post_metric_relabeling{{job="dcgm-exporter",instance="10.1.1.{n}:9400",'
                 'namespace="dcgm-exporter",service="dcgm-exporter",endpoint="metrics",container="exporter",'
                 'pod="dcgm-exporter-{n}",node="ip-10-1-1-{n}"}}')
B_DAEMONSET = 'namespace="dcgm-exporter",daemonset="dcgm-exporter"'


def _b_series(available: str, samples: tuple[str, str]) -> list[dict]:
    """Cluster b's Prometheus: kube-state-metrics' counts of b's exporter DaemonSet (2 nodes), its two exporter
    targets' samples per scrape, a GPU reporting."""
    return [{"series": f"kube_daemonset_status_desired_number_scheduled{{{B_DAEMONSET}}}", "values": "2x60"},
            {"series": f"kube_daemonset_status_number_available{{{B_DAEMONSET}}}", "values": available},
            {"series": f"kube_daemonset_status_updated_number_scheduled{{{B_DAEMONSET}}}", "values": "2x60"},
            {"series": f'kube_daemonset_labels{{{B_DAEMONSET},label_app_kubernetes_io_name="dcgm-exporter"}}',
             "values": "1x60"},
            *({"series": CHART_SAMPLES.format(n=n), "values": values} for n, values in enumerate(samples, start=1)),
            {"series": 'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="ip-10-1-1-2"}', "values": "60x60"}]


def test_the_rule_fires_for_cluster_bs_chart_exporter_on_its_own_servicemonitor(tmp_path):
    """The data-missing rule on cluster b's Prometheus (promtool), b's exporters scraped through the chart's own
    ServiceMonitor: healthy, no alert; an exporter pod gone from minute 20 (available 1 of 2), "fewer exporter pods
    available than desired" by minute 30; one up but answering without a DCGM sample from minute 20, its target by
    minute 32 (the rule's stock-ServiceMonitor branch read container="nvidia-dcgm-exporter" in gpu-operator only,
    never b's targets)."""
    from tests.support.promtool_rules import expected_alert, promtool_test

    (tmp_path / "gpudash.yaml").write_text(MIXED + "labels:\n  pod: exported_pod\n  namespace: exported_namespace\n"
                                                   "  container: exported_container\n")
    (tmp_path / "rules.yaml").write_text(encode(build(load_project(tmp_path / "gpudash.yaml")))
                                         ["prometheus/rules.yaml"].decode())
    alert = "GpudashGpuDataMissing"
    empty = expected_alert(tmp_path, alert, reason="a node's exporter brought no GPU data most of the time",
                      **{k: v for k, v in re.findall(r'(\w+)="([^"]*)"', CHART_SAMPLES.format(n=1)) if k != "pod"
                         and k != "instance"})
    fewer = expected_alert(tmp_path, alert, reason="fewer exporter pods available than desired",
                      **dict(re.findall(r'(\w+)="([^"]*)"', B_DAEMONSET)))
    healthy = ("400x60", "400x60")
    promtool_test(tmp_path, "mixed_test.yaml", [
        {"interval": "1m", "input_series": _b_series("2x60", healthy),
         "alert_rule_test": [{"eval_time": f"{m}m", "alertname": alert, "exp_alerts": []} for m in (15, 32, 55)]},
        {"interval": "1m", "input_series": _b_series("2x20 1x40", ("400x20 _x40", "400x60")),
         "alert_rule_test": [{"eval_time": "15m", "alertname": alert, "exp_alerts": []},
                             {"eval_time": "32m", "alertname": alert, "exp_alerts": [fewer]}]},
        {"interval": "1m", "input_series": _b_series("2x60", ("400x20 0x40", "400x60")),
         "alert_rule_test": [{"eval_time": "25m", "alertname": alert, "exp_alerts": []},
                             {"eval_time": "32m", "alertname": alert, "exp_alerts": [empty]}]}])

"""A cluster whose GPU node group has been at zero since the GPU operator came (GPU nodes launched on demand, from
zero): the operator creates no exporter DaemonSet until a GPU node joins. Its ClusterPolicy controller returns Ready
without creating any of its DaemonSets while no node carries the GPU labels (NVIDIA/gpu-operator,
controllers/object_controls.go, DaemonSet(): `if !n.hasGPUNodes { ... "No GPU node in the cluster, do not create
DaemonSets"; return gpuv1.Ready, nil }`, v26.7.0), so kube-state-metrics reports no nvidia-dcgm-exporter DaemonSet
at all, not one with 0 desired pods.

No GPU exists, so no GPU data is missing: the alarm says so itself ("A GPU node group at zero ... not missing
data"). kube-state-metrics tells this apart from a deleted DaemonSet on GPU nodes: no node has `nvidia.com/gpu`
capacity (`kube_node_status_capacity{resource="nvidia_com_gpu"}`, which kube-state-metrics writes by default for
every node that has it), and it runs, as does the CloudWatch agent. Both twins are judged each minute of an hour.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval, kube_state
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, scrape_jobs
from tests.support.dcgm_fleet import scrapes
from tests.support.promtool_rules import parsed_rules, promtool_test

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
STEP, FINAL = 30, 3600
CPU_NODE = "ip-10-0-3-7"  # the cluster's one node: no GPU


@pytest.fixture(scope="module")
def files():
    return encode(build(load_project()))


# A device plugin whose config advertises the GPUs under a name of its own (nvidia.com/a100, kube-state-metrics'
# nvidia_com_a100), which exporter.resource_names names: its nodes are GPU nodes to the alarm and the rule alike.
RENAMED = "nvidia_com_a100"


@pytest.fixture(scope="module")
def renamed_files(tmp_path_factory):
    config = tmp_path_factory.mktemp("renamed") / "gpudash.yaml"
    config.write_text("exporter:\n  resource_names: [nvidia.com/a100]\n")
    return encode(build(load_project(config)))


def test_the_cloudwatch_alarm_stays_ok_without_a_gpu_node_or_an_exporter_daemonset(files):
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    ksm = kube_state.target_labels(ksm_job)
    # kube-state-metrics answers every 30 s: the cluster's other DaemonSets (aws-node), its one node (no GPU resource),
    # no exporter
    scrapes = [Scrape(t, kube_state.payload(None, 0, 0, gpu_node=False), ksm) for t in range(0, FINAL, STEP)]
    points = Agent(config, job, others=[ksm_job]).run(scrapes)
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if "gpu-data-missing" in a["Request"]["AlarmName"]]
    assert len(requests) == 3
    fired = {}
    for minute in range(15, FINAL // 60 + 1):
        for request in requests:
            states = cloudwatch_eval.alarm(request, points, minute * 60)
            if "ALARM" in states.values():
                fired.setdefault(request["AlarmName"], []).append(minute)
    assert fired == {}


def test_the_rule_stays_silent_without_a_gpu_node_or_an_exporter_daemonset(files, tmp_path):
    (tmp_path / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    ksm = 'job="kube-state-metrics",instance="10.0.2.9:8080"'
    other = f'{ksm},namespace="kube-system",daemonset="aws-node"'
    steps = FINAL // STEP
    series = [{"series": f"up{{{ksm}}}", "values": f"1x{steps}"},
              {"series": f"{kube_state.DESIRED}{{{other}}}", "values": f"1x{steps}"},
              {"series": f"{kube_state.AVAILABLE}{{{other}}}", "values": f"1x{steps}"},
              {"series": f"{kube_state.UPDATED}{{{other}}}", "values": f"1x{steps}"},
              {"series": f'{kube_state.LABELS}{{{other},label_app_kubernetes_io_name="aws-node"}}',
               "values": f"1x{steps}"},
              {"series": f'kube_node_info{{{ksm},node="{CPU_NODE}"}}', "values": f"1x{steps}"}]
    series += [{"series": f'kube_node_status_capacity{{{ksm},node="{CPU_NODE}",resource="{r}",unit="{u}"}}',
                "values": f"{v}x{steps}"} for r, u, v in (("cpu", "core", "4"), ("pods", "integer", "58"))]
    tests = [{"name": "no GPU node, no exporter DaemonSet", "interval": f"{STEP}s", "input_series": series,
              "alert_rule_test": [{"eval_time": f"{m}m", "alertname": "GpudashGpuDataMissing", "exp_alerts": []}
                                  for m in range(1, FINAL // 60)]}]
    promtool_test(tmp_path, "no_gpu_node_yet.yaml", tests, evaluation_interval="30s")


# --- the first GPU node joins ------------------------------------------------------------------------------------

JOIN, READY = 1200, 1380  # the GPU node joins at minute 20; its exporter pods are available from minute 23 (driver)
EXPORTER = {"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter", **kube_state.OPERATOR_LABELS}
CLUSTER_ALARM = "gpudash-gpu-cluster-gpu-data-missing-critical"


def _joined_ksm(t: int, reports: bool) -> str:
    """kube-state-metrics at `t`: the cluster's node without a GPU resource before JOIN; from JOIN with its
    nvidia.com/gpu capacity (a GPU node) and the exporter DaemonSet the GPU operator then creates (2 desired), its pods available from READY or
    never."""
    if t < JOIN:
        return kube_state.payload(None, 0, 0, gpu_node=False)
    return kube_state.payload(EXPORTER, 2, 2 if reports and t >= READY else 0)


@pytest.mark.parametrize("reports", (True, False), ids=("its exporter reports", "its exporter never becomes ready"))
def test_the_cloudwatch_alarm_waits_for_the_first_gpu_node_then_judges_its_exporter(files, reports):
    """No GPU node and no exporter DaemonSet for 20 minutes: OK. Then the GPU node joins, the operator creates the
    DaemonSet and the exporter reports 3 minutes later: OK all along. Or its pods never become available and no GPU
    reports: ALARM, never before the node joined, from two periods after it."""
    project = load_project()
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    ksm = kube_state.target_labels(ksm_job)
    story = [Scrape(t, _joined_ksm(t, reports), ksm) for t in range(0, FINAL, STEP)]
    if reports:
        story += scrapes(job, project.catalog, READY // STEP, FINAL // STEP - 1)
    points = Agent(config, job, others=[ksm_job]).run(sorted(story, key=lambda s: s.timestamp))
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if "gpu-data-missing" in a["Request"]["AlarmName"]]
    fired: dict[str, list[int]] = {}
    for minute in range(15, FINAL // 60 + 1):
        for request in requests:
            if "ALARM" in cloudwatch_eval.alarm(request, points, minute * 60).values():
                fired.setdefault(request["AlarmName"], []).append(minute)
    if reports:
        assert fired == {}
    else:
        assert list(fired) == [CLUSTER_ALARM]
        assert min(fired[CLUSTER_ALARM]) > JOIN // 60 + 5  # a shortfall all period, two periods running
        assert fired[CLUSTER_ALARM] == list(range(min(fired[CLUSTER_ALARM]), FINAL // 60 + 1))
        assert min(fired[CLUSTER_ALARM]) <= JOIN // 60 + 11


@pytest.mark.parametrize("reports", (True, False), ids=("its exporter reports", "its exporter never becomes ready"))
def test_the_rule_waits_for_the_first_gpu_node_then_judges_its_exporter(files, tmp_path, reports):
    """The rule's twin of the story above: silent while no GPU node is; then silent, or firing 'fewer exporter pods
    available than desired' (and 'exporters are expected but no GPU reported') from two periods after the join."""
    (tmp_path / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    ksm = 'job="kube-state-metrics",instance="10.0.2.9:8080"'
    other = f'{ksm},namespace="kube-system",daemonset="aws-node"'
    exporter = f'{ksm},namespace="gpu-operator",daemonset="nvidia-dcgm-exporter"'
    gpu_node = "ip-10-0-1-1"
    steps, joined, ready = FINAL // STEP, JOIN // STEP, READY // STEP
    after = steps - joined  # samples from the join on: `_x{joined} v x{after}` holds none before it

    def since_join(values: str) -> str:
        return f"_x{joined} {values}"

    series = [{"series": f"up{{{ksm}}}", "values": f"1x{steps}"},
              *({"series": f"{metric}{{{other}}}", "values": f"{value}x{steps}"}
                for metric, value in ((kube_state.DESIRED, 5), (kube_state.AVAILABLE, 3), (kube_state.UPDATED, 5))),
              {"series": f'{kube_state.LABELS}{{{other},label_app_kubernetes_io_name="aws-node"}}',
               "values": f"1x{steps}"},
              {"series": f'kube_node_info{{{ksm},node="{CPU_NODE}"}}', "values": f"1x{steps}"},
              {"series": f'kube_node_status_capacity{{{ksm},node="{CPU_NODE}",resource="cpu",unit="core"}}',
               "values": f"4x{steps}"},
              # the GPU node and the DaemonSet the operator creates for it
              {"series": f'kube_node_info{{{ksm},node="{gpu_node}"}}', "values": since_join(f"1x{after}")},
              {"series": f'kube_node_status_capacity{{{ksm},node="{gpu_node}",resource="nvidia_com_gpu",'
                         f'unit="integer"}}', "values": since_join(f"4x{after}")},
              {"series": f'{kube_state.LABELS}{{{exporter},label_app="nvidia-dcgm-exporter"}}',
               "values": since_join(f"1x{after}")},
              {"series": f"{kube_state.DESIRED}{{{exporter}}}", "values": since_join(f"1x{after}")},
              {"series": f"{kube_state.UPDATED}{{{exporter}}}", "values": since_join(f"1x{after}")},
              {"series": f"{kube_state.AVAILABLE}{{{exporter}}}",
               "values": since_join(f"0x{ready - joined - 1} 1x{steps - ready}" if reports else f"0x{after}")}]
    if reports:
        target = f'job="dcgm-exporter",instance="{gpu_node}:9400",node="{gpu_node}",exporter_pod="nvidia-dcgm-exporter-1"'
        series += [{"series": f"up{{{target}}}", "values": f"_x{ready} 1x{steps - ready}"},
                   *({"series": f'DCGM_FI_DEV_GPU_TEMP{{{target},gpu="{i}"}}', "values": f"_x{ready} 60x{steps - ready}"}
                     for i in range(4))]
    quiet = range(1, FINAL // 60) if reports else range(1, JOIN // 60 + 5)
    cases = [{"eval_time": f"{m}m", "alertname": "GpudashGpuDataMissing", "exp_alerts": []} for m in quiet]
    if not reports:
        rule = next(r for g in parsed_rules(files["prometheus/rules.yaml"])["groups"] for r in g["rules"]
                    if r.get("alert") == "GpudashGpuDataMissing")
        labels = {**rule["labels"], "job": "kube-state-metrics", "instance": "10.0.2.9:8080",
                  "namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter"}
        summary = rule["annotations"]["summary"]
        failing = [{"exp_labels": {**labels, "reason": reason}, "exp_annotations": {
                        **rule["annotations"], "summary": summary.replace("{{ $labels.reason }}", reason)}}
                   for reason in ("exporters are expected but no GPU reported",
                                  "fewer exporter pods available than desired")]
        cases += [{"eval_time": f"{m}m", "alertname": "GpudashGpuDataMissing", "exp_alerts": failing}
                  for m in range(JOIN // 60 + 5, FINAL // 60)]
    promtool_test(tmp_path, "gpu_node_joins.yaml", [{"name": "the first GPU node joins", "interval": f"{STEP}s",
                                                       "input_series": series, "alert_rule_test": cases}],
                   evaluation_interval="30s")



def test_on_a_shared_prometheus_each_cluster_is_judged_by_its_own_nodes(project_dir, tmp_path):
    """One Prometheus for two clusters (labels.cluster): a has no GPU node yet and no exporter DaemonSet, b has GPU nodes
    and its exporter DaemonSet deleted. b's alert fires, a's stays silent: a's nodes do not silence b, nor b's GPU nodes
    fire a."""
    from generator.project import load_project as load

    config = project_dir("clusters:\n  - {name: a, region: us-east-1, prometheus_label: a}\n"
                         "  - {name: b, region: us-east-1, prometheus_label: b}\n")
    files = encode(build(load(config)))
    (tmp_path / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    rule = next(r for g in parsed_rules(files["prometheus/rules.yaml"])["groups"] for r in g["rules"]
                if r.get("alert") == "GpudashGpuDataMissing")
    steps = FINAL // STEP
    series = []
    for cluster, node, gpus in (("a", CPU_NODE, False), ("b", "ip-10-0-1-1", True)):
        ksm = f'cluster="{cluster}",job="kube-state-metrics",instance="10.0.2.9:8080"'
        other = f'{ksm},namespace="kube-system",daemonset="aws-node"'
        series += [{"series": f"up{{{ksm}}}", "values": f"1x{steps}"},
                   *({"series": f"{metric}{{{other}}}", "values": f"1x{steps}"}
                     for metric in (kube_state.DESIRED, kube_state.AVAILABLE, kube_state.UPDATED)),
                   {"series": f'{kube_state.LABELS}{{{other},label_app_kubernetes_io_name="aws-node"}}',
                    "values": f"1x{steps}"},
                   {"series": f'kube_node_info{{{ksm},node="{node}"}}', "values": f"1x{steps}"},
                   {"series": f'kube_node_status_capacity{{{ksm},node="{node}",resource="cpu",unit="core"}}',
                    "values": f"4x{steps}"}]
        if gpus:
            series.append({"series": f'kube_node_status_capacity{{{ksm},node="{node}",resource="nvidia_com_gpu",'
                                     f'unit="integer"}}', "values": f"4x{steps}"})
    reason = ("kube-state-metrics reports no exporter DaemonSet (deleted, kube-state-metrics not scraped, or its "
              "--metric-labels-allowlist lacks daemonsets=[app,app.kubernetes.io/name])")
    fired = [{"exp_labels": {**rule["labels"], "cluster": "b", "reason": reason},
              "exp_annotations": {**rule["annotations"],
                                  "summary": rule["annotations"]["summary"].replace("{{ $labels.reason }}", reason)
                                  .replace("{{ $labels.cluster }}", "b")}}]
    promtool_test(tmp_path, "shared.yaml", [{"name": "a without GPU nodes, b without its DaemonSet",
                                              "interval": f"{STEP}s", "input_series": series,
                                              "alert_rule_test": [{"eval_time": f"{m}m", "alertname": rule["alert"],
                                                                   "exp_alerts": fired} for m in (11, 30, 59)]}],
                   evaluation_interval="30s")


# --- GPUs under a resource name of the device plugin's config, the exporter DaemonSet deleted -----------------------

DELETED_FIRED_BY = 20  # minute: the exporter DaemonSet absent from the start, GPU nodes present


@pytest.mark.parametrize("named", (True, False), ids=("exporter.resource_names names it", "not named"))
def test_the_cloudwatch_alarm_counts_gpu_nodes_of_a_named_resource(files, renamed_files, named):
    """The GPU nodes advertise nvidia.com/a100 only and the exporter DaemonSet is gone: GPU data is missing. The
    alarm knows a GPU node by its capacity in the device plugin's names and those exporter.resource_names names:
    named, it is in ALARM; not named, the cluster has no GPU node to it and it stays OK (gpudash verify fails that
    case: test_verify)."""
    built = renamed_files if named else files
    config, job = agent_config(built[AGENT_FILE])
    ksm_job = scrape_jobs(built[AGENT_FILE])["gpudash-kube-state-metrics"]
    ksm = kube_state.target_labels(ksm_job)
    story = [Scrape(t, kube_state.payload(None, 0, 0, nodes=("ip-10-0-1-1", "ip-10-0-1-2"), gpu_resource=RENAMED), ksm)
             for t in range(0, FINAL, STEP)]
    points = Agent(config, job, others=[ksm_job]).run(story)
    request = next(a["Request"] for a in json.loads(built["cloudwatch/alarms.json"])["alarms"]
                   if a["Request"]["AlarmName"] == CLUSTER_ALARM)
    states = {minute: set(cloudwatch_eval.alarm(request, points, minute * 60).values())
              for minute in range(DELETED_FIRED_BY, FINAL // 60 + 1)}
    assert all(s == ({"ALARM"} if named else {"OK"}) for s in states.values()), states


@pytest.mark.parametrize("named", (True, False), ids=("exporter.resource_names names it", "not named"))
def test_the_rule_counts_gpu_nodes_of_a_named_resource(files, renamed_files, tmp_path, named):
    """The rule's twin of the alarm above: firing 'no exporter DaemonSet' where the setting names the resource,
    silent where it does not."""
    built = renamed_files if named else files
    (tmp_path / "rules.yaml").write_text(built["prometheus/rules.yaml"].decode())
    rule = next(r for g in parsed_rules(built["prometheus/rules.yaml"])["groups"] for r in g["rules"]
                if r.get("alert") == "GpudashGpuDataMissing")
    ksm = 'job="kube-state-metrics",instance="10.0.2.9:8080"'
    other = f'{ksm},namespace="kube-system",daemonset="aws-node"'
    steps = FINAL // STEP
    series = [{"series": f"up{{{ksm}}}", "values": f"1x{steps}"},
              *({"series": f"{metric}{{{other}}}", "values": f"{value}x{steps}"}
                for metric, value in ((kube_state.DESIRED, 5), (kube_state.AVAILABLE, 5), (kube_state.UPDATED, 5))),
              {"series": f'{kube_state.LABELS}{{{other},label_app_kubernetes_io_name="aws-node"}}',
               "values": f"1x{steps}"}]
    for node in ("ip-10-0-1-1", "ip-10-0-1-2"):
        series += [{"series": f'kube_node_info{{{ksm},node="{node}"}}', "values": f"1x{steps}"},
                   {"series": f'kube_node_status_capacity{{{ksm},node="{node}",resource="{RENAMED}",unit="integer"}}',
                    "values": f"8x{steps}"}]
    reason = ("kube-state-metrics reports no exporter DaemonSet (deleted, kube-state-metrics not scraped, or its "
              "--metric-labels-allowlist lacks daemonsets=[app,app.kubernetes.io/name])")
    fired = [{"exp_labels": {**rule["labels"], "reason": reason},
              "exp_annotations": {**rule["annotations"],
                                  "summary": rule["annotations"]["summary"].replace("{{ $labels.reason }}", reason)}}]
    cases = [{"eval_time": f"{m}m", "alertname": "GpudashGpuDataMissing", "exp_alerts": fired if named else []}
             for m in range(DELETED_FIRED_BY, FINAL // 60)]
    promtool_test(tmp_path, "renamed_gpus.yaml", [{"name": "GPUs of a named resource, no exporter DaemonSet",
                                                     "interval": f"{STEP}s", "input_series": series,
                                                     "alert_rule_test": cases}], evaluation_interval="30s")

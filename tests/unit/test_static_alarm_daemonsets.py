"""A static per-pod alarm names one value of each dimension; the agent's job gives each exporter pod its own
namespace as `Namespace` and the cluster's deployment style's `Service`. With exporter.more_daemonsets in another
namespace, a pod on a GPU of that DaemonSet's exporter publishes under a Namespace its alarm does not name: generate
refuses such a build. Each case runs the generated agent config through the agent model
(tests/support/cloudwatch_agent.py) on the crafted fleet (ml/infer-1 holds an idle GPU of ip-10-0-1-2 whose memory
is nearly full, and whose exporter pod is the more_daemonsets DaemonSet's) and evaluates the generated alarm
(tests/support/cloudwatch_eval.py): the framebuffer-full alarm of the pod, a classic one (the idle alarm of a listed
pod is a Metrics Insights alarm, which names no Namespace).
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.errors import InputError
from generator.lint import run
from generator.lint.feed_rules import RULES
from generator.output import encode
from generator.project import load_project
from generator.render import alarms as alarms_module
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import EXPORTER_NAMESPACE, STEP, discovered, payload
from tests.support.lint_input import lint_input

END = 2100
CHART_NODE = "ip-10-0-1-2"  # infer-1's (allocated, idle) GPU: its exporter is the chart's
STATIC = "alarms:\n  per_pod: static\n  static_pods: [ml/infer-1]\n"
WITH_NAMESPACE = "cloudwatch:\n  dimensions: [ClusterName, Namespace, Service, namespace, pod]\n"


def _meta(node: str, namespace: str, daemonset: str, label: tuple[str, str]) -> dict[str, str]:
    """An exporter pod on `node` as Kubernetes SD meets it: of DaemonSet namespace/daemonset, labelled `label`."""
    key = "__meta_kubernetes_pod_label_" + label[0].replace(".", "_").replace("/", "_")
    return {"__address__": f"10.0.1.{node[-1]}:9400", "__meta_kubernetes_namespace": namespace,
            "__meta_kubernetes_pod_name": f"{daemonset}-{node[-1]}", "__meta_kubernetes_pod_node_name": node,
            "__meta_kubernetes_pod_container_port_number": "9400", key: label[1],
            "__meta_kubernetes_pod_controller_kind": "DaemonSet", "__meta_kubernetes_pod_controller_name": daemonset}


def _datapoints(files, project, chart_namespace: str):
    """What the cluster's agent publishes: ip-10-0-1-1 served by the operator's exporter, ip-10-0-1-2 by the chart's
    DaemonSet dcgm-exporter in `chart_namespace` (its label app.kubernetes.io/name=dcgm-exporter)."""
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    targets = {"ip-10-0-1-1": discovered(job, _meta("ip-10-0-1-1", EXPORTER_NAMESPACE, "nvidia-dcgm-exporter",
                                                    ("app", "nvidia-dcgm-exporter"))),
               CHART_NODE: discovered(job, _meta(CHART_NODE, chart_namespace, "dcgm-exporter",
                                                 ("app.kubernetes.io/name", "dcgm-exporter")))}
    return Agent(config, job).run([Scrape(k * STEP, payload(node, k, project.catalog), labels)
                                   for k in range(-1, END // STEP) for node, labels in targets.items()])


def _alarm(files, suffix: str, rule: str = "framebuffer-full-warning") -> dict:
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if a["Request"]["AlarmName"] == f"gpudash-gpu-cluster-{rule}{suffix}"]
    return request


def _states(request, datapoints) -> dict:
    return cloudwatch_eval.alarm(request, datapoints, END)


def test_a_static_alarm_naming_namespace_is_refused_where_the_exporter_daemonsets_run_in_several(project_dir):
    """ml/infer-1's static alarm named Namespace=gpu-operator; its GPU's exporter is the chart's in `monitoring`, which
    the agent publishes with Namespace=monitoring: the alarm read nothing for it. generate refuses, at the setting."""
    config = project_dir("exporter:\n  more_daemonsets: [monitoring/dcgm-exporter]\n" + WITH_NAMESPACE + STATIC)
    with pytest.raises(InputError) as refused:
        build(load_project(config))
    assert refused.value.where == f"{config}:4"
    assert refused.value.what == (
        "alarm 'framebuffer-full': a static per-pod alarm names one value of Namespace (the exporter pod's namespace, which "
        "cloudwatch.dimensions publishes), and cluster gpu-cluster's exporter DaemonSets run in gpu-operator, "
        "monitoring (exporter.more_daemonsets): pod ml/infer-1's alarm would read nothing while the pod runs on a GPU "
        "monitoring's exporter serves")
    assert refused.value.hint == ("leave Namespace out of cloudwatch.dimensions, or use alarms.per_pod: group_by "
                                  "(its query reads every Namespace)")


def test_what_the_refusal_guards_and_what_its_fixes_read(project_dir, monkeypatch):
    """Forced past the refusal (the alarm built as if the cluster named the first DaemonSet only), infer-1's full GPU
    never reaches its alarm: it stays out of ALARM. Either fix the refusal names reads it: Namespace left out of the
    per-pod set, or alarms.per_pod: group_by (one contributor per pod, every Namespace)."""
    more = "exporter:\n  more_daemonsets: [monitoring/dcgm-exporter]\n"
    project = load_project(project_dir(more + WITH_NAMESPACE + STATIC))
    first_only = alarms_module.named_daemonsets
    with monkeypatch.context() as patch:
        patch.setattr(alarms_module, "named_daemonsets", lambda settings, cluster=None:
                      first_only(settings, cluster)[:1])
        files = encode(build(project))
    request = _alarm(files, "-ml-infer-1")
    assert {d["Name"]: d["Value"] for d in request["Dimensions"]}["Namespace"] == "gpu-operator"
    published = _datapoints(files, project, "monitoring")  # read by the alarm as built and as it would be moved
    assert _states(request, published) != {(): "ALARM"}
    # lint says so of such a build (AG001 compared the dimension names alone)
    with monkeypatch.context() as patch:
        patch.setattr(alarms_module, "named_daemonsets", lambda settings, cluster=None:
                      first_only(settings, cluster)[:1])
        subject = lint_input(project)
    found = [f for f in run([r for r in RULES if r.id == "AG001"], subject)
             if "gpudash-gpu-cluster-framebuffer-full-warning-ml-infer-1" in f.where]
    assert [(f.severity, f.message) for f in found] == [("error", (
        "reads Namespace=gpu-operator; the agent of gpu-cluster (k8s/cwagent-prometheus-config-gpu-cluster.yaml) "
        "publishes the pods of the exporter DaemonSet monitoring/dcgm-exporter (app=nvidia-dcgm-exporter) with "
        "Namespace=monitoring: the alarm reads nothing for a pod on their GPUs"))]
    # what it misses: the pod's full GPU is published under Namespace=monitoring, where the alarm would fire
    moved = {**request, "Dimensions": [{**d, "Value": "monitoring"} if d["Name"] == "Namespace" else d
                                       for d in request["Dimensions"]]}
    assert _states(moved, published) == {(): "ALARM"}

    project = load_project(project_dir(more + "cloudwatch:\n  dimensions: [ClusterName, Service, namespace, pod]\n"
                                       + STATIC))
    files = encode(build(project))
    assert _states(_alarm(files, "-ml-infer-1"), _datapoints(files, project, "monitoring")) == {(): "ALARM"}
    project = load_project(project_dir(more + WITH_NAMESPACE))
    files = encode(build(project))
    firing = {key for key, state in _states(_alarm(files, "", "gpu-idle-warning"),
                                            _datapoints(files, project, "monitoring")).items() if state == "ALARM"}
    assert (("namespace", "ml"), ("pod", "infer-1"), ("gpu", "1")) in firing, firing


def test_a_chart_beside_the_operator_in_its_namespace_publishes_what_the_static_alarm_reads(project_dir):
    """The chart's DaemonSet in the operator's namespace, named in exporter.more_daemonsets: the agent keeps its pods by
    their owner and publishes them with the cluster's Namespace and Service, the values infer-1's static alarm names:
    the alarm reads the pod's full GPU."""
    project = load_project(project_dir("exporter:\n  more_daemonsets: [dcgm-exporter]\n" + WITH_NAMESPACE + STATIC))
    files = encode(build(project))
    request = _alarm(files, "-ml-infer-1")
    assert {d["Name"]: d["Value"] for d in request["Dimensions"]} == {
        "ClusterName": "gpu-cluster", "Namespace": "gpu-operator", "Service": "nvidia-dcgm-exporter",
        "namespace": "ml", "pod": "infer-1"}
    assert _states(request, _datapoints(files, project, EXPORTER_NAMESPACE)) == {(): "ALARM"}

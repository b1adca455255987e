"""Scraped through a ServiceMonitor that honors labels and keeps its target's pod (the GPU operator's with
honorLabels: true, as dcgm-exporter #85 and #27 advise), a GPU no pod holds carries the exporter pod as its
workload's `pod`, `namespace` and `container` (test_verify_target_pod_as_workload scrapes it so on a real Prometheus),
and with KUBERNETES_VIRTUAL_GPUS so does a held GPU's own series (the device's, which the exporter writes without a
pod). Every panel, variable and alert reads such a series as one without a pod (promql.pod_named), as through gpudash's
ServiceMonitor, which drops the target's three labels: on a real Prometheus, the same answers at every step.

The fleet (30 s scrapes, 45 minutes): node-a GPU 0 held by ml/train-a; GPU 1 by ml/job-1 until scrape LEFT, idle
after; GPU 2 split into two MIG instances, 1 held by ml/mig-a, 2 idle; GPU 3 idle throughout. node-b GPU 0 held by
team-b/infer-b; GPU 1 idle until scrape TAKEN, held by team-b/late-b after. Each node's exporter pod is
gpu-operator/nvidia-dcgm-exporter-<five characters>. Built twice: the default build over an exporter without
KUBERNETES_VIRTUAL_GPUS, and one with exporter.virtual_gpus over an exporter with it (4.5.3+: a held GPU's per-process
fields written as its own series and one copy per pod, with pod_uid, each the pod's share).

Truth: the two Prometheus servers, one holding the series as gpudash's ServiceMonitor writes them (no pod on a GPU
no pod holds, nor on a held GPU's own series), the other as the honoring one writes them (the exporter pod there),
answer every panel (at All, with a pod that left its GPU picked, with a namespace picked), every variable and every
alert alike; the exporter pod is in no answer. Before, 'Pods on GPUs' listed gpu-operator/nvidia-dcgm-exporter-x7k2p
holding 3 GPUs (its idle GPU 1, GPU 3 and MIG instance 2), the namespace variable listed gpu-operator, the idle alert
judged the exporter pod idle on them, and a per-GPU panel with the pod or namespace picked drew the GPU the pod left
(node-a GPU 1 at 0 %) for the look-back after, and at All, with exporter.virtual_gpus, 'Framebuffer in use' read
22 % for 19 % at the step the pod left (the GPU read from the pod's share: promql._left_idle read an exporter pod as
a pod there).

A workload pod named as the exporter DaemonSet's pods are (`nvidia-dcgm-exporter-` and five of Kubernetes' generated
characters: a Job so named) reads as no pod too, whatever its namespace: a selector cannot test the pod and its
namespace together (promql.pod_named), and verify names such a pod (docs/verify.md).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import pytest

from generator.artifacts import build, grafana_dashboards
from generator.catalog import PER_PROCESS_FIELDS
from generator.output import encode
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.render.grafana import variable_names, variable_query
from tests.support.projects import bundled_project
from tests.support.prometheus_server import backfilled, backfilled_fixture, counted_inline, range_macros
from tests.support.promtool_rules import rule_groups

SCRAPE, SCRAPES = 30, 90
LEFT, TAKEN = 60, 66  # ml/job-1 leaves node-a's GPU 1 at scrape LEFT; team-b/late-b takes node-b's GPU 1 at TAKEN
EXPORTER = {"node-a": "nvidia-dcgm-exporter-x7k2p", "node-b": "nvidia-dcgm-exporter-q8w2z"}
OFFSET = {"node-a": 3, "node-b": 11}  # each node's scrape time within the interval
MODEL = 'modelName="NVIDIA A100-SXM4-80GB"'
BUSY = {"util": 80, "fb_used": 30000, "fb_free": 50000, "power": 250, "temp": 70, "clock": 1800, "active": 0.8}
IDLE = {"util": 0, "fb_used": 500, "fb_free": 79500, "power": 60, "temp": 40, "clock": 210, "active": 0.0}
GAUGES = {"DCGM_FI_DEV_GPU_UTIL": "util", "DCGM_FI_DEV_FB_USED": "fb_used", "DCGM_FI_DEV_FB_FREE": "fb_free",
          "DCGM_FI_DEV_POWER_USAGE": "power", "DCGM_FI_DEV_GPU_TEMP": "temp", "DCGM_FI_DEV_SM_CLOCK": "clock",
          "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "active"}
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # a counter: the GPU's power over each interval, in mJ
SHARE = 0.75  # a pod's processes' share of its GPU's per-process fields (KUBERNETES_VIRTUAL_GPUS)
SETTINGS = {"defaults": "", "virtual_gpus": "exporter:\n  virtual_gpus: true\n"}


def _slots(k: int) -> list[tuple[str, str, tuple[str, str] | None, dict]]:
    """(node, the labels of a GPU or MIG instance, the pod holding it at scrape k or None, its readings)."""
    def gpu(node: str, index: int, instance: str = "") -> str:
        mig = f',GPU_I_ID="{instance}",GPU_I_PROFILE="3g.40gb"' if instance else ""
        return f'gpu="{index}",UUID="GPU-{node}-{index}",device="nvidia{index}",{MODEL},Hostname="{node}"{mig}'
    held = lambda namespace, pod: ((namespace, pod), BUSY)  # noqa: E731
    idle = (None, IDLE)
    return [(node, labels, *holder) for node, labels, holder in (
        ("node-a", gpu("node-a", 0), held("ml", "train-a")),
        ("node-a", gpu("node-a", 1), held("ml", "job-1") if k < LEFT else idle),
        ("node-a", gpu("node-a", 2, "1"), held("ml", "mig-a")),
        ("node-a", gpu("node-a", 2, "2"), idle),
        ("node-a", gpu("node-a", 3), idle),
        ("node-b", gpu("node-b", 0), held("team-b", "infer-b")),
        ("node-b", gpu("node-b", 1), held("team-b", "late-b") if k >= TAKEN else idle))]


def _target(node: str, honoring: bool, pod: tuple[str, str] | None) -> str:
    """The labels a series gets from its scrape: the target's (the operator's job, the node relabelled), and the
    workload's as the exporter wrote them, or the exporter pod's where it wrote none and the job keeps the target's."""
    index = 1 + list(EXPORTER).index(node)
    labels = (f'instance="10.0.0.{index}:9400",job="nvidia-dcgm-exporter",service="nvidia-dcgm-exporter",'
              f'endpoint="gpu-metrics",node="{node}"')
    if pod:
        return f'{labels},container="main",namespace="{pod[0]}",pod="{pod[1]}"'
    if honoring:
        return f'{labels},container="nvidia-dcgm-exporter",namespace="gpu-operator",pod="{EXPORTER[node]}"'
    return labels


def openmetrics(start: int, honoring: bool, per_process: bool) -> str:
    """The fleet's series as Prometheus stores them through gpudash's ServiceMonitor (not `honoring`) or the honoring
    one; `per_process`: an exporter with KUBERNETES_VIRTUAL_GPUS (4.5.3+): a held GPU's per-process fields as its own
    series (no pod) and the pod's copy (pod_uid, its share), its other fields the pod's copy alone."""
    rows: dict[str, list[str]] = {metric: [] for metric in (*GAUGES, ENERGY)}
    energy: dict[str, float] = {}
    for k in range(SCRAPES):
        for node, labels, pod, readings in _slots(k):
            at = start + k * SCRAPE + OFFSET[node]
            energy[labels] = energy.get(labels, 1e9) + readings["power"] * SCRAPE * 1000
            for metric in (*GAUGES, ENERGY):
                value = energy[labels] if metric == ENERGY else readings[GAUGES[metric]]
                if per_process and pod and metric in PER_PROCESS_FIELDS:
                    rows[metric].append(f"{metric}{{{labels},{_target(node, honoring, None)}}} {value} {at}")
                    copy = f'{labels},{_target(node, honoring, pod)},pod_uid="uid-{pod[1]}"'
                    rows[metric].append(f"{metric}{{{copy}}} {value * SHARE} {at}")
                else:
                    rows[metric].append(f"{metric}{{{labels},{_target(node, honoring, pod)}}} {value} {at}")
    lines = []
    for metric, samples in rows.items():
        lines.append(f"# TYPE {metric} {'counter' if metric == ENERGY else 'gauge'}")
        lines += samples
    return "\n".join(lines + ["# EOF"]) + "\n"


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """{(build, "truth" or "honoring"): (prometheus, start)}: each build's fleet as each ServiceMonitor stores it."""
    keys = [(build_, side) for build_ in SETTINGS for side in ("truth", "honoring")]
    # the folders made here, one after another: pytest makes its base folder at the first, and threads raced to
    folders = {(build_, side): tmp_path_factory.mktemp(f"exporter-pod-{build_}-{side}") for build_, side in keys}
    with ExitStack() as stack, ThreadPoolExecutor(len(keys)) as pool:
        def started(key):
            build_, side = key
            folder = folders[key]
            prometheus, start = stack.enter_context(backfilled(
                folder, lambda start: openmetrics(start, side == "honoring", build_ == "virtual_gpus"),
                SCRAPES * SCRAPE, SCRAPE))
            prometheus.remember_answers()  # a panel both builds write alike, or no pick changes, is asked once
            return key, (prometheus, start)
        yield dict(pool.map(started, keys))


# the steps read: from two scrapes before ml/job-1 left to six after team-b/late-b came, each 15 s into an interval
FIRST, STEPS = LEFT - 2, TAKEN + 6 - (LEFT - 2)
PICKED = {"all": {}, "the pod that left": {"pod": "job-1"}, "a namespace": {"namespace": "ml"}}


def _targets() -> list[tuple[str, str, dict]]:
    return [(name, panel.get("title", ""), target) for name, text in SETTINGS.items()
            for dashboard in grafana_dashboards(bundled_project(text))
            for panel in dashboard.model["panels"] for target in panel.get("targets", ())]


TARGETS = _targets()


def _shown(servers, name: str, side: str, target: dict, picked: dict) -> dict[float, dict[str, float]]:
    prometheus, start = servers[(name, side)]
    expr = interpolate(counted_inline(target["expr"], bundled_project(SETTINGS[name])), {
        **range_macros(f"{SCRAPES * SCRAPE}s"), "__interval": f"{SCRAPE}s", "__rate_interval": f"{4 * SCRAPE}s",
        **variables(picked, ("namespace", "pod", "node", "gpu"))})
    first = start + FIRST * SCRAPE + 15
    # an instant panel as Grafana reads it at the end of a dashboard's range ending at each step (query_at's `instant`)
    return {at: {render_legend(target.get("legendFormat", ""), s["metric"]): float(s["value"][1]) for s in result}
            for at, result in prometheus.query_at(expr, first, STEPS, SCRAPE,
                                                  instant=bool(target.get("instant"))).items()}


def _differ(one: dict[str, float], other: dict[str, float]) -> bool:
    return set(one) != set(other) or any(not math.isclose(one[k], other[k], rel_tol=1e-9, abs_tol=1e-9) for k in one)


def _wrong(servers, name: str, target: dict, picked: str) -> dict:
    """{second of the history: (the panel through gpudash's ServiceMonitor, through the honoring one)} where they
    differ."""
    truth = _shown(servers, name, "truth", target, PICKED[picked])
    shown = _shown(servers, name, "honoring", target, PICKED[picked])
    return {round(at - servers[(name, "truth")][1]): (truth[at], shown.get(at)) for at in truth
            if _differ(truth[at], shown.get(at, {}))}


SHOWN = [(name, title, target, picked) for name, title, target in TARGETS for picked in sorted(PICKED)]


@pytest.mark.parametrize("name, title, target, picked", SHOWN,
                         ids=[f"{n}/{t}/{i}-{p}" for i, (n, t, _, p) in enumerate(SHOWN)])
def test_every_panel_reads_the_exporter_pod_as_no_pod(servers, name, title, target, picked):
    """Every panel at All, with the pod that left picked and with a namespace picked."""
    wrong = _wrong(servers, name, target, picked)
    assert not wrong, f"{title}, {picked}: (second of the history): (through gpudash's ServiceMonitor, honoring) {wrong}"


def test_pods_on_gpus_lists_the_workload_pods_alone(servers):
    """At the last step: each workload pod with the GPUs it holds, no exporter pod (it held node-a's GPU 1 and 3 and
    MIG instance 2 before), in both builds."""
    for name, text in SETTINGS.items():
        target = next(t for n, title, t in TARGETS if n == name and title == "Pods on GPUs")
        shown = _shown(servers, name, "honoring", target, {})
        assert shown[max(shown)] == {f"Pod {pod}": 1.0 for pod in (
            "ml/train-a", "ml/mig-a", "team-b/infer-b", "team-b/late-b")}, (name, shown[max(shown)])


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_variables_list_the_workloads_alone(servers, name):
    """Each dashboard variable lists the same values through either ServiceMonitor: the namespace variable ml and
    team-b (not gpu-operator), the pod variable the workload pods."""
    project = bundled_project(SETTINGS[name])
    listed = {}
    for side in ("truth", "honoring"):
        prometheus, start = servers[(name, side)]
        for variable, key, _ in variable_names(project.settings):
            query, _ = variable_query(variable, key, project.catalog, project.settings)
            expr = interpolate(query.removeprefix("query_result(").removesuffix(")"), {
                **range_macros(f"{SCRAPES * SCRAPE}s"), **variables({}, ("namespace", "pod", "node", "gpu"))})
            label = {"namespace": "namespace", "pod": "pod"}.get(key, key)
            listed[(side, variable)] = {s["metric"].get(label) for s in prometheus.query(
                expr, at=start + (SCRAPES - 1) * SCRAPE + 15)}
    assert all(listed[("truth", v)] == listed[("honoring", v)] for _, v in listed), listed
    assert listed[("honoring", "namespace")] == {"ml", "team-b"}, listed
    assert listed[("honoring", "pod")] == {"train-a", "job-1", "mig-a", "infer-b", "late-b"}, listed


def _alerts(name: str) -> list[tuple[str, str]]:
    """Each alert's name and expression in the rules file the build writes. Read as the test module is collected, in
    every test process: built without its Grafana dashboards (the rules are the same: the build of the rules file
    reads none) and parsed with libyaml (rule_groups: 0.01 s a settings' 430 KB file, PyYAML's Python parser 0.27)."""
    files = encode(build(bundled_project(SETTINGS[name]), grafana=False))
    groups = rule_groups(files["prometheus/rules.yaml"].decode())
    return [(rule["alert"], rule["expr"]) for group in groups for rule in group["rules"] if "alert" in rule]


ALERTS = [(name, alert, expr) for name in SETTINGS for alert, expr in _alerts(name)]


@pytest.mark.parametrize("name, alert, expr", ALERTS, ids=[f"{n}/{a}" for n, a, _ in ALERTS])
def test_every_alert_judges_the_exporter_pod_as_no_pod(servers, name, alert, expr):
    """Each alert's condition at the last scrape and two after ml/job-1 left: the same series through either
    ServiceMonitor (the idle alert judged the exporter pod on node-a's idle GPUs before)."""
    project = bundled_project(SETTINGS[name])
    expr = counted_inline(expr, project)
    answers = {}
    for side in ("truth", "honoring"):
        prometheus, start = servers[(name, side)]
        for k in (LEFT + 2, SCRAPES - 1):
            answers[(side, k)] = sorted((tuple(sorted(s["metric"].items())), round(float(s["value"][1]), 9))
                                        for s in prometheus.query(expr, at=start + k * SCRAPE + 15))
    wrong = {k: (answers[("truth", k)], answers[("honoring", k)]) for k in (LEFT + 2, SCRAPES - 1)
             if answers[("truth", k)] != answers[("honoring", k)]}
    assert not wrong, f"{alert}: scrape: (through gpudash's ServiceMonitor, honoring) {wrong}"


JOB_POD = ("ml", "nvidia-dcgm-exporter-bxmtz")  # the pod of a user's Job named like the operator's exporter DaemonSet


def _node_a(honoring: bool, holders):
    """node-a's GPU 0 and 1 (their temperatures 50 and 51) as a ServiceMonitor stores them (the honoring one, or
    gpudash's), `holders(k)` the pod holding each at scrape k (None: idle)."""
    def openmetrics(start: int) -> str:
        lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
        for k in range(SCRAPES):
            for index, pod in enumerate(holders(k)):
                labels = f'gpu="{index}",UUID="GPU-node-a-{index}",device="nvidia{index}",{MODEL},Hostname="node-a"'
                lines.append(f"DCGM_FI_DEV_GPU_TEMP{{{labels},{_target('node-a', honoring, pod)}}} {50 + index} "
                             f"{start + k * SCRAPE + OFFSET['node-a']}")
        return "\n".join(lines + ["# EOF"]) + "\n"
    return openmetrics


# node-a through the honoring ServiceMonitor: GPU 0 held by the Job's pod, GPU 1 idle (the exporter pod's)
job_fleet = backfilled_fixture("exporter-named-job", _node_a(True, lambda k: (JOB_POD, None)), SCRAPES * SCRAPE,
                               SCRAPE)


@pytest.mark.xfail(strict=True, reason=(
    "a pod label is read as the exporter's own pod by its name alone (promql.pod_named: `<DaemonSet>-` and five of "
    "Kubernetes' generated characters), whatever its namespace: the pod of a user's Job named like the exporter "
    "DaemonSet (ml/nvidia-dcgm-exporter-bxmtz) holding a GPU is read as no pod, so 'Pods on GPUs' leaves it out and "
    "its GPU reads as idle, and with its namespace picked 'GPUs reporting' counts none; telling the exporter's "
    "namespace apart needs a second selector for every one that reads the pod label"))
@pytest.mark.parametrize("title, picked, truth", [
    ("Pods on GPUs", {}, {"Pod ml/nvidia-dcgm-exporter-bxmtz": 1.0}),
    ("GPUs reporting", {"namespace": JOB_POD[0]}, {"DCGM_FI_DEV_GPU_TEMP": 1.0})])
def test_a_workload_pod_named_like_the_exporters_pods_is_a_pod(job_fleet, title, picked, truth):
    prometheus, start = job_fleet
    target = next(t for n, name, t in TARGETS if n == "defaults" and name == title)
    expr = interpolate(counted_inline(target["expr"], bundled_project("")), {
        **range_macros(f"{SCRAPES * SCRAPE}s"), "__interval": f"{SCRAPE}s", "__rate_interval": f"{4 * SCRAPE}s",
        **variables(picked, ("namespace", "pod", "node", "gpu"))})
    shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1])
             for s in prometheus.query(expr, at=start + (SCRAPES - 1) * SCRAPE + 15)}
    assert shown == truth, shown



VALIDATOR = ("gpu-operator", "nvidia-cuda-validator-h7x2k")  # a workload pod in the exporter's own namespace


def _validated(k: int) -> tuple:
    """node-a: GPU 0 held by a pod in the exporter's namespace (the GPU operator's CUDA validator) until scrape LEFT,
    idle after; GPU 1 idle."""
    return (VALIDATOR if k < LEFT else None, None)


validated_truth = backfilled_fixture("exporter-namespace-truth", _node_a(False, _validated), SCRAPES * SCRAPE, SCRAPE)
validated_honoring = backfilled_fixture("exporter-namespace-honoring", _node_a(True, _validated), SCRAPES * SCRAPE,
                                        SCRAPE)


@pytest.mark.parametrize("title", ["GPU temperature", "GPUs reporting"])
def test_the_exporters_namespace_picked_reads_its_workload_pods_gpu_alone(validated_truth, validated_honoring, title):
    """With the exporter's namespace picked (listed where a workload pod runs there), a per-GPU panel reads the GPU
    that pod holds while it holds it, as through gpudash's ServiceMonitor; before, through the honoring one it read
    node-a's GPU 1, idle throughout, and GPU 0 after the pod left (the exporter pod's series in that namespace)."""
    servers = {("defaults", "truth"): validated_truth, ("defaults", "honoring"): validated_honoring}
    target = next(t for n, name, t in TARGETS if n == "defaults" and name == title)
    truth, shown = (_shown(servers, "defaults", side, target, {"namespace": VALIDATOR[0]})
                    for side in ("truth", "honoring"))
    wrong = {round(at - validated_truth[1]): (truth[at], shown.get(at)) for at in truth
             if _differ(truth[at], shown.get(at, {}))}
    assert not wrong, wrong

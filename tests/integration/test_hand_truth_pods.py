"""Two per-pod panels, the framebuffer alarm and the node variable with a pod picked, against a small fleet whose
truth is worked out by hand here (not by tests/support's truth function): an exporter upgraded a scrape ago
(`Hostname`, then `hostname`; its series carry no `node` label) and a `hostname` one, the pod name `trainer` in two
namespaces, a MIG GPU whose two instances two pods of two namespaces hold, and an idle GPU (no pod). Each query is the
one the build renders, evaluated by promtool on the series Prometheus would store.

By hand: team-a/trainer holds n-a's GPUs 0 and 1 (1,000 + 3,000 MiB used, 1,000 and 21,000 free; 200 + 250 W),
team-b/trainer n-b's GPU 0 (5,000 MiB of 5,100; 300 W), n-b's GPU 1 is idle (60 W, 500 MiB free, no pod), and n-c's
GPU 0 (150 W) is split: instance 1 held by team-b/infer (2,000 of 10,000 MiB), instance 2 by team-a/infer (700 of
710 MiB)."""

from __future__ import annotations

import json
import re
import subprocess

from generator.preview.interpolate import interpolate, variables
from generator.render.alarms import prometheus_rules
from tests.support import mixed_fleet
from tests.support.mixed_fleet import Gpu, Instance, Node
from tests.support.projects import bundled_panels, bundled_project
from tests.support.prometheus_server import binary, range_macros

STEP, STEPS = 30, 40
_SAMPLE = re.compile(r"\{([^}]*)\} ([0-9.E+-]+)")


def _gpu(index, power, *instances):
    return Gpu(index=index, temp=50, power=power, sm_clock=1400, xid=0, energy_mw=1000, replays_per_s=0,
               memory_temp=None, instances=instances, util=40)


NODES = (
    Node("n-a", "Hostname", "nvidia-dcgm-exporter-aaaaa", (
        _gpu(0, 200, Instance(1000, 1000, 0.5, pod=("team-a", "trainer"))),
        _gpu(1, 250, Instance(3000, 21000, 0.5, pod=("team-a", "trainer"))))),
    Node("n-b", "hostname", "nvidia-dcgm-exporter-bbbbb", (
        _gpu(0, 300, Instance(5000, 100, 0.5, pod=("team-b", "trainer"))),
        _gpu(1, 60, Instance(0, 500, 0.0)))),
    Node("n-c", "Hostname", "nvidia-dcgm-exporter-ccccc", (
        _gpu(0, 150, Instance(2000, 8000, 0.5, pod=("team-b", "infer"), id="1", profile="3g.20gb"),
             Instance(700, 10, 0.5, pod=("team-a", "infer"), id="2", profile="1g.5gb")),)),
)
FIELDS = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE")
UPGRADED = 29  # n-a's exporter is upgraded a scrape before the queries' instant (15 m: scrape 30)


def _served(node: Node, scrape: int) -> str:
    """What n-a's exporter serves mid-upgrade: `Hostname` until scrape UPGRADED, `hostname` from it on."""
    text = mixed_fleet.payload(node, scrape * STEP, STEP)
    return text.replace('Hostname="', 'hostname="') if node.name == "n-a" and scrape >= UPGRADED else text


def _series() -> list[dict]:
    """The fleet's series as Prometheus stores them; n-a's without the `node` target label (a scrape path that
    does not attach it: its GPUs are known by their exporter's spellings alone)."""
    stored = []
    for node in NODES:
        for series, values in mixed_fleet.stored(node, tuple(f"{f}{{" for f in FIELDS), STEPS, STEP, _served).items():
            if node.name == "n-a":
                series = series.replace(',node="n-a"', "")
            stored.append({"series": series, "values": " ".join(values)})
    return stored


def _evaluated(tmp_path, name: str, expr: str) -> dict[tuple[str, str], float]:
    """The query's value at 15 minutes by (namespace, pod)."""
    return {(labels.get("namespace", ""), labels.get("pod", "")): value
            for labels, value in _evaluated_labels(tmp_path, name, expr)}


def _panel_expr(title: str) -> str:
    """The panel's query as the build ships it, its variables at All (as Grafana interpolates them)."""
    (target,) = bundled_panels()[title]["targets"]
    return interpolate(target["expr"], {"__rate_interval": "2m", **range_macros("2m"),
                                        **variables({}, ("namespace", "pod", "node", "gpu", "cluster"))})


def test_framebuffer_used_by_pod_is_each_pods_sum(tmp_path):
    assert _evaluated(tmp_path, "fb", _panel_expr("Framebuffer used by pod")) == {
        ("team-a", "trainer"): 4000, ("team-b", "trainer"): 5000, ("team-b", "infer"): 2000, ("team-a", "infer"): 700}


def test_power_of_each_pods_gpus_counts_each_gpu_once_and_leaves_the_idle_one_out(tmp_path):
    assert _evaluated(tmp_path, "power", _panel_expr("Power draw of each pod's GPUs")) == {
        ("team-a", "trainer"): 450, ("team-b", "trainer"): 300, ("team-b", "infer"): 150, ("team-a", "infer"): 150}


def test_framebuffer_full_fires_for_the_pods_whose_gpu_or_instance_is_nearly_full(tmp_path):
    project = bundled_project()
    rules = prometheus_rules(project.alarms, project.catalog, project.settings)
    (rule,) = [r for group in rules["groups"] for r in group["rules"]
               if r.get("labels", {}).get("gpudash_rule") == "framebuffer-full"]
    # under 1,024 MiB free (alarms.framebuffer_free_mib): team-a/trainer's GPU 0 (1,000 free), team-b/trainer's
    # (100), team-a/infer's instance (10; the GPU's other instance, 8,000 free, is team-b/infer's); not the idle GPU
    # with 500 free that no pod holds
    assert set(_evaluated(tmp_path, "fb_full", rule["expr"])) == {
        ("team-a", "trainer"), ("team-b", "trainer"), ("team-a", "infer")}


def _node_variable(tmp_path, name: str, **picked: str) -> set[str]:
    """The node variable's values with `picked` (namespace, pod) selected, the others at All, over 15 minutes."""
    from generator.artifacts import grafana_dashboards

    dashboard = next(d.model for d in grafana_dashboards(bundled_project()) if d.model["uid"].endswith("by-pod"))
    (variable,) = [v for v in dashboard["templating"]["list"] if v["name"] == "node"]
    query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
    expr = interpolate(query.removeprefix("query_result(").removesuffix(")"),
                       {"__rate_interval": "2m", **range_macros("15m"),
                        **variables(picked, ("namespace", "pod", "node", "gpu", "cluster"))})
    found = _evaluated_labels(tmp_path, name, expr)
    return {labels["node"] for labels, _ in found}


def _evaluated_labels(tmp_path, name: str, expr: str) -> list[tuple[dict[str, str], float]]:
    """The query's series at 15 minutes, each its labels and value, as promtool evaluates it (read from its report of
    the samples it got where none were expected)."""
    test = {"rule_files": [], "evaluation_interval": "30s", "tests": [{
        "interval": "30s", "input_series": _series(),
        "promql_expr_test": [{"expr": expr, "eval_time": "15m", "exp_samples": []}]}]}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(test))
    out = subprocess.run([binary("promtool"), "test", "rules", str(path)], capture_output=True, text=True)
    report = (out.stdout + out.stderr).split("got:")[-1]
    return [(dict(re.findall(r'(\w+)="([^"]*)"', labels)), float(value)) for labels, value in _SAMPLE.findall(report)]


def test_the_node_variable_with_a_pod_picked_lists_the_nodes_it_holds_gpus_on(tmp_path):
    assert _node_variable(tmp_path, "a", namespace="team-a", pod="trainer") == {"n-a"}
    assert _node_variable(tmp_path, "b", namespace="team-b", pod="trainer") == {"n-b"}
    assert _node_variable(tmp_path, "t", pod="trainer") == {"n-a", "n-b"}
    assert _node_variable(tmp_path, "i", pod="infer") == {"n-c"}
    assert _node_variable(tmp_path, "all") == {"n-a", "n-b", "n-c"}


def test_the_framebuffer_alarm_on_cloudwatch_reads_the_pods_the_rule_fires_for(tmp_path):
    """Its CloudWatch form (the least free MiB of a pod's GPUs or instances, through the build's agent model) is under
    1,024 for the three pods the rule fires for, and the idle GPU is no pod's."""
    from tests.support.agent_points import alarm_values, alarms_through_agent

    requests, points = alarms_through_agent(bundled_project(), STEP, STEPS * STEP, NODES)
    request = requests["gpudash-gpu-cluster-framebuffer-full-warning"]
    values = alarm_values(request, points, STEPS * STEP, 300)
    assert {dict(key)["namespace"] + "/" + dict(key)["pod"]: value * request["Threshold"]
            for key, value in values.items()} == {"team-a/trainer": 1000, "team-b/trainer": 100, "team-a/infer": 10,
                                                   "team-b/infer": 8000}
    assert request["ComparisonOperator"] == "LessThanThreshold" and request["Threshold"] == 1024

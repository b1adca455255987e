"""A pod's sums of a gauge and its GPU count on CloudWatch are exact on the OTel pipeline, missed scrapes or not.

The agent adds up each scrape of a node's exporter per pod (render/agent_otel.pod_totals) and publishes the
pod's total of that scrape; a widget's AVG over a period is then the mean of the totals of the scrapes that
arrived. The truth here is computed from the readings the exporters served at the scrapes that arrived, and
from nothing the agent, CloudWatch or gpudash compute: per pod and node, the mean over those scrapes of the sum
over the pod's GPUs of each GPU's reading (a device field read once per GPU however many of its MIG instances the
pod holds, a field MIG reports per instance added over the pod's instances), and how many GPUs it holds.

The fleet: a pod holding two GPUs on one node, the same pod name in another namespace, a MIG GPU whose two instances one pod holds and whose third another pod
holds, a GPU no pod holds, a pod holding one GPU, a pod that moves to another node (a StatefulSet's pod, its
name kept) inside a period; nodes that miss scrapes, runs of them included. A pod name two nodes' exporters
list at once (not a Kubernetes pod: it runs on one node) reads the mean of the two nodes' totals, as the README
says: the agent adds up one node's scrape at a time. On
`agent.pipeline: classic` the totals are not made: its per-pod sums keep the stated limit ((n - m) / n of the
value when m of n scrapes are missed), which the header says.
"""

from __future__ import annotations

import json
from functools import lru_cache
from statistics import mean

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import close, header, notes
from tests.support.dcgm_fleet import target_labels

START, END, STEP, PERIOD = 0, 3600, 30, 300
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
DASHBOARD_FILE = "cloudwatch/dashboards/gpudash-gpu-cluster-pods.json"
POWER, FB, TEMP = "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP"
A, B = "ip-10-0-1-1", "ip-10-0-1-2"
TITLES = {"Power draw by pod": POWER, "Framebuffer used by pod": FB, "GPUs per pod": TEMP}

DASHBOARD = f'''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="pods", title="Pods", rows=[Row("pods", [
        Panel("Power draw by pod", Query("{POWER}", "sum", ("pod",))),
        Panel("Framebuffer used by pod", Query("{FB}", "sum", ("pod",))),
        Panel("GPUs per pod", Query("{TEMP}", "count", ("namespace", "pod"))),
    ])])
'''

MOVE = 1650  # ml/ckpt-0 leaves node A's GPU 3 and holds node B's GPU 2 from then on

# (node, gpu index, MIG instance or None, (namespace, pod) or None, held from, held until)
SERIES = (
    (A, 0, None, ("ml", "train-0"), START, END), (A, 1, None, ("ml", "train-0"), START, END),
    (A, 2, None, ("research", "train-0"), START, END),  # the same pod name in another namespace
    (A, 3, None, ("ml", "ckpt-0"), START - STEP, MOVE), (A, 3, None, None, MOVE, END),  # then idle
    (A, 4, None, None, START - STEP, END),  # idle
    (B, 0, "1", ("ml", "mig-job"), START - STEP, END), (B, 0, "2", ("ml", "mig-job"), START - STEP, END),
    (B, 0, "3", ("ml", "notebook"), START - STEP, END),  # that GPU's third instance, another pod
    (B, 1, None, ("ml", "infer-1"), START - STEP, END),
    (B, 2, None, None, START - STEP, MOVE), (B, 2, None, ("ml", "ckpt-0"), MOVE, END),  # the pod moved here
)
HELD = [s for s in SERIES if s[3]]


def served(node: str, t: int) -> list[tuple]:
    return [s for s in SERIES if s[0] == node and s[4] <= t < s[5]]


def reading(metric: str, series: tuple, t: int) -> float:
    """What the exporter serves for `series` at t: varies by GPU, instance and time."""
    node, index, instance = series[:3]
    g = (0 if node == A else 5) + index
    k = t // STEP
    if metric == POWER:  # a device field: every instance of a GPU reads the GPU's
        return 60.0 + 25 * g + (k * (g + 3)) % 17 * 2.5
    if metric == TEMP:
        return 40.0 + g + k % 3
    share = {None: 1.0, "1": 0.5, "2": 0.25, "3": 0.125}[instance]  # framebuffer: each instance its own
    return round(share * (2000.0 * (g + 1) + (k * (3 * g + 1)) % 23 * 40))


@lru_cache(maxsize=None)
def arrived(node: str) -> tuple[int, ...]:
    """Node A misses one scrape in six and a run of four; node B every fourth in its second half-hour."""
    times = range(START - STEP, END, STEP)
    lost = {t for i, t in enumerate(times) if i % 6 == 2} | {t for t in times if 1500 <= t < 1620} if node == A \
        else {t for i, t in enumerate(times) if i % 4 == 1 and t >= 1800}
    return tuple(t for t in times if t not in lost)


def payload(node: str, t: int) -> str:
    lines = []
    for metric in (POWER, FB, TEMP):
        lines += [f"# HELP {metric} {metric}.", f"# TYPE {metric} gauge"]
        for series in served(node, t):
            index, instance, pod = series[1:4]
            labels = {"gpu": str(index), "UUID": f"GPU-{node}-{index}", "device": f"nvidia{index}",
                      "modelName": "NVIDIA A100-SXM4-40GB", "Hostname": node, "DCGM_FI_DRIVER_VERSION": "535.104.05"}
            if instance:
                labels.update(GPU_I_PROFILE="1g.5gb", GPU_I_ID=instance)
            if pod:
                labels.update(container="main", namespace=pod[0], pod=pod[1])
            text = ",".join(f'{key}="{value}"' for key, value in labels.items())
            lines.append(f"{metric}{{{text}}} {reading(metric, series, t):g}")
    return "\n".join(lines) + "\n"


def pod_total(metric: str, node: str, pod: tuple[str, str], t: int) -> float | None:
    """The pod's total at one scrape of its node, from the readings: each GPU once for a device field or a
    count, each instance for framebuffer; None when the node serves no series of the pod then."""
    held = [s for s in served(node, t) if s[3] == pod]
    if not held:
        return None
    if metric == TEMP:
        return float(len({s[1] for s in held}))
    if metric == FB:
        return sum(reading(FB, s, t) for s in held)
    return sum(reading(metric, next(s for s in held if s[1] == gpu), t) for gpu in sorted({s[1] for s in held}))


def truth(metric: str, period: int = PERIOD) -> dict[str, dict[int, float]]:
    """{line: {period start: the mean of the pod's totals at the scrapes that arrived}}: a pod's totals come
    from the node it runs on, at that node's scrapes."""
    lines: dict[str, dict[int, float]] = {}
    for pod in sorted({s[3] for s in HELD}):
        for start in range(START, END, period):
            totals = [total for node in (A, B) for t in arrived(node) if start <= t < start + period
                      if (total := pod_total(metric, node, pod, t)) is not None]
            if totals:
                lines.setdefault(f"Pod {pod[0]}/{pod[1]}", {})[start] = mean(totals)
    return lines


_BUILDS: dict = {}


def _built(tmp_path_factory, pipeline: str):
    if pipeline not in _BUILDS:
        folder = tmp_path_factory.mktemp("pods")
        (folder / "dashboards").mkdir()
        (folder / "dashboards" / "pods.py").write_text(DASHBOARD)
        (folder / "gpudash.yaml").write_text(f"agent:\n  pipeline: {pipeline}\n"
                                             "definitions:\n  dashboards: [dashboards]\n")
        files = encode(build(load_project(folder / "gpudash.yaml")))
        config, job = agent_config(files[AGENT_FILE])
        scrapes = [Scrape(float(t), payload(node, t), target_labels(job, node)) for node in (A, B)
                   for t in arrived(node)]
        _BUILDS[pipeline] = files, Agent(config, job).run(scrapes)
    return _BUILDS[pipeline]


def _widgets(files) -> dict[str, dict]:
    body = json.loads(json.loads(files[DASHBOARD_FILE])["DashboardBody"])
    return {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}


def test_the_fleet_is_messy():
    """Periods with missed scrapes on both nodes, a whole period's run on one, and the cases the title must
    survive: MIG instances of one GPU in one pod, one pod name in two namespaces, a pod moving between nodes
    inside a period, an idle GPU."""
    for node in (A, B):
        short = [s for s in range(START, END, PERIOD)
                 if len([t for t in arrived(node) if s <= t < s + PERIOD]) < PERIOD // STEP]
        assert len(short) >= 4, node
    assert {p for p in (s[3] for s in HELD) if p[1] == "train-0"} == {("ml", "train-0"), ("research", "train-0")}
    assert {s[0] for s in HELD if s[3] == ("ml", "ckpt-0")} == {A, B} and 1500 < MOVE < 1800
    assert any(not s[3] for s in SERIES)
    # the period's observations times the scrape interval over the period (classic's form) would read low
    start = 1500
    totals = [pod_total(POWER, A, ("ml", "train-0"), t) for t in arrived(A) if start <= t < start + PERIOD]
    assert mean(totals) > sum(totals) * STEP / PERIOD


@pytest.mark.parametrize("title", sorted(TITLES))
def test_per_pod_sums_and_counts_are_the_mean_of_the_pods_totals(tmp_path_factory, title):
    files, datapoints = _built(tmp_path_factory, "otel")
    properties = _widgets(files)[title]
    for period in (PERIOD, 60, 3600):  # the widget's own period, and two the console's period selector may set
        shown = cloudwatch_eval.widget(properties, datapoints, START, END, period=period)
        expected = truth(TITLES[title], period)
        assert set(shown) == set(expected), (title, period)
        for line, series in expected.items():
            assert set(shown[line]) == set(series), (title, period, line)
            wrong = {t: (shown[line][t], v) for t, v in series.items() if not close(shown[line][t], v)}
            assert not wrong, (title, period, line, wrong)


def test_a_pods_mig_instances_of_one_gpu_count_it_once_and_add_their_framebuffer(tmp_path_factory):
    files, datapoints = _built(tmp_path_factory, "otel")
    widgets = _widgets(files)
    line = "Pod ml/mig-job"
    gpus = cloudwatch_eval.widget(widgets["GPUs per pod"], datapoints, START, END)[line]
    assert set(gpus.values()) == {1.0}
    power = cloudwatch_eval.widget(widgets["Power draw by pod"], datapoints, START, END)[line]
    framebuffer = cloudwatch_eval.widget(widgets["Framebuffer used by pod"], datapoints, START, END)[line]
    one, two = (s for s in SERIES if s[3] == ("ml", "mig-job"))
    inside = [t for t in arrived(B) if 0 <= t < PERIOD]
    assert close(power[0], mean(reading(POWER, one, t) for t in inside))
    assert close(framebuffer[0], mean(reading(FB, one, t) + reading(FB, two, t) for t in inside))


def test_a_pod_name_two_nodes_list_at_once_reads_the_mean_of_their_totals(tmp_path_factory):
    """Not a Kubernetes pod (it runs on one node), but what the README says of it: the agent adds up one node's
    scrape at a time, so the line is the mean of the two nodes' totals at their scrapes."""
    global SERIES, HELD
    kept = SERIES, HELD
    SERIES = (*SERIES, (B, 3, None, ("ml", "train-0"), START - STEP, END))
    HELD = [s for s in SERIES if s[3]]
    try:
        files, _ = _built(tmp_path_factory, "otel")
        config, job = agent_config(files[AGENT_FILE])
        datapoints = Agent(config, job).run([Scrape(float(t), payload(node, t), target_labels(job, node))
                                             for node in (A, B) for t in arrived(node)])
        shown = cloudwatch_eval.widget(_widgets(files)["Power draw by pod"], datapoints, START, END)["Pod ml/train-0"]
        for start in range(START, END, PERIOD):
            per_node = [[pod_total(POWER, node, ("ml", "train-0"), t) for t in arrived(node)
                         if start <= t < start + PERIOD] for node in (A, B)]
            assert close(shown[start], mean(per_node[0] + per_node[1]))
            assert shown[start] < mean(per_node[0]) + mean(per_node[1]) - 1  # the pod's GPUs' total reads lower
    finally:
        SERIES, HELD = kept


def test_the_widgets_say_nothing_is_approximate_on_the_otel_pipeline_and_classic_keeps_its_limit(tmp_path_factory):
    otel, _ = _built(tmp_path_factory, "otel")
    classic, classic_points = _built(tmp_path_factory, "classic")
    said = notes(header(otel, DASHBOARD_FILE))
    assert not any(title in said for title in TITLES), said
    said = notes(header(classic, DASHBOARD_FILE))
    assert all(any("reads (n - m) / n of it" in note for note in said.get(title, ())) for title in TITLES), said
    # and classic reads what its header says: the period's observations of the pod's GPUs times the scrape
    # interval over the period, low by the scrapes missed
    shown = cloudwatch_eval.widget(_widgets(classic)["Power draw by pod"], classic_points, START, END)["Pod ml/train-0"]
    exact = truth(POWER)["Pod ml/train-0"]
    for start in range(START, END, PERIOD):
        observed = [pod_total(POWER, A, ("ml", "train-0"), t) for t in arrived(A) if start <= t < start + PERIOD]
        assert close(shown[start], sum(observed) * STEP / PERIOD)
        assert close(exact[start], mean(observed))
    assert shown[1500] < exact[1500] * 0.8


def test_the_models_count_is_the_processors():
    """aggregateutil's `count` writes the group's size inside its loop over the second and later points: a
    group of one keeps its value (why the count of a pod's GPUs combines two copies); a group of staleness
    markers stays a marker, and a marker after a live point adds 0 to a sum."""
    from tests.support.cloudwatch_otel import _Metric, _aggregate_labels

    metric = _Metric("m", "gauge", [({"pod": "a", "gpu": "0"}, 57.0), ({"pod": "b", "gpu": "0"}, 50.0),
                                    ({"pod": "b", "gpu": "1"}, 51.0), ({"pod": "c", "gpu": "0"}, None),
                                    ({"pod": "b", "gpu": "2"}, None)])
    assert _aggregate_labels(metric, ["pod"], "count").points == [({"pod": "a"}, 57.0), ({"pod": "b"}, 3.0),
                                                                  ({"pod": "c"}, None)]
    assert _aggregate_labels(metric, ["pod"], "sum").points == [({"pod": "a"}, 57.0), ({"pod": "b"}, 101.0),
                                                                ({"pod": "c"}, None)]

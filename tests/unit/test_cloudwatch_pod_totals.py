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
import re
from functools import lru_cache
from statistics import mean

import pytest

from generator.artifacts import build
from generator.cloudwatch_query import COUNT_MOST, NAMED_MEAN_LINE, NAMED_PART
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import close, header, notes, widgets
from tests.support.dcgm_fleet import target_labels

START, END, STEP, PERIOD = 0, 3600, 30, 300
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
DASHBOARD_FILE = "cloudwatch/dashboards/gpudash-gpu-cluster-pods.json"
POWER, FB, TEMP = "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP"
TX, RX = "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES"
A, B = "ip-10-0-1-1", "ip-10-0-1-2"
TITLES = {"Power draw by pod": POWER, "Framebuffer used by pod": FB, "GPUs per pod": TEMP,
          "PCIe transmit by pod": TX, "PCIe receive by pod": RX}
FIELDS = (POWER, FB, TEMP, TX, RX)
DEVICE_FIELDS = (POWER, TEMP, TX, RX)  # read once per GPU: each MIG instance repeats the GPU's reading

DASHBOARD = f'''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="pods", title="Pods", rows=[Row("pods", [
        Panel("Power draw by pod", Query("{POWER}", "sum", ("pod",))),
        Panel("Framebuffer used by pod", Query("{FB}", "sum", ("pod",))),
        Panel("GPUs per pod", Query("{TEMP}", "count", ("namespace", "pod"))),
        Panel("PCIe transmit by pod", Query("{TX}", "sum", ("pod",))),
        Panel("PCIe receive by pod", Query("{RX}", "sum", ("pod",))),
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
    # a GPU two pods share by time-slicing (each copy reads the GPU), one of them holding another GPU alone
    (B, 3, None, ("ml", "share-a"), START - STEP, END), (B, 3, None, ("ml", "share-b"), START - STEP, END),
    (B, 4, None, ("ml", "share-a"), START - STEP, END),
)
HELD = [s for s in SERIES if s[3]]

# DCGM's blank values: (node, gpu, MIG instance or "*" for each of the GPU's, field) -> the scrapes it reads one.
# A device field reads the blank on every instance of its GPU (the exporter writes the GPU's one reading per
# instance); a field MIG reports per instance, on one instance.
FP_BLANK, INT_BLANK = 140737488355328.0, 9223372036854775794.0  # 2**47; the int64 "not supported"
EVERY = frozenset(range(START - STEP, END, STEP))
_BLANK_RUNS = [
    # one GPU of a two-GPU pod at 2 of a period's scrapes (power, temperature, PCIe transmit)
    *(((A, 1, "*", f), {360, 420}) for f in (POWER, TEMP, TX)),
    # both GPUs of that pod at two scrapes in a row (a 1-minute period with no known total)
    *(((A, g, "*", POWER), {2400, 2430}) for g in (0, 1)),
    # a one-GPU pod's every field for a whole 5-minute period (its only GPU: the pod's sums are unknown)
    *(((B, 1, "*", f), set(range(600, 900, STEP))) for f in FIELDS),
    # one MIG instance's framebuffer (another pod holds the GPU's third instance), and the MIG GPU's power
    ((B, 0, "2", FB), {960, 990}), ((B, 0, "*", POWER), {1020}),
    # the GPU two pods share: both pods' totals are unknown then
    *(((B, 3, "*", f), {2700, 2730}) for f in (POWER, FB, RX)),
    # a GPU that never reads its temperature: its pod holds no GPU with a reading of it (not counted)
    ((A, 2, "*", TEMP), set(EVERY)),
]
BLANKS: dict[tuple, frozenset[int]] = {}
for _key, _times in _BLANK_RUNS:
    BLANKS[_key] = BLANKS.get(_key, frozenset()) | frozenset(_times)


def blank(metric: str, series: tuple, t: int) -> bool:
    """Whether the exporter serves DCGM's blank for `metric` of `series` at t."""
    node, index, instance = series[:3]
    return t in BLANKS.get((node, index, "*", metric), ()) or t in BLANKS.get((node, index, instance, metric), ())


def served(node: str, t: int) -> list[tuple]:
    return [s for s in SERIES if s[0] == node and s[4] <= t < s[5]]


def reading(metric: str, series: tuple, t: int) -> float:
    """What the exporter serves for `series` at t: varies by GPU, instance and time (DCGM's blank at BLANKS)."""
    if blank(metric, series, t):
        return FP_BLANK if metric in (POWER, TEMP) else INT_BLANK
    node, index, instance = series[:3]
    g = (0 if node == A else 5) + index
    k = t // STEP
    if metric == POWER:  # a device field: every instance of a GPU reads the GPU's
        return 60.0 + 25 * g + (k * (g + 3)) % 17 * 2.5
    if metric == TEMP:
        return 40.0 + g + k % 3
    if metric in (TX, RX):  # bytes/s, device fields too
        return 1.0e9 * (g + 1) + (k * (g + 5)) % 13 * 2.5e7 + (3.0e8 if metric == RX else 0.0)
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
    for metric in FIELDS:
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
            value = reading(metric, series, t)
            lines.append(f"{metric}{{{text}}} {value:.0f}" if value >= FP_BLANK else f"{metric}{{{text}}} {value:g}")
    return "\n".join(lines) + "\n"


def pod_total(metric: str, node: str, pod: tuple[str, str], t: int) -> float | None:
    """The pod's total at one scrape of its node, from the readings: each GPU once for a device field or a
    count, each instance for framebuffer; None when the node serves no series of the pod then, or, for a sum,
    when one of them reads DCGM's blank (the pod's total is then unknown: its other GPUs are not its total).
    A count is how many of the pod's GPUs have a reading of the field (DCGM's blank is none; None for none), as
    Grafana's "Pods on GPUs" counts them."""
    held = [s for s in served(node, t) if s[3] == pod]
    if not held:
        return None
    if metric == TEMP:
        counted = {s[1] for s in held if not blank(TEMP, s, t)}
        return float(len(counted)) if counted else None
    if any(blank(metric, s, t) for s in held):
        return None
    if metric == FB:
        return sum(reading(FB, s, t) for s in held)
    return sum(reading(metric, next(s for s in held if s[1] == gpu), t) for gpu in sorted({s[1] for s in held}))


def truth(metric: str, period: int = PERIOD) -> dict[str, dict[int, float]]:
    """{line: {period start: the mean of the pod's totals at the scrapes that arrived}}: a pod's totals come
    from the node it runs on, at that node's scrapes. A count (TEMP's line, GPUs per pod): the most GPUs one scrape
    read, each GPU with a reading in the period counted as the rule counts it (a mean of the counts read a GPU with a
    reading at some of the period's scrapes as part of one)."""
    how = max if metric == TEMP else mean
    lines: dict[str, dict[int, float]] = {}
    for pod in sorted({s[3] for s in HELD}):
        for start in range(START, END, period):
            totals = [total for node in (A, B) for t in arrived(node) if start <= t < start + period
                      if (total := pod_total(metric, node, pod, t)) is not None]
            if totals:
                lines.setdefault(f"Pod {pod[0]}/{pod[1]}", {})[start] = how(totals)
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
    SERIES = (*SERIES, (B, 5, None, ("ml", "train-0"), START - STEP, END))
    HELD = [s for s in SERIES if s[3]]
    try:
        files, _ = _built(tmp_path_factory, "otel")
        config, job = agent_config(files[AGENT_FILE])
        datapoints = Agent(config, job).run([Scrape(float(t), payload(node, t), target_labels(job, node))
                                             for node in (A, B) for t in arrived(node)])
        shown = cloudwatch_eval.widget(_widgets(files)["Power draw by pod"], datapoints, START, END)["Pod ml/train-0"]
        for start in range(START, END, PERIOD):
            per_node = [[total for t in arrived(node) if start <= t < start + PERIOD
                         if (total := pod_total(POWER, node, ("ml", "train-0"), t)) is not None] for node in (A, B)]
            assert close(shown[start], mean(per_node[0] + per_node[1]))
            assert shown[start] < mean(per_node[0]) + mean(per_node[1]) - 1  # the pod's GPUs' total reads lower
    finally:
        SERIES, HELD = kept


def test_the_widgets_say_nothing_is_approximate_on_the_otel_pipeline_and_classic_keeps_its_limit(tmp_path_factory):
    otel, _ = _built(tmp_path_factory, "otel")
    classic, classic_points = _built(tmp_path_factory, "classic")
    # only what a GPU named in turn beside another does to a sum (NAMED_PART), what a GPU named in turn does to a
    # pod's point (NAMED_MEAN_LINE: the readings of the scrapes naming the pod, tests/unit/
    # test_cloudwatch_named_in_turn_means.py), and a count's GPUs never read at one scrape (COUNT_MOST:
    # tests/unit/test_cloudwatch_pod_gpu_count.py), and what two exporter pods at once do to a period's mean
    # (SURGE_WEIGHED: tests/unit/test_cloudwatch_overlap_gauge_weights.py)
    from generator.cloudwatch_query import SURGE_WEIGHED

    said = notes(header(otel, DASHBOARD_FILE))
    assert all(set(said.get(title, {NAMED_PART})) <= {NAMED_PART, NAMED_MEAN_LINE, COUNT_MOST, SURGE_WEIGHED}
               for title in TITLES), said
    assert {title for title in TITLES if COUNT_MOST in said.get(title, ())} == {"GPUs per pod"}
    said = notes(header(classic, DASHBOARD_FILE))
    assert all(any("reads (n - m) / n of it" in note for note in said.get(title, ())) for title in TITLES), said
    # and classic reads what its header says: the period's observations of the pod's GPUs times the scrape
    # interval over the period, low by the scrapes missed
    shown = cloudwatch_eval.widget(_widgets(classic)["Power draw by pod"], classic_points, START, END)["Pod ml/train-0"]
    exact = truth(POWER)["Pod ml/train-0"]
    for start in range(START, END, PERIOD):
        observed = [pod_total(POWER, A, ("ml", "train-0"), t) for t in arrived(A) if start <= t < start + PERIOD]
        if None in observed:
            continue  # a blank: classic publishes it (test_cloudwatch_blanks.py)
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


def test_the_bundled_widgets_of_every_total_the_agent_publishes_read_the_truth(tmp_path_factory):
    """The default build: each total its agent configuration publishes (a pod-total set's fields) is read by a
    bundled widget, and every such widget reads the mean of the pod's known totals (a count the most), blanks and
    all."""
    folder = tmp_path_factory.mktemp("bundled")
    (folder / "gpudash.yaml").write_text("agent:\n  pipeline: otel\n")
    files = encode(build(load_project(folder / "gpudash.yaml")))
    config, job = agent_config(files[AGENT_FILE])
    datapoints = Agent(config, job).run([Scrape(float(t), payload(node, t), target_labels(job, node))
                                         for node in (A, B) for t in arrived(node)])
    published = {p.metric for p in datapoints if {"pod_total", "pod_gpus"} & {d for d, _ in p.dimensions}}
    assert published == set(TITLES.values())  # every total the agent makes is one this file checks
    read = set()
    for path, properties in widgets(files):
        expression = properties["metrics"][0][0].get("expression", "")
        if "pod_total" not in expression and "pod_gpus" not in expression:
            continue
        (field,) = re.findall(r'SELECT (?:AVG|MAX)\("(\w+)"\)', expression)  # (a count: the most one scrape read)
        read.add(field)
        # a table ("Pods on GPUs") means now: it is read at its own period (the pods' look-back: 2 minutes at 30 s
        # scrapes), a graph at any
        table = properties.get("view") == "table"
        for period in (properties["period"],) if table else (PERIOD, 60):
            # the table drawn a minute after its period that ends at END (its range starts a period and a minute
            # before now; the period still filling not drawn, live data off)
            now = END + 60 if table else None
            shown = cloudwatch_eval.widget(properties, datapoints, START, now or END, period=period, now=now)
            expected = truth(field, period)
            assert set(shown) == set(expected), (properties["title"], period)
            for line, series in expected.items():
                # a table ("Pods on GPUs") shows the periods of its own range, a graph every one
                times = set(shown[line]) if table else set(series)
                assert max(series) in times and set(shown[line]) == times <= set(series), (
                    properties["title"], period, line)
                assert all(close(shown[line][t], series[t]) for t in times), (properties["title"], period, line)
    assert read == published


def test_a_blank_leaves_the_pods_sum_unknown_at_that_scrape_and_its_gpu_uncounted(tmp_path_factory):
    """The cases by name: the one-GPU pod whose GPU reads blanks for a whole period has no sum in it and no GPU
    with a reading (no count); a 1-minute period in which both GPUs of a pod read blank power has no power point;
    a pod whose only GPU never reads its temperature has no GPU counted (the count is of GPUs with a reading, as
    Grafana's and the rules' counts); the two pods sharing a GPU both lose that scrape's sums."""
    files, datapoints = _built(tmp_path_factory, "otel")
    shown = {title: cloudwatch_eval.widget(properties, datapoints, START, END, period=60)
             for title, properties in _widgets(files).items()}
    for title in ("Power draw by pod", "Framebuffer used by pod", "PCIe transmit by pod", "PCIe receive by pod"):
        assert not any(600 <= t < 900 for t in shown[title]["Pod ml/infer-1"]), title
    assert not any(600 <= t < 900 for t in shown["GPUs per pod"]["Pod ml/infer-1"])
    assert shown["GPUs per pod"]["Pod ml/infer-1"][540] == 1.0
    assert 2400 not in shown["Power draw by pod"]["Pod ml/train-0"]
    assert "Pod research/train-0" not in shown["GPUs per pod"] and "Pod research/train-0" in shown["Power draw by pod"]
    assert shown["GPUs per pod"]["Pod ml/train-0"][360] == 1.0  # its GPU 1's temperature blank at that scrape
    for pod in ("share-a", "share-b"):
        assert 2700 not in shown["Power draw by pod"][f"Pod ml/{pod}"]
    # and where one of two GPUs reads blank the period reads the whole pod, not a partial sum averaged in
    power = cloudwatch_eval.widget(_widgets(files)["Power draw by pod"], datapoints, START, END)["Pod ml/train-0"]
    known = [pod_total(POWER, A, ("ml", "train-0"), t) for t in arrived(A) if 300 <= t < 600]
    assert None in known and close(power[300], mean(v for v in known if v is not None))


def test_with_virtual_gpus_a_blank_share_leaves_the_pods_sum_unknown(tmp_path_factory):
    """exporter.virtual_gpus: a 4.5.3 exporter writes framebuffer used as the device's series and each pod's share
    (tests/support/virtual_gpus.py). A pod time-slicing GPU 0 with another pod and holding GPU 1 alone: while its
    share on GPU 0 reads DCGM's blank, its framebuffer total is unknown (not its GPU 1 share alone); while GPU 0's
    power reads blank, both pods' power totals are unknown; each still holds its GPUs."""
    from tests.support import virtual_gpus as vg

    ts0, ts1 = vg.Holder("team-a", "ts-0", 30, 12000, "0"), vg.Holder("team-a", "ts-1", 25, 9000, "1")
    node = vg.Node("gpu-node-on", "per-process", (
        vg.Gpu(0, 90, 30000, 10000, 71, 250, (ts0, ts1)),
        vg.Gpu(1, 60, 20000, 20000, 65, 200, (vg.Holder("team-a", "ts-0", 58, 19000),)),
    ))
    fb_blank, power_blank = {3, 4, 5}, {7}  # scrape numbers (30 s apart): a 1-minute period of each is all blank

    def served(k: int) -> str:
        lines = vg.payload(node).split("\n")
        for i, line in enumerate(lines):
            on_gpu0 = 'UUID="GPU-gpu-node-on-0"' in line
            if k in fb_blank and line.startswith(vg.FB_USED + "{") and on_gpu0 and 'pod="ts-0"' in line:
                lines[i] = re.sub(r"\S+$", "9223372036854775794", line)
            if k in power_blank and line.startswith(vg.POWER + "{") and on_gpu0:
                lines[i] = re.sub(r"\S+$", "140737488355328", line)
        return "\n".join(lines)

    folder = tmp_path_factory.mktemp("virtual-pods")
    (folder / "dashboards").mkdir()
    (folder / "dashboards" / "pods.py").write_text(DASHBOARD)
    (folder / "gpudash.yaml").write_text("agent:\n  pipeline: otel\nexporter:\n  virtual_gpus: true\n"
                                         "definitions:\n  dashboards: [dashboards]\n")
    files = encode(build(load_project(folder / "gpudash.yaml")))
    config, job = agent_config(files[AGENT_FILE])
    end = 600
    datapoints = Agent(config, job).run([Scrape(float(k * STEP), served(k), target_labels(job, node.name))
                                         for k in range(-1, end // STEP)])
    pods = {"Pod team-a/ts-0": [(node.gpus[0], ts0), (node.gpus[1], node.gpus[1].holders[0])],
            "Pod team-a/ts-1": [(node.gpus[0], ts1)]}

    def expected(field: str, period: int) -> dict[str, dict[int, float]]:
        result: dict[str, dict[int, float]] = {}
        for line, held in pods.items():
            for start in range(0, end, period):
                totals = []
                for k in range(start // STEP, (start + period) // STEP):
                    if field == TEMP:
                        totals.append(float(len(held)))
                    elif not ((field == vg.FB_USED and k in fb_blank and line == "Pod team-a/ts-0")
                              or (field == POWER and k in power_blank)):
                        totals.append(sum(vg.pod_value(node, gpu, holder, field) for gpu, holder in held))
                if totals:
                    result.setdefault(line, {})[start] = mean(totals)
        return result

    for title, field in (("Power draw by pod", POWER), ("Framebuffer used by pod", FB), ("GPUs per pod", TEMP)):
        for period in (PERIOD, 60):
            shown = cloudwatch_eval.widget(_widgets(files)[title], datapoints, 0, end, period=period)
            truth_now = expected(field, period)
            assert {line: set(series) for line, series in shown.items()} == \
                {line: set(series) for line, series in truth_now.items()}, (title, period)
            for line, series in truth_now.items():
                assert all(close(shown[line][t], v) for t, v in series.items()), (title, period, line, shown[line])

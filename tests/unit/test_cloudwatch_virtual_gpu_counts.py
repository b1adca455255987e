"""With exporter.virtual_gpus (pods time-slicing a GPU, an exporter run with KUBERNETES_VIRTUAL_GPUS: one copy of
each field per pod holding the GPU, and on 4.5.3 and later the device's own series beside them), every CloudWatch
widget and alarm that counts GPUs - over the cluster, per node, per namespace, per pod, per GPU - counts a GPU once,
however many pods share it, as the Prometheus rules and Grafana's panels do.

The fleet of tests/support/virtual_gpus.py (GPU 0 of its 4.5.3 node shared by three pods of two namespaces, GPU 3
by two MPS pods of one, a node with the setting off, a 4.5.2 node whose only GPU two pods share) goes through the
model of the CloudWatch agent fed with the build's own configuration, and each widget and alarm is evaluated with
Metrics Insights' documented semantics. On the OTel pipeline each count is the truth: a namespace's count of GPU
utilization or framebuffer used counted each pod's share (team-a, two pods on GPU 0, 2 for 1), and a node's count
alarm of framebuffer used read no data at all. On agent.pipeline: classic nothing merges the copies: a widget that
reads other than the truth says so in the dashboard's header, an alarm in its description.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.cloudwatch_query import COPIES_COUNTED, GROUP_COPIES, WEIGHS_PER_SERIES
from generator.output import encode
from generator.render.cloudwatch import panel_title
from tests.support import cloudwatch_eval, virtual_gpus
from tests.support.agent_points import AGENT_FILE, alarm_values
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header, said, widgets
from tests.support.dcgm_fleet import target_labels
from tests.support.projects import defined_project
from tests.support.virtual_gpus import FB_FREE, FB_USED, FLEET, TEMP, UTIL

STEP, END, PERIOD = 30, 2100, 300
GROUPS = {"all": (), "node": ("node",), "ns": ("namespace",), "pod": ("pod",), "gpu": ("node", "gpu")}


def _definitions(fields: dict[str, str]) -> tuple[str, str]:
    """(dashboards, alarms) text: a widget per field and group titled `<short>-<group>`, an alarm per field and group
    but GPU (CloudWatch alarms on GPUs aggregate over the cluster) of id `<short>-<group>`, each a count of GPUs."""
    panels = "".join(f"        Panel({f'{short}-{group}'!r}, Query({field!r}, 'count', {by!r})),\n"
                     for short, field in fields.items() for group, by in GROUPS.items())
    dashboards = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
                  f"    yield Dashboard(id='counts', title='Counts', rows=[Row('All', [\n{panels}    ])])\n")
    alarms = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({f'{short}-{group}'!r}, 'X', Condition(Query({field!r}, 'count', {by!r}), '>', 1),\n"
        f"                description='x', runbook='y')\n"
        for short, field in fields.items() for group, by in GROUPS.items() if group != "gpu")
    return dashboards, alarms


def _truth(group: str) -> dict[str, int]:
    """{line: GPUs} of a count per `group`, each GPU the exporters write once, from the fleet's facts."""
    held: dict[str, set] = {}
    for node in FLEET:
        for gpu in node.gpus:
            if not virtual_gpus._visible(node, gpu):
                continue
            keys = {"all": [""], "node": [node.name], "gpu": [f"{node.name} GPU {gpu.index}"],
                    "ns": sorted({h.namespace for h in gpu.holders}),
                    "pod": sorted({f"{h.namespace}/{h.pod}" for h in gpu.holders})}[group]
            for key in keys:
                held.setdefault(key, set()).add((node.name, gpu.index))
    return {key: len(gpus) for key, gpus in held.items()}


def _built(folder, settings: str, fields: dict[str, str]):
    dashboards, alarms = _definitions(fields)
    files = encode(build(defined_project(folder, "exporter:\n  virtual_gpus: true\n" + settings,
                                         dashboards=dashboards, alarms=alarms)))
    points = _published(files, virtual_gpus.payload)
    requests = {next(t["Value"] for t in a["Request"]["Tags"] if t["Key"] == "gpudash:rule"): a["Request"]
                for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    return files, points, requests


def _published(files, served) -> list:
    """The datapoints of the fleet through the build's agent model, each node serving `served(node)` at each scrape."""
    config, job = agent_config(files[AGENT_FILE])
    return Agent(config, job).run([Scrape(float(k * STEP), served(node), target_labels(job, node.name))
                                   for k in range(-1, END // STEP) for node in FLEET])


def _line(label: str, title: str) -> str:
    """A widget line's label as _truth names it."""
    return "" if label == title else label.removeprefix("Pod ")


def _shown(files, points) -> dict[str, dict[str, set[float]]]:
    """{widget title: {line: its values over the periods}} of the counts dashboard."""
    return {panel_title(p["title"]): {_line(label, panel_title(p["title"])): set(series.values())
                                      for label, series in cloudwatch_eval.widget(p, points, 0, END).items()}
            for path, p in widgets(files) if path.endswith("-counts.json")}


def _read(request: dict, points) -> dict[str, float]:
    """{group: the alarm's count over its last period}, keyed as _truth keys it."""
    return {"/".join(value for _, value in key): value for key, value in alarm_values(request, points, END, PERIOD).items()}


OTEL_FIELDS = {"util": UTIL, "fb": FB_USED, "temp": TEMP}


@pytest.fixture(scope="module")
def otel(tmp_path_factory):
    return _built(tmp_path_factory.mktemp("otel"), "", OTEL_FIELDS)


def test_the_premise_three_pods_of_two_namespaces_share_one_gpu():
    (on,) = [node for node in FLEET if node.name == "gpu-node-on"]
    assert [(h.namespace, h.pod) for h in on.gpus[0].holders] == [("team-a", "ts-0"), ("team-a", "ts-1"),
                                                                   ("team-b", "ts-0")]
    assert virtual_gpus.payload(on).count(f'{TEMP}{{gpu="0"') == 3  # a copy per pod, no device series of it


def test_every_count_widget_counts_a_shared_gpu_once(otel):
    files, points, _ = otel
    shown = _shown(files, points)
    assert set(shown) == {f"{short}-{group}" for short in OTEL_FIELDS for group in GROUPS}
    for title, lines in shown.items():
        truth = _truth(title.split("-")[1])
        assert lines == {line: {float(count)} for line, count in truth.items()}, title
    for short in OTEL_FIELDS:  # GPU 0, shared by team-a's two pods and team-b's one, is one GPU of each
        assert shown[f"{short}-ns"]["team-a"] == {1.0} and shown[f"{short}-node"]["gpu-node-on"] == {4.0}


@pytest.mark.parametrize("rule", [f"{short}-{group}" for short in OTEL_FIELDS for group in GROUPS if group != "gpu"])
def test_every_count_alarm_counts_a_shared_gpu_once(otel, rule):
    _, points, requests = otel
    request = requests[rule]
    assert _read(request, points) == pytest.approx(_truth(rule.split("-")[1])), request["Metrics"]
    assert COPIES_COUNTED not in request["AlarmDescription"]


def test_a_gpu_whose_own_series_reads_only_the_blank_is_not_counted_per_node(otel):
    """GPU 0 of the 4.5.3 node: its own series of utilization and framebuffer used reads DCGM's blank at every scrape,
    its three pods' shares read. The GPU has no reading of either field: the per-GPU lines leave it out, as its rule
    does (a GPU with no reading of the device in the period is not counted), and so does the node's count alarm, which
    counted it by its pods' shares (4 GPUs for 3)."""
    files, _, requests = otel
    points = _published(files, lambda node: virtual_gpus.own_series_blank(node, (0,)) if node is FLEET[0]
                        else virtual_gpus.payload(node))
    shown = _shown(files, points)
    for short in ("util", "fb"):
        assert shown[f"{short}-node"]["gpu-node-on"] == {3.0} and "gpu-node-on GPU 0" not in shown[f"{short}-gpu"]
        assert _read(requests[f"{short}-node"], points)["gpu-node-on"] == 3, short


def test_on_classic_a_count_that_counts_copies_says_so_exactly_there(tmp_path):
    """agent.pipeline: classic publishes each pod's copy under every set: a node's and a namespace's count read a GPU
    once per pod holding it (gpu-node-on 7 for 4, team-a 2 for 1). The header says so of exactly the widgets that read
    other than the truth (the cluster's count draws a line per GPU: true), each alarm that does in its description
    (the cluster's too); each pod's and each GPU's counts are true. (GPU utilization and framebuffer used per GPU are refused on classic with virtual GPUs, lint CW017.)"""
    files, points, requests = _built(tmp_path, "agent:\n  pipeline: classic\n", {"temp": TEMP, "free": FB_FREE})
    text = header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-counts.json")
    shown = _shown(files, points)
    wrong = set()
    for title, lines in shown.items():
        truth = {line: {float(count)} for line, count in _truth(title.split("-")[1]).items()}
        if lines != truth:
            wrong.add(title)
        noted = said(text, title, WEIGHS_PER_SERIES) or said(text, title, GROUP_COPIES)
        assert noted == (lines != truth), (title, lines, truth)
    assert wrong == {"temp-node", "temp-ns", "free-node", "free-ns"}
    assert shown["temp-node"]["gpu-node-on"] == {7.0} and shown["temp-ns"]["team-a"] == {2.0}
    wrong_alarms = set()
    for rule, request in requests.items():
        if _read(request, points) != pytest.approx(_truth(rule.split("-")[1])):
            wrong_alarms.add(rule)
            assert COPIES_COUNTED in request["AlarmDescription"], rule  # (a MIG GPU's instances are noted too)
    assert wrong_alarms == {f"{short}-{group}" for short in ("temp", "free") for group in ("all", "node", "ns")}

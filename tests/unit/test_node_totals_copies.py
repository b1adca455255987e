"""A node's count of GPUs and total of a gauge, made at the agent at each scrape of the node's exporter (the alarms'
count or total per node on the OTel pipeline, read as AVG or MAX of the node's totals), holds each GPU (instance) once
whatever copies of it the exporter writes:

* with exporter.virtual_gpus (an exporter before 4.5.3, or a field it does not split per process) each pod sharing a
  GPU gets a copy of the device's value: the time-sliced GPU of 12,000 MiB free read 24,000 in the node's total;
* a GPU the exporter names under its sharing pods in turn (the setting off) has, at each scrape, the named pod's
  series and the staleness marker of the pod named before: engine activity, whose GPU value is its instances' mean,
  read 0.015 for 0.03 (the live copy averaged with the marker);
* a failed scrape of the node's exporter sends nothing: the period's AVG is a mean of the scrapes that arrived;
* framebuffer used with exporter.virtual_gpus is the device's own series and each pod's share on 4.5.3 and later:
  a node's total adds each GPU instance's merged reading (the device's, else its largest copy).

The agent merges each GPU instance's copies by `max` before combining a GPU's instances and adding the node's GPUs, a
field whose instances average (engine activity) after the blank filter, which dropped the markers (as a namespace's
use of a GPU is made). Values through the build's agent model and Metrics Insights' semantics, against the fleet's
facts."""

from __future__ import annotations

import json
from dataclasses import replace
from statistics import mean

import pytest

from generator.artifacts import build
from generator.cloudwatch_query import NODE_TOTALS
from generator.output import encode
from tests.support import mixed_fleet
from tests.support.agent_points import AGENT_FILE, SHARED, alarm_values
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.projects import defined_project

STEP, END, PERIOD = 30, 1800, 300
VIRTUAL = "exporter:\n  virtual_gpus: true\n"
# rule: (field, aggregation); each grouped by node
CASES = {"fb-free": ("DCGM_FI_DEV_FB_FREE", "sum"), "fb-used": ("DCGM_FI_DEV_FB_USED", "sum"),
         "engine": ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "sum"), "power": ("DCGM_FI_DEV_POWER_USAGE", "sum"),
         "gpus": ("DCGM_FI_DEV_GPU_TEMP", "count")}
ALARMS = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm({rule!r}, 'X', Condition(Query({metric!r}, {how!r}, ('node',)), '>', 1),\n"
    f"                description='x', runbook='y')\n" for rule, (metric, how) in CASES.items())
# the time-sliced GPU's node named under its two pods in turn (the setting off on that node), beside SHARED's node
# whose exporter runs with KUBERNETES_VIRTUAL_GPUS before 4.5.3 (a copy per pod, each the device's value)
IN_TURN = replace(next(node for node in mixed_fleet.FLEET if node.name == "gpu-node-ts"), name="gpu-node-tt",
                  exporter_pod="nvidia-dcgm-exporter-t9w0x", virtual_gpus=False, moves=1)
FLEETS = {"virtual": (VIRTUAL, SHARED + (IN_TURN,)), "in-turn": ("", mixed_fleet.FLEET)}
FAILED = ("gpu-node-ts", "gpu-node-tt", "gpu-node-mig")  # one scrape each fails inside the last period
FAILED_AT = END - PERIOD + 4 * STEP
FACTS = {"DCGM_FI_DEV_FB_FREE": ("fb_free", sum), "DCGM_FI_DEV_FB_USED": ("fb_used", sum),
         "DCGM_FI_PROF_GR_ENGINE_ACTIVE": ("engine", mean)}


def _truth(fleet, metric: str, how: str) -> dict[tuple, float]:
    """{(("node", name),): the node's count of GPUs or total of the field}: each GPU once, a MIG GPU's value its
    instances' sum (framebuffer) or mean (engine activity)."""
    def value(gpu) -> float:
        if how == "count":
            return 1.0
        if metric in FACTS:
            fact, combine = FACTS[metric]
            return combine([getattr(instance, fact) for instance in gpu.instances])
        return gpu.power
    return {(("node", node.name),): float(sum(value(gpu) for gpu in node.gpus)) for node in fleet}


@pytest.fixture(scope="module", params=sorted(FLEETS))
def built(request, tmp_path_factory):
    settings, fleet = FLEETS[request.param]
    files = encode(build(defined_project(tmp_path_factory.mktemp(request.param), settings, alarms=ALARMS),
                         grafana=False))
    requests = {a["Request"]["AlarmName"].removeprefix("gpudash-gpu-cluster-").removesuffix("-warning"): a["Request"]
                for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(k * STEP, mixed_fleet.payload(node, k * STEP, STEP),
                                            target_labels(job, node.name))
                                     for k in range(-2, END // STEP) for node in fleet
                                     if not (node.name in FAILED and k * STEP == FAILED_AT)])
    return request.param, fleet, requests, points


def _agent_made(request: dict) -> bool:
    return any(mark in request["Metrics"][0]["Expression"] for mark, _ in NODE_TOTALS.values())


def test_the_alarms_per_node_read_the_agent_made_totals(built):
    """Every such alarm reads the node's totals the agent made, with exporter.virtual_gpus and for a field whose MIG
    instances average too."""
    _, _, requests, _ = built
    assert {rule for rule, request in requests.items() if _agent_made(request)} == set(CASES)


def test_each_gpu_counts_once_through_copies_markers_and_a_failed_scrape(built):
    """Per node, the period holding the failed scrapes reads each GPU once: the time-sliced GPU's 12,000 MiB free
    (not 24,000: two pods' copies), engine activity 0.03 (not 0.015: a pod named in turn beside the marker ending the
    other's), the MIG node's instances added or averaged, and the failed nodes whole; and so the period before."""
    name, fleet, requests, points = built
    for rule, (metric, how) in CASES.items():
        if not _agent_made(requests[rule]):
            continue
        truth = _truth(fleet, metric, how)
        for end in (END, END - PERIOD):
            read = alarm_values(requests[rule], points, end, PERIOD)
            assert read == pytest.approx(truth), (name, rule, end)
    ts = (("node", "gpu-node-ts"),)
    assert alarm_values(requests["fb-free"], points, END, PERIOD)[ts] == pytest.approx(12000)
    assert alarm_values(requests["engine"], points, END, PERIOD)[ts] == pytest.approx(0.03)


def test_a_node_total_of_engine_activity_leaves_out_a_blank_as_its_rule_does(tmp_path):
    """A node's total of a field whose MIG instances average is made after the blank filter: a MIG GPU one of whose
    instances reads DCGM's blank is its other instance's activity, and a whole GPU reading the blank is left out,
    as the Prometheus rule (blanks dropped, instances averaged per GPU, GPUs added) reads them: 0.5 + 0.4 = 0.9."""
    engine, node = "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "ip-10-0-1-1"
    alarms = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
              f"    yield Alarm('engine', 'E', Condition(Query({engine!r}, 'sum', ('node',)), '>', 1))\n")
    files = encode(build(defined_project(tmp_path, "", alarms=alarms), grafana=False))
    config, job = agent_config(files[AGENT_FILE])
    blank = "140737488355328"
    series = [("0", None, "0.5", "a"), ("1", "1", "0.4", "b"), ("1", "2", blank, "c"), ("2", None, blank, "d")]
    lines = [f"# HELP {engine} {engine}.", f"# TYPE {engine} gauge"]
    for gpu, instance, value, pod in series:
        mig = f',GPU_I_PROFILE="3g.20gb",GPU_I_ID="{instance}"' if instance else ""
        lines.append(f'{engine}{{gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",'
                     f'modelName="NVIDIA A100-SXM4-40GB"{mig},Hostname="{node}",container="main",namespace="ml",'
                     f'pod="p-{pod}"}} {value}')
    payload = "\n".join(lines) + "\n"
    points = Agent(config, job).run([Scrape(float(t), payload, target_labels(job, node)) for t in range(0, END, STEP)])
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    assert _agent_made(request)
    assert alarm_values(request, points, END, PERIOD) == {(("node", node),): pytest.approx(0.9)}


def test_a_nodes_framebuffer_used_reads_each_gpus_device_value_on_every_exporter(tmp_path):
    """With exporter.virtual_gpus, framebuffer used comes as the device's own series and each pod's share on
    dcgm-exporter 4.5.3 and later, as copies of the device's value before: a node's total adds each GPU instance's
    merged reading (the device's series where there is one, else its largest copy), through a failed scrape of each
    node: the 4.5.3 node 66,300 MiB, the node with the setting off 25,200, the 4.5.2 node 39,200 (the GPU it still
    writes). (Made as a pod's total, from each pod's copy, the node's total lost its node label: none was published.)"""
    from tests.support import virtual_gpus

    alarms = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
              "    yield Alarm('fb', 'F', Condition(Query('DCGM_FI_DEV_FB_USED', 'sum', ('node',)), '>', 1))\n")
    files = encode(build(defined_project(tmp_path, VIRTUAL, alarms=alarms), grafana=False))
    config, job = agent_config(files[AGENT_FILE])
    failed = END - PERIOD + 4 * STEP
    points = Agent(config, job).run([Scrape(float(k * STEP), virtual_gpus.payload(node), target_labels(job, node.name))
                                     for k in range(-1, END // STEP) for node in virtual_gpus.FLEET
                                     if k * STEP != failed])
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    assert _agent_made(request)
    truth = {(("node", node.name),): float(sum(gpu.fb_used for gpu in node.gpus
                                               if virtual_gpus._series(node, gpu, virtual_gpus.FB_USED)))
             for node in virtual_gpus.FLEET}
    assert truth == {(("node", "gpu-node-on"),): 66300.0, (("node", "gpu-node-off"),): 25200.0,
                     (("node", "gpu-node-old"),): 39200.0}
    for end in (END, END - PERIOD):
        assert alarm_values(request, points, end, PERIOD) == pytest.approx(truth)


def test_a_nodes_framebuffer_used_leaves_out_a_gpu_whose_own_series_reads_the_blank(tmp_path):
    """A GPU whose own series reads DCGM's blank at a scrape has no reading there, whatever its pods' shares read: the
    node's total of framebuffer used leaves it out (as the Prometheus rule does), not adding its pods' largest share.
    The 4.5.3 node's GPU 0 (30,000 MiB, shares 12,000/9,000/0) blank at every scrape: 36,300 MiB (48,300 when the
    merge read the share)."""
    from tests.support import virtual_gpus

    alarms = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
              "    yield Alarm('fb', 'F', Condition(Query('DCGM_FI_DEV_FB_USED', 'sum', ('node',)), '>', 1))\n")
    files = encode(build(defined_project(tmp_path, VIRTUAL, alarms=alarms), grafana=False))
    config, job = agent_config(files[AGENT_FILE])
    node = virtual_gpus.FLEET[0]
    points = Agent(config, job).run([Scrape(float(k * STEP), virtual_gpus.own_series_blank(node, (0,)),
                                            target_labels(job, node.name)) for k in range(-1, END // STEP)])
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    truth = sum(gpu.fb_used for gpu in node.gpus if gpu.index != 0)
    assert truth == 36300.0
    assert alarm_values(request, points, END, PERIOD) == {(("node", node.name),): pytest.approx(truth)}


def test_alarms_over_gpus_of_a_split_field_leave_out_a_gpu_whose_own_series_reads_the_blank(tmp_path):
    """The same GPU (its own series blank at every scrape, its pods' shares 30/25/0 % and 12,000/9,000/0 MiB read) in
    the alarms that count, average, add or take the largest of the fields over a node's GPUs and over the fleet
    (exporter.mig: none: read from the per-GPU set, each GPU's device reading): 3 GPUs of 4 report GPU utilization,
    their mean 36.67 % (60, 0, 50), the largest 60 %, the framebuffer used 36,300 MiB; never the pods' largest share
    in its place (4 GPUs, 46.67 %, 48,300 MiB)."""
    from tests.support import virtual_gpus

    util = "DCGM_FI_DEV_GPU_UTIL"
    rules = {"count-node": (util, "count", ("node",)), "mean-node": (util, "avg", ("node",)),
             "max-node": (util, "max", ("node",)), "count": (util, "count", ()), "fb": ("DCGM_FI_DEV_FB_USED", "sum", ())}
    alarms = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({rule!r}, 'X', Condition(Query({field!r}, {how!r}, {by!r}), '>', 1))\n"
        for rule, (field, how, by) in rules.items())
    files = encode(build(defined_project(tmp_path, VIRTUAL + "  mig: none\n", alarms=alarms), grafana=False))
    config, job = agent_config(files[AGENT_FILE])
    node = virtual_gpus.FLEET[0]
    points = Agent(config, job).run([Scrape(float(k * STEP), virtual_gpus.own_series_blank(node, (0,)),
                                            target_labels(job, node.name)) for k in range(-1, END // STEP)])
    requests = {a["Request"]["AlarmName"].removeprefix("gpudash-gpu-cluster-").removesuffix("-warning"): a["Request"]
                for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    read = {rule: alarm_values(requests[rule], points, END, PERIOD) for rule in rules}
    on = (("node", node.name),)
    assert read == {"count-node": {on: pytest.approx(3)}, "mean-node": {on: pytest.approx(110 / 3)},
                    "max-node": {on: pytest.approx(60)}, "count": {(): pytest.approx(3)},
                    "fb": {(): pytest.approx(36300)}}

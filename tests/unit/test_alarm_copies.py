"""Every alarm a definition can write that counts GPUs, or adds or averages their readings, over a group of GPUs
(the cluster, a node) or counts one GPU's, reads on CloudWatch what its Prometheus rule reads: each GPU once, whatever
MIG or time-slicing makes the exporter write of it.

The mixed fleet (tests/support/mixed_fleet.FLEET) holds a node whose two A100s are split into two MIG instances each
(a device field's reading repeats on each instance), and, in a variant, a GPU two pods share by time-slicing on an
exporter run with KUBERNETES_VIRTUAL_GPUS (one copy per pod, settings exporter.virtual_gpus). Over the per-GPU set
[ClusterName, node, gpu] an alarm counted and added each copy (13 series for 11 GPUs; the MIG node's 500 W read
1,000 W). On the OTel pipeline it reads each GPU's reading once per scrape ([ClusterName, node, gpu, readings], the
copies merged at the agent by UUID): its value over a whole period, the query's result over the threshold's scale,
is the truth per group. On agent.pipeline: classic nothing merges the copies: the alarm says so in its description
and lint notes it (AL019).
"""

from __future__ import annotations

import json
from statistics import mean

import pytest

from generator.artifacts import build, notes
from generator.cloudwatch_query import COPIES_COUNTED
from generator.output import encode
from tests.support import mixed_fleet
from tests.support.agent_points import SHARED, alarms_through_agent
from tests.support.alarm_copies import END, STEP, built_alarms, read_alarm
from tests.support.projects import defined_project

FIELDS = {"DCGM_FI_DEV_POWER_USAGE": "power", "DCGM_FI_DEV_GPU_TEMP": "temp"}
GROUPS = {"all": (), "node": ("node",), "gpu": ("node", "gpu")}
CASES = [(aggregation, field, group) for aggregation in ("count", "sum", "avg") for field in FIELDS
         for group in GROUPS if not (group == "gpu" and aggregation != "count")]


def _rule(aggregation: str, field: str, group: str) -> str:
    return f"{aggregation}-{FIELDS[field]}-{group}"


ALARMS = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm({_rule(a, f, g)!r}, 'X', Condition(Query({f!r}, {a!r}, {GROUPS[g]!r}), '>', 1),\n"
    f"                description='x', runbook='y')\n" for a, f, g in CASES)



def _truth(fleet, aggregation: str, field: str, group: str) -> dict[tuple, float]:
    """{group key: value} of the query, each GPU once."""
    readings: dict[tuple, list[float]] = {}
    for node in fleet:
        for gpu in node.gpus:
            key = {"all": (), "node": (("node", node.name),),
                   "gpu": (("node", node.name), ("gpu", str(gpu.index)))}[group]
            readings.setdefault(key, []).append(getattr(gpu, FIELDS[field]))
    how = {"count": len, "sum": sum, "avg": mean}[aggregation]
    return {key: how(values) for key, values in readings.items()}


@pytest.fixture(scope="module")
def mig(tmp_path_factory):
    return built_alarms(tmp_path_factory.mktemp("mig"), "", mixed_fleet.FLEET, ALARMS)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return built_alarms(tmp_path_factory.mktemp("shared"), "exporter:\n  virtual_gpus: true\n", SHARED, ALARMS)


@pytest.mark.parametrize("aggregation,field,group", CASES)
def test_a_mig_gpu_counts_and_adds_once(mig, aggregation, field, group):
    requests, points = mig
    request = requests[_rule(aggregation, field, group)]
    assert read_alarm(request, points) == pytest.approx(_truth(mixed_fleet.FLEET, aggregation, field, group))
    assert COPIES_COUNTED not in request["AlarmDescription"]


@pytest.mark.parametrize("aggregation,field,group", CASES)
def test_a_gpu_pods_share_counts_and_adds_once(shared, aggregation, field, group):
    requests, points = shared
    assert read_alarm(requests[_rule(aggregation, field, group)], points) == pytest.approx(
        _truth(SHARED, aggregation, field, group))


def test_on_classic_the_alarm_and_lint_say_that_copies_count(tmp_path):
    project = defined_project(tmp_path, "agent:\n  pipeline: classic\n", alarms=ALARMS)
    requests = {a["Request"]["AlarmName"].removeprefix("gpudash-gpu-cluster-").removesuffix("-warning"): a["Request"]
                for a in json.loads(encode(build(project, grafana=False))["cloudwatch/alarms.json"])["alarms"]}
    said = {rule for rule, request in requests.items() if COPIES_COUNTED in request["AlarmDescription"]}
    assert said == {_rule(*case) for case in CASES}
    noted = {note.message.split("'")[1] for note in notes(project) if note.rule == "AL019"}
    assert noted == said


def test_the_merged_readings_are_priced(tmp_path):
    """The agent writes one small event per GPU and scrape of the readings merged once, every field of them (the
    fleet's values past 500 GPUs read GPU utilization, power and temperature so): an alarm counting the GPUs that
    report SM clocks adds that field to each event."""
    from generator.cost import Fleet, log_events

    clocks = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
              "    yield Alarm('clocks', 'X', Condition(Query('DCGM_FI_DEV_SM_CLOCK', 'count', ()), '<', 1))\n")
    fleet = Fleet(clusters=1, pods=40, churn=0, gpus=100)
    events = {}
    for name, text in (("without", ALARMS), ("with", clocks)):
        (folder := tmp_path / name).mkdir()
        events_ = log_events(defined_project(folder, "", alarms=text), fleet)
        (once,) = [e for e in events_ if e.what == "a GPU's readings once"]  # (not a node's total of them)
        events[name] = once
    assert events["with"].count == events["without"].count == 100
    assert (events["with"].fields, events["with"].published) == (events["without"].fields + 1,) * 2


@pytest.mark.parametrize("comparison", ["<", ">"])
def test_a_mean_per_node_below_a_level_reads_what_the_agent_publishes(tmp_path, comparison):
    """A mean per node of a share below a level (which, per GPU, reads the unused share instead: unused_plan) reads
    each GPU once too: GPU utilization per node, a MIG GPU's its instances' engine activity (x 100) averaged, as the
    Prometheus rule reads it."""
    text = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
            f"    yield Alarm('util', 'X', Condition(Query('DCGM_FI_DEV_GPU_UTIL', 'avg', ('node',)), {comparison!r}, 1))\n")
    requests, points = alarms_through_agent(defined_project(tmp_path, "", alarms=text), STEP, END)
    request = requests["gpudash-gpu-cluster-util-warning"]
    truth = {(("node", node.name),): mean(mean(i.engine * 100 for i in gpu.instances) if gpu.mig else gpu.util
                                          for gpu in node.gpus) for node in mixed_fleet.FLEET}
    assert read_alarm(request, points) == pytest.approx(truth)


NAMESPACE_COUNTS = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm('ns-{short}', 'X', Condition(Query({field!r}, 'count', ('namespace',)), '>', 1))\n"
    for short, field in (("util", "DCGM_FI_DEV_GPU_UTIL"), ("temp", "DCGM_FI_DEV_GPU_TEMP"))))


def _namespace_gpus() -> dict[tuple, int]:
    """{group key: the GPUs the namespace's pods hold, each once} of the shared fleet."""
    truth: dict[tuple, int] = {}
    for node in SHARED:
        for gpu in node.gpus:
            for namespace in {pod[0] for instance in gpu.instances for pod in instance.pods()}:
                truth[(("namespace", namespace),)] = truth.get((("namespace", namespace),), 0) + 1
    return truth


def test_a_namespace_counts_a_gpu_its_pods_share_once(tmp_path):
    """With exporter.virtual_gpus each pod sharing a GPU has its own copy of every field, GPU utilization (which the
    exporter splits per process, and MIG does not report) included: a namespace whose two pods share one GPU
    (team-d) reads 1 GPU on the OTel pipeline, as its rule does, for every field; utilization read 2 (each pod's
    copy, over the per-pod set) and said so, where the agent now makes the namespace's use of each GPU of it too."""
    project = defined_project(tmp_path, "exporter:\n  virtual_gpus: true\n", alarms=NAMESPACE_COUNTS)
    requests, points = alarms_through_agent(project, STEP, END, SHARED)
    truth = _namespace_gpus()
    assert truth[(("namespace", "team-d"),)] == 1
    for short in ("util", "temp"):
        request = requests[f"gpudash-gpu-cluster-ns-{short}-warning"]
        assert read_alarm(request, points) == truth, short
        assert COPIES_COUNTED not in request["AlarmDescription"], short
    assert not [note for note in notes(project) if note.rule == "AL019"]


def test_on_classic_a_namespace_count_that_reads_a_shared_gpu_per_pod_says_so(tmp_path):
    """agent.pipeline: classic publishes each pod's copy and merges nothing: team-d's two pods on one GPU read 2 GPUs,
    and each alarm says so in its description and lint (AL019)."""
    project = defined_project(tmp_path, "exporter:\n  virtual_gpus: true\nagent:\n  pipeline: classic\n",
                              alarms=NAMESPACE_COUNTS)
    requests, points = alarms_through_agent(project, STEP, END, SHARED)
    noted = {note.message.split("'")[1] for note in notes(project) if note.rule == "AL019"}
    for short in ("util", "temp"):
        request = requests[f"gpudash-gpu-cluster-ns-{short}-warning"]
        assert read_alarm(request, points)[(("namespace", "team-d"),)] == 2, short
        assert COPIES_COUNTED in request["AlarmDescription"] and f"ns-{short}" in noted, short


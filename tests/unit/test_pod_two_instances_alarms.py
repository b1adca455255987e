"""The CloudWatch alarms of a pod holding two MIG instances of one GPU (tests/support/two_instances.py), through the
build's agent model on both pipelines, against the truth that module writes down (the rules' side:
tests/integration/test_pod_two_instances.py).

A count, a sum or a mean of a field of the whole device per pod reads the GPU once on agent.pipeline: otel (the agent
makes a pod's total, and its total per GPU, at each scrape), and so does every aggregation per namespace (the agent makes a namespace's use of
each GPU at each scrape: cloudwatch_query.namespace_plan); the rest is still wrong, marked strict xfail with what it
reads: on classic a mean per pod reads the device's reading once per instance (team-q/dual's power 233 W for 250; on
otel its alarm reads the pod's totals per GPU), a count or a sum per pod per instance (3 GPUs for 2, 700 W for 500),
and per namespace a GPU once per instance its pods hold (900 W for 500, 4 GPUs for 2).
"""

from __future__ import annotations

import pytest

from generator.cloudwatch_query import COPIES_COUNTED
from generator.render.alarms import copies_counted
from tests.support import two_instances
from tests.support.agent_points import alarm_values, alarms_through_agent
from tests.support.projects import defined_project
from tests.support.two_instances import POWER, UTIL

STEP, END, PERIOD = 30, 900, 300
HEAD = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
BY = {"pod": ("pod",), "podgpu": ("pod", "gpu"), "ns": ("namespace",)}
CASES = [(POWER, aggregation, by) for aggregation in ("count", "sum", "avg", "max", "min") for by in BY]
# (pipeline, aggregation, grouping) read wrong now (power): what it reads for team-q/dual or team-q
WRONG = {("classic", "avg", "pod"): "233 W for 250",
         ("classic", "count", "pod"): "3 for 2", ("classic", "sum", "pod"): "700 W for 500",
         ("classic", "count", "podgpu"): "2 for 1 on GPU 1", ("classic", "sum", "podgpu"): "400 W for 200 on GPU 1",
         **{("classic", aggregation, "ns"): "a GPU once per instance" for aggregation in ("count", "sum", "avg")}}


def _name(aggregation: str, by: str) -> str:
    return f"p-{aggregation}-{by}"


@pytest.fixture(scope="module", params=["otel", "classic"])
def alarmed(request, tmp_path_factory):
    text = HEAD + "".join(
        f"    yield Alarm({_name(aggregation, by)!r}, 'T', Condition(Query({field!r}, {aggregation!r}, {BY[by]!r}), "
        f"'>=', 1), description='d', runbook='r')\n" for field, aggregation, by in CASES)
    project = defined_project(tmp_path_factory.mktemp("two-instances"), f"agent:\n  pipeline: {request.param}\n",
                              alarms=text)
    return request.param, alarms_through_agent(project, STEP, END, two_instances.FLEET), project


def _values(alarmed, aggregation: str, by: str) -> dict[tuple, float]:
    _, (requests, points), _ = alarmed
    (request,) = [r for name, r in requests.items() if f"-{_name(aggregation, by)}-" in name]
    return {tuple(sorted((k, v) for k, v in key if k in ("namespace", "pod", "gpu"))): value
            for key, value in alarm_values(request, points, END, PERIOD).items()}


@pytest.mark.parametrize("case", CASES, ids=[f"{a} by {b}" for _, a, b in CASES])
def test_a_device_field_per_pod_or_namespace_reads_each_gpu_once(alarmed, case, request):
    pipeline = alarmed[0]
    field, aggregation, by = case
    if (pipeline, aggregation, by) in WRONG:
        request.applymarker(pytest.mark.xfail(strict=True, reason=WRONG[pipeline, aggregation, by]))
    assert _values(alarmed, aggregation, by) == pytest.approx(two_instances.truth(field, aggregation, BY[by]))


def test_the_truth_counts_the_gpu_once():
    assert two_instances.truth(UTIL, "count", ("namespace",)) == {(("namespace", "team-q"),): 2}


def test_the_alarms_that_read_a_gpu_once_per_instance_say_so(alarmed):
    pipeline, (requests, _), project = alarmed
    said = {(aggregation, by) for _, aggregation, by in CASES
            for name, request in requests.items()
            if f"-{_name(aggregation, by)}-" in name and COPIES_COUNTED in request["AlarmDescription"]}
    assert said == {(aggregation, by) for (each, aggregation, by) in WRONG if each == pipeline}
    noted = {message.split("'")[1] for _, message in copies_counted(project)}
    assert noted == {_name(aggregation, by) for aggregation, by in said}


def test_without_mig_instances_a_pods_alarms_say_nothing_of_them(tmp_path):
    """exporter.mig: none (no GPU split into MIG instances): a pod's series are one per GPU, nothing is said."""
    text = HEAD + "".join(
        f"    yield Alarm({_name(aggregation, by)!r}, 'T', Condition(Query({field!r}, {aggregation!r}, {BY[by]!r}), "
        f"'>=', 1), description='d', runbook='r')\n" for field, aggregation, by in CASES if by != "ns")
    project = defined_project(tmp_path, "agent:\n  pipeline: classic\nexporter:\n  mig: none\n", alarms=text)
    assert copies_counted(project) == []


def test_a_static_per_pod_alarm_of_a_pods_mean_names_the_pod_alone(tmp_path):
    """alarms.per_pod: static names each dimension's value ahead, so it cannot read a pod's totals per GPU (the GPU's
    index is not known ahead): a pod's mean of a device field or a field MIG reports per instance reads its series
    in the per-pod set (a pod's mean framebuffer was refused, 'a static per-pod alarm cannot name the value of gpu,
    pod_gpu_total', whatever cloudwatch.dimensions said)."""
    from generator.artifacts import build

    fields = (POWER, "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    text = HEAD + "".join(f"    yield Alarm('m{k}', 'T', Condition(Query({field!r}, 'avg', ('pod',)), '>=', 1), "
                          f"description='d', runbook='r')\n" for k, field in enumerate(fields))
    project = defined_project(tmp_path, "alarms:\n  per_pod: static\n  static_pods: [team-q/dual]\n", alarms=text)
    requests = [item.request for item in build(project, grafana=False).alarms]
    assert len(requests) == len(fields)
    for request in requests:
        assert {d["Name"] for d in request["Dimensions"]} == {"ClusterName", "namespace", "pod"}

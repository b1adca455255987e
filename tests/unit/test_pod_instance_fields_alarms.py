"""The CloudWatch alarms of a field MIG reports per instance (framebuffer used, engine activity) per pod, per (pod,
gpu) and per namespace, for a pod holding a whole GPU and two MIG instances of another (tests/support/two_instances.py),
through the build's agent model on both pipelines, against the truth that module writes down: a group's use of a GPU
is the sum (framebuffer) or mean (engine activity) of the instances it holds on it, as the Prometheus rule and the
panels read it (the rules' side: tests/integration/test_pod_two_instances.py).

Each alarm reads the truth, or is refused, or says in its description and in lint (AL019) that it reads each instance
as a GPU (INSTANCES_JUDGED), and then reads what READ_APART lists (strict xfail). A pod's least free memory is
judged per instance (its headroom: generator/catalog.HEADROOM), as the rule judges it. Before, a pod's mean and least
framebuffer on agent.pipeline: otel read its instances (4,667 and 1,000 MiB for 7,000 and 4,000) and nothing said so.
"""

from __future__ import annotations

import pytest

from generator.cloudwatch_query import INSTANCES_JUDGED
from generator.errors import InputError
from generator.render.alarms import copies_counted
from tests.support import two_instances
from tests.support.agent_points import alarm_values, alarms_through_agent
from tests.support.projects import defined_project
from tests.support.two_instances import ENGINE, FB_FREE, FB_USED

STEP, END, PERIOD = 30, 900, 300
HEAD = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
BY = {"pod": ("pod",), "podgpu": ("pod", "gpu"), "ns": ("namespace",)}
SHORT = {FB_USED: "fb", FB_FREE: "free", ENGINE: "engine"}
ALL = [(field, aggregation, by) for field in (FB_USED, FB_FREE, ENGINE) for aggregation in ("sum", "avg", "max", "min")
       for by in BY]
# refused on CloudWatch (no set holds a pod's value per GPU of these): (pipeline, field, aggregation, grouping)
REFUSED = {("classic", FB_USED, "max", "podgpu"), ("classic", FB_USED, "min", "podgpu"),
           *(("classic", ENGINE, aggregation, "podgpu") for aggregation in ("max", "min")),
           ("classic", FB_FREE, "max", "podgpu"), ("classic", FB_FREE, "min", "podgpu"),
           ("otel", FB_FREE, "min", "podgpu")}  # (a pod's headroom is per instance: not its total per GPU)
# read per instance, said so: what team-q/dual (or team-q) reads
READ_APART = {
    **{("classic", FB_USED, aggregation, "ns"): what
       for aggregation, what in (("avg", "4,000 MiB for 8,000"), ("min", "1,000 MiB for 6,000"),
                                 ("max", "the largest instance, right here by GPU 0's 10,000"))},
    **{("classic", FB_USED, aggregation, "pod"): what
       for aggregation, what in (("avg", "4,667 MiB for 7,000"), ("min", "1,000 MiB for 4,000"),
                                 ("max", "the largest instance, right here by GPU 0's 10,000"))},
    **{("classic", ENGINE, aggregation, by): "each instance as a GPU" for by in ("pod", "ns")
       for aggregation in ("sum", "avg", "max", "min")},
    ("classic", ENGINE, "sum", "podgpu"): "1.0 for 0.5 on GPU 1",
    **{("classic", FB_FREE, aggregation, "ns"): what
       for aggregation, what in (("avg", "23,500 MiB for 47,000"), ("min", "7,000 MiB for 24,000"),
                                 ("max", "the largest instance, right here by GPU 0's 70,000"))},
    **{("classic", FB_FREE, aggregation, "pod"): what
       for aggregation, what in (("avg", "28,667 MiB for 43,000"), ("max", "the largest instance, right here"))},
}
# read apart but equal to the truth on this fleet (said so all the same: another fleet tells them apart)
EQUAL_HERE = {("classic", FB_USED, "max", "ns"), ("classic", FB_USED, "max", "pod")} \
    | {("classic", ENGINE, "avg", "pod")} \
    | {("classic", FB_FREE, "max", "ns"), ("classic", FB_FREE, "max", "pod")}


def _name(field: str, aggregation: str, by: str) -> str:
    return f"i-{SHORT[field]}-{aggregation}-{by}"


def _alarm(field: str, aggregation: str, by: str) -> str:
    return (f"    yield Alarm({_name(field, aggregation, by)!r}, 'T', Condition(Query({field!r}, {aggregation!r}, "
            f"{BY[by]!r}), '>=', 1), description='d', runbook='r')\n")


@pytest.fixture(scope="module", params=["otel", "classic"])
def alarmed(request, tmp_path_factory):
    text = HEAD + "".join(_alarm(*case) for case in ALL if (request.param, *case) not in REFUSED)
    project = defined_project(tmp_path_factory.mktemp("instance-fields"), f"agent:\n  pipeline: {request.param}\n",
                              alarms=text)
    return request.param, alarms_through_agent(project, STEP, END, two_instances.FLEET), project


def _request(alarmed, case) -> dict:
    _, (requests, _), _ = alarmed
    (request,) = [r for name, r in requests.items() if f"-{_name(*case)}-" in name]
    return request


@pytest.mark.parametrize("case", ALL, ids=[f"{SHORT[f]} {a} by {b}" for f, a, b in ALL])
def test_each_alarm_reads_the_truth(alarmed, case, request):
    pipeline = alarmed[0]
    if (pipeline, *case) in REFUSED:
        pytest.skip("refused (test_the_alarms_no_set_can_read_are_refused)")
    if (pipeline, *case) in READ_APART and (pipeline, *case) not in EQUAL_HERE:
        request.applymarker(pytest.mark.xfail(strict=True, reason=READ_APART[pipeline, *case]))
    _, (_, points), _ = alarmed
    field, aggregation, by = case
    values = {tuple(sorted((k, v) for k, v in key if k in ("namespace", "pod", "gpu"))): value
              for key, value in alarm_values(_request(alarmed, case), points, END, PERIOD).items()}
    assert values == pytest.approx(two_instances.truth(field, aggregation, BY[by]))


def test_the_alarms_that_read_instances_apart_say_so(alarmed):
    pipeline, _, project = alarmed
    said = {case for case in ALL if (pipeline, *case) not in REFUSED
            and INSTANCES_JUDGED in _request(alarmed, case)["AlarmDescription"]}
    expected = {(field, aggregation, by) for (each, field, aggregation, by) in READ_APART if each == pipeline}
    assert said == expected
    noted = {message.split("'")[1] for _, message in copies_counted(project) if INSTANCES_JUDGED in message}
    assert noted == {_name(*case) for case in expected}


@pytest.mark.parametrize("refused", sorted(REFUSED),
                         ids=[f"{p} {SHORT[f]} {a} by {b}" for p, f, a, b in sorted(REFUSED)])
def test_the_alarms_no_set_can_read_are_refused(refused, tmp_path):
    pipeline, *case = refused
    project = defined_project(tmp_path, f"agent:\n  pipeline: {pipeline}\n", alarms=HEAD + _alarm(*case))
    with pytest.raises(InputError, match="a MIG GPU's"):
        alarms_through_agent(project, STEP, END, two_instances.FLEET)


def test_without_mig_instances_nothing_is_said(tmp_path):
    """exporter.mig: none: a pod's series are one per GPU, nothing is said."""
    text = HEAD + "".join(_alarm(*case) for case in ALL if ("classic", *case) not in REFUSED)
    project = defined_project(tmp_path, "agent:\n  pipeline: classic\nexporter:\n  mig: none\n", alarms=text)
    assert [message for _, message in copies_counted(project) if INSTANCES_JUDGED in message] == []

"""A pod's count and sum per GPU it holds (`Query(field, "count" | "sum", ("pod", "gpu"))`) read each GPU of the pod
whole on CloudWatch, also a GPU pods share by time-slicing or MPS.

An exporter without KUBERNETES_VIRTUAL_GPUS (the GPU operator's default) names a GPU pods share under one of them at a
time, not always the same one (dcgm-exporter #340: the mixed fleet's gpu-node-ts names ts-0 and ts-1 in turn). A count
or sum per (pod, gpu) was the period's COUNT or SUM over the scrapes a period holds: ts-0 and ts-1 read 0.5 GPUs
(truth 1) and 1.5 % (truth 3 %), half the GPU's 200 W, so `count(util) by (pod, gpu) < 1` fired for both pods holding
the GPU (a pod's count and sum per pod, made at the agent per scrape, read them right). On agent.pipeline: otel the
agent now makes the pod's total per GPU it holds at each scrape too (its own marked set), read as the mean of the
scrapes that named the pod; with exporter.virtual_gpus (a copy per sharing pod at every scrape) the same. On
agent.pipeline: classic nothing makes a total per scrape: the alarm's description says what a pod named in turn
reads (as the dashboards' headers did per pod, and now per pod and GPU too).

The largest and smallest framebuffer per (pod, GPU), a MIG GPU's being the sum of the pod's instances on it, read the
same totals on agent.pipeline: otel (refused at generate before, on every pipeline; on classic still refused): a pod
holding both instances of an A100 reads 15,000 + 9,000 MiB there.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.cloudwatch_query import NAMED_SHARE
from generator.model import Query
from generator.render.alarms import SHORT
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import SHARED, alarm_values, alarms_through_agent
from tests.support.projects import defined_project

UTIL, POWER, FB_USED = "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED"
# (the max or min of a MIG GPU's framebuffer, its instances' sum, per pod and GPU reads the pod's totals per GPU too: it
# was refused at generate; on classic it still is)
FORMS = [(field, aggregation) for field in (UTIL, POWER, FB_USED)
         for aggregation in ("count", "sum", "avg", "max", "min")]
STEP, END = 30, 1800
HEAD = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"


def _a100(index: int, power: float, *instances: tuple) -> mixed_fleet.Gpu:
    """An A100 split into two 3g.20gb instances, each (id, pod, framebuffer used, free, engine activity)."""
    return mixed_fleet.Gpu(index, temp=60, power=power, sm_clock=1410, xid=0, energy_mw=power * 1000, replays_per_s=0,
                           memory_temp=55, model="NVIDIA A100-SXM4-40GB", instances=tuple(
                               mixed_fleet.Instance(id=id_, profile="3g.20gb", pod=pod, fb_used=used, fb_free=free,
                                                    engine=engine, mig_util="0")
                               for id_, pod, used, free, engine in instances))


# a pod holding both MIG instances of one A100 (its framebuffer there 15,000 + 9,000 MiB), the other GPU's one
BIG, SMALL = ("team-g", "mig-big"), ("team-g", "mig-small")
TWO_INSTANCES = mixed_fleet.Node("gpu-node-mig2", "Hostname", "nvidia-dcgm-exporter-x1y2z", (
    _a100(0, 300, ("1", BIG, 15000, 5000, 0.7), ("2", BIG, 9000, 11000, 0.5)),
    _a100(1, 200, ("1", BIG, 4000, 16000, 0.2), ("2", SMALL, 1000, 19000, 0.1))))
FLEETS = {"named in turn": ("", mixed_fleet.FLEET),
          "a copy per pod (virtual_gpus)": ("exporter:\n  virtual_gpus: true\n", SHARED),
          "a pod on two MIG instances of one GPU": ("", mixed_fleet.FLEET + (TWO_INSTANCES,))}


def _alarm(name: str, field: str, aggregation: str, by: tuple, comparison: str = ">", level: float = 1) -> str:
    return (f"    yield Alarm({name!r}, 'T', Condition(Query({field!r}, {aggregation!r}, {by!r}), {comparison!r}, "
            f"{level}), description='d', runbook='r')\n")


def _text(by: tuple, forms=FORMS) -> str:
    return HEAD + "".join(_alarm(f"{aggregation}-{n}", field, aggregation, by) for n, (field, aggregation)
                          in enumerate(forms))


def _legend(key: tuple) -> str:
    labels = dict(key)
    return f"Pod {labels['namespace']}/{labels['pod']}" + (f" GPU {labels['gpu']}" if "gpu" in labels else "")


@pytest.fixture(scope="module", params=list(FLEETS))
def otel(request, tmp_path_factory):
    settings, fleet = FLEETS[request.param]
    project = defined_project(tmp_path_factory.mktemp("otel"), "agent:\n  pipeline: otel\n" + settings,
                              alarms=_text(("pod", "gpu")))
    return request.param, fleet, alarms_through_agent(project, STEP, END, fleet)


@pytest.mark.parametrize("form", FORMS, ids=[f"{a} of {f}" for f, a in FORMS])
def test_each_aggregation_per_gpu_a_pod_holds_equals_the_truth(otel, form):
    """Every (pod, GPU) of the fleet: whole GPUs, a pod's two GPUs, MIG instances (framebuffer adds up over a pod's
    instances), and the time-sliced GPU's two pods, each reading the GPU whole (the mean, max and min read it whole
    before too: the scrapes that named the pod)."""
    _, fleet, (requests, points) = otel
    field, aggregation = form
    # (the GPU utilization alarm of a mean over a group has a second half for MIG instances, by engine activity)
    (request,) = [r for name, r in requests.items() if name.endswith(f"-{aggregation}-{FORMS.index(form)}-warning")]
    values = {_legend(key): value for key, value in alarm_values(request, points, END, 300).items()}
    truth = mixed_fleet.truth(Query(field, aggregation, ("pod", "gpu")), {}, fleet=fleet)
    if field == UTIL:  # MIG GPUs report no utilization: per (pod, GPU) the alarm does not evaluate them (lint AL012)
        truth = {legend: value for legend, value in truth.items() if "/mig-" not in legend}
    assert values == pytest.approx(truth)
    assert {"Pod team-d/ts-0 GPU 0", "Pod team-d/ts-1 GPU 0"} <= set(values)
    if TWO_INSTANCES in fleet and field == FB_USED and aggregation != "count":  # the premise: two instances add up
        assert values["Pod team-g/mig-big GPU 0"] == pytest.approx(24000)


@pytest.mark.parametrize("fleet_name", list(FLEETS))
def test_a_pod_holding_a_gpu_does_not_read_below_one_gpu(tmp_path, fleet_name):
    """`count(util) by (pod, gpu) < 1` (a pod that lost its GPU): every pod holds its GPUs, none alarms."""
    settings, fleet = FLEETS[fleet_name]
    project = defined_project(tmp_path, "agent:\n  pipeline: otel\n" + settings,
                              alarms=HEAD + _alarm("lost", UTIL, "count", ("pod", "gpu"), "<", 1))
    (request,), points = (lambda r: (list(r[0].values()), r[1]))(alarms_through_agent(project, STEP, END, fleet))
    states = cloudwatch_eval.alarm(request, points, END)
    assert {_legend(key) for key, state in states.items() if state == "ALARM"} == set()
    assert {_legend(key) for key in states} >= {"Pod team-d/ts-0 GPU 0", "Pod team-d/ts-1 GPU 0"}


@pytest.mark.parametrize("by", [("pod",), ("pod", "gpu")])
@pytest.mark.parametrize("fleet_name", list(FLEETS))
def test_classic_says_what_a_pod_named_in_turn_reads(tmp_path, by, fleet_name):
    """agent.pipeline: classic makes no total per scrape: a pod's count or sum per pod (or per GPU it holds) of a GPU
    named in turn reads the share of the scrapes that named it, which its description says. With exporter.virtual_gpus
    (a copy per pod at every scrape) the values are whole, and the description says it all the same: the setting says
    some exporters run with KUBERNETES_VIRTUAL_GPUS, and another of the fleet may name a GPU's pods in turn (seen on
    main 8fbc7f2e: said nowhere with the setting)."""
    settings, fleet = FLEETS[fleet_name]
    forms = [(field, aggregation) for field, aggregation in FORMS if aggregation in ("count", "sum")]
    project = defined_project(tmp_path, "agent:\n  pipeline: classic\n" + settings, alarms=_text(by, forms))
    requests, points = alarms_through_agent(project, STEP, END, fleet)
    said = {name: NAMED_SHARE in request["AlarmDescription"] or SHORT[NAMED_SHARE] in request["AlarmDescription"]
            for name, request in requests.items()}  # whole, or its short form
    assert said == {name: True for name in requests}
    if fleet is SHARED:
        for n, (field, aggregation) in enumerate(forms):
            (request,) = [r for name, r in requests.items() if f"-{aggregation}-{n}-" in name]
            values = {_legend(key): value for key, value in alarm_values(request, points, END, 300).items()}
            truth = mixed_fleet.truth(Query(field, aggregation, by), {}, fleet=fleet)
            if field == UTIL:  # MIG GPUs report no utilization: classic does not evaluate them (lint AL012)
                truth = {legend: value for legend, value in truth.items() if "/mig-" not in legend}
            assert values == pytest.approx(truth), (field, aggregation)



def test_cost_counts_a_pods_totals_per_gpu_per_gpu_it_holds(tmp_path):
    """A pod's total per GPU it holds is one custom metric per GPU a pod holds (10 pods of 10 GPUs each: 100 a field),
    not one per pod: `gpudash cost` priced it per pod (10 a field)."""
    from generator import cost

    def metrics(folder, text: str) -> float:
        folder.mkdir()
        project = defined_project(folder, "agent:\n  pipeline: otel\n", alarms=text)
        fleet = cost.Fleet(clusters=1, pods=10, churn=0, gpus=100)
        lines = cost.estimates(project, fleet, None, build(project))
        return {line["item"]: line for line in lines["group_by"]["lines"]}["custom metrics"]["quantity"]

    forms = [(UTIL, "count"), (POWER, "sum")]
    added = metrics(tmp_path / "totals", _text(("pod", "gpu"), forms)) \
        - metrics(tmp_path / "none", HEAD + "    return []\n")
    assert added == len(forms) * 100


@pytest.mark.parametrize("aggregation", ["max", "min"])
def test_classic_refuses_a_pods_largest_or_smallest_framebuffer_per_gpu(tmp_path, aggregation):
    """agent.pipeline: classic makes no pod's total per GPU: the largest or smallest of a MIG GPU's framebuffer (its
    instances' sum) per pod and GPU has no form there, and generate refuses it naming the alarm; the OTel pipeline
    builds it (test_each_aggregation_per_gpu_a_pod_holds_equals_the_truth)."""
    from generator.errors import InputError
    from generator.render.alarms import cloudwatch_alarms

    built = {}
    for pipeline in ("classic", "otel"):
        folder = tmp_path / pipeline
        folder.mkdir()
        project = defined_project(folder, f"agent:\n  pipeline: {pipeline}\n",
                                  alarms=HEAD + _alarm("fb", FB_USED, aggregation, ("pod", "gpu"), ">", 30000))
        try:
            cloudwatch_alarms(tuple(project.alarms), project.settings, project.catalog)
            built[pipeline] = True
        except InputError as exc:
            assert "'fb'" in str(exc) and "sum of its instances" in str(exc)
            built[pipeline] = False
    assert built == {"classic": False, "otel": True}

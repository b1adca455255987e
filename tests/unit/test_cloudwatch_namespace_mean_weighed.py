"""A namespace's (or a container's) mean over its GPUs on CloudWatch, where a GPU pods of different namespaces share by
time-slicing is named (no KUBERNETES_VIRTUAL_GPUS) under one of them at a time: the namespace's use of the GPU arrives
at the scrapes naming one of its pods there only, and the mean pools the period's readings of its GPUs, so the shared
GPU weighs by those scrapes, where the Prometheus rule and Grafana take each GPU's mean. Shown through the agent model
(agent.pipeline: otel) and said in the alarm's description and the widget's header (NAMESPACE_WEIGHED)."""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.cloudwatch_query import NAMED_WEIGHED, NAMESPACE_WEIGHED
from generator.render.alarms import SHORT
from tests.support.agent_points import agent_build, alarm_values, scrapes
from tests.support.cloudwatch_agent import Agent
from tests.support.cloudwatch_widgets import notes
from tests.support.mixed_fleet import Gpu, Instance, Node
from tests.support.projects import defined_project

POWER = "DCGM_FI_DEV_POWER_USAGE"
STEP, END, PERIOD = 30, 1800, 300


def _gpu(index: int, pods: tuple, power: float) -> Gpu:
    return Gpu(index, temp=50, power=power, sm_clock=1500, xid=0, energy_mw=100_000, replays_per_s=0, memory_temp=50,
               util=10, instances=(Instance(pod=pods[0], fb_used=1000, fb_free=23000, engine=0.1, also=pods[1:]),))


# team-a's pod holds GPU 0 of its own (300 W); GPU 1 (200 W) is shared by a pod of team-a and one of team-b, named under
# team-a's at even scrapes: team-a's mean over its GPUs is 250 W; pooled, GPU 0 weighs twice GPU 1: 266.7 W
A, B = ("team-a", "a-0"), ("team-b", "b-0")
NODE = Node("gpu-node-n", "hostname", "nvidia-dcgm-exporter-n0n0n", (
    _gpu(0, (A,), 300), _gpu(1, (A, B), 200)), moves=1)

ALARMS = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
          f"    yield Alarm('ns-mean', 'T', Condition(Query({POWER!r}, 'avg', ('namespace',)), '>', 260), "
          "description='d', runbook='r')\n"
          f"    yield Alarm('ns-max', 'T', Condition(Query({POWER!r}, 'max', ('namespace',)), '>', 260), "
          "description='d', runbook='r')\n")
DASHBOARD = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
             "    yield Dashboard(id='ns', title='Ns', description='d', rows=[Row('Namespaces', [Panel('Mean power by "
             f"namespace', Query({POWER!r}, 'avg', ('namespace',)), width=24), Panel('Top power by namespace', "
             f"Query({POWER!r}, 'max', ('namespace',)), width=24)])])\n")


@pytest.fixture(scope="module", params=["agent:\n  pipeline: otel\n", "agent:\n  pipeline: otel\nexporter:\n  mig: none\n",
                                        "agent:\n  pipeline: classic\n"])
def built(request, tmp_path_factory):
    made = agent_build(defined_project(tmp_path_factory.mktemp("ns"), request.param, alarms=ALARMS,
                                       dashboards=DASHBOARD), ("ns-mean", "ns-max"), "ns")
    return request.param, made.requests, made.header, \
        Agent(made.config, made.job).run(scrapes(made.job, STEP, END, (NODE,))), made.findings


def _mean(built, namespace: str) -> float:
    _, requests, _, points, _ = built
    request = requests["ns-mean"]
    values = alarm_values(request, points, END, PERIOD)
    (value,) = [v * request["Threshold"] for key, v in values.items() if dict(key).get("namespace") == namespace]
    return value


def test_a_namespaces_mean_weighs_a_gpu_named_in_turn_by_its_namings_and_says_so(built):
    """team-a's mean over its two GPUs is 250 W; CloudWatch reads 266.7 W (`> 260` fires, its rule does not)."""
    _, requests, text, _, _ = built
    assert [gpu.index for gpu in NODE.gpus if A in NODE.labelled(gpu.instances[0], 0)] == [0, 1]
    assert [gpu.index for gpu in NODE.gpus if A in NODE.labelled(gpu.instances[0], 1)] == [0]
    assert _mean(built, "team-a") == pytest.approx(800 / 3)
    description = requests["ns-mean"]["AlarmDescription"]
    assert (NAMESPACE_WEIGHED in description or SHORT[NAMESPACE_WEIGHED] in description) \
        and len(description) <= 1024, description
    assert "266.7 W for 250" in description and "Runbook: r" in description
    assert NAMED_WEIGHED not in description and SHORT[NAMED_WEIGHED] not in description
    assert "266.7" not in requests["ns-max"]["AlarmDescription"]
    assert NAMESPACE_WEIGHED in notes(text)["Mean power by namespace"], notes(text)
    assert NAMESPACE_WEIGHED not in notes(text).get("Top power by namespace", ())


@pytest.mark.xfail(strict=True, reason="CloudWatch pools a namespace's GPUs' readings: a GPU named in turn weighs half "
                                       "(266.7 W for 250): Metrics Insights averages a group's datapoints of the "
                                       "period at once and an alarm takes no math to average per-GPU means (a "
                                       "documented limit; the alarm and the header say it: NAMESPACE_WEIGHED)")
def test_a_namespaces_mean_is_the_mean_of_its_gpus(built):
    assert _mean(built, "team-a") == pytest.approx(250)


def test_the_add_on_namespace_mean_weighs_a_gpu_named_in_turn_by_its_collections_and_says_so(tmp_path):
    """On the Container Insights add-on each GPU's collection is published at the namespace's dimension set too, and its
    exporter (never with KUBERNETES_VIRTUAL_GPUS) names a GPU pods of two namespaces share under one at a time: ml's
    AVG pools its GPUs' collections (the add-on model), 266.7 W for 250; the alarm says it in collections, and the
    pod mean's note says collections too (the add-on's unit), not scrapes."""
    from generator.cloudwatch_query import NAMED_WEIGHED_COLLECTIONS, NAMESPACE_WEIGHED_COLLECTIONS
    from tests.support.container_insights_addon import datapoints
    from tests.support.dcgm_fleet import Gpu as Device

    own, shared = Device("ip-10-0-1-1", 0, "ml", "train-0"), Device("ip-10-0-1-1", 1, "ml", "train-0")
    other = Device("ip-10-0-1-1", 1, "web", "infer-1")
    points = [p for t in range(0, 240, 60)
              for p in datapoints("c", t, t, gpus=(own, shared if t % 120 == 0 else other), metrics={"pod_gpu_power_draw"})]
    namespace = [p.value for p in points if p.dims() == {"ClusterName": "c", "Namespace": "ml"}]
    mine = [p for p in points if p.dims().get("GpuDevice") and p.dims().get("Namespace") == "ml"
            and "ContainerName" not in p.dims()]
    means = [sum(v) / len(v) for v in ([p.value for p in mine if p.dims()["GpuDevice"] == d]
                                       for d in ("nvidia0", "nvidia1"))]
    # own at 4 collections, the shared GPU at the 2 naming train-0: pooled, not each GPU's mean
    assert len(namespace) == 4 + 2 and abs(sum(namespace) / len(namespace) - sum(means) / 2) > 1, (namespace, means)
    alarms = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
              f"    yield Alarm('ns-power', 'N', Condition(Query({POWER!r}, 'avg', ('namespace',)), '>', 260), "
              "description='d', runbook='r')\n"
              f"    yield Alarm('pod-power', 'P', Condition(Query({POWER!r}, 'avg', ('pod',)), '>', 260), "
              "description='d', runbook='r')\n")
    made = {a.request["AlarmName"]: a.request["AlarmDescription"]
            for a in build(defined_project(tmp_path, "cloudwatch:\n  source: container-insights\n",
                                           alarms=alarms)).alarms}
    (ns_mean,) = [text for name, text in made.items() if "-ns-power-" in name]
    (pod_mean,) = [text for name, text in made.items() if "-pod-power-" in name]
    for text, note in ((ns_mean, NAMESPACE_WEIGHED_COLLECTIONS), (pod_mean, NAMED_WEIGHED_COLLECTIONS)):
        assert (note in text or SHORT[note] in text) and len(text) <= 1024 and "Runbook: r" in text, text
        assert "266.7 W for 250" in text and "scrapes naming" not in text, text


def test_with_virtual_gpus_a_namespaces_mean_is_the_mean_of_its_gpus(tmp_path):
    """The way out of the strict xfail above is the exporter's: with KUBERNETES_VIRTUAL_GPUS (exporter.virtual_gpus)
    each scrape writes the shared GPU under both pods (dcgm-exporter PR #432), so team-a's readings of it are at every
    scrape, as its own GPU's are, and the pooled mean is the mean of its GPUs: 250 W."""
    from dataclasses import replace

    made = agent_build(defined_project(tmp_path, "agent:\n  pipeline: otel\nexporter:\n  virtual_gpus: true\n",
                                       alarms=ALARMS, dashboards=DASHBOARD), ("ns-mean", "ns-max"), "ns")
    points = Agent(made.config, made.job).run(scrapes(made.job, STEP, END, (replace(NODE, virtual_gpus=True,
                                                                                        moves=0),)))
    assert _mean(("", made.requests, made.header, points, made.findings), "team-a") == pytest.approx(250)

"""A GPU's mean of a field MIG reports per instance, where pods share one of its instances (exporter.virtual_gpus).

The overview's "Tensor core activity" draws one line per GPU: the AVG of the per-GPU set's observations of
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, which MIG reports per instance. The GPU's value is its instances' mean (the Grafana
panel's and the Prometheus rules', tests/support/mixed_fleet.truth: each instance once). An exporter run with
KUBERNETES_VIRTUAL_GPUS writes an instance that pods share by time-slicing once per pod, each copy the instance's
reading, and nothing merges those copies for this set (on the OTel pipeline the agent merges a GPU's copies only for
counters, the fields split per process and the readings once of the fleet's values), so the shared instance weighs
once per pod: an A100 split into two 3g.20gb instances, the first at 0.8 shared by two pods, the second at 0.2 held
by one, read 0.6 for 0.5 on both pipelines, and the header said nothing of it (seen on main 2af6a2fb). On the OTel
pipeline the line now reads each GPU's reading once (cloudwatch_query.instances_once: the agent merges each instance's
copies by `max`, then averages the GPU's instances, render/agent_otel.once_per_gpu): 0.5, nothing to say. On classic,
where nothing merges them, the header says it and a strict xfail pins the truth. An alarm on that mean says it too
where it reads the same set (classic); on the OTel pipeline an alarm below a level reads the unused share the agent
makes per GPU instance, copies merged.
"""

from __future__ import annotations

import json

import pytest

from tests.support import built, cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header, notes
from tests.support.dcgm_fleet import exporter_targets

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
OVERVIEW = "cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"
TITLE = "Tensor core activity"
SHARED = "with KUBERNETES_VIRTUAL_GPUS (exporter.virtual_gpus) a MIG instance pods share weighs once per pod"
PIPELINES = {"otel": "", "classic": "agent:\n  pipeline: classic\n"}
VIRTUAL = "exporter:\n  virtual_gpus: true\n"
# (GPU_I_ID, namespace, pod, tensor activity): instance 1 shared by two pods, instance 2 held by one
SHARING = (("1", "ml", "a", 0.8), ("1", "ml", "b", 0.8), ("2", "ml", "c", 0.2))
TRUTH = 0.5  # the GPU's instances' mean, each instance once


def _page(copies) -> str:
    labels = 'gpu="0",UUID="GPU-0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="n0"'
    lines = []
    for name in ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_GPU_TEMP"):
        lines.append(f"# TYPE {name} gauge")
        lines += [f'{name}{{{labels},GPU_I_ID="{instance}",GPU_I_PROFILE="3g.20gb",namespace="{namespace}",'
                  f'pod="{pod}",container="main"}} {value if name.endswith("ACTIVE") else 50}'
                  for instance, namespace, pod, value in copies]
    return "\n".join(lines) + "\n"


def _read(settings: str, copies=SHARING) -> tuple[float, str]:
    """The GPU's line of "Tensor core activity" in a period of 10 scrapes, and the dashboard's header."""
    files = built.files(settings)
    config, job = agent_config(files[AGENT_FILE])
    target = exporter_targets(job, 1)[0]
    points = Agent(config, job).run([Scrape(30.0 * k, _page(copies), target) for k in range(-1, 20)])
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    (properties,) = [w["properties"] for w in body["widgets"]
                     if w["type"] == "metric" and w["properties"]["title"].startswith(TITLE + " (")]
    (line,) = cloudwatch_eval.widget(properties, points, 0, 600).values()
    assert set(line) == {0, 300}, line
    (value,) = set(line.values())
    return value, header(files, OVERVIEW)


def test_on_classic_a_shared_instance_weighs_once_per_pod_as_the_header_says():
    value, text = _read(PIPELINES["classic"] + VIRTUAL)
    assert value == pytest.approx((0.8 * 2 + 0.2) / 3)  # 0.6
    assert SHARED in " ".join(notes(text).get(TITLE, ())), notes(text).get(TITLE)


def test_on_the_otel_pipeline_a_shared_instance_weighs_once_and_nothing_is_said():
    """Before, 0.6 here too (each pod's copy an observation of the per-GPU set), said in the header."""
    value, text = _read(PIPELINES["otel"] + VIRTUAL)
    assert value == pytest.approx(TRUTH)
    assert SHARED not in text


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_without_a_shared_instance_the_gpu_reads_its_instances_mean(pipeline):
    """Control: each instance held by one pod, or the exporter without KUBERNETES_VIRTUAL_GPUS (an instance's series
    written once): the mean of the instances. Without the setting, or where no GPU is split (exporter.mig: none), the
    header says nothing of shared instances."""
    value, _ = _read(PIPELINES[pipeline] + VIRTUAL, (SHARING[0], SHARING[2]))
    assert value == pytest.approx(TRUTH)
    for settings in (PIPELINES[pipeline], PIPELINES[pipeline] + VIRTUAL + "  mig: none\n"):
        assert SHARED not in header(built.files(settings), OVERVIEW), settings


@pytest.mark.xfail(strict=True, reason="agent.pipeline: classic merges nothing: the copies of a MIG instance pods share "
                                       "weigh once per pod in its GPU's mean (0.6 for 0.5; the header says so)")
def test_on_classic_a_gpus_mean_weighs_each_instance_once():
    value, _ = _read(PIPELINES["classic"] + VIRTUAL)
    assert value == pytest.approx(TRUTH)


ALARM = """from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm('tensor-low', 'Tensor cores idle', Condition(Query('DCGM_FI_PROF_PIPE_TENSOR_ACTIVE', 'avg',
                ('node', 'gpu')), '<', 0.55), description='A GPU whose tensor cores are mostly idle.', runbook='y')
"""



@pytest.mark.parametrize("pipeline", PIPELINES)
def test_an_alarm_on_a_gpus_mean_reads_or_says_what_a_shared_instance_weighs(tmp_path, pipeline):
    """The same mean in an alarm per GPU, under 0.55: its instances' mean, 0.5, fires. On the OTel pipeline the alarm
    reads the unused share the agent makes of each GPU instance (its pods' copies merged first: unused_plan), so it
    fires with the shared instance too and says nothing of it; on classic it reads the per-GPU set as the chart does,
    0.6, stays OK, and its description says why (seen on main 2af6a2fb: nothing said)."""
    from generator.artifacts import build
    from generator.output import encode
    from tests.support.projects import defined_project

    project = defined_project(tmp_path, PIPELINES[pipeline] + VIRTUAL, alarms=ALARM)
    files = encode(build(project, grafana=False))
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if "tensor-low" in a["Request"]["AlarmName"]]
    said_ = "a MIG instance pods share weighs once per pod in its GPU's mean" in request["AlarmDescription"]
    assert said_ == (pipeline == "classic"), request["AlarmDescription"]
    config, job = agent_config(files[AGENT_FILE])
    target = exporter_targets(job, 1)[0]
    states = {}
    for copies in (SHARING, (SHARING[0], SHARING[2])):  # the shared instance, then each instance held by one pod
        points = Agent(config, job).run([Scrape(30.0 * k, _page(copies), target) for k in range(-1, 40)])
        (states[len(copies)],) = cloudwatch_eval.alarm(request, points, 1200.0).values()
    assert states == {3: "OK" if pipeline == "classic" else "ALARM", 2: "ALARM"}, states

"""A pod's totals on CloudWatch (agent.pipeline: otel) where the exporter's series carry no `UUID` label.

dcgm-exporter writes each GPU's UUID, but an exporter built or relabelled otherwise may not (docs/grafana-panels.md
says the Grafana side of it). One node, four A10Gs: pod ml/p0 on GPUs 0 and 1 (100 and 200 W, 1,000 and 2,000 MiB),
ml/p1 on GPUs 2 and 3 (300 and 400 W, 3,000 and 4,000 MiB), each GPU's energy growing at its power. The agent made a
pod's totals per scrape by merging each GPU's copies by the pod's labels and the GPU's UUID alone, so without a UUID a
pod's GPUs were one: "Power draw of each pod's GPUs" read 400 W for 700, "Framebuffer used by pod" 4,000 MiB for
7,000, "Pods on GPUs" 1 for 2 (the fleet's values, made per node with the GPU's index, were right). The merge keys
the GPU's index too (render/agent_otel.GPU_ONCE): one scrape of one exporter names each GPU by its index, so a GPU's
copies (MIG instances, pods sharing it) still merge, and GPUs apart stay apart with or without a UUID. So does a pod's
copy of a counter (render/agent_otel._copy_labels: the index kept beside the UUID and MIG instance; it still carries
no node, so no per-GPU set takes it): without a UUID a pod's energy rate read its largest GPU's, 400,000 mW for
700,000.
"""

from __future__ import annotations

import functools
import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels

STEP, STEPS, NODE = 30, 40, "ip-10-0-1-1"
PAGE = "cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"
TRUTH = {"Power draw of each pod's GPUs": {"Pod ml/p0": 300.0, "Pod ml/p1": 700.0},
         "Framebuffer used by pod": {"Pod ml/p0": 3000.0, "Pod ml/p1": 7000.0},
         "Pods on GPUs": {"Pod ml/p0": 2.0, "Pod ml/p1": 2.0}}
ENERGY = "Energy use rate of each pod's GPUs"
ENERGY_TRUTH = {"Pod ml/p0": 300_000.0, "Pod ml/p1": 700_000.0}  # mW


def _payload(k: int, uuid: bool) -> str:
    lines = []
    for name, kind, value in (("DCGM_FI_DEV_GPU_TEMP", "gauge", lambda g: 50 + g),
                              ("DCGM_FI_DEV_POWER_USAGE", "gauge", lambda g: 100 * (g + 1)),
                              ("DCGM_FI_DEV_FB_USED", "gauge", lambda g: 1000 * (g + 1)),
                              ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
                               lambda g: 1e9 + k * STEP * 1000 * 100 * (g + 1))):
        lines.append(f"# TYPE {name} {kind}")
        for g in range(4):
            named = f'UUID="GPU-{g}",' if uuid else ""
            lines.append(f'{name}{{gpu="{g}",{named}device="nvidia{g}",modelName="NVIDIA A10G",Hostname="{NODE}",'
                         f'container="main",namespace="ml",pod="p{g // 2}"}} {value(g):.0f}')
    return "\n".join(lines) + "\n"


@functools.cache
def _drawn(uuid: bool) -> dict[str, dict[str, set[float]]]:
    """{widget title: {pod: the values its line draws}} over the twenty minutes but the first period (a counter's
    first reading is its baseline: 9 deltas there), the table at 900 s."""
    files = encode(build(load_project(), grafana=False))
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    points = Agent(config, job).run([Scrape(float(k * STEP), _payload(k, uuid), target_labels(job, NODE))
                                     for k in range(STEPS)])
    shown = {}
    for widget in json.loads(json.loads(files[PAGE])["DashboardBody"])["widgets"]:
        title = widget.get("properties", {}).get("title", "")
        if widget["type"] == "metric" and title in (*TRUTH, ENERGY):
            now = 900 if title == "Pods on GPUs" else None
            lines = cloudwatch_eval.widget(widget["properties"], points, 0, now or STEPS * STEP, now=now)
            shown[title] = {pod: {round(v, 6) for t, v in series.items() if t > 0 or now}
                            for pod, series in lines.items() if series}
    return shown


@pytest.mark.parametrize("uuid", [True, False])
@pytest.mark.parametrize("title", list(TRUTH))
def test_a_pods_totals_add_each_of_its_gpus(title, uuid):
    shown = _drawn(uuid)[title]
    assert shown == {pod: {value} for pod, value in TRUTH[title].items()}, shown


@pytest.mark.parametrize("uuid", [True, False])
def test_a_pods_energy_rate_adds_each_of_its_gpus(uuid):
    shown = _drawn(uuid)[ENERGY]
    assert shown == {pod: {value} for pod, value in ENERGY_TRUTH.items()}, shown


# A pod's alarms the agent makes copies for (cloudwatch_query.level_plan, unused_plan): each GPU's flag past a level,
# and each GPU's unused share, per pod and scrape. Pod ml/p on GPU 0 (85 C, 2 % busy) and GPU 1 (70 C, 50 % busy).
ALARMS = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
          "    yield Alarm('pod-hot', 'T', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'min', ('pod',)), '>', 80), "
          "evaluation_periods=2, datapoints_to_alarm=2, description='d', runbook='r')\n"
          "    yield Alarm('pod-idle', 'T', Condition(Query('DCGM_FI_DEV_GPU_UTIL', 'avg', ('pod',)), '<', 5), "
          "description='d', runbook='r')\n")


def _pod_page(uuid: bool) -> str:
    lines = []
    for name, values in (("DCGM_FI_DEV_GPU_TEMP", (85, 70)), ("DCGM_FI_DEV_GPU_UTIL", (2, 50))):
        lines.append(f"# TYPE {name} gauge")
        for g, value in enumerate(values):
            named = f'UUID="GPU-{g}",' if uuid else ""
            lines.append(f'{name}{{gpu="{g}",{named}device="nvidia{g}",modelName="NVIDIA A10G",Hostname="{NODE}",'
                         f'container="main",namespace="ml",pod="p"}} {value}')
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("uuid", [True, False])
def test_a_pods_level_and_idle_alarms_judge_each_of_its_gpus(tmp_path, uuid):
    """Every reading of the pod's GPUs above 80 C is false (GPU 1 at 70), and its mean utilization is 26 %, not below
    5: neither fires. Without a UUID the flags past the level merged the pod's GPUs by `max` (GPU 0's 1 at every
    scrape): "pod-hot" fired (render/agent_otel._level_identity keeps the index now; the unused shares alike)."""
    from tests.support.projects import defined_project

    project = defined_project(tmp_path, "agent:\n  pipeline: otel\n", alarms=ALARMS)
    files = encode(build(project, grafana=False))
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    points = Agent(config, job).run([Scrape(float(k * STEP), _pod_page(uuid), target_labels(job, NODE))
                                     for k in range(STEPS)])
    requests = {a["Request"]["AlarmName"]: a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    states = {name: set(cloudwatch_eval.alarm(request, points, STEPS * STEP).values())
              for name, request in requests.items() if "-pod-" in name and "-mig-" not in name}  # (no MIG GPU here)
    assert states and all(state == {"OK"} for state in states.values()), states

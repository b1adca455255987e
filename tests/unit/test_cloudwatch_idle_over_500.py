"""The idle-GPU alarm past 500 pod-GPU series in a cluster: which series it evaluates.

"Allocated GPU idle" is one GROUP BY alarm per cluster (`GROUP BY namespace, pod, gpu ORDER BY AVG() ASC`): a
multi-time-series alarm evaluates at most 500 series, the first its ORDER BY ranks over the evaluation window (the
30 minutes of its six 5-minute periods; tests/support/cloudwatch_eval.py). The title means a pod holding a GPU idle
for those 30 minutes. A pod that started within them reading low (loading a model at 0 %) has a lower mean than a pod
idle all along at 2 %: past 500 such series, the pod idle all along is not evaluated. No function of one series'
readings puts a pod there all along and reading low before one that came within the window reading lower (AVG,
MIN, MAX and SUM rank the newcomer first or alike; COUNT ranks every pod there all along alike, busy or idle).
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import discovered

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
PER_NODE = 8
END = 3600
START = END - 2400  # 40 minutes of scrapes: the 30-minute window and the range before it


def _page(node: int, t: float, newcomers: int) -> str:
    """GPU 0 of node 0: a pod idle all along at 2 %; the next `newcomers` GPUs: pods that came 2 minutes before
    END, at 0 % (loading); every other GPU: a pod busy at 90 % all along."""
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for g in range(PER_NODE):
        i = node * PER_NODE + g
        if i == 0:
            pod, util = "idle-all-along", 2.0
        elif i <= newcomers:
            pod, util = (f"new-{i}", 0.0) if t >= END - 120 else (None, 0.0)
        else:
            pod, util = f"busy-{i}", 90.0
        workload = f',namespace="ml",pod="{pod}",container="main"' if pod else ""
        lines.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",'
                     f'modelName="NVIDIA A10G",Hostname="n{node}"{workload}}} {util}')
    return "\n".join(lines) + "\n"


def _idle_states(tmp_path, nodes: int, newcomers: int) -> dict:
    (tmp_path / "gpudash.yaml").write_text("{}\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    config, job = agent_config(files[AGENT_FILE])
    targets = {n: discovered(job, {"__address__": f"10.3.{n // 200}.{n % 200}:9400",
                                   "__meta_kubernetes_namespace": "gpu-operator",
                                   "__meta_kubernetes_pod_name": f"nvidia-dcgm-exporter-{n}",
                                   "__meta_kubernetes_pod_node_name": f"node-{n}",
                                   "__meta_kubernetes_pod_container_port_number": "9400",
                                   "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter"}) for n in range(nodes)}
    points = Agent(config, job).run([Scrape(float(t), _page(n, t, newcomers), targets[n])
                                     for t in range(START, END, 30) for n in range(nodes)])
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if a["Request"]["AlarmName"] == "gpudash-gpu-cluster-gpu-idle-warning"]
    return cloudwatch_eval.alarm(request, points, END)


IDLE = (("namespace", "ml"), ("pod", "idle-all-along"), ("gpu", "0"))


def test_up_to_500_series_the_pod_idle_all_along_is_in_alarm(tmp_path):
    """Control: 64 GPUs, 20 pods that came 2 minutes ago at 0 %: every series is evaluated, the pod idle all along
    fires, the newcomers do not (their earlier periods hold no data: not breaching)."""
    states = _idle_states(tmp_path, 8, 20)
    assert states[IDLE] == "ALARM", states[IDLE]
    assert {key for key, state in states.items() if state == "ALARM"} == {IDLE}


@pytest.mark.xfail(strict=True, reason="past 500 pod-GPU series the idle alarm evaluates the 500 of the lowest mean "
                                        "over its 30 minutes: 505 pods that came within them at 0 % take every place "
                                        "and the pod idle all along at 2 % is not evaluated (issue 10)")
def test_past_500_series_the_pod_idle_all_along_is_still_in_alarm(tmp_path):
    """512 GPUs: the pod idle all along at 2 %, 505 pods that came 2 minutes ago at 0 % (loading), 6 busy. The 500
    series of the lowest mean over the window are newcomers: the pod the title means is not evaluated, and the alarm
    never fires for it (seen on main 2628696: no state for it at all)."""
    states = _idle_states(tmp_path, 64, 505)
    assert states.get(IDLE) == "ALARM", (states.get(IDLE), len(states))

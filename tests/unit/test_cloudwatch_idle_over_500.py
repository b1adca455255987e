"""The idle-GPU alarm past 500 pod-GPU series in a cluster: which series it evaluates.

"Allocated GPU idle" is one GROUP BY alarm per cluster: a multi-time-series alarm evaluates at most 500 series, the
first its ORDER BY ranks over the evaluation window (the 30 minutes of its six 5-minute periods;
tests/support/cloudwatch_eval.py). The title means a pod holding a GPU idle for those 30 minutes. A pod that started
within them reading low (loading a model at 0 %) has a lower mean than a pod idle all along at 2 %: ranked by
`AVG() ASC` (seen on main ddc22e6), past 500 such series the pod idle all along was not evaluated. No function of one
series' utilization ranks it first (AVG, MIN, MAX and SUM rank the newcomer first or alike; COUNT ranks every pod there
all along alike, busy or idle). On the OTel pipeline the agent publishes each reading's unused share (100 - the
utilization) and the alarm reads its mean above 95 (the same condition), ranked by its SUM over the window, the most
first: a pod low all along sums more than one that came within the window at 0 % or one busy all along.
"""

from __future__ import annotations

import json

import pytest

from tests.support import built, cloudwatch_eval
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


def _idle_states(tmp_path, nodes: int, newcomers: int, page=_page, settings: str = "{}\n") -> dict:
    files = built.files(settings)
    config, job = agent_config(files[AGENT_FILE])
    targets = {n: discovered(job, {"__address__": f"10.3.{n // 200}.{n % 200}:9400",
                                   "__meta_kubernetes_namespace": "gpu-operator",
                                   "__meta_kubernetes_pod_name": f"nvidia-dcgm-exporter-{n}",
                                   "__meta_kubernetes_pod_node_name": f"node-{n}",
                                   "__meta_kubernetes_pod_container_port_number": "9400",
                                   "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter"}) for n in range(nodes)}
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if a["Request"]["AlarmName"] == "gpudash-gpu-cluster-gpu-idle-warning"]
    # the datapoints the alarm reads (of the dimension sets the agent publishes each reading in)
    points = Agent(config, job, only=cloudwatch_eval.reads(request)).run(
        [Scrape(float(t), page(n, t, newcomers), targets[n]) for t in range(START, END, 30) for n in range(nodes)])
    return cloudwatch_eval.alarm(request, points, END)


IDLE = (("namespace", "ml"), ("pod", "idle-all-along"), ("gpu", "0"))


def test_up_to_500_series_the_pod_idle_all_along_is_in_alarm(tmp_path):
    """Control: 64 GPUs, 20 pods that came 2 minutes ago at 0 %: every series is evaluated, the pod idle all along
    fires, the newcomers do not (their earlier periods hold no data: not breaching)."""
    states = _idle_states(tmp_path, 8, 20)
    assert states[IDLE] == "ALARM", states[IDLE]
    assert {key for key, state in states.items() if state == "ALARM"} == {IDLE}


def test_past_500_series_the_pod_idle_all_along_is_still_in_alarm(tmp_path):
    """512 GPUs: the pod idle all along at 2 %, 505 pods that came 2 minutes ago at 0 % (loading), 6 busy. Ranked by
    AVG() ASC the 500 series of the lowest mean over the window were newcomers: the pod the title means was not
    evaluated (seen on main 2628696 and ddc22e6: no state for it at all). It alone fires."""
    states = _idle_states(tmp_path, 64, 505)
    assert states.get(IDLE) == "ALARM", (states.get(IDLE), len(states))
    assert {key for key, state in states.items() if state == "ALARM"} == {IDLE}



@pytest.mark.parametrize("series", [499, 500, 501])
def test_at_500_series_the_pod_idle_all_along_is_in_alarm(tmp_path, series):
    """Either side of the 500 series an alarm evaluates: the pod idle all along and series - 1 newcomers at 0 % (the
    last node's other GPUs hold no pod). Seen on main ddc22e6: at 501 the pod idle all along had no state."""
    def page(node: int, t: float, newcomers: int) -> str:
        text = _page(node, t, newcomers)
        if node == (series - 1) // PER_NODE:  # the GPUs past the series wanted: no pod
            text = "\n".join(line if not line.startswith("DCGM") or int(line.split('gpu="')[1].split('"')[0])
                             <= (series - 1) % PER_NODE else line.replace(',namespace="ml",pod="busy-', ',x="')
                             for line in text.splitlines()) + "\n"
        return text
    states = _idle_states(tmp_path, -(-series // PER_NODE), series - 1, page)
    assert len(states) == min(series, 500), len(states)
    assert states.get(IDLE) == "ALARM", (states.get(IDLE), len(states))


SHARED = 2  # pods sharing each GPU by time-slicing


def _shared_page(node: int, t: float, newcomers: int) -> str:
    """Every GPU shared by two pods (the exporter repeats the GPU's reading once per pod): GPU 0 of node 0 idle all
    along at 2 % (both its pods idle), the next GPUs' pods came 2 minutes before END at 0 %, the rest busy at 90 %."""
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for g in range(PER_NODE):
        i = node * PER_NODE + g
        for p in range(SHARED):
            if i == 0:
                pod, util = f"idle-{p}", 2.0
            elif i <= newcomers:
                pod, util = (f"new-{i}-{p}", 0.0) if t >= END - 120 else (None, 0.0)
            else:
                pod, util = f"busy-{i}-{p}", 90.0
            if pod is None and p:
                continue  # a GPU no pod holds: one series
            workload = f',namespace="ml",pod="{pod}",container="main"' if pod else ""
            lines.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",'
                         f'modelName="NVIDIA A10G",Hostname="n{node}"{workload}}} {util}')
    return "\n".join(lines) + "\n"


def test_past_500_series_both_pods_sharing_an_idle_gpu_are_in_alarm(tmp_path):
    """256 GPUs each shared by two pods (512 pod-GPU series): both pods of the GPU idle all along at 2 %, 253 GPUs'
    pods (506) that came 2 minutes ago at 0 %, the rest busy. Each pod's copy is its own series: both idle pods fire,
    nothing else does."""
    states = _idle_states(tmp_path, 32, 253, _shared_page)
    idle = {(("namespace", "ml"), ("pod", f"idle-{p}"), ("gpu", "0")) for p in range(SHARED)}
    assert {key for key, state in states.items() if state == "ALARM"} == idle, \
        {key: states.get(key) for key in idle}


def _nearly_page(node: int, t: float, newcomers: int) -> str:
    """_page's fleet, GPU 1 of node 0 a pod at 6 % all along (not idle: 5 % is the level)."""
    text = _page(node, t, newcomers)
    return text.replace('pod="new-1",container="main"} 0.0', 'pod="nearly",container="main"} 6.0').replace(
        'gpu="1",UUID="GPU-0-1",device="nvidia1",modelName="NVIDIA A10G",Hostname="n0"} 0.0',
        'gpu="1",UUID="GPU-0-1",device="nvidia1",modelName="NVIDIA A10G",Hostname="n0",namespace="ml",pod="nearly",'
        'container="main"} 6.0') if node == 0 else text


def test_past_500_series_a_pod_just_above_the_level_does_not_fire(tmp_path):
    """A pod at 6 % all along beside the pod idle at 2 % and 504 newcomers: it is evaluated (it ranks second) and is
    not idle; the pod at 2 % fires."""
    states = _idle_states(tmp_path, 64, 505, _nearly_page)
    nearly = (("namespace", "ml"), ("pod", "nearly"), ("gpu", "1"))
    assert states.get(nearly) == "OK" and states.get(IDLE) == "ALARM", (states.get(nearly), states.get(IDLE))


@pytest.mark.xfail(strict=True, reason="agent.pipeline: classic has no processor to publish the unused share: the "
                                        "idle alarm ranks by AVG() ASC, and 505 pods that came within its window at "
                                        "0 % take the 500 places (README says so; the OTel pipeline is the way out)")
def test_on_classic_past_500_series_the_pod_idle_all_along_is_in_alarm(tmp_path):
    states = _idle_states(tmp_path, 64, 505, settings="agent: {pipeline: classic}\n")
    assert states.get(IDLE) == "ALARM", (states.get(IDLE), len(states))

"""Each CloudWatch alarm and its Prometheus twin fire on the same situations when GPUs read DCGM's blank.

One node, three GPUs, an hour of 30 s scrapes: GPU 0 runs hot (84 °C) and logs XID 43 from minute 3;
GPU 1 never reads its temperature nor its last XID ("not supported"); GPU 2 is held by pod ml/idle-0
at 1 % utilization, with blank readings for three scrapes. The same readings go through the model of
the agent's OTel pipeline (the generated collector configuration) into the CloudWatch alarms, and into
`promtool test rules` for the Prometheus rules: both fire for GPU 0 and the idle pod, neither for GPU 1.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.promtool_rules import expected_alert, promtool_test

NOT_SUPPORTED = 9223372036854775794
STEPS, STEP = 120, 30  # an hour of 30 s scrapes
NODE = "ip-10-0-1-1"
PODS = {0: "busy-0", 1: "busy-1", 2: "idle-0"}


def _reading(metric: str, gpu: int, k: int) -> float:
    if metric == "DCGM_FI_DEV_GPU_TEMP":
        return {0: 84.0, 1: NOT_SUPPORTED, 2: 50.0}[gpu]
    if metric == "DCGM_FI_DEV_XID_ERRORS":
        return {0: 43.0 if k >= 6 else 0.0, 1: NOT_SUPPORTED, 2: 0.0}[gpu]
    if gpu == 2:  # utilization of the idle pod's GPU, blank during a profiling pause
        return NOT_SUPPORTED if 20 <= k < 23 else 1.0
    return 90.0


METRICS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_GPU_UTIL")


def _labels(gpu: int) -> str:
    return (f'gpu="{gpu}",UUID="GPU-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A10G",Hostname="{NODE}",'
            f'namespace="ml",container="main",pod="{PODS[gpu]}"')


def _payload(k: int) -> str:
    lines = []
    for metric in METRICS:
        lines.append(f"# TYPE {metric} gauge")
        lines += [f"{metric}{{{_labels(gpu)}}} {_reading(metric, gpu, k):.0f}" for gpu in PODS]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    files = encode(build(load_project()))
    folder = tmp_path_factory.mktemp("rules")
    (folder / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    return files, folder


def test_cloudwatch_alarms_fire_for_the_hot_gpu_and_the_idle_pod_only(built):
    files, _ = built
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    labels = target_labels(job, NODE)
    points = Agent(config, job).run([Scrape(float(k * STEP), _payload(k), labels) for k in range(STEPS)])
    alarms = {a["Request"]["AlarmName"]: a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    end = STEPS * STEP

    def firing(name):
        return {key for key, state in cloudwatch_eval.alarm(alarms[name], points, end).items() if state == "ALARM"}

    gpu0 = (("node", NODE), ("gpu", "0"))
    assert firing("gpudash-gpu-cluster-gpu-temp-high-warning") == {gpu0}
    assert firing("gpudash-gpu-cluster-gpu-temp-critical-critical") == set()
    assert firing("gpudash-gpu-cluster-xid-error-critical") == {gpu0}
    assert {frozenset(key) for key in firing("gpudash-gpu-cluster-gpu-idle-warning")} == \
        {frozenset({("namespace", "ml"), ("pod", "idle-0"), ("gpu", "2")})}  # each GPU a pod holds is judged


def test_prometheus_twins_fire_on_the_same_situations(built):
    _, folder = built
    series = [{"series": f"{metric}{{{_labels(gpu)},node=\"{NODE}\"}}",
               "values": " ".join(f"{_reading(metric, gpu, k):.0f}" for k in range(STEPS))}
              for metric in METRICS for gpu in PODS]
    at = f"{STEPS * STEP // 60 - 1}m"
    gpu0 = {"node": NODE, "gpu": "0"}
    promtool_test(folder, "blanks.yaml", [{"interval": f"{STEP}s", "input_series": series, "alert_rule_test": [
        {"eval_time": at, "alertname": "GpudashGpuTempHigh", "exp_alerts": [expected_alert(folder, "GpudashGpuTempHigh",
                                                                                      **gpu0)]},
        {"eval_time": at, "alertname": "GpudashGpuTempCritical", "exp_alerts": []},
        {"eval_time": at, "alertname": "GpudashXidError", "exp_alerts": [expected_alert(folder, "GpudashXidError", **gpu0)]},
        {"eval_time": at, "alertname": "GpudashGpuIdle",
         "exp_alerts": [expected_alert(folder, "GpudashGpuIdle", namespace="ml", pod="idle-0", gpu="2")]},
    ]}], evaluation_interval=f"{STEP}s")

"""A workload pod's own Kubernetes labels on its GPUs' series do not change what the CloudWatch alarms read.

dcgm-exporter's --kubernetes-enable-pod-labels (its chart's kubernetes.enablePodLabels) writes each pod's Kubernetes
labels, sanitized and unprefixed, on the series of the GPUs it holds (internal/pkg/transformation/kubernetes.go,
getPodLabels, maps.Copy into the metric's labels). The OTel pipeline publishes the points it makes at the agent (a
pod's totals, a GPU's reading once, a node's mean, the unused share...) under marks that "no scraped series carries"
(cloudwatch_query), and keeps the scraped series out of the marked sets by label_matchers requiring every mark empty.
A pod labelled like a mark broke both: its GPUs' readings failed every unmarked set's matcher (a GPU at 92 °C left
gpu-temp-critical: no contributor at all), and a pod labelled `share` had its raw utilization published beside its
unused share in the idle alarm's set (an idle pod read 50 for its 100 unused: never idle). The agent's exporter job
now drops a scraped label of a mark's name (render/scrape.agent_scrape_job). Through the OTel agent model of the
build's own configuration into the generated alarms; the truth from the story.
"""

from __future__ import annotations

import json
import re

import pytest

from generator.cloudwatch_query import SCRAPED_MARKS
from tests.support import cloudwatch_eval
from tests.support.built import files as built_files
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_otel import otel_config, receiver_jobs
from tests.support.dcgm_fleet import target_labels

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
NODE, END = "ip-10-0-1-1", 2400  # 80 scrapes of 30 s: the idle alarm's 30 minutes and its range
# (gpu, pod, its own Kubernetes labels as the exporter writes them, temperature, utilization)
GPUS = ((0, "p0", {mark: "x" for mark in SCRAPED_MARKS if mark != "share"}, 92, 80),
        (1, "p1", {"share": "team-a", "app": "notebook"}, 60, 0))


def _payload() -> str:
    lines = []
    for field, column in (("DCGM_FI_DEV_GPU_TEMP", 3), ("DCGM_FI_DEV_GPU_UTIL", 4), ("DCGM_FI_DEV_FB_FREE", None)):
        lines.append(f"# TYPE {field} gauge")
        for gpu in GPUS:
            own = "".join(f',{name}="{value}"' for name, value in gpu[2].items())
            labels = (f'gpu="{gpu[0]}",UUID="GPU-{gpu[0]}",device="nvidia{gpu[0]}",modelName="NVIDIA A10G",'
                      f'Hostname="{NODE}",container="main",namespace="ml",pod="{gpu[1]}"{own}')
            lines.append(f"{field}{{{labels}}} {gpu[column] if column else 9000}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def judged():
    files = built_files("{}\n")
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(k * 30), _payload(), target_labels(job, NODE)) for k in range(80)])
    alarms = {a["Request"]["AlarmName"]: a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    return files, points, alarms


def test_a_hot_gpu_whose_pod_is_labelled_like_a_mark_is_critical(judged):
    _, points, alarms = judged
    states = cloudwatch_eval.alarm(alarms["gpudash-gpu-cluster-gpu-temp-critical-critical"], points, END)
    truth = {(("node", NODE), ("gpu", str(gpu[0]))): "ALARM" if gpu[3] > 87 else "OK" for gpu in GPUS}
    assert states == truth  # before: {GPU 1: OK}, GPU 0 (92 °C) not read at all


def test_an_idle_pod_labelled_share_is_idle(judged):
    _, points, alarms = judged
    states = cloudwatch_eval.alarm(alarms["gpudash-gpu-cluster-gpu-idle-warning"], points, END)
    truth = {(("namespace", "ml"), ("pod", gpu[1]), ("gpu", str(gpu[0]))): "ALARM" if gpu[4] < 5 else "OK"
             for gpu in GPUS}
    assert states == truth  # before: p1 OK, its 0 % read with its unused 100 % as 50


def test_every_mark_a_scraped_label_could_be_named_is_dropped_by_the_exporter_job(judged):
    """The marks the generated configuration's label_matchers require empty, those a Prometheus label can be named
    (a level's `above 80` cannot), are each dropped from the exporter's series by its job, before any processor."""
    files, _, _ = judged
    config = otel_config(files[AGENT_FILE])
    exporter = config["exporters"]["awsemf/gpudash"]
    required = {name for declaration in exporter["metric_declarations"]
                for matcher in declaration.get("label_matchers", []) if matcher.get("regex", "").startswith("^;")
                for name in matcher["label_names"]}
    nameable = {name for name in required if re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name)}
    assert {"share", "readings"} <= nameable and "above 80" in required - nameable
    (job,) = [j for name, j in receiver_jobs(config).items() if name == "dcgm-exporter"]
    drops = [rule["regex"] for rule in job["metric_relabel_configs"] if rule.get("action") == "labeldrop"]
    assert all(any(re.fullmatch(regex, name) for regex in drops) for name in nameable), (nameable, drops)
    assert not any(re.fullmatch(regex, name) for regex in drops for name in
                   ("gpu", "UUID", "namespace", "pod", "container", "GPU_I_ID", "GPU_I_PROFILE", "Hostname"))


def test_the_classic_path_has_no_marks_and_drops_nothing():
    config, job = agent_config(built_files("agent:\n  pipeline: classic\n")[AGENT_FILE])
    assert not [rule for rule in job["metric_relabel_configs"] if rule.get("action") == "labeldrop"]

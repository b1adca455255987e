"""A GPU re-split into other MIG instances in the middle of a period (its MIG profile changed), on CloudWatch.

One A100 on one node, held whole by pod ml/a through MIG instances: two 3g.20gb instances (ids 1 and 2, 10,000 MiB
used each, graphics engine 0.2 and 0.4) until scrape 15 (450 s, the middle of the period 300-600 s), then three
2g.10gb instances (ids 3-5, 5,000 MiB used and engine 0.6 each). Twenty minutes of 30 s scrapes through the OTel agent
model of the bundled build, the bundled dashboards drawn as CloudWatch documents. The agent works within each scrape
(the GPU once by its UUID, a pod's total of its instances), so the period holding the re-split reads the means of its
scrapes: "GPUs reporting" 1 throughout, the pod's framebuffer 17,500 MiB (20,000 then 15,000), the GPU's utilization
(its instances' engine activity averaged, x 100) 45 %, power and temperature steady, each instance's line its own
(a line per instance id, its profile in the per-instance view's label).

What stays off: "Graphics/compute engine activity by pod" pools the instances' readings, each instance an
observation (the header says a pod holding several MIG instances of one GPU weighs that GPU once per instance,
POD_INSTANCES), so the re-split's period weighs the three-instance half by 3 and the other by 2: 0.48 for the GPU's
0.45 (a strict xfail: the header's note covers it).
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header, said

STEP, STEPS, SPLIT = 30, 40, 15
NODE = "gpu-node-mig"
FIELDS = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_TEMP",
          "DCGM_FI_DEV_POWER_USAGE")
PAGE = "cloudwatch/dashboards/gpudash-gpu-cluster-{}.json"


def _instances(k: int) -> list[tuple[int, str, float, float]]:
    """(id, profile, framebuffer used, engine activity) of each instance at scrape k."""
    if k < SPLIT:
        return [(1, "3g.20gb", 10000, 0.2), (2, "3g.20gb", 10000, 0.4)]
    return [(i, "2g.10gb", 5000, 0.6) for i in (3, 4, 5)]


def _payload(k: int) -> str:
    lines = []
    for name in FIELDS:
        lines.append(f"# TYPE {name} gauge")
        for instance, profile, used, engine in _instances(k):
            value = {"DCGM_FI_DEV_FB_USED": used, "DCGM_FI_DEV_FB_FREE": 20000 - used,
                     "DCGM_FI_PROF_GR_ENGINE_ACTIVE": engine, "DCGM_FI_DEV_GPU_TEMP": 60,
                     "DCGM_FI_DEV_POWER_USAGE": 250}[name]
            lines.append(f'{name}{{gpu="0",UUID="GPU-mig-0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",'
                         f'Hostname="{NODE}",DCGM_FI_DRIVER_VERSION="550.90.07",GPU_I_PROFILE="{profile}",'
                         f'GPU_I_ID="{instance}",container="main",namespace="ml",pod="a"}} {value:g}')
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def drawn() -> tuple[dict[str, bytes], dict[str, dict]]:
    """(the build, {widget title: its lines over the twenty minutes, or, for the values now, at 540 s})."""
    from tests.support.dcgm_fleet import target_labels

    files = encode(build(load_project(), grafana=False))
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    points = Agent(config, job).run([Scrape(float(k * STEP), _payload(k), target_labels(job, NODE))
                                     for k in range(STEPS)])
    lines = {}
    for page in ("overview", "by-pod"):
        for widget in json.loads(json.loads(files[PAGE.format(page)])["DashboardBody"])["widgets"]:
            if widget["type"] == "metric":
                properties = widget["properties"]
                now = 540 if properties["title"] in ("GPUs reporting", "Average GPU utilization") else None
                lines[properties["title"].split(" (")[0]] = cloudwatch_eval.widget(properties, points, 0,
                                                                                    now or STEPS * STEP, now=now)
    return files, lines


def _one(lines: dict) -> dict[int, float]:
    (series,) = lines.values()
    return {t: round(v, 9) for t, v in series.items()}


def test_the_gpu_counts_once_and_its_values_now_read_each_scrape(drawn):
    _, lines = drawn
    assert set(_one(lines["GPUs reporting"]).values()) == {1.0}
    assert _one(lines["Average GPU utilization"]) == {300: 30.0, 360: 30.0, 420: 45.0}  # the minute of the re-split


def test_the_resplits_period_reads_the_means_of_its_scrapes(drawn):
    _, lines = drawn
    assert _one(lines["Framebuffer used by pod"]) == {0: 20000, 300: 17500, 600: 15000, 900: 15000}
    assert _one(lines["GPU utilization"]) == {0: 30, 300: 45, 600: 60, 900: 60}
    assert _one(lines["Power draw"]) == {t: 250 for t in range(0, 1200, 300)}
    assert _one(lines["Power draw of each pod's GPUs"]) == {t: 250 for t in range(0, 1200, 300)}


def test_each_instance_keeps_a_line_of_its_own(drawn):
    _, lines = drawn
    per_instance = lines["Framebuffer used per MIG instance"]
    assert {label.rsplit(" MIG ", 1)[1]: {t: round(v) for t, v in series.items()}
            for label, series in per_instance.items()} == {
        "1 (3g.20gb)": {0: 10000, 300: 10000}, "2 (3g.20gb)": {0: 10000, 300: 10000},
        **{f"{i} (2g.10gb)": {300: 5000, 600: 5000, 900: 5000} for i in (3, 4, 5)}}


def test_the_header_says_a_pods_instances_of_one_gpu_weigh_once_each(drawn):
    files, _ = drawn
    assert said(header(files, PAGE.format("by-pod")), "Graphics/compute engine activity by pod",
                "a pod holding several MIG instances of one GPU weighs that GPU once per instance")


@pytest.mark.xfail(strict=True, reason="each MIG instance is an observation of the pod's line: the re-split's period "
                   "weighs the three-instance half by 3 and the two-instance half by 2, 0.48 for 0.45 (POD_INSTANCES)")
def test_the_pods_engine_activity_reads_its_gpus_mean(drawn):
    _, lines = drawn
    assert _one(lines["Graphics/compute engine activity by pod"]) == {0: 0.3, 300: 0.45, 600: 0.6, 900: 0.6}

"""A pod's power on CloudWatch is the draw of the GPUs it holds, each whole, and its title says so.

DCGM reads power per GPU, and the exporter writes no per-pod share of power in any mode (with
KUBERNETES_VIRTUAL_GPUS it splits only utilization and framebuffer per process: tests/support/virtual_gpus.py). So
the per-pod power widget cannot be a pod's own draw: each pod's line is its GPUs' whole draw. With
KUBERNETES_VIRTUAL_GPUS (settings `exporter.virtual_gpus: true`) the exporter writes a GPU that pods share by
time-slicing once per pod, each copy with the GPU's reading, and the lines of pods sharing a GPU add up to more
than the GPU draws. Without it (the default) it writes the GPU once, under one of its pods, and which one can change
from scrape to scrape (kubelet's order is not fixed: dcgm-exporter #340, PR #432): each pod named shows the GPU's
whole draw over the scrapes it is named at. The payloads go through the model of the agent fed with the generated
config, and the widget is evaluated with Metrics Insights' documented semantics, on both agent pipelines.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval, dcgm_fleet as F
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
NODE, END = "ip-10-0-1-1", 1800
TITLE = "Power draw of each pod's GPUs"
ENERGY, ENERGY_TITLE = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Energy use rate of each pod's GPUs"
# (gpu, watts, pods holding it): GPU 0 time-sliced between two pods, GPU 1 held by one pod alone
GPUS = ((0, 250.0, (("ml", "a"), ("ml", "b"))), (1, 100.0, (("ml", "c"),)))


def _payload(k: int | None = None) -> str:
    """The exporter's page: with KUBERNETES_VIRTUAL_GPUS (k None) a copy per pod holding a GPU; without it (scrape k)
    one series per GPU, under the pod the exporter names at that scrape (_named)."""
    lines = ["# TYPE DCGM_FI_DEV_POWER_USAGE gauge", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    if k is not None:
        lines += [f"# TYPE {ENERGY} counter", "# TYPE DCGM_FI_DEV_FB_USED gauge"]
    for gpu, watts, pods in GPUS:
        device = f'gpu="{gpu}",UUID="GPU-{NODE}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A10G",Hostname="{NODE}"'
        for namespace, pod in (pods if k is None else (_named(pods, k),)):
            labels = f'{device},namespace="{namespace}",pod="{pod}",container="main"'
            lines += [f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} {watts}", f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} 55"]
            if k is not None:  # energy in mJ: the GPU's draw over each 30 s scrape interval; framebuffer 20 MiB a W
                lines += [f"{ENERGY}{{{labels}}} {10**9 + watts * 1000 * F.STEP * k:.0f}",
                          f"DCGM_FI_DEV_FB_USED{{{labels}}} {watts * 20:.0f}"]
    return "\n".join(lines) + "\n"


def _named(pods: tuple[tuple[str, str], ...], k: int) -> tuple[str, str]:
    """The pod the exporter names a GPU under at scrape k: a shared GPU's second pod at odd scrapes, its first at
    even ones (#340: the order kubelet lists them in changes)."""
    return pods[k % 2] if len(pods) > 1 else pods[0]


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_each_pods_line_is_the_whole_draw_of_its_gpus_and_the_title_says_so(tmp_path, pipeline):
    (tmp_path / "gpudash.yaml").write_text(f"agent:\n  pipeline: {pipeline}\nexporter:\n  virtual_gpus: true\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(t), _payload(), F.target_labels(job, NODE))
                                     for t in range(0, END, F.STEP)])
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    shown = cloudwatch_eval.widget(widgets[TITLE], points, 0, END)
    whole = {f"Pod {ns}/{pod}": watts for _, watts, pods in GPUS for ns, pod in pods}
    assert {label: set(series.values()) for label, series in shown.items()} == \
        {label: {watts} for label, watts in whole.items()}
    # the pods' lines add up to more than the GPUs draw: each line is its GPUs' draw, not the pod's own
    drawn = sum(watts for _, watts, _ in GPUS)
    assert sum(series[0] for series in shown.values()) == 600.0 > drawn == 350.0
    description = next(p.description for d in load_project(tmp_path / "gpudash.yaml").dashboards
                       for p in d.panels() if p.title == TITLE)
    assert "whole draw under each pod holding" in description and "KUBERNETES_VIRTUAL_GPUS" in description


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_without_virtual_gpus_each_pod_named_reads_the_whole_draw_while_named(tmp_path, pipeline):
    """The default exporter names GPU 0 under pod a at even scrapes and under b at odd ones. Each pod's line is its
    GPUs' whole draw at the scrapes it is named at: a and b each 250 W, c 100 W, in every 5-minute period. The OTel
    pipeline publishes each pod's total per scrape, whose AVG is that; classic divides the period's SUM by the
    scrapes a period holds, so a pod named at half of them reads half of it (125 W): its header says so, and the
    panel's description says the GPU is named under one pod per scrape."""
    (tmp_path / "gpudash.yaml").write_text(f"agent:\n  pipeline: {pipeline}\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(t), _payload(t // F.STEP), F.target_labels(job, NODE))
                                     for t in range(0, END, F.STEP)])
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    shown = {label: set(series.values()) for label, series in
             cloudwatch_eval.widget(widgets[TITLE], points, 0, END).items()}
    truth = {"Pod ml/a": {250.0}, "Pod ml/b": {250.0}, "Pod ml/c": {100.0}}
    if pipeline == "otel":
        assert shown == truth
    else:
        assert {label: {round(v, 1) for v in values} for label, values in shown.items()} == \
            {"Pod ml/a": {125.0}, "Pod ml/b": {125.0}, "Pod ml/c": {100.0}}
    # framebuffer used by pod, the same way: 5,000 MiB on GPU 0 (a, b), 2,000 on GPU 1 (c)
    memory = {label: set(series.values()) for label, series in
              cloudwatch_eval.widget(widgets["Framebuffer used by pod"], points, 0, END).items()}
    assert memory == ({"Pod ml/a": {5000.0}, "Pod ml/b": {5000.0}, "Pod ml/c": {2000.0}} if pipeline == "otel" else
                      {"Pod ml/a": {2500.0}, "Pod ml/b": {2500.0}, "Pod ml/c": {2000.0}})
    header = body["widgets"][0]["properties"]["markdown"]
    assert ("reads the share of the period" in header) == (pipeline == "classic")
    # energy (a counter, mJ): each pod's GPUs use 250,000 mW (a, b) and 100,000 mW (c). The OTel pipeline's awsemf
    # keeps a pod's reading across the scrapes it is not named at, so each pod's deltas add up to its GPU's
    # increase (every period after the first, which starts from no earlier reading). Classic's JSON path forgets a
    # series' reading whenever a scrape leaves it out: a pod named at alternate scrapes publishes no delta at all.
    energy = {label: {t: round(v) for t, v in series.items() if t >= 300} for label, series in
              cloudwatch_eval.widget(widgets[ENERGY_TITLE], points, 0, END).items()}
    periods = range(300, END, 300)
    truth = {"Pod ml/a": 250_000, "Pod ml/b": 250_000, "Pod ml/c": 100_000}
    shown_energy = {label: set(series.values()) for label, series in energy.items() if series}
    if pipeline == "otel":
        assert shown_energy == {label: {mw} for label, mw in truth.items()}
        assert all(set(series) == set(periods) for series in energy.values())
    else:
        assert shown_energy == {"Pod ml/c": {100_000}}
    assert ("reads no increase across the scrapes it was not named at" in header) == (pipeline == "classic")
    description = next(p.description for d in load_project(tmp_path / "gpudash.yaml").dashboards
                       for p in d.panels() if p.title == TITLE)
    assert "under one of them per scrape" in description


def test_on_the_container_insights_add_on_the_header_says_a_shared_gpu_is_under_one_pod(tmp_path):
    """The add-on's own exporter publishes a GPU pods share once, under one of them with the whole value."""
    (tmp_path / "gpudash.yaml").write_text("cloudwatch:\n  source: container-insights\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    header = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"])[
        "DashboardBody"])["widgets"][0]["properties"]["markdown"]
    notes = header.split("\n\nOn CloudWatch: ", 1)[1].split("\n\n", 1)[0]
    (said,) = [n for n in notes.split("; ") if "published under one of them" in n
               or TITLE in n and "share" in n.split(": ", 1)[1]]
    assert TITLE in said and "the other pods show none of it" in header

"""A fleet whose GPUs come and go inside the time range: one-line means over GPUs stay true.

CloudWatch's metric math takes the AVG of an array of series treating a missing value as 0 (the
user guide's function table), so a GPU without a datapoint in a period (its node scaled in, a blank
reading dropped) would count as a GPU that read 0. Node ip-10-0-1-2 leaves the fleet after 10
minutes; the mean increase per GPU must then be the mean over the four GPUs still reporting.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.cloudwatch_widgets import close
from tests.support.dcgm_fleet import FLEET, STEP, scrapes, truth

START, END, LEAVES = 0, 1500, 600
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
MEANS = '''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="means", title="Means", rows=[Row("all", [
        Panel("Mean PCIe replays per GPU", Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "avg", (), as_increase=True),
              description="per GPU, then averaged"),
        Panel("Mean energy per GPU", Query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "avg", (), as_increase=True),
              description="per GPU, then averaged"),
    ])])
'''


def test_a_mean_over_gpus_counts_only_the_gpus_reporting(project_dir):
    project = load_project(project_dir(dashboards={"means.py": MEANS}))
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    staying = tuple(g for g in FLEET if g.node == "ip-10-0-1-1")
    leaving = tuple(g for g in FLEET if g.node == "ip-10-0-1-2")
    datapoints = Agent(config, job).run(scrapes(job, project.catalog, -1, END // STEP - 1, staying)
                                        + scrapes(job, project.catalog, -1, LEAVES // STEP - 1, leaving))
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-means.json"])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    (dashboard,) = [d for d in project.dashboards if d.id == "means"]
    checked = 0
    for panel in dashboard.panels():
        query = panel.queries[0]
        field = project.catalog.get(query.metric)
        assert widgets[panel.title]["setPeriodToTimeRange"]  # an increase: over the selected range
        for start, end in ((START, END), (START, LEAVES), (LEAVES, END)):
            (shown,) = cloudwatch_eval.widget(widgets[panel.title], datapoints, start, end).values()
            # each GPU's increase while it reported in the range, averaged over the GPUs that did
            per_gpu = [(truth(query, field, start, min(end, LEAVES), min(end, LEAVES) - start, gpus=leaving)[""][start],
                        len(leaving))] if start < LEAVES else []
            per_gpu.append((truth(query, field, start, end, end - start, gpus=staying)[""][start], len(staying)))
            value = sum(m * n for m, n in per_gpu) / sum(n for _, n in per_gpu)
            assert list(shown) == [start] and close(shown[start], value), (panel.title, start, end, shown, value)
            checked += 1
    assert checked == 6


SHARING = ("share-a", "share-b", "share-c")


def _time_sliced_framebuffer(k: int, copies: bool) -> str:
    """GPU 0 shared by time-slicing (5,000 MiB used on the GPU), GPU 1 whole and idle (2,000 MiB). `copies`: the
    exporter runs with KUBERNETES_VIRTUAL_GPUS before 4.5.3, repeating GPU 0's series once per pod, each with the
    device's value; else (the default) it writes GPU 0 once, under the pod it names at scrape k, which changes from
    scrape to scrape (dcgm-exporter #340)."""
    lines = ["# TYPE DCGM_FI_DEV_FB_USED gauge"]
    base = 'modelName="NVIDIA A10G",Hostname="h",DCGM_FI_DRIVER_VERSION="535.104.05"'
    for pod in SHARING if copies else (SHARING[k % len(SHARING)],):
        lines.append(f'DCGM_FI_DEV_FB_USED{{gpu="0",UUID="GPU-0",device="nvidia0",{base},pod="{pod}",'
                     f'namespace="ml",container="main"}} 5000')
    lines.append(f'DCGM_FI_DEV_FB_USED{{gpu="1",UUID="GPU-1",device="nvidia1",{base}}} 2000')
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("settings", ["", "exporter:\n  virtual_gpus: true\n"], ids=["one-moving-series", "copies"])
def test_a_time_sliced_gpus_framebuffer_counts_once(tmp_path, settings):
    """Each series of a time-sliced GPU reaches CloudWatch as its own observation under the GPU instance's
    dimensions: the framebuffer line is the GPU's value, never a sum (which would count the GPU once per pod), both
    where the exporter repeats it per pod (exporter.virtual_gpus) and where it writes it under a pod that changes at
    every scrape. A MIG GPU's instances are told apart from such repeats by GPU_I_ID (test_cloudwatch_mig)."""
    from tests.support.cloudwatch_agent import Scrape
    from tests.support.dcgm_fleet import target_labels

    (tmp_path / "gpudash.yaml").write_text(settings or "{}\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(STEP * k), _time_sliced_framebuffer(k, bool(settings)),
                                            target_labels(job, "ip-10-0-1-3")) for k in range(-1, END // STEP)])
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"])["DashboardBody"])
    (properties,) = [w["properties"] for w in body["widgets"]
                     if w["type"] == "metric" and w["properties"]["title"] == "Framebuffer memory used"]
    shown = cloudwatch_eval.widget(properties, points, START, END)
    assert {label: set(series.values()) for label, series in shown.items()} == {
        "ip-10-0-1-3 GPU 0 MIG none": {5000.0}, "ip-10-0-1-3 GPU 1 MIG none": {2000.0}}


def test_the_agent_model_forgets_a_counter_after_a_value_it_cannot_send():
    """amazon-cloudwatch-agent's delta calculator deletes a series' previous value when a NaN or infinite
    value arrives, so the next reading starts the series over (no delta) instead of spanning the gap."""
    from tests.support.cloudwatch_agent import Scrape

    config = {"logs": {"metrics_collected": {"prometheus": {"cluster_name": "c", "emf_processor": {
        "metric_declaration": [{"source_labels": ["job"], "label_matcher": "^j$", "dimensions": [["ClusterName"]],
                                "metric_selectors": ["^DCGM_FI_DEV_PCIE_REPLAY_COUNTER$"]}]}}}}}
    readings = ["10", "12", "NaN", "20", "23"]
    points = Agent(config).run([Scrape(30.0 * k, f"# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n"
                                                 f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{gpu=\"0\"}} {value}\n", {"job": "j"})
                                for k, value in enumerate(readings)])
    assert [(p.timestamp, p.value) for p in points] == [(30.0, 2.0), (120.0, 3.0)]

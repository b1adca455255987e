"""A MIG GPU split into instances of different profiles reads its device counters once per GPU on the OTel pipeline.

A device counter (PCIe replays, energy, rows remapped) repeats on every MIG instance of its GPU with the
GPU's reading; the agent's metricstransform merges those copies into one series per physical GPU before awsemf makes
deltas, keeping only the labels of the sets that publish the counter. With exporter.virtual_gpus the per-GPU-instance
sets of the fields the exporter splits per process name GPU_I_PROFILE; the merged device counters kept it too, so a
GPU split 4g.20gb + 3g.20gb (mixed_fleet: gpu-node-mig GPU 1, and mixed profiles are the common A100/H100 layouts)
had one merged series per profile: the per-GPU set held two deltas of every increase. Seen on main f0c65fc7: "NVLink
bandwidth counter rate" 80,000,000,000 B/s for 40,000,000,000, "PCIe replays" 0.2 for 0.1 per second, and the PCIe
replays alarm firing on 30 replays per 5 minutes (read 60, over its 50).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from generator.artifacts import build
from generator.render.cloudwatch import panel_title
from generator.output import encode
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import AGENT_FILE, through_agent
from tests.support.cloudwatch_agent import agent_config
from tests.support.cloudwatch_widgets import widgets
from tests.support.projects import defined_project

STEP, END = 30, 1800
(MIG,) = [node for node in mixed_fleet.FLEET if node.name == "gpu-node-mig"]
# its GPU 1: instances 4g.20gb and 3g.20gb (one a pod holds, one idle); PCIe replays 0.1 per second: 30 per 5 minutes
FLEET = (replace(MIG, gpus=(MIG.gpus[0], replace(MIG.gpus[1], replays_per_s=0.1))),)
KEY = "gpu-node-mig GPU 1"


@pytest.fixture(scope="module", params=["exporter:\n  virtual_gpus: true\n", ""], ids=["virtual-gpus", "default"])
def shown(tmp_path_factory, request):
    project = defined_project(tmp_path_factory.mktemp("profiles"), request.param)
    files = encode(build(project, grafana=False))
    assert {i.profile for i in FLEET[0].gpus[1].instances} == {"4g.20gb", "3g.20gb"}
    return files, through_agent(files, STEP, END, FLEET)


def test_a_device_counters_rate_reads_each_gpu_once_whatever_its_instances_profiles(shown):
    files, points = shown
    charts = ("NVLink throughput", "PCIe replays")
    values = {panel_title(p["title"]): {label: series[max(series)] for label, series in
                                        cloudwatch_eval.widget(p, points, 0, END).items()}
              for _, p in widgets(files) if panel_title(p["title"]) in charts}
    gpu = FLEET[0].gpus[1]
    assert values["NVLink throughput"][KEY] == gpu.nvlink_mb_per_s  # a level of the device, read once too
    assert values["PCIe replays"][KEY] == pytest.approx(gpu.replays_per_s)
    # the GPU of one profile on both instances reads once too
    assert values["NVLink throughput"]["gpu-node-mig GPU 0"] == FLEET[0].gpus[0].nvlink_mb_per_s


def test_the_pcie_replays_alarm_counts_a_mig_gpus_replays_once(shown):
    files, points = shown
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if "-pcie-replays-" in a["Request"]["AlarmName"]]
    assert request["Threshold"] == 50  # replays per 5 minutes; the GPU's 30 are under it
    states = cloudwatch_eval.alarm(request, points, END)
    assert states[(("node", "gpu-node-mig"), ("gpu", "1"))] == "OK"


def test_the_merged_device_counter_keeps_no_mig_instance_label(shown):
    """What the agent is told: the device counters' merged copy keeps neither GPU_I_ID nor GPU_I_PROFILE."""
    files, _ = shown
    config, _ = agent_config(files[AGENT_FILE])
    transforms = config["processors"]["metricstransform/gpudash"]["transforms"]
    merged = [t for t in transforms if t["action"] == "insert" and "PCIE_REPLAY_COUNTER" in t["include"]]
    assert merged and all({"GPU_I_ID", "GPU_I_PROFILE"}.isdisjoint(t["operations"][0]["label_set"]) for t in merged)

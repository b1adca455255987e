"""A node's GPUs unread below its highest index (the GPU stopped reporting rule's CloudWatch alarm) where GPUs may be
split into MIG instances and the rule's field is one MIG does not report.

A counters CSV collecting none of temperature, power, framebuffer used and SM clock: the rule reads GPU utilization,
which MIG instances do not report, and beside it graphics engine activity, which they do (Catalog.mig_presence). The
agent reads a GPU by either (stopped_gpus.read_fields): node-x's GPU 0 is split into two MIG instances (engine activity
alone), GPUs 1 and 2 whole; GPU 1 is lost at scrape 20. Truth: 0 GPUs unread before, 1 after. node-y's GPUs 1 and 2
are split, GPU 0 whole, all along: 0. Read with GPU utilization alone, node-x's split GPU 0 was a hole all along.
"""

from __future__ import annotations

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from generator.resources import default_counters
from generator.stopped_gpus import UNREAD, read_fields
from tests.support.agent_points import AGENT_FILE
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels

LEFT_OUT = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_SM_CLOCK")
LOST = 20


def _page(node: str, k: int) -> str:
    util, engine = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"], ["# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge"]
    split = {"node-x": {0}, "node-y": {1, 2}}[node]
    for gpu in range(3):
        if node == "node-x" and gpu == 1 and k >= LOST:
            continue  # DCGM lost it
        labels = f'gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A100",Hostname="{node}"'
        if gpu in split:
            engine += [f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{labels},GPU_I_ID="{i}",GPU_I_PROFILE="3g.40gb"}} 0.5'
                       for i in (1, 2)]
        else:
            util.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 50")
            engine.append(f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{labels}}} 0.5")
    return "\n".join(util + engine) + "\n"


def test_a_gpu_split_into_mig_instances_is_read_by_the_field_its_instances_report(tmp_path):
    csv = tmp_path / "counters.csv"
    csv.write_text("".join(line for line in default_counters().read_text().splitlines(keepends=True)
                           if not line.startswith(LEFT_OUT)))
    (tmp_path / "gpudash.yaml").write_text("{}\n")
    project = load_project(tmp_path / "gpudash.yaml", csv)
    assert read_fields(project.catalog, project.settings) == ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    files = encode(build(project, grafana=False))
    assert b"stopped-reporting" in files["cloudwatch/alarms.json"]
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(float(k * 30), _page(node, k), target_labels(job, node))
               for k in range(40) for node in ("node-x", "node-y")]
    unread = {(p.dims()["node"], p.timestamp >= LOST * 30, p.value) for p in Agent(config, job).run(scrapes)
              if p.metric == UNREAD}
    assert unread == {("node-x", False, 0.0), ("node-x", True, 1.0), ("node-y", False, 0.0), ("node-y", True, 0.0)}

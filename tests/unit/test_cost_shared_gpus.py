"""`gpudash cost` counts what the agent writes when pods share GPUs: time-slicing, MIG instances.

A GPU several pods hold (time-slicing, MPS) is written by the exporter once per pod holding it, each copy with
that pod's labels; a GPU split into MIG instances once per instance (GPU_I_ID, GPU_I_PROFILE), its device fields
repeated on every instance. Each fleet's payloads are pushed three times through the models of the agent
(tests/support/cloudwatch_otel.py, the classic model), driven by the generated agent configuration; the last
scrape's log events are counted and measured, and the metrics they publish (metric name and dimension values)
counted. `gpudash cost --output json` for the same fleet must report that many events, bytes within a tenth,
and that many custom metrics (plus the one per node the exporters' scrapes without data publish, counted as an
upper bound).
"""

from __future__ import annotations

import json
import re

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import dcgm_fleet, kube_state
from tests.support.cloudwatch_agent import Agent, LogEvents, Scrape, agent_config, emf_format, scrape_jobs
from tests.support.dcgm_fleet import Gpu

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
EXPORTER = {"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter"}
STEP = 30
NODE = "ip-10-0-1-1"
PIPELINES = {"otel": "", "classic": "agent:\n  pipeline: classic\n"}
# 8 pods time-slice 2 GPUs: 4 each
TIME_SLICED = tuple(Gpu(NODE, i, "ml", f"ts-{i}-{j}") for i in (0, 1) for j in range(4))
# 2 GPUs split into 3 MIG instances each, a pod on each instance
MIG = tuple(Gpu(NODE, i, "ml", f"mig-{i}-{j}") for i in (0, 1) for j in range(3))
FLEETS = {
    "time-sliced": (TIME_SLICED, ["--pods", "8", "--gpus", "2"]),
    "mig": (MIG, ["--pods", "6", "--gpus", "2", "--mig-instances", "3"]),
}


def _payload(gpus, k: int, catalog) -> str:
    """The node's exporter payload at scrape k; a MIG instance's series carry its GPU_I_PROFILE and GPU_I_ID."""
    text = dcgm_fleet.payload(NODE, k, catalog, gpus)
    return re.sub(r'pod="mig-(\d)-(\d)"', r'pod="mig-\1-\2",GPU_I_PROFILE="1g.10gb",GPU_I_ID="\2"', text)


def _written(files, gpus, catalog) -> tuple[int, int, int]:
    """(events, bytes, metrics) the agent writes and publishes at one scrape, in steady state."""
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE]).get("gpudash-kube-state-metrics")
    agent = Agent(config, job, others=[ksm_job] if ksm_job else [])
    agent.events = LogEvents()
    for k in (0, 1, 2):
        scrapes = [Scrape(float(k * STEP), _payload(gpus, k, catalog), dcgm_fleet.target_labels(job, NODE))]
        if ksm_job:
            scrapes.append(kube_state.scrape(ksm_job, float(k * STEP), EXPORTER, 1, 1))
        agent.run(scrapes)
    namespace, units = emf_format(config)
    events = agent.events.at(float(2 * STEP))
    size = sum(len(agent.events.message(namespace, labels, metrics, units)) for _, labels, metrics in events)
    published = {(name, tuple(sorted(dims.items()))) for _, _, metrics in events
                 for name, sets in metrics.items() for dims in sets}
    return len(events), size, len(published)


@pytest.mark.parametrize("fleet", FLEETS)
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_cost_counts_each_copy_of_a_shared_gpu(pipeline, fleet, project_dir, cli):
    gpus, options = FLEETS[fleet]
    config = project_dir(PIPELINES[pipeline])
    project = load_project(config)
    events, size, metrics = _written(encode(build(project)), gpus, project.catalog)
    code, out, err = cli("cost", "--config", str(config), "--nodes", "1", *options, "--output", "json")
    assert code == 0, err
    result = json.loads(out)["group_by"]
    reported = result["log_events"]
    assert reported["per_scrape"] == events
    assert 0.9 * size <= reported["bytes_per_scrape"] <= 1.1 * size, (reported["bytes_per_scrape"], size)
    # the per-node flag of no GPU data (OTel) is published at every scrape: among the metrics the events publish
    custom = next(line for line in result["lines"] if line["item"] == "custom metrics")
    assert custom["quantity"] == metrics


def test_more_pods_than_gpus_without_saying_how_they_share_is_warned(project_dir, cli):
    config = project_dir("")
    code, out, err = cli("cost", "--config", str(config), "--pods", "8", "--gpus", "2", "--nodes", "1")
    assert code == 0
    assert "warning: 8 pods on 2 GPUs" in err and "--mig-instances" in err
    code, _, err = cli("cost", "--config", str(config), "--pods", "8", "--gpus", "2", "--mig-instances", "1")
    assert code == 0 and "warning" not in err
    code, _, err = cli("cost", "--config", str(config), "--pods", "2", "--gpus", "8")
    assert code == 0 and "warning" not in err

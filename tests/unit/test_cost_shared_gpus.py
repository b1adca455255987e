"""`gpudash cost` counts what the agent writes when pods share GPUs: time-slicing, MIG instances.

A GPU several pods hold (time-slicing, MPS) is written by an exporter run with KUBERNETES_VIRTUAL_GPUS (settings
exporter.virtual_gpus) once per pod holding it, each copy with that pod's labels; without the setting once, labelled
with one of its pods, which need not be the same one from scrape to scrape (kubelet's order is not fixed:
dcgm-exporter #340, PR #432); a GPU split into MIG instances once per instance (GPU_I_ID, GPU_I_PROFILE), its device
fields repeated on every instance. Each fleet's payloads are pushed through the models of the agent
(tests/support/cloudwatch_otel.py, the classic model), driven by the generated agent configuration; the last
scrape's log events are counted and measured, and the metrics the scrapes publish (metric name and dimension
values) counted. `gpudash cost --output json` for the same fleet must report that many events, bytes within a
tenth, and that many custom metrics (plus the one per node the exporters' scrapes without data publish, counted as
an upper bound). Without KUBERNETES_VIRTUAL_GPUS the pod named changes at each scrape here, so that every pod is
named within the run, as within a billed hour.
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
VIRTUAL = "exporter:\n  virtual_gpus: true\n"
# (GPUs, cost options, settings, a copy per pod): without KUBERNETES_VIRTUAL_GPUS a shared GPU is written once
FLEETS = {
    "time-sliced": (TIME_SLICED, ["--pods", "8", "--gpus", "2"], "", False),
    "time-sliced-virtual-gpus": (TIME_SLICED, ["--pods", "8", "--gpus", "2"], VIRTUAL, True),
    "mig": (MIG, ["--pods", "6", "--gpus", "2", "--mig-instances", "3"], "", True),
}
SCRAPES = 9  # the pods named in turn: each pod of a GPU four share named twice at least (a counter's delta)


def _payload(gpus, k: int, catalog, copies: bool, rotate: bool = False) -> str:
    """The node's exporter payload at scrape k; a MIG instance's series carry its GPU_I_PROFILE and GPU_I_ID.
    Without copies one pod per GPU is named: the last kubelet lists, or (`rotate`) another at each scrape."""
    if not copies:
        on = {}
        for gpu in gpus:
            on.setdefault(gpu.index, []).append(gpu)
        gpus = tuple(held[k % len(held)] if rotate else held[-1] for held in on.values())
    text = dcgm_fleet.payload(NODE, k, catalog, gpus)
    return re.sub(r'pod="mig-(\d)-(\d)"', r'pod="mig-\1-\2",GPU_I_PROFILE="1g.10gb",GPU_I_ID="\2"', text)


def _written(files, gpus, catalog, copies: bool, rotate: bool = False) -> tuple[int, int, int]:
    """(events, bytes) the agent writes at one scrape, in steady state, and the metrics its scrapes publish."""
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE]).get("gpudash-kube-state-metrics")
    agent = Agent(config, job, others=[ksm_job] if ksm_job else [])
    agent.events = LogEvents()
    published = set()
    for k in range(SCRAPES):
        scrapes = [Scrape(float(k * STEP), _payload(gpus, k, catalog, copies, rotate),
                          dcgm_fleet.target_labels(job, NODE))]
        if ksm_job:
            scrapes.append(kube_state.scrape(ksm_job, float(k * STEP), EXPORTER, 1, 1))
        agent.run(scrapes)
        published |= {(name, tuple(sorted(dims.items()))) for _, _, metrics in agent.events.at(float(k * STEP))
                      for name, sets in metrics.items() for dims in sets}
    namespace, units = emf_format(config)
    events = agent.events.at(float((SCRAPES - 1) * STEP))
    size = sum(len(agent.events.message(namespace, labels, metrics, units)) for _, labels, metrics in events)
    return len(events), size, len(published)


@pytest.mark.parametrize("fleet", FLEETS)
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_cost_counts_each_copy_of_a_shared_gpu(pipeline, fleet, project_dir, cli):
    gpus, options, settings, copies = FLEETS[fleet]
    config = project_dir(PIPELINES[pipeline] + settings)
    project = load_project(config)
    files = encode(build(project, grafana=False))  # the agent's ConfigMaps
    events, size, metrics = _written(files, gpus, project.catalog, copies)
    code, out, err = cli("cost", "--config", str(config), "--nodes", "1", *options, "--output", "json")
    assert code == 0, err
    result = json.loads(out)["group_by"]
    reported = result["log_events"]
    assert reported["per_scrape"] == events
    assert 0.9 * size <= reported["bytes_per_scrape"] <= 1.1 * size, (reported["bytes_per_scrape"], size)
    # the per-node flag of no GPU data (OTel) is published at every scrape: among the metrics the events publish
    custom = next(line for line in result["lines"] if line["item"] == "custom metrics")
    if copies:
        assert custom["quantity"] == metrics
        return
    # one pod named per GPU: the events are one copy per GPU (above); per-pod metrics come for each pod the exporter
    # names, which need not stay the same one, so cost counts every pod (an upper bound): reached on the OTel pipeline
    # when each pod is named in turn (otel: 119 with one pod named, 305 in turn, as cost says); on classic a counter
    # series named at every other scrape is new at each (the JSON path forgets a stale series' reading) and never
    # publishes a delta, so fewer (classic: 116, 214 in turn, cost 272)
    rotating = _written(files, gpus, project.catalog, copies, rotate=True)[2]
    assert metrics < custom["quantity"]
    assert rotating == custom["quantity"] if pipeline == "otel" else metrics < rotating < custom["quantity"]


def test_more_pods_than_gpus_without_saying_how_they_share_is_warned(project_dir, cli):
    config = project_dir("")
    code, out, err = cli("cost", "--config", str(config), "--pods", "8", "--gpus", "2", "--nodes", "1")
    assert code == 0
    assert "warning: 8 pods on 2 GPUs" in err and "--mig-instances" in err
    code, _, err = cli("cost", "--config", str(config), "--pods", "8", "--gpus", "2", "--mig-instances", "1")
    assert code == 0 and "warning" not in err
    code, _, err = cli("cost", "--config", str(config), "--pods", "2", "--gpus", "8")
    assert code == 0 and "warning" not in err

"""`gpudash cost` prices the EMF log events the agent really writes.

The bundled sample payload (three GPUs on two nodes, two of them held by a pod each, one idle) and
kube-state-metrics are scraped three times through the models of the agent, driven by the generated agent
configuration (tests/support/cloudwatch_otel.py for `agent.pipeline: otel`, the JSON path's model for
`classic`), which group each scrape's datapoints into log events as the agent's exporter does (one per label
set and metric type, see LogEvents). The events of the last scrape (counters have a delta by then) are counted
and their text measured; `gpudash cost --output json` for the same fleet (1 cluster, 2 pods, 3 GPUs, 2 nodes)
must report that many events per scrape, and bytes within a tenth of the text's (the sizes are estimates,
marked uncertain in the price file), and price the ingestion from them.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from generator.artifacts import build
from generator.cost import MINUTES_PER_MONTH
from generator.output import encode
from generator.preview.sample import SAMPLE
from generator.project import load_project
from generator.resources import bundled
from tests.support import kube_state
from tests.support.cloudwatch_agent import Agent, LogEvents, Scrape, agent_config, emf_format, scrape_jobs
from tests.support.dcgm_fleet import target_labels
from tests.unit.test_alarm_share_sets import HEAD, USER

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
EXPORTER = {"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter"}
STEP = 30
SETTINGS = {
    "otel": "",  # agent.metric_selection: used, the default
    "otel-all": "agent:\n  metric_selection: all\n",
    "otel-no-expected-signal": "alarms:\n  expected_gpus: none\n",
    "classic": "agent:\n  pipeline: classic\n",
    "classic-all": "agent:\n  pipeline: classic\n  metric_selection: all\n",
    # the bundled alarms and a user's of the same fields over other groupings: a copy of each field per grouping
    "otel-groupings": "definitions:\n  alarms: [alarms]\n",
    # the same where the per-pod set names the node: a pod's copy cannot keep the GPU's index (it would hold a per-GPU
    # set), so a pod's grouping and its GPUs' keep a copy each (render/agent_otel._copy_labels)
    "otel-groupings-node": "definitions:\n  alarms: [alarms]\ncloudwatch:\n  dimensions: [ClusterName, namespace, "
                           "pod, container, node, modelName, device]\n",
}


def _payloads() -> dict[str, str]:
    """The sample's payload of each node's exporter (its samples carry the node's Hostname)."""
    text = SAMPLE.read_text()
    nodes = sorted(set(re.findall(r'Hostname="([^"]+)"', text)))
    return {node: "\n".join(line for line in text.splitlines()
                            if line.startswith("#") or f'Hostname="{node}"' in line) + "\n" for node in nodes}


def _written(files) -> tuple[int, int]:
    """(events, bytes) the agent writes at one scrape of every target, in steady state."""
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE]).get("gpudash-kube-state-metrics")
    agent = Agent(config, job, others=[ksm_job] if ksm_job else [])
    agent.events = LogEvents()
    payloads = _payloads()
    for t in (0, STEP, 2 * STEP):
        scrapes = [Scrape(float(t), payload, target_labels(job, node)) for node, payload in payloads.items()]
        if ksm_job:
            scrapes.append(kube_state.scrape(ksm_job, float(t), EXPORTER, 2, 2, nodes=tuple(payloads)))
        agent.run(scrapes)
    namespace, units = emf_format(config)
    events = agent.events.at(float(2 * STEP))
    return len(events), sum(len(agent.events.message(namespace, labels, metrics, units))
                            for _, labels, metrics in events)


@pytest.mark.parametrize("name", SETTINGS)
def test_cost_counts_the_log_events_the_agent_writes(name, project_dir, cli, tmp_path):
    if name.startswith("otel-groupings"):
        shutil.copytree(bundled("alarms"), tmp_path / "alarms")
        (tmp_path / "alarms" / "mine.py").write_text(HEAD + USER)
    config = project_dir(SETTINGS[name])
    project = load_project(config)
    assert project.settings.scrape.seconds == STEP
    events, size = _written(encode(build(project, grafana=False)))  # the agent's ConfigMaps
    code, out, _ = cli("cost", "--config", str(config), "--pods", "2", "--gpus", "3", "--nodes", "2",
                       "--output", "json")
    assert code == 0
    result = json.loads(out)["group_by"]
    reported = result["log_events"]
    assert reported["per_scrape"] == events
    assert 0.9 * size <= reported["bytes_per_scrape"] <= 1.1 * size, (reported["bytes_per_scrape"], size)
    ingestion = next(line for line in result["lines"] if line["item"] == "EMF log ingestion (GB)")
    scrapes = MINUTES_PER_MONTH * 60 / STEP
    assert ingestion["quantity"] == pytest.approx(reported["bytes_per_scrape"] * scrapes / 1e9)

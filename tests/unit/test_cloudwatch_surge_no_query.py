"""Why no CloudWatch query reads a namespace's total (OTel pipeline) or a pod's (classic) true through an exporter
surge.

During a DaemonSet rollout with maxSurge two exporter pods serve a node, and the agent scrapes both: each is its own
target, scraped at its own instant, and nothing on the agent merges points across targets (docs/cloudwatch.md, "Two
exporter pods on one node"). A Metrics Insights query whose lines are namespaces (or pods) takes one statistic (AVG,
SUM, COUNT, MIN, MAX) per line and period over the observations of every metric of its SCHEMA in that group, and
metric math acts on those lines only. So two fleets whose published observations pool alike per namespace (per pod)
in every period, in every dimension set that names it, read alike in every such query and math over it, whatever
their truths.

Here, through the agent model of the default build (otel) and of `agent.pipeline: classic`, two such fleets:
* surge: namespace ml holds node-0's GPU 0 (pod ml/a, 100 W), which two exporter pods serve through the whole
  story, and node-1's GPU 0 (pod ml/b, 300 W): ml draws 400 W, pod ml/a 100 W;
* no surge: one exporter pod a node, ml holds node-0's GPUs 0 and 1 (pod ml/a holding both on classic; pods ml/a and
  ml/c on otel, 100 W each) and node-1's GPU 0 (ml/b, 300 W): ml draws 500 W, pod ml/a 200 W (classic).
Every set that names the namespace (otel: the namespace's use per GPU, the pods' totals, ...) or the pod (classic)
holds the same observations per group and period in both: no query can read 400 W for the first and 500 W for the
second (nor 100 and 200 W). The OTel pipeline's pods' totals and nodes' totals per scrape, which hold a scrape
whole, read both fleets true (test_cloudwatch_surge_pod_totals.py); the header of each widget of a namespace's total
(otel) and a pod's total (classic) says the (n + m) / n.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support.projects import defined_project
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import discovered

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
STEP, START, END, PERIOD = 30, 0, 1200, 300
POWER = "DCGM_FI_DEV_POWER_USAGE"


def _target(job: dict, node: int, pod: str, revision: str) -> dict[str, str]:
    return discovered(job, {"__address__": f"10.4.{node}.{len(pod)}:9400",
                            "__meta_kubernetes_namespace": "gpu-operator",
                            "__meta_kubernetes_pod_name": pod, "__meta_kubernetes_pod_node_name": f"node-{node}",
                            "__meta_kubernetes_pod_container_port_number": "9400",
                            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
                            "__meta_kubernetes_pod_controller_kind": "DaemonSet",
                            "__meta_kubernetes_pod_label_controller_revision_hash": revision})


def _page(node: int, gpus: dict[int, tuple[str, float]], spelling: str = "Hostname") -> str:
    """A node's page: {gpu index: (its pod, its power)}."""
    lines = [f"# TYPE {POWER} gauge"]
    for g, (pod, watts) in gpus.items():
        lines.append(f'{POWER}{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A100",'
                     f'{spelling}="node-{node}",namespace="ml",pod="{pod}",container="main"}} {watts:g}')
    return "\n".join(lines) + "\n"


# a user's panels of a namespace's and a pod's power (with the bundled ones: every set of it the agent publishes)
PANELS = """
from generator.model import Dashboard, Panel, Query, Row

def dashboards(ctx):
    yield Dashboard(id="teams", title="Teams", rows=[Row("all", [
""" + "".join(f"        Panel('{how} by {key}', Query('{POWER}', '{how}', ('{key}',))),\n"
              for how in ("sum", "avg", "max", "min", "count") for key in ("namespace", "pod")) + """    ])])
"""


@lru_cache(maxsize=None)
def _files(settings: str):
    with tempfile.TemporaryDirectory(prefix="gpudash-surge-") as folder:
        project = defined_project(Path(folder), settings, dashboards=PANELS)
        return encode(build(project, grafana=False))


def _points(settings: str, surge: bool, second_pod: str):
    config, job = agent_config(_files(settings)[AGENT_FILE])
    node0 = {0: ("a", 100.0)} if surge else {0: ("a", 100.0), 1: (second_pod, 100.0)}
    node1 = {0: ("b", 300.0)}
    scrapes = []
    for t in range(START - 2 * STEP, END, STEP):
        scrapes.append(Scrape(float(t), _page(0, node0), _target(job, 0, "nvidia-dcgm-exporter-old0", "6b7c8d9f5")))
        if surge:  # the new release's pod beside it, 7 s later in each interval, writing `hostname`
            scrapes.append(Scrape(float(t + 7), _page(0, node0, "hostname"),
                                  _target(job, 0, "nvidia-dcgm-exporter-new0-x", "7d9f8c6b4")))
        scrapes.append(Scrape(float(t + 3), _page(1, node1), _target(job, 1, "nvidia-dcgm-exporter-old1", "6b7c8d9f5")))
    scrapes.sort(key=lambda s: s.timestamp)
    return Agent(config, job).run(scrapes)


def _pooled(points, key: str, value: str) -> dict[tuple, Counter]:
    """{(dimension set, period start): the observations of the power metric whose `key` dimension is `value`} over
    every published set naming `key`, in the story's whole periods."""
    pooled: dict[tuple, Counter] = {}
    for point in points:
        dims = point.dims()
        if point.metric == POWER and dims.get(key) == value and START <= point.timestamp < END:
            period = int(point.timestamp // PERIOD * PERIOD)
            pooled.setdefault((tuple(sorted(dims)), period), Counter())[round(point.value, 6)] += 1
    return pooled


@pytest.mark.parametrize("settings, key, value, truths", [
    ("", "namespace", "ml", (400, 500)),
    ("agent:\n  pipeline: classic\n", "pod", "a", (100, 200)),
], ids=["otel namespace", "classic pod"])
def test_a_surged_fleet_and_one_of_another_truth_publish_the_same_observations(settings, key, value, truths):
    # on otel the no-surge fleet's second GPU of node-0 is another pod of ml (a pod's own totals would tell them
    # apart); on classic the same pod holds both (its namespace's and its own lines are then the pod's)
    second = "c" if key == "namespace" else "a"
    surged, other = _pooled(_points(settings, True, second), key, value), _pooled(_points(settings, False, second),
                                                                                   key, value)
    assert surged and {period for _, period in surged} == set(range(START, END, PERIOD))
    assert surged == other  # every set naming it, every period: the same observations, so every query reads alike
    assert truths[0] != truths[1]

"""Under the query's LIMIT, on the OTel pipeline, the fleet's four values read one series per node (each node's total
and count of GPUs read per scrape, made at the agent: render/agent_otel.node_means). Here a fleet mixes what the other
fleet tests take one at a time: nodes of 1 to 8 GPUs, one node of MIG GPUs (its utilization from
DCGM_FI_PROF_GR_ENGINE_ACTIVE per instance, its temperature and power repeated on each instance), a scrape that failed
inside the minute drawn, and an exporter pod replaced with a surge (two pods reading one node). Each value equals the
truth over the GPUs; a second cluster in the Region whose nodes have the same names changes nothing in the first's.
a0dfbc84 read no wrong number here; the test holds the weighting (a node's count, its total,
the mean of totals over counts) that a change to either the agent's transforms or the widgets' math would break.
"""

from __future__ import annotations

import json

from tests.support import built, cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import exporter_targets
from tests.unit.test_cloudwatch_fleet_over_500 import AGENT_FILE, END, OVERVIEW

TITLES = ("GPUs reporting", "Total power draw", "Average GPU utilization", "Average GPU temperature")
NODES = 30
GPUS = {n: 1 + n % 8 for n in range(NODES)}  # 129 GPUs
FAILED, SURGED, MIG = 3, 5, 7  # node 3's scrape at END - 90 fails; node 5 has two exporter pods; node 7 is MIG
TIMES = range(END - 240, END, 30)  # the scrapes of the widgets' own four minutes


def _labels(node: int, g: int, instance: int | None = None) -> str:
    mig = "" if instance is None else f',GPU_I_PROFILE="3g.20gb",GPU_I_ID="{1 + instance}"'
    return (f'gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A100-SXM4-40GB",'
            f'Hostname="n{node}"{mig}')


def _reading(name: str, node: int, g: int, more: float = 0.0) -> float:
    return more + {"DCGM_FI_DEV_GPU_TEMP": 40.0 + node, "DCGM_FI_DEV_POWER_USAGE": 100.0 + 10 * node + g,
            "DCGM_FI_DEV_GPU_UTIL": float((7 * node + 3 * g) % 100)}[name]


def _page(node: int, more: float = 0.0) -> str:
    lines = []
    for name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL"):
        if node == MIG and name == "DCGM_FI_DEV_GPU_UTIL":
            continue  # a MIG GPU reports no utilization; its instances' graphics engine activity stands in
        lines.append(f"# TYPE {name} gauge")
        for g in range(GPUS[node]):
            instances = range(2) if node == MIG else [None]
            lines += [f"{name}{{{_labels(node, g, i)}}} {_reading(name, node, g, more)}" for i in instances]
    if node == MIG:
        lines.append("# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge")
        lines += [f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{_labels(node, g, i)}}} "
                  f"{_reading('DCGM_FI_DEV_GPU_UTIL', node, g, more) / 100}"
                  for g in range(GPUS[node]) for i in range(2)]
    return "\n".join(lines) + "\n"


def _cluster(files: dict, name: str, page) -> tuple[dict, list]:
    """The cluster's overview widgets by title, and what its agent publishes of `page(node)` over TIMES."""
    config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{name}.yaml"])
    targets = exporter_targets(job, NODES)
    surge = exporter_targets(job, SURGED + 1, 2, "nvidia-dcgm-exporter-new")[SURGED]
    scrapes = [Scrape(float(t), "" if (n, t) == (FAILED, END - 90) else page(n), targets[n])
               for t in TIMES for n in range(NODES)]
    scrapes += [Scrape(float(t) + 7, page(SURGED), surge) for t in TIMES]
    body = json.loads(json.loads(files[OVERVIEW.replace("gpu-cluster", name)])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    return widgets, Agent(config, job, only=cloudwatch_eval.reads(*(widgets[t] for t in TITLES))).run(
        sorted(scrapes, key=lambda scrape: scrape.timestamp))


def _truth() -> dict[str, float]:
    gpus = [(n, g) for n in range(NODES) for g in range(GPUS[n])]
    return {"GPUs reporting": len(gpus),
            "Total power draw": sum(_reading("DCGM_FI_DEV_POWER_USAGE", n, g) for n, g in gpus),
            "Average GPU utilization": sum(_reading("DCGM_FI_DEV_GPU_UTIL", n, g) for n, g in gpus) / len(gpus),
            "Average GPU temperature": sum(_reading("DCGM_FI_DEV_GPU_TEMP", n, g) for n, g in gpus) / len(gpus)}


def _now(widgets: dict, points: list) -> dict[str, float]:
    shown = {}
    for title in TITLES:
        (line,) = cloudwatch_eval.widget(widgets[title], points, END - 6 * 3600, END, now=END).values()
        assert max(line) == END - 120, (title, line)
        shown[title] = line[END - 120]
    return shown


def test_a_mixed_fleet_under_the_limit_reads_the_truth():
    """129 GPUs on 30 nodes: 129 GPUs, 32,607 W, 47.71 % and 55.05 °C."""
    widgets, points = _cluster(built.files("{}\n"), "gpu-cluster", _page)
    shown, truth = _now(widgets, points), _truth()
    assert all(abs(shown[t] - truth[t]) < 1e-9 for t in TITLES), (shown, truth)


def test_another_cluster_of_the_region_with_the_same_node_names_changes_nothing():
    """Two clusters in us-east-1 whose nodes are named alike (node-0 ... node-29 in each, as two VPCs' private DNS
    names can be): each cluster's values read its own nodes (the query's ClusterName filter comes before GROUP BY
    node), the other's GPUs, each reading 50 more, left out."""
    files = built.files("clusters:\n  - {name: a, region: us-east-1}\n  - {name: b, region: us-east-1}\n")
    widgets, points = _cluster(files, "a", _page)
    points += _cluster(files, "b", lambda n: _page(n, more=50.0))[1]
    shown, truth = _now(widgets, points), _truth()
    assert all(abs(shown[t] - truth[t]) < 1e-9 for t in TITLES), (shown, truth)

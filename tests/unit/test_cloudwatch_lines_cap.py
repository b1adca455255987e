"""A chart of one line per pod or GPU shows every line, or its dashboard says which ones it shows.

Each per-pod and per-GPU chart's query ends `LIMIT cloudwatch.top_pods` / `top_gpus` (50 by default): a cluster of 64
GPUs draws 50 lines in "GPU temperature", the 50 hottest, and the 14 others nowhere. Grafana's panel of the same title
draws all 64. The dashboard must say it where its reader looks (the header), as it says every other way a widget
differs from its title.
"""

from __future__ import annotations

import json

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header, kept
from tests.support.dcgm_fleet import discovered

NODES, PER_NODE = 8, 8
HEALTH = "cloudwatch/dashboards/gpudash-gpu-cluster-health.json"


def _page(node: int) -> str:
    return "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + "".join(
        f'DCGM_FI_DEV_GPU_TEMP{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
        f'Hostname="n{node}"}} {40 + node + g}\n' for g in range(PER_NODE))


def _published(tmp_path, page, scrapes: int):
    """The default build's files, and what its agent publishes of `page(node, t)` scraped every 30 s on 8 nodes."""
    (tmp_path / "gpudash.yaml").write_text("{}\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    targets = {n: discovered(job, {"__address__": f"10.2.0.{n}:9400", "__meta_kubernetes_namespace": "gpu-operator",
                                   "__meta_kubernetes_pod_name": f"nvidia-dcgm-exporter-{n}",
                                   "__meta_kubernetes_pod_node_name": f"node-{n}",
                                   "__meta_kubernetes_pod_container_port_number": "9400",
                                   "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter"}) for n in range(NODES)}
    return files, Agent(config, job).run([Scrape(30.0 * k, page(n, 30.0 * k), targets[n])
                                          for k in range(-1, scrapes) for n in range(NODES)])


def test_a_per_gpu_chart_draws_every_gpu_or_says_it_draws_the_top_50(tmp_path):
    files, points = _published(tmp_path, lambda node, t: _page(node), 10)
    body = json.loads(json.loads(files[HEALTH])["DashboardBody"])
    (widget,) = [w["properties"] for w in body["widgets"]
                 if w["type"] == "metric" and w["properties"]["title"] == "GPU temperature"]
    lines = cloudwatch_eval.widget(widget, points, 0, 300)
    # seen on main: 50 lines of 64 GPUs, and the header silent about it
    assert len(lines) == NODES * PER_NODE or kept(header(files, HEALTH)).get("GPU temperature", "").startswith(
        "at most 50 GPUs (cloudwatch.top_gpus), those of the highest single reading"), len(lines)


SPIKE = (3, 5)  # (node, gpu): 50 W all along but one period of 400 W, the top of any chart of the cluster's power
PERIODS = 6


def _power(node: int, t: float) -> str:
    def watts(g: int) -> float:
        if (node, g) == SPIKE:
            return 400.0 if 600 <= t < 900 else 50.0
        return 200.0 + 8 * node + g
    return "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n" + "".join(
        f'DCGM_FI_DEV_POWER_USAGE{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
        f'Hostname="n{node}"}} {watts(g)}\n' for g in range(PER_NODE))


def test_a_cut_chart_keeps_the_gpu_that_reached_its_top(tmp_path):
    """Of 64 GPUs "Power draw" draws 50: the one that drew 400 W for five minutes, and 50 W the rest of the half
    hour, has the lowest mean of all and was cut (ORDER BY AVG()), so the chart's top read 263 W where Grafana's
    reads 400 W. Ranked by each GPU's highest reading it is drawn, and the header says which lines are kept."""
    files, points = _published(tmp_path, _power, 10 * PERIODS)
    for path in (HEALTH, "cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"):
        body = json.loads(json.loads(files[path])["DashboardBody"])
        (widget,) = [w["properties"] for w in body["widgets"]
                     if w["type"] == "metric" and w["properties"]["title"] == "Power draw"]
        lines = cloudwatch_eval.widget(widget, points, 0, 300 * PERIODS)
        assert len(lines) == 50
        assert max(v for line in lines.values() for v in line.values()) == 400.0, path  # seen: 263.0
        assert kept(header(files, path))["Power draw"] == \
            "at most 50 GPUs (cloudwatch.top_gpus), those of the highest single reading in the time range shown"


def test_on_the_container_insights_add_on_a_chart_by_pod_says_it_draws_pods(tmp_path):
    """The add-on names a pod `PodName`: its charts by pod said "at most 50 GPUs (cloudwatch.top_pods)"."""
    (tmp_path / "gpudash.yaml").write_text("cloudwatch:\n  source: container-insights\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    said = kept(header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"))
    assert said["GPU utilization by pod"] == \
        "at most 50 pods (cloudwatch.top_pods), those of the highest single reading in the time range shown"
    assert all(note.startswith("at most 50 pods (cloudwatch.top_pods)") for note in said.values()), said

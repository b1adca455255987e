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
from tests.support.cloudwatch_widgets import header, said
from tests.support.dcgm_fleet import discovered

NODES, PER_NODE = 8, 8
HEALTH = "cloudwatch/dashboards/gpudash-gpu-cluster-health.json"


def _page(node: int) -> str:
    return "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + "".join(
        f'DCGM_FI_DEV_GPU_TEMP{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
        f'Hostname="n{node}"}} {40 + node + g}\n' for g in range(PER_NODE))


def test_a_per_gpu_chart_draws_every_gpu_or_says_it_draws_the_top_50(tmp_path):
    (tmp_path / "gpudash.yaml").write_text("{}\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    targets = {n: discovered(job, {"__address__": f"10.2.0.{n}:9400", "__meta_kubernetes_namespace": "gpu-operator",
                                   "__meta_kubernetes_pod_name": f"nvidia-dcgm-exporter-{n}",
                                   "__meta_kubernetes_pod_node_name": f"node-{n}",
                                   "__meta_kubernetes_pod_container_port_number": "9400",
                                   "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter"}) for n in range(NODES)}
    points = Agent(config, job).run([Scrape(30.0 * k, _page(n), targets[n]) for k in range(-1, 10) for n in range(NODES)])
    body = json.loads(json.loads(files[HEALTH])["DashboardBody"])
    (widget,) = [w["properties"] for w in body["widgets"]
                 if w["type"] == "metric" and w["properties"]["title"] == "GPU temperature"]
    lines = cloudwatch_eval.widget(widget, points, 0, 300)
    # seen on main: 50 lines of 64 GPUs, and the header silent about it
    assert len(lines) == NODES * PER_NODE or said(header(files, HEALTH), "GPU temperature", "draws at most 50 GPUs"), \
        len(lines)

"""A node's GPUs unread below its highest index (the GPU stopped reporting rule's CloudWatch alarm) where a GPU's `gpu`
label is no number: a scrape relabelling it, another exporter.

The agent makes a GPU's place among its node's of OTTL's Double of `gpu` (NVML's index): Double of "a" or "GPU-3" is
nil, the statement fails and is skipped. The point kept its reading, a temperature of 40 to 43 C read as a highest
index of 43: node-x (GPUs "a" to "d") and node-h (0, 1, 2 and "GPU-3"), every GPU reporting, published 39 GPUs unread
and the alarm named both. Now such a GPU holds no place and is not counted: its node is judged on its other GPUs.
node-m (0, 1, 2 and "x"; GPU 1 lost at minute 10) is in ALARM from minute 20 (its two 5-minute periods), node-a (0 to 3,
all reporting) never. The Prometheus rule names GPUs by node and `gpu` whatever it holds.
"""

from __future__ import annotations

from generator.stopped_gpus import UNREAD
from tests.support import cloudwatch_eval
from tests.support.agent_points import AGENT_FILE
from tests.support.alarm_requests import alarm_request
from tests.support.built import files as built_files
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels

NODES = {"node-a": ("0", "1", "2", "3"), "node-x": ("a", "b", "c", "d"), "node-h": ("0", "1", "2", "GPU-3"),
         "node-m": ("0", "1", "2", "x")}
LOST = 600  # node-m's GPU 1 stops reporting at minute 10


def _page(node: str, t: float) -> str:
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for i, gpu in enumerate(NODES[node]):
        if node == "node-m" and gpu == "1" and t >= LOST:
            continue
        lines.append(f'DCGM_FI_DEV_GPU_TEMP{{gpu="{gpu}",UUID="GPU-{node}-{i}",device="nvidia{i}",'
                     f'modelName="NVIDIA A100-SXM4-80GB",Hostname="{node}"}} {40 + i}')
    return "\n".join(lines) + "\n"


def test_a_gpu_labelled_with_no_number_holds_no_place_among_its_nodes():
    files = built_files("")
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(k * 30.0, _page(node, k * 30.0), target_labels(job, node))
                                     for k in range(80) for node in NODES])
    unread: dict[str, set[float]] = {}
    for point in points:
        if point.metric == UNREAD:
            unread.setdefault(dict(point.dimensions)["node"], set()).add(point.value)
    assert unread == {"node-a": {0.0}, "node-x": {0.0}, "node-h": {0.0}, "node-m": {0.0, 1.0}}
    request = alarm_request(files, "gpu-stopped-reporting")
    fired = cloudwatch_eval.fired_at(request, points, [m * 60 for m in range(2, 40)], "node", evaluation_range=3)
    assert fired == {"node-m": {m * 60 for m in range(20, 40)}}

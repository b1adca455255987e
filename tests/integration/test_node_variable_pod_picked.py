"""The Node and GPU variables with a namespace or pod picked, over a range in which a node's exporter was upgraded
(an exporter of a DaemonSet without NODE_NAME, through a scrape path that does not label the node: the GPU
operator's ServiceMonitor as shipped), on a real Prometheus holding the history (backfilled).

The story (30 s scrapes, 2 hours): node n3's GPU 0 (GPU-n3-0). Its old exporter writes its own pod's name into
Hostname (nvidia-dcgm-exporter-q8w2z) for the first hour; the new one writes hostname="n3" from minute 50 on (an
overlap of ten minutes). ml/p held the GPU for the first half hour: only the old exporter ever named it.

Truth: ml's pods held a GPU of node n3 within the range: with the namespace (or the pod) picked, the Node variable
lists n3, the name every panel draws the GPU under (the range's best name of its copies: promql.gpus_named), and with
n3 picked the GPU variable lists 0; picking them, a per-GPU panel draws "n3 GPU 0" while ml/p held it.

Before: the Node variable ranked the names of the copies naming a picked pod alone, so it listed the old exporter's pod
name and not n3 (picking it, the per-GPU panels drew nothing: they name the GPU n3), and the GPU variable, matching
the node and the pod on one copy, listed no GPU with n3 picked."""

from __future__ import annotations

import re

import pytest

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from tests.support.grafana_variables import SPAN, query_variables
from tests.support.projects import bundled_panel, bundled_project
from tests.support.prometheus_server import backfilled_fixture, counted_inline, range_macros

STEP = 30
OLD_POD = "nvidia-dcgm-exporter-q8w2z"
ENDED, NEW_FROM, OLD_UNTIL = 1800, 3000, 3600  # ml/p's last naming; the new exporter's first scrape; the old's last
FIELDS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_SM_CLOCK",
          "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_FREE")
COPIES = {  # copy: (its node spelling and target, first scrape, last scrape)
    "old": (f'Hostname="{OLD_POD}",instance="10.0.3.9:9400"', 0, OLD_UNTIL),
    "new": ('hostname="n3",instance="10.0.3.10:9400"', NEW_FROM, SPAN)}
PICKS = {"namespace": {"namespace": "ml"}, "pod": {"pod": "p"}, "both": {"namespace": "ml", "pod": "p"}}
VARIABLES = ("namespace", "pod", "node", "gpu")


def _openmetrics(start: int) -> str:
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        for named, first, last in COPIES.values():
            for t in range(first, last + 1, STEP):
                held = ',container="main",namespace="ml",pod="p"' if t < ENDED else ""
                labels = f'gpu="0",UUID="GPU-n3-0",device="nvidia0",{named},job="nvidia-dcgm-exporter"{held}'
                lines.append(f"{metric}{{{labels}}} 65 {start + t}")
    return "\n".join(lines) + "\n# EOF\n"


history = backfilled_fixture("node-variable-pod-picked", _openmetrics, SPAN, STEP)


def _options(prometheus, variable: dict, end: int, selected: dict[str, str]) -> set[str]:
    """A query_result variable's options over the two hours ending at `end`, `selected` picked, the others at All."""
    query = interpolate(variable["query"], {**range_macros(f"{SPAN}s"), **variables(selected, VARIABLES)})
    expr = re.fullmatch(r"query_result\((.*)\)", query, re.S)[1]
    regex = re.compile(variable["regex"].strip("/"))
    lines = ["{" + ",".join(f'{k}="{v}"' for k, v in sorted(s["metric"].items())) + "}"
             for s in prometheus.query(expr, at=end)]
    return {m[1] for line in lines if (m := regex.search(line))}


@pytest.mark.parametrize("picked", sorted(PICKS))
def test_the_node_and_gpu_variables_list_the_node_and_gpu_the_picked_pods_held(history, picked):
    prometheus, start = history
    named, end = query_variables(), start + SPAN
    nodes = _options(prometheus, named["node"], end, PICKS[picked])
    gpus = {node: _options(prometheus, named["gpu"], end, {**PICKS[picked], "node": node}) for node in nodes}
    assert (nodes, gpus) == ({"n3"}, {"n3": {"0"}})


def test_the_node_variable_at_all_lists_the_node_alone(history):
    prometheus, start = history
    assert _options(prometheus, query_variables()["node"], start + SPAN, {}) == {"n3"}


@pytest.mark.parametrize("picked", sorted(PICKS))
def test_the_node_and_gpu_picked_draw_the_gpu_the_pod_held(history, picked):
    """Each option the variables offer picks the GPU in a per-GPU panel, at the steps ml/p held it (a range query over
    the two hours, as Grafana sends it), and nothing after its look-back."""
    prometheus, start = history
    (target,) = bundled_panel("GPU temperature")["targets"]
    selected = {**PICKS[picked], "node": "n3", "gpu": "0"}
    expr = interpolate(counted_inline(target["expr"], bundled_project()),
                       {**range_macros(f"{SPAN}s"), "__interval": "60s", "__rate_interval": "120s",
                        **variables(selected, VARIABLES)})
    shown = prometheus.query_at(expr, start + 60, SPAN // 60 - 1, 60)
    drawn = {at - start: {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in series}
             for at, series in shown.items() if at - start in (600, ENDED - 60, ENDED + 600, NEW_FROM + 600)}
    assert drawn == {600: {"n3 GPU 0": 65.0}, ENDED - 60: {"n3 GPU 0": 65.0}, ENDED + 600: {}, NEW_FROM + 600: {}}


# A node replaced by another on the same hardware (its GPU keeps its UUID): GPU-X under node-a held by ml/p for the
# first hour, under node-b held by ml/q for the second.
def _replaced(start: int) -> str:
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        for t in range(0, SPAN + 1, STEP):
            node, pod = ("node-a", "p") if t < SPAN // 2 else ("node-b", "q")
            labels = (f'gpu="0",UUID="GPU-X",device="nvidia0",hostname="{node}",node="{node}",'
                      f'instance="{node}:9400",job="dcgm",container="main",namespace="ml",pod="{pod}"')
            lines.append(f"{metric}{{{labels}}} 65 {start + t}")
    return "\n".join(lines) + "\n# EOF\n"


replaced = backfilled_fixture("node-variable-pod-picked-replaced", _replaced, SPAN, STEP)


def test_the_node_variable_with_the_namespace_picked_lists_both_names_of_a_replaced_node(replaced):
    prometheus, start = replaced
    assert _options(prometheus, query_variables()["node"], start + SPAN, {"namespace": "ml"}) == {"node-a", "node-b"}


@pytest.mark.parametrize("pod,node", [("p", "node-a"), ("q", "node-b")])
def test_the_node_variable_with_a_pod_picked_lists_the_node_it_held_the_gpu_on(replaced, pod, node):
    """Truth: ml/p held GPU-X on node-a alone, ml/q on node-b alone. Both names are the GPU's best (a node's) over the
    range; of those, the names a copy naming the picked pod carries are listed (promql._whole_range_names' `seen`),
    every one where none does (the story above: ml/p named only under the old exporter's own pod name). It listed
    node-b too for ml/p (picking it, the per-GPU panels drew nothing; the per-pod panels, matching the GPU on any copy,
    drew ml/p over the range)."""
    prometheus, start = replaced
    assert _options(prometheus, query_variables()["node"], start + SPAN, {"pod": pod}) == {node}

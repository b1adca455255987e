"""The dashboards' Node variable on a real Prometheus, over a node's old exporter (its own pod's name in `Hostname`,
as an exporter given no NODE_NAME writes it) and new one (`hostname="n3"`) both scraped (a maxSurge overlap on a
scrape path that does not label the node: the GPU operator's ServiceMonitor as shipped): test_copy_choice_hostile's
scene.

Truth: the variable lists the nodes GPUs are on, n3 alone, as every per-GPU line and alert names the GPU (n3 GPU 0);
not the old exporter's pod name, which is no node (picking it showed the GPU under the pod's name)."""

from __future__ import annotations

import pytest

from tests.support.copy_choice_scene import OLD_POD, tied_payload, two_exporters
from tests.support.grafana_variables import node_variables, variable_options


@pytest.fixture(scope="module")
def overlap(tmp_path_factory):
    # scraped every half second: the variable's windows are made for 30 s scrapes and hold every sample either way
    with two_exporters(tmp_path_factory, "node-variable", tied_payload, "DCGM_FI_DEV_GPU_TEMP", interval=0.5) as scene:
        yield scene


def test_the_node_variable_lists_the_node_not_the_old_exporters_pod(overlap, tmp_path):
    prometheus, start, end, _ = overlap
    nodes = node_variables(tmp_path)
    assert nodes, "no dashboard has a node variable"
    listed = {title: {at: variable_options(prometheus, variable, at) for at in (start + 3, (start + end) / 2, end)}
              for title, variable in nodes.items()}
    wrong = {title: shown for title, shown in listed.items() if any(v != {"n3"} for v in shown.values())}
    assert not wrong, f"Node options (true: n3 only; {OLD_POD} is the old exporter's pod) {wrong}"

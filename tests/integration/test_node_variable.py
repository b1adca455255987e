"""The dashboards' Node variable on a real Prometheus, over a node's old exporter (its own pod's name in `Hostname`,
as an exporter given no NODE_NAME writes it) and new one (`hostname="n3"`) both scraped (a maxSurge overlap on a
scrape path that does not label the node: the GPU operator's ServiceMonitor as shipped): test_copy_choice_hostile's
scene.

Truth: the variable lists the nodes GPUs are on, n3 alone, as every per-GPU line and alert names the GPU (n3 GPU 0);
not the old exporter's pod name, which is no node (picking it showed the GPU under the pod's name)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.project import load_project
from tests.integration.test_copy_choice_hostile import OLD_POD, _tied, _two_exporters
from tests.support.prometheus_server import range_macros


@pytest.fixture(scope="module")
def overlap(tmp_path_factory):
    # scraped every half second: the variable's windows are made for 30 s scrapes and hold every sample either way
    with _two_exporters(tmp_path_factory, "node-variable", _tied, "DCGM_FI_DEV_GPU_TEMP", interval=0.5) as scene:
        yield scene


def _node_variables(tmp_path: Path, settings: str = "") -> dict[str, dict]:
    (tmp_path / "gpudash.yaml").write_text(settings)
    return {dashboard.model["title"]: next(v for v in dashboard.model["templating"]["list"] if v["name"] == "node")
            for dashboard in grafana_dashboards(load_project(tmp_path / "gpudash.yaml"))}


def _options(prometheus, variable: dict, at: float) -> set[str]:
    """The variable's options as Grafana makes them: query_result's lines (`{labels} value time`) through its regex
    (the capture group), or label_values' values."""
    query = interpolate(variable["query"], {**range_macros("10m"), **variables({}, ("namespace", "pod"))})
    match = re.fullmatch(r"query_result\((.*)\)", query, re.S)
    assert match, f"not a query_result variable: {query}"
    lines = ["{" + ",".join(f'{k}="{v}"' for k, v in sorted(s["metric"].items())) + "}"
             for s in prometheus.query(match[1], at=at)]
    regex = re.compile(variable["regex"].strip("/"))
    return {m[1] for line in lines if (m := regex.search(line))}


def test_the_node_variable_lists_the_node_not_the_old_exporters_pod(overlap, tmp_path):
    prometheus, start, end, _ = overlap
    nodes = _node_variables(tmp_path)
    assert nodes, "no dashboard has a node variable"
    listed = {title: {at: _options(prometheus, variable, at) for at in (start + 3, (start + end) / 2, end)}
              for title, variable in nodes.items()}
    wrong = {title: shown for title, shown in listed.items() if any(v != {"n3"} for v in shown.values())}
    assert not wrong, f"Node options (true: n3 only; {OLD_POD} is the old exporter's pod) {wrong}"

"""The dashboards' variables over a dashboard range in which a GPU node left (scaled away, or drained and replaced after
an XID: the node one then looks into), on a real Prometheus holding the history (backfilled).

The story (30 s scrapes, 2 hours): n1's GPU 0 (held by ml/a) throughout; n2's GPUs 0 and 1 (GPU 1 held by ml/b) for
the first hour only. Grafana refreshes the variables on each time range change; the range is the two hours.

Truth: over that range the GPUs were on n1 and n2, pods ml/a and ml/b held them: every variable lists both (the Node
variable n1 and n2; with n2 picked, the GPU variable 0 and 1), as the namespace and pod variables (label_values over
the range) list ml/b's."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.project import load_project
from tests.support.prometheus_server import backfilled_fixture, range_macros

STEP = 30
SPAN = 2 * 3600
LEFT = SPAN // 2  # n2's last scrape: an hour before the range's end
FIELDS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_SM_CLOCK",
          "DCGM_FI_DEV_GPU_UTIL")
GPUS = (("n1", 0, "a", SPAN), ("n2", 0, "", LEFT), ("n2", 1, "b", LEFT))


def _openmetrics(start: int) -> str:
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        for node, gpu, pod, until in GPUS:
            held = f',container="main",namespace="ml",pod="{pod}"' if pod else ""
            labels = (f'gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",Hostname="{node}",'
                      f'instance="{node}:9400",job="gpu-metrics",node="{node}"{held}')
            lines += [f"{metric}{{{labels}}} 50 {start + t}" for t in range(0, until + 1, STEP)]
    return "\n".join(lines) + "\n# EOF\n"


history = backfilled_fixture("variables-over-range", _openmetrics, SPAN, STEP)


def _variables() -> dict[str, dict]:
    """The query variables of a bundled dashboard (all hold the same), as the default settings render them."""
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "gpudash.yaml").write_text("")
        (dashboard, *_) = grafana_dashboards(load_project(Path(scratch) / "gpudash.yaml"))
    return {v["name"]: v for v in dashboard.model["templating"]["list"] if v["type"] == "query"}


def _options(prometheus, variable: dict, at: int, **selected: str) -> set[str]:
    """The variable's options as Grafana makes them over the range ending at `at`: label_values' values over the
    range, or query_result's lines (evaluated at the range's end) through its regex."""
    values = {**range_macros(f"{SPAN}s"), **variables(selected, ("namespace", "pod", "node", "gpu"))}
    query = interpolate(variable["query"], values)
    if query.startswith("label_values("):
        series, label = re.fullmatch(r"label_values\((.*), (\w+)\)", query, re.S).groups()
        return set(prometheus.api(f"label/{label}/values", **{"match[]": series, "start": at - SPAN, "end": at}))
    expr = re.fullmatch(r"query_result\((.*)\)", query, re.S)[1]
    regex = re.compile(variable["regex"].strip("/"))
    lines = ["{" + ",".join(f'{k}="{v}"' for k, v in sorted(s["metric"].items())) + "}"
             for s in prometheus.query(expr, at=at)]
    return {m[1] for line in lines if (m := regex.search(line))}


def test_the_namespace_and_pod_variables_list_what_held_a_gpu_in_the_range(history):
    prometheus, start = history
    named = _variables()
    assert _options(prometheus, named["pod"], start + SPAN) == {"a", "b"}


def test_the_node_and_gpu_variables_list_a_node_that_left_during_the_range(history):
    prometheus, start = history
    named = _variables()
    end = start + SPAN
    shown = {"node": _options(prometheus, named["node"], end),
             "gpu on n2": _options(prometheus, named["gpu"], end, node="n2")}
    assert shown == {"node": {"n1", "n2"}, "gpu on n2": {"0", "1"}}, shown

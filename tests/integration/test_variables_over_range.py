"""The dashboards' variables over a dashboard range in which a GPU node left (scaled away, or drained and replaced after
an XID: the node one then looks into), on a real Prometheus holding the history (backfilled).

The story (30 s scrapes, 2 hours): n1's GPU 0 (held by ml/a) throughout; n2's GPUs 0 and 1 (GPU 1 held by ml/b) for
the first hour only. Grafana refreshes the variables on each time range change; the range is the two hours.

Truth: over that range the GPUs were on n1 and n2, pods ml/a and ml/b held them: every variable lists both (the Node
variable n1 and n2; with n2 picked, the GPU variable 0 and 1), as the namespace and pod variables (label_values over
the range) list ml/b's."""

from __future__ import annotations

from tests.support.grafana_variables import SPAN, query_variables, range_options
from tests.support.prometheus_server import backfilled_fixture

STEP = 30
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


def test_the_namespace_and_pod_variables_list_what_held_a_gpu_in_the_range(history):
    prometheus, start = history
    named = query_variables()
    assert range_options(prometheus, named["pod"], start + SPAN) == {"a", "b"}


def test_the_node_and_gpu_variables_list_a_node_that_left_during_the_range(history):
    prometheus, start = history
    named = query_variables()
    end = start + SPAN
    shown = {"node": range_options(prometheus, named["node"], end),
             "gpu on n2": range_options(prometheus, named["gpu"], end, node="n2")}
    assert shown == {"node": {"n1", "n2"}, "gpu on n2": {"0", "1"}}, shown

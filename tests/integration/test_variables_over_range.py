"""The dashboards' variables over a dashboard range in which a GPU node left (scaled away, or drained and replaced after
an XID: the node one then looks into), on a real Prometheus holding the history (backfilled).

The story (30 s scrapes, 2 hours): n1's GPU 0 (held by ml/a) throughout; n2's GPUs 0 and 1 (GPU 1 held by batch/b)
for the first hour only. Grafana refreshes the variables on each time range change.

Truth: over the two hours the GPUs were on n1 and n2, pods ml/a and batch/b held them: every variable lists both (the
Node variable n1 and n2; with n2 picked, the GPU variable 0 and 1). Over the last half hour only n1's GPU 0 reported,
held by ml/a: every variable lists that alone. Asked of /api/v1/label/<label>/values (Grafana's label_values where the
data source's Prometheus version is set), Prometheus answers from every series of the block the range touches, and the
namespace and pod variables listed batch/b, an hour gone, there. The story is written into one of promtool's blocks
(2 hours, cut on multiples of 2 hours since the epoch) whatever the time of day: across two blocks, the last half hour
of the story would touch one n2 never wrote to, and a variable listing every series of the blocks would pass."""

from __future__ import annotations

from tests.support.grafana_variables import SPAN, query_variables, range_options
from tests.support.prometheus_server import backfilled_fixture

STEP = 30
LEFT = SPAN // 2  # n2's last scrape: an hour before the range's end
BLOCK = 2 * 3600  # promtool's blocks: 2 hours each, cut on multiples of 2 hours since the epoch


def _origin(start: int) -> int:
    """The story's first scrape: the first block boundary from the backfill's start (a story of SPAN, the block's
    length, then fills that block; its last scrape, at SPAN, opens the next)."""
    return -(-start // BLOCK) * BLOCK
FIELDS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_SM_CLOCK",
          "DCGM_FI_DEV_GPU_UTIL")
GPUS = (("n1", 0, "ml", "a", SPAN), ("n2", 0, "", "", LEFT), ("n2", 1, "batch", "b", LEFT))


def _openmetrics(start: int) -> str:
    start = _origin(start)
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        for node, gpu, namespace, pod, until in GPUS:
            held = f',container="main",namespace="{namespace}",pod="{pod}"' if pod else ""
            labels = (f'gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",Hostname="{node}",'
                      f'instance="{node}:9400",job="gpu-metrics",node="{node}"{held}')
            lines += [f"{metric}{{{labels}}} 50 {start + t}" for t in range(0, until + 1, STEP)]
    return "\n".join(lines) + "\n# EOF\n"


history = backfilled_fixture("variables-over-range", _openmetrics, SPAN + BLOCK, STEP)


def test_the_namespace_and_pod_variables_list_what_held_a_gpu_in_the_range(history):
    prometheus, start = history
    start = _origin(start)
    named = query_variables()
    shown = {name: range_options(prometheus, named[name], start + SPAN) for name in ("namespace", "pod")}
    assert shown == {"namespace": {"ml", "batch"}, "pod": {"a", "b"}}, shown


def test_the_node_and_gpu_variables_list_a_node_that_left_during_the_range(history):
    prometheus, start = history
    start = _origin(start)
    named = query_variables()
    end = start + SPAN
    shown = {"node": range_options(prometheus, named["node"], end),
             "gpu on n2": range_options(prometheus, named["gpu"], end, node="n2")}
    assert shown == {"node": {"n1", "n2"}, "gpu on n2": {"0", "1"}}, shown


def test_every_variable_over_the_last_half_hour_lists_only_what_reported_in_it(history):
    prometheus, start = history
    start = _origin(start)
    named = query_variables()
    shown = {name: range_options(prometheus, named[name], start + SPAN, span=1800) for name in named}
    assert shown == {"namespace": {"ml"}, "pod": {"a"}, "node": {"n1"}, "gpu": {"0"}}, shown

"""A count of GPUs reporting a field in Grafana counts each GPU with a reading within the panels' look-back: it does
not flap with a GPU whose field reads DCGM's blank at every other scrape.

Two nodes of 6 GPUs, half an hour of 30 s scrapes, backfilled into a real Prometheus. ip-10-0-1-1's GPU 3 reads its
temperature at even scrapes and DCGM's blank ("not supported", about 9.2e18) at odd ones; ip-10-0-1-2's GPU 0 reads
only the blank; ip-10-0-1-2's GPU 5 is gone from 20 minutes in (its pod left, no sample after). Pod ml/train-0 holds
ip-10-0-1-1's GPUs 0 to 3, ml/train-1 its GPUs 4 and 5, serve/infer-<k> ip-10-0-1-2's GPU k.

The truth at an instant: a GPU reports while it has a reading (a sample under the blank floor) within the look-back
of the per-pod panels (promql.label_lookback: 4 scrape intervals, 120 s); a GPU that writes only the blank never
does, and one whose last reading is older than the look-back no longer does. So 11 GPUs report at every instant of
the first 20 minutes (ml/train-0 holds 4 of them), 10 from 120 s after GPU 5's last reading on, none from 120 s
after the end. Each panel (the overview's "GPUs reporting", the "Pods on GPUs" table) and a count per node and per
namespace, as Grafana sends them (the variables at All), is read every 10 s, off the scrape grid, against that
truth. Read at the instant only (the latest sample), the counts read 11 then 10, and ml/train-0 4 then 3, at
alternate scrapes, and the gone GPU counted for the 5 minutes an instant selector still reads its last sample.
"""

from __future__ import annotations

from collections import Counter

import pytest

from generator.model import Query
from generator.preview.legend import render as render_legend
from generator.project import load_project
from tests.integration.test_mig_twins import built_with
from tests.support.blank_scene import (BLANK_ONLY, END, LEFT, LOOKBACK, NODES, STEP, TEMP, dashboard_expr, openmetrics,
                                       pod, read_instants, reporting, sample)
from tests.support.panel_expression import panel_expression
from tests.support.prometheus_server import backfilled_fixture


backfilled = backfilled_fixture("blank-count-lookback", openmetrics(sample), END, STEP)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("blank-count-lookback"), {}, fields=(TEMP,))


def _wrong(shown: dict[float, dict[str, float]], truth) -> dict[float, tuple[dict, dict]]:
    return {t: (value, truth(t)) for t, value in shown.items() if value != truth(t)}


def test_the_premise():
    assert len(reporting(10 * STEP + 5)) == len(reporting(10 * STEP + 35)) == 11  # the flapping GPU both times
    assert len(reporting(LEFT * STEP + LOOKBACK + 5)) == 10
    assert reporting(END + LOOKBACK) == []


def test_gpus_reporting_counts_each_gpu_with_a_reading_within_the_lookback(built, backfilled):
    _, folder = built
    prometheus, start = backfilled
    expr, _ = dashboard_expr(folder, "gpudash-overview", "GPUs reporting")
    shown = read_instants(prometheus, start, expr, lambda metric: "all")
    wrong = _wrong(shown, lambda t: {"all": float(len(reporting(t)))} if reporting(t) else {})
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:8])} ({len(wrong)} of {len(shown)})"
    assert {shown[t]["all"] for t in shown if LOOKBACK < t < LEFT * STEP} == {11}  # never 10 while 11 report
    assert {shown[t]["all"] for t in shown if (LEFT - 1) * STEP + LOOKBACK < t < END} == {10}


def test_pods_on_gpus_count_each_pods_gpus_with_a_reading_within_the_lookback(built, backfilled):
    _, folder = built
    prometheus, start = backfilled
    expr, legend = dashboard_expr(folder, "gpudash-by-pod", "Pods on GPUs")
    shown = read_instants(prometheus, start, expr, lambda metric: render_legend(legend, metric))

    def truth(t: float) -> dict[str, float]:
        held = Counter("Pod {}/{}".format(*pod(node, gpu)) for node, gpu in reporting(t))
        return {name: float(count) for name, count in held.items()}
    wrong = _wrong(shown, truth)
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:8])} ({len(wrong)} of {len(shown)})"
    assert {shown[t]["Pod ml/train-0"] for t in shown if LOOKBACK < t < END} == {4}


@pytest.mark.parametrize("key", ["node", "namespace"])
def test_a_count_per_node_or_namespace_counts_each_gpu_with_a_reading_within_the_lookback(built, backfilled, key):
    _, folder = built
    prometheus, start = backfilled
    project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
    expr = panel_expression(project, Query(TEMP, "count", (key,)))
    shown = read_instants(prometheus, start, expr, lambda metric: metric[key])

    def truth(t: float) -> dict[str, float]:
        each = Counter(node if key == "node" else pod(node, gpu)[0] for node, gpu in reporting(t))
        return {name: float(count) for name, count in each.items()}
    wrong = _wrong(shown, truth)
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:8])} ({len(wrong)} of {len(shown)})"


def test_the_variables_list_a_gpu_that_writes_only_the_blank(backfilled):
    """A GPU whose field reads only DCGM's blank is not counted, but it is a GPU of the node: the node and GPU
    variables list it, so that it can be picked and seen to report nothing (DCGM reading none of its fields is what
    one looks for on the health dashboard)."""
    from tests.support.grafana_variables import query_variables, range_options

    prometheus, start = backfilled
    listed = query_variables()
    assert range_options(prometheus, listed["node"], start + END) == set(NODES)
    assert range_options(prometheus, listed["gpu"], start + END, node=BLANK_ONLY[0]) == {str(g) for g in range(6)}

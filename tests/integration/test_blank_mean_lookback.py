"""An average, total or maximum over GPUs in Grafana reads each GPU with a reading within the panels' look-back at its
latest reading: it does not flap with a GPU whose field reads DCGM's blank at every other scrape.

Two nodes of 6 GPUs, half an hour of 30 s scrapes, backfilled into a real Prometheus (the layout of
test_blank_count_lookback, each reading rising by 0.1 per scrape so that the latest reading differs from the ones
before it): ip-10-0-1-1's GPU 3 reads its temperature at even scrapes and DCGM's blank ("not supported", about
9.2e18) at odd ones; ip-10-0-1-2's GPU 0 reads only the blank; ip-10-0-1-2's GPU 5 is gone from 20 minutes in (no
sample after, no staleness marker: as after a Prometheus restart).

The truth at an instant: each GPU with a reading within the look-back that counts a GPU as reporting
(promql.label_lookback: 4 scrape intervals, 120 s) contributes its latest reading; a GPU writing only the blank
contributes nothing, nor a GPU whose last reading is older than the look-back. Read at the instant only (each GPU's
latest sample, a blank no reading), "Average GPU temperature" read the flapping GPU at alternate scrapes only (62.727
then 62.7 with every GPU's reading steady), and the gone GPU for the 5 minutes an instant selector still reads its
last sample. Each panel (the overview's "Average GPU temperature" and "Hottest GPU", at the variables' All) and a mean,
total and maximum over the fleet, per node and per namespace, is read every 10 s, off the scrape grid.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from generator.model import Query
from generator.project import load_project
from tests.integration.test_mig_twins import built_with
from tests.support.blank_scene import (BLANK_ONLY, END, FLAPPING, GONE, GPUS, LEFT, LOOKBACK, NOT_SUPPORTED, STEP,
                                       STEPS, TEMP, dashboard_expr, openmetrics, pod, read_instants)
from tests.support.panel_expression import panel_expression
from tests.support.prometheus_server import backfilled_fixture
from tests.support.shown_truth import off_truth


def sample(node: str, gpu: int, k: int) -> float | None:
    """The temperature GPU (node, gpu) wrote at scrape k (None: no sample)."""
    if (node, gpu) == GONE and k >= LEFT:
        return None
    if (node, gpu) == BLANK_ONLY or (node, gpu) == FLAPPING and k % 2:
        return NOT_SUPPORTED
    return 60 + gpu + k / 10


def latest(t: float) -> dict[tuple[str, int], float]:
    """Each GPU with a reading within the look-back before `t` (seconds from the first scrape): its latest one."""
    found = {}
    for node, gpu in GPUS:
        read = [value for k in range(STEPS) if t - LOOKBACK < k * STEP <= t
                and (value := sample(node, gpu, k)) is not None and value < 1e14]
        if read:
            found[node, gpu] = read[-1]
    return found


backfilled = backfilled_fixture("blank-mean-lookback", openmetrics(sample), END, STEP)
HOW = {"avg": lambda values: sum(values) / len(values), "sum": sum, "max": max}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("blank-mean-lookback"), {}, fields=(TEMP,))


def _truth(how: str, key: str | None):
    def truth(t: float) -> dict[str, float]:
        groups = defaultdict(list)
        for (node, gpu), value in latest(t).items():
            groups["all" if key is None else node if key == "node" else pod(node, gpu)[0]].append(value)
        return {name: HOW[how](values) for name, values in groups.items()}
    return truth


def test_the_premise():
    assert round(_truth("avg", None)(10 * STEP + 5)["all"] - 1, 3) == 62.727  # 11 GPUs, each at 60 + index + 1
    assert len(latest(11 * STEP + 5)) == 11  # the flapping GPU too, at its reading of the scrape before
    assert latest(11 * STEP + 5)[FLAPPING] == 60 + 3 + 1.0  # its reading at scrape 10
    assert GONE not in latest(LEFT * STEP + LOOKBACK + 5)
    assert latest(END + LOOKBACK) == {}


@pytest.mark.parametrize("title, how", [("Average GPU temperature", "avg"), ("Hottest GPU", "max")])
def test_overview_panels_read_each_gpus_latest_reading_within_the_lookback(built, backfilled, title, how):
    _, folder = built
    prometheus, start = backfilled
    expr, _ = dashboard_expr(folder, "gpudash-overview", title)
    shown = read_instants(prometheus, start, expr, lambda metric: "all")
    wrong = off_truth(shown, _truth(how, None))
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:6])} ({len(wrong)} of {len(shown)})"


@pytest.mark.parametrize("how", ["avg", "sum", "max"])
@pytest.mark.parametrize("key", [None, "node", "namespace"])
def test_a_mean_total_or_maximum_over_gpus_reads_each_gpus_latest_reading_within_the_lookback(built, backfilled,
                                                                                             how, key):
    _, folder = built
    prometheus, start = backfilled
    project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
    expr = panel_expression(project, Query(TEMP, how, (key,) if key else ()))
    shown = read_instants(prometheus, start, expr, lambda metric: "all" if key is None else metric[key])
    wrong = off_truth(shown, _truth(how, key))
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:6])} ({len(wrong)} of {len(shown)})"

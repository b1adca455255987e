"""A mean over a GPU's MIG instances (a profiling field such as graphics engine activity, and GPU utilization, which
MIG GPUs report by that stand-in) reads each instance with a reading within the panels' look-back at its latest
reading: an instance that stopped reporting, or reads DCGM's blank at alternate scrapes, is not left out of the
GPU's mean at the scrapes after.

One node, half an hour of 30 s scrapes, backfilled into a real Prometheus, each reading rising by 0.001 a scrape:
GPU 0 split into two MIG instances (0.5 and 0.1), the second writing nothing from 20 minutes in (no staleness
marker); GPU 1 into two (0.6 and 0.2), the second reading the blank at odd scrapes; GPU 2 into two (0.4, and one
reading only the blank); GPU 3 whole (0.3, and GPU utilization 30 % rising by 0.1 a scrape). The truth at an
instant, per GPU: the mean of its instances' latest readings within the look-back (promql.label_lookback: 4 scrape
intervals), an instance without one left out; GPU utilization 100 times that on a MIG GPU. Before, the fresh tier
averaged the instances with a fresh reading: GPU 0 read 0.540 for 0.3395 for the two minutes after its second
instance's last sample, GPU 1 its first instance alone at every odd scrape.
"""

from __future__ import annotations

import pytest

from generator.model import Query
from generator.project import load_project
from tests.integration.test_blank_mig_instance_lookback import openmetrics
from tests.integration.test_mig_twins import built_with
from tests.support.blank_scene import END, NOT_SUPPORTED, STEP, STEPS, read_instants
from tests.support.panel_expression import panel_expression
from tests.support.prometheus_server import backfilled_fixture

ACTIVE, UTIL = "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL"
LOOKBACK = 4 * STEP
STOPPED = 40
# (gpu, MIG instance or None, profile): its activity at scrape 0
BASE = {(0, "1", "3g.40gb"): 0.5, (0, "2", "3g.40gb"): 0.1, (1, "1", "3g.40gb"): 0.6, (1, "2", "3g.40gb"): 0.2,
        (2, "1", "4g.40gb"): 0.4, (2, "2", "3g.40gb"): None, (3, None, None): 0.3}
WHOLE = [(3, None, None)]


def activity(series, k: int) -> float | None:
    """What `series` wrote at scrape k (None: nothing)."""
    gpu, instance, _ = series
    if (gpu, instance) == (0, "2") and k >= STOPPED:
        return None
    if BASE[series] is None or (gpu, instance) == (1, "2") and k % 2:
        return NOT_SUPPORTED
    return BASE[series] + k / 1000


def utilization(series, k: int) -> float:
    return 30 + k / 10


def written(start: int) -> str:
    first = openmetrics(BASE, activity, ACTIVE)(start).removesuffix("# EOF\n")
    return first + openmetrics(WHOLE, utilization, UTIL)(start)


def per_gpu(field: str, t: float) -> dict[str, float]:
    """Each GPU's value of `field` at `t` (seconds from the first scrape)."""
    found: dict[int, list[float]] = {}
    for series in BASE:
        read = [value for k in range(STEPS) if t - LOOKBACK < k * STEP <= t
                and (value := activity(series, k)) is not None and value < 1e14]
        if read:
            found.setdefault(series[0], []).append(read[-1])
    means = {gpu: sum(values) / len(values) for gpu, values in found.items()}
    if field == ACTIVE:
        return {str(gpu): value for gpu, value in means.items()}
    whole = [utilization(WHOLE[0], k) for k in range(STEPS) if t - LOOKBACK < k * STEP <= t]
    shown = {str(gpu): 100 * value for gpu, value in means.items() if gpu != 3}
    return {**shown, "3": whole[-1]} if whole else shown


backfilled = backfilled_fixture("mig-instance-average-lookback", written, END, STEP)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("mig-instance-average-lookback"), {}, fields=(ACTIVE, UTIL))


def test_the_premise():
    assert per_gpu(ACTIVE, STOPPED * STEP + 5)["0"] == pytest.approx((0.540 + 0.139) / 2)
    assert per_gpu(ACTIVE, 11 * STEP + 5)["1"] == pytest.approx((0.611 + 0.210) / 2)  # the blank at 11: 10's reading
    assert per_gpu(UTIL, STOPPED * STEP + LOOKBACK + 5)["0"] == pytest.approx(54.4)


@pytest.mark.parametrize("field", [ACTIVE, UTIL])
@pytest.mark.parametrize("by", [(), ("gpu",)])
def test_a_mean_of_mig_instances_reads_each_instance_the_lookback_holds(built, backfilled, field, by):
    _, folder = built
    prometheus, start = backfilled
    project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
    expr = panel_expression(project, Query(field, "avg", by))
    shown = read_instants(prometheus, start, expr, lambda metric: metric["gpu"] if by else "all")

    def truth(t: float) -> dict[str, float]:
        values = per_gpu(field, t)
        return values if by else {"all": sum(values.values()) / len(values)} if values else {}
    wrong = {t: (value, truth(t)) for t, value in shown.items()
             if value.keys() != truth(t).keys() or any(abs(value[k] - truth(t)[k]) > 1e-9 for k in value)}
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:4])} ({len(wrong)} of {len(shown)})"

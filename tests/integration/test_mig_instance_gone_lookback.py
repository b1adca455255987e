"""A total over GPUs of a field a GPU's MIG instances add up (framebuffer used) reads each instance the look-back
holds: an instance that stopped reporting (no staleness marker: as after a Prometheus restart) counts at its latest
reading while that is within the look-back, and not at all once it is older.

One node, half an hour of 30 s scrapes, backfilled into a real Prometheus: GPU 0 split into two MIG instances (20,000
and 12,000 MiB, each rising by 1 MiB a scrape), the second of which writes nothing from 20 minutes in; GPU 1 into two
(5,000 and 7,000 MiB), the second reading DCGM's blank from scrape 36 and nothing from scrape 40; GPU 2 whole
(10,000 MiB). The truth at an instant, per GPU: the instances with a sample within the look-back
(promql.label_lookback: 4 scrape intervals, 120 s), each at its latest reading within it; a GPU one of whose
instances has no reading but the blank within it has no value (BLANK_INSTANCE_NOTE). Before, the fresh tier's
instance check read each instance's instant sample: GPU 0 read its first instance alone for the two minutes after the
second stopped (20,040 for 32,079 MiB at 9 of 210 instants, per GPU and in the fleet's total alike).
"""

from __future__ import annotations

import pytest

from tests.integration.test_blank_mig_instance_lookback import USED, openmetrics, shown_total
from tests.integration.test_mig_twins import built_with
from tests.support.blank_scene import END, NOT_SUPPORTED, STEP, STEPS
from tests.support.prometheus_server import backfilled_fixture

LOOKBACK = 4 * STEP
STOPPED, BLANK_FROM = 40, 36
# (gpu, MIG instance or None, profile): its reading at scrape 0
BASE = {(0, "1", "3g.40gb"): 20000, (0, "2", "3g.40gb"): 12000, (1, "1", "3g.40gb"): 5000, (1, "2", "3g.40gb"): 7000,
        (2, None, None): 10000}


def sample(series, k: int) -> int | None:
    """What `series` wrote at scrape k (None: nothing)."""
    gpu, instance, _ = series
    if instance == "2" and k >= STOPPED:
        return None
    if (gpu, instance) == (1, "2") and k >= BLANK_FROM:
        return NOT_SUPPORTED
    return BASE[series] + k


def per_gpu(t: float) -> dict[str, float]:
    """Each GPU's value at `t` (seconds from the first scrape)."""
    found: dict[int, list[float | None]] = {}
    for series in BASE:
        written = [value for k in range(STEPS) if t - LOOKBACK < k * STEP <= t
                   and (value := sample(series, k)) is not None]
        if written:
            read = [value for value in written if value < 1e14]
            found.setdefault(series[0], []).append(read[-1] if read else None)
    return {str(gpu): sum(values) for gpu, values in found.items() if None not in values}


backfilled = backfilled_fixture("mig-instance-gone-lookback", openmetrics(BASE, sample), END, STEP)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("mig-instance-gone-lookback"), {}, fields=(USED,))


def test_the_premise():
    assert per_gpu(STOPPED * STEP + 5) == {"0": 20000 + 40 + 12000 + 39, "2": 10000 + 40}  # GPU 1: a blank instance
    assert per_gpu(STOPPED * STEP + LOOKBACK + 5) == {"0": 20000 + 44, "1": 5000 + 44, "2": 10000 + 44}


@pytest.mark.parametrize("by", [(), ("gpu",)])
def test_a_total_of_mig_instances_reads_each_instance_the_lookback_holds(built, backfilled, by):
    shown = shown_total(built, backfilled, by)

    def truth(t: float) -> dict[str, float]:
        values = per_gpu(t)
        return values if by else {"all": sum(values.values())} if values else {}
    wrong = {t: (value, truth(t)) for t, value in shown.items() if value != truth(t)}
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:6])} ({len(wrong)} of {len(shown)})"

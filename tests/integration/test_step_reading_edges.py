"""A series' reading at each subquery step (promql.step_reading: its latest sample taken within the step before,
(t - step, t]) counts every sample at exactly one step, whatever millisecond the sample was taken at, on a real
Prometheus 2 (Debian's 2.42): samples exactly on a step (the boundary t of its step and t - step of the next),
1 ms after a step (t - step + 1 ms), 1 ms before one (t - 1 ms), and several samples within one step (scrapes
more often than the step: the latest counts). The form tests whether a sample was taken within the step with
three ranges (promql.taken_within) that give (t - step, t] whether ranges are closed (Prometheus 2) or left-open
(Prometheus 3), and reads the instant selector's sample, whose lookback (5 minutes, left-open on 3) reaches far
past a step. Two forms of one range each do depend on it, are judged by the same truth and fail: a range of the whole step
reads a sample taken on a step twice on Prometheus 2; a range of the step less 1 ms, as Prometheus 3 reads it
(left-open: on 2's closed ranges, the step less 2 ms), reads a sample 1 ms after a step at no step.

The generated rule's value (the mean of a pod's readings over a period, read at the rules' 5 s step) is judged
on the same samples: each counts once in the mean.
"""

from __future__ import annotations

import math
from functools import cache

import pytest

from generator.model import Query
from generator.project import load_project
from generator.promql import expression, step_reading
from tests.support.prometheus_server import backfilled as backfilled_prometheus

METRIC = "DCGM_FI_DEV_GPU_UTIL"
STEP = 5  # the rules' step (alarms.RULE_STEP_SECONDS)
SPAN = 20 * 60
# pod: (scrape interval in ms, ms after the 5 s grid the scrapes start at)
SCRAPES = {
    "on-step": (30_000, 0),  # at t: counts at step t, and is t - step of the next step
    "after-step": (30_000, 1),  # t - step + 1 ms of the step after it
    "before-step": (30_000, 4_999),  # t - 1 ms
    "every-2s": (2_000, 0),  # several samples a step, some on a step, some 1 s after one
    "every-1001ms": (1_001, 1),  # a millisecond further from the grid at each scrape
}


@cache
def _samples(pod: str, start_ms: int) -> tuple[tuple[int, float], ...]:
    interval, phase = SCRAPES[pod]
    return tuple((start_ms + phase + k * interval, float((k * 37) % 101))
                 for k in range((SPAN * 1000 - phase) // interval))


def _openmetrics(start: int) -> str:
    lines = [f"# TYPE {METRIC} gauge"]
    for pod in SCRAPES:
        labels = f'gpu="0",UUID="GPU-{pod}",Hostname="node-{pod}",node="node-{pod}",namespace="ml",pod="{pod}"'
        lines += [f"{METRIC}{{{labels}}} {value:g} {t // 1000}.{t % 1000:03d}"
                  for t, value in _samples(pod, start * 1000)]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    with backfilled_prometheus(tmp_path_factory.mktemp("step-reading-edges"), _openmetrics, SPAN, 30) as started:
        yield started


def _truth(pod: str, start: int, step_at_ms: int) -> float | None:
    """The reading at the step at `step_at_ms`: the latest sample taken in (step - 5 s, step]."""
    taken = [(t, v) for t, v in _samples(pod, start * 1000) if step_at_ms - STEP * 1000 < t <= step_at_ms]
    return max(taken)[1] if taken else None


def _readings(prometheus, form: str, start: int) -> dict[str, dict[int, float]]:
    """{pod: {step (ms): reading}} of `form` (a series' reading, `{0}` its selector) at every 5 s step from the
    second minute to the last (one range query: Prometheus evaluates the form at each step, as in a subquery)."""
    first, count = start + 60, (SPAN - 120) // STEP
    shown: dict[str, dict[int, float]] = {pod: {} for pod in SCRAPES}
    for at, result in prometheus.query_at(form.format(METRIC), first, count, STEP).items():
        for series in result:
            shown[series["metric"]["pod"]][round(at * 1000)] = float(series["value"][1])
    return shown


def _wrong(prometheus, form: str, start: int) -> dict[str, list]:
    """Per pod, the steps whose reading is not the truth's (reading, truth)."""
    shown = _readings(prometheus, form, start)
    steps = [(start + 60 + i * STEP) * 1000 for i in range((SPAN - 120) // STEP)]
    wrong = {}
    for pod in SCRAPES:
        bad = [(at, shown[pod].get(at), _truth(pod, start, at)) for at in steps
               if shown[pod].get(at) != _truth(pod, start, at)]
        if bad:
            wrong[pod] = bad
    return wrong


def test_each_sample_counts_at_exactly_one_step(backfilled):
    prometheus, start = backfilled
    assert _wrong(prometheus, step_reading("{0}", f"{STEP}s"), start) == {}
    # each sample of the 30 s scrapes is the reading of exactly one step, the first at or after it: none lost, none
    # read twice
    shown = _readings(prometheus, step_reading("{0}", f"{STEP}s"), start)
    first, last = (start + 60) * 1000, (start + SPAN - 65) * 1000  # the steps read
    for pod in ("on-step", "after-step", "before-step"):
        taken = [t for t, _ in _samples(pod, start * 1000) if first - STEP * 1000 < t <= last]
        assert sorted(shown[pod]) == [-(-t // (STEP * 1000)) * STEP * 1000 for t in taken], pod


def test_forms_that_depend_on_the_range_boundary_fail_the_same_truth(backfilled):
    prometheus, start = backfilled
    whole_step = _wrong(prometheus, f"last_over_time({{0}}[{STEP}s])", start)
    # Prometheus 2's closed range [t - 5 s, t] reads a sample taken on a step again at the next step
    assert set(whole_step) == {"on-step"}
    assert all(shown == truth_before for _, shown, truth_before in
               [(at, shown, _truth("on-step", start, at - STEP * 1000)) for at, shown, truth in whole_step["on-step"]])
    # Prometheus 3 reads [4999ms] over (t - 4999 ms, t]: on Prometheus 2 that is [4998ms]. A sample 1 ms after a step
    # is then read at no step.
    left_open = _wrong(prometheus, f"last_over_time({{0}}[{STEP * 1000 - 2}ms])", start)
    assert set(left_open) == {"after-step"}
    assert all(shown is None and truth is not None for bad in left_open.values() for _, shown, truth in bad)


def test_the_rule_mean_counts_each_sample_once(backfilled):
    """The idle rule's value for one period (a pod's mean utilization over 1 minute, from its readings at the 5 s
    step) equals the mean of the pod's samples in the steps of the period, at instants on and off the 5 s grid."""
    prometheus, start = backfilled
    project = load_project()  # the bundled settings and counters
    expr = expression(Query(METRIC, "avg", ("pod",)), project.settings.labels, project.catalog, gauge_window="1m",
                      per_instance=True, resolution=f"{STEP}s")
    assert "present_over_time(" in expr and "last_over_time" not in expr
    checked = 0
    for offset in (0, 1.0, 2.5, 4.999):  # the instant, seconds after the 5 s grid
        instants = [start + 120 + 17 * STEP * i + offset for i in range(10)]
        for at in instants:
            shown = {s["metric"]["pod"]: float(s["value"][1]) for s in prometheus.query(expr, at)}
            assert set(shown) == set(SCRAPES), at
            at_ms = round(at * 1000)
            # Prometheus 2's subquery steps: multiples of 5 s in [t - 1m, t] (each reads the step before it)
            steps = [s for s in range(at_ms - 60_000, at_ms + 1) if s % (STEP * 1000) == 0]
            for pod in SCRAPES:
                readings = [r for r in (_truth(pod, start, s) for s in steps) if r is not None]
                assert math.isclose(shown[pod], sum(readings) / len(readings), rel_tol=1e-12), (pod, at)
                checked += 1
    assert checked == 4 * 10 * len(SCRAPES)

"""A counter's increase over the dashboard's range, on a messy fleet, equals what the counter grew by in the range as
its readings show it, on a real Prometheus (Debian's 2.42), value and legend of every bar.

The truth (`truth`): the GPU's readings, every copy's merged in time order, summed as the CloudWatch agent's deltas
add up over the scrapes taken in [from, to]: each reading less the one before it (the latest clean one within
promql.PREVIOUS_WITHIN, the bars' horizon across a gap), or the reading itself where it is lower (a reset: the
counter starts over from 0 or a small value); a first reading (none before it within the horizon) adds nothing; a
blank is no reading. A GPU without a clean reading in the range has no bar (CloudWatch has no datapoint).

The range is [start + 3610.5 s, start + 3610.5 s + 30 min]; the panel's steps are 30 s, so its first step (start +
3630 s) reads the scrapes of (3600, 3630]: with 15 s scrapes at offsets 2 + 15k, the scrape at 3602 before `from`
and the one at 3617 in the range; the step before reads 3587 (r0 below).
"""

from __future__ import annotations

import pytest

from generator.promql import PREVIOUS_WITHIN
from tests.support.counter_truth import BLANK_FLOOR, summed_deltas
from tests.support.prometheus_server import backfilled as backfilled_prometheus
from tests.support.range_panels import health_panel, shown_over

SPAN, FROM, LENGTH = 3 * 3600, 3610.5, 1800  # the range: [start + FROM, start + FROM + LENGTH] seconds
ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
TITLE = "Rows remapped (uncorrectable)"
BLANK = 9223372036854775794  # DCGM's "not supported" sentinel

# Copies of one GPU: (node label spelling, first scrape's offset in seconds, seconds between scrapes, the offsets it
# answers within). "15" is the single copy most cases use; "Hh" two exporters' copies (an upgrade renamed Hostname
# to hostname), 7 s apart; "replaced" the old exporter's copy gone at 3550, the new one's from 3595; "10" scraped
# every 10 s (SHORT).
COPIES = {"15": (("node", 2, 15, 0, SPAN),), "30": (("node", 20, 30, 0, SPAN),),
          "Hh": (("Hostname", 2, 15, 0, SPAN), ("hostname", 9, 15, 0, SPAN)),
          "replaced": (("Hostname", 2, 15, 0, 3550), ("hostname", 9, 15, 3595, SPAN)),
          "10": (("node", 3, 10, 0, SPAN),)}


def steps(*changes):
    """The counter's reading from each offset on: steps((0, 7), (3602, 8)) reads 7 until 3602, then 8; None: no
    scrape answers (the GPU's data stopped, or not begun)."""
    def value(rel: int):
        current = None
        for at, reading in changes:
            if rel >= at:
                current = reading
        return current
    return value


# name: (copies, reading at each offset, the truth as the test states it; None: no bar), what it shows
CASES = {
    # the first step counts from a reset (the reading before `from`, 8, is above the first in the range)
    "reset-then-9": ("15", steps((0, 7), (3602, 8), (3617, 0), (4000, 9)), 9),  # read 8 before
    "reset-then-2-9": ("15", steps((0, 7), (3602, 8), (3617, 2), (4000, 9)), 9),  # read 8 before
    "reset-then-one": ("15", steps((0, 7), (3602, 8), (3617, 1)), 1),  # read 0 before
    "reset-to-0": ("15", steps((0, 7), (3602, 8), (3617, 0)), 0),  # read -1 before ed278cb, then clamped
    "grew-at-first-scrape": ("15", steps((0, 7), (3617, 8)), 1),
    # a GPU's first reading ever is the scrape before `from`: its first delta in the range counts from it
    "new-gpu-before-from": ("15", steps((0, None), (3602, 8), (3617, 9)), 1),  # read 0 before
    "new-gpu-in-range": ("15", steps((0, None), (3617, 9), (4000, 10)), 1),  # the first reading adds nothing
    # a reset between r0 (3587) and the scrape before `from`, then growth past r0: 1 -> 9 is 8
    "reset-before-from-then-past": ("15", steps((0, 7), (3602, 1), (3617, 9)), 8),  # read 1 before
    # back from a 20-minute gap just before `from`, then a reset at the range's first scrape: 2, then 7 more
    "gap-then-reset": ("15", steps((0, 5), (2400, None), (3602, 8), (3617, 2), (4000, 9)), 9),  # read 6 before
    # back from a 10-minute gap inside the range after a reset meanwhile: 5 -> 2 reads 2 (a reset), then 1 more
    "reset-across-gap": ("15", steps((0, 5), (3500, None), (4300, 2), (4600, 3)), 3),
    # a GPU whose data stopped before `from` has no reading in the range: no bar (it read 0)
    "gone-just-before": ("15", steps((0, 5), (3500, 6), (3590, None)), None),
    "gone-40-minutes-before": ("15", steps((0, 5), (1200, None)), None),
    "blanks-in-range": ("15", steps((0, 5), (3590, BLANK)), None),  # blanks only are no reading
    # scraped every 30 s (one scrape per step): a reset at the range's first scrape
    "every-30s-reset": ("30", steps((0, 7), (3620, 0), (4000, 4)), 4),
    # two copies of one GPU scraped 7 s apart
    "copies-change-before": ("Hh", steps((0, 7), (3606, 8)), 0),
    "copies-change-after": ("Hh", steps((0, 7), (3612, 8)), 1),
    "copies-reset-mid": ("Hh", steps((0, 7), (4000, 0), (4500, 1)), 1),
    "copies-reset-at-from": ("Hh", steps((0, 7), (3605, 8), (3611, 0), (4000, 9)), 9),
    # the exporter replaced just before `from`, the counter reset meanwhile: the old copy's 7 (3542) is no reading
    # of the first step's, the new copy's 1 (3609) is the one before `from`
    "replaced-reset-before-from": ("replaced", steps((0, 7), (3560, 1), (4000, 2)), 1),
    # the scrape after the last step (5400) and before `to` (5410.5): 5402 is counted from 5387's reading
    "grew-in-tail": ("15", steps((0, 7), (4000, 8), (5402, 9)), 2),
    "reset-in-tail": ("15", steps((0, 7), (4000, 8), (5402, 2)), 3),  # 7 -> 8, then a reset to 2
}
# The limit the README states: a step (here (3630, 3660]) reads the latest of the scrapes it holds, so a reset inside
# it is seen only as that reading against the step before's. name: (copies, readings, truth, what the bar reads)
LIMITS = {
    "grow-then-reset-in-a-step": ("15", steps((0, 3), (3632, 4), (3647, 2)), 3, 2),  # 3 -> 2 reads as a reset to 2
    "reset-and-back-in-a-step": ("15", steps((0, 5), (3632, 0), (3647, 5)), 5, 0),  # 5 -> 5 reads as no change
}
# A range shorter than a step holds no step of its own: [start + 3605.2, start + 3615.2], 10 s scrapes at offsets
# 3 + 10k (3593 and 3603 before `from`, 3613 in the range, 3623 after `to`). The step after `to` (3630) read a reset
# at 3623 as the range's: 8 for 0 where 8 turns to 7 there. name: (copies, readings, truth over this range)
SHORT_FROM, SHORT_LENGTH = 3605.2, 10
SHORT = {
    "short-plain": ("10", steps((0, 7), (3613, 8)), 1),
    "short-reset-in-range": ("10", steps((0, 7), (3603, 8), (3613, 1)), 1),
    "short-reset-after-to": ("10", steps((0, 7), (3603, 8), (3623, 0)), 0),  # read 1
    "short-reset-to-7-after-to": ("10", steps((0, 7), (3603, 8), (3623, 7)), 0),  # read 8
}
EVERY = {**CASES, **LIMITS, **SHORT}


def _readings(start: int, name: str) -> dict[tuple[str, int], list[tuple[int, float]]]:
    """{(spelling, offset): [(time, reading)]} of a case's copies: a scrape at each of its offsets while it answers."""
    copies, value, _ = EVERY[name][:3]
    readings = {}
    for spelling, offset, every, answers_from, answers_until in COPIES[copies]:
        scrapes = ((start + rel, value(rel)) for rel in range(offset, SPAN, every)
                   if answers_from <= rel <= answers_until)
        readings[(spelling, offset)] = [(t, v) for t, v in scrapes if v is not None]
    return readings


def _range(start: int, at: float = FROM, length: float = LENGTH) -> tuple[int, int]:
    """[from, to] in ms of a range starting `at` seconds after the start."""
    return round((start + at) * 1000), round((start + at + length) * 1000)


def truth(start: int, name: str, at: float = FROM, length: float = LENGTH) -> float | None:
    """What the counter grew by in [from, to] as its readings show it (module docstring)."""
    merged = sorted(r for copy in _readings(start, name).values() for r in copy)
    first, last = (edge / 1000 for edge in _range(start, at, length))
    return summed_deltas(merged, first - 0.0005, last, PREVIOUS_WITHIN)  # (first - 0.5 ms, last]: [from, to]


def _openmetrics(start: int) -> str:
    lines = [f"# TYPE {ROWS} gauge"]
    for gpu, name in enumerate(EVERY):
        for (spelling, offset), readings in _readings(start, name).items():
            labels = (f'gpu="0",UUID="GPU-{gpu}",modelName="NVIDIA H100",{spelling}="{name}",job="dcgm-exporter",'
                      f'instance="10.0.{gpu}.{offset}:9400"')
            lines += [f"{ROWS}{{{labels}}} {v} {t}" for t, v in readings]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    with backfilled_prometheus(tmp_path_factory.mktemp("range-truth"), _openmetrics, SPAN, 30) as started:
        yield started


def test_the_truth_model_reads_each_case_as_stated(backfilled):
    _, start = backfilled
    assert BLANK >= BLANK_FLOOR
    assert {name: truth(start, name) for name in CASES} == {name: case[2] for name, case in CASES.items()}


def test_each_bar_is_the_counters_growth_in_the_range(backfilled):
    """Before: the growth before `from` (the scrape before it less r0) was taken off the first step even where that
    step counted from a reset or had nothing before it (reset-then-9 read 8, reset-then-one 0, new-gpu-before-from
    0, reset-before-from-then-past 1, gap-then-reset 6, copies-reset-at-from 8), and a GPU without a reading in the
    range read 0 where it has no bar."""
    prometheus, start = backfilled
    want = {f"{name} GPU 0": truth(start, name) for name in CASES}
    bars = shown_over(prometheus, health_panel(TITLE), *_range(start))
    assert {line: value for line, value in bars.items() if line.split()[0] not in {**LIMITS, **SHORT}} == \
        {line: value for line, value in want.items() if value is not None}


def test_a_reset_inside_a_step_of_several_scrapes_is_seen_only_against_the_step_before(backfilled):
    """Pinned, not the truth (README: the limit of scrapes more often than the step)."""
    prometheus, start = backfilled
    assert {name: truth(start, name) for name in LIMITS} == {name: case[2] for name, case in LIMITS.items()}
    bars = shown_over(prometheus, health_panel(TITLE), *_range(start))
    assert {line: value for line, value in bars.items() if line.split()[0] in LIMITS} == \
        {f"{name} GPU 0": float(case[3]) for name, case in LIMITS.items()}



def test_a_range_shorter_than_a_step_reads_nothing_after_its_end(backfilled):
    prometheus, start = backfilled
    truths = {name: truth(start, name, SHORT_FROM, SHORT_LENGTH) for name in SHORT}
    assert truths == {name: case[2] for name, case in SHORT.items()}
    bars = shown_over(prometheus, health_panel(TITLE), *_range(start, SHORT_FROM, SHORT_LENGTH))
    assert {line: value for line, value in bars.items() if line.split()[0] in SHORT} == \
        {f"{name} GPU 0": value for name, value in truths.items()}

"""Stories judged together in one `promtool test rules` run, each under its own marks: halved only where promtool's
limit of samples a query stops a run, never judged one by one because a run failed.

promtool's cost is evaluating the rules at each step, whatever the series, so several stories in one run cost about
what one does. A run can fail for two reasons: a story is judged wrong (its bug is back), or the stories' series
together exceed the 10,000 samples promtool lets one query load ("query processing would load too many samples into
memory"). The first must fail the stories' tests with promtool's own message; judging each story alone instead
passed them or failed them slowly and silently (one run per story, a story's run as costly as the batch's). Only the
second is a reason to split the batch: in halves, down to a story alone, each part judged the same way."""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

Story = TypeVar("Story")

TOO_MANY_SAMPLES = "would load too many samples"  # promtool's message for a query over its sample limit


def over_sample_limit(failure: BaseException) -> bool:
    """Whether a failed promtool run (its AssertionError carries promtool's output) failed on the sample limit."""
    return TOO_MANY_SAMPLES in str(failure)


def judged_in_halves(batch: Sequence[Story], judge: Callable[[Sequence[Story]], None]) -> int:
    """Run `judge(part)` (one promtool run, raising AssertionError on failure) on the whole batch, halving a part
    whose run failed on promtool's sample limit alone; any other failure, or the limit on one story alone, is raised
    as promtool gave it. Returns the number of runs."""
    try:
        judge(batch)
    except AssertionError as failure:
        if len(batch) < 2 or not over_sample_limit(failure):
            raise
        half = len(batch) // 2
        return 1 + judged_in_halves(batch[:half], judge) + judged_in_halves(batch[half:], judge)
    return 1


def batch_failure(batch: Sequence[Story], judge: Callable[[Sequence[Story]], None]) -> str | None:
    """promtool's message where judged_in_halves fails the batch (every test of its stories fails with it), else
    None."""
    try:
        judged_in_halves(batch, judge)
    except AssertionError as failure:
        return str(failure)
    return None

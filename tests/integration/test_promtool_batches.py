"""tests/support/promtool_batches: a batch of stories is split only where promtool's sample limit stopped its run."""

from __future__ import annotations

import pytest

from tests.support.promtool_batches import judged_in_halves

LIMIT = ("  expr: \"...\", time: 10m,\n    err: query processing would load too many samples into memory in query "
         "execution")


def test_a_batch_over_the_sample_limit_is_halved_until_each_part_fits():
    runs = []

    def judge(part):
        runs.append(list(part))
        assert len(part) <= 2, LIMIT

    assert judged_in_halves(list(range(5)), judge) == 5
    assert runs == [[0, 1, 2, 3, 4], [0, 1], [2, 3, 4], [2], [3, 4]]


def test_a_batch_judged_wrong_fails_with_promtool_s_message_and_is_not_judged_again_in_parts():
    runs = []

    def judge(part):
        runs.append(list(part))
        assert 3 not in part, "FAILED:\n    alertname: GpudashPcieReplays, time: 15m, node=\"n-s3\""

    with pytest.raises(AssertionError, match="n-s3"):
        judged_in_halves(list(range(5)), judge)
    assert runs == [[0, 1, 2, 3, 4]]


def test_one_story_over_the_sample_limit_fails_on_the_limit():
    def judge(part):
        raise AssertionError(LIMIT)

    with pytest.raises(AssertionError, match="too many samples"):
        judged_in_halves([0, 1], judge)

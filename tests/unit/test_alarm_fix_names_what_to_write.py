"""A refusal of a user's alarm for its periods names what to write, and each thing it names, written, is accepted.

Found so: a period too short for the scrape interval was told 'or scrape more often', which named no interval and
often led into another refusal: a stopped rule of 10 s at 10 s scrapes (agent.pipeline: otel) to 5 s, where CloudWatch
refuses its period under 60 s; a data-missing rule of 60 s x 2 at 60 s scrapes (classic) to 30 s, still under three
scrapes a period; a data-missing rule of 60 s x 1 on classic to any interval, none mending its one period. And a
data-missing rule of 60 s x 2 at 150 s scrapes (classic), its period not a whole number of them, was told 'give the
alarm a period_seconds and evaluation_periods spanning which keep its window of 120 s': no numbers, the periods tried
(300 s and longer) each tried in one period only, which the rule's two periods on classic refuse."""

from __future__ import annotations

import re

import pytest

from tests.support.alarm_fixes import Case, followed, judged_case, project


@pytest.mark.parametrize("case, intervals", [
    (Case("stopped", 10, 1, None, "10s", "otel"), None),  # no interval: CloudWatch refuses 10 s at any
    (Case("stopped", 10, 1, None, "15s", "classic"), "1s, 2s, 5s"),  # a Prometheus rule alone: 2 scrapes a period
    (Case("stopped", 30, 4, None, "30s", "otel"), None),
    (Case("missing", 60, 2, None, "60s", "classic"), "10s, 12s, 15s, 20s"),  # 3 scrapes a period (not 30s)
    (Case("missing", 60, 1, None, "30s", "classic"), None),  # one period on classic: no interval mends it
    (Case("missing", 10, 1, None, "5s", "classic"), None),
    (Case("filled", 60, 2, None, "60s", "classic"), "10s, 12s, 15s, 20s, 30s")])
def test_a_short_periods_fix_names_the_scrape_intervals_that_take_it_each_taken(case, intervals):
    ((what, fix),) = judged_case(case)
    assert "scrape more often" not in fix
    named = re.search(r"give scrape\.interval one of ([0-9s, ]+) \(", fix)
    assert (named.group(1) if named else None) == intervals, fix
    for option in followed(fix, case):
        assert project(option.interval, option.pipeline) is not None, option
        assert judged_case(option) == [], (str(option), fix)


@pytest.mark.parametrize("periods", [1, 2, 3, 6])
@pytest.mark.parametrize("interval", ["150s", "5m"])
def test_a_data_missing_period_not_a_whole_number_of_scrapes_is_told_numbers_that_are_taken(periods, interval):
    """60 s x 2 at 150 s scrapes on classic: the periods of whole scrapes and minutes (300 s, 600 s...) hold the
    window in one, which the rule's per-GPU alarm refuses there (a node added or removed): the fix names two of 600 s,
    each a whole number of scrapes and holding three, with the span they make."""
    pipeline = "classic" if interval == "150s" else "otel"
    case = Case("missing", 60, periods, None, interval, pipeline)
    ((what, fix),) = judged_case(case)
    assert "spanning which" not in fix and re.search(r"give the alarm period_seconds=\d+.*evaluation_periods=\d+",
                                                      fix), fix
    assert all(judged_case(option) == [] for option in followed(fix, case)), fix
    if (periods, interval) == (2, "150s"):
        assert "give the alarm period_seconds=600 and evaluation_periods=2 (1200 s" in fix

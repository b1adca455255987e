"""A refusal of a user's alarm for its periods names what to write, and each thing it names, written, is accepted.

Found so: a period too short for the scrape interval was told 'or scrape more often', which named no interval and
often led into another refusal: a stopped rule of 10 s at 10 s scrapes (agent.pipeline: otel) to 5 s, where CloudWatch
refuses its period under 60 s; a data-missing rule of 60 s x 2 at 60 s scrapes (classic) to 30 s, still under three
scrapes a period; a data-missing rule of 60 s x 1 on classic to any interval, none mending its one period. And a
data-missing rule of 60 s x 2 at 150 s scrapes (classic), its period not a whole number of them, was told 'give the
alarm a period_seconds and evaluation_periods spanning which keep its window of 120 s': no numbers, the periods tried
(300 s and longer) each tried in one period only, which the rule's two periods on classic refuse. A window past the 3
hours is told its span in hours and minutes ('3.33333 hours' was said), and the intervals a refusal of the bundled alarms
names build them with no warning (150s was named, where the data-missing alarm is warned of: AL029)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from generator.errors import GpudashError
from tests.support.alarm_fixes import Case, followed, judged, judged_case, own, project
from tests.support.projects import bundled_project


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


@pytest.mark.parametrize("period, periods, spanned", [
    (300, 40, "40 periods of 300 s span 3 hours 20 minutes"),  # was '3.33333 hours'
    (10, 1441, "1441 periods of 10 s span 4 hours 10 seconds"),  # was '4.00278 hours'
    (60, 240, "240 periods of 60 s span 4 hours")])
def test_a_window_past_three_hours_is_told_its_span_in_hours_and_minutes(period, periods, spanned):
    ((what, fix),) = judged_case(Case("plain", period, periods, None, "10s", "otel"))
    assert what.startswith(f"alarm 'hot': {spanned}; CloudWatch evaluates"), what


@pytest.mark.parametrize("written", ["scrape:\n  interval: 45s\n", "scrape:\n  interval: 90s\ncloudwatch:\n  period: 900\n"])
def test_the_bundled_alarms_scrape_intervals_named_are_each_taken_without_a_warning(written):
    """The bundled alarms at scrape.interval 45s (the settings refuse it for cloudwatch.period 300), or at 90s with
    cloudwatch.period 900 (the bundled 5-minute periods refused): each interval the refusal names builds the bundled
    alarms with no refusal and no warning of their periods. 150s was named in both, where the data-missing alarm's
    5-minute periods hold two scrapes, under the three its agent alarm counts (AL029)."""
    try:
        loaded = bundled_project(written)
        fix = judged(loaded.alarms, loaded.settings, loaded.catalog)[0][1]
    except GpudashError as exc:
        fix = exc.hint
    named = re.search(r"(?:cloudwatch\.period\)?:? \(?|leaves 3 scrapes in each: )((?:\d+s, )*\d+s)", fix)
    assert named and "150s" not in named.group(1), fix
    for interval in named.group(1).split(", "):
        other = bundled_project(written.replace(re.search(r"interval: \w+", written).group(0), f"interval: {interval}"))
        assert judged(other.alarms, other.settings, other.catalog) == [], interval


@pytest.mark.xfail(strict=True, reason="the settings refuse scrape.interval 45s (cloudwatch.period 300) before the "
                                       "user's alarms are read, and name 25s, 50s, 75s, 100s and 150s, at which a "
                                       "60 s alarm is refused (not a whole number of scrapes)")
def test_the_settings_intervals_named_take_the_users_alarms():
    from tests.support.alarm_fixes import alarm
    with pytest.raises(GpudashError) as refused:  # settings naming a folder of the user's own alarms
        bundled_project("scrape:\n  interval: 45s\ndefinitions:\n  alarms: [alarms]\n")
    named = re.search(r"cloudwatch\.period[^:]*: ((?:\d+s, )*\d+s)", refused.value.hint).group(1).split(", ")
    mine = alarm(Case("plain", 60, 1, None, "45s", "otel"))
    wrong = []
    for interval in named:
        other = bundled_project(f"scrape:\n  interval: {interval}\n")
        if judged((mine,), own(other.settings), other.catalog):
            wrong.append(interval)
    assert wrong == [], wrong  # ['25s', '50s', '75s', '100s', '150s']


@pytest.mark.xfail(strict=True, reason="a data-missing rule of 10 s x 1 at 15 s scrapes (classic) is told 'under "
                                       "0.333333 readings of its 0 scrapes': a 10 s period holds 0 or 1 of them")
def test_a_data_missing_period_under_one_scrape_is_told_its_scrapes_right():
    ((what, fix),) = judged_case(Case("missing", 10, 1, None, "15s", "classic"))
    assert "of its 0 scrapes" not in what and "0.333333" not in what, what


@pytest.mark.parametrize("kind", ["filled", "missing", "plain"])
def test_a_period_under_a_minute_on_the_add_on_is_told_its_period_first(kind):
    """cloudwatch.source: container-insights: 10 s x 1 was told 'pick a cloudwatch.addon_gpu_interval that divides
    10 s (e.g. 10, 30, 60)' (30 and 60 do not), and at 10 refused for its period under 60 s."""
    loaded = bundled_project("cloudwatch:\n  source: container-insights\n")
    from tests.support.alarm_fixes import alarm
    made = alarm(Case(kind, 10, 1, None, "10s", "otel"))
    ((what, fix),) = judged((made,), own(loaded.settings), loaded.catalog)
    assert "needs high-resolution metrics" in what and "addon" not in fix, (what, fix)
    assert judged((replace(made, period_seconds=60),), own(loaded.settings), loaded.catalog) == []

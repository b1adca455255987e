"""Every refusal of a user's alarm for its periods, and every warning of a bundled alarm's period, proposes a fix that,
followed, is accepted: the fix's every concrete alternative (the period and evaluation periods it names, each scrape
interval it lists, the missing_data it names, datapoints_to_alarm dropped) written back into the alarm or settings is
then neither refused nor warned of. Over a grid of five kinds of alarm (stopped, missing data filled not breaching and
breaching, data-missing, plain), periods of 10 s to 6 hours, 1 to 300 evaluation periods (3 and 7 of them also at 2 of
them), scrape intervals of 10 s to 5 minutes and both agent pipelines. Found so: a stopped rule's datapoints_to_alarm
refused before its period (its fix then refused for the period), a window over 3 hours told to keep within them with
no numbers (and followed, refused for its period), the bundled rules at scrape.interval 5m (otel) told 150s, where the
data-missing rule's agent alarm never fires."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from generator.model import Condition, Query
from generator.settings import intervals_dividing, scrape_intervals
from tests.support.alarm_fixes import (INTERVALS, PIPELINES, Case, alarm, alternatives, applied, cases, followed,
                                       judged, judged_case, own, project)
from tests.support.projects import bundled_project

GRID = [(pipeline, interval) for pipeline in PIPELINES for interval in INTERVALS]


@pytest.mark.parametrize("pipeline, interval", GRID)
def test_each_refusal_of_a_users_alarm_is_one_message_whose_fix_followed_is_accepted(pipeline, interval):
    if project(interval, pipeline) is None:
        pytest.skip("the settings refuse this scrape interval on this pipeline")
    wrong, refused = [], 0
    for case in cases(pipeline, interval):
        said = judged_case(case)
        if not said:
            continue
        refused += 1
        assert len(said) == 1, (str(case), said)
        what, fix = said[0]
        options = followed(fix, case)
        if not options or "give the alarm a period_seconds" in fix:  # each change it names has its numbers
            wrong.append(f"{case}: {what}\n  fix names nothing to write: {fix}")
        if "latest 3 hours of data only" in what:  # told the most of the 3 hours its period fits, not fewer
            wrong += [f"{case}: {what}\n  fix spans {option.period * option.periods} s: {fix}" for option in options
                      if not 10800 - option.period < option.period * option.periods <= 10800]
        for option in options:
            # an interval the settings refuse is no fix (judged_case judges no alarm there)
            then = judged_case(option) if project(option.interval, option.pipeline) else [
                (f"the settings refuse scrape.interval {option.interval} on agent.pipeline: {option.pipeline}", "")]
            if then:
                wrong.append(f"{case}: {what}\n  fix: {fix}\n  followed ({option}): {then[0][0]}\n  fix: {then[0][1]}")
    assert refused and not wrong, "\n".join(wrong[:5]) + f"\n({len(wrong)} in all)"


@pytest.mark.parametrize("pipeline, interval", GRID)
def test_each_warning_of_a_bundled_alarms_period_is_mended_by_its_fix(pipeline, interval):
    """Each scrape interval a bundled alarm's warning (AL029) lists builds the bundled alarms with no warning of their
    periods; its copy given the period and evaluation periods the warning names is not refused."""
    loaded = project(interval, pipeline)
    if loaded is None:
        pytest.skip("the settings refuse this scrape interval on this pipeline")
    wrong = []
    for what, fix in judged(loaded.alarms, loaded.settings, loaded.catalog):
        rule = re.search(r"alarm '([^']+)'", what)
        for change in alternatives(fix):
            if "interval" in change:
                other = project(change["interval"], pipeline)
                then = judged(other.alarms, other.settings, other.catalog) if other else [("settings refused", "")]
            else:
                copied = tuple(applied(change, alarm) if rule and alarm.id == rule.group(1) else alarm
                               for alarm in loaded.alarms)
                then = [said for said in judged(copied, own(loaded.settings), loaded.catalog)
                        if rule and rule.group(1) in said[0]]
            if then:
                wrong.append(f"{what}\n  fix: {fix}\n  followed ({change}): {then[0][0]}")
    assert not wrong, "\n".join(wrong[:5]) + f"\n({len(wrong)} in all)"


def test_a_window_of_one_period_past_three_hours_is_said_in_the_singular_and_told_three_hours():
    (said,) = judged_case(Case("plain", 21600, 1, None, "60s", "otel"))
    assert said == ("alarm 'hot': 1 period of 21600 s spans 6 hours; CloudWatch evaluates a Metrics Insights alarm over "
                    "the latest 3 hours of data only",
                    "give the alarm period_seconds=10800 and evaluation_periods=1 (10800 s), within the 3 hours")


def test_a_static_pods_alarm_is_told_the_longer_choice_past_three_hours():
    """A static pod's alarm (metric math) is not bound by the 3 hours a Metrics Insights alarm reads: its short
    period's fix names both spans nearest its window of 14,460 s (the longer was dropped, as for a GROUP BY alarm)."""
    loaded = bundled_project("scrape:\n  interval: 60s\nalarms:\n  per_pod: static\n  static_pods: [ml/a]\n")
    idle = replace(alarm(Case("filled", 60, 241, None, "60s", "otel")),
                   condition=Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("namespace", "pod")), "<", 5))
    ((_, fix),) = judged((idle,), own(loaded.settings), loaded.catalog)
    assert fix.startswith("give the alarm period_seconds=120 (no whole number of 120 s periods spans its window of "
                          "14460 s: give it evaluation_periods=120 (14400 s) or evaluation_periods=121 (14520 s)")


def test_the_scrape_intervals_named_keep_to_the_longest():
    assert scrape_intervals(300) == [10, 12, 15, 20, 25, 30, 50, 60, 75, 100, 150]
    assert intervals_dividing(60, 20) == "10s, 12s, 15s, 20s"
    assert intervals_dividing(60, 6) == "1s, 2s, 3s, 4s, 5s, 6s"  # none of 10 s or more: it said 60s


@pytest.mark.parametrize("case, named", [(Case("stopped", 10, 3, None, "10s", "classic"), ["1s", "2s", "5s"]),
                                         (Case("stopped", 20, 1, None, "30s", "classic"), ["10s"])])
def test_the_intervals_a_rule_prometheus_alone_judges_is_told_are_taken_under_10_s_too(case, named):
    """A stopped rule of 10 s or 20 s periods on agent.pipeline: classic (no CloudWatch alarm: Prometheus alone judges
    it) is told the intervals that leave two scrapes in its period, under 10 s where none of 10 s or more does; each,
    followed, the settings take and the rule is judged at with nothing said."""
    ((_, fix),) = judged_case(case)
    intervals = [option for option in followed(fix, case) if option.interval != case.interval]
    assert [option.interval for option in intervals] == named
    assert all(project(option.interval, option.pipeline) and not judged_case(option) for option in intervals)

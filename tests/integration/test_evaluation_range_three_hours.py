"""A rule whose Metrics Insights alarm spans nearly 3 hours judges no period older than its alarm can read.

CloudWatch evaluates an alarm on a Metrics Insights query over the latest 3 hours of data only ("Only the latest 3
hours of data can be used for evaluating the alarm's conditions", user guide, alarm-limits.html; generate refuses a
window longer than that: render.alarms, ALARM_WINDOW_SECONDS). Its evaluation range (the periods it retrieves beyond
EvaluationPeriods: tests/support/cloudwatch_eval.judge) is cut there, so an alarm of 36 periods of 5 minutes (the idle
alarm at `thresholds.idle_minutes: 180`, a user's "hot for 3 hours") judges its latest 36 periods alone, and one of 35
its latest 36: a period without a reading among them is filled as TreatMissingData says, never passed over for an
older one. The rule models the range of AWS's example (2 periods more) and must stop at the same 3 hours, or it fires
on a GPU whose alarm cannot (hot for 3 hours but one 5-minute period without a reading, hot before it).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from generator.project import load_project
from generator.render.alarms import cloudwatch_alarms, cloudwatch_condition
from tests.integration.test_evaluation_range_rules import (COLD, HOT, PERIOD, _as_generated, _cloudwatch, _judged,
                                                          _passes)
from tests.support import cloudwatch_eval


@pytest.fixture(scope="module")
def project():
    return load_project()


def _alarm(project, periods: int, needed: int, missing: str):
    critical = {a.id: a for a in project.alarms}["gpu-temp-critical"]
    return replace(critical, evaluation_periods=periods, datapoints_to_alarm=needed, missing_data=missing)


def _patterns(length: int) -> dict[str, tuple]:
    """Stories of `length` periods, latest first (None: no reading in the period)."""
    hot = (HOT,) * length
    return {
        "hot throughout": hot,
        "a period without a reading among the latest 35": hot[:5] + (None,) + hot[6:],
        "two periods without a reading": hot[:10] + (None,) + hot[11:20] + (None,) + hot[21:],
        "the latest cold": (COLD,) + hot[1:],
        "the oldest two without a reading": hot[:-2] + (None, None),
    }


# (N, M, TreatMissingData): the stories the 3 hours decide, and the alarm's state there (over a range of 2 periods more,
# each would be ALARM). 36 of 36: one period without a reading leaves 35 real ones, too few, the missing one not
# breaching; 35 of 35: two leave 34; 35 of 36: two leave 34 real, 34 breaching. With `missing` the alarm alarms early on
# them all the same (premature alarm state), and with `breaching` the missing ones breach: the cut changes nothing
# there, and the rule judges the cut range alike.
CUT = {(36, 36, "notBreaching"): {"a period without a reading among the latest 35": "OK",
                                  "two periods without a reading": "OK", "hot throughout": "ALARM",
                                  "the oldest two without a reading": "ALARM"},
       (35, 35, "notBreaching"): {"a period without a reading among the latest 35": "ALARM",
                                  "two periods without a reading": "OK"},
       (36, 35, "notBreaching"): {"two periods without a reading": "OK", "the latest cold": "ALARM"},
       (36, 36, "missing"): {"a period without a reading among the latest 35": "ALARM",
                             "two periods without a reading": "ALARM", "the latest cold": "OK"},
       (36, 36, "breaching"): {"two periods without a reading": "ALARM", "the latest cold": "OK"}}


@pytest.mark.parametrize("periods,needed,missing", list(CUT))
def test_the_rule_judges_no_period_older_than_its_alarms_three_hours(project, periods, needed, missing, tmp_path):
    alarm = _alarm(project, periods, needed, missing)
    (request,) = cloudwatch_alarms((alarm,), project.settings, project.catalog)
    readable = cloudwatch_eval.range_lengths(request["Request"])
    assert readable == [3 * 3600 // PERIOD]  # the range is cut at 3 hours: one length, whatever AWS's example says
    condition = cloudwatch_condition(alarm, project.settings)
    length = periods + cloudwatch_eval.EXAMPLE_EXTRA_PERIODS  # the rule's own range, were it not cut
    patterns = _patterns(length)
    at = PERIOD * (length + 1)
    series, firing, truth = [], [], {}
    for gpu, (story, pattern) in enumerate(patterns.items()):
        values = ["_"] * (at // 30 + 1)
        for k, reading in enumerate(pattern):  # one reading in the middle of its period
            if reading is not None:
                values[(at - k * PERIOD - PERIOD // 2) // 30] = f"{reading:g}"
        series.append((f'{condition.query.metric}{{gpu="{gpu}",UUID="GPU-{gpu}",node="n",Hostname="n"}}', values))
        truth[story] = _cloudwatch(alarm, condition, pattern, readable[0])
        if truth[story] == "ALARM":
            firing.append(str(gpu))
    assert {story: truth[story] for story in CUT[(periods, needed, missing)]} == CUT[(periods, needed, missing)]
    recorded, expr = _as_generated(alarm, project)
    group, span = _judged(series, set(firing), len(series), at)
    _passes(group, expr, tmp_path, recorded, span)


def test_the_idle_alarm_at_three_hours_says_when_its_rule_clears(project_dir):
    """`thresholds.idle_minutes: 180`: 36 periods, none more in the rule's range, so a pod whose data stops clears
    once its latest period holds no reading (5 minutes), not 15 as over AWS's example's range."""
    from generator.render.alarms import rule_clears

    project = load_project(project_dir("thresholds:\n  idle_minutes: 180\n"))
    idle = {a.id: a for a in project.alarms}["gpu-idle"]
    assert rule_clears(idle, project.settings) == PERIOD
    requests = cloudwatch_alarms(project.alarms, project.settings, project.catalog)
    (described,) = [r["Request"]["AlarmDescription"] for r in requests
                    if r["Request"]["AlarmName"].endswith("-gpu-idle-warning")]
    assert "the rule clears 5 minutes after the last reading" in described


# M of N near 3 hours, each TreatMissingData: the cut range is N + 0 or N + 1 periods, which the rule's weights and
# counts must judge as the evaluator does for any pattern, not only the stories above.
SAMPLED = [(36, 34, "notBreaching"), (35, 35, "missing"), (35, 33, "missing"), (35, 34, "breaching"),
           (36, 35, "missing"), (34, 34, "notBreaching")]


@pytest.mark.parametrize("periods,needed,missing", SAMPLED)
def test_the_rule_judges_sampled_patterns_of_the_cut_range_as_the_alarm(project, periods, needed, missing, tmp_path):
    import random

    alarm = _alarm(project, periods, needed, missing)
    condition = cloudwatch_condition(alarm, project.settings)
    readable = 3 * 3600 // PERIOD
    length = periods + cloudwatch_eval.EXAMPLE_EXTRA_PERIODS
    chance = random.Random(f"{periods}-{needed}-{missing}")
    # mostly hot, so that M of N can breach: a period without a reading 1 in 12, a cold one 1 in 25
    patterns = [tuple(chance.choices((HOT, None, COLD), weights=(88, 8, 4))[0] for _ in range(length))
                for _ in range(60)]
    at = PERIOD * (length + 1)
    series, firing = [], []
    for gpu, pattern in enumerate(patterns):
        values = ["_"] * (at // 30 + 1)
        for k, reading in enumerate(pattern):
            if reading is not None:
                values[(at - k * PERIOD - PERIOD // 2) // 30] = f"{reading:g}"
        series.append((f'{condition.query.metric}{{gpu="{gpu}",UUID="GPU-{gpu}",node="n",Hostname="n"}}', values))
        if _cloudwatch(alarm, condition, pattern, readable) == "ALARM":
            firing.append(str(gpu))
    assert 0 < len(firing) < len(patterns)  # both outcomes judged
    recorded, expr = _as_generated(alarm, project)
    group, span = _judged(series, set(firing), len(series), at)
    _passes(group, expr, tmp_path, recorded, span)

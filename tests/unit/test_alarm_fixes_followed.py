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

import pytest

from tests.support.alarm_fixes import (INTERVALS, PIPELINES, alternatives, applied, cases, followed, judged,
                                       judged_case, own, project)

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
        if not options:
            wrong.append(f"{case}: {what}\n  fix names nothing to write: {fix}")
        for option in options:
            then = judged_case(option)
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

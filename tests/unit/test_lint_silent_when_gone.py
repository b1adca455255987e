"""Lint AL023: an alarm on a count or total of readings under a level whose missing data does not breach fires on
neither backend when every GPU it reads stops reporting (its query returns no datapoint, which CloudWatch does not
read as 0; its rule reads no series): a note naming the alarm and the fix. With `breaching` both fire then
(tests/integration/test_evaluation_range_rules.py), and a level above, a mean or an extreme says nothing. And
`breaching` where CloudWatch splits the rule in two alarms (whole GPUs, MIG instances) is refused: one half would read
nothing for good."""

from __future__ import annotations

import pytest

from generator.lint import run
from generator.lint.cloudwatch_rules import RULES
from tests.support.lint_input import lint_input
from tests.support.projects import defined_project

ALARM = """\
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("a", "A", Condition(Query({field!r}, {aggregation!r}, {by!r}), {comparison!r}, 3){extra})
"""
CASES = {  # (field, aggregation, by, comparison, extra): noted
    "fewer GPUs than 3": ("DCGM_FI_DEV_GPU_TEMP", "count", (), "<", "", True),
    "fewer per node": ("DCGM_FI_DEV_GPU_TEMP", "count", ("node",), "<=", "", True),
    "power total under": ("DCGM_FI_DEV_POWER_USAGE", "sum", (), "<", ", missing_data='notBreaching'", True),
    "breaching": ("DCGM_FI_DEV_GPU_TEMP", "count", (), "<", ", missing_data='breaching'", False),
    "more GPUs than 3": ("DCGM_FI_DEV_GPU_TEMP", "count", (), ">", "", False),
    "a mean under": ("DCGM_FI_DEV_GPU_TEMP", "avg", (), "<", "", False),
    "a minimum under": ("DCGM_FI_DEV_GPU_TEMP", "min", ("node",), "<", "", False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_count_under_a_level_that_cannot_see_zero_is_noted(tmp_path, case):
    field, aggregation, by, comparison, extra, noted = CASES[case]
    text = ALARM.format(field=field, aggregation=aggregation, by=by, comparison=comparison, extra=extra)
    project = defined_project(tmp_path, "clusters:\n  - {name: c1, region: us-east-1}\n", alarms=text)
    findings = run([rule for rule in RULES if rule.id == "AL023"], lint_input(project))
    if not noted:
        assert not findings, [f.message for f in findings]
        return
    assert findings and all(f.severity == "note" and "gpudash-c1-a-warning" in f.where for f in findings)
    assert all(f"a {aggregation} of readings under a level" in f.message and "missing_data='breaching'" in f.message
               for f in findings)


def test_the_bundled_alarms_have_no_such_note(tmp_path):
    project = defined_project(tmp_path, "clusters:\n  - {name: c1, region: us-east-1}\n")
    assert not run([rule for rule in RULES if rule.id == "AL023"], lint_input(project))


BREACHING_IDLE = """\
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("idle", "Idle", Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("pod",)), "<", 10),
                missing_data="breaching")
"""


@pytest.mark.parametrize("mig", ["", "exporter:\n  mig: none\n"])
def test_breaching_on_a_rule_cloudwatch_splits_in_two_is_refused_unless_no_gpu_is_split(tmp_path, mig):
    """A per-pod utilization rule is two CloudWatch alarms, the whole GPUs' and the MIG instances' stand-in: with
    `breaching` the half with no GPU of its kind in a cluster reads no datapoint and stays in ALARM for good (a cluster
    without MIG: the MIG half), where the rule, judging both kinds together, never fires. Refused, with the fix;
    with exporter.mig: none there is one alarm and it builds."""
    from generator.artifacts import build
    from generator.cloudwatch_query import Unsupported
    from generator.errors import InputError

    project = defined_project(tmp_path, "clusters:\n  - {name: c1, region: us-east-1}\n" + mig,
                              alarms=BREACHING_IDLE)
    if mig:
        alarms = build(project).alarms
        assert [a.request["TreatMissingData"] for a in alarms if "-idle-" in a.request["AlarmName"]] == ["breaching"]
        return
    with pytest.raises((Unsupported, InputError)) as caught:
        build(project)
    assert "missing_data='breaching' on a rule CloudWatch judges in two alarms" in str(caught.value)
    assert "exporter.mig: none" in (getattr(caught.value, "fix", "") or getattr(caught.value, "hint", ""))


def test_breaching_on_a_split_rule_is_made_in_the_clusters_that_say_no_gpu_is_split(tmp_path):
    """With clusters that differ (clusters[].exporter.mig), the refusal's own fix for one cluster builds: the alarm is
    made in the cluster saying none, left out of the other (its Prometheus rule watches it), as a half alarm is. It
    was refused for the whole fleet whatever the clusters said."""
    from generator.artifacts import build

    project = defined_project(tmp_path, "clusters:\n  - {name: a, region: us-east-1, exporter: {mig: none}}\n"
                                        "  - {name: b, region: us-east-1}\n", alarms=BREACHING_IDLE)
    made = sorted(a.request["AlarmName"] for a in build(project).alarms if "-idle-" in a.request["AlarmName"])
    assert made == ["gpudash-a-idle-warning"]

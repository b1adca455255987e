"""Lint AL023: an alarm on a count or total of readings under a level whose missing data does not breach fires on
neither backend when every GPU it reads stops reporting (its query returns no datapoint, which CloudWatch does not
read as 0; its rule reads no series): a note naming the alarm and the fix. With `breaching` both fire then
(tests/integration/test_evaluation_range_rules.py), and a level above, a mean or an extreme says nothing."""

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

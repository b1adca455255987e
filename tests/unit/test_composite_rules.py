"""Which composite alarms' rules name an alarm (generator/composite_rules.py): CloudWatch deletes no alarm a composite
alarm depends on, so a prune leaves each such alarm, naming the composite alarm; a rule naming another alarm whose name
holds this one's, or another Region's or account's ARN, keeps nothing."""

import pytest

from generator.composite_rules import parents

NAME = "gpudash-other-gpu-temp-critical-critical"
ARN = f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{NAME}"


@pytest.mark.parametrize("rule, kept", [
    (f'ALARM("{NAME}")', True),
    (f"NOT OK({NAME}) AND TRUE", True),
    (f"INSUFFICIENT_DATA( {NAME} )", True),
    (f'AT_LEAST(50%, ALARM, (team-disk, "{ARN}"))', True),
    (f'ALARM("{NAME}-mig")', False),
    ("ALARM(gpudash-other-gpu-temp-critical)", False),
    (f'ALARM("{ARN.replace("us-east-1", "eu-west-1")}")', False),
    (f'ALARM("x {NAME}")', False),
    ("ALARM(team-disk) OR ALARM(team-net)", False),
])
def test_a_composite_alarm_depends_on_an_alarm_its_rule_names_by_name_or_arn(rule, kept):
    composites = {"team-ml-heat": {"AlarmName": "team-ml-heat", "AlarmRule": rule}, "team-other": {"AlarmName": "x"}}
    assert parents(composites, NAME, ARN) == (["team-ml-heat"] if kept else [])

"""Every setting of a metric alarm that DescribeAlarms reports is compared as an edit (a person's change of one that is
not would be overwritten by gpudash's next PutMetricAlarm, which replaces the whole alarm, and deleted by a prune),
read against botocore's own model of the answer: a setting CloudWatch adds is named here before it can be missed."""

from __future__ import annotations


def _members(shape: str) -> set[str]:
    import botocore.session

    return set(botocore.session.get_session().get_service_model("cloudwatch").shape_for(shape).members)


def test_every_member_of_a_reported_metric_alarm_is_compared_or_named_as_no_setting():
    from generator import ownership

    compared = {*ownership._ALARM_KEYS, "Dimensions", "Metrics", *ownership._UNSENT_DEFAULTS}
    unknown = _members("MetricAlarm") - compared - set(ownership.NOT_COMPARED)
    assert unknown == set(), f"DescribeAlarms reports {sorted(unknown)}, which gpudash neither compares nor names"


def test_every_member_of_an_alarm_query_is_compared():
    from generator import ownership

    compared = {"Id", "Expression", "MetricStat", "Period", "ReturnData", *ownership._QUERY_NAMES}
    assert _members("MetricDataQuery") - compared == set()


def test_an_unsent_setting_at_a_value_other_than_its_default_changes_the_evidence():
    from generator.ownership import alarm_hash

    alarm = {"AlarmName": "a", "MetricName": "m", "Namespace": "n", "Threshold": 1.0, "EvaluationPeriods": 1}
    assert alarm_hash({**alarm, "WarmUpConfiguration": {"WarmUpPeriodDurationInMinutes": 0}}) == alarm_hash(alarm)
    assert alarm_hash({**alarm, "WarmUpConfiguration": {"WarmUpPeriodDurationInMinutes": 15}}) != alarm_hash(alarm)


def test_members_botocore_does_not_know_are_compared_unless_no_setting():
    """What an older botocore drops from DescribeAlarms' answer, kept from the raw answer (ownership.UNMODELLED): a
    setting gpudash knows (_UNSENT_DEFAULTS) by its value, as a newer botocore reads it; a member it does not know, as
    an edit; one under a member that is no setting (NOT_COMPARED: a state), not."""
    from generator.ownership import UNMODELLED, alarm_hash

    alarm = {"AlarmName": "a", "MetricName": "m", "Namespace": "n", "Threshold": 1.0, "EvaluationPeriods": 1}
    warm = {"WarmUpPeriodDurationInMinutes": 15}
    assert alarm_hash({**alarm, UNMODELLED: {"WarmUpConfiguration": warm}}) == \
        alarm_hash({**alarm, "WarmUpConfiguration": warm}) != alarm_hash(alarm)
    assert alarm_hash({**alarm, UNMODELLED: {"WarmUpConfiguration": {"WarmUpPeriodDurationInMinutes": 0}}}) == \
        alarm_hash(alarm)
    assert alarm_hash({**alarm, UNMODELLED: {"FutureSetting": True}}) != alarm_hash(alarm)
    assert alarm_hash({**alarm, UNMODELLED: {"Metrics[0].FutureSetting": 1}}) != alarm_hash(alarm)
    assert alarm_hash({**alarm, UNMODELLED: {"EvaluationState": "PARTIAL_DATA",
                                             "EvaluationCriteria.PromQLCriteria.Query": "up"}}) == alarm_hash(alarm)

"""Evidence a release before query labels were hashed wrote (ownership.legacy_alarm_hash) vouches for an alarm only
where its queries read the alarm's own account and carry the labels gpudash renders (cloudwatch_sync's plans)."""

from __future__ import annotations

import pytest

from generator.markers import ALARM_HASH_TAG, ALARM_OWNER_TAG
from generator.ownership import legacy_alarm_hash, marks_hash
from generator.targets.cloudwatch_sync import _plan_alarm, _plan_retired

NAME = "gpudash-gpu-cluster-gpu-temp-critical-critical"
OWN_ACCOUNT = "123456789012"


def _alarm(account: str | None = None, label: str = "GPU temperature", threshold: float = 95.0) -> dict:
    query = {"Id": "q1", "Expression": "SELECT MAX(DCGM_FI_DEV_GPU_TEMP) FROM gpudash", "Period": 60,
             "ReturnData": True, "Label": label}
    if account is not None:
        query["AccountId"] = account
    return {"AlarmName": NAME, "AlarmArn": f"arn:aws:cloudwatch:us-east-1:{OWN_ACCOUNT}:alarm:{NAME}",
            "ComparisonOperator": "GreaterThanThreshold", "Threshold": threshold, "EvaluationPeriods": 3,
            "DatapointsToAlarm": 3, "TreatMissingData": "missing", "Metrics": [query]}


def _earlier_evidence(alarm: dict) -> list[dict[str, str]]:
    own = [ALARM_OWNER_TAG]
    return own + [{"Key": ALARM_HASH_TAG, "Value": f"{legacy_alarm_hash(alarm)}/{marks_hash(own)}"}]


@pytest.mark.parametrize("account, ours", [(None, True), (OWN_ACCOUNT, True), ("210987654321", False)],
                         ids=["no-account", "its-own-account", "another-account"])
def test_earlier_evidence_vouches_for_a_query_reading_the_alarms_own_account_only(account, ours):
    written = _alarm()
    live = _alarm(account)  # as it is now: the account a person (or CloudWatch's form) set
    wanted = _alarm(threshold=90.0)  # these settings change the threshold
    change = _plan_alarm(NAME, "us-east-1", wanted, live, _earlier_evidence(written))
    assert change.action == ("update" if ours else "drift"), change.details
    # No longer defined, there is no rendering to compare a label with: a labelled query is not vouched for.
    assert _plan_retired(NAME, "us-east-1", live, _earlier_evidence(written)).edited is True
    unlabelled = _alarm(account, label="")
    retired = _plan_retired(NAME, "us-east-1", unlabelled, _earlier_evidence(_alarm(label="")))
    assert retired.edited is not ours, retired.details


def test_earlier_evidence_vouches_for_labels_only_as_rendered():
    written = _alarm()
    for label, action in (("GPU temperature", "update"), ("Hot GPUs (on-call view)", "drift")):
        change = _plan_alarm(NAME, "us-east-1", _alarm(threshold=90.0), _alarm(label=label), _earlier_evidence(written))
        assert change.action == action, (label, change.details)

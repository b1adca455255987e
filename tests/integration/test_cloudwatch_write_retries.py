"""A CloudWatch write retried after an attempt that failed (moto behind the fault proxy, boto3). CloudWatch's writes
are not conditional, so the object is read again before each retry: a person's change made between two attempts is
never overwritten by the resend (reported, exit 3), and a write an earlier attempt made is not sent again. Nor is
a create that turned out to update an alarm a person made just before it reported written."""

from __future__ import annotations

import json

import pytest

from tests.support.cloudwatch_world import TWO_CLUSTERS, alarms, edit_in_console, fault, foreign_alarm
from tests.support.cloudwatch_world import aws, moto, proxied, published  # noqa: F401 (fixtures)

NAME = "gpudash-gpu-cluster-gpu-temp-high-warning"
DASHBOARD = "gpudash-gpu-cluster-health"
RETIRED = "gpudash-other-gpu-temp-high-warning"


def _edit_dashboard(client):
    body = json.loads(client.get_dashboard(DashboardName=DASHBOARD)["DashboardBody"])
    body["widgets"] = body["widgets"][:1]  # a person keeps one widget
    client.put_dashboard(DashboardName=DASHBOARD, DashboardBody=json.dumps(body))
    return body


@pytest.mark.parametrize("kind", ["alarm", "dashboard"])
def test_a_persons_change_between_two_attempts_of_a_write_is_not_overwritten(proxied, kind):
    """The first attempt reaches CloudWatch and is made; a gateway answers 504; a person changes the object (straight
    to CloudWatch) before the retry. The resend overwrote the person's threshold 42 with gpudash's, reported written,
    exit 0; now the object is read again first: the person's change stays, and the write is reported failed (exit 3)
    saying why."""
    proxy, client, apply = proxied
    edited = {}
    if kind == "alarm":
        rule = fault("PutMetricAlarm", "gateway", naming=NAME, status=504, body=b"Gateway Timeout",
                     callback=lambda: edit_in_console(client, name=NAME, threshold=42.0))
    else:
        rule = fault("PutDashboard", "gateway", naming=DASHBOARD, status=504, body=b"Gateway Timeout",
                     callback=lambda: edited.update(body=_edit_dashboard(client)))
    proxy.inject(rule)
    code, report, stderr = apply()
    name = NAME if kind == "alarm" else DASHBOARD
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 3 and name not in report["written"] and list(errors) == [name], stderr
    assert "was to be sent again, but read again first" in errors[name] and \
        "changed by someone else meanwhile" in errors[name], errors
    if kind == "alarm":
        assert alarms(client)[NAME]["Threshold"] == 42.0
    else:
        assert json.loads(client.get_dashboard(DashboardName=DASHBOARD)["DashboardBody"]) == edited["body"]


def test_a_write_an_earlier_attempt_made_is_not_sent_again(proxied):
    """The first attempt is made and a gateway answers 504; nothing changes before the retry: read again, the alarm
    is as sent, so the write is done without a second PutMetricAlarm and reported written."""
    proxy, client, apply = proxied
    puts = []
    proxy.inject(fault("PutMetricAlarm", "gateway", naming=NAME, status=504, body=b"Gateway Timeout"),
                 fault("PutMetricAlarm", "before", naming=NAME, callback=lambda: puts.append(NAME)))
    code, report, stderr = apply()
    assert code == 0 and NAME in report["written"] and report["failed"] == [], stderr
    assert puts == []  # the second rule would have seen a resend


def test_an_alarm_a_person_creates_just_before_gpudashs_create_is_not_reported_written(proxied):
    """The plan found no alarm NAME; right before gpudash's PutMetricAlarm reaches CloudWatch (after the last read,
    in the pacing window) a person creates NAME with their own definition and tags. PutMetricAlarm on an existing
    name is an update, and AWS ignores its Tags then: the person's alarm gets gpudash's definition and keeps the
    person's tags alone. It was reported written (the read-back checked fields only), exit 0, and the next plan
    called it foreign. Now the alarm's tags are read after each create: not the tags the create sent, so it is
    reported failed (exit 3), saying what happened. (Moto applies Tags on an update too: the person's tag shows.)"""
    proxy, client, apply = proxied

    def person():
        foreign_alarm(client, name=NAME, threshold=7.0)
        client.tag_resource(ResourceARN=alarms(client)[NAME]["AlarmArn"], Tags=[{"Key": "team", "Value": "ops"}])

    proxy.inject(fault("PutMetricAlarm", "before", naming=NAME, callback=person))
    code, report, stderr = apply()
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 3 and NAME not in report["written"] and list(errors) == [NAME], stderr
    assert "an alarm of this name was there before it" in errors[NAME], errors


def test_a_persons_change_between_two_attempts_of_an_alarm_delete_is_not_deleted(proxied, published, project_dir):
    """--prune deletes the alarms of a removed cluster; the first DeleteAlarms is answered 503 (not made) and a
    person changes one of them (threshold 42) before the retry. The resend deleted it; now the alarms are read again
    first: none of the batch is deleted, each reported failed (exit 3), the person's alarm as they left it."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    retired = sorted(name for name in alarms(client) if name.startswith("gpudash-other-"))
    config = str(project_dir(""))
    proxy.inject(fault("DeleteAlarms", "status", status=503, body={"__type": "ServiceUnavailable"},
                       callback=lambda: edit_in_console(client, name=RETIRED, threshold=42.0)))
    code, report, stderr = apply("--config", config, "--prune", "--removed-cluster", "other")
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 3 and RETIRED in retired and sorted(errors) == retired, stderr
    assert "changed by someone else meanwhile" in errors[RETIRED] and "none deleted" in errors[RETIRED], errors
    assert alarms(client)[RETIRED]["Threshold"] == 42.0 and set(retired) <= set(alarms(client))

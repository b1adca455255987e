"""A CloudWatch write or delete is reported done only when it is shown done: an answer of `{}` proves
nothing, so each is read back (an alarm right after its write, a dashboard after PutDashboard, what was
deleted after DeleteAlarms/DeleteDashboards). What cannot be shown done, because it is not there as
sent, is still there, or cannot be read at all, is a failure (exit 3), and no evidence is tagged for it."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tests.support.cloudwatch_world import (ALWAYS, TWO_CLUSTERS, alarms, fault, fresh, other_cluster, taken_over,
                                            threshold_lowered, without_query_periods)
from tests.support.fault_proxy import HTML as HTML_PAGE, Rule

NAME = "gpudash-gpu-cluster-gpu-temp-critical-critical"
DASHBOARD = "gpudash-gpu-cluster-health"
WARMER = "thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n"


def _dashboards(client):
    return sorted(d["DashboardName"] for d in client.list_dashboards()["DashboardEntries"])


def _tags(client, name):
    return client.list_tags_for_resource(ResourceARN=alarms(client)[name]["AlarmArn"])["Tags"]


def test_an_alarm_update_not_made_whose_read_back_fails_is_a_failure_without_evidence(
        proxied, published, project_dir, cli):
    proxy, client, apply = proxied
    published()
    tags = _tags(client, NAME)
    config = str(project_dir(WARMER))
    fresh(proxy)
    broken = fault("DescribeAlarms", "status", times=ALWAYS, status=500, body={"__type": "InternalFailure"})
    proxy.inject(fault("PutMetricAlarm", "status", times=1, body={}, callback=lambda: proxy.inject(broken)))
    code, report, stderr = apply("--config", config)
    assert code == 3 and "Traceback" not in stderr
    assert NAME not in report["written"] and NAME in [item["name"] for item in report["failed"]]
    error = next(item["error"] for item in report["failed"] if item["name"] == NAME)
    assert "could not be read back to show the write took effect" in error, error
    assert alarms(client)[NAME]["Threshold"] == 87.0 and _tags(client, NAME) == tags
    fresh(proxy)
    code, stdout, _ = cli("plan", "--no-grafana", "--config", config)
    assert code == 1 and f"update    cloudwatch alarm {NAME} [us-east-1]" in stdout and "--force" not in stdout


def test_an_alarm_create_not_made_and_interrupted_is_not_reported_written(proxied):
    """PutMetricAlarm of one alarm answered {} without making it, and SIGTERM just then: the report (still
    a JSON report) names that alarm as failed, its write unproven, and nothing it calls written is missing."""
    proxy, client, apply = proxied
    proxy.inject(fault("PutMetricAlarm", "status", times=1, body={}, naming=NAME,
                       callback=lambda: os.kill(os.getpid(), signal.SIGTERM)))
    code, report, stderr = apply()
    assert code == 143 and "Traceback" not in stderr
    live = alarms(client)
    assert NAME not in live and NAME not in report["written"]
    error = next(item["error"] for item in report["failed"] if item["name"] == NAME)
    assert "could not be read back to show the write took effect" in error and "not attempted" not in error, error
    assert not [name for name in report["written"] if name.endswith(("-warning", "-critical")) and name not in live]


def test_a_dashboard_write_answered_but_not_made_is_a_failure(proxied, published, project_dir):
    proxy, client, apply = proxied
    published()
    before = client.get_dashboard(DashboardName=DASHBOARD)["DashboardBody"]
    fresh(proxy)
    proxy.inject(fault("PutDashboard", "status", times=ALWAYS, body={}))
    code, report, stderr = apply("--config", str(project_dir(WARMER)))
    assert code == 3 and "Traceback" not in stderr
    assert client.get_dashboard(DashboardName=DASHBOARD)["DashboardBody"] == before
    assert DASHBOARD not in report["written"]
    error = next(item["error"] for item in report["failed"] if item["name"] == DASHBOARD)
    assert "not there with the body sent" in error, error


def test_deletes_answered_but_not_made_are_failures(proxied, published, project_dir):
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    before = (sorted(alarms(client)), _dashboards(client))
    fresh(proxy)
    proxy.inject(fault("DeleteAlarms", "status", times=ALWAYS, body={}),
                 fault("DeleteDashboards", "status", times=ALWAYS, body={}))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 3 and "Traceback" not in stderr
    assert (sorted(alarms(client)), _dashboards(client)) == before
    assert report["written"] == [] and len(report["failed"]) == 16
    assert all(other_cluster(item["name"]) and "read back twice, 1 s apart, the" in item["error"]
               and "is still there" in item["error"] for item in report["failed"])
    fresh(proxy)
    code, report, _ = apply("--prune", "--removed-cluster", "other")
    assert code == 0 and len(report["written"]) == 16
    assert not [name for name in alarms(client) if other_cluster(name)]
    assert not [name for name in _dashboards(client) if other_cluster(name)]


def _stopped():
    """SIGTERM, and wait until gpudash's handler has run (in the main thread; dashboards are written beside it,
    so without the wait a dashboard's read-back might start before the handler runs)."""
    os.kill(os.getpid(), signal.SIGTERM)
    stop = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    waited = 0
    while stop is not None and not stop.deadline.interrupted and waited < 5000:
        time.sleep(0.001)
        waited += 1


@pytest.mark.parametrize("operation", ["DeleteAlarms", "DeleteDashboards"])
def test_a_delete_stopped_between_its_call_and_its_read_back_says_it_may_have_happened(
        operation, proxied, published, project_dir):
    """SIGTERM arrives as a delete reaches CloudWatch (which deletes): the call finishes, its read-back does not
    start, and the report says the delete may have happened (it did), never "not attempted"; nothing reported
    deleted is still there, and a rerun converges. Alarms go one per DeleteAlarms: the first is the one sent."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    fresh(proxy)
    first = "gpudash-other-by-pod" if operation == "DeleteDashboards" else None
    proxy.inject(fault(operation, "before", naming=first, callback=_stopped))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 128 + signal.SIGTERM and "stopped by SIGTERM" in stderr and "Traceback" not in stderr, stderr
    live = {*alarms(client), *_dashboards(client)}
    sent = [first] if first else [c["name"] for c in report["changes"]
                                  if c["kind"] == "alarm" and other_cluster(c["name"]) and c["name"] not in live]
    assert len(sent) == 1, sent  # the one dashboard; the first alarm
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert sent and not live & set(sent)  # CloudWatch deleted them
    for name in sent:
        assert name not in report["written"] and "may have happened" in errors[name], errors.get(name)
        assert "not attempted" not in errors[name], errors[name]
    assert not live & set(report["written"])
    fresh(proxy)
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 0, stderr
    assert not [name for name in [*alarms(client), *_dashboards(client)] if other_cluster(name)]


def test_a_batch_delete_whose_read_back_fails_says_so_once_for_each_alarm(proxied, published, project_dir):
    """A DeleteAlarms reaches CloudWatch (which deletes), then every read-back answers 500: the alarm's error says
    once that the delete may have happened. The other alarms' last looks fail too: not deleted."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    fresh(proxy)
    broken = fault("DescribeAlarms", "status", times=ALWAYS, status=500, body={"__type": "InternalFailure"})
    proxy.inject(fault("DeleteAlarms", "before", callback=lambda: proxy.inject(broken)))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 3 and "Traceback" not in stderr, stderr
    retired = [c["name"] for c in report["changes"] if c["kind"] == "alarm" and other_cluster(c["name"])]
    sent = [name for name in retired if name not in alarms(client)]  # CloudWatch deleted them
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert len(sent) == 1 and sorted(errors) == sorted(retired), errors
    for name in sent:
        assert errors[name].count("CloudWatch answered DeleteAlarms") == 1, errors[name]
        assert "may have happened" in errors[name] and "not attempted" not in errors[name], errors[name]


def test_restoring_an_alarms_evidence_writes_what_the_plan_said_with_the_clusters_of_these_settings(
        aws, published, project_dir, cli):
    """An alarm as generated whose evidence predates the marks' hash, planned under settings with one more
    cluster: the plan restores its evidence and records the settings' clusters (a list that shares a cluster
    with the one it records: an earlier version of the same settings), and apply writes that; the next plan
    has nothing to write."""
    client, apply = aws
    published()
    tags = _tags(client, NAME)
    arn = client.describe_alarms(AlarmNames=[NAME])["MetricAlarms"][0]["AlarmArn"]
    evidence = next(t["Value"] for t in tags if t["Key"] == "gpudash:sha256")
    client.tag_resource(ResourceARN=arn, Tags=[{"Key": "gpudash:sha256", "Value": evidence.partition("/")[0]}])
    config = str(project_dir(TWO_CLUSTERS))
    code, stdout, _ = cli("plan", "--no-grafana", "--config", config)
    assert code == 1 and "gpudash:clusters=gpu-cluster other" in stdout and "gpudash:sha256=" in stdout, stdout
    code, report, stderr = apply("--config", config)
    assert code == 0, stderr
    after = {t["Key"]: t["Value"] for t in _tags(client, NAME)}
    assert after["gpudash:clusters"] == "gpu-cluster other" and "/" in after["gpudash:sha256"], after
    code, stdout, _ = cli("plan", "--no-grafana", "--config", config)
    assert code == 0 and f"unchanged cloudwatch alarm {NAME} [us-east-1]" in stdout, stdout


LOST = {  # a write whose every answer is lost: (settings, flags, the kind of object it writes)
    "PutMetricAlarm": (TWO_CLUSTERS + WARMER, (), "alarm"),
    "TagResource": (TWO_CLUSTERS + WARMER, (), "alarm"),
    "PutDashboard": (TWO_CLUSTERS + WARMER, (), "dashboard"),
    "DeleteAlarms": ("", ("--prune", "--removed-cluster", "other"), "alarm"),
    "DeleteDashboards": ("", ("--prune", "--removed-cluster", "other"), "dashboard"),
}


def _state(client, names):
    """Each of these alarms' fields and tags, and these dashboards' bodies (None: not there)."""
    live, boards = alarms(client), _dashboards(client)
    return {name: (live[name]["Threshold"], sorted((t["Key"], t["Value"]) for t in client.list_tags_for_resource(
        ResourceARN=live[name]["AlarmArn"])["Tags"]))
            if name in live else client.get_dashboard(DashboardName=name)["DashboardBody"] if name in boards else None
            for name in names}


def _before(client, kind, compared):
    """What `_state` reads of every object of `kind` (what the write touches: its test compares the objects it
    changed with this), read before the write when the test compares them (`compared`); None when it does not:
    reading every alarm's tags one call at a time was most of the calls of the cases that compare nothing."""
    if not compared:
        return None
    return _state(client, [*alarms(client)] if kind == "alarm" else _dashboards(client))


@pytest.mark.parametrize("landed", [True, False], ids=["made, answers reset", "not made, gateway 504"])
@pytest.mark.parametrize("api", LOST)
def test_a_write_whose_answers_are_all_lost_is_read_back(proxied, published, project_dir, cli, api, landed):
    """CloudWatch does what each attempt of the write asks and the connection drops before every answer: the
    object read back shows it made, and it is reported done (a rerun writes nothing). A gateway in front answers
    504 to every attempt and CloudWatch never got the request: read back, the object is as before, and the write
    is reported not made (a failure, exit 3), never done and never as may have happened."""
    proxy, client, apply = proxied
    settings, flags, kind = LOST[api]
    published("--config", str(project_dir(TWO_CLUSTERS)))
    config = str(project_dir(settings))  # (the same file, written again)
    before = _before(client, kind, not landed and api != "TagResource")
    fresh(proxy)
    proxy.inject(fault(api, "reset-after", times=ALWAYS) if landed else fault(api, "status", status=504, times=ALWAYS))
    code, report, stderr = apply("--config", config, *flags)
    assert proxy.faults() and "Traceback" not in stderr, stderr
    actions = ("delete",) if api.startswith("Delete") else ("create", "update")
    changed = [c["name"] for c in report["changes"] if c["action"] in actions and c["kind"] == kind]
    assert changed, report["changes"]
    errors = {item["name"]: item["error"] for item in report["failed"]}
    if landed:
        assert code == 0 and errors == {} and set(changed) <= set(report["written"]), errors
        fresh(proxy)  # a rerun with the same flags: --removed-cluster other takes nothing now, and writes nothing
        code, report, stderr = apply("--config", config, *flags)
        assert code == 0 and report["written"] == [], stderr
        return
    if api == "TagResource":  # the fields of each update were written and read back: written, their tags not
        assert code == 3 and set(changed) <= set(report["written"])
        assert all(item["written"] for item in report["failed"] if item["name"] in changed), report["failed"]
    else:
        assert code == 3 and not set(changed) & set(report["written"])
    assert all(f"CloudWatch {api} was sent and its answer was lost; read back" in errors[name]
               and "may have happened" not in errors[name] for name in changed if name in errors), errors
    assert set(changed) <= set(errors) or api == "TagResource"  # (the tags follow the fields of an update)
    if api != "TagResource":  # (an update's fields are written before its tags)
        assert _state(client, changed) == {name: before.get(name) for name in changed}


@pytest.mark.parametrize("api,read", [("PutMetricAlarm", "DescribeAlarms"), ("PutDashboard", "GetDashboard")])
def test_a_write_whose_answers_are_lost_and_whose_read_back_fails_says_it_may_have_happened(
        proxied, published, project_dir, api, read):
    """CloudWatch makes the write, every answer is lost, and every read that would show it made answers 500:
    the write is reported as may have happened (it did), never as done or as not made."""
    proxy, client, apply = proxied
    published()
    fresh(proxy)
    broken = fault(read, "status", times=ALWAYS, status=500, body={"__type": "InternalFailure"})
    proxy.inject(fault(api, "reset-after", times=ALWAYS, callback=lambda: proxy.inject(broken)))
    code, report, stderr = apply("--config", str(project_dir(WARMER)))
    assert code == 3 and "Traceback" not in stderr, stderr
    errors = [item["error"] for item in report["failed"] if f"CloudWatch {api}" in item["error"]]
    assert errors and all(f"CloudWatch {api} was sent and may have happened, but its answer was lost" in error
                          and "could not be read back to show it" in error for error in errors), report["failed"]


SIGN_IN_PAGE = {"Location": "https://sso.example.com/signin?state=abc", "Content-Type": "text/html"}


@pytest.mark.parametrize("how", ["passed on, then a redirect", "a refusal page, not passed on",
                                 "passed on, then a redirect, and reads redirected after it"])
@pytest.mark.parametrize("api", LOST)
def test_a_write_answered_by_a_proxy_s_page_may_have_happened_and_is_read_back(proxied, published, project_dir, api,
                                                                              how):
    """A proxy in front of CloudWatch answers the write with a redirect to a sign-in page or an HTML refusal (no AWS
    error document), having passed the request on or not. The write was reported not made (a failure naming the
    page) even when CloudWatch had made it. It may have happened: it is read back as a write whose answer was lost
    is, and reported done when the read shows it made, not made when the read shows the object as before, and as
    may have happened (run plan) when the read cannot be made."""
    proxy, client, apply = proxied
    settings, flags, kind = LOST[api]
    published("--config", str(project_dir(TWO_CLUSTERS)))
    config = str(project_dir(settings))
    before = _before(client, kind, how == "a refusal page, not passed on" and api != "TagResource")
    fresh(proxy)
    page = HTML_PAGE + b"<p>" + b"x" * 200 + b"</p>"
    passed = how.startswith("passed on")
    reads = [fault(read, "status", times=ALWAYS, status=302, body=page)
             for read in ("DescribeAlarms", "GetDashboard", "ListTagsForResource", "GetResources")]
    for rule in reads:
        rule.headers = SIGN_IN_PAGE
    later = (lambda: proxy.inject(*reads)) if how.endswith("after it") else None
    rule = fault(api, "gateway" if passed else "status", times=ALWAYS, status=302 if passed else 403, body=page,
                 callback=later)
    rule.headers = SIGN_IN_PAGE
    proxy.inject(rule)
    code, report, stderr = apply("--config", config, *flags)
    assert "Traceback" not in stderr and proxy.operations.count(api) >= 1, stderr
    actions = ("delete",) if api.startswith("Delete") else ("create", "update")
    changed = [c["name"] for c in report["changes"] if c["action"] in actions and c["kind"] == kind]
    assert changed, report["changes"]
    errors = {item["name"]: item["error"] for item in report["failed"]}
    if how == "passed on, then a redirect":
        assert code == 0 and errors == {} and set(changed) <= set(report["written"]), errors
        assert proxy.operations.count(api) == len(changed)  # a page answers the same: not sent again
        return
    assert code == 3 and "state=abc" not in stderr, stderr
    if how == "a refusal page, not passed on":
        assert proxy.operations.count(api) == len(changed)
        assert all(f"CloudWatch {api} was sent and its answer was lost; read back" in errors[name]
                   and ("the write was not made" in errors[name] or "still there: not deleted" in errors[name])
                   and "HTTP 403, text/html" in errors[name]
                   for name in changed if name in errors), errors
        if api != "TagResource":  # (an update's fields are written before its tags)
            assert _state(client, changed) == {name: before.get(name) for name in changed}
        return
    # the first write passed on, then every read redirected too: that write may have happened (it did); the others
    # were not sent (their reads before the write failed)
    sent = [error for error in errors.values() if f"CloudWatch {api} was sent" in error]
    assert len(sent) == proxy.operations.count(api) == 1, errors
    assert f"CloudWatch {api} was sent and may have happened" in sent[0] and \
        "HTTP 302 redirecting to https://sso.example.com/signin" in sent[0] and "not made" not in sent[0], sent


TAGGING_DENIED = {"__type": "AccessDeniedException", "message": "not authorized to perform cloudwatch:TagResource"}


def test_an_alarm_update_whose_tag_write_is_denied_is_written_and_its_tags_failed(proxied, published, project_dir,
                                                                                   cli):
    """PutMetricAlarm lands and is read back as sent, then TagResource is denied: the alarm is reported written
    (it is: 90 live), and its tag write failed, with what that means next time and the permission; exit 3."""
    proxy, client, apply = proxied
    published()
    tags = _tags(client, NAME)
    config = str(project_dir(WARMER))
    fresh(proxy)
    proxy.inject(fault("TagResource", "status", times=ALWAYS, status=400, body=TAGGING_DENIED))
    code, report, stderr = apply("--config", config)
    assert code == 3 and "Traceback" not in stderr
    assert alarms(client)[NAME]["Threshold"] == 90.0 and _tags(client, NAME) == tags
    assert NAME in report["written"]
    failed = next(item for item in report["failed"] if item["name"] == NAME)
    assert failed["written"] is True
    assert "updated and read back as sent, but its tags were not written" in failed["error"], failed
    assert "drift" in failed["error"] and "grant cloudwatch:TagResource" in failed["error"], failed
    assert "written but a step after the write failed" in stderr, stderr
    fresh(proxy)  # allowed again: the next apply writes the tags alone, with no --force
    code, report, _ = apply("--config", config)
    assert code == 0 and report["written"] == [NAME] and report["failed"] == []
    assert [op for op in proxy.operations if op in ("PutMetricAlarm", "TagResource")] == ["TagResource"]


def test_an_alarm_update_whose_tag_write_is_answered_but_not_made_is_written_and_its_tags_failed(
        proxied, published, project_dir):
    """PutMetricAlarm lands and is read back as sent, then TagResource is answered `{}` without tagging: it was
    reported done (exit 0) with gpudash:sha256 still naming the earlier write. The tag write is read back now: the
    alarm is written (90 live) and its tag write failed, as when TagResource is denied (exit 3)."""
    proxy, client, apply = proxied
    published()
    tags = _tags(client, NAME)
    config = str(project_dir(WARMER))
    fresh(proxy)
    proxy.inject(fault("TagResource", "status", times=ALWAYS, body={}))
    code, report, stderr = apply("--config", config)
    assert code == 3 and "Traceback" not in stderr
    assert alarms(client)[NAME]["Threshold"] == 90.0 and _tags(client, NAME) == tags
    failed = next(item for item in report["failed"] if item["name"] == NAME)
    assert NAME in report["written"] and failed["written"] is True
    assert "its tags were not written" in failed["error"] and "does not carry the tags sent" in failed["error"], failed
    fresh(proxy)
    code, report, _ = apply("--config", config)
    assert code == 0 and report["written"] == [NAME] and report["failed"] == []
    assert [op for op in proxy.operations if op in ("PutMetricAlarm", "TagResource")] == ["TagResource"]


def test_an_evidence_only_update_answered_but_not_made_is_a_failure(proxied, published):
    """An alarm as generated whose gpudash:sha256 lacks the form CloudWatch reports it in: the update is its
    TagResource alone. Answered `{}` without tagging, it was reported written (exit 0), nothing written. Read back
    now: not written, failed (exit 3); the next apply writes it."""
    proxy, client, apply = proxied
    published()
    arn = alarms(client)[NAME]["AlarmArn"]
    sent = next(t["Value"] for t in _tags(client, NAME) if t["Key"] == "gpudash:sha256").partition("/")[0]
    client.tag_resource(ResourceARN=arn, Tags=[{"Key": "gpudash:sha256", "Value": sent}])
    tags = _tags(client, NAME)
    fresh(proxy)
    proxy.inject(fault("TagResource", "status", times=ALWAYS, body={}))
    code, report, stderr = apply()
    assert code == 3 and "Traceback" not in stderr
    assert NAME not in report["written"] and _tags(client, NAME) == tags
    failed = next(item for item in report["failed"] if item["name"] == NAME)
    assert failed["written"] is False and "does not carry the tags sent" in failed["error"], failed
    fresh(proxy)
    code, report, _ = apply()
    assert code == 0 and NAME in report["written"] and _tags(client, NAME) != tags


def test_taking_back_a_creates_evidence_answered_but_not_made_says_it_was_not_taken_back(proxied):
    """A create read back with another threshold than sent: its gpudash:sha256 (of what was sent) is taken back with
    UntagResource. Answered `{}` without untagging, the failure said it was taken back; read back now, it says the
    alarm still carries it (the next plan shows it as changed since gpudash wrote it)."""
    proxy, client, apply = proxied
    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=threshold_lowered(NAME)),
                 fault("UntagResource", "status", times=ALWAYS, body={}))
    code, report, stderr = apply()
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 3 and list(errors) == [NAME] and NAME not in report["written"], stderr
    assert "could not be taken back" in errors[NAME] and "still carries gpudash:sha256" in errors[NAME], errors
    assert "gpudash:sha256" in [t["Key"] for t in _tags(client, NAME)]


GATEWAY = {"__type": "ServiceUnavailable"}


@pytest.mark.parametrize("untag", ["made, last answer lost", "never made, answers lost", "made, unreadable after"])
def test_taking_back_a_creates_evidence_whose_answers_are_lost_says_what_the_tags_show(proxied, untag):
    """A create read back with another threshold than sent: its gpudash:sha256 is taken back with UntagResource, and
    every attempt's answer is lost (a gateway's 504: five never reach CloudWatch; the sixth does, or not). It said
    "could not be taken back" without reading. Now the alarm's tags are read: without the hash (taken back), still
    with it (not taken back), or, when they cannot be read, that it is not known; the alarm is never reported
    written."""
    proxy, client, apply = proxied
    unreadable = Rule(path="/", operation="ListTagsForResource", times=ALWAYS, status=500, contains=f'{NAME}"'.encode(),
                      body=b'{"__type": "InternalFailure"}')  # this alarm's tags alone
    last = fault("UntagResource", "gateway" if untag.startswith("made") else "status", times=ALWAYS, status=504,
                 body=GATEWAY, callback=(lambda: proxy.inject(unreadable)) if untag.endswith("after") else None)
    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=threshold_lowered(NAME)),
                 fault("UntagResource", "status", times=5, status=504, body=GATEWAY), last)
    code, report, stderr = apply()
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 3 and list(errors) == [NAME] and NAME not in report["written"], stderr
    assert proxy.operations.count("UntagResource") == 6
    carries = "gpudash:sha256" in [t["Key"] for t in _tags(client, NAME)]
    if untag == "made, last answer lost":
        assert not carries and "without gpudash:sha256 (taken back" in errors[NAME], errors
    elif untag == "never made, answers lost":
        assert carries and "could not be taken back" in errors[NAME] and "still carries gpudash:sha256" in errors[NAME]
        assert "may have happened" not in errors[NAME], errors
    else:
        assert not carries and "whether its gpudash:sha256 of what was sent was taken back is not known" in errors[
            NAME], errors
    assert "could not be taken back" not in errors[NAME] or untag == "never made, answers lost", errors


def test_a_takeover_just_after_a_create_gets_its_evidence_left_alone(proxied):
    """A create read back with another threshold than sent, and a person gives the alarm to their team
    (ManagedBy=team-ml) as that read-back is answered: UntagResource took gpudash:sha256 off the person's alarm on
    the tags of the create, unread. The tags are read right before it now: not those the create sent, so nothing is
    untagged, and the failure says so."""
    proxy, client, apply = proxied
    lowered, taken = threshold_lowered(NAME), []

    def read_back(body: bytes) -> bytes:  # the first DescribeAlarms answer that reports the alarm: its read-back
        if not taken and NAME.encode() in body:
            taken_over(client, NAME)
            taken.append(True)
        return lowered(body)

    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=read_back))
    code, report, stderr = apply()
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert taken and code == 3 and list(errors) == [NAME] and NAME not in report["written"], stderr
    assert proxy.operations.count("UntagResource") == 0
    assert "not those it was created with" in errors[NAME] and "ManagedBy=team-ml" in errors[NAME], errors
    tags = {t["Key"]: t["Value"] for t in _tags(client, NAME)}
    assert tags["ManagedBy"] == "team-ml" and "gpudash:sha256" in tags


def test_alarms_created_whose_tag_writes_are_denied_are_written_and_listed_failed(proxied, cli):
    """A first apply where CloudWatch reports the queries' alarms in its own form (without a query's Period): every
    alarm is created (with its ownership tags and the evidence of what was sent, with PutMetricAlarm) and read
    back; each is reported written, and the evidence naming the form reported, a tag write, as failed for each
    alarm reported in that form; the text report says both."""
    proxy, client, apply = proxied
    own_form = fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=without_query_periods)
    proxy.inject(fault("TagResource", "status", times=ALWAYS, status=400, body=TAGGING_DENIED), own_form)
    code, report, stderr = apply()
    live = alarms(client)
    assert code == 3 and live and "Traceback" not in stderr
    assert sorted(n for n in report["written"] if n in live) == sorted(live)
    failed = {item["name"]: item for item in report["failed"]}
    queried = sorted(name for name, alarm in live.items() if any("Period" in q for q in alarm.get("Metrics", [])))
    assert NAME in queried and sorted(failed) == queried and all(item["written"] for item in failed.values())
    assert all("created and read back as sent" in item["error"] for item in failed.values())
    fresh(proxy)
    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=without_query_periods))
    code, stdout, _ = cli("apply", "--skip-verify")
    assert code == 0 and f"{NAME} [us-east-1] (done)" in stdout
    assert [op for op in proxy.operations if op == "PutMetricAlarm"] == []


def test_taking_back_evidence_sent_just_before_a_sigterm_says_it_is_not_known(proxied):
    """A create read back otherwise than sent; its UntagResource reaches CloudWatch (made), a gateway answers 504, and
    SIGTERM comes then: nothing can be read after it. The failure said "its gpudash:sha256 ... could not be taken
    back ... the next plan shows it as changed since gpudash wrote it" while it was taken back; now: not known."""
    proxy, client, apply = proxied
    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=threshold_lowered(NAME)),
                 fault("UntagResource", "gateway", status=504, body=GATEWAY,
                       callback=lambda: os.kill(os.getpid(), signal.SIGTERM)))
    code, report, stderr = apply()
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 143 and "gpudash:sha256" not in [t["Key"] for t in _tags(client, NAME)]
    assert "could not be taken back" not in errors[NAME], errors[NAME]
    assert "was taken back is not known (CloudWatch UntagResource was sent and may have happened" in errors[NAME]


def test_a_tag_write_sent_just_before_a_sigterm_says_it_is_not_known(proxied, published, project_dir):
    """An update's TagResource reaches CloudWatch (made), a gateway answers 504, and SIGTERM comes then. The failure
    said "its tags were not written: gpudash:sha256 still holds the evidence of gpudash's earlier write" while it
    held the new one; now: whether the evidence was tagged is not known."""
    proxy, client, apply = proxied
    published()
    before = {t["Key"]: t["Value"] for t in _tags(client, NAME)}["gpudash:sha256"]
    proxy.inject(fault("TagResource", "gateway", status=504, body=GATEWAY,
                       callback=lambda: os.kill(os.getpid(), signal.SIGTERM)))
    code, report, stderr = apply("--config", str(project_dir(WARMER)))
    failed = {item["name"]: item for item in report["failed"]}
    assert code == 143 and {t["Key"]: t["Value"] for t in _tags(client, NAME)}["gpudash:sha256"] != before
    assert failed[NAME]["written"] is True and "its tags were not written" not in failed[NAME]["error"], failed
    assert "whether gpudash's evidence of this write was tagged onto it is not known" in failed[NAME]["error"]


def test_taking_back_evidence_does_not_name_an_owner_the_alarm_no_longer_has(proxied):
    """A create read back otherwise than sent; UntagResource is answered, and a person takes the alarm over
    (ManagedBy=team-ml) before the read that shows the untag. The failure said "the alarm exists, tagged
    ManagedBy=gpudash without gpudash:sha256 (taken back ...)"; it now says the tags read, not gpudash's."""
    proxy, client, apply = proxied

    def person(body: bytes) -> bytes:  # after CloudWatch untagged, before its answer reaches gpudash
        taken_over(client, NAME)
        return body

    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=threshold_lowered(NAME)),
                 fault("UntagResource", "rewrite", callback=person))
    code, report, stderr = apply()
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 3 and {t["Key"]: t["Value"] for t in _tags(client, NAME)}["ManagedBy"] == "team-ml"
    assert "tagged ManagedBy=gpudash" not in errors[NAME], errors[NAME]
    assert "not gpudash's (ManagedBy=team-ml," in errors[NAME], errors[NAME]


@pytest.mark.parametrize("field, garble", [("Dimensions", [{"Value": "x"}]), ("Threshold", "high"),
                                           ("AlarmActions", [7, "arn:aws:sns:x"])],
                         ids=["a dimension without its Name", "a threshold that is not a number",
                              "an action that is not a string"])
def test_a_read_back_that_is_not_a_valid_answer_is_a_failure_and_the_writes_made_are_reported(proxied, published,
                                                                                            project_dir, field, garble):
    """An alarm's read-back (DescribeAlarms) answers it with a dimension without its Name (the
    API's model requires it); only AlarmName/AlarmArn were checked and ownership.alarm_fields read d["Name"]: seen
    "internal error: KeyError: 'Name'", exit 4, no report, after two dashboards and the alarm (90) were written.
    Expected: a remote failure (exit 3) for that alarm, and a report listing the dashboards as written. (The update's
    own read of its fields right before its write gets the garbled answer too: nothing is written to the alarm.) So
    too an alarm's Threshold a string, or an action not a string (the model: a double, a list of strings), which
    alarm_fields reads with float() and sorted(): seen "internal error: ValueError" / "TypeError", exit 4."""
    proxy, client, apply = proxied
    published()

    def garbled(body: bytes) -> bytes:
        answer = json.loads(body)
        for alarm in answer.get("MetricAlarms", []):
            if alarm["AlarmName"] == NAME:
                alarm[field] = garble
        return json.dumps(answer).encode()

    proxy.inject(Rule(path="/", operation="DescribeAlarms", action="rewrite", times=ALWAYS, skip=1,
                      contains=b'"AlarmNames"', callback=garbled))  # the batch's read passes; the read-back not
    code, report, stderr = apply("--config", str(project_dir(WARMER)))
    assert code == 3 and "internal error" not in stderr, stderr
    assert DASHBOARD in report["written"], report
    assert NAME in {item["name"] for item in report["failed"]}, report
    assert alarms(client)[NAME]["Threshold"] == 87.0  # not an answer before its write: not written


class _Lagging(Rule):
    """Every read of `operation` naming `name` passes, and is kept, until a write of it is sent (`written`, filled by
    a "before" rule on the write); the first read after it is answered with the last one kept: a read that has not
    caught up with the write. (Not there before: not there in it.)"""

    def __init__(self, operation: str, name: str, written: list):
        super().__init__(path="/", operation=operation, action="rewrite", times=ALWAYS,
                         contains=json.dumps(name).encode(), callback=self._answer)
        self.written, self.kept, self.lagged = written, None, 0

    def _answer(self, body: bytes) -> bytes:
        if not self.written:
            self.kept = body
            return body
        if self.lagged:
            return body
        self.lagged += 1
        return self.kept


@pytest.mark.parametrize("kind", ["an alarm update", "an alarm create", "a dashboard update"])
def test_a_read_back_that_has_not_caught_up_with_the_write_is_read_again(proxied, published, project_dir, kind):
    """The first read right after a write shows the object as it was before it (AWS documents no freshness for
    DescribeAlarms or GetDashboard), the next read shows the write. Tag read-backs were read once more a second later;
    field and body read-backs were not: "the write did not take effect", exit 3, for a write that had. Now they are
    too: written, exit 0."""
    proxy, client, apply = proxied
    written: list[bool] = []
    config = []
    if kind != "an alarm create":
        published()
        fresh(proxy)
        config = ["--config", str(project_dir(WARMER))]
    write, read, name = (("PutDashboard", "GetDashboard", DASHBOARD) if kind == "a dashboard update" else
                         ("PutMetricAlarm", "DescribeAlarms", NAME))
    lagging = _Lagging(read, name, written)
    proxy.inject(fault(write, "before", naming=name, callback=lambda: written.append(True)), lagging)
    code, report, stderr = apply(*config)
    assert written and lagging.lagged == 1, "the lagging read was not made"
    assert code == 0 and name in report["written"] and report["failed"] == [], report["failed"]

"""A person's composite alarm under a name gpudash creates, or in gpudash's name form: CloudWatch keeps one alarm of a
name whatever its kind, and DescribeAlarms lists composite alarms only when AlarmTypes asks for them. gpudash writes
metric alarms alone: it never writes over a composite alarm nor deletes one, with --force too, and never reads a name a
listing of metric alarms leaves out as free. moto holds composite alarms and lists them by AlarmTypes as the API
reference says (tests/support/moto_server.py)."""

from __future__ import annotations

import json

import pytest

from generator.markers import ALARM_OWNER_TAG, ALARM_PROJECT_TAG
from tests.support.cloudwatch_world import (ALWAYS, FOREIGN, RETIRED_EDITED, TWO_CLUSTERS, alarms, default_desired,
                                            fault, fresh, other_cluster, snapshot, writes)
from tests.support.fault_proxy import Rule

RULE = 'ALARM("gpudash-gpu-cluster-gpu-temp-critical-critical") AND ALARM("team-ml-queue-backlog")'
# a person's copy of gpudash's marks on it: a composite alarm is never gpudash's, whatever it carries
COPIED_MARKS = [ALARM_OWNER_TAG, {"Key": ALARM_PROJECT_TAG, "Value": "test"}]
HEAT = "gpudash-gpu-cluster-heat-with-backlog"  # in gpudash's name form, defined by no settings


def composite(client, name: str = FOREIGN, tags=()) -> None:
    client.put_composite_alarm(AlarmName=name, AlarmRule=RULE, AlarmDescription="on-call: GPU heat with a backlog",
                               Tags=list(tags))


def composites(client) -> dict:
    """Every composite alarm: its rule, description and tags."""
    listed = client.describe_alarms(AlarmTypes=["CompositeAlarm"])["CompositeAlarms"]
    return {a["AlarmName"]: (a["AlarmRule"], a.get("AlarmDescription"),
                             client.list_tags_for_resource(ResourceARN=a["AlarmArn"])["Tags"]) for a in listed}


def test_a_composite_alarm_holding_a_name_gpudash_creates_is_refused_with_force_too(proxied, cli):
    """A person's composite alarm holds the name of an alarm gpudash defines. DescribeAlarms was asked for metric
    alarms alone (AlarmTypes=MetricAlarm), which leaves composite alarms out: the plan read the name as free (create),
    and `apply` sent PutMetricAlarm under it (moto then replaced the composite alarm with gpudash's metric alarm; what
    CloudWatch does there is not documented). Now the plan lists composite alarms too: the name is held (plan exit 1,
    saying so), and apply refuses it, --force too (exit 1, nothing sent under that name), writing the others."""
    proxy, client, apply = proxied
    composite(client, tags=COPIED_MARKS)
    before = composites(client)
    code, stdout, stderr = cli("plan", "--no-grafana")
    assert code == 1 and "Traceback" not in stderr, stderr
    assert f"held      cloudwatch alarm {FOREIGN} [us-east-1]" in stdout, stdout
    assert "a composite alarm holds this name (its rule: ALARM(" in stdout and "--force or not" in stdout, stdout
    fresh(proxy)
    code, report, stderr = apply("--force")
    assert code == 1 and report["refused"] == [FOREIGN] and report["failed"] == [], (report, stderr)
    assert FOREIGN not in report["written"] and len(report["written"]) > 10, report
    assert f"whose name another kind of alarm holds ({FOREIGN})" in stderr and "alarms.name_prefix" in stderr, stderr
    assert composites(client) == before and FOREIGN not in alarms(client)
    assert writes(proxy).count("PutMetricAlarm") == len(alarms(client))  # none under the composite's name


def test_a_composite_alarm_made_between_plan_and_apply_is_not_overwritten(proxied):
    """A person makes a composite alarm under a name gpudash is about to create, after the plan: the create's last
    look (DescribeAlarms by name, right before PutMetricAlarm) asked for metric alarms alone and saw nothing, and the
    create went over it. Now the look sees it: that alarm fails, not overwritten, naming the composite alarm."""
    from generator.clients.cloudwatch import CloudWatch
    from generator.targets import cloudwatch_sync

    proxy, client, apply = proxied
    desired = default_desired()
    cloudwatch = CloudWatch(endpoint_url=proxy.url)
    changes = cloudwatch_sync.plan(cloudwatch, desired)
    composite(client)
    before = composites(client)
    outcomes = cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                     force=True, prune=False, dry_run=False)
    failed = [o for o in outcomes if o.error]
    assert [o.change.name for o in failed] == [FOREIGN], [o.error for o in failed]
    assert "a composite alarm holds this name" in failed[0].error and "not overwritten" in failed[0].error
    assert composites(client) == before and FOREIGN not in alarms(client)


def test_a_composite_alarm_in_gpudash_s_name_form_is_never_pruned(published, aws):
    """A person's composite alarm named in gpudash's form, not defined by these settings, carrying a copy of gpudash's
    ownership and project tags: listed now beside the metric alarms, it is never a prune's (gpudash deletes metric
    alarms it wrote alone), with --force too, and fails nothing."""
    client, apply = aws
    published()
    composite(client, HEAT, COPIED_MARKS)
    before = composites(client)
    code, report, stderr = apply("--prune", "--force")
    assert code == 0 and report["written"] == [] and report["failed"] == [], (report, stderr)
    assert composites(client) == before


def test_a_composite_listing_denied_says_which_permission_lists_composite_alarms(proxied):
    """DescribeAlarms lists composite alarms only to a cloudwatch:DescribeAlarms permission scoped to "*" (API
    reference): one scoped to gpudash's alarms is denied the listing gpudash now asks for. The failure (exit 3,
    nothing written) says which scope to grant, never that the permission is missing."""
    proxy, client, apply = proxied
    proxy.inject(fault("DescribeAlarms", "status", status=400, body=(
        b'{"__type": "AccessDenied", "message": "User is not authorized to perform: cloudwatch:DescribeAlarms"}')))
    code, report, stderr = apply()
    assert code == 3 and writes(proxy) == [] and "Traceback" not in stderr, stderr
    assert 'cloudwatch:DescribeAlarms on Resource "*"' in stderr and "composite" in stderr, stderr


def _composite_listed(alarm):
    """A proxy rule adding `alarm` (or `alarm(answer)`) to every DescribeAlarms answer's CompositeAlarms."""
    def rewrite(body: bytes) -> bytes:
        answer = json.loads(body)
        answer.setdefault("CompositeAlarms", []).append(alarm(answer) if callable(alarm) else alarm)
        return json.dumps(answer).encode()
    return fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=rewrite)


def _arn(name: str) -> str:
    return f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{name}"


@pytest.mark.parametrize("alarm, said", [
    ({"AlarmName": FOREIGN, "AlarmRule": RULE}, "an item of CompositeAlarms without AlarmName, AlarmArn"),
    ({"AlarmName": "team-ml-heat", "AlarmArn": _arn("team-ml-heat")},
     "a name that does not start with 'gpudash-' (team-ml-heat)"),
    ({"AlarmName": HEAT, "AlarmArn": _arn(FOREIGN)}, f"the alarm {HEAT} listed with an AlarmArn that does not name it"),
    (lambda answer: {**answer["MetricAlarms"][0], "AlarmRule": RULE}, "an item twice on one page"),
], ids=["without-arn", "outside-the-prefix", "another-alarms-arn", "a-metric-alarm-twice"])
def test_a_composite_alarm_listing_that_is_not_an_api_answer_writes_nothing(proxied, published, alarm, said):
    """A DescribeAlarms answer whose composite alarms CloudWatch cannot list (one without its ARN, one the prefix asked
    for does not name, one with another alarm's ARN, a name listed as both kinds: CloudWatch keeps one alarm of a
    name) is not an answer: exit 3, nothing written, never a listing read as far as it fits."""
    proxy, client, apply = proxied
    published()
    before = snapshot(client)
    fresh(proxy)
    proxy.inject(_composite_listed(alarm))
    code, report, stderr = apply("--prune", "--force")
    assert code == 3 and said in stderr and "Traceback" not in stderr, stderr
    assert writes(proxy) == [] and snapshot(client) == before


def _without_composites(body: bytes) -> bytes:
    """A DescribeAlarms answer as a server that ignores AlarmTypes gives it (an old CloudWatch stand-in, or a proxy
    rewriting answers to the metric alarms alone): no CompositeAlarms."""
    answer = json.loads(body)
    answer.pop("CompositeAlarms", None)
    return json.dumps(answer).encode()


def test_an_answer_without_the_composite_alarms_it_was_asked_for_writes_nothing(proxied):
    """Every DescribeAlarms asks for composite alarms, and CloudWatch answers a CompositeAlarms list beside MetricAlarms
    (an empty one where it holds none), as it answers MetricAlarms. An answer without it (a server or proxy ignoring
    AlarmTypes) was read as "no composite alarm": the plan said create under a person's composite alarm's name and
    apply --force sent PutMetricAlarm over it (moto replaced the composite alarm). It is not an answer: exit 3,
    nothing written, the composite alarm as it was."""
    proxy, client, apply = proxied
    composite(client)
    before = composites(client)
    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=_without_composites))
    code, report, stderr = apply("--force")
    assert code == 3 and "Traceback" not in stderr, (code, report, stderr)
    assert "with something that is not an API answer (no CompositeAlarms)" in stderr, stderr
    assert writes(proxy) == [] and composites(client) == before and FOREIGN not in alarms(client)


QUERY = "fields @message | filter @message like /Xid/"
LOG_ALARM = {  # a person's log alarm (PutLogAlarm) as DescribeAlarms lists it under LogAlarms
    "AlarmName": FOREIGN, "AlarmArn": _arn(FOREIGN), "StateValue": "OK", "ActionsEnabled": True,
    "AlarmDescription": "on-call: Xid errors in the driver log", "QueryResultsToEvaluate": 3,
    "QueryResultsToAlarm": 1, "Threshold": 0.0, "ComparisonOperator": "GreaterThanThreshold",
    "ScheduledQueryConfiguration": {
        "QueryString": QUERY, "AggregationExpression": "count(*)", "LogGroupIdentifiers": ["/gpu/driver"],
        "ScheduledQueryRoleARN": "arn:aws:iam::123456789012:role/alarms-query",
        "ScheduleConfiguration": {"ScheduleExpression": "rate(5 minutes)", "StartTimeOffset": 300}}}


def _log_alarm_listed(body: bytes) -> bytes:
    answer = json.loads(body)
    answer.setdefault("LogAlarms", []).append(LOG_ALARM)
    return json.dumps(answer).encode()


def test_a_log_alarm_holding_a_name_gpudash_creates_is_refused_with_force_too(proxied, cli):
    """CloudWatch has a third kind of alarm, the log alarm (PutLogAlarm: a name 'unique within the account and
    Region', whatever its kind), which DescribeAlarms lists only when AlarmTypes names LogAlarm. gpudash asked for
    metric and composite alarms: a person's log alarm under a name these settings define was read as free, the plan
    said create, and apply --force sent PutMetricAlarm under it. moto holds no log alarm: the proxy lists one, as
    CloudWatch would, in every DescribeAlarms that asks for its name or gpudash's prefix. Now it is held as a composite
    alarm is: plan exit 1, apply --force refuses it (exit 1, nothing sent under its name), the others written."""
    proxy, client, apply = proxied
    for asked in (FOREIGN, "gpudash-"):  # by name, and by gpudash's prefix (nothing else asks for it)
        proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=_log_alarm_listed, naming=asked))
    code, stdout, stderr = cli("plan", "--no-grafana")
    assert code == 1 and "Traceback" not in stderr, stderr
    assert f"held      cloudwatch alarm {FOREIGN} [us-east-1]" in stdout, stdout
    assert "a log alarm holds this name (its query: fields @message" in stdout, stdout
    code, report, stderr = apply("--force")
    assert code == 1 and report["refused"] == [FOREIGN] and report["failed"] == [], (report, stderr)
    assert len(report["written"]) > 10 and FOREIGN not in alarms(client), report
    assert f"whose name another kind of alarm holds ({FOREIGN})" in stderr, stderr


def _without_log_alarms(body: bytes) -> bytes:
    answer = json.loads(body)
    answer.pop("LogAlarms", None)
    return json.dumps(answer).encode()


def test_an_answer_without_the_log_alarms_it_was_asked_for_writes_nothing(proxied):
    """Every DescribeAlarms asks for log alarms too, and CloudWatch answers the kinds it is asked for as lists (an
    empty one where it holds none). A proxy or server stripping LogAlarms hid a person's log alarm under a name gpudash
    defines: the answer was read as "no log alarm", and apply --force wrote every alarm (a PutMetricAlarm under the
    log alarm's name). It is not an answer: exit 3, nothing written. (A CloudWatch that refuses the LogAlarm type is
    asked without it, and its answers need no LogAlarms:
    test_a_region_that_refuses_the_log_alarm_type_is_read_without_it.)"""
    proxy, client, apply = proxied
    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=_without_log_alarms))
    code, report, stderr = apply("--force")
    assert code == 3 and "Traceback" not in stderr, (code, report, stderr)
    assert "with something that is not an API answer (no LogAlarms)" in stderr, stderr
    assert writes(proxy) == [] and alarms(client) == {}


def test_a_region_that_refuses_the_log_alarm_type_is_read_without_it(proxied, published, cli):
    """A CloudWatch that has no log alarms (a partition or Region they have not reached, an older stand-in) may refuse
    AlarmTypes naming LogAlarm as outside the values it takes: every plan failed there. Such a CloudWatch holds no log
    alarm, so nothing can hold a name as one: its alarms are read again without that type, a note says so, and the plan
    is the one it is elsewhere (here: nothing to do)."""
    proxy, client, apply = proxied
    published()
    fresh(proxy)
    proxy.inject(fault("DescribeAlarms", "status", times=ALWAYS, status=400, naming="LogAlarm", body=(
        b'{"__type": "ValidationError", "message": "1 validation error detected: Value \'LogAlarm\' at '
        b'\'alarmTypes.3.member\' failed to satisfy constraint: Member must satisfy enum value set: '
        b'[CompositeAlarm, MetricAlarm]"}')))
    code, stdout, stderr = cli("plan", "--no-grafana")
    assert code == 0 and "Traceback" not in stderr, (code, stdout, stderr)
    assert "CloudWatch in us-east-1 refuses AlarmTypes LogAlarm" in stderr, stderr


@pytest.mark.parametrize("message", [
    "LogAlarm cannot be listed together with AlarmNamePrefix in this Region",
    "1 validation error detected: Value 'gpudash-' at 'alarmNamePrefix' failed to satisfy constraint: Member must "
    "satisfy enum value set: [CompositeAlarm, LogAlarm, MetricAlarm]",
], ids=["another-refusal-naming-it", "its-enum-lists-it"])
def test_a_refusal_naming_log_alarm_that_is_not_the_type_unknown_fails_the_plan(proxied, published, cli, message):
    """Any ValidationError whose words named LogAlarm was read as "this CloudWatch has no log alarms": the listing was
    asked again without the type for the rest of the run, so a CloudWatch that has log alarms and refused the request
    for another reason had them unread, and a name one holds read as free. Only a refusal of the value itself (LogAlarm
    outside the values the API takes, as an enum refusal lists them) is that evidence now; any other fails the plan
    (exit 3), as any refusal of a listing does."""
    proxy, client, apply = proxied
    published()
    fresh(proxy)
    body = json.dumps({"__type": "ValidationError", "message": message}).encode()
    proxy.inject(fault("DescribeAlarms", "status", times=ALWAYS, status=400, naming="LogAlarm", body=body))
    code, stdout, stderr = cli("plan", "--no-grafana")
    assert code == 3 and "Traceback" not in stderr, (code, stdout, stderr)
    assert "refuses AlarmTypes LogAlarm" not in stderr and "ValidationError" in stderr, stderr


class _DeletesNamed(Rule):
    """A proxy rule that takes no request: `names` gets each alarm name a DeleteAlarms request names."""

    def __init__(self):
        super().__init__(path="/")
        self.names: list[str] = []

    def matches(self, method, path, body, operation="", region="", query="") -> bool:
        if operation == "DeleteAlarms":
            self.names.extend(json.loads(body).get("AlarmNames", []))
        return False


DEPENDING = "team-ml-gpu-heat-paging"  # a person's composite alarm, outside gpudash's name form


def _kept_through_prune(proxied, cli, said: str) -> _DeletesNamed:
    """Plan (exit 1: RETIRED_EDITED `kept`, its line saying `said`), then apply --prune without and with --force: each
    exit 1, RETIRED_EDITED refused, no DeleteAlarms naming it, the alarm still there; the deletes sent."""
    proxy, client, apply = proxied
    fresh(proxy)
    code, stdout, stderr = cli("plan", "--no-grafana", "--removed-cluster", "other")
    assert code == 1 and "Traceback" not in stderr, stderr
    assert f"kept      cloudwatch alarm {RETIRED_EDITED} [us-east-1]" in stdout, stdout
    assert said in stdout, stdout
    deletes = _DeletesNamed()
    proxy.inject(deletes)
    for force in ((), ("--force",)):
        code, report, stderr = apply("--prune", "--removed-cluster", "other", *force)
        assert code == 1 and report["refused"] == [RETIRED_EDITED] and report["failed"] == [], (report, stderr)
        assert DEPENDING in stderr and "Traceback" not in stderr, stderr
        assert RETIRED_EDITED not in deletes.names, deletes.names
        assert sorted(name for name in alarms(client) if other_cluster(name)) == [RETIRED_EDITED]
    return deletes


@pytest.mark.parametrize("named", [f'ALARM("{RETIRED_EDITED}")', f"ALARM({RETIRED_EDITED})",
                                   f'AT_LEAST(1, ALARM, ("{_arn(RETIRED_EDITED)}", team-ml-queue-backlog))'],
                         ids=["quoted", "bare", "arn-in-at-least"])
def test_a_retired_alarm_a_composite_alarm_depends_on_is_kept_naming_the_composite(proxied, published, project_dir,
                                                                                   cli, named):
    """A person's composite alarm names an alarm these settings no longer define. CloudWatch deletes no alarm a
    composite alarm depends on (DeleteAlarms answers ValidationError "Cannot delete ... as there are composite
    alarm(s) depending on it", deleting none of those it names): the plan said delete, and every `apply --prune`
    sent the delete and failed (exit 3) with CloudWatch's words, which name no composite alarm. Now the plan reads
    the Region's composite alarms where it has alarms to prune: that alarm is `kept`, naming the composite alarm and
    what to change; apply --prune sends no delete for it (exit 1, refused, --force too), deletes the others, and
    deletes it once the composite alarm's rule no longer names it."""
    _, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    client.put_composite_alarm(AlarmName=DEPENDING, AlarmRule=f"{named} OR ALARM(team-ml-queue-backlog)",
                               AlarmDescription="on-call: GPU heat with a backlog")
    retired = sorted(name for name in alarms(client) if other_cluster(name))
    deletes = _kept_through_prune(proxied, cli, f"the composite alarm {DEPENDING} depends on it")
    assert sorted(deletes.names) == [name for name in retired if name != RETIRED_EDITED]
    client.put_composite_alarm(AlarmName=DEPENDING, AlarmRule="ALARM(team-ml-queue-backlog)")  # the person's edit
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 0 and report["written"] == [RETIRED_EDITED], (report, stderr)
    assert RETIRED_EDITED not in alarms(client)


class _MadeAtItsDelete(Rule):
    """A proxy rule that takes no request: it has `make()` called once, when a DeleteAlarms naming `name` passes."""

    def __init__(self, name: str, make):
        super().__init__(path="/")
        self.name, self.make, self.made = name, make, False

    def matches(self, method, path, body, operation="", region="", query="") -> bool:
        if operation == "DeleteAlarms" and self.name in json.loads(body).get("AlarmNames", []) and not self.made:
            self.made = True
            self.make()
        return False


@pytest.mark.parametrize("when, depends", [("before-its-deletes", "rule"), ("before-its-deletes", "suppressor"),
                                           ("at-its-delete", "rule")])
def test_a_composite_alarm_made_after_the_plan_that_keeps_an_alarm_from_its_delete_is_named(proxied, project_dir,
                                                                                          published, when, depends):
    """A person makes a composite alarm naming an alarm to prune after the plan read none: in its rule, or as its
    actions suppressor. The Region's composite alarms are read again right before its deletes (the writes before them
    may take minutes): that alarm fails, its error naming the composite alarm and what to change; the other deletes go
    on. Before, the look right before each delete read the alarm alone, and a suppressor's delete went through (moto;
    CloudWatch's answer to it is not documented): the person's new composite alarm lost its suppressor at once. One
    made as the delete is sent is refused by CloudWatch (ValidationError), said naming it, never in CloudWatch's words
    alone."""
    from generator.clients.cloudwatch import CloudWatch
    from generator.targets import cloudwatch_sync

    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    desired = default_desired()
    cloudwatch = CloudWatch(endpoint_url=proxy.url)
    changes = cloudwatch_sync.plan(cloudwatch, desired, removed=("other",))
    made = {"rule": {"AlarmRule": f'ALARM("{RETIRED_EDITED}")'},
            "suppressor": {"AlarmRule": "ALARM(team-ml-queue-backlog)", "ActionsSuppressor": RETIRED_EDITED,
                           "ActionsSuppressorWaitPeriod": 60, "ActionsSuppressorExtensionPeriod": 60}}[depends]

    def make():
        client.put_composite_alarm(AlarmName=DEPENDING, **made)
    if when == "at-its-delete":
        proxy.inject(_MadeAtItsDelete(RETIRED_EDITED, make))
    else:
        make()
    outcomes = cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                     force=False, prune=True, dry_run=False)
    failed = [o for o in outcomes if o.error]
    assert [o.change.name for o in failed] == [RETIRED_EDITED], [o.error for o in failed]
    assert f"the composite alarm {DEPENDING} depends on it" in failed[0].error, failed[0].error
    assert (("CloudWatch refused DeleteAlarms" in failed[0].error) == (when == "at-its-delete")), failed[0].error
    assert [name for name in alarms(client) if other_cluster(name)] == [RETIRED_EDITED]


@pytest.mark.parametrize("worded", ["as CloudWatch words it", "otherwise"])
def test_a_delete_of_several_alarms_refused_for_a_composite_alarm_holds_back_only_the_one_it_names(
        proxied, project_dir, published, monkeypatch, worded):
    """DeleteAlarms names one alarm a call (cloudwatch_sync.DELETE_GROUP); one naming several, refused because a
    composite alarm made at its delete names one of them, failed every alarm of the call as "a composite alarm depends
    on it" (one listing of composite alarms per alarm), and deleted none: CloudWatch refuses the whole call. Now the
    alarms a composite alarm depends on fail, naming it, and the others are deleted in a call without them; where
    CloudWatch's refusal names no alarm, the composite alarms read tell which."""
    from generator.clients.cloudwatch import CloudWatch
    from generator.targets import cloudwatch_sync

    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    desired = default_desired()
    cloudwatch = CloudWatch(endpoint_url=proxy.url)
    changes = cloudwatch_sync.plan(cloudwatch, desired, removed=("other",))
    retired = sorted(c.name for c in changes if c.action == cloudwatch_sync.DELETE)
    assert len(retired) > 2 and RETIRED_EDITED in retired, retired
    monkeypatch.setattr(cloudwatch_sync, "DELETE_GROUP", len(retired))  # every delete in one call
    proxy.inject(_MadeAtItsDelete(RETIRED_EDITED, lambda: client.put_composite_alarm(
        AlarmName=DEPENDING, AlarmRule=f'ALARM("{RETIRED_EDITED}")')))
    if worded == "otherwise":  # the first call refused in other words, naming no alarm
        proxy.inject(fault("DeleteAlarms", "status", status=400, body={
            "__type": "ValidationError", "message": "Deleting alarms that composite alarms depend on is not allowed"}))
    outcomes = cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                     force=False, prune=True, dry_run=False)
    failed = {o.change.name: o.error for o in outcomes if o.error}
    assert list(failed) == [RETIRED_EDITED], failed
    assert f"the composite alarm {DEPENDING} depends on it" in failed[RETIRED_EDITED], failed
    assert [name for name in alarms(client) if other_cluster(name)] == [RETIRED_EDITED]


@pytest.mark.parametrize("by", ["name", "arn"])
def test_a_retired_alarm_a_composite_alarm_suppresses_its_actions_by_is_kept_naming_the_composite(
        proxied, published, project_dir, cli, by):
    """A person's composite alarm names an alarm these settings no longer define as its ActionsSuppressor (not in its
    rule): its actions are held while that alarm is in ALARM (a maintenance window, a dependency down). The plan read
    composite alarms' rules alone: it said `delete`, and apply --prune deleted the alarm (CloudWatch's answer to that
    delete is not documented; moto's is to delete it), so the person's composite alarm lost its suppressor and pages
    through what it was made to hold. The composite alarm depends on it as much as on an alarm of its rule: `kept`,
    naming the composite alarm, no delete sent, --force too."""
    _, client, _ = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    client.put_composite_alarm(AlarmName=DEPENDING, AlarmRule="ALARM(team-ml-queue-backlog)",
                               ActionsSuppressor=RETIRED_EDITED if by == "name" else _arn(RETIRED_EDITED),
                               ActionsSuppressorWaitPeriod=60, ActionsSuppressorExtensionPeriod=60)
    suppressor = client.describe_alarms(AlarmTypes=["CompositeAlarm"])["CompositeAlarms"][0]["ActionsSuppressor"]
    assert RETIRED_EDITED in suppressor  # (the model lists it, as CloudWatch does)
    _kept_through_prune(proxied, cli, f"the composite alarm {DEPENDING} depends on it (its actions suppressor)")


def test_composite_alarms_unread_right_before_the_deletes_delete_none(proxied, project_dir, published):
    """The Region's composite alarms are read again right before its deletes: where that listing fails (here, every
    attempt answered 500), nothing shows an alarm to prune free of them, so none is deleted, each failed with the
    listing's error (exit 3); the writes before are made."""
    from generator.clients.cloudwatch import CloudWatch
    from generator.targets import cloudwatch_sync

    proxy, client, _ = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    desired = default_desired()
    cloudwatch = CloudWatch(endpoint_url=proxy.url)
    changes = cloudwatch_sync.plan(cloudwatch, desired, removed=("other",))
    retired = sorted(name for name in alarms(client) if other_cluster(name))
    proxy.inject(fault("DescribeAlarms", "status", times=ALWAYS, status=500, naming=["CompositeAlarm"]))
    outcomes = cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                     force=False, prune=True, dry_run=False)
    failed = sorted(o.change.name for o in outcomes if o.error)
    assert failed == retired and all("composite alarms" in o.error for o in outcomes if o.error), failed
    assert sorted(name for name in alarms(client) if other_cluster(name)) == retired
    assert any(o.done and o.change.action != "delete" for o in outcomes)

"""A CloudWatch write retried after an attempt that failed (moto behind the fault proxy, boto3). CloudWatch's writes
are not conditional, so the object is read again before each retry: a person's change made between two attempts is
never overwritten by the resend (reported, exit 3), and a write an earlier attempt made is not sent again. Nor is
a create that turned out to update an alarm a person made just before it reported written."""

from __future__ import annotations

import json

import pytest

from tests.support.cloudwatch_world import (ALWAYS, TWO_CLUSTERS, CreateOrder, DescribedNames, alarms, at_every_wait,
                                            edit_in_console, fault, foreign_alarm, taken_over, threshold_lowered,
                                            without_query_periods)
from tests.support.fault_proxy import Rule
from tests.support.cloudwatch_world import aws, moto, proxied, published  # noqa: F401 (fixtures)

NAME = "gpudash-gpu-cluster-gpu-temp-critical-critical"
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
    """--prune deletes the alarms of a removed cluster (one per DeleteAlarms); the DeleteAlarms naming one of them is
    answered 503 (not made) and a person changes that alarm (threshold 42) before the retry. The resend deleted it;
    now the alarm is read again first: not deleted, reported failed (exit 3), the person's alarm as they left it;
    the others are deleted."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    retired = sorted(name for name in alarms(client) if name.startswith("gpudash-other-"))
    config = str(project_dir(""))
    proxy.inject(fault("DeleteAlarms", "status", status=503, body={"__type": "ServiceUnavailable"}, naming=RETIRED,
                       callback=lambda: edit_in_console(client, name=RETIRED, threshold=42.0)))
    code, report, stderr = apply("--config", config, "--prune", "--removed-cluster", "other")
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 3 and RETIRED in retired and list(errors) == [RETIRED], stderr
    assert "changed by someone else meanwhile" in errors[RETIRED] and "not deleted" in errors[RETIRED], errors
    assert alarms(client)[RETIRED]["Threshold"] == 42.0
    assert sorted(n for n in alarms(client) if n in retired) == sorted(errors)  # the other groups went


def _tags(client, name):
    return {t["Key"]: t["Value"] for t in client.list_tags_for_resource(ResourceARN=alarms(client)[name]["AlarmArn"])[
        "Tags"]}


def test_a_persons_tag_change_between_two_attempts_of_a_tag_write_is_not_overwritten(proxied, published, project_dir):
    """An update: PutMetricAlarm, read back, then TagResource with the evidence of this write. The first TagResource is
    answered 503 (not made) and before the retry a person gives the alarm to their team (ManagedBy=team-ml). The
    retry was sent blind: it tagged gpudash's evidence onto the person's alarm, reported written, exit 0. Now the
    alarm's tags are read first: neither as sent nor as before, so they are not written; the write is reported done
    and its tags failed (exit 3), and the alarm carries the person's tags and gpudash's earlier evidence."""
    proxy, client, apply = proxied
    published()
    before = _tags(client, NAME)

    proxy.inject(fault("TagResource", "status", status=503, body={"__type": "ServiceUnavailable"},
                       callback=lambda: taken_over(client, NAME)))
    warning = project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n")
    code, report, stderr = apply("--config", str(warning))
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 3 and NAME in report["written"] and list(errors) == [NAME], stderr
    assert "was to be sent again, but read again first" in errors[NAME] and \
        "changed by someone else meanwhile" in errors[NAME], errors
    assert _tags(client, NAME) == {**before, "ManagedBy": "team-ml"} and alarms(client)[NAME]["Threshold"] == 90.0


def test_a_persons_takeover_between_two_attempts_of_an_alarm_update_is_not_overwritten(proxied, published,
                                                                                       project_dir):
    """An update (threshold 87 -> 90): the first PutMetricAlarm is answered 503 (not made) and before the retry a
    person gives the alarm to their team (ManagedBy=team-ml), its fields untouched. The look before the retry read
    the fields only: the resend wrote 90 onto the person's alarm, gpudash's evidence was tagged onto it, reported
    written, exit 0. Now the look reads the alarm's tags too: neither as before nor as sent, so it is not sent
    again; reported not overwritten (exit 3); the alarm keeps 87, the person's owner and gpudash's old evidence."""
    proxy, client, apply = proxied
    published()
    before = _tags(client, NAME)
    proxy.inject(fault("PutMetricAlarm", "status", status=503, body={"__type": "ServiceUnavailable"}, naming=NAME,
                       callback=lambda: taken_over(client, NAME)))
    code, report, stderr = apply("--config", str(project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, "
                                                             "critical: 90}\n")))
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 3 and NAME not in report["written"] and list(errors) == [NAME], stderr
    assert "was to be sent again, but read again first" in errors[NAME] and \
        "changed by someone else meanwhile" in errors[NAME] and "not overwritten" in errors[NAME], errors
    assert alarms(client)[NAME]["Threshold"] == 87.0 and _tags(client, NAME) == {**before, "ManagedBy": "team-ml"}


def test_a_persons_tag_change_between_two_attempts_of_an_alarm_delete_is_not_deleted(proxied, published,
                                                                                     project_dir):
    """--prune deletes the alarms of a removed cluster (one per DeleteAlarms); the DeleteAlarms naming one of them is
    answered 503 (not made) and a person takes that alarm over (strips ManagedBy) before the retry. The look before
    the retry compared fields only, and the resend deleted the person's alarm; now it reads the alarm's tags too:
    not deleted, reported failed (exit 3); the others are deleted."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    retired = sorted(name for name in alarms(client) if name.startswith("gpudash-other-"))
    proxy.inject(fault("DeleteAlarms", "status", status=503, body={"__type": "ServiceUnavailable"}, naming=RETIRED,
                       callback=lambda: client.untag_resource(ResourceARN=alarms(client)[RETIRED]["AlarmArn"],
                                                              TagKeys=["ManagedBy"])))
    code, report, stderr = apply("--config", str(project_dir("")), "--prune", "--removed-cluster", "other")
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 3 and list(errors) == [RETIRED], stderr
    assert "changed by someone else meanwhile" in errors[RETIRED] and "not deleted" in errors[RETIRED], errors
    assert "ManagedBy" not in _tags(client, RETIRED)
    assert sorted(n for n in alarms(client) if n in retired) == sorted(errors)  # the others went


def test_a_persons_tag_change_between_two_attempts_of_taking_back_evidence_is_not_undone(proxied):
    """A create read back with another threshold than sent: its gpudash:sha256 (the hash of what was sent) is taken
    back with UntagResource. The first UntagResource is answered 503 (not made) and before the retry a person takes
    the alarm over (ManagedBy=team-ml). The retry was sent blind and untagged the person's alarm; now its tags are
    read first: neither as sent nor as before, so it is not sent again, and the failure says the evidence was not
    taken back (the next plan sees the alarm as the person's)."""
    proxy, client, apply = proxied

    proxy.inject(fault("DescribeAlarms", "rewrite", times=10**6, callback=threshold_lowered(NAME)),
                 fault("UntagResource", "status", status=503, body={"__type": "ServiceUnavailable"},
                       callback=lambda: taken_over(client, NAME)))
    code, report, stderr = apply()
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 3 and list(errors) == [NAME], stderr
    assert "could not be taken back" in errors[NAME] and "changed by someone else meanwhile" in errors[NAME], errors
    tags = _tags(client, NAME)
    assert tags["ManagedBy"] == "team-ml" and "gpudash:sha256" in tags


@pytest.mark.parametrize("lagging_reads", [1, 2])
def test_a_create_whose_tag_read_lags_is_not_reported_as_a_persons_alarm(proxied, lagging_reads):
    """Right after a create, ListTagsForResource answers no tags (its freshness is not documented: a read that has
    not caught up with the create). That was reported failed, saying an alarm of this name was there before the
    create, exit 3. Now fewer tags than sent are read once more a second later (on the deadline's clock): caught up,
    the create is written (exit 0); still none, it is reported written with its tags unconfirmed, saying both
    possible causes (exit 3), and nothing more is tagged onto it."""

    proxy, client, apply = proxied
    proxy.inject(Rule(path="/", operation="ListTagsForResource", action="body", times=lagging_reads,
                      contains=NAME.encode(), body=json.dumps({"Tags": []}).encode()))
    code, report, stderr = apply()
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert NAME in report["written"] and "was there before it (made" not in stderr, stderr
    if lagging_reads == 1:
        assert code == 0 and errors == {}, stderr
    else:
        assert code == 3 and list(errors) == [NAME] and [f["written"] for f in report["failed"]] == [True], errors
        assert "its tags could not be confirmed" in errors[NAME] and "has not caught up" in errors[NAME]
        assert "an alarm of this name without those tags was there before it" in errors[NAME]
    assert _tags(client, NAME)["ManagedBy"] == "gpudash"


def test_a_console_edit_made_during_the_previous_alarms_tag_write_is_not_overwritten(proxied, published, project_dir):
    """An update's fields were taken from the previous alarm's read-back; that alarm's tag write (and its read-back)
    came after, so a console edit made meanwhile was overwritten, exit 0. The next alarm's fields are read anew after
    a tag write: the edit survives and is reported (exit 3)."""
    proxy, client, apply = proxied
    published()
    old = {n: a["Threshold"] for n, a in alarms(client).items() if "gpu-temp-high" in n}
    edited: dict[str, float] = {}

    def person():
        for n, a in alarms(client).items():
            if not edited and n in old and a["Threshold"] == old[n]:  # not yet written by gpudash
                edit_in_console(client, n, threshold=old[n] - 3)
                edited[n] = old[n] - 3

    proxy.inject(fault("TagResource", "before", times=1, callback=person))
    code, report, _ = apply("--config", str(project_dir("thresholds:\n  gpu_temp_celsius: {warning: 70, "
                                                          "critical: 85}\n")))
    assert edited and {n: alarms(client)[n]["Threshold"] for n in edited} == edited
    assert code == 3 and [f["name"] for f in report["failed"]] == list(edited), report["failed"]


def test_a_takeover_after_an_updates_fields_are_written_gets_no_evidence_tagged(proxied, published, project_dir):
    """An update (threshold 87 -> 90): PutMetricAlarm lands, and right after it a person gives the alarm to their team
    (ManagedBy=team-ml), before gpudash's TagResource with the evidence of this write. That TagResource was sent on
    the tags read before PutMetricAlarm: gpudash's new gpudash:sha256 went onto the person's alarm, reported written,
    exit 0. Now the alarm's own tags are read right before the TagResource: changed, so nothing is tagged; the
    fields write is reported done and its tags failed, saying why (exit 3)."""
    proxy, client, apply = proxied
    published()
    before = _tags(client, NAME)

    def person(body: bytes) -> bytes:  # after CloudWatch made the write, before its answer reaches gpudash
        taken_over(client, NAME)
        return body

    proxy.inject(fault("PutMetricAlarm", "rewrite", naming=NAME, callback=person))
    code, report, stderr = apply("--config", str(project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, "
                                                             "critical: 90}\n")))
    failed = {item["name"]: item for item in report["failed"]}
    assert code == 3 and NAME in report["written"] and list(failed) == [NAME], stderr
    assert failed[NAME]["written"] is True
    assert "ManagedBy=gpudash tag was removed or changed by someone else" in failed[NAME]["error"], failed
    assert "gpudash's evidence was not tagged onto it" in failed[NAME]["error"], failed
    assert _tags(client, NAME) == {**before, "ManagedBy": "team-ml"} and alarms(client)[NAME]["Threshold"] == 90.0
    assert [op for op in proxy.operations if op == "TagResource"] == []


def _made_and_kept(client, report, made: list[str], alone: bool = True) -> None:
    """Every alarm the person made keeps their threshold and is reported failed, not written: "created by someone
    else since the plan" (seen at its own look), never found after the fact; `alone`: no other alarm failed."""
    assert made, "the person made no alarm"
    assert [n for n in made if alarms(client)[n]["Threshold"] != 7.0] == [], f"{made} overwritten"
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert set(made) <= set(errors) and not set(made) & set(report["written"]), errors
    assert not alone or sorted(errors) == sorted(made), errors
    assert all("created by someone else since the plan; not overwritten" in errors[n] for n in made), errors


def _person(client, order: CreateOrder, made: list[str], when=lambda: True):
    """A person who creates the alarm the apply writes next (threshold 7, tagged team=ops) whenever `when()` holds."""
    def act() -> None:
        name = order.next()
        if name and name not in made and when():
            foreign_alarm(client, name=name, threshold=7.0)
            client.tag_resource(ResourceARN=alarms(client)[name]["AlarmArn"], Tags=[{"Key": "team", "Value": "ops"}])
            made.append(name)
    return act


def test_an_alarm_a_person_creates_while_the_previous_create_waits_its_turn_is_not_overwritten(
        proxied, deadline_clock, monkeypatch):
    """A first apply creates 12 alarms at 3 a second. A person who creates the next alarm to write whenever the
    apply waits on the pacing clock (for any call's turn) had gpudash's definition written over theirs when the
    wait fell between that alarm's look and its create (reported after the fact, exit 3). Every create looks for its
    alarm alone once its turns have come: each alarm the person made is seen, kept and reported."""
    proxy, client, apply = proxied
    order, made = CreateOrder(client), []
    proxy.inject(order)
    waits = at_every_wait(monkeypatch, deadline_clock, _person(client, order, made), alarms_only=True)
    code, report, stderr = apply()
    assert "Traceback" not in stderr and sum(waits) >= 3.0, (stderr, waits)  # 12 creates at 3 a second
    assert code == 3
    _made_and_kept(client, report, made)


@pytest.mark.parametrize("call", ["ListTagsForResource", "TagResource", "UntagResource"])
def test_an_alarm_a_person_creates_during_the_previous_alarms_tag_calls_is_not_overwritten(proxied, call):
    """A first apply; before each tag call it sends (a create's tag check, the tag write of the form CloudWatch
    reports, a create's evidence taken back: here every alarm is reported with a lowered threshold), a person
    creates the next alarm to write. The next create's look had been the previous alarm's read-back, made before
    those calls: the person's alarm was overwritten (threshold 7 -> 80), reported "was there before it". Each create
    looks for its alarm alone right before its write now: every alarm the person made keeps threshold 7."""
    proxy, client, apply = proxied
    order, made = CreateOrder(client), []
    person = _person(client, order, made)
    rules = [order, Rule(path="/", operation=call, action="before", times=ALWAYS, callback=person)]
    if call == "TagResource":  # a create read back in another form than sent is tagged with that form's hash
        proxy.inject(*rules, fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=without_query_periods))
    elif call == "UntagResource":  # a create read back otherwise than sent has its evidence taken back
        proxy.inject(*rules, fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=_all_lowered))
    else:
        proxy.inject(*rules)
    code, report, stderr = apply()
    assert code == 3 and "Traceback" not in stderr, stderr
    _made_and_kept(client, report, made, alone=call != "UntagResource")  # there, gpudash's own creates fail too


def test_an_alarm_a_person_creates_while_the_previous_alarm_is_created_is_not_overwritten(proxied, published):
    """Two alarms to create, one after the other (both deleted after publishing). The second's
    "not there" was the first's read-back; the first's tag check (ListTagsForResource) came after. A person creates
    the second alarm with their own definition (threshold 7, tag team=ops) during that tag check. Seen on 1dc7421:
    gpudash's PutMetricAlarm overwrote it (threshold 80), then reported it failed ("was there before it"). Now its
    look is its own, right before its write: "created by someone else since the plan", threshold 7 kept."""
    proxy, client, apply = proxied
    published()
    names = sorted(alarms(client))
    first = names[names.index(NAME) - 1]
    client.delete_alarms(AlarmNames=[first, NAME])
    made = []

    def person():
        if not made:
            foreign_alarm(client, name=NAME, threshold=7.0)
            client.tag_resource(ResourceARN=alarms(client)[NAME]["AlarmArn"], Tags=[{"Key": "team", "Value": "ops"}])
            made.append(True)

    proxy.inject(Rule(path="/", operation="ListTagsForResource", action="before", times=1,
                      contains=f'{first}"'.encode(), callback=person))
    code, report, stderr = apply()
    assert made and NAME not in report["written"]
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert alarms(client)[NAME]["Threshold"] == 7.0, errors.get(NAME)
    assert code == 3 and list(errors) == [NAME] and "created by someone else since the plan" in errors[NAME], errors


def _all_lowered(body: bytes) -> bytes:
    answer = json.loads(body)
    for alarm in answer.get("MetricAlarms", []):
        alarm["Threshold"] = 1.0
    return json.dumps(answer).encode()


def test_an_alarm_a_person_creates_while_a_lagging_tag_read_is_read_again_is_not_overwritten(
        proxied, deadline_clock, monkeypatch):
    """A create's tag check reads the alarm's tags once more a second later when the first read shows none (a read
    that has not caught up). A person who creates the next alarm in that second had gpudash's definition written over
    theirs while its look was older than the pause: the person's alarm is kept, reported (exit 3)."""
    proxy, client, apply = proxied
    order, made, lagged = CreateOrder(client), [], []
    def lagging(body: bytes) -> bytes:  # the first tag read after NAME's create has not caught up with it
        lagged.append(True)
        return json.dumps({"Tags": []}).encode()

    proxy.inject(order, Rule(path="/", operation="ListTagsForResource", action="rewrite", times=1,
                             contains=NAME.encode(), callback=lagging))
    at_every_wait(monkeypatch, deadline_clock, _person(client, order, made, when=lambda: bool(lagged)),
                  alarms_only=True)
    code, report, stderr = apply()
    assert lagged and "Traceback" not in stderr, stderr
    _made_and_kept(client, report, made)


def test_an_alarm_a_person_creates_while_the_previous_creates_evidence_is_taken_back_is_not_overwritten(
        proxied, deadline_clock, monkeypatch):
    """A create read back otherwise than sent has its evidence taken back: its tags read, UntagResource, its tags read
    again (once more a second later when the read still shows gpudash:sha256). A person who creates the next alarm to
    write meanwhile (here: at a wait after a lagging tag read) had gpudash's definition written over theirs (threshold
    7 -> 80, reported after the fact). It is kept, reported (exit 3)."""
    proxy, client, apply = proxied
    order, made, lagged = CreateOrder(client), [], []

    def lagging(body: bytes) -> bytes:  # the first tag read after the UntagResource has not caught up with it
        lagged.append(True)
        answer = json.loads(body)
        answer["Tags"].append({"Key": "gpudash:sha256", "Value": "not-yet-taken-back"})
        return json.dumps(answer).encode()

    proxy.inject(order, fault("DescribeAlarms", "rewrite", times=10**6, callback=threshold_lowered(NAME)),
                 Rule(path="/", operation="ListTagsForResource", action="rewrite", times=1, skip=1,
                      contains=f'{NAME}"'.encode(), callback=lagging))
    at_every_wait(monkeypatch, deadline_clock, _person(client, order, made, when=lambda: bool(lagged)),
                  alarms_only=True)
    code, report, stderr = apply()
    assert lagged and "Traceback" not in stderr, stderr
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert code == 3 and NAME in errors, errors
    _made_and_kept(client, {**report, "failed": [i for i in report["failed"] if i["name"] != NAME]}, made)


def test_an_alarm_a_person_creates_between_a_retrys_look_and_its_resend_is_not_overwritten(
        proxied, deadline_clock, monkeypatch):
    """Each create's first PutMetricAlarm is answered 503 (not made); the retry reads the alarm first (its look), then
    waited for PutMetricAlarm's turn (3 a second: the window was full of the creates just before) and resent. A person
    who creates the alarm in that wait (here: at the first wait on the pacing clock after a look found it absent) had
    gpudash's definition written over theirs, reported after the fact. The turn is waited for before the look now: the
    person's alarm is seen at the look, nothing is resent, and it keeps its threshold."""
    import json as json_

    from tests.support.fault_proxy import Rule

    proxy, client, apply = proxied
    named: list[str] = []
    failed: list[str] = []
    made: list[str] = []

    class FirstAttempt(Rule):  # answers 503 to the first PutMetricAlarm of each alarm
        def matches(self, method, path, body, operation="", region="", query=""):
            if operation != "PutMetricAlarm":
                return False
            name = json_.loads(body).get("AlarmName")
            if name in failed:
                return False
            failed.append(name)
            return True

    def person() -> None:
        looked = named[0] if len(named) == 1 else None  # a retry's look reads the alarm alone
        if looked in failed and looked not in made and looked not in alarms(client):
            foreign_alarm(client, name=looked, threshold=7.0)
            made.append(looked)

    proxy.inject(DescribedNames(named), FirstAttempt(path="/", times=10**6, status=503,
                                                     body=b'{"__type": "ServiceUnavailable"}'))
    at_every_wait(monkeypatch, deadline_clock, person, alarms_only=True)
    code, report, stderr = apply()
    assert len(failed) >= 12 and "Traceback" not in stderr, stderr
    assert made, "the person made no alarm"  # else nothing was there to overwrite
    assert [n for n in made if alarms(client)[n]["Threshold"] != 7.0] == [], f"{made} overwritten"


def test_a_takeover_just_before_an_updates_write_lands_is_reported_as_what_it_may_be(proxied, published, project_dir):
    """A person takes the alarm over (ManagedBy=team-ml) after the update's last tag read and before its
    PutMetricAlarm lands (CloudWatch has no conditional write: this is not seen in time). The tag read before the
    TagResource shows it: no evidence is tagged, and the report said the tags changed "after its fields were
    written", which is not what happened; it says now that they changed since the read before the write, and that
    the alarm holds gpudash's definition."""
    proxy, client, apply = proxied
    published()
    proxy.inject(fault("PutMetricAlarm", "before", naming=NAME, callback=lambda: taken_over(client, NAME)))
    code, report, stderr = apply("--config", str(project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, "
                                                             "critical: 90}\n")))
    failed = {item["name"]: item for item in report["failed"]}
    assert code == 3 and list(failed) == [NAME] and failed[NAME]["written"] is True, stderr
    assert "since they were read right before its fields were written" in failed[NAME]["error"], failed
    assert "holds gpudash's definition" in failed[NAME]["error"], failed
    assert _tags(client, NAME)["ManagedBy"] == "team-ml"


class _PublishedMeanwhile(Rule):
    """Throttles the first `operation` naming `name` (not forwarded: not made), and meanwhile another publisher sends
    CloudWatch that very request (`replay(request)`): the object is as gpudash's write makes it, by another hand."""

    def __init__(self, operation: str, name: str, replay, naming: bytes | None = None):
        super().__init__(path="/", operation=operation, status=400, times=1,
                         contains=naming or json.dumps(name).encode(),
                         body=json.dumps({"__type": "Throttling", "message": "Rate exceeded"}).encode(),
                         callback=lambda: replay(json.loads(self.request)))
        self.request = b""

    def matches(self, method, path, body, operation="", region="", query="") -> bool:
        if super().matches(method, path, body, operation, region, query):
            self.request = body
            return True
        return False


@pytest.mark.parametrize("kind", ["alarm", "dashboard"])
def test_an_object_another_publisher_writes_between_two_attempts_is_not_listed_as_gpudashs_write(proxied, kind):
    """gpudash's first attempt is throttled (not made) and another publisher writes the object exactly as gpudash
    sends it before the retry, whose look finds it so. It was listed in `written` as gpudash's write; it is left as
    the other publisher wrote it now (not written, exit 0), as when the check before the batch finds it so."""
    proxy, client, apply = proxied
    if kind == "alarm":
        rule = _PublishedMeanwhile("PutMetricAlarm", NAME, lambda request: client.put_metric_alarm(**request))
    else:
        rule = _PublishedMeanwhile("PutDashboard", DASHBOARD, lambda request: client.put_dashboard(**request))
    proxy.inject(rule)
    code, report, stderr = apply()
    name = NAME if kind == "alarm" else DASHBOARD
    assert rule.times == 0 and code == 0 and report["failed"] == [], (report["failed"], stderr)
    assert name not in report["written"] and len(report["written"]) == 15, report["written"]
    if kind == "alarm":
        assert alarms(client)[NAME]["Threshold"] == 87.0
    else:
        assert DASHBOARD in [d["DashboardName"] for d in client.list_dashboards()["DashboardEntries"]]


def test_evidence_another_publisher_tags_between_two_attempts_is_not_listed_as_gpudashs_write(proxied, published):
    """An alarm as generated whose evidence tag was stripped: the apply's only write is a TagResource. Its first
    attempt is throttled (not made) and another publisher tags the alarm exactly so before the retry, whose look finds
    it tagged. It was listed in `written` (the look's finding ignored, a read-back confirming the other's tags as
    gpudash's); it is left as the other publisher tagged it now, not written, exit 0."""
    proxy, client, apply = proxied
    published()
    arn = alarms(client)[NAME]["AlarmArn"]
    client.untag_resource(ResourceARN=arn, TagKeys=["gpudash:sha256"])
    rule = _PublishedMeanwhile("TagResource", NAME, lambda request: client.tag_resource(**request),
                               naming=arn.encode())  # the request names the alarm by its ARN
    proxy.inject(rule)
    code, report, stderr = apply()
    assert rule.times == 0 and code == 0 and report["failed"] == [], (report["failed"], stderr)
    assert report["written"] == [], report["written"]
    assert "gpudash:sha256" in _tags(client, NAME)


def test_an_alarm_a_person_tags_right_after_gpudash_creates_it_is_listed_as_created(proxied):
    """gpudash creates an alarm (PutMetricAlarm with its ownership and evidence tags) and a person tags it
    (team=ops) before the create's tag read-back. The alarm carries every tag the create sent and one more: AWS applies
    Tags only when PutMetricAlarm creates the alarm and ignores them on an update (PutMetricAlarm API reference), so
    carrying them all, it was created by this write. It was reported failed and not written ("an alarm of this name was
    there before it ... if it was a person's, restore theirs"), exit 3. (moto applies Tags on an update too: the
    test world's person-made-it-first cases see such a superset, which AWS never shows.)"""
    proxy, client, apply = proxied

    def tagged_by_a_person(body: bytes) -> bytes:
        arn = alarms(client)[NAME]["AlarmArn"]
        client.tag_resource(ResourceARN=arn, Tags=[{"Key": "team", "Value": "ops"}])
        return body

    proxy.inject(fault("PutMetricAlarm", "rewrite", naming=NAME, callback=tagged_by_a_person))
    code, report, stderr = apply()
    assert NAME in report["written"], (code, report["failed"], stderr)
    assert code == 0, stderr

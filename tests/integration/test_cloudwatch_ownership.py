"""CloudWatch ownership and evidence: answers that are not API answers, foreign, edited and stripped
alarms, objects that move between plan and apply, batched deletes, two publishers, the deadline."""

from __future__ import annotations

import json
from typing import Callable

import pytest

from tests.support.fault_proxy import Rule
from tests.support.cloudwatch_world import (
    ALWAYS, EDITED, FOREIGN, RETIRED_EDITED, TWO_CLUSTERS, DescribedNames, alarms, at_every_wait, default_desired,
    edit_in_console, fault, foreign_alarm, fresh, other_cluster, reported_in_a_form_of_its_own, snapshot, taken_over,
    without_query_periods, writes)


@pytest.mark.parametrize("answer", [b"{}", b"<html><body>502 Bad Gateway</body></html>", b'{"MetricAlarms": {}}',
                                    b'{"MetricAlarms": [{"AlarmName": "gpudash-gpu-cluster-xid-error-critical"}], '
                                    b'"CompositeAlarms": [], "LogAlarms": []}',
                                    b'{"MetricAlarms": [', b"[]",
                                    b'{"MetricAlarms": [{"AlarmName": "gpudash-gpu-cluster-xid-error-critical", '
                                    b'"AlarmArn": "arn:aws:cloudwatch:us-east-1:123456789012:alarm:x", '
                                    b'"Dimensions": {}}], "CompositeAlarms": [], "LogAlarms": []}'],
                         ids=["empty-object", "html", "not-a-list", "item-without-arn", "truncated-json", "array",
                              "nested-not-a-list"])
def test_an_alarm_listing_that_is_not_an_api_answer_is_a_remote_failure(proxied, answer):
    proxy, client, apply = proxied
    foreign_alarm(client)
    before = snapshot(client)
    proxy.inject(fault("DescribeAlarms", "body", times=ALWAYS, body=answer))
    code, stdout, stderr = apply()
    assert code == 3, stdout
    assert "not an API answer" in stderr and "Traceback" not in stderr
    assert writes(proxy) == [] and snapshot(client) == before  # nothing planned as a create over the alarm


@pytest.mark.parametrize("operation, answer", [("GetResources", b"<html/>"),
                                               ("GetResources", b'{"ResourceTagMappingList": [{"ResourceARN": '
                                                                b'"arn:aws:cloudwatch:us-east-1:1:alarm:x"}]}'),
                                               ("GetDashboard", b'{"DashboardBody": "<x>"}'),
                                               ("ListDashboards", b"{}"),
                                               ("ListDashboards", b'{"DashboardEntries": [{"DashboardArn": "x"}]}')])
def test_tag_and_dashboard_reads_that_are_not_api_answers_are_remote_failures(proxied, published, operation, answer):
    proxy, client, apply = proxied
    published()
    foreign_alarm(client)
    before = snapshot(client)
    fresh(proxy)
    proxy.inject(fault(operation, "body", times=ALWAYS, body=answer))
    code, _, stderr = apply("--force")
    assert code == 3 and "not" in stderr and "Traceback" not in stderr
    assert writes(proxy) == [] and snapshot(client) == before


def test_an_alarm_created_between_plan_and_apply_is_not_overwritten(proxied):
    from generator.clients.cloudwatch import CloudWatch
    from generator.targets import cloudwatch_sync

    proxy, client, apply = proxied
    desired = default_desired()
    cloudwatch = CloudWatch(endpoint_url=proxy.url)
    changes = cloudwatch_sync.plan(cloudwatch, desired)
    foreign_alarm(client)  # someone creates an untagged alarm with a gpudash name meanwhile
    outcomes = cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                     force=False, prune=False, dry_run=False)
    failed = [o for o in outcomes if o.error]
    assert [o.change.name for o in failed] == [FOREIGN]
    assert "created by someone else since the plan" in failed[0].error
    assert alarms(client)[FOREIGN]["MetricName"] == "CPUUtilization"
    code, report, _ = apply()
    assert code == 1 and report["refused"] == [FOREIGN] and report["written"] == []


def test_an_alarm_edited_in_the_console_is_drift_and_needs_force(aws, published, cli):
    client, apply = aws
    published()
    edit_in_console(client)
    code, stdout, _ = cli("plan", "--no-grafana")
    assert code == 1
    assert f"drift     cloudwatch alarm {EDITED} [us-east-1]" in stdout
    assert "edited in the CloudWatch console since gpudash wrote it" in stdout and "Threshold 95 → 87" in stdout
    code, report, stderr = apply()
    assert code == 1 and report["refused"] == [EDITED] and "refused 1 object" in stderr
    assert alarms(client)[EDITED]["Threshold"] == 95.0  # the edit survives
    code, report, _ = apply("--force", "--dry-run")
    assert code == 0 and report["would_write"] == [EDITED] and report["refused"] == []
    assert alarms(client)[EDITED]["Threshold"] == 95.0
    code, report, _ = apply("--force")
    assert code == 0 and report["written"] == [EDITED]
    assert alarms(client)[EDITED]["Threshold"] == 87.0
    assert apply()[1]["written"] == []


def _relabelled(client, name: str, label: str = "Hot GPUs (on-call view)") -> None:
    """What a person does in the console to rename the line an alarm's graph shows: PutMetricAlarm with the alarm's
    own fields, its query's Label changed; tags stay."""
    alarm = dict(alarms(client)[name])
    keys = ("AlarmName", "AlarmDescription", "ActionsEnabled", "AlarmActions", "OKActions", "ComparisonOperator",
            "EvaluationPeriods", "DatapointsToAlarm", "TreatMissingData", "Threshold")
    queries = [{k: m[k] for k in ("Id", "Expression", "Period", "ReturnData", "Label") if k in m}
               for m in alarm["Metrics"]]
    queries[0]["Label"] = label
    client.put_metric_alarm(**{k: alarm[k] for k in keys if k in alarm}, Metrics=queries)


@pytest.mark.parametrize("retired", [False, True], ids=["defined", "retired"])
def test_an_alarm_whose_query_label_a_person_changed_is_edited(aws, published, project_dir, retired):
    """A query's Label (the line an alarm's graph shows) changed in the console was not seen as an edit: an alarm
    still defined read as unchanged, and one retired was deleted by --prune without --force (its evidence hashed no
    label). Now the label is part of what an edit is judged on: drift, refused without --force; the label kept."""
    client, apply = aws
    if retired:
        published("--config", str(project_dir(TWO_CLUSTERS)))
        _relabelled(client, RETIRED_EDITED)
        code, report, _ = apply("--prune", "--removed-cluster", "other")
        assert code == 1 and report["refused"] == [RETIRED_EDITED], report
        assert [n for n in alarms(client) if other_cluster(n)] == [RETIRED_EDITED]
        return
    published()
    _relabelled(client, EDITED)
    code, report, _ = apply()
    assert code == 1 and report["refused"] == [EDITED], report
    assert alarms(client)[EDITED]["Metrics"][0]["Label"] == "Hot GPUs (on-call view)"


def _with_earlier_evidence(client, name: str) -> None:
    """The evidence a release before query labels were hashed wrote for the alarm as it is now (its marks kept)."""
    from generator.markers import ALARM_HASH_TAG
    from generator.ownership import legacy_alarm_hash

    alarm = alarms(client)[name]
    arn = alarm["AlarmArn"]
    tags = {t["Key"]: t["Value"] for t in client.list_tags_for_resource(ResourceARN=arn)["Tags"]}
    marks = tags[ALARM_HASH_TAG].partition("/")[2]
    client.tag_resource(ResourceARN=arn, Tags=[{"Key": ALARM_HASH_TAG, "Value": f"{legacy_alarm_hash(alarm)}/{marks}"}])


def test_evidence_written_before_query_labels_were_hashed_is_not_taken_for_an_edit(aws, published):
    """An alarm whose evidence an earlier release wrote (hashing no query label) is as that release wrote it: not drift
    after the upgrade; its evidence is written anew once (a tag write), and then nothing is written."""
    client, apply = aws
    published()
    assert alarms(client)[EDITED]["Metrics"][0].get("Label")  # (a labelled query: its hash is not the earlier one's)
    _with_earlier_evidence(client, EDITED)
    code, report, _ = apply()
    assert code == 0 and report["written"] == [EDITED] and report["refused"] == [], report
    assert apply()[1]["written"] == []
    _relabelled(client, EDITED)  # with the evidence written anew, a label edit shows
    code, report, _ = apply()
    assert code == 1 and report["refused"] == [EDITED], report


@pytest.mark.parametrize("retired", [False, True], ids=["defined", "retired"])
def test_a_label_edited_before_the_upgrade_is_not_vouched_for_by_earlier_evidence(aws, published, project_dir,
                                                                                    retired):
    """Evidence an earlier release wrote hashed no query label, so it reads the same after a person renamed the line
    an alarm's graph shows: such an alarm was overwritten (still defined) or deleted by --prune without --force
    (retired). Earlier evidence now vouches for the labels only where they are what gpudash renders for the alarm."""
    client, apply = aws
    name = RETIRED_EDITED if retired else EDITED
    published(*(["--config", str(project_dir(TWO_CLUSTERS))] if retired else []))
    _with_earlier_evidence(client, name)
    _relabelled(client, name)  # before the upgrade: the earlier evidence still matches every field it hashed
    code, report, _ = apply(*(["--prune", "--removed-cluster", "other"] if retired else []))
    assert code == 1 and report["refused"] == [name], report
    assert alarms(client)[name]["Metrics"][0]["Label"] == "Hot GPUs (on-call view)"
    if retired:
        change = next(c for c in report["changes"] if c["name"] == name)
        assert "cannot show" in " ".join(change["details"]), change


def test_a_stripped_ownership_tag_makes_the_alarm_foreign(proxied, published):
    proxy, client, apply = proxied
    published()
    arn = alarms(client)[EDITED]["AlarmArn"]
    client.untag_resource(ResourceARN=arn, TagKeys=["ManagedBy"])
    fresh(proxy)
    code, report, _ = apply()
    assert code == 1 and report["refused"] == [EDITED] and writes(proxy) == []
    change = next(c for c in report["changes"] if c["name"] == EDITED)
    assert change["action"] == "foreign"
    # Tags are read in bulk: one GetResources page; only the alarm it does not vouch for is asked alone.
    assert proxy.operations.count("GetResources") == 1 and proxy.operations.count("ListTagsForResource") == 1


def test_a_retired_alarm_edited_in_the_console_is_pruned_only_with_force(aws, published, project_dir):
    client, apply = aws
    published("--config", str(project_dir(TWO_CLUSTERS)))
    edit_in_console(client, RETIRED_EDITED)
    code, report, _ = apply("--prune", "--removed-cluster", "other")  # back to one cluster: the other cluster's alarms are retired
    assert code == 1 and report["refused"] == [RETIRED_EDITED]
    assert [n for n in alarms(client) if other_cluster(n)] == [RETIRED_EDITED]
    assert apply("--prune", "--removed-cluster", "other", "--force")[0] == 0
    assert [n for n in alarms(client) if other_cluster(n)] == []


def _without_defaulted_members(body: bytes) -> bytes:
    """A DescribeAlarms answer listing no alarm's ActionsEnabled or TreatMissingData: as CloudWatch lists an alarm put
    without them (terraform-provider-aws#8854: describe-alarms lists no TreatMissingData for such alarms)."""
    answer = json.loads(body)
    for alarm in answer.get("MetricAlarms", []):
        alarm.pop("ActionsEnabled", None)
        alarm.pop("TreatMissingData", None)
    return json.dumps(answer).encode()


def test_an_alarm_listed_without_its_actions_switch_or_missing_data_treatment_holds_their_documented_defaults(
        proxied, published, project_dir, cli):
    """PutMetricAlarm documents what an alarm put without them holds: actions enabled, missing data treated as
    `missing`. An alarm listed without them was read as edited in the console whatever gpudash wrote (every alarm:
    plan exit 1, a prune refused); it holds those defaults: one gpudash wrote with them is as written (no drift, pruned
    with --prune alone), one written with `breaching` or `notBreaching` is edited (it treats missing data otherwise
    now), defined or retired: plan says so, and apply --prune deletes the retired ones as written and refuses the
    rest."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    treatment = {name: alarm["TreatMissingData"] for name, alarm in alarms(client).items()}
    assert {"missing", "breaching"} <= set(treatment.values()) and any(map(other_cluster, treatment))
    fresh(proxy)
    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=_without_defaulted_members))
    code, stdout, stderr = cli("plan", "--no-grafana", "--output", "json", "--removed-cluster", "other")
    assert code in (0, 1) and stdout.startswith("{"), (code, stdout, stderr)
    changes = {c["name"]: c for c in json.loads(stdout)["changes"] if c["kind"] == "alarm"}
    edited = sorted(name for name, c in changes.items() if c["action"] == "drift" or c["edited"])
    assert edited == sorted(name for name, kept in treatment.items() if kept != "missing"), (edited, treatment)
    assert all(changes[name]["action"] == ("delete" if other_cluster(name) else "drift") for name in edited)
    assert all(changes[name]["action"] in (("delete",) if other_cluster(name) else ("unchanged", "update"))
               for name in set(treatment) - set(edited))
    said = [line for name in set(treatment) - set(edited) for line in changes[name]["details"]
            if "TreatMissingData" in line or "ActionsEnabled" in line]
    assert said == []  # no write of what the alarm holds already
    assert writes(proxy) == []
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 1 and sorted(report["refused"]) == edited, (code, report, stderr)
    assert sorted(alarms(client)) == sorted(name for name in treatment if name in edited or not other_cluster(name))


def test_a_retired_alarm_a_person_tagged_is_pruned_only_with_force(aws, published, project_dir):
    """A person tags a retired alarm (team=ml-oncall: theirs now, or in use). The evidence covers the alarm's fields and
    its ownership marks, not a tag of someone else's: --prune deleted it with its tag, exit 0. Now a tag gpudash does
    not write refuses the delete without --force and names the tag; the other retired alarms are deleted."""
    client, apply = aws
    published("--config", str(project_dir(TWO_CLUSTERS)))
    retired = sorted(n for n in alarms(client) if other_cluster(n))
    tagged, other = retired[0], retired[1]
    client.tag_resource(ResourceARN=alarms(client)[tagged]["AlarmArn"], Tags=[{"Key": "team", "Value": "ml-oncall"}])
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--dry-run")
    assert code == 1 and report["refused"] == [tagged], stderr
    (refused,) = [c for c in report["changes"] if c["name"] == tagged]
    assert "team=ml-oncall" in json.dumps(refused), refused
    code, report, _ = apply("--prune", "--removed-cluster", "other")
    assert code == 1 and report["refused"] == [tagged] and other in report["written"]
    assert [n for n in alarms(client) if other_cluster(n)] == [tagged]
    assert apply("--prune", "--removed-cluster", "other", "--force")[0] == 0
    assert [n for n in alarms(client) if other_cluster(n)] == []


def _dashboards(client):
    return sorted(d["DashboardName"] for d in client.list_dashboards()["DashboardEntries"])


def test_retired_dashboards_are_listed_and_pruned_only_with_evidence(aws, published, project_dir, cli):
    """A removed cluster's dashboards show as deletes and --prune deletes them; one edited in the console
    no longer proves it is this project's (a person's copy under another name or another project's reads
    alike), and a dashboard with a gpudash-like name and no stamp: neither is ever touched, even with --force."""
    import json

    client, apply = aws
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    edited, kept = "gpudash-other-health", ["gpudash-other-by-pod", "gpudash-other-overview"]
    body = json.loads(client.get_dashboard(DashboardName=edited)["DashboardBody"])
    body["widgets"][1]["properties"]["title"] = "renamed in the console"
    client.put_dashboard(DashboardName=edited, DashboardBody=json.dumps(body))
    handmade = {"widgets": [{"type": "text", "x": 0, "y": 0, "width": 6, "height": 2,
                             "properties": {"markdown": "made by hand"}}]}
    client.put_dashboard(DashboardName="gpudash-other-handmade", DashboardBody=json.dumps(handmade))
    code, stdout, stderr = cli("plan", "--no-grafana")  # cluster other may be another settings file's now
    assert code == 0 and "--prune --removed-cluster other` retires them" in stderr, stderr
    code, stdout, _ = cli("plan", "--no-grafana", "--removed-cluster", "other")
    assert code == 1
    for name in kept:
        assert f"delete    cloudwatch dashboard {name} [us-east-1]" in stdout
    assert "gpudash-other-handmade" not in stdout and edited not in stdout
    code, dry, _ = apply("--prune", "--removed-cluster", "other", "--dry-run")
    assert code == 0 and dry["refused"] == [] and [n for n in dry["would_write"] if n in kept] == kept
    assert "gpudash-other-handmade" not in json.dumps(dry)
    assert [n for n in _dashboards(client) if other_cluster(n)] == sorted(kept + [edited, "gpudash-other-handmade"])
    code, report, _ = apply("--prune", "--removed-cluster", "other")
    assert code == 0 and report["refused"] == [] and report["written"] == dry["would_write"]
    assert [n for n in _dashboards(client) if other_cluster(n)] == ["gpudash-other-handmade", edited]
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--force")  # a rerun of the prune
    assert code == 0 and report["written"] == [], stderr  # nothing of other's is gpudash's: the flag takes nothing
    assert "--removed-cluster other: no object of project 'test' records the cluster 'other'" in stderr, stderr
    assert [n for n in _dashboards(client) if other_cluster(n)] == ["gpudash-other-handmade", edited]
    assert json.loads(client.get_dashboard(DashboardName="gpudash-other-handmade")["DashboardBody"]) == handmade


def _tag_dashboard(client, name: str, key: str, value: str) -> None:
    arn = client.get_dashboard(DashboardName=name)["DashboardArn"]
    client.tag_resource(ResourceARN=arn, Tags=[{"Key": key, "Value": value}])


def test_a_retired_dashboard_a_person_tagged_is_pruned_only_with_force(aws, published, project_dir):
    """CloudWatch dashboards take tags (TagResource on arn:aws:cloudwatch::<account>:dashboard/<name>), and gpudash
    writes none: a person tagged a retired one (team=ml-oncall: theirs now, or a tag an IAM policy grants access by).
    Its stamp covers its body, not its tags, which its delete takes with it: --prune deleted it, exit 0. Now a tag
    on it refuses the delete without --force and names the tag, as a retired alarm's does; the others are deleted."""
    client, apply = aws
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    tagged, others = "gpudash-other-health", ["gpudash-other-by-pod", "gpudash-other-overview"]
    _tag_dashboard(client, tagged, "team", "ml-oncall")
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--dry-run")
    assert code == 1 and tagged in report["refused"], stderr
    (refused,) = [c for c in report["changes"] if c["name"] == tagged]
    assert "team=ml-oncall" in json.dumps(refused), refused
    code, report, _ = apply("--prune", "--removed-cluster", "other")
    assert code == 1 and tagged in report["refused"] and set(others) <= set(report["written"])
    assert [n for n in _dashboards(client) if other_cluster(n)] == [tagged]
    assert apply("--prune", "--removed-cluster", "other", "--force")[0] == 0
    assert [n for n in _dashboards(client) if other_cluster(n)] == []


DASHBOARD_TAGS_DENIED = {"__type": "AccessDeniedException",
                         "message": "User is not authorized to perform: cloudwatch:ListTagsForResource on resource: "
                                    "arn:aws:cloudwatch::123456789012:dashboard/gpudash-other-health"}


def test_a_retired_dashboard_whose_tags_cannot_be_read_is_pruned_only_with_force(proxied, published, project_dir):
    """An IAM policy may grant cloudwatch:ListTagsForResource on alarms alone: a dashboard's tags that cannot be read
    are not "none" (a person's tags would go with the delete). Without --force the delete is refused, saying why;
    with it, it goes."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    fresh(proxy)
    proxy.inject(Rule(path="/", operation="ListTagsForResource", action="status", status=400, times=ALWAYS,
                      body=json.dumps(DASHBOARD_TAGS_DENIED).encode(), contains=b":dashboard/"))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    dashboards = sorted(c["name"] for c in report["changes"] if c["kind"] == "dashboard" and c["action"] == "delete")
    assert code == 1 and sorted(n for n in report["refused"] if n in dashboards) == dashboards, stderr
    assert "could not be read" in json.dumps(report["changes"]) and "AccessDenied" in json.dumps(report["changes"])
    assert len([n for n in _dashboards(client) if other_cluster(n)]) == 3
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--force")
    assert code == 0, stderr
    assert [n for n in _dashboards(client) if other_cluster(n)] == []


def test_aws_own_tags_on_a_retired_dashboard_need_no_force(proxied, published, project_dir):
    """Tags only AWS writes (`aws:` keys, as CloudFormation's aws:cloudformation:stack-name) are no person's: a
    retired dashboard carrying them is pruned without --force, by the plan and by the look before its delete."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    fresh(proxy)

    def with_aws_tag(body: bytes) -> bytes:
        answer = json.loads(body)
        return json.dumps({**answer, "Tags": answer["Tags"] + [
            {"Key": "aws:cloudformation:stack-name", "Value": "gpu-dashboards"}]}).encode()
    proxy.inject(Rule(path="/", operation="ListTagsForResource", action="rewrite", times=ALWAYS,
                      contains=b":dashboard/", callback=with_aws_tag))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 0 and report["refused"] == [], (report["refused"], stderr)
    assert [n for n in _dashboards(client) if other_cluster(n)] == []


def _forced_prune_after(proxy, person):
    """The default settings' plan of pruning the cluster `other` (published with TWO_CLUSTERS), then `person(changes)`
    acting on the account, then that plan applied with --prune --force: the outcomes."""
    from generator.clients.cloudwatch import CloudWatch
    from generator.targets import cloudwatch_sync

    desired = default_desired()
    cloudwatch = CloudWatch(endpoint_url=proxy.url)
    changes = cloudwatch_sync.plan(cloudwatch, desired, removed=("other",))
    person(changes)
    return cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                 force=True, prune=True, dry_run=False)


def test_a_retired_dashboard_a_person_tags_after_the_plan_is_not_deleted(proxied, published, project_dir):
    """The look right before DeleteDashboards reads the dashboard's tags again: one tagged since the plan is not
    deleted (exit 3), --force or not (it agrees to what the plan showed)."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))

    def person(changes):
        deletes = sorted(c.name for c in changes if c.kind == "dashboard" and c.action == "delete")
        assert deletes == ["gpudash-other-by-pod", "gpudash-other-health", "gpudash-other-overview"]
        _tag_dashboard(client, "gpudash-other-health", "keep", "yes")
    outcomes = _forced_prune_after(proxy, person)
    failed = [o for o in outcomes if o.error and o.change.kind == "dashboard"]
    assert [o.change.name for o in failed] == ["gpudash-other-health"], [o.error for o in outcomes if o.error]
    assert "keep=yes" in failed[0].error and "not deleted" in failed[0].error
    assert [n for n in _dashboards(client) if other_cluster(n)] == ["gpudash-other-health"]


def test_an_apply_without_prune_reads_no_retired_dashboards_tags_nor_every_dashboard(proxied, published, project_dir):
    """The tags of retired dashboards and every dashboard of the account (for the alarms each shows) are read for a
    prune alone: an apply without --prune deletes nothing, and reads neither."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    fresh(proxy)
    reads: list[int] = []
    proxy.inject(Rule(path="/", operation="ListTagsForResource", action="before", times=ALWAYS,
                      contains=b":dashboard/", callback=lambda: reads.append(1)))
    code, report, stderr = apply("--removed-cluster", "other")  # (the defined objects record these settings' clusters)
    assert code == 0 and not [c for c in report["changes"] if c["action"] == "delete" and c["name"] in report["written"]]
    assert reads == [] and proxy.operations.count("ListDashboards") == 1, proxy.operations


def test_a_retired_dashboard_a_person_tags_while_its_delete_is_throttled_is_not_deleted(proxied, published,
                                                                                         project_dir, deadline_clock,
                                                                                         monkeypatch):
    """CloudWatch throttles a retired dashboard's DeleteDashboards and gpudash backs off before sending it again: a
    person who tags the dashboard during that backoff must not have it deleted (the look before the resend read its
    body alone, and a tag is not in its body)."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    doomed, state = "gpudash-other-health", {"throttled": 0, "tagged": False}

    def person() -> None:
        if state["throttled"] and not state["tagged"]:
            _tag_dashboard(client, doomed, "keep", "yes")
            state["tagged"] = True

    fresh(proxy)
    proxy.inject(fault("DeleteDashboards", "status", status=400, naming=[doomed],
                       body={"__type": "ThrottlingException", "message": "Rate exceeded"},
                       callback=lambda: state.update(throttled=state["throttled"] + 1)))
    at_every_wait(monkeypatch, deadline_clock, person)
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert "Traceback" not in stderr and state["tagged"], (stderr, state)
    assert doomed in _dashboards(client), f"{doomed} deleted after a person tagged it while its delete was throttled"
    failed = {f["name"]: f["error"] for f in report["failed"]}
    assert code == 3 and "its tags changed since the plan (now: keep=yes)" in failed[doomed], report


@pytest.mark.parametrize("operation, contains, answer", [
    ("ListTagsForResource", b":dashboard/", b"<html>502</html>"),
    ("ListTagsForResource", b":dashboard/", b'{"Tags": [{"Key": "team"}]}'),
    ("ListTagsForResource", b":dashboard/", b'{"Tags": {}}'),
    ("GetDashboard", b"gpudash-other-health", lambda body: json.dumps(
        {k: v for k, v in json.loads(body).items() if k != "DashboardArn"}).encode()),
    ("GetDashboard", b"gpudash-other-health", lambda body: body.replace(b"dashboard/gpudash-other-health",
                                                                        b"dashboard/gpudash-other-overview")),
    ("ListDashboards", b"{}", b'{"DashboardEntries": [{"DashboardName": "x"}], "NextToken": 5}')],
    ids=["tags html", "tag without value", "tags an object", "no arn", "another dashboard's arn",
         "listing token a number"])
def test_garbled_answers_to_a_prunes_new_reads_delete_nothing_unseen(proxied, published, project_dir, operation,
                                                                    contains, answer):
    """Whatever comes back where a retired dashboard's tags, its ARN or the account's every dashboard belong, a prune
    without --force deletes no dashboard or alarm those reads were for, and ends without a traceback."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    fresh(proxy)
    proxy.inject(Rule(path="/", operation=operation, action="rewrite", times=ALWAYS, contains=contains,
                      callback=answer if callable(answer) else lambda body: answer))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code in (1, 3) and "Traceback" not in stderr, (code, stderr)
    kept = {"ListDashboards": [n for n in alarms(client) if other_cluster(n)],
            "GetDashboard": ["gpudash-other-health"]}.get(operation, ["gpudash-other-health", "gpudash-other-overview"])
    assert set(kept) <= set(alarms(client)) | set(_dashboards(client)), report


def _persons_dashboard(client, arn: str, how: str) -> None:
    """A person's dashboard showing the alarm `arn`: as an alarm status widget, or as a graph's alarm annotation (the
    console's "Add to dashboard" of an alarm writes either)."""
    widget = ({"type": "alarm", "x": 0, "y": 0, "width": 24, "height": 3,
               "properties": {"title": "GPU on-call", "alarms": [arn]}} if how == "status" else
              {"type": "metric", "x": 0, "y": 0, "width": 12, "height": 6,
               "properties": {"title": "XID", "region": "us-east-1", "annotations": {"alarms": [arn]}}})
    client.put_dashboard(DashboardName="ops-overview", DashboardBody=json.dumps({"widgets": [widget]}))


@pytest.mark.parametrize("how", ["status", "annotation"], ids=["an alarm status widget", "a graph's alarm annotation"])
def test_a_retired_alarm_a_persons_dashboard_shows_is_pruned_only_with_force(aws, published, project_dir, how):
    """The on-call team's own dashboard shows a retired alarm (an alarm status widget, or an alarm annotation on a
    graph). CloudWatch deletes an alarm whatever dashboard shows it, and the widget then shows it missing; nothing on
    the alarm records it: --prune deleted it, exit 0. Now every dashboard of the account is read for the alarms it
    shows: that alarm's delete needs --force, naming the dashboard; the other retired alarms are deleted."""
    client, apply = aws
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    retired = sorted(n for n in alarms(client) if other_cluster(n))
    shown = retired[0]
    _persons_dashboard(client, alarms(client)[shown]["AlarmArn"], how)
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 1 and report["refused"] == [shown], stderr
    (refused,) = [c for c in report["changes"] if c["name"] == shown]
    assert "it is shown on dashboard(s) ops-overview" in json.dumps(refused), refused
    assert [n for n in alarms(client) if other_cluster(n)] == [shown]
    assert apply("--prune", "--removed-cluster", "other", "--force")[0] == 0
    assert [n for n in alarms(client) if other_cluster(n)] == []
    assert "ops-overview" in _dashboards(client)  # the person's dashboard is left as it was


_SOMEONE_ELSES = "arn:aws:cloudwatch:us-east-1:123456789012:alarm:someone-elses"


NO_WIDGETS = object()  # a body without its `widgets` (CloudWatch's must hold that array, if empty)


def _odd_body(widgets) -> Callable[[bytes], bytes]:
    """A GetDashboard answer for ops-overview whose body's `widgets` are `widgets`: none CloudWatch keeps."""
    body = {"start": "-PT3H"} if widgets is NO_WIDGETS else {"widgets": widgets}
    answer = json.dumps({"DashboardName": "ops-overview", "DashboardArn": "arn:aws:cloudwatch::1:dashboard/ops-overview",
                         "DashboardBody": json.dumps(body)}).encode()
    return lambda body: answer


@pytest.mark.parametrize("fault", [
    dict(action="status", status=400, body=json.dumps({"__type": "AccessDeniedException", "message": "not authorized "
                                                       "to perform: cloudwatch:GetDashboard"}).encode()),
    dict(action="rewrite", callback=_odd_body(5)),
    dict(action="rewrite", callback=_odd_body(NO_WIDGETS)),
    dict(action="rewrite", callback=_odd_body([5])),
    dict(action="rewrite", callback=_odd_body([{"type": "alarm", "properties": "alarms"}])),
    dict(action="rewrite", callback=_odd_body([{"type": "alarm", "properties": {"alarms": _SOMEONE_ELSES}}])),
    dict(action="rewrite", callback=_odd_body([{"type": "alarm", "properties": {"alarms": [{"arn": _SOMEONE_ELSES}]}}])),
    dict(action="rewrite", callback=_odd_body([{"type": "metric", "properties": {"annotations": [_SOMEONE_ELSES]}}])),
    dict(action="rewrite", callback=_odd_body([{"type": "metric", "properties": {"annotations": {
        "alarms": _SOMEONE_ELSES}}}]))],
    ids=["denied", "widgets not a list", "no widgets", "a widget not an object", "properties not an object",
         "alarms not a list", "an alarm not an ARN", "annotations not an object", "annotated alarms not a list"])
def test_a_retired_alarm_is_not_pruned_without_force_where_the_dashboards_cannot_be_read(proxied, published,
                                                                                         project_dir, fault):
    """A dashboard of the account that cannot be read (GetDashboard denied on it, or answered with a body CloudWatch
    keeps none of) may show a retired alarm: never read as showing none. The retired alarms need --force, saying
    why."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    _persons_dashboard(client, _SOMEONE_ELSES, "status")
    fresh(proxy)
    proxy.inject(Rule(path="/", operation="GetDashboard", times=ALWAYS, contains=b"ops-overview", **fault))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    retired = [c["name"] for c in report["changes"] if c["kind"] == "alarm" and c["action"] == "delete"]
    assert code == 1 and retired and sorted(report["refused"]) == sorted(retired), stderr
    assert "the dashboards that may show it could not be read (CloudWatch dashboard ops-overview: " in json.dumps(
        report["changes"])  # (the one of the account's dashboards that could not be read is named)
    assert len([n for n in alarms(client) if other_cluster(n)]) == len(retired)


def test_a_retired_alarm_a_dashboard_comes_to_show_after_the_plan_is_not_deleted(proxied, published, project_dir):
    """The account's dashboards are read again right before a Region's deletes: an alarm a person put on a dashboard
    since the plan is not deleted (exit 3), --force or not; the others are."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    _shown_after_the_plan_is_kept(proxy, client)


def test_an_equal_size_edit_in_the_second_the_plan_read_a_dashboard_is_seen_before_the_deletes(proxied, published,
                                                                                               project_dir):
    """ListDashboards' LastModified may be kept in whole seconds: the API reference says milliseconds, but the AWS
    CLI's example of list-dashboards shows whole seconds (2024-10-11T18:40:11+00:00, where the CLI prints a time's
    fraction when it has one). A person's dashboard shows another alarm; the plan lists and reads it in the second it
    was saved, and in that same second the person makes it show a retired alarm, in a body of the same size: the
    listing right before the deletes gives the plan's stamp (that second, that size), and the body was not read
    again: the alarm was deleted silently. Now a stamp is trusted only from a listing answered (its Date) 2 s after
    it: that dashboard is read again, and the alarm is not deleted."""
    import email.utils
    import time

    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    retired = sorted(n for n in alarms(client) if other_cluster(n))
    arn = alarms(client)[retired[0]]["AlarmArn"]
    _persons_dashboard(client, arn[:-1] + ("x" if arn[-1] != "x" else "y"), "status")  # another alarm, as long
    saved = int(time.time())  # the second of the save, the plan's reads and the edit: the listings say so

    def in_that_second(body: bytes) -> bytes:
        answer = json.loads(body)
        for entry in answer.get("DashboardEntries", []):
            if entry["DashboardName"] == "ops-overview":
                entry["LastModified"] = saved
        return json.dumps(answer).encode()
    proxy.inject(Rule(path="/", operation="ListDashboards", action="rewrite", times=ALWAYS, callback=in_that_second,
                      headers={"Date": email.utils.formatdate(saved, usegmt=True)}))
    sizes = []

    def person(changes):
        sizes.append(client.list_dashboards(DashboardNamePrefix="ops-overview")["DashboardEntries"][0]["Size"])
        _persons_dashboard(client, arn, "status")
        sizes.append(client.list_dashboards(DashboardNamePrefix="ops-overview")["DashboardEntries"][0]["Size"])
    outcomes = _forced_prune_after(proxy, person)
    assert sizes[0] == sizes[1], sizes
    failed = [o for o in outcomes if o.error and o.change.kind == "alarm"]
    assert [o.change.name for o in failed] == [retired[0]], [o.error for o in failed]
    assert "shown on dashboard(s) ops-overview since the plan" in failed[0].error
    assert [n for n in alarms(client) if other_cluster(n)] == [retired[0]]


def _shown_after_the_plan_is_kept(proxy, client) -> None:
    """A forced prune of the cluster `other` whose first retired alarm a person puts on ops-overview after the plan
    (the proxy's record of operations emptied then, its faults kept): that alarm alone is not deleted, saying why."""
    retired: list[str] = []

    def person(changes):
        retired[:] = sorted(c.name for c in changes if c.kind == "alarm" and c.action == "delete")
        assert retired and not any(c.edited for c in changes if c.name in retired)
        with proxy.lock:
            proxy.operations.clear()
        _persons_dashboard(client, alarms(client)[retired[0]]["AlarmArn"], "status")
    outcomes = _forced_prune_after(proxy, person)
    failed = [o for o in outcomes if o.error and o.change.kind == "alarm"]
    assert [o.change.name for o in failed] == [retired[0]], [o.error for o in failed]
    assert "shown on dashboard(s) ops-overview since the plan" in failed[0].error
    assert [n for n in alarms(client) if other_cluster(n)] == [retired[0]]


@pytest.mark.parametrize("read_after", ["read", "denied"])
def test_an_alarm_put_on_a_dashboard_while_its_delete_runs_is_not_deleted_silently(proxied, published, project_dir,
                                                                                   read_after):
    """A person puts the first retired alarm on their dashboard while its DeleteAlarms is on its way: after the look at
    every dashboard before it. It was deleted, exit 0, and the widget shows it missing: nothing said so. Now the
    dashboards are read once more after the Region's deletes (those changed since: one listing and the changed
    bodies): that alarm is listed as deleted then failed, exit 3, naming the dashboard; where that read is refused,
    each alarm deleted is listed so, saying it could not be read; the other deletes are done."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    retired = sorted(n for n in alarms(client) if other_cluster(n))
    arn = alarms(client)[retired[0]]["AlarmArn"]
    fresh(proxy)

    proxy.inject(Rule(path="/", operation="DeleteAlarms", action="before", contains=retired[0].encode(),
                      callback=lambda: _persons_dashboard(client, arn, "status")))
    if read_after == "denied":  # from the Region's last delete on (after the look before it), the listing is refused
        # (the rule above takes the first delete's call, retired[0]'s: this one counts the others)
        proxy.inject(Rule(path="/", operation="DeleteAlarms", action="before", skip=len(retired) - 2, callback=lambda:
                          proxy.inject(fault("ListDashboards", "status", status=400, body=DENIED, times=ALWAYS))))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 3 and not [n for n in alarms(client) if other_cluster(n)], (code, report, stderr)
    assert set(retired) <= set(report["written"]), report
    failed = {f["name"]: f for f in report["failed"]}
    if read_after == "read":
        assert list(failed) == [retired[0]] and failed[retired[0]]["written"] is True, failed
        assert "put on dashboard(s) ops-overview while the Region's deletes ran" in failed[retired[0]]["error"]
    else:
        assert set(retired) <= set(failed) and all(failed[n]["written"] for n in retired), failed
        assert all("could not be read after the Region's deletes" in failed[n]["error"] for n in retired), failed


def test_an_alarm_put_on_a_dashboard_while_another_is_deleted_is_not_deleted(proxied, published, project_dir):
    """A person puts the last retired alarm on their dashboard while the Region's first DeleteAlarms is on its way:
    the dashboards were read once, right before the Region's deletes, and it was deleted (exit 0). Now they are listed
    again right before each alarm's delete (only a dashboard changed since is read): it is not deleted, exit 3,
    naming the dashboard; the others are."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    retired = sorted(n for n in alarms(client) if other_cluster(n))
    arn = alarms(client)[retired[-1]]["AlarmArn"]
    fresh(proxy)
    proxy.inject(Rule(path="/", operation="DeleteAlarms", action="before", contains=retired[0].encode(),
                      callback=lambda: _persons_dashboard(client, arn, "status")))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 3 and [n for n in alarms(client) if other_cluster(n)] == [retired[-1]], (code, report, stderr)
    (failed,) = report["failed"]
    assert failed["name"] == retired[-1] and not failed["written"], failed
    assert "shown on dashboard(s) ops-overview since the plan" in failed["error"], failed


DENIED = {"__type": "AccessDeniedException", "message": "User is not authorized to perform this action"}


@pytest.mark.parametrize("operation, contains, kind", [
    ("ListTagsForResource", b":dashboard/", "dashboard"), ("ListDashboards", b"{}", "alarm")],
    ids=["a retired dashboard's tags", "the dashboards that show a retired alarm"])
def test_a_read_the_plan_made_that_fails_right_before_the_delete_deletes_nothing(proxied, published, project_dir,
                                                                                 operation, contains, kind):
    """The plan read the retired dashboards' tags (none) and every dashboard of the account (none shows a retired
    alarm); then the account loses the permission to read them again (an IAM policy narrowed), and a forced prune
    runs. A read refused right before the delete shows nothing, never "none" (--force agreed to what the plan showed,
    and a tag or dashboard made since would go unseen): none of those deletes is made, each saying why."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    planned: list[str] = []

    def person(changes):
        planned[:] = sorted(c.name for c in changes if c.kind == kind and c.action == "delete")
        assert planned and not any(c.edited for c in changes if c.name in planned)
        proxy.inject(Rule(path="/", operation=operation, action="status", status=400, times=ALWAYS,
                          body=json.dumps(DENIED).encode(), contains=contains))
    outcomes = _forced_prune_after(proxy, person)
    failed = {o.change.name: o.error for o in outcomes if o.error}
    assert sorted(failed) == planned, failed
    assert all("could not be read" in error and "AccessDenied" in error for error in failed.values()), failed
    still = _dashboards(client) if kind == "dashboard" else alarms(client)
    assert set(planned) <= set(still)


def test_a_person_s_tag_the_plan_could_not_read_is_seen_right_before_a_forced_delete(proxied, published, project_dir):
    """The plan could not read the retired dashboards' tags (denied): --force agrees to delete them with whatever tags
    it could not show. Then the tags can be read again, and right before the delete one carries a person's tag: --force
    did not agree to that one, which is not deleted; the others are."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    proxy.inject(Rule(path="/", operation="ListTagsForResource", action="status", status=400, times=ALWAYS,
                      body=json.dumps(DASHBOARD_TAGS_DENIED).encode(), contains=b":dashboard/"))

    def person(changes):
        assert all(c.live["tags"] == "unread" for c in changes if c.kind == "dashboard" and c.action == "delete")
        proxy.clear()
        _tag_dashboard(client, "gpudash-other-health", "team", "ml-oncall")
    outcomes = _forced_prune_after(proxy, person)
    failed = {o.change.name: o.error for o in outcomes if o.error}
    assert list(failed) == ["gpudash-other-health"], failed
    assert "team=ml-oncall" in failed["gpudash-other-health"] and "not deleted" in failed["gpudash-other-health"]
    assert [n for n in _dashboards(client) if other_cluster(n)] == ["gpudash-other-health"]


def _settled() -> None:
    """Wait until a listing answers SETTLED after every dashboard saved so far (its Date is in whole seconds)."""
    import math
    import time

    from generator.clients.cloudwatch import SETTLED

    time.sleep(max(0.0, math.ceil(time.time() + SETTLED.total_seconds()) - time.time()))


def _teams_dashboards(client, count: int) -> None:
    """`count` dashboards of other teams, none showing an alarm gpudash wrote."""
    body = json.dumps({"widgets": [{"type": "text", "x": 0, "y": 0, "width": 6, "height": 3,
                                    "properties": {"markdown": "runbook"}}]})
    for index in range(count):
        client.put_dashboard(DashboardName=f"team-{index:02d}", DashboardBody=body)


def test_the_look_before_the_deletes_reads_only_the_dashboards_changed_since_the_plan(proxied, published,
                                                                                      project_dir):
    """The account holds 30 dashboards of other teams. The plan reads each for the alarms it shows; right before the
    deletes each was read again (every dashboard of the account twice: at 10 reads a second, a prune's cost grew
    with the account, not with what it deletes). Now the listing's stamp of each (LastModified, Size) tells which
    changed since the plan: only those are read again. A person's dashboard the plan read, edited since to show a
    retired alarm, is read again, and that alarm is not deleted."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    _teams_dashboards(client, 30)
    _persons_dashboard(client, _SOMEONE_ELSES, "status")  # read by the plan: shows no alarm of gpudash's
    _settled()  # (made before the plan, not in its second: a stamp that near its listing is read again each time)
    teams_read: list[bool] = []
    proxy.inject(Rule(path="/", operation="GetDashboard", action="before", times=ALWAYS, contains=b'"team-',
                      callback=lambda: teams_read.append(True)))
    _shown_after_the_plan_is_kept(proxy, client)
    # ops-overview, and gpudash's dashboards the apply wrote or deleted, are read again: none of the 30 unchanged ones
    assert len(teams_read) == 30, len(teams_read)


def test_a_listing_without_stamps_reads_every_dashboard_again_before_the_deletes(proxied, published, project_dir):
    """A listing whose entries give no LastModified or Size shows no dashboard unchanged: each is read again right
    before the deletes, and one edited since the plan to show a retired alarm keeps it."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    _persons_dashboard(client, _SOMEONE_ELSES, "status")

    def unstamped(body: bytes) -> bytes:
        answer = json.loads(body)
        for entry in answer.get("DashboardEntries", []):
            entry.pop("LastModified", None), entry.pop("Size", None)
        return json.dumps(answer).encode()
    proxy.inject(fault("ListDashboards", "rewrite", times=ALWAYS, callback=unstamped))
    _shown_after_the_plan_is_kept(proxy, client)


def test_a_no_op_apply_does_not_read_alone_each_untagged_alarm_under_gpudashs_prefix(proxied, published, project_dir):
    """20 alarms a person made by hand under gpudash's name prefix, untagged: the tag index does not show them, and a
    no-op apply read each alone (ListTagsForResource, 3 a second: 7 s of every apply, growing with them) though only
    a prune judges an alarm no longer defined. Now an apply without --prune reads none of them, writes nothing; a
    prune still reads each before calling it foreign, and leaves all 20 as they were."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    people_s = [f"gpudash-gpu-cluster-by-hand-{index:02d}" for index in range(20)]
    for name in people_s:
        foreign_alarm(client, name)
    before = {name: alarms(client)[name] for name in people_s}
    fresh(proxy)
    code, report, stderr = apply("--config", str(project_dir(TWO_CLUSTERS)))
    assert code == 0 and writes(proxy) == [] and proxy.operations.count("ListTagsForResource") == 0, (
        stderr, proxy.operations.count("ListTagsForResource"))
    fresh(proxy)
    code, report, stderr = apply("--config", str(project_dir(TWO_CLUSTERS)), "--prune")
    assert code == 0 and writes(proxy) == [] and proxy.operations.count("ListTagsForResource") >= len(people_s), stderr
    assert {name: alarms(client)[name] for name in people_s} == before


def test_retired_dashboards_are_found_on_every_page_of_the_listing(proxied, published, project_dir):
    import json

    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    fresh(proxy)
    first_page = json.dumps({"DashboardEntries": [], "NextToken": "next-page"}).encode()
    proxy.inject(fault("ListDashboards", "rewrite", callback=lambda body: first_page))
    code, report, _ = apply("--prune", "--removed-cluster", "other")
    # two pages of the listing of every name, and one listing of each cluster's names (gpu-cluster, other); and the
    # account's every dashboard listed for the alarms they show by the plan, right before each alarm's delete and once
    # after the deletes
    alarm_deletes = [c for c in report["changes"] if c["kind"] == "alarm" and c["action"] == "delete"]
    assert code == 0 and proxy.operations.count("ListDashboards") == 2 + 2 + 1 + len(alarm_deletes) + 1
    assert sorted(c["name"] for c in report["changes"] if c["kind"] == "dashboard" and c["action"] == "delete") == [
        "gpudash-other-by-pod", "gpudash-other-health", "gpudash-other-overview"]
    assert [n for n in _dashboards(client) if other_cluster(n)] == []


def test_each_retired_alarm_is_deleted_alone_right_after_its_own_tag_read(proxied, published, project_dir):
    """12 retired alarms: 12 DeleteAlarms calls (they went 4 calls of 3, and 2 of up to 100 before that), each the
    next alarm call after that alarm's own tag read (its fields read before it)."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    fresh(proxy)
    code, report, _ = apply("--prune", "--removed-cluster", "other")
    assert code == 0 and len([c for c in report["changes"] if c["action"] == "delete" and c["kind"] == "alarm"]) == 13
    calls = [op for op in proxy.operations if op in ("DescribeAlarms", "ListTagsForResource", "DeleteAlarms")]
    assert calls.count("DeleteAlarms") == 13
    assert all(calls[i - 2:i] == ["DescribeAlarms", "ListTagsForResource"] for i, op in enumerate(calls)
               if op == "DeleteAlarms"), calls
    assert [n for n in alarms(client) if other_cluster(n)] == []


def test_each_alarm_written_is_read_alone_right_before_its_write_and_once_after(proxied):
    """The last read before each alarm's write is a read of that alarm alone (an earlier read, the batch's check or
    the previous alarm's read-back, is followed by other calls: a person's alarm made meanwhile was overwritten). A
    first apply of the 13 alarms lists them (1 DescribeAlarms), checks the batch (1), and reads each right before its
    write and right after it (26): 28 reads, and each PutMetricAlarm follows a DescribeAlarms."""
    proxy, client, apply = proxied
    code, report, _ = apply()
    written = [c["name"] for c in report["changes"] if c["kind"] == "alarm" and c["action"] == "create"]
    assert code == 0 and len(written) == 13 and sorted(alarms(client)) == sorted(written)
    assert proxy.operations.count("PutMetricAlarm") == 13 and proxy.operations.count("DescribeAlarms") == 28
    calls = [op for op in proxy.operations if "Dashboard" not in op]  # the alarms' calls (dashboards run beside)
    assert all(calls[index - 1] == "DescribeAlarms" for index, op in enumerate(calls) if op == "PutMetricAlarm"), calls


def test_a_lost_tag_write_converges_without_false_drift(proxied, published, project_dir):
    proxy, client, apply = proxied
    published()
    config = project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n")
    proxy.inject(fault("TagResource", "status", times=ALWAYS, status=500, body={"__type": "InternalFailure"}))
    code, report, _ = apply("--config", str(config))
    assert code == 3 and [f["name"] for f in report["failed"]] == [EDITED]
    assert alarms(client)[EDITED]["Threshold"] == 90.0  # written, but its new hash was not
    fresh(proxy)
    code, report, _ = apply("--config", str(config))
    assert code == 0 and report["written"] == [EDITED] and writes(proxy) == ["TagResource"]
    fresh(proxy)
    assert apply("--config", str(config))[1]["written"] == [] and writes(proxy) == []


def test_two_publishers_at_once_converge(proxied):
    """Both plan before either writes; the second finds everything already as generated."""
    from generator.clients.cloudwatch import CloudWatch
    from generator.targets import cloudwatch_sync

    proxy, client, _ = proxied
    desired = default_desired()
    first, second = (CloudWatch(endpoint_url=proxy.url) for _ in range(2))
    plans = [cloudwatch_sync.plan(cw, desired) for cw in (first, second)]
    outcomes = [cloudwatch_sync.apply(cw, plan, desired.cloudwatch_dashboards, desired.alarms, force=False,
                                      prune=False, dry_run=False) for cw, plan in zip((first, second), plans)]
    assert all(o.done for o in outcomes[0]) and len(outcomes[0]) == 16
    assert not any(o.error or o.done for o in outcomes[1])
    fresh(proxy)
    again = cloudwatch_sync.plan(first, desired)
    assert {c.action for c in again} == {"unchanged"} and writes(proxy) == []


def test_apply_stops_at_its_deadline_and_lists_what_was_and_was_not_written(proxied, deadline_clock):
    proxy, client, apply = proxied
    # The first alarm write takes (on the test's clock) far longer than the whole command may.
    proxy.inject(fault("PutMetricAlarm", "before", callback=lambda: deadline_clock.sleep(1000)))
    code, report, stderr = apply("--deadline", "60")
    assert code == 3 and "Traceback" not in stderr
    stopped = [f for f in report["failed"] if "did not finish within its deadline of 60 s" in f["error"]]
    assert stopped and len(report["written"]) + len(report["failed"]) == 16
    # Every alarm reported written is there; the one whose write the deadline cut short before it could be
    # read back is not shown done, so it is reported failed even if the write took effect.
    live = alarms(client)
    assert [n for n in report["written"] if n.endswith(("-warning", "-critical")) and n not in live] == []
    assert {n for n in live if n not in report["written"]} <= {f["name"] for f in stopped}
    fresh(proxy)
    code, again, _ = apply()
    assert code == 0 and set(again["written"]) <= {f["name"] for f in stopped}
    code, last, _ = apply()
    assert code == 0 and last["written"] == []


def _get_resources_fails(proxied, published, error: str, message: str):
    """The defaults published, then every GetResources of the next run answered 400 with the error `error`, saying
    `message`: (the proxy, apply)."""
    proxy, _, apply = proxied
    published()
    fresh(proxy)
    proxy.inject(fault("GetResources", "status", times=ALWAYS, status=400, body={"__type": error, "message": message}))
    return proxy, apply


def test_without_tag_get_resources_tags_are_read_one_alarm_at_a_time_with_a_note(proxied, published):
    proxy, apply = _get_resources_fails(proxied, published, "AccessDeniedException",
                                        "not authorized to tag:GetResources")
    code, report, stderr = apply()
    assert code == 0 and report["written"] == [] and writes(proxy) == []
    assert "note: tag:GetResources is not allowed in us-east-1" in stderr and "grant tag:GetResources" in stderr
    assert proxy.operations.count("ListTagsForResource") == 13
    # the JSON report holds what stderr noted (it held the changes and their outcomes alone)
    assert [n for n in report["notes"] if n["message"].startswith("tag:GetResources is not allowed in us-east-1")
            and n["where"] is n["fix"] is n["rule"] is None], report


def test_what_the_plan_noted_is_printed_when_a_later_read_fails(proxied, published):
    """tag:GetResources refused (noted: tags are read one alarm at a time), then a dashboard listing that is not an
    API answer stops the run (exit 3): the note was lost with it; now it is printed before the error."""
    proxy, apply = _get_resources_fails(proxied, published, "AccessDeniedException",
                                        "not authorized to tag:GetResources")
    proxy.inject(fault("ListDashboards", "body", times=ALWAYS, body=b"{}"))
    code, _, stderr = apply()
    assert code == 3 and writes(proxy) == [], stderr
    assert "note: tag:GetResources is not allowed in us-east-1" in stderr, stderr
    assert stderr.index("note: tag:GetResources") < stderr.index("error:"), stderr


def test_an_alarm_cloudwatch_reports_in_its_own_form_is_neither_drift_nor_rewritten(proxied):
    assert len(reported_in_a_form_of_its_own(proxied, without_query_periods)["written"]) == 16


def _with_query_accounts(body: bytes) -> bytes:
    """A DescribeAlarms answer reporting each query with the account it reads (AccountId), which gpudash never sends:
    what DescribeAlarms reports for a query that named none is not documented."""
    answer = json.loads(body)
    for alarm in answer.get("MetricAlarms", []):
        for query in alarm.get("Metrics", []):
            query.setdefault("AccountId", "123456789012")
    return json.dumps(answer).encode()


def test_a_query_reported_with_the_account_it_reads_is_cloudwatch_s_form_not_a_failed_write(proxied):
    """Every create is read back; a query reported with an AccountId gpudash did not send is CloudWatch's own form
    (recorded in the evidence), not a write that did not take effect; a console edit is still seen."""
    assert len(reported_in_a_form_of_its_own(proxied, _with_query_accounts)["written"]) == 16


def test_tags_of_many_alarms_are_read_page_by_page_in_bulk(proxied, published, project_dir):
    proxy, client, apply = proxied
    config = project_dir("clusters:\n" + "".join(f"  - {{name: c{i}, region: us-east-1}}\n" for i in range(4)))
    published("--config", str(config))
    fresh(proxy)
    code, report, _ = apply("--config", str(config))
    assert code == 0 and report["written"] == [] and writes(proxy) == []
    assert report["summary"] == {"unchanged": 64}  # 12 dashboards, 52 alarms
    # moto pages GetResources by tags (100 a page): 48 alarms' tags fill three pages, a first, a middle and a last;
    # every page is read, no alarm alone (an alarm of a page left unread would be read alone, or not be gpudash's).
    assert proxy.operations.count("GetResources") >= 3 and proxy.operations.count("ListTagsForResource") == 0


def test_alarm_listings_are_read_to_their_last_page(proxied, published):
    """moto answers DescribeAlarms in one page; the proxy splits its answer into two pages."""
    import json

    proxy, client, apply = proxied
    published()
    pages = []

    def split(body: bytes) -> bytes:
        answer = json.loads(body)
        half = len(answer["MetricAlarms"]) // 2
        pages.append(half)
        if len(pages) == 1:
            answer.update(MetricAlarms=answer["MetricAlarms"][:half], NextToken="page-2")
        else:
            answer["MetricAlarms"] = answer["MetricAlarms"][half:]
        return json.dumps(answer).encode()

    fresh(proxy)
    proxy.inject(fault("DescribeAlarms", "rewrite", times=2, callback=split))
    code, report, _ = apply()
    assert len(pages) == 2 and code == 0 and report["summary"] == {"unchanged": 16} and writes(proxy) == []


def test_an_alarm_tagged_by_hand_without_gpudash_evidence_is_pruned_only_with_force(aws, published):
    """Someone adds ManagedBy=gpudash and this project's tag to their own alarm under the prefix: with no
    gpudash:sha256 tag there is no evidence gpudash wrote it as it is, so --prune alone leaves it; --prune
    --force deletes it."""
    from generator.markers import ALARM_OWNER_TAG

    client, apply = aws
    published()
    name = "gpudash-gpu-cluster-handmade"
    foreign_alarm(client, name)
    client.tag_resource(ResourceARN=alarms(client)[name]["AlarmArn"],
                        Tags=[ALARM_OWNER_TAG, {"Key": "gpudash:project", "Value": "test"}])
    before = snapshot(client)
    for flags in (("--prune",), ("--prune", "--dry-run")):
        code, report, _ = apply(*flags)
        assert code == 1 and report["refused"] == [name], report
        assert snapshot(client) == before
    code, report, _ = apply("--prune", "--removed-cluster", "other", "--force")
    assert code == 0 and report["written"] == [name]
    assert name not in alarms(client)


def _tags(client, name):
    return {t["Key"]: t["Value"] for t in client.list_tags_for_resource(ResourceARN=alarms(client)[name]["AlarmArn"])[
        "Tags"]}


THRESHOLD_CHANGE = "thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n"


def test_alarms_taken_over_or_retagged_between_plan_and_apply_are_neither_deleted_nor_overwritten(
        proxied, published, project_dir):
    """Between the plan and the writes a person takes alarms over: strips the ownership tag of an alarm the
    plan updates and of one it deletes, gives another to their team, rewrites the hash tag of a third.
    Even with --prune --force none of them is written or deleted (each is reported); the rest is."""
    from generator.artifacts import build
    from generator.clients.cloudwatch import CloudWatch
    from generator.desired import desired_from
    from generator.project import load_project
    from generator.targets import cloudwatch_sync

    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    desired = desired_from(build(load_project(project_dir(THRESHOLD_CHANGE))))  # one cluster: "other" retires
    cloudwatch = CloudWatch(endpoint_url=proxy.url)
    changes = cloudwatch_sync.plan(cloudwatch, desired, renamed_from=("other",))
    retired = sorted(c.name for c in changes if c.kind == "alarm" and c.action == "delete")
    assert len(retired) == 13 and [c.name for c in changes if c.kind == "alarm" and c.action == "update"] == [EDITED]
    stripped, given_away, rehashed = retired[:3]
    arn = {name: alarm["AlarmArn"] for name, alarm in alarms(client).items()}
    for name in (EDITED, stripped):
        client.untag_resource(ResourceARN=arn[name], TagKeys=["ManagedBy"])
    client.tag_resource(ResourceARN=arn[given_away], Tags=[{"Key": "ManagedBy", "Value": "team-ml"}])
    client.tag_resource(ResourceARN=arn[rehashed], Tags=[{"Key": "gpudash:sha256", "Value": "0123456789abcdef"}])
    fresh(proxy)
    outcomes = cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                     force=True, prune=True, dry_run=False)
    failed = {o.change.name: o.error for o in outcomes if o.error}
    assert sorted(failed) == sorted([EDITED, stripped, given_away, rehashed])
    assert "ManagedBy=gpudash tag was removed or changed by someone else since the plan; not overwritten" in \
        failed[EDITED]
    for name in (stripped, given_away):
        assert "ManagedBy=gpudash tag was removed or changed by someone else since the plan; not deleted" in \
            failed[name]
    assert "gpudash:sha256 tag was changed by someone else since the plan; not deleted" in failed[rehashed]
    live = alarms(client)
    assert sorted(n for n in live if other_cluster(n)) == sorted([stripped, given_away, rehashed])
    assert live[EDITED]["Threshold"] == 87.0 and "ManagedBy" not in _tags(client, EDITED)  # the takeover stands
    assert _tags(client, given_away)["ManagedBy"] == "team-ml"
    assert [o.change.name for o in outcomes if o.done and o.change.kind == "alarm"] == [
        n for n in retired if n not in failed]
    assert proxy.operations.count("DeleteAlarms") == 10  # one call for each alarm not taken


def test_an_alarm_taken_over_while_apply_writes_is_not_deleted(proxied, published, project_dir):
    """The person acts while apply is already writing (just before its first PutMetricAlarm): the tags and
    fields are read again right before DeleteAlarms, so the alarms they took over or edited stay."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    taken, edited = RETIRED_EDITED, "gpudash-other-xid-error-critical"

    def person():
        client.untag_resource(ResourceARN=alarms(client)[taken]["AlarmArn"], TagKeys=["ManagedBy"])
        edit_in_console(client, edited, threshold=3.0)

    fresh(proxy)
    proxy.inject(fault("PutMetricAlarm", "before", callback=person))
    code, report, stderr = apply("--config", str(project_dir(THRESHOLD_CHANGE)), "--prune", "--removed-cluster", "other")
    assert code == 3 and sorted(f["name"] for f in report["failed"]) == sorted([taken, edited]), report
    assert all("not deleted" in f["error"] for f in report["failed"]) and "Traceback" not in stderr
    assert EDITED in report["written"] and alarms(client)[EDITED]["Threshold"] == 90.0
    assert sorted(n for n in alarms(client) if other_cluster(n)) == sorted([taken, edited])
    assert alarms(client)[edited]["Threshold"] == 3.0 and "ManagedBy" not in _tags(client, taken)
    fresh(proxy)  # the next run sees them as they now are: one foreign (never touched), one edited (needs --force)
    code, report, _ = apply("--config", str(project_dir(THRESHOLD_CHANGE)), "--prune", "--removed-cluster", "other")
    assert code == 1 and report["refused"] == [edited] and writes(proxy) == []
    assert taken not in [c["name"] for c in report["changes"]]


def test_an_alarm_deleted_by_someone_else_before_the_prune_is_no_failure(proxied, published, project_dir):
    from generator.clients.cloudwatch import CloudWatch
    from generator.targets import cloudwatch_sync

    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    desired = default_desired()
    cloudwatch = CloudWatch(endpoint_url=proxy.url)
    changes = cloudwatch_sync.plan(cloudwatch, desired, renamed_from=("other",))
    client.delete_alarms(AlarmNames=[RETIRED_EDITED])
    client.delete_dashboards(DashboardNames=["gpudash-other-health"])
    outcomes = cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                     force=False, prune=True, dry_run=False)
    assert [o.error for o in outcomes if o.error] == []
    assert [n for n in alarms(client) if other_cluster(n)] == []
    assert {o.change.name: o.state for o in outcomes}[RETIRED_EDITED] == "skipped"


def test_an_edit_made_while_apply_writes_other_alarms_is_not_taken_for_cloudwatch_s_form(proxied):
    """CloudWatch reports alarms in a form of its own, which apply reads back and keeps in the evidence. A person
    edits the first alarm written while apply writes the next: the read-back came right after that alarm's
    write, so the edit is not recorded as CloudWatch's form, and the next run sees it as drift."""
    proxy, client, apply = proxied
    edited = []

    def person():
        (name,) = alarms(client)  # the one alarm written so far
        edit_in_console(client, name, threshold=3.0)
        edited.append(name)

    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=without_query_periods),
                 Rule(path="/", operation="PutMetricAlarm", action="before", skip=1, callback=person))
    code, report, _ = apply()
    assert code == 0 and edited[0] in report["written"] and len(edited) == 1
    fresh(proxy)
    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=without_query_periods))
    code, report, _ = apply()
    assert code == 1 and report["refused"] == edited and writes(proxy) == []
    assert alarms(client)[edited[0]]["Threshold"] == 3.0


def test_an_alarm_edited_while_apply_writes_the_ones_before_it_is_not_overwritten(proxied, published, project_dir):
    """A batch's writes take up to half a minute at 3 a second: each alarm's fields are read again right before
    its own write, so a console edit made while apply writes the alarms before it survives (and is reported)."""
    proxy, client, apply = proxied
    published()
    first, second = "gpudash-gpu-cluster-gpu-temp-critical-critical", "gpudash-gpu-cluster-gpu-temp-high-warning"
    fresh(proxy)
    proxy.inject(Rule(path="/", operation="PutMetricAlarm", action="before",
                      callback=lambda: edit_in_console(client, second, threshold=99.0)))
    both = project_dir("thresholds:\n  gpu_temp_celsius: {warning: 70, critical: 90}\n")
    code, report, _ = apply("--config", str(both))
    assert code == 3 and report["written"].count(first) == 1 and [f["name"] for f in report["failed"]] == [second]
    assert "changed by someone else since the plan; not overwritten" in report["failed"][0]["error"]
    assert alarms(client)[first]["Threshold"] == 90.0 and alarms(client)[second]["Threshold"] == 99.0


RETIRED_DASHBOARD_TAG_READS = 3 * 2  # a removed cluster's 3 dashboards, each its tags read by the plan and the look


def test_the_last_look_before_a_prune_reads_each_alarms_own_tags(proxied, published, project_dir):
    """A prune of the 12 alarms of a removed cluster: the last look before DeleteAlarms asks each alarm its own tags
    (ListTagsForResource), not the Tagging API's index (GetResources by ARN), whose freshness AWS does not document:
    a delete cannot be undone. Every retired alarm is deleted."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    fresh(proxy)
    proxy.inject(Rule(path="/", operation="GetResources", action="before", times=ALWAYS, contains=b"ResourceARNList",
                      callback=lambda: looks.append(1)))
    looks: list[int] = []
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 0 and [n for n in alarms(client) if other_cluster(n)] == [], stderr
    assert len([c for c in report["changes"] if c["action"] == "delete" and c["kind"] == "alarm"]) == 13
    # (and each of the 3 retired dashboards' tags, read by the plan and by the look before its delete)
    assert proxy.operations.count("ListTagsForResource") == 13 + RETIRED_DASHBOARD_TAG_READS and looks == []


def _bulk_answer(change):
    """A rewrite of the GetResources answers that name ARNs (the last look's): `change(items)` gives its items."""
    import json

    def rewrite(body: bytes) -> bytes:
        answer = json.loads(body)
        answer["ResourceTagMappingList"] = change(answer["ResourceTagMappingList"])
        return json.dumps(answer).encode()
    return rewrite


@pytest.mark.parametrize("bulk", ["leaves-out", "shows-otherwise"])
def test_the_last_look_asks_an_alarm_alone_where_the_batchs_tag_read_does_not_show_it_as_planned(
        proxied, published, project_dir, bulk):
    """While apply writes, a person strips the ownership tag of an alarm the plan retires: each retired alarm is
    asked alone (ListTagsForResource), so the person's alarm is not deleted and the other eleven are. The alarm the
    plan updates is read with the batch's GetResources by ARN; that answer leaves it out (an index that does not know
    it yet) or shows it without its ownership tag (an index behind a tag write): it is asked alone, whose answer
    decides, and is updated (then read once more right before its write)."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    taken, other = RETIRED_EDITED, EDITED

    def person():
        client.untag_resource(ResourceARN=alarms(client)[taken]["AlarmArn"], TagKeys=["ManagedBy"])

    def named(item, *names):
        return item["ResourceARN"].rsplit(":", 1)[1] in names

    if bulk == "leaves-out":
        change = _bulk_answer(lambda items: [i for i in items if not named(i, taken, other)])
    else:
        change = _bulk_answer(lambda items: [{**i, "Tags": [t for t in i["Tags"] if t["Key"] != "ManagedBy"]}
                                             if named(i, other) else i for i in items])
    fresh(proxy)
    proxy.inject(Rule(path="/", operation="GetResources", action="rewrite", times=ALWAYS, contains=b"ResourceARNList",
                      callback=change),
                 fault("PutMetricAlarm", "before", callback=person))
    code, report, stderr = apply("--config", str(project_dir(THRESHOLD_CHANGE)), "--prune", "--removed-cluster",
                                 "other")
    failed = {f["name"]: f["error"] for f in report["failed"]}
    assert code == 3 and list(failed) == [taken], report
    assert "ManagedBy=gpudash tag was removed or changed by someone else since the plan; not deleted" in failed[taken]
    assert taken in alarms(client) and "ManagedBy" not in _tags(client, taken)
    assert sorted(n for n in alarms(client) if other_cluster(n)) == [taken]  # the other retired alarms went
    assert alarms(client)[other]["Threshold"] == 90.0  # updated: its own answer shows it gpudash's
    # the 13 retired alarms asked alone; the updated one alone at the last look, right before its write, right
    # before its tag write and after it (the read-back that shows the evidence written); and the retired dashboards'
    assert proxy.operations.count("ListTagsForResource") == 17 + RETIRED_DASHBOARD_TAG_READS and "Traceback" not in stderr


def test_an_update_reads_its_alarms_own_tags_right_before_its_write(proxied, published, project_dir):
    """A person strips the ownership tag of the alarm an apply updates while the batch's tag read is made, and that
    read (GetResources, from the Tagging API's index) still shows the tag. The update overwrote the person's alarm
    with gpudash's threshold, exit 0; now the alarm's own tags are read right before its write: not overwritten
    (exit 3), saying why."""
    proxy, client, apply = proxied
    published()

    def person_then_index(body: bytes) -> bytes:  # the index answers as before the person's strip
        client.untag_resource(ResourceARN=alarms(client)[EDITED]["AlarmArn"], TagKeys=["ManagedBy"])
        return body

    fresh(proxy)
    proxy.inject(Rule(path="/", operation="GetResources", action="rewrite", contains=b"ResourceARNList",
                      callback=person_then_index))
    code, report, stderr = apply("--config", str(project_dir(THRESHOLD_CHANGE)))
    failed = {f["name"]: f["error"] for f in report["failed"]}
    assert code == 3 and list(failed) == [EDITED], stderr
    assert "ManagedBy=gpudash tag was removed or changed by someone else since the plan; not overwritten" in \
        failed[EDITED]
    assert alarms(client)[EDITED]["Threshold"] == 87.0 and "ManagedBy" not in _tags(client, EDITED)


def test_a_console_edit_made_while_an_updates_own_tags_are_read_is_not_overwritten(proxied, published, project_dir):
    """An update read its alarm's fields, then its own tags (ListTagsForResource, paced at 3 a second: that read may
    wait its turn, up to a second), then wrote: a console edit made meanwhile (here: as the tag read goes) was
    overwritten with gpudash's threshold, exit 0. The tags are read first now and the fields last, right before the
    write: the edit is seen and kept, reported (exit 3)."""
    import json

    proxy, client, apply = proxied
    published()
    arn = alarms(client)[EDITED]["AlarmArn"]
    fresh(proxy)
    proxy.inject(Rule(path="/", operation="ListTagsForResource", action="before", contains=json.dumps(arn).encode(),
                      callback=lambda: edit_in_console(client, EDITED, threshold=95.0)))
    code, report, stderr = apply("--config", str(project_dir(THRESHOLD_CHANGE)))
    failed = {f["name"]: f["error"] for f in report["failed"]}
    assert alarms(client)[EDITED]["Threshold"] == 95.0, (code, report["written"], failed)
    assert code == 3 and list(failed) == [EDITED], stderr
    assert "changed by someone else since the plan; not overwritten" in failed[EDITED], failed


def test_a_batchs_tag_read_that_is_not_an_api_answer_writes_nothing(proxied, published, project_dir):
    """The last look's GetResources by ARN answered `{}` (every time): not "no tags" (which would send each alarm to
    be asked alone, or worse, be read as none owned), but a failure: the batch's update is not written (exit 3)."""
    proxy, client, apply = proxied
    published(settle=True)
    fresh(proxy)
    proxy.inject(Rule(path="/", operation="GetResources", action="body", times=ALWAYS, contains=b"ResourceARNList",
                      body=b"{}"))
    code, report, stderr = apply("--config", str(project_dir(THRESHOLD_CHANGE)))
    assert code == 3 and [f["name"] for f in report["failed"]] == [EDITED], stderr
    assert all("not an API answer" in f["error"] for f in report["failed"]) and "Traceback" not in stderr
    assert alarms(client)[EDITED]["Threshold"] != 90.0 and "PutMetricAlarm" not in proxy.operations


def _tagging_answer(moto_url: str) -> list[dict]:
    """Every alarm the Tagging API lists with the ownership tag now, as one answer holding every page."""
    import boto3

    pages = boto3.client("resourcegroupstaggingapi", region_name="us-east-1", endpoint_url=moto_url,
                         aws_access_key_id="testing", aws_secret_access_key="testing").get_paginator("get_resources")
    return [item for page in pages.paginate(ResourceTypeFilters=["cloudwatch:alarm"],
                                            TagFilters=[{"Key": "ManagedBy", "Values": ["gpudash"]}])
            for item in page["ResourceTagMappingList"]]


@pytest.mark.parametrize("person_does", ["strips-the-ownership-tag", "re-creates-the-alarm-untagged"])
def test_an_alarm_a_person_took_since_the_plan_is_not_deleted_while_the_tagging_index_still_shows_it_owned(
        proxied, published, project_dir, moto, person_does):
    """The Tagging API answers from an index whose freshness AWS does not document. While apply writes, a person
    takes an alarm the plan retires: strips its ManagedBy tag, or deletes it and creates their own alarm of that
    name (same ARN, same fields, no tags). GetResources still answers as before (the index has not caught up). The
    last look before DeleteAlarms must read fresh evidence of ownership (ListTagsForResource answers from the alarm
    itself): the person's alarm stays, reported (exit 3). With the bulk answer as the last look (3be845c), the stale
    index showed the tags the plan read, and the alarm was deleted."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    taken = RETIRED_EDITED
    stale = _tagging_answer(moto.url)  # as before the person's change
    assert taken in {item["ResourceARN"].rsplit(":", 1)[1] for item in stale}

    def person():
        alarm = alarms(client)[taken]
        if person_does == "strips-the-ownership-tag":
            client.untag_resource(ResourceARN=alarm["AlarmArn"], TagKeys=["ManagedBy"])
            return
        keep = ("AlarmName", "AlarmDescription", "ActionsEnabled", "OKActions", "AlarmActions",
                "InsufficientDataActions", "MetricName", "Namespace", "Statistic", "ExtendedStatistic",
                "Dimensions", "Period", "Unit", "EvaluationPeriods", "DatapointsToAlarm", "Threshold",
                "ComparisonOperator", "TreatMissingData", "EvaluateLowSampleCountPercentile", "Metrics",
                "ThresholdMetricId")
        client.delete_alarms(AlarmNames=[taken])
        client.put_metric_alarm(**{k: v for k, v in alarm.items() if k in keep and v not in (None, [], "")})
        left = list(_tags(client, taken))  # moto keeps a deleted alarm's tags by ARN; CloudWatch deletes them with it
        if left:
            client.untag_resource(ResourceARN=alarm["AlarmArn"], TagKeys=left)
        assert _tags(client, taken) == {}

    fresh(proxy)
    # the listing by tag answers from the stale index (a read by ARN, which must list only the ARNs asked, from moto)
    proxy.inject(Rule(path="/", operation="GetResources", action="body", times=ALWAYS, contains=b"TagFilters",
                      body=json.dumps({"ResourceTagMappingList": stale, "PaginationToken": ""}).encode()),
                 fault("PutMetricAlarm", "before", callback=person))
    code, report, stderr = apply("--config", str(project_dir(THRESHOLD_CHANGE)), "--prune", "--removed-cluster",
                                 "other")
    assert taken in alarms(client), f"the person's alarm {taken} was deleted: exit {code}, {report.get('failed')}"
    assert code == 3 and [f["name"] for f in report["failed"]] == [taken], report
    assert sorted(n for n in alarms(client) if other_cluster(n)) == [taken]  # the other retired alarms went
    assert "Traceback" not in stderr


def test_an_alarm_whose_ownership_tag_is_stripped_just_before_the_last_look_is_not_overwritten(
        proxied, published, project_dir):
    """The Tagging API's index a moment behind: the person strips ManagedBy from an alarm the plan updates while the
    batch's GetResources is answered, and the answer is the one computed just before the strip (moto's own answer,
    passed on unchanged; with one ListTagsForResource per alarm, the strip comes just before the first). The update
    must not overwrite the person's alarm: ListTagsForResource shows the strip; the alarm keeps its threshold and is
    reported (exit 3). With the bulk answer as the last look (3be845c) it was overwritten (87 -> 90), exit 0."""
    proxy, client, apply = proxied
    published(settle=True)
    taken, done = "gpudash-gpu-cluster-gpu-temp-critical-critical", []
    before = alarms(client)[taken]["Threshold"]

    def strip():
        if not done:
            client.untag_resource(ResourceARN=alarms(client)[taken]["AlarmArn"], TagKeys=["ManagedBy"])
            done.append(True)

    def strip_then_answer_as_before(body: bytes) -> bytes:
        strip()
        return body

    fresh(proxy)  # the strip comes with the last look's first tag read, whichever call makes it
    proxy.inject(Rule(path="/", operation="GetResources", action="rewrite", times=ALWAYS, contains=b"ResourceARNList",
                      callback=strip_then_answer_as_before),
                 Rule(path="/", operation="ListTagsForResource", action="before", times=ALWAYS, callback=strip))
    code, report, stderr = apply("--config", str(project_dir(THRESHOLD_CHANGE)))
    assert done and "ManagedBy" not in _tags(client, taken)
    assert alarms(client)[taken]["Threshold"] == before, (code, report["written"], report["failed"])
    assert code == 3 and [f["name"] for f in report["failed"]] == [taken], report


def test_an_ownership_tag_stripped_just_before_the_last_looks_fields_read_keeps_the_alarm(
        proxied, published, project_dir):
    """The last look before DeleteAlarms read each alarm's tags, then the fields: a person who strips ManagedBy
    after the tag read (here: just before the fields read) had the alarm deleted, exit 0 for it. The fields are read
    first now, the tags last: the strip is seen and the alarm stays, reported."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    victim = sorted(n for n in alarms(client) if other_cluster(n))[0]
    arn = alarms(client)[victim]["AlarmArn"]
    fresh(proxy)  # the first DescribeAlarms naming the victim is the last look's (the plan lists by prefix)
    proxy.inject(Rule(path="/", operation="DescribeAlarms", action="before", times=1, contains=victim.encode(),
                      callback=lambda: client.untag_resource(ResourceARN=arn, TagKeys=["ManagedBy"])))
    code, report, stderr = apply("--config", str(project_dir("")), "--prune", "--removed-cluster", "other")
    assert victim in alarms(client) and "ManagedBy" not in _tags(client, victim), report
    assert code == 3 and [f["name"] for f in report["failed"]] == [victim], report
    assert "tag was removed or changed by someone else since the plan; not deleted" in report["failed"][0]["error"]
    assert sorted(n for n in alarms(client) if other_cluster(n)) == [victim] and "Traceback" not in stderr


def test_an_alarm_a_person_takes_while_the_prune_reads_the_other_alarms_tags_is_not_deleted(
        proxied, published, project_dir, deadline_clock):
    """A prune of 12 alarms. The last look read the tags of all 12 (ListTagsForResource, 3 a second) and then sent
    one DeleteAlarms: the first alarm's ownership read was 3.7 s old (33 s in a batch of 100), and a person who took
    that alarm meanwhile (stripped ManagedBy, at the twelfth tag read) had it deleted. Now each alarm is read and
    deleted before the next is read: every DeleteAlarms follows its alarm's tag read within the same second (pacing
    clock), and the person finds the first alarm already deleted."""
    import json

    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    doomed = sorted(n for n in alarms(client) if other_cluster(n))
    arns = {n: alarms(client)[n]["AlarmArn"] for n in doomed}
    read: list[tuple[str, float]] = []
    deletes: list[float] = []
    taken: list[str] = []

    def tag_read(name):
        def seen():
            read.append((name, deadline_clock.now()))
            first = read[0][0]
            if len(read) == len(doomed) and first in alarms(client):  # a person takes the alarm read first
                client.untag_resource(ResourceARN=arns[first], TagKeys=["ManagedBy"])
                taken.append(first)
        return seen

    fresh(proxy)
    proxy.inject(*(Rule(path="/", operation="ListTagsForResource", action="before", times=ALWAYS,
                        contains=json.dumps(arns[n]).encode(), callback=tag_read(n)) for n in doomed),
                 Rule(path="/", operation="DeleteAlarms", action="before", times=ALWAYS,
                      callback=lambda: deletes.append(deadline_clock.now())))
    code, report, stderr = apply("--config", str(project_dir("")), "--prune", "--removed-cluster", "other")
    assert sorted(n for n, _ in read) == doomed and "Traceback" not in stderr
    assert [n for n in taken if n not in alarms(client)] == [], f"{taken} deleted after a person took it"
    # each DeleteAlarms goes within a second (pacing clock) of its alarm's tag read
    assert len(deletes) == len(read) == 13
    assert max(sent - at for sent, (_, at) in zip(deletes, read)) <= 1.0
    assert taken == [] and code == 0 and sorted(n for n in alarms(client) if other_cluster(n)) == [], report


def test_an_alarm_deleted_between_its_fields_and_tag_read_is_already_gone_not_taken_over(proxied, published,
                                                                                         project_dir):
    """A person deletes a retired alarm after its fields are read and before its tags are (CloudWatch
    deletes the tags with it: ListTagsForResource answers not found, read as no tags). It was reported "its ManagedBy
    tag was removed ... not deleted", exit 3; the fields are read again where an alarm shows no tags: already gone."""
    import json

    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    victim = sorted(n for n in alarms(client) if other_cluster(n))[0]
    arn = alarms(client)[victim]["AlarmArn"]
    looked: list[int] = []
    fired: list[int] = []

    def person():
        if looked and not fired:
            fired.append(1)
            keys = [t["Key"] for t in client.list_tags_for_resource(ResourceARN=arn)["Tags"]]
            client.untag_resource(ResourceARN=arn, TagKeys=keys)  # moto keeps a deleted alarm's tags; AWS does not
            client.delete_alarms(AlarmNames=[victim])

    fresh(proxy)
    proxy.inject(Rule(path="/", operation="DescribeAlarms", action="before", times=1, contains=victim.encode(),
                      callback=lambda: looked.append(1)),
                 Rule(path="/", operation="ListTagsForResource", action="before", times=ALWAYS,
                      contains=json.dumps(arn).encode(), callback=person))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert fired and code == 0 and report["failed"] == [], stderr
    assert sorted(n for n in alarms(client) if other_cluster(n)) == []


def test_no_retired_alarm_is_deleted_after_a_person_took_it_while_the_prune_read_another(
        proxied, published, project_dir):
    """A prune of 12 alarms; as the prune reads each retired alarm's tags, a person takes the alarm whose tags were
    read just before it, if it is still there (strips ManagedBy). In a group of 3 read one after the other and then
    deleted with one DeleteAlarms, the group's first two alarms were deleted after the person took them (their
    ownership read was one or two tag reads old), exit 0. Each alarm's own tags are now the last read before its
    DeleteAlarms: no alarm a person took before its delete is deleted."""
    import json

    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    doomed = sorted(n for n in alarms(client) if other_cluster(n))
    arns = {n: alarms(client)[n]["AlarmArn"] for n in doomed}
    read: list[str] = []
    taken: list[str] = []

    def tag_read(name):
        def seen():
            if read and read[-1] != name and read[-1] in alarms(client):  # the alarm read before this one
                client.untag_resource(ResourceARN=arns[read[-1]], TagKeys=["ManagedBy"])
                taken.append(read[-1])
            read.append(name)
        return seen

    fresh(proxy)
    proxy.inject(*(Rule(path="/", operation="ListTagsForResource", action="before", times=ALWAYS,
                        contains=json.dumps(arns[n]).encode(), callback=tag_read(n)) for n in doomed))
    code, report, stderr = apply("--config", str(project_dir("")), "--prune", "--removed-cluster", "other")
    assert sorted(set(read)) == doomed and "Traceback" not in stderr, stderr
    assert [n for n in taken if n not in alarms(client)] == [], f"{taken} deleted after a person took it"
    assert taken == [] and code == 0 and sorted(n for n in alarms(client) if other_cluster(n)) == [], report


def test_no_retired_alarm_is_deleted_after_a_console_edit_made_while_its_tag_read_waited_its_turn(
        proxied, published, project_dir, deadline_clock, monkeypatch):
    """A prune reads each retired alarm's fields, then its own tags (ListTagsForResource, 3 a second), then deletes
    it. The tag read waited for its turn after the fields read: a person who edits the alarm in that wait (here:
    whenever the prune waits on the pacing clock, the alarm its last DescribeAlarms named, if still there) had the
    edited alarm deleted, exit 0, though an edited retired alarm needs --force. The wait for the tag read's turn now
    comes before the fields read: no alarm edited before its DeleteAlarms is deleted."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    doomed = sorted(n for n in alarms(client) if other_cluster(n))
    threshold = {n: a["Threshold"] for n, a in alarms(client).items()}
    named: list[str] = []
    edited: list[str] = []

    def person() -> None:
        name = named[0] if len(named) == 1 else None
        if name in doomed and name not in edited and name in alarms(client):
            edit_in_console(client, name, threshold=threshold[name] - 1)
            edited.append(name)

    fresh(proxy)
    proxy.inject(DescribedNames(named))
    waits = at_every_wait(monkeypatch, deadline_clock, person, alarms_only=True)
    code, report, stderr = apply("--config", str(project_dir("")), "--prune", "--removed-cluster", "other")
    assert "Traceback" not in stderr and sum(waits) >= 3.0, (stderr, waits)  # 12 tag reads at 3 a second
    assert [n for n in edited if n not in alarms(client)] == [], f"{edited} deleted after a person edited it"
    assert code == 0 and sorted(n for n in alarms(client) if other_cluster(n)) == [], report


@pytest.mark.parametrize("throttled", ["ListTagsForResource", "DescribeAlarms"])
def test_no_retired_alarm_is_deleted_after_a_console_edit_made_while_its_last_look_was_throttled(
        proxied, published, project_dir, deadline_clock, monkeypatch, throttled):
    """The last look before a retired alarm's DeleteAlarms reads its fields, then its own tags. CloudWatch throttles
    one of those reads and gpudash backs off before asking again: a person who edits the alarm in the console (fields
    changed, tags kept) during that backoff must not have the edited alarm deleted (an edited retired alarm needs
    --force), as none is after an edit during a pacing wait."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    doomed = sorted(n for n in alarms(client) if other_cluster(n))[0]
    arn = alarms(client)[doomed]["AlarmArn"]
    threshold = alarms(client)[doomed]["Threshold"]
    state = {"throttled": 0, "edited": False}

    def person() -> None:
        if state["throttled"] and not state["edited"]:
            edit_in_console(client, doomed, threshold=threshold - 1)
            state["edited"] = True

    fresh(proxy)
    # the plan reads tags in bulk (GetResources) and fields by prefix: only the apply's look asks by ARN / by name
    proxy.inject(fault(throttled, "status", status=400, naming=arn if throttled == "ListTagsForResource" else [doomed],
                       body={"__type": "ThrottlingException", "message": "Rate exceeded"},
                       callback=lambda: state.update(throttled=state["throttled"] + 1)))
    at_every_wait(monkeypatch, deadline_clock, person, alarms_only=True)
    code, report, stderr = apply("--config", str(project_dir("")), "--prune", "--removed-cluster", "other")
    assert "Traceback" not in stderr and state["edited"], (stderr, state)
    assert doomed in alarms(client), f"{doomed} deleted after a person edited it while its look was throttled"
    assert alarms(client)[doomed]["Threshold"] == threshold - 1


def test_an_alarm_a_person_takes_over_while_the_look_before_its_update_was_throttled_is_not_overwritten(
        proxied, published, project_dir, deadline_clock, monkeypatch):
    """The look right before an alarm's update reads its own tags, then its fields. CloudWatch throttles the fields
    read and gpudash backs off: a person who takes the alarm over in that wait (ManagedBy set to their team's, fields
    untouched) had gpudash's definition written over theirs (threshold 80 -> 70), the tags read before the wait
    still showing it owned."""
    proxy, client, apply = proxied
    published()
    name = "gpudash-gpu-cluster-gpu-temp-high-warning"
    threshold = alarms(client)[name]["Threshold"]
    state = {"throttled": 0, "taken": False}

    def person() -> None:
        if state["throttled"] and not state["taken"]:
            taken_over(client, name)
            state["taken"] = True

    fresh(proxy)
    throttle = fault("DescribeAlarms", "status", status=400, naming=[name],
                     body={"__type": "ThrottlingException", "message": "Rate exceeded"},
                     callback=lambda: state.update(throttled=state["throttled"] + 1))
    throttle.skip = 1  # the batch's read of its one alarm passes; the look right before its write is throttled
    proxy.inject(throttle)
    at_every_wait(monkeypatch, deadline_clock, person, alarms_only=True)
    code, report, stderr = apply("--config", str(project_dir("thresholds:\n  gpu_temp_celsius: {warning: 70, "
                                                             "critical: 87}\n")))
    assert "Traceback" not in stderr and state["taken"], (stderr, state)
    assert alarms(client)[name]["Threshold"] == threshold, "a person's alarm overwritten after they took it over"
    assert code == 3 and name in [item["name"] for item in report["failed"]], report


def test_a_get_resources_failure_that_only_mentions_access_denied_is_not_read_as_a_refusal(proxied, published):
    """Only the API's error code says the credentials were refused: a ValidationError whose message happens to quote
    "AccessDenied" stops the run (exit 3) instead of being noted as a refusal and read around."""
    proxy, apply = _get_resources_fails(proxied, published, "ValidationException",
                                        "tag filter AccessDenied is not valid")
    code, _, stderr = apply()
    assert code == 3 and writes(proxy) == [], stderr
    assert "tag:GetResources is not allowed" not in stderr and "ValidationException" in stderr, stderr


def test_a_persons_change_of_an_alarms_rule_tag_is_an_edit_of_its_marks(aws, published, project_dir):
    """A person changes the gpudash:rule tag of a retired alarm and of one still defined (the tag reads an alarm's
    name where it records no clusters, so it decides which settings prune it). No hash covered it: --prune deleted
    the retired one without --force, exit 0, and apply wrote the rule back over the defined one's, exit 0. It is now
    an edit of the alarm's marks: both are refused without --force (the person's value kept), and --force writes or
    deletes them."""
    from generator.markers import ALARM_RULE_TAG

    client, apply = aws
    published("--config", str(project_dir(TWO_CLUSTERS)))
    retired = sorted(n for n in alarms(client) if other_cluster(n))[0]
    defined = sorted(n for n in alarms(client) if not other_cluster(n))[0]
    for name in (retired, defined):
        client.tag_resource(ResourceARN=alarms(client)[name]["AlarmArn"],
                            Tags=[{"Key": ALARM_RULE_TAG, "Value": "team-ml-pager"}])
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--allow-mass-prune")
    assert sorted(report["refused"]) == sorted([retired, defined]) and code == 1, (report, stderr)
    assert retired in alarms(client) and _tags(client, defined)[ALARM_RULE_TAG] == "team-ml-pager"
    refused = " ".join(" ".join(c["details"]) for c in report["changes"] if c["name"] == retired)
    assert f"{ALARM_RULE_TAG} tag was changed since gpudash wrote it" in refused, refused
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--allow-mass-prune", "--force")
    assert code == 0 and retired not in alarms(client) and defined in report["written"], stderr
    assert _tags(client, defined)[ALARM_RULE_TAG] != "team-ml-pager"


def test_evidence_written_before_the_rule_tag_was_hashed_is_not_rewritten_for_that_alone(aws, published):
    """Alarms whose evidence hashes their marks without the rule tag (as gpudash wrote it before) read as intact and
    as generated: an apply writes nothing (not one tag write per alarm)."""
    from generator.markers import ALARM_HASH_TAG
    from generator.ownership import marks_hash

    client, apply = aws
    published()
    for name, alarm in alarms(client).items():
        tags = client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]
        fields = next(t["Value"] for t in tags if t["Key"] == ALARM_HASH_TAG).partition("/")[0]
        client.tag_resource(ResourceARN=alarm["AlarmArn"], Tags=[
            {"Key": ALARM_HASH_TAG, "Value": f"{fields}/{marks_hash(tags, rule=False)}"}])
    code, report, stderr = apply()
    assert code == 0 and report["written"] == [], (report["written"], stderr)


def test_an_alarm_with_evidence_from_before_the_rule_tag_was_hashed_gets_it_with_its_next_tag_write(aws, published):
    """An alarm whose evidence hashes its marks without the rule tag, and whose rule tag is lost: the apply that writes
    the rule tag back writes the evidence of today's form with it, which then covers the rule tag."""
    from generator.markers import ALARM_HASH_TAG, ALARM_RULE_TAG
    from generator.ownership import marks_hash, marks_intact

    client, apply = aws
    published()
    name, alarm = sorted(alarms(client).items())[0]
    tags = client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]
    fields = next(t["Value"] for t in tags if t["Key"] == ALARM_HASH_TAG).partition("/")[0]
    client.tag_resource(ResourceARN=alarm["AlarmArn"], Tags=[
        {"Key": ALARM_HASH_TAG, "Value": f"{fields}/{marks_hash(tags, rule=False)}"}])
    client.untag_resource(ResourceARN=alarm["AlarmArn"], TagKeys=[ALARM_RULE_TAG])
    code, report, stderr = apply()
    assert code == 0 and report["written"] == [name], stderr
    tags = client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]
    assert next(t["Value"] for t in tags if t["Key"] == ALARM_HASH_TAG).endswith(f"/{marks_hash(tags)}")
    client.tag_resource(ResourceARN=alarm["AlarmArn"], Tags=[{"Key": ALARM_RULE_TAG, "Value": "someone-elses"}])
    assert marks_intact(client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]) is False


@pytest.mark.parametrize("project", ["test", ""], ids=["a project", "no project"])
@pytest.mark.parametrize("times", [1, 2, ALWAYS], ids=["read lagging once", "twice", "always"])
def test_a_listed_dashboard_getdashboard_reads_as_not_there_is_not_created_over(proxied, published, tmp_path, times,
                                                                                project):
    """A defined dashboard a person edited, which ListDashboards lists, answered ResourceNotFound by GetDashboard (a
    stand-in or proxy in front of CloudWatch that mishandles it): planned as a create, and the look before the write
    read it so too, so PutDashboard replaced the person's edit (exit 3 only after, its read-back failing). The two
    answers disagree: the dashboard is read once more (a read that lagged plans as read: drift, refused), and still
    not there, the plan fails (exit 3) and nothing is written over it."""
    import json

    proxy, client, apply = proxied
    published()
    name = "gpudash-gpu-cluster-health"
    edited = json.loads(client.get_dashboard(DashboardName=name)["DashboardBody"])
    edited["widgets"][2]["properties"]["title"] = "renamed by hand"
    client.put_dashboard(DashboardName=name, DashboardBody=json.dumps(edited))
    before = client.get_dashboard(DashboardName=name)["DashboardBody"]
    config = tmp_path / "changed.yaml"  # (settings naming no project list dashboards only for what they create)
    config.write_text(f"{'project: ' + project if project else ''}\n"
                      "thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n")
    fresh(proxy)
    proxy.inject(fault("GetDashboard", "status", times=times, status=400, naming=name,
                       body={"__type": "ResourceNotFound", "message": "Dashboard does not exist"}))
    code, report, stderr = apply("--config", str(config))
    assert client.get_dashboard(DashboardName=name)["DashboardBody"] == before  # the person's edit kept
    assert "Traceback" not in stderr
    if times == 1:
        assert code == 1 and name in report["refused"] and name not in report["written"], stderr
        return
    assert code == 3 and "ListDashboards lists it: not created over it" in stderr, stderr
    assert writes(proxy) == []


def test_an_alarm_listing_answered_empty_for_alarms_that_exist_writes_over_none_of_them(proxied, published):
    """A DescribeAlarms answering every call with a well-formed empty listing (a stub standing in for CloudWatch)
    planned each defined alarm as a create, the look before each write read it so too, and PutMetricAlarm replaced a
    person's alarm under a defined name (reported failed only afterwards). The tag index (GetResources) lists gpudash's
    own alarms: read for the alarms to create too, one it shows that DescribeAlarms neither lists nor reads by name
    fails the plan, nothing written. (An account where the index shows none of them, a first apply, is not shown so.)"""
    proxy, client, apply = proxied
    published()
    client.delete_alarms(AlarmNames=[FOREIGN])
    foreign_alarm(client)  # a person's alarm under a name these settings define
    before = alarms(client)[FOREIGN]
    fresh(proxy)
    proxy.inject(fault("DescribeAlarms", "body", times=ALWAYS,
                       body={"MetricAlarms": [], "CompositeAlarms": [], "LogAlarms": []}))
    code, _, stderr = apply()
    assert code == 3 and "Traceback" not in stderr and "DescribeAlarms neither lists nor reads by name" in stderr, stderr
    assert alarms(client)[FOREIGN].get("MetricName") == before["MetricName"] == "CPUUtilization"
    assert writes(proxy) == []


def test_an_alarm_deleted_by_hand_is_created_again_while_the_tag_index_still_lists_it(proxied, published, moto):
    """The Tagging API's GetResources answers "tagged or previously tagged" resources from an index that lags a
    delete (minutes, at times hours: the SDK threads of aws-sdk #302 and boto3 #3341). A person deletes one of gpudash's
    alarms; DescribeAlarms, which lists every other alarm gpudash owns, neither lists nor reads it, while the index
    still shows it with its ManagedBy tag. The next apply creates it again (a create replaces nothing: CloudWatch
    holds no alarm of that name), as it did before the index was read for alarms to create."""
    proxy, client, apply = proxied
    published()
    gone = "gpudash-gpu-cluster-xid-error-critical"
    stale = _tagging_answer(moto.url)  # the index as before the delete
    assert gone in {item["ResourceARN"].rsplit(":", 1)[1] for item in stale}
    client.delete_alarms(AlarmNames=[gone])
    fresh(proxy)
    proxy.inject(Rule(path="/", operation="GetResources", action="body", times=ALWAYS, contains=b"TagFilters",
                      body=json.dumps({"ResourceTagMappingList": stale, "PaginationToken": ""}).encode()))
    code, report, stderr = apply()
    assert code == 0 and "Traceback" not in stderr, stderr
    assert gone in alarms(client) and gone in report["written"], report


@pytest.mark.parametrize("flag", ["--removed-cluster", "--renamed-from"])
def test_a_cluster_name_no_object_records_is_refused_before_any_write(aws, published, project_dir, cli, flag):
    """`--prune --removed-cluster othr` (a typo of the removed cluster `other`): no object of the project records
    `othr`, so the flag would take nothing and the prune it was given for would silently leave `other`'s objects.
    Refused instead, exit 2, before any write: the message names the name, the clusters the objects record that
    these settings no longer define, and the one meant. The same for --renamed-from, and for plan."""
    client, apply = aws
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    before = snapshot(client)
    code, report, stderr = apply("--prune", flag, "othr")
    assert code == 2 and set(report) == {"error"}, report
    assert (f"{flag} othr: no object of project 'test' records the cluster 'othr'" in stderr
            and "clusters the objects record that these settings do not define: other" in stderr
            and "did you mean 'other'?" in stderr), stderr
    assert snapshot(client) == before
    code, stdout, stderr = cli("plan", "--no-grafana", flag, "othr")
    assert code == 2 and f"{flag} othr: no object of project 'test' records the cluster 'othr'" in stderr, stderr

"""The ownership evidence every publishing path stamps on an alarm, and when it is stamped (moto over HTTP):
the build's alarms.json and CloudFormation template carry the same ownership tags as apply's create; apply's
create carries the hash of what it sends too, which its read-back confirms or takes back (and a read-back that
failed leaves to the next plan's read); a read-back differing from the request only
where CloudWatch documents a default or a form of its own confirms it; a prune whose DeleteAlarms is answered
ResourceNotFound for an alarm deleted by someone else still deletes the rest."""

from __future__ import annotations

import json

from tests.support.cloudwatch_world import (ALWAYS, TWO_CLUSTERS, alarms, fault, fresh, other_cluster,
                                            reported_in_a_form_of_its_own, without_query_periods)

NAME = "gpudash-gpu-cluster-gpu-temp-high-warning"
NOT_FOUND = {"__type": "ResourceNotFound", "message": "not found"}


def _tags(client, name):
    return _tags_of(client, alarms(client)[name])


def _tags_of(client, alarm):
    """The tags of an alarm already listed, by its ARN."""
    return {t["Key"]: t["Value"] for t in client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]}


def _settings(tmp_path, name, text):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return str(path)


def test_the_build_and_its_template_stamp_the_project_as_apply_does(aws, tmp_path, cli):
    """alarms.json and the CloudFormation template tag each alarm with its project, as apply's create does:
    an alarm the stack made is this project's, and another project with a cluster of the same name sees it
    as foreign instead of taking it over as an older gpudash's."""
    client, apply = aws
    team_a = _settings(tmp_path, "a", "project: team-a\nclusters:\n  - {name: shared, region: us-east-1}\n")
    team_b = _settings(tmp_path, "b", "project: team-b\nclusters:\n  - {name: shared, region: us-east-1}\n"
                                      "thresholds:\n  gpu_temp_celsius: {warning: 70, critical: 87}\n")
    out = tmp_path / "build"
    code, _, stderr = cli("generate", "--config", team_a, "--out", str(out))
    assert code == 0, stderr
    listed = {item["Request"]["AlarmName"]: item["Request"]["Tags"]
              for item in json.loads((out / "cloudwatch" / "alarms.json").read_text())["alarms"]}
    template = json.loads((out / "cloudformation" / "gpudash-team-a-cluster-shared.json").read_text())
    stack = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert len(listed) == len(stack) == 13
    for properties in stack:
        assert {"Key": "gpudash:project", "Value": "team-a"} in properties["Tags"]
        assert properties["Tags"] == listed[properties["AlarmName"]]
    for properties in stack:  # what CloudFormation does for each AWS::CloudWatch::Alarm: PutMetricAlarm
        client.put_metric_alarm(**properties)
    before = alarms(client)
    code, stdout, _ = cli("plan", "--no-grafana", "--output", "json", "--config", team_b)
    actions = {c["name"]: c["action"] for c in json.loads(stdout)["changes"] if c["kind"] == "alarm"}
    assert set(actions.values()) == {"foreign"}
    code, report, _ = apply("--config", team_b)
    assert code == 1 and sorted(report["refused"]) == sorted(before)
    assert alarms(client) == before
    code, report, _ = apply("--config", team_a)  # its own alarms: only their content hash is added
    assert code == 1 and alarms(client) == before
    assert sorted(report["refused"]) == ["gpudash-shared-by-pod", "gpudash-shared-health", "gpudash-shared-overview"]
    assert sorted(report["written"]) == sorted(before)  # (the dashboards are team-b's, written by its apply)
    assert all(tags["gpudash:project"] == "team-a" and "gpudash:sha256" in tags
               for tags in (_tags_of(client, alarm) for alarm in before.values()))


def test_a_first_apply_writes_each_alarm_once_with_its_evidence(proxied):
    """The hash of what is written is known before the write: each alarm is created with its ownership tags and
    that evidence in one PutMetricAlarm, and the read-back that confirms it needs no second write. The next
    apply finds every alarm as generated and writes nothing."""
    proxy, client, apply = proxied
    code, report, _ = apply()
    live = alarms(client)
    assert code == 0 and len(live) == 13 and sorted(n for n in report["written"] if n in live) == sorted(live)
    assert proxy.operations.count("PutMetricAlarm") == 13 and "TagResource" not in proxy.operations
    assert all("gpudash:sha256" in _tags_of(client, alarm) for alarm in live.values())
    fresh(proxy)
    code, report, _ = apply()
    assert code == 0 and report["written"] == [] and "TagResource" not in proxy.operations


def test_a_create_whose_read_back_fails_is_proven_by_the_next_plan_s_read(proxied, cli):
    """Created with the evidence of what was sent, an alarm whose read-back failed is reported failed (not
    written) and keeps that evidence: the next plan reads the alarm, finds it as sent and writes nothing; one
    changed in the console since reads as changed since gpudash wrote it (drift)."""
    proxy, client, apply = proxied
    broken = fault("DescribeAlarms", "status", times=ALWAYS, status=500, body={"__type": "InternalFailure"})
    proxy.inject(fault("PutMetricAlarm", "before", naming=NAME, callback=lambda: proxy.inject(broken)))
    code, report, stderr = apply()
    assert code == 3 and "Traceback" not in stderr
    assert NAME not in report["written"]
    error = next(item["error"] for item in report["failed"] if item["name"] == NAME)
    assert "may exist, tagged ManagedBy=gpudash and with the gpudash:sha256 of what was sent" in error, error
    tags = _tags(client, NAME)  # created, owned, with the evidence of what was sent
    assert tags["ManagedBy"] == "gpudash" and tags["gpudash:project"] == "test" and "gpudash:sha256" in tags
    fresh(proxy)
    code, stdout, _ = cli("plan", "--no-grafana", "--output", "json")
    actions = {c["name"]: c["action"] for c in json.loads(stdout)["changes"] if c["kind"] == "alarm"}
    assert actions[NAME] == "unchanged"
    alarm = alarms(client)[NAME]
    fields = {key: alarm[key] for key in ("AlarmName", "ComparisonOperator", "EvaluationPeriods", "Metrics",
                                          "TreatMissingData", "DatapointsToAlarm", "AlarmDescription")}
    client.put_metric_alarm(**fields, Threshold=alarm["Threshold"] - 5)  # a console edit
    code, stdout, _ = cli("plan", "--no-grafana", "--output", "json")
    actions = {c["name"]: c["action"] for c in json.loads(stdout)["changes"] if c["kind"] == "alarm"}
    assert actions[NAME] == "drift"


def test_an_unconfirmed_create_in_cloudwatch_s_own_form_is_confirmed_by_the_next_apply_without_force(proxied, cli):
    """CloudWatch reports a query without its Period: an alarm created whose read-back failed carries the evidence
    of what was sent only, and is, on the next plan, as generated in that form (the form's evidence tagged), not
    drift needing --force."""
    proxy, client, apply = proxied
    own_form = fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=without_query_periods)
    broken = fault("DescribeAlarms", "status", times=ALWAYS, status=500, body={"__type": "InternalFailure"})
    proxy.inject(fault("PutMetricAlarm", "before", naming=NAME, callback=lambda: (proxy.clear(), proxy.inject(broken))),
                 own_form)
    assert apply()[0] == 3
    sent = _tags(client, NAME)["gpudash:sha256"]
    assert "." not in sent.partition("/")[0]  # the hash of the request alone: no form reported yet
    fresh(proxy)
    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=without_query_periods))
    code, stdout, _ = cli("plan", "--no-grafana")
    assert f"update    cloudwatch alarm {NAME} [us-east-1]" in stdout and "drift" not in stdout
    code, report, _ = apply()
    assert code == 0 and NAME in report["written"]
    assert "." in _tags(client, NAME)["gpudash:sha256"].partition("/")[0]  # the form reported, kept
    code, report, _ = apply()
    assert code == 0 and report["written"] == []


def _in_documented_defaults(body: bytes) -> bytes:
    """A DescribeAlarms answer that leaves out what PutMetricAlarm documents as a default (TreatMissingData
    `missing`, ActionsEnabled true, DatapointsToAlarm equal to EvaluationPeriods), lists a metric's dimensions
    in another order, and reports a query's Label and a description that is not the one sent."""
    answer = json.loads(body)
    for alarm in answer.get("MetricAlarms", []):
        if alarm.get("TreatMissingData") == "missing":
            del alarm["TreatMissingData"]
        if alarm.get("ActionsEnabled") is True:
            del alarm["ActionsEnabled"]
        if alarm.get("DatapointsToAlarm") == alarm.get("EvaluationPeriods"):
            alarm.pop("DatapointsToAlarm", None)
        alarm["AlarmDescription"] = alarm.get("AlarmDescription", "")[:100]
        for query in alarm.get("Metrics", []):
            query.pop("Label", None)
            dimensions = ((query.get("MetricStat") or {}).get("Metric") or {}).get("Dimensions")
            if dimensions:
                dimensions.reverse()
    return json.dumps(answer).encode()


def test_a_read_back_in_cloudwatch_s_documented_defaults_confirms_the_write(proxied):
    client = proxied[1]
    report = reported_in_a_form_of_its_own(proxied, _in_documented_defaults)
    assert len([n for n in report["written"] if n in alarms(client)]) == 13


def test_a_read_back_that_differs_in_what_the_alarm_evaluates_is_still_a_failure(proxied):
    def lower(body: bytes) -> bytes:
        answer = json.loads(body)
        for alarm in answer.get("MetricAlarms", []):
            alarm["Threshold"] = alarm["Threshold"] - 1
        return json.dumps(answer).encode()

    proxy, client, apply = proxied
    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=lower))
    code, report, _ = apply()
    assert code == 3 and not [n for n in report["written"] if n in alarms(client)]
    assert all("Threshold" in item["error"] and "without gpudash:sha256 (taken back" in item["error"]
               for item in report["failed"])
    assert not any("gpudash:sha256" in _tags_of(client, alarm) for alarm in alarms(client).values())


def test_a_delete_answered_not_found_for_an_alarm_deleted_by_someone_else_deletes_the_rest(
        proxied, published, project_dir):
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    retired = sorted(n for n in alarms(client) if other_cluster(n))
    assert len(retired) == 13
    fresh(proxy)  # someone deletes one of them just before its DeleteAlarms, answered ResourceNotFound
    proxy.inject(fault("DeleteAlarms", "status", status=404, body=NOT_FOUND,
                       callback=lambda: client.delete_alarms(AlarmNames=retired[:1])))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 0, stderr
    assert report["failed"] == [] and sorted(n for n in report["written"] if n in retired) == retired[1:]
    assert not [n for n in alarms(client) if other_cluster(n)]
    assert proxy.operations.count("DeleteAlarms") == 13  # one each: the one gone is not sent again


def test_two_alarms_deleted_by_someone_else_in_turn_leave_none_behind(proxied, published, project_dir):
    """DeleteAlarms answered ResourceNotFound twice (a person deleted one alarm, then another, before each call; when
    alarms went 3 a call, both in one group: it stopped after one retry and reported the third alarm "answered ...
    but still there" with an endpoint hint, exit 3): each is already gone, the others are deleted, none is left."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    retired = sorted(n for n in alarms(client) if other_cluster(n))
    fresh(proxy)
    proxy.inject(fault("DeleteAlarms", "status", status=404, body=NOT_FOUND,
                       callback=lambda: client.delete_alarms(AlarmNames=retired[:1])))
    proxy.inject(fault("DeleteAlarms", "status", status=404, body=NOT_FOUND,
                       callback=lambda: client.delete_alarms(AlarmNames=retired[1:2])))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 0 and report["failed"] == [], stderr
    assert not [n for n in alarms(client) if other_cluster(n)]
    assert sorted(n for n in report["written"] if n in retired) == retired[2:]

"""What CloudWatch answers to gpudash's writes and listings (through the fault proxy in front of moto):
only an answer shaped as the API answers counts as done; anything else is a remote failure (exit 3),
listed with every other outcome, and nothing is taken for written that was not."""

from __future__ import annotations

import json
import threading

import pytest

from tests.support.cloudwatch_world import (ALWAYS, TWO_CLUSTERS, alarms, fault, foreign_alarm, fresh, other_cluster,
                                          writes)
from tests.support.fault_proxy import Rule

THROTTLED = {"__type": "com.amazon.coral.availability#ThrottlingException", "message": "Rate exceeded"}


def _dashboards(client):
    return sorted(d["DashboardName"] for d in client.list_dashboards()["DashboardEntries"])


def test_writes_answered_200_with_an_error_body_are_failures(proxied):
    proxy, client, apply = proxied
    proxy.inject(fault("PutMetricAlarm", "status", times=ALWAYS, body=THROTTLED),
                 fault("PutDashboard", "status", times=ALWAYS, body={"__type": "InternalFailure", "message": "oops"}))
    code, report, stderr = apply()
    assert code == 3 and "Traceback" not in stderr
    assert alarms(client) == {} and _dashboards(client) == []
    assert "16 of 16 writes failed; 0 were published" in stderr
    errors = {item["name"]: item["error"] for item in report["failed"]}
    assert len(errors) == 16 and report["written"] == []
    assert "an error, InternalFailure: oops" in errors["gpudash-gpu-cluster-health"]
    assert "an error, ThrottlingException: Rate exceeded" in errors["gpudash-gpu-cluster-gpu-idle-warning"]


def test_deletes_answered_200_with_an_error_body_are_failures(proxied, published, project_dir):
    proxy, client, apply = proxied
    # (settled: the one cluster's objects record it alone, so the prune below writes only its deletes)
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    before = (sorted(alarms(client)), _dashboards(client))
    fresh(proxy)
    proxy.inject(fault("DeleteAlarms", "status", times=ALWAYS, body=THROTTLED),
                 fault("DeleteDashboards", "status", times=ALWAYS, body={"__type": "InternalFailure"}))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 3 and "Traceback" not in stderr
    assert (sorted(alarms(client)), _dashboards(client)) == before
    assert report["written"] == [] and len(report["failed"]) == 16
    assert all(other_cluster(item["name"]) for item in report["failed"])


def test_an_alarm_update_that_did_not_happen_is_a_failure_and_stays_planned(proxied, published, project_dir, cli):
    """PutMetricAlarm answered as done ({} with 200) but never made: the read-back shows the old alarm,
    which is no evidence of the write. It is reported failed, and the next plan still shows the update."""
    proxy, client, apply = proxied
    published()
    name = "gpudash-gpu-cluster-gpu-temp-critical-critical"
    tags = client.list_tags_for_resource(ResourceARN=alarms(client)[name]["AlarmArn"])["Tags"]
    config = str(project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n"))
    fresh(proxy)
    proxy.inject(fault("PutMetricAlarm", "status", times=ALWAYS, body={}))
    code, report, stderr = apply("--config", config)
    assert code == 3 and [item["name"] for item in report["failed"]] == [name]
    error = report["failed"][0]["error"]
    assert "reports the alarm with other Threshold than were sent" in error, error
    assert alarms(client)[name]["Threshold"] == 87.0
    assert client.list_tags_for_resource(ResourceARN=alarms(client)[name]["AlarmArn"])["Tags"] == tags
    fresh(proxy)
    code, stdout, _ = cli("plan", "--no-grafana", "--config", config)
    assert code == 1 and f"update    cloudwatch alarm {name} [us-east-1]" in stdout
    code, report, _ = apply("--config", config)
    assert code == 0 and name in report["written"] and alarms(client)[name]["Threshold"] == 90.0


@pytest.mark.parametrize("operation, key", [("DescribeAlarms", "NextToken"), ("ListDashboards", "NextToken"),
                                            ("GetResources", "PaginationToken")])
def test_a_listing_whose_next_page_token_repeats_fails_at_once(proxied, published, cli, operation, key):
    """A listing that gives a next-page token it gave before would go round until the deadline: it fails at once,
    except tag:GetResources, whose listing each alarm's own tags replace (it is then not believed)."""
    proxy, client, apply = proxied
    if operation == "GetResources":  # read only when alarms are found
        published()

    def same_token(body: bytes) -> bytes:
        return json.dumps({**json.loads(body), key: "the-same-token"}).encode()

    fresh(proxy)
    if operation == "GetResources":  # moto refuses a token it did not give: the proxy answers every page
        proxy.inject(fault(operation, "status", times=ALWAYS, body={"ResourceTagMappingList": [], key: "again"}))
    else:
        proxy.inject(fault(operation, "rewrite", times=ALWAYS, callback=same_token))
    code, stdout, stderr = cli("plan", "--no-grafana")
    assert proxy.operations.count(operation) == 2 and "Traceback" not in stderr
    if operation == "GetResources":  # a bulk tag read each alarm's own tags replace: not believed, each read alone
        assert code == 0 and "tag:GetResources gave in us-east-1 on a later page what an earlier page gave (a " \
                             "next-page token it gave before)" in stderr, stderr
        assert proxy.operations.count("ListTagsForResource") == len(alarms(client))
        return
    assert code == 3 and stdout == ""
    assert f"CloudWatch answered {operation} in us-east-1 with a next-page token it gave before" in stderr


NAME = "gpudash-gpu-cluster-gpu-temp-critical-critical"


def _garbled(operation: str, change):
    """A proxy rule rewriting every answer to `operation` with `change(answer)` (a JSON object, changed in place)."""
    def rewrite(body: bytes) -> bytes:
        answer = json.loads(body)
        change(answer)
        # an infinite number written as JSON can: past a double's range (JSON has no Infinity; json.dumps writes it)
        return json.dumps(answer).replace(": Infinity", ": 1e999").encode()
    return fault(operation, "rewrite", times=ALWAYS, callback=rewrite)


def _alarm(field, value):
    """A change to the alarm NAME in a DescribeAlarms answer: `field` set to `value`, or `value(alarm)` called."""
    def change(answer):
        for alarm in answer.get("MetricAlarms", []):
            if alarm["AlarmName"] == NAME:
                if callable(value):
                    value(alarm)
                else:
                    alarm[field] = value
    return change


def _first_item(key, field, value):
    def change(answer):
        for item in answer.get(key, [])[:1]:
            if callable(value):
                value(item)
            else:
                item[field] = value
    return change


@pytest.mark.parametrize("operation, change, said", [
    ("DescribeAlarms", _alarm("Period", "60"), "MetricAlarms[{i}].Period is not an integer"),
    ("DescribeAlarms", _alarm("EvaluationPeriods", True), "MetricAlarms[{i}].EvaluationPeriods is not an integer"),
    ("DescribeAlarms", _alarm("ActionsEnabled", "true"), "MetricAlarms[{i}].ActionsEnabled is not a boolean"),
    ("DescribeAlarms", _alarm("DatapointsToAlarm", 1.5), "MetricAlarms[{i}].DatapointsToAlarm is not an integer"),
    ("DescribeAlarms", _alarm("TreatMissingData", 5), "MetricAlarms[{i}].TreatMissingData is not a string"),
    ("GetResources", _first_item("ResourceTagMappingList", "Tags", lambda item: item["Tags"][0].pop("Value")),
     "ResourceTagMappingList[0].Tags[0] has no Value"),
    ("ListDashboards", _first_item("DashboardEntries", "Size", "big"), "DashboardEntries[0].Size is not a long"),
], ids=["Period a string", "EvaluationPeriods a boolean", "ActionsEnabled a string", "DatapointsToAlarm a fraction",
        "TreatMissingData a number", "a tag without its Value", "a dashboard's Size a string"])
def test_a_listing_with_a_member_not_as_the_model_has_it_is_not_an_answer(proxied, published, cli, operation, change,
                                                                          said):
    """botocore's JSON parser passes any value through: an alarm whose Period is "60" was read as an alarm edited
    in the console (plan: drift, with a diff of 60 against "60"), a tag without its Value as the tag "None". Every
    member of the answers publishing reads is checked against the API's model now: such an answer is a failure
    (exit 3), never a plan made on it."""
    proxy, client, apply = proxied
    published()
    index = sorted(alarms(client)).index(NAME)
    fresh(proxy)
    proxy.inject(_garbled(operation, change))
    code, stdout, stderr = cli("plan", "--no-grafana")
    assert code == 3 and stdout == "" and "Traceback" not in stderr, (code, stdout, stderr)
    assert f"CloudWatch answered {operation} in us-east-1 with something that is not an API answer " \
           f"({said.format(i=index)})" in stderr, stderr


@pytest.mark.parametrize("removed, said", [
    (("ComparisonOperator",), "ComparisonOperator"), (("EvaluationPeriods",), "EvaluationPeriods"),
    (("StateValue",), "StateValue"), (("Threshold", "ThresholdMetricId"), "Threshold or ThresholdMetricId"),
    (("MetricName", "Metrics"), "MetricName or Metrics"),
    (("Metrics", "Expression"), "Expression or MetricStat in its query {query}"),
    (("Metrics", []), "MetricName or Metrics")],
    ids=["no comparison", "no periods", "no state", "no threshold", "no metric", "a query of neither",
         "an empty query list"])
def test_an_alarm_listed_without_what_cloudwatch_reports_of_every_alarm_is_not_an_answer(proxied, published, cli,
                                                                                       removed, said):
    """DescribeAlarms lists one of gpudash's alarms without a member CloudWatch reports of every metric alarm (its
    comparison, its number of periods, its state, a threshold, what it watches): not CloudWatch's answer (no edit
    removes them). It was read as an alarm edited in the console (plan: drift, apply refused it, exit 1); now it is
    a failure to read CloudWatch (exit 3), nothing planned on it and nothing written, as any answer that is not one."""
    proxy, client, apply = proxied
    published()
    before = alarms(client)
    fresh(proxy)
    if removed == ("Metrics", "Expression"):  # an expression query left with neither its expression nor a metric
        query = next(q["Id"] for q in client.describe_alarms(AlarmNames=[NAME])["MetricAlarms"][0]["Metrics"]
                     if "Expression" in q)
        said = said.format(query=query)
        remove = lambda alarm: [q.pop("Expression") for q in alarm["Metrics"] if q["Id"] == query]  # noqa: E731
    elif removed == ("Metrics", []):  # an expression alarm's queries listed as an empty list
        remove = lambda alarm: alarm.update(Metrics=[])  # noqa: E731
    else:
        remove = lambda alarm: [alarm.pop(k, None) for k in removed]  # noqa: E731
    proxy.inject(_garbled("DescribeAlarms", _alarm(removed[0], remove)))
    shown = f"the alarm {NAME} without {said}, which CloudWatch reports of every such alarm"
    for args in (("plan", "--no-grafana"), ("apply", "--skip-verify", "--prune", "--force")):
        code, stdout, stderr = cli(*args)
        assert code == 3 and "Traceback" not in stderr and "edited in the CloudWatch console" not in stdout, \
            (args, code, stdout, stderr)
        assert f"CloudWatch answered DescribeAlarms in us-east-1 with something that is not an API answer ({shown})" \
            in stderr, stderr
    assert writes(proxy) == [] and alarms(client) == before


# Members DescribeAlarms lists with a value CloudWatch has for none (the API's model: an enum, an integer's least
# value; the API reference: TreatMissingData's four values, a query's Id once in an alarm, a number that is finite)
OUTSIDE = {
    "a comparison": (_alarm("ComparisonOperator", "Weird"),
                     "MetricAlarms[{i}].ComparisonOperator is 'Weird', none of the values the API has for it (as "
                     "botocore"),
    "no period to evaluate": (_alarm("EvaluationPeriods", 0),
                              "MetricAlarms[{i}].EvaluationPeriods is 0, where the API has at least 1"),
    "periods below none": (_alarm("EvaluationPeriods", -1),
                           "MetricAlarms[{i}].EvaluationPeriods is -1, where the API has at least 1"),
    # (as CloudWatch's JSON writes a number that is not one, a string; the token NaN is no JSON: not an answer either)
    "a threshold NaN": (_alarm("Threshold", "NaN"), "MetricAlarms[{i}].Threshold is not a double"),
    "a threshold the token NaN": (_alarm("Threshold", float("nan")), "not JSON: "),
    "a threshold infinite": (_alarm("Threshold", float("inf")),
                             "MetricAlarms[{i}].Threshold is inf, not a finite number"),
    "a query's period negative": (_alarm("Metrics", lambda alarm: alarm["Metrics"][0].update(Period=-60)),
                                  "MetricAlarms[{i}].Metrics[0].Period is -60, where the API has at least 1"),
    "a statistic": (_alarm("Statistic", "Median"),
                    "MetricAlarms[{i}].Statistic is 'Median', none of the values the API has for it (as botocore"),
    "a state not a string": (_alarm("StateValue", 3), "MetricAlarms[{i}].StateValue is not a string"),
    "a missing-data treatment": (_alarm("TreatMissingData", "sometimes"),
                                 "MetricAlarms[{i}].TreatMissingData is 'sometimes', none of the values the API has "
                                 "for it (as the API reference names them)"),
    "one Id twice": (_alarm("Metrics", lambda a: a["Metrics"].append({**a["Metrics"][0], "ReturnData": False})),
                     "the alarm " + NAME + " with two queries of the Id '{first}', where CloudWatch takes an Id once "
                     "in an alarm"),
}


def test_an_alarm_listed_with_a_value_cloudwatch_has_for_no_alarm_is_not_an_answer(proxied, published, cli):
    """DescribeAlarms lists one of gpudash's alarms with a member CloudWatch cannot hold (a comparison or a
    statistic the API has not, no or fewer than no periods, a NaN or infinite threshold, a negative query period, a
    missing-data treatment the API reference does not name, two queries of one Id): it was read as an alarm edited in
    the console (plan: drift; apply: refused, exit 1; --force rewrote it from that answer). The values were only
    checked to be of their type. Now each is a failure to read CloudWatch (exit 3), nothing planned on it and nothing
    written, as any answer that is not one. One published world serves every case (each a plan and an apply --prune
    --force against the same alarms). A value of a member no verdict reads (NEWER: an alarm's state or evaluation
    state, a PromQL alarm's criteria, a composite alarm's members), of its type, is a newer API's: no failure (a state
    a newer API added failed every plan); a state not a string is no answer still."""
    proxy, client, apply = proxied
    published()
    before = alarms(client)
    index = sorted(before).index(NAME)
    queries = before[NAME]["Metrics"]
    failures = []
    for case, (change, said) in OUTSIDE.items():
        shown = said.format(i=index, first=queries[0]["Id"])
        fresh(proxy)
        proxy.inject(_garbled("DescribeAlarms", change))
        for args in (("plan", "--no-grafana"), ("apply", "--skip-verify", "--prune", "--force")):
            code, stdout, stderr = cli(*args)
            expected = f"CloudWatch answered DescribeAlarms in us-east-1 with something that is not an API answer " \
                       f"({shown}"
            if code != 3 or "Traceback" in stderr or "edited in the CloudWatch console" in stdout \
                    or expected not in stderr or writes(proxy):
                failures.append(f"{case}: {args[0]} exit {code}, writes {writes(proxy)}, said "
                                f"{(stderr.strip() or stdout.strip())[-160:]!r}")
    assert failures == [] and alarms(client) == before, "\n".join(failures)
    # a value no verdict reads, of a member CloudWatch may extend (EVALUATION_ERROR and _FAILURE came after
    # PARTIAL_DATA): a newer API's, not a failure
    for case, change in NEWER.items():
        fresh(proxy)
        proxy.inject(_garbled("DescribeAlarms", change))
        code, stdout, stderr = cli("plan", "--no-grafana")
        if code != 0 or "not an API answer" in stderr:
            failures.append(f"{case}: plan exit {code}, said {(stderr.strip() or stdout.strip())[-160:]!r}")
    assert failures == [], "\n".join(failures)


def _listed_beside(key, alarm):
    """A change adding `alarm` to a DescribeAlarms answer's list `key`."""
    return lambda answer: answer.setdefault(key, []).append(alarm)


_PROMQL = {"AlarmName": "gpudash-team-promql", "StateValue": "OK", "EvaluationInterval": 60,
           "AlarmArn": "arn:aws:cloudwatch:us-east-1:123456789012:alarm:gpudash-team-promql",
           "EvaluationCriteria": {"PromQLCriteria": {"Query": "up == 0", "PendingPeriod": 90000}}}
# Values of members no ownership verdict reads (ownership.NOT_COMPARED; composite alarms, listed so that a name one holds
# is never written) that the installed botocore's model does not allow: a newer API's, checked for their type alone
NEWER = {
    "an evaluation state": _alarm("EvaluationState", "EVALUATION_OF_A_NEWER_API"),
    "a state": _alarm("StateValue", "A_NEWER_STATE"),
    "a PromQL alarm's pending period": _listed_beside("MetricAlarms", _PROMQL),
    "a composite alarm": _listed_beside("CompositeAlarms", {
        "AlarmName": "gpudash-team-composite", "StateValue": "A_NEWER", "ActionsSuppressedBy": "ANewerReason",
        "AlarmArn": "arn:aws:cloudwatch:us-east-1:123456789012:alarm:gpudash-team-composite"}),
}


class _Pages(Rule):
    """Answers every call to `operation` itself (not forwarded) with `page()`, and a new next-page token each time."""

    def __init__(self, operation: str, key: str, page):
        super().__init__(path="/", operation=operation, times=ALWAYS, status=200)
        self.key, self.page, self.count = key, page, 0

    def matches(self, method, path, body, operation="", region="", query="") -> bool:
        if not super().matches(method, path, body, operation, region, query):
            return False
        self.count += 1
        self.body = json.dumps({**self.page(), self.key: f"token-{self.count}"}).encode()
        return True


@pytest.mark.parametrize("operation, key, page, said, calls", [
    ("DescribeAlarms", "NextToken", lambda: {"MetricAlarms": [], "CompositeAlarms": [], "LogAlarms": []},
     "20 pages in a row without an item, each with a new next-page token", 20),
    ("ListDashboards", "NextToken", lambda: {"DashboardEntries": []},
     "20 pages in a row without an item, each with a new next-page token", 20),
    ("DescribeAlarms", "NextToken", lambda: {"MetricAlarms": [
        {"AlarmName": "gpudash-a", "AlarmArn": "arn:aws:cloudwatch:us-east-1:1:alarm:gpudash-a", "StateValue": "OK",
         "ComparisonOperator": "GreaterThanThreshold", "EvaluationPeriods": 1, "Threshold": 1.0, "MetricName": "m"}],
        "CompositeAlarms": [], "LogAlarms": []},
     "an item an earlier page listed (gpudash-a)", 2),
    ("ListDashboards", "NextToken", lambda: {"DashboardEntries": [{"DashboardName": "team-gpu"}]},
     "a name that does not start with 'gpudash-' (team-gpu)", 1),
], ids=["alarms: empty pages", "dashboards: empty pages", "alarms: the first page again", "dashboards: unasked"])
def test_a_listing_that_would_not_end_or_is_not_what_was_asked_fails_at_once(proxied, cli, operation, key, page,
                                                                             said, calls):
    """A listing whose every page gives a new next-page token (a server that ignores the token and answers the
    first page again, or empty pages) went on until the deadline (--deadline, 900 s by default); one listing what
    was not asked for was used as far as it fitted. Each is not an answer now, as soon as it shows."""
    proxy, client, apply = proxied
    pages = _Pages(operation, key, page)
    proxy.inject(pages)
    code, stdout, stderr = cli("plan", "--no-grafana", "--deadline", "60")
    assert code == 3 and stdout == "" and "Traceback" not in stderr, (code, stdout, stderr)
    assert f"CloudWatch answered {operation} in us-east-1 with {said}" in stderr, stderr
    assert pages.count == calls


def test_a_tag_listing_of_empty_pages_is_not_believed_and_each_alarm_is_asked_alone(proxied, published, cli):
    """GetResources answers page after page without a resource, each with a new token. Its documentation has said a page
    may hold fewer results than allowed (an index that is slow, not only a broken one), and each alarm's own tags can
    be read instead: the plan failed (exit 3, nothing planned); now the listing is not read on nor believed, a note
    says so, and every alarm's tags are read alone (ListTagsForResource): the plan is the same as with the bulk read."""
    proxy, client, apply = proxied
    published()
    fresh(proxy)
    pages = _Pages("GetResources", "PaginationToken", lambda: {"ResourceTagMappingList": []})
    proxy.inject(pages)
    code, stdout, stderr = cli("plan", "--no-grafana")
    assert code == 0 and "Traceback" not in stderr, (code, stdout, stderr)
    assert "tag:GetResources answered 20 pages in a row without a resource in us-east-1" in stderr, stderr
    assert pages.count == 20 and proxy.operations.count("ListTagsForResource") == len(alarms(client))


def test_a_tag_listing_that_answers_its_earlier_results_again_is_not_believed_and_each_alarm_is_asked_alone(
        proxied, published, cli):
    """GetResources as reported of AWS (boto/boto3#2461: TagFilters and ResourceTypeFilters, a handful of resources):
    an empty first page with a token, then the results, then an empty page, then the same results again, each with a
    new token, without end. The plan failed (exit 3: "an item an earlier page listed"), every run; each alarm's own
    tags can be read instead, as where the listing gives empty pages: the listing is not believed, a note says so, and
    the plan is the one the bulk read gives."""
    proxy, client, apply = proxied
    published()
    code, expected, _ = cli("plan", "--no-grafana")
    assert code == 0, expected
    fresh(proxy)
    name, alarm = next(iter(alarms(client).items()))
    item = {"ResourceARN": alarm["AlarmArn"], "Tags": client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]}
    pages = _Pages("GetResources", "PaginationToken", lambda: {
        "ResourceTagMappingList": [item] if pages.count % 2 == 0 else []})
    proxy.inject(pages)
    code, stdout, stderr = cli("plan", "--no-grafana")
    assert code == 0 and "Traceback" not in stderr, (code, stdout, stderr)
    assert "tag:GetResources gave in us-east-1 on a later page what an earlier page gave" in stderr, stderr
    assert pages.count == 4 and proxy.operations.count("ListTagsForResource") == len(alarms(client))
    assert stdout == expected


@pytest.mark.parametrize("how", ["a page that ends early", "an index behind the tags"])
def test_a_tag_listing_that_leaves_out_owned_alarms_no_longer_defined_does_not_leave_them_unpruned(
        how, proxied, published, project_dir):
    """GetResources by the ownership tag answers without some alarms that carry it: its first page alone, without
    the token of the next (a page that ends early), or without the removed cluster's alarms (a tagging index behind
    them). Those alarms were read as untagged, so `apply --prune --removed-cluster other` kept them without a word
    (exit 0); each alarm listed that the bulk read does not vouch for is now read alone (ListTagsForResource), as the
    defined ones were, and pruned on that evidence."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    fresh(proxy)
    arns = {alarm["AlarmArn"] for name, alarm in alarms(client).items() if other_cluster(name)}
    answered: set[str] = set()

    def short(body: bytes) -> bytes:
        answer = json.loads(body)
        kept = [item for item in answer["ResourceTagMappingList"] if how == "a page that ends early"
                or item["ResourceARN"] not in arns]
        answered.update(item["ResourceARN"] for item in kept)
        answer.pop("PaginationToken", None)
        return json.dumps({**answer, "ResourceTagMappingList": kept}).encode()

    proxy.inject(Rule(path="/", operation="GetResources", action="rewrite", times=ALWAYS, contains=b"TagFilters",
                      callback=short))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 0 and "Traceback" not in stderr, (code, stderr)
    assert arns - answered, "the listing left out none of the alarms to prune"
    assert [name for name in alarms(client) if other_cluster(name)] == [], sorted(alarms(client))
    assert len(alarms(client)) == 13


ENDING_EARLY = {  # listing: (the request asking for it, its items' key, each item's name key, what the failure says)
    "alarms": ({"operation": "DescribeAlarms", "contains": b"AlarmNamePrefix"}, "MetricAlarms", "AlarmName",
               "leaving out 13 that DescribeAlarms by name reads (gpudash-other-"),
    "dashboards": ({"operation": "ListDashboards"}, "DashboardEntries", "DashboardName",
                   "leaving out 3 that GetDashboard reads (gpudash-other-"),
    # the listing of every name alone ends early: the cluster's own listing holds the three read by name too (said once)
    "dashboards, the whole listing": ({"operation": "ListDashboards", "contains": b'"DashboardNamePrefix": "gpudash-"'},
                                      "DashboardEntries", "DashboardName",
                                      "leaving out 3 that GetDashboard reads (gpudash-other-"),
}


@pytest.mark.parametrize("listing", ENDING_EARLY)
def test_a_listing_that_ends_before_what_to_prune_fails_the_prune_instead_of_pruning_none(
        listing, proxied, published, project_dir):
    """DescribeAlarms by the name prefix, or ListDashboards, answers the objects still defined and ends there, without
    a token for the page holding those of the cluster named by --removed-cluster (a page that ends early). Nothing
    defined is missing from it, so `apply --prune --removed-cluster other` left that cluster's alarms, or its
    dashboards, without a word (exit 0). The tag listing shows every alarm carrying the project's tag, and the names
    gpudash gave that cluster's dashboards are known: each is read by name, and one that reads and that the listing
    leaves out shows it holds only some: a failure, nothing written."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    before = (sorted(alarms(client)), _dashboards(client))
    asking, items, name, said = ENDING_EARLY[listing]

    def first_page_only(body: bytes) -> bytes:
        answer = json.loads(body)
        answer.pop("NextToken", None)
        answer[items] = [item for item in answer[items] if not other_cluster(item[name])]
        return json.dumps(answer).encode()

    fresh(proxy)
    proxy.inject(Rule(path="/", action="rewrite", times=ALWAYS, callback=first_page_only, **asking))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 3 and "Traceback" not in stderr, (code, stderr)
    assert said in stderr and "what --prune would delete cannot be read" in stderr, stderr
    assert (sorted(alarms(client)), _dashboards(client)) == before and writes(proxy) == []
    if items == "DashboardEntries":  # each dashboard read once: one the cluster's listing holds and that was read by
        # name (the removed cluster's) is not read again (5e2bef92; it was: 9 reads of 6 dashboards)
        assert proxy.operations.count("GetDashboard") == len(before[1]), proxy.operations


NOT_FOUND = {"__type": "ResourceNotFound", "message": "not found"}


def test_a_retired_object_deleted_by_someone_just_before_gpudash_deletes_it_is_gone_not_a_crash(
        proxied, published, project_dir):
    proxy, client, apply = proxied
    # (settled: the one cluster's objects record it alone, so the prune below writes only its deletes)
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    retired_alarms = sorted(n for n in alarms(client) if other_cluster(n))
    config = str(project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n"))

    done = threading.Event()
    lock = threading.Lock()

    def someone_deletes_them():
        """Once, before whichever delete comes first: apply writes dashboards and alarms side by side, so
        both faults can fire at once; a second deletion of the gone alarms would fail inside the proxy."""
        with lock:
            if done.is_set():
                return
            done.set()
            client.delete_alarms(AlarmNames=retired_alarms)
            retired = [n for n in _dashboards(client) if other_cluster(n)]
            if retired:  # an empty DeleteDashboards is refused
                client.delete_dashboards(DashboardNames=retired)

    fresh(proxy)
    proxy.inject(fault("DeleteAlarms", "status", status=404, body=NOT_FOUND, callback=someone_deletes_them),
                 fault("DeleteDashboards", "status", status=404, body=NOT_FOUND, times=ALWAYS,
                       callback=someone_deletes_them))
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--config", config)
    assert code == 0, stderr
    assert report["failed"] == [] and len(report["written"]) == 3  # the threshold: one alarm, two dashboards
    assert alarms(client)["gpudash-gpu-cluster-gpu-temp-critical-critical"]["Threshold"] == 90.0
    assert not any(other_cluster(n) for n in [*alarms(client), *_dashboards(client)])


def test_a_not_found_answer_to_a_delete_of_an_object_still_there_is_a_failure(proxied, published, project_dir):
    proxy, client, apply = proxied
    # (settled: the one cluster's objects record it alone, so the prune below writes only its deletes)
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    config = str(project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n"))
    fresh(proxy)
    proxy.inject(fault("DeleteAlarms", "status", status=404, body=NOT_FOUND, times=ALWAYS),
                 fault("DeleteDashboards", "status", status=404, body=NOT_FOUND, times=ALWAYS))
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--config", config)
    assert code == 3 and "Traceback" not in stderr and "internal error" not in stderr
    assert len(report["written"]) == 3 and len(report["failed"]) == 16
    assert all("still there" in item["error"] for item in report["failed"])
    assert sum(other_cluster(n) for n in [*alarms(client), *_dashboards(client)]) == 16


def test_plan_stops_at_its_deadline(proxied, cli, deadline_clock):
    proxy, client, apply = proxied
    # The listings take (on the test's clock) far longer than the whole command may. Both: the alarms and the
    # dashboards are read side by side, and the test's clock moves only when a listing reaches the proxy, so a
    # slow alarm listing alone could come after every other read had passed its deadline check.
    proxy.inject(fault("DescribeAlarms", "before", callback=lambda: deadline_clock.sleep(1000)),
                 fault("ListDashboards", "before", callback=lambda: deadline_clock.sleep(1000)))
    code, stdout, stderr = cli("plan", "--no-grafana", "--deadline", "60")
    assert code == 3 and stdout == "" and "Traceback" not in stderr
    assert "did not finish within its deadline of 60 s" in stderr


def test_gpudash_s_own_lost_delete_answered_not_found_on_its_retry_is_done_not_someone_elses(
        proxied, published, project_dir):
    """The first DeleteAlarms and DeleteDashboards reach CloudWatch, which deletes, and their answers are lost;
    the retries are answered ResourceNotFound (gone: by that first attempt). The retired objects are reported
    deleted (done), never skipped as deleted by someone else."""
    proxy, client, apply = proxied
    # (settled: the one cluster's objects record it alone, so the prune below writes only its deletes)
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    retired = sorted(n for n in [*alarms(client), *_dashboards(client)] if other_cluster(n))
    config = str(project_dir(""))
    fresh(proxy)
    dashboards = [n for n in retired if n in _dashboards(client)]  # one DeleteDashboards each; the DeleteAlarms
    first = [n for n in retired if n not in dashboards][0]            # of the first alarm
    proxy.inject(fault("DeleteAlarms", "reset-after", naming=first),
                 *(fault("DeleteDashboards", "reset-after", naming=name) for name in dashboards),
                 fault("DeleteAlarms", "status", status=404, body=NOT_FOUND, times=ALWAYS, naming=first),
                 fault("DeleteDashboards", "status", status=404, body=NOT_FOUND, times=ALWAYS))
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--config", config)
    assert proxy.faults() and "Traceback" not in stderr
    assert code == 0 and report["failed"] == [], report["failed"]
    assert sorted(report["written"]) == retired, report
    assert not any(other_cluster(n) for n in [*alarms(client), *_dashboards(client)])


@pytest.mark.parametrize("answer", ["503", "throttled"])
def test_a_retired_object_a_person_deletes_between_two_attempts_is_not_claimed_without_saying_so(proxied, published,
                                                                                               project_dir, answer):
    """The first DeleteAlarms / DeleteDashboards fails and a person deletes the object
    before the retry, whose look finds it gone. Answered 503 (a gateway's answer too: the request may have reached
    CloudWatch and deleted it), nothing tells gpudash's delete from the person's: it was listed as deleted by gpudash
    with nothing said; it still is (gone, as the prune asked), with a note that says either may have deleted it.
    Answered Throttling (no attempt made), it was listed as deleted by gpudash too, though only the person can have
    deleted it: it is "already gone" now, not in `written`."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    dashboard = next(n for n in _dashboards(client) if other_cluster(n))
    alarm = sorted(n for n in alarms(client) if other_cluster(n))[0]
    fresh(proxy)
    status, body = (503, {"__type": "ServiceUnavailable"}) if answer == "503" else (400, THROTTLED)
    proxy.inject(fault("DeleteAlarms", "status", status=status, body=body, naming=alarm,
                       callback=lambda: client.delete_alarms(AlarmNames=[alarm])),
                 fault("DeleteDashboards", "status", status=status, body=body, naming=dashboard,
                       callback=lambda: client.delete_dashboards(DashboardNames=[dashboard])))
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--config", str(project_dir("")))
    assert code == 0 and report["failed"] == [] and "Traceback" not in stderr, (report["failed"], stderr)
    note = "deleted by that attempt or by someone else meanwhile (nothing tells which); listed as deleted"
    for name in (alarm, dashboard):
        if answer == "503":
            assert name in report["written"] and f"{name}: an attempt of Delete" in stderr and note in stderr, stderr
        else:
            assert name not in report["written"] and name not in stderr, stderr
    assert not any(other_cluster(n) for n in [*alarms(client), *_dashboards(client)])


GARBLED = b"<html>busy</html>"
NAME = "gpudash-gpu-cluster-gpu-temp-critical-critical"
WARMER = "thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n"


def _tags(client, name):
    return {t["Key"]: t["Value"] for t in client.list_tags_for_resource(
        ResourceARN=alarms(client)[name]["AlarmArn"])["Tags"]}


@pytest.mark.parametrize("api", ["PutMetricAlarm", "TagResource"])
def test_a_write_whose_last_attempt_lands_with_an_answer_that_is_not_one_is_read_back(proxied, published, project_dir,
                                                                                      api):
    """An update; five attempts of `api` are throttled (not made), the sixth reaches CloudWatch (made) and comes back
    200 with a page that is not an API answer. Nothing read it back: PutMetricAlarm was reported not written while
    the alarm held 90; TagResource said "its tags were not written: gpudash:sha256 still holds the evidence of
    gpudash's earlier write" while it held the new one. A 2xx that is neither the write's answer nor an error document
    may have been made: it is read back, and shows the write made."""
    proxy, client, apply = proxied
    published()
    before = _tags(client, NAME)["gpudash:sha256"]
    naming = NAME if api == "PutMetricAlarm" else None
    proxy.inject(fault(api, "status", times=5, status=400, body=THROTTLED, naming=naming),
                 fault(api, "body", times=1, body=GARBLED, naming=naming))
    code, report, stderr = apply("--config", str(project_dir(WARMER)))
    assert code == 0 and NAME in report["written"] and report["failed"] == [], report["failed"]
    assert alarms(client)[NAME]["Threshold"] == 90.0 and _tags(client, NAME)["gpudash:sha256"] != before


def test_a_delete_whose_last_attempt_lands_with_an_answer_that_is_not_one_is_read_back(proxied, published,
                                                                                       project_dir):
    """--prune: five DeleteAlarms attempts are throttled, the sixth reaches CloudWatch (deleted) and comes back 200
    with a page that is not an API answer. It was listed failed, unread, while the alarm was gone; read back, it is
    deleted."""
    proxy, client, apply = proxied
    retired = "gpudash-other-gpu-temp-high-warning"
    published("--config", str(project_dir(TWO_CLUSTERS)))
    proxy.inject(fault("DeleteAlarms", "status", times=5, status=400, body=THROTTLED, naming=retired),
                 fault("DeleteAlarms", "body", times=1, body=GARBLED, naming=retired))
    code, report, stderr = apply("--config", str(project_dir("")), "--prune", "--removed-cluster", "other")
    assert retired not in alarms(client)
    assert retired not in [item["name"] for item in report["failed"]], report["failed"]


def test_an_alarm_listed_with_the_arn_of_another_alarm_is_not_an_answer(proxied, published, cli):
    """DescribeAlarms lists a person's alarm (no tags, named in gpudash's form, not defined) with the AlarmArn of one
    of gpudash's alarms: every type as the model has it, but not the alarm asked for. gpudash read the other alarm's
    tags as this one's (owned, hash of other fields: "edited") and `apply --prune --force` deleted the person's alarm.
    An alarm whose ARN does not name it (its name, its Region) is not an API answer: exit 3, nothing deleted."""
    proxy, client, apply = proxied
    published()
    person = "gpudash-gpu-cluster-legacy-rule-warning"
    foreign_alarm(client, name=person)
    owned_arn = alarms(client)[NAME]["AlarmArn"]
    fresh(proxy)

    def swap(answer):
        for alarm in answer.get("MetricAlarms", []):
            if alarm["AlarmName"] == person:
                alarm["AlarmArn"] = owned_arn
    proxy.inject(_garbled("DescribeAlarms", swap))
    code, report, stderr = apply("--prune", "--force")
    assert person in alarms(client), "a person's alarm was deleted on the tags of another alarm"
    assert code == 3 and "Traceback" not in stderr, (code, stderr)
    assert "not an API answer" in stderr and person in stderr, stderr


INTERNAL = {"__type": "InternalFailure", "message": "An internal error occurred"}


def test_a_delete_cloudwatch_makes_then_answers_internal_failure_is_not_called_someone_elses(proxied, published,
                                                                                             project_dir):
    """CloudWatch itself answers 500 InternalFailure to the first DeleteAlarms / DeleteDashboards, which it made (an
    internal error after the delete: the request reached CloudWatch). The retry's look finds the object gone. It was
    reported "already gone" (not in `written`, nothing said), as if no attempt had reached CloudWatch and someone else
    had deleted it: the report omitted a delete gpudash made. A 500 may have landed as a 503 may: listed as deleted,
    with the note that either may have done it."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    dashboard = next(n for n in _dashboards(client) if other_cluster(n))
    alarm = sorted(n for n in alarms(client) if other_cluster(n))[0]
    fresh(proxy)
    proxy.inject(fault("DeleteAlarms", "gateway", status=500, body=INTERNAL, naming=alarm),
                 fault("DeleteDashboards", "gateway", status=500, body=INTERNAL, naming=dashboard))
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--config", str(project_dir("")))
    assert code == 0 and report["failed"] == [] and "Traceback" not in stderr, (report["failed"], stderr)
    assert alarm not in alarms(client) and dashboard not in _dashboards(client)
    note = "deleted by that attempt or by someone else meanwhile (nothing tells which); listed as deleted"
    for name in (alarm, dashboard):
        assert name in report["written"] and f"{name}: an attempt of Delete" in stderr and note in stderr, \
            (name, report["written"], stderr)
    # no retry was sent (the look before it found the object gone): the note must not say one was answered
    assert "answer lost, and read before a retry: it is gone" in stderr and "retry was answered" not in stderr, stderr


def test_a_write_cloudwatch_makes_then_answers_internal_failure_is_listed_written(proxied, published, project_dir):
    """The same for an update: PutMetricAlarm made, answered 500 InternalFailure; the retry's look finds the alarm as
    sent. It was "already as generated" (another publisher's, not in `written`, exit 0, its evidence not tagged) though
    gpudash's own attempt made it."""
    proxy, client, apply = proxied
    published()
    fresh(proxy)
    proxy.inject(fault("PutMetricAlarm", "gateway", status=500, body=INTERNAL, naming=NAME))
    code, report, stderr = apply("--config", str(project_dir(WARMER)))
    assert alarms(client)[NAME]["Threshold"] == 90.0
    assert NAME in report["written"], (code, report, stderr)


def test_a_delete_whose_every_answer_is_lost_and_read_back_gone_says_someone_else_may_have_deleted_it(
        proxied, published, project_dir):
    """Every attempt of DeleteAlarms / DeleteDashboards loses its answer: five are answered 503 with the object still
    there at each look, the sixth reaches CloudWatch, which deletes, and the connection drops. The read-back shows the
    object gone: listed as deleted, as a retry's look or ResourceNotFound would list it, and with the same note that
    gpudash's attempt or someone else may have deleted it (it was listed deleted with no note)."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    dashboard = next(n for n in _dashboards(client) if other_cluster(n))
    alarm = sorted(n for n in alarms(client) if other_cluster(n))[0]
    fresh(proxy)
    for api, name in (("DeleteAlarms", alarm), ("DeleteDashboards", dashboard)):
        proxy.inject(fault(api, "status", status=503, times=5, naming=name), fault(api, "reset-after", naming=name))
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--config", str(project_dir("")))
    assert code == 0 and report["failed"] == [] and "Traceback" not in stderr, (report["failed"], stderr)
    assert alarm not in alarms(client) and dashboard not in _dashboards(client)
    assert all(rule.times == 0 for rule in proxy.rules), "not every attempt was made"
    note = "deleted by that attempt or by someone else meanwhile (nothing tells which); listed as deleted"
    for name, api in ((alarm, "DeleteAlarms"), (dashboard, "DeleteDashboards")):
        assert name in report["written"] and f"{name}: an attempt of {api}" in stderr and note in stderr, \
            (name, report["written"], stderr)


@pytest.mark.parametrize("how", ["another name", "no name"])
def test_a_dashboard_answer_naming_another_dashboard_is_not_an_answer(how, proxied, published):
    """GetDashboard for one of gpudash's dashboards is answered with another dashboard's name (a cache or proxy
    mixing answers), or with none (CloudWatch names the dashboard in every answer): its body was read as the
    dashboard asked for (exit 0, "unchanged"). An answer naming another dashboard, or none, does not show it is the
    one asked for: not an API answer, exit 3, nothing written."""
    proxy, client, apply = proxied
    published()
    asked, other = _dashboards(client)[:2]
    bodies = {name: client.get_dashboard(DashboardName=name)["DashboardBody"] for name in (asked, other)}
    fresh(proxy)

    def swap(answer):
        if answer.get("DashboardName") == asked:
            if how == "no name":
                del answer["DashboardName"]
            else:
                answer["DashboardName"] = other
    proxy.inject(_garbled("GetDashboard", swap))
    code, report, stderr = apply()
    assert code == 3 and "Traceback" not in stderr, (code, stderr)
    assert "not an API answer" in stderr and asked in stderr and report.get("written", []) == [], stderr
    assert {name: client.get_dashboard(DashboardName=name)["DashboardBody"] for name in (asked, other)} == bodies


def _with_a_nan(body: str) -> str:
    """A dashboard body with a NaN where a number goes (Python's json writes the token JSON has not)."""
    value = json.loads(body)
    value["widgets"][0]["properties"]["yAxis"] = {"left": {"min": float("nan")}}
    return json.dumps(value)


@pytest.mark.parametrize("garble", [lambda body: "[" * 100_000 + "]" * 100_000, _with_a_nan],
                         ids=["nested-100000-deep", "a-nan-token"])
def test_a_dashboard_body_nested_deeper_than_the_parser_follows_is_not_an_answer(proxied, published, garble):
    """GetDashboard answers a DashboardBody nested 100,000 deep (a broken or hostile stand-in): reading it raised
    RecursionError, and apply ended "a bug in gpudash" with a traceback. It is a body that is not a JSON object, as
    any body no JSON parser reads: exit 3, nothing written. So is a body holding NaN where a number goes: JSON has no
    such token (CloudWatch refuses such a body at PutDashboard and answers the body it stored), but Python's parser
    took it, and the dashboard read as changed in the console (apply refused it, --force wrote over it from that
    answer)."""
    proxy, client, apply = proxied
    published()
    asked = _dashboards(client)[0]
    fresh(proxy)

    def deepen(answer):
        if answer.get("DashboardName") == asked:
            answer["DashboardBody"] = garble(answer["DashboardBody"])
    proxy.inject(_garbled("GetDashboard", deepen))
    code, report, stderr = apply()
    assert code == 3 and "Traceback" not in stderr, (code, stderr)
    assert "GetDashboard in us-east-1 with a body that is not a JSON object" in stderr, stderr
    assert writes(proxy) == []


@pytest.mark.parametrize("how", ["none", "all but a defined one"])
def test_a_dashboard_listing_that_leaves_out_a_defined_dashboard_fails_a_prune_instead_of_pruning_none(
        how, proxied, published, project_dir, cli):
    """ListDashboards answers (always) with only some of the dashboards, a valid shape (none: a stub standing in for
    CloudWatch; or without one that GetDashboard reads): the other cluster's dashboards, no longer defined, are
    missing from it too, so `apply --prune` is a failure saying so (nothing written, its alarms kept too), never a
    prune of none; `apply` without --prune publishes and says it; `plan` fails on it."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    before = (sorted(alarms(client)), _dashboards(client))

    def listing(body: bytes) -> bytes:
        answer = json.loads(body)
        answer["DashboardEntries"] = [] if how == "none" else [
            e for e in answer["DashboardEntries"] if e["DashboardName"] != "gpudash-gpu-cluster-health"]
        return json.dumps(answer).encode()

    fresh(proxy)
    proxy.inject(fault("ListDashboards", "rewrite", times=ALWAYS, callback=listing))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 3 and "Traceback" not in stderr, stderr
    said = stderr[stderr.index("that GetDashboard reads ("):]
    assert "gpudash-gpu-cluster-health" in said[:said.index("), in ")], stderr
    assert "what --prune would delete cannot be read" in stderr, stderr
    assert (sorted(alarms(client)), _dashboards(client)) == before and writes(proxy) == []
    code, report, stderr = apply()
    assert code == 0 and "apply --prune fails on it until it lists them" in stderr, stderr
    code, stdout, stderr = cli("plan", "--no-grafana", env={"AWS_ENDPOINT_URL": proxy.url})
    assert code == 3 and "what --prune would delete cannot be read" in stderr, stderr


@pytest.mark.parametrize("how", ["none", "all but a defined one"])
def test_an_alarm_listing_that_leaves_out_a_defined_alarm_fails_a_prune_instead_of_pruning_none(
        how, proxied, published, project_dir):
    """DescribeAlarms by the name prefix answers (always) with only some of the alarms, a valid shape (none: a stub
    standing in for CloudWatch; or without one defined): the other cluster's alarms, no longer defined, are missing
    from it too. `apply --prune` pruned none of them, the defined ones found as generated at the write and skipped,
    exit 0; now it fails saying so (nothing written). A read by name of the alarms to create shows it."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)), settle=True)
    before = (sorted(alarms(client)), _dashboards(client))
    dropped = "gpudash-gpu-cluster-gpu-idle-warning"

    def listing(body: bytes) -> bytes:
        answer = json.loads(body)
        answer["MetricAlarms"] = [] if how == "none" else [
            a for a in answer["MetricAlarms"] if a["AlarmName"] != dropped]
        return json.dumps(answer).encode()

    fresh(proxy)
    proxy.inject(Rule(path="/", operation="DescribeAlarms", action="rewrite", times=ALWAYS, contains=b"AlarmNamePrefix",
                      callback=listing))
    code, report, stderr = apply("--prune", "--removed-cluster", "other")
    assert code == 3 and "Traceback" not in stderr, stderr
    count = "26" if how == "none" else "1"  # none: the alarms defined, and the other cluster's the tag listing shows
    assert f"leaving out {count} that DescribeAlarms by name reads (" in stderr, stderr
    assert how == "none" or f"reads ({dropped}), in " in stderr, stderr
    assert "what --prune would delete cannot be read" in stderr, stderr
    assert (sorted(alarms(client)), _dashboards(client)) == before and writes(proxy) == []


def _definitions_without(*dropped: str) -> dict[str, str]:
    """The bundled dashboard definitions but these files (as project_dir takes them)."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "dashboards"
    return {path.name: path.read_text() for path in sorted(folder.glob("*.py")) if path.name not in dropped}


def test_a_dashboard_listing_that_ends_before_a_dashboard_dropped_from_the_definitions_fails_a_prune(
        proxied, published, project_dir, cli):
    """The overview dashboard is dropped from the definitions; ListDashboards by gpudash's prefix answers its first
    page alone, its next-page token dropped (a stub or proxy that does not page), and that page ends before the
    other cluster's overview: every defined dashboard is in it, so nothing showed a gap, and `apply --prune` pruned the
    first cluster's overview, left the other's silently and said done (exit 0). Each cluster's names are listed too
    now, on pages of their own: the other's overview is in its cluster's listing and not in the whole one, so the
    prune fails saying so (exit 3, nothing written) and `plan` too; with a listing that pages, the prune deletes both."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    config = str(project_dir(TWO_CLUSTERS, dashboards=_definitions_without("gpu_overview.py")))
    before = (sorted(alarms(client)), _dashboards(client))
    cut = "gpudash-other-overview"
    assert before[1][-1] == cut  # the last name: a first page ending before it holds every defined one

    def first_page(body: bytes) -> bytes:
        answer = json.loads(body)
        answer["DashboardEntries"] = [e for e in answer["DashboardEntries"] if e["DashboardName"] < cut]
        answer.pop("NextToken", None)
        return json.dumps(answer).encode()

    fresh(proxy)
    proxy.inject(Rule(path="/", operation="ListDashboards", action="rewrite", times=ALWAYS,
                      contains=b'"DashboardNamePrefix": "gpudash-"', callback=first_page))
    code, report, stderr = apply("--config", config, "--prune")
    assert code == 3 and "Traceback" not in stderr, stderr
    assert f"leaving out 1 that GetDashboard reads ({cut})" in stderr, stderr
    assert "what --prune would delete cannot be read" in stderr, stderr
    assert (sorted(alarms(client)), _dashboards(client)) == before and writes(proxy) == []
    code, stdout, stderr = cli("plan", "--no-grafana", "--config", config)
    assert code == 3 and "what --prune would delete cannot be read" in stderr, stderr
    fresh(proxy)
    code, report, stderr = apply("--config", config, "--prune")
    assert code == 0, stderr
    assert _dashboards(client) == [name for name in before[1] if not name.endswith("-overview")]

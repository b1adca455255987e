"""`gpudash apply` when one Region refuses or fails while another works (moto over HTTP, through the fault proxy):
each Region is written on its own, what was written is reported written, what failed is reported failed with the
Region's error, the exit code is 3, and a run again converges."""

from __future__ import annotations

import json

import pytest

from tests.support.cloudwatch_world import ALWAYS, alarms, fresh, writes
from tests.support.fault_proxy import HTML as HTML_PAGE, Rule

BOTH = "project: test\nclusters:\n  - {name: east, region: us-east-1}\n  - {name: west, region: us-west-2}\n"
DENIED = {"__type": "AccessDeniedException", "message": "explicit deny in a service control policy"}
FAILING = {"__type": "InternalFailure", "message": "internal failure"}


@pytest.mark.parametrize("status, body", [(400, DENIED), (500, FAILING)], ids=["denied", "failing"])
def test_a_region_whose_writes_fail_leaves_the_other_regions_writes_reported(status, body, proxied, tmp_path, moto):
    proxy, client, apply = proxied
    config = tmp_path / "both.yaml"
    config.write_text(BOTH)
    fresh(proxy)
    proxy.inject(Rule(path="/", operation="PutMetricAlarm", action="status", times=ALWAYS, status=status,
                      body=json.dumps(body).encode(), region="us-west-2"))
    code, report, stderr = apply("--config", str(config))
    assert code == 3 and "Traceback" not in stderr, stderr
    west = moto.client("cloudwatch", "us-west-2")
    assert alarms(west) == {}
    east = sorted(alarms(client))
    assert len(east) == 13 and set(east) <= set(report["written"])
    failed = {item["name"]: item["error"] for item in report["failed"]}
    assert len(failed) == 13 and all(name.startswith("gpudash-west-") for name in failed), failed
    # each says why, as the Region answered: a read-back that shows the write not made keeps the answer's error
    assert all(f"failed in us-west-2: {body['__type']}" in error for error in failed.values()), failed
    assert not any(name.startswith("gpudash-west-") for name in report["written"] if name in alarms(west))
    assert "13 of" in stderr and "writes failed" in stderr
    fresh(proxy)
    code, report, stderr = apply("--config", str(config))
    assert code == 0, stderr
    assert len(alarms(west)) == 13 and sorted(report["written"]) == sorted(alarms(west))
    fresh(proxy)
    code, report, _ = apply("--config", str(config))
    assert code == 0 and report["written"] == [] and writes(proxy) == []


@pytest.mark.parametrize("operation", ["DescribeAlarms", "GetResources", "ListTagsForResource", "ListDashboards",
                                       "GetDashboard"])
@pytest.mark.parametrize("answer", [b"null", b"", b'"ok"', b'{"MetricAlarms": [{"AlarmName": "gpudash-', b"[{}]"],
                         ids=["null", "empty", "a string", "truncated JSON", "a list"])
def test_a_read_answered_200_with_null_nothing_or_a_string_writes_nothing(operation, answer, proxied, published):
    """Every read the plan makes answered with status 200 and JSON null, no body, a JSON string, JSON cut short or a
    list where an object is due (a stub or proxy in front of CloudWatch): never "nothing there", so nothing is
    planned as a create over what exists."""
    proxy, client, apply = proxied
    published()
    fresh(proxy)
    before = sorted(alarms(client))
    proxy.inject(Rule(path="/", operation=operation, action="body", times=ALWAYS, body=answer,
                      headers={"Content-Type": "application/x-amz-json-1.0"}))
    if operation == "ListTagsForResource":  # read alarm by alarm where GetResources is denied
        proxy.inject(Rule(path="/", operation="GetResources", action="status", times=ALWAYS, status=400,
                          body=json.dumps(DENIED).encode()))
    code, _, stderr = apply("--force", "--prune")
    assert code == 3 and "not an API answer" in stderr and "Traceback" not in stderr, stderr
    assert writes(proxy) == [] and sorted(alarms(client)) == before


@pytest.mark.parametrize("status", [200, 400])
def test_an_answer_of_json_nested_too_deeply_to_read_is_not_an_api_answer(status, proxied, published):
    """DescribeAlarms answered with JSON nested deeper than Python's parser follows (a success, or an error answer,
    which botocore parses itself): apply said "the input is nested too deeply to be read ... the file you changed
    last" (exit 2). It is CloudWatch's answer that is not one: a remote failure, exit 3, nothing written."""
    proxy, client, apply = proxied
    published()
    fresh(proxy)
    before = sorted(alarms(client))
    proxy.inject(Rule(path="/", operation="DescribeAlarms", times=ALWAYS, status=status,
                      action="body" if status == 200 else "status", body=b"[" * 10**5 + b"]" * 10**5,
                      headers={"Content-Type": "application/x-amz-json-1.0"}))
    code, _, stderr = apply("--force", "--prune")
    assert code == 3 and "not an API answer" in stderr and "changed last" not in stderr, stderr
    assert writes(proxy) == [] and sorted(alarms(client)) == before


NAMES_NOT_FOUND = "arn:aws:cloudwatch:us-east-1:123456789012:alarm:x: ResourceNotFoundException is not returned"


@pytest.mark.parametrize("status, kind", [(400, "AccessDeniedException"), (500, "InternalFailure"), (400, None)],
                         ids=["refused", "failing", "without an error code"])
def test_alarm_tags_are_read_as_none_only_on_the_not_found_code_not_on_its_name_in_a_message(status, kind, proxied,
                                                                                            published):
    """Every alarm's tags read one by one (GetResources denied), each answered with another error whose message
    names ResourceNotFoundException, or with an error without a code that names it: that error is the answer (the
    alarms' ownership could not be read), never "no tags", which would plan every alarm gpudash owns as someone
    else's."""
    proxy, client, apply = proxied
    published()
    fresh(proxy)
    before = sorted(alarms(client))
    proxy.inject(Rule(path="/", operation="GetResources", action="status", times=ALWAYS, status=400,
                      body=json.dumps(DENIED).encode()),
                 Rule(path="/", operation="ListTagsForResource", action="status", times=ALWAYS, status=status,
                      body=json.dumps({**({"__type": kind} if kind else {}), "message": NAMES_NOT_FOUND}).encode()))
    code, report, stderr = apply("--prune")
    said = (f"ListTagsForResource failed in us-east-1: {kind}" if kind else
            "CloudWatch answered ListTagsForResource in us-east-1 with something that is not an API answer (HTTP 400")
    assert code == 3 and said in stderr, stderr
    assert "Traceback" not in stderr and report.get("refused", []) == [], report
    assert writes(proxy) == [] and sorted(alarms(client)) == before


SIGN_IN = "https://sso.example.com/signin"


@pytest.mark.parametrize("status, said", [
    (302, f"HTTP 302 redirecting to {SIGN_IN}, text/html: '<!doctype html>"),
    (403, "HTTP 403, text/html: '<!doctype html>"),
    (502, "HTTP 502, text/html: '<!doctype html>"),
], ids=["a redirect to a sign-in page", "a proxy's refusal page", "a gateway's error page"])
def test_an_error_status_without_an_aws_error_is_not_an_api_answer(status, said, proxied, published):
    """DescribeAlarms answered with a redirect to a sign-in page, or an HTML error page, by something in front of
    CloudWatch. The error read as CloudWatch's own, named by its status ("failed: 302: <!doctype html>...", the
    whole page) with the hint to check the request; it is something else's answer: said so, with the endpoint to
    check, the page cut short; a redirect or refusal is not retried (it answers the same), a gateway's 5xx is."""
    proxy, client, apply = proxied
    published()
    fresh(proxy)
    before = sorted(alarms(client))
    page = HTML_PAGE + b"<p>" + b"x" * 500 + b"</p>"
    proxy.inject(Rule(path="/", operation="DescribeAlarms", action="status", times=ALWAYS, status=status, body=page,
                      headers={"Location": SIGN_IN + "?state=abc", "Content-Type": "text/html"}))
    code, report, stderr = apply("--prune")
    assert code == 3 and "Traceback" not in stderr, (code, stderr)
    answered = "CloudWatch answered DescribeAlarms in us-east-1 with something that is not an API answer"
    assert f"{answered} ({said}" in stderr, stderr
    assert "check AWS_ENDPOINT_URL and any proxy in between" in stderr and "x" * 100 not in stderr, stderr
    assert "state=abc" not in stderr, stderr
    assert proxy.operations.count("DescribeAlarms") == (6 if status >= 500 else 1)
    assert writes(proxy) == [] and sorted(alarms(client)) == before


@pytest.mark.parametrize("operation", ["DescribeAlarms", "GetResources", "ListDashboards", "PutMetricAlarm",
                                       "PutDashboard", "TagResource"])
def test_a_not_found_code_from_an_api_that_documents_none_is_a_remote_failure(operation, proxied, published,
                                                                              project_dir):
    """A not-found error code (ResourceNotFound) is an answer only where the API says so of what it was asked for
    (GetDashboard, DeleteDashboards, DeleteAlarms, ListTagsForResource): from any other (a stand-in or proxy in front
    of CloudWatch answering GetResources or DescribeAlarms so) it went up unread and apply ended in "internal error:
    ClientError ... ResourceNotFound" (exit 4, "report it"). It is a failure of that call like any refusal: named,
    exit 3, nothing the call's answer was needed for written."""
    proxy, client, apply = proxied
    published()
    fresh(proxy)
    proxy.inject(Rule(path="/", operation=operation, action="status", times=ALWAYS, status=400,
                      body=json.dumps({"__type": "ResourceNotFound", "message": "no such thing"}).encode()))
    config = project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n")
    code, report, stderr = apply("--config", str(config))
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr
    assert code == 3 and f"CloudWatch {operation} failed in us-east-1: ResourceNotFound: no such thing" in stderr + \
        json.dumps(report), stderr


def _times_spoiled(member: str, value):
    """A rewrite of an answer's listed items (alarms, dashboards) giving each `member` the value `value`."""
    def spoil(body: bytes) -> bytes:
        answer = json.loads(body)
        for key in ("MetricAlarms", "DashboardEntries"):
            for item in answer.get(key) or []:
                item[member] = value
        return json.dumps(answer).encode()
    return spoil


@pytest.mark.parametrize("operation, member", [("DescribeAlarms", "StateUpdatedTimestamp"),
                                               ("DescribeAlarms", "AlarmConfigurationUpdatedTimestamp"),
                                               ("ListDashboards", "LastModified")])
@pytest.mark.parametrize("value", ["yesterday", 1e20], ids=["a word", "past year 9999"])
def test_a_time_botocore_cannot_read_is_not_an_api_answer_not_a_crash(operation, member, value, proxied, published):
    """A listing whose alarms or dashboards carry a time that is a text or a number but no time (a proxy or stub
    garbling it): botocore's parser raised a ValueError ("Invalid timestamp") or a RuntimeError reading it, and apply ended in "internal
    error" (exit 4, a traceback behind --debug). It is an answer that is not the API's: exit 3, nothing written."""
    proxy, client, apply = proxied
    published()
    fresh(proxy)
    before = sorted(alarms(client))
    proxy.inject(Rule(path="/", operation=operation, action="rewrite", times=ALWAYS,
                      callback=_times_spoiled(member, value)))
    code, report, stderr = apply("--prune")
    assert code == 3 and "internal error" not in stderr and "Traceback" not in stderr, stderr
    assert f"{member} is not a time" in stderr and "not an API answer" in stderr, stderr
    assert writes(proxy) == [] and sorted(alarms(client)) == before


@pytest.mark.parametrize("body, said", [
    (b"null", "'null'"), (b"[]", "'[]'"), (b'"denied"', "'\"denied\"'"),
    (b'{"__type": 403, "message": "denied"}', "'{\"__type\": 403"),
    (b'{"__type": "AccessDenied", "message": {"text": "denied"}}', "'{\"__type\": \"AccessDenied\""),
], ids=["null", "a list", "a string", "a number for the error's type", "an object for its message"])
@pytest.mark.parametrize("operation", ["DescribeAlarms", "GetResources"])
def test_an_error_status_with_json_that_is_no_error_document_is_not_an_api_answer(operation, body, said, proxied,
                                                                                  published):
    """A refusal (403) whose JSON body is not an AWS error document (not an object, or an object whose __type or
    message is not a text: a proxy or stub in front of CloudWatch or the tagging API): botocore's error parser
    raised reading it (AttributeError, TypeError) and apply ended in "internal error" (exit 4). It is an answer that
    is not the API's, named by its status, as a page of text is: exit 3, the body quoted, nothing written."""
    proxy, client, apply = proxied
    published()
    fresh(proxy)
    before = sorted(alarms(client))
    proxy.inject(Rule(path="/", operation=operation, action="status", times=ALWAYS, status=403, body=body,
                      headers={"Content-Type": "application/x-amz-json-1.1"}))
    code, report, stderr = apply("--prune")
    assert code == 3 and "internal error" not in stderr and "Traceback" not in stderr, (code, stderr)
    assert f"with something that is not an API answer (HTTP 403, application/x-amz-json-1.1: {said}" in stderr, stderr
    assert writes(proxy) == [] and sorted(alarms(client)) == before

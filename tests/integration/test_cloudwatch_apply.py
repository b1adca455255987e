"""gpudash plan/apply against moto's CloudWatch server over real HTTP (AWS_ENDPOINT_URL)."""

from __future__ import annotations

import json

import pytest

from generator import cli_publish
from generator.targets import deadline
from generator.targets.cloudwatch_api import WRITES as WRITE_APIS
from generator.targets.pacing import Pacer
from tests.support.fault_proxy import FaultProxy, Rule
from tests.support.clock import FakeClock
from tests.support.moto_server import MotoServer

NAMES = ["gpudash-gpu-cluster-by-pod", "gpudash-gpu-cluster-health", "gpudash-gpu-cluster-overview"]


@pytest.fixture(scope="module")
def moto():
    with MotoServer() as server:
        yield server


_BUILT: dict = {}


@pytest.fixture(autouse=True)
def built_once(monkeypatch):
    """Each settings text is generated once per session: these tests are about publishing."""
    generate = cli_publish._desired

    def desired(config, csv, from_dir):
        key = (open(config).read() if config else None, csv, from_dir)
        if key not in _BUILT:
            _BUILT[key] = generate(config, csv, from_dir)
        return _BUILT[key]

    monkeypatch.setattr(cli_publish, "_desired", desired)


@pytest.fixture
def aws(moto, cli, monkeypatch):
    moto.reset()
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    client = moto.client("cloudwatch", "us-east-1")

    def apply(*args):
        code, stdout, stderr = cli("apply", "--skip-verify", "--output", "json", *args)
        return code, (json.loads(stdout) if stdout.strip().startswith("{") else stdout), stderr

    return client, apply


@pytest.fixture
def proxied(aws, moto, monkeypatch):
    """The same, through a fault-injecting proxy in front of moto."""
    client, apply = aws
    with FaultProxy(moto.url) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        yield proxy, client, apply


ALWAYS = 10**6


def fault(operation, action, *, times=1, status=200, body=None, callback=None):
    """A proxy rule for one CloudWatch (or tagging) operation; `body` bytes, or JSON-able."""
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    return Rule(path="/", operation=operation, action=action, times=times, status=status, body=data,
                callback=callback)


def _writes(proxy):
    return [op for op in proxy.operations if op in WRITE_APIS]


def _fresh(proxy):
    """No faults, and an empty record of operations."""
    proxy.clear()
    with proxy.lock:
        proxy.operations.clear()


def _alarms(client):
    return {a["AlarmName"]: a for a in client.describe_alarms(AlarmNamePrefix="gpudash-")["MetricAlarms"]}


def test_first_apply_creates_everything_and_the_second_writes_nothing(aws):
    client, apply = aws
    code, report, stderr = apply()
    assert code == 0, stderr
    assert len(report["written"]) == 12
    assert "reading CloudWatch: 12/12" in stderr and "writing to CloudWatch: 12/12" in stderr  # one line a phase
    assert sorted(d["DashboardName"] for d in client.list_dashboards()["DashboardEntries"]) == NAMES
    first = {name: a["AlarmConfigurationUpdatedTimestamp"] for name, a in _alarms(client).items()}
    assert len(first) == 9
    code, report, _ = apply()
    assert code == 0 and report["written"] == [] and report["summary"] == {"unchanged": 12}
    assert {name: a["AlarmConfigurationUpdatedTimestamp"] for name, a in _alarms(client).items()} == first


def test_a_threshold_change_updates_one_alarm_and_plan_says_how(aws, project_dir, cli):
    client, apply = aws
    apply()
    config = project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n")
    code, stdout, _ = cli("plan", "--no-grafana", "--config", str(config))
    assert code == 1
    assert "update    cloudwatch alarm gpudash-gpu-cluster-gpu-temp-critical-critical [us-east-1]" in stdout
    assert "Threshold 87 → 90" in stdout
    code, report, _ = apply("--config", str(config))
    assert code == 0
    assert sorted(report["written"]) == ["gpudash-gpu-cluster-gpu-temp-critical-critical",
                                         "gpudash-gpu-cluster-health", "gpudash-gpu-cluster-overview"]
    assert _alarms(client)["gpudash-gpu-cluster-gpu-temp-critical-critical"]["Threshold"] == 90.0


def test_tags_are_reconciled_with_tag_resource(aws):
    client, apply = aws
    apply()
    alarm = _alarms(client)["gpudash-gpu-cluster-gpu-idle-warning"]
    hashed = client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]
    # Without its rule tag and its edit evidence (an alarm written before gpudash kept it), but as generated:
    client.untag_resource(ResourceARN=alarm["AlarmArn"], TagKeys=["gpudash:rule", "gpudash:sha256"])
    code, report, _ = apply()
    assert code == 0 and report["written"] == ["gpudash-gpu-cluster-gpu-idle-warning"]
    tags = client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]
    assert {"Key": "gpudash:rule", "Value": "gpu-idle"} in tags and sorted(map(str, tags)) == sorted(map(str, hashed))


def test_alarms_and_dashboards_gpudash_does_not_own_are_not_touched(aws):
    client, apply = aws
    client.put_metric_alarm(AlarmName="gpudash-gpu-cluster-xid-error-critical", MetricName="CPUUtilization",
                            Namespace="AWS/EC2", Statistic="Average", Period=300, EvaluationPeriods=1, Threshold=1,
                            ComparisonOperator="GreaterThanThreshold")
    client.put_dashboard(DashboardName="gpudash-gpu-cluster-health", DashboardBody=json.dumps(
        {"widgets": [{"type": "text", "x": 0, "y": 0, "width": 6, "height": 2, "properties": {"markdown": "mine"}}]}))
    code, report, stderr = apply()
    assert code == 1 and "refused 2 object" in stderr
    assert sorted(report["refused"]) == ["gpudash-gpu-cluster-health", "gpudash-gpu-cluster-xid-error-critical"]
    assert _alarms(client)["gpudash-gpu-cluster-xid-error-critical"]["MetricName"] == "CPUUtilization"
    assert "mine" in client.get_dashboard(DashboardName="gpudash-gpu-cluster-health")["DashboardBody"]
    assert apply("--force")[0] == 0
    assert "Metrics" in _alarms(client)["gpudash-gpu-cluster-xid-error-critical"]


def test_a_dashboard_edited_in_the_console_is_drift(aws):
    client, apply = aws
    apply()
    live = json.loads(client.get_dashboard(DashboardName="gpudash-gpu-cluster-overview")["DashboardBody"])
    live["widgets"][2]["properties"]["title"] = "renamed by hand"
    client.put_dashboard(DashboardName="gpudash-gpu-cluster-overview", DashboardBody=json.dumps(live))
    code, report, _ = apply()
    assert code == 1 and report["refused"] == ["gpudash-gpu-cluster-overview"]
    change = next(c for c in report["changes"] if c["name"] == "gpudash-gpu-cluster-overview")
    assert change["action"] == "drift" and "edited in the CloudWatch console" in change["details"][0]
    assert apply("--force")[0] == 0
    assert "renamed by hand" not in client.get_dashboard(DashboardName="gpudash-gpu-cluster-overview")["DashboardBody"]


def test_prune_deletes_only_owned_alarms_no_longer_defined(aws):
    client, apply = aws
    apply()
    tags = [{"Key": "ManagedBy", "Value": "gpudash"}]
    for name, tagged in (("gpudash-gpu-cluster-retired-rule-warning", True), ("gpudash-handmade", False)):
        client.put_metric_alarm(AlarmName=name, MetricName="m", Namespace="n", Statistic="Average", Period=60,
                                EvaluationPeriods=1, Threshold=1, ComparisonOperator="GreaterThanThreshold",
                                **({"Tags": tags} if tagged else {}))
    code, report, _ = apply()
    assert code == 0 and "gpudash-gpu-cluster-retired-rule-warning" in _alarms(client)
    assert [c["name"] for c in report["changes"] if c["action"] == "delete"] == [
        "gpudash-gpu-cluster-retired-rule-warning"]
    assert apply("--prune")[0] == 0
    live = _alarms(client)
    assert "gpudash-gpu-cluster-retired-rule-warning" not in live and "gpudash-handmade" in live


def test_dry_run_writes_nothing(aws):
    client, apply = aws
    code, report, _ = apply("--dry-run")
    assert code == 0 and report["written"] == []
    assert client.list_dashboards()["DashboardEntries"] == [] and _alarms(client) == {}


def test_preflight_refuses_to_publish_when_no_metrics_arrive(aws, cli):
    client, _ = aws
    code, _, stderr = cli("apply")
    assert code == 3
    assert "preflight checks failed, nothing was published" in stderr
    assert "no DCGM metrics in ContainerInsights/Prometheus for gpu-cluster" in stderr
    assert client.list_dashboards()["DashboardEntries"] == []


def test_missing_credentials_are_a_clear_error(cli, monkeypatch, tmp_path):
    _no_aws_credentials(monkeypatch, tmp_path)
    code, _, stderr = cli("apply", "--skip-verify", "--endpoint-url", "http://127.0.0.1:9")
    assert code == 3 and "no AWS credentials found" in stderr and "Traceback" not in stderr


def test_dashboard_validation_messages_are_reported_as_errors(proxied):
    proxy, client, apply = proxied
    proxy.inject(fault("PutDashboard", "body", times=ALWAYS, body={
        "DashboardValidationMessages": [{"DataPath": "/widgets/0", "Message": "Should be an object"}]}))
    code, report, _ = apply()
    assert code == 3 and len(report["failed"]) == 3
    assert all("/widgets/0: Should be an object" in failure["error"] for failure in report["failed"])


def test_pacing_keeps_put_metric_alarm_within_three_a_second():
    clock = FakeClock()
    pacer = Pacer(clock=clock)
    starts = []
    for _ in range(7):
        pacer.wait("us-east-1", "PutMetricAlarm")
        starts.append(clock.now())
    assert starts == pytest.approx([0, 0, 0, 1, 1, 1, 2])
    pacer.wait("eu-west-1", "PutMetricAlarm")  # another Region has its own budget
    assert clock.now() == pytest.approx(2)


def test_real_pacing_waits_in_real_time():
    """The one test that waits: on the real clock the pacer holds a fourth call to the next second."""
    import time

    pacer = Pacer(rates={"PutMetricAlarm": 3}, clock=deadline.Clock())
    start = time.monotonic()
    for _ in range(4):
        pacer.wait("us-east-1", "PutMetricAlarm")
    assert time.monotonic() - start >= 1.0


# --- answers that are not API answers, foreign and edited alarms --------------------------------

FOREIGN = "gpudash-gpu-cluster-xid-error-critical"
EDITED = "gpudash-gpu-cluster-gpu-temp-critical-critical"


def _foreign_alarm(client, name=FOREIGN, threshold=1.0):
    client.put_metric_alarm(AlarmName=name, MetricName="CPUUtilization", Namespace="AWS/EC2", Statistic="Average",
                            Period=300, EvaluationPeriods=1, Threshold=threshold,
                            ComparisonOperator="GreaterThanThreshold")


def _edit_in_console(client, name=EDITED, threshold=95.0):
    """What the console does: PutMetricAlarm with the alarm's own fields and a new threshold; tags stay."""
    alarm = dict(_alarms(client)[name])
    keys = ("AlarmName", "AlarmDescription", "ActionsEnabled", "AlarmActions", "OKActions", "ComparisonOperator",
            "EvaluationPeriods", "DatapointsToAlarm", "TreatMissingData", "Metrics")
    request = {k: alarm[k] for k in keys if k in alarm}
    request["Metrics"] = [{k: m[k] for k in ("Id", "Expression", "Period", "ReturnData", "Label") if k in m}
                          for m in request["Metrics"]]
    client.put_metric_alarm(**request, Threshold=threshold)


def _snapshot(client):
    """Every alarm's fields and tags, and every dashboard body: what a test compares before and after."""
    alarms = {name: ({k: v for k, v in a.items() if not k.startswith(("StateUpdated", "StateTransitioned"))},
                     client.list_tags_for_resource(ResourceARN=a["AlarmArn"])["Tags"])
              for name, a in _alarms(client).items()}
    dashboards = {d["DashboardName"]: client.get_dashboard(DashboardName=d["DashboardName"])["DashboardBody"]
                  for d in client.list_dashboards()["DashboardEntries"]}
    return alarms, dashboards


@pytest.mark.parametrize("answer", [b"{}", b"<html><body>502 Bad Gateway</body></html>", b'{"MetricAlarms": {}}',
                                    b'{"MetricAlarms": [{"AlarmName": "gpudash-gpu-cluster-xid-error-critical"}]}',
                                    b'{"MetricAlarms": [', b"[]"],
                         ids=["empty-object", "html", "not-a-list", "item-without-arn", "truncated-json", "array"])
def test_an_alarm_listing_that_is_not_an_api_answer_is_a_remote_failure(proxied, answer):
    proxy, client, apply = proxied
    _foreign_alarm(client)
    before = _snapshot(client)
    proxy.inject(fault("DescribeAlarms", "body", times=ALWAYS, body=answer))
    code, stdout, stderr = apply()
    assert code == 3, stdout
    assert "not an API answer" in stderr and "Traceback" not in stderr
    assert _writes(proxy) == [] and _snapshot(client) == before  # nothing planned as a create over the alarm


@pytest.mark.parametrize("operation, answer", [("GetResources", b"<html/>"),
                                               ("GetDashboard", b'{"DashboardBody": "<x>"}')])
def test_tag_and_dashboard_reads_that_are_not_api_answers_are_remote_failures(proxied, operation, answer):
    proxy, client, apply = proxied
    apply()
    _foreign_alarm(client)
    before = _snapshot(client)
    _fresh(proxy)
    proxy.inject(fault(operation, "body", times=ALWAYS, body=answer))
    code, _, stderr = apply("--force")
    assert code == 3 and "not" in stderr and "Traceback" not in stderr
    assert _writes(proxy) == [] and _snapshot(client) == before


def _default_desired():
    from generator.artifacts import build
    from generator.project import load_project
    from generator.publish import desired_from

    project = load_project(None)
    return desired_from(build(project), project.settings)


def test_an_alarm_created_between_plan_and_apply_is_not_overwritten(proxied):
    from generator.targets import cloudwatch_sync

    proxy, client, apply = proxied
    desired = _default_desired()
    cloudwatch = cloudwatch_sync.CloudWatch(endpoint_url=proxy.url)
    changes = cloudwatch_sync.plan(cloudwatch, desired)
    _foreign_alarm(client)  # someone creates an untagged alarm with a gpudash name meanwhile
    outcomes = cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                     force=False, prune=False, dry_run=False)
    failed = [o for o in outcomes if o.error]
    assert [o.change.name for o in failed] == [FOREIGN]
    assert "created by someone else since the plan" in failed[0].error
    assert _alarms(client)[FOREIGN]["MetricName"] == "CPUUtilization"
    code, report, _ = apply()
    assert code == 1 and report["refused"] == [FOREIGN] and report["written"] == []


def test_an_alarm_edited_in_the_console_is_drift_and_needs_force(aws, cli):
    client, apply = aws
    apply()
    _edit_in_console(client)
    code, stdout, _ = cli("plan", "--no-grafana")
    assert code == 1
    assert f"drift     cloudwatch alarm {EDITED} [us-east-1]" in stdout
    assert "edited in the CloudWatch console since gpudash wrote it" in stdout and "Threshold 95 → 87" in stdout
    code, report, stderr = apply()
    assert code == 1 and report["refused"] == [EDITED] and "refused 1 object" in stderr
    assert _alarms(client)[EDITED]["Threshold"] == 95.0  # the edit survives
    code, report, _ = apply("--force", "--dry-run")
    assert code == 0 and report["would_write"] == [EDITED] and report["refused"] == []
    assert _alarms(client)[EDITED]["Threshold"] == 95.0
    code, report, _ = apply("--force")
    assert code == 0 and report["written"] == [EDITED]
    assert _alarms(client)[EDITED]["Threshold"] == 87.0
    assert apply()[1]["written"] == []


def test_a_stripped_ownership_tag_makes_the_alarm_foreign(proxied):
    proxy, client, apply = proxied
    apply()
    arn = _alarms(client)[EDITED]["AlarmArn"]
    client.untag_resource(ResourceARN=arn, TagKeys=["ManagedBy"])
    _fresh(proxy)
    code, report, _ = apply()
    assert code == 1 and report["refused"] == [EDITED] and _writes(proxy) == []
    change = next(c for c in report["changes"] if c["name"] == EDITED)
    assert change["action"] == "foreign"
    # Tags are read in bulk: one GetResources page; only the alarm it does not vouch for is asked alone.
    assert proxy.operations.count("GetResources") == 1 and proxy.operations.count("ListTagsForResource") == 1


TWO_CLUSTERS = "clusters:\n  - {name: gpu-cluster, region: us-east-1}\n  - {name: other, region: us-east-1}\n"
RETIRED_EDITED = "gpudash-other-gpu-temp-critical-critical"


def _other_cluster(name):
    return name.startswith("gpudash-other-")


def test_a_retired_alarm_edited_in_the_console_is_pruned_only_with_force(aws, project_dir):
    client, apply = aws
    apply("--config", str(project_dir(TWO_CLUSTERS)))
    _edit_in_console(client, RETIRED_EDITED)
    code, report, _ = apply("--prune")  # back to one cluster: the other cluster's alarms are retired
    assert code == 1 and report["refused"] == [RETIRED_EDITED]
    assert [n for n in _alarms(client) if _other_cluster(n)] == [RETIRED_EDITED]
    assert apply("--prune", "--force")[0] == 0
    assert [n for n in _alarms(client) if _other_cluster(n)] == []


def test_deletes_are_batched(proxied, project_dir):
    proxy, client, apply = proxied
    apply("--config", str(project_dir(TWO_CLUSTERS)))
    _fresh(proxy)
    code, report, _ = apply("--prune")
    assert code == 0 and len([c for c in report["changes"] if c["action"] == "delete"]) == 9
    assert proxy.operations.count("DeleteAlarms") == 1
    assert [n for n in _alarms(client) if _other_cluster(n)] == []


def test_a_lost_tag_write_converges_without_false_drift(proxied, project_dir):
    proxy, client, apply = proxied
    apply()
    config = project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n")
    proxy.inject(fault("TagResource", "status", times=ALWAYS, status=500, body={"__type": "InternalFailure"}))
    code, report, _ = apply("--config", str(config))
    assert code == 3 and [f["name"] for f in report["failed"]] == [EDITED]
    assert _alarms(client)[EDITED]["Threshold"] == 90.0  # written, but its new hash was not
    _fresh(proxy)
    code, report, _ = apply("--config", str(config))
    assert code == 0 and report["written"] == [EDITED] and _writes(proxy) == ["TagResource"]
    _fresh(proxy)
    assert apply("--config", str(config))[1]["written"] == [] and _writes(proxy) == []


def test_regions_are_published_each_on_its_own(aws, moto, project_dir):
    client, apply = aws
    config = project_dir("clusters:\n  - {name: east, region: us-east-1}\n  - {name: west, region: us-west-2}\n")
    code, report, stderr = apply("--config", str(config))
    assert code == 0, stderr
    west = moto.client("cloudwatch", "us-west-2")
    assert sorted(_alarms(west)) == sorted(n for n in report["written"] if n.startswith("gpudash-west-")
                                           and "-dash" not in n and n in _alarms(west))
    assert len(_alarms(west)) == 9 and len(_alarms(client)) == 9
    assert all(name.startswith("gpudash-west-") for name in _alarms(west))
    assert [d["DashboardName"] for d in west.list_dashboards()["DashboardEntries"]] == [
        "gpudash-west-by-pod", "gpudash-west-health", "gpudash-west-overview"]
    assert apply("--config", str(config))[1]["written"] == []


def test_two_publishers_at_once_converge(proxied):
    """Both plan before either writes; the second finds everything already as generated."""
    from generator.targets import cloudwatch_sync

    proxy, client, _ = proxied
    desired = _default_desired()
    first, second = (cloudwatch_sync.CloudWatch(endpoint_url=proxy.url) for _ in range(2))
    plans = [cloudwatch_sync.plan(cw, desired) for cw in (first, second)]
    outcomes = [cloudwatch_sync.apply(cw, plan, desired.cloudwatch_dashboards, desired.alarms, force=False,
                                      prune=False, dry_run=False) for cw, plan in zip((first, second), plans)]
    assert all(o.done for o in outcomes[0]) and len(outcomes[0]) == 12
    assert not any(o.error or o.done for o in outcomes[1])
    _fresh(proxy)
    again = cloudwatch_sync.plan(first, desired)
    assert {c.action for c in again} == {"unchanged"} and _writes(proxy) == []


FAULTS = {  # name: (operation, action, times, status, body)
    "5xx once": ("PutMetricAlarm", "status", 1, 503, {"__type": "ServiceUnavailable"}),
    "throttled": ("PutMetricAlarm", "status", 3, 400, {"__type": "Throttling", "message": "Rate exceeded"}),
    "reset before a write": ("PutMetricAlarm", "reset-before", 1, 200, None),
    "reset after a processed write": ("PutMetricAlarm", "reset-after", 1, 200, None),
    "reset after a processed tag write": ("TagResource", "reset-after", 1, 200, None),
    "truncated listing": ("DescribeAlarms", "truncate", 1, 200, None),
    "non-JSON listing once": ("DescribeAlarms", "body", 1, 200, b"<html>busy</html>"),
    "throttled tag read": ("GetResources", "status", 1, 400,
                           {"__type": "ThrottlingException", "message": "Rate exceeded"}),
    "reset after every write": ("PutMetricAlarm", "reset-after", ALWAYS, 200, None),
}


@pytest.mark.parametrize("name", list(FAULTS))
def test_faults_never_touch_foreign_or_edited_alarms_and_a_rerun_converges(proxied, project_dir, name):
    proxy, client, apply = proxied
    apply()
    _edit_in_console(client)
    _foreign_alarm(client, FOREIGN.replace("xid-error", "row-remap-failure"))
    client.delete_alarms(AlarmNames=[FOREIGN])
    _foreign_alarm(client)
    health, overview = "gpudash-gpu-cluster-health", "gpudash-gpu-cluster-overview"
    edited = json.loads(client.get_dashboard(DashboardName=health)["DashboardBody"])
    edited["widgets"][2]["properties"]["title"] = "renamed by hand"
    client.put_dashboard(DashboardName=health, DashboardBody=json.dumps(edited))
    client.put_dashboard(DashboardName=overview, DashboardBody=json.dumps({"widgets": [
        {"type": "text", "x": 0, "y": 0, "width": 6, "height": 2, "properties": {"markdown": "mine"}}]}))
    bodies = {n: client.get_dashboard(DashboardName=n)["DashboardBody"] for n in (health, overview)}
    # The new thresholds would change both dashboards and two alarms, one of them edited by hand.
    config = project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n"
                         "  pcie_replays_per_minute: 7\n")
    foreign_before = {n: a["MetricName"] for n, a in _alarms(client).items() if a.get("MetricName") == "CPUUtilization"}
    _fresh(proxy)
    operation, action, times, status, body = FAULTS[name]
    proxy.inject(fault(operation, action, times=times, status=status, body=body))
    code, report, stderr = apply("--config", str(config))
    persistent = times == ALWAYS
    assert code == (3 if persistent else 1), stderr
    assert "Traceback" not in stderr

    def untouched():
        live = _alarms(client)
        assert {n: live[n].get("MetricName") for n in foreign_before} == foreign_before
        assert live[EDITED]["Threshold"] == 95.0  # the console edit is not lost
        assert {n: client.get_dashboard(DashboardName=n)["DashboardBody"] for n in bodies} == bodies

    untouched()
    _fresh(proxy)
    code, report, _ = apply("--config", str(config))
    assert code == 1 and sorted(report["refused"]) == sorted([*foreign_before, EDITED, *bodies])
    untouched()
    _fresh(proxy)
    code, report, _ = apply("--config", str(config))
    assert code == 1 and report["written"] == [] and _writes(proxy) == []


def _no_aws_credentials(monkeypatch, tmp_path):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("GRAFANA_URL", raising=False)


def test_plan_without_aws_credentials_still_shows_the_grafana_plan(cli, reference, monkeypatch, tmp_path):
    from tests.support.grafana_server import ADMIN, GrafanaTestServer

    _no_aws_credentials(monkeypatch, tmp_path)
    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana:
        code, stdout, stderr = cli("plan", env={"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN})
    assert code == 1 and "create    grafana dashboard gpudash-overview" in stdout
    assert "CloudWatch skipped: no AWS credentials found" in stderr and "--no-cloudwatch" in stderr
    code, _, stderr = cli("plan", "--cloudwatch", env={"GRAFANA_URL": "", "GRAFANA_TOKEN": ""})
    assert code == 3 and "no AWS credentials found" in stderr  # asked for by name: a failure
    code, _, stderr = cli("plan")
    assert code == 2 and "Grafana skipped: GRAFANA_URL is not set" in stderr
    assert "nothing to compare" in stderr and "Traceback" not in stderr


def test_apply_stops_at_its_deadline_and_lists_what_was_and_was_not_written(proxied, deadline_clock):
    proxy, client, apply = proxied
    # The first alarm write takes (on the test's clock) far longer than the whole command may.
    proxy.inject(fault("PutMetricAlarm", "before", callback=lambda: deadline_clock.sleep(1000)))
    code, report, stderr = apply("--deadline", "60")
    assert code == 3 and "Traceback" not in stderr
    stopped = [f for f in report["failed"] if "did not finish within its deadline of 60 s" in f["error"]]
    assert stopped and len(report["written"]) + len(report["failed"]) == 12
    assert sorted(n for n in report["written"] if "-cluster-" in n and n in _alarms(client)) == sorted(_alarms(client))
    _fresh(proxy)
    code, report, _ = apply()
    assert code == 0 and sorted(report["written"]) == sorted(f["name"] for f in stopped)

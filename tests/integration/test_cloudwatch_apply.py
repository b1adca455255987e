"""gpudash plan/apply against moto's CloudWatch server over real HTTP (AWS_ENDPOINT_URL)."""

from __future__ import annotations

import json

import pytest

from generator.changes import CREATE, Change
from generator.targets import cloudwatch_sync
from generator.targets.pacing import Pacer
from tests.support.moto_server import MotoServer

NAMES = ["gpudash-gpu-cluster-by-pod", "gpudash-gpu-cluster-health", "gpudash-gpu-cluster-overview"]


@pytest.fixture(scope="module")
def moto():
    with MotoServer() as server:
        yield server


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


def _alarms(client):
    return {a["AlarmName"]: a for a in client.describe_alarms(AlarmNamePrefix="gpudash-")["MetricAlarms"]}


def test_first_apply_creates_everything_and_the_second_writes_nothing(aws):
    client, apply = aws
    code, report, stderr = apply()
    assert code == 0, stderr
    assert len(report["written"]) == 12
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
    client.untag_resource(ResourceARN=alarm["AlarmArn"], TagKeys=["gpudash:rule"])
    code, report, _ = apply()
    assert code == 0 and report["written"] == ["gpudash-gpu-cluster-gpu-idle-warning"]
    tags = client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]
    assert {"Key": "gpudash:rule", "Value": "gpu-idle"} in tags


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
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    code, _, stderr = cli("apply", "--skip-verify", "--endpoint-url", "http://127.0.0.1:9")
    assert code == 3 and "no AWS credentials found" in stderr and "Traceback" not in stderr


class _RejectingCloudWatch:
    """Stands in for a CloudWatch that answers PutDashboard with validation messages (moto never does)."""

    def call(self, region, api, what, **kwargs):
        return {"DashboardValidationMessages": [{"DataPath": "/widgets/0", "Message": "Should be an object"}]}


def test_dashboard_validation_messages_are_reported_as_errors():
    change = Change("cloudwatch", "dashboard", "d", CREATE, region="us-east-1")
    (outcome,) = cloudwatch_sync.apply(_RejectingCloudWatch(), [change], {"d": {"DashboardName": "d",
                                       "DashboardBody": "{}"}}, [], force=False, prune=False, dry_run=False)
    assert not outcome.done and "/widgets/0: Should be an object" in outcome.error


def test_pacing_keeps_put_metric_alarm_within_three_a_second():
    now = [0.0]
    slept = []
    pacer = Pacer(clock=lambda: now[0], sleep=lambda s: (slept.append(s), now.__setitem__(0, now[0] + s)))
    starts = []
    for _ in range(7):
        pacer.wait("us-east-1", "PutMetricAlarm")
        starts.append(now[0])
    assert starts == pytest.approx([0, 1 / 3, 2 / 3, 1, 4 / 3, 5 / 3, 2])
    pacer.wait("eu-west-1", "PutMetricAlarm")  # another Region has its own budget
    assert now[0] == pytest.approx(2)

"""gpudash plan/apply against moto's CloudWatch server over real HTTP: what gets written, and when."""

from __future__ import annotations

import json
import os

import pytest

from generator.clients import deadline
from generator.clients.pacing import Pacer
from tests.support.clock import FakeClock
from tests.support.cloudwatch_world import ALWAYS, NAMES, alarms, fault, no_aws_credentials


def test_first_apply_creates_everything_and_the_second_writes_nothing(aws):
    client, apply = aws
    code, report, stderr = apply()
    assert code == 0, stderr
    assert len(report["written"]) == 16
    assert "reading CloudWatch: 16/16" in stderr and "writing to CloudWatch: 16/16" in stderr  # one line a phase
    assert sorted(d["DashboardName"] for d in client.list_dashboards()["DashboardEntries"]) == NAMES
    first = {name: a["AlarmConfigurationUpdatedTimestamp"] for name, a in alarms(client).items()}
    assert len(first) == 13
    code, report, _ = apply()
    assert code == 0 and report["written"] == [] and report["summary"] == {"unchanged": 16}
    assert {name: a["AlarmConfigurationUpdatedTimestamp"] for name, a in alarms(client).items()} == first


def test_a_threshold_change_updates_one_alarm_and_plan_says_how(aws, published, project_dir, cli):
    client, apply = aws
    published()
    config = project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n")
    code, stdout, _ = cli("plan", "--no-grafana", "--config", str(config))
    assert code == 1
    assert "update    cloudwatch alarm gpudash-gpu-cluster-gpu-temp-critical-critical [us-east-1]" in stdout
    assert "Threshold 87 → 90" in stdout
    # the description (~500 characters) differs by one word: that word, in a few words of context, once
    (described,) = [line.strip() for line in stdout.splitlines() if "AlarmDescription" in line]
    assert described == 'AlarmDescription: "87" → "90" in "… A GPU is above 87 °C. Runbook: Move work …"'
    code, report, _ = apply("--config", str(config))
    assert code == 0
    assert sorted(report["written"]) == ["gpudash-gpu-cluster-gpu-temp-critical-critical",
                                         "gpudash-gpu-cluster-health", "gpudash-gpu-cluster-overview"]
    assert alarms(client)["gpudash-gpu-cluster-gpu-temp-critical-critical"]["Threshold"] == 90.0


def test_tags_are_reconciled_with_tag_resource(aws, published):
    client, apply = aws
    published()
    alarm = alarms(client)["gpudash-gpu-cluster-gpu-idle-warning"]
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
    assert alarms(client)["gpudash-gpu-cluster-xid-error-critical"]["MetricName"] == "CPUUtilization"
    assert "mine" in client.get_dashboard(DashboardName="gpudash-gpu-cluster-health")["DashboardBody"]
    assert apply("--force")[0] == 0
    assert "Metrics" in alarms(client)["gpudash-gpu-cluster-xid-error-critical"]


def test_a_dashboard_edited_in_the_console_is_drift(aws, published):
    client, apply = aws
    published()
    live = json.loads(client.get_dashboard(DashboardName="gpudash-gpu-cluster-overview")["DashboardBody"])
    live["widgets"][2]["properties"]["title"] = "renamed by hand"
    client.put_dashboard(DashboardName="gpudash-gpu-cluster-overview", DashboardBody=json.dumps(live))
    code, report, _ = apply()
    assert code == 1 and report["refused"] == ["gpudash-gpu-cluster-overview"]
    change = next(c for c in report["changes"] if c["name"] == "gpudash-gpu-cluster-overview")
    assert change["action"] == "drift" and "edited in the CloudWatch console" in change["details"][0]
    assert apply("--force")[0] == 0
    assert "renamed by hand" not in client.get_dashboard(DashboardName="gpudash-gpu-cluster-overview")["DashboardBody"]


def test_prune_deletes_only_owned_alarms_no_longer_defined(aws, published):
    client, apply = aws
    published()
    from generator.markers import ALARM_HASH_TAG
    from generator.ownership import alarm_hash

    for name, tagged in (("gpudash-gpu-cluster-retired-rule-warning", True), ("gpudash-handmade", False)):
        client.put_metric_alarm(AlarmName=name, MetricName="m", Namespace="n", Statistic="Average", Period=60,
                                EvaluationPeriods=1, Threshold=1, ComparisonOperator="GreaterThanThreshold")
        if tagged:  # what gpudash leaves: the ownership and rule tags and the hash of the alarm as it wrote it
            alarm = alarms(client)[name]
            client.tag_resource(ResourceARN=alarm["AlarmArn"], Tags=[
                {"Key": "ManagedBy", "Value": "gpudash"}, {"Key": ALARM_HASH_TAG, "Value": alarm_hash(alarm)},
                {"Key": "gpudash:rule", "Value": "retired-rule"}, {"Key": "gpudash:project", "Value": "test"}])
    code, report, _ = apply()
    assert code == 0 and "gpudash-gpu-cluster-retired-rule-warning" in alarms(client)
    assert [c["name"] for c in report["changes"] if c["action"] == "delete"] == [
        "gpudash-gpu-cluster-retired-rule-warning"]
    assert apply("--prune")[0] == 0
    live = alarms(client)
    assert "gpudash-gpu-cluster-retired-rule-warning" not in live and "gpudash-handmade" in live


def test_dry_run_writes_nothing(aws):
    client, apply = aws
    code, report, _ = apply("--dry-run")
    assert code == 0 and report["written"] == []
    assert client.list_dashboards()["DashboardEntries"] == [] and alarms(client) == {}


def test_apply_renders_no_grafana_dashboard_it_does_not_publish(moto, tmp_path):
    """apply publishes CloudWatch's dashboards and alarms alone: it renders no Grafana dashboard (their models
    were half of a first build's CPU, with the Grafana SDK's import), and it still plans every CloudWatch object."""
    import subprocess
    import sys

    from tests.conftest import REPO
    from tests.support.moto_server import FAKE_CREDENTIALS

    moto.reset()
    code = ("import sys\nfrom generator.cli import main\n"
            "try:\n    main(['apply', '--skip-verify', '--dry-run', '--output', 'json'])\nexcept SystemExit as exit:\n"
            "    assert not exit.code, exit.code\n"
            "print(sorted(name for name in sys.modules if name.startswith('grafana_foundation_sdk')))\n")
    env = {**os.environ, **FAKE_CREDENTIALS, "AWS_ENDPOINT_URL": moto.url, "AWS_DEFAULT_REGION": "us-east-1",
           "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    *report, modules = result.stdout.splitlines()
    assert json.loads("\n".join(report))["summary"] == {"create": 16}
    assert modules == "[]"


def test_preflight_refuses_to_publish_when_no_metrics_arrive(aws, cli):
    client, _ = aws
    code, _, stderr = cli("apply")
    assert code == 3
    assert "preflight checks failed, nothing was published" in stderr
    assert "no DCGM metrics in ContainerInsights/Prometheus for gpu-cluster" in stderr
    assert client.list_dashboards()["DashboardEntries"] == []


def test_missing_credentials_are_a_clear_error(cli, monkeypatch, tmp_path):
    no_aws_credentials(monkeypatch, tmp_path)
    code, _, stderr = cli("apply", "--skip-verify", "--endpoint-url", "http://127.0.0.1:9")
    assert code == 2 and "no AWS credentials found" in stderr and "Traceback" not in stderr  # a setting, not a remote


def test_missing_credentials_before_publishing_are_a_setting_not_a_remote_failure(cli, monkeypatch, tmp_path):
    """apply's preflight without AWS credentials said "preflight checks failed" with exit 3 (a remote failure) and the
    fix "run gpudash verify, or --skip-verify to publish anyway", which fails the same way: nothing remote was asked.
    It is exit 2 with the credentials' own fix, as with --skip-verify; verify's JSON gives the check cause `setting`."""
    no_aws_credentials(monkeypatch, tmp_path)
    code, _, stderr = cli("apply", "--endpoint-url", "http://127.0.0.1:9")
    assert code == 2 and "Traceback" not in stderr, stderr
    assert "error: cannot check before publishing, nothing was published: cloudwatch/reachable: no AWS credentials " \
           "found\n  fix: set AWS_PROFILE" in stderr, stderr
    code, stdout, _ = cli("verify", "--skip", "kube", "--skip", "exporter", "--skip", "prometheus", "--output", "json",
                          "--endpoint-url", "http://127.0.0.1:9")
    assert code == 1 and [c["cause"] for c in json.loads(stdout)["checks"]] == ["setting"]


CHAIN_COMMANDS = [("plan",), ("plan", "--no-grafana"), ("apply", "--skip-verify"),
                  ("verify", "--skip", "kube", "--skip", "exporter", "--skip", "prometheus")]


@pytest.mark.parametrize("args", CHAIN_COMMANDS, ids=["plan", "plan-cloudwatch", "apply", "verify"])
def test_a_credential_chain_that_cannot_reach_its_proxy_is_a_remote_failure(cli, monkeypatch, tmp_path, args):
    """With no credentials in the environment or the files, botocore's chain asks the instance metadata service (an
    instance role), through the proxy HTTP_PROXY names; a proxy that cannot be reached made that read raise outside
    any call, and plan, apply and verify ended in "internal error: ProxyConnectionError" (exit 4, "report it"). It is
    a remote failure: one message naming the credential chain, the proxy and the fix, exit 3 (verify: its check fails,
    exit 1), nothing published."""
    no_aws_credentials(monkeypatch, tmp_path)
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
    for name in ("http_proxy", "no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    code, stdout, stderr = cli(*args, env={"HTTP_PROXY": "http://127.0.0.1:9"})
    said = stdout + stderr
    assert "internal error" not in said and "Traceback" not in said, said
    assert code == (1 if args[0] == "verify" else 3), said
    assert "the AWS credential chain could not be read" in said and "http://127.0.0.1:9" in said, said
    assert "NO_PROXY" in said, said


@pytest.mark.parametrize("args", CHAIN_COMMANDS, ids=["plan", "plan-cloudwatch", "apply", "verify"])
@pytest.mark.parametrize("profile", ["[profile p]\nsso_session = s\nsso_account_id = 123456789012\n"
                                     "sso_role_name = r\n[sso-session s]\nsso_region = us-east-1\n"
                                     "sso_start_url = https://example.awsapps.com/start\n",
                                     "[profile p]\ncredential_process = false\n"], ids=["sso-not-logged-in",
                                                                                        "credential-process-fails"])
def test_a_profile_whose_credentials_cannot_be_read_is_one_message(cli, monkeypatch, tmp_path, args, profile):
    """A profile whose SSO login expired (or was never made) or whose credential_process fails made botocore's chain
    raise while gpudash made its first client: "internal error: SSOTokenLoadError" / "CredentialRetrievalError", exit
    4 ("report it"). Now one message saying the credentials cannot be read and how to renew them, exit 2 (verify: its
    check fails, exit 1)."""
    no_aws_credentials(monkeypatch, tmp_path)
    (tmp_path / "config").write_text(profile)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_PROFILE", "p")
    monkeypatch.setenv("HOME", str(tmp_path))  # (no SSO token cached there)
    code, stdout, stderr = cli(*args)
    said = stdout + stderr
    assert "internal error" not in said and "Traceback" not in said, said
    assert code == (1 if args[0] == "verify" else 2), said
    assert "the AWS credentials cannot be read" in said and "aws sso login" in said, said


@pytest.mark.parametrize("args", CHAIN_COMMANDS, ids=["plan", "plan-cloudwatch", "apply", "verify"])
@pytest.mark.parametrize("named", ["option", "variable"])
def test_a_profile_no_aws_file_holds_is_a_usage_error_for_every_command(cli, monkeypatch, tmp_path, args, named):
    """--profile (or AWS_PROFILE) naming a profile the AWS files do not hold is the command's input: exit 2 with one
    message naming it, as apply and plan said; verify reported it as its cloudwatch check failed, exit 1 (where its
    --cluster and --context naming nothing were exit 2)."""
    no_aws_credentials(monkeypatch, tmp_path)
    (tmp_path / "config").write_text("[profile monitoring]\nregion = us-east-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    given = ("--profile", "monitorng") if named == "option" else ()
    code, stdout, stderr = cli(*args, *given, env={"AWS_PROFILE": "monitorng"} if named == "variable" else None)
    assert code == 2, stdout + stderr
    assert "error: --profile (AWS_PROFILE): AWS profile 'monitorng' not found in the AWS config and credentials " \
           "files" in stderr and "Traceback" not in stderr
    assert "GROUP" not in stdout  # no table: nothing was verified


@pytest.mark.parametrize("args", CHAIN_COMMANDS, ids=["plan", "plan-cloudwatch", "apply", "verify"])
@pytest.mark.parametrize("variable, value, says", [
    ("AWS_DEFAULTS_MODE", "fastest", "invalid defaults mode: fastest"),
    ("AWS_STS_REGIONAL_ENDPOINTS", "global", "STS regional endpoints option global is invalid"),
    ("AWS_ENDPOINT_URL_CLOUDWATCH", "monitoring.internal", "Invalid endpoint: monitoring.internal")])
def test_an_aws_setting_botocore_refuses_is_a_usage_error(cli, monkeypatch, args, variable, value, says):
    """A setting of the AWS configuration that botocore refuses when it makes a client (a misspelt value, an endpoint
    without its scheme) ended plan, apply and verify in "internal error: InvalidDefaultsMode / ValueError" (exit 4,
    "report it"). Now one message quoting botocore's words, exit 2 (verify: its check fails, exit 1)."""
    for key, secret in (("AWS_ACCESS_KEY_ID", "AKIATESTING"), ("AWS_SECRET_ACCESS_KEY", "testing-secret")):
        monkeypatch.setenv(key, secret)
    code, stdout, stderr = cli(*args, env={variable: value, "AWS_ENDPOINT_URL": ""})
    said = stdout + stderr
    assert "internal error" not in said and "Traceback" not in said, said
    assert code == (1 if args[0] == "verify" else 2), said
    assert "the AWS configuration cannot be used" in said and says in said, said


ODD_SOURCES = {
    # a credential_process whose output is not the JSON botocore reads: JSONDecodeError
    "credential-process-not-json": ({}, "[profile p]\ncredential_process = /bin/echo notjson\n"),
    # a web identity token file (EKS IRSA's) that is not there: FileNotFoundError
    "web-identity-token-missing": ({"AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/gpu",
                                    "AWS_WEB_IDENTITY_TOKEN_FILE": "/nonexistent/token"}, None),
    # a container credentials address botocore will not read: ValueError 'Unsupported host'
    "container-uri-not-allowed": ({"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://creds.example.com/v1"}, None),
}


@pytest.mark.parametrize("args", CHAIN_COMMANDS, ids=["plan", "plan-cloudwatch", "apply", "verify"])
@pytest.mark.parametrize("source", sorted(ODD_SOURCES))
def test_a_credential_source_botocore_fails_in_python_s_words_is_one_message(cli, monkeypatch, tmp_path, args, source):
    """Sources of the chain that fail with a Python error, not botocore's own: 'internal error: JSONDecodeError' /
    'FileNotFoundError' / 'ValueError: Unsupported host' (exit 4, 'report it'). Each is the credentials that cannot be
    read, exit 2 (verify: its check fails, exit 1)."""
    no_aws_credentials(monkeypatch, tmp_path)
    env, profile = ODD_SOURCES[source]
    if profile:
        (tmp_path / "config").write_text(profile)
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
        monkeypatch.setenv("AWS_PROFILE", "p")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, stdout, stderr = cli(*args)
    said = stdout + stderr
    assert "internal error" not in said and "Traceback" not in said, said
    assert code == (1 if args[0] == "verify" else 2), said
    assert "the AWS credentials cannot be read" in said, said


def test_an_aws_config_file_that_cannot_be_read_is_a_usage_error(cli, tmp_path):
    garbled = tmp_path / "config"
    garbled.write_text("this is not an ini file\n[unclosed\n")
    code, _, stderr = cli("apply", "--skip-verify", "--endpoint-url", "http://127.0.0.1:9",
                          env={"AWS_CONFIG_FILE": str(garbled), "AWS_PROFILE": None})
    assert code == 2 and "cannot be read" in stderr and str(garbled) in stderr and "Traceback" not in stderr


MESSAGES = {"DashboardValidationMessages": [{"DataPath": "/widgets/0", "Message": "Should be an object"}]}


def test_dashboards_saved_with_validation_messages_are_written_and_their_messages_failed(proxied, cli):
    """PutDashboard answered with DashboardValidationMessages: AWS documents that warnings alone mean the dashboard
    was created or modified (some elements may not render), an error that it was not, and a message does not say
    which it is. They were reported failed with "written": false, unread, while the three dashboards were saved (the
    next plan: unchanged). Read back as sent now: each is written, and its messages are a failure after the write
    ("written": true, exit 3)."""
    proxy, client, apply = proxied
    proxy.inject(fault("PutDashboard", "body", times=ALWAYS, body=MESSAGES))
    code, report, _ = apply()
    failed = {item["name"]: item for item in report["failed"]}
    assert code == 3 and sorted(failed) == NAMES and all(name in report["written"] for name in NAMES), failed
    assert all(item["written"] is True and "/widgets/0: Should be an object" in item["error"]
               and "saved as sent: they were warnings" in item["error"] for item in failed.values()), failed
    proxy.clear()
    _, stdout, _ = cli("plan", "--no-grafana")
    assert all(f"unchanged cloudwatch dashboard {name}" in stdout for name in NAMES), stdout


def test_dashboards_refused_with_validation_messages_are_not_written(proxied):
    """PutDashboard answered with DashboardValidationMessages and not made (the answer comes back without the request
    reaching CloudWatch: the messages were errors). Read back, no dashboard is there: failed, "written": false."""
    proxy, client, apply = proxied
    proxy.inject(fault("PutDashboard", "status", times=ALWAYS, status=200, body=MESSAGES))
    code, report, _ = apply()
    failed = {item["name"]: item for item in report["failed"]}
    assert code == 3 and sorted(failed) == NAMES and not set(NAMES) & set(report["written"]), failed
    assert all(item["written"] is False and "is as before: not written (the messages were errors)" in item["error"]
               for item in failed.values()), failed
    assert client.list_dashboards()["DashboardEntries"] == []


def test_a_body_rule_forwards_the_request_then_replaces_the_answer(proxied):
    """The test proxy's `body` rule (tests/support/fault_proxy.py): the request reaches the server, and the client
    gets the rule's answer instead of the server's. Over HTTP it was so; with moto in this process the rule answered
    without forwarding (0 dashboards written where HTTP wrote 3), so a test ran another story in each mode."""
    proxy, client, apply = proxied
    proxy.inject(fault("PutDashboard", "body", times=ALWAYS, body=MESSAGES))
    code, report, _ = apply()
    assert code == 3 and len(report["failed"]) == 3
    assert len(client.list_dashboards()["DashboardEntries"]) == 3


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

def test_regions_are_published_each_on_its_own(aws, moto, project_dir):
    client, apply = aws
    config = project_dir("clusters:\n  - {name: east, region: us-east-1}\n  - {name: west, region: us-west-2}\n")
    code, report, stderr = apply("--config", str(config))
    assert code == 0, stderr
    west = moto.client("cloudwatch", "us-west-2")
    assert sorted(alarms(west)) == sorted(n for n in report["written"] if n.startswith("gpudash-west-")
                                           and "-dash" not in n and n in alarms(west))
    assert len(alarms(west)) == 13 and len(alarms(client)) == 13
    assert all(name.startswith("gpudash-west-") for name in alarms(west))
    # Dashboards are global: both Regions' endpoints list the account's one set.
    assert [d["DashboardName"] for d in west.list_dashboards()["DashboardEntries"]] == [
        d["DashboardName"] for d in client.list_dashboards()["DashboardEntries"]] == [
        f"gpudash-{c}-{d}" for c in ("east", "west") for d in ("by-pod", "health", "overview")]
    assert apply("--config", str(config))[1]["written"] == []


def test_plan_json_says_which_target_it_did_not_compare(cli, reference, monkeypatch, tmp_path):
    """A machine reader of `plan --output json` is told CloudWatch was not compared (no AWS credentials): its objects
    are in no change, which read alone says CloudWatch is as the build wants it. The JSON held the changes alone; the
    skip was said on stderr only."""
    from tests.support.grafana_server import ADMIN, GrafanaTestServer

    no_aws_credentials(monkeypatch, tmp_path)
    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana:
        code, stdout, _ = cli("plan", "--output", "json", env={"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN})
    answer = json.loads(stdout)
    assert code == 1 and {c["target"] for c in answer["changes"]} == {"grafana"}
    assert answer["skipped"] == [{"target": "CloudWatch", "reason": "no AWS credentials found",
                                  "fix": "configure AWS credentials (AWS_PROFILE, the standard AWS variables or an "
                                         "instance role) to include it, or pass --no-cloudwatch to leave it out"}]
    assert answer["notes"] == []


def test_plan_without_aws_credentials_still_shows_the_grafana_plan(cli, reference, monkeypatch, tmp_path):
    from tests.support.grafana_server import ADMIN, GrafanaTestServer

    no_aws_credentials(monkeypatch, tmp_path)
    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana:
        code, stdout, stderr = cli("plan", env={"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN})
    assert code == 1 and "create    grafana dashboard gpudash-overview" in stdout
    assert "CloudWatch skipped: no AWS credentials found" in stderr and "--no-cloudwatch" in stderr
    code, _, stderr = cli("plan", "--cloudwatch", env={"GRAFANA_URL": "", "GRAFANA_TOKEN": ""})
    assert code == 2 and "no AWS credentials found" in stderr  # asked for by name: an error
    code, _, stderr = cli("plan")
    assert code == 2 and "Grafana skipped: GRAFANA_URL is not set" in stderr
    assert "nothing to compare" in stderr and "Traceback" not in stderr
    assert "fix: set GRAFANA_URL and GRAFANA_TOKEN, or configure AWS credentials" in stderr
    # the fix names only what the flags leave in
    code, _, stderr = cli("plan", "--no-cloudwatch", env={"GRAFANA_URL": "", "GRAFANA_TOKEN": "glsa_x"})
    assert code == 2 and stderr.endswith("error: nothing to compare: no publishing target is configured\n"
                                         "  fix: set GRAFANA_URL and GRAFANA_TOKEN\n"), stderr
    code, _, stderr = cli("plan", "--no-grafana", "--no-cloudwatch")
    assert code == 2 and "--no-grafana and --no-cloudwatch leave no publishing target\n  fix: drop one" in stderr


def test_an_unreachable_cloudwatch_points_at_the_clusters_region_not_aws_region(cli, monkeypatch):
    """The Region of every call is the cluster's (clusters[].region): AWS_REGION chooses none, so the fix for a
    CloudWatch that cannot be reached names the setting, not the variable."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    code, _, stderr = cli("plan", "--no-grafana", env={"AWS_ENDPOINT_URL": "http://127.0.0.1:9"})
    assert code == 3 and "in us-east-1" in stderr and "Traceback" not in stderr, stderr
    assert "fix: check the network, the Region (clusters[].region in the settings) and AWS_ENDPOINT_URL" in stderr

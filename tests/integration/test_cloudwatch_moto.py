"""Every generated CloudWatch dashboard and alarm is accepted by moto's server and reads back equal."""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support.moto_server import MotoServer


@pytest.fixture(scope="module")
def moto():
    with MotoServer() as server:
        yield server


@pytest.fixture
def cloudwatch(moto):
    moto.reset()
    return moto.client("cloudwatch", "us-east-1")


def _files(config=None):
    files = encode(build(load_project(config)))
    return files


def test_every_dashboard_is_accepted_and_reads_back_equal(cloudwatch):
    files = _files()
    dashboards = [json.loads(data) for path, data in files.items() if path.startswith("cloudwatch/dashboards/")]
    assert len(dashboards) == 3
    for dashboard in dashboards:
        response = cloudwatch.put_dashboard(**dashboard)
        assert response["DashboardValidationMessages"] == []
        live = cloudwatch.get_dashboard(DashboardName=dashboard["DashboardName"])
        assert json.loads(live["DashboardBody"]) == json.loads(dashboard["DashboardBody"])
    names = {d["DashboardName"] for d in cloudwatch.list_dashboards(DashboardNamePrefix="gpudash-")["DashboardEntries"]}
    assert names == {"gpudash-gpu-cluster-overview", "gpudash-gpu-cluster-by-pod", "gpudash-gpu-cluster-health"}


def test_every_alarm_is_accepted_and_reads_back_equal(cloudwatch):
    requests = json.loads(_files()["cloudwatch/alarms.json"])["alarms"]
    assert len(requests) == 13  # ten rules; the idle rule watches MIG pods in a second alarm, data missing nodes one by one in a second and the agent's reads in a third
    for item in requests:
        cloudwatch.put_metric_alarm(**item["Request"])
    live = {a["AlarmName"]: a for a in cloudwatch.describe_alarms(AlarmNamePrefix="gpudash-")["MetricAlarms"]}
    assert set(live) == {item["Request"]["AlarmName"] for item in requests}
    for item in requests:
        request = item["Request"]
        alarm = live[request["AlarmName"]]
        for key in ("ComparisonOperator", "Threshold", "EvaluationPeriods", "DatapointsToAlarm", "TreatMissingData",
                    "AlarmDescription", "ActionsEnabled"):
            assert alarm[key] == request[key], key
        if "MetricName" in request:  # a standard alarm on one metric (the data-missing rule's agent alarm)
            for key in ("Namespace", "MetricName", "Dimensions", "Statistic", "Period"):
                assert alarm[key] == request[key], key
        else:
            fields = ("Id", "Expression", "MetricStat", "Period", "ReturnData")
            assert [[m.get(f) for f in fields] for m in alarm["Metrics"]] == [
                [m.get(f) for f in fields] for m in request["Metrics"]]
        tags = cloudwatch.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]
        assert {"Key": "ManagedBy", "Value": "gpudash"} in tags


def test_per_pod_alarms_are_one_group_by_alarm_per_rule_and_cluster(cloudwatch, project_dir):
    config = project_dir("clusters:\n  - {name: east, region: us-east-1}\n  - {name: west, region: us-east-1}\n")
    requests = json.loads(_files(config)["cloudwatch/alarms.json"])["alarms"]
    idle = [r["Request"] for r in requests if r["Request"]["AlarmName"].endswith("-gpu-idle-warning")]
    assert [r["AlarmName"] for r in idle] == ["gpudash-east-gpu-idle-warning", "gpudash-west-gpu-idle-warning"]
    assert idle[0]["Metrics"][0]["Expression"] == (
        'SELECT AVG("DCGM_FI_DEV_GPU_UTIL") FROM SCHEMA("ContainerInsights/Prometheus", "ClusterName", "namespace", '
        '"pod", "gpu", "share") WHERE "ClusterName" = \'east\' GROUP BY "namespace", "pod", "gpu" ORDER BY SUM() DESC')
    for item in requests:
        cloudwatch.put_metric_alarm(**item["Request"])
    assert len(cloudwatch.describe_alarms()["MetricAlarms"]) == 26


def test_static_per_pod_alarms_name_each_pod(cloudwatch, project_dir):
    config = project_dir("alarms:\n  per_pod: static\n  static_pods: [ml/train-0, research/train-0]\n"
                         "  actions:\n    warning: ['arn:aws:sns:us-east-1:123456789012:gpu-warnings']\n")
    requests = json.loads(_files(config)["cloudwatch/alarms.json"])["alarms"]
    idle = {r["Request"]["AlarmName"]: r["Request"] for r in requests if "-gpu-idle-" in r["Request"]["AlarmName"]}
    # The same pod name in two namespaces is two pods, two alarms (each with its second, on MIG instances).
    assert set(idle) == {f"gpudash-gpu-cluster-gpu-idle{mig}-warning-{pod}" for pod in ("ml-train-0", "research-train-0")
                         for mig in ("", "-mig")}
    # the idle rule judges each GPU of the pod: a Metrics Insights query on the pod, each GPU a contributor
    request = idle["gpudash-gpu-cluster-gpu-idle-warning-research-train-0"]
    assert [m["Expression"] for m in request["Metrics"]] == [
        'SELECT AVG("DCGM_FI_DEV_GPU_UTIL") FROM SCHEMA("ContainerInsights/Prometheus", "ClusterName", "namespace", '
        '"pod", "gpu") WHERE "ClusterName" = \'gpu-cluster\' AND "namespace" = \'research\' AND "pod" = \'train-0\' '
        'GROUP BY "namespace", "pod", "gpu" ORDER BY AVG() ASC']
    assert request["AlarmActions"] == ["arn:aws:sns:us-east-1:123456789012:gpu-warnings"]
    cloudwatch.put_metric_alarm(**request)
    (alarm,) = cloudwatch.describe_alarms(AlarmNames=[request["AlarmName"]])["MetricAlarms"]
    assert alarm["Metrics"][0]["Expression"] == request["Metrics"][0]["Expression"]
    # the framebuffer rule judges the pod's least free memory: a classic alarm on the pod's metric
    (request,) = [r["Request"] for r in requests
                  if r["Request"]["AlarmName"] == "gpudash-gpu-cluster-framebuffer-full-warning-research-train-0"]
    assert request["MetricName"] == "DCGM_FI_DEV_FB_FREE" and request["Statistic"] == "Minimum"
    assert request["Dimensions"] == [{"Name": "ClusterName", "Value": "gpu-cluster"},
                                     {"Name": "namespace", "Value": "research"}, {"Name": "pod", "Value": "train-0"}]
    cloudwatch.put_metric_alarm(**request)
    (alarm,) = cloudwatch.describe_alarms(AlarmNames=[request["AlarmName"]])["MetricAlarms"]
    assert sorted(alarm["Dimensions"], key=lambda d: d["Name"]) == sorted(request["Dimensions"], key=lambda d: d["Name"])


@pytest.mark.parametrize("style", ["role_arn", "web_identity"])
def test_a_profile_that_assumes_a_role_reaches_cloudwatch_with_the_role(moto, tmp_path, monkeypatch, style):
    """The credential chain makes clients of its own from the same session: STS for a profile with `role_arn` (a
    laptop's usual profile) or a web identity token (EKS's IRSA, AWS_ROLE_ARN), SSO and sign-in for theirs. The data
    loader that lists only the services gpudash calls refused them ("Unknown service: 'sts'"): every call failed."""
    from generator.clients.cloudwatch import CloudWatch

    moto.reset()
    role = "arn:aws:iam::123456789012:role/gpudash-publisher"
    config = tmp_path / "config"
    if style == "role_arn":
        config.write_text("[profile base]\naws_access_key_id = AKIABASEBASEBASEBASE\naws_secret_access_key = base\n"
                          f"[profile deployer]\nrole_arn = {role}\nsource_profile = base\nregion = us-east-1\n")
        profile = "deployer"
    else:
        token = tmp_path / "token"
        token.write_text("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6Z3B1OmdwdWRhc2gifQ.c2ln")
        config.write_text("[default]\nregion = us-east-1\n")
        monkeypatch.setenv("AWS_ROLE_ARN", role)
        monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(token))
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):  # the role's alone
            monkeypatch.delenv(key, raising=False)
        profile = None
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)  # STS too, as a real endpoint would be AWS's
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    client = CloudWatch(profile=profile, endpoint_url=moto.url)
    answer = client.call("us-east-1", "DescribeAlarms", "the alarms", AlarmNamePrefix="gpudash-")
    assert answer["MetricAlarms"] == []
    used = client.session.get_credentials().get_frozen_credentials()
    assert used.access_key.startswith("ASIA") and used.token, used  # the role's temporary keys, from STS

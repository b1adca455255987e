"""cloudwatch.source: container-insights through moto's CloudWatch server over real HTTP: apply writes the
add-on's dashboards and alarms, they read back equal, a second apply writes nothing, a build reads back
with `--from`, and GetMetricData over the add-on's metrics returns what the widgets convert."""

from __future__ import annotations

import json

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project

ADDON = "cloudwatch:\n  source: container-insights\n"


def _config(project_dir):
    return project_dir(ADDON)


def test_apply_writes_the_addon_dashboards_and_alarms_and_they_read_back_equal(moto, cli, project_dir, monkeypatch):
    config = _config(project_dir)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
    moto.reset()
    files = encode(build(load_project(config)))
    code, stdout, stderr = cli("apply", "--skip-verify", "--output", "json", "--config", str(config))
    assert code == 0, stderr
    assert len(json.loads(stdout)["written"]) == 8  # 3 dashboards, 5 alarms (data missing: the add-on's own metrics)
    client = moto.client("cloudwatch", "us-east-1")
    for path, data in files.items():
        if path.startswith("cloudwatch/dashboards/"):
            dashboard = json.loads(data)
            live = client.get_dashboard(DashboardName=dashboard["DashboardName"])
            body = json.loads(live["DashboardBody"])
            assert body == json.loads(dashboard["DashboardBody"])
            assert "ContainerInsights" in json.dumps(body) and "ContainerInsights/Prometheus" not in json.dumps(body)
    requests = {item["Request"]["AlarmName"]: item["Request"]
                for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    live = {a["AlarmName"]: a for a in client.describe_alarms(AlarmNamePrefix="gpudash-")["MetricAlarms"]}
    assert set(live) == set(requests) and len(live) == 5
    for name, request in requests.items():
        assert live[name]["Threshold"] == request["Threshold"]
        assert live[name]["Metrics"] == request["Metrics"]
    code, stdout, stderr = cli("apply", "--skip-verify", "--output", "json", "--config", str(config))
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["written"] == [] and report["summary"] == {"unchanged": 8}


def test_a_build_reads_back_with_from(moto, cli, project_dir, monkeypatch, tmp_path):
    config = _config(project_dir)
    out = tmp_path / "build"
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(out))
    assert code == 0, stderr
    assert (out / "cloudwatch" / "container-insights-addon.json").is_file()
    code, stdout, stderr = cli("lint", "--config", str(config), "--from", str(out))
    assert code == 0, stdout + stderr
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
    moto.reset()
    code, _, stderr = cli("apply", "--skip-verify", "--config", str(config), "--from", str(out))
    assert code == 0, stderr


def test_get_metric_data_over_the_published_bytes_gives_the_widgets_mib(moto, project_dir):
    """What moto does faithfully: store datapoints and return a statistic per period. The add-on's bytes,
    read the way the generated widget's math reads them, come back in MiB."""
    files = encode(build(load_project(_config(project_dir))))
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"])["DashboardBody"])
    (widget,) = [w for w in body["widgets"] if w.get("properties", {}).get("title") == "Framebuffer memory used"]
    math = widget["properties"]["metrics"][1][0]["expression"]
    assert math == "q1 / 1048576"
    moto.reset()
    client = moto.client("cloudwatch", "us-east-1")
    dimensions = [{"Name": "ClusterName", "Value": "gpu-cluster"}, {"Name": "NodeName", "Value": "ip-10-0-1-1"},
                  {"Name": "InstanceId", "Value": "i-1"}, {"Name": "InstanceType", "Value": "g5.12xlarge"},
                  {"Name": "GpuDevice", "Value": "nvidia0"}]
    mib = [20480.0, 22528.0]
    client.put_metric_data(Namespace="ContainerInsights", MetricData=[
        {"MetricName": "node_gpu_memory_used", "Dimensions": dimensions, "Value": v * 1048576, "Unit": "Bytes"}
        for v in mib])
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc)
    answer = client.get_metric_data(StartTime=now - datetime.timedelta(minutes=10), EndTime=now + datetime.timedelta(minutes=5),
                                    MetricDataQueries=[{"Id": "q1", "MetricStat": {"Metric": {
                                        "Namespace": "ContainerInsights", "MetricName": "node_gpu_memory_used",
                                        "Dimensions": dimensions}, "Period": 300, "Stat": "Average"}}])
    (result,) = answer["MetricDataResults"]
    values = [v / 1048576 for v in result["Values"]]  # the widget's `q1 / 1048576`
    assert values == [sum(mib) / 2]

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
    assert len(json.loads(stdout)["written"]) == 9  # 3 dashboards, 6 alarms (data missing: the add-on's own metrics,
    #                                                 the cluster's alarm and the per-GPU one)
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
    assert set(live) == set(requests) and len(live) == 6
    for name, request in requests.items():
        assert live[name]["Threshold"] == request["Threshold"]
        assert live[name]["Metrics"] == request["Metrics"]
    code, stdout, stderr = cli("apply", "--skip-verify", "--output", "json", "--config", str(config))
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["written"] == [] and report["summary"] == {"unchanged": 9}


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


def test_the_data_missing_alarm_read_back_from_cloudwatch_fires_when_one_gpu_node_s_agent_stops(moto, project_dir):
    """The add-on's data-missing alarm through moto over real HTTP: PutMetricAlarm, read back with DescribeAlarms,
    the add-on model's datapoints stored with PutMetricData, and each metric of the alarm read with GetMetricData;
    moto computes no metric math, so the read-back expressions are evaluated with the documented semantics
    (tests/support/cloudwatch_eval.py). The agent stopped on one GPU node fires; a node removed, or added and
    reporting within one period, does not."""
    import datetime

    from tests.support import cloudwatch_eval
    from tests.support.container_insights_story import ALARM, CHANGE, END, SITUATIONS, story_points

    files = encode(build(load_project(_config(project_dir))))
    (request,) = [i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if i["Request"]["AlarmName"] == ALARM]
    client = moto.client("cloudwatch", "us-east-1")
    base = (int(datetime.datetime.now(datetime.timezone.utc).timestamp()) // 300 - 12) * 300  # the story's 0 s

    def at(seconds: float) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(base + seconds, datetime.timezone.utc)

    read: dict = {}

    def stat(metric_stat: dict, start: float, end: float) -> dict[int, float]:
        """One GetMetricData per evaluation: every metric of the alarm at once."""
        if (start, end) not in read:
            stats = [m["MetricStat"] for m in live["Metrics"] if "MetricStat" in m]
            answer = client.get_metric_data(StartTime=at(start), EndTime=at(end), MetricDataQueries=[
                {"Id": f"q{i}", "MetricStat": s, "ReturnData": True} for i, s in enumerate(stats)])
            read[(start, end)] = [
                (s, {int(t.timestamp()) - base: v for t, v in zip(r["Timestamps"], r["Values"])
                     if int(t.timestamp()) - base < end})
                for s, r in zip(stats, sorted(answer["MetricDataResults"], key=lambda r: int(r["Id"][1:])))]
        return next(series for s, series in read[(start, end)] if s == metric_stat)

    wanted = {"the add-on's agent stopped on one GPU node only": "ALARM",
              "a GPU node removed: its agent stops 90 s before the DaemonSet stops counting it": "OK",
              "autoscaling adds a GPU node that reports 4 minutes after the DaemonSet counts it": "OK"}
    seen = {}
    for situation in (s for s in SITUATIONS if s.name in wanted):
        moto.reset()
        client.put_metric_alarm(**request)
        (live,) = client.describe_alarms(AlarmNames=[ALARM])["MetricAlarms"]
        points = story_points(situation, live)
        for first in range(0, len(points), 500):
            client.put_metric_data(Namespace="ContainerInsights", MetricData=[
                {"MetricName": p.metric, "Dimensions": [{"Name": k, "Value": v} for k, v in p.dimensions],
                 "Timestamp": at(p.timestamp), "Value": p.value} for p in points[first:first + 500]])
        read.clear()
        # The metrics are read back from moto; its Metrics Insights query (which moto does not run) is evaluated
        # over the datapoints put.
        seen[situation.name] = [cloudwatch_eval.alarm(live, points, end, stat) for end in (CHANGE, CHANGE + 600, END)]
    assert seen == {name: [{(): "OK"}, {(): state}, {(): state}] for name, state in wanted.items()}

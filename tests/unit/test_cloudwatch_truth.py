"""Every CloudWatch widget and alarm computes what its title says.

Exporter payloads of a crafted fleet (idle GPUs, a pod on two GPUs, one pod name in two
namespaces) go through a model of the CloudWatch agent fed with the *generated* agent
config and scrape job; the *generated* widgets and alarms are then evaluated over the
datapoints with Metrics Insights' documented semantics, and compared with the truth
computed straight from the payload values.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings as hypothesis_settings, strategies as st

from generator.render.cloudwatch import panel_title
from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_widgets import (close as _close, header as _header, panel as _panel, said as _said,
                                              widgets as _widgets)
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.dcgm_fleet import FLEET, STEP, scrapes, truth

START, END = 0, 2100  # seven 5-minute periods; the agent saw one scrape before START
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"


def _run(files, project, first=-1, last=END // STEP - 1, gpus=FLEET, only=None):
    """The fleet's datapoints through the build's agent model (`only`: those the alarms or widgets given read)."""
    config, job = agent_config(files[AGENT_FILE])
    return Agent(config, job, only=None if only is None else cloudwatch_eval.reads(*only)).run(
        scrapes(job, project.catalog, first, last, gpus))


@pytest.fixture(scope="module")
def fleet():
    project = load_project()
    files = encode(build(project))
    return project, files, _run(files, project)


def test_every_widget_shows_the_truth(fleet):
    project, files, datapoints = fleet
    checked = 0
    for path, properties in _widgets(files):
        query = _panel(project, path, panel_title(properties["title"]), "gpu-cluster").queries[0]
        shown = cloudwatch_eval.widget(properties, datapoints, START, END)
        if "mig_instance" in query.by:  # this fleet has no MIG GPU (test_cloudwatch_mig has)
            assert shown == {}, panel_title(properties["title"])
            continue
        start, period = cloudwatch_eval.widget_range(properties, START, END)
        expected = truth(query, project.catalog.get(query.metric), start, END, period)
        expected = {(label or panel_title(properties["title"])): series for label, series in expected.items()}
        if any(" MIG " in label for label in shown):  # per GPU instance (the header says so): these GPUs are whole
            assert _said(_header(files, path), panel_title(properties["title"]), "one line per GPU instance")
            expected = {f"{label} MIG none": series for label, series in expected.items()}
        if query.by and "pod" not in query.by:
            limit = project.settings.cloudwatch.top_gpus
            assert len(shown) == min(limit, len(expected))
        assert set(shown) == set(expected), (path, panel_title(properties["title"]))
        for label, series in expected.items():
            assert set(shown[label]) == set(series), (panel_title(properties["title"]), label)
            for bucket, value in series.items():
                assert _close(shown[label][bucket], value), (panel_title(properties["title"]), label, bucket,
                                                             shown[label][bucket], value)
        checked += 1
    assert checked >= 25


def test_idle_gpus_are_seen_in_fleet_and_health_views(fleet):
    project, files, datapoints = fleet
    widgets = {panel_title(p["title"]): p for path, p in _widgets(files) if "overview" in path or "health" in path}
    reporting = cloudwatch_eval.widget(widgets["GPUs reporting"], datapoints, START, END)
    assert set(reporting["GPUs reporting"].values()) == {6.0}  # GPUs, not 6 x 10 observations
    temperature = cloudwatch_eval.widget(widgets["GPU temperature"], datapoints, START, END)
    assert {"ip-10-0-1-1 GPU 3", "ip-10-0-1-2 GPU 0"} <= set(temperature)
    xid = cloudwatch_eval.widget(widgets["Last XID error code"], datapoints, START, END)
    assert xid["ip-10-0-1-2 GPU 0"][1200] == 79.0


def test_pods_are_named_by_namespace_and_pod(fleet):
    project, files, datapoints = fleet
    widgets = {panel_title(p["title"]): p for path, p in _widgets(files) if "by-pod" in path}
    power = cloudwatch_eval.widget(widgets["Power draw of each pod's GPUs"], datapoints, START, END)
    assert set(power) == {"Pod ml/train-0", "Pod research/train-0", "Pod ml/infer-1"}
    # Two GPUs of 100-113 W each, not ten observations of each (a 5-minute period at 30 s scrapes).
    assert 200 < power["Pod ml/train-0"][0] < 240
    pods = cloudwatch_eval.widget(widgets["Pods on GPUs"], datapoints, START, END)
    assert {label: series[max(series)] for label, series in pods.items()} == {  # the last 5 minutes
        "Pod ml/train-0": 2.0, "Pod research/train-0": 1.0, "Pod ml/infer-1": 1.0}


def _alarms(files):
    return {a["Request"]["AlarmName"].removeprefix("gpudash-gpu-cluster-"): a["Request"]
            for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}


def _firing(request, datapoints, end=END):
    return {key for key, state in cloudwatch_eval.alarm(request, datapoints, end).items() if state == "ALARM"}


GPU_KEY = (("node", "ip-10-0-1-2"), ("gpu", "0"))


def test_gpu_alarms_watch_every_gpu_and_name_it(fleet):
    _, files, datapoints = fleet
    alarms = _alarms(files)
    # The XID error is on a GPU no pod holds.
    assert _firing(alarms["xid-error-critical"], datapoints) == {GPU_KEY}
    assert _firing(alarms["xid-error-critical"], datapoints, end=1200) == set()
    # Row remapping counted on an idle GPU: the increase in the period, not a 30 s delta.
    # Each GPU is one contributor, named by node and GPU (the OTel pipeline merges a device counter per GPU).
    assert _firing(alarms["uncorrectable-rows-warning"], datapoints, end=1800) == {
        (("node", "ip-10-0-1-1"), ("gpu", "3"))}
    assert _firing(alarms["gpu-temp-high-warning"], datapoints) == set()


def test_pcie_replays_alarm_means_what_its_prometheus_twin_means(fleet):
    """Threshold: replays per minute x 5 over 5 minutes. 110 per 5 minutes fires; 40 does not.
    The largest 30 s delta (11) would never reach 50. The query takes the sum of the deltas per GPU (the OTel
    pipeline publishes a device counter once per physical GPU), so the threshold is the Prometheus rule's."""
    project, files, datapoints = fleet
    request = _alarms(files)["pcie-replays-warning"]
    assert request["Threshold"] == project.settings.threshold("pcie_replays_per_minute") * 5
    assert _firing(request, datapoints) == {GPU_KEY}


def test_pod_alarms_order_toward_the_threshold_and_see_each_pod(fleet):
    _, files, datapoints = fleet
    alarms = _alarms(files)
    # the idle alarm judges each GPU a pod holds: infer-1's GPU 1 (dcgm_fleet.FLEET)
    assert _firing(alarms["gpu-idle-warning"], datapoints) == {(("namespace", "ml"), ("pod", "infer-1"), ("gpu", "1"))}
    assert _firing(alarms["framebuffer-full-warning"], datapoints) == {(("namespace", "ml"), ("pod", "infer-1"))}
    # the idle alarm reads the unused share (100 - utilization) above 95, the pods idle longest first
    # (test_cloudwatch_idle_over_500.py)
    assert "ORDER BY SUM() DESC" in alarms["gpu-idle-warning"]["Metrics"][0]["Expression"]
    assert "ORDER BY MIN() ASC" in alarms["framebuffer-full-warning"]["Metrics"][0]["Expression"]


@pytest.mark.parametrize("labels", ["", "labels:\n  pod: exported_pod\n  namespace: exported_namespace\n"])
def test_static_per_pod_alarms_compute_the_same_as_group_by(project_dir, labels):
    """Whatever labels.* says about a Prometheus path, the agent's own job names the dimensions pod / namespace. The
    idle alarm of a listed pod judges each GPU it holds, a contributor each (the pod's GPU 1 is idle)."""
    config = project_dir(labels + "alarms:\n  per_pod: static\n  static_pods: [ml/infer-1, research/train-0]\n")
    project = load_project(config)
    files = encode(build(project))
    requests = _alarms(files)
    datapoints = _run(files, project, only=requests.values())
    assert _firing(requests["gpu-idle-warning-ml-infer-1"], datapoints) == {
        (("namespace", "ml"), ("pod", "infer-1"), ("gpu", "1"))}
    assert _firing(requests["gpu-idle-warning-research-train-0"], datapoints) == set()


def test_scrape_interval_and_period_follow_the_settings(project_dir):
    """At 15 s scrapes and 60 s periods a per-pod sum on agent.pipeline: classic still reads GPUs, not
    observations: the observations a GPU makes in the period the widget's query used (PERIOD of its hidden
    metric) over 15 s. The OTel pipeline's is the mean of the pod's totals per scrape, whatever the interval."""
    settings = "scrape:\n  interval: 15s\ncloudwatch:\n  period: 60\n"
    project = load_project(project_dir("agent:\n  pipeline: classic\n" + settings))
    files = encode(build(project))
    (properties,) = [p for _, p in _widgets(files) if panel_title(p["title"]) == "Power draw of each pod's GPUs"]
    assert properties["period"] == 60
    # PERIOD() of a metric the agent publishes for the cluster (test_cloudwatch_period_metrics)
    assert properties["metrics"][1] == ["ContainerInsights/Prometheus", "DCGM_FI_DEV_GPU_TEMP", "ClusterName",
                                        "gpu-cluster", {"id": "p1", "visible": False}]
    assert properties["metrics"][2][0]["expression"] == "q1 * 15 / PERIOD(p1)"
    (properties,) = [p for _, p in _widgets(encode(build(load_project(project_dir(settings)))))
                     if panel_title(p["title"]) == "Power draw of each pod's GPUs"]
    assert properties["period"] == 60
    ((query,),) = properties["metrics"]
    assert query["expression"].startswith('SELECT AVG("DCGM_FI_DEV_POWER_USAGE") FROM SCHEMA('
                                          '"ContainerInsights/Prometheus", "ClusterName", "namespace", "pod", '
                                          '"pod_total")')


def test_without_an_expected_signal_the_data_missing_alarm_is_left_out_and_said(project_dir):
    """alarms.expected_gpus: none: nothing tells a stopped exporter from a node group at zero, so neither
    backend gets the alarm, the agent publishes nothing for it, and generate and lint say so."""
    from click.testing import CliRunner

    from generator.cli import main
    from generator.lint.runner import lint_project

    config = project_dir("alarms:\n  expected_gpus: none\n")
    project = load_project(config)
    files = encode(build(project))
    assert not any("data-missing" in name for name in _alarms(files))
    assert "GpudashGpuDataMissing" not in files["prometheus/rules.yaml"].decode()
    assert b"kube_daemonset" not in files[AGENT_FILE] and b"kube-state-metrics" not in files[AGENT_FILE]
    result = CliRunner().invoke(main, ["generate", "--config", str(config), "--out", str(config.parent / "build")])
    assert result.exit_code == 0, result.output
    assert "note: alarm 'gpu-data-missing' is left out: alarms.expected_gpus is none" in result.output
    (note,) = [f for f in lint_project(project) if f.rule == "AL011"]
    from generator.resources import bundled

    line = next(n for n, text in enumerate((bundled("alarms") / "gpu_alarms.py").read_text().splitlines(), 1)
                if 'Alarm("gpu-data-missing"' in text)
    assert note.severity == "note" and note.where.endswith(f"alarms/gpu_alarms.py:{line}")


def test_the_retired_scale_to_zero_setting_says_what_replaced_it(project_dir):
    from generator.errors import InputError

    with pytest.raises(InputError) as raised:
        load_project(project_dir("alarms:\n  scale_to_zero: true\n"))
    assert "alarms.scale_to_zero is retired" in str(raised.value)
    assert "expected_gpus: none" in raised.value.hint and raised.value.where.endswith("gpudash.yaml:2")


COMBINATIONS = '''
from generator.model import Dashboard, Panel, Query, Row

FIELDS = (("DCGM_FI_DEV_POWER_USAGE", False), ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", False),
          ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", True), ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", False))
GROUPS = ((), ("pod",), ("namespace", "pod"), ("node", "gpu"), ("node",), ("gpu",))


def dashboards(ctx):
    panels = []
    for metric, increase in FIELDS:
        for aggregation in ("avg", "sum", "max", "min", "count"):
            for by in GROUPS:
                for kind in ("timeseries", "stat"):
                    title = f"{metric} {'increase' if increase else ''} {aggregation} by {'+'.join(by) or 'all'} {kind}"
                    panels.append(Panel(title, Query(metric, aggregation, by, as_increase=increase), kind=kind,
                                        description="every combination"))
    yield Dashboard(id="combos", title="Combinations", rows=[Row("all", panels)])
'''


def test_every_combination_is_true_or_left_out_and_named(project_dir):
    """Any aggregation of a gauge, a counter rate or a counter increase, by any grouping, in a chart or a
    single value: CloudWatch shows the truth, or the panel stays on Grafana and the header says so."""
    config = project_dir("cloudwatch:\n  top_gpus: 500\n  top_pods: 500\n", dashboards={"combos.py": COMBINATIONS})
    project = load_project(config)
    files = encode(build(project))
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-combos.json"])["DashboardBody"])
    header = body["widgets"][0]["properties"]["markdown"]
    shown = {panel_title(w["properties"]["title"]): w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    datapoints = _run(files, project, only=shown.values())
    (dashboard,) = [d for d in project.dashboards if d.id == "combos"]
    counts = {"shown": 0, "left out": 0}
    for panel in dashboard.panels():
        if panel.title not in shown:
            assert f"{panel.title} (" in header, panel.title
            counts["left out"] += 1
            continue
        properties = shown[panel.title]
        query = panel.queries[0]
        start, period = cloudwatch_eval.widget_range(properties, START, END)
        expected = truth(query, project.catalog.get(query.metric), start, END, period)
        expected = {(label or panel.title): series for label, series in expected.items()}
        lines = cloudwatch_eval.widget(properties, datapoints, START, END)
        if any(" MIG " in label for label in lines):  # per GPU instance (the header says so): these GPUs are whole
            assert _said(header, panel.title, "one line per GPU instance")
            expected = {f"{label} MIG none": series for label, series in expected.items()}
        assert set(lines) == set(expected), panel.title
        for label, series in expected.items():
            assert set(lines[label]) == set(series), (panel.title, label)
            for bucket, value in series.items():
                assert _close(lines[label][bucket], value), (panel.title, label, bucket, lines[label][bucket], value)
        counts["shown"] += 1
    # Left out: the max, min or mean over the GPUs of a pod, node or index of per-GPU rates or increases (a mean
    # from the mean delta per scrape would read high in a period with a missed scrape).
    assert counts == {"shown": 168, "left out": 72}


ALARM_COMBINATIONS = '''
from generator.model import Alarm, Condition, Query

CASES = {CASES!r}


def alarms(ctx):
    for index, (metric, increase, aggregation, by, comparison, threshold) in enumerate(CASES):
        yield Alarm(f"combo-{{index}}", "combination", Condition(Query(metric, aggregation, tuple(by),
                    as_increase=increase), comparison, threshold), missing_data="notBreaching")
'''


def _label(key: tuple) -> str:
    dims = dict(key)
    if "pod" in dims:
        return f"Pod {dims['namespace']}/{dims['pod']}"
    if "gpu" in dims:
        return f"{dims['node']} GPU {dims['gpu']}"
    return dims.get("node", "")


def test_every_alarm_combination_fires_for_exactly_what_its_condition_says(project_dir):
    """Thresholds are set between the true values, so an alarm that compared observations, single deltas or
    per-scrape sums instead of the condition's meaning would fire for the wrong pods or GPUs."""
    from generator.cloudwatch_query import Unsupported, plan
    from generator.model import Query

    base = load_project()
    cases, refused = [], 0
    for metric, increase in (("DCGM_FI_DEV_POWER_USAGE", False), ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", False),
                             ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", True), ("DCGM_FI_DEV_FB_USED", False)):
        for aggregation in ("avg", "sum", "max", "min", "count"):
            for by in ((), ("pod",), ("node", "gpu"), ("node",)):
                query = Query(metric, aggregation, by, as_increase=increase)
                try:
                    plan(query, base.catalog, base.settings, 300, alarm=True)
                except Unsupported:
                    refused += 1  # generate refuses these with the definition's file and line
                    continue
                values = sorted(series[END - 300] for series in
                                truth(query, base.catalog.get(metric), END - 300, END, 300).values())
                middle = values[len(values) // 2] if len(values) > 1 else values[0] * 0.9
                for comparison in (">", "<="):
                    cases.append((metric, increase, aggregation, list(by), comparison, float(middle)))
    # the max or min over several GPUs of per-GPU rates or increases (12); their mean (6: the mean delta per scrape
    # reads high in a period with a missed scrape); framebuffer's max or min per GPU (2): a MIG GPU's is the sum of its
    # instances, which no one query adds up per GPU before taking them (its mean, max or min over a node's or the
    # cluster's GPUs reads each GPU's reading once, the agent adding its instances up, on the OTel pipeline)
    assert refused == 20
    folder = project_dir("alarms:\n  actions:\n    warning: []\n")
    (folder.parent / "alarms").mkdir()
    (folder.parent / "alarms" / "combos.py").write_text(ALARM_COMBINATIONS.replace("{CASES!r}", repr(cases))
                                                        .replace("{{index}}", "{index}"))
    with folder.open("a") as settings:
        settings.write("definitions:\n  alarms: [alarms]\n")
    project = load_project(folder)
    files = encode(build(project))
    requests = _alarms(files)
    datapoints = _run(files, project, only=requests.values())
    checked = 0
    for index, (metric, increase, aggregation, by, comparison, threshold) in enumerate(cases):
        name = f"combo-{index}-warning"
        query = Query(metric, aggregation, tuple(by), as_increase=increase)
        expected = {label for label, series in truth(query, project.catalog.get(metric), END - 300, END, 300).items()
                    if {">": series[END - 300] > threshold, "<=": series[END - 300] <= threshold}[comparison]}
        fired = {_label(key) for key in _firing(requests[name], datapoints)}
        assert fired == expected, (name, metric, increase, aggregation, by, comparison, threshold)
        checked += 1
    assert checked >= 100


def test_recorded_payloads_publish_both_sets_or_only_the_gpu_set(fleet, reference):
    """A real A10G payload with a workload pod, and a recorded payload of a GPU no pod holds."""
    from tests.support.cloudwatch_agent import Scrape
    from tests.support.dcgm_fleet import target_labels

    project, files, _ = fleet
    config, job = agent_config(files[AGENT_FILE])
    # The README's payload writes pod="" for a GPU no pod holds: an empty label is no label.
    for name, metric, pod in (("blog-a10g-k8s.prom", "DCGM_FI_DEV_GPU_UTIL", ("kube-system", "gpu-burn-c68d8c774-ltg9s")),
                              ("dcgm-exporter-readme-k8s.prom", "DCGM_FI_DEV_SM_CLOCK", None)):
        lines = (reference / "exporter" / name).read_text().splitlines()
        payload = "\n".join(line for line in lines if line.strip() != "...") + "\n"  # the README elides lines
        points = Agent(config, job).run([Scrape(t, payload, target_labels(job, "ip-10-0-1-1")) for t in (0, 30)])
        # (GPU utilization per GPU as each GPU's reading once, marked `readings`: a MIG GPU's by its stand-in)
        util = {tuple(d for d in p.dimensions if d[0] != "readings") for p in points if p.metric == metric}
        assert (("ClusterName", "gpu-cluster"), ("gpu", "0"), ("node", "ip-10-0-1-1")) in util, name
        per_pod = {p.dims()["pod"] and (p.dims()["namespace"], p.dims()["pod"]) for p in points if "pod" in p.dims()}
        assert per_pod == ({pod} if pod else set()), name


def test_a_period_that_is_no_multiple_of_the_scrape_interval_is_refused(project_dir):
    """Sums and counts per group divide by the observations one GPU makes per period: 300 s / 45 s is
    6 or 7 observations, so such a widget would read 7 % off; 60 s periods of 2-minute scrapes twice."""
    from generator.errors import InputError

    for config in ("scrape:\n  interval: 45s\n", "scrape:\n  interval: 2m\ncloudwatch:\n  period: 60\n"):
        with pytest.raises(InputError, match="cloudwatch.period"):
            load_project(project_dir(config))


def test_metrics_insights_alarms_fit_the_three_hours_cloudwatch_evaluates(project_dir):
    """CloudWatch evaluates a Metrics Insights alarm over the latest 3 hours of data only: an idle rule of
    4 hours would never see its evaluation periods. The settings refuse it (thresholds.idle_minutes at most
    180); lint flags a hand-made one."""
    from generator.artifacts import AlarmRequest
    from generator.errors import InputError
    from generator.lint.cloudwatch_rules import insights_window

    with pytest.raises(InputError, match="240 is greater than the maximum of 180"):
        load_project(project_dir("thresholds:\n  idle_minutes: 240\n"))
    project = load_project(project_dir("thresholds:\n  idle_minutes: 180\n"))
    files = encode(build(project))
    requests = json.loads(files["cloudwatch/alarms.json"])["alarms"]
    (idle,) = [r for r in requests if r["Request"]["AlarmName"].endswith("gpu-idle-warning")]
    assert idle["Request"]["EvaluationPeriods"] * idle["Request"]["Metrics"][0]["Period"] == 10800

    class Subject:
        alarms = [AlarmRequest("us-east-1", {**idle["Request"], "EvaluationPeriods": 48})]

    (finding,) = list(insights_window(Subject))
    assert finding.rule == "AL009" and finding.severity == "error"
    assert not list(insights_window(type("S", (), {"alarms": [AlarmRequest(r["Region"], r["Request"])
                                                              for r in requests]})))


def test_alarm_periods_cloudwatch_cannot_evaluate_truthfully_are_refused(project_dir):
    """A 300 s alarm over 2-minute scrapes sees 2 or 3 observations a period (its normalised threshold would be
    off by a third); a 30 s alarm needs high-resolution metrics, and the agent publishes standard ones."""
    from generator.errors import InputError

    with pytest.raises(InputError, match="scrape interval"):
        encode(build(load_project(project_dir("scrape:\n  interval: 2m\ncloudwatch:\n  period: 3600\n"))))
    folder = project_dir("")
    (folder.parent / "alarms").mkdir()
    (folder.parent / "alarms" / "fast.py").write_text(
        "from generator.model import Alarm, Condition, Query\n\n\n"
        "def alarms(ctx):\n"
        "    yield Alarm('hot-fast', 'Hot', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'max', ('node', 'gpu')), '>', 90),"
        " period_seconds=30)\n")
    with folder.open("a") as settings:
        settings.write("scrape:\n  interval: 15s\ndefinitions:\n  alarms: [alarms]\n")
    with pytest.raises(InputError, match="60 s"):
        encode(build(load_project(folder)))


LONG_ALARM = ("from generator.model import Alarm, Condition, Query\n\n\n"
              "def alarms(ctx):\n"
              "    yield Alarm('pod-hot-long', 'Hot',\n"
              "                Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'max', ('pod',)), '>', 80),\n"
              "                period_seconds={period}, evaluation_periods={periods})\n")


@pytest.mark.parametrize("period, periods, span, fits", [(1800, 60, "30 hours", 48), (86400, 8, "192 hours", 7)])
def test_an_alarm_cloudwatch_would_evaluate_past_its_evaluation_limit_is_refused(project_dir, period, periods, span,
                                                                                 fits):
    """PutMetricAlarm refuses an alarm whose Period x EvaluationPeriods passes 604,800 s, or 86,400 s where its period
    is under an hour (botocore's PutMetricAlarm Period): a static per-pod alarm (one metric, not a Metrics Insights
    query, which the 3 hours bound first) of 60 half-hours was written by generate and passed lint, and apply would
    have failed on it. generate refuses it, and lint (AL009) names one made by hand."""
    from generator.artifacts import AlarmRequest
    from generator.errors import InputError
    from generator.lint.cloudwatch_rules import insights_window

    folder = project_dir("alarms:\n  per_pod: static\n  static_pods: [ml/train-0]\n"
                         "definitions:\n  alarms: [alarms]\n")
    (folder.parent / "alarms").mkdir()
    (folder.parent / "alarms" / "long.py").write_text(LONG_ALARM.format(period=period, periods=periods))
    limit = "a day where the period is under an hour" if period < 3600 else "seven days"
    with pytest.raises(InputError, match=f"{periods} periods of {period} s span {span}; CloudWatch evaluates an "
                                         f"alarm over {limit} at most"):
        encode(build(load_project(folder)))
    (folder.parent / "alarms" / "long.py").write_text(LONG_ALARM.format(period=period, periods=fits))
    requests = json.loads(encode(build(load_project(folder)))["cloudwatch/alarms.json"])["alarms"]
    (alarm,) = [r for r in requests if "pod-hot-long" in r["Request"]["AlarmName"]]
    assert "MetricName" in alarm["Request"] and alarm["Request"]["Period"] == period

    class Subject:
        alarms = [AlarmRequest("us-east-1", {**alarm["Request"], "EvaluationPeriods": periods})]

    (finding,) = list(insights_window(Subject))
    assert finding.rule == "AL009" and finding.severity == "error" and f"spans {span}" in finding.message
    assert not list(insights_window(type("S", (), {"alarms": [AlarmRequest(r["Region"], r["Request"])
                                                              for r in requests]})))


def _mig_payload(k: int) -> str:
    """A MIG GPU cut in two instances, each held by a busy pod: DCGM reads GPU_UTIL 0 on instances (it does
    not measure it there), the engine activity is the instance's real load."""
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge", "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge"]
    for instance, pod in ((1, "mig-a"), (2, "mig-b")):
        labels = (f'gpu="0",UUID="GPU-mig",device="nvidia0",modelName="NVIDIA A100",Hostname="h",'
                  f'GPU_I_PROFILE="3g.20gb",GPU_I_ID="{instance}",pod="{pod}",namespace="ml",container="main"')
        lines += [f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 0", f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{labels}}} 0.8"]
    return "\n".join(lines) + "\n"


def test_busy_mig_pods_are_not_called_idle_on_cloudwatch(project_dir):
    """GPU utilization is no reading on a MIG instance (0, nothing or the blank sentinel, by exporter version).
    The scrape job drops it there, so CloudWatch neither charts a busy MIG pod at 0 % nor alarms it as idle."""
    from tests.support.cloudwatch_agent import Scrape
    from tests.support.dcgm_fleet import target_labels

    project = load_project()
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(30.0 * k, _mig_payload(k), target_labels(job, "ip-10-0-1-3"))
                                     for k in range(-1, END // STEP)])
    # (and the scrape's flag of no GPU data per node, the data-missing alarm's; and the GPU's utilization once, the
    # fleet's mean utilization's: its instances' engine activity x 100, never the 0 they carry)
    assert {p.metric for p in points} == {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "scrape_samples_post_metric_relabeling",
                                          "DCGM_FI_DEV_GPU_UTIL"}
    # (each GPU's reading once; its node's total and count of them, node_mean, the fleet value's per node: 80, -1)
    util = [p for p in points if p.metric == "DCGM_FI_DEV_GPU_UTIL" and "node_mean" not in p.dims()]
    assert all(p.dims().get("readings") == "once per GPU" for p in util) and {p.value for p in util} == {80.0}
    nodes = {p.dims()["node_mean"]: p.value for p in points if "node_mean" in p.dims()}
    assert nodes == {"sum": 80.0, "count": -1.0}, nodes
    assert _firing(_alarms(files)["gpu-idle-warning"], points) == set()
    (properties,) = [p for _, p in _widgets(files) if panel_title(p["title"]) == "GPU utilization by pod"]
    assert cloudwatch_eval.widget(properties, points, START, END) == {}


@hypothesis_settings(max_examples=500, deadline=None, derandomize=True)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_metric_math_numbers_are_the_floats_own_digits_without_an_exponent(value):
    """number() writes the shortest digits that read back as the float, positionally: what Python's
    Decimal writes for the float's repr (the exponent as zeros), without importing decimal."""
    from decimal import Decimal

    from generator.cloudwatch_query import number

    text = format(Decimal(repr(value)), "f")
    assert number(value) == (text.rstrip("0").rstrip(".") if "." in text else text)
    assert "e" not in number(value) and float(number(value)) == value

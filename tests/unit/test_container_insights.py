"""cloudwatch.source: container-insights: the same definitions, on the add-on's own GPU metrics, show the truth.

The crafted fleet (idle GPUs, a pod on two GPUs, one pod name in two namespaces) goes through
a model of the add-on written from its sources (tests/support/container_insights_addon.py);
the *generated* widgets and alarms are evaluated over what CloudWatch would store, with
Metrics Insights' documented semantics, and compared with the truth from the DCGM readings.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from click.testing import CliRunner

from generator.render.cloudwatch import panel_title
from generator.artifacts import build
from generator.output import encode
from generator.cli import main
from generator.container_insights_table import MAPPINGS, published_sets
from generator.errors import InputError
from generator.lint.runner import lint_project
from tests.support.lint_input import lint_input
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_widgets import close as _close, panel as _panel, widgets as _widgets
from tests.support.container_insights_addon import EVERY, datapoints, reading
from tests.support.dcgm_fleet import FLEET, Gpu, truth

START, END = 0, 2100
CLUSTER = "gpu-cluster"
ADDON = "cloudwatch:\n  source: container-insights\n"
RATIO_FIELDS = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE")


@pytest.fixture(scope="module")
def addon(tmp_path_factory):
    folder = tmp_path_factory.mktemp("addon")
    (folder / "gpudash.yaml").write_text(ADDON)
    project = load_project(folder / "gpudash.yaml")
    return project, encode(build(project)), datapoints(CLUSTER, START, END - EVERY)


def _device_label(label: str) -> str:
    """The truth names a GPU `<node> GPU <index>`; the add-on's GpuDevice is the device (nvidia<index>)."""
    return re.sub(r" GPU (\d+)$", r" nvidia\1", label)


def _ratio_truth(by, aggregation, period, gpus=FLEET, start=START):
    """used / (used + free) per GPU, averaged over the GPU's readings, then across the line's GPUs."""
    lines: dict[str, dict[int, list[tuple[float, float, float]]]] = {}
    for bucket in range(start, END, period):
        for gpu in gpus:
            if "pod" in by and not gpu.held:
                continue
            label = f"Pod {gpu.namespace}/{gpu.pod}" if "pod" in by else ""
            values = [reading("DCGM_FI_DEV_FB_USED_PERCENT", gpu, t // 30) for t in range(bucket, bucket + period, EVERY)]
            lines.setdefault(label, {}).setdefault(bucket, []).append((sum(values) / len(values), min(values),
                                                                       max(values)))
    pick = {"avg": lambda v: sum(m for m, _, _ in v) / len(v), "max": lambda v: max(h for _, _, h in v)}
    return {label: {b: pick[aggregation](v) for b, v in buckets.items()} for label, buckets in lines.items()}


def test_every_widget_shows_the_truth(addon):
    project, files, points = addon
    checked = 0
    for path, properties in _widgets(files):
        query = _panel(project, path, panel_title(properties["title"]), CLUSTER).queries[0]
        shown = cloudwatch_eval.widget(properties, points, START, END)
        start, period = cloudwatch_eval.widget_range(properties, START, END)
        if query.over:
            assert set(query.over) == set(RATIO_FIELDS)
            expected = _ratio_truth(query.by, query.aggregation, period, start=start)
        else:
            expected = truth(query, project.catalog.get(query.metric), start, END, period, every=EVERY)
        expected = {_device_label(label) or panel_title(properties["title"]): series for label, series in expected.items()}
        assert set(shown) == set(expected), (path, panel_title(properties["title"]))
        mismatched = [(label, bucket, shown[label].get(bucket), value) for label, series in expected.items()
                      for bucket, value in series.items() if bucket not in shown[label]
                      or not _close(shown[label][bucket], value)]
        assert not mismatched and all(set(shown[k]) == set(v) for k, v in expected.items()), \
            (panel_title(properties["title"]), mismatched[:3])
        checked += 1
    assert checked >= 15


def test_fleet_views_count_gpus_and_see_idle_ones(addon):
    _, files, points = addon
    widgets = {panel_title(p["title"]): p for path, p in _widgets(files) if "overview" in path}
    reporting = cloudwatch_eval.widget(widgets["GPUs reporting"], points, START, END)
    assert set(reporting["GPUs reporting"].values()) == {6.0}  # six GPUs, not 6 x 5 observations
    temperature = cloudwatch_eval.widget(widgets["GPU temperature"], points, START, END)
    assert {"ip-10-0-1-1 nvidia3", "ip-10-0-1-2 nvidia0"} <= set(temperature)  # idle GPUs


def test_framebuffer_is_shown_in_mib_and_as_a_ratio(addon):
    """The add-on publishes bytes and percent; the widgets divide back so their units (and thresholds) hold."""
    _, files, points = addon
    widgets = {panel_title(p["title"]): p for path, p in _widgets(files)}
    used = cloudwatch_eval.widget(widgets["Framebuffer memory used"], points, START, END)
    gpu = FLEET[0]
    expected = sum(reading("DCGM_FI_DEV_FB_USED", gpu, t // 30) for t in range(0, 300, EVERY)) / 5
    assert _close(used["ip-10-0-1-1 nvidia0"][0], expected)
    assert 1000 <= used["ip-10-0-1-1 nvidia0"][0] < 1100  # MiB, not bytes
    share = cloudwatch_eval.widget(widgets["Framebuffer in use"], points, START, END)["Framebuffer in use"]
    start, period = cloudwatch_eval.widget_range(widgets["Framebuffer in use"], START, END)  # a value now
    truth = _ratio_truth((), "avg", period, start=start)[""]
    assert share and set(share) == set(truth)
    assert all(_close(value, truth[bucket]) and value < 2 for bucket, value in share.items())  # a ratio, not percent
    for title in ("Framebuffer in use", "Framebuffer used share by pod"):  # the axis names the ratio, not MiB
        assert widgets[title]["yAxis"]["left"]["label"] == "ratio 0-1"
    assert widgets["Framebuffer memory used"]["yAxis"]["left"]["label"] == "MiB"
    assert widgets["Framebuffer in use"]["annotations"]["horizontal"][1]["value"] == \
        load_project().settings.levels("framebuffer_used_ratio").critical


def test_pods_are_named_by_namespace_and_pod_not_by_owner(addon):
    """Two pods of one StatefulSet share PodName (the owner); each is its own line, by FullPodName."""
    _, files, _ = addon
    gpus = FLEET[:3] + (Gpu("ip-10-0-1-1", 3, "ml", "train-1"),) + FLEET[4:]
    points = datapoints(CLUSTER, START, END - EVERY, gpus)
    widgets = {panel_title(p["title"]): p for path, p in _widgets(files) if "by-pod" in path}
    pods = cloudwatch_eval.widget(widgets["Pods on GPUs"], points, START, END)
    assert {label: series[max(series)] for label, series in pods.items()} == {  # the last 5 minutes
        "Pod ml/train-0": 2.0, "Pod ml/train-1": 1.0, "Pod research/train-0": 1.0, "Pod ml/infer-1": 1.0}
    power = cloudwatch_eval.widget(widgets["Power draw of each pod's GPUs"], points, START, END)
    assert 200 < power["Pod ml/train-0"][0] < 240  # two GPUs of 100-113 W: GPUs, not observations


def _alarms(files):
    return {a["Request"]["AlarmName"].removeprefix(f"gpudash-{CLUSTER}-"): a["Request"]
            for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}


def _firing(request, points, end=END):
    return {key for key, state in cloudwatch_eval.alarm(request, points, end).items() if state == "ALARM"}


def test_alarms_fire_on_the_truth_with_thresholds_in_published_units(addon):
    project, files, points = addon
    alarms = _alarms(files)
    # the data-missing alarm reads the add-on's own capacity metrics (tests/unit/test_container_insights_data_missing.py)
    assert set(alarms) == {"framebuffer-full-warning", "gpu-idle-warning", "gpu-data-missing-critical",
                           "gpu-data-missing-per-gpu-critical",
                           "gpu-temp-critical-critical", "gpu-temp-high-warning"}
    infer = (("Namespace", "ml"), ("FullPodName", "infer-1"))
    # the idle alarm judges each GPU a pod holds: infer-1's GPU 1
    assert _firing(alarms["gpu-idle-warning"], points) == {(*infer, ("GpuDevice", "nvidia1"))}
    # The ratio condition (used over used + free), which the add-on publishes as percent: 0.95 -> 95
    # (its free-MiB `cloudwatch=` form is not published).
    framebuffer = alarms["framebuffer-full-warning"]
    assert framebuffer["Threshold"] == project.settings.levels("framebuffer_used_ratio").critical * 100
    assert _firing(framebuffer, points) == {infer}
    assert _firing(alarms["gpu-temp-high-warning"], points) == set()
    hot = [p for p in points if not (p.metric == "node_gpu_temperature" and ("GpuDevice", "nvidia1") in p.dimensions
                                     and ("NodeName", "ip-10-0-1-2") in p.dimensions)]
    hot += [p.__class__(p.namespace, p.metric, p.dimensions, p.timestamp, 95.0) for p in points
            if p.metric == "node_gpu_temperature" and ("GpuDevice", "nvidia1") in p.dimensions
            and ("NodeName", "ip-10-0-1-2") in p.dimensions]
    assert _firing(alarms["gpu-temp-critical-critical"], hot) == {(("NodeName", "ip-10-0-1-2"), ("GpuDevice", "nvidia1"))}


def test_left_out_panels_and_alarms_are_said_not_silent(addon, project_dir):
    config = project_dir(ADDON)
    result = CliRunner().invoke(main, ["generate", "--config", str(config), "--out", str(config.parent / "build")])
    assert result.exit_code == 0, result.output
    assert "alarm 'xid-error' is left out of CloudWatch: the Container Insights add-on does not publish " \
           "DCGM_FI_DEV_XID_ERRORS" in result.output
    assert "panel 'Memory temperature'" in result.output
    assert "gpu-data-missing" not in result.output  # the add-on's GPU capacity tells silence from a node group at zero
    notes = [f for f in lint_project(load_project(config)) if f.rule == "CW013"]
    assert {f.message.split(" is left out")[0] for f in notes} >= {"alarm 'pcie-replays'",
                                                                   "panel 'SM clock' (dashboards/gpu_overview.py)"}
    body = json.loads(json.loads(addon[1][f"cloudwatch/dashboards/gpudash-{CLUSTER}-health.json"])["DashboardBody"])
    assert "Last XID error code (the Container Insights add-on does not publish DCGM_FI_DEV_XID_ERRORS)" in \
        body["widgets"][0]["properties"]["markdown"]


def test_the_same_definitions_render_both_ways(addon):
    """Grafana and the Prometheus artifacts do not change, but for the rules whose CloudWatch condition the
    source decides (both forms of a rule fire on one situation); CloudWatch keeps every panel and alarm the
    add-on can feed, under the same titles and names."""
    import yaml

    project, files, _ = addon
    agent_files = encode(build(load_project()))
    rules = ("prometheus/rules.yaml", "k8s/prometheusrule.yaml")
    for path in agent_files:
        if path in rules:
            continue
        if path.startswith(("grafana/", "prometheus/")) or path == "k8s/servicemonitor.yaml":
            assert files[path] == agent_files[path], path

    def alerts(text):  # and the counters' recordings (the same either way)
        return {r.get("alert") or r["record"]: r for g in yaml.safe_load(text)["groups"] for r in g["rules"]}

    addon_rules, agent_rules = alerts(files[rules[0]]), alerts(agent_files[rules[0]])
    assert {name for name in agent_rules if addon_rules[name] != agent_rules[name]} == {"GpudashFramebufferFull"}
    assert "DCGM_FI_DEV_FB_FREE" in addon_rules["GpudashFramebufferFull"]["expr"]  # used / (used + free)
    assert " > bool 0.95)" in addon_rules["GpudashFramebufferFull"]["expr"]
    assert " < bool 1024)" in agent_rules["GpudashFramebufferFull"]["expr"]
    assert {p for p in files if p.startswith("cloudwatch/dashboards/")} == \
        {p for p in agent_files if p.startswith("cloudwatch/dashboards/")}
    addon_titles = {panel_title(p["title"]) for _, p in _widgets(files)}
    agent_titles = {panel_title(p["title"]) for _, p in _widgets(agent_files)}
    # The add-on publishes framebuffer use as a ratio, which the Prometheus -> EMF path cannot compute.
    ratios = {"Framebuffer used share by pod", "Framebuffer in use"}
    assert ratios <= addon_titles and not ratios & agent_titles
    assert addon_titles - ratios < agent_titles
    assert {"GPU utilization by pod", "GPU temperature", "Tensor core activity by pod"} <= addon_titles
    # the data-missing rule's second alarm is per GPU on the add-on (its DCGM data), per node on the agent (up)
    assert set(_alarms(files)) < set(_alarms(agent_files)) | {"framebuffer-full-warning",
                                                              "gpu-data-missing-per-gpu-critical"}


def test_addon_configuration_replaces_the_agent_configmaps(addon):
    _, files, _ = addon
    assert not [p for p in files if p.startswith("k8s/cwagent-prometheus-config")]
    values = json.loads(files["cloudwatch/container-insights-addon.json"])
    kubernetes = values["agent"]["config"]["logs"]["metrics_collected"]["kubernetes"]
    # the intervals the data-missing alarm counts are written, so that a configuration they are merged into keeps them
    assert kubernetes == {"enhanced_container_insights": True, "accelerated_compute_metrics": True,
                          "metrics_collection_interval": 60, "accelerated_compute_gpu_metrics_collection_interval": 60}
    template = json.loads(files[f"cloudformation/gpudash-cluster-{CLUSTER}.json"])
    assert not [r for r in template["Resources"].values() if r["Type"] == "AWS::Logs::LogGroup"]  # no agent logs
    default = encode(build(load_project()))
    assert "cloudwatch/container-insights-addon.json" not in default
    assert [r for r in json.loads(default[f"cloudformation/gpudash-cluster-{CLUSTER}.json"])["Resources"].values()
            if r["Type"] == "AWS::Logs::LogGroup"]
    assert f"k8s/cwagent-prometheus-config-{CLUSTER}.yaml" in default


@pytest.mark.parametrize("mapping", MAPPINGS, ids=lambda m: m.field)
def test_each_mapping_reads_back_the_dcgm_value(mapping, project_dir):
    """Per field and level: the widget shows the DCGM reading in the field's own unit (bytes -> MiB, percent
    -> ratio divided back), per GPU, per pod and for the fleet."""
    definition = f'''
from generator.model import Dashboard, Panel, Query, Row

def dashboards(ctx):
    yield Dashboard(id="one", title="One", rows=[Row("r", [
        Panel("per gpu", Query("{mapping.field}", "avg", ("node", "gpu"))),
        Panel("per pod", Query("{mapping.field}", "max", ("pod",))),
        Panel("per container", Query("{mapping.field}", "min", ("namespace", "pod", "container"))),
        Panel("fleet", Query("{mapping.field}", "avg"))])])
'''
    csv = "\n".join(f"{m.field}, gauge, {m.field} reading." for m in MAPPINGS) + "\n"
    project = load_project(project_dir(ADDON + "alarms: {}\n", {"one.py": definition}, csv))
    files = encode(build(project))
    points = datapoints(CLUSTER, 0, 240)
    widgets = {panel_title(p["title"]): p for _, p in _widgets(files)}
    assert set(widgets) == {"per gpu", "per pod", "per container", "fleet"}

    def readings(gpus):
        return [reading(mapping.field, g, t // 30) for g in gpus for t in range(0, 300, EVERY)]

    gpu = cloudwatch_eval.widget(widgets["per gpu"], points, 0, 300)
    assert _close(gpu["ip-10-0-1-2 nvidia1"][0], sum(readings([FLEET[5]])) / 5)
    pod = cloudwatch_eval.widget(widgets["per pod"], points, 0, 300)
    assert _close(pod["Pod ml/train-0"][0], max(readings(FLEET[:2])))
    container = cloudwatch_eval.widget(widgets["per container"], points, 0, 300)
    assert _close(container["ml train-0 main"][0], min(readings(FLEET[:2])))
    fleet = cloudwatch_eval.widget(widgets["fleet"], points, 0, 300)
    assert _close(fleet["fleet"][0], sum(readings(FLEET)) / len(readings(FLEET)))
    for properties in widgets.values():
        metric = re.search(r'SELECT \w+\("(\w+)"\)', properties["metrics"][0][0]["expression"])[1]
        assert metric.endswith(mapping.suffix)


def test_lint_proves_each_query_reads_a_published_dimension_set(addon):
    project, _, _ = addon
    subject = lint_input(project)
    assert subject.agent(None) is None and subject.agent_config(None) is None  # no agent ConfigMaps: none to read
    assert [f for f in lint_project(project) if f.severity == "error"] == []
    published = published_sets()
    for item in subject.alarms:
        for query in item.request["Metrics"]:
            if "MetricStat" in query:  # the data-missing alarm: static metrics of the cluster
                stat = query["MetricStat"]["Metric"]
                assert tuple(d["Name"] for d in stat["Dimensions"]) in published[stat["MetricName"]]
                continue
            if not query["Expression"].startswith("SELECT"):
                continue
            metric = re.search(r'SELECT \w+\("(\w+)"\)', query["Expression"])[1]
            schema = re.search(r'SCHEMA\("ContainerInsights", (.*?)\)', query["Expression"])[1]
            assert tuple(schema.replace('"', "").split(", ")) in published[metric]
    # The set the issue text suggested for pods ([..., PodName]) names the owner, not the pod: a query on
    # it, or on a set the add-on does not publish for the metric, is an error.
    from generator.lint.cloudwatch_rules import declared_shape

    bad = copy.deepcopy(subject.alarms)
    bad[0].request["Metrics"][0]["Expression"] = (
        'SELECT MAX("pod_gpu_memory_utilization") FROM SCHEMA("ContainerInsights", "ClusterName", "NodeName") '
        'GROUP BY "NodeName" ORDER BY MAX() DESC')
    findings = list(declared_shape(lint_input(project, subject.artifacts, cloudwatch_dashboards=(), alarms=tuple(bad))))
    assert [f.rule for f in findings] == ["CW008"]
    assert "no such dimension set (pod_gpu_memory_utilization has [ClusterName]" in findings[0].message
    # a static metric the add-on does not publish with that set (node_gpu_limit per GPU device)
    bad = copy.deepcopy(subject.alarms)
    (missing,) = [item for item in bad if item.request["AlarmName"].endswith("gpu-data-missing-critical")]
    missing.request["Metrics"][1]["MetricStat"]["Metric"]["Dimensions"].append({"Name": "GpuDevice", "Value": "nvidia0"})
    findings = list(declared_shape(lint_input(project, subject.artifacts, cloudwatch_dashboards=(), alarms=tuple(bad))))
    assert [(f.rule, f.message) for f in findings] == [
        ("CW008", "node_gpu_limit [ClusterName, GpuDevice]: the add-on publishes no such dimension set")]


def test_lint_judges_grafana_labels_by_the_scrape_job_of_the_set_not_a_fresh_one(addon):
    """With the add-on there are no agent ConfigMaps: the Prometheus job lint reads is the set's (what a build
    ships, `lint --from`), so a job that drops the GPU index label is caught."""
    from dataclasses import replace

    from generator.lint.runner import lint

    project, _, _ = addon
    artifacts = build(project)
    assert [f for f in lint(project, artifacts) if f.rule == "PR001"] == []
    values = copy.deepcopy(artifacts.additional_scrape_configs)
    job = values["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"][0]
    job.setdefault("metric_relabel_configs", []).append({"action": "labeldrop", "regex": "gpu"})
    findings = [f for f in lint(project, replace(artifacts, additional_scrape_configs=values)) if f.rule == "PR001"]
    assert findings and all("label 'gpu' is not on the series" in f.message for f in findings)


def test_static_per_pod_alarms_are_refused_with_a_reason(project_dir):
    project = load_project(project_dir(ADDON + "alarms:\n  per_pod: static\n  static_pods: [ml/infer-1]\n"))
    with pytest.raises(InputError, match="per_pod: static"):
        encode(build(project))


RATIO_ALARM = """
from generator.model import Alarm, Condition, Query

def alarms(ctx):
    used, free = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"
    return [Alarm("fb-share", "Framebuffer share high",
                  Condition(Query(used, "max", ("pod",), over=(used, free)), ">", 0.95),
                  cloudwatch=Condition(Query(free, "min", ("pod",)), "<", 1024),
                  severity="warning", description="d", runbook="r")]
"""


def test_an_alarm_on_the_used_share_reads_the_published_percent(project_dir):
    """The add-on publishes FB_USED / (FB_USED + FB_FREE) x 100: the ratio condition is used (its CloudWatch-only
    free-MiB form is not published), with the threshold in percent."""
    config = project_dir(ADDON)
    (config.parent / "alarms").mkdir()
    (config.parent / "alarms" / "share.py").write_text(RATIO_ALARM)
    config.write_text(config.read_text() + "definitions:\n  alarms: [alarms]\n")
    files = encode(build(load_project(config), grafana=False))
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    assert request["Threshold"] == 95.0
    assert request["Metrics"][0]["Expression"].startswith('SELECT MAX("pod_gpu_memory_utilization")')
    points = datapoints(CLUSTER, START, END - EVERY)
    assert _firing(request, points) == {(("Namespace", "ml"), ("FullPodName", "infer-1"))}


def test_cost_prices_the_addon_per_observation_and_compares_both_sources(addon, cli, project_dir):
    from generator.cost import Fleet, estimates, load_prices

    project, _, _ = addon
    prices = load_prices()
    rate = prices["rates"]["container_insights_observation_per_million"]
    assert rate["uncertain"] and rate["source"] and rate["as_of"]
    result = estimates(project, Fleet(clusters=1, pods=100, churn=0, gpus=200), prices)
    (observations,) = [line for line in result["group_by"]["lines"] if "observations" in line["item"]]
    # A month of one-minute collections; 7 metrics; 3 node sets per GPU, 5 pod sets (no Service) + 4 container
    # sets per GPU a pod holds.
    expected = 730 * 60 * 7 * (200 * 3 + 100 * (5 + 4))
    assert observations["quantity"] == pytest.approx(expected / 1e6)
    assert observations["monthly"] == pytest.approx(expected / 1e6 * rate["price"])
    assert not any("custom metrics" in line["item"] or "EMF" in line["item"] for line in result["group_by"]["lines"])
    assert result["static"] is None
    assert set(result["sources"]) == {"prometheus-emf", "container-insights"}
    assert result["sources"]["container-insights"]["total"] == result["group_by"]["total"]
    emf = result["sources"]["prometheus-emf"]
    assert any(line["item"] == "custom metrics" for line in emf["lines"])
    # Both per-pod rules run on the add-on (the framebuffer rule on the published used share).
    (per_pod,) = [line for line in result["group_by"]["lines"] if line["item"].startswith("per-pod alarms")]
    assert per_pod["basis"].startswith("2 rules x 1 clusters")
    code, stdout, _ = cli("cost", "--config", str(project_dir(ADDON)), "--pods", "100", "--gpus", "200")
    assert code == 0
    assert re.search(r"CloudWatch sources for this fleet \(GROUP BY alarms\): prometheus-emf \$[\d,.]+ a month; "
                     r"container-insights \$[\d,.]+ a month \(configured\)", stdout)
    assert "container_insights_observation_per_million" in stdout  # listed among the uncertain rates

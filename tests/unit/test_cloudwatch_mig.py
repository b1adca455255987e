"""MIG and time-sliced GPUs on CloudWatch: every widget and alarm shows the truth, or says how it differs.

The mixed fleet (tests/support/mixed_fleet.py: whole GPUs, two A100s split into MIG instances whose
device fields repeat on every instance, a GPU two pods share by time-slicing, idle GPUs, "not
supported" readings) is served as the exporters write it, through the model of the CloudWatch agent
driven by the *generated* agent config and scrape job; the *generated* widgets and alarms are
evaluated with Metrics Insights' documented semantics and compared with the truth computed from the
fleet's facts (the truth the Grafana side is held to in test_fleet_truth).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
import yaml

from generator.render.cloudwatch import panel_title
from generator.artifacts import build
from generator.model import Query
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import close, header as _header, panel, said as _said, widgets
from tests.support.dcgm_fleet import target_labels
from tests.support.mig_variant import (AGENT_FILE, END, START, STEP, VARIANT, firing_contributors, variant_datapoints,
                                       variant_project)
from tests.support.mixed_fleet import COUNTERS, DEVICE, FIELDS, FLEET, INSTANCE_AVG, INSTANCE_SUM, Instance, truth

NAMES = {node.name: node.name for node in FLEET}
STAND_IN = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"  # what MIG instances report instead of GPU utilization
FACTS = INSTANCE_SUM | INSTANCE_AVG


@pytest.fixture(scope="module", params=["", "agent:\n  pipeline: classic\n"], ids=["otel", "classic"])
def mixed(tmp_path_factory, request):
    """The build and what CloudWatch holds, through either of the agent's pipelines."""
    project = variant_project(tmp_path_factory.mktemp("mig"), request.param)
    files = encode(build(project))
    return project, files, variant_datapoints(files)


DEVICE_COUNTERS = {metric: DEVICE[metric] for metric in COUNTERS}  # per second, a fact of the GPU


def _per_instance(metric: str, fleet=VARIANT, copies: bool = False) -> dict[str, float]:
    """A field of MIG instances, per GPU instance (a whole GPU is one; pods sharing it count it once). A device
    counter's rate repeats on each instance of its GPU; with `copies` (agent.pipeline: classic) it reads once per
    series the exporter writes of the instance: once per pod sharing it by time-slicing where the exporter runs
    with KUBERNETES_VIRTUAL_GPUS, once (under one of the pods) without it, and not at all where that pod changes at
    every scrape (no series spans two scrapes: `Node.moves`); a GPU whose counter reads "not supported" has no line."""
    if metric in DEVICE_COUNTERS:
        return {f"{node.name} GPU {gpu.index} MIG {instance.id or 'none'}":
                getattr(gpu, DEVICE_COUNTERS[metric]) * (max(1, len(node.labelled(instance, 0))) if copies else 1)
                for node in fleet for gpu in node.gpus for instance in gpu.instances
                if getattr(gpu, DEVICE_COUNTERS[metric]) is not None
                and not (copies and node.moves == 1 and len(instance.pods()) > 1)}
    return {f"{node.name} GPU {gpu.index} MIG {instance.id or 'none'}": getattr(instance, FACTS[metric])
            for node in fleet for gpu in node.gpus for instance in gpu.instances}


def _expected(query, lines: set[str], header: str, title: str) -> dict[str, float]:
    """The truth of a widget's query; where the header says the lines differ from the title, the truth of
    what it says they are."""
    if "mig_instance" in query.by:  # MIG instances alone, named with their profile
        return truth(query, NAMES, fleet=VARIANT)
    if any(" MIG " in line for line in lines):
        assert _said(header, title, "one line per GPU instance")
        # classic reads each series of a device counter: the time-sliced GPU's exporter (no KUBERNETES_VIRTUAL_GPUS,
        # as exporter.virtual_gpus says) writes it once, so the header says no copies, and what a series change loses
        copies = query.metric in DEVICE_COUNTERS and "agent.pipeline: classic" in header
        assert not _said(header, title, "a GPU shared by time-slicing or MPS reads its increase once per pod")
        assert _said(header, title, "the increase between two scrapes that no one series of a GPU spans (the "
                     "exporter names a GPU pods share by time-slicing or MPS under one of them") == copies
        assert ("(none of the GPU's increase where the pod named changes at every scrape)" in header) == copies
        return _per_instance(query.metric, copies=copies)
    collected = frozenset(FIELDS)
    if query.metric == "DCGM_FI_DEV_GPU_UTIL" and _said(header, title, "GPUs split into MIG instances do not report "
                                                              "it and are left out"):
        collected -= {STAND_IN}  # the truth without the stand-in: MIG GPUs give no utilization
    elif query.metric == "DCGM_FI_DEV_GPU_UTIL":  # a GPU's reading once, a MIG GPU's by its stand-in (OTel only)
        assert "agent.pipeline: classic" not in header
    return _as_said(truth(query, NAMES, collected=collected, fleet=VARIANT), query, header, title)


NAMED_IN_TURN = ("a pod holding a GPU that pods share by time-slicing or MPS, which the exporter names under one of "
                 "them at a time (without KUBERNETES_VIRTUAL_GPUS), ")
SHARE_SAID = NAMED_IN_TURN + "reads the share of the period's scrapes it was named at"
LOSS_SAID = NAMED_IN_TURN + ("reads no increase across the scrapes it was not named at on agent.pipeline: classic "
                             "(none where the name changes at every scrape)")


def _as_said(expected: dict[str, float], query, header: str, title: str) -> dict[str, float]:
    """Per pod, the pods of the time-sliced GPU whose exporter names another of them at every scrape
    (gpu-node-ts: ts-0 and ts-1 in turn). The truth is the GPU's value under each of them (the OTel pipeline
    reads it: the mean of each pod's totals at the scrapes that name it). agent.pipeline: classic, as the header
    says, reads a pod's sum or count as the share of the period's scrapes that named it (half of the GPU), and a
    pod's counter as no increase at all (the name changes at every scrape)."""
    if "pod" not in query.by:
        return expected
    shared = {f"Pod {ns}/{pod}": len(gpu.holders()) for node in VARIANT if node.moves for gpu in node.gpus
              for ns, pod in gpu.holders()}
    assert shared == {"Pod team-d/ts-0": 2, "Pod team-d/ts-1": 2}  # each holds this GPU alone
    if _said(header, title, LOSS_SAID):
        return {k: v for k, v in expected.items() if k not in shared}
    if _said(header, title, SHARE_SAID):
        return {k: v / shared[k] if k in shared else v for k, v in expected.items()}
    return expected


def test_every_widget_shows_the_truth_on_mig_and_time_sliced_gpus(mixed):
    project, files, datapoints = mixed
    checked = 0
    for path, properties in widgets(files):
        query = panel(project, path, panel_title(properties["title"]), "gpu-cluster").queries[0]
        now = END if panel_title(properties["title"]) == "Pods on GPUs" else None  # a table of now, drawn at END
        shown = {label: series for label, series in cloudwatch_eval.widget(properties, datapoints, START, END,
                                                                           now=now).items()
                 if series}  # a line without a datapoint is no line
        header = _header(files, path)
        expected = {(label or panel_title(properties["title"])): value
                    for label, value in _expected(query, set(shown), header, panel_title(properties["title"])).items()}
        if query.metric == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" and "gpu-node-c GPU 0 MIG none" in shown:
            # the JSON path publishes node c's "not supported" counter: its deltas are 0, which the header says
            assert project.settings.agent.pipeline == "classic" and "A counter stuck on the blank reads 0" in header
            assert set(shown.pop("gpu-node-c GPU 0 MIG none").values()) == {0.0}
        blank = [label for label, series in shown.items() if label not in expected and min(series.values()) >= 1e13]
        if blank:  # the JSON path publishes a field a GPU does not support: a per-GPU line shows it, as the header says
            assert project.settings.agent.pipeline == "classic" and _said(header, panel_title(properties["title"]),
                                                                           "a GPU's blank reading")
            for label in blank:
                shown.pop(label)
        assert set(shown) == set(expected), (path, panel_title(properties["title"]))
        for label, value in expected.items():
            wrong = {t: v for t, v in shown[label].items() if not close(v, value)}
            start, period = cloudwatch_eval.widget_range(properties, START, END)
            assert not wrong and len(shown[label]) == (END - start) // period, \
                (panel_title(properties["title"]), label, wrong, value)
        checked += 1
    assert checked >= 20


def test_the_figures_that_mig_changes(mixed):
    """Written out: a MIG GPU counts once, its temperature weighs once in the fleet's mean, its framebuffer
    shows per instance (19,600 and 5,000 MiB, not their mean 12,300), the time-sliced GPU once (not twice)."""
    _, files, datapoints = mixed
    shown = {panel_title(p["title"]): cloudwatch_eval.widget(p, datapoints, START, END) for path, p in widgets(files)
             if "overview" in path}
    assert set(shown["GPUs reporting"]["GPUs reporting"].values()) == {11.0}
    temperatures = [gpu.temp for node in VARIANT for gpu in node.gpus]
    mean = sum(temperatures) / len(temperatures)
    assert all(close(v, mean) for v in shown["Average GPU temperature"]["Average GPU temperature"].values())
    memory = shown["Framebuffer memory used"]
    assert memory["gpu-node-mig GPU 0 MIG 1"][0] == 19600 and memory["gpu-node-mig GPU 0 MIG 2"][0] == 5000
    assert memory["gpu-node-ts GPU 0 MIG none"][0] == 12000 and memory["gpu-node-a GPU 0 MIG none"][0] == 9000


# What each rule's Prometheus twin names on VARIANT, written out from the fleet's facts (thresholds: the defaults).
FIRING = {
    # the last XID code per GPU > 0: node b's GPU reported 43
    "xid-error": {"gpu-node-b GPU 0"},
    # the hottest reading per GPU > 80 °C: node a's GPU 0 at 84, the MIG node's GPU 1 at 91 (once, though its two
    # instances repeat it); > 87 °C: that MIG GPU alone
    "gpu-temp-high": {"gpu-node-a GPU 0", "gpu-node-mig GPU 1"},
    "gpu-temp-critical": {"gpu-node-mig GPU 1"},
    # free framebuffer < 1,024 MiB in a pod's fullest instance: mig-a's 400 MiB (mig-b's instances hold 15,000
    # and 12,000; the time-sliced GPU's 12,000 is one GPU)
    "framebuffer-full": {"Pod team-a/mig-a"},
    # a pod's mean utilization < 5 %: infer-1's whole GPU at 2 %; mig-idle's instance at 1 % engine activity; the
    # time-sliced GPU at 3 %, under ts-0 and ts-1 in turn: each pod's readings are the idle GPU's (mig-b's two
    # instances at 40 % and 60 %, mig-a's at 80 %: not idle; the GPU no pod holds: no pod)
    "gpu-idle": {"Pod team-a/infer-1", "Pod team-c/mig-idle", "Pod team-d/ts-0", "Pod team-d/ts-1"},
    # PCIe replays per 5 minutes > 50: node a's GPU 0 at 50 per second; the MIG GPU's 0.1 per second is 30 per
    # 5 minutes (a sum over its two instances' repeated deltas would read 60); node c's counter is not supported
    "pcie-replays": {"gpu-node-a GPU 0"},
}


def test_every_alarm_fires_as_its_prometheus_twin_on_mig_and_time_sliced_gpus(mixed):
    """Each rule's CloudWatch alarms (with the idle rule's MIG alarm) fire for exactly what its Prometheus twin
    names on the fleet: the idle rule takes graphics engine activity on MIG instances (x 100, a percent),
    device fields count once per GPU."""
    project, files, datapoints = mixed
    requests = json.loads(files["cloudwatch/alarms.json"])["alarms"]
    fired_by_rule = {}
    for alarm in project.alarms:
        if alarm.absent or alarm.stopped:  # judged on CloudWatch apart / a Prometheus rule alone (lint AL027)
            continue
        mine = [r["Request"] for r in requests
                if {"Key": "gpudash:rule", "Value": alarm.id} in r["Request"]["Tags"]]
        fired_by_rule[alarm.id] = firing_contributors(mine, datapoints)
    assert fired_by_rule == FIRING


def test_the_idle_rule_watches_mig_pods_in_a_second_alarm_of_the_same_meaning(mixed):
    project, files, _ = mixed
    requests = {r["Request"]["AlarmName"]: r["Request"] for r in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    whole, mig = requests["gpudash-gpu-cluster-gpu-idle-warning"], requests["gpudash-gpu-cluster-gpu-idle-mig-warning"]
    percent = project.settings.threshold("idle_gpu_util_percent")
    if project.settings.agent.pipeline == "otel":  # both read the unused share above the whole less the level
        assert whole["Threshold"] == 100 - percent and mig["Threshold"] == 1 - percent / 100  # a ratio on MIG
        assert {r["ComparisonOperator"] for r in (whole, mig)} == {"GreaterThanThreshold"}
        assert all(r["Metrics"][0]["Expression"].endswith('"share") WHERE "ClusterName" = \'gpu-cluster\' GROUP BY '
                                                          + r["Metrics"][0]["Expression"].split(" GROUP BY ")[1])
                   and r["Metrics"][0]["Expression"].endswith("ORDER BY SUM() DESC") for r in (whole, mig))
    else:
        assert whole["Threshold"] == percent and mig["Threshold"] == percent / 100  # a ratio on MIG instances
    assert f'SELECT AVG("{STAND_IN}")' in mig["Metrics"][0]["Expression"]
    assert '"GPU_I_PROFILE"' in mig["Metrics"][0]["Expression"]  # a set only MIG instances publish
    assert mig["Tags"] == whole["Tags"]  # one rule


def test_mig_instances_and_whole_gpus_publish_one_per_instance_set(mixed):
    """The agent emits a set only for samples that carry every dimension: the scrape job gives whole GPUs
    GPU_I_ID "none", so framebuffer per instance covers every GPU; GPU_I_PROFILE stays MIG's own."""
    _, files, datapoints = mixed
    framebuffer = {p.dims().get("GPU_I_ID") for p in datapoints
                   if p.metric == "DCGM_FI_DEV_FB_USED" and "GPU_I_ID" in p.dims()}
    assert framebuffer == {"1", "2", "none"}
    profiles = {(p.dims()["namespace"], p.dims()["pod"]) for p in datapoints
                if p.metric == STAND_IN and "GPU_I_PROFILE" in p.dims() and "pod" in p.dims()}
    assert profiles == {("team-a", "mig-a"), ("team-c", "mig-b"), ("team-c", "mig-idle")}


COMBINATIONS = '''
from generator.model import Dashboard, Panel, Query, Row

FIELDS = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
GROUPS = ((), ("pod",), ("node", "gpu"))


def dashboards(ctx):
    panels = [Panel(f"{metric} {aggregation} by {'+'.join(by) or 'all'}", Query(metric, aggregation, by),
                    description="every combination")
              for metric in FIELDS for aggregation in ("avg", "sum", "max", "min", "count") for by in GROUPS]
    yield Dashboard(id="combos", title="Combinations", rows=[Row("all", panels)])
'''


def test_every_combination_on_mig_is_true_or_says_how_it_differs(tmp_path):
    """Any aggregation of a device field, an instance field that adds up and one that averages, per pod, per
    GPU or over the cluster: the truth, or lines the header names for what they are, or left out and named."""
    project = variant_project(tmp_path, "cloudwatch:\n  top_gpus: 500\n  top_pods: 500\n", {"combos.py": COMBINATIONS})
    files = encode(build(project))
    path = "cloudwatch/dashboards/gpudash-gpu-cluster-combos.json"
    header = _header(files, path)
    shown = {panel_title(p["title"]): p for where, p in widgets(files) if where == path}
    datapoints = variant_datapoints(files, only=shown.values())
    (dashboard,) = [d for d in project.dashboards if d.id == "combos"]
    counts = {"true": 0, "left out": 0}
    for item in dashboard.panels():
        query = item.queries[0]
        if item.title not in shown:
            assert f"{item.title} (" in header
            counts["left out"] += 1
            continue
        lines = {k: s for k, s in cloudwatch_eval.widget(shown[item.title], datapoints, START, END).items() if s}
        expected = {(k or item.title): v for k, v in _expected(query, set(lines), header, item.title).items()}
        assert set(lines) == set(expected), item.title
        for label, value in expected.items():
            assert all(close(v, value) for v in lines[label].values()), (item.title, label, lines[label], value)
        counts["true"] += 1
    # None left out: the mean, max or min over GPUs of framebuffer (a MIG GPU's instances add up) and the max or min
    # over GPUs of engine activity (a MIG GPU's is the mean of its instances) were, and read each GPU's reading once
    # now, its instances combined at the agent (tests/unit/test_dashboard_mig_instances_once.py).
    assert counts == {"true": 60, "left out": 0}


def test_truth_of_the_fleet_total(tmp_path):
    """Framebuffer over the cluster: every instance once, the time-sliced GPU once."""
    expected = truth(Query("DCGM_FI_DEV_FB_USED", "sum"), NAMES, fleet=VARIANT)[""]
    assert expected == sum(_per_instance("DCGM_FI_DEV_FB_USED").values()) == 143600


def test_a_pod_on_two_instances_of_one_gpu_is_said_to_count_it_twice(mixed):
    """What CloudWatch cannot tell apart, the header says: a pod's series are one per MIG instance it holds,
    so on agent.pipeline: classic a pod on two instances of one GPU counts that GPU twice where Grafana counts it
    once. The OTel pipeline counts the pod's GPUs at the agent, each once (test_cloudwatch_pod_totals.py)."""
    project, files, _ = mixed
    (node,) = [n for n in VARIANT if n.name == "gpu-node-mig"]
    both = replace(node.gpus[1], instances=tuple(replace(i, pod=("team-g", "wide")) for i in node.gpus[1].instances))
    fleet = (replace(node, gpus=(both,)),)
    (properties,) = [p for path, p in widgets(files) if panel_title(p["title"]) == "Pods on GPUs"]
    shown = cloudwatch_eval.widget(properties, variant_datapoints(files, fleet, [properties]), START, END, now=END)
    assert truth(Query("DCGM_FI_DEV_GPU_TEMP", "count", ("namespace", "pod")), NAMES, fleet=fleet) == \
        {"Pod team-g/wide": 1}
    said = _said(_header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"), "Pods on GPUs",
                 "a pod holding several MIG instances of one GPU weighs that GPU once per instance")
    if project.settings.agent.pipeline == "classic":
        assert set(shown["Pod team-g/wide"].values()) == {2.0} and said
    else:
        assert set(shown["Pod team-g/wide"].values()) == {1.0} and not said


UTIL_PER_GPU = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("busiest", "GPU saturated", Condition(Query("DCGM_FI_DEV_GPU_UTIL", "max", ("node", "gpu")), ">", 95))
'''


def test_alarms_that_cannot_watch_mig_gpus_on_cloudwatch_say_so(tmp_path):
    """The busiest-GPU rule (a max per GPU of a field MIG does not report) has no stand-in alarm: a MIG GPU's
    activity is the mean of its instances, which no GROUP BY alarm over instances takes the max of. On the OTel
    pipeline it reads each GPU's reading once, a MIG GPU's its instances' mean (nothing to note); on
    agent.pipeline: classic it judges the whole GPUs and a note (lint AL012) says so. Static per-pod alarms name no
    MIG instance's profile: the idle rule's listed pod has a second alarm on the MIG instances it holds (it judged
    whole GPUs only, and a note said so). Generate still writes them, and a note says what they miss."""
    from generator.lint.runner import lint_project

    for pipeline in ("otel", "classic"):
        folder = tmp_path / pipeline
        folder.mkdir()
        variant_project(folder)  # writes the counters CSV and gpudash.yaml
        (folder / "alarms").mkdir()
        (folder / "alarms" / "busy.py").write_text(UTIL_PER_GPU)
        (folder / "gpudash.yaml").write_text(f"agent:\n  pipeline: {pipeline}\ndefinitions:\n  alarms: [alarms]\n")
        project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
        requests = json.loads(encode(build(project, grafana=False))["cloudwatch/alarms.json"])["alarms"]
        assert [r["Request"]["AlarmName"] for r in requests] == ["gpudash-gpu-cluster-busiest-warning"]
        notes = {f.message for f in lint_project(project) if f.rule == "AL012"}
        # the alarm's own description says it too (an on-call reads it in the console, not lint's notes)
        unseen = "GPUs split into MIG instances are not evaluated" in requests[0]["Request"]["AlarmDescription"]
        if pipeline == "otel":
            assert "readings" in requests[0]["Request"]["Metrics"][0]["Expression"] and not notes and not unseen
            continue
        assert unseen, requests[0]["Request"]["AlarmDescription"]
        assert notes == {"alarm 'busiest' does not evaluate GPUs split into MIG instances on CloudWatch (its "
                         "Prometheus rule does): a GPU split into MIG instances reads their mean "
                         "DCGM_FI_PROF_GR_ENGINE_ACTIVE, which no CloudWatch set holds per GPU on agent.pipeline: "
                         "classic (an alarm over the instances would take the max of instances, not of the GPU's "
                         "mean)"}
    (tmp_path / "static").mkdir()
    static = variant_project(tmp_path / "static", "alarms:\n  per_pod: static\n  static_pods: [team-a/infer-1]\n")
    assert [f for f in lint_project(static) if f.rule == "AL012"] == []
    files = encode(build(static, grafana=False))
    described = {r["Request"]["AlarmName"]: r["Request"]["AlarmDescription"] for r in json.loads(
        files["cloudwatch/alarms.json"])["alarms"] if "idle" in r["Request"]["AlarmName"]}
    assert sorted(described) == ["gpudash-gpu-cluster-gpu-idle-mig-warning-team-a-infer-1",
                                 "gpudash-gpu-cluster-gpu-idle-warning-team-a-infer-1"], described
    assert not any("GPUs split into MIG instances are not evaluated" in d for d in described.values()), described


def test_a_missed_scrape_leaves_a_gpus_counter_rate_exact(mixed):
    """A GPU's counter rate is the SUM of its deltas in the period over the period's length: the growth of a
    missed scrape comes in the next delta, so the period missing a scrape reads the true rate, as every other
    period does (a mean delta per scrape over the interval would read n / (n - 1) of it)."""
    project, files, _ = mixed
    config, job = agent_config(files[AGENT_FILE])
    missed = 3  # the scrape at 90 s on gpu-node-a, in the first period
    scrapes = [Scrape(k * STEP, mixed_fleet.payload(node, k * STEP, STEP), target_labels(job, node.name))
               for k in range(-1, END // STEP) for node in VARIANT if not (k == missed and node.name == "gpu-node-a")]
    datapoints = Agent(config, job).run(scrapes)
    (properties,) = [p for _, p in widgets(files) if panel_title(p["title"]) == "PCIe replays"]
    classic = project.settings.agent.pipeline == "classic"  # OTel: one line per physical GPU
    shown = cloudwatch_eval.widget(properties, datapoints, START, END)[
        "gpu-node-a GPU 0 MIG none" if classic else "gpu-node-a GPU 0"]
    (node,) = [node for node in VARIANT if node.name == "gpu-node-a"]
    truth_per_s = node.gpus[0].replays_per_s
    assert START in shown and all(close(v, truth_per_s) for v in shown.values())


IDLE_MIG_RULE = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpu-idle-mig", "MIG instance hot", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), ">", 85))
'''


def test_a_rule_named_like_another_rules_mig_alarm_is_refused_not_overwritten(tmp_path):
    """The idle rule's second alarm is <rule>-mig: a rule of that id would make a CloudWatch alarm of the same
    name, and PutMetricAlarm would overwrite one rule's alarm with the other's. generate refuses it (exit 2),
    naming both rules."""
    from generator.errors import InputError

    import shutil

    from generator.resources import bundled

    variant_project(tmp_path)  # writes the counters CSV
    shutil.copytree(bundled("alarms"), tmp_path / "alarms")  # the default rules, the idle rule among them
    (tmp_path / "alarms" / "more.py").write_text(IDLE_MIG_RULE)
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  alarms: [alarms]\n")
    project = load_project(tmp_path / "gpudash.yaml", tmp_path / "counters.csv")
    assert {a.id for a in project.alarms} >= {"gpu-idle", "gpu-idle-mig"}
    with pytest.raises(InputError) as caught:
        build(project)
    message = str(caught.value)
    assert "gpudash-gpu-cluster-gpu-idle-mig-warning" in message and "'gpu-idle'" in message \
        and "'gpu-idle-mig'" in message and caught.value.exit_code == 2


INCREASE_PER_GPU = '''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="replays", title="Replays", rows=[Row("all", [Panel(
        "PCIe replays in the range", Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "max", ("node", "gpu"), as_increase=True),
        description="increase per GPU")])])
'''
RESET_AT = 900  # the reset node's exporter restarts its counters right after this scrape


def _counting_fleet():
    """Per scrape (30 s): a whole GPU 5 replays, one cut in seven MIG instances (seven pods) 6, one shared by two
    pods by time-slicing 3, one whose counter restarts from 0 at RESET_AT 4."""
    def gpu(per_scrape, instances):
        return mixed_fleet.Gpu(0, temp=50, power=100, sm_clock=1400, xid=0, energy_mw=100_000,
                               replays_per_s=per_scrape / STEP, memory_temp=50, instances=instances)
    whole = (Instance(fb_used=1000, fb_free=1000, engine=0.5, pod=("team-w", "w")),)
    seven = tuple(Instance(fb_used=1000, fb_free=9000, engine=0.5, pod=("team-m", f"m{i}"), id=str(i),
                           profile="1g.10gb") for i in range(1, 8))
    shared = (Instance(fb_used=1000, fb_free=1000, engine=0.5, pod=("team-t", "t0"), also=(("team-t", "t1"),)),)
    reset = (Instance(fb_used=1000, fb_free=1000, engine=0.5, pod=("team-r", "r"),),)
    return (mixed_fleet.Node("gpu-node-whole", "Hostname", "e-1", (gpu(5, whole),)),
            mixed_fleet.Node("gpu-node-mig7", "Hostname", "e-2", (gpu(6, seven),)),
            mixed_fleet.Node("gpu-node-ts", "Hostname", "e-3", (gpu(3, shared),)),
            mixed_fleet.Node("gpu-node-reset", "Hostname", "e-4", (gpu(4, reset),)))


def _served(node, elapsed: int) -> str:
    """The node's payload; the reset node's PCIe counter counts from 0 again after RESET_AT."""
    text = mixed_fleet.payload(node, elapsed, STEP)
    if node.name != "gpu-node-reset" or elapsed <= RESET_AT:
        return text
    grown = int(node.gpus[0].replays_per_s * (elapsed - RESET_AT))
    return re.sub(r"^(DCGM_FI_DEV_PCIE_REPLAY_COUNTER\{.*\}) \d+ ", rf"\g<1> {grown} ", text, flags=re.M)


@pytest.mark.parametrize("pipeline", ["", "agent:\n  pipeline: classic\n"], ids=["otel", "classic"])
def test_a_gpus_counter_increase_is_exact_with_missed_scrapes_mig_resets_and_any_period(tmp_path, pipeline):
    """The SUM of the agent's deltas per GPU: a delta after a missed scrape covers the gap, so one scrape in ten
    missing on every node reads the true increase (the mean delta x 10 scrapes read 10/9 of it); a counter reset
    is counted from 0, as Prometheus counts it; a range of 5 minutes, 10 minutes or the whole test reads its
    increase. The OTel pipeline merges a device counter's copies over a GPU's MIG instances and pods into one
    series per physical GPU, each read once. agent.pipeline: classic lists it per GPU instance (each of the
    MIG GPU's seven carries its GPU's whole deltas); the time-sliced GPU's exporter (without
    KUBERNETES_VIRTUAL_GPUS) writes it once, under one of its two pods, so both pipelines read its increase once,
    and neither the header nor the alarm says otherwise. The alarm fires where the Prometheus rule does (replays
    per 5 minutes > 50): on classic once per MIG instance of the MIG GPU."""
    classic = "classic" in pipeline
    project = variant_project(tmp_path, pipeline, {"replays.py": INCREASE_PER_GPU})
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    fleet = _counting_fleet()
    # On OTel one scrape in ten fails (an empty scrape: staleness markers, the previous value kept). On classic a
    # failed scrape's increase is lost (test_cloudwatch_exact_rates), so here every scrape answers.
    scrapes = [Scrape(k * STEP, _served(node, k * STEP) if classic or k % 10 != 3 else "",
                      target_labels(job, node.name)) for k in range(-1, END // STEP) for node in fleet]
    datapoints = Agent(config, job).run(scrapes)
    path = "cloudwatch/dashboards/gpudash-gpu-cluster-replays.json"
    (properties,) = [p for where, p in widgets(files) if where == path]
    assert _said(_header(files, path), "PCIe replays in the range", "one line per GPU instance") == classic
    assert not _said(_header(files, path), "PCIe replays in the range",
                     "a GPU shared by time-slicing or MPS reads its increase once per pod")
    # The true increase per scrape of each physical GPU, from the fleet's facts; classic lists a MIG GPU once per
    # instance (each carrying the GPU's whole increase) and a GPU once per series its exporter writes of it (one
    # here); OTel one line per GPU.
    truth_per_scrape = {}
    for node in fleet:
        (gpu,) = node.gpus
        for instance in gpu.instances:
            copies = max(1, len(node.labelled(instance, 0))) if classic else 1
            label = f"{node.name} GPU {gpu.index}" + (f" MIG {instance.id or 'none'}" if classic else "")
            truth_per_scrape[label] = gpu.replays_per_s * STEP * copies
    assert len(truth_per_scrape) == (10 if classic else 4)
    assert properties["setPeriodToTimeRange"] and properties["view"] == "bar"  # the increase over the range
    for span in (300, 600, END - END % 300):
        shown = cloudwatch_eval.widget(properties, datapoints, START, START + span)
        assert set(shown) == set(truth_per_scrape)
        for label, per_scrape in truth_per_scrape.items():
            assert list(shown[label].values()) == [per_scrape * span / STEP], (span, label, shown[label])
    (request,) = [r["Request"] for r in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if {"Key": "gpudash:rule", "Value": "pcie-replays"} in r["Request"]["Tags"]]
    assert request["Threshold"] == 50 and ("GPU_I_ID" in request["Metrics"][0]["Expression"]) == classic
    assert ("listed once per instance" in request["AlarmDescription"]) == classic
    for end in (1200, END):  # a period before the reset and the one after it
        states = cloudwatch_eval.alarm(request, datapoints, end)
        fired = {tuple(sorted(dict(k).items())) for k, state in states.items() if state == "ALARM"}
        if classic:
            assert fired == {(("GPU_I_ID", str(i)), ("gpu", "0"), ("node", "gpu-node-mig7")) for i in range(1, 8)}
        else:
            assert fired == {(("gpu", "0"), ("node", "gpu-node-mig7"))}
    # The Prometheus rule, from the facts: replays per 5 minutes over 50 on the MIG GPU alone (whole: exactly 50).
    per_five_minutes = {node.name: node.gpus[0].replays_per_s * 300 for node in fleet}
    assert {name for name, value in per_five_minutes.items() if value > 50} == {"gpu-node-mig7"}


def test_a_counter_mig_reports_per_instance_is_charted_per_instance_and_not_alarmed_per_gpu():
    """A MIG GPU's increase of a per-instance counter is the sum of its instances': per-GPU lines are the
    instances' own, said as framebuffer's are, and an alarm per GPU is refused; a device counter is read per GPU on
    the OTel pipeline (its merge keeps one series per physical GPU) and per instance on classic, whose instance
    lines each carry the GPU's increase."""
    from generator.catalog import parse_counters
    from generator.cloudwatch_query import Unsupported, plan
    from generator.settings import load_settings

    catalog = parse_counters("DCGM_FI_PROF_SM_CYCLES, counter, made-up per-instance counter.\n"
                             "DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, PCIe replays.\n")
    settings = load_settings(None)
    own = plan(Query("DCGM_FI_PROF_SM_CYCLES", "max", ("node", "gpu"), as_increase=True), catalog, settings, 300)
    assert own.function == "SUM" and own.series == ("node", "gpu", "GPU_I_ID")
    assert any(n.startswith("one line per GPU instance") and "cannot add a MIG GPU's instances" in n for n in own.notes)
    with pytest.raises(Unsupported, match="sum of its instances'"):
        plan(Query("DCGM_FI_PROF_SM_CYCLES", "max", ("node", "gpu"), as_increase=True), catalog, settings, 300,
             alarm=True)
    device = plan(Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "max", ("node", "gpu"), as_increase=True), catalog,
                  settings, 300, alarm=True)
    assert device.function == "SUM" and device.group == ("node", "gpu") and device.divisor == 1  # OTel: per GPU
    from dataclasses import replace
    classic = replace(settings, agent=replace(settings.agent, pipeline="classic"))
    device = plan(Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "max", ("node", "gpu"), as_increase=True), catalog,
                  classic, 300, alarm=True)
    assert device.function == "SUM" and device.group == ("node", "gpu", "GPU_I_ID") and device.divisor == 1


COUNTER_LINES = '''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    panels = [Panel(f"{aggregation} {'increase' if increase else 'rate'}",
                    Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", aggregation, (), as_increase=increase),
                    description="over the cluster")
              for aggregation in ("sum", "avg", "max") for increase in (False, True)]
    yield Dashboard(id="counters", title="Counters", rows=[Row("all", panels)])
'''


def test_counter_lines_over_the_cluster_count_a_mig_gpu_once(tmp_path):
    """A sum, mean or maximum over GPUs of a device counter combines each physical GPU's SUM of deltas: the OTel
    pipeline merges a MIG GPU's copies over its instances (and a time-sliced GPU's over its pods) into one series
    per GPU, so each GPU counts once and the header admits no overcount; the GPU whose counter reads "not
    supported" has none."""
    project = variant_project(tmp_path, "", {"counters.py": COUNTER_LINES})
    files = encode(build(project))
    path = "cloudwatch/dashboards/gpudash-gpu-cluster-counters.json"
    datapoints = variant_datapoints(files, only=[p for where, p in widgets(files) if where == path])
    header = _header(files, path)
    per_gpu = [g.replays_per_s for n in VARIANT for g in n.gpus if g.replays_per_s is not None]  # per second
    assert any(len(g.instances) > 1 for n in VARIANT for g in n.gpus if g.replays_per_s is not None)
    for title, properties in ((panel_title(p["title"]), p) for where, p in widgets(files) if where == path):
        aggregation, kind = title.split()
        value = {"sum": sum, "avg": lambda v: sum(v) / len(v), "max": max}[aggregation](per_gpu)
        start, period = cloudwatch_eval.widget_range(properties, START, END)  # an increase: the whole range
        if kind == "increase":
            value *= period
        (series,) = cloudwatch_eval.widget(properties, datapoints, START, END).values()
        assert len(series) == (END - start) // period
        assert all(close(v, value) for v in series.values()), (title, series, value)
        assert not _said(header, title, "a GPU split into MIG instances counts once per instance"), title


MIG_INSTANCE_COUNTER = '''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="instances", title="Instances", rows=[Row("per instance", [
        Panel("Replays per MIG instance", Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "avg", ("node", "gpu", "mig_instance"))),
    ])])
'''


@pytest.mark.parametrize("pipeline", ["", "agent:\n  pipeline: classic\n"], ids=["otel", "classic"])
def test_a_device_counter_per_mig_instance_is_its_gpus_rate_on_classic_and_left_out_on_otel(tmp_path, pipeline):
    """Per MIG instance a device counter reads its GPU's rate (each instance repeats the GPU's counter). classic
    publishes it per instance, with its profile: each MIG instance's line is its GPU's rate. The OTel pipeline
    publishes it once per physical GPU only, so the panel is left out (the header says it stays on Grafana) and
    the agent declares the counter in no per-MIG-instance set."""
    project = variant_project(tmp_path, pipeline, {"instances.py": MIG_INSTANCE_COUNTER})
    files = encode(build(project))
    path = "cloudwatch/dashboards/gpudash-gpu-cluster-instances.json"
    shown_widgets = [p for where, p in widgets(files) if where == path]
    config = files[AGENT_FILE].decode()
    if not pipeline:
        assert shown_widgets == []
        assert "Replays per MIG instance (" in _header(files, path).split("On Grafana only: ", 1)[1]
        otel = next(yaml.safe_load_all(config))["data"]["gpudash-otel.yaml"]
        declarations = yaml.safe_load(otel)["exporters"]["awsemf/gpudash"]["metric_declarations"]
        assert not [d for d in declarations if "GPU_I_PROFILE" in d["dimensions"][0] and "node" in d["dimensions"][0]
                    and "^DCGM_FI_DEV_PCIE_REPLAY_COUNTER$" in d["metric_name_selectors"]]
        return
    (properties,) = shown_widgets
    query = Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "avg", ("node", "gpu", "mig_instance"))
    expected = truth(query, NAMES, fleet=VARIANT)
    assert len(expected) == 4 and len({v for v in expected.values()}) == 2  # two MIG GPUs, two instances each
    shown = cloudwatch_eval.widget(properties, variant_datapoints(files, only=[properties]), START, END)
    assert set(shown) == set(expected)
    for label, value in expected.items():
        assert shown[label] and all(close(v, value) for v in shown[label].values()), (label, shown[label], value)


ENERGY = "Energy use rate of each pod's GPUs"


def test_a_pod_on_two_instances_of_one_gpu_reads_its_energy_once_on_the_otel_pipeline(mixed):
    """A device counter repeats on each MIG instance of its GPU. The OTel pipeline merges a pod's copies of it per
    physical GPU, as it merges the GPU's own copy, so a pod holding two instances of one GPU reads that GPU's
    energy rate once, as Grafana does (max per GPU, then the sum over the pod's GPUs), and the header does not
    say otherwise; on agent.pipeline: classic each instance's series carries the GPU's deltas, so the pod reads
    it once per instance, which the header says."""
    project, files, _ = mixed
    (node,) = [n for n in VARIANT if n.name == "gpu-node-mig"]
    both = replace(node.gpus[1], instances=tuple(replace(i, pod=("team-g", "wide")) for i in node.gpus[1].instances))
    fleet = (replace(node, gpus=(both,)),)
    (properties,) = [p for path, p in widgets(files) if panel_title(p["title"]) == ENERGY]
    shown = cloudwatch_eval.widget(properties, variant_datapoints(files, fleet, [properties]), START, END)
    rate = both.energy_mw  # mJ/s, a fact of the GPU
    said = _said(_header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"), ENERGY,
                 "a pod holding several MIG instances of one GPU weighs that GPU once per instance")
    values = {round(v, 6) for v in shown["Pod team-g/wide"].values()}
    if project.settings.agent.pipeline == "classic":
        assert values == {len(both.instances) * rate} and said
    else:
        assert values == {rate} and not said


def test_a_pod_named_again_after_awsemf_forgot_its_reading_counts_from_a_baseline(mixed):
    """On the OTel pipeline a pod's counter deltas span the scrapes that name another pod while awsemf keeps the pod's
    last reading (15 to 30 minutes: at alternate scrapes every period reads the GPU's energy rate, 200 J/s, under each
    pod). Named 20 minutes under each pod in turn, a pod can come back after awsemf forgot it (here the sweep, every
    15 minutes from 0, finds its last reading 15 minutes old before it is named again): its first reading is a
    baseline again, as a new pod's is, so the period it comes back in reads the growth after that scrape, 9/10 of the
    rate at 30 s scrapes (180), and nothing of the 20 minutes it was not named; README says so. (agent.pipeline:
    classic reads no increase across scrapes naming another pod: test_every_widget above.)"""
    project, files, _ = mixed
    if project.settings.agent.pipeline == "classic":
        return
    (properties,) = [p for _, p in widgets(files) if panel_title(p["title"]) == ENERGY]
    rates = {}
    for moves in (1, 40):
        fleet = tuple(replace(node, moves=moves) for node in VARIANT if node.moves)  # the time-sliced GPU's node
        shown = cloudwatch_eval.widget(properties, variant_datapoints(files, fleet, [properties]), START, END)
        rates[moves] = {label: {start // 60: round(v) for start, v in series.items()}
                        for label, series in shown.items() if "team-d/" in label}
    rate = next(g.energy_mw for n in VARIANT if n.moves for g in n.gpus)
    assert rates[1] == {f"Pod team-d/ts-{i}": {minute: rate for minute in range(0, 35, 5)} for i in (0, 1)}
    # the scrapes before START named ts-1: ts-0 starts at 0, ts-1 comes back at minute 20
    assert rates[40] == {"Pod team-d/ts-0": {0: rate * 9 / 10, 5: rate, 10: rate, 15: rate},
                         "Pod team-d/ts-1": {20: rate * 9 / 10, 25: rate, 30: rate}}


def test_a_pods_framebuffer_share_says_what_it_averages():
    """A per-pod line of DCGM_FI_DEV_FB_USED_PERCENT is the mean of the shares of the pod's MIG instances (CloudWatch
    holds them as observations of one metric): the widget says so, not only that the GPU weighs once per instance."""
    from generator.catalog import parse_counters
    from generator.cloudwatch_query import plan
    from generator.settings import load_settings

    catalog = parse_counters("DCGM_FI_DEV_FB_USED_PERCENT, gauge, Percentage used of Frame Buffer.\n")
    result = plan(Query("DCGM_FI_DEV_FB_USED_PERCENT", "avg", ("pod",)), catalog, load_settings(None), 300)
    assert any("reads the mean of their shares, not its used over the memory they hold" in n for n in result.notes)

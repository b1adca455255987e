"""A fleet-scope rule per GPU whose `cloudwatch=` condition is per MIG instance, in a Region whose clusters differ in
exporter.mig.

A fleet-scope rule is made once per Region. With `split` and `plain` (exporter.mig: none) in us-east-1 its one alarm
read the `cloudwatch=` condition, the MIG-only set [ClusterName, node, gpu, GPU_I_ID, GPU_I_PROFILE], which holds no
whole GPU: plain's gpu-node-b GPU 0 (40,000 MiB) and ip-10-0-3-7.ec2.internal GPU 0 (30,000), which the Prometheus
fleet rule fires for, were watched by no alarm (lint AL012 said so). One alarm cannot read both forms: a Metrics
Insights alarm runs one query ("Each GetMetricData operation can have only one query", Metrics Insights quotas), and
one query reads one SCHEMA. So the Region's clusters are judged apart (render/alarms._kinds_apart): the alarm of the
clusters whose GPUs may be split keeps the rule's name and its per-MIG-instance condition, less plain's clusters; a
second, `<rule>-whole`, reads the rule's own condition over the clusters saying none, less split's. A Region of one
kind keeps its one alarm.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from generator import cost
from generator.artifacts import build, notes
from generator.cost import Fleet
from generator.lint.runner import lint
from generator.model import Query
from generator.output import encode
from generator.render.fleet_parts import WHERE, said_where
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import scrapes
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.projects import defined_project

WHOLE = mixed_fleet.WHOLE
ALARM = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpu-fb-high", "GPU memory high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu")), ">", 15000), scope="fleet",
                cloudwatch=Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")), ">",
                                     15000))
'''
NO_DASHBOARDS = "def dashboards(ctx):\n    return []\n"
END = 900
LEVEL = 15000
SETTINGS = """clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
"""
SPLIT_ALONE = "clusters:\n  - {name: split, region: us-east-1}\n"
NAMES = ("gpudash-fleet-gpu-fb-high-warning", "gpudash-fleet-gpu-fb-high-whole-warning")


def _built(folder, settings: str):
    project = defined_project(folder, settings, alarms=ALARM, dashboards=NO_DASHBOARDS)
    artifacts = build(project, grafana=False)
    files = encode(artifacts)
    requests = {a["Request"]["AlarmName"]: a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if "gpu-fb-high" in a["Request"]["AlarmName"]}
    return project, artifacts, files, requests


def _points(files, cluster: str, fleet) -> list:
    config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{cluster}.yaml"])
    return Agent(config, job).run(scrapes(job, 30, END, fleet))


def _states(request, points) -> dict[str, str]:
    """{'<cluster> <node> GPU <gpu>[ instance <id>]': state} of the alarm's contributors at END."""
    out = {}
    for key, state in cloudwatch_eval.alarm(request, points, END).items():
        if not key:  # no series: the query read nothing
            continue
        labels = dict(key)
        instance = f" instance {labels['GPU_I_ID']}" if "GPU_I_ID" in labels else ""
        out[f"{labels['ClusterName']} {labels['node']} GPU {labels['gpu']}{instance}"] = state
    return out


@pytest.mark.parametrize("pipeline", ["classic", "otel"])
def test_a_fleet_rule_judges_the_plain_clusters_gpus_on_its_own_condition(tmp_path, pipeline):
    project, artifacts, files, requests = _built(tmp_path, f"agent: {{pipeline: {pipeline}}}\n" + SETTINGS)
    assert sorted(requests) == list(NAMES)
    split_alarm, whole_alarm = (requests[name] for name in NAMES)
    points = _points(files, "split", mixed_fleet.FLEET) + _points(files, "plain", WHOLE)
    # plain: every GPU the Prometheus rule reads is a contributor, in ALARM exactly where the rule fires
    truth = mixed_fleet.truth(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu")),
                              {n.name: n.name for n in WHOLE}, fleet=WHOLE)
    assert {gpu for gpu, value in truth.items() if value > LEVEL} == {
        "gpu-node-b GPU 0", "ip-10-0-3-7.ec2.internal GPU 0"}
    judged = _states(whole_alarm, points)
    assert judged == {f"plain {gpu}": "ALARM" if value > LEVEL else "OK" for gpu, value in truth.items()}, judged
    # split: its MIG instances, each on its own, as before (no contributor of plain)
    instances = {f"split {node.name} GPU {gpu.index} instance {instance.id}": instance.fb_used
                 for node in mixed_fleet.FLEET for gpu in node.gpus for instance in gpu.instances if instance.id}
    judged = _states(split_alarm, points)
    assert judged == {key: "ALARM" if used > LEVEL else "OK" for key, used in instances.items()}, judged
    assert [key for key, state in judged.items() if state == "ALARM"] == ["split gpu-node-mig GPU 0 instance 1"]


@pytest.mark.parametrize("pipeline", ["classic", "otel"])
def test_the_split_clusters_alarm_is_the_one_a_region_of_them_alone_has(tmp_path, pipeline):
    """The split clusters' alarm reads the set of MIG instances alone (GPU_I_PROFILE), which plain's agent publishes
    nothing in: it declares no such set, and the agent emits a set only for a sample carrying each of its dimensions.
    So its query names no cluster: plain's GPUs, whole or (were its settings wrong) split, are never read by it. It
    left plain out by name (`!= 'plain'`), one term per such cluster of the Region towards CloudWatch's 2,048
    characters."""
    (tmp_path / "mixed").mkdir()
    (tmp_path / "alone").mkdir()
    agent = f"agent: {{pipeline: {pipeline}}}\n"
    _, _, files, mixed = _built(tmp_path / "mixed", agent + SETTINGS)
    _, _, alone_files, alone = _built(tmp_path / "alone", agent + SPLIT_ALONE)
    assert list(alone) == [NAMES[0]]  # a Region of one kind: one alarm, its name unchanged
    assert mixed[NAMES[0]]["Metrics"] == alone[NAMES[0]]["Metrics"]
    assert "WHERE" not in mixed[NAMES[0]]["Metrics"][0]["Expression"]
    split = _points(files, "split", mixed_fleet.FLEET)
    # plain's agent, fed its whole GPUs and, as a cluster wrongly saying none would feed it, split GPUs
    plain = _points(files, "plain", WHOLE) + _points(files, "plain", mixed_fleet.FLEET)
    assert not [p for p in plain if "GPU_I_PROFILE" in p.dims()]
    assert any(p.dims().get("node") == "gpu-node-mig" for p in plain)  # the split GPUs' readings are published
    assert cloudwatch_eval.alarm(mixed[NAMES[0]], split + plain, END) == \
        cloudwatch_eval.alarm(mixed[NAMES[0]], split, END)
    assert _states(mixed[NAMES[0]], split + plain) == _states(alone[NAMES[0]], split)


def test_the_whole_gpus_alarm_reads_no_split_cluster_that_publishes_its_set(tmp_path):
    """Were split's agent to publish the per-GPU set too (another alarm or widget reading it), its GPUs there, a MIG
    GPU's instances in one series, are not judged by the rule's own condition: the WHERE leaves split out."""
    _, _, files, requests = _built(tmp_path, SETTINGS)
    whole_alarm = requests[NAMES[1]]
    as_split = [replace(point, dimensions=tuple((name, "split" if name == "ClusterName" else value)
                                                for name, value in point.dimensions))
                for point in _points(files, "plain", mixed_fleet.FLEET)]  # split's GPUs in plain's per-GPU set
    unfiltered = dict(whole_alarm, Metrics=[dict(whole_alarm["Metrics"][0], Expression=whole_alarm["Metrics"][0][
        "Expression"].replace(" WHERE \"ClusterName\" != 'split'", ""))])
    assert any(key.startswith("split ") for key in _states(unfiltered, as_split))  # the points are there to read
    assert _states(whole_alarm, as_split) == {}


def test_agents_cost_and_notes_agree_on_the_two_alarms(tmp_path):
    project, artifacts, files, requests = _built(tmp_path, SETTINGS)
    # each cluster's agent publishes the set the alarm reading it queries, and nothing else
    findings = lint(project, artifacts)
    assert not [f.message for f in findings if f.rule == "AG001"], [f.message for f in findings if f.rule == "AG001"]
    published = {cluster: {tuple(sorted(name for name, _ in point.dimensions))
                           for point in _points(files, cluster, fleet) if point.metric == "DCGM_FI_DEV_FB_USED"}
                 for cluster, fleet in (("split", mixed_fleet.FLEET), ("plain", WHOLE))}
    assert published == {"split": {("ClusterName", "GPU_I_ID", "GPU_I_PROFILE", "gpu", "node")},
                         "plain": {("ClusterName", "gpu", "node")}}, published
    # cost prices the alarms generate makes
    assert cost.estimates(project, Fleet(clusters=2, pods=20, churn=0), None, artifacts)["group_by"]["alarms"] == 2
    said = [n.message for n in notes(project) if "gpu-fb-high" in n.message]
    said += [f.message for f in findings if f.rule == "AL012" and "gpu-fb-high" in f.message]
    # (the split cluster's own whole GPUs are said unread: test_per_mig_instance_condition_leaves_whole_gpus)
    assert said and all("does not evaluate" not in m or "in cluster split" in m for m in said), said
    assert any(f"{NAMES[1]} on the rule's own condition over the GPUs of cluster plain" in m for m in said), said
    # each alarm's description names the clusters it judges and the alarm judging the others
    assert requests[NAMES[0]]["AlarmDescription"].endswith(
        f"Judges the clusters of us-east-1 but those saying exporter.mig: none (plain), which {NAMES[1]} judges.")
    assert requests[NAMES[1]]["AlarmDescription"].endswith(
        f"Judges the clusters of us-east-1 saying exporter.mig: none (plain) on the rule's own condition; {NAMES[0]} "
        f"judges the others.")
    # lint's size note speaks of the clusters each alarm reads
    sizes = [f.message for f in findings if f.rule == "AL021"]
    assert any("every cluster of us-east-1 but plain" in m for m in sizes) and \
        any("every cluster of us-east-1 but split" in m for m in sizes), sizes


def test_a_note_said_of_one_of_the_two_alarms_names_its_clusters_not_the_region(tmp_path):
    """A note said of the split clusters' alarm alone holds for split, not for plain of the same Region: naming the
    Region would say it of plain's alarm too (fleet_parts.said_where)."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    settings = defined_project(tmp_path / "one", SETTINGS, alarms=ALARM, dashboards=NO_DASHBOARDS).settings
    split, plain = settings.clusters
    told = [(f"a note{WHERE}", (split,), "us-east-1")]
    assert said_where(settings, told) == ["a note in cluster split"]
    # said of both alarms, it holds for every cluster; a Region of one alarm is still named as a Region
    assert said_where(settings, told + [(f"a note{WHERE}", (plain,), "us-east-1")]) == ["a note"]
    two = defined_project(tmp_path / "two", "clusters:\n  - {name: split, region: us-east-1}\n"
                                            "  - {name: west, region: us-west-2}\n", alarms=ALARM).settings
    assert said_where(two, [(f"a note{WHERE}", (two.clusters[0],), "us-east-1")]) == ["a note in Region us-east-1"]


def test_on_the_addon_the_whole_gpus_alarm_is_said_as_it_is(tmp_path):
    """The add-on publishes no dimension per MIG instance: the split clusters' alarm is left out with a note, and the
    `-whole` one (still leaving split out: the add-on publishes every cluster's GPUs in one set, a MIG GPU as one of its
    instances) named it as judging split; lint said (CW021) it reads a MIG GPU as one instance, which it never reads,
    and (AL021) that it reads ContainerInsights/Prometheus, where it reads the add-on's ContainerInsights."""
    project, artifacts, _, requests = _built(tmp_path, "cloudwatch: {source: container-insights}\n" + SETTINGS)
    assert list(requests) == [NAMES[1]]
    assert "WHERE \"ClusterName\" != 'split' GROUP BY" in requests[NAMES[1]]["Metrics"][0]["Expression"]
    assert requests[NAMES[1]]["AlarmDescription"].endswith(
        "Judges the clusters of us-east-1 saying exporter.mig: none (plain) on the rule's own condition; no alarm of "
        "the rule judges the others (split): generate's note says why.")
    assert any(n.message.startswith("alarm 'gpu-fb-high' is left out of CloudWatch in cluster split")
               for n in notes(project))
    findings = [f for f in lint(project, artifacts) if NAMES[1] in f.where]
    assert not [f.message for f in findings if f.rule == "CW021"], [f.message for f in findings if f.rule == "CW021"]
    sizes = [f.message for f in findings if f.rule == "AL021"]
    assert len(sizes) == 1 and "one query over every cluster of us-east-1 but split publishing to ContainerInsights (" \
        in sizes[0], sizes

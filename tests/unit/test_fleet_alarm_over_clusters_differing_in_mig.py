"""A fleet-scope alarm (one per Region) over clusters that differ in exporter.mig (as 735e7221 and
96eb7546 left it).

A fleet-scope rule's alarm in a Region is built as for GPUs that may be split unless every cluster of the Region says
exporter.mig: none (Settings.for_clusters, render/alarms.made_parts), and reads every cluster of the Region together.
735e7221 made each cluster's agent declare what its own exporter.mig group's widgets and alarms read: the group of a
cluster saying none worked the rule out as for whole GPUs, so it declared the sets that form reads, not the one the
Region's alarm reads where the forms differ. Now a cluster's agent declares what the alarms made where it is read
(render/cloudwatch.reads_by_cluster: its Region's fleet-scope alarm among them), and lint judges a query naming no
cluster by the clusters of its Region.

- A rule per namespace on agent.pipeline: otel reads [ClusterName, node, gpu, namespace, namespace_gpu] where GPUs may
  be split and [ClusterName, namespace, pod] where none is: in a Region of a split cluster and a plain one, the plain
  cluster's agent publishes no point the alarm reads (0 of 256 before 735e7221), and its namespaces over the level
  (team-b at 40,000 MiB, team-f at 30,000 MiB) never alarm; lint's AG001 then errs on the fresh build.
- lint's AG001 judges a fleet-scope alarm (its query names no cluster) against every cluster's agent, of any Region:
  with one cluster per Region, each Region's alarm reads what its own cluster publishes, and lint still errs twice
  (each Region's set "not published" by the other Region's cluster). Clean before 735e7221.
- A fleet-scope alarm per MIG instance in a Region of a split cluster and a plain one is made (made_parts keeps it:
  the Region's GPUs may be split) and reads the split cluster's instances; AG001 errs on the fresh build that it
  "reads nothing" (96eb7546's check names the plain cluster) and that the plain cluster's agent does not publish its
  set (which holds no point there whatever is declared). Clean before 735e7221.

"""

from __future__ import annotations

import json

from generator.artifacts import build
from generator.lint.feed_rules import used_metrics_selected
from generator.lint.subject import LintInput
from generator.output import encode
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import scrapes
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.projects import defined_project

WHOLE = mixed_fleet.WHOLE
END = 900

NAMESPACE_ALARM = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("ns-fb", "Namespace GPU memory high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("namespace",)), ">", 15000), scope="fleet")
'''
INSTANCE_ALARM = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("mig-fb", "MIG instance framebuffer high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")), ">", 15000),
                scope="fleet")
'''
ONE_REGION = """clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
"""
TWO_REGIONS = """clusters:
  - {name: plain, region: us-east-1, exporter: {mig: none}}
  - {name: split, region: us-west-2}
"""


def _ag001_errors(project, artifacts) -> list[tuple[str, str]]:
    subject = LintInput(artifacts, project.settings, project.catalog, None)
    return [(f.where, f.message) for f in used_metrics_selected(subject) if f.rule == "AG001" and f.severity == "error"]


def test_a_fleet_alarm_per_namespace_alarms_for_each_clusters_namespaces_over_the_level(tmp_path):
    """Region us-east-1: cluster `split` runs the mixed fleet, `plain` (exporter.mig: none) its whole GPUs; each
    agent's points through the agent model, the Region's one alarm evaluated over both clusters' points."""
    project = defined_project(tmp_path, ONE_REGION, alarms=NAMESPACE_ALARM)
    artifacts = build(project, grafana=False)
    files = encode(artifacts)
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if "-ns-fb-" in a["Request"]["AlarmName"]]
    points = {}
    for cluster, fleet in (("split", mixed_fleet.FLEET), ("plain", WHOLE)):
        config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{cluster}.yaml"])
        points[cluster] = Agent(config, job, only=cloudwatch_eval.reads(request)).run(scrapes(job, 30, END, fleet))
    states = cloudwatch_eval.alarm(request, points["split"] + points["plain"], END)
    firing = {(dict(key)["ClusterName"], dict(key)["namespace"]) for key, state in states.items() if state == "ALARM"}
    # the split cluster's namespaces alarm as they should (team-a's MIG instance at 19,600 MiB, team-b, team-f)
    assert {("split", "team-a"), ("split", "team-b"), ("split", "team-f")} <= firing, sorted(firing)
    # the plain cluster's whole GPUs: team-b at 40,000 MiB, team-f at 30,000 MiB
    assert points["plain"], "the plain cluster's agent publishes no point the Region's alarm reads"
    assert {ns for cluster, ns in firing if cluster == "plain"} == {"team-b", "team-f"}, sorted(firing)
    assert not _ag001_errors(project, artifacts)


def test_lint_judges_a_fleet_alarm_by_the_clusters_of_its_own_region(tmp_path):
    """One cluster per Region: us-east-1's alarm is built for whole GPUs and reads [ClusterName, namespace, pod],
    which `plain` publishes; us-west-2's for GPUs that may be split reads the namespace_gpu set, which `split`
    publishes. Every alarm reads what its Region's cluster publishes (the agent model), and lint says so."""
    project = defined_project(tmp_path, TWO_REGIONS, alarms=NAMESPACE_ALARM)
    artifacts = build(project, grafana=False)
    files = encode(artifacts)
    items = [a for a in json.loads(files["cloudwatch/alarms.json"])["alarms"] if "-ns-fb-" in a["Request"]["AlarmName"]]
    assert sorted(item["Region"] for item in items) == ["us-east-1", "us-west-2"]
    for item, (cluster, fleet) in zip(sorted(items, key=lambda i: i["Region"]),
                                      (("plain", WHOLE), ("split", mixed_fleet.FLEET))):
        config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{cluster}.yaml"])
        points = Agent(config, job, only=cloudwatch_eval.reads(item["Request"])).run(scrapes(job, 30, END, fleet))
        firing = {dict(key)["namespace"] for key, state in cloudwatch_eval.alarm(item["Request"], points, END).items()
                  if state == "ALARM"}
        assert {"team-b", "team-f"} <= firing, (item["Region"], sorted(firing))
    errors = _ag001_errors(project, artifacts)
    assert not errors, errors


def test_lint_passes_a_fleet_alarm_per_mig_instance_of_a_region_with_a_split_cluster(tmp_path):
    """The Region's alarm is made (its GPUs may be split) and reads the split cluster's instances: it fires for the
    one above 15,000 MiB (gpu-node-mig GPU 0 instance 1, 19,600 MiB); lint must not call it one that reads nothing."""
    project = defined_project(tmp_path, ONE_REGION, alarms=INSTANCE_ALARM)
    artifacts = build(project, grafana=False)
    files = encode(artifacts)
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if "-mig-fb-" in a["Request"]["AlarmName"]]
    config, job = agent_config(files["k8s/cwagent-prometheus-config-split.yaml"])
    points = Agent(config, job, only=cloudwatch_eval.reads(request)).run(scrapes(job, 30, END, mixed_fleet.FLEET))
    firing = {(dict(key)["ClusterName"], dict(key)["node"], dict(key)["gpu"], dict(key)["GPU_I_ID"])
              for key, state in cloudwatch_eval.alarm(request, points, END).items() if state == "ALARM"}
    assert firing == {("split", "gpu-node-mig", "0", "1")}, firing
    errors = _ag001_errors(project, artifacts)
    assert not errors, errors

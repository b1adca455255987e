"""Lint's notes on a CloudWatch alarm read the condition it is made on in a cluster saying exporter.mig: none of a mixed
fleet.

A rule per node, the mean of DCGM_FI_DEV_FB_USED over its GPUs above 15,000 MiB, with a `cloudwatch=` condition per
MIG instance; clusters `split` and `plain` (exporter.mig: none). Since 45c6b5c4 plain's alarm reads the rule's own
condition: AVG over [ClusterName, node, gpu, readings] by node, a mean that weighs each GPU by its readings (the agent
drops DCGM's blank), and its description says so ("weighs each by its readings"). With every cluster saying none, lint
AL024 notes that alarm. In the mixed fleet lint said nothing of it: render/alarms.failed_scrapes_read (and the other
alarm notes: copies_counted, counts_most_per_scrape, ranked_past_500) planned every alarm on the project's settings,
whose no_mig is false there, so they read the `cloudwatch=` condition per MIG instance alone. They now plan each alarm
in each part of the fleet it is made for, and a note of some parts alone names them.
"""

from __future__ import annotations

import json

from generator.artifacts import build
from generator.lint.runner import lint
from generator.output import encode
from tests.support.projects import defined_project

ALARM = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("node-fb", "Node memory high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "avg", ("node",)), ">", 15000),
                cloudwatch=Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")), ">",
                                     15000))
'''
NO_DASHBOARDS = "def dashboards(ctx):\n    return []\n"
MIXED = """clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
"""


def _al024(tmp_path, settings):
    project = defined_project(tmp_path, settings, alarms=ALARM, dashboards=NO_DASHBOARDS)
    artifacts = build(project, grafana=False)
    requests = {a["Request"]["AlarmName"]: a["Request"]
                for a in json.loads(encode(artifacts)["cloudwatch/alarms.json"])["alarms"]}
    found = [f.message for f in lint(project, artifacts) if f.rule == "AL024" and "'node-fb'" in f.message]
    return requests, found


def test_with_every_cluster_none_lint_notes_the_node_mean(tmp_path):
    requests, found = _al024(tmp_path, "exporter:\n  mig: none\n")
    assert "weighs each by its readings" in requests["gpudash-gpu-cluster-node-fb-warning"]["AlarmDescription"]
    assert [message.split(": ")[0] for message in found] == [
        "alarm 'node-fb' takes the avg of DCGM_FI_DEV_FB_USED over [ClusterName, node, gpu, readings] on CloudWatch"]


def test_in_a_mixed_fleet_lint_notes_the_plain_clusters_node_mean(tmp_path):
    requests, found = _al024(tmp_path, MIXED)
    plain = requests["gpudash-plain-node-fb-warning"]
    assert 'AVG("DCGM_FI_DEV_FB_USED")' in plain["Metrics"][0]["Expression"]
    assert "weighs each by its readings" in plain["AlarmDescription"]  # what AL024 notes, said in its description
    assert [message.split(": ")[0] for message in found] == [
        "alarm 'node-fb' takes the avg of DCGM_FI_DEV_FB_USED over [ClusterName, node, gpu, readings] on CloudWatch in "
        "cluster plain"], found

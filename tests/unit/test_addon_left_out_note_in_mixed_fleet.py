"""On the Container Insights add-on, in a fleet whose clusters differ in exporter.mig, the note of an alarm left out
of CloudWatch says where.

A rule per GPU on DCGM_FI_DEV_FB_USED with a `cloudwatch=` condition per MIG instance; clusters `split` and `plain`
(exporter.mig: none), cloudwatch.source: container-insights. Since 45c6b5c4 plain's alarm reads the rule's own
condition (per GPU: the add-on's node_gpu_memory_used by NodeName, GpuDevice), and generate makes
gpudash-plain-gpu-fb-high-warning; split's reads the `cloudwatch=` condition, which the add-on does not publish (no
dimension for mig_instance), and none is made there. generate's note and lint CW013
(render/cloudwatch.left_out_on_addon) said "alarm 'gpu-fb-high' is left out of CloudWatch: the Container Insights
add-on publishes no dimension for mig_instance", naming no cluster (the alarm planned on the fleet's settings): false of
plain, whose alarm is made. The alarm is now planned in each part of the fleet it is made for, and the note names
split.
"""

from __future__ import annotations

import json

from generator.artifacts import build, notes
from generator.lint.runner import lint
from generator.output import encode
from tests.support.mig_rules import FB_PER_GPU_CLOUDWATCH_PER_INSTANCE
from tests.support.projects import defined_project

ALARM = FB_PER_GPU_CLOUDWATCH_PER_INSTANCE
NO_DASHBOARDS = "def dashboards(ctx):\n    return []\n"
SETTINGS = """cloudwatch:
  source: container-insights
clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
"""


def test_the_left_out_note_names_the_clusters_it_is_left_out_of(tmp_path):
    project = defined_project(tmp_path, SETTINGS, alarms=ALARM, dashboards=NO_DASHBOARDS)
    artifacts = build(project, grafana=False)
    names = [a["Request"]["AlarmName"] for a in json.loads(encode(artifacts)["cloudwatch/alarms.json"])["alarms"]]
    assert [n for n in names if "gpu-fb-high" in n] == ["gpudash-plain-gpu-fb-high-warning"]  # plain's alone
    said = [n.message for n in notes(project) if "gpu-fb-high" in n.message and "left out" in n.message]
    said += [f.message for f in lint(project, artifacts) if "gpu-fb-high" in f.message and "left out" in f.message]
    # left out of split (the add-on has no mig_instance), said by generate and by lint alike
    assert said == ["alarm 'gpu-fb-high' is left out of CloudWatch in cluster split: the Container Insights add-on "
                    "publishes no dimension for mig_instance"] * 2, said


def test_a_fleet_alike_says_no_cluster(tmp_path):
    """Where every cluster may have GPUs split, the alarm is left out of every one: the note names none, as ever."""
    project = defined_project(tmp_path, SETTINGS.replace(", exporter: {mig: none}", ""), alarms=ALARM,
                              dashboards=NO_DASHBOARDS)
    said = [n.message for n in notes(project) if "gpu-fb-high" in n.message]
    assert said == ["alarm 'gpu-fb-high' is left out of CloudWatch: the Container Insights add-on publishes no "
                    "dimension for mig_instance"]

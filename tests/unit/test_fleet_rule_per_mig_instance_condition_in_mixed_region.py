"""A fleet-scope rule per GPU whose `cloudwatch=` condition is per MIG instance, in a Region whose clusters differ in
exporter.mig (as 45c6b5c4 left it).

45c6b5c4 makes an alarm read the rule's own condition where no GPU is split (render/alarms.cloudwatch_condition,
settings.no_mig), and so mends the cluster-scope story (test_cloudwatch_condition_per_mig_instance_in_mixed_fleet).
A fleet-scope rule is made once per Region, for the settings of the Region's clusters together: with `split` and
`plain` (exporter.mig: none) in us-east-1 no_mig is false, so the one alarm reads the `cloudwatch=` condition, the
MIG-only set [ClusterName, node, gpu, GPU_I_ID, GPU_I_PROFILE]. plain's agent declares that set
(reads_by_cluster) and publishes 0 points in it (no GPU of plain is split); its whole GPUs over the level,
gpu-node-b GPU 0 (40,000 MiB) and ip-10-0-3-7.ec2.internal GPU 0 (30,000), which the Prometheus fleet rule fires for,
are evaluated by no CloudWatch alarm, and neither generate's notes nor lint named plain or the rule; now both do (AL012).
"""

from __future__ import annotations

import json


from generator.artifacts import build, notes
from generator.lint.runner import lint
from generator.model import Query
from generator.output import encode
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
SETTINGS = """clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
"""


def test_a_fleet_rule_watches_the_plain_clusters_gpus_or_says_it_does_not(tmp_path):
    project = defined_project(tmp_path, SETTINGS, alarms=ALARM, dashboards=NO_DASHBOARDS)
    truth = mixed_fleet.truth(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu")),
                              {n.name: n.name for n in mixed_fleet.FLEET}, fleet=WHOLE)
    assert {gpu for gpu, value in truth.items() if value > 15000} == {
        "gpu-node-b GPU 0", "ip-10-0-3-7.ec2.internal GPU 0"}  # the Prometheus rule's GPUs of plain
    artifacts = build(project, grafana=False)
    files = encode(artifacts)
    points = []
    for cluster, fleet in (("split", mixed_fleet.FLEET), ("plain", WHOLE)):
        config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{cluster}.yaml"])
        points += Agent(config, job).run(scrapes(job, 30, END, fleet))
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if "gpu-fb-high" in a["Request"]["AlarmName"]]
    firing = set()  # plain's GPUs any CloudWatch alarm of the rule fires for
    for request in requests:
        for key, state in cloudwatch_eval.alarm(request, points, END).items():
            labels = dict(key)
            if state == "ALARM" and labels.get("ClusterName", "plain") == "plain":
                firing.add(f"{labels['node']} GPU {labels['gpu']}")
    said = [note.message for note in notes(project) if "gpu-fb-high" in note.message and "plain" in note.message]
    said += [f.message for f in lint(project, artifacts) if "gpu-fb-high" in f.message and "plain" in f.message]
    assert firing == {"gpu-node-b GPU 0", "ip-10-0-3-7.ec2.internal GPU 0"} or said, \
        (sorted(firing), [r["AlarmName"] for r in requests])
    # (the Region's one alarm cannot read both forms: generate's note and lint's AL012 say which GPUs go unwatched)
    assert any("does not evaluate the GPUs of cluster plain on CloudWatch in Region us-east-1" in m for m in said), said

"""A rule per GPU whose `cloudwatch=` condition is per MIG instance, in a fleet whose clusters differ in exporter.mig
(as 96eb7546 left it).

Generate refuses a CloudWatch alarm per GPU of framebuffer where GPUs may be split ("a MIG GPU's ... is the sum of
its instances ...: group it by mig_instance (each instance judged on its own) ... or give the Alarm a `cloudwatch=`
condition"), so a user keeps the Prometheus rule per GPU and writes the CloudWatch condition per MIG instance. Since
96eb7546 render/alarms.made_parts makes such an alarm only in the clusters whose GPUs may be split: the rule's
CloudWatch query reads MIG instances alone, and reads_no_instance says "its Prometheus rule, which reads the series
of a MIG instance, fires nowhere there either". That holds of a rule per MIG instance, not of this one: its
Prometheus rule reads every GPU, and in the cluster saying exporter.mig: none it fires for the whole GPUs over the
level (gpu-node-b GPU 0 at 40,000 MiB, ip-10-0-3-7.ec2.internal GPU 0 at 30,000 MiB) where CloudWatch has no alarm
at all (before 96eb7546 it had one, reading the MIG instances' set, which holds nothing there: it never fired).
Nothing says so: generate and lint name no such cluster (a half alarm left out of some clusters has AL012's
"not made on CloudWatch in ... (its Prometheus rule watches it)").
Now, where no GPU is split, the alarm reads the rule's own condition (render/alarms.cloudwatch_condition), and fires
for the GPUs the rule fires for.
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
from tests.support.mig_rules import FB_PER_GPU_CLOUDWATCH_PER_INSTANCE
from tests.support.projects import defined_project

WHOLE = mixed_fleet.WHOLE
ALARM = FB_PER_GPU_CLOUDWATCH_PER_INSTANCE
END = 900
SETTINGS = """clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
"""


def test_a_cluster_left_without_the_cloudwatch_alarm_of_a_rule_its_prometheus_twin_fires_for_is_told(tmp_path):
    project = defined_project(tmp_path, SETTINGS, alarms=ALARM)
    truth = mixed_fleet.truth(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu")),
                              {n.name: n.name for n in mixed_fleet.FLEET}, fleet=WHOLE)
    # the Prometheus rule's GPUs over the level in the plain cluster
    assert {gpu for gpu, value in truth.items() if value > 15000} == {
        "gpu-node-b GPU 0", "ip-10-0-3-7.ec2.internal GPU 0"}
    artifacts = build(project, grafana=False)
    files = encode(artifacts)
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    config, job = agent_config(files["k8s/cwagent-prometheus-config-plain.yaml"])
    firing = set()  # (node, gpu) of the plain cluster's GPUs its CloudWatch alarms of the rule fire for
    for request in requests:
        if request["AlarmName"].startswith("gpudash-plain-gpu-fb-high"):
            points = Agent(config, job, only=cloudwatch_eval.reads(request)).run(scrapes(job, 30, END, WHOLE))
            firing |= {f"{dict(key)['node']} GPU {dict(key)['gpu']}"
                       for key, state in cloudwatch_eval.alarm(request, points, END).items() if state == "ALARM"}
    said = [note.message for note in notes(project) if "gpu-fb-high" in note.message and "plain" in note.message]
    said += [f.message for f in lint(project, artifacts) if "gpu-fb-high" in f.message and "plain" in f.message]
    # where no GPU is split the alarm reads the rule's own condition, per GPU (render/alarms.cloudwatch_condition)
    assert firing == {"gpu-node-b GPU 0", "ip-10-0-3-7.ec2.internal GPU 0"}, \
        (sorted(firing), [r["AlarmName"] for r in requests], said)

"""A framebuffer alarm per GPU where no GPU is split into MIG instances (exporter.mig: none), as
96eb7546 left it.

Generate refuses `Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu")), ">", 15000)` with exporter.mig: none:
"a MIG GPU's DCGM_FI_DEV_FB_USED is the sum of its instances, which CloudWatch holds as separate series ...; fix:
group it by mig_instance (each instance judged on its own), or take its sum or avg, or give the Alarm a `cloudwatch=`
condition". The settings say no GPU is split: every GPU is one series ([ClusterName, node, gpu, GPU_I_ID] holds it
once, GPU_I_ID "none", as the bundled "Framebuffer per GPU" widget draws it). Since 96eb7546 the fix it gives is
refused too ("no GPU is split into MIG instances (exporter.mig: none) ...; fix: group it by node and gpu, or give the
Alarm a `cloudwatch=` condition"), and so is a `cloudwatch=` condition per MIG instance: each refusal sends the user
to the other, and no framebuffer alarm per GPU builds on a fleet without MIG (before 96eb7546 the first fix built an
alarm that never fired). The refusal per GPU is older than 96eb7546; 96eb7546 closed the way out.
"""

from __future__ import annotations

import json


from generator.artifacts import build
from generator.errors import InputError
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
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu")), ">", 15000))
'''
END = 900


def test_a_framebuffer_alarm_per_gpu_builds_where_no_gpu_is_split_and_fires_for_the_gpus_over_the_level(tmp_path):
    project = defined_project(tmp_path, "exporter:\n  mig: none\n", alarms=ALARM)
    try:
        files, refused = encode(build(project, grafana=False)), ""
    except InputError as exc:
        files, refused = {}, str(exc)
    assert not refused, refused
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if "-gpu-fb-high-" in a["Request"]["AlarmName"]]
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    points = Agent(config, job, only=cloudwatch_eval.reads(request)).run(scrapes(job, 30, END, WHOLE))
    firing = {f"{dict(key)['node']} GPU {dict(key)['gpu']}"
              for key, state in cloudwatch_eval.alarm(request, points, END).items() if state == "ALARM"}
    assert firing == {"gpu-node-b GPU 0", "ip-10-0-3-7.ec2.internal GPU 0"}, sorted(firing)

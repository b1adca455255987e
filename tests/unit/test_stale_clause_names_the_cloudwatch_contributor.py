"""The stale clause of an alarm's description names what the CloudWatch alarm evaluates (as of 45c6b5c4,
everything that reads an alarm's CloudWatch condition must agree).

render/alarms._who words a contributor from the rule's own condition (alarm.condition.query.by), not the condition
CloudWatch evaluates (cloudwatch_condition). A rule per node (the mean of DCGM_FI_DEV_FB_USED over a node's GPUs above
15,000 MiB) with a `cloudwatch=` condition per MIG instance, GPUs that may be split: the alarm groups by node, gpu,
GPU_I_ID, GPU_I_PROFILE (each GPU instance is a contributor), yet its description ends "a node whose data stops in
ALARM stays so while its last datapoints are in the evaluation range": no node is a contributor of it.
"""

from __future__ import annotations

import json


from generator.artifacts import build
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


def test_the_stale_clause_speaks_of_what_the_alarm_evaluates(tmp_path):
    project = defined_project(tmp_path, "", alarms=ALARM, dashboards=NO_DASHBOARDS)
    (request,) = [a["Request"] for a in json.loads(encode(build(project, grafana=False))["cloudwatch/alarms.json"])
                  ["alarms"] if "-node-fb-" in a["Request"]["AlarmName"]]
    assert '"GPU_I_ID"' in request["Metrics"][0]["Expression"]  # each GPU instance a contributor
    assert "a node whose data stops" not in request["AlarmDescription"], request["AlarmDescription"]
    assert "a GPU instance whose data stops" in request["AlarmDescription"], request["AlarmDescription"]

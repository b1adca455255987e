"""A CloudWatch alarm on a gauge per MIG instance is described as a gauge, not a counter (as fa9b4204,
3d9bb01b and 177f7921 left it).

render/alarms._insights_requests takes any plan grouped by mig_instance for "a counter's increase per GPU instance"
and gives it instance_contributors' texts. A framebuffer rule per MIG instance (generate's own fix for a
framebuffer rule per GPU where GPUs may be split: "group it by mig_instance") is a gauge, MAX of DCGM_FI_DEV_FB_USED,
yet its description says each instance is listed "with its GPU's increase" and, on agent.pipeline: otel, that "the
first period after a gap ... holds the whole gap's growth, so a steady count under the level can fire then" and "the
growth across an exporter rollout or agent restart is lost (the rule counts it)"; on classic that "an increase is not
counted across a failed scrape". None holds of a gauge: the agent publishes a gauge's reading as scraped (no delta,
no baseline), a restart loses nothing of it, and a gap holds no growth.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support.projects import defined_project

ALARM = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("mig-fb", "MIG memory high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")), ">", 15000))
'''
NO_DASHBOARDS = "def dashboards(ctx):\n    return []\n"
COUNTER_WORDS = ("increase", "growth", "agent restart", "failed scrape")


@pytest.mark.parametrize("settings", ["", "agent:\n  pipeline: classic\n"], ids=["otel", "classic"])
def test_a_framebuffer_alarm_per_mig_instance_says_nothing_of_a_counter(tmp_path, settings):
    project = defined_project(tmp_path, settings, alarms=ALARM, dashboards=NO_DASHBOARDS)
    files = encode(build(project, grafana=False))
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if "-mig-fb-" in a["Request"]["AlarmName"]]
    assert 'MAX("DCGM_FI_DEV_FB_USED")' in request["Metrics"][0]["Expression"]  # the gauge's reading, as scraped
    description = request["AlarmDescription"]
    said = [word for word in COUNTER_WORDS if word in description]
    assert not said, (said, description)

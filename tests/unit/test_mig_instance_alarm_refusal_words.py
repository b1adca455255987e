"""What generate says refusing an alarm per MIG instance where no GPU is split (as 96eb7546 worded it): the words
of an alarm, the setting the user wrote, and no fix the alarm already took. What was seen:

96eb7546 refuses such an alarm (exit 2, nothing written) with cloudwatch_query.NO_MIG_INSTANCES, the text a dashboard's
header gives for a panel left out: "... it would read nothing, as its Grafana panel does". An alarm has no Grafana
panel: its twin is its Prometheus rule (which fires nowhere there either, as render/alarms.reads_no_instance says).
And where every cluster says clusters[].exporter.mig: none and the settings never write exporter.mig, the message
names exporter.mig: none, a key the file does not hold; the other MIG refusals name the key the user wrote
(checks/exporter.py: 'clusters[].exporter.mig' if the cluster's own, a HalfAlarm's `where` names the clusters).
"""

from __future__ import annotations

import json

from click.testing import CliRunner

from generator.cli import main
from tests.support.projects import defined_project
from tests.unit.test_cloudwatch_condition_per_mig_instance_in_mixed_fleet import ALARM as TWIN_PER_GPU

ALARM = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("mig-fb", "MIG instance framebuffer high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")), ">", 15000))
'''
OWN_NONE = """clusters:
  - {name: a, region: us-east-1, exporter: {mig: none}}
  - {name: b, region: us-west-2, exporter: {mig: none}}
"""


def _refusal(tmp_path, settings: str) -> str:
    defined_project(tmp_path, settings, alarms=ALARM)
    out = tmp_path / "build"
    result = CliRunner().invoke(main, ["generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(out)])
    assert result.exit_code == 2, result.output
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "alarm 'mig-fb'" in text and "Traceback" not in text, text
    return text


def test_an_alarm_per_mig_instance_is_refused_in_the_words_of_an_alarm(tmp_path):
    text = _refusal(tmp_path, "exporter:\n  mig: none\n")
    assert "Grafana panel" not in text, text


def test_the_refusal_names_the_setting_the_clusters_wrote(tmp_path):
    text = _refusal(tmp_path, OWN_NONE)
    assert "clusters[].exporter.mig" in text, text


BOTH_PER_INSTANCE = ALARM.replace(
    "15000))", "15000),\n                cloudwatch=Condition(Query(\"DCGM_FI_DEV_FB_USED\", \"avg\", "
               "(\"node\", \"gpu\", \"mig_instance\")), \">\", 15000))")


def test_refusing_the_cloudwatch_condition_it_does_not_ask_for_one(tmp_path):
    """A rule per MIG instance with a `cloudwatch=` condition per MIG instance too, every cluster saying none: the
    condition refused is the alarm's `cloudwatch=` one, and the fix must not be "give the Alarm a `cloudwatch=`
    condition" -- it has one."""
    assert "cloudwatch=" in BOTH_PER_INSTANCE
    defined_project(tmp_path, "exporter:\n  mig: none\n", alarms=BOTH_PER_INSTANCE)
    out = tmp_path / "build"
    result = CliRunner().invoke(main, ["generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(out)])
    assert result.exit_code == 2, result.output
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "alarm 'mig-fb'" in text and "Traceback" not in text, text
    assert "give the Alarm a `cloudwatch=` condition" not in text, text


def test_where_no_gpu_is_split_a_rule_per_gpu_is_alarmed_on_its_own_condition(tmp_path):
    """The rule per GPU, its `cloudwatch=` condition per MIG instance (generate's own fix for a framebuffer rule per GPU
    where GPUs may be split), every cluster saying none: the alarm reads the rule's own condition, per GPU (the
    condition per MIG instance would read nothing there; the mixed fleet's story, firing for the right GPUs:
    test_cloudwatch_condition_per_mig_instance_in_mixed_fleet)."""
    defined_project(tmp_path, "exporter:\n  mig: none\n", alarms=TWIN_PER_GPU)
    out = tmp_path / "build"
    result = CliRunner().invoke(main, ["generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    alarms = json.loads((out / "cloudwatch" / "alarms.json").read_text())["alarms"]
    (request,) = [a["Request"] for a in alarms if "-gpu-fb-high-" in a["Request"]["AlarmName"]]
    text = json.dumps(request)
    assert "DCGM_FI_DEV_FB_USED" in text and "GPU_I_PROFILE" not in text, text

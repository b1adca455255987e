"""A pod that left a GPU its exporter still reports: when a per-pod rule and its CloudWatch alarm stop, and that the
alarm's description says it.

old-0 holds GPU 0 (250 W) until the scrape at LAST_NAMED; from the next scrape the exporter names new-0 on it. A per-pod
rule of gauges reads each pod a scrape within the per-pod look-back (four scrape intervals) named on a GPU, at every
step of its window: that is what reads a pod the exporter names in turn with others on a GPU they share at every
step (test_pod_named_in_turn_rules.py), and at an instant a pod that left within the look-back reads the same as one
whose next naming is due. So the rule keeps old-0's periods for the look-back after its last naming, and judged over
CloudWatch's evaluation range (the example's: its period and two more) clears that much after its alarm, whose
datapoints of old-0 are those of the scrapes that named it (the agent's totals per pod are made per scrape). The rule
stays (the look-back is what reads a pod named in turn whole); each such alarm's description says both figures: the
rule clears 15 minutes after the last reading, and for a pod that left a GPU still reported, the look-back after the
alarm. Both sides are checked against the description's figures: promtool over the series as Prometheus stores them
(old-0's marked stale at the scrape that no longer names it), the alarm through the agent model of the build's own
agent configuration.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.integration.test_mig_twins import built_with
from tests.integration.test_prometheus_rules import _expected, _promtool_test, alert_names
from tests.support import cloudwatch_eval
from tests.support.agent_points import AGENT_FILE
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels

UTIL, POWER = "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"
NODE, NAMESPACE = "gpu-node-1", "team-l"
LEFT = 20  # the first scrape naming new-0 in old-0's place
# (rule, aggregation, grouping, comparison, level): each fires for a pod holding the GPU at 250 W
FORMS = [(f"{aggregation}-power-{'-'.join(by)}", aggregation, by, comparison, level)
         for by in (("pod",), ("pod", "gpu"))
         for aggregation, comparison, level in (("count", ">", 0.5), ("sum", ">", 200), ("avg", ">", 200),
                                                ("max", ">", 200), ("min", ">", 200))]
CLEARS = re.compile(r"clears (\d+) minutes after the last reading.*?pod that left a GPU (?:its exporter )?still "
                    r"report\w*.*? (\d+) s after the alarm")


def _definitions() -> str:
    return ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({rule!r}, 'T', Condition(Query({POWER!r}, {aggregation!r}, {by!r}), {comparison!r}, "
        f"{level}), description='d', runbook='r')\n" for rule, aggregation, by, comparison, level in FORMS))


def _pod(k: int) -> str:
    return "old-0" if k < LEFT else "new-0"


def _alarm_last(files, rule: str, step: int, instants: list[int]) -> int:
    """The last of `instants` at which the CloudWatch alarm of `rule` is in ALARM for old-0 over the example's
    evaluation range, the GPU's scrapes through the agent model of the build's agent configuration."""
    config, job = agent_config(files[AGENT_FILE])
    target = target_labels(job, NODE)
    scrapes = [Scrape(float(k * step), f"# TYPE {POWER} gauge\n{POWER}{{gpu=\"0\",UUID=\"GPU-left-0\","
                                       f"device=\"nvidia0\",modelName=\"NVIDIA A10G\",Hostname=\"{NODE}\","
                                       f"DCGM_FI_DRIVER_VERSION=\"535.104.05\",container=\"main\","
                                       f"namespace=\"{NAMESPACE}\",pod=\"{_pod(k)}\"}} 250\n", target)
               for k in range(-2, instants[-1] // step + 1)]
    points = Agent(config, job).run(scrapes)
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if {"Key": "gpudash:rule", "Value": rule} in a["Request"]["Tags"]]
    length = cloudwatch_eval.example_range(request)
    fired = [t for t in instants for key, judged in cloudwatch_eval.alarm_ranges(request, points, t).items()
             if dict(key).get("pod") == "old-0" and judged[length] == "ALARM"]
    return max(fired)


@pytest.mark.parametrize("step", [30, 15])
def test_a_pod_that_left_a_gpu_clears_the_rule_the_look_back_after_its_alarm_as_the_description_says(tmp_path, step):
    """Each form's description names when its rule clears (15 minutes after the last reading) and how much later for a
    pod that left a GPU still reported (the look-back: 120 s at 30 s scrapes, 60 s at 15 s); the alarm is in ALARM for
    old-0 until 15 minutes after its last naming, the rule fires for it until the look-back after that, and for new-0
    throughout. (The description said the rule clears as the alarm does: 120 s apart, said nowhere.)"""
    files, folder = built_with(tmp_path, {"left.py": _definitions()}, fields=(UTIL, POWER),
                               settings=f"scrape:\n  interval: {step}s\n")
    last_named = (LEFT - 1) * step
    descriptions = {a["Request"]["AlarmDescription"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                    if any(t["Value"] in {f[0] for f in FORMS} for t in a["Request"]["Tags"])}
    said = {CLEARS.search(d).groups() if CLEARS.search(d) else d for d in descriptions}
    assert len(said) == 1, said
    (minutes, lookback), = said
    clears, lookback = int(minutes) * 60, int(lookback)
    assert lookback == 4 * step
    # every 10 s from before the alarm clears to after the rule does
    instants = list(range(last_named + clears - 40, last_named + clears + lookback + 50, 10))
    alerts = alert_names(folder)
    labels = {"namespace": NAMESPACE, "gpu": "0"}
    cases = [{"eval_time": f"{t}s", "alertname": alerts[rule],
              "exp_alerts": [_expected(folder, alerts[rule], **{k: v for k, v in labels.items() if k in by or
                                                               k == "namespace"}, pod=pod)
                             for pod in ("old-0", "new-0") if pod == "new-0" or t <= last_named + clears + lookback]}
             for rule, _, by, _, _ in FORMS for t in instants]
    series_labels = (f'gpu="0",UUID="GPU-left-0",hostname="{NODE}",container="main",namespace="{NAMESPACE}",'
                     f'instance="10.0.1.1:9400",job="gpu-metrics",node="{NODE}"')
    steps = instants[-1] // step + 1
    series = [{"series": f'{POWER}{{{series_labels},pod="old-0"}}', "values": " ".join(["250"] * LEFT + ["stale"])},
              {"series": f'{POWER}{{{series_labels},pod="new-0"}}',
               "values": " ".join(["_"] * LEFT + ["250"] * (steps - LEFT))}]
    _promtool_test(folder, "left.yaml", [{"interval": f"{step}s", "input_series": series, "alert_rule_test": cases}],
                   evaluation_interval="5s")
    for rule, *_ in FORMS:
        assert _alarm_last(files, rule, step, instants) == last_named + clears, rule

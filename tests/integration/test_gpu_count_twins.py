"""An alarm that counts GPUs or adds their readings per node, and its Prometheus twin, read each GPU once on the mixed
fleet (tests/support/mixed_fleet.FLEET: 11 GPUs, the MIG node's two A100s split into two instances each, 13 series of
a device field). The CloudWatch side is tests/unit/test_alarm_counts_once.py and tests/unit/test_alarm_copies.py;
here promtool runs the generated rules over the same readings: "fewer than 12 GPUs report" fires (11), a node's
GPUs over 700 W fire for none (the MIG node draws 350 + 150 = 500 W; counted per instance it would read 1,000 W), and
over 450 W fire for the two nodes of 500 W.

GPU utilization, which MIG does not report (its instances' graphics engine activity stands in): "more than 10 GPUs
report it" fires (11: the two MIG GPUs by their stand-in), "fewer than 10" does not, a node's GPUs over 80 %
in all fire for the MIG node too (60 + 30), and a GPU's largest reading over 50 % fires for the MIG node's GPU 0
(its instances at 80 and 40 %); the CloudWatch alarms of the same rules, read through the build's agent model, fire
for the same groups (they counted 9 GPUs and left the MIG node out; the GPU's largest reading left MIG GPUs out).

Fields MIG reports per instance: a node's engine activity over 0.85 (each GPU's its instances' mean) fires for the MIG
node's 0.6 + 0.3 on both sides, and a node's fullest GPU over 20,000 MiB (a MIG GPU's framebuffer its instances' sum)
for its GPU 0's 19,600 + 5,000 MiB; the CloudWatch alarm read the MIG node's engine activity as 1.8 (each instance a
GPU: said in its description), and the largest framebuffer per node was refused."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval
from tests.support.agent_points import through_agent
from tests.support.mixed_fleet import FLEET, scraped_series
from tests.support.promtool_rules import alert_names, expected_alert, promtool_test

STEP, STEPS = 30, 30  # fifteen minutes of 30 s scrapes
PERIOD = 300
FIELDS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
          "DCGM_FI_DEV_FB_USED")
GPUS = sum(len(node.gpus) for node in FLEET)  # 11
RULES = f'''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpus-low", "Few GPUs reporting", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count", ()), "<", {GPUS + 1}),
                description="Fewer GPUs report.", runbook="Look at the nodes.")
    for level in (450, 700):
        yield Alarm(f"node-power-{{level}}", "Node GPU power high",
                    Condition(Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("node",)), ">", level),
                    description="A node's GPUs draw much.", runbook="Look at the node.")
    util = "DCGM_FI_DEV_GPU_UTIL"
    for rule, query, comparison, threshold in (("util-many", Query(util, "count", ()), ">", 10),
                                               ("util-few", Query(util, "count", ()), "<", 10),
                                               ("node-util", Query(util, "sum", ("node",)), ">", 80),
                                               ("gpu-busy", Query(util, "max", ("node", "gpu")), ">", 50)):
        yield Alarm(rule, "GPU utilization", Condition(query, comparison, threshold), description="Busy.",
                    runbook="Look.")
    # fields MIG reports per instance: a MIG GPU's engine activity is its instances' mean, its framebuffer their sum
    yield Alarm("node-engine", "Node busy", Condition(Query("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "sum", ("node",)), ">",
                                                      0.85), description="Busy.", runbook="Look.")
    yield Alarm("node-fb-full", "A GPU of the node full", Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node",)), ">",
                                                                    20000), description="Full.", runbook="Look.")
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("count-twins"), {"counts.py": RULES})


def test_the_rules_count_and_add_each_gpu_once(built):
    # the premise: more series than GPUs (13 at a scrape; the time-sliced GPU under each of its pods in turn)
    assert sum(1 for s in scraped_series(FIELDS, STEP, STEPS) if s["series"].startswith(FIELDS[0])) >= GPUS + 2
    _, folder = built
    alerts = alert_names(folder)
    heavy = [node.name for node in FLEET if sum(gpu.power for gpu in node.gpus) > 450]
    assert sorted(heavy) == ["gpu-node-mig", "ip-10-0-3-7.ec2.internal"]
    fired = {"gpus-low": [{}], "node-power-450": [{"node": name} for name in heavy], "node-power-700": [],
             **UTIL_FIRED, **INSTANCES_FIRED}
    checks = [{"eval_time": f"{STEPS * STEP // 60 - 1}m", "alertname": alerts[rule],
               "exp_alerts": [expected_alert(folder, alerts[rule], **labels) for labels in expected]}
              for rule, expected in fired.items()]
    promtool_test(folder, "count_twins.yaml", [{"interval": f"{STEP}s", "input_series": scraped_series(FIELDS, STEP, STEPS),
                                                 "alert_rule_test": checks}], evaluation_interval=f"{STEP}s")


# a GPU's utilization as the rules read it: its own, a MIG GPU's its instances' engine activity x 100 averaged
UTIL = {node.name: sum(sum(i.engine * 100 for i in gpu.instances) / len(gpu.instances) if gpu.mig else gpu.util
                       for gpu in node.gpus) for node in FLEET}
UTIL_FIRED = {"util-many": [{}], "util-few": [],
              "node-util": [{"node": name} for name, total in sorted(UTIL.items()) if total > 80],
              # a GPU's largest reading over 50 %: the MIG GPU 0 at (80 + 40) / 2 = 60 too, not its GPU 1 (60 + 0) / 2
              "gpu-busy": [{"node": node.name, "gpu": str(gpu.index)} for node in FLEET for gpu in node.gpus
                           if (sum(i.engine * 100 for i in gpu.instances) / len(gpu.instances) if gpu.mig
                               else gpu.util) > 50]}


# a node's engine activity (each GPU's its instances' mean) over 0.85, and its fullest GPU (a MIG GPU's framebuffer its
# instances' sum) over 20,000 MiB: the MIG node fires both (0.6 + 0.3; 19,600 + 5,000 MiB; its fullest instance alone,
# 19,600 MiB, would not)
ENGINE = {node.name: sum(sum(i.engine for i in gpu.instances) / len(gpu.instances) for gpu in node.gpus)
          for node in FLEET}
FULLEST = {node.name: max(sum(i.fb_used for i in gpu.instances) for gpu in node.gpus) for node in FLEET}
INSTANCES_FIRED = {"node-engine": [{"node": name} for name, total in sorted(ENGINE.items()) if total > 0.85],
                   "node-fb-full": [{"node": name} for name, fullest in sorted(FULLEST.items()) if fullest > 20000]}


def test_the_premise_of_the_rules_of_fields_mig_reports_per_instance():
    assert ENGINE["gpu-node-mig"] == pytest.approx(0.9) and FULLEST["gpu-node-mig"] == 24600
    assert INSTANCES_FIRED["node-engine"] == [{"node": "gpu-node-mig"}, {"node": "ip-10-0-3-7.ec2.internal"}]
    assert {"node": "gpu-node-mig"} in INSTANCES_FIRED["node-fb-full"]


def test_the_premise_of_the_utilization_rules():
    assert sorted(name for name, total in UTIL.items() if total > 80) == [
        "gpu-node-a", "gpu-node-mig", "ip-10-0-3-7.ec2.internal"]
    assert UTIL["gpu-node-mig"] == pytest.approx(90)
    assert {"node": "gpu-node-mig", "gpu": "0"} in UTIL_FIRED["gpu-busy"] and len(UTIL_FIRED["gpu-busy"]) == 5


def test_the_cloudwatch_alarms_fire_for_the_same_groups(built):
    """Each utilization alarm's value over its period ending at the last scrape, the query's result over its scaled
    threshold, breaches for exactly the groups the rule fires for."""
    files, _ = built
    points = through_agent(files, STEP, STEPS * STEP)
    requests = {next(t["Value"] for t in a["Request"]["Tags"] if t["Key"] == "gpudash:rule"): a["Request"]
                for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    end = STEPS * STEP
    for rule, expected in {**UTIL_FIRED, **INSTANCES_FIRED}.items():
        request = requests[rule]
        assert "-mig-" not in request["AlarmName"]
        (metric,) = request["Metrics"]
        result = cloudwatch_eval.metrics_insights(metric["Expression"], points, end - PERIOD, end, PERIOD)
        breach = {">": float.__gt__, "<": float.__lt__}[
            {"GreaterThanThreshold": ">", "LessThanThreshold": "<"}[request["ComparisonOperator"]]]
        breaching = [dict(key) for key, series in result.items()
                     if breach(float(series[end - PERIOD]), request["Threshold"])]
        assert sorted(breaching, key=str) == sorted(expected, key=str), rule

"""A rule's Prometheus alert compares the threshold its CloudWatch alarm compares, every digit of it.

The alert's expression wrote the threshold with six significant digits (`:g`) where the alarm's Threshold (and the
agent's level flag) keeps the float: a power alarm at 312.3456 W alerted in Prometheus at 312.346 W (a GPU at 312.3458 W
was in ALARM on CloudWatch and not alerting in Prometheus), an energy alarm over 45,000,123 mJ in five minutes alerted
at 4.50001e+07 (45,000,100 mJ), a temperature held over 81.234567 °C at 81.2346.
"""

from __future__ import annotations

import json
import re

from generator.artifacts import build
from generator.output import encode
from tests.support.projects import defined_project
from tests.support.promtool_rules import parsed_rules

ALARMS = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    return [
        Alarm("power-high", "GPU power high",
              Condition(Query("DCGM_FI_DEV_POWER_USAGE", "max", ("node", "gpu")), ">", 312.3456),
              severity="warning", description="A GPU drew more than 312.3456 W.", runbook="Check it."),
        Alarm("energy-high", "GPU energy high",
              Condition(Query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "sum", ("node", "gpu"), as_increase=True), ">",
                        45000123),
              severity="warning", missing_data="notBreaching", description="Energy.", runbook="Check it."),
        Alarm("temp-held", "GPU hot for two periods",
              Condition(Query("DCGM_FI_DEV_GPU_TEMP", "min", ("node", "gpu")), ">", 81.234567),
              severity="warning", evaluation_periods=2, datapoints_to_alarm=2, description="Hot.", runbook="Check it."),
        Alarm("temp-low", "GPU cold",
              Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), "<", 12.3456789),
              severity="warning", missing_data="breaching", description="Cold.", runbook="Check it."),
    ]
'''
THRESHOLDS = {"GpudashPowerHigh": 312.3456, "GpudashEnergyHigh": 45000123.0, "GpudashTempHeld": 81.234567,
              "GpudashTempLow": 12.3456789}


def test_an_alert_compares_every_digit_of_its_threshold(tmp_path):
    project = defined_project(tmp_path, alarms=ALARMS)
    files = encode(build(project, grafana=False))  # the rules and alarms only
    alerts = {rule["alert"]: rule["expr"] for group in parsed_rules(files["prometheus/rules.yaml"])["groups"]
              for rule in group["rules"] if rule.get("alert") in THRESHOLDS}
    assert set(alerts) == set(THRESHOLDS)
    for alert, expr in alerts.items():
        threshold = THRESHOLDS[alert]
        compared = [float(n) for n in re.findall(r"[<>]=? (?:bool )?(-?[0-9][0-9.e+-]*)", expr)]
        near = [n for n in compared if abs(n - threshold) <= threshold * 1e-3]  # the threshold, however written
        assert near and set(near) == {threshold}, (alert, near)
    cloudwatch = {entry["Request"]["AlarmName"]: entry["Request"]
                  for entry in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    assert cloudwatch["gpudash-gpu-cluster-power-high-warning"]["Threshold"] == 312.3456  # the twin's
    assert cloudwatch["gpudash-gpu-cluster-energy-high-warning"]["Threshold"] == 45000123.0

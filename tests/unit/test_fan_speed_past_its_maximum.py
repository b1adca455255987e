"""A GPU fan's speed is a share of its maximum noise-tolerance speed, and may pass it: NVML's nvmlDeviceGetFanSpeed
"may exceed 100% in certain cases", DCGM "Fan speed for the device in percent 0-100 (may exceed 100)" and, for its
base-unit field, "as a ratio of maximum noise-tolerance fan speed (0.0-1.0+)" (go-dcgm pkg/dcgm/dcgm_fields.h, ids 191
and 1612). gpudash gives them the units percent and ratio, whose range ends at 100 % and 1.
"""

from __future__ import annotations

import pytest

from generator.catalog import parse_counters
from generator.model import Alarm, Condition, Query
from generator.panel_checks import threshold_problem


@pytest.mark.xfail(strict=True, reason="the catalog of DCGM's fields gives DCGM_FI_DEV_FAN_SPEED the unit percent and "
                   "DCGM_FI_DEV_FAN_SPEED_RATIO the unit ratio, whose ranges end at 100 and 1, but a fan's speed may "
                   "pass its maximum noise-tolerance speed (NVML, DCGM): an alarm on a fan above 105 % is refused as "
                   "one that never holds, and a gauge's dial stops at 100 %")
@pytest.mark.parametrize("field, typed, threshold", [("DCGM_FI_DEV_FAN_SPEED", "Fan speed (in 0-100%).", 105),
                                                     ("DCGM_FI_DEV_FAN_SPEED_RATIO", "Fan speed ratio.", 1.05)])
def test_an_alarm_on_a_fan_past_its_maximum_speed_is_not_refused(field, typed, threshold):
    catalog = parse_counters(f"{field}, gauge, {typed}\n")
    alarm = Alarm("fan-past-max", "Fan past its maximum speed", Condition(Query(field, "max", ("node", "gpu")), ">",
                                                                          threshold))
    assert threshold_problem(alarm, catalog) is None

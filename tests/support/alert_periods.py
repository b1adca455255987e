"""A rule's condition on its latest period alone, for a fleet with seconds of data."""

from __future__ import annotations

from dataclasses import replace

from generator.render.alarms import prometheus_expression


def latest_period(alarm, catalog, settings, expr: str) -> str:
    """The condition of `alarm` on its latest period alone, as one expression (the earlier ones are judged alike at an
    offset, which a fleet of seconds has no data for: tests/integration/test_period_twins.py judges them; the
    generated alert reads its recording rule's samples, which instant queries have none of: test_recorded_periods.py
    finds the two forms alike); the rule `expr` itself for the data-missing rule (no recording rule)."""
    if alarm.absent:
        return expr
    return prometheus_expression(replace(alarm, evaluation_periods=1, datapoints_to_alarm=None), catalog, settings)

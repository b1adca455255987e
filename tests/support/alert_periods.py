"""A rule's condition on its latest period alone, for a fleet with seconds of data."""

from __future__ import annotations

from dataclasses import replace

from generator.render.alarms import prometheus_expression


def latest_period(alarm, catalog, settings, expr: str) -> str:
    """The rule `expr` of `alarm` on its latest period alone when it judges several (the earlier ones are judged
    alike at an offset, which a fleet of seconds has no data for: tests/integration/test_period_twins.py judges
    them); `expr` itself otherwise."""
    if alarm.evaluation_periods == 1 or alarm.absent:
        return expr
    return prometheus_expression(replace(alarm, evaluation_periods=1, datapoints_to_alarm=None), catalog, settings)

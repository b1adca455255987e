"""The CloudWatch alarms of a project's definitions over a fleet, as its agent publishes it for half an hour of 30 s
scrapes (built_alarms, by rule), and an alarm's value per contributor at the end (read_alarm)."""

from __future__ import annotations

from tests.support.agent_points import alarm_values, alarms_through_agent
from tests.support.projects import defined_project

STEP, END, PERIOD = 30, 1800, 300


def built_alarms(folder, settings: str, fleet, alarms: str) -> tuple[dict, list]:
    """({rule: its warning alarm's request}, the datapoints) of the project of `settings` and `alarms` over `fleet`."""
    requests, points = alarms_through_agent(defined_project(folder, settings, alarms=alarms), STEP, END, fleet)
    return {name.removeprefix("gpudash-gpu-cluster-").removesuffix("-warning"): request
            for name, request in requests.items()}, points


def read_alarm(request: dict, points: list) -> dict[tuple, float]:
    """The alarm's value per contributor over the last period."""
    return alarm_values(request, points, END, PERIOD)

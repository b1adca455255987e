"""Which rules read their earlier periods as earlier evaluations recorded them (render.alarms.recorded_from_earlier):
a gauge's period statistic that is its latest one moved back, every selector inside its window's subqueries. A part
read at the evaluation's instant (a counter's GPU names) makes a recorded period differ from one computed anew: such
a rule computes its periods at each evaluation (tests/integration/test_recorded_periods.py compares the forms)."""

from __future__ import annotations

import pytest

from generator.project import load_project
from generator.render import alarms


@pytest.fixture(scope="module")
def project():
    return load_project()


def test_the_shipped_gauge_rules_read_earlier_periods_from_earlier_evaluations_and_counters_do_not(project):
    chosen = {a.id for a in project.alarms if alarms.recorded_from_earlier(a, project.catalog, project.settings)}
    assert chosen == {"xid-error", "row-remap-failure", "gpu-temp-high", "gpu-temp-critical", "framebuffer-full",
                      "gpu-idle"}
    group = alarms.prometheus_rules(project.alarms, project.catalog, project.settings)["groups"][0]
    assert group["interval"] == "1m"  # evaluations on a grid dividing the 5-minute period, whatever the server's


def test_a_statistic_reading_a_series_at_the_evaluation_instant_is_computed_at_each_evaluation(project, monkeypatch):
    idle = next(a for a in project.alarms if a.id == "gpu-idle")
    assert alarms.recorded_from_earlier(idle, project.catalog, project.settings)
    shipped = alarms.period_value

    def named_at_the_instant(alarm, catalog, settings, period=0, kind=None):  # as a counter's GPU names are read
        return f'({shipped(alarm, catalog, settings, period, kind)} + on () group_left () ' \
               f'(0 * max(present_over_time(DCGM_FI_DEV_GPU_UTIL{{pod!=""}}[1h]))))'
    monkeypatch.setattr(alarms, "period_value", named_at_the_instant)
    assert not alarms.recorded_from_earlier(idle, project.catalog, project.settings)
    rules = alarms.prometheus_rules((idle,), project.catalog, project.settings)["groups"][0]
    assert "interval" not in rules and not [r for r in rules["rules"] if "record" in r]

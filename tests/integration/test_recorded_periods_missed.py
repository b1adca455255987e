"""The shipped temperature-high rule when evaluations of its group are missed (a Prometheus restart, a group over its
interval): whatever recording rules the group has are written by `promtool tsdb create-blocks-from rules` at every
minute of a real Prometheus' stored history (at the group's own phase), all of them or all but the one or two around
5 minutes before the last (tests/support/group_evaluations), and the alert is read at the last evaluation.

The story: a GPU at 70 °C for 19 minutes, then at 95 °C for the last 11 (30 s scrapes). GpudashGpuTempHigh alarms
when the two latest periods with readings are hot at every reading: truth (and CloudWatch): it fires at the end,
whichever evaluations were made before.
"""

from __future__ import annotations

import pytest

from generator.render.alarms import prometheus_rules
from tests.support.group_evaluations import group_evaluated
from tests.support.projects import project_fixture

STEP = 30
SPAN = 30 * 60  # 30 minutes and the reading at their end
HOT_FROM = 38  # the scrape from which the GPU reads 95: 11 minutes before the end, so the two periods before
# the last evaluation (within a minute of the end, at the group's phase, which its file path moves) are hot
TEMP = "DCGM_FI_DEV_GPU_TEMP"
project = project_fixture()


def _openmetrics(start: int) -> str:
    labels = 'Hostname="n1",instance="10.0.0.1:9400",job="dcgm-exporter",UUID="GPU-n1-0",gpu="0"'
    lines = [f"# TYPE {TEMP} gauge", *(f"{TEMP}{{{labels}}} {95 if k >= HOT_FROM else 70} {start + k * STEP}"
                                       for k in range(SPAN // STEP + 1))]
    return "\n".join(lines) + "\n# EOF\n"


def _fires(tmp_path, project, missed: bool) -> list:
    """The alert's series at the group's last evaluation near the history's end, the group evaluated every minute
    (`missed`: but for the one or two evaluations between 6 and 4 minutes before the end)."""
    alarm = {a.id: a for a in project.alarms}["gpu-temp-high"]
    rules = [r for g in prometheus_rules((alarm,), project.catalog, project.settings)["groups"] for r in g["rules"]]
    (alert,) = [r for r in rules if r.get("alert")]

    def runs(start: int, end: int) -> list[tuple[int, int]]:
        return [(start, end)] if not missed else [(start, end - 360), (end - 240, end)]
    with group_evaluated(tmp_path, _openmetrics, SPAN, STEP, rules, runs) as (server, at):
        return [(s["metric"].get("node"), s["metric"].get("gpu")) for s in server.query(alert["expr"], at=at)]


def test_the_alert_fires_when_every_evaluation_was_made(tmp_path, project):
    assert _fires(tmp_path, project, False) == [("n1", "0")]


def test_the_alert_fires_when_one_evaluation_was_missed(tmp_path, project):
    assert _fires(tmp_path, project, True) == [("n1", "0")]

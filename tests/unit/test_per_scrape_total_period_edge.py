"""On agent.pipeline: classic a pod's (or node's) total of a gauge is the period's readings over the scrapes it should
hold (cloudwatch_query.per_scrape_read: SUM over the period, the threshold times n): with an exporter's scrapes landing
at the period's edge (here within 0.3 s of the minute) a period holds one scrape more or fewer, and reads (n + 1) / n of
the total. At 30 s scrapes and 5-minute periods, a pod whose one GPU reads 97 for a level of 100 is in ALARM at 12 of
the 71 minutes from minute 50 to 120 (never with scrapes mid-period); a node of two GPUs at 50 and 97 for a level of 150
at 12. The alarm's description speaks of a failed scrape reading 9/10 (a miss), not of a period of 11 reading 11/10 (a
false fire). On the OTel pipeline (the default) the agent totals each scrape and the alarm takes their mean: right at
the edge (0 minutes). Pinned: a wrong alarm, not fixed."""

from __future__ import annotations

import pytest

from tests.support import cloudwatch_eval
from tests.support.edge_scrapes import alarm_project, edge_points, gauge_page

START = 3600  # the pod's GPU reads 97 from minute 60 to 120


def _definitions(by: str, level: float) -> str:
    return (f"from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
            f"    return [Alarm('hot', 'Hot', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'sum', ({by!r},)), '>', {level}),"
            f" severity='warning', period_seconds=300)]\n")


def _page(t: float) -> str:
    return gauge_page("DCGM_FI_DEV_GPU_TEMP", [50, 97 if START <= t < 2 * START else 50])


def _fired(tmp_path, pipeline: str, by: str, level: float) -> dict:
    settings = alarm_project(tmp_path, _definitions(by, level), 30)
    settings.write_text(settings.read_text() + f"agent:\n  pipeline: {pipeline}\n")
    request, points = edge_points(settings, "hot", _page, 30, 3 * START)
    return cloudwatch_eval.fired_at(request, points, [m * 60 for m in range(50, 121)], by, evaluation_range=2)


@pytest.mark.parametrize("by, level", [("pod", 100), ("node", 150)])
def test_a_total_below_the_level_does_not_fire_on_otel(by, level, tmp_path):
    assert _fired(tmp_path, "otel", by, level) == {}


@pytest.mark.xfail(strict=True, reason="a period holding a scrape more than it should reads (n + 1) / n of the total")
@pytest.mark.parametrize("by, level", [("pod", 100), ("node", 150)])
def test_a_total_below_the_level_does_not_fire_on_classic_with_scrapes_at_the_periods_edge(by, level, tmp_path):
    assert _fired(tmp_path, "classic", by, level) == {}

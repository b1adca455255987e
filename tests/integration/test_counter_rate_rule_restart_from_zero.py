"""A user's rule of a counter's rate through an exporter restarted with its counters from 0 (a driver reloaded with
the exporter pod, as a GPU operator's driver upgrade does; or a counter the exporter keeps itself): n1's three GPUs
(A, B, C: 300, 500 and 700 W) read by one exporter pod, 7 s into each 30 s interval, to 30 s before the restart,
then by a new pod (another target) from the restart on, whose energy counter counts from 0 at the restart. No two
exporters serve a GPU at once.

The truth is the fleet's 1,500 W throughout; the growth before the new pod's first reading is not measurable (its
first reading is a new counter's: the CloudWatch agent publishes no delta for it), so a 1-minute rate of 0.5 of the
truth (one delta of 30 s) in the first period holding two of the new pod's readings, and 1.0 from the next, is what
the readings say, and what the rule's CloudWatch twin (SUM of the deltas over PERIOD()) reads; over 5 minutes 0.9
(the 30 s between the old pod's last reading and the new pod's first lost).

A rule's rate is its period's increase over the period's seconds (promql._per_gpu, summed_deltas): the old pod's last
reading is held for the missed scrapes it may have (2.5 intervals) and, while held, is the GPU's highest reading, so
the new pod's readings (below it) add nothing until the hold ends: the 1-minute rate reads 0 at 60 and 90 s after the
restart and 0.5 at 120 s, the 5-minute rate 0.7 to 0.8 for 5 minutes (rate() of the readings read 0.95 and 1.0 at 60
and 90 s, 0.915 over 5 minutes). At 60 s scrapes the 1-minute rate reads 0 for 3 minutes. Pinned strict: the
values the rule should read.
"""

from __future__ import annotations

import pytest

from tests.support.prometheus_server import STALE, written_fixture
from tests.support.projects import defined_project

ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
SPAN, STEP, RESTART, PHASE = 3600, 30, 1800, 7
WATTS = {"A": 300, "B": 500, "C": 700}
ALARMS = """\
from generator.model import Alarm, Condition, Query

ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"


def alarms(ctx):
    yield Alarm("fleet-energy-rate-1m", "Fleet energy rate", Condition(Query(ENERGY, "sum", ()), "<", 1),
                severity="warning", scope="fleet", period_seconds=60, description="d.", runbook="r.")
    yield Alarm("fleet-energy-rate-5m", "Fleet energy rate", Condition(Query(ENERGY, "sum", ()), "<", 1),
                severity="warning", scope="fleet", period_seconds=300, description="d.", runbook="r.")
"""


def _uuid(name: str) -> str:
    return f"GPU-{ord(name):08x}-5d3e-0a2f-91c4-7e20b6{ord(name):06x}"


def _restarted(start: int) -> dict[tuple, list[tuple[float, str]]]:
    """The old pod (10.0.1.5) to RESTART - STEP, the new one (10.0.1.6) from RESTART, its counter from 0 then."""
    series: dict[tuple, list[tuple[float, str]]] = {}
    for address, first, last, zero in (("10.0.1.5", 0, RESTART - STEP, -100_000), ("10.0.1.6", RESTART, SPAN, RESTART)):
        before: set[tuple] = set()
        for t in range(0, SPAN + 1, STEP):
            at, now = start + t + PHASE, set()
            for index, name in enumerate("ABC" if first <= t <= last else ""):
                labels = tuple(sorted({"__name__": ENERGY, "instance": f"{address}:9400", "job": "gpu-metrics",
                                       "gpu": str(index), "UUID": _uuid(name), "Hostname": "n1", "node": "n1",
                                       "device": f"nvidia{index}", "modelName": "NVIDIA L4"}.items()))
                series.setdefault(labels, []).append((at, str(WATTS[name] * 1000 * (at - start - zero))))
                now.add(labels)
            for labels in before - now:
                series[labels].append((at, STALE))
            before = now
    return series


restarted = written_fixture("counter-rate-restart-from-zero", _restarted, SPAN, STEP)


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> dict[str, str]:
    from generator.render.alarms import period_value

    project = defined_project(tmp_path_factory.mktemp("rules"), alarms=ALARMS)
    return {alarm.id: period_value(alarm, project.catalog, project.settings) for alarm in project.alarms}


def _ratio(prometheus, expr: str, at: int) -> float | None:
    values = [float(sample["value"][1]) for sample in prometheus.query(expr, at=at)]
    return round(values[0] / (1500 * 1000), 3) if len(values) == 1 else None


@pytest.mark.xfail(strict=True, reason="a rule's counter rate reads the increase's handover to a new target: the old "
                   "target's held last reading hides the new counter's growth from 0 for 2.5 intervals (1-minute "
                   "rate 0 at 60 and 90 s after the restart, 5-minute 0.7)")
def test_a_rate_rule_reads_the_new_counters_growth_after_an_exporter_restart_from_zero(restarted, rules):
    """Every 10 s from 60 to 300 s after the restart the 1-minute rate reads at least 0.5 of the fleet's 1,500 W and
    the 5-minute one at least 0.85 (the readings lose the 30 s between the old pod's last reading and the new pod's
    first: 0.9 of a 5-minute period holding the restart, as the CloudWatch twin's deltas read)."""
    prometheus, start = restarted
    read = {after: (_ratio(prometheus, rules["fleet-energy-rate-1m"], start + RESTART + after),
                    _ratio(prometheus, rules["fleet-energy-rate-5m"], start + RESTART + after))
            for after in range(60, 301, 10)}
    wrong = {after: pair for after, pair in read.items()
             if pair[0] is None or pair[1] is None or pair[0] < 0.5 or pair[1] < 0.85}
    assert not wrong, wrong


def test_the_rate_rules_read_the_truth_before_the_restart(restarted, rules):
    """Every 30 s in the 10 minutes before the restart both rates read the fleet's 1,500 W."""
    prometheus, start = restarted
    read = {after: [_ratio(prometheus, expr, start + RESTART + after) for expr in rules.values()]
            for after in range(-600, 1, 30)}
    assert all(values == [1.0, 1.0] for values in read.values()), read

"""generator/mean_sign.py: a mean's flag read as the sign of S - t*C is the ratio's flag fl(S / C) against t, for
every level it is used for, and the rules keep the ratio where it is not (a level of a long significand)."""

from __future__ import annotations

import math
import operator
import random
from dataclasses import replace

import pytest

from generator import mean_sign
from generator.project import load_project
from generator.render.alarms import prometheus_expression

COMPARISONS = (operator.lt, operator.gt, operator.le, operator.ge)


def _near(value: float, steps: int) -> float:
    for _ in range(abs(steps)):
        value = math.nextafter(value, math.inf if steps > 0 else -math.inf)
    return value


@pytest.mark.parametrize("level", [5.0, 2.5, 0.75, 50.0, 1.0, 99.5, 3.0])
def test_the_sign_of_s_less_t_c_is_the_ratios_flag(level):
    assert mean_sign.exact_against(level)
    rng = random.Random(level)
    for _ in range(20000):
        count = rng.choice((1, 2, 3, 59, 60, 61, 120, 359, 360, 4097, rng.randrange(1, 2 ** 16)))
        product = level * count
        assert product / count == level and math.fsum([product, -level * count]) == 0  # t*C exact
        if rng.random() < 0.5:  # a sum a few units in the last place from the level's
            total = _near(product, rng.randrange(-4, 5))
        else:  # a sum of readings near the level, added in order as Prometheus adds them
            total = 0.0
            for _ in range(min(count, 400)):
                total += level + rng.choice((0.0, 1e-15, -1e-15, 0.1, -0.1, 0.05, -0.05)) * level
            count = min(count, 400)
        difference = total + count * -level  # the rule's sum of S * 1 and C * -t
        for compare in COMPARISONS:
            assert compare(total / count, level) == compare(difference, 0), (total, count, level, compare)


@pytest.mark.parametrize("level,exact", [(5, True), (2.5, True), (0.75, True), (-5, True), (7.3, False),
                                         (0.1, False), (0, False), (math.inf, False), (math.nan, False)])
def test_only_levels_of_a_short_significand_are_read_by_sign(level, exact):
    assert mean_sign.exact_against(level) is exact


def test_the_idle_rule_reads_by_sign_and_keeps_the_ratio_for_a_long_level():
    project = load_project()
    alarm = next(a for a in project.alarms if a.id == "gpu-idle")
    shipped = prometheus_expression(alarm, project.catalog, project.settings)
    assert mean_sign.STAT_LABEL in shipped and "< bool 0)" in shipped
    long_level = replace(alarm, condition=replace(alarm.condition, threshold=7.3))
    kept = prometheus_expression(long_level, project.catalog, project.settings)
    assert mean_sign.STAT_LABEL not in kept and "< bool 7.3)" in kept


def test_a_long_levels_sign_would_differ_from_the_ratios_flag():
    """Why a level of a long significand keeps the ratio: t*C rounds, and the sign of S - t*C then differs from the
    ratio's flag at sums a unit in the last place from t*C."""
    rng = random.Random(7)
    differ = 0
    for _ in range(20000):
        count = rng.randrange(1, 5000)
        total = _near(7.3 * count, rng.randrange(-3, 4))
        differ += (total / count < 7.3) != (total + count * -7.3 < 0)
    assert differ > 0 and not mean_sign.exact_against(7.3)

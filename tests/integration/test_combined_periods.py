"""A per-GPU gauge rule reads all its periods' statistics in one expression and names the GPUs once
(render.alarms.period_values, promql.Periods), where it named them once per period. Both forms, the expression of
one term per period and the combined one, run side by side in `promtool test rules` over messy fleets' histories
(tests/support/messy_history: Hostname and hostname, an exporter writing its own pod name as Hostname, a node scraped
without the node label, MIG instances, a gap in a node's data with its series marked stale, blank temperatures; the
bundled mixed fleet and seeded random ones), and give the same series and values at every evaluation: the alerts as
generated, and their weighted sums before the comparison with the level (every GPU's, firing or not; on a random
fleet that has no GPU in alarm, the sums alone are required to give something)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from generator.project import load_project
from generator.render.alarms import period_value, prometheus_expression
from tests.support import messy_history, mixed_fleet, random_fleet

SCRAPES = 70  # 35 minutes: the evaluation range of the longest variant below and more
EVERY = 240  # seconds between the compared evaluations (and the groups'), 8 of them
# (alarm, N, M, missing data, aggregation): the bundled rules as they are (None), other ranges a user may set, and a
# mean per GPU (its readings' sum over their count, each named)
VARIANTS = (("gpu-temp-high", None, None, None, None), ("gpu-temp-critical", None, None, None, None),
            ("xid-error", None, None, None, None), ("gpu-temp-high", 3, 3, "notBreaching", None),
            ("gpu-temp-critical", 3, 3, "missing", None), ("gpu-temp-high", 1, 1, "missing", "avg"))
FLEETS = (None, 3, 8)  # the bundled mixed fleet, then random_fleet's seeds


@pytest.fixture(scope="module")
def project():
    return load_project()


def _every_sum(expr: str) -> str:
    """The expression with each sum's comparison made one every sum passes: the weighted sums themselves."""
    return re.sub(r"\) >= \d+\)", ") >= -1000000)", expr)


def _history(seed: int | None, metrics: set[str]) -> list[dict]:
    fleet = mixed_fleet.FLEET if seed is None else random_fleet.fleet(seed)
    kept, mixed_fleet.FLEET = mixed_fleet.FLEET, fleet
    try:
        return messy_history.input_series(messy_history.history(1, SCRAPES, metrics))
    finally:
        mixed_fleet.FLEET = kept


def test_the_combined_periods_give_the_same_alerts_and_sums_as_a_term_per_period(project, tmp_path):
    by_id = {a.id: a for a in project.alarms}
    catalog, settings = project.catalog, project.settings
    forms = []
    for i, (base, periods, needed, missing, aggregation) in enumerate(VARIANTS):
        alarm = by_id[base] if periods is None else replace(by_id[base], evaluation_periods=periods,
                                                            datapoints_to_alarm=needed, missing_data=missing)
        if aggregation:
            query = replace(alarm.condition.query, aggregation=aggregation)
            alarm = replace(alarm, condition=replace(alarm.condition, query=query))
        apart = prometheus_expression(alarm, catalog, settings,
                                      lambda kind, period, alarm=alarm: period_value(alarm, catalog, settings,
                                                                                     period, kind))
        combined = prometheus_expression(alarm, catalog, settings)
        assert combined != apart and "gpudash_period) group_left ()" in combined, base  # the combined form is read
        forms.append((f"{base}-{i}", ([{"expr": apart}], [{"expr": combined}])))
        forms.append((f"{base}-{i}-sums", ([{"expr": _every_sum(apart)}], [{"expr": _every_sum(combined)}])))
    metrics = set(re.findall(r"\b(DCGM_[A-Z0-9_]+)\b", json.dumps(forms)))
    end = (SCRAPES - 1) * messy_history.SCRAPE // EVERY * EVERY
    content = messy_history.differential(forms, EVERY, end, [_history(seed, metrics) for seed in FLEETS])
    for test in content["tests"][1:]:  # a random fleet may have no GPU in alarm: its sums are still compared
        test["promql_expr_test"] = [check for check in test["promql_expr_test"]
                                    if not re.search(r"gpudash_check_old_\d*[02468]\[", check["expr"])]
    assert messy_history.differential_failures(content, EVERY, tmp_path) == ""

"""A per-GPU gauge rule reads all its periods' statistics in one expression and names the GPUs once
(render.alarms.period_values, promql.Periods), where it named them once per period. Both forms, the expression of
one term per period and the combined one, run side by side in `promtool test rules` over messy fleets' histories
(tests/support/messy_history: Hostname and hostname, an exporter writing its own pod name as Hostname, a node scraped
without the node label, MIG instances, a gap in a node's data with its series marked stale, blank temperatures; the
bundled mixed fleet and seeded random ones), and give the same series and values at every evaluation: the alerts as
generated, and their weighted sums before the comparison with the level (every GPU's, firing or not; on a random
fleet that has no GPU in alarm, the sums alone are required to give something). The fleets are one test group, each
under its own marks (a rule's evaluation costs promtool about the same whatever the series: one group of three fleets
cost 6.7 s of CPU, three groups 12.4 s)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from generator.project import load_project
from generator.render.alarms import period_value, prometheus_expression
from tests.support import messy_history, mixed_fleet, random_fleet
from tests.support.promtool_rules import judged_apart

SCRAPES = 70  # 35 minutes: the evaluation range of the longest variant below and more
EVERY = 240  # seconds between the compared evaluations (and the groups'), 8 of them
# (alarm, N, M, missing data, aggregation): the bundled rules as they are (None), other ranges a user may set, and a
# mean per GPU (its readings' sum over their count, each named)
VARIANTS = (("gpu-temp-high", None, None, None, None), ("gpu-temp-critical", None, None, None, None),
            ("xid-error", None, None, None, None), ("gpu-temp-high", 3, 3, "notBreaching", None),
            ("gpu-temp-critical", 3, 3, "missing", None), ("gpu-temp-high", 1, 1, "missing", "avg"))
FLEETS = (None, 3, 8)  # the bundled mixed fleet, then random_fleet's seeds
# a counter's increase per GPU (promql._per_gpu's `periods`): the bundled rules, on one fleet at a time (their nested
# subqueries over three fleets in one group exceed promtool's sample limit, in either form), the mixed fleet and the
# first random one (5.9 and 2.3 s of CPU; the second random fleet, 3.6 s more, failed no mutation the two did not)
COUNTER_VARIANTS = (("pcie-replays", None, None, None, None), ("uncorrectable-rows", None, None, None, None))
COUNTER_FLEETS = 2


@pytest.fixture(scope="module")
def project():
    return load_project()


def _every_sum(expr: str) -> str:
    """The expression with each sum's comparison made one every sum passes: the weighted sums themselves."""
    return re.sub(r"\) >= \d+\)", ") >= -1000000)", expr)


# the labels naming a fleet's nodes, GPUs, pods and targets: each fleet's values marked its own (_own)
NAMING = ("namespace", "node", "UUID", "Hostname", "hostname", "instance", "exporter_pod", "pod")


def _own(series: str, k: int) -> str:
    """A series of fleet k with its naming labels' values marked `-fk` (the mixed fleet, 0, as it is): no GPU, node,
    pod or target of one fleet is another's (a random fleet's node may bear the mixed fleet's node's name)."""
    if not k:
        return series
    return re.sub(rf'\b({"|".join(NAMING)})="([^"]*)"', lambda m: f'{m[1]}="{m[2]}-f{k}"', series)


def _history(k: int, seed: int | None, metrics: set[str]) -> list[dict]:
    fleet = mixed_fleet.FLEET if seed is None else seed if isinstance(seed, tuple) else random_fleet.fleet(seed)
    kept, mixed_fleet.FLEET = mixed_fleet.FLEET, fleet
    try:
        return [{**one, "series": _own(one["series"], k)}
                for one in messy_history.input_series(messy_history.history(1, SCRAPES, metrics))]
    finally:
        mixed_fleet.FLEET = kept


def _fleet_gives(expr: str, k: int) -> str:
    """`expr` (a check that the old form gave something) on fleet k's GPUs alone: its output's node marked `-fk`
    (none marked, for the mixed fleet)."""
    marks = "|".join(f"-f{j}" for j in range(1, len(FLEETS)))
    selector = f'{{node=~".*-f{k}"}}' if k else f'{{node!~".*({marks})"}}'
    return re.sub(r"(gpudash_check_old_\d+)\[", rf"\1{selector}[", expr)


def test_the_combined_periods_give_the_same_alerts_and_sums_as_a_term_per_period(project, tmp_path):
    _compared(project, tmp_path, VARIANTS, FLEETS)


# the mixed fleet's counters in two parts, one group each: all its GPUs at once (each copy's period and its reach,
# promql._led_period, a 570 s subquery over a 600 s one) pass promtool's 10,000 samples a query; node a (its GPU 0
# replays 50 a second: the replays alert fires) in the first, whose alerts are required to give something
MIXED_PARTS = (mixed_fleet.FLEET[:4], mixed_fleet.FLEET[4:])


@pytest.mark.parametrize("fleet", range(COUNTER_FLEETS))
def test_a_counters_combined_periods_give_the_same_alerts_and_sums_as_a_term_per_period(project, tmp_path, fleet):
    if fleet:
        _compared(project, tmp_path, COUNTER_VARIANTS, FLEETS[:fleet + 1], fleet)
        return
    for i, part in enumerate(MIXED_PARTS):
        (tmp_path / f"part-{i}").mkdir()
        _compared(project, tmp_path / f"part-{i}", COUNTER_VARIANTS, (part,), alerts_given=not i)


def _compared(project, tmp_path, variants, fleets, first: int = 0, alerts_given: bool = True):
    """Both forms of each of `variants` evaluated side by side over the fleets `fleets[first:]` in one group (a fleet
    a seed of random_fleet's, the mixed fleet (None), or its nodes named); the mixed fleet's alerts required to give
    something where `alerts_given`, as a random fleet's are not."""
    by_id = {a.id: a for a in project.alarms}
    catalog, settings = project.catalog, project.settings
    forms = []
    for i, (base, periods, needed, missing, aggregation) in enumerate(variants):
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
        # the fleets' series in one group: no join of either form matches one fleet's series with another's
        assert all(judged_apart(expr) for expr in (apart, combined)), base
    metrics = set(re.findall(r"\b(DCGM_[A-Z0-9_]+)\b", json.dumps(forms)))
    end = (SCRAPES - 1) * messy_history.SCRAPE // EVERY * EVERY
    content = messy_history.differential(forms, EVERY, end, [[one for k, seed in enumerate(fleets) if k >= first
                                                              for one in _history(k, seed, metrics)]])
    (test,) = content["tests"]
    compared = [check for check in test["promql_expr_test"] if "count_over_time(" not in check["expr"]]
    gives = [check for check in test["promql_expr_test"] if "count_over_time(" in check["expr"]]
    assert len(gives) == len(forms)
    # each fleet's old forms give something; a random fleet may have no GPU in alarm: its sums alone are required to
    test["promql_expr_test"] = compared + [{**check, "expr": _fleet_gives(check["expr"], k)}
                                           for k in range(first, len(fleets))
                                           for check in gives
                                           if not k and alerts_given
                                           or not re.search(r"gpudash_check_old_\d*[02468]\[", check["expr"])]
    assert messy_history.differential_failures(content, EVERY, tmp_path) == ""

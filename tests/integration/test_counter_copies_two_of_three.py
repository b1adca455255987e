"""Two exporter copies of a GPU (the old and the new pod of tests/support/exporter_overlap, both serving throughout),
the old pod's scrapes failing two of every three from 300 s on (test_counter_copies_flapping
covers every 2nd, every 3rd and 2 of 4). A link replaying 0.15 a second: 45 per 5 minutes, under GpudashPcieReplays'
50. The rule's period, reckoned on the merged steps (promql._prorated, then _leaders_share), read 41, 52, 42 in turn
at the whole minutes 11 to 29 (at 0.18 a second, truth 54: 49, 63, 51): the rule fired at 12, 15, 18, ... minutes for
a link under its level (pinned as a strict xfail, 60dc78a3). Each exporter reads DCGM on its own clock (the new pod's
readings are taken 28 s before its scrapes, the old pod's 1 s), and the merged steps mixed the two. Now the period is
reckoned on the copy leading at its start alone, both copies still read at its end (promql._led_period: its own
readings, shares and reach, the failing copy's `up` 0): 44.7 to 45.3 at every minute, and the rule stays silent."""

from __future__ import annotations

import math

from tests.integration import test_cloudwatch_rollout_twins as twins
from tests.integration.test_counter_copies_flapping import _missing
from tests.integration.test_counter_copies_hostile import ALERT
from tests.support import exporter_overlap as overlap
from tests.support.promtool_rules import expected_alert, promtool_test, rules, targets_up  # noqa: F401 (a fixture)

MINUTES = range(11, overlap.END // 60)


def _story(per_second: float) -> list[dict]:
    readings = {twins.REPLAYS: lambda taken: str(overlap.REPLAYS_SINCE_BOOT + math.floor(per_second * taken))}
    series = _missing(twins._series(overlap.END, 0, readings=readings), 3, 300, overlap.END, run=2)
    return [*series, *targets_up(series)]


def test_the_replays_rule_stays_silent_under_its_level_when_a_copy_misses_two_of_every_three_scrapes(
        rules):  # noqa: F811
    promtool_test(rules, "copy_two_of_three_silent.yaml", [{
        "interval": f"{twins.STEP}s", "input_series": _story(0.15),
        "alert_rule_test": [{"eval_time": f"{m}m", "alertname": ALERT, "exp_alerts": []} for m in MINUTES]}])


def test_the_replays_rule_fires_over_its_level_when_a_copy_misses_two_of_every_three_scrapes(rules):  # noqa: F811
    """At 0.18 a second (54 per 5 minutes) the rule fires at every minute (the merged steps read 49 at every 3rd)."""
    firing = [expected_alert(rules, ALERT, node=overlap.NODE, gpu="0")]
    promtool_test(rules, "copy_two_of_three_fires.yaml", [{
        "interval": f"{twins.STEP}s", "input_series": _story(0.18),
        "alert_rule_test": [{"eval_time": f"{m}m", "alertname": ALERT, "exp_alerts": firing} for m in MINUTES]}])

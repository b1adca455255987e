"""One exporter (no copy beside it) missing every 2nd scrape (a counter rate was seen reading 270 s of
growth for 300 s of truth). Its scrapes every 30 s (the old exporter pod of tests/support/exporter_overlap, never
replaced), each reading DCGM 1 s before; from 300 s on every 2nd scrape fails (a staleness marker in the sample's
place, its target's `up` 0: targets_up). The link replays 0.1 a second (30 per 5 minutes), or 0.18 (54 per 5 minutes,
over GpudashPcieReplays' 50) for the rule.

Truth: the panel "PCIe replays" promises a per-second rate over its window ($__rate_interval, 2 minutes; its window ends
at the GPU's latest step, its description says): 0.1 at every minute. An increase over a 5-minute dashboard range: 30
(54 at 0.18). The alert rule's period (its 5 minutes before the evaluation, as its CloudWatch twin sums them): the
link's replays in those 5 minutes, 54 at every whole minute.

Found: the panel reads 0.1 and the increase over the range 54 at every minute (each the growth over the seconds it grew
in, or the range's readings whole). The rule read 48 to 49 for 54 (about 270 s of the period's 300 s of growth): the
period starts and ends on a missed scrape, so its first reading (570 -> 630 s for a period from 600 s) stands for two
scrapes, one due inside, and the scrape due at its end has not arrived: promql._leaders_share counts 1/2 + 1/2 of that
reading, the whole, but a share reaching the whole was left out (`< 1`) for the merged steps' 1/2, so a link
replaying 54 per 5 minutes never fired the rule. Fixed: the leader's share is clamped at the whole (clamp_max), the
same query size and cost. docs/cloudwatch.md says it."""

from __future__ import annotations

import math

from generator.project import load_project
from generator.render.alarms import period_value
from tests.integration import test_cloudwatch_rollout_twins as twins
from tests.integration.test_counter_copies_flapping import _missing
from tests.integration.test_counter_copies_hostile import ALERT, PANEL_MINUTES, _panel
from tests.support import exporter_overlap as overlap
from tests.support.promtool_rules import expected_alert, promtool_test, rules, targets_up  # noqa: F401

LINE = {"gpu": "0", "node": overlap.NODE}
RULE_MINUTES = range(11, overlap.END // 60)  # each period wholly in the missed scrapes, ending before the data does


def _story(per_second: float) -> list[dict]:
    """The one exporter's series and its `up`, every 2nd scrape missed from 300 s on."""
    readings = {twins.REPLAYS: lambda taken: str(overlap.REPLAYS_SINCE_BOOT + math.floor(per_second * taken))}
    series = _missing(twins._series(overlap.END, overlap.END, readings=readings), 2, 300, overlap.END)
    return [*series, *targets_up(series)]


def _reads(rules, name: str, expr: str, per_second: float, truth: float, minutes) -> None:  # noqa: F811
    """Pass promtool when `expr` reads the GPU's one line within 1e-9 of `truth` at each of `minutes`."""
    labels = "{" + ", ".join(f'{k}="{v}"' for k, v in LINE.items()) + "}"
    promtool_test(rules, name, [{"interval": f"{twins.STEP}s", "input_series": _story(per_second),
                                 "promql_expr_test": [{"expr": f"abs(({expr}) - {truth!r}) < bool 1e-9",
                                                       "eval_time": f"{m}m",
                                                       "exp_samples": [{"labels": labels, "value": 1}]}
                                                      for m in minutes]}])


def test_the_replays_rate_panel_reads_the_links_rate_when_its_one_exporter_misses_every_2nd_scrape(
        rules):  # noqa: F811
    _reads(rules, "one_exporter_every_2nd_rate.yaml", _panel("gpudash-health", "PCIe replays"), 0.1, 0.1,
           PANEL_MINUTES)


def test_an_increase_over_the_range_reads_the_replays_when_its_one_exporter_misses_every_2nd_scrape(
        rules):  # noqa: F811
    increase = _panel("gpudash-health", "Rows remapped (uncorrectable)", twins.REPLAYS)  # over a 5-minute range
    _reads(rules, "one_exporter_every_2nd_increase.yaml", increase, 0.18, 54.0, RULE_MINUTES)


def test_the_replays_rules_period_reads_the_links_replays_when_its_one_exporter_misses_every_2nd_scrape(
        rules):  # noqa: F811
    project = load_project()
    alarm = {a.id: a for a in project.alarms}["pcie-replays"]
    _reads(rules, "one_exporter_every_2nd_rule.yaml", period_value(alarm, project.catalog, project.settings), 0.18,
           54.0, RULE_MINUTES)


def test_the_replays_rule_fires_for_a_link_over_its_level_when_its_one_exporter_misses_every_2nd_scrape(
        rules):  # noqa: F811
    """GpudashPcieReplays (more than 50 within 5 minutes) fires at every minute whose period is wholly in the missed
    scrapes for the link's 54 per 5 minutes: it fired at none (48 to 49 read)."""
    cases = [{"eval_time": f"{m}m", "alertname": ALERT,
              "exp_alerts": [expected_alert(rules, ALERT, node=overlap.NODE, gpu="0")]} for m in RULE_MINUTES]
    promtool_test(rules, "one_exporter_every_2nd_alert.yaml", [{"interval": f"{twins.STEP}s",
                                                                "input_series": _story(0.18),
                                                                "alert_rule_test": cases}])

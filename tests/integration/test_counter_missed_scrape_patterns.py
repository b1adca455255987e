"""The replays rule's period (GpudashPcieReplays: more than 50 within 5 minutes) when one exporter (no copy beside it)
misses scrapes in a pattern (issue 10: an alert and its twin fire on the same situation). The exporter
is the old pod of tests/support/exporter_overlap, never replaced: scraped every 30 s on the half minute, reading DCGM
1 s before; a missed scrape is a staleness marker in the sample's place and its target's `up` 0 (targets_up).

Truth, from the story's own counter, not from a query: the link replays `rate` a second (rate x 300 a whole number,
so every 5 minutes of readings grow by exactly that much: floor(rate x t) is the replays made by t), and the
period (t - 300, t] of the rule's instant t holds the replays read in it: rate x 300. The rule reads a period from
the readings that arrived, each reading's delta shared over the scrapes it stands for, and a period whose latest
scrapes have not arrived reaches as many intervals further back (promql._prorated): within 1 replay of the truth
(the readings are whole replays), and no value where the period holds no reading (as CloudWatch's period has no
datapoint). Found: runs of missed scrapes longer than the first reading's share could reach read low (every 3rd
missed: 48-49 for 54 at every 3rd minute; 3 of 5: 37.5; 4 of 6: 37-38): the alert silent over its level.

A counter reset inside the period (the GPU reset right after a reading, its next readings counting from 0) reads
the same growth: the reading after it is its own delta. A gap longer than the period (8 minutes, under the rule's
10-minute horizon): the periods inside it have no value, those across its ends read their share of the reading back
and of the readings before it. Not covered: a gap longer than 10 minutes (WINDOW_PREVIOUS_WITHIN), whose growth is
counted in no period (docs/cloudwatch.md, "A counter across a gap")."""

from __future__ import annotations

import math
import random

import pytest

from generator.project import load_project
from generator.render.alarms import period_value
from tests.integration import test_cloudwatch_rollout_twins as twins
from tests.integration.test_counter_copies_hostile import ALERT, PANEL_MINUTES, _panel
from tests.support import exporter_overlap as overlap
from tests.support.promtool_rules import expected_alert, promtool_test, rules, targets_up  # noqa: F401

LINE = {"gpu": "0", "node": overlap.NODE}
# each period whose reach (up to 9 intervals before it) lies after the exporter's first reading, ending before the data
MINUTES = range(10, overlap.END // 60)
FIRST = 3  # the first scrape (of every 30 s from 0) a pattern may miss


def _every(every: int, run: int, first: int = 10) -> frozenset[int]:
    """`run` scrapes in a row missed of every `every`, from the scrape `first` on."""
    return frozenset(k for k in range(first, overlap.END // twins.INTERVAL) if (k - first) % every < run)


def _random(share: float, seed: int) -> frozenset[int]:
    """Each scrape from FIRST on missed with the chance `share` (a fixed seed)."""
    draw = random.Random(seed)
    return frozenset(k for k in range(FIRST, overlap.END // twins.INTERVAL) if draw.random() < share)


# a pattern -> (the scrapes missed: their numbers, k at k x 30 s; a GPU reset right after the reading of scrape k)
PATTERNS = {
    "every-2nd": (_every(2, 1), None),
    "every-3rd": (_every(3, 1), None),
    "2-of-3": (_every(3, 2), None),
    "3-of-5": (_every(5, 3), None),
    "4-of-6": (_every(6, 4), None),
    "2-of-4": (_every(4, 2), None),
    "every-4th": (_every(4, 1), None),
    "5-of-7": (_every(7, 5), None),
    "8-of-10": (_every(10, 8), None),
    "9-of-10": (_every(10, 9), None),
    "random-30%": (_random(0.3, 4301), None),
    "random-50%": (_random(0.5, 4302), None),
    "random-70%": (_random(0.7, 4303), None),
    "random-85%": (_random(0.85, 4304), None),
    "reset-in-missed-scrapes": (_every(3, 2), 31),
    "reset-random-50%": (_random(0.5, 4305), 40),
    "gap-longer-than-the-period": (frozenset(range(30, 46)), None),
    "gap-and-every-3rd": (frozenset(range(20, 36)) | _every(3, 1, 36), None),
}


def _reading(rate: float, missed: frozenset[int], reset: int | None):
    """The exporter's reading of the link at `taken` s: since boot, or where the GPU was reset right after the reading
    of the first scrape that arrived from `reset` on, the replays made since then (none made after that reading is
    lost to the readings: the truth is the replays made)."""
    reset_at = None if reset is None else min(k for k in range(reset, 60) if k not in missed) * twins.INTERVAL - 1

    def reading(taken: float) -> str:
        made = math.floor(rate * taken)
        if reset_at is not None and taken > reset_at:
            return str(made - math.floor(rate * reset_at))
        return str(overlap.REPLAYS_SINCE_BOOT + made)
    return reading


def _story(rate: float, missed: frozenset[int], reset: int | None) -> list[dict]:
    series = twins._series(overlap.END, overlap.END, readings={twins.REPLAYS: _reading(rate, missed, reset)})
    for one in series:
        values = one["values"].split()
        for k in missed:
            slot = k * twins.INTERVAL // twins.STEP
            if slot < len(values) and values[slot] != "_":
                values[slot] = "stale"
        one["values"] = " ".join(values)
    return [*series, *targets_up(series, gone=False)]  # the exporter misses scrapes to the story's end


def _read_in(missed: frozenset[int], minute: int) -> bool:
    """Whether the period ending at `minute` holds a reading (a scrape that arrived)."""
    end = minute * 60
    return any(k not in missed for k in range(1, overlap.END // twins.INTERVAL)
               if end - 300 < k * twins.INTERVAL <= end)


def _rule_period() -> str:
    project = load_project()
    alarm = {a.id: a for a in project.alarms}["pcie-replays"]
    return period_value(alarm, project.catalog, project.settings)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_replays_rules_period_reads_the_links_replays_through_missed_scrapes(rules, pattern):  # noqa: F811
    missed, reset = PATTERNS[pattern]
    rate = 0.18
    truth = rate * 300
    labels = "{" + ", ".join(f'{k}="{v}"' for k, v in LINE.items()) + "}"
    expr = f"abs(({_rule_period()}) - {truth!r}) < bool 1"
    cases = [{"expr": expr, "eval_time": f"{m}m",
              "exp_samples": [{"labels": labels, "value": 1}] if _read_in(missed, m) else []} for m in MINUTES]
    promtool_test(rules, f"missed_{pattern}.yaml", [{"interval": f"{twins.STEP}s",
                                                             "input_series": _story(rate, missed, reset),
                                                             "promql_expr_test": cases}])


@pytest.mark.parametrize("pattern", ["every-3rd", "2-of-3", "3-of-5", "4-of-6", "random-70%"])
def test_the_replays_rule_fires_over_its_level_and_stays_silent_under_it_through_missed_scrapes(
        rules, pattern):  # noqa: F811
    """GpudashPcieReplays fires at every minute whose period holds a reading for a link replaying 54 per 5 minutes,
    and at none for 45 (its level: 50)."""
    missed, reset = PATTERNS[pattern]
    firing = [expected_alert(rules, ALERT, node=overlap.NODE, gpu="0")]
    tests = [{"interval": f"{twins.STEP}s", "input_series": _story(rate, missed, reset),
              "alert_rule_test": [{"eval_time": f"{m}m", "alertname": ALERT,
                                   "exp_alerts": firing if over and _read_in(missed, m) else []} for m in MINUTES]}
             for rate, over in ((0.18, True), (0.15, False))]
    promtool_test(rules, f"missed_{pattern}_alert.yaml", tests)


@pytest.mark.parametrize("pattern", ["every-3rd", "3-of-5", "random-50%", "reset-in-missed-scrapes"])
def test_the_replays_rate_panel_reads_the_links_rate_through_missed_scrapes(rules, pattern):  # noqa: F811
    """The Grafana twin, the health dashboard's "PCIe replays" (per second over $__rate_interval, from the counters'
    recordings: each reading's delta over the seconds since the reading before): the link's 0.1 a second (3 replays
    per scrape interval, exactly) at every minute whose window holds a reading with one before it."""
    missed, reset = PATTERNS[pattern]
    labels = "{" + ", ".join(f'{k}="{v}"' for k, v in LINE.items()) + "}"
    expr = f"abs(({_panel('gpudash-health', 'PCIe replays')}) - 0.1) < bool 1e-9"
    promtool_test(rules, f"missed_{pattern}_rate.yaml", [{
        "interval": f"{twins.STEP}s", "input_series": _story(0.1, missed, reset),
        "promql_expr_test": [{"expr": expr, "eval_time": f"{m}m", "exp_samples": [{"labels": labels, "value": 1}]}
                             for m in PANEL_MINUTES]}])

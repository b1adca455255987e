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
import re
from typing import Callable

import pytest

from generator.project import load_project
from generator.render.alarms import period_value
from tests.integration import test_cloudwatch_rollout_twins as twins
from tests.integration.test_counter_copies_hostile import ALERT, PANEL_MINUTES, _panel
from tests.support import exporter_overlap as overlap
from tests.support.promtool_rules import (  # noqa: F401
    alert_rule, expected_alert, judged_apart, promtool_test, rules, stories_own, targets_up)

LINE = {"gpu": "0", "node": overlap.NODE}
LABELS = "{" + ", ".join(f'{k}="{v}"' for k, v in LINE.items()) + "}"  # the line's, as promtool writes them
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


_FAILURES: dict[tuple[str, str], str | None] = {}  # (what a test judges, a pattern) -> promtool's failure; None: passed


def _judged_together(judged: str, pattern: str, patterns: list[str], judge: Callable[[list[str]], None]) -> str | None:
    """promtool's failure judging `patterns` together (`judge(part)`: one promtool run of the part's patterns, each its
    own GPU on its own node, _own), or None; `pattern`'s. promtool's cost is in evaluating the expression or the rules
    at each step, about the same for one pattern's series or many (the period's 18 runs of one pattern each: 7.9
    CPU-s; 9 patterns in one run: 1.2). The expressions join no pattern's series with another's (judged_apart, each
    test checks). A run over promtool's limit of samples a query is halved (tests/support/promtool_batches); any other
    failure fails the test of every pattern judged with it, with promtool's message."""
    from tests.support.promtool_batches import batch_failure

    if (judged, pattern) not in _FAILURES:
        failure = batch_failure(patterns, judge)
        _FAILURES.update({(judged, name): failure for name in patterns})
    return _FAILURES[judged, pattern]


def _own(text: str, pattern: str) -> str:
    """`text` (a series or an expected sample's labels) with the pattern's own namespace, node and GPU UUID."""
    return stories_own(text, list(PATTERNS).index(pattern))


def _own_node(pattern: str) -> str:
    """The pattern's own name of the exporter's node (_own)."""
    return re.search(r'node="([^"]*)"', _own(LABELS, pattern))[1]


def _owned_story(rate: float, pattern: str) -> list[dict]:
    return [{**one, "series": _own(one["series"], pattern)} for one in _story(rate, *PATTERNS[pattern])]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_replays_rules_period_reads_the_links_replays_through_missed_scrapes(rules, pattern):  # noqa: F811
    rate = 0.18
    truth = rate * 300
    expr = f"abs(({_rule_period()}) - {truth!r}) < bool 1"
    assert judged_apart(expr)

    def judge(part: list[str]) -> None:
        cases = [{"expr": expr, "eval_time": f"{m}m",
                  "exp_samples": [{"labels": _own(LABELS, name), "value": 1} for name in part
                                  if _read_in(PATTERNS[name][0], m)]} for m in MINUTES]
        promtool_test(rules, f"missed_{part[0]}.yaml", [{
            "interval": f"{twins.STEP}s", "input_series": [one for name in part for one in _owned_story(rate, name)],
            "promql_expr_test": cases}])
    failure = _judged_together("period", pattern, list(PATTERNS), judge)
    assert failure is None, failure


ALERT_PATTERNS = ["every-3rd", "2-of-3", "3-of-5", "4-of-6", "random-70%"]


@pytest.mark.parametrize("pattern", ALERT_PATTERNS)
def test_the_replays_rule_fires_over_its_level_and_stays_silent_under_it_through_missed_scrapes(
        rules, pattern):  # noqa: F811
    """GpudashPcieReplays fires at every minute whose period holds a reading for a link replaying 54 per 5 minutes,
    and at none for 45 (its level: 50)."""
    assert judged_apart(alert_rule(rules, ALERT)["expr"])

    def judge(part: list[str]) -> None:
        tests = [{"interval": f"{twins.STEP}s",
                  "input_series": [one for name in part for one in _owned_story(rate, name)],
                  "alert_rule_test": [{"eval_time": f"{m}m", "alertname": ALERT, "exp_alerts": [
                      expected_alert(rules, ALERT, node=_own_node(name), gpu="0")
                      for name in part if over and _read_in(PATTERNS[name][0], m)]} for m in MINUTES]}
                 for rate, over in ((0.18, True), (0.15, False))]
        promtool_test(rules, f"missed_{part[0]}_alert.yaml", tests)
    failure = _judged_together("alert", pattern, ALERT_PATTERNS, judge)
    assert failure is None, failure


RATE_PATTERNS = ["every-3rd", "3-of-5", "random-50%", "reset-in-missed-scrapes"]


@pytest.mark.parametrize("pattern", RATE_PATTERNS)
def test_the_replays_rate_panel_reads_the_links_rate_through_missed_scrapes(rules, pattern):  # noqa: F811
    """The Grafana twin, the health dashboard's "PCIe replays" (per second over $__rate_interval, from the counters'
    recordings: each reading's delta over the seconds since the reading before): the link's 0.1 a second (3 replays
    per scrape interval, exactly) at every minute whose window holds a reading with one before it."""
    expr = f"abs(({_panel('gpudash-health', 'PCIe replays')}) - 0.1) < bool 1e-9"
    assert judged_apart(expr)

    def judge(part: list[str]) -> None:
        promtool_test(rules, f"missed_{part[0]}_rate.yaml", [{
            "interval": f"{twins.STEP}s", "input_series": [one for name in part for one in _owned_story(0.1, name)],
            "promql_expr_test": [{"expr": expr, "eval_time": f"{m}m", "exp_samples": [
                {"labels": _own(LABELS, name), "value": 1} for name in part]} for m in PANEL_MINUTES]}])
    failure = _judged_together("rate", pattern, RATE_PATTERNS, judge)
    assert failure is None, failure

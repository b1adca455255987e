"""An increase over the dashboard's range (promql.range_increase, CounterReading) over a GPU's exporter copies when
the copy holding the freshest reading misses scrapes (a scrape timing out, its target's staleness marker written in
that scrape's place) while the other copy's reading lags it by a collection (dcgm-exporter -c 60000, scraped every
30 s). Each miss makes the merged reading go down to the lagging copy's; the step is read from the copies' own
deltas, and the next step, the fresh copy back, counts from the lagging copy's reading: about one collection's growth
(6 replays) counted again per miss.

The two exporters read the GPU throughout (two DaemonSets on a node). Truth: the link replays 30 per 5 minutes; an
increase over a 5-minute range reads 30 to 36 (up to one 60 s collection blurred at a handover, as
test_counter_copies_hostile allows). GpudashPcieReplays stays silent on a link replaying under its threshold
(50 per 5 minutes): it stayed silent through these stories at 30 per 5 minutes, and at 45-48 without a missed scrape."""

from __future__ import annotations

import math

import pytest

from tests.integration import test_cloudwatch_rollout_twins as twins
from tests.integration.test_counter_copies_hostile import _panel, _reads_within, _silent, _slow_collection
from tests.integration.test_prometheus_rules import rules  # noqa: F401 (a fixture)
from tests.unit import test_cloudwatch_exporter_overlap as overlap


def _missing(series: list[dict], every: int, start: int, end: int) -> list[dict]:
    """The old copy's scrapes at [start, end) s, every `every`-th, failed: a staleness marker in the sample's place."""
    out = []
    for one in series:
        values = one["values"].split()
        if "nvidia-dcgm-exporter-old" in one["series"]:
            scraped = [k for k, v in enumerate(values) if v not in ("_", "stale") and start <= k * twins.STEP < end]
            for n, k in enumerate(scraped):
                if n % every == 0:
                    values[k] = "stale"
        out.append({**one, "values": " ".join(values)})
    return out


FLAPPING = pytest.mark.xfail(strict=True, reason=(
    "each missed scrape of the fresh copy counts about one collection's growth again (the step down read from the "
    "lagging copy's own delta, the step back up from the lagging copy's reading): an increase over 5 minutes read "
    "57-71 replays for 30-33 with every 2nd scrape missed, 47-55 with every 3rd, 40 at minutes 11-15 with one scrape "
    "missed at 10 minutes; both exporters collecting every 30 s: 45-53 (every 2nd), 37 at minutes 11-15 (one)"))


@FLAPPING
@pytest.mark.parametrize("slow, every, start, end", [
    (True, 2, 300, overlap.END), (True, 3, 300, overlap.END), (True, 1, 600, 630),
    (False, 2, 300, overlap.END), (False, 1, 600, 630)],
    ids=["every-2nd", "every-3rd", "one", "30s-collection-every-2nd", "30s-collection-one"])
def test_an_increase_over_the_range_reads_the_replays_when_the_fresh_copy_misses_scrapes(rules, slow, every, start,
                                                                                         end, monkeypatch):
    # the health dashboard's increase over the range (the remapped-rows panels' form) on the replays counter; `slow`:
    # the other exporter collects every 60 s (else both every 30 s, each at its own phase: overlap.scrapes)
    if slow:
        monkeypatch.setattr(overlap, "scrapes", _slow_collection)
    series = _missing(twins._series(overlap.END, 0), every, start, end)
    _reads_within(rules, f"increase_fresh_copy_missing_{slow}_{every}_{start}.yaml",
                  _panel("gpudash-health", "Rows remapped (uncorrectable)", twins.REPLAYS), series, 30, 36)


@pytest.mark.xfail(strict=True, reason=(
    "one missed scrape of the fresh copy (at 10 minutes) counts its lag's growth again: GpudashPcieReplays (threshold "
    "50) fired at minute 15 for a link replaying 45 per 5 minutes (the other exporter collecting every 60 s; silent at "
    "42) and for one replaying 48 (both collecting every 30 s; silent at 45); silent without the miss"))
@pytest.mark.parametrize("slow, per_second", [(True, 0.15), (False, 0.16)], ids=["60s-collection", "30s-collection"])
def test_the_replays_rule_stays_silent_under_its_threshold_when_the_fresh_copy_misses_one_scrape(rules, slow,
                                                                                                 per_second,
                                                                                                 monkeypatch):
    if slow:
        monkeypatch.setattr(overlap, "scrapes", _slow_collection)
    readings = {twins.REPLAYS: lambda taken: str(overlap.REPLAYS_SINCE_BOOT + math.floor(per_second * taken))}
    series = _missing(twins._series(overlap.END, 0, readings=readings), 1, 600, 630)
    _silent(rules, f"replays_fresh_copy_missing_one_{slow}.yaml", series)

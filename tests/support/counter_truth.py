"""A counter's rate and increase as Prometheus documents and computes them, from a list of readings: the truth
that tests compare generated queries with, computed without PromQL."""

from __future__ import annotations

import math
from collections.abc import Sequence


def prometheus_change(samples: Sequence[tuple[float, float]], first: float, last: float, rate: bool) -> float | None:
    """rate() or increase() over the samples in [first, last] (no sample sits on an edge here, so Prometheus 2's
    closed and 3's left-open ranges read the same), as Prometheus documents and computes it."""
    inside = [(t, v) for t, v in samples if first <= t <= last]
    if len(inside) < 2:
        return None
    growth = inside[-1][1] - inside[0][1] + sum(a for (_, a), (_, b) in zip(inside, inside[1:]) if b < a)
    sampled = inside[-1][0] - inside[0][0]
    average = sampled / (len(inside) - 1)
    to_start, to_end = inside[0][0] - first, last - inside[-1][0]
    if growth > 0 and inside[0][1] >= 0:
        to_start = min(to_start, sampled * inside[0][1] / growth)  # no further back than where it would be 0
    edges = sum(d if d < average * 1.1 else average / 2 for d in (to_start, to_end))
    change = growth * (sampled + edges) / sampled
    return change / (last - first) if rate else change


def stepped_rate(samples: Sequence[tuple[float, float]], first: float, last: float,
                 previous_within: float = 300) -> float | None:
    """A counter's rate as the rate panels read it from its recording (promql.counted_rules): over the readings in
    (first, last] that have a reading before them within `previous_within` (blanks are no readings), the sum of their
    deltas (a reading lower than the one before: the reading itself, a reset) over the sum of the seconds since the
    reading before; None without such a reading."""
    clean = [(t, v) for t, v in samples if v < BLANK_FLOOR]
    grew = seconds = 0.0
    for (p, before), (t, v) in zip(clean, clean[1:]):
        if first < t <= last and t - p <= previous_within:
            grew, seconds = grew + (v - before if v >= before else v), seconds + (t - p)
    return grew / seconds if seconds else None


BLANK_FLOOR = 9e18  # a counter reading at or above this is DCGM's blank
PREVIOUS_WITHIN = 300  # how far back a reading's previous one counts (the agent's counter cache)


def summed_deltas(samples: Sequence[tuple[float, float]], first: float, last: float,
                  previous_within: float = PREVIOUS_WITHIN, held: bool = False,
                  interval: float | None = None) -> float | None:
    """The sum of the agent's deltas over the readings in (first, last], as CloudWatch sums them: each reading less
    the reading before it (the latest one that is not a blank, at most `previous_within` earlier), or the reading
    itself where it is lower (a reset: the agent sends the raw value); a reading with none before it sends nothing.
    A blank is no reading: the agent's filter drops it before the deltas. None when the window holds no reading;
    `held` (an alarm's period, as CloudWatch has a datapoint only where the agent sent a delta): none when it holds
    no reading with a delta. `interval` (the scrape interval; a level alert's period, promql._prorated): a reading n
    intervals after the scrape before it (rounded, at least 1: a missed scrape in between) stands for n scrapes, each
    an equal share of its delta, and counts the shares of the k latest, k its seconds after `first` over the interval
    rounded up. A blank is a scrape (one that read no value): the reading after it stands for its own scrape alone,
    its delta counted from the reading before the blank whole in the period it is taken in, as the agent's. A period
    holds as many scrapes' growth as its length, the latest that arrived: where its last u scrapes have not arrived (no
    sample, a blank being one, within its last u intervals; up to all but its first), it reaches u intervals further
    back, each reading counting k + u shares (none below 0). The rule reaches only where those scrapes failed (the
    target's `up` present, promql._staying), not where its target is gone: a caller models a failed scrape."""
    inside = [(t, v) for t, v in samples if first < t <= last and v < BLANK_FLOOR]
    reach = 0
    if interval is not None and any(first < t <= last for t, _ in samples):
        latest = max(t for t, _ in samples if first < t <= last)
        reach = min(math.floor((last - latest) / interval), round((last - first) / interval) - 1)
    deltas = []
    for t, v in [(t, v) for t, v in samples if first - reach * (interval or 0) < t <= last and v < BLANK_FLOOR]:
        before = [(s, p) for s, p in samples if t - previous_within <= s < t and p < BLANK_FLOOR]
        if before:
            p = before[-1][1]
            share = 1.0
            if interval is not None:
                scraped = max(s for s, _ in samples if s < t)
                scrapes = max(1, math.floor((t - scraped) / interval + 0.5))
                share = min(1.0, max(0, math.ceil((t - first) / interval) + reach) / scrapes)
            deltas.append((v - p if v >= p else v) * share)
    return float(sum(deltas)) if (deltas if held else inside) else None

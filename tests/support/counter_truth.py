"""A counter's rate and increase as Prometheus documents and computes them, from a list of readings: the truth
that tests compare generated queries with, computed without PromQL."""

from __future__ import annotations

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


def exact_increase(samples: Sequence[tuple[float, float]], first: float, last: float) -> float | None:
    """The growth since the last reading before the window (first, last] (at most a window earlier), as CloudWatch
    sums the agent's deltas; a window with a reset, or without a reading before it, takes increase()."""
    window = last - first
    inside = [v for t, v in samples if first <= t <= last]
    before = [v for t, v in samples if first - window <= t <= first]
    readings = before[-1:] + inside
    if before and inside and all(b >= a for a, b in zip(readings, readings[1:])):
        return inside[-1] - before[-1]
    return prometheus_change(samples, first, last, rate=False)

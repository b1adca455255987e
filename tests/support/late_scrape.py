"""A scrape taken late, replayed at controlled times for promtool (a 1 s input grid standing for a deployment's 30 s
scrapes): scrape n at 30 n - 1 s, but scrape 7 at 211 s (a loaded Prometheus: past the step at 210 s), and scrape 8
on time at 239 s and failed (every series of the target marked stale). No step of the scrape interval falls between
scrapes 7 and 8 ([211 s, 239 s)): read at those steps alone, a series scrape 7 wrote looks last written at 179 s, by
scrape 6, and one scrape 7 wrote first has no time at all."""

from __future__ import annotations

from typing import Callable

ON_TIME_SCRAPES = {n: 30 * n - 1 for n in range(1, 9)}
LATE_SCRAPES = ON_TIME_SCRAPES | {7: 211}
# scrape 6 taken late (181 s, past the step at 180 s) and scrape 7 on time (209 s): two scrapes within one step of the
# scrape interval ((180 s, 210 s]), which the step whose interval holds a series' latest sample does not tell apart
CLOSE_SCRAPES = ON_TIME_SCRAPES | {6: 181}
LATE, FAILED = 7, 8


def late_values(served: Callable[[int], object], scrapes: dict[int, int] = LATE_SCRAPES) -> str:
    """promtool values on a 1 s grid from 0: `served(n)`, the series' value at scrape n (None: not in the answer),
    at each scrape, a staleness marker at the first scrape without it (Prometheus marks a series gone from an answer,
    or every series at a failed scrape), nothing between."""
    at = {}
    for n, second in scrapes.items():
        if served(n) is not None:
            at[second] = str(served(n))
        elif n > 1 and served(n - 1) is not None:
            at[second] = "stale"
    return " ".join(at.get(second, "_") for second in range(max(at) + 1))

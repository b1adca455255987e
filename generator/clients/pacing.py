"""Client-side pacing to CloudWatch's per-API rate quotas, per Region.

A quota of N calls a second is kept as a sliding window: at most N calls of one API in one
Region start within any second. The clock is injectable (`Pacer(clock=...)`; by default the
deadline's clock, which tests replace) so that tests never wait in real time.
"""

from __future__ import annotations

import threading
from collections import deque

# Calls per second per Region (CloudWatch quotas; TagResource, UntagResource and ListTagsForResource
# are not published: paced like PutMetricAlarm to stay well clear. GetResources belongs to the
# Resource Groups Tagging API.)
RATES = {"PutMetricAlarm": 3, "DescribeAlarms": 9, "DeleteAlarms": 3, "PutDashboard": 10, "GetDashboard": 10,
         "ListDashboards": 10, "DeleteDashboards": 10, "TagResource": 3, "UntagResource": 3,
         "ListTagsForResource": 3, "ListMetrics": 25, "GetResources": 5}
WINDOW_SECONDS = 1.0


def default_clock():
    """The clock a Pacer uses when none is given: the publishing deadline's (tests replace it there)."""
    from . import deadline

    return deadline.CLOCK


def _slot(starts, rate: int, now: float) -> float:
    """When the next call may start, given the `starts` of the last `rate` calls (oldest first)."""
    return max(now, starts[0] + WINDOW_SECONDS) if len(starts) >= rate else now


class Pacer:
    def __init__(self, rates: dict[str, float] | None = None, clock=None):
        self.rates = rates or RATES
        self.clock = clock or default_clock()
        self.recent: dict[tuple[str, str], deque[float]] = {}
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def wait(self, region: str, api: str) -> None:
        """Block until a call of `api` in `region` keeps within its rate."""
        with self.lock:
            self.calls[api] = self.calls.get(api, 0) + 1
            rate = int(self.rates.get(api) or 0)
            if rate <= 0:
                return
            now = self.clock.now()
            starts = self.recent.setdefault((region, api), deque())
            slot = _slot(starts, rate, now)
            starts.append(slot)
            while len(starts) > rate:
                starts.popleft()
        if slot > now:
            self.clock.sleep(slot - now)

    def ready(self, region: str, api: str) -> None:
        """Block until a call of `api` in `region` would start at once; nothing is counted. Waiting here, before the
        reads that go with the call, leaves those reads as fresh when it starts as they were when they were made."""
        with self.lock:
            rate = int(self.rates.get(api) or 0)
            now = self.clock.now()
            slot = _slot(self.recent.get((region, api)) or (), rate, now) if rate > 0 else now
        if slot > now:
            self.clock.sleep(slot - now)

    def writes(self, apis: tuple[str, ...]) -> int:
        return sum(self.calls.get(api, 0) for api in apis)

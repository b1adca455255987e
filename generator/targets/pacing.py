"""Client-side pacing to CloudWatch's per-API rate quotas (per Region), as a token bucket."""

from __future__ import annotations

import threading
import time

# Calls per second per Region (CloudWatch quotas; TagResource and ListTagsForResource are not
# published: paced like PutMetricAlarm to stay well clear).
RATES = {"PutMetricAlarm": 3, "DescribeAlarms": 9, "DeleteAlarms": 3, "PutDashboard": 10, "GetDashboard": 10,
         "ListDashboards": 10, "DeleteDashboards": 10, "TagResource": 3, "UntagResource": 3,
         "ListTagsForResource": 3, "ListMetrics": 25}


class Pacer:
    def __init__(self, rates: dict[str, float] | None = None, clock=time.monotonic, sleep=time.sleep):
        self.rates = rates or RATES
        self.clock, self.sleep = clock, sleep
        self.next_slot: dict[tuple[str, str], float] = {}
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def wait(self, region: str, api: str) -> None:
        """Block until a call of `api` in `region` keeps within its rate."""
        with self.lock:
            self.calls[api] = self.calls.get(api, 0) + 1
            rate = self.rates.get(api)
            if not rate:
                return
            now = self.clock()
            slot = max(now, self.next_slot.get((region, api), now))
            self.next_slot[(region, api)] = slot + 1.0 / rate
        if slot > now:
            self.sleep(slot - now)

"""A clock for the publishing deadline that advances without sleeping: backoff and Retry-After
waits in tests take no real time, and what was waited for is recorded."""

from __future__ import annotations

import threading


class FakeClock:
    def __init__(self) -> None:
        self.time = 0.0
        self.slept: list[float] = []
        self.lock = threading.Lock()

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.slept.append(seconds)
            self.time += max(seconds, 0.0)

    def sleep_unless(self, event: threading.Event, seconds: float) -> None:
        self.sleep(seconds)  # no time passes: nothing can stop it meanwhile

    def wait(self, event: threading.Event, seconds: float) -> bool:
        # A call's answer is real work on a loopback server: wait for it in real time.
        return event.wait(seconds)

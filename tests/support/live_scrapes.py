"""A real Prometheus scraping one replay exporter for a set number of answers, then nothing more."""

from __future__ import annotations

import itertools
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from tests.support.prometheus_server import Prometheus, duration
from tests.support.replay_exporter import ReplayExporter


@contextmanager
def scraped(folder: Path, payload: Callable[[int], str], answers: int, interval: float) -> Iterator[Prometheus]:
    """A Prometheus (its data in `folder`) scraping one exporter every `interval` seconds, its k-th answer `payload(k)`,
    until it answered `answers` times; then it scrapes nothing (stop_scraping: every scrape stored, no end-of-run
    staleness markers) and is yielded to be queried. Live scrapes, as Prometheus stores them: a series an answer leaves
    out is marked stale at that scrape."""
    count, served, lock = itertools.count(), [0], threading.Lock()

    def script() -> str:
        with lock:
            answer = next(count)
            served[0] = answer + 1
        return payload(answer)

    with ReplayExporter(script) as exporter:
        config = {"global": {"scrape_interval": duration(interval)}, "scrape_configs": [{
            "job_name": "dcgm", "static_configs": [{"targets": [exporter.address]}]}]}
        with Prometheus(folder, config) as prometheus:
            deadline = time.monotonic() + 120
            while served[0] < answers:
                assert time.monotonic() < deadline, f"{served[0]} scrapes in 120 s"
                time.sleep(0.2)
            prometheus.stop_scraping()
            yield prometheus

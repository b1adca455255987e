"""A real Prometheus scraping one replay exporter (or one per node) for a set number of answers, then nothing more."""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.support.prometheus_server import Prometheus, duration
from tests.support.replay_exporter import ReplayExporter


@contextmanager
def scraped(folder: Path, payload: Callable[[int], str], answers: int, interval: float) -> Iterator[Prometheus]:
    """A Prometheus (its data in `folder`) scraping one exporter every `interval` seconds, its k-th answer `payload(k)`,
    until it answered `answers` times; then it scrapes nothing (stop_scraping: every scrape stored, no end-of-run
    staleness markers) and is yielded to be queried, a query asked again at the same instants answered from memory
    (Prometheus.remember_answers: a panel's query at All, asked by each pick's test beside its pick's, is asked once). Live scrapes, as Prometheus stores them: a series an answer leaves
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
            _stored(prometheus, "up", answers, deadline)
            prometheus.stop_scraping()
            prometheus.remember_answers()  # it stores nothing more: a query asked again is answered as before
            yield prometheus


@contextmanager
def scraped_nodes(folder: Path, pages: dict[str, Callable[[int], str]], answers: int, interval: float) \
        -> Iterator[tuple[Prometheus, dict[str, list[float]], float, int, float]]:
    """A Prometheus (its data in `folder`) scraping one exporter per node every `interval` seconds, node n's k-th
    answer `pages[n](k)` (an empty answer: the exporter serves nothing, its series marked stale), until each answered
    `answers` times; then it scrapes nothing and is yielded with {node: its scrapes' times}, the first step a
    quarter interval past every node's third scrape, the steps' count up to the earliest node's last scrape, and
    their length."""
    with contextlib.ExitStack() as stack:
        exporters = {node: stack.enter_context(ReplayExporter(page, counted=True)) for node, page in pages.items()}
        config = {"global": {"scrape_interval": duration(interval)}, "scrape_configs": [
            {"job_name": "dcgm", "static_configs": [{"targets": [e.address for e in exporters.values()]}]}]}
        with Prometheus(folder, config) as prometheus:
            deadline = time.monotonic() + 120
            while min(e.scrapes for e in exporters.values()) < answers:
                assert time.monotonic() < deadline
                time.sleep(0.2)
            for exporter in exporters.values():
                _stored(prometheus, f'up{{instance="{exporter.address}"}}', answers, deadline)
            prometheus.stop_scraping()
            prometheus.remember_answers()  # it stores nothing more: a query asked again is answered as before
            times = {node: sorted(float(at) for s in prometheus.query(f'up{{instance="{e.address}"}}[10m]')
                                  for at, _ in s["values"]) for node, e in exporters.items()}
            step = interval / 4
            start = math.floor(max(t[2] for t in times.values()) / step) * step + step
            yield prometheus, times, start, int((min(t[-1] for t in times.values()) - start) // step) + 1, step


def scraped_fixture(name: str, page: Callable[[str, int], str], exporters, answers: int, interval: float):
    """A module fixture (assign it to a module-level name): scraped_nodes of one exporter per name of `exporters`, the
    k-th answer of exporter n `page(n, k)`, its data in a folder named after `name`; its value scraped_nodes'."""
    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory):
        pages = {exporter: (lambda k, exporter=exporter: page(exporter, k)) for exporter in exporters}
        with scraped_nodes(tmp_path_factory.mktemp(name), pages, answers, interval) as scene:
            yield scene
    return fixture


def _stored(prometheus, up: str, answers: int, deadline: float) -> None:
    """Wait until Prometheus has stored `answers` scrapes of the target `up` selects. An answer is counted as it is
    served, before Prometheus stores the scrape: stopping the scrapes then can drop the last one (a busy machine)."""
    while True:
        found = prometheus.query(f"count_over_time({up}[10m])")
        if found and float(found[0]["value"][1]) >= answers:
            return
        assert time.monotonic() < deadline, f"{found} scrapes of {up} stored in 120 s"
        time.sleep(0.1)

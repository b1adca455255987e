"""A scene of exporters scraped by a real Prometheus every second: the Prometheus (scraped_until), an exporter's
answers told apart by their number (CountedAnswers), and a bundled panel's query as that Prometheus is read
(lookback_panel)."""

from __future__ import annotations

import time
from contextlib import contextmanager

from generator.preview.interpolate import interpolate, variables
from tests.support.projects import bundled_panel, bundled_project
from tests.support.prometheus_server import Prometheus, SCENE_RANGE, counted_inline, duration, scraped_every


def lookback_panel(settings: str, title: str, interval: float = 1) -> tuple[dict, str]:
    """The panel's query target in a build of `settings`, and its query for a Prometheus scraping every `interval`
    seconds."""
    target = bundled_panel(title, settings)["targets"][0]
    expr = counted_inline(target["expr"], bundled_project(settings))  # a counter's recording, read over the scrapes
    values = {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu"))}
    return target, interpolate(scraped_every(expr, 30, interval), values)


def every_second(targets: list[str], interval: float = 1) -> dict:
    """A Prometheus configuration scraping `targets` every second, or every `interval` seconds (a scrape failing
    after the interval)."""
    every = duration(interval)
    return {"global": {"scrape_interval": every, "scrape_timeout": every}, "scrape_configs": [{
        "job_name": "dcgm", "static_configs": [{"targets": targets}]}]}


@contextmanager
def scraped_until(tmp_path_factory, name: str, targets: list[str], until, then: float = 0, watch=None,
              interval: float = 1):
    """A Prometheus scraping `targets` every second (or `interval` seconds) until `until()` holds and `then` seconds
    more; no more scrapes after (every one stored: Prometheus.stop_scraping). `watch(prometheus)`, called before each
    look at `until`: a scene that moves on by what Prometheus stored (a loaded machine's scrape that timed out was
    answered, and counted by the exporter, yet stored nothing)."""
    with Prometheus(tmp_path_factory.mktemp(name), every_second(targets, interval)) as prometheus:
        deadline = time.monotonic() + 120
        while True:
            if watch is not None:
                watch(prometheus)
            if until():
                break
            assert time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(then)
        prometheus.stop_scraping()
        yield prometheus


class CountedAnswers:
    """An exporter's answers by number: `answer(n)` is the nth (from 1); `served`, how many it has given."""

    def __init__(self, answer):
        self.answer, self.served = answer, 0

    def __call__(self) -> str:
        self.served += 1
        return self.answer(self.served)

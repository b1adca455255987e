"""Two exporters reading one GPU (the old one writing its own pod's name into Hostname), scraped every second by a
real Prometheus (two_exporters), the payloads they serve (tied_payload, one_spelling_payload), and what a panel names
and reads over them (named_alike, fresh_steps, counter_growth)."""

from __future__ import annotations

import math
from contextlib import contextmanager

from tests.support.exporter_overlap_scene import COMMON, METRICS, SCRAPES, shown_values
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, scraped_until


OLD_POD = "nvidia-dcgm-exporter-q8w2z"


def tied_payload(old: bool) -> str:
    node = f'Hostname="{OLD_POD}"' if old else 'hostname="n3"'
    values = (30000, 50000, 60 if old else 50, 150, 60)
    labels = f'gpu="0",UUID="GPU-n3-0",device="nvidia0",{COMMON},{node},container="main",namespace="ml",pod="p"'
    return "".join(f"# TYPE {metric} gauge\n{metric}{{{labels}}} {value:g}\n" for metric, value in zip(METRICS, values))


@contextmanager
def two_exporters(tmp_path_factory, name: str, payload, probe: str, new_fails_at: tuple[int, ...] = (),
                   interval: float = 1):
    """The old and new exporters' `payload(old)` scraped every second (or `interval` seconds); (prometheus, first and
    last stored sample, each copy's (instance's) sample times of `probe`, a selector: two copies may spell the node
    alike).
    `new_fails_at`: the new exporter's answers of those numbers are no exposition (those scrapes fail: its series
    stale)."""
    old = CountedAnswers(lambda n: payload(True))
    new = CountedAnswers(lambda n: "garbage{ 1\n" if n in new_fails_at else payload(False))
    with ReplayExporter(old) as a, ReplayExporter(new) as b:
        with scraped_until(tmp_path_factory, name, [a.address, b.address], lambda: old.served >= SCRAPES,
                       interval=interval) as prometheus:
            samples = {series["metric"]["instance"]: [float(at) for at, _ in series["values"]]
                       for series in prometheus.query(f"{probe}[10m]")}
            assert len(samples) == 2, samples
            stored = [at for times in samples.values() for at in times]
            yield prometheus, min(stored), max(stored), samples


def fresh_steps(tied, shown):
    samples = tied[3]
    for at, values in shown.items():
        latest = [max((t for t in times if t <= at), default=-math.inf) for times in samples.values()]
        if at - min(latest) <= 1:
            yield at, values


def named_alike(scene, title: str, calls: int, truth: str, settings: str = "") -> None:
    """`title`'s line (of the build of `settings`) at every fresh step of `calls` calls is the one named `truth`."""
    legends = {}
    for call in range(calls):
        for at, values in fresh_steps(scene, shown_values(scene, title, settings=settings)):
            legends.setdefault(tuple(sorted(values)), []).append((call, at))
    assert set(legends) == {(truth,)}, f"{title}: legends shown (true: {truth} only): " + \
        str({k: f"{len(v)} steps, calls {sorted({c for c, _ in v})}" for k, v in legends.items()})


def latest_before(readings: list[tuple[float, float]], at: float) -> tuple[float, float]:
    return [reading for reading in readings if reading[0] <= at][-1]


def counter_growth(readings: list[tuple[float, float]], end: int, window: int) -> float | None:
    """A counter's growth per second in the scrape steps (end - window, end] (steps of 1 s, a reading in the step
    (k - 1, k] is step k's): from the latest reading at or before the window to the latest in it, over the seconds
    between their stamps (as the recordings count it: over the steps' seconds, a reading stamped 0.18 s later in its
    step than the one before read 1,046 mJ/s for 1,000)."""
    (taken, value), (before, was) = latest_before(readings, end), latest_before(readings, end - window)
    return None if taken == before else (value - was) / (taken - before)


def one_spelling_payload(old: bool, node: str = "worker-3", pod: str = OLD_POD) -> str:
    labels = (f'gpu="0",UUID="GPU-n3-0",device="nvidia0",{COMMON},Hostname="{pod if old else node}",'
              f'container="main",namespace="ml",pod="p"')
    return "".join(f"# TYPE {metric} gauge\n{metric}{{{labels}}} {value:g}\n"
                   for metric, value in zip(METRICS, (30000, 50000, 50, 150, 99)))

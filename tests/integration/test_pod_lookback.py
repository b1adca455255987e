"""Per-pod panels over the pod label's lookback, on a real Prometheus scraping an exporter every half second: which
pods each instant shows, and with what value, against the scrapes themselves.

The exporter (scripted per scrape, as dcgm-exporter without KUBERNETES_VIRTUAL_GPUS writes it) serves two GPUs:

* GPU 0 held by ml/a (90 % busy) for its first HANDOVER scrapes, then by ml/b (10 %): a pod that leaves its GPU
  and the next one that takes it;
* GPU 1 shared by ml/c, ml/d and ml/e by time-slicing, named under each in turn (c, d, e, c, ...; 50 %): three
  pods, so a window of two scrapes (a minute at 30 s, as CloudWatch's table read it before) would miss one.

Each scrape that names another pod marks the previous pod's series stale (an instant selector reads the latest
scrape's pod alone). The panels' lookback (promql.label_lookback: 4 scrape intervals, made for 30 s scrapes; here
2 s, read with tests.support.prometheus_server.scraped_every) shows each pod a scrape within it named, with the
GPU's latest reading: at every step of a range, c, d and e; a for up to 2 s after the last scrape that named it,
with b's 10 % then; never a after that. The truth at each instant is worked out from the sample times Prometheus
stored (when each scrape ran) and the script (what each scrape named), not from the panels' queries.
"""

from __future__ import annotations

import itertools
import math
import threading
import time

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from generator.promql import LABEL_LOOKBACK_SCRAPES
from tests.support.prometheus_server import Prometheus, SCENE_RANGE, duration, scraped_every
from tests.support.replay_exporter import ReplayExporter

HANDOVER = 6  # GPU 0: ml/a at scrapes 0-5, ml/b from 6
SCRAPES = 14  # scraped this many times, then no more
INTERVAL = 0.5  # seconds between scrapes: every window below is in scrapes, as the panels' are
UTIL = {"a": 90.0, "b": 10.0, "c": 50.0, "d": 50.0, "e": 50.0}
TITLES = ("Pods on GPUs", "GPU utilization by pod")


def _named(scrape: int) -> dict[int, str]:
    """The pod each GPU's series name at a scrape."""
    return {0: "a" if scrape < HANDOVER else "b", 1: "cde"[scrape % 3]}


def _payload(scrape: int) -> str:
    lines = []
    for metric, base in (("DCGM_FI_DEV_GPU_UTIL", None), ("DCGM_FI_DEV_GPU_TEMP", 60.0)):
        lines.append(f"# TYPE {metric} gauge")
        for gpu, pod in _named(scrape).items():
            value = UTIL[pod] if base is None else base + gpu
            lines.append(f'{metric}{{gpu="{gpu}",UUID="GPU-n1-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A10G",'
                         f'Hostname="n1",DCGM_FI_DRIVER_VERSION="535.161.08",container="main",namespace="ml",'
                         f'pod="{pod}"}} {value:g}')
    return "\n".join(lines) + "\n"


class _Script:
    """Serves scrape k's payload at the k-th request."""

    def __init__(self) -> None:
        self.count = itertools.count()
        self.served = 0
        self.lock = threading.Lock()

    def __call__(self) -> str:
        with self.lock:
            scrape = next(self.count)
            self.served = scrape + 1
        return _payload(scrape)


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    """(prometheus, samples): the Prometheus after SCRAPES scrapes, and each GPU's stored samples as
    (time, pod, util)."""
    script = _Script()
    with ReplayExporter(script) as exporter:
        workdir = tmp_path_factory.mktemp("pod-lookback")
        config = {"global": {"scrape_interval": duration(INTERVAL)}, "scrape_configs": [{
            "job_name": "dcgm", "static_configs": [{"targets": [exporter.address]}]}]}
        with Prometheus(workdir, config) as prometheus:
            deadline = time.monotonic() + 120
            while script.served < SCRAPES:
                assert time.monotonic() < deadline, f"{script.served} scrapes in 120 s"
                time.sleep(0.2)
            prometheus.stop_scraping()  # the last scrape stored
            samples: dict[int, list[tuple[float, str, float]]] = {0: [], 1: []}
            for series in prometheus.query("DCGM_FI_DEV_GPU_UTIL[10m]"):
                for at, value in series["values"]:
                    samples[int(series["metric"]["gpu"])].append((float(at), series["metric"]["pod"], float(value)))
            for gpu in samples:
                samples[gpu].sort()
            yield prometheus, samples


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    folder = tmp_path_factory.mktemp("project")
    (folder / "gpudash.yaml").write_text("")
    project = load_project(folder / "gpudash.yaml")
    panels = [p for d in grafana_dashboards(project) for p in d.model["panels"] if p.get("title") in TITLES]
    assert project.settings.scrape.seconds == 30
    return {p["title"]: p["targets"][0] for p in panels}


def _truth(samples: dict[int, list[tuple[float, str, float]]], at: float, window: float) -> dict[str, float]:
    """{pod: utilization} at `at`: each pod a sample within [at - window, at] names (Prometheus 2's closed range),
    with its GPU's latest reading at or before `at`."""
    shown = {}
    for readings in samples.values():
        before = [r for r in readings if r[0] <= at]
        if not before:
            continue
        latest = before[-1][2]
        for pod in {pod for when, pod, _ in before if when >= at - window}:
            shown[pod] = latest
    return shown


@pytest.mark.parametrize("scrapes", [1, 2])
def test_each_step_shows_the_pods_a_scrape_of_the_lookback_named_with_the_gpus_reading(scraped, targets, scrapes):
    prometheus, samples = scraped
    step = scrapes * INTERVAL  # a range's step of one scrape interval, or two
    window = LABEL_LOOKBACK_SCRAPES * INTERVAL  # the lookback of 4 scrape intervals
    first = max(readings[0][0] for readings in samples.values())
    last_a = max(when for when, pod, _ in samples[0] if pod == "a")
    first_b = min(when for when, pod, _ in samples[0] if pod == "b")
    end = max(readings[-1][0] for readings in samples.values())
    # steps half an interval off the interval's multiples: no sample sits on a window's edge
    start = math.floor(first / INTERVAL) * INTERVAL + window + INTERVAL / 2
    count = int((end - start) // step) + 1
    exprs = {title: interpolate(scraped_every(target["expr"], 30, INTERVAL),
                                {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu"))})
             for title, target in targets.items()}
    seen = {"a after it left": set(), "a gone": set()}
    for title, expr in exprs.items():
        for at, result in prometheus.query_at(expr, start, count, step,
                                              instant=bool(targets[title].get("instant"))).items():
            if not all(any(at - INTERVAL < when <= at for when, _, _ in readings) for readings in samples.values()):
                # a failed scrape stored nothing: without a fresh reading a GPU reads the highest of its lookback's
                # latest readings (promql._Device._read's late tier), not its latest: another story
                continue
            shown = {render_legend(targets[title]["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
            truth = {f"Pod ml/{pod}": (1.0 if title == "Pods on GPUs" else value)
                     for pod, value in _truth(samples, at, window).items()}
            assert shown == truth, (title, step, at, shown, truth)
            assert {"Pod ml/c", "Pod ml/d", "Pod ml/e"} <= set(shown), (title, at)  # the time-sliced GPU's pods
            if first_b <= at <= last_a + window and title == "GPU utilization by pod":
                assert shown["Pod ml/a"] == UTIL["b"]  # the GPU's reading then: the next pod's use
                seen["a after it left"].add(at)
            if at > last_a + window:
                assert "Pod ml/a" not in shown
                seen["a gone"].add(at)
    assert all(seen.values()), seen  # the range held both cases

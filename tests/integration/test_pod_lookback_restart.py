"""Per-pod panels over the pod label's lookback on a real Prometheus scraping every second (the panels' 4-interval
lookback is 4 s there: tests.support.prometheus_server.scraped_every), where a GPU's copies come from two exporters or
from both sides of a Prometheus restart: each pod named within the lookback shows with the GPU's latest stored reading
(promql._Device._read), whichever copy carried it.

- exporter.virtual_gpus: the exporter (4.5.3+, KUBERNETES_VIRTUAL_GPUS=true) writes a held GPU's framebuffer used as
  the device's series plus the pod's own share (tests/support/virtual_gpus.py). Node n1's exporter pod is replaced
  (a DaemonSet rollout: a new exporter pod, a new `instance`); ml/p holds GPU 0 throughout, its processes using
  12000 MiB before the replacement and 2000 MiB after it: the truth at each instant is the pod's latest stored
  reading, whichever exporter wrote it;
- a time-sliced pod only the replaced exporter named stays for the lookback;
- one failed scrape hides no pod named within the lookback;
- after a Prometheus restart (no staleness markers across it) while the pod label moved or an idle GPU was taken, the
  pod shows the GPU's reading after the restart, not the copy from before it.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager

import pytest

from generator.preview.legend import render as render_legend
from tests.support.prometheus_server import Prometheus
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, every_second, lookback_panel, scraped_until
from tests.support.side_by_side import module_scenes, scene

BEFORE, AFTER = 12000.0, 2000.0
TITLE = "Framebuffer used by pod"


def _payload(share: float) -> str:
    device = ('gpu="0",UUID="GPU-n1-0",pci_bus_id="00000000:10:00.0",device="nvidia0",modelName="NVIDIA A10G",'
              'Hostname="n1",DCGM_FI_DRIVER_VERSION="570.133.20"')
    pod = ',container="main",namespace="ml",pod="p",pod_uid="uid-ml-p"'
    lines = []
    for metric, device_value, pod_value in (("DCGM_FI_DEV_FB_USED", 30000.0, share),
                                            ("DCGM_FI_DEV_FB_FREE", 10000.0, None),
                                            ("DCGM_FI_DEV_GPU_TEMP", 60.0, None)):
        lines.append(f"# TYPE {metric} gauge")
        if pod_value is not None:
            lines.append(f"{metric}{{{device}}} {device_value:g}")
            lines.append(f"{metric}{{{device}{pod}}} {pod_value:g}")
        else:
            lines.append(f"{metric}{{{device}{pod}}} {device_value:g}")
    return "\n".join(lines) + "\n"

@contextmanager
def _replaced(tmp_path_factory):
    before = CountedAnswers(lambda scrape: _payload(BEFORE) if scrape <= 8 else "")
    old = ReplayExporter(before)
    new = ReplayExporter(lambda: "" if before.served <= 8 else _payload(AFTER))
    with old, new:
        with scraped_until(tmp_path_factory, "pod-lookback-restart", [old.address, new.address],
                       lambda: before.served >= 16) as prometheus:
            samples = sorted((float(at), float(value)) for series in prometheus.query(
                'DCGM_FI_DEV_FB_USED{pod="p"}[10m]') for at, value in series["values"])
            yield prometheus, samples


def test_a_pods_own_share_after_its_exporter_is_replaced_is_its_latest_reading(scraped):
    prometheus, samples = scraped
    target, expr = lookback_panel("exporter:\n  virtual_gpus: true\n", TITLE)
    first_after = min(at for at, value in samples if value == AFTER)
    start = math.floor(samples[0][0]) + 4.5
    end = samples[-1][0]
    wrong = {}
    for at, result in prometheus.query_at(expr, start, int((end - start) // 1) + 1, 1,
                                          instant=bool(target.get("instant"))).items():
        shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
        latest = [value for when, value in samples if when <= at]
        truth = {"Pod ml/p": latest[-1]} if latest else {}
        if shown != truth:
            wrong[round(at - first_after, 1)] = (shown, truth)
    assert not wrong, f"seconds after the new exporter's first scrape: (shown, true) {wrong}"


# --- without exporter.virtual_gpus: a time-sliced GPU across the exporter's replacement --------------------------

def _sliced(pod: str) -> str:
    device = ('gpu="1",UUID="GPU-n1-1",pci_bus_id="00000000:11:00.0",device="nvidia1",modelName="NVIDIA A10G",'
              'Hostname="n1",DCGM_FI_DRIVER_VERSION="570.133.20"')
    return (f"# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
            f'DCGM_FI_DEV_GPU_TEMP{{{device},container="main",namespace="ml",pod="{pod}"}} 61\n')


class _Alternating:
    def __init__(self):
        self.count = 0

    def __call__(self) -> str:
        self.count += 1
        return _sliced("cd"[self.count % 2])


@contextmanager
def _sliced_scene(tmp_path_factory):
    """ml/c and ml/d time-slice GPU 1; the old exporter names them at alternate scrapes, the new one (kubelet listing
    them in another order) names c at every scrape."""
    alternating = _Alternating()
    old = ReplayExporter(lambda: alternating() if alternating.count < 8 else "")
    new = ReplayExporter(lambda: "" if alternating.count < 8 else _sliced("c"))
    with old, new:
        with scraped_until(tmp_path_factory, "pod-lookback-sliced", [old.address, new.address],
                       lambda: alternating.count >= 8, then=8) as prometheus:
            samples = sorted((float(at), series["metric"]["pod"], series["metric"]["instance"])
                             for series in prometheus.query('DCGM_FI_DEV_GPU_TEMP{pod!=""}[10m]')
                             for at, _ in series["values"])
            yield prometheus, samples


def test_a_time_sliced_pod_named_by_the_replaced_exporter_shows_for_the_lookback(sliced):
    prometheus, samples = sliced
    target, expr = lookback_panel("", "Pods on GPUs")
    start = math.floor(samples[0][0]) + 4.5
    end = samples[-1][0]
    handover = min(when for when, pod, instance in samples if instance != samples[0][2])
    wrong = {}
    for at, result in prometheus.query_at(expr, start, int((end - start) // 1) + 1, 1,
                                          instant=bool(target.get("instant"))).items():
        shown = {render_legend(target["legendFormat"], s["metric"]) for s in result}
        truth = {f"Pod ml/{pod}" for when, pod, _ in samples if at - 4 <= when <= at}
        if shown != truth:
            wrong[round(at - handover, 1)] = (sorted(shown), sorted(truth))
    assert not wrong, f"(shown, named within the lookback) {wrong}"


# --- one failed scrape (the exporter answered after the scrape timeout) -------------------------------------------

def _held(pod: str, watts: float) -> str:
    device = ('gpu="0",UUID="GPU-n2-0",pci_bus_id="00000000:10:00.0",device="nvidia0",modelName="NVIDIA A10G",'
              'Hostname="n2",DCGM_FI_DRIVER_VERSION="570.133.20"')
    return "".join(f"# TYPE {m} gauge\n{m}{{{device},container=\"main\",namespace=\"ml\",pod=\"{pod}\"}} {v:g}\n"
                   for m, v in (("DCGM_FI_DEV_GPU_TEMP", 61.0), ("DCGM_FI_DEV_POWER_USAGE", watts)))


@contextmanager
def _gap_scene(tmp_path_factory):
    """ml/e holds n2's GPU 0 throughout; the exporter's 8th answer comes after the scrape timeout (a failed scrape)."""
    def late(scrape: int) -> str:
        if scrape == 8:
            time.sleep(1.6)
        return _held("e", 200.0)
    answer = CountedAnswers(late)
    with ReplayExporter(answer) as exporter:
        with scraped_until(tmp_path_factory, "pod-lookback-gap", [exporter.address], lambda: answer.served >= 14) \
                as prometheus:
            samples = sorted(float(at) for series in prometheus.query('DCGM_FI_DEV_GPU_TEMP{pod!=""}[10m]')
                             for at, _ in series["values"])
            ups = sorted((float(at), float(v)) for series in prometheus.query('up[10m]') for at, v in series["values"])
            yield prometheus, samples, ups


@pytest.mark.parametrize("title", ["Pods on GPUs", "Power draw of each pod's GPUs"])
def test_a_pod_named_within_the_lookback_shows_through_one_failed_scrape(gap, title):
    prometheus, samples, ups = gap
    failed = [at for at, v in ups if v == 0]
    assert failed, ups
    target, expr = lookback_panel("", title)
    start = math.floor(samples[0][0] if isinstance(samples[0], tuple) else samples[0]) + 4.5
    end = samples[-1]
    wrong = {}
    for at, result in prometheus.query_at(expr, start, int((end - start) // 1) + 1, 1,
                                          instant=bool(target.get("instant"))).items():
        shown = {render_legend(target["legendFormat"], s["metric"]) for s in result}
        truth = {"Pod ml/e"} if any(at - 4 <= when <= at for when in samples) else set()
        if shown != truth:
            wrong[round(at - failed[0], 1)] = (sorted(shown), sorted(truth))
    assert not wrong, f"seconds after the failed scrape: (shown, named within the lookback) {wrong}"


def test_a_gpu_with_a_reading_within_the_lookback_counts_through_one_failed_scrape(gap):
    """The overview's count counts a GPU with a reading within the look-back (promql.counted over label_lookback):
    the failed scrape's staleness markers do not take the GPU out of "GPUs reporting" (read at the instant alone, it
    read no GPU for the second after the failed scrape), and it stops counting once its last reading is older than
    the look-back."""
    prometheus, samples, ups = gap
    failed = [at for at, v in ups if v == 0]
    assert failed, ups
    target, expr = lookback_panel("", "GPUs reporting")
    start, end = math.floor(samples[0]) + 0.5, samples[-1] + 6
    wrong = {}
    for at, result in prometheus.query_at(expr, start, int(end - start) + 1, 1,
                                          instant=bool(target.get("instant"))).items():
        shown = [float(s["value"][1]) for s in result]
        truth = [1.0] if any(at - 4 <= when <= at for when in samples) else []
        if shown != truth:
            wrong[round(at - failed[0], 1)] = (shown, truth)
    assert not wrong, f"seconds after the failed scrape: (shown, GPUs with a reading within the lookback) {wrong}"


# --- Prometheus restarted while the GPU changed hands (no staleness markers are written across a restart) ------

def _held_or_idle(pod: str, watts: float) -> str:
    text = _held(pod or "x", watts).replace('"n2"', '"n3"')
    return text if pod else text.replace(',container="main",namespace="ml",pod="x"', "")


RESTARTS = {"label moved": (("d", 300.0), ("c", 100.0)), "idle GPU taken": (("", 60.0), ("c", 100.0)),
            "pod left": (("d", 300.0), ("", 60.0))}


@contextmanager
def _restarted_scene(tmp_path_factory, name: str, fails_after: int | None = None):
    """n3's GPU 0 is named under one pod (or none: idle) until Prometheus stops; when it is up again the exporter
    names another (or none), the GPU drawing another power; `fails_after`: its answer of that number after the
    restart is no exposition (a failed scrape). Every stored sample (time, pod, watts), and the time of the first
    after the restart."""
    (pod, watts), after = RESTARTS[name]
    state = {"pod": pod, "watts": watts, "after": 0}

    def answer() -> str:
        if state["pod"] == after[0] and state["watts"] == after[1]:
            state["after"] += 1
            if state["after"] == fails_after:
                return "garbage{ 1\n"
        return _held_or_idle(state["pod"], state["watts"])

    with ReplayExporter(answer) as exporter:
        prometheus = Prometheus(tmp_path_factory.mktemp("pod-lookback-prom-restart"), every_second([exporter.address]))
        prometheus.start()
        try:
            prometheus.wait_for('DCGM_FI_DEV_POWER_USAGE')
            time.sleep(6)
            prometheus.stop()
            prometheus.session = None
            state.update(pod=after[0], watts=after[1])
            prometheus.start()
            prometheus.wait_for(f'DCGM_FI_DEV_POWER_USAGE == {after[1]:g}')
            time.sleep(8)
            prometheus.stop_scraping()
            samples = sorted((float(at), series["metric"].get("pod", ""), float(v)) for series in prometheus.query(
                'DCGM_FI_DEV_POWER_USAGE[10m]') for at, v in series["values"])
            yield prometheus, samples, min(at for at, _, v in samples if v == after[1])
        finally:
            prometheus.stop()


FAILS_AFTER = 3


# each scene waits in real time on its Prometheus's 1 s scrapes (16 to 20 s; one after another they took 90 s)
scenes = module_scenes({"scraped": _replaced, "sliced": _sliced_scene, "gap": _gap_scene,
                        **{("restarted", name): (lambda factory, name=name: _restarted_scene(factory, name))
                           for name in RESTARTS},
                        "restarted_failed": lambda factory: _restarted_scene(factory, "label moved", FAILS_AFTER)})


scraped = scene("scraped")
sliced = scene("sliced")
gap = scene("gap")
restarted = scene("restarted", sorted(RESTARTS))


def test_after_a_prometheus_restart_each_pod_shows_the_gpus_latest_reading(restarted):
    prometheus, samples, first_after = restarted
    target, expr = lookback_panel("", "Power draw of each pod's GPUs")
    start = first_after + 0.5
    wrong = {}
    for at, result in prometheus.query_at(expr, start, int((samples[-1][0] - start) // 1) + 1, 1,
                                          instant=bool(target.get("instant"))).items():
        shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
        latest = [(when, pod, v) for when, pod, v in samples if when <= at]
        truth = {f"Pod ml/{pod}": latest[-1][2] for when, pod, _ in latest if pod and at - 4 <= when}
        if shown != truth:
            wrong[round(at - first_after, 1)] = (shown, truth)
    assert not wrong, f"seconds after the first scrape after the restart: (shown, true) {wrong}"


@pytest.mark.parametrize("title", ["Power draw", "Total power draw"])
def test_after_a_prometheus_restart_a_gpu_panel_shows_the_gpus_latest_reading(restarted, title):
    """Per-GPU panels read the copy chosen (promql.chosen_copy) by its fresh series only: the series from before the
    restart (another pod, or none), which the instant selector reads for 5 minutes beside the new one, is not read
    while the GPU has a fresh one (it read 300 W where the GPU drew 100)."""
    prometheus, samples, first_after = restarted
    target, expr = lookback_panel("", title)
    gpu = render_legend(target["legendFormat"], {"node": "n3", "gpu": "0"})
    start = first_after + 0.5
    wrong = {}
    for at, result in prometheus.query_at(expr, start, int((samples[-1][0] - start) // 1) + 1, 1,
                                          instant=bool(target.get("instant"))).items():
        if not any(at - 1 < when <= at for when, _, _ in samples):
            continue  # the GPU's latest scrape failed: it has no fresh series, which is what this story is about
        shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
        truth = {gpu: [v for when, _, v in samples if when <= at][-1]}
        if shown != truth:
            wrong[round(at - first_after, 1)] = (shown, truth)
    assert not wrong, f"seconds after the first scrape after the restart: (shown, true) {wrong}"


# a GPU without a fresh copy is read from its copy with the newest reading within the look-back (promql.looked_back):
# a series from before a Prometheus restart, which no staleness marker ended, is read by the instant selector for 5
# minutes, and was read at the step after the live copy's failed scrape (300 W where it drew 100), in the fleet's total
restarted_failed = scene("restarted_failed")


@pytest.mark.parametrize("title", ["Total power draw"])
def test_after_a_prometheus_restart_a_failed_scrape_shows_no_reading_from_before_it(restarted_failed, title):
    # at every step the GPU's latest reading (100 W) or none (no fresh copy, as a failed scrape of one exporter)
    prometheus, samples, first_after = restarted_failed
    target, expr = lookback_panel("", title)
    start = first_after + 0.5
    shown = {at: {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
             for at, result in prometheus.query_at(expr, start, int((samples[-1][0] - start) // 1) + 1, 1,
                                                   instant=bool(target.get("instant"))).items()}
    failed = [at for at in shown if not any(at - 1 < when <= at for when, _, _ in samples)]
    wrong = {round(at - first_after, 1): values for at, values in shown.items() if set(values.values()) - {100.0}}
    assert failed, samples
    # the story: the series from before the restart is read by the instant selector there (a failed scrape just
    # before the restart would have ended it with a staleness marker)
    assert prometheus.query('DCGM_FI_DEV_POWER_USAGE{pod="d"}', at=failed[0]), (failed, samples)
    assert not wrong, f"seconds after the first scrape after the restart: shown (true 100 W or none) {wrong}"


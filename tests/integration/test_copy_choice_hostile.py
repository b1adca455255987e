"""A hostile reader's stories for the one gauge copy choice (promql.chosen_copy), on a real Prometheus: a node's old
exporter (its own pod's name in `Hostname`) and new one (`hostname="n3"`) both read, fresh at every step (maxSurge
overlap). GPU 0 (GPU-n3-0) held by ml/p: both read 150 W (a tie); the old reads 60 % utilization, the new 50 %; both
read 30,000 MiB used of 80,000.

Truth: one line per GPU, named by its node (n3), never by the exporter pod's name; the same answer at every call over
the same data; per pod and per GPU the same copy (the pod's utilization is its GPU's)."""

from __future__ import annotations

import math
import re
import threading
import time
from contextlib import contextmanager

import pytest

from generator.preview.interpolate import interpolate, variables
from generator.project import load_project
from generator.render.alarms import prometheus_expression
from tests.integration.test_pod_copy_overlap import PER_POD
from tests.support.copy_choice_scene import (OLD_POD, counter_growth, fresh_steps, latest_before, named_alike,
                                             one_spelling_payload, tied_payload, two_exporters)
from tests.support.exporter_overlap_scene import COMMON, METRICS, SCRAPES, overlap_scene, shown_values, wrong_instants
from tests.support.projects import bundled_panel, bundled_panels, bundled_project
from tests.support.prometheus_server import SCENE_RANGE, counted_inline, scraped_every
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, scraped_until
from tests.support.side_by_side import module_scenes, scene


tied = scene("tied")
tied_failed = scene("tied_failed")  # the same, one scrape of the new exporter (hostname="n3") failing
overlap = scene("overlap")  # test_pod_copy_overlap's scene


@pytest.mark.parametrize("title", ["Power draw", "GPU temperature", "Framebuffer memory used"])
def test_a_gpu_read_alike_by_two_exporters_is_named_by_its_node_at_every_call(tied, title):
    named_alike(tied, title, 8, "n3 GPU 0")


NEW_FAILS_AT = (6, 10)  # two: a failed scrape of the old exporter a loaded machine adds at one leaves the other


@pytest.mark.parametrize("title", ["Power draw", "GPU temperature"])
def test_a_gpu_is_named_by_its_node_through_the_node_copys_failed_scrape(tied_failed, title):
    # promql.gpus_named: a copy a scrape within the lookback read names the GPU; at every step where a copy is fresh
    # (the old one alone at the step after the new one's failed scrape)
    samples = tied_failed[3]
    # two grids half a second apart: Prometheus places each target's scrapes at an offset of its own (from its address:
    # a port chosen per run), and a grid on the failing copy's phase has no step its failed scrape leaves it stale at
    # (1.0 s after its sample before it is still within the look-back); the other grid does
    shown = {**shown_values(tied_failed, title), **shown_values(tied_failed, title, offset=4.0)}
    alone = [at for at in shown if [at - max((t for t in times if t <= at), default=-math.inf) <= 1
                                    for times in samples.values()].count(True) == 1]
    fresh = [at for at in shown if any(at - max((t for t in times if t <= at), default=-math.inf) <= 1
                                       for times in samples.values())]
    wrong = {at: shown[at] for at in fresh if list(shown[at]) != ["n3 GPU 0"]}
    assert alone and len(fresh) >= 6, (alone, samples)
    assert not wrong, f"{title}: steps: shown (true: one line 'n3 GPU 0'; one copy fresh at {alone}) {wrong}"


def test_a_gpu_whose_old_exporter_reads_higher_is_named_by_its_node(tied):
    shown = dict(fresh_steps(tied, shown_values(tied, "GPU utilization")))
    wrong = {at: values for at, values in shown.items() if list(values) != ["n3 GPU 0"]}
    assert len(shown) >= 4
    assert not wrong, f"steps: shown (true: one line 'n3 GPU 0') {wrong}"


def test_a_pods_utilization_is_its_gpus_at_every_step_and_call(tied):
    wrong = {}
    for call in range(4):
        per_pod = dict(fresh_steps(tied, shown_values(tied, "GPU utilization by pod")))
        per_gpu = shown_values(tied, "GPU utilization")
        wrong.update({(call, at): (values, per_gpu.get(at)) for at, values in per_pod.items()
                      if sorted(values.values()) != sorted((per_gpu.get(at) or {}).values())})
    assert not wrong, f"(call, step): (per pod, per GPU) {wrong}"


@pytest.mark.parametrize("title", ["GPU utilization by pod", "GPU utilization"])
def test_the_node_view_reads_the_same_copy_as_all_nodes(tied, title):
    # the old exporter's copy (60 %, its pod's name in Hostname) is n3's GPU's copy too: chosen with n3 selected as
    # with All nodes, not only the copies spelled n3 (50 %)
    every = dict(fresh_steps(tied, shown_values(tied, title)))
    one = shown_values(tied, title, {"node": "n3"})
    wrong = {at: (values, one.get(at)) for at, values in every.items() if values != one.get(at)}
    assert not wrong, f"steps: (All nodes, node=n3) {wrong}"


# --- three copies of one GPU (maxSurge with a second scrape path): the old exporter (its pod's name in Hostname, 60 %,
# 99 C), the new one (hostname="n3", 50 %, 98 C) and the new one again through a job that labels the node (node="n3",
# 55 %, 98 C); truth: one line and one alert per GPU, named n3; a panel's value the fresher copy's (each scrape is a
# reading of the one GPU at its time: the newest is its latest; of copies sampled at one instant the highest), an
# alert's the highest reading of its window (60 %, 99 C) ---

def _three(spelling: str, util: int, temp: int) -> str:
    labels = f'gpu="0",UUID="GPU-n3-0",device="nvidia0",{COMMON},{spelling},container="main",namespace="ml",pod="p"'
    return "".join(f"# TYPE {metric} gauge\n{metric}{{{labels}}} {value:g}\n"
                   for metric, value in zip(METRICS, (30000, 50000, util, 150, temp)))


@contextmanager
def _three_exporters(tmp_path_factory, name: str, late: int = 0):
    """The three copies scraped every second, the node's two answering nothing until `late` samples of the old one's
    are stored (not answered: a loaded machine's scrape that timed out was answered and stored nothing), then until
    each has answered SCRAPES - late scrapes; (prometheus, first and last stored sample, each copy's (instance's)
    sample times)."""
    opened = threading.Event()
    if not late:
        opened.set()
    answered = {"b": 0, "c": 0}

    def node_copy(name: str, spelling: str, util: int):
        def answer() -> str:
            if not opened.is_set():
                return ""
            answered[name] += 1
            return _three(spelling, util, 98)
        return answer

    old = CountedAnswers(lambda n: _three(f'Hostname="{OLD_POD}"', 60, 99))
    with ReplayExporter(old) as a, ReplayExporter(node_copy("b", 'hostname="n3"', 50)) as b, \
            ReplayExporter(node_copy("c", 'node="n3"', 55)) as c:
        def stored_late(prometheus) -> None:
            if not opened.is_set() and prometheus.query(
                    f'count_over_time(DCGM_FI_DEV_GPU_TEMP{{instance="{a.address}"}}[10m]) >= {late}'):
                opened.set()
        with scraped_until(tmp_path_factory, name, [a.address, b.address, c.address],
                       lambda: old.served >= SCRAPES and min(answered.values()) >= SCRAPES - late,
                       watch=stored_late) as prometheus:
            samples = {series["metric"]["instance"]: [float(at) for at, _ in series["values"]]
                       for series in prometheus.query("DCGM_FI_DEV_GPU_TEMP[10m]")}
            stored = [at for times in samples.values() for at in times]
            THREE_COPIES.update({a.address: "old", b.address: "b", c.address: "c"})
            yield prometheus, min(stored), max(stored), samples


three = scene("three")
THREE_COPIES: dict[str, str] = {}  # a copy's instance (its exporter's address): the copy
THREE = {"GPU utilization": {"old": 60.0, "b": 50.0, "c": 55.0}, "GPU temperature": {"old": 99.0, "b": 98.0, "c": 98.0},
         "Power draw": {"old": 150.0, "b": 150.0, "c": 150.0}}  # each copy's reading


def _temperature_alerts(scene, tmp_path, evaluations: int) -> dict[tuple, list[int]]:
    """GpudashGpuTempCritical's condition (the default project's, as a Prometheus scraping every second evaluates it)
    at `evaluations` instants a second apart, from 6.5 s after the first stored sample, or 1.5 s after the last copy's
    first sample where that is later (a loaded machine scrapes a copy first seconds after the others: before its first
    sample the copies there are are the scene's truth at those instants, not the scene's story): the evaluations each
    (node, gpu) fired at. The condition as one expression: the generated alert reads its recording rule's samples,
    which a series of instant queries has none of (test_recorded_periods.py: the same alerts)."""
    prometheus, start, _, samples = scene
    after = max(6.5, max(min(times) for times in samples.values()) - math.floor(start) + 1.5)
    (tmp_path / "gpudash.yaml").write_text("")
    project = load_project(tmp_path / "gpudash.yaml")
    alarm = next(a for a in project.alarms if a.id == "gpu-temp-critical")
    expr = scraped_every(prometheus_expression(alarm, project.catalog, project.settings), 30, 1)
    seen = {}
    for k in range(evaluations):
        for series in prometheus.query(expr, math.floor(start) + after + k):
            seen.setdefault((series["metric"].get("node"), series["metric"].get("gpu")), []).append(k)
    return seen


def _fresher(scene, readings: dict[str, float], at: float) -> float:
    """The reading of the copy sampled last at or before `at` (of copies sampled at one instant the highest)."""
    samples = scene[3]
    latest = {THREE_COPIES[instance]: max(t for t in times if t <= at) for instance, times in samples.items()}
    return max(readings[copy] for copy, t in latest.items() if t == max(latest.values()))


@pytest.mark.parametrize("title", sorted(THREE))
def test_three_copies_of_a_gpu_are_one_line_named_by_its_node_with_the_fresher_reading(three, title):
    # the higher (60 %, 99 C) was shown before c75fe0bb, whichever copy scraped the GPU last (promql.older_samples)
    wrong = {}
    for call in range(3):
        shown = dict(fresh_steps(three, shown_values(three, title)))
        assert len(shown) >= 4
        wrong.update({(call, at): (values, truth) for at, values in shown.items()
                      if values != {"n3 GPU 0": (truth := _fresher(three, THREE[title], at))}})
    assert not wrong, f"{title}: (call, step): (shown, true n3 GPU 0: the fresher copy's) {wrong}"


def test_the_node_selected_names_the_gpu_by_its_node(three):
    # the node's copies (hostname, node) read alike: one line, named n3 (its value: test_the_node_view_reads...)
    shown = dict(fresh_steps(three, shown_values(three, "GPU temperature", {"node": "n3"})))
    wrong = {at: values for at, values in shown.items() if list(values) != ["n3 GPU 0"]}
    assert len(shown) >= 4
    assert not wrong, f"steps: shown with node n3 (true: one line n3 GPU 0) {wrong}"


def test_an_alert_over_three_copies_is_one_alert_named_by_the_node(three, tmp_path):
    # the old exporter reads hotter (99 C): the alert fires at 99, named n3, at every evaluation
    seen = _temperature_alerts(three, tmp_path, 8)
    assert list(seen) == [("n3", "0")] and len(seen[("n3", "0")]) == 8, \
        f"alerts (node, gpu) at 8 evaluations (true: n3 GPU 0 at each): {seen}"


# The same three copies, the node's two first scraped 5 scrapes after the old exporter's (its scrapes landing first:
# a loaded machine, a scrape target's offset in the interval, the new pods started during the surge): the window of
# every period the alert judges holds steps at which only the old exporter's copy, named by its pod, was read.
LATE = 5


three_late = scene("three_late")


def test_an_alert_over_copies_first_scraped_apart_is_one_alert_named_by_the_node(three_late, tmp_path):
    # evaluated from 1.5 s after the last copy's first sample (6.5 s after the old exporter's on an idle machine):
    # each evaluation's periods hold the old exporter's lone steps
    _, start, _, samples = three_late
    assert sorted(min(times) - start > LATE - 2 for times in samples.values()) == [False, True, True], samples
    seen = _temperature_alerts(three_late, tmp_path, 8)
    assert list(seen) == [("n3", "0")] and len(seen[("n3", "0")]) == 8, \
        f"alerts (node, gpu) at 8 evaluations (true: n3 GPU 0 at each): {seen}"


# --- a MIG GPU (two instances, one pod each) read by both exporters, each instance reading apart, totals alike ---

def _mig(old: bool, used: dict[int, dict[bool, int]] | None = None, free: int | None = None,
         renamed: bool = True) -> str:
    """GPU-n3-0 split into two MIG instances (1: ml/a, 2: ml/b); `used[instance][old]` each exporter's reading;
    `renamed`: the old exporter writes its own pod's name into Hostname (else both write hostname="n3", as two copies
    gpudash's scrape job labels with one node)."""
    node = f'Hostname="{OLD_POD}"' if old and renamed else 'hostname="n3"'
    used = used or {1: {True: 10000, False: 12000}, 2: {True: 20000, False: 18000}}
    lines = []
    for metric in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP"):
        lines.append(f"# TYPE {metric} gauge")
        for instance, pod in ((1, "a"), (2, "b")):
            value = {"DCGM_FI_DEV_FB_USED": used[instance][old],
                     "DCGM_FI_DEV_FB_FREE": 40000 - used[instance][old] if free is None else free,
                     "DCGM_FI_DEV_POWER_USAGE": 150, "DCGM_FI_DEV_GPU_TEMP": 60}[metric]
            labels = (f'gpu="0",UUID="GPU-n3-0",device="nvidia0",{COMMON},{node},GPU_I_PROFILE="3g.40gb",'
                      f'GPU_I_ID="{instance}",container="main",namespace="ml",pod="{pod}"')
            lines.append(f"{metric}{{{labels}}} {value:g}")
    return "\n".join(lines) + "\n"


MIG_PROBE = 'DCGM_FI_DEV_GPU_TEMP{GPU_I_ID="1"}'


mig = scene("mig")


def test_a_mig_gpus_pods_are_one_exporters_instances_and_add_up_to_the_gpu_at_every_call(mig):
    wrong = {}
    for call in range(8):
        per_pod = dict(fresh_steps(mig, shown_values(mig, "Framebuffer used by pod")))
        per_gpu = shown_values(mig, "Framebuffer memory used")
        for at, values in per_pod.items():
            pair = (values.get("Pod ml/a"), values.get("Pod ml/b"))
            gpu = list((per_gpu.get(at) or {}).values())
            if pair not in ((10000.0, 20000.0), (12000.0, 18000.0)) or gpu != [30000.0]:
                wrong[(call, at)] = (values, per_gpu.get(at))
    assert not wrong, f"(call, step): (per pod, per GPU) true: one exporter's (10000, 20000) or (12000, 18000), " \
                      f"GPU 30000: {wrong}"


def _titles() -> list[str]:
    exprs = {title: p["targets"][0].get("expr", "") for title, p in bundled_panels().items() if p.get("targets")}
    # shown_values substitutes the scene's `$__range` (each GPU's name over the range), not the other macros
    return sorted(t for t, e in exprs.items() if e and not re.search(r"\$\{?__(?!range\b)", e))


@pytest.mark.parametrize("title", _titles())
def test_every_panel_answers_the_same_values_at_every_call(tied, title):
    answers = [{at: sorted(v.values()) for at, v in shown_values(tied, title).items()} for _ in range(4)]
    differ = [k for k, answer in enumerate(answers) if answer != answers[0]]
    assert not differ, f"{title}: calls {differ} differ from call 0: {[answers[0], *(answers[k] for k in differ)]}"


@pytest.mark.parametrize("title", sorted(PER_POD))
def test_time_sliced_pods_each_show_with_their_node_selected(overlap, title):
    # test_pod_copy_overlap's maxSurge scene (old exporter: its pod's name in Hostname, no node label) with node=n3
    wrong = wrong_instants(shown_values(overlap, title, {"node": "n3"}), PER_POD[title])
    assert not wrong, f"{title} (node n3): steps: shown (true {PER_POD[title]}) {wrong}"


VIRTUAL = "exporter:\n  virtual_gpus: true\n"


@pytest.mark.parametrize("per_pod, per_gpu", [("GPU utilization by pod", "GPU utilization"),
                                              ("Power draw of each pod's GPUs", "Power draw")])
def test_with_virtual_gpus_a_pods_reading_is_its_gpus_at_every_step_and_call(tied, per_pod, per_gpu):
    wrong = {}
    for call in range(4):
        pods = dict(fresh_steps(tied, shown_values(tied, per_pod, settings=VIRTUAL)))
        gpus = shown_values(tied, per_gpu, settings=VIRTUAL)
        wrong.update({(call, at): (values, gpus.get(at)) for at, values in pods.items()
                      if sorted(values.values()) != sorted((gpus.get(at) or {}).values())})
    assert not wrong, f"(call, step): (per pod, per GPU) {wrong}"


# --- a MIG GPU whose old exporter reads DCGM's blank on one instance and more on the other ---

BLANK = 9223372036854775794


def _mig_blank(old: bool, renamed: bool = True) -> str:
    return _mig(old, {1: {True: 25000, False: 12000}, 2: {True: BLANK, False: 8000}}, 30000, renamed)


def _mig_blank_scene(tmp_path_factory, param: str):
    return two_exporters(tmp_path_factory, f"copy-choice-hostile-mig-blank-{param}",
                          lambda old: _mig_blank(old, param == "renamed"), MIG_PROBE)


MIG_BLANK = ("renamed", "one-spelling")


mig_blank = scene("mig_blank", MIG_BLANK)


def test_a_mig_pod_whose_instance_one_exporter_reads_blank_shows_the_others_reading(mig_blank):
    # the new exporter reads both instances (12,000 and 8,000 MiB); the old reads more on one (25,000) and DCGM's
    # blank on the other: a copy reading the blank for a pod's instance is not that pod's reading, nor the GPU's
    # (renamed: the old exporter names the node by its own pod's name; one-spelling: both name it n3)
    per_pod = dict(fresh_steps(mig_blank, shown_values(mig_blank, "Framebuffer used by pod")))
    per_gpu = shown_values(mig_blank, "Framebuffer memory used")
    wrong = {at: (values, per_gpu.get(at)) for at, values in per_pod.items()
             if values != {"Pod ml/a": 12000.0, "Pod ml/b": 8000.0}
             or list((per_gpu.get(at) or {}).values()) != [20000.0]}
    assert len(per_pod) >= 4
    assert not wrong, f"steps: (per pod, per GPU) true ml/a 12,000, ml/b 8,000, GPU 20,000: {wrong}"


@pytest.mark.parametrize("title, truth", [
    ("Framebuffer used share by pod", {"Pod ml/a": round(12000 / 42000, 4), "Pod ml/b": round(8000 / 38000, 4)}),
    ("Framebuffer in use", {"DCGM_FI_DEV_FB_USED": 0.25})])
def test_a_mig_gpus_share_whose_instance_one_exporter_reads_blank_is_the_others(mig_blank, title, truth):
    # the share's used and total both the new exporter's: 20,000 of 80,000 MiB, ml/a 12,000 of 42,000, ml/b 8,000 of
    # 38,000
    shown = dict(fresh_steps(mig_blank, shown_values(mig_blank, title)))
    wrong = {at: values for at, values in shown.items() if values != truth}
    assert len(shown) >= 4
    assert not wrong, f"{title}: steps: shown (true {truth}) {wrong}"


# --- a counter across an ordinary renaming upgrade (no overlap): the old exporter stops, the new starts at the
# counter's current value; the GPU's energy rises 1,000 mJ every second throughout. An exporter reads the counter when
# it answers, Prometheus stamps the sample when it asks: on a loaded machine an answer up to the 1 s scrape timeout
# late reads up to 1,000 mJ more than its stamp says (a 4 s window up to ~25 % off ~1,000). The truth a window shows
# is the stored readings' own: the GPU's one counter (the two copies' readings, one after the other) grew from the
# latest reading at or before the window to the latest in it, over the seconds between their stamps ---

def _energy(old: bool, started: float) -> str:
    node = f'Hostname="{OLD_POD}"' if old else 'hostname="n3"'
    labels = f'gpu="0",UUID="GPU-n3-0",device="nvidia0",{COMMON},{node},container="main",namespace="ml",pod="p"'
    value = round((time.time() - started) * 1000) + 5_000_000
    return (f"# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} "
            f"{value}\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{{{labels}}} 60\n")


@contextmanager
def _upgrade(tmp_path_factory):
    started = time.time()
    before = CountedAnswers(lambda n: _energy(True, started) if n <= 10 else "")
    after = ReplayExporter(lambda: "" if before.served <= 10 else _energy(False, started))
    with ReplayExporter(before) as a, after as b:
        with scraped_until(tmp_path_factory, "copy-choice-hostile-upgrade", [a.address, b.address],
                       lambda: before.served >= 22) as prometheus:
            stored = [float(at) for series in prometheus.query("DCGM_FI_DEV_GPU_TEMP[10m]")
                      for at, _ in series["values"]]
            yield prometheus, min(stored), max(stored), {}


upgrade = scene("upgrade")


def test_a_gpus_energy_rate_across_a_renaming_upgrade_is_neither_lost_nor_spiked(upgrade):
    prometheus, start, end, _ = upgrade
    target = bundled_panel("DEV_TOTAL_ENERGY_CONSUMPTION")["targets"][0]
    expr = interpolate(scraped_every(counted_inline(target["expr"], bundled_project()), 30, 1)
                       .replace("$__rate_interval", "4s"),
                       {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu"))})
    first = math.floor(start) + 5.5
    shown = {at: [round(float(s["value"][1])) for s in result]
             for at, result in prometheus.query_at(expr, first, int((end - first) // 1) + 1, 1).items()}
    stored = prometheus.query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[10m]")
    readings = sorted((float(at), float(value)) for series in stored for at, value in series["values"])
    upgraded = min(float(at) for series in stored if series["metric"].get("hostname") for at, _ in series["values"])
    truth = {at: counter_growth(readings, math.floor(at), 4) for at in shown}
    wrong = {at: (values, truth[at]) for at, values in shown.items()
             if truth[at] is None or len(values) != 1 or abs(values[0] - truth[at]) > 2}
    across = [at for at in shown if latest_before(readings, math.floor(at) - 4)[0] < upgraded <= math.floor(at)]
    assert len(shown) >= 10 and across, f"windows across the upgrade ({upgraded}): {across} of {shown}"
    assert not wrong, f"steps: (shown, true: one line) {wrong}; readings {readings}"


# --- an alert rule over two copies reading alike: its labels are the alert's identity ---

def _hot(old: bool) -> str:
    node = f'Hostname="{OLD_POD}"' if old else 'hostname="n3"'
    labels = f'gpu="0",UUID="GPU-n3-0",device="nvidia0",{COMMON},{node},container="main",namespace="ml",pod="p"'
    return "".join(f"# TYPE {metric} gauge\n{metric}{{{labels}}} {value:g}\n"
                   for metric, value in zip(METRICS, (30000, 50000, 50, 150, 99)))


hot = scene("hot")


def test_a_firing_temperature_alert_keeps_one_identity_over_copies_reading_alike(hot, tmp_path):
    # both copies read 99 C; each evaluation is an instant query: an alert whose labels change between evaluations is a
    # new alert (its `for` starts again, the old one resolves)
    seen = _temperature_alerts(hot, tmp_path, 12)
    assert list(seen) == [("n3", "0")], f"(node, gpu) of the firing alert at 12 evaluations (true: n3 0 at each): {seen}"


# --- two copies naming one GPU apart in ONE spelling (the old exporter its own pod's name in Hostname, the new one the
# node, worker-3, in Hostname, as an exporter given NODE_NAME writes it), both fresh at every step, reading alike; the
# node's name sorts after the pod's (Prometheus' order of series decides no tie here) ---


one_spelling = scene("one_spelling")


# Every scene of this file (each waits ~20 s in real time on its Prometheus's 1 s scrapes: one after another they held
# a worker for over three minutes), set up side by side (tests/support/side_by_side.py)
scenes = module_scenes({
    "tied": lambda factory: two_exporters(factory, "copy-choice-hostile", tied_payload, "DCGM_FI_DEV_GPU_TEMP"),
    "tied_failed": lambda factory: two_exporters(factory, "copy-choice-hostile-tied-failed", tied_payload,
                                                  "DCGM_FI_DEV_GPU_TEMP", NEW_FAILS_AT),
    "overlap": overlap_scene,
    "three": lambda factory: _three_exporters(factory, "copy-choice-hostile-three"),
    "three_late": lambda factory: _three_exporters(factory, "copy-choice-hostile-three-late", LATE),
    "mig": lambda factory: two_exporters(factory, "copy-choice-hostile-mig", _mig, MIG_PROBE),
    **{("mig_blank", param): (lambda factory, param=param: _mig_blank_scene(factory, param))
       for param in MIG_BLANK},
    "upgrade": _upgrade,
    "hot": lambda factory: two_exporters(factory, "copy-choice-hostile-hot", _hot, "DCGM_FI_DEV_FB_FREE"),
    "one_spelling": lambda factory: two_exporters(factory, "copy-choice-hostile-one-spelling", one_spelling_payload,
                                                   "DCGM_FI_DEV_GPU_TEMP"),
})


def test_an_alert_over_copies_of_one_spelling_is_named_by_the_node_at_every_evaluation(one_spelling, tmp_path):
    seen = _temperature_alerts(one_spelling, tmp_path, 12)
    assert list(seen) == [("worker-3", "0")] and len(seen[("worker-3", "0")]) == 12, \
        f"(node, gpu) of the firing alert at 12 evaluations (true: worker-3 0 at each): {seen}"


@pytest.mark.parametrize("title", ["GPU temperature", "Power draw"])
def test_a_line_over_copies_of_one_spelling_is_named_by_the_node_at_every_step_and_call(one_spelling, title):
    named_alike(one_spelling, title, 6, "worker-3 GPU 0")

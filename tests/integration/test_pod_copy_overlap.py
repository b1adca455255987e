"""Per-pod and per-GPU panels on a real Prometheus while a node's old and new exporters are both read (maxSurge
overlap, both fresh at every step; the old exporter writes its own pod's name into `Hostname`, the new one
`hostname="n3"`), with the fleet's awkward cases on the node's GPUs:

- GPU 0 (UUID GPU-n3-0) time-sliced between team-d/ts-0 and team-d/ts-1: each exporter names one of them per scrape
  (dcgm-exporter issue #340), the two exporters out of step. Old: 40 %, 100 W; new: 44 %, 104 W; both 10,000 MiB used
  of 80,000 (share 0.125).
- GPU 1 (GPU-n3-1) idle (no pod): 0 %, 60 W old, 64 W new; 1,000 MiB used of 80,000.
- GPU 2 (GPU-n3-2) held by ml/z: 70 % in both exporters' first scrapes, then DCGM's blank in both; 200 W old, 204 W new;
  40,000 MiB used of 80,000 (0.5).

A GPU is one GPU (its UUID) whichever exporter reads it, its value one exporter's reading; time-sliced pods each show;
the idle GPU is in the per-GPU and fleet views, not in the per-pod ones; a GPU whose fresh copies are all blank shows its
latest reading within the panels' look-back (4 scrape intervals: 4 s here), then none.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import pytest

from tests.support.exporter_overlap_scene import COMMON, METRICS, SCRAPES, overlap_scene, shown_values, wrong_instants
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, scraped_until
from tests.support.side_by_side import module_scenes, scene


# marks for what main does not hold yet (removed as the fix lands); not strict: ties decided by Prometheus' range
# evaluation make some of them pass in some runs
TIES = ()  # copies reading alike tie; the share keeps the GPU whichever copy each of its used and total took
SLICED = {"Pod team-d/ts-0", "Pod team-d/ts-1"}
PER_POD = {  # ml/z's utilization: test_a_gpu_whose_fresh_copies_are_all_blank_shows...
    "Power draw of each pod's GPUs": {**{p: {100.0, 104.0} for p in SLICED}, "Pod ml/z": {200.0, 204.0}},
    "Framebuffer used share by pod": {**{p: {0.125} for p in SLICED}, "Pod ml/z": {0.5}},
    "Framebuffer used by pod": {**{p: {10000.0} for p in SLICED}, "Pod ml/z": {40000.0}},
    "Pods on GPUs": {**{p: {1.0} for p in SLICED}, "Pod ml/z": {1.0}},
}


@pytest.mark.parametrize("title", [pytest.param(t, marks=TIES) if t == "Framebuffer used share by pod" else t
                                   for t in sorted(PER_POD)])
def test_time_sliced_pods_each_show_and_the_idle_gpu_does_not_while_two_exporters_read_the_node(overlap, title):
    wrong = wrong_instants(shown_values(overlap, title), PER_POD[title])
    assert not wrong, f"{title}: steps: shown (true {PER_POD[title]}) {wrong}"


def test_a_namespace_view_shows_its_time_sliced_pods_once_each(overlap):
    shown = shown_values(overlap, "GPU utilization by pod", {"namespace": "team-d"})
    wrong = wrong_instants(shown, {p: {40.0, 44.0} for p in SLICED})
    assert not wrong, f"steps: shown (true: ts-0 and ts-1 each 40 or 44 %) {wrong}"


LOOKBACK = 4  # promql.label_lookback at 1 s scrapes


def test_a_gpu_whose_fresh_copies_are_all_blank_shows_its_latest_reading_within_the_lookback(overlap):
    _, _, _, util = overlap
    shown = shown_values(overlap, "GPU utilization by pod")
    wrong, held = {}, 0
    for at, values in shown.items():
        latest = [max((s for s in samples if s[0] <= at), default=None) for samples in util.values()]
        if None in latest or any(at - when > 1 for when, _ in latest):
            continue  # a copy not fresh at this step: not judged here
        kinds = {value >= 1e18 for _, value in latest}
        # a reading (70 %) within the look-back shows; one a scrape interval older may (promql.latest_reading)
        read = max((when for samples in util.values() for when, value in samples if when <= at and value < 1e18),
                   default=-math.inf)
        held += kinds == {True} and at - read < LOOKBACK
        if kinds == {True} and at - read < LOOKBACK and values.get("Pod ml/z") != 70.0:
            wrong[at] = ("all fresh copies blank, a reading within the look-back", values.get("Pod ml/z"))
        if kinds == {True} and at - read >= LOOKBACK and "Pod ml/z" in values:
            wrong[at] = ("all fresh copies blank, no reading within the look-back", values.get("Pod ml/z"))
        if kinds == {False} and values.get("Pod ml/z") != 70.0:
            wrong[at] = ("all fresh copies 70", values.get("Pod ml/z"))
        if True in kinds and False in kinds and values.get("Pod ml/z") != 70.0:
            wrong[at] = ("one fresh copy 70, one blank", values.get("Pod ml/z"))
        if not all(values.get(k) in (40.0, 44.0) for k in SLICED):
            wrong[at] = ("time-sliced pods", values)
    assert len(shown) >= 8 and held, (held, util)  # a step with every fresh copy blank after a reading
    assert not wrong, f"steps: (case, ml/z shown) {wrong}"


def test_each_gpu_is_one_line_including_the_idle_one(overlap):
    shown = shown_values(overlap, "Power draw")
    allowed = {0: {100.0, 104.0}, 1: {60.0, 64.0}, 2: {200.0, 204.0}}
    wrong = {at: values for at, values in shown.items()
             if sorted(int(k.rsplit(" ", 1)[1]) for k in values) != [0, 1, 2]
             or any(v not in allowed[int(k.rsplit(" ", 1)[1])] for k, v in values.items())}
    assert not wrong, f"steps: shown (true: one line per GPU 0, 1, 2: {allowed}) {wrong}"


def test_the_fleets_power_and_gpu_count_count_each_gpu_once(overlap):
    totals = {a + b + c for a in (100, 104) for b in (60, 64) for c in (200, 204)}
    wrong = wrong_instants(shown_values(overlap, "Total power draw"), {"DCGM_FI_DEV_POWER_USAGE": set(map(float, totals))})
    assert not wrong, f"Total power draw: steps: shown (true one of {sorted(totals)}) {wrong}"
    wrong = wrong_instants(shown_values(overlap, "GPUs reporting"), {"DCGM_FI_DEV_GPU_TEMP": {3.0}})
    assert not wrong, f"GPUs reporting: steps: shown (true 3) {wrong}"


@pytest.mark.parametrize("title", [pytest.param("Framebuffer used share by pod", marks=TIES), "GPU utilization by pod"])
def test_a_panel_answers_the_same_at_every_call_over_the_same_data(overlap, title):
    # Grafana sends a range query; Prometheus evaluates one of more than one step through a map (its order changes from
    # call to call): a choice among copies that tie must not depend on it
    answers = [shown_values(overlap, title) for _ in range(6)]
    differ = [k for k, answer in enumerate(answers) if answer != answers[0]]
    assert not differ, f"{title}: calls {differ} differ from call 0: {[answers[0], *(answers[k] for k in differ)]}"


# --- two exporters reading one held GPU differently: one copy's reading, per pod and per GPU alike ---

def _apart(old: bool) -> str:
    node = 'Hostname="nvidia-dcgm-exporter-q8w2z"' if old else 'hostname="n3"'
    values = (40000, 40000, 30, 100, 60) if old else (60000, 20000, 50, 200, 60)
    labels = f'gpu="0",UUID="GPU-n3-0",device="nvidia0",{COMMON},{node},container="main",namespace="ml",pod="p"'
    return "".join(f"# TYPE {metric} gauge\n{metric}{{{labels}}} {value:g}\n" for metric, value in zip(METRICS, values))


@contextmanager
def _apart_scene(tmp_path_factory):
    old = CountedAnswers(lambda n: _apart(True))
    with ReplayExporter(old) as a, ReplayExporter(lambda: _apart(False)) as b:
        with scraped_until(tmp_path_factory, "pod-copy-review-apart", [a.address, b.address],
                       lambda: old.served >= SCRAPES) as prometheus:
            samples = {series["metric"]["Hostname" if "Hostname" in series["metric"] else "hostname"]:
                       [float(at) for at, _ in series["values"]]
                       for series in prometheus.query('DCGM_FI_DEV_GPU_TEMP[10m]')}
            stored = [at for times in samples.values() for at in times]
            yield prometheus, min(stored), max(stored), samples


scenes = module_scenes({"overlap": overlap_scene, "apart": _apart_scene})  # each waits ~20 s on real 1 s scrapes


overlap = scene("overlap")
apart = scene("apart")


@pytest.mark.parametrize("title, legend, old, new", [
    ("GPU utilization by pod", "Pod ml/p", 30.0, 50.0),
    ("Framebuffer used share by pod", "Pod ml/p", 0.5, 0.75),
    ("Power draw of each pod's GPUs", "Pod ml/p", 100.0, 200.0),
    ("Power draw", None, 100.0, 200.0),
])
def test_of_two_fresh_copies_the_fresher_reading_is_shown_per_pod_and_per_gpu(apart, title, legend, old, new):
    # the rule (promql.older_samples, chosen_copy): of the copies read within the last scrape interval, the one sampled
    # last (a share's used and total of that copy); of copies sampled at one instant, the one reading the most. Each
    # exporter's scrape is a reading of the one GPU at its time, so the newer scrape is its latest reading. The higher
    # was shown before c75fe0bb (the new exporter's 200 W where the old one's 100 W was sampled 0.5 s after it). Each
    # copy is scraped once a second at its own phase, so steps at one phase find the same copy the fresher: steps at 8
    # phases of a second (1/8 s apart: exact in milliseconds and in binary) find each copy the fresher at some (unless
    # the copies are scraped within 1/8 s of each other)
    samples = apart[3]
    wrong = {}
    judged = told = 0
    for phase in range(8):
        for at, values in shown_values(apart, title, offset=4 + phase / 8).items():
            latest = {name: max((t for t in times if t <= at), default=-math.inf) for name, times in samples.items()}
            if at - min(latest.values()) > 1:
                continue  # a copy not fresh at this step: not judged here
            judged += 1
            fresher_old = latest["nvidia-dcgm-exporter-q8w2z"] > latest["n3"]
            told += fresher_old
            expected = old if fresher_old else new
            shown = list(values.values()) if legend is None else [values.get(legend)]
            if shown != [expected]:
                wrong[at] = (shown, expected, "old fresher" if fresher_old else "new fresher or alike")
    gaps = [(o - n) % 1 for o, n in zip(samples["nvidia-dcgm-exporter-q8w2z"][2:], samples["n3"][2:])]
    apart_enough = 1 / 8 < sorted(gaps)[len(gaps) // 2] < 7 / 8
    assert judged >= 4 * 8 and (told >= 1 and judged - told >= 1 or not apart_enough), (judged, told, gaps)
    assert not wrong, f"{title}: steps: (shown, the fresher copy's) {wrong}"


def _any_fresh(samples: dict[str, list[float]], at: float) -> bool:
    """Whether a copy has a sample stored within the second (one scrape interval) before `at`. Where none has (both
    exporters' scrapes failed at once: each copy marked stale), a per-GPU panel reads nothing, as Prometheus does for a
    GPU of one exporter, while a per-pod panel holds the pod's last reading through its lookback (README): not a step
    at which the two tell one story."""
    return any(at - max((t for t in times if t <= at), default=-math.inf) <= 1 for times in samples.values())


def test_a_pods_power_is_its_gpus_power_at_every_step(apart):
    per_pod = shown_values(apart, "Power draw of each pod's GPUs")
    per_gpu = shown_values(apart, "Power draw")
    judged = [at for at in per_pod if _any_fresh(apart[3], at)]
    wrong = {at: (per_pod[at], per_gpu[at]) for at in judged
             if sorted(per_pod[at].values()) != sorted(per_gpu[at].values())}
    assert len(judged) >= 4
    assert not wrong, f"steps: (per pod, per GPU) {wrong}"


def test_the_fleets_framebuffer_in_use_is_one_copys_share_the_same_as_by_pod_at_every_call(apart):
    # two exporters' copies of one GPU always read the same used + free (the GPU's memory): a choice by that total
    # tied, and "Framebuffer in use" read 0.5, 0.75, 0.75, 0.5 over the same data where the pod's share read 0.75
    answers = [shown_values(apart, "Framebuffer in use") for _ in range(4)]
    by_pod = shown_values(apart, "Framebuffer used share by pod")
    wrong = {at: (values, by_pod.get(at)) for answer in answers for at, values in answer.items()
             if _any_fresh(apart[3], at) and list(values.values()) != [(by_pod.get(at) or {}).get("Pod ml/p")]}
    assert not wrong, f"steps: (Framebuffer in use, share by pod) {wrong}"


def test_the_fleets_framebuffer_in_use_over_copies_reading_alike_is_every_gpus_at_every_call(overlap):
    # both exporters read each GPU's used and free alike, their node spellings differ (Hostname=<old exporter's pod>,
    # hostname="n3"): the copy is chosen by its used, ties by the node spelling's place, once for used and total, so
    # the mean of the three GPUs' shares (0.125, 0.0125, 0.5) is there at every step of every call
    answers = [shown_values(overlap, "Framebuffer in use") for _ in range(6)]
    wrong = {(call, at): values for call, answer in enumerate(answers) for at, values in answer.items()
             if values != {"DCGM_FI_DEV_FB_USED": 0.2125}}
    assert not wrong, f"(call, step): shown (true 0.2125) {wrong}"

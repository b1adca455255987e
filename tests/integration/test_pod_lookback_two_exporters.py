"""Per-pod and per-GPU panels while two exporters serve one node's GPUs (mid-upgrade: the old DaemonSet's exporter
writes `Hostname`, the new one `hostname`; both scraped every half second, both fresh at every step), on a real
Prometheus. The two read a GPU at different moments, so their readings differ: a GPU's value is ONE exporter's
reading, whole (used and free of one copy, never used of one and free of the other), and a GPU's fresh reading that
one exporter writes as DCGM's blank while the other reads a value is the value (the per-GPU panels show it).

- n1 GPU 0 (whole, UUID GPU-n1-0) held by ml/p: old exporter 40,000 used + 40,000 free MiB (share 0.5), utilization
  30 %, 100 W; new exporter 60,000 + 20,000 (0.75), utilization blank, 200 W.
- n1 GPU 1 (MIG, UUID GPU-n1-1), instances 1 and 2 held by ml/m: old 35,000/5,000 and 1,000/9,000 MiB used/free
  (pooled share 36,000 / 50,000 = 0.72), new 30,000/10,000 and 9,000/1,000 (0.78): exporter 2 is not higher on
  every instance nor in every field.

At d468274 (which chose one copy per field with topk): the pods leave "Framebuffer used share by pod" for as
long as both exporters are read (used is the new exporter's copy, free the old one's: their node spellings differ and
the division matches nothing; before it, 0.6 and 0.698); the blank of one exporter hides the pod's utilization that
the per-GPU panel shows (before it, 30 %). Per instance merged apart, before and after: a MIG pod's framebuffer used
44,000 MiB (neither 36,000 nor 39,000), the fleet's framebuffer in use 0.815 (0.6492 with exporter.virtual_gpus).
On a88cfb0 (one copy chosen by used + free): the share holds with the default settings; with exporter.virtual_gpus the
pods still have no share; the rest as above. On 5cf19dd the fleet's framebuffer in use holds with the default
settings (0.6492 with exporter.virtual_gpus).
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import pytest

from generator.preview.legend import render as render_legend
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, lookback_panel, scraped_until
from tests.support.side_by_side import module_scenes, scene

NOT_SUPPORTED = 9223372036854775794  # int64 blank + 2
SCRAPES = 10
INTERVAL = 0.5  # seconds between scrapes: the lookback, the range's steps and a copy's freshness are in scrapes
COMMON = 'modelName="NVIDIA A100-SXM4-80GB",DCGM_FI_DRIVER_VERSION="570.133.20"'
WHOLE = {"old": {"DCGM_FI_DEV_FB_USED": 40000, "DCGM_FI_DEV_FB_FREE": 40000, "DCGM_FI_DEV_GPU_UTIL": 30,
                 "DCGM_FI_DEV_POWER_USAGE": 100, "DCGM_FI_DEV_GPU_TEMP": 60},
         "new": {"DCGM_FI_DEV_FB_USED": 60000, "DCGM_FI_DEV_FB_FREE": 20000, "DCGM_FI_DEV_GPU_UTIL": NOT_SUPPORTED,
                 "DCGM_FI_DEV_POWER_USAGE": 200, "DCGM_FI_DEV_GPU_TEMP": 60}}
MIG = {"old": {1: (35000, 5000), 2: (1000, 9000)}, "new": {1: (30000, 10000), 2: (9000, 1000)}}


def _payload(which: str) -> str:
    node = 'Hostname="n1"' if which == "old" else 'hostname="n1"'
    pod = 'container="main",namespace="ml"'
    whole = f'gpu="0",UUID="GPU-n1-0",pci_bus_id="00000000:10:00.0",device="nvidia0",{COMMON},{node},{pod},pod="p"'
    lines = []
    for metric in WHOLE[which]:
        lines.append(f"# TYPE {metric} gauge")
        lines.append(f"{metric}{{{whole}}} {WHOLE[which][metric]:g}")
        if metric in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"):
            for instance, (used, free) in MIG[which].items():
                profile = {1: "3g.40gb", 2: "1g.10gb"}[instance]
                mig = (f'gpu="1",UUID="GPU-n1-1",pci_bus_id="00000000:20:00.0",device="nvidia1",{COMMON},'
                       f'GPU_I_PROFILE="{profile}",GPU_I_ID="{instance}",{node},{pod},pod="m"')
                lines.append(f"{metric}{{{mig}}} {used if metric.endswith('USED') else free:g}")
    return "\n".join(lines) + "\n"


@contextmanager
def _both(tmp_path_factory, fails_at: int | None = None, failing: str = "old"):
    """Both exporters scraped every INTERVAL until each has SCRAPES samples stored (a loaded machine's scrape that
    timed out was answered and stored nothing); `fails_at`: the old exporter's answer of that number is not a valid
    exposition (that scrape fails: its series are marked stale). (prometheus, first and last stored sample, each
    copy's sample times)."""
    old = CountedAnswers(lambda n: "garbage{ 1\n" if n == fails_at and failing == "old" else _payload("old"))
    new = CountedAnswers(lambda n: "garbage{ 1\n" if n == fails_at and failing == "new" else _payload("new"))
    stored_counts: dict[str, int] = {}

    def count(prometheus) -> None:
        stored_counts.update({s["metric"]["instance"]: int(s["value"][1])
                              for s in prometheus.query("count_over_time(DCGM_FI_DEV_GPU_TEMP[10m])")})

    with ReplayExporter(old) as a, ReplayExporter(new) as b:
        with scraped_until(tmp_path_factory, "pod-lookback-two-exporters", [a.address, b.address],
                       lambda: len(stored_counts) == 2 and min(stored_counts.values()) >= SCRAPES,
                       watch=count, interval=INTERVAL) as prometheus:
            samples = {series["metric"]["instance"]: [float(at) for at, _ in series["values"]]
                       for series in prometheus.query('DCGM_FI_DEV_GPU_TEMP[10m]')}
            stored = [at for times in samples.values() for at in times]
            yield prometheus, min(stored), max(stored), samples


FAILS_AT = 6
FAILING = ("old", "new")
scenes = module_scenes({"both": _both, **{("failed", which): (lambda factory, which=which: _both(factory, FAILS_AT, which))
                                          for which in FAILING}})
both = scene("both")
failed = scene("failed", FAILING)


VIRTUAL = "exporter:\n  virtual_gpus: true\n"
SETTINGS = pytest.mark.parametrize("settings", ["", VIRTUAL], ids=["defaults", "virtual_gpus"])


def _shown(both, settings: str, title: str) -> dict[float, dict[str, float]]:
    """{seconds from the first step: {legend: value}} of the panel at each step the two exporters were both read:
    each copy's latest sample within the interval before the step (a loaded machine's scrape that timed out marks its
    copy stale, and scrapes one copy first seconds after the other: those steps are another story, see
    test_a_pods_utilization_through_the_other_exporters_failed_scrape...)."""
    prometheus, start, end, samples = both
    target, expr = lookback_panel(settings, title, INTERVAL)
    first, count = _steps(start, end)
    shown = {}
    for at, result in prometheus.query_at(expr, first, count, INTERVAL, instant=bool(target.get("instant"))).items():
        if all(any(at - INTERVAL <= when <= at for when in times) for times in samples.values()):
            shown[round(at - first, 1)] = {render_legend(target["legendFormat"], s["metric"]):
                                           round(float(s["value"][1]), 4) for s in result}
    assert len(shown) >= 3, (shown, samples)
    return shown


def _steps(start: float, end: float) -> tuple[float, int]:
    """A range's first step (past the lookback, 4 scrapes, after the first sample; half an interval off the
    interval's multiples) and its count of steps, one per interval, to the last sample."""
    first = math.floor(start / INTERVAL) * INTERVAL + 4.5 * INTERVAL
    return first, int((end - first) // INTERVAL) + 1


def _wrong(shown: dict[float, dict[str, float]], allowed: dict[str, set[float]]) -> dict:
    """The steps where a legend is missing, extra, or its value is none of the allowed (one exporter's, whole)."""
    return {at: values for at, values in shown.items()
            if set(values) != set(allowed) or any(values[k] not in allowed[k] for k in values)}


@SETTINGS
def test_a_pods_framebuffer_share_with_two_exporters_on_its_gpu_is_one_exporters(both, settings):
    # each exporter alone: ml/p 0.5 or 0.75, ml/m 0.72 or 0.78 (checked: the old exporter alone reads 0.5 and 0.72)
    shown = _shown(both, settings, "Framebuffer used share by pod")
    wrong = _wrong(shown, {"Pod ml/p": {0.5, 0.75}, "Pod ml/m": {0.72, 0.78}})
    assert not wrong, f"seconds: shown (true: ml/p 0.5 or 0.75, ml/m 0.72 or 0.78) {wrong}"


@SETTINGS
def test_a_mig_pods_framebuffer_used_with_two_exporters_is_one_exporters(both, settings):
    shown = _shown(both, settings, "Framebuffer used by pod")
    wrong = _wrong(shown, {"Pod ml/p": {40000.0, 60000.0}, "Pod ml/m": {36000.0, 39000.0}})
    assert not wrong, f"seconds: shown (true: ml/p 40,000 or 60,000, ml/m 36,000 or 39,000 MiB) {wrong}"


@SETTINGS
def test_a_mig_gpus_framebuffer_used_with_two_exporters_is_one_exporters(both, settings):
    shown = _shown(both, settings, "Framebuffer memory used")
    wrong = _wrong(shown, {"n1 GPU 0": {40000.0, 60000.0}, "n1 GPU 1": {36000.0, 39000.0}})
    assert not wrong, f"seconds: shown (true: GPU 0 40,000 or 60,000, GPU 1 36,000 or 39,000 MiB) {wrong}"


@SETTINGS
def test_the_fleets_framebuffer_in_use_with_two_exporters_is_of_one_exporters_readings(both, settings):
    # the mean of the GPUs' shares (the old exporter alone reads (0.5 + 0.72) / 2 = 0.61), each GPU's share one
    # exporter's: (0.5 or 0.75 + 0.72 or 0.78) / 2
    allowed = {round((a + b) / 2, 4) for a in (0.5, 0.75) for b in (0.72, 0.78)}
    shown = _shown(both, settings, "Framebuffer in use")
    wrong = _wrong(shown, {"DCGM_FI_DEV_FB_USED": allowed})
    assert not wrong, f"seconds: shown (true: one of {sorted(allowed)}) {wrong}"


def test_a_pods_utilization_where_one_exporter_reads_blank_is_the_others_as_per_gpu(both):
    # the per-GPU panel reads 30 % (the other exporter's blank is no reading); per pod the GPU has no value
    per_gpu = _shown(both, "", "GPU utilization")
    assert not _wrong(per_gpu, {"n1 GPU 0": {30.0}}), per_gpu
    shown = _shown(both, "", "GPU utilization by pod")
    wrong = _wrong(shown, {"Pod ml/p": {30.0}})
    assert not wrong, f"seconds: shown (true: ml/p 30 %, as the per-GPU panel reads) {wrong}"


def _every_step(scene, title: str) -> dict[float, dict[str, float]]:
    """{seconds from the first step: {legend: value}} of the panel (default settings) at every step of the scene."""
    prometheus, start, end, _ = scene
    target, expr = lookback_panel("", title, INTERVAL)
    first, count = _steps(start, end)
    return {round(at - first, 1): {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1])
                                   for s in result}
            for at, result in prometheus.query_at(expr, first, count, INTERVAL,
                                                  instant=bool(target.get("instant"))).items()}


def test_a_pods_utilization_through_either_exporters_failed_scrape_is_the_gpus_latest(failed):
    """The same two exporters; one scrape of one of them (its 6th answer) fails, as a loaded machine's scrape that
    times out does. At every step the pod is named within the lookback, and the GPU's latest reading is the old
    exporter's 30 % (the new one's blank is no reading): the pod reads it through the failed scrape ("one failed
    scrape hides nothing", promql._Device)."""
    samples = failed[3]
    gaps = sorted(b - a for times in samples.values() for a, b in zip(times, times[1:]))
    assert gaps[-1] > 1.5 * INTERVAL, gaps  # the failed scrape stored nothing
    shown = _every_step(failed, "GPU utilization by pod")
    wrong = {at: values for at, values in shown.items() if values != {"Pod ml/p": 30.0}}
    assert len(shown) >= 5 and not wrong, f"seconds: shown (true: ml/p 30 % at every step) {wrong}"


# a per-GPU panel reads a GPU without a fresh copy from its copy with the newest reading within the look-back
# (promql.looked_back): after the old exporter's failed scrape the only fresh copy reads the blank, and the GPU had no
# utilization for that step where the per-pod panel holds its latest reading (30 %)
@pytest.mark.parametrize("failed", ["old"], indirect=True)
def test_a_gpus_utilization_through_the_real_copys_failed_scrape_is_its_latest_as_per_pod(failed):
    shown = _every_step(failed, "GPU utilization")
    wrong = {at: values for at, values in shown.items() if values != {"n1 GPU 0": 30.0}}
    assert len(shown) >= 5 and not wrong, f"seconds: shown (true: n1 GPU 0 30 % at every step) {wrong}"


def test_each_pod_is_on_one_gpu_and_draws_one_exporters_power(both):  # holds on d468274
    assert not _wrong(_shown(both, "", "Pods on GPUs"), {"Pod ml/p": {1.0}})
    assert not _wrong(_shown(both, "", "Power draw of each pod's GPUs"), {"Pod ml/p": {100.0, 200.0}})


def _after_both_stopped(both, settings: str, title: str) -> dict[float, dict[str, float]]:
    """{seconds after the last sample: {legend: value}} of the panel at each half interval of the lookback after both
    exporters' last scrapes (no copy fresh: the late tier; both series end at one reload, read last at one step)."""
    prometheus, _, end, _ = both
    target, expr = lookback_panel(settings, title, INTERVAL)
    return {round(at - end, 1): {render_legend(target["legendFormat"], s["metric"]): round(float(s["value"][1]), 4)
                                 for s in result}
            for at, result in prometheus.query_at(expr, end + INTERVAL / 2, 6, INTERVAL / 2,
                                                  instant=bool(target.get("instant"))).items()}


@SETTINGS
def test_after_both_exporters_stop_a_mig_pods_framebuffer_used_is_one_exporters(both, settings):
    # no copy fresh: each MIG instance was read from its newest copy, of copies last read at one step the higher, so
    # the pod read the old exporter's 35,000 beside the new one's 9,000: 44,000 MiB where they read 36,000 and 39,000
    shown = _after_both_stopped(both, settings, "Framebuffer used by pod")
    wrong = {at: values for at, values in shown.items() if values.get("Pod ml/m") not in (36000.0, 39000.0)}
    assert not wrong, f"seconds after the last sample: shown (true: ml/m 36,000 or 39,000 MiB) {wrong}"


def test_after_both_exporters_stop_a_pods_utilization_is_not_lost_to_the_others_blank(both):
    # no copy fresh: copies last read at one step were told apart by a tenth of the atan of their reading over 1e5,
    # which ranks DCGM's blank (9.2e18) highest: the new exporter's blank was chosen and the pod showed nothing
    shown = _after_both_stopped(both, "", "GPU utilization by pod")
    wrong = {at: values for at, values in shown.items() if values.get("Pod ml/p") != 30.0}
    assert not wrong, f"seconds after the last sample: shown (true: ml/p 30 %) {wrong}"

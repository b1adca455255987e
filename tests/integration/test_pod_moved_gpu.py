"""A pod recreated on the same node on another GPU (a StatefulSet's pod keeps its name; the device plugin may hand it
another GPU) is read on its new GPU alone. It read the GPU it left beside its new one for the look-back:
one scrape after the move 'Power draw of each pod's GPUs' 310 W where its GPU draws 250, 'GPU utilization by pod'
35 % for 70, 'SM clock by pod' 905 for 1600 MHz, 'Pods on GPUs' 2 GPUs for 1: _Device._naming_targets keeps, per pod,
the scrape targets that named it lately (test_pod_moved_node), and both GPUs are on one target. Now a GPU whose latest
scrape named no pod holds none (_Device._idle); a GPU pods share, named under one of them per scrape, always names one.
Same data as test_pod_moved_node, ml/mover's new GPU on node a (GPU 0) instead of node c."""

from __future__ import annotations

import functools
import math

import pytest

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from generator.promql import LABEL_LOOKBACK_SCRAPES
from tests.integration.test_pod_moved_node import BUSY, FIELDS, IDLE, MODEL, MOVE, OFFSET, PANELS, SCRAPE, SCRAPES, \
    handed_over, openmetrics, rule_reading, shown, truth
from tests.support.counter_truth import stepped_rate
from tests.support.live_scrapes import scraped
from tests.support.projects import bundled_panel, bundled_panels
from tests.support.prometheus_server import SCENE_RANGE, backfilled_fixture, counted_inline, range_macros, scraped_every


def gpus(k: int) -> list[tuple[str, str, tuple[str, str] | None, dict]]:
    moved, arrived = k >= MOVE, k > MOVE
    return [("a", f'gpu="1",UUID="GPU-a-1",device="nvidia1",{MODEL},Hostname="a"',
             None if moved else ("ml", "mover"), IDLE if moved else BUSY["mover-a"]),
            ("a", f'gpu="0",UUID="GPU-a-0",device="nvidia0",{MODEL},Hostname="a"',
             ("ml", "mover") if arrived else None, BUSY["mover-c"] if arrived else IDLE),
            ("c", f'gpu="1",UUID="GPU-c-1",device="nvidia1",{MODEL},hostname="c"', ("ml", "stay"), BUSY["stay"])]


backfilled = backfilled_fixture("pod-moved-gpu", functools.partial(openmetrics, gpus=gpus), SCRAPES * SCRAPE, SCRAPE)


@pytest.mark.parametrize("k", [MOVE - 1, MOVE + 1, MOVE + 2, MOVE + 4])
@pytest.mark.parametrize("title", sorted(PANELS))
def test_a_pod_that_moved_to_another_gpu_of_its_node_is_read_on_its_new_gpu_alone(backfilled, title, k):
    prometheus, start = backfilled
    at = start + k * SCRAPE + 25
    assert shown(prometheus, title, at, {}) == truth(title, k)


LIVE_SCRAPES, LIVE_MOVE, INTERVAL = 16, 8, 0.5  # ml/mover holds GPU 0 instead of GPU 1 from scrape LIVE_MOVE on
LIVE_PANELS = {"Power draw of each pod's GPUs": "power", "Pods on GPUs": None}
# the counters of the per-GPU rate panels, each GPU's growth per answer (energy: its power over the interval, in mJ)
LIVE_COUNTERS = {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": lambda gpu, readings: readings["power"] * INTERVAL * 1000,
                 "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": lambda gpu, readings: 1 + gpu,
                 "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": lambda gpu, readings: 1 + gpu % 2,
                 "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": lambda gpu, readings: 2 - gpu % 2}


def _live_gpus(scrape: int) -> list[tuple[int, str | None, dict]]:
    """node n1's GPUs at answer `scrape`: (index, the pod the answer names on it, its readings)."""
    moved = scrape >= LIVE_MOVE
    return [(0, "mover" if moved else None, BUSY["mover-c"] if moved else IDLE),
            (1, None if moved else "mover", IDLE if moved else BUSY["mover-a"]),
            (2, ("stay", "turn")[scrape % 2], BUSY["stay"])]


def _live_payload(scrape: int) -> str:
    """node n1's exporter (without KUBERNETES_VIRTUAL_GPUS) at answer `scrape`: ml/mover recreated on GPU 0 at
    LIVE_MOVE (GPU 1 idle from then on: written without a pod, as dcgm-exporter writes a GPU no pod holds), GPU 2
    time-sliced by ml/stay and ml/turn, named under one of them per answer; each GPU's counters (LIVE_COUNTERS, the
    device's: grown by each answer's readings whatever pod it names) under the pod that answer names."""
    lines = []
    for metric, key in (("DCGM_FI_DEV_POWER_USAGE", "power"), ("DCGM_FI_DEV_GPU_TEMP", "temp"), *LIVE_COUNTERS.items()):
        lines.append(f"# TYPE {metric} {'gauge' if isinstance(key, str) else 'counter'}")
        for gpu, pod, readings in _live_gpus(scrape):
            named = f',container="main",namespace="ml",pod="{pod}"' if pod else ""
            value = readings[key] if isinstance(key, str) else \
                sum(key(gpu, was) for _, _, was in (_live_gpus(k)[gpu] for k in range(scrape + 1)))
            lines.append(f'{metric}{{gpu="{gpu}",UUID="GPU-n1-{gpu}",device="nvidia{gpu}",{MODEL},Hostname="n1"'
                         f'{named}}} {value:g}')
    return "\n".join(lines) + "\n"


def _live_truth(title: str, scrape: int) -> dict[str, float]:
    """What the panel shows after answer `scrape`: ml/mover on the GPU that answer named it on, the time-sliced GPU
    whole under each of its pods (both named within the look-back)."""
    mover = BUSY["mover-c" if scrape >= LIVE_MOVE else "mover-a"]
    key = LIVE_PANELS[title]
    value = (lambda readings: float(readings[key])) if key else (lambda readings: 1.0)
    return {"Pod ml/mover": value(mover), "Pod ml/stay": value(BUSY["stay"]), "Pod ml/turn": value(BUSY["stay"])}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """The story on a real Prometheus scraping every half second, as it stores live scrapes (a series an answer leaves
    out marked stale at that scrape): (prometheus, the scrapes' times, the first step, the steps' count and length)."""
    with scraped(tmp_path_factory.mktemp("pod-moved-gpu-live"), _live_payload, LIVE_SCRAPES, INTERVAL) as prometheus:
        scrapes = sorted({float(at) for series in prometheus.query("DCGM_FI_DEV_GPU_TEMP[10m]")
                          for at, _ in series["values"]})
        step = INTERVAL / 2  # steps of whole milliseconds (Prometheus answers in them)
        start = math.floor(scrapes[0] / step) * step + LABEL_LOOKBACK_SCRAPES * INTERVAL + step / 2
        count = int((scrapes[-1] - start) // step) + 1
        assert len(scrapes) >= LIVE_SCRAPES and count >= 10, (len(scrapes), count)
        yield prometheus, scrapes, start, count, step


def _live_shown(live, title: str, selected: dict[str, str]) -> dict[float, dict[str, float]]:
    """{step: {legend: value}} of the bundled panel `title` over the live story, the variables `selected` (a regex
    each, as Grafana writes one value or several) and the others at All; a counter's rate over four scrapes."""
    prometheus, _, start, count, step = live
    target = bundled_panel(title)["targets"][0]
    expr = scraped_every(counted_inline(target["expr"], load_project()), 30, INTERVAL)
    expr = interpolate(expr, {**SCENE_RANGE, "__rate_interval": f"{LABEL_LOOKBACK_SCRAPES * INTERVAL * 1000:g}ms",
                              **variables({}, ("namespace", "pod", "node", "gpu")), **selected})
    return {at: {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
            for at, result in prometheus.query_at(expr, start, count, step,
                                                  instant=bool(target.get("instant"))).items()}


def _answer(live, at: float) -> int:
    """The latest answer stored at or before `at`."""
    return sum(t <= at for t in live[1]) - 1


def test_a_pod_moved_to_another_gpu_of_its_node_on_live_scrapes(live):
    """The same move on a real Prometheus scraping every half second, as it stores live scrapes: the series of a GPU
    that changed hands marked stale at the answer that no longer writes them. ml/mover reads its new GPU alone at
    every step from the first scrape naming it there (it read the idle GPU it left beside it for the look-back: 310 W
    for 250, 2 GPUs for 1), while a GPU two pods share, named under one of them per scrape, stays whole under both."""
    wrong = {(title, at): (shown, _live_truth(title, _answer(live, at)))
             for title in LIVE_PANELS for at, shown in _live_shown(live, title, {}).items()
             if shown != _live_truth(title, _answer(live, at))}
    assert not wrong, wrong


# the live story's answer that fails to parse (a failed scrape: every series marked stale)
FAILED_ANSWER = LIVE_MOVE + 1


@pytest.fixture(scope="module")
def live_failed(tmp_path_factory):
    """The live story with the scrape right after the move failed: (prometheus, the stored answers' times, the first
    step after the failed scrape's time, the steps' count up to the next answer, the steps' length)."""
    def payload(answer: int) -> str:
        return "garbage{ 1\n" if answer == FAILED_ANSWER else _live_payload(answer)
    with scraped(tmp_path_factory.mktemp("pod-moved-gpu-failed"), payload, LIVE_SCRAPES, INTERVAL) as prometheus:
        scrapes = sorted({float(at) for series in prometheus.query("DCGM_FI_DEV_GPU_TEMP[10m]")
                          for at, _ in series["values"]})
        moved, after = scrapes[LIVE_MOVE], scrapes[LIVE_MOVE + 1]  # the move's answer, the one after the failed
        assert after - moved > 1.5 * INTERVAL, scrapes  # no answer stored between them
        step = INTERVAL / 4  # steps of whole milliseconds (Prometheus answers in them)
        start = math.floor((moved + INTERVAL) / step) * step + step  # an interval past the move's answer
        count = int((after - start) // step)
        assert count >= 2, (start, after)
        yield prometheus, scrapes, start, count, step


def test_a_pod_moved_to_another_gpu_of_its_node_stays_off_it_through_a_failed_scrape(live_failed):
    """Live scrapes: the scrape after the one that found the GPU ml/mover left idle failed (Prometheus marks every
    series of the target stale, the GPU's without a pod too). From one interval after the move's answer to the next
    answer, ml/mover is on its new GPU alone (a failed scrape hides no pod and brings none back); the GPU it left came
    back under it (no series without a pod read now or within the last interval)."""
    wrong = {(title, at): shown for title in LIVE_PANELS for at, shown in _live_shown(live_failed, title, {}).items()
             if shown != _live_truth(title, LIVE_MOVE)}
    assert not wrong, wrong


# the per-GPU panels of a counter's rate (its recording's) the default build draws (the test checks the list)
RATE_PANELS = ("DEV_CORRECTABLE_REMAPPED_ROWS", "DEV_PCIE_REPLAY_COUNTER", "DEV_TOTAL_ENERGY_CONSUMPTION",
               "DEV_UNCORRECTABLE_REMAPPED_ROWS", "PCIe replays")
PICKED = {"one pod": {"namespace": "ml", "pod": "mover"}, "several pods": {"pod": "(mover|stay)"},
          "the pods' namespace": {"namespace": "ml"}, "all": {}}


def _held(picked: str, scrape: int) -> set[str]:
    """The lines of the GPUs the pods `picked` hold after answer `scrape`: those it names them on, and a GPU pods share
    in turn (named under one of them per answer) under each."""
    pods = {"one pod": {"mover"}, "several pods": {"mover", "stay"}, "the pods' namespace": {"mover", "stay", "turn"}}
    if picked == "all":
        return {f"n1 GPU {gpu}" for gpu, _, _ in _live_gpus(scrape)}
    return {f"n1 GPU {gpu}" for gpu, pod, _ in _live_gpus(scrape) if pod in pods[picked] or gpu == 2
            and pods[picked] & {"stay", "turn"}}


@pytest.mark.parametrize("picked", sorted(PICKED))
@pytest.mark.parametrize("title", (*RATE_PANELS, "Power draw", "GPU temperature"))
def test_a_per_gpu_panel_with_a_pod_picked_draws_the_gpus_the_pod_holds(live, title, picked):
    """A per-GPU panel with the pod (or namespace) variable set draws the GPUs the picked pods hold, each as the panel
    draws it with every pod (a counter's rate the device's, whatever pod its scrapes name): ml/mover's GPU 1 until the
    move, GPU 0 from its first scrape there. A counter's rate drew GPU 1, found idle at the move, for the rate window
    after it (a scrape within the window named the pod on it), beside GPU 0."""
    assert RATE_PANELS == tuple(sorted(name for name, panel in bundled_panels().items() if "Pod" not in panel.get(
        "targets", [{}])[0].get("legendFormat", "Pod") and ":step_increase" in panel["targets"][0]["expr"]))
    every = _live_shown(live, title, {})
    shown = _live_shown(live, title, PICKED[picked])
    steps = {at: every[at] for at in shown if set(every[at]) == {"n1 GPU 0", "n1 GPU 1", "n1 GPU 2"}}
    assert len(steps) >= 10 and all(value > 0 for lines in steps.values() for value in lines.values()), every
    wrong = {at: (shown[at], truth) for at, lines in steps.items()
             if shown[at] != (truth := {name: lines[name] for name in _held(picked, _answer(live, at))})}
    assert not wrong, f"{title}, {picked}: steps (shown, the held GPUs' rates) {wrong}"


@pytest.mark.parametrize("k", [MOVE - 1, MOVE + 2, MOVE + 3, MOVE + 5])
def test_a_per_pod_rule_reads_a_pod_moved_to_another_gpu_of_its_node_on_its_new_gpu_alone(backfilled, k):
    """A per-pod alert rule reads the pods a scrape within the look-back named at each step of its period, as the
    panels do: once the period holds only steps after the pod's first scrape on its new GPU, the pod's sum is that
    GPU's 250 W (it read the idle GPU it left beside it: 310 W, past a level of 280 where the pod draws 250)."""
    prometheus, start = backfilled
    mover = BUSY["mover-c" if k > MOVE else "mover-a"]["power"]
    assert rule_reading(prometheus, start + k * SCRAPE + 25) == {"ml/mover": mover, "ml/stay": BUSY["stay"]["power"]}


ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
RATE_WINDOW = 4 * SCRAPE  # Grafana's $__rate_interval at a 30 s step: four scrape intervals


def energy(k: int, story=gpus) -> dict[str, int]:
    """Each GPU's energy counter (mJ, by UUID) after scrape k of `story`: its power at each scrape for an interval."""
    total: dict[str, int] = {}
    for j in range(k + 1):
        for _, device, _, readings in story(j):
            uuid = device.split('UUID="')[1].split('"')[0]
            total[uuid] = total.get(uuid, 0) + readings["power"] * SCRAPE * 1000
    return total


def energy_openmetrics(start: int, story=gpus) -> str:
    """The story's energy counters as the exporter writes them: each GPU's series under the pod its scrape names."""
    lines = []  # no TYPE line: the samples keep the name the exporter serves (an OpenMetrics counter ends in _total)
    rows: dict[str, list[str]] = {}
    for k in range(SCRAPES):
        for node, device, pod, _ in story(k):
            labels = device + (f',container="main",namespace="{pod[0]}",pod="{pod[1]}"' if pod else "")
            labels += f',instance="10.0.0.{ord(node)}:9400",job="gpu-metrics"'
            uuid = device.split('UUID="')[1].split('"')[0]
            rows.setdefault(labels, []).append(f"{ENERGY}{{{labels}}} {energy(k, story)[uuid]} "
                                               f"{start + k * SCRAPE + OFFSET[node]}")
    return "\n".join(lines + [line for samples in rows.values() for line in samples] + ["# EOF"]) + "\n"


energy_backfilled = backfilled_fixture("pod-moved-gpu-energy", energy_openmetrics, SCRAPES * SCRAPE, SCRAPE)


handed_energy = backfilled_fixture("pod-moved-node-handed-over-energy",
                                   functools.partial(energy_openmetrics, story=handed_over), SCRAPES * SCRAPE, SCRAPE)


def energy_shown(prometheus, at: float) -> dict[str, float]:
    """The energy rate panel's legends and values at `at`, its window four scrape intervals."""
    target = bundled_panel("Energy use rate of each pod's GPUs")["targets"][0]
    expr = interpolate(counted_inline(target["expr"], load_project()), {
        **range_macros(f"{SCRAPES * SCRAPE}s"), "__interval": f"{SCRAPE}s", "__rate_interval": f"{RATE_WINDOW}s",
        **variables({}, ("namespace", "pod", "node", "gpu"))})
    return {render_legend(target["legendFormat"], s["metric"]): round(float(s["value"][1]), 6)
            for s in prometheus.query(expr, at=at)}


def recorded_rate(start: int, at: float, uuid: str, story=gpus) -> float:
    """The GPU's rate over the window as its recording reads it: at the steps of its group's interval (the scrape
    interval's multiples), the window's steps each reading the samples since the step before (mJ/s: the panel is mW)."""
    samples = [(start + j * SCRAPE + OFFSET["a" if "-a-" in uuid else "c"], energy(j, story)[uuid])
               for j in range(SCRAPES)]
    last = at - at % SCRAPE
    return round(stepped_rate(samples, last - RATE_WINDOW, last), 6)


@pytest.mark.parametrize("k", [MOVE - 1, MOVE + 1, MOVE + 2, MOVE + 5])
def test_a_pod_moved_to_another_gpu_of_its_node_reads_its_new_gpus_energy_rate_alone(energy_backfilled, k):
    """The energy rate panel beside the gauges reads each GPU a scrape within its window named the pod on, with the GPU's
    rate over the window (whatever pod its scrapes named), less the GPUs a scrape found idle since, as the gauges: after
    the move ml/mover reads GPU 0's rate alone (it read the idle GPU it left too, 60 W more)."""
    prometheus, start = energy_backfilled
    at = start + k * SCRAPE + 25
    mover = recorded_rate(start, at, "GPU-a-0" if k > MOVE else "GPU-a-1")
    assert energy_shown(prometheus, at) == {"Pod ml/mover": mover, "Pod ml/stay": recorded_rate(start, at, "GPU-c-1")}


@pytest.mark.parametrize("k", [MOVE - 1, MOVE + 2, MOVE + 5])
def test_the_energy_rate_of_a_pod_that_moved_node_leaving_its_gpu_to_another_pod(handed_energy, k):
    """test_pod_moved_node's handed-over story (the GPU ml/mover left on node a taken by ml/next at the same scrape, so
    no scrape finds it idle): after the move ml/mover's energy rate is its new GPU's (node c's GPU 0). The panel read
    the GPU it left, ml/next's, beside it for the window; now it leaves out the targets of the node the pod left
    (promql.naming_targets), as the gauge panels do."""
    prometheus, start = handed_energy
    at = start + k * SCRAPE + 25
    rate = functools.partial(recorded_rate, start, at, story=handed_over)
    mover = rate("GPU-c-0") if k > MOVE else rate("GPU-a-1")
    assert energy_shown(prometheus, at) == {"Pod ml/mover": mover, "Pod ml/stay": rate("GPU-c-1"),
                                           **({"Pod ml/next": rate("GPU-a-1")} if k >= MOVE else {})}




VIRTUAL_GPUS = "exporter:\n  virtual_gpus: true\n"
UTIL = "DCGM_FI_DEV_GPU_UTIL"


def per_process_openmetrics(start: int) -> str:
    """The story (`gpus`) as dcgm-exporter 4.5.3 and later write it with KUBERNETES_VIRTUAL_GPUS=true: GPU utilization
    as the device's own series (no pod labels) at every scrape, plus the holding pod's copy (its own share: the whole
    GPU's, one pod on it); the other fields once, under the pod that holds the GPU."""
    rows: dict[str, list[str]] = {}
    for k in range(SCRAPES):
        for node, device, pod, readings in gpus(k):
            target = f',instance="10.0.0.{ord(node)}:9400",job="gpu-metrics"'
            named = f',container="main",namespace="{pod[0]}",pod="{pod[1]}"' if pod else ""
            at = start + k * SCRAPE + OFFSET[node]
            for metric, key in FIELDS.items():
                for labels in ((device + target, device + named + target) if metric == UTIL and pod else
                               (device + named + target,)):
                    rows.setdefault(f"{metric}{{{labels}}}", []).append(f"{metric}{{{labels}}} {readings[key]} {at}")
    lines = [f"# TYPE {metric} gauge" for metric in FIELDS]  # one family per name: its samples follow in any order
    return "\n".join(lines + [line for samples in rows.values() for line in samples] + ["# EOF"]) + "\n"


per_process = backfilled_fixture("pod-moved-gpu-per-process", per_process_openmetrics, SCRAPES * SCRAPE, SCRAPE)


@pytest.mark.parametrize("k", [MOVE - 1, MOVE + 1, MOVE + 2, MOVE + 4])
@pytest.mark.parametrize("story", ["backfilled", "per_process"])
def test_a_pods_own_share_leaves_the_gpu_it_left(story, k, request):
    """With `exporter.virtual_gpus` GPU utilization is read per pod from the pod's own copies: ml/mover, recreated on
    GPU 0, reads that GPU alone from its first scrape there, as every per-pod panel beside it reads it (GPU 1, found
    idle at the move, holds no pod), on a node whose exporter writes each pod's share (4.5.3+) and on one whose exporter
    does not (the setting off there, or an older exporter). It read the share it last had on the GPU it left beside its
    new one for the look-back, 60 % for 70 (on live-like scrapes a pod that ended showed its last 70 % for two
    minutes on a GPU idle since)."""
    prometheus, start = request.getfixturevalue(story)
    mover = BUSY["mover-c" if k > MOVE else "mover-a"]["util"]
    assert own_shares(prometheus, start + k * SCRAPE + 25) == {"Pod ml/mover": mover, "Pod ml/stay": BUSY["stay"]["util"]}


def own_shares(prometheus, at: float) -> dict[str, float]:
    """'GPU utilization by pod' with `exporter.virtual_gpus` at `at`, every variable at All."""
    target = bundled_panel("GPU utilization by pod", VIRTUAL_GPUS)["targets"][0]
    expr = interpolate(target["expr"], {**range_macros(f"{SCRAPES * SCRAPE}s"), "__interval": f"{SCRAPE}s",
                                        **variables({}, ("namespace", "pod", "node", "gpu"))})
    return {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1])
            for s in prometheus.query(expr, at=at)}


GPU_PANELS = {"Power draw": lambda gpu, k: {f"a GPU {gpu}": float(BUSY["mover-c" if k > MOVE else "mover-a"]["power"])},
              "GPUs reporting": lambda gpu, k: {"DCGM_FI_DEV_GPU_TEMP": 1.0},
              "Total power draw": lambda gpu, k: {
                  "DCGM_FI_DEV_POWER_USAGE": float(BUSY["mover-c" if k > MOVE else "mover-a"]["power"])}}


@pytest.mark.parametrize("k", [MOVE - 1, MOVE + 1, MOVE + 2, MOVE + 4])
@pytest.mark.parametrize("title", sorted(GPU_PANELS))
def test_a_gpu_the_picked_pod_left_leaves_the_per_gpu_panels(backfilled, title, k):
    """With the pod variable set to ml/mover, the per-GPU and fleet panels show the GPUs the pod holds: GPU 1 of node a
    until the move, GPU 0 after, each at its own reading. The GPU it left, found idle at the move (its series without
    a pod newer than the pod's), is the pod's no more: it showed for the look-back at the pod's last reading under it,
    150 W where the idle GPU drew 60 (beside the new GPU's 250 W: a total of 400, 2 GPUs reporting), as the per-pod
    panels no longer do (test_a_pod_that_moved_to_another_gpu_of_its_node_is_read_on_its_new_gpu_alone)."""
    prometheus, start = backfilled
    assert shown(prometheus, title, start + k * SCRAPE + 25, {"namespace": "ml", "pod": "mover"}) \
        == GPU_PANELS[title](0 if k > MOVE else 1, k)


LATE = 10  # node a's scrape MOVE + 1 (the first naming ml/mover on GPU 0) taken this many seconds late


def late_openmetrics(start: int) -> str:
    """The backfilled story (no staleness markers, as promtool writes a backfill or a restart leaves the series before
    it), node a's scrape MOVE + 1 taken LATE seconds after its time (a slow scrape, jitter): node a's samples are the
    only ones at that scrape's time (node c's are OFFSET apart)."""
    due = start + (MOVE + 1) * SCRAPE + OFFSET["a"]
    return openmetrics(start, gpus=gpus).replace(f" {due}\n", f" {due + LATE}\n")


backfilled_late = backfilled_fixture("pod-moved-gpu-late", late_openmetrics, SCRAPES * SCRAPE, SCRAPE)


@pytest.mark.parametrize("title", sorted(PANELS))
def test_a_pod_that_left_its_gpu_stays_off_it_while_the_next_scrape_is_late(backfilled_late, title):
    """Node a's scrape MOVE (ml/mover gone from GPU 1, GPU 0 idle too) then scrape MOVE + 1 taken
    10 s late. From one scrape interval after scrape MOVE until that late scrape (4 s to 13 s into the interval) the
    per-pod panels drew ml/mover on GPU 1 again at its old reading (150 W, 'Pods on GPUs' 1) where the latest scrape
    names it nowhere: the instant test reads the pod's series (no marker, within the 5 min look-back) and the
    interval's test found no unnamed sample in the last 30 s (now idle_gpus reads the unnamed series over two
    intervals, the named over one). Truth: ml/stay alone."""
    prometheus, start = backfilled_late
    at = start + (MOVE + 1) * SCRAPE + OFFSET["a"] + LATE - 2  # after scrape MOVE's interval, before the late scrape
    key = PANELS[title]
    assert shown(prometheus, title, at, {}) == {"Pod ml/stay": 1.0 if key is None else float(BUSY["stay"][key])}
    assert shown(prometheus, title, at, {"namespace": "ml", "pod": "mover"}) == {}


def late_per_process_openmetrics(start: int) -> str:
    """The per-process story (a 4.5.3 exporter: GPU utilization's own series at every scrape beside the holding pod's
    copy), node a's scrape MOVE + 1 taken LATE seconds late, as late_openmetrics."""
    due = start + (MOVE + 1) * SCRAPE + OFFSET["a"]
    return per_process_openmetrics(start).replace(f" {due}\n", f" {due + LATE}\n")


per_process_late = backfilled_fixture("pod-moved-gpu-per-process-late", late_per_process_openmetrics, SCRAPES * SCRAPE,
                                      SCRAPE)


def test_a_pods_own_share_stays_off_the_gpu_it_left_while_the_next_scrape_is_late(per_process_late):
    """The late scrape of test_a_pod_that_left_its_gpu_stays_off_it_while_the_next_scrape_is_late where the exporter
    writes each GPU's own series at every scrape beside its pods' copies (exporter.virtual_gpus): ml/mover's share of
    the GPU it left (50 %) came back beside ml/stay's until the late scrape. Truth: ml/stay alone."""
    prometheus, start = per_process_late
    at = start + (MOVE + 1) * SCRAPE + OFFSET["a"] + LATE - 2
    assert own_shares(prometheus, at) == {"Pod ml/stay": float(BUSY["stay"]["util"])}


@pytest.mark.parametrize("k", [MOVE + 2, MOVE + 6, MOVE + 8])
def test_the_energy_rate_of_a_pod_that_moved_node_with_a_rate_window_past_the_look_back(handed_energy, k):
    """The handed-over story with a rate window of 10 scrape intervals (Grafana's $__rate_interval where the step is
    longer than the scrape: a range of a day or more), past the look-back of 4 (label_lookback). Two, six and eight
    intervals after the move ml/mover reads its new GPU alone: the node it left, whose scrapes named it 6 to 10
    intervals ago (within the window, no longer within the look-back naming_targets reads), is not read again beside
    it (ml/next's GPU, 160,000 to 190,000 mW). The story's other tests read a window of the look-back's length."""
    prometheus, start = handed_energy
    at = start + k * SCRAPE + 25
    window = 10 * SCRAPE
    target = bundled_panel("Energy use rate of each pod's GPUs")["targets"][0]
    expr = interpolate(counted_inline(target["expr"], load_project()), {
        **range_macros(f"{SCRAPES * SCRAPE}s"), "__interval": f"{SCRAPE}s", "__rate_interval": f"{window}s",
        **variables({}, ("namespace", "pod", "node", "gpu"))})
    shown = {render_legend(target["legendFormat"], s["metric"]): round(float(s["value"][1]), 6)
             for s in prometheus.query(expr, at=at)}
    last = at - at % SCRAPE
    rate = {uuid: round(stepped_rate([(start + j * SCRAPE + OFFSET["a" if "-a-" in uuid else "c"],
                                       energy(j, handed_over)[uuid]) for j in range(SCRAPES)], last - window, last), 6)
            for uuid in ("GPU-c-0", "GPU-a-1", "GPU-c-1")}
    assert shown == {"Pod ml/mover": rate["GPU-c-0"], "Pod ml/next": rate["GPU-a-1"], "Pod ml/stay": rate["GPU-c-1"]}

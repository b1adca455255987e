"""A per-GPU counter rate panel (its recording's rate: energy, PCIe replays) with a pod picked, through an exporter roll
and a node drain: it draws the GPUs the picked pod holds, each at the GPU's rate as the panel draws it with every pod,
and none the pod has left (promql.counted_rate).

The GPUs a picked pod holds were judged by windows of whole intervals ("a series without a pod within two intervals,
none naming one within one"), where the gauge panels beside them judge by the samples' times (1bc926b1):
- an exporter roll (test_rolled_copy_pod_started's story, backfilled: node n's copy A answers scrapes 0-9 at +3 s,
  copy B 8-19 at +17 s; ml/r starts on idle GPU 0 between A's scrape 9 and B's, and B's scrape 10 fails or is 10 s
  late): with ml/r picked the energy rate panel drew nothing from B's missed scrape on (A's idle reading 14 s older
  than B's naming one read GPU 0 idle once B's was an interval old), where GPU 0's rate is 72,537 mW (the GPU's
  energy over the window's steps, 60 W until ml/r started, 300 W after). Its mirror (ml/p ends there, B's scrape 9
  finding GPU 0 idle) draws nothing with ml/p picked, and still does.
- a node drain (test_pod_ended_by_drain's story, live scrapes every half second as 30 s scrapes): node j's exporter
  writes its GPU idle once at the drain, then ends (its series marked stale); with ml/t picked the rate panels drew
  nothing from the idle scrape, then j's GPU 0 again from two intervals after it for about an interval (the window of
  the rate still held the scrapes naming ml/t). Node k's exporter stays (its GPU written idle from the drain on):
  nothing after, as before.
Now the picked pods' naming samples are ordered against every sample without a pod (promql.idle_gpus), as the gauge
panels with a pod picked read them; with the variables at All nothing is left out (at All a GPU's own series without a
pod kept it drawn already)."""

from __future__ import annotations

import pytest

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from tests.integration.test_pod_moved_gpu import _live_shown  # the rate over four scrapes, as Grafana asks it
from tests.integration.test_pod_moved_node import SCRAPE, SCRAPES
from tests.integration.test_rolled_copy_pod_started import B, CHANGE, COPIES, LATE, MISSED, MODEL
from tests.support.counter_truth import stepped_rate
from tests.support.live_scrapes import scraped_fixture
from tests.support.projects import bundled_panel
from tests.support.prometheus_server import backfilled_fixture, counted_inline, range_macros

ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
ENERGY_PANEL = "DEV_TOTAL_ENERGY_CONSUMPTION"
RATE_WINDOW = 4 * SCRAPE  # Grafana's $__rate_interval at a 30 s step: four scrape intervals
SWITCH = CHANGE * SCRAPE + 10  # seconds in: GPU 0's pod starts (or ends), between A's scrape CHANGE and B's


def _watts(started: bool, gpu: int, s: float) -> float:
    """GPU `gpu`'s draw `s` seconds into the roll story: GPU 1 ml/q's 150 W; GPU 0 idle (60 W) until ml/r starts, or
    ml/p's 300 W until it ends."""
    if gpu:
        return 150.0
    return 60.0 + 240.0 * ((s >= SWITCH) == started)


def _energy(started: bool, gpu: int, s: float) -> float:
    """GPU `gpu`'s energy counter (mJ) `s` seconds into the roll story, as any copy reads it."""
    return (_watts(started, gpu, 0) * min(s, SWITCH) + _watts(started, gpu, SWITCH) * max(0.0, s - SWITCH)) * 1000


def _scraped(late: int | None, address: str):
    """(scrape, seconds into the story) of each of the copy's samples: B's scrape MISSED missing or `late`."""
    scrapes, offset = COPIES[address]
    for k in scrapes:
        if not (address == B and k == MISSED and late is None):
            yield k, k * SCRAPE + offset + (late or 0) * (address == B and k == MISSED)


def _pod(started: bool, address: str, k: int, gpu: int) -> str | None:
    """The pod copy `address`'s scrape k names on `gpu` (test_rolled_copy_pod_started.story's)."""
    if gpu:
        return "q"
    new = address == B and k >= CHANGE
    return ("r" if new else None) if started else (None if new else "p")


def roll(started: bool, late: int | None):
    """The roll story's energy counters, each GPU's series under the pod its scrape names (no TYPE line: the samples
    keep the name the exporter serves)."""
    def openmetrics(start: int) -> str:
        rows: dict[str, list[str]] = {}
        for address in COPIES:
            for gpu in (0, 1):
                for k, s in _scraped(late, address):
                    name = _pod(started, address, k, gpu)
                    named = f',container="main",namespace="ml",pod="{name}"' if name else ""
                    labels = (f'gpu="{gpu}",UUID="GPU-n-{gpu}",device="nvidia{gpu}",{MODEL},Hostname="n"{named},'
                              f'instance="{address}",job="gpu-metrics"')
                    rows.setdefault(labels, []).append(f"{ENERGY}{{{labels}}} {_energy(started, gpu, s):.0f} "
                                                       f"{start + s}")
        return "\n".join([line for lines in rows.values() for line in lines] + ["# EOF"]) + "\n"
    return openmetrics


ROLLS = {"started_failed": (True, None), "started_late": (True, LATE), "ended_failed": (False, None),
         "ended_late": (False, LATE)}
rolled = {name: backfilled_fixture(f"counter-rate-picked-{name}", roll(*story), SCRAPES * SCRAPE, SCRAPE)
          for name, story in ROLLS.items()}
rolled_started_failed, rolled_started_late, rolled_ended_failed, rolled_ended_late = rolled.values()


def _roll_shown(prometheus, at: float, selected: dict[str, str]) -> dict[str, float]:
    target = bundled_panel(ENERGY_PANEL)["targets"][0]
    expr = interpolate(counted_inline(target["expr"], load_project()), {
        **range_macros(f"{SCRAPES * SCRAPE}s"), "__interval": f"{SCRAPE}s", "__rate_interval": f"{RATE_WINDOW}s",
        **variables(selected, ("namespace", "pod", "node", "gpu"))})
    return {render_legend(target["legendFormat"], s["metric"]): round(float(s["value"][1]), 6)
            for s in prometheus.query(expr, at=at)}


def _roll_rate(story: str, start: int, at: float, gpu: int) -> float:
    """GPU `gpu`'s rate (mW) as its recording reads it over the window: the device's counter, read by both copies, at
    the steps of the recording's group (the scrape interval's multiples) in the window."""
    started, late = ROLLS[story]
    samples = sorted((start + s, _energy(started, gpu, s)) for address in COPIES for _, s in _scraped(late, address))
    last = at - at % SCRAPE
    return round(stepped_rate(samples, last - RATE_WINDOW, last), 6)


@pytest.mark.parametrize("after", [5, 9])
@pytest.mark.parametrize("story", sorted(ROLLS))
def test_a_picked_pods_gpu_keeps_its_energy_rate_through_an_exporter_roll(request, story, after):
    """`after` seconds after B's scrape MISSED was due: with ml/r picked (started) GPU 0 at its rate (72,537 mW:
    drawn nothing before), with ml/p picked (ended) nothing; with every pod both GPUs at their rates; with namespace ml
    picked the GPUs its pods hold."""
    prometheus, start = request.getfixturevalue(f"rolled_{story}")
    at = start + MISSED * SCRAPE + 17 + after
    rates = {f"n GPU {gpu}": _roll_rate(story, start, at, gpu) for gpu in (0, 1)}
    assert _roll_shown(prometheus, at, {}) == rates
    started = ROLLS[story][0]
    picked = _roll_shown(prometheus, at, {"namespace": "ml", "pod": "r" if started else "p"})
    assert picked == ({"n GPU 0": rates["n GPU 0"]} if started else {})
    assert _roll_shown(prometheus, at, {"namespace": "ml", "pod": "q"}) == {"n GPU 1": rates["n GPU 1"]}
    # the namespace picked (every pod of it): the GPUs its pods hold, GPU 0 while ml/r holds it
    assert _roll_shown(prometheus, at, {"namespace": "ml"}) == (rates if started else {"n GPU 1": rates["n GPU 1"]})


# The drain on live scrapes every half second: node k's exporter stays (its GPU written idle from answer DRAIN on),
# node j's writes its GPU idle at answer DRAIN and then serves nothing, node m's GPU holds ml/r throughout.
INTERVAL, DRAIN, ANSWERS = 0.5, 6, 18
NODES = {"k": "s", "j": "t", "m": "r"}  # each node's one GPU's pod
POWER = {"s": 250, "t": 220, "r": 200, None: 60}
GONE = {"j": DRAIN + 1}  # the answer from which a node's exporter serves nothing
RATE_PANELS = (ENERGY_PANEL, "PCIe replays")


def _drained(node: str, k: int) -> bool:
    return node != "m" and k >= DRAIN


def _page(node: str, k: int) -> str:
    """Node `node`'s exporter's answer k: its GPU's energy (each answer's power over the interval, mJ) and PCIe
    replays (2 per answer) so far, under the pod the answer names."""
    if k >= GONE.get(node, ANSWERS * 9):
        return ""
    pod = None if _drained(node, k) else NODES[node]
    named = f',container="main",namespace="ml",pod="{pod}"' if pod else ""
    labels = f'gpu="0",UUID="GPU-{node}-0",device="nvidia0",{MODEL},Hostname="{node}"{named}'
    energy = sum(POWER[None if _drained(node, j) else NODES[node]] * INTERVAL * 1000 for j in range(k + 1))
    return (f"# TYPE {ENERGY} counter\n{ENERGY}{{{labels}}} {energy:g}\n"
            f"# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\nDCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{labels}}} {2 * k}\n")


drained = scraped_fixture("counter-rate-pod-picked-drain", _page, NODES, ANSWERS, INTERVAL)


@pytest.mark.parametrize("node", ["j", "k", "m"])
@pytest.mark.parametrize("title", RATE_PANELS)
def test_a_pod_ended_by_a_drain_leaves_a_per_gpu_rate_panel_picking_it(drained, title, node):
    """With node `node`'s pod picked: its GPU at the rate the panel draws it with every pod while the node's latest
    answer is before DRAIN, nothing after (ml/r, on node m, all along)."""
    _, times, *_ = drained
    every = _live_shown(drained, title, {})
    shown = _live_shown(drained, title, {"namespace": "ml", "pod": NODES[node]})
    line = f"{node} GPU 0"
    assert sum(line in lines for lines in every.values()) >= 10, every
    wrong = {}
    for at, lines in shown.items():
        latest = sum(1 for t in times[node] if t <= at) - 1
        truth = {} if _drained(node, latest) else {line: every[at][line]}
        if lines != truth:
            wrong[round(at - times[node][DRAIN], 3)] = (lines, truth)
    assert not wrong, f"{title}, ml/{NODES[node]} picked: (shown, truth) at seconds after the drain: {wrong}"

"""A pod that starts on an idle GPU just as its node's exporter is rolled (a DaemonSet update: the old copy's last
scrape finds the GPU idle, the new copy's scrape 14 s later names the pod), and the new copy's next scrape fails or is
late. Wrong at c46fa7e2, which judges a GPU idle over all its exporter copies (held_labels without the
scrape target) by "a series without a pod within two scrape intervals, none naming one within one": the old copy's
idle reading (older than the new copy's naming one, both within two intervals) made the GPU idle once the new copy's
naming reading was an interval old, so the pod left the per-pod panels until the new copy's next scrape. Per scrape
target (before c46fa7e2) the old copy's reading judged the old copy's series alone: the pod stayed at its last reading,
as a failed or late scrape leaves any pod.

Its mirror (the pod ends between the old copy's last scrape, naming it, and the new copy's, finding the GPU idle; the
new copy's next scrape late) is right on c46fa7e2 and shown here too: in both, two copies' newest readings lie within
one interval of each other and more than an interval back, and only their order tells whether the pod holds the GPU;
windows of whole intervals cannot tell it ("without a pod and none naming one within one interval, or within two"
reads the mirror wrong instead: the ended pod on the idle GPU). The per-pod panels now order them by the samples'
times (idle_gpus: the newest sample of the GPU's series, whichever copy wrote it, without a pod), and both hold.

Backfilled (promtool: no staleness markers, as a backfill or the series before a Prometheus restart), 30 s scrapes:
node n's exporter copy A (10.0.0.1:9400, at +3 s) answers scrapes 0-9, copy B (10.0.0.2:9400, at +17 s) 8-19. GPU 1
holds ml/q (150 W) throughout. Started: GPU 0 is idle (60 W, written without a pod) until ml/r starts on it between
A's scrape 9 and B's scrape 9 (A's readings idle, B's from 9 on ml/r at 300 W). Ended: ml/p (300 W) holds GPU 0 until
it ends between A's scrape 9 and B's (A's readings name ml/p, B's from 9 on idle). B's scrape 10 fails (no sample) or
is 10 s late. The started story on live scrapes too (below): a failed scrape of B after its first naming one."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project

from tests.integration.test_pod_moved_node import SCRAPE, SCRAPES, shown  # 30 s scrapes, 20 of them
from tests.support.projects import bundled_panel
from tests.support.prometheus_server import Prometheus, SCENE_RANGE, backfilled_fixture, counted_inline, duration, \
    scraped_every
from tests.support.replay_exporter import ReplayExporter

CHANGE = 9  # B's scrape reading GPU 0's new state first (A's scrape CHANGE, 14 s before it, read the old one)
MISSED = 10  # B's scrape that fails or is late
LATE = 10  # seconds, the late variant
MODEL = 'modelName="NVIDIA A100-SXM4-80GB",DCGM_FI_DRIVER_VERSION="570.133.20"'
A, B = "10.0.0.1:9400", "10.0.0.2:9400"
COPIES = {A: (range(0, CHANGE + 1), 3), B: (range(CHANGE - 1, SCRAPES), 17)}  # scrapes, offset
POWER = {"p": 300, "r": 300, "q": 150, None: 60}


def story(started: bool, late: int | None):
    """The backfill's text: GPU 0's pod ml/r started (`started`) or ml/p ended as the copies rolled; B's scrape MISSED
    missing (`late` None) or `late` seconds late."""
    def pod(address: str, k: int, gpu: int) -> str | None:
        if gpu:
            return "q"
        new = address == B and k >= CHANGE
        return ("r" if new else None) if started else (None if new else "p")

    def openmetrics(start: int) -> str:
        lines = []
        for metric in ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP"):
            lines.append(f"# TYPE {metric} gauge")
            for address, (scrapes, offset) in COPIES.items():
                for gpu in (0, 1):
                    kept = [k for k in scrapes if not (address == B and k == MISSED and late is None)]
                    # each series' samples in time order (promtool's): by pod, then by scrape
                    for k in sorted(kept, key=lambda k: (str(pod(address, k, gpu)), k)):
                        name = pod(address, k, gpu)
                        named = f',container="main",namespace="ml",pod="{name}"' if name else ""
                        value = POWER[name] if metric == "DCGM_FI_DEV_POWER_USAGE" else 50 + gpu
                        at = start + k * SCRAPE + offset + (late or 0) * (address == B and k == MISSED)
                        lines.append(f'{metric}{{gpu="{gpu}",UUID="GPU-n-{gpu}",device="nvidia{gpu}",{MODEL},'
                                     f'Hostname="n"{named},instance="{address}",job="gpu-metrics"}} {value} {at}')
        return "\n".join([*lines, "# EOF"]) + "\n"
    return openmetrics


SCENES = {(started, late): backfilled_fixture(f"rolled-copy-pod-{'started' if started else 'ended'}-{late}",
                                              story(started, late), SCRAPES * SCRAPE, SCRAPE)
          for started in (True, False) for late in (None, LATE)}
started_failed, started_late, ended_failed, ended_late = SCENES.values()

# each panel's truth from B's scrape CHANGE on, the pod started (ml/r on GPU 0) or ended (ml/p gone)
TRUTH = {"Power draw of each pod's GPUs": ({"Pod ml/q": 150.0, "Pod ml/r": 300.0}, {"Pod ml/q": 150.0}),
         "Pods on GPUs": ({"Pod ml/q": 1.0, "Pod ml/r": 1.0}, {"Pod ml/q": 1.0})}


@pytest.mark.parametrize("after", [5, 9])
@pytest.mark.parametrize("title", sorted(TRUTH))
@pytest.mark.parametrize("scene", ["started_failed", "started_late"])
def test_a_pod_started_as_its_exporter_rolled_stays_through_a_failed_or_late_scrape(request, scene, title, after):
    """`after` seconds after B's scrape MISSED was due (B's naming reading then 35 s and 39 s old, A's idle one 49 s
    and 53 s): ml/r holds GPU 0 at B's last reading, 300 W. Shown: ml/q alone (ml/r hidden, 'Pods on GPUs' 1 for 2)."""
    prometheus, start = request.getfixturevalue(scene)
    assert shown(prometheus, title, start + MISSED * SCRAPE + 17 + after, {}) == TRUTH[title][0]


@pytest.mark.parametrize("after", [5, 9])
@pytest.mark.parametrize("title", sorted(TRUTH))
@pytest.mark.parametrize("scene", ["ended_failed", "ended_late"])
def test_a_pod_ended_as_its_exporter_rolled_stays_off_through_a_failed_or_late_scrape(request, scene, title, after):
    """The mirror, right now (and the reason the pin above has no fix by windows): ml/p is not drawn on GPU 0, which
    B's last scrape found idle."""
    prometheus, start = request.getfixturevalue(scene)
    assert shown(prometheus, title, start + MISSED * SCRAPE + 17 + after, {}) == TRUTH[title][1]


# The started story on live scrapes every half second: copy A answers GPU 0 idle until its answer ANSWERS, then
# nothing (its series marked stale, as when its target goes); B answers nothing before A's last answer, then ml/r on
# GPU 0 at every answer but its second, which is no exposition (a failed scrape: Prometheus marks B's series stale).
# Prometheus spreads the two targets' scrapes by a hash of their labels: B's first answer after A's last comes GAP_MAX
# or less after it, or the scene is made again on other ports (the hole, the interval less that gap, is then 50 ms or
# more: 50 of the 1 ms steps read; on the rules of c46fa7e2's parent not one of them is wrong).
INTERVAL, ANSWERS, GAP_MAX = 0.5, 12, 0.45


def _page(pod: str | None) -> str:
    def line(metric: str, gpu: int) -> str:
        name = pod if gpu == 0 else "q"
        named = f',container="main",namespace="ml",pod="{name}"' if name else ""
        value = POWER[name] if metric == "DCGM_FI_DEV_POWER_USAGE" else 50 + gpu
        return f'{metric}{{gpu="{gpu}",UUID="GPU-n-{gpu}",device="nvidia{gpu}",{MODEL},Hostname="n"{named}}} {value}'
    return "\n".join(text for metric in ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP")
                     for text in (f"# TYPE {metric} gauge", line(metric, 0), line(metric, 1))) + "\n"


def _live_scene(folder):
    """Run the scene once on a new Prometheus in `folder`: (its context manager, A's last answer's time, B's first
    naming answer's, its failed one's, its next one's), the server running with its scraping stopped."""
    state = {"a_last": None, "b": 0, "named": None, "failed": None, "back": None}
    lock = threading.Lock()

    def old(k: int) -> str:
        with lock:
            if state["a_last"]:
                return ""
            if k >= ANSWERS:
                state["a_last"] = time.time()  # A's last answer
            return _page(None)

    def new(k: int) -> str:
        with lock:
            if not state["a_last"] or state["back"]:
                return _page("r") if state["a_last"] else ""
            state["b"] += 1
            key = {1: "named", 2: "failed", 3: "back"}[state["b"]]
            state[key] = time.time()
            return "not an exposition {\n" if key == "failed" else _page("r")

    stack = contextlib.ExitStack()
    a, b = (stack.enter_context(ReplayExporter(answer, counted=True)) for answer in (old, new))
    config = {"global": {"scrape_interval": duration(INTERVAL)}, "scrape_configs": [
        {"job_name": "dcgm", "static_configs": [{"targets": [a.address, b.address]}]}]}
    prometheus = stack.enter_context(Prometheus(folder, config))
    deadline = time.monotonic() + 120
    while not state["back"] or time.time() < state["back"] + 1:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    prometheus.stop_scraping()
    return stack, prometheus, state


@pytest.fixture(scope="module")
def live_started(tmp_path_factory):
    """(prometheus, the times of B's first answer naming ml/r, its failed answer, its answer after)."""
    for _ in range(6):
        stack, prometheus, state = _live_scene(tmp_path_factory.mktemp("rolled-copy-pod-started-live"))
        if state["named"] - state["a_last"] <= GAP_MAX:
            with stack:
                yield prometheus, state["named"], state["failed"], state["back"]
            return
        stack.close()
    pytest.fail(f"B's first answer came over {GAP_MAX} s after A's last in 6 scenes")


@pytest.mark.parametrize("title", sorted(TRUTH))
def test_a_pod_started_as_its_exporter_rolled_stays_through_a_failed_scrape_on_live_scrapes(live_started, title):
    """Every millisecond from B's first answer naming ml/r to its answer after the failed one: ml/r and ml/q. Seen on
    c46fa7e2's rules (B 0.39 s after A): ml/q alone at 111 steps, from the failed scrape to 0.109 s after."""
    prometheus, named_at, failed_at, back_at = live_started
    target = bundled_panel(title)["targets"][0]
    expr = scraped_every(counted_inline(target["expr"], load_project()), 30, INTERVAL)
    query = interpolate(expr, {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu"))})
    data = prometheus.api("query_range", query=query, start=f"{named_at + 0.05:.3f}", end=f"{back_at:.3f}",
                          step="0.001")
    shown: dict[float, dict[str, float]] = {}
    for series in data["result"]:
        for at, value in series["values"]:
            shown.setdefault(round(float(at) - failed_at, 3), {})[
                render_legend(target["legendFormat"], series["metric"])] = float(value)
    wrong = [at for at, values in sorted(shown.items()) if values != TRUTH[title][0]]
    assert not wrong, (f"{len(wrong)} steps from {wrong[0]} s to {wrong[-1]} s after B's failed scrape", title)


# The per-GPU panels with the pod picked judge the GPUs it holds by the samples' times too (promql._left_idle, held),
# their late tier leaving none of those GPUs' series out; at All they keep windows of whole intervals. By windows
# ml/r's GPU was left out from B's failed or late scrape for up to an interval, as the per-pod panels left ml/r out
# before (and the late tier's windows alone read it at A's idle 60 W).
PICKED_TRUTH = {"Power draw": {"n GPU 0": 300.0}, "Total power draw": {"DCGM_FI_DEV_POWER_USAGE": 300.0}}


@pytest.mark.parametrize("after", [5, 9])
@pytest.mark.parametrize("title", sorted(PICKED_TRUTH))
@pytest.mark.parametrize("scene", ["started_failed", "started_late"])
def test_a_picked_pod_started_as_its_exporter_rolled_keeps_its_gpu_through_a_failed_or_late_scrape(request, scene,
                                                                                                    title, after):
    """With ml/r picked, `after` seconds after B's scrape MISSED was due: its GPU 0 at B's last reading, 300 W."""
    prometheus, start = request.getfixturevalue(scene)
    assert shown(prometheus, title, start + MISSED * SCRAPE + 17 + after,
                 {"namespace": "ml", "pod": "r"}) == PICKED_TRUTH[title]


# At All the late tier judges the GPUs by the samples' times too (promql._left_idle, idle_gpus). By windows of whole
# intervals over the copies A's idle reading, 14 s older than B's naming one, read GPU 0 idle from one interval after
# the naming reading, and the late tier left out the series naming ml/r: GPU 0 at A's idle 60 W for 300 W.
AT_ALL = {True: {"Power draw": {"n GPU 0": 300.0, "n GPU 1": 150.0},
                 "Total power draw": {"DCGM_FI_DEV_POWER_USAGE": 450.0}},
          False: {"Power draw": {"n GPU 0": 60.0, "n GPU 1": 150.0},
                  "Total power draw": {"DCGM_FI_DEV_POWER_USAGE": 210.0}}}


@pytest.mark.parametrize("after", [5, 9])
@pytest.mark.parametrize("title", sorted(AT_ALL[True]))
@pytest.mark.parametrize("scene", ["started_failed", "started_late"])
def test_a_pod_started_as_its_exporter_rolled_keeps_its_gpu_reading_on_a_per_gpu_panel_at_all(request, scene, title,
                                                                                              after):
    """With the variables at All, `after` seconds after B's scrape MISSED was due: GPU 0 at B's last reading (ml/r's
    300 W), GPU 1 at ml/q's 150 W. Shown before: GPU 0 at A's idle 60 W for 300 W."""
    prometheus, start = request.getfixturevalue(scene)
    assert shown(prometheus, title, start + MISSED * SCRAPE + 17 + after, {}) == AT_ALL[True][title]


@pytest.mark.parametrize("after", [5, 9])
@pytest.mark.parametrize("title", sorted(AT_ALL[False]))
@pytest.mark.parametrize("scene", ["ended_failed", "ended_late"])
def test_a_pod_ended_as_its_exporter_rolled_leaves_its_gpu_drawn_idle_on_a_per_gpu_panel_at_all(request, scene, title,
                                                                                                after):
    """The mirror at All: GPU 0 at B's last reading, the idle 60 W; GPU 1 at ml/q's 150 W."""
    prometheus, start = request.getfixturevalue(scene)
    assert shown(prometheus, title, start + MISSED * SCRAPE + 17 + after, {}) == AT_ALL[False][title]

"""The by-pod dashboard's energy rate of each pod's GPUs and the health dashboard's remapped-rows bars (a counter's
increase per GPU over the range) through test_exporter_overlap_counter_lines.py's rollouts, as a scraping Prometheus
stores them: three nodes of 3 GPUs, each old exporter scraped at 0 s of each interval, each new one from ROLLOUT, 11 s
into each interval, numbering the GPUs apart (C, A, B for A, B, C at indexes 0, 1, 2). n1 and n3 with a `node` label
(n1's exporters overlapping 8 intervals, n3's 4), n2 through a scrape path without one, its old exporter writing its
own pod's name into `Hostname`, its new one the node into `hostname` (4 intervals). Both exporters read one device
counter per GPU, and each GPU's series name the pod holding it (ml/train-a for A, and so on). Each story is told with
the new exporters' readings taken at their scrapes, and with them taken 24 s before (an exporter serves what DCGM
collected on its own clock: the new copy's reading older than the old copy's of the same moment), and each again with
the new exporters numbering the GPUs as the old ones do (the truth the numbering apart must read alike). The by-pod
gauge panels (a pod's sums, count, means and framebuffer share) are read on the same rollouts with a pod holding two
GPUs of each node whose readings differ, with UUIDs and without, and with the GPUs' draw falling after n1's old
exporter's last scrape.
"""

from __future__ import annotations

import pytest

from tests.support.counter_rollout import (ALIKE, EXPORTER_POD, EXPORTERS, ROLLOUT, SPAN, STEP, WATTS,
                                           counters_scraped, pod_of)
from tests.support.projects import bundled_panels, bundled_project
from tests.support.prometheus_server import written_fixture
from tests.support.range_panels import panel_at

ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
UNCORRECTABLE, CORRECTABLE = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"
# each counter's growth a second per watt of its GPU (the correctable rows grow twice as fast)
COUNTERS = {ENERGY: 1000, UNCORRECTABLE: 0.0001, CORRECTABLE: 0.0002}
BARS = {"Rows remapped (uncorrectable)": UNCORRECTABLE, "Rows remapped (correctable)": CORRECTABLE}
LAG = 24  # seconds a late story's new exporters' readings are older than their scrapes
# gauges of the by-pod panels that add a pod's GPUs up or count them, each GPU's reading a watt of it
GAUGES = {"DCGM_FI_DEV_POWER_USAGE": 1, "DCGM_FI_DEV_FB_USED": 10, "DCGM_FI_PROF_PCIE_RX_BYTES": 2e6,
          "DCGM_FI_PROF_PCIE_TX_BYTES": 1e6, "DCGM_FI_DEV_GPU_TEMP": 0.1}
ADDED = {"Power draw of each pod's GPUs": 1, "Framebuffer used by pod": 10, "PCIe receive by pod": 2e6,
         "PCIe transmit by pod": 1e6}


def _story(exporters, lag: int):
    return lambda start: counters_scraped(start, COUNTERS, exporters, pods=True, lag=lag, gauges=GAUGES)


apart = written_fixture("exporter-overlap-pod-rates-apart", _story(EXPORTERS, 0), SPAN, STEP)
alike = written_fixture("exporter-overlap-pod-rates-alike", _story(ALIKE, 0), SPAN, STEP)
apart_late = written_fixture("exporter-overlap-pod-rates-apart-late",
                             _story(EXPORTERS, LAG), SPAN, STEP)
alike_late = written_fixture("exporter-overlap-pod-rates-alike-late", _story(ALIKE, LAG), SPAN, STEP)
STORIES = {"in scrape order": ("apart", "alike"), "new readings 24 s old": ("apart_late", "alike_late")}
NEW = {"n1": "CAB", "n2": "FDE", "n3": "IGH"}  # the new exporters' numbering
OLD = {"n1": "ABC", EXPORTER_POD: "DEF", "n3": "GHI"}


def _shown(story, title: str, at: int, span: int = SPAN) -> dict[str, float]:
    prometheus, start = story
    return panel_at(prometheus, bundled_project(), bundled_panels()[title], start + at, span)


def _pods(per_watt: float) -> dict[str, float]:
    """Each pod's line: the rate of the one GPU it holds."""
    return {f"Pod ml/{pod_of(name)}": WATTS[name] * per_watt for name in WATTS}


def _by_gpu(shown: dict[str, float], nodes: dict[str, str]) -> dict[str, float]:
    """A per-GPU panel's values by GPU name, its legends ('n1 GPU 0') read as `nodes` number the GPUs."""
    named = {}
    for legend, value in shown.items():
        node, _, index = legend.rpartition(" GPU ")
        named[nodes[node][int(index)]] = value
    return named


def _legends(nodes: dict[str, str]) -> set[str]:
    return {f"{node} GPU {index}" for node, order in nodes.items() for index in range(len(order))}


@pytest.mark.parametrize("story", list(STORIES))
def test_before_the_rollouts_each_pod_reads_its_gpus_energy_rate(request, story):
    """A minute before the rollouts: each pod its GPU's energy rate (its watts times 1,000 mW)."""
    rolled = request.getfixturevalue(STORIES[story][0])
    assert _shown(rolled, "Energy use rate of each pod's GPUs", ROLLOUT - 60) == pytest.approx(_pods(1000))


@pytest.mark.parametrize("after", [15, 45, 60, 100, 150, 200, 215, 240, 300, 400])
@pytest.mark.parametrize("story", list(STORIES))
def test_each_pod_reads_its_gpus_energy_rate_through_the_overlaps(request, story, after):
    """Through the overlaps (and after) each pod reads its own GPU's energy rate, as with the new exporters numbering
    the GPUs alike: train-a 300,000 mW, train-b 500,000, train-c 700,000 (A, B, C on n1), and so on. Before, a pod's
    GPU was named at the old exporter's index and at the new one's, each joined to the rate the per-GPU lines draw
    there: train-a read 1,000,000 mW (its GPU's 300,000 and the 700,000 of C, which the new exporter put at A's old
    index), train-b 800,000, train-c 1,200,000, from the new exporters' first rate to the old ones' last."""
    rolled, truth = (request.getfixturevalue(name) for name in STORIES[story])
    shown = _shown(rolled, "Energy use rate of each pod's GPUs", ROLLOUT + after)
    assert shown == pytest.approx(_shown(truth, "Energy use rate of each pod's GPUs", ROLLOUT + after))
    assert shown == pytest.approx(_pods(1000))


@pytest.mark.parametrize("span", [300, SPAN])
@pytest.mark.parametrize("title", list(BARS))
@pytest.mark.parametrize("story", list(STORIES))
def test_before_the_rollouts_each_gpu_has_one_remapped_rows_bar(request, story, title, span):
    """A minute before the rollouts: a bar per GPU under its node (n2's under the old exporter's pod's name), each the
    value the same GPUs read numbered alike."""
    rolled, truth = (request.getfixturevalue(name) for name in STORIES[story])
    shown = _shown(rolled, title, ROLLOUT - 60, span)
    assert set(shown) == _legends(OLD)
    assert shown == pytest.approx(_shown(truth, title, ROLLOUT - 60, span))


@pytest.mark.parametrize("after", [15, 45, 60, 100, 150, 200, 240, 300, 400])
@pytest.mark.parametrize("span", [300, SPAN])
@pytest.mark.parametrize("title", list(BARS))
@pytest.mark.parametrize("story", list(STORIES))
def test_each_gpu_has_one_remapped_rows_bar_at_the_new_index_through_the_overlaps(request, story, title, span, after):
    """Over a range of 5 minutes or an hour ending through the overlaps (and after), a bar per GPU, at the new
    exporter's index, under its node (n2's under n2), each the GPU's rows as the same rollout numbering alike reads
    them (one counter per UUID of NVIDIA's form, whichever exporter read it). Before, the copies were keyed by UUID
    and index and added up per node and index: at 180 s over 5 minutes 'n1 GPU 0' read 21 uncorrectable rows for 23
    (A's part and C's), and n2's GPUs had bars under the old exporter's pod's name beside n2's."""
    rolled, truth = (request.getfixturevalue(name) for name in STORIES[story])
    shown = _shown(rolled, title, ROLLOUT + after, span)
    assert set(shown) == _legends(NEW)
    assert _by_gpu(shown, NEW) == pytest.approx(_by_gpu(_shown(truth, title, ROLLOUT + after, span),
                                                         {"n1": "ABC", "n2": "DEF", "n3": "GHI"}))


@pytest.mark.parametrize("after", [60, 150, 180, 300, 400])
@pytest.mark.parametrize("title", list(BARS))
def test_each_remapped_rows_bar_reads_its_gpus_own_rows(apart, title, after):
    """Over the 5 minutes to 60, 150, 180, 300 and 400 s after the rollouts each bar reads its own GPU's rows: its rate
    (watts times the counter's growth a watt) over the 300 s the range's scrapes grew in, give or take a scrape
    interval (the range counts from the scrape before it: 330 s where a scrape falls on the range's start; 281 s at
    400 s, the new exporters scraped 11 s past the range's 30 s grid, as with the GPUs numbered alike). Before, at
    180 s n1's bars read 21, 21, 31 uncorrectable rows for 23, 10, 16 (C, A, B)."""
    shown = _by_gpu(_shown(apart, title, ROLLOUT + after, 300), NEW)
    seconds = {name: rows / (WATTS[name] * COUNTERS[BARS[title]]) for name, rows in shown.items()}
    assert set(seconds) == set(WATTS) and all(270 <= grown <= 331 for grown in seconds.values()), seconds


@pytest.mark.parametrize("title", [*ADDED, "Pods on GPUs"])
def test_before_the_rollouts_each_pods_gpu_is_added_once(apart, title):
    """A minute before the rollouts the by-pod gauge panels that add a pod's GPUs up (or count them) read each pod's
    one GPU once: its power, framebuffer, PCIe traffic; 1 GPU a pod."""
    truth = _pods(ADDED[title]) if title in ADDED else {pod: 1 for pod in _pods(0)}
    assert _shown(apart, title, ROLLOUT - 60) == pytest.approx(truth)


@pytest.mark.parametrize("after", [60, 150])
@pytest.mark.parametrize("title", [*ADDED, "Pods on GPUs"])
def test_each_pods_gpu_is_added_once_through_the_overlaps(apart, alike, title, after):
    """Through the overlaps each pod's one GPU is added (or counted) once, as with the new exporters numbering the GPUs
    alike. Measured: each pod reads its GPU at the old exporter's index and at the new one's, twice its GPU's power
    (train-a 600 W for 300), framebuffer and PCIe traffic, and 'Pods on GPUs' 2 GPUs a pod for 1, from the new
    exporters' first scrape for the look-back after the old ones' last."""
    shown = _shown(apart, title, ROLLOUT + after)
    assert shown == pytest.approx(_shown(alike, title, ROLLOUT + after))


INCREASES = '''\
from generator.model import Dashboard, Panel, Query, Row

ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"


def dashboards(ctx):
    yield Dashboard(id="increases", title="Increases", rows=[Row("All", [
        Panel("Fleet", Query(ROWS, "sum", (), as_increase=True), kind="stat"),
        Panel("Per node", Query(ROWS, "sum", ("node",), as_increase=True), kind="stat"),
        Panel("Per pod", Query(ROWS, "sum", ("pod",), as_increase=True), kind="stat"),
    ])])
'''


@pytest.fixture(scope="module")
def increases(tmp_path_factory):
    """A project's panels of the counter's increase over the range summed over the fleet, per node and per pod."""
    from generator.artifacts import grafana_dashboards
    from tests.support.projects import defined_project

    project = defined_project(tmp_path_factory.mktemp("increases"), dashboards=INCREASES)
    (dashboard,) = grafana_dashboards(project)
    return project, {panel["title"]: panel for panel in dashboard.model["panels"]}


@pytest.mark.parametrize("after", [60, 180, 300])
@pytest.mark.parametrize("title", ["Fleet", "Per node", "Per pod"])
def test_a_counters_increase_over_gpus_reads_each_gpu_once_through_the_overlaps(apart, alike, increases, title, after):
    """A counter's increase over the range added up over the fleet, per node and per pod reads what the rollout
    numbering alike reads. Before, keyed by UUID and index, the copies at the old index and the new one were two GPUs
    for the overlap: at 180 s over 5 minutes the fleet read 189 rows for 142.8, and n2's were split between n2 and
    the old exporter's pod's name."""
    project, panels = increases
    shown = {}
    for name, (prometheus, start) in (("apart", apart), ("alike", alike)):
        shown[name] = panel_at(prometheus, project, panels[title], start + ROLLOUT + after, 300)
    assert shown["apart"] and shown["apart"] == pytest.approx(shown["alike"])


# A pod on two GPUs of each node (train-ab on A and B, ...), the third GPU's pod on it alone; each GPU's gauges read
# apart (its watts times each one's reading a watt: utilisation 30 % on A, 50 % on B), so a pod's sum, count, mean and
# share of memory tell one GPU read twice from each GPU read once
HOLDERS = {"A": "train-ab", "B": "train-ab", "C": "train-c", "D": "train-de", "E": "train-de", "F": "train-f",
           "G": "train-gh", "H": "train-gh", "I": "train-i"}
PAIR_GAUGES = {**GAUGES, "DCGM_FI_DEV_GPU_UTIL": 0.1, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 1 / 2000,
               "DCGM_FI_PROF_DRAM_ACTIVE": 1 / 1500, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 1 / 1000,
               "DCGM_FI_DEV_SM_CLOCK": 3, "DCGM_FI_DEV_FB_FREE": lambda watts, _: 10000 - 10 * watts,
               "DCGM_FI_DEV_FB_RESERVED": lambda watts, _: 300}
# the by-pod means: each GPU's reading a watt of it as the panel shows it
MEANS = {"GPU utilization by pod": 0.1, "Tensor core activity by pod": 1 / 2000,
         "Memory bandwidth activity (DRAM) by pod": 1 / 1500, "Graphics/compute engine activity by pod": 1 / 1000,
         "SM clock by pod": 3}


def _paired(exporters):
    return lambda start: counters_scraped(start, COUNTERS, exporters, pods=True, gauges=PAIR_GAUGES,
                                          holder=HOLDERS.__getitem__)


paired_apart = written_fixture("exporter-overlap-pod-pairs-apart", _paired(EXPORTERS), SPAN, STEP)
paired_alike = written_fixture("exporter-overlap-pod-pairs-alike", _paired(ALIKE), SPAN, STEP)


def _held(pod: str) -> list[int]:
    """The watts of the GPUs `pod` holds."""
    return [WATTS[name] for name, holder in HOLDERS.items() if holder == pod]


def _truth(title: str) -> dict[str, float]:
    """Each pod's line of the panel `title`, read from the GPUs it holds, each once."""
    pods = {f"Pod ml/{pod}": _held(pod) for pod in dict.fromkeys(HOLDERS.values())}
    if title in ADDED:
        return {line: sum(watts) * ADDED[title] for line, watts in pods.items()}
    if title == "Pods on GPUs":
        return {line: len(watts) for line, watts in pods.items()}
    if title in MEANS:
        return {line: sum(watts) / len(watts) * MEANS[title] for line, watts in pods.items()}
    # the share of the memory the pod's GPUs hold: their used over their used and free (10,000 MiB a GPU)
    return {line: sum(10 * w for w in watts) / (len(watts) * 10000) for line, watts in pods.items()}


@pytest.mark.parametrize("after", [-60, 15, 45, 60, 100, 150, 200, 240, 300, 400])
@pytest.mark.parametrize("title", [*ADDED, "Pods on GPUs", *MEANS, "Framebuffer used share by pod"])
def test_a_pod_on_two_gpus_reads_each_once_through_the_overlaps(paired_apart, paired_alike, title, after):
    """A pod on two GPUs whose readings differ, through the overlaps (and before and after): its sum, count, mean and
    share of memory read each of its GPUs once, as with the new exporters numbering the GPUs alike: train-ab's power
    800 W (A 300 + B 500), 2 GPUs, utilisation 40 %; n2's pod train-de too, whose old exporter writes no `node` and its
    own pod's name into Hostname. Before, the old exporter's A at index 0 and B at 1 and the new one's A at 1 and B at 2
    read as 3 GPUs of the pod by index: 1,300 W for 800, 3 GPUs for 2, the mean 43.3 % for 40 (B's reading at index 1
    over A's, counted twice)."""
    shown = _shown(paired_apart, title, ROLLOUT + after)
    assert shown == pytest.approx(_truth(title))
    assert shown == pytest.approx(_shown(paired_alike, title, ROLLOUT + after))


# the same pods through the rollouts numbering alike, no exporter writing a UUID (each GPU named by its node and index)
paired_unnamed = written_fixture(
    "exporter-overlap-pod-pairs-unnamed",
    lambda start: counters_scraped(start, COUNTERS, ALIKE, frozenset(address for _, _, address, *_ in ALIKE), pods=True,
                                   gauges=PAIR_GAUGES, holder=HOLDERS.__getitem__), SPAN, STEP)


@pytest.mark.parametrize("after", [-60, 60, 150, 300, 400])
@pytest.mark.parametrize("title", [*ADDED, "Pods on GPUs", *MEANS, "Framebuffer used share by pod"])
def test_a_pod_on_two_gpus_without_uuids_reads_each_once(paired_unnamed, title, after):
    """GPUs whose series carry no UUID are a pod's GPUs by their index (a pod runs on one node, whose spelling n2's
    rollout changes): train-ab's two GPUs read once each before, through and after the rollouts numbering alike."""
    assert _shown(paired_unnamed, title, ROLLOUT + after) == pytest.approx(_truth(title))


FALL = ROLLOUT + 225  # every GPU's draw falls to a third, after n1's old exporter's last scrape (ROLLOUT + 210)
FALLING = {**PAIR_GAUGES, "DCGM_FI_DEV_POWER_USAGE": lambda watts, at: watts if at < FALL else watts / 3,
           "DCGM_FI_DEV_GPU_UTIL": lambda watts, at: watts / 10 if at < FALL else watts / 30}


def _falling(exporters):
    return lambda start: counters_scraped(start, COUNTERS, exporters, pods=True, gauges=FALLING,
                                          holder=HOLDERS.__getitem__)


falling_apart = written_fixture("exporter-overlap-pod-falling-apart", _falling(EXPORTERS), SPAN, STEP)
falling_alike = written_fixture("exporter-overlap-pod-falling-alike", _falling(ALIKE), SPAN, STEP)


@pytest.mark.parametrize("after", [220, 240, 255, 270, 285, 300, 330])
@pytest.mark.parametrize("title", ["Power draw of each pod's GPUs", "GPU utilization by pod"])
def test_a_pods_gpu_reads_the_new_exporters_reading_once_the_old_one_ended(falling_apart, falling_alike, title,
                                                                           after):
    """The GPUs' draw falls to a third 15 s after n1's old exporter's last scrape: from the new exporter's first reading
    after the fall (ROLLOUT + 251 s) each pod reads it, as numbered alike (train-ab 266.7 W, 13.3 %). Read at both
    indexes, the old exporter's index held its last reading for the look-back, and the pod read the higher: 800 W
    and 40 % at 270 s."""
    shown = _shown(falling_apart, title, ROLLOUT + after)
    assert shown == pytest.approx(_shown(falling_alike, title, ROLLOUT + after))
    if after >= 255:  # train-ab's sum of A and B's watts, or their mean; train-c's C alone
        ab, per_watt = (800, 1 / 3) if title.startswith("Power") else (400, 1 / 30)
        assert {pod: value for pod, value in shown.items() if pod in ("Pod ml/train-ab", "Pod ml/train-c")} \
            == pytest.approx({"Pod ml/train-ab": ab * per_watt, "Pod ml/train-c": 700 * per_watt})

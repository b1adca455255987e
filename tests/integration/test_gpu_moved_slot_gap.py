"""A GPU that took the index of a GPU moved to another node, its exporter missing scrapes just after the move.

The story (30 s scrapes, 1 hour, backfilled into a real Prometheus; each exporter writes its node into Hostname, no
node target label): GPU-A (300 W) at index 0 of node n1 until MOVED, then at index 0 of another node (n2, or gpu-x7k2p
named like a DaemonSet pod's: a Karpenter node claim); GPU-B (500 W) at n1's index 0 from MOVED, whose exporter misses
its scrapes at MOVED + 60 and MOVED + 90 (a new node's exporter warming up). Truth at every instant after the move:
2 GPUs, 800 W; lines 'n2 GPU 0' (or 'gpu-x7k2p GPU 0') at 300 W and 'n1 GPU 0' at 500 W. Before promql._present
weighed a copy within the look-back alone by its latest sample's time: 1 GPU, 300 W, GPU-B left out.
"""

from __future__ import annotations

from typing import Callable

import pytest

from tests.support.projects import bundled_panels, bundled_project
from tests.support.prometheus_server import backfilled_fixture, written_fixture
from tests.support.range_panels import panel_at
from tests.support.scraped_gpus import scraped

SPAN, STEP, MOVED = 3600, 30, 1800
MISSED = (MOVED + 60, MOVED + 90)
AFTER = (MOVED + 65, MOVED + 75, MOVED + 85)  # GPU-B's latest sample (MOVED + 30) older than an interval


def _openmetrics(start: int, moved_to: str) -> str:
    lines = []
    for metric in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"):
        lines.append(f"# TYPE {metric} gauge")
        for t in range(0, SPAN + 1, STEP):
            gpus = [("GPU-A", "n1", "10.0.0.5", 300)] if t < MOVED else [
                ("GPU-A", moved_to, "10.0.0.7", 300), ("GPU-B", "n1", "10.0.0.5", 500)]
            lines += [f'{metric}{{gpu="0",UUID="{uuid}",device="nvidia0",modelName="NVIDIA L4",Hostname="{host}",'
                      f'instance="{address}:9400",job="gpu-metrics"}} '
                      f'{watts if metric == "DCGM_FI_DEV_POWER_USAGE" else 40} {start + t}'
                      for uuid, host, address, watts in gpus if not (uuid == "GPU-B" and t in MISSED)]
    return "\n".join(lines) + "\n# EOF\n"


to_plain_node = backfilled_fixture("gpu-moved-slot-gap-plain", lambda start: _openmetrics(start, "n2"), SPAN, STEP)
to_pod_named_node = backfilled_fixture("gpu-moved-slot-gap-pod-named", lambda start: _openmetrics(start, "gpu-x7k2p"),
                                       SPAN, STEP)
STORIES = ["to_plain_node", "to_pod_named_node"]


@pytest.mark.parametrize("story", STORIES)
@pytest.mark.parametrize("title", ["GPUs reporting", "Total power draw"])
def test_a_gpu_that_took_a_moved_gpus_index_counts_through_its_missed_scrapes(request, story, title):
    """Of the names GPUs have at one node and index, a gauge panel keeps the highest ranked before each GPU's name is
    chosen (gpus_named's slot). GPU-A keeps n1 among its names while its last sample there is within the look-back;
    GPU-B, which took n1's index 0, ranked alike there while its latest sample was older than an interval, and GPU-A
    could win n1's slot though named by the node it moved to: GPU-B, with no other name, was left out ('GPUs
    reporting' 1 for 2, 'Total power draw' 300 W for 800). A copy within the look-back alone now weighs its latest
    sample's time (promql._present): GPU-B's, the later, wins n1."""
    prometheus, start = request.getfixturevalue(story)
    shown = {at: list(panel_at(prometheus, bundled_project(), bundled_panels()[title], start + at, SPAN).values())
             for at in AFTER}
    truth = {"GPUs reporting": 2.0, "Total power draw": 800.0}[title]
    assert shown == {at: pytest.approx([truth]) for at in AFTER}, shown


@pytest.mark.parametrize("story", STORIES)
def test_a_gpu_that_took_a_moved_gpus_index_is_drawn_through_its_missed_scrapes(request, story):
    """'Power draw' drew n2 GPU 0 at 300 W alone (GPU-A moved to a node named like a pod: 'n1 GPU 0' at 300 W)."""
    prometheus, start = request.getfixturevalue(story)
    moved_to = {"to_plain_node": "n2", "to_pod_named_node": "gpu-x7k2p"}[story]
    shown = {at: panel_at(prometheus, bundled_project(), bundled_panels()["Power draw"], start + at, SPAN)
             for at in AFTER}
    assert shown == {at: {f"{moved_to} GPU 0": 300.0, "n1 GPU 0": 500.0} for at in AFTER}, shown


@pytest.mark.parametrize("story", ["to_plain_node", "to_pod_named_node"])
def test_each_gpu_counts_once_its_exporter_scraped_again(request, story):
    """Once GPU-B's exporter answers again (MOVED + 120 on), and before the move: the truth."""
    prometheus, start = request.getfixturevalue(story)
    for at, truth in ((MOVED - 60, [1.0]), (MOVED + 125, [2.0]), (MOVED + 600, [2.0])):
        shown = list(panel_at(prometheus, bundled_project(), bundled_panels()["GPUs reporting"], start + at,
                              SPAN).values())
        assert shown == pytest.approx(truth), (at, shown)


# The same stories as a real Prometheus stores them scraping: a series gone from a scrape, or a scrape that failed,
# ends with a staleness marker (a backfill writes none), so the instant selector reads no sample of GPU-A's n1 copy
# after the move, nor of GPU-B's during its exporter's failed scrapes; each exporter scraped at its own phase of the
# interval. Three GPUs: GPU-A moves from n1 to n2, GPU-C from n2 to n3, GPU-B takes n1's index; n1's and n2's
# exporters fail the two scrapes after the move's next.
Exporter = tuple[str, int, "Callable[[int], list[tuple[str, str, int]] | None]"]


def _scraped(start: int, exporters: list[Exporter]) -> dict[tuple, list[tuple[float, str]]]:
    """{labels: [(second, value or STALE)]} of `exporters` (address, phase in seconds, what each scrape at t holds:
    (UUID, Hostname, watts) per GPU at index 0, or None for a failed scrape) scraped every STEP over SPAN
    (scraped_gpus.scraped)."""
    def at_index_0(held):
        def gpus(t: int):
            read = held(t)
            return None if read is None else [({"gpu": "0", "UUID": uuid, "Hostname": host}, watts)
                                              for uuid, host, watts in read]
        return gpus
    return scraped(start, [(address, phase, at_index_0(held)) for address, phase, held in exporters], SPAN, STEP)


def _moved(to: str, phase: int):
    return lambda start: _scraped(start, [
        ("10.0.0.5", 0, lambda t: [("GPU-A", "n1", 300)] if t < MOVED else
         None if t in MISSED else [("GPU-B", "n1", 500)]),
        ("10.0.0.7", phase, lambda t: [] if t < MOVED else [("GPU-A", to, 300)])])


def _three(start: int) -> dict[tuple, list[tuple[float, str]]]:
    return _scraped(start, [
        ("10.0.0.5", 0, lambda t: [("GPU-A", "n1", 300)] if t < MOVED else
         None if t in MISSED else [("GPU-B", "n1", 500)]),
        ("10.0.0.7", 11, lambda t: [("GPU-C", "n2", 400)] if t < MOVED else
         None if t in MISSED else [("GPU-A", "n2", 300)]),
        ("10.0.0.9", 23, lambda t: [] if t < MOVED else [("GPU-C", "n3", 400)])])


scraped_plain = written_fixture("gpu-moved-slot-gap-scraped-plain", _moved("n2", 13), SPAN, STEP)
scraped_pod_named = written_fixture("gpu-moved-slot-gap-scraped-pod-named", _moved("gpu-x7k2p", 7), SPAN, STEP)
scraped_three = written_fixture("gpu-moved-slot-gap-scraped-three", _three, SPAN, STEP)
SCRAPED = {"scraped_plain": ({"n2 GPU 0": 300.0, "n1 GPU 0": 500.0}),
           "scraped_pod_named": ({"gpu-x7k2p GPU 0": 300.0, "n1 GPU 0": 500.0}),
           "scraped_three": ({"n1 GPU 0": 500.0, "n2 GPU 0": 300.0, "n3 GPU 0": 400.0})}


@pytest.mark.parametrize("story", list(SCRAPED))
def test_gpus_that_took_moved_gpus_indexes_are_drawn_through_failed_scrapes(request, story):
    """Each GPU once under the node it stands on, through the failed scrapes and after: 'GPUs reporting' 2 (3), 'Total
    power draw' 800 W (1,200). Before the fix: 1 GPU and 300 W where one moved (GPU-A drawn as 'n1 GPU 0' where it
    moved to a node named like a pod), 2 and 700 W of 3 and 1,200 W."""
    prometheus, start = request.getfixturevalue(story)
    truth = SCRAPED[story]
    panels = bundled_panels()
    for at in (MOVED + 40, MOVED + 70, MOVED + 80, MOVED + 88, MOVED + 100, MOVED + 115, MOVED + 130, MOVED + 600):
        shown = {title: panel_at(prometheus, bundled_project(), panels[title], start + at, SPAN)
                 for title in ("GPUs reporting", "Total power draw", "Power draw")}
        assert (list(shown["GPUs reporting"].values()), list(shown["Total power draw"].values()),
                shown["Power draw"]) == ([len(truth)], [pytest.approx(sum(truth.values()))], truth), (at - MOVED, shown)

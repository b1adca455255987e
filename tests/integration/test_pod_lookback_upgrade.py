"""A per-pod panel across an exporter upgrade that changes how the exporter names its node, on a real Prometheus
scraping every half second, the scrape path attaching no `node` label: the old exporter (no NODE_NAME) writes its
own pod's name into `Hostname`, the new one writes the node into `hostname` (BRIEF: both arrive in mixed fleets).
ml/p holds the same GPU (one UUID) throughout, drawing 300 W before the upgrade and 100 W after: the pod's power is
the GPU's latest reading, its GPU counted once.
"""

from __future__ import annotations

import math

import pytest

from generator.preview.legend import render as render_legend
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, lookback_panel, scraped_until

OLD_SCRAPES = 8
INTERVAL = 0.5  # seconds between scrapes: the lookback and the range's steps are in scrapes


def _payload(node_label: str, watts: float) -> str:
    device = ('gpu="0",UUID="GPU-n6-0",pci_bus_id="00000000:10:00.0",device="nvidia0",modelName="NVIDIA A10G",'
              f'{node_label},DCGM_FI_DRIVER_VERSION="570.133.20",container="main",namespace="ml",pod="p"')
    return "".join(f"# TYPE {m} gauge\n{m}{{{device}}} {v:g}\n"
                   for m, v in (("DCGM_FI_DEV_GPU_TEMP", 61.0), ("DCGM_FI_DEV_POWER_USAGE", watts)))


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory):
    before = CountedAnswers(lambda n: _payload('Hostname="nvidia-dcgm-exporter-x7k2p"', 300.0) if n <= OLD_SCRAPES else "")
    old = ReplayExporter(before)
    new = ReplayExporter(lambda: "" if before.served <= OLD_SCRAPES else _payload('hostname="n6"', 100.0))
    with old, new:
        with scraped_until(tmp_path_factory, "pod-lookback-upgrade", [old.address, new.address],
                       lambda: before.served >= OLD_SCRAPES + 8, interval=INTERVAL) as prometheus:
            samples = sorted((float(at), float(v)) for series in prometheus.query(
                'DCGM_FI_DEV_POWER_USAGE{pod="p"}[10m]') for at, v in series["values"])
            yield prometheus, samples


def _steps(samples: list[tuple[float, float]]) -> tuple[float, int]:
    """The range's first step (past the lookback, 4 scrapes, after the first sample; half an interval off the
    interval's multiples) and its count of steps, one per interval, to the last sample."""
    start = math.floor(samples[0][0] / INTERVAL) * INTERVAL + 4.5 * INTERVAL
    return start, int((samples[-1][0] - start) // INTERVAL) + 1


def test_a_pods_power_across_an_exporter_upgrade_renaming_the_node_counts_its_gpu_once(upgraded):
    prometheus, samples = upgraded
    target, expr = lookback_panel("", "Power draw of each pod's GPUs", INTERVAL)
    first_new = min(at for at, watts in samples if watts == 100.0)
    wrong = {}
    for at, result in prometheus.query_at(expr, *_steps(samples), INTERVAL,
                                          instant=bool(target.get("instant"))).items():
        shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
        latest = [watts for when, watts in samples if when <= at]
        truth = {"Pod ml/p": latest[-1]} if latest else {}
        if shown != truth:
            wrong[round(at - first_new, 1)] = (shown, truth)
    assert not wrong, f"seconds after the new exporter's first scrape: (shown, true) {wrong}"


def test_pods_on_gpus_across_an_exporter_upgrade_renaming_the_node_counts_the_gpu_once(upgraded):
    prometheus, samples = upgraded
    target, expr = lookback_panel("", "Pods on GPUs", INTERVAL)
    first_new = min(at for at, watts in samples if watts == 100.0)
    wrong = {}
    for at, result in prometheus.query_at(expr, *_steps(samples), INTERVAL,
                                          instant=bool(target.get("instant"))).items():
        shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
        if shown != {"Pod ml/p": 1.0}:
            wrong[round(at - first_new, 1)] = shown
    assert not wrong, f"seconds after the new exporter's first scrape: shown (true: Pod ml/p on 1 GPU) {wrong}"

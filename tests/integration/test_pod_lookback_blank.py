"""A per-pod panel over the pod label's lookback when the GPU's fresh reading is DCGM's blank, on a real Prometheus
scraping every half second: a blank is no reading, and the pod has none of its own, so the pod shows no value, not an
older copy's reading from within the lookback (taken before the pod held the GPU; the per-GPU panels read the GPU at
that latest reading for the lookback, as a count of GPUs reporting counts it).

n5's GPU 0 is idle (no pod, 0 % utilization) for a few scrapes; then ml/b takes it and the exporter reads
utilization as the blank (a profiling pause, as in test_blank_twins). The idle copy is marked stale at the take,
but its last reading stays within the lookback for 4 intervals.
"""

from __future__ import annotations

import math

import pytest

from generator.preview.legend import render as render_legend
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, lookback_panel, scraped_until

NOT_SUPPORTED = 9223372036854775794  # int64 blank + 2
TAKEN_AT = 6  # the scrape from which ml/b holds the GPU
INTERVAL = 0.5  # seconds between scrapes: the lookback and the range's steps are in scrapes


def _payload(scrape: int) -> str:
    device = ('gpu="0",UUID="GPU-n5-0",pci_bus_id="00000000:10:00.0",device="nvidia0",modelName="NVIDIA A10G",'
              'Hostname="n5",DCGM_FI_DRIVER_VERSION="570.133.20"')
    if scrape < TAKEN_AT:
        return f"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{{{device}}} 0\n"
    return (f"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
            f'DCGM_FI_DEV_GPU_UTIL{{{device},container="main",namespace="ml",pod="b"}} {NOT_SUPPORTED}\n')


@pytest.fixture(scope="module")
def taken_blank(tmp_path_factory):
    answer = CountedAnswers(_payload)
    with ReplayExporter(answer) as exporter:
        with scraped_until(tmp_path_factory, "pod-lookback-blank", [exporter.address],
                       lambda: answer.served >= TAKEN_AT + 8, interval=INTERVAL) as prometheus:
            samples = sorted((float(at), series["metric"].get("pod", ""), float(v)) for series in prometheus.query(
                'DCGM_FI_DEV_GPU_UTIL[10m]') for at, v in series["values"])
            yield prometheus, samples


def test_a_pod_whose_gpu_reads_blank_shows_no_older_copys_reading(taken_blank):
    prometheus, samples = taken_blank
    target, expr = lookback_panel("", "GPU utilization by pod", INTERVAL)
    first_b = min(at for at, pod, _ in samples if pod == "b")
    end = samples[-1][0]
    wrong = {}
    first = math.floor(first_b / INTERVAL) * INTERVAL + INTERVAL / 2  # steps half an interval off its multiples
    for at, result in prometheus.query_at(expr, first, int((end - first_b) / INTERVAL), INTERVAL).items():
        shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
        if shown:  # the GPU's latest reading is the blank from ml/b's first scrape on: no value under any pod
            wrong[round(at - first_b, 1)] = shown
    assert not wrong, f"seconds after ml/b took the GPU (its utilization blank): shown {wrong}"

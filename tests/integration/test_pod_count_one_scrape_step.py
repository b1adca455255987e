"""Grafana's count of a pod's GPUs ("Pods on GPUs") at a step of one scrape interval, on a real Prometheus scraping an
exporter every half second: a pod holding GPU 0 of its own and GPU 1, which the exporter (without
KUBERNETES_VIRTUAL_GPUS) names under it and another pod in turn, counts 2 at every step, as the Prometheus rule counts
it (the GPUs a scrape within the look-back named the pod on), where CloudWatch's alarm at one scrape per period reads
the one scrape's count, 1 at every other period (COUNT_MOST_ONE_SCRAPE)."""

from __future__ import annotations

import math

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from generator.promql import LABEL_LOOKBACK_SCRAPES
from tests.support.live_scrapes import scraped
from tests.support.prometheus_server import SCENE_RANGE, scraped_every

SCRAPES = 14
INTERVAL = 0.5


def _payload(scrape: int) -> str:
    named = {0: "a", 1: "ab"[scrape % 2]}
    lines = []
    for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP"):  # the panel counts the GPUs reading the latter
        lines.append(f"# TYPE {metric} gauge")
        for gpu, pod in named.items():
            lines.append(f'{metric}{{gpu="{gpu}",UUID="GPU-n1-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A10G",'
                         f'Hostname="n1",DCGM_FI_DRIVER_VERSION="535.161.08",container="main",namespace="ml",'
                         f'pod="{pod}"}} {40 + gpu}')
    return "\n".join(lines) + "\n"


def test_a_pod_named_in_turn_on_a_gpu_beside_its_own_counts_two_at_every_step(tmp_path):
    (tmp_path / "project").mkdir()
    (tmp_path / "prometheus").mkdir()
    (tmp_path / "project" / "gpudash.yaml").write_text("")
    project = load_project(tmp_path / "project" / "gpudash.yaml")
    (target,) = [p["targets"][0] for d in grafana_dashboards(project) for p in d.model["panels"]
                 if p.get("title") == "Pods on GPUs"]
    with scraped(tmp_path / "prometheus", _payload, SCRAPES, INTERVAL) as prometheus:
        times = sorted(float(at) for series in prometheus.query("DCGM_FI_DEV_GPU_UTIL[10m]")
                       for at, _ in series["values"])
        window = LABEL_LOOKBACK_SCRAPES * INTERVAL
        start = math.floor(times[0] / INTERVAL) * INTERVAL + window + INTERVAL / 2
        count = int((times[-1] - start) // INTERVAL) + 1
        expr = interpolate(scraped_every(target["expr"], 30, INTERVAL),
                           {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu"))})
        read = {at: {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
                for at, result in prometheus.query_at(expr, start, count, INTERVAL,
                                                      instant=bool(target.get("instant"))).items()}
    assert count >= 4, count
    wrong = {at: shown for at, shown in read.items() if shown != {"Pod ml/a": 2.0, "Pod ml/b": 1.0}}
    assert not wrong, (wrong, times)  # the steps read otherwise, and the scrapes (a late one shows here)

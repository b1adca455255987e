"""Two exporter pods serving one GPU at once (a DaemonSet rollout with maxSurge): what the per-pod totals read.

On `agent.pipeline: classic` a pod's total is the sum of every GPU reading the agent published in the period with
the pod's dimensions, divided by the scrapes in the period (the widget's `* 30 / PERIOD()`): both exporter pods'
readings are published, so while they run together a pod's framebuffer, power and GPU count read twice their value
(said by `gpudash verify`'s "exporter rollout overlap" warning and docs/cloudwatch.md "Two exporter pods on one
node"). The OTel
pipeline makes each pod's totals per scrape (metricstransform within one target's batch), and the widgets take
their mean: true throughout.

Through the agent models into the generated widgets, evaluated as CloudWatch documents; the same rollout as
tests/unit/test_cloudwatch_exporter_overlap.py (new exporter from 600 s, the old one gone at 900 s).
"""

from __future__ import annotations

import json

import pytest

from tests.support import cloudwatch_eval
from tests.support import exporter_overlap as overlap

FB_USED, WATTS = 1000, 200
_COUNTERS_PAGE = overlap.exporter_page  # the energy, replays and temperature of the overlap's payload


def _page(host_label: str, host: str, taken: float, *more) -> str:
    labels = (f'gpu="0",UUID="GPU-0",device="nvidia0",modelName="NVIDIA A10G",{host_label}="{host}",'
              'pod="train-0",namespace="ml",container="main"')
    return (_COUNTERS_PAGE(host_label, host, taken, *more)
            + f"# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{{{labels}}} {WATTS}\n"
            + f"# TYPE DCGM_FI_DEV_FB_USED gauge\nDCGM_FI_DEV_FB_USED{{{labels}}} {FB_USED}\n")


def _by_pod(pipeline: str, monkeypatch, end: int) -> dict[str, dict]:
    monkeypatch.setattr(overlap, "exporter_page", _page)
    files, points = overlap.published_points(pipeline, old_until=900, new_from=600)
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"])["DashboardBody"])
    titles = ("Framebuffer used by pod", "Power draw of each pod's GPUs", "Pods on GPUs")
    # the table means now: drawn at `end` (its period still filling not drawn, live data off); the charts' periods all
    return {w["properties"]["title"]: cloudwatch_eval.widget(
        w["properties"], points, 0, end, now=end if w["properties"]["title"] == "Pods on GPUs" else None)["Pod ml/train-0"]
            for w in body["widgets"] if w["type"] == "metric" and w["properties"]["title"] in titles}


def test_on_the_classic_agent_a_pods_totals_read_twice_while_two_exporter_pods_serve_its_gpu(monkeypatch):
    shown = _by_pod("classic", monkeypatch, overlap.END)
    assert shown["Framebuffer used by pod"] == {**{t: pytest.approx(FB_USED) for t in range(0, 1800, 300)},
                                                600: pytest.approx(2 * FB_USED)}
    assert shown["Power draw of each pod's GPUs"] == {**{t: pytest.approx(WATTS) for t in range(0, 1800, 300)},
                                                      600: pytest.approx(2 * WATTS)}
    assert set(_by_pod("classic", monkeypatch, 840)["Pods on GPUs"].values()) == {2.0}  # one GPU held


def test_on_the_otel_pipeline_a_pods_totals_stay_true_through_the_overlap(monkeypatch):
    shown = _by_pod("otel", monkeypatch, overlap.END)
    assert list(shown["Framebuffer used by pod"].values()) == [pytest.approx(FB_USED)] * 6
    assert list(shown["Power draw of each pod's GPUs"].values()) == [pytest.approx(WATTS)] * 6
    assert set(_by_pod("otel", monkeypatch, 840)["Pods on GPUs"].values()) == {1.0}

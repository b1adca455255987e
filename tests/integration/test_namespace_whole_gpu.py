"""With the namespace (or pod) variable set, a per-GPU or fleet panel draws the GPUs the picked pods hold, each whole,
as it draws them with every pod: a GPU split into MIG instances among namespaces is the GPU, not the picked namespace's
instances. Its legend names the GPU (`n2 GPU 0`), the counter rates and device fields beside it read the whole GPU,
and a namespace's or pod's part of a GPU is what the per-pod panels draw (`GPU utilization by pod`). It read the
namespace's instances alone: `n2 GPU 0` 20 % where the GPU is at 40 %, 3,000 of its 23,000 MiB used.

On a real Prometheus scraping node n2's exporter every half second (live scrapes, as Prometheus stores them):
- GPU 0 split into MIG instances: GI 1 (3g.40gb) held by ai/serve, GI 2 (1g.10gb) by research/serve (one pod name in two
  namespaces), each instance's memory and graphics engine activity its own, the device's power and temperature
  repeated on each, GPU utilization not written on the instances (MIG does not report it; its stand-in is the engine
  activity);
- GPU 1 whole, research/train; GPU 2 idle (no pod)."""

from __future__ import annotations

import math

import pytest

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from generator.promql import LABEL_LOOKBACK_SCRAPES
from tests.support.live_scrapes import scraped
from tests.support.projects import bundled_panels
from tests.support.prometheus_server import SCENE_RANGE, counted_inline, scraped_every

SCRAPES, INTERVAL = 10, 0.5
MODEL = 'modelName="NVIDIA A100-SXM4-80GB",DCGM_FI_DRIVER_VERSION="570.133.20"'
# (gpu, MIG instance and profile or None, (namespace, pod) or None, readings)
DEVICE = {0: dict(power=300, temp=60, clock=1400), 1: dict(power=200, temp=50, clock=1500),
          2: dict(power=60, temp=35, clock=210)}
GPUS = [(0, ("1", "3g.40gb"), ("ai", "serve"), dict(used=20000, free=19000, engine=0.6)),
        (0, ("2", "1g.10gb"), ("research", "serve"), dict(used=3000, free=6800, engine=0.2)),
        (1, None, ("research", "train"), dict(used=30000, free=50000, engine=0.7, util=70)),
        (2, None, None, dict(used=0, free=80000, engine=0.0, util=0))]
FIELDS = {"DCGM_FI_DEV_POWER_USAGE": "power", "DCGM_FI_DEV_GPU_TEMP": "temp", "DCGM_FI_DEV_SM_CLOCK": "clock",
          "DCGM_FI_DEV_FB_USED": "used", "DCGM_FI_DEV_FB_FREE": "free", "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "engine",
          "DCGM_FI_DEV_GPU_UTIL": "util"}


def _payload(scrape: int) -> str:
    lines = []
    for metric, key in FIELDS.items():
        lines.append(f"# TYPE {metric} gauge")
        for gpu, instance, pod, readings in GPUS:
            value = DEVICE[gpu].get(key, readings.get(key))
            if value is None:  # not reported on a MIG instance (GPU utilization): the exporter leaves it out
                continue
            mig = f',GPU_I_PROFILE="{instance[1]}",GPU_I_ID="{instance[0]}"' if instance else ""
            named = f',container="main",namespace="{pod[0]}",pod="{pod[1]}"' if pod else ""
            lines.append(f'{metric}{{gpu="{gpu}",UUID="GPU-n2-{gpu}",device="nvidia{gpu}",{MODEL}{mig},'
                         f'Hostname="n2"{named}}} {value:g}')
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with scraped(tmp_path_factory.mktemp("namespace-whole-gpu"), _payload, SCRAPES, INTERVAL) as prometheus:
        scrapes = sorted({float(at) for series in prometheus.query("DCGM_FI_DEV_GPU_TEMP[10m]")
                          for at, _ in series["values"]})
        step = INTERVAL / 2
        start = math.floor(scrapes[0] / step) * step + LABEL_LOOKBACK_SCRAPES * INTERVAL + step / 2
        count = int((scrapes[-1] - start) // step) + 1
        assert count >= 6, (scrapes, count)
        yield prometheus, start, count, step


def _shown(live, title: str, selected: dict[str, str]) -> dict[float, dict[str, float]]:
    """{step: {legend: value}} of the bundled panel `title`, the variables `selected` (a regex each) and the others at
    All."""
    prometheus, start, count, step = live
    target = bundled_panels()[title]["targets"][0]
    expr = scraped_every(counted_inline(target["expr"], load_project()), 30, INTERVAL)
    expr = interpolate(expr, {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu")), **selected})
    return {at: {render_legend(target["legendFormat"], s["metric"]): round(float(s["value"][1]), 6) for s in result}
            for at, result in prometheus.query_at(expr, start, count, step,
                                                  instant=bool(target.get("instant"))).items()}


# the per-GPU panels (a line per GPU) and the fleet panels (one value over the GPUs) of gauges the default build draws
PER_GPU = ("Framebuffer memory used", "GPU temperature", "GPU utilization", "Power draw", "SM clock",
           "DEV_FB_FREE", "DEV_FB_USED", "PROF_GR_ENGINE_ACTIVE")
FLEET = ("Average GPU temperature", "Average GPU utilization", "Framebuffer in use", "GPUs reporting", "Hottest GPU",
         "Total power draw")
# what a namespace or pod picked holds: the GPUs the gpu variable picks to draw them whole
PICKED = {"research": ({"namespace": "research"}, "(0|1)"), "ai": ({"namespace": "ai"}, "0"),
          "serve": ({"pod": "serve"}, "0"), "ai's serve": ({"namespace": "ai", "pod": "serve"}, "0"),
          "research's serve and train": ({"namespace": "research", "pod": "(serve|train)"}, "(0|1)")}


def test_the_whole_gpus_as_every_pod_draws_them(live):
    """The premise, by hand: with every pod the MIG GPU reads its instances' mean engine activity (40 %), their memory
    added (23,000 MiB), the device's 300 W once."""
    at_all = {title: _shown(live, title, {}) for title in ("GPU utilization", "Framebuffer memory used", "Power draw",
                                                           "Total power draw", "GPUs reporting")}
    for lines in zip(*(steps.values() for steps in at_all.values())):
        assert lines == ({"n2 GPU 0": 40.0, "n2 GPU 1": 70.0, "n2 GPU 2": 0.0},
                         {"n2 GPU 0": 23000.0, "n2 GPU 1": 30000.0, "n2 GPU 2": 0.0},
                         {"n2 GPU 0": 300.0, "n2 GPU 1": 200.0, "n2 GPU 2": 60.0},
                         {"DCGM_FI_DEV_POWER_USAGE": 560.0}, {"DCGM_FI_DEV_GPU_TEMP": 3.0})


@pytest.mark.parametrize("picked", sorted(PICKED))
@pytest.mark.parametrize("title", PER_GPU + FLEET)
def test_a_namespace_picked_draws_its_gpus_whole(live, title, picked):
    """Each panel with the namespace or pod picked draws what it draws with every pod and the gpu variable set to the
    GPUs the picked pods hold: a per-GPU line is the whole GPU's, a fleet value is over whole GPUs. Before: with
    research picked `GPU utilization` drew n2 GPU 0 at 20 % (research's 1g.10gb alone) for 40, `Framebuffer memory
    used` 3,000 MiB for 23,000, `Average GPU utilization` 45 for 55, `Framebuffer in use` its instance's share."""
    selected, gpus = PICKED[picked]
    shown, truth = _shown(live, title, selected), _shown(live, title, {"gpu": gpus})
    assert any(truth.values()), truth
    assert shown == truth


def test_a_mig_instance_panel_draws_the_namespaces_instances(live):
    """The per-MIG-instance panels draw instances, each whole in itself: with research picked, research's instance
    alone."""
    for lines in _shown(live, "Framebuffer used per MIG instance", {"namespace": "research"}).values():
        assert lines == {"n2 GPU 0 MIG 2 (1g.10gb)": 3000.0}

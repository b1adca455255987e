"""The overview's fleet stats (promql.one_per_uuid: one copy per UUID) over GPUs shaped as real exporters write them,
in one Prometheus (30 s scrapes, 30 minutes, steady):
* node m1: an A100 in MIG mode at index 0, three instances (GPU_I_ID 1 to 3: 3g.20gb held by train-a, 2g.10gb by
  train-b, 1g.5gb by no pod) sharing its UUID, each repeating the device's 50 C and 250 W, each with its own
  graphics engine activity (0.9, 0.5, 0.1) and framebuffer; no DCGM_FI_DEV_GPU_UTIL (MIG). GPU 1 whole, held by infer-a:
  60 C, 300 W, 40 %.
* node n2: --use-old-namespace's `uuid` label, its values lowercased by a pipeline (`gpu-...`), `hostname`.
* node n3: series without a UUID (named by the node): two GPUs, 70 C / 400 W / 100 % and 30 C / 50 W / 0 %.
* node n4: one GPU scraped through two jobs (gpu-metrics and dcgm-sm), the same labels but the job's.
"""

from __future__ import annotations

import pytest

from tests.support.projects import bundled_panels, bundled_project
from tests.support.prometheus_server import written_fixture
from tests.support.range_panels import panel_at

SPAN, STEP = 1800, 30
TEMP, POWER, UTIL, GR, FBU, FBF = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL",
                                   "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE")


def U(n: int, lower: bool = False) -> str:
    u = f"GPU-{n:08x}-5d3e-0a2f-91c4-7e20b6ABCDEF"
    return u.lower() if lower else u


# (address, job, phase, [(labels, {metric: value})])
def fleet():
    m1 = {"node": "m1", "Hostname": "m1", "modelName": "NVIDIA A100-SXM4-40GB"}
    mig = [({**m1, "gpu": "0", "UUID": U(1), "GPU_I_ID": i, "GPU_I_PROFILE": prof, **pod},
            {TEMP: 50, POWER: 250, GR: gr, FBU: used, FBF: free})
           for i, prof, gr, used, free, pod in (
               ("1", "3g.20gb", 0.9, 10000, 10000, {"pod": "train-a", "namespace": "ml"}),
               ("2", "2g.10gb", 0.5, 5000, 5000, {"pod": "train-b", "namespace": "ml"}),
               ("3", "1g.5gb", 0.1, 1000, 4000, {}))]
    whole = [({**m1, "gpu": "1", "UUID": U(2), "pod": "infer-a", "namespace": "ml"},
              {TEMP: 60, POWER: 300, UTIL: 40, FBU: 8000, FBF: 32000})]
    n2 = [({"node": "n2", "hostname": "n2", "gpu": str(g), "uuid": U(10 + g, True)},
           {TEMP: t, POWER: p, UTIL: u, FBU: 1000, FBF: 39000}) for g, t, p, u in ((0, 40, 100, 10), (1, 42, 120, 30))]
    n3 = [({"node": "n3", "Hostname": "n3", "gpu": str(g)}, {TEMP: t, POWER: p, UTIL: u, FBU: 2000, FBF: 38000})
          for g, t, p, u in ((0, 70, 400, 100), (1, 30, 50, 0))]
    n4 = [({"node": "n4", "Hostname": "n4", "gpu": "0", "UUID": U(20)}, {TEMP: 45, POWER: 150, UTIL: 20, FBU: 4000,
                                                                          FBF: 36000})]
    return [("10.0.1.5", "gpu-metrics", 0, mig + whole), ("10.0.2.5", "gpu-metrics", 3, n2),
            ("10.0.3.5", "gpu-metrics", 6, n3), ("10.0.4.5", "gpu-metrics", 9, n4),
            ("10.0.4.5", "dcgm-sm", 20, n4)]


def _series(start: int):
    out: dict[tuple, list] = {}
    for address, job, phase, gpus in fleet():
        for t in range(0, SPAN + 1, STEP):
            for own, values in gpus:
                for metric, value in values.items():
                    labels = tuple(sorted({"__name__": metric, "device": f"nvidia{own['gpu']}", "instance":
                                           f"{address}:9400", "job": job, "modelName": "NVIDIA L4", **own}.items()))
                    out.setdefault(labels, []).append((start + t + phase, str(value)))
    return out


shaped = written_fixture("fleet-stats-real-shapes", _series, SPAN, STEP)
STATS = ("GPUs reporting", "Average GPU utilization", "Average GPU temperature", "Total power draw", "Hottest GPU",
         "Framebuffer in use")



# the truth per GPU (temperature C, power W, utilization %, framebuffer used / (used + free)); the MIG GPU's
# utilization the mean of its instances' activity (90, 50, 10 %), its framebuffer its instances' (16,000 of 35,000 MiB)
GPUS = {"m1/0": (50, 250, 50, 16000 / 35000), "m1/1": (60, 300, 40, 8000 / 40000),
        "n2/0": (40, 100, 10, 1000 / 40000), "n2/1": (42, 120, 30, 1000 / 40000),
        "n3/0": (70, 400, 100, 2000 / 40000), "n3/1": (30, 50, 0, 2000 / 40000), "n4/0": (45, 150, 20, 4000 / 40000)}
HELD = {"train-a": ("m1/0",), "infer-a": ("m1/1",), "ml": ("m1/0", "m1/1")}  # the GPUs a pod or namespace holds


def _truth(gpus: list[tuple[float, ...]]) -> dict[str, float]:
    temps, watts, utils, used = zip(*gpus)
    return {"GPUs reporting": len(gpus), "Average GPU utilization": sum(utils) / len(gpus),
            "Average GPU temperature": sum(temps) / len(gpus), "Total power draw": sum(watts),
            "Hottest GPU": max(temps), "Framebuffer in use": sum(used) / len(gpus)}


@pytest.mark.parametrize("selected", [{}, {"node": "m1"}, {"node": "n2"}, {"node": "n3"}, {"node": "n4"},
                                      {"pod": "train-a"}, {"pod": "infer-a"}, {"namespace": "ml"}],
                         ids=lambda selected: ",".join(f"{k}={v}" for k, v in selected.items()) or "all")
def test_each_gpu_counts_once_whatever_its_shape(shaped, selected):
    """Each GPU once: the MIG GPU's three instances one GPU, n2's lowercase `uuid` GPUs, n3's GPUs without a UUID
    one per index, n4's GPU scraped through two jobs once; with All 7 GPUs, 35.7 %, 48.1 C, 1,370 W, 70 C, 13.0 %;
    each node, pod and namespace picked its own GPUs' values. Measured at 10, 20 and 29.8 minutes: as the truth."""
    prometheus, start = shaped
    panels = bundled_panels()
    (key, value), = selected.items() or (("", ""),)
    picked = [truth for gpu, truth in GPUS.items()
              if not key or (key == "node" and gpu.startswith(f"{value}/")) or gpu in HELD.get(value, ())]
    for at in (600, 1200, 1790):
        shown = {title: list(panel_at(prometheus, bundled_project(), panels[title], start + at, SPAN,
                                      **selected).values()) for title in STATS}
        assert shown == {title: [pytest.approx(value, rel=1e-9)] for title, value in _truth(picked).items()}, at

"""Two exporter pods reading one node's GPUs side by side (the old writing its own pod's name into Hostname, the new
the node into hostname), scraped every second by a real Prometheus (overlap_scene), a bundled panel's values over the
scene (shown_values) and the instants they differ from what is allowed (wrong_instants)."""

from __future__ import annotations

import math
from contextlib import contextmanager

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from tests.support.projects import bundled_panel
from tests.support.prometheus_server import SCENE_RANGE, scraped_every
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, scraped_until


BLANK = 9223372036854775794  # DCGM's int64 blank (not supported)
SCRAPES = 14
REAL_UTIL_SCRAPES = 6  # ml/z's GPU reads 70 % in this many of the old exporter's scrapes, then the blank in both
COMMON = 'modelName="NVIDIA A100-SXM4-80GB",DCGM_FI_DRIVER_VERSION="570.133.20"'
METRICS = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE",
           "DCGM_FI_DEV_GPU_TEMP")


def copy_payload(old: bool, scrape: int, blank: bool) -> str:
    node = 'Hostname="nvidia-dcgm-exporter-q8w2z"' if old else 'hostname="n3"'
    sliced = f"ts-{(scrape + (0 if old else 1)) % 2}"
    gpus = [  # (gpu, pod labels, (used, free, util, power, temp))
        (0, f'container="main",namespace="team-d",pod="{sliced}"',
         (10000, 70000, 40 if old else 44, 100 if old else 104, 60)),
        (1, "", (1000, 79000, 0, 60 if old else 64, 50)),
        (2, 'container="main",namespace="ml",pod="z"', (40000, 40000, BLANK if blank else 70, 200 if old else 204, 70)),
    ]
    lines = []
    for i, metric in enumerate(METRICS):
        lines.append(f"# TYPE {metric} gauge")
        for gpu, pod, values in gpus:
            device = f'gpu="{gpu}",UUID="GPU-n3-{gpu}",device="nvidia{gpu}"'
            labels = ",".join(x for x in (device, COMMON, node, pod) if x)
            lines.append(f"{metric}{{{labels}}} {values[i]:g}")
    return "\n".join(lines) + "\n"


@contextmanager
def overlap_scene(tmp_path_factory):
    """Both exporters scraped until each has SCRAPES - 1 samples stored (a loaded machine's scrape that timed out
    was answered and stored nothing); (prometheus, the instant from which both copies are stored (a loaded machine
    may scrape one first seconds after the other: before, one exporter alone read the node, not this story), the last
    sample, ml/z's utilization samples per copy)."""
    old = CountedAnswers(lambda n: copy_payload(True, n, n > REAL_UTIL_SCRAPES))
    new = CountedAnswers(lambda n: copy_payload(False, n, old.served > REAL_UTIL_SCRAPES))
    stored_counts: dict[str, int] = {}

    def count(prometheus) -> None:
        stored_counts.update({s["metric"]["instance"]: int(s["value"][1]) for s in prometheus.query(
            'count_over_time(DCGM_FI_DEV_GPU_TEMP{UUID="GPU-n3-1"}[10m])')})

    with ReplayExporter(old) as a, ReplayExporter(new) as b:
        with scraped_until(tmp_path_factory, "pod-copy-review", [a.address, b.address],
                       lambda: old.served >= SCRAPES and len(stored_counts) == 2
                       and min(stored_counts.values()) >= SCRAPES - 1, watch=count) as prometheus:
            firsts = {series["metric"]["instance"]: min(float(at) for at, _ in series["values"])
                      for series in prometheus.query('DCGM_FI_DEV_GPU_TEMP{UUID="GPU-n3-1"}[10m]')}
            stored = [float(at) for series in prometheus.query('DCGM_FI_DEV_GPU_TEMP[10m]')
                      for at, _ in series["values"]]
            util = {series["metric"]["instance"]: [(float(at), float(v)) for at, v in series["values"]]
                    for series in prometheus.query('DCGM_FI_DEV_GPU_UTIL{UUID="GPU-n3-2"}[10m]')}
            assert len(firsts) == 2, firsts
            yield prometheus, max(firsts.values()), max(stored), util


def shown_values(overlap, title: str, selected: dict | None = None, settings: str = "",
                 offset: float = 4.5) -> dict[float, dict[str, float]]:
    """The panel's lines at every second from `offset` s after the scene's first whole second: an instant panel's as
    Grafana reads it at the end of a dashboard's range ending at each (query_at's `instant`), a range panel's over a
    range ending at the scene's end."""
    prometheus, start, end, _ = overlap
    target = bundled_panel(title, settings)["targets"][0]
    expr = interpolate(scraped_every(target["expr"], 30, 1),
                       {**SCENE_RANGE, **variables(selected or {}, ("namespace", "pod", "node", "gpu"))})
    first = math.floor(start) + offset
    return {at: {render_legend(target["legendFormat"], s["metric"]): round(float(s["value"][1]), 4) for s in result}
            for at, result in prometheus.query_at(expr, first, int((end - first) // 1) + 1, 1,
                                                  instant=bool(target.get("instant"))).items()}


def wrong_instants(shown, allowed: dict[str, set[float]]) -> dict:
    return {at: values for at, values in shown.items()
            if set(values) != set(allowed) or any(values[k] not in allowed[k] for k in values)}

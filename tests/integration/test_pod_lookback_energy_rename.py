"""A pod's energy use rate (a counter's rate, per pod) across an exporter upgrade that renames the node (the old
exporter writes its own pod's name into `Hostname`, the new one `hostname` = the node), on a real Prometheus scraping
every second. DCGM's energy counter is the GPU's (mJ since the driver loaded): both exporters read the same counter,
so the GPU's rate is one GPU's, whichever exporter is read.

- ml/r holds n6's GPU (UUID GPU-n6-0, 200 W) while both exporters run (a rollout with maxSurge);
- ml/s holds n7's GPU (GPU-n7-0, 100 W) across a rollout without overlap: the old exporter for OLD_SCRAPES scrapes,
  then the new one.

At d468274 (the gauges' GPU became its UUID; this counter panel still joins on node and index): ml/r reads
~400,000 mW for the whole overlap, its GPU counted under the old exporter's pod name and under n6.
"""

from __future__ import annotations

import math
import time

import pytest

from generator.model import Query
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from generator.promql import expression
from tests.support.copy_choice_scene import counter_growth
from tests.support.prometheus_server import SCENE_RANGE, counted_inline, scraped_every
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, lookback_panel, scraped_until

OLD_SCRAPES = 8
WATTS = {"GPU-n6-0": 200.0, "GPU-n7-0": 100.0}
XID = {"GPU-n6-0": 79, "GPU-n7-0": 0}  # the last XID code each GPU reported (a gauge)
ORIGIN = time.time() - 1000


def _payload(uuid: str, node: str, pod: str) -> str:
    labels = (f'gpu="0",UUID="{uuid}",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",{node},'
              f'DCGM_FI_DRIVER_VERSION="570.133.20",container="main",namespace="ml",pod="{pod}"')
    # the counter stamped with the instant it was read (as DCGM reads it, not when Prometheus began the scrape): a
    # scrape answered late on a loaded machine would otherwise put a later reading at the scrape's start, and a rate
    # over a 4 s window would read it as a faster counter (152,000 to 262,000 mW seen for 200,000)
    now = time.time()
    energy = round((now - ORIGIN) * WATTS[uuid] * 1000)  # mJ, as DCGM counts
    return (f"# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} "
            f"{energy} {int(now * 1000)}\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{{{labels}}} 60\n"
            f"# TYPE DCGM_FI_DEV_XID_ERRORS gauge\nDCGM_FI_DEV_XID_ERRORS{{{labels}}} {XID[uuid]}\n")


@pytest.fixture(scope="module")
def renamed(tmp_path_factory):
    before = CountedAnswers(lambda n: _payload("GPU-n7-0", 'Hostname="nvidia-dcgm-exporter-a1b2c"', "s")
                      if n <= OLD_SCRAPES else "")
    exporters = [ReplayExporter(lambda: _payload("GPU-n6-0", 'Hostname="nvidia-dcgm-exporter-x7k2p"', "r")),
                 ReplayExporter(lambda: _payload("GPU-n6-0", 'hostname="n6"', "r")), ReplayExporter(before),
                 ReplayExporter(lambda: "" if before.served <= OLD_SCRAPES else
                                _payload("GPU-n7-0", 'hostname="n7"', "s"))]
    with exporters[0], exporters[1], exporters[2], exporters[3]:
        with scraped_until(tmp_path_factory, "pod-energy-rename", [e.address for e in exporters],
                       lambda: before.served >= OLD_SCRAPES + 10) as prometheus:
            # from the instant every exporter there from the start is stored (n6's two, n7's old one) to the last
            # instant every exporter there to the end is (n6's two, n7's new one): a loaded machine scrapes one
            # first, or last, a second or more apart from the others, and n6's story is its two copies throughout
            stored = {series["metric"]["instance"]: [float(at) for at, _ in series["values"]]
                      for series in prometheus.query('DCGM_FI_DEV_GPU_TEMP[10m]')}
            assert len(stored) == 4, stored
            yield (prometheus, max(min(stored[e.address]) for e in exporters[:3]),
                   min(max(stored[e.address]) for e in (*exporters[:2], exporters[3])),
                   [stored[e.address] for e in exporters[:2]])


def test_a_pods_energy_rate_across_an_exporter_upgrade_renaming_the_node_counts_its_gpu_once(renamed):
    prometheus, start, end, n6 = renamed
    target, expr = lookback_panel("", "Energy use rate of each pod's GPUs")
    expr = expr.replace("$__rate_interval", "4s")
    first = math.floor(start) + 6.5
    shown = {round(at - first, 1): {render_legend(target["legendFormat"], s["metric"]): round(float(s["value"][1]), 1)
                                    for s in result}
             for at, result in prometheus.query_at(expr, first, int((end - first) // 1) + 1, 1).items()}
    # the panel reads mJ/s (mW): ml/r's GPU draws 200 W, 200,000 mW, as its stored readings grew over the seconds
    # between their stamps (an answer up to a scrape late reads a window up to ~25 % off 200,000: counter_growth)
    truth = _truth(prometheus, "GPU-n6-0", first, shown)
    wrong = {at: (values.get("Pod ml/r"), truth[at]) for at, values in shown.items()
             if truth[at] is None or abs(values.get("Pod ml/r", 0) - truth[at]) > 2}
    assert not wrong, f"seconds: (ml/r shown, true) {wrong}"
    assert all(abs(value - 200000) <= 60000 for value in truth.values()), truth  # the readings' own growth
    # ml/s's GPU across its rollout without overlap (n7's old exporter, then its new one): 100 W
    truth = _truth(prometheus, "GPU-n7-0", first, shown)
    wrong = {at: (values.get("Pod ml/s"), truth[at]) for at, values in shown.items()
             if truth[at] is None or abs(values.get("Pod ml/s", 0) - truth[at]) > 2}
    assert not wrong, f"seconds: (ml/s shown, true) {wrong}"


def _truth(prometheus, uuid: str, first: float, shown: dict[float, dict]) -> dict[float, float | None]:
    """{seconds after the first step: the GPU's energy rate over the step's 4 s window}, from the readings its copies
    stored, one counter read one copy after the other (test_copy_choice_hostile._grown: an exporter reads the counter
    when it answers, Prometheus stamps the sample when it asks)."""
    readings = sorted((float(at), float(value)) for series in prometheus.query(
        f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{UUID="{uuid}"}}[10m]') for at, value in series["values"])
    return {at: counter_growth(readings, math.floor(first + at), 4) for at in shown}


def _shown(prometheus, legend_format: str, expr: str, start: float, end: float,
           n6: list[list[float]]) -> dict[float, dict[str, list[float]]]:
    """{seconds after the first step: {legend: [values]}} at each second of the scrapes (a legend twice: two lines)
    at which both of n6's copies were read within the second before (the story; on a loaded machine a scrape that
    timed out marks its copy stale, and the GPU is then named by the one copy there is)."""
    first = math.floor(start) + 6.5
    shown: dict[float, dict[str, list[float]]] = {}
    for at, result in prometheus.query_at(expr, first, int((end - first) // 1) + 1, 1).items():
        if not all(any(at - 1 <= when <= at for when in times) for times in n6):
            continue
        lines = shown.setdefault(round(at - first, 1), {})
        for series in result:
            lines.setdefault(render_legend(legend_format, series["metric"]), []).append(float(series["value"][1]))
    assert len(shown) >= 5, shown
    return shown


def test_the_per_gpu_energy_panel_draws_a_renamed_gpu_once_named_by_its_node(renamed):
    """Before: `n6 GPU 0` and `nvidia-dcgm-exporter-x7k2p GPU 0` each ~200,000 mW for one GPU drawing 200 W (the
    counter's copies merged per node spelling)."""
    prometheus, start, end, n6 = renamed
    target, expr = lookback_panel("", "DEV_TOTAL_ENERGY_CONSUMPTION")
    shown = _shown(prometheus, target["legendFormat"], expr.replace("$__rate_interval", "4s"), start, end, n6)
    truth = _truth(prometheus, "GPU-n6-0", math.floor(start) + 6.5, shown)
    n6 = {at: (lines, truth[at]) for at, lines in shown.items()
          if set(lines) - {"n7 GPU 0", "nvidia-dcgm-exporter-a1b2c GPU 0"} != {"n6 GPU 0"}
          or len(lines["n6 GPU 0"]) != 1 or truth[at] is None or abs(lines["n6 GPU 0"][0] - truth[at]) > 2}
    assert not n6, f"seconds: (lines shown, n6's GPU's rate as its readings grew, ~200,000 mW) {n6}"
    # n7's GPU (no overlap): one line at every step, by the old exporter's pod name until the new one reads it
    n7 = {at: lines for at, lines in shown.items()
          if sum(len(lines.get(name, ())) for name in ("n7 GPU 0", "nvidia-dcgm-exporter-a1b2c GPU 0")) != 1}
    assert not n7, f"seconds: n7's GPU not one line: {n7}"


def test_a_fleet_sum_of_energy_rates_counts_a_renamed_gpu_once(renamed):
    """The fleet's energy use rate (a sum over GPUs of a counter's rate): n6's GPU (200 W) and n7's (100 W), 300,000
    mW. Before: ~500,000 while both of n6's exporters ran."""
    prometheus, start, end, n6 = renamed
    project = load_project()
    query = Query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "sum")
    expr = scraped_every(counted_inline(expression(query, project.settings.labels, project.catalog, rate_window="4s",
                                                   resolution="30s"), project), 30, 1)
    shown = _shown(prometheus, "fleet", interpolate(expr, {**SCENE_RANGE, **variables({}, ())}), start, end, n6)
    values = {at: lines.get("fleet", [0])[0] for at, lines in shown.items()}
    # each GPU's rate as its stored readings grew (n6's two copies, n7's one after the other): neither GPU is lost or
    # read twice at any step
    gpu6, gpu7 = (_truth(prometheus, uuid, math.floor(start) + 6.5, shown) for uuid in ("GPU-n6-0", "GPU-n7-0"))
    wrong = {at: (value, gpu6[at], gpu7[at]) for at, value in values.items()
             if gpu6[at] is None or gpu7[at] is None or abs(value - gpu6[at] - gpu7[at]) > 4}
    assert not wrong, f"seconds: the fleet's energy rate (shown, n6's, n7's) {wrong}"


def test_the_last_xid_panel_draws_a_renamed_gpu_once_named_by_its_node(renamed):
    """The XID panel (a gauge: the last code) across the same upgrade: n6's GPU one line, `n6 GPU 0` 79."""
    prometheus, start, end, n6 = renamed
    target, expr = lookback_panel("", "Last XID error code")
    shown = _shown(prometheus, target["legendFormat"], expr, start, end, n6)
    wrong = {at: lines for at, lines in shown.items()
             if set(lines) - {"n7 GPU 0", "nvidia-dcgm-exporter-a1b2c GPU 0"} != {"n6 GPU 0"}
             or lines["n6 GPU 0"] != [79.0]}
    assert not wrong, f"seconds: lines shown where n6's GPU's last XID is 79: {wrong}"

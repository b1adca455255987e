"""A counters CSV typing DCGM's running totals `gauge`, with help text that does not say they are totals, is charted as
the correctly typed CSV charts them: their growth per second, on a real Prometheus.

What a field's readings are comes from gpudash's catalog of DCGM's fields (generator/defaults/dcgm-fields.txt), not from
the CSV's type or words: DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION is the energy since the driver loaded, in mJ, whatever a
CSV calls it. Read as a level, the energy panel charted the mJ since the driver loaded (5.2e11 for a GPU 20 days at
300 W) and the PCIe replays panel the replays since boot.

One GPU, an hour of 30 s scrapes (the exporter serving both fields typed gauge, as such a CSV has it): the energy
grows at 300 W (300,000 mJ a second) from 5.2e11 mJ, the PCIe replays by 2 a scrape from 1,000.
"""

from __future__ import annotations

import re

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from tests.support.projects import counters_retyped, panels_of
from tests.support.prometheus_server import SCENE_RANGE, backfilled, counted_inline

STEP, SCRAPES, OFFSET = 30, 120, 15
NODE = "gpu-node-1"
ENERGY, REPLAYS = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
NEUTRAL = {ENERGY: "Energy (in mJ).", REPLAYS: "PCIe replays."}
WATTS = 300.0
START_MJ, START_REPLAYS, REPLAYS_PER_SCRAPE = 5.2e11, 1000, 2
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")


def _mistyped(folder) -> str:
    """The bundled CSV with the energy and PCIe replay lines typed gauge, their help text saying nothing of a total."""
    return counters_retyped(folder, {name: f"gauge, {help}" for name, help in NEUTRAL.items()})


def _reading(name: str, k: int) -> float:
    seconds = OFFSET + k * STEP
    return START_MJ + WATTS * 1000 * seconds if name == ENERGY else START_REPLAYS + REPLAYS_PER_SCRAPE * k


def _openmetrics(start: int) -> str:
    labels = f'gpu="0",UUID="GPU-0",device="nvidia0",modelName="NVIDIA H100",Hostname="{NODE}",node="{NODE}",' \
             'job="dcgm-exporter",namespace="ml",pod="train-0"'
    lines = []
    for name in (ENERGY, REPLAYS):
        lines.append(f"# TYPE {name} gauge")  # as the exporter serves a field the CSV types gauge
        lines += [f"{name}{{{labels}}} {_reading(name, k)!r} {start + OFFSET + k * STEP}" for k in range(SCRAPES)]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mistyped")
    project = load_project(_mistyped(folder))
    with backfilled(folder, _openmetrics, SCRAPES * STEP, STEP) as (prometheus, start):
        yield project, prometheus, start


def _panel(project, title: str) -> dict:
    return next(p for p in panels_of(grafana_dashboards(project), "gpudash-all-metrics") if p.get("title") == title)


def _shown(prometheus, panel: dict, start: int, project) -> dict[str, list[float]]:
    """{legend line: values} of the panel over minutes 5 to 55, a point a minute."""
    (target,) = panel["targets"]
    expr = interpolate(counted_inline(target["expr"], project),
                       {**SCENE_RANGE, "__rate_interval": "2m", "__interval": "1m", **variables({}, VARIABLES)})
    result = prometheus.api("query_range", query=expr, start=start + 300, end=start + 3300, step=60)["result"]
    return {render_legend(target["legendFormat"], s["metric"]): [float(v) for _, v in s["values"]] for s in result}


@pytest.mark.parametrize("title, unit, per_second", [
    ("DEV_TOTAL_ENERGY_CONSUMPTION", "mwatt", WATTS * 1000),  # mJ a second: mW
    ("DEV_PCIE_REPLAY_COUNTER", "cps", REPLAYS_PER_SCRAPE / STEP),
])
def test_each_mistyped_running_total_is_charted_as_its_growth_per_second(scene, title, unit, per_second):
    project, prometheus, start = scene
    panel = _panel(project, title)
    assert panel["fieldConfig"]["defaults"]["unit"] == unit
    (values,) = _shown(prometheus, panel, start, project).values()
    assert values and all(value == pytest.approx(per_second, rel=1e-6) for value in values), values
    # and its query is the correctly typed CSV's
    bundled = _panel(load_project(), title)
    assert re.sub(r"\s+", " ", panel["targets"][0]["expr"]) == re.sub(r"\s+", " ", bundled["targets"][0]["expr"])

"""A level (a temperature, a power draw, a clock, a share, memory in use) typed counter in the counters CSV.

The exporter serves such a field as the CSV types it (`# TYPE ... counter`), and the CloudWatch agent turns a counter
into its differences; its readings are still levels. gpudash reads it as a gauge the exporter serves as a counter
(catalog.Metric.retyped), as it reads DCGM's health status: the OTel pipeline makes it a gauge again before awsemf, and
agent.pipeline: classic, which cannot, is refused at generate. It read the CSV's type: a board's power draw typed
counter was charted as its rate of change (0.76 for 100 W), and the GPU temperature typed counter failed generate
with a message about cloudwatch.gpu_dimensions, which the settings did not write.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.catalog import parse_counters
from generator.errors import InputError
from generator.limits import checked_build
from generator.output import encode
from generator.project import load_project
from generator.render.cloudwatch import panel_title
from generator.resources import default_counters
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.cloudwatch_widgets import assert_shows, panel, widgets
from tests.support.dcgm_fleet import STEP, scrapes, truth

LEVELS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE")
START, END = 0, 2100
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"


def _counters(tmp_path) -> str:
    """The bundled CSV with the GPU temperature and power draw typed counter."""
    lines = [line.replace("gauge", "counter") if line.startswith(tuple(f"{name}," for name in LEVELS)) else line
             for line in default_counters().read_text().splitlines()]
    (tmp_path / "counters.csv").write_text("\n".join(lines) + "\n")
    return "counters: counters.csv\n"


def test_a_level_typed_counter_is_a_gauge_the_exporter_serves_as_a_counter():
    catalog = parse_counters(
        "DCGM_FI_DEV_GPU_TEMP, counter, GPU temperature (in C).\n"
        "DCGM_FI_DEV_POWER_USAGE, counter, Power draw (in W).\n"
        "DCGM_FI_DEV_SM_CLOCK, counter, SM clock frequency (in MHz).\n"
        "DCGM_FI_DEV_GPU_UTIL, counter, GPU utilization (in %).\n"
        "DCGM_FI_DEV_FB_USED, counter, Framebuffer memory used (in MiB).\n"
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, Total number of PCIe retries.\n"
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in mJ).\n"
        "DCGM_FI_DEV_POWER_VIOLATION, counter, Throttling duration due to power constraints (in ns).\n",
        source="counters.csv")
    read = {metric.name: (metric.kind, metric.exported_kind, metric.retyped) for metric in catalog}
    levels = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_UTIL",
              "DCGM_FI_DEV_FB_USED")
    assert {name: read[name] for name in levels} == {name: ("gauge", "counter", True) for name in levels}
    assert {name: kind for name, kind in read.items() if name not in levels} == {
        name: ("counter", "counter", False) for name in ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
                                                          "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                                                          "DCGM_FI_DEV_POWER_VIOLATION")}


def test_on_the_otel_pipeline_every_widget_on_them_reads_the_level(tmp_path):
    (tmp_path / "gpudash.yaml").write_text(_counters(tmp_path))
    project = load_project(tmp_path / "gpudash.yaml", tmp_path / "counters.csv")
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    datapoints = Agent(config, job).run(scrapes(job, project.catalog, -1, END // STEP - 1))
    assert "# TYPE DCGM_FI_DEV_POWER_USAGE counter" in scrapes(job, project.catalog, 0, 0)[0].payload
    checked = 0
    for path, properties in widgets(files):
        title = panel_title(properties["title"])
        query = panel(project, path, title, "gpu-cluster").queries[0]
        if query.metric not in LEVELS:
            continue
        shown = cloudwatch_eval.widget(properties, datapoints, START, END)
        start, period = cloudwatch_eval.widget_range(properties, START, END)
        expected = {(label or title): series
                    for label, series in truth(query, project.catalog.get(query.metric), start, END, period).items()}
        assert_shows(shown, expected, title)
        checked += 1
    assert checked >= 8


def test_agent_pipeline_classic_which_would_publish_their_differences_is_refused_naming_why(tmp_path):
    (tmp_path / "gpudash.yaml").write_text(_counters(tmp_path) + "agent:\n  pipeline: classic\n")
    project = load_project(tmp_path / "gpudash.yaml", tmp_path / "counters.csv")
    with pytest.raises(InputError) as refused:
        checked_build(project)
    assert "agent.pipeline: classic" in refused.value.what and "gpu-temp-critical" in refused.value.what
    assert "(AL016, CW018)" in refused.value.hint

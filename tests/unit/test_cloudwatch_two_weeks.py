"""A CloudWatch widget's Metrics Insights query reads the latest two weeks only: an increase over a longer time range
counts its latest two weeks.

The user guide's Metrics Insights quotas: "Query up to two weeks of data for visualization in your metrics, widgets,
and alarm graphs" (its troubleshooting page: graphed over a longer range, the oldest point holds only what lies within
the two weeks). "Rows remapped (uncorrectable)" draws one bar per GPU over the whole time range (setPeriodToTimeRange,
"Rows remapped after uncorrectable memory errors during the selected time range"). One GPU, scraped for ten minutes
20 days and 2 days before the end of a 30-day range, a row remapped in each (the build's own agent config, both
pipelines, through the agent models; the widget drawn as CloudWatch documents, tests/support/cloudwatch_eval): the
bar reads 1 for the 2 rows of the range. Nothing a widget's query can write reads further back, so the truth is pinned
(strict xfail) and the dashboard's header says it (render.cloudwatch.periods_note); within two weeks the bar is right.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from generator.render.cloudwatch import WHOLE_RANGE_HORIZON
from tests.integration.test_shared_gpu_full_twins import EXPORTER_POD, NODE
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header
from tests.support.dcgm_fleet import discovered

DAY, STEP = 86400, 30
END = 30 * DAY
BURSTS = (END - 20 * DAY, END - 2 * DAY)  # ten minutes of scrapes each, a row remapped at the sixth minute
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
PAGE = "cloudwatch/dashboards/gpudash-gpu-cluster-health.json"
TITLE = "Rows remapped (uncorrectable)"
GPU = (f'gpu="0",UUID="GPU-4c1d",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="{NODE}",'
       f'DCGM_FI_DRIVER_VERSION="550.90.07"')


def _scrapes(target: dict[str, str]) -> list[Scrape]:
    scrapes = []
    for n, burst in enumerate(BURSTS):
        for k in range(20):
            rows = n + (k >= 12)
            scrapes.append(Scrape(float(burst + k * STEP),
                                  f"# TYPE DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS counter\n"
                                  f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{GPU}}} {rows}\n"
                                  f"# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{{{GPU}}} 50\n", target))
    return scrapes


@pytest.fixture(scope="module", params=["otel", "classic"])
def drawn(request, tmp_path_factory) -> tuple[dict[str, bytes], dict, list]:
    folder = tmp_path_factory.mktemp(request.param)
    (folder / "gpudash.yaml").write_text(f"agent:\n  pipeline: {request.param}\n")
    files = encode(build(load_project(folder / "gpudash.yaml"), grafana=False))
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run(_scrapes(discovered(job, EXPORTER_POD)))
    (properties,) = [w["properties"] for w in json.loads(json.loads(files[PAGE])["DashboardBody"])["widgets"]
                     if w["type"] == "metric" and w["properties"]["title"] == TITLE]
    return files, properties, points


def _bar(properties: dict, points: list, days: int) -> float:
    """The GPU's bar over the `days` before END, drawn a minute after it."""
    (series,) = cloudwatch_eval.widget(properties, points, END - days * DAY, END, now=END + 60).values()
    (value,) = series.values()
    return value


def test_the_header_says_a_longer_range_counts_its_latest_two_weeks(drawn):
    files, _, _ = drawn
    assert WHOLE_RANGE_HORIZON in header(files, PAGE), header(files, PAGE)


def test_within_two_weeks_the_bar_counts_the_range(drawn):
    _, properties, points = drawn
    assert _bar(properties, points, 7) == 1
    assert _bar(properties, points, 14) == 1


@pytest.mark.xfail(strict=True, reason="Metrics Insights reads a widget's latest two weeks only: the row remapped 20 "
                   "days back is not in a 30-day range's bar (the header says so, WHOLE_RANGE_HORIZON)")
def test_a_30_day_range_counts_both_rows(drawn):
    _, properties, points = drawn
    assert _bar(properties, points, 30) == 2


def test_the_model_reads_the_older_row_in_a_metric_line(drawn):
    """The horizon is Metrics Insights' own: the same GPU's metric line (a MetricStat) over the 30 days has both rows
    (so the strict xfail above fails for the horizon, not for a row the agent model lost)."""
    _, _, points = drawn
    (dims,) = {p.dimensions for p in points if p.metric == "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
               and {"node", "gpu"} <= set(p.dims()) and "pod" not in p.dims()}
    line = {"metrics": [["ContainerInsights/Prometheus", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                         *[part for pair in dims for part in pair], {"id": "m1", "stat": "Sum"}]],
            "period": 300, "setPeriodToTimeRange": True}
    (series,) = cloudwatch_eval.widget(line, points, 0, END, now=END + 60).values()
    assert list(series.values()) == [2]

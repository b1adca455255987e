"""Counter-rate panels are full whatever the data source's scrape interval says. Grafana works `$__rate_interval`
out as max($__interval + s, 4 s), s the panel's min interval when it has one, else the data source's scrape
interval (15 s unless someone set it). With 60 s scrapes and no min interval that gave rate(x[60s:60s]): two
readings only at instants on the 60 s grid, two points in three empty. Every panel that uses `$__rate_interval`
carries the scrape interval as its min interval, and on a real Prometheus holding one GPU's 60 s scrapes each
point of a 6-hour chart has its value."""

from __future__ import annotations

import math

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.project import load_project
from tests.support.prometheus_server import backfilled as backfilled_prometheus

SCRAPE = 60
HOURS = 8
REPLAYS = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
PER_SECOND = 0.1  # 6 replays a scrape
DATA_SOURCE_DEFAULT = 15.0  # Grafana's scrape interval for a Prometheus data source that does not set one


def _openmetrics(start: int) -> str:
    labels = 'gpu="0",UUID="GPU-0",device="nvidia0",modelName="NVIDIA H100",Hostname="node-a",node="node-a"'
    lines = [f"# TYPE {REPLAYS} gauge"]
    lines += [f'{REPLAYS}{{{labels},job="dcgm-exporter"}} {k * SCRAPE * PER_SECOND:.0f} {start + 7 + k * SCRAPE}'
              for k in range(HOURS * 3600 // SCRAPE)]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    with backfilled_prometheus(tmp_path_factory.mktemp("rate-interval"), _openmetrics, HOURS * 3600, SCRAPE) as up:
        yield up


def _rate_interval(panel: dict, step: float) -> float:
    """Grafana's $__rate_interval for the panel at this step ($__interval, the panel's min interval or the data
    source's scrape interval)."""
    scrape = float(panel["interval"].rstrip("s")) if panel.get("interval") else DATA_SOURCE_DEFAULT
    return max(max(step, scrape) + scrape, 4 * scrape)


def test_a_counter_rate_panel_has_a_value_at_every_point_with_60s_scrapes(backfilled, tmp_path):
    prometheus, start = backfilled
    settings = tmp_path / "gpudash.yaml"
    settings.write_text(f"scrape:\n  interval: {SCRAPE}s\n")
    project = load_project(settings)
    health = next(d for d in grafana_dashboards(project) if d.uid == "gpudash-health")
    (panel,) = [p for p in health.model["panels"] if p.get("title") == "PCIe replays"]
    (target,) = panel["targets"]
    assert "$__rate_interval" in target["expr"] and panel.get("interval") == f"{SCRAPE}s"
    step, first = 20.0, start + 3600
    count = int(6 * 3600 / step)
    for interval_panel, full in ((panel, True), ({**panel, "interval": None}, False)):  # with, and as it was
        window = _rate_interval(interval_panel, step)
        expr = interpolate(target["expr"], {"__rate_interval": f"{window:.0f}s", "__range": "21600s",
                                            **variables({}, ("namespace", "pod", "node", "gpu", "cluster"))})
        shown = prometheus.query_at(expr, first, count, step)
        filled = [t for t, result in shown.items() if result]
        if full:
            assert len(filled) == count, (window, len(filled), count)
            assert all(math.isclose(float(r["value"][1]), PER_SECOND, rel_tol=1e-6) for res in shown.values()
                       for r in res)
        else:  # the data source's 15 s: the gaps the min interval closes
            assert len(filled) < count * 0.5, (window, len(filled), count)

"""The last XID code on the dashboards when a GPU's code changes to a lower one, on a real Prometheus.

Exporters from 3.3.6 on write `DCGM_FI_DEV_XID_ERRORS` with `err_code` and `err_msg` labels (dcgm-exporter #309), so
each new code starts a new series and the old one ends. Codes do not only rise: XID 45 ("preemptive cleanup, due to
previous errors", DCGM #235's payload) follows the error that caused it, 48 or 79 or 119. Half an hour of 30 s
scrapes of one H100 is backfilled: code 0 until scrape 20, 119 (GSP RPC timeout) from scrape 20, 79 (fallen off the
bus) from scrape 40. A scraping Prometheus would mark the 119 series stale at scrape 40; the panels' windows are range
reads, which pass over staleness markers, so the backfill reads as a scraped history does.

Truth: "Last XID error code" (and the all-metrics panel of the field) shows the code of the GPU's latest reading, 79
from scrape 40 on. Taking the largest code of the series in the panel's look-back, as the panels did, showed 119 for
the next 90 s; a GPU's err_code series are now chosen among as its copies are (catalog.FIELD_LABELS' "latest").
tests/integration/test_xid_code_latest_live.py reads the messier stories on live scrapes.
"""

from __future__ import annotations

import pytest

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from tests.support.messy_history import Series, openmetrics
from tests.support.projects import defined_project
from tests.support.prometheus_server import SCENE_RANGE, backfilled_fixture
from tests.support.range_panels import VARIABLES, bundled_at
from tests.support.xid_codes import GROUPED, grouped_target

STEP, SCRAPES, OFFSET = 30, 60, 15
XID = "DCGM_FI_DEV_XID_ERRORS"
CODES = ((0, 0, "No Error"), (20, 119, "GSP RPC Timeout"), (40, 79, "GPU has fallen off the bus"))
LABELS = ('gpu="0",UUID="GPU-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",job="dcgm-exporter",'
          'container="main",namespace="ml",pod="train-0"')


def _code_at(k: int) -> tuple[int, str]:
    return next((code, text) for since, code, text in reversed(CODES) if k >= since)


def _openmetrics(start: int) -> str:
    series: Series = {}
    for k in range(SCRAPES):
        code, text = _code_at(k)
        series.setdefault((XID, f'{LABELS},err_code="{code}",err_msg="{text}"'), []).append(
            (start + OFFSET + k * STEP, str(code)))
    return openmetrics(series)


prometheus = backfilled_fixture("xid-code-falls", _openmetrics, SCRAPES * STEP, STEP)


@pytest.mark.parametrize("title", ["Last XID error code", "DEV_XID_ERRORS"])
def test_the_last_xid_code_is_the_latest_reading_when_the_code_falls(prometheus, title):
    server, start = prometheus
    shown = {k: bundled_at(server, title, start + OFFSET + k * STEP + 1) for k in range(36, 48)}
    assert shown == {k: {"n1 GPU 0": _code_at(k)[0]} for k in range(36, 48)}


@pytest.fixture(scope="module")
def grouped(tmp_path_factory):
    return defined_project(tmp_path_factory.mktemp("xid-codes"), dashboards=GROUPED)


def _grouped_at(server, project, title: str, at: float) -> dict[str, float]:
    target = grouped_target(project, title)
    expr = interpolate(target["expr"], {**SCENE_RANGE, **variables({}, VARIABLES)})
    return {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in server.query(expr, at=at)}


def test_a_node_shows_the_latest_code_when_the_code_falls(prometheus, grouped):
    server, start = prometheus
    shown = {k: _grouped_at(server, grouped, "XID code by node", start + OFFSET + k * STEP + 1) for k in range(36, 48)}
    assert shown == {k: {"n1": _code_at(k)[0]} for k in range(36, 48)}


def test_a_pod_shows_the_latest_code_when_the_code_falls(prometheus, grouped):
    server, start = prometheus
    shown = {k: _grouped_at(server, grouped, "XID code by pod", start + OFFSET + k * STEP + 1) for k in range(36, 48)}
    assert shown == {k: {"Pod ml/train-0": _code_at(k)[0]} for k in range(36, 48)}

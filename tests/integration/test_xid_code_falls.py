"""The last XID code on the dashboards when a GPU's code changes to a lower one, on a real Prometheus.

Exporters from 3.3.6 on write `DCGM_FI_DEV_XID_ERRORS` with `err_code` and `err_msg` labels (dcgm-exporter #309), so
each new code starts a new series and the old one ends. Codes do not only rise: XID 45 ("preemptive cleanup, due to
previous errors", DCGM #235's payload) follows the error that caused it, 48 or 79 or 119. Half an hour of 30 s
scrapes of one H100 is backfilled: code 0 until scrape 20, 119 (GSP RPC timeout) from scrape 20, 79 (fallen off the
bus) from scrape 40. A scraping Prometheus would mark the 119 series stale at scrape 40; the panels' windows are range
reads, which pass over staleness markers, so the backfill reads as a scraped history does.

Truth: "Last XID error code" (and the all-metrics panel of the field) shows the code of the GPU's latest reading, 79
from scrape 40 on. Taking the largest code of the series in the panel's look-back (the way the GPU's value is made
of the field's series) shows 119 for the next 90 s.
"""

from __future__ import annotations

import pytest

from tests.support.messy_history import Series, openmetrics
from tests.support.prometheus_server import backfilled_fixture
from tests.support.range_panels import bundled_at

STEP, SCRAPES, OFFSET = 30, 60, 15
XID = "DCGM_FI_DEV_XID_ERRORS"
CODES = ((0, 0, "No Error"), (20, 119, "GSP RPC Timeout"), (40, 79, "GPU has fallen off the bus"))
LABELS = 'gpu="0",UUID="GPU-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",job="dcgm-exporter"'


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


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="a GPU's XID code is the largest of its err_code series in the look-back, not "
                   "its latest reading: after 119, code 79 shows as 119 for 90 s")
@pytest.mark.parametrize("title", ["Last XID error code", "DEV_XID_ERRORS"])
def test_the_last_xid_code_is_the_latest_reading_when_the_code_falls(prometheus, title):
    server, start = prometheus
    shown = {k: bundled_at(server, title, start + OFFSET + k * STEP + 1) for k in range(36, 48)}
    assert shown == {k: {"n1 GPU 0": _code_at(k)[0]} for k in range(36, 48)}

"""DCGM_EXP_XID_ERRORS_TOTAL across an exporter rollout on one GPU, on a real Prometheus.

Node n1's GPU 0 (ml/train-0) is read by the old exporter (`Hostname`, instance 10.0.0.1) until scrape 104 and by the
new one (`hostname`, instance 10.0.0.7) from scrape 95 on: both run over scrapes 95 to 104 and see the errors then
alike. Each counts since it started, so the new one's series of a code begins at its first XID of that code. The range
is the last 20 minutes (scrapes 80 to 119).

Truth in the range: XID 79 at scrapes 85, 88, 97, 100, 108 and 115, XID 13 at 92, 110 and 113: 9 errors. A series'
first sample is no increase (pinned in test_xid_errors_total.py, said by lint DF003): the new exporter's first XID 13
(110) is uncounted; its first XID 79 (97) the old exporter counts. So the panels read 8: each code's errors once,
whichever exporter counted them (100, seen by both, once), the codes added up.
"""

from __future__ import annotations

from tests.integration.test_xid_errors_total import FIELD, OFFSET, SCRAPES, STEP
from tests.integration.test_xid_errors_total import shown  # noqa: F401 - its panels, on this module's Prometheus
from tests.support.messy_history import Series, openmetrics
from tests.support.prometheus_server import backfilled_fixture

# (node label, instance, scrapes it runs, {code: the scrapes of its errors}), the new exporter's counting from 0
COPIES = [("Hostname", "10.0.0.1:9400", range(0, 105), {"79": (2, 85, 88, 97, 100), "13": (3, 92)}),
          ("hostname", "10.0.0.7:9400", range(95, SCRAPES), {"79": (97, 100, 108, 115), "13": (110, 113)})]


def _openmetrics(start: int) -> str:
    series: Series = {}
    for spelling, instance, scrapes, codes in COPIES:
        labels = (f'gpu="0",UUID="GPU-n1-0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",{spelling}="n1",'
                  f'job="dcgm-exporter",instance="{instance}",container="main",namespace="ml",pod="train-0"')
        for code, seen in codes.items():
            series[(FIELD, f'{labels},xid="{code}"')] = [
                (start + OFFSET + k * STEP, str(sum(s <= k for s in seen))) for k in scrapes if k >= min(seen)]
    return openmetrics(series)


prometheus = backfilled_fixture("xid-errors-total-rollout", _openmetrics, SCRAPES * STEP, STEP)


def test_each_error_counts_once_whichever_exporter_counted_it(shown):
    assert (shown["per GPU"], shown["per pod"], shown["fleet"]) == \
        ({"n1 GPU 0": 8.0}, {"Pod ml/train-0": 8.0}, {FIELD: 8.0}), shown

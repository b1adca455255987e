"""A counter's increase over the dashboard's range counts a change at the range's first scrape when the step that
reads it also reads a scrape taken just before the range, on a real Prometheus (Debian's 2.42).

The panel is made for 30 s scrapes (`scrape.interval`); its first step after `from` reads every scrape taken within
the 30 s before it. Two fleets put a scrape before `from` and one after it into that step:
- a Prometheus scraping every 15 s (faster than the interval the panel is made for: a second Prometheus, or a
  ServiceMonitor's own interval);
- two copies of one GPU (an exporter replaced: a new `instance`) scraped 10 s apart, one copy's last scrape before
  `from` and the other's first after it in one step.
The counter reads 7, then 8 from its first scrape in the range: the bar's truth is 1, as the sum of the agent's
deltas of the range's scrapes is. A GPU scraped every 30 s whose first step reads only the range's scrape is the
anchor. Before: the step holding the scrape before `from` was left out whole, and with it the change (0 for 1).
"""

from __future__ import annotations

import pytest

from tests.support.prometheus_server import backfilled as backfilled_prometheus
from tests.support.range_panels import health_panel, shown_over

SPAN, FROM, LENGTH = 3 * 3600, 3610.5, 1800  # the range: [start + FROM, start + FROM + LENGTH] seconds
ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
TITLE = "Rows remapped (uncorrectable)"
# each GPU's copies: (instance, first scrape's offset in seconds from the start, seconds between scrapes)
FLEET = {
    "every-15s": (("10.0.0.1:9400", 2, 15),),  # scrapes at 3602 (before from) and 3617 (the change), one step
    "two-copies": (("10.0.0.2:9400", 5, 30), ("10.0.0.3:9400", 15, 30)),  # 3605 before, 3615 the change
    "anchor": (("10.0.0.4:9400", 20, 30),),  # 3590 before, 3620 the change: two steps
}


def _openmetrics(start: int) -> str:
    change = start + FROM  # every GPU reads 8 from its first scrape at or after `from`
    lines = [f"# TYPE {ROWS} gauge"]
    for gpu, (name, copies) in enumerate(FLEET.items()):
        for instance, offset, every in copies:
            labels = (f'gpu="{gpu}",UUID="GPU-{gpu}",modelName="NVIDIA H100",node="{name}",job="dcgm-exporter",'
                      f'instance="{instance}"')
            lines += [f"{ROWS}{{{labels}}} {8 if t >= change else 7} {t}"
                      for t in range(start + offset, start + SPAN, every)]
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    with backfilled_prometheus(tmp_path_factory.mktemp("range-first-step"), _openmetrics, SPAN, 30) as started:
        yield started


def _bars(prometheus, start: int) -> dict[str, float]:
    """The rows-remapped bars over [start + FROM, start + FROM + LENGTH], as Grafana asks."""
    first, last = round((start + FROM) * 1000), round((start + FROM + LENGTH) * 1000)
    return shown_over(prometheus, health_panel(TITLE), first, last)


def test_a_change_at_the_ranges_first_scrape_counts_when_its_step_also_reads_one_before(backfilled):
    assert _bars(*backfilled) == {f"{name} GPU {gpu}": 1.0 for gpu, name in enumerate(FLEET)}

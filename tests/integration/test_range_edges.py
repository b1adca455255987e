"""A counter's increase "during the selected time range" counts exactly the scrapes taken in the dashboard's range,
to the millisecond, on a real Prometheus 2 (Debian's 2.42), for Grafana's own time ranges: "Previous hour"
(`now-1h/h` to `now-1h/h`: from on the hour, to at .999 of its last second, `$__range` 3600s) and "Last 1 hour"
(`now-1h` to `now`: both anywhere in a second). Grafana runs the panel's instant query at `to` with `$__range`
rounded to whole seconds and `$__range_ms` exact (pkg/promlib: interpolateVariables, QueryInstant).

Each GPU's rows-remapped counter reads 7, then 8 from one scrape on (30 s scrapes, its own phase): the scrape of the
remap is 1 ms before, on, or 1 ms after the range's start or end. The health dashboard's "Rows remapped
(uncorrectable)" bar of a GPU is 1 when that scrape is in [from, to], else 0, as CloudWatch sums the agent's deltas
of the scrapes in its range (cloudwatch_eval: [start, end)).
"""

from __future__ import annotations

import pytest

from tests.support.prometheus_server import backfilled as backfilled_prometheus
from tests.support.range_panels import health_panel, shown_over

STEP_MS, SPAN = 30_000, 3 * 3600
ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
TITLE = "Rows remapped (uncorrectable)"
EDGES = ("from - 1 ms", "from", "from + 1 ms", "to - 1 ms", "to", "to + 1 ms")


def ranges(start: int) -> dict[str, tuple[int, int]]:
    """Grafana's [from, to] in ms of each time range, in the backfilled hours (start: their first second)."""
    hour = (start + 3600) * 1000  # a whole hour after the start (the start is on the 30 s grid)
    now = (start + 2 * 3600 + 17) * 1000 + 351
    return {"previous-hour": (hour, hour + 3_600_000 - 1), "last-hour": (now - 3_600_000, now)}


def remapped_at(first: int, last: int, edge: str) -> int:
    base, at = {"from": first, "to": last}[edge.split()[0]], edge.split()[1:]
    return base + (int(at[1]) if at and at[0] == "+" else -int(at[1]) if at else 0)


def _openmetrics(start: int) -> str:
    lines = [f"# TYPE {ROWS} gauge"]
    for name, (first, last) in ranges(start).items():
        for gpu, edge in enumerate(EDGES):
            remap = remapped_at(first, last, edge)
            labels = f'gpu="{gpu}",UUID="GPU-{name}-{gpu}",modelName="NVIDIA H100",node="{name}",job="dcgm-exporter"'
            t = remap - (remap - start * 1000) // STEP_MS * STEP_MS
            for taken in range(t, (start + SPAN) * 1000, STEP_MS):
                lines.append(f"{ROWS}{{{labels}}} {8 if taken >= remap else 7} {taken // 1000}.{taken % 1000:03d}")
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    with backfilled_prometheus(tmp_path_factory.mktemp("range-edges"), _openmetrics, SPAN, 30) as started:
        yield started


@pytest.fixture(scope="module")
def panel():
    return health_panel(TITLE)


@pytest.mark.parametrize("name", ["previous-hour", "last-hour"])
def test_the_bar_counts_the_scrapes_of_the_range_to_the_millisecond(backfilled, panel, name):
    """Before: the window was `[$__range:30s]` of 30 s steps, each reading the scrape before it: on the previous hour
    the step on its first instant read the scrape 1 ms before it (1 for `from - 1 ms`), and the scrapes after the last
    step before `to` were in no step (0 for `to - 1 ms` and `to`); on the last hour the step after `from` read the
    scrape 1 ms before it, and the last 17.351 s were in no step."""
    prometheus, start = backfilled
    first, last = ranges(start)[name]
    truth = {f"{name} GPU {gpu}": float(first <= remapped_at(first, last, edge) <= last)
             for gpu, edge in enumerate(EDGES)}
    assert list(truth.values()) == [0.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    bars = shown_over(prometheus, panel, first, last)
    assert {line: value for line, value in bars.items() if line.startswith(name)} == truth, bars

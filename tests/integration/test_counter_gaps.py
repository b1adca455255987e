"""A row remapped while a GPU's exporter is away is counted when the exporter is back, on a real Prometheus (Debian's
2.42): the health dashboard's "Rows remapped (uncorrectable)" bar over a range holding the gap, and the
`uncorrectable-rows` rule in the 5 minutes after the first reading back.

Three hours of 30 s scrapes (each GPU at its own phase) are backfilled: each GPU's counter reads 7, its exporter is
away (no sample) for a while, and it reads 8 from its first scrape back. The truth is 1 for every GPU; gpudash counts
it up to the horizon a reading's previous one is looked for, the README's limit: an hour for the bar
(promql.PREVIOUS_WITHIN) and for the rule, an event alarm (`> 0`: render.alarms.gap_reach); a GPU away 2 hours reads 0
and the rule is silent after it.
The CloudWatch twin follows its agent's delta cache (awsemf: a value survives 15 to 30 minutes, by the phase of its
sweep: test_counter_gap_twins.py; classic forgets it at the first failed scrape): docs/cloudwatch.md, "A counter
across a gap in its data".
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.project import load_project
from tests.support.prometheus_server import backfilled as backfilled_prometheus
from tests.support.range_panels import health_panel, shown_over

STEP, SPAN = 30, 3 * 3600
ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
TITLE = "Rows remapped (uncorrectable)"
AWAY_FROM = 1800  # seconds after the start: each GPU's last reading before its gap is the last scrape before it
# each GPU's seconds without a sample; the bar it shows (2 h: past the bar's horizon), and whether the rule fires
GAPS = {"gap-4m": 240, "gap-6.5m": 390, "gap-9m": 540, "gap-12m": 720, "gap-50m": 3000, "gap-2h": 7200}
SHOWN = {"gap-4m": 1.0, "gap-6.5m": 1.0, "gap-9m": 1.0, "gap-12m": 1.0, "gap-50m": 1.0, "gap-2h": 0.0}
FIRES = {"gap-4m", "gap-6.5m", "gap-9m", "gap-12m", "gap-50m"}  # within the rule's hour


def _phase(gpu: int) -> int:
    return 7 * gpu + 3


def _back(start: int, gpu: int, name: str) -> int:
    """The time of GPU `gpu`'s first scrape after its gap (the first reading 8)."""
    last = start + AWAY_FROM - (AWAY_FROM - _phase(gpu)) % STEP
    return last + (GAPS[name] // STEP + 1) * STEP


def _openmetrics(start: int) -> str:
    lines = [f"# TYPE {ROWS} gauge"]
    for gpu, name in enumerate(GAPS):
        labels = f'gpu="{gpu}",UUID="GPU-{gpu}",modelName="NVIDIA H100",node="{name}",job="dcgm-exporter"'
        back = _back(start, gpu, name)
        for taken in range(start + _phase(gpu), start + SPAN, STEP):
            if back - (GAPS[name] // STEP + 1) * STEP < taken < back:
                continue  # the exporter is away
            lines.append(f"{ROWS}{{{labels}}} {8 if taken >= back else 7} {taken}")
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    with backfilled_prometheus(tmp_path_factory.mktemp("counter-gaps"), _openmetrics, SPAN, STEP) as started:
        yield started


@pytest.fixture(scope="module")
def project():
    return load_project()


def test_the_rows_bar_counts_a_row_remapped_while_the_exporter_was_away(backfilled, project):
    """Before: the reading before each first one back was looked for 5 minutes back only: 0 for the 6.5-minute,
    12-minute and 50-minute gaps (where increase() over the range says 1)."""
    prometheus, start = backfilled
    # the range: the whole story but its first and last minute
    bars = shown_over(prometheus, health_panel(TITLE, project), (start + 60) * 1000, (start + SPAN - 60) * 1000)
    assert bars == {f"{name} GPU {gpu}": SHOWN[name] for gpu, name in enumerate(GAPS)}


def test_the_rule_fires_after_a_row_remapped_while_the_exporter_was_away(backfilled, project):
    """The rule (any rows remapped in the last 5 minutes) is judged 1, 3 and 6 minutes after each GPU's first reading
    back: it fires at 1 and 3 minutes after a gap within its horizon, never at 6 minutes (the reading is out of its
    window), and never after the 2-hour gap. Before: it fired only after the 4-minute gap, then after gaps up to 10
    minutes (silent after 12 and 50: the reading before looked for 10 minutes back)."""
    prometheus, start = backfilled
    (expr,) = [rule["expr"] for group in build(project).prometheus_rules["groups"] for rule in group["rules"]
               if rule.get("labels", {}).get("gpudash_rule") == "uncorrectable-rows"]
    for gpu, name in enumerate(GAPS):
        back = _back(start, gpu, name)
        for after, fires in ((60, name in FIRES), (180, name in FIRES), (360, False)):
            firing = {s["metric"]["node"] for s in prometheus.query(expr, at=str(back + after))}
            assert (name in firing) == fires, (name, after, firing)

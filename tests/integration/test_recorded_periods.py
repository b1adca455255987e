"""A rule that reads a period's statistic more than once is generated as a recording rule (each period's statistic
once) and an alert reading it back at the instant it is written (render.alarms.recorded_periods). Here both forms,
that pair and the one expression it replaces, run side by side in `promtool test rules` over a messy fleet's history
(tests/support/messy_history: Hostname and hostname, MIG instances, a pod label moving at every scrape, a counter
reset, a gap in a node's data with its series marked stale, blank readings), and give the same series and values at
every evaluation. tests/integration/test_evaluation_range_rules.py judges the generated pair against CloudWatch's
evaluator in every pattern of periods; `python benchmarks/rules.py --compare SCRAPES` runs this comparison longer,
with more alarms and GPUs.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from generator.project import load_project
from generator.render.alarms import prometheus_expression, prometheus_rules
from tests.support import messy_history

SCRAPES = 70  # 35 minutes: the range of 5 periods and the 10 minutes a counter's previous reading is looked for
# seconds between the compared evaluations (and the groups' evaluations): under 5 minutes, so a read of the
# recorded series that looked back (the instant selector's lookback) would find the previous evaluation's samples
EVERY = 240
# (alarm, N, M, missing data): a gauge rule, and a per-pod rule judging whole GPUs and MIG instances apart (the
# counter rules' forms cost promtool several times more: benchmarks/rules.py --compare runs them)
VARIANTS = (("gpu-temp-critical", 3, 2, "missing"), ("gpu-idle", 3, 3, "missing"))


@pytest.fixture(scope="module")
def project():
    return load_project()


def test_the_recorded_periods_give_the_same_alerts_as_the_one_expression(project, tmp_path):
    by_id = {a.id: a for a in project.alarms}
    forms = []
    for base, periods, needed, missing in VARIANTS:
        alarm = replace(by_id[base], evaluation_periods=periods, datapoints_to_alarm=needed, missing_data=missing)
        rules = [r for g in prometheus_rules((alarm,), project.catalog, project.settings)["groups"] for r in g["rules"]]
        assert [r.get("record", "") for r in rules[:-1]] == [f"gpudash:{base.replace('-', '_')}:period_value"]
        forms.append((base, ([{"expr": prometheus_expression(alarm, project.catalog, project.settings)}], rules)))
    metrics = set(re.findall(r"\b(DCGM_[A-Z0-9_]+)\b", json.dumps(forms)))
    series = messy_history.input_series(messy_history.history(1, SCRAPES, metrics))
    end = (SCRAPES - 1) * messy_history.SCRAPE // EVERY * EVERY
    content = messy_history.differential(forms, EVERY, end, [series])
    assert messy_history.differential_failures(content, EVERY, tmp_path) == ""

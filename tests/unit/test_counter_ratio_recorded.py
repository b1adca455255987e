"""A panel's counter read from its recording is recorded: ratios (`over`) and groupings the per-field rule did not see.

A counter in a ratio query (the field or what it divides by) is read per GPU as a field alone is, from its recording
(gpudash:<field>:step_increase and :step_seconds), but the rules recorded only counters of queries without `over`: the
panel read series no rule wrote and drew nothing, with a description saying it read each scrape's copies (lint GF002
errors on what generate wrote, exit 0). A counter grouped by container was recorded though no panel read it, and its
description said it read the recording.
"""

from __future__ import annotations

import re

import pytest

from generator.artifacts import build
from generator.lint import run
from generator.lint.runner import all_rules
from tests.support.lint_input import lint_input
from tests.support.projects import defined_project

REPLAYS, ENERGY, FREE, POWER = ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                                "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE")
QUERIES = {
    "counter over a gauge, per node": f"Query({REPLAYS!r}, 'sum', ('node',), over=({FREE!r},))",
    "gauge over a counter, fleet": f"Query({POWER!r}, 'avg', (), over=({ENERGY!r},))",
    "counter over a counter, per GPU": f"Query({REPLAYS!r}, 'max', ('node', 'gpu'), over=({ENERGY!r},))",
    "counter by container": f"Query({REPLAYS!r}, 'sum', ('container',))",
    "counter per node": f"Query({REPLAYS!r}, 'sum', ('node',))",
}


def _project(tmp_path, query: str):
    return defined_project(tmp_path, dashboards="from generator.model import Dashboard, Panel, Query, Row\n\n"
                           f"dashboard = Dashboard('ratio', 'Ratio', (Row('r', (Panel('p', ({query},)),)),))\n")


def _panels(model):
    for panel in model["panels"]:
        yield panel
        yield from panel.get("panels", ())


@pytest.mark.parametrize("case", list(QUERIES))
def test_every_recording_a_panel_reads_is_recorded_and_none_other(tmp_path, case):
    project = _project(tmp_path, QUERIES[case])
    artifacts = build(project)
    exprs = " ".join(target["expr"] for board in artifacts.grafana for panel in _panels(board.model)
                     for target in panel.get("targets", ()))
    read = set(re.findall(r"gpudash:(DCGM_[A-Z_]+):(step_increase|step_seconds)", exprs))
    recorded = {tuple(rule["record"].split(":")[1:]) for group in artifacts.prometheus_rules["groups"]
                for rule in group["rules"] if rule.get("record", "").startswith("gpudash:DCGM_")}
    assert read == recorded, (case, sorted(read), sorted(recorded))
    findings = [f for f in run(all_rules(), lint_input(project, artifacts)) if f.severity == "error"]
    assert findings == [], [f"{f.rule} {f.message}" for f in findings]

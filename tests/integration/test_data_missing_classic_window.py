"""On agent.pipeline: classic the data-missing rule's second CloudWatch alarm is per GPU: under half of a GPU's
observations of the data-missing field in each of its two 5-minute periods (the JSON path drops `up` and
`scrape_*`, so no scrape's outcome is published). Its Prometheus twin fires when more than 10 of a node's 20 scrapes
of the last 10 minutes brought no GPU data (test_data_missing's patterns: the rule and the OTel per-node alarm fire
exactly then). A crash loop fires both. An outage over half the window that leaves one period under half down fires
the rule alone: 6 minutes down across the two periods, or down 40 %, 70 %, 40 % of three; the truth is the rule's
count (the title: most of the node's data missing). No count over the window can replace the two periods on this
path (a node added or removed inside the window would read as missing data): pinned as a strict xfail with the truth;
docs/alarms.md says it (the alarm's description, at CloudWatch's 1,024 characters with its notes already shortened,
says its own count: "in each of two periods running"). Found on a fleet of its own (an
exporter failing 11 scrapes running fired the rule for 5 minutes and never this alarm)."""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.integration.test_data_missing import (PATTERNS, PER_GPU_ALARM, WINDOW_LIMIT, WINDOW_STEPS_TOTAL, _bad_in_window,
                                                 _in_alarm, _pattern_story, _rule_alarms, _story_points)

UNEVEN = ("down 6 minutes straddling two periods", "down 40%, 70%, 40% of three periods")
MINUTES = range(1, WINDOW_STEPS_TOTAL // 2)


@pytest.fixture(scope="module")
def classic(tmp_path_factory):
    folder = tmp_path_factory.mktemp("classic-window")
    (folder / "gpudash.yaml").write_text("agent:\n  pipeline: classic\n")
    project = load_project(folder / "gpudash.yaml")
    return project, encode(build(project))


def _fired(classic, name: str) -> set[int]:
    """The minutes at which the per-GPU alarm is in ALARM (for the second node's GPU) over pattern `name`."""
    project, files = classic
    requests = _rule_alarms(files, PER_GPU_ALARM)
    points = _story_points(project, files, _pattern_story(name, PATTERNS[name]))
    return {minute for minute in MINUTES if _in_alarm(requests, points, minute * 60 + 1).get(PER_GPU_ALARM)}


def _truth(name: str) -> set[int]:
    return {minute for minute in MINUTES if _bad_in_window(PATTERNS[name], minute) > WINDOW_LIMIT}


def test_a_crash_loop_fires_the_per_gpu_alarm_within_the_rules_minutes(classic):
    fired, truth = _fired(classic, "crash loop for 20 minutes, then healthy"), _truth("crash loop for 20 minutes, "
                                                                                      "then healthy")
    assert fired and fired <= truth, (sorted(fired), sorted(truth))


@pytest.mark.parametrize("name", UNEVEN)
@pytest.mark.xfail(strict=True, reason="the per-GPU alarm needs under half of each period's observations: an outage "
                   "over half of the 10 minutes that leaves one period under half down fires the rule alone; the JSON "
                   "path publishes no scrape's outcome, and a count over the window would read a node added or removed "
                   "inside it as missing data (docs/alarms.md and the description say 'in each of two periods')")
def test_an_uneven_outage_fires_the_per_gpu_alarm_as_its_rule(classic, name):
    assert _truth(name) and _fired(classic, name) == _truth(name)


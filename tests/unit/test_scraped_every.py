"""tests.support.prometheus_server.scraped_every writes a query gpudash made for 30 s scrapes for the tests' 1 s ones:
every duration it derives from the interval, whatever parentheses stand around it, or the test fails naming the
rewrite that missed. A duration left as made for 30 s (a subquery's reading 30 s back, read at 1 s steps) is a query
of neither interval: the tests judged such queries silently while the product's spelling moved on."""

from __future__ import annotations

import pytest

from generator.artifacts import build
from tests.support.projects import bundled_project
from tests.support.prometheus_server import ScrapeRewriteMissed, counted_inline, scraped_every

SETTINGS = ("", "exporter:\n  virtual_gpus: true\n")


@pytest.mark.parametrize("settings", SETTINGS, ids=("defaults", "virtual_gpus"))
def test_every_bundled_panel_and_rule_is_rewritten_whole(settings):
    """Each bundled panel's query (its counters' recordings read inline, as the tests read them) and each rule is
    rewritten with no duration of the 30 s interval or the 5 s rule step left: a construct the product adds or
    respells fails here, before an integration test judges it at another interval."""
    project = bundled_project(settings)
    artifacts = build(project)
    exprs = {target["expr"] for dashboard in artifacts.grafana for panel in dashboard.model["panels"]
             for target in panel.get("targets", ()) if "expr" in target}
    rules = [rule["expr"] for group in artifacts.prometheus_rules["groups"] for rule in group["rules"]]
    assert len(exprs) >= 50 and len(rules) > 10
    for expr in [counted_inline(e, project) for e in exprs] + rules:
        rewritten = scraped_every(expr, 30, 1)
        assert "30000ms" not in rewritten and "29999ms" not in rewritten and "offset 30s" not in rewritten


@pytest.mark.parametrize("spelled", [
    "a and present_over_time(x[30000ms])",
    "(a and present_over_time(x[30000ms]))",
    "((a and (present_over_time(x[30000ms]))))",
])
def test_a_duration_is_rewritten_whatever_parentheses_stand_around_it(spelled):
    # promql.fresh_copies' range was rewritten only where two parentheses followed it (`[30000ms]))`): with the
    # parentheses its tree does not need left out (3e327aa0), the test read a copy fresh over 30 s at 1 s scrapes
    assert scraped_every(spelled, 30, 1) == spelled.replace("30000ms", "1000ms")


def test_each_duration_is_rewritten_once():
    # a held reading (2.5 scrapes: `[75000ms]` at 30 s) is `[2500ms]` at 1 s, the very spelling of half the 5 s rule
    # step: one pass, so the rule step's rewrite does not read the held reading's output (and make it 500 ms)
    assert scraped_every("last_over_time(x[75000ms]) + last_over_time(y[2500ms])", 30, 1) == \
        "last_over_time(x[2500ms]) + last_over_time(y[500ms])"


def test_a_duration_of_the_interval_no_rewrite_knows_fails_naming_it():
    # a subquery over one interval is no construct gpudash writes (yet): its range stays 30 s, read at 1 s steps
    missed = r"the step rewrite missed the range 30s in \.\.\.max_over_time\(x\[30s:1s\]\)"
    with pytest.raises(ScrapeRewriteMissed, match=missed):
        scraped_every("max_over_time(x[30s:30s])", 30, 1)
    assert scraped_every("max_over_time(x[30s:30s])", 30, 30) == "max_over_time(x[30s:30s])"  # read as made

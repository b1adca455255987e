"""The agent's log group holds `agent.log_retention_days` of events: its storage, month after month, is that many
days of ingestion (compressed), whatever the length. CloudWatch Logs bills storage per GB-month of the data held
(pricing page, Logs: store); a group keeping 365 days holds a year of events once it has run a year, twelve months'
ingestion, not one.
"""

from __future__ import annotations

import pytest

from generator import cost
from generator.artifacts import build
from generator.cost import Fleet, load_prices
from generator.project import load_project


@pytest.mark.parametrize("days", [7, 30, 90, 365])
def test_a_log_group_kept_longer_than_a_month_stores_that_many_days(project_dir, days):
    project = load_project(project_dir(f"agent:\n  log_retention_days: {days}\n"))
    lines = {line["item"]: line for line in cost.estimates(project, Fleet(clusters=1, pods=500, churn=0), None,
                                                           build(project))["group_by"]["lines"]}
    ingested = lines["EMF log ingestion (GB)"]["quantity"]  # a month's
    ratio = load_prices()["rates"]["log_compression_ratio"]["ratio"]
    # seen on main 8c246c5 at 90 and 365 days: 36.9 GB (one month's, whatever the retention); and until 30 days were
    # taken for the 730 hours the month's ingestion is counted over, 1.4 % more than those days hold (365 days:
    # 12.17 months' ingestion for 12)
    held = days * 24 / cost.HOURS_PER_MONTH  # months' ingestion
    assert lines["EMF log storage (GB-month)"]["quantity"] == pytest.approx(ingested * held * ratio, rel=1e-12)
    if days == 365:
        assert held == 12


def test_on_classic_the_storage_line_says_the_retention_holds_only_where_the_stack_made_the_group(project_dir):
    """agent.pipeline: classic publishes through the agent's JSON path, whose prometheus section has no retention: a
    log group the agent creates itself (gpudash apply, no CloudFormation stack) never expires, so storage grows past
    what the line prices. The line must say so (the OTel pipeline sets awsemf's log_retention: it holds there)."""
    def basis(settings: str) -> str:
        project = load_project(project_dir(settings))
        lines = {line["item"]: line for line in cost.estimates(project, Fleet(clusters=1, pods=50, churn=0), None,
                                                               build(project))["group_by"]["lines"]}
        return lines["EMF log storage (GB-month)"]["basis"]

    # seen on main: "7 days retained (agent.log_retention_days), compressed" on both pipelines
    assert "never expires" in basis("agent:\n  pipeline: classic\n")
    assert "never expires" not in basis("")

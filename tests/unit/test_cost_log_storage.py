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
    # seen on main 8c246c5 at 90 and 365 days: 36.9 GB (one month's, whatever the retention); true 110.8 and 449.5
    assert lines["EMF log storage (GB-month)"]["quantity"] == pytest.approx(ingested * days / 30 * ratio)

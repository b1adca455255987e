"""gpudash cost: counts follow the definitions, prices come from the dated data file."""

from __future__ import annotations

import json

from generator.cost import Fleet, compare, load_prices
from generator.project import load_project


def test_group_by_needs_one_alarm_per_rule_and_cluster_static_one_per_pod():
    project = load_project()
    per_pod_rules = sum(1 for a in project.alarms if a.per_pod)
    cluster_rules = len(project.alarms) - per_pod_rules
    result = compare(project, Fleet(clusters=2, pods=500, churn=1000))
    assert result["group_by"]["alarms"] == (per_pod_rules + cluster_rules) * 2
    assert result["static"]["alarms"] == per_pod_rules * 500 + cluster_rules * 2


def test_custom_metrics_follow_the_agent_selection(project_dir):
    fleet = Fleet(clusters=1, pods=100, churn=0)
    everything = compare(load_project(), fleet)["group_by"]["lines"][0]
    used = compare(load_project(project_dir("agent:\n  metric_selection: used\n")), fleet)["group_by"]["lines"][0]
    assert everything["quantity"] == 25 * 100
    assert 0 < used["quantity"] < everything["quantity"]


def test_prices_come_from_the_data_file(tmp_path):
    prices = load_prices()
    assert prices["as_of"] and prices["custom_metric_month"] == 0.30
    doubled = {**prices, "custom_metric_month": 0.60}
    project = load_project()
    fleet = Fleet(clusters=1, pods=10, churn=0)
    base = compare(project, fleet, prices)["group_by"]["lines"][0]["monthly"]
    assert compare(project, fleet, doubled)["group_by"]["lines"][0]["monthly"] == 2 * base


def test_cost_command_json(cli):
    code, stdout, _ = cli("cost", "--pods", "500", "--clusters", "3", "--churn", "3000", "--output", "json")
    result = json.loads(stdout)
    assert code == 0
    assert result["fleet"] == {"clusters": 3, "pods": 500, "churn": 3000, "dashboard_view_hours": 40.0,
                               "refresh_minutes": 5}
    assert result["group_by"]["alarms"] < result["static"]["alarms"]
    code, stdout, _ = cli("cost", "--pods", "500")
    assert code == 0 and "GROUP BY" in stdout and "prices as of 2023" in stdout

"""Monthly CloudWatch cost of a fleet, from the project's artifacts and a dated price file. Pure."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .project import Project
from .render.agent import selected_metrics

PRICES = Path(__file__).resolve().parent / "defaults" / "cloudwatch-prices.json"
HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class Fleet:
    clusters: int
    pods: int  # GPU pods running at once, across the fleet
    churn: int  # GPU pods started per month
    dashboard_view_hours: float = 40.0  # per dashboard per month
    refresh_minutes: int = 5


@dataclass(frozen=True)
class Line:
    item: str
    quantity: float
    unit_price: float
    monthly: float
    basis: str


def load_prices(path: Path = PRICES) -> dict[str, Any]:
    return json.loads(path.read_text())


def _alarm_lines(project: Project, fleet: Fleet, prices: dict[str, Any], mode: str) -> tuple[list[Line], int]:
    per_pod = sum(1 for a in project.alarms if a.per_pod)
    cluster_scoped = len(project.alarms) - per_pod
    pods_per_cluster = fleet.pods / max(fleet.clusters, 1)
    rate = prices["metrics_insights_alarm_metric_month"]
    # Cluster-wide alarms are Metrics Insights queries over every pod's series of their cluster.
    cluster_alarms = cluster_scoped * fleet.clusters
    lines = [Line("cluster-wide alarms (Metrics Insights)", cluster_alarms * pods_per_cluster, rate,
                  cluster_alarms * pods_per_cluster * rate,
                  f"{cluster_scoped} rules x {fleet.clusters} clusters, each analyzing ~{pods_per_cluster:.0f} pod series")]
    if mode == "group_by":
        alarms = per_pod * fleet.clusters
        analyzed = alarms * pods_per_cluster
        lines.append(Line("per-pod alarms (GROUP BY pod)", analyzed, rate, analyzed * rate,
                          f"{per_pod} rules x {fleet.clusters} clusters = {alarms} alarms; every pod a contributor"))
        count = cluster_alarms + alarms
    else:
        alarms = per_pod * fleet.pods
        rate = prices["standard_alarm_metric_month"]
        lines.append(Line("per-pod alarms (static, one per pod)", alarms, rate, alarms * rate,
                          f"{per_pod} rules x {fleet.pods} pods; {fleet.churn} new pods a month each need an apply"))
        count = cluster_alarms + alarms
    return lines, count


def estimate(project: Project, fleet: Fleet, prices: dict[str, Any], mode: str) -> dict[str, Any]:
    settings = project.settings
    shipped = len(selected_metrics(project.catalog, settings, project.used_metrics()))
    # Every shipped field is one custom metric per pod (the pod dimension); hourly proration
    # bills each started pod at least one hour.
    metric_months = shipped * (fleet.pods + fleet.churn / HOURS_PER_MONTH)
    dashboards = len(project.cloudwatch_dashboards()) * fleet.clusters
    paid_dashboards = max(0, dashboards - prices["free_dashboards"])
    widgets = [p for d in project.cloudwatch_dashboards() for p in d.panels() if not p.grafana_only]
    pods_per_cluster = fleet.pods / max(fleet.clusters, 1)
    top = settings.cloudwatch["top_pods"]
    series_per_refresh = sum(min(pods_per_cluster, top) if any(q.by for q in p.queries) else 1 for p in widgets)
    refreshes = fleet.dashboard_view_hours * 60 / fleet.refresh_minutes * fleet.clusters
    read_metrics = series_per_refresh * refreshes
    alarm_lines, alarm_count = _alarm_lines(project, fleet, prices, mode)
    lines = [
        Line("custom metrics", metric_months, prices["custom_metric_month"],
             metric_months * prices["custom_metric_month"],
             f"{shipped} fields x {fleet.pods} pods (+ {fleet.churn} pod starts, prorated)"),
        Line("dashboards", paid_dashboards, prices["dashboard_month"], paid_dashboards * prices["dashboard_month"],
             f"{dashboards} dashboards, first {prices['free_dashboards']} free"),
        *alarm_lines,
        Line("dashboard reads (GetMetricData)", read_metrics / 1000, prices["get_metric_data_per_1000_metrics"],
             read_metrics / 1000 * prices["get_metric_data_per_1000_metrics"],
             f"{fleet.dashboard_view_hours:g} h viewed per cluster, refresh every {fleet.refresh_minutes} min"),
    ]
    return {"mode": mode, "alarms": alarm_count, "lines": [asdict(line) for line in lines],
            "total": round(sum(line.monthly for line in lines), 2)}


def compare(project: Project, fleet: Fleet, prices: dict[str, Any] | None = None) -> dict[str, Any]:
    prices = prices or load_prices()
    return {"fleet": asdict(fleet), "prices_as_of": prices["as_of"], "source": prices["source"],
            "group_by": estimate(project, fleet, prices, "group_by"),
            "static": estimate(project, fleet, prices, "static")}

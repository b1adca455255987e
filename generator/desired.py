"""What publishing writes, in the APIs' own form: the artifact set (built in memory or read from a build
with output.read) as Grafana dashboards, CloudWatch dashboards with their Region, and alarm requests.

Targets never re-derive: with --from DIR they publish exactly the reviewed build (its
manifest checked); without it, the same set is built in memory. Each CloudWatch dashboard's
Region is its own, from the set.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .artifacts import Artifacts


@dataclass(frozen=True)
class Desired:
    grafana: dict[str, dict[str, Any]]  # uid -> dashboard JSON
    folder: dict[str, str]
    cloudwatch_dashboards: dict[str, dict[str, Any]]  # name -> {"DashboardName", "DashboardBody"}
    dashboard_regions: dict[str, str]
    alarms: list[dict[str, Any]]  # {"Region", "Request"}
    alarm_prefix: str
    dashboard_prefix: str = ""  # generated CloudWatch dashboards are named <prefix>-<cluster>-<id>; "" lists none


def desired_from(artifacts: Artifacts, settings) -> Desired:
    """What publishing writes: the artifact set (built, or read from a build) in the APIs' own form."""
    from .ownership import stamped_cloudwatch_text

    dashboards = {d.name: {"DashboardName": d.name, "DashboardBody": stamped_cloudwatch_text(d.body)}
                  for d in artifacts.cloudwatch_dashboards}
    return Desired({d.uid: d.model for d in artifacts.grafana}, asdict(settings.grafana.folder), dashboards,
                   {d.name: d.region for d in artifacts.cloudwatch_dashboards},
                   [item.as_dict() for item in artifacts.alarms], settings.alarms.name_prefix,
                   settings.cloudwatch.dashboard_prefix)

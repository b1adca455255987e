"""What publishing writes, as data: the artifact set (built in memory or read from a build with
output.read) as Grafana dashboards, CloudWatch dashboards with their Region, and alarm requests.

Targets never re-derive: with --from DIR they publish exactly the reviewed build (its manifest
checked, and made with the settings read now); without it, the same set is built in memory. Every
fact comes from the set: each CloudWatch dashboard's Region, the Grafana folder, and the name
prefixes that bound what may be pruned. Bodies stay data; a target encodes them only where it calls
its API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .artifacts import Artifacts


@dataclass(frozen=True)
class Desired:
    """What publishing writes and the scope it may prune, all from one artifact set."""
    grafana: dict[str, dict[str, Any]]  # uid -> dashboard JSON
    folder: dict[str, str]
    grafana_uid_prefix: str
    cloudwatch_dashboards: dict[str, dict[str, Any]]  # name -> DashboardBody as data, stamped with its hash
    dashboard_regions: dict[str, str]
    alarms: list[dict[str, Any]]  # {"Region", "Request"}
    alarm_prefix: str
    dashboard_prefix: str = ""  # generated CloudWatch dashboards are named <prefix>-<cluster>-<id>; "" lists none
    project: str = ""  # the settings' `project`: what is pruned must name it ("" when unset: nothing is pruned)
    clusters: tuple[str, ...] = ()  # the settings' clusters: a project's object published with none of them is not pruned


def desired_from(artifacts: Artifacts) -> Desired:
    """What publishing writes: the artifact set (built, or read from a build) and nothing else."""
    from .ownership import project_tagged, stamp_cloudwatch_body

    project = artifacts.project
    return Desired(grafana={d.uid: d.model for d in artifacts.grafana},
                   folder=dict(artifacts.grafana_folder),
                   grafana_uid_prefix=artifacts.grafana_uid_prefix,
                   cloudwatch_dashboards={d.name: stamp_cloudwatch_body(d.body, d.name, project)
                                          for d in artifacts.cloudwatch_dashboards},
                   dashboard_regions={d.name: d.region for d in artifacts.cloudwatch_dashboards},
                   alarms=[project_tagged(item.as_dict(), project) for item in artifacts.alarms],
                   alarm_prefix=artifacts.alarm_prefix,
                   dashboard_prefix=artifacts.dashboard_prefix,
                   project=project,
                   clusters=artifacts.clusters)

"""What gets published: the artifact set, built in memory or read from a build (output.read).

Targets never re-derive: with --from DIR they publish exactly the reviewed build (its
manifest checked); without it, the same set is built in memory. Each CloudWatch dashboard's
Region is its own, from the set.
"""

from __future__ import annotations

import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .changes import DONE, FAILED, REFUSED, WOULD_WRITE, WRITES, Change, Outcome, summary

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
                   {d.name: d.region for d in artifacts.cloudwatch_dashboards}, list(artifacts.alarms),
                   settings.alarms.name_prefix, settings.cloudwatch.dashboard_prefix)


def git_note(cwd: Path | None = None) -> str:
    """`<short commit> <subject>` of the checkout, when there is one."""
    try:
        result = subprocess.run(["git", "log", "-1", "--format=%h %s"], capture_output=True, text=True,
                                cwd=cwd, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return result.stdout.strip()[:200] if result.returncode == 0 else ""


def report(changes: list[Change], outcomes: list[Outcome] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"changes": [c.as_dict() for c in changes], "summary": summary(changes)}
    if outcomes is not None:
        data["written"] = [o.change.name for o in outcomes if o.state == DONE]
        data["failed"] = [{"name": o.change.name, "error": o.error} for o in outcomes if o.state == FAILED]
        data["refused"] = [o.change.name for o in outcomes if o.state == REFUSED]
        data["would_write"] = [o.change.name for o in outcomes if o.state == WOULD_WRITE]
    return data


def pending(changes: list[Change], prune: bool) -> bool:
    return any((c.action in WRITES and (c.action != "delete" or prune)) or c.blocked for c in changes)

"""What gets published: the generated artifacts, read back from the files `generate` writes.

Targets never re-derive: with --from DIR they publish exactly the reviewed build (its
manifest checked); without it, the same files are built in memory.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .changes import DONE, FAILED, REFUSED, WOULD_WRITE, WRITES, Change, Outcome, summary
from .errors import InputError
from .output import MANIFEST


@dataclass(frozen=True)
class Desired:
    grafana: dict[str, dict[str, Any]]  # uid -> dashboard JSON
    folder: dict[str, str]
    cloudwatch_dashboards: dict[str, dict[str, Any]]  # name -> {"DashboardName", "DashboardBody"}
    dashboard_regions: dict[str, str]
    alarms: list[dict[str, Any]]  # {"Region", "Request"}
    alarm_prefix: str


def read_build(directory: Path) -> dict[str, bytes]:
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise InputError("no manifest.json: not a gpudash build", where=str(directory),
                         hint="run `gpudash generate --out DIR` first")
    manifest = json.loads(manifest_path.read_text())
    files = {}
    for relative, digest in manifest["files"].items():
        path = directory / relative
        data = path.read_bytes() if path.is_file() else b""
        if hashlib.sha256(data).hexdigest() != digest:
            raise InputError(f"{relative} differs from the manifest: the build was changed after generate",
                             where=str(directory), hint="run `gpudash generate` again and review the result")
        files[relative] = data
    return files


def desired_from(files: dict[str, bytes], settings) -> Desired:
    grafana = {}
    for path, data in files.items():
        if path.startswith("grafana/") and path.count("/") == 1 and path.endswith(".json"):
            model = json.loads(data)
            grafana[model["uid"]] = model
    dashboards, regions = {}, {}
    for path, data in files.items():
        if path.startswith("cloudwatch/dashboards/"):
            item = json.loads(data)
            dashboards[item["DashboardName"]] = item
            widgets = json.loads(item["DashboardBody"]).get("widgets", [])
            regions[item["DashboardName"]] = next(
                (w["properties"]["region"] for w in widgets if w.get("properties", {}).get("region")),
                settings.clusters[0].region)
    alarms = json.loads(files.get("cloudwatch/alarms.json", b'{"alarms": []}'))["alarms"]
    return Desired(grafana, dict(settings.grafana["folder"]), dashboards, regions, alarms,
                   settings.alarms["name_prefix"])


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

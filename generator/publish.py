"""What gets published: the generated artifacts, read back from the files `generate` writes.

Targets never re-derive: with --from DIR they publish exactly the reviewed build (its
manifest checked); without it, the same files are built in memory.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .changes import DONE, FAILED, REFUSED, WOULD_WRITE, WRITES, Change, Outcome, summary
from .errors import InputError
from .output import MANIFEST
from .reading import read_bytes


@dataclass(frozen=True)
class Desired:
    grafana: dict[str, dict[str, Any]]  # uid -> dashboard JSON
    folder: dict[str, str]
    cloudwatch_dashboards: dict[str, dict[str, Any]]  # name -> {"DashboardName", "DashboardBody"}
    dashboard_regions: dict[str, str]
    alarms: list[dict[str, Any]]  # {"Region", "Request"}
    alarm_prefix: str
    dashboard_prefix: str = ""  # generated CloudWatch dashboards are named <prefix>-<cluster>-<id>; "" lists none


def parse_json(data: bytes, where: str, what: str) -> Any:
    """A build file's JSON (standard JSON: no NaN or Infinity); anything else is an input error naming
    the file and line."""
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_not_a_number)
    except UnicodeDecodeError:
        raise InputError(f"{what} is not UTF-8 text", where=where, hint=REGENERATE) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} is not JSON: {exc.msg}", where=f"{where}:{exc.lineno}", hint=REGENERATE) from None
    except _NotJson as exc:
        raise InputError(f"{what} is not JSON: {exc}", where=where, hint=REGENERATE) from None
    except RecursionError:
        raise InputError(f"{what} is nested too deeply to be read", where=where, hint=REGENERATE) from None


class _NotJson(Exception):
    """Python's reader accepts NaN and Infinity; JSON (and the APIs gpudash publishes to) does not."""


def _not_a_number(constant: str) -> Any:
    raise _NotJson(f"{constant} is not a JSON number")


REGENERATE = "run `gpudash generate --out DIR` again and review the result"


def _safe_relative(relative: Any) -> bool:
    if not isinstance(relative, str) or not relative or relative.startswith("/") or "\\" in relative:
        return False
    return all(part not in ("", ".", "..") for part in relative.split("/"))


def check_made_with(directory: Path, settings) -> None:
    """A build is judged by the settings it was made with: other settings (another label mapping, other
    clusters) would report its queries as wrong. Say which settings to pass instead."""
    from .output import settings_record

    try:
        manifest = json.loads((directory / MANIFEST).read_bytes())
    except (OSError, ValueError):
        return  # read_build says what is wrong with the manifest
    made_with = manifest.get("settings") if isinstance(manifest, dict) else None
    if not isinstance(made_with, dict) or made_with.get("sha256") == settings_record(settings)["sha256"]:
        return  # a build from before the manifest recorded its settings is judged as before
    bundled = made_with.get("bundled") is True
    given = "the bundled defaults" if bundled else f"settings with sha256 {str(made_with.get('sha256'))[:12]}…"
    hint = ("run it without --config and without GPUDASH_CONFIG, away from any gpudash.yaml" if bundled
            else "pass --config with the settings file the build was made with")
    raise InputError(f"this build was made with other settings ({given}) than the ones read now "
                     f"({settings.source}): it would be judged by the wrong label mapping and clusters",
                     where=str(directory), hint=f"{hint}, or generate the build again with these settings")


def read_build(directory: Path) -> dict[str, bytes]:
    """The files a build's manifest lists, each checked against its sha256."""
    manifest_path = directory / MANIFEST
    if directory.exists() and not directory.is_dir():
        inside = next((p for p in directory.parents if (p / MANIFEST).is_file()), None)
        raise InputError("not a folder: --from takes a whole build", where=str(directory),
                         hint=f"pass --from {shlex.quote(str(inside))}" if inside else "pass the folder `gpudash generate --out` wrote")
    if not directory.is_dir():
        raise InputError("the build folder does not exist", where=str(directory),
                         hint=f"run `gpudash generate --out {shlex.quote(str(directory))}` first")
    if not manifest_path.is_file():
        raise InputError("no manifest.json: not a gpudash build", where=str(directory),
                         hint=f"run `gpudash generate --out {shlex.quote(str(directory))}` first, or pass the folder it wrote")
    manifest = parse_json(read_bytes(manifest_path, "manifest", REGENERATE), str(manifest_path), "the manifest")
    listed = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(listed, dict) or not all(isinstance(v, str) for v in listed.values()):
        raise InputError("the manifest has no `files` mapping of path to sha256", where=str(manifest_path),
                         hint=REGENERATE)
    files = {}
    for relative, digest in listed.items():
        if not _safe_relative(relative) or relative == MANIFEST:
            raise InputError(f"the manifest lists {relative!r}, which is not a path inside the build",
                             where=str(manifest_path), hint=REGENERATE)
        path = directory / relative
        data = read_bytes(path, "build file", REGENERATE) if path.exists() else None
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            change = "is missing" if data is None else "differs from the manifest"
            raise InputError(f"{relative} {change}: the build was changed after generate",
                             where=str(directory), hint="run `gpudash generate` again and review the result")
        files[relative] = data
    return files


def _object(data: bytes, where: str, what: str, keys: tuple[str, ...]) -> dict[str, Any]:
    value = parse_json(data, where, what)
    if not isinstance(value, dict) or not all(key in value for key in keys):
        raise InputError(f"{what} is not a JSON object with {', '.join(keys)}", where=where, hint=REGENERATE)
    _texts(value, where, what, *(key for key in keys if key in _TEXT_KEYS))
    return value


_TEXT_KEYS = ("uid", "title", "DashboardName", "DashboardBody", "Region", "AlarmName")


def _texts(value: dict[str, Any], where: str, what: str, *keys: str) -> None:
    """Each of `keys` is non-empty text: what gpudash publishes by (a uid, a name, a Region) must be one."""
    for key in keys:
        if not isinstance(value.get(key), str) or not value[key]:
            raise InputError(f"{what} has no `{key}` (text); it holds {json.dumps(value.get(key))[:60]}",
                             where=where, hint=REGENERATE)


def grafana_models(files: dict[str, bytes], origin: str = "<generated>") -> dict[str, tuple[str, dict[str, Any]]]:
    """uid -> (file, dashboard JSON) of every Grafana dashboard in a build."""
    models = {}
    for path, data in sorted(files.items()):
        if path.startswith("grafana/") and path.count("/") == 1 and path.endswith(".json"):
            where = f"{origin}/{path}"
            model = _object(data, where, "the dashboard", ("uid",))
            _texts(model, where, "the dashboard", "uid", "title")
            if model["uid"] in models:
                raise InputError(f"uid {model['uid']!r} is also the uid of {models[model['uid']][0]}", where=where,
                                 hint=REGENERATE)
            models[model["uid"]] = (path, model)
    return models


def desired_from(files: dict[str, bytes], settings, origin: str = "<generated>") -> Desired:
    grafana = {uid: model for uid, (_, model) in grafana_models(files, origin).items()}
    dashboards, regions = {}, {}
    for path, data in sorted(files.items()):
        if path.startswith("cloudwatch/dashboards/"):
            where = f"{origin}/{path}"
            item = _object(data, where, "the CloudWatch dashboard", ("DashboardName", "DashboardBody"))
            body = parse_json(str(item["DashboardBody"]).encode(), where, "its DashboardBody")
            widgets = body.get("widgets", []) if isinstance(body, dict) else None
            if not isinstance(widgets, list):
                raise InputError("its DashboardBody has no list of widgets", where=where, hint=REGENERATE)
            if item["DashboardName"] in dashboards:
                raise InputError(f"the CloudWatch dashboard {item['DashboardName']!r} is listed twice", where=where,
                                 hint=REGENERATE)
            dashboards[item["DashboardName"]] = item
            regions[item["DashboardName"]] = next(
                (w["properties"]["region"] for w in widgets
                 if isinstance(w, dict) and isinstance(w.get("properties"), dict) and w["properties"].get("region")),
                settings.clusters[0].region)
    alarms = _object(files.get("cloudwatch/alarms.json", b'{"alarms": []}'), f"{origin}/cloudwatch/alarms.json",
                     "the alarm list", ("alarms",))["alarms"]
    if not isinstance(alarms, list) or not all(isinstance(a, dict) and "Request" in a for a in alarms):
        raise InputError("`alarms` is not a list of {Region, Request} objects",
                         where=f"{origin}/cloudwatch/alarms.json", hint=REGENERATE)
    seen: set[tuple[str, str]] = set()
    for number, alarm in enumerate(alarms, 1):
        what = f"alarm {number}"
        if not isinstance(alarm["Request"], dict):
            raise InputError(f"{what}'s Request is not an object", where=f"{origin}/cloudwatch/alarms.json",
                             hint=REGENERATE)
        _texts(alarm, f"{origin}/cloudwatch/alarms.json", what, "Region")
        _texts(alarm["Request"], f"{origin}/cloudwatch/alarms.json", f"{what}'s Request", "AlarmName")
        key = (alarm["Region"], alarm["Request"]["AlarmName"])
        if key in seen:
            raise InputError(f"alarm {key[1]!r} in {key[0]} is listed twice", where=f"{origin}/cloudwatch/alarms.json",
                             hint=REGENERATE)
        seen.add(key)
    return Desired(grafana, dict(settings.grafana["folder"]), dashboards, regions, alarms,
                   settings.alarms["name_prefix"], settings.cloudwatch["dashboard_prefix"])


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

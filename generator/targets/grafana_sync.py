"""Plan and push Grafana: create the folder, post only what changed, never clobber."""

from __future__ import annotations

from typing import Any, Callable

from .. import diff
from ..changes import CREATE, DELETE, DRIFT, FOREIGN, UNCHANGED, UPDATE, Change, Outcome
from ..errors import RemoteError
from ..ownership import (GRAFANA_OWNER_TAG, content_hash, grafana_content, grafana_message, grafana_owned,
                         grafana_pushed_hash)
from .grafana_api import GrafanaClient


def plan(client: GrafanaClient, dashboards: dict[str, dict[str, Any]], folder: dict[str, str]) -> list[Change]:
    """`dashboards`: uid -> generated dashboard JSON. Reads only."""
    changes: list[Change] = []
    live_folder = client.folder(folder["uid"])
    changes.append(Change("grafana", "folder", folder["uid"], UNCHANGED if live_folder else CREATE,
                          [] if live_folder else [f"title {folder['title']!r}"]))
    for uid, desired in sorted(dashboards.items()):
        live = client.dashboard(uid)
        if live is None:
            changes.append(Change("grafana", "dashboard", uid, CREATE, [f"title {desired.get('title')!r}"]))
            continue
        model, meta = live.get("dashboard", {}), live.get("meta", {})
        change = Change("grafana", "dashboard", uid, UNCHANGED, live=live)
        if not grafana_owned(model):
            change.action = FOREIGN
            change.details = [f"{model.get('title')!r} exists and is not managed by gpudash (no "
                              f"{GRAFANA_OWNER_TAG} tag); --force takes it over"]
        elif grafana_content(model) == grafana_content(desired) and meta.get("folderUid") == folder["uid"]:
            change.action = UNCHANGED  # nothing to write, so whoever saved it last does not matter
        else:
            latest = client.latest_version(uid) or {}
            if grafana_pushed_hash(latest.get("message")) != content_hash(grafana_content(model)):
                who = latest.get("createdBy") or "someone"
                change.action = DRIFT
                change.details = [f"changed in Grafana by {who} (version {meta.get('version')}) since gpudash "
                                  f"pushed it; --force overwrites"] + diff.grafana(model, desired)
            else:
                change.action = UPDATE
                change.details = diff.grafana(model, desired)
                if meta.get("folderUid") != folder["uid"]:
                    change.details.append(f"folder {meta.get('folderUid')} → {folder['uid']}")
        changes.append(change)
    for hit in client.search_tag(GRAFANA_OWNER_TAG):
        if hit.get("uid") not in dashboards:
            changes.append(Change("grafana", "dashboard", hit["uid"], DELETE,
                                  [f"{hit.get('title')!r} is managed by gpudash but no longer defined; --prune deletes it"]))
    return changes


def push(client: GrafanaClient, changes: list[Change], dashboards: dict[str, dict[str, Any]],
         folder: dict[str, str], note: str, *, force: bool, prune: bool, dry_run: bool,
         progress: Callable[[Change], None] = lambda change: None) -> list[Outcome]:
    outcomes: list[Outcome] = []
    for change in changes:
        progress(change)
        action = change.action
        if action == UNCHANGED or (action == DELETE and not prune) or (change.blocked and not force):
            outcomes.append(Outcome(change, done=False))
            continue
        if dry_run:
            outcomes.append(Outcome(change, done=False))
            continue
        try:
            if change.kind == "folder":
                client.create_folder(folder["uid"], folder["title"])
            elif action == DELETE:
                client.delete(change.name)
            else:
                desired = dict(dashboards[change.name])
                live = change.live or {}
                overwrite = change.blocked  # only a forced takeover overwrites blindly
                if live and not overwrite:
                    desired["version"] = live.get("dashboard", {}).get("version")  # optimistic concurrency
                desired.pop("id", None)
                client.save(desired, folder["uid"], grafana_message(dashboards[change.name], note), overwrite)
            outcomes.append(Outcome(change, done=True))
        except RemoteError as exc:
            outcomes.append(Outcome(change, done=False, error=str(exc)))
            if change.kind == "folder":
                break  # nothing can be saved into a folder that does not exist
    return outcomes

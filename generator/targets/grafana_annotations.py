"""People's annotations on a dashboard gpudash would delete: Grafana deletes them with it, and no version records them.

Grafana's annotations API filters what it answers by the caller's permission instead of refusing: an account that
may not read a dashboard's annotations is answered with none. An answer of none is evidence only where the account's
own permissions (GET /api/access-control/user/permissions) show it reads them. Grafana has two readings of
`annotations:read`: by annotation type (`annotations:type:dashboard`, `annotations:*`) and, with its
annotationPermissionUpdate feature (on by default since it went GA), by the dashboard or its folder
(`dashboards:uid:<uid>`, `folders:uid:<uid>`); nothing an account may read tells which one its Grafana applies, so
the scopes must cover the dashboard under both.
"""

from __future__ import annotations

from typing import Any

from ..clients.grafana import ANNOTATIONS_READ, GrafanaClient
from .grafana_around import NO_PERMISSIONS, Unread, attempt

READ = "annotations:read"


def _covers(scope: str, target: str) -> bool:
    """Whether an RBAC scope covers `target` (`dashboards:uid:x`): equal, or a wildcard (`*`, `dashboards:*`,
    `dashboards:uid:*`) whose prefix it starts with."""
    return scope == target or (scope.endswith("*") and target.startswith(scope[:-1]))


def unshown(client: GrafanaClient, uid: str, folder_uid: str | None, fresh: bool = False) -> str | None:
    """Why nothing shows gpudash's account reads the annotations of dashboard `uid` (in folder `folder_uid`); None
    when its permissions (read again if `fresh`) show it does. A failed read of the permissions is raised."""
    permissions = client.permissions(fresh=True) if fresh else client.permissions()
    if permissions is None:
        return NO_PERMISSIONS
    scopes = permissions.get(READ)
    if not scopes:
        return f"gpudash's account has no {READ} permission"
    by_type = any(_covers(scope, "annotations:type:dashboard") for scope in scopes)
    targets = [f"dashboards:uid:{uid}"] + ([f"folders:uid:{folder_uid}"] if folder_uid else [])
    by_dashboard = any(_covers(scope, target) for scope in scopes for target in targets)
    if by_type and by_dashboard:
        return None
    shown = ", ".join(sorted(scopes)[:5]) + (" ..." if len(scopes) > 5 else "")
    missing = " and ".join(what for what, held in (("as annotations:type:dashboard", by_type),
                                                   (f"by the dashboard or its folder ({' or '.join(targets)})",
                                                    by_dashboard)) if not held)
    return f"gpudash's account's {READ} scopes ({shown}) do not cover this dashboard's annotations {missing}"


def read_annotations(client: GrafanaClient, uid: str, dashboard_id: Any, folder_uid: str | None
                     ) -> list[dict[str, Any]] | Unread:
    """The dashboard's annotations, or Unread: not shown readable by gpudash's account (`unshown`: an answer of none
    would prove nothing), or the read failed (not a valid answer, refused)."""
    def read() -> list[dict[str, Any]] | Unread:
        why = unshown(client, uid, folder_uid)
        if why is not None:
            return Unread(f"are not shown readable by gpudash's account ({why}), and Grafana answers an account that "
                          "may not read them with none instead of refusing")
        return client.annotations(uid, dashboard_id)
    return attempt(read)


def annotation_ids(notes: list[dict[str, Any]]) -> list[str]:
    return sorted(repr(note.get("id")) for note in notes)


def annotators(notes: list[dict[str, Any]]) -> str:
    return ", ".join(sorted({str(note.get("login") or note.get("email") or "someone") for note in notes})[:5])


def annotation_count(notes: list[dict[str, Any]]) -> str:
    """How many were read, as "100+" where there are more than ANNOTATIONS_READ (one more is read to tell)."""
    return f"{ANNOTATIONS_READ}+" if len(notes) > ANNOTATIONS_READ else str(len(notes))

"""A dashboard a person shared externally (a public dashboard: Grafana's "Share externally", a link anyone may open
without signing in). Grafana's delete of a dashboard deletes its public dashboard too, and no version of the dashboard
records one: gpudash deletes a dashboard only where Grafana says it has none, or with --force."""

from __future__ import annotations

from typing import Any

from ..clients.deadline import DeadlineExceeded
from ..clients.grafana import GrafanaClient
from ..errors import RemoteError

UNREAD = "unread"  # what the plan records where it could not read whether the dashboard is shared


def read_public(client: GrafanaClient, uid: str) -> tuple[dict[str, Any] | None, str]:
    """The dashboard's public dashboard (None: Grafana says it has none), or None and why it was not read."""
    try:
        return client.public_dashboard(uid), ""
    except DeadlineExceeded:
        raise
    except RemoteError as exc:
        return None, f"could not be read ({exc.what})"


def shared(public: dict[str, Any]) -> str:
    """Which public dashboard, and who made it: `public dashboard pd1, by user id 7` (Grafana gives only the id)."""
    who = public.get("createdBy")
    by = f", by user id {who}" if isinstance(who, int) and not isinstance(who, bool) else ""
    paused = "" if public.get("isEnabled", True) is not False else ", paused"
    return f"public dashboard {public['uid']}{by}{paused}"

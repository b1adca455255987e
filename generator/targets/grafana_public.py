"""A dashboard a person shared externally (a public dashboard: Grafana's "Share externally", a link anyone may open
without signing in). Grafana's delete of a dashboard deletes its public dashboard too, and no version of the dashboard
records one: gpudash deletes a dashboard only where Grafana says it has none, or with --force."""

from __future__ import annotations

from typing import Any

def shared(public: dict[str, Any]) -> str:
    """Which public dashboard, and who made it: `public dashboard pd1, by user id 7` (Grafana gives only the id)."""
    who = public.get("createdBy")
    by = f", by user id {who}" if isinstance(who, int) and not isinstance(who, bool) else ""
    paused = "" if public.get("isEnabled", True) is not False else ", paused"
    return f"public dashboard {public['uid']}{by}{paused}"

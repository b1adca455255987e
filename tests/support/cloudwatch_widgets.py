"""Reads the generated CloudWatch dashboards back: each metric widget, the panel it was made from."""

from __future__ import annotations

import json


def widgets(files):
    """(path, properties) of every metric widget in the generated dashboards, in path order."""
    for path, data in sorted(files.items()):
        if path.startswith("cloudwatch/dashboards/"):
            for widget in json.loads(json.loads(data)["DashboardBody"])["widgets"]:
                if widget["type"] == "metric":
                    yield path, widget["properties"]


def panel(project, path, title, cluster):
    """The one panel titled `title` on the dashboard that `path` (gpudash-<cluster>-<id>.json) holds."""
    dashboard_id = path.rsplit("/", 1)[1].removeprefix(f"gpudash-{cluster}-").removesuffix(".json")
    (found,) = [p for d in project.cloudwatch_definitions() if d.id == dashboard_id for p in d.panels()
                if p.title == title]
    return found


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))

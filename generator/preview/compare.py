"""`--diff BASE_DIR`: the panels that differ between two builds, drawn side by side (before / after).

Panels are matched by dashboard uid and panel title (a title that repeats by its count, as plan's diff matches
them); a panel differs when anything in its JSON but its position and id does. Before and after run against the same
Prometheus over the same window, each with its own dashboard's variables.
"""

from __future__ import annotations

import copy
import json
from html import escape
from typing import Any

from ..diff import titled
from . import page
from .site import PagePlan, boxes, run_queries, visual_panels, window_text

HALF = 12


def _comparable(panel: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in panel.items() if k not in ("gridPos", "id")}, sort_keys=True)


def changes(base: dict[str, Any], new: dict[str, Any]) -> list[tuple[dict | None, dict | None]]:
    """(before, after) for each panel added, removed or changed; None where the panel is absent."""
    before, after = titled(visual_panels(base)), titled(visual_panels(new))
    found = []
    for title in [*after, *(t for t in before if t not in after)]:
        old, fresh = before.get(title), after.get(title)
        if old is None or fresh is None or _comparable(old) != _comparable(fresh):
            found.append((old, fresh))
    return found


def _side(model: dict[str, Any], panels: list[dict | None], x: int) -> dict[str, Any]:
    """`model` holding only `panels`, stacked in one half of the grid (a missing panel is skipped)."""
    placed, y = [], 0
    for panel in panels:
        if panel is not None:
            moved = copy.deepcopy(panel)
            height = int((panel.get("gridPos") or {}).get("h", 8))
            moved["gridPos"] = {"x": x, "y": y, "w": HALF, "h": height}
            placed.append(moved)
        y += max(int(((panel or {}).get("gridPos") or {}).get("h", 8)), 1)
    return {**model, "panels": placed}


def diff_pages(base: list[tuple[str, dict]], new: list[tuple[str, dict]], plans: list[PagePlan], client,
               source: str, base_name: str, new_name: str | None) -> dict[str, bytes]:
    """`diff.html`: per dashboard, each changed panel before (left) and after (right)."""
    base_models, new_models = dict(base), dict(new)
    windows = {p.uid: (p.window, p.end) for p in plans}
    if not windows:
        return {}
    any_window = next(iter(windows.values()))
    sides: list[tuple[str, str, PagePlan, PagePlan, list]] = []
    for uid in [*new_models, *(u for u in base_models if u not in new_models)]:
        old = base_models.get(uid, {"title": uid, "panels": []})
        fresh = new_models.get(uid, {"title": uid, "panels": []})
        found = [(copy.deepcopy(b), copy.deepcopy(a)) for b, a in changes(old, fresh)]
        if not found:
            continue
        for pair in found:  # both sides take the taller panel's height, so rows line up
            height = max(int(((p or {}).get("gridPos") or {}).get("h", 8)) for p in pair)
            for p in pair:
                if p is not None:
                    p.setdefault("gridPos", {})["h"] = height
        window, end = windows.get(uid, any_window)
        left = PagePlan(uid, str(old.get("title", uid)), _side(old, [b for b, _ in found], 0), window, end)
        right = PagePlan(uid, str(fresh.get("title", uid)), _side(fresh, [a for _, a in found], HALF), window, end)
        sides.append((uid, str(fresh.get("title") or old.get("title") or uid), left, right, found))
    run_queries([plan for _, _, left, right, _ in sides for plan in (left, right)], client)
    sections = []
    for uid, title, left, right, found in sides:
        changed = ", ".join(escape(str((a or b).get("title", "")))
                            + ("" if a and b else " (added)" if a else " (removed)") for b, a in found)
        placed = boxes(left)[0] + boxes(right)[0]
        sections.append(f'<h2 class="dashboard">{escape(title)} <small>({escape(uid)}): {changed}</small></h2>'
                        f'<div class="side"><h3>before: {escape(base_name)}</h3><h3>after: '
                        f'{escape(new_name or "generated now")}</h3></div><div class="grid">{"".join(placed)}</div>')
    body = "".join(sections) or '<p class="nodata">No panel differs between the two builds.</p>'
    header = page.header("Panels that differ", source, window_text(plans[0]) if plans else "")
    return {"diff.html": page.document("gpudash preview: panels that differ", header + body).encode()}

"""Readable semantic differences between a live object and the generated one.

The live object is whatever the remote system holds (a hand-made import, another tool's JSON), so
the itemised difference is a description, never a reason to fail: where the live object is shaped
unlike what gpudash writes, the difference is reported whole instead of item by item.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

_ODD_SHAPE = (AttributeError, TypeError, KeyError, IndexError, ValueError)


def _tolerant(describe: Callable[[Any, Any], list[str]]) -> Callable[[Any, Any], list[str]]:
    @functools.wraps(describe)
    def safe(live: Any, desired: Any) -> list[str]:
        try:
            return describe(live, desired)
        except _ODD_SHAPE as exc:
            return [f"the live object is shaped unlike what gpudash writes ({type(exc).__name__}: {exc}); "
                    f"it differs as a whole"]
    return safe


def _fmt(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if not isinstance(value, str) else value


def _panels(model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    panels = {}
    for panel in model.get("panels", []):
        if panel.get("type") != "row":
            panels[panel.get("title", "?")] = panel
    return panels


def _thresholds(panel: dict[str, Any]) -> list[Any]:
    steps = panel.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {}).get("steps", [])
    return [step.get("value") for step in steps if step.get("value") is not None]


@_tolerant
def grafana(live: dict[str, Any], desired: dict[str, Any]) -> list[str]:
    lines = []
    if live.get("title") != desired.get("title"):
        lines.append(f"title {live.get('title')!r} → {desired.get('title')!r}")
    old, new = _panels(live), _panels(desired)
    lines += [f"panel added: {t!r}" for t in new if t not in old]
    lines += [f"panel removed: {t!r}" for t in old if t not in new]
    for title in (t for t in new if t in old):
        before, after = old[title], new[title]
        old_exprs = [t.get("expr") for t in before.get("targets", [])]
        new_exprs = [t.get("expr") for t in after.get("targets", [])]
        if old_exprs != new_exprs:
            lines.append(f"panel {title!r}: query changed: {' | '.join(map(str, old_exprs))} → "
                         f"{' | '.join(map(str, new_exprs))}")
        old_legends = [t.get("legendFormat") for t in before.get("targets", [])]
        new_legends = [t.get("legendFormat") for t in after.get("targets", [])]
        if old_legends != new_legends:
            lines.append(f"panel {title!r}: legend {old_legends} → {new_legends}")
        if _thresholds(before) != _thresholds(after):
            lines.append(f"panel {title!r}: threshold {', '.join(map(_fmt, _thresholds(before))) or 'none'} → "
                         f"{', '.join(map(_fmt, _thresholds(after))) or 'none'}")
        unit_before = before.get("fieldConfig", {}).get("defaults", {}).get("unit")
        unit_after = after.get("fieldConfig", {}).get("defaults", {}).get("unit")
        if unit_before != unit_after:
            lines.append(f"panel {title!r}: unit {unit_before} → {unit_after}")
        if before.get("gridPos") != after.get("gridPos") and not lines:
            lines.append(f"panel {title!r}: moved")
    old_vars = [v.get("name") for v in live.get("templating", {}).get("list", [])]
    new_vars = [v.get("name") for v in desired.get("templating", {}).get("list", [])]
    if old_vars != new_vars:
        lines.append(f"variables {old_vars} → {new_vars}")
    return lines or ["other settings changed"]


def _widgets(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w.get("properties", {}).get("title") or w.get("properties", {}).get("markdown", "")[:40]: w
            for w in body.get("widgets", [])}


@_tolerant
def cloudwatch_dashboard(live: dict[str, Any], desired: dict[str, Any]) -> list[str]:
    old, new = _widgets(live), _widgets(desired)
    lines = [f"widget added: {t!r}" for t in new if t not in old]
    lines += [f"widget removed: {t!r}" for t in old if t not in new]
    for title in (t for t in new if t in old):
        before, after = old[title].get("properties", {}), new[title].get("properties", {})
        if before.get("metrics") != after.get("metrics"):
            lines.append(f"widget {title!r}: query changed")
        old_lines = [a.get("value") for a in before.get("annotations", {}).get("horizontal", [])]
        new_lines = [a.get("value") for a in after.get("annotations", {}).get("horizontal", [])]
        if old_lines != new_lines:
            lines.append(f"widget {title!r}: threshold {', '.join(map(_fmt, old_lines)) or 'none'} → "
                         f"{', '.join(map(_fmt, new_lines)) or 'none'}")
    return lines or ["layout or text changed"]


@_tolerant
def fields(live: dict[str, Any], desired: dict[str, Any]) -> list[str]:
    """Changed top-level fields, `Threshold 85 → 90` style."""
    lines = []
    for key in sorted(set(live) | set(desired)):
        if live.get(key) != desired.get(key):
            before, after = live.get(key), desired.get(key)
            if isinstance(before, (list, dict)) or isinstance(after, (list, dict)):
                lines.append(f"{key} changed")
            else:
                lines.append(f"{key} {_fmt(before)} → {_fmt(after)}")
    return lines

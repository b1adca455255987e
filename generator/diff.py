"""Readable semantic differences between a live object and the generated one.

The live object is whatever the remote system holds (a hand-made import, another tool's JSON), so
the itemised difference is a description, never a reason to fail: where the live object is shaped
unlike what gpudash writes, the difference is reported whole instead of item by item.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable

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


def titled(charts: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """`charts` (panels, in the layout's order) by title; a title that repeats is told by its count ('Util', then
    'Util (2)'), so that none hides another."""
    found: dict[str, dict[str, Any]] = {}
    seen: dict[str, int] = {}
    for chart in charts:
        title = str(chart.get("title", "?"))
        seen[title] = seen.get(title, 0) + 1
        found[title if seen[title] == 1 else f"{title} ({seen[title]})"] = chart
    return found


def _panels(model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The dashboard's panels but rows, those a collapsed row holds included (titled); a row's `panels` that is no
    list (a hand-made dashboard's) holds none."""
    def inside(panel: dict[str, Any]) -> list[Any]:
        held = panel.get("panels") if panel.get("type") == "row" else [panel]
        return held if isinstance(held, list) else []
    return titled(chart for panel in model.get("panels", []) for chart in inside(panel)
                  if isinstance(chart, dict) and chart.get("type") != "row")


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
    lines += _renumbered(old, new)
    old_vars = [v.get("name") for v in live.get("templating", {}).get("list", [])]
    new_vars = [v.get("name") for v in desired.get("templating", {}).get("list", [])]
    if old_vars != new_vars:
        lines.append(f"variables {old_vars} → {new_vars}")
    return lines or ["other settings changed"]


def _renumbered(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> list[str]:
    """The panels of both whose id changes, in one line: what people tie to a panel's id (annotations made on it,
    viewPanel and d-solo links, alert rules linked to it by __panelId__) stays with the id, not the panel."""
    moved = [f"{t!r} {old[t].get('id')} → {after.get('id')}" for t, after in new.items()
             if t in old and old[t].get("id") != after.get("id")]
    if not moved:
        return []
    return [f"panel ids: {len(moved)} of {len(new)} panel(s) get another id ({first_five(moved)}): annotations made "
            f"on them, links to them (viewPanel, d-solo) and alert rules linked to them keep the old id "
            f"(docs/definitions.md#panel-ids-in-grafana)"]


def first_five(items: list[str]) -> str:
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")


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
            elif isinstance(before, str) and isinstance(after, str) and max(len(before), len(after)) > LONG_TEXT:
                lines += text_changes(key, before, after)
            else:
                lines.append(f"{key} {_fmt(before)} → {_fmt(after)}")
    return lines


LONG_TEXT = 80  # a text longer than this (an AlarmDescription of up to 1,024 characters) shows its changed words only
_CONTEXT_WORDS = 4  # words shown on each side of a change
_PASSAGES = 5  # changed passages listed; the rest are counted
_SHOWN = 60  # characters of one side of a change shown


def text_changes(key: str, before: str, after: str) -> list[str]:
    """The words that changed between two long texts, each with a few words around it (`AlarmDescription: "85" →
    "90" in "… stays above 85 °C for …"`), instead of both texts whole."""
    import difflib

    old, new = before.split(), after.split()
    passages = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not passages:
        return [f"{key}: spacing changed"]
    lines = []
    for tag, i1, i2, j1, j2 in passages[:_PASSAGES]:
        words, start, end = (new, j1, j2) if tag == "insert" else (old, i1, i2)
        around = (("… " if start > _CONTEXT_WORDS else "") + " ".join(words[max(0, start - _CONTEXT_WORDS):
                                                                              end + _CONTEXT_WORDS])
                  + (" …" if end + _CONTEXT_WORDS < len(words) else ""))
        gone, came = _cut(" ".join(old[i1:i2])), _cut(" ".join(new[j1:j2]))
        if tag == "insert":
            lines.append(f'{key}: "{came}" added in "{_cut(around, 3 * _SHOWN)}"')
        elif tag == "delete":
            lines.append(f'{key}: "{gone}" removed from "{_cut(around, 3 * _SHOWN)}"')
        else:
            lines.append(f'{key}: "{gone}" → "{came}" in "{_cut(around, 3 * _SHOWN)}"')
    if len(passages) > _PASSAGES:
        lines.append(f"{key}: {len(passages) - _PASSAGES} more changed passages")
    return lines


def _cut(text: str, limit: int = _SHOWN) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"

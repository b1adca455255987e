"""A generated Grafana panel's id: made from what names the panel in its dashboard, never from its place.

Grafana ties to a panel's id what people make around it: annotations drawn on it (an annotation's panelId), links to
it alone (`?viewPanel=<id>`, `d-solo/<uid>?panelId=<id>` embeds, reports), alert rules linked to it (`__panelId__`).
An id that was the panel's place in the layout moved all of that onto another panel whenever a panel was added before
it, or one the counters CSV no longer collects was dropped before it.

A panel is named in its dashboard by its title (as plan's diff and the CloudWatch dashboard's header name it), a row
by its own; a title that repeats (a Grafana-only dashboard may repeat one) is told apart by how many of that kind and
title come before it in the layout. Rows and panels are named apart, so a row and a panel may share a title.

A name's id is the first of its candidates (sha256 of the name and a count 0, 1, 2, ...; nothing of Python's `hash()`,
which differs between processes) from 1 to ID_CEILING that no name sorted before it took: the same in every run and
process, whatever the layout. ID_CEILING keeps ids within a signed 32-bit integer (Grafana's dashboard kind declares a
panel id uint32, its annotations and alert rules int64, its browser code a JavaScript number), with room above for the
ids Grafana gives panels a person adds (the highest + 1). Two names share a first candidate with a chance of about
n²/2^32 in a dashboard of n panels (1 in 4,300 at 1,000 panels): the one sorted first keeps it, the other takes its
next candidate.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable

ID_CEILING = 2**31 - 1
ROW, PANEL = "row", "panel"


def names(items: Iterable[tuple[str, str]]) -> list[str]:
    """The name of each (kind, title) in the layout's order: its kind, its title and how many of that kind and title
    came before it, as JSON text."""
    seen: dict[tuple[str, str], int] = {}
    named = []
    for kind, title in items:
        before = seen[(kind, title)] = seen.get((kind, title), -1) + 1
        named.append(json.dumps([kind, title, before], ensure_ascii=False))
    return named


def candidate(name: str, attempt: int) -> int:
    """The `attempt`-th id (from 0) that `name` may take: from 1 to ID_CEILING."""
    digest = hashlib.sha256(f"{attempt}\n{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % ID_CEILING + 1


def panel_ids(items: Iterable[tuple[str, str]], kept: Iterable[int] = ()) -> list[int]:
    """The id of each (kind, title) given in the layout's order (kind ROW or PANEL): distinct, and none of `kept`
    (ids the dashboard's other panels hold), each from its name alone but where two names' candidates meet (the name
    sorted first keeps it)."""
    named = names(items)
    taken: set[int] = set(kept)
    ids: dict[str, int] = {}
    for name in sorted(named):
        attempt = 0
        while (number := candidate(name, attempt)) in taken:
            attempt += 1
        taken.add(number)
        ids[name] = number
    return [ids[name] for name in named]


def _held(value: Any) -> bool:
    """An id a panel holds: a whole number from 1 (Grafana gives a panel of none, 0 or another value one at load, by
    its place: the highest + 1)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def given_ids(model: dict[str, Any]) -> None:
    """Every panel of `model` (a grafanalib dashboard's JSON, its rows moved onto the grid), those a collapsed row
    holds included, that holds no id given one from its title, in place; the ids its definition gives are kept.
    Titles that repeat are counted in the layout's order, a collapsed row's panels right after the row (where they are
    when it is open): collapsing a row moves no id."""
    panels = []
    for panel in model.get("panels") or []:
        if isinstance(panel, dict):
            panels.append(panel)
            if panel.get("type") == "row":
                panels += [inner for inner in panel.get("panels") or [] if isinstance(inner, dict)]
    bare = [p for p in panels if not _held(p.get("id"))]
    if not bare:
        return
    ids = panel_ids(((ROW if p.get("type") == "row" else PANEL, str(p.get("title") or "")) for p in bare),
                    kept=[p["id"] for p in panels if _held(p.get("id"))])
    for panel, number in zip(bare, ids):
        panel["id"] = number

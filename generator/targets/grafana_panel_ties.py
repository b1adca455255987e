"""What people tied to a panel by its id that a save of the dashboard leaves behind: annotations made on the panel
(Grafana draws one on the panel of its panelId alone) and alert rules linked to it (their `__panelId__`). A save that
gives a panel another id (its title changed, or the dashboard was published before ids were made from titles:
panel_ids), or drops it, leaves them naming the old id: drawn on no panel, or on the panel that now holds that id.
gpudash changes nothing of them (they are people's): plan and push name them, with the ids to write, so a person can.
Read only where a save moves some panel's id; a read that fails or is refused is said, never read as none."""

from __future__ import annotations

import re
from typing import Any

from ..clients.grafana import ANNOTATIONS_READ, GrafanaClient
from ..diff import first_five
from .grafana_annotations import read_annotations
from .grafana_around import Unread, read_alert_rules

LINKED_PANEL = "__panelId__"  # the annotation by which an alert rule links itself to a panel of its dashboard
_GO_INT = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.ParseInt(s, 10, 64) reads: ASCII digits, a sign allowed


def linked_panel(value: Any) -> int | None:
    """The panel id a rule's __panelId__ names as Grafana reads it (strconv.ParseInt, base 10, into an int64), or None
    where Grafana reads none (`²` is a digit to Python's str.isdigit(), not to Go)."""
    if not isinstance(value, str) or not _GO_INT.fullmatch(value):
        return None
    number = int(value)
    return number if -2**63 <= number < 2**63 else None


def _listed(value: Any) -> list[Any]:
    """`value` where it is a list; a live dashboard is whatever Grafana holds (a hand-made import): anything else holds
    no panel."""
    return value if isinstance(value, list) else []


def _charts(model: dict[str, Any]) -> list[dict[str, Any]]:
    """The dashboard's panels but rows, those a collapsed row holds included, in their order."""
    found = []
    for panel in _listed(model.get("panels")):
        if not isinstance(panel, dict):
            continue
        if panel.get("type") == "row":
            found += [p for p in _listed(panel.get("panels")) if isinstance(p, dict) and p.get("type") != "row"]
        else:
            found.append(panel)
    return found


def _by_name(model: dict[str, Any]) -> dict[tuple[str, int], Any]:
    """Each panel's id by its title and how many of that title come before it."""
    seen: dict[str, int] = {}
    named = {}
    for panel in _charts(model):
        title = str(panel.get("title", ""))
        seen[title] = seen.get(title, -1) + 1
        named[(title, seen[title])] = panel.get("id")
    return named


def _an_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def moved(live: dict[str, Any], desired: dict[str, Any]) -> dict[int, tuple[str, Any, str | None]]:
    """{id a panel of `live` has: (its title, the id the save gives it (None: the save drops it), the title of the
    panel holding that id after the save (None: none))}, for each panel whose id the save changes."""
    after = _by_name(desired)
    holders = {panel.get("id"): str(panel.get("title", "")) for panel in _charts(desired)}
    found = {}
    for (title, _), number in _by_name(live).items():
        if _an_id(number) and after.get((title, _)) != number:
            found[number] = (title, after.get((title, _)), holders.get(number))
    return found


def unnumbered(live: dict[str, Any]) -> list[str]:
    """The titles of the panels of `live` that hold no id of their own (none, not a whole number, or an earlier
    panel's): Grafana numbers them by place when it loads the dashboard, so what people tied to them carries a number
    the dashboard's JSON does not hold."""
    held: set[int] = set()
    loose = []
    for panel in _charts(live):
        number = panel.get("id")
        if not _an_id(number) or number in held:
            loose.append(str(panel.get("title", "")))
        else:
            held.add(number)
    return loose


def _panel(number: int, fate: tuple[str, Any, str | None]) -> str:
    title, new, _ = fate
    return f"panel {title!r} (id {number}, {f'which becomes {new}' if new is not None else 'which the save drops'})"


def _after(number: int, fate: tuple[str, Any, str | None]) -> str:
    holder = fate[2]
    return f"the panel {holder!r}, which takes id {number}" if holder is not None else "no panel"


class PanelTies:
    """The ties of one plan: the alert rules read once, at the first dashboard whose save moves a panel's id."""

    def __init__(self, client: GrafanaClient):
        self.client = client
        self._rules: list[dict[str, Any]] | Unread | None = None

    def said(self, uid: str, live: dict[str, Any], desired: dict[str, Any]) -> list[str]:
        """What people tied to the panels whose id a save of `desired` over `live` (as read) moves, as plan's lines."""
        model = live.get("dashboard") or {}
        fates, loose = moved(model, desired), unnumbered(model)
        lines = []
        if loose:
            lines.append(f"{len(loose)} panel(s) of {uid} hold no id of their own in Grafana "
                         f"({first_five([repr(title) for title in loose])}): Grafana "
                         f"numbers them by place when it loads the dashboard, so the annotations made on them and the "
                         f"alert rules linked to them were not matched")
        if not fates:
            return lines
        notes = read_annotations(self.client, uid, model.get("id"), (live.get("meta") or {}).get("folderUid"))
        if isinstance(notes, Unread):
            lines.append(f"annotations made on the panels whose id changes were not read: they {notes.why}")
        else:
            # the answer holds the newest ANNOTATIONS_READ + 1 at most: more means older ones went unread
            some = "at least " if len(notes) > ANNOTATIONS_READ else ""
            for number, fate in sorted(fates.items()):
                on = [note for note in notes if note.get("panelId") == number]
                if on:
                    people = ", ".join(sorted({str(n.get("login") or n.get("email") or "someone") for n in on}))
                    lines.append(f"{some}{len(on)} annotation(s) by {people} made on {_panel(number, fate)}: they keep "
                                 f"id {number}, and after the save are drawn on {_after(number, fate)}")
            if some:
                lines.append(f"annotations of {uid} older than the newest {len(notes)} were not read: those made on "
                             f"the panels whose id changes are not all named (Grafana's annotations API, asked with "
                             f"dashboardUID={uid} and a panelId, lists them)")
        if self._rules is None:
            self._rules = read_alert_rules(self.client)
        if isinstance(self._rules, Unread):
            lines.append(f"alert rules linked to the panels whose id changes were not read: they {self._rules.why}")
            return lines
        for rule in sorted(self._rules, key=lambda r: r["uid"]):
            linked = rule.get("annotations") or {}
            number = linked_panel(linked.get(LINKED_PANEL))
            if linked.get("__dashboardUid__") == uid and number in fates:
                fate = fates[number]
                fix = f"write {fate[1]} in its {LINKED_PANEL}" if fate[1] is not None else f"edit its {LINKED_PANEL}"
                lines.append(f"alert rule {rule['title']!r} ({rule['uid']}) is linked by its {LINKED_PANEL} to "
                             f"{_panel(number, fate)}: after the save it links to {_after(number, fate)}; {fix}")
        return lines

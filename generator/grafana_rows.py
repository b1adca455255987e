"""A dashboard laid out in rows (`"rows": [{"panels": [...]}]`, Grafana's layout before schemaVersion 16, which
grafanalib still writes for `Dashboard(rows=[Row(...)])`) moved onto Grafana's grid, as Grafana moves it when it loads
one (its schemaVersion 16 migration, upgradeToGridLayout). Lint, preview, plan's diff and the dashboard split read
`panels` only: the dashboard is moved once, where it is read, and written so.

Grafana's facts: a row's height is in pixels (250 unless given; "400px" or 400), at least 90, and takes
ceil(height / 38) grid units (30 a cell, 8 between); a panel's span is twelfths of the width (4 unless given), its
width floor(span * 2) of 24 columns, its height the row's unless it gives its own. Panels are placed left to right
in the row's band, the next band below when one does not fit. Row panels are made only where some row is collapsed,
repeated or shows its title; a row panel takes one grid unit (the migration writes the band's height on it, which
Grafana's grid replaces with 1 when it draws the row, and saves so), and a collapsed row holds its panels. Grafana
numbers row panels after the highest panel id, so a panel or row added renumbered them: here they get none, and
grafana_inputs gives them one from the row's title, as every panel without one (panel_ids.given_ids). Grafana then
orders the panels by their place (top to bottom, left to right).
The dashboard keeps its schemaVersion: Grafana's later migrations still apply, and its own move finds no rows left.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import InputError

COLUMNS = 24
DEFAULT_SPAN = 4
DEFAULT_ROW_HEIGHT = 250.0
CELL_HEIGHT = 30
CELL_MARGIN = 8
MIN_PANEL_HEIGHT = CELL_HEIGHT * 3


def moved_to_grid(model: dict[str, Any], where: str) -> None:
    """Move `model`'s rows (if any) onto the grid, in place: its `panels` then hold every panel with its gridPos."""
    if not model.get("rows") or not isinstance(model["rows"], list):
        return  # (grafanalib writes "rows": [] beside a dashboard's panels: that one is left as it is)
    rows = [row for row in model.pop("rows") if isinstance(row, dict) and not row.get("repeatIteration")]
    panels = [p for p in model.get("panels") or []]
    show_rows = any(row.get("collapse") or row.get("showTitle") or row.get("repeat") for row in rows)
    y = 0
    for row in rows:
        pixels = _pixels(row.get("height"))
        band = _grid_height(DEFAULT_ROW_HEIGHT if pixels is None else pixels)
        collapsed = bool(row.get("collapse"))
        row_panel = None
        if show_rows:
            row_panel = {"id": None, "type": "row", "title": row.get("title"), "collapsed": collapsed,
                         "repeat": row.get("repeat") or "", "panels": [],
                         "gridPos": {"x": 0, "y": y, "w": COLUMNS, "h": 1}}
            y += 1
        area = _Band(band, y)
        for panel in row.get("panels") or []:
            if not isinstance(panel, dict):
                continue
            width = math.floor(_span(panel, where) * COLUMNS / 12)
            if panel.get("minSpan"):
                panel["minSpan"] = min(COLUMNS, math.floor(COLUMNS / 12 * _number(panel["minSpan"], "minSpan", where)))
            own = _pixels(panel.get("height")) if panel.get("height") else None
            height = band if own is None else _grid_height(own)
            x, dy = area.place(height, width)
            y = area.top
            panel["gridPos"] = {"x": x, "y": y + dy, "w": width, "h": height}
            area.fill(panel["gridPos"])
            panel.pop("span", None)
            (row_panel["panels"] if row_panel is not None and collapsed else panels).append(panel)
        if row_panel is not None:
            panels.append(row_panel)
        if not (row_panel is not None and collapsed):
            y += band
    # Grafana orders the panels by their place once loaded (Python's sort keeps equal places in their order, as its)
    panels.sort(key=lambda p: (_place(p, "y"), _place(p, "x")))
    model["panels"] = panels


class _Band:
    """The band of grid rows a row's panels fill: how far down each of its 24 columns is taken."""

    def __init__(self, height: int, top: int) -> None:
        self.taken = [0] * COLUMNS
        self.height = height
        self.top = top

    def place(self, height: int, width: int) -> tuple[int, int]:
        """(x, y within the band) of the next panel `width` wide: in the free run of columns at the band's right
        end, below what they hold; the band below when it does not fit."""
        start = end = None
        for i in range(COLUMNS - 1, -1, -1):
            if self.height - self.taken[i] <= 0:
                break
            if end is None:
                end = i
            elif i < COLUMNS - 1 and self.taken[i] <= self.taken[i + 1]:
                start = i
            else:
                break
        if start is not None and end is not None and end - start >= width - 1:
            return start, max(self.taken[start:end + 1])
        self.top += self.height
        self.taken = [0] * COLUMNS
        return self.place(height, width)

    def fill(self, grid: dict[str, int]) -> None:
        for i in range(grid["x"], min(grid["x"] + grid["w"], COLUMNS)):
            self.taken[i] = max(self.taken[i], grid["y"] + grid["h"] - self.top)


def _grid_height(pixels: float) -> int:
    return math.ceil(max(pixels, MIN_PANEL_HEIGHT) / (CELL_HEIGHT + CELL_MARGIN))


def _pixels(value: Any) -> float | None:
    """A height in pixels as Grafana reads it: a number, or text such as "250px"; None where it is neither."""
    if isinstance(value, str):
        try:
            return float(value.removesuffix("px"))
        except ValueError:
            return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _span(panel: dict[str, Any], where: str) -> float:
    span = panel.get("span")
    if span is None:
        return DEFAULT_SPAN
    span = _number(span, "span", where, panel)
    if not 0 < span <= 12:
        raise InputError(f"panel {panel.get('title')!r} in a row has span {span:g}: a row is 12 wide",
                         where=where, hint="give each panel in a row a span from 1 to 12")
    return span


def _number(value: Any, name: str, where: str, panel: dict[str, Any] | None = None) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    title = f" {panel.get('title')!r}" if panel else ""
    raise InputError(f"panel{title} in a row has {name} {value!r}, not a number", where=where,
                     hint=f"give {name} a number of twelfths of the row's width")


def _place(panel: Any, axis: str) -> int:
    grid = panel.get("gridPos") if isinstance(panel, dict) else None
    value = grid.get(axis) if isinstance(grid, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0

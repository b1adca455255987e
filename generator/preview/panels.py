"""One panel's body as HTML: time series, stat, gauge, table, from its targets' query results.

A panel whose queries all answered with no series says "No data" (a grey box, not a chart, so it
cannot be mistaken for a line at zero); a query that failed shows its error on the panel, above
whatever the panel's other queries gave.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from . import svg
from .formats import format_value
from .legend import series_name
from ..clients.prometheus import Result, Series

CELL_HEIGHT, MARGIN, TITLE_HEIGHT = 30, 8, 30
PAGE_WIDTH = 1600
COLUMN_WIDTH = (PAGE_WIDTH - 23 * MARGIN) / 24


def last_value(series: Series) -> float | None:
    """The last value that is a number (Grafana's `lastNotNull`)."""
    for _, value in reversed(series.points):
        if not math.isnan(value):
            return value
    return None


def pixel_size(grid: dict[str, Any]) -> tuple[int, int]:
    w, h = int(grid.get("w", 12)), int(grid.get("h", 8))
    return int(w * COLUMN_WIDTH + (w - 1) * MARGIN), h * CELL_HEIGHT + (h - 1) * MARGIN


def _defaults(panel: dict[str, Any]) -> dict[str, Any]:
    return (panel.get("fieldConfig") or {}).get("defaults") or {}


def _steps(panel: dict[str, Any]) -> list[dict]:
    return ((_defaults(panel).get("thresholds") or {}).get("steps")) or [{"color": "green", "value": None}]


def unit_of(panel: dict[str, Any], target: dict[str, Any]) -> str | None:
    """The unit Grafana shows a target's values in: the panel's default, unless an override matching the target's
    frame (byFrameRefID) sets another (the last one wins, as Grafana applies them in order)."""
    unit = _defaults(panel).get("unit")
    for override in (panel.get("fieldConfig") or {}).get("overrides") or []:
        matcher = override.get("matcher") or {}
        if matcher.get("id") == "byFrameRefID" and matcher.get("options") == target.get("refId"):
            unit = next((p.get("value") for p in override.get("properties") or [] if p.get("id") == "unit"), unit)
    return unit


def _named(panel: dict[str, Any], results: list[tuple[dict, Result]]) -> list[tuple[str, Any, str | None]]:
    """(legend name, series, the unit of its values) of each series the panel's targets answered."""
    named = []
    for target, result in results:
        unit = unit_of(panel, target)
        for series in result.series:
            named.append((series_name(target.get("legendFormat"), series.labels, result.expr), series, unit))
    return named


def _errors(results: list[tuple[dict, Result]]) -> str:
    return "".join(f'<div class="error" title="{escape(r.expr)}">query {escape(str(t.get("refId", "?")))} failed: '
                   f'{escape(r.error)}</div>' for t, r in results if r.error)


def _no_data() -> str:
    return '<div class="nodata">No data</div>'


def _stat_label(name: str, shown: bool) -> str:
    """A stat's or gauge's legend name: shown above its value where the panel has several, else kept hidden."""
    if shown:
        return f'<div class="stat-name legend-name">{escape(name)}</div>'
    return f'<div class="legend-name hidden-name">{escape(name)}</div>'


def _stats(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "max": None, "min": None, "lastNotNull": None, "last": None}
    return {"mean": sum(values) / len(values), "max": max(values), "min": min(values),
            "lastNotNull": values[-1], "last": values[-1]}


CALC_NAMES = {"mean": "Mean", "max": "Max", "min": "Min", "lastNotNull": "Last *", "last": "Last"}


def timeseries(panel: dict[str, Any], results: list[tuple[dict, Result]], start: float, end: float) -> str:
    named = _named(panel, results)
    body = _errors(results)
    if not named:
        return body or _no_data()  # the failed queries, else No data
    width, height = pixel_size(panel.get("gridPos") or {})
    defaults = _defaults(panel)
    units = {unit for _, _, unit in named}
    unit = units.pop() if len(units) == 1 else None  # lines of several units: the axis reads plain numbers
    legend_options = (panel.get("options") or {}).get("legend") or {}
    calcs = [c for c in legend_options.get("calcs") or [] if c in CALC_NAMES]
    shown = legend_options.get("showLegend", True)
    legend_height = min(len(named), 4) * 18 + (20 if calcs else 4) if shown else 0
    chart_height = max(60, height - TITLE_HEIGHT - legend_height - 8 - (24 if body else 0))
    thresholds = _steps(panel) if ((defaults.get("custom") or {}).get("thresholdsStyle") or {}).get(
        "mode", "off") != "off" else None
    lines = [(name, list(series.points)) for name, series, _ in named]
    chart = svg.timeseries(lines, start, end, unit, width, chart_height, defaults.get("min"), defaults.get("max"),
                           thresholds)
    body += chart
    if shown:
        rows = []
        for index, (name, series, own) in enumerate(named):
            values = [v for _, v in series.points if not math.isnan(v)]
            stats = _stats(values)
            cells = "".join(f"<td>{escape(format_value(stats[c], own))}</td>" for c in calcs)
            rows.append(f'<tr><td class="name"><i style="background:{svg.PALETTE[index % len(svg.PALETTE)]}"></i>'
                        f'{escape(name)}</td>{cells}</tr>')
        head = "".join(f"<th>{CALC_NAMES[c]}</th>" for c in calcs)
        body += (f'<table class="legend"><thead><tr><th></th>{head}</tr></thead>' if calcs else
                 '<table class="legend">') + "<tbody>" + "".join(rows) + "</tbody></table>"
    return body


def stat(panel: dict[str, Any], results: list[tuple[dict, Result]]) -> str:
    named = _named(panel, results)
    body = _errors(results)
    if not named:
        return body or _no_data()  # the failed queries, else No data
    steps = _steps(panel)
    cells = []
    for name, series, unit in named:
        value = last_value(series)
        label = _stat_label(name, len(named) > 1)
        cells.append(f'<div class="stat" style="color:{svg.threshold_colour(value, steps)}">{label}'
                     f'<div class="stat-value">{escape(format_value(value, unit))}</div></div>')
    return body + f'<div class="stats">{"".join(cells)}</div>'


def gauge(panel: dict[str, Any], results: list[tuple[dict, Result]]) -> str:
    named = _named(panel, results)
    body = _errors(results)
    if not named:
        return body or _no_data()  # the failed queries, else No data
    defaults = _defaults(panel)
    steps = _steps(panel)
    cells = []
    for name, series, unit in named:
        low = defaults.get("min", 0)
        high = defaults.get("max", 1 if unit == "percentunit" else 100)
        label = _stat_label(name, len(named) > 1)
        cells.append(f'<div class="stat">{label}{svg.gauge(last_value(series), unit, low, high, steps)}</div>')
    return body + f'<div class="stats">{"".join(cells)}</div>'


def table(panel: dict[str, Any], results: list[tuple[dict, Result]]) -> str:
    body = _errors(results)
    series = [(s, unit_of(panel, t)) for t, r in results for s in r.series]
    if not series:
        return body or _no_data()  # the failed queries, else No data
    columns = sorted({k for s, _ in series for k in s.labels if k != "__name__"})
    head = "".join(f"<th>{escape(c)}</th>" for c in columns) + "<th>Value</th>"
    rows = []
    for s, unit in sorted(series, key=lambda item: [item[0].labels.get(c, "") for c in columns]):
        cells = "".join(f"<td>{escape(s.labels.get(c, ''))}</td>" for c in columns)
        rows.append(f"<tr>{cells}<td>{escape(format_value(last_value(s), unit))}</td></tr>")
    return body + f'<div class="table-wrap"><table class="data"><thead><tr>{head}</tr></thead>' \
                  f'<tbody>{"".join(rows)}</tbody></table></div>'


def body(panel: dict[str, Any], results: list[tuple[dict, Result]], start: float, end: float) -> str:
    kind = panel.get("type")
    if kind == "timeseries" or kind == "graph":
        return timeseries(panel, results, start, end)
    if kind == "stat":
        return stat(panel, results)
    if kind == "gauge" or kind == "bargauge":
        return gauge(panel, results)
    if kind == "table":
        return table(panel, results)
    return f'<div class="nodata">a {escape(str(kind))} panel is not drawn by the preview</div>'

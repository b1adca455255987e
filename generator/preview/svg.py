"""Charts as inline SVG: time series, stat and gauge. Pure: data in, markup out, no script."""

from __future__ import annotations

import math
import time
from html import escape

from .formats import format_value

# Grafana's classic palette, in its order
PALETTE = ("#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1", "#ba43a9", "#705da0",
           "#508642", "#cca300", "#447ebc", "#c15c17", "#890f02", "#0a437c", "#6d1f62", "#584477")
COLOURS = {"green": "#73bf69", "orange": "#ff9830", "red": "#f2495c", "yellow": "#fade2a", "blue": "#5794f2",
           "purple": "#b877d9", "text": "#ccccdc", "transparent": "none"}


def colour(name: str | None) -> str:
    if not name:
        return COLOURS["green"]
    return COLOURS.get(name, name if name.startswith("#") or name.startswith("rgb") else COLOURS["green"])


def threshold_colour(value: float | None, steps: list[dict]) -> str:
    """The colour of the highest threshold step at or below `value` (the base step has no value)."""
    chosen = steps[0].get("color") if steps else None
    if value is not None:
        for step in steps[1:]:
            if isinstance(step.get("value"), (int, float)) and value >= step["value"]:
                chosen = step.get("color")
    return colour(chosen)


def _nice_ticks(low: float, high: float, unit: str | None = None, count: int = 5) -> list[float]:
    """Round tick values; for byte units round in the binary prefix the axis is written in (20 GiB)."""
    if high <= low:
        high = low + (abs(low) or 1)
    scale = 1.0
    if unit in BINARY_UNITS:
        while max(abs(low), abs(high)) / scale >= 1024:
            scale *= 1024
    low, high = low / scale, high / scale
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step) * step
    ticks, tick = [], first
    while not ticks or ticks[-1] < high * scale - step * scale * 1e-9:  # the last tick at or above `high`
        ticks.append(round(tick, 12) * scale)
        tick += step
    return ticks


BINARY_UNITS = ("bytes", "mbytes")  # IEC units; `Bps` is SI (decimal)
# round steps for the time axis, in seconds
TIME_STEPS = (60, 300, 600, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400)


def _time_ticks(start: float, end: float, count: int = 6) -> list[float]:
    """Whole minutes, quarters, hours or days inside [start, end], about `count` of them."""
    span = end - start
    step = next((s for s in TIME_STEPS if span / s <= count), TIME_STEPS[-1])
    first = math.ceil(start / step) * step
    return [first + step * i for i in range(int((end - first) // step) + 1)]


def _time_label(seconds: float, span: float) -> str:
    fmt = "%H:%M" if span <= 2 * 86400 else "%m-%d %H:%M"
    return time.strftime(fmt, time.gmtime(seconds))


def timeseries(lines: list[tuple[str, list[tuple[float, float]]]], start: float, end: float, unit: str | None,
               width: int, height: int, y_min: float | None = None, y_max: float | None = None,
               thresholds: list[dict] | None = None) -> str:
    """One line per series; a gap where a sample is missing or NaN; dashed threshold lines if given."""
    values = [v for _, points in lines for _, v in points if not math.isnan(v)]
    low = y_min if y_min is not None else min([0.0, *values]) if values else 0.0
    high = y_max if y_max is not None else max(values) if values else 1.0
    if high <= low:
        high = low + (abs(low) or 1)
    ticks = _nice_ticks(low, high, unit)
    low, high = min(low, ticks[0]), max(high, ticks[-1])
    left, right, top, bottom = 64, 8, 8, 20
    plot_w, plot_h = width - left - right, height - top - bottom
    span = max(end - start, 1e-9)

    def x(t: float) -> float:
        return left + (t - start) / span * plot_w

    def y(v: float) -> float:
        return top + (high - v) / (high - low) * plot_h

    out = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" height="{height}" '
           f'preserveAspectRatio="none" xmlns="http://www.w3.org/2000/svg" role="img">']
    for tick in ticks:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" class="gridline"/>')
        out.append(f'<text x="{left - 4}" y="{y(tick) + 4:.1f}" class="axis" text-anchor="end">'
                   f'{escape(format_value(tick, unit))}</text>')
    for t in _time_ticks(start, end):
        anchor = "start" if x(t) - left < 20 else "end" if width - right - x(t) < 20 else "middle"
        out.append(f'<text x="{x(t):.1f}" y="{height - 4}" class="axis" text-anchor="{anchor}">'
                   f'{_time_label(t, span)}</text>')
    for step in (thresholds or [])[1:]:
        value = step.get("value")
        if isinstance(value, (int, float)) and low <= value <= high:
            out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
                       f'stroke="{colour(step.get("color"))}" stroke-dasharray="6 4" class="threshold"/>')
    expected_gap = span / 200
    for index, (_, points) in enumerate(lines):
        path, previous = [], None
        for t, v in points:
            if math.isnan(v):
                previous = None
                continue
            gap = previous is not None and t - previous > max(expected_gap * 2.5, _step(points) * 1.5)
            path.append(f'{"M" if previous is None or gap else "L"}{x(t):.1f},{y(v):.1f}')
            previous = t
        if path:
            stroke = PALETTE[index % len(PALETTE)]
            single = len(path) == 1
            if single:
                first = path[0][1:].split(",")
                out.append(f'<circle cx="{first[0]}" cy="{first[1]}" r="2" fill="{stroke}" class="series"/>')
            else:
                out.append(f'<path d="{" ".join(path)}" stroke="{stroke}" class="series"/>')
    out.append("</svg>")
    return "".join(out)


def _step(points: list[tuple[float, float]]) -> float:
    return points[1][0] - points[0][0] if len(points) > 1 else 0.0


def gauge(value: float | None, unit: str | None, low: float, high: float, steps: list[dict], size: int = 160) -> str:
    """A 240° arc coloured by the thresholds, filled up to `value`."""
    cx, cy, r = size / 2, size / 2 + 6, size / 2 - 14

    def point(fraction: float) -> tuple[float, float]:
        angle = math.radians(210 - 240 * fraction)
        return cx + r * math.cos(angle), cy - r * math.sin(angle)

    def arc(a: float, b: float, stroke: str, width: float, css: str) -> str:
        (x1, y1), (x2, y2) = point(a), point(b)
        large = 1 if (b - a) * 240 > 180 else 0
        return (f'<path d="M{x1:.1f},{y1:.1f} A{r:.1f},{r:.1f} 0 {large} 1 {x2:.1f},{y2:.1f}" stroke="{stroke}" '
                f'stroke-width="{width}" fill="none" class="{css}"/>')

    span = (high - low) or 1.0
    out = [f'<svg class="gauge" viewBox="0 0 {size} {size}" width="100%" height="100%" '
           f'xmlns="http://www.w3.org/2000/svg" role="img">', arc(0, 1, "#2c3235", 12, "track")]
    bounds = [low] + [s["value"] for s in steps[1:] if isinstance(s.get("value"), (int, float))] + [high]
    for index, step in enumerate(steps[: len(bounds) - 1]):
        a = min(max((bounds[index] - low) / span, 0), 1)
        b = min(max((bounds[index + 1] - low) / span, 0), 1)
        if b > a:
            out.append(arc(a, b, colour(step.get("color")), 3, "band"))
    if value is not None:
        fill = min(max((value - low) / span, 0), 1)
        if fill > 0:
            out.append(arc(0, max(fill, 0.004), threshold_colour(value, steps), 10, "value"))
    text = format_value(value, unit)
    out.append(f'<text x="{cx}" y="{cy + 8}" text-anchor="middle" class="gauge-value" '
               f'fill="{threshold_colour(value, steps) if value is not None else "#8e8e8e"}">{escape(text)}</text>')
    out.append("</svg>")
    return "".join(out)

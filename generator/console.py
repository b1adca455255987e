"""Terminal output helpers: colour only on a terminal and never with NO_COLOR, plain tables."""

from __future__ import annotations

import os
import sys

import click


def colour_enabled(stream=None) -> bool:
    stream = stream or sys.stdout
    # no-color.org: NO_COLOR set and not empty turns colour off; an empty NO_COLOR changes nothing
    return not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


def style(text: str, **kwargs) -> str:
    return click.style(text, **kwargs) if colour_enabled() else text


def width(cell: object) -> int:
    """Columns a cell takes on screen: colour escape codes take none."""
    return len(click.unstyle(str(cell)))


def _pad(cell: object, columns: int) -> str:
    return str(cell) + " " * (columns - width(cell))


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(width(x) for x in column) for column in zip(headers, *rows)]
    lines = ["  ".join(_pad(h, w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(_pad(c, w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)

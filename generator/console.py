"""Terminal output helpers: colour only on a terminal and never with NO_COLOR, plain tables."""

from __future__ import annotations

import os
import sys

import click


def colour_enabled(stream=None) -> bool:
    stream = stream or sys.stdout
    return "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()


def style(text: str, **kwargs) -> str:
    return click.style(text, **kwargs) if colour_enabled() else text


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)

"""Series names as Grafana's Prometheus data source writes them.

With a `legendFormat`, each `{{ label }}` becomes the series' value of that label (empty when the
series lacks it). Without one (or `__auto`), the name is the metric and its labels,
`name{a="x", b="y"}`, or the expression itself for a series with no labels at all.
"""

from __future__ import annotations

import re

_PLACEHOLDER = re.compile(r"\{\{\s*(.+?)\s*\}\}")


def render(template: str, labels: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: labels.get(m.group(1), ""), template)


def series_name(legend_format: str | None, labels: dict[str, str], expr: str) -> str:
    if legend_format and legend_format != "__auto":
        return render(legend_format, labels)
    name = labels.get("__name__", "")
    rest = [f'{key}="{value}"' for key, value in sorted(labels.items()) if key != "__name__"]
    if not rest:
        return name or expr
    return f"{name}{{{', '.join(rest)}}}"

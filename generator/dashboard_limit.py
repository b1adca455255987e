"""How many metrics a CloudWatch dashboard body may show: CloudWatch draws at most 2,500 (a metric line counts
one, a GROUP BY query its LIMIT). Lint reports a dashboard over it (CW011); generate and publish refuse one
(limits.py) and count every dashboard to find out, which needs neither lint's rules nor, within the bound,
its query parser."""

from __future__ import annotations

import re
from typing import Any

from .cloudwatch_query import SERIES_PER_QUERY, is_query

# CloudWatch's dashboard quotas (user guide, "CloudWatch service quotas", Dashboards): "Up to 500 metrics per
# dashboard widget. Up to 2500 metrics per dashboard, across all widgets. These quotas include all metrics retrieved
# for use in metric math functions, even if those metrics are not displayed on the graph." Both count alike
# (widget_metrics): a metric line one, a GROUP BY query the series it may return (its LIMIT, 500 without one).
METRICS_PER_DASHBOARD = 2500
METRICS_PER_WIDGET = 500
# The dashboard body's `widgets`: "It can include an array of between 0 and 500 widget objects" (API reference,
# "Dashboard Body Structure and Syntax", Overall Structure); PutDashboard refuses a body of more
# (schemas/cloudwatch-dashboard.schema.json, lint CW001).
WIDGETS_PER_DASHBOARD = 500
# The metrics a fleet value now reads on the Container Insights add-on (its per-GPU form: render/cloudwatch
# .combined_limit): its overview holds five of them ("Framebuffer in use" besides classic's four), and at 500 each they
# and its five charts of top_gpus (50) lines passed the 2,500 per dashboard (2,752). At 400 they read 2,252, as
# classic's four at 500 do: top_gpus may be 99 on both.
ADDON_FLEET_METRICS = 400


# A LIMIT clause is the last of a query: `LIMIT` (any case) and a whole number, ending the text.
_TRAILING_LIMIT = re.compile(r"(?<![A-Za-z0-9_])LIMIT\s+([0-9]+)$", re.IGNORECASE)
_LIMIT_TAIL = 64  # characters of a query's end that hold its LIMIT clause (lookbehind still sees before)
_GROUP_BY = re.compile(r"(?<![A-Za-z0-9_])GROUP\s+BY(?![A-Za-z0-9_])", re.IGNORECASE)


def _series_at_most(expression: str) -> int:
    """At least `series_of(expression)`, read without parsing it. A query whose text
    has no GROUP BY counts one. A query that parses and has a LIMIT clause ends with it (the parser takes nothing
    after it), so a text ending otherwise has none and counts at most 500; one that does not parse counts one."""
    upper = expression.upper()
    start = upper.find("GROUP")  # the searches start near what they look for: same answers
    if start < 0:
        return 1
    if len(upper) != len(expression):  # a character before it grew in upper case (ß: SS): its place there is later
        start = 0
    if not _GROUP_BY.search(expression, start):
        return 1
    text = expression.rstrip()
    match = _TRAILING_LIMIT.search(text, max(0, len(text) - _LIMIT_TAIL))  # a longer clause counts 500: still a bound
    return min(int(match.group(1)) or SERIES_PER_QUERY, SERIES_PER_QUERY) if match else SERIES_PER_QUERY


def series_of(expression: str) -> int:
    """The metrics one query may show: its LIMIT (500 without one) with GROUP BY, else one (one that does not
    parse: one)."""
    from .lint.metrics_insights import QueryError, parse

    try:
        query = parse(expression)
    except QueryError:
        return 1
    if not query.group:
        return 1
    return min(query.limit or SERIES_PER_QUERY, SERIES_PER_QUERY)


def metrics_shown_at_most(body: Any) -> int:
    """At least `metrics_shown(body)`, counted without parsing a query: a dashboard this bound keeps
    within a limit is within it (parsing the 33,000 queries of 1,000 clusters' dashboards costs seconds)."""
    return metrics_shown(body, _series_at_most)


def widget_metrics_at_most(properties: Any) -> int:
    """At least `widget_metrics(properties)`, counted without parsing a query (metrics_shown_at_most)."""
    return widget_metrics(properties, _series_at_most)


def metrics_shown(body: Any, series=None) -> int:
    """How many metrics a dashboard body may show: the sum of its metric widgets' (widget_metrics). (`series`: what
    one query counts; by default, what the parsed query says.)"""
    total = 0
    for widget in body.get("widgets", []) if isinstance(body, dict) else ():
        properties = widget.get("properties") if isinstance(widget, dict) and widget.get("type") == "metric" else None
        total += widget_metrics(properties, series)
    return total


def widget_metrics(properties: Any, series=None) -> int:
    """How many metrics a metric widget's properties may read: a metric line counts one, a GROUP BY query its
    LIMIT (500 without one); math over them adds none."""
    series = series or series_of
    total = 0
    for line in properties.get("metrics", []) if isinstance(properties, dict) else ():
        options = line[-1] if isinstance(line, list) and line and isinstance(line[-1], dict) else {}
        if "expression" in options:
            if is_query(str(options["expression"])):
                total += series(str(options["expression"]))
        else:
            total += 1
    return total

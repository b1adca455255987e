"""Grafana's template interpolation for Prometheus queries: macros and dashboard variables.

`$__interval`, `$__rate_interval`, `$__range` (and their `_ms` / `_s` forms) follow Grafana's
definitions; each dashboard variable is replaced by its value at the dashboard's default, a
variable at All by its `allValue` (`.*` when none is set), a picked value escaped as Grafana
escapes it inside a Prometheus regex matcher. Unknown `$names` (a `$1` in label_replace) stay.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

ALL = "$__all"
# $name, ${name}, ${name:format}, [[name]]
_REFERENCE = re.compile(r"\$\{(?P<braced>\w+)(?::\w+)?\}|\[\[(?P<bracketed>\w+)\]\]|\$(?P<plain>\w+)")
_REGEX_SPECIAL = re.compile(r"([\\^$.|?*+()\[\]{}])")


def regex_escape(value: str) -> str:
    """A literal value inside a PromQL regex string, as Grafana writes it (prometheusSpecialRegexEscape: escaped for
    the regex, then for the PromQL string; a backslash is four, where three read as `\\` and a Go escape of the
    next character)."""
    return _REGEX_SPECIAL.sub(lambda m: "\\" * 4 if m.group(1) == "\\" else "\\\\" + m.group(1), value)


def duration(seconds: float) -> str:
    """Seconds as a PromQL duration (whole seconds, or milliseconds below one)."""
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    return f"{int(math.ceil(seconds))}s"


@dataclass(frozen=True)
class Window:
    """The time window of a preview: its range, the step between points and the scrape interval."""

    range_s: float
    step_s: float
    scrape_s: float = 15.0

    @property
    def rate_interval_s(self) -> float:
        # Grafana: max($__interval + scrape interval, 4 * scrape interval)
        return max(self.step_s + self.scrape_s, 4 * self.scrape_s)

    def macros(self) -> dict[str, str]:
        return {
            "__interval": duration(self.step_s), "__interval_ms": str(int(self.step_s * 1000)),
            "__rate_interval": duration(self.rate_interval_s),
            "__range": duration(self.range_s), "__range_s": str(int(self.range_s)),
            "__range_ms": str(int(self.range_s * 1000)),
        }


def step_for(range_s: float, scrape_s: float, points: int = 300) -> float:
    """Grafana's auto interval: the range over the points a panel draws, never below the scrape
    interval, rounded to a whole second."""
    return float(max(scrape_s, math.ceil(range_s / points)))


def _current(variable: dict[str, Any]) -> list[str]:
    current = variable.get("current") or {}
    value = current.get("value") if isinstance(current, dict) else None
    if value is None:
        options = variable.get("options") or []
        value = next((o.get("value") for o in options if isinstance(o, dict) and o.get("selected")), None)
    if value is None and variable.get("type") in ("custom", "constant", "textbox", "interval"):
        value = str(variable.get("query", "")).split(",")[0].strip()
    if value is None:
        return [ALL] if variable.get("includeAll") else []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def defaults(dashboard: dict[str, Any], datasource: str = "prometheus") -> dict[str, str]:
    """Each variable of the dashboard at its default, as the text that replaces it in a query."""
    result = {}
    templating = dashboard.get("templating") or {}
    for variable in templating.get("list") or []:
        if not isinstance(variable, dict) or not variable.get("name"):
            continue
        name = str(variable["name"])
        if variable.get("type") == "datasource":
            result[name] = datasource
            continue
        values = _current(variable)
        if not values or ALL in values:
            result[name] = variable.get("allValue") or ".*"
        elif variable.get("type") in ("query", "custom"):
            result[name] = regex_escape(values[0]) if len(values) == 1 else alternation(values)
        else:
            result[name] = values[0]
    return result


def listed_at_all(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """The query variables at All that set no allValue: Grafana sends such a variable as the alternation of the values
    its query lists (a shared Prometheus' cluster variable: the clusters gpudash watches), not `.*`."""
    return [variable for variable in (dashboard.get("templating") or {}).get("list") or []
            if isinstance(variable, dict) and variable.get("type") == "query" and variable.get("includeAll")
            and not variable.get("allValue") and ALL in _current(variable)]


def alternation(values: list[str]) -> str:
    """Several values of a multi-value variable as Grafana writes them into a PromQL regex: `(a|b)`, each escaped."""
    return "(" + "|".join(regex_escape(v) for v in values) + ")"


def interpolate(expr: str, values: dict[str, str]) -> str:
    """`expr` with every known variable or macro replaced; other `$words` are left as they are."""
    def replace(match: re.Match[str]) -> str:
        name = match["braced"] or match["bracketed"] or match["plain"]
        return values.get(name, match.group(0))
    return _REFERENCE.sub(replace, expr)


def variables(selected: dict[str, str], names: tuple[str, ...]) -> dict[str, str]:
    """Variables `names` with `selected` picked (escaped) and the others at All (`.*`)."""
    return {name: regex_escape(selected[name]) if name in selected else ".*" for name in names}

"""What a panel cannot show truthfully, found with the catalog once definitions are loaded: one message naming the
panel and where it was defined (exit 2), before anything is written.

A panel whose queries chart different units (°C and W) shows each query in its own unit (Panel.shown_units; Grafana
overrides the unit per query), but its levels and bounds are numbers in one unit, a heatmap has one y axis and a
gauge one dial range: those are refused where the units differ. A gauge's range, the unit's own where the definition
gives no end (Panel.gauge_range), must have its min below its max.
"""

from __future__ import annotations

from .catalog import Catalog
from .errors import InputError
from .model import Dashboard, Panel
from .units import Unit

# (what a panel of several units cannot have, whether it has it, the fix)
_ONE_UNIT_ONLY = (
    ("thresholds", lambda p: p.thresholds is not None, "leave out thresholds"),
    ("min", lambda p: p.min is not None, "leave out min"),
    ("max", lambda p: p.max is not None, "leave out max"),
    ("kind 'heatmap' (one y axis)", lambda p: p.kind == "heatmap", "draw it as a timeseries"),
    ("kind 'gauge' (one dial range)", lambda p: p.kind == "gauge", "draw it as a stat or bargauge"),
)


def units_shown(panel: Panel, catalog: Catalog) -> dict[Unit, list[str]]:
    """{unit: the metrics of the panel's queries shown in it}, in the queries' order."""
    shown: dict[Unit, list[str]] = {}
    for query, unit in zip(panel.queries, panel.shown_units(catalog)):
        shown.setdefault(unit, []).append("raw PromQL" if query.raw_promql else query.metric)
    return shown


def mixed_problem(panel: Panel, catalog: Catalog) -> tuple[str, str] | None:
    """(problem, fix) of a panel of several units that has what only one unit can give; None otherwise."""
    shown = units_shown(panel, catalog)
    if len(shown) < 2:
        return None
    said = [what for what, has, _ in _ONE_UNIT_ONLY if has(panel)]
    if not said:
        return None
    fixes = [fix for what, has, fix in _ONE_UNIT_ONLY if has(panel)]
    units = " and ".join(f"{unit.label} ({', '.join(dict.fromkeys(names))})" for unit, names in shown.items())
    return (f"panel {panel.title!r} shows its queries in {units}: {', '.join(said)} "
            f"{'is' if len(said) == 1 else 'are'} for values of one unit",
            f"put the queries of each unit in a panel of their own, or {' and '.join(fixes)}")


def range_problem(panel: Panel, catalog: Catalog) -> tuple[str, str] | None:
    """(problem, fix) of a gauge whose range (Panel.gauge_range) is empty: min not below max once the end the
    definition leaves out is the unit's (`min=150` on a percentage, `max=0` on watts); None otherwise. Both ends
    written are Panel's own check."""
    if panel.kind != "gauge" or (panel.min is None) == (panel.max is None):
        return None
    low, high = panel.gauge_range(catalog)
    if high is None or low < high:
        return None
    unit = panel.shown_unit(catalog).label
    if panel.min is not None:
        return (f"panel {panel.title!r}: min {low:g} is not below {high:g}, the top of its gauge's range ({unit})",
                f"write a min below {high:g}, or a max above {low:g}")
    return (f"panel {panel.title!r}: max {high:g} is not above {low:g}, the foot of its gauge's range ({unit})",
            f"write a max above {low:g}, or a min below {high:g}")


def check_panels(dashboard: Dashboard, catalog: Catalog) -> None:
    """Every panel of the dashboard can be shown truthfully, else InputError naming it."""
    for panel in dashboard.panels():
        problem = mixed_problem(panel, catalog) or range_problem(panel, catalog)
        if problem:
            raise InputError(problem[0], where=panel.defined_at, hint=problem[1])

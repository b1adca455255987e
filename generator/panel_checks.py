"""What a panel cannot show truthfully, found with the catalog once definitions are loaded: one message naming the
panel and where it was defined (exit 2), before anything is written.

A panel whose queries chart different units (°C and W) shows each query in its own unit (Panel.shown_units; Grafana
overrides the unit per query), but its levels and bounds are numbers in one unit, a heatmap has one y axis and a
gauge one dial range: those are refused where the units differ. A gauge's range, the unit's own where the definition
gives no end (Panel.gauge_range), must have its min below its max.

A panel's `unit=` names the unit its values are shown in; it relabels, it does not convert. So it must be the unit of
every query's values (charted_unit, from the counters CSV and the catalog), or another spelling of it (a ratio and a
share of time): `unit="percent"` on a 0-1 ratio drew 45 % as "0.45 %" on a 0-100 dial on both backends, `milliwatt` on
watts 300 W as "300 mW". Refused, naming the field's unit and the unit written, rather than converted: the field's own
unit already shows the value truthfully (Grafana draws a ratio as a percentage), and a factor carried into every
PromQL form, Metrics Insights query, header note and preview is a factor one of them can miss. Raw PromQL, and a field
the catalog lacks, have no unit to compare: the unit written is theirs. Likewise a gauge's max, or a level, past the top
of a bounded unit's own range (max=100 on a 0-1 ratio) is a number of another scale: no value reaches it.
"""

from __future__ import annotations

from typing import Callable

from .catalog import Catalog
from .errors import InputError
from .model import Alarm, Dashboard, Panel
from .model import charted_unit
from .units import UNITS, Unit, converts

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


def unit_problem(panel: Panel, catalog: Catalog) -> tuple[str, str] | None:
    """(problem, fix) of a panel whose `unit=` is not the unit of a query's values nor another spelling of it (see the
    module's docstring); None otherwise."""
    if panel.unit is None:
        return None
    written = UNITS[panel.unit]
    for query in panel.queries:
        if query.raw_promql or query.metric not in catalog:
            continue
        shown = charted_unit(query, catalog)
        factor = converts(shown, written)
        if factor == 1.0:
            continue
        what = f"{query.aggregation} of {query.metric}" if query.aggregation == "count" else query.metric
        if query.over:
            what = f"{query.metric} over {' + '.join(query.over)}"
        own = f"its values ({what}) are in {shown.key} ({shown.label})"
        if factor is None:
            why = f"{shown.label} is not a measure of {written.label}: nothing converts one into the other"
        else:
            value = shown.bounds[1] * 0.45 if shown.bounds else 45
            why = (f"unit= relabels, it does not convert: {value:g} {shown.label} would read {value:g} "
                   f"{written.label}, not {value * factor:g} {written.label}")
        return (f"panel {panel.title!r}: unit {panel.unit!r} is not the unit of its values: {own}; {why}",
                f"leave unit out to show the field's own unit ({shown.key}"
                f"{', which Grafana draws as a percentage' if shown.grafana == 'percentunit' else ''}), "
                f"or chart a field measured in {written.label}")
    return None


def scale_problem(panel: Panel, catalog: Catalog) -> tuple[str, str] | None:
    """(problem, fix) of a panel of a unit with a range of its own (a percentage 0-100, a ratio 0-1) whose max or a
    level is past the top of that range: a number of another scale (max=100 or thresholds=(80, 90) on a 0-1 ratio), no
    value reaches it; None otherwise. A sum over several GPUs passes the top (a pod's GPUs add up to 120 %): only the
    readings themselves, their mean, max or min, are bounded."""
    units = panel.shown_units(catalog)
    unit = units[0]
    if unit.bounds is None or len(set(units)) > 1:
        return None
    if any(q.raw_promql or q.aggregation in ("sum", "count") for q in panel.queries):
        return None
    top = unit.bounds[1]
    past = [(what, value) for what, value in (("max", panel.max), *(("a threshold", level) for level in
                                                                       panel.thresholds or ()))
            if value is not None and value > top]
    if not past:
        return None
    what, value = past[0]
    return (f"panel {panel.title!r}: {what} {value:g} is above {top:g}, the top of {unit.label} ({unit.key}): no "
            f"value of it passes {value:g}",
            f"write it in {unit.label} (e.g. {value / 100:g} for {value:g} %)" if top == 1 else
            f"write it within {unit.bounds[0]:g}-{top:g}")


def _below_nothing(alarm: Alarm, condition, query) -> tuple[str, str] | None:
    """(problem, fix) of a condition on values never below 0 (a counter's increase, a count of readings) whose
    threshold never or always holds there: `>= 0` always, `< 0` never, and any threshold below 0 alike. One that never
    holds is kept where missing data breaches: that alarm fires on a period without data, as an absence alarm."""
    threshold, comparison = condition.threshold, condition.comparison
    if threshold > 0 or comparison in (">", "<=") and threshold == 0:
        return None
    if comparison in ("<", "<=") and alarm.missing_data == "breaching":
        return None
    values = "a count of readings" if query.aggregation == "count" else f"an increase of the counter {query.metric}"
    holds = "always holds" if comparison in (">", ">=") else "never holds"
    return (f"alarm {alarm.id!r}: threshold {threshold:g} on {values}, which is never below 0: "
            f"`{comparison} {threshold:g}` {holds}",
            "write a threshold above 0, or `> 0` for any increase" if query.aggregation != "count" else
            "write a threshold above 0, or `< 1` for no reading")


def threshold_problem(alarm: Alarm, catalog: Catalog) -> tuple[str, str] | None:
    """(problem, fix) of an alarm whose threshold lies outside the range of its values' unit (a percentage 0-100, a
    ratio 0-1) where every value lies in it (a reading, its mean, max or min; not a sum or count): a number of another
    scale (`avg(tensor activity) > 80`, a percentage written for a 0-1 ratio, never fires; `< 80` always does). An
    alarm takes no unit: its threshold is in its query's unit, which nothing converts."""
    for condition in (alarm.condition, alarm.cloudwatch):
        query = condition.query if condition else None
        if query is not None and not query.raw_promql and (query.aggregation == "count" or (
                query.as_increase and query.metric in catalog and catalog.get(query.metric).is_counter)):
            problem = _below_nothing(alarm, condition, query)
            if problem:
                return problem
            continue
        if query is None or query.raw_promql or query.metric not in catalog or query.aggregation in ("sum", "count"):
            continue
        unit = charted_unit(query, catalog)
        if unit.bounds is None:
            continue
        low, high = unit.bounds
        threshold, comparison = condition.threshold, condition.comparison
        # at a bound itself: `> top` and `< bottom` never hold (a framebuffer full past ratio 1.0, a GPU used under
        # 0 %: generate wrote such alarms, billed, that could not fire), `>= bottom` and `<= top` always do
        edge = {(">", high): True, ("<", low): True, (">=", low): False, ("<=", high): False}.get((comparison, threshold))
        if edge is not None:
            return (f"alarm {alarm.id!r}: threshold {threshold:g} is the {'top' if threshold == high else 'bottom'} "
                    f"of {low:g}-{high:g}, the range of {query.metric}'s values ({unit.label}): `{comparison} "
                    f"{threshold:g}` {'never holds' if edge else 'always holds'}",
                    f"write a threshold {'below' if threshold == high else 'above'} {threshold:g}")
        if low <= threshold <= high:
            continue
        never = (comparison in (">", ">=")) == (threshold > high)
        return (f"alarm {alarm.id!r}: threshold {threshold:g} is outside {low:g}-{high:g}, the range of "
                f"{query.metric}'s values ({unit.label}): `{comparison} {threshold:g}` "
                f"{'never holds' if never else 'always holds'}",
                f"write it in {unit.label} (e.g. {threshold / 100:g} for {threshold:g} %)"
                if high == 1 and threshold <= 100 else f"write a threshold within {low:g}-{high:g}")
    return None


def check_panels(dashboard: Dashboard, catalog: Catalog,
                 told: Callable[[Panel, tuple[str, str]], InputError | None] | None = None) -> None:
    """Every panel of the dashboard can be shown truthfully, else InputError naming it (`told`'s, where it gives one:
    a level the settings set)."""
    for panel in dashboard.panels():
        problem = (unit_problem(panel, catalog) or mixed_problem(panel, catalog) or range_problem(panel, catalog)
                   or scale_problem(panel, catalog))
        if problem:
            raise (told and told(panel, problem)) or InputError(problem[0], where=panel.defined_at, hint=problem[1])

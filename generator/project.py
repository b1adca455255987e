"""A project: settings + catalog + definitions, loaded and cross-checked once.

Everything downstream (renderers, lint, targets) takes a Project, so the
inputs are read in one place and every unknown name is reported with the
file and line of the definition that used it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import definitions
from .catalog import Catalog, load_counters
from .errors import InputError
from .model import Alarm, Dashboard
from .panel_checks import check_panels, scale_problem, threshold_problem
from .promql_text import STRING_LITERAL
from .resources import known_fields
from .settings import Levels, Settings, load_settings, setting_place, settings_counters


@dataclass(frozen=True)
class Project:
    """Settings, catalog and definitions, loaded and cross-checked once."""
    settings: Settings
    catalog: Catalog
    dashboards: tuple[Dashboard, ...]
    grafanalib_dashboards: tuple[definitions.Loaded, ...]
    alarms: tuple[Alarm, ...] = ()
    notes: tuple[tuple[str, str], ...] = ()  # ("file:line", "panel ... left out: the counters CSV does not collect ...")

    def cloudwatch_definitions(self) -> tuple[Dashboard, ...]:
        """The dashboard definitions that render to CloudWatch (model objects; the JSON is artifacts')."""
        return tuple(d for d in self.dashboards if "cloudwatch" in d.backends)

    def grafana_definitions(self) -> tuple[Dashboard, ...]:
        """The dashboard definitions that render to Grafana (model objects; the JSON is artifacts')."""
        return tuple(d for d in self.dashboards if "grafana" in d.backends)

    def counted_fields(self) -> tuple[str, ...]:
        """The counters the Grafana panels read as a rate of their recording (promql.counted_fields): the counters'
        recording rules (render.alarms.counter_groups) are written for these."""
        from .promql import counted_fields

        return counted_fields([q for d in self.grafana_definitions() for q in d.queries() if not q.raw_promql],
                              self.catalog)

    def queried_metrics(self) -> set[str]:
        """Every DCGM field a dashboard or alarm queries: what the exporter must collect."""
        queries = [q for d in self.dashboards for q in d.queries() if not q.raw_promql]
        queries += [q for a in self.alarms for q in a.queries]
        return {name for query in queries for name in query.metrics}

    def used_metrics(self) -> set[str]:
        """DCGM fields CloudWatch dashboards and alarms query: what the agent must ship at the least."""
        queries = [q for d in self.cloudwatch_definitions() for p in d.panels() if not p.grafana_only
                   for q in p.queries]
        # an alarm's CloudWatch condition, and its rule's, which CloudWatch reads in its place where no GPU is split
        # (render/alarms.cloudwatch_condition)
        queries += [c.query for a in self.alarms for c in (a.cloudwatch, a.condition) if c is not None]
        return {name for query in queries for name in query.metrics}


def _raw_promql_checked(query) -> None:
    """A definition's own PromQL parses (Grafana's variables replaced as Grafana replaces them before it sends the
    query: $__rate_interval, ${__range_s}, ${__to:date:seconds}, $node, [[node]]): generate refuses to
    write a panel Grafana would answer with a parse error. The PromQL gpudash writes itself is parsed by lint (PR004,
    GF001): parsing every query at generate time would double its time (defaults: 0.44 s of parsing in 0.34 s)."""
    from .lint.promql_checks import check_parses

    try:
        check_parses(query.raw_promql, any_variable=True)
    except ValueError as exc:
        raise InputError(f"raw_promql does not parse: {exc}", where=query.defined_at,
                         hint="correct the query (a dashboard variable outside quotes, as in [$window], is read as "
                              "a name, a number or a duration, whichever parses)") from None


def _check_queries(queries, catalog: Catalog, kind: str = "panel") -> None:
    for query in queries:
        if query.raw_promql:
            _raw_promql_checked(query)
            continue
        for name in query.metrics:
            if name not in catalog:
                known = name in known_fields()
                raise InputError(
                    f"{name} is not collected: it is not in the counters CSV ({catalog.source})" if known else
                    f"unknown metric {name}: no DCGM field has this name, and it is not in the counters CSV "
                    f"({catalog.source})",
                    where=query.defined_at,
                    hint=f"add {name} to the counters CSV, or wrap the {kind} in ctx.available([...])" if known else
                    definitions.unknown_metric_hint(name, catalog),
                )
            if not catalog.get(name).is_series:
                raise InputError(f"{name} is a label field, not a series: it cannot be charted",
                                 where=query.defined_at,
                                 hint="chart a gauge or counter; label fields appear as labels on every series")


# Functions of raw_promql that not every Prometheus runs: Prometheus 3's experimental ones (refused unless it runs with
# --enable-feature=promql-experimental-functions; Prometheus 2 lacks them), and Prometheus 2's holt_winters (Prometheus
# 3 renamed it double_exponential_smoothing). generate writes such a query, with a warning: a refusal would stop a user
# whose Prometheus runs it.
EXPERIMENTAL_FUNCTIONS = ("sort_by_label", "sort_by_label_desc", "limitk", "limit_ratio", "mad_over_time",
                          "double_exponential_smoothing", "info")
_VERSIONED_CALL = re.compile(r"\b(" + "|".join((*EXPERIMENTAL_FUNCTIONS, "holt_winters")) + r")\s*\(")


def version_dependent_queries(project: Project) -> list[tuple[str, str]]:
    """(where, why) of each definition's raw_promql naming a function not every Prometheus runs."""
    found = []
    queries = [q for d in project.dashboards for q in d.queries()] + [q for a in project.alarms for q in a.queries]
    for query in queries:
        if not query.raw_promql:
            continue
        names = dict.fromkeys(_VERSIONED_CALL.findall(STRING_LITERAL.sub('""', query.raw_promql)))
        for name in names:
            found.append((query.defined_at, f"raw_promql uses {name}, which Prometheus 3 renamed "
                                            "double_exponential_smoothing (an experimental function)"
                          if name == "holt_winters" else
                          f"raw_promql uses {name}, which Prometheus runs only with "
                          "--enable-feature=promql-experimental-functions, from the version that added it"))
        if "=~" in query.raw_promql or "!~" in query.raw_promql:
            from .lint.promql_checks import newer_regex_syntax

            for note in newer_regex_syntax(query.raw_promql):
                found.append((query.defined_at, f"raw_promql's regex uses {note}, which Prometheus 3 takes and a "
                                                "Prometheus built with an older Go refuses (2.42: Go 1.19)"))
    return found


def load_project(config: Path | None = None, counters: Path | None = None,
                 read: Callable[[Settings], None] | None = None) -> Project:
    """The project; `read` is told the settings as soon as they are read (before the CSV and the definitions, whose
    mistakes it then precedes)."""
    settings = load_settings(config)
    if read:
        read(settings)
    catalog = load_counters(counters) if counters else settings_counters(settings)
    ctx = definitions.Context(catalog=catalog, settings=settings)
    with definitions.places_named(settings):
        neutral, legacy = _load_dashboards(settings, ctx)
        alarms = _load_alarms(settings, ctx)
    return Project(settings=settings, catalog=catalog, dashboards=tuple(neutral),
                   grafanalib_dashboards=tuple(legacy), alarms=alarms, notes=tuple(ctx.notes))


def _load_dashboards(settings: Settings, ctx: definitions.Context) -> tuple[list[Dashboard], list[definitions.Loaded]]:
    """The neutral dashboards and the grafanalib ones of `settings`' definitions."""
    neutral: list[Dashboard] = []
    legacy: list[definitions.Loaded] = []
    seen: dict[str, str] = {}
    for item in definitions.load("dashboards", settings.definition_dirs("dashboards"), ctx):
        if isinstance(item.value, Dashboard):
            dashboard: Any = item.value
            if dashboard.id in seen:
                raise InputError(f"dashboard id {dashboard.id!r} is used twice (also at {seen[dashboard.id]})",
                                 where=dashboard.defined_at, hint="give each dashboard a unique id")
            seen[dashboard.id] = dashboard.defined_at
            _check_queries(dashboard.queries(), ctx.catalog)
            check_panels(dashboard, ctx.catalog,
                         lambda panel, problem: _panel_level_error(panel, problem, settings, ctx.catalog))
            neutral.append(dashboard)
        elif definitions.is_grafanalib_dashboard(item.value):
            legacy.append(item)
        else:
            raise InputError(f"a dashboard definition returned {type(item.value).__name__}, not a Dashboard",
                             where=item.where,
                             hint="return generator.model.Dashboard objects (or grafanalib Dashboards)")
    return neutral, legacy


def _settings_levels(settings: Settings, numbers: list[float]) -> list:
    """The settings' `thresholds` levels ((key, "warning" / "critical" / None)) that are one of `numbers` itself: the
    level a bundled definition read (ctx.levels, ctx.threshold) and passed on as it is, found as that object, not by
    its value. Each level is an object of its own (the settings make each with float()), so two levels of one value,
    of a pair or of two keys, are told apart, where a match by value named both and so neither; a number worked out
    of a level (pcie_replays_per_minute x 5) is none."""
    given = settings.thresholds
    return [(key, level) for key in given
            for level, number in ((("warning", given[key].warning), ("critical", given[key].critical))
                                  if isinstance(given[key], Levels) else ((None, given[key]),))
            if any(number is read for read in numbers)]


def _level_error(what: str, fix: str, settings: Settings, levels: list) -> InputError | None:
    """`what` of a bundled definition, told at the one settings level it reads (None: none or several)."""
    if len(levels) != 1:
        return None
    key, level = levels[0]
    path = ["thresholds", key, *([level] if level else [])]
    named = ".".join(path)
    return InputError(f"{named} is the level of the bundled {what}", where=setting_place(settings, path),
                      hint=re.sub(r"^write (a threshold|it)", f"set {named}", fix))


def _panel_level_error(panel, problem: tuple[str, str], settings: Settings, catalog) -> InputError | None:
    """A bundled panel's level past its unit's range (panel_checks.scale_problem), told at the settings level it is
    (framebuffer_used_ratio's critical 95 was told at the bundled dashboards/gpu_by_pod.py). The levels past the top
    are the panel's own numbers, not read back from the problem's text (a level printed shorter than it is would
    match no setting)."""
    if settings.definitions.dashboards is not None or not panel.thresholds or problem != scale_problem(panel, catalog):
        return None
    top = panel.shown_units(catalog)[0].bounds[1]  # scale_problem's: a bounded unit
    if panel.max is not None and panel.max > top:  # the problem is the panel's max, which no setting gives
        return None
    past = [level for level in panel.thresholds if level is not None and level > top][:1]
    return _level_error(problem[0], problem[1], settings, _settings_levels(settings, past))


def _threshold_error(alarm: Alarm, problem: tuple[str, str], settings: Settings) -> InputError:
    """`problem` (threshold_problem's) of `alarm`, told at its definition; a bundled alarm's at the settings' level it
    compares (`thresholds`: the level of that value), which is where its user sets it (framebuffer_used_ratio's
    critical 1.0 was told at the bundled alarms/gpu_alarms.py, "write a threshold inside 0-1")."""
    what, fix = problem
    thresholds = [condition.threshold for condition in (alarm.condition, alarm.cloudwatch) if condition]
    told = None if settings.definitions.alarms is not None else \
        _level_error(what, fix, settings, _settings_levels(settings, thresholds))
    return told or InputError(what, where=alarm.defined_at, hint=fix)


def _load_alarms(settings: Settings, ctx: definitions.Context) -> tuple[Alarm, ...]:
    alarms: list[Alarm] = []
    seen: dict[str, str] = {}
    for item in definitions.load("alarms", settings.definition_dirs("alarms"), ctx):
        alarm = item.value
        if not isinstance(alarm, Alarm):
            raise InputError(f"an alarm definition returned {type(alarm).__name__}, not an Alarm",
                             where=item.where, hint="return generator.model.Alarm objects")
        key = f"{alarm.id}-{alarm.severity}"
        if key in seen:
            raise InputError(f"alarm {alarm.id!r} ({alarm.severity}) is defined twice (also at {seen[key]})",
                             where=alarm.defined_at, hint="give each alarm a unique id")
        seen[key] = alarm.defined_at
        _check_queries(alarm.queries, ctx.catalog, "alarm")
        problem = threshold_problem(alarm, ctx.catalog)
        if problem:
            raise _threshold_error(alarm, problem, settings)
        if alarm.stopped_partly:  # refused as it is read, so by every command reading the alarms (preview, verify)
            _refuse_stopped_partly(alarm, settings, ctx.catalog)
        alarms.append(alarm)
    return tuple(alarms)


def _refuse_stopped_partly(alarm: Alarm, settings: Settings, catalog: Catalog) -> None:
    """Refuse a stopped rule's datapoints_to_alarm under its evaluation periods (Alarm.stopped_partly), with whatever
    the checks of its periods refuse of it (render.alarms.check_periods: on CloudWatch where it makes an alarm there,
    on Prometheus alone otherwise), in one message: told alone, as the model told it, its fix followed was refused for
    the period."""
    from .render.alarms import check_periods, first_kind

    kind = first_kind(alarm, catalog, settings)
    check_periods(alarm, settings, kind, cloudwatch=kind is not None)

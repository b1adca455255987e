"""The backend-neutral model that dashboard definitions are written against.

No PromQL and no CloudWatch syntax here: a panel names DCGM fields, how to
aggregate them and what to group by. Renderers turn the model into Grafana
JSON or CloudWatch dashboard bodies. `Query.raw_promql` is the one escape
hatch, and panels that use it render for Grafana only.
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Iterable, Iterator

from . import printed
from .catalog import own_labels_of
from .definition_fields import checked
from .names import DEFINITION_ID
from .units import UNITS, Unit

# Neutral grouping keys. The settings' label mapping says which label carries each
# (pod -> pod or exported_pod, node -> Hostname or hostname, ...). `mig_instance` is a GPU
# instance of a MIG GPU: a query grouped by it covers MIG instances only.
GROUP_KEYS = ("cluster", "namespace", "pod", "container", "node", "gpu", "model", "mig_instance")
WORKLOAD_KEYS = ("pod", "namespace", "container")  # the keys naming a workload (a pod's labels), not a GPU
AGGREGATIONS = ("avg", "sum", "max", "min", "count")
PANEL_KINDS = ("timeseries", "stat", "gauge", "bargauge", "table", "heatmap")
RANGE_KINDS = ("timeseries", "heatmap")  # kinds drawn from range queries: a value per point in time
BACKENDS = ("grafana", "cloudwatch")
GRID_WIDTH = 24  # Grafana's grid; CloudWatch's is the same width

_ENGINE_DIR = str(Path(__file__).resolve().parent)
_ID = re.compile(rf"^{DEFINITION_ID}$")


def _caller() -> str:
    """file:line of the definition that built an object (first frame outside the engine)."""
    frame = sys._getframe(2)
    # Skip the engine's own frames and the dataclass-generated __init__ ("<string>").
    while frame is not None and (frame.f_code.co_filename.startswith(_ENGINE_DIR)
                                 or frame.f_code.co_filename == "<string>"):
        frame = frame.f_back
    return f"{_shown_file(frame.f_code.co_filename)}:{frame.f_lineno}" if frame else "<unknown>"


def _shown_file(filename: str) -> str:
    """shown_path of a code object's file (a definition builds thousands of objects: cached)."""
    return _shown(filename, _NAMED_APART.get())


# While a project's definitions load (named_apart): its definitions folders that share their last name with another
# (teams/ml/dashboards beside teams/infer/dashboards), each (the folder, its path from the settings' folder).
_NAMED_APART: ContextVar[tuple[tuple[str, str], ...]] = ContextVar("named_apart", default=())


@contextmanager
def named_apart(folders: Iterable[Path], written: Iterable[Path], base: Path) -> Iterator[None]:
    """While a project's definitions load, name the files of each folder of `written` (the definitions folders the
    settings in `base` name) by its path from `base` where another of `folders` (those and the bundled ones in their
    place) shares its last name: `dashboards/gpu.py` of either would not say which to fix. A bundled folder keeps its
    last name: its path is where gpudash is installed, which a build must not record. Each place is kept as named
    then (an object's defined_at, a note's where): nothing names a file again once the loading is over, so a project
    loaded later in the process cannot rename another's."""
    last = [folder.name for folder in dict.fromkeys(folders)]
    token = _NAMED_APART.set(tuple((str(folder), Path(os.path.relpath(folder, base)).as_posix())
                                   for folder in dict.fromkeys(written) if last.count(folder.name) > 1))
    try:
        yield
    finally:
        _NAMED_APART.reset(token)


def shown_path(path: str | Path) -> str:
    """`folder/file.py`: how every message, lint finding and generated note names a definition file (where the
    project is checked out never shows, so a build records the same text anywhere; the settings name the folder),
    from the settings' folder where two definitions folders share a name (named_apart). A name holding a newline or
    another control character is quoted with it escaped (printed.path): a finding stays on its line."""
    return _shown(str(path), _NAMED_APART.get())


@cache
def _shown(path: str, apart: tuple[tuple[str, str], ...]) -> str:
    folder = str(Path(path).parent)
    named = next((shown for where, shown in apart if folder == where), None)
    return printed.path(f"{named}/{Path(path).name}" if named else "/".join(Path(path).parts[-2:]))


def source_file(defined_at: str) -> str:
    """`folder/file.py` of a `folder/file.py:line` place (an object's defined_at, as shown_path named it)."""
    path, _, line = defined_at.rpartition(":")
    return path if path and line.isdigit() else defined_at


# Words a definition may write for a choice of another spelling (no guess by likeness: `median` is not `min`)
_SAID_AS = {"average": "avg", "mean": "avg", "total": "sum", "maximum": "max", "minimum": "min",
            # comparisons written the other way round, or in words
            "=>": ">=", "=<": "<=", "gt": ">", "ge": ">=", "gte": ">=", "lt": "<", "le": "<=", "lte": "<=",
            # Grafana's legacy panel types, which its current ones replace (grafanalib's Graph, SingleStat)
            "graph": "timeseries", "singlestat": "stat"}
# an exporter's or CloudWatch's label for what a neutral grouping key names (lower case): the key meant
_GROUPED_AS = {"hostname": "node", "instance": "node", "nodename": "node", "uuid": "gpu", "device": "gpu",
               "gpu_uuid": "gpu", "modelname": "model", "exported_pod": "pod", "pod_name": "pod",
               "exported_namespace": "namespace", "pod_namespace": "namespace", "exported_container": "container",
               "container_name": "container", "gpu_i_id": "mig_instance", "clustername": "cluster"}


def _choice(what: str, value: object, allowed: tuple[str, ...]) -> tuple[str, str]:
    """(problem, fix) for a value that is not one of `allowed`: the fix names the choice meant when the value is
    one in other case, a beginning of one (`warn`), or another word for one (`average`)."""
    said = str(value).lower()
    meant = [choice for choice in allowed
             if choice.lower() == said or (len(said) >= 3 and choice.lower().startswith(said))]
    meant = meant or [choice for choice in allowed if _SAID_AS.get(said) == choice]
    guess = f"did you mean {meant[0]!r}? " if len(meant) == 1 else ""
    return f"{what} {value!r} is not one of {', '.join(allowed)}", f"{guess}write {what} as one of {', '.join(allowed)}"


class DefinitionError(ValueError):
    """A definition built an invalid model object; carries where it was built."""

    def __init__(self, message: str, where: str, hint: str = "fix the definition"):
        super().__init__(message)
        self.where = where
        self.hint = hint


def _fields_checked(obj, owner: str) -> None:
    """Every field of `obj` holds what its class declares (definition_fields), else the definition's error naming
    the object, the field, and what to write."""
    if not obj.defined_at:
        object.__setattr__(obj, "defined_at", _caller())
    problem = checked(obj)
    if problem:
        raise DefinitionError(f"{owner}: {problem[0]}", obj.defined_at, problem[1])


def _named(what: str, name: object) -> str:
    return f"{what} {name!r}" if isinstance(name, str) else what


def _unit(value: str) -> tuple[str, str]:
    """(problem, fix) for a panel unit that is no key of generator.units: a Grafana unit id names the key it is."""
    problem, fix = _choice("unit", value, tuple(UNITS))
    grafana = [unit.key for unit in UNITS.values() if unit.grafana == value]
    if grafana and "did you mean" not in fix:
        fix = f"Grafana's {value!r} is {' or '.join(map(repr, grafana))} here: {fix}"
    return problem, f"{fix} (generator/units.py), or leave unit out for the field's own"


@dataclass(frozen=True)
class Query:
    """One series set: `aggregation` of `metric` grouped `by` neutral keys.

    `over`: divide the metric by the sum of these fields, series by series, before
    aggregating (framebuffer used / (used + free) is a ratio of this kind); a mean per pod of fields a GPU's
    MIG instances add up (memory) divides the pod's sums instead (promql.pooled).
    Counters are turned into per-second rates by the renderers; `as_increase` asks
    for the increase over the selected time range instead (an alert's: its period), one value per
    series (a panel of increases drawn as a chart over time is drawn as bars, see Panel). In a per-pod query, a field the exporter may
    split per process (GPU utilization, framebuffer used) is the pod's own share, and the fields of
    `over` are the whole GPU's; `whole_gpu` reads the metric as the whole GPU's too.
    """

    metric: str
    aggregation: str = "avg"
    by: tuple[str, ...] = ()
    over: tuple[str, ...] = ()
    legend: str | None = None  # overrides the legend derived from `by`
    as_increase: bool = False
    raw_promql: str | None = None  # escape hatch: Grafana only
    # A per-pod query of the whole GPU a pod holds: where the exporter gives each pod its own share of a field
    # (KUBERNETES_VIRTUAL_GPUS=true, settings exporter.virtual_gpus), read the device's value instead.
    whole_gpu: bool = False
    defined_at: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        _fields_checked(self, _named("query of", self.metric))
        if self.aggregation not in AGGREGATIONS:
            problem, fix = _choice("aggregation", self.aggregation, AGGREGATIONS)
            raise DefinitionError(problem, self.defined_at, fix)
        own = own_labels_of(self.metric)  # a field's own labels (`xid`) name its series
        unknown = [key for key in self.by if key not in GROUP_KEYS and key not in own]
        if unknown:
            meant = [_GROUPED_AS[key.lower()] for key in unknown if key.lower() in _GROUPED_AS]
            guess = f"did you mean {meant[0]!r}? " if len(meant) == 1 == len(unknown) else ""
            raise DefinitionError(f"cannot group by {', '.join(unknown)}: use {', '.join((*GROUP_KEYS, *own))}",
                                  self.defined_at,
                                  f"{guess}write by with gpudash's neutral keys, which it reads from each backend's own "
                                  f"labels, e.g. by=(\"node\", \"gpu\")")
        for name, names in (("by", self.by), ("over", self.over)):
            twice = sorted({key for key in names if names.count(key) > 1})
            if twice:  # `over` would add a field's readings twice to the total it divides by
                raise DefinitionError(f"{_named('query of', self.metric)}: {name} names {', '.join(twice)} twice",
                                      self.defined_at, f"name each once: {name}={tuple(dict.fromkeys(names))!r}")

    @property
    def metrics(self) -> tuple[str, ...]:
        return (self.metric, *[m for m in self.over if m != self.metric])

    @property
    def per_pod(self) -> bool:
        return "pod" in self.by


def charted_unit(query: Query, catalog) -> Unit:
    """The unit of what one query charts. A share of fields (`over`) is a ratio and a count is a count, whatever the
    field; an increase is in the field's unit, a counter's rate in its rate unit, a gauge in its own. Raw PromQL, or
    a field the catalog lacks, is a plain number."""
    if query.raw_promql or query.metric not in catalog:
        return UNITS["count"]
    if query.over:
        return UNITS["ratio"]
    if query.aggregation == "count":  # how many GPUs (or readings), whatever the field counted
        return UNITS["count"]
    metric = catalog.get(query.metric)
    return metric.unit if metric.is_counter and query.as_increase else metric.charted_unit


@dataclass(frozen=True)
class Panel:
    """One chart: its queries, how it is drawn, its unit, levels, bounds and size."""
    title: str
    queries: tuple[Query, ...]
    kind: str = "timeseries"
    description: str = ""  # empty: the renderer uses the metric's help text
    unit: str | None = None  # a unit key from generator.units; None: from the catalog
    thresholds: tuple[float, float] | None = None  # (warning, critical)
    min: float | None = None
    max: float | None = None
    width: int = 12
    height: int = 8
    defined_at: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.queries, Query):
            object.__setattr__(self, "queries", (self.queries,))
        owner = _named("panel", self.title)
        _fields_checked(self, owner)
        queries = self.queries
        if self.kind not in PANEL_KINDS:
            problem, fix = _choice("panel kind", self.kind, PANEL_KINDS)
            raise DefinitionError(problem, self.defined_at, fix)
        if self.unit is not None and self.unit not in UNITS:
            problem, fix = _unit(self.unit)
            raise DefinitionError(f"{owner}: {problem}", self.defined_at, fix)
        if self.thresholds and self.thresholds[0] > self.thresholds[1]:
            warning, critical = self.thresholds
            raise DefinitionError(f"{owner}: thresholds {self.thresholds!r}: the warning level {warning:g} is above "
                                  f"the critical level {critical:g}", self.defined_at,
                                  "write thresholds=(warning, critical), the warning level lower than or equal to "
                                  "the critical one")
        if self.min is not None and self.max is not None and self.min >= self.max:
            raise DefinitionError(f"{owner}: min {self.min:g} is not below max {self.max:g}", self.defined_at,
                                  "write a min lower than the max, or leave either out")
        if not queries:
            raise DefinitionError(f"panel {self.title!r} has no queries", self.defined_at)
        increases = {query.as_increase for query in queries}
        if len(increases) > 1:
            raise DefinitionError(f"panel {self.title!r} mixes increases over the selected range (as_increase) with "
                                  f"other queries: put them in panels of their own", self.defined_at)
        if increases == {True} and self.kind in RANGE_KINDS:
            # An increase over the selected range is one value per series: as a chart over time, each point would be
            # the increase over a whole range ending at that point (counting what happened before the range).
            object.__setattr__(self, "kind", "bargauge")
        if not 1 <= self.width <= GRID_WIDTH or not 1 <= self.height <= 50:
            raise DefinitionError(f"panel {self.title!r}: width must be 1-{GRID_WIDTH}, height 1-50",
                                  self.defined_at)

    def shown_units(self, catalog) -> tuple[Unit, ...]:
        """The unit of each query's values, in the queries' order: the unit the panel names, for every query, else
        what each query charts (charted_unit). The one source of a panel's units, read by every renderer (Grafana's
        unit id and a query's override, CloudWatch's axis label) and by the checks of what a panel of several units
        cannot show (panel_checks.mixed_problem)."""
        if self.unit:
            return (UNITS[self.unit],) * len(self.queries)
        return tuple(charted_unit(query, catalog) for query in self.queries)

    def shown_unit(self, catalog) -> Unit:
        """The panel's unit: that of every query's values where they share one (a panel of one query always: the only
        kind CloudWatch draws); in a panel of several units, its first query's, the default a renderer overrides for
        the queries of another (shown_units)."""
        return self.shown_units(catalog)[0]

    def gauge_range(self, catalog) -> tuple[float, float | None]:
        """(min, max) a gauge's dial runs over, the one range of both renderers: the definition's min and max, each
        end it leaves out from the unit's own range (a percentage 0-100, a ratio 0-1), the foot 0 where the unit has
        none; the top None where neither gives one (W, °C, a count). panel_checks refuses a range that cannot be
        drawn, the CloudWatch renderer a gauge without a top."""
        bounds = self.shown_unit(catalog).bounds or (0, None)
        return (self.min if self.min is not None else bounds[0], self.max if self.max is not None else bounds[1])

    @property
    def grafana_only(self) -> bool:
        """Raw PromQL, or a ratio of two fields: CloudWatch cannot chart these."""
        return any(q.raw_promql or q.over for q in self.queries)


@dataclass(frozen=True)
class Row:
    """A titled group of panels."""
    title: str
    panels: tuple[Panel, ...]
    defined_at: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        _fields_checked(self, _named("row", self.title))


@dataclass(frozen=True)
class Dashboard:
    """`id` is stable: it names the Grafana uid and the CloudWatch dashboard."""

    id: str
    title: str
    rows: tuple[Row, ...]
    description: str = ""
    tags: tuple[str, ...] = ()
    backends: tuple[str, ...] = BACKENDS  # where it is published: Grafana, CloudWatch or both
    defined_at: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        _fields_checked(self, _named("dashboard", self.id))
        unknown = [b for b in self.backends if b not in BACKENDS]
        if unknown or not self.backends:
            raise DefinitionError(f"backends must be some of {', '.join(BACKENDS)}", self.defined_at)
        # A row left without panels (its fields are not collected) is dropped.
        object.__setattr__(self, "rows", tuple(row for row in self.rows if row.panels))
        if not _ID.match(self.id):
            raise DefinitionError(f"dashboard id {self.id!r} must be 1-31 lower-case letters, digits and '-'",
                                  self.defined_at, "write the id as e.g. 'training' (it names the Grafana uid "
                                                   "and the CloudWatch dashboards)")
        if not self.title.strip():  # Grafana refuses it on save: "Dashboard title cannot be empty" (400)
            raise DefinitionError(f"dashboard {self.id!r}: the title is empty", self.defined_at,
                                  'write a title, e.g. title="GPUs by pod"')
        if "cloudwatch" in self.backends:
            # The CloudWatch dashboard's header names a widget by its title (what it shows past its title, the panels
            # left to Grafana): two panels of one title would have their notes merged, neither told apart.
            seen: dict[str, str] = {}
            for panel in self.panels():
                if panel.title in seen:
                    raise DefinitionError(
                        f"dashboard {self.id!r}: two panels are titled {panel.title!r} ({seen[panel.title]} and "
                        f"{panel.defined_at}): on CloudWatch the dashboard's header names each widget by its title",
                        self.defined_at, 'give each panel a title of its own, or publish the dashboard to Grafana '
                                         'only: backends=("grafana",)')
                seen[panel.title] = panel.defined_at

    def panels(self) -> Iterable[Panel]:
        for row in self.rows:
            yield from row.panels

    def queries(self) -> Iterable[Query]:
        for panel in self.panels():
            yield from panel.queries


@dataclass(frozen=True)
class Placed:
    """A row header or panel with its grid position (shared by every renderer)."""

    item: Row | Panel
    x: int
    y: int
    w: int
    h: int


def layout(dashboard: Dashboard) -> list[Placed]:
    """Rows one under another; panels left to right, wrapping at the grid width."""
    placed: list[Placed] = []
    y = 0
    for row in dashboard.rows:
        placed.append(Placed(row, 0, y, GRID_WIDTH, 1))
        y += 1
        x = 0
        line_height = 0
        for panel in row.panels:
            if x + panel.width > GRID_WIDTH:
                y += line_height
                x, line_height = 0, 0
            placed.append(Placed(panel, x, y, panel.width, panel.height))
            x += panel.width
            line_height = max(line_height, panel.height)
        y += line_height
    return placed


COMPARISONS = (">", ">=", "<", "<=")
SEVERITIES = ("critical", "warning")
MISSING_DATA = ("missing", "notBreaching", "breaching", "ignore")
ALARM_SCOPES = ("cluster", "fleet")


@dataclass(frozen=True)
class Condition:
    """`query comparison threshold`, e.g. max GPU temperature > 87."""

    query: Query
    comparison: str
    threshold: float
    defined_at: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        _fields_checked(self, "alarm condition")
        if self.comparison not in COMPARISONS:
            problem, fix = _choice("comparison", self.comparison, COMPARISONS)
            raise DefinitionError(f"alarm condition: {problem}", self.defined_at, fix)

    @property
    def counts_events(self) -> bool:
        """An increase compared `> 0`: each event the counter counts (a row remapped) is the alarm's, whenever it
        happened, so growth across a gap in the GPU's data counts as far back as a rule can read (a rate's level,
        `> N` per period, is no such alarm: a gap's growth cannot be placed in one period)."""
        return self.query.as_increase and self.comparison == ">" and self.threshold == 0

    @property
    def rises(self) -> bool:
        """A rate compared `> 0`: any growth of the counter in a period. Its CloudWatch request is an increase
        `> 0`'s, but its rule keeps a level's horizon for a gap's growth (render.alarms.gap_reach): not counts_events."""
        return not self.query.as_increase and self.comparison == ">" and self.threshold == 0


ABSENT_MISSING_DATA = ("missing", "breaching")  # an absent alarm's own: no data is what it fires on


def absent_problem(alarm: "Alarm") -> str:
    """What an `absent=True` alarm asks that it would not do ("" if nothing): it is the data-missing alarm, which
    fires when the GPU data of a cluster stops arriving (data_missing) whatever its condition says, so a condition
    other than `count(field) < 1` over the whole cluster (fewer than 7 GPUs, per node) would be dropped without a
    word, and missing data that does not breach contradicts it."""
    query, condition = alarm.condition.query, alarm.condition
    if (query.aggregation, query.by) != ("count", ()) or (condition.comparison, condition.threshold) not in (
            ("<", 1), ("<=", 0)):  # no GPU reporting, as a count writes it
        by = f" by ({', '.join(query.by)})" if query.by else ""
        return (f"absent=True makes the data-missing alarm (a cluster's GPU data no longer arriving), which ignores "
                f"the condition {query.aggregation}({query.metric}){by} {condition.comparison} {condition.threshold:g}")
    if alarm.missing_data not in ABSENT_MISSING_DATA:
        return f"absent=True alarms when no data arrives: missing_data={alarm.missing_data!r} would never let it fire"
    if alarm.scope != "cluster":  # the data-missing alarm is one per cluster (and per exporter DaemonSet)
        return (f"absent=True makes the data-missing alarm, which judges each cluster apart (a fleet's data is "
                f"missing where one cluster's is): scope={alarm.scope!r} would be ignored")
    return ""


@dataclass(frozen=True)
class Alarm:
    """A neutral alarm rule; renders to CloudWatch alarms and Prometheus alerting rules.

    Grouping the query by `pod` makes a per-pod alarm (every pod a contributor; by `pod` and `gpu`, each GPU a pod
    holds).
    `cloudwatch` is an alternative condition for what CloudWatch cannot express
    (it cannot divide two metrics in a GROUP BY alarm). `absent` alarms fire when
    the metric stops arriving at all. `stopped` alarms fire for each GPU that reported and stopped while its node's
    other GPUs report (stopped_gpus); on CloudWatch each node whose GPUs below its highest index read nothing, on
    agent.pipeline: otel only (elsewhere a Prometheus rule alone: lint AL027).
    """

    id: str
    title: str
    condition: Condition
    severity: str = "warning"
    description: str = ""
    runbook: str = ""
    period_seconds: int = 300
    evaluation_periods: int = 1
    datapoints_to_alarm: int | None = None
    missing_data: str = "missing"
    scope: str = "cluster"
    cloudwatch: Condition | None = None
    absent: bool = False
    stopped: bool = False
    defined_at: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        _fields_checked(self, _named("alarm", self.id))
        problems, fixes = [], []
        if not _ID.match(self.id):
            problems.append(f"alarm id {self.id!r} must be 1-31 lower-case letters, digits and '-'")
            fixes.append("write the id as e.g. 'gpu-hot' (it names the alarm and the Prometheus rule)")
        choices = [("severity", self.severity, SEVERITIES), ("missing_data", self.missing_data, MISSING_DATA),
                    ("scope", self.scope, ALARM_SCOPES)]
        for what, value, allowed in choices:
            if value not in allowed:
                problem, fix = _choice(what, value, allowed)
                problems.append(problem)
                fixes.append(fix)
        if self.period_seconds not in (10, 20, 30) and (self.period_seconds < 60 or self.period_seconds % 60):
            problems.append(f"period_seconds {self.period_seconds} must be 10, 20, 30 or a multiple of 60")
            fixes.append("write period_seconds as 60, 120, 300, ... (10, 20, 30 only for a rule Prometheus alone "
                         "judges: an alarm built on CloudWatch reads the agent's standard-resolution metrics)")
        needed = self.datapoints_to_alarm
        if self.evaluation_periods < 1 or (needed is not None and not 1 <= needed <= self.evaluation_periods):
            problems.append(f"evaluation_periods {self.evaluation_periods}, datapoints_to_alarm {needed}: need 1 <= "
                            f"datapoints_to_alarm <= evaluation_periods")
            fixes.append("alarm when datapoints_to_alarm of the last evaluation_periods periods breach, e.g. "
                         "evaluation_periods=3, datapoints_to_alarm=2 (None: all of them)")
        if self.absent:
            problem = absent_problem(self)
            if problem:
                problems.append(problem)
                fixes.append("set missing_data='breaching' (or leave it unset)" if "missing_data=" in problem else
                             "drop scope= (the data-missing alarm fires for each cluster whose GPU data stops)"
                             if "scope=" in problem else
                             f"write Condition(Query({self.condition.query.metric!r}, 'count'), '<', 1) for an alarm "
                             f"on GPU data no longer arriving; to alarm on fewer GPUs than a number (or on any other "
                             f"condition) while no data breaches, drop absent=True and set missing_data='breaching'")
        if self.stopped and (self.absent or self.condition.query.by != ("node", "gpu") or self.scope != "cluster"):
            problems.append("stopped=True judges each GPU of a cluster that stopped reporting while its node's other "
                            "GPUs report: it takes a query by ('node', 'gpu'), scope 'cluster', and no absent=True")
            fixes.append(f"write Condition(Query({self.condition.query.metric!r}, 'count', ('node', 'gpu')), '<', 1) "
                         f"with stopped=True, or drop stopped=True")
        # (a stopped rule's datapoints_to_alarm under its evaluation periods, stopped_partly: refused as the project
        # reads it, with whatever else the settings refuse of its periods, in one message: project._load_alarms)
        if problems:
            raise DefinitionError(f"{_named('alarm', self.id)}: {'; '.join(problems)}", self.defined_at,
                                  "; ".join(fixes))

    @property
    def per_pod(self) -> bool:
        return self.condition.query.per_pod

    @property
    def stopped_partly(self) -> bool:
        """A stopped rule of datapoints_to_alarm under its evaluation periods: it fires for a GPU every scrape over its
        window read unread, each of its periods, so its CloudWatch alarm is built N of N and its N of M would not be
        (render.alarms.stopped_datapoints_problem)."""
        return self.stopped and self.datapoints_to_alarm not in (None, self.evaluation_periods)

    @property
    def queries(self) -> tuple[Query, ...]:
        return tuple(c.query for c in (self.condition, self.cloudwatch) if c)

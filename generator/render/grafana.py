"""Neutral dashboards -> Grafana dashboard JSON (schemaVersion 42) through grafana-foundation-sdk.

Pure: (dashboard, catalog, settings) -> dict. Every query references the
`${datasource}` variable and is filtered by the dashboard variables; per-pod
series are labelled from the configured workload-pod label.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

from ..build_memo import BuildMemo
from ..catalog import PER_PROCESS_FIELDS, PRESENCE, Catalog
from ..model import Dashboard, Panel, Query, Row, layout
from ..names import WATCHED_CLUSTER, grafana_uid
from ..panel_ids import PANEL, ROW, panel_ids
from ..plain import plain_data
from ..promql_parens import fewest_parens
from ..promql_text import packed
from ..promql import (COST_NOTE, GPU_LABEL, WHOLE_GPUS_NOTE, Scope, copies_note, counted_within_note,
                      draws_whole_gpus, expression, group_keys,
                      label_lookback, label_name, legend, listed_names, memory_share_note, named_pods_looked_back,
                      named_within_note, on_node, pod_named,
                      over_note, presence, reads_copies_per_step, recorded_counters, recording_note, with_cluster)
from ..settings import Settings

_REF_IDS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Dashboard variables in order: (name, neutral key, label in the UI).
_VARIABLES = (("cluster", "cluster", "Cluster"), ("namespace", "namespace", "Namespace"),
              ("pod", "pod", "Pod"), ("node", "node", "Node"), ("gpu", "gpu", "GPU"))
# The variables whose values a label of free text gives, which may hold a quote: the node's (a Hostname, hostname or
# instance label, or any label `labels.node` names). Their strings stay double-quoted (promql_text.packed); the others'
# values hold none: Kubernetes names, GPU indexes, the settings' prometheus_label (refused with a quote).
FREE_TEXT_VARIABLES = ("node",)


def uid_for(dashboard: Dashboard, settings: Settings) -> str:
    return grafana_uid(settings.grafana.uid_prefix, dashboard.id)


def presence_metrics(catalog: Catalog) -> tuple[str, ...]:
    collected = tuple(name for name in PRESENCE if name in catalog)
    return collected or (catalog.series()[0].name,)


def variable_names(settings: Settings) -> list[tuple[str, str, str]]:
    return [v for v in _VARIABLES if v[0] != "cluster" or settings.shared_prometheus]


def variable_scope(settings: Settings, upto: str | None = None) -> Scope:
    """Each dashboard variable's regex for its key (those before `upto` when given)."""
    regexes = []
    for name, key, _ in variable_names(settings):
        if name == upto:
            break
        regexes.append((key, f"${name}"))
    return Scope(tuple(regexes))


# The dashboard's range, as Grafana writes it into a variable's query: a query_result is evaluated at the range's end,
# so the series it counts are those with a sample within the range.
DASHBOARD_RANGE = "$__range"


def variable_query(name: str, key: str, catalog: Catalog, settings: Settings) -> tuple[str, str]:
    """(query, regex) of one variable, over the dashboard's range: the label of a query_result (the node: each GPU's
    name, as its lines and alerts name it; the GPU, filtered by the node; the cluster, of those gpudash watches; any
    other, the values of series with a sample in the range). A node a GPU reported from within the range is listed, whether
    or not it is still there at its end.
    A GPU is listed whatever its series read: one whose fields read only DCGM's blank, which no count counts
    (promql.counted), is still a GPU of the node, and picking it shows that it reports nothing."""
    labels = settings.labels
    scope = variable_scope(settings, upto=name)
    extra = (pod_named(labels),) if key in ("namespace", "pod") else ()
    metrics = presence_metrics(catalog)
    label = label_name(key, labels)
    if key == "cluster":  # of the clusters gpudash watches on the Prometheus (render.alarms.watched_clusters)
        series = presence(metrics, labels, scope, extra, within=DASHBOARD_RANGE)
        watched = packed(f'count by ({label}) ({series}) and on ({label}) {WATCHED_CLUSTER}', FREE_TEXT_VARIABLES)
        return (f"query_result({watched})",
                f'/{label}="([^"]+)"/')
    coalesced = labels.node_sources != (labels.node,)
    if not coalesced or (key != "node" and "node" not in dict(scope.regexes)):
        # the values of series with a sample in the range, not label_values': Grafana asks it of
        # /api/v1/label/<label>/values, which Prometheus answers from every series of each block (and the head)
        # the range touches, so the last 15 minutes listed a pod whose GPU it left 90 minutes before
        # (tests/integration/test_variables_over_range.py)
        series = presence(metrics, labels, scope, extra, within=DASHBOARD_RANGE)
        return f"query_result({packed(f'count by ({label}) ({series})', FREE_TEXT_VARIABLES)})", f'/{label}="([^"]+)"/'
    if key == "node":
        # the name gpus_named gives each GPU (THE naming step of per-GPU lines and alerts), not every copy's first
        # spelling: an old exporter writing its own pod's name into Hostname beside the new one's node is no node.
        # Ranked over each GPU's every copy whatever pod it names, as the panels rank them (_whole_range_names'
        # `kept`), then kept to the GPUs a copy naming a picked pod or namespace places in the range: ranked over
        # those copies alone, a GPU whose pod only the old exporter named was listed by that exporter's pod name, the
        # node its lines carry left out (tests/integration/test_node_variable_pod_picked.py)
        everywhere = Scope(tuple((k, r) for k, r in scope.regexes if k not in ("namespace", "pod")))
        (matchers,) = everywhere.matchers(labels)
        picked = scope.matchers(labels) if everywhere != scope else None
        series = listed_names(metrics, matchers, f"{settings.scrape.seconds}s", labels, seen=picked)
        if picked is not None:
            gpu = ", ".join(dict.fromkeys((labels.cluster, GPU_LABEL, "gpu")))
            held = " or ".join(on_node(metric, picked, labels) for metric in metrics)
            series = f"({series} and on ({gpu}) ({held}))"
    else:
        # the GPUs a copy names under a picked node, of those a copy naming a picked pod or namespace places in the
        # range, each matched on its own copies (as the per-pod panels pick GPUs: on_node): one copy matching both
        # left out a GPU whose pod only an old exporter (its own pod's name in Hostname) named, listing no GPU
        placed = Scope(tuple((k, r) for k, r in scope.regexes if k not in ("namespace", "pod")))
        workload = Scope(tuple((k, r) for k, r in scope.regexes if k != "node"))
        gpu = ", ".join(dict.fromkeys((labels.cluster, GPU_LABEL, "gpu")))
        on_nodes, held = (" or ".join(on_node(metric, part.matchers(labels), labels) for metric in metrics)
                          for part in (placed, workload))
        series = f"({on_nodes}) and on ({gpu}) ({held})"
    # query_result's PromQL packed as a panel's (the node's, 19 KB on a shared Prometheus, is in every dashboard)
    return f"query_result({packed(f'count by ({label}) ({series})', FREE_TEXT_VARIABLES)})", f'/{label}="([^"]+)"/'


def render(dashboard: Dashboard, catalog: Catalog, settings: Settings) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the SDK prefers its v2 schema
        return _render(dashboard, catalog, settings)


def _model(kind, **fields):
    """An SDK model as its builder makes it: constructed with its defaults, then each field set."""
    model = kind()
    for name, value in fields.items():
        setattr(model, name, value)
    return model


def _render(dashboard: Dashboard, catalog: Catalog, settings: Settings) -> dict[str, Any]:
    from grafana_foundation_sdk.models import dashboard as dm

    grafana = settings.grafana
    built = _model(dm.Dashboard, title=dashboard.title, uid=uid_for(dashboard, settings),
                   tags=sorted({*grafana.tags, *dashboard.tags}), refresh=grafana.refresh, timezone="browser",
                   graph_tooltip=dm.DashboardCursorSync.CROSSHAIR, editable=True,
                   description=dashboard.description or dashboard.title)
    if built.time is None:
        built.time = dm.DashboardDashboardTime()
    built.time.from_val, built.time.to = grafana.time_from, "now"
    if built.templating is None:
        built.templating = dm.DashboardDashboardTemplating()
    built.templating.list_val = []
    built.panels = []
    answers = _ANSWERS.table(catalog, settings)
    panels: list[Any] = []
    placed_items = layout(dashboard)
    # each panel's and row's id from its title, not its place (panel_ids): what people tie to an id stays on its panel
    ids = panel_ids((ROW if isinstance(p.item, Row) else PANEL, p.item.title) for p in placed_items)
    for panel_id, placed in zip(ids, placed_items):
        grid = {"h": placed.h, "w": placed.w, "x": placed.x, "y": placed.y}
        if isinstance(placed.item, Row):
            panels.append(plain_data(_model(dm.RowPanel, type_val="row", title=placed.item.title, id_val=panel_id,
                                            grid_pos=dm.GridPos(**grid)), "to_json"))
        else:
            panel = _plain_panel(placed.item, catalog, settings, answers)
            panel["id"], panel["gridPos"] = panel_id, grid
            panels.append(panel)
    model = plain_data(built, "to_json")
    variables = answers.get(_VARIABLES_KEY)
    if variables is None:
        variables = answers[_VARIABLES_KEY] = plain_data(_variables(catalog, settings), "to_json")
    model["templating"]["list"] = _copied(variables)
    model["panels"] = panels
    return without_sdk_extras(model)


# A dashboard's variables, and each panel unlike any before, are made from the SDK's models once per catalog and
# settings (build_memo.py): dashboards sharing them (the same variables on every dashboard, panels of one definition
# helper on many) are given copies of their plain data.
_ANSWERS = BuildMemo()
_VARIABLES_KEY = "variables"


def _plain_panel(panel: Panel, catalog: Catalog, settings: Settings, answers: dict) -> dict[str, Any]:
    """The panel's plain data, its own (id and grid position 0: the caller sets them). A panel met once is made from
    the SDK's models and given as it is (nothing of it kept: its models are freed); one met again (`_exactly`) is
    made once more, kept apart from every use, and copied for each further use.

    Panels are first told apart by the definitions' own equality (a hash of their fields): a panel unlike any before
    (each of a build's thousands of distinct panels) is kept as itself, and the exact keys (`_exactly`, a call per
    field) are worked out only among panels equal to one met before."""
    alike = answers.get(panel)  # {exact key: what was made} of the panels met before that equal this one
    if alike is None:
        answers[panel] = panel  # the first: only that it was met is kept
        return _made_panel(panel, catalog, settings)
    if type(alike) is not dict:  # met once before, by the panel `alike`
        alike = answers[panel] = {_exactly(alike): True}
    key = _exactly(panel)
    made = alike.get(key)
    if type(made) is dict:
        return _copied(made)
    plain = _made_panel(panel, catalog, settings)
    if made is None:  # the first time: only that it was met is kept
        alike[key] = True
        return plain
    alike[key] = plain
    return _copied(plain)


def _made_panel(panel: Panel, catalog: Catalog, settings: Settings) -> dict[str, Any]:
    """The panel's plain data, made from the SDK's models (id and grid position 0)."""
    from grafana_foundation_sdk.models import dashboard as dm

    model = _panel(panel, catalog, settings)
    model.id_val, model.grid_pos = 0, dm.GridPos(h=0, w=0, x=0, y=0)
    return plain_data(model, "to_json")


def _exactly(value: Any) -> Any:
    """A key equal for two definitions only where every value they compare on is written alike: a definition's
    equality holds 80 == 80.0, True == 1 and 0.0 == -0.0, which JSON writes apart."""
    kind = type(value)
    if kind is str or value is None:
        return value
    if kind is tuple:
        return tuple([_exactly(item) for item in value])
    if kind is float:
        return kind, repr(value)
    names = _COMPARED.get(kind)
    if names is None:
        fields = getattr(kind, "__dataclass_fields__", None)
        names = _COMPARED[kind] = () if fields is None else tuple(n for n, f in fields.items() if f.compare)
    if not names:
        return kind, value
    return kind, *[_exactly(getattr(value, name)) for name in names]


_COMPARED: dict[type, tuple[str, ...]] = {}  # the fields a dataclass compares on, by class (none: not a dataclass)


def _copied(value: Any) -> Any:
    """Plain data copied: no dict or list of it is shared with `value` (text and numbers are)."""
    if type(value) is dict:
        return {key: _copied(item) for key, item in value.items()}
    if type(value) is list:
        return [_copied(item) for item in value]
    return value


# Properties the SDK writes that Grafana's own dashboard types (@grafana/schema 13) do not have
# there: the auto-step settings belong to interval variables only, and Grafana 13 keeps a table's
# footer per field (fieldConfig), not in the panel options.
_INTERVAL_ONLY = ("auto", "auto_count", "auto_min")


def without_sdk_extras(model: dict[str, Any]) -> dict[str, Any]:
    for variable in model.get("templating", {}).get("list", []):
        if variable.get("type") != "interval":
            for key in _INTERVAL_ONLY:
                variable.pop(key, None)
    for panel in model.get("panels", []):
        if panel.get("type") == "table":
            panel.get("options", {}).pop("footer", None)
    return model


def _datasource():
    from grafana_foundation_sdk.models import common

    return common.DataSourceRef(type_val="prometheus", uid="${datasource}")


def _variables(catalog: Catalog, settings: Settings) -> list[Any]:
    from grafana_foundation_sdk.models import dashboard as dm

    source = settings.grafana.datasource
    datasource = _model(dm.VariableModel, name="datasource", type_val=dm.VariableType.DATASOURCE,
                        label="Data source", query=source.type)
    if source.default:
        datasource.current = dm.VariableOption(selected=True, text=source.default, value=source.default)
    variables = [datasource]
    for name, key, title in variable_names(settings):
        query, regex = variable_query(name, key, catalog, settings)
        # All: the clusters listed (Grafana's alternation of its values), not `.*`: any cluster on the Prometheus
        variable = _model(dm.VariableModel, name=name, type_val=dm.VariableType.QUERY, label=title,
                          datasource=_datasource(), query=query, multi=True, include_all=True,
                          all_value=None if key == "cluster" else ".*", current=dm.VariableOption(selected=True, text=["All"], value=["$__all"]),
                          refresh=dm.VariableRefresh.ON_TIME_RANGE_CHANGED, sort=dm.VariableSort.NATURAL_ASC)
        if regex:
            variable.regex = regex
        variables.append(variable)
    return variables


def panel_unit(panel: Panel, catalog: Catalog) -> str:
    """Grafana unit id of a panel (Panel.shown_unit): its first query's where its queries chart several units."""
    return panel.shown_unit(catalog).grafana


def unit_overrides(panel: Panel, catalog: Catalog) -> list[tuple[str, str]]:
    """(refId, Grafana unit id) of each query whose unit is not the panel's (Panel.shown_units): a field override
    matching the query's frame gives its series their own unit (and a chart a second axis), where the panel's one
    unit would show 300 W as 300 °C."""
    units = [unit.grafana for unit in panel.shown_units(catalog)]
    return [(ref_id, unit) for ref_id, unit in zip(_REF_IDS, units) if unit != units[0]]


def legend_calcs(panel: Panel, catalog: Catalog) -> list[str]:
    """The values a chart's legend lists per line: mean, max and last; a state (an XID code, a failure flag, a
    license state) has no meaningful mean (of codes 13 and 79, 46), so its legend lists the max and the last."""
    def state(query) -> bool:
        return (panel.unit == "state" or query.metric in catalog and not catalog.get(query.metric).is_counter
                and catalog.get(query.metric).unit_key == "state") and not query.over and query.aggregation != "count"
    if all(not query.raw_promql and state(query) for query in panel.queries):
        return ["max", "lastNotNull"]
    return ["mean", "max", "lastNotNull"]


def panel_description(panel: Panel, catalog: Catalog, scrape_seconds: int, shares: bool = False) -> str:
    """The panel's own description, or what its fields are; either way, how a counter read from a GPU's copies is
    timed."""
    texts = [panel.description] if panel.description else []
    for query in panel.queries:
        if query.metric in catalog and not panel.description:
            metric = catalog.get(query.metric)
            rate = " Shown as a per-second rate." if metric.is_counter and not query.as_increase else ""
            texts.append(f"{metric.help} ({metric.name}){rate}")
    texts += [WHOLE_GPUS_NOTE for query in panel.queries if draws_whole_gpus(query)]
    per_step = dict.fromkeys(("pod" in group_keys(query.by), query.as_increase) for query in panel.queries
                             if reads_copies_per_step(query, catalog) and not recorded_counters(query, catalog))
    if per_step:  # what the exact reading costs, then how it is timed (the description ends with that)
        texts.append(COST_NOTE)
    for per_pod, whole_range in per_step:
        texts.append(copies_note(scrape_seconds, per_pod, whole_range))
    texts += [recording_note(scrape_seconds, "pod" in group_keys(query.by)) for query in panel.queries
              if recorded_counters(query, catalog)]
    texts += [counted_within_note(scrape_seconds) for query in panel.queries
              if query.aggregation == "count" and not query.raw_promql]
    texts += [named_within_note(scrape_seconds, shares and query.metric in PER_PROCESS_FIELDS and not query.whole_gpu,
                                query.aggregation == "count")
              for query in panel.queries if named_pods_looked_back(query, catalog)]
    texts += filter(None, (memory_share_note(query, catalog) or over_note(query, catalog) for query in panel.queries))
    return " ".join(dict.fromkeys(texts)) or panel.title


def _description(panel: Panel, catalog: Catalog, settings: Settings) -> str:
    """panel_description, worked out once per build for the panels alike in their own description and queries (all
    it reads of a panel but the title, which it gives only where it has nothing else to say)."""
    answers = _ANSWERS.table(catalog, settings)
    key = (_DESCRIPTION_KEY, panel.description, panel.queries)
    text = answers.get(key)
    if text is None:
        text = answers[key] = panel_description(replace(panel, title=""), catalog, settings.scrape.seconds,
                                                settings.labels.copies)
    return text or panel.title


_DESCRIPTION_KEY = "description"


def _query_texts(query: Query, catalog: Catalog, settings: Settings) -> tuple[str, str]:
    """(PromQL, legend) of a panel's query, worked out once per build for each query (many panels chart one)."""
    answers = _ANSWERS.table(catalog, settings)
    key = (_QUERY_KEY, query)
    texts = answers.get(key)
    if texts is None:
        if settings.shared_prometheus and query.by and not query.raw_promql:
            query = with_cluster(query)  # a node or pod name may repeat in another cluster
        expr = expression(query, settings.labels, catalog, variable_scope(settings),
                          resolution=f"{settings.scrape.seconds}s", named_within=label_lookback(settings.scrape.seconds))
        # gpudash's own PromQL without the parentheses its tree does not need (Prometheus 2.x's CPU per refresh), packed
        # (a dashboard's ConfigMap fits what client-side kubectl apply takes); a user's raw PromQL as written
        texts = answers[key] = (expr if query.raw_promql else packed(fewest_parens(expr), FREE_TEXT_VARIABLES),
                                 legend(query, settings.labels))
    return texts


_QUERY_KEY = "query"


def _targets(panel: Panel, catalog: Catalog, settings: Settings) -> list[Any]:
    from grafana_foundation_sdk.models import prometheus as pm

    targets = []
    for ref_id, query in zip(_REF_IDS, panel.queries):
        expr, legend_format = _query_texts(query, catalog, settings)
        target = pm.Dataquery(datasource=_datasource(), ref_id=ref_id, expr=expr, legend_format=legend_format)
        if panel.kind == "table":
            target.format_val = pm.PromQueryFormat.TABLE
        # Single values and tables read the latest value; the other kinds a range.
        target.instant = panel.kind in ("table", "stat", "gauge", "bargauge")
        target.range_val = not target.instant
        targets.append(target)
    return targets


# Column titles of a table's grouping keys.
_COLUMN_TITLES = {key: title for _, key, title in _VARIABLES} | {
    "container": "Container", "model": "Model", "mig_instance": "MIG instance"}


def _table_columns(panel: Panel, settings: Settings):
    """An organize transformation: label columns titled for what they hold (whatever label carries
    it), the value titled `GPUs` for a count (each pod's or node's GPUs) and the panel's title
    otherwise, and the instant query's `Time` hidden."""
    from grafana_foundation_sdk.models import dashboard as dm

    query = panel.queries[0]
    if settings.shared_prometheus and query.by:
        query = with_cluster(query)
    rename = {label_name(key, settings.labels): _COLUMN_TITLES[key] for key in group_keys(query.by)}
    if len(panel.queries) == 1:
        rename["Value"] = "GPUs" if query.aggregation == "count" else panel.title
    return dm.DataTransformerConfig(id_val="organize", options={
        "excludeByName": {"Time": True}, "renameByName": rename})


def _thresholds(panel: Panel):
    from grafana_foundation_sdk.models import dashboard as dm

    steps = [dm.Threshold(value=None, color="green")]
    if panel.thresholds:
        warning, critical = panel.thresholds
        steps += [dm.Threshold(value=warning, color="orange"), dm.Threshold(value=critical, color="red")]
    return _model(dm.ThresholdsConfig, mode=dm.ThresholdsMode.ABSOLUTE, steps=steps)


# Panel kinds whose field config has a kind-specific `custom` part from the start.
_CUSTOM_FIELD_CONFIG = ("timeseries", "table", "heatmap")


def _panel(panel: Panel, catalog: Catalog, settings: Settings):
    """One panel, assembled from the SDK's models as its panel builders assemble it. No builder is
    used: each panel builder module imports the SDK's two v2 dashboard schemas, which would cost
    every `generate` about 20 ms for classes it never uses, and the others are imports too."""
    from importlib import import_module

    from grafana_foundation_sdk.models import common, dashboard as dm

    kind = import_module(f"grafana_foundation_sdk.models.{panel.kind}")
    field_config = dm.FieldConfigSource()
    defaults = field_config.defaults
    if panel.kind in _CUSTOM_FIELD_CONFIG:
        defaults.custom = kind.FieldConfig()
    description = _description(panel, catalog, settings)
    model = dm.Panel(type_val=panel.kind, title=panel.title, description=description,
                     datasource=_datasource(), targets=_targets(panel, catalog, settings), options=kind.Options(),
                     field_config=field_config)
    if any("$__rate_interval" in (target.expr or "") for target in model.targets):
        # Grafana works $__rate_interval out as max($__interval + s, 4 s), s the query's min step (its
        # `interval`), else the data source's scrape interval (15 s unless someone set it); the panel's min
        # interval only bounds $__interval. With 60 s scrapes, rate(x[60s:60s]) without either (two points in three
        # empty), rate(x[75s:60s]) with the panel's alone (a missed scrape empties two points). The scrape interval
        # as each query's min step makes the window 4 scrapes at least.
        model.interval = f"{settings.scrape.seconds}s"
        for target in model.targets:
            if "$__rate_interval" in (target.expr or ""):
                target.interval = f"{settings.scrape.seconds}s"
    options = model.options
    if panel.kind != "heatmap":
        defaults.unit = panel_unit(panel, catalog)
        field_config.overrides = [
            dm.DashboardFieldConfigSourceOverrides(matcher=dm.MatcherConfig(id_val="byFrameRefID", options=ref_id),
                                                   properties=[dm.DynamicConfigValue(id_val="unit", value=unit)])
            for ref_id, unit in unit_overrides(panel, catalog)]
        defaults.thresholds = _thresholds(panel)
        low, high = panel.gauge_range(catalog) if panel.kind == "gauge" else (panel.min, panel.max)
        if low is not None:
            defaults.min_val = low
        if high is not None:
            defaults.max_val = high
    if panel.kind == "timeseries":
        options.legend = common.VizLegendOptions(show_legend=True, display_mode=common.LegendDisplayMode.TABLE,
                                                 placement=common.LegendPlacement.BOTTOM,
                                                 calcs=legend_calcs(panel, catalog))
        options.tooltip = common.VizTooltipOptions(mode=common.TooltipDisplayMode.MULTI,
                                                   sort=common.SortOrder.DESCENDING)
        defaults.custom.fill_opacity = 10
        defaults.custom.line_width = 1
        defaults.custom.span_nulls = False
        if panel.thresholds:
            defaults.custom.thresholds_style = common.GraphThresholdsStyleConfig(
                mode=common.GraphThresholdsStyleMode.DASHED)
    elif panel.kind in ("stat", "gauge", "bargauge"):
        options.reduce_options = common.ReduceDataOptions(calcs=["lastNotNull"], values=False)
    elif panel.kind == "table" and not panel.queries[0].raw_promql:
        model.transformations = [_table_columns(panel, settings)]
    elif panel.kind == "heatmap":
        options.calculate = True
        options.y_axis = kind.YAxisConfig(unit=panel_unit(panel, catalog))
    return model

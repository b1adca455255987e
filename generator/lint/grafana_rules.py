"""Lint rules over the generated Grafana dashboards (neutral and grafanalib ones alike)."""

from __future__ import annotations

import re
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..artifacts import GrafanaDashboard
from ..last_applied import APPLY_LIMIT, last_applied_bytes
from ..output import KUBECTL_APPLY, grafana_dashboard_file, grafana_dashboard_texts
from ..reading import read_json_schema
from . import Finding, Rule, schema_message
from .subject import LintInput
from ..promql_text import STRING_LITERAL
from .relabel_shape import well_formed
from .promql_checks import COUNTER_FUNCTIONS, Selector, check_parses, output_labels, query_selectors, range_windows

UID_MAX = 40
CONFIGMAP_APPLY_LIMIT = APPLY_LIMIT  # the API server's limit on an object's annotations (keys and values), bytes
_DATASOURCE_REFS = ("${datasource}", "$datasource")


def _panels(model: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in model.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # collapsed rows hold their panels


def _charts(model: dict[str, Any]) -> Iterator[dict[str, Any]]:
    return (p for p in _panels(model) if p.get("type") not in ("row", "text"))


def panel_place(dashboard: GrafanaDashboard, panel: dict[str, Any] | None = None) -> str:
    """Where a finding points: the dashboard's file, and the panel's title when it is about a panel."""
    place = grafana_dashboard_file(dashboard.uid)
    return f"{place} panel {panel.get('title', '?')!r}" if panel else place


def queries(dashboards: Iterable[GrafanaDashboard]) -> Iterator[tuple[GrafanaDashboard, dict, dict]]:
    """(dashboard, panel, target) of every query of every chart, those in collapsed rows too."""
    for dashboard in dashboards:
        for panel in _charts(dashboard.model):
            for target in panel.get("targets", []):
                if target.get("expr"):
                    yield dashboard, panel, target


_VARIABLE = re.compile(r"\$\{?[A-Za-z_]\w*|\[\[\w+\]\]")


def _as_sent(expr: str, dashboard: GrafanaDashboard) -> str:
    """A query as Grafana sends it at the dashboard's defaults where a variable stands outside a string (`[$window]`):
    one inside a label matcher's quotes (`node=~"$node"`) leaves the query's syntax as it is, so the query is
    parsed as written (and once: the other rules read the same parse)."""
    from ..preview.interpolate import defaults, interpolate

    if not _variable_outside_strings(expr):
        return expr
    return interpolate(expr, defaults(dashboard.model))


@lru_cache(maxsize=4096)
def _variable_outside_strings(expr: str) -> bool:
    """Whether a dashboard variable stands outside the query's strings (by its text: a fleet's clusters repeat each
    query). Grafana's global variables ($__range, ${__range_ms}) do not count: query_selectors replaces them itself."""
    outside = STRING_LITERAL.sub('""', expr)
    return not all(m.group().lstrip("${[").startswith("__") for m in _VARIABLE.finditer(outside))


def promql_parses(subject: LintInput) -> Iterable[Finding]:
    for dashboard, panel, target in queries(subject.grafana):
        try:
            query_selectors(_as_sent(target["expr"], dashboard))
        except ValueError as exc:
            yield Finding("GF001", "error", panel_place(dashboard, panel),
                          f"query {target.get('refId', '?')} does not parse: {exc}")
    for dashboard in subject.grafana:
        for variable in (dashboard.model.get("templating") or {}).get("list") or []:
            expr = _variable_expression(variable)
            if expr is None:
                continue
            try:
                check_parses(_as_sent(expr, dashboard))
            except ValueError as exc:
                yield Finding("GF001", "error", f"{panel_place(dashboard)} variable {variable.get('name', '?')!r}",
                              f"query does not parse: {exc}")


_VARIABLE_FUNCTIONS = re.compile(r"^\s*(label_values|query_result)\s*\((.*)\)\s*$", re.DOTALL)


def _variable_expression(variable: dict[str, Any]) -> str | None:
    """The PromQL inside a Prometheus query variable: label_values(<selector>, label)'s selector, query_result(<expr>)'s
    expression; None for other variables (and label_values(label), which holds none)."""
    if variable.get("type") != "query":
        return None
    query = variable.get("query")
    query = query.get("query") if isinstance(query, dict) else query
    found = _VARIABLE_FUNCTIONS.match(query) if isinstance(query, str) else None
    if found is None:
        return None
    inside = found.group(2)
    if found.group(1) == "query_result":
        return inside
    selector, comma, _ = inside.rpartition(",")
    return selector if comma and selector.strip() else None


def parsed_selectors(dashboards: list[GrafanaDashboard]) -> Iterator[tuple[GrafanaDashboard, dict, Selector]]:
    """Every selector of every query that parses (GF001 reports the others)."""
    for dashboard, panel, target in queries(dashboards):
        try:
            found = query_selectors(target["expr"])
        except ValueError:
            continue
        for selector in found:
            yield dashboard, panel, selector


def metrics_known(subject: LintInput) -> Iterable[Finding]:
    """Every metric a query names is a field of the counters CSV or a series the build's rules record (the counters'
    recordings rate panels read: a panel reading one no rule writes shows no data)."""
    recorded = {rule["record"] for group in (subject.artifacts.prometheus_rules or {}).get("groups", ())
                for rule in group.get("rules", ()) if "record" in rule}
    for dashboard, panel, selector in parsed_selectors(subject.grafana):
        if selector.metric and selector.metric not in subject.catalog and selector.metric not in recorded:
            yield Finding("GF002", "error", panel_place(dashboard, panel),
                          f"{selector.metric} is not in the counters CSV ({subject.catalog.source})"
                          + (" nor recorded by the build's rules" if selector.metric.startswith("gpudash:") else ""))


def counters_rated(subject: LintInput) -> Iterable[Finding]:
    """A counter whose raw readings a panel shows, said once per panel (a query reads a field once per spelling of
    the node): not one only counted or tested for presence (`count(x)`: the GPUs reporting it); and one rated over an
    aggregation by `gpu` beside labels none of which holds the GPU's node (_node_holding: GPU 0 of several nodes
    merged)."""
    said: set[tuple[int, str]] = set()
    held: frozenset[str] | None = None
    for dashboard, panel, selector in parsed_selectors(subject.grafana):
        metric = selector.metric
        if not (metric in subject.catalog and subject.catalog.get(metric).is_counter and selector.shown) \
                or (id(panel), metric) in said:
            continue
        if selector.range_function not in COUNTER_FUNCTIONS:
            said.add((id(panel), metric))
            yield Finding("GF006", "error", panel_place(dashboard, panel), _raw_message(metric, selector))
            continue
        held = _node_holding(subject) if held is None else held
        apart = next((labels for labels in selector.node_labels if not labels & held), None)
        if apart is not None:
            said.add((id(panel), metric))
            yield Finding("GF006", "error", panel_place(dashboard, panel),
                          _apart_message(metric, selector, apart, held))


def _read_by(function: str, steps: bool = False) -> str:
    """How a query reads a counter, as its text says it: a sum of a subquery's idelta() steps stands for increase()."""
    return "a sum of idelta() steps" if steps or function == "idelta" else f"{function}()"


def _raw_message(metric: str, selector: Selector) -> str:
    rated, across = selector.rated_across, selector.across
    if rated is None:
        return f"counter {metric} is charted raw: read it through rate(), irate() or increase()"
    read = _read_by(rated)
    return (f"counter {metric} is read by {read} over a {across}: that {across.split()[0]} is no counter (a GPU or a "
            f"copy of its reading leaving reads as a reset, one coming as growth): merge the copies inside the "
            f"subquery with a max by one GPU (its UUID or gpudash_gpu, or gpu and its node), then aggregate the "
            f"{read} outside")


def _apart_message(metric: str, selector: Selector, labels: frozenset[str], held: frozenset[str]) -> str:
    named = ", ".join(sorted(labels))
    return (f"counter {metric} is read by {_read_by(selector.range_function, selector.steps)} over an aggregation by "
            f"gpu and {named}, which "
            f"holds no GPU's node (the labels that do: {', '.join(sorted(held))}): GPU 0 of several nodes reads as one "
            f"GPU, so one leaving reads as a reset and another's growth as its own; group by the GPU's UUID or "
            f"gpudash_gpu, or by gpu and a label holding its node (list {named} in labels.node if it holds the node)")


# Kubernetes service discovery's labels of a target's node: a target label a scrape job's relabel rule writes from one
# of them holds the node
_NODE_META = frozenset(("__meta_kubernetes_pod_node_name", "__meta_kubernetes_node_name",
                        "__meta_kubernetes_endpoint_node_name", "__meta_kubernetes_endpointslice_endpoint_node_name"))
# The exporter's own labels holding its node (its Hostname or hostname, the exporter pod's name on old exporters
# without NODE_NAME: one per node all the same), and the scrape target (one exporter pod: one node)
_EXPORTER_NODE_LABELS = ("Hostname", "hostname", "instance")


def _node_holding(subject: LintInput) -> frozenset[str]:
    """The labels that hold a GPU's node, by what they hold: those the settings name as the node's (labels.node), the
    exporter's host name and the target, and each label a generated scrape job writes from the target's node."""
    labels = subject.settings.labels
    held = {labels.node, *labels.node_sources, *_EXPORTER_NODE_LABELS}
    jobs = list(subject.prometheus_jobs())
    for agent in subject.artifacts.agents:
        jobs += agent.scrape.get("scrape_configs") or []
    rules = [rule for job in jobs for rule in well_formed(job.get("relabel_configs"))]
    for monitor in (subject.artifacts.service_monitor, *subject.artifacts.more_service_monitors):
        for endpoint in (monitor.get("spec") or {}).get("endpoints") or []:
            rules += [{"source_labels": rule.get("sourceLabels"), "target_label": rule.get("targetLabel"),
                       "action": rule.get("action")} for rule in well_formed(endpoint.get("relabelings"))]
    for rule in rules:
        if isinstance(rule, dict) and str(rule.get("action") or "replace").lower() == "replace" \
                and set(rule.get("source_labels") or ()) & _NODE_META and isinstance(rule.get("target_label"), str):
            held.add(rule["target_label"])
    return frozenset(held)


def rate_interval(subject: LintInput) -> Iterable[Finding]:
    for dashboard, panel, target in queries(subject.grafana):
        for window in range_windows(target["expr"], subject.settings.scrape.seconds):
            if window not in ("$__rate_interval", "$__range", "${__range_ms}ms", "$__interval") and ":" not in window:
                yield Finding("GF007", "warning", panel_place(dashboard, panel),
                              f"range [{window}] is fixed: use [$__rate_interval] so it follows the scrape interval")


def units(subject: LintInput) -> Iterable[Finding]:
    for dashboard in subject.grafana:
        for panel in _charts(dashboard.model):
            if not panel.get("fieldConfig", {}).get("defaults", {}).get("unit") and panel.get("type") != "heatmap":
                yield Finding("GF003", "error", panel_place(dashboard, panel), "panel has no unit")


def descriptions(subject: LintInput) -> Iterable[Finding]:
    for dashboard in subject.grafana:
        for panel in _charts(dashboard.model):
            if not panel.get("description"):
                yield Finding("GF004", "error", panel_place(dashboard, panel), "panel has no description")


def _datasource_ok(ref: Any) -> bool:
    if ref is None:
        return True  # inherits the panel's
    uid = ref.get("uid") if isinstance(ref, dict) else ref
    return uid in _DATASOURCE_REFS or (isinstance(uid, str) and uid.startswith("-- "))


def datasource_variable(subject: LintInput) -> Iterable[Finding]:
    for dashboard in subject.grafana:
        for panel in _charts(dashboard.model):
            refs = [panel.get("datasource")] + [t.get("datasource") for t in panel.get("targets", [])]
            if panel.get("datasource") is None or not all(_datasource_ok(r) for r in refs):
                yield Finding("GF005", "error", panel_place(dashboard, panel),
                              "queries must use the ${datasource} variable, not a fixed data source")


def uids(subject: LintInput) -> Iterable[Finding]:
    seen: set[str] = set()
    for dashboard in subject.grafana:
        uid = dashboard.model.get("uid") or ""
        if not uid or len(uid) > UID_MAX:
            yield Finding("GF008", "error", panel_place(dashboard), f"uid {uid!r} must be 1-{UID_MAX} characters")
        if uid in seen:
            yield Finding("GF008", "error", panel_place(dashboard), f"uid {uid!r} is used by another dashboard")
        seen.add(uid)


def overlaps(subject: LintInput) -> Iterable[Finding]:
    for dashboard in subject.grafana:
        boxes = []
        for panel in dashboard.model.get("panels", []):
            grid = panel.get("gridPos") or {}
            box = (grid.get("x", 0), grid.get("y", 0), grid.get("w", 0), grid.get("h", 0))
            for other_title, (x, y, w, h) in boxes:
                if box[0] < x + w and x < box[0] + box[2] and box[1] < y + h and y < box[1] + box[3]:
                    yield Finding("GF009", "error", panel_place(dashboard, panel),
                                  f"overlaps panel {other_title!r}")
            boxes.append((panel.get("title", "?"), box))


def pod_legends(subject: LintInput) -> Iterable[Finding]:
    label = subject.pod_label
    for dashboard, panel, target in queries(subject.grafana):
        shown = target.get("legendFormat") or ""
        missing = [name for name in (subject.namespace_label, label) if f"{{{{{name}}}}}" not in shown]
        if missing and _per_pod(_as_sent(target["expr"], dashboard), label, f"{{{{{label}}}}}" in shown):
            yield Finding("GF012", "error", panel_place(dashboard, panel),
                          f"per-pod query's legend does not show {' and '.join(f'{{{{{m}}}}}' for m in missing)} "
                          "(a pod name repeats across namespaces)")


def _per_pod(expr: str, label: str, legend_shows_it: bool) -> bool:
    """Whether a query draws a line per pod, read from the labels of its parsed answer: one grouped by the pod
    (`sum by (namespace) (... by (pod) ...)` answers per namespace), or whose series keep every label but some, the
    pod among them (a selector, `sum without (instance) (...)`) where the legend shows the pod. A query the parser
    refuses (GF001 says so) is per pod where a grouping names the pod."""
    labels = output_labels(expr)
    if labels is None:
        return any(label in (name.strip() for name in group.split(","))
                   for group in re.findall(r"\bby\s*\(([^)]*)\)", expr))
    return labels.may_carry(label) and (legend_shows_it or not labels.open)


@cache
def schema_validators(schema_dir: str):
    """The validators of the dashboard and panel schemas in Grafana's `schema_dir`, read and checked once."""
    import jsonschema

    def load(name: str):
        return read_json_schema(Path(schema_dir, f"{name}.jsonschema.json"), "Grafana's JSON schema",
                                "point --grafana-schema at grafana-foundation-sdk's jsonschema/ folder, whole",
                                jsonschema.Draft7Validator)

    dashboard = jsonschema.Draft7Validator(any_value_where_grafana_takes_any(load("dashboard")))
    panels = {}
    for kind in ("timeseries", "stat", "gauge", "bargauge", "table", "heatmap"):
        document = load(kind)
        definitions = document.get("definitions", {})
        panels[kind] = tuple(
            jsonschema.Draft7Validator({**document, "$ref": f"#/definitions/{name}"}) if name in definitions else None
            for name in ("Options", "FieldConfig"))
    return dashboard, panels


# Properties Grafana's dashboard kind declares as any value (CUE `_`), which the jsonschema export writes as an object:
# an override's matcher options (a refId, a field name: the SDK's own override_by_query / override_by_name write a
# string) and a property's value (a unit id, a number).
ANY_VALUE = (("MatcherConfig", "options"), ("DynamicConfigValue", "value"))


def any_value_where_grafana_takes_any(document: dict) -> dict:
    """The dashboard schema with ANY_VALUE's properties taking any JSON value (a copy: the document is cached)."""
    definitions = dict(document.get("definitions", {}))
    for name, prop in ANY_VALUE:
        if prop in definitions.get(name, {}).get("properties", {}):
            definition = dict(definitions[name])
            definition["properties"] = {**definition["properties"], prop: {}}
            definitions[name] = definition
    return {**document, "definitions": definitions}


def _deepest(error):
    """The most specific cause of an anyOf/oneOf failure: the sub-error with the longest path."""
    while error.context:
        error = max(error.context, key=lambda e: (len(e.absolute_path), e.validator != "type"))
    return error


def schema(subject: LintInput) -> Iterable[Finding]:
    if subject.grafana_schema is None:
        return
    dashboard_validator, panel_validators = schema_validators(str(subject.grafana_schema))
    for dashboard in subject.grafana:
        severity = "error" if dashboard.model.get("schemaVersion", 0) >= 36 else "warning"
        for error in dashboard_validator.iter_errors(dashboard.model):
            error = _deepest(error)  # descend into anyOf (panel or row) to the real cause
            path = "/".join(str(p) for p in error.absolute_path)
            yield Finding("GF010", severity, panel_place(dashboard), f"schema: {path}: {schema_message(error)}")
        for panel in _charts(dashboard.model):
            validators = panel_validators.get(panel.get("type"))
            if not validators:
                continue
            values = (panel.get("options", {}), panel.get("fieldConfig", {}).get("defaults", {}).get("custom", {}))
            for validator, value in zip(validators, values):
                if validator is None:
                    continue
                for error in validator.iter_errors(value):
                    yield Finding("GF010", severity, panel_place(dashboard, panel),
                                  f"schema: {schema_message(error)}")


def configmap_size(subject: LintInput) -> Iterable[Finding]:
    from ..dashboard_parts import part_said
    from ..render.grafana_files import configmap

    for dashboard in subject.grafana:
        text = grafana_dashboard_texts(dashboard.model)[1]  # the text the ConfigMap carries
        size = last_applied_bytes(configmap(dashboard.uid, text.decode(), subject.artifacts.grafana_folder["title"],
                                            subject.artifacts.publisher, part_said(dashboard.model.get("title"))))
        if size > CONFIGMAP_APPLY_LIMIT:
            yield Finding("GF011", "warning", panel_place(dashboard),
                          f"{size:,} bytes of annotations (the dashboard's {len(text):,} bytes as client-side "
                          f"kubectl apply encodes its ConfigMap into last-applied-configuration), over the "
                          f"{CONFIGMAP_APPLY_LIMIT:,} the API server accepts (the apply is refused), and no cut "
                          f"of its panels into dashboards fits (a panel alone too large, a panel reading another's "
                          f"data with that one and those between them too large, or panels without a place on the "
                          f"grid): apply k8s/grafana-dashboards.yaml with {KUBECTL_APPLY} (no "
                          f"such annotation; or gpudash push to Grafana's API)")


# Grafana's dashboard kind declares a panel's id a uint32: a whole number up to this
PANEL_ID_TOP = 2**32 - 1
_ID_TIED = ("Grafana gives it another when it loads the dashboard (the highest id + 1), which a panel added later "
            "changes, and annotations made on the panel, viewPanel links and alert rules linked to it name that number")


def panel_ids(subject: LintInput) -> Iterable[Finding]:
    """A panel or row whose id is no whole number Grafana keeps, or another's of its dashboard (a grafanalib
    definition's own: gpudash gives every other one from its title)."""
    for dashboard in subject.grafana:
        held: dict[int, str] = {}
        for panel in _panels(dashboard.model):
            if not isinstance(panel, dict):
                continue
            number = panel.get("id")
            if not (isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= PANEL_ID_TOP):
                yield Finding("GF013", "warning", panel_place(dashboard, panel),
                              f"id {number!r} is no whole number from 1 to {PANEL_ID_TOP}: {_ID_TIED}; give it "
                              f"another, or none (gpudash then gives it one from its title)")
            elif number in held:
                yield Finding("GF013", "warning", panel_place(dashboard, panel),
                              f"id {number} is also that of panel {held[number]!r}: {_ID_TIED}; give each an id of "
                              f"its own, or none (gpudash then gives it one from its title)")
            else:
                held[number] = str(panel.get("title", "?"))


RULES = (
    Rule("GF001", "every PromQL expression parses (Grafana macros substituted)", promql_parses),
    Rule("GF002", "every metric a query names is in the counters CSV or recorded by the build's rules", metrics_known),
    Rule("GF003", "every panel has a unit", units),
    Rule("GF004", "every panel has a description", descriptions),
    Rule("GF005", "queries use the ${datasource} variable", datasource_variable),
    Rule("GF006", "a counter a panel shows is read through rate(), irate() or increase() (or a sum of idelta() steps "
                  "floored at 0) of one GPU's readings, never charted raw", counters_rated),
    Rule("GF007", "rate windows use $__rate_interval", rate_interval),
    Rule("GF008", "dashboard uids are unique and at most 40 characters", uids),
    Rule("GF009", "panels do not overlap", overlaps),
    Rule("GF010", "dashboards and panels validate against Grafana's JSON schema", schema),
    Rule("GF011", "dashboards fit a ConfigMap applied with kubectl apply", configmap_size),
    Rule("GF012", "per-pod queries show the namespace and the pod in their legend", pod_legends),
    Rule("GF013", "every panel and row has an id of its own in its dashboard, a whole number Grafana keeps", panel_ids),
)

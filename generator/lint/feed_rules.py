"""Consistency rules: what the dashboards query must be what the agent and scrape job deliver."""

from __future__ import annotations

import json
import re
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Collection, Iterable

from ..agent_timing import CACHE_TTL, timing_problem
from ..cloudwatch_query import UNUSED_SHARE, gpu_dimensions, is_query, level_of, mig_only_set
from ..catalog import MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL, WHOLE_GPU_INSTANCE
from ..markers import CLUSTER_DIMENSION
from ..exporter_styles import EXPORTER_LABELS, METRICS_PATH, named_daemonsets, style_for
from ..go_template import problem as template_problem
from ..data_missing import (CAPACITY as KSM_CAPACITY, DAEMONSET_LABEL as KSM_DAEMONSET_LABEL,
                            DAEMONSET_NAMESPACE as KSM_NAMESPACE_LABEL, KSM_METRICS, NODE_METRICS as KSM_NODE_METRICS)
from ..names import KUBE_STATE_METRICS_JOB as KSM_JOB
from ..promql import (FIELD_LABEL_KEYS, FIELD_MARK, FRESH_LABEL, GPU_LABEL, ONE_LABEL, PICKED_LABEL, POD_GPU_LABEL,
                      SUM_LABEL, UUID_KEY, gpu_identity, uuid_spellings)
from ..promql_text import pod_label_meta
from ..reading import read_json_schema
from ..output import (ADDITIONAL_SCRAPE_FILE, ALARMS_FILE, KUBECTL_APPLY, PROMETHEUS_RULE_FILE, RULES_FILE,
                      SERVICE_MONITOR_FILE, agent_file, cloudwatch_dashboard_file)
from ..render.agent import AGENT_KEY
from ..render.agent_otel import MIN_AGENT_VERSION, OTEL_KEY, RECEIVER, MadePoint
from ..render.scrape import written_labels
from ..series_labels import (EVERY_GPU, MAX_DIMENSIONS, STATIC_VALUES, TARGET_ADDRESS, TARGET_LABELS, WORKLOAD,
                             exporter_labels)
from ..settings import Cluster, dimensions_lacking, duration_seconds, mig_of, workload_rename_mix
from . import Finding, Rule, schema_message
from .subject import LintInput
from .metrics_insights import QueryError, parse as parse_query
from ..go_regex import newer_syntax, regex_problem
from ..go_regex_python import go_compiled, go_readable, unreadable
from .relabel_shape import kind_said, shape_problem, well_formed
from .label_matchers import PLACEHOLDER, judged, matchers as label_matchers
from .grafana_rules import panel_place, queries
from .promql_checks import check_parses, newer_regex_syntax, query_selectors

KSM_SERIES_LABELS = (KSM_NAMESPACE_LABEL, KSM_DAEMONSET_LABEL)  # kube-state-metrics' labels of a DaemonSet's series


def _scrape_jobs(subject: LintInput, cluster: Cluster) -> set[str]:
    """Names of the jobs the agent scrapes (_running_jobs)."""
    return {job.get("job_name") for job in _running_jobs(subject, cluster)}


def _running_jobs(subject: LintInput, cluster: Cluster) -> list[dict[str, Any]]:
    """The cluster's agent scrape jobs as the agent runs them: on the OTel pipeline its receiver's (the strings read as
    the collector reads them; the collector reads no prometheus.yaml), on the JSON path prometheus.yaml's; none with
    the add-on. Worked out once per cluster (the rules ask for every query of the cluster's): not to be changed."""
    key = ("running jobs", cluster.name)
    if key not in subject.held:
        subject.held[key] = _jobs_run(subject, cluster)
    return subject.held[key]


def _jobs_run(subject: LintInput, cluster: Cluster) -> list[dict[str, Any]]:
    agent = subject.agent(cluster)
    if agent is None:
        return []
    return [j for j in _running_config(agent).get("scrape_configs") or [] if isinstance(j, dict)]


def _running_config(agent) -> dict[str, Any]:
    """The scrape configuration the agent runs: its receiver's on the OTel pipeline, else prometheus.yaml."""
    from ..render.agent_otel import RECEIVER

    if agent.otel is None:
        return agent.scrape
    return _as_run((((agent.otel.get("receivers") or {}).get(RECEIVER) or {}).get("config") or {}))


def _as_run(value: Any) -> Any:
    """A part of the collector configuration with its strings as the collector reads them (render/agent_otel's
    `unescaped`)."""
    from ..render.agent_otel import unescaped

    if isinstance(value, str):
        return unescaped(value)
    if isinstance(value, list):
        return [_as_run(v) for v in value]
    return {k: _as_run(v) for k, v in value.items()} if isinstance(value, dict) else value


def _prometheus(subject: LintInput, cluster: Cluster) -> dict[str, Any]:
    """What the cluster's agent publishes (cluster_name, emf_processor), whichever pipeline does it."""
    return subject.agent(cluster).publishing()


def _every_job(subject: LintInput, cluster: Cluster) -> bool:
    """True when the agent runs gpudash's OTel pipeline: its declarations apply to every job it scrapes
    (awsemf without label matchers); the JSON path drops a declaration without source_labels."""
    return subject.agent(cluster).otel is not None


def _declarations(subject: LintInput, cluster: Cluster) -> list[dict[str, Any]]:
    return _prometheus(subject, cluster).get("emf_processor", {}).get("metric_declaration", [])


def declarations_complete(subject: LintInput) -> Iterable[Finding]:
    for cluster in subject.clusters():
        keys = ("metric_selectors", "dimensions") if _every_job(subject, cluster) else \
            ("source_labels", "metric_selectors", "dimensions")
        for index, declaration in enumerate(_declarations(subject, cluster)):
            for key in keys:
                if not declaration.get(key):
                    yield Finding("AG003", "error", f"{agent_file(cluster.name)} metric_declaration[{index}]",
                                  f"no {key}: the agent silently drops this declaration")
            # the agent's translator makes source_labels and label_matcher one awsemf label matcher, of an empty regex
            # where label_matcher is written empty (left out: no matcher, every point)
            if declaration.get("source_labels") and "label_matcher" in declaration and \
                    not declaration["label_matcher"]:
                yield Finding("AG003", "error", f"{agent_file(cluster.name)} metric_declaration[{index}]",
                              "label_matcher is empty: an agent publishing through awsemf drops the declaration "
                              "(\"regex not specified for label matcher\", \"Dropped metric declaration.\" in its "
                              "log), and nothing of it is published; leave label_matcher out to take every point")
        agent = subject.agent(cluster)
        for index, declaration in enumerate(_otel_declarations(agent.otel) if agent and agent.otel else []):
            for k, matcher in enumerate(declaration.get("label_matchers") or []):
                lacking = [key for key in ("label_names", "regex") if not (matcher or {}).get(key)]
                if lacking:
                    yield Finding("AG003", "error", f"{agent_file(cluster.name)} {OTEL_KEY} metric_declarations"
                                  f"[{index}]", f"label_matchers[{k}] has no {' nor '.join(lacking)}: awsemf drops "
                                  f"the declaration (\"Dropped metric declaration.\" in the agent's log)")


def blanks_filtered(subject: LintInput) -> Iterable[Finding]:
    """The OTel pipeline drops DCGM's blank values of every DCGM field it publishes, at the field's floor (and the 0 of
    a field whose 0 DCGM writes for "not supported")."""
    from ..render.agent_otel import (FILTER, MARKERS, UNUSED_PREFIX, ZERO_UNREAD_TEST, _level_fields, _merged_names,
                                     _unused_fields, blank_conditions, level_blank_conditions,
                                     merged_blank_conditions, scrape_series, total_blank_conditions)

    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        if agent is None or agent.otel is None:
            continue
        selectors = [go_readable(p) for d in _declarations(subject, cluster) for p in d.get("metric_selectors") or []]
        selectors = [p for p in selectors if p is not None]  # (PR005 says which Go refuses)
        published = [m.name for m in subject.catalog if any(p.search(m.name) for p in selectors)]
        filtered = ((agent.otel.get("processors") or {}).get(FILTER) or {}).get("metrics", {}).get("datapoint") or []
        # (a node's total of a field whose copies the agent merges is made after the filter: no condition)
        totals = total_blank_conditions(subject.catalog, _otel_declarations(agent.otel),
                                        _merged_names(subject.catalog, subject.settings, published))
        own = scrape_series(_otel_declarations(agent.otel))  # scrapes without data kept where a declaration publishes them
        unused = blank_conditions(subject.catalog, _unused_fields(subject.catalog, _otel_declarations(agent.otel)),
                                  prefix=UNUSED_PREFIX)  # the copies an alarm's unused share is made of
        # the copies an alarm's flags past a level are made of
        levels = level_blank_conditions(subject.catalog,
                                        _level_fields(subject.catalog, _otel_declarations(agent.otel)))
        # a GPU's merged reading of a field split per process (exporter.virtual_gpus), made before the filter
        merged = merged_blank_conditions(subject.catalog, subject.settings, published)
        # processors defined that the pipeline does not run: named once (_pipeline_runs), not for what they hold
        unrun = sorted(set(subject.artifacts.agent(cluster.name).otel.get("processors") or {})
                       - set(agent.otel.get("processors") or {}))
        for condition in [*blank_conditions(subject.catalog, published), *totals, *unused, *levels, *merged, own]:
            if condition not in filtered and FILTER not in unrun:
                yield Finding("AG005", "error", f"{agent_file(cluster.name)} {OTEL_KEY} {FILTER}",
                              f"the filter lacks `{condition}`: "
                              + ("the agent would publish up / scrape_* series" if condition == own else
                                 "a pod's total holding a blank would be published" if condition in totals else
                                 "a GPU whose own series reads DCGM's blank would publish the blank as its reading"
                                 if condition in merged else
                                 "the unused share of a blank (100 less it) would reach the idle alarm"
                                 if condition in unused else
                                 "a blank's flag would pass the level an alarm judges every reading by"
                                 if condition in levels else
                                 "the 0 DCGM writes for these fields where a GPU cannot read them would reach "
                                 "CloudWatch as a reading" if condition.endswith(ZERO_UNREAD_TEST) else
                                 "DCGM's blank values of these fields would reach CloudWatch"))
        written = _written(subject, agent.otel, published)
        if FILTER not in unrun:
            for condition in filtered:
                if condition not in written[FILTER]["metrics"]["datapoint"]:
                    yield Finding("AG005", "error", f"{agent_file(cluster.name)} {OTEL_KEY} {FILTER}",
                                  f"the filter holds `{condition}`, which gpudash does not write: a datapoint it "
                                  "matches is dropped before it is published, so the widgets and alarms reading "
                                  "its field would miss those readings (gpudash's own conditions drop only what is no "
                                  "reading): remove it, or run `gpudash generate` and apply its agent configuration")
        yield from _states_made_gauges(subject, agent.otel, cluster, published, unrun, written)
        yield from _processors_written(agent.otel, cluster, unrun, written)
        if MARKERS not in unrun:
            yield from _markers_dropped(agent.otel, cluster)
        yield from _no_data_flag(agent.otel, cluster)
        yield from _processor_order(agent.otel, cluster)
        yield from _pipeline_runs(subject.artifacts.agent(cluster.name), agent, cluster, unrun)


def _written(subject: LintInput, otel: dict[str, Any], published: list[str]) -> dict[str, Any]:
    """The processors gpudash writes for the declarations of `otel` and the fields `published` (render/agent_otel.
    processors), worked out once for the clusters that publish alike (a fleet's agents mostly do)."""
    from ..render.agent_otel import processors

    declarations = _otel_declarations(otel)
    key = ("processors written", json.dumps(declarations, sort_keys=True, default=str), tuple(published))
    if key not in subject.held:
        subject.held[key] = processors(subject.catalog, subject.settings, declarations, published)
    return subject.held[key]


def _states_made_gauges(subject: LintInput, otel: dict[str, Any], cluster: Cluster, published: list[str],
                        unrun: list[str], written: dict[str, Any]) -> Iterable[Finding]:
    """The fields the exporter serves as the other of gauge and counter than their meaning (catalog.Metric.retyped:
    DCGM's health status typed counter, its energy counter typed gauge) are given their meaning's type first, as
    gpudash writes it (render/agent_otel.retyped): otherwise awsemf publishes the differences between a state's
    readings (a GPU failing all along reads 0), and a running total whole."""
    from ..render.agent_otel import PIPELINE, RETYPE

    if RETYPE in unrun:  # (_pipeline_runs names it)
        return
    if written.get(RETYPE) != (otel.get("processors") or {}).get(RETYPE):
        names = [n for n in published if n in subject.catalog and subject.catalog.get(n).retyped]
        yield Finding("AG005", "error", f"{agent_file(cluster.name)} {OTEL_KEY} {RETYPE}",
                      (f"the pipeline does not give {', '.join(names)} the type of their meaning as gpudash writes "
                       "it (a state or a count over the exporter's window served as a counter, a running total served "
                       "as a gauge): awsemf would publish the differences between a state's readings, so a GPU failing "
                       "all along reads 0, and a running total whole where its growth is read; write the processor as "
                       f"`gpudash generate` does and list it first in {PIPELINE}'s processors") if names else
                      f"{RETYPE} is not one gpudash writes: it changes the type of fields the widgets and alarms "
                      "read; remove it")


def _processors_written(otel: dict[str, Any], cluster: Cluster, unrun: list[str],
                        written: dict[str, Any]) -> Iterable[Finding]:
    """The processors that make what the widgets and alarms read from the scrapes (the pods' totals, a GPU's reading
    once, a node's totals, the merged counters, the unused shares, the flags past a level) are as gpudash writes them
    for the sets awsemf publishes (render/agent_otel.processors), and the pipeline runs no other: one edited by hand
    (a `max` made `sum`, a level changed, a statement emptied) publishes other values under the same names. The blank
    filters, the gauges, the no-data flag and the batch are judged on their own (above; AG006)."""
    from ..render.agent_otel import BATCH, FILTER, MARKERS, PIPELINE, RETYPE, TRANSFORM

    running = otel.get("processors") or {}
    where = f"{agent_file(cluster.name)} {OTEL_KEY}"
    for name in sorted((set(written) | set(running)) - {BATCH, FILTER, MARKERS, RETYPE, TRANSFORM} - set(unrun)):
        if name not in written:
            yield Finding("AG005", "error", f"{where} {name}",
                          f"{name} is not a processor gpudash writes: it changes what the pipeline publishes under "
                          f"the names the widgets and alarms read; remove it from {PIPELINE}'s processors")
        elif running.get(name) != written[name]:
            yield Finding("AG005", "error", f"{where} {name}",
                          f"{name} is {'missing' if name not in running else 'not as gpudash writes it'} for the "
                          "fields and dimension sets this agent publishes: the values it makes (pods' totals, a GPU's "
                          "reading once, merged counters, unused shares, flags past a level) would be others under "
                          "the same names; write it as `gpudash generate` does")


def _pipeline_runs(defined, running, cluster: Cluster, unrun: list[str]) -> Iterable[Finding]:
    """The collector runs the processors its metrics pipeline names and exports through the exporters it names
    (LintInput.agent reads the configuration so): a processor the configuration defines that the pipeline carrying
    the scrapes to awsemf leaves out (`unrun`) does nothing, and without such a pipeline nothing is published."""
    from ..render.agent_otel import EXPORTER, PIPELINE, RECEIVER

    where = f"{agent_file(cluster.name)} {OTEL_KEY} service.pipelines"
    if unrun:
        yield Finding("AG005", "error", where,
                      f"{', '.join(unrun)} {'is' if len(unrun) == 1 else 'are'} defined but no metrics pipeline from "
                      f"{RECEIVER} to {EXPORTER} names {'it' if len(unrun) == 1 else 'them'}: the collector does "
                      f"not run {'it' if len(unrun) == 1 else 'them'} (list {'it' if len(unrun) == 1 else 'them'} "
                      f"in {PIPELINE}'s processors, in the order gpudash writes)")
    emf = (running.otel.get("exporters") or {}).get(EXPORTER) or {}
    if (defined.otel.get("exporters") or {}).get(EXPORTER, {}).get("metric_declarations") and \
            not emf.get("metric_declarations"):
        yield Finding("AG005", "error", where, f"no metrics pipeline carries {RECEIVER}'s scrapes to {EXPORTER}: the "
                      f"agent publishes nothing")


def _markers_dropped(otel: dict[str, Any], cluster: Cluster) -> Iterable[Finding]:
    """The exporter's staleness markers are dropped by a filter of their own before the agent merges points
    (render/agent_otel STALE_MARKER): a merge takes a marker first or not at random (Go's map order), and one taken
    first makes the merge a marker, which awsemf drops."""
    from ..render.agent_otel import MARKERS, STALE_MARKER

    dropped = ((otel.get("processors") or {}).get(MARKERS) or {}).get("metrics", {}).get("datapoint") or []
    if STALE_MARKER not in dropped:
        yield Finding("AG005", "error", f"{agent_file(cluster.name)} {OTEL_KEY} {MARKERS}",
                      f"the marker filter lacks `{STALE_MARKER}`: a merge (a pod's total over its GPUs; with "
                      "exporter.virtual_gpus the pick of a GPU's reading) would take a staleness marker first at "
                      "random and be published or not by chance")


def _no_data_flag(otel: dict[str, Any], cluster: Cluster) -> Iterable[Finding]:
    """Where a declaration publishes each scrape's kept sample count, the pipeline makes it the flag the per-node
    alarm sums (1: no DCGM sample); the count itself would sum to hundreds per window and fire on a healthy node."""
    from ..render.agent_otel import PIPELINE, TRANSFORM, no_data_flag, samples_published

    if not samples_published(_otel_declarations(otel)):
        return
    pipeline = ((otel.get("service") or {}).get("pipelines") or {}).get(PIPELINE)
    order = (pipeline.get("processors") or []) if isinstance(pipeline, dict) else []
    if TRANSFORM not in order or (otel.get("processors") or {}).get(TRANSFORM) != no_data_flag():
        yield Finding("AG005", "error", f"{agent_file(cluster.name)} {OTEL_KEY} {TRANSFORM}",
                      "the pipeline publishes scrape_samples_post_metric_relabeling without making it a flag of no GPU "
                      "data (1: no DCGM sample, 0: some): the data-missing alarm per node would sum sample counts")


def _otel_declarations(otel: dict[str, Any]) -> list[dict[str, Any]]:
    from ..render.agent_otel import EXPORTER

    exporter = (otel.get("exporters") or {}).get(EXPORTER)
    return (exporter.get("metric_declarations") or []) if isinstance(exporter, dict) else []


def _processor_order(otel: dict[str, Any], cluster: Cluster) -> Iterable[Finding]:
    """The pods' totals are made before the blank filter (after it, a sum holds only the GPUs that read a value
    and is published as the pod's whole), the shared counters merged after it (their `max` would take a blank), and
    the unused shares and the flags past a level computed after it (a blank's would pass it); the staleness markers of
    the fields split per process dropped before the pods' totals processor, where a GPU's reading is picked from its
    device series and copies (a marker first would make the pick a marker); each node's GPUs unread made in three
    steps, in order: each GPU read once (metricstransform/gpudash), its index plus one and -1 (transform/gpudash-gpus),
    their sum per node (metricstransform/gpudash-gpus)."""
    from ..render.agent_otel import (FILTER, LEVELS, MARKERS, MERGE, PIPELINE, TOTALS, UNREAD_MERGE, UNREAD_TRANSFORM,
                                     UNUSED)

    pipeline = ((otel.get("service") or {}).get("pipelines") or {}).get(PIPELINE)
    order = (pipeline.get("processors") or []) if isinstance(pipeline, dict) else []
    if FILTER not in order:
        return
    where = f"{agent_file(cluster.name)} {OTEL_KEY} {PIPELINE}"
    if TOTALS in order and order.index(TOTALS) > order.index(FILTER):
        yield Finding("AG005", "error", where, f"{TOTALS} runs after {FILTER}: at a scrape where one of a pod's "
                      "GPUs reads DCGM's blank, the pod's total would hold only its other GPUs")
    if MARKERS in order and TOTALS in order and order.index(MARKERS) > order.index(TOTALS):
        yield Finding("AG005", "error", where, f"{MARKERS} runs after {TOTALS}: a GPU whose series without a pod ends "
                      "as a pod's copy begins (a staleness marker first) would lose that scrape's reading")
    if MERGE in order and order.index(MERGE) < order.index(FILTER):
        yield Finding("AG005", "error", where, f"{MERGE} runs before {FILTER}: the merge of a shared GPU's "
                      "counters (max) would take DCGM's blank values")
    if UNUSED in order and order.index(UNUSED) < order.index(FILTER):
        yield Finding("AG005", "error", where, f"{UNUSED} runs before {FILTER}: the unused share of DCGM's blank "
                      "(100 less it) is below every blank floor, and the idle alarm would read it")
    if LEVELS in order and order.index(LEVELS) < order.index(FILTER):
        yield Finding("AG005", "error", where, f"{LEVELS} runs before {FILTER}: DCGM's blank would be flagged past the "
                      "level (1, below every blank floor), and the alarm would read it as a reading past it")
    unread = [name for name in (MERGE, UNREAD_TRANSFORM, UNREAD_MERGE) if name in order]
    if UNREAD_TRANSFORM in unread and unread != sorted(unread, key=order.index):
        yield Finding("AG005", "error", where, f"{MERGE}, {UNREAD_TRANSFORM} and {UNREAD_MERGE} run in another order "
                      "than this: each node's GPUs unread would be made of its GPUs' readings, not of their indexes "
                      "and count, and the GPU stopped reporting alarm would fire for every node")


def _passes_every_point(declaration: dict[str, Any], dims: Iterable[str], job: str | None, marks: Collection[str],
                        cluster: str = "x", always: Iterable[str] = ()) -> bool:
    """Whether the declaration's label matchers pass every point of a set without a mark (a scraped series, not one
    the agent makes): carrying each of the set's names and each label of `always` at every value of the shapes real
    series carry (label_matchers.judged), the cluster's name as ClusterName (every point's) and its job's name as
    `job` (None: the OTel pipeline, whose receiver puts the job into the resource, not on the point: a matcher reads it
    as empty), none of the marks the agent's transforms add, and any other label the matchers name either missing
    (read as empty) or at each real value (a GPU no pod holds has no `pod`)."""
    fixed = {CLUSTER_DIMENSION: cluster, "job": job or ""} | {mark: "" for mark in marks if mark not in dims}
    return judged({"label_matchers": label_matchers(declaration)}, fixed, [*dims, *always], others_set=True)[0]


def _carried_by_every_point(selectors: list[str]) -> tuple[str, ...]:
    """The labels every point of the metrics `selectors` select carries: those every exporter writes on each series
    (EVERY_GPU) where each selector plainly selects DCGM fields alone (it begins `^DCGM_`, as gpudash writes them);
    none where one may also select the scrape's own series (up, scrape_*) or kube-state-metrics' counts."""
    return EVERY_GPU if selectors and all(s.startswith("^DCGM_") for s in selectors) else ()


def _published(declarations: list[dict[str, Any]], job: str, every_job: bool = False, marks: Collection[str] = (),
               matched: bool = True, cluster: str = "x") -> list[tuple[list[re.Pattern[str]], frozenset[str]]]:
    """(metric selectors, dimension set) of every declaration that publishes the set for every point of the job that
    carries its names (_passes_every_point; a set marked by the agent's transforms, one of `marks`, is published
    from the points made under the mark: _copies_published and _made_published judge those; not `matched`: whatever
    its label matchers pass; `cluster`: the name every point carries as ClusterName). With `every_job` (the OTel
    pipeline) a declaration without source_labels applies to every job; the JSON path drops one."""
    result = []
    for declaration in declarations:
        sources = declaration.get("source_labels") or []
        if not (sources or every_job) or not declaration.get("metric_selectors"):
            continue
        try:
            patterns = [go_compiled(p) for p in declaration["metric_selectors"]]
        except re.error:
            continue
        for dims in declaration.get("dimensions") or []:
            if len(dims) > MAX_DIMENSIONS:  # the agent drops a larger set (AG002 says so)
                continue
            if not matched or set(dims) & set(marks) or \
                    _passes_every_point(declaration, dims, None if every_job else job, marks, cluster,
                                        _carried_by_every_point(declaration["metric_selectors"])):
                result.append((patterns, frozenset(dims)))
    return result


def _metric_line(line) -> bool:
    """A widget's metric line spelled whole (not an expression, not "..." repeating the line before)."""
    return (isinstance(line, list) and len(line) >= 3 and isinstance(line[-1], dict) and "expression" not in line[-1]
            and len(line) % 2 == 1 and all(isinstance(v, str) for v in line[:-1]) and line[0] != "...")


def _queried(subject: LintInput) -> Iterable[tuple[str, str, str, frozenset[str], tuple[Cluster, ...]]]:
    """(where, expression's metric, namespace, dimension set, the clusters it reads) of every CloudWatch query: the
    cluster its ClusterName names, else (a fleet-scope alarm) every cluster of the Region it reads in but those its
    WHERE leaves out and, over a set of MIG instances alone, those saying exporter.mig: none, which publish nothing in
    it (mig_only_set) (a cluster elsewhere publishes into another Region: _regions_published), every cluster where
    that Region is unknown."""
    clusters = subject.clusters()
    by_name = {c.name: c for c in clusters}

    def reading(cluster_name: Any, region: Any, apart: Iterable[str] = (),
                dims: Iterable[str] = ()) -> tuple[Cluster, ...]:
        if cluster_name in by_name:
            return (by_name[cluster_name],)
        in_region = tuple(c for c in clusters if c.region == region)
        mig_only = mig_only_set(dims)
        return tuple(c for c in in_region or clusters if c.name not in apart
                     and not (mig_only and mig_of(subject.settings, c) == "none"))

    for where, line, region in _widget_lines(subject):
        if _metric_line(line):  # [namespace, metric, name, value, ..., {options}]: a metric it reads
            pairs = dict(zip(line[2:-1:2], line[3:-1:2]))
            yield where, line[1], line[0], frozenset(pairs), reading(pairs.get(CLUSTER_DIMENSION), region)
    alarms = subject.artifacts.alarms
    for item in alarms:
        for metric in item.request.get("Metrics", []):
            where = f"{ALARMS_FILE} {item.request['AlarmName']}"
            if "MetricStat" in metric:  # a metric of a metric-math alarm
                stat = metric["MetricStat"]["Metric"]
                cluster = next((d["Value"] for d in stat.get("Dimensions", []) if d["Name"] == CLUSTER_DIMENSION), None)
                yield (where, stat["MetricName"], stat["Namespace"],
                       frozenset(d["Name"] for d in stat.get("Dimensions", [])), reading(cluster, item.region))
        if "MetricName" in item.request:
            request = item.request
            cluster = next((d["Value"] for d in request["Dimensions"] if d["Name"] == CLUSTER_DIMENSION), None)
            yield (f"{ALARMS_FILE} {request['AlarmName']}", request["MetricName"], request["Namespace"],
                   frozenset(d["Name"] for d in request["Dimensions"]), reading(cluster, item.region))
    for where, query, region in _parsed(_expressions(subject)):
        cluster = next((v for d, op, v in query.where if d == CLUSTER_DIMENSION and op == "="), None)
        apart = {v for d, op, v in query.where if d == CLUSTER_DIMENSION and op == "!="}
        yield (where, query.metric, query.namespace, frozenset(query.schema or ()),
               reading(cluster, region, apart, query.schema or ()))


def _widget_lines(subject: LintInput) -> Iterable[tuple[str, Any, Any]]:
    """(where, metric line, the Region it reads in: the widget's, else its dashboard's) of every CloudWatch dashboard
    widget."""
    for dashboard in subject.artifacts.cloudwatch_dashboards:
        widgets = dashboard.body.get("widgets", [])
        for widget in widgets if isinstance(widgets, list) else []:
            if not isinstance(widget, dict) or not isinstance(widget.get("properties"), dict):
                continue
            region = widget["properties"].get("region") or dashboard.region
            for line in widget.get("properties", {}).get("metrics", []):
                yield f"{cloudwatch_dashboard_file(dashboard.name)} {widget['properties'].get('title')!r}", line, region


def _expressions(subject: LintInput) -> list[tuple[str, str, Any]]:
    """(where, Metrics Insights expression, the Region it reads in) of every CloudWatch widget and alarm."""
    result = [(where, line[-1]["expression"], region) for where, line, region in _widget_lines(subject)
              if line and isinstance(line[-1], dict) and is_query(str(line[-1].get("expression", "")))]
    return result + [(f"{ALARMS_FILE} {item.request['AlarmName']}", metric["Expression"], item.region)
                     for item in subject.artifacts.alarms for metric in item.request.get("Metrics", [])
                     if "MetricStat" not in metric and is_query(str(metric.get("Expression", "")))]


def _parsed(queries: list[tuple[str, str, Any]]) -> Iterable[tuple[str, Any, Any]]:
    """(where, parsed query, Region) of each (where, Metrics Insights expression, Region) that parses (CW012 reports
    the others)."""
    for where, expression, region in queries:
        try:
            yield where, parse_query(expression), region
        except QueryError:
            continue


def _node_kinds_read(subject: LintInput) -> Iterable[Finding]:
    """On the OTel pipeline, the kinds of a node's per scrape (NODE_MEAN: its total, its count of GPUs read) the agent
    makes and publishes of each field are those the widgets and alarms read, both ways: a kind published that no query
    reads (one custom metric per GPU node billed for nothing) is named, and one read that is not published reads
    nothing (AG001 compares dimension names, and both kinds share one set)."""
    from ..cloudwatch_query import NODE_MEAN, NODE_MEAN_KINDS
    from ..render.agent_otel import EXPORTER, MERGE, node_mean_fields, node_means_made

    read: dict[tuple[str, str], set[str | None]] = {}  # (field, mark's value) -> the clusters reading it (None: all)
    for where, query, _ in _parsed(_expressions(subject)):
        if NODE_MEAN not in (query.schema or ()):
            continue
        cluster = next((v for d, op, v in query.where if d == CLUSTER_DIMENSION and op == "="), None)
        kinds = {v for d, op, v in query.where if d == NODE_MEAN and op == "="} or set(NODE_MEAN_KINDS.values())
        for kind in kinds:
            read.setdefault((query.metric, kind), set()).add(cluster)
    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        if agent is None or agent.otel is None:
            continue
        made = node_means_made(((agent.otel.get("processors") or {}).get(MERGE) or {}).get("transforms") or [])
        declarations = ((agent.otel.get("exporters") or {}).get(EXPORTER) or {}).get("metric_declarations") or []

        def taken(declaration: dict[str, Any], dims: list[str], value: str, name: str = cluster.name) -> bool:
            """A kind is published where the matchers pass some of its points (the set's names at real values)."""
            return judged(_awsemf(declaration), {CLUSTER_DIMENSION: name, NODE_MEAN: value}, dims)[1]
        published = {(name, NODE_MEAN_KINDS[kind]) for kind, names in
                     node_mean_fields(subject.catalog, declarations, taken).items() for name in names} & made
        where = f"{agent_file(cluster.name)} {OTEL_KEY} {EXPORTER}"
        for name, kind in sorted(published):
            if not read.get((name, kind), set()) & {None, cluster.name}:
                yield Finding("AG001", "warning", where,
                              f"{name} [{NODE_MEAN}={kind}] (a node's {kind} per scrape) is published per GPU node but "
                              f"no CloudWatch widget or alarm reads it: one custom metric per GPU node billed for "
                              f"nothing")
        for name, kind in sorted(key for key, clusters in read.items() if clusters & {None, cluster.name}):
            if (name, kind) not in published:
                yield Finding("AG001", "error", where,
                              f"{name} [{NODE_MEAN}={kind}] is read by a CloudWatch widget or alarm but the agent "
                              f"of {cluster.name} does not make and publish it: the value reads nothing")


def used_metrics_selected(subject: LintInput) -> Iterable[Finding]:
    """Every (metric, dimension set) a CloudWatch widget or alarm queries is published by that cluster's agent."""
    settings = subject.settings
    jobs = (settings.scrape.job_name, KSM_JOB)
    published = {c.name: {job: _published(_declarations(subject, c), job, _every_job(subject, c),
                                          _labels_added(subject, c), cluster=c.name) for job in jobs}
                 for c in subject.clusters()}
    queried = list(_queried(subject))
    if settings.agent.metric_selection == "used":  # and nothing more: every published pair costs a metric each
        # what the cluster's own widgets and alarms read (a query naming no cluster: its Region's clusters'); another
        # cluster's reads none of its metrics (a cluster without MIG declaring the MIG alarms' sets was unsaid)
        wanted: dict[str, set[tuple[str, frozenset[str]]]] = {}
        for _, metric, _, dims, reads in queried:
            for each in reads:
                wanted.setdefault(each.name, set()).add((metric, dims))
        for cluster in subject.clusters():
            read = wanted.get(cluster.name, set())
            extra = sorted({(m.name, ", ".join(sorted(d))) for patterns, d in published[cluster.name][jobs[0]]
                            for m in subject.catalog if any(p.search(m.name) for p in patterns)
                            and (m.name, d) not in read})
            for metric, dims in extra:
                yield Finding("AG001", "warning", agent_file(cluster.name),
                              f"{metric} is published with dimensions [{dims}] but no CloudWatch widget or alarm "
                              f"queries it (metric_selection: used)")
    for where, metric, namespace, dims, clusters in queried:
        for cluster in clusters:
            prometheus = _prometheus(subject, cluster)
            namespace_published = prometheus.get("emf_processor", {}).get("metric_namespace")
            if namespace != namespace_published:
                yield Finding("AG001", "error", where,
                              f"reads {namespace}; the agent of {cluster.name} publishes into {namespace_published}")
                continue
            job = KSM_JOB if metric in KSM_METRICS + KSM_NODE_METRICS else jobs[0]
            if job == KSM_JOB and job not in _scrape_jobs(subject, cluster):
                yield Finding("AG001", "error", where,
                              f"{metric} is queried but the agent of {cluster.name} ({agent_file(cluster.name)}) does not "
                              f"scrape kube-state-metrics (no job {KSM_JOB!r})")
                continue
            if not any(d == dims and any(p.search(metric) for p in patterns)
                       for patterns, d in published[cluster.name][job]):
                kind = subject.catalog.get(metric).kind if metric in subject.catalog else "?"
                why = " (the agent drops histograms)" if kind == "histogram" else \
                    " for every point (the label matchers of the declaration naming it pass only some, or none)" \
                    if any(d == dims and any(p.search(metric) for p in patterns) for patterns, d in
                           _published(_declarations(subject, cluster), job, _every_job(subject, cluster),
                                      matched=False)) else ""
                yield Finding("AG001", "error", where,
                              f"{metric} with dimensions [{', '.join(sorted(dims))}] is queried but the agent of "
                              f"{cluster.name} ({agent_file(cluster.name)}) does not publish it{why}")
                continue
            # (a DCGM field: the scrape's own series, scrape_*, are made after metric relabelling)
            exporter = _exporter_job(subject, cluster) if job != KSM_JOB and metric in subject.catalog else None
            if exporter is not None and not _relabel_keeps({"__name__": metric},
                                                           well_formed(exporter.get("metric_relabel_configs"))):
                yield Finding("AG001", "error", where,
                              f"{metric} is queried but the exporter job of {agent_file(cluster.name)} drops it (its "
                              f"metric_relabel_configs, as Prometheus applies them to a whole GPU's sample): it "
                              f"reaches the agent nowhere")
    yield from _daemonsets_kept(subject)
    yield from _instances_reached(subject)
    yield from _regions_published(subject)
    yield from _static_values_published(subject)
    yield from _copies_published(subject)
    yield from _merged_once(subject)
    yield from _made_published(subject)
    yield from _made_points_kept_out(subject)
    yield from _rollup_off(subject)
    yield from _exporter_as_written(subject)
    yield from _node_kinds_read(subject)


def _published_region(subject: LintInput, cluster: Cluster) -> str | None:
    """The Region the cluster's agent publishes into: on agent.pipeline: otel its awsemf exporter's `region`; on the
    JSON path the `agent.region` of cwagentconfig.json where one is written (gpudash writes none: the agent then
    publishes into the Region it runs in, the cluster's, clusters[].region)."""
    from ..render.agent_otel import EXPORTER, unescaped

    agent = subject.agent(cluster)
    if agent is None:
        return None
    if agent.otel is None:
        written = (agent.config.get("agent") or {}).get("region") if isinstance(agent.config.get("agent"), dict) \
            else None
        return written if isinstance(written, str) and written else cluster.region
    region = ((agent.otel.get("exporters") or {}).get(EXPORTER) or {}).get("region")
    return unescaped(region) if isinstance(region, str) else None


def _line_cluster(line: Any) -> str | None:
    """The ClusterName a widget's metric line or Metrics Insights expression reads (None: none named, or no query)."""
    if _metric_line(line):
        pairs = dict(zip(line[2:-1:2], line[3:-1:2]))
        return pairs.get(CLUSTER_DIMENSION)
    expression = line[-1].get("expression") if isinstance(line, list) and line and isinstance(line[-1], dict) else None
    if not isinstance(expression, str) or not is_query(expression):
        return None
    try:
        query = parse_query(expression)
    except QueryError:
        return None
    return next((v for d, op, v in query.where if d == CLUSTER_DIMENSION and op == "="), None)


def _regions_published(subject: LintInput) -> Iterable[Finding]:
    """A widget or alarm reading one cluster's metrics reads them in the Region that cluster's agent publishes into
    (CloudWatch metrics are regional: AG001 compares names and dimension sets, not Regions): a widget's `region` (its
    dashboard's where it names none), an alarm's Region."""
    by_name = {c.name: c for c in subject.clusters()}
    for dashboard in subject.artifacts.cloudwatch_dashboards:
        widgets = dashboard.body.get("widgets", [])
        for widget in widgets if isinstance(widgets, list) else []:
            properties = widget.get("properties") if isinstance(widget, dict) else None
            if not isinstance(properties, dict):
                continue
            region = properties.get("region") or dashboard.region
            for line in properties.get("metrics") or []:
                cluster = by_name.get(_line_cluster(line) or "")
                published = _published_region(subject, cluster) if cluster else None
                if published and region != published:
                    yield Finding("AG001", "error", f"{cloudwatch_dashboard_file(dashboard.name)} "
                                  f"{properties.get('title')!r}", f"reads cluster {cluster.name} in {region}; its "
                                  f"agent ({agent_file(cluster.name)}) publishes into {published}: it reads nothing")
                    break
    for item in subject.artifacts.alarms:
        request = item.request
        named = {d["Value"] for d in request.get("Dimensions", []) if d.get("Name") == CLUSTER_DIMENSION}
        named |= {d["Value"] for m in request.get("Metrics", []) if "MetricStat" in m
                  for d in m["MetricStat"]["Metric"].get("Dimensions", []) if d.get("Name") == CLUSTER_DIMENSION}
        named |= {c for m in request.get("Metrics", []) if "Expression" in m
                  for c in [_line_cluster([{"expression": m["Expression"]}])] if c}
        for name in sorted(named):
            cluster = by_name.get(name)
            published = _published_region(subject, cluster) if cluster else None
            if published and item.region != published:
                yield Finding("AG001", "error", f"{ALARMS_FILE} {request['AlarmName']}",
                              f"is made in {item.region} and reads cluster {name}, whose agent "
                              f"({agent_file(name)}) publishes into {published}: it reads nothing")
                break


def _instances_reached(subject: LintInput) -> Iterable[Finding]:
    """A widget or alarm reading a set no point of its field reaches, though a declaration publishes the pair (AG001
    compares dimension names): a set naming GPU_I_PROFILE holds MIG instances only (the exporter writes it on them
    alone), in a cluster that says none is split (exporter.mig: none; cloudwatch_query.NoMigInstances), or where the
    cluster's exporter job drops the field (its metric_relabel_configs, as Prometheus applies them:
    the fields DCGM does not measure on a MIG instance); on agent.pipeline: otel a set naming GPU_I_ID, where every
    label set the collector's merge keeps of the counter leaves it out (a device counter, one series per physical
    GPU: render/agent_otel instance_kept)."""
    from ..render.agent_otel import MERGE, instance_kept

    for where, metric, _, dims, clusters in _queried(subject):
        if MIG_INSTANCE_LABEL not in dims or metric in KSM_METRICS + KSM_NODE_METRICS:
            continue
        if MIG_PROFILE_LABEL in dims:
            # (a query reading the clusters of a Region together reads the instances of those whose GPUs may be split)
            whole = [cluster for cluster in clusters if mig_of(subject.settings, cluster) == "none"]
            if len(whole) == len(clusters):
                names = ", ".join(cluster.name for cluster in whole)
                yield Finding("AG001", "error", where,
                              f"{metric} [{', '.join(sorted(dims))}] names {MIG_PROFILE_LABEL}, which MIG instances "
                              f"alone carry, and {names} {'says' if len(whole) == 1 else 'say'} no GPU is split into "
                              f"MIG instances (exporter.mig: none): it reads nothing (chart it per GPU)")
                continue
            clusters = tuple(cluster for cluster in clusters if cluster not in whole)
        for cluster in clusters:
            agent = subject.agent(cluster)
            job = _exporter_job(subject, cluster) if agent is not None else None
            if job is None:
                continue
            instance = {"__name__": metric, MIG_INSTANCE_LABEL: "1", MIG_PROFILE_LABEL: "1g.10gb"}
            if MIG_PROFILE_LABEL in dims and \
                    not _relabel_keeps(instance, well_formed(job.get("metric_relabel_configs"))):
                yield Finding("AG001", "error", where,
                              f"{metric} [{', '.join(sorted(dims))}] names {MIG_PROFILE_LABEL}, which MIG instances "
                              f"alone carry, and the exporter job of {agent_file(cluster.name)} drops {metric} on a "
                              f"MIG instance: it reads nothing (chart it per GPU)")
                break
            transforms = (((agent.otel or {}).get("processors") or {}).get(MERGE) or {}).get("transforms") or []
            if agent.otel is not None and not instance_kept(transforms, metric):
                yield Finding("AG001", "error", where,
                              f"{metric} [{', '.join(sorted(dims))}] names {MIG_INSTANCE_LABEL}, which the OTel "
                              f"pipeline of {agent_file(cluster.name)} leaves out of {metric} (merged to one series "
                              f"per physical GPU): it reads nothing (chart it per GPU)")
                break


def _made_by_agents(subject: LintInput) -> Iterable[tuple[list[MadePoint], list[dict[str, Any]], str, Cluster]]:
    """(the points the agent's transforms make under a mark: render/agent_otel made_points, its awsemf declarations,
    where, the cluster) of each cluster's OTel pipeline."""
    from ..render.agent_otel import EXPORTER, MERGE, TOTALS, made_points

    names = [m.name for m in subject.catalog]
    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        if agent is None or agent.otel is None:
            continue
        processors = agent.otel.get("processors") or {}
        made = made_points([t for key in (TOTALS, MERGE) for t in (processors.get(key) or {}).get("transforms") or []],
                           names)
        exporter = (agent.otel.get("exporters") or {}).get(EXPORTER) or {}
        yield (made, exporter.get("metric_declarations") or [], f"{agent_file(cluster.name)} {OTEL_KEY} {EXPORTER}",
               cluster)


def _selected(subject: LintInput, declaration: dict[str, Any]) -> list[str]:
    """The catalog's fields a declaration's metric_name_selectors take (none where one does not compile: PR005)."""
    return list(_selection(subject, declaration.get("metric_name_selectors") or []) or ())


def _selection(subject: LintInput, selectors: list[Any]) -> tuple[str, ...] | None:
    """The catalog's fields any of `selectors` finds; None where one does not compile. Worked out once per list of
    selectors (every cluster's agent declares the same)."""
    try:
        key = ("selection", tuple(selectors))
        hash(key)
    except TypeError:  # (a selector that is not a string: searched as before, each time)
        key = None
    if key is not None and key in subject.held:
        return subject.held[key]
    try:
        found: tuple[str, ...] | None = tuple(m.name for m in subject.catalog
                                              if any(go_compiled(p).search(m.name) for p in selectors))
    except re.error:
        found = None
    if key is not None:
        subject.held[key] = found
    return found


def _made_published(subject: LintInput) -> Iterable[Finding]:
    """On the OTel pipeline, a set of points the agent makes from a scrape's series (a GPU's reading once, a namespace's
    use of a GPU, a pod's total) holds only what a transform of the collector makes under the set's mark: a field a
    declaration publishes there that no transform makes is in no such set, and the widgets and alarms reading it read
    nothing (AG001 compares the declarations with the queries, not with what the processors make); nor where the
    declaration's label matchers pass none of the points made there (carrying the set's names at the values real
    series carry, the cluster's name as ClusterName and the mark at a value the transforms give it), and the others
    are missing where they pass only some of a value's."""
    from ..cloudwatch_query import NAMESPACE_GPU, ONCE_PER_GPU, pod_total_mark
    from ..render.agent_otel import MERGE, TOTALS

    for points, declarations, where, cluster in _made_by_agents(subject):
        made: dict[tuple[str, str], set[str]] = {}
        for field, mark, value, _ in points:
            made.setdefault((field, mark), set()).add(value)
        for declaration in declarations:
            published = _selected(subject, declaration)
            for dims in declaration.get("dimensions") or []:
                mark = next((m for m in (ONCE_PER_GPU[0], NAMESPACE_GPU[0]) if m in dims), None) \
                    or (pod_total_mark(dims) or (None,))[0]
                for name in published if mark else []:
                    values = made.get((name, mark), set())
                    if not values:
                        yield Finding("AG001", "error", where,
                                      f"{name} [{', '.join(dims)}] is published under {mark} but no transform of "
                                      f"{TOTALS} or {MERGE} makes it: the widgets and alarms reading it read nothing")
                        continue
                    verdicts = {value: judged(_awsemf(declaration), {CLUSTER_DIMENSION: cluster.name, mark: value},
                                              dims) for value in values}
                    some = sorted(value for value, (every, passed) in verdicts.items() if passed and not every)
                    if not any(passed for _, passed in verdicts.values()):
                        yield Finding("AG001", "error", where,
                                      f"{name} [{', '.join(dims)}]: the declaration's label matchers pass none of "
                                      f"the points the agent makes under {mark} ({', '.join(map(repr, sorted(values)))}"
                                      f"): the widgets and alarms reading it read nothing")
                    elif some:
                        yield Finding("AG001", "error", where,
                                      f"{name} [{', '.join(dims)}]: the declaration's label matchers pass only some "
                                      f"of the points the agent makes under {mark}={', '.join(map(repr, some))} (a "
                                      f"matcher on {', '.join(sorted(set(dims) - {mark}))} drops real values): the "
                                      f"others are missing from the widgets and alarms reading it")


def _made_points_kept_out(subject: LintInput) -> Iterable[Finding]:
    """On the OTel pipeline, a set without a mark takes no point the agent makes under a mark (a GPU's reading once,
    its flag past a level, a pod's total, ...) of a field it publishes: such a point carrying every name of the set
    would be published there beside the scraped readings, and a widget or alarm reading the set would read it as one
    more reading (a GPU's flag of 0 beside its temperature of 61: a mean of 40.7). awsemf reads a missing label as
    empty: the set's label matchers must fail where a mark is set."""
    for points, declarations, where, _ in _made_by_agents(subject):
        marks = {mark for _, mark, _, _ in points}
        for declaration in declarations:
            published = set(_selected(subject, declaration))
            for dims in declaration.get("dimensions") or []:
                if set(dims) & marks:
                    continue
                taken = sorted({(field, mark, value) for field, mark, value, kept in points
                                if field in published and (kept is None or set(dims) <= kept)
                                and judged(_awsemf(declaration), {mark: value}, kept or dims)[1]})
                for field, mark, value in taken:
                    yield Finding("AG001", "error", where,
                                  f"{field} [{', '.join(dims)}] also takes the points the agent makes under "
                                  f"{mark}={value!r} (its label matchers pass them): the widgets and alarms reading "
                                  f"the set read each as one more reading")


def _rollup_off(subject: LintInput) -> Iterable[Finding]:
    """On the OTel pipeline awsemf publishes the declared sets alone only with dimension_rollup_option
    NoDimensionRollup: its default (ZeroAndSingleDimensionRollup) and SingleDimensionRollupOnly append to every matched
    declaration's sets one of no dimension and one per label of the point (metric_translator.go,
    groupedMetricToCWMeasurementsWithFilters), each a custom metric per field and value, [ClusterName] among them
    taking every point the declarations take, the agent's marked copies too."""
    from ..render.agent_otel import EXPORTER, NO_ROLLUP

    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        if agent is None or agent.otel is None:
            continue
        exporter = (agent.otel.get("exporters") or {}).get(EXPORTER) or {}
        option = exporter.get("dimension_rollup_option")
        if option != NO_ROLLUP:
            what = f"dimension_rollup_option is {option!r}" if option is not None else \
                "dimension_rollup_option is left out (awsemf's default rolls up)"
            yield Finding("AG001", "error", f"{agent_file(cluster.name)} {OTEL_KEY} {EXPORTER}",
                          f"{what}: awsemf then publishes every declared field also with no dimension and per single "
                          f"label of its points ([ClusterName], [gpu], [pod], ...), a custom metric each, and "
                          f"[ClusterName] takes every point the declarations take, the agent's marked copies too, "
                          f"which the widgets and alarms reading a field over the cluster read as more readings (set "
                          f"{NO_ROLLUP})")


# awsemf's settings gpudash writes with one value for every cluster (render/agent_otel.cluster_exporter), judged here,
# and what another value does (its other settings are judged by their own findings: namespace, Region, log group,
# declarations, rollup)
_EXPORTER_FIXED = {
    "retain_initial_value_of_delta_metric": "the first reading of each counter series (at every agent start, new pod "
                                            "or exporter restart) is published as an increase of its whole running "
                                            "total, which the counter widgets and alarms read as such",
}


def _exporter_as_written(subject: LintInput) -> Iterable[Finding]:
    """On the OTel pipeline awsemf has the settings gpudash writes (render/agent_otel.cluster_exporter) and no other: a
    key of its own (output_destination: stdout publishes nothing to CloudWatch; a resource_to_telemetry_conversion adds
    every resource label as a dimension) changes what the widgets and alarms read."""
    from ..render.agent_otel import EXPORTER, cluster_exporter

    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        if agent is None or agent.otel is None:
            continue
        exporter = (agent.otel.get("exporters") or {}).get(EXPORTER)
        if not isinstance(exporter, dict):
            continue
        # the keys gpudash writes, and the values it writes alike for every cluster
        written = cluster_exporter({"namespace": "", "metric_declarations": [], "metric_descriptors": []}, cluster,
                                   "", 0)
        where = f"{agent_file(cluster.name)} {OTEL_KEY} {EXPORTER}"
        for key, effect in _EXPORTER_FIXED.items():
            if exporter.get(key, written[key]) != written[key]:
                yield Finding("AG001", "error", where, f"{key} is {exporter[key]!r}, not {written[key]!r}: {effect}")
        for key in sorted(set(exporter) - set(written), key=str):
            yield Finding("AG001", "error", where,
                          f"{key} is not a setting gpudash writes: it changes what awsemf publishes (output_destination "
                          f"other than cloudwatch publishes nothing there); remove it")


def _awsemf(declaration: dict[str, Any]) -> dict[str, Any]:
    """An OTel pipeline declaration's label matchers alone, as awsemf reads them (render/agent_otel.matched_by)."""
    return {"label_matchers": declaration.get("label_matchers")}


def _copies_published(subject: LintInput) -> Iterable[Finding]:
    """On the OTel pipeline, each set of copies the agent makes of a field (an unused share, flags past a level) is
    published from one copy alone, made of every point carrying the set's labels: a copy that also needs a label the
    set does not name (one copy kept for two groupings: a pod's and a node's GPU) misses the points lacking it (a GPU no
    pod holds), and a second copy the set's declaration also takes (a wider grouping's, which carries every label of
    the set) adds each GPU again."""
    from ..render.agent_otel import EXPORTER, GPU_IDENTITY, TOTALS, copy_marks

    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        if agent is None or agent.otel is None:
            continue
        transforms = ((agent.otel.get("processors") or {}).get(TOTALS) or {}).get("transforms") or []
        copies = copy_marks(transforms)  # (field, mark) -> [(kept labels, labels a point must carry)]
        exporter = (agent.otel.get("exporters") or {}).get(EXPORTER) or {}
        where = f"{agent_file(cluster.name)} {OTEL_KEY} {EXPORTER}"
        # the labels every point carries: a copy that needs them misses none
        always = {CLUSTER_DIMENSION, *GPU_IDENTITY, *gpu_dimensions(subject.settings)}
        for declaration in exporter.get("metric_declarations") or []:
            selectors = declaration.get("metric_name_selectors") or []
            names = _selection(subject, selectors)
            if names is None:  # a selector that does not compile (PR005): the others' names
                names = [m.name for m in subject.catalog if any(p is not None and p.search(m.name) for p in
                                                                map(go_readable, selectors))]
            for dims in declaration.get("dimensions") or []:
                mark = next((d for d in dims if d == UNUSED_SHARE[0] or level_of((d,))), None)
                for name in names if mark else []:
                    grouping = set(dims) - {mark}
                    shown = f"{name} [{', '.join(dims)}]"
                    taken = [(kept, needed) for kept, needed in copies.get((name, mark), []) if grouping <= kept
                             and judged(_awsemf(declaration), {mark: PLACEHOLDER}, kept)[1]]
                    if not taken:
                        yield Finding("AG001", "error", where, f"{shown}: no copy the agent makes carries the set's "
                                      f"labels: the alarm reading it reads nothing")
                    for kept, needed in taken:
                        if needed - grouping - always:
                            yield Finding("AG001", "error", where, f"{shown} is made only of points that carry "
                                          f"{', '.join(sorted(needed - grouping - always))}, which the set does not "
                                          f"name: the GPUs and pods lacking them are missing from the alarm that "
                                          f"reads it")
                    # the copy of the fewest labels beyond the set's is its own; any other it takes reads GPUs again
                    own = min(taken, key=lambda made: (len(made[0] - grouping), sorted(made[0])), default=None)
                    for kept, needed in taken:
                        if (kept, needed) != own:
                            yield Finding("AG001", "error", where, f"{shown} also publishes the copy kept for "
                                          f"[{', '.join(sorted(kept))}]: a GPU both copies hold is read twice")


def _merged_once(subject: LintInput) -> Iterable[Finding]:
    """On the OTel pipeline, the copy of a field the agent merges per GPU (render/agent_otel.merged_counters: the pods'
    copies of a counter, one series per GPU for the per-GPU sets) keeps no label of a pod: a merge keeping the pod, its
    namespace or container leaves apart the copies of a GPU pods share (KUBERNETES_VIRTUAL_GPUS: one per pod), each
    then published in the per-GPU sets, which read the GPU's increase once per pod."""
    from ..render.agent_otel import MERGE, MERGED_PREFIX

    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        if agent is None or agent.otel is None:
            continue
        transforms = ((agent.otel.get("processors") or {}).get(MERGE) or {}).get("transforms") or []
        for transform in transforms:
            if transform.get("action") != "insert" or not str(transform.get("new_name", "")).startswith(MERGED_PREFIX):
                continue
            kept = sorted({label for operation in transform.get("operations") or []
                           if operation.get("action") == "aggregate_labels"
                           for label in operation.get("label_set") or [] if label in WORKLOAD})
            if kept:
                yield Finding("AG001", "error", f"{agent_file(cluster.name)} {OTEL_KEY} {MERGE}",
                              f"the per-GPU merge of {transform.get('include')} keeps {', '.join(kept)}: the copies "
                              f"of a GPU pods share stay apart, and the per-GPU sets read its increase once per pod")


def _static_values_published(subject: LintInput) -> Iterable[Finding]:
    """A classic alarm on one pod's series (alarms.per_pod: static) names the value of each dimension; those the
    exporter job sets on every target (STATIC_VALUES: Namespace, Service, job) must be the values the cluster's agent
    gives the pods of every exporter DaemonSet the cluster names (its relabel_configs, as Prometheus applies them, on
    each pod as Kubernetes SD meets it): a pod on a GPU of a DaemonSet published under another value is read by no
    alarm (AG001 compares dimension names only)."""
    by_name = {c.name: c for c in subject.clusters()}
    for item in subject.artifacts.alarms:
        request = item.request
        if "MetricName" not in request:
            continue
        values = {d["Name"]: d["Value"] for d in request.get("Dimensions", [])}
        named = {name: value for name, value in values.items() if name in STATIC_VALUES}
        cluster = by_name.get(values.get(CLUSTER_DIMENSION, ""))
        job = _exporter_job(subject, cluster) if named and cluster and subject.agent(cluster) else None
        if job is None or request.get("MetricName") in KSM_METRICS:
            continue
        for namespace, name, label, pod in _daemonset_pods(subject.settings, cluster):
            target = _relabeled_target(pod, well_formed(job.get("relabel_configs")))
            if target is None:
                continue  # AG007 says its pods are dropped
            target.setdefault("job", job.get("job_name", ""))
            wrong = {k: target.get(k, "") for k, v in named.items() if target.get(k, "") != v}
            if wrong:
                shown = ", ".join(f"{k}={v or '(none)'}" for k, v in wrong.items())
                yield Finding("AG001", "error", f"{ALARMS_FILE} {request['AlarmName']}",
                              f"reads {', '.join(f'{k}={named[k]}' for k in wrong)}; the agent of {cluster.name} "
                              f"({agent_file(cluster.name)}) publishes the pods of the exporter DaemonSet "
                              f"{namespace}/{name} ({label}) with {shown}: the alarm reads nothing for a pod on their "
                              f"GPUs")
                break


def _exporter_job(subject: LintInput, cluster: Cluster) -> dict[str, Any] | None:
    """The exporter job of the cluster's agent, as the agent runs it (_running_jobs)."""
    return next((j for j in _running_jobs(subject, cluster) if j.get("job_name") == subject.settings.scrape.job_name),
                None)


def _daemonset_pods(settings: Any, cluster: Cluster) -> Iterable[tuple[str, str, str, dict[str, str]]]:
    """(namespace, name, label, pod) of an exporter pod of each DaemonSet the cluster names, as Kubernetes SD meets it
    (its namespace, owning DaemonSet, port 9400, one label): the first's labelled as its deployment style's pods are
    (clusters[].exporter.deployment, else exporter.deployment), each other's with each label a style writes."""
    style = style_for(settings, cluster)
    for k, (namespace, name) in enumerate(named_daemonsets(settings, cluster)):
        for key, value in [style.pod_label] if k == 0 else list(EXPORTER_LABELS):
            yield namespace, name, f"{key}={value}", {
                "__meta_kubernetes_namespace": namespace, "__meta_kubernetes_pod_controller_kind": "DaemonSet",
                "__meta_kubernetes_pod_controller_name": name, "__meta_kubernetes_pod_container_port_number": "9400",
                pod_label_meta(key): value}


def _ksm_target_labels(subject: LintInput, cluster: Cluster) -> set[str]:
    """The labels the agent's kube-state-metrics job gives a kube-state-metrics pod (kube_state_metrics.pod_label,
    .port, .namespace) as Kubernetes SD meets it, with the job and instance Prometheus adds; none where the job is not
    run or drops that pod (AG001 says so of what its series feed)."""
    job = next((j for j in _running_jobs(subject, cluster) if j.get("job_name") == KSM_JOB), None)
    if job is None:
        return set()
    ksm = subject.settings.kube_state_metrics
    key, _, value = ksm.pod_label.partition("=")
    meta = {"__address__": f"10.0.0.2:{ksm.port}", "__meta_kubernetes_namespace": ksm.namespace or "monitoring",
            "__meta_kubernetes_pod_name": "kube-state-metrics-x7k2p",
            "__meta_kubernetes_pod_container_port_number": str(ksm.port), pod_label_meta(key): value}
    labels = _relabeled_target(meta, well_formed(job.get("relabel_configs")))
    return set() if labels is None else {k for k in labels if not k.startswith("__")} | {"job", TARGET_ADDRESS}


def _published_labels(subject: LintInput, cluster: Cluster | None = None) -> set[str]:
    """The labels the agent's DCGM series carry after its scrape job: the job's target labels (with `cluster`, those
    its exporter job's relabel_configs give one of its exporter pods: _target_labels; else the labels gpudash's jobs
    give), the exporter's (its workload labels under the names `labels:` says it writes them), then the job's
    metric_relabel_configs in order (a rename adds its target, labeldrop removes)."""
    job = (_exporter_job(subject, cluster) if cluster is not None else None) or subject.scrape_job()
    target = _target_labels(subject, cluster, job) if cluster is not None else None
    labels = set(TARGET_LABELS if target is None else target) | exporter_labels(written_labels(subject.settings)) \
        | {m.name for m in subject.catalog.labels()}
    # The labels that identify a GPU (cluster, each spelling of the node) are grouped on even
    # where a series lacks some of them: a missing one groups as empty, which changes nothing.
    labels.update(label for label in gpu_identity(subject.settings.labels) if target is None or label not in
                  TARGET_LABELS or label in target)
    # So are a field's own labels (an XID's err_code), kept through the per-GPU merge where an exporter writes them.
    labels.update(FIELD_LABEL_KEYS)
    return _relabeled(labels, well_formed(job.get("metric_relabel_configs")))


def _target_labels(subject: LintInput, cluster: Cluster, job: dict[str, Any]) -> set[str] | None:
    """The labels the exporter job's relabel_configs give the first exporter pod the cluster names, as Kubernetes SD
    meets it on a node (its node, pod name, revision labels, address), with the job and instance Prometheus adds;
    None where the job drops that pod (AG007 says so)."""
    for namespace, name, _, pod in _daemonset_pods(subject.settings, cluster):
        meta = {**pod, "__address__": "10.0.0.1:9400", "__meta_kubernetes_pod_node_name": "ip-10-0-0-1",
                "__meta_kubernetes_pod_name": f"{name}-x7k2p", "__meta_kubernetes_pod_label_controller_revision_hash":
                "5d8f7c9b6d", "__meta_kubernetes_pod_label_pod_template_generation": "1"}
        labels = _relabeled_target(meta, well_formed(job.get("relabel_configs")))
        return None if labels is None else {k for k in labels if not k.startswith("__")} | {"job", TARGET_ADDRESS}
    return None


def _labels_added(subject: LintInput, cluster: Cluster) -> set[str]:
    """The labels the cluster's OTel pipeline adds to points it makes (metricstransform's add_label: a pod's
    total per scrape is marked so)."""
    otel = subject.agent(cluster).otel
    if otel is None:
        return set()
    return {operation.get("new_label") for name, processor in (otel.get("processors") or {}).items()
            if name.split("/")[0] == "metricstransform" and isinstance(processor, dict)
            for transform in processor.get("transforms") or [] for operation in transform.get("operations") or []
            if isinstance(operation, dict) and operation.get("action") == "add_label"}


def dimensions_published(subject: LintInput) -> Iterable[Finding]:
    """Every dimension the agent publishes is a label on the scraped series (ClusterName from cluster_name),
    and the per-pod set names the workload's namespace and pod."""
    settings = subject.settings
    for cluster in subject.clusters():
        where = agent_file(cluster.name)
        prometheus = _prometheus(subject, cluster)
        labels = _published_labels(subject, cluster) | _labels_added(subject, cluster)
        for declaration in _declarations(subject, cluster):
            # the kube-state-metrics job's series carry their DaemonSet's labels (data_missing.ksm_set) and the labels
            # its relabel_configs give a kube-state-metrics pod (data_missing.KSM_TARGET)
            of = labels | set(KSM_SERIES_LABELS) | _ksm_target_labels(subject, cluster) if _selects_ksm(declaration) \
                else labels
            for dims in declaration.get("dimensions") or []:
                if len(dims) > MAX_DIMENSIONS:
                    yield Finding("AG002", "error", where,
                                  f"the dimension set [{', '.join(dims)}] has {len(dims)} names: the agent drops a set "
                                  f"of more than {MAX_DIMENSIONS} (its log warns; nothing is published under it)")
                repeated = sorted({d for d in dims if dims.count(d) > 1})
                if repeated:
                    yield Finding("AG002", "error", where,
                                  f"the dimension set [{', '.join(dims)}] names {', '.join(repeated)} twice: the agent "
                                  f"removes the repeat, so the set it publishes is not the one the queries name")
                for dimension in dims:
                    if dimension == CLUSTER_DIMENSION:
                        if prometheus.get("cluster_name") != cluster.name:
                            yield Finding("AG002", "error", where, (
                                f"{CLUSTER_DIMENSION} is not {cluster.name!r} on every scrape job of the OTel "
                                f"pipeline: each job's relabel_configs must attach it")
                                if _every_job(subject, cluster) else (
                                f"{CLUSTER_DIMENSION} would come from the node's EC2 tag: set cluster_name "
                                f"to {cluster.name!r}"))
                    elif dimension not in of:
                        yield Finding("AG002", "error", where,
                                      f"dimension {dimension!r} is not a label on the scraped DCGM series: the "
                                      f"agent emits no metric with this set")
        job = _exporter_job(subject, cluster)  # the job the agent runs (on the OTel pipeline its receiver's)
        if job is not None and any(MIG_INSTANCE_LABEL in dims and MIG_PROFILE_LABEL not in dims
                                   for declaration in _declarations(subject, cluster)
                                   for dims in declaration.get("dimensions") or []) \
                and not _whole_gpus_get_an_instance(job):
            yield Finding("AG002", "error", where,
                          f"a dimension set carries {MIG_INSTANCE_LABEL}, which the exporter writes on MIG instances "
                          f"only, and the exporter job the agent runs gives whole GPUs none: their metrics of that set "
                          f"are never published (replace an empty {MIG_INSTANCE_LABEL} with {WHOLE_GPU_INSTANCE!r} in "
                          f"metric_relabel_configs, as gpudash generates it)")
    yield from _cluster_names_kept(subject)
    yield from _workload_labels_kept(subject)
    sets = {"dimensions": settings.cloudwatch.dimensions, "gpu_dimensions": settings.cloudwatch.gpu_dimensions}
    for name, missing in dimensions_lacking(sets):  # settings refuse this when read; a build's settings say it here
        yield Finding("AG002", "error", f"settings cloudwatch.{name}",
                      f"the set lacks {', '.join(map(repr, missing))}: it must tell pods and GPUs apart in a cluster")


def _cluster_names_kept(subject: LintInput) -> Iterable[Finding]:
    """On the OTel pipeline each job attaches ClusterName as a target label (relabel_configs), and its
    metric_relabel_configs run after: a rule there that drops the label (labeldrop, labelkeep) or writes another value
    into it leaves no point under the cluster's name, and every widget and alarm reading the cluster reads nothing.
    The rules are read as Prometheus applies them to a sample carrying the cluster's name (a replace's source labels
    it lacks read as empty)."""
    from ..render.agent_otel import RECEIVER, unescaped

    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        if agent is None or agent.otel is None:
            continue
        receiver = ((agent.otel.get("receivers") or {}).get(RECEIVER) or {})
        for job in (receiver.get("config") or {}).get("scrape_configs") or []:
            value: str | None = cluster.name
            for rule in well_formed(job.get("metric_relabel_configs")):
                rule = {k: unescaped(v) if isinstance(v, str) else v for k, v in rule.items()}
                action = str(rule.get("action", "replace")).lower()
                try:
                    named = go_compiled(str(rule.get("regex", "(.*)"))).fullmatch(CLUSTER_DIMENSION) is not None
                except re.error:
                    continue  # PR005 says the regex does not compile
                if (action == "labeldrop" and named) or (action == "labelkeep" and not named):
                    value = None
                elif action == "replace" and rule.get("target_label") == CLUSTER_DIMENSION:
                    after = _relabeled_target({CLUSTER_DIMENSION: value} if value else {}, [rule])
                    value = (after or {}).get(CLUSTER_DIMENSION)
            if value != cluster.name:
                yield Finding("AG002", "error", f"{agent_file(cluster.name)} {OTEL_KEY} job {job.get('job_name')!r}",
                              f"its metric_relabel_configs {'drop' if value is None else f'write {value!r} into'} "
                              f"{CLUSTER_DIMENSION}, which the job's relabel_configs set to {cluster.name!r}: no point "
                              f"of it is published under the cluster's name, and the widgets and alarms reading "
                              f"{cluster.name} read nothing of it")


WORKLOAD_KEYS = ("namespace", "pod", "container")  # the exporter's labels naming the workload that holds a GPU


def _workload_labels_kept(subject: LintInput) -> Iterable[Finding]:
    """The exporter job's relabel_configs write none of the labels the exporter names the workload with (the per-pod
    sets' dimensions): a target label of that name (the blog's job writes the exporter's pod name into `pod`) makes
    the scrape rename the exporter's own `pod` of each series `exported_pod` (honor_labels false, the default), so
    every per-pod set names the exporter's pod, or (honor_labels true) gives it to the GPUs no pod holds."""
    from ..cloudwatch_query import dimension_for

    names = {dimension_for(key, subject.settings) for key in WORKLOAD_KEYS}
    for cluster in subject.clusters():
        job = _exporter_job(subject, cluster)  # as the agent runs it
        if job is None:
            continue
        where = f"{OTEL_KEY} job" if subject.agent(cluster).otel is not None else "prometheus.yaml job"
        for rule in well_formed(job.get("relabel_configs")):
            target = rule.get("target_label") if isinstance(rule, dict) else None
            if target in names and str(rule.get("action", "replace")).lower() not in ("keep", "drop"):
                yield Finding("AG002", "error", f"{agent_file(cluster.name)} {where} {job.get('job_name')!r}",
                              f"its relabel_configs write the target label {target!r}, a label the exporter names "
                              f"the workload with: the scrape renames the exporter's own {target!r} of each series "
                              f"exported_{target} (honor_labels false), so the per-pod sets name the exporter's pod, "
                              f"not the workload's (with honor_labels true, GPUs no pod holds get it); remove the rule "
                              f"(the job keeps the exporter's pod as exporter_pod)")


def _selects_ksm(declaration: dict[str, Any]) -> bool:
    """Whether a declaration's metric selectors select kube-state-metrics' DaemonSet counts."""
    try:
        return any(go_compiled(selector).search(metric) for selector in declaration.get("metric_selectors") or []
                   for metric in KSM_METRICS)
    except (re.error, TypeError):
        return False


def _daemonsets_kept(subject: LintInput) -> Iterable[Finding]:
    """Every exporter DaemonSet a data-missing alarm reads the counts of (its namespace and daemonset dimensions; over
    the cluster, [ClusterName] alone, each DaemonSet the cluster names) is one the cluster's kube-state-metrics job
    keeps (its metric_relabel_configs, applied as Prometheus applies them): else its counts never arrive and the
    alarm compares nothing."""
    by_name = {c.name: c for c in subject.clusters()}
    for item in subject.artifacts.alarms:
        stats = [m["MetricStat"] for m in item.request.get("Metrics", []) if "MetricStat" in m]
        if "MetricName" in item.request:
            stats.append({"Metric": item.request})
        for stat in stats:
            metric = stat["Metric"]
            values = {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}
            node = metric.get("MetricName") in KSM_NODE_METRICS
            if not node and metric.get("MetricName") not in KSM_METRICS:
                continue
            cluster = by_name.get(values.get(CLUSTER_DIMENSION, ""))
            agent = subject.agent(cluster) if cluster else None
            if agent is None:
                continue
            job = next((j for j in _running_jobs(subject, cluster) if j.get("job_name") == KSM_JOB), None)
            if node:  # whether a GPU node exists: each node's info, a GPU node's nvidia.com/gpu capacity
                gpu = {"resource": "nvidia_com_gpu"} if metric["MetricName"] == KSM_CAPACITY else {}
                sample = {"__name__": metric["MetricName"], **gpu}
                if job is not None and not _relabel_keeps(sample, well_formed(job.get("metric_relabel_configs"))):
                    yield Finding("AG001", "error", f"{ALARMS_FILE} {item.request['AlarmName']}",
                                  f"reads {metric['MetricName']}{' of nvidia_com_gpu' * bool(gpu)}, which the "
                                  f"kube-state-metrics job of {agent_file(cluster.name)} does not keep: the alarm "
                                  f"reads a missing exporter DaemonSet as deleted where no GPU node is")
                    break
                continue
            # the DaemonSet the alarm names, else (over the cluster) each the cluster names
            named = [(values.get(KSM_NAMESPACE_LABEL, ""), values[KSM_DAEMONSET_LABEL])] \
                if KSM_DAEMONSET_LABEL in values else named_daemonsets(subject.settings, cluster)
            dropped = [f"{namespace}/{name}" for namespace, name in named if job is not None and not _relabel_keeps(
                {"__name__": metric["MetricName"], KSM_NAMESPACE_LABEL: namespace, KSM_DAEMONSET_LABEL: name},
                well_formed(job.get("metric_relabel_configs")))]
            if dropped:
                yield Finding("AG001", "error", f"{ALARMS_FILE} {item.request['AlarmName']}",
                              f"reads {metric['MetricName']} of the DaemonSet {', '.join(dropped)}, which the "
                              f"kube-state-metrics job of {agent_file(cluster.name)} does not keep: the alarm never "
                              f"gets its counts")
                break


def exporters_scraped(subject: LintInput) -> Iterable[Finding]:
    """Each cluster's agent exporter job looks in the namespace of every exporter DaemonSet the cluster's settings name
    and keeps their pods (relabel_configs' keep and drop rules, as Prometheus applies them, on a pod as Kubernetes SD
    meets it: _daemonset_pods). A build made for another deployment or namespace than the settings say scrapes none
    of that cluster's GPUs."""
    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        job = _exporter_job(subject, cluster) if agent is not None else None
        if job is None:
            continue  # AG001 reports the metrics it would have published
        path = job.get("metrics_path", METRICS_PATH)
        if path != METRICS_PATH:
            yield Finding("AG007", "error", agent_file(cluster.name),
                          f"the exporter job of cluster {cluster.name} reads metrics_path {path!r}: the exporter serves "
                          f"its metrics at {METRICS_PATH} only, so every scrape fails and no GPU is published (write "
                          f"metrics_path: {METRICS_PATH})")
        looked = [n for sd in job.get("kubernetes_sd_configs") or [] if isinstance(sd, dict)
                  for n in ((sd.get("namespaces") or {}).get("names") or [])]
        style = style_for(subject.settings, cluster)
        pods: dict[tuple[str, str], list[tuple[str, dict[str, str]]]] = {}
        for namespace, name, label, pod in _daemonset_pods(subject.settings, cluster):
            pods.setdefault((namespace, name), []).append((label, pod))
        for (namespace, name), labelled in pods.items():
            dropped = [label for label, pod in labelled
                       if not _relabel_keeps(pod, well_formed(job.get("relabel_configs")))]
            if (looked and namespace not in looked) or dropped:
                how = (f"does not look in namespace {namespace}" if looked and namespace not in looked else
                       f"drops its pods labelled {' or '.join(dropped)}")
                setting = ("clusters[].exporter.deployment / .namespace" if cluster.exporter_deployment
                           or cluster.exporter_namespace else "exporter.deployment / exporter.namespace")
                yield Finding("AG007", "error", agent_file(cluster.name),
                              f"the exporter job of cluster {cluster.name} {how}, where its exporter DaemonSet "
                              f"{namespace}/{name} runs ({style.key}, {setting}): its GPUs are never published "
                              f"(generate again from these settings)")


def jobs_as_written(subject: LintInput) -> Iterable[Finding]:
    """Each cluster's agent runs the scrape jobs gpudash writes for its settings (render/scrape.prometheus_config; on
    the OTel pipeline each with the ClusterName rule its receiver adds, read as the collector reads it). A job of the
    agent's otherwise publishes values the widgets and alarms misread, which the rules on one key of a job (AG002's
    ClusterName and GPU_I_ID, AG006's timing, AG007's path and pods) do not all see: its interval is what the widgets'
    values per scrape and the alarms' counts of a period's observations take (a job at 60 s where scrape.interval
    says 30 s read a pod's framebuffer half on agent.pipeline: classic), a scrape past its sample_limit fails whole,
    and its relabelling decides which series are published under which labels (a whole GPU's GPU_I_ID, an exporter
    pod's revision, MIG instances' utilization dropped)."""
    from ..render.agent_otel import receiver
    from ..render.scrape import prometheus_config

    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        if agent is None:
            continue  # the Container Insights add-on
        # (kube-state-metrics' job as written where the agent runs one: one it does not run is AG001's to name)
        written = prometheus_config(subject.settings, cluster, ksm=True)
        if agent.otel is not None:
            written = _as_run(receiver(written, cluster)["config"])
        defaults = (_running_config(agent).get("global") or {}, written.get("global") or {})
        running = {job.get("job_name"): job for job in _running_jobs(subject, cluster)}
        for job in written["scrape_configs"]:
            ran = running.get(job["job_name"])
            if ran is None:
                continue  # AG001 names what it would have published
            differences = [_job_difference(key, *(_job_value(j, key, d) for j, d in zip((ran, job), defaults)))
                           for key in sorted(set(job) | set(ran), key=str)
                           if _job_value(ran, key, defaults[0]) != _job_value(job, key, defaults[1])]
            if differences:
                yield Finding("AG008", "error", agent_file(cluster.name),
                              f"the {job['job_name']} job differs from the one gpudash writes for these settings: "
                              f"{'; '.join(differences)} (generate again from these settings)")


def _job_value(job: dict[str, Any], key: str, defaults: dict[str, Any]) -> Any:
    """A job's `key`, its interval and timeout the configuration's global ones where it sets none (as Prometheus
    reads them)."""
    if key in ("scrape_interval", "scrape_timeout") and key not in job:
        return defaults.get(key)
    return job.get(key)


_JOB_KEYS_READ = {
    "relabel_configs": "its relabel_configs differ: they choose the exporter pods scraped and the labels their series "
                       "carry (node, the exporter pod's revision, ClusterName)",
    "metric_relabel_configs": "its metric_relabel_configs differ: they choose the series published and their labels "
                              "(a whole GPU's GPU_I_ID, MIG instances' utilization dropped, pods' own labels dropped)",
}


def _job_difference(key: str, got: Any, want: Any) -> str:
    """What one key of a job the agent runs, `got` where gpudash writes `want`, does to what is published."""
    if key in _JOB_KEYS_READ:
        return _JOB_KEYS_READ[key]
    if key == "scrape_interval":
        ran, written = (duration_seconds(v) if isinstance(v, str) else None for v in (got, want))
        if ran and written:
            return (f"scrape_interval {got!r} where scrape.interval is {want!r}: the widgets' values per scrape and the "
                    f"alarms' thresholds count {want}'s observations per period, so sums and counts of them read "
                    f"{written / ran:g} times the truth")
    if key == "sample_limit":
        return (f"sample_limit {got!r}, not {want!r}: a scrape past its limit fails whole, and publishes nothing of its "
                f"node")
    return f"{key} {got!r}, not {want!r}"


def _relabel_keeps(labels: dict[str, str], rules: list[dict[str, Any]]) -> bool:
    """Whether a sample of `labels` survives the keep and drop rules of `rules` (the others not applied)."""
    return _relabeled_target(labels, [r for r in rules if r.get("action", "replace") in ("keep", "drop")]) is not None


def _relabeled_target(labels: dict[str, str], rules: list[dict[str, Any]]) -> dict[str, str] | None:
    """`labels` after `rules` as Prometheus relabels (keep, drop, replace; others left out): source label values joined
    by the separator, a missing label read as "", the regex fully anchored, `$1` / `${1}` in a replacement its group,
    an empty result deleting the target label; None when a rule drops it (a bad regex drops nothing and sets nothing:
    AG-rules on the scrape config report it)."""
    labels = dict(labels)
    for rule in rules:
        action = rule.get("action", "replace")
        if action not in ("keep", "drop", "replace"):
            continue
        value = rule.get("separator", ";").join(labels.get(name, "") for name in rule.get("source_labels") or [])
        try:
            matched = go_compiled(rule.get("regex", "(.*)"), groups=True).fullmatch(value)
        except re.error:
            continue
        if action != "replace":
            if (matched is not None) != (action == "keep"):
                return None
        elif matched is not None and rule.get("target_label"):
            template = re.sub(r"\$\{?(\w+)\}?", r"\\g<\1>", str(rule.get("replacement", "$1")))
            try:
                result = matched.expand(template)
            except (IndexError, re.error):
                continue
            if result:
                labels[rule["target_label"]] = result
            else:
                labels.pop(rule["target_label"], None)
    return labels


def _fullmatch(regex: str, text: str) -> bool:
    """A relabel regex (Go's, anchored) matches the whole text; one Go refuses, or lint cannot read, matches none
    (PR005 says which)."""
    pattern = go_readable(regex)
    return pattern is not None and pattern.fullmatch(text) is not None


def _whole_gpus_get_an_instance(job: dict[str, Any]) -> bool:
    """The job's metric_relabel_configs set GPU_I_ID where the exporter left it empty (a whole GPU)."""
    return any(rule.get("action", "replace") == "replace" and rule.get("target_label") == MIG_INSTANCE_LABEL
               and rule.get("source_labels") == [MIG_INSTANCE_LABEL] and rule.get("replacement")
               and _fullmatch(rule.get("regex", "(.*)"), "")
               for rule in well_formed(job.get("metric_relabel_configs")))


@lru_cache(maxsize=4096)
def _grouping_labels(expr: str) -> frozenset[str]:
    """The labels every `by (...)` of a query names (by its text: a fleet's clusters repeat each query; `by(` where
    packed)."""
    return frozenset(label.strip() for group in re.findall(r"\bby ?\(([^)]*)\)", expr) for label in group.split(",")
                     if label.strip())


def labels_delivered(subject: LintInput) -> Iterable[Finding]:
    # The workload labels arrive under the names the settings declare on the scrape path in use
    # (exported_* through a ServiceMonitor without honorLabels; PR002 says when that is not ours), and the GPU's UUID
    # under the name the exporter writes it (`uuid` with --use-old-namespace: only the agent's job renames it), and
    # under the other name too in a query that reads that one (promql.uuid_spellings: a rollout turning the flag on or
    # off respells it, and a query naming a GPU keeps both where it groups its series before naming it); a query that
    # reads the other name alone reads nothing outside such a rollout.
    declared = subject.settings.labels
    # and the labels a query writes itself: the one a per-pod panel's lookback names a GPU by (promql.GPU_LABEL), the
    # one a GPU's name is marked fresh by (promql.FRESH_LABEL), the one the idle check keys a GPU's UUID under
    # (promql.UUID_KEY), the one a MIG instance's reading is marked with its field
    # by (promql.FIELD_MARK), the one a per-pod share marks its two sums by (promql.SUM_LABEL); and the one no series
    # has, whose empty value a per-GPU panel's judgement is gated on (promql.PICKED_LABEL: read with a pod picked or not);
    # and the one a counter's rate per UUID is joined to its GPU's one index by (promql.ONE_LABEL); and the one a per-pod
    # panel keys a pod's GPU by, its UUID of NVIDIA's form or its index (promql.POD_GPU_LABEL)
    available = _published_labels(subject) | {declared.pod, declared.namespace, declared.container,
                                              declared.uuid, GPU_LABEL, FRESH_LABEL, FIELD_MARK,
                                              SUM_LABEL, PICKED_LABEL, UUID_KEY, ONE_LABEL, POD_GPU_LABEL}
    respelled = set(uuid_spellings(declared)[1:])
    for dashboard, panel, target in queries(subject.grafana):
        expr = target["expr"]
        try:
            used = {label for s in query_selectors(expr) for label in s.labels}
        except ValueError:
            continue
        used |= _grouping_labels(expr)
        for label in sorted(used - available - (respelled if declared.uuid in used else set()) - {"__name__"}):
            yield Finding("PR001", "error", panel_place(dashboard, panel),
                          f"label {label!r} is not on the series the scrape job delivers")


def _relabeled(labels: set[str], rules: list[dict[str, Any]]) -> set[str]:
    """The label names left on a series after metric relabeling (replace from a label it carries, labeldrop)."""
    for rule in rules:
        action = str(rule.get("action", "replace")).lower()
        sources = rule.get("source_labels") or rule.get("sourceLabels") or []
        target = rule.get("target_label") or rule.get("targetLabel")
        if action == "replace" and target and sources and all(source in labels for source in sources):
            labels = labels | {target}
        elif action == "labeldrop":
            labels = {label for label in labels if not _fullmatch(str(rule.get("regex", "")), label)}
    return labels


def label_mode(subject: LintInput) -> Iterable[Finding]:
    """Each Prometheus scrape path gpudash generates delivers the workload labels under the names every
    per-pod query and alert uses (`labels:`): a path that delivered `pod` to queries on `exported_pod`
    would leave them matching nothing."""
    declared = subject.settings.labels
    wanted = {(name.removeprefix("exported_"), name) for name in (declared.pod, declared.namespace, declared.container)}
    jobs = subject.prometheus_jobs() or [{}]
    endpoints = subject.artifacts.service_monitor.get("spec", {}).get("endpoints") or [{}]
    for where, rules in ((ADDITIONAL_SCRAPE_FILE, well_formed(jobs[0].get("metric_relabel_configs"))),
                         (SERVICE_MONITOR_FILE, well_formed(endpoints[0].get("metricRelabelings")))):
        delivered = _relabeled({written for written, _ in wanted}, rules)
        for written, name in sorted(wanted):
            if name not in delivered:
                yield Finding("PR002", "error", where,
                              f"the workload's {written!r} label arrives as {written!r}, but labels: queries "
                              f"{name!r}: every per-pod query and alert would match nothing")


def label_mix(subject: LintInput) -> Iterable[Finding]:
    """labels: reads the workload's pod, namespace and container all under the names a scrape without honorLabels
    gives them, or all unrenamed (settings.workload_rename_mix)."""
    mix = workload_rename_mix(subject.settings)
    if mix:
        yield Finding("PR003", "warning", mix[0], f"{mix[1]}; fix: {mix[2]}")


_DURATION = re.compile(r"(\d+)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def _seconds(duration: Any) -> float | None:
    """Seconds of a collector duration (Go's: `200ms`, `5s`, `1m30s`; a number is seconds); None if unread."""
    if isinstance(duration, (int, float)):
        return float(duration)
    parts = _DURATION.findall(str(duration))
    if not parts or "".join(n + u for n, u in parts) != str(duration):
        return None
    return sum(int(n) * _UNIT_SECONDS[u] for n, u in parts)


def _prometheus_seconds(duration: Any) -> float | None:
    """Seconds of a scrape job's duration, which Prometheus' configuration loader reads (`1m30s`, `1d`)."""
    return duration_seconds(duration) if isinstance(duration, str) else None


def counters_kept(subject: LintInput) -> Iterable[Finding]:
    """Each agent config handles a counter's next reading before its cache forgets the previous one, and sends
    readings within the minute the now values read (agent_timing, the bound settings enforce)."""
    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        if agent is None:
            continue
        if agent.otel is None:
            pipeline, flush = "classic", _seconds(agent.config.get("logs", {}).get("force_flush_interval", 5))
            jobs = agent.scrape.get("scrape_configs") or []
        else:
            pipeline = "otel"
            flush = _seconds(next((p.get("timeout", "200ms") for name, p in (agent.otel.get("processors") or {}).items()
                                   if name.split("/")[0] == "batch" and isinstance(p, dict)), "0s"))
            receiver = next((r for name, r in (agent.otel.get("receivers") or {}).items()
                             if name.split("/")[0] == "prometheus" and isinstance(r, dict)), {})
            jobs = (receiver.get("config") or {}).get("scrape_configs") or []
        defaults = (agent.scrape.get("global") or {})
        for job in jobs:
            interval = _prometheus_seconds(job.get("scrape_interval", defaults.get("scrape_interval", "1m")))
            timeout = _prometheus_seconds(job.get("scrape_timeout", defaults.get("scrape_timeout", "10s")))
            if None in (interval, timeout, flush):
                continue
            problem = timing_problem(pipeline, int(interval), int(timeout), int(flush))
            if problem:
                yield Finding("AG006", "error", f"{agent_file(cluster.name)} job {job.get('job_name')!r}",
                              f"{problem[1]} ({problem[2]})")


@cache
def agent_validator(schema_file: str):
    """The validator of the CloudWatch agent's config schema in `schema_file`, read and checked once."""
    import jsonschema

    return jsonschema.Draft4Validator(read_json_schema(
        Path(schema_file), "the CloudWatch agent schema",
        "point --cwagent-schema at the agent's translator/config/schema.json", jsonschema.Draft4Validator))


def agent_schema(subject: LintInput) -> Iterable[Finding]:
    if subject.cwagent_schema is None:
        return
    validator = agent_validator(str(subject.cwagent_schema))
    for cluster in subject.clusters():
        for error in validator.iter_errors(subject.agent_config(cluster)):
            path = "/".join(str(p) for p in error.absolute_path)
            yield Finding("AG004", "error", f"{agent_file(cluster.name)} {AGENT_KEY}",
                          f"schema: {path}: {schema_message(error)}")


def _rules(subject: LintInput) -> Iterable[tuple[str, Any, dict[str, Any]]]:
    """(where, expr, rule) of each rule of rules.yaml and of each PrometheusRule's spec."""
    rule_files = ((RULES_FILE, subject.artifacts.prometheus_rules),
                  *((PROMETHEUS_RULE_FILE, resource.get("spec") or {})
                    for resource in subject.artifacts.prometheus_rule_objects))
    for where, document in rule_files:
        for group in document.get("groups") or []:
            for rule in group.get("rules") or []:
                name = rule.get("alert") or rule.get("record") or "?"
                yield f"{where} group {group.get('name', '?')!r} rule {name!r}", rule.get("expr"), rule


def _template_findings(where: str, rule: dict[str, Any]) -> Iterable[Finding]:
    """An alerting rule's annotations and labels are Go templates: Prometheus refuses the file if one does not parse
    (a function it lacks: a warning, as a newer Prometheus may have it)."""
    if "alert" not in rule:
        return
    for key in ("annotations", "labels"):
        for name, text in (rule.get(key) or {}).items():
            found = template_problem(text) if isinstance(text, str) else None
            if found is not None:
                yield Finding("PR004", "warning" if found.startswith("function ") else "error", where,
                              f"{key[:-1]} {name!r} is not a template Prometheus loads: {found}")


def rules_parse(subject: LintInput) -> Iterable[Finding]:
    """Every rule's expression parses: Prometheus refuses to load a rules file with one that does not (every rule
    of it lost), where promtool and Prometheus itself are not at hand to say so before it ships."""
    for where, expr, rule in _rules(subject):
        yield from _template_findings(where, rule)
        if not isinstance(expr, str):
            yield Finding("PR004", "error", where, "no expr (a string)")
            continue
        try:
            check_parses(expr, grafana=False)  # each distinct expression parsed once, as Prometheus reads it
        except ValueError as exc:
            yield Finding("PR004", "error", where, f"expr does not parse: {exc}")


_RELABEL_KEYS = (("relabel_configs", "metric_relabel_configs"), ("relabelings", "metricRelabelings"))


def _relabel_lists(subject: LintInput) -> Iterable[tuple[str, Any]]:
    """(where, the list) of every relabel list of the generated scrape paths: the Prometheus jobs', the
    ServiceMonitors' endpoints', each agent's prometheus.yaml jobs' and its OTel receiver's jobs'."""
    jobs = [(f"{ADDITIONAL_SCRAPE_FILE} job {job.get('job_name', '?')!r} ", job, _RELABEL_KEYS[0])
            for job in subject.prometheus_jobs()]
    for monitor in (subject.artifacts.service_monitor, *subject.artifacts.more_service_monitors):
        name = (monitor.get("metadata") or {}).get("name", "?")
        jobs += [(f"{SERVICE_MONITOR_FILE} {name} endpoint {k} ", endpoint, _RELABEL_KEYS[1])
                 for k, endpoint in enumerate((monitor.get("spec") or {}).get("endpoints") or [])]
    for agent in subject.artifacts.agents:
        jobs += [(f"{agent_file(agent.cluster)} prometheus.yaml job {job.get('job_name', '?')!r} ", job,
                  _RELABEL_KEYS[0]) for job in agent.scrape.get("scrape_configs") or []]
        if agent.otel is not None:
            receiver = ((agent.otel.get("receivers") or {}).get(RECEIVER) or {}).get("config") or {}
            jobs += [(f"{agent_file(agent.cluster)} {OTEL_KEY} receivers/{RECEIVER}/config/scrape_configs[{k}]/", job,
                      _RELABEL_KEYS[0]) for k, job in enumerate(receiver.get("scrape_configs") or [])]
    for where, job, keys in jobs:
        for key in keys:
            if isinstance(job, dict) and job.get(key) is not None:
                yield f"{where}{key}", job[key]


def _regexes(subject: LintInput, otel: bool = True) -> Iterable[tuple[str, str, str]]:
    """(where, regex, its kind) of every relabel rule of the generated scrape paths (the Prometheus jobs, the
    ServiceMonitors, each agent's prometheus.yaml) and every regex of the agent's metric declarations; and, with `otel`,
    every regex of each agent's OTel configuration. Kinds: relabel, matcher (a declaration's label matcher; classic
    matcher on the JSON path), selector (its metric selectors), include (a processor's)."""
    for where, rules in _relabel_lists(subject):
        if OTEL_KEY not in where:  # (the OTel configuration's: _otel_regexes, as the collector reads them)
            for k, rule in enumerate(rules if isinstance(rules, list) else []):
                if shape_problem(rule) is None and rule.get("regex") is not None:
                    yield f"{where}[{k}]", str(rule["regex"]), "relabel"
    for agent in subject.artifacts.agents:
        for k, declaration in enumerate(agent.publishing().get("emf_processor", {}).get("metric_declaration") or []):
            where = f"{agent_file(agent.cluster)} metric_declaration[{k}]"
            kinds = [(declaration.get("label_matcher"), "classic matcher")] + \
                [(selector, "selector") for selector in declaration.get("metric_selectors") or []]
            for regex, kind in kinds:
                if isinstance(regex, str):
                    yield where, regex, kind
    for agent in subject.artifacts.agents if otel else ():
        if agent.otel is not None:
            yield from _otel_regexes(agent.otel, f"{agent_file(agent.cluster)} {OTEL_KEY} ")


def _otel_regexes(node: Any, path: str) -> Iterable[tuple[str, str, str]]:
    """The regexes of the agent's OTel configuration (its receiver's relabel rules, its exporter's label matchers,
    its processors' `include` of match_type regexp), as the collector reads them (`$$` is a `$`), each with its kind
    (_regexes; the exporter's metric name selectors are its declarations', agent.publishing())."""
    from ..render.agent_otel import unescaped

    def walk(node: Any, path: str) -> Iterable[tuple[str, str, str]]:
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, str) and (key == "regex" or key == "include"
                                               and node.get("match_type") == "regexp"):
                    kind = "include" if key == "include" else "matcher" if "label_matchers" in path else "relabel"
                    yield f"{path}{key}", unescaped(value), kind
                else:
                    yield from walk(value, f"{path}{key}/")
        elif isinstance(node, list):
            for k, value in enumerate(node):
                yield from walk(value, f"{path.rstrip('/')}[{k}]/")
    return walk(node, path)


def regexes_compile(subject: LintInput) -> Iterable[Finding]:
    """Every relabel and declaration regex compiles as RE2 (Prometheus' and the agent's Go regexp,
    go_regex.regex_problem): Prometheus refuses a scrape config with one that does not; awsemf (metric_declaration.go)
    compiles a declaration's metric selectors with regexp.MustCompile, so the agent stops as it starts, and drops a
    declaration whose label matcher does not compile. A regex Go takes that lint cannot read as Go does
    (go_regex_python: a Unicode script class) is a warning: lint's judgements of what it passes read it as passing
    nothing. A relabel rule of a shape Prometheus' config loader refuses (relabel_shape: a target_label list) stops
    the Prometheus or agent loading it too."""
    for where, rules in _relabel_lists(subject):
        if not isinstance(rules, list):
            yield Finding("PR005", "error", where, f"the relabel rules are {kind_said(rules)}, where Prometheus "
                                                   f"reads a list: Prometheus refuses the scrape config")
            continue
        for k, rule in enumerate(rules):
            problem = shape_problem(rule)
            if problem is not None:
                yield Finding("PR005", "error", f"{where}[{k}]", f"{problem}: Prometheus refuses the scrape config")
    checked: dict[tuple[str, str], tuple[str, str] | None] = {}
    for where, regex, kind in _regexes(subject):
        if (regex, kind) not in checked:
            checked[regex, kind] = _regex_verdict(regex, kind)
        if checked[regex, kind] is not None:
            severity, message = checked[regex, kind]
            yield Finding("PR005", severity, where, f"regex {regex!r} {message}")


_REFUSED = {"selector": ": the agent stops as it starts (awsemf compiles metric selectors with regexp.MustCompile, "
                        "which panics) and publishes nothing",
            "matcher": ": awsemf drops the declaration (\"Dropped metric declaration.\" in the agent's log), and "
                       "nothing of it is published",
            "classic matcher": ": an agent publishing through awsemf drops the declaration (\"Dropped metric "
                               "declaration.\" in its log), and nothing of it is published; an older one, with its own "
                               "EMF processor (regexp.MustCompile), stops as it starts"}


def _regex_verdict(regex: str, kind: str) -> tuple[str, str] | None:
    """(severity, what is said) of a regex Go refuses or lint cannot read (None: neither). A relabel rule's groups are
    read (its replacement): they must be Go's too."""
    problem = regex_problem(regex)
    if problem is not None:
        return "error", f"does not compile: {problem}{_REFUSED.get(kind, '')}"
    unread = unreadable(regex, groups=kind == "relabel")
    if unread is not None:
        return "warning", (f"is one Go's regexp takes but lint cannot read as Go does: {unread}; lint reads it as "
                           f"passing nothing")
    return None


def newer_regexes(subject: LintInput) -> Iterable[Finding]:
    """A matcher regex of a Prometheus rule or a Grafana query, or a relabel regex of a Prometheus scrape path, that
    only a Prometheus built with a newer Go compiles (go_regex.newer_syntax: Prometheus 3 takes it, 2.42 refuses the
    rules file, the query, the scrape config): a warning, as for experimental functions, since no setting says which
    Prometheus the build is for. The agent's regexes are compiled by the agent's own Go: said where the cluster's agent
    runs the JSON path (agent.pipeline: classic), which an agent built with an older Go may run."""
    places = [(where, expr) for where, expr, _ in _rules(subject) if isinstance(expr, str)]
    places += [(panel_place(dashboard, panel), target["expr"]) for dashboard, panel, target in queries(subject.grafana)
               if isinstance(target["expr"], str)]
    said: set[tuple[str, str]] = set()
    for where, expr in places:
        if "=~" in expr or "!~" in expr:
            for note in newer_regex_syntax(expr):
                if (where, note) not in said:
                    said.add((where, note))
                    yield Finding("PR006", "warning", where, f"a matcher regex uses {note}: {_NEWER_GO}")
    # (a cluster's name holds no blank: its file is the first word of where)
    classic = {agent_file(agent.cluster) for agent in subject.artifacts.agents if agent.otel is None}
    for where, regex, _ in _regexes(subject, otel=False):  # (an OTel configuration's regexes: a 2026 agent's Go)
        if where.startswith((ADDITIONAL_SCRAPE_FILE, SERVICE_MONITOR_FILE)):
            compiled_by = _NEWER_GO
        elif classic and where.split(" ", 1)[0] in classic:
            compiled_by = _NEWER_AGENT
        else:
            continue
        for note in newer_syntax(regex):
            yield Finding("PR006", "warning", where, f"regex {regex!r} uses {note}: {compiled_by}")


_NEWER_GO = "Prometheus 3 compiles it, a Prometheus built with an older Go refuses it (2.42: Go 1.19)"
# The agent agent.pipeline: otel needs (MIN_AGENT_VERSION, a 2026 release) is built with Go 1.24 or later (its go.mod
# says go 1.24.4 from mid 2025 on): it takes what newer_syntax finds; the JSON path runs on agents years older.
_NEWER_AGENT = (f"a CloudWatch agent built with a newer Go compiles it ({MIN_AGENT_VERSION}, the least agent.pipeline: "
                f"otel runs on, does), an older one, which agent.pipeline: classic may run on, refuses it")


def prometheus_rule_size(subject: LintInput) -> Iterable[Finding]:
    """Each PrometheusRule applied with client-side `kubectl apply`: the whole object goes into the
    last-applied-configuration annotation, which the API server refuses past 262,144 bytes (last_applied, as GF011
    counts for the dashboards' ConfigMaps). Each holds one rule group, cut at about half that (render.alarms.size_bounded):
    only one alarm's rules alone past the limit, or a group of one label (the counters') grown past it, warn."""
    from ..last_applied import APPLY_LIMIT, last_applied_bytes

    for resource in subject.artifacts.prometheus_rule_objects:
        size = last_applied_bytes(resource)
        if size > APPLY_LIMIT:
            name = (resource.get("metadata") or {}).get("name", "?")
            yield Finding("PR007", "warning", f"{PROMETHEUS_RULE_FILE} {name}",
                          f"{size:,} bytes of annotations (the PrometheusRule as client-side kubectl apply encodes it "
                          f"into last-applied-configuration), over the {APPLY_LIMIT:,} the API server accepts (the "
                          f"apply is refused): apply {PROMETHEUS_RULE_FILE} with {KUBECTL_APPLY} (no such "
                          f"annotation), or load prometheus/rules.yaml into Prometheus' rule_files")


RULES = (
    Rule("AG001", "every metric and dimension set a CloudWatch widget or alarm queries is published by that "
                  "cluster's agent", used_metrics_selected),
    Rule("AG002", f"every published dimension is a scraped label, {CLUSTER_DIMENSION} is set explicitly, pods are "
                  f"namespace + name, whole GPUs carry {MIG_INSTANCE_LABEL} where a set needs it",
         dimensions_published),
    Rule("AG003", "no agent metric declaration lacks source_labels, metric_selectors or dimensions, nor a label "
                  "matcher its label_names or regex (OTel), or writes an empty label_matcher (JSON path)",
         declarations_complete),
    Rule("AG004", "cwagentconfig.json validates against the agent's schema (--cwagent-schema)", agent_schema),
    Rule("AG005", "the agent's OTel pipeline drops DCGM's blank values of every DCGM field it publishes, at the "
                  "field's floor, and nothing else, after making gauges of the states the exporter serves as counters; "
                  "its processors are the ones gpudash writes (agent.pipeline: otel)", blanks_filtered),
    Rule("AG006", "each counter's next reading reaches the agent's delta cache before it forgets the previous one "
                  f"({CACHE_TTL['classic'] // 60} minutes on agent.pipeline: classic, {CACHE_TTL['otel'] // 60} on "
                  "otel), and readings are sent within the minute the now values read", counters_kept),
    Rule("AG007", "each cluster's agent scrapes the exporter pods of every exporter DaemonSet its settings name (the "
                  "namespace, and the pod label of the cluster's deployment style)", exporters_scraped),
    Rule("AG008", "each cluster's agent runs the scrape jobs gpudash writes for its settings: their interval (which "
                  "the widgets' values per scrape and the alarms' counts of observations take), sample limit and "
                  "relabelling", jobs_as_written),
    Rule("PR001", "every label a query uses is delivered by the scrape job", labels_delivered),
    Rule("PR002", "the generated Prometheus scrape paths deliver the workload labels under the names `labels:` "
                  "declares", label_mode),
    Rule("PR003", "`labels:` reads the workload's pod, namespace and container all as a ServiceMonitor without "
                  "honorLabels renames them (exported_*) or all unrenamed (a warning)", label_mix),
    Rule("PR004", "every Prometheus rule's expression parses, and its annotations and labels are templates "
                  "Prometheus loads (rules.yaml and the PrometheusRules)", rules_parse),
    Rule("PR005", "every relabel rule of the scrape paths is of the shape Prometheus loads, every relabel regex and "
                  "agent declaration regex compiles (RE2), and is one lint reads as Go does (a warning)",
         regexes_compile),
    Rule("PR006", "no PromQL matcher or Prometheus relabel regex, nor a regex of an agent on the JSON path "
                  "(agent.pipeline: classic), uses syntax only a newer Go compiles ((?<name>) groups, Unicode 14 and 15 "
                  "scripts; a warning)", newer_regexes),
    Rule("PR007", "each PrometheusRule fits client-side kubectl apply's annotation limit (a warning)",
         prometheus_rule_size),
)

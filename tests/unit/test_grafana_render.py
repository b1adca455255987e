"""Grafana dashboards: schema-valid, per-pod legends from the label mapping, variables, units, coverage."""

from __future__ import annotations

import json
import re


from generator.artifacts import build, grafana_dashboards
from generator.lint import run
from generator.lint.grafana_rules import RULES
from tests.support.lint_input import lint_input
from generator.lint.promql_checks import parse, query_selectors
from generator.project import load_project
from generator.promql import pod_named, pod_unnamed
from generator.promql_text import packed
from generator.render.grafana import FREE_TEXT_VARIABLES


def _dashboards(config=None, csv=None):
    project = load_project(config, csv)
    return project, {d.uid: d.model for d in grafana_dashboards(project)}


def _charts(model):
    return [p for p in model["panels"] if p["type"] != "row"]


def _targets(model):
    return [(p, t) for p in _charts(model) for t in p["targets"]]


def test_default_dashboards_validate_against_grafanas_schema(reference):
    project, _ = _dashboards()
    subject = lint_input(project, grafana_schema=reference / "grafana" / "schema")
    schema_rule = [rule for rule in RULES if rule.id == "GF010"]
    assert run(schema_rule, subject) == []


def test_schema_rule_catches_a_broken_panel(reference):
    project, _ = _dashboards()
    dashboards = grafana_dashboards(project)
    dashboards[0].model["panels"][1]["gridPos"]["w"] = "wide"
    subject = lint_input(project, grafana_schema=reference / "grafana" / "schema", grafana=tuple(dashboards[:1]))
    findings = run([rule for rule in RULES if rule.id == "GF010"], subject)
    assert findings and all(f.severity == "error" for f in findings)
    assert any("'wide' is not of type 'integer'" in f.message for f in findings)


def test_schema_version_is_current():
    _, models = _dashboards()
    assert {m["schemaVersion"] for m in models.values()} == {42}


def test_no_property_grafanas_own_types_do_not_have_there():
    """@grafana/schema 13: auto, auto_count, auto_min only on interval variables; no table options.footer."""
    _, models = _dashboards()
    variables = [v for m in models.values() for v in m["templating"]["list"]]
    assert variables and all(v["type"] != "interval" for v in variables)
    assert not [v["name"] for v in variables if {"auto", "auto_count", "auto_min"} & set(v)]
    tables = [p for m in models.values() for p in m["panels"] if p["type"] == "table"]
    assert tables and not [p["title"] for p in tables if "footer" in p["options"]]
    assert {m["schemaVersion"] for m in models.values()} == {42}


# a selector's braces (a quoted regex may hold one: the exporter pods' `{5}`, promql.pod_named)
SELECTOR = r"\{(?:'[^']*'|[^}'])*\}"

def test_by_pod_panels_group_by_pod_with_pod_legends():
    project, models = _dashboards()
    by_pod = models["gpudash-by-pod"]
    series_panels = [(p, t) for p, t in _targets(by_pod) if p["type"] == "timeseries"]
    assert len(series_panels) >= 10
    for panel, target in series_panels:
        # a share of memory per pod is the pod's sums' ratio (promql.pooled), taken as exp of their logs' difference
        assert target["expr"].startswith(tuple(map(packed, ("avg by (namespace, pod) (", "sum by (namespace, pod) (",
                                                            "exp(sum by (namespace, pod) (")))), panel["title"]
        assert packed(pod_named(project.settings.labels)) in target["expr"], panel["title"]
        assert target["legendFormat"] == "Pod {{namespace}}/{{pod}}", panel["title"]
        assert panel["options"]["legend"]["showLegend"] is True


def test_exported_pod_mapping_reaches_every_query_legend_and_variable(project_dir):
    config = project_dir("labels:\n  pod: exported_pod\n  namespace: exported_namespace\n  node: hostname\n")
    _, models = _dashboards(config)
    text = json.dumps(models)
    assert not re.search(r'[{ ,(]pod=~', text), "a query still filters on the exporter's own pod label"
    assert not re.search(r"by \([^)]*\bpod\b", text)
    by_pod = models["gpudash-by-pod"]
    legends = {t["legendFormat"] for p, t in _targets(by_pod) if p["type"] == "timeseries"}
    assert legends == {"Pod {{exported_namespace}}/{{exported_pod}}"}
    variables = {v["name"]: v for v in by_pod["templating"]["list"]}
    assert variables["pod"]["regex"] == '/exported_pod="([^"]+)"/'
    # one node spelling configured: no coalescing, the label is used as it is
    assert variables["node"]["regex"] == '/hostname="([^"]+)"/'
    assert packed('exported_namespace=~"$namespace"') in variables["pod"]["query"]


def test_any_one_node_label_in_a_list_is_used_as_it_is(project_dir):
    """README: a list of one label (any name) is used as it is; written without a list only node, hostname or
    Hostname is taken (test_bad_input: `node: instance` is refused)."""
    _, models = _dashboards(project_dir("labels:\n  node: [instance]\n"))
    variables = {v["name"]: v for v in models["gpudash-overview"]["templating"]["list"]}
    assert variables["node"]["regex"] == '/instance="([^"]+)"/'
    # no joining writes the node label: each names the GPU (by its UUID, else that label: promql.identified), keys
    # its UUID under either label (promql.uuid_keyed) or copies a named GPU's index (promql._uuid_one; a pod's GPU's,
    # promql._pod_gpu, its marks and its key: promql.pod_gpu_marks)
    text = json.dumps(models)
    assert text.count("label_join(") == text.count(",'gpudash_gpu',';',") + text.count(",'gpudash_uuid',';',") + \
        text.count(",'gpudash_u','','gpu')") + text.count(",'gpudash_p','','gpu')") + \
        text.count(",'gpudash_p',';','gpudash_p','gpudash_gpu','gpu')")
    assert "{{instance}} GPU {{gpu}}" in text


def test_old_namespace_pod_labels_are_a_setting(project_dir):
    """An exporter run with --use-old-namespace writes pod_name, pod_namespace, container_name."""
    config = project_dir("labels:\n  pod: pod_name\n  namespace: pod_namespace\n  container: container_name\n")
    _, models = _dashboards(config)
    by_pod = models["gpudash-by-pod"]
    legends = {t["legendFormat"] for p, t in _targets(by_pod) if p["type"] == "timeseries"}
    assert legends == {"Pod {{pod_namespace}}/{{pod_name}}"}
    assert all(packed('pod_name!=""') in t["expr"] and packed("by (pod_namespace, pod_name)") in t["expr"]
               for p, t in _targets(by_pod) if p["type"] == "timeseries")
    variables = {v["name"]: v for v in by_pod["templating"]["list"]}
    assert variables["pod"]["regex"] == '/pod_name="([^"]+)"/'


def test_variables_and_cluster_variable_only_for_a_shared_prometheus(project_dir):
    _, models = _dashboards()
    names = [v["name"] for v in models["gpudash-overview"]["templating"]["list"]]
    assert names == ["datasource", "namespace", "pod", "node", "gpu"]
    config = project_dir("""
        clusters:
          - {name: east, region: us-east-1, prometheus_label: east}
          - {name: west, region: us-west-2, prometheus_label: west}
    """)
    _, models = _dashboards(config)
    overview = models["gpudash-overview"]
    assert [v["name"] for v in overview["templating"]["list"]][:2] == ["datasource", "cluster"]
    assert all(packed('cluster=~"$cluster"') in t["expr"] for _, t in _targets(overview))


def test_every_query_uses_the_datasource_variable_and_all_filters():
    _, models = _dashboards()
    for model in models.values():
        for panel, target in _targets(model):
            assert panel["datasource"]["uid"] == "${datasource}"
            assert target["datasource"]["uid"] == "${datasource}"
            # a counter's rate read from its recording (promql.counted_rate), and a gauge per GPU (promql.named_gpus:
            # its value read from its copies under any node spelling), takes the node variable where its GPU is named:
            # in a chart, on the name a step gives it (promql._picked); in an increase over the range, on each
            # spelling's copies, the first non-empty spelling's (promql.gpus_named); a per-pod panel on the copies
            # placing its GPUs on the node (promql.on_node)
            picked = packed('"gpudash_pick", "1", "node", "$node")', FREE_TEXT_VARIABLES) in target["expr"]
            named = ":step_increase" in target["expr"] or packed("group_left (node) 0 *") in target["expr"]
            scoped = ('node="", hostname=~"$node"', 'node="", hostname="", Hostname=~"$node"')
            by_name = ('node="", hostname!="", hostname=~"$node"',
                       'node="", hostname="", Hostname!="", Hostname=~"$node"')
            spelled = () if picked else ('node=~"$node"', *zip(by_name, scoped))
            for matcher in ('namespace=~"$namespace"', 'pod=~"$pod"', *spelled, 'gpu=~"$gpu"'):
                forms = (matcher if named else matcher[1:]) if isinstance(matcher, tuple) else (matcher,)
                forms = tuple(packed(form, FREE_TEXT_VARIABLES) for form in forms)  # the panels' text (packed)
                assert any(form in target["expr"] for form in forms), (panel["title"], matcher)
        for variable in model["templating"]["list"][1:]:
            assert variable["datasource"]["uid"] == "${datasource}"
            assert variable["allValue"] == ".*"  # keeps GPUs that no pod holds


def test_counters_are_rated_over_the_rate_interval_and_gauges_drop_blank_values():
    project, models = _dashboards()
    recorded = {rule["record"] for group in build(project).prometheus_rules["groups"] for rule in group["rules"]
                if "record" in rule}
    for model in models.values():
        for panel, target in _targets(model):
            for selector in query_selectors(target["expr"]):
                if selector.metric.startswith("gpudash:"):  # a counter's recording (promql.counted_rules), recorded
                    assert selector.metric in recorded and selector.range_function == "sum_over_time", target["expr"]
                    continue
                metric = project.catalog.get(selector.metric)
                if metric.is_counter:  # rated, or compared with the blank floor, or (not charted) a test of which
                    # series are there now (promql.idle_gpus: staleness markers tell a GPU no pod holds any more)
                    assert selector.range_function in ("rate", "increase", "compare") or \
                        selector.range_function is None and not selector.shown, target["expr"]
                else:  # the latest sample, or the latest within a panel's lookback (promql.looked_back,
                    # _Device._read), or, not charted, a test of a reading within it (`min_over_time(x[w]) < 1e14`)
                    assert selector.range_function in (None, "compare", "last_over_time") or \
                        selector.range_function == "min_over_time" and not selector.shown, (selector, target["expr"])
            if re.search(r"(?<!i)rate\(", target["expr"]):  # a rate panel (an increase takes idelta per step)
                assert re.search(r"\[\$__rate_interval(:30s)?\]", target["expr"])
    replay = next(t["expr"] for p, t in _targets(models["gpudash-health"]) if p["title"] == "PCIe replays")
    # a GPU's rate from its recording (promql.counted_rules: each step's delta of all its copies' readings, where their
    # merged reading went down the copies' own deltas, and the seconds it grew in): the window's increase over its
    # seconds, per GPU (its UUID, gpudash_gpu, and MIG instance); then each GPU named by one node (gpudash_gpu joined
    # to a name), the GPUs that stood under one node and index added up, then the GPU's instances, then the outer
    # grouping
    written = ("(sum_over_time(gpudash:DCGM_FI_DEV_PCIE_REPLAY_COUNTER:step_increase{gpu=~\"$gpu\"}"
               "[$__rate_interval]) / (sum_over_time(gpudash:DCGM_FI_DEV_PCIE_REPLAY_COUNTER:step_seconds"
               "{gpu=~\"$gpu\"}[$__rate_interval]) > 0) and on (")
    recording = packed(written)
    assert replay.startswith(packed("max by (node, gpu) (max by (cluster, node, gpu) (label_replace(label_join(sum by "
                                    "(cluster, node, gpu, GPU_I_ID, GPU_I_PROFILE) (max by (cluster, gpudash_gpu, "
                                    "gpudash_u, GPU_I_ID, GPU_I_PROFILE) (label_replace(label_join" + written))
    # the GPUs a copy of which the pod and namespace variables select has a sample within the window, less one whose
    # newest sample (by any copy of it: no scrape target's labels) names no pod (for a GPU without a UUID, none naming
    # one within an interval), with a pod or namespace picked (promql.idle_gpus: the picked pods' naming samples ordered against every sample
    # without a pod, each selector gated by gpudash_w so that at All it meets no series)
    gated = 'gpudash_w!~"$namespace$pod"'
    # (the picked pods' by any pod label: the pod variable lists no exporter pod; without one, an exporter pod's too)
    picked_named, picked_unnamed = pod_named(project.settings.labels, False), pod_unnamed(project.settings.labels)
    assert packed('and on (cluster, gpudash_gpu, gpu) label_replace(label_join(present_over_time(DCGM_FI_DEV_PCIE_'
                  'REPLAY_COUNTER{gpu=~"$gpu", namespace=~"$namespace", pod=~"$pod"}[$__rate_interval]) unless on '
                  '(cluster, UUID, gpu, GPU_I_ID, GPU_I_PROFILE) ((max by (cluster, UUID, gpu, GPU_I_ID, '
                  'GPU_I_PROFILE) '
                  f'(timestamp(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{gpu=~"$gpu", {gated}, {picked_unnamed}}}) or max_over_time('
                  f'timestamp(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{gpu=~"$gpu", {gated}, {picked_unnamed}}})[120s:15s]) or '
                  '(timestamp(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu=~"$gpu", namespace=~"$namespace", '
                  f'pod=~"$pod", {gated}, {picked_named}}}) or max_over_time(timestamp(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{'
                  f'gpu=~"$gpu", namespace=~"$namespace", pod=~"$pod", {gated}, {picked_named}}})[120s:15s])) + 0.0001) '
                  '* 10000 + 0.5) % 10 < 1 unless on (cluster, UUID, gpu, GPU_I_ID, GPU_I_PROFILE) '
                  'timestamp(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu=~"$gpu", '
                  f'namespace=~"$namespace", pod=~"$pod", {gated}, {picked_named}, UUID=""}}) >= time() - 30)'
                  ) in replay
    # (one name per GPU: the candidates' rows carry the GPU, cluster, gpudash_gpu and gpu, and the name alone; one index
    # kept of a UUID, the rate read per UUID, gpudash_u, drawn at that index)
    assert packed('+ on (cluster, gpudash_gpu, gpudash_u) group_left (node, gpu) 0 * (label_replace(topk without '
                  '(gpu, node) (1, label_replace(label_join(topk without (node) (1, ') in replay
    assert "rate(" not in replay and replay.count(recording) == 1
    # the rules file records both series of each counter a rate panel reads, at the scrape interval
    groups = [g for g in build(project).prometheus_rules["groups"] if g["name"].startswith("gpudash-counters")]
    assert {g["interval"] for g in groups} == {"30s"} and {r["record"] for g in groups for r in g["rules"]} >= {
        "gpudash:DCGM_FI_DEV_PCIE_REPLAY_COUNTER:step_increase", "gpudash:DCGM_FI_DEV_PCIE_REPLAY_COUNTER:step_seconds"}
    # a per-pod panel reads each GPU a scrape of the window named the pod on with the GPU's rate, read as the per-GPU
    # panels read it (its recording), joined on the GPU
    by_pod = [t["expr"] for p, t in _targets(models["gpudash-by-pod"]) if ":step_increase" in t["expr"]]
    named, unnamed = pod_named(project.settings.labels), pod_unnamed(project.settings.labels)
    assert by_pod and all("sum_over_time(gpudash:DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION:step_increase{" in e
                          and packed("namespace, pod, UUID") not in e and "rate(" not in e for e in by_pod)
    # each GPU once per pod by its UUID (gpudash_gpu; of NVIDIA's form, whatever its index: gpudash_u), under the node
    # and at the index its rate is named by: an upgrade renaming the node makes no second GPU, nor one numbering the
    # node's GPUs apart
    # (less the GPUs a scrape found idle: promql.idle_gpus); a pod named by a copy of any node spelling (one selector,
    # no node matcher: the node variable picks the GPUs by their names, which the range gives them)
    assert all(e.startswith(packed("sum by (namespace, pod) (max by (namespace, pod, gpu, gpudash_gpu) ((max by "
                                   "(cluster, gpudash_gpu, gpudash_u, namespace, pod) (label_replace(label_join("
                                   "label_replace(label_join(label_replace(label_join("
                                   "present_over_time(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{namespace=~\"$namespace\", "
                                   f"pod=~\"$pod\", gpu=~\"$gpu\", {named}}}[$__rate_interval]) unless"))
               and packed("+ on (cluster, gpudash_gpu, gpudash_u) group_left (node, gpu) 0 * topk without (gpu, node) (") in e
               and packed("unless on (cluster, gpudash_uuid, gpu, GPU_I_ID, GPU_I_PROFILE) ((max by (cluster, "
                          "gpudash_uuid, gpu, GPU_I_ID, GPU_I_PROFILE) (label_replace(label_join(timestamp("
                          f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=~\"$gpu\", {unnamed}}}) or max_over_time("
                          "timestamp(") in e
               and packed(" * 0 + on (node, gpu) group_left () max by (node, gpu) (") in e for e in by_pod)
    util = next(t["expr"] for p, t in _targets(models["gpudash-by-pod"]) if p["title"] == "GPU utilization by pod")
    # every gauge selector read for its value drops the blank (a pod's selectors over the panel's lookback only ask
    # whether a scrape of it named the pod: promql.label_lookback, or whether a copy has a sample taken within the last
    # scrape interval: promql.fresh_copies); a per-pod lookback's copies (fresh, or each one's latest within the
    # lookback) are chosen with the blank counted as 1e14 (clamp_max) or read at each step of a subquery (its time
    # first), and the reading of the copy chosen drops it after (promql._unblanked), so a fresh blank is the GPU's; a
    # copy whose MIG instance reads the blank is found by it (`>= 1e14`) and not chosen (promql.chosen_copy)
    # (a series the exporter stopped serving, left out of the late tier, is told by its samples' times and by the
    # instant selector having none: promql._superseded reads no value of it; a GPU no pod holds any more by which of its
    # series are there now: promql.idle_gpus reads no value of them)
    read = re.sub(rf"timestamp\(DCGM_\w+{SELECTOR}\)|unless DCGM_\w+{SELECTOR}"
                  rf"|DCGM_\w+{SELECTOR} unless on ?\([^)]*\) ?DCGM_\w+{SELECTOR}(?!\[)", "", util)
    floors = re.findall(rf"DCGM_\w+{SELECTOR}(?!\[)( ?< ?1e14| ?>= ?1e14| and present_over_time\(|, ?1e14\)"
                        rf"| ?/ ?100000\)\)\[)?", read)  # packed: no space beside an operator
    assert floors and all(floors), util

    def device(at: int) -> str:  # the expression a group_left joins, its parentheses balanced
        depth = 0
        for end in range(at, len(util)):
            depth += {"(": 1, ")": -1}.get(util[end], 0)
            if depth == 0:
                return util[at:end + 1]
        raise AssertionError(util)
    # (the device's reading joined under the node's spellings; promql._superseded's `group_left ()` compares times;
    # a pod's GPU's key, promql.pod_gpu_marks, joined by `group_left (gpudash_p)`)
    joined = [device(m.end()) for m in re.finditer(r"group_left ?\((?!gpudash_p\))[^)]+\) ?", util)]  # (packed)
    assert joined and all(re.search(r" ?< ?1e14\)$", d) and re.search(r"topk by\b", d) for d in joined), util
    ranged = re.findall(rf"DCGM_\w+{SELECTOR}\[", util)
    # (the dashboard's range at its end: the GPUs the picked node holds, promql.on_node; 30s and 60s: the last scrape
    # interval and the two before, promql.idle_gpus)
    windows = r"(?:120s|30000ms|30s|60s|\$__range)"
    assert ranged and len(ranged) == len(re.findall(rf"present_over_time\(DCGM_\w+{SELECTOR}\[{windows}\]",
                                                    util)) + len(
        re.findall(rf"last_over_time\(DCGM_\w+{SELECTOR}\[(?:120s|30s|15s)\]\)", util)) + len(
        re.findall(rf"min_over_time\(DCGM_\w+{SELECTOR}\[120s\]\) ?< ?1e14", util))  # a reading within the lookback
    # (15s: half the scrape interval, the ranges promql.sample_time reads a series' latest sample time over)


def test_units_come_from_the_catalog_and_every_panel_is_described():
    _, models = _dashboards()
    units = {p["title"]: p["fieldConfig"]["defaults"]["unit"] for m in models.values() for p in _charts(m)}
    assert units["Framebuffer used by pod"] == "mbytes"
    assert units["Tensor core activity by pod"] == "percentunit"
    assert units["Power draw of each pod's GPUs"] == "watt"
    assert units["SM clock by pod"] == "rotmhz"
    assert units["GPU temperature"] == "celsius"
    assert units["Energy use rate of each pod's GPUs"] == "mwatt"
    assert units["PCIe receive by pod"] == "Bps"
    assert units["GPUs reporting"] == "short" and units["Pods on GPUs"] == "short"  # counts, not percent
    assert all(p.get("description") for m in models.values() for p in _charts(m))


def test_a_count_without_a_unit_of_its_own_is_a_count_not_the_fields_unit():
    from generator.model import Panel, Query
    from generator.render.grafana import panel_unit

    project, _ = _dashboards()
    assert panel_unit(Panel("GPUs", (Query("DCGM_FI_DEV_GPU_TEMP", "count"),)), project.catalog) == "short"
    assert panel_unit(Panel("Temp", (Query("DCGM_FI_DEV_GPU_TEMP", "avg"),)), project.catalog) == "celsius"


def test_every_collected_series_is_charted():
    project, models = _dashboards()
    charted = {s.metric for m in models.values() for _, t in _targets(m) for s in query_selectors(t["expr"])}
    assert {m.name for m in project.catalog.series()} <= charted


def test_a_field_added_to_the_csv_appears_without_code_changes(project_dir):
    csv = "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\nDCGM_FI_DEV_FAN_SPEED_RPM, gauge, Fan (in %).\n"
    config = project_dir(csv=csv)
    _, models = _dashboards(config)
    exprs = [t["expr"] for _, t in _targets(models["gpudash-all-metrics"])]
    assert any("DCGM_FI_DEV_FAN_SPEED_RPM{" in e for e in exprs)


def test_everything_nvidias_dashboard_charts_is_charted_with_better_legends(reference):
    nvidia = json.loads((reference / "grafana" / "nvidia-dcgm-exporter-dashboard.json").read_text())
    theirs = {s.metric for p in nvidia["panels"] for t in p.get("targets", [])
              for s in query_selectors(t["expr"])}
    _, models = _dashboards()
    ours = {s.metric: t["legendFormat"] for m in models.values() for _, t in _targets(m)
            for s in query_selectors(t["expr"])}
    assert theirs <= set(ours)
    # NVIDIA's legend is "GPU {{gpu}}", ambiguous across nodes; ours names the node as well.
    overview_legends = {t["legendFormat"] for p, t in _targets(models["gpudash-overview"]) if p["type"] == "timeseries"}
    assert overview_legends == {"{{node}} GPU {{gpu}}", "{{node}} GPU {{gpu}} MIG {{GPU_I_ID}} ({{GPU_I_PROFILE}})"}


def test_dashboards_adapt_to_a_csv_without_profiling_fields(reference):
    project, models = _dashboards(csv=reference / "dcgm" / "testdata-default-counters.csv")
    titles = {p["title"] for p in _charts(models["gpudash-by-pod"])}
    assert "GPU utilization by pod" in titles
    assert "Tensor core activity by pod" not in titles


def test_panel_ids_are_unique_and_layout_does_not_overlap():
    project, _ = _dashboards()
    subject = lint_input(project)
    assert run([r for r in RULES if r.id in ("GF008", "GF009")], subject) == []
    for dashboard in subject.grafana:
        ids = [p["id"] for p in dashboard.model["panels"]]
        assert len(ids) == len(set(ids)) and all(type(i) is int and 1 <= i <= 2**31 - 1 for i in ids)


def test_every_panel_kind_renders_schema_valid(project_dir, reference):
    dashboard = """
        from generator.model import Dashboard, Panel, Query, Row
        KINDS = ("timeseries", "stat", "gauge", "bargauge", "table", "heatmap")
        dashboard = Dashboard("kinds", "Kinds", [Row("all", [
            Panel(kind, Query("DCGM_FI_DEV_GPU_UTIL", by=("node", "gpu")), kind=kind, description=kind)
            for kind in KINDS])])
    """
    project = load_project(project_dir(dashboards={"kinds.py": dashboard}))
    (rendered,) = grafana_dashboards(project)
    assert [p["type"] for p in rendered.model["panels"][1:]] == [
        "timeseries", "stat", "gauge", "bargauge", "table", "heatmap"]
    subject = lint_input(project, grafana_schema=reference / "grafana" / "schema", grafana=(rendered,))
    assert run([r for r in RULES if r.id in ("GF010", "GF003", "GF004", "GF009")], subject) == []


def _builder_panel(rendered: dict):
    """The panel the SDK's own builder for its kind writes, given the values gpudash chose (the reference
    for gpudash's panels, which are assembled from the SDK's models without the builder modules)."""
    from importlib import import_module

    from grafana_foundation_sdk.builders import common as cb, dashboard as db, prometheus
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models import common, dashboard as dm, prometheus as pm

    kind, defaults = rendered["type"], rendered["fieldConfig"]["defaults"]
    module = import_module(f"grafana_foundation_sdk.builders.{kind}")
    targets = []
    for target in rendered["targets"]:
        query = (prometheus.Dataquery().datasource(common.DataSourceRef(type_val="prometheus", uid="${datasource}"))
                 .ref_id(target["refId"]).expr(target["expr"]).legend_format(target["legendFormat"]))
        if target.get("format") == "table":
            query = query.format(pm.PromQueryFormat.TABLE)
        targets.append(query.instant() if target["instant"] else query.range())
    builder = (module.Panel().title(rendered["title"]).description(rendered["description"])
               .datasource(common.DataSourceRef(type_val="prometheus", uid="${datasource}")).targets(targets)
               .id(rendered["id"]).grid_pos(dm.GridPos(**rendered["gridPos"])))
    if kind != "heatmap":
        steps = [dm.Threshold(value=step["value"], color=step["color"]) for step in defaults["thresholds"]["steps"]]
        builder = builder.unit(defaults["unit"]).thresholds(
            db.ThresholdsConfig().mode(dm.ThresholdsMode.ABSOLUTE).steps(steps))
        for bound in ("min", "max"):
            if bound in defaults:
                builder = getattr(builder, bound)(defaults[bound])
    if kind == "timeseries":
        builder = (builder.legend(cb.VizLegendOptions().show_legend(True).display_mode(common.LegendDisplayMode.TABLE)
                                  .placement(common.LegendPlacement.BOTTOM).calcs(["mean", "max", "lastNotNull"]))
                   .tooltip(cb.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI)
                            .sort(common.SortOrder.DESCENDING))
                   .fill_opacity(10).line_width(1).span_nulls(False))
        if "thresholdsStyle" in defaults["custom"]:
            builder = builder.thresholds_style(
                cb.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.DASHED))
    elif kind in ("stat", "gauge", "bargauge"):
        builder = builder.reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
    elif kind == "table" and "transformations" in rendered:
        (organize,) = rendered["transformations"]
        builder = builder.with_transformation(dm.DataTransformerConfig(id_val="organize", options=organize["options"]))
    elif kind == "heatmap":
        builder = builder.calculate(True).y_axis(module.YAxisConfig().unit(rendered["options"]["yAxis"]["unit"]))
    model = json.loads(json.dumps(builder.build(), cls=JSONEncoder))
    if kind == "table":
        model["options"].pop("footer", None)  # left out by gpudash (Grafana 13 keeps it per field)
    return model


def test_every_panel_kind_is_what_the_sdks_panel_builder_writes(project_dir):
    dashboard = """
        from generator.model import Dashboard, Panel, Query, Row
        KINDS = ("timeseries", "stat", "gauge", "bargauge", "table", "heatmap")
        UTIL = Query("DCGM_FI_DEV_GPU_UTIL", by=("pod",))
        dashboard = Dashboard("kinds", "Kinds", [Row("all", [
            panel for kind in KINDS for panel in (
                Panel(kind + " plain", UTIL, kind=kind),
                Panel(kind + " bounded", (UTIL, Query("DCGM_FI_DEV_MEM_COPY_UTIL", aggregation="max")), kind=kind,
                      unit="percent", thresholds=(70.5, 90), min=0, max=100),
                Panel(kind + " raw", Query("DCGM_FI_DEV_GPU_UTIL", raw_promql="up"), kind=kind, min=0.5))])])
    """
    project = load_project(project_dir(dashboards={"kinds.py": dashboard}))
    # 18 per-pod panels: more than one ConfigMap applied with kubectl apply takes, so cut into parts (dashboard_parts)
    charts = [panel for rendered in grafana_dashboards(project) for panel in _charts(rendered.model)]
    assert len(charts) == 18 and any("min" in p["fieldConfig"]["defaults"] for p in charts)
    for panel in charts:
        assert panel == _builder_panel(panel), panel["title"]


def test_throttle_counters_chart_as_a_share_of_time(project_dir):
    csv = ("DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n"
           "DCGM_FI_DEV_POWER_VIOLATION, counter, Throttling duration due to power constraints (in ns).\n")
    _, models = _dashboards(project_dir(csv=csv))
    panel = next(p for p in _charts(models["gpudash-health"]) if p["title"] == "Throttled by power")
    # nanoseconds throttled per second, times 1e-9: the share of time throttled (0-1)
    assert packed(':step_seconds{gpu=~"$gpu"}[$__rate_interval]) > 0) * 1e-09 and on (') in panel["targets"][0]["expr"]
    assert panel["fieldConfig"]["defaults"]["unit"] == "percentunit"
    parse(panel["targets"][0]["expr"])


def test_a_table_names_its_columns_for_what_they_hold_whatever_the_label_mapping(tmp_path):
    """Pods on GPUs: Namespace, Pod and GPUs columns, not the raw labels (`exported_pod` on the operator's
    ServiceMonitor), Prometheus' `Value` or the instant query's `Time`."""
    config = tmp_path / "gpudash.yaml"
    for text in ("", "labels:\n  pod: exported_pod\n  namespace: exported_namespace\n"
                     "  container: exported_container\n"):
        config.write_text(text)
        _, models = _dashboards(config)
        (table,) = [p for p in _charts(models["gpudash-by-pod"]) if p["type"] == "table"]
        (organize,) = [t for t in table["transformations"] if t["id"] == "organize"]
        namespace, pod = ("exported_namespace", "exported_pod") if text else ("namespace", "pod")
        assert organize["options"]["renameByName"] == {namespace: "Namespace", pod: "Pod", "Value": "GPUs"}
        assert organize["options"]["excludeByName"] == {"Time": True}


def test_panels_alike_are_written_each_as_its_own_values_say():
    """A panel equal to one rendered before is written from that panel's data, copied: values a definition holds
    equal but JSON writes apart (80 and 80.0, 0 and 0.0, 0.0 and -0.0) are each written as given, and a model
    changed after the build changes no other dashboard's."""
    from generator.model import Dashboard, Panel, Query, Row
    from generator.render.grafana import render

    project = load_project()
    query = Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node",))
    given = [dict(thresholds=(80, 90)), dict(thresholds=(80.0, 90.0)), dict(min=0), dict(min=0.0), dict(min=-0.0),
             dict(thresholds=(80, 90))]
    models = [render(Dashboard(f"d{number}", "Temperatures", (Row("GPUs", (Panel("Hottest", (query,), **fields),)),)),
                     project.catalog, project.settings) for number, fields in enumerate(given)]
    texts = [json.dumps(_charts(model)[0]["fieldConfig"]["defaults"]) for model in models]
    assert '"value": 80,' in texts[0] and '"value": 80.0,' in texts[1]
    assert '"min": 0,' in texts[2] and '"min": 0.0,' in texts[3] and '"min": -0.0,' in texts[4]
    assert texts[5] == texts[0]
    _charts(models[5])[0]["fieldConfig"]["defaults"]["unit"] = "changed"
    _charts(models[5])[0]["targets"][0]["expr"] = "changed"
    assert _charts(models[0])[0]["fieldConfig"]["defaults"]["unit"] == "celsius"
    assert _charts(models[0])[0]["targets"][0]["expr"] != "changed"
    again = render(Dashboard("d9", "Temperatures", (Row("GPUs", (Panel("Hottest", (query,), thresholds=(80, 90)),)),)),
                   project.catalog, project.settings)
    assert again == models[0] | {"uid": again["uid"]}


def test_a_count_panel_says_it_counts_each_gpu_with_a_reading_within_the_lookback():
    """ "GPUs reporting" and "Pods on GPUs" count a GPU with a reading within the last 4 scrape intervals
    (promql.counted_within_note); the table's note on the pods named in that window does not say each GPU shows its
    latest reading, which a count does not read."""
    from generator.promql import counted_within_note

    _, models = _dashboards()
    panels = {p["title"]: p for model in models.values() for p in _charts(model)}
    for title in ("GPUs reporting", "Pods on GPUs"):
        assert counted_within_note(30) in panels[title]["description"], title
    assert "(120 s) named the pod on: a GPU pods share" in panels["Pods on GPUs"]["description"]
    assert "latest reading" not in panels["Pods on GPUs"]["description"]


def test_panels_alike_but_in_their_titles_each_say_their_own_title_where_nothing_else_describes_them():
    """A panel's description and query texts are worked out once per build for panels alike in their queries; the
    title, which a panel with nothing else to say (raw PromQL, no description) shows as its description, is each
    panel's own."""
    from generator.model import Dashboard, Panel, Query, Row
    from generator.render.grafana import render

    project = load_project()
    raw, field = Query("my_exporter_up", raw_promql="up"), Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node",))
    panels = (Panel("Up A", (raw,)), Panel("Up B", (raw,)), Panel("Hot A", (field,)), Panel("Hot B", (field,)),
              Panel("Said", (raw,), description="Own words"))
    model = render(Dashboard("alike", "Alike", (Row("GPUs", panels),)), project.catalog, project.settings)
    charts = {chart["title"]: chart for chart in _charts(model)}
    assert charts["Up A"]["description"] == "Up A" and charts["Up B"]["description"] == "Up B"
    assert charts["Said"]["description"] == "Own words"
    assert charts["Hot A"]["description"] == charts["Hot B"]["description"] != "Hot A"
    assert "DCGM_FI_DEV_GPU_TEMP" in charts["Hot A"]["description"]
    assert [t["expr"] for t in charts["Up A"]["targets"]] == ["up"]
    assert charts["Hot A"]["targets"] == charts["Hot B"]["targets"]


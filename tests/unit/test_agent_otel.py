"""The CloudWatch agent's OTel pipeline (agent.pipeline: otel): what gpudash writes, that it publishes
what the JSON path publishes but DCGM's blank values, and the lint rules that read it."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace

import pytest
import yaml

from generator import blanks, promql
from generator.artifacts import build
from generator.lint import run
from generator.lint.feed_rules import RULES
from generator.output import encode
from generator.project import load_project
from generator.render.agent_otel import MIN_AGENT_VERSION, OTEL_KEY, receiver, selects
from generator.settings import Cluster
from tests.support import kube_state
from tests.support.cloudwatch_agent import Agent, agent_config, scrape_jobs
from tests.support.cloudwatch_otel import _Condition, _unescape, datapoint_conditions, otel_config
from tests.support.dcgm_fleet import FLEET, scrapes
from tests.support.lint_input import lint_input

AGENT = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
CLASSIC = "agent:\n  pipeline: classic\n"
# Every series field per pod and per GPU (the default, used, publishes what each pipeline's own widgets query: on
# classic per pod the fields the OTel pipeline reads from a pod's totals)
ALL = "agent:\n  metric_selection: all\n"
ALL_CLASSIC = CLASSIC + "  metric_selection: all\n"
EXPORTER_DS = {"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter"}


def test_the_pipeline_sits_beside_the_json_in_the_mounted_configmap(reference):
    import jsonschema  # only where a test validates: not at every worker's collection

    agent_map, scrape_map = yaml.safe_load_all(encode(build(load_project(), grafana=False))[AGENT])
    assert agent_map["metadata"]["name"] == "prometheus-cwagentconfig"  # mounted at /etc/cwagentconfig
    assert set(agent_map["data"]) == {"cwagentconfig.json", OTEL_KEY} and OTEL_KEY.endswith(".yaml")
    assert "prometheus.yaml" in scrape_map["data"]  # the Deployment still mounts it
    config = json.loads(agent_map["data"]["cwagentconfig.json"])
    jsonschema.Draft4Validator(json.loads((reference / "cloudwatch" / "cwagent-schema.json").read_text())
                               ).validate(config)
    assert config == {"agent": {"region": "us-east-1"}}  # no pipeline of its own: nothing published twice
    otel = yaml.safe_load(agent_map["data"][OTEL_KEY])
    names = [n for section in ("receivers", "processors", "exporters") for n in otel[section]]
    names += list(otel["service"]["pipelines"])
    # no clash with the agent's own pipelines: every name's suffix is gpudash's
    assert names and all(n.split("/", 1)[1] in ("gpudash", "gpudash-gauges", "gpudash-markers", "gpudash-pods",
                                                "gpudash-unused", "gpudash-levels", "gpudash-gpus") for n in names)
    (pipeline,) = otel["service"]["pipelines"].values()
    # the exporter's staleness markers dropped before any merge (a merge takes one first at random); the pods' totals
    # (and the copies of the idle alarms' utilization and of the temperature-high alarm's temperature) are made
    # before the blank filter (a sum holding a blank is dropped whole), the unused share and the flag past the level
    # of a reading after it, the merge of a shared GPU's counters after it (its `max` would take a blank); first, each
    # level a Gauge whatever type the exporter serves it as; each node's GPUs unread (each GPU's index, then per node)
    # after metricstransform/gpudash, which takes each GPU's reading once after the filter
    assert pipeline == {"receivers": ["prometheus/gpudash"],
                        "processors": ["transform/gpudash-gauges", "filter/gpudash-markers", "metricstransform/gpudash-pods",
                                       "filter/gpudash", "transform/gpudash-unused",
                                       "transform/gpudash-levels", "metricstransform/gpudash", "transform/gpudash-gpus",
                                       "metricstransform/gpudash-gpus", "transform/gpudash", "batch/gpudash"],
                        "exporters": ["awsemf/gpudash"]}
    emf = otel["exporters"]["awsemf/gpudash"]
    assert (emf["namespace"], emf["log_group_name"], emf["region"], emf["dimension_rollup_option"]) == (
        "ContainerInsights/Prometheus", "/aws/containerinsights/gpu-cluster/prometheus", "us-east-1",
        "NoDimensionRollup")
    assert MIN_AGENT_VERSION == "1.300066.0"


def test_the_exporter_has_the_json_paths_declarations_and_units(project_dir):
    """Same namespace, dimension sets, selectors and units as the JSON path, for one cluster or three, except
    that the OTel per-instance set leaves out device counters (their merge keeps one series per physical GPU), with
    agent.metric_selection: all (with used each publishes what its own widgets query)."""
    for extra in ("", "clusters:\n  - {name: a, region: us-east-1}\n  - {name: b, region: eu-west-1}\n"):
        otel_files = encode(build(load_project(project_dir(ALL + extra))))
        classic_files = encode(build(load_project(project_dir(ALL_CLASSIC + extra))))
        for path in (p for p in otel_files if p.startswith("k8s/cwagent-prometheus-config")):
            emf = otel_config(otel_files[path])["exporters"]["awsemf/gpudash"]
            json_config, _ = agent_config(classic_files[path])
            prometheus = json_config["logs"]["metrics_collected"]["prometheus"]
            classic = prometheus["emf_processor"]
            assert emf["namespace"] == classic["metric_namespace"]
            # The per-instance set: on OTel a device counter (not a per-instance field) is published per GPU only;
            # and the OTel pipeline adds the sets of a pod's totals per scrape (the per-pod sums and counts of the
            # by-pod dashboard), which no other set publishes (their label matchers leave the totals out)
            catalog = load_project(project_dir(extra)).catalog
            device = {f"^{m.name}$" for m in catalog if m.is_counter and not m.per_instance}
            assert device
            totals = [d for d in emf["metric_declarations"] if "pod_total" in d["dimensions"][0]
                      or "pod_gpus" in d["dimensions"][0]]
            # and the exporter targets' scrapes that brought no DCGM sample, per node (the data-missing rule's second
            # alarm; the JSON path drops the scrape's own series)
            up = [d for d in emf["metric_declarations"]
                  if d["metric_name_selectors"] == ["^scrape_samples_post_metric_relabeling$"]]
            assert [d["dimensions"] for d in up] == [[["ClusterName", "node"]]]
            # and each node's GPUs unread below its highest index (the GPU stopped reporting rule's alarm; the JSON
            # path has no processor to count them: lint AL027)
            unread = [d for d in emf["metric_declarations"] if d["metric_name_selectors"] == ["^gpudash_gpus_unread$"]]
            assert [d["dimensions"] for d in unread] == [[["ClusterName", "node"]]]
            up += unread
            # and the points it makes at the agent in sets of their own, where the JSON path reads the field itself:
            # a GPU's readings once per scrape ([ClusterName, readings], the fleet's values past their LIMIT; classic
            # reads [ClusterName]) and a share's unused share (the idle alarms' sets and `share`)
            made = [d for d in emf["metric_declarations"] if {"readings", "share", "node_mean"} & set(d["dimensions"][0])
                    or "above 80" in d["dimensions"][0]]
            assert {tuple(d["dimensions"][0]) for d in made} >= {("ClusterName", "readings"),
                                                                 ("ClusterName", "node", "node_mean")}
            # each node's total and count of its GPUs' readings once (the fleet's values now, per node), of the
            # fields read once per GPU for them, each kind where a widget reads it (power: its total alone); classic
            # reads one series per GPU, no such set
            nodes = [d for d in made if "node_mean" in d["dimensions"][0]]
            (once,) = [d for d in made if d["dimensions"][0] == ["ClusterName", "readings"]]
            kinds = {s: d["label_matchers"][0]["regex"] for d in nodes for s in d["metric_name_selectors"]}
            assert set(kinds) <= set(once["metric_name_selectors"]), nodes
            assert {k: v for k, v in kinds.items() if k in ("^DCGM_FI_DEV_GPU_TEMP$", "^DCGM_FI_DEV_POWER_USAGE$")} \
                == {"^DCGM_FI_DEV_GPU_TEMP$": "^(?:sum|count)$", "^DCGM_FI_DEV_POWER_USAGE$": "^(?:sum)$"}

            def read_as(declarations, dims_of, selectors_of) -> dict:
                result: dict = {}
                for d in declarations:
                    dims = tuple(x for x in dims_of(d) if x not in ("readings", "share", "above 80"))
                    result.setdefault(dims, set()).update(selectors_of(d))
                return result
            assert read_as([d for d in emf["metric_declarations"] if d not in totals + up + nodes],
                           lambda d: d["dimensions"][0], lambda d: d["metric_name_selectors"]) == read_as(
                classic["metric_declaration"], lambda d: d["dimensions"][0],
                lambda d: [s for s in d["metric_selectors"] if "GPU_I_ID" not in d["dimensions"][0] or s not in device])
            assert {tuple(d["dimensions"][0][-2:]) for d in totals} == {("pod", "pod_total"), ("pod", "pod_gpus")}
            assert all(d["label_matchers"] == [{"label_names": ["above 80", "node_mean", "pod_gpus", "pod_total",
                                                                "readings", "share"], "separator": ";",
                                                "regex": "^;;;;;$"}]
                       for d in emf["metric_declarations"] if d not in totals + made)
            assert {d["metric_name"]: d["unit"] for d in emf["metric_descriptors"]} == classic["metric_unit"]
            assert emf["log_group_name"] == prometheus["log_group_name"]
            jobs = scrape_jobs(otel_files[path])
            assert {j: [r for r in job["relabel_configs"] if r.get("target_label") == "ClusterName"]
                    for j, job in jobs.items()} == {j: [{"target_label": "ClusterName", "action": "replace",
                                                         "replacement": prometheus["cluster_name"]}] for j in jobs}


def test_dollar_signs_are_written_as_the_collector_reads_them():
    """The agent expands `$` in its collector configuration twice (the confmap resolver's `$$`, then the
    expandconverter's os.Expand): a relabel replacement `$1` written `$$1` would reach Prometheus empty."""
    scrape = {"scrape_configs": [{"job_name": "j", "relabel_configs": [
        {"source_labels": ["__address__"], "regex": "([^:]+)(?::\\d+)?$", "target_label": "host",
         "replacement": "$1"}, {"source_labels": ["a", "b"], "regex": "(.*);(.*)", "target_label": "ab",
                                "replacement": "${1}-$$2"}]}]}
    written = receiver(scrape, Cluster("c", "us-east-1"))["config"]
    rule = written["scrape_configs"][0]["relabel_configs"][0]
    assert (rule["replacement"], rule["regex"]) == ("$$$$1", "([^:]+)(?::\\d+)?$$")
    read = _unescape(written)["scrape_configs"][0]["relabel_configs"]
    assert read[1] == scrape["scrape_configs"][0]["relabel_configs"][1]
    assert _unescape("$$1") == "" and _unescape("$1") == ""  # one escape is not enough, none neither
    assert read[0] == scrape["scrape_configs"][0]["relabel_configs"][0]
    assert read[2] == {"target_label": "ClusterName", "replacement": "c", "action": "replace"}


def test_the_filters_floors_are_the_floors_of_the_promql_side(project_dir):
    """One source: a field's sample is a blank at the floor PromQL compares it with (blanks.py)."""
    assert float(promql.BLANK_FLOOR) == blanks.reading_floor(False) == 1e14
    assert float(promql.COUNTER_BLANK_FLOOR) == blanks.reading_floor(True) == 9e18
    project = load_project(project_dir(ALL))  # every gauge and counter of the CSV shipped
    conditions = datapoint_conditions(otel_config(encode(build(project, grafana=False))[AGENT]))

    def dropped(name, value):
        return any(condition(name, value) for condition in conditions)

    shipped = [m for m in project.catalog if m.kind in ("gauge", "counter")]
    assert shipped
    for field in shipped:
        floor = blanks.reading_floor(field.is_counter)
        assert dropped(field.name, floor) and dropped(field.name, 9223372036854775794.0), field.name
        assert not dropped(field.name, floor * 0.999), field.name
        # 0 is a reading but of a field whose 0 DCGM writes for "not supported" (memory temperature), as in PromQL
        assert dropped(field.name, 0.0) == (field.name in blanks.UNREAD_AT_ZERO), field.name
    assert not dropped("DCGM_FI_DEV_MEMORY_TEMP", 30.0)
    assert dropped("DCGM_FI_DEV_POWER_USAGE", 2.0 ** 47)  # the floating-point blank
    assert not dropped("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 5e15)  # a GPU's mJ since the driver loaded: a reading
    assert not dropped("DCGM_FI_DEV_GPU_TEMP", float("nan"))  # NaN is the exporter's (awsemf drops it)
    assert not dropped("kube_daemonset_status_desired_number_scheduled", 1e15)
    assert dropped("scrape_samples_scraped", 40.0)
    assert dropped("up", 1.0) and dropped("up", 0.0)
    # every scrape's kept sample count is published per node for the data-missing rule's second alarm (the transform
    # makes it a flag: test_each_scrape_is_published_per_node_as_a_flag_of_no_gpu_data)
    assert not dropped("scrape_samples_post_metric_relabeling", 0.0)
    assert not dropped("scrape_samples_post_metric_relabeling", 40.0) and dropped("scrape_samples_scraped", 0.0)


def test_each_scrape_is_published_per_node_as_a_flag_of_no_gpu_data():
    """The per-node alarm sums a flag per scrape: 1 for a scrape that failed or answered without a DCGM sample, 0 for
    one that brought any, so a node whose target is scraped has a data point in every period (the alarm's latest
    period decides, not older ones of its evaluation range). Through the agent model fed the generated pipeline."""
    project = load_project()
    config, job = agent_config(encode(build(project, grafana=False))[AGENT])
    node = FLEET[-1].node
    healthy = [s for s in scrapes(job, project.catalog, 0, 3) if s.target_labels["node"] == node]
    failed = replace(healthy[1], payload="")
    empty = replace(healthy[2], payload="\n")
    points = Agent(config, job).run([healthy[0], failed, empty, healthy[3]])
    flags = [(p.timestamp, p.value) for p in points if p.metric == "scrape_samples_post_metric_relabeling"]
    assert flags == [(healthy[0].timestamp, 0.0), (failed.timestamp, 1.0), (empty.timestamp, 1.0),
                     (healthy[3].timestamp, 0.0)]
    assert {p.dimensions for p in points if p.metric == "scrape_samples_post_metric_relabeling"} == {
        (("ClusterName", "gpu-cluster"), ("node", node))}


@pytest.mark.parametrize("text, name, value, expected", [
    ('metric.name == "a" and value_double >= 1.5', "a", 2.0, True),
    ('metric.name == "a" and value_double >= 1.5', "b", 2.0, False),
    ('not (value_double < 3.0) or IsMatch(metric.name, "^x")', "xy", 1.0, True),
    ('not (value_double < 3.0) or IsMatch(metric.name, "^x")', "yx", 1.0, False),
])
def test_the_models_ottl_reads_what_it_is_given(text, name, value, expected):
    assert _Condition(text)(name, value) is expected


def _device_counters_listed_per_instance(project) -> set[str]:
    """Device counters (not per-instance fields) that the JSON path's per-instance set lists."""
    config, _ = agent_config(encode(build(replace(project, settings=replace(
        project.settings, agent=replace(project.settings.agent, pipeline="classic")))))[AGENT])
    selectors = {s for d in config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]["metric_declaration"]
                 if "GPU_I_ID" in d["dimensions"][0] for s in d["metric_selectors"]}
    found = {m.name for m in project.catalog if m.is_counter and not m.per_instance and f"^{m.name}$" in selectors}
    assert found
    return found


def plain_once(p):
    """A datapoint without its mark of a GPU's reading once."""
    return (p.metric, tuple(d for d in p.dimensions if d[0] != "readings"), p.timestamp, p.value)


def test_without_blanks_both_pipelines_publish_the_same_datapoints(project_dir):
    """Names, dimension sets, units' metrics, timestamps and counter deltas: the OTel pipeline publishes exactly
    what the JSON path does when no GPU reads a blank, kube-state-metrics' two series included."""
    published = []
    for settings in (ALL, ALL_CLASSIC):
        project = load_project(project_dir(settings))
        files = encode(build(project))
        config, job = agent_config(files[AGENT])
        jobs = scrape_jobs(files[AGENT])
        ksm = jobs["gpudash-kube-state-metrics"]
        agent = Agent(config, job, [ksm])
        runs = scrapes(job, project.catalog, -1, 40) + [kube_state.scrape(ksm, t * 30.0, EXPORTER_DS, 2, 2)
                                                        for t in range(-1, 41)]
        published.append(sorted(agent.run(runs), key=lambda p: (p.metric, p.dimensions, p.timestamp)))
    otel, classic = published
    assert len(otel) > 1000 and {p.metric for p in otel} >= {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
                                                             "kube_daemonset_status_desired_number_scheduled"}
    # Classic also lists a device counter per GPU instance (each whole GPU of this fleet is one, GPU_I_ID none);
    # OTel publishes it once per physical GPU, under the per-GPU set alone: the rest is identical.
    device = _device_counters_listed_per_instance(project)
    per_instance = [p for p in classic if p.metric in device and "GPU_I_ID" in dict(p.dimensions)]
    gpus = {(g.node, str(g.index)) for g in FLEET}
    assert {(p.metric, dict(p.dimensions)["node"], dict(p.dimensions)["gpu"], dict(p.dimensions)["GPU_I_ID"])
            for p in per_instance} == {(m, node, gpu, "none") for m in device for node, gpu in gpus}
    # and the OTel pipeline's totals per scrape of each pod, in their own sets (test_cloudwatch_pod_totals.py)
    totals = [p for p in otel if {"pod_total", "pod_gpus"} & set(p.dims())]
    # and each exporter scrape's flag per node (0: it brought DCGM samples), for the data-missing rule's alarm per node
    flags = [p for p in otel if p.metric.startswith(("up", "scrape_"))]
    assert flags and {(p.metric, p.value) for p in flags} == {("scrape_samples_post_metric_relabeling", 0.0)}
    # and the points it makes at the agent where the JSON path publishes the field itself: each GPU's readings once
    # ([ClusterName, readings]; one copy per GPU here: the JSON path's [ClusterName] readings) and the idle alarms'
    # unused share (100 - each pod GPU's utilization, in the alarm's set and `share`)
    once = [p for p in otel if set(p.dims()) == {"ClusterName", "readings"}]
    # and the fleet's mean utilization's each GPU once ([ClusterName, node, gpu, readings]: a MIG GPU by its stand-in;
    # this fleet has none, so the per-GPU set's readings)
    once_per_gpu = [p for p in otel if set(p.dims()) == {"ClusterName", "node", "gpu", "readings"}]
    assert once_per_gpu and sorted(plain_once(p) for p in once_per_gpu) == sorted(
        plain_once(p) for p in classic
        if (p.metric, set(p.dims())) == ("DCGM_FI_DEV_GPU_UTIL", {"ClusterName", "node", "gpu"}))
    share = [p for p in otel if "share" in p.dims()]

    def plain(p, value=None):
        return (p.metric, tuple(d for d in p.dimensions if d[0] not in ("readings", "share")), p.timestamp,
                p.value if value is None else value)
    assert once and share
    once_metrics = {q.metric for q in once}  # (each set worked out once, not again for every classic datapoint)
    assert sorted(plain(p) for p in once) == sorted(
        plain(p) for p in classic if p.dims().keys() == {"ClusterName"} and p.metric in once_metrics)
    share_sets = {(q.metric, tuple(k for k in q.dims() if k != "share")) for q in share}
    assert sorted(plain(p, 100.0 - p.value) for p in share) == sorted(
        plain(p) for p in classic if (p.metric, tuple(p.dims())) in share_sets)
    # and the temperature-high alarm's flags past its level (1 above 80 °C, 0 not; once per GPU and scrape)
    level = [p for p in otel if "above 80" in p.dims()]
    level_sets = {(q.metric, tuple(k for k in q.dims() if k != "above 80")) for q in level}
    assert level and sorted(set((p.metric, tuple(d for d in p.dimensions if d[0] != "above 80"), p.timestamp, p.value)
                                for p in level)) == sorted(set(
        (p.metric, p.dimensions, p.timestamp, float(p.value > 80)) for p in classic
        if (p.metric, tuple(p.dims())) in level_sets))
    # and each node's total and count (negated) of its GPUs' readings once per scrape ([ClusterName, node, node_mean]:
    # the fleet's values now): the node's per-GPU readings of the field at that scrape added, and counted, each kind
    # only where a widget reads it: power's count, which "Total power draw" does not read, is neither made nor
    # published (one custom metric per GPU node billed for nothing)
    nodes = [p for p in otel if "node_mean" in p.dims()]
    node_metrics = {p.metric for p in nodes}
    gpus_read: dict = {}
    for p in classic:
        if p.metric in node_metrics and p.dims().keys() == {"ClusterName", "node", "gpu"}:
            total, count = gpus_read.get((p.metric, p.dims()["node"], p.timestamp), (0.0, 0))
            gpus_read[(p.metric, p.dims()["node"], p.timestamp)] = (total + p.value, count + 1)
    assert nodes and {(p.metric, p.dims()["node"], p.timestamp, p.dims()["node_mean"]): p.value for p in nodes} == \
        pytest.approx({(*key, kind): total if kind == "sum" else -count
                       for key, (total, count) in gpus_read.items() for kind in ("sum", "count")
                       if kind == "sum" or key[0] != "DCGM_FI_DEV_POWER_USAGE"})
    published_sets = {(p.metric, tuple(p.dims())) for p in otel}
    replaced = {p for p in classic if (p.metric, tuple(p.dims())) not in published_sets}
    # and each node's GPUs unread below its highest index (the GPU stopped reporting rule's alarm): none here
    unread = [p for p in otel if p.metric == "gpudash_gpus_unread"]
    assert unread and {p.value for p in unread} == {0.0}
    left_out = set(totals) | set(flags) | set(once) | set(once_per_gpu) | set(share) | set(level) | set(nodes) | \
        set(unread)
    instances = set(per_instance) | replaced
    assert totals and [p for p in otel if p not in left_out] == [p for p in classic if p not in instances]


# --- lint reads the pipeline that publishes -------------------------------------------------------

def _edited(project, edit):
    artifacts = build(project)
    agent = artifacts.agents[0]
    otel = copy.deepcopy(agent.otel)
    edit(otel)
    return lint_input(project, replace(artifacts, agents=(replace(agent, otel=otel), *artifacts.agents[1:])))


def _findings(subject, rule_id):
    return run([r for r in RULES if r.id == rule_id], subject)


def test_the_defaults_are_consistent():
    assert run(RULES, lint_input(load_project(), build(load_project()))) == []


def _node_kinds(otel, kinds: str, power_count: bool) -> None:
    """Power's node set published with `kinds` (its declaration's matcher), and its count made (a copy of
    temperature's) or its total not: a node's kinds as the agent published them before each was what a widget reads."""
    (declaration,) = [d for d in otel["exporters"]["awsemf/gpudash"]["metric_declarations"] if "node_mean" in
                      d["dimensions"][0] and "^DCGM_FI_DEV_POWER_USAGE$" in d["metric_name_selectors"]]
    declaration["label_matchers"] = [{"label_names": ["node_mean"], "regex": f"^(?:{kinds})$"}]
    transforms = otel["processors"]["metricstransform/gpudash"]["transforms"]
    if power_count:
        transforms += [json.loads(json.dumps(t).replace("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"))
                       for t in transforms if t.get("action") == "combine"
                       and t.get("new_name") == "gpudash.nodemean.count.DCGM_FI_DEV_GPU_TEMP"]
    else:
        transforms[:] = [t for t in transforms if t.get("new_name") != "gpudash.nodemean.sum.DCGM_FI_DEV_POWER_USAGE"]


def test_lint_names_a_node_kind_published_that_no_widget_reads_and_one_read_that_is_not_published():
    """AG001 proves a node's kinds per scrape (its total, its count of GPUs read) both ways: "Total power draw" reads
    power's node totals alone, so power's count published per node is named (a custom metric per GPU node billed for
    nothing: what the default build published since a0dfbc84), and power's total not made is an error (the widget
    reads nothing). The default build publishes neither (test_the_defaults_are_consistent)."""
    project = load_project()
    messages = [f.message for f in _findings(_edited(project, lambda otel: _node_kinds(otel, "sum|count", True)),
                                             "AG001")]
    assert messages == ["DCGM_FI_DEV_POWER_USAGE [node_mean=count] (a node's count per scrape) is published per GPU "
                        "node but no CloudWatch widget or alarm reads it: one custom metric per GPU node billed for "
                        "nothing"]
    found = _findings(_edited(project, lambda otel: _node_kinds(otel, "sum", False)), "AG001")
    assert [(f.severity, f.message) for f in found] == [
        ("error", "DCGM_FI_DEV_POWER_USAGE [node_mean=sum] is read by a CloudWatch widget or alarm but the agent of "
                  "gpu-cluster does not make and publish it: the value reads nothing")]


def test_a_job_that_does_not_attach_clustername_fails():
    def drop(otel):
        job = otel["receivers"]["prometheus/gpudash"]["config"]["scrape_configs"][1]
        job["relabel_configs"] = [r for r in job["relabel_configs"] if r.get("target_label") != "ClusterName"]

    findings = _findings(_edited(load_project(), drop), "AG002")
    assert findings and all("ClusterName is not 'gpu-cluster' on every scrape job" in f.message for f in findings)


def test_a_dropped_per_gpu_declaration_fails():
    def pods_only(otel):
        emf = otel["exporters"]["awsemf/gpudash"]
        emf["metric_declarations"] = [d for d in emf["metric_declarations"] if "gpu" not in d["dimensions"][0]]

    findings = _findings(_edited(load_project(), pods_only), "AG001")
    assert any("DCGM_FI_DEV_GPU_TEMP with dimensions [ClusterName, gpu, node] is queried" in f.message
               for f in findings)


def test_a_declaration_without_selectors_fails_and_needs_no_source_labels():
    def strip(otel):
        otel["exporters"]["awsemf/gpudash"]["metric_declarations"][0]["metric_name_selectors"] = []

    findings = _findings(_edited(load_project(), strip), "AG003")
    assert [f.message for f in findings] == ["no metric_selectors: the agent silently drops this declaration"]
    assert _findings(lint_input(load_project(), build(load_project())), "AG003") == []



def test_cost_is_the_same_on_either_pipeline(project_dir):
    """Both publish the same number of metrics (each device counter once per GPU: classic per GPU instance, a whole GPU
    one; OTel per GPU; and OTel's five totals per pod, power, framebuffer, PCIe both ways, GPUs, where classic
    publishes five more fields per pod), except that OTel publishes the exporters' scrapes without DCGM samples per GPU node (counted per GPU: 100), each node's total and count of
    GPUs read of the fleet's mean temperature and utilization, its total of power (5 per node, the kinds the widgets
    read) and one metric per cluster (the temperature of a GPU's
    readings once, beside the data-missing alarm's); both log every scraped field per
    GPU and scrape (the OTel filter drops the receiver's own up and scrape_* series, as the JSON path's scraper does,
    but a scrape without DCGM samples: none here), OTel in more events (test_cost_log_events.py): each GPU's
    counters per pod and merged, the pods' totals. The estimate differs by those alone."""
    from generator.cost import Fleet, estimates, load_prices

    fleet = Fleet(clusters=1, pods=80, churn=0, gpus=100)
    otel, classic = (estimates(load_project(project_dir(s)), fleet) for s in ("", CLASSIC))
    # Each device counter is one metric per GPU on both (classic's per-instance set, a whole GPU one instance; OTel's
    # per-GPU set), and each pod's five totals on OTel stand for the five fields classic publishes per pod. OTel's
    # per-node metric: counted per GPU; and the temperature per cluster twice on OTel (the data-missing
    # alarm's [ClusterName] and a GPU's readings once, [ClusterName, readings])
    # and a GPU's temperature flags (its utilization once, which the utilization widgets read, replaces the per-GPU
    # set's)
    # and each node's total and count of GPUs read of the fleet's mean temperature and utilization, its total of power
    # (counted per GPU: 5 x 100)
    # and the NVLink throughput per GPU, which classic leaves out with the bundled CSV (an exporter on its image's
    # default CSV serves it typed counter, whose differences the JSON path would publish)
    # and each node's GPUs unread below its highest index (counted per GPU), which the GPU stopped reporting rule's
    # alarm reads: a Metrics Insights alarm more, analyzing every GPU node (classic has none: lint AL027)
    fewer = - fleet.gpus - 1 - fleet.gpus - 5 * fleet.gpus - fleet.gpus - fleet.gpus
    assert otel.keys() == classic.keys() and otel["sources"].keys() == classic["sources"].keys()
    costed = [k for k, v in classic.items() if isinstance(v, dict) and "lines" in v]
    assert {k: v for k, v in otel.items() if k not in costed and k not in ("sources", "prometheus_only")} == \
        {k: v for k, v in classic.items() if k not in costed and k not in ("sources", "prometheus_only")}
    assert not otel["prometheus_only"] and [m.split(":")[0] for m in classic["prometheus_only"]] == \
        ["alarm 'gpu-stopped-reporting' has no CloudWatch alarm, only its Prometheus rule"]
    insights = "GPU and cluster alarms (Metrics Insights)"
    changed = 0
    for o, c in [(otel[k], classic[k]) for k in costed] + [(otel["sources"][k], classic["sources"][k])
                                                          for k in classic["sources"]]:
        metrics = [i for i, line in enumerate(c["lines"]) if line["item"] == "custom metrics"]
        if not metrics:
            assert o == c
            continue
        (i,) = metrics
        assert o["lines"][i]["quantity"] == c["lines"][i]["quantity"] - fewer
        logs = [j for j, line in enumerate(c["lines"]) if line["item"].startswith("EMF log")]
        assert len(logs) == 2 and all(o["lines"][j]["quantity"] > c["lines"][j]["quantity"] for j in logs)
        logged = sum(o["lines"][j]["monthly"] - c["lines"][j]["monthly"] for j in logs)
        (alarmed,) = [j for j, line in enumerate(c["lines"]) if line["item"] == insights]
        assert o["lines"][alarmed]["quantity"] - c["lines"][alarmed]["quantity"] == fleet.gpus  # (nodes per GPU)
        stopped = o["lines"][alarmed]["monthly"] - c["lines"][alarmed]["monthly"]
        # both under 10,000 metrics: the fewer are priced at the first tier (the free tier's first 10 in both)
        first_tier = load_prices()["rates"]["custom_metric_month"]["tiers"][0][1]
        assert o["total"] == pytest.approx(c["total"] - fewer * first_tier + logged + stopped, abs=0.01)
        # the fleet means' queries per node read a total and a count per node (nodes counted per GPU: 200 metrics
        # for the per-GPU set's 100), so a dashboard shows and analyzes more, free in the console
        (reads,) = [j for j, line in enumerate(c["lines"]) if line["item"].startswith("dashboard reads")]
        assert o["lines"][reads]["quantity"] > c["lines"][reads]["quantity"] and o["lines"][reads]["monthly"] == 0

        def same(line):  # the per-node alarm (OTel) and the per-GPU one (classic) analyze as many metrics here
            basis = re.sub(r" \([^)]* per node: every GPU node[^)]*\)", "", line["basis"]).split(
                "; these show up to")[0]
            return {**line, "basis": basis, **({"quantity": None} if line["item"].startswith("dashboard reads")
                                              else {})}
        assert [same(line) for j, line in enumerate(o["lines"]) if j not in (i, alarmed) and j not in logs] == \
            [same(line) for j, line in enumerate(c["lines"]) if j not in (i, alarmed) and j not in logs]
        changed += 1
    assert changed >= 3  # both alarm modes and the Prometheus-EMF source


def _filter_without(marker: str):
    """An edit of the agent's OTel config dropping the blank filter's conditions that hold `marker`."""
    def loosen(otel):
        conditions = otel["processors"]["filter/gpudash"]["metrics"]["datapoint"]
        otel["processors"]["filter/gpudash"]["metrics"]["datapoint"] = [c for c in conditions if marker not in c]
    return loosen


def test_a_filter_that_lets_a_fields_blanks_through_fails():
    (finding,) = _findings(_edited(load_project(), _filter_without("9.0e18")), "AG005")
    assert "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" in finding.message and finding.severity == "error"
    assert finding.where == "k8s/cwagent-prometheus-config-gpu-cluster.yaml gpudash-otel.yaml filter/gpudash"


def test_a_filter_that_lets_memory_temperatures_unsupported_0_through_fails():
    """DCGM writes 0 for memory temperature on GPUs without the sensor (blanks.UNREAD_AT_ZERO): a filter without the
    0's condition would publish it as a reading of 0 °C."""
    (finding,) = _findings(_edited(load_project(), _filter_without("value_double == 0.0")), "AG005")
    assert "DCGM_FI_DEV_MEMORY_TEMP" in finding.message and finding.severity == "error"
    assert "the 0 DCGM writes for these fields where a GPU cannot read them would reach CloudWatch" in finding.message


def test_a_filter_that_lets_a_blanks_unused_share_through_fails():
    (finding,) = _findings(_edited(load_project(), _filter_without("unused")), "AG005")
    assert "the unused share of a blank (100 less it) would reach the idle alarm" in finding.message
    assert "DCGM_FI_DEV_GPU_UTIL" in finding.message and finding.severity == "error"


def test_a_filter_that_lets_a_blanks_flag_past_a_level_through_or_runs_after_the_flags_fails():
    """A blank's copy made a flag would read 1 (9.2e18 is above every level): the temperature-high alarm would read a
    blank as a hot reading."""
    (finding,) = _findings(_edited(load_project(), _filter_without("level")), "AG005")
    assert "a blank's flag would pass the level an alarm judges every reading by" in finding.message
    assert "DCGM_FI_DEV_GPU_TEMP" in finding.message and finding.severity == "error"

    def levels_first(otel):
        (pipeline,) = otel["service"]["pipelines"].values()
        pipeline["processors"].remove("transform/gpudash-levels")
        pipeline["processors"].insert(0, "transform/gpudash-levels")
    (finding,) = _findings(_edited(load_project(), levels_first), "AG005")
    assert "transform/gpudash-levels runs before filter/gpudash" in finding.message


def test_a_nodes_total_of_framebuffer_used_with_virtual_gpus_has_no_condition_before_the_filter(tmp_path):
    """With exporter.virtual_gpus a node's total of framebuffer used is made after the blank filter from each GPU
    instance's merged reading (node_merged_totals): the filter holds no condition on it (there is no such point before
    it) and lint asks for none; a node's total of power, made before the filter, keeps its condition, and lint still
    errs without it."""
    from tests.support.projects import defined_project

    alarms = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({rule!r}, 'X', Condition(Query({field!r}, 'sum', ('node',)), '>', 1))\n"
        for rule, field in (("fb", "DCGM_FI_DEV_FB_USED"), ("power", "DCGM_FI_DEV_POWER_USAGE"))))
    project = defined_project(tmp_path, "exporter:\n  virtual_gpus: true\n", alarms=alarms)
    artifacts = build(project)
    otel = artifacts.agents[0].otel
    conditions = otel["processors"]["filter/gpudash"]["metrics"]["datapoint"]
    (node,) = [c for c in conditions if "gpudash[.]pod[.]sum-node[.]" in c]
    assert "DCGM_FI_DEV_POWER_USAGE" in node and "DCGM_FI_DEV_FB_USED" not in node, node
    made_after = [t["new_name"] for t in otel["processors"]["metricstransform/gpudash"]["transforms"]
                  if t.get("action") == "insert"]
    assert "gpudash.pod.sum-node.DCGM_FI_DEV_FB_USED" in made_after
    assert _findings(lint_input(project, artifacts), "AG005") == []
    (finding,) = _findings(_edited(project, _filter_without("sum-node")), "AG005")
    assert "DCGM_FI_DEV_POWER_USAGE" in finding.message and "DCGM_FI_DEV_FB_USED" not in finding.message


def test_a_filter_that_lets_a_pods_blank_sum_through_or_runs_before_the_totals_fails():
    (finding,) = _findings(_edited(load_project(), _filter_without("gpudash[.]pod")), "AG005")
    assert "a pod's total holding a blank would be published" in finding.message
    assert "DCGM_FI_DEV_POWER_USAGE" in finding.message and finding.severity == "error"

    def ordered(*processors):
        def edit(otel):
            (pipeline,) = otel["service"]["pipelines"].values()
            pipeline["processors"] = [*processors, "transform/gpudash", "batch/gpudash"]
        return edit

    for order, said in (
            (("filter/gpudash", "metricstransform/gpudash-pods", "metricstransform/gpudash"),
             "metricstransform/gpudash-pods runs after filter/gpudash"),
            (("metricstransform/gpudash-pods", "metricstransform/gpudash", "filter/gpudash"),
             "metricstransform/gpudash runs before filter/gpudash"),
            (("metricstransform/gpudash-pods", "transform/gpudash-unused", "filter/gpudash", "metricstransform/gpudash"),
             "transform/gpudash-unused runs before filter/gpudash")):
        # (the processors the order leaves out are named apart: the collector does not run them)
        (finding, unrun) = _findings(_edited(load_project(), ordered(*order)), "AG005")
        assert unrun.where.endswith("service.pipelines") and "filter/gpudash-markers" in unrun.message
        assert said in finding.message


def test_a_pipeline_publishing_each_scrapes_sample_count_unflagged_fails():
    """The per-node alarm sums each scrape's flag; without the transform it would sum sample counts (hundreds per
    window) and fire on every healthy node."""
    def unflagged(otel):
        (pipeline,) = otel["service"]["pipelines"].values()
        pipeline["processors"].remove("transform/gpudash")

    def edited(otel):
        otel["processors"]["transform/gpudash"]["metric_statements"][0]["statements"].pop()

    for edit in (unflagged, edited):
        findings = _findings(_edited(load_project(), edit), "AG005")
        (finding,) = [f for f in findings if not f.where.endswith("service.pipelines")]
        assert "would sum sample counts" in finding.message and finding.severity == "error"
        assert finding.where.endswith("transform/gpudash")
        # left out of the pipeline, the transform is also named as not run
        assert [f.message.split(" is defined")[0] for f in findings if f.where.endswith("service.pipelines")] == \
            (["transform/gpudash"] if edit is unflagged else [])


def test_a_counter_blank_for_longer_than_awsemfs_memory_loses_one_delta_never_sends_the_total(project_dir):
    """awsemf's cache drops a counter's last value at the first sweep (every 15 minutes from the exporter's start:
    the fork's metric_calculator.go, cleanInterval = 15 * time.Minute) that finds it 15 minutes old: a counter blank
    for 20 minutes (20.5 between its clean readings) gives no delta for its first reading back when a sweep falls in
    that gap's last 5.5 minutes, else the true increase over the gap; one blank for 30 minutes or more gives none
    whenever the sweeps fall; every delta published is a true increase, never the counter's total."""
    files = encode(build(load_project(project_dir(ALL))))  # energy per GPU (used: per pod only)
    config, job = agent_config(files[AGENT])
    labels = 'gpu="0",UUID="GPU-0",Hostname="h",pod="p",namespace="ml"'

    def payload(k):
        value = 9223372036854775794 if 10 <= k < 50 else k * 4_500_000
        return f"# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n" \
               f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {value}\n"

    from tests.support.cloudwatch_agent import Scrape
    from tests.support.dcgm_fleet import target_labels

    runs = [Scrape(k * 30.0, payload(k), target_labels(job, "ip-10-0-1-1")) for k in range(60)]
    outcomes = {}
    for phase in (0.0, 300.0):  # sweeps at 900 s, 1,800 s, ... or at 300 s, 1,200 s, 2,100 s, ...
        agent = Agent(config, job)
        agent.sweep_phase = phase
        outcomes[phase] = sorted((p.timestamp, p.value) for p in agent.run(runs) if ("gpu", "0") in p.dimensions)
    # the sweep at 900 s finds the value of k = 9 (270 s) 630 s old, the next is at 1,800 s: k = 50 (1,500 s) gives
    # its increase since k = 9
    assert outcomes[0.0] == [(k * 30.0, 4_500_000.0 * (41 if k == 50 else 1)) for k in (*range(1, 10), *range(50, 60))]
    # the sweep at 1,200 s finds it 930 s old: no delta at k = 50, a baseline again
    assert outcomes[300.0] == [(k * 30.0, 4_500_000.0) for k in (*range(1, 10), *range(51, 60))]
    late = {}
    for phase in (0.0, 300.0):  # back at k = 70 (2,100 s): the sweep at 1,800 s (1,530 s old) or 1,200 s took it
        agent = Agent(config, job)
        agent.sweep_phase = phase
        back = [Scrape(k * 30.0, payload(k) if k < 10 or k >= 70 else payload(10), runs[0].target_labels)
                for k in range(80)]
        late[phase] = sorted((p.timestamp, p.value) for p in agent.run(back) if ("gpu", "0") in p.dimensions)
    assert late[0.0] == late[300.0] == [(k * 30.0, 4_500_000.0) for k in (*range(1, 10), *range(71, 80))]


# The keys each component of the pipeline accepts (mapstructure tags of the amazon-contributing fork the agent
# builds, v0.103 base: exporter/awsemfexporter config.go and metric_declaration.go with internal/aws/awsutil
# AWSSessionSettings squashed in; processor/filterprocessor config.go; receiver/prometheusreceiver config.go;
# the collector's batchprocessor; contrib's processor/metricstransformprocessor config.go, the same keys from
# v0.103 to v0.124.1, which the agent bundles from 1.300066.0 on). The collector refuses to start on any other key.
ACCEPTED = {
    "awsemf": {"num_workers", "endpoint", "request_timeout_seconds", "max_retries", "no_verify_ssl", "proxy_address",
               "region", "local_mode", "resource_arn", "role_arn", "profile", "shared_credentials_file",
               "certificate_file_path", "imds_retries", "log_group_name", "log_stream_name", "namespace",
               "retain_initial_value_of_delta_metric", "dimension_rollup_option", "log_retention", "tags",
               "parse_json_encoded_attr_values", "metric_declarations", "metric_descriptors", "output_destination",
               "eks_fargate_container_insights_enabled", "enhanced_container_insights", "disable_metric_extraction",
               "resource_to_telemetry_conversion", "detailed_metrics", "version", "middleware"},
    "awsemf.metric_declarations": {"dimensions", "metric_name_selectors", "label_matchers"},
    "awsemf.metric_descriptors": {"metric_name", "unit", "overwrite"},
    "filter": {"error_mode", "metrics", "logs", "spans", "traces"},
    "filter.metrics": {"include", "exclude", "regexp", "metric", "datapoint"},
    "metricstransform": {"transforms"},
    "metricstransform.transforms": {"include", "match_type", "experimental_match_labels", "action", "new_name",
                                    "group_resource_labels", "aggregation_type", "submatch_case", "operations"},
    # processor/transformprocessor config.go (Config, common.ContextStatements)
    "transform": {"error_mode", "trace_statements", "metric_statements", "log_statements", "flatten_data"},
    "transform.metric_statements": {"context", "conditions", "statements", "error_mode", "shared_cache"},
    "batch": {"timeout", "send_batch_size", "send_batch_max_size", "metadata_keys", "metadata_cardinality_limit"},
    "prometheus": {"config", "trim_metric_suffixes", "use_start_time_metric", "start_time_metric_regex",
                   "report_extra_scrape_metrics", "target_allocator"},
}
EMF_UNITS = {"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
             "Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second",
             "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second",
             "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second", "Count/Second", "None"}


def test_every_key_is_one_the_agents_components_accept_and_prometheus_reads_the_receivers_jobs(
        project_dir, tmp_path):
    """A misspelt or unknown key stops the agent's collector at start (nothing is published): every key of the
    pipeline is one its component accepts, every unit one awsemf keeps (it drops a descriptor of another unit,
    silently), and the receiver's Prometheus configuration, as the agent reads it, passes promtool."""
    import subprocess

    from tests.support.prometheus_server import binary, for_file_sd

    files = encode(build(load_project(project_dir("clusters:\n  - {name: a, region: us-east-1}\n"
                                                  "  - {name: b, region: eu-west-1}\n"))))
    paths = [p for p in files if p.startswith("k8s/cwagent-prometheus-config")]
    assert len(paths) == 2
    for path in paths:
        config = otel_config(files[path])
        assert set(config) == {"receivers", "processors", "exporters", "service"}
        for section in ("receivers", "processors", "exporters"):
            for name, component in config[section].items():
                kind = name.split("/")[0]
                assert set(component) <= ACCEPTED[kind], (name, set(component) - ACCEPTED[kind])
                for key, value in component.items():
                    nested = ACCEPTED.get(f"{kind}.{key}")
                    for item in (value if isinstance(value, list) else [value]) if nested else ():
                        assert set(item) <= nested, (name, key, set(item) - nested)
        emf = config["exporters"]["awsemf/gpudash"]
        assert {d["unit"] for d in emf["metric_descriptors"]} <= EMF_UNITS
        prometheus = config["receivers"]["prometheus/gpudash"]["config"]
        sd_file = tmp_path / "targets.json"
        sd_file.write_text("[]")
        prometheus["scrape_configs"] = [for_file_sd(job, [str(sd_file)]) for job in prometheus["scrape_configs"]]
        written = tmp_path / "receiver.yml"
        written.write_text(yaml.safe_dump(prometheus))
        result = subprocess.run([binary("promtool"), "check", "config", str(written)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


def test_a_counters_first_value_sent_as_its_delta_would_fail_the_comparison(project_dir):
    """The model reads awsemf's options it implements: with retain_initial_value_of_delta_metric a counter's
    first scrape publishes its whole running total, which the JSON path never does."""
    project = load_project(project_dir(""))
    files = encode(build(project))
    text = files[AGENT].decode() if isinstance(files[AGENT], bytes) else files[AGENT]
    edited = text.replace("retain_initial_value_of_delta_metric: false", "retain_initial_value_of_delta_metric: true")
    assert edited != text
    config, job = agent_config(edited)
    one_scrape = scrapes(job, project.catalog, 20, 20)
    first = [p for p in Agent(config, job).run(one_scrape) if p.metric == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
    assert first and all(p.value > 0 for p in first)  # the running total, not an increase over a scrape
    config, job = agent_config(text)
    assert not [p for p in Agent(config, job).run(one_scrape) if p.metric == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]


def test_the_models_merge_keeps_aggregateutils_order_and_flags():
    """aggregate_labels as aggregateutil.mergeNumberDataPoints does it: the points of one label set merge into
    the first, whose flags they keep; a first point without value (a staleness marker) takes nothing from the
    others, so awsemf drops the merged point and the next delta covers the gap; a marker after a reading adds
    nothing (an empty value reads 0 under math.Max); a NaN wins math.Max, and awsemf drops it."""
    from tests.support.cloudwatch_otel import _Metric, _aggregate_labels

    def merged(*values):
        points = [({"gpu": "0", "pod": f"p{i}"}, value) for i, value in enumerate(values)]
        return [value for _, value in _aggregate_labels(_Metric("c", "counter", points), ["gpu"], "max").points]

    assert merged(7.0, 7.0, None) == [7.0]
    assert merged(None, 7.0) == [None]
    assert [str(v) for v in merged(7.0, float("nan"))] == ["nan"]
    assert merged(3.0) == [3.0] and merged(2.0, 9.0) == [9.0]


def test_a_selector_naming_one_metric_selects_as_its_regex_does():
    """Selectors and label matchers of the forms generate writes (one name, `^(?:a|b)$`, `^;$`) are read without
    compiling them: each answers as Go's regexp.MatchString (whose `$` is the end of the text:
    `^DCGM_FI_DEV_GPU_UTIL$` does not select a name ending in a line break), as every other regex does."""
    from generator.go_regex_python import go_compiled
    from generator.render.agent_otel import matched_by

    names = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL\n", "DCGM_FI_DEV_GPU_UTILX", "XDCGM_FI_DEV_GPU_UTIL", "",
             "scrape_samples_post_metric_relabeling", "a", "sum", "count", "sum\n", "sumcount", "sum|count", ";", ";;",
             "\u0130", "K"]
    selectors = ["^DCGM_FI_DEV_GPU_UTIL$", "^DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL$", "^DCGM_.*$", "^a$", "^$",
                 "^scrape_samples_post_metric_relabeling$", "^DCGM_FI_DEV_GPU_UTIL$|^a$", "^a\\$", "^(?:sum|count)$",
                 "^(?:sum)$", "^(?:sum|)$", "^(?:)$", "^sum|count$", "^(?:sum|count)", "(?:sum|count)$", "^;$", "^;;$",
                 "^(?:\u0130)$", "^(?i:k)$"]
    for selector in selectors:
        for name in names:
            go = go_compiled(selector).search(name) is not None
            assert selects(selector, name) == go, (selector, name)
            assert matched_by({"label_matchers": [{"label_names": ["node_mean"], "regex": selector}]},
                              {"node_mean": name}) == go, (selector, name)
    assert not selects("^DCGM_FI_DEV_GPU_UTIL$", "DCGM_FI_DEV_GPU_UTIL\n")



@pytest.mark.parametrize("settings", ["{}\n", CLASSIC])
def test_only_the_datapoints_an_alarm_reads_are_those_of_the_whole_run(settings):
    """An agent model given `only` (the datapoints an alarm reads, cloudwatch_eval.reads) publishes exactly the whole
    run's datapoints of those dimension sets, in the same order, counters' deltas included: the stories of 500 GPUs
    that run it judge their alarm as over every datapoint."""
    from tests.support import built, cloudwatch_eval
    from tests.support.agent_points import through_agent

    files = built.files(settings)
    whole = through_agent(files, 30, 600)
    read = [cloudwatch_eval.reads(alarm["Request"]) for alarm in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    wanted = frozenset().union(*read)
    kept = through_agent(files, 30, 600, only=wanted)
    assert kept == [p for p in whole if (p.namespace, p.metric, frozenset(n for n, _ in p.dimensions)) in wanted]
    published = {(p.namespace, p.metric, frozenset(n for n, _ in p.dimensions)) for p in kept}
    assert len(kept) < len(whole) and sum(bool(sets & published) for sets in read) >= 5  # not every set, most alarms


def test_with_virtual_gpus_a_filter_that_lets_a_gpus_blank_merged_reading_through_or_markers_after_the_merge_fails(
        tmp_path):
    """With exporter.virtual_gpus the agent picks each GPU's reading of utilization and framebuffer used (its device
    series, else its largest copy) before the blank filter, from every point, so that a device reading DCGM's blank
    makes the pick the blank, which the filter drops (the GPU has no reading at that scrape, not its pods' largest
    share); and drops those fields' staleness markers in a filter of their own before that pick."""
    from tests.support.projects import defined_project

    project = defined_project(tmp_path, "exporter:\n  virtual_gpus: true\n")
    assert _findings(lint_input(project, build(project)), "AG005") == []
    (finding,) = _findings(_edited(project, _filter_without("gpudash[.]gpu[.]")), "AG005")
    assert "a GPU whose own series reads DCGM's blank would publish the blank as its reading" in finding.message
    assert "DCGM_FI_DEV_GPU_UTIL" in finding.message and finding.severity == "error"

    def markers_last(otel):
        (pipeline,) = otel["service"]["pipelines"].values()
        pipeline["processors"].remove("filter/gpudash-markers")
        pipeline["processors"].insert(pipeline["processors"].index("filter/gpudash"), "filter/gpudash-markers")
    (finding,) = _findings(_edited(project, markers_last), "AG005")
    assert "filter/gpudash-markers runs after metricstransform/gpudash-pods" in finding.message

    def no_markers(otel):
        otel["processors"]["filter/gpudash-markers"]["metrics"]["datapoint"] = []
    (finding,) = _findings(_edited(project, no_markers), "AG005")
    assert "the marker filter lacks" in finding.message and "flags == 1" in finding.message
    assert finding.where == "k8s/cwagent-prometheus-config-gpu-cluster.yaml gpudash-otel.yaml filter/gpudash-markers"

"""The agent ConfigMaps, scrape job and ServiceMonitor, and the lint rules that keep them consistent."""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import replace

import pytest
import yaml

from generator.artifacts import build
from generator.lint import run
from generator.lint.feed_rules import RULES
from tests.support.lint_input import exporter_job_edited, lint_input
from generator.output import encode
from generator.project import load_project
from generator.render.scrape import scrape_job, service_monitor


# The generated files and the reference CRDs are read with libyaml's parser where PyYAML has it: the same documents
# as the pure-Python reader, at a fraction of its CPU (it was a fifth of this file's)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml(text):
    return yaml.load(text, Loader=_LOADER)


def _yaml_all(text):
    return list(yaml.load_all(text, Loader=_LOADER))


AGENT = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
POD_SET, GPU_SET = ["ClusterName", "namespace", "pod"], ["ClusterName", "node", "gpu"]
CLASSIC = "agent:\n  pipeline: classic\n"  # the agent's JSON path, which these tests read (test_agent_otel.py: the OTel one)
# per GPU instance (whole GPUs GPU_I_ID "none"), and per pod on MIG instances only: what MIG needs
# the idle alarms' utilization per pod and GPU it holds (on MIG per instance, with its id and profile)
INSTANCE_SET, POD_GPU_SET = (*GPU_SET, "GPU_I_ID"), (*POD_SET, "gpu")
MIG_POD_SET = (*POD_GPU_SET, "GPU_I_ID", "GPU_I_PROFILE")  # each MIG instance of a pod's GPU (the idle alarm)
MIG_INSTANCE_SET = (*INSTANCE_SET, "GPU_I_PROFILE")  # MIG instances alone, with their profile


def _agent(files, path=AGENT):
    agent_map, scrape_map = _yaml_all(files[path])
    return agent_map, json.loads(agent_map["data"]["cwagentconfig.json"]), scrape_map


CLUSTER_SET = ("ClusterName",)  # the data-missing alarm's: one GPU field of the cluster, and kube-state-metrics'
KSM_MATCHER = "^gpudash\\-kube\\-state\\-metrics$"


def _declarations(config, job_matcher="^dcgm\\-exporter$"):
    """{tuple(dimension set): declaration} of the declarations for one scrape job."""
    declarations = config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]["metric_declaration"]
    return {tuple(d["dimensions"][0]): d for d in declarations if d["label_matcher"] == job_matcher}


def _names(declaration):
    return {s.strip("^$").replace("\\", "") for s in declaration["metric_selectors"]}


def test_agent_configmaps_are_what_the_deployment_mounts(reference, project_dir):
    import jsonschema  # only where a test validates: not at every worker's collection

    agent_map, config, scrape_map = _agent(encode(build(load_project(project_dir(CLASSIC)))))
    assert (agent_map["metadata"]["name"], agent_map["metadata"]["namespace"]) == (
        "prometheus-cwagentconfig", "amazon-cloudwatch")
    assert scrape_map["metadata"]["name"] == "prometheus-config" and "prometheus.yaml" in scrape_map["data"]
    schema = json.loads((reference / "cloudwatch" / "cwagent-schema.json").read_text())
    jsonschema.Draft4Validator(schema).validate(config)
    prometheus = config["logs"]["metrics_collected"]["prometheus"]
    assert prometheus["prometheus_config_path"] == "/etc/prometheusconfig/prometheus.yaml"
    assert prometheus["emf_processor"]["metric_namespace"] == "ContainerInsights/Prometheus"
    # ClusterName is set, not read from the node's EC2 tag; the log group is named so its retention can be set.
    assert prometheus["cluster_name"] == "gpu-cluster"
    assert prometheus["log_group_name"] == "/aws/containerinsights/gpu-cluster/prometheus"
    declarations = _declarations(config)
    assert sorted(declarations) == sorted([CLUSTER_SET, tuple(POD_SET), tuple(GPU_SET), INSTANCE_SET, POD_GPU_SET,
                                           MIG_POD_SET, MIG_INSTANCE_SET])
    for declaration in declarations.values():
        assert declaration["source_labels"] == ["job"]
    # the data-missing alarm's and the PERIOD() lines' field, and the fleet values' readings past 500 GPUs
    assert _names(declarations[CLUSTER_SET]) == {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL",
                                                  "DCGM_FI_DEV_POWER_USAGE"}
    # framebuffer and the device counters whose increase or rate is read per GPU, per GPU instance; the idle
    # alarm's stand-in on MIG pods
    assert _names(declarations[INSTANCE_SET]) == {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
                                                  "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                                                  "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"}
    assert _names(declarations[POD_GPU_SET]) == {"DCGM_FI_DEV_GPU_UTIL"}
    assert _names(declarations[MIG_POD_SET]) == {"DCGM_FI_PROF_GR_ENGINE_ACTIVE"}
    # the overview's panels per MIG instance
    assert _names(declarations[MIG_INSTANCE_SET]) == {"DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}
    ksm, nodes, reads = [d for d in config["logs"]["metrics_collected"]["prometheus"]["emf_processor"][
        "metric_declaration"] if d["label_matcher"] == KSM_MATCHER]
    assert ksm["dimensions"] == [list(CLUSTER_SET)] and _names(ksm) == {
        "kube_daemonset_status_desired_number_scheduled", "kube_daemonset_status_number_available",
        "kube_daemonset_status_updated_number_scheduled"}
    # and whether a GPU node exists (the job keeps the GPU resources' capacity only)
    assert nodes["dimensions"] == [list(CLUSTER_SET)] and _names(nodes) == {"kube_node_info",
                                                                           "kube_node_status_capacity"}
    # and the desired count per kube-state-metrics pod: the agent alarm counts each pod's reads apart
    assert reads["dimensions"] == [[*CLUSTER_SET, "kube_state_metrics_pod"]] and _names(reads) == {
        "kube_daemonset_status_desired_number_scheduled"}
    jobs = [job["job_name"] for job in _yaml(scrape_map["data"]["prometheus.yaml"])["scrape_configs"]]
    assert jobs == ["dcgm-exporter", "gpudash-kube-state-metrics"]
    assert prometheus["emf_processor"]["metric_unit"]["DCGM_FI_DEV_GPU_UTIL"] == "Percent"


def test_every_cluster_gets_its_own_agent_config(project_dir):
    config = project_dir(CLASSIC + "clusters:\n  - {name: train, region: us-east-1}\n  - {name: infer, region: eu-west-1}\n")
    files = encode(build(load_project(config)))
    names = {path: _agent(files, path)[1]["logs"]["metrics_collected"]["prometheus"]["cluster_name"]
             for path in files if path.startswith("k8s/cwagent-prometheus-config")}
    assert names == {"k8s/cwagent-prometheus-config-train.yaml": "train",
                     "k8s/cwagent-prometheus-config-infer.yaml": "infer"}


def test_selectors_cover_every_series_field_and_skip_labels(project_dir):
    project = load_project(project_dir(CLASSIC + "  metric_selection: all\n"))
    for dims, declaration in _declarations(_agent(encode(build(project)))[1]).items():
        if dims in (CLUSTER_SET, INSTANCE_SET, POD_GPU_SET, MIG_POD_SET, MIG_INSTANCE_SET):
            continue  # the data-missing alarm's one field; the idle alarms' and MIG's sets carry only what they query
        assert declaration["metric_selectors"] == [f"^{m.name}$" for m in project.catalog.series()]


def test_used_selection_publishes_exactly_the_queried_sets(project_dir):
    project = load_project(project_dir(CLASSIC + "  metric_selection: used\n"))
    declarations = _declarations(_agent(encode(build(project)))[1])
    per_pod, per_gpu = _names(declarations[tuple(POD_SET)]), _names(declarations[tuple(GPU_SET)])
    per_instance = _names(declarations[INSTANCE_SET])  # a counter's increase per GPU (rows remapped) is read there only
    # (but the NVLink throughput: with the bundled CSV the exporter serves it typed counter, whose differences the
    # JSON path would publish, so no widget reads it there)
    assert per_pod | per_gpu | per_instance == project.used_metrics() - {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"}
    assert "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS" in per_instance - per_gpu
    # the data-missing alarm's and the PERIOD() lines' field, and the fleet values' readings past 500 GPUs
    assert _names(declarations[CLUSTER_SET]) == {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL",
                                                  "DCGM_FI_DEV_POWER_USAGE"}
    # Health fields are read per GPU only; the idle-pod alarm and by-pod panels per pod.
    assert "DCGM_FI_DEV_XID_ERRORS" in per_gpu and "DCGM_FI_DEV_XID_ERRORS" not in per_pod
    assert "DCGM_FI_DEV_GPU_UTIL" in per_pod and "DCGM_FI_DEV_GPU_UTIL" in per_gpu
    assert "DCGM_FI_DEV_FB_FREE" in per_pod and "DCGM_FI_DEV_FB_FREE" not in per_gpu
    assert len(per_pod | per_gpu) < len(project.catalog.series())
    assert run(RULES, _feed(project)) == []


def test_declared_namespace_and_dimensions_are_used(project_dir):
    config = project_dir(CLASSIC + "cloudwatch:\n  namespace: GPU/Custom\n  dimensions: [ClusterName, namespace, pod, container]\n"
                         "  gpu_dimensions: [ClusterName, node, gpu, modelName]\n")
    project = load_project(config)
    prometheus = _agent(encode(build(project)))[1]["logs"]["metrics_collected"]["prometheus"]
    assert prometheus["emf_processor"]["metric_namespace"] == "GPU/Custom"
    assert sorted(_declarations({"logs": {"metrics_collected": {"prometheus": prometheus}}})) == [
        CLUSTER_SET, ("ClusterName", "namespace", "pod", "container"), ("ClusterName", "namespace", "pod", "container", "gpu"),
        ("ClusterName", "namespace", "pod", "container", "gpu", "GPU_I_ID", "GPU_I_PROFILE"),
        ("ClusterName", "node", "gpu", "modelName"),
        ("ClusterName", "node", "gpu", "modelName", "GPU_I_ID"),
        ("ClusterName", "node", "gpu", "modelName", "GPU_I_ID", "GPU_I_PROFILE")]
    assert run(RULES, _feed(project)) == []


@pytest.mark.parametrize("style, meta, value, container", [
    ("gpu-operator", "__meta_kubernetes_pod_label_app", "nvidia-dcgm-exporter", "nvidia-dcgm-exporter"),
    ("helm", "__meta_kubernetes_pod_label_app_kubernetes_io_name", "dcgm-exporter", "exporter"),
    ("static", "__meta_kubernetes_pod_label_app_kubernetes_io_name", "dcgm-exporter", "dcgm-exporter"),
])
def test_scrape_job_selects_the_exporter_by_pod_label_and_port(project_dir, style, meta, value, container):
    settings = load_project(project_dir(f"exporter:\n  deployment: {style}\n")).settings
    job = scrape_job(settings)
    keep = [r for r in job["relabel_configs"] if r["action"] == "keep"]
    assert keep == [{"source_labels": [meta], "regex": value, "action": "keep"},
                    {"source_labels": ["__meta_kubernetes_pod_container_port_number"], "regex": "9400",
                     "action": "keep"}]
    assert job["metrics_path"] == "/metrics" and job["scrape_interval"] == "30s"
    assert job["metric_relabel_configs"][0] == {"source_labels": ["__name__"], "regex": "DCGM_.*", "action": "keep"}
    # what DCGM does not measure on a MIG instance is no reading: dropped there, kept on whole GPUs
    (mig,) = job["metric_relabel_configs"][1:]
    assert mig["action"] == "drop" and mig["source_labels"] == ["__name__", "GPU_I_ID"]
    assert re.fullmatch(mig["regex"], "DCGM_FI_DEV_GPU_UTIL;3") and not re.fullmatch(mig["regex"], "DCGM_FI_DEV_GPU_UTIL;")
    assert not re.fullmatch(mig["regex"], "DCGM_FI_PROF_GR_ENGINE_ACTIVE;3")
    text = json.dumps(job)
    assert "__meta_kubernetes_pod_container_name" not in text  # the blog's job dropped every target on it
    assert '"target_label": "pod"' not in text and '"target_label": "namespace"' not in text
    assert "/api/v1/metrics/prometheus" not in text


def test_service_monitor_honors_the_workload_labels():
    monitor = service_monitor(load_project().settings)
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["honorLabels"] is True and endpoint["port"] == "gpu-metrics" and endpoint["path"] == "/metrics"
    assert monitor["spec"]["selector"]["matchLabels"] == {"app": "nvidia-dcgm-exporter"}


@functools.lru_cache(maxsize=None)
def _crd_validator(reference, plural: str):
    import jsonschema  # only where a test validates: not at every worker's collection

    crd = _yaml((reference / "k8s" / "prometheus-operator" / f"monitoring.coreos.com_{plural}.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize("config", ["", "prometheus_stack:\n  release: kube-prometheus-stack\n  namespace: monitoring\n"])
def test_operator_objects_validate_against_the_crds_and_carry_the_release_label(reference, project_dir, config):
    project = load_project(project_dir(config))
    files = encode(build(project))
    for path, plural in (("k8s/servicemonitor.yaml", "servicemonitors"), ("k8s/prometheusrule.yaml", "prometheusrules")):
        documents = _yaml_all(files[path])
        assert documents and (len(documents) >= 3 or plural == "servicemonitors"), path  # a PrometheusRule a group
        for document in documents:
            errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                      for e in _crd_validator(reference, plural).iter_errors(document)]
            assert errors == [], (path, errors)
            metadata = document["metadata"]
            if config:
                assert metadata["labels"]["release"] == "kube-prometheus-stack" and metadata["namespace"] == "monitoring"
            else:
                assert "release" not in metadata["labels"] and metadata["namespace"] == "gpu-operator"
    monitor = _yaml(files["k8s/servicemonitor.yaml"])
    # the exporter stays selected in its own namespace wherever the ServiceMonitor lives
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["gpu-operator"]}


def test_crd_validation_catches_a_wrong_field(reference):
    monitor = service_monitor(load_project().settings)
    monitor["spec"]["endpoints"][0]["honorLabels"] = "yes"
    assert list(_crd_validator(reference, "servicemonitors").iter_errors(monitor))


def _feed(project, mutate=None):
    artifacts = build(project)
    if mutate:
        artifacts = mutate(artifacts)
    return lint_input(project, artifacts)


def _rule(subject, rule_id):
    return run([r for r in RULES if r.id == rule_id], subject)


def test_defaults_are_consistent():
    assert run(RULES, _feed(load_project())) == []


def _gpu_declarations(config):
    return [d for d in config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]["metric_declaration"]
            if d["dimensions"][0] == GPU_SET]


def test_a_dimension_the_scrape_job_does_not_publish_fails(project_dir):
    """An agent config edited by hand (settings refuse such a set before anything is written)."""
    def rack(config):
        for declaration in _gpu_declarations(config):
            declaration["dimensions"] = [[*declaration["dimensions"][0], "rack"]]

    findings = _rule(_feed(load_project(project_dir(CLASSIC)), lambda f: _edit_agent(f, rack)), "AG002")
    assert findings and all("'rack'" in f.message for f in findings)


def test_sets_the_agent_drops_or_cuts_fail(project_dir):
    """awsemf drops a set of more than 10 names and removes a repeated name: lint says so, and the sets
    the queries read are then not published (AG001)."""
    def eleven(config):
        for declaration in _gpu_declarations(config):
            declaration["dimensions"] = [[*declaration["dimensions"][0], *"abcdefgh"]]

    def repeated(config):
        for declaration in _gpu_declarations(config):
            declaration["dimensions"] = [[*declaration["dimensions"][0], "gpu"]]

    project = load_project(project_dir(CLASSIC))
    dropped = _feed(project, lambda f: _edit_agent(f, eleven))
    assert any("has 11 names: the agent drops a set of more than 10" in f.message for f in _rule(dropped, "AG002"))
    assert any("DCGM_FI_DEV_XID_ERRORS with dimensions [ClusterName, gpu, node]" in f.message
               for f in _rule(dropped, "AG001"))
    assert any("names gpu twice" in f.message for f in _rule(_feed(project, lambda f: _edit_agent(f, repeated)),
                                                              "AG002"))


def test_a_pod_set_without_the_workload_namespace_is_refused(project_dir, cli):
    """The blog's set names the exporter's Namespace: the same pod name in two namespaces would be one series."""
    config = project_dir("cloudwatch:\n  dimensions: [ClusterName, Namespace, Service, job, pod]\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(config.parent / "build"))
    assert code == 2
    assert "gpudash.yaml:2: cloudwatch.dimensions [ClusterName, Namespace, Service, job, pod] lacks namespace" in stderr


def _edit_agent(artifacts, edit=None, edit_scrape=None):
    """The artifact set with the first cluster's agent config (or scrape config) edited in a copy."""
    agent = artifacts.agents[0]
    config, scrape = copy.deepcopy(agent.config), copy.deepcopy(agent.scrape)
    (edit or (lambda _: None))(config)
    (edit_scrape or (lambda _: None))(scrape)
    return replace(artifacts, agents=(replace(agent, config=config, scrape=scrape), *artifacts.agents[1:]))


def test_a_per_instance_set_without_the_whole_gpu_instance_fails():
    """The agent emits a set only for samples that carry every dimension: without the GPU_I_ID its exporter job (the
    one it runs: on the OTel pipeline its receiver's) gives whole GPUs, the per-instance set would publish MIG instances
    alone and whole GPUs would vanish."""
    def without(job):
        job["metric_relabel_configs"] = [r for r in job.get("metric_relabel_configs", [])
                                         if r.get("target_label") != "GPU_I_ID"]

    assert _rule(_feed(load_project()), "AG002") == []
    (finding,) = _rule(_feed(load_project(), lambda f: exporter_job_edited(f, without)), "AG002")
    assert "the exporter job the agent runs gives whole GPUs none" in finding.message and finding.severity == "error"


def test_cluster_name_left_to_the_ec2_tag_fails(project_dir):
    def unset(config):
        del config["logs"]["metrics_collected"]["prometheus"]["cluster_name"]

    findings = _rule(_feed(load_project(project_dir(CLASSIC)), lambda f: _edit_agent(f, unset)), "AG002")
    assert findings and all("set cluster_name to 'gpu-cluster'" in f.message for f in findings)


def test_a_queried_set_the_agent_does_not_publish_fails(project_dir):
    """Dropping the per-GPU declaration leaves the fleet and health views and GPU alarms without data."""
    def pods_only(config):
        emf = config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]
        emf["metric_declaration"] = [d for d in emf["metric_declaration"] if "pod" in d["dimensions"][0]]

    findings = _rule(_feed(load_project(project_dir(CLASSIC)), lambda f: _edit_agent(f, pods_only)), "AG001")
    assert any("DCGM_FI_DEV_XID_ERRORS with dimensions [ClusterName, gpu, node]" in f.message
               and "gpudash-gpu-cluster-xid-error-critical" in f.where for f in findings)
    assert any("gpudash-gpu-cluster-overview.json 'GPUs reporting'" in f.where for f in findings)
    assert not any("gpu-idle" in f.where for f in findings)  # the per-pod set is still there


def test_used_selection_publishing_more_than_is_queried_warns(project_dir):
    def extra(config):
        for declaration in config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]["metric_declaration"]:
            if declaration["dimensions"][0] == GPU_SET:
                declaration["metric_selectors"].append("^DCGM_FI_DEV_FB_FREE$")

    project = load_project(project_dir(CLASSIC + "  metric_selection: used\n"))
    findings = _rule(_feed(project, lambda f: _edit_agent(f, extra)), "AG001")
    assert [(f.severity, f.message) for f in findings] == [
        ("warning", "DCGM_FI_DEV_FB_FREE is published with dimensions [ClusterName, gpu, node] but no CloudWatch "
                    "widget or alarm queries it (metric_selection: used)")]


def test_a_label_matcher_that_misses_the_job_fails(project_dir):
    def other_job(config):
        for declaration in config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]["metric_declaration"]:
            declaration["label_matcher"] = "^kubernetes-pods$"

    findings = _rule(_feed(load_project(project_dir(CLASSIC)), lambda f: _edit_agent(f, other_job)), "AG001")
    assert len(findings) > 10


def test_a_label_the_scrape_job_does_not_deliver_fails(project_dir):
    dashboard = """
        from generator.model import Dashboard, Panel, Query, Row
        dashboard = Dashboard("racks", "Racks", [Row("r", [Panel("by rack", Query("DCGM_FI_DEV_GPU_UTIL",
            raw_promql='avg by (rack) (DCGM_FI_DEV_GPU_UTIL{pod!=""})'), unit="percent", description="d")])])
    """
    project = load_project(project_dir(dashboards={"racks.py": dashboard}))
    findings = _rule(_feed(project), "PR001")
    assert [f.message for f in findings] == ["label 'rack' is not on the series the scrape job delivers"]


def test_a_query_reading_the_gpus_uuid_under_the_other_label_alone_fails(project_dir):
    """The exporter writes a GPU's UUID under `UUID` (`uuid` only with --use-old-namespace): a query that reads `uuid`
    alone reads nothing but across a rollout turning the flag on or off. The bundled queries read both, `UUID` with
    it, and pass."""
    dashboard = """
        from generator.model import Dashboard, Panel, Query, Row
        dashboard = Dashboard("gpus", "GPUs", [Row("r", [Panel("by GPU", Query("DCGM_FI_DEV_GPU_UTIL",
            raw_promql='avg by (uuid) (DCGM_FI_DEV_GPU_UTIL)'), unit="percent", description="d")])])
    """
    assert _rule(_feed(load_project()), "PR001") == []
    project = load_project(project_dir(dashboards={"gpus.py": dashboard}))
    assert [f.message for f in _rule(_feed(project), "PR001")] == \
        ["label 'uuid' is not on the series the scrape job delivers"]


def test_the_operators_servicemonitor_labels_are_delivered_on_every_path(project_dir):
    """labels.pod: exported_pod is the README's setting for the GPU operator's ServiceMonitor: gpudash's own
    job and ServiceMonitor then deliver the workload labels under those names too (PR002 finds nothing),
    and PR001 does not call every query wrong."""
    project = load_project(project_dir("labels:\n  pod: exported_pod\n  namespace: exported_namespace\n"
                                       "  container: exported_container\n"))
    assert _rule(_feed(project), "PR001") == []
    assert _rule(_feed(project), "PR002") == []


def test_a_label_dropped_by_the_scrape_job_fails():
    project = load_project()

    def drop_gpu(scrape):
        scrape["scrape_configs"][0]["metric_relabel_configs"].append({"regex": "gpu", "action": "labeldrop"})

    findings = _rule(_feed(project, lambda a: _edit_agent(a, edit_scrape=drop_gpu)), "PR001")
    assert findings and all("'gpu'" in f.message for f in findings)


def test_a_queried_histogram_is_not_shipped(project_dir):
    csv = "DCGM_FI_DEV_GPU_UTIL, gauge, u (in %).\nDCGM_FI_DEV_LATENCY, histogram, latency\n"
    dashboard = """
        from generator.model import Dashboard, Row
        from generator.panels import per_gpu
        dashboard = Dashboard("lat", "Latency", [Row("r", [per_gpu("DCGM_FI_DEV_LATENCY", "Latency")])])
    """
    project = load_project(project_dir(csv=csv, dashboards={"lat.py": dashboard}))
    (finding,) = _rule(_feed(project), "AG001")
    assert "DCGM_FI_DEV_LATENCY" in finding.message and "histograms" in finding.message


def test_a_declaration_without_selectors_fails(project_dir):
    def strip(config):
        config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]["metric_declaration"][0][
            "metric_selectors"] = []

    findings = _rule(_feed(load_project(project_dir(CLASSIC)), lambda f: _edit_agent(f, strip)), "AG003")
    assert [f.message for f in findings] == ["no metric_selectors: the agent silently drops this declaration"]


def test_a_scrape_path_that_does_not_rename_to_exported_pod_fails(project_dir):
    """A ServiceMonitor that keeps `pod` while every query reads `exported_pod` is an error naming the file."""
    project = load_project(project_dir("labels:\n  pod: exported_pod\n"))

    def keep_pod(artifacts):
        endpoint = artifacts.service_monitor["spec"]["endpoints"][0]
        endpoint["metricRelabelings"] = endpoint["metricRelabelings"][:1]
        return artifacts

    assert _rule(_feed(project), "PR002") == []
    (finding,) = _rule(_feed(project, keep_pod), "PR002")
    assert (finding.severity, finding.where) == ("error", "k8s/servicemonitor.yaml")
    assert "'pod' label arrives as 'pod', but labels: queries 'exported_pod'" in finding.message


@pytest.mark.parametrize("labels, warned, line", [
    ("  pod: exported_pod\n  namespace: namespace\n  container: exported_container\n", "labels.namespace", 3),
    ("  pod: exported_pod\n", "labels.namespace", 2),  # namespace and container left at their defaults
    ("  namespace: exported_namespace\n", "labels.pod", 2),
    ("  pod: exported_pod\n  namespace: exported_namespace\n  container: exported_container\n", None, 0),
])
def test_settings_reading_some_workload_labels_renamed_and_others_not_are_warned(labels, warned, line, project_dir,
                                                                                 cli):
    """The GPU operator's ServiceMonitor renames all three workload labels (its targets carry the exporter pod's
    own): a label read unrenamed beside renamed ones is the exporter's there. generate and lint warn (PR003) at
    the key, with the fix; they still build and pass (a scrape job of one's own may rename only some)."""
    config = project_dir(f"labels:\n{labels}")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(config.parent / "build"))
    assert code == 0, stderr
    code, stdout, _ = cli("lint", "--config", str(config), "--from", str(config.parent / "build"))
    assert code == 0
    if warned is None:
        assert "PR003" not in stdout + stderr
        return
    assert f"warning: {config}:{line}: " in stderr and f"but {warned}: " in stderr, stderr
    assert f"fix: write {warned}: exported_" in stderr
    (found,) = [text for text in stdout.splitlines() if text.startswith("PR003")]
    assert f"PR003 warning: {config}:{line}: " in found and f"fix: write {warned}: exported_" in found


def test_static_per_pod_alarms_with_no_pod_listed_are_warned(project_dir, cli):
    """alarms.per_pod: static with no static_pods makes no CloudWatch alarm of the per-pod rules (their Prometheus
    rules still watch every pod): generate says so at the setting, with the fix, and names the rules left out."""
    import json

    config = project_dir("alarms:\n  per_pod: static\n")
    out = config.parent / "build"
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(out))
    assert code == 0, stderr
    names = {a["Request"]["AlarmName"] for a in json.loads((out / "cloudwatch" / "alarms.json").read_text())["alarms"]}
    assert not any("idle" in name or "framebuffer" in name for name in names), names
    assert f"warning: {config}:2: alarms.per_pod: static with no alarms.static_pods" in stderr, stderr
    assert "framebuffer-full" in stderr and "gpu-idle" in stderr
    listed = project_dir("alarms:\n  per_pod: static\n  static_pods: [ml/train-0]\n")
    code, _, stderr = cli("generate", "--config", str(listed), "--out", str(listed.parent / "build"))
    assert code == 0 and "static_pods" not in stderr, stderr


def test_a_helm_exporter_without_its_daemonset_name_is_noted(project_dir, cli):
    """exporter.deployment: helm reads the DaemonSet dcgm-exporter unless exporter.daemonset names another, and the
    chart names it <release>-dcgm-exporter: generate says so at the setting, with the command that shows the name;
    written, nothing is said."""
    config = project_dir("exporter:\n  deployment: helm\n  namespace: monitoring\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(config.parent / "build"))
    assert code == 0, stderr
    assert (f"note: {config}:2: exporter.deployment: helm without exporter.daemonset: the CloudWatch data-missing alarm "
            f"reads kube-state-metrics' counts of the DaemonSet monitoring/dcgm-exporter") in stderr, stderr
    assert "kubectl -n monitoring get ds -l app.kubernetes.io/name=dcgm-exporter" in stderr
    named = project_dir("exporter:\n  deployment: helm\n  daemonset: gpu-metrics-dcgm-exporter\n")
    code, _, stderr = cli("generate", "--config", str(named), "--out", str(named.parent / "build"))
    assert code == 0 and "exporter.daemonset" not in stderr, stderr


def test_a_daemonset_name_nothing_reads_is_noted_and_a_helm_note_names_the_clusters_without_one(project_dir, cli):
    """exporter.daemonset and clusters[].exporter.daemonset feed only the CloudWatch agent's data-missing alarm: on
    the Container Insights source, or with alarms.expected_gpus: none, generate accepted them and wrote them nowhere,
    without a word. And with helm, one cluster naming its DaemonSet and another not, the helm note now names the
    cluster it is about."""
    clusters = ("clusters:\n  - {name: ml-a, region: us-east-1, exporter: {daemonset: gpu-metrics-dcgm-exporter}}\n"
                "  - {name: ml-b, region: us-east-1}\n")
    for extra, why in (("cloudwatch:\n  source: container-insights\n", "Container Insights add-on's own exporter"),
                       ("alarms:\n  expected_gpus: none\n", "alarms.expected_gpus: none")):
        config = project_dir(clusters + "exporter:\n  deployment: helm\n" + extra)
        code, _, stderr = cli("generate", "--config", str(config), "--out", str(config.parent / "build"))
        assert code == 0, stderr
        assert (f"note: {config}:2: clusters[0].exporter.daemonset is written but nothing generated reads it: "
                in stderr and why in stderr), stderr
    config = project_dir(clusters + "exporter:\n  deployment: helm\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(config.parent / "build"))
    assert code == 0 and "nothing generated reads it" not in stderr, stderr
    assert ("exporter.deployment: helm without exporter.daemonset (clusters without clusters[].exporter.daemonset: "
            "ml-b)") in stderr, stderr


def test_the_helm_note_names_each_clusters_namespace(project_dir, cli):
    """Two clusters run the chart's exporter in namespaces of their own without naming its DaemonSet: each one's alarm
    reads dcgm-exporter in its own namespace. The note said both read monitoring/dcgm-exporter and showed the kubectl
    command for monitoring alone (the first cluster's), so the second cluster's person looked in a namespace it lacks."""
    config = project_dir("clusters:\n  - {name: x, region: us-east-1, exporter: {deployment: helm, namespace: monitoring}}\n"
                         "  - {name: y, region: us-east-1, exporter: {deployment: helm, namespace: dcgm}}\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(config.parent / "build"))
    assert code == 0, stderr
    assert ("reads kube-state-metrics' counts of the DaemonSets monitoring/dcgm-exporter (cluster x) and "
            "dcgm/dcgm-exporter (cluster y), which the chart names so only for a release named dcgm-exporter") in stderr
    assert ("(`kubectl -n monitoring get ds -l app.kubernetes.io/name=dcgm-exporter` (cluster x); "
            "`kubectl -n dcgm get ds -l app.kubernetes.io/name=dcgm-exporter` (cluster y); `gpudash verify` names it)"
            ) in stderr, stderr


POOLS = ("exporter:\n  deployment: helm\n  namespace: monitoring\n  daemonset: gpu-metrics-pool-a\n"
         "  more_daemonsets: [gpu-metrics-pool-b, gpu-pools/pool-c-dcgm-exporter]\n")
DAEMONSET_SET = ["ClusterName", "namespace", "daemonset"]


def _kept(job: dict, labels: dict[str, str]) -> bool:
    """Whether the job's metric_relabel_configs keep a sample of `labels` (keep rules, fully anchored)."""
    return all(re.fullmatch(rule["regex"], ";".join(labels.get(n, "") for n in rule["source_labels"]))
               for rule in job["metric_relabel_configs"] if rule["action"] == "keep")


@pytest.mark.parametrize("pipeline", ["classic", "otel"])
def test_several_exporter_daemonsets_are_kept_and_published_apart(project_dir, pipeline):
    """exporter.more_daemonsets (a release per node pool, one in another namespace): the kube-state-metrics job keeps
    the counts of each named DaemonSet and no other's, the agent publishes them per DaemonSet ([ClusterName,
    namespace, daemonset]: in [ClusterName] they would mix), the exporter job scrapes the other namespace too, and
    lint finds each DaemonSet's alarm reading what the agent publishes."""
    from generator.render.agent_otel import OTEL_KEY, publishing

    project = load_project(project_dir(f"agent:\n  pipeline: {pipeline}\n" + POOLS))
    files = encode(build(project))
    agent_map, scrape_map = _yaml_all(files[AGENT])
    if pipeline == "otel":
        emf = publishing(_yaml(agent_map["data"][OTEL_KEY]))["emf_processor"]
    else:
        emf = json.loads(agent_map["data"]["cwagentconfig.json"])["logs"]["metrics_collected"]["prometheus"][
            "emf_processor"]
    ksm, reads = [d for d in emf["metric_declaration"] if "kube_daemonset" in "".join(d["metric_selectors"])]
    assert ksm["dimensions"] == [DAEMONSET_SET]
    assert reads["dimensions"] == [[*DAEMONSET_SET, "kube_state_metrics_pod"]]  # the agent alarm's, per pod
    jobs = {j["job_name"]: j for j in _yaml(scrape_map["data"]["prometheus.yaml"])["scrape_configs"]}
    named = [("monitoring", "gpu-metrics-pool-a"), ("monitoring", "gpu-metrics-pool-b"),
             ("gpu-pools", "pool-c-dcgm-exporter")]
    others = [("kube-system", "aws-node"), ("monitoring", "gpu-metrics-pool-bb"), ("gpu-pools", "gpu-metrics-pool-a")]
    for metric in ("kube_daemonset_status_desired_number_scheduled", "kube_daemonset_status_number_available"):
        assert [_kept(jobs["gpudash-kube-state-metrics"], {"__name__": metric, "namespace": ns, "daemonset": ds})
                for ns, ds in named + others] == [True] * 3 + [False] * 3
    assert jobs["dcgm-exporter"]["kubernetes_sd_configs"][0]["namespaces"]["names"] == ["monitoring", "gpu-pools"]
    alarms = [i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    assert sorted(r["AlarmName"] for r in alarms if "-gpu-data-missing-critical" in r["AlarmName"]) == [
        f"gpudash-gpu-cluster-gpu-data-missing-critical-{ns}-{ds}" for ns, ds in sorted(named)]
    assert run(RULES, _feed(project)) == []


def test_an_alarm_on_a_daemonset_the_agent_does_not_keep_fails(project_dir):
    """The kube-state-metrics job edited so it no longer keeps pool b's counts: its alarm would read nothing and stay
    in ALARM. AG001 names the alarm and the DaemonSet."""
    def without_pool_b(scrape):
        (job,) = [j for j in scrape["scrape_configs"] if j["job_name"] == "gpudash-kube-state-metrics"]
        for rule in job["metric_relabel_configs"]:
            rule["regex"] = rule["regex"].replace("|monitoring;gpu\\-metrics\\-pool\\-b", "")

    findings = _rule(_feed(load_project(project_dir(CLASSIC + POOLS)), lambda f: _edit_agent(f, None, without_pool_b)),
                     "AG001")
    assert [f.message for f in findings] == [
        "reads kube_daemonset_status_desired_number_scheduled of the DaemonSet monitoring/gpu-metrics-pool-b, which "
        "the kube-state-metrics job of k8s/cwagent-prometheus-config-gpu-cluster.yaml does not keep: the alarm never "
        "gets its counts"]
    assert findings[0].where.endswith("gpudash-gpu-cluster-gpu-data-missing-critical-monitoring-gpu-metrics-pool-b")


@pytest.mark.parametrize("dropped, metric", [
    ("|kube_node_info;;;|kube_node_status_capacity;;;nvidia_com_(gpu|mig)(_.+)?", "kube_node_info"),
    ("|kube_node_status_capacity;;;nvidia_com_(gpu|mig)(_.+)?", "kube_node_status_capacity of nvidia_com_gpu")],
    ids=["both node series", "the GPU capacity"])
def test_an_alarm_on_node_series_the_agent_does_not_keep_fails(project_dir, dropped, metric):
    """The kube-state-metrics job edited so it no longer keeps the node series that say whether a GPU node exists: the
    alarm would read a cluster without any GPU node's capacity, a missing exporter DaemonSet no missing data there,
    wherever the DaemonSet is deleted. AG001 names the alarm and the series."""
    def without(scrape):
        (job,) = [j for j in scrape["scrape_configs"] if j["job_name"] == "gpudash-kube-state-metrics"]
        for rule in job["metric_relabel_configs"]:
            assert dropped in rule["regex"]
            rule["regex"] = rule["regex"].replace(dropped, "")

    assert _rule(_feed(load_project(project_dir(CLASSIC))), "AG001") == []
    findings = _rule(_feed(load_project(project_dir(CLASSIC)), lambda f: _edit_agent(f, None, without)), "AG001")
    assert [f.message for f in findings] == [
        f"reads {metric}, which the kube-state-metrics job of k8s/cwagent-prometheus-config-gpu-cluster.yaml does not "
        "keep: the alarm reads a missing exporter DaemonSet as deleted where no GPU node is"]
    assert findings[0].where.endswith("gpudash-gpu-cluster-gpu-data-missing-critical")


@pytest.mark.parametrize("shared", [False, True], ids=["a Prometheus per cluster", "one Prometheus for both"])
def test_the_rule_reads_the_named_daemonsets_each_prometheus_holds(project_dir, shared):
    """With several exporter DaemonSets named, the rule fires for a named one whose counts are gone, as its alarm: on a
    shared Prometheus each cluster's with its label; with one rules file for each cluster's Prometheus each one any
    cluster names, where that Prometheus holds a DaemonSet only clusters naming it name, or no exporter DaemonSet at
    all (pool b and pool c, which cluster one alone lists, each the other's evidence; pool a, which both name, needs
    none; judged ungated, a DaemonSet one cluster lists would fire in the other's Prometheus for good)."""
    labels = (", prometheus_label: a", ", prometheus_label: b") if shared else ("", "")
    project = load_project(project_dir(
        f"clusters:\n  - {{name: one, region: us-east-1{labels[0]}}}\n"
        f"  - {{name: two, region: us-east-1{labels[1]}, exporter: {{more_daemonsets: []}}}}\n" + POOLS))
    rules = " ".join(r["expr"] for g in _yaml(encode(build(project, grafana=False))["prometheus/rules.yaml"])["groups"]
                     for r in g["rules"])
    # each read in `namespace` (kube-state-metrics scraped with honorLabels) and in `exported_namespace` (without)
    read = sorted({m.replace(', exported_namespace=""', "") for m in re.findall(
        r"absent_over_time\(kube_daemonset_status_desired_number_scheduled\{([^}]*exported_namespace=\"\"[^}]*)\}", rules)})
    pool_a, pool_b, pool_c = ('namespace="monitoring", daemonset="gpu-metrics-pool-a"',
                              'namespace="monitoring", daemonset="gpu-metrics-pool-b"',
                              'namespace="gpu-pools", daemonset="pool-c-dcgm-exporter"')
    assert read == (sorted([f'cluster="a", {pool_a}', f'cluster="a", {pool_b}', f'cluster="a", {pool_c}',
                            f'cluster="b", {pool_a}']) if shared else [pool_c, pool_a, pool_b])
    if not shared:
        evidence = {m[0]: m[1] for m in re.findall(r'daemonset="([^"]*)"\}\[5m\]\) and on\(\) '
                                                  r'\(max_over_time\(kube_daemonset_status_desired_number_scheduled'
                                                  r'\{namespace="[^"]*", exported_namespace="", daemonset=~?"([^"]*)"',
                                                  rules)}
        assert evidence == {"gpu-metrics-pool-b": "pool-c-dcgm-exporter", "pool-c-dcgm-exporter": "gpu-metrics-pool-b"}


# The GPU operator's exporter in cluster a, with a Helm release beside it in monitoring (more_daemonsets); the Helm
# chart's exporter alone in cluster b, in its own namespace
MIXED_STYLES = ("clusters:\n  - name: a\n    region: us-east-1\n"
                "    exporter: {more_daemonsets: [monitoring/gpu-metrics-dcgm-exporter]}\n"
                "  - name: b\n    region: us-east-1\n    exporter: {deployment: helm, namespace: dcgm-exporter}\n")


def _exporter_pod(namespace: str, daemonset: str, label: tuple[str, str]) -> dict[str, str]:
    """An exporter pod as Kubernetes SD meets it."""
    return {"__meta_kubernetes_namespace": namespace, "__meta_kubernetes_pod_controller_kind": "DaemonSet",
            "__meta_kubernetes_pod_controller_name": daemonset, "__meta_kubernetes_pod_container_port_number": "9400",
            f"__meta_kubernetes_pod_label_{label[0]}": label[1]}


def _keeps(job: dict, pod: dict[str, str]) -> bool:
    from tests.support.dcgm_fleet import _relabel

    namespaces = job["kubernetes_sd_configs"][0]["namespaces"]["names"]
    return pod["__meta_kubernetes_namespace"] in namespaces and _relabel(job["relabel_configs"], pod) is not None


def test_each_clusters_agent_keeps_the_pods_of_its_own_style_and_of_each_daemonset_it_lists(project_dir):
    """Cluster b (clusters[].exporter.deployment: helm, .namespace: dcgm-exporter) keeps the chart's pods in its
    namespace, not the operator's; cluster a keeps the operator's, and the pods of the Helm release its
    more_daemonsets lists (kept by the operator's pod label alone, they were never scraped). AG007 agrees; with a's job
    keeping by the operator's label alone, AG007 names the release's pods it drops."""
    project = load_project(project_dir(MIXED_STYLES))
    jobs = {agent.cluster: next(j for j in agent.scrape["scrape_configs"] if j["job_name"] == "dcgm-exporter")
            for agent in build(project).agents}
    operator, chart = ("app", "nvidia-dcgm-exporter"), ("app_kubernetes_io_name", "dcgm-exporter")
    pods = {"a's operator exporter": _exporter_pod("gpu-operator", "nvidia-dcgm-exporter", operator),
            "a's Helm release": _exporter_pod("monitoring", "gpu-metrics-dcgm-exporter", chart),
            "b's chart exporter": _exporter_pod("dcgm-exporter", "dcgm-exporter", chart),
            "an operator exporter in b's namespace": _exporter_pod("dcgm-exporter", "nvidia-dcgm-exporter", operator),
            "an unlisted chart release in monitoring": _exporter_pod("monitoring", "other-dcgm-exporter", chart)}
    kept = {cluster: sorted(name for name, pod in pods.items() if _keeps(job, pod)) for cluster, job in jobs.items()}
    assert kept == {"a": ["a's Helm release", "a's operator exporter"], "b": ["b's chart exporter"]}
    assert _rule(_feed(project), "AG007") == []

    def by_label_alone(scrape):
        job = next(j for j in scrape["scrape_configs"] if j["job_name"] == "dcgm-exporter")
        job["relabel_configs"][0] = {"source_labels": ["__meta_kubernetes_pod_label_app"],
                                     "regex": "nvidia-dcgm-exporter", "action": "keep"}

    def in_the_job_run(artifacts):  # the OTel pipeline runs its receiver's jobs: edited alike
        agent = artifacts.agents[0]
        otel = copy.deepcopy(agent.otel)
        by_label_alone(otel["receivers"]["prometheus/gpudash"]["config"])
        return _edit_agent(replace(artifacts, agents=(replace(agent, otel=otel), *artifacts.agents[1:])),
                           edit_scrape=by_label_alone)

    findings = _rule(_feed(project, in_the_job_run), "AG007")
    assert [(f.where, f.message.split(",")[0]) for f in findings] == [
        ("k8s/cwagent-prometheus-config-a.yaml", "the exporter job of cluster a drops its pods labelled "
                                                 "app.kubernetes.io/name=dcgm-exporter")]


def test_a_fleet_of_two_exporter_styles_gets_a_servicemonitor_for_each_service(reference, project_dir, tmp_path):
    """The GPU operator's exporter in cluster a, the Helm chart's in b: servicemonitor.yaml holds a ServiceMonitor of
    the operator's Service (app=nvidia-dcgm-exporter, port gpu-metrics) and one of the chart's
    (app.kubernetes.io/name=dcgm-exporter, port metrics), in b's exporter namespace (one selecting the operator's
    alone scraped nothing of b through a ServiceMonitor); each validates against the CRD, and a build read back keeps
    both. The chart and the static manifest label and name their Service alike: one ServiceMonitor."""
    from generator.output import read, write

    project = load_project(project_dir(MIXED_STYLES))
    artifacts = build(project)
    documents = list(_yaml_all(encode(artifacts)["k8s/servicemonitor.yaml"]))
    assert [(d["metadata"]["name"], d["metadata"]["namespace"], d["spec"]["selector"]["matchLabels"],
             d["spec"]["endpoints"][0]["port"]) for d in documents] == [
        ("gpudash-dcgm-exporter", "gpu-operator", {"app": "nvidia-dcgm-exporter"}, "gpu-metrics"),
        ("gpudash-dcgm-exporter-helm", "dcgm-exporter", {"app.kubernetes.io/name": "dcgm-exporter"}, "metrics")]
    assert [list(_crd_validator(reference, "servicemonitors").iter_errors(d)) for d in documents] == [[], []]
    write(tmp_path / "build", artifacts)
    again = read(tmp_path / "build")
    assert (again.service_monitor, again.more_service_monitors) == (documents[0], (documents[1],))
    alike = load_project(project_dir("exporter:\n  deployment: helm\nclusters:\n  - {name: a, region: us-east-1}\n"
                                     "  - {name: b, region: us-east-1, exporter: {deployment: static}}\n"))
    assert len(list(_yaml_all(encode(build(alike))["k8s/servicemonitor.yaml"]))) == 1


def test_the_fleet_prometheus_job_names_each_exporter_pods_own_service(project_dir):
    """The fleet's Prometheus scrape job (additional-scrape-configs.yaml) of a two-style fleet keeps the operator's
    pods and the chart's, each with its own Service (the chart's pods were labelled Service=nvidia-dcgm-exporter)."""
    from tests.support.dcgm_fleet import _relabel

    job = scrape_job(load_project(project_dir(MIXED_STYLES)).settings)
    services = {name: (_relabel(job["relabel_configs"], pod) or {}).get("Service") for name, pod in (
        ("operator", _exporter_pod("gpu-operator", "nvidia-dcgm-exporter", ("app", "nvidia-dcgm-exporter"))),
        ("chart", _exporter_pod("dcgm-exporter", "dcgm-exporter", ("app_kubernetes_io_name", "dcgm-exporter"))))}
    assert services == {"operator": "nvidia-dcgm-exporter", "chart": "dcgm-exporter"}


def test_resource_names_the_container_insights_alarm_cannot_count_are_a_warning(project_dir, cli):
    """exporter.resource_names makes the agent's kube-state-metrics job and the Prometheus rule count nodes of a device
    plugin's own resource name as GPU nodes; on the Container Insights source the CloudWatch data-missing alarm reads
    the add-on's node_gpu_limit (nvidia.com/gpu capacity) alone, so a cluster of nvidia.com/a100 nodes is never judged
    there. generate said nothing."""
    named = "exporter:\n  resource_names: [nvidia.com/a100, nvidia.com/gpu]\n"
    config = project_dir(named + "cloudwatch:\n  source: container-insights\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(config.parent / "build"))
    assert code == 0, stderr
    assert (f"warning: {config}:2: exporter.resource_names lists nvidia.com/a100, but on the Container Insights source "
            in stderr and "raises no CloudWatch data-missing alarm" in stderr
            and "fix: publish through gpudash's agent (cloudwatch.source: prometheus-emf)" in stderr), stderr
    for quiet in (named, "cloudwatch:\n  source: container-insights\n",
                  named + "cloudwatch:\n  source: container-insights\nalarms:\n  expected_gpus: none\n"):
        config = project_dir(quiet)
        code, _, stderr = cli("generate", "--config", str(config), "--out", str(config.parent / "build"))
        assert code == 0 and "exporter.resource_names lists" not in stderr, stderr

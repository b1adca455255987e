"""The agent ConfigMaps, scrape job and ServiceMonitor, and the lint rules that keep them consistent."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from generator.artifacts import build, grafana_dashboards
from generator.lint import run
from generator.lint.feed_rules import RULES, FeedSubject
from generator.project import load_project
from generator.render.scrape import scrape_job, service_monitor


def _agent(files):
    agent_map, scrape_map = yaml.safe_load_all(files["k8s/cwagent-prometheus-config.yaml"])
    return agent_map, json.loads(agent_map["data"]["cwagentconfig.json"]), scrape_map


def _declaration(config):
    (declaration,) = config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]["metric_declaration"]
    return declaration


def test_agent_configmaps_are_what_the_deployment_mounts(reference):
    agent_map, config, scrape_map = _agent(build(load_project()))
    assert (agent_map["metadata"]["name"], agent_map["metadata"]["namespace"]) == (
        "prometheus-cwagentconfig", "amazon-cloudwatch")
    assert scrape_map["metadata"]["name"] == "prometheus-config" and "prometheus.yaml" in scrape_map["data"]
    schema = json.loads((reference / "cloudwatch" / "cwagent-schema.json").read_text())
    jsonschema.Draft4Validator(schema).validate(config)
    prometheus = config["logs"]["metrics_collected"]["prometheus"]
    assert prometheus["prometheus_config_path"] == "/etc/prometheusconfig/prometheus.yaml"
    assert prometheus["emf_processor"]["metric_namespace"] == "ContainerInsights/Prometheus"
    declaration = _declaration(config)
    assert declaration["source_labels"] == ["job"] and declaration["label_matcher"] == "^dcgm\\-exporter$"
    assert declaration["dimensions"] == [["ClusterName", "Namespace", "Service", "job", "pod"]]
    assert prometheus["emf_processor"]["metric_unit"]["DCGM_FI_DEV_GPU_UTIL"] == "Percent"


def test_selectors_cover_every_series_field_and_skip_labels():
    project = load_project()
    declaration = _declaration(_agent(build(project))[1])
    assert declaration["metric_selectors"] == [f"^{m.name}$" for m in project.catalog.series()]


def test_used_selection_ships_only_what_definitions_query(project_dir):
    project = load_project(project_dir("agent:\n  metric_selection: used\n"))
    selectors = _declaration(_agent(build(project))[1])["metric_selectors"]
    assert {s.strip("^$") for s in selectors} == project.used_metrics()
    assert len(selectors) < len(project.catalog.series())


def test_declared_namespace_and_dimensions_are_used(project_dir):
    config = project_dir("cloudwatch:\n  namespace: GPU/Custom\n  dimensions: [ClusterName, pod]\n")
    prometheus = _agent(build(load_project(config)))[1]["logs"]["metrics_collected"]["prometheus"]
    assert prometheus["emf_processor"]["metric_namespace"] == "GPU/Custom"
    assert _declaration({"logs": {"metrics_collected": {"prometheus": prometheus}}})["dimensions"] == [
        ["ClusterName", "pod"]]


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
    assert job["metric_relabel_configs"] == [{"source_labels": ["__name__"], "regex": "DCGM_.*", "action": "keep"}]
    text = json.dumps(job)
    assert "__meta_kubernetes_pod_container_name" not in text  # the blog's job dropped every target on it
    assert '"target_label": "pod"' not in text and '"target_label": "namespace"' not in text
    assert "/api/v1/metrics/prometheus" not in text


def test_service_monitor_honors_the_workload_labels():
    monitor = service_monitor(load_project().settings)
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["honorLabels"] is True and endpoint["port"] == "gpu-metrics" and endpoint["path"] == "/metrics"
    assert monitor["spec"]["selector"]["matchLabels"] == {"app": "nvidia-dcgm-exporter"}


def _crd_validator(reference, plural: str):
    crd = yaml.safe_load((reference / "k8s" / "prometheus-operator" / f"monitoring.coreos.com_{plural}.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize("config", ["", "prometheus_stack:\n  release: kube-prometheus-stack\n  namespace: monitoring\n"])
def test_operator_objects_validate_against_the_crds_and_carry_the_release_label(reference, project_dir, config):
    project = load_project(project_dir(config))
    files = build(project)
    for path, plural in (("k8s/servicemonitor.yaml", "servicemonitors"), ("k8s/prometheusrule.yaml", "prometheusrules")):
        document = yaml.safe_load(files[path])
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                  for e in _crd_validator(reference, plural).iter_errors(document)]
        assert errors == [], (path, errors)
        metadata = document["metadata"]
        if config:
            assert metadata["labels"]["release"] == "kube-prometheus-stack" and metadata["namespace"] == "monitoring"
        else:
            assert "release" not in metadata["labels"] and metadata["namespace"] == "gpu-operator"
    monitor = yaml.safe_load(files["k8s/servicemonitor.yaml"])
    # the exporter stays selected in its own namespace wherever the ServiceMonitor lives
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["gpu-operator"]}


def test_crd_validation_catches_a_wrong_field(reference):
    monitor = service_monitor(load_project().settings)
    monitor["spec"]["endpoints"][0]["honorLabels"] = "yes"
    assert list(_crd_validator(reference, "servicemonitors").iter_errors(monitor))


def _feed(project, mutate=None):
    files = build(project)
    if mutate:
        files = mutate(files)
    return FeedSubject(project, files, grafana_dashboards(project), None)


def _rule(subject, rule_id):
    return run([r for r in RULES if r.id == rule_id], subject)


def test_defaults_are_consistent():
    assert run(RULES, _feed(load_project())) == []


def test_a_dimension_the_scrape_job_does_not_publish_fails(project_dir):
    project = load_project(project_dir("cloudwatch:\n  dimensions: [ClusterName, rack, pod]\n"))
    (finding,) = _rule(_feed(project), "AG002")
    assert "'rack'" in finding.message


def test_a_label_the_scrape_job_does_not_deliver_fails(project_dir):
    dashboard = """
        from generator.model import Dashboard, Panel, Query, Row
        dashboard = Dashboard("racks", "Racks", [Row("r", [Panel("by rack", Query("DCGM_FI_DEV_GPU_UTIL",
            raw_promql='avg by (rack) (DCGM_FI_DEV_GPU_UTIL{pod!=""})'), unit="percent", description="d")])])
    """
    project = load_project(project_dir(dashboards={"racks.py": dashboard}))
    findings = _rule(_feed(project), "PR001")
    assert [f.message for f in findings] == ["label 'rack' is not on the series the scrape job delivers"]


def test_a_label_dropped_by_the_scrape_job_fails():
    project = load_project()

    def drop_gpu(files):
        maps = list(yaml.safe_load_all(files["k8s/cwagent-prometheus-config.yaml"]))
        scrape = yaml.safe_load(maps[1]["data"]["prometheus.yaml"])
        scrape["scrape_configs"][0]["metric_relabel_configs"].append({"regex": "gpu", "action": "labeldrop"})
        maps[1]["data"]["prometheus.yaml"] = yaml.safe_dump(scrape)
        return {**files, "k8s/cwagent-prometheus-config.yaml": yaml.safe_dump_all(maps).encode()}

    findings = _rule(_feed(project, drop_gpu), "PR001")
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


def test_a_declaration_without_selectors_fails():
    def strip(files):
        agent_map, scrape_map = yaml.safe_load_all(files["k8s/cwagent-prometheus-config.yaml"])
        config = json.loads(agent_map["data"]["cwagentconfig.json"])
        _declaration(config)["metric_selectors"] = []
        agent_map["data"]["cwagentconfig.json"] = json.dumps(config)
        return {**files, "k8s/cwagent-prometheus-config.yaml": yaml.safe_dump_all([agent_map, scrape_map]).encode()}

    findings = _rule(_feed(load_project(), strip), "AG003")
    assert [f.message for f in findings] == ["no metric_selectors: the agent silently drops this declaration"]


def test_exported_pod_mapping_warns_about_the_generated_scrape_configs(project_dir):
    project = load_project(project_dir("labels:\n  pod: exported_pod\n"))
    (finding,) = _rule(_feed(project), "PR002")
    assert finding.severity == "warning"

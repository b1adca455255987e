"""gpudash lint parses every PromQL expression a build ships, and compiles every regex its scrape paths carry.

A rules file with one expression Prometheus cannot parse is refused whole (every alert lost); a scrape config with a
bad relabel regex stops the Prometheus or agent that loads it. Each mistake is named by its file and rule, job or
variable, with the parser's message.
"""

from __future__ import annotations

import copy
import re

import pytest

from generator.artifacts import build
from generator.lint import run
from generator.lint.feed_rules import RULES as FEED_RULES
from generator.lint.grafana_rules import RULES as GRAFANA_RULES
from generator.project import load_project
from tests.support.lint_input import lint_input


@pytest.fixture(scope="module")
def built():
    project = load_project()
    return project, build(project)


def _findings(subject, rule_id):
    return [f for f in run([r for r in (*FEED_RULES, *GRAFANA_RULES) if r.id == rule_id], subject) if f.rule == rule_id]


def _rule(rules: dict, alert: str) -> dict:
    return next(r for g in rules["groups"] for r in g["rules"] if r.get("alert") == alert)


def test_a_rule_that_does_not_parse_is_named_with_its_file_group_and_rule(built):
    """A cluster label value written unescaped (`cluster="x"y"`: what a quote in prometheus_label made)."""
    project, artifacts = built
    rules, objects = copy.deepcopy(artifacts.prometheus_rules), copy.deepcopy(artifacts.prometheus_rule_objects)
    subject = lint_input(project, artifacts, prometheus_rules=rules, prometheus_rule_objects=objects)
    assert _findings(subject, "PR004") == []
    expected = []
    for file, document in (("prometheus/rules.yaml", rules),
                           *(("k8s/prometheusrule.yaml", resource["spec"]) for resource in objects)):
        for group in document["groups"]:
            for each in group["rules"]:
                if each.get("alert") == "GpudashGpuDataMissing" and "{label_app=" in each["expr"]:
                    each["expr"] = each["expr"].replace("{label_app=", '{cluster="x"y", label_app=', 1)
                    expected.append(f"{file} group {group['name']!r} rule 'GpudashGpuDataMissing'")
    findings = _findings(subject, "PR004")
    assert len(expected) == 2 and sorted(f.where for f in findings) == sorted(expected)
    assert all(f.severity == "error" and f.message.startswith("expr does not parse: ") for f in findings)


def test_a_long_or_chain_is_parsed_whole_in_pieces(built):
    """A shared Prometheus of many clusters writes `or` chains of thousands of operands (the PromQL parser's objects
    cost the square of a chain's length: 4,000 operands took 7 s and 4.9 GB): a mistake in the 3,000th operand is
    found, and a chain without one passes."""
    project, artifacts = built
    rules = copy.deepcopy(artifacts.prometheus_rules)
    subject = lint_input(project, artifacts, prometheus_rules=rules)
    operands = [f'(up{{cluster="c{i}"}} or on(cluster) vector(1)) * on() group_left() max(up{{cluster="c{i}"}})'
                for i in range(5000)]
    chained = _rule(rules, "GpudashGpuDataMissing")
    chained["expr"] = f'label_replace(max by (cluster) ({" or ".join(operands)}), "a", "b", "", "") > 0'
    assert _findings(subject, "PR004") == []
    operands[3000] = operands[3000].replace('cluster="c3000"', 'cluster="c"3000"')
    chained["expr"] = f'label_replace(max by (cluster) ({" or ".join(operands)}), "a", "b", "", "") > 0'
    assert [f.message for f in _findings(subject, "PR004")] == ["expr does not parse: unexpected character inside "
                                                                 "braces: '3'"]
    chained["expr"] = " or ".join(["up"] * 3000 + ["1"])  # a scalar in a set operation: its piece is refused
    assert len(_findings(subject, "PR004")) == 1


def test_a_relabel_regex_that_does_not_compile_is_named_with_its_job(built):
    project, artifacts = built
    scrape = copy.deepcopy(artifacts.additional_scrape_configs)
    subject = lint_input(project, artifacts, additional_scrape_configs=scrape)
    assert _findings(subject, "PR005") == []
    job = scrape["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"][0]
    job["relabel_configs"][0]["regex"] = "([^:]+)(?::\\d+"
    findings = _findings(subject, "PR005")
    assert [f.where for f in findings] == [
        f"prometheus/additional-scrape-configs.yaml job {job['job_name']!r} relabel_configs[0]"]
    assert "does not compile" in findings[0].message


def test_a_variable_query_that_does_not_parse_is_named(built):
    project, artifacts = built
    dashboards = copy.deepcopy(artifacts.grafana)
    subject = lint_input(project, artifacts, grafana=dashboards)
    assert _findings(subject, "GF001") == []
    variable = next(v for v in dashboards[0].model["templating"]["list"] if v.get("name") == "pod")
    variable["query"] = re.sub(r"(['\"])\}", r"\1", variable["query"], count=1)  # a selector left open
    findings = _findings(subject, "GF001")
    assert [f.where for f in findings] == [f"grafana/{dashboards[0].uid}.json variable 'pod'"]


def test_a_query_is_parsed_as_grafana_sends_it_with_its_variables_at_their_defaults(built):
    """A variable outside a string (a range `[$window]`, as grafanalib dashboards write) is replaced by its default
    before the parse, as Grafana replaces it before sending: such a query parses; one naming no variable the
    dashboard has is sent as written, and does not."""
    project, artifacts = built
    dashboards = copy.deepcopy(artifacts.grafana)
    subject = lint_input(project, artifacts, grafana=dashboards)
    model = dashboards[0].model
    model["templating"]["list"].append({"type": "interval", "name": "window", "query": "5m,1h",
                                        "current": {"text": "5m", "value": "5m"}})
    target = next(p for p in model["panels"] if p.get("targets"))["targets"][0]
    target["expr"] = 'sum(increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{node=~"$node"}[$window]))'
    assert _findings(subject, "GF001") == []
    target["expr"] = 'sum(increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{node=~"$node"}[$nowhere]))'
    assert len(_findings(subject, "GF001")) == 1


def test_a_regex_of_the_agents_otel_configuration_that_does_not_compile_is_named(built):
    """The default pipeline (agent.pipeline: otel) runs the scrape jobs and matches labels from gpudash-otel.yaml,
    whose `$` is written `$$`: read as the collector reads it, each regex compiles."""
    from dataclasses import replace

    project, artifacts = built
    agents = tuple(replace(a, otel=copy.deepcopy(a.otel)) for a in artifacts.agents)
    subject = lint_input(project, artifacts, agents=agents)
    assert _findings(subject, "PR005") == []
    receiver = agents[0].otel["receivers"]["prometheus/gpudash"]["config"]["scrape_configs"][0]
    receiver["relabel_configs"][0]["regex"] = "nvidia-(dcgm-exporter"
    findings = _findings(subject, "PR005")
    assert [f.where for f in findings] == [
        "k8s/cwagent-prometheus-config-gpu-cluster.yaml gpudash-otel.yaml "
        "receivers/prometheus/gpudash/config/scrape_configs[0]/relabel_configs[0]/regex"]


def test_a_rule_is_parsed_as_prometheus_reads_it_with_no_grafana_variable_replaced(built):
    """Prometheus replaces no variable in a rule: a `$` in a rule's string is a dollar sign (a prometheus_label
    `team$a` is matched by `cluster=~"team\\\\$a|b"`, which lint read as a variable, `team\\gpudash_variable`, an illegal
    regex escape: every rule erred on a fleet promtool takes), and a `$__interval` outside a string is an error
    there, not a range."""
    project, artifacts = built
    rules = copy.deepcopy(artifacts.prometheus_rules)
    subject = lint_input(project, artifacts, prometheus_rules=rules)
    rule = _rule(rules, "GpudashGpuDataMissing")
    rule["expr"] = 'max by (cluster) (up{cluster=~"team\\\\$a|b|\\\\$1|a$$b"}) > 0'
    assert _findings(subject, "PR004") == []
    rule["expr"] = "max by (cluster) (max_over_time(up[$__interval])) > 0"
    group = next(g["name"] for g in rules["groups"] if rule in g["rules"])
    assert [f.where for f in _findings(subject, "PR004")] == [
        f"prometheus/rules.yaml group {group!r} rule 'GpudashGpuDataMissing'"]


def _relabel_holders(artifacts):
    """(where lint names it, the list of rules, the target key's name) of each relabel list of every scrape path a
    build ships: the Prometheus job's, the ServiceMonitor endpoint's, each agent job's (prometheus.yaml and the OTel
    receiver's)."""
    job = artifacts.additional_scrape_configs["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"][0]
    endpoint = artifacts.service_monitor["spec"]["endpoints"][0]
    agent = artifacts.agents[0]
    yield f"prometheus/additional-scrape-configs.yaml job {job['job_name']!r} metric_relabel_configs", \
        job.setdefault("metric_relabel_configs", []), "target_label"
    yield f"prometheus/additional-scrape-configs.yaml job {job['job_name']!r} relabel_configs", \
        job.setdefault("relabel_configs", []), "target_label"
    name = artifacts.service_monitor["metadata"]["name"]
    yield f"k8s/servicemonitor.yaml {name} endpoint 0 metricRelabelings", endpoint.setdefault("metricRelabelings", []), \
        "targetLabel"
    yield f"k8s/servicemonitor.yaml {name} endpoint 0 relabelings", endpoint.setdefault("relabelings", []), \
        "targetLabel"
    scrape = agent.scrape["scrape_configs"][0]
    yield (f"k8s/cwagent-prometheus-config-gpu-cluster.yaml prometheus.yaml job {scrape['job_name']!r} "
           f"metric_relabel_configs"), scrape["metric_relabel_configs"], "target_label"
    if agent.otel is not None:
        receiver = agent.otel["receivers"]["prometheus/gpudash"]["config"]["scrape_configs"][0]
        yield ("k8s/cwagent-prometheus-config-gpu-cluster.yaml gpudash-otel.yaml receivers/prometheus/gpudash/config/"
               f"scrape_configs[0]/metric_relabel_configs"), receiver["metric_relabel_configs"], "target_label"


@pytest.mark.parametrize("field, value, says", [
    ("target", ["pod", "x"], "is a list, where Prometheus reads a string"),
    ("source", "pod", "is a string, where Prometheus reads a list of label names"),
    ("separator", [";"], "is a list, where Prometheus reads a string"),
    ("regex", ["(.+)"], "is a list, where Prometheus reads a string"),
    ("action", {"replace": 1}, "is a mapping, where Prometheus reads a string")])
def test_a_relabel_rule_prometheus_cannot_load_is_an_error_naming_its_field_and_crashes_no_rule(project_dir, field,
                                                                                                  value, says):
    """A relabel rule whose field is of a type Prometheus' config loader refuses (a list where it reads a string: a
    target_label of two labels) stops the Prometheus or agent loading it, as a regex that does not compile does: PR005
    names the rule and the field; every other rule reads past it (a target_label list made every lint run an
    internal error: TypeError: unhashable type: 'list')."""
    from generator.lint.cloudwatch_rules import RULES as CLOUDWATCH_RULES
    from generator.lint.catalog_rules import RULES as CATALOG_RULES

    for pipeline in ("classic", "otel"):
        project = load_project(project_dir(f"agent:\n  pipeline: {pipeline}\n"))
        artifacts = copy.deepcopy(build(project))
        holders = list(_relabel_holders(artifacts))
        for where, rules, target in holders:
            key = {"target": target, "source": "sourceLabels" if target == "targetLabel" else "source_labels"}.get(
                field, field)
            rules.insert(0, {"action": "replace", "source_labels" if target == "target_label" else "sourceLabels":
                             ["pod"], target: "pod", key: value})
        subject = lint_input(project, artifacts)
        findings = run([*FEED_RULES, *GRAFANA_RULES, *CLOUDWATCH_RULES, *CATALOG_RULES], subject)
        shaped = [f for f in findings if f.rule == "PR005" and "where Prometheus reads" in f.message]
        key_said = {"target": "target_label", "source": "source_labels"}.get(field, field)
        assert sorted(f.where for f in shaped) == sorted(f"{where}[0]" for where, _, _ in holders), pipeline
        assert all(f.severity == "error" and says in f.message and
                   (key_said in f.message or key_said.replace("_l", "L") in f.message) for f in shaped)

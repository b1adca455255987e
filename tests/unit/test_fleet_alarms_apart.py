"""Every fleet-scope alarm a definition can write that names a cluster's objects (node, GPU, pod, namespace,
container, MIG instance, or the cluster itself) judges each cluster's objects apart on both backends: CloudWatch
groups by ClusterName first, the Prometheus rule (one Prometheus holding the clusters) by cluster. One grouped by
nothing, or by a model alone, stays the fleet's value (tests/unit/test_fleet_pods_apart.py has the values)."""

from __future__ import annotations

import itertools
import re

import pytest

from generator.cloudwatch_query import Unsupported
from generator.markers import CLUSTER_DIMENSION
from generator.model import AGGREGATIONS, Alarm, Condition, Query
from generator.render.alarms import alarm_forms, prometheus_rules
from tests.support.projects import bundled_project

SETTINGS = """\
clusters:
  - {name: a, region: us-east-1, prometheus_label: a}
  - {name: b, region: us-east-1, prometheus_label: b}
"""
OBJECTS = [("pod",), ("pod", "gpu"), ("namespace",), ("node",), ("node", "gpu"), ("gpu",), ("cluster",),
           ("container",), ("cluster", "pod"), ("model", "node"), ("mig_instance",)]
FIELDS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_FREE",
          "DCGM_FI_DEV_PCIE_REPLAY_COUNTER")
CASES = [(field, aggregation, by) for field, aggregation, by in itertools.product(FIELDS, AGGREGATIONS, OBJECTS)]


def _alarm(field: str, aggregation: str, by: tuple[str, ...], scope: str = "fleet") -> Alarm:
    return Alarm("x", "X", Condition(Query(field, aggregation, by), ">", 1), scope=scope)


@pytest.mark.parametrize("field,aggregation,by", CASES)
def test_each_cloudwatch_form_groups_by_the_cluster_first(field, aggregation, by):
    project = bundled_project(SETTINGS)
    try:
        forms = alarm_forms(_alarm(field, aggregation, by), project.catalog, project.settings)
    except Unsupported:
        return  # generate refuses it (with its file and line): no alarm to judge
    assert forms
    for form in forms:
        assert form.plan.group[0] == CLUSTER_DIMENSION, (form.kind, form.plan.group)
        assert CLUSTER_DIMENSION not in form.plan.group[1:]


@pytest.mark.parametrize("by", OBJECTS)
def test_each_prometheus_rule_groups_by_the_cluster(by):
    project = bundled_project(SETTINGS)
    rules = prometheus_rules((_alarm("DCGM_FI_DEV_GPU_TEMP", "max", by),), project.catalog, project.settings)
    (alert,) = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    assert "cluster {{ $labels.cluster }}" in alert["annotations"]["summary"]
    assert "by (cluster, " in alert["expr"] or "by (cluster)" in alert["expr"]


@pytest.mark.parametrize("by", [(), ("model",)])
def test_a_fleet_value_stays_the_fleet_s(by):
    project = bundled_project(SETTINGS)
    if not by:  # the bundled sets carry no model name: CloudWatch refuses a grouping by it
        (form,) = alarm_forms(_alarm("DCGM_FI_DEV_GPU_TEMP", "max", by), project.catalog, project.settings)
        assert CLUSTER_DIMENSION not in form.plan.group
    rules = prometheus_rules((_alarm("DCGM_FI_DEV_GPU_TEMP", "max", by),), project.catalog, project.settings)
    (alert,) = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    assert "$labels.cluster" not in alert["annotations"]["summary"]


def test_a_cluster_scope_alarm_reads_one_cluster_by_its_filter():
    project = bundled_project(SETTINGS)
    (form,) = alarm_forms(_alarm("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu"), "cluster"), project.catalog,
                          project.settings)
    assert CLUSTER_DIMENSION not in form.plan.group  # WHERE ClusterName = '<cluster>' in each cluster's alarm


ALARM = """\
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("hot", "Hot", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", {by}), ">", 80), scope="fleet")
"""
CLUSTERS = {
    # the rule judges each Region's clusters (judged_regions), as CloudWatch's alarm per Region does
    "shared, two Regions": ("  - {name: a, region: us-east-1, prometheus_label: a}\n"
                            "  - {name: b, region: us-east-1, prometheus_label: b}\n"
                            "  - {name: c, region: eu-west-1, prometheus_label: c}\n", set()),
    "shared, one Region": ("  - {name: a, region: us-east-1, prometheus_label: a}\n"
                           "  - {name: b, region: us-east-1, prometheus_label: b}\n", set()),
    "a Prometheus each, one Region": ("  - {name: a, region: us-east-1}\n  - {name: b, region: us-east-1}\n",
                                      {"us-east-1"}),
    "a Prometheus each, a Region each": ("  - {name: a, region: us-east-1}\n  - {name: b, region: eu-west-1}\n",
                                         set()),
    "a Prometheus each, two Regions": ("  - {name: a, region: us-east-1}\n  - {name: b, region: us-east-1}\n"
                                       "  - {name: c, region: eu-west-1}\n", {"us-east-1"}),
}


@pytest.mark.parametrize("clusters", CLUSTERS)
def test_lint_warns_where_a_fleet_value_reads_other_clusters_on_each_backend(tmp_path, clusters):
    """A fleet alarm grouped by nothing is one alarm per Region on CloudWatch, reading that Region's clusters; its
    Prometheus rule reads, on a shared Prometheus, the same clusters (a value per Region where they span several), on
    a Prometheus per cluster its own cluster. Where those differ (two clusters of a Region each with its own
    Prometheus: both against one) the two fire on different situations: AL022 says so per Region, and not where they
    read the same clusters or the alarm judges each cluster apart (grouped by cluster). A shared Prometheus over two
    Regions was warned of while its rule judged every cluster together."""
    from generator.lint import run
    from generator.lint.cloudwatch_rules import RULES
    from tests.support.lint_input import lint_input
    from tests.support.projects import defined_project

    text, warned = CLUSTERS[clusters]
    for by, expected in (("()", warned), ("('cluster',)", set())):
        folder = tmp_path / by.strip("(),'") if by != "()" else tmp_path / "none"
        folder.mkdir()
        project = defined_project(folder, "clusters:\n" + text, alarms=ALARM.format(by=by))
        findings = run([rule for rule in RULES if rule.id == "AL022"], lint_input(project))
        regions = {re.search(r"the clusters of (\S+)", f.message)[1] for f in findings}
        assert regions == expected, [f.message for f in findings]
        assert all("hot" in f.where and "scope=\"cluster\"" in f.message for f in findings)


def _alert(settings: str, by: tuple[str, ...] = ()) -> dict:
    project = bundled_project(settings)
    rules = prometheus_rules((_alarm("DCGM_FI_DEV_GPU_TEMP", "max", by),), project.catalog, project.settings)
    (alert,) = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    return alert


TWO_REGIONS = """\
clusters:
  - {name: a, region: us-east-1, prometheus_label: a}
  - {name: b, region: us-east-1, prometheus_label: b}
  - {name: c, region: eu-west-1, prometheus_label: "c.1"}
"""


@pytest.mark.parametrize("by", [(), ("model",)])
def test_a_fleet_value_over_two_regions_is_judged_per_region_of_the_settings_clusters(by):
    """One Prometheus, clusters of two Regions: the rule's value is per Region (its REGION_LABEL), of the series of
    the settings' clusters alone, each cluster's Region written by an anchored alternation of its label values (a
    dot in a value is a literal); tests/integration/test_fleet_region_twins.py has the values."""
    alert = _alert(TWO_REGIONS, by)
    assert alert["annotations"]["summary"].startswith("X in Region {{ $labels.region }}")
    assert "by (region" in alert["expr"] and "max(" not in alert["expr"].replace("max()", "")
    assert 'cluster=~"c\\\\.1|a|b"' in alert["expr"]
    assert '"region", "us-east-1", "cluster", "a|b")' in alert["expr"]
    assert '"region", "eu-west-1", "cluster", "c\\\\.1")' in alert["expr"]


@pytest.mark.parametrize("settings", [SETTINGS, "clusters:\n  - {name: a, region: us-east-1}\n"
                                                "  - {name: b, region: eu-west-1}\n"])
def test_one_region_s_prometheus_or_a_prometheus_per_cluster_judges_no_region(settings):
    """A shared Prometheus of one Region's clusters reads what the Region's alarm reads, a Prometheus per cluster its
    own: no Region in the rule (the rules as before)."""
    alert = _alert(settings)
    assert "region" not in alert["expr"] and "Region" not in alert["annotations"]["summary"]


def test_a_fleet_alarm_per_cluster_object_keeps_its_cluster_grouping_over_two_regions():
    alert = _alert(TWO_REGIONS, ("node", "gpu"))
    assert '"region"' not in alert["expr"] and "by (cluster, " in alert["expr"]

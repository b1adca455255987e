"""A build edited by hand where lint said nothing: the Prometheus exporter job's sample_limit lowered under what one
exporter sends (Prometheus fails such a scrape whole: every series of the target is dropped), and a unit the agent
publishes a field in that is not the catalog's (CloudWatch labels, never converts; a metric of two units leaves an
alarm without Unit undefined), and the EMF log group a classic agent writes named otherwise than the one its stack
gives a retention (the agent creates that one with none: it never expires). Each is a warning naming what goes
wrong."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from generator.artifacts import build
from generator.lint import run
from generator.lint.runner import all_rules
from generator.project import load_project
from tests.support.lint_input import lint_input

RULES = ("AG009", "AG010", "PR008")


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    made = {}
    for name, settings in (("otel", ""), ("classic", "agent:\n  pipeline: classic\n"),
                           ("whole", "exporter:\n  mig: none\n")):
        folder = tmp_path_factory.mktemp(name)
        (folder / "gpudash.yaml").write_text(settings)
        made[name] = load_project(folder / "gpudash.yaml")
    return made


@pytest.fixture(scope="module")
def builds(projects):
    return {name: build(project, grafana=False) for name, project in projects.items()}


def _said(project, artifacts) -> list[str]:
    rules = [r for r in all_rules() if r.id in RULES]
    return [f"{f.rule} {f.severity} {f.where}: {f.message}" for f in run(rules, lint_input(project, artifacts))]


@pytest.mark.parametrize("pipeline", ["otel", "classic", "whole"])
def test_as_built_nothing_is_said(projects, builds, pipeline):
    assert _said(projects[pipeline], builds[pipeline]) == []


def _prometheus_job_edited(artifacts, limit: int):
    artifacts = copy.deepcopy(artifacts)
    (job,) = artifacts.additional_scrape_configs["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"]
    job["sample_limit"] = limit
    return artifacts


@pytest.mark.parametrize("settings, samples", [("otel", "1,400 (25 fields x 8 GPUs x 7 MIG instances)"),
                                               ("whole", "200 (25 fields x 8 GPUs)")])
def test_a_sample_limit_lowered_under_one_exporters_samples_is_a_warning(projects, builds, settings, samples):
    (said,) = _said(projects[settings], _prometheus_job_edited(builds[settings], 150))
    assert said.startswith("PR008 warning prometheus/additional-scrape-configs.yaml job 'dcgm-exporter': "
                           "sample_limit 150: a scrape with more samples (after metric_relabel_configs) fails whole, "
                           "and every series of its target is dropped"), said
    assert f"sends {samples}" in said and "fix: leave sample_limit as gpudash writes it (50000)" in said
    assert _said(projects[settings], _prometheus_job_edited(builds[settings], 5000)) == []
    assert _said(projects[settings], _prometheus_job_edited(builds[settings], 0)) == []  # 0: no limit


def _units_edited(artifacts, units: dict[str, str | None]):
    """The first agent's units as written, each of `units` set (None: left out)."""
    agent = artifacts.agents[0]
    if agent.otel is not None:
        otel = copy.deepcopy(agent.otel)
        written = otel["exporters"]["awsemf/gpudash"]["metric_descriptors"]
        kept = {d["metric_name"]: d["unit"] for d in written} | units
        written[:] = [{"metric_name": n, "unit": u} for n, u in kept.items() if u is not None]
        agent = replace(agent, otel=otel)
    else:
        config = copy.deepcopy(agent.config)
        written = config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]["metric_unit"]
        for name, unit in units.items():
            written.pop(name, None)
            if unit is not None:
                written[name] = unit
        agent = replace(agent, config=config)
    return replace(artifacts, agents=(agent, *artifacts.agents[1:]))


@pytest.mark.parametrize("pipeline, where", [
    ("otel", "gpudash-otel.yaml awsemf/gpudash metric_descriptors"),
    ("classic", "cwagentconfig.json emf_processor metric_unit")])
def test_a_unit_other_than_the_catalogs_is_a_warning_naming_the_field(projects, builds, pipeline, where):
    artifacts = _units_edited(builds[pipeline], {"DCGM_FI_DEV_FB_USED": "Bytes", "DCGM_FI_DEV_GPU_UTIL": None,
                                                 "DCGM_FI_DEV_GPU_TEMP": "Count"})
    said = _said(projects[pipeline], artifacts)
    assert [s.split(": ", 1)[0] for s in said] == [f"AG009 warning k8s/cwagent-prometheus-config-gpu-cluster.yaml "
                                                   f"{where}"] * 3, said
    assert [s.split(": ", 1)[1].split(" where")[0] for s in said] == [
        "DCGM_FI_DEV_FB_USED is published in Bytes", "DCGM_FI_DEV_GPU_TEMP is published in Count",
        "DCGM_FI_DEV_GPU_UTIL is published in None"]
    assert "where its unit is Megabytes (the counters CSV's help text): CloudWatch keeps the number as sent and " \
           "only labels it (no conversion)" in said[0]
    assert "an alarm naming no unit (as gpudash's) behaves unpredictably on it" in said[0]


def _log_group_edited(artifacts, name: str):
    agent = artifacts.agents[0]
    if agent.otel is not None:
        otel = copy.deepcopy(agent.otel)
        otel["exporters"]["awsemf/gpudash"]["log_group_name"] = name
        agent = replace(agent, otel=otel)
    else:
        config = copy.deepcopy(agent.config)
        config["logs"]["metrics_collected"]["prometheus"]["log_group_name"] = name
        agent = replace(agent, config=config)
    return replace(artifacts, agents=(agent, *artifacts.agents[1:]))


def test_a_classic_agents_log_group_other_than_the_stacks_is_a_warning_saying_it_never_expires(projects, builds):
    (said,) = _said(projects["classic"], _log_group_edited(builds["classic"], "/gpu/emf"))
    assert said == ("AG010 warning k8s/cwagent-prometheus-config-gpu-cluster.yaml cwagentconfig.json log_group_name: "
                    "'/gpu/emf' where gpudash writes '/aws/containerinsights/gpu-cluster/prometheus', the group the "
                    "cluster's CloudFormation stack creates with a retention of agent.log_retention_days (7 days): "
                    "the agent creates '/gpu/emf' with none (its JSON path gives the group no retention), so it never "
                    "expires and its storage grows every month beyond what `gpudash cost` prices, and the stack's "
                    "group stays empty; fix: leave log_group_name as gpudash writes it")
    # the OTel pipeline's awsemf gives any group it creates agent.log_retention_days
    assert _said(projects["otel"], _log_group_edited(builds["otel"], "/gpu/emf")) == []

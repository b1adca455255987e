"""A lint input for rule tests: a project's artifact set, with some of its artifacts replaced."""

from __future__ import annotations

from dataclasses import replace

from generator.artifacts import Artifacts, build
from generator.lint.subject import LintInput


def lint_input(project, artifacts: Artifacts | None = None, grafana_schema=None, **replaced) -> LintInput:
    """`project`'s artifact set (or `artifacts`) with the fields in `replaced` swapped in (e.g. alarms=...), and the
    project's alarm definitions, as `gpudash lint` gives them (lint.runner.lint_input)."""
    artifacts = artifacts or build(project)
    return LintInput(replace(artifacts, **replaced), project.settings, project.catalog, grafana_schema,
                     alarm_definitions=project.alarms)


def agent_lint(project, rule: str, edit=None) -> list[str]:
    """The messages of lint rule `rule` (e.g. AG001) on `project`'s build, its first agent's collector configuration
    (agent.pipeline: otel) edited in place by `edit` (a copy of it)."""
    from generator.lint.feed_rules import RULES
    from generator.lint.runner import run

    artifacts = build(project)
    if edit:
        artifacts = otel_edited(artifacts, edit)
    return [f.message for f in run([r for r in RULES if r.id == rule], lint_input(project, artifacts))]


def otel_edited(artifacts: Artifacts, edit) -> Artifacts:
    """`artifacts` with the first agent's collector configuration (agent.pipeline: otel) edited in a copy by `edit`."""
    import copy

    agent = artifacts.agents[0]
    otel = copy.deepcopy(agent.otel)
    edit(otel)
    return replace(artifacts, agents=(replace(agent, otel=otel), *artifacts.agents[1:]))


def exporter_job_edited(artifacts: Artifacts, edit) -> Artifacts:
    """`artifacts` with the first agent's exporter job, the one the agent runs, edited in a copy by `edit`."""
    return scrape_config_edited(artifacts, lambda config: edit(config["scrape_configs"][0]))


def scrape_config_edited(artifacts: Artifacts, edit) -> Artifacts:
    """`artifacts` with the scrape configuration the first agent runs edited in a copy by `edit`: on the OTel pipeline
    its receiver's (the collector reads no prometheus.yaml), on the JSON path prometheus.yaml."""
    import copy

    agent = artifacts.agents[0]
    if agent.otel is not None:
        otel = copy.deepcopy(agent.otel)
        edit(otel["receivers"]["prometheus/gpudash"]["config"])
        agent = replace(agent, otel=otel)
    else:
        scrape = copy.deepcopy(agent.scrape)
        edit(scrape)
        agent = replace(agent, scrape=scrape)
    return replace(artifacts, agents=(agent, *artifacts.agents[1:]))

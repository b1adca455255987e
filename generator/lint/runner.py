"""Runs every lint rule family over a project."""

from __future__ import annotations

from pathlib import Path

from ..artifacts import Artifacts, build
from ..container_insights import enabled as addon_source
from ..errors import InputError
from . import Finding, Rule, catalog_rules, cloudwatch_rules, feed_rules, grafana_rules, run
from ..output import agent_file
from ..project import Project


def _panels_left_out(project: Project):
    for note in project.notes:
        where, _, message = note.partition(": ")
        yield Finding("DF001", "note", where, message)


def _left_out_on_addon(project: Project):
    from ..render.cloudwatch import left_out_on_addon

    for where, message in left_out_on_addon(project):
        yield Finding("CW013", "note", where, message)


def _data_missing_left_out(project: Project):
    from ..data_missing import left_out

    for where, message in left_out(project):
        yield Finding("AL011", "note", where, message)


DEFINITION_RULES = [
    Rule("DF001", "panels left out because the counters CSV does not collect their fields", _panels_left_out),
    Rule("CW013", "panels and alarms left out of CloudWatch because the Container Insights add-on does not "
                  "publish their fields (cloudwatch.source: container-insights)", _left_out_on_addon),
    Rule("AL011", "the data-missing alarm left out because nothing tells it GPUs are expected "
                  "(alarms.expected_gpus: none)", _data_missing_left_out),
]
# The rules that read the agent ConfigMaps: with the Container Insights add-on there are none.
AGENT_RULES = frozenset({"AG001", "AG002", "AG003", "AG004"})


def all_rules() -> list[Rule]:
    return [*catalog_rules.RULES, *DEFINITION_RULES, *grafana_rules.RULES, *feed_rules.RULES,
            *cloudwatch_rules.RULES]


def cloudwatch_subject(project: Project, artifacts: Artifacts | None = None) -> cloudwatch_rules.CloudWatchSubject:
    artifacts = artifacts or build(project)
    return cloudwatch_rules.CloudWatchSubject(artifacts.cloudwatch_dashboards, artifacts.alarms, project.settings)


def lint_project(project: Project, disabled: frozenset[str] = frozenset(), grafana_schema: Path | None = None,
                 cwagent_schema: Path | None = None) -> list[Finding]:
    """Lint what the project would generate."""
    return lint(project, build(project), disabled, grafana_schema, cwagent_schema)


def lint(project: Project, artifacts: Artifacts, disabled: frozenset[str] = frozenset(),
         grafana_schema: Path | None = None, cwagent_schema: Path | None = None) -> list[Finding]:
    """Lint an artifact set: built from the project, or read from a build (output.read), which is what ships.
    Every rule family reads the same set."""
    if addon_source(project.settings):
        disabled = disabled | AGENT_RULES
    else:
        for cluster in project.settings.clusters:
            if artifacts.agent(cluster.name) is None:
                raise InputError(f"the build has no {agent_file(cluster.name)}", where=artifacts.origin,
                                 hint="lint a folder written by `gpudash generate` with the same settings")
    subject = grafana_rules.GrafanaSubject(list(artifacts.grafana), project.catalog, project.settings.labels.pod,
                                           grafana_schema, project.settings.labels.namespace)
    cloudwatch_subject_ = cloudwatch_subject(project, artifacts)
    feed_subject = feed_rules.FeedSubject(project, artifacts, cwagent_schema)
    return [*run(catalog_rules.RULES, project.catalog, disabled),
            *run(DEFINITION_RULES, project, disabled),
            *run(grafana_rules.RULES, subject, disabled),
            *run(feed_rules.RULES, feed_subject, disabled),
            *run(cloudwatch_rules.RULES, cloudwatch_subject_, disabled)]

"""Runs every lint rule family over a project."""

from __future__ import annotations

from pathlib import Path

from .artifacts import feed_files, grafana_dashboards
from .lint import Finding, Rule, run
from .lint import catalog_rules, cloudwatch_rules, feed_rules, grafana_rules
from .render import alarms as alarm_render, cloudwatch
from .project import Project


def all_rules() -> list[Rule]:
    return [*catalog_rules.RULES, *grafana_rules.RULES, *feed_rules.RULES, *cloudwatch_rules.RULES]


def cloudwatch_subject(project: Project) -> cloudwatch_rules.CloudWatchSubject:
    settings = project.settings
    return cloudwatch_rules.CloudWatchSubject(
        cloudwatch.dashboards(project.cloudwatch_dashboards(), project.catalog, settings),
        alarm_render.cloudwatch_alarms(project.alarms, settings), settings)


def lint_project(project: Project, disabled: frozenset[str] = frozenset(), grafana_schema: Path | None = None,
                 cwagent_schema: Path | None = None) -> list[Finding]:
    dashboards = grafana_dashboards(project)
    subject = grafana_rules.GrafanaSubject(dashboards, project.catalog, project.settings.labels.pod, grafana_schema)
    feed = feed_rules.FeedSubject(project, feed_files(project), dashboards, cwagent_schema)
    return [*run(catalog_rules.RULES, project.catalog, disabled),
            *run(grafana_rules.RULES, subject, disabled),
            *run(feed_rules.RULES, feed, disabled),
            *run(cloudwatch_rules.RULES, cloudwatch_subject(project), disabled)]

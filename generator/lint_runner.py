"""Runs every lint rule family over a project."""

from __future__ import annotations

from pathlib import Path

from .artifacts import GrafanaDashboard, feed_files, grafana_dashboards
from .container_insights import enabled as addon_source
from .errors import InputError
from .lint import Finding, Rule, run
from .lint import catalog_rules, cloudwatch_rules, feed_rules, grafana_rules
from .render import alarms as alarm_render, cloudwatch
from .render.agent import agent_file
from .project import Project


def _panels_left_out(project: Project):
    for note in project.notes:
        where, _, message = note.partition(": ")
        yield Finding("DF001", "note", where, message)


def _left_out_on_addon(project: Project):
    from .container_insights import left_out

    for where, message in left_out(project):
        yield Finding("CW013", "note", where, message)


DEFINITION_RULES = [
    Rule("DF001", "panels left out because the counters CSV does not collect their fields", _panels_left_out),
    Rule("CW013", "panels and alarms left out of CloudWatch because the Container Insights add-on does not "
                  "publish their fields (cloudwatch.source: container-insights)", _left_out_on_addon),
]
# The rules that read the agent ConfigMaps: with the Container Insights add-on there are none.
AGENT_RULES = frozenset({"AG001", "AG002", "AG003", "AG004"})


def all_rules() -> list[Rule]:
    return [*catalog_rules.RULES, *DEFINITION_RULES, *grafana_rules.RULES, *feed_rules.RULES,
            *cloudwatch_rules.RULES]


def cloudwatch_subject(project: Project) -> cloudwatch_rules.CloudWatchSubject:
    settings = project.settings
    return cloudwatch_rules.CloudWatchSubject(
        cloudwatch.dashboards(project.cloudwatch_dashboards(), project.catalog, settings),
        alarm_render.cloudwatch_alarms(project.alarms, settings, project.catalog), settings)


def lint_project(project: Project, disabled: frozenset[str] = frozenset(), grafana_schema: Path | None = None,
                 cwagent_schema: Path | None = None) -> list[Finding]:
    """Lint what the project would generate."""
    return _lint(project, grafana_dashboards(project), feed_files(project), cloudwatch_subject(project), disabled,
                 grafana_schema, cwagent_schema)


def lint_build(project: Project, files: dict[str, bytes], disabled: frozenset[str] = frozenset(),
               grafana_schema: Path | None = None, cwagent_schema: Path | None = None,
               origin: str = "build") -> list[Finding]:
    """Lint exactly the files of a build (what ships), read with the same reader `push --from` uses."""
    from .publish import desired_from, grafana_models

    dashboards = [GrafanaDashboard(uid, str(model.get("title", "")), f"{origin}/{path}", model)
                  for uid, (path, model) in grafana_models(files, origin).items()]
    feed = {}
    for cluster in () if addon_source(project.settings) else project.settings.clusters:
        path = agent_file(cluster)
        if path not in files:
            raise InputError(f"the build has no {path}", where=origin,
                             hint="lint a folder written by `gpudash generate` with the same settings")
        feed[path] = files[path]
        try:  # the feed rules read the agent's ConfigMaps; a damaged file is an input error, not a crash
            probe = feed_rules.FeedSubject(project, feed, dashboards, None)
            probe.agent_config(cluster)["logs"]["metrics_collected"]["prometheus"]
            probe.scrape_job(cluster)["job_name"]
        except Exception as exc:
            raise InputError(f"not the agent ConfigMaps gpudash writes ({type(exc).__name__}: {exc})",
                             where=f"{origin}/{path}", hint="run `gpudash generate` again and review the result") from None
    desired = desired_from(files, project.settings, origin)
    subject = cloudwatch_rules.CloudWatchSubject(desired.cloudwatch_dashboards, desired.alarms, project.settings)
    return _lint(project, dashboards, feed, subject, disabled, grafana_schema, cwagent_schema)


def _lint(project: Project, dashboards: list[GrafanaDashboard], feed: dict[str, bytes],
          cloudwatch_subject_: cloudwatch_rules.CloudWatchSubject, disabled: frozenset[str],
          grafana_schema: Path | None, cwagent_schema: Path | None) -> list[Finding]:
    if addon_source(project.settings):
        disabled = disabled | AGENT_RULES
    subject = grafana_rules.GrafanaSubject(dashboards, project.catalog, project.settings.labels.pod, grafana_schema,
                                           project.settings.labels.namespace)
    feed_subject = feed_rules.FeedSubject(project, feed, dashboards, cwagent_schema, cloudwatch_subject_)
    return [*run(catalog_rules.RULES, project.catalog, disabled),
            *run(DEFINITION_RULES, project, disabled),
            *run(grafana_rules.RULES, subject, disabled),
            *run(feed_rules.RULES, feed_subject, disabled),
            *run(cloudwatch_rules.RULES, cloudwatch_subject_, disabled)]

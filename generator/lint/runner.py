"""Runs every lint rule family over one artifact set: built from a project, or read from a build."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..artifacts import EMPTY_DASHBOARD_FIX, Artifacts, build
from ..container_insights import enabled as addon_source
from ..errors import InputError
from ..output import agent_file
from ..project import Project
from . import (Finding, Rule, alarm_periods, catalog_rules, cloudwatch_rules, feed_rules, grafana_rules, run,
               scrape_agreement)
from .metrics_insights import each_read_once
from .subject import LintInput


def _notes(rule: str, severity: str = "note", fix: str = ""):
    def check(subject: LintInput) -> Iterable[Finding]:
        for note in subject.notes:
            if note.rule == rule:
                yield Finding(rule, severity, note.where, f"{note.message}; fix: {fix}" if fix else note.message)
    return check


# What the build left out and why, as it was made (the notes travel with a build in its manifest).
NOTE_RULES = [
    Rule("DF001", "panels and alarms left out because the counters CSV does not collect their fields", _notes("DF001")),
    Rule("DF002", "dashboards with no panel left: the counters CSV collects none of the fields their panels read, "
         "or they define none",
         _notes("DF002", "warning", EMPTY_DASHBOARD_FIX)),
    Rule("DF003", "panels and alarms on a counter the exporter starts at a code's first event (DCGM_EXP_XID_ERRORS_TOTAL, "
                  "DCGM_EXP_CLOCK_EVENTS_TOTAL): no increase counts that event", _notes("DF003")),
    Rule("CW013", "panels and alarms left out of CloudWatch because the Container Insights add-on does not "
                  "publish their fields (cloudwatch.source: container-insights)", _notes("CW013")),
    Rule("CW022", "panels left out of CloudWatch because agent.pipeline: classic publishes a field as the exporter "
                  "types it and the exporter's image types it otherwise than the bundled counters CSV (the NVLink "
                  "throughput, typed counter: its differences)", _notes("CW022")),
    Rule("CW019", "charts of one line per pod that add a pod's GPUs per scrape rank pods by one GPU's reading, not "
                  "the pod's total (agent.pipeline: classic, the Container Insights add-on)", _notes("CW019")),
    Rule("AL011", "the data-missing alarm left out because nothing tells it GPUs are expected "
                  "(alarms.expected_gpus: none)", _notes("AL011")),
    Rule("AL012", "CloudWatch alarms that do not evaluate GPUs split into MIG instances where their Prometheus rule "
                  "does (a field MIG does not report, whose stand-in alarm cannot be made)", _notes("AL012")),
    Rule("AL017", "CloudWatch GROUP BY alarms over several periods whose ranking past 500 series can leave out a series "
                  "breaching in every period (agent.pipeline: classic, the Container Insights add-on, a set of 10 names, "
                  "a form not ranked by the periods it holds)", _notes("AL017")),
    Rule("AL019", "CloudWatch alarms that count, add or average GPUs where a GPU split into MIG instances or shared by "
                  "time-slicing counts once per copy (agent.pipeline: classic; a field MIG reports per instance; a "
                  "pod's mean or a namespace's count, sum or mean of a device field; a counter added up per namespace; "
                  "with exporter.virtual_gpus a namespace's sum or mean of a field split per process, whose copies are "
                  "the GPU's whole value before dcgm-exporter 4.5.3), "
                  "or read a pod's or a namespace's field MIG reports per instance per instance, not per GPU",
         _notes("AL019")),
    Rule("AL024", "CloudWatch alarms whose count of GPUs or total of a gauge over several GPUs is the period's readings "
                  "over its scrapes, or whose mean over several nodes' GPUs weighs each by its readings: a failed "
                  "scrape, a GPU joining or leaving inside a period, or (agent.pipeline: otel) a GPU reading DCGM's "
                  "blank at some of its scrapes, reads as part of a GPU (the blank alone in a pod's or node's mean)",
         _notes("AL024")),
    Rule("AL025", "CloudWatch alarms on a pod's count of GPUs (agent.pipeline: otel) read the most GPUs one scrape "
                  "counted: GPUs the pod was read on at different scrapes, never all at one (time-slicing, a move to "
                  "another node), count fewer than its Prometheus rule counts", _notes("AL025")),
    Rule("AL027", "rules with no CloudWatch alarm, judged by their Prometheus rule alone: a GPU that stopped reporting "
                  "while its node's other GPUs report (CloudWatch has no datapoint of a series that stopped to judge)",
         _notes("AL027")),
]
# The rules that read the agent ConfigMaps: with the Container Insights add-on there are none.
AGENT_RULES = frozenset({"AG001", "AG002", "AG003", "AG004", "AG005", "AG007", "AG008", "AG009", "AG010"})


# Every rule family, in the order lint lists and runs them.
FAMILIES = (catalog_rules.RULES, NOTE_RULES, grafana_rules.RULES, feed_rules.RULES, scrape_agreement.RULES,
            cloudwatch_rules.RULES, alarm_periods.RULES)


def all_rules() -> list[Rule]:
    return [rule for rules in FAMILIES for rule in rules]


def read_schemas(grafana_schema: Path | None, cwagent_schema: Path | None) -> None:
    """Read and check the reference schemas lint was given before anything is built or linted: a file that is
    not JSON or not a schema is an InputError at once (the rules then use what was read here)."""
    if grafana_schema is not None:
        grafana_rules.schema_validators(str(grafana_schema))
    if cwagent_schema is not None:
        feed_rules.agent_validator(str(cwagent_schema))


def lint_input(project: Project, artifacts: Artifacts | None = None, grafana_schema: Path | None = None,
               cwagent_schema: Path | None = None) -> LintInput:
    """What the rules read: `artifacts` (built from the project when not given) with the project's settings
    and counters CSV. A build made from another CSV is refused: its fields would be judged by this one."""
    artifacts = artifacts or build(project)
    if artifacts.counters_sha256 != project.catalog.sha256:
        raise InputError(f"this build was made from another counters CSV than {project.catalog.source} "
                         f"(sha256 {artifacts.counters_sha256[:12]}…, this one {project.catalog.sha256[:12]}…): "
                         "its fields would be judged by the wrong CSV", where=artifacts.origin,
                         hint=_other_csv_hint(project, artifacts.counters_sha256))
    return LintInput(artifacts, project.settings, project.catalog, grafana_schema, cwagent_schema, project.alarms)


def _other_csv_hint(project: Project, made_from: str) -> str:
    """What to do about a build made from another CSV: drop --csv when the build was made from the CSV
    used without it (the settings' `counters`, else the bundled one)."""
    from ..catalog import load_counters

    default = project.settings.counters_path
    try:
        same = load_counters(default).sha256 == made_from
    except InputError:  # the settings' CSV cannot be read: nothing to compare
        same = False
    if same:
        return f"drop --csv: the build was made from {default if project.settings.counters else 'the bundled CSV'}"
    return "pass --csv with the CSV the build was made from, or generate the build again"


def lint_project(project: Project, disabled: frozenset[str] = frozenset(), grafana_schema: Path | None = None,
                 cwagent_schema: Path | None = None) -> list[Finding]:
    """Lint what the project would generate."""
    return lint(project, build(project), disabled, grafana_schema, cwagent_schema)


def lint(project: Project, artifacts: Artifacts, disabled: frozenset[str] = frozenset(),
         grafana_schema: Path | None = None, cwagent_schema: Path | None = None) -> list[Finding]:
    """Lint an artifact set: built from the project, or read from a build (output.read), which is what ships.
    Every rule family reads the same input."""
    if addon_source(project.settings):
        disabled = disabled | AGENT_RULES
    else:
        for cluster in project.settings.clusters:
            if artifacts.agent(cluster.name) is None:
                raise InputError(f"the build has no {agent_file(cluster.name)}", where=artifacts.origin,
                                 hint="lint a folder written by `gpudash generate` with the same settings")
    return lint_rules(lint_input(project, artifacts, grafana_schema, cwagent_schema), disabled)


def lint_rules(subject: LintInput, disabled: frozenset[str] = frozenset()) -> list[Finding]:
    """Every rule family over the one input, each family's findings sorted as before (each query parsed once)."""
    with each_read_once():
        return [finding for rules in FAMILIES for finding in run(rules, subject, disabled)]

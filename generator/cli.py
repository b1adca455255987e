"""The gpudash command line. Commands parse options, call one function, map errors to exit codes."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import sys
from pathlib import Path

import click

from .cli_base import (Between, config_option, csv_option, ends_with_command, ends_with_this_command, left_to_exit,
                       load_project_for, main, no_cycle_collection, optional_path, output_option, waiting_for_turn,
                       folder_given)
from . import printed
from .errors import EXIT_FINDINGS, GpudashError, OutputError
from .build_folder import BUILD


class _ReaderGone(io.RawIOBase):
    """A standard stream that survives its reader: once the pipe is closed (`gpudash metrics | head -1`,
    `gpudash push 2>&1 | head`) the rest of that stream is dropped and the command goes on to the end
    of its work and its own exit code. A full disk under standard output (`> /dev/full`) is an error
    of its own, raised to the caller; standard error has nowhere to report one, so it is dropped."""

    def __init__(self, fd: int, full_is_error: bool):
        self.fd = fd
        self.full_is_error = full_is_error
        self.gone = False

    def writable(self) -> bool:
        return True

    # Still the same descriptor: colour, progress and click's own checks see a terminal as one.
    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, data) -> int:
        if not self.gone:
            try:
                return os.write(self.fd, data)
            except BrokenPipeError:
                self.gone = True
            except OSError as exc:
                self.gone = True  # say it once; the message goes to stderr
                if self.full_is_error:
                    raise OutputError(f"cannot write to standard output ({os.strerror(exc.errno or errno.EIO)})",
                                      hint="free space where the output goes, or send it elsewhere") from None
        return len(data)


def _guarded(stream, full_is_error: bool):
    """`stream` writing through _ReaderGone, or `stream` itself when it has no descriptor. None (its descriptor was
    closed when the process started, `gpudash generate >&-`: Python makes no stream, and a write or flush of None
    failed after the work was done) is a stream to nowhere, as a closed pipe is: the exit code stays the command's."""
    if stream is None:
        fd = os.open(os.devnull, os.O_WRONLY)
        return io.TextIOWrapper(io.BufferedWriter(_ReaderGone(fd, full_is_error)), encoding="utf-8",
                                line_buffering=True, write_through=not full_is_error)
    if not hasattr(stream, "fileno"):
        return stream
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return stream
    return io.TextIOWrapper(io.BufferedWriter(_ReaderGone(fd, full_is_error)), encoding=stream.encoding,
                            errors=stream.errors, line_buffering=True, write_through=not full_is_error)


def run() -> None:
    """The `gpudash` command: `main` with standard output and error that may be closed or full."""
    ends_with_command()
    sys.stdout = _guarded(sys.stdout, full_is_error=True)
    sys.stderr = _guarded(sys.stderr, full_is_error=False)
    try:
        main()
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    try:
        sys.stdout.flush()
    except OutputError as exc:  # the last line did not fit either
        sys.stderr.write(f"error: {exc.printed()}\n")
        code = exc.exit_code
    sys.stderr.flush()
    _exit(code)


def _exit(code) -> None:
    """End the process with `code`. Once the command is done and no other thread runs, the exit handlers
    run and the process ends without the interpreter's teardown, which frees every object and module one
    by one: about 15 ms of a small `generate` for memory the system takes back at once anyway."""
    import atexit
    import threading

    if (code is None or isinstance(code, int)) and threading.active_count() == 1:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code or 0)
    sys.exit(code)


@main.command()
@config_option
@csv_option
@click.option("--out", default=BUILD, show_default=True, metavar="DIR", help="Output directory.",
              callback=folder_given)
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 and list the differences when DIR is not what would be generated.")
@click.option("--force", is_flag=True,
              help="Replace DIR even when it holds files gpudash did not write or files edited since (they are lost).")
@output_option
def generate(config: str | None, csv: str | None, out: str, check: bool, force: bool, output: str) -> None:
    """Write every artifact into the output directory (atomically, with manifest.json)."""
    with no_cycle_collection():  # from the imports of the build's modules on: the settings are read with it off too
        _generate(config, csv, out, check, force, output)


def _generate(config: str | None, csv: str | None, out: str, check: bool, force: bool, output: str) -> None:
    from .dashboard_parts import part_counts
    from .folder_path import as_named
    from .grafana_inputs import defined_uids
    from .heap import KEPT_FROM, keep_freed_memory
    from .limits import checked_build
    from .output import (Known, PreviousParts, artifacts_record, differences as build_differences, encode,
                         made_for_the_same, moved_resources, previous_dashboard_configmaps, previous_prometheus_rules,
                         previous_record, previous_stacks, renamed_resources, settings_record, turn, write_files,
                         SIDECAR_FILE)

    project = load_project_for(config, csv)
    if len(project.settings.clusters) >= KEPT_FROM and ends_with_this_command():
        keep_freed_memory()  # (a large build's texts of megabytes, made and freed)
    made_with = settings_record(project.settings)
    shown = printed.path(Path(out))  # (a path holding a newline or another control character is printed escaped)
    # a path with a `..` is read and written where it names (folder_path.named): the previous build is read there too
    target = as_named(Path(out))
    # from the first read of the build in the folder to the write, another gpudash's turn waits; --check only reads, so
    # it shares its turn with other readers (lint/plan --from, other checks) and waits for a writer alone
    with turn(target, waiting_for_turn(target), shared=check):
        # the resources of a cluster split over several CloudFormation templates stay in the stacks the build in the
        # folder put them in while those hold them (cloudformation.split_cluster), with --check as without
        before = previous_record(target)  # (its manifest, read once)
        parts = PreviousParts(target, previous_stacks(before))
        # a dashboard CloudWatch would cut short, or a widget or alarm the classic agent would feed a wrong
        # number, is refused, not written
        artifacts = checked_build(project, placed=parts, ahead=True)
        requests = list(artifacts.alarms)
        notes = artifacts.notes
        files = encode(artifacts)
        record = artifacts_record(artifacts)
        refused_templates = _over_template_quota(artifacts, files)
        previous = sorted(parts.previous) if not check else []
        gone = sorted(set(previous) - set(record["cloudformation"]))
        rules_written = {(resource["metadata"]["namespace"], resource["metadata"]["name"])
                         for resource in artifacts.prometheus_rule_objects}
        rules_gone = [pair for pair in (previous_prometheus_rules(target, before) if not check else [])
                      if pair not in rules_written]
        built_uids = {d.uid for d in artifacts.grafana}
        maps_gone = previous_dashboard_configmaps(before, built_uids, (part_counts(
            defined_uids(project), built_uids, project.settings.grafana.uid_prefix),
            project.settings.grafana.uid_prefix)) if not check else []
        dashboards = len(artifacts.grafana)  # (parts of a dashboard too large for one ConfigMap each counted)
        known: Known = {}  # the previous build's files read and found holding their new bytes: not read again
        renamed = renamed_resources(target, artifacts.cloudformation, files, previous, known)
        moved = moved_resources(artifacts.cloudformation, parts) if not check else []
        # what the build in the folder wrote and this one does not, or declares elsewhere, is what these settings drop
        # or move only when that build was made for them: the build of other settings (another project, a file of
        # other clusters) is another deployment's, live, and none of it is named for deletion
        settings = project.settings
        theirs = (gone, rules_gone, maps_gone) if (gone or rules_gone or maps_gone or moved) and not made_for_the_same(
            before, settings.project or "", [cluster.name for cluster in settings.clusters]) else None
        if theirs:
            gone, rules_gone, maps_gone, moved = [], [], [], []
        # Only the files are left to write: the set is freed now, or left to the process's end when it ends with this
        # command (holding it while the files are written left their writing's CPU as it was)
        left_to_exit(artifacts)
        del artifacts
        if not check:
            write_files(target, files, made_with, record, force=force, known=known)
        else:
            differences = build_differences(target, files, made_with, record)
    if check:
        if output == "json":
            click.echo(json.dumps({"differences": [d.__dict__ for d in differences]}, indent=2))
        elif differences:
            click.echo(f"{shown} is not what gpudash would generate:")
            for difference in differences:
                click.echo(f"  {difference.change:8} {printed.path(difference.path)}")
            click.echo(f"run `{_generate_command(config, csv, out)}` and commit the result")
        else:
            click.echo(f"{shown} is up to date ({len(files) + 1} files)")
        sys.exit(EXIT_FINDINGS if differences else 0)
    from .build_notices import Notice, of_notes, printed_lines
    from .data_missing import addon_uncounted_names, counted, guessed_daemonset, unread_daemonset
    from .render.agent import unexpiring_log_groups
    from .render.alarms import (METRICS_INSIGHTS_ALARM_QUOTA, foreign_topics, insights_alarm_counts,
                                never_firing_fix, never_firing_unsaid, SHORT_PERIOD_RULE, short_periods, silent_alarms,
                                unwatched_static_alarms)
    from .names import shown as first_names
    from .render.cloudformation import QUOTA_FIX as TEMPLATE_QUOTA_FIX
    from .settings import unknown_regions, workload_rename_mix
    from .project import version_dependent_queries

    said: list[Notice] = []
    for where, what, fix in unknown_regions(project.settings):
        said.append(Notice("warning", f"{where}: {what}", fix, where=where))
    for where, what in version_dependent_queries(project):
        said.append(Notice("warning", f"{where}: {what}", where=where))
    mix = workload_rename_mix(project.settings)
    if mix:
        said.append(Notice("warning", f"{mix[0]}: {mix[1]}", mix[2], "PR003", mix[0]))
    unwatched = unwatched_static_alarms(project)
    if unwatched:
        said.append(Notice("warning", f"{unwatched[0]}: {unwatched[1]}", unwatched[2], where=unwatched[0]))
    for where, what, fix in short_periods(project.alarms, project.settings, project.catalog):
        said.append(Notice("warning", f"{where}: {what}", fix, SHORT_PERIOD_RULE, where))
    for noted in (guessed_daemonset(project), unread_daemonset(project)):
        if noted:
            said.append(Notice("note", f"{noted[0]}: {noted[1]}", noted[2], where=noted[0]))
    uncounted = addon_uncounted_names(project)
    if uncounted:
        said.append(Notice("warning", f"{uncounted[0]}: {uncounted[1]}", uncounted[2], where=uncounted[0]))
    unexpiring = unexpiring_log_groups(project.settings)
    if unexpiring:
        said.append(Notice(
            "warning", f"agent.log_group_in_stack: false on agent.pipeline: classic: the agent creates its EMF log "
                       f"group ({', '.join(unexpiring)}) with no retention, so it never expires and its storage grows "
                       f"every month (gpudash cost prices {project.settings.agent.log_retention_days} days)",
            f"set the retention once (`aws logs put-retention-policy --log-group-name {unexpiring[0]} "
            f"--retention-in-days {project.settings.agent.log_retention_days}`), or use agent.pipeline: otel, "
            f"which sets agent.log_retention_days on a group it creates", where="agent.log_group_in_stack"))
    silent = silent_alarms(requests)
    if silent:
        said.append(Notice("warning", f"{len(silent)} of {len(requests)} CloudWatch alarms have no actions and notify "
                                      f"no one (first: {silent[0]}); set alarms.actions.critical / .warning to SNS "
                                      f"topic ARNs", where="alarms.actions"))
    never = never_firing_unsaid((item.request for item in requests), project.alarms, project.settings)
    if never:
        said.append(Notice("warning", f"{len(never)} CloudWatch alarm(s) can never be in ALARM (first: "
                                      f"{never[0]['AlarmName']}): each counts readings below 1, and a period without "
                                      f"a reading has no datapoint",
                           never_firing_fix(never[0], project.settings, project.alarms, project.catalog), "AL028",
                           "scrape.interval"))
    for region, severity, topics in foreign_topics(project.settings):
        said.append(Notice("warning", f"{severity} alarms in {region} notify no one: alarms.actions.{severity} lists "
                                      f"only SNS topics of other Regions ({', '.join(topics)}), and CloudWatch "
                                      f"notifies only topics of the alarm's own Region; add a topic of {region}",
                           where=f"alarms.actions.{severity}"))
    for path, over in refused_templates:
        said.append(Notice("warning", f"{printed.path(target / path)}: {over}: CloudFormation refuses the template",
                           TEMPLATE_QUOTA_FIX, where=str(target / path)))
    if theirs:
        stacks, rules, maps = theirs
        named = " and ".join(part for part in (
            f"CloudFormation stacks {first_names(stacks)}" if stacks else "",
            f"PrometheusRules {first_names([f'{ns}/{name}' for ns, name in rules])}" if rules else "",
            f"dashboard ConfigMaps {first_names(maps)}" if maps else "") if part)
        said.append(Notice("warning", f"{shown}: the build it held was made for other settings (another project, or no "
                                      f"cluster of these): its {named} are that deployment's, not what this build "
                                      f"drops, and are not named for deletion",
                           "give each settings file its own --out folder; if those settings are gone (a project or its "
                           "clusters renamed), delete what they deployed yourself", where=str(target)))
    if gone:
        said.append(Notice("warning", f"{shown}: the previous build's CloudFormation stacks {first_names(gone)} are no "
                                      f"longer written: a deployed one still declares its dashboards and alarms (a "
                                      f"cluster that left, or a part of a cluster now split over fewer templates, "
                                      f"whose alarms another template now declares)",
                           "delete each with `aws cloudformation delete-stack` before deploying the build (not one of "
                           "a cluster another settings file now defines, after a split: that file's build deploys it)",
                           where=str(target)))
    if rules_gone:
        namespace = rules_gone[0][0]
        elsewhere = any(ns != namespace for ns, _ in rules_gone)
        said.append(Notice("warning", f"{shown}: the previous build's PrometheusRules "
                                      f"{first_names([f'{ns}/{name}' for ns, name in rules_gone])} are no longer "
                                      f"written: kubectl apply leaves each in the cluster, its rules evaluated beside "
                                      f"the new ones (an alarm removed still fires; the alert rules fill fewer groups, "
                                      f"or the namespace changed: docs/artifacts.md)",
                           f"`kubectl delete prometheusrule -n {printed.path(namespace)} "
                           f"{' '.join(printed.path(name) for ns, name in rules_gone if ns == namespace)}`"
                           f"{' (and the others in their namespaces)' if elsewhere else ''}",
                           where=str(target)))
    if maps_gone:
        said.append(Notice("warning", f"{shown}: the previous build's dashboard ConfigMaps {first_names(maps_gone)} "
                                      f"are no longer written (a dashboard removed or renamed, cut into fewer parts to fit "
                                      f"a ConfigMap, or grafana.uid_prefix changed): where {SIDECAR_FILE} is applied, "
                                      f"kubectl apply leaves each, and Grafana's sidecar goes on loading its "
                                      f"dashboard, with that build's panels",
                           f"`kubectl delete configmap -n NAMESPACE {' '.join(maps_gone)}` in the namespace you "
                           f"applied them to", where=str(target)))
    if moved:
        name, was, now = moved[0]
        said.append(Notice("warning", f"{shown}: {len(moved)} CloudFormation resource(s) move to another stack (first: "
                                      f"{name}, {was} -> {now}; a cluster's part is full, or its resources fit one "
                                      f"template again): deployed, one stack's update deletes each and another's "
                                      f"creates it (an alarm comes back in INSUFFICIENT_DATA, a change made in the "
                                      f"console is gone)",
                           "delete the stacks no longer written, then deploy in the order of Metadata.gpudash.Part "
                           "(docs/artifacts.md's loop: a resource moves only to a later part)", where=str(target)))
    if renamed:
        stack, name, was, now = renamed[0]
        said.append(Notice("warning", f"{shown}: {len(renamed)} CloudFormation resource(s) of the previous build have "
                                      f"another logical id now (first: {name} in {stack}, {was} -> {now}; an older "
                                      f"gpudash gave a name its plain words): deployed as they are, CloudFormation "
                                      f"creates each anew under its name and then deletes the old id's, which deletes "
                                      f"the alarm or dashboard (a log group's creation fails)",
                           "before deploying, rename each in its stack with CloudFormation's stack refactoring (the "
                           "old logical id to the new one), or delete and re-create it", where=str(target)))
    for region, count in insights_alarm_counts(requests).items():
        if count > METRICS_INSIGHTS_ALARM_QUOTA:
            listed = " (each pod of alarms.static_pods has one per cluster for a rule judging each GPU it holds, and " \
                     "a second on the MIG instances it holds where GPUs may be split: fewer static pods, exporter.mig: " \
                     "none where no GPU is split, or alarms.per_pod: group_by)" if project.settings.alarms.static_pods \
                and project.settings.alarms.per_pod == "static" else ""
            said.append(Notice("warning", f"{count} Metrics Insights alarms in {region} exceed the default quota of "
                                          f"{METRICS_INSIGHTS_ALARM_QUOTA} per Region; ask for an increase or use "
                                          f"fewer clusters per Region{listed}"))
    # (naming the CSV's path as given, as lint's CSV001, CSV003 and CSV004)
    said += [Notice("warning", warning, where="counters")
             for warning in (*project.catalog.unknown, *project.catalog.repeats, *project.catalog.retypings)]
    said += of_notes(notes)
    for line in printed_lines(said):  # stderr, whatever the output: what a person reading a CI job's log sees
        click.echo(line, err=True)
    if output == "json":
        warnings = [n.as_dict() for n in said if n.level == "warning"]
        click.echo(json.dumps({"out": str(target), "files": sorted(files), "warnings": warnings,
                               "notes": [n.as_dict() for n in said if n.level == "note"]}, indent=2))
    else:
        # the build's dashboards: one too large for its ConfigMap is cut into parts (dashboard_parts)
        defined = len(project.grafana_definitions()) + len(project.grafanalib_dashboards)
        cut = f": {defined} defined, those too large for one ConfigMap cut into parts" if dashboards > defined else ""
        click.echo(f"wrote {len(files) + 1} files to {shown} ({counted(dashboards, 'Grafana dashboard')}{cut})")


def _over_template_quota(artifacts, files: dict[str, bytes]) -> list[tuple[str, str]]:
    """(file, what is over) of each CloudFormation template of the build over CloudFormation's quotas."""
    from .output import template_file
    from .render.cloudformation import over_quota

    found = ((template_file(stack), over_quota(template, len(files[template_file(stack)])))
             for stack, template in sorted(artifacts.cloudformation.items()))
    return [(path, over) for path, over in found if over]


def _generate_command(config: str | None, csv: str | None, out: str) -> str:
    """The `gpudash generate` that rewrites what --check compared, with the user's own options."""
    words = ["gpudash", "generate"]
    for flag, value in (("--config", config), ("--csv", csv), ("--out", out if out != BUILD else None)):
        if value:
            words += [flag, value]
    return " ".join(printed.argument(word) for word in words)


def _schema_problem(path: Path, given: str) -> str | None:
    """What keeps `path` (a schema file lint is given, `given` as passed) from being read as one: it does not exist, or
    is there as something else than a file (said as what it is); None for a file. One it cannot look at (a folder on
    its way that may not be entered) is an input error saying so, not an internal error."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return "does not exist"
        raise GpudashError(f"cannot read {printed.path(path.name)} ({exc.strerror})", where=given,
                           hint="check the path and its permissions") from None
    if stat.S_ISREG(mode):
        return None
    return ("is a folder" if stat.S_ISDIR(mode) else "is a named pipe" if stat.S_ISFIFO(mode) else
            "is a device or socket") + ", not a file"


@main.command()
@config_option
@csv_option
@output_option
@click.option("--from", "from_dir", metavar="DIR", callback=folder_given,
              help="Lint exactly the files of this build (as `generate` wrote them) instead of generating.")
@click.option("--disable", multiple=True, metavar="RULE", help="Skip a rule by id (repeatable).")
@click.option("--grafana-schema", envvar="GPUDASH_GRAFANA_SCHEMA", metavar="DIR",
              help="Folder of Grafana's dashboard JSON schemas (grafana-foundation-sdk jsonschema/) "
                   "to validate against (rule GF010). Env: GPUDASH_GRAFANA_SCHEMA.")
@click.option("--cwagent-schema", envvar="GPUDASH_CWAGENT_SCHEMA", metavar="FILE",
              help="The CloudWatch agent's config JSON schema to validate cwagentconfig.json against "
                   "(rule AG004). Env: GPUDASH_CWAGENT_SCHEMA.")
@click.option("--rules", "list_rules", is_flag=True, help="List the rules and exit.")
def lint(config: str | None, csv: str | None, output: str, from_dir: str | None, disable: tuple[str, ...],
         grafana_schema: str | None, cwagent_schema: str | None, list_rules: bool) -> None:
    """Check the generated artifacts: PromQL, metrics, units, datasources, layout, schema."""
    from .data_missing import counted
    from .lint.runner import all_rules, lint as lint_artifacts, read_schemas

    if list_rules:
        rows = [[rule.id, rule.summary] for rule in all_rules()]
        if output == "json":
            click.echo(json.dumps([{"rule": r[0], "summary": r[1]} for r in rows], indent=2))
        else:
            from .console import table
            click.echo(table(["RULE", "CHECKS"], rows))
        return
    problem = grafana_schema and _schema_problem(Path(grafana_schema, "dashboard.jsonschema.json"), grafana_schema)
    if problem:
        raise GpudashError("no dashboard.jsonschema.json in this folder" if problem == "does not exist" else
                           f"its dashboard.jsonschema.json {problem}", where=grafana_schema,
                           hint="point --grafana-schema at grafana-foundation-sdk's jsonschema/ folder")
    problem = cwagent_schema and _schema_problem(Path(cwagent_schema), cwagent_schema)
    if problem:
        raise GpudashError(f"the CloudWatch agent schema file {problem}", where=cwagent_schema,
                           hint="point --cwagent-schema at the agent's translator/config/schema.json")
    read_schemas(optional_path(grafana_schema), optional_path(cwagent_schema))  # bad input fails before the build
    known = {rule.id for rule in all_rules()}
    unknown = sorted({rule.upper() for rule in disable} - known)
    if unknown:
        from .guesses import did_you_mean

        meant = did_you_mean(unknown[0], known, quoted=False) if len(unknown) == 1 else ""
        raise click.BadParameter(f"no rule {', '.join(unknown)}; {meant}`gpudash lint --rules` lists them",
                                 param_hint="--disable")
    disabled = frozenset(rule.upper() for rule in disable)
    project = load_project_for(config, csv)
    if from_dir:  # what ships: the build's own files, judged by the settings it was made with
        from .output import read

        artifacts = read(Path(from_dir), origin=from_dir, settings=project.settings,
                         waiting=waiting_for_turn(Path(from_dir)))
    else:
        from .artifacts import build

        artifacts = build(project)
    findings = lint_artifacts(project, artifacts, disabled, optional_path(grafana_schema),
                              optional_path(cwagent_schema))
    errors = [f for f in findings if f.severity == "error"]
    notes = [f for f in findings if f.severity == "note"]
    warnings = len(findings) - len(errors) - len(notes)
    if output == "json":  # the counts the table's last line gives
        click.echo(json.dumps({"findings": [f.as_dict() for f in findings], "errors": len(errors),
                               "warnings": warnings, "notes": len(notes)}, indent=2))
    else:
        from .console import style
        for finding in findings:
            colour = {"error": "red", "warning": "yellow"}.get(finding.severity, "blue")
            # (a finding quotes definitions, settings and the build's files: escaped in text, raw in JSON)
            click.echo(f"{style(finding.rule, fg=colour)} {finding.severity}: {printed.text(finding.where)}: "
                       f"{printed.text(finding.message)}")
        click.echo(f"{counted(len(errors), 'error')}, {counted(warnings, 'warning')}"
                   + (f", {counted(len(notes), 'note')}" if notes else ""))
    sys.exit(EXIT_FINDINGS if errors else 0)


@main.command()
@config_option
@csv_option
@output_option
def metrics(config: str | None, csv: str | None, output: str) -> None:
    """Show the metric catalog: each DCGM field with its type, unit and family."""
    from .catalog import load_counters
    from .settings import load_settings, settings_counters

    if csv:
        catalog = load_counters(Path(csv))
    else:
        settings = load_settings(optional_path(config))
        click.echo(f"settings: {settings.origin}", err=True)
        catalog = settings_counters(settings)
    if output == "json":
        click.echo(json.dumps([{"name": m.name, "type": m.kind, "unit": m.unit.label,
                                "grafana_unit": m.charted_unit.grafana, "family": m.family, "help": m.help}
                               for m in catalog], indent=2))
        return
    from .console import table
    # (the CSV's help texts and its path as a person wrote them: escaped in text, raw in JSON)
    rows = [[printed.text(m.name), m.kind, m.unit.label, printed.text(m.family), printed.text(m.help)] for m in catalog]
    click.echo(table(["FIELD", "TYPE", "UNIT", "FAMILY", "HELP"], rows))
    click.echo(f"{len(catalog)} fields from {printed.path(catalog.source)}")


@main.command()
@config_option
@csv_option
@click.option("--clusters", type=click.IntRange(1, 10000), help="Clusters (default: those in the settings).")
@click.option("--pods", type=click.IntRange(0, 10_000_000), required=True, help="GPU pods running at once, fleet-wide.")
@click.option("--churn", type=click.IntRange(0, 100_000_000), default=0, show_default=True,
              help="GPU pods started per month.")
@click.option("--view-hours", type=Between(0, 744), default=40.0, show_default=True,
              help="Hours each cluster's dashboards are open per month.")
@click.option("--gpus", type=click.IntRange(0, 10_000_000), help="GPUs across the fleet (default: one per pod).")
@click.option("--nodes", type=click.IntRange(0, 10_000_000),
              help="GPU nodes across the fleet (default: one per GPU, an upper bound of what is counted per node).")
@click.option("--mig-instances", type=click.IntRange(1, 7),
              help="MIG instances each GPU is split into (1: whole GPUs), of the clusters whose GPUs may be split "
                   "(a cluster saying exporter.mig: none has whole GPUs). Pods beyond the GPU instances share them "
                   "(time-slicing, MPS): the exporter writes an instance's series once per pod holding it with "
                   "exporter.virtual_gpus, else once, under one of them.")
@click.option("--prices", "prices_file", metavar="FILE",
              help="JSON with rates that replace the bundled ones (same keys as the bundled price file).")
@output_option
def cost(config: str | None, csv: str | None, clusters: int | None, pods: int, churn: int, view_hours: float,
         gpus: int | None, nodes: int | None, mig_instances: int | None, prices_file: str | None,
         output: str) -> None:
    """Estimate the monthly CloudWatch cost, per-pod GROUP BY alarms against static per-pod alarms."""
    from .artifacts import build
    from .console import table
    from .cost import Fleet, estimates, load_prices, refuse_unbounded

    gpu_count = pods if gpus is None else gpus
    if gpu_count == 0 and pods:
        raise click.BadParameter(f"0 GPUs for {pods:,} GPU pods: a GPU pod holds a GPU or a share of one; give --gpus "
                                 "at least 1 (pods beyond the GPUs share them), or leave it out for one per pod",
                                 param_hint="'--gpus'")
    if nodes == 0 and gpu_count:
        raise click.BadParameter(f"0 GPU nodes for {gpu_count:,} GPUs"
                                 f"{' (one per pod without --gpus)' if gpus is None else ''}: every GPU is on a node; "
                                 "give --nodes at least 1, or leave it out to count one node per GPU (an upper bound)",
                                 param_hint="'--nodes'")
    if nodes is not None and nodes > gpu_count:
        raise click.BadParameter(f"{nodes:,} GPU nodes for {gpu_count:,} GPUs"
                                 f"{' (one per pod without --gpus)' if gpus is None else ''}: a GPU node has at "
                                 "least one GPU; give --nodes at most the GPUs, or --gpus across those nodes",
                                 param_hint="'--nodes'")
    project = load_project_for(config, csv)
    if (mig_instances or 1) > 1 and project.settings.no_mig:
        raise click.BadParameter(f"{mig_instances} MIG instances per GPU, but every cluster of the settings says no GPU "
                                 f"is split (exporter.mig or clusters[].exporter.mig: none): leave --mig-instances "
                                 f"out, or write exporter.mig: some (clusters[].exporter.mig: some for the clusters "
                                 f"whose GPUs are split)", param_hint="'--mig-instances'")
    fleet = Fleet(clusters=clusters or len(project.settings.clusters), pods=pods, churn=churn,
                  dashboard_view_hours=view_hours, gpus=gpus, nodes=nodes, mig_instances=mig_instances,
                  virtual_gpus=project.settings.exporter.virtual_gpus)
    for warning in fleet.warnings(project.settings.no_mig):
        click.echo(f"warning: {warning}", err=True)
    prices = load_prices(overrides=Path(prices_file) if prices_file else None)
    result = estimates(project, fleet, prices, build(project))  # the dashboards priced are the set's
    if prices_file:
        refuse_unbounded(result, prices_file)
    if output == "json":
        click.echo(json.dumps(result, indent=2))
        return
    for mode in ("group_by", "static"):
        estimate = result[mode]
        if estimate is None:
            continue  # the Container Insights add-on takes no static per-pod alarms
        click.echo(f"\nper-pod alarms as {'one GROUP BY alarm per rule and cluster' if mode == 'group_by' else 'one alarm per pod'}"
                   f" ({estimate['alarms']} alarms)")
        rows = [[line["item"], f"{line['quantity']:,.1f}", f"${line['unit_price']:.3f}", f"${line['monthly']:,.2f}",
                 line["basis"]] for line in estimate["lines"]]
        click.echo(table(["ITEM", "QUANTITY", "PRICE", "MONTHLY", "BASIS"], rows))
        click.echo(f"total ${estimate['total']:,.2f} a month")
    click.echo("\nCloudWatch sources for this fleet (GROUP BY alarms): " + "; ".join(
        f"{name} ${item['total']:,.2f} a month" + (" (configured)" if name == result["cloudwatch_source"] else "")
        for name, item in result["sources"].items()))
    for note in result["limits"]:
        click.echo(f"limit: {note}")
    for note in result["prometheus_only"]:
        click.echo(f"not priced: {note}")
    # (as_of and source as a --prices file gives them, and its path: escaped in text, raw in JSON)
    click.echo(f"\nprices as of {printed.text(str(result['prices_as_of']))}: {printed.text(str(result['source']))}")
    if result["clusters_priced_elsewhere"]:
        click.echo(f"rates of {printed.text(str(result['rates_region']))} (the prices' Region): the settings' clusters "
                   f"in {', '.join(printed.text(r) for r in result['clusters_priced_elsewhere'])} are billed at their "
                   f"Region's rates, which this estimate does not hold (give --prices with them and their \"region\")")
    if result["uncertain_rates"]:
        click.echo(f"uncertain rates (estimates or readings to check): {', '.join(result['uncertain_rates'])}")
    if result["overridden_rates"]:
        click.echo(f"overridden from {printed.path(prices_file)}: {', '.join(result['overridden_rates'])}")


@main.command("init-config")
@click.argument("path", default="gpudash.yaml", metavar="[PATH]")
def init_config(path: str) -> None:
    """Write the commented default settings to PATH (default ./gpudash.yaml; a folder gets a gpudash.yaml
    inside; - prints them); never overwrites."""
    from .folder_path import as_named, check_folder_path
    from .resources import default_config

    text = default_config().read_text(encoding="utf-8")
    if path == "-":
        click.echo(text, nl=False)
        return
    target = as_named(Path(path))  # (no folder made before a `..`)
    if os.path.islink(target) and not os.path.exists(target) and not path.endswith(("/", os.sep)):
        _taken(target)  # a link to a file not there: taken, never written through (not "point it at a folder")
    check_folder_path(target)  # (under a file, a link in a loop, too long: said as what it is)
    if target.is_dir() or path.endswith(("/", os.sep)):
        target = target / "gpudash.yaml"
    shown = str(target)
    if target.exists() or target.is_symlink():
        _taken(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise GpudashError(f"cannot write the settings file ({exc.strerror or exc})", where=shown,
                           hint="choose a path in a folder you can write to, e.g. ./gpudash.yaml") from None
    click.echo(f"wrote {printed.path(shown)}")
    if target.resolve() != (Path.cwd() / "gpudash.yaml").resolve():
        click.echo(f"commands read ./gpudash.yaml by default: pass --config {printed.argument(shown)} "
                   f"or export GPUDASH_CONFIG={printed.argument(target.resolve())}")


def _taken(target: Path) -> None:
    """Raise the input error of init-config given a path something is at already (a file, a link): never overwritten."""
    raise GpudashError("the file exists already", where=str(target),
                       hint="choose another path or remove it; commands read it as it is")


if __name__ == "__main__":  # pragma: no cover
    run()

"""The gpudash command line. Commands parse options, call one function, map errors to exit codes."""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

import click

from . import __version__
from .errors import EXIT_FINDINGS, EXIT_INPUT, GpudashError, RemoteError

EXIT_INTERNAL = 4


class GpudashGroup(click.Group):
    """Turns GpudashError into one message and its exit code; tracebacks only with --debug."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GpudashError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # a bug in gpudash: say so, keep the traceback behind --debug
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            click.echo(f"internal error: {type(exc).__name__}: {exc}\n  run again with --debug and report it",
                       err=True)
            ctx.exit(EXIT_INTERNAL)


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


config_option = click.option("--config", "config", envvar="GPUDASH_CONFIG", metavar="FILE",
                             help="Settings file (default: the bundled gpudash.yaml). Env: GPUDASH_CONFIG.")
csv_option = click.option("--csv", "csv", metavar="FILE",
                          help="DCGM exporter counters CSV (default: settings `counters`, else the bundled one).")
output_option = click.option("--output", "output", type=click.Choice(["table", "json"]), default="table",
                             show_default=True, help="Output format; json is for machines.")


@click.group(cls=GpudashGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.version_option(__version__, prog_name="gpudash")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """GPU monitoring for Kubernetes as code: DCGM exporter metrics to Grafana and CloudWatch.

    Exit codes: 0 success, 1 findings or differences, 2 usage or input error,
    3 a remote system failed, 4 internal error.
    """
    ctx.ensure_object(dict)["debug"] = debug


@main.command()
@config_option
@csv_option
@click.option("--out", default="build", show_default=True, metavar="DIR", help="Output directory.")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 and list the differences when DIR is not what would be generated.")
@output_option
def generate(config: str | None, csv: str | None, out: str, check: bool, output: str) -> None:
    """Write every artifact into the output directory (atomically, with manifest.json)."""
    from .artifacts import build
    from .output import compare, write
    from .project import load_project

    project = load_project(_path(config), _path(csv))
    files = build(project)
    target = Path(out)
    if check:
        differences = compare(target, files)
        if output == "json":
            click.echo(json.dumps({"differences": [d.__dict__ for d in differences]}, indent=2))
        elif differences:
            click.echo(f"{target} is not what gpudash would generate:")
            for difference in differences:
                click.echo(f"  {difference.change:8} {difference.path}")
            click.echo("run `gpudash generate` and commit the result")
        else:
            click.echo(f"{target} is up to date ({len(files) + 1} files)")
        sys.exit(EXIT_FINDINGS if differences else 0)
    write(target, files)
    from .render.alarms import METRICS_INSIGHTS_ALARM_QUOTA, cloudwatch_alarms, insights_alarm_counts

    for region, count in insights_alarm_counts(cloudwatch_alarms(project.alarms, project.settings)).items():
        if count > METRICS_INSIGHTS_ALARM_QUOTA:
            click.echo(f"warning: {count} Metrics Insights alarms in {region} exceed the default quota of "
                       f"{METRICS_INSIGHTS_ALARM_QUOTA} per Region; ask for an increase or use fewer clusters per "
                       f"Region", err=True)
    if output == "json":
        click.echo(json.dumps({"out": str(target), "files": sorted(files)}, indent=2))
    else:
        for warning in project.catalog.repeats:
            click.echo(f"warning: {warning}", err=True)
        click.echo(f"wrote {len(files) + 1} files to {target} "
                   f"({len(project.grafana_dashboards()) + len(project.grafanalib_dashboards)} Grafana dashboards)")


@main.command()
@config_option
@csv_option
@output_option
@click.option("--disable", multiple=True, metavar="RULE", help="Skip a rule by id (repeatable).")
@click.option("--grafana-schema", envvar="GPUDASH_GRAFANA_SCHEMA", metavar="DIR",
              help="Folder of Grafana's dashboard JSON schemas (grafana-foundation-sdk jsonschema/) "
                   "to validate against (rule GF010). Env: GPUDASH_GRAFANA_SCHEMA.")
@click.option("--cwagent-schema", envvar="GPUDASH_CWAGENT_SCHEMA", metavar="FILE",
              help="The CloudWatch agent's config JSON schema to validate cwagentconfig.json against "
                   "(rule AG004). Env: GPUDASH_CWAGENT_SCHEMA.")
@click.option("--rules", "list_rules", is_flag=True, help="List the rules and exit.")
def lint(config: str | None, csv: str | None, output: str, disable: tuple[str, ...],
         grafana_schema: str | None, cwagent_schema: str | None, list_rules: bool) -> None:
    """Check the generated artifacts: PromQL, metrics, units, datasources, layout, schema."""
    from .lint_runner import all_rules, lint_project
    from .project import load_project

    if list_rules:
        rows = [[rule.id, rule.summary] for rule in all_rules()]
        if output == "json":
            click.echo(json.dumps([{"rule": r[0], "summary": r[1]} for r in rows], indent=2))
        else:
            from .console import table
            click.echo(table(["RULE", "CHECKS"], rows))
        return
    if grafana_schema and not Path(grafana_schema, "dashboard.jsonschema.json").is_file():
        raise GpudashError("no dashboard.jsonschema.json in this folder", where=grafana_schema,
                           hint="point --grafana-schema at grafana-foundation-sdk's jsonschema/ folder")
    if cwagent_schema and not Path(cwagent_schema).is_file():
        raise GpudashError("the CloudWatch agent schema file does not exist", where=cwagent_schema,
                           hint="point --cwagent-schema at the agent's translator/config/schema.json")
    project = load_project(_path(config), _path(csv))
    findings = lint_project(project, frozenset(disable), _path(grafana_schema), _path(cwagent_schema))
    errors = [f for f in findings if f.severity == "error"]
    if output == "json":
        click.echo(json.dumps({"findings": [f.as_dict() for f in findings], "errors": len(errors)}, indent=2))
    else:
        from .console import style
        for finding in findings:
            colour = "red" if finding.severity == "error" else "yellow"
            click.echo(f"{style(finding.rule, fg=colour)} {finding.severity}: {finding.where}: {finding.message}")
        click.echo(f"{len(errors)} errors, {len(findings) - len(errors)} warnings")
    sys.exit(EXIT_FINDINGS if errors else 0)


@main.command()
@config_option
@csv_option
@output_option
def metrics(config: str | None, csv: str | None, output: str) -> None:
    """Show the metric catalog: each DCGM field with its type, unit and family."""
    from .catalog import load_counters
    from .settings import load_settings

    catalog = load_counters(_path(csv) or load_settings(_path(config)).counters_path)
    if output == "json":
        click.echo(json.dumps([{"name": m.name, "type": m.kind, "unit": m.unit.label,
                                "grafana_unit": m.charted_unit.grafana, "family": m.family, "help": m.help}
                               for m in catalog], indent=2))
        return
    from .console import table
    rows = [[m.name, m.kind, m.unit.label, m.family, m.help] for m in catalog]
    click.echo(table(["FIELD", "TYPE", "UNIT", "FAMILY", "HELP"], rows))
    click.echo(f"{len(catalog)} fields from {catalog.source}")


@main.command()
@config_option
@csv_option
@click.option("--clusters", type=click.IntRange(1, 10000), help="Clusters (default: those in the settings).")
@click.option("--pods", type=click.IntRange(0, 10_000_000), required=True, help="GPU pods running at once, fleet-wide.")
@click.option("--churn", type=click.IntRange(0, 100_000_000), default=0, show_default=True,
              help="GPU pods started per month.")
@click.option("--view-hours", type=click.FloatRange(0, 744), default=40.0, show_default=True,
              help="Hours each cluster's dashboards are open per month.")
@output_option
def cost(config: str | None, csv: str | None, clusters: int | None, pods: int, churn: int, view_hours: float,
         output: str) -> None:
    """Estimate the monthly CloudWatch cost, per-pod GROUP BY alarms against static per-pod alarms."""
    from .console import table
    from .cost import Fleet, compare
    from .project import load_project

    project = load_project(_path(config), _path(csv))
    fleet = Fleet(clusters=clusters or len(project.settings.clusters), pods=pods, churn=churn,
                  dashboard_view_hours=view_hours)
    result = compare(project, fleet)
    if output == "json":
        click.echo(json.dumps(result, indent=2))
        return
    for mode in ("group_by", "static"):
        estimate = result[mode]
        click.echo(f"\nper-pod alarms as {'one GROUP BY alarm per rule and cluster' if mode == 'group_by' else 'one alarm per pod'}"
                   f" ({estimate['alarms']} alarms)")
        rows = [[line["item"], f"{line['quantity']:,.1f}", f"${line['unit_price']:.3f}", f"${line['monthly']:,.2f}",
                 line["basis"]] for line in estimate["lines"]]
        click.echo(table(["ITEM", "QUANTITY", "PRICE", "MONTHLY", "BASIS"], rows))
        click.echo(f"total ${estimate['total']:,.2f} a month")
    click.echo(f"\nprices as of {result['prices_as_of']}: {result['source']}")


# --- publishing ---------------------------------------------------------------------------

from_option = click.option("--from", "from_dir", metavar="DIR",
                           help="Publish this build (its manifest is checked) instead of generating in memory.")
force_option = click.option("--force", is_flag=True,
                            help="Overwrite objects gpudash does not own, or that were edited since it wrote them.")
prune_option = click.option("--prune", is_flag=True, help="Delete objects gpudash owns that are no longer defined.")
dry_run_option = click.option("--dry-run", is_flag=True, help="Do everything but write.")
skip_verify_option = click.option("--skip-verify", is_flag=True,
                                  help="Publish without first checking that the exporter and agents feed data.")


def _desired(config: str | None, csv: str | None, from_dir: str | None):
    from .artifacts import build
    from .project import load_project
    from .publish import desired_from, read_build

    project = load_project(_path(config), _path(csv))
    files = read_build(Path(from_dir)) if from_dir else build(project)
    return project, desired_from(files, project.settings)


def _grafana_client(insecure: bool, token_file: str | None):
    from .targets.grafana_api import GrafanaClient

    url = os.environ.get("GRAFANA_URL")
    if not url:
        raise GpudashError("GRAFANA_URL is not set", hint="export GRAFANA_URL=https://grafana.example.com")
    token = os.environ.get("GRAFANA_TOKEN")
    if token_file:
        try:
            token = Path(token_file).read_text().strip()
        except OSError as exc:
            raise GpudashError(f"cannot read the token file ({exc.strerror})", where=token_file) from None
    basic = None
    if not token and os.environ.get("GRAFANA_USER"):
        basic = (os.environ["GRAFANA_USER"], os.environ.get("GRAFANA_PASSWORD", ""))
    if not token and not basic:
        raise GpudashError("no Grafana credentials",
                           hint="set GRAFANA_TOKEN (a service-account token), or --token-file, "
                                "or GRAFANA_USER and GRAFANA_PASSWORD")
    return GrafanaClient(url, token=token, basic=basic, verify=not insecure)


def _cloudwatch(profile: str | None, endpoint_url: str | None):
    from .targets.cloudwatch_sync import CloudWatch

    return CloudWatch(profile=profile, endpoint_url=endpoint_url)


def _print_changes(changes, output: str, outcomes=None) -> None:
    from .console import style
    from .publish import report

    if output == "json":
        click.echo(json.dumps(report(changes, outcomes), indent=2))
        return
    colours = {"create": "green", "update": "yellow", "delete": "red", "drift": "magenta", "foreign": "magenta"}
    done = {id(o.change): o for o in outcomes or []}
    for change in changes:
        outcome = done.get(id(change))
        state = ""
        if outcome is not None:
            state = " (done)" if outcome.done else (f" (FAILED: {outcome.error})" if outcome.error else " (not written)")
        place = f" [{change.region}]" if change.region else ""
        click.echo(f"{style(change.action.ljust(9), fg=colours.get(change.action))} {change.target} {change.kind} "
                   f"{change.name}{place}{state if change.action != 'unchanged' else ''}")
        for line in change.details:
            click.echo(f"            {line}")
    counts = report(changes)["summary"]
    click.echo(", ".join(f"{n} {a}" for a, n in sorted(counts.items())) or "nothing to publish")


def _progress(total: int, output: str, label: str):
    """A progress bar on a terminal (stderr), nothing otherwise."""
    import contextlib

    if output == "json" or not sys.stderr.isatty() or total < 10:
        return contextlib.nullcontext(lambda change: None)
    bar = click.progressbar(length=total, label=label, file=sys.stderr)

    @contextlib.contextmanager
    def run():
        with bar:
            yield lambda change: bar.update(1)
    return run()


def _finish(outcomes, output: str, changes) -> None:
    _print_changes(changes, output, outcomes)
    failed = [o for o in outcomes if o.error]
    refused = [o for o in outcomes if o.change.blocked and not o.done]
    if failed:
        written = sum(1 for o in outcomes if o.done)
        raise RemoteError(f"{len(failed)} of {len(failed) + written} writes failed; {written} were published "
                          f"(listed above as done)", hint="fix the cause and run again: publishing converges")
    if refused:
        click.echo(f"refused {len(refused)} object(s) edited outside gpudash or not owned by it; "
                   f"review them and use --force to overwrite", err=True)
        sys.exit(EXIT_FINDINGS)


def _preflight(project, groups: tuple[str, ...], skip: bool, **options) -> None:
    if skip:
        return
    from .verify import Options, preflight

    preflight(project, groups, Options(**options))


@main.command()
@config_option
@csv_option
@from_option
@click.option("--grafana/--no-grafana", "use_grafana", default=None,
              help="Include Grafana (default: when GRAFANA_URL is set).")
@click.option("--cloudwatch/--no-cloudwatch", "use_cloudwatch", default=True, show_default=True,
              help="Include CloudWatch.")
@click.option("--profile", envvar="AWS_PROFILE", help="AWS profile. Env: AWS_PROFILE.")
@click.option("--endpoint-url", envvar="AWS_ENDPOINT_URL", help="CloudWatch endpoint. Env: AWS_ENDPOINT_URL.")
@click.option("--insecure", is_flag=True, help="Do not verify Grafana's TLS certificate.")
@click.option("--token-file", metavar="FILE", help="Read the Grafana token from FILE.")
@output_option
def plan(config, csv, from_dir, use_grafana, use_cloudwatch, profile, endpoint_url, insecure, token_file, output):
    """Compare the generated artifacts with what is live; exit 1 when publishing would change something."""
    from .publish import pending
    from .targets import cloudwatch_sync, grafana_sync

    project, desired = _desired(config, csv, from_dir)
    changes = []
    if use_grafana or (use_grafana is None and os.environ.get("GRAFANA_URL")):
        client = _grafana_client(insecure, token_file)
        changes += grafana_sync.plan(client, desired.grafana, desired.folder)
    if use_cloudwatch:
        cloudwatch = _cloudwatch(profile, endpoint_url)
        changes += cloudwatch_sync.plan_dashboards(cloudwatch, desired.cloudwatch_dashboards,
                                                   desired.dashboard_regions)
        changes += cloudwatch_sync.plan_alarms(cloudwatch, desired.alarms, desired.alarm_prefix)
    _print_changes(changes, output)
    sys.exit(EXIT_FINDINGS if pending(changes, prune=True) else 0)


@main.command()
@config_option
@csv_option
@from_option
@force_option
@prune_option
@dry_run_option
@skip_verify_option
@click.option("--insecure", is_flag=True, help="Do not verify Grafana's TLS certificate.")
@click.option("--token-file", metavar="FILE", help="Read the Grafana token from FILE (else GRAFANA_TOKEN).")
@click.option("--prometheus-url", envvar="PROMETHEUS_URL", metavar="URL",
              help="Prometheus that the dashboards read, checked before pushing. Env: PROMETHEUS_URL.")
@output_option
def push(config, csv, from_dir, force, prune, dry_run, skip_verify, insecure, token_file, prometheus_url, output):
    """Publish the Grafana dashboards (GRAFANA_URL, GRAFANA_TOKEN); unchanged ones are not posted."""
    from .publish import git_note
    from .targets import grafana_sync

    project, desired = _desired(config, csv, from_dir)
    client = _grafana_client(insecure, token_file)
    _preflight(project, ("prometheus",), skip_verify, prometheus_url=prometheus_url)
    changes = grafana_sync.plan(client, desired.grafana, desired.folder)
    with _progress(len(changes), output, "pushing to Grafana") as tick:
        outcomes = grafana_sync.push(client, changes, desired.grafana, desired.folder, git_note(),
                                     force=force, prune=prune, dry_run=dry_run, progress=tick)
    _finish(outcomes, output, changes)


@main.command()
@config_option
@csv_option
@from_option
@force_option
@prune_option
@dry_run_option
@skip_verify_option
@click.option("--profile", envvar="AWS_PROFILE", help="AWS profile. Env: AWS_PROFILE.")
@click.option("--endpoint-url", envvar="AWS_ENDPOINT_URL", help="CloudWatch endpoint. Env: AWS_ENDPOINT_URL.")
@output_option
def apply(config, csv, from_dir, force, prune, dry_run, skip_verify, profile, endpoint_url, output):
    """Publish CloudWatch dashboards and alarms (standard AWS credentials), paced and idempotent."""
    from .targets import cloudwatch_sync

    project, desired = _desired(config, csv, from_dir)
    cloudwatch = _cloudwatch(profile, endpoint_url)
    _preflight(project, ("cloudwatch",), skip_verify, profile=profile, endpoint_url=endpoint_url)
    changes = cloudwatch_sync.plan_dashboards(cloudwatch, desired.cloudwatch_dashboards, desired.dashboard_regions)
    changes += cloudwatch_sync.plan_alarms(cloudwatch, desired.alarms, desired.alarm_prefix)
    with _progress(len(changes), output, "applying to CloudWatch") as tick:
        outcomes = cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                         force=force, prune=prune, dry_run=dry_run, progress=tick)
    _finish(outcomes, output, changes)


@main.command()
@config_option
@csv_option
@click.option("--skip", type=click.Choice(["kube", "exporter", "prometheus", "cloudwatch"]), multiple=True,
              help="Skip a group of checks (repeatable) when that system is not in use.")
@click.option("--context", help="kubeconfig context (default: the current one; KUBECONFIG is honoured).")
@click.option("--exporter-url", metavar="URL",
              help="The exporter's /metrics URL (default: through the Kubernetes API server's service proxy).")
@click.option("--prometheus-url", envvar="PROMETHEUS_URL", metavar="URL", help="Prometheus. Env: PROMETHEUS_URL.")
@click.option("--profile", envvar="AWS_PROFILE", help="AWS profile. Env: AWS_PROFILE.")
@click.option("--endpoint-url", envvar="AWS_ENDPOINT_URL", help="CloudWatch endpoint. Env: AWS_ENDPOINT_URL.")
@click.option("--timeout", type=click.FloatRange(1, 300), default=10, show_default=True,
              help="Seconds each group of checks may take.")
@output_option
def verify(config, csv, skip, context, exporter_url, prometheus_url, profile, endpoint_url, timeout, output):
    """Check that the exporter and agents are deployed and feeding data; each failure says what to fix."""
    from . import verify as verifying
    from .console import style, table
    from .project import load_project

    project = load_project(_path(config), _path(csv))
    options = verifying.Options(context=context, exporter_url=exporter_url, prometheus_url=prometheus_url,
                                profile=profile, endpoint_url=endpoint_url, timeout=timeout)
    groups = tuple(g for g in verifying.GROUPS if g not in skip)
    checks = verifying.run(project, options, groups)
    if output == "json":
        click.echo(json.dumps({"checks": [c.as_dict() for c in checks],
                               "failed": len(verifying.failed(checks))}, indent=2))
    else:
        colours = {"ok": "green", "fail": "red", "warn": "yellow", "skip": "blue"}
        rows = [[c.group, c.name, style(c.status.upper(), fg=colours[c.status]), c.detail, c.fix] for c in checks]
        click.echo(table(["GROUP", "CHECK", "STATUS", "DETAIL", "FIX"], rows))
    sys.exit(EXIT_FINDINGS if verifying.failed(checks) else 0)


@main.command("init-config")
@click.argument("path", default="gpudash.yaml", metavar="[PATH]")
def init_config(path: str) -> None:
    """Write the commented default settings to PATH (default ./gpudash.yaml); never overwrites."""
    from .resources import default_config

    target = Path(path)
    if target.exists():
        raise GpudashError("the file exists already", where=path, hint="choose another path or remove it")
    try:
        target.write_text(default_config().read_text())
    except OSError as exc:
        raise GpudashError(f"cannot write ({exc.strerror})", where=path) from None
    click.echo(f"wrote {path}")


if __name__ == "__main__":  # pragma: no cover
    main()

"""The gpudash command line. Commands parse options, call one function, map errors to exit codes."""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

import click

from . import __version__
from .errors import EXIT_FINDINGS, GpudashError

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


def optional_path(value: str | None) -> Path | None:
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

    project = load_project(optional_path(config), optional_path(csv))
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
    from .render.alarms import METRICS_INSIGHTS_ALARM_QUOTA, insights_alarm_counts

    requests = json.loads(files["cloudwatch/alarms.json"])["alarms"]
    for region, count in insights_alarm_counts(requests).items():
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
    project = load_project(optional_path(config), optional_path(csv))
    findings = lint_project(project, frozenset(disable), optional_path(grafana_schema), optional_path(cwagent_schema))
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

    catalog = load_counters(optional_path(csv) or load_settings(optional_path(config)).counters_path)
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

    project = load_project(optional_path(config), optional_path(csv))
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


from . import cli_publish  # noqa: E402,F401  (registers plan, push, apply, verify)

if __name__ == "__main__":  # pragma: no cover
    main()

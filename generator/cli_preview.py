"""`gpudash preview`: the Grafana dashboards drawn as a static site, from a Prometheus or the sample."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from . import printed, redact
from .cli_base import (Between, checked_url, config_option, csv_option, load_project_for, main, output_option,
                       waiting_for_turn, folder_given)
from .errors import InputError


def dashboards_of(project, from_dir: str | None, option: str = "--from") -> list[tuple[str, dict[str, Any]]]:
    """(uid, dashboard JSON) of every Grafana dashboard: built in memory, or read from a build (named by `option`)."""
    if not from_dir:
        from .artifacts import grafana_dashboards

        return [(d.uid, d.model) for d in grafana_dashboards(project)]
    from .output import read

    found = [(d.uid, d.model) for d in read(Path(from_dir), origin=from_dir, waiting=waiting_for_turn(Path(from_dir)),
                                            option=option).grafana]
    if not found:
        raise InputError("the build holds no Grafana dashboards (grafana/*.json)", where=from_dir,
                         hint="run `gpudash generate --out DIR` first")
    return found


@main.command()
@config_option
@csv_option
@click.option("--prometheus-url", envvar="PROMETHEUS_URL", metavar="URL",
              callback=checked_url("http://localhost:9090"),
              help="Prometheus to query (e.g. a port-forwarded one). Env: PROMETHEUS_URL.")
@click.option("--sample", is_flag=True,
              help="No cluster: query a local Prometheus loaded with the bundled exporter payload "
                   "(needs Debian's prometheus package).")
@click.option("--from", "from_dir", metavar="DIR", callback=folder_given,
              help="Preview the dashboards of this build instead of generating.")
@click.option("--diff", "base_dir", metavar="BASE_DIR",
              help="Also draw the panels that differ from this build (before) side by side with the new ones.")
@click.option("--range", "range_text", metavar="DURATION",
              help="Time range up to now, e.g. 30m, 1h, 7d. Default: each dashboard's own (time.from).")
@click.option("--out", default="preview", show_default=True, metavar="DIR", callback=folder_given,
              help="Folder for the static site.")
@click.option("--force", is_flag=True,
              help="Replace DIR even when it holds files gpudash did not write or files edited since (they are lost).")
@click.option("--timeout", type=Between(0.5, 600), default=30.0, show_default=True,
              help="Seconds each query may take.")
@output_option
def preview(config: str | None, csv: str | None, prometheus_url: str | None, sample: bool, from_dir: str | None,
            base_dir: str | None, range_text: str | None, out: str, force: bool, timeout: float, output: str) -> None:
    """Draw the Grafana dashboards with real data as a static site (no Grafana needed).

    Each panel runs its own query (variables at their defaults) over the range and is drawn as
    inline SVG on Grafana's 24-column grid; the site opens from a CI artifact, with no network."""
    from .output import check_out, turn, write_files
    from .preview import site
    from .clients.prometheus import PrometheusClient

    if sample == bool(prometheus_url):
        raise click.UsageError("give either --prometheus-url URL (or PROMETHEUS_URL) or --sample")
    # before drawing, which may take minutes: a path that cannot name a folder, or one that is a file or a folder of
    check_out(Path(out))  # someone else's files (folder_path, then what write_files refuses)
    project = load_project_for(config, csv)
    dashboards = dashboards_of(project, from_dir)
    base = dashboards_of(project, base_dir, "--diff") if base_dir else None
    end = time.time()
    scrape_s = float(project.settings.scrape.seconds) if not sample else 15.0
    plans = [site.plan(uid, model, range_text, scrape_s, end) for uid, model in dashboards]

    def render(url: str, source: str) -> tuple[dict[str, bytes], list]:
        with PrometheusClient(url, timeout) as client:
            client.ready()
            # the panels' queries take Prometheus tens of seconds on a full range: said, not a silent wait
            panels = sum(len(site.visual_panels(plan.model)) for plan in plans)
            click.echo(f"querying {'the sample' if sample else source}: {panels} panels of {len(plans)} "
                       f"dashboard{'' if len(plans) == 1 else 's'}", err=True)
            site.run_queries(plans, client)
            files, summaries = site.site(plans, source, diff=base is not None)
            if base is not None:
                from .preview import compare

                files.update(compare.diff_pages(base, dashboards, plans, client, source, base_dir, from_dir))
        return files, summaries

    if sample:
        from .preview import sample as sampling

        longest = max((p.window.range_s for p in plans), default=3600.0)
        from .render.alarms import counted_group

        # the counters' recordings the rate panels read, written over the sample's history
        recorded = counted_group(project.counted_fields(), project.catalog, project.settings)
        click.echo(f"loading {longest / 3600:g} h of the sample's history{' and its counter recordings' if recorded else ''}"
                   f" into a local Prometheus", err=True)
        with sampling.serve(longest, end, project.settings.scrape.job_name, recorded=recorded,
                            labelled=sampling.as_scraped(project.settings)) as url:
            files, summaries = render(url, "the bundled sample exporter payload (--sample), replayed into a local "
                                           "Prometheus")
        source = "sample"
    else:
        source = redact.url(prometheus_url)
        files, summaries = render(prometheus_url, f"Prometheus at {source}")
    with turn(Path(out), waiting_for_turn(Path(out))):  # (write_files takes this turn: said here when it waits)
        write_files(Path(out), files, force=force)
    if output == "json":
        click.echo(json.dumps({"out": out, "prometheus": source, "dashboards": [s.as_dict() for s in summaries],
                               "diff": "diff.html" in files}, indent=2))
        return
    for summary in summaries:
        notes = [f"{summary.no_data} with no data" if summary.no_data else "",
                 f"{summary.failed} with a failing query" if summary.failed else ""]
        extra = ", ".join(n for n in notes if n)
        # (a title as a definition or the --from build holds it: escaped in text, raw in JSON)
        click.echo(f"{printed.path(summary.file)}: {printed.text(summary.title)}, {summary.panels} panels"
                   + (f" ({extra})" if extra else ""))
        first = summary.first_failure
        if first:  # what failed and what to do, not only that something did
            click.echo(f"  first: panel {printed.text(repr(first['panel']))} query {printed.text(first['query'])}: "
                       f"{printed.text(first['error'] or '')}" + (f"\n  fix: {first['fix']}" if first["fix"] else ""))
    click.echo(f"wrote {len(files) + 1} files to {printed.path(out)}: open {printed.path(Path(out) / 'index.html')}")

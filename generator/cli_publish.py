"""The commands that talk to live systems: plan, push, apply, verify."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from . import printed, redact
from .cli_base import (Between, checked_url, config_option, csv_option, load_project_for, main, no_cycle_collection,
                       output_option, waiting_for_turn, folder_given)
from .errors import EXIT_FINDINGS, GpudashError, InputError, RemoteError, printed_message


from_option = click.option("--from", "from_dir", metavar="DIR", callback=folder_given,
                           help="Publish this build (its manifest is checked) instead of generating in memory.")
# plan publishes nothing: its --from is the build it compares
plan_from_option = click.option("--from", "from_dir", metavar="DIR", callback=folder_given,
                                help="Compare this build (its manifest is checked) with what is live, instead of "
                                     "generating in memory.")
force_option = click.option("--force", is_flag=True,
                            help="Overwrite objects gpudash does not own, or that were edited since it wrote them.")
prune_option = click.option("--prune", is_flag=True, help="Delete objects gpudash owns that are no longer defined.")
dry_run_option = click.option("--dry-run", is_flag=True, help="Do everything but write.")
skip_verify_option = click.option("--skip-verify", is_flag=True,
                                  help="Publish without first checking that the exporter and agents feed data.")
profile_option = click.option("--profile", envvar="AWS_PROFILE", help="AWS profile. Env: AWS_PROFILE.")
endpoint_option = click.option("--endpoint-url", envvar="AWS_ENDPOINT_URL",
                               callback=checked_url("http://localhost:4566"),
                               help="CloudWatch endpoint. Env: AWS_ENDPOINT_URL.")
insecure_option = click.option("--insecure", is_flag=True, help="Do not verify Grafana's TLS certificate.")
token_file_option = click.option("--token-file", metavar="FILE",
                                 help="Read the Grafana token from FILE (else GRAFANA_TOKEN).")
max_prune_share_option = click.option(
    "--max-prune-share", type=Between(0, 100), default=50, show_default=True, metavar="PERCENT",
    help="Without --allow-mass-prune, --prune is refused when it would delete more than this share of the "
         "objects of a kind gpudash owns (and always when it would delete all of them, or the build is empty).")
move_from_option = click.option(
    "--move-from", metavar="FOLDER_UID",
    help="After changing grafana.folder: move the dashboards gpudash saved in this folder (its uid, the old "
         "grafana.folder) and nobody edited since; edited ones still need --force.")
renamed_from_option = click.option(
    "--renamed-from", metavar="CLUSTER", multiple=True,
    help="After renaming a cluster of these settings (repeatable): its old name. Objects recorded as published with "
         "it (CloudWatch objects for apply, Grafana dashboards for push) are these settings' (rewritten with the new "
         "name; --prune retires the old cluster's), not another settings file's: refused (exit 2) when they record "
         "settings that are not an earlier version of these, or when no object records the name but one close to it "
         "(a typo); a name no object records otherwise takes nothing (a note).")
removed_cluster_option = click.option(
    "--removed-cluster", metavar="CLUSTER", multiple=True,
    help="After removing a cluster from these settings (repeatable), when no other settings file defines it: "
         "CloudWatch objects recorded as published with it and clusters of these settings are these settings' to "
         "prune. Without it, --prune leaves them: after a settings file is split, the other file may define it. "
         "Refused (exit 2) when objects record it with none of these settings' clusters (another file's), or when "
         "no object records it but one close to it (a typo).")
former_region_option = click.option(
    "--former-region", metavar="REGION", multiple=True, callback=lambda ctx, param, value: _regions(value),
    help="A Region these settings no longer use (repeatable), where a cluster removed or renamed with its Region "
         "left alarms: read as well, so that they are pruned (with --prune, --removed-cluster or --renamed-from) on "
         "the same evidence as anywhere and count as evidence for those flags. A Region that cannot be read fails "
         "the run (exit 3, nothing published).")
allow_mass_prune_option = click.option(
    "--allow-mass-prune", is_flag=True,
    help="Let --prune delete more than --max-prune-share, all of a kind, or everything when the build is empty "
         "(--force alone does not: it is about overwriting, and a CI job that forces past drift keeps this guard).")


def _regions(values: tuple[str, ...]) -> tuple[str, ...]:
    """--former-region values: AWS Region names (a typo would read an endpoint that is not there)."""
    import re

    from .settings import region_unknown

    for value in values:
        if not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-[0-9]", value):
            raise click.BadParameter(f"{value!r} is not an AWS Region name (such as us-west-2)",
                                     param_hint="--former-region")
        if (fix := region_unknown(value)) is not None:  # as the settings' Regions: a warning, a newer one is real
            click.echo(f"warning: --former-region {value}: no AWS Region the installed boto3 knows: reading it "
                       f"will fail\n  fix: {fix}", err=True)
    return tuple(dict.fromkeys(values))


def deadline_options(command):
    """--deadline and --retry-after-max: how long a publishing command may take in all."""
    command = click.option("--retry-after-max", type=Between(0, 3600), default=30, show_default=True,
                           metavar="SECONDS", help="Honour a server's Retry-After up to this long; asking for "
                                                   "more is a remote failure.")(command)
    return click.option("--deadline", type=Between(1, 86400), default=900, show_default=True,
                        metavar="SECONDS", help="Stop the command (exit 3; publishing lists what was and was "
                                                "not written) when it takes longer than this in all.")(command)


def publish_options(command):
    """The options every publishing command takes, in one place."""
    for option in reversed((config_option, csv_option, from_option, force_option, prune_option, dry_run_option,
                            max_prune_share_option, allow_mass_prune_option, skip_verify_option)):
        command = option(command)
    return command


def _desired(config: str | None, csv: str | None, from_dir: str | None, grafana: bool = True):
    """The project and what publishing writes; without `grafana` (the command sends no Grafana dashboard), a
    build made here renders none."""
    from .output import PUBLISHED, read
    from .desired import desired_from

    project = load_project_for(config, csv)
    if from_dir:  # the build as it was reviewed, with the settings it was made with (else a clear error)
        artifacts = read(Path(from_dir), origin=from_dir, settings=project.settings, consequence=PUBLISHED,
                         waiting=waiting_for_turn(Path(from_dir)))
    else:
        from .limits import checked_build

        # as generate: never publish a dashboard CloudWatch cuts short, nor a widget or alarm the classic agent
        # would feed a wrong number
        artifacts = checked_build(project, grafana=grafana)
    return project, desired_from(artifacts)


def _refuse_defaults_in_project(config: str | None) -> None:
    """Publishing the bundled defaults from a project's subfolder (its definitions, its build) would write another
    fleet's objects (a cluster gpu-cluster in us-east-1) over the project's (--force past the ownership check, as a CI
    job may): refused where a gpudash.yaml above the current folder says this is a project."""
    from .settings import discover

    above = discover(Path(config) if config else None).above
    if above:
        raise InputError(f"this command would publish the bundled defaults, and {above} (a project's settings, in a "
                         f"folder above) is not read", where="the current folder",
                         hint=f"pass --config {above}, or run from its folder")


def _grafana_client(insecure: bool, token_file: str | None, deadline=None):
    from .clients.grafana import GrafanaClient, check_url
    from .urls import safe_url

    url = os.environ.get("GRAFANA_URL")
    if not url:
        raise GpudashError("GRAFANA_URL is not set", hint="export GRAFANA_URL=https://grafana.example.com")
    url = check_url(url)
    token = os.environ.get("GRAFANA_TOKEN")
    if token_file:  # (a device read without end, or a named pipe nobody writes, is refused: reading.read_bytes)
        from .reading import read_bytes

        token = read_bytes(Path(token_file), "Grafana token file", "check the path; the file holds the "
                           "service-account token alone").decode("utf-8", errors="replace").strip()
        if not token:
            raise InputError("the Grafana token file is empty", where=token_file,
                             hint="write the service-account token (glsa_...) into it, alone on its line")
    if token and token.strip().lower().startswith(("bearer ", "basic ")):  # an Authorization header's value copied
        raise InputError(f"the Grafana token begins with {token.split()[0]!r}: gpudash sends the header itself",
                         where=token_file or "GRAFANA_TOKEN", hint="give the token alone: glsa_...")
    if token and (shape := _not_a_token(token)):  # Grafana would answer 401 "rejected the credentials", nothing more
        raise InputError(f"the Grafana token {shape}", where=token_file or "GRAFANA_TOKEN",
                         hint="give the service-account token alone, one word: glsa_..."
                              + (" (the file holds the token, not a line of shell or .env)" if token_file else ""))
    basic = None
    if not token and os.environ.get("GRAFANA_USER"):
        basic = (os.environ["GRAFANA_USER"], os.environ.get("GRAFANA_PASSWORD", ""))
    if not token and not basic:
        raise GpudashError("no Grafana credentials",
                           hint="set GRAFANA_TOKEN (a service-account token), or --token-file, "
                                "or GRAFANA_USER and GRAFANA_PASSWORD")
    redact.secret(token)
    if basic:
        redact.basic_auth(*basic)
    if insecure and url.lower().startswith("https:"):
        click.echo(f"warning: --insecure: Grafana's TLS certificate is not verified ({safe_url(url)}); "
                   "REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE are not read for it", err=True)
    return GrafanaClient(url, token=token, basic=basic, verify=not insecure, deadline=deadline, token_file=token_file)


def _not_a_token(token: str) -> str | None:
    """What makes `token` no token a Grafana takes (said without the token), or None: a shell or .env line
    (`GRAFANA_TOKEN=glsa_...`, `export ...`), quotes kept from one, or a second word. Tokens are one word of
    letters, digits, `_` (service accounts' glsa_...) or base64 (API keys, `=` only as their padding at the end)."""
    import re

    token = token.strip()
    if not token:
        return "is blank: it holds spaces alone"
    if re.match(r"[A-Za-z_]\w*=[^=]", token):
        return f"is written as an assignment ({token.split('=', 1)[0]}=...)"
    if token[0] in "\"'" or token[-1] in "\"'":
        return "is written in quotes"
    if " " in token or "\t" in token:  # (a line break or other control character: the client's own check says it)
        return "holds a space: it is one word"
    return None


def _cloudwatch(profile: str | None, endpoint_url: str | None, deadline=None):
    from .clients.cloudwatch import CloudWatch

    return CloudWatch(profile=profile, endpoint_url=endpoint_url, deadline=deadline, endpoint_name=_endpoint_name())


def _endpoint_name() -> str:
    """How the command's CloudWatch endpoint was given, as its fixes name it: --endpoint-url, or AWS_ENDPOINT_URL."""
    from click.core import ParameterSource

    given = click.get_current_context().get_parameter_source("endpoint_url")
    return "--endpoint-url" if given == ParameterSource.COMMANDLINE else "AWS_ENDPOINT_URL"


def _masked(value):
    """`value` with every text in it (never a key) passed through the redaction."""
    if isinstance(value, str):
        return redact.text(value)
    if isinstance(value, dict):
        return {key: _masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    return value


def _print_changes(changes, output: str, outcomes=None, beside: dict | None = None) -> None:
    """The changes (and what became of each), as text or one JSON document; `beside`: more keys of that document."""
    from .changes import summary
    from .console import style
    from .changes import report

    # Details quote what servers answered (who saved a version, an error message): a server that echoes
    # a credential there must not get it printed, so every line passes the redaction errors pass.
    if output == "json":  # each text masked before it is escaped (a secret holding `"` or `\` stays whole)
        click.echo(json.dumps(_masked({**report(changes, outcomes), **(beside or {})}), indent=2))
        return
    colours = {"create": "green", "update": "yellow", "delete": "red", "withdraw": "red", "drift": "magenta",
               "foreign": "magenta", "held": "magenta", "kept": "magenta"}
    done = {id(o.change): o for o in outcomes or []}
    for change in changes:
        outcome = done.get(id(change))
        state = ""
        if outcome is not None:
            state = {"done": " (done)", "failed": f" (FAILED: {outcome.error})", "would write": " (would write)",
                     "refused": " (refused)"}.get(outcome.state, " (not written)")
            if outcome.state == "done" and outcome.unfinished:
                state = f" (done, then FAILED: {outcome.unfinished})"
            # an error may quote the server's answer: escaped as the details are, its fix on its own line
            state = printed_message(state)
        place = f" [{change.region}]" if change.region else ""
        # names and details quote what servers hold (a title, a query a person saved): printed escaped (printed.text)
        click.echo(redact.text(f"{style(change.action.ljust(9), fg=colours.get(change.action))} {change.target} "
                               f"{change.kind} {printed.text(change.name)}{place}"
                               f"{state if change.action != 'unchanged' else ''}"))
        for line in change.details:
            click.echo(redact.text(f"            {printed.text(line)}"))
    counts = summary(changes)
    click.echo(", ".join(f"{n} {a}" for a, n in sorted(counts.items())) or "nothing to publish")


class _StopOnSignal:
    """While publishing, SIGINT (Ctrl-C) and SIGTERM (a CI job cancelled) stop it cleanly: the deadline is
    ended, so the call under way finishes, no other starts, and every object is reported as done or not.
    A second SIGINT stops at once."""

    def __init__(self, deadline):
        self.deadline = deadline
        self.previous: dict[int, object] = {}

    def _handle(self, number, frame) -> None:
        import signal

        if self.deadline.interrupted and number == signal.SIGINT:  # every call waited for, on any thread, ends now
            self.deadline.stopped_at_once()
            raise KeyboardInterrupt
        self.deadline.interrupt(signal.Signals(number).name, number)

    def __enter__(self):
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():  # handlers belong to the main thread
            for number in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(number) != signal.SIG_IGN:  # ignored (nohup, a background job): stays so
                    self.previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        import signal

        for number, handler in self.previous.items():
            signal.signal(number, handler)


def _finish(outcomes, output: str, changes, deadline=None, notes: list[str] | None = None,
            warnings: list[str] | None = None) -> None:
    """The report of a publish; `notes`: what its client noted, `warnings`: what its preflight warned of (each said on
    stderr as it went, in the JSON report too)."""
    from .changes import HELD, KEPT, REFUSED, WOULD_WRITE, report
    from .names import shown

    failure = _failure(outcomes, deadline)
    said = {"warnings": _notices(warnings or [], "warning"), "notes": _notices(notes or [])}
    if failure is not None and output == "json":  # one document: the report, with the error in it
        failure.document = _masked({**report(changes, outcomes), **said})
    else:
        _print_changes(changes, output, outcomes, beside=said)
    if deadline is not None and deadline.interrupted:
        raise failure
    would = [o for o in outcomes if o.state == WOULD_WRITE]
    if would:
        click.echo(f"dry run: {len(would)} object(s) would be written; nothing was written", err=True)
    if failure is not None:
        raise failure
    refused = [o for o in outcomes if o.state == REFUSED]
    provisioned = [o.change.name for o in refused if o.change.action == HELD and o.change.target == "grafana"]
    if provisioned:  # (what to do: said by the plan's line of each, grafana_sync.PROVISIONED_FIX)
        from .targets.grafana_sync import PROVISIONED_FIX

        click.echo(f"refused {len(provisioned)} dashboard(s) provisioned from files ({shown(provisioned)}): Grafana "
                   f"writes each from its file, and --force does not write over one; {PROVISIONED_FIX}", err=True)
    held = [o.change.name for o in refused if o.change.action == HELD and o.change.target == "cloudwatch"]
    if held:  # (what to do: said the same way by the plan's line of each, cloudwatch_sync.HELD_FIX)
        from .targets.cloudwatch_sync import HELD_FIX

        click.echo(f"refused {len(held)} alarm(s) whose name another kind of alarm holds ({shown(held)}), a person's "
                   f"composite or log alarm: gpudash writes metric alarms alone, and --force does not write over "
                   f"another kind; {HELD_FIX}",
                   err=True)
    kept = [o.change for o in refused if o.change.action == KEPT]
    if kept:  # (as the plan's line of each says: cloudwatch_sync.KEPT_FIX)
        from .targets.cloudwatch_sync import KEPT_FIX, NOT_UNDER_COMPOSITES

        pairs = [f"{c.name} (in the rule of {' and '.join(c.live['parents'])})" for c in kept]
        click.echo(f"refused to delete {len(kept)} alarm(s) no longer defined that a composite alarm depends on "
                   f"({shown(pairs)}): {NOT_UNDER_COMPOSITES}; {KEPT_FIX}", err=True)
    if (others := len(refused) - len(provisioned) - len(held) - len(kept)) > 0:
        click.echo(f"refused {others} object(s) edited outside gpudash or not owned by it; "
                   f"review them and use --force to overwrite", err=True)
    if refused:
        sys.exit(EXIT_FINDINGS)


def _failure(outcomes, deadline) -> GpudashError | None:
    """The error a publish ends with: stopped by a signal, or writes that failed."""
    from .changes import FAILED

    if deadline is not None and deadline.interrupted:
        from .clients.deadline import UNDER_WAY, Interrupted
        from .errors import MAY_HAVE_HAPPENED

        written = sum(1 for o in outcomes if o.done)
        failed = [o for o in outcomes if o.state == FAILED]
        maybe = sum(1 for o in failed if o.error == UNDER_WAY)
        sent = sum(1 for o in failed if o.error != UNDER_WAY and MAY_HAVE_HAPPENED in (o.error or ""))
        under_way = f", {maybe} under way when it stopped at once, which may have happened (listed as FAILED, " \
                    "saying so)" if maybe else ""
        unread = f", {sent} sent whose outcome nothing showed, which may have happened (listed as FAILED, saying " \
                 "so)" if sent else ""
        return Interrupted(
            f"stopped by {deadline.interrupted[0]}: {written} written (listed above as done), "
            f"{len(failed) - maybe - sent} not written (listed as FAILED){under_way}{unread}",
            signal_number=deadline.interrupted[1],
            hint="run the command again when you are ready: publishing converges")
    failed = [o for o in outcomes if o.state == FAILED]
    unfinished = [o for o in outcomes if o.done and o.unfinished]
    if failed or unfinished:
        written = sum(1 for o in outcomes if o.done)
        after = (f"; {len(unfinished)} of those were written but a step after the write failed (listed above as "
                 f"done, then FAILED, each saying what to do)") if unfinished else ""
        return RemoteError(f"{len(failed)} of {len(failed) + written} writes failed; {written} were published "
                           f"(listed above as done){after}", hint="fix the cause and run again: publishing converges"
                           + ("; a delete found, after it, to have taken something a person made while the deletes "
                              "ran is not mended by running again (its line says what to point elsewhere)"
                              if any(o.change.action == "delete" for o in unfinished) else ""))
    return None


def _preflight(project, groups: tuple[str, ...], skip: bool, limit, dashboards=None, **options) -> list[str]:
    """The verify groups the publish needs, within 10 s and within the command's own deadline; `dashboards`, the
    Grafana dashboards to publish, decide whether a Prometheus without `@` and negative offsets refuses it. What it
    warns of (a failure the publish goes ahead with), said on stderr."""
    if skip:
        return []
    if "prometheus" in groups and not options.get("prometheus_url"):  # nothing remote failed: a setting is missing
        raise GpudashError("push checks the Prometheus the dashboards read before publishing, and no Prometheus URL "
                           "is given", where="--prometheus-url (PROMETHEUS_URL)",
                           hint="pass --prometheus-url or set PROMETHEUS_URL (e.g. http://prometheus:9090), or "
                                "--skip-verify to publish without the check")
    from .verify import Options, preflight

    warnings = preflight(project, groups, Options(timeout=max(1.0, min(10.0, limit.remaining())), **options),
                         dashboards)
    for warning in warnings:
        click.echo(f"warning: {printed.text(warning)}", err=True)  # (a check's detail quotes what servers answered)
    return warnings


@main.command()
@config_option
@csv_option
@plan_from_option
@click.option("--grafana/--no-grafana", "use_grafana", default=None,
              help="Include Grafana (default: when GRAFANA_URL is set).")
@click.option("--cloudwatch/--no-cloudwatch", "use_cloudwatch", default=None,
              help="Include CloudWatch (default: when AWS credentials are found).")
@profile_option
@endpoint_option
@insecure_option
@token_file_option
@move_from_option
@renamed_from_option
@removed_cluster_option
@former_region_option
@deadline_options
@output_option
def plan(config, csv, from_dir, use_grafana, use_cloudwatch, profile, endpoint_url, insecure, token_file, move_from,
         renamed_from, removed_cluster, former_region, deadline, retry_after_max, output):
    """Compare the generated artifacts with what is live; exit 1 when publishing would change something."""
    from .changes import pending
    from .targets import cloudwatch_sync, grafana_sync
    from .clients.deadline import Deadline
    from .targets.progress import Progress

    limit = Deadline(deadline, retry_after_max=retry_after_max, command="plan")
    compare_grafana = bool(use_grafana or (use_grafana is None and os.environ.get("GRAFANA_URL")))
    project, desired = _desired(config, csv, from_dir, grafana=compare_grafana)
    _check_renamed(renamed_from, desired, project)
    _check_renamed(removed_cluster, desired, project, "--removed-cluster")
    _check_apart(renamed_from, removed_cluster)
    changes, compared = [], 0
    # what a JSON reader is told beside the changes: a target not compared (its objects are in no change), the notes
    skipped: list[dict[str, str]] = []
    notes: list[str] = []
    if compare_grafana:
        client = _grafana_client(insecure, token_file, limit)
        with _Noted(client):
            changes += grafana_sync.plan(client, desired.grafana, desired.folder,
                                         uid_prefix=desired.grafana_uid_prefix,
                                         publisher=(desired.project, desired.clusters),
                                         progress=Progress(), move_from=move_from, renamed_from=renamed_from)
        notes += client.notes
        compared += 1
    elif use_grafana is None:
        skipped.append(_skipped("Grafana", "GRAFANA_URL is not set", "set GRAFANA_URL and GRAFANA_TOKEN to include "
                                "it, or pass --no-grafana to leave it out"))
    if use_cloudwatch is not False:
        cloudwatch = _cloudwatch(profile, endpoint_url, limit)
        if use_cloudwatch is None and not cloudwatch.has_credentials():
            skipped.append(_skipped("CloudWatch", "no AWS credentials found", "configure AWS credentials (AWS_PROFILE, "
                                    "the standard AWS variables or an instance role) to include it, or pass "
                                    "--no-cloudwatch to leave it out"))
        else:
            with _Noted(cloudwatch):
                changes += cloudwatch_sync.plan(cloudwatch, desired, progress=Progress(), renamed_from=renamed_from,
                                                removed=removed_cluster, former_regions=former_region)
            notes += cloudwatch.notes
            compared += 1
    if not compared:
        # only what the flags left in: a --no-cloudwatch run is not told to configure AWS
        wanted = [fix for fix, left_out in (("set GRAFANA_URL and GRAFANA_TOKEN", use_grafana is False),
                                            ("configure AWS credentials", use_cloudwatch is False)) if not left_out]
        if not wanted:
            raise GpudashError("nothing to compare: --no-grafana and --no-cloudwatch leave no publishing target",
                               hint="drop one of them")
        raise GpudashError("nothing to compare: no publishing target is configured", hint=", or ".join(wanted))
    _print_changes(changes, output, beside={"skipped": skipped, "notes": _notices(notes)})
    sys.exit(EXIT_FINDINGS if pending(changes) else 0)


def _check_renamed(renamed_from: tuple[str, ...], desired, project, flag: str = "--renamed-from") -> None:
    """--renamed-from (--removed-cluster) names clusters these settings had: not one they still define."""
    blank = next((name for name in renamed_from if not name.strip()), None)
    if blank is not None:
        raise GpudashError("a cluster's name is never empty", where=f"{flag} {blank!r}",
                           hint=f"give {flag} the old cluster's name as the objects record it, or leave the flag out")
    kept = sorted(set(renamed_from) & set(desired.clusters))
    if kept:
        raise GpudashError(f"{flag} {kept[0]}: the settings still define the cluster {kept[0]!r}",
                           where=f"{project.settings.source} (clusters)",
                           hint=f"give {flag} the name of a cluster these settings no longer define, not a current one")


def _check_apart(renamed_from: tuple[str, ...], removed_cluster: tuple[str, ...]) -> None:
    """A cluster is either renamed (its objects are now these settings' under the new name) or removed (its objects
    are pruned), never both: a name given to both flags says two things of one cluster."""
    both = sorted(set(renamed_from) & set(removed_cluster))
    if both:
        raise GpudashError(f"the cluster {both[0]!r} is either renamed or removed, not both",
                           where=f"--renamed-from {both[0]}, --removed-cluster {both[0]}",
                           hint=f"keep --renamed-from {both[0]} if these settings define it under a new name, "
                                f"else --removed-cluster {both[0]}")


def _skipped(target: str, why: str, how: str) -> dict[str, str]:
    """Says on stderr that a publishing target is not compared, and returns it as JSON gives it."""
    click.echo(f"{target} skipped: {why}; {how}", err=True)
    return {"target": target, "reason": why, "fix": how}


class _Noted:
    """What a target's client notes (things the user should know that are not failures, such as whether a delete was
    gpudash's), each printed once: those noted so far at `show()`, the rest when the block ends, however it ends (a
    failure's error is printed after them; its exit code stays)."""

    def __init__(self, client):
        self.client, self.shown = client, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.show()

    def show(self) -> None:
        from .build_notices import Notice

        for note in self.client.notes[self.shown:]:
            click.echo(Notice("note", note).text(), err=True)  # (escaped: a note names what servers hold)
        self.shown = len(self.client.notes)


def _notices(texts: list[str], level: str = "note") -> list[dict[str, str | None]]:
    """A client's notes (a preflight's warnings) as `--output json` gives every command's, generate's too:
    {message, where, fix, rule}."""
    from .build_notices import Notice

    return [Notice(level, text).as_dict() for text in texts]


@main.command()
@publish_options
@deadline_options
@insecure_option
@token_file_option
@move_from_option
@renamed_from_option
@click.option("--prometheus-url", envvar="PROMETHEUS_URL", metavar="URL",
              callback=checked_url("http://prometheus:9090"),
              help="Prometheus that the dashboards read, checked before pushing. Env: PROMETHEUS_URL.")
@output_option
def push(config, csv, from_dir, force, prune, dry_run, max_prune_share, allow_mass_prune, skip_verify, deadline,
         retry_after_max, insecure, token_file, move_from, renamed_from, prometheus_url, output):
    """Publish the Grafana dashboards (GRAFANA_URL, GRAFANA_TOKEN); unchanged ones are not posted."""
    from .targets import grafana_sync
    from .clients.deadline import Deadline
    from .targets.progress import Progress

    limit = Deadline(deadline, retry_after_max=retry_after_max, command="push")
    if not dry_run:
        _refuse_defaults_in_project(config)
    project, desired = _desired(config, csv, from_dir)
    _check_renamed(renamed_from, desired, project)
    client = _grafana_client(insecure, token_file, limit)
    warned = _preflight(project, ("prometheus",), skip_verify, limit, desired.grafana, prometheus_url=prometheus_url)
    progress = Progress()
    with _StopOnSignal(limit), _Noted(client) as noted:
        try:
            changes = grafana_sync.plan(client, desired.grafana, desired.folder, uid_prefix=desired.grafana_uid_prefix,
                                        publisher=(desired.project, desired.clusters),
                                        progress=progress, move_from=move_from, renamed_from=renamed_from,
                                        prune=prune)
        except RemoteError as exc:
            exc.what += "; nothing was published"
            raise
        noted.show()
        outcomes = grafana_sync.push(client, changes, desired.grafana, desired.folder, git_note(),
                                     uid_prefix=desired.grafana_uid_prefix, force=force,
                                     publisher=(desired.project, desired.clusters),
                                     prune=prune, dry_run=dry_run, max_prune_share=max_prune_share,
                                     allow_mass_prune=allow_mass_prune, progress=progress)
    _finish(outcomes, output, changes, limit, client.notes, warned)


@main.command()
@publish_options
@deadline_options
@profile_option
@endpoint_option
@renamed_from_option
@removed_cluster_option
@former_region_option
@output_option
def apply(config, csv, from_dir, force, prune, dry_run, max_prune_share, allow_mass_prune, skip_verify, deadline,
          retry_after_max, profile, endpoint_url, renamed_from, removed_cluster, former_region, output):
    """Publish CloudWatch dashboards and alarms (standard AWS credentials), paced and idempotent."""
    from .targets import cloudwatch_sync
    from .clients.deadline import Deadline
    from .targets.progress import Progress

    limit = Deadline(deadline, retry_after_max=retry_after_max, command="apply")
    if not dry_run:
        _refuse_defaults_in_project(config)
    project, desired = _desired(config, csv, from_dir, grafana=False)
    _check_renamed(renamed_from, desired, project)
    _check_renamed(removed_cluster, desired, project, "--removed-cluster")
    _check_apart(renamed_from, removed_cluster)
    if prune and not desired.project:
        raise GpudashError("--prune needs the settings to name the project: without a name, nothing shows that an "
                           "alarm or dashboard no longer defined is this project's and not another's",
                           where=f"{project.settings.source} (project)",
                           hint="add `project: <a name for this project>` to the settings and apply once (it marks "
                                "what it writes), then prune; or leave out --prune")
    cloudwatch = _cloudwatch(profile, endpoint_url, limit)
    warned = _preflight(project, ("cloudwatch",), skip_verify, limit, profile=profile, endpoint_url=endpoint_url,
                        endpoint_name=_endpoint_name())
    progress = Progress()
    with _StopOnSignal(limit), _Noted(cloudwatch):
        try:
            changes = cloudwatch_sync.plan(cloudwatch, desired, progress=progress, renamed_from=renamed_from,
                                           removed=removed_cluster, former_regions=former_region, prune=prune)
        except RemoteError as exc:
            exc.what += "; nothing was published"
            raise
        outcomes = cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                         force=force, prune=prune, dry_run=dry_run, max_prune_share=max_prune_share,
                                         allow_mass_prune=allow_mass_prune,
                                         progress=progress)
    _finish(outcomes, output, changes, limit, cloudwatch.notes, warned)


@main.command()
@config_option
@csv_option
@click.option("--skip", type=click.Choice(["kube", "exporter", "prometheus", "cloudwatch"]), multiple=True,
              help="Skip a group of checks (repeatable) when that system is not in use.")
@click.option("--context", help="kubeconfig context (default: the current one; KUBECONFIG is honoured).")
@click.option("--cluster", metavar="NAME",
              help="The entry of clusters the kube context is (default: the one the live agent config names; with "
                   "several clusters and none named, the per-cluster kube checks warn instead of judging).")
@click.option("--exporter-url", metavar="URL", callback=checked_url("http://gpu-node:9400/metrics"),
              help="The exporter's /metrics URL (default: through the Kubernetes API server's service proxy).")
@click.option("--prometheus-url", envvar="PROMETHEUS_URL", metavar="URL",
              callback=checked_url("http://prometheus:9090"), help="Prometheus. Env: PROMETHEUS_URL.")
@profile_option
@endpoint_option
@click.option("--timeout", type=Between(1, 300), default=10, show_default=True,
              help="Seconds the whole run may take; what has not answered by then is a failed check.")
@output_option
def verify(config, csv, skip, context, cluster, exporter_url, prometheus_url, profile, endpoint_url, timeout,
           output):
    """Check that the exporter and agents are deployed and feeding data; each failure says what to fix."""
    from . import verify as verifying
    from .console import style, table

    groups = tuple(g for g in verifying.GROUPS if g not in skip)
    if not groups:
        raise GpudashError("every group of checks is skipped: nothing to verify",
                           hint=f"leave out one of the --skip options ({', '.join(verifying.GROUPS)})")
    options = verifying.Options(context=context, exporter_url=exporter_url, prometheus_url=prometheus_url,
                                profile=profile, endpoint_url=endpoint_url, endpoint_name=_endpoint_name(),
                                timeout=timeout,
                                prometheus_in_use="prometheus" not in skip, cluster=cluster)
    options.start()  # the deadline counts from here: reading the project is part of the run
    with no_cycle_collection():  # reading the project and the clients' imports are most of the run
        project = load_project_for(config, csv)
        names = [c.name for c in project.settings.clusters]
        if cluster is not None and cluster not in names:
            from .guesses import did_you_mean

            raise GpudashError(f"--cluster {cluster}: no such entry in clusters ({', '.join(names[:10])}"
                               f"{f' and {len(names) - 10} more' if len(names) > 10 else ''})",
                               hint=f"{did_you_mean(cluster, names)}name the entry of clusters in gpudash.yaml that the "
                                    f"kube context is")
        if context is not None and {"kube", "exporter"} & set(groups):
            _context_known(context)
        checks = verifying.run(project, options, groups, processes=True)  # the child inherits the setting
    # an option naming what is not there (--profile, AWS_PROFILE: a profile no AWS file holds) is the command's input,
    # a usage error as --cluster's and --context's are, not a check failed
    misnamed = next((c for c in checks if c.cause == verifying.SETTING and c.where.startswith("--")), None)
    if misnamed is not None:
        raise GpudashError(misnamed.detail, where=misnamed.where, hint=misnamed.fix)
    if all(c.status == verifying.SKIP for c in checks):
        raise GpudashError("nothing to verify: " + ("; ".join(c.detail for c in checks) or "no check applies"),
                           hint="check the settings (clusters, exporter) and the --skip options")
    if output == "json":
        click.echo(json.dumps({"checks": [c.as_dict() for c in checks],
                               "failed": len(verifying.failed(checks))}, indent=2))
    else:
        colours = {"ok": "green", "fail": "red", "warn": "yellow", "skip": "blue"}
        # a detail quotes what servers answered (an exporter's label value, an API's message): escaped, one row a line
        rows = [[printed.text(c.group), printed.text(c.name), style(c.status.upper(), fg=colours[c.status]),
                 printed.text(c.detail), printed.text(c.fix)] for c in checks]
        click.echo(table(["GROUP", "CHECK", "STATUS", "DETAIL", "FIX"], rows))
    sys.exit(EXIT_FINDINGS if verifying.failed(checks) else 0)


def _context_known(context: str) -> None:
    """A --context the kubeconfig does not name is a usage error, as --cluster's is (the run's kube check says what
    is wrong with a kubeconfig that cannot be read); with no kubeconfig file at all, no context can be the one named."""
    from .clients.kube_contexts import kubeconfig_files, known_contexts, no_kubeconfig

    missing = no_kubeconfig()
    if missing is not None:
        raise GpudashError(f"--context {printed.text(context)}: no kubeconfig to name it: {printed.text(missing[0])}",
                           hint=missing[1])
    contexts = known_contexts()
    if contexts is None or context in contexts:
        return
    from .guesses import did_you_mean

    files = ", ".join(printed.path(path) for path in kubeconfig_files())
    raise GpudashError(f"--context {printed.text(context)}: no such context in the kubeconfig ({files}): "
                       + (", ".join(printed.text(name) for name in contexts[:10])
                          + (f" and {len(contexts) - 10} more" if len(contexts) > 10 else "") if contexts else
                          "it names none"),
                       hint=f"{did_you_mean(context, contexts)}give --context one of the contexts `kubectl config "
                            f"get-contexts` lists, or leave it out for the kubeconfig's current-context")


def git_note(cwd: Path | None = None) -> str:
    """`<short commit> <subject>` of the checkout, when there is one."""
    import subprocess

    try:
        result = subprocess.run(["git", "log", "-1", "--format=%h %s"], capture_output=True, text=True,
                                cwd=cwd, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return result.stdout.strip()[:200] if result.returncode == 0 else ""

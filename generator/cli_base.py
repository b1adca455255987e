"""What every gpudash command shares: the command group, its error handling, and the common options.

The commands themselves live in `cli` (generate, lint, metrics, cost, init-config), `cli_publish`
(plan, push, apply, verify) and `cli_preview` (preview); each registers on `main` from here.
"""

from __future__ import annotations

import contextlib
import gc
import os
from pathlib import Path

import click

from . import __version__, redact
from .errors import EXIT_INPUT, EXIT_INTERRUPTED, INTERRUPTED, GpudashError, interrupted

EXIT_INTERNAL = 4


class Between(click.FloatRange):
    """A number within bounds: click's FloatRange, which lets `nan` through (it compares false with
    both bounds), and so switched off the guards a bound sets (--max-prune-share nan pruned anything)."""

    def convert(self, value, param, ctx):
        import math

        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number in the range {self._describe_range()}", param, ctx)
        return number


# What a process that ends with its command (the `gpudash` command itself, cli.run, which says so with
# ends_with_command) leaves to its end rather than free (left_to_exit); None in a process that goes on (tests calling
# `main`), which frees as usual and has the cycle collector back on after a command's no_cycle_collection.
_left_to_exit: list | None = None


def ends_with_command() -> None:
    """This process ends when its command does: see no_cycle_collection and left_to_exit."""
    global _left_to_exit
    _left_to_exit = []


def ends_with_this_command() -> bool:
    """Whether this process ends when its command does (ends_with_command)."""
    return _left_to_exit is not None


def left_to_exit(value) -> None:
    """Keep `value` to the end of a process that ends with its command, whose memory the system takes back at once
    (1,000 clusters' artifact set took about 0.1 s of CPU to free object by object); elsewhere, nothing."""
    if _left_to_exit is not None:
        _left_to_exit.append(value)


@contextlib.contextmanager
def no_cycle_collection():
    """A command that makes many objects and next to no garbage cycles (a build's millions of short-lived objects;
    verify's imports of three API clients, whose modules, classes and functions live until the process ends):
    reference counting frees the rest, and the cycle collector would walk every live object again and again (a
    tenth of a 1,000-cluster build, of a verify run) to find a few dozen objects at most.

    In a process that ends with its command the collector stays off after it: turned back on, its next collection
    would walk every object made meanwhile (all still young, none collected) just before the process ends (70,000
    objects, 20-30 ms CPU at the end of a verify run). A caller that goes on (tests calling `main`) has it back on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled and _left_to_exit is None:
            gc.enable()


def _print_traceback() -> None:
    """The exception being handled, as --debug shows it (traceback is imported only for it)."""
    import traceback

    click.echo(redact.text(traceback.format_exc()), err=True, nl=False)


# The commands a module registers when it is imported, which is when one of them is asked for: `generate`
# (the command most runs make) starts without the publishing and preview commands' code.
LAZY_COMMANDS = {"plan": "cli_publish", "push": "cli_publish", "apply": "cli_publish", "verify": "cli_publish",
                 "preview": "cli_preview"}


class GpudashGroup(click.Group):
    """Turns GpudashError into one message and its exit code; tracebacks only with --debug."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            import importlib

            importlib.import_module(f".{LAZY_COMMANDS[cmd_name]}", __package__)  # registers it on `main`
        return super().get_command(ctx, cmd_name)

    def make_context(self, *args, **kwargs) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:  # while the command line is read: not click's "Aborted!" and exit 1
            interrupted()

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            # `gpudash` alone ran no command: the help on stderr and exit 2, as click 8.2 and later do for every
            # click tool (8.1 printed it on stdout, exit 0), so that `gpudash $COMMAND` with COMMAND empty fails a
            # script; `gpudash --help` asks for the help and exits 0
            click.echo(ctx.get_help(), err=True)
            ctx.exit(EXIT_INPUT)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:  # `gpudash --config F generate`: say where the option goes
            name = next((a for a in args if a in self.list_commands(ctx)), None)
            command = self.get_command(ctx, name) if name else None
            if command and any(exc.option_name in p.opts for p in command.params):
                exc.message = (f"No such option: {exc.option_name} before the command; it belongs after it: "
                               f"gpudash {name} {exc.option_name} ...")
            raise

    def invoke(self, ctx: click.Context):
        # the command and its arguments, before click consumes them (click 8.1 names the first protected_args)
        args = [*(ctx._protected_args if hasattr(ctx, "_protected_args") else ctx.protected_args), *ctx.args]
        try:
            return super().invoke(ctx)
        except GpudashError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                _print_traceback()
            click.echo(f"error: {exc.printed()}", err=True)  # (a server's words escaped; raw in JSON)
            self._json_error(ctx, args, exc.what, exc.where, exc.hint, exc.exit_code, getattr(exc, "document", None))
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:  # Ctrl-C outside a publish's own handling: not exit 1, which means "differences"
            click.echo(f"\nerror: {INTERRUPTED}", err=True)
            self._json_error(ctx, args, INTERRUPTED, None, None, EXIT_INTERRUPTED)
            ctx.exit(EXIT_INTERRUPTED)
        except click.ClickException as exc:  # a usage error: click prints it on stderr with the usage line
            if isinstance(exc, click.NoSuchOption) and ctx.invoked_subcommand and any(
                    exc.option_name in p.opts for p in self.params if p.name == "debug"):
                # `gpudash generate --debug`, as an error's fix may be read: say where it goes
                exc.message = (f"No such option: {exc.option_name} after the command; it belongs before it: "
                               f"gpudash {exc.option_name} {ctx.invoked_subcommand} ...")
            self._json_error(ctx, args, exc.format_message(), _option_of(exc),
                             f"see `gpudash {ctx.invoked_subcommand} --help`" if ctx.invoked_subcommand else None,
                             exc.exit_code)
            raise
        except (click.exceptions.Exit, click.Abort):
            raise
        except RecursionError:  # input nested deeper than Python can follow (YAML, JSON, definitions)
            if ctx.obj and ctx.obj.get("debug"):
                _print_traceback()
            what, fix = ("the input is nested too deeply to be read (RecursionError)",
                         "look for a runaway nesting or recursion in the file you changed last")
            click.echo(f"error: {what}\n  fix: {fix}", err=True)
            self._json_error(ctx, args, what, None, fix, EXIT_INPUT)
            ctx.exit(EXIT_INPUT)
        except Exception as exc:  # a bug in gpudash: say so, keep the traceback behind --debug
            if ctx.obj and ctx.obj.get("debug"):
                _print_traceback()
            what, fix = (f"internal error: {type(exc).__name__}: {exc}",
                         f"run again as `gpudash --debug {ctx.invoked_subcommand or ''} ...` and report it")
            from . import printed

            click.echo(f"{printed.text(redact.text(what))}\n  {fix}", err=True)  # (its text may quote an answer)
            self._json_error(ctx, args, what, None, fix, EXIT_INTERNAL)
            ctx.exit(EXIT_INTERNAL)

    def _json_error(self, ctx: click.Context, args: list[str], what: str, where: str | None, fix: str | None,
                    exit_code: int, document: dict | None = None) -> None:
        """With `--output json`, an error exit prints one JSON object on stdout as well: the command's own
        document when it has one to give (a publish's report of what it wrote), with the error under "error"."""
        name = ctx.invoked_subcommand
        command = self.commands.get(name) if name else None
        if command is None or not any(p.name == "output" for p in command.params) or _output(args[1:]) != "json":
            return
        error = {"what": redact.text(what), "where": redact.text(where) if where else None,
                 "fix": redact.text(fix) if fix else None, "exit_code": exit_code}
        import json

        click.echo(json.dumps({**(document or {}), "error": error}, indent=2))


def _option_of(exc: click.ClickException) -> str | None:
    """The option a usage error is about (`--nodes`), when it is about one."""
    param = getattr(exc, "param", None)
    if param is not None and getattr(param, "opts", None):
        return param.opts[0]
    hint = getattr(exc, "param_hint", None)
    return hint.strip("'\"") if isinstance(hint, str) else None


def _output(args: list[str]) -> str | None:
    """The value of the last --output among a command's arguments (click lets the last one win)."""
    value = None
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg.startswith("--output="):
            value = arg.partition("=")[2]
        elif arg == "--output" and index + 1 < len(args):
            value = args[index + 1]
    return value


def optional_path(value: str | None) -> Path | None:
    return Path(value) if value else None


def waiting_for_turn(build: Path):
    """What a command that writes or reads the build in `build` says when another gpudash holds the turn in the folder
    holding it (output.turn), before it waits: who holds it and whether it writes or reads there, where that is told."""
    def say(holders: str = "", doing: str = "") -> None:
        from . import printed
        from .output import written_folder

        folder = printed.path(written_folder(build).parent)
        what = {"writing": f"writing a build into {folder}", "reading": f"reading a build in {folder}"}.get(
            doing, f"writing or reading a build in {folder}")
        click.echo(f"waiting for another gpudash {what} (gpudash runs writing or reading a build in one folder take "
                   "turns" + (f"; held by {holders})" if holders else ")"), err=True)
    return say


def load_project_for(config: str | None, csv: str | None):
    """The project a command works on, and one line on stderr saying which settings were read."""
    from .project import load_project

    return load_project(optional_path(config), optional_path(csv),
                        read=lambda settings: click.echo(f"settings: {settings.origin}", err=True))


def folder_given(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback for a folder option (--out, --from): an empty one (`--from "$BUILD"` with BUILD unset) is a
    usage error. It named the current folder (--out: a build written there) or read as not given (--from: a build
    generated from the definitions published, linted or previewed in place of the one named). So is `-`."""
    if value is not None and not value.strip():
        raise click.BadParameter("is empty: it names no folder (an unset variable?); pass the folder's path",
                                 ctx=ctx, param=param)
    if value == "-":  # standard output or input to many tools: generate made a folder named "-"
        raise click.BadParameter("'-' names no folder here: gpudash reads and writes builds as folders, never through "
                                 "standard input or output; pass the folder's path (./- for a folder named -)",
                                 ctx=ctx, param=param)
    return value


def checked_url(example: str):
    """A click callback: a malformed address is a usage error naming the flag or variable it came from."""

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value:
            from click.core import ParameterSource

            from .urls import check_url

            from_env = ctx.get_parameter_source(param.name) == ParameterSource.ENVIRONMENT
            check_url(value, param.envvar if from_env else param.opts[0], example)
        return value

    return check


config_option = click.option("--config", "config", metavar="FILE",
                             help="Settings file. Default: $GPUDASH_CONFIG, else ./gpudash.yaml, else the bundled "
                                  "defaults; every command says which it used.")
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
    3 a remote system failed, 4 internal error; a publish stopped by SIGINT or
    SIGTERM exits 130 or 143 after listing what it wrote.
    """
    ctx.ensure_object(dict)["debug"] = debug
    redact.environment(os.environ)

"""User-facing errors and the exit codes the CLI maps them to."""

from __future__ import annotations

from . import printed, redact

EXIT_OK = 0
EXIT_FINDINGS = 1  # lint findings, --check differences, failed verify checks
EXIT_INPUT = 2  # usage and input errors: bad CSV, YAML, definitions, paths
EXIT_REMOTE = 3  # a remote system refused or could not be reached
EXIT_INTERRUPTED = 130  # Ctrl-C: the shell's code for a process stopped by SIGINT
INTERRUPTED = "interrupted (Ctrl-C); nothing after this point was done"


def interrupted() -> None:
    """End the process as a command stopped by Ctrl-C outside the command's own handling (while its modules are
    imported, while click reads the command line): one line, exit 130."""
    import sys

    try:
        sys.stderr.write(f"\nerror: {INTERRUPTED}\n")
        sys.stderr.flush()
    except (OSError, ValueError, KeyboardInterrupt):
        pass  # a closed stderr, or a second Ctrl-C: the exit code says it
    raise SystemExit(EXIT_INTERRUPTED)


class GpudashError(Exception):
    """An error a user can act on: what failed, where, and what to do.

    `where` is a file (optionally with ``:line``) or an API object; `hint`
    says what to do next. The CLI prints these without a traceback.
    """

    exit_code = EXIT_INPUT

    def __init__(self, what: str, *, where: str | None = None, hint: str | None = None):
        # messages often quote a URL the user gave, which may carry a password
        what, where, hint = redact.text(what), redact.url(where), redact.url(hint)
        super().__init__(what)
        self.what = what
        self.where = where
        self.hint = hint

    def __str__(self) -> str:
        text = f"{printed.path(self.where)}: {self.what}" if self.where else self.what
        if self.hint:
            text += f"\n  fix: {self.hint}"
        return text


class InputError(GpudashError):
    """Malformed input files: CSV, YAML, definitions."""


class OutputError(GpudashError):
    """The output directory could not be written."""


class RemoteError(GpudashError):
    """A remote API failed or could not be reached."""

    exit_code = EXIT_REMOTE


def may_have_happened(exc: RemoteError, sent: str, unshown: str) -> RemoteError:
    """A write whose request reached the server (its answer lost, or a later attempt refused because an
    earlier one landed) and that no read-back showed either way: it may have happened, and says so,
    instead of "cannot reach" or the later refusal."""
    exc.what = f"{sent} and may have happened, but {unshown} ({exc.what})"
    exc.hint = "run `gpudash plan` to see whether it did; run again when the service answers: publishing converges"
    exc.answer_lost = False  # reported: not to be rewritten again
    return exc

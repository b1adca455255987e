"""User-facing errors and the exit codes the CLI maps them to."""

from __future__ import annotations

from . import printed, redact

EXIT_OK = 0
EXIT_FINDINGS = 1  # lint findings, --check differences, failed verify checks
EXIT_INPUT = 2  # usage and input errors: bad CSV, YAML, definitions, paths
EXIT_REMOTE = 3  # a remote system refused or could not be reached
EXIT_INTERRUPTED = 130  # Ctrl-C: the shell's code for a process stopped by SIGINT
INTERRUPTED = "interrupted (Ctrl-C); nothing after this point was done"
FIX = "\n  fix: "  # what starts an error's fix, on a line of its own
# What the error of a write says when it was sent and nothing showed whether it was made (may_have_happened,
# DeadlineExceeded.after_sending): a publish stopped by a signal counts such writes apart from those not written
MAY_HAVE_HAPPENED = "may have happened"


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
        return self._said(str)

    def printed(self) -> str:
        """The error as text output prints it: what it quotes (a server's message, a name a person chose) with each
        character that does not print as itself escaped in place (printed.text), so that a server's newline cannot
        add a line to it; its fix on a line of its own. JSON output keeps the raw `what` and `hint`."""
        return self._said(printed.text)

    def _said(self, shown) -> str:
        text = f"{printed.path(self.where)}: {shown(self.what)}" if self.where else shown(self.what)
        if self.hint:
            text += f"{FIX}{shown(self.hint)}"
        return text


class InputError(GpudashError):
    """Malformed input files: CSV, YAML, definitions."""


class OutputError(GpudashError):
    """The output directory could not be written."""


class RemoteError(GpudashError):
    """A remote API failed or could not be reached."""

    exit_code = EXIT_REMOTE


def printed_message(text: str) -> str:
    """A message composed of an error's text (`str(GpudashError)`, a failed write's in a publish report) as text output
    prints it: escaped in place as GpudashError.printed escapes it, the last fix on a line of its own (a newline the
    server's words hold before it is escaped)."""
    said, fix, hint = text.rpartition(FIX)
    return f"{printed.text(said)}{FIX}{printed.text(hint)}" if fix else printed.text(text)


def may_have_happened(exc: RemoteError, sent: str, unshown: str) -> RemoteError:
    """A write whose request reached the server (its answer lost, or a later attempt refused because an
    earlier one landed) and that no read-back showed either way: it may have happened, and says so,
    instead of "cannot reach" or the later refusal."""
    exc.what = f"{sent} and {MAY_HAVE_HAPPENED}, but {unshown} ({exc.what})"
    exc.hint = "run `gpudash plan` to see whether it did; run again when the service answers: publishing converges"
    exc.answer_lost = False  # reported: not to be rewritten again
    return exc

"""One deadline for a whole publishing command, and the clock its waits go through.

A push or an apply is given a number of seconds in all (`--deadline`). Every remote call asks the
deadline how long it may still take; backoff and Retry-After waits go through the deadline's clock
and never outlive it; a call that is still running when the time is up (a server dripping its
answer a few bytes at a time) is abandoned. `Retry-After` is honoured up to `--retry-after-max`
seconds: a server asking for more is a remote failure, not a reason to wait for hours.

The clock is injectable: tests replace `CLOCK` with one that advances without sleeping.
"""

from __future__ import annotations

import datetime
import email.utils
import encodings.idna  # noqa: F401 - see below
import threading
import time
from typing import Callable, TypeVar

from ..errors import MAY_HAVE_HAPPENED, RemoteError

# Every remote call runs on a thread of its own (`Deadline.run`), and the socket layer encodes the host name with the
# idna codec at each connection (urllib3's create_connection, under requests and botocore): the codec's first lookup
# imports its module, which two Regions' calls starting at once would import on two threads (a thread importing a
# module that another is importing can see it half made). It is imported with this module, before any call's thread.

DEFAULT_SECONDS = 900.0  # a publishing command may take 15 minutes in all
DEFAULT_RETRY_AFTER_MAX = 30.0  # the longest Retry-After honoured

T = TypeVar("T")
# A second Ctrl-C stops a publish at once (cli_publish._StopOnSignal): the call under way is not waited for. What the
# report then says of the object being written, and of those after it.
AT_ONCE = "stopped at once by a second Ctrl-C"
UNDER_WAY = (f"{AT_ONCE} while its write was under way, before its outcome was known: it {MAY_HAVE_HAPPENED} (run "
             "`gpudash plan` to see whether it did)")
NOT_STARTED = f"not attempted: {AT_ONCE}"


class Clock:
    """Monotonic time, sleeping and waiting for an event: the real ones."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return event.wait(max(seconds, 0.0))

    def sleep_unless(self, event: threading.Event, seconds: float) -> None:
        """Sleep `seconds`, or less when `event` is set meanwhile (a stop)."""
        self.wait(event, seconds)


CLOCK = Clock()  # the clock a Deadline uses unless given one


class DeadlineExceeded(RemoteError):
    """The command ran out of time; what was not done is reported as not done."""

    stopped: str | None = None  # why the command stopped, when `what` says instead what a call under way left

    def after_sending(self, sent: str, unshown: str = "it was not read back to show it") -> DeadlineExceeded:
        """This stop came once `sent` (a write or a delete) was on its way: it may have happened, and the
        report says so instead of "not attempted"; `stopped` keeps why the command stopped."""
        if self.stopped is None:
            self.stopped = self.what
            self.what = f"{sent} and {MAY_HAVE_HAPPENED}, but {unshown} ({self.what.removesuffix('; not attempted')})"
        return self


def sent_then_stopped(exc: BaseException) -> bool:
    """Whether `exc` is a stop (the deadline, a signal) that came once a write or delete was on its way
    (`DeadlineExceeded.after_sending`): it may have happened, and nothing read it back."""
    return isinstance(exc, DeadlineExceeded) and exc.stopped is not None


class Interrupted(DeadlineExceeded):
    """The command was asked to stop (SIGINT, SIGTERM): the call under way finishes, no other starts, and
    what was not done is reported as not done. Its exit code is the shell's for the signal (128 + n)."""

    def __init__(self, what: str, *, signal_number: int, where: str | None = None, hint: str | None = None):
        super().__init__(what, where=where, hint=hint)
        self.exit_code = 128 + signal_number


class Deadline:
    def __init__(self, seconds: float = DEFAULT_SECONDS, *, retry_after_max: float = DEFAULT_RETRY_AFTER_MAX,
                 command: str = "the command", clock: Clock | None = None):
        self.clock = clock or CLOCK
        self.seconds = seconds
        self.retry_after_max = retry_after_max
        self.command = command
        self.ends = self.clock.now() + seconds
        self.interrupted: tuple[str, int] | None = None  # (signal name, number) once asked to stop
        self._stop = threading.Event()  # set with `interrupted`: ends a retry's wait (`pause`) at once
        self.at_once = False  # stopped at once (a second Ctrl-C): no call under way is waited for any more
        self._waits: set[threading.Event] = set()  # the calls waited for now, on any thread
        # re-entrant: the second Ctrl-C's handler (stopped_at_once) runs on the main thread wherever it is, inside
        # `run`'s lines that hold this lock too
        self._waits_lock = threading.RLock()

    def interrupt(self, name: str, number: int) -> None:
        """Stop the command: every later check (before each call, each retry wait) raises Interrupted."""
        self.interrupted = (name, number)
        self._stop.set()

    def stopped_at_once(self) -> None:
        """A second Ctrl-C came (KeyboardInterrupt): stopped as by SIGINT, whatever asked first, and every call
        another thread waits for (a Region's other writer's) is given up on now, as the one the signal landed in."""
        import signal

        if not self.interrupted:
            self.interrupt("SIGINT", signal.SIGINT)
        with self._waits_lock:
            self.at_once = True
            for waiting in self._waits:
                waiting.set()

    def remaining(self) -> float:
        if self.interrupted:
            return 0.0
        return max(0.0, self.ends - self.clock.now())

    def exceeded(self, what: str | None = None) -> DeadlineExceeded:
        if self.interrupted:
            name, number = self.interrupted
            return Interrupted(f"{self.command} was stopped by {name}; not attempted", signal_number=number,
                               where=what, hint="run the command again when you are ready: publishing converges")
        return DeadlineExceeded(f"{self.command} did not finish within its deadline of {self.seconds:g} s",
                                where=what, hint="find what is slow (a server or proxy answering slowly) or raise "
                                                 "--deadline; run again: publishing converges")

    def check(self, what: str | None = None) -> None:
        if self.remaining() <= 0:
            raise self.exceeded(what)

    def timeout(self, longest: float) -> float:
        """A socket timeout for one call: `longest`, or less when the deadline is nearer."""
        self.check()
        return min(longest, self.remaining())

    def pause(self, seconds: float, what: str | None = None, failure: RemoteError | None = None) -> None:
        """Wait before a retry; a wait that would outlive the deadline ends the command now (saying what
        failed, when the caller gives the failure it meant to retry), and so does a stop (a signal) during the wait:
        the retry it waits for would not start."""
        if seconds >= self.remaining():
            if failure is not None and not self.interrupted:
                raise DeadlineExceeded(f"{failure.what}; no time left to retry within the deadline of "
                                       f"{self.seconds:g} s", where=what, hint=failure.hint)
            raise self.exceeded(what)
        self.clock.sleep_unless(self._stop, seconds)
        if self.interrupted:
            raise self.exceeded(what)

    def retry_after(self, header: str | None, what: str | None = None) -> float | None:
        """Seconds a Retry-After header asks for (None when absent or unreadable), within the cap."""
        seconds = parse_retry_after(header)
        if seconds is not None and seconds > self.retry_after_max:
            raise RemoteError(f"the server asked to wait {seconds:g} s before retrying (Retry-After), more than "
                              f"the {self.retry_after_max:g} s allowed", where=what,
                              hint="run again later, or raise --retry-after-max")
        return seconds

    def run(self, call: Callable[[], T], what: str | None = None, on_start: Callable[[], None] | None = None) -> T:
        """Run `call` on a worker thread and wait at most until the deadline for it.

        The wait is measured when the call starts: time that passes while it runs (on this clock, which
        another thread may advance) cannot abandon a call already under way before its full share.

        A call is either never started or counted as started, never both: the worker starts it only if
        the caller has not given up on it (and the command is not stopped) by then, and marks it started
        (`on_start`, where the caller records that its request may be sent) under the same lock the
        caller takes to give up. So "not attempted" is only ever said of a call that will never run."""
        self.check(what)
        allowed = self.remaining()
        result: dict[str, object] = {}
        finished = threading.Event()
        state = {"started": False, "abandoned": False}
        lock = threading.Lock()

        def work() -> None:
            try:
                with lock:
                    if state["abandoned"] or self.remaining() <= 0:
                        return  # given up on, or the command stopped, before it began: it never will
                    state["started"] = True
                    if on_start is not None:
                        on_start()
                result["value"] = call()
            except BaseException as exc:  # handed to the caller below
                result["error"] = exc
            finally:
                finished.set()

        threading.Thread(target=work, name="gpudash-remote-call", daemon=True).start()
        with self._waits_lock:
            self._waits.add(finished)
            if self.at_once:
                finished.set()
        try:
            answered = self.clock.wait(finished, allowed) and ("value" in result or "error" in result or
                                                              not self.at_once)
        finally:
            with self._waits_lock:
                self._waits.discard(finished)
        if not answered:
            with lock:
                state["abandoned"] = not state["started"]
            raise self.exceeded(what)
        if "error" in result:
            raise result["error"]  # type: ignore[misc]
        if "value" not in result:  # the command was stopped before the call began: it was not made
            raise self.exceeded(what)
        return result["value"]  # type: ignore[return-value]


def parse_retry_after(header: str | None) -> float | None:
    """Retry-After as seconds: delta-seconds (ASCII digits: str.isdigit takes "²", which float refuses) or an HTTP date
    (RFC 9110 §10.2.3); None when it is neither."""
    if not header:
        return None
    text = header.strip()
    if text.isascii() and text.isdigit():
        return float(text)
    when = http_date(text)
    return None if when is None else max(0.0, when.timestamp() - time.time())


def http_date(text: object) -> datetime.datetime | None:
    """An HTTP date (RFC 9110 §5.6.7: a Date or Retry-After header) as an aware time; None when it is no such date
    (none given, unparsable, or without a zone)."""
    try:
        when = email.utils.parsedate_to_datetime(text) if isinstance(text, str) else None
    except (TypeError, ValueError):
        return None
    return when if when is not None and when.tzinfo is not None else None

"""The publishing deadline: backoff on an injected clock, Retry-After capped, slow calls abandoned."""

from __future__ import annotations

import threading

import pytest

from generator.errors import RemoteError
from generator.clients.deadline import Deadline, DeadlineExceeded, parse_retry_after
from tests.support.clock import FakeClock


def test_backoff_waits_on_the_injected_clock_and_never_past_the_deadline():
    clock = FakeClock()
    limit = Deadline(10, clock=clock, command="push")
    limit.pause(4)
    assert clock.slept == [4] and limit.remaining() == 6
    with pytest.raises(DeadlineExceeded, match="push did not finish within its deadline of 10 s"):
        limit.pause(6, "dashboard x")
    assert clock.slept == [4]  # it did not wait for nothing
    with pytest.raises(DeadlineExceeded, match=r"Grafana answered 503; no time left to retry within the "
                                                 r"deadline of 10 s") as error:
        limit.pause(6, "dashboard x", failure=RemoteError("Grafana answered 503", hint="run again"))
    assert error.value.hint == "run again" and clock.slept == [4]


def test_a_stop_ends_a_retry_wait_at_once():
    """SIGTERM (or Ctrl-C) while a writer waits out a backoff or a Retry-After of 5 s: the wait went on to its end
    (30 s at --retry-after-max), and a second Ctrl-C, meant to stop at once, waited for it too. Now the wait ends
    with the stop, as the retry it waited for would not start."""
    import time

    from generator.clients.deadline import Clock, Interrupted

    limit = Deadline(60, command="apply", clock=Clock())  # real time: the wait is one a signal lands in
    raised: list[BaseException] = []

    def writer() -> None:
        try:
            limit.pause(5, "alarm x")
        except DeadlineExceeded as exc:
            raised.append(exc)

    waiting = threading.Thread(target=writer)
    started = time.monotonic()
    waiting.start()
    time.sleep(0.1)
    limit.interrupt("SIGTERM", 15)
    waiting.join(10)
    assert time.monotonic() - started < 2
    assert [type(e) for e in raised] == [Interrupted] and "apply was stopped by SIGTERM" in raised[0].what


def test_retry_after_is_honoured_up_to_the_cap():
    limit = Deadline(100, retry_after_max=30, clock=FakeClock())
    assert limit.retry_after("7") == 7 and limit.retry_after(None) is None and limit.retry_after("soon") is None
    with pytest.raises(RemoteError, match=r"asked to wait 45 s .* more than the 30 s allowed") as error:
        limit.retry_after("45")
    assert "--retry-after-max" in str(error.value)
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: retry now


def test_a_call_still_running_at_the_deadline_is_abandoned():
    class Expired(FakeClock):
        def wait(self, event, seconds):
            return event.is_set()  # the deadline has come before the call answers

    release = threading.Event()
    with pytest.raises(DeadlineExceeded):
        Deadline(5, clock=Expired()).run(lambda: release.wait(5), "search")
    release.set()
    assert Deadline(5, clock=FakeClock()).run(lambda: 42) == 42
    with pytest.raises(ValueError):
        Deadline(5, clock=FakeClock()).run(lambda: int("x"))


def test_a_call_is_given_the_time_left_when_it_starts_even_if_the_clock_moves_while_it_runs():
    """Another thread (here the call itself) may advance the clock past the deadline while the call is
    under way: the call was sent within the deadline, so its answer is awaited and counted, not dropped."""

    class Recording(FakeClock):
        def __init__(self):
            super().__init__()
            self.waits = []

        def wait(self, event, seconds):
            self.waits.append(seconds)
            return event.wait(seconds)

    clock = Recording()
    limit = Deadline(60, clock=clock)

    def slow_write():
        clock.sleep(1000)  # the write takes longer than the whole command may
        return "written"

    assert limit.run(slow_write, "alarm x") == "written"
    assert clock.waits == [60]
    with pytest.raises(DeadlineExceeded):  # the next call is not started
        limit.run(lambda: "never", "alarm y")


# A publish with a remote call under way: the first Ctrl-C asks it to stop after that call, the second (landing where
# Deadline.run registers the call it waits for, with the lock of those waits held) stops it at once.
_SECOND_CTRL_C = """
import signal

from generator.cli_publish import _StopOnSignal
from generator.clients.deadline import Deadline

# Ctrl-C as a terminal delivers it: a process started in the background (`cmd &` in a script, as a CI job may be) inherits
# SIGINT ignored, and gpudash rightly leaves an ignored signal ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
deadline = Deadline(30, command="apply")
with _StopOnSignal(deadline):
    signal.raise_signal(signal.SIGINT)
    try:
        with deadline._waits_lock:
            signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        print("stopped at once by", deadline.interrupted[0])
"""


def test_a_second_ctrl_c_landing_while_a_call_is_registered_stops_at_once():
    """A signal's handler runs on the main thread wherever it is, inside Deadline.run's few lines that register the
    call it waits for too. The second Ctrl-C's handler gives up on every call waited for under the lock those lines
    hold, which its own thread held already: the process hung there for good (a third Ctrl-C ran the same handler
    into the same lock). Now it stops at once, as anywhere else."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))}
    try:
        result = subprocess.run([sys.executable, "-c", _SECOND_CTRL_C], capture_output=True, text=True, timeout=10,
                                env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("the second Ctrl-C hung on the lock its own thread held")
    assert result.stdout.strip() == "stopped at once by SIGINT", (result.stdout, result.stderr)

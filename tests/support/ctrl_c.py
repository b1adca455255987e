"""Ctrl-C pressed twice while a publish writes: `twice` is a fault proxy callback that sends this process SIGINT, and
again once the first is handled; `sigint_handled` lets a test send it where the process was started ignoring it (a
background job), and restores the handler after."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Iterator


def twice() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)  # the first is handled (the publish is to stop after the call under way) before the second comes
    os.kill(os.getpid(), signal.SIGINT)


@contextlib.contextmanager
def sigint_handled() -> Iterator[None]:
    found = signal.getsignal(signal.SIGINT)
    if found == signal.SIG_IGN:  # (gpudash leaves an ignored SIGINT ignored)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, found)

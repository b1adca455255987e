"""What a verify group is waiting on, told to the run as the wait starts and ends: a deadline that comes before the
wait's own limit (a loaded machine, a short --timeout) names what was waited for, not only "no answer"."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Awaiting:
    """`what` a group waits on (None: the wait is over) and what to do should the deadline come first."""

    what: str | None
    hint: str = ""


_here = threading.local()


def told_to(report: Callable[[Awaiting], None] | None) -> None:
    """The calling thread's waits are told to `report` (a group's worker), or to nobody (None)."""
    _here.report = report


def tell(what: str | None, hint: str = "") -> None:
    """The calling thread starts waiting on `what` (None: stops). A thread that is not a group's worker tells nobody."""
    report = getattr(_here, "report", None)
    if report is not None:
        report(Awaiting(what, hint))

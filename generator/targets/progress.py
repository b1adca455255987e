"""Progress of a publishing command's phases (reading what is live, writing), on stderr.

On a terminal each phase is a live bar that moves with every read or write; elsewhere (CI logs)
each phase is one line when it ends: `reading Grafana: 6/6 (0.4 s)`. Output on stdout (tables,
JSON) is never touched.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Callable, Iterator, TextIO

import click

from .. import redact

Tick = Callable[[], None]


class Progress:
    def __init__(self, stream: TextIO | None = None, interactive: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        if interactive is None:
            interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interactive = interactive

    @contextlib.contextmanager
    def phase(self, label: str, total: int) -> Iterator[Tick]:
        label = redact.text(label)  # a label may name an endpoint
        if self.interactive:
            with click.progressbar(length=max(total, 1), label=label, file=self.stream) as bar:
                yield lambda: bar.update(1)
            return
        count = 0
        started = time.monotonic()

        def tick() -> None:
            nonlocal count
            count += 1

        ended = "stopped"
        try:
            yield tick
            ended = ""
        finally:
            elapsed = time.monotonic() - started
            click.echo(f"{label}: {count}/{total} ({elapsed:.1f} s){', ' + ended if ended else ''}",
                       file=self.stream)


class Silent(Progress):
    """No progress at all (library use, benchmarks)."""

    def __init__(self) -> None:
        super().__init__(stream=sys.stderr, interactive=False)

    @contextlib.contextmanager
    def phase(self, label: str, total: int) -> Iterator[Tick]:
        yield lambda: None

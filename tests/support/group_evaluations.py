"""A real Prometheus holding a stored history and whatever the generated rule group's recording rules wrote over it at
the evaluations a server made (`promtool tsdb create-blocks-from rules`, which evaluates a group at its own phase,
derived from its name and file): how the group's alerts read on a server that loaded the rules only at the end of the
history, or that missed an evaluation. A group without recording rules reads the stored readings alone."""

from __future__ import annotations

import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import yaml

from tests.support.prometheus_server import PINNED, Prometheus, binary

NO_SCRAPES = {"global": {"scrape_interval": "1m"}, "scrape_configs": []}


def history_start(span: int, step: int) -> int:
    """A history's first instant: `span` seconds on the `step` grid, ending over two hours ago (every sample in a
    block, none in the head a started Prometheus would append to)."""
    return (int(time.time()) - span - 3 * 3600) // 60 * 60 // step * step


@contextmanager
def group_evaluated(folder: Path, openmetrics: Callable[[int], str], span: int, step: int, rules: list[dict],
                    runs: Callable[[int, int], list[tuple[int, int]]]) -> Iterator[tuple[Prometheus, int]]:
    """A Prometheus holding `openmetrics(start)` over `span` seconds and the samples `rules`' recording rules wrote at
    each minute of the spans `runs(start, end)` (end: the history's last instant); with it, the instant the alerts are
    read at: the last evaluation a recording rule wrote a sample at, at or before the end; the end where none did."""
    start = history_start(span, step)
    end = start + span
    source = folder / "history.om"
    source.write_text(openmetrics(start))
    records = [r for r in rules if "record" in r]
    # promtool evaluates a recording rule by range queries, a block's span each: an instant pinned with `@ end()` would
    # read the block's end at every evaluation (Prometheus reads the evaluation's own)
    pinned = [r["record"] for r in records if PINNED.search(r["expr"])]
    assert not pinned, pinned
    promtool = binary("promtool")
    for part in ("raw", "all") if records else ("all",):
        done = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(source),
                               str(folder / part / "data")], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    if records:
        (folder / "record.yaml").write_text(yaml.safe_dump({"groups": [{"name": "r", "rules": records}]}))
        with Prometheus(folder / "raw", NO_SCRAPES) as raw:
            for first, last in runs(start, end):
                done = subprocess.run([promtool, "tsdb", "create-blocks-from", "rules", f"--start={first}",
                                       f"--end={last}", f"--url={raw.url}", "--eval-interval=60s",
                                       f"--output-dir={folder / 'all' / 'data'}", str(folder / "record.yaml")],
                                      capture_output=True, text=True, cwd=folder)
                assert done.returncode == 0, done.stdout + done.stderr
    with Prometheus(folder / "all", NO_SCRAPES) as prometheus:
        names = "|".join(sorted({r["record"] for r in records}))
        written = prometheus.query(f'max(timestamp({{__name__=~"{names}"}}))', at=end) if records else []
        yield prometheus, float(written[0]["value"][1]) if written else end

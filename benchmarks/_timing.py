"""Whole-process timings shared by the benchmark scripts.

    from _timing import measure, measure_pair, median_seconds
    timing = measure(["gpudash", "generate"])      # median of 5 runs, and the peak RSS
    print(timing.seconds, timing.peak_mib)
    ours, anchor = measure_pair(command, anchor_command)   # runs interleaved, for a fair ratio

Every run is a fresh process (imports included), as a user or CI pays for it; the median of
5 leaves out the first run's byte-code compiling.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# GPUDASH_BENCH_SMOKE=1: every script runs once at its smallest size, to show that it still runs
# (tests/integration/test_benchmarks.py); its figures then mean nothing.
SMOKE = os.environ.get("GPUDASH_BENCH_SMOKE") == "1"
RUNS = 1 if SMOKE else 5
# Where each script appends the rows of issue 13's table it measured (`record`), which benchmarks/summary.py prints
# last in `make bench`: every figure and its target in one table, from one run.
FIGURES = os.environ.get("GPUDASH_BENCH_FIGURES")


@dataclass(frozen=True)
class Timing:
    seconds: float  # median wall time
    peak_mib: float  # largest resident set of any run
    cpu_seconds: float = 0.0  # median user + system time: steadier than wall time on a busy machine

    def __str__(self) -> str:
        return f"{self.seconds:.2f} s (CPU {self.cpu_seconds:.2f} s)"


def _run_once(command: list[str], env: dict[str, str] | None, cwd: str | Path | None,
              sink: list[bytes] | None = None) -> tuple[float, float, float]:
    """One fresh process: (wall seconds, peak MiB, CPU seconds). `sink`, if given, receives its standard output
    alone (standard error then goes to ours), for a caller that reads what the measured run printed."""
    # Byte-code caches as an installed package has them: a checkout run with PYTHONDONTWRITEBYTECODE
    # would compile gpudash's modules on every run, which no user pays.
    env = {key: value for key, value in (os.environ if env is None else env).items()
           if key != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=None if sink is not None else subprocess.STDOUT,
                               env=env, cwd=cwd)
    output = process.stdout.read() if process.stdout else b""
    if sink is not None:
        sink.append(output)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"benchmark command failed ({process.returncode}): {' '.join(command)}\n"
                         f"{output.decode(errors='replace')[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime  # ru_maxrss: KiB on Linux


def measure(command: list[str], runs: int = RUNS, *, env: dict[str, str] | None = None,
            cwd: str | Path | None = None) -> Timing:
    """Median wall time over `runs` fresh processes, and their peak memory; exits on failure."""
    return _timing([_run_once(command, env, cwd) for _ in range(runs)])


def run_printing(command: list[str], *, env: dict[str, str] | None = None,
                 cwd: str | Path | None = None) -> tuple[Timing, bytes]:
    """One fresh process, measured as `measure` measures a run, and its standard output: a run that is both read
    and measured."""
    outputs: list[bytes] = []
    return _timing([_run_once(command, env, cwd, outputs)]), outputs[0]


def _timing(samples: list[tuple[float, float, float]]) -> Timing:
    return Timing(statistics.median(s[0] for s in samples), max(s[1] for s in samples),
                  statistics.median(s[2] for s in samples))


def measure_pair(first: list[str], second: list[str], runs: int = RUNS, **kwargs) -> tuple[Timing, Timing]:
    """Both commands, runs interleaved (first, second, first, ...) so that load from other work
    weighs on both alike: for a ratio against an anchor."""
    samples = [[_run_once(command, kwargs.get("env"), kwargs.get("cwd")) for command in (first, second)]
               for _ in range(runs)]
    return _timing([run[0] for run in samples]), _timing([run[1] for run in samples])


def median_seconds(command: list[str], runs: int = RUNS, **kwargs) -> float:
    """Median wall time of `command` over `runs` runs (keyword arguments: env, cwd)."""
    return measure(command, runs, **kwargs).seconds


def record(figure: str, measured: str, target: str = "", met: bool | None = None) -> None:
    """One row of the summary table (benchmarks/summary.py): the figure, what this run measured, the target or anchor
    it is judged against, and whether it met it (None: a figure without a target). Nothing without
    GPUDASH_BENCH_FIGURES."""
    if FIGURES:
        with open(FIGURES, "a", encoding="utf-8") as rows:
            rows.write(json.dumps({"figure": figure, "measured": measured, "target": target, "met": met,
                                   "load": os.getloadavg()[0]}) + "\n")


def reference_dir() -> Path:
    """The shared reference data; without it the benchmark stops here, printing the skip line
    of benchmarks/_reference.py."""
    from _reference import reference_or_skip  # the benchmarks' folder is on sys.path when one runs

    return reference_or_skip(f"benchmarks/{Path(sys.argv[0]).name}", "")

"""Benchmark: `make test` on a fresh clone (venv, install, Prometheus check, the whole suite), once.

It takes minutes, so `make bench` runs it only with BENCH_SUITE=1; otherwise it prints how to.
The clone is made from this checkout's HEAD into a temporary folder, with CI=true as CI runs it.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import reference_dir  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    if os.environ.get("BENCH_SUITE") != "1":
        print("make test on a fresh clone: skipped (minutes long); run `BENCH_SUITE=1 make bench` to time it")
        return
    reference = reference_dir()
    with tempfile.TemporaryDirectory() as scratch:
        clone = Path(scratch) / "gpudash"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        env = {**os.environ, "CI": "true", "GPUDASH_REFERENCE": str(reference)}
        start, used = time.perf_counter(), _children_cpu()
        result = subprocess.run(["make", "test"], cwd=clone, env=env, capture_output=True, text=True)
        elapsed, cpu = time.perf_counter() - start, _children_cpu() - used
    summary = next((line for line in reversed(result.stdout.splitlines()) if " in " in line and "passed" in line),
                   "no pytest summary")
    print(f"make test on a fresh clone: {elapsed:.0f} s, {cpu:.0f} s CPU, exit {result.returncode} "
          f"({summary.strip('= ')}; load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")


def _children_cpu() -> float:
    """User + system CPU of the processes this one started and waited for, and of those they waited for (pip, the
    test workers, Prometheus, promtool): comparable across runs when other work shares the machine; the wall is not."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


if __name__ == "__main__":
    main()

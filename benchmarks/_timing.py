"""Wall-time helpers shared by the benchmark scripts."""

from __future__ import annotations

import statistics
import subprocess
import time


def median_seconds(command: list[str], runs: int = 5, **kwargs) -> float:
    """Median wall time of `command` over `runs` runs; fails loudly if it fails."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, **kwargs)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)

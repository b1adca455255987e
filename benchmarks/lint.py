"""Benchmark: `gpudash lint --from` a fleet's build, as whole processes (wall and CPU time, peak memory).

Each fleet is built once with `gpudash generate` (the clusters of benchmarks/generate.py's fleet rows: two Regions,
one shared Prometheus with a prometheus_label each), then linted `--runs` times, each a fresh process reading the
build as CI's `make lint` does. `--mixed` adds, at each size, a fleet of three Regions where a quarter of the clusters
say `exporter.mig: none` (each cluster's alarms and dashboards then follow its own setting), on `--pipeline`.
Lint reads each cluster's agent, dashboards and alarms: its time should grow with the clusters, no faster.

Usage: `python benchmarks/lint.py [--clusters 300 1000] [--runs 3] [--mixed] [--pipeline otel|classic]`.
The load average is printed with the figures: on a busy machine read the CPU times.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import RUNS, SMOKE, measure  # noqa: E402
from generate import GPUDASH, clusters_config  # noqa: E402

REGIONS = ("us-east-1", "eu-west-1", "ap-south-1")


def mixed_config(root: Path, count: int, pipeline: str) -> Path:
    """`count` clusters over three Regions, on one shared Prometheus; every fourth says exporter.mig: none."""
    lines = "".join(f"  - {{name: c{i:04}, region: {REGIONS[i % 3]}, prometheus_label: c{i:04}"
                    f"{', exporter: {mig: none}' if i % 4 == 0 else ''}}}\n" for i in range(count))
    path = root / f"clusters-{count}-mixed-{pipeline}.yaml"
    path.write_text(f"agent:\n  pipeline: {pipeline}\nclusters:\n{lines}")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, nargs="+", default=[2] if SMOKE else [300, 1000])
    parser.add_argument("--runs", type=int, default=1 if SMOKE else min(RUNS, 3))
    parser.add_argument("--mixed", action="store_true")
    parser.add_argument("--pipeline", choices=("otel", "classic"), default="otel")
    options = parser.parse_args()
    print("| fleet | `gpudash lint --from` | per cluster (CPU) |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="gpudash-lint-bench-") as scratch:
        root = Path(scratch)
        for count in options.clusters:
            fleets = [(f"{count:,} clusters", clusters_config(root, count))]
            if options.mixed:
                fleets.append((f"{count:,} clusters, 3 Regions, a quarter exporter.mig: none, "
                               f"agent.pipeline: {options.pipeline}", mixed_config(root, count, options.pipeline)))
            for name, config in fleets:
                build = root / f"build-{config.stem}"
                subprocess.run([*GPUDASH, "generate", "--config", str(config), "--out", str(build)], check=True,
                               capture_output=True)
                timing = measure([*GPUDASH, "lint", "--config", str(config), "--from", str(build), "--output", "json"],
                                 options.runs)
                print(f"| {name} | {timing}, {timing.peak_mib:.0f} MiB | {timing.cpu_seconds / count * 1000:.1f} ms |")
    print()
    print(f"(median of {options.runs} fresh processes each; load average at the end: {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()

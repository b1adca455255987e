"""The last step of `make bench`: issue 13's figures, as the scripts before it measured them in this run, in one
table beside their targets and anchors (each script appends its rows to GPUDASH_BENCH_FIGURES: _timing.record).
docs/performance.md's table is copied from this output."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

VERDICT = {True: "met", False: "**not met**", None: ""}


def table(rows: list[dict]) -> str:
    lines = ["| figure | this run (wall; CPU where measured) | target or anchor, same run | |", "|---|---|---|---|"]
    lines += [f"| {row['figure']} | {row['measured']} | {row['target']} | {VERDICT[row['met']]} |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    path = os.environ.get("GPUDASH_BENCH_FIGURES") or (sys.argv[1] if len(sys.argv) > 1 else "")
    if not path or not Path(path).is_file():
        print("no figures recorded: run `make bench` (or set GPUDASH_BENCH_FIGURES for the scripts and this one)")
        return
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    print("\nIssue 13's figures, this run (whole processes: median of 5 runs each, a first apply one run; the targets "
          "are wall times on a machine with a CPU free):\n")
    print(table(rows))
    loads = [row["load"] for row in rows if isinstance(row.get("load"), (int, float))]
    if loads:
        print(f"\n(load average as each figure was recorded: {min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} "
              f"CPUs: above about 1, wall times include waiting for a CPU, and the CPU times are the steadier figure)")


if __name__ == "__main__":
    main()

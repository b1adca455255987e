"""Benchmark: alarms needed to cover 500 GPU pods with the default alarm set, GROUP BY vs per-pod.

Prints the alarm count and the monthly cost of each (prices from the dated data file).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from generator.cost import Fleet, estimates  # noqa: E402
from generator.project import load_project  # noqa: E402


def main() -> None:
    start = time.perf_counter()
    project = load_project()
    fleet = Fleet(clusters=1, pods=500, churn=3000)
    result = estimates(project, fleet)
    for mode, title in (("group_by", "GROUP BY pod (one alarm per rule)"), ("static", "static (one alarm per pod)")):
        estimate = result[mode]
        alarm_cost = sum(line["monthly"] for line in estimate["lines"] if "alarm" in line["item"])
        print(f"{title:36} {estimate['alarms']:5d} alarms  alarms ${alarm_cost:8.2f}/month  "
              f"total ${estimate['total']:9.2f}/month")
    print(f"(500 pods, 1 cluster, 3000 pod starts a month; prices as of {result['prices_as_of']}; "
          f"{time.perf_counter() - start:.3f} s)")


if __name__ == "__main__":
    main()

"""Benchmark: CLI start-up and generation wall time, and the ratio against grafanalib's CLI.

Prints one line per figure. Run with `make bench` (or `.venv/bin/python benchmarks/generate.py`).
"""

from __future__ import annotations

import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import median_seconds  # noqa: E402

BIN = Path(sys.executable).parent
GPUDASH = [str(BIN / "gpudash")]
METRICS = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
           "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
           "DCGM_FI_PROF_GR_ENGINE_ACTIVE"]

NEUTRAL = '''
from generator.model import Dashboard, Row
from generator.panels import per_pod

METRICS = {metrics!r}
dashboard = Dashboard("bench", "Bench", [Row("Pods", [per_pod(m, m) for m in METRICS])])
'''

GRAFANALIB = '''
from grafanalib.core import Dashboard, GridPos, Target, TimeSeries

METRICS = {metrics!r}
dashboard = Dashboard(
    title="Bench", uid="bench",
    panels=[TimeSeries(title=m, unit="percent", legendDisplayMode="table",
                       targets=[Target(expr="avg by (pod) (" + m + "{{pod!=\\"\\"}})", legendFormat="Pod {{{{pod}}}}",
                                       refId="A")],
                       gridPos=GridPos(h=8, w=12, x=12 * (i % 2), y=8 * (i // 2)))
            for i, m in enumerate(METRICS)],
).auto_panel_ids()
'''


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        print(f"gpudash --help                    {median_seconds([*GPUDASH, '--help']):.3f} s")
        print(f"gpudash generate (defaults)       "
              f"{median_seconds([*GPUDASH, 'generate', '--out', str(root / 'b0')]):.3f} s")

        clusters = "\n".join(f"  - {{name: c{i:03}, region: us-east-1, prometheus_label: c{i:03}}}" for i in range(100))
        (root / "many.yaml").write_text(f"clusters:\n{clusters}\n")
        print(f"gpudash generate (100 clusters)   "
              f"{median_seconds([*GPUDASH, 'generate', '--config', str(root / 'many.yaml'), '--out', str(root / 'b1')]):.3f} s")

        (root / "dash").mkdir()
        (root / "dash" / "bench.py").write_text(textwrap.dedent(NEUTRAL.format(metrics=METRICS)))
        (root / "one.yaml").write_text("definitions:\n  dashboards: [dash]\n")
        ours = median_seconds([*GPUDASH, "generate", "--config", str(root / "one.yaml"), "--out", str(root / "b2")])
        (root / "bench.dashboard.py").write_text(textwrap.dedent(GRAFANALIB.format(metrics=METRICS)))
        theirs = median_seconds([str(BIN / "generate-dashboard"), "-o", str(root / "g.json"),
                                 str(root / "bench.dashboard.py")])
        print(f"one {len(METRICS)}-panel dashboard: gpudash generate {ours:.3f} s, "
              f"grafanalib generate-dashboard {theirs:.3f} s, ratio {ours / theirs:.2f}")


if __name__ == "__main__":
    main()

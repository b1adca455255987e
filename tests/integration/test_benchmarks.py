"""Every benchmark script still runs: each is run once as `make bench` (or `make bench-queries`) runs it, at its
smallest size (GPUDASH_BENCH_SMOKE=1, benchmarks/_timing.py), and must finish and print its figures. Nothing here
reads the figures: they mean nothing at these sizes. (`make bench` had stopped with a TypeError for a day when a
command's signature changed under benchmarks/publish.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py") if not path.name.startswith("_"))

# Arguments of a script that takes its size on the command line; what each run must print.
# panels.py: a per-pod panel and a rule show that both kinds are measured and printed (Framebuffer used share by pod,
# the heaviest panel, took the script 1.9 CPU-s with its Prometheus; Framebuffer used by pod 0.9)
ARGUMENTS = {"panels.py": ["--only", "Framebuffer used by pod", "GpudashGpuIdle"],
             "queries.py": ["--gpus", "1", "--days", "0.05", "--runs", "1", "--ranges", "1h"],
             "rules.py": ["--gpus", "1", "--evaluations", "1", "--runs", "1", "--variants"]}
PRINTS = {
    "alarms.py": ["GROUP BY pod (one alarm per rule)", "static (one alarm per pod)"],
    "generate.py": ["| `gpudash --help` |", "| `generate`, 2 dashboards × 2 panels (Grafana and CloudWatch) |",
                    "| `generate`, 2 dashboards × 2 distinct panels (Grafana and CloudWatch) |",
                    "| `generate`, one 8-panel dashboard |", "| `generate`, 2 clusters |",
                    "| `generate`, 2 clusters, each its own Prometheus (no prometheus_label) and two exporter DaemonSets |",
                    "right after `rm -rf` of the previous build |", "(median of 1 fresh processes each;"],
    "lint.py": ["| 2 clusters | ", "(median of 1 fresh processes each;"],
    "panels.py": ["### the defaults, exporter.virtual_gpus: false: 11 GPUs",
                  "| gpudash-by-pod · Framebuffer used by pod | ", "| rule GpudashGpuIdle | ", "| all | "],
    "publish.py": ["no-op apply, 1 clusters (median of 1)", "prune of 1 of 2 clusters (1 Region)",
                   "first apply, 2 clusters in 2 Regions at once",
                   "second run (no changes)"],
    "queries.py": ["### 1 GPUs, 0.05 day(s) of 30 s scrapes", "1h at a 30 s step", "increase over 1h (instant)",
                   "| rule GpudashXidError |", "costliest panel: "],
    "rules.py": ["### 11 GPUs", "| xid-error | ", "| gpu-temp-critical 2 of 3 missing | ", " recording + ",
                 "| counters: gpudash:DCGM_FI_DEV_PCIE_REPLAY_COUNTER:step_seconds | ", "Per evaluation: the shipped alerts"],
    "sdk_dashboards.py": [],
    "suite.py": ["make test on a fresh clone: skipped"],
    "summary.py": ["no figures recorded"],
    "verify.py": ["gpudash verify, 4 groups", "median of 1 (", "cloudwatch group alone:"],
}
# The rows of issue 13's table each script appends for benchmarks/summary.py (GPUDASH_BENCH_FIGURES), at this size.
RECORDS = {
    "generate.py": ["`generate`, 2 dashboards × 2 panels", "`generate`, 2 dashboards × 2 distinct panels",
                    "`generate`, one 8-panel dashboard", "`generate`, 2 clusters"],
    "publish.py": ["first `apply`, 1 clusters (", "no-op `apply`, 1 clusters (", "first `apply`, 2 clusters in 2 Regions"],
    "verify.py": ["`gpudash verify`, 4 groups"],
    "suite.py": ["`make test` on a fresh clone"],
}
NEEDS = {"panels.py": ("prometheus", "promtool"), "queries.py": ("prometheus", "promtool"),
         "rules.py": ("prometheus", "promtool"), "verify.py": ("prometheus",)}


def _real_pacing_recorded(folder: Path) -> dict[str, str]:
    """Environment in which every Python process the script starts (itself included: PYTHONPATH's sitecustomize)
    appends to `folder`/real-sleeps each real sleep the publishing deadline's real clock makes (pacing, backoff,
    Retry-After: generator/clients/deadline.Clock.sleep)."""
    site = folder / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"""import os, sys, time
_sleep = time.sleep
def sleep(seconds):
    if sys._getframe(1).f_code.co_filename.endswith(os.path.join("generator", "clients", "deadline.py")):
        with open({str(folder / "real-sleeps")!r}, "a") as record:
            record.write(f"{{seconds}}\\n")
    _sleep(seconds)
time.sleep = sleep
""")
    return {"PYTHONPATH": os.pathsep.join(filter(None, (str(site), os.environ.get("PYTHONPATH"))))}


def test_every_script_is_run_here():
    assert SCRIPTS == sorted(PRINTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_script_runs_at_its_smallest_size(script, reference, tmp_path):
    missing = [name for name in NEEDS.get(script, ()) if shutil.which(name) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (`make services`)")
    arguments = [str(tmp_path / "out"), "2", "2"] if script == "sdk_dashboards.py" else ARGUMENTS.get(script, [])
    figures = tmp_path / "figures.jsonl"
    env = {**os.environ, "GPUDASH_BENCH_SMOKE": "1", "GPUDASH_REFERENCE": str(reference),
           **_real_pacing_recorded(tmp_path), **({"GPUDASH_BENCH_FIGURES": str(figures)} if script != "summary.py" else {})}
    env.pop("BENCH_SUITE", None)
    result = subprocess.run([sys.executable, str(BENCHMARKS / script), *arguments], capture_output=True, text=True,
                            env=env, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "skipped benchmarks" not in result.stdout, result.stdout
    for text in PRINTS[script]:
        assert text in result.stdout, result.stdout
    recorded = [json.loads(line)["figure"] for line in figures.read_text().splitlines()] if figures.exists() else []
    assert [row for row in RECORDS.get(script, ()) if not any(figure.startswith(row) for figure in recorded)] == [], \
        recorded
    # issue 13: only tests/integration/test_cloudwatch_apply.py's one test waits on the real pacer
    slept = (tmp_path / "real-sleeps").read_text().split() if (tmp_path / "real-sleeps").exists() else []
    assert slept == [], f"the script and the processes it ran slept {sum(map(float, slept)):.2f} s on the real " \
                        f"pacing and deadline clock"
    if script == "sdk_dashboards.py":
        assert sorted(path.name for path in (tmp_path / "out").iterdir()) == ["sdk-0.json", "sdk-1.json"]


def test_the_summary_prints_each_recorded_figure_with_its_verdict(tmp_path):
    """benchmarks/summary.py (the last step of `make bench`) prints every row the scripts recorded, in their order,
    each with its target and whether it was met."""
    figures = tmp_path / "figures.jsonl"
    rows = [{"figure": "`generate`, 1,000 clusters", "measured": "2.31 s (CPU 2.02 s), 396 MiB", "target": "< 2 s",
             "met": False},
            {"figure": "no-op `apply`, 3 clusters (45 objects)", "measured": "0.74 s, 0 writes",
             "target": "≤ 1.5 s, 0 writes", "met": True},
            {"figure": "first `apply`, 10 clusters", "measured": "42.29 s, 150 writes", "target": "paced", "met": None}]
    figures.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = subprocess.run([sys.executable, str(BENCHMARKS / "summary.py")], capture_output=True, text=True,
                            env={**os.environ, "GPUDASH_BENCH_FIGURES": str(figures)}, check=True)
    lines = [line for line in result.stdout.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert lines == ["| `generate`, 1,000 clusters | 2.31 s (CPU 2.02 s), 396 MiB | < 2 s | **not met** |",
                     "| no-op `apply`, 3 clusters (45 objects) | 0.74 s, 0 writes | ≤ 1.5 s, 0 writes | met |",
                     "| first `apply`, 10 clusters | 42.29 s, 150 writes | paced |  |"]

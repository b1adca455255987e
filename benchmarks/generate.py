"""Benchmark: `gpudash generate` as whole processes, against the anchors measured in the same run.

Figures (median of 5 fresh processes each):
  * start-up (`gpudash --help`) and the default build;
  * 200 dashboards x 20 panels, against a plain grafana-foundation-sdk script writing the same
    200 Grafana dashboards (benchmarks/sdk_dashboards.py): once with the same 20 panels on every dashboard (a
    panel met again is built once a build, so that row shows the repeats' gain), once with 4,000 distinct panels
    (titles "<metric> <i> of <dashboard>"), the script writing the same distinct titles;
  * one 8-panel dashboard, against grafanalib's `generate-dashboard` CLI (median of 15: its margin is a few percent);
  * 100 and 1,000 clusters (linear growth; peak memory): rebuilt over the previous build, built into
    a new folder, and built right after `rm -rf` of the previous build; 1,000 clusters each with a
    Prometheus of its own (no prometheus_label) and two exporter DaemonSets, rebuilt.

Run with `make bench` (or `.venv/bin/python benchmarks/generate.py`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import RUNS, SMOKE, measure, measure_pair, record  # noqa: E402

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
GPUDASH = [str(BIN / "gpudash")]
METRICS = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
           "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
           "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP"]
DASHBOARDS, PANELS = (2, 2) if SMOKE else (200, 20)  # the many-dashboards row
FEW, MANY = (1, 2) if SMOKE else (100, 1000)  # clusters of the two fleet rows
# The one-dashboard row's pair runs more often: each command takes a fifth of a second and their ratio is judged
# against 1.0 with a margin of a few percent, which the median of 5 left to chance (the last two runs read 0.85, 1.06)
ONE_DASHBOARD_RUNS = 1 if SMOKE else 15

ONE_DASHBOARD = '''
from generator.model import Dashboard, Row
from generator.panels import per_pod

METRICS = {metrics!r}
dashboard = Dashboard("bench", "Bench", [Row("Pods", [per_pod(m, m) for m in METRICS])])
'''

MANY_DASHBOARDS = '''
from generator.model import Dashboard, Row
from generator.panels import per_pod

METRICS = {metrics!r}


def dashboards(ctx):
    for number in range({dashboards}):
        panels = [per_pod(METRICS[i % len(METRICS)], f"{{METRICS[i % len(METRICS)]}} {{i}}") for i in range({panels})]
        yield Dashboard(f"d{{number}}", f"Dashboard {{number}}", [Row("Pods", panels)])
'''

# The same dashboards, each panel unlike any other of the build (its title names its dashboard): nothing is built once
# for several dashboards but the variables (benchmarks/sdk_dashboards.py's `distinct` writes the same titles)
DISTINCT_DASHBOARDS = '''
from generator.model import Dashboard, Row
from generator.panels import per_pod

METRICS = {metrics!r}


def dashboards(ctx):
    for number in range({dashboards}):
        panels = [per_pod(METRICS[i % len(METRICS)], f"{{METRICS[i % len(METRICS)]}} {{i}} of {{number}}")
                  for i in range({panels})]
        yield Dashboard(f"d{{number}}", f"Dashboard {{number}}", [Row("Pods", panels)])
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


def clusters_config(root: Path, count: int, shared: bool = True) -> Path:
    """`count` clusters over two Regions: on one shared Prometheus (each with its prometheus_label), or each with a
    Prometheus of its own and two exporter DaemonSets (the data-missing rule then names each DaemonSet of the
    fleet)."""
    label = ", prometheus_label: c{i:04}" if shared else ""
    lines = "".join(f"  - {{name: c{i:04}, region: {('us-east-1', 'eu-west-1')[i % 2]}{label.format(i=i)}}}\n"
                    for i in range(count))
    path = root / f"clusters-{count}{'' if shared else '-own'}.yaml"
    more = "" if shared else "exporter:\n  more_daemonsets: [monitoring/pool-b]\n"
    path.write_text(f"{more}clusters:\n{lines}")
    return path


def definitions_config(root: Path, name: str, text: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / f"{name}.py").write_text(textwrap.dedent(text))
    path = root / f"{name}.yaml"
    path.write_text(f"definitions:\n  dashboards: [{name}]\n")
    return path


def scenarios(root: Path) -> dict[str, Path | None]:
    """The settings file of each generate scenario (None: the bundled defaults)."""
    return {
        "defaults": None,
        "one dashboard": definitions_config(root, "one", ONE_DASHBOARD.format(metrics=METRICS[:8])),
        "many dashboards": definitions_config(root, "many", MANY_DASHBOARDS.format(
            metrics=METRICS, dashboards=DASHBOARDS, panels=PANELS)),
        "distinct panels": definitions_config(root, "distinct", DISTINCT_DASHBOARDS.format(
            metrics=METRICS, dashboards=DASHBOARDS, panels=PANELS)),
        "few clusters": clusters_config(root, FEW),
        "many clusters": clusters_config(root, MANY),
        "many clusters, own Prometheus": clusters_config(root, MANY, shared=False),
    }


def generate(config: Path | None, out: Path | None) -> list[str]:
    return [*GPUDASH, "generate", *(["--config", str(config)] if config else []),
            *(["--out", str(out)] if out else [])]


def first_builds(config: Path):
    """A first build (no previous build to link files from) into a new folder, and right after `rm -rf`.

    Measured before any other row, in a folder beside the checkout (where a user's build/ is), not in
    the system's temporary folder: on this machine's ext4, which runs without a journal, the kernel
    does not reuse an inode freed in the last minute (six while its inode table is not yet written
    back), and passes over each such inode for every file it creates, so a build right after
    thousands of files were deleted nearby pays for the deletion. Every other row replaces (deletes)
    a previous build on each run, and other work deletes files in the temporary folder all the time.
    Into a new folder is a first build as a user meets it: each run writes a folder of its own (named
    by the shell's process id), removed only after the last run, on a disk synced just before. Right
    after `rm -rf` (timed too): the inodes just freed are passed over for each file created."""
    scratch = Path(tempfile.mkdtemp(prefix=".bench-first-", dir=None if SMOKE else HERE.parent))
    try:
        os.sync()
        first = measure(["sh", "-c", 'exec "$@" --out "$0/new-$$"', str(scratch), *generate(config, None)])
        emptied = scratch / "emptied"
        measure(generate(config, emptied), runs=1)  # so that every measured run removes a build first
        after_rm = measure(["sh", "-c", f'rm -rf "{emptied}" && exec "$@"', "sh", *generate(config, emptied)])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return first, after_rm


def built(out: Path) -> str:
    """What a build in `out` holds, as a row names it: its Grafana dashboards and CloudWatch alarms."""
    alarms = json.loads((out / "cloudwatch" / "alarms.json").read_text())["alarms"]
    return f"{len(list((out / 'grafana').glob('*.json')))} dashboards, {len(alarms)} alarms"


def row(figure: str, value: str, anchor: str = "") -> None:
    print(f"| {figure} | {value} | {anchor} |")


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        configs = scenarios(root)
        first, after_rm = first_builds(configs["many clusters"])
        print("| figure | gpudash | anchor (same run) |")
        print("|---|---|---|")
        row("`gpudash --help`", str(measure([*GPUDASH, "--help"])))
        defaults = measure(generate(None, root / "b0"))
        row(f"`generate`, defaults ({built(root / 'b0')}, 1 cluster)", str(defaults))

        many, sdk = measure_pair(generate(configs["many dashboards"], root / "b1"),
                                 [sys.executable, str(HERE / "sdk_dashboards.py"), str(root / "sdk"), str(DASHBOARDS),
                                  str(PANELS)])
        row(f"`generate`, {DASHBOARDS:,} dashboards × {PANELS} panels (Grafana and CloudWatch)", str(many),
            f"plain grafana-foundation-sdk script: {sdk} (ratio {many.seconds / sdk.seconds:.1f}; "
            f"CPU {many.cpu_seconds / sdk.cpu_seconds:.1f})")
        record(f"`generate`, {DASHBOARDS:,} dashboards × {PANELS} panels", str(many),
               f"≤ 2.5 × a plain grafana-foundation-sdk script, {sdk}: ratio {many.seconds / sdk.seconds:.2f} "
               f"(CPU {many.cpu_seconds / sdk.cpu_seconds:.2f})", many.seconds <= 2.5 * sdk.seconds)

        distinct, anchor = measure_pair(generate(configs["distinct panels"], root / "b6"),
                                        [sys.executable, str(HERE / "sdk_dashboards.py"), str(root / "sdk-distinct"),
                                         str(DASHBOARDS), str(PANELS), "distinct"])
        row(f"`generate`, {DASHBOARDS:,} dashboards × {PANELS} distinct panels (Grafana and CloudWatch)", str(distinct),
            f"plain grafana-foundation-sdk script, the same titles: {anchor} (ratio "
            f"{distinct.seconds / anchor.seconds:.1f}; CPU {distinct.cpu_seconds / anchor.cpu_seconds:.1f})")
        record(f"`generate`, {DASHBOARDS:,} dashboards × {PANELS} distinct panels", str(distinct),
               f"≤ 2.5 × a plain grafana-foundation-sdk script, the same titles, {anchor}: ratio "
               f"{distinct.seconds / anchor.seconds:.2f} (CPU {distinct.cpu_seconds / anchor.cpu_seconds:.2f})",
               distinct.seconds <= 2.5 * anchor.seconds)

        (root / "bench.dashboard.py").write_text(textwrap.dedent(GRAFANALIB.format(metrics=METRICS[:8])))
        one, grafanalib = measure_pair(generate(configs["one dashboard"], root / "b2"),
                                       [str(BIN / "generate-dashboard"), "-o", str(root / "g.json"),
                                        str(root / "bench.dashboard.py")], runs=ONE_DASHBOARD_RUNS)
        row("`generate`, one 8-panel dashboard", f"{one} (median of {ONE_DASHBOARD_RUNS})",
            f"grafanalib's `generate-dashboard`: {grafanalib} (ratio {one.seconds / grafanalib.seconds:.2f}; "
            f"CPU {one.cpu_seconds / grafanalib.cpu_seconds:.2f})")
        record("`generate`, one 8-panel dashboard", f"{one} (median of {ONE_DASHBOARD_RUNS})",
               f"≤ grafanalib's `generate-dashboard`, {grafanalib}: ratio {one.seconds / grafanalib.seconds:.2f} "
               f"(CPU {one.cpu_seconds / grafanalib.cpu_seconds:.2f})", one.seconds <= grafanalib.seconds)

        small, large = measure_pair(generate(configs["few clusters"], root / "b3"),
                                    generate(configs["many clusters"], root / "b4"))
        row(f"`generate`, {FEW:,} clusters", f"{small}, {small.peak_mib:.0f} MiB")
        row(f"`generate`, {MANY:,} clusters", f"{large}, {large.peak_mib:.0f} MiB",
            f"×{large.seconds / small.seconds:.1f} the time of {FEW:,} clusters (CPU ×"
            f"{large.cpu_seconds / small.cpu_seconds:.1f}; linear: ≤ ×{MANY // FEW})")
        record(f"`generate`, {MANY:,} clusters", f"{large}, {large.peak_mib:.0f} MiB",
               f"< 2 s and linear: ×{large.seconds / small.seconds:.1f} the time of {FEW:,} clusters (≤ ×{MANY // FEW})",
               large.seconds < 2 and large.seconds <= MANY // FEW * small.seconds)
        own = measure(generate(configs["many clusters, own Prometheus"], root / "b5"))
        row(f"`generate`, {MANY:,} clusters, each its own Prometheus (no prometheus_label) and two exporter "
            "DaemonSets", f"{own}, {own.peak_mib:.0f} MiB", f"×{own.cpu_seconds / large.cpu_seconds:.1f} the CPU of "
            "the shared Prometheus row")
        row(f"`generate`, {MANY:,} clusters into a new folder", f"{first}, {first.peak_mib:.0f} MiB")
        row(f"`generate`, {MANY:,} clusters right after `rm -rf` of the previous build",
            f"{after_rm}, {after_rm.peak_mib:.0f} MiB",
            f"×{after_rm.seconds / first.seconds:.1f} the time into a new folder")
        print(f"\n(median of {RUNS} fresh processes each; load average at the end: {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()

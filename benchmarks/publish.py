"""Benchmark: publishing, as whole processes and in-process.

CloudWatch (moto's server behind a counting proxy, real pacing, whole `gpudash apply` processes; at the smallest
size, GPUDASH_BENCH_SMOKE=1, the pacing runs on a clock that does not sleep):
a no-op apply for 3 and 10 clusters (median of 5, with the write calls each made), a first apply
for 10 clusters, a prune of 9 of those 10 clusters (`--prune --removed-cluster`: its alarms' last look
before DeleteAlarms), and a first apply of 3 clusters in one Region against the same 3 clusters spread
over three Regions (Regions are published at once, each under its own pacing).

Grafana and CloudWatch together (in-process, needs the reference data for the Grafana test
server): a first push + apply of 3 clusters, then a second run with nothing changed, against the
writes a naive apply-everything loop makes.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._reference import REFERENCE  # noqa: E402
from benchmarks._timing import RUNS, SMOKE, record  # noqa: E402
from generator.clients.cloudwatch import WRITES as WRITE_APIS  # noqa: E402
from tests.support.fault_proxy import FaultProxy  # noqa: E402
from tests.support.moto_server import FAKE_CREDENTIALS, MotoServer  # noqa: E402

GPUDASH = [str(Path(sys.executable).parent / "gpudash")]
if SMOKE:  # the suite's smoke run (tests/integration/test_benchmarks.py) waits on no real pacing: gpudash's pacing and
    # deadline on a clock that advances without sleeping (tests/support/standins.py), in-process runs on one too
    from generator.clients import deadline  # noqa: E402
    from tests.support.clock import FakeClock  # noqa: E402

    GPUDASH = [sys.executable, "-m", "tests.support.standins", "gpudash"]
    deadline.CLOCK = FakeClock()
SPEC = REFERENCE / "grafana" / "grafana-http-api.openapi.json"
FLEETS = (1,) if SMOKE else (3, 10)  # clusters of the no-op applies; the first apply is timed for the last
SPREAD = 2 if SMOKE else 3  # clusters of the 1 Region / one Region each comparison
NO_OP_SECONDS = {3: 1.5, 10: 4}  # issue 13's targets for a no-op apply, whole process
# At the smallest size (GPUDASH_BENCH_SMOKE=1) one alarm rule instead of the bundled set: PutMetricAlarm's real
# pacing (3 a second) would hold each first apply for seconds.
ONE_ALARM = """
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    return [Alarm("temp-high", "GPU hot", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), ">", 90))]
"""


def _settings(folder: Path, name: str, regions: list[str]) -> Path:
    path = folder / f"{name}.yaml"
    definitions = ""
    if SMOKE:
        (folder / "alarms").mkdir(exist_ok=True)
        (folder / "alarms" / "one.py").write_text(ONE_ALARM)
        definitions = "definitions:\n  alarms: [alarms]\n"
    path.write_text(definitions + "project: bench\nclusters:\n" + "".join(
        f"  - {{name: c{i}, region: {region}, prometheus_label: c{i}}}\n" for i, region in enumerate(regions)))
    return path


def _apply(settings: Path, proxy: FaultProxy, *flags: str) -> tuple[float, int, dict]:
    """One whole `gpudash apply` process: (seconds, write calls, its JSON report)."""
    env = {**os.environ, **FAKE_CREDENTIALS, "AWS_ENDPOINT_URL": proxy.url, "AWS_DEFAULT_REGION": "us-east-1"}
    if SMOKE:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    with proxy.lock:
        proxy.operations.clear()
    start = time.perf_counter()
    result = subprocess.run([*GPUDASH, "apply", "--skip-verify", "--config", str(settings), "--output", "json",
                             *flags],
                            capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"gpudash apply failed ({result.returncode}): {result.stderr.strip()}")
    return seconds, sum(op in WRITE_APIS for op in proxy.operations), json.loads(result.stdout)


def _prune(scratch: Path, proxy: FaultProxy, clusters: int) -> None:
    """`clusters` clusters published in one Region: a prune of all but the first (every one of their alarms read
    again just before its DeleteAlarms call), as a whole process; the objects deleted, the calls made, the time."""
    flags = [flag for i in range(1, clusters) for flag in ("--removed-cluster", f"c{i}")]
    seconds, writes, report = _apply(_settings(scratch, "pruned", ["us-east-1"]), proxy, "--prune",
                                     "--allow-mass-prune", *flags)
    deleted = sum(change["action"] == "delete" for change in report["changes"])
    print(f"{f'prune of {clusters - 1} of {clusters} clusters (1 Region)':52} {deleted:8d} {writes:7d} {seconds:7.2f}s")


def cloudwatch_figures(scratch: Path) -> None:
    pacing = "pacing on a clock that does not sleep" if SMOKE else "real pacing"
    print(f"CloudWatch, whole `gpudash apply` processes against moto ({pacing}):")
    print(f"{'run':52} {'objects':>8} {'writes':>7} {'time':>8}")
    with MotoServer() as moto, FaultProxy(moto.url) as proxy:
        for clusters in FLEETS:
            moto.reset()
            settings = _settings(scratch, f"fleet{clusters}", ["us-east-1"] * clusters)
            first, writes, report = _apply(settings, proxy)
            objects = len(report["changes"])
            if clusters == FLEETS[-1]:
                print(f"{f'first apply, {clusters} clusters (1 Region)':52} {objects:8d} {writes:7d} {first:7.2f}s")
                record(f"first `apply`, {clusters} clusters ({objects} objects, 1 Region)",
                       f"{first:.2f} s, {writes} writes", "held by the quotas' pacing (PutMetricAlarm 3 a second)")
            runs = [_apply(settings, proxy) for _ in range(RUNS)]
            median = statistics.median(seconds for seconds, _, _ in runs)
            most = max(w for _, w, _ in runs)
            print(f"{f'no-op apply, {clusters} clusters (median of {RUNS})':52} {objects:8d} {most:7d} {median:7.2f}s")
            limit = NO_OP_SECONDS.get(clusters)
            record(f"no-op `apply`, {clusters} clusters ({objects} objects)", f"{median:.2f} s, {most} writes",
                   f"≤ {limit} s, 0 writes" if limit else "0 writes", (limit is None or median <= limit) and most == 0)
            if clusters == FLEETS[-1] > 1:
                _prune(scratch, proxy, clusters)
        spread = {}
        for label, regions in (("1 Region", ["us-east-1"] * SPREAD),
                               (f"{SPREAD} Regions at once", ["us-east-1", "eu-west-1", "ap-southeast-2"][:SPREAD])):
            moto.reset()
            seconds, writes, report = _apply(_settings(scratch, label.split()[0], regions), proxy)
            spread[label] = seconds
            print(f"{f'first apply, {SPREAD} clusters in {label}':52} {len(report['changes']):8d} {writes:7d} "
                  f"{seconds:7.2f}s")
            if FLEETS[-1] == 1 and label == "1 Region":  # the smallest size: the prune from here
                _prune(scratch, proxy, SPREAD)
        alone, together = spread["1 Region"], spread[f"{SPREAD} Regions at once"]
        record(f"first `apply`, {SPREAD} clusters in {SPREAD} Regions at once", f"{together:.2f} s",
               f"the largest Region's time, not the sum: ≤ half of {SPREAD} clusters in 1 Region, {alone:.2f} s",
               together <= alone / 2)


def together_figures(scratch: Path) -> None:
    if not SPEC.exists():
        print(f"skipped the Grafana + CloudWatch figures: reference data not found ({SPEC}); "
              f"set GPUDASH_REFERENCE to the folder that holds it")
        return
    from generator.artifacts import build
    from generator.project import load_project
    from generator.desired import desired_from
    from generator.targets import cloudwatch_sync, grafana_sync
    from generator.clients.cloudwatch import CloudWatch
    from generator.clients.grafana import GrafanaClient
    from tests.support.grafana_server import ADMIN, GrafanaTestServer

    project = load_project(_settings(scratch, "together", ["us-east-1"] * FLEETS[0]))
    desired = desired_from(build(project))
    naive = 1 + len(desired.grafana) + len(desired.cloudwatch_dashboards) + len(desired.alarms)
    print(f"\nGrafana + CloudWatch in-process, {FLEETS[0]} clusters: {len(desired.grafana)} Grafana dashboards + "
          f"folder, {len(desired.cloudwatch_dashboards)} CloudWatch dashboards, {len(desired.alarms)} alarms")
    print(f"naive apply-everything loop: {naive} writes on every run")
    with GrafanaTestServer(SPEC) as grafana, MotoServer() as moto:
        moto.reset()  # moto keeps its state per process: start from an empty account
        for run in ("first run", "second run (no changes)"):
            start = time.perf_counter()
            client = GrafanaClient(grafana.url, token=ADMIN)
            grafana_writes = len(grafana.writes())
            changes = grafana_sync.plan(client, desired.grafana, desired.folder,
                                        uid_prefix=project.settings.grafana.uid_prefix)
            grafana_sync.push(client, changes, desired.grafana, desired.folder, "", force=False, prune=False,
                              dry_run=False, uid_prefix=desired.grafana_uid_prefix,
                              publisher=(desired.project, desired.clusters))
            cloudwatch = CloudWatch(endpoint_url=moto.url)
            changes = cloudwatch_sync.plan(cloudwatch, desired)
            cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                  force=False, prune=False, dry_run=False)
            writes = (len(grafana.writes()) - grafana_writes) + cloudwatch.pacer.writes(WRITE_APIS)
            reads = sum(client.calls.values()) - client.calls.get("POST", 0) + sum(
                n for api, n in cloudwatch.pacer.calls.items() if api not in WRITE_APIS)
            print(f"{run:26} {writes:4d} writes, {reads:4d} reads, {time.perf_counter() - start:6.2f} s")


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        cloudwatch_figures(Path(scratch))
        together_figures(Path(scratch))


if __name__ == "__main__":
    main()

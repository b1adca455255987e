"""Benchmark: publishing 3 clusters' artifacts, twice.

A first push (Grafana API test server) and apply (moto's CloudWatch server), then a
second run with nothing changed: prints the write calls and wall time of each, and the
writes a naive apply-everything loop would make. The second run's floor is 0 writes.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.artifacts import build  # noqa: E402
from generator.project import load_project  # noqa: E402
from generator.publish import desired_from  # noqa: E402
from generator.targets import cloudwatch_sync, grafana_sync  # noqa: E402
from generator.targets.grafana_api import GrafanaClient  # noqa: E402
from tests.support.grafana_server import ADMIN, GrafanaTestServer  # noqa: E402
from tests.support.moto_server import MotoServer  # noqa: E402
from benchmarks._reference import reference_or_skip  # noqa: E402

SPEC = Path(os.environ.get("GPUDASH_REFERENCE", ROOT.parent / "shared" / "reference")) / "grafana" / \
    "grafana-http-api.openapi.json"
WRITE_APIS = ("PutDashboard", "PutMetricAlarm", "DeleteAlarms", "TagResource")


def main() -> None:
    reference_or_skip("benchmarks/publish.py", "grafana/grafana-http-api.openapi.json")
    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "gpudash.yaml"
        config.write_text("clusters:\n" + "".join(
            f"  - {{name: c{i}, region: us-east-1, prometheus_label: c{i}}}\n" for i in range(3)))
        project = load_project(config)
        desired = desired_from(build(project), project.settings)
        naive = 1 + len(desired.grafana) + len(desired.cloudwatch_dashboards) + len(desired.alarms)
        print(f"objects: {len(desired.grafana)} Grafana dashboards + folder, {len(desired.cloudwatch_dashboards)} "
              f"CloudWatch dashboards, {len(desired.alarms)} alarms")
        print(f"naive apply-everything loop: {naive} writes on every run")
        with GrafanaTestServer(SPEC) as grafana, MotoServer() as moto:
            for run in ("first run", "second run (no changes)"):
                start = time.perf_counter()
                client = GrafanaClient(grafana.url, token=ADMIN)
                grafana_writes = len(grafana.writes())
                changes = grafana_sync.plan(client, desired.grafana, desired.folder,
                                            uid_prefix=project.settings.grafana["uid_prefix"])
                grafana_sync.push(client, changes, desired.grafana, desired.folder, "", force=False, prune=False,
                                  dry_run=False)
                cloudwatch = cloudwatch_sync.CloudWatch(endpoint_url=moto.url)
                changes = cloudwatch_sync.plan(cloudwatch, desired)
                cloudwatch_sync.apply(cloudwatch, changes, desired.cloudwatch_dashboards, desired.alarms,
                                      force=False, prune=False, dry_run=False)
                writes = (len(grafana.writes()) - grafana_writes) + sum(
                    cloudwatch.pacer.calls.get(api, 0) for api in WRITE_APIS)
                reads = sum(client.calls.values()) - client.calls.get("POST", 0) + sum(
                    n for api, n in cloudwatch.pacer.calls.items() if api not in WRITE_APIS)
                print(f"{run:26} {writes:4d} writes, {reads:4d} reads, {time.perf_counter() - start:6.2f} s")


if __name__ == "__main__":
    main()

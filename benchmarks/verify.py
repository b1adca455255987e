"""Benchmark: wall time of a full `gpudash verify` (all four groups) against the local stack:
a Kubernetes API test server, a real Prometheus scraping a replay exporter, moto's CloudWatch."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator import verify  # noqa: E402
from generator.artifacts import feed_files  # noqa: E402
from generator.project import load_project  # noqa: E402
from generator.render.scrape import for_file_sd, scrape_job  # noqa: E402
from tests.support.kube_server import KubeCluster, KubeTestServer  # noqa: E402
from tests.support.moto_server import MotoServer  # noqa: E402
from tests.support.prometheus_server import Prometheus  # noqa: E402
from tests.support.replay_exporter import ReplayExporter  # noqa: E402
from benchmarks._reference import reference_or_skip  # noqa: E402

REFERENCE = Path(os.environ.get("GPUDASH_REFERENCE", ROOT.parent / "shared" / "reference"))


def main() -> None:
    reference_or_skip("benchmarks/verify.py", "exporter/blog-a10g-k8s.prom")
    project = load_project()
    payload = (REFERENCE / "exporter" / "blog-a10g-k8s.prom").read_text()
    with tempfile.TemporaryDirectory() as scratch, ReplayExporter(payload) as exporter, MotoServer() as moto:
        work = Path(scratch)
        targets = work / "targets.json"
        targets.write_text(json.dumps([{"targets": [exporter.address], "labels": {
            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
            "__meta_kubernetes_pod_container_port_number": "9400"}}]))
        job = {**for_file_sd(scrape_job(project.settings), [str(targets)]), "scrape_interval": "1s",
               "scrape_timeout": "1s"}
        cluster = KubeCluster(REFERENCE)
        cluster.metrics_payload = payload
        for document in yaml.safe_load_all(feed_files(project)["k8s/cwagent-prometheus-config.yaml"]):
            cluster.configmap(document["metadata"]["namespace"], document["metadata"]["name"], document["data"])
        with Prometheus(work, {"global": {"scrape_interval": "1s"}, "scrape_configs": [job]}) as prometheus, \
                KubeTestServer(cluster) as kube:
            prometheus.wait_for("DCGM_FI_DEV_GPU_UTIL")
            os.environ["KUBECONFIG"] = str(kube.kubeconfig(work / "kubeconfig"))
            options = verify.Options(prometheus_url=prometheus.url, endpoint_url=moto.url)
            samples = []
            for _ in range(5):
                start = time.perf_counter()
                checks = verify.run(project, options)
                samples.append(time.perf_counter() - start)
            samples.sort()
            print(f"gpudash verify, 4 groups, {len(checks)} checks: median {samples[2]:.3f} s, "
                  f"max {samples[-1]:.3f} s (5 runs)")


if __name__ == "__main__":
    main()

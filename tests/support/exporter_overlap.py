"""Two exporter pods serving one GPU at once (a DaemonSet rollout with maxSurge), as the CloudWatch agent publishes
them: the old and the new pod's pages and scrapes, the datapoints the agent publishes of them, and the by-pod energy
widget's values (tests/unit/test_cloudwatch_exporter_overlap.py tells the story)."""

from __future__ import annotations

import functools
import json
import math

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import discovered


AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
NODE = "ip-10-0-1-1"
END = 1800
WATTS = 200.0
ENERGY_SINCE_BOOT = 5.0e10  # mJ: DCGM's energy counts since the driver loaded
REPLAYS_SINCE_BOOT = 10_000  # a link that replayed in the past
TRUE_RATE = {t: WATTS * 1000 for t in range(0, END, 300)}  # mW in every 5-minute period


def energy_at(t: float) -> float:
    return ENERGY_SINCE_BOOT + WATTS * 1000 * t


def replays_at(t: float) -> int:
    return REPLAYS_SINCE_BOOT + math.floor(0.1 * t)  # 30 per 5 minutes: under the alarm's 50


def revision_target(job: dict, pod: str, address: str, revision: str, generation: str | None = None) -> dict:
    """An exporter pod as Kubernetes SD meets it: its DaemonSet's revision hash, and its template generation if
    given."""
    generated = {"__meta_kubernetes_pod_label_pod_template_generation": generation} if generation else {}
    return discovered(job, {"__address__": f"{address}:9400", "__meta_kubernetes_namespace": "gpu-operator",
                            "__meta_kubernetes_pod_name": pod, "__meta_kubernetes_pod_node_name": NODE,
                            "__meta_kubernetes_pod_container_port_number": "9400",
                            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
                            "__meta_kubernetes_pod_controller_kind": "DaemonSet",
                            "__meta_kubernetes_pod_label_controller_revision_hash": revision, **generated})


def exporter_page(host_label: str, host: str, taken: float, remapped_at: float = math.inf) -> str:
    """The exporter's page read at `taken` s: the GPU's energy, its link's replays, and its uncorrectable remapped
    rows (none, one from `remapped_at` s)."""
    labels = (f'gpu="0",UUID="GPU-0",device="nvidia0",modelName="NVIDIA A10G",{host_label}="{host}",'
              'pod="train-0",namespace="ml",container="main"')
    return ("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
            f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {energy_at(taken):.0f}\n"
            "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n"
            f"DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{labels}}} {replays_at(taken)}\n"
            "# TYPE DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS counter\n"
            f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{labels}}} {int(taken >= remapped_at)}\n"
            "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
            f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} 60\n")


def scrapes(old_until: int, new_from: int) -> list[tuple[str, float, float]]:
    """A node's exporter scrapes, in scrape order, as (exporter, scraped at, its reading taken at) in seconds: the
    old exporter pod ("old") scraped on the half minute until `old_until`, reading DCGM 1 s before; the new one
    ("new") 10 s past each half minute from `new_from`, its reading taken at 12 s past each half minute."""
    out = []
    for k in range(-2, END // 30):
        t = 30.0 * k
        if t < old_until:
            out.append(("old", t, t - 1))
        if t >= new_from:
            scraped = t + 10
            out.append(("new", scraped, math.floor((scraped - 12) / 30) * 30 + 12))
    return sorted(out, key=lambda s: s[1])


@functools.cache
def overlap_build(pipeline: str):
    config = None
    if pipeline == "classic":
        import tempfile
        from pathlib import Path

        config = Path(tempfile.mkdtemp()) / "gpudash.yaml"
        config.write_text("agent:\n  pipeline: classic\n")
    return encode(build(load_project(config)))


def published_points(pipeline: str, old_until: int, new_from: int, new_revision: str = "7c9d6f5b48",
               new_style: bool = True, remapped_at: float = math.inf):
    """The datapoints the agent publishes: the old exporter pod (revision 5d8f7c9b6d, writing Hostname) and the new one
    (its own pod name and address, `new_revision`; `new_style`: it writes hostname) scraped as `scrapes` says."""
    files = overlap_build(pipeline)
    config, job = agent_config(files[AGENT_FILE])
    targets = {"old": revision_target(job, "nvidia-dcgm-exporter-old", "10.0.1.10", "5d8f7c9b6d"),
               "new": revision_target(job, "nvidia-dcgm-exporter-new", "10.0.1.11", new_revision)}
    hosts = {"old": ("Hostname", "nvidia-dcgm-exporter-old"),
             "new": ("hostname", NODE) if new_style else ("Hostname", "nvidia-dcgm-exporter-new")}
    return files, Agent(config, job).run([Scrape(scraped, exporter_page(*hosts[who], taken, remapped_at), targets[who])
                                          for who, scraped, taken in scrapes(old_until, new_from)])


def energy_rate_widget(files, points) -> dict:
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"])["DashboardBody"])
    (widget,) = [w["properties"] for w in body["widgets"]
                 if w["type"] == "metric" and w["properties"]["title"] == "Energy use rate of each pod's GPUs"]
    return cloudwatch_eval.widget(widget, points, 0, END)

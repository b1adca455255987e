"""A crafted GPU fleet: exporter payloads per node and scrape, and the truth they stand for.

Two nodes, six GPUs: a pod holding two GPUs, the same pod name in another namespace, a
one-GPU pod, and two GPUs no pod holds (their series carry no pod labels, as the exporter
writes them). Values vary by GPU and by scrape; counters count up. `truth()` computes
what a query's title means straight from these values (per GPU, per period), without
CloudWatch, the agent or the generator.
"""

from __future__ import annotations

import copy
import functools
import re
from dataclasses import dataclass
from statistics import mean

from tests.support.cloudwatch_agent import Scrape, _relabeled

STEP = 30  # seconds between scrapes (the default scrape interval)
EXPORTER_NAMESPACE = "gpu-operator"


@dataclass(frozen=True)
class Gpu:
    node: str
    index: int
    namespace: str | None = None
    pod: str | None = None

    @property
    def held(self) -> bool:
        return self.pod is not None


FLEET = (
    Gpu("ip-10-0-1-1", 0, "ml", "train-0"),
    Gpu("ip-10-0-1-1", 1, "ml", "train-0"),
    Gpu("ip-10-0-1-1", 2, "research", "train-0"),  # same pod name, another namespace
    Gpu("ip-10-0-1-1", 3),  # idle
    Gpu("ip-10-0-1-2", 0),  # idle, and the one with the XID error and the PCIe trouble
    Gpu("ip-10-0-1-2", 1, "ml", "infer-1"),  # allocated but idle
)


def value(metric: str, gpu: Gpu, k: int, kind: str) -> float:
    """The exporter's reading of `metric` on `gpu` at scrape k (counters are running totals)."""
    i = [(g.node, g.index) for g in FLEET].index((gpu.node, gpu.index))
    if metric == "DCGM_FI_DEV_GPU_UTIL":
        return 2.0 if gpu.pod == "infer-1" else float(20 + (7 * i + 3 * k) % 70)
    if metric == "DCGM_FI_DEV_POWER_USAGE":
        return 100.0 + 20 * i + (k % 5) * 3.5
    if metric == "DCGM_FI_DEV_GPU_TEMP":
        return 50.0 + 5 * i + k % 3
    if metric == "DCGM_FI_DEV_FB_USED":
        return 1000.0 * (i + 1) + 10 * (k % 7)
    if metric == "DCGM_FI_DEV_FB_FREE":
        return 24000.0 - value("DCGM_FI_DEV_FB_USED", gpu, k, kind) - (23000 if gpu.pod == "infer-1" else 0)
    if metric == "DCGM_FI_DEV_XID_ERRORS":
        return 79.0 if (i == 4 and k >= 40) else 0.0
    if metric == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER":
        return float(k * (11 if i == 4 else 4))  # 110 vs 40 replays per 5 minutes
    if metric == "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS":
        return 1.0 if (i == 3 and k >= 50) else 0.0
    if metric == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":
        return float(k * STEP * 1000 * (150 + 10 * i))
    if kind == "counter":
        return float(k * (i + 1))
    return float(1 + i + (k % 4) * 0.25)


_EC2_NAME = re.compile(r"ip-(\d+)-(\d+)-(\d+)-(\d+)\.")


def node_tag(node: str) -> tuple[str, str]:
    """The address (no port) of `node`'s exporter pod and its pod name's suffix: an EC2 node name gives its own IP
    (ip-10-0-3-7.ec2.internal: 10.0.3.7, suffix 3x7), so the nodes of a fleet named so never share a target;
    a short name (n1, gpu-node-a) its last character, as the stories written for those names expect."""
    ec2 = _EC2_NAME.match(node)
    if ec2:
        return ".".join(ec2.groups()), f"{ec2[3]}x{ec2[4]}"
    return f"10.0.1.{node[-1]}", node[-1]


@functools.lru_cache(maxsize=8192)
def payload(node: str, k: int, catalog, gpus=FLEET) -> str:
    """The /metrics text one node's exporter serves at scrape k, labelled as the exporter does (a text depends
    on these alone: stories that replay the same minutes read it once)."""
    lines = []
    for metric in catalog.series():
        on_node = [g for g in gpus if g.node == node]
        if not on_node:
            continue
        lines += [f"# HELP {metric.name} {metric.help}", f"# TYPE {metric.name} {metric.exported_kind}"]
        for gpu in on_node:
            labels = {"gpu": str(gpu.index), "UUID": f"GPU-{node}-{gpu.index}", "device": f"nvidia{gpu.index}",
                      "modelName": "NVIDIA A10G", "Hostname": f"nvidia-dcgm-exporter-{node_tag(node)[1]}",
                      "DCGM_FI_DRIVER_VERSION": "535.104.05"}
            if gpu.held:
                labels.update(container="main", namespace=gpu.namespace, pod=gpu.pod)
            text = ",".join(f'{key}="{val}"' for key, val in labels.items())
            lines.append(f"{metric.name}{{{text}}} {value(metric.name, gpu, k, metric.kind):g}")
    return "\n".join(lines) + "\n"


def _relabel(rules: list[dict], labels: dict[str, str]) -> dict[str, str] | None:
    """Prometheus target relabelling (None: the target is dropped), as the agent model relabels
    (cloudwatch_agent._relabeled: Go's anchored regexes, $n and ${n} as Go expands them)."""
    return _relabeled(rules, labels)


def target_labels(job: dict, node: str) -> dict[str, str]:
    """The labels the generated scrape job gives an exporter pod on `node` (as Kubernetes SD would meet it): a
    DaemonSet's pod, with its revision's controller-revision-hash (one revision on every node)."""
    address, suffix = node_tag(node)
    meta = {"__address__": f"{address}:9400", "__meta_kubernetes_namespace": EXPORTER_NAMESPACE,
            "__meta_kubernetes_pod_name": f"nvidia-dcgm-exporter-{suffix}",
            "__meta_kubernetes_pod_node_name": node, "__meta_kubernetes_pod_container_port_number": "9400",
            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
            "__meta_kubernetes_pod_controller_kind": "DaemonSet",
            "__meta_kubernetes_pod_label_controller_revision_hash": "5d8f7c9b6d",
            "__meta_kubernetes_pod_label_app_kubernetes_io_name": "dcgm-exporter"}
    return discovered(job, meta)


def discovered(job: dict, meta: dict[str, str]) -> dict[str, str]:
    """The labels `job` gives a target Kubernetes SD meets with `meta` (asserting the job keeps it). A story builds
    a Scrape for every node at every step with the same job: each (job, target) is relabelled once, and found
    again only while the job is the same object, equal to a copy taken then (a job changed since is relabelled
    anew); every call gets its own dict."""
    key = (id(job), tuple(meta.items()))
    known = _DISCOVERED.get(key)
    if known is not None and known[0] is job and known[1] == job:
        return dict(known[2])
    labels = _relabel(job.get("relabel_configs", []), meta)
    assert labels is not None, f"the scrape job {job['job_name']} drops the target {meta['__address__']}"
    result = {k: v for k, v in labels.items() if not k.startswith("__")}
    result.setdefault("job", job["job_name"])
    result.setdefault("instance", meta["__address__"])
    if len(_DISCOVERED) > 4096:
        _DISCOVERED.clear()
    _DISCOVERED[key] = (job, copy.deepcopy(job), dict(result))
    return result


_DISCOVERED: dict[tuple, tuple[dict, dict, dict]] = {}  # (id(job), meta) -> (the job, a copy of it, its labels)


def stored_series(catalog, stories: dict, fields: tuple[str, ...], steps: int) -> list[dict[str, str]]:
    """Several clusters' series of `fields` as one Prometheus stores them (promtool's input_series, scrape k at
    k * STEP), each with its cluster, node and target: `stories` maps a cluster to what it makes of a payload."""
    values: dict[str, list[str]] = {}
    nodes = sorted({g.node for g in FLEET})
    for cluster, story in stories.items():
        for node in nodes:
            target = f'cluster="{cluster}",node="{node}",instance="{node_tag(node)[0]}:9400",job="dcgm-exporter"'
            for k in range(steps):
                for line in story(payload(node, k, catalog)).splitlines():
                    if not line.startswith(fields):
                        continue
                    series, value = line.rsplit(" ", 1)
                    values.setdefault(f"{series[:-1]},{target}}}", ["_"] * steps)[k] = value
    return [{"series": series, "values": " ".join(readings)} for series, readings in values.items()]


def scrapes(job: dict, catalog, first: int, last: int, gpus=FLEET) -> list[Scrape]:
    """Every node scraped at k = first..last (t = k * STEP)."""
    nodes = sorted({g.node for g in gpus})
    return [Scrape(k * STEP, payload(node, k, catalog, gpus), target_labels(job, node))
            for k in range(first, last + 1) for node in nodes]


# --- truth ------------------------------------------------------------------------------

def _series_label(query, gpu: Gpu) -> str | None:
    keys = [k for k in query.by if k != "cluster"]
    if not keys:
        return ""
    if "pod" in keys:
        if not gpu.held:
            return None  # per-pod views show pods, and a GPU no pod holds is no pod
        return f"Pod {gpu.namespace}/{gpu.pod}" + (f" GPU {gpu.index}" if "gpu" in keys else "")
    if keys == ["node", "gpu"]:
        return f"{gpu.node} GPU {gpu.index}"
    if keys == ["node"]:
        return gpu.node
    if keys == ["gpu"]:
        return str(gpu.index)
    raise AssertionError(f"no truth for grouping {keys}")


def truth(query, metric, start: int, end: int, period: int, gpus=FLEET, every: int = STEP) -> dict[str, dict[int, float]]:
    """{line: {period start: value}}: the query's meaning, per GPU first, then across the group's GPUs.
    `every`: seconds between the readings a collector takes (a multiple of STEP)."""
    lines: dict[str, dict[int, list[float]]] = {}
    for bucket in range(start, end, period):
        ks = [k for k in range(bucket // STEP, (bucket + period) // STEP) if k * STEP % every == 0]
        for gpu in gpus:
            label = _series_label(query, gpu)
            if label is None:
                continue
            readings = [value(metric.name, gpu, k, metric.kind) for k in ks]
            if metric.is_counter:
                # each reading's growth since the collector's reading before it (`every` seconds earlier)
                back = every // STEP
                deltas = [value(metric.name, gpu, k, metric.kind) - value(metric.name, gpu, k - back, metric.kind)
                          for k in ks]
                per_gpu = sum(deltas) if query.as_increase else \
                    sum(deltas) / (len(deltas) * every) * metric.unit.rate_scale
                low = high = per_gpu
            else:
                per_gpu, low, high = mean(readings), min(readings), max(readings)
            lines.setdefault(label, {}).setdefault(bucket, []).append((per_gpu, low, high))
    result = {}
    for label, buckets in lines.items():
        result[label] = {}
        for bucket, per_gpu in buckets.items():
            means = [m for m, _, _ in per_gpu]
            result[label][bucket] = {"avg": mean(means), "sum": sum(means), "count": float(len(means)),
                                     "max": max(h for _, _, h in per_gpu),
                                     "min": min(low for _, low, _ in per_gpu)}[query.aggregation]
    return result


def exporter_targets(job: dict, nodes: int, subnet: int = 1,
                     pod: str = "nvidia-dcgm-exporter") -> dict[int, dict[str, str]]:
    """The labels the agent's scrape job gives each node's exporter pod."""
    return {n: discovered(job, {"__address__": f"10.{subnet}.{n // 200}.{n % 200}:9400",
                                "__meta_kubernetes_namespace": "gpu-operator",
                                "__meta_kubernetes_pod_name": f"{pod}-{n}",
                                "__meta_kubernetes_pod_node_name": f"node-{n}",
                                "__meta_kubernetes_pod_container_port_number": "9400",
                                "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter"})
            for n in range(nodes)}

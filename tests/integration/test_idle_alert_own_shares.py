"""The idle alert (gpu-idle) with exporter.virtual_gpus on, as a scraping Prometheus stores a 4.5.3+ exporter's
per-process copies (tests/support/virtual_gpus.py's shape): each GPU pods time-slice written once as the device
(no pod) and once per pod holding it, the pod's own share of the utilisation, with `pod_uid` and `vgpu`; UUIDs of
NVIDIA's form, as NVML gives them. One node, scraped every 30 s for an hour: GPU 0 time-sliced by ts-a (no process:
0 %) and ts-b (60 %, the device 60 %); GPU 1 by ts-a and ts-c (both 1 %, the device 1 %); GPU 2 by pod `train` in
namespace team-x (2 %) and GPU 3 by a pod of the same name in team-y (70 %).

The alert fires for each pod idle on a GPU it holds: ts-a on GPU 0 and GPU 1, ts-c on GPU 1, team-x's train on GPU 2;
never for ts-b (busy on a GPU another pod idles on) nor team-y's train."""

from __future__ import annotations

import pytest

from tests.support.counter_rollout import _uuid
from tests.support.projects import bundled_project
from tests.support.prometheus_server import written_fixture

SPAN, STEP = 3600, 30
UTIL = "DCGM_FI_DEV_GPU_UTIL"
# (index, GPU's name for its UUID, device's reading, ((namespace, pod, own share), ...))
GPUS = ((0, "T", 60, (("ml", "ts-a", 0), ("ml", "ts-b", 60))),
        (1, "V", 1, (("ml", "ts-a", 1), ("ml", "ts-c", 1))),
        (2, "X", 2, (("team-x", "train", 2),)),
        (3, "Y", 70, (("team-y", "train", 70),)))
IDLE = {("ml", "ts-a", "0"), ("ml", "ts-a", "1"), ("ml", "ts-c", "1"), ("team-x", "train", "2")}


def _series(start: int) -> dict[tuple, list[tuple[float, str]]]:
    series: dict[tuple, list[tuple[float, str]]] = {}
    for index, name, device, holders in GPUS:
        common = {"__name__": UTIL, "gpu": str(index), "UUID": _uuid(name), "device": f"nvidia{index}",
                  "modelName": "NVIDIA A10G", "Hostname": "n1", "instance": "10.0.1.5:9400", "job": "gpu-metrics"}
        copies = [(common, device)] if len(holders) > 1 else []  # a time-sliced GPU's device-level series
        copies += [({**common, "namespace": namespace, "pod": pod, "container": "main", "pod_uid": f"uid-{pod}",
                     **({"vgpu": str(k)} if len(holders) > 1 else {})}, share)
                   for k, (namespace, pod, share) in enumerate(holders)]
        for labels, value in copies:
            series[tuple(sorted(labels.items()))] = [(start + t, str(value)) for t in range(0, SPAN + 1, STEP)]
    return series


shares = written_fixture("idle-own-shares", _series, SPAN, STEP)


def test_the_idle_alert_fires_once_per_pod_idle_on_a_gpu_it_holds(shares):
    """The alert as the rules file holds it, every 60 s of the story's last 15 minutes (its 8 periods of 5 minutes
    all within the story): IDLE, each once. Before, the pods' own shares were keyed by their GPU's index at each step
    while the naming (promql.pod_indexes) keyed each GPU by its UUID: the alert read nothing at all (measured on a real
    Prometheus: no pod alerted at any instant, ts-a's 0 % on GPU 0 included)."""
    from generator.render.alarms import prometheus_rules

    prometheus, start = shares
    project = bundled_project("exporter:\n  virtual_gpus: true\n")
    (alarm,) = [alarm for alarm in project.alarms if alarm.id == "gpu-idle"]
    (alert,) = [rule["expr"] for group in prometheus_rules((alarm,), project.catalog, project.settings)["groups"]
                for rule in group["rules"] if "alert" in rule]
    first = start + SPAN - 900
    wrong = {}
    for at, fired in prometheus.query_at(alert, first, 16, 60).items():
        named = sorted((s["metric"]["namespace"], s["metric"]["pod"], s["metric"]["gpu"]) for s in fired)
        if named != sorted(IDLE):
            wrong[int(at - start)] = named
    assert not wrong, wrong

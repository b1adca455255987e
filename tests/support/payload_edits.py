"""Exporter payloads with one series' reading changed: a pod busy, a GPU hot (the fleet of two clusters
test_fleet_pods_apart reads)."""

from __future__ import annotations

import re


def with_value(payload: str, metric: str, where: str, value: str) -> str:
    """The payload with `metric` of the series holding `where` at `value`."""
    return "\n".join(re.sub(r" \S+$", f" {value}", line) if line.startswith(metric + "{") and where in line else line
                     for line in payload.split("\n"))


def busy_payload(payload: str) -> str:
    """Cluster b's payload: ml/infer-1's utilization at 90 %."""
    return with_value(payload, "DCGM_FI_DEV_GPU_UTIL", 'pod="infer-1"', "90")


def hot_payload(payload: str) -> str:
    """Cluster a's payload: GPU 1 of its node ip-10-0-1-2 at 85 C (the node of that name in cluster b reads 75-77 C:
    EKS names a node by its private IP, and clusters in VPCs of one CIDR, eksctl's default 192.168.0.0/16 among them,
    have nodes of one name)."""
    return with_value(payload, "DCGM_FI_DEV_GPU_TEMP", 'UUID="GPU-ip-10-0-1-2-1"', "85")

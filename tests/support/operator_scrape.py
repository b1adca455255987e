"""The scrape config prometheus-operator generates for a ServiceMonitor endpoint, for a real
Prometheus without Kubernetes discovery: the same relabelings, fed by file discovery whose
targets carry the __meta_kubernetes_* labels the endpoints role gives."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

_KEYS = {"sourceLabels": "source_labels", "targetLabel": "target_label"}


def _meta_name(label: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", label)


def _relabel(rule: dict[str, Any]) -> dict[str, Any]:
    converted = {_KEYS.get(key, key): value for key, value in rule.items()}
    if "action" in converted:
        converted["action"] = converted["action"].lower()
    return converted


def scrape_config(monitor: dict[str, Any], sd_file: str, interval: str = "1s") -> dict[str, Any]:
    """The operator's job for the monitor's first endpoint (selector, standard labels, then the user's)."""
    spec = monitor["spec"]
    endpoint = spec["endpoints"][0]
    target = ["__meta_kubernetes_endpoint_address_target_kind", "__meta_kubernetes_endpoint_address_target_name"]
    rules: list[dict[str, Any]] = []
    for name, value in spec["selector"]["matchLabels"].items():
        rules.append({"action": "keep", "source_labels": [f"__meta_kubernetes_service_label_{_meta_name(name)}",
                                                          f"__meta_kubernetes_service_labelpresent_{_meta_name(name)}"],
                      "regex": f"({value});true"})
    rules += [
        {"action": "keep", "source_labels": ["__meta_kubernetes_endpoint_port_name"], "regex": endpoint["port"]},
        {"source_labels": target, "separator": ";", "regex": "Node;(.*)", "replacement": "${1}", "target_label": "node"},
        {"source_labels": target, "separator": ";", "regex": "Pod;(.*)", "replacement": "${1}", "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
        {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job", "replacement": "${1}"},
    ]
    if spec.get("jobLabel"):
        rules.append({"source_labels": [f"__meta_kubernetes_service_label_{_meta_name(spec['jobLabel'])}"],
                      "target_label": "job", "regex": "(.+)", "replacement": "${1}"})
    rules.append({"target_label": "endpoint", "replacement": endpoint["port"]})
    rules += [_relabel(rule) for rule in endpoint.get("relabelings", [])]
    metadata = monitor["metadata"]
    return {
        "job_name": f"serviceMonitor/{metadata['namespace']}/{metadata['name']}/0",
        "honor_labels": bool(endpoint.get("honorLabels", False)),
        "scrape_interval": interval,
        "metrics_path": endpoint.get("path", "/metrics"),
        "file_sd_configs": [{"files": [sd_file], "refresh_interval": "5s"}],
        "relabel_configs": rules,
        "metric_relabel_configs": [_relabel(rule) for rule in endpoint.get("metricRelabelings", [])],
    }


def endpoint_target(address: str, *, namespace: str, service: str, service_labels: dict[str, str], port: str,
                    pod: str, container: str, node: str) -> dict[str, Any]:
    """One file-discovery target shaped like the endpoints role's target for an exporter pod."""
    meta = {"__meta_kubernetes_namespace": namespace, "__meta_kubernetes_service_name": service,
            "__meta_kubernetes_endpoint_port_name": port, "__meta_kubernetes_endpoint_address_target_kind": "Pod",
            "__meta_kubernetes_endpoint_address_target_name": pod, "__meta_kubernetes_pod_name": pod,
            "__meta_kubernetes_pod_container_name": container, "__meta_kubernetes_pod_node_name": node}
    for name, value in service_labels.items():
        meta[f"__meta_kubernetes_service_label_{_meta_name(name)}"] = value
        meta[f"__meta_kubernetes_service_labelpresent_{_meta_name(name)}"] = "true"
    return {"targets": [address], "labels": meta}


def operator_monitor(reference: Path, node_relabeling: bool) -> dict:
    """The GPU operator's ServiceMonitor, with the relabeling the README recommends or without."""
    monitor = yaml.safe_load((reference / "k8s" / "gpu-operator" /
                              "assets_state-dcgm-exporter_0500_service_monitor.yaml").read_text())
    monitor["metadata"]["namespace"] = "gpu-operator"
    if node_relabeling:
        monitor["spec"]["endpoints"][0]["relabelings"] = [
            {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"}]
    return monitor

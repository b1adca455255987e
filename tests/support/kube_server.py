"""A Kubernetes API test server: real-shaped objects over HTTP, for the official client.

Objects come from ../shared/reference/k8s manifests with status filled in; a kubeconfig
points the client at this server. It serves the reads `gpudash verify` makes, and the
service proxy to an exporter's /metrics.
"""

from __future__ import annotations

import copy
import json
import re
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from tests.support.loopback import LoopbackServer

TOKEN = "kube-test-token"


def _load(path: Path, kind: str, name: str | None = None) -> dict[str, Any]:
    for document in yaml.safe_load_all(path.read_text()):
        if document and document.get("kind") == kind and (name is None or document["metadata"]["name"] == name):
            return copy.deepcopy(document)
    raise LookupError(f"{kind} {name} not in {path}")


class KubeCluster:
    """The objects of one cluster: a GPU operator exporter, GPU nodes, the CloudWatch agent."""

    def __init__(self, reference: Path, gpu_nodes=("gpu-node-a", "gpu-node-b"), namespace: str = "gpu-operator"):
        k8s = reference / "k8s"
        self.namespace = namespace
        self.nodes = [self.node(name, gpus=1) for name in gpu_nodes] + [self.node("cpu-node-1", gpus=0)]
        daemonset = _load(k8s / "gpu-operator/assets_state-dcgm-exporter_0800_daemonset.yaml", "DaemonSet")
        daemonset["metadata"]["namespace"] = namespace
        for container in daemonset["spec"]["template"]["spec"]["initContainers"] + \
                daemonset["spec"]["template"]["spec"]["containers"]:
            container["image"] = "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"
        self.daemonset = daemonset
        service = _load(k8s / "gpu-operator/assets_state-dcgm-exporter_0400_service.yaml", "Service")
        service["metadata"]["namespace"] = namespace
        self.services = {service["metadata"]["name"]: service}
        self.pods = [self.exporter_pod(node) for node in gpu_nodes]
        agent = _load(k8s / "cloudwatch-agent/prometheus-eks.yaml", "Deployment", "cwagent-prometheus")
        agent["status"] = {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 1}
        self.deployments = {("amazon-cloudwatch", "cwagent-prometheus"): agent}
        self.configmaps: dict[tuple[str, str], dict[str, Any]] = {}
        monitor = _load(k8s / "gpu-operator/assets_state-dcgm-exporter_0500_service_monitor.yaml", "ServiceMonitor")
        monitor["metadata"]["namespace"] = namespace
        self.service_monitors = [monitor]
        self.metrics_payload = ""
        self.refresh_status()

    @staticmethod
    def node(name: str, gpus: int) -> dict[str, Any]:
        capacity = {"cpu": "8", "memory": "32Gi", "pods": "110"}
        if gpus:
            capacity["nvidia.com/gpu"] = str(gpus)
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"capacity": capacity, "allocatable": capacity,
                           "conditions": [{"type": "Ready", "status": "True"}]}}

    def exporter_pod(self, node: str, ready: bool = True) -> dict[str, Any]:
        template = self.daemonset["spec"]["template"]
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"nvidia-dcgm-exporter-{node[-1]}x", "namespace": self.namespace,
                             "labels": dict(template["metadata"]["labels"])},
                "spec": {**copy.deepcopy(template["spec"]), "nodeName": node},
                "status": {"phase": "Running" if ready else "Pending",
                           "containerStatuses": [{"name": "nvidia-dcgm-exporter", "ready": ready, "restartCount": 0,
                                                  "image": "dcgm-exporter", "imageID": "", "state": {}}]}}

    def refresh_status(self) -> None:
        desired = len(self.pods)
        ready = sum(1 for p in self.pods if p["status"]["containerStatuses"][0]["ready"])
        self.daemonset["status"] = {"currentNumberScheduled": desired, "desiredNumberScheduled": desired,
                                    "numberMisscheduled": 0, "numberReady": ready, "numberAvailable": ready,
                                    "updatedNumberScheduled": desired, "observedGeneration": 1}

    def set_env(self, name: str, value: str) -> None:
        for container in self.daemonset["spec"]["template"]["spec"]["containers"]:
            for env in container.get("env", []):
                if env["name"] == name:
                    env["value"] = value

    def configmap(self, namespace: str, name: str, data: dict[str, str]) -> None:
        self.configmaps[(namespace, name)] = {"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"name": name, "namespace": namespace}, "data": data}


def _list(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": f"{kind}List", "metadata": {"resourceVersion": "1"}, "items": items}


def _matches(labels: dict[str, str], selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


class KubeTestServer(LoopbackServer):
    def __init__(self, cluster: KubeCluster):
        self.cluster = cluster
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._send(401, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                            "reason": "Unauthorized", "code": 401})
                split = urlsplit(self.path)
                status, body = server.route(unquote(split.path), parse_qs(split.query))
                self._send(status, body)

            def _send(self, status, body):
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._serve(Handler)
        self.url = f"http://{self.address}"

    def kubeconfig(self, path: Path) -> Path:
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": self.url}}],
            "users": [{"name": "test", "user": {"token": TOKEN}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}))
        return path

    def route(self, path: str, query: dict[str, list[str]]):
        c = self.cluster
        not_found = (404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})
        if path == "/api/v1/nodes":
            return 200, _list("Node", c.nodes)
        if m := re.fullmatch(r"/apis/apps/v1/namespaces/([^/]+)/daemonsets/([^/]+)", path):
            meta = c.daemonset["metadata"]
            return (200, c.daemonset) if (m.group(1), m.group(2)) == (meta["namespace"], meta["name"]) else not_found
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", path):
            selector = query.get("labelSelector", [""])[0]
            return 200, _list("Pod", [p for p in c.pods if p["metadata"]["namespace"] == m.group(1)
                                      and _matches(p["metadata"]["labels"], selector)])
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/services/([^/:]+)(?::(\d+))?/proxy/(.*)", path):
            if m.group(2) in c.services and m.group(4) == "metrics" and c.metrics_payload:
                return 200, c.metrics_payload
            return 503, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 503}
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/services/([^/]+)", path):
            service = c.services.get(m.group(2))
            return (200, service) if service and service["metadata"]["namespace"] == m.group(1) else not_found
        if m := re.fullmatch(r"/apis/apps/v1/namespaces/([^/]+)/deployments/([^/]+)", path):
            deployment = c.deployments.get((m.group(1), m.group(2)))
            return (200, deployment) if deployment else not_found
        if m := re.fullmatch(r"/apis/monitoring.coreos.com/v1/namespaces/([^/]+)/servicemonitors", path):
            return 200, {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitorList",
                         "metadata": {}, "items": [s for s in c.service_monitors
                                                   if s["metadata"]["namespace"] == m.group(1)]}
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/configmaps/([^/]+)", path):
            configmap = c.configmaps.get((m.group(1), m.group(2)))
            return (200, configmap) if configmap else not_found
        return not_found

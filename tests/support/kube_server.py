"""A Kubernetes API test server: real-shaped objects over HTTP, for the official client.

Objects come from ../shared/reference/k8s manifests with status filled in; a kubeconfig
points the client at this server. It serves the reads `gpudash verify` makes, and the
service proxy to an exporter's /metrics.
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from tests.support.loopback import LoopbackServer

TOKEN = "kube-test-token"


@lru_cache(maxsize=None)
def _documents(path: Path) -> tuple[Any, ...]:
    """A reference manifest's documents, parsed once per test process (each object is copied out)."""
    return tuple(yaml.safe_load_all(path.read_text()))


def _load(path: Path, kind: str, name: str | None = None) -> dict[str, Any]:
    for document in _documents(path):
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
        monitor["spec"]["namespaceSelector"]["matchNames"] = [namespace]  # as the operator fills it in
        self.service_monitors = [monitor]
        self.prometheus_rules: list[dict[str, Any]] = []
        # prometheus-operator's Prometheus and PrometheusAgent objects (none: no Prometheus runs through the operator)
        self.prometheuses: list[dict[str, Any]] = []
        # the Namespace objects' labels beyond kubernetes.io/metadata.name, which the API server writes on each
        self.namespace_labels: dict[str, dict[str, str]] = {}
        # RBAC of the kubeconfig's user: {resource: the namespaces it may read it in}; a resource named here is refused
        # (403, as the API server words it) at the cluster scope and in every other namespace
        self.readable_only: dict[str, tuple[str, ...]] = {}
        # resources the user may update but not create (server-side apply of an object not there is refused, 403)
        self.not_creatable: set[str] = set()
        # reads the API server fails: {path: HTTP status} (an overloaded or broken API server, a webhook timing out)
        self.failing: dict[str, int] = {}
        # reads something in front of the API server answers instead of it (an ingress or auth proxy): {path: (HTTP
        # status, the text it sends), or a function of the query giving them}
        self.fronted: dict[str, Any] = {}
        # the status the API server answers a list's continued page with (410: etcd compacted past the token since the
        # first page; 400: a token it cannot read, altered on the way), else None: the page is read
        self.continue_refused: int | None = None
        self.daemonsets: dict[tuple[str, str], dict[str, Any]] = {}  # more DaemonSets (an add-on's), by (namespace, name)
        self.metrics_payload = ""
        # kube-state-metrics as kube-prometheus-stack runs it (not an exporter pod: the DaemonSet counts those)
        self.other_pods = [self.kube_state_metrics_pod()]
        self.refresh_status()

    @staticmethod
    def node(name: str, gpus: int) -> dict[str, Any]:
        capacity = {"cpu": "8", "memory": "32Gi", "pods": "110"}
        if gpus:
            capacity["nvidia.com/gpu"] = str(gpus)
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"capacity": capacity, "allocatable": capacity,
                           "conditions": [{"type": "Ready", "status": "True"}]}}

    def share_gpus(self) -> dict[str, Any]:
        """GPU feature discovery's labels on the two GPU nodes: gpu-node-a splits its GPU by MIG's single strategy
        (7 nvidia.com/gpu, as many as its count: nothing shared), gpu-node-b time-slices its one GPU into 4 (its
        count 1). Returns gpu-node-b."""
        mig = self.node("gpu-node-a", gpus=7)
        mig["metadata"]["labels"].update({"nvidia.com/gpu.count": "7", "nvidia.com/mig.strategy": "single",
                                          "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
                                          "nvidia.com/gpu.sharing-strategy": "none"})
        sliced = self.node("gpu-node-b", gpus=4)
        sliced["metadata"]["labels"].update({"nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "4",
                                             "nvidia.com/gpu.sharing-strategy": "time-slicing"})
        self.nodes = [mig, sliced, *self.nodes[2:]]
        return sliced

    def exporter_pod(self, node: str, ready: bool = True) -> dict[str, Any]:
        template = self.daemonset["spec"]["template"]
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"nvidia-dcgm-exporter-{node[-1]}x", "namespace": self.namespace,
                             "labels": dict(template["metadata"]["labels"])},
                "spec": {**copy.deepcopy(template["spec"]), "nodeName": node},
                "status": {"phase": "Running" if ready else "Pending",
                           "containerStatuses": [{"name": "nvidia-dcgm-exporter", "ready": ready, "restartCount": 0,
                                                  "image": "dcgm-exporter", "imageID": "", "state": {}}]}}

    @staticmethod
    def kube_state_metrics_pod(namespace: str = "monitoring", ready: bool = True) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "kube-prometheus-stack-kube-state-metrics-6d9f", "namespace": namespace,
                             "labels": {"app.kubernetes.io/name": "kube-state-metrics", "release": "kube-prometheus-stack"}},
                "spec": {"nodeName": "cpu-node-1", "containers": [{
                    "name": "kube-state-metrics", "image": "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.13.0",
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]}]},
                "status": {"phase": "Running" if ready else "Pending",
                           "containerStatuses": [{"name": "kube-state-metrics", "ready": ready, "restartCount": 0,
                                                  "image": "kube-state-metrics", "imageID": "", "state": {}}]}}

    def refresh_status(self) -> None:
        """The DaemonSet's status as its controller writes it once it has observed the spec (the API server sets
        metadata.generation; a test rolling out a new spec raises it past status.observedGeneration)."""
        self.daemonset["metadata"].setdefault("generation", 1)
        desired = len(self.pods)
        ready = sum(1 for p in self.pods if p["status"]["containerStatuses"][0]["ready"])
        self.daemonset["status"] = {"currentNumberScheduled": desired, "desiredNumberScheduled": desired,
                                    "numberMisscheduled": 0, "numberReady": ready, "numberAvailable": ready,
                                    "updatedNumberScheduled": desired,
                                    "observedGeneration": self.daemonset["metadata"]["generation"]}

    @staticmethod
    def kube_prometheus_stack(release: str = "kube-prometheus-stack",
                              namespace: str = "monitoring") -> dict[str, Any]:
        """The Prometheus object kube-prometheus-stack creates with its default values
        (serviceMonitorSelectorNilUsesHelmValues: true): ServiceMonitors labelled release=<release>, in every
        namespace."""
        return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                "metadata": {"name": f"{release}-prometheus", "namespace": namespace,
                             "labels": {"app": "kube-prometheus-stack-prometheus", "release": release}},
                "spec": {"serviceMonitorSelector": {"matchLabels": {"release": release}},
                         "serviceMonitorNamespaceSelector": {}}}

    def endpoint_slices(self, namespace: str, service: str) -> list[dict[str, Any]]:
        """The EndpointSlices the EndpointSlice controller keeps for a Service with a selector: its pods' addresses,
        each with its readiness (one slice, `endpoints` null where no pod matches); none for a Service that is not
        there or selects nothing."""
        found = self.services.get(service)
        if not found or found["metadata"]["namespace"] != namespace or not found["spec"].get("selector"):
            return []
        selector = found["spec"]["selector"]
        pods = [p for p in self.pods + self.other_pods if p["metadata"]["namespace"] == namespace
                and all(p["metadata"].get("labels", {}).get(k) == v for k, v in selector.items())]
        # as the controller finds each Service port on a pod (FindPort): a number as it is, a name only where one of
        # the pod's containers names a port so; pods of different port sets go in different slices
        by_ports: dict[tuple, list[dict[str, Any]]] = {}
        for index, p in enumerate(pods):
            ports = tuple((port.get("name", ""), number) for port in found["spec"].get("ports", [])
                          if (number := _target_port(p, port)) is not None)
            by_ports.setdefault(ports, []).append(
                {"addresses": [f"10.0.1.{index + 10}"],
                 # a pod being deleted (metadata.deletionTimestamp) is not ready, whatever its containers say
                 "conditions": {"ready": _pod_ready(p) and not p["metadata"].get("deletionTimestamp"),
                                "serving": _pod_ready(p), "terminating": bool(p["metadata"].get("deletionTimestamp"))},
                 "nodeName": p["spec"].get("nodeName"),
                 "targetRef": {"kind": "Pod", "name": p["metadata"]["name"], "namespace": namespace}})
        return [{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
                 "metadata": {"name": f"{service}-x7k2{index}", "namespace": namespace,
                              "labels": {"kubernetes.io/service-name": service,
                                         "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
                 "endpoints": endpoints or None,
                 "ports": [{"name": name, "port": number, "protocol": "TCP"} for name, number in ports]}
                for index, (ports, endpoints) in enumerate(by_ports.items() or [(
                    tuple((port.get("name", ""), port.get("targetPort", port["port"]))
                          for port in found["spec"].get("ports", []) if isinstance(port.get("targetPort", 0), int)),
                    [])])]

    def set_env(self, name: str, value: str) -> None:
        for container in self.daemonset["spec"]["template"]["spec"]["containers"]:
            for env in container.get("env", []):
                if env["name"] == name:
                    env["value"] = value

    def configmap(self, namespace: str, name: str, data: dict[str, str]) -> None:
        self.configmaps[(namespace, name)] = {"apiVersion": "v1", "kind": "ConfigMap",
                                              "metadata": {"name": name, "namespace": namespace}, "data": data}

    def applied(self, document: dict[str, Any]) -> None:
        """A ConfigMap as `kubectl apply` of a file leaves it: its labels and annotations with its data."""
        self.configmaps[(document["metadata"]["namespace"], document["metadata"]["name"])] = copy.deepcopy(document)


def _target_port(pod: dict[str, Any], port: dict[str, Any]) -> int | None:
    """The pod's port a Service port reaches (targetPort: a number as it is; a name, the container port so named; unset,
    the Service port's number); None where the pod names no such port."""
    target = port.get("targetPort", port["port"])
    if isinstance(target, int):
        return target
    return next((p["containerPort"] for c in pod["spec"].get("containers", []) for p in c.get("ports", [])
                 if p.get("name") == target), None)


def _pod_ready(pod: dict[str, Any]) -> bool:
    statuses = pod.get("status", {}).get("containerStatuses") or []
    return pod["status"].get("phase") == "Running" and bool(statuses) and all(c.get("ready") for c in statuses)


# /api/v1[/namespaces/<ns>]/<resource>[/<name>] and /apis/<group>/<version>[/namespaces/<ns>]/<resource>[/<name>]
# (group, namespace, resource, name, subresource): RBAC names a subresource apart (services/proxy is not services)
_RESOURCE_PATH = re.compile(
    r"/(?:api/v1|apis/([^/]+)/[^/]+)(?:/namespaces/([^/]+))?/([^/]+)(?:/([^/]+))?(?:/([^/]+))?(?:/.*)?")


def _list(kind: str, items: list[dict[str, Any]], api_version: str = "v1") -> dict[str, Any]:
    """A built-in resource's list as the API server writes it: its items without `kind` and `apiVersion` (a typed
    list's items are encoded without their TypeMeta; a custom resource's list, unstructured, keeps them)."""
    return {"apiVersion": api_version, "kind": f"{kind}List", "metadata": {"resourceVersion": "1"},
            "items": [_untyped(item) for item in items]}


def _untyped(item: Any) -> Any:
    return {k: v for k, v in item.items() if k not in ("kind", "apiVersion")} if isinstance(item, dict) else item


def _matches(labels: dict[str, str], selector: str) -> bool:
    """Whether `labels` match a selector of `key=value` and bare `key` (the key is there) terms."""
    for term in filter(None, selector.split(",")):
        key, equals, value = term.partition("=")
        if (labels.get(key) != value) if equals else (key not in labels):
            return False
    return True


def _metadata_only(accept: str) -> bool:
    """Whether an Accept header asks for a list's metadata alone (its first type: as=PartialObjectMetadataList)."""
    first = accept.split(",")[0]
    return "as=PartialObjectMetadataList" in [part.strip() for part in first.split(";")]


def _as_metadata(body: Any) -> Any:
    """A list as the API server answers it in the PartialObjectMetadataList form: each item its metadata alone, and an
    empty list's `items` null (apiserver's asPartialObjectMetadataList appends each item to a nil slice, and the
    field has no omitempty: `"items": null`, as kubernetes-client/python#2142 met it listing pods of no match)."""
    if not (isinstance(body, dict) and str(body.get("kind", "")).endswith("List")
            and isinstance(body.get("items"), list)):
        return body
    return {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": body.get("metadata", {}),
            "items": [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": item["metadata"]}
                      for item in body["items"]] or None}


def _page(scanned: list, query: dict[str, list[str]], refused: int | None) -> tuple:
    """The part of a list's objects (`scanned`, in key order) one answer holds, as the API server pages a list asked
    with `limit`: (200, those objects, the continue token where more remain, else ''), or (status, Status) for a
    continue token it does not take. A page holds the objects its `limit` of them reads that match the selectors, so it
    may hold fewer than the limit, none at all, and still a token: the API's promise is that only the token tells that
    more remain ("Setting a limit may return fewer than the requested amount of items (up to zero items) in the event
    all requested objects are filtered out"). The token is as the API server writes one: base64 of JSON naming the
    resourceVersion and the key it starts at (here the index of the object). `refused`: KubeCluster.continue_refused."""
    import base64

    start = 0
    if token := query.get("continue", [""])[0]:
        if refused == 410:  # etcd3 store's handleCompactedErrorForPaging: a token of the next key at rv -1 (the list
            # continued at the latest resourceVersion: an inconsistent list) in the Status's metadata
            inconsistent = base64.urlsafe_b64encode(json.dumps({"v": "meta.k8s.io/v1", "rv": -1, "start": 0}).encode())
            expired = _status(410, "Expired", "The provided continue parameter is too old to display a consistent "
                              "list result. You can start a new list without the continue parameter, or use the "
                              "continue token in this response to retrieve the remainder of the results. Continuing "
                              "with the provided token results in an inconsistent list - objects that were created, "
                              "modified, or deleted between the time the first chunk was returned and now may show "
                              "up in the list.")
            return 410, {**expired, "metadata": {"continue": inconsistent.decode().rstrip("=")}}
        try:
            if refused == 400:
                raise ValueError("illegal base64 data at input byte 0")
            start = int(json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))["start"])
        except (ValueError, KeyError, TypeError) as garbled:
            return 400, _status(400, "BadRequest", f"continue key is not valid: {garbled}")
    limit = int(query.get("limit", ["0"])[0]) or len(scanned)
    end = start + limit
    more = base64.urlsafe_b64encode(json.dumps({"v": "meta.k8s.io/v1", "rv": 1, "start": end}).encode()).decode()
    return 200, scanned[start:end], more.rstrip("=") if end < len(scanned) else ""


APPLY = "application/apply-patch+yaml"
APPLIED_PATHS = (  # the objects server-side apply may write here: (path, kind)
    (r"/api/v1/namespaces/([^/]+)/configmaps/([^/]+)", "ConfigMap"),
    (r"/apis/monitoring.coreos.com/v1/namespaces/([^/]+)/servicemonitors/([^/]+)", "ServiceMonitor"),
    (r"/apis/monitoring.coreos.com/v1/namespaces/([^/]+)/prometheusrules/([^/]+)", "PrometheusRule"),
)


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    """The API server's Status for a failure (metav1.Status: its ListMeta `metadata` is written even empty)."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class KubeTestServer(LoopbackServer):
    """`tls=True` serves HTTPS with a fresh certificate, plus the discovery and OpenAPI documents
    `kubectl apply --server-side` reads (tests/support/kube_discovery.py): then real kubectl works."""

    def __init__(self, cluster: KubeCluster, tls: bool = False, reference: Path | None = None):
        self.cluster = cluster
        self.ca_data = None
        self.documents: dict[str, Any] = {}
        self.reads: list[str] = []  # the path and query of every GET answered, in order
        self.answered: list[tuple[str, int]] = []  # (the path and query, the bytes of the body) of every GET, in order
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._send(401, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                            "reason": "Unauthorized", "code": 401})
                split = urlsplit(self.path)
                server.reads.append(unquote(self.path))
                status, body = server.route(unquote(split.path), parse_qs(split.query))
                if status == 200 and _metadata_only(self.headers.get("Accept", "")):
                    body = _as_metadata(body)
                server.answered.append((unquote(self.path), self._send(status, body)))

            def do_PATCH(self):  # noqa: N802  (server-side apply, as `kubectl apply --server-side` sends it)
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._send(401, _status(401, "Unauthorized", "no valid token"))
                split = urlsplit(self.path)
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, body = server.apply(unquote(split.path), parse_qs(split.query),
                                            self.headers.get("Content-Type", ""), data)
                self._send(status, body)

            def _send(self, status, body):
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return len(data)

        self._serve(Handler)
        self.url = f"http://{self.address}"
        if tls:
            from tests.support import kube_discovery

            self.ca_data = self._serve_tls()[2]
            self.url = f"https://{self.address}"
            self.documents = kube_discovery.documents(reference)

    def kubeconfig(self, path: Path) -> Path:
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": self.url, **(
                {"certificate-authority-data": self.ca_data} if self.ca_data else {})}}],
            "users": [{"name": "test", "user": {"token": TOKEN}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}))
        return path

    def apply(self, path: str, query: dict[str, list[str]], content_type: str, data: bytes):
        """Server-side apply of a ConfigMap, ServiceMonitor or PrometheusRule (whole object, one manager)."""
        if content_type.split(";")[0].strip() != APPLY:
            return 415, _status(415, "UnsupportedMediaType", f"PATCH here takes {APPLY}")
        if not query.get("fieldManager"):
            return 422, _status(422, "Invalid", "fieldManager is required for apply patch")
        match = next(((m, kind) for pattern, kind in APPLIED_PATHS if (m := re.fullmatch(pattern, path))), None)
        if match is None:
            return 404, _status(404, "NotFound", f"{path} is not served here")
        (m, kind), namespace, name = match, match[0].group(1), match[0].group(2)
        try:
            body = yaml.safe_load(data)
        except yaml.YAMLError as exc:
            return 400, _status(400, "BadRequest", f"not YAML: {exc}")
        if not isinstance(body, dict) or body.get("kind") != kind or body.get("metadata", {}).get("name") != name:
            return 400, _status(400, "BadRequest", f"the body is not the {kind} {name}")
        if body["metadata"].get("namespace", namespace) != namespace:
            return 400, _status(400, "BadRequest", "the namespace of the provided object does not match the "
                                                   "namespace sent on the request")
        body["metadata"]["namespace"] = namespace
        c = self.cluster
        resource = {"ConfigMap": "configmaps", "ServiceMonitor": "servicemonitors"}.get(kind, "prometheusrules")
        there = (namespace, name) in c.configmaps if kind == "ConfigMap" else any(
            (o["metadata"].get("namespace"), o["metadata"]["name"]) == (namespace, name)
            for o in (c.service_monitors if kind == "ServiceMonitor" else c.prometheus_rules))
        if resource in c.not_creatable and not there:
            group = "" if kind == "ConfigMap" else "monitoring.coreos.com"
            return 403, _status(403, "Forbidden", f'{resource}{"." + group if group else ""} "{name}" is forbidden: '
                                f'User "dev" cannot create resource "{resource}" in API group "{group}" in the '
                                f'namespace "{namespace}"')
        if kind == "ConfigMap":
            created = (namespace, name) not in c.configmaps
            c.configmaps[(namespace, name)] = body
        else:
            objects = c.service_monitors if kind == "ServiceMonitor" else c.prometheus_rules
            same = [o for o in objects if (o["metadata"].get("namespace"), o["metadata"]["name"]) == (namespace, name)]
            created = not same
            objects[:] = [o for o in objects if o not in same] + [body]
        return (201 if created else 200), body

    def refused(self, path: str) -> dict[str, Any] | None:
        """The API server's 403 for a read the user's RBAC (cluster.readable_only) does not allow, else None."""
        m = _RESOURCE_PATH.fullmatch(path)
        if m is None:
            return None
        group, namespace, kind, name, subresource = m.groups()
        resource = f"{kind}/{subresource}" if name and subresource else kind
        if resource not in self.cluster.readable_only or namespace in self.cluster.readable_only[resource]:
            return None
        full = f"{kind}.{group}" if group else kind
        scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        verb = "get" if name else "list"
        target = f'{full} "{name}"' if name else full
        return _status(403, "Forbidden", f'{target} is forbidden: User "dev" cannot {verb} resource "{resource}" in API '
                       f'group "{group or ""}" {scope}')

    def route(self, path: str, query: dict[str, list[str]]):
        c = self.cluster
        not_found = (404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})
        if path in self.documents:
            return 200, self.documents[path]
        if (refusal := self.refused(path)) is not None:
            return 403, refusal
        if path in c.fronted:
            answer = c.fronted[path]
            return answer(query) if callable(answer) else answer
        if status := c.failing.get(path):
            return status, _status(status, "InternalError", "an error on the server has prevented the request from "
                                   "succeeding")
        if path == "/api/v1/nodes":
            return 200, _list("Node", c.nodes)
        if m := re.fullmatch(r"/apis/apps/v1(?:/namespaces/([^/]+))?/daemonsets", path):  # one namespace, or all
            selector = query.get("labelSelector", [""])[0]
            return 200, _list("DaemonSet", [d for d in [c.daemonset, *c.daemonsets.values()]
                                            if m.group(1) in (None, d["metadata"]["namespace"])
                                            and _matches(d["metadata"].get("labels", {}), selector)], "apps/v1")
        if m := re.fullmatch(r"/apis/apps/v1/namespaces/([^/]+)/daemonsets/([^/]+)", path):
            meta = c.daemonset["metadata"]
            if (m.group(1), m.group(2)) == (meta["namespace"], meta["name"]):
                return 200, c.daemonset
            daemonset = c.daemonsets.get((m.group(1), m.group(2)))
            return (200, daemonset) if daemonset else not_found
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/services", path):
            selector = query.get("labelSelector", [""])[0]
            return 200, _list("Service", [s for s in c.services.values() if s["metadata"]["namespace"] == m.group(1)
                                          and _matches(s["metadata"].get("labels", {}), selector)])
        if m := re.fullmatch(r"/api/v1(?:/namespaces/([^/]+))?/pods", path):  # one namespace, or all
            selector = query.get("labelSelector", [""])[0]
            return 200, _list("Pod", [p for p in c.pods + c.other_pods
                                      if m.group(1) in (None, p["metadata"]["namespace"])
                                      and _matches(p["metadata"]["labels"], selector)])
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/services/([^/:]+)(?::([^/]+))?/proxy/(.*)", path):
            # as the API server answers: no such Service 404; a Service without a ready endpoint 503
            namespace, name = m.group(1), m.group(2)
            service = c.services.get(name)
            if not service or service["metadata"]["namespace"] != namespace:
                return 404, _status(404, "NotFound", f'services "{name}" not found')
            # a port number is the Service port of that number, by its name; an endpoint serves it where its slice
            # lists that name (the Endpoints subsets the proxy reads); ready null is ready
            wanted = m.group(3) or ""
            if wanted.isdigit():
                port = next((p for p in service["spec"].get("ports", []) if p["port"] == int(wanted)), None)
                if port is None:
                    return 503, _status(503, "ServiceUnavailable", f'no service port {wanted} found for service "{name}"')
                wanted = port.get("name", "")
            if service["spec"].get("selector") and not any(
                    e["conditions"].get("ready") is not False for s in c.endpoint_slices(namespace, name)
                    if any(p["name"] == wanted for p in s["ports"]) for e in s["endpoints"] or []):
                return 503, _status(503, "ServiceUnavailable", f'no endpoints available for service "{name}"')
            if m.group(4) == "metrics" and c.metrics_payload:
                return 200, c.metrics_payload
            return 503, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 503}
        if m := re.fullmatch(r"/apis/discovery.k8s.io/v1/namespaces/([^/]+)/endpointslices", path):
            selector = query.get("labelSelector", [""])[0]
            key, _, service = selector.partition("=")
            slices = c.endpoint_slices(m.group(1), service) if key == "kubernetes.io/service-name" else []
            return 200, {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSliceList",
                         "metadata": {"resourceVersion": "1"}, "items": [_untyped(e) for e in slices]}
        if m := re.fullmatch(r"/apis/monitoring.coreos.com/v1(?:/namespaces/([^/]+))?/prometheusrules", path):
            selector = query.get("labelSelector", [""])[0]
            return 200, {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRuleList", "metadata": {},
                         "items": [r for r in c.prometheus_rules if m.group(1) in (None, r["metadata"]["namespace"])
                                   and _matches(r["metadata"].get("labels", {}), selector)]}
        if m := re.fullmatch(r"/apis/monitoring.coreos.com/(v1|v1alpha1)(?:/namespaces/([^/]+))?/(prometheus\w+)",
                             path):
            version, namespace, resource = m.groups()
            kind = {("v1", "prometheuses"): "Prometheus", ("v1alpha1", "prometheusagents"): "PrometheusAgent"}.get(
                (version, resource))
            if kind is None:
                return not_found
            return 200, {"apiVersion": f"monitoring.coreos.com/{version}", "kind": f"{kind}List", "metadata": {},
                         "items": [p for p in c.prometheuses if p["kind"] == kind
                                   and namespace in (None, p["metadata"]["namespace"])]}
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)", path):
            name = m.group(1)
            return 200, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {
                "kubernetes.io/metadata.name": name, **c.namespace_labels.get(name, {})}}, "status": {"phase": "Active"}}
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/services/([^/]+)", path):
            service = c.services.get(m.group(2))
            return (200, service) if service and service["metadata"]["namespace"] == m.group(1) else not_found
        if m := re.fullmatch(r"/apis/apps/v1/namespaces/([^/]+)/deployments/([^/]+)", path):
            deployment = c.deployments.get((m.group(1), m.group(2)))
            return (200, deployment) if deployment else not_found
        if m := re.fullmatch(r"/apis/monitoring.coreos.com/v1(?:/namespaces/([^/]+))?/servicemonitors", path):
            selector = query.get("labelSelector", [""])[0]
            return 200, {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitorList",  # one namespace, or all
                         "metadata": {}, "items": [s for s in c.service_monitors
                                                   if m.group(1) in (None, s["metadata"]["namespace"])
                                                   and _matches(s["metadata"].get("labels", {}), selector)]}
        if m := re.fullmatch(r"/apis/monitoring.coreos.com/v1/namespaces/([^/]+)/(servicemonitors|prometheusrules)"
                             r"/([^/]+)", path):
            namespace, resource, name = m.groups()
            objects = c.service_monitors if resource == "servicemonitors" else c.prometheus_rules
            found = [o for o in objects if (o["metadata"].get("namespace"), o["metadata"]["name"]) == (namespace, name)]
            return (200, found[0]) if found else (404, _status(404, "NotFound", f'{resource} "{name}" not found'))
        if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/configmaps/([^/]+)", path):
            configmap = c.configmaps.get((m.group(1), m.group(2)))
            return (200, configmap) if configmap else not_found
        if m := re.fullmatch(r"/api/v1(?:/namespaces/([^/]+))?/configmaps", path):  # one namespace, or all
            fields, selector = query.get("fieldSelector", [""])[0], query.get("labelSelector", [""])[0]
            scanned = [(key, configmap) for key, configmap in sorted(c.configmaps.items())
                       if m.group(1) in (None, key[0])]
            page = _page(scanned, query, c.continue_refused)
            if page[0] != 200:
                return page
            _, scanned, token = page
            listed = {"resourceVersion": "1", **({"continue": token} if token else {})}
            return 200, {"apiVersion": "v1", "kind": "ConfigMapList", "metadata": listed,
                         "items": [_untyped(configmap) for (namespace, name), configmap in scanned
                                   if _matches({"metadata.name": name, "metadata.namespace": namespace}, fields)
                                   and isinstance(configmap, dict)  # (a test's garbled object: in a GET's answer)
                                   and _matches(configmap["metadata"].get("labels", {}), selector)]}
        return not_found

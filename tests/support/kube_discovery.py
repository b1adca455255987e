"""What `kubectl apply --server-side` reads before it writes: API discovery and OpenAPI v3 documents
for the kinds gpudash ships (ConfigMap, ServiceMonitor, PrometheusRule), and a TLS certificate,
since kubectl sends a bearer token only over TLS."""

from __future__ import annotations

import base64
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
OBJECT_META = {"type": "object", "properties": {
    "name": {"type": "string"}, "namespace": {"type": "string"},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "annotations": {"type": "object", "additionalProperties": {"type": "string"}}}}
MONITORING = "monitoring.coreos.com"
# kind -> (group, plural, CRD file under k8s/prometheus-operator or None for a core kind)
KINDS = {"ConfigMap": ("", "configmaps", None),
         "ServiceMonitor": (MONITORING, "servicemonitors", "monitoring.coreos.com_servicemonitors.yaml"),
         "PrometheusRule": (MONITORING, "prometheusrules", "monitoring.coreos.com_prometheusrules.yaml")}


def _schema(kind: str, group: str, crd: str | None, reference: Path) -> dict[str, Any]:
    if crd is None:
        schema = {"type": "object", "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                                   "data": {"type": "object",
                                                            "additionalProperties": {"type": "string"}}}}
    else:
        document = yaml.safe_load((reference / "k8s" / "prometheus-operator" / crd).read_text())
        schema = next(v["schema"]["openAPIV3Schema"] for v in document["spec"]["versions"] if v["name"] == "v1")
    schema = {**schema, "properties": {**schema.get("properties", {}), "metadata": {"$ref": f"#/components/schemas/{META}"}}}
    schema["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": "v1"}]
    return schema


def documents(reference: Path) -> dict[str, Any]:
    """Path -> JSON body, for discovery and OpenAPI v3."""
    versions: dict[str, dict[str, Any]] = {}
    for kind, (group, plural, crd) in KINDS.items():
        version = f"{group}/v1" if group else "v1"
        root = f"apis/{version}" if group else "api/v1"
        doc = versions.setdefault(root, {"openapi": "3.0.0", "info": {"title": "test", "version": "v1"},
                                         "paths": {}, "components": {"schemas": {META: OBJECT_META}},
                                         "resources": [], "groupVersion": version})
        name = f"{group or 'core'}.v1.{kind}"
        doc["components"]["schemas"][name] = _schema(kind, group, crd, reference)
        doc["paths"][f"/{root}/namespaces/{{namespace}}/{plural}/{{name}}"] = {"patch": {
            "parameters": [{"name": n, "in": "query", "schema": {"type": "string"}}
                           for n in ("fieldManager", "fieldValidation", "force")],
            "requestBody": {"content": {"application/apply-patch+yaml": {"schema": {"type": "object"}}}},
            "responses": {"200": {"description": "OK", "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{name}"}}}}},
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": group, "kind": kind, "version": "v1"}}}
        doc["resources"].append({"name": plural, "singularName": kind.lower(), "namespaced": True, "kind": kind,
                                 "verbs": ["get", "list", "patch", "create", "update", "delete"]})
    bodies: dict[str, Any] = {
        "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0"},
        "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]},
        "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": MONITORING, "versions": [{"groupVersion": f"{MONITORING}/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": f"{MONITORING}/v1", "version": "v1"}}]},
        "/openapi/v3": {"paths": {root: {"serverRelativeURL": f"/openapi/v3/{root}"} for root in versions}},
    }
    for root, doc in versions.items():
        bodies[f"/{root}"] = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": doc.pop("groupVersion"),
                              "resources": doc.pop("resources")}
        bodies[f"/openapi/v3/{root}"] = doc
    return bodies


def certificate() -> tuple[Path, Path, str] | None:
    """(certificate file, key file, base64 certificate) for 127.0.0.1, or None without openssl."""
    if not shutil.which("openssl"):
        return None
    folder = Path(tempfile.mkdtemp(prefix="kube-tls-"))
    cert, key = folder / "cert.pem", folder / "key.pem"
    # an EC P-256 key: made in a millisecond where an RSA key takes a tenth of a second or more of CPU
    result = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                             "-nodes", "-keyout", str(key),
                             "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                             "-addext", "subjectAltName=IP:127.0.0.1"], capture_output=True)
    if result.returncode != 0:
        return None
    return cert, key, base64.b64encode(cert.read_bytes()).decode()

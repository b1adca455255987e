"""The DCGM exporter's /metrics, read over HTTP by the run's deadline."""

from __future__ import annotations

from .options import Options
from ..errors import RemoteError
from .http import get
from .kube import Kube


def fetch(options: Options) -> str:
    """The exposition text at the exporter URL; RemoteError unless it answers 200."""
    hint = "check the exporter URL (port 9400, path /metrics), or --skip exporter"
    status, text = get(options.exporter_url, options, options.exporter_url, hint)
    if status != 200:
        raise RemoteError(f"{options.exporter_url} answered HTTP {status}", hint=hint)
    return text


def fetch_through_proxy(kube: Kube, namespace: str, service: str, port: int) -> tuple[str, str]:
    """One exporter's /metrics through the API server's service proxy, and where it came from."""
    source = f"service proxy {namespace}/{service}"
    text = kube.text(f"/api/v1/namespaces/{namespace}/services/{service}:{port}/proxy/metrics", source)
    if not text:
        raise RemoteError(f"no answer from Service {namespace}/{service} through the API server proxy",
                          hint="pass --exporter-url, or check the exporter Service")
    return text, source

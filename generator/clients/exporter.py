"""The DCGM exporter's /metrics, read over HTTP by the run's deadline."""

from __future__ import annotations

from .options import Options
from ..errors import RemoteError
from .http import get


def fetch(options: Options) -> str:
    """The exposition text at the exporter URL; RemoteError unless it answers 200."""
    hint = "check the exporter URL (port 9400, path /metrics), or --skip exporter"
    status, text = get(options.exporter_url, options, options.exporter_url, hint)
    if status != 200:
        raise RemoteError(f"{options.exporter_url} answered HTTP {status}", hint=hint)
    return text

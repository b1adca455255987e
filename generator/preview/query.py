"""Each panel target's query sent to Prometheus: `query_range` over the window, or an instant query
at its end for targets marked `instant` (stat, gauge, table). A refused or failed query is kept as
that target's error, to be shown on its panel; it never stops the other panels."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .. import redact
from ..checks.result import Options
from ..errors import RemoteError

HINT = "check --prometheus-url (PROMETHEUS_URL) and that Prometheus is up"


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]  # (unix seconds, value); NaN for a sample Prometheus gave as NaN


@dataclass
class Result:
    """What one target's query gave: series, or the error Prometheus (or the network) answered."""

    expr: str
    instant: bool
    series: list[Series] = field(default_factory=list)
    error: str | None = None


class PrometheusClient:
    def __init__(self, url: str, timeout: float = 30.0):
        self.url = url.rstrip("/")
        self.source = f"Prometheus at {redact.url(self.url)}"
        self.timeout = timeout

    def _get(self, path: str, params: dict[str, str]) -> Any:
        from ..clients.http import get

        options = Options(timeout=self.timeout)
        options.start()
        status, text = get(f"{self.url}/api/v1/{path}", options, self.source, HINT, params=params, verb="query")
        try:
            body = json.loads(text)
        except ValueError:
            raise RemoteError(f"{self.source} answered HTTP {status} with something that is not JSON",
                              hint="check that the URL is Prometheus' own API (no /graph, no /api/v1)") from None
        if not isinstance(body, dict):
            raise RemoteError(f"{self.source} answered JSON that is not a Prometheus answer", hint=HINT)
        return body

    def ready(self) -> None:
        """Raise RemoteError unless Prometheus answers a trivial query."""
        body = self._get("query", {"query": "1"})
        if body.get("status") != "success":
            raise RemoteError(f"{self.source} refused a trivial query: {body.get('error', '?')}", hint=HINT)

    def run(self, expr: str, instant: bool, start: float, end: float, step: float) -> Result:
        result = Result(expr, instant)
        params = {"query": expr, "time": f"{end:.3f}"} if instant else \
            {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        try:
            body = self._get("query" if instant else "query_range", params)
        except RemoteError as exc:
            result.error = str(exc).split("\n")[0]
            return result
        if body.get("status") != "success":
            result.error = redact.text(f"{body.get('errorType', 'error')}: {body.get('error', 'no reason given')}")
            return result
        try:
            result.series = _series(body["data"])
        except (KeyError, TypeError, ValueError) as exc:
            result.error = f"{self.source} gave an answer that is not a Prometheus result ({type(exc).__name__})"
        return result


def _number(text: Any) -> float:
    value = float(text)  # Prometheus writes NaN, +Inf, -Inf as strings that float() reads
    return value


def _series(data: dict[str, Any]) -> list[Series]:
    kind = data["resultType"]
    series = []
    if kind == "matrix":
        for item in data["result"]:
            series.append(Series(dict(item["metric"]), tuple((float(t), _number(v)) for t, v in item["values"])))
    elif kind == "vector":
        for item in data["result"]:
            t, v = item["value"]
            series.append(Series(dict(item["metric"]), ((float(t), _number(v)),)))
    elif kind == "scalar":
        t, v = data["result"]
        series.append(Series({}, ((float(t), _number(v)),)))
    else:
        raise ValueError(kind)
    return series


def last_value(series: Series) -> float | None:
    """The last value that is a number (Grafana's `lastNotNull`)."""
    for _, value in reversed(series.points):
        if not math.isnan(value):
            return value
    return None

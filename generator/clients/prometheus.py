"""Prometheus' HTTP API: instant queries and the target listing, each answer checked to be the API's."""

from __future__ import annotations

import json

from .. import redact
from ..checks.result import Options
from ..errors import RemoteError
from .answer import Answer, OddAnswer, to_number
from .http import get

HINT = "check --prometheus-url (PROMETHEUS_URL) and that Prometheus is up, or --skip prometheus"


class Prometheus:
    def __init__(self, url: str, options: Options):
        self.url, self.options = url.rstrip("/"), options
        self.source = f"Prometheus at {redact.url(self.url)}"

    def _api(self, path: str, params: dict[str, str], what: str) -> Answer:
        """A successful answer of Prometheus' API; RemoteError or OddAnswer when not one."""
        status, text = get(f"{self.url}{path}", self.options, self.source, HINT, params=params, verb="query")
        try:
            answer = Answer(json.loads(text), self.source)
        except ValueError:
            if status != 200:
                raise RemoteError(f"{self.source} answered HTTP {status}", hint=HINT) from None
            raise OddAnswer(self.source, "", text[:40], "JSON") from None
        if answer.get("status", str) != "success":
            raise RemoteError(f"{self.source} refused {what}: {answer.get('error', str, '?')}",
                              hint="check that the URL is Prometheus' own API")
        return answer

    def query(self, expr: str) -> list[tuple[dict[str, str], float]]:
        """An instant query's samples as (labels, value); RemoteError or OddAnswer when not an answer."""
        answer = self._api("/api/v1/query", {"query": expr}, f"the query {expr!r}")
        if answer.get("data.resultType", str) != "vector":
            raise OddAnswer(self.source, "data.resultType", answer.get("data.resultType", str), "'vector'")
        samples = []
        for item in answer.items("data.result", required=True):
            value = item.get("value", list)
            if len(value) != 2:
                raise OddAnswer(self.source, f"{item.path}.value", value, "[time, value]")
            samples.append((item.string_map("metric"), to_number(value[1], self.source, f"{item.path}.value[1]")))
        return samples

    def job_targets(self, job: str) -> list[str]:
        """The instances Prometheus has discovered for scrape job `job`, scraped yet or not."""
        answer = self._api("/api/v1/targets", {"state": "active"}, "the target listing")
        return [item.get("labels.instance", str, "?") for item in answer.items("data.activeTargets", required=True)
                if item.get("scrapePool", str, "") == job]

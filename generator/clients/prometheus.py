"""Prometheus' HTTP API: verify's instant queries and target listing, each answer checked to be the API's
(`Prometheus`), and preview's range and instant queries, whose failures become the panel's error
(`PrometheusClient`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from .. import redact
from .options import Options
from ..errors import RemoteError
from .answer import NOT_JSON, Answer, OddAnswer, json_value, to_number
from .http import Sessions, get

HINT = "check --prometheus-url (PROMETHEUS_URL) and that Prometheus is up, or --skip prometheus"
RANGE_HINT = "check --prometheus-url (PROMETHEUS_URL) and that Prometheus is up"
# the longest query string sent in a URL: a longer query goes form-encoded in a POST's body, which Prometheus' query
# API takes alike; proxies refuse long request lines (nginx's default buffer is 8 KiB, Python's http.server 64 KiB)
URL_QUERY_LIMIT = 4096
# a server error answered without Prometheus' JSON (5xx): Prometheus not ready yet, or a proxy before it that gave up
SERVER_FAILED_HINT = ("Prometheus, or a proxy before it, failed to answer: check that Prometheus is up and ready (not "
                      "starting or overloaded) and run again")


class _Reads:
    """A client's reads of one server over keep-alive connections, a session per thread (`close` them when done)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.source = f"Prometheus at {redact.url(self.url)}"
        self._sessions = Sessions(self.url)

    def _read(self, path: str, options: Options, hint: str, params: dict[str, str] | None,
              evaluated: bool = False) -> tuple[int, str]:
        posted = _long(params)
        status, text = get(f"{self.url}{path}", options, self.source, hint, params=params, verb="query",
                           evaluated=evaluated, reuse=self._sessions.own(), in_body=posted)
        if posted and status == 405:  # a server, or a proxy before it, that takes no POST: the query in the URL
            status, text = get(f"{self.url}{path}", options, self.source, hint, params=params, verb="query",
                               evaluated=evaluated, reuse=self._sessions.own())
        return status, text

    def close(self) -> None:
        self._sessions.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _long(params: dict[str, str] | None) -> bool:
    """Whether `params` are too long for a URL (URL_QUERY_LIMIT), so go in a POST's body."""
    return bool(params) and len(urlencode(params)) > URL_QUERY_LIMIT


class NoRuleListing(RemoteError):
    """The server answers no rule listing at all (HTTP 404 for /api/v1/rules): it holds no rules to read."""


class Prometheus(_Reads):
    """Verify's reads of one run, over one session's connections (`close` it when done)."""

    def __init__(self, url: str, options: Options):
        super().__init__(url)
        self.options = options

    def _get(self, path: str, params: dict[str, str] | None = None) -> tuple[int, str]:
        return self._read(path, self.options, HINT, params)

    def _decoded(self, status: int, text: str) -> Answer:
        """An answer of Prometheus' API, successful or not; RemoteError or OddAnswer when not one."""
        value = json_value(text)
        if value is not NOT_JSON:
            return Answer(value, self.source)
        if status != 200:
            raise RemoteError(f"{self.source} answered HTTP {status}", hint=HINT)
        raise OddAnswer(self.source, "", redact.text(text)[:40], "JSON")  # masked, then cut

    @staticmethod
    def _refused(answer: Answer, what: str) -> RemoteError:
        return RemoteError(f"{answer.source} refused {what}: {answer.get('error', str, '?')}",
                           hint="check that the URL is Prometheus' own API")

    def _api(self, path: str, params: dict[str, str] | None, what: str) -> Answer:
        """A successful answer of Prometheus' API; RemoteError or OddAnswer when not one."""
        return self._successful(*self._get(path, params), what)

    def _successful(self, status: int, text: str, what: str) -> Answer:
        answer = self._decoded(status, text)
        if answer.get("status", str) != "success":
            raise self._refused(answer, what)
        return answer

    def query(self, expr: str) -> list[tuple[dict[str, str], float]]:
        """An instant query's samples as (labels, value); RemoteError or OddAnswer when not an answer."""
        return self._samples(self._api("/api/v1/query", {"query": expr}, f"the query {expr!r}"))

    def parses(self, expr: str, at: float) -> tuple[list[tuple[dict[str, str], float]] | None, str]:
        """An instant query at `at` (unix seconds): (samples, "") when answered, (None, the reason) when the server
        refuses the query (Prometheus: HTTP 400 with errorType bad_data, which it answers for an expression it cannot
        parse; VictoriaMetrics answers every error HTTP 422, so only a query that selects no series reads that as the
        expression refused); any other failure (an evaluation error, which Prometheus answers HTTP 422 with errorType
        execution, a timeout, a server error) is RemoteError."""
        status, text = self._get("/api/v1/query", {"query": expr, "time": f"{at:.3f}"})
        answer = self._decoded(status, text)
        if answer.get("status", str) == "success":
            return self._samples(answer), ""
        kind = answer.get("errorType", str, "")
        if kind == "bad_data" or (status in (400, 422) and kind != "execution"):
            return None, answer.get("error", str, "no reason given")
        raise self._refused(answer, f"the query {expr!r}")

    def build_info(self) -> Answer | None:
        """The `data` of /api/v1/status/buildinfo (`version`, `revision`, ...; Mimir adds `application`), as the
        server answers it; None when the server has no such endpoint (HTTP 404). RemoteError or OddAnswer when the
        answer is not the API's."""
        status, text = self._get("/api/v1/status/buildinfo")
        if status == 404:
            return None
        return self._successful(status, text, "the build information").at("data")

    def alerting_rules(self) -> list[tuple[str, str, dict[str, str], str]]:
        """(file, alert name, labels, query) of each alerting rule the server has loaded (/api/v1/rules): the query as
        the server writes the expression back, so two rules of one expression read alike."""
        return self._rules("alert", "alerting")

    def recording_rules(self) -> list[tuple[str, str, dict[str, str], str]]:
        """(file, recorded name, labels, query) of each recording rule the server has loaded."""
        return self._rules("record", "recording")

    def _rules(self, kind: str, named: str) -> list[tuple[str, str, dict[str, str], str]]:
        """NoRuleListing where the server has no rule listing (HTTP 404: an API of queries alone); RemoteError or
        OddAnswer where its answer is not one (a 503, an auth proxy's 403: rules it may hold, unread)."""
        status, text = self._get("/api/v1/rules", {"type": kind})
        if status == 404:
            raise NoRuleListing(f"{self.source} has no rule listing (HTTP 404 for /api/v1/rules)")
        answer = self._successful(status, text, "the rule listing")
        return [(group.get("file", str, ""), rule.get("name", str), rule.string_map("labels"), rule.get("query", str))
                for group in answer.items("data.groups", required=True) for rule in group.items("rules")
                if rule.get("type", str, named) == named]

    def _samples(self, answer: Answer) -> list[tuple[dict[str, str], float]]:
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
    fix: str | None = None  # what to do about the error, where the client says (a query past --timeout)


class PrometheusClient(_Reads):
    """Preview's queries, from any number of threads, each thread over one session's connections (`close` it when
    done): a preview run asks one query per panel target (118 for the bundled dashboards), which over a connection
    each cost Prometheus an accept and, behind https, a TLS handshake apiece."""

    def __init__(self, url: str, timeout: float = 30.0):
        super().__init__(url)
        self.timeout = timeout

    def _get(self, path: str, params: dict[str, str]) -> Any:
        options = Options(timeout=self.timeout)
        options.start()
        status, text = self._read(f"/api/v1/{path}", options, RANGE_HINT, params, evaluated=True)
        body = json_value(text)
        if body is NOT_JSON:  # a server error is no sign of a wrong URL (Prometheus starting, a proxy's time limit)
            raise RemoteError(f"{self.source} answered HTTP {status} with something that is not JSON",
                              hint=SERVER_FAILED_HINT if status >= 500 else
                              "check that the URL is Prometheus' own API (no /graph, no /api/v1)")
        if not isinstance(body, dict):
            raise RemoteError(f"{self.source} answered JSON that is not a Prometheus answer", hint=RANGE_HINT)
        return body

    def ready(self) -> None:
        """Raise RemoteError unless Prometheus answers a trivial query."""
        body = self._get("query", {"query": "1"})
        try:  # an answer without Prometheus' status (Grafana's, a login page's JSON) is no refusal: say what it is
            Answer(body, self.source).get("status", str)
        except OddAnswer as exc:
            raise RemoteError(f"odd answer from {exc} (to a trivial query)",
                              hint="check that --prometheus-url (PROMETHEUS_URL) reaches Prometheus' API itself "
                                   "(not Grafana, a proxy or a login page)") from None
        if body.get("status") != "success":
            raise RemoteError(f"{self.source} refused a trivial query: {body.get('error', '?')}", hint=RANGE_HINT)

    def run(self, expr: str, instant: bool, start: float, end: float, step: float) -> Result:
        result = Result(expr, instant)
        params = {"query": expr, "time": f"{end:.3f}"} if instant else \
            {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        try:
            body = self._get("query" if instant else "query_range", params)
        except RemoteError as exc:
            result.error, result.fix = str(exc).split("\n")[0], exc.hint
            return result
        if body.get("status") != "success":
            result.error = redact.text(f"{body.get('errorType', 'error')}: {body.get('error', 'no reason given')}")
            return result
        try:
            result.series = _series(Answer(body, self.source))
        except OddAnswer as exc:  # its text names the source and what was odd where
            result.error = f"not a Prometheus result: {exc}"
        return result


def _point(pair: Any, source: str, path: str) -> tuple[float, float]:
    """One [time, value] pair; Prometheus writes NaN, +Inf, -Inf as strings that float() reads."""
    if not isinstance(pair, list) or len(pair) != 2:
        raise OddAnswer(source, path, pair, "[time, value]")
    return to_number(pair[0], source, f"{path}[0]"), to_number(pair[1], source, f"{path}[1]")


def _series(answer: Answer) -> list[Series]:
    """The series of a query's answer; a result that is not of its type's shape (a `{}` where the list
    is due, a series without its values) is odd, never an empty panel."""
    kind = answer.get("data.resultType", str)
    if kind == "scalar":
        return [Series({}, (_point(answer.get("data.result", list), answer.source, "data.result"),))]
    if kind not in ("matrix", "vector"):
        raise OddAnswer(answer.source, "data.resultType", kind, "matrix, vector or scalar")
    series = []
    for item in answer.items("data.result", required=True):
        if kind == "matrix":
            points = tuple(_point(pair, item.source, f"{item.path}.values[{index}]")
                           for index, pair in enumerate(item.get("values", list)))
        else:
            points = (_point(item.get("value", list), item.source, f"{item.path}.value"),)
        series.append(Series(item.string_map("metric"), points))
    return series

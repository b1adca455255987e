"""A panel's query longer than a URL may carry is sent in a POST's form-encoded body, which Prometheus' query API
takes alike: the bundled 'Framebuffer used share by pod' is 45 KB of PromQL (69 KB URL-encoded), past the request
line a proxy or Python's http.server reads (nginx's default buffer is 8 KiB): preview reported HTTP 414 for it."""

from __future__ import annotations

import json

import pytest

from generator.clients.prometheus import URL_QUERY_LIMIT, PrometheusClient
from tests.support.canned_server import CannedServer
from tests.support.prometheus_server import backfilled

VECTOR = {"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {"pod": "a"}, "value": [60, "7"]}]}}


def _long(query: str, size: int) -> str:
    """`query` with a regex alternative list making it `size` characters or more (matching no more than before)."""
    names = "|".join(f"absent-{n}" for n in range(size // 10))
    return query.replace("}", f', pod!~"{names}"}}')


def test_a_query_longer_than_a_request_line_is_read():
    """Python's http.server refuses a request line past 64 KiB with HTTP 414: a 70 KB query is read all the same."""
    query = _long('m{pod="a"}', 70_000)
    with CannedServer(json.dumps(VECTOR)) as server, PrometheusClient(server.url, timeout=5) as client:
        result = client.run(query, True, 0.0, 60.0, 15.0)
        sent = server.requests[-1]
    assert result.error is None and [s.labels for s in result.series] == [{"pod": "a"}]
    assert sent[0] == "POST" and "absent-6999" in sent[1]


def test_a_short_query_stays_in_the_url():
    with CannedServer(json.dumps(VECTOR)) as server, PrometheusClient(server.url, timeout=5) as client:
        client.run('m{pod="a"}', True, 0.0, 60.0, 15.0)
        assert server.requests[-1][0] == "GET"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    def openmetrics(start: int) -> str:
        lines = ["# TYPE m gauge"]
        lines += [f'm{{pod="{pod}"}} {value} {start + t}' for t in range(0, 600, 60)
                  for pod, value in (("a", 3), ("b", 5))]
        return "\n".join(lines) + "\n# EOF\n"
    with backfilled(tmp_path_factory.mktemp("long-query"), openmetrics, 600, 60) as (server, start):
        yield server, start


@pytest.mark.parametrize("instant", [True, False], ids=["instant", "range"])
def test_prometheus_reads_a_posted_query_as_the_same_query_in_a_url(prometheus, instant):
    server, start = prometheus
    long = _long('m{pod=~"a|b"}', 4 * URL_QUERY_LIMIT)
    with PrometheusClient(server.url, timeout=30) as client:
        short, posted = (client.run(q, instant, start, start + 540, 60) for q in ('m{pod=~"a|b"}', long))
    assert posted.error is None and short.error is None
    values = {tuple(sorted(s.labels.items())): s.points for s in posted.series}
    assert values == {tuple(sorted(s.labels.items())): s.points for s in short.series} and len(values) == 2


REFUSED = json.dumps({"status": "error", "errorType": "bad_data", "error": "no expression found in input"})


@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_long_query_redirected_is_posted_again_whole(status):
    """A proxy redirecting (http to https, a moved path) with 301, 302 or 303: requests followed it as a GET without
    the body, and Prometheus read the lost query as an empty one it cannot parse (verify: "does not parse")."""
    query = _long('m{pod="a"}', 2 * URL_QUERY_LIMIT)
    with CannedServer(REFUSED, status=400) as there, CannedServer() as proxy:
        there.routes["absent-"] = (200, json.dumps(VECTOR))
        proxy.redirect_status, proxy.redirects["/api/v1/query"] = status, f"{there.url}/api/v1/query"
        with PrometheusClient(proxy.url, timeout=5) as client:
            result = client.run(query, True, 0.0, 60.0, 15.0)
    assert result.error is None and [s.labels for s in result.series] == [{"pod": "a"}]


def test_a_long_query_refused_as_a_post_is_read_from_the_url():
    """A server, or a proxy before it, that answers a POST 405: the query goes in the URL, which it reads."""
    query = _long('m{pod="a"}', 2 * URL_QUERY_LIMIT)
    with CannedServer(REFUSED, status=400) as server, PrometheusClient(server.url, timeout=5) as client:
        server.routes["absent-"] = (200, json.dumps(VECTOR))
        server.refused.add("POST")
        result = client.run(query, True, 0.0, 60.0, 15.0)
    assert result.error is None and [s.labels for s in result.series] == [{"pod": "a"}]


@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_long_query_answered_a_redirect_without_a_location_is_a_failure_of_that_status(status):
    """A redirect status without a Location to follow is the server's answer as it gave it: a failure naming that
    status, not one it never sent (the POST's redirect, followed as a 307, reported HTTP 307)."""
    query = _long('m{pod="a"}', 2 * URL_QUERY_LIMIT)
    with CannedServer("<html>moved</html>", status=status, content_type="text/html") as server, \
            PrometheusClient(server.url, timeout=5) as client:
        result = client.run(query, True, 0.0, 60.0, 15.0)
    assert result.series == [] and result.error is not None and f"HTTP {status} " in result.error, result.error

"""Preview's Prometheus reads: an answer that is not of its result type's shape is the panel's error,
never an empty panel; a valid one is read to its values."""

from __future__ import annotations

import json
import math

import pytest

from generator.clients.prometheus import PrometheusClient
from tests.support.canned_server import CannedServer


def _run(answer, instant: bool = False):
    with CannedServer(json.dumps(answer)) as server, PrometheusClient(server.url, timeout=5) as client:
        return client.run("up", instant, 0.0, 60.0, 15.0)


@pytest.mark.parametrize("data, odd", [
    ({"resultType": "matrix", "result": {}}, "data.result is an object, expected a list"),
    ({"resultType": "matrix"}, "data.result is missing"),
    ({"resultType": "matrix", "result": [{"metric": {"pod": "a"}}]}, "data.result[0].values is missing"),
    ({"resultType": "matrix", "result": [{"metric": {}, "values": [[1, "x"]]}]}, "values[0][1] is 'x'"),
    ({"resultType": "vector", "result": [{"metric": {"pod": 3}, "value": [1, "2"]}]}, "metric.pod is 3"),
    ({"resultType": "table", "result": []}, "expected matrix, vector or scalar"),
])
def test_an_answer_not_shaped_as_its_type_is_an_error_not_an_empty_panel(data, odd):
    result = _run({"status": "success", "data": data})
    assert result.series == [] and result.error is not None
    assert "not a Prometheus result" in result.error and odd in result.error


def test_an_answer_of_json_nested_too_deeply_to_read_is_an_error_not_a_crash():
    """JSON nested deeper than Python's parser follows (a broken proxy's answer): RecursionError left the client, and
    the CLI said "nested too deeply ... the file you changed last", of no file of the user's."""
    with CannedServer("[" * 10**5 + "]" * 10**5) as server, PrometheusClient(server.url, timeout=5) as client:
        result = client.run("up", False, 0.0, 60.0, 15.0)
    assert result.series == [] and "not JSON" in result.error


def test_a_valid_answer_is_read_to_its_values():
    matrix = _run({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"pod": "train-0"}, "values": [[0, "1.5"], [15, "NaN"]]}]}})
    assert matrix.error is None and len(matrix.series) == 1
    (series,) = matrix.series
    assert series.labels == {"pod": "train-0"} and series.points[0] == (0.0, 1.5) and math.isnan(series.points[1][1])
    vector = _run({"status": "success", "data": {"resultType": "vector", "result": []}}, instant=True)
    assert vector.error is None and vector.series == []
    scalar = _run({"status": "success", "data": {"resultType": "scalar", "result": [60, "4"]}}, instant=True)
    assert scalar.series[0].points == ((60.0, 4.0),)


def test_a_query_prometheus_evaluates_longer_than_a_socket_read_may_wait_is_waited_for_until_the_deadline(monkeypatch):
    """Prometheus sends nothing before the query has run: a query taking longer than one socket read may wait (5 s;
    0.2 s here) is still read within the client's timeout, as Grafana reads it within its own (was: ReadTimeout,
    "cannot query", a preview panel failed where Grafana draws it)."""
    import time

    from generator.clients.options import Options

    capped = Options.socket_timeout
    monkeypatch.setattr(Options, "socket_timeout", lambda self, cap=0.2: capped(self, cap))
    answer = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"pod": "train-0"}, "value": [60, "7"]}]}})

    def slow(path: str) -> str:
        time.sleep(0.6)
        return answer

    with CannedServer() as server, PrometheusClient(server.url, timeout=5) as client:
        server.routes["/api/v1/query"] = (200, slow)
        result = client.run("up", True, 0.0, 60.0, 15.0)
    assert result.error is None and result.series[0].points == ((60.0, 7.0),)


def test_a_preview_asks_over_a_connection_per_thread_not_per_query_and_each_query_reads_its_own_answer():
    """preview's queries (one per panel target) run in a pool of threads: each thread asks over one keep-alive
    connection (was: one connection per query, an accept and behind https a TLS handshake apiece), every query
    still reads the answer to its own expression, and the URL's credentials go with every query from every thread."""
    import base64
    import re
    from urllib.parse import parse_qs, urlsplit

    from generator.preview import site

    def answer(path: str) -> str:  # each panel's query answered with its own number, read back from the page
        (expr,) = parse_qs(urlsplit(path).query)["query"]
        number = re.fullmatch(r'up\{n="(\d+)"\}', expr)[1]
        return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": {"n": number}, "values": [[0, number]]}]}})

    targets = 40
    model = {"title": "t", "panels": [{"type": "timeseries", "targets": [{"expr": f'up{{n="{n}"}}'}]}
                                      for n in range(targets)]}
    plan = site.plan("t", model, "1h", 15.0, 3600.0)
    workers = 4
    with CannedServer() as server:
        server.routes["/api/v1/query_range"] = (200, answer)
        with PrometheusClient(server.url.replace("http://", "http://reader:s3cret@"), timeout=5) as client:
            site.run_queries([plan], client, workers=workers)
    read = {index: [(s.labels["n"], s.points) for _, result in results for s in result.series]
            for index, results in plan.results.items()}
    assert read == {n: [(str(n), ((0.0, float(n)),))] for n in range(targets)}
    assert len(server.requests) == targets
    assert {headers.get("Authorization") for _, _, headers in server.requests} == \
        {"Basic " + base64.b64encode(b"reader:s3cret").decode()}
    assert 1 <= len(server.connections) <= workers

"""What the dashboards and rules need of Prometheus beyond data, as `gpudash verify` reports it.

The range bars query with `@ end()` and a negative offset: verify reads the server's version
(/api/v1/status/buildinfo) and proves the feature with a query that uses both. Prometheus here is
2.42 (test_verify.py::test_all_healthy); the servers that refuse it or answer otherwise (older
Prometheus, back-ends reporting other versions) are loopback servers answering as those do, per
request path."""

from __future__ import annotations

import json
import re

import pytest

from generator.checks.prometheus import PINNED
from tests.support.canned_server import CannedServer

ONLY_PROMETHEUS = ("--skip", "kube", "--skip", "exporter", "--skip", "cloudwatch")
EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})


def _verify(cli, url):
    code, stdout, stderr = cli("verify", "--output", "json", *ONLY_PROMETHEUS, "--prometheus-url", url)
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    return code, {c["name"]: c for c in json.loads(stdout)["checks"]}


def _build(version, **more):
    return json.dumps({"status": "success", "data": {"version": version, **more}})


PROMETHEUS_2_30 = _build("2.30.3", revision="f29caccc", branch="HEAD", buildUser="root@build",
                         buildDate="20211005-16:10:52", goVersion="go1.17.1")
PROMETHEUS_2_24 = _build("2.24.1", revision="e4487274", branch="HEAD", buildUser="root@build",
                         buildDate="20210120-00:09:36", goVersion="go1.15.6")
VICTORIA_METRICS = _build("2.24.0")  # what VictoriaMetrics answers, whatever its own version
MIMIR = _build("2.0.0", application="Grafana Mimir", revision="9fd2da5", branch="HEAD", goVersion="go1.17.8",
               features={"query_sharding": "false"})
UNNAMED = _build("", revision="", branch="", buildUser="", buildDate="", goVersion="go1.17.6")  # a development build


def _refused(reason, status=400):
    return status, json.dumps({"status": "error", "errorType": "bad_data",
                               "error": f'invalid parameter "query": {reason}'})


def _read(shift):
    """An answer to the probe that reads the instant asked for plus `shift` seconds (Prometheus: 1)."""
    def answer(path):
        at = float(re.search(r"[?&]time=([0-9.]+)", path).group(1))
        return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {}, "value": [at, f"{at + shift:.3f}"]}]}})
    return 200, answer


PINNED_CASES = [  # (case, buildinfo (status, body), probe (status, body), status, cause, what the detail says)
    ("Prometheus 2.30 without the feature flags", (200, PROMETHEUS_2_30), _refused("@ modifier is disabled"), "fail",
     "", ["it reports version 2.30.3, before Prometheus 2.33", "refuses a query with `@ end()` and a negative offset",
      "@ modifier is disabled", "those panels show an error"]),
    ("Prometheus 2.30 with the @ flag alone", (200, PROMETHEUS_2_30), _refused("negative offset is disabled"), "fail",
     "", ["negative offset is disabled"]),
    ("Prometheus 2.24, before the @ modifier", (200, PROMETHEUS_2_24),
     _refused("1:44: parse error: unexpected character: '@'"), "fail", "",
     ["it reports version 2.24.1, before Prometheus 2.33", "unexpected character: '@'"]),
    ("no buildinfo endpoint", (404, "404 page not found"), _refused("1:44: parse error: unexpected character: '@'"),
     "fail", "", ["version unknown: it has no /api/v1/status/buildinfo (HTTP 404)"]),
    ("odd build information, the probe refused as VictoriaMetrics refuses",
     (200, json.dumps({"status": "success", "data": None})),
     (422, json.dumps({"status": "error", "errorType": "422", "error": "cannot parse query"})), "fail", "",
     ["version unknown: its build information is not the API's (data is odd)", "cannot parse query"]),
    ("VictoriaMetrics reports 2.24.0 and answers as Prometheus", (200, VICTORIA_METRICS), _read(1), "ok", "",
     ["answered as Prometheus answers it (it reports version 2.24.0, before Prometheus 2.33)"]),
    ("Mimir reports its own version", (200, MIMIR), _read(1), "ok", "",
     ["(Grafana Mimir 2.0.0, whose version is not Prometheus')"]),
    ("a build naming no version", (200, UNNAMED), _read(1), "ok", "",
     ["(version unknown: its build information names none)"]),
    ("a back-end that reads the negative offset as a positive one", (200, VICTORIA_METRICS), _read(-1), "warn", "",
     ["answers a query with `@ end()` and a negative offset otherwise than Prometheus", "which may then count"]),
    ("the probe failing for another reason", (200, PROMETHEUS_2_30),
     (503, json.dumps({"status": "error", "errorType": "unavailable", "error": "too many queries"})), "fail",
     "unreachable", ["cannot tell whether", "too many queries"]),
    ("the probe answered with no result list", (200, PROMETHEUS_2_30),
     (200, json.dumps({"status": "success", "data": {"resultType": "vector", "result": None}})), "fail", "odd-answer",
     ["data.result is null"]),
]


@pytest.fixture(scope="module")
def canned():
    with CannedServer(EMPTY) as server:
        yield server


@pytest.mark.parametrize("case, build, probe, status, cause, said", PINNED_CASES, ids=[c[0] for c in PINNED_CASES])
def test_the_range_bars_modifiers_are_proven_by_a_query_and_the_version_is_read_beside(case, build, probe, status,
                                                                                         cause, said, cli, canned):
    canned.routes = {"status/buildinfo": build, "timestamp": probe}
    code, checks = _verify(cli, canned.url)
    check = checks[PINNED]
    assert (check["status"], check["cause"]) == (status, cause), check
    for words in said:
        assert words in check["detail"], check
    if status != "ok" and not cause:
        assert "upgrade Prometheus to 2.33 or later" in check["fix"], check
    assert code == 1  # the canned server has no DCGM targets: that check fails in every case

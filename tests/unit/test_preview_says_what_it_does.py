"""`gpudash preview` waits tens of seconds on Prometheus (the sample's backfill, then every panel's query over the
range): it says on stderr what it is doing, so that a first run does not look stuck."""

from __future__ import annotations

import json
from contextlib import contextmanager

import generator.preview.sample as sampling
from generator.clients.prometheus import SERVER_FAILED_HINT
from tests.support.canned_server import CannedServer

EMPTY = '{"status": "success", "data": {"resultType": "matrix", "result": []}}'


def test_a_preview_names_what_it_queries_before_it_waits_on_it(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    with CannedServer(EMPTY) as prometheus:
        code, stdout, stderr = cli("preview", "--prometheus-url", f"http://{prometheus.address}", "--out", "site",
                                   env={"GPUDASH_CONFIG": None})
    assert code == 0, stderr
    assert f"querying Prometheus at http://{prometheus.address}: 62 panels of 4 dashboards\n" in stderr, stderr


def test_the_sample_says_what_it_loads_then_what_it_queries(tmp_path, monkeypatch, cli):
    served = []

    @contextmanager
    def serve(range_s, end, job, spacing=15.0, recorded=None, labelled=dict):
        served.append((range_s, bool(recorded)))
        with CannedServer(EMPTY) as prometheus:
            yield f"http://{prometheus.address}"

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sampling, "serve", serve)
    code, _, stderr = cli("preview", "--sample", "--out", "site", env={"GPUDASH_CONFIG": None})
    assert code == 0 and served == [(6 * 3600, True)], stderr
    said = stderr.splitlines()
    assert said[1:3] == ["loading 6 h of the sample's history and its counter recordings into a local Prometheus",
                         "querying the sample: 62 panels of 4 dashboards"], stderr


def test_a_url_that_is_not_prometheus_is_said_so(tmp_path, monkeypatch, cli):
    """PROMETHEUS_URL set to Grafana's address (a 401 {"message": ...}): before, 'refused a trivial query: ?'."""
    monkeypatch.chdir(tmp_path)
    with CannedServer('{"message": "Unauthorized"}', status=401) as grafana:
        code, _, stderr = cli("preview", "--prometheus-url", f"http://{grafana.address}", "--out", "site",
                              env={"GPUDASH_CONFIG": None})
    assert code == 3, stderr
    assert f"odd answer from Prometheus at http://{grafana.address}: status is missing" in stderr, stderr
    assert "reaches Prometheus' API itself (not Grafana, a proxy or a login page)" in stderr and "?" not in stderr


def test_a_failing_query_is_named_with_its_panel_its_error_and_what_to_do(tmp_path, monkeypatch, cli):
    """A panel whose query fails was counted alone ("1 with a failing query"), which on the bundled sample read as
    the product broken; the first such query is named now, with Prometheus' answer and the fix the client gives, in
    the text and in the JSON."""
    monkeypatch.chdir(tmp_path)
    with CannedServer(EMPTY) as prometheus:
        prometheus.routes["DCGM_FI_DEV_POWER_USAGE"] = (503, "Service Unavailable")
        code, stdout, stderr = cli("preview", "--prometheus-url", prometheus.url, "--out", "site",
                                   env={"GPUDASH_CONFIG": None})
        assert code == 0, stderr
        lines = stdout.splitlines()
        failing = next(k for k, line in enumerate(lines) if "with a failing query" in line)
        assert lines[failing + 1].startswith("  first: panel ") and " query A: " in lines[failing + 1], stdout
        assert f"Prometheus at {prometheus.url}" in lines[failing + 1] and lines[failing + 2].startswith("  fix: ")
        named = [line.split(" query ")[0].removeprefix("  first: panel ") for line in lines if "  first: " in line]
        code, stdout, _ = cli("preview", "--prometheus-url", prometheus.url, "--out", "json-site", "--output", "json",
                              env={"GPUDASH_CONFIG": None})
    # each dashboard's first panel (in the layout's order) reading the power field, which the server refuses
    first = {"gpudash-by-pod": "Power draw of each pod's GPUs", "gpudash-health": "Power draw",
             "gpudash-all-metrics": "DEV_POWER_USAGE", "gpudash-overview": "Total power draw"}
    pages = [p for p in json.loads(stdout)["dashboards"] if p["failed"]]
    assert {p["uid"]: p["first_failure"]["panel"] for p in pages} == first
    assert named == [repr(p["first_failure"]["panel"]) for p in pages]  # the text names the same, quoted
    error = f"Prometheus at {prometheus.url} answered HTTP 503 with something that is not JSON"
    # the URL answered every other query: a server error is not blamed on it
    assert all(p["first_failure"] == {"panel": first[p["uid"]], "query": "A", "error": error,
                                      "fix": SERVER_FAILED_HINT} for p in pages), pages

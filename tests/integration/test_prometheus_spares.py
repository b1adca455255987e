"""A test's Prometheus that scrapes is the spare a test process keeps started ahead of need
(tests/support/prometheus_server.Spares), given the test's configuration by a reload: it scrapes what that
configuration says from its first scrape on, holds nothing stored before, and a configuration Prometheus refuses fails
the start with Prometheus's own message, as a server started with it does."""

from __future__ import annotations

import time

import pytest

from generator.errors import GpudashError
from tests.support.prometheus_server import SPARES, Prometheus
from tests.support.replay_exporter import ReplayExporter


def _config(address: str, **job) -> dict:
    return {"global": {"scrape_interval": "1s"}, "scrape_configs": [
        {"job_name": "spare-test", "static_configs": [{"targets": [address], "labels": {"story": "s"}}], **job}]}


def test_a_spare_scrapes_the_tests_configuration_and_holds_nothing_before(tmp_path):
    with ReplayExporter("# TYPE x gauge\nx 1\n") as exporter:
        for k in range(2):  # the second at least is a spare (the session keeps one from its start)
            (tmp_path / str(k)).mkdir()
            asked = time.time()
            with Prometheus(tmp_path / str(k), _config(exporter.address)) as prometheus:
                (series,) = prometheus.wait_for("x")
                assert series["metric"] == {"__name__": "x", "job": "spare-test", "instance": exporter.address,
                                            "story": "s"}
                stamps = [float(at) for s in prometheus.query("x[10m]") for at, _ in s["values"]]
                assert min(stamps) >= asked - 1  # nothing stored before it was asked for (a scrape's stamp: its start)
        assert SPARES.root is not None and prometheus.config_path.parent.parent == SPARES.root


def test_a_configuration_prometheus_refuses_fails_the_start_with_its_message(tmp_path):
    with ReplayExporter("# TYPE x gauge\nx 1\n") as exporter:
        with pytest.raises(GpudashError, match="scrape timeout greater than scrape interval"):
            Prometheus(tmp_path, _config(exporter.address, scrape_timeout="5s")).start()


def test_a_server_started_again_reads_the_samples_it_stored_before(tmp_path):
    """A restart (stop, then start) is the same server on its own storage: the samples scraped before it are there."""
    with ReplayExporter("# TYPE x gauge\nx 1\n") as exporter:
        prometheus = Prometheus(tmp_path, _config(exporter.address))
        prometheus.start()
        try:
            prometheus.wait_for("x")
            before = [float(at) for s in prometheus.query("x[10m]") for at, _ in s["values"]]
            prometheus.stop()
            prometheus.session = None
            prometheus.start()
            prometheus.wait_for("x")
            after = [float(at) for s in prometheus.query("x[10m]") for at, _ in s["values"]]
            assert min(after) <= min(before)  # the first samples, stored before the restart, are read after it
        finally:
            prometheus.stop()

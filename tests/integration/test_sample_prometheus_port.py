"""A Prometheus gpudash starts (preview --sample, and the tests' own) is the one it reads: where another process took
the free port chosen for it first (a busy machine starting several), the started one fails to bind and exits a moment
later while the other answers ready; read from that other one, preview's sample held none of its data (promtool
recorded none of the counters: an internal error). The started Prometheus is told by its storage folder."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import generator.preview.sample as sample
from tests.support.prometheus_server import binary


class _Other(BaseHTTPRequestHandler):
    """Another Prometheus: ready, its storage elsewhere."""

    def do_GET(self):  # noqa: N802 - http.server's name
        body = b"Prometheus Server is Ready.\n" if self.path == "/-/ready" else json.dumps(
            {"status": "success", "data": {"storage.tsdb.path": "/elsewhere/data"}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_port_another_prometheus_answers_on_is_chosen_again(tmp_path, monkeypatch):
    other = ThreadingHTTPServer(("127.0.0.1", 0), _Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    taken = other.server_address[1]
    chosen = sample.free_port
    ports = iter([taken])
    monkeypatch.setattr(sample, "free_port", lambda: next(ports, None) or chosen())
    (tmp_path / "prometheus.yml").write_text("global: {}\n")
    data = tmp_path / "data"
    try:
        process, url, log = sample.start(binary("prometheus"), [f"--config.file={tmp_path / 'prometheus.yml'}",
                                                                 f"--storage.tsdb.path={data}"],
                                         tmp_path / "prometheus.log")
    finally:
        other.shutdown()
    try:
        import requests

        assert not url.endswith(f":{taken}"), url
        flags = requests.get(f"{url}/api/v1/status/flags", timeout=10).json()["data"]
        assert flags["storage.tsdb.path"] == str(data)
    finally:
        process.terminate()
        process.wait()
        log.close()

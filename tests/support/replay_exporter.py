"""A replay DCGM exporter: serves recorded /metrics payloads over real HTTP on 127.0.0.1."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler

from tests.support.loopback import LoopbackServer


class ReplayExporter(LoopbackServer):
    """One HTTP server per payload; `payload` may be replaced while it runs, or be a function
    called on every scrape (counters that grow). `counted`: the function is given the scrape's own number per
    scraper (0, 1, 2, ... in the order the requests arrive), a scraper told by the request's query string (a scrape
    job's `params`): several Prometheus servers scraping one exporter each see their own scrapes in turn."""

    def __init__(self, payload, counted: bool = False):
        self.payload = payload
        self.scrapes = 0
        self.counted = counted
        self._scrapers: dict[str, int] = {}
        exporter = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                with lock:
                    exporter.scrapes += 1
                    scraper = self.path.partition("?")[2]
                    number = exporter._scrapers[scraper] = exporter._scrapers.get(scraper, -1) + 1
                if not callable(exporter.payload):
                    payload = exporter.payload
                else:
                    payload = exporter.payload(number) if exporter.counted else exporter.payload()
                body = payload.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._serve(Handler)

    @property
    def url(self) -> str:
        return f"http://{self.address}/metrics"


def relabel_payload(text: str, *, pod: str | None = None, hostname: str | None = None,
                    extra: str = "", uuid_suffix: str | None = None) -> str:
    """A payload with the workload pod and node renamed (one exporter per node); `uuid_suffix`: each GPU's UUID
    made that node's own (a recorded payload served from several nodes would otherwise name one GPU on all of them,
    which a real fleet never does: a GPU is one GPU by its UUID)."""
    import re

    if pod is not None:
        text = re.sub(r'pod="[^"]*"', f'pod="{pod}"', text)
    if hostname is not None:
        text = re.sub(r'([Hh]ostname)="[^"]*"', rf'\1="{hostname}"', text)
    if uuid_suffix is not None:
        text = re.sub(r'UUID="([^"]*)"', rf'UUID="\1-{uuid_suffix}"', text)
    return text.rstrip("\n") + "\n" + extra

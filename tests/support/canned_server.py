"""A loopback HTTP server that answers every request the same way: a canned answer (any status, type
and body, valid or not), silence (it reads the request and never answers), or a drip (it sends the
headers, then one byte of body at a time, forever). For odd answers and deadlines. `routes` answer the
requests whose path (query string included, as sent) holds a given text otherwise: (status, body), the body
text or made from the request's path (an answer that depends on what was asked). `redirects` answer a request for
exactly that path with a `redirect_status` (307) to the URL given; a method in `refused` is answered 405."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Callable, Union

from tests.support.loopback import LoopbackServer


Route = tuple[int, Union[str, Callable[[str], str]]]


class CannedServer(LoopbackServer):
    def __init__(self, body: bytes | str = b"", status: int = 200, content_type: str = "application/json",
                 mode: str = "answer", drip_every: float = 0.2):
        self.body = body.encode() if isinstance(body, str) else body
        self.routes: dict[str, Route] = {}
        self.redirects: dict[str, str] = {}
        self.redirect_status = 307
        self.refused: set[str] = set()
        self.status, self.content_type, self.mode, self.drip_every = status, content_type, mode, drip_every
        self.released = threading.Event()
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.connections: set[tuple[str, int]] = set()  # the client's address of each connection a request came over
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("latin-1") if length else ""
                form = body and self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded")
                sent = f"{self.path}?{body}" if form else self.path  # a long query is POSTed, form-encoded
                server.requests.append((self.command, sent, dict(self.headers)))
                server.connections.add(self.client_address)
                if server.mode == "silent":
                    server.released.wait()
                    return
                if self.command in server.refused:
                    self.send_response(405)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path in server.redirects:
                    self.send_response(server.redirect_status)
                    self.send_header("Location", server.redirects[self.path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status, body = server.answer(sent)
                self.send_response(status)
                self.send_header("Content-Type", server.content_type)
                if server.mode == "drip":
                    self.send_header("Content-Length", str(10**9))
                    self.end_headers()
                    try:
                        while not server.released.is_set():
                            self.wfile.write(b"#")
                            self.wfile.flush()
                            time.sleep(server.drip_every)
                    except OSError:  # the client gave up: what a drip is for
                        pass
                    return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _handle  # noqa: N815

        self._serve(Handler)
        self.url = f"http://{self.address}"

    def answer(self, path: str) -> tuple[int, bytes]:
        for text, (status, body) in self.routes.items():
            if text in path:
                return status, (body if isinstance(body, str) else body(path)).encode()
        return self.status, self.body

    def __exit__(self, *exc) -> None:
        self.released.set()
        super().__exit__(*exc)

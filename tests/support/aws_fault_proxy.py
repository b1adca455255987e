"""A loopback proxy in front of moto's server that injects faults into AWS JSON-protocol calls.

boto3 reaches it with endpoint_url; it forwards each request to moto and, for the operations a
rule names (from the X-Amz-Target header: DescribeAlarms, PutMetricAlarm, GetResources, ...),
answers instead with an HTTP status, a body that is not an API answer, a connection reset before
or after moto processed the request, a truncated body, or a rewritten answer; a rule may also run
a function first (another publisher, a console edit). It logs every operation it saw.
"""

from __future__ import annotations

import http.client
import json
import socket
import struct
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable
from urllib.parse import urlsplit

from tests.support.loopback import LoopbackServer

THROTTLED = (400, {"__type": "Throttling", "message": "Rate exceeded"})
UNAVAILABLE = (503, {"__type": "ServiceUnavailable", "message": "Service Unavailable"})
INTERNAL = (500, {"__type": "InternalFailure", "message": "internal failure"})
WRITES = ("PutDashboard", "PutMetricAlarm", "DeleteAlarms", "TagResource", "UntagResource", "DeleteDashboards")


@dataclass
class Fault:
    """What to do with the next `times` calls of `operation` (None: every call)."""

    operation: str
    kind: str  # status | body | reset-before | reset-after | truncate | rewrite | before
    times: int | None = 1
    status: int = 200
    body: Any = None  # bytes for `body`, a JSON-able value for `status`
    rewrite: Callable[[dict], dict] | None = None
    action: Callable[[], None] | None = None


class AwsFaultProxy(LoopbackServer):
    def __init__(self, upstream: str):
        self.upstream = urlsplit(upstream)
        self.faults: list[Fault] = []
        self.log: list[str] = []  # operations as they reached the proxy
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                proxy._handle(self)

            do_GET = do_POST

        self._serve(Handler)
        self.server.handle_error = lambda request, address: None  # resets are on purpose

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def inject(self, *faults: Fault) -> None:
        with self.lock:
            self.faults.extend(faults)

    def clear(self) -> None:
        with self.lock:
            self.faults.clear()
            self.log.clear()

    def writes(self) -> list[str]:
        return [op for op in self.log if op in WRITES]

    def _take(self, operation: str) -> Fault | None:
        with self.lock:
            self.log.append(operation)
            for fault in self.faults:
                if fault.operation == operation and (fault.times is None or fault.times > 0):
                    if fault.times is not None:
                        fault.times -= 1
                    return fault
        return None

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=30)
        try:
            headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("connection", "host")}
            connection.request(handler.command, handler.path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        operation = (handler.headers.get("X-Amz-Target") or "").rsplit(".", 1)[-1] or handler.path
        fault = self._take(operation)
        kind = fault.kind if fault else None
        if kind == "before" and fault.action:
            fault.action()
        if kind == "reset-before":
            return _reset(handler)
        if kind == "status":
            return _send(handler, fault.status, [], json.dumps(fault.body).encode())
        if kind == "body":
            return _send(handler, 200, [], fault.body)
        status, headers, answer = self._forward(handler, body)
        if kind == "reset-after":
            return _reset(handler)
        if kind == "rewrite" and fault.rewrite:
            answer = json.dumps(fault.rewrite(json.loads(answer or b"{}"))).encode()
        if kind == "truncate":
            return _send(handler, status, headers, answer, cut=max(1, len(answer) // 2))
        _send(handler, status, headers, answer)


def _send(handler: BaseHTTPRequestHandler, status: int, headers: list[tuple[str, str]], body: bytes,
          cut: int | None = None) -> None:
    handler.send_response(status)
    skipped = ("content-length", "transfer-encoding", "connection", "server", "date")
    for key, value in headers:
        if key.lower() not in skipped:
            handler.send_header(key, value)
    handler.send_header("Content-Type", dict((k.lower(), v) for k, v in headers).get("content-type", "text"))
    handler.send_header("Content-Length", str(len(body)))
    if cut is not None:
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(body[:cut])
        handler.wfile.flush()
        handler.close_connection = True
        return
    handler.end_headers()
    handler.wfile.write(body)


def _reset(handler: BaseHTTPRequestHandler) -> None:
    """Drop the connection with a TCP reset and no answer."""
    handler.close_connection = True
    try:
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.connection.close()
    except OSError:
        pass

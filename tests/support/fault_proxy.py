"""A fault-injecting HTTP proxy on 127.0.0.1, in front of any test server (Grafana's, moto, ...).

Every request is forwarded to the upstream server unless a rule matches it; a rule then answers
for the server or spoils its answer, a given number of times:

  status        answer `status` (with `headers`, `body`) without forwarding: 5xx, 429, a 200 HTML page;
                with a `callback`, run it first (e.g. a person deleting the object just before)
  reset-before  drop the connection without forwarding: the request was never processed
  reset-after   forward (the server processes the request), then drop the connection unanswered; with a
                `callback`, run it between the two (e.g. a signal while the answer is on its way)
  truncate      forward, then send the headers and half the body and drop the connection
  body          forward, then answer 200 with `body` instead of the server's answer
  drip          forward, then send the answer `rate` bytes a second (until the proxy stops)
  before        run `callback()` (e.g. a person saving in the UI), then forward
  rewrite       forward, then answer with `callback(body)` instead of the server's body
  gateway       forward (the server processes the request), then answer `status` (a 502, 503 or 504: a gateway
                whose wait for the server's answer failed) with `body` instead of the server's answer

A rule matches on method, a regex searched in the path, and optionally a regex searched in the decoded query
string and form body (`query`: one PromQL query among a server's), bytes the request body contains, or the AWS operation (`operation`: the name after the dot in an AWS JSON call's
X-Amz-Target header, such as DescribeAlarms), or the AWS Region the request is signed for (`region`,
read from its Authorization header's credential scope); `skip` lets that many matching requests through
first. `operations` lists the AWS operations that reached the proxy, in order.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import unquote_plus, urlsplit

from tests.support.loopback import KeepAliveHandler, LoopbackServer

# Not passed on; Host is kept as the client sent it (a signed request, such as boto3's, covers it).
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
              "content-length"}
ACTIONS = ("status", "reset-before", "reset-after", "truncate", "body", "drip", "before", "rewrite", "gateway")
HTML = b"<!doctype html><html><head><title>Sign in</title></head><body>Please sign in</body></html>"


@dataclass
class Rule:
    path: str
    action: str = "status"
    method: str | None = None
    times: int = 1
    status: int = 503
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    contains: bytes | None = None
    skip: int = 0
    rate: float = 5.0
    callback: Callable[[], None] | None = None
    operation: str | None = None
    region: str | None = None
    query: str | None = None

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown fault action {self.action!r}")

    def matches(self, method: str, path: str, body: bytes, operation: str = "", region: str = "",
                query: str = "") -> bool:
        return (self.times > 0 and self.method in (None, method) and re.search(self.path, path) is not None
                and (self.contains is None or self.contains in body)
                and (self.query is None or re.search(self.query, query) is not None)
                and self.operation in (None, operation) and self.region in (None, region))


@dataclass
class Answer:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes


class FaultProxy(LoopbackServer):
    def __init__(self, upstream: str):
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port)
        self.rules: list[Rule] = []
        self.log: list[tuple[str, str, str]] = []  # (method, path, what the proxy did)
        self.operations: list[str] = []  # AWS operations, from X-Amz-Target
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        proxy = self

        class Handler(KeepAliveHandler):
            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = urlsplit(self.path).path
                query = unquote_plus(urlsplit(self.path).query + "&" + body.decode("utf-8", "replace"))
                operation = (self.headers.get("X-Amz-Target") or "").rpartition(".")[2]
                if operation:
                    with proxy.lock:
                        proxy.operations.append(operation)
                scope = re.search(r"Credential=[^/]*/[^/]*/([^/]+)/", self.headers.get("Authorization") or "")
                rule = proxy._take(self.command, path, body, operation, scope.group(1) if scope else "", query)
                action = rule.action if rule else "forward"
                with proxy.lock:
                    proxy.log.append((self.command, path, action))
                if action == "gateway":
                    proxy._forward(self, self.command, self.path, self.headers, body)
                if action in ("status", "gateway"):
                    if rule.callback is not None:  # something happens just before the server answers
                        rule.callback()
                    data = rule.body if rule.body is not None else json.dumps({"message": "injected fault"}).encode()
                    headers = {"Content-Type": "application/json", **rule.headers}
                    return self._answer(Answer(rule.status, "", list(headers.items()), data))
                if action == "reset-before":
                    return self._reset()
                if action == "before":
                    rule.callback()
                answer = proxy._forward(self, self.command, self.path, self.headers, body)
                if action == "reset-after":
                    if rule.callback is not None:
                        rule.callback()
                    return self._reset()
                if action == "truncate":
                    self._head(answer, len(answer.body))
                    self.wfile.write(answer.body[: len(answer.body) // 2])
                    self.wfile.flush()
                    return self._reset()
                if action == "body":
                    content = rule.headers.get("Content-Type", "text/html; charset=utf-8")
                    return self._answer(Answer(200, "OK", [("Content-Type", content)], rule.body or HTML))
                if action == "drip":
                    return self._drip(answer, rule.rate)
                if action == "rewrite":
                    answer.body = rule.callback(answer.body)
                self._answer(answer)

            def _head(self, answer: Answer, length: int) -> None:
                self.send_response(answer.status, answer.reason or None)
                for name, value in answer.headers:
                    if name.lower() not in HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(length))
                self.end_headers()

            def _answer(self, answer: Answer) -> None:
                self._head(answer, len(answer.body))
                self.wfile.write(answer.body)

            def _drip(self, answer: Answer, rate: float) -> None:
                self._head(answer, len(answer.body))
                self.wfile.flush()
                for byte in answer.body:
                    if proxy.stopping.wait(1.0 / rate):
                        break
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:
                        break
                self.close_connection = True

            def _reset(self) -> None:
                # Linger 0: closing sends a reset, as a crashed peer or a cut network does.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True

            def finish(self):
                super().finish()
                if getattr(self, "upstream", None) is not None:
                    self.upstream.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _handle  # noqa: N815

        self._serve(Handler)
        self.url = f"http://{self.address}"

    def inject(self, *rules: Rule) -> None:
        with self.lock:
            self.rules.extend(rules)

    def clear(self) -> None:
        """No more faults: everything is forwarded."""
        with self.lock:
            self.rules.clear()

    def faults(self) -> list[tuple[str, str, str]]:
        """What the proxy did other than forwarding."""
        return [entry for entry in self.log if entry[2] != "forward"]

    def _take(self, method: str, path: str, body: bytes, operation: str = "", region: str = "",
              query: str = "") -> Rule | None:
        with self.lock:
            for rule in self.rules:
                if rule.matches(method, path, body, operation, region, query):
                    if rule.skip > 0:
                        rule.skip -= 1
                        return None
                    rule.times -= 1
                    return rule
        return None

    def _forward(self, handler, method: str, target: str, headers, body: bytes) -> Answer:
        """Send the request upstream on the connection this client connection keeps to the server (opened at
        its first request, closed when either end closes or fails)."""
        connection = getattr(handler, "upstream", None)
        if connection is None:
            connection = handler.upstream = http.client.HTTPConnection(*self.upstream, timeout=30)
        try:
            forwarded = {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}
            connection.request(method, target, body=body or None, headers=forwarded)
            response = connection.getresponse()
            answer = Answer(response.status, response.reason, response.getheaders(), response.read())
        except BaseException:
            connection.close()
            handler.upstream = None
            raise
        if response.will_close:
            connection.close()
            handler.upstream = None
        return answer

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        super().__exit__(*exc)


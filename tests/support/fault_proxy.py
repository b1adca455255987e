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
  rewrite       forward, then answer with `callback(body)` instead of the server's body, and `headers` instead of
                the server's of those names (a Date: the instant the server says it answered)
  gateway       forward (the server processes the request), then answer `status` (a 502, 503 or 504: a gateway
                whose wait for the server's answer failed) with `body` instead of the server's answer

A rule matches on method, a regex searched in the path, and optionally a regex searched in the decoded query
string and form body (`query`: one PromQL query among a server's), bytes the request body contains, or the AWS operation (`operation`: the name after the dot in an AWS JSON call's
X-Amz-Target header, such as DescribeAlarms), or the AWS Region the request is signed for (`region`,
read from its Authorization header's credential scope); `skip` lets that many matching requests through
first. `operations` lists the AWS operations that reached the proxy, in order.

In front of a moto server running in this process (tests/support/moto_server.py), botocore's requests from this
process are answered in the caller's thread, as the proxy answers them over HTTP (the same rules, log and
headers), except those a rule breaks the connection of (reset-before, reset-after, truncate, drip): those, and
every request from another process, reach the proxy over a socket. Its forwards are answered by that server in
the proxy's thread.
"""

from __future__ import annotations

import email.utils
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
CONNECTION_FAULTS = ("reset-before", "reset-after", "truncate", "drip")  # what a request must reach over a socket for
_OVER_HTTP = object()
_SERVER = KeepAliveHandler.server_version + " " + KeepAliveHandler.sys_version  # the Server header it answers with
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


def _rewrite(answer: Answer, rule: Rule) -> None:
    """A rewrite rule's answer: its callback's body, its headers in place of the server's of those names."""
    answer.body = rule.callback(answer.body)
    replaced = {name.lower() for name in rule.headers}
    answer.headers = [(n, v) for n, v in answer.headers if n.lower() not in replaced] + list(rule.headers.items())


class FaultProxy(LoopbackServer):
    def __init__(self, upstream: str, port: int = 0):
        """A proxy in front of `upstream`, on `port` when it is free (0, or taken: a port the OS chooses)."""
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname, parts.port)
        self.rules: list[Rule] = []
        self.log: list[tuple[str, str, str]] = []  # (method, path, what the proxy did)
        self.operations: list[str] = []  # AWS operations, from X-Amz-Target
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.dripped = 0  # answers a drip rule sent whole
        proxy = self

        class Handler(KeepAliveHandler):
            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                rule, action = proxy._request(self.command, self.path, self.headers, body)
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
                    _rewrite(answer, rule)
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
                else:
                    with proxy.lock:
                        proxy.dripped += 1
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

        self._serve(Handler, port)
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

    def _request(self, method: str, target: str, headers, body: bytes,
                 in_process: bool = False) -> tuple[Rule | None, str] | None:
        """Record a request (its AWS operation, and in the log what the proxy does with it) and take the rule
        that applies to it: (the rule or None, the action). With `in_process`, None when that rule breaks the
        connection: nothing is recorded or taken, the request is to be sent over HTTP."""
        path = urlsplit(target).path
        query = unquote_plus(urlsplit(target).query + "&" + body.decode("utf-8", "replace"))
        operation = (headers.get("X-Amz-Target") or "").rpartition(".")[2]
        scope = re.search(r"Credential=[^/]*/[^/]*/([^/]+)/", headers.get("Authorization") or "")
        with self.lock:
            rule = self._take(method, path, body, operation, scope.group(1) if scope else "", query,
                              keep=CONNECTION_FAULTS if in_process else ())
            if rule is _OVER_HTTP:
                return None
            if operation:
                self.operations.append(operation)
            action = rule.action if rule else "forward"
            self.log.append((method, path, action))
        return rule, action

    def _take(self, method: str, path: str, body: bytes, operation: str = "", region: str = "",
              query: str = "", keep: tuple[str, ...] = ()) -> Rule | None | object:
        """The rule that applies to a request, taken (called with the lock held); _OVER_HTTP, not taken, when
        its action is one of `keep`."""
        for rule in self.rules:
            if rule.matches(method, path, body, operation, region, query):
                if rule.skip > 0:
                    rule.skip -= 1
                    return None
                if rule.action in keep:
                    return _OVER_HTTP
                rule.times -= 1
                return rule
        return None

    def answer(self, request, parts):
        """botocore's request answered in the caller's thread, as the proxy answers it over HTTP (see
        tests/support/moto_server.py), when the upstream moto server runs in this process; None (it is sent over
        HTTP) when the rule that applies breaks the connection (reset, truncate, drip): that needs a socket."""
        from tests.support.moto_server import as_sent, received

        answered = self._answered(*as_sent(request, parts))
        return None if answered is None else received(request, answered.status, answered.headers, answered.body)

    def answer_in_process(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
                          ) -> tuple[int, str, list[tuple[str, str]], bytes] | None:
        """requests' request (tests/support/grafana_server.as_sent) answered in the caller's thread, as the proxy
        answers it over HTTP, when the upstream Grafana test server answers in this process; None (it is sent over
        HTTP) when the rule that applies breaks the connection, or the server would not answer it in-process."""
        if not self._grafana().answers_as_http(method, target):
            return None
        answered = self._answered(method, target, headers, body)
        if answered is None:
            return None
        from http.server import BaseHTTPRequestHandler

        # the reason an answer of the proxy's own carries: the one http.server writes for its status
        reason = answered.reason or BaseHTTPRequestHandler.responses.get(answered.status, ("",))[0]
        return answered.status, reason, answered.headers, answered.body

    def _answered(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> Answer | None:
        """What the proxy answers a request in the caller's thread, its headers as its HTTP handler sends them; None
        when the rule that applies breaks the connection (nothing is recorded or taken: it is for HTTP)."""
        found = self._request(method, target, _Headers(headers), body, in_process=True)
        if found is None:
            return None
        rule, action = found
        if action == "gateway":
            self._forward(None, method, target, headers, body)
        if action in ("status", "gateway"):
            if rule.callback is not None:
                rule.callback()
            data = rule.body if rule.body is not None else json.dumps({"message": "injected fault"}).encode()
            answer = Answer(rule.status, "", list({"Content-Type": "application/json", **rule.headers}.items()), data)
        elif action == "body":  # forwarded first, as over HTTP: the server acts, its answer is replaced
            self._forward(None, method, target, headers, body)
            content = rule.headers.get("Content-Type", "text/html; charset=utf-8")
            answer = Answer(200, "OK", [("Content-Type", content)], rule.body or HTML)
        else:
            if action == "before":
                rule.callback()
            answer = self._forward(None, method, target, headers, body)
            if action == "rewrite":
                _rewrite(answer, rule)
        dated = any(name.lower() == "date" for name, _ in answer.headers)
        sent = [("Server", _SERVER), *(() if dated else [("Date", email.utils.formatdate(usegmt=True))]),
                *((name, value) for name, value in answer.headers if name.lower() not in HOP_BY_HOP),
                ("Content-Length", str(len(answer.body)))]
        return Answer(answer.status, answer.reason, sent, answer.body)

    def _forward(self, handler, method: str, target: str, headers, body: bytes) -> Answer:
        """Send the request upstream on the connection this client connection keeps to the server (opened at
        its first request, closed when either end closes or fails)."""
        answered = self._answered_in_process(method, target, headers, body)
        if answered is not None:
            return answered
        if handler is None:  # (only asked in this process when the upstream answers in it)
            raise RuntimeError("no in-process upstream to forward to")
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

    def _grafana(self):
        """The upstream Grafana test server when it answers in this process (else None)."""
        from tests.support import grafana_server

        return grafana_server.in_process_server(f"{self.upstream[0]}:{self.upstream[1]}")

    def _answered_in_process(self, method: str, target: str, headers, body: bytes) -> Answer | None:
        """The answer of an upstream moto or Grafana test server running in this process (tests/support/moto_server.py,
        grafana_server.py), asked in this thread: what its HTTP handler answers the same request, without a second
        connection and its threads. None for any other upstream, or a request the server must answer over HTTP: the
        request goes over HTTP."""
        from tests.support.moto_server import in_process_server

        server = in_process_server(f"{self.upstream[0]}:{self.upstream[1]}")
        pairs = headers.items() if hasattr(headers, "items") else headers
        if server is None:
            grafana = self._grafana()
            auth = next((v for k, v in pairs if k.lower() == "authorization"), "")
            answered = None if grafana is None else grafana.answer_as_http(method, target, body, auth)
            return None if answered is None else Answer(*answered)
        forwarded = [(k, v) for k, v in pairs if k.lower() not in HOP_BY_HOP]
        status, reason, answered, data = server.answer_as_http(method, target, forwarded, body)
        return Answer(status, reason, answered, data)

    def __enter__(self) -> "FaultProxy":
        from tests.support import grafana_server
        from tests.support.moto_server import in_process_server, serve_in_process

        super().__enter__()
        if in_process_server(f"{self.upstream[0]}:{self.upstream[1]}") is not None:
            serve_in_process(self.address, self)  # botocore's requests to it: see answer()
        elif self._grafana() is not None:
            grafana_server.serve_in_process(self.address, self)  # requests' calls to it: see answer_in_process()
        return self

    def __exit__(self, *exc) -> None:
        from tests.support import grafana_server
        from tests.support.moto_server import stop_serving_in_process

        stop_serving_in_process(self.address)
        grafana_server.stop_serving_in_process(self.address)
        self.stopping.set()
        super().__exit__(*exc)


class _Headers:
    """A request's headers as (name, value) pairs, read by name in any case as the HTTP handler reads them."""

    def __init__(self, pairs: list[tuple[str, str]]):
        self.pairs = pairs
        self.named = {name.lower(): value for name, value in pairs}

    def get(self, name: str, default=None):
        return self.named.get(name.lower(), default)

    def items(self):
        return self.pairs


"""A server that refuses the first connection and then comes up answering 503 for a while (Grafana or an endpoint
restarting behind its load balancer): the short retry budget of a refused connection holds only while connections
are refused in a row; once the server answers, the call has its full retries again and succeeds. Waits run on a fake
clock; the server starts listening during the first wait."""

from __future__ import annotations

import socket
import threading

from generator.clients.cloudwatch import CloudWatch
from generator.clients.deadline import Deadline
from generator.clients.grafana import GrafanaClient
from tests.support.clock import FakeClock
from tests.support.fault_proxy import FaultProxy, Rule
from tests.support.grafana_server import ADMIN, GrafanaTestServer
from tests.support.moto_server import FAKE_CREDENTIALS, MotoServer


class Front:
    """A port that refuses connections until `up()`, then passes each connection through to `upstream`."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))  # bound, not listening: a connect is refused
        self.port = self.sock.getsockname()[1]
        self.upstream: tuple[str, int] | None = None

    def up(self, upstream: str) -> None:
        host, port = upstream.rsplit("/", 1)[-1].split(":")
        self.upstream = (host, int(port))
        self.sock.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()

    def close(self) -> None:
        self.sock.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class ComesUp(FakeClock):
    """The server behind `front` starts listening during the first wait."""

    def __init__(self, front: Front, upstream: str) -> None:
        super().__init__()
        self.front, self.upstream = front, upstream

    def sleep(self, seconds: float) -> None:
        if not self.slept:
            self.front.up(self.upstream)
        super().sleep(seconds)


def test_grafana_refused_then_503_while_it_starts_gets_its_full_retries(reference):
    front = Front()
    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana, \
            FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=r"^/api/folders/gpudash$", times=3, status=503))
        clock = ComesUp(front, proxy.url)
        client = GrafanaClient(f"http://127.0.0.1:{front.port}", token=ADMIN,
                               deadline=Deadline(60, clock=clock))
        try:
            assert client.folder("gpudash") is None  # answered at last: there is no such folder
        finally:
            front.close()
    assert clock.slept == [0.5, 1.0, 2.0, 4.0]  # refused once, then three 503s, then the answer


def test_cloudwatch_refused_then_503_while_it_starts_gets_its_full_attempts(monkeypatch):
    for variable, value in FAKE_CREDENTIALS.items():
        monkeypatch.setenv(variable, value)
    front = Front()
    with MotoServer() as moto, FaultProxy(moto.url) as proxy:
        proxy.inject(Rule(path=r".*", operation="DescribeAlarms", times=3, status=503))
        clock = ComesUp(front, proxy.url)
        cloudwatch = CloudWatch(endpoint_url=f"http://127.0.0.1:{front.port}", deadline=Deadline(60, clock=clock))
        try:
            answer = cloudwatch.call("us-east-1", "DescribeAlarms", "reading CloudWatch alarms")
        finally:
            front.close()
    assert isinstance(answer["MetricAlarms"], list) and len(clock.slept) == 4, clock.slept  # (moto's state is the
    # process's: alarms other tests of this worker made may be listed)

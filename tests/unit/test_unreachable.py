"""A Grafana or CloudWatch that cannot be reached: the error comes at once when no wait can help (a host name that
does not resolve), after one short retry for a refused connection or a DNS server that did not answer, and after
the full backoff only for failures a wait may cure (timeouts, resets, 5xx). Waits run on a fake clock."""

from __future__ import annotations

import socket
import time

import pytest

from generator.clients.deadline import Deadline
from generator.errors import RemoteError
from tests.support.clock import FakeClock

NO_SUCH_HOST = "grafana.example.invalid"


@pytest.fixture
def resolver(monkeypatch):
    """The resolver answers as DNS does for a name that does not exist (EAI_NONAME), or, once told, as when the DNS
    server does not answer (EAI_AGAIN); every other name resolves as usual."""
    real = socket.getaddrinfo
    errors = {"code": socket.EAI_NONAME}

    def getaddrinfo(host, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".invalid"):
            raise socket.gaierror(errors["code"], "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return errors


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _grafana(url: str, clock: FakeClock):
    from generator.clients.grafana import GrafanaClient

    return GrafanaClient(url, token="glsa_test", deadline=Deadline(60, clock=clock))


@pytest.mark.parametrize("case, slept, says", [
    ("no such host", [], "the host name does not resolve, after 1 attempt)"),
    ("DNS server silent", [0.5], "the DNS lookup of the host name failed, after 2 attempts)"),
    ("refused", [0.5], "connection refused, after 2 attempts)"),
])
def test_grafana_unreachable_fails_without_waiting_out_the_backoff(resolver, case, slept, says):
    clock = FakeClock()
    if case == "DNS server silent":
        resolver["code"] = socket.EAI_AGAIN
    url = f"http://127.0.0.1:{_closed_port()}" if case == "refused" else f"http://{NO_SUCH_HOST}:3000"
    started = time.monotonic()
    with pytest.raises(RemoteError) as failed:
        _grafana(url, clock).folder("gpudash")
    assert time.monotonic() - started < 10 and clock.slept == slept  # waits are the fake clock's; 10 s: a hang detector
    assert says in failed.value.what, failed.value.what
    if case == "no such host":
        assert failed.value.hint == "check the host name in GRAFANA_URL"


def test_grafana_keeps_its_full_backoff_for_a_connection_reset():
    """A server that takes the connection and closes it without answering: the request may have reached Grafana,
    and a wait may cure it (a restart, an overloaded proxy): all four retries."""
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def close_each():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.close()

    threading.Thread(target=close_each, daemon=True).start()
    clock = FakeClock()
    try:
        with pytest.raises(RemoteError) as failed:
            _grafana(f"http://127.0.0.1:{server.getsockname()[1]}", clock).folder("gpudash")
    finally:
        server.close()
    assert clock.slept == [0.5, 1.0, 2.0, 4.0] and "after 5 attempts" in failed.value.what


@pytest.mark.parametrize("case, attempts", [("no such host", 1), ("refused", 2)])
def test_cloudwatch_unreachable_fails_without_waiting_out_the_backoff(resolver, monkeypatch, case, attempts):
    from generator.clients.cloudwatch import CloudWatch

    for variable, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                            ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(variable, value)
    clock = FakeClock()
    endpoint = f"http://127.0.0.1:{_closed_port()}" if case == "refused" else "http://monitoring.example.invalid"
    cloudwatch = CloudWatch(endpoint_url=endpoint, deadline=Deadline(60, clock=clock))
    started = time.monotonic()
    with pytest.raises(RemoteError) as failed:
        cloudwatch.call("us-east-1", "DescribeAlarms", "reading CloudWatch alarms")
    assert time.monotonic() - started < 10  # waits are the fake clock's; 10 s: a hang detector
    assert len(clock.slept) == attempts - 1 and all(wait <= 0.5 for wait in clock.slept), clock.slept
    assert f"after {attempts} attempt" in failed.value.what
    assert ("the host name does not resolve" if case == "no such host" else "connection refused") in failed.value.what


@pytest.mark.parametrize("given", ["--endpoint-url", "AWS_ENDPOINT_URL"])
def test_verify_s_fix_names_the_endpoint_as_it_was_given(cli, monkeypatch, given):
    import json

    for variable, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(variable, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    flag = ("--endpoint-url", endpoint) if given == "--endpoint-url" else ()
    code, stdout, stderr = cli("verify", "--skip", "kube", "--skip", "exporter", "--skip", "prometheus", *flag,
                               "--output", "json", env={} if flag else {"AWS_ENDPOINT_URL": endpoint})
    fixes = {check["fix"] for check in json.loads(stdout)["checks"]}
    assert code == 1 and fixes == {f"check the network, the Region (clusters[].region in the settings) and {given}; "
                                   f"run again"}, stderr

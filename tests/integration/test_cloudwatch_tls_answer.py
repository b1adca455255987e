"""A TLS error while CloudWatch's answer is read comes after the whole request went out: the write may have
happened, and is reported so, never as a request that was not sent."""

from __future__ import annotations

import os
import socket
import ssl
import threading

import pytest

from generator.errors import RemoteError
from tests.support.kube_discovery import certificate


@pytest.fixture
def endpoint_breaking_every_answer(monkeypatch):
    """An HTTPS endpoint that reads each request whole, then answers with a corrupt TLS record."""
    made = certificate()
    if made is None:
        pytest.skip("openssl is needed to serve TLS")
    cert, key, _ = made
    monkeypatch.setenv("AWS_CA_BUNDLE", str(cert))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    listener = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            try:
                tls = context.wrap_socket(raw, server_side=True)
                data = b""
                while b"\r\n\r\n" not in data:
                    data += tls.recv(65536)
                head, body = data.split(b"\r\n\r\n", 1)
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length"))
                while len(body) < length:
                    body += tls.recv(65536)
                received.append(body)  # the whole request arrived: CloudWatch would act on it
                plain = socket.socket(fileno=os.dup(tls.fileno()))
                plain.sendall(b"\x17\x03\x03\x00\x20" + os.urandom(32))  # a record that cannot be decrypted
                plain.close()
                tls.close()
            except (OSError, ssl.SSLError, StopIteration, ValueError):
                continue

    threading.Thread(target=serve, daemon=True).start()
    yield f"https://127.0.0.1:{listener.getsockname()[1]}", received
    listener.close()


def test_a_write_whose_answer_breaks_in_tls_says_it_may_have_happened(endpoint_breaking_every_answer):
    from generator.clients.cloudwatch import CloudWatch

    url, received = endpoint_breaking_every_answer
    client = CloudWatch(endpoint_url=url, max_attempts=2)
    with pytest.raises(RemoteError) as failure:
        client.call("us-east-1", "PutMetricAlarm", "alarm x", AlarmName="x", Namespace="N", MetricName="m",
                    Statistic="Maximum", Period=60, EvaluationPeriods=1, Threshold=1.0,
                    ComparisonOperator="GreaterThanThreshold")
    assert received, "the endpoint read no request"
    assert "may have happened" in failure.value.what, failure.value.what

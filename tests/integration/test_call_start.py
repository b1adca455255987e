"""A remote call the deadline (or a signal) stops is either never made or reported as maybe made.

Each call runs on a worker thread. Here that thread is held back from starting until the test lets it
go, so the caller's wait can end first, as it does on a loaded machine when the deadline comes before
the thread has run: the call it gave up on must never reach the server, even once the thread runs.
A call that had started is reported as one that may have happened. The clock never sleeps.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from generator.clients import deadline
from generator.clients.cloudwatch import CloudWatch
from generator.clients.deadline import Deadline, DeadlineExceeded
from generator.clients.grafana import GrafanaClient
from generator.errors import RemoteError
from tests.support.clock import FakeClock
from tests.support.grafana_server import ADMIN, GrafanaTestServer

ALARM = "gpudash-gpu-cluster-gpu-temp-high-warning"
DASHBOARD = {"uid": "gpudash-overview", "title": "GPU overview", "tags": ["gpudash"], "panels": []}


@pytest.fixture
def held(monkeypatch):
    """Worker threads the deadline starts wait until `release()`; returns the list of them."""
    threads: list[threading.Thread] = []

    class Held(threading.Thread):
        def start(self) -> None:
            threads.append(self)

    def release() -> None:
        for thread in threads:
            threading.Thread.start(thread)
        for thread in threads:
            thread.join(30)
            assert not thread.is_alive()

    # the threading module as it is, but for Thread: whatever else the deadline takes from it stays real
    monkeypatch.setattr(deadline, "threading", SimpleNamespace(**{**vars(threading), "Thread": Held}))
    return SimpleNamespace(threads=threads, release=release)


class Expires(FakeClock):
    """The deadline comes while the caller waits, before the worker has run (`before`), or once the call
    is over but its answer not yet seen (`after`: the worker runs to its end first)."""

    def __init__(self, held, when: str, then=None):
        super().__init__()
        self.held, self.when, self.then = held, when, then

    def wait(self, event, seconds):
        if self.then is not None:
            self.then()
        if self.when == "after":
            self.held.release()
        return False


@pytest.fixture
def grafana(reference):
    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as server:
        server.state.folders["gpudash"] = {"id": server.state.next_id, "uid": "gpudash", "title": "GPU monitoring"}
        server.state.next_id += 1
        yield server


def _save(grafana, clock):
    client = GrafanaClient(grafana.url, token=ADMIN, deadline=Deadline(60, clock=clock, command="push"))
    with pytest.raises(DeadlineExceeded) as stopped:
        client.save(dict(DASHBOARD), "gpudash", "a save")
    return str(stopped.value)


def test_a_grafana_save_given_up_on_before_its_thread_ran_is_never_sent(grafana, held):
    error = _save(grafana, Expires(held, "before"))
    held.release()  # the worker runs now, late
    assert grafana.writes() == [] and DASHBOARD["uid"] not in grafana.state.dashboards
    assert "may have happened" not in error and "deadline of 60 s" in error, error


def test_a_grafana_save_that_started_is_reported_as_may_have_happened(grafana, held):
    error = _save(grafana, Expires(held, "after"))
    assert DASHBOARD["uid"] in grafana.state.dashboards  # it did happen
    assert "the save was sent to Grafana and may have happened" in error, error


def test_no_call_starts_once_the_command_is_stopped(grafana, held):
    """SIGTERM arrives while the caller waits for a call whose thread has not run yet: it never runs."""
    limit = Deadline(60, clock=FakeClock(), command="push")
    client = GrafanaClient(grafana.url, token=ADMIN, deadline=limit)

    class Signalled(FakeClock):
        def wait(self, event, seconds):
            limit.interrupt("SIGTERM", 15)
            held.release()
            return event.wait(seconds)

    limit.clock = Signalled()
    with pytest.raises(DeadlineExceeded, match="stopped by SIGTERM; not attempted"):
        client.save(dict(DASHBOARD), "gpudash", "a save")
    assert grafana.writes() == [] and DASHBOARD["uid"] not in grafana.state.dashboards


def _put_alarm(clock) -> str:
    cloudwatch = CloudWatch(deadline=Deadline(60, clock=clock, command="apply"))
    with pytest.raises(DeadlineExceeded) as stopped:
        cloudwatch.call("us-east-1", "PutMetricAlarm", f"alarm {ALARM}", AlarmName=ALARM, Namespace="ContainerInsights",
                        MetricName="gpu_temp", Statistic="Maximum", Period=60, EvaluationPeriods=1, Threshold=80.0,
                        ComparisonOperator="GreaterThanThreshold")
    return str(stopped.value)


def _alarm_names(client) -> list[str]:
    return [alarm["AlarmName"] for alarm in client.describe_alarms()["MetricAlarms"]]


def test_a_cloudwatch_write_given_up_on_before_its_thread_ran_is_never_sent(aws, held):
    client, _ = aws
    error = _put_alarm(Expires(held, "before"))
    held.release()
    assert _alarm_names(client) == []
    assert "may have happened" not in error and "deadline of 60 s" in error, error


def test_a_cloudwatch_write_that_started_is_reported_as_may_have_happened(aws, held):
    client, _ = aws
    error = _put_alarm(Expires(held, "after"))
    assert _alarm_names(client) == [ALARM]
    assert "CloudWatch PutMetricAlarm was sent and may have happened" in error, error


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:  # bound, then closed: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_grafana_save_refused_was_never_sent():
    """Nothing listens: every attempt failed to connect and sent nothing (refused: retried once, 14c9e2d), so the
    failure says so, never that the save may have happened."""
    client = GrafanaClient(f"http://127.0.0.1:{_closed_port()}", token=ADMIN,
                           deadline=Deadline(5, clock=FakeClock(), command="push"))
    with pytest.raises(RemoteError) as stopped:
        client.save(dict(DASHBOARD), "gpudash", "a save")
    assert "cannot reach Grafana" in str(stopped.value) and "may have happened" not in str(stopped.value)
    assert client.sent.get("POST", 0) == 0


def test_a_cloudwatch_write_refused_was_never_sent(aws):
    """The same for CloudWatch: a connection refused sent nothing (nor does a TLS handshake that fails)."""
    cloudwatch = CloudWatch(endpoint_url=f"http://127.0.0.1:{_closed_port()}",
                            deadline=Deadline(5, clock=FakeClock(), command="apply"))
    with pytest.raises(RemoteError) as stopped:
        cloudwatch.call("us-east-1", "PutMetricAlarm", f"alarm {ALARM}", AlarmName=ALARM, Namespace="ContainerInsights",
                        MetricName="gpu_temp", Statistic="Maximum", Period=60, EvaluationPeriods=1, Threshold=80.0,
                        ComparisonOperator="GreaterThanThreshold")
    assert "may have happened" not in str(stopped.value), stopped.value
    assert not getattr(stopped.value, "write_lost", False)  # nothing to read back: it was not sent

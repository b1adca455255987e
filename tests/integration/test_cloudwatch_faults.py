"""CloudWatch faults between apply and moto (through the fault proxy): nothing foreign changes, no
console edit is lost, a rerun converges and a third run writes nothing."""

from __future__ import annotations

import json

import pytest

from tests.support.cloudwatch_world import (
    ALWAYS, EDITED, FOREIGN, alarms, edit_in_console, fault, foreign_alarm, fresh, writes)


FAULTS = {  # name: (operation, action, times, status, body)
    "5xx once": ("PutMetricAlarm", "status", 1, 503, {"__type": "ServiceUnavailable"}),
    "throttled": ("PutMetricAlarm", "status", 3, 400, {"__type": "Throttling", "message": "Rate exceeded"}),
    "reset before a write": ("PutMetricAlarm", "reset-before", 1, 200, None),
    "reset after a processed write": ("PutMetricAlarm", "reset-after", 1, 200, None),
    "reset after a processed tag write": ("TagResource", "reset-after", 1, 200, None),
    "truncated listing": ("DescribeAlarms", "truncate", 1, 200, None),
    "non-JSON listing once": ("DescribeAlarms", "body", 1, 200, b"<html>busy</html>"),
    "throttled tag read": ("GetResources", "status", 1, 400,
                           {"__type": "ThrottlingException", "message": "Rate exceeded"}),
    "reset after every write": ("PutMetricAlarm", "reset-after", ALWAYS, 200, None),
}


@pytest.mark.parametrize("name", list(FAULTS))
def test_faults_never_touch_foreign_or_edited_alarms_and_a_rerun_converges(proxied, published, project_dir, name):
    proxy, client, apply = proxied
    published()
    edit_in_console(client)
    foreign_alarm(client, FOREIGN.replace("xid-error", "row-remap-failure"))
    client.delete_alarms(AlarmNames=[FOREIGN])
    foreign_alarm(client)
    health, overview = "gpudash-gpu-cluster-health", "gpudash-gpu-cluster-overview"
    edited = json.loads(client.get_dashboard(DashboardName=health)["DashboardBody"])
    edited["widgets"][2]["properties"]["title"] = "renamed by hand"
    client.put_dashboard(DashboardName=health, DashboardBody=json.dumps(edited))
    client.put_dashboard(DashboardName=overview, DashboardBody=json.dumps({"widgets": [
        {"type": "text", "x": 0, "y": 0, "width": 6, "height": 2, "properties": {"markdown": "mine"}}]}))
    bodies = {n: client.get_dashboard(DashboardName=n)["DashboardBody"] for n in (health, overview)}
    # The new thresholds would change both dashboards and two alarms, one of them edited by hand.
    config = project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n"
                         "  pcie_replays_per_minute: 7\n")
    foreign_before = {n: a["MetricName"] for n, a in alarms(client).items() if a.get("MetricName") == "CPUUtilization"}
    fresh(proxy)
    operation, action, times, status, body = FAULTS[name]
    proxy.inject(fault(operation, action, times=times, status=status, body=body))
    code, report, stderr = apply("--config", str(config))
    persistent = times == ALWAYS and action != "reset-after"  # (writes made, answers lost: read back, done)
    assert code == (3 if persistent else 1), stderr
    assert "Traceback" not in stderr

    def untouched():
        live = alarms(client)
        assert {n: live[n].get("MetricName") for n in foreign_before} == foreign_before
        assert live[EDITED]["Threshold"] == 95.0  # the console edit is not lost
        assert {n: client.get_dashboard(DashboardName=n)["DashboardBody"] for n in bodies} == bodies

    untouched()
    fresh(proxy)
    code, report, _ = apply("--config", str(config))
    assert code == 1 and sorted(report["refused"]) == sorted([*foreign_before, EDITED, *bodies])
    untouched()
    fresh(proxy)
    code, report, _ = apply("--config", str(config))
    assert code == 1 and report["written"] == [] and writes(proxy) == []


def test_an_apply_stopped_by_sigterm_lists_what_it_wrote_and_a_rerun_converges(proxied):
    """CI cancels the job in the middle of an apply: the call under way finishes, no other write starts,
    every dashboard and alarm is listed as written or not, the exit code is 143, and a rerun converges."""
    import os
    import signal

    proxy, client, apply = proxied
    stop = fault("PutMetricAlarm", "before", callback=lambda: os.kill(os.getpid(), signal.SIGTERM))
    stop.skip = 3  # after three alarms are written
    proxy.inject(stop)
    code, report, stderr = apply()
    assert code == 143 and "stopped by SIGTERM:" in stderr and "Traceback" not in stderr, stderr
    written, failed = set(report["written"]), {f["name"] for f in report["failed"]}
    assert len(written) >= 3 and failed and not written & failed
    live = {a["AlarmName"] for a in client.describe_alarms()["MetricAlarms"]} | \
        {d["DashboardName"] for d in client.list_dashboards()["DashboardEntries"]}
    assert live <= written | failed  # nothing was written unlisted
    assert all("stopped by SIGTERM" in f["error"] for f in report["failed"]), report["failed"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    fresh(proxy)
    code, report, stderr = apply()
    assert code == 0 and set(report["written"]) <= failed and written.isdisjoint(report["written"]), stderr
    fresh(proxy)
    assert apply()[1]["written"] == []


def test_a_second_ctrl_c_stops_at_once_and_still_lists_what_was_written_and_what_was_under_way(proxied):
    """Ctrl-C twice while the fourth alarm is on its way: the second stops the apply at once. The apply reported
    nothing: "interrupted (Ctrl-C); nothing after this point was done", exit 130, with three dashboards and four
    alarms in CloudWatch. Now every object is listed: as written, or not written, or under way when it stopped (which
    may have happened); nothing in CloudWatch is left unlisted, and the exit is still 130."""
    from generator.clients.deadline import UNDER_WAY
    from tests.support.ctrl_c import sigint_handled, twice

    proxy, client, apply = proxied
    stop = fault("PutMetricAlarm", "before", callback=twice)
    stop.skip = 3  # after three alarms are written
    proxy.inject(stop)
    with sigint_handled():
        code, report, stderr = apply()
    assert code == 130 and "stopped by SIGINT:" in stderr and "Traceback" not in stderr, stderr
    written, failed = set(report["written"]), {f["name"]: f["error"] for f in report["failed"]}
    under_way = {name for name, error in failed.items() if error == UNDER_WAY}
    assert len(written) >= 3 and under_way and not written & set(failed), report
    assert f"{len(under_way)} under way when it stopped at once, which may have happened" in stderr, stderr
    maybe = _only_the_writes_on_their_way_may_have_happened(code, report, stderr)
    live = {a["AlarmName"] for a in client.describe_alarms()["MetricAlarms"]} | \
        {d["DashboardName"] for d in client.list_dashboards()["DashboardEntries"]}
    assert written <= live <= written | maybe  # nothing was written unlisted


def test_a_second_ctrl_c_lists_as_under_way_only_the_writes_on_their_way(proxied):
    """The same stop at the fourth alarm: one Region, so at most two writes were on their way (a dashboard's and that
    alarm's). Every object not yet written was listed under way, which may have happened: 9, where 1 was on its way
    and landed and 8 were never sent. Now only what a writer was writing is; the rest is not attempted."""
    from tests.support.ctrl_c import sigint_handled, twice

    proxy, _, apply = proxied
    stop = fault("PutMetricAlarm", "before", callback=twice)
    stop.skip = 3
    proxy.inject(stop)
    with sigint_handled():
        code, report, stderr = apply()
    _only_the_writes_on_their_way_may_have_happened(code, report, stderr)


def _only_the_writes_on_their_way_may_have_happened(code: int, report: dict, stderr: str) -> set[str]:
    """The apply stopped at once; at most two writes (a dashboard's, an alarm's) were on their way: each is listed
    under way, or, where its writer saw the first Ctrl-C land during it, in its writer's words as sent and perhaps
    made; every other object not written is not attempted. The names of those that may have happened."""
    from generator.clients.deadline import UNDER_WAY
    from generator.errors import MAY_HAVE_HAPPENED

    assert code == 130, stderr
    failed = {f["name"]: f["error"] for f in report["failed"]}
    under_way = {name for name, error in failed.items() if error == UNDER_WAY}
    maybe = under_way | {name for name, error in failed.items() if MAY_HAVE_HAPPENED in error}
    assert under_way and len(maybe) <= 2, sorted(maybe)
    assert all("not attempted" in error for name, error in failed.items() if name not in maybe), failed
    assert f"{len(failed) - len(maybe)} not written (listed as FAILED), {len(under_way)} under way" in stderr, stderr
    return maybe


def test_a_second_ctrl_c_lists_a_dashboard_whose_write_the_first_landed_in_as_perhaps_made(proxied):
    """The race the test above leaves to timing, held: the first Ctrl-C lands while the overview dashboard's write is
    on its way, the second while the fourth alarm's is. The dashboard's writer finishes the call under way and reads
    nothing more: it is listed as answered (or sent) and perhaps made, counted among those that may have happened,
    never as not attempted or written."""
    import os
    import signal
    import threading
    import time

    from tests.support.ctrl_c import sigint_handled

    proxy, client, apply = proxied
    held, first = threading.Event(), threading.Event()

    def dashboard_on_its_way() -> None:
        held.set()
        first.wait(30)

    def twice_once_the_dashboard_is_held() -> None:
        held.wait(30)
        os.kill(os.getpid(), signal.SIGINT)
        first.set()
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)

    overview = "gpudash-gpu-cluster-overview"
    stop = fault("PutMetricAlarm", "before", callback=twice_once_the_dashboard_is_held)
    stop.skip = 3
    proxy.inject(fault("PutDashboard", "before", callback=dashboard_on_its_way, naming=overview), stop)
    with sigint_handled():
        code, report, stderr = apply()
    assert overview in _only_the_writes_on_their_way_may_have_happened(code, report, stderr), report["failed"]
    live = {d["DashboardName"] for d in client.list_dashboards()["DashboardEntries"]}
    assert overview in live and overview not in report["written"]  # it landed; nothing read it back


def test_a_second_ctrl_c_does_not_wait_for_the_other_writers_call(proxied):
    """Ctrl-C twice at the fourth alarm while a dashboard's answer drips in: the apply ended 6.8 s after the second,
    when the dashboard's answer had dripped in whole (the Region's writers run in a thread pool whose shutdown waits
    for the calls under way). The second Ctrl-C now gives up on every call waited for, on every thread: the apply
    has ended while the dashboard's answer is still dripping in."""
    from tests.support.ctrl_c import sigint_handled, twice

    proxy, _, apply = proxied
    stopped: list[bool] = []

    def twice_noted() -> None:
        twice()
        stopped.append(True)

    slow = fault("PutDashboard", "drip")
    slow.skip = 1
    stop = fault("PutMetricAlarm", "before", callback=twice_noted)
    stop.skip = 3
    proxy.inject(slow, stop)
    with sigint_handled():
        code, _, stderr = apply()
    dripped = proxy.dripped
    assert code == 130 and stopped, stderr
    assert [action for *_, action in proxy.log].count("drip") == 1, proxy.log  # the dripping answer was under way
    assert dripped == 0, "the apply waited for the dripping answer to be sent whole"

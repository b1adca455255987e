"""`gpudash push --prune` through a fault-injecting proxy in front of the Grafana API test server.

Every case starts from the same live state: gpudash's folder; an owned dashboard to update, two to
create, an owned one no longer defined (pruned), one a person edited in the UI, a foreign dashboard
and a "Save as" copy that kept the gpudash tag. Each case asserts the exit code, that nothing
foreign changed and no human edit was lost, that a rerun without faults converges, and that a third
run writes nothing.
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import asdict

import pytest

from generator.artifacts import build
from generator.changes import FAILED, SKIPPED
from generator.project import load_project
from generator.desired import desired_from
from generator.targets import grafana_sync
from generator.clients import deadline
from generator.clients.grafana import GrafanaClient
from tests.support.fault_proxy import HTML, Rule
from tests.support.grafana_faults import (COPY, CREATED, EDITED, FOREIGN, RETIRED, SAVE,  # noqa: F401 (fixtures)
                                          SEARCH, UPDATED, assert_converges, assert_safe, build_dir, content_of,
                                          desired, gpudash_saved, grafana, proxy, run, snapshot)
from tests.support.grafana_server import ADMIN



def _html(status: int = 200) -> dict:
    return {"status": status, "body": HTML, "headers": {"Content-Type": "text/html"}}


def _json(body: bytes) -> dict:
    return {"status": 200, "body": body, "headers": {"Content-Type": "application/json"}}


CASES = {
    # name: (rules, exit code of the faulty run, uids it must report as failed)
    "5xx retried": ([Rule(SAVE, status=503, times=2)], 1, []),
    "5xx on every attempt": ([Rule(SAVE, status=500, times=5)], 3, ["gpudash-all-metrics"]),
    "429 with Retry-After": ([Rule(SAVE, status=429, headers={"Retry-After": "7"})], 1, []),
    "429 asking for an hour": ([Rule(SAVE, status=429, headers={"Retry-After": "3600"})], 3, ["gpudash-all-metrics"]),
    "reset before a write": ([Rule(SAVE, action="reset-before")], 1, []),
    "reset after a processed save": ([Rule(SAVE, action="reset-after")], 1, []),
    "reset after a processed delete": ([Rule(RETIRED + "$", method="DELETE", action="reset-after")], 1, []),
    "truncated read, retried": ([Rule(f"/uid/{UPDATED}$", action="truncate")], 1, []),
    "truncated answer to a processed save": ([Rule(SAVE, action="truncate")], 1, []),
    "HTML page after a processed save": ([Rule(SAVE, action="body")], 1, []),
    # JSON nested deeper than Python's parser follows: read as "nested too deeply in the file you changed last", exit 2
    "JSON nested too deeply after a processed save": ([Rule(SAVE, action="body", body=b"[" * 10**5 + b"]" * 10**5,
                                                            headers={"Content-Type": "application/json"})], 1, []),
    "HTML page for every save": ([Rule(SAVE, times=99, **_html())], 3,
                                 ["gpudash-all-metrics", "gpudash-by-pod", UPDATED, RETIRED]),
    # Answers in a 200 that are not what Grafana answers a write it made: never reported done. (A save's fault
    # refuses the retired dashboard's delete too: gpudash saves it unchanged right before deleting it.)
    "an error in a 200 for every save": ([Rule(SAVE, times=99, **_json(b'{"status": "error", "message": "locked"}'))],
                                         3, ["gpudash-all-metrics", "gpudash-by-pod", UPDATED, RETIRED]),
    "an empty object for every save": ([Rule(SAVE, times=99, **_json(b"{}"))], 3,
                                       ["gpudash-all-metrics", "gpudash-by-pod", UPDATED, RETIRED]),
    "a 200 to a delete that did not happen": ([Rule(RETIRED + "$", method="DELETE", times=99,
                                                    **_json(b'{"message": "not deleted: database is locked"}'))],
                                              3, [RETIRED]),
    "an error in a 200 to a delete": ([Rule(RETIRED + "$", method="DELETE", times=99,
                                            **_json(b'{"status": "error"}'))], 3, [RETIRED]),
}


@pytest.mark.parametrize("name", CASES)
def test_a_fault_during_push_loses_nothing_and_a_rerun_converges(name, grafana, proxy, run, desired):
    rules, expected, failed = CASES[name]
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    proxy.inject(*rules)
    code, report, stderr = run()
    assert code == expected, stderr
    assert proxy.faults(), "the fault was never injected"
    assert [f["name"] for f in report["failed"]] == failed
    assert "Traceback" not in stderr and "someone saved the dashboard meanwhile" not in json.dumps(report)
    if failed:
        assert f"{len(failed)} of " in stderr and "were published (listed above as done)" in stderr
    else:  # a retried or lost answer never writes twice
        assert all(len(grafana.state.dashboards[uid]["versions"]) == 1 for uid in CREATED)
    assert_safe(grafana, before, {EDITED: "10s"})
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})


def test_a_folder_create_answered_with_something_else_stops_the_push(grafana, proxy, run):
    """Grafana answers a folder it created with that folder: `[]` in a 200 is not one, so nothing is put
    in a folder that may not exist, and nothing is reported published."""
    for entry in grafana.state.dashboards.values():  # a Grafana without gpudash's folder (and its dashboards)
        entry["folderUid"] = "team" if entry["folderUid"] == "gpudash" else entry["folderUid"]
    grafana.state.folders.pop("gpudash")
    proxy.inject(Rule(r"^/api/folders$", method="POST", times=99, **_json(b"[]")))
    writes = len(grafana.writes())
    code, report, stderr = run()
    assert code == 3 and "Traceback" not in stderr
    assert report["written"] == [] and [f["name"] for f in report["failed"]][0] == "gpudash"
    # one JSON document: the report, with the error a person reads on stderr under "error"
    assert report["error"]["exit_code"] == 3 and "writes failed; 0 were published" in report["error"]["what"]
    assert "not a valid API answer" in report["failed"][0]["error"]
    assert len(grafana.writes()) == writes and "gpudash" not in grafana.state.folders


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_push_stopped_by_a_signal_lists_what_it_wrote_and_a_rerun_converges(grafana, proxy, run, desired,
                                                                               signal_number):
    """CI cancelling a job (SIGTERM) or Ctrl-C in the middle of a push: the save under way finishes, no
    other starts, every object is listed as written or not, and the exit code is the signal's."""
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    found = signal.getsignal(signal_number)
    if found == signal.SIG_IGN:  # a background job ignores SIGINT (and gpudash leaves it ignored then)
        signal.signal(signal_number, signal.default_int_handler if signal_number == signal.SIGINT else signal.SIG_DFL)
    handler = signal.getsignal(signal_number)
    proxy.inject(Rule(SAVE, action="before", callback=lambda: os.kill(os.getpid(), signal_number)))
    code, report, stderr = run()
    assert code == 128 + signal_number and report["error"]["exit_code"] == code, stderr
    assert f"stopped by {signal.Signals(signal_number).name}: 1 written (listed above as done), 3 not written" \
        in stderr and "Traceback" not in stderr
    (written,) = report["written"]
    assert content_of(grafana.state.dashboards[written]) == {k: v for k, v in desired[written].items() if k != "id"}
    not_written = {f["name"] for f in report["failed"]}
    assert len(not_written) == 3 and all("not attempted" in f["error"] for f in report["failed"])
    assert RETIRED in not_written and RETIRED in grafana.state.dashboards  # the prune did not start either
    assert signal.getsignal(signal_number) == handler  # gpudash's handler is gone again
    signal.signal(signal_number, found)  # as the test found it
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})


def test_a_signal_while_a_delete_is_sent_reports_the_delete_as_may_have_happened(grafana, proxy, run, desired):
    """SIGTERM arrives as the prune's DELETE reaches Grafana (which deletes the dashboard): the call under
    way finishes, but its read-back does not start, so the report says the delete may have happened; it
    never says "not attempted" of a delete that was sent."""
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    proxy.inject(Rule(f"/uid/{RETIRED}$", method="DELETE", action="before",
                      callback=lambda: os.kill(os.getpid(), signal.SIGTERM)))
    code, report, stderr = run()
    assert code == 128 + signal.SIGTERM and "Traceback" not in stderr
    assert RETIRED not in grafana.state.dashboards and RETIRED not in report["written"]
    error = next(f["error"] for f in report["failed"] if f["name"] == RETIRED)
    assert "may have happened" in error and "not attempted" not in error, error
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})


def test_a_signal_after_a_save_was_sent_reports_the_save_as_may_have_happened(grafana, proxy, run, desired):
    """Grafana saves the first dashboard, SIGTERM arrives and the connection drops before its answer: the
    save is not retried and nothing else starts, and the report says that save may have happened (it did);
    it never says "not attempted" of a save that was sent. A rerun converges."""
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    proxy.inject(Rule(SAVE, action="reset-after", callback=lambda: os.kill(os.getpid(), signal.SIGTERM)))
    saves = len([w for w in grafana.writes() if w[0] == "POST"])
    code, report, stderr = run()
    assert code == 128 + signal.SIGTERM and "Traceback" not in stderr, stderr
    assert report["written"] == [] and "stopped by SIGTERM: 0 written" in stderr
    (saved,) = [uid for uid in (*CREATED, UPDATED) if uid in grafana.state.dashboards
                and content_of(grafana.state.dashboards[uid]) == {k: v for k, v in desired[uid].items() if k != "id"}]
    errors = {f["name"]: f["error"] for f in report["failed"]}
    assert "may have happened" in errors[saved] and "not attempted" not in errors[saved], errors[saved]
    assert all("not attempted" in error for uid, error in errors.items() if uid != saved), errors
    assert len([w for w in grafana.writes() if w[0] == "POST"]) == saves + 1  # the save was not sent again
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})


def test_retry_after_is_waited_on_the_injected_clock(grafana, proxy, run, deadline_clock):
    proxy.inject(Rule(SAVE, status=429, headers={"Retry-After": "7"}))
    assert run()[0] == 1
    assert 7.0 in deadline_clock.slept


@pytest.mark.parametrize("said", ["\u00b2", "\u00b9\u00b2\u00b3"], ids=["superscript two", "superscripts"])
def test_a_retry_after_of_digits_that_are_not_ascii_is_unreadable_not_a_crash(grafana, proxy, run, deadline_clock,
                                                                              said):
    """A 429 whose Retry-After holds a Latin-1 superscript digit (a byte a proxy garbled): str.isdigit takes it for a
    number and float() refuses it, so the push ended in a traceback (exit 4), the save not retried. Such a header is
    unreadable: the usual backoff, then the save."""
    proxy.inject(Rule(SAVE, status=429, headers={"Retry-After": said}))
    code, report, stderr = run()
    assert code == 1 and "Traceback" not in stderr, stderr  # only the edited dashboard is refused
    assert deadline_clock.slept and all(wait < 7 for wait in deadline_clock.slept), deadline_clock.slept
    assert UPDATED in report["written"], report


@pytest.mark.parametrize("rule", [
    Rule(SEARCH, times=99, **_html()),
    Rule(SEARCH, times=99, body=b"{}", status=200),
    Rule(f"/uid/{UPDATED}$", times=99, body=b'{"dashboard": {"uid": ', status=200),
    Rule(f"/uid/{UPDATED}$", action="truncate", times=99),
], ids=["HTML instead of the search", "an object instead of the search list", "invalid JSON",
        "every read truncated"])
def test_a_read_that_is_not_a_valid_answer_fails_before_any_write(rule, grafana, proxy, run, desired):
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    proxy.inject(rule)
    code, report, stderr = run()
    assert code == 3 and "nothing was published" in stderr and "Traceback" not in stderr
    assert grafana.writes() == []
    assert RETIRED in grafana.state.dashboards  # an unreadable answer is never "nothing there"
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})


def test_a_save_in_the_ui_between_plan_and_push_is_kept(grafana, proxy, run, desired):
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    dave = Rule(SAVE, action="before", contains=f'"uid": "{UPDATED}"'.encode(),
                callback=lambda: grafana.edit_in_ui(UPDATED, lambda d: d.update(refresh="30s"), user="dave"))
    proxy.inject(dave)
    code, report, stderr = run()
    assert code == 3
    (failed,) = report["failed"]
    assert failed["name"] == UPDATED and "412 version-mismatch" in failed["error"]
    assert "someone saved the dashboard meanwhile" in failed["error"]
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s", UPDATED: "30s"})


def test_a_server_dripping_its_answer_cannot_hold_push_past_its_deadline(grafana, proxy, run, monkeypatch):
    monkeypatch.setattr(deadline, "CLOCK", deadline.Clock())  # this one case waits for real: 1 s
    proxy.inject(Rule(SEARCH, action="drip", rate=5))
    code, report, stderr = run("--deadline", "1")
    # On a busy machine the deadline may end an earlier read: where it stops is named, the outcome is the same.
    assert code == 3 and "deadline of 1 s" in stderr, stderr
    assert "nothing was published" in stderr and grafana.writes() == []


def test_two_publishers_at_once_write_each_change_once(grafana, proxy, desired, run):
    """Both plan before either pushes (two CI jobs on one merge): the second finds its work done by the first, and
    lists none of it as written (it listed the first's saves and delete as its own): its saves were refused
    (version-mismatch) and its delete never sent, so nothing of its own can have done them."""
    folder = asdict(load_project().settings.grafana.folder)
    settings = desired_from(build(load_project()))
    publisher = (settings.project, settings.clusters)  # as the CLI's push below records them
    clients = [GrafanaClient(proxy.url, token=ADMIN) for _ in range(2)]
    plans = [grafana_sync.plan(client, desired, folder, uid_prefix="gpudash", publisher=publisher)
             for client in clients]
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    results = [grafana_sync.push(client, changes, desired, folder, "", uid_prefix="gpudash", force=False, prune=True,
                                 dry_run=False, publisher=publisher)
               for client, changes in zip(clients, plans)]
    assert [o for outcomes in results for o in outcomes if o.state == FAILED] == []
    assert sorted(o.change.name for o in results[0] if o.done) == sorted([*CREATED, UPDATED, RETIRED])
    assert [o.change.name for o in results[1] if o.done] == []
    assert sorted(o.change.name for o in results[1] if o.state == SKIPPED and o.change.action != "unchanged") == \
        sorted([*CREATED, UPDATED, RETIRED])
    assert f"dashboard {RETIRED}: already gone (before gpudash sent its delete)" in "\n".join(clients[1].notes)
    assert f"dashboard {UPDATED}: already saved as generated by another gpudash run" in "\n".join(clients[1].notes)
    for uid in (*CREATED, UPDATED):
        assert grafana.state.dashboards[uid]["versions"][-1]["createdBy"] == "gpudash-sa"
        assert len(grafana.state.dashboards[uid]["versions"]) == (2 if uid == UPDATED else 1)
    assert_safe(grafana, before, {EDITED: "10s"})
    proxy.clear()
    writes = len(grafana.writes())
    code, report, _ = run()
    assert code == 1 and report["written"] == [] and len(grafana.writes()) == writes


def test_a_lost_answer_to_creating_the_folder_is_not_a_conflict(grafana, proxy, run, desired):
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    del grafana.state.folders["gpudash"]
    proxy.inject(Rule(r"^/api/folders$", method="POST", action="reset-after"))
    code, report, stderr = run()
    assert code == 1, stderr
    assert "gpudash" in report["written"] and report["failed"] == []
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})


def test_a_signal_after_the_folder_create_was_sent_says_it_may_have_happened_and_a_rerun_adopts_it(
        grafana, proxy, run, desired):
    """Grafana makes the folder, SIGTERM arrives and the connection drops before its answer: the folder is
    reported as maybe created (never "not attempted"), nothing is put in it, and the next run finds the
    folder by its uid, creates it no more, and publishes into it."""
    for entry in grafana.state.dashboards.values():  # a Grafana without gpudash's folder (and its dashboards)
        entry["folderUid"] = "team" if entry["folderUid"] == "gpudash" else entry["folderUid"]
    grafana.state.folders.pop("gpudash")
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    proxy.inject(Rule(r"^/api/folders$", method="POST", action="reset-after",
                      callback=lambda: os.kill(os.getpid(), signal.SIGTERM)))
    code, report, stderr = run()
    assert code == 128 + signal.SIGTERM and "Traceback" not in stderr, stderr
    assert "gpudash" in grafana.state.folders and report["written"] == []
    errors = {f["name"]: f["error"] for f in report["failed"]}
    assert "the folder's create was sent to Grafana and may have happened" in errors["gpudash"], errors
    assert "not attempted" not in errors["gpudash"]
    assert [w for w in grafana.writes() if w[0] == "POST"] == [("POST", "/api/folders")]
    proxy.clear()
    code, report, stderr = run()
    assert code == 1, stderr  # only the edited dashboard is refused: it is in another folder now
    assert "gpudash" not in report["written"] and len(grafana.state.folders) == 2
    for uid in CREATED:
        assert grafana.state.dashboards[uid]["folderUid"] == "gpudash"
    assert_safe(grafana, before, {EDITED: "10s"})


def test_a_signal_while_checking_whether_a_lost_save_landed_says_it_may_have_happened(grafana, proxy, run, desired):
    """Every answer to the first save is lost after Grafana made it, so gpudash reads the dashboard back
    to see whether it landed; SIGTERM arrives during that read. The save is reported as may have happened
    (it did), not as Grafana unreachable, and nothing else starts; a rerun converges."""
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    first = CREATED[0]
    proxy.inject(Rule(SAVE, action="reset-after", times=99),
                 Rule(f"/uid/{first}$", method="GET", action="before", skip=1,
                      callback=lambda: os.kill(os.getpid(), signal.SIGTERM)))
    code, report, stderr = run()
    assert code == 128 + signal.SIGTERM and "Traceback" not in stderr, stderr
    assert first in grafana.state.dashboards and report["written"] == []
    errors = {f["name"]: f["error"] for f in report["failed"]}
    assert "the save was sent to Grafana and may have happened" in errors[first], errors[first]
    assert all("not attempted" in error for uid, error in errors.items() if uid != first), errors
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})


def _failed(report) -> dict[str, str]:
    return {f["name"]: f["error"] for f in report.get("failed", [])}


def test_a_save_whose_answers_are_all_lost_and_cannot_be_read_back_says_it_may_have_happened(grafana, proxy, run,
                                                                                                desired):
    """Grafana makes the first dashboard, every answer to its save is lost, and the read that would show it
    landed fails too (503 on every attempt): the save is reported as may have happened (it did), never as
    Grafana unreachable; a rerun converges."""
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    first = CREATED[0]
    proxy.inject(Rule(SAVE, action="reset-after", times=99),
                 Rule(f"/uid/{first}$", method="GET", status=503, skip=1, times=99))
    code, report, stderr = run()
    assert code == 3 and "Traceback" not in stderr, stderr
    assert first in grafana.state.dashboards
    error = _failed(report)[first]
    assert "the save was sent to Grafana and may have happened" in error and "cannot reach Grafana" in error, error
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})


INTERNAL_ERROR = {"action": "gateway", "status": 500, "body": json.dumps({"message": "Internal Server Error"}).encode()}


@pytest.mark.parametrize("fault", [{"action": "reset-after"}, INTERNAL_ERROR], ids=["reset", "500"])
def test_a_save_refused_because_gpudash_s_own_lost_attempt_landed_says_it_may_have_happened(grafana, proxy, run,
                                                                                             desired, fault):
    """The update's first attempt lands and its answer is lost (the connection reset; or Grafana made the save,
    then failed and answered 500); the retry is refused (412: the version moved, by that very save) and the read
    that would show it fails: may have happened, never "someone saved the dashboard meanwhile"."""
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    proxy.inject(Rule(SAVE, skip=2, **fault),  # the third save: the update (after the two creates)
                 # every read of it after the plan's and the look right before its save
                 Rule(f"/uid/{UPDATED}$", method="GET", status=503, skip=2, times=99))
    code, report, stderr = run()
    assert code == 3 and "Traceback" not in stderr, stderr
    assert len(grafana.state.dashboards[UPDATED]["versions"]) == 2  # it landed
    error = _failed(report)[UPDATED]
    assert "the save was sent to Grafana and may have happened" in error and "412" in error, error
    assert "someone saved the dashboard meanwhile" not in error
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})


@pytest.mark.parametrize("fault", [{"action": "reset-after"}, INTERNAL_ERROR], ids=["reset", "500"])
@pytest.mark.parametrize("read_fails", [None, 503, 429])
def test_a_delete_whose_answers_are_all_lost_is_read_back(grafana, proxy, run, desired, read_fails, fault):
    """Grafana deletes the retired dashboard and every answer to the DELETE is lost (the connection reset; or
    Grafana answered 500 after it deleted): the read-back shows it gone (done), or, when that read fails too (a
    gateway's 503, Grafana throttling), the delete is reported as may have happened. After a 500 and throttled
    reads it was reported failed with the throttled read's error, as a delete that never reached Grafana."""
    rules = [Rule(RETIRED + "$", method="DELETE", times=99, **fault)]
    if read_fails:  # the plan's read and the two looks before the delete pass; the read-back fails
        rules.append(Rule(RETIRED + "$", method="GET", status=read_fails, skip=3, times=99))
    proxy.inject(*rules)
    code, report, stderr = run()
    assert RETIRED not in grafana.state.dashboards and "Traceback" not in stderr
    if not read_fails:
        assert code == 1 and RETIRED in report["written"] and report["failed"] == [], stderr
    else:
        error = _failed(report)[RETIRED]
        assert code == 3 and "the delete was sent to Grafana and may have happened" in error, error


@pytest.mark.parametrize("status", [504, 524])
@pytest.mark.parametrize("landed", [True, False])
def test_a_delete_answered_by_a_gateway_on_every_attempt_is_read_back(grafana, proxy, run, desired, landed, status):
    """A gateway in front of Grafana answers 504 to every attempt of the DELETE, though Grafana got the first
    and deleted the dashboard: the read-back shows it gone (done, not a failure). When Grafana did not delete
    it, the delete failed. A CDN's 524 (the origin took the request and did not answer in time) is such an answer
    too: it was taken for Grafana's refusal, not retried or read back, and the delete Grafana made was reported
    failed."""
    delete = (lambda: grafana.state.dashboards.pop(RETIRED, None)) if landed else None
    proxy.inject(Rule(RETIRED + "$", method="DELETE", status=status, times=99, callback=delete))
    code, report, stderr = run()
    assert proxy.faults() and "Traceback" not in stderr
    if landed:
        assert code == 1 and RETIRED in report["written"] and report["failed"] == [], stderr
        assert RETIRED not in grafana.state.dashboards
    else:
        assert code == 3 and str(status) in _failed(report)[RETIRED] and RETIRED in grafana.state.dashboards


@pytest.mark.parametrize("read_back", [True, False])
def test_a_folder_create_whose_answers_are_all_lost_is_read_back(grafana, proxy, run, desired, read_back):
    """Grafana makes the folder and every answer to its create is lost: the read-back finds the folder (done,
    and the push goes on into it), or, when that read fails too, the create is reported as may have happened."""
    grafana.state.folders.pop("gpudash")
    rules = [Rule(r"^/api/folders$", method="POST", action="reset-after", times=99)]
    if not read_back:  # the plan's read passes (no folder yet); the read-back fails
        rules.append(Rule(r"^/api/folders/gpudash$", method="GET", status=503, skip=1, times=99))
    proxy.inject(*rules)
    code, report, stderr = run()
    assert "gpudash" in grafana.state.folders and "Traceback" not in stderr
    if read_back:
        assert code == 1 and "gpudash" in report["written"] and report["failed"] == [], stderr
    else:
        error = _failed(report)["gpudash"]
        assert code == 3 and "the folder's create was sent to Grafana and may have happened" in error, error


@pytest.mark.parametrize("status", [500, 502, 503, 504, 501, 520, 524, 599])
@pytest.mark.parametrize("landed", [True, False])
def test_a_save_answered_by_a_gateway_on_every_attempt_is_read_back(grafana, proxy, run, desired, landed, status):
    """A gateway in front of Grafana answers every attempt of every save with a 5xx it gives when Grafana's answer
    was lost or late, or Grafana itself answers 500 after making the save (it was reported failed, "Grafana
    answered 500", though made); or answers a 5xx gpudash does not retry (a 501, a CDN's 520 or 524, any other),
    which was read as Grafana's refusal: the save Grafana made was reported failed. When Grafana got the saves and made them, each is read back and is done (not a
    failure), and a rerun writes nothing; when it did not, each save failed, with the gateway's answer, and
    nothing is reported written."""
    before = {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY)}
    proxy.inject(Rule(SAVE, method="POST", action="gateway" if landed else "status", status=status, times=99))
    code, report, stderr = run()
    assert proxy.faults() and "Traceback" not in stderr, stderr
    saved = [*CREATED, UPDATED]
    if landed:
        assert code == 1 and report["failed"] == [] and set(saved) <= set(report["written"]), stderr
        assert all(uid in grafana.state.dashboards for uid in CREATED)
        assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})
    else:
        assert code == 3 and not set(saved) & set(report["written"])
        assert all(str(status) in _failed(report)[uid] and "may have happened" not in _failed(report)[uid]
                   for uid in saved), _failed(report)
        assert not [uid for uid in CREATED if uid in grafana.state.dashboards]


@pytest.mark.parametrize("landed", [True, False])
def test_a_folder_create_answered_by_a_gateway_on_every_attempt_is_read_back(grafana, proxy, run, desired, landed):
    """A gateway answers 503 to every attempt of the folder's create: when Grafana made the folder, the read-back
    finds it (done, and the push goes on into it); when it did not, the create failed and nothing is put in a
    folder that is not there."""
    grafana.state.folders.pop("gpudash")
    proxy.inject(Rule(r"^/api/folders$", method="POST", action="gateway" if landed else "status", status=503,
                      times=99))
    code, report, stderr = run()
    assert proxy.faults() and "Traceback" not in stderr, stderr
    if landed:
        assert code == 1 and "gpudash" in report["written"] and report["failed"] == [], stderr
        assert "gpudash" in grafana.state.folders
    else:
        errors = _failed(report)
        assert code == 3 and "503" in errors["gpudash"] and "may have happened" not in errors["gpudash"], errors
        assert "gpudash" not in grafana.state.folders and report["written"] == []


def test_a_move_whose_every_save_is_answered_503_is_not_reported_done(grafana, proxy, run, desired):
    """A gateway's 503 to every save of a move (--move-from): the dashboard's content was already as generated,
    so only its folder and version show whether the save landed; it did not, and it is not reported done."""
    uid = "gpudash-overview"
    gpudash_saved(grafana, dict(desired[uid]), folder="team")  # gpudash's, unedited, in the old folder
    proxy.inject(Rule(r"/api/dashboards/db$", method="POST", status=503, times=99))
    code, report, _ = run("--move-from", "team")
    assert grafana.state.dashboards[uid]["folderUid"] == "team"  # the proxy let no save through
    assert uid not in report.get("written", [])
    assert any(uid in str(f) for f in report.get("failed", [])) and code != 0


def test_a_second_ctrl_c_stops_at_once_and_still_lists_what_was_written_and_what_was_under_way(grafana, proxy, run,
                                                                                              desired):
    """Ctrl-C twice while the second save is on its way: the second stops the push at once (the save under way is
    not waited for). The push reported nothing at all: "interrupted (Ctrl-C); nothing after this point was done",
    exit 130, with the first dashboard saved and the second saved after gpudash had stopped. Now the report lists the
    first as written, the one under way as stopped while under way (it may have happened: it did), the rest as not
    attempted, and the exit is still 130."""
    from generator.clients.deadline import NOT_STARTED, UNDER_WAY
    from tests.support.ctrl_c import sigint_handled, twice

    proxy.inject(Rule(SAVE, action="before", skip=1, callback=twice))
    with sigint_handled():
        code, report, stderr = run()
    assert code == 130 and report["error"]["exit_code"] == 130 and "Traceback" not in stderr, stderr
    assert "stopped by SIGINT: 1 written (listed above as done), 2 not written (listed as FAILED), 1 under way when " \
           "it stopped at once, which may have happened" in stderr, stderr
    (written,) = report["written"]
    errors = {f["name"]: f["error"] for f in report["failed"]}
    (under_way,) = [uid for uid, error in errors.items() if error == UNDER_WAY]
    assert sorted(errors) == sorted({*CREATED, UPDATED, RETIRED} - {written}), errors
    assert all(errors[uid] == NOT_STARTED for uid in errors if uid != under_way), errors
    for _ in range(50):  # the save under way reaches Grafana once the proxy passes it on
        if under_way in grafana.state.dashboards:
            break
        time.sleep(0.05)
    for uid in (written, under_way):
        assert content_of(grafana.state.dashboards[uid]) == {k: v for k, v in desired[uid].items() if k != "id"}
    assert RETIRED in grafana.state.dashboards and len([w for w in grafana.writes() if w[0] == "POST"]) == 2


def test_a_second_ctrl_c_before_a_delete_is_sent_says_it_was_not_attempted(grafana, proxy, run):
    """Ctrl-C twice while gpudash reads what people made around the retired dashboard, after its unchanged save and
    before its DELETE: the delete was listed as under way when it stopped, which may have happened (the unchanged save
    counted as its write), though no DELETE was sent. It is not attempted, and the dashboard is there."""
    from generator.clients.deadline import NOT_STARTED
    from tests.support.ctrl_c import sigint_handled, twice

    proxy.inject(Rule(r"^/api/playlists$", method="GET", action="before", skip=1, callback=twice))
    with sigint_handled():
        code, report, stderr = run()
    assert code == 130 and proxy.faults(), stderr
    assert {f["name"]: f["error"] for f in report["failed"]}[RETIRED] == NOT_STARTED, report["failed"]
    assert RETIRED in grafana.state.dashboards and ("DELETE", f"/api/dashboards/uid/{RETIRED}") not in grafana.state.log


def test_a_signal_after_a_save_was_sent_does_not_count_that_save_as_not_written(grafana, proxy, run):
    """SIGTERM as the first save's answer is lost (Grafana made the save): the report lists that save as may have
    happened, but the summary said '0 written (listed above as done), 4 not written (listed as FAILED)'. It is now
    counted apart, as the writes under way at a second Ctrl-C are."""
    proxy.inject(Rule(SAVE, action="reset-after", callback=lambda: os.kill(os.getpid(), signal.SIGTERM)))
    code, report, stderr = run()
    assert code == 128 + signal.SIGTERM and len(report["failed"]) == 4, stderr
    assert "0 written (listed above as done), 3 not written (listed as FAILED), 1 sent whose outcome nothing " \
           "showed, which may have happened" in stderr, stderr

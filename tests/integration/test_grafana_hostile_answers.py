"""`gpudash push --prune` when one kind of Grafana read is answered with something that is not Grafana's answer: a
JSON `null`, an empty body, an HTML sign-in page or JSON of the wrong type, all with status 200 (a proxy, a cache or
a stub in front of Grafana). None of them is ever read as "nothing there": the push writes nothing on a garbled read
the plan needs, refuses the delete on a garbled read of what people made around the dashboard, and never reports a
delete done that the dashboard read back does not show.

The live state is test_grafana_faults'."""

from __future__ import annotations

import json

import pytest

from generator.markers import GRAFANA_OWNER_TAG
from generator.targets.relisting import RELIST_WAITS
from tests.support.fault_proxy import HTML, Rule
from tests.support.grafana_faults import (COPY, CREATED, EDITED, FOREIGN, RETIRED, SEARCH, UPDATED,  # noqa: F401
                                          assert_converges, assert_safe, build_dir, desired, grafana, proxy, run,
                                          snapshot)
from tests.support.grafana_server import ADMIN

BY_TAG = rf"(^|&)tag={GRAFANA_OWNER_TAG}"  # the query of the search by the owner tag (a prune searches the folder too)
# Every read a push --prune makes, by the path it asks (what the plan must read to plan at all, then what it reads
# of people's work around a dashboard it would delete).
PLANNED = {
    "the folder": r"^/api/folders/gpudash$",
    "the search": SEARCH,
    "the folder's search": (SEARCH, r"(^|&)folderUIDs=gpudash(&|$)"),
    "a defined dashboard": f"^/api/dashboards/uid/{UPDATED}$",
    "the retired dashboard": f"^/api/dashboards/uid/{RETIRED}$",
    "the retired dashboard's versions": f"^/api/dashboards/uid/{RETIRED}/versions$",
    "a defined dashboard's versions": f"^/api/dashboards/uid/{UPDATED}/versions$",
}
AROUND = {
    "the retired dashboard's permissions": f"^/api/dashboards/uid/{RETIRED}/permissions$",
    "the retired dashboard's public dashboard": f"^/api/dashboards/uid/{RETIRED}/public-dashboards$",
    "the annotations": r"^/api/annotations$",
    "the playlists": r"^/api/playlists$",
    "the account's permissions": r"^/api/access-control/user/permissions$",
}
ANSWERS = {  # (status, body, content type, what the error says)
    "null": (200, b"null", "application/json", "but JSON null"),
    "an empty body": (200, b"", "application/json", "but not JSON"),
    "a sign-in page": (200, HTML, "text/html", "but not JSON"),
    "a string": (200, b'"ok"', "application/json", "not a valid API answer"),
    "a refusal of this one item": (403, b'{"message": "Access denied to this dashboard"}', "application/json",
                                   "may not do this (403)"),
}

# A gateway's JSON 404 for a path it has no route for: shaped as Grafana's error body (an object with a message)
GATEWAY_404 = b'{"message":"no Route matched with those values"}'  # Kong's
# Every read of the plan whose 404 reads as "none" (those of people's work around a dashboard read their 404 so only
# with Grafana's messageId, or refuse the delete on it)
NOT_FOUND_READS = {read: PLANNED[read] for read in (
    "the folder", "a defined dashboard", "the retired dashboard", "the retired dashboard's versions",
    "a defined dashboard's versions")}
NGINX_404 = b"<html><head><title>404 Not Found</title></head><body><h1>404 Not Found</h1></body></html>"  # a proxy's


def _rule(path: str | tuple[str, str], answer: str) -> Rule:
    """A rule answering the reads of `path` (or of (path, query)) with `answer`."""
    status, body, kind, _ = ANSWERS[answer]
    path, query = path if isinstance(path, tuple) else (path, None)
    return Rule(path, method="GET", times=999, status=status, body=body, headers={"Content-Type": kind}, query=query)


def _state(grafana) -> dict[str, str]:
    return {uid: snapshot(grafana, uid) for uid in (FOREIGN, COPY, EDITED, RETIRED)}


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("read", PLANNED)
def test_a_garbled_read_the_plan_needs_writes_nothing(read, answer, grafana, proxy, run, desired):
    before = _state(grafana)
    proxy.inject(_rule(PLANNED[read], answer))
    code, report, stderr = run()
    assert code == 3, stderr
    assert "nothing was published" in stderr and "Traceback" not in stderr
    assert ANSWERS[answer][3] in stderr, stderr
    assert grafana.writes() == []
    assert _state(grafana) == before
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})


def test_a_read_answered_with_json_nested_too_deeply_to_read_is_not_an_answer(grafana, proxy, run, desired):
    """The search answered 200 with JSON nested deeper than Python's parser follows: push said "the input is nested
    too deeply to be read ... the file you changed last" (exit 2), of no file of the user's. It is Grafana's answer
    that is not JSON: a remote failure, exit 3, nothing written."""
    before = _state(grafana)
    proxy.inject(Rule(SEARCH, method="GET", action="body", times=999, body=b"[" * 10**5 + b"]" * 10**5,
                      headers={"Content-Type": "application/json"}))
    code, _, stderr = run()
    assert code == 3 and "but not JSON" in stderr and "changed last" not in stderr, stderr
    assert grafana.writes() == [] and _state(grafana) == before


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("read", AROUND)
def test_a_garbled_read_of_people_s_work_around_a_dashboard_refuses_its_delete(read, answer, grafana, proxy, run,
                                                                            desired):
    before = _state(grafana)
    proxy.inject(_rule(AROUND[read], answer))
    code, report, stderr = run()
    assert code == 1, stderr  # refused, not failed: --force agrees to delete it with whatever could not be read
    assert sorted(report["refused"]) == sorted([EDITED, RETIRED]), report
    assert RETIRED in grafana.state.dashboards and snapshot(grafana, RETIRED) == before[RETIRED]
    assert {*CREATED, UPDATED} <= set(report["written"])
    assert_converges(grafana, proxy, run, desired, {**before}, {EDITED: "10s"})


@pytest.mark.parametrize("read_back", ["null", "a proxy's 404 page"])
def test_a_delete_answered_done_is_not_reported_done_when_the_read_back_is_not_grafana_s(read_back, grafana, proxy,
                                                                                       run, desired):
    """A proxy answers the delete for Grafana (as Grafana answers one it made) without passing it on, and then every
    read of the dashboard with `null`, or with its own 404 page: the dashboard is still there, and nothing shows it
    gone."""
    def garble_reads() -> None:
        proxy.inject(_rule(f"^/api/dashboards/uid/{RETIRED}$", "null") if read_back == "null" else
                     Rule(f"^/api/dashboards/uid/{RETIRED}$", method="GET", times=999, status=404, body=NGINX_404,
                          headers={"Content-Type": "text/html"}))

    proxy.inject(Rule(f"^/api/dashboards/uid/{RETIRED}$", method="DELETE", times=99, status=200,
                      body=b'{"title": "Retired board", "message": "Dashboard deleted", "id": 5}',
                      headers={"Content-Type": "application/json"}, callback=garble_reads))
    code, report, stderr = run()
    assert RETIRED in grafana.state.dashboards
    assert RETIRED not in report["written"], report
    assert code == 3 and RETIRED in [f["name"] for f in report["failed"]], stderr


def test_a_dashboard_a_person_moves_to_another_folder_after_the_plan_is_not_moved_back(grafana, proxy, run, desired):
    """A move adds no version, so the save's version does not refuse it: the folder read right before the save
    does. The person's move (made while the plan searched, after it read the dashboard) stands, the update is
    reported failed, and a run again plans it as foreign."""
    grafana.state.folders["alice"] = {"id": 98, "uid": "alice", "title": "Alice's"}
    before = _state(grafana)
    proxy.inject(Rule(SEARCH, action="before", callback=lambda: grafana.move(UPDATED, "alice")))
    code, report, stderr = run()
    assert grafana.state.dashboards[UPDATED]["folderUid"] == "alice"
    assert code == 3, stderr
    (failed,) = report["failed"]
    assert failed["name"] == UPDATED and "moved to folder alice since the plan" in failed["error"], failed
    assert {*CREATED, RETIRED} <= set(report["written"])
    proxy.clear()
    code, report, stderr = run()
    assert code == 1 and sorted(report["refused"]) == sorted([EDITED, UPDATED]), report
    assert grafana.state.dashboards[UPDATED]["folderUid"] == "alice"
    assert snapshot(grafana, FOREIGN) == before[FOREIGN] and snapshot(grafana, COPY) == before[COPY]


@pytest.mark.parametrize("force", [(), ("--force",)], ids=["", "--force"])
def test_a_dashboard_read_answered_with_another_dashboard_is_not_an_answer(force, grafana, proxy, run, desired):
    """A cache or proxy mixing answers gives the retired dashboard's read the answer of a defined one: nothing of
    what it says is about the dashboard asked for, and nothing is written on it, forced or not."""
    before = _state(grafana)

    def other(_body: bytes) -> bytes:
        return json.dumps(grafana._get_dashboard(UPDATED)[1]).encode()

    proxy.inject(Rule(f"^/api/dashboards/uid/{RETIRED}$", method="GET", action="rewrite", times=999, callback=other))
    code, report, stderr = run(*force)
    assert code == 3 and "nothing was published" in stderr, stderr
    assert f"asked for dashboard {RETIRED}" in stderr, stderr
    assert grafana.writes() == [] and _state(grafana) == before


def test_a_version_read_alone_answered_with_another_dashboard_s_is_not_an_answer(grafana, proxy, run, desired):
    """A dashboard's first save is read alone for its message (Grafana's list names it "Initial save"); a cache or
    proxy mixing answers gives that read another dashboard's version of the same number (1, which every dashboard
    has): its message is about that dashboard, not this one, so the plan has no answer and nothing is written."""
    before = _state(grafana)
    asked = []

    def other(_body: bytes) -> bytes:
        asked.append(1)
        return json.dumps(grafana._version(FOREIGN, "1")[1]).encode()

    proxy.inject(Rule(rf"^/api/dashboards/uid/{UPDATED}/versions/1$", method="GET", action="rewrite", times=999,
                      callback=other))
    code, report, stderr = run()
    assert asked and code == 3 and "nothing was published" in stderr, stderr
    assert f"the version 1 of dashboard {UPDATED}" in stderr and "Traceback" not in stderr, stderr
    assert grafana.writes() == [] and _state(grafana) == before


@pytest.mark.parametrize("status", [503, 403])
def test_a_delete_grafana_answered_whose_read_back_fails_says_it_may_have_happened(status, grafana, proxy, run,
                                                                                  desired):
    """Grafana deletes the retired dashboard and answers so; every read of it after that fails (a gateway, or the
    account's access withdrawn): the delete is not reported as refused or not made, but as sent and answered."""
    def fail_reads() -> None:
        proxy.inject(Rule(f"^/api/dashboards/uid/{RETIRED}$", method="GET", status=status, times=999))

    proxy.inject(Rule(f"^/api/dashboards/uid/{RETIRED}$", method="DELETE", action="before", callback=fail_reads))
    code, report, stderr = run()
    assert RETIRED not in grafana.state.dashboards
    assert code == 3, stderr
    error = {f["name"]: f["error"] for f in report["failed"]}[RETIRED]
    assert "may have happened" in error, error


def test_a_proxy_s_not_found_page_is_not_grafana_s_not_found(grafana, proxy, run, desired):
    """A proxy answers the read of the retired dashboard with its own 404 page: nothing says Grafana has no such
    dashboard, so it is neither skipped by the prune nor, after a delete, read as gone."""
    before = _state(grafana)
    proxy.inject(Rule(f"^/api/dashboards/uid/{RETIRED}$", method="GET", times=999, status=404, body=NGINX_404,
                      headers={"Content-Type": "text/html"}))
    code, report, stderr = run()
    assert code == 3 and "nothing was published" in stderr and "not as Grafana refuses" in stderr, stderr
    assert grafana.writes() == [] and _state(grafana) == before


def test_a_write_redirected_as_a_get_is_a_failure_that_says_where_grafana_is(grafana, proxy, run, desired):
    """Something in front of Grafana redirects every save (as from http to https): requests sends a POST redirected
    by a 301 on as a GET, whose answer ("not found") read as the save's (creates "not found", updates "deleted
    since ... by someone"); the save says it was redirected, and where to."""
    before = _state(grafana)
    proxy.inject(Rule(r"^/api/dashboards/db$", method="POST", times=999, status=301, body=b"",
                      headers={"Location": f"{proxy.url}/api/dashboards/db"}))
    code, report, stderr = run()
    assert code == 3, stderr
    failed = {f["name"]: f["error"] for f in report["failed"]}
    assert sorted(failed) == sorted([*CREATED, UPDATED, RETIRED]), report
    assert all(f"with a redirect (301 to {proxy.url}/api/dashboards/db), which sends a POST on as a GET" in error
               for error in failed.values()), failed
    assert not any("deleted since" in error or "not found" in error for error in failed.values()), failed
    assert grafana.writes() == [] and _state(grafana) == before


@pytest.mark.parametrize("read", NOT_FOUND_READS)
def test_a_gateway_s_json_not_found_is_not_grafana_s_not_found(read, grafana, proxy, run, desired):
    """A gateway in front of Grafana answers one read of the plan with its own JSON 404 (an object with a message, as
    Grafana's error body is): nothing says Grafana has no such folder, dashboard or version, and nothing is written
    (no folder or dashboard created anew over one there, the retired one not skipped as gone)."""
    before = _state(grafana)
    proxy.inject(Rule(NOT_FOUND_READS[read], method="GET", times=999, status=404, body=GATEWAY_404,
                      headers={"Content-Type": "application/json"}))
    code, report, stderr = run()
    assert code == 3 and "nothing was published" in stderr, stderr
    assert "'no Route matched with those values', not Grafana's own \"not found\"" in stderr, stderr
    assert grafana.writes() == [] and _state(grafana) == before
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})


def test_a_delete_answered_with_a_gateway_s_json_not_found_is_not_read_as_gone(grafana, proxy, run, desired):
    """A gateway answers the delete of the retired dashboard with its own JSON 404: the dashboard is still there and
    is not reported deleted, nor gone by someone else's hand."""
    proxy.inject(Rule(f"^/api/dashboards/uid/{RETIRED}$", method="DELETE", times=999, status=404, body=GATEWAY_404,
                      headers={"Content-Type": "application/json"}))
    code, report, stderr = run()
    assert RETIRED in grafana.state.dashboards
    assert code == 3, stderr
    error = {f["name"]: f["error"] for f in report["failed"]}[RETIRED]
    assert "not Grafana's own" in error and "created it anew" not in error, error


@pytest.mark.parametrize("uid, said, absent", [
    ("gpudash", 'folders.folder.grafana.app "gpudash" not found', True),  # Grafana's Kubernetes-style folder API
    ("gpudash", "folder not found", True),  # Grafana's legacy folder API
    ("gpudash", 'folders.folder.grafana.app "gpudash-other" not found', False),  # not the folder asked
    ("gpudash", 'routes.gateway.example "gpudash" not found', False),
])
def test_grafana_s_kubernetes_style_folder_not_found_reads_as_no_folder(uid, said, absent):
    """Grafana serving /api/folders through its Kubernetes-style API (the kubernetesFolders feature) answers a folder
    it does not have with the apiserver's NotFound naming the folder's uid: the folder is absent (the first push
    creates it), where it was an invalid answer; the same words for another uid say nothing of this folder."""
    from generator.clients.grafana import GrafanaClient, InvalidAnswer
    from tests.support.canned_server import CannedServer
    from tests.support.grafana_server import ADMIN

    with CannedServer(json.dumps({"message": said}), status=404) as server:
        client = GrafanaClient(f"http://{server.address}", token=ADMIN)
        if absent:
            assert client.folder(uid) is None
        else:
            with pytest.raises(InvalidAnswer) as raised:
                client.folder(uid)
            assert "not Grafana's own \"not found\"" in str(raised.value)
            assert 'folders.folder.grafana.app "gpudash" not found' in str(raised.value), str(raised.value)


def test_a_save_refused_by_the_kubernetes_style_dashboard_api_for_its_version_is_a_version_mismatch():
    """Grafana saving through its Kubernetes-style dashboard API refuses a save whose version is not the stored one
    with 409 "Dashboard already exists. Use overwrite flag to update." (the legacy API: 412 version-mismatch): it is
    the version mismatch it is, saying someone saved meanwhile, so that a push reads back whether its content landed,
    not a failure to retry as Grafana's health."""
    from generator.clients.grafana import GrafanaClient, PreconditionFailed
    from tests.support.canned_server import CannedServer
    from tests.support.grafana_server import ADMIN

    refusal = json.dumps({"message": "Dashboard already exists. Use overwrite flag to update."})
    with CannedServer(refusal, status=409) as server:
        client = GrafanaClient(f"http://{server.address}", token=ADMIN)
        with pytest.raises(PreconditionFailed) as raised:
            client.save({"uid": "gpudash-overview", "title": "GPU overview", "version": 3}, "gpudash", "gpudash")
    assert raised.value.kind == "version-mismatch"
    assert "someone saved the dashboard meanwhile" in str(raised.value), str(raised.value)
    assert len(server.requests) == 1


def _search_leaving_out(how: str):
    """A rewrite of the search's answer: `[]` (a stub or proxy answering for Grafana), without a defined dashboard
    that carries the tag (a search index behind Grafana's database), or listing that one in another folder."""
    def rewrite(body: bytes) -> bytes:
        hits = json.loads(body)
        if how == "[]":
            hits = []
        elif how == "without a defined dashboard":
            hits = [h for h in hits if h["uid"] != UPDATED]
        else:
            hits = [{**h, "folderUid": "team"} if h["uid"] == UPDATED else h for h in hits]
        return json.dumps(hits).encode()
    return rewrite


SEARCH_ANSWERS = ("[]", "without a defined dashboard", "a defined dashboard in another folder")


@pytest.mark.parametrize("how", SEARCH_ANSWERS)
def test_a_search_that_leaves_out_a_tagged_dashboard_fails_a_prune_instead_of_pruning_nothing(how, grafana, proxy,
                                                                                           run, desired):
    """The search by the owner tag answers with only some of the tagged dashboards (a valid shape: `[]`, or a list
    without a dashboard the plan read with the tag, or with it in another folder): the retired dashboard may be
    missing from it too, so --prune is a failure saying so (nothing published), never "nothing to prune"."""
    before = _state(grafana)
    proxy.inject(Rule(SEARCH, action="rewrite", method="GET", times=999, query=BY_TAG, callback=_search_leaving_out(how)))
    code, report, stderr = run()
    assert code == 3 and "nothing was published" in stderr, stderr
    assert "leaving out or listing elsewhere" in stderr and f"{UPDATED} in folder gpudash" in stderr, stderr
    assert "what --prune would delete cannot be read" in stderr and "without --prune publishes" in stderr, stderr
    assert grafana.writes() == [] and _state(grafana) == before
    assert_converges(grafana, proxy, run, desired, before, {EDITED: "10s"})


FIRST_PAGE = rf"{BY_TAG}(&.*)?&page=1(&|$)"  # a search by the tag's first page (not the folder's search)


class _FirstPages(Rule):
    """A proxy rule that takes no request: it counts the searches made (their first pages)."""

    def __init__(self):
        super().__init__(SEARCH, method="GET", query=FIRST_PAGE)
        self.count = 0

    def matches(self, method, path, body, operation="", region="", query="") -> bool:
        self.count += super().matches(method, path, body, operation, region, query)
        return False


@pytest.mark.parametrize("searches", [len(RELIST_WAITS), len(RELIST_WAITS) + 1], ids=["catches up", "stays behind"])
def test_a_search_behind_a_save_of_a_moment_ago_is_searched_again_before_a_prune_is_refused(searches, grafana, proxy,
                                                                                             run, desired):
    """Grafana's search index behind its database (a push --prune right after a push): the first searches leave out a
    dashboard the plan read with the tag. The prune failed at once (exit 3); now the search is made again, at once and
    after waits on the deadline's clock, and the plan goes on with the first that lists it: the retired dashboard is
    pruned as with a search that was never behind. One behind for longer fails as before, after a bounded number of
    searches, nothing written."""
    before = _state(grafana)
    first_pages = _FirstPages()
    proxy.inject(first_pages, Rule(SEARCH, action="rewrite", method="GET", times=searches, query=FIRST_PAGE,
                                   callback=_search_leaving_out("without a defined dashboard")))
    code, report, stderr = run()
    if searches > len(RELIST_WAITS):
        assert code == 3 and f"in {searches} listings over {sum(RELIST_WAITS):g} s" in stderr, stderr
        assert grafana.writes() == [] and _state(grafana) == before
        assert first_pages.count == searches
        return
    assert code == 1 and "Traceback" not in stderr, stderr  # the edited dashboard refused, as always without --force
    assert RETIRED not in grafana.state.dashboards and RETIRED in report["written"], report
    assert_safe(grafana, before, {EDITED: "10s"})



def test_a_search_again_that_leaves_out_what_the_first_listed_is_not_gone_on_with(grafana, proxy, run, desired):
    """The first search leaves out a defined dashboard (saved a moment ago); the search again lists it but leaves out
    the retired one, which the first listed (an index answered by another replica, as far behind in its own way).
    Going on with the second search, the prune left the retired dashboard without a word. The search gone on with
    must list every dashboard a read or an earlier search showed: the third, which lists them all, is, and the
    retired dashboard is pruned."""
    def without(uid):
        return lambda body: json.dumps([h for h in json.loads(body) if h["uid"] != uid]).encode()

    proxy.inject(Rule(SEARCH, action="rewrite", method="GET", query=FIRST_PAGE, callback=without(UPDATED)),
                 Rule(SEARCH, action="rewrite", method="GET", query=FIRST_PAGE, callback=without(RETIRED)))
    code, report, stderr = run()
    assert code == 1 and "Traceback" not in stderr, stderr  # the edited dashboard refused, as always without --force
    assert RETIRED not in grafana.state.dashboards and RETIRED in report["written"], report


def test_a_dashboard_the_first_search_listed_that_is_gone_since_is_not_waited_for(grafana, proxy, run, desired):
    """The first search is behind in both ways: it leaves out a defined dashboard and lists the retired one, which
    a person deletes right after. The searches again are caught up. A dashboard a search again leaves out is read
    before it is waited for: the retired one is gone, and the push goes on (it waited and failed when the search
    gone on with had to list everything the first listed)."""
    def behind_then_deleted(body: bytes) -> bytes:
        grafana.state.dashboards.pop(RETIRED)
        return json.dumps([h for h in json.loads(body) if h["uid"] != UPDATED]).encode()

    proxy.inject(Rule(SEARCH, action="rewrite", method="GET", query=FIRST_PAGE, callback=behind_then_deleted))
    code, report, stderr = run()
    assert code == 1 and "Traceback" not in stderr and "search" not in stderr, stderr  # the edited one refused
    assert report["failed"] == [] and UPDATED in report["written"], report

def test_a_search_answered_empty_is_said_by_a_push_without_prune_and_fails_a_plan(grafana, proxy, cli, run, build_dir):
    """Without --prune the search decides nothing that is written: the push publishes and says the search left out
    tagged dashboards; `plan` (which shows what --prune does) fails on it."""
    proxy.inject(Rule(SEARCH, action="rewrite", method="GET", times=999, callback=_search_leaving_out("[]")))
    env = {"GRAFANA_URL": proxy.url, "GRAFANA_TOKEN": ADMIN}
    code, stdout, stderr = cli("push", "--skip-verify", "--from", str(build_dir), "--output", "json", env=env)
    assert code == 1, stderr  # the edited dashboard refused, as always without --force
    assert {*CREATED, UPDATED} <= set(json.loads(stdout)["written"])
    assert RETIRED in grafana.state.dashboards
    assert f"note: Grafana's search by the {GRAFANA_OWNER_TAG} tag answered 0 dashboard(s)" in stderr, stderr
    assert "a push --prune fails on it until it lists them" in stderr, stderr
    code, stdout, stderr = cli("plan", "--no-cloudwatch", "--from", str(build_dir), env=env)
    assert code == 3 and "leaving out or listing elsewhere" in stderr, (code, stderr)


@pytest.mark.parametrize("when", ["at the plan", "at the look before the delete"])
def test_a_retired_dashboard_s_permissions_answered_as_none_at_all_refuse_its_delete(when, grafana, proxy, run,
                                                                                    desired):
    """Bob is given View on the retired dashboard (before the plan, or while it runs: right before the look before the
    delete), and the read of its permissions is answered `[]` (a valid shape, but Grafana lists at least the Admin it
    gave the account that made it, and what its folder gives), at the plan or only at that look: no evidence that no
    person's permission goes with it, so the delete is refused (bob's permission kept)."""
    def bob() -> None:
        grafana.permit(RETIRED, 1, user="bob")

    if when == "at the plan":
        bob()
    before = _state(grafana)
    proxy.inject(Rule(f"^/api/dashboards/uid/{RETIRED}/permissions$", method="GET", status=200, body=b"[]",
                      headers={"Content-Type": "application/json"}, times=999,
                      skip=0 if when == "at the plan" else 1, callback=None if when == "at the plan" else bob))
    code, report, stderr = run()
    refused = report["refused"] + [f["name"] for f in report["failed"]]
    assert sorted(refused) == sorted([EDITED, RETIRED]), report
    assert code == (1 if when == "at the plan" else 3), stderr
    assert RETIRED in grafana.state.dashboards and [e.get("userLogin") for e in grafana.state.acl[RETIRED]] == \
        ["gpudash-sa", "bob"]
    if when == "at the plan":
        assert snapshot(grafana, RETIRED) == before[RETIRED]
    said = json.dumps(report)
    assert "listed as none at all" in said, said
    assert {*CREATED, UPDATED} <= set(report["written"])


def test_a_dashboard_made_anew_in_the_moment_before_the_guarding_save_is_not_deleted(grafana, proxy, run, desired):
    """Right before gpudash's unchanged save that precedes the retired dashboard's delete, another job with the same
    service account deletes it and makes its own under its uid (version 1, as the retired one was read at). A Grafana
    whose save takes an id it has no dashboard with, beside a uid, as a save by the uid saves over it, and nothing
    else read after showed another dashboard (its permissions are its creator's, the same account's): it was
    deleted. The save's answer names that dashboard's id, not the one just read: the delete is not sent."""
    grafana.unknown_id_saves_by_uid = True

    def another_job() -> None:
        with grafana.lock:
            entry = grafana.state.dashboards.pop(RETIRED)
            grafana._store(RETIRED, {"title": "Another job's board", "tags": ["team"], "panels": []},
                           entry["folderUid"], message="", user="gpudash-sa")

    proxy.inject(Rule(r"^/api/dashboards/db$", method="POST", action="before", contains=RETIRED.encode(),
                      callback=another_job))
    code, report, stderr = run()
    assert RETIRED in grafana.state.dashboards, report
    assert grafana.state.dashboards[RETIRED]["versions"][0]["version"] == 1  # the other job's, then gpudash's save
    assert code == 3, stderr
    error = {f["name"]: f["error"] for f in report["failed"]}[RETIRED]
    assert "deleted and made anew under its uid in that moment; not deleted" in error, error


@pytest.mark.parametrize("before_folder_uids", [False, True], ids=["grafana", "a-grafana-before-folderUIDs"])
def test_a_search_by_the_tag_that_ends_before_a_dashboard_dropped_from_the_definitions_fails_the_prune(
        grafana, proxy, run, desired, before_folder_uids):
    """The search by the owner tag answers its first page and ends there (the next page answered `[]`, as by a proxy
    or a release that caps what it lists), before a retired dashboard, one no longer defined: every defined dashboard
    is in it, so nothing showed a gap, and push --prune left the retired one without a word. gpudash's folder (the
    only one pruned) is searched too now, on pages of its own: the retired dashboard is listed there with the tag, so
    the prune fails saying so (exit 3), nothing written; with a search that pages, it is pruned. The folder is asked
    by its uid alone (Grafana answers 400 to a search naming a folder's uid and id both: every plan and push --prune
    failed so), and by its id where a Grafana from before `folderUIDs` answers every folder's dashboards."""
    grafana.ignore_folder_uids = before_folder_uids
    before = _state(grafana)
    assert all(uid < RETIRED for uid in desired)  # a first page ending before it holds every defined dashboard

    def first_page_only(body: bytes) -> bytes:
        return json.dumps([h for h in json.loads(body) if h["uid"] < RETIRED]).encode()

    proxy.inject(Rule(SEARCH, action="rewrite", method="GET", times=10**6, query=rf"{BY_TAG}(&|$)",
                      callback=first_page_only))
    code, report, stderr = run()
    assert code == 3 and "Traceback" not in stderr, stderr
    assert f"{RETIRED} in folder gpudash, not listed" in stderr, stderr
    assert "what --prune would delete cannot be read" in stderr, stderr
    assert grafana.writes() == [] and _state(grafana) == before
    proxy.clear()
    code, report, stderr = run()
    assert RETIRED not in grafana.state.dashboards and RETIRED in report["written"], (code, report, stderr)


def test_a_read_redirected_to_another_host_is_not_grafana_s_answer_and_the_token_does_not_follow(grafana, proxy, run,
                                                                                                 desired):
    """Something in front of Grafana redirects every read to another host (an old address forwarding to a new one, or
    to another Grafana that lets anyone view). requests leaves the token behind on a redirect to another host, as it
    should: what that host answers is an anonymous visitor's view, not this account's. It was read as Grafana's: here
    one that shows nothing (no folder, no dashboard, an empty search), so the plan read every dashboard as absent and
    the push sent a create of the folder to Grafana before failing on the folder it had; a Grafana that answers 401
    to a read without a token made it say the credentials were rejected. Now a read whose redirect left the token
    behind is not a valid answer, saying where it was sent; nothing is written, and the other host never sees the
    token."""
    from tests.support.loopback import KeepAliveHandler, LoopbackServer

    seen: list[str | None] = []

    class Anonymous(LoopbackServer):  # a Grafana that lets anyone view, and shows an anonymous visitor nothing
        def __init__(self):
            class Handler(KeepAliveHandler):
                def do_GET(self):  # noqa: N802
                    seen.append(self.headers.get("Authorization"))
                    path = self.path.split("?")[0]
                    status, body = (200, b"[]") if path == "/api/search" else (404, json.dumps({
                        "message": "folder not found" if path.startswith("/api/folders/") else "Dashboard not found"
                    }).encode())
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
            self._serve(Handler)

    other = Anonymous()
    other.thread.start()
    try:
        where = f"http://localhost:{other.server.server_address[1]}"
        for path in ["/api/folders/gpudash", "/api/search", *(f"/api/dashboards/uid/{uid}" for uid in desired)]:
            proxy.inject(Rule(f"^{path}$", method="GET", times=999, status=302, body=b"",
                              headers={"Location": f"{where}{path}"}))
        before = _state(grafana)
        code, report, stderr = run()
    finally:
        other.server.shutdown()
        other.server.server_close()
    assert code == 3 and "nothing was published" in stderr and "Traceback" not in stderr, stderr
    assert f"with a redirect (302 to {where}/api/folders/gpudash)" in stderr and "another host" in stderr, stderr
    assert "create" not in json.dumps(report.get("changes", [])), report
    assert seen and not any(seen), seen  # the other host was asked without the token
    assert grafana.writes() == [] and _state(grafana) == before

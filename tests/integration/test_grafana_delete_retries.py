"""A prune's delete retried after a 5xx (against the Grafana API test server over HTTP): Grafana's delete takes no
version, so gpudash looks at the dashboard again before every attempt, not only the first: a person's save between
two attempts is never deleted."""

from __future__ import annotations

import json

import pytest

from tests.support.grafana_push import (TEAM, forced_prune, grafana, push_json,  # noqa: F401 (fixtures)
                                        pushed_written, retired_team_dashboard, run, team_saved, team_settings)
from tests.support.grafana_server import ADMIN


@pytest.mark.parametrize("person_saves", [True, False], ids=["a person saves between", "nothing between"])
def test_a_delete_answered_503_looks_again_before_its_retry(grafana, run, tmp_path, person_saves):
    """A saves the team dashboard, then stops defining it and pushes --prune. The first DELETE is answered 503 (a
    proxy; not processed). A person's save during the wait was deleted by the retry, exit 0; now it is kept, the
    push fails (exit 3) saying why. With nothing saved between, the retry deletes it (exit 0)."""
    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    real, deletes = grafana._delete, []

    def delete(uid):
        deletes.append(uid)
        if uid == TEAM and len(deletes) == 1:
            if person_saves:
                stored = grafana.state.dashboards[uid]
                grafana._store(uid, {**stored["dashboard"], "title": "Edited by alice"}, stored["folderUid"], "",
                               "alice")
            return 503, {"message": "Service Unavailable"}, None
        return real(uid)

    grafana._delete = delete
    code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "a2", ["alpha"], team=False), "--prune")
    if person_saves:
        assert code == 3 and deletes == [TEAM], stderr
        assert grafana.state.dashboards[TEAM]["dashboard"]["title"] == "Edited by alice"
        assert "changed in Grafana by alice since the plan; not deleted" in stdout, stdout
    else:
        assert code == 0 and json.loads(stdout)["written"] == [TEAM] and deletes == [TEAM, TEAM], stderr
        assert TEAM not in grafana.state.dashboards


@pytest.mark.parametrize("status, ours", [(429, False), (503, True)], ids=["429: not processed", "503: may have been"])
def test_a_dashboard_someone_else_deletes_between_two_attempts_is_listed_deleted_only_when_ours_may_have_reached(
        grafana, run, tmp_path, status, ours):
    """The first DELETE of the retired team dashboard is answered `status` by a proxy in front of Grafana, and a person
    deletes the dashboard meanwhile; the look before the retry finds it gone. A 429 says the request was not
    processed: only the person can have deleted it, so it is not listed as deleted (it was, exit 0, nothing said). A
    503 may be a gateway's answer to a request Grafana received: listed as deleted, with a note that nothing tells
    gpudash's delete from the person's."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="DELETE", status=status,
                          callback=lambda: grafana.state.dashboards.pop(TEAM)))
        code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "a2", ["alpha"], team=False), "--prune",
                                     url=proxy.url)
    assert code == 0, stderr
    assert TEAM not in grafana.state.dashboards and ("DELETE", f"/api/dashboards/uid/{TEAM}") not in grafana.state.log
    assert json.loads(stdout)["written"] == ([TEAM] if ours else []), stdout
    if ours:
        assert f"note: dashboard {TEAM}: a delete of gpudash's was sent and its answer lost, then the dashboard was " \
               "found gone: deleted by that delete or by someone else meanwhile (nothing tells which)" in stderr
    else:
        assert f"note: dashboard {TEAM}: already gone (no delete of gpudash's reached Grafana, or the first was " \
               "answered \"not found\"): someone else deleted it; not listed as deleted" in stderr


def test_a_push_stopped_after_a_delete_still_says_whether_that_delete_was_gpudashs(grafana, run, tmp_path,
                                                                                   monkeypatch):
    """The first retired dashboard's DELETE is answered 503 while a person deletes it (noted: nothing tells whose
    delete it was); then a second Ctrl-C stops the push during the next delete. The note was printed only when the
    push returned, so it was lost; now it is printed, and the exit stays the interruption's."""
    from generator.errors import EXIT_INTERRUPTED
    from generator.targets import grafana_sync
    from tests.support.fault_proxy import FaultProxy, Rule

    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    retired = sorted(uid for uid in grafana.state.dashboards if uid != TEAM)[:2]
    real, seen = grafana_sync._delete, []

    def delete(client, change, *args):
        seen.append(change.name)
        if len(seen) == 2:
            raise KeyboardInterrupt  # the second Ctrl-C, while the second delete is under way
        return real(client, change, *args)

    monkeypatch.setattr(grafana_sync, "_delete", delete)
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{retired[0]}$", method="DELETE", status=503,
                          callback=lambda: grafana.state.dashboards.pop(retired[0])))
        code, _, stderr = push_json(run, "--config", team_settings(tmp_path, "a2", ["alpha"], bundled=False), "--prune",
                                "--allow-mass-prune", url=proxy.url)
    assert code == EXIT_INTERRUPTED and seen == retired, stderr
    assert f"note: dashboard {retired[0]}: a delete of gpudash's was sent and its answer lost" in stderr, stderr
    assert retired[1] in grafana.state.dashboards


def test_a_dashboard_found_gone_before_the_retry_and_created_anew_is_not_said_still_there(grafana, run, tmp_path):
    """The retired team dashboard's DELETE is answered 503 while a person deletes it; the look before the retry finds
    it gone, and the person creates it anew before gpudash reads it back. The failure read "Grafana answered the
    delete, but the dashboard is still there" (Grafana answered no delete, and this is another dashboard). It says it
    was found gone and is there again, created anew; the new dashboard is kept."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    kept = grafana.state.dashboards[TEAM]

    def person_deletes_then_creates_anew():
        grafana.state.dashboards.pop(TEAM)
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="GET", action="before", skip=1, callback=lambda:
                          grafana._store(TEAM, {**kept["dashboard"], "title": "Made anew by alice"}, kept["folderUid"],
                                         "", "alice")))

    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="DELETE", status=503,
                          callback=person_deletes_then_creates_anew))
        code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "a2", ["alpha"], team=False), "--prune",
                                     url=proxy.url)
    assert code == 3, stderr
    assert grafana.state.dashboards[TEAM]["dashboard"]["title"] == "Made anew by alice"
    assert "still there" not in stdout + stderr, stdout + stderr
    assert "found gone" in stdout and "someone created it anew meanwhile; not deleted" in stdout, stdout


def test_a_delete_answered_not_found_is_not_listed_as_deleted(grafana, run, tmp_path):
    """A person deletes the retired team dashboard right before gpudash's DELETE reaches Grafana (after its last
    look): Grafana answers 404. It was listed as deleted by gpudash; now it is not, and a note says so."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="DELETE", action="before",
                          callback=lambda: grafana.state.dashboards.pop(TEAM)))
        code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "a2", ["alpha"], team=False), "--prune",
                                     url=proxy.url)
    assert code == 0 and json.loads(stdout)["written"] == [], stderr
    assert f"note: dashboard {TEAM}: already gone (no delete of gpudash's reached Grafana, or the first was " \
           "answered \"not found\")" in stderr


def test_a_dashboard_found_gone_after_a_refused_connection_was_not_deleted_by_gpudash(grafana):
    """A refused connection sends nothing: a delete whose only attempt was refused (Grafana restarting; it is up again
    during the wait), and whose retry's look found the dashboard gone (a person deleted it meanwhile), answers GONE,
    not deleted (was: answered as a delete that happened)."""
    from generator.clients.deadline import Deadline
    from generator.clients.grafana import GONE, GrafanaClient
    from tests.integration.test_refused_then_up import ComesUp, Front

    grafana._store(TEAM, {"title": "Team A training", "tags": []}, "", "", "alice")
    front = Front()
    client = GrafanaClient(f"http://127.0.0.1:{front.port}", token=ADMIN,
                           deadline=Deadline(60, clock=ComesUp(front, grafana.url)))

    def look() -> bool:
        grafana.state.dashboards.pop(TEAM)  # the person's delete, seen by the look
        return False

    try:
        assert client.delete(TEAM, look) == GONE
    finally:
        front.close()
    assert ("DELETE", f"/api/dashboards/uid/{TEAM}") not in grafana.state.log


def test_a_persons_save_just_before_the_delete_reaches_grafana_is_refused_and_never_deleted(grafana, run, tmp_path):
    """Alice opened the retired team dashboard before the prune and saves her change right after gpudash's last look,
    just before its DELETE reaches Grafana (a delete takes no version). Her save was accepted and then deleted with
    the dashboard, exit 0, nobody told. Now gpudash saves the dashboard unchanged (with the version it looked at)
    right before each delete: her save, made from the version she opened, is refused (412 version-mismatch: the UI
    says "Someone else has updated this dashboard" and keeps her change), so no save Grafana accepted is deleted."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, opened = retired_team_dashboard(grafana, run, tmp_path)
    saved = []
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="DELETE", action="before", callback=lambda:
                          saved.append(grafana.save_in_ui(TEAM, opened, lambda d: d.update(title="Alice's")))))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert saved == [False], "a save Grafana accepted was deleted" if saved == [True] else saved
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.dashboards, stderr


def test_a_persons_save_between_the_last_look_and_the_guarding_save_keeps_the_dashboard(grafana, run, tmp_path):
    """Alice's save lands after gpudash's last look and before its unchanged save ahead of the delete: that save is
    refused (412), the delete is not sent, her change is kept and the push fails saying who changed it."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, opened = retired_team_dashboard(grafana, run, tmp_path)
    saved = []
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path="^/api/dashboards/db$", method="POST", action="before", callback=lambda:
                          saved.append(grafana.save_in_ui(TEAM, opened, lambda d: d.update(title="Alice's")))))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert saved == [True] and code == 3, stderr
    assert grafana.state.dashboards[TEAM]["dashboard"]["title"] == "Alice's"
    assert ("DELETE", f"/api/dashboards/uid/{TEAM}") not in grafana.state.log
    assert "changed in Grafana by alice since the plan; not deleted" in stdout, stdout


def test_a_grafana_that_keeps_the_version_for_an_unchanged_save_is_told_and_the_delete_goes_on(grafana, run,
                                                                                            tmp_path):
    """Should Grafana answer gpudash's unchanged save before a delete with the version it had (a store that numbers
    only changes), a save from that version would not be refused: the delete goes on as before the guard existed,
    and a note says the moment before it was not covered."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, opened = retired_team_dashboard(grafana, run, tmp_path)

    def kept(body: bytes) -> bytes:  # the store makes no new version of a save that changes nothing
        entry = grafana.state.dashboards[TEAM]
        del entry["versions"][-1]
        entry["dashboard"]["version"] = opened
        return json.dumps({**json.loads(body), "version": opened}).encode()

    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path="^/api/dashboards/db$", method="POST", action="rewrite", callback=kept))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.dashboards, stderr
    assert f"note: dashboard {TEAM}: Grafana kept version {opened} for gpudash's unchanged save right before the " \
           "delete, so a person's save in the moment between would not have been refused" in stderr, stderr


@pytest.mark.parametrize("person_restores", [False, True], ids=["gpudash saved last", "a person saved it unchanged"])
def test_a_delete_refused_after_its_unchanged_save_leaves_the_dashboard_prunable_by_the_next_run(
        grafana, run, tmp_path, person_restores):
    """The DELETE after gpudash's unchanged save is refused (403: a role without delete). The dashboard keeps its
    content and its evidence: the next --prune (with the role mended) deletes it as gpudash's own, whether gpudash's
    version was the latest (its message is saved again) or a person's save of the same content was (a plain note)."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    if person_restores:
        grafana.edit_in_ui(TEAM, lambda d: None, user="bob")
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="DELETE", status=403))
        code, stdout, _ = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert code == 3 and TEAM in grafana.state.dashboards, stdout
    assert grafana.state.dashboards[TEAM]["versions"][-1]["createdBy"] == "gpudash-sa"
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.dashboards, stderr


@pytest.mark.parametrize("answer", [{"id": None}, {"id": "7"}, {}], ids=["null", "a string", "left out"])
def test_a_look_that_reads_no_dashboard_id_where_the_plan_read_one_refuses_the_delete_saying_so(grafana, answer):
    """The plan read the retired dashboard's id; the look before the delete reads it without one (a proxy or cache
    that drops the field, a Grafana answering otherwise). Nothing then shows it is the same dashboard, not one deleted
    and created anew: the delete is refused, and the refusal says what was read, not that someone deleted and made it
    anew (it said "deleted and created anew by gpudash-sa since the plan")."""
    from generator.clients.grafana import GrafanaClient
    from generator.targets import grafana_sync
    from tests.support.fault_proxy import FaultProxy, Rule

    folder = {"uid": "gpudash", "title": "GPU monitoring"}
    with FaultProxy(grafana.url) as proxy:
        client = GrafanaClient(proxy.url, token=ADMIN)
        model = {"uid": TEAM, "title": "Team A training", "tags": ["gpudash-managed"]}
        team_saved(client, folder, model)
        changes = grafana_sync.plan(client, {}, folder, uid_prefix="gpudash")
        assert [c.name for c in changes if c.action == "delete"] == [TEAM]

        def without_id(body: bytes) -> bytes:
            read = json.loads(body)
            dashboard = {k: v for k, v in read["dashboard"].items() if k != "id"}
            return json.dumps({**read, "dashboard": {**dashboard, **answer}}).encode()

        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="GET", action="rewrite", callback=without_id))
        outcomes = forced_prune(client, changes, folder)
    (failed,) = [o for o in outcomes if o.error]
    assert TEAM in grafana.state.dashboards and "created anew" not in failed.error, failed.error
    assert "Grafana's answer gives no dashboard id" in failed.error and "not deleted" in failed.error, failed.error


@pytest.mark.parametrize("answer", [b"<html><body>Signed out</body></html>", b'{"status": "error"}'],
                         ids=["an HTML page", "JSON of another shape"])
def test_a_delete_whose_answer_is_not_grafanas_is_read_back(grafana, run, tmp_path, answer):
    """A proxy forwards the DELETE (Grafana deletes the retired dashboard) and answers 200 with something else than
    Grafana's answer. The push failed (exit 3, "not a valid API answer") for a dashboard it had deleted. The answer
    proves nothing either way, so the dashboard is read back: gone, it is listed as deleted with a note that nothing
    tells gpudash's delete from someone else's; still there, the failure stands (below)."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="DELETE", action="body", body=answer,
                          headers={"Content-Type": "text/html" if answer.startswith(b"<") else "application/json"}))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.dashboards, stderr
    assert f"note: dashboard {TEAM}: a delete of gpudash's was sent and its answer was not Grafana's" in stderr, stderr


def test_a_delete_answered_with_something_else_that_did_not_happen_stays_a_failure(grafana, run, tmp_path):
    """The same answer from a proxy that did not forward the DELETE: the dashboard reads back there, so the push fails
    (exit 3) saying the answer was not Grafana's, and the dashboard is kept."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="DELETE", status=200, times=99,
                          body=b"<html><body>Signed out</body></html>", headers={"Content-Type": "text/html"}))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert code == 3 and TEAM in grafana.state.dashboards, stderr
    assert "not JSON" in stdout and TEAM in stdout, stdout


def test_a_dashboard_made_anew_under_its_uid_is_not_deleted_when_no_answer_gives_an_id(grafana):
    """Every dashboard answer comes without its id (a proxy or cache in front of Grafana that drops the field), the
    plan's as well as the look's. Between the plan and the push a person deletes the retired dashboard and imports
    their own under its uid (tagged as it was, in the same folder): Grafana numbers its versions from 1 again, so it
    reads at the plan's version, and only the id could tell it from the one the plan read. It was deleted (the look
    compared ids only where the plan read one), with the person's work; then the push refused it (exit 3) while the
    plan still listed the delete. Now the plan plans no delete of a dashboard read without an id, and says why."""
    from generator.clients.grafana import GrafanaClient
    from generator.targets import grafana_sync
    from tests.support.fault_proxy import FaultProxy, Rule

    folder = {"uid": "gpudash", "title": "GPU monitoring"}

    def without_id(body: bytes) -> bytes:
        read = json.loads(body)
        return json.dumps({**read, "dashboard": {k: v for k, v in read["dashboard"].items() if k != "id"}}).encode()

    with FaultProxy(grafana.url) as proxy:
        client = GrafanaClient(proxy.url, token=ADMIN)
        model = {"uid": TEAM, "title": "Team A training", "tags": ["gpudash-managed"]}
        team_saved(client, folder, model)
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="GET", action="rewrite", callback=without_id,
                          times=99))
        changes = grafana_sync.plan(client, {}, folder, uid_prefix="gpudash")
        assert [c.name for c in changes if c.kind == "dashboard"] == [], [(c.name, c.action) for c in changes]
        assert any(f"not defined here were read without a dashboard id ({TEAM}): --prune does not delete them" in note
                   for note in client.notes), client.notes
        planned = grafana.state.dashboards.pop(TEAM)  # the person deletes it, then imports their own under its uid
        grafana._store(TEAM, {"uid": TEAM, "title": "Alice's own", "tags": ["gpudash-managed"]},
                       planned["folderUid"], "imported", "alice")
        outcomes = forced_prune(client, changes, folder)
    assert TEAM in grafana.state.dashboards and grafana.state.dashboards[TEAM]["dashboard"]["title"] == "Alice's own"
    assert [o for o in outcomes if o.error] == [] and ("DELETE", f"/api/dashboards/uid/{TEAM}") not in grafana.state.log


def test_a_retired_dashboard_a_person_annotated_is_not_pruned_without_force(grafana, run, tmp_path):
    """Alice marks an incident on the retired team dashboard's graph (an annotation: no new version, the dashboard's
    content unchanged). Grafana's delete of a dashboard deletes its annotations with it, so a --prune deleted her
    note, exit 0, nothing said: her work, which no version records, is an edit the plan must see (refused without
    --force, the annotation kept)."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.annotate(TEAM, "ECC storm on node gpu-7 started here")
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert [a["text"] for a in grafana.state.annotations] == ["ECC storm on node gpu-7 started here"], \
        (code, stdout, stderr)
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM], stdout
    assert "it carries 1 annotation(s) made on its graphs (by alice), which Grafana deletes with it; --prune --force " \
           "deletes them with it" in stdout, stdout
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--force")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and grafana.state.annotations == [], stderr


def test_a_dashboard_annotated_between_the_plan_and_the_delete_is_not_deleted_even_forced(grafana):
    """Bob annotates the retired dashboard after the plan (which saw no annotation) and before the push: --force
    agreed to delete what the plan showed, not his note since; the look before the delete refuses it."""
    from generator.clients.grafana import GrafanaClient
    from generator.targets import grafana_sync

    folder = {"uid": "gpudash", "title": "GPU monitoring"}
    client = GrafanaClient(grafana.url, token=ADMIN)
    model = {"uid": TEAM, "title": "Team A training", "tags": ["gpudash-managed"]}
    team_saved(client, folder, model)
    changes = grafana_sync.plan(client, {}, folder, uid_prefix="gpudash")
    assert [(c.name, c.edited) for c in changes if c.action == "delete"] == [(TEAM, False)]
    grafana.annotate(TEAM, "driver rollback at 14:02", user="bob")
    outcomes = forced_prune(client, changes, folder)
    assert TEAM in grafana.state.dashboards and len(grafana.state.annotations) == 1
    (failed,) = [o for o in outcomes if o.error]
    assert "annotated by bob since the plan; not deleted" in failed.error, failed.error


def test_a_retired_dashboard_whose_annotations_cannot_be_read_is_refused_not_a_failed_plan(grafana, run, tmp_path):
    """The annotations read is refused (403: a role without annotations:read): nothing shows no one's work goes with
    the dashboard. The plan does not fail for it (the other changes stand): that delete is refused without --force,
    saying why."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path="^/api/annotations", method="GET", status=403))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM] and TEAM in grafana.state.dashboards, stderr
    assert "its annotations, which Grafana deletes with it, could not be read" in stdout, stdout


@pytest.mark.parametrize("scopes", [["annotations:*"], ["annotations:type:dashboard", "dashboards:uid:elsewhere"]],
                         ids=["by annotation type only", "another dashboard's scope"])
def test_a_retired_dashboard_whose_annotations_the_account_is_not_shown_to_read_is_not_pruned_without_force(
        grafana, run, tmp_path, scopes):
    """Grafana's annotations API leaves out what the caller may not read instead of refusing: gpudash's account,
    whose annotations:read scopes do not cover the retired dashboard by its uid or folder (Grafana's reading since
    annotationPermissionUpdate went GA), is answered with none while Alice's incident note is on it. The --prune
    deleted the dashboard and her note (exit 0). An answer of none now counts only where the account's permissions
    show it reads them: refused without --force, saying why; --force deletes it."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.annotate(TEAM, "ECC storm on node gpu-7 started here")
    grafana.state.permissions[ADMIN] = {"annotations:read": scopes, "dashboards:read": ["dashboards:*"]}
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert len(grafana.state.annotations) == 1 and TEAM in grafana.state.dashboards, (code, stdout, stderr)
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM], stdout
    assert ("its annotations, which Grafana deletes with it, are not shown readable by gpudash's account "
            "(gpudash's account's annotations:read scopes") in stdout, stdout
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--force")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and grafana.state.annotations == [], stderr


def test_a_grafana_that_lists_no_permissions_needs_force_to_prune_a_dashboard(grafana, run, tmp_path):
    """A Grafana without /api/access-control/user/permissions (before role-based access control) shows nothing of
    what gpudash's account may read: an answer of no annotations proves nothing, so the prune needs --force."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.state.permissions[ADMIN] = None
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM] and TEAM in grafana.state.dashboards, stderr
    assert "Grafana lists no permissions of gpudash's account" in stdout, stdout
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--force")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.dashboards, stderr


def test_annotations_answered_without_ids_are_not_read_as_the_same_ones_the_plan_saw(grafana):
    """Every annotation comes without its id (a proxy that drops the field). The plan saw Alice's note; Bob adds one
    before the forced push. The look compared ids, None for both, so Bob's note read as one the plan had seen and
    was deleted with the dashboard. An annotation without an id is now not a valid answer: the plan says the
    annotations could not be read, and the look refuses the delete, forced or not."""
    from generator.clients.grafana import GrafanaClient
    from generator.targets import grafana_sync
    from tests.support.fault_proxy import FaultProxy, Rule

    folder = {"uid": "gpudash", "title": "GPU monitoring"}
    model = {"uid": TEAM, "title": "Team A training", "tags": ["gpudash-managed"]}

    def without_ids(body: bytes) -> bytes:
        return json.dumps([{k: v for k, v in note.items() if k != "id"} for note in json.loads(body)]).encode()

    with FaultProxy(grafana.url) as proxy:
        client = GrafanaClient(proxy.url, token=ADMIN)
        team_saved(client, folder, model)
        grafana.annotate(TEAM, "driver rollback at 14:02")
        proxy.inject(Rule(path="^/api/annotations$", method="GET", action="rewrite", callback=without_ids, times=99))
        changes = grafana_sync.plan(client, {}, folder, uid_prefix="gpudash")
        (delete,) = [c for c in changes if c.action == "delete"]
        assert delete.edited and "could not be read" in " ".join(delete.details), delete.details
        grafana.annotate(TEAM, "fan failure on gpu-3", user="bob")
        outcomes = forced_prune(client, changes, folder)
    assert TEAM in grafana.state.dashboards and len(grafana.state.annotations) == 2
    (failed,) = [o for o in outcomes if o.error]
    assert "each with its id" in failed.error, failed.error


@pytest.mark.parametrize("failed_runs, kept", [(1, 0), (3, 3)], ids=["one failed run", "a history of 3 versions"])
def test_gpudashs_unchanged_saves_before_failed_deletes_leave_the_person_who_edited_it_named_and_on_record(
        grafana, run, tmp_path, failed_runs, kept):
    """Alice edits the retired team dashboard; push --prune --force saves it unchanged right before its delete, and the
    delete is refused (403) `failed_runs` times. The next plan named gpudash's own account as the one who changed it;
    and where Grafana keeps `kept` versions (versions_to_keep), the failed runs' saves pushed gpudash's own save out of
    the history, so the dashboard read as never saved by gpudash and --prune left it for good. Now each such save
    records what gpudash's last save did, and who saved over it: the next --prune is refused naming alice, and
    --prune --force deletes it."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.edit_in_ui(TEAM, lambda d: d.update(title="Alice's training GPUs"))
    grafana.versions_to_keep = kept
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="DELETE", status=403, times=failed_runs))
        for _ in range(failed_runs):
            code, stdout, _ = push_json(run, "--config", pruning, "--prune", "--force", url=proxy.url)
            assert code == 3 and TEAM in grafana.state.dashboards, stdout
    assert grafana.state.dashboards[TEAM]["versions"][-1]["createdBy"] == "gpudash-sa"
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM], (stdout, stderr)
    assert "is no longer defined, but alice changed it in Grafana since gpudash pushed it" in stdout, stdout
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--force")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.dashboards, stderr


def test_an_unreadable_answer_to_the_look_before_a_retry_is_reported_as_that_reads_not_as_the_deletes(
        grafana, run, tmp_path):
    """The retired team dashboard's DELETE is answered 429 (not processed); the look before the retry reads the
    versions, which a proxy answers with JSON of another shape while a person deletes the dashboard. That answer was
    taken for the delete's own: the dashboard, read back gone, was listed as deleted with a note that "a delete of
    gpudash's was sent and its answer was not Grafana's" (no delete of gpudash's was processed). Now the failure is
    the look's, saying which answer did not read; nothing is listed as deleted."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)

    def person_deletes_it_meanwhile(body: bytes) -> bytes:
        grafana.state.dashboards.pop(TEAM, None)
        return b'{"status": "error"}'

    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="DELETE", status=429, callback=lambda:
                          proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}/versions$", method="GET",
                                            action="rewrite", callback=person_deletes_it_meanwhile))))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert TEAM not in grafana.state.dashboards
    assert "answer was not Grafana's" not in stderr, stderr
    assert code == 3 and json.loads(stdout)["written"] == [], (stdout, stderr)
    (failed,) = json.loads(stdout)["failed"]
    assert failed["name"] == TEAM and "versions" in failed["error"] and "not a valid API answer" in failed["error"], \
        failed


@pytest.mark.parametrize("person, said", [
    ("moves it to their folder", "moved to folder team since the plan; not deleted"),
    ("removes its gpudash tag", "tag was removed by alice since the plan; not deleted"),
    ("edits it, having opened it after gpudash's unchanged save", "changed in Grafana by alice since the plan; not "
                                                                   "deleted"),
])
def test_a_persons_change_while_the_work_around_the_dashboard_is_read_again_keeps_it(grafana, run, tmp_path, person,
                                                                                     said):
    """Right before a delete gpudash looks at the dashboard, saves it unchanged, then reads again what people made
    around it (annotations, public dashboard, permissions, playlists): five calls or more. A person who moved the
    dashboard to their folder, removed its gpudash tag, or saved it from the version gpudash's unchanged save made, in
    that time, had it deleted (exit 0, listed deleted): nothing looked at the dashboard itself after those reads. Now
    it is looked at again last: kept, and the push fails saying why."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.state.folders["team"] = {"id": 900, "uid": "team", "title": "Alice's team"}
    acts = {"moves it to their folder": lambda: grafana.move(TEAM, "team"),
            "removes its gpudash tag": lambda: grafana.edit_in_ui(TEAM, lambda d: d.update(tags=["alice"])),
            "edits it, having opened it after gpudash's unchanged save": lambda: grafana.save_in_ui(
                TEAM, grafana.state.dashboards[TEAM]["dashboard"]["version"], lambda d: d.update(title="Alice's"))}
    with FaultProxy(grafana.url) as proxy:  # the plan reads the playlists once; the look before the delete again
        proxy.inject(Rule(path="^/api/playlists$", method="GET", action="before", skip=1, callback=acts[person]))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--allow-mass-prune", url=proxy.url)
    assert proxy.faults() and TEAM in grafana.state.dashboards, stdout  # (the person acted)
    assert code == 3 and TEAM not in json.loads(stdout)["written"] and said in stdout, stdout + stderr

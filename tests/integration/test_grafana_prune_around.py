"""What people made around a retired Grafana dashboard that Grafana's delete of it takes with it, and no version of it
records: the permissions set on it and the playlists picking it (its annotations and public dashboard:
test_grafana_delete_retries.py, test_grafana_public_dashboards.py). A prune deletes it only where a valid answer shows
none are there, or with --force; what is made since the plan is never deleted."""

from __future__ import annotations

import json

import pytest

from tests.support.grafana_push import (TEAM, forced_prune, grafana, push_json, pushed_written,  # noqa: F401
                                        retired_team_dashboard, run, team_saved, team_settings)
from tests.support.grafana_server import ADMIN

FOLDER = {"uid": "gpudash", "title": "GPU monitoring"}
MODEL = {"uid": TEAM, "title": "Team A training", "tags": ["gpudash-managed"]}


def _planned(grafana):
    """A client, and the plan that prunes the team dashboard (pushed by gpudash, no longer defined): not edited."""
    from generator.clients.grafana import GrafanaClient
    from generator.targets import grafana_sync

    client = GrafanaClient(grafana.url, token=ADMIN)
    team_saved(client, FOLDER, MODEL)
    changes = grafana_sync.plan(client, {}, FOLDER, uid_prefix="gpudash")
    assert [(c.name, c.edited) for c in changes if c.action == "delete"] == [(TEAM, False)], \
        [c.details for c in changes]
    return client, changes


def _folder_gives(grafana) -> None:
    """The folder's permissions, which every dashboard in it inherits (and which its delete leaves)."""
    grafana.state.folder_acl["gpudash"] = [grafana._acl_entry(2, role="Editor"), grafana._acl_entry(1, role="Viewer"),
                                           grafana._acl_entry(4, team="platform")]


def test_a_retired_dashboard_with_only_its_folders_and_its_creators_permissions_is_pruned(grafana, run, tmp_path):
    """The control: the dashboard's permissions are the folder's (inherited) and the Admin Grafana gave gpudash's
    account when it created it; nothing is in a playlist but by tag. --prune deletes it (exit 0), nothing refused."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    _folder_gives(grafana)
    grafana.playlist("every gpudash board", [("dashboard_by_tag", "gpudash-managed")])
    assert [e["userLogin"] for e in grafana.state.acl[TEAM]] == ["gpudash-sa"]
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.dashboards, stdout
    assert grafana.state.playlists[0]["items"] == [{"type": "dashboard_by_tag", "value": "gpudash-managed"}]


@pytest.mark.parametrize("grant, said", [
    ({"team": "noc"}, "team noc: View"),
    ({"user": "alice", "permission": 2}, "user alice: Edit"),
    ({"role": "Viewer"}, "role Viewer: View"),
    ({"user": "bob", "permission": 4}, "user bob: Admin"),
], ids=["a team", "a user", "a basic role", "another user as Admin"])
def test_a_retired_dashboard_a_person_gave_permissions_on_is_not_pruned_without_force(grafana, run, tmp_path, grant,
                                                                                       said):
    """Alice gives the NOC team (or a user, or a basic role) access to the retired team dashboard itself (Dashboard
    settings, Permissions): no version records it, the content is unchanged, and Grafana's delete of the dashboard
    deletes its permissions. A --prune deleted both, exit 0, nothing said. Now it is refused without --force, naming
    who holds what; --force deletes it."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    _folder_gives(grafana)
    grafana.permit(TEAM, grant.pop("permission", 1), **grant)
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert TEAM in grafana.state.dashboards and len(grafana.state.acl[TEAM]) >= 1, (code, stdout, stderr)
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM], stdout
    assert f"a person gave permissions on it ({said}), which Grafana deletes with it; --prune --force" in stdout, stdout
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--force")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.acl, stderr


@pytest.mark.parametrize("by", ["dashboard_by_uid", "dashboard_by_id"])
def test_a_retired_dashboard_in_a_persons_playlist_is_not_pruned_without_force(grafana, run, tmp_path, by):
    """Bob's "NOC wall" playlist shows the retired team dashboard (picked by uid, or by id as older Grafana did).
    Grafana's delete of the dashboard deletes an item by id with it and leaves one by uid pointing at nothing: a
    --prune did that, exit 0. Now it is refused without --force, naming the playlist, which stays as it was; --force
    deletes the dashboard."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    value = TEAM if by == "dashboard_by_uid" else str(grafana.state.dashboards[TEAM]["id"])
    grafana.playlist("NOC wall", [("dashboard_by_uid", "gpudash-overview"), (by, value)])
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert TEAM in grafana.state.dashboards, (code, stdout, stderr)
    assert grafana.state.playlists[0]["items"][1] == {"type": by, "value": value}
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM], stdout
    assert "it is in playlist(s) 'NOC wall' (pl1), which lose it" in stdout, stdout
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--force")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.dashboards, stderr


@pytest.mark.parametrize("path, fault, said", [
    (r"^/api/dashboards/uid/[^/]+/permissions$", {"status": 403},
     "the permissions set on it, which Grafana deletes with it, could not be read"),
    (r"^/api/playlists$", {"status": 404},
     "the playlists, whose items picking it Grafana deletes with it (by id) or leaves pointing at nothing (by uid), "
     "could not be read"),
    (r"^/api/playlists$", {"action": "rewrite", "callback": lambda body: b"{}"},
     "the playlists, whose items picking it Grafana deletes with it (by id) or leaves pointing at nothing (by uid), "
     "could not be read"),
], ids=["permissions refused", "playlists not found", "playlists not a list"])
def test_a_retired_dashboard_whose_permissions_or_playlists_cannot_be_read_needs_force(grafana, run, tmp_path, path,
                                                                                        fault, said):
    """A read that is refused or not a valid answer shows nothing of what goes with the dashboard: never read as
    none. Refused without --force, saying which read; the plan's other changes stand (exit 1, not a failed plan)."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=path, method="GET", **fault))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM] and TEAM in grafana.state.dashboards, stderr
    assert said in stdout, stdout


def test_a_full_list_of_playlists_is_not_read_as_all_of_them(grafana, run, tmp_path):
    """Grafana's playlist list has no pages: 1,000 playlists (the most gpudash asks for) may be only some of them."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    for n in range(1000):
        grafana.playlist(f"rotation {n}", [("dashboard_by_tag", "gpu")])
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM] and TEAM in grafana.state.dashboards, stderr
    assert "Grafana listed 1000 playlists, the most one answer holds" in stdout, stdout


@pytest.mark.parametrize("page", [100, 50], ids=["SQL store", "unified storage"])
def test_one_page_of_playlists_from_grafana_11_is_not_read_as_all_of_them(grafana, run, tmp_path, page):
    """From Grafana 11 the playlist list answers one page (100 from the SQL store, 50 from unified storage) whatever
    the limit asked, and drops the rest. Bob's "NOC wall", the 110th playlist, picks the retired dashboard by id: a
    prune that read the first page as all of them deleted the dashboard and, with it, Bob's item. Refused without
    --force, saying why; the dashboard and the item stay."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.state.playlist_page = page
    for n in range(109):
        grafana.playlist(f"rotation {n}", [("dashboard_by_tag", "gpu")])
    own_id = str(grafana.state.dashboards[TEAM]["id"])
    grafana.playlist("NOC wall", [("dashboard_by_id", own_id)])
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM] and TEAM in grafana.state.dashboards, stderr
    assert grafana.state.playlists[-1]["items"] == [{"type": "dashboard_by_id", "value": own_id}]
    assert f"Grafana listed exactly {page} playlists" in stdout, stdout


@pytest.mark.parametrize("page", [100, 50], ids=["SQL store", "unified storage"])
def test_fewer_playlists_than_one_page_are_read_as_all_of_them(grafana, run, tmp_path, page):
    """Control: fewer playlists than Grafana's page are all of them (a page is cut only where it is full): none picks
    the retired dashboard, which is pruned without --force."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.state.playlist_page = page
    for n in range(page - 1):
        grafana.playlist(f"rotation {n}", [("dashboard_by_tag", "gpu")])
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.dashboards, stderr


@pytest.mark.parametrize("made, said", [
    (lambda g: g.permit(TEAM, 2, user="carol"), "given permissions on it since the plan (user carol: Edit); not deleted"),
    (lambda g: g.playlist("night shift", [("dashboard_by_uid", TEAM)]),
     "put in playlist(s) since the plan ('night shift' (pl1)); not deleted"),
], ids=["a permission", "a playlist"])
def test_permissions_or_a_playlist_made_between_the_plan_and_the_delete_are_not_deleted_even_forced(grafana, made,
                                                                                                    said):
    """Carol is given access to the retired dashboard (or Bob puts it in a playlist) after the plan, which saw none,
    and before the forced push: --force agreed to delete what the plan showed, not what was made since."""
    client, changes = _planned(grafana)
    made(grafana)
    outcomes = forced_prune(client, changes, FOLDER)
    assert TEAM in grafana.state.dashboards
    (failed,) = [o for o in outcomes if o.error]
    assert said in failed.error, failed.error


def test_annotations_no_longer_shown_readable_at_the_delete_are_not_read_as_none(grafana):
    """The plan read gpudash's account's permissions (annotations:read over the dashboards) and no annotation. Then
    an administrator narrows the account to annotations by type, and Alice annotates the dashboard. Grafana now
    answers the account none (it filters, it does not refuse): the look before the delete used the permissions cached
    at the plan, read none as none and deleted her note with the dashboard. The permissions are read again: refused."""
    client, changes = _planned(grafana)
    grafana.state.permissions[ADMIN] = {"annotations:read": ["annotations:*"], "dashboards:read": ["dashboards:*"]}
    grafana.annotate(TEAM, "thermal throttling from 03:10")
    outcomes = forced_prune(client, changes, FOLDER)
    assert TEAM in grafana.state.dashboards and len(grafana.state.annotations) == 1
    (failed,) = [o for o in outcomes if o.error]
    assert "its annotations are no longer shown readable by gpudash's account" in failed.error, failed.error


def test_an_annotation_made_while_gpudash_saves_before_the_delete_is_not_deleted(grafana, run, tmp_path):
    """Alice annotates the retired dashboard while gpudash's unchanged save before the delete is on its way: after
    the last read of the annotations, which came before that save. Her note was deleted with the dashboard, exit 0.
    The annotations (and the rest of what people made around it) are now read after that save, the last call before
    the DELETE: the delete is refused, her note kept."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path="^/api/dashboards/db$", method="POST", action="before",
                          callback=lambda: grafana.annotate(TEAM, "node gpu-4 drained")))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert TEAM in grafana.state.dashboards and len(grafana.state.annotations) == 1, (code, stdout, stderr)
    assert code == 3 and "annotated by alice since the plan; not deleted" in stdout, (code, stdout)


@pytest.mark.parametrize("holder, read", [({"team": "noc"}, "teams:read"), ({"user": "alice"}, "org.users:read")],
                         ids=["a team, account without teams:read", "a user, account without org.users:read"])
def test_a_retired_dashboard_whose_permissions_grafana_filters_for_the_account_is_not_pruned_without_force(
        grafana, run, tmp_path, holder, read):
    """Grafana's answer of a dashboard's permissions leaves out, without a word, those held by a team the caller may
    not read (teams:read: an Editor's service account has none; Grafana 10-12 always filter so), or by a user it may
    not read (org.users:read: Grafana 9, and later with access control enforced). The NOC team is given View on the
    retired dashboard; gpudash's account, the dashboard's Admin as its creator, reads its permissions but not the
    team: the answer read as none and the prune deleted the dashboard with the team's access, exit 0. Refused without
    --force, saying why; --force deletes it."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.permit(TEAM, 1, **holder)
    grafana.state.permissions[ADMIN] = {k: v for k, v in grafana.state.permissions[ADMIN].items() if k != read}
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert TEAM in grafana.state.dashboards and len(grafana.state.acl[TEAM]) == 2, (code, stdout, stderr)
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM], stdout
    assert f"are not all shown to gpudash's account (it has no {read} over all of them" in stdout, stdout
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--force")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.acl, stderr


def test_a_listed_playlist_answered_not_found_and_listed_still_is_not_read_as_gone(grafana, run, tmp_path):
    """Bob's "NOC wall" playlist picks the retired dashboard by uid. Grafana lists it, and every read of it is
    answered 404 (a proxy that passes /api/playlists but not the paths under it, say): the read was taken for one
    deleted between the list and the read, left out, and the prune deleted the dashboard, exit 0. A 404 counts as
    gone only where Grafana, listing the playlists again, no longer lists it; else the playlists could not be read."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.playlist("NOC wall", [("dashboard_by_uid", TEAM)])
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=r"^/api/playlists/pl1$", method="GET", status=404, times=100,
                          body=b'{"message": "Playlist not found"}'))  # as Grafana's own
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert TEAM in grafana.state.dashboards, (code, stdout, stderr)
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM], stdout
    assert "the playlists, whose items picking it" in stdout and "lists it still" in stdout, stdout


# Grafana 11 and later read a playlist through the resource API, whose not-found is Kubernetes' NotFound message
RESOURCE_API_NOT_FOUND = b'{"message": "playlists.playlist.grafana.app \\"pl1\\" not found", "traceID": ""}'


@pytest.mark.parametrize("said", [None, RESOURCE_API_NOT_FOUND], ids=["Grafana 10", "Grafana 11"])
def test_a_playlist_deleted_between_the_list_and_its_read_is_left_out(said, grafana, run, tmp_path):
    """The control: Bob deletes his playlist right after Grafana listed it; its read is answered 404 (as Grafana 10
    does, or 11 through its resource API) and the list, read again, no longer holds it: gone, and the prune deletes
    the dashboard (exit 0)."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.playlist("NOC wall", [("dashboard_by_uid", TEAM)])

    def deleted() -> None:
        grafana.state.playlists[:] = [p for p in grafana.state.playlists if p["uid"] != "pl1"]
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=r"^/api/playlists/pl1$", method="GET", action="before", callback=deleted) if said is None
                     else Rule(path=r"^/api/playlists/pl1$", method="GET", status=404, body=said, callback=deleted))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.dashboards, stdout


@pytest.mark.parametrize("team", [None, "noc"], ids=["the organization's", "a team's"])
def test_a_retired_dashboard_that_is_a_home_dashboard_is_not_pruned_without_force(grafana, run, tmp_path, team):
    """An administrator made the retired team dashboard the organization's home dashboard (or the NOC team's: their
    wall screens open it). Grafana's delete of the dashboard leaves that preference naming nothing, and everyone it
    applies to lands on Grafana's default home instead: a --prune did that, exit 0. Now it is refused without
    --force, naming whose home it is; --force deletes it."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.set_home("gpudash-overview", team="platform")  # another dashboard's home: nothing of this one
    grafana.set_home(TEAM, team=team)
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert TEAM in grafana.state.dashboards, (code, stdout, stderr)
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM], stdout
    holder = "the organization" if team is None else f"team '{team}'"
    assert f"it is the home dashboard of {holder}: Grafana's delete leaves that preference naming nothing" in stdout
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--force")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.dashboards, stderr


@pytest.mark.parametrize("home", ["retired", "other"], ids=["the retired dashboard's id", "another's id"])
def test_a_home_dashboard_named_by_id_as_before_grafana_10_is_seen(grafana, run, tmp_path, home):
    """Grafana before 10 names the home dashboard by its id alone (homeDashboardId, 0 for none; no
    homeDashboardUID): the organization's naming the retired dashboard's id refuses its prune without --force, naming
    the organization; one naming another dashboard's id is nothing of it."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    named = grafana.state.dashboards[TEAM if home == "retired" else "gpudash-overview"]["id"]
    answer = json.dumps({"theme": "", "homeDashboardId": named, "timezone": ""}).encode()
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=r"^/api/org/preferences$", method="GET", action="rewrite", times=10,
                          callback=lambda body: answer))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    if home == "other":
        assert code == 0 and TEAM not in grafana.state.dashboards, (code, stdout, stderr)
        return
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM] and TEAM in grafana.state.dashboards, stderr
    assert "it is the home dashboard of the organization: Grafana's delete leaves that preference" in stdout, stdout


def test_a_retired_dashboard_whose_home_dashboards_cannot_all_be_read_needs_force(grafana, run, tmp_path):
    """An account without teams:read over every team is answered only the teams it may read, and one without
    orgs.preferences:read is refused the organization's: neither shows no preference names the dashboard. Refused
    without --force, saying why; the organization's and the teams' preferences read, it is pruned (the control)."""
    from tests.support.grafana_server import ADMIN

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.set_home("gpudash-overview", team="platform")
    held = grafana.state.permissions[ADMIN]
    grafana.state.permissions[ADMIN] = {**held, "teams:read": ["teams:id:1"]}
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM] and TEAM in grafana.state.dashboards, stderr
    assert "the home dashboards the organization's and the teams' preferences name" in stdout
    assert "it has no teams:read over all of them" in stdout, stdout
    grafana.state.permissions[ADMIN] = {k: v for k, v in held.items() if k != "orgs.preferences:read"}
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM] and TEAM in grafana.state.dashboards, stderr
    assert "naming nothing, could not be read (the service account may not do this (403)" in stdout, stdout
    grafana.state.permissions[ADMIN] = held
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 0 and TEAM not in grafana.state.dashboards, stderr


def test_a_home_dashboard_made_between_the_plan_and_the_delete_is_not_deleted_even_forced(grafana):
    """The NOC team makes the retired dashboard its home after the plan, which saw no home naming it, and before the
    forced push: --force agreed to delete what the plan showed."""
    client, changes = _planned(grafana)
    grafana.set_home(TEAM, team="noc")
    outcomes = forced_prune(client, changes, FOLDER)
    assert TEAM in grafana.state.dashboards
    (failed,) = [o for o in outcomes if o.error]
    assert "made the home dashboard of since the plan (team 'noc'); not deleted" in failed.error, failed.error


@pytest.mark.parametrize("answer", [b'{"totalCount": 3, "teams": [], "page": 1, "perPage": 1000}', b"[]",
                                    b'{"totalCount": 1, "teams": [{"id": 1}]}'],
                         ids=["short of its count", "not an object", "a team without its name"])
def test_a_team_search_that_is_not_grafanas_answer_is_not_read_as_no_home(grafana, run, tmp_path, answer):
    """A team search that lists fewer teams than it counts (a page dropped by a proxy), or is not shaped as Grafana's,
    shows nothing of the teams' home dashboards: the prune needs --force, never reads it as none."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=r"^/api/teams/search$", method="GET", action="rewrite", times=10,
                          callback=lambda body: answer))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM] and TEAM in grafana.state.dashboards, stderr
    assert "the home dashboards the organization's and the teams' preferences name" in stdout, stdout


def test_alert_rules_unread_right_before_the_delete_where_the_plan_read_them_delete_nothing(grafana):
    """The plan read the alert rules (none links to the retired dashboard). Then gpudash's account loses alerting's
    provisioning read, and Alice links a rule to the dashboard. The look before the forced delete is refused the
    rules' read: a failure shows nothing, never "no rule" (--force agreed to what the plan showed): not deleted."""
    client, changes = _planned(grafana)
    held = grafana.state.permissions[ADMIN]
    grafana.state.permissions[ADMIN] = {k: v for k, v in held.items() if k != "alert.provisioning:read"}
    grafana.alert_rule("Team A GPUs idle", TEAM)
    outcomes = forced_prune(client, changes, FOLDER)
    assert TEAM in grafana.state.dashboards
    (failed,) = [o for o in outcomes if o.error]
    assert "the alert rules could not be read" in failed.error and "now, where the plan read it" in failed.error, \
        failed.error


def test_a_retired_dashboard_an_alert_rule_links_to_is_not_pruned_without_force(grafana, run, tmp_path):
    """Alice made a Grafana-managed alert rule from a panel of the retired team dashboard (the panel menu's "New alert
    rule" links it by __dashboardUid__). Grafana's delete of the dashboard leaves the rule linking to nothing: its
    notifications' dashboard and panel links lead nowhere. --prune did that, exit 0. Now it is refused without --force,
    naming the rule; a rule linked to another dashboard is nothing of it; --force deletes it. A Grafana that refuses
    the rules' read (an account without alerting's provisioning read) needs --force, saying why."""
    from tests.support.grafana_server import ADMIN

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.alert_rule("Overview hot", "gpudash-overview")
    rule = grafana.alert_rule("Team A GPUs idle", TEAM, panel_id=3)
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert TEAM in grafana.state.dashboards, (code, stdout, stderr)
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM], stdout
    assert f"alert rule(s) 'Team A GPUs idle' ({rule}) link themselves to it" in stdout, stdout
    held = grafana.state.permissions[ADMIN]
    grafana.state.permissions[ADMIN] = {k: v for k, v in held.items() if k != "alert.provisioning:read"}
    grafana.state.alert_rules.clear()
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM], stdout
    assert "the alert rules, which may link themselves to it" in stdout and "could not be read" in stdout, stdout
    grafana.state.permissions[ADMIN] = held
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 0 and TEAM not in grafana.state.dashboards, stderr


@pytest.mark.parametrize("scopes", [["folders:uid:gpu"], ["folders:*"]], ids=["some folders", "every folder"])
def test_alert_rules_answered_by_folder_are_read_as_all_only_over_every_folder(grafana, run, tmp_path, scopes):
    """Grafana 11 and later answer the alert rules' read to an account without alerting's provisioning read that
    reads rules by folder (alert.rules:read and folders:read) with the rules of the folders it may read, leaving the
    others out instead of refusing. Alice's rule in the folder `alerts` links to the retired dashboard: an account
    reading the folder `gpu` alone was answered no rule, and --prune deleted the dashboard, exit 0. Now the rules are
    read as all only where its permissions cover every folder (then the rule is named); else the prune needs --force,
    saying why."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    rule = grafana.alert_rule("Team A GPUs idle", TEAM)
    held = grafana.state.permissions[ADMIN]
    grafana.state.permissions[ADMIN] = {**{k: v for k, v in held.items() if k != "alert.provisioning:read"},
                                        "alert.rules:read": scopes, "folders:read": scopes}
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM] and TEAM in grafana.state.dashboards, stderr
    said = (f"alert rule(s) 'Team A GPUs idle' ({rule}) link themselves to it" if scopes == ["folders:*"] else
            "the alert rules, which may link themselves to it")
    assert said in stdout, stdout
    grafana.state.permissions[ADMIN] = held


def test_an_alert_rule_linked_between_the_plan_and_the_delete_is_not_deleted_even_forced(grafana):
    client, changes = _planned(grafana)
    rule = grafana.alert_rule("Team A GPUs idle", TEAM)
    outcomes = forced_prune(client, changes, FOLDER)
    assert TEAM in grafana.state.dashboards
    (failed,) = [o for o in outcomes if o.error]
    assert f"linked to by alert rule(s) since the plan ('Team A GPUs idle' ({rule})); not deleted" in failed.error


@pytest.mark.parametrize("path, answer", [
    (r"^/api/org/preferences$", b"<html>login</html>"), (r"^/api/org/preferences$", b'{"homeDashboardUID": 7}'),
    (r"^/api/teams/search$", b"null"), (r"^/api/teams/search$", b'{"teams": {}}'),
    (r"^/api/teams/1/preferences$", b"[1]"), (r"^/api/v1/provisioning/alert-rules$", b"<html>login</html>"),
    (r"^/api/teams/1/preferences$", b'{"message": "Internal Server Error", "status": "error"}'),
    (r"^/api/org/preferences$", b'{"message": "Unauthorized"}'), (r"^/api/teams/1/preferences$", b'{"items": []}'),
    (r"^/api/v1/provisioning/alert-rules$", b'[{"uid": "r1", "title": "t", "annotations": "x"}]'),
    (r"^/api/v1/provisioning/alert-rules$", b'[{"uid": "r1", "title": "t", "annotations": {"__dashboardUid__": 7}}]')])
def test_garbled_answers_about_homes_and_alert_rules_are_never_read_as_none(grafana, run, tmp_path, path, answer):
    """Whatever comes back where Grafana's preferences, team search or alert rules belong, not shaped as Grafana
    answers them, a prune without --force neither deletes the dashboard nor stops with a traceback: it needs --force.
    Preferences answered 200 with Grafana's error document (its `message`) or with an object of none of their members
    were read as naming no home dashboard (an object was all that was asked), and the dashboard was deleted, exit 0."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.set_home("gpudash-overview", team="platform")  # a team, so that its preferences are read
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=path, method="GET", action="rewrite", times=99, callback=lambda body: answer))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", url=proxy.url)
    assert code == 1 and "Traceback" not in stderr, (code, stderr)
    assert json.loads(stdout)["refused"] == [TEAM] and TEAM in grafana.state.dashboards, stdout


@pytest.mark.parametrize("allow_ui_updates", [False, True], ids=["provider refusing saves", "allowUiUpdates"])
def test_a_retired_dashboard_a_provisioning_file_took_over_is_left_to_its_file(grafana, run, tmp_path,
                                                                              allow_ui_updates):
    """gpudash pushed the team dashboard; then the team provisioned the same uid from a file (gpudash's own
    build/grafana/provisioning, say): the file owns it now, and Grafana refuses to delete a provisioned dashboard.
    --prune of settings that no longer define it saved it unchanged (where the provider allows saves), sent the delete,
    was refused, and failed every run (exit 3). Now it is not planned for deletion: a note names the file; exit 0, the
    dashboard as the file wrote it, no save or delete sent."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.provision(TEAM, "/etc/grafana/dashboards/team-a.json", allow_ui_updates)
    version = grafana.state.dashboards[TEAM]["dashboard"]["version"]
    del grafana.state.log[:]
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 0 and TEAM not in json.loads(stdout)["written"], (code, stdout, stderr)
    assert TEAM in grafana.state.dashboards and grafana.state.dashboards[TEAM]["dashboard"]["version"] == version
    assert not [w for w in grafana.writes() if TEAM in w[1] or w[0] == "DELETE"], grafana.writes()
    assert f"{TEAM} (from /etc/grafana/dashboards/team-a.json)" in stderr, stderr


@pytest.mark.parametrize("allow_ui_updates", [False, True], ids=["provider refusing saves", "allowUiUpdates"])
def test_a_defined_dashboard_a_provisioning_file_took_over_is_never_written(grafana, run, tmp_path, allow_ui_updates):
    """The team provisions the team dashboard gpudash pushed from a file, and its definition changes. A push saved
    over it: refused by a provider that allows no saves (exit 3, every run), or saved where it allows them, until the
    provider writes the file's dashboard back the next time the file changes (the two taking turns). Now it is held,
    --force too (exit 1), naming the file, and nothing is saved."""

    config = team_settings(tmp_path, "a", ["alpha"])
    pushed_written(run, config)
    grafana.provision(TEAM, "/etc/grafana/dashboards/team-a.json", allow_ui_updates)
    team_file = tmp_path / "a" / "dash" / "team_a.py"
    team_file.write_text(team_file.read_text().replace("'Util'", "'GPU utilization'"))
    version = grafana.state.dashboards[TEAM]["dashboard"]["version"]
    for force in ((), ("--force",)):
        code, stdout, stderr = push_json(run, "--config", config, *force)
        assert code == 1 and json.loads(stdout)["refused"] == [TEAM], (code, stdout, stderr)
        assert "provisioned from the file /etc/grafana/dashboards/team-a.json" in stdout, stdout
        assert grafana.state.dashboards[TEAM]["dashboard"]["version"] == version


def _preference_reads(grafana, since: int) -> int:
    """The team preferences read in Grafana's log from entry `since` on."""
    import re

    return sum(bool(re.fullmatch(r"/api/teams/[0-9]+/preferences", path.split("?")[0]))
               for _, path in grafana.state.log[since:])


def _teams_with_homes(grafana, teams: int) -> None:
    for index in range(teams):
        grafana.set_home(f"team-{index}-home", team=f"team-{index}")


def test_a_prune_reads_each_teams_preferences_for_the_plan_before_each_delete_and_after_them(grafana, run, tmp_path):
    """An organization of 20 teams, each with a home dashboard of its own; a push --prune retires the bundled
    dashboards (5). Each team's preferences are read by the plan, right before each delete (nothing after a delete
    shows a home dashboard made of it on Grafana 10 and later) and once after the run's deletes: teams x (deletes +
    2), 140 reads, growing with the organization times what it deletes."""
    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    teams = 20
    _teams_with_homes(grafana, teams)
    before = len(grafana.state.log)
    code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "a2", ["alpha"], bundled=False),
                                     "--prune", "--allow-mass-prune")
    deleted = [c["name"] for c in json.loads(stdout)["changes"] if c["action"] == "delete"]
    assert code == 0 and len(deleted) >= 3 and not set(deleted) & set(grafana.state.dashboards), stderr
    assert _preference_reads(grafana, before) == teams * (len(deleted) + 2), len(deleted)


def _pruning_two(grafana, run, tmp_path):
    """Settings that prune the bundled dashboards (at least 3), pushed before; their uids in the order of deletion."""
    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    pruning = team_settings(tmp_path, "a2", ["alpha"], bundled=False)
    code, stdout, stderr = run("plan", "--no-cloudwatch", "--config", pruning, "--output", "json")
    assert code == 1, (code, stdout, stderr)  # (deletes to make)
    deleted = [c["name"] for c in json.loads(stdout)["changes"] if c["action"] == "delete"]
    assert len(deleted) >= 3, stdout
    return pruning, deleted


MADE = {"home": ("made the home dashboard of team 'noc'", lambda g, uid: g.set_home(uid, team="noc")),
        "rule": ("linked to by alert rule(s) 'GPUs idle'", lambda g, uid: g.alert_rule("GPUs idle", uid)),
        "playlist": ("put in playlist(s) 'night shift'",
                     lambda g, uid: g.playlist("night shift", [("dashboard_by_uid", uid)]))}


@pytest.mark.parametrize("made", list(MADE))
@pytest.mark.parametrize("at", ["first", "last"], ids=["while the first delete runs", "while its own delete runs"])
def test_what_is_made_on_a_dashboard_while_the_deletes_run_is_never_deleted_silently(grafana, run, tmp_path, made,
                                                                                     at, request):
    """A person makes the last dashboard a push --prune deletes the NOC team's home (or links an alert rule to it, or
    puts it in a playlist by uid) while the run's first delete is on its way, or while its own is. Made while the
    first delete runs, the read right before its own delete sees it: it is kept (exit 3), the other deletes done. A
    home made then was deleted with it, exit 0, silently, where the preferences were read once before the run's first
    delete: Grafana 10 and later answer a preference whose dashboard is gone as naming none, so nothing after the
    delete shows it. Made within its own delete's round trip, the look after the deletes, which sees the rule or the
    item still naming the deleted dashboard, lists it as deleted then failed, exit 3, saying what was made."""
    from tests.support.fault_proxy import FaultProxy, Rule

    if made == "home" and at == "last":
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            "a home dashboard set within the round trip of that dashboard's own delete goes with it unreported: "
            "Grafana 10 and later answer a preference whose dashboard is gone as naming no home dashboard (the uid "
            "is looked up from the stored id), and no Grafana API deletes a dashboard on a condition")))
    pruning, deleted = _pruning_two(grafana, run, tmp_path)
    last = deleted[-1]
    said, person = MADE[made]
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{deleted[0] if at == 'first' else last}$", method="DELETE",
                          action="before", callback=lambda: person(grafana, last)))
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--allow-mass-prune", url=proxy.url)
    report = json.loads(stdout)
    assert code == 3 and [f["name"] for f in report["failed"]] == [last], (code, stdout, stderr)
    (failed,) = report["failed"]
    assert ADMIN not in stdout + stderr, (stdout, stderr)
    if at == "first":
        assert last in grafana.state.dashboards and set(report["written"]) == set(deleted) - {last}, report
        since = {"home": "made the home dashboard of since the plan (team 'noc')"}.get(
            made, said.replace(" '", " since the plan ('"))
        assert since in failed["error"] and not failed["written"], failed
    else:
        assert set(report["written"]) == set(deleted) and not set(deleted) & set(grafana.state.dashboards), report
        assert failed["written"] is True and said in failed["error"], failed
        assert "while the run's deletes ran" in failed["error"], failed
        assert "is not mended by running again" in stderr, stderr  # (the summary's fix says so too)


def test_a_look_after_the_deletes_that_cannot_read_the_homes_reports_the_deletes_unconfirmed(grafana, run, tmp_path):
    """The team search after the run's deletes answers a proxy's login page: what was made on the deleted dashboards
    within their deletes' round trips is unknown, never read as none: each delete is listed as done, then failed,
    exit 3."""
    from tests.support.fault_proxy import HTML, FaultProxy, Rule

    pruning, deleted = _pruning_two(grafana, run, tmp_path)
    grafana.set_home("gpudash-elsewhere", team="platform")
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=r"^/api/teams/search$", method="GET", action="body", body=HTML,
                          skip=1 + len(deleted)))  # (the plan's search, and one before each delete)
        code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--allow-mass-prune", url=proxy.url)
    report = json.loads(stdout)
    assert code == 3 and set(report["written"]) == set(deleted) and "Traceback" not in stderr, (code, stdout, stderr)
    assert {f["name"] for f in report["failed"]} == set(deleted), report["failed"]
    unconfirmed = "after the run's deletes, where the read before its delete read them"
    assert all(f["written"] and unconfirmed in f["error"] for f in report["failed"]), report["failed"]


READS = [r"^/api/search$", r"^/api/folders/gpudash$", r"^/api/dashboards/uid/[^/]+$", r"/versions$",
         r"/versions/[0-9]+$", r"^/api/annotations$", r"/public-dashboards$", r"/permissions$", r"^/api/playlists$",
         r"^/api/playlists/pl", r"^/api/org/preferences$", r"^/api/teams/search$", r"^/api/teams/[0-9]+/preferences$",
         r"^/api/v1/provisioning/alert-rules$", r"^/api/access-control/user/permissions$"]


@pytest.mark.parametrize("path", READS)
def test_a_200_carrying_grafanas_error_document_is_never_read_as_none_by_a_prune(grafana, run, tmp_path, path):
    """Every read a push --prune makes answered 200 with Grafana's error document (a proxy, or a plugin failing behind
    a 200): each retired dashboard people made something around (a team's home, a playlist, an annotation, a
    permission and an alert rule) stays, and so do a person's dashboard and a "Save as" copy in gpudash's folder; the
    push refuses or fails (exit 1 or 3), with no traceback and no token in what it prints."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    retired = sorted(uid for uid in grafana.state.dashboards if uid != TEAM)
    with grafana.lock:
        grafana._store("persons", {"title": "Mine", "tags": []}, "gpudash", "", "alice")
        grafana._store("copy", {"title": "Copy", "tags": ["gpudash-managed"]}, "gpudash", "", "alice")
    grafana.set_home(retired[0], team="noc")
    grafana.playlist("wall", [("dashboard_by_uid", retired[1])])
    grafana.annotate(retired[2], "throttled at 03:10")
    grafana.permit(retired[3], 2, user="carol")
    grafana.alert_rule("GPUs idle", retired[3])
    kept = {uid: grafana.state.dashboards[uid]["dashboard"] for uid in ["persons", "copy", *retired[:4]]}
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=path, method="GET", action="body", times=10**6,
                          body=b'{"message": "Internal Server Error", "status": "error"}'))
        code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "a2", ["alpha"], bundled=False),
                                         "--prune", "--allow-mass-prune", url=proxy.url)
    assert code in (1, 3) and "Traceback" not in stderr and ADMIN not in stdout + stderr, (code, stderr)
    assert all(uid in grafana.state.dashboards for uid in kept), (sorted(grafana.state.dashboards), stdout)
    assert all({**grafana.state.dashboards[uid]["dashboard"], "version": 0} == {**model, "version": 0}
               for uid, model in kept.items()), stdout  # (an unchanged save before a delete moves the version)

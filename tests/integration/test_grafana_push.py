"""gpudash plan/push against the Grafana API test server: idempotent, never clobbering, fault tolerant."""

from __future__ import annotations

import json

import pytest

from generator.artifacts import grafana_dashboards
from generator.project import load_project
from generator.targets import grafana_sync
from generator.markers import GRAFANA_OWNER_TAG
from generator.ownership import (CLUSTERS_CUT, grafana_claim, grafana_message, grafana_recorded_claims,
                                 grafana_recorded_publisher)
from generator.clients.grafana import GrafanaClient, InvalidAnswer
from generator.targets.progress import Progress
from generator.targets.prune_guard import PruneRefused
from tests.support.grafana_push import (DASHBOARDS_DIR, TEAM_DASHBOARD, built_uids, dashboard_contents,  # noqa: F401
                                        grafana, push_json, run)
from tests.support.built import default_desired
from tests.support.grafana_server import ADMIN, BASIC_ADMIN, VIEWER, Fault, GrafanaTestServer

UIDS = ["gpudash-all-metrics", "gpudash-by-pod", "gpudash-health", "gpudash-overview"]


def test_first_push_creates_folder_and_dashboards_and_the_second_writes_nothing(grafana, run):
    code, stdout, stderr = push_json(run)
    assert code == 0, stderr
    assert sorted(json.loads(stdout)["written"]) == sorted(["gpudash", *UIDS])
    assert grafana.state.folders["gpudash"]["title"] == "GPU monitoring"
    assert sorted(grafana.state.dashboards) == UIDS
    stored = grafana.state.dashboards["gpudash-by-pod"]
    assert stored["folderUid"] == "gpudash"
    assert stored["versions"][-1]["message"].startswith("gpudash sha256:")
    writes = len(grafana.writes())
    code, stdout, _ = push_json(run)
    assert code == 0 and json.loads(stdout)["written"] == []
    assert len(grafana.writes()) == writes  # the second push wrote nothing
    code, stdout, _ = run("plan", "--no-cloudwatch", "--output", "json")
    assert code == 0 and json.loads(stdout)["summary"] == {"unchanged": 5}


def test_a_folder_someone_else_creates_between_plan_and_push_is_not_listed_as_created(grafana, run):
    """The plan finds no folder; right before gpudash's create reaches Grafana someone else creates it (same uid).
    Grafana answers 409 and the folder reads: it was listed as written by gpudash. Now it is not listed as created,
    and a note says so; the dashboards go into it."""
    from tests.support.fault_proxy import FaultProxy, Rule

    def someone():
        grafana.state.folders["gpudash"] = {"id": 98, "uid": "gpudash", "title": "GPU monitoring"}

    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path="^/api/folders$", method="POST", action="before", callback=someone))
        code, stdout, stderr = push_json(run, url=proxy.url)
    assert code == 0, stderr
    assert sorted(json.loads(stdout)["written"]) == UIDS
    assert "note: folder gpudash: already there when gpudash came to create it (made by someone else since the " \
           "plan): not listed as created" in stderr
    assert grafana.state.folders["gpudash"]["id"] == 98 and sorted(grafana.state.dashboards) == UIDS


@pytest.mark.parametrize("wrapped", [False, True], ids=["versions listed", "Grafana 12's versions"])
def test_a_changed_threshold_updates_only_that_dashboard_with_a_readable_diff(grafana, run, project_dir, wrapped):
    """The dashboards' first push created them. Grafana's list of a dashboard's versions answers its own "Initial
    save" for a first save (parentVersion 0), not the message gpudash saved, which only the version read alone gives:
    read from the list, every dashboard gpudash had created and not saved again was "foreign" ("no version of it was
    saved by gpudash; --force takes it over"), and a changed setting could not be pushed. Grafana 12 answers the list
    inside {"continueToken", "versions"}: read alike."""
    import requests

    grafana.versions_wrapped = wrapped
    push_json(run)
    listed = requests.get(f"{grafana.url}/api/dashboards/uid/gpudash-overview/versions",
                          headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10).json()
    listed = listed["versions"] if wrapped else listed
    assert [(v["version"], v["parentVersion"], v["message"]) for v in listed] == [(1, 0, "Initial save")]
    writes = len(grafana.writes())
    config = project_dir("thresholds:\n  gpu_temp_celsius: {warning: 82, critical: 90}\n")
    code, stdout, _ = run("plan", "--no-cloudwatch", "--config", str(config))
    assert code == 1
    assert "update    grafana dashboard gpudash-overview" in stdout
    assert "panel 'GPU temperature': threshold 80, 87 → 82, 90" in stdout
    code, stdout, _ = push_json(run, "--config", str(config))
    assert code == 0
    assert sorted(json.loads(stdout)["written"]) == ["gpudash-health", "gpudash-overview"]
    assert len(grafana.writes()) == writes + 2
    assert grafana.state.dashboards["gpudash-overview"]["dashboard"]["version"] == 2


def test_gpudashs_save_past_the_first_page_of_grafana_12s_versions_is_found(grafana, run):
    """Grafana 12 answers a dashboard's versions in pages ({"continueToken", "versions"}). gpudash's save, two
    people's saves back, sits on the third page of one version each: read from the first page alone the dashboard was
    saved by no gpudash ("not saved by gpudash", refused on the safe side, but not what it is); followed, it is
    gpudash's, edited since."""
    grafana.versions_wrapped, grafana.versions_page = True, 1
    assert push_json(run)[0] == 0
    grafana.edit_in_ui("gpudash-health", lambda d: d.update(title="GPU health (alice's)"))
    grafana.edit_in_ui("gpudash-health", lambda d: d.update(title="GPU health (bob's)"), user="bob")
    asked = len(grafana.state.log)
    code, stdout, _ = run("plan", "--no-cloudwatch")
    assert code == 1
    assert "drift     grafana dashboard gpudash-health" in stdout
    assert "changed in Grafana by bob (version 3) since gpudash pushed it" in stdout, stdout
    assert "not saved by gpudash" not in stdout
    pages = grafana.state.log[asked:].count(("GET", "/api/dashboards/uid/gpudash-health/versions"))
    assert pages >= 4  # the newest alone, then the search: three pages to gpudash's save
    code, stdout, stderr = push_json(run)
    assert code == 1 and json.loads(stdout)["refused"] == ["gpudash-health"], stderr


@pytest.mark.parametrize("fault", ["dropped", "number"])
def test_a_garbled_continue_token_of_grafana_12s_versions_is_a_failure_never_no_gpudash_save(grafana, run, fault):
    """Something in front of Grafana drops the continue token (each page is the first again, with its token) or
    garbles it (a number): the versions cannot be read whole, which is a failure of the read, never "no version saved
    by gpudash" (which --force would take as a foreign dashboard's) nor a guess from the first page."""
    grafana.versions_wrapped, grafana.versions_page = True, 1
    assert push_json(run)[0] == 0
    grafana.edit_in_ui("gpudash-health", lambda d: d.update(title="GPU health (alice's)"))
    grafana.versions_token_fault = fault
    code, stdout, stderr = run("plan", "--no-cloudwatch")
    assert code == 3 and "not a valid API answer" in stderr, (code, stdout, stderr)
    assert ("gave the continue token it was asked with" if fault == "dropped" else "a text continue token") in stderr
    assert "not saved by gpudash" not in stdout + stderr
    code, stdout, stderr = push_json(run, "--force")
    assert code == 3 and grafana.state.dashboards["gpudash-health"]["dashboard"]["title"] == \
        "GPU health (alice's)", stderr


def test_a_dashboard_edited_in_the_ui_is_never_overwritten_without_force(grafana, run):
    push_json(run)
    grafana.edit_in_ui("gpudash-health", lambda d: d.update(title="GPU health (alice's)"))
    code, stdout, _ = run("plan", "--no-cloudwatch")
    assert code == 1
    assert "drift     grafana dashboard gpudash-health" in stdout
    assert "changed in Grafana by alice (version 2) since gpudash pushed it" in stdout
    code, stdout, stderr = push_json(run)
    assert code == 1 and "refused 1 object" in stderr
    assert json.loads(stdout)["refused"] == ["gpudash-health"]
    assert grafana.state.dashboards["gpudash-health"]["dashboard"]["title"] == "GPU health (alice's)"
    code, stdout, _ = push_json(run, "--force")
    assert code == 0 and json.loads(stdout)["written"] == ["gpudash-health"]
    assert grafana.state.dashboards["gpudash-health"]["dashboard"]["title"] == "GPU health"


def test_a_dashboard_gpudash_does_not_own_is_left_alone(grafana, run):
    grafana.state.folders["gpudash"] = {"id": 99, "uid": "gpudash", "title": "GPU monitoring"}
    grafana._store("gpudash-overview", {"title": "Team overview", "tags": ["team"]}, "gpudash", "", "bob")
    code, stdout, _ = push_json(run)
    assert code == 1 and json.loads(stdout)["refused"] == ["gpudash-overview"]
    assert grafana.state.dashboards["gpudash-overview"]["dashboard"]["title"] == "Team overview"
    assert push_json(run, "--force")[0] == 0
    assert grafana.state.dashboards["gpudash-overview"]["dashboard"]["title"] == "GPU fleet overview"


def test_dry_run_writes_nothing(grafana, run):
    code, stdout, _ = push_json(run, "--dry-run")
    assert code == 0 and json.loads(stdout)["written"] == [] and grafana.writes() == []


def test_prune_deletes_only_with_the_flag_and_a_prune_of_most_dashboards_needs_allow_mass_prune(grafana, run, project_dir):
    push_json(run)
    config = project_dir(dashboards={"one.py": (
        "from generator.model import Dashboard, Row\nfrom generator.panels import per_pod\n"
        "dashboard = Dashboard('by-pod', 'GPU usage by pod', [Row('r', [per_pod('DCGM_FI_DEV_GPU_UTIL', 'Util')])])\n")})
    code, stdout, _ = push_json(run, "--config", str(config))
    plan = json.loads(stdout)
    assert {c["name"] for c in plan["changes"] if c["action"] == "delete"} == {
        "gpudash-all-metrics", "gpudash-health", "gpudash-overview"}
    assert sorted(grafana.state.dashboards) == UIDS
    for dry_run in ((), ("--dry-run",)):
        code, _, stderr = push_json(run, "--config", str(config), "--prune", *dry_run)
        assert code == 2 and "--prune refused: it would delete 3 of the 4 grafana dashboards" in stderr
        assert "more than 50%" in stderr and "add --allow-mass-prune or raise --max-prune-share" in stderr
        assert sorted(grafana.state.dashboards) == UIDS
    # --force is about overwriting: a run that forces past drift keeps the guard
    code, _, stderr = push_json(run, "--config", str(config), "--prune", "--force")
    assert code == 2 and "--prune refused" in stderr and sorted(grafana.state.dashboards) == UIDS
    assert push_json(run, "--config", str(config), "--prune", "--max-prune-share", "75")[0] == 0
    assert sorted(grafana.state.dashboards) == ["gpudash-by-pod"]


def test_a_prune_of_every_owned_dashboard_or_from_an_empty_build_is_refused(grafana, run):
    push_json(run)
    desired = default_desired()
    client = GrafanaClient(grafana.url, token=ADMIN)
    changes = grafana_sync.plan(client, {}, desired.folder, uid_prefix="gpudash")
    with pytest.raises(PruneRefused, match="the build holds no grafana objects"):
        grafana_sync.push(client, changes, {}, desired.folder, "", uid_prefix="gpudash", force=False, prune=True, dry_run=False)
    only = {"gpudash-health": desired.grafana["gpudash-health"]}
    grafana.state.dashboards = {uid: e for uid, e in grafana.state.dashboards.items()
                                if uid in ("gpudash-overview", "gpudash-health")}
    changes = grafana_sync.plan(client, only, desired.folder, uid_prefix="gpudash")
    with pytest.raises(PruneRefused, match=r"delete 1 of the 2 .*\(more than 40%\)"):
        grafana_sync.push(client, changes, only, desired.folder, "", uid_prefix="gpudash", force=False, prune=True, dry_run=False,
                          max_prune_share=40)
    changes = grafana_sync.plan(client, {}, desired.folder, uid_prefix="gpudash")
    assert sorted(grafana.state.dashboards) == ["gpudash-health", "gpudash-overview"]
    with pytest.raises(PruneRefused, match="the build holds no grafana objects"):  # --force alone keeps the guard
        grafana_sync.push(client, changes, {}, desired.folder, "", uid_prefix="gpudash", force=True, prune=True, dry_run=False)
    outcomes = grafana_sync.push(client, changes, {}, desired.folder, "", uid_prefix="gpudash", force=False, prune=True, dry_run=False,
                                 allow_mass_prune=True)
    assert [o.change.name for o in outcomes if o.done] == ["gpudash-health", "gpudash-overview"]


def _save_as(grafana, source: str, uid: str, folder: str, title: str) -> None:
    """What "Save as" in Grafana's UI does: a new dashboard (new uid) with the same tags, no gpudash message."""
    model = {**grafana.state.dashboards[source]["dashboard"], "uid": uid, "title": title}
    grafana._store(uid, {k: v for k, v in model.items() if k not in ("id", "version")}, folder, "", "carol")


def test_a_save_as_copy_keeps_the_tag_but_is_never_pruned_or_overwritten(grafana, run):
    push_json(run)
    grafana.state.folders["team"] = {"id": 98, "uid": "team", "title": "Team"}
    _save_as(grafana, "gpudash-health", "aBc12XyZ9", "team", "GPU health (team copy)")
    _save_as(grafana, "gpudash-overview", "gpudash-overview-2", "gpudash", "GPU overview v2")
    before = {uid: json.dumps(grafana.state.dashboards[uid], sort_keys=True)
              for uid in ("aBc12XyZ9", "gpudash-overview-2")}
    code, stdout, _ = run("plan", "--no-cloudwatch", "--output", "json")
    assert code == 0 and json.loads(stdout)["summary"] == {"unchanged": 5}
    code, stdout, stderr = push_json(run, "--prune", "--force")
    assert code == 0, stderr
    assert json.loads(stdout)["written"] == []
    assert {uid: json.dumps(grafana.state.dashboards[uid], sort_keys=True) for uid in before} == before


def test_a_dashboard_a_person_edited_is_not_pruned_without_force(grafana, run, project_dir):
    push_json(run)
    grafana.edit_in_ui("gpudash-health", lambda d: d.update(refresh="10s"))
    config = project_dir(dashboards={"one.py": (
        "from generator.model import Dashboard, Row\nfrom generator.panels import per_pod\n"
        "dashboard = Dashboard('by-pod', 'GPU usage by pod', [Row('r', [per_pod('DCGM_FI_DEV_GPU_UTIL', 'Util')])])\n"),
        "two.py": ("from generator.model import Dashboard, Row\nfrom generator.panels import per_pod\n"
                   "dashboard = Dashboard('overview', 'GPU fleet overview', "
                   "[Row('r', [per_pod('DCGM_FI_DEV_GPU_UTIL', 'Util')])])\n"),
        "three.py": ("from generator.model import Dashboard, Row\nfrom generator.panels import per_pod\n"
                     "dashboard = Dashboard('all-metrics', 'All', "
                     "[Row('r', [per_pod('DCGM_FI_DEV_GPU_UTIL', 'U')])])\n")})
    code, stdout, stderr = push_json(run, "--config", str(config), "--prune")
    assert code == 1 and json.loads(stdout)["refused"] == ["gpudash-health"]
    assert "alice changed it in Grafana since gpudash pushed it; --prune --force deletes it" in stdout
    assert grafana.state.dashboards["gpudash-health"]["dashboard"]["refresh"] == "10s"
    code, stdout, _ = push_json(run, "--config", str(config), "--prune", "--force")
    assert code == 0 and "gpudash-health" in json.loads(stdout)["written"]
    assert "gpudash-health" not in grafana.state.dashboards


def _mixed_state(grafana, run) -> None:
    """Every kind of change at once: drift, foreign, a delete and an edited delete."""
    push_json(run)
    grafana.edit_in_ui("gpudash-health", lambda d: d.update(refresh="10s"))
    grafana._store("gpudash-overview", {"title": "Team overview", "tags": ["team"]}, "gpudash", "", "bob")
    for uid in ("gpudash-retired", "gpudash-old"):
        model = {"uid": uid, "title": uid, "tags": [GRAFANA_OWNER_TAG]}
        grafana._store(uid, model, "gpudash", grafana_message(model, ""), "gpudash-sa")
    grafana.edit_in_ui("gpudash-old", lambda d: d.update(refresh="1h"))


@pytest.mark.parametrize("flags", [(), ("--force",), ("--prune",), ("--force", "--prune")])
def test_a_dry_run_reports_exactly_what_the_real_run_does(grafana, run, flags):
    _mixed_state(grafana, run)
    writes = len(grafana.writes())
    code, stdout, stderr = push_json(run, "--dry-run", *flags)
    dry = json.loads(stdout)
    assert len(grafana.writes()) == writes
    code_real, stdout, _ = push_json(run, *flags)
    real = json.loads(stdout)
    made = grafana.writes()[writes:]  # each delete comes after an unchanged save of the dashboard (one write more)
    assert len(made) - sum(method == "DELETE" for method, _ in made) == len(real["written"])
    assert (code, sorted(dry["would_write"]), sorted(dry["refused"])) == \
        (code_real, sorted(real["written"]), sorted(real["refused"]))
    assert dry["written"] == [] and real["failed"] == []


def test_server_errors_and_rate_limits_are_retried(grafana, run):
    grafana.inject(Fault(r"/api/dashboards/db", status=503, times=2))
    grafana.inject(Fault(r"/api/folders", status=429, times=1, method="POST"))
    code, stdout, stderr = push_json(run)
    assert code == 0, stderr
    assert sorted(grafana.state.dashboards) == UIDS


def test_a_connection_dropped_halfway_through_a_push_converges(grafana, run):
    grafana.inject(Fault(r"/api/dashboards/db", drop=True, times=1))
    code, stdout, stderr = push_json(run)
    assert code == 0, stderr
    assert sorted(grafana.state.dashboards) == UIDS
    assert all(len(grafana.state.dashboards[u]["versions"]) == 1 for u in UIDS)


def test_a_partial_failure_reports_what_was_published_and_a_rerun_converges(grafana, run):
    grafana.inject(Fault(r"/api/dashboards/db", status=500, times=5))  # the first save fails after retries
    code, stdout, stderr = push_json(run)
    assert code == 3
    assert "1 of 5 writes failed; 4 were published" in stderr
    report = json.loads(stdout)
    (failed,) = report["failed"]
    assert failed["name"] == "gpudash-all-metrics" and "Grafana answered 500 after retries" in failed["error"]
    assert sorted(report["written"]) == ["gpudash", "gpudash-by-pod", "gpudash-health", "gpudash-overview"]
    assert len(grafana.state.dashboards) == 3
    code, stdout, _ = push_json(run)
    assert code == 0 and len(json.loads(stdout)["written"]) == 1
    assert sorted(grafana.state.dashboards) == UIDS


def _published(grafana):
    """The default dashboards pushed once, as a first publish leaves them: (client, what was pushed)."""
    desired = default_desired()
    client = GrafanaClient(grafana.url, token=ADMIN)
    first = grafana_sync.plan(client, desired.grafana, desired.folder, uid_prefix="gpudash")
    grafana_sync.push(client, first, desired.grafana, desired.folder, "", uid_prefix="gpudash", force=False, prune=False, dry_run=False)
    return client, desired


def test_a_concurrent_save_is_a_version_mismatch_not_a_clobber(grafana, reference):
    client, desired = _published(grafana)
    changed = {**desired.grafana, "gpudash-health": {**desired.grafana["gpudash-health"], "refresh": "5m"}}
    changes = grafana_sync.plan(client, changed, desired.folder, uid_prefix="gpudash")
    grafana.edit_in_ui("gpudash-health", lambda d: d.update(refresh="10s"))  # lands between plan and push
    outcomes = grafana_sync.push(client, changes, changed, desired.folder, "", uid_prefix="gpudash", force=False, prune=False,
                                 dry_run=False)
    (failed,) = [o for o in outcomes if o.error]
    assert "412 version-mismatch" in failed.error and "run `gpudash plan` and push again" in failed.error
    assert grafana.state.dashboards["gpudash-health"]["dashboard"]["refresh"] == "10s"


# How Grafana answers a save carrying an id it has no dashboard with, beside the dashboard's uid: 404 "Dashboard not
# found" (the legacy save), or a save by the uid (the Kubernetes-style save: resolveLegacyInternalID)
SAVES_BY_ID = pytest.mark.parametrize("by_uid", [False, True], ids=["legacy save", "kubernetes-style save"])


@SAVES_BY_ID
def test_a_dashboard_created_anew_under_its_uid_between_plan_and_push_is_not_overwritten(grafana, reference, by_uid):
    """gpudash's dashboard (version 1) is to be updated; a person deletes it and imports their own under the same uid
    (a new dashboard, version 1 again). The save carried version 1 and no id, and overwrote theirs; it carries the id
    the plan read, which Grafana no longer has; and a Grafana that saves such an id by the uid (which would save over
    theirs at version 1) is not sent it: the read right before the save finds another id there."""
    grafana.unknown_id_saves_by_uid = by_uid
    client, desired = _published(grafana)
    changed = {**desired.grafana, "gpudash-health": {**desired.grafana["gpudash-health"], "refresh": "5m"}}
    changes = grafana_sync.plan(client, changed, desired.folder, uid_prefix="gpudash")
    with grafana.lock:
        entry = grafana.state.dashboards.pop("gpudash-health")
        model = {k: v for k, v in entry["dashboard"].items() if k not in ("id", "version")}
        grafana._store("gpudash-health", {**model, "title": "carol's GPU health"}, entry["folderUid"], message="",
                       user="carol")
    outcomes = grafana_sync.push(client, changes, changed, desired.folder, "", uid_prefix="gpudash", force=False,
                                 prune=False, dry_run=False)
    assert grafana.state.dashboards["gpudash-health"]["dashboard"]["title"] == "carol's GPU health"
    (failed,) = [o for o in outcomes if o.error]
    assert failed.change.name == "gpudash-health" and "deleted and created anew under its uid" in failed.error, \
        failed.error


@SAVES_BY_ID
def test_a_dashboard_deleted_between_plan_and_push_is_created_anew_by_that_push(grafana, reference, by_uid):
    """gpudash's dashboard is to be updated; someone deletes it after the plan. The save carries the plan's id, which
    Grafana no longer has (404): the push failed (exit 3) and only the next run created it. Found gone (nothing under
    its uid), it is created as generated in the same push (a create: no id, no version, so one made under the uid
    meanwhile is refused), with a note; written. A Grafana that saves an unknown id by the uid is not sent it (it
    would create the dashboard without a word)."""
    grafana.unknown_id_saves_by_uid = by_uid
    client, desired = _published(grafana)
    changed = {**desired.grafana, "gpudash-health": {**desired.grafana["gpudash-health"], "refresh": "5m"}}
    changes = grafana_sync.plan(client, changed, desired.folder, uid_prefix="gpudash")
    with grafana.lock:
        grafana.state.dashboards.pop("gpudash-health")
    outcomes = grafana_sync.push(client, changes, changed, desired.folder, "", uid_prefix="gpudash", force=False,
                                 prune=False, dry_run=False)
    assert [o.error for o in outcomes if o.error] == []
    assert [o.change.name for o in outcomes if o.done] == ["gpudash-health"]
    live = grafana.state.dashboards["gpudash-health"]
    assert live["dashboard"]["refresh"] == "5m" and len(live["versions"]) == 1, live["versions"]
    assert client.notes == ["dashboard gpudash-health: deleted in Grafana since the plan (by someone else): created "
                            "anew as generated"], client.notes
    again = grafana_sync.plan(client, changed, desired.folder, uid_prefix="gpudash")
    assert again and [c.name for c in again if c.action != "unchanged"] == []  # the next run writes nothing


def test_a_prune_deletes_only_what_still_reads_as_the_plan_saw_it(grafana, reference):
    client, desired = _published(grafana)
    kept = {uid: d for uid, d in desired.grafana.items() if uid != "gpudash-health"}
    changes = grafana_sync.plan(client, kept, desired.folder, uid_prefix="gpudash")
    (delete,) = [c for c in changes if c.action == "delete"]
    grafana.edit_in_ui("gpudash-health", lambda d: d.update(refresh="10s"))  # lands between plan and push
    outcomes = grafana_sync.push(client, changes, kept, desired.folder, "", uid_prefix="gpudash", force=False, prune=True, dry_run=False)
    (failed,) = [o for o in outcomes if o.error]
    assert "changed in Grafana by alice since the plan; not deleted" in failed.error
    assert grafana.state.dashboards["gpudash-health"]["dashboard"]["refresh"] == "10s"
    # A plan that read no version (meta without one) has nothing to compare: not deleted either.
    changes = grafana_sync.plan(client, kept, desired.folder, uid_prefix="gpudash")
    (delete,) = [c for c in changes if c.action == "delete"]
    delete.edited = False
    del delete.live["meta"]["version"]
    outcomes = grafana_sync.push(client, changes, kept, desired.folder, "", uid_prefix="gpudash", force=False, prune=True, dry_run=False)
    (failed,) = [o for o in outcomes if o.error]
    assert "Grafana gave no version to show it is unchanged since the plan; not deleted" in failed.error
    assert "gpudash-health" in grafana.state.dashboards
    # One deleted by someone else since the plan is already gone: not listed as deleted (gpudash sent no delete), noted.
    del delete.live["meta"]
    grafana.state.dashboards.pop("gpudash-health")
    outcomes = grafana_sync.push(client, changes, kept, desired.folder, "", uid_prefix="gpudash", force=False, prune=True, dry_run=False)
    assert [o.change.name for o in outcomes if o.done] == [] and not any(o.error for o in outcomes)
    assert client.notes[-1] == ("dashboard gpudash-health: already gone (before gpudash sent its delete): someone else "
                                "deleted it; not listed as deleted")


def test_a_title_clash_is_name_exists(grafana, run):
    grafana.state.folders["gpudash"] = {"id": 99, "uid": "gpudash", "title": "GPU monitoring"}
    grafana._store("someone-elses", {"title": "GPU health", "tags": []}, "gpudash", "", "bob")
    code, stdout, stderr = push_json(run)
    assert code == 3
    assert "412 name-exists" in stdout and "rename one of them" in stdout


def test_bad_credentials_and_missing_permissions(grafana, run):
    code, stdout, stderr = push_json(run, token="glsa_wrong_secret_value")
    assert code == 3 and "Grafana rejected the credentials (401)" in stderr
    assert "glsa_wrong_secret_value" not in stdout + stderr
    code, stdout, stderr = push_json(run, token=VIEWER)
    assert code == 3 and "(403)" in stdout and "Editor role" in stdout
    assert VIEWER not in stdout + stderr


def test_refused_credentials_are_fixed_where_they_came_from(grafana, run, cli, tmp_path):
    """A 401 said "set GRAFANA_TOKEN" to one whose token came from --token-file (which wins over GRAFANA_TOKEN) or
    who sent GRAFANA_USER and GRAFANA_PASSWORD: its fix names the source Grafana refused."""
    token_file = tmp_path / "grafana-token"
    token_file.write_text("glsa_revoked_secret_value\n")
    code, stdout, stderr = push_json(run, "--token-file", str(token_file))  # GRAFANA_TOKEN holds a valid token
    assert code == 3 and "Grafana rejected the credentials (401)" in stderr, stderr
    assert f"write a valid service-account token (glsa_...) into {token_file} (--token-file)" in stderr
    assert "GRAFANA_TOKEN" not in stderr and "glsa_revoked_secret_value" not in stdout + stderr
    code, stdout, stderr = cli("push", "--skip-verify", "--output", "json", env={
        "GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": "", "GRAFANA_USER": "admin", "GRAFANA_PASSWORD": "wrong_secret"})
    assert code == 3 and "check GRAFANA_USER and GRAFANA_PASSWORD" in stderr, stderr
    assert "wrong_secret" not in stdout + stderr
    code, _, stderr = push_json(run, token="glsa_wrong_secret_value")
    assert code == 3 and "set GRAFANA_TOKEN to a valid service-account token" in stderr

def _netrc(tmp_path, monkeypatch, login: str, password: str) -> None:
    """A netrc file ($NETRC) with an entry for the test server's host."""
    path = tmp_path / "netrc"
    path.write_text(f"machine 127.0.0.1 login {login} password {password}\n")
    path.chmod(0o600)
    monkeypatch.setenv("NETRC", str(path))


def test_the_token_given_is_sent_whatever_netrc_holds_for_grafanas_host(grafana, run, tmp_path, monkeypatch):
    """A netrc entry for Grafana's host never replaces GRAFANA_TOKEN: the viewer token is refused a write (403)
    though the netrc login is an admin, and the admin token publishes though the netrc login is unknown."""
    _netrc(tmp_path, monkeypatch, *BASIC_ADMIN)
    code, stdout, stderr = push_json(run, token=VIEWER)
    assert code == 3 and "(403)" in stdout, stdout + stderr
    assert grafana.state.folders == {} and grafana.state.dashboards == {}
    _netrc(tmp_path, monkeypatch, "someone-else", "netrc-secretpart")
    code, stdout, stderr = push_json(run)
    assert code == 0, stdout + stderr
    assert sorted(json.loads(stdout)["written"]) == sorted(["gpudash", *UIDS])
    assert not any(secret in stdout + stderr for secret in (ADMIN, VIEWER, "netrc-secretpart", BASIC_ADMIN[1]))


def test_a_redirect_keeps_the_token_given_and_never_takes_netrcs(grafana, run, tmp_path, monkeypatch):
    """requests reads netrc again at every redirect: a folder create redirected to the same address is still
    the viewer token's (403), not the netrc admin's."""
    _netrc(tmp_path, monkeypatch, *BASIC_ADMIN)
    grafana.state.faults.append(Fault("^/api/folders$", status=307, method="POST", location="/api/folders"))
    code, stdout, stderr = push_json(run, token=VIEWER)
    assert code == 3 and "(403)" in stdout, stdout + stderr
    assert grafana.state.log.count(("POST", "/api/folders")) == 2 and grafana.state.folders == {}


@pytest.fixture(scope="module")
def tls_grafana(reference):
    """The Grafana API test server over HTTPS, with a self-signed certificate (its file: `.ca`)."""
    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json", tls=True) as server:
        yield server


@pytest.mark.parametrize("insecure, variable, bundle, verified", [
    (True, "REQUESTS_CA_BUNDLE", "other", False), (True, "CURL_CA_BUNDLE", "other", False), (True, None, None, False),
    (False, "REQUESTS_CA_BUNDLE", "grafana's", True), (False, "CURL_CA_BUNDLE", "grafana's", True),
    (False, "REQUESTS_CA_BUNDLE", "other", None), (False, None, None, None)],
    ids=["insecure over REQUESTS_CA_BUNDLE", "insecure over CURL_CA_BUNDLE", "insecure", "REQUESTS_CA_BUNDLE",
         "CURL_CA_BUNDLE", "a bundle without grafana's CA", "no bundle"])
def test_insecure_turns_verification_off_whatever_bundle_the_environment_names(
        tls_grafana, cli, defaults_built_once, tmp_path, insecure, variable, bundle, verified):
    """requests takes REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE over a session's verify=False: with either set to a bundle
    without Grafana's CA, `push --insecure` failed TLS verification (exit 3) and its hint said "or --insecure". Now
    --insecure turns verification off for Grafana's calls, and says so once. Without it, verification stays on and
    the bundle a variable names is used: Grafana's CA in it, the push goes; otherwise it fails, nothing written."""
    import certifi

    tls_grafana.state.folders.clear()
    tls_grafana.state.dashboards.clear()
    env = {"GRAFANA_URL": tls_grafana.url, "GRAFANA_TOKEN": ADMIN, "REQUESTS_CA_BUNDLE": None, "CURL_CA_BUNDLE": None}
    if variable:
        env[variable] = str(tls_grafana.ca) if bundle == "grafana's" else certifi.where()
    code, stdout, stderr = cli("push", "--skip-verify", "--output", "json", *(["--insecure"] * insecure), env=env)
    if verified is None:
        assert code == 3 and "TLS verification failed" in stderr and tls_grafana.state.dashboards == {}, stderr
        return
    assert code == 0 and sorted(json.loads(stdout)["written"]) == sorted(["gpudash", *UIDS]), stdout + stderr
    assert stderr.count("TLS certificate is not verified") == (0 if verified else 1), stderr
    assert "InsecureRequestWarning" not in stderr and "Unverified HTTPS request" not in stderr, stderr


def test_unreachable_grafana_is_a_clear_error(run):
    code, _, stderr = push_json(run, url="http://127.0.0.1:9")
    assert code == 3 and "cannot reach Grafana at http://127.0.0.1:9" in stderr and "Traceback" not in stderr


def test_missing_url_or_token_is_a_usage_error(cli, defaults_built_once):
    code, _, stderr = cli("push", "--skip-verify", env={"GRAFANA_URL": "", "GRAFANA_TOKEN": ""})
    assert code == 2 and "GRAFANA_URL is not set" in stderr
    code, _, stderr = cli("push", "--skip-verify", env={"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_TOKEN": ""})
    assert code == 2 and "no Grafana credentials" in stderr


@pytest.mark.parametrize("env, says", [
    ({"GRAFANA_TOKEN": "glsa_abc\ndef_secretpart"}, "cannot be sent in an HTTP header"),
    ({"GRAFANA_TOKEN": "glsa_t\u00f6k\u00e9n_\u4e2d_secretpart"}, "cannot be sent in an HTTP header"),
    ({"GRAFANA_TOKEN": "", "GRAFANA_USER": "admin", "GRAFANA_PASSWORD": "pw\r\nsecretpart"},
     "cannot be sent in an HTTP header"),
    ({"GRAFANA_TOKEN": "glsa_x123456", "REQUESTS_CA_BUNDLE": "/nonexistent/ca.pem"}, "TLS CA bundle cannot be used"),
], ids=["line break in the token", "token outside Latin-1", "line break in the password", "missing CA bundle"])
def test_credentials_and_ca_settings_that_cannot_work_are_usage_errors(cli, defaults_built_once, env, says):
    """Bad local settings are exit 2 with what to fix, before any connection: not "cannot reach Grafana"."""
    code, stdout, stderr = cli("push", "--skip-verify", env={"GRAFANA_URL": "https://127.0.0.1:9", **env})
    assert code == 2 and says in stderr and "Traceback" not in stderr, stderr
    assert "secretpart" not in stdout + stderr


def test_every_call_goes_through_the_proxy_the_environment_names_for_grafanas_host(grafana, monkeypatch):
    """HTTP_PROXY and NO_PROXY are read for Grafana's host once per client (requests read them at every call: a
    fifth of a call's CPU) and every call follows them: through the proxy, or straight to a host NO_PROXY names."""
    from tests.support.canned_server import CannedServer

    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with CannedServer('{"uid": "gpudash", "title": "GPU monitoring"}') as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://{proxy.address}")
        client = GrafanaClient("http://grafana.example:3000", token=ADMIN)
        assert client.folder("gpudash")["title"] == client.folder("gpudash")["title"] == "GPU monitoring"
        assert [(method, path) for method, path, _ in proxy.requests] == [
            ("GET", "http://grafana.example:3000/api/folders/gpudash")] * 2
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        direct = GrafanaClient(grafana.url, token=ADMIN)
        assert direct.folder("gpudash") is None and direct.folder("gpudash") is None
        assert len(proxy.requests) == 2 and grafana.state.log == [("GET", "/api/folders/gpudash")] * 2


def test_push_from_a_reviewed_build_checks_its_manifest(grafana, run, tmp_path, cli):
    out = tmp_path / "build"
    cli("generate", "--out", str(out))
    assert push_json(run, "--from", str(out))[0] == 0
    (out / "grafana/gpudash-health.json").write_text("{}")
    code, _, stderr = push_json(run, "--from", str(out))
    assert code == 2 and "differs from the manifest" in stderr


def test_push_refuses_when_the_preflight_fails(grafana, run, cli):
    env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN, "PROMETHEUS_URL": "http://127.0.0.1:9"}
    code, _, stderr = cli("push", env=env)
    assert code == 3 and "preflight checks failed, nothing was published" in stderr
    assert "cannot query Prometheus at http://127.0.0.1:9" in stderr
    assert grafana.writes() == []


def test_a_preflight_warning_is_in_the_json_report_as_on_stderr(grafana, run, cli, monkeypatch):
    """A check failing without stopping the publish (the counter recordings not loaded yet) is warned of on stderr;
    the JSON report held the changes and notes alone, so a machine reader never saw it."""
    from generator import verify
    from generator.checks.result import FAIL, NOT_DEPLOYED, Check

    later = Check("prometheus", "counter recording rules", FAIL, "Prometheus writes no recording", "apply the rules",
                  cause=NOT_DEPLOYED, published_anyway="they draw once the group is loaded")
    monkeypatch.setattr(verify, "run", lambda *args: [later])
    env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN, "PROMETHEUS_URL": "http://127.0.0.1:9"}
    code, stdout, stderr = cli("push", "--output", "json", env=env)
    said = ("Prometheus writes no recording; published anyway (they draw once the group is loaded): apply the rules")
    assert code == 0 and f"warning: {said}" in stderr, stderr
    assert json.loads(stdout)["warnings"] == [{"message": said, "where": None, "fix": None, "rule": None}], stdout


def test_a_wrong_url_path_is_a_404_with_a_hint(grafana, run):
    code, stdout, stderr = push_json(run, url=grafana.url + "/not-grafana")
    assert code == 3 and "not found (404)" in stdout + stderr and "include any sub-path" in stdout + stderr


def test_an_unprocessable_dashboard_is_a_422_with_a_hint(grafana, run):
    grafana.inject(Fault(r"/api/dashboards/db", status=422, times=1))
    code, stdout, _ = push_json(run)
    assert code == 3
    assert "Grafana could not process the dashboard (422)" in stdout and "run `gpudash lint`" in stdout


@pytest.mark.parametrize("url, says", [
    ("host:3000", "add http:// or https:// in front: GRAFANA_URL=https://host:3000"),
    ("grafana.example.com", "add http:// or https:// in front"),
    ("admin:s3cret@grafana:3000", "'***@grafana:3000' has no scheme"),
    ("http://admin:s3cret@grafana:3x", "'http://***@grafana:3x' has a port that is not a number"),
    ("ftp://grafana.example.com", "must start with http:// or https://"),
    ("http://grafana.example.com:30x0", "has a port that is not a number"),
    ("http://[::1", "cannot be read as a URL"),
    ("https://", "must start with http:// or https://"),
])
def test_a_malformed_grafana_url_is_a_usage_error(cli, defaults_built_once, url, says):
    code, _, stderr = cli("push", "--skip-verify", env={"GRAFANA_URL": url, "GRAFANA_TOKEN": ADMIN})
    assert code == 2 and says in stderr and "Traceback" not in stderr and "s3cret" not in stderr


def test_a_malformed_proxy_variable_is_named_not_grafana_url(cli, defaults_built_once, monkeypatch):
    """A proxy variable without its scheme (HTTP_PROXY=user:password@proxy:3128) cannot be used by requests
    (InvalidProxyURL): push said "GRAFANA_URL: not a usable URL" with GRAFANA_URL's fix, a setting that was right.
    The proxy variable is named, with its fix, its password masked."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    code, _, stderr = cli("push", "--skip-verify", env={"GRAFANA_URL": "http://grafana.example:3000",
                                                        "GRAFANA_TOKEN": ADMIN, "HTTP_PROXY": "u:s3cret@127.0.0.1:9"})
    assert code == 2 and "Traceback" not in stderr and "s3cret" not in stderr, stderr
    assert "GRAFANA_URL" not in stderr and "HTTP_PROXY" in stderr and "http://proxy.example:3128" in stderr, stderr


def test_progress_is_one_line_per_phase_off_a_terminal(grafana, run):
    code, _, stderr = push_json(run)
    assert code == 0
    phases = [line.split(":")[0] for line in stderr.splitlines() if not line.startswith("settings: ")]
    assert phases == ["reading Grafana", "writing to Grafana"]
    assert "reading Grafana: 6/6" in stderr and "writing to Grafana: 5/5" in stderr
    code, _, stderr = run("plan", "--no-cloudwatch")
    assert "reading Grafana: 6/6" in stderr and "writing" not in stderr


def test_progress_on_a_terminal_moves_with_every_read(grafana):
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    desired = default_desired()
    screen = Terminal()
    grafana_sync.plan(GrafanaClient(grafana.url, token=ADMIN), desired.grafana, desired.folder, uid_prefix="gpudash",
                      progress=Progress(screen))
    assert "reading Grafana" in screen.getvalue() and "100%" in screen.getvalue()


def test_a_dashboard_another_gpudash_project_keeps_in_its_own_folder_is_never_pruned(grafana, run):
    """Two projects share a Grafana and the default uid prefix: each prunes only inside its own folder."""
    push_json(run)
    grafana.state.folders["team-b"] = {"id": 97, "uid": "team-b", "title": "Team B GPUs"}
    model = {"uid": "gpudash-team-b", "title": "Team B GPUs", "tags": [GRAFANA_OWNER_TAG]}
    grafana._store("gpudash-team-b", model, "team-b", grafana_message(model, ""), "gpudash-b")
    before = json.dumps(grafana.state.dashboards["gpudash-team-b"], sort_keys=True)
    code, stdout, _ = run("plan", "--no-cloudwatch", "--output", "json")
    assert json.loads(stdout)["summary"] == {"unchanged": 5} and code == 0
    for flags in (("--prune",), ("--prune", "--force")):
        code, stdout, stderr = push_json(run, *flags)
        assert code == 0 and json.loads(stdout)["written"] == [], stderr
    assert json.dumps(grafana.state.dashboards["gpudash-team-b"], sort_keys=True) == before


def test_a_dashboard_a_person_moved_to_another_folder_is_not_moved_back_without_force(grafana, run):
    """A move adds no version: the folder is the evidence. gpudash's dashboard in someone's folder is
    refused (their move may be deliberate); --force moves it back."""
    push_json(run)
    grafana.state.folders["alice"] = {"id": 98, "uid": "alice", "title": "Alice's"}
    grafana.move("gpudash-overview", "alice")
    code, stdout, _ = run("plan", "--no-cloudwatch", "--output", "json")
    (moved,) = [c for c in json.loads(stdout)["changes"] if c["action"] != "unchanged"]
    assert code == 1 and moved["name"] == "gpudash-overview" and moved["action"] == "foreign"
    assert moved["details"] == ["'GPU fleet overview' is in folder alice, not gpudash: another project publishing "
                                "with the same uid prefix, or a person moved it; --force moves it back here"]
    code, stdout, _ = push_json(run)
    assert code == 1 and json.loads(stdout)["refused"] == ["gpudash-overview"]
    assert grafana.state.dashboards["gpudash-overview"]["folderUid"] == "alice"
    code, stdout, _ = push_json(run, "--force")
    assert code == 0 and json.loads(stdout)["written"] == ["gpudash-overview"]
    assert grafana.state.dashboards["gpudash-overview"]["folderUid"] == "gpudash"


def test_a_changed_folder_moves_owned_unedited_dashboards_with_move_from_and_keeps_edits(grafana, run, project_dir):
    """grafana.folder changed: without --move-from the dashboards in the old folder are foreign (refused);
    --move-from OLD_UID moves those gpudash saved and nobody edited since, and a person's edit still needs
    --force; a dashboard in any other folder is not moved."""
    push_json(run)
    grafana.edit_in_ui("gpudash-health", lambda d: d.update(refresh="10s"))  # alice's change
    grafana.state.folders["alice"] = {"id": 98, "uid": "alice", "title": "Alice's"}
    grafana.move("gpudash-by-pod", "alice")
    config = str(project_dir("grafana:\n  folder: {uid: gpu-fleet, title: GPU fleet}\n"))
    code, stdout, _ = push_json(run, "--config", config)
    assert code == 1 and sorted(json.loads(stdout)["refused"]) == sorted(UIDS)
    code, stdout, _ = run("plan", "--no-cloudwatch", "--config", config, "--move-from", "gpudash", "--output", "json")
    planned = {c["name"]: c for c in json.loads(stdout)["changes"]}
    assert code == 1 and planned["gpudash-overview"]["action"] == "update"
    assert planned["gpudash-overview"]["details"] == ["move from folder gpudash to gpu-fleet (--move-from gpudash)"]
    assert (planned["gpudash-health"]["action"], planned["gpudash-by-pod"]["action"]) == ("drift", "foreign")
    code, stdout, _ = push_json(run, "--config", config, "--move-from", "gpudash")
    report = json.loads(stdout)
    assert code == 1 and sorted(report["written"]) == ["gpudash-all-metrics", "gpudash-overview"]
    assert sorted(report["refused"]) == ["gpudash-by-pod", "gpudash-health"]
    folders = {uid: entry["folderUid"] for uid, entry in grafana.state.dashboards.items()}
    assert folders == {"gpudash-all-metrics": "gpu-fleet", "gpudash-overview": "gpu-fleet",
                       "gpudash-health": "gpudash", "gpudash-by-pod": "alice"}
    assert grafana.state.dashboards["gpudash-health"]["dashboard"]["refresh"] == "10s"
    code, stdout, _ = push_json(run, "--config", config, "--move-from", "gpudash")
    assert code == 1 and json.loads(stdout)["written"] == []


def test_two_projects_with_one_uid_prefix_never_take_each_others_dashboards(grafana, run, project_dir):
    """Project B (its own folder, the default uid prefix) pushes after project A: A's dashboards, saved
    by gpudash in A's folder, are refused as foreign instead of moved and overwritten."""
    push_json(run)
    before = {uid: json.dumps(grafana.state.dashboards[uid], sort_keys=True) for uid in UIDS}
    config = project_dir("grafana:\n  folder: {uid: team-b, title: Team B GPUs}\n"
                         "thresholds:\n  gpu_temp_celsius: {warning: 70, critical: 90}\n")
    code, stdout, stderr = push_json(run, "--config", str(config))
    assert code == 1, stderr
    assert sorted(json.loads(stdout)["refused"]) == UIDS and json.loads(stdout)["written"] == ["team-b"]
    assert {uid: json.dumps(grafana.state.dashboards[uid], sort_keys=True) for uid in UIDS} == before


def test_the_tag_search_is_read_page_by_page(grafana, run):
    """Grafana answers a search one page at a time: every page is read, even pages shorter than asked for."""
    push_json(run)
    desired = default_desired()
    for n in range(7):
        model = {"uid": f"gpudash-old-{n}", "title": f"old {n}", "tags": [GRAFANA_OWNER_TAG]}
        grafana._store(model["uid"], model, "gpudash", grafana_message(model, "", "gpudash"), "gpudash-sa")
    grafana.search_cap = 3  # a page smaller than the one asked for (a proxy, another Grafana release)
    client = GrafanaClient(grafana.url, token=ADMIN)
    changes = grafana_sync.plan(client, desired.grafana, desired.folder, uid_prefix="gpudash")
    assert sorted(c.name for c in changes if c.action == "delete") == [f"gpudash-old-{n}" for n in range(7)]


def test_a_search_that_repeats_its_pages_is_not_a_valid_answer(grafana):
    """A server (or proxy) that ignores `page` would be read forever: the repeat is a remote failure."""
    grafana.state.folders["gpudash"] = {"id": 99, "uid": "gpudash", "title": "GPU monitoring"}
    for n in range(3):
        model = {"uid": f"gpudash-old-{n}", "title": f"old {n}", "tags": [GRAFANA_OWNER_TAG]}
        grafana._store(model["uid"], model, "gpudash", grafana_message(model, "", "gpudash"), "gpudash-sa")
    grafana.ignore_search_page = True
    grafana.search_cap = 2
    client = GrafanaClient(grafana.url, token=ADMIN)
    with pytest.raises(InvalidAnswer, match="dashboards of an earlier page"):
        client.search_tag(GRAFANA_OWNER_TAG)


@pytest.mark.parametrize("spoil, said", [
    (lambda hits: hits + [{**hits[0], "uid": "team-gpu", "tags": ["team"]}],
     "a dashboard without the tag gpudash-managed it was asked by (team-gpu)"),
    (lambda hits: hits + [{**hits[0], "uid": "team-folder", "type": "dash-folder"}],
     "a hit of type 'dash-folder', not a dashboard (team-folder)"),
    (lambda hits: hits + hits[:1], "a dashboard twice"),
], ids=["the tag dropped", "the type dropped", "a hit twice"])
def test_a_search_listing_what_was_not_asked_for_is_not_a_valid_answer_and_nothing_is_pruned(grafana, run, spoil,
                                                                                              said):
    """A search page (through a proxy that drops the `tag` or `type` filter, or repeats a hit) listing a dashboard
    without the tag asked by, a folder, or one dashboard twice was read as the owned dashboards (exit 0, the prune
    planned on it). It is not a valid answer: the push fails before writing anything (exit 3)."""
    from tests.support.fault_proxy import FaultProxy, Rule

    push_json(run)
    retired = {"uid": "gpudash-old-0", "title": "old 0", "tags": [GRAFANA_OWNER_TAG]}
    grafana._store(retired["uid"], retired, "gpudash", grafana_message(retired, "", "gpudash"), "gpudash-sa")
    writes = len(grafana.writes())
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path="^/api/search$", action="rewrite", times=1,
                          callback=lambda body: json.dumps(spoil(json.loads(body))).encode()))
        code, stdout, stderr = push_json(run, "--prune", url=proxy.url)
    assert code == 3 and f"Grafana's search answered page 1 with {said}" in stderr, (code, stderr)
    assert "nothing was published" in stderr and len(grafana.writes()) == writes
    assert "gpudash-old-0" in grafana.state.dashboards


def _oddly(grafana, uid: str, **fields) -> None:
    entry = grafana.state.dashboards[uid]
    for key, value in fields.items():
        if key == "message":
            entry["versions"][-1]["message"] = value
        else:
            entry["dashboard"][key] = value


@pytest.mark.parametrize("odd", [
    {"tags": 5}, {"tags": "x-gpudash-managed-x"}, {"tags": [{"tag": "gpudash-managed"}]},
    {"panels": "x"}, {"panels": [5, None]}, {"panels": [{"title": "t", "targets": "x"}]},
    {"panels": [{"title": "t", "fieldConfig": []}]}, {"templating": {"list": "x"}}, {"templating": []},
    {"title": {"a": 1}},
], ids=repr)
def test_a_live_dashboard_of_any_shape_is_planned_never_a_crash(grafana, run, odd):
    """A live dashboard whose fields have odd types (a hand-made import, another tool) is read as what it is:
    never a crash, and owned only with the owner tag among its list of tags."""
    push_json(run)
    _oddly(grafana, "gpudash-health", **odd)
    before = json.dumps(grafana.state.dashboards["gpudash-health"], sort_keys=True)
    for flags in ((), ("--prune",), ("--dry-run", "--force")):
        code, stdout, stderr = push_json(run, *flags)
        assert code in (0, 1), (flags, stderr)
        action = {c["name"]: c for c in json.loads(stdout)["changes"]}["gpudash-health"]["action"]
        assert action == ("foreign" if "tags" in odd else "drift"), (flags, action)  # changed outside gpudash
    # without the evidence, or edited, it is never overwritten without --force
    assert json.dumps(grafana.state.dashboards["gpudash-health"], sort_keys=True) == before


@pytest.mark.parametrize("message", [123, ["gpudash sha256:0123456789abcdef"], {"text": "x"}], ids=repr)
def test_a_version_message_that_is_not_text_is_not_a_valid_answer(grafana, run, message):
    push_json(run)
    grafana.edit_in_ui("gpudash-health", lambda d: d.update(refresh="10s"))
    _oddly(grafana, "gpudash-health", message=message)
    before = json.dumps(grafana.state.dashboards, sort_keys=True)
    for flags in ((), ("--force", "--prune")):
        code, _, stderr = push_json(run, *flags)
        assert code == 3 and "a list of versions, each with a text message" in stderr, stderr
        assert "nothing was published" in stderr
    assert json.dumps(grafana.state.dashboards, sort_keys=True) == before
    grafana.state.spec_errors.clear()  # the answer broke Grafana's spec on purpose


def _recreated(grafana, uid: str, user: str) -> None:
    """A person deletes a dashboard gpudash created (version 1) and imports its JSON again under the same uid, in the
    same folder: a new dashboard (a new id), version 1 again, saved by them."""
    with grafana.lock:
        entry = grafana.state.dashboards.pop(uid)
        model = {k: v for k, v in entry["dashboard"].items() if k not in ("id", "version")}
        grafana._store(uid, model, entry["folderUid"], message="", user=user)


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("meanwhile, says", [
    (lambda g: g.edit_in_ui("gpudash-health", lambda d: d.update(tags=[])),
     f"its {GRAFANA_OWNER_TAG} tag was removed by alice since the plan; not deleted"),
    (lambda g: g.move("gpudash-health", "team-ml"), "moved to folder team-ml since the plan; not deleted"),
    (lambda g: g.edit_in_ui("gpudash-health", lambda d: d.update(refresh="10s"), user="bob"),
     "changed in Grafana by bob since the plan; not deleted"),
    (lambda g: _recreated(g, "gpudash-health", user="carol"),
     "deleted and created anew by carol since the plan; not deleted"),
], ids=["tag-stripped", "moved-without-a-version", "edited", "recreated-at-the-same-version"])
def test_a_dashboard_taken_over_between_plan_and_prune_is_not_deleted_even_with_force(grafana, meanwhile, says,
                                                                                     force):
    """--force agrees to delete what the plan showed: a takeover or save since then keeps the dashboard."""
    client, desired = _published(grafana)
    kept = {uid: d for uid, d in desired.grafana.items() if uid != "gpudash-health"}
    changes = grafana_sync.plan(client, kept, desired.folder, uid_prefix="gpudash")
    assert [c.name for c in changes if c.action == "delete"] == ["gpudash-health"]
    meanwhile(grafana)
    outcomes = grafana_sync.push(client, changes, kept, desired.folder, "", uid_prefix="gpudash", force=force, prune=True, dry_run=False)
    (failed,) = [o for o in outcomes if o.error]
    assert failed.change.name == "gpudash-health" and says in failed.error
    assert "gpudash-health" in grafana.state.dashboards and ("DELETE", "/api/dashboards/uid/gpudash-health") not in \
        grafana.writes()


@pytest.mark.parametrize("mine,theirs", [("gpudash", "gpudash-eu"), ("gpudash-eu", "gpudash")])
def test_a_uid_prefix_that_continues_another_is_told_apart_when_pruning_one_folder(grafana, run, tmp_path, mine,
                                                                                     theirs):
    """Another project publishes into this one's folder with a uid prefix that continues this one's with a
    dash, or that this one's continues: --prune deletes this project's retired dashboard only, never the
    other's dashboards, retired or not (`gpudash-eu-overview` reads as a dashboard id `eu-overview` of
    `gpudash` by its form alone), whichever prefix is the shorter; those of the longer prefix are listed in
    a note."""
    config = tmp_path / "mine.yaml"
    config.write_text(f"grafana:\n  uid_prefix: {mine}\n")
    code, _, stderr = push_json(run, "--config", str(config))
    assert code == 0, stderr
    for uid in [uid for uid in grafana.state.dashboards if uid.startswith(f"{mine}-")]:  # the other project's
        model = {**grafana.state.dashboards[uid]["dashboard"], "uid": theirs + uid[len(mine):]}
        model["title"] += " (EU)"
        grafana._store(model["uid"], model, "gpudash", grafana_message(model, ""), "gpudash-sa")
    for prefix in (mine, theirs):  # (this project's records its prefix: unrecorded, `gpudash-eu-old` reads two ways)
        model = {"uid": f"{prefix}-old", "title": f"old {prefix}", "tags": [GRAFANA_OWNER_TAG]}
        grafana._store(model["uid"], model, "gpudash", grafana_message(model, "", prefix if prefix == mine else None),
                       "gpudash-sa")
    theirs_now = {uid: json.dumps(entry, sort_keys=True) for uid, entry in grafana.state.dashboards.items()
                  if uid.startswith(f"{theirs}-") and (len(theirs) > len(mine) or not uid.startswith(f"{mine}-"))}
    assert len(theirs_now) == 5
    code, stdout, stderr = push_json(run, "--config", str(config), "--prune", "--allow-mass-prune")
    assert code == 0, stderr
    assert json.loads(stdout)["written"] == [f"{mine}-old"] and f"{mine}-old" not in grafana.state.dashboards
    noted = "5 dashboard(s) in folder gpudash not defined here have uids in the form of a longer uid prefix"
    assert (noted in stderr) is (len(theirs) > len(mine)), stderr  # the longer prefix's dashboards, left
    assert {uid: json.dumps(grafana.state.dashboards.get(uid), sort_keys=True) for uid in theirs_now} == theirs_now


def test_prune_deletes_a_dashboard_whose_uid_reads_two_ways_only_when_it_records_this_uid_prefix(grafana, run,
                                                                                                   tmp_path):
    """`gpudash-eu-inference` is `gpudash`'s dashboard id `eu-inference` or `gpudash-eu`'s `inference`, and no
    dashboard either project defines tells which. Every version gpudash saves records its uid prefix: --prune
    deletes such a dashboard when its latest gpudash version records this project's prefix, never when it
    records another; one saved before gpudash recorded it is kept and listed in a note."""
    config = tmp_path / "mine.yaml"
    config.write_text("grafana:\n  uid_prefix: gpudash\n")
    code, _, stderr = push_json(run, "--config", str(config))
    assert code == 0, stderr
    ours = {"uid": "gpudash-eu-retired", "title": "our retired", "tags": [GRAFANA_OWNER_TAG]}
    grafana._store(ours["uid"], ours, "gpudash", grafana_message(ours, "", "gpudash"), "gpudash-sa")
    theirs = {"uid": "gpudash-eu-training", "title": "EU training", "tags": [GRAFANA_OWNER_TAG]}
    grafana._store(theirs["uid"], theirs, "gpudash", grafana_message(theirs, "", "gpudash-eu"), "gpudash-sa")
    older = {"uid": "gpudash-eu-inference", "title": "EU inference", "tags": [GRAFANA_OWNER_TAG]}
    grafana._store(older["uid"], older, "gpudash", grafana_message(older, ""), "gpudash-sa")
    kept = {uid: json.dumps(grafana.state.dashboards[uid], sort_keys=True) for uid in (theirs["uid"], older["uid"])}
    code, stdout, stderr = push_json(run, "--config", str(config), "--prune")
    assert code == 0, stderr
    assert json.loads(stdout)["written"] == ["gpudash-eu-retired"] and "gpudash-eu-retired" not in grafana.state.dashboards
    assert {uid: json.dumps(grafana.state.dashboards.get(uid), sort_keys=True) for uid in kept} == kept
    assert "1 dashboard(s) in folder gpudash not defined here were saved by a gpudash that did not record its uid " \
           "prefix" in stderr and "gpudash-eu-inference" in stderr and "gpudash-eu-training" not in stderr
    # what this push saves records the prefix: the next run knows its own dashboards
    assert all(grafana.state.dashboards[uid]["versions"][-1]["message"].split()[2] == "uid-prefix:gpudash"
               for uid in UIDS)


@pytest.mark.parametrize("mine,theirs", [("gpudash-prod-eu", "gpudash-prod"), ("gpudash-prod", "gpudash-prod-eu")])
def test_a_dashboard_saved_before_prefixes_were_recorded_is_not_pruned_by_a_project_whose_prefix_reads_it(
        grafana, run, tmp_path, mine, theirs):
    """`gpudash-prod-eu-x` is `gpudash-prod`'s `eu-x` or `gpudash-prod-eu`'s `x`. Saved (unrecorded) by the other
    project into this one's folder, it is never pruned, whichever prefix is the longer: nothing in it says whose
    it is (the shorter prefix's reading leaves a dash in the id, the longer prefix's a dash in the prefix). It is
    listed in the note; this project's own dashboard saved with its prefix recorded is pruned."""
    config = tmp_path / "mine.yaml"
    config.write_text(f"grafana:\n  uid_prefix: {mine}\n")
    code, _, stderr = push_json(run, "--config", str(config))
    assert code == 0, stderr
    theirs_old = {"uid": "gpudash-prod-eu-x", "title": f"x of {theirs}", "tags": [GRAFANA_OWNER_TAG]}
    grafana._store(theirs_old["uid"], theirs_old, "gpudash", grafana_message(theirs_old, ""), "gpudash-sa")
    ours = {"uid": f"{mine}-retired", "title": "our retired", "tags": [GRAFANA_OWNER_TAG]}
    grafana._store(ours["uid"], ours, "gpudash", grafana_message(ours, "", mine), "gpudash-sa")
    kept = json.dumps(grafana.state.dashboards["gpudash-prod-eu-x"], sort_keys=True)
    code, stdout, stderr = push_json(run, "--config", str(config), "--prune", "--force")
    assert code == 0, stderr
    assert json.loads(stdout)["written"] == [f"{mine}-retired"] and f"{mine}-retired" not in grafana.state.dashboards
    assert json.dumps(grafana.state.dashboards.get("gpudash-prod-eu-x"), sort_keys=True) == kept
    assert "gpudash-prod-eu-x" in stderr and "did not record its uid prefix" in stderr
    # the note names each such dashboard with every reading of its uid, and says how to delete one by hand
    readings = {"gpudash-prod": "gpudash-prod's eu-x, or gpudash's prod-eu-x or gpudash-prod-eu's x",
                "gpudash-prod-eu": "gpudash-prod-eu's x, or gpudash's prod-eu-x or gpudash-prod's eu-x"}[mine]
    assert f"(gpudash-prod-eu-x: {readings}): --prune leaves them" in stderr, stderr
    assert 'curl -X DELETE -H "Authorization: Bearer $GRAFANA_TOKEN" "$GRAFANA_URL/api/dashboards/uid/UID"' in stderr


def test_a_retired_dashboard_whose_uid_ends_in_a_defined_id_is_pruned_when_it_records_this_uid_prefix(grafana, run,
                                                                                                       tmp_path):
    """This project (uid prefix gpudash) retired its dashboard `eu-overview` while it defines `overview`: the uid
    `gpudash-eu-overview` is in the form of a longer prefix gpudash-eu, but its latest gpudash version records
    gpudash, so it is this project's and --prune deletes it; edited since, only with --force. Another project's
    `gpudash-eu-health` (recorded gpudash-eu) and an unrecorded `gpudash-eu-by-pod` are left."""
    config = tmp_path / "mine.yaml"
    config.write_text("grafana:\n  uid_prefix: gpudash\n")
    code, _, stderr = push_json(run, "--config", str(config))
    assert code == 0, stderr
    for uid, recorded in (("gpudash-eu-overview", "gpudash"), ("gpudash-eu-health", "gpudash-eu"),
                          ("gpudash-eu-by-pod", None), ("gpudash-eu-all-metrics", "gpudash")):
        model = {"uid": uid, "title": uid, "tags": [GRAFANA_OWNER_TAG]}
        grafana._store(uid, model, "gpudash", grafana_message(model, "", recorded), "gpudash-sa")
    edited = {"uid": "gpudash-eu-all-metrics", "title": "edited by hand", "tags": [GRAFANA_OWNER_TAG]}
    grafana._store(edited["uid"], edited, "gpudash", "", "alice")
    kept = {uid: json.dumps(grafana.state.dashboards[uid], sort_keys=True)
            for uid in ("gpudash-eu-health", "gpudash-eu-by-pod", "gpudash-eu-all-metrics")}
    code, stdout, stderr = push_json(run, "--config", str(config), "--prune", "--allow-mass-prune")
    assert code == 1 and json.loads(stdout)["written"] == ["gpudash-eu-overview"], stderr
    assert json.loads(stdout)["refused"] == ["gpudash-eu-all-metrics"]
    assert "gpudash-eu-overview" not in grafana.state.dashboards
    assert {uid: json.dumps(grafana.state.dashboards.get(uid), sort_keys=True) for uid in kept} == kept
    code, stdout, stderr = push_json(run, "--config", str(config), "--prune", "--force", "--allow-mass-prune")
    assert code == 0 and json.loads(stdout)["written"] == ["gpudash-eu-all-metrics"], stderr
    assert "gpudash-eu-health" in grafana.state.dashboards and "gpudash-eu-by-pod" in grafana.state.dashboards


def test_a_dashboard_whose_uid_reads_two_ways_is_not_overwritten_when_it_records_another_uid_prefix(grafana):
    """`gpudash` (dashboard id `eu-inference`) and `gpudash-eu` (id `inference`) make the same uid in one folder.
    The latest gpudash version records whose it is: the other project's is refused without --force (the two
    would otherwise take turns overwriting each other), this project's own is updated, and --force takes the
    other's over."""
    uid = "gpudash-eu-inference"
    grafana.state.folders["gpudash"] = {"id": 99, "uid": "gpudash", "title": "GPU monitoring"}
    theirs = {"uid": uid, "title": "EU inference (gpudash-eu)", "tags": [GRAFANA_OWNER_TAG], "panels": []}
    grafana._store(uid, theirs, "gpudash", grafana_message(theirs, "", "gpudash-eu"), "gpudash-sa")
    mine = {"uid": uid, "title": "Inference EU (gpudash)", "tags": [GRAFANA_OWNER_TAG], "panels": [], "refresh": "1m"}
    client, folder = GrafanaClient(grafana.url, token=ADMIN), {"uid": "gpudash", "title": "GPU monitoring"}

    def push(prefix, dashboard, force=False):
        changes = grafana_sync.plan(client, {uid: dashboard}, folder, uid_prefix=prefix)
        (change,) = [c for c in changes if c.kind == "dashboard"]
        outcomes = grafana_sync.push(client, changes, {uid: dashboard}, folder, "", uid_prefix=prefix, force=force,
                                     prune=True, dry_run=False)
        return change, [o for o in outcomes if o.change is change][0]

    change, outcome = push("gpudash", mine)
    assert change.action == "foreign" and "uid prefix gpudash-eu" in change.details[0] and not outcome.done
    assert grafana.state.dashboards[uid]["dashboard"]["title"] == theirs["title"]
    change, outcome = push("gpudash-eu", {**theirs, "refresh": "5m"})  # its own project updates it
    assert change.action == "update" and outcome.done
    change, outcome = push("gpudash", mine, force=True)
    assert outcome.done and grafana.state.dashboards[uid]["dashboard"]["title"] == mine["title"]
    change, outcome = push("gpudash-eu", theirs)  # now recorded as `gpudash`'s: the other refuses in turn
    assert change.action == "foreign" and "uid prefix gpudash," in change.details[0] and not outcome.done


def _settings_file(tmp_path, name: str, project: str, cluster: str, team_dashboard: bool = False,
                   more: str = "") -> str:
    """A settings file in a folder of its own, grafana: left at its defaults (folder gpudash, uid prefix gpudash);
    with `team_dashboard`, the bundled dashboards and one of the team's own."""
    folder = tmp_path / name
    folder.mkdir()
    text = f"project: {project}\nclusters:\n  - {{name: {cluster}, region: us-east-1, prometheus_label: {cluster}}}\n"
    if team_dashboard:
        (folder / "dash").mkdir()
        (folder / "dash" / "team_a.py").write_text(TEAM_DASHBOARD)
        text += f"definitions:\n  dashboards: [{DASHBOARDS_DIR}, dash]\n"
    (folder / "gpudash.yaml").write_text(text + more)
    return str(folder / "gpudash.yaml")


def _models(grafana) -> dict[str, str]:
    return {uid: json.dumps(entry["dashboard"], sort_keys=True) for uid, entry in grafana.state.dashboards.items()}


@pytest.mark.parametrize("second_project", ["shop", "lab"], ids=["one project, two files", "two projects"])
def test_settings_sharing_the_default_grafana_folder_and_uid_prefix_never_overwrite_or_prune_each_other(
        grafana, run, tmp_path, second_project):
    """Two settings files (of one project, or of two) both leave grafana: at its defaults: the second one's
    push refuses the first one's dashboards as foreign (exit 1, saying which settings saved them and what to
    do), and its --prune leaves the first one's team dashboard; neither takes turns with the other."""
    first = _settings_file(tmp_path, "a", "shop", "team-a", team_dashboard=True)
    second = _settings_file(tmp_path, "b", second_project, "team-b",
                            more="thresholds:\n  gpu_temp_celsius: {warning: 70, critical: 90}\n")
    code, _, stderr = push_json(run, "--config", first)
    assert code == 0, stderr
    before = dashboard_contents(grafana)
    for flags in ((), ("--prune",)):
        code, stdout, stderr = push_json(run, "--config", second, *flags)
        report = json.loads(stdout)
        assert code == 1 and "Traceback" not in stderr, stderr
        # the two dashboards the second file generates the same get its claim recorded once when it is of the same
        # project (a save of the same content); the others are refused
        # (all-metrics, near the sidecar ConfigMap's limit with a shared Prometheus, may be cut into parts)
        same = [uid for uid in built_uids(first) if uid.startswith(("gpudash-all-metrics", "gpudash-by-pod"))]
        claimed = same if second_project == "shop" and not flags else []
        assert sorted(report["written"]) == claimed and set(report["refused"]) >= {"gpudash-health", "gpudash-overview"}
        assert dashboard_contents(grafana) == before  # nothing of the first settings' overwritten or deleted
        detail = next(c["details"][0] for c in report["changes"] if c["name"] == "gpudash-health")
        assert "last saved by gpudash from other settings (project 'shop', clusters team-a)" in detail, detail
        assert "give each settings file its own grafana.uid_prefix and grafana.folder.uid" in detail, detail
    assert "1 dashboard(s) in folder gpudash not defined here were last saved by other settings" in stderr, stderr
    code, stdout, _ = run("plan", "--no-cloudwatch", "--config", first, "--output", "json")
    # the first settings' own (their folder and dashboards), untouched
    assert code == 0 and json.loads(stdout)["summary"] == {"unchanged": 1 + len(built_uids(first))}


def test_a_dashboard_as_generated_records_its_settings_again_after_a_split_so_the_other_file_leaves_it(
        grafana, run, tmp_path):
    """One settings file of clusters alpha and beta publishes; it is split into A (alpha, the bundled
    dashboards) and B (beta, with the team dashboard too). Before B pushes, A's --prune leaves the team dashboard:
    it was published with beta, which another file may define now; A's push records A on the bundled ones, with
    beta carried as a claim. B's push saves the team dashboard again though its content is as generated, to record
    B, with alpha carried as a claim; then A's --prune leaves it, withdrawing alpha's claim (and leaves nothing of
    B's)."""
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "dash").mkdir()
    (whole / "dash" / "team_a.py").write_text(TEAM_DASHBOARD)
    clusters = "".join(f"  - {{name: {c}, region: us-east-1}}\n" for c in ("alpha", "beta"))
    (whole / "gpudash.yaml").write_text(f"project: shop\nclusters:\n{clusters}"
                                        f"definitions:\n  dashboards: [{DASHBOARDS_DIR}, dash]\n")
    assert push_json(run, "--config", str(whole / "gpudash.yaml"))[0] == 0
    team = "gpudash-team-a-training"
    for name, cluster in (("a", "alpha"), ("b", "beta")):
        folder = tmp_path / name
        folder.mkdir()
        text = f"project: shop\nclusters:\n  - {{name: {cluster}, region: us-east-1}}\n"
        if name == "b":
            (folder / "dash").mkdir()
            (folder / "dash" / "team_a.py").write_text(TEAM_DASHBOARD)
            text += f"definitions:\n  dashboards: [{DASHBOARDS_DIR}, dash]\n"
        (folder / "gpudash.yaml").write_text(text)
    a, b = str(tmp_path / "a" / "gpudash.yaml"), str(tmp_path / "b" / "gpudash.yaml")
    code, stdout, stderr = push_json(run, "--config", a, "--prune")
    assert code == 0 and team in grafana.state.dashboards, stderr
    assert "were saved by settings with clusters these settings no longer all define" in stderr, stderr
    code, stdout, stderr = push_json(run, "--config", b)
    # the team dashboard records B, with alpha's claim; A's, as generated for B too (no cluster variable), stay A's
    # on record with beta's claim beside, carried by A's push: B writes nothing to them
    shared = ["gpudash-all-metrics", "gpudash-by-pod", "gpudash-health", "gpudash-overview"]
    assert code == 0 and json.loads(stdout)["written"] == [team], stderr
    assert (grafana_recorded_claims(grafana.state.dashboards[team]["versions"][-1]["message"])
            == {grafana_claim("shop", ["alpha"])})
    assert "project:shop clusters:beta also:" in grafana.state.dashboards[team]["versions"][-1]["message"]
    assert all(" project:shop clusters:alpha also:" in grafana.state.dashboards[uid]["versions"][-1]["message"]
               for uid in shared)
    # B is told which dashboards it shares with A, that they stay A's with its claim recorded, and what to do
    assert ("4 dashboard(s) these settings define are generated the same by other settings (project 'shop', "
            "clusters alpha), which saved them last (gpudash-all-metrics, gpudash-by-pod, gpudash-health, "
            "gpudash-overview): left as they are, theirs on record, with these settings recorded beside them") \
        in stderr, stderr
    assert "give each settings file its own grafana.uid_prefix and grafana.folder.uid" in stderr
    code, stdout, stderr = push_json(run, "--config", a, "--prune")
    assert code == 0 and json.loads(stdout)["written"] == [team] and team in grafana.state.dashboards, stderr
    assert grafana_recorded_claims(grafana.state.dashboards[team]["versions"][-1]["message"]) == frozenset()
    assert "1 dashboard(s) in folder gpudash not defined here were last saved by other settings" in stderr, stderr


def test_dashboards_an_older_gpudash_saved_record_their_settings_at_the_next_push_and_are_then_refused_to_others(
        grafana, run, tmp_path):
    """Dashboards saved before gpudash recorded the settings that saved them (their messages record the uid
    prefix alone): the next push of their project saves them again, content unchanged, to record it, once; then
    another project's push with the same folder and uid prefix refuses them instead of overwriting them."""
    shop = _settings_file(tmp_path, "a", "shop", "team-a")
    lab = _settings_file(tmp_path, "b", "lab", "lab-1",
                         more="thresholds:\n  gpu_temp_celsius: {warning: 70, critical: 90}\n")
    assert push_json(run, "--config", shop)[0] == 0
    for uid, entry in list(grafana.state.dashboards.items()):  # as an older gpudash saved them
        grafana._store(uid, entry["dashboard"], "gpudash", grafana_message(entry["dashboard"], "", "gpudash"),
                       "gpudash-sa")
    code, stdout, stderr = push_json(run, "--config", shop)
    assert code == 0 and sorted(json.loads(stdout)["written"]) == sorted(grafana.state.dashboards), stderr
    assert json.loads(push_json(run, "--config", shop)[1])["written"] == []  # once
    before = _models(grafana)
    code, stdout, stderr = push_json(run, "--config", lab)
    assert code == 1 and json.loads(stdout)["written"] == [] and _models(grafana) == before, stderr


def _latest_clusters(grafana) -> dict[str, str]:
    return {uid: entry["versions"][-1]["message"].split("clusters:")[1].split()[0]
            for uid, entry in grafana.state.dashboards.items()}


def test_a_cluster_renamed_in_its_only_settings_file_takes_its_dashboards_back_with_renamed_from(grafana, run, tmp_path):
    """The only settings file of project fleet renames its cluster team-a to team-z and changes a threshold: its
    dashboards record team-a, which nothing tells from another file's, so those it changes are refused (naming the
    flag); with
    `push --renamed-from team-a` every dashboard is saved recording team-z (those as generated too), and the next
    push needs no flag; the flag left in place afterwards takes nothing and says so."""
    a = _settings_file(tmp_path, "a", "fleet", "team-a", team_dashboard=True)
    z = _settings_file(tmp_path, "z", "fleet", "team-z", team_dashboard=True,
                       more="thresholds:\n  gpu_temp_celsius: {warning: 70, critical: 90}\n")
    assert push_json(run, "--config", a)[0] == 0
    assert set(_latest_clusters(grafana).values()) == {"team-a"}
    code, stdout, stderr = push_json(run, "--config", z)
    refused = json.loads(stdout)["refused"]
    assert code == 1 and refused, stderr
    assert "`gpudash push --renamed-from team-a` takes it back" in json.dumps(json.loads(stdout)["changes"])
    code, stdout, stderr = push_json(run, "--config", z, "--renamed-from", "team-a")
    assert code == 0 and sorted(json.loads(stdout)["written"]) == sorted(grafana.state.dashboards), stderr
    assert set(_latest_clusters(grafana).values()) == {"team-z"}
    code, stdout, stderr = push_json(run, "--config", z)
    assert code == 0 and json.loads(stdout)["written"] == [], stderr
    code, stdout, stderr = push_json(run, "--config", z, "--renamed-from", "team-a", "--prune")
    assert code == 0 and json.loads(stdout)["written"] == [], stderr
    assert "--renamed-from team-a: no dashboard in folder gpudash records the cluster 'team-a'" in stderr, stderr


def test_push_renamed_from_a_name_no_dashboard_records_is_refused_before_any_write(grafana, run, tmp_path):
    """`push --renamed-from tema-a` (a typo of team-a, the cluster renamed to team-z): no dashboard records
    `tema-a`, so the flag would take nothing and the dashboards recording team-a would stay refused as another
    file's. Refused, exit 2, before any save, naming the name, team-a and the one meant."""
    a = _settings_file(tmp_path, "a", "fleet", "team-a", team_dashboard=True)
    z = _settings_file(tmp_path, "z", "fleet", "team-z", team_dashboard=True,
                       more="thresholds:\n  gpu_temp_celsius: {warning: 70, critical: 90}\n")
    assert push_json(run, "--config", a)[0] == 0
    before = _models(grafana)
    code, stdout, stderr = push_json(run, "--config", z, "--renamed-from", "tema-a", "--prune")
    assert code == 2 and set(json.loads(stdout)) == {"error"} and _models(grafana) == before, stderr
    assert ("--renamed-from tema-a: no object of project 'fleet' records the cluster 'tema-a'" in stderr
            and "do not define: team-a)" in stderr and "did you mean 'team-a'?" in stderr), stderr


def test_push_renamed_from_a_cluster_another_settings_file_saved_last_is_refused(grafana, run, tmp_path):
    """Another settings file of the project still defines team-a (with team-b) and saved the dashboards last:
    `push --renamed-from team-a` from a file of team-z stops before any write, exit 2, naming the dashboards and
    the clusters they record; nothing is saved or deleted."""
    other = tmp_path / "other.yaml"
    other.write_text("project: fleet\nclusters:\n  - {name: team-a, region: us-east-1}\n"
                     "  - {name: team-b, region: us-east-1}\n")
    z = _settings_file(tmp_path, "z", "fleet", "team-z")
    assert push_json(run, "--config", str(other))[0] == 0
    before = _models(grafana)
    code, stdout, stderr = push_json(run, "--config", z, "--renamed-from", "team-a", "--prune", "--force")
    assert code == 2 and set(json.loads(stdout)) == {"error"}, stdout  # the error alone: nothing was published
    assert ("--renamed-from team-a: 4 object(s) of project 'fleet' recording the cluster 'team-a' were last "
            "published by settings with clusters team-a team-b, not by an earlier version of these (clusters "
            "team-z)") in stderr, stderr
    assert _models(grafana) == before and set(_latest_clusters(grafana).values()) == {"team-a,team-b"}


def test_a_settings_file_with_many_clusters_and_a_long_commit_subject_saves_messages_grafana_takes(
        grafana, run, tmp_path, monkeypatch):
    """Grafana refuses a save whose version message is over 500 bytes (400 "message too long, max 500 characters");
    the test server refuses it too. Thirty long cluster names (an 870-character list) and a 200-character commit
    subject with non-ASCII letters: every save is taken, records these settings, and the next push writes nothing."""
    clusters = [f"prod-eks-us-east-1-gpu-{i:02d}" for i in range(30)]
    text = "project: ml-platform\nclusters:\n" + "".join(
        f"  - {{name: {c}, region: us-east-1, prometheus_label: {c}}}\n" for c in clusters)
    (tmp_path / "gpudash.yaml").write_text(text)
    monkeypatch.setattr("generator.cli_publish.git_note", lambda cwd=None: "a9bcb45 " + "Schwellwerte für H100 " * 9)
    code, stdout, stderr = push_json(run, "--config", str(tmp_path / "gpudash.yaml"))
    assert code == 0, stderr
    messages = [entry["versions"][-1]["message"] for entry in grafana.state.dashboards.values()]
    # every dashboard of the build: this shared Prometheus' all-metrics dashboard is within 4 KB of being cut into
    # parts for client-side kubectl apply (dashboard_parts), each a dashboard of its own
    built = sorted(d.uid for d in grafana_dashboards(load_project(tmp_path / "gpudash.yaml")))
    assert set(UIDS) <= set(built) and sorted(grafana.state.dashboards) == built
    assert max(len(m.encode()) for m in messages) <= 500
    assert all(" project:ml-platform clusters:prod-eks-us-east-1-gpu-00," in m and "a9bcb45 Schwellwerte" in m
               for m in messages)
    writes = len(grafana.writes())
    code, stdout, stderr = push_json(run, "--config", str(tmp_path / "gpudash.yaml"))
    assert code == 0, stderr
    assert json.loads(stdout)["written"] == [] and len(grafana.writes()) == writes


def test_a_cluster_list_cut_to_fit_the_message_proves_no_split_file_owns_the_dashboard(grafana, run, tmp_path):
    """A settings file of 14 clusters of 25 characters records 11 of them (Grafana's 500-byte message), marked as cut.
    Split: A keeps the 11 recorded clusters, the other 3 and the team dashboard go elsewhere. A's --prune leaves the
    team dashboard: a cut list does not show that A defines every cluster that saved it (it deleted it)."""
    names = [f"prod-eks-us-east-1-gpu-{i:02d}" for i in range(14)]
    whole = tmp_path / "whole"
    (whole / "dash").mkdir(parents=True)
    (whole / "dash" / "team_a.py").write_text(TEAM_DASHBOARD)
    text = "project: shop\nclusters:\n" + "".join(f"  - {{name: {c}, region: us-east-1}}\n" for c in names)
    (whole / "gpudash.yaml").write_text(text + f"definitions:\n  dashboards: [{DASHBOARDS_DIR}, dash]\n")
    code, _, stderr = push_json(run, "--config", str(whole / "gpudash.yaml"))
    assert code == 0, stderr
    team = "gpudash-team-a-training"
    recorded = grafana_recorded_publisher(grafana.state.dashboards[team]["versions"][-1]["message"])
    assert recorded == ("shop", frozenset([*names[:11], CLUSTERS_CUT]))  # 11 names fit, then the mark of a cut list
    a = tmp_path / "a"
    a.mkdir()
    (a / "gpudash.yaml").write_text("project: shop\nclusters:\n" + "".join(
        f"  - {{name: {c}, region: us-east-1}}\n" for c in names[:11]))
    code, _, stderr = push_json(run, "--config", str(a / "gpudash.yaml"), "--prune")
    assert code == 0, stderr
    assert team in grafana.state.dashboards, "A's --prune deleted the dashboard published with clusters 11-13"
    # A records itself on the dashboards it defines; the clusters the cut list left out are unknown, so they are
    # carried as claims of settings not listed, which no --prune withdraws
    message = grafana.state.dashboards["gpudash-overview"]["versions"][-1]["message"]
    assert grafana_recorded_publisher(message) == ("shop", frozenset(names[:11]))
    assert grafana_recorded_claims(message) == {frozenset({"*"})} and len(message.encode()) <= 500


def test_a_dashboard_cut_into_parts_is_pushed_part_by_part_and_a_part_no_longer_made_is_pruned(
        grafana, run, tmp_path, reference):
    """A counters CSV of every field cuts all-metrics in two (dashboard_parts: one ConfigMap would pass what
    client-side kubectl apply takes). push writes both parts, linked to each other, and a second push writes nothing;
    back on the bundled CSV the dashboard is whole again, and push --prune deletes the second part, gpudash's."""
    from tests.unit.test_dashboard_parts import _every_field

    config = tmp_path / "gpudash.yaml"
    config.write_text(_every_field(tmp_path, reference) + "grafana:\n  refresh: 5m\n")
    code, stdout, stderr = push_json(run, "--config", str(config))
    assert code == 0, stderr
    assert sorted(grafana.state.dashboards) == sorted([*UIDS, "gpudash-all-metrics-2"])
    first, second = (grafana.state.dashboards[uid]["dashboard"] for uid in ("gpudash-all-metrics",
                                                                           "gpudash-all-metrics-2"))
    assert (first["title"], second["title"]) == ("GPU metrics (all collected fields), part 1 of 2",
                                                 "GPU metrics (all collected fields), part 2 of 2")
    assert [link["url"] for link in first["links"]] == ["/d/gpudash-all-metrics-2"]
    code, stdout, _ = push_json(run, "--config", str(config))
    assert code == 0 and json.loads(stdout)["written"] == []
    config.write_text("grafana:\n  refresh: 5m\n")
    code, stdout, stderr = push_json(run, "--config", str(config), "--prune")
    assert code == 0, stderr
    assert "gpudash-all-metrics-2" in json.loads(stdout)["written"]
    assert sorted(grafana.state.dashboards) == UIDS
    assert grafana.state.dashboards["gpudash-all-metrics"]["dashboard"]["title"] == "GPU metrics (all collected fields)"


def test_a_part_whose_uid_a_persons_dashboard_holds_is_refused_not_overwritten(grafana, run, tmp_path, reference):
    """A person's "Save as" copy of all-metrics under the uid gpudash-all-metrics-2 (the owner tag kept, no gpudash
    version), then a counters CSV that cuts all-metrics in two: the second part's uid is the person's dashboard. push
    writes the first part and refuses the second (foreign, exit 1), the person's dashboard as it was; --prune never
    deletes it either once the dashboard is whole again."""
    from tests.unit.test_dashboard_parts import _every_field

    push_json(run)
    _save_as(grafana, "gpudash-all-metrics", "gpudash-all-metrics-2", "gpudash", "All metrics (my copy)")
    before = json.dumps(grafana.state.dashboards["gpudash-all-metrics-2"], sort_keys=True)
    config = tmp_path / "gpudash.yaml"
    config.write_text(_every_field(tmp_path, reference))
    code, stdout, stderr = push_json(run, "--config", str(config))
    changes = {c["name"]: c for c in json.loads(stdout)["changes"]}
    assert code == 1 and changes["gpudash-all-metrics-2"]["action"] == "foreign", stderr
    assert "gpudash-all-metrics" in json.loads(stdout)["written"]
    assert json.dumps(grafana.state.dashboards["gpudash-all-metrics-2"], sort_keys=True) == before
    config.write_text("grafana:\n  refresh: 30s\n")
    code, stdout, stderr = push_json(run, "--config", str(config), "--prune")
    assert "gpudash-all-metrics-2" not in json.loads(stdout)["written"], stderr
    assert json.dumps(grafana.state.dashboards["gpudash-all-metrics-2"], sort_keys=True) == before

"""Two settings files of one project that generate the same Grafana dashboard (same folder, uid and content), against
the Grafana API test server over HTTP: the file that did not save it records a claim beside the one that did, and no
--prune deletes a dashboard another file still claims; a file withdraws its claim only with --prune, under the same
guard as a delete; claims fit Grafana's 500-byte version message; a claim that does not read is a failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generator.artifacts import grafana_dashboards
from generator.clients.grafana import GrafanaClient
from generator.ownership import grafana_claim, grafana_message, grafana_recorded_claims
from generator.project import load_project
from generator.targets import grafana_sync
from generator.targets.prune_guard import PruneRefused
from tests.support.grafana_push import (TEAM, TEAM_DASHBOARD, built_uids, dashboard_contents,  # noqa: F401
                                        grafana, last_message, push_json, pushed_written, run,  # (fixtures)
                                        team_settings)
from tests.support.grafana_server import ADMIN

BUNDLED = ["gpudash-all-metrics", "gpudash-by-pod", "gpudash-health", "gpudash-overview"]
FOLDER = {"uid": "gpudash", "title": "GPU monitoring"}


def test_a_dashboard_another_file_claims_survives_the_prune_of_the_file_that_saved_it_until_every_claim_is_withdrawn(
        grafana, run, tmp_path):
    """A (alpha), B (beta) and C (gamma) of project shop generate the same dashboards; A saves them first, B and C
    each record a claim beside A's record (a save of the same content), once: no push writes anything after that.
    A stops defining the team dashboard: its --prune leaves it (it deleted it before, and B's next push created it
    again with a new history). B stops too: its push without --prune keeps its claim, with --prune withdraws it
    (A's record and C's claim kept, content unchanged); A's --prune still leaves it for C; once C withdraws, A's
    --prune deletes it."""
    a, b, c = (team_settings(tmp_path, n, [cluster]) for n, cluster in (("a", "alpha"), ("b", "beta"), ("c", "gamma")))
    shared = built_uids(a)  # the team's and the bundled dashboards (all-metrics may be cut into parts)
    assert TEAM in shared and set(BUNDLED) <= set(shared)
    assert pushed_written(run, a) == ["gpudash", *shared]  # the folder, then the dashboards
    content = dashboard_contents(grafana)
    assert pushed_written(run, b) == shared and pushed_written(run, c) == shared  # each file's claim, once
    assert dashboard_contents(grafana) == content
    claims = grafana_recorded_claims(last_message(grafana))
    assert claims == {grafana_claim("shop", ["beta"]), grafana_claim("shop", ["gamma"])}
    assert " project:shop clusters:alpha also:" in last_message(grafana)
    writes = len(grafana.writes())
    for config in (a, b, c, a):
        assert pushed_written(run, config) == []
    assert len(grafana.writes()) == writes  # the second push of each file writes nothing

    a2 = team_settings(tmp_path, "a2", ["alpha"], team=False)
    code, stdout, stderr = push_json(run, "--config", a2, "--prune", "--force")  # --force agrees to no claimed delete
    assert code == 0 and json.loads(stdout)["written"] == [] and TEAM in grafana.state.dashboards, stderr
    assert ("1 dashboard(s) in folder gpudash not defined here are recorded as generated too by other settings "
            "files of this project (gpudash-team-a-training): --prune leaves them") in stderr, stderr
    assert len(grafana.writes()) == writes

    b2 = team_settings(tmp_path, "b2", ["beta"], team=False)
    assert pushed_written(run, b2) == [] and len(grafana.writes()) == writes  # without --prune the claim stays
    code, stdout, stderr = push_json(run, "--config", b2, "--prune", "--dry-run")
    assert code == 0 and json.loads(stdout)["would_write"] == [TEAM] and len(grafana.writes()) == writes, stderr
    code, stdout, stderr = push_json(run, "--config", b2, "--prune")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM], stderr
    change = next(ch for ch in json.loads(stdout)["changes"] if ch["name"] == TEAM)
    assert change["action"] == "withdraw", change
    assert grafana_recorded_claims(last_message(grafana)) == {grafana_claim("shop", ["gamma"])}
    assert " project:shop clusters:alpha also:" in last_message(grafana) and dashboard_contents(grafana) == content
    assert pushed_written(run, b2, "--prune") == []  # withdrawn once

    assert pushed_written(run, a2, "--prune") == [] and TEAM in grafana.state.dashboards  # C still claims it
    assert pushed_written(run, team_settings(tmp_path, "c2", ["gamma"], team=False), "--prune") == [TEAM]
    assert grafana_recorded_claims(last_message(grafana)) == set()
    assert pushed_written(run, a2, "--prune") == [TEAM] and TEAM not in grafana.state.dashboards
    assert sorted(grafana.state.dashboards) == built_uids(a2)


def test_withdrawals_are_prune_steps_an_empty_or_shrunken_build_is_refused_for(grafana, run, tmp_path):
    """A withdrawal counts as a delete for the prune guard, never as an object the build holds: B (which claims the
    five dashboards A saved and saves its own) with an empty build and --prune is refused, exit 2, nothing written
    (it withdrew every claim and deleted B's own before); B dropping the four bundled dashboards withdraws 4 claims
    of 6, refused as more than half; --allow-mass-prune lets it; without --prune nothing is withdrawn."""
    own = tmp_path / "own.py"
    own.write_text(TEAM_DASHBOARD.replace("team-a-training", "beta-only").replace("Team A training", "Beta only"))
    a = team_settings(tmp_path, "a", ["alpha"])
    b = team_settings(tmp_path, "b", ["beta"])
    (tmp_path / "b" / "dash" / "beta_only.py").write_text(own.read_text())
    pushed_written(run, a)
    assert "gpudash-beta-only" in pushed_written(run, b)
    client = GrafanaClient(grafana.url, token=ADMIN)
    changes = grafana_sync.plan(client, {}, FOLDER, uid_prefix="gpudash", publisher=("shop", ("beta",)))
    assert sorted((ch.name, ch.action) for ch in changes if ch.kind == "dashboard") == sorted(
        [(uid, "withdraw") for uid in built_uids(a)] + [("gpudash-beta-only", "delete")])
    writes, before = len(grafana.writes()), json.dumps(grafana.state.dashboards, sort_keys=True)
    for force in (False, True):
        with pytest.raises(PruneRefused, match="the build holds no grafana objects"):
            grafana_sync.push(client, changes, {}, FOLDER, "", uid_prefix="gpudash", force=force, prune=True,
                              dry_run=False, publisher=("shop", ("beta",)))
    assert len(grafana.writes()) == writes and json.dumps(grafana.state.dashboards, sort_keys=True) == before

    shrunk = team_settings(tmp_path, "b2", ["beta"], bundled=False)
    bundled = built_uids(a, leave=(TEAM,))  # what shrunk drops: the bundled dashboards, all-metrics' parts too
    (tmp_path / "b2" / "dash" / "beta_only.py").write_text(own.read_text())
    for flags in ((), ("--dry-run",), ("--force",)):
        code, stdout, stderr = push_json(run, "--config", shrunk, "--prune", *flags)
        assert code == 2 and set(json.loads(stdout)) == {"error"}, stderr  # the error alone: nothing was published
        assert (f"--prune refused: it would delete or withdraw its claim on {len(bundled)} of the {len(bundled) + 2} "
                "grafana dashboards gpudash owns (more than 50%)") in stderr, stderr
    assert pushed_written(run, shrunk) == [] and len(grafana.writes()) == writes
    assert pushed_written(run, shrunk, "--prune", "--allow-mass-prune") == bundled
    assert all(grafana_recorded_claims(last_message(grafana, uid)) == set() for uid in bundled)


@pytest.mark.parametrize("mine, theirs, name, fits", [
    (12, 12, "prod-eks-{region}-{i:02d}", True),  # 624 bytes with the claim's names written out;
    # 156 bytes left beside A's record: 209 with 16 characters a cluster, 113 with 8
    (11, 30, "prod-eks-{region}-gpu-{i:02d}", False),  # 142 bytes left beside A's record; B's claim takes 275 with 8
], ids=["12 clusters a file", "11 and 30 clusters"])
def test_a_claim_of_many_clusters_fits_grafanas_message_or_marks_the_dashboard_claimed_by_settings_not_listed(
        grafana, run, tmp_path, mine, theirs, name, fits):
    """Claims name each cluster by 16 characters of a digest, or 8 where 16 do not fit beside the record of the
    settings that saved the dashboard in Grafana's 500 bytes (the test server refuses more, as Grafana does). Where
    even 8 do not fit, the message records that settings not listed claim it: no --prune deletes it, and no push
    takes turns."""
    def clusters(region, count):
        return [name.format(region=region, i=i) for i in range(count)]

    a, b = team_settings(tmp_path, "a", clusters("us-east-1", mine)), team_settings(tmp_path, "b", clusters("eu-west-1", theirs))
    pushed_written(run, a)
    code, stdout, stderr = push_json(run, "--config", b)
    # every dashboard of the build: a shared Prometheus' all-metrics dashboard is within 4 KB of being cut into parts
    # for client-side kubectl apply (dashboard_parts), each a dashboard of its own
    built = [dashboard.uid for dashboard in grafana_dashboards(load_project(Path(b)))]
    assert TEAM in built and set(BUNDLED) <= set(built)
    assert code == 0 and sorted(json.loads(stdout)["written"]) == sorted(built), stderr
    assert ("with claims of settings not listed (also:*" in stderr) is not fits, stderr
    message = last_message(grafana)
    assert len(message.encode()) <= 500 and " project:shop clusters:prod-eks-us-east-1-" in message
    assert not message.split(" also:")[0].endswith(",")  # A's own record is whole: only the claim keeps it
    expected = ({frozenset(d[:8] for d in grafana_claim("shop", clusters("eu-west-1", theirs)))} if fits
                else {frozenset("*")})
    assert grafana_recorded_claims(message) == expected, message
    writes = len(grafana.writes())
    assert pushed_written(run, b) == [] and pushed_written(run, a) == [] and len(grafana.writes()) == writes
    a2 = team_settings(tmp_path, "a2", clusters("us-east-1", mine), team=False)
    assert pushed_written(run, a2, "--prune") == [] and TEAM in grafana.state.dashboards  # it deleted it before
    b2 = team_settings(tmp_path, "b2", clusters("eu-west-1", theirs), team=False)
    assert pushed_written(run, b2, "--prune") == ([TEAM] if fits else [])  # a claim not listed is nobody's to withdraw
    assert TEAM in grafana.state.dashboards
    assert pushed_written(run, a2, "--prune") == ([TEAM] if fits else [])
    assert (TEAM in grafana.state.dashboards) is not fits


@pytest.mark.parametrize("claim", ["also:beta", "also:ABCDEFGH", "also:abcdefgh,", "also:", "also:abcdefg1"])
def test_a_claim_that_does_not_read_is_not_a_valid_answer(grafana, run, tmp_path, claim):
    """A version message whose claim does not read as gpudash writes it is a failure (exit 3, nothing published),
    never read as "no claims", for the file that saved it, with --prune --force too."""
    a = team_settings(tmp_path, "a", ["alpha"])
    pushed_written(run, a)
    entry = grafana.state.dashboards[TEAM]
    good = grafana_message(entry["dashboard"], "abc123 a commit", "gpudash", ("shop", ("alpha",)))
    grafana._store(TEAM, entry["dashboard"], "gpudash", good.replace(" abc123", f" {claim} abc123"), "gpudash-sa")
    before = json.dumps(grafana.state.dashboards, sort_keys=True)
    for config, flags in ((a, ()), (team_settings(tmp_path, "a2", ["alpha"], team=False), ("--prune", "--force"))):
        code, _, stderr = push_json(run, "--config", config, *flags)
        assert code == 3 and "does not read as gpudash writes claims" in stderr and "nothing was published" in stderr, \
            stderr
    assert json.dumps(grafana.state.dashboards, sort_keys=True) == before


def test_a_claim_no_settings_file_can_tell_for_its_own_after_a_cluster_moved_keeps_the_dashboard(
        grafana, run, tmp_path):
    """B (beta, gamma) claims what A (alpha) saved; beta moves to A. A (alpha, beta) no longer defining the team
    dashboard leaves it: B's claim names gamma, which A does not define (B, now gamma alone, may still define it)."""
    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    pushed_written(run, team_settings(tmp_path, "b", ["beta", "gamma"]))
    a2 = team_settings(tmp_path, "a2", ["alpha", "beta"], team=False)
    assert pushed_written(run, a2, "--prune") == built_uids(a2)
    # A's record is saved again with beta (B's claim carried on); nothing deleted
    assert TEAM in grafana.state.dashboards


def test_a_claim_on_a_dashboard_a_person_changed_is_not_withdrawn_and_keeps_it(grafana, run, tmp_path):
    """B no longer defines a dashboard it claimed, but a person changed it since: withdrawing would save the edit as
    gpudash's, so the claim stays and B says so; A's --prune --force leaves it."""
    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    pushed_written(run, team_settings(tmp_path, "b", ["beta"]))
    grafana.edit_in_ui(TEAM, lambda d: d.update(refresh="10s"))
    writes = len(grafana.writes())
    code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "b2", ["beta"], team=False), "--prune")
    assert code == 0 and json.loads(stdout)["written"] == [], stderr
    assert "record that these settings generate them too, but a person changed them since" in stderr, stderr
    code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "a2", ["alpha"], team=False), "--prune", "--force")
    assert code == 0 and json.loads(stdout)["written"] == [] and TEAM in grafana.state.dashboards, stderr
    assert len(grafana.writes()) == writes


def test_a_claim_recorded_after_the_plan_stops_the_delete_the_plan_made(grafana, run, tmp_path):
    """A's prune is planned before B records its claim: the claim is a new version, so the delete's last look finds
    the dashboard changed since the plan and does not delete it."""
    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    client = GrafanaClient(grafana.url, token=ADMIN)
    changes = grafana_sync.plan(client, {}, FOLDER, uid_prefix="gpudash", publisher=("shop", ("alpha",)))
    changes = [ch for ch in changes if ch.kind == "folder" or ch.name == TEAM]
    assert [ch.action for ch in changes if ch.kind == "dashboard"] == ["delete"]
    pushed_written(run, team_settings(tmp_path, "b", ["beta"]))
    outcomes = grafana_sync.push(client, changes, {}, FOLDER, "", uid_prefix="gpudash", force=True, prune=True,
                                 dry_run=False, allow_mass_prune=True, publisher=("shop", ("alpha",)))
    failed = [o for o in outcomes if o.change.name == TEAM]
    assert not failed[0].done and "changed in Grafana by gpudash-sa since the plan" in failed[0].error
    assert TEAM in grafana.state.dashboards


def test_a_save_of_the_file_that_owns_it_carries_the_claims_on(grafana, run, tmp_path):
    """A changes a threshold: the dashboards it saves again keep B's claim, so A's prune still leaves them."""
    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    pushed_written(run, team_settings(tmp_path, "b", ["beta"]))
    changed = team_settings(tmp_path, "a2", ["alpha"], more="thresholds:\n  gpu_temp_celsius: {warning: 70, critical: 90}\n")
    written = pushed_written(run, changed)
    assert written and TEAM not in written
    assert all(grafana_recorded_claims(last_message(grafana, uid)) == {grafana_claim("shop", ["beta"])}
               for uid in written)


def test_a_claim_the_reverted_design_wrote_with_names_in_full_is_read_as_the_same_claim(grafana, run, tmp_path):
    """Versions saved by the first claims design (`also:shop/beta`, names in full) read as B's claim: A's --prune
    leaves the dashboard, B's push writes nothing (its claim is recorded), B's --prune withdraws it."""
    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    entry = grafana.state.dashboards[TEAM]
    message = grafana_message(entry["dashboard"], "abc123 a commit", "gpudash", ("shop", ("alpha",)))
    grafana._store(TEAM, entry["dashboard"], "gpudash", message.replace(" abc123", " also:shop/beta abc123"),
                   "gpudash-sa")
    assert grafana_recorded_claims(last_message(grafana)) == {grafana_claim("shop", ["beta"])}
    a2 = team_settings(tmp_path, "a2", ["alpha"], team=False)
    assert pushed_written(run, a2, "--prune") == [] and TEAM in grafana.state.dashboards
    assert TEAM not in pushed_written(run, team_settings(tmp_path, "b", ["beta"]))
    assert pushed_written(run, team_settings(tmp_path, "b2", ["beta"], team=False), "--prune") == [TEAM]
    assert pushed_written(run, a2, "--prune") == [TEAM] and TEAM not in grafana.state.dashboards


def test_a_file_that_adds_a_cluster_replaces_its_claim_and_one_that_drops_one_leaves_a_claim_nobody_withdraws(
        grafana, run, tmp_path):
    """B (beta) claims; B adds delta: its claim is replaced by one of beta and delta (each of its clusters is B's),
    once. B drops delta again: the claim of beta and delta names a cluster B no longer defines, so B records a claim
    of beta beside it and never withdraws the other; the dashboard then stays until a person deletes it (noted)."""
    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    pushed_written(run, team_settings(tmp_path, "b", ["beta"]))
    wider = team_settings(tmp_path, "b2", ["beta", "delta"])
    assert TEAM in pushed_written(run, wider) and pushed_written(run, wider) == []
    assert grafana_recorded_claims(last_message(grafana)) == {grafana_claim("shop", ["beta", "delta"])}
    assert TEAM in pushed_written(run, team_settings(tmp_path, "b3", ["beta"]))
    assert grafana_recorded_claims(last_message(grafana)) == {grafana_claim("shop", ["beta", "delta"]),
                                                          grafana_claim("shop", ["beta"])}
    assert pushed_written(run, team_settings(tmp_path, "b4", ["beta"], team=False), "--prune") == [TEAM]
    assert grafana_recorded_claims(last_message(grafana)) == {grafana_claim("shop", ["beta", "delta"])}
    code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "a2", ["alpha"], team=False), "--prune")
    assert code == 0 and json.loads(stdout)["written"] == [] and TEAM in grafana.state.dashboards, stderr
    assert "if no settings file defines one any more, delete it by hand in Grafana" in stderr, stderr


@pytest.mark.parametrize("action", ["reset-after", "truncate", "body"])
def test_a_claim_or_withdrawal_whose_answer_is_lost_is_read_back_done_once(grafana, run, tmp_path, action):
    """The claim save and the withdrawal land, and their answers are lost (the connection reset, the answer cut
    short, a page that is not Grafana's): the version they left is read back with the claims they meant, so each is
    reported done, once (one version each), and nothing is written twice."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    with FaultProxy(grafana.url) as proxy:
        def through(*args):
            return run(*args, url=proxy.url)

        body = f'"uid": "{TEAM}"'.encode()
        for config, flags, claims in ((team_settings(tmp_path, "b", ["beta"]), (), {grafana_claim("shop", ["beta"])}),
                                      (team_settings(tmp_path, "b2", ["beta"], team=False), ("--prune",), set())):
            versions = len(grafana.state.dashboards[TEAM]["versions"])
            proxy.inject(Rule(r"^/api/dashboards/db$", action=action, contains=body))
            code, stdout, stderr = push_json(through, "--config", config, *flags)
            assert proxy.faults(), "the fault was never injected"
            assert code == 0 and TEAM in json.loads(stdout)["written"], stderr
            assert len(grafana.state.dashboards[TEAM]["versions"]) == versions + 1
            assert grafana_recorded_claims(last_message(grafana)) == claims
            proxy.clear()


def test_claims_that_fill_the_message_to_its_last_byte_are_recorded_and_read(grafana, run, tmp_path):
    """A (5 clusters) saves, B (20 clusters) claims: A's record and B's claim at 16 characters a cluster take exactly
    Grafana's 500 bytes. The save records them so, with no room for the note (it stopped plan and push of both files
    with an internal error, exit 4, when the note's separator was counted as a 501st byte), and later pushes read
    it."""
    alpha = [f"c{i:02d}" + "x" * 12 for i in range(5)]
    alpha[0] += "yyy"
    a, b = team_settings(tmp_path, "a", alpha), team_settings(tmp_path, "b", [f"beta-{i}" for i in range(20)])
    pushed_written(run, a)
    code, stdout, stderr = push_json(run, "--config", b)
    assert code == 0 and TEAM in json.loads(stdout)["written"], stderr
    message = last_message(grafana)
    assert len(message.encode()) == 500 and message.startswith(message.split(" also:")[0])
    assert grafana_recorded_claims(message) == {grafana_claim("shop", [f"beta-{i}" for i in range(20)])}
    writes = len(grafana.writes())
    assert pushed_written(run, b) == [] and pushed_written(run, a) == [] and len(grafana.writes()) == writes


def test_a_persons_save_of_the_same_content_does_not_stop_a_claim_and_the_claim_keeps_the_dashboard(
        grafana, run, tmp_path):
    """A saves; a person saves the team dashboard again unchanged (a restore of the current version, a change
    undone). B's push recorded no claim (the latest version was not gpudash's), exit 0, no note, and A's
    --prune --force, agreeing only to override a person's edit, deleted what B defines. Nothing of the content
    changed: B records its claim beside A's record, and A's --prune --force leaves the dashboard."""
    a, b = team_settings(tmp_path, "a", ["alpha"]), team_settings(tmp_path, "b", ["beta"])
    pushed_written(run, a)
    grafana.edit_in_ui(TEAM, lambda dashboard: None, user="alice")
    assert TEAM in pushed_written(run, b)
    assert grafana_recorded_claims(last_message(grafana)) == {grafana_claim("shop", ["beta"])}
    assert " project:shop clusters:alpha also:" in last_message(grafana)
    assert pushed_written(run, team_settings(tmp_path, "a2", ["alpha"], team=False), "--prune", "--force") == []
    assert TEAM in grafana.state.dashboards


def test_a_split_files_first_push_carries_the_other_halfs_clusters_as_a_claim_so_its_prune_leaves_the_dashboard(
        grafana, run, tmp_path):
    """F (alpha, beta) saved the team dashboard; F is split into A (alpha) and B (beta), both defining it. A's first
    push records A as its publisher and beta's record as a claim (not A's to drop). A stops defining it: its
    --prune leaves it (it deleted it); B's push writes nothing; B stops defining it and withdraws beta's claim with
    --prune; then A's --prune deletes it."""
    pushed_written(run, team_settings(tmp_path, "f", ["alpha", "beta"]))
    assert " clusters:alpha,beta" in last_message(grafana)
    code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "a", ["alpha"]))
    assert code == 0 and TEAM in json.loads(stdout)["written"], stderr
    assert "the clusters on record that these settings do not define (beta) stay on record, each as a claim" in stdout
    assert " project:shop clusters:alpha also:" in last_message(grafana)
    assert grafana_recorded_claims(last_message(grafana)) == {grafana_claim("shop", ["beta"])}
    a2, b = team_settings(tmp_path, "a2", ["alpha"], team=False), team_settings(tmp_path, "b", ["beta"])
    code, stdout, stderr = push_json(run, "--config", a2, "--prune")
    assert code == 0 and TEAM in grafana.state.dashboards and TEAM not in json.loads(stdout)["written"], stderr
    assert "recorded as generated too by other settings files of this project (gpudash-team-a-training)" in stderr
    assert TEAM not in pushed_written(run, b)
    assert pushed_written(run, team_settings(tmp_path, "b2", ["beta"], team=False), "--prune") == [TEAM]
    assert grafana_recorded_claims(last_message(grafana)) == frozenset()
    assert TEAM in pushed_written(run, a2, "--prune") and TEAM not in grafana.state.dashboards


def _forced_over_an_edit(grafana, run, config: str, note: str, record: str) -> None:
    """A person edits the team dashboard shop's alpha saved; `config` pushes --force past the edit, recording
    `record` with alpha carried as shop's claim, and says so (`note`)."""
    grafana.edit_in_ui(TEAM, lambda d: d.update(refresh="10s"))
    code, stdout, stderr = push_json(run, "--config", config, "--force")
    assert code == 0 and TEAM in json.loads(stdout)["written"], stderr
    assert f"{note} these settings do not define (alpha) stay on record, each as a claim" in stdout
    assert record in last_message(grafana)
    assert grafana_recorded_claims(last_message(grafana)) == {grafana_claim("shop", ["alpha"])}


def _no_prune_deletes_it(grafana, run, config: str) -> None:
    for flags in (("--prune",), ("--prune", "--force")):
        code, stdout, stderr = push_json(run, "--config", config, *flags)
        assert code == 0 and TEAM in grafana.state.dashboards and TEAM not in json.loads(stdout)["written"], stderr


def test_a_forced_save_over_another_files_record_carries_that_record_as_a_claim_so_no_prune_deletes_it(
        grafana, run, tmp_path):
    """A (alpha) saved the team dashboard, B (beta) claimed it, a person edited it; B's push --force overwrites the
    edit and records B as publisher with A's record carried as A's claim. B stops defining it: its --prune and
    --prune --force leave it (they deleted it); A's next push writes nothing."""
    a, b = team_settings(tmp_path, "a", ["alpha"]), team_settings(tmp_path, "b", ["beta"])
    pushed_written(run, a)
    pushed_written(run, b)
    _forced_over_an_edit(grafana, run, b, "the clusters on record that", " project:shop clusters:beta also:")
    b2 = team_settings(tmp_path, "b2", ["beta"], team=False)
    _no_prune_deletes_it(grafana, run, b2)
    assert TEAM not in pushed_written(run, a)


def test_a_forced_save_over_another_projects_record_carries_it_as_that_projects_claim_so_no_prune_deletes_it(
        grafana, run, tmp_path):
    """shop (alpha) saved the team dashboard and a person edited it; ml (beta), same folder and uid prefix, takes it
    over with push --force while shop still defines it. The save carries shop's record as shop's claim: ml's
    --prune (and --prune --force) then leaves it (it deleted it, exit 0); once shop stops defining it and withdraws
    the claim with its --prune, ml's --prune deletes it."""
    shop, ml = team_settings(tmp_path, "shop", ["alpha"]), team_settings(tmp_path, "ml", ["beta"], project="ml")
    pushed_written(run, shop)
    _forced_over_an_edit(grafana, run, ml, "the clusters on record of project shop that",
                         " project:ml clusters:beta also:")
    ml2 = team_settings(tmp_path, "ml2", ["beta"], project="ml", team=False)
    _no_prune_deletes_it(grafana, run, ml2)
    assert pushed_written(run, team_settings(tmp_path, "shop2", ["alpha"], team=False), "--prune") == [TEAM]
    assert grafana_recorded_claims(last_message(grafana)) == frozenset()
    assert TEAM in pushed_written(run, ml2, "--prune") and TEAM not in grafana.state.dashboards


def test_a_three_way_splits_first_push_carries_a_claim_per_cluster_so_each_file_withdraws_its_own(
        grafana, run, tmp_path):
    """F (a, b, c) saved the team dashboard; F is split into A (a), B (b), C (c). A's first push carries b and c as
    a claim each (one claim of b,c was withdrawn by neither B nor C and kept the dashboard for good). B and C stop
    defining it and withdraw their own with --prune; then A's --prune deletes it."""
    pushed_written(run, team_settings(tmp_path, "f", ["a", "b", "c"]))
    code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "a", ["a"]))
    assert code == 0 and TEAM in json.loads(stdout)["written"], stderr
    assert "(b c) stay on record, each as a claim that only settings defining that cluster withdraw" in stdout
    assert grafana_recorded_claims(last_message(grafana)) == {grafana_claim("shop", ["b"]), grafana_claim("shop", ["c"])}
    assert TEAM not in pushed_written(run, team_settings(tmp_path, "b", ["b"])) + pushed_written(run, team_settings(tmp_path, "c", ["c"]))
    assert pushed_written(run, team_settings(tmp_path, "b2", ["b"], team=False), "--prune") == [TEAM]
    assert grafana_recorded_claims(last_message(grafana)) == {grafana_claim("shop", ["c"])}
    assert pushed_written(run, team_settings(tmp_path, "c2", ["c"], team=False), "--prune") == [TEAM]
    assert grafana_recorded_claims(last_message(grafana)) == frozenset()
    assert TEAM in pushed_written(run, team_settings(tmp_path, "a2", ["a"], team=False), "--prune")
    assert TEAM not in grafana.state.dashboards


@pytest.mark.parametrize("pushing", ["a", "b"], ids=["an update carrying a claim", "a claim"])
def test_a_dashboard_deleted_between_plan_and_push_is_created_anew_recording_every_file_that_generates_it(
        grafana, run, tmp_path, pushing):
    """A (alpha) and B (beta) of project shop generate the team dashboard; someone deletes it after a push's plan,
    and that push creates it anew. a: A saved it and B claimed it; A's team dashboard changes, and its save (which
    carries B's claim) finds it deleted. b: A saved it; B's first push, which records B's claim beside A's record,
    finds it deleted. The create recorded the pushing file alone: a --prune of that file once it stops defining it
    deleted what the other file still generates (exit 0). Now the create records what the plan's save would have,
    and that --prune leaves it (a: B's claim stands; b: B withdraws its claim, A's record stays)."""
    from tests.support.grafana_push import TEAM_DASHBOARD
    from tests.support.fault_proxy import FaultProxy, Rule

    a, b = team_settings(tmp_path, "a", ["alpha"]), team_settings(tmp_path, "b", ["beta"])
    pushed_written(run, a)
    if pushing == "a":
        pushed_written(run, b)
        (tmp_path / "a" / "dash" / "team_a.py").write_text(TEAM_DASHBOARD.replace("'Util'", "'GPU utilization'"))
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path="^/api/dashboards/db$", method="POST", action="before",
                          callback=lambda: grafana.state.dashboards.pop(TEAM)))
        code, stdout, stderr = push_json(run, "--config", a if pushing == "a" else b, url=proxy.url)
    assert code == 0 and TEAM in json.loads(stdout)["written"], stderr
    assert f"dashboard {TEAM}: deleted in Grafana since the plan (by someone else): created anew" in stderr, stderr
    assert len(grafana.state.dashboards[TEAM]["versions"]) == 1
    assert grafana_recorded_claims(last_message(grafana)) == {grafana_claim("shop", ["beta"])}, last_message(grafana)
    assert " project:shop clusters:alpha also:" in last_message(grafana)
    retired = team_settings(tmp_path, f"{pushing}2", ["alpha" if pushing == "a" else "beta"], team=False)
    code, stdout, stderr = push_json(run, "--config", retired, "--prune", "--force")
    assert code == 0 and TEAM in grafana.state.dashboards, (stdout, stderr)
    if pushing == "a":
        assert json.loads(stdout)["written"] == [], stdout
        assert "recorded as generated too by other settings files of this project (gpudash-team-a-training)" in stderr
    else:
        assert json.loads(stdout)["written"] == [TEAM], stdout  # B's claim withdrawn, A's record kept
        assert grafana_recorded_claims(last_message(grafana)) == frozenset()
        assert " project:shop clusters:alpha" in last_message(grafana)


def test_a_claim_whose_dashboard_is_deleted_between_plan_and_push_is_not_a_failure(grafana, run, tmp_path):
    """B stops defining the team dashboard A saved and B claimed; someone deletes it after B's plan. The withdrawal's
    save carried the plan's id (404): the push failed, exit 3, for a claim on nothing. Found gone (nothing under its
    uid), there is nothing to withdraw: exit 0, not listed as written, a note says so; nothing is created."""
    from tests.support.fault_proxy import FaultProxy, Rule

    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    pushed_written(run, team_settings(tmp_path, "b", ["beta"]))
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path="^/api/dashboards/db$", method="POST", action="before",
                          callback=lambda: grafana.state.dashboards.pop(TEAM)))
        code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "b2", ["beta"], team=False), "--prune",
                                     url=proxy.url)
    assert code == 0 and json.loads(stdout)["written"] == [] and TEAM not in grafana.state.dashboards, (stdout, stderr)
    assert f"dashboard {TEAM}: deleted in Grafana since the plan (by someone else): no claim of these settings left " \
           "to withdraw" in stderr, stderr


@pytest.mark.parametrize("by_uid", [False, True], ids=["legacy save", "kubernetes-style save"])
def test_a_claim_whose_dashboard_is_deleted_before_its_withdrawal_is_not_created_again(grafana, run, tmp_path,
                                                                                        by_uid):
    """As above, the team dashboard deleted after B's plan, here by the time of the read right before the
    withdrawal's save. A Grafana whose save takes an id it has no dashboard with, beside a uid, as a save by the uid
    (the Kubernetes-style save) created it again from the plan's copy, exit 0; the save is not sent: nothing to
    withdraw, a note says so, and it stays deleted."""
    from tests.support.fault_proxy import FaultProxy, Rule

    grafana.unknown_id_saves_by_uid = by_uid
    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    pushed_written(run, team_settings(tmp_path, "b", ["beta"]))
    with FaultProxy(grafana.url) as proxy:
        proxy.inject(Rule(path=f"^/api/dashboards/uid/{TEAM}$", method="GET", action="before", skip=1,
                          callback=lambda: grafana.state.dashboards.pop(TEAM, None)))
        code, stdout, stderr = push_json(run, "--config", team_settings(tmp_path, "b2", ["beta"], team=False), "--prune",
                                     url=proxy.url)
    assert code == 0 and json.loads(stdout)["written"] == [] and TEAM not in grafana.state.dashboards, (stdout, stderr)
    assert f"dashboard {TEAM}: deleted in Grafana since the plan (by someone else): no claim of these settings left " \
           "to withdraw" in stderr, stderr

"""A dashboard's versions answer that does not match the dashboard as read (against the Grafana API test server over
HTTP): no versions for a dashboard that reads (an empty list, a 404), or a newest version behind the one the
dashboard reads at (a cache, read replica or proxy in front of Grafana). Such an answer is not a valid API answer:
the run stops (exit 3) before writing, never reading it as "no gpudash version" or building a claim's save from an
older message (which drops the claims saved since: a later --prune then deletes a dashboard another file defines)."""

from __future__ import annotations

import json

import pytest

from generator.ownership import grafana_claim, grafana_recorded_claims
from tests.support.grafana_push import (TEAM, grafana, last_message, push_json,  # noqa: F401 (fixtures)
                                        pushed_written, run, team_settings)

BETA, GAMMA = grafana_claim("shop", ["beta"]), grafana_claim("shop", ["gamma"])
INVALID = "Grafana's answer is not a valid API answer: the dashboard reads at version"


def _answering(grafana, how: str):
    """The test server's versions route answering for the team dashboard `how`: one version behind it, with no
    version, or 404."""
    real = grafana._versions

    def versions(uid, query):
        status, body, path = real(uid, query)
        if uid != TEAM or status != 200:
            return status, body, path
        if how == "behind":
            older = list(reversed(grafana.state.dashboards[uid]["versions"][:-1]))
            return 200, older[:int(query.get("limit", ["0"])[0]) or len(older)], path
        if how == "no message":
            return 200, [{k: v for k, v in entry.items() if k != "message"} for entry in body], path
        return (200, [], path) if how == "empty" else (404, {"message": "Dashboard not found"}, path)

    grafana._versions = versions
    return real


def _refused(grafana, run, config, *flags, invalid=INVALID):
    before = json.dumps(grafana.state.dashboards, sort_keys=True)
    code, _, stderr = push_json(run, "--config", config, *flags)
    assert code == 3 and invalid in stderr and "nothing was published" in stderr, stderr
    assert json.dumps(grafana.state.dashboards, sort_keys=True) == before  # nothing written
    return stderr


def test_a_withdrawal_on_a_versions_answer_behind_the_dashboard_is_refused_and_keeps_the_other_claims(
        grafana, run, tmp_path):
    """A (alpha) saves, C (gamma) and B (beta) claim. C stops defining the team dashboard and pushes --prune while
    the versions answer is one version behind (B's claim not in it): it withdrew its claim with a save built from the
    older message, posted with the current version (accepted), and B's claim was gone; A's --prune then deleted what
    B defines. Now C's push is refused; with the answers right again its withdrawal keeps B's claim."""
    a, c, b = (team_settings(tmp_path, n, [cl]) for n, cl in (("a", "alpha"), ("c", "gamma"), ("b", "beta")))
    for config in (a, c, b):
        pushed_written(run, config)
    assert grafana_recorded_claims(last_message(grafana)) == {BETA, GAMMA}
    c2 = team_settings(tmp_path, "c2", ["gamma"], team=False)
    real = _answering(grafana, "behind")
    _refused(grafana, run, c2, "--prune")
    grafana._versions = real
    assert pushed_written(run, c2, "--prune") == [TEAM]
    assert grafana_recorded_claims(last_message(grafana)) == {BETA}
    assert pushed_written(run, team_settings(tmp_path, "a2", ["alpha"], team=False), "--prune") == []
    assert TEAM in grafana.state.dashboards


def test_a_claim_on_a_versions_answer_behind_the_dashboard_is_refused_and_keeps_the_other_claims(
        grafana, run, tmp_path):
    """A saves, C (gamma) claims; B (beta) pushes while the versions answer is one version behind (C's claim not in
    it): B's claim save was built from A's bare message and dropped C's claim. Now refused; then both claims."""
    a, c, b = (team_settings(tmp_path, n, [cl]) for n, cl in (("a", "alpha"), ("c", "gamma"), ("b", "beta")))
    pushed_written(run, a)
    pushed_written(run, c)
    real = _answering(grafana, "behind")
    _refused(grafana, run, b)
    grafana._versions = real
    assert TEAM in pushed_written(run, b)
    assert grafana_recorded_claims(last_message(grafana)) == {BETA, GAMMA}


@pytest.mark.parametrize("how", ["empty", "404", "no message"])
def test_no_versions_for_a_dashboard_that_reads_is_not_read_as_no_gpudash_version(grafana, run, tmp_path, how):
    """A saves; B pushes while Grafana (or a proxy) answers the team dashboard's versions with [] or 404 though the
    dashboard reads (200), or with entries without their message: B read that as "not saved by gpudash", recorded
    no claim and exited 0, and A's --prune deleted what B defines. Now B's push and A's --prune are refused (exit 3,
    nothing written); with the answers right again B claims it and A's --prune leaves it."""
    a, b = team_settings(tmp_path, "a", ["alpha"]), team_settings(tmp_path, "b", ["beta"])
    a2 = team_settings(tmp_path, "a2", ["alpha"], team=False)
    pushed_written(run, a)
    real = _answering(grafana, how)
    invalid = "each with a text message and a version number" if how == "no message" else INVALID
    stderr = _refused(grafana, run, b, invalid=invalid)
    assert how == "no message" or "Grafana lists no version of it" in stderr, stderr
    _refused(grafana, run, a2, "--prune", "--force", invalid=invalid)
    grafana._versions = real
    assert TEAM in pushed_written(run, b)
    assert grafana_recorded_claims(last_message(grafana)) == {BETA}
    pushed_written(run, a2, "--prune")
    assert TEAM in grafana.state.dashboards

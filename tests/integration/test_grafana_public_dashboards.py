"""A retired Grafana dashboard a person shared externally (a public dashboard): Grafana's delete of the dashboard
deletes its public dashboard too, and no version of the dashboard records one, so a prune must see it."""

from __future__ import annotations

import json

from tests.support.grafana_push import (TEAM, forced_prune, grafana, push_json,  # noqa: F401 (fixtures)
                                        retired_team_dashboard, run, team_saved)
from tests.support.grafana_server import ADMIN


def test_a_retired_dashboard_a_person_shared_publicly_is_not_pruned_without_force(grafana, run, tmp_path):
    """Alice shares the retired team dashboard externally (a public dashboard: the link on the NOC's wall screen).
    Sharing adds no version and changes nothing of the dashboard's content, and Grafana's delete of the dashboard
    deletes its public dashboard: a --prune deleted both, exit 0, nothing said, and the wall screen's link died. It is
    now refused without --force, saying so; --force deletes it."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.share_publicly(TEAM)
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert TEAM in grafana.state.dashboards and TEAM in grafana.state.public, (code, stdout, stderr)
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM], stdout
    assert "it is shared externally (public dashboard pd1, by user id 7)" in stdout, stdout
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--force")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and grafana.state.public == {}, stderr


def test_a_dashboard_shared_publicly_between_the_plan_and_the_delete_is_not_deleted_even_forced(grafana):
    """Bob shares the retired dashboard externally after the plan (which saw no public dashboard) and before the push:
    --force agreed to delete what the plan showed, not his share since; the look before the delete refuses it."""
    from generator.clients.grafana import GrafanaClient
    from generator.targets import grafana_sync

    folder = {"uid": "gpudash", "title": "GPU monitoring"}
    client = GrafanaClient(grafana.url, token=ADMIN)
    team_saved(client, folder, {"uid": TEAM, "title": "Team A training", "tags": ["gpudash-managed"]})
    changes = grafana_sync.plan(client, {}, folder, uid_prefix="gpudash")
    assert [(c.name, c.edited) for c in changes if c.action == "delete"] == [(TEAM, False)]
    grafana.share_publicly(TEAM, user_id=9)
    outcomes = forced_prune(client, changes, folder)
    assert TEAM in grafana.state.dashboards and TEAM in grafana.state.public
    (failed,) = [o for o in outcomes if o.error]
    assert "shared externally since the plan (public dashboard pd1, by user id 9); not deleted" in failed.error, \
        failed.error


def test_a_grafana_without_the_public_dashboards_api_needs_force_to_prune_a_dashboard(grafana, run, tmp_path):
    """A route that answers 404 without Grafana's "no public dashboard" (messageId publicdashboards.notFound): a
    Grafana without the API, or a proxy. Nothing shows no public dashboard goes with the dashboard: --force needed."""
    pruning, _ = retired_team_dashboard(grafana, run, tmp_path)
    grafana.state.public_api = False
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune")
    assert code == 1 and json.loads(stdout)["refused"] == [TEAM] and TEAM in grafana.state.dashboards, stderr
    assert "whether it is shared externally (a public dashboard, which Grafana deletes with it) could not be read" \
        in stdout, stdout
    code, stdout, stderr = push_json(run, "--config", pruning, "--prune", "--force")
    assert code == 0 and json.loads(stdout)["written"] == [TEAM] and TEAM not in grafana.state.dashboards, stderr

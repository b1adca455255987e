"""An upgrade from panel ids that were places in the layout to ids made from each panel's title, against the Grafana API
test server: every panel of gpudash's dashboards gets another id once, which push writes over dashboards gpudash saved
and nobody edited since, and refuses on one a person edited."""

from __future__ import annotations

import json

from generator.artifacts import grafana_dashboards
from generator.project import load_project
from tests.support.grafana_push import grafana  # noqa: F401
from tests.support.grafana_server import ADMIN

UIDS = ["gpudash-all-metrics", "gpudash-by-pod", "gpudash-health", "gpudash-overview"]


def _ids(model) -> list[tuple[str, int]]:
    return [(p["title"], p["id"]) for p in model["panels"]]


def test_the_renumbering_of_an_upgrade_is_pushed_over_gpudashs_dashboards_and_a_hand_edited_one_is_refused(
        grafana, cli, monkeypatch):  # noqa: F811
    """Published by a gpudash whose panel ids were their places (1, 2, 3, ... in the layout's order), then pushed by
    this one: plan lists each unedited dashboard as an update naming the ids that change, and what people tied to an
    old id (annotations made on a panel, an alert rule linked to it) with the id to write; push overwrites them (no
    edit is read into gpudash's own renumbering: the live dashboards still hash to what gpudash saved), and the one a
    person edited since is refused as before, left as they saved it."""
    from generator.render import grafana as render

    env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN}
    # what a release before these ids wrote: each panel and row numbered by its place in the layout
    monkeypatch.setattr(render, "panel_ids", lambda items: list(range(1, len(list(items)) + 1)))
    code, stdout, stderr = cli("push", "--skip-verify", "--output", "json", env=env)
    assert code == 0, stderr
    assert sorted(json.loads(stdout)["written"]) == ["gpudash", *UIDS]
    old = {uid: _ids(grafana.state.dashboards[uid]["dashboard"]) for uid in UIDS}
    assert all([number for _, number in ids] == list(range(1, len(ids) + 1)) for ids in old.values())
    monkeypatch.undo()
    grafana.edit_in_ui("gpudash-health", lambda d: d["panels"][1].update(title="XID errors (alice's)"))
    edited = json.loads(json.dumps(grafana.state.dashboards["gpudash-health"]["dashboard"]))
    # people's work tied to the old ids: two annotations on 'GPU utilization by pod' (id 2), a rule linked to it
    for text in ("training run 41 started", "driver upgraded"):
        grafana.annotate("gpudash-by-pod", text, panel_id=2)
    rule = grafana.alert_rule("Pods idle", "gpudash-by-pod", panel_id=2)
    generated = {d.uid: _ids(d.model) for d in grafana_dashboards(load_project())}
    new_id = dict(generated["gpudash-by-pod"])["GPU utilization by pod"]

    code, stdout, _ = cli("plan", "--no-cloudwatch", env=env)
    assert code == 1
    for uid in ("gpudash-overview", "gpudash-by-pod", "gpudash-all-metrics"):
        assert f"update    grafana dashboard {uid}" in stdout, stdout
    charts = len([p for p in grafana.state.dashboards["gpudash-by-pod"]["dashboard"]["panels"] if p["type"] != "row"])
    assert f"panel ids: {charts} of {charts} panel(s) get another id ('GPU utilization by pod' 2 → {new_id}, " \
        in stdout, stdout
    assert (f"2 annotation(s) by alice made on panel 'GPU utilization by pod' (id 2, which becomes {new_id}): they "
            f"keep id 2, and after the save are drawn on no panel") in stdout, stdout
    assert (f"alert rule 'Pods idle' ({rule}) is linked by its __panelId__ to panel 'GPU utilization by pod' (id 2, "
            f"which becomes {new_id}): after the save it links to no panel; write {new_id} in its __panelId__") \
        in stdout, stdout
    assert "drift     grafana dashboard gpudash-health" in stdout

    code, stdout, stderr = cli("push", "--skip-verify", "--output", "json", env=env)
    report = json.loads(stdout)
    assert code == 1 and "refused 1 object" in stderr, stderr
    assert report["refused"] == ["gpudash-health"]
    assert sorted(report["written"]) == ["gpudash-all-metrics", "gpudash-by-pod", "gpudash-overview"]
    for uid in ("gpudash-overview", "gpudash-by-pod", "gpudash-all-metrics"):
        assert _ids(grafana.state.dashboards[uid]["dashboard"]) == generated[uid] != old[uid]
    assert grafana.state.dashboards["gpudash-health"]["dashboard"] == edited  # alice's edit, and the old ids, kept

    code, stdout, stderr = cli("push", "--skip-verify", "--output", "json", env=env)
    assert code == 1 and json.loads(stdout)["written"] == [] and json.loads(stdout)["refused"] == ["gpudash-health"]


def test_a_save_names_the_panels_whose_id_it_moves_and_what_then_holds_each_old_id():
    """A panel renamed gets another id; one dropped has none; an old id another panel takes after the save draws what
    was tied to it there (Grafana draws an annotation on the panel of its id). Titles that repeat are matched in
    their order; a panel inside a collapsed row is a panel."""
    from generator.targets.grafana_panel_ties import moved

    live = {"panels": [{"type": "timeseries", "title": "Power", "id": 7}, {"type": "timeseries", "title": "Util", "id": 8},
                       {"type": "row", "title": "More", "id": 9, "collapsed": True, "panels": [
                           {"type": "stat", "title": "Util", "id": 10}, {"type": "stat", "title": "Clock", "id": 11}]}]}
    desired = {"panels": [{"type": "timeseries", "title": "Power draw", "id": 8},
                          {"type": "timeseries", "title": "Util", "id": 12}, {"type": "row", "title": "More", "id": 9},
                          {"type": "stat", "title": "Util", "id": 10}]}
    assert moved(live, desired) == {7: ("Power", None, None), 8: ("Util", 12, "Power draw"),
                                    11: ("Clock", None, None)}

"""An upgrade from panel ids that were places in the layout to ids made from each panel's title, against the Grafana API
test server: every panel of gpudash's dashboards gets another id once, which push writes over dashboards gpudash saved
and nobody edited since, and refuses on one a person edited."""

from __future__ import annotations

import json

from generator.artifacts import grafana_dashboards
from generator.project import load_project
from tests.support.grafana_push import grafana  # noqa: F401
from tests.support.grafana_server import ADMIN, Fault

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

    del grafana.state.log[:]
    code, stdout, _ = cli("plan", "--no-cloudwatch", env=env)
    assert code == 1
    # the alert rules read once for the plan; the annotations once per dashboard whose ids move (all 4)
    asked = [path for _, path in grafana.state.log]
    assert asked.count("/api/v1/provisioning/alert-rules") == 1 and asked.count("/api/annotations") == 4, asked
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


def _published_by_place(grafana, cli, monkeypatch, env) -> None:  # noqa: F811
    """gpudash's dashboards as a release that numbered panels by their place (1, 2, 3, ...) pushed them."""
    from generator.render import grafana as render

    monkeypatch.setattr(render, "panel_ids", lambda items: list(range(1, len(list(items)) + 1)))
    code, _, stderr = cli("push", "--skip-verify", "--output", "json", env=env)
    assert code == 0, stderr
    monkeypatch.undo()


def test_a_plan_whose_saves_move_no_panel_id_reads_no_annotations_and_no_alert_rules(grafana, cli):  # noqa: F811
    """The reads of what people tied to panel ids are made only where a save moves some panel's id: a plan of updates
    that keep every id (a person's edit of a description) asks Grafana for no annotation and no alert rule."""
    env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN}
    code, _, stderr = cli("push", "--skip-verify", "--output", "json", env=env)
    assert code == 0, stderr
    for uid in UIDS:
        grafana.edit_in_ui(uid, lambda d: d.update(description="ours"))
    grafana.annotate("gpudash-by-pod", "training run 41 started", panel_id=907277536)
    grafana.alert_rule("Pods idle", "gpudash-by-pod", panel_id=907277536)
    del grafana.state.log[:]

    code, stdout, _ = cli("plan", "--no-cloudwatch", env=env)
    assert code == 1 and stdout.count("drift     grafana dashboard") == len(UIDS), stdout
    asked = [path for _, path in grafana.state.log]
    assert not [path for path in asked if "annotations" in path or "alert-rules" in path], asked
    assert "panel ids:" not in stdout and "annotation(s)" not in stdout and "alert rule" not in stdout, stdout


def test_annotations_past_the_newest_read_are_said_not_read_never_none(grafana, cli, monkeypatch):  # noqa: F811
    """Grafana's annotations API answers the newest annotations up to a limit: a person's annotation on a panel whose
    id the save moves, older than the 100 newest of its dashboard (a CI job annotating every run on another panel),
    is not in the answer. plan said nothing of it, as if the panel had none, and counted the newest as all; it says
    the older ones were not read, and counts what it read as a floor."""
    env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN}
    _published_by_place(grafana, cli, monkeypatch, env)
    grafana.annotate("gpudash-by-pod", "driver upgraded", user="bob", panel_id=2)
    for run in range(101):
        grafana.annotate("gpudash-by-pod", f"training run {run} started", user="ci", panel_id=3)

    code, stdout, _ = cli("plan", "--no-cloudwatch", env=env)
    assert code == 1 and "update    grafana dashboard gpudash-by-pod" in stdout, stdout
    assert "at least 101 annotation(s) by ci made on panel 'Tensor core activity by pod' (id 3" in stdout, stdout
    assert ("annotations of gpudash-by-pod older than the newest 101 were not read: those made on the panels whose id "
            "changes are not all named") in stdout, stdout


def test_an_alert_rules_panel_id_is_read_as_grafana_reads_it(grafana, cli, monkeypatch):  # noqa: F811
    """Grafana reads a rule's __panelId__ with Go's strconv.ParseInt (base 10, a sign allowed): `+2` links the rule to
    panel 2, and plan names it; `²`, which Python's str.isdigit() takes and int() refuses, is no panel id (plan stopped
    with an internal error on it)."""
    env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN}
    _published_by_place(grafana, cli, monkeypatch, env)
    odd = grafana.alert_rule("Odd link", "gpudash-by-pod", panel_id=2)
    signed = grafana.alert_rule("Signed link", "gpudash-by-pod", panel_id=2)
    grafana.state.alert_rules[0]["annotations"]["__panelId__"] = "\u00b2"
    grafana.state.alert_rules[1]["annotations"]["__panelId__"] = "+2"
    new_id = dict(_ids(next(d.model for d in grafana_dashboards(load_project()) if d.uid == "gpudash-by-pod")))[
        "GPU utilization by pod"]

    code, stdout, stderr = cli("plan", "--no-cloudwatch", env=env)
    assert code == 1 and "internal error" not in stderr, stderr
    assert odd not in stdout, stdout
    assert (f"alert rule 'Signed link' ({signed}) is linked by its __panelId__ to panel 'GPU utilization by pod' "
            f"(id 2, which becomes {new_id}): after the save it links to no panel; write {new_id} in its __panelId__") \
        in stdout, stdout


def test_reads_refused_or_not_valid_answers_are_said_not_read(grafana, cli, monkeypatch):  # noqa: F811
    """Where the annotations or the alert rules cannot be read (a refusal, an answer that is not a valid API answer),
    plan says so of the panels whose id changes, never that nothing is tied to them, and prints no credential."""
    env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN}
    _published_by_place(grafana, cli, monkeypatch, env)
    grafana.annotate("gpudash-by-pod", "driver upgraded", panel_id=2)
    grafana.alert_rule("Pods idle", "gpudash-by-pod", panel_id=2)
    grafana.inject(Fault(r"/api/annotations", status=403, times=99))
    grafana.inject(Fault(r"/api/v1/provisioning/alert-rules", status=200, times=99))  # {"message": ...}: no list

    code, stdout, stderr = cli("plan", "--no-cloudwatch", env=env)
    assert code == 1 and "internal error" not in stderr, stderr
    assert stdout.count("annotations made on the panels whose id changes were not read: they could not be read") \
        == 4, stdout
    assert stdout.count("alert rules linked to the panels whose id changes were not read: they could not be read") \
        == 4, stdout
    assert "annotation(s) by" not in stdout and "is linked by its __panelId__" not in stdout, stdout
    assert ADMIN not in stdout + stderr


def test_a_live_dashboard_of_an_odd_shape_is_planned_not_a_crash(grafana, cli):  # noqa: F811
    """The live dashboard is whatever Grafana holds (a hand-made import, another tool's JSON): a row whose `panels` is
    no list, a panel whose title is no text. plan stopped with an internal error where it looked for the panels whose
    id a save moves; it now plans the dashboard (an edit: drift) and reads such panels as none."""
    env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN}
    code, _, stderr = cli("push", "--skip-verify", "--output", "json", env=env)
    assert code == 0, stderr

    def odd(dashboard):
        dashboard["panels"][0]["panels"] = 5
        dashboard["panels"][1]["title"] = ["GPU utilization by pod"]
    grafana.edit_in_ui("gpudash-by-pod", odd)

    code, stdout, stderr = cli("plan", "--no-cloudwatch", env=env)
    assert code == 1 and "internal error" not in stderr, stderr
    assert "drift     grafana dashboard gpudash-by-pod" in stdout, stdout


_GRAFANALIB_NO_IDS = '''
from grafanalib.core import Dashboard, Row, Target, TimeSeries


def ts(title):
    return TimeSeries(title=title, targets=[Target(expr="avg(DCGM_FI_DEV_GPU_UTIL)", refId="A")])

dashboard = Dashboard(title="Legacy board", uid="legacy-board", rows=[
    Row(title="Compute", showTitle=True, panels=[ts("Util"), ts("Power")]),
])
'''


def test_panels_published_without_an_id_are_said_unmatched_not_tied_to_nothing(grafana, cli, project_dir,
                                                                             monkeypatch):  # noqa: F811
    """A grafanalib dashboard whose panels set no id was published with `"id": null`: Grafana numbers such panels
    when it loads the dashboard, by place, and annotations made on them carry that number. The save that gives them
    ids from their titles moves what was tied to them, and plan, matching live ids alone, said nothing of it (the
    annotation on 'Util', Grafana's panel 2); it now says the panels hold no id and what was tied to them was not
    matched. A panel whose id repeats an earlier one's is numbered by Grafana likewise."""
    from generator import grafana_inputs

    env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN}
    config = project_dir(dashboards={"legacy.py": _GRAFANALIB_NO_IDS})

    def unnumbered(model):  # what gpudash published before: no id on a grafanalib panel that sets none
        for panel in model["panels"]:
            panel["id"] = None
    monkeypatch.setattr(grafana_inputs, "given_ids", unnumbered)
    code, _, stderr = cli("push", "--config", str(config), "--skip-verify", "--output", "json", env=env)
    assert code == 0, stderr
    monkeypatch.undo()
    assert [p["id"] for p in grafana.state.dashboards["legacy-board"]["dashboard"]["panels"]] == [None, None, None]
    grafana.annotate("legacy-board", "driver upgraded", panel_id=2)  # 'Util', as Grafana numbered it at load

    code, stdout, stderr = cli("plan", "--config", str(config), "--no-cloudwatch", env=env)
    assert code == 1 and "update    grafana dashboard legacy-board" in stdout, stdout + stderr
    assert ("2 panel(s) of legacy-board hold no id of their own in Grafana ('Util', 'Power'): Grafana numbers them "
            "by place when it loads the dashboard, so the annotations made on them and the alert rules linked to them "
            "were not matched") in stdout, stdout


def test_the_panels_grafana_numbers_at_load_are_those_without_a_whole_number_id_of_their_own():
    from generator.targets.grafana_panel_ties import unnumbered

    live = {"panels": [{"type": "timeseries", "title": "A", "id": 3}, {"type": "timeseries", "title": "B", "id": 3},
                       {"type": "timeseries", "title": "C", "id": None}, {"type": "row", "title": "R", "panels": [
                           {"type": "stat", "title": "D", "id": "4"}, {"type": "stat", "title": "E", "id": 5}]}]}
    assert unnumbered(live) == ["B", "C", "D"]

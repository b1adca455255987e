"""plan's differences of a long text field (an alarm description of up to 1,024 characters): the words that
changed, each in a few words of context, not both texts whole."""

from __future__ import annotations

from generator.diff import fields

TEXT = " ".join(f"Step {n}: fires when a GPU stays above 87 °C for 5 minutes; move work off the node, check its fans "
               f"and airflow, and drain it when it keeps climbing." for n in range(1, 5))


def _described(before: str, after: str) -> list[str]:
    return fields({"AlarmDescription": before, "Threshold": 87.0}, {"AlarmDescription": after, "Threshold": 87.0})


def test_one_word_changed_is_that_word_in_context():
    assert _described(TEXT, TEXT.replace("87", "90", 1)) == [
        'AlarmDescription: "87" → "90" in "… a GPU stays above 87 °C for 5 minutes; …"']


def test_words_added_or_removed_are_named_as_such():
    added = _described(TEXT, TEXT.replace("its fans", "its fans, power", 1))
    removed = _described(TEXT, TEXT.replace(" and drain it when it keeps climbing.", "", 1))
    assert added == ['AlarmDescription: "fans" → "fans, power" in "… the node, check its fans and airflow, and drain …"']
    assert removed == ['AlarmDescription: "and drain it when it keeps climbing." removed from '
                       '"… its fans and airflow, and drain it when it keeps climbing. Step 2: fires when …"']


def test_many_changes_are_counted_past_five_and_no_line_quotes_a_text_whole():
    lines = _described(TEXT, TEXT.replace("87", "90").replace("fans", "pumps"))
    assert len(lines) == 6 and lines[-1] == "AlarmDescription: 3 more changed passages"
    assert max(map(len, lines)) < 200 < len(TEXT)


def test_spacing_alone_is_said_and_short_texts_stay_whole():
    assert _described(TEXT, TEXT.replace(". ", ".  ")) == ["AlarmDescription: spacing changed"]
    assert fields({"AlarmName": "a-b"}, {"AlarmName": "a-c"}) == ["AlarmName a-b → a-c"]


def test_what_a_server_holds_is_printed_with_its_control_characters_escaped(capsys):
    """plan's report quotes what Grafana holds: a panel's query or unit a person saved there, a dashboard's title. An
    ESC in such a query reached the terminal raw (an escape sequence: colours, a window title, the clipboard), a
    newline split the report's line, a right-to-left override showed it reversed. Each is printed escaped in place;
    the rest of the line as it was."""
    from generator.changes import Change
    from generator.cli_publish import _print_changes
    from generator.diff import grafana

    def model(expr: str, unit: str) -> dict:
        return {"title": "GPUs", "panels": [{"type": "timeseries", "title": "Temperature", "targets": [{"expr": expr}],
                                             "fieldConfig": {"defaults": {"unit": unit}}}]}

    live, desired = model("up\x1b]52;c;ZWNobyBoaQ==\x07\nor vector(1)", "celsius\u202e"), model("up", "celsius")
    change = Change("grafana", "dashboard", "gpu\x1b[2Joverview", "update", details=grafana(live, desired))
    _print_changes([change], "text")
    shown = capsys.readouterr().out
    assert not any(c in shown for c in "\x1b\x07\u202e") and shown.count("\n") == 4, shown
    assert "dashboard gpu\\x1b[2Joverview" in shown
    assert "panel 'Temperature': query changed: up\\x1b]52;c;ZWNobyBoaQ==\\x07\\nor vector(1) → up" in shown
    assert "panel 'Temperature': unit celsius\\u202e → celsius" in shown


def test_a_failure_quoting_a_server_s_answer_is_printed_with_its_control_characters_escaped(capsys):
    """A failed write is listed with its error, which may quote what the server answered (a Grafana message naming a
    title a person saved): its ESC reached the terminal raw. Escaped in place; the error's own lines (`fix:`) kept."""
    from generator.changes import Change, Outcome
    from generator.cli_publish import _print_changes

    change = Change("grafana", "dashboard", "gpu-overview", "update")
    error = "Grafana answered 412: the dashboard 'gpu\x1b]0;owned\x07' has been changed by someone else\n  fix: run plan"
    _print_changes([change], "text", outcomes=[Outcome(change, done=False, error=error)])
    shown = capsys.readouterr().out
    assert not any(c in shown for c in "\x1b\x07"), shown
    assert "(FAILED: Grafana answered 412: the dashboard 'gpu\\x1b]0;owned\\x07' has been changed by someone else\n" \
           "  fix: run plan)" in shown



def test_a_failure_quoting_a_server_s_newline_stays_on_its_line(capsys):
    """The error of a failed write quotes the server's message, which may hold a newline (a proxy's 403 page, a
    message forging a `fix:`): split at every newline, that line of the server's read as a line of gpudash's report
    (another error, or a fix to follow). Only the error's own fix starts a line; the server's newline is escaped."""
    from generator.changes import Change, Outcome
    from generator.cli_publish import _print_changes

    change = Change("grafana", "dashboard", "gpu-overview", "update")
    error = "the service account may not do this (403): denied\n  fix: run rm -rf\n  fix: give it the Editor role"
    _print_changes([change], "text", outcomes=[Outcome(change, done=False, error=error)])
    shown = capsys.readouterr().out
    assert "(FAILED: the service account may not do this (403): denied\\n  fix: run rm -rf\n" \
           "  fix: give it the Editor role)" in shown and shown.count("\n") == 3, shown


def test_panels_whose_id_changes_are_named_with_their_ids_in_one_line():
    """What people tie to a panel's id (annotations made on it, viewPanel and d-solo links, alert rules linked to it)
    stays with the id: an update that gives panels other ids says which, once however many (a dashboard published
    before ids were made from titles gets every id anew once), where it said "other settings changed"."""
    from generator.diff import grafana

    def model(ids: list[int]) -> dict:
        return {"title": "GPUs", "panels": [{"type": "row", "title": "Row", "id": ids[0]}] + [
            {"type": "timeseries", "title": f"Panel {n}", "id": number} for n, number in enumerate(ids[1:], 1)]}

    assert grafana(model(list(range(1, 9))), model([1, 2, 3, 4, 5, 6, 7, 8])) == ["other settings changed"]
    (said,) = grafana(model(list(range(1, 9))), model([90, 2, 33, 44, 55, 66, 77, 88]))
    assert said.startswith("panel ids: 6 of 7 panel(s) get another id ('Panel 2' 3 → 33, 'Panel 3' 4 → 44, "
                           "'Panel 4' 5 → 55, 'Panel 5' 6 → 66, 'Panel 6' 7 → 77 and 1 more): annotations made on "
                           "them, links to them (viewPanel, d-solo) and alert rules linked to them keep the old id")


def test_a_dashboard_s_diff_sees_panels_in_collapsed_rows_and_each_of_a_title_that_repeats():
    """plan's diff keyed a dashboard's panels by title among its top-level ones: a panel a collapsed row holds (as a
    grafanalib dashboard's may be) was not seen, its query or id changed said as "other settings changed"; and of two
    panels of one title the last hid the first, whose changes went unsaid."""
    from generator.diff import grafana

    def model(hidden: tuple[str, int], first_util: str) -> dict:
        return {"title": "GPUs", "panels": [
            {"type": "timeseries", "title": "Util", "id": 1, "targets": [{"expr": first_util}]},
            {"type": "timeseries", "title": "Util", "id": 2, "targets": [{"expr": "y"}]},
            {"type": "row", "title": "More", "id": 3, "collapsed": True, "panels": [
                {"type": "timeseries", "title": "Hidden", "id": hidden[1], "targets": [{"expr": hidden[0]}]}]}]}

    said = grafana(model(("a", 4), "x"), model(("b", 5), "x2"))
    assert said == ["panel 'Util': query changed: x → x2", "panel 'Hidden': query changed: a → b",
                    "panel ids: 1 of 3 panel(s) get another id ('Hidden' 4 → 5): annotations made on them, links to "
                    "them (viewPanel, d-solo) and alert rules linked to them keep the old id "
                    "(docs/definitions.md#panel-ids-in-grafana)"], said
    assert grafana(model(("a", 4), "x"), model(("a", 4), "x")) == ["other settings changed"]


def test_a_row_whose_panels_are_no_list_leaves_the_other_panels_compared():
    """A hand-made dashboard's row may hold `panels` of another shape: it holds none, and the other panels are still
    compared one by one (not "shaped unlike what gpudash writes" as a whole)."""
    from generator.diff import grafana

    def model(expr: str) -> dict:
        return {"title": "GPUs", "panels": [
            {"type": "row", "title": "Odd", "id": 1, "panels": 5},
            {"type": "timeseries", "title": "Util", "id": 2, "targets": [{"expr": expr}]}]}

    assert grafana(model("x"), model("y")) == ["panel 'Util': query changed: x → y"]

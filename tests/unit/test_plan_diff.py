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

"""Grafana version messages with claims: they fit the 500 bytes Grafana takes, read back as written, and a note is
never read as a claim."""

from __future__ import annotations

import pytest

from generator.ownership import (GarbledClaims, grafana_claim, grafana_message, grafana_recorded_claims,
                                 grafana_recorded_publisher, grafana_recorded_publisher_text)

DASHBOARD = {"uid": "x", "title": "t", "tags": ["gpudash-managed"], "panels": []}


def test_the_longest_record_the_settings_allow_still_leaves_room_for_claims_or_their_mark():
    """Project of 64 characters, uid prefix of 16, three clusters of 99 (a record of 299 characters) and a long
    commit subject: one claim of one cluster is recorded with 16 characters a cluster, two of two clusters with 8, ten
    of 20 clusters as `also:*`."""
    project, prefix = "p" * 64, "u" * 16
    clusters = tuple(f"{i:02d}" + "c" * 97 for i in range(3))
    note = "abc1234 " + "ü" * 300
    one = {grafana_claim(project, ["beta"])}
    two = {grafana_claim(project, [f"team-{i}-a", f"team-{i}-b"]) for i in range(2)}
    many = {grafana_claim(project, [f"team-{i}-{j}" for j in range(20)]) for i in range(10)}
    for claims, expected in ((one, one), (two, {frozenset(d[:8] for d in c) for c in two}),
                             (many, {frozenset("*")})):
        message = grafana_message(DASHBOARD, note, prefix, (project, clusters), claims)
        assert len(message.encode()) <= 500
        assert grafana_recorded_claims(message) == expected
        assert {len(digest) for claim in grafana_recorded_claims(message) for digest in claim} == {
            16 if claims is one else 8 if claims is two else 1}
        assert grafana_recorded_publisher(message) == (project, frozenset(clusters))


def test_a_record_kept_word_for_word_and_its_claims_read_back():
    message = grafana_message(DASHBOARD, "abc1234 subject", "gpudash", ("shop", ("b", "a")),
                              {grafana_claim("shop", ["c"]), grafana_claim("shop", ["d", "e"])})
    text = grafana_recorded_publisher_text(message)
    assert text == "project:shop clusters:a,b"
    again = grafana_message(DASHBOARD, "def5678 other", "gpudash", text, grafana_recorded_claims(message))
    assert again.removesuffix("def5678 other") == message.removesuffix("abc1234 subject")


@pytest.mark.parametrize("note", ["also:beta", "also:abcdefgh", "also:*"])
def test_a_note_that_starts_like_a_claim_is_not_read_as_one(note):
    message = grafana_message(DASHBOARD, note, "gpudash", ("shop", ("a",)))
    assert grafana_recorded_claims(message) == frozenset()


def test_claims_without_a_record_to_follow_are_refused_and_a_garbled_claim_is_no_answer():
    with pytest.raises(ValueError):
        grafana_message(DASHBOARD, "", "gpudash", None, {grafana_claim("shop", ["c"])})
    message = grafana_message(DASHBOARD, "", "gpudash", ("shop", ("a",)))
    with pytest.raises(GarbledClaims):
        grafana_recorded_claims(message + " also:abc")

"""Which of a retired dashboard's permissions and playlist items are a person's, which Grafana's delete takes with it."""

from __future__ import annotations

from generator.targets.grafana_around import granted, picking


def _entry(permission: int, inherited: bool = False, **holder) -> dict:
    return {"permission": permission, "inherited": inherited, **holder}


def test_only_the_creators_admin_and_the_folders_entries_are_not_a_persons():
    entries = [_entry(4, userId=3, userLogin="sa-gpudash"), _entry(2, True, role="Editor"),
               _entry(4, True, teamId=5, team="platform")]
    assert granted(entries, "sa-gpudash") == []
    # the creator given less than Admin, another account's Admin, a team's or a role's own entry: a person's
    more = [_entry(1, userId=3, userLogin="sa-gpudash"), _entry(4, userId=9, userLogin="bob"),
            _entry(4, teamId=6, team="noc"), _entry(1, role="Viewer")]
    assert granted(more, "sa-gpudash") == ["role Viewer: View", "team noc: Admin", "user bob: Admin",
                                            "user sa-gpudash: View"]


def test_without_a_known_creator_no_admin_entry_is_taken_for_grafanas_own():
    """A dashboard read without meta.createdBy: nothing shows whose Admin entry Grafana gave at its creation."""
    assert granted([_entry(4, userId=3, userLogin="sa-gpudash")], None) == ["user sa-gpudash: Admin"]
    assert granted([_entry(4, teamId=3, team="sa-gpudash")], "sa-gpudash") == ["team sa-gpudash: Admin"]


def test_a_playlist_picks_a_dashboard_by_uid_or_id_not_by_tag():
    playlists = {"pl2": {"name": "wall", "items": [{"type": "dashboard_by_id", "value": "42"}]},
                 "pl1": {"name": "noc", "items": [{"type": "dashboard_by_uid", "value": "gpudash-x"}]},
                 "pl3": {"name": "all", "items": [{"type": "dashboard_by_tag", "value": "gpudash-managed"},
                                                   {"type": "dashboard_by_id", "value": "421"}]}}
    assert picking(playlists, "gpudash-x", 42) == ["'noc' (pl1)", "'wall' (pl2)"]
    assert picking(playlists, "gpudash-y", 7) == []


def test_a_by_id_item_picks_the_dashboard_as_grafana_parses_its_value():
    """Grafana reads a by-id item's value with Go's ParseInt: "042" and "+42" pick dashboard 42 (an item written
    through the API keeps the text it was given); "4_2", " 42" and "42.0" pick nothing."""
    playlists = {f"pl{n}": {"name": value, "items": [{"type": "dashboard_by_id", "value": value}]}
                 for n, value in enumerate(["042", "+42", "4_2", " 42", "42.0"])}
    assert picking(playlists, "gpudash-x", 42) == ["'042' (pl0)", "'+42' (pl1)"]


def test_an_answer_of_permissions_holds_all_of_them_only_for_an_account_reading_every_holder():
    """Grafana leaves out the entries of a team, user or service account the caller may not read: only scopes over
    all of them (a wildcard) make its answer all of them; one team's scope does not."""
    from generator.targets.grafana_around import unlisted

    admin = {"teams:read": ["teams:*"], "org.users:read": ["users:id:*"], "serviceaccounts:read": ["*"]}
    assert unlisted(admin) is None
    assert unlisted({**admin, "teams:read": ["teams:id:5"]}) == "it has no teams:read over all of them"
    assert unlisted({"teams:read": ["teams:*"]}) == "it has no org.users:read, serviceaccounts:read over all of them"
    assert unlisted(None).startswith("Grafana lists no permissions of gpudash's account")

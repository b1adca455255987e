"""The evidence --renamed-from and --removed-cluster ask of what the objects record (ownership.renamed_evidence),
on lists as plan reads them: (kind, name, defined by these settings, clusters recorded)."""

from __future__ import annotations

import pytest

from generator.errors import GpudashError
from generator.ownership import renamed_evidence


def _refusal(*args, **kwargs) -> str:
    with pytest.raises(GpudashError) as refused:
        renamed_evidence(*args, **kwargs)
    return str(refused.value)


def test_settings_naming_no_project_are_named_so_in_the_refusal():
    records = [("dashboard", "gpudash-overview", True, frozenset({"team-a", "team-b"}))]
    said = _refusal(("team-a",), ("team-z",), ("team-a",), records, "", "in Grafana")
    assert said.startswith("--renamed-from team-a: 1 object(s) of no project recording the cluster 'team-a' were "
                           "last published by settings with clusters team-a team-b"), said


def test_a_list_only_renamed_and_current_clusters_make_is_this_files_and_nothing_recorded_claims_nothing():
    """`gone` is no typo of a name the objects record (old): a flag whose run is done, left in place, takes nothing."""
    records = [("alarm", "gpudash-old-x-critical", False, frozenset({"old", "b"})),
               ("alarm", "gpudash-b-x-critical", True, frozenset({"old", "b"}))]
    assert renamed_evidence(("old", "gone"), ("new", "b"), ("old", "gone"), records, "shop", "-", ()) == ["gone"]


def test_names_no_object_records_are_refused_with_the_names_recorded_and_the_ones_meant():
    """A typo in either flag (a name close to one the objects record) would take nothing (no rename, no prune) while
    the user believes it did: refused."""
    records = [("alarm", "gpudash-old-x-critical", False, frozenset({"old", "gone", "b"})),
               ("alarm", "gpudash-b-x-critical", True, frozenset({"old", "gone", "b"}))]
    said = _refusal(("olf",), ("new", "b"), ("olf", "gome"), records, "shop", "-", ("gome",))
    assert said.startswith("--renamed-from olf, --removed-cluster gome: no object of project 'shop' records the "
                           "clusters 'olf' 'gome': the flag would prune or rename nothing (clusters the objects "
                           "record that these settings do not define: gone old)"), said
    assert "did you mean 'old'? did you mean 'gone'? " in said and "--former-region" in said, said
    said = _refusal(("olf",), ("new", "b"), ("olf",), records, "shop", "-")  # push: no --former-region
    assert "did you mean 'old'?" in said and "--former-region" not in said, said
    # a name close to none the objects record (a finished run's flag left in place) takes nothing, for a note
    assert renamed_evidence(("zzz",), ("new", "b"), ("zzz",), records, "shop", "-") == ["zzz"]


def test_settings_naming_no_project_are_told_to_name_one_when_cloudwatch_records_nothing():
    """Without a project CloudWatch objects are not read for the clusters they record: a flag is refused as taking
    nothing, and the fix is the project, not a spelling."""
    said = _refusal(("old",), ("new",), ("old",), [], "", "-", ())
    assert said.startswith("--renamed-from old: no object of no project records the cluster 'old'"), said
    assert "fix: set `project:` in the settings" in said and "--former-region" not in said, said

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
    records = [("alarm", "gpudash-old-x-critical", False, frozenset({"old", "b"})),
               ("alarm", "gpudash-b-x-critical", True, frozenset({"old", "b"}))]
    assert renamed_evidence(("old", "gone"), ("new", "b"), ("old", "gone"), records, "shop", "-", ()) == ["gone"]

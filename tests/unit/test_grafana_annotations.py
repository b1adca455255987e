"""How gpudash reads the evidence about a retired Grafana dashboard's annotations: the count shown, and which of the
account's annotations:read scopes show it reads them (under both of Grafana's readings)."""

from __future__ import annotations

import pytest

from generator.targets.grafana_annotations import annotation_count, unshown


@pytest.mark.parametrize("read, shown", [(1, "1"), (100, "100"), (101, "100+")])
def test_the_count_says_more_only_when_more_than_the_counted_were_read(read, shown):
    assert annotation_count([{"id": i + 1} for i in range(read)]) == shown


class _Listed:
    """A client whose account's permissions list is `listed` (None: Grafana has no such endpoint)."""

    def __init__(self, listed):
        self.listed = listed

    def permissions(self):
        return self.listed


@pytest.mark.parametrize("scopes, proven", [
    (["annotations:*", "dashboards:*"], True),
    (["*"], True),
    (["annotations:type:dashboard", "folders:uid:gpudash"], True),
    (["annotations:type:*", "dashboards:uid:gpudash-team"], True),
    (["annotations:*"], False),  # Grafana with annotationPermissionUpdate reads no dashboard's annotations
    (["dashboards:*", "folders:*"], False),  # Grafana without it reads them by type: none here
    (["annotations:type:organization", "dashboards:*"], False),
    (["annotations:*", "dashboards:uid:gpudash-team-b", "folders:uid:gpudash-other"], False),
    ([], False),
])
def test_an_answer_of_none_counts_only_where_the_scopes_cover_the_dashboard_in_both_readings(scopes, proven):
    why = unshown(_Listed({"annotations:read": scopes} if scopes else {}), "gpudash-team", "gpudash")
    assert (why is None) is proven, why


def test_a_grafana_listing_no_permissions_shows_nothing():
    assert "lists no permissions" in unshown(_Listed(None), "gpudash-team", "gpudash")

"""The prune guard: one rule for every target, read from a plan's changes."""

from __future__ import annotations

import pytest

from generator.changes import CREATE, DELETE, FOREIGN, UNCHANGED, UPDATE, Change
from generator.targets import cloudwatch_sync, prune_guard
from generator.targets.prune_guard import PruneRefused


def _alarms(**counts: int) -> list[Change]:
    changes = []
    for action, count in counts.items():
        changes += [Change("cloudwatch", "alarm", f"gpu-{action}-{i}", action) for i in range(count)]
    return changes


def test_deleting_every_owned_alarm_is_refused_even_when_apply_would_reach_no_api():
    changes = [Change("cloudwatch", "dashboard", "gpu", UNCHANGED)] + _alarms(delete=3)
    with pytest.raises(PruneRefused, match=r"delete 3 of the 3 cloudwatch alarms gpudash owns \(all of them\)"):
        cloudwatch_sync.apply(None, changes, {}, [], force=False, prune=True, dry_run=False)


def test_more_than_the_share_is_refused_and_up_to_it_is_not():
    changes = _alarms(unchanged=2, update=1, delete=3)
    with pytest.raises(PruneRefused, match=r"3 of the 6 .*\(more than 40%\)"):
        prune_guard.check(changes, prune=True, allowed=False, max_share=40)
    prune_guard.check(changes, prune=True, allowed=False, max_share=50)


def test_foreign_and_new_objects_do_not_count_as_owned():
    changes = _alarms(foreign=5, create=5, unchanged=1, delete=1)
    assert [c.action for c in changes].count(FOREIGN) == 5 and CREATE in {c.action for c in changes}
    with pytest.raises(PruneRefused, match=r"1 of the 2"):
        prune_guard.check(changes, prune=True, allowed=False, max_share=49)


def test_a_build_with_no_objects_is_refused_with_prune_only():
    changes = [Change("grafana", "folder", "gpudash", UNCHANGED)]
    with pytest.raises(PruneRefused, match="the build holds no grafana objects"):
        prune_guard.check(changes, prune=True, allowed=False)
    prune_guard.check(changes, prune=False, allowed=False)
    prune_guard.check(changes, prune=True, allowed=True)


def test_force_allows_any_prune():
    prune_guard.check(_alarms(delete=4), prune=True, allowed=True)
    prune_guard.check([Change("grafana", "dashboard", "a", UPDATE), Change("grafana", "dashboard", "b", DELETE)],
                      prune=True, allowed=False)

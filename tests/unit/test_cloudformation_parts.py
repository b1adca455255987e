"""How one cluster's resources are put in the CloudFormation templates it is deployed as
(render/cloudformation.split_cluster), over any resources and any build before: each part within the quotas it is
filled to, every resource in one part, the log group in the first, and a resource of the build before leaving its part
only when that part, as written, has no room for it, and then only for a later part (deployed in the order of their
parts, its old stack deletes it before the new one creates it), unless every resource fits one template again."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from generator.render import cloudformation
from generator.render.cloudformation import FILL, TEMPLATE_BYTES, TEMPLATE_RESOURCES, split_cluster

BYTES, COUNT = TEMPLATE_BYTES * FILL, TEMPLATE_RESOURCES * FILL


def _named(sizes: dict[tuple[str, str], int]):
    return [(kind, name, {}, size, kind + name) for (kind, name), size in sizes.items()]


def _resources(draw, sizes: random.Random, prefix: str, most: int):
    """Up to `most` resources: how many of each kind and how large they may be drawn by Hypothesis, each one's size
    by `sizes` (a Random Hypothesis seeds: hundreds of Hypothesis draws an example made generating it most of the
    test's CPU, and slow enough under load for Hypothesis' health check to fail the test)."""
    dashboards = draw(st.integers(0, most // 40))
    alarms = draw(st.integers(most // 3, most))
    big = draw(st.sampled_from([1_000, 30_000, 90_000, 300_000]))
    result = {("Dashboard", f"{prefix}d{i}"): sizes.randint(big // 3, big) for i in range(dashboards)}
    result[("LogGroup", "group")] = 200
    result.update({("Alarm", f"{prefix}a{i}"): sizes.randint(800, 4_000) for i in range(alarms)})
    return result


@st.composite
def _builds(draw):
    """A cluster's resources, and the same cluster later: some resources gone, some new, some grown or shrunk (those
    early in the template more often gone, those late grown, as when the first parts get room while the last fill)."""
    pick = draw(st.randoms(use_true_random=True))  # seeded by Hypothesis: the example is reproduced from its seed
    before = _resources(draw, pick, "", 900)
    cut = draw(st.integers(0, len(before)))
    gone, scale = draw(st.sampled_from([0.0, 0.25, 0.6])), draw(st.sampled_from([0.5, 1.0, 1.1, 2.0]))
    after = {}
    for index, (key, size) in enumerate(before.items()):
        if key[0] == "LogGroup" or index >= cut or pick.random() >= gone:
            after[key] = max(1, int(size * scale)) if index >= cut and pick.random() < 0.5 else size
    after.update(_resources(draw, pick, "new-", draw(st.sampled_from([0, 30, 300]))))
    return before, after


def _placed(parts) -> dict[tuple[str, str], int]:
    return {(kind, name): number for number, items in enumerate(parts, 1) for kind, name, *_ in items}


def _holds(items) -> bool:
    return len(items) <= COUNT and sum(item[3] for item in items) <= BYTES


@settings(max_examples=150, deadline=None)
@given(_builds())
def test_resources_stay_in_their_part_while_it_holds_them_and_move_only_forward(builds):
    before_sizes, after_sizes = builds
    before = split_cluster(_named(before_sizes))
    after = split_cluster(_named(after_sizes), lambda: _placed(before))
    was, now = _placed(before), _placed(after)
    assert sorted(now) == sorted(after_sizes)  # every resource once
    assert sum(len(items) for items in after) == len(after_sizes)
    assert now[("LogGroup", "group")] == 1
    if len(after) == 1:
        return  # one template: its resources fit one (or it is said refused when not split at all)
    assert len(after) <= cloudformation.MAX_PARTS
    for number, items in enumerate(after, 1):  # within the quotas, but for a resource too large for a part alone
        assert _holds(items) or len(items) == 1 or number == cloudformation.MAX_PARTS, (number, len(items))
    for key, part in now.items():
        if key in was and part != was[key]:
            assert part > was[key], (key, was[key], part)
            size = after_sizes[key]
            assert not _holds(after[was[key] - 1] + [(key[0], key[1], {}, size)]), (key, was[key], part)


def test_without_a_build_before_the_parts_are_filled_in_order():
    """Dashboards (large) then alarms, first fit: 13 of 66 KB and 49 alarms of 3 KB take two parts (13 alarms fill the first)."""
    sizes = {("Dashboard", f"d{i:02}"): 66_000 for i in range(13)}
    sizes[("LogGroup", "group")] = 200
    sizes.update({("Alarm", f"a{i:02}"): 3_000 for i in range(49)})
    parts = split_cluster(_named(sizes))
    assert [len(items) for items in parts] == [13 + 1 + 13, 36]
    assert [item[1] for item in parts[0]][:14] == [f"d{i:02}" for i in range(13)] + ["group"]

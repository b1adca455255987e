"""Refuse a prune that looks like a broken build rather than a clean-up.

A build that lost its definitions (an unreadable folder, a bad merge) plans every owned object
as a delete. Without --allow-mass-prune (not --force: a run that forces past drift keeps this guard),
--prune is refused when it would delete every object gpudash owns
of a kind, more than a set share of them (`--max-prune-share`), or when the build holds no
objects for the target at all. The rule reads only a plan's changes, so every target uses it.
"""

from __future__ import annotations

from ..changes import DELETE, DRIFT, KEPT, UNCHANGED, UPDATE, WITHDRAW, Change
from ..errors import GpudashError

DEFAULT_MAX_SHARE = 50.0  # percent of a kind's owned objects one prune may delete
# A withdrawal (a Grafana claim given up on a dashboard these settings no longer define) is a step of pruning: it
# counts as a delete, never as an object the build holds.
_PRUNED = (DELETE, WITHDRAW)
_OWNED = (UNCHANGED, UPDATE, DRIFT, KEPT, *_PRUNED)  # actions on live objects gpudash owns
_SHOWN = 5


class PruneRefused(GpudashError):
    """The flags given do not allow this prune (exit 2)."""


def check(changes: list[Change], *, prune: bool, allowed: bool, max_share: float = DEFAULT_MAX_SHARE) -> None:
    """Raise PruneRefused when --prune without --allow-mass-prune would delete too much."""
    if not prune or allowed:
        return
    objects = [c for c in changes if c.kind != "folder"]
    targets = sorted({c.target for c in changes})
    for target in targets:
        if not any(c.target == target and c.action not in _PRUNED for c in objects):
            raise PruneRefused(f"--prune refused: the build holds no {target} objects, so every object gpudash "
                               f"owns there would be deleted", where=target,
                               hint="check that the definitions were read (`gpudash generate` says how many "
                                    "dashboards it built); if an empty build is intended, add --allow-mass-prune")
    for target, kind in sorted({(c.target, c.kind) for c in objects}):
        group = [c for c in objects if (c.target, c.kind) == (target, kind)]
        owned = [c for c in group if c.action in _OWNED]
        deleted = [c for c in group if c.action in _PRUNED]
        if not deleted:
            continue
        if len(deleted) == len(owned):
            reason = "all of them"
        elif len(deleted) * 100 > max_share * len(owned):
            reason = f"more than {max_share:g}%"
        else:
            continue
        names = ", ".join(c.name for c in deleted[:_SHOWN]) + (" ..." if len(deleted) > _SHOWN else "")
        what = "delete" if all(c.action == DELETE for c in deleted) else "delete or withdraw its claim on"
        raise PruneRefused(f"--prune refused: it would {what} {len(deleted)} of the {len(owned)} {target} {kind}s "
                           f"gpudash owns ({reason}): {names}", where=target,
                           hint="check that the definitions were read (`gpudash plan` lists the deletes); if they "
                                "are intended, add --allow-mass-prune or raise --max-prune-share")

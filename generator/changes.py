"""What a plan found and what a publish did: one record per remote object."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any

CREATE, UPDATE, UNCHANGED, DELETE = "create", "update", "unchanged", "delete"
# A step of pruning that writes instead of deleting (a Grafana claim withdrawn): done with --prune only, and counted
# as a delete by the prune guard, never as an object the build holds.
WITHDRAW = "withdraw"
DRIFT, FOREIGN = "drift", "foreign"  # blocked without --force
# A name an object gpudash cannot write holds (a person's composite alarm where gpudash defines a metric alarm):
# blocked, --force too, since no write of gpudash's makes that object its own
HELD = "held"
# An object to prune that something gpudash does not own depends on (a person's composite alarm whose rule names an
# alarm gpudash wrote, which CloudWatch does not delete): refused with --prune, --force too; left without it
KEPT = "kept"


@dataclass
class Change:
    target: str  # "grafana" or "cloudwatch"
    kind: str  # folder, dashboard, alarm
    name: str
    action: str
    details: list[str] = field(default_factory=list)
    region: str | None = None
    live: object = field(default=None, repr=False, compare=False)  # what the plan read, for the publish step
    edited: bool = False  # a DELETE of an object a person changed since gpudash wrote it

    @property
    def blocked(self) -> bool:
        return self.action in (DRIFT, FOREIGN, HELD, KEPT) or (self.action == DELETE and self.edited)

    def as_dict(self) -> dict:
        # `live` (the whole object the plan read) is left out before copying, not copied and then dropped
        return {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self) if f.name != "live"}


DONE, FAILED, REFUSED, SKIPPED, WOULD_WRITE = "done", "failed", "refused", "skipped", "would write"
WRITE = "write"


@dataclass
class Outcome:
    change: Change
    done: bool
    error: str | None = None
    status: str | None = None  # one of DONE ... WOULD_WRITE; derived from the other fields when not given
    # What failed after the write itself was done and shown done (an alarm's tag write): the write stands, the
    # object is listed as written, and this is listed as a failure too (the command exits 3).
    unfinished: str | None = None

    @property
    def state(self) -> str:
        if self.status:
            return self.status
        if self.done:
            return DONE
        if self.error:
            return FAILED
        return REFUSED if self.change.blocked else SKIPPED


def disposition(change: Change, *, force: bool, prune: bool) -> str:
    """What publishing does with a planned change: WRITE, or why not (SKIPPED, REFUSED)."""
    if change.action == UNCHANGED or (change.action in (DELETE, WITHDRAW, KEPT) and not prune):
        return SKIPPED
    if change.blocked and (not force or change.action in (HELD, KEPT)):
        return REFUSED
    return WRITE


def summary(changes: list[Change]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for change in changes:
        counts[change.action] = counts.get(change.action, 0) + 1
    return counts


def report(changes: list[Change], outcomes: list[Outcome] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"changes": [c.as_dict() for c in changes], "summary": summary(changes)}
    if outcomes is not None:
        data["written"] = [o.change.name for o in outcomes if o.state == DONE]
        # `written` says whether the object itself was written: true for a write that was done and a step after it
        # failed (`unfinished`), listed in `written` as well
        data["failed"] = [{"name": o.change.name, "error": o.error or o.unfinished, "written": o.state == DONE}
                          for o in outcomes if o.state == FAILED or (o.state == DONE and o.unfinished)]
        data["refused"] = [o.change.name for o in outcomes if o.state == REFUSED]
        data["would_write"] = [o.change.name for o in outcomes if o.state == WOULD_WRITE]
    return data


def pending(changes: list[Change]) -> bool:
    """Whether publishing (with --prune) would write something or refuse something: what `plan` exits 1 for."""
    return any(disposition(c, force=False, prune=True) != SKIPPED for c in changes)

"""What a plan found and what a publish did: one record per remote object."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

CREATE, UPDATE, UNCHANGED, DELETE = "create", "update", "unchanged", "delete"
DRIFT, FOREIGN = "drift", "foreign"  # blocked without --force
WRITES = (CREATE, UPDATE, DELETE)


@dataclass
class Change:
    target: str  # "grafana" or "cloudwatch"
    kind: str  # folder, dashboard, alarm
    name: str
    action: str
    details: list[str] = field(default_factory=list)
    region: str | None = None
    live: object = field(default=None, repr=False, compare=False)  # what the plan read, for the publish step

    @property
    def blocked(self) -> bool:
        return self.action in (DRIFT, FOREIGN)

    def as_dict(self) -> dict:
        data = asdict(self)
        data.pop("live")
        return data


@dataclass
class Outcome:
    change: Change
    done: bool
    error: str | None = None


def summary(changes: list[Change]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for change in changes:
        counts[change.action] = counts.get(change.action, 0) + 1
    return counts

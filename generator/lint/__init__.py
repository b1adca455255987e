"""Lint: rules with ids over the generated artifacts and the catalog.

Each rule is a small function that yields findings; `RULES` lists them with a
one-line description. Rules can be disabled by id (`gpudash lint --disable GF003`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Iterable


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # "error" fails the lint; "warning" is reported only
    where: str  # artifact path, then the object inside it
    message: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str
    check: Callable[..., Iterable[Finding]]


def run(rules: Iterable[Rule], subject, disabled: frozenset[str] = frozenset()) -> list[Finding]:
    findings: list[Finding] = []
    for rule in rules:
        if rule.id not in disabled:
            findings.extend(rule.check(subject))
    return sorted(findings, key=lambda f: (f.where, f.rule, f.message))


def schema_message(error) -> str:
    """A short message for a jsonschema error (its default repeats the whole instance)."""
    limits = {"maxItems": ("items", "at most"), "minItems": ("items", "at least"),
              "maxLength": ("characters", "at most"), "minLength": ("characters", "at least")}
    if error.validator in limits:
        unit, bound = limits[error.validator]
        return f"has {len(error.instance)} {unit}; {bound} {error.validator_value} allowed"
    return error.message if len(error.message) <= 200 else error.message[:197] + "..."

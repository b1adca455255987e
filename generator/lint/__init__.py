"""Lint: rules with ids over the generated artifacts and the catalog.

Each rule is a small function that yields findings; `RULES` lists them with a
one-line description. Rules can be disabled by id (`gpudash lint --disable GF003`).
"""

from __future__ import annotations

import hashlib
import pickle
import re
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable

from ..quick_schema import conforms


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


def schema_errors(validator, instance: Any) -> tuple[tuple[str, str], ...]:
    """(its path, "a/b/0", and schema_message) of each error the jsonschema `validator` finds in `instance`, in the
    validator's order. Worked out once per validator and instance in a process that checks the same dashboards and
    alarms again (lint after generate's own checks, a build linted under several rule sets, the tests): an instance is
    known by the digest of its pickled bytes, which hold each value's type, order and text as they are (a tuple is
    not a list, 1 not 1.0 nor True); one that pickle cannot write is checked every time. An instance that plainly
    conforms (quick_schema.conforms: its yes is always right) has none, without jsonschema's walk."""
    schema = getattr(validator, "schema", None)
    if isinstance(schema, dict) and conforms(instance, schema, _search):
        return ()
    try:
        digest = hashlib.blake2b(pickle.dumps(instance, pickle.HIGHEST_PROTOCOL), digest_size=20).digest()
    except Exception:  # noqa: BLE001 - anything pickle refuses is simply not remembered
        return _schema_errors(validator, instance)
    key = (id(validator), digest)
    held = _SCHEMA_ERRORS.get(key)
    if held is None or held[0] is not validator:  # the validator held too: its id is never another's meanwhile
        if len(_SCHEMA_ERRORS) >= 4096:
            _SCHEMA_ERRORS.clear()
        held = _SCHEMA_ERRORS[key] = (validator, _schema_errors(validator, instance))
    return held[1]


_SCHEMA_ERRORS: dict[tuple[int, bytes], tuple[Any, tuple[tuple[str, str], ...]]] = {}


def _search(pattern: str, text: str) -> bool:
    """A schema's `pattern` as jsonschema judges it: Python's re, unanchored."""
    return re.search(pattern, text) is not None


def _schema_errors(validator, instance: Any) -> tuple[tuple[str, str], ...]:
    return tuple(("/".join(str(p) for p in error.absolute_path), schema_message(error))
                 for error in validator.iter_errors(instance))


def schema_message(error) -> str:
    """A short message for a jsonschema error (its default repeats the whole instance)."""
    limits = {"maxItems": ("items", "at most"), "minItems": ("items", "at least"),
              "maxLength": ("characters", "at most"), "minLength": ("characters", "at least")}
    if error.validator in limits:
        unit, bound = limits[error.validator]
        return f"has {len(error.instance)} {unit}; {bound} {error.validator_value} allowed"
    return error.message if len(error.message) <= 200 else error.message[:197] + "..."

"""The shape of a relabel rule as Prometheus' config loader reads it (relabel.Config: source_labels a list of label
names, separator, regex, target_label, replacement and action strings, modulus a number; a ServiceMonitor's the same
in camelCase): a rule of another shape stops the Prometheus or agent that loads it. Lint's readers of relabel rules
read the well-formed ones (`well_formed`); PR005 names the others (`shape_problem`)."""

from __future__ import annotations

from typing import Any

_STRINGS = ("separator", "target_label", "targetLabel", "replacement", "action")
_SCALARS = ("regex",)  # YAML's `regex: 9400` is a number Go's YAML decoder reads into the string
_LISTS = ("source_labels", "sourceLabels")
_NUMBERS = ("modulus",)


def kind_said(value: Any) -> str:
    return ("a mapping" if isinstance(value, dict) else "a list" if isinstance(value, list) else
            "a string" if isinstance(value, str) else "a boolean" if isinstance(value, bool) else
            "a number" if isinstance(value, (int, float)) else "null")


def shape_problem(rule: Any) -> str | None:
    """What makes `rule` one Prometheus refuses to load for its shape (None: a shape it loads; a field left out or
    null is its default)."""
    if not isinstance(rule, dict):
        return f"the rule is {kind_said(rule)}, where Prometheus reads a mapping"
    for key, value in rule.items():
        if value is None:
            continue
        if key in _STRINGS and not isinstance(value, str) \
                or key in _SCALARS and (isinstance(value, (dict, list, bool))) \
                or key in _NUMBERS and (isinstance(value, bool) or not isinstance(value, int)):
            wanted = "a number" if key in _NUMBERS else "a string"
            return f"{key} is {kind_said(value)}, where Prometheus reads {wanted}"
        if key in _LISTS and not (isinstance(value, list) and all(isinstance(name, str) for name in value)):
            return f"{key} is {kind_said(value)}, where Prometheus reads a list of label names" \
                if not isinstance(value, list) else f"{key} holds what is not a label name: {value!r}"
    return None


def well_formed(rules: Any) -> list[dict[str, Any]]:
    """The rules of a relabel list that Prometheus could load, a `regex` number read as the string it is to Go (an
    ill-formed list, or rule: none of it; PR005 says what is wrong)."""
    if not isinstance(rules, list):
        return []
    return [dict(rule, regex=str(rule["regex"])) if isinstance(rule.get("regex"), (int, float)) else rule
            for rule in rules if shape_problem(rule) is None]

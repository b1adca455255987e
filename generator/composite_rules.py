"""Which composite alarms depend on an alarm: CloudWatch deletes no alarm a composite alarm's rule names.

An AlarmRule names alarms as the arguments of its ALARM, OK, INSUFFICIENT_DATA and AT_LEAST calls, by name or ARN,
in double quotes or bare (a name holding parentheses, commas or spaces must be quoted): `ALARM("a") AND NOT OK(b)`,
`AT_LEAST(2, ALARM, (a, "arn:aws:cloudwatch:us-east-1:123456789012:alarm:b"))`. Every other word of a rule is an
operator, a state, a count or TRUE/FALSE, none of which is an alarm name of gpudash's form, so a rule depends on an
alarm when one of its words is the alarm's name or its ARN.
"""

from __future__ import annotations

import re
from typing import Any

_WORDS = re.compile(r'"([^"]*)"|([^\s(),"]+)')


def words(rule: str) -> set[str]:
    """Every word of a rule: each quoted string (without its quotes) and each bare word between its parentheses,
    commas and spaces."""
    return {quoted or bare for quoted, bare in _WORDS.findall(rule)}


def parents(composites: dict[str, dict[str, Any]], name: str, arn: str | None) -> list[str]:
    """The names of the composite alarms (as DescribeAlarms lists them, by name) that depend on the alarm `name` (of
    ARN `arn`), sorted: whose rules name it, or that name it as their ActionsSuppressor (by name or ARN: the alarm
    whose ALARM state holds the composite alarm's actions; deleted, the composite alarm acts through what it was made
    to hold)."""
    return sorted(parent for parent, alarm in composites.items() if how(alarm, name, arn))


def how(composite: dict[str, Any], name: str, arn: str | None) -> str | None:
    """How the composite alarm `composite` (as DescribeAlarms lists it) depends on the alarm `name` (of ARN `arn`):
    its rule (quoted, cut at 80 characters), its actions suppressor, or None where it does not."""
    named = {name, arn} - {None}
    rule = composite.get("AlarmRule")
    if isinstance(rule, str) and named & words(rule):
        return f"its rule: {clipped(rule)}"
    if composite.get("ActionsSuppressor") in named:
        return "its actions suppressor"
    return None


def clipped(text: str, length: int = 80) -> str:
    """`text` as a message shows a rule or query: its first `length` characters, an ellipsis where it goes on."""
    return f"{text[:length]}{'…' if len(text) > length else ''}"


def dependence(composites: dict[str, dict[str, Any]], name: str, arn: str | None) -> tuple[list[str], str]:
    """The composite alarms depending on the alarm `name` (`parents`), and how that is said: "the composite alarm X
    depends on it (its rule: ...)" (how the first of them does: `how`); ([], "") where none does."""
    found = parents(composites, name, arn)
    if not found:
        return [], ""
    return found, f"{depend(found)} ({how(composites[found[0]], name, arn)})"


def depend(parents: list[str]) -> str:
    """The composite alarms `parents` said as depending on an alarm."""
    return (f"the composite alarm {parents[0]} depends on it" if len(parents) == 1 else
            f"the composite alarms {', '.join(parents)} depend on it")

"""The agent's label matchers, judged as awsemf applies them over points shaped like the real exporter's.

awsemf (metric_declaration.go) takes a point into a declaration when one of its label matchers' regex (Go's regexp)
is found, unanchored, in the values of the matcher's label names joined by its separator, a missing label read as
empty: each point is read as render/agent_otel.matched_by reads it. The JSON path's source_labels and label_matcher
are one such matcher joined by ';' (the agent's translator; label_matcher left out: none; written empty: a matcher
awsemf refuses, so the declaration takes no point). Lint asks whether every point of a set passes (a hand-edited
matcher must drop none) or whether any does (the points the agent makes under a mark must pass none). Each label the matchers name is read at every value of the shapes real series carry
(series_labels.REAL_VALUES; a label whose shapes are not known, at a placeholder): a matcher that only constrains a
value's format (`gpu` by `^[0-9]+$`, `UUID` by `^GPU-`) passes every point, one that picks some values (`gpu` by
`^[1-9]$`, which drops GPU 0 and GPU 10 on, `pod` by `^web-`) drops the others.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product
from math import prod
from typing import Any, Iterable

from ..render.agent_otel import matcher_initialised, one_matches
from ..series_labels import REAL_VALUES

PLACEHOLDER = "x"  # the value of a label whose real shapes are not known
# Past this many combinations of the named labels' values, each label's values are tried in turn, the others at their
# first value (a matcher naming a few labels stays well within it).
MOST_COMBINATIONS = 4096

Matcher = tuple[tuple[str, ...], str, str]  # (label names, separator, regex)


def matchers(declaration: dict[str, Any]) -> list[dict[str, Any]]:
    """The declaration's label matchers in awsemf's terms (label_names, separator, regex): the OTel pipeline's as
    written, the JSON path's source_labels joined by ';' and matched by label_matcher (the agent's translator; one
    without label_matcher passes every point; one whose label_matcher is written, empty too, is a matcher of that
    regex, and an empty one awsemf refuses: it drops the declaration, which takes no point, as AG003 says)."""
    if declaration.get("source_labels"):
        if "label_matcher" not in declaration:
            return []
        return [{"label_names": declaration["source_labels"], "separator": ";",
                 "regex": declaration["label_matcher"]}]
    return [m for m in declaration.get("label_matchers") or [] if isinstance(m, dict)]


def real_values(label: str) -> tuple[str, ...]:
    """The values of the shapes a real series carries under `label` (the placeholder for one not known)."""
    return REAL_VALUES.get(label, (PLACEHOLDER,))


def judged(declaration: dict[str, Any], fixed: dict[str, str], carried: Iterable[str] = (),
           others_set: bool = False) -> tuple[bool, bool]:
    """(every point passes, some point passes) the declaration's label matchers, over the points that carry the
    `fixed` labels at their values and each `carried` label at each of its real values; any other label the matchers
    name is missing (read as empty) or, with `others_set`, either missing or at each of its real values (a GPU no pod
    holds has no `pod`). A declaration without matchers takes every point; one with a matcher awsemf refuses (a regex
    Go refuses, none, or no label names) none: awsemf drops it. Each point is judged as the agent model judges it
    (render/agent_otel.matched_by): a matcher lint cannot read as Go does passes nothing (PR005 says each)."""
    found = matchers(declaration)
    if not found:
        return True, True
    if not all(map(matcher_initialised, found)):  # awsemf drops the declaration (AG003, PR005)
        return False, False
    key = tuple((tuple(str(n) for n in m.get("label_names") or []), str(m.get("separator") or ";"),
                 str(m.get("regex", ""))) for m in found)
    named = {name for names, _, _ in key for name in names}
    fixed = {name: value for name, value in fixed.items() if name in named}
    kept = sorted({name for name in carried if name in named} - set(fixed))
    free = sorted(named - set(fixed) - set(kept)) if others_set else []
    return _judged(key, tuple(sorted(fixed.items())), tuple(kept), tuple(free))


@lru_cache(maxsize=4096)
def _judged(key: tuple[Matcher, ...], fixed: tuple[tuple[str, str], ...], carried: tuple[str, ...],
            free: tuple[str, ...]) -> tuple[bool, bool]:
    names = [*carried, *free]
    choices = [real_values(name) for name in carried] + [("", *real_values(name)) for name in free]
    if prod(len(values) for values in choices) <= MOST_COMBINATIONS:
        combinations: Iterable[tuple[str, ...]] = product(*choices)
    else:
        first = tuple(values[0] for values in choices)
        combinations = [first[:k] + (value,) + first[k + 1:] for k, values in enumerate(choices) for value in values]
    every, some = True, False
    found = [{"label_names": labels, "separator": separator, "regex": regex} for labels, separator, regex in key]
    for values in combinations:
        if one_matches(found, {**dict(fixed), **dict(zip(names, values))}):
            some = True
        else:
            every = False
        if some and not every:
            break
    return every, some

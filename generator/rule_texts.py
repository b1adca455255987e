"""A fleet's Prometheus rules and their two files (output.RULES_FILE, output.PROMETHEUS_RULE_FILE), made around the
regex of its clusters.

On a Prometheus holding several clusters each rule reads the series of the settings' clusters alone
(promql.settings_clusters): `cluster=~"c0000|c0001|..."`, 6,001 characters for 1,000 clusters, met 2,269 times in each
file (13.6 of its 21 MB). Writing that text into each expression, measuring each group's bytes (size_bounded) and
folding each line of the files read it again and again. So the rules are rendered with a stand-in of their settings
in place of the regex (STAND_IN: the settings are the same but for what settings_clusters answers), measured and
written with it, and the regex is set in for the stand-in last, in the rules' strings and the files' bytes. The bytes
are those the rules rendered with the regex are written as, where:

  * the regex (as PromQL quotes it) holds letters, digits, '_', '-' and '|' alone (`_PLAIN`), as the stand-in does:
    no character JSON, Go's encoder or YAML escapes, no quote, no space (a line is folded at a space), no ':' or '#'
    (which may make a one-line scalar quoted);
  * both are longer than serialize's long line (so a string holding either is folded by serialize, never left to
    the emitter for its length) and than a folded line (so a line holding either breaks at the first space past it,
    wherever it starts: every other break is where it would be);
  * each string holding the stand-in holds it only quoted (`"<stand-in>"`: never first or last), on one line that
    serialize folds itself, or in a `|` block written as it is (`Made.written`).

Elsewhere (a regex of other characters, or shorter: fewer clusters), the rules are rendered with the regex itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from .last_applied import encoded_bytes
from .project import Project
from .promql import Scope, settings_clusters
from .serialize import LONG_LINE, to_yaml_many, written_itself

# What stands for the clusters' regex: letters, '-' and '|' (as a regex, clusters named so), LONG_LINE characters
STAND_IN = ("gpudash-stand-in-for-the-clusters-regex|" * (LONG_LINE // 40 + 1))[:LONG_LINE]
_PLAIN = re.compile(r"[A-Za-z0-9_|-]+")


@dataclass(frozen=True)
class Made:
    """The rules (`rules`), and where they were rendered with the stand-in (`regex` not None) those rules (`standing`)
    and the regex the stand-in stands for."""
    rules: dict[str, Any]
    standing: dict[str, Any] | None = None
    regex: str | None = None

    def files(self, objects: tuple[dict[str, Any], ...], settings: Any) -> list[bytes]:
        """The rules file and the PrometheusRules file of the rules and their `objects`
        (render.alarms.prometheus_rule_resources of them, and `settings`)."""
        from .render.alarms import prometheus_rule_resources

        standing = self.regex is not None and self.written()
        rules = self.standing if standing else self.rules
        texts = _records_set_in(rules, settings)
        if texts is None:
            texts = to_yaml_many([(rules,), objects if rules is self.rules else
                                  prometheus_rule_resources(rules, settings)])
        if not standing:
            return texts
        stand_in, regex = STAND_IN.encode(), self.regex.encode()
        return [text.replace(stand_in, regex) for text in texts]

    def written(self) -> bool:
        """Each string holding the stand-in holds it quoted, on one line serialize folds itself (as the regex would be:
        see the module's text) or in a `|` block written as it is; no key holds it."""
        quoted = f'"{STAND_IN}"'
        stack: list[Any] = [self.standing]
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                if any(STAND_IN in key for key in value):
                    return False
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
            elif isinstance(value, str) and STAND_IN in value:
                if value.count(STAND_IN) != value.count(quoted):
                    return False
                if not written_itself(value):
                    return False
        return True


def made(project: Project) -> Made:
    """The project's Prometheus rules (render.alarms.prometheus_rules), rendered with the stand-in where the module's
    text allows it."""
    from .render.alarms import prometheus_rules

    settings = project.settings
    scope = settings_clusters(settings)
    regex = scope.regexes[0][1] if scope.regexes else ""
    if len(regex) < LONG_LINE or not _PLAIN.fullmatch(regex):
        return Made(prometheus_rules(project.alarms, project.catalog, settings, project.counted_fields()))
    standing = replace(settings)  # its own memo: what settings_clusters answers it
    standing.memo["settings_clusters"] = Scope(((scope.regexes[0][0], STAND_IN),))
    longer = len(regex) - len(STAND_IN)  # the bytes each stand-in's regex adds, as kubectl encodes it too

    def measure(rule: dict[str, Any]) -> int:
        return encoded_bytes(rule) + longer * _count(rule)

    rules = prometheus_rules(project.alarms, project.catalog, standing, project.counted_fields(), measure)
    return Made(_set_in(rules, regex, {}), rules, regex)


def _count(value: Any) -> int:
    """How often the stand-in is found in the strings of `value` (a rule)."""
    if isinstance(value, str):
        return value.count(STAND_IN)
    if isinstance(value, dict):
        return sum(_count(item) for item in value.values())
    if isinstance(value, list):
        return sum(_count(item) for item in value)
    return 0


def _set_in(value: Any, regex: str, copies: dict[int, Any]) -> Any:
    """`value` with the regex in place of each stand-in: a dict or list holding none is itself, and one object found
    twice gives one copy (the rules share some, which their files write as an anchor and its alias)."""
    if isinstance(value, str):
        return value.replace(STAND_IN, regex) if STAND_IN in value else value
    if not isinstance(value, (dict, list)):
        return value
    if id(value) not in copies:
        if isinstance(value, dict):
            made_ = {key: _set_in(item, regex, copies) for key, item in value.items()}
            same = all(made_[key] is item for key, item in value.items())
        else:
            made_ = [_set_in(item, regex, copies) for item in value]
            same = all(a is b for a, b in zip(made_, value))
        copies[id(value)] = value if same else made_
    return copies[id(value)]


# The watched clusters' recordings (render.alarms.watched_clusters: one per cluster, 1,000 alike but in its label, some
# 10,000 of each file's 23,000 YAML nodes) are written as two with stand-in labels, whose text is then that of each
# cluster's: a recording's text is the same wherever it is in the list, and a label written as itself (a plain token)
# is its only difference. Fewer than RECORDS_SET_IN_FROM are written as they are.
RECORDS_SET_IN_FROM = 8
_LABEL_STAND_INS = (b"gpudash-stand-in-for-a-cluster-label", b"Gpudash_Other_Label.9")


def _records_set_in(rules: dict[str, Any], settings: Any) -> list[bytes] | None:
    """Both files of `rules`, their watched clusters' recordings written from two (see above); None where they are not
    alike but in a plain label (the files are then written whole)."""
    from .names import CLUSTERS_GROUP
    from .render.alarms import prometheus_rule_resources
    from .serialize import writes_as_itself

    groups = rules["groups"]
    where = next((index for index, group in enumerate(groups) if group["name"] == CLUSTERS_GROUP), None)
    records = groups[where]["rules"] if where is not None else []
    if len(records) < RECORDS_SET_IN_FROM:
        return None
    first = records[0]
    key = next((key for key, value in first["labels"].items() if value != records[1]["labels"].get(key)), None)
    labels = [record["labels"].get(key) for record in records]
    if key is None or not all(type(label) is str and writes_as_itself(label) for label in labels) \
            or any(record != {**first, "labels": {**first["labels"], key: label}}
                   for record, label in zip(records, labels)) \
            or any(type(value) is not str for record in records for key_, value in record.items() if key_ != "labels") \
            or len({id(value) for record in records for value in (record, record["labels"])}) != 2 * len(records):
        return None
    two = [{**first, "labels": {**first["labels"], key: label.decode()}} for label in _LABEL_STAND_INS]
    shown = {**rules, "groups": [*groups[:where], {**groups[where], "rules": two}, *groups[where + 1:]]}
    texts = to_yaml_many([(shown,), prometheus_rule_resources(shown, settings)])
    filled = [_filled(text, [label.encode() for label in labels]) for text in texts]
    return None if None in filled else filled


def _filled(text: bytes, labels: list[bytes]) -> bytes | None:
    """`text` with the two stand-in recordings (consecutive, each the whole value of its label's line) replaced by one
    recording of each label; None where they are not found so."""
    first, second = _LABEL_STAND_INS
    if text.count(first) != 1 or text.count(second) != 1:
        return None
    at = [text.find(b": " + label + b"\n") for label in _LABEL_STAND_INS]
    if at[0] < 0 or at[1] < at[0]:
        return None
    starts = [_item_start(text, place) for place in at]
    one = text[starts[0]:starts[1]]
    end = starts[1] + len(one) - len(first) + len(second)
    if one.count(first) != 1 or text[starts[1]:end] != one.replace(first, second):
        return None
    before, after = one.split(first)
    return b"".join([text[:starts[0]], *(before + label + after for label in labels), text[end:]])


def _item_start(text: bytes, at: int) -> int:
    """Where the line of the block sequence's item holding position `at` starts (the nearest line before it whose
    first characters after its indent are `- `)."""
    start = text.rfind(b"\n", 0, at) + 1
    while not text[start:start + 200].lstrip(b" ").startswith(b"- ") and start > 0:
        start = text.rfind(b"\n", 0, start - 1) + 1
    return start

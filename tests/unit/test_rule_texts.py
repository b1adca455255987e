"""A fleet's Prometheus rules made around its clusters' regex (rule_texts) are the rules, and their files the bytes,
that rendering them with the regex itself gives: the groups they are cut into (by their bytes), each expression, and
each line of both files where it is folded; and the watched clusters' recordings, written from two, are each
cluster's as written on its own."""

from __future__ import annotations

import pytest

from generator import rule_texts
from generator.project import load_project
from generator.render.alarms import prometheus_rule_resources, prometheus_rules
from generator.serialize import to_yaml_many

REGIONS = ("us-east-1", "eu-west-1", "ap-southeast-2")


def _fleet(count: int, label, mig_every: int = 0) -> str:
    lines = []
    for number in range(count):
        mig = ", exporter: {mig: none}" if mig_every and number % mig_every == 0 else ""
        lines.append(f"  - {{name: c{number:04}, region: {REGIONS[number % 3]}, prometheus_label: '{label(number)}'{mig}}}")
    return "clusters:\n" + "\n".join(lines) + "\n"


def _direct(project):
    """The rules and both files as rendered with the regex itself."""
    rules = prometheus_rules(project.alarms, project.catalog, project.settings, project.counted_fields())
    return rules, to_yaml_many([(rules,), prometheus_rule_resources(rules, project.settings)])


@pytest.mark.parametrize("count, label, mig_every, stand_in", [
    (400, lambda n: f"c{n:04}", 0, True),  # a regex of 2,399 characters: made around it
    (400, lambda n: f"gpu-{n}_X", 4, True),  # '-', '_', capitals; clusters differing in exporter.mig, three Regions
    (400, lambda n: f"c.{n}", 0, False),  # the regex escapes each '.' (a backslash): rendered with the regex
    (50, lambda n: f"c{n:04}", 0, False),  # shorter than a long line: rendered with the regex
    (50, lambda n: f"{n}", 0, False),  # labels YAML reads as numbers (quoted): each recording written as it is
    (3, lambda n: f"c{n}", 0, False),  # fewer recordings than RECORDS_SET_IN_FROM
])
def test_rules_made_around_the_clusters_regex_are_those_rendered_with_it(project_dir, count, label, mig_every,
                                                                          stand_in):
    project = load_project(project_dir(_fleet(count, label, mig_every)))
    rules, files = _direct(project)
    made = rule_texts.made(project)
    assert (made.regex is not None) is stand_in
    assert made.rules == rules
    assert [group["name"] for group in made.rules["groups"]] == [group["name"] for group in rules["groups"]]
    assert made.files(prometheus_rule_resources(made.rules, project.settings), project.settings) == files
    if stand_in:  # the stand-in was found where the regex is, and it is gone from the rules and the files
        assert rule_texts.STAND_IN in str(made.standing) and rule_texts.STAND_IN not in str(made.rules)
        assert made.regex in files[0].decode()


def test_a_string_holding_the_stand_in_unquoted_is_written_from_the_regex(project_dir):
    """Where the stand-in is not where the module's text says it is written alike (here: not quoted), the files are
    written from the rules holding the regex."""
    project = load_project(project_dir(_fleet(400, lambda n: f"c{n:04}")))
    _, files = _direct(project)
    made = rule_texts.made(project)
    first = made.standing["groups"][0]["rules"][0]
    first["expr"] = rule_texts.STAND_IN + " or " + first["expr"]
    assert not made.written()
    assert made.files(prometheus_rule_resources(made.rules, project.settings), project.settings) == files

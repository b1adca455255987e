"""Each lint rule has an id of its own: `--disable`, `--rules` and the findings name a rule by it, so two rules under
one id would be disabled, listed and reported as one."""

from collections import Counter

from generator.lint.runner import all_rules


def test_no_two_rules_share_an_id():
    ids = Counter(rule.id for rule in all_rules())
    assert {rule: n for rule, n in ids.items() if n > 1} == {}
    assert len(ids) >= 40

"""Every value gpudash writes into PromQL reads back, through the PromQL parser, as the value itself."""

from __future__ import annotations

import re

import promql_parser
import pytest

from generator.promql_text import matcher, one_of, packed

VALUES = ["prod-eu", "a\\b", 'x"y', "a\\nb", "tab\there", "line\nbreak", "bell\x07", "ünï-ç", "a.b", "(x|y)*",
          "[0-9]+", "$^{}?", "\\d"]


@pytest.mark.parametrize("value", VALUES)
def test_an_equality_matcher_reads_back_its_value(value):
    parsed = promql_parser.parse(f"up{{{matcher('cluster', value)}}}")
    found = [m for m in parsed.matchers.matchers if m.name == "cluster"]
    assert [m.value for m in found] == [value]


def test_a_regex_of_values_matches_each_value_and_nothing_else():
    values = ["a.b", "(x|y)*", "[0-9]+", "$^{}?", "a\\b", "plain"]
    parsed = promql_parser.parse(f"up{{{one_of('daemonset', values)}}}")
    pattern = next(m.value for m in parsed.matchers.matchers if m.name == "daemonset")
    anchored = re.compile(f"^(?:{pattern})$")  # Prometheus anchors a label regex at both ends
    assert all(anchored.match(v) for v in values)
    assert not any(anchored.match(v) for v in ("aXb", "x", "xy", "0", "", "a\\\\b", "plain|a.b"))


# packed: a panel's PromQL in fewer bytes where kubectl writes it as JSON inside JSON, the same query to Prometheus,
# and every Grafana variable form left in double quotes (Grafana escapes a picked value for them)

@pytest.mark.parametrize("variable", ["$node", "${node}", "${node:regex}", "[[node]]", "$__interval"])
def test_a_string_holding_a_grafana_variable_keeps_its_double_quotes(variable):
    assert packed(f'sum by (a, b) (x{{node=~"{variable}", pod!=""}})') == \
        f"sum by (a,b) (x{{node=~\"{variable}\",pod!=''}})"


def test_text_a_single_quote_or_backslash_could_change_is_left_as_it_is():
    for text in ('x{a="it\'s"}', 'x{a="a\\\\b", b="c"}', 'x{a=`raw`, b="c"}'):
        assert packed(text) == text
    assert packed('x{a="^v$", b="c, d"}') == "x{a='^v$',b='c, d'}"  # a `$` ending a regex is no variable

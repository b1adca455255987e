"""Every value gpudash writes into PromQL reads back, through the PromQL parser, as the value itself."""

from __future__ import annotations

import re

import promql_parser
import pytest

from generator.promql_text import STRING_LITERAL, matcher, one_of, packed, quoted

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


# packed: a panel's PromQL in fewer bytes where kubectl writes it as JSON inside JSON, the same query to Prometheus:
# every string single-quoted, a Grafana variable's too

@pytest.mark.parametrize("variable", ["$node", "${node}", "${node:regex}", "[[node]]", "$__interval"])
def test_a_string_holding_a_grafana_variable_is_single_quoted(variable):
    assert packed(f'sum by (a, b) (x{{node=~"{variable}", pod!=""}})') == \
        f"sum by(a,b)(x{{node=~'{variable}',pod!=''}})"


@pytest.mark.parametrize("value", VALUES + ["it's", "a'b\"c\\d", "'", '"', "\\'"])
@pytest.mark.parametrize("written", ["double", "raw"])
def test_every_string_is_single_quoted_and_reads_back_its_value(value, written):
    """A string's value as Prometheus' parser reads it is the same single-quoted as written: a double quote plain, a
    single quote and a backslash escaped, a line break or another control character an escape (a raw string, which
    takes no escapes, rewritten as the same value)."""
    if written == "raw" and ("`" in value or "\n" in value):
        pytest.skip("a raw string holds neither a backtick nor a line break")
    literal = quoted(value) if written == "double" else f"`{value}`"
    text = packed(f"up{{a={literal}, b=~{literal}}} or on (a) vector(1)")
    assert [s[0] for s in STRING_LITERAL.findall(text)] == ["'", "'"]
    parsed = promql_parser.parse(text).lhs
    assert [(m.name, m.value) for m in parsed.matchers.matchers] == [("a", value), ("b", value)]


@pytest.mark.parametrize("variable", ["$node", "${node}", "${node:regex}", "[[node]]"])
def test_a_string_holding_a_free_text_variable_keeps_its_double_quotes(variable):
    """Grafana escapes a picked value for a double-quoted string: a variable whose values may hold a quote (the node's,
    from a Hostname or instance label) keeps its string double-quoted, the others' are single-quoted."""
    text = f'x{{node=~"{variable}", h=~"a|{variable}", gpu=~"$gpu", n=~"$nodes", raw="v"}}'
    assert packed(text, ("node",)) == f"x{{node=~\"{variable}\",h=~\"a|{variable}\",gpu=~'$gpu',n=~'$nodes',raw='v'}}"


def test_quotes_and_comments_outside_strings_are_kept():
    assert packed('x{a="^v$", b="c, d"}') == "x{a='^v$',b='c, d'}"  # a `$` ending a regex is no variable
    assert packed('x{a="it\'s"} # a "comment", kept\n or y') == "x{a='it\\'s'} # a \"comment\", kept\n or y"


def _panel_texts(monkeypatch, settings, pack) -> list[str]:
    """Every panel query's PromQL of the build of `settings` (None: the bundled), and every query_result variable's,
    written packed or as rendered."""
    from generator.artifacts import grafana_dashboards
    from generator.project import load_project

    with monkeypatch.context() as patched:
        # none cut into parts (dashboard_parts), each with the variables again: unpacked, the bundled all-metrics
        # dashboard passes what a ConfigMap takes, packed it does not; the same dashboards are compared
        patched.setattr("generator.dashboard_parts.PART_BYTES", 10**9)
        if not pack:
            patched.setattr("generator.render.grafana.packed", lambda text, *free_text: text)
        project = load_project(settings)  # its own settings object: the render's answers are kept per settings
        models = [d.model for d in grafana_dashboards(project)]
    variables = [re.fullmatch(r"query_result\((.*)\)", v["query"])[1] for m in models
                 for v in m["templating"]["list"] if str(v.get("query")).startswith("query_result(")]
    assert variables
    return [t["expr"] for m in models for row in m["panels"] for p in (row, *row.get("panels", []))
            for t in p.get("targets", [])] + variables


@pytest.mark.parametrize("settings", [None, "multi-region.yaml"], ids=["bundled", "multi-region"])
def test_every_packed_panel_query_is_the_query_as_rendered(monkeypatch, settings):
    """packed writes a panel's PromQL in fewer bytes (single-quoted strings, no space beside a parenthesis, bracket
    or comma where the lexer needs none): 2,814 bytes of the multi-region all-metrics dashboard's ConfigMap, whose
    annotation had 920 of kubectl's 262,144 left. Every query of the bundled and multi-region builds parses to the
    same expression packed as rendered (the parser's own printing of both, Grafana's variables replaced as lint
    replaces them), so no panel reads another value; so does every query_result variable's PromQL (3.6 KB more: the
    node variable's is 19 KB on a shared Prometheus, in every dashboard)."""
    from pathlib import Path

    from generator.lint.promql_checks import _candidates
    from generator.render.grafana import FREE_TEXT_VARIABLES

    folder = Path(__file__).resolve().parents[1] / "golden" / "builds"
    path = folder / settings if settings else None
    written, rendered = (_panel_texts(monkeypatch, path, pack) for pack in (True, False))
    assert len(written) == len(rendered) > 50 and sum(map(len, written)) < sum(map(len, rendered))
    for text, as_rendered in zip(written, rendered):
        assert text == packed(as_rendered, FREE_TEXT_VARIABLES)
        if text != as_rendered:
            (sent,), (sent_rendered,) = _candidates(text, False), _candidates(as_rendered, False)
            assert promql_parser.parse(sent).prettify() == promql_parser.parse(sent_rendered).prettify(), as_rendered

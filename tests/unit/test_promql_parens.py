"""promql_parens.fewest_parens leaves out only the parentheses the expression tree does not need: every panel query
gpudash writes (the bundled dashboards under several settings) parses, with promql_parser, to the same tree before
and after once parentheses are skipped; and the pairs the grammar needs (a looser operator inside a tighter one, the
right operand of a left-associative operator, `^`, a sign, a subquery's or offset's operand, a string) are kept."""

from __future__ import annotations

import re
from pathlib import Path

import promql_parser
import pytest

from generator import build_memo
from generator.artifacts import grafana_dashboards
from generator.project import load_project
from generator.promql_parens import fewest_parens
from generator.render import grafana

SETTINGS = {
    "defaults": "",
    "virtual_gpus": "exporter:\n  virtual_gpus: true\n",
    "shared Prometheus": (Path(__file__).parents[1] / "golden" / "builds" / "multi-region.yaml"),
}
_ATTRIBUTES = ("op", "modifier", "func", "grouping", "without", "range", "step", "offset", "at", "return_bool")
_CHILDREN = ("expr", "lhs", "rhs", "param", "args")


def _children(node) -> list:
    found = []
    for name in _CHILDREN:
        value = getattr(node, name, None)
        if isinstance(value, (list, tuple)):
            found += [v for v in value if v is not None and not isinstance(v, (str, int, float))]
        elif value is not None and not isinstance(value, (str, int, float)):
            found.append(value)
    return found


def _unwrapped(node):
    while isinstance(node, promql_parser.ParenExpr):
        node = node.expr
    return node


def _difference(a, b, where: str = "") -> str | None:
    """Where the trees `a` and `b` differ once parentheses are skipped, or None."""
    a, b = _unwrapped(a), _unwrapped(b)
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} for {type(b).__name__}"
    left, right = _children(a), _children(b)
    if not left and not right:
        return None if str(a) == str(b) else f"{where}: {b} for {a}"
    if len(left) != len(right):
        return f"{where}: {len(right)} operands for {len(left)}"
    for name in _ATTRIBUTES:
        if str(getattr(a, name, None)) != str(getattr(b, name, None)):
            return f"{where}: {name} {getattr(b, name, None)} for {getattr(a, name, None)}"
    return next(filter(None, (_difference(x, y, f"{where}/{type(a).__name__}[{i}]")
                              for i, (x, y) in enumerate(zip(left, right)))), None)


def _parsed(text: str):
    """`text` parsed, Grafana's macros given values (a duration wherever one is not a number)."""
    for macro, value in (("${__range_ms}", "3600000"), ("${__range_s}", "3600"), ("$__range_s", "3600")):
        text = text.replace(macro, value)
    return promql_parser.parse(re.sub(r"\$\{?__[a-z_]+\}?", "1m", text))


def _written(settings, tmp_path: Path, monkeypatch) -> list[tuple[str, str]]:
    """(as built, as written) of every query of the bundled dashboards under `settings` (a text or a file)."""
    path = settings if isinstance(settings, Path) else tmp_path / "gpudash.yaml"
    if not isinstance(settings, Path):
        path.write_text(settings)
    pairs: list[tuple[str, str]] = []

    def recorded(text: str) -> str:
        pairs.append((text, fewest_parens(text)))
        return pairs[-1][1]

    monkeypatch.setattr(grafana, "fewest_parens", recorded)
    monkeypatch.setattr(grafana, "_ANSWERS", build_memo.BuildMemo())
    grafana_dashboards(load_project(path))
    return pairs


@pytest.mark.parametrize("settings", SETTINGS.values(), ids=SETTINGS.keys())
def test_every_panel_query_reads_the_same_tree_with_fewer_parentheses(settings, tmp_path, monkeypatch):
    pairs = _written(settings, tmp_path, monkeypatch)
    assert len(pairs) >= 50
    differences = [(built[:80], d) for built, written in pairs
                   if (d := _difference(_parsed(built), _parsed(written))) is not None]
    assert differences == []
    dropped = sum(built.count("(") - written.count("(") for built, written in pairs)
    assert dropped > sum(built.count("(") for built, _ in pairs) // 10  # the pass does work (15 % of every "(")


@pytest.mark.parametrize("text, written", [
    ("(a - b) - c", "a - b - c"),
    ("(a * b) + c", "a * b + c"),
    ("sum by (pod) ((rate(x[5m])))", "sum by (pod) (rate(x[5m]))"),
    ("((a))", "a"),
    ("(a and b) or c", "a and b or c"),
    ('x{l="(("} + (y)', 'x{l="(("} + y'),
    ("max(a) by (node) * on (node) group_left (pod) (b)", "max(a) by (node) * on (node) group_left (pod) b"),
])
def test_a_pair_the_tree_does_not_need_is_left_out(text, written):
    assert fewest_parens(text) == written
    assert _difference(_parsed(text), _parsed(written)) is None


@pytest.mark.parametrize("text", [
    "(a or b) unless c",
    "a - (b - c)",
    "a / (b * c)",
    "(a + b) * c",
    "(a ^ b) ^ c",
    "-(a + b)",
    "(a + b)[5m:30s]",
    "(a + b) offset 5m",
    "a > bool (b > bool c)",
    "(a > b) > c",
    'x{l="(a)"}',
])
def test_a_pair_the_grammar_needs_is_kept(text):
    assert fewest_parens(text) == text


def test_a_selector_read_as_one_token_leaves_the_pairs_read_token_by_token_would():
    """TOKENS reads a selector's braces whole (`{a=~"(b|c)", d!=""}`, when no bracket stands in them outside a
    string): the parentheses left out are those a reading of every token inside them leaves out, on random texts of
    brackets, braces, strings holding brackets and quotes, operators and words (and the same failure on those whose
    brackets do not pair)."""
    import random

    from generator import promql_parens

    token_by_token = re.compile(
        f"({promql_parens.STRING_LITERAL.pattern}|==|!=|<=|>=|=~|!~|[-+*/%^<>=(){{}}\\[\\],:@]|[A-Za-z_][A-Za-z0-9_:]*|"
        r"[0-9][0-9.]*(?:[eE][+-]?[0-9]+)?[a-zA-Z0-9.]*)")

    def left(tokens, text):
        held = promql_parens.TOKENS
        promql_parens.TOKENS = tokens
        try:
            return promql_parens.fewest_parens.__wrapped__(text)
        except Exception as exc:  # noqa: BLE001 - brackets that do not pair fail alike
            return type(exc)
        finally:
            promql_parens.TOKENS = held

    parts = ["(", ")", "{", "}", "[", "]", ",", "sum", "by", "on", "group_left", "x", "or", "unless", "bool",
             "offset", "+", "-", "*", "^", "==", ">", "=~", "=", '"x"', '"("', '"}"', '"\\""', "'a)'", "`b`", "5m",
             "@", "$v", " ", "  ", '"', "'"]
    choose = random.Random(13).choice
    for _ in range(20_000):
        text = "".join(choose(parts) for _ in range(choose(range(19))))
        assert left(promql_parens.TOKENS, text) == left(token_by_token, text), text

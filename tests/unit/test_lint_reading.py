"""lint reads a query's selectors from promql_parser's tree of the query with each label's regex matcher written as an
equality matcher of the same emptiness (`gpu=~".*"` as `gpu=""`): promql_parser compiles every regex matcher it
parses, most of the cost of reading a dashboard's step-reading queries (thousands of matchers, a few regexes). The
tree is the same but for those matchers' operators and values, and so is the verdict: each regex is judged once on
its own, and the parser refuses a selector all of whose matchers match the empty value either way. These tests hold
the reading to the whole parse (the query as written, regexes and all, every node visited with its whole path):
the same selectors with the same context, the same refusals with the same messages.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.lint.promql_checks import (
    _as_promql_parser_reads,
    _walked_selectors,
    check_parses,
    parse,
    query_selectors,
)

# Regexes that match the empty value and ones that do not, a variable (a word once Grafana's is replaced); rarely, one
# Prometheus refuses (RE2: a Perl flag; Rust and Go alike: an unclosed group).
REGEXES = (".*", ".+", "", "a|", "(?i)", "(?i)x", "[0-9]+", "$gpu", "a|b", ".*x.*")
REFUSED = ("(?x)a", "(a")
LABELS = ("gpu", "node", "pod", "Hostname")


@st.composite
def selector(draw) -> str:
    name = draw(st.sampled_from(("", "", "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "x")))
    matchers = draw(st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(("=", "!=", "=~", "!~", "=~", "!~")),
                                       st.sampled_from(REGEXES), st.sampled_from(("", " "))), max_size=3))
    rare = draw(st.integers(0, 99))
    if rare == 99:
        matchers.append(("__name__", draw(st.sampled_from(("=", "=~"))), "x.*", ""))
    elif rare == 98:
        matchers.append((draw(st.sampled_from(LABELS)), "=~", draw(st.sampled_from(REFUSED)), ""))
    inside = ", ".join(f"{label}{space}{op}{space}\"{value}\"" for label, op, value, space in matchers)
    return f"{name}{{{inside}}}" if inside or not name else name


def _compound(inner):
    """Forms lint's context rules read (sums of deltas, step readings, guards, counts, `and`/`unless`)."""
    return st.one_of(
        st.tuples(inner, st.sampled_from((" or ", " and ", " unless ", " or on (gpu) ")), inner).map("".join),
        inner.map(lambda e: f"({e})"),
        inner.map(lambda e: f"{e} < 1e14"),
        inner.map(lambda e: f"{e} * 100"),
        st.tuples(st.sampled_from(("sum by (gpu) ", "count ", "max by (gpu, node) ", "group ",
                                   "sum without (gpudash_part) ")), inner).map(lambda t: f"{t[0]}({t[1]})"),
        inner.map(lambda e: f'label_join({e}, "gpudash_gpu", ";", "UUID", "node")'),
        inner.map(lambda e: f"max_over_time(({e})[5m:30s])"),
        inner.map(lambda e: f"timestamp({e})"),
        inner.map(lambda e: f"absent({e})"),
        st.tuples(selector(), inner).map(
            lambda t: f"sum_over_time(((idelta(last_over_time({t[0]}[1m])[1m:30s]) >= 0) or {t[1]})[5m:30s])"),
        st.tuples(inner, selector()).map(lambda t: f"{t[0]} and (present_over_time({t[1]}[30s]) or {t[1]})"),
    )


def _leaf():
    return st.one_of(
        selector(),
        st.tuples(st.sampled_from(("rate", "present_over_time", "max_over_time", "increase")), selector(),
                  st.sampled_from(("5m", "$__rate_interval", "${__range_ms}ms"))).map(
            lambda t: f"{t[0]}({t[1]}[{t[2]}])"),
    )


QUERIES = st.recursive(_leaf(), _compound, max_leaves=12)


def _whole(expr: str):
    """The selectors (metric, labels, function, shown) of the query parsed whole, or the parser's message."""
    try:
        return [(s.metric, s.labels, s.range_function, s.shown) for s in _walked_selectors(parse(expr))]
    except ValueError as exc:
        return str(exc)


def _read(expr: str):
    try:
        return [(s.metric, s.labels, s.range_function, s.shown) for s in query_selectors(expr)]
    except ValueError as exc:
        return str(exc)


def _verdict(expr: str) -> str | None:
    try:
        check_parses(expr)
    except ValueError as exc:
        return str(exc)
    return None


@settings(max_examples=300, deadline=None)
@given(QUERIES)
def test_the_selectors_read_are_those_of_the_whole_parse(expr):
    whole = _whole(expr)
    assert _read(expr) == whole
    assert _verdict(expr) == (whole if isinstance(whole, str) else None)


@pytest.mark.parametrize("expr", [
    '{gpu=~".*"}',  # every matcher matches the empty value: refused
    '{gpu=~".+"}',
    '{gpu!~".*"}',
    '{gpu!~".+"}',
    '{gpu=~"a|", node=~"(?i)"}',
    '{gpu=~"$gpu"}',
    'x !=~ "a"',  # not a matcher: refused, though `x != "a"`...
    'x=~"a"',
    'x{__name__=~"y"}',  # the name set twice: refused
    '{__name__=~"DCGM_.*"}',
    '{__name__="x", gpu=~".*"}',
    'x{gpu=~"(?x)a"}',  # a Perl flag RE2 refuses
    'x{gpu=~"\\\\d+"}',
    'x{gpu=~"\\d+"}',  # an escape Prometheus does not know
    'x{gpu=~`\\d+`}',
    "x{gpu=~'.*'} or y{node =~ \".+\"} unless z{pod!~\"\"}",
    'label_replace(x{gpu=~".*"}, "a", "=~\\"b\\"", "gpu", "(.*)")',
])
def test_a_regex_matcher_reads_and_is_judged_as_in_the_whole_parse(expr):
    whole = _whole(expr)
    assert _read(expr) == whole
    assert _verdict(expr) == (whole if isinstance(whole, str) else None)


def test_no_regex_matcher_is_left_for_the_parser_to_compile():
    """What the reading saves: a matcher's regex is compiled once per distinct regex, not once per matcher."""
    text = _as_promql_parser_reads('sum(x{gpu=~".*", node !~ "a|b"} or y{pod=~"p.+"})', plain=True)
    assert "~" not in text and text == 'sum(x{gpu="", node != "_"} or y{pod="_"})'


def test_a_window_tested_for_a_reading_or_a_blank_is_no_chart_of_the_counter():
    """`count(min_over_time(x[w]) < 9e18)` (a reading in the window: a count of GPUs reporting a field over an alert's
    period, promql.counted) and `... < bool 9e18` test the counter's samples; the function alone charts them, and so
    does the comparison without `bool`, which answers with the readings it keeps (it was read as a test)."""
    counter = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
    for function in ("min_over_time", "max_over_time"):
        (tested,) = query_selectors(f"count({function}({counter}[5m] offset 5m) < 9e18)")
        (flagged,) = query_selectors(f"{function}({counter}[5m]) < bool 9e18")
        (charted,) = query_selectors(f"{function}({counter}[5m])")
        assert (tested.shown, flagged.range_function, charted.range_function) == (False, "compare", function)
        assert [(s.range_function, s.shown) for s in _walked_selectors(parse(f"{function}({counter}[5m]) < 9e18"))] \
            == [(function, True)]

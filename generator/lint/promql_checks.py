"""PromQL inspection for lint: parse (after Grafana macros), list selectors with their context."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import lru_cache

from ..blanks import reading_floor, short
from ..promql_text import STRING_LITERAL, double_quoted
from ..go_regex import newer_syntax, re2_judged, regex_problem

# Every form of a Grafana variable that Grafana replaces before it sends a query: $name, ${name}, ${name:format},
# ${name.field:format}, [[name]], [[name:format]] (Grafana's own pattern). Grafana's global variables are replaced by
# a value of their kind (a duration, a number); another variable, whose value is the dashboard's, by a word inside a
# string and, outside one, by whichever of a name, a number or a duration lets the query parse (its value decides).
_REFERENCE = re.compile(r"\$(\w+)|\[\[(\w+?)(?::\w+)?\]\]|\$\{(\w+)(?:\.[^:^}]+)?(?::[^}]+)?\}")
_GLOBALS = {"__interval": "5m", "__rate_interval": "5m", "__range": "5m",
            "__interval_ms": "300000", "__range_ms": "300000", "__range_s": "300",
            "__from": "1700000000", "__to": "1700000000"}  # any format of __from/__to a query can hold is a number
_UNKNOWN = ("gpudash_variable", "1", "5m")  # what another variable outside a string may stand for
COUNTER_FUNCTIONS = {"rate", "irate", "increase", "resets", "compare"}


def _substituted(expr: str, unknown: str | None) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2) or match.group(3)
        return _GLOBALS.get(name, match.group() if unknown is None else unknown)

    pieces = _STRINGS_APART.split(expr)  # the text outside strings at even places, the strings at odd ones
    for at in range(0, len(pieces), 2):
        if "$" in pieces[at] or "[[" in pieces[at]:
            pieces[at] = _REFERENCE.sub(replace, pieces[at])
    pieces[1::2] = map(_in_string, pieces[1::2])
    return "".join(pieces)


_STRINGS_APART = re.compile(f"({STRING_LITERAL.pattern})")


@lru_cache(maxsize=4096)
def _in_string(string: str) -> str:
    """A string literal with each variable in it replaced by a word (a global one by its value). A dashboard's query
    holds thousands of strings, a few distinct ones."""
    if "$" not in string and "[[" not in string:
        return string
    return _REFERENCE.sub(lambda m: _GLOBALS.get(m.group(1) or m.group(2) or m.group(3), "gpudash_variable"), string)


def _candidates(expr: str, any_variable: bool) -> list[str]:
    """The texts `expr` may be sent as, Grafana's global variables replaced: another variable outside a string is
    left as it is (lint: the dashboard's own are already replaced by their defaults, so such a one is undefined and
    sent as written), or, with `any_variable` (a definition's raw_promql, whose variables' values are not known),
    replaced by each kind of value it may have."""
    if "$" not in expr and "[[" not in expr:
        return [expr]
    texts = [_substituted(expr, unknown) for unknown in (_UNKNOWN if any_variable else (None,))]
    return [text for k, text in enumerate(texts) if text not in texts[:k]]


@dataclass(frozen=True)
class Selector:
    metric: str | None
    labels: tuple[str, ...]  # label names in the matchers
    range_function: str | None  # the function applied to its range, if any
    shown: bool = True  # whether its readings reach the query's answer (_unread: not where only its series count)
    # the counter function (rate, increase ...; idelta where a sum of step deltas reads it) taking a subquery's range
    # over an aggregation across GPUs above it, if any (a rate that reads no counter: one GPU leaving reads as a reset,
    # another's growth as its own), and that aggregation (max, sum ...)
    rated_across: str | None = None
    across: str | None = None
    # the labels beside `gpu` of each aggregation between the selector and the counter function reading it (its
    # rate, or the sum of its deltas) that keeps GPUs apart by `gpu` and those labels alone: one GPU's copies merged
    # only where one of them holds the GPU's node (GF006 judges them by the settings)
    node_labels: tuple[frozenset[str], ...] = ()
    steps: bool = False  # read by a sum of idelta() steps (range_function "increase": what that sum stands for)


def parse(expr: str, any_variable: bool = False):
    """The parsed AST, or raises ValueError with the parser's message."""
    import promql_parser

    return _first_that_parses(_candidates(expr, any_variable),
                              lambda text: promql_parser.parse(_as_promql_parser_reads(text)))


def _parse_plain(expr: str):
    """parse's tree but for each regex matcher's operator and value (read as `plain` equality matchers: see
    _as_promql_parser_reads), or parse's ValueError: what query_selectors reads, at a fraction of the cost."""
    return _first_that_parses(_candidates(expr, False), lambda text: _plain_first(text, _promql_parser_parse))


def _promql_parser_parse(text: str):
    import promql_parser

    return promql_parser.parse(text)


def _plain_first(text: str, parse_one):
    """parse_one of `text` as promql_parser reads it with plain matchers; where that fails, of the text as it reads
    it (whose message is the one to give)."""
    try:
        plain = _as_promql_parser_reads(text, plain=True)
    except ValueError:
        plain = None
    if plain is not None:
        try:
            return parse_one(plain)
        except ValueError:
            pass
    return parse_one(_as_promql_parser_reads(text))


def _first_that_parses(texts: list[str], parse_one):
    """parse_one's result for the first of `texts` it parses; or the first text's ValueError."""
    error: ValueError | None = None
    for text in texts:
        try:
            return parse_one(text)
        except ValueError as exc:
            error = error or exc
    raise error  # type: ignore[misc]


def selectors(ast) -> list[Selector]:
    """Every selector of a parsed query, in the order of the text, with what is around it (see _walked_selectors,
    which says the same by visiting each node with the whole path above it: this one carries down what the path
    says, and judges where the range of a selector is taken only where no sum of deltas above it said already)."""
    import promql_parser

    found: list[Selector] = []
    kinds = _children_of_each_kind()
    if not _read_selectors(ast, [], found, _NOT_SUMMED, False, kinds, promql_parser.VectorSelector, {}):
        return _walked_selectors(ast)  # a kind of node not known here
    return found


# What the path above a node says of a sum of a counter's deltas: (whether an ancestor adds up the deltas its subtree
# reads, the aggregation across GPUs between that sum and the node, if any), and the labels beside `gpu` of each
# aggregation since the nearest counter function (Selector.node_labels)
_NOT_SUMMED: tuple[bool, str | None, tuple[frozenset[str], ...]] = (False, None, ())
_READS_STEPS = COUNTER_FUNCTIONS | {"idelta"}


def _summed_state(node, state: tuple, outer: dict) -> tuple:
    """The state (_NOT_SUMMED's form) below `node`, given the state above it. `outer` maps each part of a sum of deltas
    that reads no delta (the right of an `or` that is no difference of readings) to the state above that sum, and is
    filled here as such sums are met."""
    import promql_parser

    summed, across, beside = outer.get(id(node), state)
    if summed and across is None:
        across = _merges_apart(node)
    rest = _delta_chain(node)
    if rest is not None:
        for part in rest:
            outer[id(part)] = (summed, across, beside)
        return True, across, ()
    if isinstance(node, promql_parser.Call) and node.func.name in _READS_STEPS:
        beside = ()
    elif isinstance(node, promql_parser.AggregateExpr):
        others = _beside_gpu(node)
        beside = beside + (others,) if others else beside
    return (True if _range_parts(node) else summed), across, beside


def _selector_read(node, stack: list, state: tuple, outer: dict, shown: bool) -> Selector:
    summed, across, beside = outer.get(id(node), state)
    labels = tuple(m.name for m in node.matchers.matchers)
    if summed and across is not None:
        return Selector(node.name, labels, None, shown, "idelta", across)
    function = "increase" if summed else _range_function(stack)
    rated, across = _rated_across(stack) if function is None else (None, None)
    return Selector(node.name, labels, function, shown, rated, across, beside, steps=summed)


def _read_selectors(node, stack: list, found: list[Selector], state: tuple, unread: bool,
                    kinds: dict, vector_selector: type, outer: dict) -> bool:
    """Adds the selectors at and below `node` (below `stack`, its ancestors) to `found`: `state`, what the ancestors
    say of a sum of a counter's deltas (_summed_state); `unread`, whether an ancestor keeps its readings from the
    answer (_unread). False where a node is of a kind not known here."""
    kind = type(node)
    if kind is vector_selector:
        found.append(_selector_read(node, stack, state, outer, not unread))
        return True
    children = kinds.get(kind)
    if children is None:
        return False
    stack.append(node)
    state = _summed_state(node, state, outer)
    for child in children(node):
        if not _read_selectors(child, stack, found, state, unread or _hides(node, child), kinds, vector_selector,
                               outer):
            return False
    stack.pop()
    return True


def _range_function(stack: list) -> str | None:
    """The function a selector below `stack` (its ancestors) is read through, no sum of deltas above it."""
    import promql_parser

    ranged = _ranged(stack)
    if ranged is not None and stack[ranged].func.name in ("present_over_time", "count_over_time"):
        return "compare"  # promql.taken_within, _present: whether (how often) a sample was taken, not a chart of x
    if ranged is not None:
        function = stack[ranged].func.name
        if function in ("max_over_time", "min_over_time") and ranged >= 1 and _guard(stack[ranged - 1], flag=True):
            # `max_over_time(x[w]) < bool 9e18`: no blank in the window; `min_over_time(x[w]) < bool 9e18`: a reading
            # in it: not a chart of x (without `bool` the comparison answers with the readings it keeps: a chart of
            # them, unless a count or `and` reads only its series, _unread)
            return "compare"
        return function
    if stack and _guard(stack[-1], flag=True):
        return "compare"  # `x < bool 1e14`: 1 or 0, not a chart of x (`x < 1e14` answers with x's readings)
    if stack and isinstance(stack[-1], promql_parser.Call) and stack[-1].func.name == "timestamp":
        return "compare"  # `timestamp(x) > time() - 30`: when a sample was taken, not a chart of x
    return None


def _walked_selectors(ast) -> list[Selector]:
    """selectors' answer by visiting each node (walk) with the whole path above it: for a tree holding a kind of
    node selectors does not know (walk leaves it to promql_parser)."""
    import promql_parser

    found: list[Selector] = []
    stack: list[object] = []
    states: list[tuple] = [_NOT_SUMMED]  # below each node on `stack` (_summed_state), the root's first
    outer: dict = {}

    def pre(node):
        if isinstance(node, promql_parser.VectorSelector):
            found.append(_selector_read(node, stack, states[-1], outer, not _unread(stack + [node])))
        stack.append(node)
        states.append(_summed_state(node, states[-1], outer))

    def post(node):
        stack.pop()
        states.pop()

    walk(ast, pre, post)
    return found


# What answers with its operand's series and never its readings: how many series there are (`count(x)`,
# `count_over_time(x[w])`), that there are some or none (`group(x)`, `absent(x)`), when their samples were taken.
_SERIES_ONLY_AGGREGATIONS = {"count", "group"}
_SERIES_ONLY_CALLS = {"absent", "absent_over_time", "count_over_time", "present_over_time", "timestamp"}


def _unread(path: list) -> bool:
    """Whether the readings of the node at the end of `path` (its ancestors from the root, then itself) never reach
    the query's answer: below a count or a presence test, or on the right of `and`/`unless` (which keep the left
    side's readings where the right side has series)."""
    return any(_hides(above, below) for above, below in zip(path, path[1:]))


def _hides(above, below) -> bool:
    """Whether `above` keeps the readings of its child `below` from its answer (_unread)."""
    import promql_parser

    if isinstance(above, promql_parser.AggregateExpr) and str(above.op) in _SERIES_ONLY_AGGREGATIONS \
            and below is above.expr:
        return True
    if isinstance(above, promql_parser.Call) and above.func.name in _SERIES_ONLY_CALLS:
        return True
    return isinstance(above, promql_parser.BinaryExpr) and str(above.op) in ("and", "unless") and below is above.rhs


def walk(node, pre, post) -> None:
    """promql_parser.walk's visit (pre(node), its children in order, post(node)), in Python: promql_parser's own
    walk copies each node's whole subtree for every node it visits, so a step-reading query of a few thousand
    characters took tens of milliseconds (most of `gpudash lint`'s CPU). Reading each node's children by their
    attributes visits the same nodes in the same order; a node of a kind not listed here is walked by promql_parser."""
    import promql_parser

    children = _children_of_each_kind().get(type(node))
    if children is None:
        promql_parser.walk(node, pre, post)
        return
    pre(node)
    for child in children(node):
        walk(child, pre, post)
    post(node)


@lru_cache(maxsize=None)
def _children_of_each_kind() -> dict:
    import promql_parser as p

    none = lambda node: ()  # noqa: E731
    return {p.AggregateExpr: lambda node: tuple(c for c in (node.param, node.expr) if c is not None),
            p.BinaryExpr: lambda node: (node.lhs, node.rhs), p.Call: lambda node: tuple(node.args),
            p.MatrixSelector: lambda node: (node.vector_selector,), p.ParenExpr: lambda node: (node.expr,),
            p.SubqueryExpr: lambda node: (node.expr,), p.UnaryExpr: lambda node: (node.expr,),
            p.VectorSelector: none, p.NumberLiteral: none, p.StringLiteral: none}


def _ranged(stack: list) -> int | None:
    """Where in `stack` (the ancestors of a selector) the function that takes its range is: the call above
    `x[w]`, or above a subquery `(max by (...) ((x and present_over_time(x[...]) or ...)))[w:step]` whose inner query
    takes one reading of x's copies at each step (promql.fresh_reading; the scope's node branches joined with
    `or`, the node coalesced inside with label_join and label_replace)."""
    import promql_parser

    if len(stack) >= 2 and isinstance(stack[-1], promql_parser.MatrixSelector) \
            and isinstance(stack[-2], promql_parser.Call):
        if stack[-2].func.name == "last_over_time":  # a step's latest reading held: read as its subquery's function
            above = _subquery_call(stack, len(stack) - 3)
            if above is not None and stack[above].func.name in COUNTER_FUNCTIONS:
                return above
        return len(stack) - 2
    return _subquery_call(stack, len(stack) - 1)


def _delta_chain(node) -> list | None:
    """Of `sum_over_time(((idelta(last_over_time(r[...])[step:step]) >= 0) or own)[w:step])`, a counter's increase as
    promql.summed_deltas writes it (each step's reading less the one before it, or the copies' own deltas where it
    went down): the parts of its subquery that read no delta (the right of an `or` that is no difference of a reading
    and an earlier one), whose selectors are judged as if no sum stood above them; None for any other node."""
    import promql_parser

    if not (isinstance(node, promql_parser.Call) and node.func.name == "sum_over_time" and node.args
            and isinstance(node.args[0], promql_parser.SubqueryExpr)):
        return None
    inner = _unwrapped(node.args[0].expr)
    # `and` (an alert's period: steps with a reading), `unless` (promql.range_increase's first step), `or` (the
    # copies' own deltas where the merged reading went down), `>= 0`: the delta is the left side's; the delta floored
    # at 0 (`idelta(...) >= 0`, `0 <= idelta(...)`, `(idelta(...) or own) >= 0`; not `>= bool 0`, whose 1 or 0
    # counts steps): a reset's negative
    # delta is not added (the copies' own deltas count it); without it the sum adds a drop of the counter, and it is
    # no increase
    floored, rest = False, []
    while isinstance(inner, promql_parser.BinaryExpr) and str(inner.op) in ("and", "unless", "or", ">=", "<="):
        op = str(inner.op)
        if op in (">=", "<="):
            floor, kept = (inner.rhs, inner.lhs) if op == ">=" else (inner.lhs, inner.rhs)
            floored = _is_zero(_unwrapped(floor)) and not (inner.modifier is not None and inner.modifier.return_bool)
            if not floored:
                return None
            inner = _unwrapped(kept)
            continue
        if op == "or" and not _is_difference(inner.rhs, floored):
            rest.append(inner.rhs)
        inner = _unwrapped(inner.lhs)
    if (floored and isinstance(inner, promql_parser.Call) and inner.func.name == "idelta" and bool(inner.args)
            and isinstance(inner.args[0], promql_parser.SubqueryExpr)):
        return rest
    return None


def _is_difference(node, floored: bool = False) -> bool:
    """Whether `node` is, but for merging copies, relabelling, a comparison with a number and the steps it is kept at
    (`and`, `unless`), a reading less an earlier reading (the right side reads a time before the left's) that is
    never negative: floored at 0 (`>= 0` above it, or `floored` where one stands above the `or` it is the right of), or
    less the earlier reading only where that is not above it (promql.own_deltas: `x - (last_over_time(x[w] offset s) <=
    x or ... * 0)`: a reset counts the reading itself). A negative delta would be added as a drop of the counter."""
    import promql_parser

    node = _unwrapped(node)
    while True:
        if isinstance(node, promql_parser.AggregateExpr) and node.param is None:
            node = _unwrapped(node.expr)
        elif isinstance(node, promql_parser.Call) and node.func.name in ("label_join", "label_replace") and node.args:
            node = _unwrapped(node.args[0])
        elif isinstance(node, promql_parser.BinaryExpr) and (str(node.op) in ("and", "unless") or _guard(node)):
            floored = floored or _is_floor(node)
            node = _unwrapped(node.lhs)
        else:
            break
    if not (isinstance(node, promql_parser.BinaryExpr) and str(node.op) == "-" and _reads_earlier(node.rhs)):
        return False
    earlier = _unwrapped(node.rhs)
    kept_below = (isinstance(earlier, promql_parser.BinaryExpr) and str(earlier.op) == "or"
                  and _is_filter(_unwrapped(earlier.lhs), "<="))
    return floored or kept_below


def _is_floor(node) -> bool:
    """`x >= 0` (no `bool`): x where it is not negative."""
    return _is_filter(node, ">=") and _is_zero(_unwrapped(node.rhs))


def _is_filter(node, op: str) -> bool:
    """A comparison `op` without `bool`: it keeps the left side's readings where it holds."""
    import promql_parser

    return (isinstance(node, promql_parser.BinaryExpr) and str(node.op) == op
            and not (node.modifier is not None and node.modifier.return_bool))


def _reads_earlier(node) -> bool:
    """Whether a selector or subquery at or below `node` is read at an offset back in time."""
    found: list[bool] = []

    def pre(each) -> None:
        offset = getattr(each, "offset", None)
        if offset is not None and offset.total_seconds() > 0:
            found.append(True)

    walk(node, pre, lambda each: None)
    return bool(found)


def _merges_apart(node) -> str | None:
    """Of an aggregation whose readings reach its answer (not count, group) in a counter's subquery: what it merges
    otherwise than a max of one GPU's copies (`sum across GPUs`, `sum of one GPU's copies`), or None (no such
    aggregation). Across GPUs one leaving reads as a reset, another's growth as its own; one GPU's copies added,
    averaged or taken at their least read a copy leaving or coming as a reset or as growth: only their max is the
    GPU's reading (_keeps_one_gpu)."""
    import promql_parser

    if not isinstance(node, promql_parser.AggregateExpr) or str(node.op) in _SERIES_ONLY_AGGREGATIONS:
        return None
    if not _keeps_one_gpu(node):
        return f"{node.op} across GPUs"
    return None if str(node.op) == "max" else f"{node.op} of one GPU's copies"


def _is_zero(node) -> bool:
    import promql_parser

    return isinstance(node, promql_parser.NumberLiteral) and node.val == 0


def _range_parts(node) -> bool:
    """`sum without (gpudash_part) (...)`: promql.range_increase adding up the steps' deltas and the scrapes after the
    last step (each reading less the one before it), a counter's increase during the dashboard's range."""
    import promql_parser

    if not (isinstance(node, promql_parser.AggregateExpr) and str(node.op) == "sum" and node.modifier is not None):
        return False
    from ..promql import RANGE_PART

    return "Without" in str(node.modifier.type) and list(node.modifier.labels) == [RANGE_PART]


def _unwrapped(node):
    import promql_parser

    while isinstance(node, promql_parser.ParenExpr):
        node = node.expr
    return node


def _rated_across(stack: list) -> tuple[str | None, str | None]:
    """The counter function (COUNTER_FUNCTIONS) taking the range of a subquery above a selector (below `stack`) whose
    inner query would only merge copies of a step's reading but for an aggregation across GPUs (`rate(max(x)[5m:])`,
    `rate(sum(x)[5m:])`), and that aggregation; (None, None) where there is none."""
    at = _subquery_call(stack, len(stack) - 1, any_aggregation=True)
    function = stack[at].func.name if at is not None else None
    if function not in COUNTER_FUNCTIONS:
        return None, None
    return function, next(filter(None, map(_merges_apart, reversed(stack[at:]))))


def _subquery_call(stack: list, at: int, any_aggregation: bool = False) -> int | None:
    """The call taking the range of a subquery whose inner query, from stack[at] up, only merges copies of a step's
    reading (`any_aggregation`: or aggregates different GPUs' readings, where one such aggregation does)."""
    import promql_parser

    across = False
    while at >= 0 and (isinstance(stack[at], promql_parser.ParenExpr)
                       or isinstance(stack[at], promql_parser.AggregateExpr) and str(stack[at].op) == "max"
                       and _keeps_one_gpu(stack[at])
                       or any_aggregation and _merges_apart(stack[at]) is not None
                       or _guard(stack[at]) and not _guard(stack[at], flag=True)
                       or isinstance(stack[at], promql_parser.BinaryExpr) and str(stack[at].op) == "or"
                       or _is_step_reading(stack[at])
                       or _is_scaling(stack[at])
                       or isinstance(stack[at], promql_parser.Call)
                       and stack[at].func.name in ("label_join", "label_replace")):
        across = across or any_aggregation and _merges_apart(stack[at]) is not None
        at -= 1
    if at >= 1 and isinstance(stack[at], promql_parser.SubqueryExpr) \
            and isinstance(stack[at - 1], promql_parser.Call) and across == any_aggregation:
        return at - 1
    return None


# The labels that name one GPU alone (GPU_LABEL: its UUID or node spelling; the exporter's UUID), and those naming its node
# beside its index `gpu` (the node's spellings: node, Hostname, instance, kubernetes_node ...)
_GPU_NAMES = frozenset(("gpudash_gpu", "UUID", "uuid"))


def _keeps_one_gpu(node) -> bool:
    """Whether an aggregation in a subquery's inner query keeps one GPU's series apart (merging only the copies of its
    reading): grouped by a label naming one GPU, or by `gpu` beside another label (one that holds the GPU's node:
    _beside_gpu, which lint judges by the settings); `without` labels that drop none of them. One across different
    GPUs is no counter: one GPU leaving reads as a reset, another's growth as its own."""
    modifier = node.modifier
    if modifier is None:
        return False
    labels = set(modifier.labels)
    if "Without" in str(modifier.type):
        return not labels & (_GPU_NAMES | {"gpu"})
    return bool(labels & _GPU_NAMES) or "gpu" in labels and len(labels) > 1


def _beside_gpu(node) -> frozenset[str]:
    """The labels beside `gpu` of an aggregation `by (gpu, ...)` naming no label of one GPU alone (_GPU_NAMES): it
    keeps GPUs apart only where one of them holds the GPU's node (empty for any other aggregation)."""
    modifier = node.modifier
    if modifier is None or "Without" in str(modifier.type):
        return frozenset()
    labels = frozenset(modifier.labels)
    return labels - {"gpu"} if "gpu" in labels and not labels & _GPU_NAMES else frozenset()


def _is_scaling(node) -> bool:
    """`x * k` or `x / k` of a constant k (a reading scaled, e.g. a MIG stand-in's ratio as a percentage)."""
    import promql_parser

    return (isinstance(node, promql_parser.BinaryExpr) and str(node.op) in ("*", "/")
            and _is_constant(_unwrapped(node.rhs)))


def _is_constant(node) -> bool:
    import promql_parser

    if isinstance(node, promql_parser.BinaryExpr):
        return _is_constant(_unwrapped(node.lhs)) and _is_constant(_unwrapped(node.rhs))
    return isinstance(node, promql_parser.NumberLiteral)


def _is_step_reading(node) -> bool:
    """`x and (present_over_time(x[...]) or (...))` (promql.step_reading and taken_within): x's latest sample, kept
    when one was taken within the step."""
    import promql_parser

    if not isinstance(node, promql_parser.BinaryExpr) or str(node.op) != "and":
        return False
    kept = _unwrapped(node.rhs)
    if not isinstance(kept, promql_parser.BinaryExpr) or str(kept.op) != "or":
        return False
    first = _unwrapped(kept.lhs)
    return isinstance(first, promql_parser.Call) and first.func.name == "present_over_time"


def query_selectors(expr: str) -> tuple[Selector, ...]:
    """The selectors of a query, or ValueError with the parser's message. Each distinct text is parsed
    and walked once: several rules ask for the same queries, and dashboards repeat them."""
    found = _query_selectors(expr)
    if isinstance(found, str):
        raise ValueError(found)
    return found


def _query_selectors(expr: str) -> tuple[Selector, ...] | str:
    return _reading(expr)[0]


@lru_cache(maxsize=4096)
def _reading(expr: str) -> tuple[tuple[Selector, ...] | str, AnswerLabels | None]:
    """A query's selectors (or the parser's message) and its answer's labels (or None), from one parse of its text:
    the lint rules ask both of each of the dashboards' queries."""
    try:
        tree = _parse_plain(expr)
    except ValueError as exc:
        return str(exc), None
    return tuple(selectors(tree)), _labels_of(tree)


def range_windows(expr: str, scrape_seconds: int | None = None) -> list[str]:
    """The text inside every [...] range of an (unsubstituted) expression (not inside strings), but the ranges gpudash
    itself writes at the scrape interval `scrape_seconds` (promql.generated_windows): `present_over_time(x[...])`,
    `last_over_time(x[...])` and `count_over_time(x[...])` over one of those windows (promql.taken_within: whether a
    sample was taken within a step of the scrape interval; promql.label_lookback: whether a scrape within the per-pod
    panels' look-back named a pod; promql._present: how many samples its target's longest-lived copy has within it;
    promql._Device._read: a
    copy's latest reading within it; a counter's held reading and the reading before a gap),
    and `min_over_time(x[look-back]) < <a blank floor>` (promql.counted: a count's GPU with a reading, a sample under
    DCGM's blank floor, within the per-pod panels' look-back; `>=`: a MIG instance reading only the blank within it,
    _Merge.one_copy's late blank check). Any other window, comparison or function (a user's
    `present_over_time(x[1d])`) is a fixed range like any other; without `scrape_seconds` every range is."""
    return list(_range_windows(expr, scrape_seconds))


_FLOORS = {short(reading_floor(True)), short(reading_floor(False))}  # as promql writes them


@lru_cache(maxsize=4096)
def _range_windows(expr: str, scrape_seconds: int | None) -> tuple[str, ...]:
    """range_windows, worked out once per query text (a fleet's clusters repeat each query)."""
    from ..promql import generated_windows, label_lookback

    kept = generated_windows(scrape_seconds) if scrape_seconds else frozenset()
    lookback = label_lookback(scrape_seconds) if scrape_seconds else None
    text = re.sub(r"#[^\n]*", "", STRING_LITERAL.sub('""', expr))  # no string's nor comment's brackets
    found = re.findall(r"((?:present|last|count)_over_time\([^()\[\]]*)?(min_over_time\([^()\[\]]*)?\[([^\]]+)\]"
                       r"(\)\s*(?:<|>=)\s*[0-9.eE+]+)?", text)
    return tuple(window for within, least, window, compared in found
                 if not (within and window in kept)
                 and not (least and window == lookback and compared and re.split("<|>=", compared)[1].strip() in _FLOORS))


COMPARISONS = {"<", "<=", ">", ">=", "==", "!="}


def _guard(node, flag: bool = False) -> bool:
    """A comparison with a number (`... < 1e14`): a filter on values; with `flag`, one with `bool` (`... < bool
    1e14`), whose answer is 1 or 0, not the readings it compares."""
    import promql_parser

    return isinstance(node, promql_parser.BinaryExpr) and str(node.op) in COMPARISONS and _is_number(node.rhs) and \
        (not flag or node.modifier is not None and bool(node.modifier.return_bool))


def _is_number(node) -> bool:
    import promql_parser

    return isinstance(node, promql_parser.NumberLiteral)


# A negative offset written in a query's text (`offset -1s`, `OFFSET - 5m`: PromQL's keywords take any case), for a
# query that does not parse.
_NEGATIVE_OFFSET = re.compile(r"\boffset\s*-", re.IGNORECASE)


def pins_time(expr: str) -> bool:
    """Whether a query uses the `@` modifier or a negative offset (Prometheus 2.33 or later, or its feature flags).
    Only a query whose text holds `@` or the word offset in any case is parsed (a comment may sit between `offset`
    and its `-`); one that does not parse is judged by its text: `@`, or `offset` followed by `-`."""
    if "@" not in expr and "offset" not in expr.lower():
        return False
    try:
        ast = parse(expr)
    except ValueError:
        return "@" in expr or bool(_NEGATIVE_OFFSET.search(expr))
    found: list[bool] = []

    def pre(node) -> None:
        offset = getattr(node, "offset", None)
        if getattr(node, "at", None) is not None or (offset is not None and offset.total_seconds() < 0):
            found.append(True)

    walk(ast, pre, lambda node: None)
    return bool(found)


# promql_parser's Python objects are built with the cost of the square of a binary chain's length (`a or b or ...`:
# 4,000 operands took 7 s and 4.9 GB; a shared Prometheus of 1,000 clusters writes a data-missing rule of 20,000):
# a chain longer than CHAIN operands is parsed CHAIN at a time, each piece overlapping the next by one operand (so
# each operand is checked as an operand of `or`: an instant vector), and stands in the text around it as one
# selector, PLACEHOLDER, which parses in every place an instant vector does.
CHAIN = 64
_OR = re.compile(r"\bor\b")  # `or` between spaces, or beside a parenthesis (promql_text.packed: `)or(`)


def _ors(text: str) -> int:
    """How many `or` words `text` holds (the chains' operators, and any in a string: a bound, never too few)."""
    return len(_OR.findall(text))
PLACEHOLDER = "gpudash_checked_chain"
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`|[()\[\]{},]|\bor\b')
_MODIFIER = re.compile(r"\s*(?:on|ignoring)\s*\([^()]*\)")


def check_parses(expr: str, any_variable: bool = False, grafana: bool = True) -> None:
    """Raise ValueError with the parser's message unless `expr` (Grafana's variables replaced, as `_candidates`
    says; a Prometheus rule's, `grafana` False, as it is: Prometheus replaces nothing, and `\\$a` in a string there
    is a dollar sign) parses. Each distinct text is parsed once per process (as `query_selectors`): the same rules and
    variable queries come back in every build of similar settings, and the answer depends on the text alone."""
    problem = _parse_problem(expr, any_variable, grafana)
    if problem is not None:
        raise ValueError(problem)


@lru_cache(maxsize=4096)
def _parse_problem(expr: str, any_variable: bool, grafana: bool) -> str | None:
    """check_parses' answer: the parser's message, or None when `expr` parses."""
    try:
        _check_parses(expr, any_variable, grafana)
    except ValueError as exc:
        return str(exc)
    return None


def _check_parses(expr: str, any_variable: bool, grafana: bool) -> None:
    import promql_parser

    def parse_one(text: str) -> None:
        promql_parser.parse(_chains_checked(text) if _ors(text) > CHAIN else text)

    texts = _candidates(expr, any_variable) if grafana else [expr]
    _first_that_parses(texts, lambda text: _plain_first(text, parse_one))


def _chains_checked(text: str) -> str:
    """`text` with each `or` chain longer than CHAIN (at its top level, or an argument or parenthesis inside) parsed
    in pieces and replaced by PLACEHOLDER. The text is read into tokens once, each bracket paired with the one closing
    it (a fleet's rule of thousands of operands nests them a dozen deep: each level read again cost seconds); an
    unbalanced text is left as it is, for the parser to say where."""
    tokens = [(match.group(), match.start(), match.end()) for match in _TOKENS.finditer(text)]
    closing: dict[int, int] = {}  # an opening bracket's token -> the closing one's
    opened: list[int] = []
    for index, (word, _, _) in enumerate(tokens):
        if word in _OPENING:
            opened.append(index)
        elif word in _CLOSING:
            if not opened:
                return text
            closing[opened.pop()] = index
    if opened:
        return text
    return _Chains(text, tokens, closing).checked(0, len(tokens), 0, len(text))


_OPENING, _CLOSING = ("(", "[", "{"), (")", "]", "}")


class _Chains:
    """One text's tokens, (word, start, end), read once; each part of it (its tokens from `low` to `high`, its
    characters from `start` to `end`) checked without reading it again."""

    def __init__(self, text: str, tokens: list[tuple[str, int, int]], closing: dict[int, int]):
        self.text, self.tokens, self.closing = text, tokens, closing
        self.ors = [match.start() for match in _OR.finditer(text)]  # (a part begins and ends beside a bracket or a
        # comma: the `or` words of a part are the text's within it)

    def ors_within(self, start: int, end: int) -> int:
        return bisect_right(self.ors, end - 2) - bisect_left(self.ors, start)

    def checked(self, low: int, high: int, start: int, end: int) -> str:
        """The part with its chains checked: its top level's chain, each parenthesis' arguments'."""
        text, tokens = self.text, self.tokens
        pieces: list[str] = []  # the top level's text, its groups' insides already reduced
        ors: list[int] = []  # index in `pieces` after which each top-level `or` stands
        at, index = start, low
        while index < high:
            word, begins, ends = tokens[index]
            if word in _OPENING:
                last = self.closing[index]
                pieces.append(text[at:ends])
                inside = (index + 1, last, ends, tokens[last][1])
                pieces.append(self.arguments(*inside) if tokens[last][0] == ")" else text[inside[2]:inside[3]])
                at, index = tokens[last][1], last + 1
                continue
            if word == "or":
                pieces.append(text[at:begins])
                ors.append(len(pieces))
                pieces.append("or")
                at = ends
            index += 1
        pieces.append(text[at:end])
        if len(ors) <= CHAIN:
            return "".join(pieces)
        bounds = [0, *ors, len(pieces)]
        operands = ["".join(pieces[bounds[k] + (k > 0):bounds[k + 1]]) for k in range(len(bounds) - 1)]
        for first in range(0, len(operands) - 1, CHAIN):
            chunk = operands[first:first + CHAIN + 1]
            if first:  # the piece begins after an `or`, whose on()/ignoring() it drops; the chain's first has none
                chunk[0] = _MODIFIER.sub("", chunk[0], count=1) if _MODIFIER.match(chunk[0]) else chunk[0]
            parse(" or ".join(chunk))
        return PLACEHOLDER

    def arguments(self, low: int, high: int, start: int, end: int) -> str:
        """The inside of a parenthesis (a call's arguments, comma-separated) with each argument's long chains
        checked."""
        if self.ors_within(start, end) <= CHAIN:
            return self.text[start:end]
        parts, first, begins = [], low, start
        index = low
        while index < high:
            word, at, ends = self.tokens[index]
            if word in _OPENING:
                index = self.closing[index] + 1
                continue
            if word == ",":
                parts.append((first, index, begins, at))
                first, begins = index + 1, ends
            index += 1
        parts.append((first, high, begins, end))
        return ",".join(self.checked(*part) if self.ors_within(part[2], part[3]) > CHAIN
                        else self.text[part[2]:part[3]] for part in parts)


# Where promql_parser (Rust) reads PromQL otherwise than Prometheus (Go). It takes escapes inside a backtick string,
# which Prometheus keeps raw; it compiles a matcher's regex with Rust's regex crate, where Prometheus uses Go's RE2
# syntax: RE2 refuses flags other than i, m, s, U ((?x), (?R)) and repeats over 1,000, and quotes with \Q...\E, which
# Rust lacks. Each is settled before promql_parser reads the text: a backtick string is rewritten as the double-quoted
# string it is; a matcher's regex is judged as RE2 (regex_problem) and written as Rust reads the same regex. And
# Prometheus 2's holt_winters, which promql_parser lacks, is read as Prometheus 3's name for it.
# 1e1000, or 1 and 309 zeros: past a float
_DECIMAL_NUMBER = re.compile(r"(?<![\w.])(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![\w.])")
_FLOAT_DIGITS = 309  # the most digits a float's whole part has (1.8e308)
_REGEX_MATCHER = re.compile(r'(=~|!~)(\s*)("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')')
_HOLT_WINTERS = re.compile(r"\bholt_winters(\s*\()")
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)", re.DOTALL)
_ESCAPED = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"',
            "'": "'"}


def _unescaped(escape: re.Match[str]) -> str:
    """One escape of a PromQL string as Prometheus (Go's strconv) reads it; ValueError for one it does not know
    (`\\.` in a regex written with one backslash: Prometheus refuses the whole expression)."""
    body = escape.group(1)
    if body in _ESCAPED:
        return _ESCAPED[body]
    if len(body) > 1:
        return chr(int(body, 8) if body[0] in "01234567" else int(body[1:], 16))
    raise ValueError(f"unknown escape sequence `\\{body}` in a string (a regex escape needs two backslashes "
                     "in a double-quoted PromQL string, or a backtick string)")


def _as_promql_parser_reads(text: str, plain: bool = False) -> str:
    """`text` rewritten so that promql_parser's verdict is Prometheus' (see above); ValueError for a matcher regex
    Prometheus refuses. With `plain`, each label's regex matcher, once judged (it compiles), is written as an
    equality matcher that matches the empty value exactly when the regex does (`a=~".*"` as `a=""`, `a=~".+"` as
    `a="_"`; `!~` as `!=`): the same tree but for the matchers' operators and values, the same verdict (the parser
    refuses a selector all of whose matchers match the empty value), and promql_parser does not compile each
    matcher's regex again (most of the parse of a dashboard's query: 9,500 regex matchers, 4 distinct regexes).
    Not where the text names __name__ (an equality matcher of it is the metric's name)."""
    outside = STRING_LITERAL.sub('""', text)
    if "e" in outside or "E" in outside or len(outside) > _FLOAT_DIGITS:
        for number in _DECIMAL_NUMBER.findall(re.sub(r"#[^\n]*", "", outside)):
            if float(number) == float("inf"):  # Go's ParseFloat refuses it; promql_parser reads it as Inf
                raise ValueError(f'error parsing number: strconv.ParseFloat: parsing "{number}": value out of range')
    if "`" in text:
        text = STRING_LITERAL.sub(lambda m: double_quoted(m.group()[1:-1]) if m.group()[0] == "`" else m.group(),
                                  text)
    if "=~" in outside or "!~" in outside:
        plain = plain and "__name__" not in text

        def judged(match: re.Match[str]) -> str:
            problem, rust, value = _regex_read(match.group(3))
            if problem is not None:
                raise ValueError(problem)
            if plain and value is not None and _after_label_name(match.string, match.start()):
                return ("=" if match.group(1) == "=~" else "!=") + match.group(2) + value
            return match.group(1) + match.group(2) + rust
        text = _REGEX_MATCHER.sub(judged, text)
    if "holt_winters" in outside:
        text = _HOLT_WINTERS.sub(r"double_exponential_smoothing\1", text)
    return text


@lru_cache(maxsize=4096)
def _regex_read(literal: str) -> tuple[str | None, str, str | None]:
    """Of a matcher's regex as written (a quoted string): why Prometheus refuses it (or None), the same regex as a
    double-quoted string as promql_parser reads it, and its `plain` value (_plain_value). Once per distinct literal:
    a dashboard's query holds thousands of matchers of a few regexes."""
    try:
        regex = _ESCAPE.sub(_unescaped, literal[1:-1])
    except ValueError as exc:
        return str(exc), "", None
    found, rust = re2_judged(regex)
    found = regex_problem(regex) if found is None else found  # anchored: an unterminated \Q
    if found is not None:
        return (found if found.startswith("illegal regex") else f"illegal regex for {regex}: {found}"), "", None
    return None, double_quoted(rust), _plain_value(rust)


def newer_regex_syntax(expr: str) -> list[str]:
    """What a matcher regex of `expr` uses that only a Prometheus built with a newer Go takes (go_regex.newer_syntax):
    Prometheus 3 takes it, 2.42 refuses the query (and a rules file holding it)."""
    found: list[str] = []
    for match in _REGEX_MATCHER.finditer(expr):
        literal = match.group(3)
        if "<" in literal or "\\p" in literal:
            try:
                regex = _ESCAPE.sub(_unescaped, literal[1:-1])
            except ValueError:
                continue  # refused whatever Prometheus it is
            found.extend(note for note in newer_syntax(regex) if note not in found)
    return found


def _after_label_name(text: str, at: int) -> bool:
    """Whether a word (a label's name) ends just before `at`, but for blanks: a matcher (`gpu =~ "..."`), not an
    operator that would read otherwise with `=~` made `=` (`x !=~ "..."`, refused, is not `x != "..."`)."""
    at -= 1
    while at >= 0 and text[at] in " \t\r\n":
        at -= 1
    return at >= 0 and (text[at].isalnum() or text[at] == "_")


@lru_cache(maxsize=4096)
def _plain_value(rust: str) -> str | None:
    """The value of the equality matcher that stands for a regex matcher (`plain`): `""` where the regex (one that
    compiles) matches the empty value as promql_parser judges it (it refuses a selector whose only matcher is
    `a=~"<regex>"`), `"_"` where it does not; None if the parser says anything else (the regex is kept)."""
    import promql_parser

    try:
        promql_parser.parse("{a=~" + double_quoted(rust) + "}")
    except ValueError as exc:
        return '""' if str(exc) == _EMPTY_MATCHERS else None
    return '"_"'


_EMPTY_MATCHERS = "vector selector must contain at least one non-empty matcher"


_KEEP_INNER_LABELS = {"topk", "bottomk", "limitk", "limit_ratio"}  # their `by` groups the ranking, series keep labels


@dataclass(frozen=True)
class AnswerLabels:
    """The label names the series of a query's answer can carry: exactly `names` at most (an aggregation's `by`,
    `on`), or, `open`, any label but `names` (a selector's series, what `without` and `ignoring` leave of them)."""
    names: frozenset[str]
    open: bool = False

    def may_carry(self, label: str) -> bool:
        return (label not in self.names) if self.open else (label in self.names)

    def kept(self, labels) -> AnswerLabels:
        """These labels only (`by`, `on`)."""
        return AnswerLabels(frozenset(labels) if self.open else self.names & frozenset(labels))

    def dropped(self, labels) -> AnswerLabels:
        """All but these labels (`without`, `ignoring`)."""
        return AnswerLabels(self.names | frozenset(labels), True) if self.open else \
            AnswerLabels(self.names - frozenset(labels))

    def __or__(self, other: AnswerLabels) -> AnswerLabels:
        if not self.open and not other.open:
            return AnswerLabels(self.names | other.names)
        if self.open and other.open:
            return AnswerLabels(self.names & other.names, True)
        opened, closed = (self, other) if self.open else (other, self)
        return AnswerLabels(opened.names - closed.names, True)


NO_LABELS = AnswerLabels(frozenset())
ANY_LABEL = AnswerLabels(frozenset(), True)


def output_labels(expr: str) -> AnswerLabels | None:
    """The labels the series `expr` answers with can carry, read from the parsed query (the parse query_selectors
    reads: one per distinct text): `sum by (namespace) (... by (pod) ...)` answers with namespace alone, a selector
    or `sum without (instance) (...)` with any label but those dropped; None for an expression the parser refuses."""
    return _reading(expr)[1]


_SCALAR_FUNCTIONS = {"scalar", "time", "pi"}
_ADDS_ITS_LABEL = {"label_replace", "label_join"}  # their second argument names the label they write


def _labels_of(node) -> AnswerLabels:
    import promql_parser

    if isinstance(node, (promql_parser.NumberLiteral, promql_parser.StringLiteral)):
        return NO_LABELS
    if isinstance(node, promql_parser.AggregateExpr):
        inner = _labels_of(node.expr)
        op = str(node.op)
        if op in _KEEP_INNER_LABELS:
            return inner
        modifier = node.modifier
        grouped = NO_LABELS if modifier is None else \
            inner.dropped(modifier.labels) if "Without" in str(modifier.type) else inner.kept(modifier.labels)
        # count_values writes its parameter, the label each value is counted under
        return grouped | AnswerLabels(frozenset([node.param.val])) if op == "count_values" else grouped
    if isinstance(node, promql_parser.BinaryExpr):
        return _binary_labels(node, _labels_of(node.lhs), _labels_of(node.rhs))
    if isinstance(node, promql_parser.Call):
        if node.func.name in _SCALAR_FUNCTIONS:
            return NO_LABELS
        labels = NO_LABELS  # vector(s), time(): none
        for arg in node.args:
            if not isinstance(arg, (promql_parser.NumberLiteral, promql_parser.StringLiteral)):
                labels = labels | _labels_of(arg)
        if node.func.name in _ADDS_ITS_LABEL:
            labels = labels | AnswerLabels(frozenset([node.args[1].val]))
        # (absent's series carries its equality matchers' labels)
        return ANY_LABEL if node.func.name in ("absent", "absent_over_time") else labels
    for inner in ("expr", "vector_selector"):  # parentheses, unary minus, subqueries, ranges of a selector
        if hasattr(node, inner) and not isinstance(node, promql_parser.VectorSelector):
            return _labels_of(getattr(node, inner))
    return ANY_LABEL  # a selector


def _binary_labels(node, left: AnswerLabels, right: AnswerLabels) -> AnswerLabels:
    """Prometheus' labels of a binary operation's series: a set operation's `and`/`unless` keeps the left side's
    series, `or` both sides'; against a scalar the vector's; between vectors the `many` side's (the left one of a
    one-to-one match), only its `on` labels or all but its `ignoring` ones in a one-to-one match, with the labels a
    group_left/group_right copies from the other side."""
    import promql_parser

    op = str(node.op)
    if op in ("and", "unless"):
        return left
    if op == "or":
        return left | right
    scalars = [_is_scalar(side) for side in (node.lhs, node.rhs)]
    if any(scalars):
        return right if scalars[0] and not scalars[1] else left
    modifier = node.modifier
    if modifier is None:
        return left
    card = str(modifier.card)
    many, one = (right, left) if card.endswith("OneToMany") else (left, right)
    matching = modifier.matching
    if card.endswith("OneToOne"):
        if matching is None:
            return many
        return many.dropped(matching.labels) if "Exclude" in str(matching.type) else many.kept(matching.labels)
    copied = frozenset(modifier.group_labels or ())
    return many | one.kept(copied) if copied else many


def _is_scalar(node) -> bool:
    import promql_parser

    node = _unwrapped(node)
    if isinstance(node, promql_parser.NumberLiteral):
        return True
    if isinstance(node, promql_parser.Call):
        return node.func.name in _SCALAR_FUNCTIONS
    if isinstance(node, promql_parser.BinaryExpr):
        return _is_scalar(node.lhs) and _is_scalar(node.rhs)
    if isinstance(node, promql_parser.UnaryExpr):
        return _is_scalar(node.expr)
    return False

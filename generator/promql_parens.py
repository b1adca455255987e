"""PromQL text with the parentheses Prometheus' grammar does not need left out: the same expression tree.

gpudash builds its queries from parts, each wrapped in parentheses so that it reads alike wherever it is put; a
by-pod share held 889 pairs, 600 of them around a function's or aggregation's argument, another pair, or an operand
its neighbours' operators bind more loosely than its own. Prometheus before 3.0 evaluates every parenthesis as a
node, and its evaluator's context grows by one layer at each node evaluated and is walked at each step of each
operator (prometheus/prometheus#14816 fixed it in 3.0): a query's CPU grows with the square of its nodes, whatever
the data. The by-pod share with exporter.virtual_gpus: 0.785 -> 0.700 CPU-s per 14-step query on 2.42.

A pair is left out only where the tree read without it is the same: around an argument (after `(` or `,`, before `)`
or `,`), around a pair, or around an operand whose lowest operator binds tighter than the operator on either side of
it (or, on its left operand's side, as tight and left-associative, `(a or b) or c`); never before `[`, `offset` or
`@`, nor around a unary sign or a `^`. Operator precedence is Prometheus' (`^`; `* / % atan2`; `+ -`; comparisons;
`and unless`; `or`), all left-associative but `^`.
"""

from __future__ import annotations

import functools
import re
from itertools import compress, count

from .promql_text import STRING_LITERAL

# A selector's braces with what they hold where no parenthesis or square bracket stands in
# them outside a string (`{pod=~"$pod", gpu!=""}`): its tokens are none that a pair's reading looks at (before a
# pair, after it, between its operands: a pair's reading skips a bracketed group whole, and a selector standing
# beside a pair is no operator either way), and a third of a panel query's tokens were a selector's (the split 28%
# fewer instructions). Braces holding a bracket are read token by token, as before.
_SELECTOR = r"\{[^{}()\[\]\"\'`]*(?:(?:" + STRING_LITERAL.pattern + r")[^{}()\[\]\"\'`]*)*\}"
# a token (whitespace between tokens is no part of one, and no token); a string literal is one (no bracket inside it
# counts), and so is a selector's braces (above). Split with it as the group, a text is its pieces (between, token,
# between, ..., between) joined: a parenthesis is left out by emptying its piece.
# EACH_TOKEN reads a selector's braces token by token: promql_alike reads each label matcher, to put them in one order
# (Prometheus lists a rule's matchers sorted, spaced its own way: read whole, every selector's rule differed).
_EACH = (f"{STRING_LITERAL.pattern}|==|!=|<=|>=|=~|!~|"
         r"[-+*/%^<>=(){}\[\],:@]|[A-Za-z_][A-Za-z0-9_:]*|[0-9][0-9.]*(?:[eE][+-]?[0-9]+)?[a-zA-Z0-9.]*")
EACH_TOKEN = re.compile(f"({_EACH})")
TOKENS = re.compile(f"({_SELECTOR}|{_EACH})")
_BRACKETS = frozenset("([{}])")
PRECEDENCE = {"or": 1, "and": 2, "unless": 2, "==": 3, "!=": 3, "<=": 3, "<": 3, ">=": 3, ">": 3,
              "+": 4, "-": 4, "*": 5, "/": 5, "%": 5, "atan2": 5, "^": 6}
_COMPARISON = 3
_MATCHING = {"on", "ignoring", "group_left", "group_right"}  # keywords a label list follows in a binary operator
_OPENS_OPERAND = {"(", ",", "bool"}


# the same panel query recurs in every build of the same definitions and settings (a test process builds many): the
# bundled defaults' 59 panel queries hold ~0.5 MB
@functools.lru_cache(maxsize=512)
def fewest_parens(text: str) -> str:
    """`text` (PromQL) without the parentheses its tree does not need (module docstring)."""
    pieces = TOKENS.split(text)
    tokens = pieces[1::2]
    closing, opening, stack = {}, {}, []
    for i in compress(count(), map(_BRACKETS.__contains__, tokens)):  # the brackets' indices
        if tokens[i] in "([{":
            stack.append(i)
        else:
            j = stack.pop()
            closing[j], opening[i] = i, j
    for o, c in closing.items():
        if tokens[o] == "(" and _needless(tokens, o, c, closing, opening):
            pieces[2 * o + 1] = pieces[2 * c + 1] = ""
    return "".join(pieces)


def _unary(tokens, k: int) -> bool:
    return tokens[k] in "+-" and (k == 0 or tokens[k - 1] in PRECEDENCE or tokens[k - 1] in _OPENS_OPERAND)


def _label_list_keyword(tokens, close: int, opening) -> str:
    """The keyword before the label list (or argument list) that closes at `close`."""
    start = opening[close]
    return tokens[start - 1] if start > 0 else ""


def _operator_before(tokens, o: int, opening) -> str | None:
    """The binary operator whose right operand starts at token `o` ("unary" for a sign), or None."""
    k = o - 1
    while k >= 0:
        token = tokens[k]
        if token == ")" and _label_list_keyword(tokens, k, opening) in _MATCHING:
            k = opening[k] - 1  # skip `on (...)`, `group_left (...)`: the keyword next
        elif token in _MATCHING or token == "bool":
            k -= 1
        elif token in PRECEDENCE:
            return "unary" if _unary(tokens, k) else token
        else:
            return None
    return None


def _lowest(tokens, o: int, c: int, closing) -> int | None:
    """The lowest precedence of the operators at the top of the pair (o, c) (through a pair that is all its content):
    None for an operand with none (a selector, a call), -1 for a unary sign or `^` (kept)."""
    if tokens[o + 1] == "(" and closing.get(o + 1) == c - 1:
        return _lowest(tokens, o + 1, c - 1, closing)
    lowest, k = None, o + 1
    while k < c:
        token = tokens[k]
        if token in "([{":
            k = closing[k] + 1
            continue
        if token in PRECEDENCE:
            if _unary(tokens, k) or token == "^":
                return -1
            lowest = PRECEDENCE[token] if lowest is None else min(lowest, PRECEDENCE[token])
        k += 1
    return lowest


def _needless(tokens, o: int, c: int, closing, opening) -> bool:
    """Whether the pair (o, c) is a parenthesised expression the tree reads alike without."""
    if o > 0:
        before = tokens[o - 1]
        if not (before in PRECEDENCE or before in _OPENS_OPERAND
                or (before == ")" and _label_list_keyword(tokens, o - 1, opening) in _MATCHING)):
            return False  # a call's or an aggregation's arguments, a label list
    after = tokens[c + 1] if c + 1 < len(tokens) else None
    if after in ("[", "offset", "@"):
        return False
    left = _operator_before(tokens, o, opening)
    if left == "unary":
        return False
    lowest = _lowest(tokens, o, c, closing)
    if lowest == -1:
        return False
    if lowest is None:
        return True
    right = after if after in PRECEDENCE else None
    return ((left is None or lowest > PRECEDENCE[left])
            and (right is None or lowest > PRECEDENCE[right]
                 or (lowest == PRECEDENCE[right] and lowest != _COMPARISON)))

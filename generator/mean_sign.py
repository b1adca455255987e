"""A rule's mean over a period compared with a level, from one read of the period's readings.

A period's mean is the sum S of its readings over their count C. Written as a ratio, `sum_over_time(sum(Z)[..])
/ sum_over_time(count(Z)[..])`, PromQL evaluates the step's reading Z twice (it has no `let`, and no operator gives
more series than its larger operand, so a step's vector cannot be copied without evaluating it again). Here only the
cheapest part of a per-pod step is read twice: the pods' namings on the GPUs with a reading at the step, before they
are judged (`marked_twice`: one copy marked STAT_LABEL "s", one "c"; the judgements, which keep or drop each naming
by its own labels, read once), joined to the GPU's reading (read once); after the per-row merge each row's reading is raised
to 1 on "s" (the reading itself) and to 0 on "c" (1: Go's math.Pow(x, 0) is 1 for every x), so one sum per step and
one sum_over_time give S (on "s", the same additions in the same order as the ratio's sum) and C (on "c"). The level t
is compared through the sign of S - t*C (`signed`: one sum of S * 1 and C * -t per group), which is exactly that of
fl(S / C) - t wherever `exact_against(t)` holds:

- t*C is exact: t's significand has at most LEVEL_BITS bits and C < 2**COUNT_BITS (a count of rows a period's steps
  hold per group: promql asks at most MAX_STEPS steps), so the product fits the 53 bits of a double; and the rounded
  difference of two doubles has the sign of the exact one (zero only where they are equal).
- S < t*C gives fl(S / C) < t: S and T = t*C are doubles, so T - S is at least the spacing of doubles just below T,
  and t - S/C at least that over C. With t = m_t * 2**e_t and T = m_T * 2**e_T (m in [1, 2)), C = (m_T / m_t) *
  2**(e_T - e_t), so (spacing below T) / C is more than half the spacing below t (m_T < 2 * m_t; the powers of two
  check alike): S / C lies nearer a double below t than t itself, and rounds below t (no tie).
- S >= t*C gives S / C >= t, and rounding is monotone with t a double: fl(S / C) >= t.
So `<` and, by symmetry, `>` (and their negations `>=`, `<=`) give the same flags as the ratio's, while the period's
mean itself (period_value: the value the recordings and the CloudWatch twins compare) keeps its ratio. t = 0 is left
to the ratio (a subnormal S / C may round to -0), as is a level of a longer significand (7.3: t*C rounds).
tests/integration/test_mean_sign_flags.py runs both forms side by side on promtool over a messy fleet."""

from __future__ import annotations

import math

from .cloudwatch_query import number

STAT_LABEL = "gpudash_stat"  # the copy of a step's rows a mean's sum ("s") or count ("c") is taken from
LEVEL_BITS = 30  # at most this many significant bits in a level compared by sign
COUNT_BITS = 23  # a period's count of readings per group stays below 2**COUNT_BITS
MAX_STEPS = 2 ** 16  # steps a period may hold (2**7 rows per group and step left below 2**COUNT_BITS)


def exact_against(threshold: float) -> bool:
    """Whether a mean's flag against `threshold` may be read by sign (`signed`): a finite, non-zero level of at most
    LEVEL_BITS significant bits (5, 2.5, 0.75; not 7.3 nor 0.1)."""
    if threshold == 0 or not math.isfinite(threshold):
        return False
    significand, _ = math.frexp(abs(threshold))
    return (significand * 2 ** LEVEL_BITS).is_integer()


def _marked(expr: str, stat: str) -> str:
    return f'label_replace({expr}, "{STAT_LABEL}", "{stat}", "", "")'


def marked_twice(named: str) -> str:
    """The pods' namings on the GPUs (`named`), once for the sum ("s") and once for the count ("c"): what the rows a
    step's reading is joined to are made of (promql._Device._named_on)."""
    return f"({_marked(named, 's')} or {_marked(named, 'c')})"


def _each(values: tuple[str, str]) -> str:
    return f'({_marked(f"vector({values[0]})", "s")} or {_marked(f"vector({values[1]})", "c")})'


def counted_too(reading: str) -> str:
    """A step's merged rows (`reading`, marked by `marked_twice`): the reading on "s", 1 on "c"."""
    return f"{reading} ^ on ({STAT_LABEL}) group_left () {_each(('1', '0'))}"


def signed(summed: str, grouping: str, threshold: float) -> str:
    """S - t*C per group (`grouping`: the outer labels, STAT_LABEL not among them), rounded with its exact sign, from
    `summed` (the period's sum of `counted_too` per group and STAT_LABEL)."""
    weights = _each(("1", number(-threshold)))
    by = f" by ({grouping})" if grouping else ""
    return f"sum{by} ({summed} * on ({STAT_LABEL}) group_left () {weights})"

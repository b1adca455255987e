"""DCGM's blank sentinels, and the floors that tell a reading from one.

The one source of these floors: the PromQL queries, the CloudWatch widgets' metric math and the
CloudWatch agent's filter (render/agent_otel.py) all take them from here.

DCGM reports a value it cannot read as a "blank" sentinel: 2**47 for floating-point fields,
about 2**63 for integer fields (0x7ffffffffffffff0 blank, ...f2 "not supported"). No gauge
reading comes near 1e14, so a gauge sample at or above it is a blank. Counters are integer
fields whose readings do pass 1e14 (a busy NVLink's byte counter within hours): a counter sample
is a blank only at or above 9e18 (the integer sentinels). An increase at or above 1e18 is a jump
into a blank, not a real climb (the CloudWatch widgets' floor on summed deltas).
"""

from __future__ import annotations

READING_FLOOR = 1e14  # a gauge sample at or above this is a blank
COUNTER_READING_FLOOR = 9e18  # a counter sample at or above this is a blank
INCREASE_FLOOR = 1e18  # an increase at or above this is a jump into a blank


def reading_floor(is_counter: bool) -> float:
    """The value at or above which one sample of a field is a blank, not a reading."""
    return COUNTER_READING_FLOOR if is_counter else READING_FLOOR


def short(value: float) -> str:
    """A floor as PromQL text: 1e14, 9e18."""
    return f"{value:.0e}".replace("e+", "e")

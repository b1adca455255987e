"""DCGM's blank sentinels, and the floors that tell a reading from one.

The one source of these floors: the PromQL queries, the CloudWatch widgets' metric math and the
CloudWatch agent's filter (render/agent_otel.py) all take them from here.

DCGM reports a value it cannot read as a "blank" sentinel: 2**47 for floating-point fields,
about 2**63 for integer fields (0x7ffffffffffffff0 blank, ...f2 "not supported"). No gauge
reading comes near 1e14, so a gauge sample at or above it is a blank. Counters are integer
running totals that nothing bounds below the integer sentinels (DCGM's energy in mJ since the
driver loaded among them): a counter sample is a blank only at or above 9e18 (the integer
sentinels). An increase at or above 1e18 is a jump into a blank, not a real climb (the
CloudWatch widgets' floor on summed deltas).

Memory temperature is the exception to "not supported is a blank": on GPUs without an HBM/GDDR
sensor (L4, consumer boards) DCGM writes 0 for it, because nvmlDeviceGetFieldValues succeeds as a
call while the field's own status says unsupported and DCGM does not check that status (NVIDIA/DCGM
#311); dcgm-exporter 3.3.5 served that 0 (NVIDIA/dcgm-exporter #460). A running GPU's memory is
never at 0 °C, so for these fields a 0 is no reading either, on every surface alike.
"""

from __future__ import annotations

READING_FLOOR = 1e14  # a gauge sample at or above this is a blank
COUNTER_READING_FLOOR = 9e18  # a counter sample at or above this is a blank
INCREASE_FLOOR = 1e18  # an increase at or above this is a jump into a blank
# Gauges for which DCGM writes 0 where the GPU cannot read them (field 140, under both of DCGM's names)
UNREAD_AT_ZERO = frozenset({"DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS"})


def reading_floor(is_counter: bool) -> float:
    """The value at or above which one sample of a field is a blank, not a reading."""
    return COUNTER_READING_FLOOR if is_counter else READING_FLOOR


def short(value: float) -> str:
    """A floor as PromQL text: 1e14, 9e18."""
    return f"{value:.0e}".replace("e+", "e")

"""Units and families of DCGM fields; the unit of a field the catalog of DCGM's fields does not give, inferred from
the counters CSV help text.

One table per fact: `UNITS` says how each unit is shown by every backend, and
how a counter of that unit reads once it is turned into a per-second rate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    """A unit as each system spells it: Grafana, axis labels, CloudWatch."""
    key: str
    grafana: str  # Grafana unit id (fieldConfig.defaults.unit)
    label: str  # human text for CloudWatch axis labels and tables
    cloudwatch: str  # CloudWatch StandardUnit, for alarms and docs
    rate_key: str  # the unit of rate(counter of this unit)
    rate_scale: float = 1.0  # multiply the per-second rate by this to land in rate_key
    # The range every value of the unit lies in (a percentage 0-100, a ratio 0-1), which a gauge's dial runs over
    # unless its definition gives min or max; None: the unit has none of its own (W, °C, MiB, a count)
    bounds: tuple[float, float] | None = None
    # What the unit measures and the size of one unit in that quantity's own terms: two units of one quantity and size
    # are two spellings of one unit (a ratio and a share of time); of one quantity and other sizes, one value reads
    # another number in each (0.45 as a ratio is 45 as a percent); of two quantities, nothing converts.
    quantity: str = ""
    size: float = 1.0
    # A level: what a reading says now (a temperature, a clock, a power draw, a share, memory in use, a state), never a
    # running total. A CSV typing such a field counter has the exporter serve it as a counter (`# TYPE`); its readings
    # are still levels: catalog.parse_counters reads a field the catalog of DCGM's fields does not say whose help text
    # gives such a unit as a gauge the exporter serves as a counter (Metric.retyped).
    level: bool = False


UNITS: dict[str, Unit] = {u.key: u for u in (
    Unit("mhz", "rotmhz", "MHz", "None", "count_per_s", quantity="frequency", size=1e6, level=True),
    Unit("celsius", "celsius", "°C", "None", "count_per_s", quantity="temperature", level=True),
    Unit("watt", "watt", "W", "None", "count_per_s", quantity="power", level=True),
    Unit("milliwatt", "mwatt", "mW", "None", "count_per_s", quantity="power", size=1e-3, level=True),
    # Grafana's custom SI unit: the values are mJ
    Unit("millijoule", "si:mJ", "mJ", "None", "milliwatt", quantity="energy", size=1e-3),
    Unit("joule", "joule", "J", "None", "watt", quantity="energy"),
    Unit("hertz", "hertz", "Hz", "None", "count_per_s", quantity="frequency", level=True),
    Unit("percent", "percent", "%", "Percent", "count_per_s", bounds=(0, 100), quantity="share", size=1e-2, level=True),
    Unit("ratio", "percentunit", "ratio 0-1", "None", "count_per_s", bounds=(0, 1), quantity="share", level=True),
    Unit("mebibyte", "mbytes", "MiB", "Megabytes", "count_per_s", quantity="data", size=2.0 ** 20, level=True),
    Unit("nanosecond", "ns", "ns", "None", "time_ratio", 1e-9, quantity="time", size=1e-9),
    Unit("microsecond", "µs", "µs", "Microseconds", "time_ratio", 1e-6, quantity="time", size=1e-6),
    Unit("time_ratio", "percentunit", "share of time", "None", "count_per_s", bounds=(0, 1), quantity="share", level=True),
    Unit("byte", "bytes", "bytes", "Bytes", "bytes_per_s", quantity="data"),
    Unit("bytes_per_s", "Bps", "bytes/s", "Bytes/Second", "count_per_s", quantity="data rate"),
    Unit("kilobyte", "deckbytes", "KB", "Kilobytes", "kilobytes_per_s", quantity="data", size=1e3),
    Unit("kilobytes_per_s", "KBs", "KB/s", "Kilobytes/Second", "count_per_s", quantity="data rate", size=1e3),
    # DCGM's NVLink throughput (MB/s over its sampling interval, DCGM_FIELD_UNIT_BW_MBPS): a level
    Unit("megabytes_per_s", "MBs", "MB/s", "Megabytes/Second", "count_per_s", quantity="data rate", size=1e6,
         level=True),
    Unit("count", "short", "count", "Count", "count_per_s", quantity="count"),
    Unit("count_per_s", "cps", "per second", "Count/Second", "count_per_s", quantity="rate"),
    Unit("state", "none", "state", "None", "count_per_s", quantity="state", level=True),
)}


def converts(shown: Unit, written: Unit) -> float | None:
    """The factor a value in `shown` is multiplied by to read in `written` (45 % is 0.45 as a ratio: 0.01), 1 for two
    spellings of one unit; None when they measure different quantities (W and °C), where nothing converts."""
    if shown.key == written.key:
        return 1.0
    if not shown.quantity or shown.quantity != written.quantity:
        return None
    return shown.size / written.size


# Help-text patterns, tried in order; the first match names the unit.
_HELP_UNITS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\(in MHz\)", re.I), "mhz"),
    (re.compile(r"\(in C\)"), "celsius"),
    (re.compile(r"\(in W\)"), "watt"),
    (re.compile(r"\(in mJ\)"), "millijoule"),
    (re.compile(r"\(in (0-100)?%\)"), "percent"),  # fan speed: "(in 0-100%)"
    (re.compile(r"\(in (MiB|MB)\)"), "mebibyte"),
    (re.compile(r"\(in MB/s\)"), "megabytes_per_s"),
    (re.compile(r"\(in KB\)"), "kilobyte"),  # NVML's PCIe throughput counters (DCGM_FI_DEV_PCIE_TX/RX_THROUGHPUT)
    (re.compile(r"\(in ns\)"), "nanosecond"),
    (re.compile(r"\(in us\)"), "microsecond"),
    (re.compile(r"bytes per second", re.I), "bytes_per_s"),
)

# Family of a field: first matching name fragment wins (names are compared upper-case).
FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("exporter", ("DCGM_EXP",)),
    ("pcie", ("PCIE",)),
    ("profiling", ("PROF",)),
    ("nvlink", ("NVLINK",)),
    ("reliability", ("XID", "ECC", "RETIRED", "REMAP", "VIOLATION", "THROTTLE")),
    ("clocks", ("CLOCK",)),
    ("temperature", ("TEMP",)),
    ("power", ("POWER", "ENERGY")),
    ("utilization", ("UTIL",)),
    ("memory", ("FB", "MEMORY")),
    ("license", ("LICENSE",)),
)
FAMILY_ORDER = ("utilization", "memory", "profiling", "power", "temperature", "clocks",
                "pcie", "nvlink", "reliability", "license", "exporter", "other")


def infer_unit(name: str, help_text: str) -> str:
    """Unit key for a field the catalog of DCGM's fields gives none (catalog.parse_counters): from the help text, else
    from the name's ending."""
    for pattern, key in _HELP_UNITS:
        if pattern.search(help_text):
            return key
    if "number of bytes" in help_text.lower():  # a byte count (NVLink bandwidth counters per lane, ...)
        return "byte"
    if name.upper().endswith("_BYTES"):
        return "bytes_per_s"
    return "count"


def infer_family(name: str) -> str:
    """Family of a field by name fragment; 1.x names (dcgm_gpu_temp) match as well."""
    upper = name.upper()
    for family, fragments in FAMILIES:
        if any(fragment in upper for fragment in fragments):
            return family
    return "other"

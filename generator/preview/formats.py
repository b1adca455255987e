"""Values formatted the way Grafana formats them, for the unit ids gpudash's dashboards use.

Grafana scales a value to the largest prefix that keeps it at or above one (SI steps of 1000,
IEC steps of 1024) and shows about three significant digits; a unit it does not know is shown
as a plain number followed by the unit id.
"""

from __future__ import annotations

import math

_SI = ("n", "µ", "m", "", "k", "M", "G", "T", "P")
_SI_ZERO = 3  # index of "" in _SI
_IEC = ("", "Ki", "Mi", "Gi", "Ti", "Pi")
_SHORT = ("", " K", " Mil", " Bil", " Tri", " Quadr")


def _number(value: float, decimals: int | None = None) -> str:
    if decimals is None:
        size = abs(value)
        decimals = 0 if size >= 100 or value == int(value) else 1 if size >= 10 else 2
    text = f"{value:.{decimals}f}"
    return "0" if text in ("-0", "-0.0", "-0.00") else text


def _scaled(value: float, base: int, prefixes: tuple[str, ...], start: int) -> tuple[float, str]:
    index = start
    while abs(value) >= base and index < len(prefixes) - 1:
        value /= base
        index += 1
    while 0 < abs(value) < 1 and index > 0 and prefixes is _SI:
        value *= base
        index -= 1
    return value, prefixes[index]


def _si(value: float, symbol: str, start: int = 0) -> str:
    scaled, prefix = _scaled(value, 1000, _SI, _SI_ZERO + start)
    return f"{_number(scaled)} {prefix}{symbol}"


def _iec(value: float, symbol: str, start: int = 0) -> str:
    scaled, prefix = _scaled(value, 1024, _IEC, start)
    return f"{_number(scaled)} {prefix}{symbol}"


def _duration_ns(value: float) -> str:
    for limit, divisor, symbol in ((1e3, 1, "ns"), (1e6, 1e3, "µs"), (1e9, 1e6, "ms"), (60e9, 1e9, "s"),
                                   (3600e9, 60e9, "min"), (86400e9, 3600e9, "hour")):
        if abs(value) < limit:
            return f"{_number(value / divisor)} {symbol}"
    return f"{_number(value / 86400e9)} day"


def _short(value: float) -> str:
    scaled, suffix = _scaled(value, 1000, _SHORT, 0)
    return f"{_number(scaled)}{suffix}"


def format_value(value: float | None, unit: str | None) -> str:
    """`value` in `unit` (a Grafana unit id) as Grafana shows it."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "No data"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    unit = unit or "short"
    if unit == "percent":
        return f"{_number(value)}%"
    if unit == "percentunit":
        return f"{_number(value * 100)}%"
    if unit == "celsius":
        return f"{_number(value)} °C"
    if unit == "watt":
        return _si(value, "W")
    if unit == "mwatt":
        return _si(value, "W", start=-1)
    if unit == "joule":
        return _si(value, "J")
    if unit == "si:mJ":  # Grafana's custom SI unit: the values are millijoules
        return _si(value, "J", start=-1)
    if unit == "hertz":  # Grafana's 'Hertz (1/s)', decimalSIPrefix('Hz')
        return _si(value, "Hz")
    if unit == "rotmhz":
        return _si(value, "Hz", start=2)
    if unit == "bytes":
        return _iec(value, "B")
    if unit == "mbytes":
        return _iec(value, "B", start=2)
    if unit == "Bps":  # bytes/sec(SI); the IEC rate is `binBps`
        return _si(value, "B/s")
    if unit == "deckbytes":  # kilobytes (SI): the values are kB
        return _si(value, "B", start=1)
    if unit == "KBs":  # kilobytes/sec (SI)
        return _si(value, "B/s", start=1)
    if unit == "MBs":  # megabytes/sec (SI)
        return _si(value, "B/s", start=2)
    if unit == "cps":
        scaled, suffix = _scaled(value, 1000, _SHORT, 0)
        return f"{_number(scaled)}{suffix} c/s"
    if unit == "ns":
        return _duration_ns(value)
    if unit == "µs":
        return _duration_ns(value * 1e3)
    if unit == "none":
        return _number(value)
    if unit == "short":
        return _short(value)
    return f"{_number(value)} {unit}"

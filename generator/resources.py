"""Where the bundled files live: in a checkout, or inside an installed package.

In a checkout `dashboards/`, `alarms/` and `schemas/` sit beside `generator/`.
An installed wheel carries them as `generator/_bundled/<name>` (see the
package-dir mapping in pyproject.toml).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Iterable

_PACKAGE = Path(__file__).resolve().parent


@cache
def bundled(name: str) -> Path:
    """Folder of bundled `dashboards`, `alarms` or `schemas`."""
    for candidate in (_PACKAGE / "_bundled" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"bundled folder {name!r} is missing from the gpudash installation")


def default_counters() -> Path:
    return _PACKAGE / "defaults" / "dcgm-counters.csv"


def default_config() -> Path:
    return _PACKAGE / "defaults" / "gpudash.yaml"


@cache
def reserved_keywords() -> frozenset[str]:
    """Metrics Insights' reserved keywords, all AWS documents (defaults/metrics-insights-reserved-keywords.txt, its
    source in its header), upper case."""
    text = (_PACKAGE / "defaults" / "metrics-insights-reserved-keywords.txt").read_text(encoding="utf-8")
    return frozenset(word for line in text.splitlines() if not line.startswith("#") for word in line.split())


def schema(name: str) -> Path:
    return bundled("schemas") / name


@cache
def field_catalog() -> dict[str, tuple[str, str]]:
    """Every field name the DCGM exporter can look up, whether or not a counters CSV collects it, with what DCGM says
    its readings are: (kind, unit), each "-" where the catalog does not say (defaults/dcgm-fields.txt)."""
    text = (_PACKAGE / "defaults" / "dcgm-fields.txt").read_text(encoding="utf-8")
    rows = (line.split() for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return {name: (kind, unit) for name, kind, unit in rows}


@cache
def known_fields() -> frozenset[str]:
    """Every field name the DCGM exporter can look up, whether or not a counters CSV collects it."""
    return frozenset(field_catalog())


def closest_field(name: str, first: Iterable[str] = ()) -> str | None:
    """The field name closest to a misspelt `name`: among `first` (a CSV's fields) before every known one; None when
    none is close."""
    from difflib import get_close_matches

    close = get_close_matches(name, list(first), n=1, cutoff=0.8) or \
        get_close_matches(name, sorted(known_fields()), n=1, cutoff=0.8)
    return close[0] if close else None

"""Where the bundled files live: in a checkout, or inside an installed package.

In a checkout `dashboards/`, `alarms/` and `schemas/` sit beside `generator/`.
An installed wheel carries them as `generator/_bundled/<name>` (see the
package-dir mapping in pyproject.toml).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

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

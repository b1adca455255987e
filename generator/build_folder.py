"""The folder `gpudash generate` writes by default, where hints point: spelled once, in a module of its own, so that
the command line's default reads it without importing `output` (its encoders import yaml and orjson: `gpudash --help`
needs neither)."""

from __future__ import annotations

BUILD = "build"

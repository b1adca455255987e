"""Byte-stable serialization: sorted keys, fixed indentation, trailing newline."""

from __future__ import annotations

import json
from typing import Any

import yaml


def to_json(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


class _BlockDumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings (embedded JSON, PromQL) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def to_yaml(*documents: Any) -> bytes:
    return yaml.dump_all(documents, Dumper=_BlockDumper, sort_keys=True, default_flow_style=False,
                         allow_unicode=True, width=100).encode()

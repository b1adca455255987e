"""Objects of the dashboard SDKs -> plain data (dicts, lists, text, numbers), with no text in between.

The Grafana Foundation SDK's models and grafanalib's objects each say what they hold through a
method (`to_json`, `to_json_data`) whose answer may hold more such objects. `plain_data` follows
those methods down to plain values and gives exactly what writing the object as JSON and reading
it back would give (json.loads(json.dumps(...))): tuples become lists, subclasses of str, int and
float their plain values, dictionary keys text, and nothing is shared with the objects it came from.
Artifacts are turned into text once, by output.py.
"""

from __future__ import annotations

import json
import math
from typing import Any


def plain_data(value: Any, method: str) -> Any:
    """`value` as plain data; an object becomes what its `method` returns. What JSON cannot hold is
    refused as json.dumps refuses it: TypeError (a set, an object without `method`), ValueError (a cycle).

    The walk does not look out for cycles (keeping the containers on its path took a quarter of its time over a
    dashboard's thousands of objects): one that recurses past Python's limit (a cycle, or data nested that deep) is
    handed to json.dumps, which raises what it raises for that value."""
    plain = _PLAIN  # the types that are their own plain data: a dict's or list's items of them are taken as they are
    # (most of a model's values: no call for each)

    def walk(value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            return {key if type(key) is str else _key(key): item if type(item) in plain else walk(item)
                    for key, item in value.items()}
        if kind is list or kind is tuple:
            return [item if type(item) in plain else walk(item) for item in value]
        if kind in plain:
            return value
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, int):  # bool has no subclasses: only int's reach here
            return int.__int__(value)
        if isinstance(value, float):
            return float.__float__(value)
        if isinstance(value, dict):
            return {key if type(key) is str else _key(key): item if type(item) in plain else walk(item)
                    for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [item if type(item) in plain else walk(item) for item in value]
        return walk(converted(value))

    def converted(value: Any) -> Any:
        convert = getattr(value, method, None)
        if not callable(convert):
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
        return convert()

    try:
        return walk(value)
    except RecursionError:
        json.dumps(value, default=converted)  # a cycle: ValueError
        raise


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _key(key: Any) -> str:
    """A dictionary key as JSON writes it."""
    if isinstance(key, str):
        return str.__str__(key)
    if key is True or key is False or key is None:
        return {True: "true", False: "false", None: "null"}[key]
    if isinstance(key, float):
        if math.isnan(key):
            return "NaN"
        if math.isinf(key):
            return "Infinity" if key > 0 else "-Infinity"
        return float.__repr__(key)
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")

"""Validated reads of remote answers: every read names the type it expects, and an answer that is
not shaped as its API promises raises OddAnswer, naming what was odd and where.

Kubernetes, Prometheus and CloudWatch answers are decoded JSON; checks read them only through
`Answer`, so a `null`, a list where an object belongs or a word where a number belongs becomes
one failed check instead of a crash.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, Iterator

from .. import redact

REQUIRED = object()
NOT_JSON = object()  # what `json_value` gives for a text that is no JSON


def json_value(text: str | bytes | Callable[..., Any]) -> Any:
    """The JSON value of an answer's text (or what `text(**json.loads' options)` decodes: a response's own .json), or
    NOT_JSON where the text is none: not JSON (NaN, Infinity and -Infinity too: tokens Python's parser takes and JSON
    has not; no API gpudash reads writes them, Go's encoder refuses them and CloudWatch's JSON writes such a number as
    a string), or nested deeper than the parser follows (its RecursionError: no JSON to read either). The one place a
    client reads an answer as JSON or not an answer."""
    try:
        return json.loads(text, parse_constant=_no_json) if isinstance(text, (str, bytes)) else text(
            parse_constant=_no_json)
    except (ValueError, RecursionError):
        return NOT_JSON


def _no_json(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")
_KINDS = {dict: "an object", list: "a list", str: "a string", int: "a whole number", float: "a number",
          bool: "true or false"}


class OddAnswer(Exception):
    """A remote answer that is not what its API answers."""

    def __init__(self, source: str, path: str, found: Any, expected: str, *, said: str | None = None):
        self.source, self.path, self.found, self.expected = source, path, found, expected
        if said is None:
            said = f"{path or 'the answer'} is {describe(found)}, expected {expected}"
        super().__init__(f"{source}: {said}")


def describe(value: Any) -> str:
    if value is REQUIRED:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    text = repr(redact.text(value) if isinstance(value, str) else value)  # masked, then cut: no secret in part
    return text if len(text) <= 40 else text[:37] + "..."


class Answer:
    """A read-only view of one decoded answer (or a part of it), with the path that leads there."""

    def __init__(self, value: Any, source: str, path: str = ""):
        self.value, self.source, self.path = value, source, path

    def _where_all(self, dotted: str) -> str:
        return ".".join(filter(None, [self.path, dotted]))

    def _lookup(self, dotted: str) -> tuple[Any, str]:
        """The value at `dotted` (REQUIRED when a key is absent, None when null) and its path."""
        value, path = self.value, self.path
        for key in dotted.split(".") if dotted else ():
            if value is None or value is REQUIRED:
                return value, path
            if not isinstance(value, dict):
                raise OddAnswer(self.source, path, value, "an object")
            path = f"{path}.{key}" if path else key
            value = value.get(key, REQUIRED)
        return value, path

    def get(self, dotted: str, kind: type, default: Any = REQUIRED) -> Any:
        """The value at `dotted` (keys joined by "."), of type `kind`; `default` when absent or null
        (absent or null is odd when no default is given)."""
        value, path = self._lookup(dotted)
        if value is None or value is REQUIRED:
            if default is REQUIRED:
                whole = path == self._where_all(dotted)
                raise OddAnswer(self.source, path, value, _KINDS[kind] if whole else "an object")
            return default
        return _typed(value, kind, self.source, path)

    def at(self, dotted: str, required: bool = True) -> "Answer":
        """The object at `dotted` as an Answer; an empty one when absent and not required."""
        value = self.get(dotted, dict, REQUIRED if required else {})
        return Answer(value, self.source, self._lookup(dotted)[1])

    def items(self, dotted: str, required: bool = False) -> Iterator["Answer"]:
        """The objects in the list at `dotted`, each as an Answer."""
        values = self.get(dotted, list, REQUIRED if required else [])
        path = self._lookup(dotted)[1]
        for index, value in enumerate(values):
            if not isinstance(value, dict):
                raise OddAnswer(self.source, f"{path}[{index}]", value, "an object")
            yield Answer(value, self.source, f"{path}[{index}]")

    def strings(self, dotted: str) -> list[str]:
        """A list of strings (absent or null: empty)."""
        path = self._lookup(dotted)[1]
        return [_typed(v, str, self.source, f"{path}[{i}]") for i, v in enumerate(self.get(dotted, list, []))]

    def string_map(self, dotted: str) -> dict[str, str]:
        """An object whose values are strings, such as labels or a ConfigMap's data (absent: empty)."""
        path = self._lookup(dotted)[1]
        return {k: _typed(v, str, self.source, f"{path}.{k}") for k, v in self.get(dotted, dict, {}).items()}

    def number(self, dotted: str, default: Any = REQUIRED) -> float:
        """A number sent as a JSON number or as text (Prometheus sends "12.5", "NaN", "+Inf")."""
        value, path = self._lookup(dotted)
        if (value is None or value is REQUIRED) and default is not REQUIRED:
            return default
        return to_number(value, self.source, path)


def _typed(value: Any, kind: type, source: str, path: str) -> Any:
    if kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(value, kind):
        return value
    raise OddAnswer(source, path, value, _KINDS[kind])


def to_number(value: Any, source: str, path: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise OddAnswer(source, path, value, "a number")


_QUANTITY = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?")
_SUFFIX = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def quantity(value: Any, source: str, path: str) -> float:
    """A Kubernetes resource quantity ("8", "500m", "32Gi") as a number."""
    match = _QUANTITY.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        raise OddAnswer(source, path, value, "a Kubernetes quantity")
    number = float(match.group(1)) * _SUFFIX[match.group(2)]
    if not math.isfinite(number):
        raise OddAnswer(source, path, value, "a Kubernetes quantity")
    return number


def whole_count(value: Any, source: str, path: str) -> int:
    """A quantity that counts devices: a whole, non-negative number."""
    number = quantity(value, source, path)
    if number < 0 or number != int(number):
        raise OddAnswer(source, path, value, "a whole number of devices")
    return int(number)

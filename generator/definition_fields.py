"""Every field of a definition's model object (Query, Panel, Row, Dashboard, Condition, Alarm) checked against the
type the class declares for it, when the object is built.

A definition is Python: nothing stops `thresholds=80`, `unit="short"`, `by="pod"` or a threshold read from an
environment variable as the text "80". Left unchecked, such a value travels to a renderer and ends `generate` in an
internal error, or worse is written (`"Threshold": NaN` is not JSON). The dataclass annotations are the one
statement of what each field holds; this module reads them and refuses anything else with what is wrong and what to
write instead. Only the form is checked here (text, a whole number, a finite number, a tuple of ...); the meaning of a
value (a unit gpudash knows, warning below critical) is checked by the class itself.

A tuple field takes a list or any other ordered iterable and keeps a tuple; text, a mapping or a set is refused
(text would be read letter by letter, a set has no order and the output would change from run to run).
"""

from __future__ import annotations

import math
import numbers
import types
import typing
from dataclasses import fields
from functools import cache
from typing import Any

# How a field is written, for the fix of a value of the wrong form (by field name, whatever the class).
EXAMPLES = {
    "by": '("node", "gpu")', "over": '("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE")', "tags": '("gpu",)',
    "backends": '("grafana", "cloudwatch")', "thresholds": "(70, 90), the warning then the critical level",
    "queries": '(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("pod",)),)', "panels": '[Panel(...), ...]',
    "rows": '[Row("GPUs", [Panel(...), ...]), ...]', "min": "0", "max": "100", "width": "12", "height": "8",
    "threshold": "80", "period_seconds": "300", "evaluation_periods": "3", "datapoints_to_alarm": "2",
    "condition": 'Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), ">", 87)',
}


class Declared(typing.NamedTuple):
    """What a field's annotation says it holds."""

    kind: Any  # str, int, float, bool, a class, or tuple
    optional: bool = False  # None is allowed too
    item: Any = None  # a tuple's items' kind
    length: int | None = None  # a tuple of fixed length (tuple[float, float]); None: any length


def _declared(annotation: Any) -> Declared:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        (kind,) = [a for a in args if a is not type(None)]
        return _declared(kind)._replace(optional=True)
    if typing.get_origin(annotation) is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return Declared(tuple, item=args[0])
        assert len(set(args)) == 1, annotation
        return Declared(tuple, item=args[0], length=len(args))
    assert annotation in (str, int, float, bool) or isinstance(annotation, type), annotation
    return Declared(annotation)


@cache
def declared_fields(cls: type) -> tuple[tuple[str, Declared], ...]:
    """(name, what it holds) of each field of a model class a definition writes."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, _declared(hints[f.name])) for f in fields(cls) if f.name != "defined_at")


def _what(kind: Any, plural: bool = False) -> str:
    if kind is str:
        return "text"
    if kind is int:
        return "whole numbers" if plural else "a whole number"
    if kind is float:
        return "finite numbers" if plural else "a finite number"
    if kind is bool:
        return "True or False"
    return f"{kind.__name__} objects" if plural else f"a {kind.__name__}"


def describe(declared: Declared) -> str:
    """What a field holds, in words ("a tuple of text", "two finite numbers", "a whole number or None")."""
    if declared.kind is tuple:
        said = f"{'two' if declared.length == 2 else declared.length} {_what(declared.item, True)}" \
            if declared.length else f"a tuple of {_what(declared.item, True)}"
    else:
        said = _what(declared.kind)
    return f"{said} or None" if declared.optional else said


def _shown(value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return text if type(value) in (str, int, float, bool, tuple, list, type(None)) else \
        f"{text} ({type(value).__name__})"


def _one(value: Any, kind: Any) -> tuple[bool, Any]:
    """(whether `value` is of `kind`, the value to keep): a number of another numeric type (numpy's) is kept as
    Python's own, so that it is written as JSON."""
    if kind is bool:
        return isinstance(value, bool), value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            return False, value
        return True, value if type(value) is int else int(value)
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False, value
        kept = value if type(value) in (int, float) else float(value)
        return math.isfinite(kept), kept
    return isinstance(value, kind), value


def _fix(name: str, declared: Declared, value: Any) -> str:
    if declared.kind in (int, float) and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            pass
        else:
            if math.isfinite(number):
                return f"write {name}={number:g}, a number without quotes"
    if declared.kind is str:
        return f'write {name} as text in quotes, e.g. {name}="..."'
    example = f", e.g. {name}={EXAMPLES[name]}" if name in EXAMPLES else ""
    return f"write {name} as {describe(declared)}{example}"


def checked(obj: Any) -> tuple[str, str] | None:
    """The first field of `obj` that does not hold what its class declares, as (problem, fix); None when every
    field does. Tuple fields given as a list (or another ordered iterable) are set to a tuple."""
    for name, declared in declared_fields(type(obj)):
        value = getattr(obj, name)
        if value is None and declared.optional:
            continue
        kind = type(value)
        if kind is declared.kind and kind is not float and kind is not tuple:
            continue  # what most fields hold: exactly the type declared, kept as it is
        if kind is tuple and declared.item is not float and (declared.length is None or len(value) == declared.length) \
                and all(type(item) is declared.item for item in value):
            continue
        if declared.kind is not tuple:
            ok, kept = _one(value, declared.kind)
            if not ok:
                return f"{name} is {_shown(value)}, not {describe(declared)}", _fix(name, declared, value)
            if kept is not value:
                object.__setattr__(obj, name, kept)
            continue
        if isinstance(value, (str, bytes, dict, set, frozenset)) or not hasattr(value, "__iter__"):
            why = {str: " (text is read letter by letter)", set: " (a set has no order)"}.get(type(value), "")
            return f"{name} is {_shown(value)}{why}, not {describe(declared)}", _fix(name, declared, value)
        items = tuple(value)
        if declared.length is not None and len(items) != declared.length:
            return f"{name} is {_shown(value)}, not {describe(declared)}", _fix(name, declared, value)
        kept_items = []
        for index, item in enumerate(items):
            ok, kept = _one(item, declared.item)
            if not ok:
                return (f"{name}[{index}] is {_shown(item)}, not {_what(declared.item)}",
                        _fix(name, declared, value))
            kept_items.append(kept)
        kept_tuple = tuple(kept_items)
        if kept_tuple is not value:
            object.__setattr__(obj, name, kept_tuple)
    return None

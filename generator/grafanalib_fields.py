"""Every field a grafanalib dashboard writes, checked against the type Grafana's dashboard model declares for it
(the Grafana Foundation SDK's model classes, generated from Grafana's schema), before the dashboard is written.

grafanalib checks some fields when an object is built (attrs validators) and most not at all: `title=5`,
`gridPos=GridPos(h="8", ...)`, `Target(expr=12)`, `fieldConfig` thresholds given as text reach Grafana as written, and
the panel fails there, or shows something else. A value the definition wrote that Grafana's model does not take is one
error naming the file and line of the dashboard, the field's place and what it holds (exit 2), as a neutral
definition's field is (definition_fields). What grafanalib writes by itself for a field the definition left alone is
grafanalib's, not the definition's: a value equal to the one the same grafanalib object built with its defaults
writes there is not refused (grafanalib's Stat writes its thresholds' steps as "", its gauges a step's value as
"null", its variables a current text of null: Grafana reads each). A data source named by text (Grafana migrates it)
is taken where the model has a reference.
"""

from __future__ import annotations

import contextlib
import enum
import io
import json
import re
import types
import typing
import warnings
from functools import cache
from typing import Any, Iterator

from .errors import InputError
from .plain import plain_data

Problem = tuple[str, Any, str]  # (where in the dashboard's JSON, the value, what Grafana's model takes there)
_PLAIN = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}


class _Mark:
    """A stand-in value whose identity names the attribute it was set on."""


@cache
def json_fields(cls: type) -> dict[str, Any]:
    """{JSON key: annotation} of an SDK model class, read from its own to_json (the attribute each key is written
    from carries a mark of its own)."""
    hints = typing.get_type_hints(cls)
    model = cls()
    marks = {}
    for name in hints:
        mark = _Mark()
        setattr(model, name, mark)
        marks[id(mark)] = name
    return {key: hints[marks[id(value)]] for key, value in model.to_json().items() if id(value) in marks}


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and not issubclass(kind, enum.Enum) and callable(getattr(kind, "to_json", None)) \
        and callable(getattr(kind, "from_json", None))


def _plain(value: Any, kind: Any) -> bool | None:
    """Whether `value` is of the plain `kind` (a bool is no number); None where `kind` is not plain."""
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is str:
        return isinstance(value, str)
    return None


def _named_by_type(value: Any, kinds: tuple) -> tuple:
    """The model classes of `kinds` whose `type` is the one `value` names (a row panel, `"type": "row"`, is a
    RowPanel, not a Panel, which would take it by ignoring its `panels`); () when none names one."""
    if not isinstance(value, dict) or "type" not in value:
        return ()
    return tuple(kind for kind in kinds if _is_model(kind) and typing.get_origin(json_fields(kind).get("type"))
                 is typing.Literal and value["type"] in typing.get_args(json_fields(kind)["type"]))


def problems(value: Any, kind: Any, path: str) -> Iterator[Problem]:
    """Each value under `value` that is not of `kind` as Grafana's model declares it; keys the model does not
    declare (an older schema's) are not read."""
    from grafana_foundation_sdk.cog import variants
    from grafana_foundation_sdk.models import common, prometheus

    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is typing.Any or kind is object:
        return
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return
        args = _named_by_type(value, args) or args
        found = [list(problems(value, arg, path)) for arg in args if arg is not type(None)]
        if all(found):  # no member takes it: the member it comes closest to says why
            yield from max(found, key=lambda each: max(len(p[0]) for p in each))
        return
    if origin is typing.Literal:
        if value not in args:
            yield path, value, " or ".join(map(repr, args))
        return
    if origin in (list, dict):
        if not isinstance(value, origin):
            yield path, value, "a list" if origin is list else "an object"
            return
        items = enumerate(value) if origin is list else value.items()
        for key, item in items:
            yield from problems(item, args[-1], f"{path}[{key}]" if origin is list else f"{path}.{key}")
        return
    plain = _plain(value, kind)
    if plain is not None:
        if not plain:
            yield path, value, _PLAIN[kind]
        return
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        allowed = [member.value for member in kind]
        if isinstance(value, bool) or value not in allowed:
            yield path, value, " or ".join(map(repr, allowed))
        return
    if kind is common.DataSourceRef and isinstance(value, str):
        return  # a data source by name, as older dashboards write it: Grafana's migration reads it
    if kind is variants.Dataquery:  # a panel's query: gpudash's data source is Prometheus
        kind = prometheus.Dataquery
    if _is_model(kind):
        if not isinstance(value, dict):
            yield path, value, "an object"
            return
        for key, annotation in json_fields(kind).items():
            if key in value:
                yield from problems(value[key], annotation, f"{path}.{key}" if path else key)


def _shape(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", path)


def _key(place: tuple[str, ...], path: str, value: Any) -> tuple:
    return (*place, _shape(path), json.dumps(value, sort_keys=True))


def _panel_kind(panel: Any):
    from grafana_foundation_sdk.models import dashboard as dm

    return dm.RowPanel if isinstance(panel, dict) and panel.get("type") == "row" else dm.Panel


@cache
def grafanalib_own() -> frozenset[tuple]:
    """What grafanalib's own objects, built with their defaults, write that Grafana's model does not declare: a
    dashboard's, any panel class's (a value one panel class writes by itself is grafanalib's way of writing that
    field: a Threshold's first step's value "null" in a gauge's defaults, and in a stat given thresholds), a
    template's. Grafana reads grafanalib's output as it is."""
    import inspect

    from grafana_foundation_sdk.models import dashboard as dm
    from grafanalib import core

    own = set()
    for _, cls in inspect.getmembers(core, inspect.isclass):
        if not issubclass(cls, core.Panel) or cls is core.Panel:
            continue
        try:
            # a deprecated class prints so when it is written (PieChart): not this build's news
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                panel = plain_data(cls(title="").to_json_data(), "to_json_data")
        except Exception:  # a class that needs more than a title: none of its defaults are known
            continue
        own.update(_key(("panel",), path, value)
                   for path, value, _ in problems(panel, _panel_kind(panel), ""))
    template = plain_data(core.Template(name="", query="").to_json_data(), "to_json_data")
    own.update(_key(("template",), path, value) for path, value, _ in problems(template, dm.VariableModel, ""))
    board = plain_data(core.Dashboard(title="").to_json_data(), "to_json_data")
    own.update(_key(("dashboard",), path, value) for path, value, _ in problems(board, dm.Dashboard, ""))
    return frozenset(own)


_PANEL = re.compile(r"^(panels\[\d+\](?:\.panels\[\d+\])?)(?:\.(.*))?$")
_TEMPLATE = re.compile(r"^(templating\.list\[\d+\])(?:\.(.*))?$")


def _place(model: dict, path: str) -> tuple[tuple[str, ...], str, str]:
    """(what holds the value, its path in that, the place's name for a message)."""
    match = _PANEL.match(path)
    if match:
        panel = model
        for step in re.findall(r"panels\[(\d+)\]", match.group(1)):
            panel = panel["panels"][int(step)]
        title = panel.get("title") if isinstance(panel, dict) else None
        return ("panel",), match.group(2) or "", \
            f"panel {title!r}" if isinstance(title, str) and title else match.group(1)
    match = _TEMPLATE.match(path)
    if match:
        return ("template",), match.group(2) or "", match.group(1)
    return ("dashboard",), path, "the dashboard"


def written_problems(model: dict) -> list[tuple[str, Problem]]:
    """(the place's name, problem) of each value of a grafanalib dashboard's JSON that Grafana's model does not take
    and grafanalib does not write by itself there."""
    from grafana_foundation_sdk.models import dashboard as dm

    own = grafanalib_own()
    found = []
    for path, value, wanted in problems(model, dm.Dashboard, ""):
        place, inner, name = _place(model, path)
        if _key(place, inner, value) not in own:
            found.append((name, (path, value, wanted)))
    return found


def check_grafanalib(model: dict, where: str) -> None:
    """InputError naming the first value of a grafanalib dashboard's JSON (`model`) Grafana's model does not take
    (written_problems), at `where` (the file and line that defined the dashboard)."""
    found = written_problems(model)
    if not found:
        return
    name, (path, value, wanted) = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    named = "" if path.startswith(name) else f"{name}: "  # a panel without a title is named by its path alone
    raise InputError(f"grafanalib dashboard {model.get('title')!r}: {named}{path} is {value!r}, not {wanted}{more}",
                     where=where, hint=f"write {path.rsplit('.', 1)[-1]} as {wanted} (Grafana's dashboard model, as "
                                       f"the Grafana Foundation SDK declares it)")

"""What a build's Grafana dashboards are made from, as one sha256 its manifest records, so that verify knows the uids
of the dashboards a build writes (a dashboard too large for one ConfigMap is cut into parts: dashboard_parts) without
rendering them, where the build in the folder was made from the same.

Rendering the dashboards is most of the CPU verify's kube group spends (0.18 s of verify's 0.5 s target at idle): the
parts' number follows each dashboard's size, which only its rendering tells. The same gpudash, settings (defaults
filled in), counters CSV and definitions make the same dashboards, so a build recording the digest of those names the
uids a build of them would write: verify reads them there, and renders only where no current build is at hand (a CI
job that did not generate, a definition or the CSV changed since)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields, is_dataclass
from typing import TYPE_CHECKING, Any

from . import __version__
from .errors import InputError
from .grafana_rows import moved_to_grid
from .grafanalib_fields import check_grafanalib
from .names import grafana_uid, grafanalib_uid
from .panel_ids import given_ids
from .plain import plain_data

if TYPE_CHECKING:
    from .project import Project


def defined_uids(project: Project) -> list[str]:
    """The uid of each dashboard defined, before any is cut into parts (dashboard_parts.part_counts tells into how
    many), in artifacts.grafana_dashboards' order: none rendered."""
    prefix = project.settings.grafana.uid_prefix
    uids = [grafana_uid(prefix, definition.id) for definition in project.grafana_definitions()]
    return uids + [grafanalib_uid_of(grafanalib_json(item)) for item in project.grafanalib_dashboards]


def made_from(project: Project) -> str:
    """The sha256 of what decides the Grafana dashboards of a build of `project`: this gpudash, the settings (defaults
    filled in), the counters CSV, the definitions (their places in their files left out: the dashboards do not show
    them) and the grafanalib dashboards' JSON."""
    legacy = [grafanalib_json(item) for item in project.grafanalib_dashboards]
    made = {"gpudash": __version__, "settings": project.settings.raw, "counters": project.catalog.sha256,
            "dashboards": [_placeless(definition) for definition in project.grafana_definitions()],
            "grafanalib": legacy}
    # (an object whose text is its address would give another digest in each process: never current, never wrong)
    return hashlib.sha256(json.dumps(made, sort_keys=True, default=repr).encode()).hexdigest()


def grafanalib_json(item) -> dict[str, Any]:
    """A grafanalib dashboard's JSON (before its uid and owner tag are set: artifacts.grafana_dashboards), its rows
    moved onto the grid as Grafana moves them (grafana_rows)."""
    try:
        model = plain_data(item.value.to_json_data(), "to_json_data")
    except (TypeError, ValueError, AttributeError, RecursionError) as exc:  # what the user's objects hold
        raise InputError(f"the grafanalib dashboard cannot be written as JSON ({type(exc).__name__}: {exc})",
                         where=item.where, hint="give its panels grafanalib objects, text and numbers only") from None
    moved_to_grid(model, item.where)
    check_grafanalib(model, item.where)
    given_ids(model)  # a panel without an id: one from its title, as gpudash's own (Grafana's at load is its place)
    return model


def grafanalib_uid_of(model: dict[str, Any]) -> str:
    """A grafanalib dashboard's uid: the one it sets, else made from its title."""
    return model.get("uid") or grafanalib_uid(model.get("title", ""))


def _placeless(value: Any) -> Any:
    """`value` as `dataclasses.asdict` gives it, every "defined_at" key left out and tuples as lists: what json.dumps
    writes of the two alike, in one walk with no copies (asdict deep-copies every value it does not walk into, and
    the copies were walked again: a fifth of the build's CPU outside the dashboards' rendering with 4,000 distinct
    panels). Text and numbers are written as they are, a copy as its original."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(f.name for f in fields(kind)) if is_dataclass(kind) else False
    if names is not False:  # a dataclass instance: its fields, in their order
        return {name: _placeless(getattr(value, name)) for name in names if name != "defined_at"}
    if isinstance(value, dict):
        return {key: _placeless(item) for key, item in value.items() if key != "defined_at"}
    if isinstance(value, (list, tuple)):
        return [_placeless(item) for item in value]
    return value


_FIELDS: dict[type, tuple[str, ...] | bool] = {}  # the fields of each dataclass met (False: not a dataclass)

"""docs/definitions.md is where the README sends a newcomer for "everything a definition can say": its reference
names every field of the model's classes with its default, every choice they take, every panel helper and unit
key."""

from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

from generator import model, panels
from generator.units import UNITS
from tests.support import documentation

CLASSES = (model.Dashboard, model.Row, model.Panel, model.Query, model.Alarm, model.Condition)
CHOICES = {"aggregation": model.AGGREGATIONS, "group key": model.GROUP_KEYS, "panel kind": model.PANEL_KINDS,
           "comparison": model.COMPARISONS, "severity": model.SEVERITIES, "missing_data": model.MISSING_DATA,
           "scope": model.ALARM_SCOPES, "backend": model.BACKENDS, "unit key": tuple(UNITS)}


def _reference() -> str:
    text = documentation.text("definitions.md")
    start = text.index("## The model, field by field")
    return text[start:text.index("\n## ", start + 1)]


def _row(cls) -> str:
    found = re.search(rf"^\| `{cls.__name__}` \|(.*)$", _reference(), re.M)
    assert found, f"docs/definitions.md has no row for {cls.__name__}"
    return found.group(1)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_field_is_in_the_reference(cls):
    row = _row(cls)
    missing = [f.name for f in dataclasses.fields(cls) if f.name != "defined_at" and f"`{f.name}`" not in row]
    assert not missing, f"{cls.__name__}: {missing} not in docs/definitions.md"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_default_is_the_one_written(cls):
    row = _row(cls)
    for f in dataclasses.fields(cls):
        if f.name == "defined_at" or f.default is dataclasses.MISSING:
            continue
        # a default is written after its field, or after a group of fields sharing it ("`min`, `max` (`None`)")
        written = re.search(rf"`{f.name}`(?:(?:, | and )`\w+`)* \(`([^`]*)`", row)
        assert written, f"docs/definitions.md gives no default for {cls.__name__}.{f.name}"
        assert written.group(1).replace("\\|", "|") == repr(f.default).replace("'", '"'), (cls.__name__, f.name)


@pytest.mark.parametrize("what", CHOICES)
def test_every_choice_is_in_the_reference(what):
    reference = _reference()
    missing = [value for value in CHOICES[what] if f"`{value}`" not in reference and f'`"{value}"`' not in reference]
    assert not missing, f"{what}: {missing} not in docs/definitions.md"


def test_every_panel_helper_is_in_the_reference():
    helpers = [name for name, value in vars(panels).items()
               if inspect.isfunction(value) and value.__module__ == panels.__name__ and not name.startswith("_")]
    assert helpers
    assert not [name for name in helpers if f"`{name}(" not in _reference()]

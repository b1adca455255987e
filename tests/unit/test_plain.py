"""SDK objects become plain data exactly as writing them as JSON and reading them back would make them."""

from __future__ import annotations

import enum
import json
import math

import pytest

from generator.plain import plain_data


class Colour(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Model:
    def __init__(self, **fields):
        self.fields = fields

    def to_json(self):
        return self.fields


class Text(str):
    pass


def _through_text(value):
    return json.loads(json.dumps(value, default=lambda obj: obj.to_json()))


TRICKY = Model(
    title=Text("GPU"), colour=Colour.RED, level=Level.HIGH, flag=True, nothing=None, ratio=0.1, tiny=1.5e-7,
    big=2 ** 70, pair=(1, Model(inner=("a", [Model(deep={"k": (2.5,)})]))),
    keys={1: "int", 2.5: "float", False: "false", None: "null", Colour.RED: "enum", Level.HIGH: "int enum"},
    text="é ✓ \U0001f600", empty=[], nested={"list": [(), {}]},
)


def test_plain_data_is_what_json_gives_back():
    plain = plain_data(TRICKY, "to_json")
    expected = _through_text(TRICKY)
    assert plain == expected
    assert json.dumps(plain) == json.dumps(expected)  # the same keys in the same order
    assert [type(v) for v in plain.values()] == [type(v) for v in expected.values()]
    assert type(plain["title"]) is str and type(plain["colour"]) is str and type(plain["level"]) is int


def test_floats_that_are_not_numbers_stay_floats():
    plain = plain_data(Model(nan=float("nan"), inf=float("inf"), keys={float("nan"): 1, float("-inf"): 2}), "to_json")
    assert math.isnan(plain["nan"]) and plain["inf"] == math.inf
    assert list(plain["keys"]) == ["NaN", "-Infinity"]


def test_nothing_is_shared_with_the_objects():
    tags = ["a"]
    plain = plain_data(Model(tags=tags, again=tags), "to_json")
    plain["tags"].append("b")
    assert tags == ["a"] and plain["again"] == ["a"]


def test_what_json_cannot_hold_is_refused_as_json_refuses_it():
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        plain_data(Model(legend={1, 2}), "to_json")
    with pytest.raises(TypeError, match="Model is not JSON serializable"):
        plain_data(Model(inner=Model()), "to_json_data")
    with pytest.raises(TypeError, match="keys must be"):
        plain_data({(1, 2): "tuple key"}, "to_json")
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        plain_data(loop, "to_json")


def test_renderers_and_the_artifact_set_turn_nothing_into_text():
    """Only output.py encodes the artifact set: the renderers and artifacts.py neither write JSON or YAML
    text nor parse it back (a CloudFormation template's split asks serialize how many bytes a resource takes,
    serialize.nested_json_size: how a file is written stays serialize's)."""
    import re
    from pathlib import Path

    import generator

    package = Path(generator.__file__).parent
    encoders = re.compile(r"\b(json|yaml|orjson)\.\w+\(|\b(to_json|to_yaml|compact_json|canonical_json|parse_json)\(")
    found = [f"{path.relative_to(package)}:{number}: {line.strip()}"
             for path in [package / "artifacts.py", *sorted((package / "render").glob("*.py"))]
             for number, line in enumerate(path.read_text().splitlines(), 1) if encoders.search(line)]
    assert found == []


def test_a_cycle_through_an_object_or_a_dict_is_refused_as_json_refuses_it():
    """The walk does not watch for cycles: one found by recursing past Python's limit is json.dumps's ValueError."""
    looped = Model(name="a")
    looped.fields["again"] = looped
    with pytest.raises(ValueError, match="Circular"):
        plain_data(looped, "to_json")
    ring: dict = {"k": [1]}
    ring["k"].append({"back": ring})
    with pytest.raises(ValueError, match="Circular"):
        plain_data(ring, "to_json")

"""lint.schema_errors remembers a validator's errors per instance: an instance is known by everything jsonschema reads
of it (each value's type, order and text), so a remembered answer is only ever the one the validator gives."""

from __future__ import annotations

import jsonschema

from generator.lint import _schema_errors, schema_errors

SCHEMA = {"type": "object", "properties": {"a": {"type": "array", "maxItems": 2}, "b": {"type": "integer"},
                                           "c": {"type": "boolean"}}}


def test_each_instance_gets_the_errors_jsonschema_finds_in_it_as_it_is_now():
    validator = jsonschema.Draft202012Validator(SCHEMA)
    instances = [{"a": [1, 2]}, {"a": (1, 2)}, {"a": [1, 2, 3]}, {"b": 1}, {"b": 1.0}, {"b": True}, {"c": True},
                 {"c": 1}, {"b": "1"}, {"a": [1], "b": "x", "c": 0}, {"c": 0, "b": "x", "a": [1, 2, 3]}, [], None]
    for _ in range(2):  # the second time from what was remembered
        for instance in instances:
            assert schema_errors(validator, instance) == _schema_errors(validator, instance), instance
    assert schema_errors(validator, {"a": (1, 2)}) == (("a", "(1, 2) is not of type 'array'"),)
    assert schema_errors(validator, {"b": True}) == (("b", "True is not of type 'integer'"),)
    changed = {"a": [1]}
    assert schema_errors(validator, changed) == ()
    changed["a"].extend([2, 3])
    assert schema_errors(validator, changed) == (("a", "has 3 items; at most 2 allowed"),)


def test_another_validator_does_not_read_what_one_remembered():
    strict = jsonschema.Draft202012Validator({**SCHEMA, "additionalProperties": False})
    loose = jsonschema.Draft202012Validator(SCHEMA)
    assert schema_errors(loose, {"d": 1}) == ()
    assert schema_errors(strict, {"d": 1}) == (("", "Additional properties are not allowed ('d' was unexpected)"),)


def test_an_instance_pickle_cannot_write_is_checked_every_time():
    validator = jsonschema.Draft202012Validator(SCHEMA)
    unpicklable = {"a": [lambda: 0]}
    assert schema_errors(validator, unpicklable) == _schema_errors(validator, unpicklable) == ()

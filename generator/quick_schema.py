"""A quick yes for documents that plainly conform to a JSON Schema, without importing jsonschema.

`conforms` understands the keywords gpudash's own schemas use and answers True only when
the document is valid; on anything it is unsure of (an unknown keyword, a float where an
integer is asked for, a bool in an enum) it answers False, and the caller runs the full
validator, which decides and words the errors. So a valid settings file costs no
jsonschema import, and an invalid one gets exactly the messages it always got; and lint
judges a fleet's thousands of dashboards and alarms against their schemas in a tenth of
jsonschema's time, which it runs on those this says no to.
"""

from __future__ import annotations

from typing import Any, Callable

# patternErrorMessage: what a pattern asks for, in words (VS Code's and the YAML language server's keyword)
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "default", "examples",
                          "patternErrorMessage"})
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: type(v) is int,  # stricter than JSON Schema (5.0): unsure means "ask jsonschema"
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


def conforms(instance: Any, schema: dict[str, Any], search: Callable[[str, str], bool],
             root: dict[str, Any] | None = None) -> bool:
    """True only when `instance` is valid against `schema`; `search(pattern, text)` decides `pattern`."""
    if schema is True:
        return True
    if not isinstance(schema, dict):
        return False
    root = root or schema
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS or keyword in _JUDGED_WITH_IF:
            continue
        check = _KEYWORDS.get(keyword)
        if check is None or not check(instance, value, schema, search, root):
            return False
    return True


def _ref(instance, value, schema, search, root) -> bool:
    """A reference into the same schema ("#/$defs/name", "#/properties/name", ...); any other: unsure."""
    if not isinstance(value, str) or not value.startswith("#/"):
        return False
    target: Any = root
    for part in value[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or part not in target:
            return False
        target = target[part]
    return conforms(instance, target, search, root)


def _all_of(instance, value, schema, search, root) -> bool:
    return isinstance(value, list) and all(conforms(instance, sub, search, root) for sub in value)


def _any_of(instance, value, schema, search, root) -> bool:
    return isinstance(value, list) and any(conforms(instance, sub, search, root) for sub in value)


def _const(instance, value, schema, search, root) -> bool:
    return _enum(instance, [value], schema, search, root)


def _if(instance, value, schema, search, root) -> bool:
    """`then` where `if` holds, `else` where it certainly does not; unsure of `if`: unsure."""
    if conforms(instance, value, search, root):
        return conforms(instance, schema.get("then", True), search, root)
    if _fails(instance, value, root):
        return conforms(instance, schema.get("else", True), search, root)
    return False


def _fails(instance: Any, schema: Any, root: dict[str, Any]) -> bool:
    """True only when `instance` certainly does not conform to `schema`, judged by the keywords whose no is plain:
    a property's const or enum of strings, a required name missing, a type other than the one asked for."""
    if not isinstance(schema, dict):
        return schema is False
    for keyword, value in schema.items():
        if keyword == "properties" and isinstance(instance, dict) and isinstance(value, dict):
            if any(key in instance and _fails(instance[key], sub, root) for key, sub in value.items()):
                return True
        elif keyword in ("const", "enum"):
            options = [value] if keyword == "const" else value
            # (strings against strings, or a string against none: JSON Schema's 1 == 1.0 and true != 1 left out)
            if isinstance(options, list) and (isinstance(instance, str) or instance is None) and \
                    all(isinstance(o, str) or o is None for o in options) and \
                    not any(type(o) is type(instance) and o == instance for o in options):
                return True
        elif keyword == "required" and isinstance(instance, dict) and isinstance(value, list):
            if any(name not in instance for name in value):
                return True
        elif keyword == "type" and value in ("object", "array", "string") and not _TYPES[value](instance):
            return True
    return False


def _type(instance, value, schema, search, root) -> bool:
    names = value if isinstance(value, list) else [value]
    return any(name in _TYPES and _TYPES[name](instance) for name in names)


def _properties(instance, value, schema, search, root) -> bool:
    if not isinstance(instance, dict):
        return True
    return all(conforms(instance[key], sub, search, root) for key, sub in value.items() if key in instance)


def _additional(instance, value, schema, search, root) -> bool:
    if not isinstance(instance, dict):
        return True
    extra = [key for key in instance if key not in schema.get("properties", {})]
    if value is False:
        return not extra
    if value is True:
        return True
    return isinstance(value, dict) and all(conforms(instance[key], value, search, root) for key in extra)


def _items(instance, value, schema, search, root) -> bool:
    if not isinstance(instance, list):
        return True
    return isinstance(value, dict) and all(conforms(item, value, search, root) for item in instance)


def _required(instance, value, schema, search, root) -> bool:
    return not isinstance(instance, dict) or all(name in instance for name in value)


def _enum(instance, value, schema, search, root) -> bool:
    # Same type and equal: JSON Schema tells true from 1, Python does not.
    return type(instance) in (str, int, float, type(None)) and \
        any(type(option) is type(instance) and option == instance for option in value)


def _pattern(instance, value, schema, search, root) -> bool:
    return not isinstance(instance, str) or search(value, instance)


def _string_bound(limit: Callable[[int, int], bool]):
    return lambda instance, value, *_: not isinstance(instance, str) or limit(len(instance), value)


def _array_bound(limit: Callable[[int, int], bool]):
    return lambda instance, value, *_: not isinstance(instance, list) or limit(len(instance), value)


def _number_bound(limit: Callable[[float, float], bool]):
    return lambda instance, value, *_: type(instance) not in (int, float) or limit(instance, value)


def _unique(instance, value, schema, search, root) -> bool:
    if not value or not isinstance(instance, list):
        return True
    return all(isinstance(item, str) for item in instance) and len(set(instance)) == len(instance)


_JUDGED_WITH_IF = frozenset({"$defs", "then", "else"})  # read by `if` (and a reference), not on their own
_KEYWORDS: dict[str, Callable[..., bool]] = {
    "$ref": _ref,
    "allOf": _all_of,
    "anyOf": _any_of,
    "const": _const,
    "if": _if,
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional,
    "items": _items,
    "required": _required,
    "enum": _enum,
    "pattern": _pattern,
    "minLength": _string_bound(lambda n, v: n >= v),
    "maxLength": _string_bound(lambda n, v: n <= v),
    "minItems": _array_bound(lambda n, v: n >= v),
    "maxItems": _array_bound(lambda n, v: n <= v),
    "minimum": _number_bound(lambda n, v: n >= v),
    "maximum": _number_bound(lambda n, v: n <= v),
    "exclusiveMinimum": _number_bound(lambda n, v: n > v),
    "exclusiveMaximum": _number_bound(lambda n, v: n < v),
    "uniqueItems": _unique,
    "multipleOf": _number_bound(lambda n, v: n % v == 0),
}

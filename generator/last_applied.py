"""What client-side `kubectl apply` writes into an object's annotations, which the API server refuses past a limit:
one count for every object gpudash ships (the dashboards' ConfigMaps, lint GF011; the PrometheusRules, lint PR007 and
the size their rule groups are cut to, render.alarms.size_bounded)."""

from __future__ import annotations

from typing import Any

from .serialize import canonical_json

APPLY_LIMIT = 262_144  # the API server's limit on an object's annotations (keys and values), bytes

# What client-side `kubectl apply` stores besides the object: the annotation's own key, and the namespace it sets on an
# object the file gives none (the most a namespace name holds, 63 bytes: the count never passes an object it refuses)
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_NAMESPACE_FIELD = len(',"namespace":""') + 63
# Go's encoding/json writes these as \u003c, \u003e, \u0026 (6 bytes for 1) and U+2028, U+2029 as \u2028, \u2029 (6 for 3):
# the bytes each adds to its UTF-8 encoding
_GO_ESCAPES_ADD = {"<": 5, ">": 5, "&": 5, "\u2028": 3, "\u2029": 3}
_GO_ESCAPES_UTF8 = tuple((character.encode(), added) for character, added in _GO_ESCAPES_ADD.items())
_GO_ESCAPES_ASCII = tuple((encoded, added) for encoded, added in _GO_ESCAPES_UTF8 if len(encoded) == 1)


def encoded_bytes(value: Any) -> int:
    """The bytes of `value` as kubectl encodes it (Go's encoding/json through apimachinery's UnstructuredJSONScheme: keys
    sorted, no spaces, `<`, `>` and `&` escaped, non-ASCII as UTF-8)."""
    # serialize.canonical_json: that text (json.dumps with sorted keys, compact, ensure_ascii=False) in UTF-8, from
    # orjson where it writes the same bytes (the standard library's encoder escaped a dashboard's 100-200 kB text, in a
    # sidecar ConfigMap, 3 to 4 times slower: a tenth of a build of 200 dashboards)
    text = canonical_json(value)
    # counted, not written: a translate of the text (150-220 kB a bundled dashboard) took 10 ms, a count takes 1
    if text.isascii():  # neither U+2028 nor U+2029 (a count of their three bytes reads 4 times slower than of one)
        return len(text) + sum(text.count(character) * added for character, added in _GO_ESCAPES_ASCII)
    # each of U+2028 and U+2029 counted by its UTF-8 bytes, which no other character's bytes hold
    return len(text) + sum(text.count(character) * added for character, added in _GO_ESCAPES_UTF8)


def last_applied_bytes(resource: dict[str, Any]) -> int:
    """The bytes client-side `kubectl apply` writes into the object's annotations for `resource`, which the API server
    refuses over APPLY_LIMIT (the sum of every annotation's key and value): the annotations the object has, and
    last-applied-configuration, the object as kubectl encodes it (encoded_bytes) with a newline at the end, its own
    key, and the namespace kubectl sets."""
    others = sum(len(key.encode()) + len(value.encode())
                 for key, value in resource["metadata"].get("annotations", {}).items())
    return encoded_bytes(resource) + 1 + len(LAST_APPLIED) + _NAMESPACE_FIELD + others

"""docs/settings.md is the reference of every key of gpudash.yaml: its table names each key the schema takes."""

from __future__ import annotations

import json
import re

from tests.support import documentation

SCHEMA = documentation.REPO / "schemas" / "config.schema.json"


def _schema_keys() -> set[str]:
    """Every key path the settings schema takes (`alarms.actions.critical`; a list's items as `clusters[]`)."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    definitions = schema.get("$defs") or schema.get("definitions") or {}
    keys: set[str] = set()

    def walk(node: dict, path: str) -> None:
        if "$ref" in node:
            node = definitions[node["$ref"].rsplit("/", 1)[-1]]
        for each in ("oneOf", "anyOf", "allOf"):
            for branch in node.get(each, []):
                walk(branch, path)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]")
        for key, value in (node.get("properties") or {}).items():
            keys.add(f"{path}.{key}" if path else key)
            walk(value, f"{path}.{key}" if path else key)

    walk(schema, "")
    return keys


def _named_in_table(text: str) -> set[str]:
    """The keys the first column of the table names: `agent.namespace`, `.metric_selection` (a sibling of the
    first) and `refresh` (likewise, written bare); `thresholds.*` names every key under it."""
    named: set[str] = set()
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        names = re.findall(r"`([^`]+)`", line.split("|")[1])
        section = names[0].rsplit(".", 1)[0] if "." in names[0] else ""
        for name in names:
            if name.startswith("."):
                name = section + name
            elif "." not in name and name != names[0] and section:
                name = f"{section}.{name}"
            named.add(name)
    return named


def _documented(key: str, named: set[str]) -> bool:
    """A key is documented where the table names it, a section holding it (`clusters[]`, `thresholds.*`: their row
    describes each key inside), or, for a section, any key inside it."""
    parts = key.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in named or f"{prefix}.*" in named:
            return True
    return any(name.startswith((f"{key}.", f"{key}[]")) for name in named)


def test_the_settings_table_names_every_key_the_schema_takes():
    named = _named_in_table(documentation.text("settings.md"))
    missing = sorted(key for key in _schema_keys() if not _documented(key, named))
    assert not missing, f"docs/settings.md has no row for: {', '.join(missing)}"


def test_the_check_sees_a_key_left_out():
    named = _named_in_table("| `alarms.expected_gpus` | x | y |\n| `cloudwatch.period`, `.top_pods` | 1 | z |\n")
    assert _documented("cloudwatch.top_pods", named) and _documented("alarms", named)
    assert not _documented("alarms.name_prefix", named) and not _documented("cloudwatch.top_gpus", named)

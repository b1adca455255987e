"""gpudash.yaml: loaded with yaml.safe_load, validated against schemas/config.schema.json.

Defaults live in the schema (`default` keywords) and nowhere else; `_with_defaults`
fills them in. Errors name the file, the line and the path inside the document.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError
from .resources import bundled, default_config, default_counters, schema


@dataclass(frozen=True)
class Cluster:
    name: str
    region: str
    prometheus_label: str | None = None


@dataclass(frozen=True)
class Labels:
    """Which Prometheus label carries each fact (BRIEF §3: pod vs exported_pod)."""

    pod: str
    namespace: str
    container: str
    node: str
    cluster: str


@dataclass(frozen=True)
class Levels:
    warning: float
    critical: float


@dataclass(frozen=True)
class Settings:
    source: str  # the config file, or "<defaults>"
    base_dir: Path  # relative paths in the file are resolved from here
    raw: dict[str, Any]  # the validated document with defaults filled in
    clusters: tuple[Cluster, ...]
    labels: Labels

    @property
    def grafana(self) -> dict[str, Any]:
        return self.raw["grafana"]

    @property
    def cloudwatch(self) -> dict[str, Any]:
        return self.raw["cloudwatch"]

    @property
    def exporter(self) -> dict[str, Any]:
        return self.raw["exporter"]

    @property
    def scrape(self) -> dict[str, Any]:
        return self.raw["scrape"]

    @property
    def alarms(self) -> dict[str, Any]:
        return self.raw["alarms"]

    @property
    def agent(self) -> dict[str, Any]:
        return self.raw["agent"]

    def levels(self, name: str) -> Levels:
        value = self.raw["thresholds"][name]
        return Levels(float(value["warning"]), float(value["critical"]))

    def threshold(self, name: str) -> float:
        return float(self.raw["thresholds"][name])

    @property
    def shared_prometheus(self) -> bool:
        """True when series carry a cluster label, so dashboards get a cluster variable."""
        return any(c.prometheus_label for c in self.clusters)

    @property
    def counters_path(self) -> Path:
        value = self.raw["counters"]
        return (self.base_dir / value) if value else default_counters()

    def definition_dirs(self, kind: str) -> tuple[Path, ...]:
        value = self.raw["definitions"][kind]
        if value is None:
            return (bundled(kind),)
        return tuple(self.base_dir / folder for folder in value)


@cache
def _schema() -> dict[str, Any]:
    return json.loads(schema("config.schema.json").read_text())


def _with_defaults(document: Any, node: dict[str, Any], root: dict[str, Any]) -> Any:
    """Fill missing object properties from the schema's `default` keywords, recursively."""
    if "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
    if isinstance(document, dict) and "properties" in node:
        for key, sub in node["properties"].items():
            if key not in document and "default" in sub:
                document[key] = copy.deepcopy(sub["default"])
            if key in document:
                document[key] = _with_defaults(document[key], sub, root)
    elif isinstance(document, list) and isinstance(node.get("items"), dict):
        return [_with_defaults(item, node["items"], root) for item in document]
    return document


def _line_of(text: str, path: list[Any]) -> int | None:
    """1-based line of the node at `path` in YAML text (None when it cannot be found)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for step in path:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == step), None)
            if match is None:
                return line
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
        else:
            return line
        line = node.start_mark.line + 1
    return line


def parse_settings(text: str, source: str, base_dir: Path) -> Settings:
    import jsonschema  # imported here: only runs when there is a document to check

    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"not valid YAML: {problem}", where=where,
                         hint="fix the YAML syntax (indentation, quotes, colons)") from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise InputError("the settings must be a YAML mapping of keys to values", where=f"{source}:1",
                         hint="start from the commented default: gpudash init-config")
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        path = list(first.absolute_path)
        line = _line_of(text, path)
        dotted = ".".join(str(p) for p in path) or "(top level)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InputError(f"{dotted}: {first.message}{more}",
                         where=f"{source}:{line}" if line else source,
                         hint="see schemas/config.schema.json or the README's config reference")
    document = _with_defaults(document, _schema(), _schema())
    clusters = tuple(Cluster(**c) for c in document["clusters"])
    names = [c.name for c in clusters]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise InputError(f"cluster {duplicate!r} is listed twice", where=source,
                         hint="give every cluster a unique name")
    return Settings(source=source, base_dir=base_dir, raw=document, clusters=clusters,
                    labels=Labels(**document["labels"]))


def load_settings(path: Path | None) -> Settings:
    """Settings from `path`, or the bundled commented default when `path` is None."""
    target = path or default_config()
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("settings file not found", where=str(target),
                         hint="pass --config with the path of your gpudash.yaml") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read settings ({exc})", where=str(target)) from None
    source = str(target) if path else "<bundled gpudash.yaml>"
    return parse_settings(text, source=source, base_dir=target.resolve().parent)

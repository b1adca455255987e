"""The quick schema check says yes only to what jsonschema accepts: settings (and spares valid files the import), and\nthe CloudWatch dashboard bodies and alarm requests lint judges."""

from __future__ import annotations

import copy
import re
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from generator import settings
from generator.quick_schema import conforms
from generator.resources import default_config

SCHEMA = settings._schema()
# text()'s own alphabet (characters(codec="utf-8"): every code point but the surrogates, the same intervals, so the same
# examples) named by category: Hypothesis then needs no table of what UTF-8 encodes, 3 s of CPU to work out on a fresh
# clone, in each worker process that gets there before another one has written it
_character = st.characters(blacklist_categories=("Cs",))
_junk = (st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True) | st.text(_character, max_size=4)
         | st.lists(st.integers(0, 2), max_size=2)
         | st.dictionaries(st.text(_character, max_size=3), st.integers(0, 2), max_size=1))


def _resolve(node):
    while "$ref" in node:
        node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _document(node, depth: int = 0):
    """Values shaped by the schema node (its defaults, examples, enums, types); now and then one is off."""
    node = _resolve(node)
    kinds = node.get("type", [])
    kinds = kinds if isinstance(kinds, list) else [kinds]
    shaped, off = [], [_junk]
    samples = [*node.get("examples", []), *node.get("enum", [])] + ([node["default"]] if "default" in node else [])
    if samples:
        shaped.append(st.sampled_from(samples))
    if "object" in kinds and "properties" in node and depth < 4:
        fields = {key: _document(sub, depth + 1) for key, sub in node["properties"].items()}
        shaped.append(st.fixed_dictionaries({}, optional=fields))
        off.append(st.fixed_dictionaries({"unknown_key": _junk}, optional=fields))
    if "array" in kinds and isinstance(node.get("items"), dict) and depth < 4:
        shaped.append(st.lists(_document(node["items"], depth + 1), max_size=3))
    if "string" in kinds:
        off.append(st.sampled_from(["us-east-1", "gpu-cluster", "pod", "30s", "", "Not Valid", "x\n", "a" * 300]))
    if "integer" in kinds or "number" in kinds:
        off += [st.integers(-1, 400), st.sampled_from([0.5, 80.0, 5.0, 1e9])]
    if "boolean" in kinds:
        shaped.append(st.booleans())
    if not shaped:
        return st.one_of(off)
    well, badly = st.one_of(shaped), st.one_of(off)
    return st.integers(0, 9).flatmap(lambda n: badly if n == 0 else well)  # mostly well-shaped


def _quick(document) -> bool:
    return conforms(document, SCHEMA, lambda pattern, text: re.search(settings._anchored(pattern), text) is not None)


@hypothesis_settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(_document(SCHEMA))
def test_a_quick_yes_is_a_jsonschema_yes(document):
    if _quick(document):
        assert list(settings._validator().iter_errors(document)) == []


def _leaves(node, path):
    node = _resolve(node)
    yield path
    for key, sub in node.get("properties", {}).items():
        yield from _leaves(sub, [*path, key])
    if isinstance(node.get("items"), dict):
        yield from _leaves(node["items"], [*path, 0])


def test_one_bad_value_anywhere_gets_no_quick_yes():
    """Each schema node of the bundled default document, in turn, holds one value at or past a limit."""
    base = yaml.safe_load(default_config().read_text())
    base["alarms"]["static_pods"] = ["pod-a"]
    base["alarms"]["actions"] = {"critical": ["arn:aws:sns:us-east-1:123456789012:gpu"], "warning": []}
    checked = 0
    for path in _leaves(SCHEMA, []):
        if not path:
            continue
        parent = base
        for step in path[:-1]:
            parent = parent.get(step) if isinstance(parent, dict) else parent[step] if parent else None
        if parent is None or (isinstance(parent, list) and not parent):
            continue
        current = parent[path[-1]] if isinstance(parent, list) else parent.get(path[-1])
        bad = ["", "x\n", "Not Valid!", "a" * 300, -1, 0, 5.5, 301, 501, 1e9, [], True, None, {"x": 1}]
        if isinstance(current, list) and current:
            bad += [[current[0], current[0]], [f"{current[0]}{i}" for i in range(40)]]
        for value in bad:
            document = copy.deepcopy(base)
            target = document
            for step in path[:-1]:
                target = target[step]
            target[path[-1]] = value
            if _quick(document):
                assert list(settings._validator().iter_errors(document)) == [], (path, value)
            checked += 1
    assert checked > 500


def test_plain_settings_get_the_quick_yes():
    documents = [
        yaml.safe_load(default_config().read_text()),
        {},
        {"clusters": [{"name": "a", "region": "us-east-1"}, {"name": "b", "region": "eu-west-1",
                                                            "prometheus_label": "b"}],
         "labels": {"pod": "exported_pod"}, "definitions": {"dashboards": ["dash"]},
         "agent": {"metric_selection": "used"}},
    ]
    for document in documents:
        assert _quick(document), document


def test_plain_settings_do_not_import_jsonschema(tmp_path):
    (tmp_path / "gpudash.yaml").write_text("clusters:\n  - {name: a, region: eu-west-1}\n")
    code = ("import sys; from pathlib import Path; from generator.settings import load_settings; "
            f"load_settings(Path({str(tmp_path / 'gpudash.yaml')!r})); load_settings(None); "
            "print('jsonschema' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert result.stdout.strip() == "False"


# Lint judges every CloudWatch dashboard body and alarm request of a build against gpudash's own schemas: the quick
# yes first (a fleet's thousands of bodies), jsonschema on a no. Its yes must be jsonschema's.
def _lint_quick(document, schema_name: str) -> bool:
    from generator.lint.cloudwatch_rules import _validator

    return conforms(document, _validator(schema_name).schema, lambda pattern, text: re.search(pattern, text) is not None)


def _lint_errors(document, schema_name: str) -> list:
    from generator.lint.cloudwatch_rules import _validator

    return list(_validator(schema_name).iter_errors(document))


@pytest.fixture(scope="module")
def built_cloudwatch(tmp_path_factory):
    from generator.artifacts import build
    from generator.project import load_project

    folder = tmp_path_factory.mktemp("quick")
    (folder / "gpudash.yaml").write_text("")
    artifacts = build(load_project(folder / "gpudash.yaml"), grafana=False)
    return ([d.body for d in artifacts.cloudwatch_dashboards],
            [{k: v for k, v in a.request.items() if k != "AlarmDescription"} for a in artifacts.alarms])


def test_generated_dashboards_and_alarms_get_the_quick_yes(built_cloudwatch):
    bodies, requests = built_cloudwatch
    assert bodies and requests
    assert all(_lint_quick(body, "cloudwatch-dashboard.schema.json") for body in bodies)
    assert all(_lint_quick(request, "cloudwatch-alarm.schema.json") for request in requests)


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*path, index))


def _with(document, path, value):
    document = copy.deepcopy(document)
    target = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return document


def test_one_bad_value_anywhere_in_a_body_or_alarm_gets_no_quick_yes(built_cloudwatch):
    """Each value of a dashboard body (a text widget and a metric widget) and of each kind of alarm request, in turn,
    replaced by one at or past a limit, of another type, or a widget of another type (a text widget's properties are
    judged by the text schema: `if`/`then`)."""
    bodies, requests = built_cloudwatch
    kinds = {}
    for request in requests:
        kinds.setdefault(tuple(sorted(request)), request)
    bad = ["", "text", "metric", "Not Valid!", "a" * 1100, -1, 0, 5.5, 24, 45, 1001, [], True, None, {"x": 1}]
    body = next(b for b in bodies if {w["type"] for w in b["widgets"]} >= {"text", "metric"})
    body = {**body, "widgets": [next(w for w in body["widgets"] if w["type"] == kind) for kind in ("text", "metric")]}
    checked = refused = 0
    for document, name in [(body, "cloudwatch-dashboard.schema.json"),
                           *[(r, "cloudwatch-alarm.schema.json") for r in kinds.values()]]:
        for path in list(_paths(document))[1:]:
            for value in bad:
                changed = _with(document, path, value)
                if _lint_quick(changed, name):
                    assert _lint_errors(changed, name) == [], (name, path, value)
                else:
                    refused += 1
                checked += 1
    assert checked > 1000 and refused > 500

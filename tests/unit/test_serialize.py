"""One encoder for every artifact, and its fast paths write the reference encoders' exact bytes.

The references are the standard library's json (indented files, the compact ASCII
CloudWatch body, the compact UTF-8 form that ownership hashes) and PyYAML's pure-Python
emitter. Real builds are compared file by file; hypothesis covers what builds do not hold.
"""

from __future__ import annotations

import hashlib
import json
import re
import math
from dataclasses import replace

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from generator import serialize
from generator.artifacts import build
from generator.output import encode
from generator.ownership import (OLDER, OTHER, OURS, content_hash, read_cloudwatch_stamp, stamp_cloudwatch_body,
                                 stamped_cloudwatch_text)
from generator.project import load_project

LEGACY = '''
from grafanalib.core import Dashboard, GridPos, Target, TimeSeries

dashboard = Dashboard(title="Entraînement 🚀 — GPU", uid="legacy", description="Zeilen\\n\\nmit Leerzeilen\\n\\n",
                      panels=[TimeSeries(title="Auslastung", targets=[Target(expr="avg(DCGM_FI_DEV_GPU_UTIL)",
                                                                                 refId="A")],
                                         gridPos=GridPos(h=8, w=12, x=0, y=0))]).auto_panel_ids()
'''


def _pretty(data) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _pure_yaml(documents) -> bytes:
    return yaml.dump_all(documents, Dumper=serialize.PureDumper, sort_keys=True, default_flow_style=False,
                         allow_unicode=True, width=100).encode()


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """The default build, and one with three clusters in three Regions, exported_* labels and a grafanalib file."""
    root = tmp_path_factory.mktemp("serialize")
    (root / "legacy").mkdir()
    (root / "legacy" / "legacy.py").write_text(LEGACY)
    bundled = load_project().settings.definition_dirs("dashboards")[0]
    (root / "gpudash.yaml").write_text(
        f"definitions: {{dashboards: [legacy, {json.dumps(str(bundled))}]}}\n"
        "clusters:\n  - {name: a, region: us-east-1, prometheus_label: a}\n"
        "  - {name: b, region: eu-west-1, prometheus_label: b}\n"
        "  - {name: c, region: ap-south-1, prometheus_label: c}\n"
        "labels: {pod: exported_pod, namespace: exported_namespace, node: hostname}\n"
        "agent: {metric_selection: used}\n")
    return {"defaults": encode(build(load_project())),
            "three Regions": encode(build(load_project(root / "gpudash.yaml")))}


def test_json_files_are_the_standard_librarys_bytes(builds):
    for files in builds.values():
        json_files = [path for path in files if path.endswith(".json")]
        assert len(json_files) >= 8
        for path in json_files:
            assert files[path] == _pretty(json.loads(files[path])), path


def test_cloudwatch_bodies_are_compact_ascii_json_with_their_own_stamp(builds):
    files = builds["three Regions"]
    paths = [p for p in files if p.startswith("cloudwatch/dashboards/")]
    assert len(paths) == 9
    for path in paths:
        text = json.loads(files[path])["DashboardBody"]
        body = json.loads(text)
        assert text == json.dumps(body, sort_keys=True, separators=(",", ":"))
        name = json.loads(files[path])["DashboardName"]
        assert read_cloudwatch_stamp(body, name, "") == OURS
        assert read_cloudwatch_stamp(body, name + "-copy", "") == OTHER  # bound to its own name
        assert read_cloudwatch_stamp(body, name, "another-project") == OLDER  # written with no project
    assert "\\u2014" in text  # the header's dash, escaped as it always was


def test_a_body_stamped_from_one_encoding_is_the_body_stamped_the_long_way(builds):
    bodies = [json.loads(json.loads(data)["DashboardBody"]) for files in builds.values()
              for path, data in files.items() if path.startswith("cloudwatch/dashboards/")]
    odd = "Entraînement 🚀 \x00gpudash-digest\x00 \\u00e9 \x7f\u2028"  # the placeholder itself, escapes
    for body in bodies[:3]:
        unstamped = {**body, "widgets": [{**body["widgets"][0], "properties": {"markdown": odd}}, *body["widgets"][1:]]}
        bodies.append(unstamped)
    bodies.append({**bodies[-1], "widgets": [*bodies[-1]["widgets"], {"type": "text", "properties": {
        "markdown": "\n\n`gpudash sha256:\x00gpudash-digest\x00`"}}]})  # the placeholder stamp, elsewhere
    for body in bodies:
        assert stamped_cloudwatch_text(body, "gpudash-c-overview", "p") == json.dumps(
            stamp_cloudwatch_body(body, "gpudash-c-overview", "p"), sort_keys=True, separators=(",", ":"))


def test_content_hash_is_sha256_of_the_compact_utf8_form():
    value = {"b": [1, 2.5, None], "a": "Entraînement 🚀"}
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert content_hash(value) == hashlib.sha256(canonical.encode()).hexdigest()[:16]


def test_agent_config_keeps_ascii_escapes(builds):
    agent_files = [(files, path) for files in builds.values() for path in files
                   if path.startswith("k8s/cwagent-prometheus-config-")]
    assert agent_files
    for files, path in agent_files:
        for document in yaml.safe_load_all(files[path]):
            if "cwagentconfig.json" in document["data"]:
                text = document["data"]["cwagentconfig.json"]
                assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def test_yaml_files_are_pyyamls_bytes_and_libyaml_agrees(builds):
    """Every YAML file is PyYAML's output; libyaml writes the same wherever the guard lets it write. (The files are
    read with libyaml's parser where PyYAML has it: the documents are the same, the pure-Python reader took half the
    test's CPU; what is compared is the bytes PyYAML's pure emitter writes of them.)"""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for name, files in builds.items():
        yaml_files = [path for path in files if path.endswith(".yaml")]
        agents = [path for path in yaml_files if path.startswith("k8s/cwagent-prometheus-config-")]
        assert len(yaml_files) - len(agents) == 6 and agents  # one agent config per cluster
        for path in yaml_files:
            documents = list(yaml.load_all(files[path], Loader=loader))
            assert files[path] == _pure_yaml(documents), path
            agree = all(serialize.emitters_agree(d) for d in documents)
            assert agree or (name, path) == ("three Regions", "k8s/grafana-dashboards.yaml")  # the 🚀 title
            if serialize.FastDumper is not None and agree:
                fast = yaml.dump_all(documents, Dumper=serialize.FastDumper, sort_keys=True,
                                     default_flow_style=False, allow_unicode=True, width=100).encode()
                assert fast == files[path], path


# --- beyond what the builds hold --------------------------------------------------------

# Mostly characters both emitters write alike (so the fast paths run), some on which they differ.
_common = st.sampled_from(list(" \t\n:#-'\"{}[],&*!|>%@`?aZ09é€\xa0\\"))
# text()'s own alphabet (characters(codec="utf-8"): every code point but the surrogates, the same intervals, so the same
# examples) named by category: Hypothesis then needs no table of what UTF-8 encodes (3 s of CPU on a fresh clone)
_any = st.characters(blacklist_categories=("Cs",))
_rare = st.sampled_from(list("\r\x7f\x85\u2028\ufeff\x00\x1f😀")) | _any
_text = st.text(st.one_of(_common, _common, _common, _rare), max_size=40)
_keys = st.text(_any, max_size=12).filter(lambda k: "\ud800" > k or k > "\udfff")
_floats = st.floats() | st.sampled_from([1e-5, -7.5e-9, 1e16, 0.85, 1e-4, 2.0, math.inf])
_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70) | _floats | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4), max_leaves=10)
_fast = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@_fast
@given(_values)
def test_to_json_writes_the_standard_librarys_bytes(value):
    assert serialize.to_json(value) == _pretty(value)
    assert serialize.to_json(value, ascii=True) == (json.dumps(value, indent=2, sort_keys=True) + "\n").encode()


@_fast
@given(_values, st.integers(min_value=0, max_value=3))
def test_the_bound_of_a_nested_values_bytes_is_never_below_them(value, depth):
    """What a CloudFormation split counts for an alarm until its cluster is near the quotas: never less than its
    bytes (a float orjson writes shorter than json does, -Infinity as null, 1e-7 for 1e-07, is counted its longest)."""
    assert serialize.nested_json_size_bound(value, depth) >= serialize.nested_json_size(value, depth)


@pytest.mark.parametrize("value", [[-math.inf] * 9, {"a": [1.5e-7, 1e16, -math.inf, math.nan]}, [[[[]]], {}, "é\x00"]])
def test_the_bound_of_bytes_counts_floats_at_their_longest(value):
    assert serialize.nested_json_size_bound(value, 2) >= serialize.nested_json_size(value, 2)


@_fast
@given(_values)
def test_canonical_json_is_the_standard_librarys_compact_utf8(value):
    """What ownership hashes: orjson writes it where it agrees with json, json elsewhere."""
    assert serialize.canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":"),
                                                         ensure_ascii=False).encode()


@_fast
@given(_values)
def test_a_file_and_its_line_are_the_standard_librarys_indented_and_compact_json(value):
    """A Grafana dashboard's file and its sidecar ConfigMap's text, written from one check of the data."""
    assert serialize.to_json_and_line(value) == (
        _pretty(value), (json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode())


@_fast
@given(st.lists(st.dictionaries(_keys, _values, max_size=5) | st.lists(_values, max_size=4), min_size=1, max_size=3))
def test_to_yaml_writes_pyyamls_bytes(documents):
    assert serialize.to_yaml(*documents) == _pure_yaml(documents)


_names = st.sampled_from(["c0", "c1", "gpu", "us-east-1", "/aws/x/c0/p", "true", "123", "1e3", "null", "a b",
                          "-x", "x:", "x: y", "2024-01-01", "GPU 🚀", "x\x85y", "", "c0\n", "'q'"]) \
    | st.text(_any, max_size=8)


@_fast
@given(st.lists(st.tuples(_names, _names, _names), min_size=1, max_size=4), _values)
def test_documents_alike_are_written_as_each_alone(values, common):
    """Documents that differ in a few string values (a cluster's name, Region, log group) are written
    by replacing those values in the first one's text only where that gives PyYAML's own bytes: names
    that are not plain tokens, a value that also sits elsewhere or inside a literal block, a value
    replaced by two others all take the full path."""
    documents = [{"receiver": {"name": name, "rules": [{"replacement": name}, {"keep": "c0"}]},
                  "region": region, "log": f"/aws/{group}/p", "shared": common,
                  "block": "- c0\nkeep: c0\n"} for name, region, group in values]
    assert serialize.to_yaml_alike(documents) == [serialize.to_yaml(document) for document in documents]


def test_documents_alike_replace_plain_values_and_write_the_rest_in_full():
    def documents(*names):
        return [{"cluster": name, "rules": [{"replacement": name}], "log": f"/aws/{name}/p", "other": "c1"}
                for name in names]

    first, second = documents("c0", "c2")
    text = serialize.to_yaml(first).decode()
    counts = serialize._value_counts(first, {})
    assert serialize._substituted(first, text, counts, second) == serialize.to_yaml(second).decode()
    for odd in ("true", "123", "a b"):  # read as another type, quoted, folded
        assert serialize._substituted(first, text, counts, documents(odd)[0]) is None, odd
    (third,) = documents("c1")  # the replacing value sits elsewhere too: still a plain replacement
    assert serialize._substituted(first, text, counts, third) == serialize.to_yaml(third).decode()
    (held,) = documents("c1")  # the replaced value sits elsewhere too (other: c1), unchanged there
    held_text = serialize.to_yaml(held).decode()
    assert serialize._substituted(held, held_text, serialize._value_counts(held, {}), second) is None
    splits, plain = {}, {}  # what one first document's substitutions share, as to_yaml_alike keeps it
    for name in ("c2", "true", "c1", "c3", "a b", "c2"):
        (document,) = documents(name)
        alike = serialize._substituted(first, text, counts, document, splits, plain)
        assert alike == (None if name in ("true", "a b") else serialize.to_yaml(document).decode()), name
    assert serialize.to_yaml_alike(documents("c0", "c2", "true", "c1", "c2")) == [
        serialize.to_yaml(document) for document in documents("c0", "c2", "true", "c1", "c2")]


def test_the_agent_pipelines_of_many_clusters_share_their_cluster_independent_parts(tmp_path):
    """What makes the encoder's sharing pay: every cluster's collector configuration holds the same
    filter, batch, service and awsemf declaration objects, and its own receiver and Region."""
    names = [f"c{i}" for i in range(3)]
    (tmp_path / "gpudash.yaml").write_text("clusters:\n" + "".join(
        f"  - {{name: {name}, region: us-east-1}}\n" for name in names))
    agents = build(load_project(tmp_path / "gpudash.yaml")).agents
    first, second = (agent.otel for agent in agents[:2])
    assert first["processors"] is second["processors"] and first["service"] is second["service"]
    exporter = [agent.otel["exporters"]["awsemf/gpudash"] for agent in agents[:2]]
    assert exporter[0]["metric_declarations"] is exporter[1]["metric_declarations"]
    assert first["receivers"] is not second["receivers"]
    assert first["receivers"]["prometheus/gpudash"]["config"]["scrape_configs"][0]["relabel_configs"][-1][
        "replacement"] == "c0"
    assert second["receivers"]["prometheus/gpudash"]["config"]["scrape_configs"][0]["relabel_configs"][-1][
        "replacement"] == "c1"


def test_to_yaml_known_differences_take_the_reference_path():
    """Inputs on which libyaml and PyYAML differ: astral characters, NEL, keep-chomped blocks, empty keys."""
    for document in ({"title": "GPU 🚀"}, {"a": "x\x85y"}, {"a": "x\n\n", "b": 1}, {"": []}, {"a": "\n"}):
        assert serialize.to_yaml(document) == _pure_yaml([document])


@_fast
@given(st.dictionaries(_keys, _text, max_size=4))
def test_a_dict_of_strings_written_from_their_json_strings_is_the_standard_librarys_file(strings):
    escaped = {key: serialize.json_string(value) for key, value in strings.items()}
    assert serialize.to_json_strings(escaped) == _pretty(strings)


@_fast
@given(_values)
def test_ascii_json_is_what_ensure_ascii_writes(value):
    assert serialize.ascii_json(serialize.canonical_json(value).decode()) == json.dumps(
        value, sort_keys=True, separators=(",", ":"))


def _configmap_lint(model: dict):
    """GF011's findings on a build whose one Grafana dashboard is `model`, and the ConfigMap YAML the build ships."""
    from generator.artifacts import GrafanaDashboard
    from generator.lint.grafana_rules import configmap_size
    from generator.output import SIDECAR_FILE
    from tests.support.lint_input import lint_input

    project = load_project()
    artifacts = build(project)
    dashboard = GrafanaDashboard(model["uid"], model["title"], "dashboards/big.py:1", model)
    findings = list(configmap_size(lint_input(project, artifacts, grafana=(dashboard,))))
    shipped = encode(replace(artifacts, grafana=(dashboard,)))[SIDECAR_FILE]
    return findings, shipped


def test_the_configmap_size_lint_counts_what_client_side_kubectl_apply_writes(tmp_path, reference):
    """The API server refuses an object whose annotations' keys and values pass 262,144 bytes; client-side `kubectl
    apply` writes the whole ConfigMap, encoded as Go's encoding/json writes it, into last-applied-configuration: every
    quote of the dashboard's text escaped again, `<`, `>` and `&` as \\u003c..., non-ASCII kept as UTF-8. A dashboard
    whose text (the ConfigMap's: one line, output.grafana_dashboard_texts) is under the limit is over it, and GF011's
    figure is the one the real kubectl writes."""
    import shutil
    import subprocess

    from generator.lint.grafana_rules import CONFIGMAP_APPLY_LIMIT
    from generator.output import grafana_dashboard_texts
    from tests.support.kube_server import KubeCluster, KubeTestServer

    # quotes, `>=` and `&&`-like text of PromQL, and 2-byte characters
    model = {"uid": "big", "title": "Große Last", "description": "x", "panels": [
        {"title": f"Ü{i}", "description": 'rate(x{a="b", c="d"}[5m]) >= 1 && <ok>', "targets": [{"expr": "y"}]}
        for i in range(2_000)]}
    (finding,), shipped = _configmap_lint(model)
    text = grafana_dashboard_texts(model)[1]
    assert len(text) < CONFIGMAP_APPLY_LIMIT  # the dashboard's own bytes are under the limit
    written = int(finding.message.split(" bytes")[0].replace(",", ""))
    assert written > CONFIGMAP_APPLY_LIMIT
    assert f"the dashboard's {len(text):,} bytes" in finding.message
    if shutil.which("kubectl") is None or shutil.which("openssl") is None:
        pytest.skip("kubectl is not installed: the figure is not compared with what kubectl writes")
    (tmp_path / "dashboards.yaml").write_bytes(shipped)
    with KubeTestServer(KubeCluster(reference), tls=True, reference=reference) as kube:
        printed = subprocess.run(
            ["kubectl", "--kubeconfig", str(kube.kubeconfig(tmp_path / "kubeconfig")), "create", "--save-config",
             "--dry-run=client", "--validate=false", "-o", "json", "-f", str(tmp_path / "dashboards.yaml")],
            capture_output=True, text=True, timeout=60, check=True).stdout
    annotations = json.loads(printed)["metadata"]["annotations"]
    assert "kubectl.kubernetes.io/last-applied-configuration" in annotations
    # kubectl set the namespace `default` (7 bytes): GF011 counts the longest name one may hold (63)
    assert written == sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items()) + 63 - len("default")


def test_the_configmap_size_lint_passes_a_dashboard_kubectl_apply_takes():
    """Just under the limit as kubectl counts it (with a namespace of the longest name), no finding."""
    from generator.lint.grafana_rules import CONFIGMAP_APPLY_LIMIT, configmap_size  # noqa: F401

    model = {"uid": "big", "title": "Last", "description": ""}
    findings, _ = _configmap_lint(model)
    assert not findings
    over = int(_configmap_lint({**model, "description": "y" * CONFIGMAP_APPLY_LIMIT})[0][0].message.split(" bytes")[0]
               .replace(",", ""))
    fits = {**model, "description": "y" * (2 * CONFIGMAP_APPLY_LIMIT - over)}  # exactly the limit
    assert not _configmap_lint(fits)[0]
    (finding,), _ = _configmap_lint({**model, "description": fits["description"] + "<"})  # 6 bytes more
    assert finding.message.startswith(f"{CONFIGMAP_APPLY_LIMIT + 6:,} bytes")


def test_the_ascii_check_of_emitter_agreement_is_the_patterns():
    """Long ASCII texts take a translate-based check: it answers as the pattern does for every character."""
    for code in range(0x80):
        for text in (chr(code), f"ab{chr(code)}x\n", "x" * 100 + chr(code)):
            assert serialize._agreeing_characters(text) == (serialize._EMITTERS_DISAGREE.search(text) is None), code


def test_the_block_check_is_the_complement_of_what_a_block_holds():
    """The characters a literal block cannot hold, written as a small class (its complement compiled in ~10 ms at
    every start): each range's ends and their neighbours answer as the complement of what a block holds."""
    holds = re.compile("[\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010fffe]")
    ends = [0, 0x9, 0xa, 0xb, 0x1f, 0x20, 0x7e, 0x7f, 0x9f, 0xa0, 0x2027, 0x2028, 0x2029, 0x202a, 0xd7ff, 0xd800,
            0xdfff, 0xe000, 0xfefe, 0xfeff, 0xff00, 0xfffd, 0xfffe, 0xffff, 0x10000, 0x10fffe, 0x10ffff]
    for code in {c for end in ends for c in (end - 1, end, end + 1) if 0 <= c <= 0x10ffff} | set(range(0x100)):
        assert (serialize._NOT_IN_BLOCK.search(chr(code)) is None) == (holds.fullmatch(chr(code)) is not None), code


# Texts a literal block holds: lines of characters both emitters write and others (tabs, trailing spaces, NEL,
# line separators, astral characters), empty lines, leading spaces, and any ending (none, one or two breaks).
_line = st.text(st.one_of(_common, _common, _rare, st.sampled_from(list(" -|#:{}é€\u2028\ufeff\U0010ffff"))),
                max_size=12)
_block = st.builds(lambda lines, end: "\n".join(lines) + end, st.lists(_line, min_size=1, max_size=6),
                   st.sampled_from(["\n", "\n", "\n", "", "\n\n", " \n"]))
_block_values = st.recursive(_block | _text | st.integers(), lambda inner: st.lists(inner, max_size=3)
                             | st.dictionaries(_keys, inner, max_size=3), max_leaves=8)


@_fast
@given(st.lists(st.dictionaries(_keys, _block_values, max_size=4) | st.lists(_block_values, max_size=3),
                min_size=1, max_size=3))
def test_literal_blocks_written_as_they_are_are_pyyamls_bytes(documents):
    """The texts to_yaml writes into literal blocks itself (indenting each line) give PyYAML's own bytes, and so
    do the texts it leaves to the emitter (chomping or indentation indicators, quoted scalars)."""
    assert serialize.to_yaml(*documents) == _pure_yaml(documents)


def _as_bytes(value):
    """`value` with each text of several lines as its UTF-8 bytes (as generate hands ConfigMaps' texts to to_yaml)."""
    if isinstance(value, str) and "\n" in value:
        return value.encode()
    if isinstance(value, dict):
        return {key: _as_bytes(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_bytes(item) for item in value]
    return value


@_fast
@given(st.lists(st.dictionaries(_keys, _block_values, max_size=4) | st.lists(_block_values, max_size=3),
                min_size=1, max_size=3))
def test_texts_given_as_utf8_bytes_are_written_as_the_texts(documents):
    """A ConfigMap's text handed over as the bytes it was made as (a dashboard's JSON file) is written as that text is,
    whether set into its block as it is or left to the emitter (an indicator, a character the block cannot hold)."""
    given = [_as_bytes(document) for document in documents]
    assert serialize.to_yaml(*given) == _pure_yaml(documents)
    assert serialize.to_yaml_many([given, given]) == [_pure_yaml(documents)] * 2


# Long one-line strings (a thousand clusters' PromQL): words of any width, indicators first, inside and last, quotes,
# what reads as another type, one space or two between, and now and then a character that changes the style.
_word = st.sampled_from(["(sum", "by", "x)", "'q'", "a:b", "c:", ":", "#", "x#y", "-", "?", "true", "1", "1.5", "...",
                         "---", "{a}", '"s"', "w" * 37, "w" * 99, "w" * 130, "é", "\t"])
_long_line = st.builds(
    lambda first, words, separator, last: first + separator.join(words * (1100 // len(" ".join(words)) + 1)) + last,
    st.sampled_from(["", "", "", " ", "- ", "? ", "#", "1", "'"]), st.lists(_word, min_size=1, max_size=12),
    st.sampled_from([" ", " ", " ", "  "]), st.sampled_from(["", "", "", " ", ":", " #x", "'"]))
_line_values = st.recursive(_long_line | _text, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["expr", "k", "a" * 120, "x-y.z", "q r", "1", "a.b/c"]), inner, max_size=3), max_leaves=6)


@_fast
@given(st.lists(st.dictionaries(st.sampled_from(["expr", "k", "a" * 99, "gpudash.io/clusters"]), _line_values,
                                max_size=3)
                | st.lists(_line_values, max_size=3), min_size=1, max_size=2))
def test_long_one_line_strings_written_as_they_are_folded_are_pyyamls_bytes(documents):
    """The long one-line strings to_yaml folds itself (plain or single-quoted, at any column and depth) give
    PyYAML's own bytes, and so do those it leaves to the emitter (double spaces, tabs, non-ASCII, keys it does not
    read)."""
    assert serialize.to_yaml(*documents) == _pure_yaml(documents)


def test_one_line_strings_break_at_the_same_spaces_as_pyyamls_from_any_column():
    """Each first word's width puts its space before, at and past the width (counted from the key's column, after
    the opening quote of a quoted one, with a quote inside counted twice)."""
    for key in ("expr", "k", "a" * 99, "gpudash.io/clusters"):
        for width in range(84, 100):
            for start, inside in (("", "x"), ("'", "x"), ("", "it's: "), ("", "'q'")):
                text = start + "w" * width + " " + " ".join([inside + "y" * (n % 13) for n in range(150)])
                for document in ({key: text}, {"groups": [{key: text, "z": 1}]}):
                    assert serialize.to_yaml(document) == _pure_yaml([document]), (key, width, start, inside)


def test_a_thousand_clusters_rule_is_folded_as_pyyaml_folds_it():
    """A data-missing rule's expression of 1,000 clusters (megabytes on one line, single-quoted: it holds ': ') in
    the rules file and in the PrometheusRule, two columns further right."""
    expression = " or ".join(f'label_replace(absent_over_time(kube_daemonset_labels{{cluster="c{n:04}"}}[5m]), '
                             f'"reason", "no DaemonSet (deleted: correct exporter.daemonset)", "", "")'
                             for n in range(1000))
    rules = {"groups": [{"name": "gpudash", "rules": [{"alert": "GpudashDataMissing", "expr": expression}]}]}
    for document in (rules, {"kind": "PrometheusRule", "spec": rules}):
        assert serialize.to_yaml(document) == _pure_yaml([document])
        assert serialize._one_line_style(expression) == "q"


def test_a_long_last_word_is_folded_as_pyyaml_folds_it_in_one_pass(monkeypatch):
    """A one-line scalar ending in a long word without spaces (a regex of a fleet's release names) is folded as
    PyYAML folds it, in time linear in its length: the lines after the last break were sought at each character of
    that word, each search reading to the text's end (40 KB: about 40 s). The search ends at the last space: what
    each try of the pattern may read is bounded there, whatever the length of the word after it."""
    text = " ".join(["(sum", "by", "(node)"] * 40) + ' daemonset=~"' + "|".join(f"release-{n}" for n in range(4000)) + '"'
    searched = []

    class Bounded:  # the folding pattern as it is, its search's end recorded
        def __init__(self, pattern):
            self.pattern = pattern

        def findall(self, string, pos, endpos):
            searched.append(endpos)
            return self.pattern.findall(string, pos, endpos)

    real = serialize._fold_lines
    monkeypatch.setattr(serialize, "_fold_lines", lambda width: Bounded(real(width)))
    folded = serialize._folded(text.encode(), 10, 6)
    assert searched == [text.rfind(" ") + 1]
    assert folded.decode().replace("\n      ", " ") == text
    for document in ({"expr": text}, {"groups": [{"rules": [{"expr": text}]}]}):
        assert serialize.to_yaml(document) == _pure_yaml([document])


@_fast
@given(st.lists(_block, min_size=1, max_size=4), st.sampled_from(["ns", "other", "a b", "true"]))
def test_files_alike_but_for_their_blocks_are_each_written_alone(texts, namespace):
    """ConfigMaps that differ in the texts they carry share the rest's text; each file is still its own
    to_yaml, shared objects (anchors) and values of other types included."""
    shared = {"app": "gpudash"}
    files = [({"data": {"a.json": text, "b.yaml": texts[0]}, "metadata": {"labels": shared, "namespace": namespace}},
              {"data": {"c": text}, "metadata": {"labels": shared, "n": 1}}) for text in texts]
    files += [({"data": {"a": text}, "metadata": {"n": value}},) for text in texts for value in (1, 1.0, True, "1")]
    files += [({"first": shared, "second": shared, "text": text},) for text in texts]  # an anchor and its alias
    assert serialize.to_yaml_many(files) == [_pure_yaml(list(documents)) for documents in files]


@_fast
@given(st.lists(_text | _block, min_size=1, max_size=4), _values)
def test_json_with_its_long_strings_set_in_is_to_json_of_the_whole(strings, other):
    """A CloudWatch body's JSON string is escaped once and set into its file and its template: each file is
    to_json of the whole, also where a slot's name sits in the data as a value of its own (then written whole)."""
    whole = {"Resources": {f"D{i}": {"DashboardBody": text, "Other": other} for i, text in enumerate(strings)}}
    data = {"Resources": {f"D{i}": {"DashboardBody": serialize.string_slot(i), "Other": other}
                          for i in range(len(strings))}}
    quoted = [serialize.json_string(text) for text in strings]
    assert serialize.to_json_filled(data, quoted, lambda: whole) == serialize.to_json(whole)
    data["Resources"]["D0"]["Other"] = whole["Resources"]["D0"]["Other"] = serialize.string_slot(0)
    assert serialize.to_json_filled(data, quoted, lambda: whole) == serialize.to_json(whole)


@pytest.mark.parametrize("text", ["x\n", " x\n", "x \n", "\n", "x", "", "x\t\n", "x\x7f\n", "é\n", "x\u2028\n",
                                  "\U0001F525\n", "x\n\n", "x\ny\n", "x\n y \n", '{"a":"b c","d":[1,2]}\n'])
def test_a_one_line_text_given_as_bytes_is_written_as_the_text(text):
    """A sidecar ConfigMap's dashboard JSON is one line and its break: its one break is found by memchr, and the
    block holds the line as it is; every other one-line text (a space first or last, a character a block cannot
    hold) is written as PyYAML writes the text."""
    document = {"data": {"d.json": text.encode()}, "n": 1}
    assert serialize.to_yaml(document) == _pure_yaml([{"data": {"d.json": text}, "n": 1}])


def test_a_sidecar_file_with_an_astral_character_keeps_pyyamls_bytes_for_its_other_strings():
    """A dashboard whose JSON holds a character beyond the BMP (an emoji in a title) sends its whole sidecar file to
    PyYAML's emitter; the folder title in each ConfigMap's annotation, double-quoted (a tab) and folded at width 100,
    is then written as PyYAML writes it (`go\\` then `\\ to`), as before texts were indented by gpudash. libyaml folds
    it otherwise (`go` then `to`): same data, other bytes, and `generate --check` fails against an earlier build."""
    from generator.render.grafana_files import configmap

    folder = "GPU monitoring\tproduction training fleet owned by the ML platform team, alerts go to the on-call"
    documents = [configmap("gpudash-fire", '{\n  "title": "GPU \U0001F525 temperatures"\n}\n', folder, {})]
    written = serialize.to_yaml(*documents)
    assert yaml.safe_load(written) == documents[0]
    assert written == _pure_yaml(documents)
    assert b'alerts go\\\n      \\ to the on-call"' in written


_word = st.sampled_from(["alerts", "go", "to", "the", "on-call", "a:", "#x", "-", "'q'", '"d"', "é", "x", ""])
_gap = st.sampled_from([" ", " ", " ", "  ", "\t", "\n", " \n", "\n ", "\n\n"])
_long_text = st.lists(st.tuples(_word, _gap).map("".join), min_size=10, max_size=40).map("".join)


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(_long_text, st.integers(0, 4))
def test_long_strings_a_line_cannot_hold_are_pyyamls_bytes(text, depth):
    """Strings long enough to be folded (a folder title, a description), at any depth: a tab, or a space before a
    line break, makes one double-quoted, and libyaml folds that at other places than PyYAML ('go\\n  to' for
    'go\\\\\\n  \\\\ to'): such a string is written by PyYAML."""
    document: object = text
    for level in range(depth):
        document = {f"k{level}": document}
    assert serialize.to_yaml({"top": document}) == _pure_yaml([{"top": document}])


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x7f), max_size=30))
def test_an_ascii_text_written_as_a_block_as_it_is_is_one_the_emitters_agree_on(text):
    """to_yaml_many does not read an ASCII text again for the emitters' agreement once it is found writable as a
    literal block as it is: every such text is one libyaml writes as PyYAML does."""
    if serialize._literal_as_is(text):
        assert serialize.emitters_agree(text)

"""Every PromQL string gpudash writes into a Grafana dashboard is single-quoted (but the node variable's, whose values
may hold a quote), and the query is the one it built.

A dashboard's ConfigMap carries its JSON as a string, and client-side `kubectl apply` writes the whole ConfigMap again
as JSON into its last-applied annotation (262,144 bytes at most): a double quote of a panel's PromQL is four bytes
there, a single quote one. So every string literal of a panel's or a variable's query is written single-quoted
(promql_text.packed), a Grafana variable's string too: 9,210 bytes of the bundled all-metrics dashboard's ConfigMap.
A real Prometheus reads each query written so as the same expression as the query built (its own printing of both
is one text) and a label value holding a single quote, a double quote and a backslash selects its own series.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import Window, interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from generator.promql_text import STRING_LITERAL, matcher, one_of, packed
from tests.support.grafana_variables import GRAFANA_ESCAPES, grafana_picked, query_variables
from tests.support.projects import bundled_panel
from tests.support.prometheus_server import Prometheus, _escaped, backfilled, range_macros

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "builds"
# the bundled defaults, a Prometheus holding several clusters (a cluster variable), and an exporter DaemonSet whose
# name has a dot (the exporter-pod regex holds an escaped `\.`, a backslash in every per-pod query)
BUILDS = {"bundled": None, "multi-region": (GOLDEN / "multi-region.yaml").read_text(),
          "dotted-daemonset": "exporter:\n  daemonset: nvidia.dcgm-exporter\n"}
# Grafana's picks: every variable at All, and one value of each picked (escaped as Grafana escapes it)
PICKS = ({}, {"cluster": "east", "namespace": "ml.team", "pod": "train-0", "node": "ip-10-0-0-1.ec2.internal",
              "gpu": "3"})
NAMES = ("cluster", "namespace", "pod", "node", "gpu")


def _queries(monkeypatch, tmp_path: Path, settings: str | None, pack: bool) -> list[str]:
    """Every panel query's and query variable's PromQL of the build of `settings`, written (packed) or as built."""
    folder = tmp_path / ("packed" if pack else "built")
    folder.mkdir()
    (folder / "gpudash.yaml").write_text(settings or "")
    with monkeypatch.context() as patched:
        patched.setattr("generator.dashboard_parts.PART_BYTES", 10**9)  # the same dashboards, none cut into parts
        if not pack:
            patched.setattr("generator.render.grafana.packed", lambda text, *free_text: text)
        models = [d.model for d in grafana_dashboards(load_project(folder / "gpudash.yaml"))]
    found = [t["expr"] for m in models for row in m["panels"] for p in (row, *row.get("panels", []))
             for t in p.get("targets", [])]
    found += [re.fullmatch(r"query_result\((.*)\)", v["query"], re.S)[1] for m in models
              for v in m["templating"]["list"] if str(v.get("query")).startswith("query_result(")]
    return found


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    with Prometheus(tmp_path_factory.mktemp("format"), {"global": {"scrape_interval": "1m"}}) as server:
        yield server


_FORMATTED: dict[str, str] = {}  # a query's text -> Prometheus' printing of it


def _formatted(prometheus, text: str) -> str:
    """Prometheus' own printing of the tree it parsed from `text`, asked once a text: a query no pick changes reads
    alike at both picks, and many of a build's queries alike in the others (about 11 ms of the server's CPU each)."""
    if text not in _FORMATTED:
        _FORMATTED[text] = prometheus.api("format_query", query=text)
    return _FORMATTED[text]


@pytest.mark.parametrize("build", BUILDS)
def test_every_dashboard_string_is_single_quoted_and_prometheus_reads_the_query_built(monkeypatch, tmp_path,
                                                                                      prometheus, build):
    written = _queries(monkeypatch, tmp_path, BUILDS[build], pack=True)
    built = _queries(monkeypatch, tmp_path, BUILDS[build], pack=False)
    assert len(written) == len(built) > 50
    # every string single-quoted but those holding the node variable, whose values may hold a quote
    quotes = {(literal[0], "$node" in literal) for text in written for literal in STRING_LITERAL.findall(text)}
    assert quotes == {("'", False), ('"', True)}, quotes
    assert sum(map(len, written)) < sum(map(len, built))
    for picked in PICKS:
        values = {**Window(range_s=6 * 3600, step_s=15).macros(), **variables(picked, NAMES)}
        for text, as_built in zip(written, built):
            sent, sent_built = interpolate(text, values), interpolate(as_built, values)
            # Prometheus' own printing of the tree it parsed: one text, one expression (its values the same)
            assert _formatted(prometheus, sent) == _formatted(prometheus, sent_built), as_built[:300]


# label values no Kubernetes name holds, written through the matcher builders and packed as a dashboard's query
VALUES = ["it's", 'say "hi"', "a\\b", "'\\\"", "\\'", "a.b", "end\\"]


def _series(start: int) -> str:
    lines = [f'gpudash_quoted{{v="{_escaped(v)}"}} 1 {start}' for v in [*VALUES, "its", "a\\\\b", "ab", "aXb", "'", '"', "\\"]]
    return "\n".join([*lines, "# EOF"]) + "\n"


@pytest.fixture(scope="module")
def quoted_values(tmp_path_factory):
    with backfilled(tmp_path_factory.mktemp("quoted"), _series, span=60, step=60) as started:
        yield started


@pytest.mark.parametrize("value", VALUES)
def test_a_value_with_quotes_and_backslashes_selects_its_own_series_single_quoted(quoted_values, value):
    prometheus, start = quoted_values
    for selector, expected in ((matcher("v", value), {value}), (one_of("v", [value, "ab"]), {value, "ab"})):
        text = packed(f"count by (v) (gpudash_quoted{{{selector}}})")
        assert [literal[0] for literal in STRING_LITERAL.findall(text)] == ["'"], text
        assert {s["metric"]["v"] for s in prometheus.query(text, at=start)} == expected, text


# A node's name as the node variable lists it (query_result's lines through its regex `node="([^"]+)"`: a value
# holding `'` is listed whole) and as a user picks it, written by each Grafana's escaping into the bundled queries:
# the GPU variable lists the node's GPU and the temperature panel draws it. A name no Kubernetes node or DNS host name
# has, but a label value (a Hostname or an instance a scrape path writes) can hold: single-quoted, the node's strings
# failed to parse with it (Grafana escapes a picked value for double quotes), so they stay double-quoted.
NODE_NAMES = ["gpu-node.r1\\x", "it's"]
SPAN = 3600


def _node_series(start: int) -> str:
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for k, node in enumerate(NODE_NAMES):
        labels = (f'gpu="{k}",UUID="GPU-{k}",device="nvidia{k}",modelName="NVIDIA L4",hostname="{_escaped(node)}",'
                  f'namespace="ml",pod="train-{k}",container="main",instance="10.0.0.{k}:9400",job="dcgm"')
        lines += [f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} {60 + k} {start + s}" for s in range(0, SPAN + 1, 30)]
    return "\n".join([*lines, "# EOF"]) + "\n"


@pytest.fixture(scope="module")
def named_nodes(tmp_path_factory):
    with backfilled(tmp_path_factory.mktemp("nodes"), _node_series, span=SPAN, step=30) as started:
        yield started


@pytest.mark.parametrize("node", NODE_NAMES)
@pytest.mark.parametrize("escape", GRAFANA_ESCAPES)
def test_a_picked_node_reads_its_gpu_whatever_grafana_escapes(named_nodes, escape, node):
    prometheus, start = named_nodes
    end, k = start + SPAN, NODE_NAMES.index(node)
    values = {**range_macros(f"{SPAN}s"), "__interval": "60s", "__rate_interval": "120s",
              **{name: ".*" for name in ("namespace", "pod", "gpu")}, "node": grafana_picked([node], escape)}
    gpu = query_variables()["gpu"]
    expr = re.fullmatch(r"query_result\((.*)\)", interpolate(gpu["query"], values), re.S)[1]
    assert {s["metric"]["gpu"] for s in prometheus.query(expr, at=end)} == {str(k)}
    (target,) = bundled_panel("GPU temperature")["targets"]
    shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1])
             for s in prometheus.query(interpolate(target["expr"], values), at=end)}
    assert shown == {f"{node} GPU {k}": 60 + k}

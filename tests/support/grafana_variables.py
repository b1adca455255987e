"""The dashboards' query variables as the build renders them, and their options as Grafana makes them from a real
Prometheus."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.project import load_project
from tests.support.prometheus_server import range_macros


def node_variables(tmp_path: Path, settings: str = "") -> dict[str, dict]:
    """{dashboard title: its node variable} of the build of `settings`."""
    (tmp_path / "gpudash.yaml").write_text(settings)
    return {dashboard.model["title"]: next(v for v in dashboard.model["templating"]["list"] if v["name"] == "node")
            for dashboard in grafana_dashboards(load_project(tmp_path / "gpudash.yaml"))}


def variable_options(prometheus, variable: dict, at: float) -> set[str]:
    """The variable's options as Grafana makes them: query_result's lines (`{labels} value time`) through its regex
    (the capture group), or label_values' values."""
    query = interpolate(variable["query"], {**range_macros("10m"), **variables({}, ("namespace", "pod"))})
    match = re.fullmatch(r"query_result\((.*)\)", query, re.S)
    assert match, f"not a query_result variable: {query}"
    lines = ["{" + ",".join(f'{k}="{v}"' for k, v in sorted(s["metric"].items())) + "}"
             for s in prometheus.query(match[1], at=at)]
    regex = re.compile(variable["regex"].strip("/"))
    return {m[1] for line in lines if (m := regex.search(line))}


SPAN = 2 * 3600


def query_variables() -> dict[str, dict]:
    """The query variables of a bundled dashboard (all hold the same), as the default settings render them."""
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "gpudash.yaml").write_text("")
        (dashboard, *_) = grafana_dashboards(load_project(Path(scratch) / "gpudash.yaml"))
    return {v["name"]: v for v in dashboard.model["templating"]["list"] if v["type"] == "query"}


def range_options(prometheus, variable: dict, at: int, span: int = SPAN, **selected: str) -> set[str]:
    """The variable's options as Grafana makes them over the range of `span` seconds ending at `at`: label_values'
    values over the range, or query_result's lines (evaluated at the range's end) through its regex."""
    values = {**range_macros(f"{span}s"), **variables(selected, ("namespace", "pod", "node", "gpu"))}
    query = interpolate(variable["query"], values)
    if query.startswith("label_values("):
        series, label = re.fullmatch(r"label_values\((.*), (\w+)\)", query, re.S).groups()
        return set(prometheus.api(f"label/{label}/values", **{"match[]": series, "start": at - span, "end": at}))
    expr = re.fullmatch(r"query_result\((.*)\)", query, re.S)[1]
    regex = re.compile(variable["regex"].strip("/"))
    lines = ["{" + ",".join(f'{k}="{v}"' for k, v in sorted(s["metric"].items())) + "}"
             for s in prometheus.query(expr, at=at)]
    return {m[1] for line in lines if (m := regex.search(line))}


# How Grafana's Prometheus data source writes the values picked in a multi-value variable (gpudash's are all
# multi-value with All) into a query: each value through prometheusSpecialRegexEscape, several as `(a|b)`. Its
# versions differ on quotes only: 8.x-10.x (datasource.ts) write `'` as `\\'`; 11.x-12.x (escaping.ts) leave it as it
# is; with the prometheusSpecialCharsInLabelValues feature toggle (experimental, off by default) `'` is `\\'` and `"`
# is `\\\"`. Every version writes a backslash as four and a regex metacharacter with `\\` before it.
_REGEX_META = re.compile(r"[$^*{}\[\]+?.()|]")
_REGEX_META_QUOTE = re.compile(r"[$^*{}\[\]'+?.()|]")
GRAFANA_ESCAPES = {
    "grafana 8-10": lambda v: _REGEX_META_QUOTE.sub(r"\\\\\g<0>", v.replace("\\", "\\" * 4)),
    "grafana 11-12": lambda v: _REGEX_META.sub(r"\\\\\g<0>", v.replace("\\", "\\" * 4)),
    "grafana 11-12 prometheusSpecialCharsInLabelValues":
        lambda v: _REGEX_META_QUOTE.sub(r"\\\\\g<0>", v.replace("\\", "\\" * 4).replace('"', '\\\\\\"')),
}


def grafana_picked(values: list[str], escape: str) -> str:
    """The text Grafana (`escape`, a key of GRAFANA_ESCAPES) writes into a query for `values` picked in a multi-value
    variable."""
    escaped = [GRAFANA_ESCAPES[escape](value) for value in values]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"

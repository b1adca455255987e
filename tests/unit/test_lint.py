"""gpudash lint: each rule fires on the mistake it names, and the defaults are clean."""

from __future__ import annotations

import json
import re

import pytest

from generator.artifacts import grafana_dashboards
from generator.lint import run
from generator.lint.grafana_rules import RULES
from tests.support.lint_input import lint_input
from generator.project import load_project


def test_default_project_is_clean(cli, reference):
    code, stdout, _ = cli("lint", "--grafana-schema", str(reference / "grafana" / "schema"))
    assert code == 0, stdout
    assert re.fullmatch(r"0 errors, 0 warnings(, \d+ notes?)?", stdout.strip().splitlines()[-1]), stdout


def _subject():
    project = load_project()
    return lint_input(project, grafana=tuple(grafana_dashboards(project)[:1]))


def _target(subject):
    return next(p for p in subject.grafana[0].model["panels"] if p["type"] != "row")


def _findings(subject, rule_id):
    return run([rule for rule in RULES if rule.id == rule_id], subject)


MUTATIONS = {
    "GF001": lambda s: _target(s)["targets"][0].update(expr="sum by (pod (DCGM_FI_DEV_GPU_UTIL)"),
    "GF002": lambda s: _target(s)["targets"][0].update(expr="avg(DCGM_FI_DEV_GPU_UTILIZATION)"),
    "GF003": lambda s: _target(s)["fieldConfig"]["defaults"].pop("unit"),
    "GF004": lambda s: _target(s).pop("description"),
    "GF005": lambda s: _target(s)["targets"][0].update(datasource={"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}),
    "GF006": lambda s: _target(s)["targets"][0].update(expr="sum(DCGM_FI_DEV_PCIE_REPLAY_COUNTER)"),
    "GF007": lambda s: _target(s)["targets"][0].update(expr="sum(rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[5m]))"),
    "GF008": lambda s: s.grafana[0].model.update(uid="x" * 41),
    "GF009": lambda s: _target(s)["gridPos"].update(y=0),
    "GF012": lambda s: _target(s)["targets"][0].update(legendFormat="Pod {{pod}}"),  # worker-0 of which namespace?
    "GF013": lambda s: _target(s).update(id=s.grafana[0].model["panels"][0]["id"]),  # the row's
}


@pytest.mark.parametrize("rule_id", sorted(MUTATIONS))
def test_rule_fires_on_its_mistake(rule_id):
    subject = _subject()
    assert _findings(subject, rule_id) == []
    MUTATIONS[rule_id](subject)
    findings = _findings(subject, rule_id)
    assert findings and {f.rule for f in findings} == {rule_id}
    assert findings[0].where.startswith("grafana/gpudash-by-pod.json")


# (query, legend, whether GF012 asks the legend for the namespace and the pod): the parsed answer's labels decide
PER_POD_LEGENDS = [
    # a selector's series keep the pod, and the legend draws a line per pod
    ('DCGM_FI_DEV_FB_USED{pod!=""}', "{{pod}}", True),
    ('sum without (instance, Hostname) (DCGM_FI_DEV_FB_USED{pod!=""})', "Pod {{pod}}", True),
    ('max_over_time(DCGM_FI_DEV_FB_USED{pod!=""}[5m])', "{{pod}} GPU {{gpu}}", True),
    ('DCGM_FI_DEV_FB_USED{pod!=""}', "{{namespace}}/{{pod}}", False),
    # ... but a line per GPU whose legend does not use the pod is not one per pod
    ("DCGM_FI_DEV_FB_USED", "{{Hostname}} GPU {{gpu}}", False),
    # grouped by the pod (written in any spelling): per pod whatever the legend
    ('sum by(namespace,pod) (DCGM_FI_DEV_FB_USED)', "{{namespace}}", True),
    ('sum without (gpu) (max by (namespace, pod, gpu) (DCGM_FI_DEV_FB_USED))', "{{namespace}}", True),
    ('max by (namespace, pod) (DCGM_FI_DEV_FB_USED) * on (namespace) group_left () sum by (namespace) (x)',
     "{{namespace}}", True),
    # a grouping by the pod whose answer has no pod: not per pod
    ('sum without (pod) (max by (namespace, pod, gpu) (DCGM_FI_DEV_FB_USED))', "{{namespace}} GPU {{gpu}}", False),
    ('sum by (namespace) (DCGM_FI_DEV_FB_USED) / on (namespace) group_left sum by (namespace, pod) (x)',
     "{{namespace}}", False),
    ('sum by (namespace) (x) > on (namespace) max by (namespace, pod) (x)', "{{namespace}}", False),
    ('max by (namespace, pod) (x) + ignoring (pod) group_right sum by (namespace) (x)', "{{namespace}}", False),
]


@pytest.mark.parametrize("expr, legend, per_pod", PER_POD_LEGENDS)
def test_per_pod_legend_is_read_from_the_answer_labels(expr, legend, per_pod):
    """GF012 asks a per-pod query's legend for the namespace and the pod. Whether a query is per pod is read from its
    parsed answer's labels, not from a `by (...pod...)` in its text: a selector or `without (...)` keeping the pod
    with a legend `{{pod}}` was passed, and a grouping by the pod the answer drops (`without (pod)`, the one side of
    a group_left) was flagged."""
    subject = _subject()
    _target(subject)["targets"][0].update(expr=expr, legendFormat=legend)
    assert bool(_findings(subject, "GF012")) == per_pod


def test_csv_repeats_fail_lint(tmp_path, cli, reference):
    code, stdout, _ = cli("lint", "--csv", str(reference / "dcgm" / "1.x-compatibility-metrics.csv"),
                          "--disable", "GF002", "--output", "json")
    findings = json.loads(stdout)["findings"]
    assert code == 1
    assert {f["rule"] for f in findings if f["severity"] == "error"} == {"CSV001"}


def test_disabled_rules_are_skipped_and_rules_are_listed(cli):
    code, stdout, _ = cli("lint", "--rules")
    assert code == 0 and "GF006" in stdout and "CSV001" in stdout


def test_bad_schema_folder_is_a_usage_error(tmp_path, cli):
    code, _, stderr = cli("lint", "--grafana-schema", str(tmp_path))
    assert code == 2 and "dashboard.jsonschema.json" in stderr


@pytest.mark.parametrize("flag, files, where", [
    ("--cwagent-schema", {"agent.json": '{"a":\n 1,,}'}, "agent.json:2"),
    ("--grafana-schema", {"sdk/dashboard.jsonschema.json": "{\n\n]"}, "sdk/dashboard.jsonschema.json:3"),
])
def test_a_schema_that_is_not_json_fails_before_anything_is_built(flag, files, where, tmp_path, cli, project_dir):
    """The schema files are read first: the project's definitions never run and one message names the file."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    ran = tmp_path / "definitions-ran"
    config = project_dir(dashboards={"mine.py": f"""
        from pathlib import Path
        from generator.model import Dashboard, Row
        from generator.panels import per_pod

        Path({str(ran)!r}).write_text("built")
        dashboard = Dashboard("mine", "Mine", [Row("r", [per_pod("DCGM_FI_DEV_GPU_UTIL", "Util")])])
        """})
    code, stdout, stderr = cli("lint", "--config", str(config), flag, str(tmp_path / next(iter(files)).split("/")[0]))
    assert code == 2, stdout + stderr
    assert "is not JSON" in stderr and f"{tmp_path / where}" in stderr, stderr
    assert "Traceback" not in stderr and stdout == ""
    assert not ran.exists()


WHOLE = 25_000


def test_lints_walk_of_a_query_visits_what_promql_parsers_walk_visits():
    """promql_checks.walk (lint's own, in Python) against promql_parser.walk: the same nodes, in the same order,
    entered and left, on every query the default build writes and on forms it does not write. Both walks visit a
    node's children by the node's kind alone, so queries over WHOLE characters (the rows-remapped range bar's two,
    33k characters, and the per-pod used share, 29k: promql_parser's walk copies each node's subtree, 2 s each for the
    33k; the GPU idle rule, 31k since a GPU is one exporter's copy; a MIG share's, its late copies checked for an instance
    with no reading within the look-back; the counters' five step_seconds recordings, 29-31k since each
    step's seconds are read on one copy's clock, 34-36k with a returning copy's share of its own clock; the
    PCIe replays rule, 30k since a period counts its end's scrapes not arrived) are compared by their
    kinds: each kind they hold
    (its type, and whether it has a parameter) is walked the same in the queries compared whole. For the same reason
    queries alike but for their metric names and the texts of their strings (one form written for many fields: half of
    the build's queries) have the same tree but for its leaves' texts, and are walked alike: one of each form is
    compared whole (promql_parser's walk of a query is what costs), and every query's kinds are walked the same in
    those compared. Each query is parsed once, as lint reads its selectors (regex matchers as equality matchers: no
    walk reads a matcher), and both walks and the kinds read that one tree."""
    from functools import cache

    import promql_parser

    from generator.artifacts import build
    from generator.lint.promql_checks import _parse_plain, walk

    parse = cache(_parse_plain)

    queries = {'topk(3, -rate(x{a="b"}[5m] offset 1m)) * on (a) group_left label_replace(y @ 100, "c", "$1", "a", "(.*)")',
               'quantile_over_time(0.9, (max by (n) (z and present_over_time(z[1m])))[5m:1m]) > bool 2', "vector(1)"}

    def queries_in(value):
        if isinstance(value, dict):
            queries.update(v for k, v in value.items() if k == "expr" and isinstance(v, str))
            for item in value.values():
                queries_in(item)
        elif isinstance(value, list):
            for item in value:
                queries_in(item)

    artifacts = build(load_project(None))
    queries_in([d.model for d in artifacts.grafana])
    queries_in(artifacts.prometheus_rules)
    assert len(queries) > 40

    def visits(walker, expr):
        seen: list = []
        walker(parse(expr), lambda node: seen.append(("enter", str(node))), lambda node: seen.append(("leave", str(node))))
        return seen

    def kinds(expr):
        seen: set = set()
        walk(parse(expr), lambda node: seen.add((type(node).__name__, getattr(node, "param", 0) is None)), lambda _: 0)
        return seen

    def form(expr):  # the query but for its metric names and the texts of its strings
        return re.sub(r"DCGM_FI_[A-Z0-9_]+", "DCGM_FI_X", re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr))

    compared: set = set()
    forms: set = set()
    for expr in sorted(q for q in queries if len(q) <= WHOLE):
        if form(expr) not in forms:
            forms.add(form(expr))
            assert visits(walk, expr) == visits(promql_parser.walk, expr), expr
            compared |= kinds(expr)
    assert len(forms) > 20
    larger = [q for q in queries if len(q) > WHOLE]
    assert len(larger) <= 8 and all(kinds(expr) <= compared for expr in queries), [kinds(q) - compared for q in queries]


@pytest.mark.parametrize("expr, pinned", [
    ("last_over_time(x[1ms:1ms] @ end() offset -1s)", True),
    ("sum(x @ start())", True),
    ("rate(x[5m] offset -30s)", True),
    ("max_over_time((x)[5m:30s] offset - 1m)", True),
    ("avg(DCGM_FI_DEV_GPU_UTIL OFFSET -5m)", True),  # PromQL's keywords take any case
    ("avg(x Offset -5m)", True),
    ("avg(x offset # a comment\n -5m)", True),
    ('x{user="ops@example.com"}', False),  # an `@` inside a label value is no modifier
    ("rate(x[5m] offset 1m)", False),
    ('label_replace(x, "offset", "-$1", "a", "(.*)")', False),
    ("sum(rate(DCGM_FI_PROF_PCIE_TX_BYTES[$__rate_interval]))", False),
])
def test_a_query_pins_time_with_the_at_modifier_or_a_negative_offset(expr, pinned):
    from generator.lint.promql_checks import pins_time

    assert pins_time(expr) is pinned


def test_a_line_per_namespace_needs_no_pod_in_its_legend(tmp_path):
    """GF012 asks a per-pod query's legend for the namespace and the pod (a pod name repeats across namespaces). A
    line per namespace groups by pod inside (each GPU's pods, or the pods' look-back) but answers with the namespace
    alone: its legend `Namespace {{namespace}}` is right, and lint erred on every such panel (exit 1 on a correct
    dashboard). A line per pod still needs both."""
    from generator.lint.runner import lint_project
    from tests.support.projects import defined_project

    fields = ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL")
    panels = ", ".join(f"Panel({f'{field} {how}'!r}, Query({field!r}, {how!r}, ('namespace',)), description='d')"
                       for field in fields for how in ("sum", "avg", "max", "count"))
    dashboards = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
                  f"    yield Dashboard(id='ns', title='Namespaces', rows=[Row('all', [{panels}])])\n")
    project = defined_project(tmp_path, "", dashboards=dashboards)
    assert [f.message for f in lint_project(project) if f.rule == "GF012"] == []
    subject = lint_input(project)
    dashboard = next(d for d in subject.grafana if d.model.get("uid", "").endswith("ns"))
    target = dashboard.model["panels"][1]["targets"][0] if "targets" not in dashboard.model["panels"][0] else \
        dashboard.model["panels"][0]["targets"][0]
    # now a line per pod: grouped by the pod at every level (one that drops it inside answers per namespace)
    target["expr"] = target["expr"].replace("by(namespace)", "by(namespace,pod)", 1).replace(",namespace)",
                                                                                            ",namespace,pod)")
    assert any(f.rule == "GF012" for f in run(RULES, subject))
    # a line per namespace or'ed with a constant (Grafana's `or vector(0)`, no series' labels) stays one
    from generator.lint.promql_checks import output_labels

    assert output_labels("sum by (namespace) (count by (namespace, pod) (x)) or on () vector(0)").names == {"namespace"}


@pytest.mark.parametrize("expr, fixed", [
    # a count's look-back (promql.counted): a reading within the window, whole scrape intervals, not a rate's window
    ('count(min_over_time(x{a="[1]"}[120s]) < 1e14)', []),
    ("max by (gpu) ((min_over_time(x[120s]) < 1e14 or min_over_time(y[120s]) < 9e18))", []),
    ("present_over_time(x[120s]) * 0 + last_over_time(x[120s])", []),
    # the least value over a fixed window, a chart's or compared with anything but a number, is a window GF007 names
    ("min_over_time(x[5m])", ["5m"]),
    ("min_over_time(x[5m]) > 3", ["5m"]),
    ("min_over_time(x[5m]) < y", ["5m"]),
    ("sum(rate(x[5m])) + min_over_time(y[120s]) < 1e14", ["5m"]),
    # a count's form over another window than the look-back (4 scrape intervals: 120s at 30 s), or compared with
    # another number than a blank floor, is a fixed window too
    ("min_over_time(x[6h]) < 1000", ["6h"]),
    ("min_over_time(x[1s]) < 1e14", ["1s"]),
    ("min_over_time(x[2m]) < 1e14", ["2m"]),
    ("min_over_time(x[120s]) < 1e15", ["120s"]),
    # present_over_time and last_over_time over a window gpudash writes at the scrape interval (30 s here): a step's
    # own sample, the look-back, a counter's held reading, the reach for the reading before a gap
    ("present_over_time(x[29999ms]) or (present_over_time(x[30s]) unless present_over_time(x[1ms] offset 30s))", []),
    ("x < 1e14 and present_over_time(x[30000ms])", []),
    ("last_over_time(x[120s]) < 1e14 or last_over_time(y[75000ms]) or last_over_time(z[60m] offset 30s)", []),
    ("timestamp(last_over_time(x[15s]))", []),  # a latest sample's time to half an interval (sample_time)
    # over any other window (a user's panel), they are fixed windows: the one-day window, 2 minutes spelled otherwise
    ("count(present_over_time(x[1d]))", ["1d"]),
    ("max(last_over_time(x[1d]))", ["1d"]),
    ("present_over_time(x[2m])", ["2m"]),
    ("last_over_time(x[20s])", ["20s"]),
    # brackets inside any string (single-quoted, backquoted) or a comment are no window, and a quote inside one
    # hides none (seen: [5m] left out after a '"', the class of a single-quoted regex named a window)
    ("rate(x{a='\"'}[5m]) + rate(y{b=\"c\"}[1h])", ["5m", "1h"]),
    ("rate(x{a=`\"`}[5m])", ["5m"]),
    ("label_replace(rate(x[$__rate_interval]), \"a\", \"$1\", \"b\", '([0-9]+)[s]')", ["$__rate_interval"]),
    ("rate(x[$__rate_interval]) # not [2h]", ["$__rate_interval"]),
])
def test_gf007_names_fixed_windows_but_a_counts_lookback(expr, fixed):
    from generator.lint.promql_checks import range_windows

    assert range_windows(expr, 30) == fixed


def test_gf007_names_a_user_panels_one_day_presence_window():
    """A panel reading `present_over_time(x[1d])` is warned of (its window does not follow the scrape interval); the
    bundled dashboards, whose windows gpudash sizes by the scrape interval, are not."""
    subject = _subject()
    assert _findings(subject, "GF007") == []
    _target(subject)["targets"][0].update(expr="count(present_over_time(DCGM_FI_DEV_GPU_TEMP[1d]))")
    assert [f.message for f in _findings(subject, "GF007")] == [
        "range [1d] is fixed: use [$__rate_interval] so it follows the scrape interval"]


def test_a_prometheus_rule_past_what_client_side_kubectl_apply_takes_is_a_warning():
    """PR007: client-side `kubectl apply -f k8s/prometheusrule.yaml` writes each whole object into an annotation the
    API server caps at 262,144 bytes (the figure GF011's test compares with what kubectl writes). The bundled rules
    fit, one object per group; an object holding every group written twice (as one object of every group did, with
    twice the alarms) does not, and is named."""
    import copy
    from dataclasses import replace

    from generator.artifacts import build
    from generator.lint.feed_rules import RULES as FEED_RULES
    from generator.lint.grafana_rules import CONFIGMAP_APPLY_LIMIT, last_applied_bytes

    project = load_project()
    artifacts = build(project, grafana=False)
    pr007 = [rule for rule in FEED_RULES if rule.id == "PR007"]
    objects = artifacts.prometheus_rule_objects
    assert len(objects) >= 3 and all(last_applied_bytes(resource) <= CONFIGMAP_APPLY_LIMIT for resource in objects)
    assert not run(pr007, lint_input(project, artifacts))
    doubled = copy.deepcopy(objects[0])
    groups = [group for resource in objects for group in resource["spec"]["groups"]]
    doubled["spec"]["groups"] = groups + [{**group, "name": group["name"] + "-again"} for group in groups]
    (finding,) = run(pr007, lint_input(project, replace(artifacts, prometheus_rule_objects=(doubled, *objects[1:]))))
    assert (finding.rule, finding.severity, finding.where) == ("PR007", "warning",
                                                               "k8s/prometheusrule.yaml gpudash-gpu-alerts")
    written = int(finding.message.split(" bytes")[0].replace(",", ""))
    assert written == last_applied_bytes(doubled) > CONFIGMAP_APPLY_LIMIT
    assert "kubectl apply --server-side" in finding.message


def test_the_count_line_says_one_finding_in_the_singular(cli, tmp_path):
    """Lint's last line counts each kind in its number: a build at scrape.interval 150s has one warning."""
    settings = tmp_path / "gpudash.yaml"
    settings.write_text("scrape:\n  interval: 150s\n")
    code, stdout, stderr = cli("lint", "--config", str(settings))
    last = stdout.strip().splitlines()[-1]
    assert code == 0 and re.fullmatch(r"0 errors, 1 warning, \d+ notes?", last), stdout + stderr

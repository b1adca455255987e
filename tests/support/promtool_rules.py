"""Prometheus' alerting rules judged by promtool: the generated rules file of the defaults (`rules`), an alert's
rule and the labels and annotations it fires with (alert_rule, expected_alert), and promtool unit tests of a story's
series run over the rules they judge alone (promtool_test)."""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
import subprocess

import pytest
import yaml

from generator.artifacts import build
from generator.markers import PROMETHEUS_RULE_LABEL
from generator.names import CLUSTERS_GROUP, is_counter_group
from generator.output import encode
from generator.project import load_project
from generator.render.alarms import recorded_name
from tests.support.prometheus_server import binary


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rules")
    files = encode(build(load_project()))
    (folder / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    resources = list(yaml.load_all(files["k8s/prometheusrule.yaml"], Loader=_LOADER))
    assert {resource["kind"] for resource in resources} == {"PrometheusRule"}
    assert {"groups": [group for resource in resources for group in resource["spec"]["groups"]]} == \
        yaml.load(files["prometheus/rules.yaml"], Loader=_LOADER)
    return folder


_READ_RULES: dict[str, list] = {}  # a rules file's text -> its groups
# libyaml where PyYAML was built with it: the same documents as safe_load at ~1/40 of the CPU (0.15 s a 370 KB file)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def alert_rule(folder, alert: str) -> dict:
    """The rule of `alert` in folder/rules.yaml (a copy: the caller may change it). A story's expected alerts
    read the same file at each evaluation: each text is parsed once."""
    return copy.deepcopy(next(r for g in rule_groups((folder / "rules.yaml").read_text()) for r in g["rules"]
                              if r.get("alert") == alert))


def alert_names(folder) -> dict[str, str]:
    """{rule id: its alert's name} of folder/rules.yaml."""
    return {r["labels"]["gpudash_rule"]: r["alert"] for g in rule_groups((folder / "rules.yaml").read_text())
            for r in g["rules"] if "alert" in r}


def rendered(text: str, labels: dict[str, str]) -> str:
    """An annotation as Prometheus renders it for an alert with `labels`: `{{ if $labels.X }}...{{ end }}` kept where
    the alert has X, then each `{{ $labels.X }}` (a label it lacks reads empty)."""
    text = re.sub(r"\{\{ if \$labels\.(\w+) \}\}(.*?)\{\{ end \}\}",
                  lambda m: m.group(2) if labels.get(m.group(1)) else "", text)
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), text)


def expected_alert(folder, alert: str, **labels: str) -> dict:
    rule = alert_rule(folder, alert)
    annotations = {k: rendered(v, labels) for k, v in rule["annotations"].items()}
    return {"exp_labels": {**rule["labels"], **labels}, "exp_annotations": annotations}


SAMPLES = "scrape_samples_post_metric_relabeling"


def with_scrape_samples(series: list[dict], kept: int = 4) -> list[dict]:
    """The series with, beside each target's `up`, the scrape's samples left after metric relabelling, as
    Prometheus writes them at every scrape: `kept` where the target answered (1), 0 where it failed (0)."""
    def samples(values: str) -> str:
        return " ".join(re.sub(r"^1(?=x|$)", str(kept), token) for token in values.split())

    return [*series, *({"series": SAMPLES + s["series"][len("up"):], "values": samples(s["values"])}
                       for s in series if s["series"].startswith("up{"))]


# the labels gpudash's exporter scrape job gives a target (tests/support/dcgm_fleet.discovered), its `up`'s
TARGET_LABELS = ("Namespace", "Service", "exporter_pod", "instance", "job", "node")


def targets_up(series: list[dict], gone: bool = True) -> list[dict]:
    """Each exporter target's `up` as Prometheus writes it beside `series` (one interval's samples): at each scrape
    the target has a sample in, 1, or 0 where its samples are staleness markers and it answers again later (a failed
    scrape), or a staleness marker where it never does (its target gone; not `gone`: 0, its scrapes failing at the
    story's end, as Prometheus writes them then, not knowing what comes after)."""
    scrapes: dict[str, dict[int, bool]] = {}  # a target's labels -> its scrapes' slots -> answered
    for one in series:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', one["series"]))
        target = ",".join(f'{k}="{labels[k]}"' for k in TARGET_LABELS if k in labels)
        for k, value in enumerate(one["values"].split()):
            if value != "_":
                scrapes.setdefault(target, {})[k] = scrapes.get(target, {}).get(k, False) or value != "stale"
    out = []
    for target, slots in scrapes.items():
        last = max(k for k, answered in slots.items() if answered)
        values = ["_"] * (1 + max(slots))
        for k, answered in slots.items():
            values[k] = "1" if answered else "0" if k < last or not gone else "stale"
        out.append({"series": f"up{{{target}}}", "values": " ".join(values)})
    return out


def rule_groups(text: str) -> list:
    """The rule groups of a rules file's text, parsed once per text."""
    if text not in _READ_RULES:
        _READ_RULES[text] = parsed_rules(text)["groups"]
    return _READ_RULES[text]


def parsed_rules(text: str | bytes) -> dict:
    """A generated rules file's text as yaml.safe_load reads it, parsed by libyaml (_LOADER: 0.01 s a settings' 430 KB
    rules.yaml, PyYAML's Python parser 0.27 s); a new object at each call, which the caller may change."""
    return yaml.load(text, Loader=_LOADER)


def parsed_rule_documents(text: str | bytes) -> list:
    """The documents of a generated multi-document file (k8s/prometheusrule.yaml) as yaml.safe_load_all reads them,
    parsed by libyaml; new objects at each call."""
    return list(yaml.load_all(text, Loader=_LOADER))


_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def _ms(duration: str) -> int:
    """A Prometheus duration (`90s`, `1h30m`) in milliseconds."""
    parts = re.findall(r"(\d+)(ms|s|m|h|d)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(int(n) * _UNITS[u] for n, u in parts)


def evaluated_at(tests: list, interval: str) -> str:
    """The evaluation interval that evaluates the rules at the same instants the alerts are judged at as `interval`
    does, and at as few others as it can. promtool evaluates every rule at each multiple of the interval up to the
    last eval_time and judges an eval_time by the evaluation at or before it: the alerts it finds there depend on
    that evaluation alone when no rule holds a state across evaluations (no `for`, no `keep_firing_for`: the
    caller checks), so the largest multiple of `interval` dividing each of those instants gives the same verdicts.
    Expression tests alone are evaluated at the largest interval dividing each of their eval_times."""
    step = _ms(interval)
    instants = {_ms(case["eval_time"]) // step * step for test in tests for case in test.get("alert_rule_test", [])}
    if not instants:
        # promtool loads the input series up to each evaluation of its loop and evaluates an expression test after
        # the loop: one whose eval_time falls between two evaluations reads no sample after the one before it (at
        # 1m, a query at 254 s saw nothing past 240 s). Where no alert is judged, each eval_time is an evaluation.
        instants = {_ms(case["eval_time"]) for test in tests for case in test.get("promql_expr_test", [])}
    coarse = math.gcd(*instants) if any(instants) else step
    return f"{coarse}ms"


def _counted(folder) -> dict[str, str]:
    """{recorded counter (promql.counted_name): its group's interval} of folder/rules.yaml."""
    return {r["record"]: g["interval"] for g in rule_groups((folder / "rules.yaml").read_text())
            if is_counter_group(g["name"]) for r in g["rules"]}


def holding_state(rules: list[dict]) -> bool:
    """Whether a recording rule of `rules` reads what it wrote at earlier evaluations (a stopped alarm's: its alert
    then depends on the evaluations before its own, each at the story's evaluation interval)."""
    return any(re.search(re.escape(r["record"]) + r"\b", r["expr"]) for r in rules if "record" in r)


def judged_rules(folder, name: str, named: set[str], counted: set[str] = frozenset()) -> str:
    """Write the rules of folder/rules.yaml whose alert is `named` as folder/<name>.rules.yaml, with the recording
    rules of their alarms; its name. promtool evaluates every rule of a file at every step: the others are left out,
    which changes no judged alert (no alert reads another alarm's rules: a recording rule is read by its alarm's
    alert alone, at the instant it writes, and by itself, at the evaluations after (holding_state); no rule reads
    ALERTS; checked), and each judged alert depends on its own evaluation alone (no `for`, no `keep_firing_for`:
    checked; see evaluated_at) but where its recording rule holds a state."""
    groups = rule_groups((folder / "rules.yaml").read_text())
    kept = [{**g, "rules": [r for r in g["rules"] if r["record"] in counted]} for g in groups
            if is_counter_group(g["name"])]
    # the clusters watched on a shared Prometheus (the dashboards' cluster variable): read by no alert
    groups = [g for g in groups if not is_counter_group(g["name"]) and g["name"] != CLUSTERS_GROUP]
    recorded = {r["record"]: r["labels"][PROMETHEUS_RULE_LABEL] for g in groups for r in g["rules"] if "record" in r}
    assert all(name.startswith(recorded_name(owner, "")) for name, owner in recorded.items())
    for rule in (r for g in groups for r in g["rules"]):  # a recording rule read by its alarm's rules alone
        assert {read for read in recorded if read in rule["expr"]} <= {
            read for read, owner in recorded.items() if owner == rule["labels"][PROMETHEUS_RULE_LABEL]}
    assert "ALERTS" not in json.dumps(groups)
    owners = {r["labels"][PROMETHEUS_RULE_LABEL] for g in groups for r in g["rules"] if r.get("alert") in named}
    judged = [{**group, "rules": [r for r in group["rules"] if r.get("alert") in named
                                  or recorded.get(r.get("record")) in owners]} for group in groups]
    assert not [r for g in judged for r in g["rules"] if "for" in r or "keep_firing_for" in r]
    rule_file = f"{name}.rules.yaml"
    (folder / rule_file).write_text(json.dumps({"groups": [g for g in (*judged, *kept) if g["rules"]]},
                                               ensure_ascii=False))
    return rule_file


# promtool's cost of a test group in one more file (loading its input series, parsing the file and its rules, its
# evaluation at 0, over no history), in evaluations of a rule over a history (evaluation_plans): test_stale_alarm_twins'
# 18 minutes judged after 38 unjudged ones took 10.7 s CPU in one file at 1 minute, 7.1 s in 18 files of a minute each.
# The default; a file costs promtool about the same time whatever its rules (90 ms for twelve rules of 5 KB and 42
# series), an evaluation from a few ms to a second, so a caller whose rules evaluate cheaply says so (promtool_test's
# file_cost)
FILE_COST = 1


def evaluation_plans(instants: set[int], file_cost: float = FILE_COST) -> list[tuple[int, set[int]]]:
    """The judged instants (in steps) split into (interval, instants) with each instant a multiple of its interval,
    each to be one promtool test file: promtool evaluates every rule of a file at every multiple of its interval from
    0 to the file's last eval_time, so an alert judged at 10, 15, 20, 35 and 39 minutes costs 40 evaluations at their
    common 1-minute interval, 9 in four files (10 and 20 at 10 minutes; 15, 35, 39 each alone); minutes 39 to 56
    judged cost 57 in one file, 36 (18 of them at 0) in 18. A judged alert depends on its own evaluation alone (see
    evaluated_at): each instant is judged as at any interval that evaluates there. Greedy: the interval that judges
    most instants per evaluation (`file_cost` a file) first (of two alike, the one that judges more); never more than
    the one plan at the instants' greatest common divisor."""
    remaining = set(instants)
    plans: list[tuple[int, set[int]]] = []
    while remaining:
        candidates = {d for n in remaining for i in range(1, math.isqrt(n) + 1) if n % i == 0
                      for d in (i, n // i)} or {1}
        def value(interval: int) -> tuple[float, int, int]:
            chosen = [n for n in remaining if n % interval == 0]
            return len(chosen) / (max(chosen) // interval + file_cost), len(chosen), interval
        interval = max(candidates, key=value)
        chosen = {n for n in remaining if n % interval == 0}
        plans.append((interval, chosen))
        remaining -= chosen
    one = math.gcd(*instants) or 1
    cost = sum(max(chosen) // interval + file_cost for interval, chosen in plans)
    return plans if cost < max(instants) // one + file_cost else [(one, set(instants))]


def promtool_test(folder, name: str, tests: list, evaluation_interval: str = "1m",
                  file_cost: float = FILE_COST) -> None:
    """Write `tests` as promtool unit-test files for folder/rules.yaml and pass them: each test group is evaluated at
    the steps of `evaluated_at` with only the rules whose alerts it judges (judged_rules: each as generated), one
    test file per distinct interval and set of judged alerts (promtool evaluates every rule of its files at every
    step of every group: a group judging the framebuffer alert would pay for the idle rule's evaluations, most of
    such a file's cost, judged by no case of it); a group that judges alerts alone, at instants far apart, is split
    by the instants it judges over the intervals of its evaluation_plans (promtool evaluates each group from 0 to its
    own last eval_time; `file_cost`: what a file costs, in the rules' evaluations). One promtool run for all the
    files; a failure names its file, group, alert and time. The files are written as JSON (YAML that is quicker to
    write)."""
    tests = [{**test, "input_series": with_scrape_samples(test["input_series"])} if not any(
        i["series"].startswith(SAMPLES) for i in test["input_series"]) else test for test in tests]
    step = _ms(evaluation_interval)
    runs: dict[tuple, list] = {}  # (interval, judged alerts, read recordings) -> the test groups of one rules file
    counted = _counted(folder)
    for test in tests:
        judged = tuple(sorted({case["alertname"] for case in test.get("alert_rule_test", [])}))
        read = tuple(sorted(name for name in counted if any(name in case["expr"]
                                                            for case in test.get("promql_expr_test", []))))
        # a counter's recording adds one step per evaluation: evaluated at its group's interval (the scrape's); a
        # group judging alerts alone (None) at the intervals of its evaluation_plans
        interval = counted[read[0]] if read else None if "promql_expr_test" not in test else \
            evaluated_at([test], evaluation_interval)
        runs.setdefault((interval, judged, read), []).append(test)
    written = []
    for k, ((interval, judged, read), group) in enumerate(runs.items()):
        rule_file = judged_rules(folder, name if k == 0 else f"{k}.{name}", set(judged), set(read))
        if holding_state([r for g in json.loads((folder / rule_file).read_text())["groups"] for r in g["rules"]]):
            interval = evaluation_interval  # each evaluation carries the one before it: none left out
        plans: dict[str, list] = {}  # an evaluation interval -> the groups (or the parts of groups) judged at it
        for test in group:
            instants = {_ms(case["eval_time"]) // step for case in test.get("alert_rule_test", [])}
            if interval is not None or not instants:
                plans.setdefault(interval or evaluated_at([test], evaluation_interval), []).append(test)
                continue
            for every, at in evaluation_plans(instants, file_cost):
                plans.setdefault(f"{every * step}ms", []).append(
                    {**test, "alert_rule_test": [case for case in test["alert_rule_test"]
                                                 if _ms(case["eval_time"]) // step in at]})
        for j, (every, plan) in enumerate(plans.items()):
            test_file = folder / (name if k == j == 0 else f"{k}-{j}.{name}")
            test_file.write_text(json.dumps({"rule_files": [rule_file], "evaluation_interval": every, "tests": plan},
                                            ensure_ascii=False))
            written.append(test_file.name)
    run = _run_inputs(folder, written)
    if run in _PASSED:
        return
    result = subprocess.run([binary("promtool"), "test", "rules", *written], capture_output=True, text=True,
                            cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(written), result.stdout
    _PASSED.add(run)


# The runs promtool passed in this process, each by its exact input (_run_inputs). A test parametrized over what the
# rules do not read (test_edge_timing_twins' agent pipelines: the same rules, series and expected alerts for otel and
# classic) asks promtool the same question again: 7 of its 20 runs, 16.8 of its 56.6 CPU-s. promtool's verdict depends
# on its input files alone, so a run whose every byte was passed before is passed again without running it. A run that
# failed is never kept: it runs again, and reports its failure as promtool words it.
_PASSED: set[str] = set()


def _run_inputs(folder, written: list[str]) -> str:
    """What a `promtool test rules` run of `written` (test files in `folder`) reads, as one SHA-256: each test file's
    name and bytes, and those of each rule file it names (relative to the folder, as promtool reads them)."""
    digest = hashlib.sha256()
    for name in written:
        text = (folder / name).read_bytes()
        for file, data in [(name, text), *((rule_file, (folder / rule_file).read_bytes())
                                           for rule_file in json.loads(text)["rule_files"])]:
            digest.update(f"{file}\0{len(data)}\0".encode())
            digest.update(data)
    return digest.hexdigest()


def value_text(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:g}"


def shifted_later(series: dict, interval: int, shift: int) -> dict:
    """promtool input `series` (explicit values `interval` seconds apart from 0) moved `shift` seconds later: its values
    restated at the interval's and the shift's common divisor, none before the shift and none between its own times."""
    if not shift:
        return series
    gap = interval // math.gcd(interval, shift)
    values = ["_"] * (shift // math.gcd(interval, shift))
    for value in series["values"].split():
        assert "x" not in value and value != "stale", value  # explicit values only: no expansion to restate
        values += [value] + ["_"] * (gap - 1)
    return {**series, "values": " ".join(values)}


# The labels each story of a promtool run has its own value of (stories_own): a join matching on one of them matches no
# story's series with another's. The exporter target (`instance`) too: panels weigh a GPU's copies by their target's age.
STORY_OWN = ("namespace", "node", "UUID", "instance")


def joins_across_stories(exprs: list[str], own: tuple[str, ...] = STORY_OWN) -> bool:
    """Whether a join in `exprs` could match one story's series with another's: a join (`on(...)` or `ignoring(...)`)
    both of whose sides read series, where it ignores labels, or matches on labels naming neither the GPU
    (promql.GPU_LABEL: its UUID, else its node spelling; promql.UUID_KEY: its UUID under either label) nor the
    namespace or node (each story's are marked apart; see _prometheus_case). The per-GPU naming step joins on (cluster,
    gpudash_gpu, gpu): series of two stories never agree on it. A side that reads no series (numbers, `vector(5)`
    labelled by label_replace: an alert's weight per period) is the same for every story: it matches each story's
    series to the same numbers. `own`: the labels each story has its own value of."""
    import promql_parser

    from generator.lint.promql_checks import parse, walk  # parse: the text as Prometheus reads it (lint's parse)
    from generator.promql import GPU_LABEL, UUID_KEY

    joins = []

    def visit(node) -> None:
        matching = node.modifier.matching if isinstance(node, promql_parser.BinaryExpr) and node.modifier else None
        if matching is not None and reads_series(node.lhs) and reads_series(node.rhs):
            joins.append((matching.type == promql_parser.LabelModifierType.Exclude, set(matching.labels)))
    for expr in exprs:
        walk(parse(expr), visit, lambda node: None)
    return any(ignoring or not named & {GPU_LABEL, UUID_KEY, *own} for ignoring, named in joins)


def reads_series(node) -> bool:
    """Whether the parsed expression `node` reads some series (a selector), not numbers alone."""
    import promql_parser

    from generator.lint.promql_checks import walk

    found = []
    walk(node, lambda n: found.append(n) if isinstance(n, promql_parser.VectorSelector) else None, lambda n: None)
    return bool(found)


# functions whose answer is one of all the series they read, as an aggregation without grouping: absent() and
# absent_over_time() are empty where any story has a series, scalar() is NaN where two do
ACROSS_SERIES = ("absent", "absent_over_time", "scalar")


def reads_across_series(expr: str) -> bool:
    """Whether `expr` calls a function of ACROSS_SERIES on some series: judged on several stories at once, it answers
    for them all."""
    import promql_parser

    from generator.lint.promql_checks import parse, walk

    found = []
    walk(parse(expr), lambda n: found.append(n) if isinstance(n, promql_parser.Call) and n.func.name in ACROSS_SERIES
         and reads_series(n) else None, lambda n: None)
    return bool(found)


def stories_own(text: str, k: int) -> str:
    """`text` (a series or an expected line) with story k's own namespace, node, GPU UUID (a GPU is its UUID) and
    exporter target."""
    return re.sub(rf'\b({"|".join(STORY_OWN)})="([^"]*)"', lambda m: f'{m[1]}="{m[2]}-s{k}"', text)


def join_operand(expr: str, at: int) -> str:
    """The operand that starts at `at` (spaces skipped): an aggregation `op by (labels) (...)` or a parenthesis."""
    head = re.match(r"\s*(?:\w+ ?by ?\([^)]*\) ?)?", expr[at:])  # (panels' text is packed: `max by(l)(`)
    depth, start = 0, at + head.end()
    for end in range(start, len(expr)):
        depth += {"(": 1, ")": -1}.get(expr[end], 0)
        if depth == 0:
            return expr[at:end + 1]
    return expr[at:]


def without_joins_kept_apart(expr: str, own: tuple[str, ...] = STORY_OWN) -> str:
    """`expr` with the joins that cannot match one story's series with another's written as plain operators: `on ()`
    with a time condition (its operand reads no series: only numbers and vector, scalar, floor, round, time), and
    `ignoring (...)` naming neither the GPU nor the namespace or node, before an aggregation by the GPU
    (promql.GPU_LABEL, from its UUID, each story's own): both sides then match on the GPU."""
    from generator.promql import GPU_LABEL

    def kept_apart(match: re.Match) -> bool:
        operand = join_operand(expr, match.end())
        if match[1] == "on" and not match[2].strip():
            return not set(re.findall(r"[A-Za-z_]\w*", operand)) - {"vector", "scalar", "floor", "round", "time"}
        by = re.match(r"\s*\w+ ?by ?\(([^)]*)\)", operand)
        ignored = {label.strip() for label in match[2].split(",")}
        return match[1] == "ignoring" and not ignored & {GPU_LABEL, *own} and bool(by) \
            and GPU_LABEL in {label.strip() for label in by[1].split(",")}
    return re.sub(r"\b(on|ignoring)\s*\(([^)]*)\)", lambda m: "" if kept_apart(m) else m[0], expr)


def judged_apart(expr: str, own: tuple[str, ...] = STORY_OWN) -> bool:
    """Whether `expr` can be judged on several stories at once, each under its own marks (stories_own; `own`: the
    labels the stories have their own values of, where they are marked otherwise): none of its joins can match one
    story's series with another's (without_joins_kept_apart, then test_gauge_twins' check), and no function answers
    for all the stories' series at once (reads_across_series)."""
    return not joins_across_stories([without_joins_kept_apart(expr, own)], own) and not reads_across_series(expr)


def stories_alert_failure(folder, rule: dict, stories, ends, fires, stored, step: int, name: str) -> str | None:
    """promtool's failure judging alert `rule` on every story at once, or None: each story is its own node's GPU 0
    (its series `stored(story)`), its alert expected at each of `ends` (seconds) where `fires(story, end)`. One run
    for all (promtool evaluates the rule at every step whatever the series), halved where over promtool's sample
    limit (tests/support/promtool_batches). The rule must join no story's series with another's (judged_apart)."""
    from tests.support.promtool_batches import batch_failure

    assert judged_apart(rule["expr"], ("node", "UUID"))  # the stories' own labels: no namespace, no target

    def judge(nodes) -> None:
        checks = [{"eval_time": f"{end}s", "alertname": rule["alert"],
                   "exp_alerts": [expected_alert(folder, rule["alert"], node=node, gpu="0") for node in nodes
                                  if fires(node, end)]} for end in ends]
        promtool_test(folder, f"{name}_{nodes[0]}.yaml", [{
            "interval": f"{step}s", "input_series": [stored(node) for node in nodes], "alert_rule_test": checks}],
            evaluation_interval=f"{step}s")

    return batch_failure(list(stories), judge)


def periods_as_read(alarm, catalog, settings, expr: str) -> tuple[str, int]:
    """The statistics of every period of a rule that reads its range's periods in one expression (period_values), taken
    from that expression as the rule `expr` reads it (asserted to hold it), and how many periods it reads: at an
    instant t, the series marked gpudash_period="k" is the statistic of the window ending k periods before t."""
    from generator.render.alarms import RANGE_EXTRA_PERIODS, period_values

    count = alarm.evaluation_periods + RANGE_EXTRA_PERIODS
    periods = period_values(alarm, catalog, settings, range(count))
    assert periods is not None and periods in expr
    return periods, count


def window_queries(windows: list[int], candidates: list[int], period: int, count: int) -> dict[int, dict[int, int]]:
    """Instants (of `candidates`) at which to ask a periods' expression (periods_as_read: `count` periods of `period`
    seconds) so that every window end of `windows` is read: {instant: {period k: the window end it reads}}, fewest
    instants first chosen greedily. One query of the expression evaluates every period whichever is kept, so a window
    read as period k at t + k * period costs nothing more than as period 0 at t; every window end a chosen instant's
    periods read among `windows` is kept (each is judged)."""
    wanted, left, chosen = set(windows), set(windows), {}
    while left:
        best = max(candidates, key=lambda t: (len({t - k * period for k in range(count)} & left), -t))
        reads = {k: best - k * period for k in range(count) if best - k * period in wanted}
        assert left & set(reads.values()), (sorted(left), best)
        chosen[best] = reads
        left -= set(reads.values())
    return dict(sorted(chosen.items()))

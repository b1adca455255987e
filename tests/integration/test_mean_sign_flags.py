"""A mean's period flags read by sign (generator/mean_sign.py: S - t*C from one read of the period's readings) give
the flags the ratio gave (S / C against t), and the idle rule built on them the same alerts and sums.

Both forms run side by side in `promtool test rules` over a messy fleet's history (tests/support/messy_history:
`Hostname` and `hostname`, an exporter writing its own pod name as Hostname, a node scraped without the node label,
exporter copies, a time-sliced GPU whose pod label moves at every scrape, GPUs no pod holds, MIG instances, DCGM's
blank, a gap in a node's data), its utilization and MIG engine activity redrawn near the idle level: some GPUs read
one value throughout, others a value drawn at each scrape, from readings at the level, a unit in the last place
either side of it (4.999999999999999, 5.000000000000001; 0.049999999999999996 and 0.05000000000000001 of a MIG
instance, read * 100) and around it; the rest keep the history's readings (busy and idle). At every evaluation each
period's flag of each kind (whole GPUs, MIG instances), in both forms, gives the same series and values, and so do the
alert as generated and its weighted sums (every pod's GPU, firing or not).

The alert is judged through its sums: its terms (one a kind, `(sums >= N) or ...`) are each a comparison of a kind's
sums with the threshold N, nothing else (_alert_is_its_sums_compared), and each kind's sums are compared whole (every
pod's GPU, firing or not): where each kind's sums give the same series and values, so does the alert, whatever the
samples. (Compared as the alert with its last comparison made one every sum passes, the whole GPUs' sums were
compared where they reached N alone: a weight that changed them under N passed.) Its own evaluation (a third of
promtool's 46 CPU-s) compared nothing more. An earlier period's flags are the latest period's read that many periods
back (_read_periods_back: its subqueries offset, nothing outside them reading a series or the time), so the latest
period's flags, compared at every evaluation and at 0 (every evaluation is a whole number of periods after one of
those), judge every period's (each pod's GPU named by its index at the evaluation, alike in both forms); the seven
earlier periods' own evaluations (14 of the 16 flags) compared them again."""

from __future__ import annotations

import json
import random
import re

import pytest

from generator.cloudwatch_query import number
from generator.project import load_project
from generator.render.alarms import period_sign, period_value, prometheus_expression
from tests.support import messy_history, mixed_fleet

SCRAPES = 110  # 55 minutes: the rule's 8 periods of 5 minutes, its 10-minute incumbents and look-backs before them
EVERY = 150  # seconds between the compared evaluations
UTIL = ("5", "4.999999999999999", "5.000000000000001", "4.9", "5.1", "4.95", "5.05", "4.7", "5.3", "0", "10")
RATIOS = ("0.05", "0.049999999999999996", "0.05000000000000001", "0.049", "0.051", "0.0495", "0.0505", "0.047",
          "0.053", "0", "0.1")
DRAWN = {"DCGM_FI_DEV_GPU_UTIL": UTIL, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": RATIOS}
# the instances reading one value throughout: of the whole GPUs pods hold in replicas 1 and 2 (16), eleven; of the MIG
# instances (6), three (the level and an ulp either side); the rest read a value drawn at each scrape
CONSTANT = {"DCGM_FI_DEV_GPU_UTIL": len(UTIL), "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 3}
REPLICAS = 3


@pytest.fixture(scope="module")
def project():
    return load_project()


def _held(kind_mig: bool) -> list[tuple[int, int, int, str | None]]:
    """The GPU instances a pod holds in replicas 1 and up, whole GPUs or MIG instances, in the fleet's order:
    (replica, node, GPU index, MIG instance)."""
    return [(r, n, gpu.index, instance.id) for r, n, node in messy_history.fleet(REPLICAS) if r
            for gpu in node.gpus for instance in gpu.instances
            if instance.pods() and (instance.id is not None) == kind_mig]


def _near_the_level(original):
    """messy_history's reading in replica 0 (busy and idle GPUs); in the others, near the idle level: the first
    instances a pod holds (CONSTANT) each read one of DRAWN's values throughout, the rest a value drawn at each
    scrape. Blanks and missing readings stay."""
    held = {metric: _held(metric != "DCGM_FI_DEV_GPU_UTIL") for metric in DRAWN}

    def value(metric, r, n, gpu, instance, k, scrapes):
        raw = original(metric, r, n, gpu, instance, k, scrapes)
        if raw is None or raw == mixed_fleet.NOT_SUPPORTED or metric not in DRAWN or not r:
            return raw
        place = (r, n, gpu.index, instance.id)
        if place not in held[metric]:
            return raw
        j = held[metric].index(place)
        if j < CONSTANT[metric]:
            return DRAWN[metric][j]
        return random.Random(f"{metric}|{place}|{k}").choice(DRAWN[metric])
    return value


def _own_pods(series: messy_history.Series) -> messy_history.Series:
    """The history with the pods of replicas 1 and up named their own (`-r<replica>`): a GPU near the level is not
    averaged with replica 0's GPU of the same pod name (messy_history keeps the pod names across replicas)."""
    def own(labels: str) -> str:
        replica = re.search(r'instance="10\.(\d+)\.', labels)
        if replica is None or replica[1] == "0":
            return labels
        return re.sub(r'\bpod="([^"]*)"', lambda m: f'pod="{m[1]}-r{replica[1]}"', labels)
    return {(metric, own(labels) if metric.startswith("DCGM_") else labels): samples
            for (metric, labels), samples in series.items()}


def _top_level(expr: str, separator: str) -> list[str]:
    """`expr` split where `separator` stands outside every parenthesis, bracket, brace and quoted string (each of
    which closes within it)."""
    parts, depth, quoted, begun, at = [], 0, False, 0, 0
    while at < len(expr):
        char = expr[at]
        if quoted:
            at += 2 if char == "\\" else 1
            quoted = quoted and char != '"'
            continue
        if char == '"':
            quoted = True
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            assert depth >= 0, expr[max(0, at - 200):at + 1]
        elif not depth and expr.startswith(separator, at):
            parts.append(expr[begun:at])
            begun = at = at + len(separator)
            continue
        at += 1
    assert depth == 0 and not quoted, expr[-200:]
    return [*parts, expr[begun:]]


def _alert_is_its_sums_compared(alert: str) -> list[str]:
    """The alert is `(S1 >= N) or ... or (Sk >= N)`, each S compared at the top of its parenthesis (no `and`, `or`,
    `unless` beside it there): the sums S1 ... Sk, the alert written again from them."""
    terms = _top_level(alert, " or ")
    thresholds = set()
    for term in terms:
        assert term.startswith("(") and term.endswith(")") and len(_top_level(term, " or ")) == 1, term[:200]
        inside = term[1:-1]
        assert all(len(_top_level(inside, f" {op} ")) == 1 for op in ("or", "and", "unless")), inside[:200]
        *body, threshold = _top_level(inside, " >= ")
        assert body and re.fullmatch(r"\d+", threshold), inside[-200:]
        thresholds.add(threshold)
    assert len(thresholds) == 1, thresholds
    sums = [term[1:-len(f" >= {threshold})")] for term in terms]
    assert alert == " or ".join(f"({one} >= {threshold})" for one in sums)
    return sums


PERIOD = 300  # seconds: the idle alarm's period (thresholds.idle_minutes), its readings a subquery at the rule's step
READINGS = "[5m:5s]"


def _outside_subqueries(expr: str) -> str:
    """`expr` with the body of each period's subquery (`(...)[5m:5s]`) written `(...)`."""
    spans, at = [], expr.find(")" + READINGS)
    while at != -1:
        depth, begin = 0, at
        while True:
            depth += {")": 1, "(": -1}.get(expr[begin], 0)
            if not depth:
                break
            begin -= 1
        spans.append((begin, at + 1))
        at = expr.find(")" + READINGS, at + 1)
    text, last = "", 0
    for begin, end in sorted(spans):
        if begin >= last:
            text, last = text + expr[last:begin] + "(...)", end
    return text + expr[last:]


NAMING = " + on (cluster, namespace, pod, gpudash_p) group_left (gpu) "  # promql.pod_indexes' join


def _unnamed(expr: str) -> tuple[str, set[str]]:
    """`expr` without its namings of a pod's GPU by its index (NAMING and its operand), and those namings."""
    from tests.support.promtool_rules import join_operand

    namings, at = set(), expr.find(NAMING)
    while at != -1:
        operand = join_operand(expr, at + len(NAMING))
        namings.add(operand)
        expr = expr[:at] + expr[at + len(NAMING) + len(operand):]
        at = expr.find(NAMING)
    return expr, namings


def _read_periods_back(latest: str, earlier: str, periods: int) -> None:
    """`earlier` (a period's flag) is `latest` (the latest period's) with each of its subqueries offset `periods`
    periods, and nothing outside them reads a series or the time but the naming of each pod's GPU by its index at
    the evaluation (promql.pod_indexes: one text, in every period and in both forms, joined to the period's sums
    keyed by the GPU's UUID): at any instant t its values are `latest`'s at t minus that many periods, each GPU named
    alike in both forms, so the two forms' earlier flags agree wherever their latest flags agree at those instants
    (every evaluation compared is some evaluation compared, or a period and more before it, the history's start:
    before it, neither form's flag reads anything)."""
    back = f" offset {PERIOD // 60 * periods}m" if periods else ""
    assert earlier == latest.replace(f"{READINGS})", f"{READINGS}{back})"), periods
    outside, namings = _unnamed(_outside_subqueries(latest))
    assert len(namings) == 1 and READINGS not in next(iter(namings))  # one naming, read at the evaluation
    assert outside.count(READINGS) == latest.count(READINGS) > 0  # no subquery inside another
    outside = re.sub(r'"(?:[^"\\]|\\.)*"', '""', outside)  # a label's value or regex read no series
    assert not re.search(r"DCGM_|\{|\btime\(|@|offset|\[(?!5m:5s\])", outside), outside


def test_the_flags_by_sign_are_the_ratios_flags_on_a_messy_fleet(project, tmp_path, monkeypatch):
    alarm = next(a for a in project.alarms if a.id == "gpu-idle")
    catalog, settings = project.catalog, project.settings
    threshold, compare = alarm.condition.threshold, alarm.condition.comparison
    read: list[tuple[str | None, int]] = []

    def ratio(kind, period):
        read.append((kind, period))
        return period_value(alarm, catalog, settings, period, kind)
    before = prometheus_expression(alarm, catalog, settings, ratio)
    now = prometheus_expression(alarm, catalog, settings)
    assert "gpudash_stat" in now and "gpudash_stat" not in before  # the rule as generated reads by sign
    assert len(now) < 0.85 * len(before)
    kinds = sorted({kind for kind, _ in read}, key=str)
    assert len(kinds) == 2  # whole GPUs and MIG instances
    forms = [(f"sums-{k}", ([{"expr": old}], [{"expr": new}])) for k, (old, new) in
             enumerate(zip(_alert_is_its_sums_compared(before), _alert_is_its_sums_compared(now), strict=True))]
    assert len(forms) == 2  # a kind's sums each
    def flags(period, kind) -> tuple[str, str]:
        return (f"({period_value(alarm, catalog, settings, period, kind)} {compare} bool {number(threshold)})",
                f"({period_sign(alarm, catalog, settings, period, kind, threshold)} {compare} bool 0)")
    assert sorted(set(read), key=str) == sorted(((kind, period) for kind in kinds for period in range(8)), key=str)
    for kind, period in set(read):  # each earlier period's flags: the latest period's, read that many periods back
        for latest, earlier in zip(flags(0, kind), flags(period, kind)):
            _read_periods_back(latest, earlier, period)
    forms += [(f"{kind}-0", ([{"expr": old}], [{"expr": new}])) for kind in kinds for old, new in [flags(0, kind)]]
    assert len(forms) == 2 + 2
    monkeypatch.setattr(messy_history, "_value", _near_the_level(messy_history._value))
    metrics = set(re.findall(r"\b(DCGM_[A-Z0-9_]+)\b", json.dumps(forms)))
    series = messy_history.input_series(_own_pods(messy_history.history(REPLICAS, SCRAPES, metrics)))
    end = (SCRAPES - 1) * messy_history.SCRAPE // EVERY * EVERY
    content = messy_history.differential(forms, EVERY, end, [series])
    # the latest period's flags at 0 too: an earlier period's at the evaluation that many periods later
    (test,) = content["tests"]
    test["promql_expr_test"].insert(0, {**test["promql_expr_test"][0], "eval_time": "0s"})
    assert test["promql_expr_test"][1]["eval_time"] == f"{EVERY}s" and PERIOD % EVERY == 0
    # the alert need not fire within the history (it is judged through its sums): its sums and each flag must give
    # something
    assert messy_history.differential_failures(content, EVERY, tmp_path) == ""

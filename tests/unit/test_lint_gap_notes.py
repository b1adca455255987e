"""Lint AL018 and the alarm's description say what a gap in a GPU's data does to a counter alarm on the OTel pipeline
of exactly the alarms whose CloudWatch form adds up the counter's deltas: every aggregation, grouping (per pod too),
scope and comparison a definition can write.

awsemf sends a counter's growth across a gap as the first delta after it (cloudwatch_query.otel_gap): any query that
SUMs the deltas, per GPU, node, pod, namespace or the cluster, has that behaviour; a count of the counter's series
does not read the deltas. AL018 read only the sums without a pod (a per-pod alarm's description had the gap text, lint
no note), and the description was written of every increase alarm (a count of GPUs reporting a counter too) and of no
rate alarm (whose form is the same SUM of deltas).
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.cloudwatch_query import OTEL_GAP_EVENTS, OTEL_GAP_LEVEL
from generator.lint.metrics_insights import parse
from generator.lint.runner import lint_project
from generator.model import AGGREGATIONS, Alarm, Condition, Query
from generator.output import encode
from generator.render.alarms import cloudwatch_alarms
from tests.support.projects import bundled_project, defined_project

COUNTERS = ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
GROUPINGS = ((), ("node",), ("pod",), ("node", "gpu"), ("pod", "gpu"), ("namespace",), ("gpu",))
CLASSIC = "agent:\n  pipeline: classic\n"


def _cases(settings: str) -> list[tuple]:
    """Every alarm of the counters the pipeline builds: (metric, aggregation, grouping, as_increase, threshold,
    scope)."""
    project = bundled_project(settings)
    cases = []
    for metric in COUNTERS:
        for aggregation in AGGREGATIONS:
            for by in GROUPINGS:
                for increase in (False, True):
                    for threshold in (0, 5):
                        for scope in ("cluster", "fleet"):
                            alarm = Alarm("x", "X", Condition(Query(metric, aggregation, by, as_increase=increase),
                                                              ">", threshold), scope=scope)
                            try:
                                cloudwatch_alarms((alarm,), project.settings, project.catalog)
                            except Exception:  # refused (generate names it): no alarm to note
                                continue
                            cases.append((metric, aggregation, by, increase, threshold, scope))
    return cases


def _said(settings: str, folder) -> tuple[list[tuple], dict, dict, dict]:
    cases = _cases(settings)
    text = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm('c{k}', 'X', Condition(Query({m!r}, {a!r}, {by!r}, as_increase={i}), '>', {t}), "
        f"scope={s!r}, description='d', runbook='r')\n" for k, (m, a, by, i, t, s) in enumerate(cases))
    project = defined_project(folder, settings, alarms=text)
    described, sums = {}, {}
    for item in json.loads(encode(build(project))["cloudwatch/alarms.json"])["alarms"]:
        request = item["Request"]
        rule = next(tag["Value"] for tag in request["Tags"] if tag["Key"] == "gpudash:rule")
        description = request.get("AlarmDescription", "")
        described[rule] = "events" if OTEL_GAP_EVENTS in description else "level" if OTEL_GAP_LEVEL in description \
            else None
        queries = [parse(m["Expression"]) for m in request.get("Metrics", []) if "Expression" in m]
        sums[rule] = any(q.function == "SUM" and q.metric in COUNTERS for q in queries)
    names = {f"gpudash-gpu-cluster-c{k}-warning": f"c{k}" for k in range(len(cases))} | \
        {f"gpudash-fleet-c{k}-warning": f"c{k}" for k in range(len(cases))}
    noted = {names[f.where.split(" ")[-1]]: "events" if OTEL_GAP_EVENTS in f.message else "level"
             for f in lint_project(project) if f.rule == "AL018"}
    return cases, described, noted, sums


@pytest.fixture(scope="module")
def otel(tmp_path_factory):
    return _said("", tmp_path_factory.mktemp("otel"))


def test_lint_notes_and_the_description_says_it_of_exactly_the_alarms_that_sum_deltas(otel):
    cases, described, noted, sums = otel
    summing = {rule for rule, adds in sums.items() if adds}
    assert {rule for rule, kind in described.items() if kind} == set(noted) == summing
    # per pod and per namespace sums among them; no count of a counter's series
    kinds = {(cases[int(rule[1:])][1], cases[int(rule[1:])][2]) for rule in summing}
    assert ("sum", ("pod",)) in kinds and ("sum", ("namespace",)) in kinds and ("sum", ("pod", "gpu")) in kinds
    assert not any(aggregation == "count" for aggregation, _ in kinds)
    assert len(cases) > 200


def test_the_note_and_the_description_say_the_same_of_an_increase_or_a_level(otel):
    """An increase `> 0` counts each event (the rule looks back an hour), a level per period otherwise. (A rate `> 0`
    has a CloudWatch form no different from an increase's: lint says the event text there.)"""
    cases, described, noted, _ = otel
    for rule, kind in noted.items():
        _, _, _, increase, threshold, _ = cases[int(rule[1:])]
        if increase or threshold:
            assert described[rule] == kind == ("events" if increase and threshold == 0 else "level"), rule


def test_on_classic_nothing_says_the_otel_gap(tmp_path):
    cases, described, noted, _ = _said(CLASSIC, tmp_path)
    assert cases and not noted and not any(described.values())

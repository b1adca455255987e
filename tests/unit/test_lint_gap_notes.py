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
from generator.cloudwatch_query import GAP_TEXTS, OTEL_GAP_EITHER, OTEL_GAP_EVENTS, OTEL_GAP_LEVEL, OTEL_GAP_RATE
from generator.lint import run
from generator.lint.cloudwatch_rules import RULES
from generator.lint.metrics_insights import parse
from generator.model import AGGREGATIONS, Alarm, Condition, Query
from generator.output import encode
from generator.render.alarms import cloudwatch_alarms
from tests.support.lint_input import lint_input
from tests.support.projects import bundled_project, defined_project

COUNTERS = ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
GROUPINGS = ((), ("node",), ("pod",), ("node", "gpu"), ("pod", "gpu"), ("namespace",), ("gpu",))
CLASSIC = "agent:\n  pipeline: classic\n"
AL018 = [rule for rule in RULES if rule.id == "AL018"]


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
    artifacts = build(project, grafana=False)  # (AL018 and the alarms read no Grafana dashboard)
    described, sums = {}, {}
    for item in json.loads(encode(artifacts)["cloudwatch/alarms.json"])["alarms"]:
        request = item["Request"]
        rule = next(tag["Value"] for tag in request["Tags"] if tag["Key"] == "gpudash:rule")
        description = request.get("AlarmDescription", "")
        described[rule] = next((kind for kind, said in GAP_TEXTS.items() if said in description), None)
        queries = [parse(m["Expression"]) for m in request.get("Metrics", []) if "Expression" in m]
        sums[rule] = any(q.function == "SUM" and q.metric in COUNTERS for q in queries)
    names = {f"gpudash-gpu-cluster-c{k}-warning": f"c{k}" for k in range(len(cases))} | \
        {f"gpudash-fleet-c{k}-warning": f"c{k}" for k in range(len(cases))}
    noted = {names[f.where.split(" ")[-1]]: next(kind for kind, said in GAP_TEXTS.items() if f.message.endswith(said))
             for f in run(AL018, lint_input(project, artifacts))}  # lint's AL018 on the build it lints
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


def test_the_note_and_the_description_say_the_same_of_an_increase_a_rate_or_a_level(otel):
    """An increase `> 0` counts each event (the rule looks back an hour); a rate `> 0` any growth, its rule a level's
    horizon (10 minutes), so a gap's growth of 10 to 30 minutes fires the alarm and not the rule; a level per period
    otherwise. A rate `> 0` has a CloudWatch request no different from an increase's but its description: lint said
    the event text of it (an hour's reach its rule does not have)."""
    cases, described, noted, _ = otel
    kinds = set()
    for rule, kind in noted.items():
        _, _, _, increase, threshold, _ = cases[int(rule[1:])]
        expected = "level" if threshold else "events" if increase else "rate"
        assert described[rule] == kind == expected, rule
        kinds.add(kind)
    assert kinds == {"events", "rate", "level"}


def test_a_rate_above_0_and_an_increase_above_0_make_the_same_request_but_their_description():
    """Lint reads the requests: the description is where the two differ (so it can say each one's truth)."""
    project = bundled_project("")
    made = {}
    for increase in (False, True):
        alarm = Alarm("x", "X", Condition(Query(COUNTERS[0], "sum", ("node", "gpu"), as_increase=increase), ">", 0),
                      description="d", runbook="r")
        (item,) = cloudwatch_alarms((alarm,), project.settings, project.catalog)
        made[increase] = item["Request"]
    rate, increase = made[False], made[True]
    assert {k: v for k, v in rate.items() if k != "AlarmDescription"} == \
        {k: v for k, v in increase.items() if k != "AlarmDescription"}
    assert OTEL_GAP_RATE in rate["AlarmDescription"] and OTEL_GAP_EVENTS not in rate["AlarmDescription"]
    assert OTEL_GAP_EVENTS in increase["AlarmDescription"] and OTEL_GAP_RATE not in increase["AlarmDescription"]


def test_the_rate_text_says_the_rules_horizon():
    """The rate's text names the rule's horizon: a rate `> 0` reaches back no further than a level (gap_reach 0, the
    window's WINDOW_PREVIOUS_WITHIN), an increase `> 0` an hour."""
    from generator.promql import PREVIOUS_WITHIN, WINDOW_PREVIOUS_WITHIN
    from generator.render.alarms import gap_reach

    project = bundled_project("")
    reach = {increase: gap_reach(Alarm("x", "X", Condition(Query(COUNTERS[0], "sum", ("node", "gpu"),
                                                                 as_increase=increase), ">", 0)), project.settings)
             for increase in (False, True)}
    assert reach == {False: 0, True: PREVIOUS_WITHIN}
    assert f"counts a gap's growth up to {WINDOW_PREVIOUS_WITHIN // 60} minutes" in OTEL_GAP_RATE
    assert f"shares a gap's growth (up to {WINDOW_PREVIOUS_WITHIN // 60} minutes) over its periods" in OTEL_GAP_LEVEL


def test_a_request_above_0_whose_description_says_neither_gets_both_texts(tmp_path):
    """A `> 0` request made otherwise (its description without the generator's text) cannot be told apart: lint says
    what holds of either, never the event text alone."""
    from dataclasses import replace

    from generator.lint.cloudwatch_rules import alarm_gap_growth
    from generator.lint.runner import lint_input

    text = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
            f"    yield Alarm('r', 'X', Condition(Query({COUNTERS[0]!r}, 'sum', ('node', 'gpu')), '>', 0), "
            "description='d', runbook='r')\n")
    project = defined_project(tmp_path, "", alarms=text)
    subject = lint_input(project)
    (said,) = [f.message for f in alarm_gap_growth(subject)]
    assert said.endswith(OTEL_GAP_RATE)
    bare = tuple(replace(item, request={**item.request, "AlarmDescription": "d"}) for item in subject.artifacts.alarms)
    subject = replace(subject, artifacts=replace(subject.artifacts, alarms=bare))
    (said,) = [f.message for f in alarm_gap_growth(subject)]
    assert said.endswith(OTEL_GAP_EITHER)


def test_on_classic_nothing_says_the_otel_gap(tmp_path):
    cases, described, noted, _ = _said(CLASSIC, tmp_path)
    assert cases and not noted and not any(described.values())

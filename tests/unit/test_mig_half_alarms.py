"""No CloudWatch alarm of GPU utilization fires where its Prometheus rule does not, on either pipeline: every
aggregation (count, sum, mean, max, min) x grouping (a GPU, a node, a pod, a namespace, the cluster, the fleet) x
comparison, through the build's agent model on the mixed fleet (tests/support/mixed_fleet.FLEET: two A100s split into
MIG instances, which report no GPU utilization; their graphics engine activity stands in, x 100).

The rule reads each GPU of a group once, a MIG GPU by the mean of the instances the group holds on it (promql's MIG
branch; per pod, a pod's whole GPUs and MIG instances judged apart: kinds_apart). `_truth` says that from the fleet's
facts; promtool fires exactly there for every case of this sweep at the thresholds below (checked over the generated
rules; tests/integration/test_gpu_count_twins.py keeps a few of them). A max or min over a group but a node's was split
into a whole-GPU alarm and a MIG instances' alarm, each judging part of the group against the whole threshold:
`min by namespace > 19` fired for team-a, which holds a whole GPU at 2 %, because its MIG instance reads 80 %. Now each
alarm that builds fires exactly where the rule does, or (lint AL012) only misses MIG GPUs; where its whole GPUs alone
could fire where the rule does not and no set reads each GPU once (a namespace; a node or the cluster on
agent.pipeline: classic), generate refuses it (exit 2, naming the alarm)."""

from __future__ import annotations

from dataclasses import replace
from statistics import mean

import pytest

from generator.artifacts import build, notes
from generator.errors import InputError
from generator.render.alarms import cloudwatch_alarms
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import alarms_through_agent
from tests.support.projects import defined_project

STEP, END = 30, 900
UTIL = "DCGM_FI_DEV_GPU_UTIL"
GROUPINGS = {"cluster": ((), "cluster"), "node": (("node",), "cluster"), "gpu": (("node", "gpu"), "cluster"),
             "pod": (("pod",), "cluster"), "namespace": (("namespace",), "cluster"), "fleet": ((), "fleet")}
# the mixed fleet with its time-sliced GPU named under one pod at every scrape: a pod named every other scrape reads
# half its GPU's sum on CloudWatch (a matter of time-slicing, not MIG: README, "A GPU's counters when pods share it")
FLEET = tuple(replace(node, moves=0) for node in mixed_fleet.FLEET)
HOW = {"count": len, "sum": sum, "avg": mean, "max": max, "min": min}
TESTED = {">": lambda value, level: value > level, "<": lambda value, level: value < level}


def _keys(by: tuple[str, ...]) -> tuple[str, ...]:
    return ("namespace", *by) if "pod" in by else by


def _truth(aggregation: str, by: tuple[str, ...]) -> dict[tuple, float]:
    """{group: value} as the rule reads it: per group and GPU one value (a MIG GPU's, the mean engine activity x 100 of
    the instances the group holds on it), then the aggregation over the group's GPUs."""
    keys = _keys(by)
    groups: dict[tuple, list[float]] = {}
    for node in FLEET:
        for gpu in node.gpus:
            held: dict[tuple, list] = {}
            for instance in gpu.instances:
                for pod in (node.labelled(instance) if {"pod", "namespace"} & set(keys) else (None,)):
                    facts = {"node": node.name, "gpu": str(gpu.index), "pod": pod and pod[1],
                             "namespace": pod and pod[0]}
                    held.setdefault(tuple((key, facts[key]) for key in keys), []).append(instance)
            for key, instances in held.items():
                value = 1.0 if aggregation == "count" else \
                    mean(i.engine * 100 for i in instances) if gpu.mig else gpu.util
                groups.setdefault(key, []).append(value)
    return {key: HOW[aggregation](values) for key, values in groups.items()}


def _thresholds(values) -> list[float]:
    """Between each two neighbouring values of the groups (every way the groups can be split by a level)."""
    ordered = sorted({round(v, 6) for v in values})
    return [round((a + b) / 2, 3) for a, b in zip(ordered, ordered[1:])] or [ordered[0] + 0.5]


CASES = [(name, aggregation, comparison, k, threshold) for name, (by, _) in GROUPINGS.items() for aggregation in HOW
         for comparison in TESTED for k, threshold in enumerate(_thresholds(_truth(aggregation, by).values()))]


def _rule(name: str, aggregation: str, comparison: str, k: int) -> str:
    return f"{aggregation}-{name}-{'above' if comparison == '>' else 'below'}-{k}"


def _alarms(cases) -> str:
    return "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({_rule(n, a, c, k)!r}, 'X', Condition(Query({UTIL!r}, {a!r}, {GROUPINGS[n][0]!r}), {c!r}, "
        f"{t!r}), scope={GROUPINGS[n][1]!r}, description='x', runbook='y')\n" for n, a, c, k, t in cases)


@pytest.fixture(scope="module", params=[(pipeline, comparison) for pipeline in ("otel", "classic")
                                        for comparison in TESTED], ids=lambda p: f"{p[0]}-{'above' if p[1] == '>' else 'below'}")
def judged(request, tmp_path_factory):
    """(pipeline, comparison, the refused rules, {rule: (CloudWatch's firing groups, noted AL012)}) of every case of
    the comparison: the rules generate refuses found one by one, the others built in one project."""
    pipeline, comparison = request.param
    settings = f"agent:\n  pipeline: {pipeline}\n"
    cases = [case for case in CASES if case[2] == comparison]
    every = defined_project(tmp_path_factory.mktemp("every"), settings, alarms=_alarms(cases))
    refused = set()
    for alarm in every.alarms:
        try:
            cloudwatch_alarms((alarm,), every.settings, every.catalog)
        except InputError:
            refused.add(alarm.id)
    project = defined_project(tmp_path_factory.mktemp("built"), settings,
                              alarms=_alarms([c for c in cases if _rule(*c[:4]) not in refused]))
    noted = {note.message.split("'")[1] for note in notes(project) if note.rule == "AL012"}
    requests, points = alarms_through_agent(project, STEP, END, FLEET)
    fired: dict[str, set] = {}
    for request in requests.values():
        rule = next(tag["Value"] for tag in request["Tags"] if tag["Key"] == "gpudash:rule")
        fired.setdefault(rule, set()).update(
            key for key, state in cloudwatch_eval.alarm(request, points, END).items() if state == "ALARM")
    return pipeline, comparison, refused, {rule: (groups, rule in noted) for rule, groups in fired.items()}


def test_the_premise_the_r4_case_fires_for_team_a_on_its_mig_instance_alone():
    values = _truth("min", ("namespace",))
    assert values[(("namespace", "team-a"),)] == 2  # a whole GPU at 2 %, its MIG instance (mig-a) at 80 %
    assert sorted(v for ns, v in values.items() if v > 19) == [35, 40, 40, 70]  # team-b, -c, -f, -e


@pytest.mark.parametrize("name", GROUPINGS)
@pytest.mark.parametrize("aggregation", HOW)
def test_an_alarm_fires_where_its_rule_does_or_only_misses_noted_or_is_refused(judged, name, aggregation):
    pipeline, comparison, refused, fired = judged
    (by, _), keys = GROUPINGS[name], _keys(GROUPINGS[name][0])
    truth = _truth(aggregation, by)
    for case in [c for c in CASES if c[0] == name and c[1] == aggregation and c[2] == comparison]:
        rule, threshold = _rule(*case[:4]), case[4]
        if rule in refused:
            # refused only where no set reads each GPU of the group once: a namespace, classic's node and cluster, a
            # pod's count of its whole GPUs and MIG instances together (the rule's; a pod's sum judges them apart)
            assert name == "namespace" or (name == "pod" and aggregation == "count") or \
                (pipeline == "classic" and name in ("node", "cluster", "fleet")), rule
            continue
        groups, noted = fired[rule]
        shown = {tuple((key, dict(group).get(key)) for key in keys) for group in groups}
        expected = {group for group, value in truth.items() if TESTED[comparison](value, threshold)}
        assert shown <= expected, (rule, "fires where the rule does not", sorted(shown - expected))
        if not noted:
            assert shown == expected, (rule, "misses without a note", sorted(expected - shown))


def test_generate_refuses_the_half_alarm_naming_it(tmp_path):
    """The R4 case on either pipeline: exit 2, one message naming the alarm and its file, no traceback."""
    from click.testing import CliRunner

    from generator.cli import main

    defined_project(tmp_path, "", alarms=_alarms([("namespace", "min", ">", 0, 19)]))
    result = CliRunner().invoke(main, ["generate", "--config", str(tmp_path / "gpudash.yaml"), "--out",
                                       str(tmp_path / "build")])
    assert result.exit_code == 2, result.output
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "alarm 'min-namespace-above-0'" in text and "alarms/alarms.py" in text and "Traceback" not in text
    assert "fire where its Prometheus rule does not" in text

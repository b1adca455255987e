"""No CloudWatch alarm of GPU utilization fires where its Prometheus rule does not, on either pipeline: every
aggregation (count, sum, mean, max, min) x grouping (a GPU, a node, a pod, a namespace, the cluster, the fleet) x
comparison, through the build's agent model on the mixed fleet (tests/support/mixed_fleet.FLEET: two A100s split into
MIG instances, which report no GPU utilization; their graphics engine activity stands in, x 100).

The rule reads each GPU of a group once, a MIG GPU by the mean of the instances the group holds on it (promql's MIG
branch; per pod, a pod's whole GPUs and MIG instances judged apart: kinds_apart). `alarm_truth` says that from the fleet's
facts; promtool fires exactly there for every case of this sweep at the thresholds below (checked over the generated
rules; tests/integration/test_gpu_count_twins.py keeps a few of them). A max or min over a group but a node's was split
into a whole-GPU alarm and a MIG instances' alarm, each judging part of the group against the whole threshold:
`min by namespace > 19` fired for team-a, which holds a whole GPU at 2 %, because its MIG instance reads 80 %. Now each
alarm that builds fires exactly where the rule does, or (lint AL012) only misses MIG GPUs; where its whole GPUs alone
could fire where the rule does not and no set reads each GPU once (a namespace, a node or the cluster on
agent.pipeline: classic; the OTel pipeline reads a namespace's use of each GPU, a MIG GPU by the mean stand-in of the
instances the namespace holds on it, in one alarm), generate refuses it (exit 2, naming the alarm)."""

from __future__ import annotations

import pytest

from generator.artifacts import notes
from generator.errors import InputError
from generator.render.alarms import cloudwatch_alarms
from tests.support import cloudwatch_eval
from tests.support.agent_points import alarms_through_agent
from tests.support.mig_alarm_truth import FLEET, HOW, TESTED, UTIL, WHOLE, alarm_truth, group_keys
from tests.support.projects import defined_project

STEP, END = 30, 900
GROUPINGS = {"cluster": ((), "cluster"), "node": (("node",), "cluster"), "gpu": (("node", "gpu"), "cluster"),
             "pod": (("pod",), "cluster"), "namespace": (("namespace",), "cluster"), "fleet": ((), "fleet")}


def _thresholds(values) -> list[float]:
    """Between each two neighbouring values of the groups (every way the groups can be split by a level)."""
    ordered = sorted({round(v, 6) for v in values})
    return [round((a + b) / 2, 3) for a, b in zip(ordered, ordered[1:])] or [ordered[0] + 0.5]


def _cases(fleet) -> list[tuple]:
    return [(name, aggregation, comparison, k, threshold) for name, (by, _) in GROUPINGS.items() for aggregation in HOW
            for comparison in TESTED
            for k, threshold in enumerate(_thresholds(alarm_truth(aggregation, by, fleet).values()))]


CASES = _cases(FLEET)
WHOLE_CASES = _cases(WHOLE)


def _rule(name: str, aggregation: str, comparison: str, k: int) -> str:
    return f"{aggregation}-{name}-{'above' if comparison == '>' else 'below'}-{k}"


def _alarms(cases) -> str:
    return "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({_rule(n, a, c, k)!r}, 'X', Condition(Query({UTIL!r}, {a!r}, {GROUPINGS[n][0]!r}), {c!r}, "
        f"{t!r}), scope={GROUPINGS[n][1]!r}, description='x', runbook='y')\n" for n, a, c, k, t in cases)


PARAMS = [(pipeline, comparison) for pipeline in ("otel", "classic") for comparison in TESTED]


def _param_id(param) -> str:
    return f"{param[0]}-{'above' if param[1] == '>' else 'below'}"


def _refused(project) -> set[str]:
    """The rules of the project generate refuses, found one by one."""
    refused = set()
    for alarm in project.alarms:
        try:
            cloudwatch_alarms((alarm,), project.settings, project.catalog)
        except InputError:
            refused.add(alarm.id)
    return refused


def _fired(project, fleet) -> dict[str, tuple[set, bool]]:
    """{rule: (CloudWatch's firing groups over the fleet through the agent model, noted AL012)}."""
    noted = {note.message.split("'")[1] for note in notes(project) if note.rule == "AL012"}
    requests, points = alarms_through_agent(project, STEP, END, fleet)
    fired: dict[str, set] = {}
    for request in requests.values():
        rule = next(tag["Value"] for tag in request["Tags"] if tag["Key"] == "gpudash:rule")
        fired.setdefault(rule, set()).update(
            key for key, state in cloudwatch_eval.alarm(request, points, END).items() if state == "ALARM")
    return {rule: (groups, rule in noted) for rule, groups in fired.items()}


@pytest.fixture(scope="module", params=PARAMS, ids=_param_id)
def judged(request, tmp_path_factory):
    """(pipeline, comparison, the refused rules, {rule: (CloudWatch's firing groups, noted AL012)}) of every case of
    the comparison: the rules generate refuses found one by one, the others built in one project."""
    pipeline, comparison = request.param
    settings = f"agent:\n  pipeline: {pipeline}\n"
    cases = [case for case in CASES if case[2] == comparison]
    refused = _refused(defined_project(tmp_path_factory.mktemp("every"), settings, alarms=_alarms(cases)))
    project = defined_project(tmp_path_factory.mktemp("built"), settings,
                              alarms=_alarms([c for c in cases if _rule(*c[:4]) not in refused]))
    return pipeline, comparison, refused, _fired(project, FLEET)


def test_the_premise_a_namespace_minimum_fires_for_team_a_on_its_mig_instance_alone():
    values = alarm_truth("min", ("namespace",))
    assert values[(("namespace", "team-a"),)] == 2  # a whole GPU at 2 %, its MIG instance (mig-a) at 80 %
    assert sorted(v for ns, v in values.items() if v > 19) == [35, 40, 40, 70]  # team-b, -c, -f, -e


@pytest.mark.parametrize("name", GROUPINGS)
@pytest.mark.parametrize("aggregation", HOW)
def test_an_alarm_fires_where_its_rule_does_or_only_misses_noted_or_is_refused(judged, name, aggregation):
    pipeline, comparison, refused, fired = judged
    (by, _), keys = GROUPINGS[name], group_keys(GROUPINGS[name][0])
    truth = alarm_truth(aggregation, by)
    for case in [c for c in CASES if c[0] == name and c[1] == aggregation and c[2] == comparison]:
        rule, threshold = _rule(*case[:4]), case[4]
        if rule in refused:
            # refused only where no set reads each GPU of the group once: classic's namespace, node and cluster, a
            # pod's count of its whole GPUs and MIG instances together (the rule's; a pod's sum judges them apart)
            assert (name == "pod" and aggregation == "count") or \
                (pipeline == "classic" and name in ("namespace", "node", "cluster", "fleet")), rule
            continue
        groups, noted = fired[rule]
        shown = {tuple((key, dict(group).get(key)) for key in keys) for group in groups}
        expected = {group for group, value in truth.items() if TESTED[comparison](value, threshold)}
        assert shown <= expected, (rule, "fires where the rule does not", sorted(shown - expected))
        if not noted:
            assert shown == expected, (rule, "misses without a note", sorted(expected - shown))


def test_generate_refuses_the_half_alarm_naming_it(tmp_path):
    """The case above (team-a's minimum) on agent.pipeline: classic (the OTel pipeline reads a namespace's use of each
    GPU, a MIG GPU by its instances' stand-in: it builds): exit 2, one message naming the alarm and its file, no
    traceback."""
    from click.testing import CliRunner

    from generator.cli import main

    defined_project(tmp_path, "agent:\n  pipeline: classic\n", alarms=_alarms([("namespace", "min", ">", 0, 19)]))
    result = CliRunner().invoke(main, ["generate", "--config", str(tmp_path / "gpudash.yaml"), "--out",
                                       str(tmp_path / "build")])
    assert result.exit_code == 2, result.output
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "alarm 'min-namespace-above-0'" in text and "alarms/alarms.py" in text and "Traceback" not in text
    assert "fire where its Prometheus rule does not" in text


@pytest.fixture(scope="module", params=PARAMS, ids=_param_id)
def whole_judged(request, tmp_path_factory):
    """(pipeline, comparison, the rules refused without exporter.mig: none, the rules refused with it, the alarms'
    names, {rule: (CloudWatch's firing groups over the fleet of whole GPUs, noted AL012)}) with exporter.mig: none."""
    pipeline, comparison = request.param
    settings = f"agent:\n  pipeline: {pipeline}\n"
    cases = [case for case in WHOLE_CASES if case[2] == comparison]
    settings_none = settings + "exporter:\n  mig: none\n"
    before = _refused(defined_project(tmp_path_factory.mktemp("before"), settings, alarms=_alarms(cases)))
    refused = _refused(defined_project(tmp_path_factory.mktemp("every"), settings_none, alarms=_alarms(cases)))
    project = defined_project(tmp_path_factory.mktemp("none"), settings_none,
                              alarms=_alarms([c for c in cases if _rule(*c[:4]) not in refused]))
    names = {alarm["Request"]["AlarmName"]
             for alarm in cloudwatch_alarms(project.alarms, project.settings, project.catalog)}
    return pipeline, comparison, before, refused, names, _fired(project, WHOLE)


def test_the_whole_gpu_fleet_has_no_mig_gpu_and_the_refused_cases_are_there(whole_judged):
    pipeline, comparison, before, *_ = whole_judged
    assert len(WHOLE) == len(FLEET) - 1 and not any(gpu.mig for node in WHOLE for gpu in node.gpus)
    # without the setting the refusal stands on classic (the mean by namespace, node or cluster at least); the OTel
    # pipeline reads a namespace's use of each GPU and each GPU's reading once, a MIG GPU by its stand-in: a pod's
    # count below a level alone (the rule counts a pod's whole GPUs and MIG instances together)
    if pipeline == "classic":
        assert any(rule.startswith("avg-namespace-") for rule in before), sorted(before)
        assert any(rule.startswith(("avg-node-", "avg-cluster-")) for rule in before), sorted(before)
    else:
        assert {rule.rsplit("-", 1)[0] for rule in before} <= {"count-pod-below"}, sorted(before)


def test_with_exporter_mig_none_no_alarm_is_refused_or_split_into_a_mig_instances_alarm(whole_judged):
    pipeline, comparison, before, refused, names, fired = whole_judged
    assert not refused, sorted(refused)
    assert not [alarm for alarm in names if alarm.endswith("-mig")], sorted(names)


@pytest.mark.parametrize("name", GROUPINGS)
@pytest.mark.parametrize("aggregation", HOW)
def test_with_exporter_mig_none_every_alarm_fires_exactly_where_its_rule_does_unnoted(whole_judged, name,
                                                                                      aggregation):
    """exporter.mig: none on a fleet of whole GPUs: each alarm (none noted AL012) fires for exactly the groups the
    rule's truth does (the whole GPUs' utilization is every GPU's)."""
    pipeline, comparison, before, refused, names, fired = whole_judged
    by, keys = GROUPINGS[name][0], group_keys(GROUPINGS[name][0])
    truth = alarm_truth(aggregation, by, WHOLE)
    for case in [c for c in WHOLE_CASES if c[0] == name and c[1] == aggregation and c[2] == comparison]:
        rule, threshold = _rule(*case[:4]), case[4]
        if rule in refused:
            continue  # the test above fails
        groups, noted = fired[rule]
        assert not noted, rule
        shown = {tuple((key, dict(group).get(key)) for key in keys) for group in groups}
        expected = {group for group, value in truth.items() if TESTED[comparison](value, threshold)}
        assert shown == expected, (rule, "was refused without exporter.mig: none" if rule in before else "",
                                   sorted(shown - expected), sorted(expected - shown))


def test_generate_builds_a_namespace_mean_with_exporter_mig_none_and_the_refusal_names_it(tmp_path):
    from click.testing import CliRunner

    from generator.cli import main

    def generate(folder, settings):
        folder.mkdir()
        defined_project(folder, settings, alarms=_alarms([("namespace", "avg", "<", 0, 10)]))
        return CliRunner().invoke(main, ["generate", "--config", str(folder / "gpudash.yaml"), "--out",
                                         str(folder / "build")])

    refused = generate(tmp_path / "a", "agent:\n  pipeline: classic\n")
    assert refused.exit_code == 2 and "set exporter.mig: none" in refused.output + (refused.stderr or ""), \
        refused.output
    built = generate(tmp_path / "b", "agent:\n  pipeline: classic\nexporter:\n  mig: none\n")
    assert built.exit_code == 0, built.output

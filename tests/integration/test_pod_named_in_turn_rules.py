"""A pod's rule over a GPU its exporter names under one pod per scrape, in turn, fires steadily for each pod holding it.

An exporter without KUBERNETES_VIRTUAL_GPUS (the GPU operator's default) names a GPU pods share by time-slicing or MPS
under one of them per scrape, not always the same one (dcgm-exporter #340): the mixed fleet's gpu-node-ts names ts-0
and ts-1 in turn, and Prometheus marks the other pod's series stale at each scrape. The per-pod panels read the pods a
scrape within the look-back named (promql.label_lookback: four scrape intervals, 120 s at 30 s scrapes), each with the
GPU's reading. The rules per pod, per (pod, GPU) and per namespace or container read the instant's series only: a count
(`count(util) by (pod, gpu) > 0.5`) fired for ts-0 at one scrape and for ts-1 at the next, and a pod's sum or mean over
a GPU of its own and one named in turn read the shared one at half the scrapes. Here promtool runs the generated rules
over the fleet's series as Prometheus stores them (staleness markers where a scrape leaves a pod's series out), judged
at instants between and on scrapes: every form fires, at every instant, for exactly the pods whose truth
(mixed_fleet.truth: each pod holding the GPU whole) breaches, and the CloudWatch twins (agent.pipeline: otel, through
the agent model) are in ALARM for the same pods.
"""

from __future__ import annotations

import operator
import re

import pytest

from generator.render.alarms import RULE_STEP_SECONDS
from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import alarms_through_agent
from tests.support.pods_in_turn import FLEET, FORMS, POWER, SHARED_PODS, UTIL, breaching_labels
from tests.support.projects import defined_project
from tests.support.promtool_rules import alert_names, alert_rule, expected_alert, judged_apart, promtool_test

STEP, STEPS = 30, 40  # twenty minutes of 30 s scrapes
# judged from minute 15 (three whole 5-minute periods of readings) to the last scrape, on and between scrapes
INSTANTS = list(range(900, STEPS * STEP, 25))


def _definitions() -> str:
    return ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({rule!r}, 'T', Condition(Query({field!r}, {aggregation!r}, {by!r}), {comparison!r}, "
        f"{level}), description='d', runbook='r')\n" for rule, field, aggregation, by, comparison, level in FORMS))


def test_the_premise_each_form_tells_a_pod_read_whole_from_one_read_at_some_scrapes():
    """Each form's level lies between what a sharing pod reads whole and what it read at the scrapes naming it alone
    (a count of 0 or a GPU left out of its sum): every sharing pod's judgement depends on reading it whole."""
    assert {(n.name, n.moves) for n in FLEET if n.moves} == {("gpu-node-ts", 1), ("gpu-node-ts2", 1)}
    fired = {rule: {(labels["namespace"], labels.get("pod")) for labels in breaching_labels(*form)} for rule, *form in FORMS}
    assert fired["count-power-pod-gpu-gt-0-5"] >= SHARED_PODS and not fired["count-power-pod-gpu-lt-1"]
    assert ("team-g", "ts-a") in fired["sum-power-pod-gt-250"] and ("team-g", "ts-a") not in fired["sum-power-pod-lt-250"]
    assert ("team-g", "ts-a") in fired["count-power-pod-gt-1-5"]
    assert ("team-g", None) in fired["count-power-namespace-gt-1-5"] and ("team-h", None) in fired["sum-power-namespace-lt-250"]
    assert ("team-g", None) not in fired["sum-power-namespace-lt-250"] and not fired["count-power-namespace-lt-1"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("named-in-turn"), {"turns.py": _definitions()},
                      fields=(UTIL, POWER, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"))


def _series() -> list[dict[str, str]]:
    fields = tuple(f"{field}{{" for field in (UTIL, POWER, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"))
    stored = {}
    for node in FLEET:
        stored.update(mixed_fleet.stored(node, fields, STEPS, STEP))
    return [{"series": series, "values": " ".join(values)} for series, values in stored.items()]


def test_the_series_name_the_sharing_pods_in_turn_with_staleness_markers():
    series = {s["series"]: s["values"].split() for s in _series()}
    ts0 = next(v for s, v in series.items() if s.startswith(UTIL) and 'pod="ts-0"' in s)
    ts1 = next(v for s, v in series.items() if s.startswith(UTIL) and 'pod="ts-1"' in s)
    assert ts0[:4] == ["3", "stale", "3", "stale"] and ts1[:4] == ["_", "3", "stale", "3"]


# copies of the fleet judged in one promtool run: 3 (150 series) exceed promtool's limit of samples a query, 2 do not
# (at 3 each run failed on the limit, 2.4 s of CPU, before its halves were judged: 22 s in all, 11 s at 2)
COPIES = 2
# the labels naming the fleet's namespaces, nodes and GPUs: each copy's values marked its own (_copy)
NAMING = ("namespace", "node", "UUID", "Hostname", "hostname")
# of the labels a join may keep apart (promtool_rules.STORY_OWN), those NAMING marks: the fleet's series name no
# exporter target (instance), so a join on it alone matches every copy's series with every other's
OWN = ("namespace", "node", "UUID")


def _copy(series: dict[str, str], instant: int, at: int) -> dict[str, str]:
    """The fleet's series in the copy judging `instant`: its namespaces, nodes and GPUs marked `-t<instant>` (no pod,
    GPU or namespace of one copy is another's), moved `at - instant` seconds later (a multiple of the rules' 5 s step:
    each reading keeps its place among their steps, the instant its place between the scrapes), its values restated
    every RULE_STEP_SECONDS."""
    per = STEP // RULE_STEP_SECONDS
    values = ["_"] * ((at - instant) // RULE_STEP_SECONDS)
    for value in series["values"].split():
        values += [value] + ["_"] * (per - 1)
    marked = re.sub(rf'\b({"|".join(NAMING)})="([^"]*)"', lambda m: f'{m[1]}="{m[2]}-t{instant}"', series["series"])
    return {"series": marked, "values": " ".join(values)}


def test_each_per_pod_rule_fires_steadily_for_every_pod_whose_truth_breaches(built):
    """At every instant judged (every 25 s from minute 15 to the last scrape: on scrapes and between them), each rule
    fires for exactly the pods (pods' GPUs) whose truth breaches: both pods sharing a GPU, not one in turn. Each
    instant is judged through a copy of the fleet of its own (_copy), moved later so that every copy is judged at the
    last instant of its run: promtool evaluates the rules at 0 and there alone, where one file per instant
    (evaluation_plans) evaluated them twice per instant with the costs that do not depend on the series (12 files: 8.7 s
    of CPU; 6 runs of COPIES copies: 11 s). The rules join no copy's series with another's (checked); a run over
    promtool's sample limit is halved (tests/support/promtool_batches)."""
    from tests.support.promtool_batches import batch_failure

    _, folder = built
    alerts = alert_names(folder)
    assert all(judged_apart(alert_rule(folder, alerts[rule])["expr"], OWN) for rule, *_ in FORMS)
    assert all((max(INSTANTS) - instant) % RULE_STEP_SECONDS == 0 and STEP % RULE_STEP_SECONDS == 0
               for instant in INSTANTS)
    fleet = _series()

    def judge(part: list[int]) -> None:
        at = max(part)
        cases = [{"eval_time": f"{at}s", "alertname": alerts[rule],
                  "exp_alerts": [expected_alert(folder, alerts[rule],
                                                **{**labels, "namespace": f"{labels['namespace']}-t{t}"})
                                 for t in part for labels in breaching_labels(*form)]}
                 for rule, *form in FORMS]
        promtool_test(folder, f"named_in_turn_{part[0]}.yaml", [{
            "interval": f"{RULE_STEP_SECONDS}s", "input_series": [_copy(one, t, at) for t in part for one in fleet],
            "alert_rule_test": cases}], evaluation_interval="5s")

    failures = [batch_failure(INSTANTS[k:k + COPIES], judge) for k in range(0, len(INSTANTS), COPIES)]
    assert failures == [None] * len(failures), failures


@pytest.fixture(scope="module")
def otel(tmp_path_factory):
    project = defined_project(tmp_path_factory.mktemp("otel"), "agent:\n  pipeline: otel\n",
                              alarms=_definitions())
    return alarms_through_agent(project, STEP, STEPS * STEP, FLEET)


# A pod's sum per pod over a GPU of its own and one named in turn (ts-a), and a namespace's count or sum (team-g,
# team-h): the agent's total per pod (per namespace) is made per scrape from the pods that scrape names, so ts-a and
# team-g read 120 + 160 W at half their scrapes, team-g 1.5 GPUs, team-h 0.5 GPUs (`count < 1` in ALARM for a
# namespace holding its GPU). (A pod's count reads the most GPUs one scrape of the period counted: 2 for ts-a.) The
# CloudWatch side of it is not mended: {rule: the groups judged otherwise than the truth there}
CLOUDWATCH_PART = {**dict.fromkeys(("sum-power-pod-gt-250", "sum-power-pod-lt-250"),
                                   ("ts-a",)),
                   **dict.fromkeys(("count-power-namespace-gt-1-5", "count-power-namespace-lt-1",
                                    "sum-power-namespace-gt-250", "sum-power-namespace-lt-250"), ("team-g", "team-h")),
                   "count-power-namespace-gt-0-5": ("team-h",)}


def _cloudwatch(otel, rule: str, judged: list) -> tuple[list, list]:
    """(the pods the CloudWatch twin of `rule` is in ALARM for at the last scrape, the truth's pods)."""
    requests, points = otel
    (request,) = [r for name, r in requests.items() if f"-{rule}-" in name and "-mig-" not in name]
    states = cloudwatch_eval.alarm(request, points, STEPS * STEP)
    in_alarm = sorted((dict(key) for key, state in states.items() if state == "ALARM"), key=str)
    truth = breaching_labels(*judged)
    if judged[0] == UTIL:  # a MIG instance's utilization: the rule's second alarm (by engine activity) judges it
        truth = [labels for labels in truth if not labels["pod"].startswith("mig-")]
        in_alarm = [labels for labels in in_alarm if not labels["pod"].startswith("mig-")]
    return in_alarm, truth


@pytest.mark.parametrize("form", FORMS, ids=[form[0] for form in FORMS])
def test_the_cloudwatch_twin_is_in_alarm_for_the_same_pods(otel, form):
    """agent.pipeline: otel (the agent's totals per pod and per (pod, GPU) made at each scrape): in ALARM for the
    pods the rule fires for, both pods of the GPU named in turn among them (CLOUDWATCH_PART's groups aside)."""
    rule, *judged = form
    in_alarm, truth = _cloudwatch(otel, rule, judged)
    if rule in CLOUDWATCH_PART:
        in_alarm, truth = ([labels for labels in found if labels.get("pod", labels["namespace"])
                            not in CLOUDWATCH_PART[rule]] for found in (in_alarm, truth))
    assert in_alarm == truth


@pytest.mark.xfail(strict=True, reason="CloudWatch: a pod's (namespace's) total is made per scrape from the pods it "
                                      "names, so a GPU named in turn beside the pod's own counts at the scrapes "
                                      "naming it only, where the rule counts it for the look-back: the agent keeps no "
                                      "look-back and Metrics Insights no distinct count (documented limits; the "
                                      "alarms' descriptions and the headers say it: NAMED_PART, NAMED_SHARE)")
@pytest.mark.parametrize("rule", CLOUDWATCH_PART)
def test_the_cloudwatch_twin_of_a_count_or_sum_over_a_gpu_named_in_turn_beside_another(otel, rule):
    (form,) = [form for form in FORMS if form[0] == rule]
    assert operator.eq(*_cloudwatch(otel, rule, form[1:]))


LEFT = 20  # the scrape from which the GPU's exporter names new-0 in old-0's place (old-0 last named at 570 s)


def test_a_pod_that_left_its_gpu_stops_counting_with_the_period(built):
    """old-0 leaves its GPU (last named by the scrape at 570 s, its series marked stale at 600 s) and new-0 takes it:
    a count per period counts each GPU with a reading in the period that a scrape within the per-pod look-back (four
    scrape intervals, 120 s) of the period's steps named the pod on, as its total's rule reads the pods of a GPU, so
    old-0 counts 1 in each period starting before 690 s, and, a pod whose data stopped judged on its last period with
    data in the alarm's evaluation range (its period and the 2 of AWS's example before it; test_stale_alarm_twins.py),
    the rule fires for old-0 until 15 minutes and the look-back after that scrape (at 1,580 s, not at 1,600 s); new-0
    from its first scrape. (The count read the look-back's pods at the evaluation's instant for every period alike:
    old-0 counted until 120 s after the scrape; without a look-back it counted a pod named in turn at the scrapes naming
    it alone.) `count < 1` fires for neither (a pod that left has no series to count below 1)."""
    _, folder = built
    alerts = alert_names(folder)
    labels = ('gpu="0",UUID="GPU-gpu-node-l-0",hostname="gpu-node-l",container="main",namespace="team-l",'
              'instance="10.0.9.9:9400",job="gpu-metrics",node="gpu-node-l"')
    old = " ".join(["250"] * LEFT + ["stale"])
    new = " ".join(["_"] * LEFT + ["250"] * (STEPS - LEFT))
    series = [{"series": f'{POWER}{{{labels},pod="{pod}"}}', "values": values}
              for pod, values in (("old-0", old), ("new-0", new))]
    cases = []
    for seconds in (590, 640, 685, 695, 720, 900, 1460, 1480, 1580, 1600):
        pods = [pod for pod, held in (("old-0", seconds < LEFT * STEP - STEP + 900 + 4 * STEP),
                                      ("new-0", seconds >= LEFT * STEP))
                if held]
        cases += [{"eval_time": f"{seconds}s", "alertname": alerts["count-power-pod-gpu-gt-0-5"],
                   "exp_alerts": [expected_alert(folder, alerts["count-power-pod-gpu-gt-0-5"], namespace="team-l", pod=pod,
                                            gpu="0") for pod in pods]},
                  {"eval_time": f"{seconds}s", "alertname": alerts["count-power-pod-gpu-lt-1"], "exp_alerts": []}]
    assert [c["exp_alerts"] != [] for c in cases[::2]] == [True] * 10  # someone holds it at every instant
    assert [len(c["exp_alerts"]) for c in cases[::2]] == [1, 2, 2, 2, 2, 2, 2, 2, 2, 1]
    promtool_test(folder, "left.yaml", [{"interval": f"{STEP}s", "input_series": series,
                                          "alert_rule_test": cases}], evaluation_interval="5s")


@pytest.mark.parametrize("rule", CLOUDWATCH_PART)
def test_the_cloudwatch_twin_that_reads_a_gpu_named_in_turn_in_part_says_so(otel, rule):
    """What CLOUDWATCH_PART's alarms read wrong is said in their descriptions (and their widgets' headers): a pod
    holding a GPU of its own and one named in turn reads the shared one at the scrapes naming it (its total per scrape,
    NAMED_PART: said nowhere before); a namespace's count or sum of its pods' readings per scrape, a pod's GPU at the
    share of the scrapes naming it (NAMED_SHARE)."""
    from generator.cloudwatch_query import NAMED_PART, NAMED_SHARE
    requests, _ = otel
    (request,) = [r for name, r in requests.items() if f"-{rule}-" in name and "-mig-" not in name]
    from generator.render.alarms import SHORT

    said = NAMED_SHARE if "-namespace-" in rule else NAMED_PART
    description = request["AlarmDescription"]
    assert said in description or SHORT[said] in description, description  # whole, or its short form

"""At one scrape per period (60 s scrapes, 60 s periods) a pod named in turn on a shared GPU still reads otherwise on
CloudWatch than its rule's total: the rule looks back four scrape intervals for the pods a scrape named on a GPU
(promql.label_lookback), so it reads each pod sharing the GPU as holding it whole at every instant, while the alarm's
period holds one scrape, which names the pod or not. A pod's total over a GPU of its own and one named in turn
(NAMED_PART) and its per-scrape total on the classic pipeline (NAMED_SHARE) are so judged otherwise, and their alarms
keep saying so there (unlike the failed-scrape note, which a period of one scrape makes untrue: its rule's window holds
that one scrape too). Checked with promtool over the fleet's series as Prometheus stores them and with the agent model.
A pod's count of GPUs is kept too: its rule counts the GPUs with a reading in the period that a scrape within the
look-back named the pod on (2 for ts-a at every instant, as its total reads it whole), where the alarm counts the GPUs
the period's one scrape named it on, and a pod that moved to another node inside the period is read at each node's
scrape apart by the alarm and counted on both by the rule."""

from __future__ import annotations

import pytest

import json

from generator.artifacts import build, notes as build_notes
from generator.cloudwatch_query import COUNT_MOST, COUNT_MOST_ONE_SCRAPE, NAMED_PART, NAMED_PART_ONE_SCRAPE, NAMED_SHARE
from generator.output import encode
from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import AGENT_FILE, alarm_values, alarms_through_agent
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.pods_in_turn import FLEET, FORMS, POWER, UTIL, breaching_labels
from tests.support.projects import defined_project
from tests.support.promtool_rules import alert_names, expected_alert, promtool_test

STEP = PERIOD = 60
STEPS = 30  # half an hour of 60 s scrapes
INSTANTS = [f"{seconds}s" for seconds in range(900, STEPS * STEP, 50)]
SETTINGS = "scrape:\n  interval: 60s\n"
TS_A = ("team-g", "ts-a")  # GPU 0 of its own (120 W), GPU 1 (160 W) named under it at odd scrapes
# {rule: {pipeline: the note its alarm keeps}}
JUDGED = {"sum-power-pod-gt-250": {"otel": NAMED_PART_ONE_SCRAPE, "classic": NAMED_SHARE},
          "count-power-pod-gt-1-5": {"otel": COUNT_MOST_ONE_SCRAPE, "classic": NAMED_SHARE}}
ONE_SCRAPE = [form for form in FORMS if form[0] in JUDGED]
STEADY = ONE_SCRAPE  # the rules reading ts-a whole (its total 280 W, its count 2)


def _definitions() -> str:
    return ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({rule!r}, 'T', Condition(Query({field!r}, {aggregation!r}, {by!r}), {comparison!r}, "
        f"{level}), period_seconds={PERIOD}, description='d', runbook='r')\n"
        for rule, field, aggregation, by, comparison, level in ONE_SCRAPE))


def _series() -> list[dict[str, str]]:
    stored = {}
    for node in FLEET:
        stored.update(mixed_fleet.stored(node, (f"{UTIL}{{", f"{POWER}{{"), STEPS, STEP))
    return [{"series": series, "values": " ".join(values)} for series, values in stored.items()]


def test_the_rule_reads_a_pod_named_in_turn_whole_at_one_scrape_per_period(tmp_path):
    """Every instant judged, a pod's total's and count's rules fire for the pods whose truth breaches (ts-a: 280 W of
    two GPUs), whichever pod the period's one scrape named on the shared GPU."""
    _, folder = built_with(tmp_path, {"turns.py": _definitions()}, fields=(UTIL, POWER), settings=SETTINGS)
    alerts = alert_names(folder)
    cases = [{"eval_time": instant, "alertname": alerts[rule],
              "exp_alerts": [expected_alert(folder, alerts[rule], **labels) for labels in breaching_labels(*form)]}
             for rule, *form in STEADY for instant in INSTANTS]
    assert all(any(labels.get("pod") == TS_A[1] for labels in breaching_labels(*form)) for _, *form in STEADY)
    promtool_test(folder, "one_scrape.yaml", [{"interval": f"{STEP}s", "input_series": _series(),
                                                "alert_rule_test": cases}], evaluation_interval="10s")


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_the_alarms_read_a_pod_named_in_turn_at_the_scrapes_naming_it_and_say_so(tmp_path, pipeline):
    """The alarm reads ts-a at its one scrape per period: 280 W and 2 GPUs where the scrape names it on GPU 1, 120 W
    and 1 GPU where not, so its twins are in ALARM for it at every other period (where the total's rule fires
    steadily); the descriptions keep their notes on a pod named in turn and on a pod's count of GPUs."""
    project = defined_project(tmp_path, SETTINGS + f"agent:\n  pipeline: {pipeline}\n", alarms=_definitions())
    requests, points = alarms_through_agent(project, STEP, STEPS * STEP, FLEET)
    for rule, notes in JUDGED.items():
        (request,) = [r for name, r in requests.items() if f"-{rule}-" in name and "-mig-" not in name]
        assert request["Metrics"][0]["Period"] == PERIOD
        values = [cloudwatch_eval.metrics_insights(request["Metrics"][0]["Expression"], points, end - PERIOD, end,
                                                   PERIOD) for end in range(1200, 1200 + 4 * PERIOD, PERIOD)]
        read = [[v for key, series in result.items() if dict(key).get("pod") == TS_A[1] for v in series.values()]
                for result in values]
        assert len({tuple(r) for r in read}) == 2, (rule, read)  # alternating with the scrape's naming
        if rule.startswith("sum-") and pipeline == "otel":  # NAMED_PART_ONE_SCRAPE's example: own + shared, own alone
            assert {tuple(r) for r in read} == {(280.0,), (120.0,)}, read
            assert NAMED_PART not in request["AlarmDescription"]  # its example (a share of the period: 200 W) is none
        if rule.startswith("count-") and pipeline == "otel":  # COUNT_MOST_ONE_SCRAPE's: 1 for 2 at alternate periods
            assert sorted(tuple(r) for r in read) == [(1.0,), (1.0,), (2.0,), (2.0,)], read
        states = {end: {state for key, state in cloudwatch_eval.alarm(request, points, end).items()
                        if dict(key).get("pod") == TS_A[1]} for end in range(1200, 1200 + 4 * PERIOD, PERIOD)}
        assert {frozenset(s) for s in states.values()} == {frozenset({"ALARM"}), frozenset({"OK"})}, (rule, states)
        assert notes[pipeline] in request["AlarmDescription"], (rule, request["AlarmDescription"])
        assert COUNT_MOST not in request["AlarmDescription"]  # its example is of several scrapes a period


def test_a_pod_that_moved_nodes_inside_a_one_scrape_period_counts_one_for_two_and_says_only_that(tmp_path):
    """Two exporters are scraped at their own phases: mover-0 leaves gpu-node-m1 (scraped on the minute) for
    gpu-node-m2 (scraped at half past), so the period [1560, 1620) holds a scrape of each naming it on one GPU. The
    agent counts each apart and the alarm reads 1, where the rule counts the GPU of both nodes with a reading in its
    one-minute window: COUNT_MOST_ONE_SCRAPE says so, without COUNT_MOST's example of GPUs named in turn, and lint
    AL025 lists the alarm with it."""
    from tests.unit.test_cloudwatch_pod_gpu_count import FROM, M, TO

    definitions = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
                   f"    yield Alarm('pod-gpus', 'T', Condition(Query({POWER!r}, 'count', ('pod',)), '>', 1.5), "
                   f"period_seconds={PERIOD}, description='d', runbook='r')\n")
    project = defined_project(tmp_path, SETTINGS + "agent:\n  pipeline: otel\n", alarms=definitions)
    files = encode(build(project, grafana=False))
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if "-pod-gpus-" in a["Request"]["AlarmName"]]
    assert COUNT_MOST_ONE_SCRAPE in request["AlarmDescription"] and COUNT_MOST not in request["AlarmDescription"]
    (said,) = [note for note in build_notes(project) if note.rule == "AL025"]
    assert COUNT_MOST_ONE_SCRAPE in said.message, said
    config, job = agent_config(files[AGENT_FILE])
    moved = 1590
    scrapes = sorted([Scrape(float(t), mixed_fleet.payload(FROM, t, STEP), target_labels(job, FROM.name))
                      for t in range(0, moved, STEP)] +
                     [Scrape(float(t), mixed_fleet.payload(TO, t, STEP), target_labels(job, TO.name))
                      for t in range(moved, 1800, STEP)], key=lambda scrape: scrape.timestamp)
    points = Agent(config, job).run(scrapes)
    read = {dict(key)["pod"]: value * request["Threshold"]
            for key, value in alarm_values(request, points, 1620, PERIOD).items()}
    assert read[M[1]] == 1.0  # the truth, and its rule's count: 2 (a GPU of each node read in the minute)


COUNTS = [(f"count-power-pod-{'gt' if comparison == '>' else 'lt'}-1-5", POWER, "count", ("pod",), comparison, 1.5)
          for comparison in (">", "<")]


@pytest.mark.parametrize("scrape,period", [(15, 60), (30, 60), (60, 60), (60, 120), (60, 300)])
def test_the_count_rule_counts_the_gpus_a_scrape_of_the_look_back_named_the_pod_on(tmp_path, scrape, period):
    """A pod's count of GPUs reads as its total does: each GPU a scrape within the per-pod look-back (four scrape
    intervals) named the pod on, whatever the scrape interval and the period. ts-a (GPU 0 of its own, GPU 1 named
    under it at odd scrapes) counts 2 at every instant: above 1.5, never below; the pods holding one GPU count 1. At
    one scrape per period the rule counted the GPUs the period's one scrape named the pod on: ts-a read 1 at every
    other period (16m40s, 18m20s, ...)."""
    definitions = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({rule!r}, 'T', Condition(Query({field!r}, {aggregation!r}, {by!r}), {comparison!r}, "
        f"{level}), period_seconds={period}, description='d', runbook='r')\n"
        for rule, field, aggregation, by, comparison, level in COUNTS))
    _, folder = built_with(tmp_path, {"counts.py": definitions}, fields=(UTIL, POWER),
                           settings=f"scrape:\n  interval: {scrape}s\n")
    alerts = alert_names(folder)
    steps = 1800 // scrape
    stored = {}
    for node in FLEET:
        stored.update(mixed_fleet.stored(node, (f"{UTIL}{{", f"{POWER}{{"), steps, scrape))
    series = [{"series": name, "values": " ".join(values)} for name, values in stored.items()]
    instants = [f"{seconds}s" for seconds in range(900 + period, steps * scrape, 50)]
    truth = {rule: breaching_labels(*form) for rule, *form in COUNTS}
    assert {"namespace": TS_A[0], "pod": TS_A[1]} in truth["count-power-pod-gt-1-5"]
    assert all(labels.get("pod") != TS_A[1] for labels in truth["count-power-pod-lt-1-5"])
    cases = [{"eval_time": instant, "alertname": alerts[rule],
              "exp_alerts": [expected_alert(folder, alerts[rule], **labels) for labels in truth[rule]]}
             for rule in truth for instant in instants]
    promtool_test(folder, "counts.yaml", [{"interval": f"{scrape}s", "input_series": series,
                                           "alert_rule_test": cases}], evaluation_interval="10s")

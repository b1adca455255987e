"""A rule of several periods judges, in both forms, the periods CloudWatch judges at each evaluation.

"Allocated GPU idle" with `thresholds.idle_minutes: 10` is 2 of 2 periods of 5 minutes: on CloudWatch the
pod's mean utilization in each of the two 5-minute periods that end at the evaluation (its sliding evaluation
window), both under 5%. A Prometheus rule that holds a 5-minute mean for 5 minutes (`for: 5m`) judges every
5-minute window of those 10 minutes instead, and a short burst that two periods split (each mean under 5%)
keeps any window holding all of it over 5%: the alarm fires, the rule does not. The rule judges each period
(`offset`) instead.

One fleet goes to both, at 30 s scrapes for 30 minutes: a pod whose two readings at 25% (600 s and 630 s) the
evaluation at 915 s splits over its two periods, and the same on a MIG instance (the rule's second alarm, on
graphics engine activity); a pod always idle; a pod always busy; a pod with one reading at 60% (its period's
mean 7.8%). CloudWatch's side goes through the model of the agent driven by the generated config into the
generated alarms; the Prometheus side is the same readings through `promtool test rules` on the generated
rules. Each is evaluated 15 s after a scrape (no reading on a period's edge). At each minute both name the
pods the periods say, and no other. A rule of 2 of 3 periods ("Pod's GPU bursts", a reading over 20% in a
period) is judged on the same fleet: the split burst breaches two periods at 915 s alone.
"""

from __future__ import annotations

import json
import math

import pytest

from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.mixed_fleet import Gpu, Instance, Node
from tests.support.promtool_rules import expected_alert, parsed_rules, promtool_test, shifted_later

STEP, STEPS = 30, 60  # thirty minutes of 30 s scrapes
PERIOD, PERIODS = 300, 2
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
SETTINGS = "thresholds:\n  idle_minutes: 10\n"
IDLE = 5.0  # idle_gpu_util_percent's default

# Each pod's utilization (%) at scrape k (k * 30 s); "split-mig" holds a MIG instance (its engine activity).
UTIL = {
    "split": lambda k: 25.0 if k in (20, 21) else 2.0,
    "split-mig": lambda k: 25.0 if k in (20, 21) else 2.0,
    "idle": lambda k: 2.0,
    "busy": lambda k: 50.0,
    "spike": lambda k: 60.0 if k == 30 else 2.0,
}
PODS = sorted(UTIL)


def _node(pod: str, k: int) -> Node:
    util = UTIL[pod](k)
    if pod.endswith("-mig"):
        gpu = Gpu(0, temp=50, power=100, sm_clock=1400, xid=0, energy_mw=100_000, replays_per_s=0, memory_temp=50,
                  instances=(Instance(fb_used=1000, fb_free=9000, engine=util / 100, pod=("team-a", pod), id="1",
                                      profile="1g.10gb"),))
    else:
        gpu = Gpu(0, temp=50, power=100, sm_clock=1400, xid=0, energy_mw=100_000, replays_per_s=0, memory_temp=50,
                  util=util, instances=(Instance(fb_used=1000, fb_free=20_000, engine=util / 100,
                                                 pod=("team-a", pod)),))
    return Node(f"node-{pod}", "Hostname", f"e-{pod}", (gpu,))


def truth(at: int) -> set[str]:
    """The pods whose mean utilization is under 5% in each of the two 5-minute periods that end at `at`."""
    return {pod for pod in PODS
            if all(sum(v) / len(v) < IDLE for v in ([UTIL[pod](k) for k in range(STEPS)
                                                     if at - (b + 1) * PERIOD < k * STEP <= at - b * PERIOD]
                                                    for b in range(PERIODS)))}


ENDS = range(600, STEPS * STEP, 60)
LATER = -(ENDS[0] + 15) % ENDS.step  # a multiple of the rules' 5 s step: each reading keeps its place on their grid

# M of N: a pod's GPU over 20% at some reading of 2 of the 3 periods that end at the evaluation.
BURSTS = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("pod-bursts", "Pod's GPU bursts", Condition(Query("DCGM_FI_DEV_GPU_UTIL", "max", ("pod",)), ">", 20),
                evaluation_periods=3, datapoints_to_alarm=2)
'''
BURST_LEVEL, BURST_PERIODS, BURST_NEEDED = 20.0, 3, 2


def burst_truth(at: int) -> set[str]:
    """The pods with a reading over 20% in at least 2 of the 3 five-minute periods that end at `at`."""
    return {pod for pod in PODS
            if sum(any(UTIL[pod](k) > BURST_LEVEL for k in range(STEPS)
                       if at - (b + 1) * PERIOD < k * STEP <= at - b * PERIOD)
                   for b in range(BURST_PERIODS)) >= BURST_NEEDED}


def test_the_burst_cases_are_told_apart():
    """The burst two periods split breaches two periods at 915 s alone; in one period it breaches one."""
    fired = {end: burst_truth(end + 15) for end in ENDS}
    assert fired[900] == {"busy", "split", "split-mig"}
    assert fired[840] == fired[960] == fired[1500] == {"busy"}  # the spike (60%) breaches one period at most


def test_the_cases_are_told_apart():
    """The burst that two periods split is idle at 915 s, then not until it leaves the window at 1,215 s; a window
    holding the whole burst reads 6.8%, so at 915 s some 5-minute window of the 10 minutes is not idle."""
    fired = {end: truth(end + 15) for end in ENDS}
    assert fired[900] == {"idle", "split", "split-mig"}
    assert fired[840] == {"idle", "spike"} and fired[960] == fired[1140] == {"idle"}
    assert fired[1200] == {"idle", "split", "split-mig"}
    assert "busy" not in set().union(*fired.values())
    assert "spike" not in fired[1440] and "spike" in fired[1500]  # the reading at 900 s: idle before and after
    assert (9 * 2 + 2 * 25) / 10 > IDLE > (9 * 2 + 25) / 10  # one window with the burst; each period's half


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("period-twins"), {"bursts.py": BURSTS}, settings=SETTINGS)


@pytest.mark.parametrize("rule, periods, needed, said", [("gpu-idle", PERIODS, PERIODS, truth),
                                                        ("pod-bursts", BURST_PERIODS, BURST_NEEDED, burst_truth)])
def test_cloudwatch_alarms_judge_each_period(built, rule, periods, needed, said):
    files, _ = built
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(float(k * STEP), mixed_fleet.payload(_node(pod, k), k * STEP),
                      target_labels(job, f"node-{pod}")) for k in range(STEPS) for pod in PODS]
    points = Agent(config, job).run(scrapes)
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if {"Key": "gpudash:rule", "Value": rule} in a["Request"]["Tags"]]
    assert len(requests) == 2  # whole GPUs and MIG instances
    assert {(r["EvaluationPeriods"], r["DatapointsToAlarm"], r["Metrics"][0]["Period"]) for r in requests} == \
        {(periods, needed, PERIOD)}
    for end in ENDS:
        fired = {dict(key)["PodName"] if "PodName" in dict(key) else dict(key)["pod"]
                 for request in requests
                 for key, state in cloudwatch_eval.alarm(request, points, end + 15).items() if state == "ALARM"}
        assert fired == said(end + 15), (rule, end)


def _stored(metric: str) -> list[dict[str, str]]:
    """Each series of `metric` as the generated scrape job stores it (it attaches `node`)."""
    values: dict[str, list[str]] = {}
    for k in range(STEPS):
        for pod in PODS:
            for series, value in [line.rsplit(" ", 1) for line in
                                  mixed_fleet.payload(_node(pod, k), k * STEP).splitlines()
                                  if line.startswith(metric + "{")]:
                values.setdefault(f'{series[:-1]},node="node-{pod}"}}', []).append(value)
    return [{"series": series, "values": " ".join(v)} for series, v in values.items()]


def _idle_labels(pod: str) -> dict[str, str]:
    """The idle alert's labels beside the pod's: its GPU, and on a MIG instance the instance (each judged apart)."""
    return {"gpu": "0", **({"GPU_I_ID": "1", "GPU_I_PROFILE": "1g.10gb"} if pod.endswith("-mig") else {})}


@pytest.mark.parametrize("rule_id, said", [("gpu-idle", truth), ("pod-bursts", burst_truth)])
def test_prometheus_rule_judges_each_period(built, rule_id, said):
    _, folder = built
    groups = parsed_rules((folder / "rules.yaml").read_text())["groups"]
    (rule,) = [r for g in groups for r in g["rules"] if r["labels"]["gpudash_rule"] == rule_id and "alert" in r]
    # the story moved 45 s later, so that its judged times (15 s after a scrape, a minute apart) fall on promtool's
    # evaluations once a minute instead of one in four every 15 s (promtool_rules.shifted_later)
    checks = [{"eval_time": f"{end + 15 + LATER}s", "alertname": rule["alert"],
               "exp_alerts": [expected_alert(folder, rule["alert"], namespace="team-a", pod=pod,
                                        **(_idle_labels(pod) if rule_id == "gpu-idle" else {}))  # per GPU of the pod
                              for pod in sorted(said(end + 15))]} for end in ENDS]
    series = [shifted_later(s, STEP, LATER)
              for s in _stored("DCGM_FI_DEV_GPU_UTIL") + _stored("DCGM_FI_PROF_GR_ENGINE_ACTIVE")]
    promtool_test(folder, f"{rule_id}_twins.yaml", [{"interval": f"{math.gcd(STEP, LATER)}s", "input_series": series,
                                                      "alert_rule_test": checks}], evaluation_interval="15s")
    assert "for" not in rule  # the periods are judged at once: a rule that held its condition would miss 915 s

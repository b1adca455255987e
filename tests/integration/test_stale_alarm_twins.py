"""A GPU (or a pod's GPU) in ALARM whose data stops for good: its exporter, node or pod gone.

A CloudWatch alarm retrieves more periods than its EvaluationPeriods (its evaluation range) and judges the most recent
real datapoints it finds there, whatever TreatMissingData says (user guide, "How alarm state is evaluated when data is
missing"; tests/support/cloudwatch_eval.py): its contributor stays in ALARM after the data stopped, for as long as its
last breaching datapoints are in the range. AWS publishes one length of the range, its example's (two periods more
than EvaluationPeriods): the rule judges that length, so both forms fire until the range holds too few readings and
both clear then (15 minutes after the last reading, for every default gauge alarm); at a longer range the alarm
stays in ALARM longer. No expression can change that for a GROUP BY alarm (CloudWatch allows no math on its query, so
no FILL per contributor), and no rule can follow a range whose length is unpublished: it is a stated limit (each
alarm's description, docs/alarms.md, "The evaluation range"), pinned here for each health rule whose alarm judges a GPU
or a pod's GPU, minute by minute after the stop: at the example's length in ALARM exactly while the rule fires, at
some longer plausible length still in ALARM after it cleared, and bounded, no length in ALARM once the range's
longest plausible length (EvaluationPeriods + cloudwatch_eval.EXTRA_PERIODS periods) holds no datapoint. The
data-missing alarm pages for the stop (test_data_missing.py).
"""

from __future__ import annotations

import re

import json
from dataclasses import dataclass
from typing import Callable

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.integration.test_gauge_twins import OLD, STEP, Source
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.promtool_rules import expected_alert, promtool_test, rule_groups, value_text

STOP = 2400  # the last scrape answers at t = 2370 s (minute 39.5); nothing after
LAST_MINUTE = 100
NODE = "ip-10-0-1-1"
CLEARS = STOP // 60 + 15  # the first minute whose latest three 5-minute periods hold no reading


@dataclass(frozen=True)
class Case:
    rule: str
    metric: str
    kind: str  # gauge or counter
    reading: Callable[[int], float]  # scrape k's reading (k * STEP < STOP)
    per_pod: bool  # the alarm's contributors are pods (namespace, pod), else GPUs (node, gpu)
    also: tuple[str, ...] = ()  # other rules its readings fire (90 °C is high too)


CASES = {
    "temp-critical": Case("gpu-temp-critical", "DCGM_FI_DEV_GPU_TEMP", "gauge", lambda k: 90.0, False,
                          also=("gpu-temp-high",)),
    "temp-high": Case("gpu-temp-high", "DCGM_FI_DEV_GPU_TEMP", "gauge", lambda k: 85.0, False),
    "xid-error": Case("xid-error", "DCGM_FI_DEV_XID_ERRORS", "gauge", lambda k: 43.0 if k >= 6 else 0.0, False),
    "row-remap-failure": Case("row-remap-failure", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", lambda k: 1.0, False),
    "pcie-replays": Case("pcie-replays", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", lambda k: 20.0 * k, False),
    "framebuffer-full": Case("framebuffer-full", "DCGM_FI_DEV_FB_FREE", "gauge", lambda k: 500.0, True),
    "gpu-idle": Case("gpu-idle", "DCGM_FI_DEV_GPU_UTIL", "gauge", lambda k: 0.0, True),
}


@pytest.fixture(scope="module")
def files():
    return encode(build(load_project()))


def _request(files, case: Case) -> dict:
    return next(a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if {"Key": "gpudash:rule", "Value": case.rule} in a["Request"]["Tags"]
                and case.metric in json.dumps(a["Request"]["Metrics"]))


def _points(files, case: Case) -> list:
    """What the agent publishes of the GPU's scrapes until the stop (the generated agent configuration)."""
    config, job = agent_config(files[next(f for f in files if f.startswith("k8s/cwagent-prometheus-config"))])
    source = Source(("ip-10-0-1-1", OLD[1]))
    target = target_labels(job, NODE)
    target.update({key: value for key, value in (("exporter_pod", source.exporter[0]),
                                                  ("instance", source.exporter[1])) if key in target})
    scrapes = [Scrape(float(k * STEP), f"# TYPE {case.metric} {case.kind}\n"
                                       f"{case.metric}{{{source.labels()}}} {value_text(case.reading(k))}\n", target)
               for k in range(STOP // STEP)]
    return Agent(config, job).run(scrapes)


def _states(request: dict, points: list, contributor: dict) -> dict[int, dict[int, str]]:
    """{minute: {each plausible length of the evaluation range: the contributor's state}} ("none" at every length:
    the alarm returns no such contributor)."""
    result = {}
    for minute in range(STOP // 60 - 1, LAST_MINUTE + 1):
        ranges = cloudwatch_eval.alarm_ranges(request, points, minute * 60 + 1)
        found = [judged for key, judged in ranges.items() if dict(key) == contributor]
        result[minute] = found[0] if found else dict.fromkeys(next(iter(ranges.values())), "none")
    return result


_STATES: dict[str, dict[int, dict[int, str]]] = {}


def _case_states(files, name: str) -> dict[int, dict[int, str]]:
    """_states of a case's alarm, its GPU's (or pod's GPU's) contributor, worked out once."""
    if name not in _STATES:
        case = CASES[name]
        contributor = {"namespace": "ml", "pod": "a"} if case.per_pod else {"node": NODE, "gpu": "0"}
        if case.rule == "gpu-idle":  # judged per GPU of the pod
            contributor["gpu"] = "0"
        _STATES[name] = _states(_request(files, case), _points(files, case), contributor)
    return _STATES[name]


def _alarm_minutes(files, name: str) -> list[int]:
    """The minutes at which a case's alarm is in ALARM over the user guide's example range."""
    example = cloudwatch_eval.example_range(_request(files, CASES[name]))
    return [m for m, s in _case_states(files, name).items() if s[example] == "ALARM"]


COPIES = 9  # copies of the cases judged in one promtool run: 18 exceed promtool's limit of samples a query, 9 do not
# of the labels a join may keep apart (promtool_rules.STORY_OWN), those each copy has its own value of (_rule_clears'
# copy): every copy's series name one exporter target (instance), so a join on it alone matches every copy's
OWN = ("namespace", "node", "UUID")


def _rule_clears(files, tmp_path) -> dict[str, int]:
    """{case: the first minute after the stop at which its rule no longer fires}: every case's GPU under its own node
    (and pod), judged at every minute from the stop to two after CLEARS: a gauge's alert expected while the example's
    range holds its last readings, a counter's where its alarm is in ALARM over that range (a period holding a few of
    the last scrapes' deltas may not breach: judged as CloudWatch judges it). Each minute is judged through a copy of
    the cases of its own (its nodes, namespaces and GPUs marked with the minute), moved later by whole minutes so that
    every copy is judged at the last minute: promtool evaluates the rules at 0 and there alone, where one file per
    minute (evaluation_plans) evaluated them twice per minute, parsing the rules each time (18 files: 5.8 s of CPU; 2
    runs of COPIES copies: 0.9 s). The rules join no copy's series with another's (checked); a run over promtool's
    sample limit is halved (tests/support/promtool_batches)."""
    from tests.support.promtool_batches import batch_failure
    from tests.support.promtool_rules import alert_rule, judged_apart

    (tmp_path / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    alerts = {r["labels"]["gpudash_rule"]: r["alert"] for g in rule_groups(files["prometheus/rules.yaml"].decode())
              for r in g["rules"] if "alert" in r}
    judged = dict.fromkeys(alerts[c.rule] for c in CASES.values())
    assert all(judged_apart(alert_rule(tmp_path, alert)["expr"], OWN) for alert in judged)
    # the latest three periods hold no reading (a counter's increase too: its period without a reading of its own
    # has no value, as CloudWatch's has no delta, render.alarms.range_judged)
    firing = {n: _alarm_minutes(files, n) if c.kind == "counter" else list(range(STOP // 60 - 1, CLEARS))
              for n, c in CASES.items()}
    minutes = list(range(STOP // 60 - 1, CLEARS + 2))

    def copy(i: int, minute: int) -> tuple[str, dict[str, str]]:
        """Case i's series labels in the copy judging `minute`, and its alert's labels: each case's GPU its own (a
        GPU is one GPU by its UUID, whatever node names it), in each copy."""
        case, mark = list(CASES.values())[i], f"{i}-m{minute}"
        source = Source(("ip-10-0-1-1", OLD[1]), pod=f"p{i}")
        text = re.sub(r'UUID="([^"]*)"', rf'UUID="\1-n{mark}"',
                      source.labels().replace('namespace="ml"', f'namespace="ml{mark}"'))
        labels = {"namespace": f"ml{mark}", "pod": f"p{i}"} if case.per_pod else {"node": f"n{mark}", "gpu": "0"}
        if case.rule == "gpu-idle":  # judged per GPU of the pod
            labels["gpu"] = "0"
        return f'{case.metric}{{{text},node="n{mark}",instance="{OLD[1]}"}}', labels

    def judge(part: list[int]) -> None:
        last = max(part)  # the copy of each minute moved later by `last` less it: judged at `last`
        series = [{"series": copy(i, minute)[0],
                   "values": " ".join(["_"] * ((last - minute) * 60 // STEP)
                                      + [value_text(case.reading(k)) for k in range(STOP // STEP)])}
                  for minute in part for i, case in enumerate(CASES.values())]
        cases = [{"eval_time": f"{last}m", "alertname": alert,
                  "exp_alerts": [expected_alert(tmp_path, alert, **copy(i, minute)[1]) for minute in part
                                 for i, (n, c) in enumerate(CASES.items())
                                 if alert in {alerts[r] for r in (c.rule, *c.also)} and minute in firing[n]]}
                 for alert in judged]
        promtool_test(tmp_path, f"stale-{part[0]}.yaml", [{"interval": f"{STEP}s", "input_series": series,
                                                           "alert_rule_test": cases}], evaluation_interval="1m")

    failures = [batch_failure(minutes[k:k + COPIES], judge) for k in range(0, len(minutes), COPIES)]
    assert failures == [None] * len(failures), failures
    return {n: max(firing[n]) + 1 for n in CASES}


def test_each_rule_clears_once_its_three_latest_periods_hold_no_reading(files, tmp_path):
    """The twin's side: each rule fires before the stop, still 5 and 14 minutes after it (older periods are judged,
    as the example's evaluation range of N + 2 periods judges them), and no longer once its latest three 5-minute
    periods hold no reading (15 minutes after the last reading: rule_clears in the alarms' descriptions)."""
    assert _rule_clears(files, tmp_path)


@pytest.mark.parametrize("name", CASES)
def test_a_stopped_gpus_alarm_stays_in_alarm_while_its_last_datapoints_are_in_the_evaluation_range(files, name):
    case = CASES[name]
    request = _request(files, case)
    states = _case_states(files, name)
    period = request["Metrics"][0]["Period"]
    assert set(states[STOP // 60 - 1].values()) == {"ALARM"}, states  # firing before the stop
    # at the example's length, ALARM while the rule fires (test_each_rule_clears_once_its_three_latest_periods_hold_
    # no_reading: a gauge's to CLEARS, a counter's as this alarm is, by minute) and not after CLEARS; after that, ALARM
    # at some longer plausible length for at least a minute (the stated limit)
    minutes = _alarm_minutes(files, name)
    assert minutes[:5] == list(range(STOP // 60 - 1, STOP // 60 + 4)) and max(minutes) < CLEARS, states
    if case.kind != "counter":
        assert minutes == list(range(STOP // 60 - 1, CLEARS)), states
    stale = [m for m, s in states.items() if m >= CLEARS and "ALARM" in s.values()]
    assert stale, states
    assert f"clears {(CLEARS * 60 - STOP + STEP) // 60} minutes after the last reading" in request["AlarmDescription"]
    # and bounded: once the longest plausible range holds no datapoint, no length is in ALARM
    bound = STOP // 60 + (request["EvaluationPeriods"] + cloudwatch_eval.EXTRA_PERIODS) * period // 60 + 1
    assert all("ALARM" not in s.values() for m, s in states.items() if m >= bound), states
    # the description says so
    assert "evaluation range" in request["AlarmDescription"], request["AlarmDescription"]

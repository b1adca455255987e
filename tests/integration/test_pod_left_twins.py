"""A pod that left a GPU its exporter still reports: when a per-pod rule and its CloudWatch alarm stop, and that the
alarm's description says it.

old-0 holds GPU 0 (250 W) until the scrape at LAST_NAMED; from the next scrape the exporter names new-0 on it. A per-pod
rule of gauges reads each pod a scrape within the per-pod look-back (four scrape intervals) named on a GPU: that is
what reads a pod the exporter names in turn with others on a GPU they share at every step
(test_pod_named_in_turn_rules.py), and at an instant a pod that left within the look-back reads the same as one whose
next naming is due. So the rule keeps old-0's periods for up to the look-back after its last naming and, judged over
CloudWatch's evaluation range (the example's: its period and two more), clears up to that much after its alarm, whose
datapoints of old-0 are those of the scrapes that named it (the agent's totals per pod are made per scrape). The rule
stays (the look-back is what reads a pod named in turn whole); each such alarm's description says both figures: the
rule clears 15 minutes after the last reading, and for a pod that left a GPU still reported, up to the look-back after
the alarm. Both sides are checked against the description's figures: promtool over the series as Prometheus stores
them (old-0's marked stale at the scrape that no longer names it), the alarm through the agent model of the build's
own agent configuration. A count reads the pods its total, mean, largest and smallest read, at the same steps: at
each of the rule's 5 s steps with a reading of the GPU, the pods named within the look-back before that step.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval
from tests.support.agent_points import AGENT_FILE
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.promtool_rules import alert_names, alert_rule, expected_alert, judged_apart, promtool_test

UTIL, POWER = "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"
NODE, NAMESPACE = "gpu-node-1", "team-l"
LEFT = 20  # the first scrape naming new-0 in old-0's place
# (rule, aggregation, grouping, comparison, level): each fires for a pod holding the GPU at 250 W
FORMS = [(f"{aggregation}-power-{'-'.join(by)}", aggregation, by, comparison, level)
         for by in (("pod",), ("pod", "gpu"))
         for aggregation, comparison, level in (("count", ">", 0.5), ("sum", ">", 200), ("avg", ">", 200),
                                                ("max", ">", 200), ("min", ">", 200))]
CLEARS = re.compile(r"clears (\d+) minutes after the last reading.*?pod that left a GPU (?:its exporter )?still "
                    r"report\w*.*? up to (\d+) s after the alarm")


def _definitions() -> str:
    return ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({rule!r}, 'T', Condition(Query({POWER!r}, {aggregation!r}, {by!r}), {comparison!r}, "
        f"{level}), description='d', runbook='r')\n" for rule, aggregation, by, comparison, level in FORMS))


def _pod(k: int) -> str:
    return "old-0" if k < LEFT else "new-0"


def _alarm_states(files, rule: str, step: int, phase: int, instants: list[int], moved: str = NAMESPACE,
                  who: tuple[str, str] = ("pod", "old-0")) -> list[int]:
    """The instants at which the CloudWatch alarm of `rule` is in ALARM for old-0 (`who`: the contributor's label and
    value) over the example's evaluation range, the GPU's scrapes (at `phase` + k x `step` s; new-0 in namespace
    `moved`) through the agent model of the build's agent configuration."""
    config, job = agent_config(files[AGENT_FILE])
    target = target_labels(job, NODE)
    scrapes = [Scrape(float(phase + k * step), f"# TYPE {POWER} gauge\n{POWER}{{gpu=\"0\",UUID=\"GPU-left-0\","
                                               f"device=\"nvidia0\",modelName=\"NVIDIA A10G\",Hostname=\"{NODE}\","
                                               f"DCGM_FI_DRIVER_VERSION=\"535.104.05\",container=\"main\","
                                               f"namespace=\"{NAMESPACE if k < LEFT else moved}\","
                                               f"pod=\"{_pod(k)}\"}} 250\n", target)
               for k in range(-2, instants[-1] // step + 1)]
    points = Agent(config, job).run(scrapes)
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if {"Key": "gpudash:rule", "Value": rule} in a["Request"]["Tags"]]
    length = cloudwatch_eval.example_range(request)
    return [t for t in instants for key, judged in cloudwatch_eval.alarm_ranges(request, points, t).items()
            if dict(key).get(who[0]) == who[1] and judged[length] == "ALARM"]


def _stored(pod: str, step: int, phase: int, end: int) -> str:
    """`pod`'s series of the GPU's power as Prometheus stores it, on promtool's 1 s grid: a sample at each scrape
    naming it (phase + k x step s), a staleness marker at the first scrape that does not."""
    values = ["_"] * end
    for k in range((end - phase) // step + 1):
        if phase + k * step < end and (_pod(k) == pod or (pod == "old-0" and k == LEFT)):
            values[phase + k * step] = "250" if _pod(k) == pod else "stale"
    text, run = [], 0
    for value in [*values, None]:
        if value == "_":
            run += 1
            continue
        if run:
            text.append(f"_x{run}")
            run = 0
        if value is not None:
            text.append(value)
    return " ".join(text)


STORIES = [(30, 0), (15, 0), (30, 2)]  # (scrape interval, phase: the first scrape's second)


def _lookback_read(step: int, phase: int, lookback: int) -> int:
    """The last of the rule's steps (every 5 s) reading a scrape that a step within the look-back after the last
    naming holds: a sample counts at the first step at or after it."""
    last_named, rule_step = phase + (LEFT - 1) * step, min(5, step)
    return max(-(-(phase + k * step) // rule_step) * rule_step for k in range(LEFT, LEFT + 8)
               if -(-(phase + k * step) // rule_step) * rule_step <= last_named + lookback)


def _instants(step: int, phase: int, clears: int, lookback: int) -> list[int]:
    """Every 5 s from before the alarm clears to after the rule does."""
    last_named = phase + (LEFT - 1) * step
    return list(range(last_named + clears - 40 - last_named % 5, last_named + clears + lookback + 50, 5))


_RULE_VERDICTS: dict[int, str | None] = {}  # scrape interval -> promtool's failure judging its stories, or None


def _rule_verdict(tmp_path_factory, step: int, clears: int, lookback: int) -> str | None:
    """promtool's failure judging every form's rule on the stories of the scrape interval `step` (its phases: one
    build, one set of rules) at once, or None. Each phase's story is judged at the instants of its own and of the
    others with its own truth: old-0 until the look-back's last step after its last naming and the rule's 15 minutes,
    new-0 throughout; at each instant through a copy of its own (_copy: its own namespace, node and GPU), moved later
    so that every copy is judged at one instant. promtool evaluates the forms' rules at 0 and at that instant alone,
    where one file per instant (evaluation_plans) evaluated them twice per instant, the costs that do not depend on
    the series included (7.4 s of CPU for the 30 s and 15 s stories' 72 instants; 2.2 s as copies). The rules join no
    copy's series with another's (checked); a run over promtool's sample limit is halved
    (tests/support/promtool_batches: the 30 s stories' 86 copies are judged in two runs)."""
    from tests.support.promtool_batches import batch_failure

    if step not in _RULE_VERDICTS:
        _, folder = built_with(tmp_path_factory.mktemp("left"), {"left.py": _definitions()}, fields=(UTIL, POWER),
                               settings=f"scrape:\n  interval: {step}s\n")
        alerts = alert_names(folder)
        assert all(judged_apart(alert_rule(folder, alerts[rule])["expr"]) for rule, *_ in FORMS)
        phases = [phase for s, phase in STORIES if s == step]
        instants = sorted({t for phase in phases for t in _instants(step, phase, clears, lookback)})

        def judge(part: list[tuple[int, int]]) -> None:
            at = max(t for _, t in part)  # each copy (phase, instant) moved later by at - instant: judged at `at`
            cases = [{"eval_time": f"{at}s", "alertname": alerts[rule],
                      "exp_alerts": [expected_alert(folder, alerts[rule], namespace=NAMESPACE + _copy(phase, t),
                                                    pod=pod, **({"gpu": "0"} if "gpu" in by else {}))
                                     for phase, t in part for pod in ("old-0", "new-0")
                                     if pod == "new-0" or t <= _lookback_read(step, phase, lookback) + clears]}
                     for rule, aggregation, by, _, _ in FORMS]
            series = []
            for i, (phase, t) in enumerate(part):
                mark = _copy(phase, t)
                labels = (f'gpu="0",UUID="GPU-left{mark}",hostname="{NODE}{mark}",container="main",'
                          f'namespace="{NAMESPACE}{mark}",instance="10.1.{i}.1:9400",job="gpu-metrics",'
                          f'node="{NODE}{mark}"')
                series += [{"series": f'{POWER}{{{labels},pod="{pod}"}}',
                            "values": _stored(pod, step, phase + at - t, at + 1)} for pod in ("old-0", "new-0")]
            promtool_test(folder, f"left-{part[0][0]}-{part[0][1]}.yaml", [{
                "interval": "1s", "input_series": series, "alert_rule_test": cases}], evaluation_interval="5s")

        _RULE_VERDICTS[step] = batch_failure([(phase, t) for phase in phases for t in instants], judge)
    return _RULE_VERDICTS[step]


@pytest.mark.parametrize("step, phase", STORIES, ids=["30s", "15s", "30s-off-the-rule-steps"])
def test_a_pod_that_left_a_gpu_clears_the_rule_up_to_the_look_back_after_its_alarm_as_the_description_says(
        tmp_path, tmp_path_factory, step, phase):
    """Each form's description names when its rule clears (15 minutes after the last reading) and by how much more at
    most for a pod that left a GPU still reported (the look-back: 120 s at 30 s scrapes, 60 s at 15 s). The alarm is
    in ALARM for old-0 until 15 minutes after its last naming; the rule fires for it longer, never past the look-back
    after that, and for new-0 throughout: every statistic, a count too, until the last of the rule's 5 s steps with a
    reading within the look-back after the last naming (the look-back's end where the scrapes fall on those steps;
    with the scrapes 2 s past them, the scrape at the look-back's end is read at a step past it: 93 s at 30 s
    scrapes). (A count read the pods named within its period and the look-back before it, to the look-back's end: 27 s
    after the others at 30 s scrapes 2 s past the rule's steps. The description said the rule clears as the alarm
    does: up to 120 s apart, said nowhere.) The rule is judged for the phases of one scrape interval together
    (_rule_verdict): a phase's wrong alert fails each of their tests, promtool's message naming its namespace, whose
    mark names the phase and the instant (team-l-p2-t1475: phase 2 at 1475 s)."""
    files, folder = built_with(tmp_path, {"left.py": _definitions()}, fields=(UTIL, POWER),
                               settings=f"scrape:\n  interval: {step}s\n")
    last_named = phase + (LEFT - 1) * step
    descriptions = {a["Request"]["AlarmDescription"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                    if any(t["Value"] in {f[0] for f in FORMS} for t in a["Request"]["Tags"])}
    said = {CLEARS.search(d).groups() if CLEARS.search(d) else d for d in descriptions}
    assert len(said) == 1, said
    (minutes, lookback), = said
    clears, lookback = int(minutes) * 60, int(lookback)
    assert lookback == 4 * step
    read = _lookback_read(step, phase, lookback)
    assert (read - last_named == lookback) == (phase == 0)
    failure = _rule_verdict(tmp_path_factory, step, clears, lookback)
    assert failure is None, failure
    instants = _instants(step, phase, clears, lookback)
    for rule, *_ in FORMS:
        assert _alarm_states(files, rule, step, phase, instants) == [t for t in instants
                                                                     if t <= last_named + clears], rule


PER_SCRAPE = re.compile(r"can leave (?:it early|ALARM from a scrape after).*?for good up to (\d+) minutes before the "
                        r"rule clears(?: \(|, at )(\d+) minutes")
NAMESPACES = [(f"{aggregation}-power-namespace", aggregation, ("namespace",), ">", 200)
              for aggregation in ("sum", "avg")]
LOW_SAID = ("a pod whose data stops can be in ALARM after, its last periods read in part (low), where the rule does "
            "not fire")
LOW = [("low-sum-power-pod", "sum", ("pod",), "<", 240)]  # never fires for a pod at 250 W
COPIES = 6  # copies of the story judging the rule at the instants, each at one COPIES-th of them


@pytest.mark.parametrize("pipeline", ["classic", "otel"])
def test_a_count_or_sum_per_scrape_leaves_alarm_up_to_a_period_before_its_rule_as_the_description_says(
        tmp_path, pipeline):
    """A count or sum CloudWatch reads over the scrapes its period holds (agent.pipeline: classic per pod; a
    namespace's sum on both pipelines) reads at most evaluations a latest period that ends after old-0's last
    reading, and only the part of it old-0 had data for (the evaluation window slides with each evaluation): at
    250 W for a level of 200 W, 30 s scrapes and 5-minute periods, the sum alarm leaves ALARM 70 s after the last
    naming, is in ALARM again at 310-370 s and 610-670 s, out for good from 670 s; a count (above 5 of 10 scrapes)
    leaves it at 160 s, is in it again at 310-460 s and 610-760 s, out for good from 760 s; the rule, which keeps
    old-0 (and team-l, whose only pod it was: new-0 runs in team-n) for the look-back, 1,020 s. Their
    descriptions say so (they said the rule clears 15 minutes after the last reading as the alarm does, and a
    namespace's alarm said nothing of the look-back); a namespace's mean (what arrived) stays in ALARM until 15
    minutes after the last naming, the rule up to the look-back after, as the per-pod forms. Below a level the part
    read is read low: a pod's sum below 240 W, which its rule never calls at 250 W, is in ALARM from 40 s after the
    last naming to 900 s, as its description says it can be."""
    step, phase, moved = 30, 0, "team-n"
    forms = [*(FORMS + LOW if pipeline == "classic" else []), *NAMESPACES]
    definitions = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({rule!r}, 'T', Condition(Query({POWER!r}, {aggregation!r}, {by!r}), {comparison!r}, "
        f"{level}), description='d', runbook='r')\n" for rule, aggregation, by, comparison, level in forms)
    files, folder = built_with(tmp_path, {"left.py": definitions}, fields=(UTIL, POWER),
                               settings=f"agent:\n  pipeline: {pipeline}\n")
    last_named = phase + (LEFT - 1) * step
    lookback, clears, period = 4 * step, 900, 300
    requests = {next(t["Value"] for t in a["Request"]["Tags"] if t["Key"] == "gpudash:rule"): a["Request"]
                for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    per_scrape = {rule for rule, aggregation, *_ in forms
                  if aggregation in ("count", "sum") and (pipeline == "classic" or rule.endswith("-namespace"))}
    assert per_scrape
    instants = list(range(last_named - 30, last_named + clears + lookback + 50, 10))
    alerts = alert_names(folder)
    for rule, aggregation, by, comparison, _ in forms:
        who = ("namespace", NAMESPACE) if by == ("namespace",) else ("pod", "old-0")
        description = requests[rule]["AlarmDescription"]
        states = _alarm_states(files, rule, step, phase, instants, moved, who)
        assert f"a {who[0]} whose data stops" in description, description  # its contributor (a namespace: not a GPU)
        if rule in per_scrape and comparison == "<":  # its last periods read low: it fires, the rule never
            assert LOW_SAID in description, description
            assert last_named + step < min(states) < last_named + period and max(states) == last_named + clears, states
            assert len(states) > (clears - period) // 10, states
        elif rule in per_scrape:
            assert PER_SCRAPE.search(description).groups() == ("5", "15"), description
            out = [t for t in instants if t not in states]
            assert last_named in states and min(out) - last_named == {"sum": 70, "count": 160}[aggregation], states
            assert any(t in states for t in range(min(out), last_named + clears, 10)), (rule, states)
            assert last_named + clears - period <= max(states) <= last_named + clears, (rule, states)
            assert max(states) - last_named == {"sum": 660, "count": 750}[aggregation], (rule, states)
        else:
            assert CLEARS.search(description).groups() == ("15", "120"), description
            assert states == [t for t in instants if t <= last_named + clears], rule

    def fired(rule: str, t: int, mark: str) -> list[dict]:
        """The rule's alerts at the story's instant `t`, its namespaces marked `mark`: old-0 (team-l) until the
        look-back after its last naming and 15 minutes, new-0 (team-n) from its first; none below a level."""
        _, _, by, comparison, _ = next(form for form in forms if form[0] == rule)
        if comparison == "<":
            return []
        pod = by != ("namespace",)
        return [expected_alert(folder, alerts[rule], namespace=namespace + mark, **({"pod": who} if pod else {}),
                               **({"gpu": "0"} if "gpu" in by else {}))
                for namespace, who, fires in ((NAMESPACE, "old-0", t <= last_named + lookback + clears),
                                              (moved, "new-0", t >= last_named + step)) if fires]

    # The rule judged at every instant through COPIES copies of the story, each under its own marks (namespaces, node,
    # GPU, target: the forms join no copy's series with another's, checked), copy j at every COPIES-th instant from
    # its j-th, moved later onto a grid COPIES instants apart (each move a multiple of the rules' 5 s step; the rules
    # read no absolute time): promtool evaluates the rules at each point of that grid from 0 instead of at each
    # instant (13 rules, 4.6 ms an evaluation each with the story's 2 series, 3.2 of it with none: 9.9 s of CPU at
    # 165 evaluations). At a grid point a copy read before the first instant or after the last (up to a grid apart) is
    # judged by the same truth: old-0 has been read at 250 W since the first scrape, new-0 is read to the last point.
    assert all(judged_apart(alert_rule(folder, alerts[rule])["expr"]) for rule, *_ in forms)
    grid = (instants[1] - instants[0]) * COPIES
    shifts = [-instants[j] % grid for j in range(COPIES)]
    points = sorted({t + shifts[i % COPIES] for i, t in enumerate(instants)})
    assert points == list(range(points[0], points[-1] + 1, grid)) and all(s % 5 == 0 for s in shifts)
    cases = [{"eval_time": f"{at}s", "alertname": alerts[rule],
              "exp_alerts": [alert for j, shift in enumerate(shifts) for alert in fired(rule, at - shift, _mark(j))]}
             for rule, *_ in forms for at in points]
    series = [{"series": f'{POWER}{{gpu="0",UUID="GPU-left-0{_mark(j)}",hostname="{NODE}{_mark(j)}",container="main",'
                         f'namespace="{(NAMESPACE if pod == "old-0" else moved) + _mark(j)}",'
                         f'instance="10.0.1.{j + 1}:9400",job="gpu-metrics",node="{NODE}{_mark(j)}",pod="{pod}"}}',
               "values": _stored(pod, step, phase + shift, points[-1] + 1)}
              for j, shift in enumerate(shifts) for pod in ("old-0", "new-0")]
    promtool_test(folder, "left.yaml", [{"interval": "1s", "input_series": series, "alert_rule_test": cases}],
                   evaluation_interval="5s")


def _copy(phase: int, t: int) -> str:
    """The marks of the copy of phase's story judged at its instant t (its namespace, node and GPU's)."""
    return f"-p{phase}-t{t}"


def _mark(j: int) -> str:
    """Copy j's mark on its namespaces, node and GPU (the first copy unmarked)."""
    return f"-c{j}" if j else ""

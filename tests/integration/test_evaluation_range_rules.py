"""Each rule judges its periods as CloudWatch's alarm judges its evaluation range, for every pattern of periods.

A CloudWatch alarm retrieves more periods than its EvaluationPeriods N (its evaluation range) and judges the most
recent real datapoints there; with fewer than N it treats the missing ones as its TreatMissingData says, and with
`missing` it may alarm early (tests/support/cloudwatch_eval.judge). AWS publishes one length, its example's: N + 2
(cloudwatch_eval.EXAMPLE_EXTRA_PERIODS), which the rules model. Here every pattern of N + 2 periods, each without a
reading, with one under the threshold or with one over it, is one GPU; the rule (run by promtool) fires for a GPU
exactly where the alarm is in ALARM over that range. The alarm is judged by the evaluator's `judge`; the rule is
the generated one, of the default alarms (1 of 1 period, 2 of 2 with `missing`, 1 of 1 `notBreaching`) and of
variants of the temperature rule (2 of 3 and 3 of 3, each missing data treatment the rules judge so; 4 of 6 with
`missing`, a sample of its patterns). How many patterns a range of N + 1 periods (the rules' former length) judges
otherwise is counted. The counter rules (a period's value its increase, none without a reading of its own) are
checked the same way, as shipped and as a user's M of N. Each rule is run as generated: where it reads a period more
than once, its recording rule (each period's statistic once) and the alert reading it back.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
from dataclasses import replace

import pytest

from generator.project import load_project
from generator.model import Alarm, Condition, Query
from generator.names import alert_name
from generator.render.alarms import (cloudwatch_alarms, cloudwatch_condition, period_value, period_values,
                                     prometheus_expression, prometheus_rules)
from generator.settings import parse_settings
from tests.support import cloudwatch_eval
from tests.support.prometheus_server import binary
from tests.support.promtool_batches import TOO_MANY_SAMPLES
from tests.support.promtool_rules import rendered

PERIOD = 300
HOT, COLD = 95.0, 0.0  # over and under every default temperature and XID threshold
CHUNK = 81


@pytest.fixture(scope="module")
def project():
    return load_project()


def _variants(project) -> dict[str, object]:
    alarms = {a.id: a for a in project.alarms}
    critical = alarms["gpu-temp-critical"]
    return {
        "gpu-temp-critical": critical,
        "gpu-temp-high": alarms["gpu-temp-high"],
        "xid-error": alarms["xid-error"],
        "2-of-3-missing": replace(critical, evaluation_periods=3, datapoints_to_alarm=2),
        "2-of-3-notBreaching": replace(critical, evaluation_periods=3, datapoints_to_alarm=2,
                                       missing_data="notBreaching"),
        "3-of-3-missing": replace(critical, evaluation_periods=3, datapoints_to_alarm=3),
        "3-of-3-notBreaching": replace(critical, evaluation_periods=3, datapoints_to_alarm=3,
                                       missing_data="notBreaching"),
        "4-of-6-missing": replace(critical, evaluation_periods=6, datapoints_to_alarm=4),
        "1-of-1-breaching": replace(critical, missing_data="breaching"),
        "2-of-3-breaching": replace(critical, evaluation_periods=3, datapoints_to_alarm=2, missing_data="breaching"),
        "3-of-3-breaching": replace(critical, evaluation_periods=3, datapoints_to_alarm=3, missing_data="breaching"),
    }


def _cloudwatch(alarm, condition, pattern: tuple, length: int) -> str:
    """The alarm's state over `pattern` (latest period first; None: no reading) judged over a range of `length`
    periods (older periods empty)."""
    periods = alarm.evaluation_periods
    needed = alarm.datapoints_to_alarm or periods
    compare = cloudwatch_eval.COMPARE[{">": "GreaterThanThreshold", "<": "LessThanThreshold"}[condition.comparison]]
    values = [None] * max(length - len(pattern), 0) + list(reversed(pattern))  # oldest first
    return cloudwatch_eval.judge(values[len(values) - length:], needed, periods, alarm.missing_data,
                                 lambda v: compare(v, condition.threshold))


def _alarms(alarm, condition, pattern: tuple, length: int) -> bool:
    """Whether the alarm is in ALARM for a GPU of `pattern`. A GPU without a reading in the range is no contributor
    of the GROUP BY query that reads the range (the evaluator judges a series it is given: with `breaching`, ALARM);
    the alarm with no contributor at all is test_a_breaching_rule_fires_once_when_no_gpu_reads's."""
    return any(r is not None for r in pattern) and _cloudwatch(alarm, condition, pattern, length) == "ALARM"


def _as_generated(alarm, project) -> tuple[list[dict], str]:
    """The alarm's rules as generated: the recording rules its alert reads (an M of N with M < N, or `missing` over
    more than 2 periods: each period's statistic computed once) and the alert's expression."""
    rules = [r for g in prometheus_rules((alarm,), project.catalog, project.settings)["groups"] for r in g["rules"]]
    return rules[:-1], rules[-1]["expr"]


# One chunk's stories from the next's: further than any range or offset of the rules reaches back (an hour's range,
# ten minutes of held readings, the oldest period's offset), so at a chunk's instant no other chunk's series is read.
APART = 6 * 3600


def _judged(series: list[tuple[str, list[str]]], firing: set[str], chunk: int, at: int) -> tuple[dict, int]:
    """One promtool test group judging every GPU at its story's instant, `chunk` GPUs per instant (a query's sample
    limit), and the group's evaluation interval, span. Chunk j's stories (readings every 30 s, judged at `at`) are
    shifted to end at (j + 1) * span, a multiple of the subqueries' steps, so each instant reads what the story's
    own `at` reads, and the recording rules are evaluated at 0 once and then once per chunk (a group per chunk
    evaluated them at 0 again each time, and each evaluation of the counters' recording rule costs promtool about
    the same, readings or none)."""
    span = -(-(at + APART) // 300) * 300
    shifted, checks = [], []
    for j, first in enumerate(range(0, len(series), chunk)):
        start = ((j + 1) * span - at) // 30
        shifted += [{"series": name, "values": f"_x{start} " + " ".join(values)}
                    for name, values in series[first:first + chunk]]
        gpus = [str(gpu) for gpu in range(first, min(first + chunk, len(series))) if str(gpu) in firing]
        checks.append({"eval_time": f"{(j + 1) * span}s",
                       "exp_samples": [{"labels": f'{{gpu="{gpu}", node="n"}}', "value": 1} for gpu in gpus]})
    return {"interval": "30s", "input_series": shifted, "promql_expr_test": checks}, span


def _passes(group: dict, expr: str, tmp_path, recorded: list[dict], interval: int) -> None:
    """promtool runs the test group, `expr` asked as `(expr) * 0 + 1` at each of its instants, the recording rules
    `recorded` evaluated at 0 and every `interval` (the group's instants); it passes (a query over its sample limit
    fails, never passes empty)."""
    for check in group["promql_expr_test"]:
        check["expr"] = f"({expr}) * 0 + 1"
    output = _promtool(group, tmp_path, recorded, interval)
    assert not output, output[-6000:]


def _promtool(group: dict, tmp_path, recorded: list[dict], interval: int) -> str:
    """promtool's output where it fails the test group (its queries asked at their instants, the recording rules
    `recorded` evaluated at 0 and every `interval`), '' where it passes."""
    (tmp_path / "rules.json").write_text(json.dumps({"groups": [{"name": "recorded", "rules": recorded}]
                                                     if recorded else []}))
    (tmp_path / "test.json").write_text(json.dumps({"rule_files": ["rules.json"], "evaluation_interval": f"{interval}s",
                                                    "tests": [group]}))
    result = subprocess.run([binary("promtool"), "test", "rules", "test.json"], capture_output=True, text=True,
                            cwd=tmp_path)
    return "" if result.returncode == 0 else result.stdout + result.stderr


# patterns a range of N + 1 periods judges otherwise than N + 2 (the rules' former length), per variant
FORMER_DIFFERS = {"gpu-temp-critical": 2, "gpu-temp-high": 5, "xid-error": 1, "2-of-3-missing": 18,
                  "2-of-3-notBreaching": 16, "3-of-3-missing": 10, "3-of-3-notBreaching": 6, "4-of-6-missing": 2,
                  "1-of-1-breaching": 1, "2-of-3-breaching": 16, "3-of-3-breaching": 11}
# Of a variant with more than MOST patterns, every SAMPLE-th, and these (latest first): early alarm state judges the
# oldest breaching period of the latest N, not any (a breaching one at k = 3 with a not-breaching one before it).
MOST, SAMPLE = 729, 80  # 80: prime to 3, so the sample varies every period
CHOSEN = {"4-of-6-missing": [(None, None, None, HOT, COLD, HOT, None, None), (None, None, None, HOT, None, None, None, None),
                             (None, None, HOT, COLD, HOT, None, None, None), (None, HOT, None, HOT, None, HOT, None, None)]}


@pytest.mark.parametrize("name", list(FORMER_DIFFERS))
def test_the_rule_fires_where_the_alarm_is_in_alarm_over_the_example_range(project, name, tmp_path):
    alarm = _variants(project)[name]
    condition = cloudwatch_condition(alarm, project.settings)
    metric = condition.query.metric
    length = alarm.evaluation_periods + cloudwatch_eval.EXAMPLE_EXTRA_PERIODS
    patterns = list(itertools.product((None, COLD, HOT), repeat=length))
    if len(patterns) > MOST:
        patterns = patterns[::SAMPLE] + CHOSEN[name]
    at = PERIOD * (len(patterns[0]) + 1)  # the evaluation; period k is (at - (k + 1) * PERIOD, at - k * PERIOD]
    series, firing = [], []
    for gpu, pattern in enumerate(patterns):
        values = ["_"] * (at // 30 + 1)
        for k, reading in enumerate(pattern):  # one reading in the middle of its period
            if reading is not None:
                values[(at - k * PERIOD - PERIOD // 2) // 30] = f"{reading:g}"
        series.append((f'{metric}{{gpu="{gpu}",UUID="GPU-{gpu}",node="n",Hostname="n"}}', values))
        if _alarms(alarm, condition, pattern, length):
            firing.append(str(gpu))
    assert firing
    assert sum(_cloudwatch(alarm, condition, p, length - 1) != _cloudwatch(alarm, condition, p, length)
               for p in patterns) == FORMER_DIFFERS[name]
    recorded, expr = _as_generated(alarm, project)
    group, span = _judged(series, set(firing), CHUNK, at)  # promtool's sample limit: CHUNK patterns an instant
    _passes(group, expr, tmp_path, recorded, span)


# Counter rules (7d9ed75): a period's value is the counter's increase from the readings of its own, none where it
# holds none, as CloudWatch's period has a datapoint only where the agent sent a delta. Each period holds no
# reading, or two 2.5 minutes apart, the counter flat or grown past the threshold between them; it never changes
# across a gap, so the increase read across one is 0. The shipped alarms are 1 of 1; a user's alarms may read more.
COUNTER_VARIANTS = [("pcie-replays", n, m, missing) for n, m in ((1, 1), (2, 2), (3, 2), (3, 3))
                    for missing in ("notBreaching", "missing")] + [("uncorrectable-rows", 2, 2, "notBreaching"),
                                                                    ("uncorrectable-rows", 3, 2, "missing"),
                                                                    ("pcie-replays", 1, 1, "breaching"),
                                                                    ("pcie-replays", 3, 2, "breaching")]
# GPUs per instant: at 4-5 periods, where each exporter's copy is held through a missed scrape (promql.held_latest by
# target), the recording rule holds over 500 samples at once per GPU with readings in every period: at 4 and 5 periods
# 16 such GPUs at one instant exceed the 10,000 samples promtool allows a query, 12 do not. The run's cost is mostly
# in the GPUs judged, whatever the instants (the 5 periods' batch: about 15 s of CPU at 12 a chunk, 21 instants, as at
# 8, 31 instants); a chunk over the limit costs a failed run first (at 16: 0.8 s, and 1.2 s at 4 periods). Should the
# rule grow past the limit, the chunk is halved until it fits (never silently: a run failing for any other reason
# fails the test).
COUNTER_CHUNK = 12


def _counter_story(project, rule: str, periods: int, needed: int, missing: str):
    """A counter variant's GPUs (one per pattern of its N + 2 periods' increases), those whose alarm is in ALARM, the
    evaluation's instant, and its rules as generated (recording rules, the alert's expression)."""
    alarm = replace({a.id: a for a in project.alarms}[rule], evaluation_periods=periods,
                    datapoints_to_alarm=needed, missing_data=missing)
    condition = cloudwatch_condition(alarm, project.settings)
    grown = condition.threshold * 3 + 3
    length = periods + cloudwatch_eval.EXAMPLE_EXTRA_PERIODS
    patterns = list(itertools.product((None, 0.0, grown), repeat=length))  # each period's increase, latest first
    at = PERIOD * (length + 3)
    series, firing = [], []
    for gpu, pattern in enumerate(patterns):
        values, counter = ["_"] * (at // 30 + 1), 100.0
        values[(at - length * PERIOD - PERIOD // 2) // 30] = f"{counter:g}"  # no reading in the range is a first
        for k in reversed(range(length)):  # oldest first
            if pattern[k] is None:
                continue
            start = at - (k + 1) * PERIOD
            values[(start + 60) // 30] = f"{counter:g}"
            counter += pattern[k]
            values[(start + 210) // 30] = f"{counter:g}"
        series.append((f'{condition.query.metric}{{gpu="{gpu}",UUID="GPU-{gpu}",node="n",Hostname="n"}}', values))
        if _alarms(alarm, condition, pattern, length):
            firing.append(str(gpu))
    return series, firing, at, *_as_generated(alarm, project)


def _batches(stories: dict[tuple, tuple]) -> list[list[tuple]]:
    """The variants whose rules can share one rules file: none records a series another records otherwise."""
    batches: list[tuple[dict, list]] = []
    for variant, (*_, recorded, _expr) in stories.items():
        mine = {r["record"]: r["expr"] for r in recorded}
        batch = next((b for b in batches if all(b[0].get(name, expr) == expr for name, expr in mine.items())), None)
        if batch is None:
            batches.append(batch := ({}, []))
        batch[0].update(mine)
        batch[1].append(variant)
    return [variants for _, variants in batches]


_COUNTER_VERDICTS: dict[tuple, str | None] = {}  # (rule, N, M, missing) -> promtool's failure for the variant, or None


def _counter_verdict(project, tmp_path_factory, variant: tuple) -> str | None:
    """Whether the variant's rule fires for exactly its alarm's GPUs. The variants of one counter and N (the same
    GPUs, series and instants) are judged in one promtool run, each variant's expression asked at every instant: the
    recording rule they share (each period's increase) is evaluated once per instant for them all instead of once per
    variant (most of such a run's cost), the alerts' expressions read it back. Variants recording a series otherwise
    are judged in runs of their own (_batches). A run over promtool's sample limit is judged again at half the GPUs an
    instant; a variant fails where promtool names its expression, every variant of the run where it names none."""
    if variant not in _COUNTER_VERDICTS:
        rule, periods = variant[:2]
        stories = {v: _counter_story(project, *v) for v in COUNTER_VARIANTS if v[:2] == (rule, periods)}
        for batch in _batches(stories):
            series, _, at, _, _ = stories[batch[0]]
            assert all(stories[v][0] == series and stories[v][2] == at for v in batch)
            recorded = list({r["record"]: r for v in batch for r in stories[v][3]}.values())
            chunk = COUNTER_CHUNK
            while True:
                checks, span = [], 0
                for v in batch:
                    group, span = _judged(series, set(stories[v][1]), chunk, at)
                    checks += [{**check, "expr": f"({stories[v][4]}) * 0 + 1"} for check in group["promql_expr_test"]]
                group = {**group, "promql_expr_test": checks}
                output = _promtool(group, tmp_path_factory.mktemp("counter"), recorded, span)
                if chunk == 1 or TOO_MANY_SAMPLES not in output:
                    break
                chunk //= 2
            named = {v for v in batch if f"expr: {json.dumps(f'({stories[v][4]}) * 0 + 1')}" in output}
            for v in batch:
                _COUNTER_VERDICTS[v] = None if not output else output[-6000:] if not named or v in named else None
    return _COUNTER_VERDICTS[variant]


@pytest.mark.parametrize("rule, periods, needed, missing", COUNTER_VARIANTS,
                         ids=[f"{r}-{m}-of-{n}-{x}" for r, n, m, x in COUNTER_VARIANTS])
def test_a_counter_rule_fires_where_its_alarm_is_in_alarm_over_the_example_range(project, rule, periods, needed,
                                                                                   missing, tmp_path_factory):
    _, firing, *_ = _counter_story(project, rule, periods, needed, missing)
    assert firing
    failure = _counter_verdict(project, tmp_path_factory, (rule, periods, needed, missing))
    assert failure is None, failure


def test_a_rule_reading_its_periods_more_than_once_computes_each_once(project):
    """A user's PCIe replays alarm at 2 of 3 with `missing` data judges its 5 periods in 30 places (the early-alarm
    patterns, the counts over 3, 4 and 5 periods): the group computes each period's increase once, in a recording
    rule (the 5 periods' increases in one expression, the GPUs named once: period_values, checked against an
    expression per period in tests/integration/test_combined_periods.py), and the alert reads those back, no
    exporter series itself (one expression was 37 KB, each increase read 6 times on average)."""
    alarm = replace({a.id: a for a in project.alarms}["pcie-replays"], evaluation_periods=3, datapoints_to_alarm=2,
                    missing_data="missing")
    recorded, expr = _as_generated(alarm, project)
    (record,) = recorded
    assert record["record"] == "gpudash:pcie_replays:period_value"
    judged = range(3 + cloudwatch_eval.EXAMPLE_EXTRA_PERIODS)
    assert record["expr"] == period_values(alarm, project.catalog, project.settings, judged)
    for period in judged:
        value = period_value(alarm, project.catalog, project.settings, period)
        assert value not in expr
    assert "DCGM_" not in expr
    assert len(record["expr"]) + len(expr) < len(prometheus_expression(alarm, project.catalog, project.settings)) / 3


# A `breaching` alarm of a cluster whose GPUs all stop reading (its GPU node group scaled to zero, its exporters
# gone): two clusters of two Regions on one Prometheus, east's one GPU read every 30 s for its first 20 minutes,
# west's all along.
BREACHING_SETTINGS = """
clusters:
  - {name: east, region: us-east-1, prometheus_label: east}
  - {name: west, region: eu-west-1, prometheus_label: west}
"""
REGIONS = {"east": "us-east-1", "west": "eu-west-1"}
EAST_UNTIL = 1200  # seconds: east's last reading is before this


def _breaching_alarms():
    power = Condition(Query("DCGM_FI_DEV_POWER_USAGE", "sum"), "<", 50)  # each cluster's GPU draws 100 W
    hot = Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node",)), ">", 90)  # each reads 50 C
    hot_cluster = Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("cluster",)), ">", 90)
    return (Alarm("power-low", "Power low", power, missing_data="breaching"),
            Alarm("node-hot", "Node hot", hot, missing_data="breaching", evaluation_periods=3, datapoints_to_alarm=1),
            # one alarm per Region on CloudWatch: judged per Region (judged_regions), or per cluster (clusters_apart)
            Alarm("fleet-power-low", "Fleet power low", power, missing_data="breaching", scope="fleet"),
            Alarm("fleet-hot", "Fleet hot", hot_cluster, missing_data="breaching", scope="fleet"))


def _breaching_states(alarm, at: int) -> dict[str, tuple[str, bool]]:
    """{cluster: (CloudWatch's state, whether a contributor read it)} at `at` for the story above: a contributor (the
    cluster's one node) judged on its periods' statistics over the example range (cloudwatch_eval.judge), or, with no
    reading in the range, no contributor and the alarm reading no datapoint."""
    periods, needed = alarm.evaluation_periods, alarm.datapoints_to_alarm or alarm.evaluation_periods
    length = periods + cloudwatch_eval.EXAMPLE_EXTRA_PERIODS
    condition = alarm.condition
    value = 100.0 if condition.query.metric == "DCGM_FI_DEV_POWER_USAGE" else 50.0
    compare = cloudwatch_eval.COMPARE[{">": "GreaterThanThreshold", "<": "LessThanThreshold"}[condition.comparison]]
    states = {}
    for cluster, until in (("east", EAST_UNTIL), ("west", None)):
        starts = [at - (length - i) * PERIOD for i in range(length)]  # oldest first
        values = [value if until is None or start < until else None for start in starts]
        read = any(v is not None for v in values)
        states[cluster] = (cloudwatch_eval.judge(values, needed, periods, "breaching",
                                                 lambda v: compare(v, condition.threshold)) if read else "ALARM", read)
    return states


def _firing(alarm, cluster: str, read: bool) -> dict[str, str]:
    """The labels of the rule's alert for `cluster`'s ALARM: its contributor's (cluster, node) where it read, else
    one alert for the CloudWatch alarm reading nothing: the cluster's, or its Region's for a fleet alarm."""
    if alarm.scope == "fleet" and not (read and alarm.condition.query.by):
        return {"region": REGIONS[cluster]}
    by = alarm.condition.query.by
    return {"cluster": cluster, **({"node": f"n-{cluster}"} if read and "node" in by else {})}


def test_a_breaching_rule_fires_for_each_contributor_and_for_a_cluster_with_no_reading_left(tmp_path):
    """With `breaching`, a period without a datapoint breaches: a contributor with fewer than N periods of readings in
    the range is judged with the missing ones breaching, and a cluster none of whose GPUs has a reading in the range
    is in ALARM on CloudWatch (its alarm reads no datapoint; the generated request with none is judged so), as is a
    fleet alarm's Region (one alarm per Region), judged per Region or per cluster. The rule fires for the same
    clusters, nodes and Regions at each instant, once per cluster (Region) where nothing is left, never for one still
    reading (before, the rule treated missing periods as not breaching and fired for none)."""
    project = load_project()
    settings = parse_settings(BREACHING_SETTINGS, "<test>", tmp_path)
    alarms = _breaching_alarms()
    for request in cloudwatch_alarms(alarms, settings, project.catalog):
        assert cloudwatch_eval.alarm(request["Request"], [], 3600) == {(): "ALARM"}
    rules = prometheus_rules(alarms, project.catalog, settings)
    (tmp_path / "rules.json").write_text(json.dumps(rules))
    annotations = {r["alert"]: r["annotations"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    series = []
    for cluster, until in (("east", EAST_UNTIL), ("west", None)):
        for metric, value in (("DCGM_FI_DEV_POWER_USAGE", 100), ("DCGM_FI_DEV_GPU_TEMP", 50)):
            values = [str(value) if until is None or k * 30 < until else "_" for k in range(3600 // 30)]
            if until:
                values[until // 30] = "stale"
            series.append({"series": f'{metric}{{cluster="{cluster}",gpu="0",UUID="GPU-{cluster}",node="n-{cluster}",'
                                     f'Hostname="n-{cluster}"}}', "values": " ".join(values)})
    checks = []
    for alarm in alarms:
        for at in (900, 1500, 1800, 2100, 2400, 2700, 3000):
            labels = [_firing(alarm, cluster, read)
                      for cluster, (state, read) in sorted(_breaching_states(alarm, at).items()) if state == "ALARM"]
            checks.append({"eval_time": f"{at}s", "alertname": alert_name(alarm.id),
                           "exp_alerts": [{"exp_labels": {**one, "severity": alarm.severity, "gpudash_rule": alarm.id},
                                           "exp_annotations": {k: rendered(v, one) for k, v in
                                                               annotations[alert_name(alarm.id)].items()}}
                                          for one in labels]})
    assert any(c["exp_alerts"] for c in checks) and any(not c["exp_alerts"] for c in checks)
    # evaluated at the instants' common divisor (every 5 minutes, 11 evaluations: every 30 s was 101): no rule holds
    # a state across evaluations (no `for`; an alert reads its recording rule's sample of the same evaluation)
    assert not [r for g in rules["groups"] for r in g["rules"] if "for" in r or "keep_firing_for" in r]
    every = math.gcd(*(int(c["eval_time"].removesuffix("s")) for c in checks))
    (tmp_path / "test.json").write_text(json.dumps({"rule_files": ["rules.json"], "evaluation_interval": f"{every}s",
                                                    "tests": [{"interval": "30s", "input_series": series,
                                                               "alert_rule_test": checks}]}))
    result = subprocess.run([binary("promtool"), "test", "rules", "test.json"], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]

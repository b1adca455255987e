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
import subprocess
from dataclasses import replace

import pytest

from generator.project import load_project
from generator.render.alarms import cloudwatch_condition, period_value, prometheus_expression, prometheus_rules
from tests.support import cloudwatch_eval
from tests.support.prometheus_server import binary

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
    (tmp_path / "rules.json").write_text(json.dumps({"groups": [{"name": "recorded", "rules": recorded}]
                                                     if recorded else []}))
    (tmp_path / "test.json").write_text(json.dumps({"rule_files": ["rules.json"], "evaluation_interval": f"{interval}s",
                                                    "tests": [group]}))
    result = subprocess.run([binary("promtool"), "test", "rules", "test.json"], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


# patterns a range of N + 1 periods judges otherwise than N + 2 (the rules' former length), per variant
FORMER_DIFFERS = {"gpu-temp-critical": 2, "gpu-temp-high": 5, "xid-error": 1, "2-of-3-missing": 18,
                  "2-of-3-notBreaching": 16, "3-of-3-missing": 10, "3-of-3-notBreaching": 6, "4-of-6-missing": 2}
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
        if _cloudwatch(alarm, condition, pattern, length) == "ALARM":
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
                                                                    ("uncorrectable-rows", 3, 2, "missing")]
# GPUs per instant: at 4-5 periods, where each exporter's copy is held through a missed scrape (promql.held_latest by
# target), the recording rule holds over 500 samples at once per GPU with readings in every period: 20 such GPUs at
# one instant exceed the 10,000 samples promtool allows a query (19 do not; 81 did before). Each instant costs
# promtool about the same whatever it reads, so the fewer the cheaper; 12 leaves room for the rule to grow.
COUNTER_CHUNK = 12


@pytest.mark.parametrize("rule, periods, needed, missing", COUNTER_VARIANTS,
                         ids=[f"{r}-{m}-of-{n}-{x}" for r, n, m, x in COUNTER_VARIANTS])
def test_a_counter_rule_fires_where_its_alarm_is_in_alarm_over_the_example_range(project, rule, periods, needed,
                                                                                   missing, tmp_path):
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
        if _cloudwatch(alarm, condition, pattern, length) == "ALARM":
            firing.append(str(gpu))
    assert firing
    recorded, expr = _as_generated(alarm, project)
    group, span = _judged(series, set(firing), COUNTER_CHUNK, at)
    _passes(group, expr, tmp_path, recorded, span)


def test_a_rule_reading_its_periods_more_than_once_computes_each_once(project):
    """A user's PCIe replays alarm at 2 of 3 with `missing` data judges its 5 periods in 30 places (the early-alarm
    patterns, the counts over 3, 4 and 5 periods): the group computes each period's increase once, in a recording
    rule, and the alert reads those back, no exporter series itself (one expression was 37 KB, each increase read
    6 times on average)."""
    alarm = replace({a.id: a for a in project.alarms}["pcie-replays"], evaluation_periods=3, datapoints_to_alarm=2,
                    missing_data="missing")
    recorded, expr = _as_generated(alarm, project)
    (record,) = recorded
    assert record["record"] == "gpudash:pcie_replays:period_value"
    for period in range(3 + cloudwatch_eval.EXAMPLE_EXTRA_PERIODS):
        value = period_value(alarm, project.catalog, project.settings, period)
        assert record["expr"].count(value) == 1 and value not in expr
    assert "DCGM_" not in expr
    assert len(record["expr"]) + len(expr) < len(prometheus_expression(alarm, project.catalog, project.settings)) / 3

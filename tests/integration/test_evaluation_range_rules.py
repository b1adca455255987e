"""Each rule judges its periods as CloudWatch's alarm judges its evaluation range, for every pattern of periods.

A CloudWatch alarm retrieves more periods than its EvaluationPeriods N (its evaluation range, of a length AWS does not
publish) and judges the most recent real datapoints there; with fewer than N it treats the missing ones as its
TreatMissingData says, and with `missing` it may alarm early (tests/support/cloudwatch_eval.judge). Here every pattern
of N + 2 periods, each without a reading, with one under the threshold or with one over it, is one GPU; the rule
(run by promtool) fires for a GPU exactly where the alarm is in ALARM at every plausible length of the range, and
does not where it is OK at every length (patterns whose state depends on the length are not judged; the older periods
are empty, so every length from N + 2 on decides alike). The alarm is judged by the evaluator's `judge`; the rule is
the generated one, of the default alarms (1 of 1 period, 2 of 2 with `missing`, 1 of 1 `notBreaching`) and of
variants of the temperature rule (2 of 3 and 3 of 3, each missing data treatment the rules judge so).
"""

from __future__ import annotations

import itertools
import json
import subprocess
from dataclasses import replace

import pytest

from generator.project import load_project
from generator.render.alarms import cloudwatch_condition, prometheus_expression
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
    }


def _cloudwatch(alarm, condition, pattern: tuple) -> str | None:
    """The alarm's state over `pattern` (latest period first; None: no reading) at every plausible length of its
    range, or None where the length decides."""
    periods = alarm.evaluation_periods
    needed = alarm.datapoints_to_alarm or periods
    compare = cloudwatch_eval.COMPARE[{">": "GreaterThanThreshold", "<": "LessThanThreshold"}[condition.comparison]]
    widest = periods + cloudwatch_eval.EXTRA_PERIODS
    values = [None] * (widest - len(pattern)) + list(reversed(pattern))  # oldest first
    states = {cloudwatch_eval.judge(values[widest - length:], needed, periods, alarm.missing_data,
                                    lambda v: compare(v, condition.threshold))
              for length in range(periods + 1, widest + 1)}
    return states.pop() if len(states) == 1 else None


@pytest.mark.parametrize("name", ["gpu-temp-critical", "gpu-temp-high", "xid-error", "2-of-3-missing",
                                  "2-of-3-notBreaching", "3-of-3-missing",
                                  "3-of-3-notBreaching"])
def test_the_rule_fires_where_the_alarm_is_in_alarm_at_every_length_of_its_range(project, name, tmp_path):
    alarm = _variants(project)[name]
    condition = cloudwatch_condition(alarm, project.settings)
    metric = condition.query.metric
    patterns = list(itertools.product((None, COLD, HOT), repeat=alarm.evaluation_periods + 2))
    at = PERIOD * (len(patterns[0]) + 1)  # the evaluation; period k is (at - (k + 1) * PERIOD, at - k * PERIOD]
    series, firing, judged = [], [], 0
    for gpu, pattern in enumerate(patterns):
        values = ["_"] * (at // 30 + 1)
        for k, reading in enumerate(pattern):  # one reading in the middle of its period
            if reading is not None:
                values[(at - k * PERIOD - PERIOD // 2) // 30] = f"{reading:g}"
        series.append({"series": f'{metric}{{gpu="{gpu}",UUID="GPU-{gpu}",node="n",Hostname="n"}}',
                       "values": " ".join(values)})
        state = _cloudwatch(alarm, condition, pattern)
        if state is None:
            continue
        judged += 1
        if state == "ALARM":
            firing.append({"gpu": str(gpu)})
    assert judged > len(patterns) // 2 and firing
    expr = prometheus_expression(alarm, project.catalog, project.settings)
    judged_only = {str(gpu) for gpu, p in enumerate(patterns) if _cloudwatch(alarm, condition, p) is not None}
    tests = []
    for first in range(0, len(patterns), CHUNK):  # promtool's sample limit: a test group per CHUNK patterns
        gpus = {str(gpu) for gpu in range(first, min(first + CHUNK, len(patterns)))} & judged_only
        chosen = f'{metric}{{gpu=~"{"|".join(sorted(gpus))}"}}'  # whose state the length cannot decide
        tests.append({"interval": "30s", "input_series": series[first:first + CHUNK],
                      "promql_expr_test": [{"expr": f"(({expr}) * 0 + 1) and on (gpu) group by (gpu) "
                                                    f"(last_over_time({chosen}[{at}s]))", "eval_time": f"{at}s",
                                            "exp_samples": [f for f in firing if f["gpu"] in gpus]}]})
    for test in tests:
        for case in test["promql_expr_test"]:
            case["exp_samples"] = [{"labels": f'{{gpu="{f["gpu"]}", node="n"}}', "value": 1}
                                   for f in case["exp_samples"]]
    (tmp_path / "rules.yaml").write_text("groups: []\n")
    (tmp_path / "test.json").write_text(json.dumps({"rule_files": ["rules.yaml"], "evaluation_interval": "1m",
                                                    "tests": tests}))
    result = subprocess.run([binary("promtool"), "test", "rules", "test.json"], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]

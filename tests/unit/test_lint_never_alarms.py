"""Lint AL028: an alarm on a count of readings below 1 whose missing data does not breach can never be in ALARM.

A period without a reading has no datapoint (CloudWatch does not judge it as a count of 0: TreatMissingData decides,
and only `breaching` breaches), and one with a reading counts 1 or more: `COUNT(...) < 1` or a SampleCount `< 1`
never breaches. The bundled data-missing alarms count "fewer than half" the scrapes of a period: at scrape.interval
150 s a period holds two, under half is none, so the agent's alarm (its reads of kube-state-metrics) and, on
agent.pipeline: classic, the per-GPU alarm can never fire, though their descriptions promise a crash loop is seen.
That is said once, with the rule's period that makes it so and what to do (AL029), not again per alarm here; an alarm
of a build edited so is named; at the default 30 s none (under 5 of 10 is 1 to 4 readings).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from generator.artifacts import build
from generator.lint import run
from generator.lint import alarm_periods
from generator.lint.cloudwatch_rules import RULES
from generator.render.alarms import never_firing
from tests.support.lint_input import lint_input
from tests.support.projects import defined_project

CLUSTER = "clusters:\n  - {name: c1, region: us-east-1}\n"


def _findings(project):
    return run([rule for rule in RULES if rule.id == "AL028"], lint_input(project))


@pytest.mark.parametrize("settings,never", [
    ("scrape:\n  interval: 150s\n", {"gpudash-c1-gpu-data-missing-agent-critical"}),
    ("scrape:\n  interval: 150s\nagent:\n  pipeline: classic\n",
     {"gpudash-c1-gpu-data-missing-agent-critical", "gpudash-c1-gpu-data-missing-per-gpu-critical"}),
    ("", set()),
    ("scrape:\n  interval: 100s\nagent:\n  pipeline: classic\n", set()),  # 3 a period: under 1.5 is 1 reading
])
def test_the_bundled_data_missing_alarms_that_can_never_fire_are_said_once(tmp_path, settings, never):
    """Said by AL029, the rule's period (one warning, naming that they never fire); AL028 names none of them."""
    project = defined_project(tmp_path, CLUSTER + settings)
    assert {a.request["AlarmName"] for a in build(project).alarms if never_firing(a.request)} == never
    assert _findings(project) == []
    short = run(alarm_periods.RULES, lint_input(project))
    assert [(f.where, "can never fire" in f.message) for f in short] == (
        [("alarms/gpu_alarms.py:97", True)] if never else [])


ALARM = """\
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("a", "A", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count", ("node", "gpu")), {comparison!r},
                {threshold}){extra})
"""


# A count of GPUs is the period's readings over its scrapes (`< 1` GPU: `< 10` readings at 30 s, which a failed scrape
# meets: lint AL024's); `<= 0` is none at any interval.
@pytest.mark.parametrize("comparison,threshold,extra,never", [
    ("<=", 0, "", True),
    ("<=", 0, ", missing_data='notBreaching'", True),
    ("<=", 0, ", missing_data='breaching'", False),  # a GPU gone breaches: it fires then
    ("<", 1, "", False),
    ("<=", 1, "", False),
])
def test_a_users_count_below_one_is_named(tmp_path, comparison, threshold, extra, never):
    text = ALARM.format(comparison=comparison, threshold=threshold, extra=extra)
    findings = _findings(defined_project(tmp_path, CLUSTER, alarms=text))
    assert bool(findings) == never, [f.message for f in findings]
    assert all("gpudash-c1-a-warning" in f.where for f in findings)


def test_generate_says_so_too(cli, tmp_path):
    """generate names such alarms as it names alarms that notify no one, before anything is published; the bundled
    data-missing rule's at 150 s once, with its period (AL029)."""
    settings = tmp_path / "gpudash.yaml"
    settings.write_text(CLUSTER + "scrape:\n  interval: 150s\n")
    code, _, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / "build"))
    assert code == 0
    assert "can never be in ALARM" not in stderr and "so it can never fire (lint AL029)" in stderr, stderr
    (tmp_path / "own").mkdir()
    defined_project(tmp_path / "own", CLUSTER, alarms=ALARM.format(comparison="<=", threshold=0, extra=""))
    code, _, stderr = cli("generate", "--config", str(tmp_path / "own" / "gpudash.yaml"), "--out",
                          str(tmp_path / "build"))
    assert code == 0
    assert "warning: 1 CloudWatch alarm(s) can never be in ALARM (first: gpudash-c1-a-warning)" in stderr, stderr
    settings.write_text(CLUSTER)
    code, _, stderr = cli("generate", "--config", str(settings), "--out", str(tmp_path / "build"))
    assert code == 0 and "can never be in ALARM" not in stderr


GONE = """\
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gone", "GPU data gone", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count"), "<", 1),
                severity="critical", absent=True, missing_data="breaching", period_seconds=120, evaluation_periods=3)
"""


def test_the_fix_reads_the_alarms_own_period(cli, tmp_path):
    """A data-missing alarm of 120 s periods at 60 s scrapes holds two a period, under half of them none: the fix names
    the intervals that hold three in its period and divide it and cloudwatch.period (10 s to 30 s), or periods of three
    (180 s) in as many as keep the rule's own window (its definition's 180 s x 3 here, not the edited request's); it said
    'a shorter interval (100 s or less)', the bundled 300 s period's, at 60 s already. generate refuses a user's rule of such periods (render.alarms.agent_problem), so the alarm linted is
    a build's, its period edited to 120 s."""
    project = defined_project(tmp_path, CLUSTER + "scrape:\n  interval: 60s\n", alarms=GONE.replace(
        "period_seconds=120", "period_seconds=180"))
    artifacts = build(project)
    (agent,) = [a for a in artifacts.alarms if a.request["AlarmName"].endswith("-agent-critical")]
    request = {**agent.request, "Threshold": 1.0,
               "Metrics": [{**agent.request["Metrics"][0], "Period": 120}]}
    edited = tuple(replace(a, request=request) if a is agent else a for a in artifacts.alarms)
    (finding,) = run([rule for rule in RULES if rule.id == "AL028"], lint_input(project, artifacts, alarms=edited))
    assert ("a data-missing alarm counts under half of a period's scrapes, none at 2 a period (120 s at scrape.interval "
            "60 s): give scrape.interval one of 10s, 12s, 15s, 20s, 30s (40 s or less, dividing cloudwatch.period and "
            "the alarm's period), or (an alarm of your own) period_seconds=180 and evaluation_periods=3, which keep its "
            "window of 540 s") in finding.message and "100 s" not in finding.message
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "build"))
    assert code == 0 and "can never be in ALARM" not in stderr, stderr
    (tmp_path / "alarms" / "alarms.py").write_text(GONE)  # a user's rule of 120 s periods: refused, with the same period
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "build"))
    assert code == 2 and ("fix: give the alarm period_seconds=180 and evaluation_periods=2, which keep its window of "
                          "360 s") in stderr, stderr
    # each way of the lint's fix followed builds the rule without a word of it: 180 s x 2 ('180 or more' gave 180 s x 3,
    # 540 s), or the 120 s periods at the longest interval named (30 s; '30 s or less' named 25 s too, which 120 s is
    # not a whole number of)
    for periods, interval in (("period_seconds=180, evaluation_periods=2", "60s"),
                              ("period_seconds=120, evaluation_periods=3", "30s")):
        (tmp_path / "alarms" / "alarms.py").write_text(GONE.replace("period_seconds=120, evaluation_periods=3", periods))
        (tmp_path / "gpudash.yaml").write_text(CLUSTER + f"scrape:\n  interval: {interval}\n")
        code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "build"))
        assert code == 0 and "can never be in ALARM" not in stderr and "'gone'" not in stderr, stderr

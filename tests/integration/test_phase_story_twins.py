"""The gauge alarms and their Prometheus twins fire at the same minutes through a fleet's hours in phases
(tests/support/phase_story.py: GPUs idle and held by no pod for an hour, then held; the GPU node group at zero; back
on new nodes).

The CloudWatch alarms are judged over what the agent model publishes of the story (cloudwatch_eval, at every length
of the evaluation range: a minute whose state the range's length decides is passed over, as the documented hold of a
GPU whose data stops in ALARM); each rule's alert expression as generated is evaluated by a real Prometheus
backfilled with the same scrapes, 1 s before each minute (the alarm's window ends at the minute, its start included,
the rule's look-back ends at its instant, its start left out: on whole-second scrapes the same readings). Both must
name the same GPUs and pods at every minute from minute 10, and the rules what the phase's fleet makes true
(random_fleet.firing) from 45 minutes into each phase. A backfill holds no staleness marker (OpenMetrics has none),
so a series that ends is read for the look-back's 5 minutes more, as the rule's own range holds it anyway. Written
against issue 10; both forms were found true.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support import cloudwatch_eval, messy_history, mixed_fleet, phase_story, random_fleet
from tests.support.mig_variant import variant_project
from tests.support.prometheus_server import backfilled
from tests.support.promtool_rules import parsed_rule_documents

RULES = ("xid-error", "gpu-temp-high", "gpu-temp-critical", "framebuffer-full", "gpu-idle")
POD_RULES = ("framebuffer-full", "gpu-idle")


def _history(story, start: int) -> dict:
    """The story's samples as Prometheus stores them (messy_history's Series), each node a target of its own."""
    series: dict = {}
    for first, end, fleet in story:
        for i, node in enumerate(fleet):
            target = f'instance="10.{first // 100}.{i}.1:9400",job="dcgm-exporter",node="{node.name}"'
            for k in range(first // phase_story.STEP, end // phase_story.STEP):
                at = k * phase_story.STEP
                for line in mixed_fleet.payload(node, at, phase_story.STEP).splitlines():
                    if line and not line.startswith("#"):
                        head, rest = line.split("} ", 1)
                        metric, labels = head.split("{", 1)
                        series.setdefault((metric, f"{labels},{target}"), []).append((start + at, rest.split()[0]))
    return series


def _named(rule: str, labels: dict[str, str]) -> str:
    return f"Pod {labels['namespace']}/{labels['pod']}" if rule in POD_RULES else \
        f"{labels['node']} GPU {labels['gpu']}"


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    folder = tmp_path_factory.mktemp("phases")
    phases = phase_story.phases(2, True)  # a seed whose phases fire every rule: each is judged firing and not
    project = variant_project(folder, "exporter:\n  virtual_gpus: true\n")
    files = encode(build(project))
    rules = {r["labels"]["gpudash_rule"]: r["expr"]
             for document in parsed_rule_documents(files["k8s/prometheusrule.yaml"])
             for group in document["spec"]["groups"] for r in group["rules"] if "alert" in r}
    points = phase_story.published(files, phases)
    end = phases[-1][1]
    with backfilled(folder, lambda start: messy_history.openmetrics(_history(phases, start)), end,
                    phase_story.STEP) as (prometheus, start):
        minutes = range(600, end + 1, 60)
        answers = {rule: prometheus.query_at(rules[rule], start + minutes[0] - 1, len(minutes), 60) for rule in RULES}
    named = {rule: {at: {_named(rule, s["metric"]) for s in answers[rule][start + at - 1]} for at in minutes}
             for rule in RULES}
    return files, phases, points, named


@pytest.mark.parametrize("rule", RULES)
def test_the_alarm_and_its_rule_name_the_same_at_every_minute(story, rule):
    files, _, points, named = story
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if {"Key": "gpudash:rule", "Value": rule} in a["Request"]["Tags"]]
    judged = fired = 0
    for at, by_rule in named[rule].items():
        try:
            states = [cloudwatch_eval.alarm(request, points, at) for request in requests]
        except cloudwatch_eval.RangeDependent:
            continue
        by_alarm = {_named(rule, dict(key)) for found in states for key, state in found.items() if state == "ALARM"}
        assert by_alarm == by_rule, (rule, at, sorted(by_alarm - by_rule), sorted(by_rule - by_alarm))
        judged += 1
        fired += bool(by_alarm)
    assert judged > 150 and fired > 30


@pytest.mark.parametrize("rule", RULES)
def test_the_rule_names_each_phases_truth(story, rule):
    _, phases, _, named = story
    for start, end, fleet in phases:
        expected = random_fleet.firing(fleet)[rule] if fleet else set()
        for at in range(start + 2700, end + 1, 300):
            assert named[rule][at] == expected, (rule, at, sorted(named[rule][at]), sorted(expected))

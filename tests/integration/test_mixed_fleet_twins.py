"""A mixed fleet's data-missing alarm and rule on the same history: cluster a runs the GPU operator's exporter (the
fleet's exporter.deployment), gpu-cluster three Helm releases (test_data_missing_daemonsets' pools) written in its
clusters[].exporter. Each cluster has its own Prometheus running the one generated rules file; gpu-cluster's alarms
are judged by cloudwatch_eval over what the agent model publishes from gpu-cluster's generated config, its rule by
promtool, minute by minute."""

from __future__ import annotations

import json

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.integration.test_data_missing import _in_alarm
from tests.integration.test_data_missing_daemonsets import (ALARM, B, CLUSTER, ONE_STORIES, STEPS, STORIES, TRUTH,
                                                            _alarm_of, _expected, _published, _rule_minutes,
                                                            _rule_series)

MIXED_FLEET = ("clusters:\n  - {name: a, region: us-east-1}\n"
               f"  - name: {CLUSTER}\n    region: us-east-1\n"
               "    exporter:\n      deployment: helm\n      namespace: monitoring\n      daemonset: gpu-metrics-pool-a\n"
               "      more_daemonsets: [gpu-metrics-pool-b, gpu-pools/pool-c-dcgm-exporter]\n")


def _twins(tmp_path, settings: str, stories: tuple[str, ...], pool_stories: dict = STORIES, truth: dict = TRUTH,
           alarm_of=_alarm_of) -> dict:
    """{(story, minute): (alarms in ALARM, DaemonSets the rule fires for)} where either differs from the truth
    (`alarm_of`: the alarm name of a DaemonSet)."""
    (tmp_path / "gpudash.yaml").write_text(settings)
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    requests = [i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if i["Request"]["AlarmName"].startswith(ALARM.removesuffix("-critical"))]
    fired = _rule_minutes(files, tmp_path, {name: _rule_series(pool_stories[name]) for name in stories})[0]
    wrong = {}
    for name in stories:
        points = _published(files, pool_stories[name])
        for minute in range(1, STEPS // 2 + 1):
            expected = _expected(truth[name], minute)
            if expected is None:
                continue
            alarm = set(_in_alarm(requests, points, minute * 60))
            rule = fired[name].get(minute, set())
            if alarm != {alarm_of(d) for d in expected} or rule != expected:
                wrong[(name, minute)] = (sorted(a.removeprefix(ALARM) for a in alarm), sorted(rule))
    return wrong


def test_in_a_mixed_fleet_the_rule_and_the_alarm_agree_minute_by_minute(tmp_path):
    """The same fleet over the stories of test_data_missing_daemonsets (healthy, a pool's pod gone in either
    namespace, every node group at zero, pool a rolling out alone or while pool b's pod is gone, kube-state-metrics'
    pod replaced): both forms say what the truth says at every minute judged. With kube-state-metrics' pod replaced at
    minute 31 the rule paused at 31 and 36 (it judged a DaemonSet by its own counts only where every cluster names
    it, and no two clusters here name the same)."""
    stories = tuple(name for name in STORIES if name not in (
        "CloudWatch agent stopped", "pool b removed with its DaemonSet",
        "pool b's exporter pod gone, then its DaemonSet deleted") and "honor_labels" not in STORIES[name])
    assert _twins(tmp_path, MIXED_FLEET, stories) == {}


# gpu-cluster names one exporter DaemonSet (pool b's Helm release); cluster c, of the GPU operator, lists a second
# DaemonSet of its own: the fleet then has an alarm per DaemonSet (several_daemonsets), gpu-cluster's too
ONE_NAMED_BESIDE_MORE = (f"clusters:\n  - name: {CLUSTER}\n    region: us-east-1\n"
                         f"    exporter: {{deployment: helm, namespace: {B[0]}, daemonset: {B[1]}}}\n"
                         "  - name: c\n    region: us-east-1\n"
                         "    exporter: {namespace: nvidia-gpu, more_daemonsets: [monitoring/dcgm-exporter]}\n")


def test_a_cluster_naming_one_daemonset_beside_a_cluster_naming_two_fires_with_its_alarm_while_ksm_is_replaced(
        tmp_path):
    """gpu-cluster's only exporter DaemonSet's pod gone from minute 20 to 40 while kube-state-metrics' pod is replaced at
    31 (another `instance`, one scrape missed): its alarm is in ALARM 30-39, and so must the rule be, as in a fleet
    where no cluster lists more_daemonsets (test_with_one_daemonset_named_the_rule_fires_when_the_alarm_fires). It
    paused at 31 and 36: a DaemonSet was judged by its own counts over the period only where every cluster names it,
    else where labelled at the period's end, which kube-state-metrics' gap left unlabelled."""
    name = "pool b's exporter pod gone while kube-state-metrics is replaced"
    # gpu-cluster's alarm keeps the cluster's name (it names one DaemonSet); the rule names the DaemonSet
    assert _twins(tmp_path, ONE_NAMED_BESIDE_MORE, (name,), ONE_STORIES, {name: (B,)}, lambda daemonset: ALARM) == {}

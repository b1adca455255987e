"""A mixed fleet's data-missing alarm and rule on the same history: cluster a runs the GPU operator's exporter (the
fleet's exporter.deployment), gpu-cluster three Helm releases (test_data_missing_daemonsets' pools) written in its
clusters[].exporter. Each cluster has its own Prometheus running the one generated rules file; gpu-cluster's alarms
are judged by cloudwatch_eval over what the agent model publishes from gpu-cluster's generated config, its rule by
promtool, minute by minute."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.integration.test_data_missing import CHANGE, RECOVER, _in_alarm, _labels
from tests.integration.test_data_missing_daemonsets import (ALARM, B, CLUSTER, ONE_STORIES, STEPS, STORIES, TRUTH,
                                                            _alarm_of, _expected, _published, _rule_minutes,
                                                            _rule_series, _story)
from tests.support import kube_state
from tests.support.dcgm_fleet import STEP

MIXED_FLEET = ("clusters:\n  - {name: a, region: us-east-1}\n"
               f"  - name: {CLUSTER}\n    region: us-east-1\n"
               "    exporter:\n      deployment: helm\n      namespace: monitoring\n      daemonset: gpu-metrics-pool-a\n"
               "      more_daemonsets: [gpu-metrics-pool-b, gpu-pools/pool-c-dcgm-exporter]\n")


# Each settings' rule runs once in promtool over every story of its tests (one run per settings, not per test): the
# stories of gpu-cluster's Prometheus, and the other cluster's (OTHER): the same rules file on a Prometheus holding only
# that cluster's exporter DaemonSets, where gpu-cluster's DaemonSets are never seen (the rule must not judge them there)
OTHER = "on the other cluster's Prometheus: "
OPERATOR = ("gpu-operator", "nvidia-dcgm-exporter")  # cluster a's (MIXED_FLEET): the GPU operator's defaults
NODES = ("ip-10-0-1-1", "ip-10-0-1-2")
# the minutes (of a reinstall of a cluster's only DaemonSet: gone at 25, back at 40) at which no exporter DaemonSet is
# labelled in either period the rule joins: the cluster's case-1 alert alone fires (no daemonset label), as it does
# where no cluster lists more_daemonsets (test_with_one_daemonset_named_the_rule_fires_when_the_alarm_fires)
NONE_LEFT = range(35, 40)


def _gone_then_deleted_of(daemonset: tuple[str, str], pools: dict) -> dict:
    """`daemonset`'s exporter pod gone at minute 20, the DaemonSet deleted at 25 until 40 (test_data_missing_daemonsets'
    _gone_then_deleted, of any pool)."""
    story = _story(gone=(daemonset[1],), pools=pools)
    answering, *counts = story["pools"][daemonset]
    deleted = range((CHANGE + 300) // STEP, RECOVER // STEP)
    story["pools"][daemonset] = (answering, *(tuple(None if k in deleted else v for k, v in enumerate(c))
                                              for c in counts))
    return story


def _operator(series: list[dict]) -> list[dict]:
    """Series of the GPU operator's DaemonSets: kube_daemonset_labels with its `app` label, not the chart's."""
    helm, operator = _labels(kube_state.HELM_LABELS), _labels(kube_state.OPERATOR_LABELS)
    return [{**entry, "series": entry["series"].replace(helm, operator)} for entry in series]


def _other(pools: dict, operator: tuple = ()) -> dict[str, list[dict]]:
    """The other cluster's Prometheus over an hour: healthy until minute 20 and from 40, its last DaemonSet reinstalled
    (pod gone at 20, deleted at 25, back at 40); `operator`: its DaemonSets labelled as the GPU operator's."""
    reinstalled = _rule_series(_gone_then_deleted_of(list(pools)[-1], pools))
    return {f"{OTHER}{'/'.join(list(pools)[-1])} reinstalled": _operator(reinstalled) if operator else reinstalled}


def _other_truth(pools: dict) -> dict[str, Callable[[int], set | None]]:
    """What the rule says on the other cluster's Prometheus: nothing while healthy (minutes 1-20, 46-60); the
    reinstalled DaemonSet from minute 30 (the cluster naming more than it: until 40) or the cluster's case-1 alert
    where none of its DaemonSets is left in either period; never a DaemonSet of gpu-cluster."""
    daemonset = list(pools)[-1]

    def truth(minute: int) -> set | None:
        expected = _expected((daemonset,), minute)
        return {("", "")} if expected and len(pools) == 1 and minute in NONE_LEFT else expected
    return {f"{OTHER}{'/'.join(daemonset)} reinstalled": truth}


@dataclass
class Fleet:
    files: dict
    fired: dict[str, dict[int, set]]  # promtool's answers: {story: {minute: (namespace, daemonset) the rule fires for}}


def _fleet(tmp_path_factory, settings: str, stories: dict[str, list[dict]]) -> Fleet:
    folder = tmp_path_factory.mktemp("fleet")
    (folder / "gpudash.yaml").write_text(settings)
    files = encode(build(load_project(folder / "gpudash.yaml")))
    return Fleet(files, _rule_minutes(files, folder, stories)[0])


def _twins(fleet: Fleet, stories: tuple[str, ...], pool_stories: dict = STORIES, truth: dict = TRUTH,
           alarm_of=_alarm_of, none_left: range = range(0)) -> dict:
    """{(story, minute): (alarms in ALARM, DaemonSets the rule fires for)} where either differs from the truth
    (`alarm_of`: the alarm name of a DaemonSet; `none_left`: the minutes at which the rule's case-1 alert alone says
    it, no exporter DaemonSet labelled in either period)."""
    requests = [i["Request"] for i in json.loads(fleet.files["cloudwatch/alarms.json"])["alarms"]
                if i["Request"]["AlarmName"].startswith(ALARM.removesuffix("-critical"))]
    wrong = {}
    for name in stories:
        points = _published(fleet.files, pool_stories[name])
        for minute in range(1, STEPS // 2 + 1):
            expected = _expected(truth[name], minute)
            if expected is None:
                continue
            alarm = set(_in_alarm(requests, points, minute * 60))
            rule = fleet.fired[name].get(minute, set())
            said = {("", "")} if expected and minute in none_left else expected
            if alarm != {alarm_of(d) for d in expected} or rule != said:
                wrong[(name, minute)] = (sorted(a.removeprefix(ALARM) for a in alarm), sorted(rule))
    return wrong


def _others(fleet: Fleet, pools: dict) -> dict:
    """{(story, minute): what the rule said} on the other cluster's Prometheus where it differs from _other_truth."""
    return {(name, minute): sorted(fleet.fired[name].get(minute, set()))
            for name, truth in _other_truth(pools).items() for minute in range(1, STEPS // 2 + 1)
            if truth(minute) is not None and fleet.fired[name].get(minute, set()) != truth(minute)}


MIXED_STORIES = tuple(name for name in STORIES
                      if name != "CloudWatch agent stopped" and "honor_labels" not in STORIES[name])
A_POOLS = {OPERATOR: NODES}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Fleet:
    return _fleet(tmp_path_factory, MIXED_FLEET, {**{name: _rule_series(STORIES[name]) for name in MIXED_STORIES},
                                                  **_other(A_POOLS, operator=True)})


def test_in_a_mixed_fleet_the_rule_and_the_alarm_agree_minute_by_minute(mixed):
    """The same fleet over the stories of test_data_missing_daemonsets (healthy, a pool's pod gone in either
    namespace, every node group at zero, pool a rolling out alone or while pool b's pod is gone, kube-state-metrics'
    pod replaced): both forms say what the truth says at every minute judged. With kube-state-metrics' pod replaced at
    minute 31 the rule paused at 31 and 36 (it judged a DaemonSet by its own counts only where every cluster names
    it, and no two clusters here name the same)."""
    stories = tuple(name for name in MIXED_STORIES if name not in (
        "pool b removed with its DaemonSet", "pool b's exporter pod gone, then its DaemonSet deleted"))
    assert _twins(mixed, stories) == {}


def test_in_a_mixed_fleet_the_rule_fires_for_a_deleted_daemonset_its_cluster_names(mixed):
    """gpu-cluster's pool b DaemonSet deleted (its node pool removed; or its pod gone at 20, the release uninstalled
    at 25), in a fleet whose cluster a runs the GPU operator's exporter: pool b's alarm is in ALARM from minute 30 to
    40, as in a one-cluster fleet, and the rule on gpu-cluster's Prometheus must fire for pool b the same minutes. It
    read a named DaemonSet's missing counts only for the DaemonSets every cluster names (_named_selectors), and no
    two clusters of a mixed fleet name the same one: it stayed silent (removed: 30-39; gone then deleted: from 30).
    On cluster a's Prometheus, which holds none of gpu-cluster's DaemonSets, the same rules file never judges them:
    quiet while healthy (to 20, from 46); its own DaemonSet reinstalled, it fires for that one (30-34, then the
    case-1 alert)."""
    stories = ("healthy", "pool b removed with its DaemonSet", "pool b's exporter pod gone, then its DaemonSet deleted")
    assert (_twins(mixed, stories), _others(mixed, A_POOLS)) == ({}, {})


# gpu-cluster names one exporter DaemonSet (pool b's Helm release); cluster c, of the GPU operator, lists a second
# DaemonSet of its own: the fleet then has an alarm per DaemonSet (several_daemonsets), gpu-cluster's too
ONE_NAMED_BESIDE_MORE = (f"clusters:\n  - name: {CLUSTER}\n    region: us-east-1\n"
                         f"    exporter: {{deployment: helm, namespace: {B[0]}, daemonset: {B[1]}}}\n"
                         "  - name: c\n    region: us-east-1\n"
                         "    exporter: {namespace: nvidia-gpu, more_daemonsets: [monitoring/dcgm-exporter]}\n")
C_POOLS = {("nvidia-gpu", "nvidia-dcgm-exporter"): NODES[:1], ("monitoring", "dcgm-exporter"): NODES[1:]}


@pytest.fixture(scope="module")
def one_beside_more(tmp_path_factory) -> Fleet:
    return _fleet(tmp_path_factory, ONE_NAMED_BESIDE_MORE,
                  {**{name: _rule_series(story) for name, story in ONE_STORIES.items()}, **_other(C_POOLS)})


def test_a_cluster_naming_one_daemonset_beside_a_cluster_naming_two_fires_with_its_alarm_while_ksm_is_replaced(
        one_beside_more):
    """gpu-cluster's only exporter DaemonSet's pod gone from minute 20 to 40 while kube-state-metrics' pod is replaced at
    31 (another `instance`, one scrape missed): its alarm is in ALARM 30-39, and so must the rule be, as in a fleet
    where no cluster lists more_daemonsets (test_with_one_daemonset_named_the_rule_fires_when_the_alarm_fires). It
    paused at 31 and 36: a DaemonSet was judged by its own counts over the period only where every cluster names it,
    else where labelled at the period's end, which kube-state-metrics' gap left unlabelled."""
    name = "pool b's exporter pod gone while kube-state-metrics is replaced"
    # gpu-cluster's alarm keeps the cluster's name (it names one DaemonSet); the rule names the DaemonSet
    assert _twins(one_beside_more, (name,), ONE_STORIES, {name: (B,)}, lambda daemonset: ALARM) == {}


def test_a_cluster_naming_one_daemonset_beside_a_cluster_naming_two_fires_with_its_alarm_when_it_is_deleted(
        one_beside_more):
    """gpu-cluster's only exporter DaemonSet: its pod gone at minute 20, the release uninstalled at 25 (a reinstall),
    back at 40, in a fleet where cluster c lists a second DaemonSet of its own. Its alarm is in ALARM 30-39, as in a
    fleet where no cluster lists more_daemonsets, where the rule fires 30-39 too
    (test_with_one_daemonset_named_the_rule_fires_when_the_alarm_fires): for the DaemonSet until 35, then the
    cluster's case-1 alert (no exporter DaemonSet labelled in either period). The rule fired from 35 only: the deleted
    DaemonSet's gone counts were read only where every cluster names it. On c's Prometheus the same rules file is
    quiet while c is healthy and names c's DaemonSet when c's is reinstalled: its other DaemonSet still there, the
    rule judges it there and not on gpu-cluster's (a DaemonSet only c names), so c's second one fires 30-39."""
    name = "pool b's exporter pod gone, then its DaemonSet deleted"
    assert (_twins(one_beside_more, (name,), ONE_STORIES, {name: (B,)}, lambda daemonset: ALARM, NONE_LEFT),
            _others(one_beside_more, C_POOLS)) == ({}, {})


# two Helm clusters whose releases are named differently, each named in its clusters[].exporter.daemonset (README's
# data-missing situations table): one DaemonSet per cluster, none listed in more_daemonsets
TWO_RELEASES = (f"clusters:\n  - name: {CLUSTER}\n    region: us-east-1\n    exporter: {{daemonset: {B[1]}}}\n"
                "  - name: c\n    region: us-east-1\n    exporter: {daemonset: ml-b-dcgm-exporter}\n"
                f"exporter: {{deployment: helm, namespace: {B[0]}}}\n")
ML_B_POOLS = {(B[0], "ml-b-dcgm-exporter"): NODES}


def test_two_clusters_naming_different_releases_fire_with_the_alarm_when_one_is_reinstalled(tmp_path_factory):
    """gpu-cluster's release: its pod gone at minute 20, uninstalled at 25, back at 40. Its alarm is in ALARM 30-39;
    the rule fired 35-39 only (case 1 alone): c514efd's join of the named DaemonSet's gone counts to its earlier period
    was made only for a DaemonSet every cluster names. Now it fires for the release from 30, then the cluster's case-1
    alert; on c's Prometheus, for c's release alone when it is reinstalled, never for gpu-cluster's."""
    name = "pool b's exporter pod gone, then its DaemonSet deleted"
    fleet = _fleet(tmp_path_factory, TWO_RELEASES, {name: _rule_series(ONE_STORIES[name]), **_other(ML_B_POOLS)})
    assert (_twins(fleet, (name,), ONE_STORIES, {name: (B,)}, lambda daemonset: ALARM, NONE_LEFT),
            _others(fleet, ML_B_POOLS)) == ({}, {})

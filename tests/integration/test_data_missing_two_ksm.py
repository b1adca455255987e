"""The agent alarm with two kube-state-metrics pods in the agent's reach: each one's reads count.

The agent alarm counts the datapoints of kube-state-metrics' desired count a 5-minute period holds: "fewer than 5
of its 10 scrapes" at 30 s. The agent's kube-state-metrics job keeps every pod labelled
app.kubernetes.io/name=kube-state-metrics on port 8080 in any namespace (kube_state_metrics.namespace: null, the
default): with two such pods (kube-state-metrics run with two replicas, or a second install in another namespace)
each scrape round brings two datapoints. An agent in a crash loop that reads 4 of a period's 10 rounds (running two
minutes of every five) has most GPU data of the period missing, which is what the alarm is for (docs/alarms.md:
"CloudWatch agent in a crash loop ... ALARM: the agent alarm"). Counted in one [ClusterName] metric (a standard alarm
on its SampleCount) the two pods' 8 datapoints passed the threshold and it never fired; counted per pod
(data_missing.agent_set, a GROUP BY alarm) it fires at the minutes of the truth, with one pod or two, on both agent
pipelines and where a cluster names several exporter DaemonSets (each DaemonSet's count its own metric). A pod of
the two in a crash loop, the agent running, is kube-state-metrics answering under half: the alarm names that pod, as
the rule's twin names its target.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.integration.test_data_missing import (AGENT_ALARM, AGENT_FILE, AGENT_STEPS, EXPORTER, LOST_NODES,
                                                 STEP, _data_missing_rule, _in_alarm, _labels, _one_gpu_page,
                                                 _promtool_fired, _promtool_values, _read_in_under_half, _reporting,
                                                 _up_values)
from tests.support import cloudwatch_eval, kube_state
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, scrape_jobs
from tests.support.dcgm_fleet import discovered, target_labels

SECOND_KSM = {**kube_state.KSM_POD, "__address__": "10.0.3.7:8080", "__meta_kubernetes_namespace": "kube-system",
              "__meta_kubernetes_pod_name": "kube-state-metrics-7c5b"}
FIRST_NAME = f"{kube_state.KSM_POD['__meta_kubernetes_namespace']}/{kube_state.KSM_POD['__meta_kubernetes_pod_name']}"
SECOND_NAME = "kube-system/kube-state-metrics-7c5b"
POOL_B = {"namespace": "gpu-operator", "daemonset": "pool-b-dcgm-exporter"}
SETTINGS = {"otel": "", "classic": "agent:\n  pipeline: classic\n",
            "two DaemonSets": "exporter:\n  more_daemonsets: [pool-b-dcgm-exporter]\n"}


@pytest.fixture(scope="module", params=list(SETTINGS))
def files(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("settings")
    (folder / "gpudash.yaml").write_text(SETTINGS[request.param])
    return encode(build(load_project(folder / "gpudash.yaml")))


def _up_two_minutes_in_five(k: int) -> bool:
    """30 s steps: always before minute 20 and from minute 40, then two minutes of every five (4 of 10 rounds)."""
    return not 40 <= k < 80 or (k - 40) % 10 >= 6


def _always(k: int) -> bool:
    return True


def _agent_alarm(files) -> dict:
    (request,) = [i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if i["Request"]["AlarmName"] == AGENT_ALARM]
    return request


def _points(files, agent_up, first_up, second_up):
    """What the agent publishes of four one-GPU nodes and kube-state-metrics pods answering as `first_up` and
    `second_up` say (None: no second pod) at the 30 s steps the agent runs (`agent_up`)."""
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    more = ((POOL_B, 2, 2),)
    scrapes = [Scrape(k * STEP, _one_gpu_page(node), target_labels(job, node))
               for node in LOST_NODES[:2] for k in range(AGENT_STEPS) if agent_up(k)]
    for k in range(AGENT_STEPS):
        if not agent_up(k):
            continue
        for pod, up, offset in ((kube_state.KSM_POD, first_up, 0), (SECOND_KSM, second_up, 1)):
            if up is None:
                continue
            labels = discovered(ksm_job, pod)
            page = kube_state.scrape(ksm_job, k * STEP + offset, EXPORTER, 2, 2, 2, more=more).payload if up(k) else ""
            scrapes.append(Scrape(k * STEP + offset, page, labels))
    return Agent(config, job, others=[ksm_job]).run(scrapes)


def _fired(files, points) -> set[int]:
    """The minutes at whose end the agent alarm is in ALARM."""
    request = _agent_alarm(files)
    return {m for m in range(1, AGENT_STEPS // 2 + 1) if _in_alarm([request], points, m * 60)}


@pytest.mark.parametrize("replicas", [1, 2])
def test_a_crash_looping_agent_fires_the_agent_alarm_at_the_truths_minutes_with_one_or_two_kube_state_metrics(
        files, replicas):
    points = _points(files, _up_two_minutes_in_five, _always, _always if replicas == 2 else None)
    truth = {m for m in range(1, AGENT_STEPS // 2 + 1) if _read_in_under_half(_up_two_minutes_in_five, m)}
    assert truth and _fired(files, points) == truth
    # each pod a contributor, named by its namespace and name
    request = _agent_alarm(files)
    states = cloudwatch_eval.alarm(request, points, min(truth) * 60)
    named = {dict(key)["kube_state_metrics_pod"] for key, state in states.items() if state == "ALARM"}
    assert named == ({FIRST_NAME, SECOND_NAME} if replicas == 2 else {FIRST_NAME})


def test_one_of_two_kube_state_metrics_pods_answering_under_half_fires_for_that_pod(files, tmp_path):
    """The agent running, the second kube-state-metrics pod answering two minutes of every five from minute 20 to 40:
    kube-state-metrics answering under half its scrapes, which the rule's twin fires for (its target's `up`). The
    agent alarm fires at the minutes of the truth, for that pod alone; the first pod's reads do not hide it. The twin
    fires at the truth's minutes as a PromQL range holds the scrapes (the same but minute 40, on a period's edge)."""
    points = _points(files, _always, _always, _up_two_minutes_in_five)
    truth = {m for m in range(1, AGENT_STEPS // 2 + 1) if _read_in_under_half(_up_two_minutes_in_five, m)}
    assert truth and _fired(files, points) == truth
    states = cloudwatch_eval.alarm(_agent_alarm(files), points, min(truth) * 60)
    assert {dict(key)["kube_state_metrics_pod"] for key, state in states.items() if state == "ALARM"} == {SECOND_NAME}
    served = ((EXPORTER, kube_state.OPERATOR_LABELS), (POOL_B, None))
    targets = [(kube_state.KSM_POD["__address__"], "1" * AGENT_STEPS, served),
               (SECOND_KSM["__address__"],
                "".join("1" if _up_two_minutes_in_five(k) else "0" for k in range(AGENT_STEPS)), served)]
    ranged = {m for m in range(1, AGENT_STEPS // 2 + 1) if _read_in_under_half(_up_two_minutes_in_five, m, shift=1)}
    assert ranged == truth - {40} and _targets_fired(files, tmp_path, targets) == ranged


def test_two_healthy_kube_state_metrics_pods_and_one_replaced_fire_nothing(files):
    """Both pods answering every scrape, then the first replaced at minute 30 (its series ends, a new pod's begins
    under another name): one short period beside an empty one for each, never two running: nothing fires."""
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    new = {**kube_state.KSM_POD, "__address__": "10.0.2.11:8080",
           "__meta_kubernetes_pod_name": "kube-prometheus-stack-kube-state-metrics-8c2a"}
    scrapes = [Scrape(k * STEP, _one_gpu_page(node), target_labels(job, node))
               for node in LOST_NODES[:2] for k in range(AGENT_STEPS)]
    for k in range(AGENT_STEPS):
        page = kube_state.scrape(ksm_job, k * STEP, EXPORTER, 2, 2, 2, more=((POOL_B, 2, 2),)).payload
        scrapes += [Scrape(k * STEP, page, discovered(ksm_job, kube_state.KSM_POD if k < 60 else new)),
                    Scrape(k * STEP + 1, page, discovered(ksm_job, SECOND_KSM))]
    points = Agent(config, job, others=[ksm_job]).run(scrapes)
    assert _fired(files, points) == set()


def _in_alarm_at_any_length(files, points) -> set[int]:
    """The minutes at whose end the agent alarm is in ALARM at any length of the evaluation range."""
    request = _agent_alarm(files)
    return {m for m in range(1, AGENT_STEPS // 2 + 1)
            if "ALARM" in {state for judged in cloudwatch_eval.alarm_ranges(request, points, m * 60).values()
                           for state in judged.values()}}


def _replaced_points(files, pod_at, answering=_always):
    """Two GPU nodes and one kube-state-metrics pod at a time (`pod_at(k)`: its discovery labels at step k), answering
    as `answering` says, the agent running."""
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    scrapes = [Scrape(k * STEP, _one_gpu_page(node), target_labels(job, node))
               for node in LOST_NODES[:2] for k in range(AGENT_STEPS)]
    for k in range(AGENT_STEPS):
        page = kube_state.scrape(ksm_job, k * STEP, EXPORTER, 2, 2, 2, more=((POOL_B, 2, 2),)).payload \
            if answering(k) else ""
        scrapes.append(Scrape(k * STEP, page, discovered(ksm_job, pod_at(k))))
    return Agent(config, job, others=[ksm_job]).run(scrapes)


NEW_PODS = [{**kube_state.KSM_POD, "__address__": f"10.0.2.{11 + i}:8080",
             "__meta_kubernetes_pod_name": f"kube-prometheus-stack-kube-state-metrics-8c2a-{name}"}
            for i, name in enumerate(("x1", "x2"))]


def _twin_fired(files, folder, pod_at, answering=_always) -> set[int]:
    """The minutes at which the rule fires (promtool) over the story of _replaced_points: each kube-state-metrics pod a
    target of its own (its `up`, 0 where it did not answer, and its counts where it did), two GPU nodes reporting."""
    served = ((EXPORTER, kube_state.OPERATOR_LABELS), (POOL_B, None))
    return _targets_fired(files, folder, [
        (pod["__address__"], "".join(("1" if answering(k) else "0") if pod_at(k) is pod else "."
                                     for k in range(AGENT_STEPS)), served)
        for pod in (kube_state.KSM_POD, *NEW_PODS)])


def _targets_fired(files, folder, targets) -> set[int]:
    """The minutes at which the rule fires (promtool), two GPU nodes reporting, over kube-state-metrics `targets`: each
    (its address, its scrapes at each 30 s step: 1 answered, 0 not, . no target, the exporter DaemonSets whose counts
    it serves: each (namespace and name, its identifying labels or None))."""
    rule = _data_missing_rule(files, folder)
    series = []
    for address, line, served in targets:
        target = _labels({"job": "kube-state-metrics", "instance": address})
        series.append({"series": f"up{{{target}}}", "values": _up_values(line)})
        for daemonset, labels in served:
            counts = f"{target},{_labels(daemonset)}"
            series += [{"series": f"{metric}{{{counts}}}", "values": _promtool_values(line, "2")}
                       for metric in (kube_state.DESIRED, kube_state.AVAILABLE, kube_state.UPDATED)]
            if labels:
                series.append({"series": f"{kube_state.LABELS}{{{counts},{_labels(labels)}}}",
                               "values": _promtool_values(line, "1")})
    return _promtool_fired(folder, rule, series + _reporting(LOST_NODES[:2]), AGENT_STEPS)


def _replaced_at_30(k: int) -> dict:
    """kube-state-metrics' pod, replaced at minute 30 (30 s steps)."""
    return kube_state.KSM_POD if k < 60 else NEW_PODS[0]


def test_a_crash_looping_kube_state_metrics_pod_replaced_by_a_healthy_one_clears_as_its_twin(files, tmp_path):
    """kube-state-metrics answering a minute of every five from minute 20 (its container restarting), its pod then
    replaced at minute 30 by a healthy one answering every scrape: two short periods, which neither form fires for at
    three periods running (the rule's twin fired at minutes 29 and 30 at two; the agent alarm's old contributor, its
    last two datapoints breaching, was in ALARM at 34 and 35 at every length of the evaluation range, and every five
    minutes until 55 at some)."""
    def answering(k: int) -> bool:
        return k >= 60 or not 40 <= k or (k - 40) % 10 < 2
    assert _in_alarm_at_any_length(files, _replaced_points(files, _replaced_at_30, answering)) == set()
    assert _twin_fired(files, tmp_path, _replaced_at_30, answering) == set()


def test_a_kube_state_metrics_pod_living_four_minutes_fires_nothing(files, tmp_path):
    """kube-state-metrics' pod replaced at minute 30 and its new pod replaced again at minute 34, every scrape
    answering and the agent running: no GPU data is missing, and no alarm fires (nor does the rule's twin: each
    target's `up` is 1 at every scrape). The 4-minute pod is short of a period's scrapes in its first and last
    period, which at two periods running put its contributor in ALARM at minutes 37 and 42 at every length of the
    evaluation range."""
    def pod_at(k: int) -> dict:
        return kube_state.KSM_POD if k < 60 else NEW_PODS[0] if k < 68 else NEW_PODS[1]
    assert _in_alarm_at_any_length(files, _replaced_points(files, pod_at)) == set()
    assert _twin_fired(files, tmp_path, pod_at) == set()


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_sharded_kube_state_metrics_shard_in_a_crash_loop_fires_for_the_daemonset_it_serves(tmp_path, pipeline):
    """kube-state-metrics sharded in two (a StatefulSet's kube-state-metrics-0 and -1, each serving the objects its
    shard owns): the operator's exporter DaemonSet from shard 0, pool b's from shard 1. Shard 1 answering two minutes
    of every five from minute 20 to 40, the agent running: pool b's counts reach CloudWatch under half the time, and
    the rule's twin fires for shard 1's target (its `up`). The agent alarm fires at the minutes of the truth for shard 1
    and pool b; it read the first DaemonSet's count alone, which shard 1 does not serve, and no alarm fired."""
    (tmp_path / "gpudash.yaml").write_text(SETTINGS["two DaemonSets"] + SETTINGS[pipeline])
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    shards = [{**kube_state.KSM_POD, "__address__": f"10.0.2.{9 + i}:8080",
               "__meta_kubernetes_pod_name": f"kube-state-metrics-{i}"} for i in range(2)]
    pages = [kube_state.payload(EXPORTER, 2, 2), kube_state.payload(None, 0, 0, more=((POOL_B, 2, 2),))]
    scrapes = [Scrape(k * STEP, _one_gpu_page(node), target_labels(job, node))
               for node in LOST_NODES[:2] for k in range(AGENT_STEPS)]
    for k in range(AGENT_STEPS):
        scrapes += [Scrape(k * STEP, pages[0], discovered(ksm_job, shards[0])),
                    Scrape(k * STEP + 1, pages[1] if _up_two_minutes_in_five(k) else "",
                           discovered(ksm_job, shards[1]))]
    points = Agent(config, job, others=[ksm_job]).run(scrapes)
    truth = {m for m in range(1, AGENT_STEPS // 2 + 1) if _read_in_under_half(_up_two_minutes_in_five, m)}
    assert truth and _fired(files, points) == truth
    states = cloudwatch_eval.alarm(_agent_alarm(files), points, min(truth) * 60)
    assert [dict(key) for key, state in states.items() if state == "ALARM"] == [
        {"kube_state_metrics_pod": "monitoring/kube-state-metrics-1", **{k: POOL_B[k] for k in ("namespace", "daemonset")}}]


def test_the_twin_fires_for_a_sharded_kube_state_metrics_shard_serving_a_named_daemonset_alone(tmp_path):
    """The story above on Prometheus: shard 1 serves pool b alone, a DaemonSet the settings name whose labels do not
    identify it as an exporter (its own release's), answering two minutes of every five from minute 20 to 40. The
    rule's twin fires for its target at the minutes of the truth as a PromQL range holds the scrapes, as the agent
    alarm does (it read the identifying labels alone, and fired nothing)."""
    (tmp_path / "gpudash.yaml").write_text(SETTINGS["two DaemonSets"])
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    shards = [("10.0.2.9:8080", "1" * AGENT_STEPS, ((EXPORTER, kube_state.OPERATOR_LABELS),)),
              ("10.0.2.10:8080", "".join("1" if _up_two_minutes_in_five(k) else "0" for k in range(AGENT_STEPS)),
               ((POOL_B, None),))]
    truth = {m for m in range(1, AGENT_STEPS // 2 + 1) if _read_in_under_half(_up_two_minutes_in_five, m, shift=1)}
    assert truth and _targets_fired(files, tmp_path, shards) == truth


def _crash_looping_three_periods(k: int) -> bool:
    """30 s steps: kube-state-metrics answering a minute of every five from minute 15, a healthy pod from minute 30."""
    return k >= 60 or not 30 <= k or (k - 30) % 10 < 2


def test_a_kube_state_metrics_pod_crash_looping_three_periods_fires_both_forms(files, tmp_path):
    """kube-state-metrics answering a minute of every five from minute 15, its pod replaced at minute 30 by a healthy
    one: three periods each holding some of its reads and under half, a real gap, which both forms fire for at minutes
    29 and 30; the twin stops once its latest period holds no answer of the old target (31)."""
    points = _replaced_points(files, _replaced_at_30, _crash_looping_three_periods)
    request = _agent_alarm(files)
    assert {m for m in range(1, 31) if _in_alarm([request], points, m * 60)} == {29, 30}
    assert _twin_fired(files, tmp_path, _replaced_at_30, _crash_looping_three_periods) == {29, 30}


@pytest.mark.xfail(strict=True, reason=(
    "a kube-state-metrics pod gone keeps its last datapoints in the agent alarm's evaluation range: one in a crash "
    "loop over three periods (minute 15 to 30) replaced by a healthy pod at minute 30 leaves its contributor in ALARM "
    "at minutes 34 and 35 at every length of the range, and every five minutes until 55 at some, while the rule's "
    "twin stopped after minute 30 (its latest period holds no answer of the old target); a contributor with no "
    "datapoint in its latest periods is judged on its older ones"))
def test_a_kube_state_metrics_pod_crash_looping_three_periods_then_replaced_clears_as_its_twin(files):
    """The story above: from minute 31 the twin fires nothing, and neither should the agent alarm."""
    points = _replaced_points(files, _replaced_at_30, _crash_looping_three_periods)
    assert {m for m in _in_alarm_at_any_length(files, points) if m > 30} == set()

"""The agent alarm with two kube-state-metrics pods in the agent's reach: each one's reads count.

The agent alarm counts the datapoints of kube-state-metrics' desired count (its SampleCount) a 5-minute period holds:
"fewer than 5 of its 10 scrapes" at 30 s. The agent's kube-state-metrics job keeps every pod labelled
app.kubernetes.io/name=kube-state-metrics on port 8080 in any namespace (kube_state_metrics.namespace: null, the
default): with two such pods (kube-state-metrics run with two replicas, or a second install in another namespace)
each scrape round brings two datapoints. An agent in a crash loop that reads 4 of a period's 10 rounds (running two
minutes of every five) has most GPU data of the period missing, which is what the alarm is for (docs/alarms.md: "CloudWatch agent
in a crash loop ... ALARM: the agent alarm"); with one kube-state-metrics pod it fires at the minutes of the truth,
with two its 8 datapoints pass the threshold and it never fires. Pinned: the truth is asserted, a strict xfail.
"""

from __future__ import annotations

import pytest

from tests.integration.test_data_missing import (AGENT_ALARM, AGENT_FILE, AGENT_STEPS, EXPORTER, LOST_NODES, STEP,
                                                 _in_alarm, _one_gpu_page, _read_in_under_half, _rule_alarms,
                                                 generated)  # noqa: F401 (a fixture)
from tests.support import kube_state
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, scrape_jobs
from tests.support.dcgm_fleet import discovered, target_labels

SECOND_KSM = {**kube_state.KSM_POD, "__address__": "10.0.3.7:8080", "__meta_kubernetes_namespace": "kube-system",
              "__meta_kubernetes_pod_name": "kube-state-metrics-7c5b"}


def _up_two_minutes_in_five(k: int) -> bool:
    """30 s steps: always before minute 20 and from minute 40, then two minutes of every five (4 of 10 rounds)."""
    return not 40 <= k < 80 or (k - 40) % 10 >= 6


def _fired(files, replicas: int) -> tuple[set[int], set[int]]:
    """(the minutes at whose end the agent alarm is in ALARM, the truth's) for the crash-looping agent with
    `replicas` kube-state-metrics pods in its job's reach."""
    answering = {node: "".join("1" if _up_two_minutes_in_five(k) else "." for k in range(AGENT_STEPS))
                 for node in LOST_NODES[:2]}
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    scrapes = [Scrape(k * STEP, _one_gpu_page(node), target_labels(job, node))
               for node, line in answering.items() for k, c in enumerate(line) if c == "1"]
    for k in range(AGENT_STEPS):
        if _up_two_minutes_in_five(k):
            scrapes.append(kube_state.scrape(ksm_job, k * STEP, EXPORTER, 2, 2, 2))
            if replicas == 2:
                first = kube_state.scrape(ksm_job, k * STEP + 1, EXPORTER, 2, 2, 2)
                scrapes.append(Scrape(first.timestamp, first.payload, discovered(ksm_job, SECOND_KSM)))
    points = Agent(config, job, others=[ksm_job]).run(scrapes)
    requests = [r for r in _rule_alarms(files) if r["AlarmName"] == AGENT_ALARM]
    truth = {m for m in range(1, AGENT_STEPS // 2 + 1) if _read_in_under_half(_up_two_minutes_in_five, m)}
    fired = {m for m in range(1, AGENT_STEPS // 2 + 1) if _in_alarm(requests, points, m * 60)}
    return fired, truth


def test_one_kube_state_metrics_pod_the_alarm_fires_at_the_truths_minutes(generated):  # noqa: F811
    fired, truth = _fired(generated[1], 1)
    assert truth and fired == truth


@pytest.mark.xfail(strict=True, reason="two kube-state-metrics pods in the agent's reach give two datapoints per "
                                       "scrape round: 4 reads of 10 count 8, over the alarm's 5 (it never fires); one "
                                       "metric's SampleCount cannot tell two targets' datapoints from one's rounds "
                                       "(docs/alarms.md says so, and to point kube_state_metrics.namespace at one)")
def test_two_kube_state_metrics_pods_the_alarm_still_fires_at_the_truths_minutes(generated):  # noqa: F811
    fired, truth = _fired(generated[1], 2)
    assert truth and fired == truth

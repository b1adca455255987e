"""The data-missing rule's count of a node's exporter scrapes and its CloudWatch twin per node agree when the node's
exporter pod changes: both count the node's scrapes, whatever pod answered them.

The per-node alarm sums each scrape's flag over the node ([ClusterName, node]); the rule counted each exporter target
(pod) apart. An exporter answering without DCGM series, deleted by hand and recreated still broken, left the node
without GPU data 17 of 20 scrapes: CloudWatch fired and the rule cleared at the delete and never fired (8 and 9
scrapes, neither over 10). Now the rule counts each node's scrapes too.

Two pods on one node at once (a DaemonSet rollout with maxSurge) add both pods' scrapes on both sides: 6 + 6 failed
scrapes of 40 fire, though the node had data from one pod or the other at nearly every scrape. One Metrics Insights
aggregate of one flag per scrape cannot tell that from one pod failing 12 of 20, so the alarm's description and the
rule's documentation say it; test_two_flaky_pods_of_a_surge_are_not_missing_data pins the truth (strict xfail).

Each story is an hour of two nodes at 30 s scrapes, the first node healthy; the second node's pods answer ("1"), fail
("0") or answer without DCGM series ("e"). The count at minute m: the node's scrapes taken in (m - 10 min, m] that
brought no GPU data, more than 10 fires. The CloudWatch alarms are evaluated over what the agent model publishes, the
rule by promtool over the same scrapes, each minute of the hour.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.integration.test_data_missing import (AGENT_FILE, EMPTY, EXPORTER, NODES, PER_NODE_ALARM, REASON,
                                                 _data_missing_rule, _in_alarm, _labels, _one_gpu_page, _rule_alarms,
                                                 generated)  # noqa: F401
from tests.support import kube_state
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, scrape_jobs
from tests.support.dcgm_fleet import EXPORTER_NAMESPACE, discovered
from tests.support.promtool_rules import SAMPLES, promtool_test

HOUR, WINDOW, INTERVAL = 3600, 600, 30
LIMIT = WINDOW / INTERVAL / 2  # more of the node's scrapes than this without GPU data fire


@dataclass(frozen=True)
class Pod:
    name: str
    address: str
    revision: str
    phase: int  # seconds after each multiple of the interval at which it is scraped
    start: int  # its first scrape at or after this
    end: int  # none at or after this
    did: object  # t -> "1", "0" or "e"

    def times(self) -> list[int]:
        first = self.start + (self.phase - self.start) % INTERVAL
        return list(range(first, min(self.end, HOUR), INTERVAL))


def _healthy(t: int) -> str:
    return "1"


def _every_third_of(start: int, end: int, offset: int):
    """Fails scrapes 0, 3, 6, ... (from `offset`) between start and end: 6 or 7 of the 20 of a 10-minute window."""
    return lambda t: "0" if start <= t < end and (t // INTERVAL + offset) % 3 == 0 else "1"


NODE = NODES[1]
STORIES = {
    # answering without DCGM series from 20:00; deleted at 24:00 (kubectl delete pod), recreated at 24:30, still
    # empty until 29:00: the node's window holds 17 empty scrapes of 19
    "an empty exporter deleted by hand and recreated still empty": (
        Pod("nvidia-dcgm-exporter-a", "10.0.1.20", "5d8f7c9b6d", 13, 0, 1440,
            lambda t: "e" if t >= 1200 else "1"),
        Pod("nvidia-dcgm-exporter-b", "10.0.1.21", "5d8f7c9b6d", 23, 1470, HOUR,
            lambda t: "e" if t < 1740 else "1")),
    # failing from 20:00 to 24:00, replaced by the rollout of a new revision at 24:00 that fails until 28:30
    "a failing exporter replaced by a rollout whose pod fails too": (
        Pod("nvidia-dcgm-exporter-a", "10.0.1.20", "5d8f7c9b6d", 13, 0, 1440,
            lambda t: "0" if t >= 1200 else "1"),
        Pod("nvidia-dcgm-exporter-c", "10.0.1.22", "7c4f6d9a8b", 7, 1440, HOUR,
            lambda t: "0" if t < 1710 else "1")),
    # one pod throughout, empty 7 minutes: the per-target count it always was
    "one exporter empty for 7 minutes": (
        Pod("nvidia-dcgm-exporter-a", "10.0.1.20", "5d8f7c9b6d", 13, 0, HOUR,
            lambda t: "e" if 1200 <= t < 1620 else "1"),),
}
# a rollout with maxSurge: the new pod from 20:00, the old one deleted at 30:00; each fails one scrape in three of
# the overlap, never at the same scrape: 6 + 7 of the node's 40 scrapes of the window, the node's GPUs read at each
SURGE = (Pod("nvidia-dcgm-exporter-a", "10.0.1.20", "5d8f7c9b6d", 13, 0, 1800, _every_third_of(1200, 1800, 0)),
         Pod("nvidia-dcgm-exporter-d", "10.0.1.23", "7c4f6d9a8b", 23, 1200, HOUR, _every_third_of(1200, 1800, 1)))


def _target(job: dict, node: str, pod: Pod) -> dict[str, str]:
    """The labels the generated scrape job gives an exporter pod as Kubernetes SD meets it."""
    return discovered(job, {"__address__": f"{pod.address}:9400", "__meta_kubernetes_namespace": EXPORTER_NAMESPACE,
                            "__meta_kubernetes_pod_name": pod.name, "__meta_kubernetes_pod_node_name": node,
                            "__meta_kubernetes_pod_container_port_number": "9400",
                            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
                            "__meta_kubernetes_pod_controller_kind": "DaemonSet",
                            "__meta_kubernetes_pod_label_controller_revision_hash": pod.revision,
                            "__meta_kubernetes_pod_label_app_kubernetes_io_name": "dcgm-exporter"})


FIRST = Pod("nvidia-dcgm-exporter-1", "10.0.1.1", "5d8f7c9b6d", 17, 0, HOUR, _healthy)  # the first node's


def _count(pods: tuple[Pod, ...], minute: int) -> int:
    """The node's scrapes of (minute - 10 min, minute] that brought no GPU data, whatever pod answered them."""
    return sum(pod.did(t) != "1" for pod in pods for t in pod.times() if minute * 60 - WINDOW < t <= minute * 60)


def _truth(pods: tuple[Pod, ...]) -> dict[int, bool]:
    return {m: _count(pods, m) > LIMIT for m in range(1, HOUR // 60 + 1)}


def _cloudwatch_minutes(files, pods: tuple[Pod, ...]) -> dict[int, dict]:
    """{minute: {alarm: the nodes in ALARM}} of the rule's CloudWatch alarms over what the agent publishes."""
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    scrapes = [kube_state.scrape(ksm_job, t, EXPORTER, 2, 2, 2) for t in range(3, HOUR, INTERVAL)]
    for node, on_node in ((NODES[0], (FIRST,)), (NODE, pods)):
        for pod in on_node:
            labels = _target(job, node, pod)
            scrapes += [Scrape(t, {"1": _one_gpu_page(node), "0": "", "e": EMPTY}[pod.did(t)], labels)
                        for t in pod.times()]
    points = Agent(config, job, others=[ksm_job]).run(sorted(scrapes, key=lambda s: s.timestamp))
    requests = _rule_alarms(files)
    return {m: {alarm: sorted(dict(key)["node"] for key in keys)
                for alarm, keys in _in_alarm(requests, points, m * 60).items()}
            for m in range(1, HOUR // 60 + 1)}


@pytest.mark.parametrize("name", STORIES)
def test_the_per_node_alarm_fires_at_the_minutes_of_the_nodes_count(generated, name):
    _, files = generated
    truth = _truth(STORIES[name])
    assert any(truth.values())
    fired = _cloudwatch_minutes(files, STORIES[name])
    wrong = {m: fired[m] for m, fires in truth.items() if fired[m] != ({PER_NODE_ALARM: [NODE]} if fires else {})}
    assert wrong == {}, sorted(m for m, fires in truth.items() if fires)


def _values(pod: Pod, value) -> str:
    """promtool values at 1 s steps: `value(t)` at each of the pod's scrapes (None: no sample), a staleness marker
    at the first scrape time after its last (its target gone from discovery), none between."""
    tokens, last = [], 0
    times = pod.times()
    ended = [times[-1] + INTERVAL] if pod.end < HOUR else []
    for t in times + ended:
        sample = value(t) if t in times else "stale"
        tokens += [f"_x{t - last}"] if t > last else []
        tokens.append(sample if sample is not None else "_")
        last = t + 1
    return " ".join(tokens)


def _pod_series(node: str, pod: Pod, job: str = "dcgm-exporter") -> list[dict]:
    labels = _labels({"job": job, "instance": f"{pod.address}:9400", "node": node, "exporter_pod": pod.name})
    return [{"series": f"up{{{labels}}}", "values": _values(pod, lambda t: "0" if pod.did(t) == "0" else "1")},
            {"series": f"{SAMPLES}{{{labels}}}", "values": _values(pod, lambda t: "1" if pod.did(t) == "1" else "0")},
            {"series": f'DCGM_FI_DEV_GPU_TEMP{{{labels},gpu="0"}}',
             "values": _values(pod, lambda t: "60" if pod.did(t) == "1" else None)}]


def _rule_test(rule: dict, name: str, pods: tuple[Pod, ...]) -> dict:
    """A promtool group of the story, judged each minute of the hour against the count: the node's alert (its job and
    node, no pod: the count is the node's) exactly at the minutes of the count, and so of the per-node alarm."""
    ksm = f'job="kube-state-metrics",instance="10.0.2.9:8080",{_labels(EXPORTER)}'
    always = Pod("kube-state-metrics", "10.0.2.9", "", 3, 0, HOUR, _healthy)
    cluster = [{"series": f"{metric}{{{ksm}}}", "values": _values(always, lambda t: "2")}
               for metric in (kube_state.DESIRED, kube_state.AVAILABLE, kube_state.UPDATED)]
    cluster.append({"series": f"{kube_state.LABELS}{{{ksm},{_labels(kube_state.OPERATOR_LABELS)}}}",
                    "values": _values(always, lambda t: "1")})
    alert = {"exp_labels": {**rule["labels"], "job": "dcgm-exporter", "node": NODE, "reason": REASON},
             "exp_annotations": {**rule["annotations"],
                                 "summary": rule["annotations"]["summary"].replace("{{ $labels.reason }}", REASON)}}
    return {"name": name, "interval": "1s",
            "input_series": cluster + _pod_series(NODES[0], FIRST) + [s for pod in pods for s in _pod_series(NODE, pod)],
            "alert_rule_test": [{"eval_time": f"{m}m", "alertname": rule["alert"], "exp_alerts": [alert] if fires else []}
                                for m, fires in _truth(pods).items()]}


def test_the_rule_fires_at_the_same_minutes(generated, tmp_path):
    """The rule over the same scrapes, by promtool, each minute of every story."""
    _, files = generated
    rule = _data_missing_rule(files, tmp_path)
    promtool_test(tmp_path, "node_pods_test.yaml", [_rule_test(rule, name, pods) for name, pods in STORIES.items()],
                  evaluation_interval="1m")


def test_the_twins_count_a_surges_two_pods_alike(generated, tmp_path):
    """Two pods of a surge failing 6 or 7 of the window's scrapes each: both forms add them (13 > 10) at the same
    minutes, the limit their texts state (the truth: test_two_flaky_pods_of_a_surge_are_not_missing_data)."""
    _, files = generated
    truth = _truth(SURGE)
    assert any(truth.values())
    fired = _cloudwatch_minutes(files, SURGE)
    assert {m: f for m, f in fired.items() if f} == {m: {PER_NODE_ALARM: [NODE]} for m, fires in truth.items() if fires}
    rule = _data_missing_rule(files, tmp_path)
    promtool_test(tmp_path, "surge_test.yaml", [_rule_test(rule, "a surge's two flaky pods", SURGE)],
                  evaluation_interval="1m")


@pytest.mark.xfail(strict=True, reason="a known limit, stated in the per-node alarm's description and docs/alarms.md: "
                   "two exporter pods on one node at once add their scrapes; one aggregate of one flag per scrape "
                   "cannot tell 6 + 7 of 40 from 13 of 20")
def test_two_flaky_pods_of_a_surge_are_not_missing_data(generated):
    """The truth of the surge: at every scrape of the overlap one pod or the other brought the node's GPU data, so no
    minute of it is missing data."""
    _, files = generated
    answered = {k for pod in SURGE for t in pod.times() if pod.did(t) == "1" for k in [t // INTERVAL]}
    assert answered >= set(range(HOUR // INTERVAL))  # every 30 s of the hour, a scrape of the node brought its data
    fired = _cloudwatch_minutes(files, SURGE)
    assert {m: f for m, f in fired.items() if f} == {}

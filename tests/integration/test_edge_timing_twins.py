"""Default alarms and their Prometheus twins at the edges of their timing, and with readings served by more than one
target at once (issue 10's "each alarm and its Prometheus twin fire on the same situation").

Each story is a list of readings, each served by one exporter target (node, exporter pod, address) with its exporter's
labels: a node's GPU after its pod left is written without pod labels, an upgraded exporter spells `hostname`. The
readings go into `promtool test rules` for the rule (test_gauge_twins' harness) and, one scrape per target and time,
through the model of the agent (the generated configuration) into the CloudWatch alarm. The truth is worked out here
from the story's readings, and both forms are judged at every evaluation, 15 s past each 30 s scrape.

* gpu-temp-high: a GPU above 80 °C for exactly ten minutes (20 readings, starting mid-period), later for one reading
  less: both fire at the one evaluation whose ten minutes hold the whole first run, never for the second.
* gpu-idle: a pod's GPU at 1 % for exactly 30 minutes between readings at 50 %: both fire at one evaluation.
* gpu-temp-critical: a GPU at 90 °C that cools to 50 °C: both clear five minutes after the last hot reading.
* framebuffer-full: a pod whose GPU reads 500 MiB free just before the pod is rescheduled to another node, whose
  exporter is an upgraded one (`hostname`); its former GPU keeps reporting without pod labels. Both say the pod is
  near full for the five minutes after the reading, whichever node served it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest

from tests.integration.test_gauge_twins import BLANK, NEW, OLD, STEP, _alert, _build, _cloudwatch_request, _prometheus_wrong
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.promtool_rules import value_text

NODE_A, NODE_B = "ip-10-0-1-1", "ip-10-0-1-2"


@dataclass(frozen=True)
class Reading:
    """One reading and who serves it: the node, its exporter (pod name, address), the GPU and the pod holding it."""

    value: float
    node: str = NODE_A
    exporter: tuple[str, str] = OLD
    gpu: int = 0
    uuid: str = "GPU-1"
    pod: str | None = "a"  # None: no pod holds the GPU (the exporter writes no pod labels)
    lower: bool = False  # an upgraded exporter spelling `hostname`

    def labels(self) -> str:
        host = "hostname" if self.lower else "Hostname"
        pod = f',container="main",namespace="ml",pod="{self.pod}"' if self.pod else ""
        return (f'gpu="{self.gpu}",UUID="{self.uuid}",device="nvidia{self.gpu}",modelName="NVIDIA A100-SXM4-80GB",'
                f'{host}="{self.exporter[0]}",DCGM_FI_DRIVER_VERSION="535.104.05"{pod}')

    def target(self) -> tuple[str, tuple[str, str]]:
        return self.node, self.exporter


@dataclass(frozen=True)
class Story:
    rule: str
    metric: str
    scrapes: int
    readings: Callable[[int], list[Reading]]  # what scrape k serves (every target)
    truth: Callable[[float], list[dict]]  # the alerts at an evaluation at t
    evaluations: list[int]


def _series(story: Story) -> list[dict]:
    """The story as promtool input series: each distinct (labels, node, address) one series."""
    values: dict[str, list[str]] = {}
    for k in range(story.scrapes):
        for r in story.readings(k):
            key = f'{story.metric}{{{r.labels()},node="{r.node}",instance="{r.exporter[1]}"}}'
            values.setdefault(key, ["_"] * story.scrapes)[k] = value_text(r.value)
    return [{"series": key, "values": " ".join(v)} for key, v in values.items()]


def _points(story: Story, files: dict) -> list:
    """The story's scrapes (one per target and time) through the agent's model."""
    config, job = agent_config(files[next(f for f in files if f.startswith("k8s/cwagent-prometheus-config"))])
    scrapes = []
    for k in range(story.scrapes):
        by_target: dict[tuple, list[Reading]] = {}
        for r in story.readings(k):
            by_target.setdefault(r.target(), []).append(r)
        for (node, exporter), found in by_target.items():
            target = target_labels(job, node)
            target.update({key: value for key, value in (("exporter_pod", exporter[0]), ("instance", exporter[1]))
                           if key in target})
            lines = "".join(f"{story.metric}{{{r.labels()}}} {value_text(r.value)}\n" for r in found)
            scrapes.append(Scrape(float(k * STEP), f"# TYPE {story.metric} gauge\n{lines}", target))
    return Agent(config, job).run(scrapes)


def _cloudwatch_wrong(story: Story, files: dict) -> dict[int, tuple]:
    """{t: (contributors in ALARM, expected)} where the alarm differs from the truth; contributors named by the
    alert labels they share with the rule's (node and GPU, or namespace and pod)."""
    points = _points(story, files)
    request = _cloudwatch_request(files, story.rule, story.metric)
    wrong = {}
    for t in story.evaluations:
        expected = {tuple(sorted(a.items())) for a in story.truth(t)}
        names = {name for a in story.truth(t) for name in a} or {"node", "gpu", "namespace", "pod"}
        fired = {tuple(sorted((k, v) for k, v in key if k in names))
                 for key, state in cloudwatch_eval.alarm(request, points, t).items() if state == "ALARM"}
        if fired != expected:
            wrong[t] = (sorted(fired), sorted(expected))
    return wrong


def _window(story_values: Callable[[int], list[float]], t: float, seconds: int) -> list[float]:
    """The readings of (t - seconds, t], blanks left out."""
    return [v for k in range(int(t // STEP) + 1) if t - seconds < k * STEP <= t for v in story_values(k) if v != BLANK]


GPU_A = {"node": NODE_A, "gpu": "0"}
EVERY = [k * STEP + 15 for k in range(20, 118)]


def _temp_high_exact() -> Story:
    """85 °C at scrapes 25-44 (t = 750-1320 s: exactly ten minutes of readings, starting mid-period) and 70-88 (one
    reading less), 70 °C otherwise. High at t when (t - 600, t] holds readings and all of them are above 80 °C."""
    def value(k): return 85.0 if 25 <= k < 45 or 70 <= k < 89 else 70.0

    def truth(t):
        window = _window(lambda k: [value(k)], t, 600)
        return [GPU_A] if t >= 600 and window and all(v > 80 for v in window) else []
    return Story("gpu-temp-high", "DCGM_FI_DEV_GPU_TEMP", 120, lambda k: [Reading(value(k), pod=None)], truth, EVERY)


def _idle_exact() -> Story:
    """Pod ml/a at 50 % except 1 % at scrapes 35-94 (t = 1050-2820 s: exactly 30 minutes). Idle at t when each
    5-minute window ending in [t - 1500, t] holds readings whose mean is under 5 %."""
    def value(k): return 1.0 if 35 <= k < 95 else 50.0

    def quiet(end):
        window = _window(lambda k: [value(k)], end, 300)
        return bool(window) and sum(window) / len(window) < 5

    def truth(t):
        idle = t >= 1515 and all(quiet(end) for end in range(int(t) - 1500, int(t) + 1, 15))
        return [{"namespace": "ml", "pod": "a", "gpu": "0"}] if idle else []
    return Story("gpu-idle", "DCGM_FI_DEV_GPU_UTIL", 130, lambda k: [Reading(value(k))], truth,
                 [k * STEP + 15 for k in range(50, 130)])


def _temp_critical_cools() -> Story:
    """90 °C until scrape 39 (t = 1170 s), 50 °C from 1200 s: critical while (t - 300, t] holds a hot reading."""
    def value(k): return 90.0 if k < 40 else 50.0

    def truth(t): return [GPU_A] if any(v > 87 for v in _window(lambda k: [value(k)], t, 300)) else []
    return Story("gpu-temp-critical", "DCGM_FI_DEV_GPU_TEMP", 80, lambda k: [Reading(value(k), pod=None)], truth,
                 [k * STEP + 15 for k in range(20, 80)])


def _framebuffer_pod_moves_node() -> Story:
    """Pod ml/a holds GPU 0 of node A (exporter of `Hostname`) with 20,000 MiB free, 500 at scrape 19 (t = 570 s);
    rescheduled from scrape 20 to GPU 1 of node B (an upgraded exporter spelling `hostname`), 20,000 free. Node A's
    GPU goes on reporting without pod labels (30,000 free, idle). Near full while (t - 300, t] holds the pod's 500."""
    def readings(k):
        if k < 20:
            return [Reading(500.0 if k == 19 else 20000.0)]
        return [Reading(30000.0, pod=None),
                Reading(20000.0, node=NODE_B, exporter=NEW, gpu=1, uuid="GPU-2", lower=True)]

    def truth(t): return [{"namespace": "ml", "pod": "a"}] if t - 300 < 19 * STEP <= t else []
    return Story("framebuffer-full", "DCGM_FI_DEV_FB_FREE", 50, readings, truth, [k * STEP + 15 for k in range(10, 50)])


STORIES = {"temp-high-exactly-ten-minutes-then-one-reading-less": _temp_high_exact(),
           "idle-exactly-thirty-minutes": _idle_exact(),
           "temp-critical-cools-down": _temp_critical_cools(),
           "framebuffer-peak-then-pod-moves-node-to-upgraded-exporter": _framebuffer_pod_moves_node()}


@pytest.mark.parametrize("name", list(STORIES))
def test_alarm_and_rule_fire_on_the_truth_at_every_evaluation(name, tmp_path):
    story = STORIES[name]
    files, folder = _build(tmp_path, "")
    expected = {t: story.truth(t) for t in story.evaluations}
    assert any(expected.values()) and not all(expected.values())  # a situation to find, and one to leave
    wrong = _prometheus_wrong(folder, [(_alert(folder, story.rule), _series(story), expected)], 15)
    assert not wrong, f"the Prometheus rule differs from the truth at {wrong}"
    cloudwatch = _cloudwatch_wrong(story, files)
    assert not cloudwatch, f"the CloudWatch alarm differs from the truth at {cloudwatch}"

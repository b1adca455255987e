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

Several clusters on one Prometheus (clusters[].prometheus_label), each cluster's readings through its own agent into
its own alarms, with the same node name (EKS names a node by its private IP) and pod name in both:

* a GPU critical (and high) in cluster a while b's namesake is cool; a pod idle in b while a's namesake works: each
  form names the cluster's GPU or pod alone (high from five minutes after the first reading: two periods hold one).
* clusters differing in exporter.mig: split's pod idle on a MIG instance (engine 1 % active, no GPU_UTIL) beside
  plain's namesake busy on a whole GPU: the rule and split's `-mig` alarm name split's instance alone.
* a fleet rule per GPU whose `cloudwatch=` condition is per MIG instance, two alarms in the mixed Region (`-whole`
  for plain): plain's whole GPU and split's instance each high for ten minutes, overlapping: the rule and the two
  alarms fire for each from its first high reading and clear five minutes after its last.

A pod whose GPU is nearly full (or idle) ends and the next pod takes the GPU at once (with memory free, or busy):
CloudWatch's alarm over the user guide's example range holds the ended pod in ALARM until 15 minutes after its last
reading, and the rule, which says it judges that range, resolves on the next pod's readings: twice for about 2 minutes
(framebuffer), for good at the handover (idle). Strict xfails; the same look-back as test_gpu_handed_over's pin, there
giving the ended pod the next pod's full readings.

On the GPU operator's ServiceMonitor (honorLabels: false, labels.pod: exported_pod), every series carries the exporter's
own pod, and an old exporter writes that pod's name into `Hostname`: a pod idle beside an idle GPU no pod holds, and a
pod's memory peak beside a GPU no pod holds nearly full all along, alarm for the workload pod alone on both forms.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

import pytest

from tests.integration.test_gauge_twins import BLANK, NEW, OLD, STEP, _alert, _build, _prometheus_wrong
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
    cluster: str = ""  # on a Prometheus holding several clusters: its prometheus_label (and its agent's)
    instance: tuple[str, str] | None = None  # the MIG instance (GPU_I_ID, GPU_I_PROFILE) the reading is of
    metric: str | None = None  # a field other than the story's
    # scraped into Prometheus by the GPU operator's ServiceMonitor (honorLabels: false): the workload's labels renamed
    # exported_*, the target's own pod, namespace and container (the exporter pod's) on every series, no node label
    exported: bool = False

    def labels(self, stored: bool = False) -> str:
        """The series' labels as the exporter writes them, or (`stored`) as Prometheus stores them."""
        host = "hostname" if self.lower else "Hostname"
        pod = f',container="main",namespace="ml",pod="{self.pod}"' if self.pod else ""
        if stored and self.exported:
            pod = pod.replace(",", ",exported_") + (f',container="nvidia-dcgm-exporter",namespace="gpu-operator",'
                                                    f'pod="{self.exporter[0]}"')
        mig = f',GPU_I_PROFILE="{self.instance[1]}",GPU_I_ID="{self.instance[0]}"' if self.instance else ""
        return (f'gpu="{self.gpu}",UUID="{self.uuid}",device="nvidia{self.gpu}",modelName="NVIDIA A100-SXM4-80GB",'
                f'{host}="{self.exporter[0]}",DCGM_FI_DRIVER_VERSION="535.104.05"{mig}{pod}')

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
            cluster = f',cluster="{r.cluster}"' if r.cluster else ""
            node = "" if r.exported else f',node="{r.node}"'
            key = f'{r.metric or story.metric}{{{r.labels(True)}{node},instance="{r.exporter[1]}"{cluster}}}'
            values.setdefault(key, ["_"] * story.scrapes)[k] = value_text(r.value)
    return [{"series": key, "values": " ".join(v)} for key, v in values.items()]


def _points(story: Story, files: dict, cluster: str = "") -> list:
    """The story's scrapes (one per target and time) of `cluster` through the model of its agent."""
    config, job = agent_config(files[next(f for f in files if f.startswith(
        f"k8s/cwagent-prometheus-config{'-' + cluster if cluster else ''}"))])
    scrapes = []
    for k in range(story.scrapes):
        by_target: dict[tuple, list[Reading]] = {}
        for r in story.readings(k):
            if r.cluster != cluster:
                continue
            by_target.setdefault(r.target(), []).append(r)
        for (node, exporter), found in by_target.items():
            target = target_labels(job, node)
            target.update({key: value for key, value in (("exporter_pod", exporter[0]), ("instance", exporter[1]))
                           if key in target})
            metrics = dict.fromkeys(r.metric or story.metric for r in found)
            text = "".join(f"# TYPE {metric} gauge\n" + "".join(
                f"{metric}{{{r.labels()}}} {value_text(r.value)}\n" for r in found if (r.metric or story.metric) == metric)
                for metric in metrics)
            scrapes.append(Scrape(float(k * STEP), text, target))
    return Agent(config, job).run(scrapes)


def _cloudwatch_wrong(story: Story, files: dict) -> dict[int, tuple]:
    """{t: (contributors in ALARM, expected)} where the alarm differs from the truth; contributors named by the
    alert labels they share with the rule's (node and GPU, or namespace and pod; each cluster's alarm's with its
    cluster)."""
    clusters = sorted({r.cluster for k in range(story.scrapes) for r in story.readings(k)})
    judged = [(cluster, _points(story, files, cluster), request)
              for cluster in clusters for request in _requests(files, story, cluster)]
    wrong = {}
    for t in story.evaluations:
        expected = {tuple(sorted(a.items())) for a in story.truth(t)}
        names = {name for a in story.truth(t) for name in a} or {"node", "gpu", "namespace", "pod"}
        fired = {tuple(sorted((*((("cluster", cluster),) if cluster else ()), *((k, v) for k, v in key if k in names))))
                 for cluster, points, request in judged
                 for key, state in cloudwatch_eval.alarm(request, points, t).items() if state == "ALARM"}
        if fired != expected:
            wrong[t] = (sorted(fired), sorted(expected))
    return wrong


def _requests(files: dict, story: Story, cluster: str) -> list[dict]:
    """The alarms of the story's rule of `cluster` (every one where the settings name no cluster): its alarm and, on a
    field MIG does not report, its `-mig` alarm."""
    return [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
            if {"Key": "gpudash:rule", "Value": story.rule} in a["Request"]["Tags"]
            and (not cluster or a["Request"]["AlarmName"].startswith(f"gpudash-{cluster}-{story.rule}-"))]


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


def _two_clusters(rule: str, metric: str, value: Callable[[str], float], alerts: Callable[[float], list[dict]],
                  gpu_only: bool) -> Story:
    """Clusters a and b on one Prometheus, each with node ip-10-0-1-1 (EKS names a node by its private IP: VPCs of one
    CIDR) whose GPU 0 pod ml/train holds (a pod's name repeats across clusters): `value(cluster)` at every scrape."""
    def readings(k):
        return [Reading(value(c), uuid=f"GPU-{c}", pod=None if gpu_only else "train", cluster=c) for c in "ab"]
    return Story(rule, metric, 90, readings, alerts, [k * STEP + 15 for k in range(10, 90)])


A_HOT = {"cluster": "a", "node": NODE_A, "gpu": "0"}
TWO_CLUSTERS = {
    # a's GPU at 90 °C, b's at 40: critical for a's GPU, from its first reading to the last
    "temp-critical-on-a-while-b-cool": _two_clusters("gpu-temp-critical", "DCGM_FI_DEV_GPU_TEMP",
                                                     lambda c: 90.0 if c == "a" else 40.0, lambda t: [A_HOT], True),
    # a's GPU at 85 °C, b's at 40: high for a's GPU once two periods hold its readings (5 minutes after the first, as
    # the description says of a GPU that joins hot)
    "temp-high-on-a-while-b-cool": _two_clusters("gpu-temp-high", "DCGM_FI_DEV_GPU_TEMP",
                                                 lambda c: 85.0 if c == "a" else 40.0,
                                                 lambda t: [A_HOT] if t >= 300 else [], True),
    # b's pod ml/train idle at 1 %, a's namesake busy at 80: idle for b's alone, 25 minutes after its first reading
    "idle-on-b-while-a-busy": _two_clusters("gpu-idle", "DCGM_FI_DEV_GPU_UTIL", lambda c: 1.0 if c == "b" else 80.0,
                                            lambda t: [{"cluster": "b", "namespace": "ml", "pod": "train", "gpu": "0"}]
                                            if t >= 1515 else [], False),
}
IDLE_SPLIT = {"cluster": "split", "namespace": "ml", "pod": "train", "gpu": "0", "GPU_I_ID": "1",
              "GPU_I_PROFILE": "3g.40gb"}


def _idle_mixed() -> Story:
    """Clusters split (GPUs may be split) and plain (exporter.mig: none) on one Prometheus, each with node ip-10-0-1-1:
    split's pod ml/train holds MIG instance 1 of its GPU 0, its engine 1 % active (no GPU_UTIL: MIG reports none),
    plain's ml/train its whole GPU 0 at 80 %. Idle for split's instance alone, 25 minutes after its first reading."""
    def readings(k):
        return [Reading(0.01, uuid="GPU-s", pod="train", cluster="split", instance=("1", "3g.40gb"),
                        metric="DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
                Reading(80.0, uuid="GPU-p", pod="train", cluster="plain")]
    return Story("gpu-idle", "DCGM_FI_DEV_GPU_UTIL", 90, readings, lambda t: [IDLE_SPLIT] if t >= 1515 else [],
                 [k * STEP + 15 for k in range(10, 90)])


MIXED = ("clusters:\n  - {name: split, region: us-east-1, prometheus_label: split}\n"
         "  - {name: plain, region: us-east-1, prometheus_label: plain, exporter: {mig: none}}\n")


def test_in_a_mixed_fleet_on_one_prometheus_an_idle_mig_instance_alarms_in_its_cluster_alone(tmp_path):
    story = _idle_mixed()
    files, folder = _build(tmp_path, MIXED)
    expected = {t: story.truth(t) for t in story.evaluations}
    wrong = _prometheus_wrong(folder, [(_alert(folder, story.rule), _series(story), expected)], 15)
    assert not wrong, f"the Prometheus rule differs from the truth at {wrong}"
    cloudwatch = _cloudwatch_wrong(story, files)
    assert not cloudwatch, f"the CloudWatch alarm differs from the truth at {cloudwatch}"


FB_HIGH = """
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpu-fb-high", "GPU memory high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu")), ">", 15000), scope="fleet",
                cloudwatch=Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")), ">", 15000))
"""


def _fb_high_mixed() -> Story:
    """Clusters split and plain (exporter.mig: none) on one Prometheus, each with node ip-10-0-1-1. plain's whole GPU 0
    holds 40,000 MiB at scrapes 20-39, 5,000 otherwise; split's GPU 0 instance 1 (3g.40gb) 19,600 at scrapes 30-49,
    1,000 otherwise, beside its whole GPU 1 at 5,000. Over 15,000 while (t - 300, t] holds such a reading: the rule per
    GPU or instance, the Region's two alarms (`<rule>-whole` for plain) per contributor; each clears five minutes after
    its last high reading."""
    def readings(k):
        return [Reading(40000.0 if 20 <= k < 40 else 5000.0, uuid="GPU-p", pod=None, cluster="plain"),
                Reading(19600.0 if 30 <= k < 50 else 1000.0, uuid="GPU-s", pod=None, cluster="split",
                        instance=("1", "3g.40gb")),
                Reading(5000.0, uuid="GPU-s1", gpu=1, pod=None, cluster="split")]

    def high(first, last, t): return any(t - 300 < k * STEP <= t for k in range(first, last))

    def truth(t):
        return ([{"cluster": "plain", "node": NODE_A, "gpu": "0"}] if high(20, 40, t) else []) + \
            ([{"cluster": "split", "node": NODE_A, "gpu": "0", "GPU_I_ID": "1", "GPU_I_PROFILE": "3g.40gb"}]
             if high(30, 50, t) else [])
    return Story("gpu-fb-high", "DCGM_FI_DEV_FB_USED", 80, readings, truth, [k * STEP + 15 for k in range(10, 80)])


def test_a_fleet_rule_s_two_alarms_in_a_mixed_region_and_its_rule_fire_and_clear_together(tmp_path):
    story = _fb_high_mixed()
    (tmp_path / "alarms").mkdir()
    (tmp_path / "alarms" / "alarms.py").write_text(FB_HIGH)
    files, folder = _build(tmp_path, MIXED + "definitions:\n  alarms: [alarms]\n")
    expected = {t: story.truth(t) for t in story.evaluations}
    wrong = _prometheus_wrong(folder, [(_alert(folder, story.rule), _series(story), expected)], 15)
    assert not wrong, f"the Prometheus rule differs from the truth at {wrong}"
    points = _points(story, files, "split") + _points(story, files, "plain")
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if a["Request"]["AlarmName"].startswith("gpudash-fleet-gpu-fb-high-")]
    assert len(requests) == 2
    names = ("node", "gpu", "GPU_I_ID", "GPU_I_PROFILE")
    cloudwatch = {}
    for t, alerts in expected.items():
        fired = sorted(sorted([("cluster", dict(key)["ClusterName"]), *((k, v) for k, v in key if k in names)])
                       for request in requests
                       for key, state in cloudwatch_eval.alarm(request, points, t).items() if state == "ALARM")
        if fired != sorted(sorted(a.items()) for a in alerts):
            cloudwatch[t] = fired
    assert not cloudwatch, f"the CloudWatch alarms differ from the truth at {cloudwatch}"


SHARED = ("clusters:\n  - {name: a, region: us-east-1, prometheus_label: a}\n"
          "  - {name: b, region: us-east-1, prometheus_label: b}\n")


@pytest.mark.parametrize("name", list(TWO_CLUSTERS))
@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_on_one_prometheus_each_cluster_s_rule_and_alarm_name_its_own_gpu_and_pod(name, pipeline, tmp_path):
    story = TWO_CLUSTERS[name]
    files, folder = _build(tmp_path, SHARED + f"agent: {{pipeline: {pipeline}}}\n")
    expected = {t: story.truth(t) for t in story.evaluations}
    assert any(expected.values())
    wrong = _prometheus_wrong(folder, [(_alert(folder, story.rule), _series(story), expected)], 15)
    assert not wrong, f"the Prometheus rule differs from the truth at {wrong}"
    cloudwatch = _cloudwatch_wrong(story, files)
    assert not cloudwatch, f"the CloudWatch alarm differs from the truth at {cloudwatch}"


STORIES = {"temp-high-exactly-ten-minutes-then-one-reading-less": _temp_high_exact(),
           "idle-exactly-thirty-minutes": _idle_exact(),
           "temp-critical-cools-down": _temp_critical_cools(),
           "framebuffer-peak-then-pod-moves-node-to-upgraded-exporter": _framebuffer_pod_moves_node()}


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
@pytest.mark.parametrize("name", list(STORIES))
def test_alarm_and_rule_fire_on_the_truth_at_every_evaluation(name, pipeline, tmp_path):
    story = STORIES[name]
    files, folder = _build(tmp_path, f"agent: {{pipeline: {pipeline}}}\n")
    expected = {t: story.truth(t) for t in story.evaluations}
    assert any(expected.values()) and not all(expected.values())  # a situation to find, and one to leave
    wrong = _prometheus_wrong(folder, [(_alert(folder, story.rule), _series(story), expected)], 15)
    assert not wrong, f"the Prometheus rule differs from the truth at {wrong}"
    cloudwatch = _cloudwatch_wrong(story, files)
    assert not cloudwatch, f"the CloudWatch alarm differs from the truth at {cloudwatch}"


def _full_then_handed_over() -> Story:
    """Pod ml/a's GPU reads 500 MiB free at scrapes 15-19 (t = 450-570 s), then ml/a ends and ml/b takes the GPU from
    the next scrape (t = 600 s) with 80,000 MiB free (a batch queue handing the GPU over). ml/a's data stops while in
    ALARM: CloudWatch's alarm over the user guide's example range (3 periods) holds it while a period of the range holds
    a datapoint, its latest 500, from the first full reading until 15 minutes after the last (t = 465-1455 s); the rule
    says it judges that range. ml/b never alarms."""
    def readings(k):
        return [Reading(500.0 if k >= 15 else 20000.0)] if k < 20 else [Reading(80000.0, pod="b")]

    def truth(t): return [{"namespace": "ml", "pod": "a"}] if 450 < t < 570 + 900 else []
    return Story("framebuffer-full", "DCGM_FI_DEV_FB_FREE", 60, readings, truth, [k * STEP + 15 for k in range(10, 60)])


def _idle_then_handed_over() -> Story:
    """Pod ml/a idle at 1 % until scrape 79 (t = 2370 s), then ml/a ends and ml/b takes the GPU from the next scrape at
    90 %. CloudWatch's idle alarm over the example range (8 periods, 6 of 6 idle) holds ml/a in ALARM from 25 minutes on
    until 15 minutes after its last reading (t = 1515-3255 s); ml/b never alarms."""
    def readings(k): return [Reading(1.0)] if k < 80 else [Reading(90.0, pod="b")]

    def truth(t): return [{"namespace": "ml", "pod": "a", "gpu": "0"}] if 1500 < t < 2370 + 900 else []
    return Story("gpu-idle", "DCGM_FI_DEV_GPU_UTIL", 120, readings, truth, [k * STEP + 15 for k in range(60, 120)])


HANDED_OVER = {"framebuffer": _full_then_handed_over, "idle": _idle_then_handed_over}


@pytest.mark.parametrize("name", list(HANDED_OVER))
def test_a_pod_in_alarm_that_hands_its_gpu_over_stays_so_on_cloudwatch_over_the_example_range(name, tmp_path):
    story = HANDED_OVER[name]()
    files, _ = _build(tmp_path, "")
    points = _points(story, files)
    wrong = {}
    for t in story.evaluations:
        states = {}
        for request in _requests(files, story, ""):
            for key, state in cloudwatch_eval.alarm(request, points, t,
                                                    evaluation_range=cloudwatch_eval.example_range(request)).items():
                if state == "ALARM":
                    states[dict(key)["pod"]] = state
        if sorted(states) != (["a"] if story.truth(t) else []):
            wrong[t] = states
    assert not wrong, wrong


# the rule's verdicts on the ended pod: the per-pod look-back gives it the next pod's first readings
RULE_AFTER_HANDOVER = {
    "framebuffer": "the per-pod look-back gives the pod that ended the next pod's first readings (80,000 MiB free), and "
                   "the rule, which judges the latest period with a reading, reads that period as not full: ml/a's "
                   "alert resolves at about 5 and 10 minutes after its last scrape for about 2 minutes each "
                   "(14m45s-16m30s, 19m45s-21m30s) and fires again, where its alarm holds ALARM (its description says "
                   "the rule can clear before it where the next pod takes the GPU at once)",
    "idle": "the per-pod look-back gives the pod that ended the next pod's first readings (90 %), so the idle rule reads "
            "the ended pod's latest period as busy: ml/a's alert resolves at the handover (40m15s) for good, where its "
            "alarm holds ALARM until 15 minutes after its last reading (54m15s), as the rule's description says the "
            "rule does"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason))
                                  for name, reason in RULE_AFTER_HANDOVER.items()])
def test_a_pod_in_alarm_that_hands_its_gpu_over_stays_firing_on_the_rule(name, tmp_path):
    story = HANDED_OVER[name]()
    _, folder = _build(tmp_path, "")
    expected = {t: story.truth(t) for t in story.evaluations}
    wrong = _prometheus_wrong(folder, [(_alert(folder, story.rule), _series(story), expected)], 15)
    assert not wrong, f"the Prometheus rule differs from the truth at {wrong}"


def test_the_descriptions_say_the_rule_can_clear_before_the_alarm_at_a_handover(tmp_path):
    """What RULE_AFTER_HANDOVER pins, said where the two forms part: each per-pod alarm's description."""
    files, _ = _build(tmp_path, "")
    for name in RULE_AFTER_HANDOVER:
        for request in _requests(files, HANDED_OVER[name](), ""):
            description = request["AlarmDescription"]
            assert "or before it where the next pod takes the GPU at once" in description, description
            assert len(description) <= 1024, len(description)


EXPORTED = ("labels:\n  pod: exported_pod\n  namespace: exported_namespace\n  container: exported_container\n")


def _exported(alerts: list[dict]) -> list[dict]:
    """Alert labels as the rule names them under labels.pod: exported_pod (and the namespace's)."""
    return [{f"exported_{k}" if k in ("namespace", "pod") else k: v for k, v in a.items()} for a in alerts]


def _exported_stories() -> dict[str, Story]:
    """On the GPU operator's ServiceMonitor (honorLabels: false), the exporter's pod (`pod`) on every series: pod ml/a
    idle at 1 % on GPU 0 beside GPU 1, which no pod holds, idle at 0 % (idle from 25 minutes on: ml/a alone, never the
    exporter's pod); ml/a's GPU 0 at 500 MiB free at scrapes 15-19 beside GPU 1 at 300 MiB free all along (a process
    outside Kubernetes): near full for ml/a while (t - 300, t] holds its 500, never for GPU 1's."""
    def idle(k):
        return [Reading(1.0, exported=True), Reading(0.0, gpu=1, uuid="GPU-2", pod=None, exported=True)]

    def full(k):
        return [Reading(500.0 if 15 <= k < 20 else 20000.0, exported=True),
                Reading(300.0, gpu=1, uuid="GPU-2", pod=None, exported=True)]
    return {"idle": Story("gpu-idle", "DCGM_FI_DEV_GPU_UTIL", 90, idle,
                          lambda t: [{"namespace": "ml", "pod": "a", "gpu": "0"}] if t >= 1515 else [],
                          [k * STEP + 15 for k in range(40, 90)]),
            "framebuffer": Story("framebuffer-full", "DCGM_FI_DEV_FB_FREE", 40, full,
                                 lambda t: [{"namespace": "ml", "pod": "a"}] if any(
                                     t - 300 < k * STEP <= t for k in range(15, 20)) else [],
                                 [k * STEP + 15 for k in range(10, 40)])}


@pytest.mark.parametrize("name", ["idle", "framebuffer"])
def test_on_the_operators_servicemonitor_both_forms_name_the_workload_pod_never_the_exporters(name, tmp_path):
    story = _exported_stories()[name]
    files, folder = _build(tmp_path, EXPORTED)
    expected = {t: _exported(story.truth(t)) for t in story.evaluations}
    assert any(expected.values()) and not all(expected.values())
    wrong = _prometheus_wrong(folder, [(_alert(folder, story.rule), _series(story), expected)], 15)
    assert not wrong, f"the Prometheus rule differs from the truth at {wrong}"
    cloudwatch = _cloudwatch_wrong(story, files)
    assert not cloudwatch, f"the CloudWatch alarm differs from the truth at {cloudwatch}"

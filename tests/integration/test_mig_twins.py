"""Per-pod alarms and their Prometheus twins judge a pod on the MIG instances it holds, each its own.

A pod's GPU is, on MIG, the instances it holds: each has its own memory and its own engine. So the idle
rule judges each instance a pod holds on its own (two instances of one GPU at 80 % and 1 %: the idle one alarms,
their mean, 40.5 %, would not), the framebuffer rule its fullest instance (400
MiB free in one instance and 15,000 in the other: full; their sum would not be), and a per-pod max or min
its busiest or idlest instance (80 % and 1 % on one GPU: busy and starved; their mean, 40.5 %, neither).
Whole GPUs, a GPU two pods share by time-slicing and one pod name in two namespaces keep their meaning.
A pod holding both whole GPUs and MIG instances is judged on each kind apart: idle when its whole GPUs are,
or when its MIG instances are (a whole GPU at 40 % beside an instance at 1 %: idle, not their mean 20.5 %;
a whole GPU at 2 % beside an instance at 50 %: idle). A slice is not a GPU, so a mean over both weighs it
as one, and CloudWatch holds the two kinds in two metrics, which one GROUP BY alarm cannot average.

The same readings go through the model of the CloudWatch agent (the generated config) into the generated
CloudWatch alarms, and into `promtool test rules` for the generated Prometheus rules: both fire for the
pods the truth names, and for no other.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from statistics import mean

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from generator.resources import bundled, default_counters
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.mixed_fleet import FIELDS, FLEET, Gpu, Instance, Node
from tests.support.promtool_rules import alert_names, expected_alert, parsed_rules, promtool_test

STEP, STEPS = 30, 80  # forty minutes of 30 s scrapes: the idle rule's six periods and more
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
RULES = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("pod-busy", "Pod's GPU saturated", Condition(Query("DCGM_FI_DEV_GPU_UTIL", "max", ("pod",)), ">", 60))
    yield Alarm("pod-starved", "Pod's GPU partly idle",
                Condition(Query("DCGM_FI_DEV_GPU_UTIL", "min", ("pod",)), "<", 10))
'''


def _instance(id_: str, pod: str, engine: float, free: float = 3800, used: float = 1000,
              profile: str = "1g.5gb") -> Instance:
    return Instance(id=id_, profile=profile, pod=("team-i", pod), fb_used=used, fb_free=free, engine=engine,
                    mig_util="0")


def _a100(index: int, *instances: Instance, util: float = 0.0) -> Gpu:
    return Gpu(index, temp=60, power=200, sm_clock=1410, xid=0, energy_mw=200_000, replays_per_s=0, memory_temp=50,
               model="NVIDIA A100-SXM4-40GB", instances=instances, util=util)


def _whole(pod: str, util: float) -> Instance:
    return Instance(pod=("team-i", pod), fb_used=10000, fb_free=30000, engine=util / 100)


MIG = Node("gpu-node-mig", "Hostname", "nvidia-dcgm-exporter-m5n6p", (
    _a100(0, _instance("1", "spread", 0.01), _instance("2", "spread", 0.01),
          _instance("3", "skew", 0.8), _instance("4", "skew", 0.01)),
    _a100(1, _instance("1", "spread", 0.095),
          _instance("2", "pair", 0.5, free=400, used=19600, profile="3g.20gb"),
          _instance("3", "pair", 0.5, free=15000, used=5000, profile="3g.20gb")),
))
# Both kinds on one node (MIG's mixed strategy): `both` idle on its MIG instance only, `whole-idle` on its GPU only.
MIXED = Node("gpu-node-mixed", "Hostname", "nvidia-dcgm-exporter-x7y8z", (
    _a100(0, _whole("both", 40), util=40),
    _a100(1, _instance("1", "both", 0.01), _instance("2", "whole-idle", 0.5)),
    _a100(2, _whole("whole-idle", 2), util=2),
))
# A GPU share-0 and share-1 time-slice, idle (2 %) with 800 MiB free, which its exporter (without
# KUBERNETES_VIRTUAL_GPUS) names under each of them at alternate scrapes (#340): each pod holds an idle, full GPU.
SHARED = Node("gpu-node-shared", "Hostname", "nvidia-dcgm-exporter-s3t4u", (
    Gpu(0, temp=50, power=80, sm_clock=1400, xid=0, energy_mw=80_000, replays_per_s=0, memory_temp=50, util=2,
        instances=(Instance(pod=("team-s", "share-0"), also=(("team-s", "share-1"),), fb_used=23200, fb_free=800,
                            engine=0.02),)),
), moves=1)
# Whole GPUs (worker-0 in two namespaces, the idle infer-1) and the GPU ts-0 and ts-1 share, which its exporter
# (without KUBERNETES_VIRTUAL_GPUS) names under each of them at alternate scrapes: idle at 3 %, both pods are.
FLEET_HERE = (*(node for node in FLEET if node.name in ("gpu-node-a", "gpu-node-b", "gpu-node-c", "gpu-node-ts")),
              MIG, MIXED, SHARED)


def _readings() -> tuple[dict[str, dict[bool, list[float]]], dict[str, list[float]]]:
    """Per pod, the utilization of each whole GPU and each MIG instance it holds (on MIG: graphics engine activity
    x 100), by kind (MIG or not), and the free memory of each."""
    util: dict[str, dict[bool, list[float]]] = {}
    free: dict[str, list[float]] = {}
    for node in FLEET_HERE:
        for gpu in node.gpus:
            for instance in gpu.instances:
                for namespace, pod in node.labelled(instance):  # every pod some scrape names
                    name = f"{namespace}/{pod}"
                    util.setdefault(name, {}).setdefault(gpu.mig, []).append(
                        instance.engine * 100 if gpu.mig else gpu.util)
                    free.setdefault(name, []).append(instance.fb_free)
    return util, free


def _idle() -> set[tuple[str, str, str | None]]:
    """The idle rule's alerts: (pod, GPU, MIG instance or None) of each whole GPU and each MIG instance a pod holds
    under 5 %, each judged on its own."""
    return {(f"{namespace}/{pod}", str(gpu.index), instance.id if gpu.mig else None)
            for node in FLEET_HERE for gpu in node.gpus for instance in gpu.instances
            for namespace, pod in instance.pods() if (instance.engine * 100 if gpu.mig else gpu.util) < 5}


def _truth() -> dict[str, set[str]]:
    """Per rule, the pods it names; the idle rule judges each whole GPU and each MIG instance a pod holds apart."""
    by_kind, free = _readings()
    util = {pod: [v for values in kinds.values() for v in values] for pod, kinds in by_kind.items()}
    return {"gpu-idle": {pod for pod, _, _ in IDLE},
            "framebuffer-full": {p for p, v in free.items() if min(v) < 1024},
            "pod-busy": {p for p, v in util.items() if max(v) > 60},
            "pod-starved": {p for p, v in util.items() if min(v) < 10}}


IDLE = _idle()
TRUTH = _truth()


def test_the_truth_is_where_the_old_meanings_differ():
    """Each MIG situation is one where the GPUs' means, or the sum of one GPU's instances, tell otherwise."""
    shared = {"team-s/share-0", "team-s/share-1"}  # each holds the idle, full GPU the label moves over
    sliced = {"team-d/ts-0", "team-d/ts-1"}  # each holds the idle GPU the label moves over
    assert IDLE == {("team-a/infer-1", "0", None), ("team-i/spread", "0", "1"), ("team-i/spread", "0", "2"),
                    ("team-i/skew", "0", "4"), ("team-i/both", "1", "1"), ("team-i/whole-idle", "2", None),
                    ("team-s/share-0", "0", None), ("team-s/share-1", "0", None), ("team-d/ts-0", "0", None),
                    ("team-d/ts-1", "0", None)}
    assert TRUTH == {"gpu-idle": {"team-a/infer-1", "team-i/spread", "team-i/skew", "team-i/both",
                                  "team-i/whole-idle", *shared, *sliced},
                     "framebuffer-full": {"team-i/pair", *shared},
                     "pod-busy": {"team-a/worker-0", "team-i/skew"},
                     "pod-starved": {"team-a/infer-1", "team-i/spread", "team-i/skew", "team-i/both",
                                     "team-i/whole-idle", *shared, *sliced}}
    by_kind, _ = _readings()  # a mean over both kinds would call neither pod idle
    assert {p for p in ("team-i/both", "team-i/whole-idle")
            if mean([v for values in by_kind[p].values() for v in values]) < 5} == set()
    assert mean(by_kind["team-i/skew"][True]) >= 5  # skew's two instances of GPU 0: the mean hides the idle one


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("mig-twins"), {"per_pod.py": RULES})


def built_with(folder, alarms: dict[str, str], fields=FIELDS, settings: str = ""):
    """The build of the bundled alarms and `alarms` (file name: text) on `fields` (the fleet's) with `settings`
    (gpudash.yaml text beside the definitions), its rules.yaml written into `folder` for promtool."""
    wanted = set(fields) | {"DCGM_FI_DRIVER_VERSION"}
    (folder / "counters.csv").write_text("\n".join(
        line for line in default_counters().read_text().splitlines()
        if line and not line.startswith("#") and line.split(",")[0].strip() in wanted) + "\n")
    shutil.copytree(bundled("alarms"), folder / "alarms")
    for name, text in alarms.items():
        (folder / "alarms" / name).write_text(text)
    (folder / "gpudash.yaml").write_text("definitions:\n  alarms: [alarms]\n" + settings)
    files = encode(build(load_project(folder / "gpudash.yaml", folder / "counters.csv")))
    (folder / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    return files, folder


def test_cloudwatch_alarms_name_the_pods_the_truth_names(built):
    files, _ = built
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(float(k * STEP), mixed_fleet.payload(node, k * STEP, STEP), target_labels(job, node.name))
               for k in range(STEPS) for node in FLEET_HERE]
    points = Agent(config, job).run(scrapes)
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    for rule, pods in TRUTH.items():
        mine = [r for r in requests if {"Key": "gpudash:rule", "Value": rule} in r["Tags"]]
        assert mine, rule
        fired = [dict(key) for request in mine
                 for key, state in cloudwatch_eval.alarm(request, points, STEPS * STEP).items() if state == "ALARM"]
        assert {f"{c['namespace']}/{c['pod']}" for c in fired} == pods, (rule, [r["Metrics"][0]["Expression"]
                                                                             for r in mine])
        if rule == "gpu-idle":  # each whole GPU and each MIG instance a pod holds, its contributor
            assert {(f"{c['namespace']}/{c['pod']}", c["gpu"], c.get("GPU_I_ID")) for c in fired} == IDLE


def _served(node: Node, k: int) -> str:
    """The node's payload at scrape k."""
    return mixed_fleet.payload(node, k * STEP, STEP)


def _series(node: Node, served=_served, late: int = 0) -> list[dict[str, str]]:
    """The node's gauges as Prometheus stores them from its scrapes (`served(node, k)`, at k * STEP + `late` s; the
    node attached), values LATE_STEP apart when `late`: a series a scrape leaves out (a moving pod label's) gets a
    staleness marker there, as Prometheus writes one."""
    values = mixed_fleet.stored(node, ("DCGM_FI_DEV_FB", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF"), STEPS, STEP, served)
    if late:  # restated LATE_STEP apart: none before `late`, none between the scrapes
        gap = STEP // LATE_STEP
        values = {series: ["_"] * (late // LATE_STEP) + [v for reading in readings
                                                          for v in [reading] + ["_"] * (gap - 1)]
                  for series, readings in values.items()}
    return [{"series": series, "values": " ".join(readings)} for series, readings in values.items()]


def test_prometheus_rules_name_the_pods_the_truth_names(built):
    _, folder = built
    alerts = alert_names(folder)
    at = f"{STEPS * STEP // 60 - 1}m"
    def named(pod: str) -> dict[str, str]:
        return dict(zip(("namespace", "pod"), pod.split("/")))
    profiles = {(f"{ns}/{pod}", str(gpu.index), instance.id): instance.profile for node in FLEET_HERE
                for gpu in node.gpus for instance in gpu.instances for ns, pod in instance.pods()}
    idle = [expected_alert(folder, alerts["gpu-idle"], **named(pod), gpu=gpu,
                      **({"GPU_I_ID": instance, "GPU_I_PROFILE": profiles[pod, gpu, instance]} if instance else {}))
            for pod, gpu, instance in sorted(IDLE, key=str)]
    checks = [{"eval_time": at, "alertname": alerts[rule],
               "exp_alerts": idle if rule == "gpu-idle" else [expected_alert(folder, alerts[rule], **named(pod))
                                                              for pod in sorted(pods)]}
              for rule, pods in TRUTH.items()]
    series = [s for node in FLEET_HERE for s in _series(node)]
    promtool_test(folder, "mig_twins.yaml", [{"interval": f"{STEP}s", "input_series": series,
                                               "alert_rule_test": checks}], evaluation_interval=f"{STEP}s")



# Scrapes LATE s after the minute's half: each minute, when both forms are judged, is 15 s after a scrape (no reading on
# a period's edge), and promtool evaluates once a minute (its input LATE_STEP apart).
LATE, LATE_STEP = 45, 15


def _fired(files, node: Node, minutes: range, rule: str = "gpu-idle", served=_served) -> dict[int, set[str]]:
    """Per minute, the pods the rule's CloudWatch alarms are in ALARM for at it, `node`'s payloads (`served(node, k)`,
    at k * STEP + LATE s) through the agent."""
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(k * STEP + LATE), served(node, k), target_labels(job, node.name))
                                     for k in range(STEPS)])
    idle = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
            if {"Key": "gpudash:rule", "Value": rule} in a["Request"]["Tags"]]
    return {minute: {dict(key)["pod"] for request in idle
                     for key, state in cloudwatch_eval.alarm(request, points, minute * 60).items()
                     if state == "ALARM"}
            for minute in minutes}



STUCK_RULE = (26, 27, 31, 32, 36, 37)  # the minutes the rule calls stuck-0 idle, its CloudWatch twin never


def test_a_pod_the_label_leaves_for_long_is_called_idle_late_or_never(built):
    """kubelet's order may also stay put for a while (#340): on `stuck` the exporter names stuck-0 for 20 minutes,
    then stuck-1, on a GPU both hold, idle (2 %) throughout, as SHARED's is, whose exporter names share-0 and
    share-1 at alternate scrapes. All four pods are idle. A per-pod rule reads only the readings the exporter names a
    pod on, and a period holding none of a pod's counts as not idle (the alarm's TreatMissingData notBreaching: it
    takes the latest periods with data within N + 2; the rule's weights do the same): share-0 is called idle from
    minute 26, share-1 from minute 27 (its first reading came a scrape later), but neither stuck pod at any minute of
    the 40 (each has readings in fewer than 6 of the last 8 periods, which the idle rule needs), as README says. The
    Prometheus rule agrees at every minute (15 s after a scrape: no reading on a period's edge), save that it reads
    stuck-0 on the GPU for the look-back (120 s) after the scrape that last named it, as the panels show it: at
    STUCK_RULE's minutes its periods hold 6 of 8 with readings, all idle, and the rule calls stuck-0 idle (it is:
    never a pod that does not hold the GPU), where the alarm, which has no reading of stuck-0 after 20:15, does not."""
    files, folder = built
    stuck = replace(SHARED, name="gpu-node-stuck", exporter_pod="nvidia-dcgm-exporter-k9l8m", moves=40, gpus=(
        replace(SHARED.gpus[0], instances=(replace(SHARED.gpus[0].instances[0], pod=("team-s", "stuck-0"),
                                                   also=(("team-s", "stuck-1"),)),)),))
    minutes = range(10, STEPS * STEP // 60)
    alternate, stuck_fired = _fired(files, SHARED, minutes), _fired(files, stuck, minutes)
    assert {m: pods for m, pods in alternate.items() if pods} == {26: {"share-0"}, **{
        m: {"share-0", "share-1"} for m in range(27, 40)}}
    assert not any(stuck_fired.values())
    groups = parsed_rules((folder / "rules.yaml").read_text())["groups"]
    alert = next(r["alert"] for g in groups for r in g["rules"] if "alert" in r and r["labels"]["gpudash_rule"] == "gpu-idle")
    # the rule reads stuck-0 on the GPU for the look-back after the scrape that last named it (20:15 to 22:15): the
    # periods ending at these minutes hold 6 of the 8 with its readings, idle (true: stuck-0 holds the idle GPU)
    checks = [{"eval_time": f"{minute}m", "alertname": alert,
               "exp_alerts": [expected_alert(folder, alert, namespace="team-s", pod=pod, gpu="0")
                              for pod in sorted({*pods, *(("stuck-0",) if minute in STUCK_RULE else ())})]}
              for minute, pods in alternate.items()]
    promtool_test(folder, "stuck.yaml", [{"interval": f"{LATE_STEP}s", "alert_rule_test": checks,
                                           "input_series": _series(SHARED, late=LATE) + _series(stuck, late=LATE)}],
                   evaluation_interval="1m")


PEAK = 41  # the scrape at 21:15 (LATE), which names peak-1


def _peak(node: Node, k: int) -> str:
    """`peaked`'s payload: 12,000 MiB free but 800 at scrape PEAK."""
    text = _served(node, k)
    return re.sub(r"^(DCGM_FI_DEV_FB_FREE\{.*\}) 12000$", r"\g<1> 800", text, flags=re.M) if k == PEAK else text


def test_a_shared_gpu_full_at_one_reading_alarms_for_each_pod_holding_it_in_the_rule(built):
    """A GPU peak-0 and peak-1 time-slice, named at alternate scrapes, had 800 MiB free at one reading (21:15), under
    peak-1's name. Both pods hold the full GPU then: the framebuffer rule (a reading of the last 5 minutes under
    1,024 MiB) reads the GPU under each pod a scrape within the look-back named, as the panels show it, and alarms for
    both, at minutes 22 to 26 (it alarmed for peak-1 alone); the CloudWatch alarm reads a pod's readings at the
    scrapes naming it, and alarms for peak-1 alone, as README says."""
    files, folder = built
    peaked = replace(SHARED, name="gpu-node-peak", exporter_pod="nvidia-dcgm-exporter-p4q5r", gpus=(
        replace(SHARED.gpus[0], instances=(replace(SHARED.gpus[0].instances[0], pod=("team-s", "peak-0"),
                                                   also=(("team-s", "peak-1"),), fb_free=12000),)),))
    assert peaked.labelled(peaked.gpus[0].instances[0], PEAK) == (("team-s", "peak-1"),)
    fired = _fired(files, peaked, range(15, STEPS * STEP // 60), "framebuffer-full", _peak)
    assert {m: pods for m, pods in fired.items() if pods} == {m: {"peak-1"} for m in range(22, 27)}
    groups = parsed_rules((folder / "rules.yaml").read_text())["groups"]
    alert = next(r["alert"] for g in groups for r in g["rules"] if "alert" in r and r["labels"]["gpudash_rule"] == "framebuffer-full")
    checks = [{"eval_time": f"{minute}m", "alertname": alert,
               "exp_alerts": [expected_alert(folder, alert, namespace="team-s", pod=pod)
                              for pod in (("peak-0", "peak-1") if pods else ())]}
              for minute, pods in fired.items()]
    promtool_test(folder, "peak.yaml", [{"interval": f"{LATE_STEP}s", "alert_rule_test": checks,
                                          "input_series": _series(peaked, _peak, LATE)}], evaluation_interval="1m")

"""The idle rule judges each GPU a pod holds (a pod using one of its two GPUs leaves the other idle, which a mean over
the pod's GPUs hides): its Prometheus rule, the GROUP BY alarm (alarms.per_pod: group_by, one contributor per pod and
GPU) and the static alarm of a listed pod (alarms.per_pod: static: a Metrics Insights alarm on the pod, each GPU it
holds a contributor) fire for the same GPUs of the same pod.

A classic alarm on the pod's mean over its GPUs read 50 % for a pod at 100 % on GPU 0 and 0 % on GPU 1 and never
fired. A classic alarm on the least of its GPUs' means per period (metric math over one metric per GPU index) would
fire where the idle GPU changes inside the window (GPU 0 idle for 5 minutes, then GPU 1 for 25: no GPU idle for 30
minutes, the rule silent): the story "swapped" below.

Each story's payloads go through the model of the agent running each build's configuration (the truth is its
facts); the rule is judged by promtool over the same payloads as the generated scrape job stores them.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import AGENT_FILE
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.projects import defined_project
from tests.support.promtool_rules import alert_names, expected_alert, promtool_test

STEP, END = 30, 3000  # 50 minutes of 30 s scrapes; the idle window is the last 30 minutes, from 1200
POD = ("ml", "train-0")
NODE = "ip-10-0-1-1"
STATIC = "alarms:\n  per_pod: static\n  static_pods: [ml/train-0]\n"
PIPELINES = {"otel": "", "classic": "agent:\n  pipeline: classic\n"}


def _gpu(index: int, util: float) -> mixed_fleet.Gpu:
    return mixed_fleet.Gpu(index, temp=50, power=200, sm_clock=1500, xid=0, energy_mw=200_000, replays_per_s=0,
                           memory_temp=50, util=util, instances=(mixed_fleet.Instance(
                               fb_used=9000, fb_free=15000, engine=util / 100, pod=POD),))


def _node(utils: tuple[float, float]) -> mixed_fleet.Node:
    """One node whose two GPUs the pod holds, at these utilizations."""
    return mixed_fleet.Node(NODE, "Hostname", "nvidia-dcgm-exporter-a1b2c", (_gpu(0, utils[0]), _gpu(1, utils[1])))


# story: (utilizations of GPU 0 and 1 before 1500 s, after it), the GPUs idle for the last 30 minutes (the truth)
STORIES = {
    "one idle": (((100, 0), (100, 0)), {"1"}),
    "both idle": (((0, 2), (0, 2)), {"0", "1"}),
    "both busy": (((60, 40), (60, 40)), set()),
    "swapped": (((0, 100), (100, 0)), set()),  # GPU 0 idle 1200-1500, GPU 1 from 1500: neither for 30 minutes
}


def _at(story: str, t: int) -> mixed_fleet.Node:
    before, after = STORIES[story][0]
    return _node(before if t < 1500 else after)


@pytest.fixture(scope="module", params=sorted(PIPELINES))
def builds(request, tmp_path_factory):
    """{per_pod mode: (folder holding rules.yaml, the build's files)} on one agent pipeline."""
    made = {}
    for mode, settings in (("group_by", ""), ("static", STATIC)):
        folder = tmp_path_factory.mktemp(f"{request.param}-{mode}")
        files = encode(build(defined_project(folder, PIPELINES[request.param] + settings), grafana=False))
        (folder / "rules.yaml").write_bytes(files["prometheus/rules.yaml"])
        made[mode] = folder, files
    return made


def _alarmed(files: dict, story: str) -> dict[str, set[str]]:
    """{idle alarm on whole GPUs (gpu-idle, not its MIG form): the GPUs of the pod its contributors in ALARM name at
    END}, the story's scrapes through the build's agent model."""
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(k * STEP, mixed_fleet.payload(_at(story, k * STEP), k * STEP, STEP),
                                            target_labels(job, NODE)) for k in range(-2, END // STEP)])
    fired = {}
    for alarm in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        request = alarm["Request"]
        if "-gpu-idle-warning" in request["AlarmName"]:
            states = cloudwatch_eval.alarm(request, points, END)
            fired[request["AlarmName"]] = {dict(key)["gpu"] for key, state in states.items() if state == "ALARM"}
            assert all(dict(key)[name] == value for key in states for name, value in zip(("namespace", "pod"), POD))
    return fired


@pytest.mark.parametrize("story", sorted(STORIES))
def test_the_static_alarm_of_a_listed_pod_fires_for_the_gpus_its_group_by_alarm_does(builds, story):
    truth = STORIES[story][1]
    assert _alarmed(builds["group_by"][1], story) == {"gpudash-gpu-cluster-gpu-idle-warning": truth}
    assert _alarmed(builds["static"][1], story) == {"gpudash-gpu-cluster-gpu-idle-warning-ml-train-0": truth}


def _stored(story: str) -> list[dict[str, str]]:
    """The story's GPU utilization as the generated scrape job stores it (it attaches `node`)."""
    values: dict[str, list[str]] = {}
    steps = END // STEP + 1
    for k in range(steps):
        for line in mixed_fleet.payload(_at(story, k * STEP), k * STEP, STEP).splitlines():
            if line.startswith("DCGM_FI_DEV_GPU_UTIL{"):
                series, value = line.rsplit(" ", 1)
                values.setdefault(f'{series[:-1]},node="{NODE}"}}', ["_"] * steps)[k] = value
    return [{"series": series, "values": " ".join(readings)} for series, readings in values.items()]


@pytest.mark.parametrize("mode", ["group_by", "static"])
def test_the_prometheus_twin_fires_for_the_same_gpus(builds, mode):
    """promtool, each story at END: the rule of each mode's build fires for the story's idle GPUs of the pod."""
    folder, _ = builds[mode]
    alert = alert_names(folder)["gpu-idle"]
    promtool_test(folder, f"{mode}-idle.yaml", [{
        "interval": f"{STEP}s", "input_series": _stored(story),
        "alert_rule_test": [{"eval_time": f"{END}s", "alertname": alert,
                             "exp_alerts": [expected_alert(folder, alert, namespace=POD[0], pod=POD[1], gpu=gpu)
                                            for gpu in sorted(STORIES[story][1])]}]} for story in sorted(STORIES)],
        evaluation_interval=f"{STEP}s")


def test_a_static_build_publishes_the_pods_gpus_set_its_idle_alarm_reads(builds):
    """The static build's agent publishes GPU utilization per pod and GPU (the set the pod's query reads), as the
    GROUP BY build does, and lint finds nothing unpublished (AG001)."""
    _, files = builds["static"]
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if "-gpu-idle-warning" in a["Request"]["AlarmName"]]
    (query,) = request["Metrics"]
    assert "\"pod\" = 'train-0'" in query["Expression"] and "GROUP BY" in query["Expression"]
    read = cloudwatch_eval.reads(request)
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(0, mixed_fleet.payload(_node((100, 0)), 0, STEP),
                                            target_labels(job, NODE))])
    published = {(p.namespace, p.metric, frozenset(name for name, _ in p.dimensions)) for p in points}
    assert read <= published


def test_generate_says_when_the_listed_pods_take_a_region_past_the_metrics_insights_alarm_quota(cli, project_dir,
                                                                                               tmp_path):
    """Each listed pod's idle alarm is a Metrics Insights alarm, and a second on the MIG instances it holds where GPUs
    may be split: 200 pods take a Region past its default quota of 200 (beside the cluster's GROUP BY alarms), and
    the warning names the static pods; 150 do not where no GPU is split (exporter.mig: none), and do where GPUs may
    be (300 idle alarms)."""
    for pods, mig, warned in ((150, "  mig: none\n", False), (200, "  mig: none\n", True), (150, "", True)):
        names = ", ".join(f"ml/p{i}" for i in range(pods))
        config = project_dir(f"alarms:\n  per_pod: static\n  static_pods: [{names}]\nexporter:\n{mig or '  {}'}")
        code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / f"build-{pods}-{bool(mig)}"))
        assert code == 0, stderr
        said = ("exceed the default quota of 200 per Region; ask for an increase or use fewer clusters per Region "
                "(each pod of alarms.static_pods has one per cluster for a rule judging each GPU it holds, and a "
                "second on the MIG instances it holds where GPUs may be split: fewer static pods, exporter.mig: none "
                "where no GPU is split, or alarms.per_pod: group_by)")
        assert (said in stderr) == warned, stderr


def _mig_node() -> mixed_fleet.Node:
    """The pod on two MIG instances of one GPU: instance 1 busy (80 % of its graphics engine), instance 2 idle (1 %)."""
    instances = tuple(mixed_fleet.Instance(id=i, profile="3g.20gb", pod=POD, fb_used=5000, fb_free=15000,
                                           engine=engine) for i, engine in (("1", 0.8), ("2", 0.01)))
    return mixed_fleet.Node(NODE, "Hostname", "nvidia-dcgm-exporter-a1b2c", (mixed_fleet.Gpu(
        0, temp=50, power=200, sm_clock=1500, xid=0, energy_mw=200_000, replays_per_s=0, memory_temp=50,
        instances=instances),))


def _fired_on_mig(files: dict) -> set[tuple[str, str]]:
    """(gpu, GPU_I_ID) of every idle-alarm contributor in ALARM at END, the MIG node's payloads through the agent."""
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(k * STEP, mixed_fleet.payload(_mig_node(), k * STEP, STEP),
                                            target_labels(job, NODE)) for k in range(-2, END // STEP)])
    return {(dict(key)["gpu"], dict(key).get("GPU_I_ID", "")) for alarm in
            json.loads(files["cloudwatch/alarms.json"])["alarms"] if "-gpu-idle-" in alarm["Request"]["AlarmName"]
            for key, state in cloudwatch_eval.alarm(alarm["Request"], points, END).items() if state == "ALARM"}


def test_the_static_build_fires_for_the_idle_mig_instance_of_a_listed_pod(builds):
    """A listed pod's idle MIG instance fires the Prometheus rule and the GROUP BY build's MIG alarm; the static build
    judged the pod's whole GPUs only (lint AL012 said so). Each listed pod now has a second alarm, on the MIG instances
    it holds (the stand-in field, as the GROUP BY build's)."""
    assert _fired_on_mig(builds["group_by"][1]) == {("0", "2")}
    assert _fired_on_mig(builds["static"][1]) == {("0", "2")}


def test_a_pod_of_the_listed_name_in_another_namespace_is_not_the_listed_pods(builds):
    """The listed pod ml/train-0 busy on its two GPUs beside dev/train-0 idle on a third GPU of the node: the listed
    pod's static alarm reads its own namespace's pod only and stays quiet; the GROUP BY alarm fires for dev/train-0."""
    neighbour = mixed_fleet.Gpu(2, temp=50, power=200, sm_clock=1500, xid=0, energy_mw=200_000, replays_per_s=0,
                                memory_temp=50, util=0, instances=(mixed_fleet.Instance(
                                    fb_used=9000, fb_free=15000, engine=0.0, pod=("dev", POD[1])),))
    node = mixed_fleet.Node(NODE, "Hostname", "nvidia-dcgm-exporter-a1b2c", (_gpu(0, 100), _gpu(1, 100), neighbour))
    fired = {}
    for mode, (_, files) in builds.items():
        config, job = agent_config(files[AGENT_FILE])
        points = Agent(config, job).run([Scrape(k * STEP, mixed_fleet.payload(node, k * STEP, STEP),
                                                target_labels(job, NODE)) for k in range(-2, END // STEP)])
        for alarm in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
            request = alarm["Request"]
            if "-gpu-idle-warning" in request["AlarmName"]:
                fired[request["AlarmName"]] = {
                    tuple(dict(key)[name] for name in ("namespace", "pod", "gpu"))
                    for key, state in cloudwatch_eval.alarm(request, points, END).items() if state == "ALARM"}
    assert fired == {"gpudash-gpu-cluster-gpu-idle-warning": {("dev", "train-0", "2")},
                     "gpudash-gpu-cluster-gpu-idle-warning-ml-train-0": set()}

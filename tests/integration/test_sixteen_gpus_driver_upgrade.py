"""A 16-GPU node through a driver upgrade, on a real Prometheus holding its history (backfilled) and through the
CloudWatch agent's model: every bundled panel, the query variables and the alert rules against the readings.

The story (30 s scrapes, 2 hours): node n16 holds 16 GPUs (indices 0 to 15, so "1" and "10" to "15" share a first
digit). At UPGRADE the GPU operator upgrades the driver: the exporter pod is replaced (another pod and address),
and the new exporter is a newer release: it writes `hostname` where the old wrote `Hostname`, a new
`DCGM_FI_DRIVER_VERSION`, and adds `pci_bus_id`; the driver reload restarts the energy and PCIe replay counters from
0. Pods: ml/train holds GPU 1 (container `a`) and GPU 10 (container `b`: one pod, two containers, a GPU each), ml/train-1
(a name ml/train is a prefix of) GPU 11; the other 13 GPUs are idle (no pod labels). GPU i draws 100 + 10 i W (its
energy counter grows at that rate), reads 40 + i °C, uses 1000 (i + 1) of 80,000 MiB, and is 5 i % busy, but GPU 1,
2 % busy (below the idle threshold, 5 %, all along).

Truth, before, across and after the upgrade: 16 GPUs, each its own line `n16 GPU <i>` with its readings; ml/train
2 GPUs drawing 310 W (26 % busy on average, 13,000 MiB used), ml/train-1 1 GPU drawing 210 W; picking the pod
`train` shows ml/train alone, picking GPU 1 shows GPU 1 alone; the idle alert names ml/train's GPU 1 alone, on
either side of the upgrade; nothing else alerts.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.support import cloudwatch_eval
from tests.support.built import files as built_files
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import close
from tests.support.dcgm_fleet import EXPORTER_NAMESPACE, discovered
from tests.support.grafana_variables import query_variables, range_options
from tests.support.projects import bundled_panels, bundled_project
from tests.support.prometheus_server import backfilled_fixture, counted_inline
from tests.support.promtool_rules import parsed_rules
from tests.support.range_panels import panel_at

SPAN, STEP = 7200, 30
UPGRADE = 3600  # the new exporter's first scrape is the first at or after it
GPUS = range(16)
PODS = {1: ("ml", "train", "a"), 10: ("ml", "train", "b"), 11: ("ml", "train-1", "main")}
ENERGY, REPLAYS = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
GAUGES = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED",
          "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_GPU_UTIL",
          "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_XID_ERRORS")
VARIABLES = ("namespace", "pod", "node", "gpu")
OLD = {"pod": "nvidia-dcgm-exporter-xkz9q", "address": "10.0.0.16", "offset": 3}
NEW = {"pod": "nvidia-dcgm-exporter-bcdfg", "address": "10.0.0.17", "offset": 15}
# instants (seconds into the story): long before, the rate windows across the upgrade, long after
BEFORE, ACROSS, AFTER = (1800,), (3630, 3690, 3750), (6000,)


def power(i: int) -> float:
    return 100.0 + 10 * i


def utilization(i: int) -> float:
    return 2.0 if i == 1 else 5.0 * i


def reading(metric: str, i: int, t: int) -> float:
    """What the exporter serving at t (old before UPGRADE, new from it) reads for GPU i on the scrape grid's t."""
    fixed = {"DCGM_FI_DEV_GPU_TEMP": 40 + i, "DCGM_FI_DEV_MEMORY_TEMP": 50 + i, "DCGM_FI_DEV_POWER_USAGE": power(i),
             "DCGM_FI_DEV_FB_USED": 1000 * (i + 1), "DCGM_FI_DEV_FB_FREE": 80_000 - 1000 * (i + 1),
             "DCGM_FI_DEV_SM_CLOCK": 1500, "DCGM_FI_DEV_MEM_CLOCK": 2600, "DCGM_FI_DEV_GPU_UTIL": utilization(i),
             "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": i / 100, "DCGM_FI_DEV_XID_ERRORS": 0}
    if metric in fixed:
        return float(fixed[metric])
    since = t if t < UPGRADE else t - UPGRADE  # the driver reload restarts both counters from 0
    if metric == ENERGY:
        return (5e9 if t < UPGRADE else 0.0) + power(i) * 1000 * since  # mJ
    return float(since // STEP * (2 if t < UPGRADE else 1))  # replays: 2 a scrape before, 1 after


def _labels(i: int, t: int) -> str:
    labels = f'gpu="{i}",UUID="GPU-5e1c0de0-{i:04d}",device="nvidia{i}",modelName="NVIDIA H100 80GB HBM3"'
    if t < UPGRADE:
        labels += ',Hostname="n16",DCGM_FI_DRIVER_VERSION="550.54.15"'
    else:
        labels += f',pci_bus_id="00000000:{0x18 + i:02X}:00.0",hostname="n16",DCGM_FI_DRIVER_VERSION="570.133.20"'
    if i in PODS:
        namespace, pod, container = PODS[i]
        labels += f',container="{container}",namespace="{namespace}",pod="{pod}"'
    return labels


def _exporter(t: int) -> dict:
    return OLD if t < UPGRADE else NEW


def _openmetrics(start: int) -> str:
    lines = []
    for metric in (*GAUGES, ENERGY, REPLAYS):
        lines.append(f"# TYPE {metric} gauge")
        for t in range(0, SPAN + 1, STEP):
            exporter = _exporter(t)
            target = (f'instance="{exporter["address"]}:9400",job="gpu-metrics",node="n16",'
                      f'exporter_pod="{exporter["pod"]}"')
            lines += [f"{metric}{{{_labels(i, t)},{target}}} {reading(metric, i, t):.0f} {start + t + exporter['offset']}"
                      if metric in (ENERGY, REPLAYS) else
                      f"{metric}{{{_labels(i, t)},{target}}} {reading(metric, i, t):g} {start + t + exporter['offset']}"
                      for i in GPUS]
    return "\n".join(lines) + "\n# EOF\n"


history = backfilled_fixture("sixteen-gpus-driver-upgrade", _openmetrics, SPAN, STEP)


def _shown(prometheus, start: int, panel: dict, at: int, **selected: str) -> dict[str, float]:
    """{legend: value} of the panel at `at` (seconds into the story), as Grafana asks for it over the 2 hours."""
    return panel_at(prometheus, bundled_project(), panel, start + at, SPAN, **selected)


PER_GPU = {  # bundled per-GPU panel -> each GPU's truth
    **{title: (lambda m: lambda i: reading(m, i, 0))(metric) for title, metric in (
        ("GPU temperature", "DCGM_FI_DEV_GPU_TEMP"), ("Memory temperature", "DCGM_FI_DEV_MEMORY_TEMP"),
        ("Power draw", "DCGM_FI_DEV_POWER_USAGE"), ("SM clock", "DCGM_FI_DEV_SM_CLOCK"),
        ("Memory clock", "DCGM_FI_DEV_MEM_CLOCK"), ("GPU utilization", "DCGM_FI_DEV_GPU_UTIL"),
        ("Framebuffer memory used", "DCGM_FI_DEV_FB_USED"), ("Tensor core activity", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
        ("Last XID error code", "DCGM_FI_DEV_XID_ERRORS"), ("DEV_FB_FREE", "DCGM_FI_DEV_FB_FREE"))},
    "DEV_TOTAL_ENERGY_CONSUMPTION": lambda i: power(i) * 1000,  # mJ per second: mW
}
SUMS = {"ml/train": (1, 10), "ml/train-1": (11,)}
PER_POD = {  # bundled per-pod panel -> the pod's truth from its GPUs
    "Power draw of each pod's GPUs": lambda gpus: sum(power(i) for i in gpus),
    "Energy use rate of each pod's GPUs": lambda gpus: sum(power(i) * 1000 for i in gpus),
    "Framebuffer used by pod": lambda gpus: sum(1000.0 * (i + 1) for i in gpus),
    "Framebuffer used share by pod": lambda gpus: sum(1000.0 * (i + 1) for i in gpus) / (80_000 * len(gpus)),
    "GPU utilization by pod": lambda gpus: sum(utilization(i) for i in gpus) / len(gpus),
    "Tensor core activity by pod": lambda gpus: sum(i / 100 for i in gpus) / len(gpus),
    "SM clock by pod": lambda gpus: 1500.0,
    "Pods on GPUs": lambda gpus: float(len(gpus)),
}
FLEET = {"GPUs reporting": 16.0, "Average GPU utilization": sum(utilization(i) for i in GPUS) / 16,
         "Average GPU temperature": 47.5, "Total power draw": sum(power(i) for i in GPUS), "Hottest GPU": 55.0,
         "Framebuffer in use": sum(1000.0 * (i + 1) for i in GPUS) / (80_000 * 16)}


def _near(shown: dict[str, float], truth: dict[str, float]) -> bool:
    return shown.keys() == truth.keys() and all(abs(shown[k] - truth[k]) <= 1e-9 * max(1.0, abs(truth[k]))
                                                for k in truth)


def _truth(title: str) -> dict[str, float]:
    if title in PER_GPU:
        return {f"n16 GPU {i}": PER_GPU[title](i) for i in GPUS}
    return {f"Pod {pod}": PER_POD[title](gpus) for pod, gpus in SUMS.items()}


@pytest.mark.parametrize("title", sorted({*PER_GPU, *PER_POD}))
def test_each_gpu_and_pod_is_its_own_line_with_its_readings_across_the_upgrade(history, title):
    prometheus, start = history
    panel, truth = bundled_panels()[title], _truth(title)
    wrong = {at: shown for at in (*BEFORE, *ACROSS, *AFTER)
             if not _near(shown := _shown(prometheus, start, panel, at), truth)}
    assert not wrong, (truth, wrong)


@pytest.mark.parametrize("title", sorted(FLEET))
def test_the_fleet_figures_count_sixteen_gpus_once(history, title):
    prometheus, start = history
    panel = bundled_panels()[title]
    for at in (*BEFORE, *ACROSS, *AFTER):
        assert list(_shown(prometheus, start, panel, at).values()) == pytest.approx([FLEET[title]]), at


def test_the_replay_rate_falls_from_the_old_rate_to_the_new_without_a_spike(history):
    """The counters restart from 0 at the driver reload: no negative rate, nothing above the rate before it."""
    prometheus, start = history
    panel = bundled_panels()["PCIe replays"]
    assert _shown(prometheus, start, panel, BEFORE[0]) == pytest.approx({f"n16 GPU {i}": 2 / 30 for i in GPUS})
    assert _shown(prometheus, start, panel, AFTER[0]) == pytest.approx({f"n16 GPU {i}": 1 / 30 for i in GPUS})
    for at in range(UPGRADE - 60, UPGRADE + 300, STEP):
        shown = _shown(prometheus, start, panel, at)
        assert set(shown) == {f"n16 GPU {i}" for i in GPUS}, at
        assert all(1 / 30 - 1e-9 <= v <= 2 / 30 + 1e-9 for v in shown.values()), (at, shown)


@pytest.mark.parametrize("title", ["Power draw of each pod's GPUs", "Pods on GPUs", "GPU temperature",
                                   "Energy use rate of each pod's GPUs"])
def test_picking_a_pod_whose_name_begins_another_shows_that_pod_alone(history, title):
    prometheus, start = history
    panel = bundled_panels()[title]
    per_gpu = title == "GPU temperature"
    truth = ({"n16 GPU 1": 41.0, "n16 GPU 10": 50.0} if per_gpu else
             {"Pod ml/train": PER_POD[title]((1, 10))})
    for at in (*BEFORE, *AFTER):
        assert _shown(prometheus, start, panel, at, pod="train") == pytest.approx(truth), at


@pytest.mark.parametrize("title", ["Power draw", "Power draw of each pod's GPUs", "Pods on GPUs"])
def test_picking_gpu_1_shows_gpu_1_alone_not_10_to_15(history, title):
    prometheus, start = history
    panel = bundled_panels()[title]
    truth = {"n16 GPU 1": 110.0} if title == "Power draw" else {"Pod ml/train": PER_POD[title]((1,))}
    for at in (*BEFORE, *AFTER):
        assert _shown(prometheus, start, panel, at, gpu="1") == pytest.approx(truth), at


def test_the_variables_list_the_node_its_sixteen_gpus_and_both_pods(history):
    prometheus, start = history
    named, end = query_variables(), start + SPAN
    assert range_options(prometheus, named["node"], end) == {"n16"}
    assert range_options(prometheus, named["gpu"], end, node="n16") == {str(i) for i in GPUS}
    assert range_options(prometheus, named["gpu"], end, pod="train") == {"1", "10"}
    assert range_options(prometheus, named["pod"], end) == {"train", "train-1"}
    assert range_options(prometheus, named["namespace"], end) == {"ml"}


def test_the_alert_rules_name_the_idle_gpu_alone_on_both_sides_of_the_upgrade(history, tmp_path):
    """ml/train's GPU 1 is 2 % busy all along (idle: under 5 % for 30 minutes); no GPU is hot, failing or lost.
    (The data-missing rules read kube-state-metrics, which this story does not hold: not judged here.)"""
    import yaml

    from generator.artifacts import build
    from generator.output import encode

    prometheus, start = history
    project = bundled_project()
    groups = parsed_rules(encode(build(project, grafana=False))["prometheus/rules.yaml"])["groups"]
    alerts = [r for g in groups for r in g["rules"] if "alert" in r and r["alert"] != "GpudashGpuDataMissing"]
    for at in (2400, UPGRADE + 300, SPAN):
        fired = {(r["alert"], s["metric"].get("namespace"), s["metric"].get("pod"), s["metric"].get("gpu"))
                 for r in alerts for s in prometheus.query(counted_inline(r["expr"], project), at=start + at)}
        assert fired == {("GpudashGpuIdle", "ml", "train", "1")}, at


# CloudWatch: the same node's scrapes through the agent's model (the bundled agent configuration, OTel pipeline)
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"


def _payload(t: int) -> str:
    lines = []
    for metric in (*GAUGES, ENERGY, REPLAYS):
        kind = "counter" if metric in (ENERGY, REPLAYS) else "gauge"
        lines += [f"# HELP {metric} {metric}.", f"# TYPE {metric} {kind}"]
        lines += [f"{metric}{{{_labels(i, t)}}} {reading(metric, i, t):.0f}" if kind == "counter" else
                  f"{metric}{{{_labels(i, t)}}} {reading(metric, i, t):g}" for i in GPUS]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def cloudwatch():
    files = built_files("")
    config, job = agent_config(files[AGENT_FILE])

    def target(exporter: dict) -> dict[str, str]:
        return discovered(job, {
            "__address__": f"{exporter['address']}:9400", "__meta_kubernetes_namespace": EXPORTER_NAMESPACE,
            "__meta_kubernetes_pod_name": exporter["pod"], "__meta_kubernetes_pod_node_name": "n16",
            "__meta_kubernetes_pod_container_port_number": "9400",
            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
            "__meta_kubernetes_pod_controller_kind": "DaemonSet",
            "__meta_kubernetes_pod_label_controller_revision_hash": "5d8f7c9b6d",
            "__meta_kubernetes_pod_label_app_kubernetes_io_name": "dcgm-exporter"})

    scrapes = [Scrape(float(t + _exporter(t)["offset"]), _payload(t), target(_exporter(t)))
               for t in range(0, SPAN + 1, STEP)]
    widgets = {}
    for path in sorted(p for p in files if p.startswith("cloudwatch/dashboards/")):
        for widget in json.loads(json.loads(files[path])["DashboardBody"])["widgets"]:
            if widget["type"] == "metric":
                widgets[re.sub(r" \(the 50 .*\)$", "", widget["properties"]["title"])] = widget["properties"]
    return widgets, Agent(config, job).run(scrapes)


CLOUDWATCH_PER_GPU = {"GPU temperature": "DCGM_FI_DEV_GPU_TEMP", "Power draw": "DCGM_FI_DEV_POWER_USAGE",
                      "GPU utilization": "DCGM_FI_DEV_GPU_UTIL", "Memory temperature": "DCGM_FI_DEV_MEMORY_TEMP"}


@pytest.mark.parametrize("title", sorted(CLOUDWATCH_PER_GPU))
def test_cloudwatch_draws_each_of_the_sixteen_gpus_with_its_readings(cloudwatch, title):
    widgets, datapoints = cloudwatch
    shown = cloudwatch_eval.widget(widgets[title], datapoints, 0, SPAN)
    assert set(shown) == {f"n16 GPU {i}" for i in GPUS}
    for i in GPUS:
        values = shown[f"n16 GPU {i}"]
        assert values and all(close(v, reading(CLOUDWATCH_PER_GPU[title], i, 0)) for v in values.values()), i


@pytest.mark.parametrize("title", ["Power draw of each pod's GPUs", "Framebuffer used by pod", "GPU utilization by pod",
                                   "Energy use rate of each pod's GPUs"])
def test_cloudwatch_reads_each_pod_from_its_gpus(cloudwatch, title):
    """Every 5-minute period; the energy rate's but the first and the one the new exporter starts in: there the
    agent's first reading of each counter series is only its baseline (docs/cloudwatch.md)."""
    widgets, datapoints = cloudwatch
    shown = cloudwatch_eval.widget(widgets[title], datapoints, 0, SPAN)
    assert set(shown) == {f"Pod {pod}" for pod in SUMS}
    for pod, gpus in SUMS.items():
        truth = PER_POD[title](gpus)
        judged = {t: v for t, v in shown[f"Pod {pod}"].items() if not (title.startswith("Energy") and t in (0, UPGRADE))}
        assert len(judged) >= SPAN // 300 - 2 and all(close(v, truth) for v in judged.values()), (pod, judged)


def test_cloudwatch_alarms_name_the_idle_gpu_alone_on_both_sides_of_the_upgrade(cloudwatch):
    """The alarms through the same agent model: the idle alarm's one contributor in ALARM is ml/train's GPU 1; the
    others stay OK. (The data-missing alarms read kube-state-metrics, which this story does not hold: not judged.)"""
    _, datapoints = cloudwatch
    alarms = [a["Request"] for a in json.loads(built_files("")["cloudwatch/alarms.json"])["alarms"]
              if "data-missing" not in a["Request"]["AlarmName"]]
    for end in (2400, UPGRADE + 300, SPAN):
        alarming = {(request["AlarmName"], key) for request in alarms
                    for key, state in cloudwatch_eval.alarm(request, datapoints, end).items() if state == "ALARM"}
        assert alarming == {("gpudash-gpu-cluster-gpu-idle-warning",
                             (("namespace", "ml"), ("pod", "train"), ("gpu", "1")))}, end

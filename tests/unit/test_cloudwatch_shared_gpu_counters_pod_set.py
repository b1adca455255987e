"""A GPU pods share under KUBERNETES_VIRTUAL_GPUS (exporter.virtual_gpus: one copy of each field per pod holding
it) reads each counter once per GPU on CloudWatch whatever names the per-pod set adds to [ClusterName, namespace,
pod] (container, modelName, Service, gpu, UUID: names docs/cloudwatch.md allows there).

The agent merges the pods' copies of a counter into one series per GPU for the per-GPU sets, keeping only the labels
those sets name; the sets of a pod's totals per scrape ([ClusterName, namespace, pod, pod_total]) are the pod's
whatever the per-pod set adds, so they are no per-GPU set. Read as one, their namespace and pod were kept in the
GPU's merged copy: the copies stayed apart and the per-GPU widgets and alarms read each increase once per pod (a GPU
replaying 0.1 a second, shared by two pods: "PCIe replays" 0.2, NVLink 80 GB/s for 40, and the PCIe replays alarm
60 per 5 minutes for 30, over its level of 50).

The truth is the fleet's facts (each GPU's rate); the values are the build's own widgets and alarm evaluated over the
fleet's scrapes through the model of the agent running the build's configuration.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.render.cloudwatch import panel_title
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import AGENT_FILE, scrapes, through_agent
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.cloudwatch_widgets import close, widgets
from tests.support.lint_input import agent_lint
from tests.support.projects import defined_project

STEP, END, PERIOD = 30, 2100, 300
REPLAYS = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"


def _gpu(index: int, pods: tuple[tuple[str, str], ...], replays: float, nvlink: float) -> mixed_fleet.Gpu:
    return mixed_fleet.Gpu(index, temp=50, power=200, sm_clock=1500, xid=0, energy_mw=200_000, replays_per_s=replays,
                           memory_temp=50, util=60, nvlink_mb_per_s=nvlink,
                           instances=(mixed_fleet.Instance(fb_used=12000, fb_free=12000, engine=0.6, pod=pods[0],
                                                           also=pods[1:]),))


# GPU 0 shared by two pods (one copy of each field per pod), GPU 1 held by one
NODE = mixed_fleet.Node("ip-10-0-1-1", "Hostname", "nvidia-dcgm-exporter-a1b2c", (
    _gpu(0, (("ml", "train-a"), ("ml", "train-b")), replays=0.1, nvlink=40_000),
    _gpu(1, (("ml", "infer-0"),), replays=0.1, nvlink=20_000),
), virtual_gpus=True)
TRUTH = {"PCIe replays": {f"ip-10-0-1-1 GPU {g.index}": g.replays_per_s for g in NODE.gpus},
         # a level beside them, served typed counter: each GPU's reading, not its pods' copies added
         "NVLink throughput": {f"ip-10-0-1-1 GPU {g.index}": g.nvlink_mb_per_s for g in NODE.gpus}}


NODE_IN_POD_SET = "exporter:\n  virtual_gpus: true\ncloudwatch:\n  dimensions: [ClusterName, namespace, pod, node]\n"
# the per-pod set naming the node, the per-GPU set a label no pod's copy keeps (the refusal's second fix, below)
NODE_AND_MODEL = NODE_IN_POD_SET + "  gpu_dimensions: [ClusterName, node, gpu, modelName]\n"


@pytest.fixture(scope="module", params=["", "container", "modelName", "Service", "gpu", "UUID", "node"])
def shown(request, tmp_path_factory):
    """(the per-GPU counter widgets' lines over every period, the PCIe replays alarm's request, the datapoints) of a
    build whose per-pod set adds the name `request.param` (none: the default set; node: NODE_AND_MODEL)."""
    dims = ", ".join(["ClusterName", "namespace", "pod", *filter(None, [request.param])])
    settings = NODE_AND_MODEL if request.param == "node" else \
        f"exporter:\n  virtual_gpus: true\ncloudwatch:\n  dimensions: [{dims}]\n"
    project = defined_project(tmp_path_factory.mktemp("project"), settings)
    files = encode(build(project, grafana=False))
    points = through_agent(files, STEP, END, fleet=(NODE,))
    lines = {panel_title(p["title"]): {label.removesuffix(" NVIDIA A10G"): series for label, series in
                                       cloudwatch_eval.widget(p, points, 0, END).items()}
             for _, p in widgets(files) if panel_title(p["title"]) in TRUTH}
    (request_,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                   if {"Key": "gpudash:rule", "Value": "pcie-replays"} in a["Request"]["Tags"]]
    return lines, request_, points


def test_the_per_gpu_counter_widgets_read_each_gpus_rate_once(shown):
    lines, _, _ = shown
    assert set(lines) == set(TRUTH)
    for title, expected in TRUTH.items():
        assert set(lines[title]) == set(expected), (title, sorted(lines[title]))
        for label, rate in expected.items():
            wrong = {start: v for start, v in lines[title][label].items() if not close(v, rate)}
            assert not wrong, (title, label, rate, wrong)


def test_the_pcie_replays_alarm_reads_each_gpus_replays_once(shown):
    """30 replays per 5 minutes on each GPU: under the alarm's 50, so no GPU is in ALARM."""
    _, request, points = shown
    (metric,) = request["Metrics"]
    result = cloudwatch_eval.metrics_insights(metric["Expression"], points, END - 4 * PERIOD, END, PERIOD)
    assert {dict(key)["gpu"]: set(series.values()) for key, series in result.items()} == {"0": {30.0}, "1": {30.0}}
    assert set(cloudwatch_eval.alarm(request, points, END).values()) == {"OK"}


def test_a_per_pod_set_naming_the_node_is_refused_naming_it_and_both_fixes(project_dir, cli):
    """With exporter.virtual_gpus a pod's copy of a counter keeps the GPU's index (the idle alarm judges each GPU a pod
    holds), so a per-pod set naming the node puts every pod's copy in the per-GPU set [ClusterName, node, gpu]: refused,
    at cloudwatch.dimensions. The fix said was 'name the node and the GPU in cloudwatch.gpu_dimensions, e.g.
    [ClusterName, node, gpu]', the set already given; either fix it names now builds (the default set, and
    NODE_AND_MODEL above, read each GPU's increase once)."""
    config = project_dir(NODE_IN_POD_SET)
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(config.parent / "build"))
    assert code == 2 and "error: cloudwatch.dimensions: the per-GPU dimension set [ClusterName, node, gpu]" in stderr \
        and "node because cloudwatch.dimensions names it" in stderr and "Traceback" not in stderr, stderr
    assert "fix: leave node out of cloudwatch.dimensions, or name in cloudwatch.gpu_dimensions a label no pod's copy " \
           "keeps (such as modelName)" in stderr, stderr


def _merge_keeps_the_pod(otel: dict) -> None:
    """The per-GPU merge of the counters (metricstransform/gpudash's insert of gpudash.gpu.*) edited to keep the pod
    and its namespace, as the build kept them for a per-pod set naming one more name."""
    for transform in otel["processors"]["metricstransform/gpudash"]["transforms"]:
        if transform.get("new_name", "").startswith("gpudash.gpu."):
            for operation in transform["operations"]:
                operation["label_set"] = sorted({*operation["label_set"], "namespace", "pod"})


def test_lint_names_a_per_gpu_merge_that_keeps_the_pod(tmp_path):
    """AG001 names a collector configuration whose per-GPU merge of a counter keeps the pod: through the agent model
    the shared GPU's replays then read twice (0.2 a second for 0.1). Lint said nothing of it, nor of the builds that
    kept them (above), which now lint clean."""
    project = defined_project(tmp_path, "exporter:\n  virtual_gpus: true\ncloudwatch:\n"
                                        "  dimensions: [ClusterName, namespace, pod, container]\n")
    assert agent_lint(project, "AG001") == []
    (found,) = agent_lint(project, "AG001", _merge_keeps_the_pod)
    assert "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" in found and "keeps namespace, pod: the copies of a GPU pods share " \
        "stay apart, and the per-GPU sets read its increase once per pod" in found, found

    files = encode(build(project, grafana=False))
    config, job = agent_config(files[AGENT_FILE])
    _merge_keeps_the_pod(config)
    points = Agent(config, job).run(scrapes(job, STEP, END, fleet=(NODE,)))
    (replays,) = [p for _, p in widgets(files) if panel_title(p["title"]) == "PCIe replays"]
    assert set(cloudwatch_eval.widget(replays, points, 0, END)["ip-10-0-1-1 GPU 0"].values()) == {0.2}

"""cloudwatch.source: container-insights on a GPU split into MIG instances: the add-on publishes one instance.

The add-on's agent drops GPU_I_ID and GPU_I_PROFILE from its GPU metrics (gpuattributes' label filters), so the
instances' readings of one collection carry one label set and its EMF exporter keeps the first ("Duplicate metric
found"). The add-on model (tests/support/container_insights_addon.mig_datapoints) publishes a MIG GPU so; the
*generated* widgets read one instance's framebuffer where the GPU's (and a pod's two instances') total is the truth.
Nothing gpudash writes can read it right: the dashboards' headers, README and lint (CW021) say so.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.container_insights import MIG_ONE_INSTANCE
from generator.lint.runner import lint_project
from generator.output import encode
from generator.project import load_project
from generator.render.cloudwatch import panel_title
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_widgets import header, widgets
from tests.support.container_insights_addon import EVERY, MigInstance, datapoints, mig_datapoints

START, END = 0, 1800
CLUSTER = "gpu-cluster"
MIG_NODE = "ip-10-0-1-3"
INSTANCES = [MigInstance(1, "3g.40gb", 19600.0, 20000.0, 0.0, "team-a", "mig-a-0"),
             MigInstance(2, "3g.40gb", 5000.0, 34600.0, 0.0, "team-a", "mig-a-0"),  # the same pod's second instance
             MigInstance(3, "1g.10gb", 3000.0, 7000.0, 0.0, "team-b", "mig-b-0")]


@pytest.fixture(scope="module")
def addon(tmp_path_factory):
    folder = tmp_path_factory.mktemp("addon-mig")
    (folder / "gpudash.yaml").write_text("cloudwatch:\n  source: container-insights\n")
    project = load_project(folder / "gpudash.yaml")
    points = datapoints(CLUSTER, START, END - EVERY) + mig_datapoints(CLUSTER, MIG_NODE, 0, INSTANCES, START,
                                                                      END - EVERY)
    return project, encode(build(project)), points


def _widget(files, title):
    (found,) = [(path, p) for path, p in widgets(files) if panel_title(p["title"]) == title]
    return found


def test_the_model_keeps_one_instance_per_label_set(addon):
    """A collection of the MIG GPU publishes one node_gpu_memory_used per dimension set (the first instance's),
    one per pod for the pod's metrics (mig-a-0's first instance, mig-b-0's own)."""
    _, _, points = addon
    at_zero = [p for p in points if p.timestamp == 0 and dict(p.dimensions).get("NodeName") == MIG_NODE
               and p.metric == "node_gpu_memory_used"]
    assert sorted(p.value / 1048576 for p in at_zero) == [19600.0, 19600.0]  # [.., GpuDevice] and [.., InstanceId]
    pods = {dict(p.dimensions)["FullPodName"]: p.value / 1048576 for p in points if p.timestamp == 0
            and p.metric == "pod_gpu_memory_used" and "GpuDevice" in dict(p.dimensions)
            and dict(p.dimensions).get("Namespace", "").startswith("team-")}
    assert pods == {"mig-a-0": 19600.0, "mig-b-0": 3000.0}


def test_framebuffer_reads_one_instance_and_every_view_says_so(addon):
    project, files, points = addon
    path, per_gpu = _widget(files, "Framebuffer memory used")
    shown = cloudwatch_eval.widget(per_gpu, points, START, END)[f"{MIG_NODE} nvidia0"]
    assert set(shown.values()) == {19600.0}  # one slice; the GPU's instances use 27,600 MiB
    path_pod, per_pod = _widget(files, "Framebuffer used by pod")
    pods = cloudwatch_eval.widget(per_pod, points, START, END)
    assert set(pods["Pod team-a/mig-a-0"].values()) == {19600.0}  # the pod holds 24,600 MiB on two instances
    assert set(pods["Pod team-b/mig-b-0"].values()) == {3000.0}  # one instance: right
    for dashboard in {path, path_pod}:
        assert MIG_ONE_INSTANCE in header(files, dashboard), dashboard
    noted = {f.where for f in lint_project(project) if f.rule == "CW021"}
    for dashboard, properties in ((path, per_gpu), (path_pod, per_pod)):
        assert any(where.startswith(dashboard) and properties["title"] in where for where in noted), \
            (dashboard, properties["title"])
    alarms = {where.split()[-1] for where in noted if "alarms.json" in where}
    assert {"gpudash-gpu-cluster-gpu-idle-warning", "gpudash-gpu-cluster-framebuffer-full-warning"} <= alarms


def test_verify_names_a_mig_gpu_and_a_blank_on_the_addon(addon):
    """`gpudash verify` reading the add-on's exporter: a GPU split into MIG instances is published as one instance,
    and a blank reading is published as a value (the check says what the add-on does with it, not to change an
    exporter or a counters CSV the add-on owns)."""
    from generator.checks.exporter import analyse

    project, _, _ = addon
    labels = 'gpu="0",UUID="GPU-a",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="{}"'.format(MIG_NODE)
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge", "# TYPE DCGM_FI_DEV_FB_USED gauge", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for item in INSTANCES:
        own = (f'{labels},GPU_I_PROFILE="{item.profile}",GPU_I_ID="{item.instance}",namespace="{item.namespace}",'
               f'pod="{item.pod}",container="main"')
        lines += [f"DCGM_FI_DEV_GPU_UTIL{{{own}}} 9223372036854775794", f"DCGM_FI_DEV_FB_USED{{{own}}} {item.used:g}",
                  f"DCGM_FI_DEV_GPU_TEMP{{{own}}} 55"]
    checks = {c.name: c for c in analyse(project, "\n".join(lines) + "\n", "add-on exporter")}
    assert checks["MIG on the add-on"].status == "warn"
    assert "publishes one instance of each" in checks["MIG on the add-on"].detail
    blank = checks["blank values"]
    assert blank.status == "warn" and "DCGM_FI_DEV_GPU_UTIL" in blank.detail
    assert "Container Insights add-on publishes such readings" in blank.fix and "counters CSV" not in blank.fix


def test_a_mig_gpu_whose_utilization_is_the_blank_leaves_the_fleet_mean_empty_as_its_header_says(addon):
    """An exporter that writes DCGM's blank for utilization on MIG instances: the add-on publishes the blank for the
    GPU at every collection, so the fleet's "Average GPU utilization" has no period without it: empty, never the
    blank (3e18 %), and the header says so."""
    _, files, _ = addon
    blank = [MigInstance(i.instance, i.profile, i.used, i.free, 9223372036854775794.0, i.namespace, i.pod)
             for i in INSTANCES]
    points = datapoints(CLUSTER, START, END - EVERY) + mig_datapoints(CLUSTER, MIG_NODE, 0, blank, START, END - EVERY)
    path, average = _widget(files, "Average GPU utilization")
    assert not cloudwatch_eval.widget(average, points, START, END).get("Average GPU utilization")
    clean = datapoints(CLUSTER, START, END - EVERY) + mig_datapoints(CLUSTER, MIG_NODE, 0, INSTANCES, START,
                                                                     END - EVERY)
    assert cloudwatch_eval.widget(average, clean, START, END)["Average GPU utilization"]  # 0 on an instance: read
    assert "A GPU that never reads a field (a MIG GPU's utilization where its exporter writes the blank) leaves the " \
           "fleet's mean, total and extreme of it empty" in header(files, path)


@pytest.mark.xfail(strict=True, reason="MIG reports no GPU utilization for an instance, the exporter writes 0 there "
                                       "(some versions), and the add-on publishes that 0 as the pod's utilization: the "
                                       "idle alarm (below 5 % for 30 minutes) fires for pods busy on MIG instances, "
                                       "which the rule judges by their engine activity and leaves alone")
def test_pods_busy_on_mig_instances_are_not_called_idle_on_the_addon(addon):
    """mig-a-0 and mig-b-0 keep their instances busy for the whole story (their exporter writes 0 for GPU utilization,
    which DCGM does not report per MIG instance): neither is an idle allocated GPU."""
    _, files, points = addon
    idle = next(a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if a["Request"]["AlarmName"] == f"gpudash-{CLUSTER}-gpu-idle-warning")
    states = cloudwatch_eval.alarm(idle, points, END)
    assert {dict(key)["FullPodName"]: state for key, state in states.items()
            if dict(key)["FullPodName"].startswith("mig-")} == {"mig-a-0": "OK", "mig-b-0": "OK"}


def test_the_idle_alarm_and_the_headers_say_pods_on_mig_instances_read_the_exporter_s_0(addon):
    """What the strict xfail above pins, the idle alarm's description says (in full or in its short form), and so
    do the dashboards' headers."""
    _, files, _ = addon
    idle = next(a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if a["Request"]["AlarmName"] == f"gpudash-{CLUSTER}-gpu-idle-warning")
    assert "a MIG GPU's DCGM_FI_DEV_GPU_UTIL reads 0 on some exporters: it fires for its pods whatever their use" \
        in idle["AlarmDescription"] or "reports no DCGM_FI_DEV_GPU_UTIL" in idle["AlarmDescription"]
    assert "the idle alarm calls every pod on MIG instances idle" in MIG_ONE_INSTANCE
    project, _, _ = addon
    (said,) = [f.message for f in lint_project(project) if f.rule == "CW021" and f.where.endswith("gpu-idle-warning")]
    assert "MIG reports no DCGM_FI_DEV_GPU_UTIL per instance: what its exporter writes there, 0 on some" in said

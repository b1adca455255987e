"""CloudWatch widgets and alarms read the truth of a fleet whose exporters run with KUBERNETES_VIRTUAL_GPUS=true.

The fleet of tests/support/virtual_gpus.py (its docstring cites dcgm-exporter's source: a 4.5.3 node with the
setting on writes GPU utilization and framebuffer used as the device's series plus each pod's share, a node
with it off, a 4.5.2 node mid-upgrade whose copies all carry the device's value) goes through the model of the
CloudWatch agent fed with the generated configuration (the OTel pipeline: filter, metricstransform, awsemf);
every generated widget and alarm is evaluated over the datapoints with Metrics Insights' documented semantics.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from generator.render.cloudwatch import panel_title
from generator.lint.runner import lint_project
from generator.project import load_project
from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval, virtual_gpus
from tests.support.alarm_requests import alarm_requests
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import close, panel, widgets
from tests.support.dcgm_fleet import target_labels
from tests.support.virtual_gpus import AGENT_FILE, END, FIELDS, FLEET, STEP, published_points

VIRTUAL = "exporter:\n  virtual_gpus: true\n"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    files, folder = built_with(tmp_path_factory.mktemp("virtual"), {}, FIELDS, VIRTUAL)
    return load_project(folder / "gpudash.yaml", folder / "counters.csv"), files, published_points(files)


def _shown(project, files, points) -> dict[str, tuple[dict, dict]]:
    """{widget title: (lines shown, truth)} with each line's value in every period."""
    result = {}
    for path, properties in widgets(files):
        query = panel(project, path, panel_title(properties["title"]), "gpu-cluster").queries[0]
        lines = cloudwatch_eval.widget(properties, points, 0, END)
        shown = {label.removesuffix(" MIG none"): set(series.values()) for label, series in lines.items()}
        expected = {} if "mig_instance" in query.by else \
            {label or panel_title(properties["title"]): value for label, value in virtual_gpus.truth(query).items()}
        result[f"{path.rsplit('/', 1)[1]} {panel_title(properties['title'])}"] = (shown, expected)
    return result


def _every_widget_true(project, files, points) -> dict[str, tuple[dict, dict]]:
    """_shown, after checking that every widget draws the truth's lines, each at its value in every period."""
    checked = _shown(project, files, points)
    for title, (shown, expected) in checked.items():
        assert set(shown) == set(expected), title
        for label, value in expected.items():
            assert len(shown[label]) == 1 and close(next(iter(shown[label])), value), (title, label, shown[label], value)
    return checked


def test_every_widget_reads_the_device_per_gpu_and_each_pods_share_per_pod(fleet):
    project, files, points = fleet
    checked = _every_widget_true(project, files, points)
    assert checked["gpudash-gpu-cluster-overview.json GPU utilization"][0]["gpu-node-on GPU 0"] == {90.0}
    assert checked["gpudash-gpu-cluster-overview.json Framebuffer memory used"][0]["gpu-node-on GPU 0"] == {30000.0}
    assert checked["gpudash-gpu-cluster-by-pod.json GPU utilization by pod"][0]["Pod team-a/ts-1"] == {25.0}
    # an MPS pod's share (55 %) reads above its GPU's own 50 % in the same scrape: the GPU reads its device
    assert checked["gpudash-gpu-cluster-overview.json GPU utilization"][0]["gpu-node-on GPU 3"] == {50.0}
    assert checked["gpudash-gpu-cluster-by-pod.json GPU utilization by pod"][0]["Pod team-f/mps-a"] == {55.0}


def test_without_the_setting_the_same_fleet_reads_wrong(tmp_path):
    files, folder = built_with(tmp_path, {}, FIELDS)
    project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
    checked = _shown(project, files, published_points(files))
    assert checked["gpudash-gpu-cluster-overview.json GPU utilization"][0]["gpu-node-on GPU 0"] == {36.25}
    assert checked["gpudash-gpu-cluster-overview.json Framebuffer memory used"][0]["gpu-node-on GPU 0"] == {12750.0}


def _firing(request, points) -> set[str]:
    return {f"Pod {dict(key).get('namespace')}/{dict(key).get('pod')}"
            for key, state in cloudwatch_eval.alarm(request, points, END).items() if state == "ALARM"}


def test_alarms_judge_each_pod_on_its_share_and_its_gpus_memory_on_the_device(fleet):
    _, files, points = fleet
    alarms = alarm_requests(files)
    assert _firing(alarms["gpu-idle"], points) == {"Pod team-b/ts-0"}  # its processes do nothing; the GPU is busy
    assert _firing(alarms["framebuffer-full"], points) == {"Pod team-e/a", "Pod team-e/b"}  # the GPU's free memory


def test_classic_cannot_tell_the_device_from_the_shares_and_lint_refuses_it(tmp_path):
    """agent.pipeline: classic publishes each pod's share beside the device's value under the per-GPU dimensions
    (the 90 % GPU reads 36.25 %): lint errs on every widget that reads them there (CW017); per-pod widgets stay
    true, and without exporter.virtual_gpus (or on the OTel pipeline) nothing is flagged."""
    files, folder = built_with(tmp_path, {}, FIELDS, VIRTUAL + "agent:\n  pipeline: classic\n")
    project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
    checked = _shown(project, files, published_points(files))
    assert checked["gpudash-gpu-cluster-overview.json GPU utilization"][0]["gpu-node-on GPU 0"] == {36.25}
    shown, expected = checked["gpudash-gpu-cluster-by-pod.json GPU utilization by pod"]
    assert shown == {label: {value} for label, value in expected.items()}
    flagged = {panel_title(f.where.split(" (", 1)[1][:-1]) for f in lint_project(project) if f.rule == "CW017"}
    assert {f.severity for f in lint_project(project) if f.rule in ("CW017", "AL014")} == {"error"}
    assert flagged == {"Average GPU utilization", "GPU utilization", "Framebuffer memory used",
                       "Framebuffer used per MIG instance"}
    for settings in (VIRTUAL, "agent:\n  pipeline: classic\n"):
        (tmp_path / settings[:5]).mkdir()
        _, other = built_with(tmp_path / settings[:5], {}, FIELDS, settings)
        assert not [f for f in lint_project(load_project(other / "gpudash.yaml", other / "counters.csv"))
                    if f.rule in ("CW017", "AL014")]


def test_an_exporter_upgraded_mid_period_keeps_its_gpu_true(fleet):
    """The 4.5.2 node's exporter becomes 4.5.3 at scrape 35, inside the period [900, 1200): its GPU's own series
    appears beside the pods' shares and the copies of the device's value end. The GPU reads its device's value in
    every period, the one of the upgrade too; each pod reads the device's value before and its share after."""
    project, files, _ = fleet
    config, job = agent_config(files[AGENT_FILE])
    old, upgraded = FLEET[2], replace(FLEET[2], mode="per-process")
    points = Agent(config, job).run([
        Scrape(float(k * STEP), virtual_gpus.payload(upgraded if node is old and k >= 35 else node),
               target_labels(job, node.name)) for k in range(-1, END // STEP) for node in FLEET])
    checked = _shown(project, files, points)
    lines = {title.split(".json ", 1)[1]: shown for title, (shown, _) in checked.items()}
    assert lines["GPU utilization"]["gpu-node-old GPU 0"] == {80.0}
    assert lines["Framebuffer memory used"]["gpu-node-old GPU 0"] == {39200.0}
    assert lines["Average GPU utilization"]["Average GPU utilization"] == {50.0}
    by_period = {label: series for label, series in cloudwatch_eval.widget(
        next(p for path, p in widgets(files) if panel_title(p["title"]) == "GPU utilization by pod"), points, 0, END).items()}
    assert by_period["Pod team-e/a"][600] == 80.0 and by_period["Pod team-e/a"][1500] == 40.0


def test_a_gpu_a_pod_starts_to_hold_mid_period_keeps_every_reading(fleet):
    """On the node without the exporter's setting, idle GPU 1 (its series without a pod) is taken by a pod at scrape
    35, inside the period [900, 1200), and reads 80 % from then: its series without a pod ends (a staleness marker)
    as the pod's copy begins. The GPU's line reads the mean of all ten readings of that period, 40 %, not one fewer."""
    project, files, _ = fleet
    config, job = agent_config(files[AGENT_FILE])
    off = FLEET[1]
    taken = replace(off, gpus=(off.gpus[0], replace(off.gpus[1], util=80.0, fb_used=9000.0, fb_free=31000.0, holders=(
        virtual_gpus.Holder("team-g", "late", 80.0, 9000.0),))))
    points = Agent(config, job).run([
        Scrape(float(k * STEP), virtual_gpus.payload(taken if node is off and k >= 35 else node),
               target_labels(job, node.name)) for k in range(-1, END // STEP) for node in FLEET])
    lines = cloudwatch_eval.widget(next(p for path, p in widgets(files) if panel_title(p["title"]) == "GPU utilization"
                                        and "overview" in path), points, 0, END)
    assert lines["gpu-node-off GPU 1"][600] == 0.0 and lines["gpu-node-off GPU 1"][1200] == 80.0
    assert close(lines["gpu-node-off GPU 1"][900], 40.0), lines["gpu-node-off GPU 1"]


def test_on_the_container_insights_add_on_per_pod_shares_are_left_out_with_a_note(tmp_path):
    """The add-on's own DCGM exporter runs without KUBERNETES_VIRTUAL_GPUS (its chart sets DCGM_EXPORTER_KUBERNETES,
    DCGM_EXPORTER_LISTEN and NODE_NAME only): it publishes a GPU several pods share once, the device's value under
    one of them. With exporter.virtual_gpus the per-pod views of utilization and framebuffer used (each pod's own
    share on Grafana) are left out of CloudWatch with a note (CW013), the per-pod idle-GPU alarm too; the per-GPU
    views (node_ metrics: the device's value) and the framebuffer alarm (the whole GPU's memory) stay."""
    addon = "cloudwatch:\n  source: container-insights\n"
    files, folder = built_with(tmp_path, {}, FIELDS, VIRTUAL + addon)
    project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
    titles = {path.rsplit("-", 1)[1]: set() for path, _ in widgets(files)}
    for path, properties in widgets(files):
        titles[path.rsplit("-", 1)[1]].add(panel_title(properties["title"]))
    assert not titles["pod.json"] & {"GPU utilization by pod", "Framebuffer used by pod", "Framebuffer used share by pod"}
    assert {"Power draw of each pod's GPUs", "Pods on GPUs"} <= titles["pod.json"]
    assert {"GPU utilization", "Framebuffer memory used", "Average GPU utilization"} <= titles["overview.json"]
    assert set(alarm_requests(files)) >= {"framebuffer-full"} and "gpu-idle" not in alarm_requests(files)
    notes = [f.message for f in lint_project(project) if f.rule == "CW013"]
    for left_out in ("'GPU utilization by pod'", "'Framebuffer used by pod'", "'gpu-idle'"):
        assert any(left_out in n and "KUBERNETES_VIRTUAL_GPUS" in n for n in notes), (left_out, notes)
    (tmp_path / "plain").mkdir()
    plain, _ = built_with(tmp_path / "plain", {}, FIELDS, addon)  # without the setting, as before
    assert "GPU utilization by pod" in {panel_title(p["title"]) for _, p in widgets(plain)} and "gpu-idle" in alarm_requests(plain)


def test_a_pod_holding_two_replicas_of_one_gpu_counts_its_share_once(fleet):
    """A pod given two time-slicing replicas of one GPU (device ids GPU-...::0 and ::1) is listed twice for that GPU
    by the exporter (toDeviceToSharingPods appends its PodInfo once per device id), so it writes two copies for the
    pod, vgpu 0 and 1: per-process fields each carry the pod's processes' total (buildPodValueMap sums per pod
    UID, once), other fields each the device's value. The pod's framebuffer is its processes' memory once, not
    twice: the agent merges a pod's copies of one GPU by max before it adds the pod's GPUs up. The same on a 4.5.2
    node, whose copies carry the device's value. Power and GPUs held count each GPU once too."""
    _, files, _ = fleet
    holder = virtual_gpus.Holder
    on = virtual_gpus.Node("gpu-node-on", "per-process", (
        virtual_gpus.Gpu(0, 90, 30000, 10000, 71, 250, (holder("team-a", "dup", 30, 12000, "0"),
                                                        holder("team-a", "dup", 30, 12000, "1"),
                                                        holder("team-b", "other", 20, 8000, "2"))),
        virtual_gpus.Gpu(1, 60, 20000, 20000, 65, 200, (holder("team-a", "dup", 58, 19000),))))
    old = virtual_gpus.Node("gpu-node-old", "copies", (
        virtual_gpus.Gpu(0, 80, 39200, 800, 75, 180, (holder("team-e", "twin", 40, 20000, "0"),
                                                      holder("team-e", "twin", 40, 20000, "1"))),))
    assert virtual_gpus.payload(on).count('pod="dup"') == 2 * len(FIELDS) + len(FIELDS)  # two copies on GPU 0
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(k * STEP), virtual_gpus.payload(node), target_labels(job, node.name))
                                     for k in range(-1, END // STEP) for node in (on, old)])
    by_title = {panel_title(p["title"]): p for path, p in widgets(files) if "by-pod" in path}

    def shown(title: str, **kwargs) -> dict[str, set[float]]:
        return {label: set(series.values()) for label, series
                in cloudwatch_eval.widget(by_title[title], points, 0, END, **kwargs).items() if series}

    # the truth from the facts: each pod's own share of each GPU it holds, once per GPU
    assert shown("Framebuffer used by pod") == {"Pod team-a/dup": {12000.0 + 19000.0}, "Pod team-b/other": {8000.0},
                                                "Pod team-e/twin": {39200.0}}
    assert shown("Power draw of each pod's GPUs") == {"Pod team-a/dup": {450.0}, "Pod team-b/other": {250.0},
                                                       "Pod team-e/twin": {180.0}}
    assert shown("GPU utilization by pod") == {"Pod team-a/dup": {(30 + 58) / 2}, "Pod team-b/other": {20.0},
                                               "Pod team-e/twin": {80.0}}
    assert shown("Pods on GPUs") == {"Pod team-a/dup": {2.0}, "Pod team-b/other": {1.0},
                                                "Pod team-e/twin": {1.0}}


def test_a_gpu_whose_own_series_reads_the_blank_publishes_no_reading_at_that_scrape(fleet):
    """DCGM's blank in the device's own series is no reading of the GPU: at that scrape the per-GPU sets get no
    datapoint of it (CloudWatch has no look-back: nothing is the honest answer), never its pods' largest share, which
    the merge read once the blank filter had dropped the device's point (GPU utilization 60 for 90 over a period,
    framebuffer 21,000 for 30,000 MiB, Average GPU utilization 45.71 for 50). Each pod's share is published at
    every scrape, and every widget reads the truth in every period."""
    project, files, _ = fleet
    config, job = agent_config(files[AGENT_FILE])
    # on the 4.5.3 node, GPU 0's own series (90 %, 30,000 MiB) reads DCGM's blank at every odd scrape; its pods'
    # shares (30/25/0 %, 12,000/9,000/0 MiB) read at every scrape
    points = Agent(config, job).run([
        Scrape(float(k * STEP), virtual_gpus.own_series_blank(node, (0,)) if node is FLEET[0] and k % 2
               else virtual_gpus.payload(node), target_labels(job, node.name))
        for k in range(-1, END // STEP) for node in FLEET])
    per_gpu = {}
    for point in points:
        dims = point.dims()
        if point.metric in virtual_gpus.PER_PROCESS and "pod" not in dims and (dims.get("node"), dims.get("gpu")) \
                == ("gpu-node-on", "0"):
            per_gpu.setdefault(point.metric, {}).setdefault(point.timestamp, []).append(point.value)
    readings = {virtual_gpus.UTIL: [90.0], virtual_gpus.FB_USED: [30000.0]}
    for field, reading in readings.items():
        published = {t: sorted(set(values)) for t, values in per_gpu[field].items()}
        assert published == {float(k * STEP): reading for k in range(0, END // STEP) if not k % 2}, field
    shares = {}  # each pod's share, in each set that publishes it per pod (one is its unused share, 100 less it)
    for point in points:
        dims = point.dims()
        if point.metric == virtual_gpus.UTIL and dims.get("pod") == "ts-0" and "team-a" in dims.values():
            shares.setdefault(tuple(sorted(dims)), {})[point.timestamp] = point.value
    assert shares and all(sorted(values) == [float(k * STEP) for k in range(-1, END // STEP)] and
                          set(values.values()) in ({30.0}, {70.0}) for values in shares.values()), shares
    checked = _every_widget_true(project, files, points)
    assert checked["gpudash-gpu-cluster-overview.json GPU utilization"][0]["gpu-node-on GPU 0"] == {90.0}
    assert checked["gpudash-gpu-cluster-overview.json Framebuffer memory used"][0]["gpu-node-on GPU 0"] == {30000.0}
    assert checked["gpudash-gpu-cluster-overview.json Average GPU utilization"][0]["Average GPU utilization"] == {50.0}

"""A chart of one line per pod or GPU shows every line, or its dashboard says which ones it shows.

Each per-pod and per-GPU chart's query ends `LIMIT cloudwatch.top_pods` / `top_gpus` (50 by default): a cluster of 64
GPUs draws 50 lines in "GPU temperature", the 50 hottest, and the 14 others nowhere. Grafana's panel of the same title
draws all 64. The dashboard must say it where its reader looks (the header), as it says every other way a widget
differs from its title.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from generator.render.cloudwatch import panel_title
from tests.support import built, cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header, kept
from tests.support.dcgm_fleet import discovered

NODES, PER_NODE = 8, 8
HEALTH = "cloudwatch/dashboards/gpudash-gpu-cluster-health.json"


def _page(node: int) -> str:
    return "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + "".join(
        f'DCGM_FI_DEV_GPU_TEMP{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
        f'Hostname="n{node}"}} {40 + node + g}\n' for g in range(PER_NODE))


def _published(page, scrapes: int):
    """The default build's files (built once per test process: built.files), and what its agent publishes of
    `page(node, t)` scraped every 30 s on 8 nodes."""
    return _published_with(built.files("{}\n"), page, scrapes)


def _published_with(files, page, scrapes: int):
    """`files`, and what their agent publishes of `page(node, t)` scraped every 30 s on 8 nodes."""
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    targets = {n: discovered(job, {"__address__": f"10.2.0.{n}:9400", "__meta_kubernetes_namespace": "gpu-operator",
                                   "__meta_kubernetes_pod_name": f"nvidia-dcgm-exporter-{n}",
                                   "__meta_kubernetes_pod_node_name": f"node-{n}",
                                   "__meta_kubernetes_pod_container_port_number": "9400",
                                   "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter"}) for n in range(NODES)}
    return files, Agent(config, job).run([Scrape(30.0 * k, page(n, 30.0 * k), targets[n])
                                          for k in range(-1, scrapes) for n in range(NODES)])


def test_a_per_gpu_chart_draws_every_gpu_or_says_it_draws_the_top_50():
    files, points = _published(lambda node, t: _page(node), 10)
    body = json.loads(json.loads(files[HEALTH])["DashboardBody"])
    (widget,) = [w["properties"] for w in body["widgets"]
                 if w["type"] == "metric" and w["properties"]["title"] == "GPU temperature"]
    lines = cloudwatch_eval.widget(widget, points, 0, 300)
    # seen on main: 50 lines of 64 GPUs, and the header silent about it
    assert len(lines) == NODES * PER_NODE or kept(header(files, HEALTH)).get("GPU temperature", "").startswith(
        "at most 50 GPUs (cloudwatch.top_gpus), those of the highest single reading"), len(lines)


SPIKE = (3, 5)  # (node, gpu): 50 W all along but one period of 400 W, the top of any chart of the cluster's power
PERIODS = 6


def _power(node: int, t: float) -> str:
    def watts(g: int) -> float:
        if (node, g) == SPIKE:
            return 400.0 if 600 <= t < 900 else 50.0
        return 200.0 + 8 * node + g
    return "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n" + "".join(
        f'DCGM_FI_DEV_POWER_USAGE{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
        f'Hostname="n{node}"}} {watts(g)}\n' for g in range(PER_NODE))


def test_a_cut_chart_keeps_the_gpu_that_reached_its_top():
    """Of 64 GPUs "Power draw" draws 50: the one that drew 400 W for five minutes, and 50 W the rest of the half
    hour, has the lowest mean of all and was cut (ORDER BY AVG()), so the chart's top read 263 W where Grafana's
    reads 400 W. Ranked by each GPU's highest reading it is drawn, and the header says which lines are kept."""
    files, points = _published(_power, 10 * PERIODS)
    for path in (HEALTH, "cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"):
        body = json.loads(json.loads(files[path])["DashboardBody"])
        (widget,) = [w["properties"] for w in body["widgets"]
                     if w["type"] == "metric" and w["properties"]["title"] == "Power draw"]
        lines = cloudwatch_eval.widget(widget, points, 0, 300 * PERIODS)
        assert len(lines) == 50
        assert max(v for line in lines.values() for v in line.values()) == 400.0, path  # seen: 263.0
        assert kept(header(files, path))["Power draw"].startswith(
            "at most 50 GPUs (cloudwatch.top_gpus), those of the highest single reading in the time range shown")


def test_on_the_container_insights_add_on_a_chart_by_pod_says_it_draws_pods():
    """The add-on names a pod `PodName`: its charts by pod said "at most 50 GPUs (cloudwatch.top_pods)"."""
    files = built.files("cloudwatch:\n  source: container-insights\n")
    said = kept(header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"))
    assert said["GPU utilization by pod"].startswith(
        "at most 50 pods (cloudwatch.top_pods), those of the highest mean of their GPUs' readings in the time range "
        "shown")
    assert all(note.startswith("at most 50 pods (cloudwatch.top_pods)") for note in said.values()), said


BY_POD = "cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"
LONG_PODS, HOURS = 50, 2  # 50 pods of one GPU at 10,000 MiB for two hours, one pod of one GPU at 80,000 MiB for 5 min


def _fb_holders(t: float) -> dict[tuple[int, int], tuple[str, float]]:
    """{(node, gpu): (pod, MiB used)} at t: the long-running pods on GPUs 0..49, the new pod on GPU 50 from 5 minutes
    before the end."""
    held = {(i // PER_NODE, i % PER_NODE): (f"long-{i}", 10_000.0) for i in range(LONG_PODS)}
    if t >= HOURS * 3600 - 300:
        held[(LONG_PODS // PER_NODE, LONG_PODS % PER_NODE)] = ("new-0", 80_000.0)
    return held


def _fb_page(node: int, t: float) -> str:
    lines = ["# TYPE DCGM_FI_DEV_FB_USED gauge"]
    for g in range(PER_NODE):
        pod, used = _fb_holders(t).get((node, g), (None, 0.0))
        workload = f',namespace="ml",pod="{pod}",container="main"' if pod else ""
        lines.append(f'DCGM_FI_DEV_FB_USED{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",'
                     f'modelName="NVIDIA H100 80GB HBM3",Hostname="n{node}"{workload}}} {used}')
    return "\n".join(lines) + "\n"


def _addon_fb(last: int):
    """What the Container Insights add-on publishes of the same story (pod_gpu_memory_used, bytes, once a minute per
    GPU a pod holds, under each pod set of its declaration)."""
    from tests.support import container_insights_addon as addon
    points = []
    for t in range(0, last, addon.EVERY):
        for (node, g), (pod, used) in _fb_holders(t).items():
            for dims in addon.DECLARATIONS["pod"]:
                labels = {"ClusterName": "gpu-cluster", "Namespace": "ml", "PodName": pod.rsplit("-", 1)[0],
                          "FullPodName": pod, "GpuDevice": f"nvidia{g}"}
                if all(d in labels for d in dims):
                    points.append(addon.Datapoint(addon.NAMESPACE, "pod_gpu_memory_used",
                                                  tuple(sorted((d, labels[d]) for d in dims)), float(t),
                                                  used * 1048576.0))
    return points


@pytest.mark.parametrize("source", ["classic", "container-insights"])
def test_a_chart_by_pod_keeps_the_new_pod_that_reached_its_top(source):
    """"Framebuffer used by pod" on agent.pipeline: classic and on the add-on adds each pod's GPUs per scrape (a SUM
    of the period's observations over the scrapes): its lines ranked by the sum of every reading in the time range,
    which grows with how long a pod ran, so 50 pods of 10,000 MiB running two hours (240 readings at 30 s: 2,400,000)
    outranked one of 80,000 MiB started 5 minutes ago (10 readings: 800,000), and the chart's top read 10,000 MiB
    where Grafana's reads 80,000. Ranked by the highest single reading of one of its GPUs, the new pod is drawn."""
    settings = "agent:\n  pipeline: classic\n" if source == "classic" else "cloudwatch:\n  source: container-insights\n"
    files = built.files(settings)
    end = HOURS * 3600
    if source == "classic":
        _, points = _published_with(files, _fb_page, end // 30)
    else:
        points = _addon_fb(end)
    body = json.loads(json.loads(files[BY_POD])["DashboardBody"])
    (widget,) = [w["properties"] for w in body["widgets"]
                 if w["type"] == "metric" and w["properties"]["title"] == "Framebuffer used by pod"]
    lines = cloudwatch_eval.widget(widget, points, 0, end)
    assert len(lines) == 50
    assert max(v for line in lines.values() for v in line.values()) == 80_000.0, sorted(lines)[:3]  # seen: 10,000
    assert "Pod ml/new-0" in lines
    assert kept(header(files, BY_POD))["Framebuffer used by pod"].startswith(
        "at most 50 pods (cloudwatch.top_pods), those of the highest single reading of one of their GPUs")


STEADY = 50  # pods of one GPU each, GPUs 0..49, all along; a pod of 8 GPUs (node 7) comes in the minute still filling


def _temp_page(arrival: float):
    def page(node: int, t: float) -> str:
        lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
        for g in range(PER_NODE):
            i = node * PER_NODE + g
            pod = f"steady-{i}" if i < STEADY else "big-0" if node == NODES - 1 and t >= arrival else None
            workload = f',namespace="ml",pod="{pod}",container="main"' if pod else ""
            lines.append(f'DCGM_FI_DEV_GPU_TEMP{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",'
                         f'modelName="NVIDIA H100 80GB HBM3",Hostname="n{node}"{workload}}} 55')
        return "\n".join(lines) + "\n"
    return page


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_pods_on_gpus_past_50_lists_the_pods_of_the_period_drawn(pipeline):
    """"Pods on GPUs" lists the pods holding GPUs in the latest whole period (the period drawn: 2 minutes at 30 s
    scrapes, the look-back of Grafana's per-pod panels), read from its own two periods: that one and the one still
    filling, which is not drawn. Its rows ranked by each pod's highest
    count of GPUs (otel): a pod of 8 GPUs that came in the minute still filling took a row, blank, and one of the 50
    pods holding a GPU in the minute drawn was left out (49 listed for 50). Ranked by how many scrapes saw a pod, the
    50 are listed; classic counts a pod once per GPU and scrape, so there the 8-GPU pod still ranks first, and the
    header says so."""
    files = built.files("agent:\n  pipeline: classic\n" if pipeline == "classic" else "{}\n")
    end = 3600
    _, points = _published_with(files, _temp_page(end - 60), end // 30)
    body = json.loads(json.loads(files[BY_POD])["DashboardBody"])
    (table,) = [w["properties"] for w in body["widgets"]
                if w["type"] == "metric" and w["properties"]["title"] == "Pods on GPUs"]
    shown = cloudwatch_eval.widget(table, points, end - 6 * 3600, end, now=end)
    listed = {label: list(series.values()) for label, series in shown.items() if series}
    said = kept(header(files, BY_POD))["Pods on GPUs"]
    if pipeline == "otel":
        assert listed == {f"Pod ml/steady-{i}": [1.0] for i in range(STEADY)}, len(listed)  # seen: 49, one blank
        assert said.startswith("at most 50 pods (cloudwatch.top_pods), those seen at the most scrapes of the period "
                               "of 120 s drawn and the one still filling"), said
    else:
        assert len(listed) == STEADY - 1 and "Pod ml/big-0" in shown and not shown["Pod ml/big-0"]
        assert said.startswith("at most 50 pods (cloudwatch.top_pods), those of the most readings (one per GPU and "
                               "scrape) in the period of 120 s drawn and the one still filling: a pod that took GPUs "
                               "in the one still filling"), said


STEADY_GPU = (7, 7)  # 300 W all along; every other GPU 50 W but for one scrape of 400 W, each at its own time


def _spiky_power(node: int, t: float) -> str:
    def watts(g: int) -> float:
        if (node, g) == STEADY_GPU:
            return 300.0
        return 400.0 if int(t) // 30 == 2 + node * PER_NODE + g else 50.0
    return "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n" + "".join(
        f'DCGM_FI_DEV_POWER_USAGE{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
        f'Hostname="n{node}"}} {watts(g)}\n' for g in range(PER_NODE))


def test_a_cut_chart_says_a_moment_high_outranks_a_steady_line_and_the_lowest_are_cut():
    """A chart's point is its period's mean; its lines rank by their single highest reading. Of 64 GPUs, 63 at 50 W
    that each read 400 W for one scrape (a period mean of 85 W) outrank one steady at 300 W: "Power draw" draws
    the 63 GPUs' 50 lines and its top reads 85 W where Grafana's line of the steady GPU reads 300 W all along. No
    single query ranks by the highest period mean, so the header says it. A chart of how busy GPUs are ("GPU
    utilization") ranks by each line's mean over the range, as its title says: an idle GPU is the first it leaves out,
    and one busy for a moment goes before one busy all along."""
    files, points = _published(_spiky_power, 2 * PER_NODE * NODES + 10)
    body = json.loads(json.loads(files[HEALTH])["DashboardBody"])
    (widget,) = [w["properties"] for w in body["widgets"]
                 if w["type"] == "metric" and w["properties"]["title"] == "Power draw"]
    lines = cloudwatch_eval.widget(widget, points, 0, 300 * 7)
    assert len(lines) == 50 and "n7 GPU 7" not in lines
    assert max(v for line in lines.values() for v in line.values()) == 85.0
    said = kept(header(files, HEALTH))
    assert said["Power draw"] == (
        "at most 50 GPUs (cloudwatch.top_gpus), those of the highest single reading in the time range shown (as a "
        "point is its period's mean, a GPU that read high for a moment outranks one steadily higher)")
    # a point is its period's highest reading there: the rank is the line's top point
    assert said["GPU temperature"] == \
        "at most 50 GPUs (cloudwatch.top_gpus), those of the highest single reading in the time range shown"
    overview = kept(header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"))
    assert overview["GPU utilization"] == ("at most 50 GPUs (cloudwatch.top_gpus), those of the highest mean in the "
                                           "time range shown (an idle GPU ranks last, and one busy for a moment below "
                                           "one busy all along)")
    by_pod = kept(header(files, BY_POD))
    assert by_pod["GPU utilization by pod"].endswith("(an idle pod ranks last, and one busy for a moment below one "
                                                     "busy all along)")


def _wide_pod_page(node: int, t: float) -> str:
    """50 pods of one GPU at 20,000 MiB on GPUs 0..49 (nodes 0-6); one pod of all 8 GPUs of node 7 at 15,000 MiB
    each (120,000 MiB: the pod using the most framebuffer)."""
    lines = ["# TYPE DCGM_FI_DEV_FB_USED gauge"]
    for g in range(PER_NODE):
        i = node * PER_NODE + g
        pod, used = ("wide", 15_000.0) if node == NODES - 1 else (f"one-{i}", 20_000.0) if i < 50 else (None, 0.0)
        workload = f',namespace="ml",pod="{pod}",container="main"' if pod else ""
        lines.append(f'DCGM_FI_DEV_FB_USED{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",'
                     f'modelName="NVIDIA H100 80GB HBM3",Hostname="n{node}"{workload}}} {used}')
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_chart_by_pod_keeps_the_pod_of_many_gpus_that_uses_the_most(tmp_path, pipeline):
    """50 pods of one GPU at 20,000 MiB and a pod of 8 GPUs at 15,000 MiB each (120,000 MiB, Grafana's top line) in
    "Framebuffer used by pod", which draws 50 pods. The OTel pipeline publishes each pod's total per scrape and the
    chart ranks by it: the 8-GPU pod is drawn, its top 120,000 MiB. On agent.pipeline: classic the agent publishes
    each GPU's reading (no processor adds a scrape's readings up), and Metrics Insights' ORDER BY takes a function
    of a series' observations over the time range: MAX and MIN are one GPU's reading, AVG a mean per GPU, SUM and
    COUNT grow with how long a pod ran. No ranking of them is the pod's total, so the chart cuts the 8-GPU pod (its
    top 20,000 MiB). It must say so: the header (the rank is one GPU's reading, not the total), and generate and
    lint (CW019, with the fix: agent.pipeline: otel). Seen on main b55916d: classic cut it and only the header said
    it."""
    (tmp_path / "gpudash.yaml").write_text("agent:\n  pipeline: classic\n" if pipeline == "classic" else "{}\n")
    artifacts = build(load_project(tmp_path / "gpudash.yaml"))
    files, points = _published_with(encode(artifacts), _wide_pod_page, 10)
    body = json.loads(json.loads(files[BY_POD])["DashboardBody"])
    (widget,) = [w["properties"] for w in body["widgets"]
                 if w["type"] == "metric" and w["properties"]["title"] == "Framebuffer used by pod"]
    lines = cloudwatch_eval.widget(widget, points, 0, 300)
    top = max(v for line in lines.values() for v in line.values())
    noted = [n.message for n in artifacts.notes if n.rule == "CW019" and "'Framebuffer used by pod'" in n.message]
    if pipeline == "otel":
        assert len(lines) == 50 and "Pod ml/wide" in lines and top == 120_000.0, (len(lines), top)
        assert not noted
        return
    assert len(lines) == 50 and "Pod ml/wide" not in lines and top == 20_000.0, (len(lines), top)
    assert kept(header(files, BY_POD))["Framebuffer used by pod"].startswith(
        "at most 50 pods (cloudwatch.top_pods), those of the highest single reading of one of their GPUs in the time "
        "range shown (one reading, not the total the line adds up")
    assert noted and noted[0].endswith("a pod of many GPUs using the most can be left out; agent.pipeline: otel "
                                       "publishes each pod's total per scrape and ranks by it"), noted


def _churn_page(end: float, period: int):
    """45 pods of one GPU all along (GPUs 0..44); 10 that leave after the first scrape of the period drawn (GPUs
    45..54, last seen at its start, end - period - a minute: the table's range starts there, and its first period is
    drawn); 8 that come after it, in the minute still filling (node 7, from end - a minute)."""
    drawn = end - period - 60

    def page(node: int, t: float) -> str:
        lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
        for g in range(PER_NODE):
            i = node * PER_NODE + g
            pod = (f"steady-{i}" if i < 45 else f"leaving-{i}" if i < 55 and t <= drawn
                   else f"new-{i}" if node == NODES - 1 and t >= end - 60 else None)
            workload = f',namespace="ml",pod="{pod}",container="main"' if pod else ""
            lines.append(f'DCGM_FI_DEV_GPU_TEMP{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",'
                         f'modelName="NVIDIA H100 80GB HBM3",Hostname="n{node}"{workload}}} 55')
        return "\n".join(lines) + "\n"
    return page


def test_pods_on_gpus_past_50_lists_pods_that_left_early_in_the_period_drawn(tmp_path):
    """"Pods on GPUs" (otel) through churn past 50 pods: the period drawn holds 55 pods (45 all along, 10 seen at its
    first scrape only); 8 pods come in the period still filling. Ranked by how many scrapes of the two periods saw
    each, the newcomers (2 scrapes) outrank the 10 that left (1): the 50 rows are the 45 and 5 newcomers, blank in the
    period drawn, where 50 of its 55 pods would fill them. No widget can read the period drawn alone (its range ends
    now: a widget's `end` is an absolute time), and no ORDER BY function of the range's observations tells a pod of
    the period drawn from one of the time since (the newcomers' readings are as many, and the same, as a leaver's
    would be). So the table says it: its header, and lint (CW020, a note on the widget). Seen on main 4c115e4: 45
    listed of 50 rows, lint silent."""
    from generator.lint.runner import lint

    (tmp_path / "gpudash.yaml").write_text("{}\n")
    project = load_project(tmp_path / "gpudash.yaml")
    artifacts = build(project)
    files = encode(artifacts)
    end = 3600
    body = json.loads(json.loads(files[BY_POD])["DashboardBody"])
    (table,) = [w["properties"] for w in body["widgets"]
                if w["type"] == "metric" and w["properties"]["title"] == "Pods on GPUs"]
    assert table["start"] == "-PT3M"  # a period and a minute: its first period is the one drawn
    _, points = _published_with(files, _churn_page(end, table["period"]), end // 30)
    shown = cloudwatch_eval.widget(table, points, end - 6 * 3600, end, now=end)
    listed = {label for label, series in shown.items() if series}
    blank = {label for label, series in shown.items() if not series}
    assert len(shown) == 50 and listed == {f"Pod ml/steady-{i}" for i in range(45)}, (len(shown), len(listed))
    assert len(blank) == 5 and all(label.startswith("Pod ml/new-") for label in blank), blank
    assert kept(header(files, BY_POD))["Pods on GPUs"].startswith(
        "at most 50 pods (cloudwatch.top_pods), those seen at the most scrapes of the period of 120 s drawn and the "
        "one still filling (past 50, one that left early in the period of 120 s drawn may give its row to one that "
        "came since, whose row is blank)")
    notes = [f for f in lint(project, artifacts) if f.rule == "CW020"]
    assert [f.where.rsplit(" (", 1)[1] for f in notes] == ["Pods on GPUs)"], notes
    assert notes[0].severity == "note" and "a row that left early in the period drawn may give its place to one " \
                                          "that came since, blank in the period drawn" in notes[0].message


OVERVIEW = "cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"
IDLE = 14  # of the 64 GPUs, GPUs 50-63 (by node, then index) are idle at 0 %


def _busy_and_idle(node: int, t: float) -> str:
    """64 GPUs: GPUs 0-49 at 10-59 % utilization, GPUs 50-63 idle (0 %)."""
    return "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n" + "".join(
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
        f'Hostname="n{node}"}} {0.0 if node * PER_NODE + g >= 50 else 10.0 + node * PER_NODE + g}\n'
        for g in range(PER_NODE))


def test_a_utilization_chart_cut_at_its_limit_says_on_itself_that_idle_gpus_are_not_drawn():
    """The overview's per-GPU "GPU utilization" of 64 GPUs, 14 of them idle: its query keeps the 50 lines of the
    highest reading, so the 50 busy GPUs are drawn and none of the idle ones, the GPUs a reader of a fleet's
    utilization chart looks for. The chart is titled as Grafana's panel that draws every GPU ("GPU utilization");
    only the header, a screen away, said which lines it draws. Its title now says it (the by-pod utilization
    charts likewise)."""
    files, points = _published(_busy_and_idle, 10)
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    (widget,) = [w["properties"] for w in body["widgets"]
                 if w["type"] == "metric" and w["properties"]["title"].startswith("GPU utilization")]
    lines = cloudwatch_eval.widget(widget, points, 0, 300)
    drawn = {label: max(series.values()) for label, series in lines.items() if series}
    assert len(drawn) == NODES * PER_NODE - IDLE and min(drawn.values()) == 10.0, drawn  # no idle GPU drawn
    # seen on main 2628696: "GPU utilization"
    assert widget["title"] == "GPU utilization (the 50 GPUs that read highest: past 50, the least busy are not drawn)"
    by_pod = {w["properties"]["title"] for w in json.loads(json.loads(files[BY_POD])["DashboardBody"])["widgets"]
              if w["type"] == "metric"}
    assert "GPU utilization by pod (the 50 pods that read highest: past 50, the least busy are not drawn)" in by_pod
    # a chart whose cut leaves out what matters least keeps its title
    assert "GPU temperature" in {w["properties"]["title"] for w in body["widgets"] if w["type"] == "metric"}


THROTTLED = {(n, g) for n in range(NODES) for g in (6, 7)} - {(0, 7), (1, 7)}  # 14 of 64 GPUs
CLOCK_CHARTS = ((HEALTH, "SM clock", "DCGM_FI_DEV_SM_CLOCK"), (HEALTH, "Memory clock", "DCGM_FI_DEV_MEM_CLOCK"),
                ("cloudwatch/dashboards/gpudash-gpu-cluster-overview.json", "SM clock", "DCGM_FI_DEV_SM_CLOCK"))


def _clocks(node: int, t: float) -> str:
    """64 GPUs at 1,710 MHz SM / 6,251 MHz memory (a little apart each), the THROTTLED 14 held down all along (power
    capped, or slowed by heat): 900 MHz SM, 5,000 MHz memory."""
    def mhz(metric: str, g: int) -> float:
        low = (node, g) in THROTTLED
        base = {"DCGM_FI_DEV_SM_CLOCK": (1710.0, 900.0), "DCGM_FI_DEV_MEM_CLOCK": (6251.0, 5000.0)}[metric]
        return base[1] if low else base[0] - node - g / 10
    return "".join(f"# TYPE {m} gauge\n" + "".join(
        f'{m}{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",Hostname="n{node}"}} '
        f'{mhz(m, g)}\n' for g in range(PER_NODE)) for m in ("DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK"))


def test_a_cut_clock_chart_keeps_the_throttled_gpus_and_says_the_fastest_are_not_drawn():
    """Of 64 GPUs a clock chart draws 50. Ranked by each GPU's highest clock (ORDER BY MAX() DESC) the 14 throttled
    GPUs, whose clocks drop, the ones a health chart of clocks is read for, were the ones cut. Each clock chart keeps
    the lowest, its title says the fastest are not drawn, and its header says which lines it draws."""
    files, points = _published(_clocks, 10 * PERIODS)
    for path, title, metric in CLOCK_CHARTS:
        body = json.loads(json.loads(files[path])["DashboardBody"])
        (widget,) = [w["properties"] for w in body["widgets"]
                     if w["type"] == "metric" and panel_title(w["properties"]["title"]) == title]
        lines = cloudwatch_eval.widget(widget, points, 0, 300 * PERIODS)
        assert len(lines) == 50
        throttled = 900.0 if metric == "DCGM_FI_DEV_SM_CLOCK" else 5000.0
        # the 14 throttled GPUs' lines are all drawn, each reading its throttled clock all along
        low = [line for line in lines.values() if set(line.values()) == {throttled}]
        assert len(low) == len(THROTTLED), (path, title, len(low))  # seen on main: 0
        assert widget["title"] == f"{title} (the 50 GPUs that read lowest: past 50, the fastest are not drawn)"
        assert kept(header(files, path))[title].startswith(
            "at most 50 GPUs (cloudwatch.top_gpus), those of the lowest single reading in the time range shown")


@pytest.mark.parametrize("field, help_text, rank", [
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", ("MIN", "ASC")),
    ("DCGM_FI_DEV_VIDEO_CLOCK", "Video encoder/decoder clock (in MHz).", ("MIN", "ASC")),
    # a bitmask of why the clocks are held down: 0 is none, the highest readings are the GPUs that are
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "Current clock event reasons (bitmask).", ("MAX", "DESC")),
    ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Current clock throttle reasons.", ("MAX", "DESC")),
])
def test_a_chart_keeps_the_lowest_of_a_clock_frequency_only(field, help_text, rank):
    from generator.catalog import parse_counters
    from generator.cloudwatch_query import plan
    from generator.model import Query
    from generator.render.cloudwatch import line_rank
    from generator.settings import load_settings

    catalog = parse_counters(f"{field}, gauge, {help_text}\n")
    query = Query(field, "avg", ("node", "gpu"))
    assert line_rank(query, plan(query, catalog, load_settings(None), 300), catalog) == rank


LINE_WORDS = {"namespace": "namespaces", "container": "containers", "node": "nodes", "pod": "pods",
              "node, gpu": "GPUs"}


@pytest.mark.parametrize("by", list(LINE_WORDS))
def test_the_header_and_title_name_what_a_line_is(tmp_path, by):
    """A chart of one line per namespace, container or node is cut at cloudwatch.top_gpus lines too; its header and
    title name its lines as what they are (they said "at most 50 GPUs" of a chart of namespaces: the number right, the
    noun not), and the title's words are still taken off to find the panel."""
    (tmp_path / "dashboards").mkdir()
    keys = tuple(by.split(", "))
    (tmp_path / "dashboards" / "mine.py").write_text(
        "from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
        f"    yield Dashboard('mine', 'Mine', [Row('r', [Panel('Busy', [Query('DCGM_FI_DEV_GPU_UTIL', 'max', "
        f"{keys!r})])])])\n")
    dimensions = "cloudwatch:\n  dimensions: [ClusterName, namespace, pod, container]\n" if by == "container" else ""
    (tmp_path / "gpudash.yaml").write_text(f"definitions:\n  dashboards: [dashboards]\n{dimensions}")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    name = "cloudwatch/dashboards/gpudash-gpu-cluster-mine.json"
    (widget,) = [w["properties"] for w in json.loads(json.loads(files[name])["DashboardBody"])["widgets"]
                 if w["type"] == "metric"]
    words = LINE_WORDS[by]
    assert widget["title"].startswith(f"Busy (the 50 {words} that read highest")
    assert panel_title(widget["title"]) == "Busy"
    assert kept(header(files, name))["Busy"].startswith(f"at most 50 {words} (cloudwatch.top_")

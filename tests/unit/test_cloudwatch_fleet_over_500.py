"""A cluster of more than 500 GPUs: the fleet's one-line widgets are true, or the dashboard says how they differ.

"GPUs reporting", "Total power draw", "Average GPU utilization" and "Average GPU temperature" combine one series per GPU
of a Metrics Insights GROUP BY query; a query returns at most 500 series, the ones its ORDER BY ranks first (user
guide, "Metrics Insights quotas": "A single query can return no more than 500 time series ... the 500 that have the
highest or lowest values according to your ORDER BY clause are returned"). With 504 GPUs (63 nodes of 8) "GPUs
reporting" reads 500. README ("Limits of this") and `gpudash cost` say so; a reader of the dashboard must be told
too, where the value is shown: its header, as it says every other way a widget differs from its title.
"""

from __future__ import annotations

import json

import pytest

from tests.support import built, cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header, notes, said
from tests.support.dcgm_fleet import exporter_targets

NODES, PER_NODE = 63, 8
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
OVERVIEW = "cloudwatch/dashboards/gpudash-gpu-cluster-overview.json"
ONE_LINE = ("GPUs reporting", "Total power draw", "Average GPU utilization", "Average GPU temperature")


def _page(node: int) -> str:
    lines = []
    for name, value in (("DCGM_FI_DEV_GPU_TEMP", 50.0), ("DCGM_FI_DEV_POWER_USAGE", 100.0 + node),
                        ("DCGM_FI_DEV_GPU_UTIL", float(node % 100))):
        lines.append(f"# TYPE {name} gauge")
        lines += [f'{name}{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
                  f'Hostname="n{node}"}} {value}' for g in range(PER_NODE)]
    return "\n".join(lines) + "\n"


def test_the_fleets_one_line_widgets_are_true_past_500_gpus(tmp_path):
    """504 GPUs reporting at every scrape: each of the four values is exact. Seen on main 2628696: "GPUs reporting"
    500, "Total power draw" the total of the 500 highest (four GPUs of 100 W left out: 65,624 W where 66,024 W is true),
    each said in the header only."""
    files = built.files("{}\n")
    config, job = agent_config(files[AGENT_FILE])
    targets = exporter_targets(job, NODES)
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    points = Agent(config, job, only=cloudwatch_eval.reads(*(widgets[title] for title in ONE_LINE))).run(
        [Scrape(30.0 * k, _page(n), targets[n]) for k in range(-1, 8) for n in range(NODES)])
    truth = {"GPUs reporting": NODES * PER_NODE, "Total power draw": sum(PER_NODE * (100.0 + n) for n in range(NODES)),
             "Average GPU utilization": sum(n % 100 for n in range(NODES)) / NODES, "Average GPU temperature": 50.0}
    for title in ONE_LINE:
        (shown,) = cloudwatch_eval.widget(widgets[title], points, 0, 240).values()
        assert abs(shown[180] - truth[title]) < 1e-9, (title, shown)
    assert "combines at most 500" not in header(files, OVERVIEW)


LEFT = 13  # nodes (104 GPUs at 95 %) that stopped reporting two minutes before the end
PRESENT = 65  # nodes (520 GPUs): 33 at 20 %, 32 at 60 %: their mean is 39.7 %


def _utilization(node: int, t: float) -> str | None:
    if node < LEFT:
        if t >= END - 120:
            return None
        util = 95.0
    else:
        util = 20.0 if node % 2 else 60.0
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge"] + [
        f'DCGM_FI_DEV_GPU_TEMP{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
        f'Hostname="n{node}"}} 50' for g in range(PER_NODE)]
    lines += ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"] + [
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
        f'Hostname="n{node}"}} {util}' for g in range(PER_NODE)]
    return "\n".join(lines) + "\n"


END = 3600
# the scrapes the overview's one-line widgets read: each reads its own last four minutes (-PT4M, checked in
# _read_within) and a gauge's reading is published per scrape, so a scrape before them changes nothing they show
SCRAPES = range(END - 240, END, 30)


def _read_within(body: dict) -> None:
    for w in body["widgets"]:
        if w["type"] == "metric" and w["properties"]["title"] in ONE_LINE:
            assert cloudwatch_eval.widget_range(w["properties"], 0, END)[0] >= SCRAPES[0], w["properties"]["title"]


def _shown(tmp_path, page, nodes: int):
    """The default build's files, its overview's metric widgets by title, and the points the agent publishes of
    `nodes` nodes' pages (`page(node, t)`, None where the node does not report) scraped every 30 s over the range
    the widgets read (SCRAPES)."""
    files = built.files("{}\n")
    config, job = agent_config(files[AGENT_FILE])
    targets = exporter_targets(job, nodes)
    scrapes = [Scrape(float(t), page(n, t), targets[n]) for t in SCRAPES
               for n in range(nodes) if page(n, t) is not None]
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    _read_within(body)
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    return files, widgets, Agent(config, job, only=cloudwatch_eval.reads(*widgets.values())).run(scrapes)


def test_past_500_gpus_a_value_now_combines_gpus_reporting_now_not_the_busiest_that_left(tmp_path):
    """Past 500 GPUs a value now combines the 500 series its query ranks first over its own four minutes. Ranked by
    the highest mean (ORDER BY AVG() DESC), 104 GPUs at 95 % that left two minutes ago took 104 of the 500 places:
    "Average GPU utilization" was the mean of 396 GPUs reporting in the minute drawn, the busiest of them (46 % where
    the 520 reporting read 39.7 %: 264 at 20 %, 256 at 60 %). On the OTel pipeline the values read
    one series per node (each node's total and count of GPUs read per scrape, made at the agent): 78 nodes over the
    four minutes, the 65 of the minute drawn at 39.7 %. "GPUs reporting" read 500 (its query's 500 series) where 520
    reported; per node: 520."""
    files, widgets, points = _shown(tmp_path, _utilization, LEFT + PRESENT)
    (shown,) = cloudwatch_eval.widget(widgets["Average GPU utilization"], points, END - 6 * 3600, END,
                                      now=END).values()
    value = shown[max(shown)]
    truth = sum(20.0 if node % 2 else 60.0 for node in range(LEFT, LEFT + PRESENT)) / PRESENT  # 39.69: 33 + 32 nodes
    assert abs(value - truth) < 1e-9, value  # seen: 45.9 (the 396 of the 520 reporting ranked first by their mean)
    (reporting,) = cloudwatch_eval.widget(widgets["GPUs reporting"], points, END - 6 * 3600, END, now=END).values()
    assert reporting[max(reporting)] == PRESENT * PER_NODE, reporting  # seen on main 2628696: 500
    assert said(header(files, OVERVIEW), "GPUs reporting",
                "the number of GPUs reporting: each node's most GPUs read at one scrape of the minute, added over the "
                "nodes (a node that came or left within the minute, or whose scrape failed in it, counts its GPUs "
                "whole, and two exporter pods reading a node at once (a DaemonSet's surge) count them once, but two "
                "of a node's GPUs each missing from another of its scrapes (DCGM's blank there) count as one), while "
                "under 498 nodes reported within the widget's time range (a node that left or came within it counts, "
                "so a node roll can reach 498 with fewer in the cluster), and from 498 on (a widget reads at most 500 "
                "metrics, 2 of them its other metric lines, so its query returns 498 series) the larger of two counts: "
                "the GPUs of those 498 nodes reporting in the minute, and the number of readings of the cluster in the "
                "minute")


STAYED, REPLACED = 50, 20  # nodes: 400 GPUs at 20 % all along; 160 at 20 % replaced by 160 at 90 % (a node roll)


def _rolled(node: int, t: float) -> str | None:
    """Node `node`'s exporter page at `t`: the REPLACED nodes stop 120 s before the end, their new nodes (busy at
    90 %) start reporting 100 s before it."""
    if STAYED <= node < STAYED + REPLACED and t >= END - 120:
        return None
    if node >= STAYED + REPLACED and t < END - 100:
        return None
    util = 90.0 if node >= STAYED + REPLACED else 20.0
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"] + [
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
        f'Hostname="n{node}"}} {util}' for g in range(PER_NODE)]
    return "\n".join(lines) + "\n"


def test_past_500_gpus_a_node_roll_keeps_the_new_gpus_in_the_mean(tmp_path):
    """A node roll past 500 GPUs: 400 GPUs at 20 % all along, 160 at 20 % whose nodes went 120 s before the end,
    160 at 90 % on the new nodes from 100 s before it. The minute drawn holds 560 GPUs reporting. Ranked by how many
    scrapes saw each over the value's four minutes, the 500 places of the GROUP BY query went to the 400 that stayed
    (8 scrapes) and 100 that left (4), none to the new GPUs (3): the value read 20 %, the new GPUs left out (ranked by
    the highest mean, before, the GPUs that left were kept instead). No ORDER BY is right for both, and a widget holds
    one Metrics Insights query. Read from every reading of the cluster in the minute drawn, each GPU weighed by its
    readings there (the 160 new ones, read once, half): 31.67 % (main 09184ff3, said in the header). On the OTel
    pipeline the value reads one series per node (each node's total and count of GPUs read, per scrape, averaged over
    the minute): 90 nodes, every node's GPUs weighing whole: 40 %, the mean of each GPU's mean."""
    files, widgets, points = _shown(tmp_path, _rolled, STAYED + 2 * REPLACED)
    (shown,) = cloudwatch_eval.widget(widgets["Average GPU utilization"], points, END - 6 * 3600, END,
                                      now=END).values()
    gpus = {STAYED * PER_NODE: 20.0, REPLACED * PER_NODE: 90.0}  # {GPUs reporting in the minute drawn: value}
    truth = sum(n * v for n, v in gpus.items()) / sum(gpus)
    assert max(shown) == END - 120 and abs(shown[max(shown)] - truth) < 1e-9, (max(shown), shown[max(shown)])
    # seen on main e04d1f4: 20.0 (the new GPUs left out); on main 09184ff3: 31.67 (the readings' mean)
    assert said(header(files, OVERVIEW), "Average GPU utilization",
                "the mean over the GPUs reporting in the minute: the nodes' totals of their GPUs' readings added, over "
                "their counts of GPUs read added (each node's a mean over its scrapes in the minute) (a node that came "
                "or left within the minute, or whose scrape failed in it, weighs its GPUs whole, and two exporter pods "
                "reading a node at once (a DaemonSet's surge) weigh them once, but a GPU read at fewer of the minute's "
                "scrapes than its node (DCGM's blank at one, or it came or left while its node reported on) weighs by "
                "the share of its node's scrapes that read it), while under 249 nodes reported within the widget's "
                "time range (its query returns two series per node, a total and a count, and a node that left or came "
                "within it counts, so a node roll can reach 249 with fewer in the cluster), and from 249 on (a widget "
                "reads at most 500 metrics, 3 of them its other metric lines, so its query returns 497 series) the "
                "mean of every reading of the cluster in the minute")


BLANK = 9.223372036854775794e18  # DCGM's blank for a 64-bit field, as the exporter passes it through


def _blank_once(node: int, t: float) -> str | None:
    """65 nodes at 30 % but node 0's GPU 0, which reads DCGM's blank at one scrape (END - 150)."""
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"] + [
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
        f'Hostname="n{node}"}} {BLANK if (node, g, t) == (0, 0, END - 150) else 30.0}' for g in range(PER_NODE)]
    return "\n".join(lines) + "\n"


def test_past_500_gpus_on_classic_a_blank_reading_leaves_its_minute_blank_not_huge(tmp_path):
    """agent.pipeline: classic publishes DCGM's blank (about 9.2e18). Past 500 GPUs "Average GPU utilization" reads
    every reading of the cluster: one blank among 1,040 readings of a minute made it about 8.9e15 %. As the per-GPU
    form's guard does, a minute whose total only a blank explains is a gap; a minute without one reads 30 %."""
    files = built.files("agent:\n  pipeline: classic\n")
    config, job = agent_config(files[AGENT_FILE])
    targets = exporter_targets(job, PRESENT)
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    _read_within(body)
    (widget,) = [w["properties"] for w in body["widgets"]
                 if w["type"] == "metric" and w["properties"]["title"] == "Average GPU utilization"]
    points = Agent(config, job, only=cloudwatch_eval.reads(widget)).run(
        [Scrape(float(t), _blank_once(n, t), targets[n]) for t in SCRAPES for n in range(PRESENT)])
    (shown,) = cloudwatch_eval.widget(widget, points, END - 6 * 3600, END, now=END).values()
    # its own four minutes from END - 240, drawn up to the one from END - 120; the blank is in the one from END - 180
    assert shown == {END - 240: 30.0, END - 120: 30.0}, shown  # without the guard: END - 180 read 8.9e15


SURGED = 10  # nodes (80 GPUs at 90 %) whose exporter pod is being replaced: old and new pods both scraped
CALM = 55  # nodes (440 GPUs at 20 %) with one exporter pod


def _surge_page(node: int, t: float) -> str:
    util = 90.0 if node < SURGED else 20.0
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"] + [
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
        f'Hostname="n{node}"}} {util}' for g in range(PER_NODE)]
    return "\n".join(lines) + "\n"


def _surge_value(tmp_path, nodes: int, surged: int = SURGED) -> tuple[dict, float]:
    files = built.files("{}\n")
    config, job = agent_config(files[AGENT_FILE])
    # a rollout of the exporter's DaemonSet with maxSurge runs a new pod next to the old one on the first `surged` nodes
    old, new = exporter_targets(job, nodes), exporter_targets(job, min(nodes, surged), 2, "nvidia-dcgm-exporter-new")
    scrapes = [Scrape(float(t), _surge_page(n, t), old[n]) for t in SCRAPES for n in range(nodes)]
    scrapes += [Scrape(float(t) + 7, _surge_page(n, t), new[n]) for t in SCRAPES for n in new]
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    _read_within(body)
    (widget,) = [w["properties"] for w in body["widgets"]
                 if w["type"] == "metric" and w["properties"]["title"] == "Average GPU utilization"]
    points = Agent(config, job, only=cloudwatch_eval.reads(widget)).run(scrapes)
    (shown,) = cloudwatch_eval.widget(widget, points, END - 6 * 3600, END, now=END).values()
    return files, shown[max(shown)]


def test_up_to_500_gpus_an_exporter_surge_leaves_the_fleet_mean_exact(tmp_path):
    """Control: 60 nodes (480 GPUs), 10 of them read by two exporter pods at once. Up to 500 GPUs the value is the
    mean of each GPU's mean: a GPU read twice per scrape is still one GPU."""
    nodes = 60
    _, value = _surge_value(tmp_path, nodes)
    truth = (SURGED * 90.0 + (nodes - SURGED) * 20.0) / nodes
    assert abs(value - truth) < 1e-9, value


def test_past_500_gpus_an_exporter_surge_leaves_the_fleet_mean_exact_and_the_header_says_so(tmp_path):
    """While the exporter's DaemonSet rolls with a surge, the old and the new exporter pod of a node are both scraped
    and each of its GPUs is read twice per scrape. Read from every reading of the cluster (each an observation of one
    per-cluster metric, past 500 GPUs), 80 GPUs at 90 % read by two pods and 440 at 20 % read by one showed 38.67 %
    where the fleet's mean is 30.77 % (main 09184ff3, said in the header). Per node (each node's total and count of
    GPUs read per scrape, averaged over the minute) the two pods' points are two of one total: 30.77 %."""
    files, value = _surge_value(tmp_path, SURGED + CALM)
    gpus = {SURGED * PER_NODE: 90.0, CALM * PER_NODE: 20.0}  # {GPUs reporting in the minute drawn: value}
    assert abs(value - sum(n * v for n, v in gpus.items()) / sum(gpus)) < 1e-9, value  # main 09184ff3: 38.67
    (note,) = [n for n in notes(header(files, OVERVIEW))["Average GPU utilization"] if "from 249" in n]
    assert "two exporter pods reading a node at once (a DaemonSet's surge) weigh them once" in note, note


PAST = 250  # nodes: past the 248 a fleet mean's query holds (a total and a count per node: 497 series)


def test_past_248_nodes_the_fleet_mean_reads_every_reading_of_the_minute(tmp_path):
    """250 nodes (2,000 GPUs), 10 at 90 % and 240 at 20 %, each read at both scrapes of the minute: the query per node
    returns 497 of their 500 series (248 nodes and half of one, whose total without its count would read nonsense), so
    the value is the mean of every reading of the minute (each GPU's reading once per scrape): 22.8 %."""
    files, value = _surge_value(tmp_path, PAST, surged=0)
    assert abs(value - (SURGED * 90.0 + (PAST - SURGED) * 20.0) / PAST) < 1e-9, value
    (note,) = [n for n in notes(header(files, OVERVIEW))["Average GPU utilization"] if "from 249" in n]
    assert "from 249 on (a widget reads at most 500 metrics, 3 of them its other metric lines, so its query returns " \
           "497 series) the mean of every reading of the cluster in the minute" in note, note


@pytest.mark.xfail(strict=True, reason="past 248 nodes the fleet's mean reads every reading of the minute, each GPU "
                                       "weighing by its readings: two exporter pods on a node (a DaemonSet's surge) "
                                       "read its GPUs twice per scrape, 25.38 % for 22.8 % (the header says so)")
def test_past_248_nodes_an_exporter_surge_leaves_the_fleet_mean_exact(tmp_path):
    """250 nodes, the 10 at 90 % read by two exporter pods at once: 22.8 % is true."""
    _, value = _surge_value(tmp_path, PAST)
    assert abs(value - (SURGED * 90.0 + (PAST - SURGED) * 20.0) / PAST) < 1e-9, value


def _missed_page(node: int, t: float) -> str | None:
    """The first SURGED nodes (busy, 90 %) fail their scrape at END - 90, in the minute drawn (from END - 120)."""
    return None if node < SURGED and t == END - 90 else _surge_page(node, t)


def test_past_500_gpus_a_failed_scrape_leaves_the_fleet_mean_exact_and_the_header_says_so(tmp_path):
    """10 nodes at 90 % whose exporter's scrape failed once in the minute drawn (one reading of two) among 55 at 20 %.
    Read from every reading of the cluster (past 500 GPUs), a GPU weighed by its readings in the minute: 25.83 % for a
    fleet mean of 30.77 % (main 09184ff3, said in the header). A busy node's exporter is the one likeliest to time
    out. Per node, a node's total and count of GPUs read are each a mean over the scrapes that arrived: 30.77 %."""
    files, widgets, points = _shown(tmp_path, _missed_page, SURGED + CALM)
    (shown,) = cloudwatch_eval.widget(widgets["Average GPU utilization"], points, END - 6 * 3600, END,
                                      now=END).values()
    assert max(shown) == END - 120
    gpus = {SURGED * PER_NODE: 90.0, CALM * PER_NODE: 20.0}  # {GPUs reporting in the minute drawn: value}
    assert abs(shown[END - 120] - sum(n * v for n, v in gpus.items()) / sum(gpus)) < 1e-9, shown  # was 25.83
    (note,) = [n for n in notes(header(files, OVERVIEW))["Average GPU utilization"] if "from 249" in n]
    assert "a node that came or left within the minute, or whose scrape failed in it, weighs its GPUs whole" in note, \
        note


def _powered(node: int, t: float) -> str | None:
    """_rolled's fleet with each GPU's temperature and power (node n's GPUs draw 100 + n W)."""
    page = _rolled(node, t)
    if page is None:
        return None
    for name, value in (("DCGM_FI_DEV_GPU_TEMP", 50.0), ("DCGM_FI_DEV_POWER_USAGE", 100.0 + node)):
        page += f"# TYPE {name} gauge\n" + "".join(
            f'{name}{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
            f'Hostname="n{node}"}} {value}\n' for g in range(PER_NODE))
    return page


def test_past_500_gpus_the_count_and_the_total_hold_every_gpu_of_the_minute(tmp_path):
    """The node roll past 500 GPUs: 400 GPUs there all along (read twice in the minute drawn), 160 on new nodes that
    came within it (read once). Their query's 500 series per GPU, ranked over the value's four minutes, held GPUs gone
    before the minute drawn in place of some reporting in it; every reading of the minute drawn over the two one GPU
    gives counted the 160 half (480 GPUs, 64,160 W: main 09184ff3, said in the header). Per node (each node's most
    GPUs read at one scrape of the minute, its total a mean over its scrapes there): 560 GPUs, 78,520 W."""
    files, widgets, points = _shown(tmp_path, _powered, STAYED + 2 * REPLACED)
    values = {}
    for title in ("GPUs reporting", "Total power draw"):
        (shown,) = cloudwatch_eval.widget(widgets[title], points, END - 6 * 3600, END, now=END).values()
        assert max(shown) == END - 120, (title, shown)
        values[title] = shown[END - 120]
    new = range(STAYED + REPLACED, STAYED + 2 * REPLACED)
    power = sum(PER_NODE * (100.0 + n) for n in range(STAYED)) + sum(PER_NODE * (100.0 + n) for n in new)
    # seen on main 2628696: 400 GPUs and 53,604 W: the 500 series ranked first over the value's four minutes held GPUs
    # gone before the minute drawn; on main 09184ff3: 480 and 64,160 W (the 160 new GPUs half)
    assert values == {"GPUs reporting": (STAYED + REPLACED) * PER_NODE, "Total power draw": power}, values
    text = header(files, OVERVIEW)
    (count_note,) = [n for n in notes(text)["GPUs reporting"] if "from 498" in n]
    assert "one that came or left within the minute, or whose node's scrape failed in it, counts as the share of the " \
           "minute's scrapes that read it" in count_note, count_note  # (the readings, past 497 nodes)
    (power_note,) = [n for n in notes(text)["Total power draw"] if "from 498" in n]
    assert "the total of every reading of the cluster in the minute (a GPU's reading once per scrape, " \
           "DCGM_FI_DEV_POWER_USAGE [ClusterName, readings: once per GPU]) over the 2 readings one GPU gives there " \
           "(one per scrape of 30 s)" in power_note, power_note


def test_up_to_500_gpus_the_count_and_the_total_stay_one_per_gpu(tmp_path):
    """Control: 60 nodes (480 GPUs), the roll's new GPUs among them read once in the minute drawn: up to 500 GPUs
    each GPU reporting counts once and adds its mean."""
    def page(node: int, t: float) -> str | None:  # nodes 50-59 came 100 s before the end (read once in the minute)
        return None if node >= STAYED and t < END - 100 else _powered(STAYED + REPLACED + node - STAYED, t) \
            .replace(f'Hostname="n{STAYED + REPLACED + node - STAYED}"', f'Hostname="n{node}"') \
            if node >= STAYED else _powered(node, t)

    files, widgets, points = _shown(tmp_path, page, 60)
    (count,) = cloudwatch_eval.widget(widgets["GPUs reporting"], points, END - 6 * 3600, END, now=END).values()
    (power,) = cloudwatch_eval.widget(widgets["Total power draw"], points, END - 6 * 3600, END, now=END).values()
    assert count[END - 120] == 480, count
    truth = sum(PER_NODE * (100.0 + n) for n in range(STAYED)) + sum(PER_NODE * (100.0 + n)
                                                                      for n in range(STAYED + REPLACED, STAYED + REPLACED + 10))
    assert abs(power[END - 120] - truth) < 1e-9, power


def _shared_page(node: int) -> str:
    """_page with KUBERNETES_VIRTUAL_GPUS: each GPU's series once per pod holding it, a second pod sharing every
    other GPU (each copy of a device field is the GPU's reading)."""
    lines = []
    for name, value in (("DCGM_FI_DEV_GPU_TEMP", 50.0), ("DCGM_FI_DEV_POWER_USAGE", 100.0 + node)):
        lines.append(f"# TYPE {name} gauge")
        for g in range(PER_NODE):
            labels = f'gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",Hostname="n{node}"'
            lines += [f'{name}{{{labels},namespace="ml",pod="{pod}-{node}-{g}"}} {value}'
                      for pod in (("train", "infer") if g % 2 else ("train",))]
    return "\n".join(lines) + "\n"


def test_past_500_gpus_with_virtual_gpus_a_device_fields_fleet_values_hold_every_gpu_once(tmp_path):
    """exporter.virtual_gpus: true, 504 GPUs, half of them shared by two pods. A device field's copies are each the
    GPU's reading, merged once per GPU at the agent like any field's, so "GPUs reporting", "Total power draw" and
    "Average GPU temperature" read every GPU past 500 as without the setting. Seen on main ad3673ed: 499 GPUs and
    65,524 W (of 504 and 66,024 W): the fallback past 499 was left out for every field with the setting, where only
    the fields the exporter splits per process (GPU utilization, framebuffer used) need it left out (their header
    says so)."""
    files = built.files("exporter:\n  virtual_gpus: true\n")
    config, job = agent_config(files[AGENT_FILE])
    targets = exporter_targets(job, NODES)
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    device = ("GPUs reporting", "Total power draw", "Average GPU temperature")
    points = Agent(config, job, only=cloudwatch_eval.reads(*(widgets[title] for title in device))).run(
        [Scrape(30.0 * k, _shared_page(n), targets[n]) for k in range(-1, 8) for n in range(NODES)])
    truth = {"GPUs reporting": NODES * PER_NODE, "Total power draw": sum(PER_NODE * (100.0 + n) for n in range(NODES)),
             "Average GPU temperature": 50.0}
    for title in device:
        (shown,) = cloudwatch_eval.widget(widgets[title], points, 0, 240).values()
        assert abs(shown[180] - truth[title]) < 1e-9, (title, shown)
    text = header(files, OVERVIEW)
    assert not any("past 499 it reads those 499 only" in n for title in device for n in notes(text).get(title, ()))
    assert any("past 499 it reads those 499 only" in n for n in notes(text)["Average GPU utilization"])



UNDER, GONE, CAME = 55, 7, 7  # nodes: 440 GPUs all along; 56 that stopped 210 s before the end; 56 that came 100 s before


def _roll_under_500(node: int, t: float) -> str | None:
    """A node roll in a cluster that never holds 498 GPUs: node n's GPUs read 50 °C and 100 + n W, at 20 % (90 % on
    the new nodes); the GONE nodes stop 210 s before the end, the CAME nodes start 100 s before it (read once in the
    minute drawn)."""
    if UNDER <= node < UNDER + GONE and t >= END - 210:
        return None
    if node >= UNDER + GONE and t < END - 100:
        return None
    lines = []
    for name, value in (("DCGM_FI_DEV_GPU_TEMP", 50.0), ("DCGM_FI_DEV_POWER_USAGE", 100.0 + node),
                        ("DCGM_FI_DEV_GPU_UTIL", 90.0 if node >= UNDER + GONE else 20.0)):
        lines.append(f"# TYPE {name} gauge")
        lines += [f'{name}{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
                  f'Hostname="n{node}"}} {value}' for g in range(PER_NODE)]
    return "\n".join(lines) + "\n"


HERE = list(range(UNDER)) + list(range(UNDER + GONE, UNDER + GONE + CAME))  # the nodes reporting in the minute drawn


@pytest.fixture(scope="module")
def roll_under_500(tmp_path_factory):
    files, widgets, points = _shown(tmp_path_factory.mktemp("roll"), _roll_under_500, UNDER + GONE + CAME)
    values = {}
    for title in ("GPUs reporting", "Total power draw", "Average GPU utilization"):
        (shown,) = cloudwatch_eval.widget(widgets[title], points, END - 6 * 3600, END, now=END).values()
        assert max(shown) == END - 120, (title, shown)
        values[title] = shown[END - 120]
    return files, values


def test_a_node_roll_under_500_gpus_counts_and_adds_every_gpu_reporting(roll_under_500):
    """The cluster never holds more than 496 GPUs, but the four minutes the values now read see 552 (the 56 that left
    and the 56 that came): their query returns its 498 series, so they switched to every reading of the minute over
    the two one GPU gives, where the 56 that came, read once, count half: 468 GPUs and 60,500 W, where 496 reported
    drawing 65,120 W (seen on main 91e3612d, whose header said "the number of GPUs reporting up to 498 GPUs of the
    cluster"). Past the LIMIT each form reads at most what is there (the query's series leave GPUs out, the readings
    count a GPU read once as half), so the larger is shown: here the series, every GPU reporting."""
    _, values = roll_under_500
    assert len(HERE) * PER_NODE < 498
    assert values["GPUs reporting"] == len(HERE) * PER_NODE, values  # seen: 468
    assert abs(values["Total power draw"] - sum(PER_NODE * (100.0 + n) for n in HERE)) < 1e-9, values  # seen: 60,500


def test_a_node_roll_under_500_gpus_is_said_where_the_values_are_shown(roll_under_500):
    """The header says what the values read (per node), what the switch counts (the nodes of the widget's time range,
    not of the cluster now) and what they read past it."""
    files, _ = roll_under_500
    text = header(files, OVERVIEW)
    for title, what, switch in (
            ("GPUs reporting", "the number of GPUs reporting: each node's most GPUs read at one scrape", 498),
            ("Total power draw", "the total of each node's GPUs' readings, a mean over its scrapes in the minute", 498),
            ("Average GPU utilization", "the mean over the GPUs reporting in the minute: the nodes' totals", 249)):
        (note,) = [n for n in notes(text)[title] if f"from {switch} on" in n]
        assert note.startswith(what), note  # seen: "... up to 498 GPUs of the cluster"
        assert f"while under {switch} nodes reported within the widget's time range (" in note, note
        assert f"a node that left or came within it counts, so a node roll can reach {switch} with fewer in the " \
               f"cluster)" in note, note
    (count,) = [n for n in notes(text)["GPUs reporting"] if "from 498" in n]
    assert "the larger of two counts: the GPUs of those 498 nodes reporting in the minute, and the number of " \
           "readings of the cluster in the minute" in count, count


def test_a_node_roll_under_500_gpus_reads_the_mean_of_each_gpu(roll_under_500):
    """The four minutes saw 552 GPUs, past the per-GPU query's 497 series: read from the minute's readings the 56 new
    GPUs at 90 % weighed half, 24.19 % for the 496 GPUs' 27.90 % (a strict xfail on main 09184ff3). Per node the
    query holds the 69 nodes, each node's GPUs weighing whole: 27.90 %."""
    _, values = roll_under_500
    truth = (UNDER * PER_NODE * 20.0 + CAME * PER_NODE * 90.0) / (len(HERE) * PER_NODE)
    assert abs(values["Average GPU utilization"] - truth) < 1e-9, values

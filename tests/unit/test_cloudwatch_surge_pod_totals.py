"""A pod's totals on CloudWatch while the exporter's DaemonSet rolls with a surge: two exporter pods read each node.

During a rollout with `maxSurge` above 0 each node's new exporter pod runs beside the old one until the old one is
deleted; here the old release writes `Hostname`, the new one `hostname` (an exporter upgrade across the spelling
change), so for a while the agent scrapes every node's GPUs twice. The fleet is a seeded random one
(tests/support/random_fleet.py: MIG beside whole GPUs, one pod name in two namespaces, idle GPUs), through the
agent model of the build's own configuration into the bundled by-pod dashboard, drawn as CloudWatch documents.

* On the OTel pipeline (the default) a pod's totals are the mean of the pod's totals per scrape, made at the
  agent: both pods' scrapes hold the pod's GPUs once each, so the widgets read the truth in the overlap too.
* A counter's widgets count the overlap's seconds twice on both pipelines (each exporter pod's deltas are sent: on
  the OTel pipeline each DaemonSet revision is a delta series of its own, docs/cloudwatch.md "Two exporter pods on
  one node"): a 10-minute overlap read twice a GPU's PCIe replays and a pod's energy use rate, which no dashboard
  header said (the documentation and `gpudash verify`'s maxSurge warning did); now each such widget's does.
* On `agent.pipeline: classic` nothing adds a scrape up: a pod's total is the period's observations over the
  scrapes scrape.interval gives it, so the overlap's extra scrapes count: a period with m more scrapes of the node
  than its n reads (n + m) / n of the truth (a 60 s overlap: 1.2 times; a 10-minute one: twice). Before, the header
  said only the converse, a period missing m of its n scrapes reading (n - m) / n; it now says this too.
  A user's total per node reads so on classic; on the OTel pipeline it reads the node's totals per scrape, which the
  agent makes (as it makes a pod's), and so the truth.
"""

from __future__ import annotations

from dataclasses import replace
from statistics import mean

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.render.cloudwatch import panel_title
from tests.support import cloudwatch_eval, mixed_fleet, random_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import close, header, notes, panel, said, widgets
from tests.support.dcgm_fleet import discovered
from tests.support.mig_variant import AGENT_FILE, variant_project
from tests.support.mixed_fleet import truth

STEP, END, PERIOD = 30, 3000, 300
PAGE = "cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"
TOTALS = ("Framebuffer used by pod", "Power draw of each pod's GPUs")
COUNTERS = {"Energy use rate of each pod's GPUs": "by-pod", "PCIe replays": "health"}  # (on otel: per GPU, merged)
SURGE = "two exporter pods at once"  # what the classic header says of such a period
SEVERAL = "a pod holding several MIG instances of one GPU weighs that GPU once per instance"


def _target(job: dict, node: str, pod: str, revision: str, address: str) -> dict[str, str]:
    return discovered(job, {"__address__": f"{address}:9400", "__meta_kubernetes_namespace": "gpu-operator",
                            "__meta_kubernetes_pod_name": pod, "__meta_kubernetes_pod_node_name": node,
                            "__meta_kubernetes_pod_container_port_number": "9400",
                            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
                            "__meta_kubernetes_pod_controller_kind": "DaemonSet",
                            "__meta_kubernetes_pod_label_controller_revision_hash": revision,
                            "__meta_kubernetes_pod_label_app_kubernetes_io_name": "dcgm-exporter"})


# a user's panels of a per-scrape form on any pipeline: the period's observations over its scrapes
NODE_SUMS = """
from generator.model import Dashboard, Panel, Query, Row

def dashboards(ctx):
    yield Dashboard(id="sums", title="Sums", rows=[Row("all", [
        Panel("Framebuffer used per node", Query("DCGM_FI_DEV_FB_USED", "sum", ("node",))),
        Panel("Power draw per node", Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("node",))),
        Panel("GPUs per node", Query("DCGM_FI_DEV_POWER_USAGE", "count", ("node",))),
        Panel("Engine activity per node", Query("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "sum", ("node",))),
    ])])
"""
SUMS_PAGE = "cloudwatch/dashboards/gpudash-gpu-cluster-sums.json"


def _drawn(tmp_path, pipeline: str, surge: tuple[int, int], seed: int = 1, dashboards: dict | None = None,
           fleet: tuple | None = None, failed: tuple[int, int] | None = None):
    """(fleet, project, files, {title: lines}, {period start: scrapes of both pods there}) of the story: every
    node's old exporter pod (`Hostname`) scraped until surge[1], the new one (`hostname`, 7 s later in each
    interval) from surge[0]; `dashboards`: definitions in place of the bundled ones; `fleet`: with
    KUBERNETES_VIRTUAL_GPUS (exporter.virtual_gpus), in place of seed's; `failed`: (time, node index) of the old
    pod's one failed scrape."""
    settings = "exporter:\n  virtual_gpus: true\n" if fleet else ""
    fleet = fleet or random_fleet.fleet(seed)
    old = tuple(replace(node, spelling="Hostname", node_name_set=True) for node in fleet)
    new = tuple(replace(node, spelling="hostname", node_name_set=True) for node in fleet)
    project = variant_project(tmp_path, "agent:\n  pipeline: classic\n" if pipeline == "classic" else settings,
                              dashboards)
    files = encode(build(project, grafana=False))
    config, job = agent_config(files[AGENT_FILE])
    scrapes, extra = [], {}
    for k in range(-2, END // STEP):
        t = k * STEP
        for i, (before, after) in enumerate(zip(old, new)):
            if t < surge[1] and (t, i) != failed:
                scrapes.append(Scrape(t, mixed_fleet.payload(before, t, STEP), _target(
                    job, before.name, f"nvidia-dcgm-exporter-old{i}", "6b7c8d9f5", f"10.0.{i}.1")))
            if t >= surge[0]:
                scrapes.append(Scrape(t + 7, mixed_fleet.payload(after, t + 7, STEP), _target(
                    job, after.name, f"nvidia-dcgm-exporter-new{i}", "7d9f8c6b4", f"10.0.{i}.2")))
            if surge[0] <= t < surge[1] and i == 0:
                extra[t // PERIOD * PERIOD] = extra.get(t // PERIOD * PERIOD, 0) + 1
    scrapes.sort(key=lambda s: s.timestamp)
    points = Agent(config, job).run(scrapes)
    drawn = {panel_title(p["title"]): (path, p) for path, p in widgets(files)
             if path in (PAGE, SUMS_PAGE) or panel_title(p["title"]) in COUNTERS}
    lines = {title: cloudwatch_eval.widget(drawn[title][1], points, 0, END) for title in drawn}
    return fleet, project, files, lines, extra


def _truth(project, files, title: str, fleet, page: str = PAGE) -> dict[str, float]:
    """{line: value} from the fleet's facts; a pod holding several MIG instances of one GPU is left out where the
    header says it weighs that GPU once per instance (test_cloudwatch_random_fleets holds it to that)."""
    query = panel(project, page, title, "gpu-cluster").queries[0]
    several = random_fleet.several_instances(fleet) if said(header(files, page), title, SEVERAL) else set()
    return {label: value for label, value in truth(query, {n.name: n.name for n in fleet}, fleet=fleet).items()
            if label not in several}


@pytest.mark.parametrize("surge", [(1500, 1560), (1500, 2100)], ids=["a minute", "ten minutes"])
def test_on_the_otel_pipeline_a_pods_totals_read_the_truth_through_a_surge(tmp_path, surge):
    fleet, project, files, lines, _ = _drawn(tmp_path, "otel", surge)
    for title in TOTALS:
        expected = _truth(project, files, title, fleet)
        assert set(lines[title]) - (random_fleet.several_instances(fleet) - set(expected)) == set(expected), title
        for label, value in expected.items():
            wrong = {t: v for t, v in lines[title][label].items() if not close(v, value)}
            assert not wrong, (title, label, value, wrong)


@pytest.mark.parametrize("surge", [(1500, 1560), (1500, 2100)], ids=["a minute", "ten minutes"])
def test_on_classic_a_pods_totals_read_the_surges_scrapes_as_the_header_says(tmp_path, surge):
    fleet, project, files, lines, extra = _drawn(tmp_path, "classic", surge)
    said = notes(header(files, PAGE))
    for title in TOTALS:
        assert any(SURGE in note and "(n + m) / n" in note for note in said.get(title, ())), (title, said.get(title))
        expected = _truth(project, files, title, fleet)
        n = PERIOD // STEP
        for label, value in expected.items():
            for start, shown in lines[title][label].items():
                m = extra.get(start, 0)
                assert close(shown, value * (n + m) / n), (title, label, start, shown, value, m)
    assert extra == ({1500: 2} if surge[1] == 1560 else {1500: 10, 1800: 10})  # 1.2 and twice the truth


def test_a_counters_widgets_count_a_long_surge_twice_on_both_pipelines_as_their_headers_say(tmp_path):
    for pipeline in ("otel", "classic"):
        (tmp_path / pipeline).mkdir()
        fleet, project, files, lines, _ = _drawn(tmp_path / pipeline, pipeline, (1500, 2100))
        for title, dashboard in COUNTERS.items():
            if pipeline == "classic" and dashboard == "health":
                continue  # per GPU instance and per pod's copy on the JSON path (lint AL013/CW016)
            page = f"cloudwatch/dashboards/gpudash-gpu-cluster-{dashboard}.json"
            said = notes(header(files, page)).get(title, ())
            assert any("count twice" in note and "surge" in note for note in said), (pipeline, title)
            expected = _truth(project, files, title, fleet, page)
            for label, value in expected.items():
                shown = lines[title][label]
                assert close(shown[1800], 2 * value), (pipeline, title, label, shown[1800], value)  # both whole
                assert all(close(shown[t], value) for t in (900, 1200, 2400, 2700)), (pipeline, title, label, shown)


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_users_sums_per_node_read_the_truth_on_otel_and_the_surges_scrapes_on_classic(tmp_path, pipeline):
    """A framebuffer or power total per node on the OTel pipeline reads the node's totals per scrape, which the agent
    makes from each scrape of the node's exporter (each GPU once, held by a pod or not), as their mean: both
    exporter pods' scrapes hold the node whole, so the surge reads the truth (before, a per-scrape form over each
    GPU's readings read 174,000 MiB for 87,000 at a 10-minute overlap). On classic nothing makes a total per
    scrape: a node scraped by both pods reads their scrapes added, (n + m) / n, as its header says (classic reads a
    MIG GPU's power once per instance: held to its own value before the surge)."""
    fleet, _, files, lines, extra = _drawn(tmp_path, pipeline, (1500, 2100), dashboards={"sums.py": NODE_SUMS})
    said = notes(header(files, SUMS_PAGE))
    n = PERIOD // STEP
    for title, field in (("Framebuffer used per node", "fb_used"), ("Power draw per node", "power"),
                         ("GPUs per node", "count")):
        surge_said = any(SURGE in note and "(n + m) / n" in note for note in said.get(title, ()))
        assert surge_said == (pipeline == "classic"), (title, said.get(title))
        for node in fleet:
            value = sum(getattr(i, field) for g in node.gpus for i in g.instances) if field == "fb_used" else \
                sum(g.power for g in node.gpus) if field == "power" else len(node.gpus)
            shown = lines[title][node.name]
            if pipeline == "classic":
                value = shown[1200]
                assert all(close(v, value * (n + extra.get(t, 0)) / n) for t, v in shown.items()), (title, shown)
            else:
                assert shown and all(close(v, value) for v in shown.values()), (title, node.name, value, shown)


@pytest.mark.parametrize("seed, shared", [(1, True), (4, True), (2, "per-process"), (7, "per-process")])
def test_a_users_totals_per_node_read_the_truth_of_shared_fleets_through_a_surge_and_a_failed_scrape(tmp_path, seed,
                                                                                                      shared):
    """OTel pipeline, fleets with KUBERNETES_VIRTUAL_GPUS (GPUs and MIG instances pods share; per-process exporters):
    a 10-minute surge on every node and one failed scrape of the second node; a node's power, its GPUs and its engine
    activity (a MIG GPU's instances averaged) read the truth at every period (before, the surge's periods read twice
    them and the failed scrape's 0.9)."""
    fleet, _, _, lines, _ = _drawn(tmp_path, "otel", (1500, 2100), dashboards={"sums.py": NODE_SUMS},
                                   fleet=random_fleet.fleet(seed, True, per_process=shared == "per-process"),
                                   failed=(900, 1))
    for node in fleet:
        truths = {"Power draw per node": sum(g.power for g in node.gpus), "GPUs per node": len(node.gpus),
                  "Engine activity per node": sum(mean(i.engine for i in g.instances) for g in node.gpus)}
        for title, value in truths.items():
            shown = lines[title][node.name]
            assert len(shown) == END // PERIOD and all(close(v, value) for v in shown.values()), (title, node.name,
                                                                                                 value, shown)


BLANK_HELD = "node and fleet lines hold the GPUs that have a reading"  # the header's paragraph on DCGM's blank


@pytest.mark.parametrize("seed", [2, 7])
def test_a_users_framebuffer_per_node_holds_the_gpus_with_a_reading_where_a_gpus_own_series_is_blank(tmp_path, seed):
    """Per-process exporters (dcgm-exporter 4.5.3, KUBERNETES_VIRTUAL_GPUS): a GPU (MIG instance) pods hold whose own
    framebuffer series reads DCGM's blank has no reading of its framebuffer, whatever its pods' shares read (they are
    the processes' memory, not the device's: what the driver and contexts hold is in no share). Decided in b80b9ba8 (a
    case left unpinned before, 48,000 MiB read of 81,000 by every instance's facts): a node's total holds the GPUs with
    a reading, at every period through a 10-minute surge and a failed scrape, as Grafana's sum and the rules do
    (mixed_fleet.reads_own), and the dashboard's header says so; a node none of whose GPUs has a reading draws no
    line. Adding the pods' shares instead would read a number no GPU reported as the node's."""
    fleet, _, files, lines, _ = _drawn(tmp_path, "otel", (1500, 2100), dashboards={"sums.py": NODE_SUMS},
                                       fleet=random_fleet.fleet(seed, True, per_process=True), failed=(900, 1))
    assert BLANK_HELD in header(files, SUMS_PAGE)
    title, blanks = "Framebuffer used per node", 0
    for node in fleet:
        read = [i for g in node.gpus for i in g.instances if mixed_fleet.reads_own(node, i, "DCGM_FI_DEV_FB_USED")]
        blanks += sum(len(g.instances) for g in node.gpus) - len(read)
        shown = lines[title].get(node.name, {})
        if not read:
            assert not shown, (node.name, shown)
            continue
        value = sum(i.fb_used for i in read)
        assert len(shown) == END // PERIOD and all(close(v, value) for v in shown.values()), (node.name, value, shown)
    assert blanks  # the seed holds instances whose own series is blank

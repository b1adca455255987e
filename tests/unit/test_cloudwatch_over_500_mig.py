"""A cluster of more than 500 MIG or shared GPUs: "GPUs reporting" and "Total power draw" count GPUs, not copies.

dcgm-exporter repeats a MIG GPU's device fields (temperature, power draw) on each of its GPU instances
(tests/support/mixed_fleet.py: "device fields repeat on every instance"), and a GPU shared by time-slicing once per pod
holding it. Up to 500 GPUs the overview's values combine one series per GPU ([ClusterName, node, gpu]: the copies are
one series), so a GPU counts once. Past 500 they read every reading of the cluster (0fd192d): on the OTel pipeline a
GPU's reading once per scrape, its copies merged at the agent by UUID ([ClusterName, readings]); seen on main ddc22e6
(the per-cluster field, [ClusterName]) each copy was a reading, so a GPU split in two counted and added twice. The
truth does not change at 500: each GPU reports once, drawing 200 W."""

from __future__ import annotations

import json

import pytest

from tests.support import built, cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header, notes
from tests.support.dcgm_fleet import exporter_targets
from tests.unit.test_cloudwatch_fleet_over_500 import AGENT_FILE, OVERVIEW, PER_NODE

END, WATTS, INSTANCES = 3600, 200.0, 2  # each GPU split in two 3g.20gb instances
SHOWN = ("GPUs reporting", "Total power draw")


def _mig_page(gpus: range, node: int) -> str:
    """Node `node`'s GPUs `gpus`, each split in INSTANCES instances that repeat its temperature and power."""
    lines = []
    for name, value in (("DCGM_FI_DEV_GPU_TEMP", 50.0), ("DCGM_FI_DEV_POWER_USAGE", WATTS)):
        lines.append(f"# TYPE {name} gauge")
        lines += [f'{name}{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A100-SXM4-40GB",'
                  f'Hostname="n{node}",GPU_I_PROFILE="3g.20gb",GPU_I_ID="{1 + i}"}} {value}'
                  for g in gpus for i in range(INSTANCES)]
    return "\n".join(lines) + "\n"


SHARING = 3  # pods sharing each GPU by time-slicing


def _shared_page(gpus: range, node: int) -> str:
    """Node `node`'s GPUs `gpus`, each shared by SHARING pods (one series per pod, each the GPU's reading); the last
    GPU of the node held by no pod (one series without pod labels)."""
    lines = []
    for name, value in (("DCGM_FI_DEV_GPU_TEMP", 50.0), ("DCGM_FI_DEV_POWER_USAGE", WATTS)):
        lines.append(f"# TYPE {name} gauge")
        for g in gpus:
            pods = [""] if g == gpus[-1] else [f',namespace="ml",pod="job-{node}-{g}-{p}",container="main"'
                                                 for p in range(SHARING)]
            lines += [f'{name}{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A10G",'
                      f'Hostname="n{node}"{pod}}} {value}' for pod in pods]
    return "\n".join(lines) + "\n"


def _values(tmp_path, gpus: int, page=_mig_page, pipeline: str = "otel", surged: int = 0) -> dict[str, float]:
    """The overview's two values now over `gpus` GPUs (nodes of PER_NODE, the last one holding the rest); the first
    `surged` nodes' exporter pods being replaced with a surge (the new pod scraped beside the old one, 7 s later)."""
    files = built.files(f"agent: {{pipeline: {pipeline}}}\n")
    config, job = agent_config(files[AGENT_FILE])
    body = json.loads(json.loads(files[OVERVIEW])["DashboardBody"])
    widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
    # the scrapes of the range the two widgets read (their own -PT4M, the last 4 minutes): a gauge's reading is
    # published per scrape, so a scrape before it changes nothing they show
    first = min(cloudwatch_eval.widget_range(widgets[title], END - 6 * 3600, END)[0] for title in SHOWN)
    nodes = -(-gpus // PER_NODE)
    targets = exporter_targets(job, nodes)
    new = exporter_targets(job, surged, 2, "nvidia-dcgm-exporter-new")
    held = {n: range(min(PER_NODE, gpus - n * PER_NODE)) for n in range(nodes)}
    times = range(int(first), END, 30)
    points = Agent(config, job, only=cloudwatch_eval.reads(*(widgets[title] for title in SHOWN))).run(sorted(
        [Scrape(float(t), page(held[n], n), targets[n]) for t in times for n in range(nodes)]
        + [Scrape(float(t) + 7, page(held[n], n), new[n]) for t in times for n in new],
        key=lambda scrape: scrape.timestamp))
    shown = {}
    for title in SHOWN:
        (line,) = cloudwatch_eval.widget(widgets[title], points, END - 6 * 3600, END, now=END).values()
        shown[title] = line[max(line)]
    return shown


def test_up_to_500_mig_gpus_each_gpu_counts_once(tmp_path):
    """The control: 496 GPUs (62 nodes of 8), each split in two."""
    assert _values(tmp_path, 496) == {"GPUs reporting": 496, "Total power draw": 496 * WATTS}


def test_past_500_mig_gpus_each_gpu_counts_once(tmp_path):
    """504 GPUs (63 nodes of 8), each split in two. Seen on main 8f6b17e: 1,008 GPUs reporting, 201,600 W."""
    assert _values(tmp_path, 504) == {"GPUs reporting": 504, "Total power draw": 504 * WATTS}


@pytest.mark.parametrize("gpus", [497, 498, 499, 501])
def test_at_500_mig_gpus_the_value_does_not_jump(tmp_path, gpus):
    """Either side of the query's 498 series (METRIC_COUNT(q1) < 498 picks the form), each split in two: each GPU
    counts once. Seen on main ddc22e6: 499 read 499, 500 read 1,000 and 501 read 1,002 (100,200 W for 50,100 W)."""
    assert _values(tmp_path, gpus) == {"GPUs reporting": gpus, "Total power draw": gpus * WATTS}


def test_past_500_time_sliced_gpus_each_gpu_counts_once(tmp_path):
    """504 GPUs on 63 nodes, 7 of each node shared by three pods, the eighth held by none: each GPU counts once and
    adds its power once. Seen on main ddc22e6: 1,386 GPUs reporting (each shared GPU three times), 277,200 W."""
    assert _values(tmp_path, 504, _shared_page) == {"GPUs reporting": 504, "Total power draw": 504 * WATTS}


def test_on_classic_past_500_the_copies_still_count_and_the_header_says_so(tmp_path):
    """agent.pipeline: classic publishes each scraped series as it is: nothing merges a GPU's copies, so past 500 a
    MIG GPU split in two counts twice, as the dashboard's header says (the OTel pipeline is the way out)."""
    assert _values(tmp_path, 504, pipeline="classic") == {"GPUs reporting": 1008, "Total power draw": 1008 * WATTS}
    files = built.files("agent: {pipeline: classic}\n")
    (note,) = [n for n in notes(header(files, OVERVIEW))["GPUs reporting"] if "from 49" in n]
    assert "a GPU read more than once per scrape counts once per copy (the exporter repeats its reading once per " \
           "MIG instance or per pod sharing it" in note, note


def test_past_500_gpus_an_exporter_surge_counts_each_gpu_once(tmp_path):
    """504 MIG GPUs on 63 nodes, 10 nodes' exporter pods being replaced with a surge (old and new pod both scraped):
    504 GPUs and 100,800 W are true. Read from the readings per cluster (main 09184ff3, a strict xfail): 584 GPUs and
    116,800 W, the 80 surged GPUs twice (two targets: the agent merges a GPU's copies within one scrape of one
    target). Per node, the two pods' points are two of one node's count and total: a node's most GPUs at one scrape,
    its total a mean over its scrapes."""
    assert _values(tmp_path, 504, surged=10) == {"GPUs reporting": 504, "Total power draw": 504 * WATTS}

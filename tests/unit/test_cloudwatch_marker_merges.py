"""A staleness marker never decides a merge the agent makes (agent.pipeline: otel).

aggregateutil (the metricstransform processor's aggregate_labels and combine) merges each group of points into its
first point, and a first point without value (the receiver's staleness marker: a series the scrape no longer has)
stays a marker whatever else the group holds; awsemf drops it. It writes its groups in Go's map order
(mergeNumberDataPoints ranges over a map), so a merge of merged points takes a marker first or not at random. A pod
holding a GPU of its own and one its exporter names in turn under the pods sharing it (no KUBERNETES_VIRTUAL_GPUS)
has the shared GPU's series end with a marker at every other scrape: its total over its GPUs (each GPU's copies
merged first, then added) was published at half such scrapes, at random, so "Power draw of each pod's GPUs" read
about 367 W where the header says 350 (300 W of its own, a shared 100 W named every other scrape), another value at
each period. The agent model (tests/support/cloudwatch_otel.py) refuses such a merge (MapOrderDependent) instead of
taking the receiver's order; the pipeline drops the exporter's markers before any merge (filter/gpudash-markers,
render/agent_otel.STALE_MARKER), so the pod's total is its own GPU's at the scrapes not naming it on the shared one:
the 350 W the header says (NAMED_PART).
"""

from __future__ import annotations

import copy

import pytest

from generator.cloudwatch_query import NAMED_PART
from generator.render.cloudwatch import panel_title
from tests.support import cloudwatch_eval
from tests.support.agent_points import AGENT_FILE, scrapes
from tests.support.built import files as built_files
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.cloudwatch_otel import MapOrderDependent
from tests.support.cloudwatch_widgets import header, notes, widgets
from tests.support.mixed_fleet import Gpu, Instance, Node

STEP, END, PERIOD = 30, 1800, 300
OWN, OTHER = ("team-o", "own-0"), ("team-o", "other-0")


def _gpu(index: int, pods: tuple, power: float) -> Gpu:
    return Gpu(index, temp=50, power=power, sm_clock=1500, xid=0, energy_mw=100_000, replays_per_s=0, memory_temp=50,
               util=40, instances=(Instance(pod=pods[0], fb_used=1000, fb_free=23000, engine=0.4, also=pods[1:]),))


# own-0 holds GPU 0 (300 W) and shares GPU 1 (100 W) with other-0; the exporter names GPU 1 under own-0 at even
# scrapes and under other-0 at odd ones (NAMED_PART's example)
NODE = Node("gpu-node-o", "hostname", "nvidia-dcgm-exporter-o0o0o",
            (_gpu(0, (OWN,), 300), _gpu(1, (OWN, OTHER), 100)), moves=1)


def _widget(files, title: str) -> dict:
    (properties,) = [p for path, p in widgets(files) if panel_title(p["title"]) == title]
    return properties


def _points(files, config=None):
    built, job = agent_config(files[AGENT_FILE])
    return Agent(config or built, job).run(scrapes(job, STEP, END, (NODE,)))


def test_a_pods_total_beside_a_gpu_named_in_turn_reads_what_the_header_says():
    files = built_files("{}\n")
    shown = cloudwatch_eval.widget(_widget(files, "Power draw of each pod's GPUs"), _points(files), 0, END)
    # own-0: 300 + 100 at even scrapes, 300 at odd ones: 350 W in every period; other-0: 100 W at the scrapes naming it
    assert shown == {"Pod team-o/own-0": {t: pytest.approx(350) for t in range(0, END, PERIOD)},
                     "Pod team-o/other-0": {t: pytest.approx(100) for t in range(0, END, PERIOD)}}
    said = notes(header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"))
    assert NAMED_PART in said["Power draw of each pod's GPUs"]


def test_without_the_marker_filter_the_agent_would_merge_by_chance():
    """The same story with filter/gpudash-markers left out of the pipeline: the pod's total at a scrape ending the
    shared GPU's series under own-0 merges a marker and a reading in Go's map order, which the model refuses."""
    files = built_files("{}\n")
    config, _ = agent_config(files[AGENT_FILE])
    assert "filter/gpudash-markers" in config["processors"]
    config = copy.deepcopy(config)
    (pipeline,) = config["service"]["pipelines"].values()
    pipeline["processors"].remove("filter/gpudash-markers")
    with pytest.raises(MapOrderDependent, match=r"gpudash\.pod\.sum\.DCGM_FI_DEV_POWER_USAGE"):
        _points(files, config)

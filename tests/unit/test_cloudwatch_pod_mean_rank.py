"""A per-pod chart of a mean past cloudwatch.top_pods draws the pods its title says: "the N pods that read highest:
past N, the least busy are not drawn".

Each line of such a chart is the pod's mean over its GPUs (AVG over the per-pod set, every GPU's reading an
observation of the pod's one series). Its ORDER BY MAX() ranked the pods by the highest observation in the range:
one GPU's reading, not the pod's. A pod holding a GPU at 90 % beside one at 0 % reads 45 % all along and outranked a
pod steadily at 60 % or 50 %: with top_pods 2 the chart drew the 45 % pod and left out the 50 % one, a busier pod
than one it drew, though its title says the least busy are left out. A chart of how busy GPUs are now ranks by
ORDER BY AVG(), the mean of the line's readings over the range, on both pipelines, and its header says so.

The fleet's payloads go through the agent model of each build's own configuration, the widget is read as CloudWatch
reads it (tests/support/cloudwatch_eval.py).
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import AGENT_FILE
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header, kept
from tests.support.dcgm_fleet import target_labels
from tests.support.projects import defined_project

STEP, END = 30, 1800
TOP = "cloudwatch:\n  top_pods: 2\n"
PIPELINES = {"otel": "", "classic": "agent:\n  pipeline: classic\n"}
TITLE = "GPU utilization by pod"


def _gpu(index: int, util: float, pod: tuple[str, str]) -> mixed_fleet.Gpu:
    return mixed_fleet.Gpu(index, temp=50, power=200, sm_clock=1500, xid=0, energy_mw=200_000, replays_per_s=0,
                           memory_temp=50, util=util, instances=(mixed_fleet.Instance(
                               fb_used=9000, fb_free=15000, engine=util / 100, pod=pod),))


# a pod of two GPUs, one busy and one idle (45 % its mean), and two pods of one GPU, steadily at 60 % and 50 %
FLEET = (mixed_fleet.Node("ip-10-0-1-1", "Hostname", "nvidia-dcgm-exporter-a1b2c",
                          (_gpu(0, 90, ("ml", "two-gpus")), _gpu(1, 0, ("ml", "two-gpus")))),
         mixed_fleet.Node("ip-10-0-1-2", "Hostname", "nvidia-dcgm-exporter-d3e4f", (_gpu(0, 60, ("ml", "sixty")),)),
         mixed_fleet.Node("ip-10-0-1-3", "hostname", "nvidia-dcgm-exporter-g5h6i", (_gpu(0, 50, ("web", "fifty")),)))
MEANS = {"Pod ml/two-gpus": 45.0, "Pod ml/sixty": 60.0, "Pod web/fifty": 50.0}
# what the header adds where DCGM's blank is published (agent.pipeline: classic): it ranks a line first
BLANK_FIRST = {"otel": "", "classic": ", and a pod with a reading of DCGM's blank in the time range ranks first, "
                                      "whatever it read else"}


def _files(tmp_path, pipeline: str) -> dict:
    return encode(build(defined_project(tmp_path, PIPELINES[pipeline] + TOP), grafana=False))


def _drawn(tmp_path, pipeline: str) -> dict[str, set[float]]:
    """{line: the values of its periods} of the chart, the fleet's 30 minutes through the build's agent model."""
    return _read(_files(tmp_path, pipeline), TITLE)


def _read(files: dict, title: str) -> dict[str, set[float]]:
    """{line: the values of its periods} of the build's chart `title` (cut at top_pods 2), the fleet's 30 minutes
    through the build's agent model."""
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(k * STEP, mixed_fleet.payload(node, k * STEP, STEP),
                                            target_labels(job, node.name))
                                     for k in range(-2, END // STEP) for node in FLEET])
    (properties,) = [w["properties"] for path, data in sorted(files.items())
                     if path.startswith("cloudwatch/dashboards/")
                     for w in json.loads(json.loads(data)["DashboardBody"])["widgets"]
                     if w["type"] == "metric" and w["properties"]["title"].startswith(title + " (")]
    assert "the 2 pods that read highest: past 2, the least busy are not drawn" in properties["title"]
    return {label: set(series.values()) for label, series in
            cloudwatch_eval.widget(properties, points, 0, END).items() if series}


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_each_line_drawn_is_its_pods_mean(tmp_path, pipeline):
    """What the chart draws is right line by line: each pod drawn reads its mean over its GPUs at every period."""
    drawn = _drawn(tmp_path, pipeline)
    assert len(drawn) == 2
    assert all(values == {MEANS[label]} for label, values in drawn.items()), drawn


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_the_header_says_the_pods_rank_by_their_mean(tmp_path, pipeline):
    """The by-pod dashboard's header says which pods a chart of how busy they are keeps: those of the highest mean of
    their GPUs' readings over the range (it said: of the highest reading of one of their GPUs). Other mean charts rank
    by one of their GPUs and say so."""
    said = kept(header(_files(tmp_path, pipeline), "cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"))
    assert said[TITLE] == ("at most 2 pods (cloudwatch.top_pods), those of the highest mean of their GPUs' readings in "
                           "the time range shown (an idle pod ranks last, and one busy for a moment below one busy all "
                           f"along{BLANK_FIRST[pipeline]})"), said[TITLE]
    assert "one whose mean is lower" in said["SM clock by pod"]
    # a pod's total per scrape (the OTel pipeline's) ranks by itself; classic's sum of its GPUs' readings by one of them
    assert ("of one of their GPUs" in said["Power draw of each pod's GPUs"]) == (pipeline == "classic")


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_the_pods_drawn_are_the_busiest(tmp_path, pipeline):
    """The title's words: past 2, the least busy are not drawn (ranked by one GPU's reading: two-gpus, 45 %, was drawn
    and fifty, 50 %, left out)."""
    assert set(_drawn(tmp_path, pipeline)) == {"Pod ml/sixty", "Pod web/fifty"}


# A chart of one line per GPU a pod holds, and charts of a mean per namespace and per node
PER_GPU = "GPU utilization by pod GPU"
RANKS = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
         "    yield Dashboard(id='ranks', title='Ranks', rows=[Row('ranks', [\n"
         f"        Panel({PER_GPU!r}, Query('DCGM_FI_DEV_GPU_UTIL', 'avg', ('pod', 'gpu'))),\n"
         "        Panel('GPU utilization by namespace', Query('DCGM_FI_DEV_GPU_UTIL', 'avg', ('namespace',))),\n"
         "        Panel('GPU utilization by node', Query('DCGM_FI_DEV_GPU_UTIL', 'avg', ('node',))),\n"
         "    ])])\n")


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_a_line_per_gpu_of_a_pod_ranks_by_its_own_reading(tmp_path, pipeline):
    """A line per GPU a pod holds is that GPU's reading, not a mean over GPUs: its rank is its own mean, and the header
    says so. Cut at 2, it draws the GPUs at 90 % and 60 %, leaving 50 % and 0 % out. A line per namespace or node is a
    mean over its GPUs, ranked by the mean of their readings, said in its own words."""
    files = encode(build(defined_project(tmp_path, PIPELINES[pipeline] + TOP, dashboards=RANKS), grafana=False))
    said = kept(header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-ranks.json"))
    assert said[PER_GPU] == ("at most 2 pods (cloudwatch.top_pods), those of the highest mean in the time range shown "
                             f"(an idle pod ranks last, and one busy for a moment below one busy all along"
                             f"{BLANK_FIRST[pipeline]})"), said[PER_GPU]
    assert _read(files, PER_GPU) == {"ml two-gpus 0": {90.0}, "ml sixty 0": {60.0}}
    for what in ("namespace", "node"):
        assert said[f"GPU utilization by {what}"] == (
            f"at most 50 {what}s (cloudwatch.top_gpus), those of the highest mean of their GPUs' readings in the time "
            f"range shown (an idle {what} ranks last, and one busy for a moment below one busy all along"
            f"{BLANK_FIRST[pipeline].replace('pod', what)})"), \
            said[f"GPU utilization by {what}"]


def test_the_addons_lines_per_namespace_and_node_are_named_so(tmp_path):
    """On the Container Insights add-on a line per namespace or node is named so in the chart's title and header, not
    "GPUs" (its dimensions are Namespace and NodeName), and said to rank by its GPUs' readings' mean; a line per GPU a
    pod holds (GpuDevice) by its own."""
    files = encode(build(defined_project(tmp_path, "cloudwatch:\n  source: container-insights\n  top_pods: 2\n",
                                         dashboards=RANKS), grafana=False))
    said = kept(header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-ranks.json"))
    assert said[PER_GPU].startswith("at most 2 pods (cloudwatch.top_pods), those of the highest mean in "), \
        said[PER_GPU]
    for what in ("namespace", "node"):
        assert said[f"GPU utilization by {what}"].startswith(
            f"at most 50 {what}s (cloudwatch.top_gpus), those of the highest mean of their GPUs' readings in the time "
            f"range shown"), said[f"GPU utilization by {what}"]


# an idle pod whose GPU reads DCGM's blank for its utilization at one scrape of the 30 minutes (a device that could not
# be read once), beside the pods above
IDLE = mixed_fleet.Node("ip-10-0-1-4", "hostname", "nvidia-dcgm-exporter-j7k8l", (_gpu(0, 0, ("ml", "idle")),))
BLANK_AT = 20  # the scrape (of 60) whose reading is DCGM's blank


def _idle_payload(t: int) -> str:
    text = mixed_fleet.payload(IDLE, t, STEP)
    if t != BLANK_AT * STEP:
        return text
    return "\n".join(line.rsplit(" ", 1)[0] + " " + mixed_fleet.INT64_BLANK
                     if line.startswith("DCGM_FI_DEV_GPU_UTIL{") else line for line in text.split("\n"))


@pytest.mark.parametrize("pipeline", ["otel", pytest.param("classic", marks=pytest.mark.xfail(
    strict=True, raises=AssertionError, reason=(
        "agent.pipeline: classic publishes DCGM's blank (about 9.2e18), and a chart ranked by its lines' mean over "
        "the range ranks a GPU whose field read the blank once above every reading (9.2e18 over 60 scrapes is still "
        "about 1.5e17): an idle pod takes a place and the busiest pod past top_pods is left out, though the title "
        "says the least busy are not drawn. Metrics Insights ranks and filters series by statistics of their values "
        "and by dimensions, never by dropping a value, and the agent's JSON path keeps every value its declarations' "
        "labels match (the header says it: test_the_header_says_the_pods_rank_by_their_mean)")))])
def test_a_blank_reading_does_not_rank_an_idle_pod_first(tmp_path, pipeline):
    """Past 2, the idle pod is not drawn for a blank at one of its 60 scrapes: the pods drawn are sixty and fifty."""
    files = _files(tmp_path, pipeline)
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(k * STEP, mixed_fleet.payload(node, k * STEP, STEP), target_labels(job, node.name))
               for k in range(-2, END // STEP) for node in FLEET]
    scrapes += [Scrape(k * STEP, _idle_payload(k * STEP), target_labels(job, IDLE.name)) for k in range(-2, END // STEP)]
    points = Agent(config, job).run(sorted(scrapes, key=lambda s: s.timestamp))
    (properties,) = [w["properties"] for path, data in sorted(files.items())
                     if path.startswith("cloudwatch/dashboards/")
                     for w in json.loads(json.loads(data)["DashboardBody"])["widgets"]
                     if w["type"] == "metric" and w["properties"]["title"].startswith(TITLE + " (")]
    drawn = {label for label, series in cloudwatch_eval.widget(properties, points, 0, END).items() if series}
    assert drawn == {"Pod ml/sixty", "Pod web/fifty"}, drawn

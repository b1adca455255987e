"""The GPU stopped reporting rule's CloudWatch alarm (agent.pipeline: otel), judged on the twin's stories.

The agent makes of each scrape of a node's exporter its GPUs unread below its highest index (stopped_gpus.UNREAD: its
highest GPU index read plus one, less the GPUs read), and the alarm judges each node on the least of them in each of
its two 5-minute periods (at least 1: every scrape of the window had a hole). The stories are
tests/integration/test_gpu_stopped_reporting.py's (30 s scrapes, each story at minute 30), fed to the agent model
(tests/support/cloudwatch_otel.py, the generated collector configuration) and judged by CloudWatch's documented
semantics (tests/support/cloudwatch_eval.py) at every minute from 26 to 92, against the Prometheus rule's truth there:

- node-a (GPU 2 of four stops) and node-b (GPU 1 of four reads DCGM's blank): the rule from minute 40; the alarm names
  each node from minute 40 too (10 minutes without a reading: every scrape of both periods has the hole).
- node-i (GPU 1 of two stops, the node removed at minute 50): the rule from 40 to 54; the alarm never, GPU 1 being the
  node's highest index (the node reads as one of a GPU fewer): a strict xfail with the rule's truth.
- node-m (GPU 1 of four stops, the node removed at minute 50): the rule from 40 to 54 (node-i's truth); the alarm from
  40 while its last datapoints are in the evaluation range (to 59 with a range of three periods).
- node scaled down, exporter restarted, exporter in a crash loop, MIG instances remade (two minutes without a series
  of the GPU), a pod leaving its GPU, an instance stopped and started on other hardware: neither fires.
Every GPU no pod holds reports all along in these stories (idle GPUs keep their series), and none fires for them.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from generator.stopped_gpus import UNREAD
from tests.integration.test_gpu_stopped_reporting import CHANGE, REMOVED, STEP, STEPS, _gpus, _payload, _truth
from tests.support import cloudwatch_eval
from tests.support.agent_points import AGENT_FILE
from tests.support.alarm_requests import alarm_request
from tests.support.built import files as built_files
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels

RANGE = 3  # the evaluation range's length in periods (unpublished; the twin's test judges with the same)
MINUTES = tuple(range(26, 93))
# the twin's stories the agent's job scrapes (node-e and node-f are scraped by a user's own job, which attaches no
# `node`: no node to judge), and node-m: GPU 1 of four stops at minute 30, the node removed at minute 50
NODES = ("node-a", "node-b", "node-c", "node-d", "node-g", "node-h", "node-i", "node-j", "node-k", "node-m")


def _node_m(k: int) -> str:
    if k >= REMOVED:
        return ""
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for gpu in range(4):
        if gpu == 1 and k >= CHANGE:
            continue
        lines.append(f'DCGM_FI_DEV_GPU_TEMP{{gpu="{gpu}",UUID="GPU-node-m-{gpu}",device="nvidia{gpu}",'
                     f'modelName="NVIDIA A100-SXM4-80GB",Hostname="node-m"}} {40 + gpu}')
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """({minute: the nodes the alarm is in ALARM for}, the alarm's request, the agent's datapoints)."""
    files = built_files("")
    config, job = agent_config(files[AGENT_FILE])
    scrapes = []
    for k in range(STEPS):
        for node in NODES:
            payload = _node_m(k) if node == "node-m" else _payload(node, k) if _gpus(node, k) else ""
            if payload:
                scrapes.append(Scrape(float(k * STEP), payload, target_labels(job, node)))
    points = Agent(config, job).run(scrapes)
    request = alarm_request(files, "gpu-stopped-reporting")
    fired = {minute: {dict(key)["node"] for key, state in
                      cloudwatch_eval.alarm(request, points, minute * 60, evaluation_range=RANGE).items()
                      if state == "ALARM"} for minute in MINUTES}
    return fired, request, points


def test_the_alarm_reads_each_nodes_gpus_unread_below_its_highest_index(judged):
    _, request, points = judged
    (query,) = request["Metrics"]
    assert query["Expression"].startswith(f'SELECT MIN("{UNREAD}") FROM SCHEMA("ContainerInsights/Prometheus", '
                                          f'"ClusterName", "node") WHERE')
    assert query["Expression"].endswith('GROUP BY "node" ORDER BY MIN() DESC') and query["Period"] == 300
    assert (request["ComparisonOperator"], request["Threshold"], request["EvaluationPeriods"],
            request["DatapointsToAlarm"], request["TreatMissingData"]) == \
        ("GreaterThanOrEqualToThreshold", 1.0, 2, 2, "notBreaching")
    unread = {}
    for point in points:
        if point.metric == UNREAD:
            unread.setdefault(point.dims()["node"], set()).add((point.timestamp >= CHANGE * STEP, point.value))
    # a hole of one GPU on node-a and node-b from the story on, none elsewhere (node-i's lost GPU is its highest);
    # the MIG GPU remade (node-g's GPU 0) leaves a hole at the 4 scrapes it has no series
    assert unread["node-a"] == unread["node-b"] == unread["node-m"] == {(False, 0.0), (True, 1.0)}
    assert unread["node-g"] == {(False, 0.0), (True, 0.0), (True, 1.0)}
    assert all(values <= {(False, 0.0), (True, 0.0)} for node, values in unread.items()
               if node not in ("node-a", "node-b", "node-g", "node-m")), unread


def test_the_alarm_names_the_node_of_a_gpu_lost_below_its_highest_index_when_its_twin_fires(judged):
    fired, _, _ = judged
    for minute in MINUTES:
        twin = {lost["node"] for lost in _truth(minute)}
        # node-m's is node-i's story with the GPU below the highest index: the rule's truth is node-i's
        twin |= {"node-m"} if "node-i" in twin else set()
        seen = twin - {"node-i"}
        if 55 <= minute < 60:  # node-m removed at 50: its last datapoints breach while the range holds them
            seen.add("node-m")
        assert fired[minute] == seen, minute
    assert min(m for m in MINUTES if "node-a" in fired[m]) == 40 == min(m for m in MINUTES if _truth(m))


def test_no_other_story_fires(judged):
    """Node scaled down (node-c), exporter restarted (node-d), MIG instances remade (node-g), a pod leaving its GPU
    (node-h), an exporter in a crash loop (node-j), an instance on other hardware (node-k): never."""
    fired, _, _ = judged
    quiet = {"node-c", "node-d", "node-g", "node-h", "node-j", "node-k"}
    assert not any(fired[minute] & quiet for minute in MINUTES)


@pytest.mark.xfail(strict=True, reason="a node's highest-indexed GPU lost leaves no hole below it: the node reads as "
                                       "one of a GPU fewer, and the alarm does not name node-i")
def test_the_alarm_names_the_node_of_a_lost_highest_gpu_as_its_twin(judged):
    fired, _, _ = judged
    assert all("node-i" in fired[minute] for minute in range(40, 55))


def test_agent_pipeline_classic_and_virtual_gpus_make_no_alarm_and_lint_says_why(tmp_path):
    """agent.pipeline: classic has no processor to count a node's GPUs; with exporter.virtual_gpus an idle GPU's series
    end while another of its node is held (a hole no lost GPU made): no CloudWatch alarm, lint AL027 says why."""
    from generator.stopped_gpus import NOT_ON_PIPELINE, NOT_WITH_COPIES, no_cloudwatch

    for text, why in (("agent:\n  pipeline: classic\nthresholds:\n  pcie_replays_per_minute: 0\n", NOT_ON_PIPELINE),
                      ("exporter:\n  virtual_gpus: true\n", NOT_WITH_COPIES)):
        (tmp_path / "gpudash.yaml").write_text(text)
        project = load_project(tmp_path / "gpudash.yaml")
        names = [a["Request"]["AlarmName"] for a in
                 json.loads(encode(build(project, grafana=False))["cloudwatch/alarms.json"])["alarms"]]
        assert not any("stopped-reporting" in name for name in names)
        ((_, message),) = no_cloudwatch(project)
        assert message.endswith(why)


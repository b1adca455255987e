"""A definition's alarm that counts GPUs or adds their readings per node counts and adds each GPU once on CloudWatch.

The bundled alarms compare a GPU's own reading; an alarm in `alarms/` may count or add (`Query(..., "count", ())`,
`Query(..., "sum", ("node",))`), and gpudash renders it on both sides. Its Prometheus twin counts and adds each GPU
once (`max by (cluster, node, gpu)` under the `count` / `sum by (node)`). The CloudWatch alarm read
`SELECT COUNT(...)` / `SUM(...)` over the per-GPU set [ClusterName, node, gpu] with the threshold multiplied by the
scrapes of its period (10 at 30 s), so it counted observations, not GPUs (issue 10: "distinct series for counts"):

* the mixed fleet's MIG node (tests/support/mixed_fleet.FLEET) writes each of its two GPUs' temperature and power
  once per MIG instance: 11 GPUs report 13 series, so "fewer than 12 GPUs report" (true: 11) never alarmed on
  CloudWatch (130 observations against 120), and that node's "GPUs over 700 W" (true: 350 + 150 = 500 W) alarmed (it
  read 1,000 W).

On the OTel pipeline it reads each GPU's reading once per scrape, the copies merged at the agent by the GPU's UUID
([ClusterName, node, gpu, readings]: cloudwatch_query.once_plan); on agent.pipeline: classic, which merges nothing,
its description and lint (AL019) say that a GPU's copies count (tests/unit/test_alarm_copies.py).
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.projects import defined_project

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
STEP, END = 30, 1800
ALARMS = """\
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpus-low", "Few GPUs reporting", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count", ()), "<", {low}),
                severity="warning", description="Fewer than {low} GPUs report.", runbook="Look at the nodes.")
    yield Alarm("node-power", "Node GPU power high",
                Condition(Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("node",)), ">", 700),
                severity="warning", description="A node's GPUs draw over 700 W.", runbook="Look at the node.")
"""


def _files(folder, low: int) -> dict:
    return encode(build(defined_project(folder, alarms=ALARMS.format(low=low))))


def _alarm(files, rule: str) -> dict:
    (found,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if a["Request"]["AlarmName"] == f"gpudash-gpu-cluster-{rule}-warning"]
    return found


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    files = _files(tmp_path_factory.mktemp("mixed"), low=len([g for n in mixed_fleet.FLEET for g in n.gpus]) + 1)
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(k * STEP, mixed_fleet.payload(node, k * STEP, STEP), target_labels(job, node.name))
               for k in range(-2, END // STEP) for node in mixed_fleet.FLEET]
    return files, Agent(config, job).run(scrapes)


def test_the_fleet_facts():
    gpus = [(n.name, g.index) for n in mixed_fleet.FLEET for g in n.gpus]
    assert len(gpus) == 11  # 11 GPUs, two of them split into two MIG instances each
    (mig,) = [n for n in mixed_fleet.FLEET if n.name == "gpu-node-mig"]
    assert sum(g.power for g in mig.gpus) == 500


def test_fewer_gpus_than_the_threshold_alarm(mixed):
    files, points = mixed
    assert cloudwatch_eval.alarm(_alarm(files, "gpus-low"), points, END) == {(): "ALARM"}  # 11 < 12


def test_a_node_under_the_threshold_is_ok(mixed):
    files, points = mixed
    states = cloudwatch_eval.alarm(_alarm(files, "node-power"), points, END)
    assert states[(("node", "gpu-node-mig"),)] == "OK"


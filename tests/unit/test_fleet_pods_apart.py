"""A per-pod or per-GPU alarm of `scope="fleet"` (one alarm per Region, every pod or GPU of its clusters a contributor)
keeps the pods of one namespace and name, and the GPUs of one node name and index, of two clusters apart.

A Region holds 200 Metrics Insights alarms by default: a team watching many clusters writes its per-pod rules with
`scope="fleet"`, one GROUP BY alarm per Region instead of one per cluster. A pod is named by its cluster, namespace
and name (issue 10: "per-pod views identify a pod by namespace and name"; across clusters `ml/infer-1` is two
pods), so the fleet alarm groups by the cluster too, over every cluster of the Region:

    SELECT AVG("DCGM_FI_DEV_GPU_UTIL") FROM SCHEMA(..., "ClusterName", "namespace", "pod", "share")
    GROUP BY "ClusterName", "namespace", "pod"

(it grouped by namespace and pod alone, and its Prometheus twin summed `by (namespace, pod)` across clusters: see
tests/integration/test_fleet_scope_twins.py). Two clusters of one Region run the crafted fleet
(tests/support/dcgm_fleet.FLEET); `ml/infer-1` idles at 2 % in cluster `a` for the whole half hour and works at 90 %
in cluster `b`. Cluster a's pod is idle: the alarm holds a contributor in ALARM; merged with b's, the contributor
`ml/infer-1` read 54 % unused, under the 95 %, and was OK.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support import cloudwatch_eval, dcgm_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import STEP, target_labels
from tests.support.payload_edits import busy_payload, hot_payload
from tests.support.projects import defined_project

END = 2100
SETTINGS = """\
clusters:
  - {name: a, region: us-east-1, prometheus_label: a}
  - {name: b, region: us-east-1, prometheus_label: b}
"""
ALARMS = """\
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("fleet-idle", "Allocated GPU idle", Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("pod",)), "<", 5),
                severity="warning", evaluation_periods=6, scope="fleet", missing_data="notBreaching",
                description="A pod holds GPUs and used under 5 % of them for 30 minutes.", runbook="Ask its owner.")
    yield Alarm("fleet-warm", "GPU warm", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "min", ("node", "gpu")), ">", 80),
                severity="warning", evaluation_periods=2, scope="fleet",
                description="A GPU read above 80 C at every reading of 10 minutes.", runbook="Check its cooling.")
"""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    project = defined_project(tmp_path_factory.mktemp("fleet"), SETTINGS, alarms=ALARMS)
    files = encode(build(project))
    points = []
    for cluster in ("a", "b"):
        config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{cluster}.yaml"])
        scrapes = [Scrape(s.timestamp, busy_payload(s.payload) if cluster == "b" else hot_payload(s.payload), s.target_labels)
                   for s in dcgm_fleet.scrapes(job, project.catalog, -1, END // STEP - 1)]
        points += Agent(config, job).run(scrapes)
    requests = {a["Request"]["AlarmName"].split("-")[3]: a["Request"]
                for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if a["Request"]["AlarmName"] in ("gpudash-fleet-fleet-idle-warning", "gpudash-fleet-fleet-warm-warning")}
    assert set(requests) == {"idle", "warm"}
    return requests, points


def test_the_story_holds_cluster_a_s_idle_pod_and_b_s_busy_one(fleet):
    _, points = fleet
    utilization = {(p.dims()["ClusterName"], p.value) for p in points if p.metric == "DCGM_FI_DEV_GPU_UTIL"
                   and p.dims().get("pod") == "infer-1" and "share" not in p.dims()}
    assert utilization == {("a", 2.0), ("b", 90.0)}


@pytest.mark.parametrize("rule", ["idle", "warm"])
def test_a_pod_or_gpu_of_one_cluster_alarms_whatever_its_namesake_does_in_another(fleet, rule):
    requests, points = fleet
    states = cloudwatch_eval.alarm(requests[rule], points, END)
    assert {dict(key)["ClusterName"] for key, state in states.items() if state == "ALARM"} == {"a"}, states

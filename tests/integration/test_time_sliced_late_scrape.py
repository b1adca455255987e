"""Time-sliced GPUs read per namespace (and per container) with exporter.virtual_gpus, at a failed scrape right
after a late one: the pods' shares added are those of the pods the latest answered scrape wrote.

One node, its exporter writing each GPU's framebuffer used and utilization as the device's own series (no pod) and one
copy per pod holding it, that pod's own share (dcgm-exporter 4.5.3+ with KUBERNETES_VIRTUAL_GPUS). GPU 0: pods
team-a/p1 (6,000 MiB, 30 %) and team-a/p2 (4,000 MiB, 20 %) until scrape 6; at scrape 7 p2 is gone and team-b/p3
(2,000 MiB, 10 %) came. GPU 1: idle (its own series alone) until scrape 7 wrote team-c/q1 (3,000 MiB, 30 %) and
team-c/q2 (2,500 MiB, 20 %) on it. Scrape 8 failed. Read 15 s after the failed scrape, the truth is scrape 7's: team-a
6,000 MiB and 30 %, team-b 2,000 MiB and 10 %, team-c 5,500 MiB and 50 %, the container `main` 13,500 MiB and 45 % (a
mean over the GPUs). Scrape 7 is taken late (past a step of the scrape interval, tests/support/late_scrape.py) or on
time. Before, a pod's copies were "written by the GPU's latest scrape" and the device's series "written with its
copies" by their latest samples read at the steps of the scrape interval, where the late scrape 7 was seen by no step:
p2 looked as current as p1 (team-a 10,000 MiB and 50 %), p3 and GPU 1's pods had no time at all (team-b not shown;
team-c read as its largest copy, 3,000 MiB and 30 %; the container `main` 40 % for 45 %, and GPU 1's own series, no
pod's, showed as a container without a name, 5,800 MiB). On time, the steps told them apart. "close": scrape 6 late
(181 s) and scrape 7 on time (209 s), within one step: the step whose interval holds a series' latest sample (the
second reading the late tier once used) read p2 as recent as p1 (team-a 10,000 MiB)."""

from __future__ import annotations

import pytest

from generator.model import Query
from generator.preview.interpolate import interpolate, variables
from tests.support.late_scrape import CLOSE_SCRAPES, FAILED, LATE, LATE_SCRAPES, ON_TIME_SCRAPES, late_values
from tests.support.panel_expression import panel_expression
from tests.support.projects import bundled_project
from tests.support.prometheus_server import SCENE_RANGE
from tests.support.promtool_rules import promtool_test

FB, UTIL = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_UTIL"
TARGET = 'instance="n1:9400",job="dcgm"'
# GPU: {pod: (namespace, its own share per field, the scrapes that wrote its copies)}
PODS = {"0": {"p1": ("team-a", {FB: 6000, UTIL: 30}, range(1, LATE + 1)),
              "p2": ("team-a", {FB: 4000, UTIL: 20}, range(1, LATE)),
              "p3": ("team-b", {FB: 2000, UTIL: 10}, range(LATE, LATE + 1))},
        "1": {"q1": ("team-c", {FB: 3000, UTIL: 30}, range(LATE, LATE + 1)),
              "q2": ("team-c", {FB: 2500, UTIL: 20}, range(LATE, LATE + 1))}}
# GPU: the device's own series per field, before scrape 7 and at it
DEVICE = {"0": {FB: (10000, 8000), UTIL: (60, 45)}, "1": {FB: (300, 5800), UTIL: (0, 55)}}


def _series(scrapes: dict[int, int]) -> list[dict[str, str]]:
    series = [{"series": f"up{{{TARGET}}}", "values": late_values(lambda n: 0 if n == FAILED else 1, scrapes)}]
    for gpu, pods in PODS.items():
        device = (f'gpu="{gpu}",UUID="GPU-n1-{gpu}",device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",'
                  f'Hostname="n1",{TARGET}')
        for field in (FB, UTIL):
            before, at = DEVICE[gpu][field]
            series.append({"series": f"{field}{{{device}}}", "values": late_values(
                lambda n, before=before, at=at: None if n == FAILED else before if n < LATE else at, scrapes)})
            for pod, (namespace, share, written) in pods.items():
                series.append({"series": f'{field}{{{device},container="main",namespace="{namespace}",pod="{pod}",'
                                         f'pod_uid="uid-{pod}"}}',
                               "values": late_values(lambda n, value=share[field], written=written:
                                                     value if n in written else None, scrapes)})
    return series


# (field, aggregation, grouping): {the group's label value: the truth at the failed scrape}
CASES = {(FB, "sum", "namespace"): {"team-a": 6000, "team-b": 2000, "team-c": 5500},
         (UTIL, "avg", "namespace"): {"team-a": 30, "team-b": 10, "team-c": 50},
         (FB, "sum", "container"): {"main": 13500},
         (UTIL, "avg", "container"): {"main": 45}}


@pytest.mark.parametrize("scrapes", [LATE_SCRAPES, CLOSE_SCRAPES, ON_TIME_SCRAPES],
                         ids=["late", "close", "on_time"])
def test_a_namespace_adds_the_shares_of_the_pods_the_latest_answered_scrape_wrote(tmp_path, scrapes):
    project = bundled_project("exporter:\n  virtual_gpus: true\n")
    assert project.settings.scrape.seconds == 30
    cases = []
    for (field, how, by), truth in CASES.items():
        expr = interpolate(panel_expression(project, Query(field, how, (by,))),
                           {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu"))})
        cases.append({"expr": expr, "eval_time": f"{scrapes[FAILED] + 15}s",
                      "exp_samples": [{"labels": f'{{{by}="{name}"}}', "value": value}
                                      for name, value in truth.items()]})
    (tmp_path / "rules.yaml").write_text("groups: []\n")
    promtool_test(tmp_path, "late.yaml", [{"interval": "1s", "input_series": _series(scrapes),
                                           "promql_expr_test": cases}])

"""The random fleets of test_cloudwatch_random_fleets.py under settings that change what the agent publishes and what
the widgets and alarms read: each widget and alarm still reads the truth of the fleet's facts.

* alarms.per_pod: static, every pod of the fleet listed (two pods of one name in two namespaces among them): each
  listed pod's alarms (a classic alarm on the pod's metric; for the idle rule a Metrics Insights alarm on the pod,
  each GPU a contributor, and a second on the MIG instances the pod holds) fire for the pods the rules name (a listed
  pod's idle alarm judged its whole GPUs only, and the truth here was the rule's over whole GPUs).
* cloudwatch.dimensions naming the scrape job's Namespace and Service beside the pod, and cloudwatch.gpu_dimensions
  naming UUID beside the GPU: every set derived from them (totals, marks, shares, flags) and every query follow.
* agent.metric_selection: all: the console's extra sets change nothing the widgets and alarms read.
"""

from __future__ import annotations

import pytest

from tests.support import random_fleet
from tests.unit.test_cloudwatch_random_fleets import reads_the_truth


def _static(seed: int, shared) -> str:
    fleet = random_fleet.fleet(seed, bool(shared), per_process=shared == "per-process")
    pods = sorted({pod for node in fleet for gpu in node.gpus for i in gpu.instances for pod in i.pods()})
    assert len({name for _, name in pods}) < len(pods)  # a pod name in two namespaces
    return "alarms:\n  per_pod: static\n  static_pods: [" + ", ".join(f"{ns}/{pod}" for ns, pod in pods) + "]\n"


@pytest.mark.parametrize("seed, pipeline, shared", [(0, "otel", True), (1, "otel", False), (0, "classic", False),
                                                    (1, "otel", "per-process")])
def test_static_per_pod_alarms_of_every_pod(tmp_path, seed, pipeline, shared):
    reads_the_truth(tmp_path, seed, pipeline, shared, _static(seed, shared))


@pytest.mark.parametrize("seed, pipeline, shared", [(1, "otel", False), (0, "otel", True), (1, "classic", False)])
def test_more_dimensions_per_pod_and_per_gpu(tmp_path, seed, pipeline, shared):
    reads_the_truth(tmp_path, seed, pipeline, shared, "cloudwatch:\n  dimensions: [ClusterName, namespace, pod, "
                    "Namespace, Service]\n  gpu_dimensions: [ClusterName, node, gpu, UUID]\n")


@pytest.mark.parametrize("seed, shared", [(3, False), (4, True)])
def test_every_field_published_for_the_console(tmp_path, seed, shared):
    reads_the_truth(tmp_path, seed, "otel", shared, "agent:\n  metric_selection: all\n")

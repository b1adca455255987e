"""A pod holding two MIG instances of one GPU (tests/support/two_instances.py): the generated Prometheus rules grouped
by pod, by (pod, gpu) and by namespace read the truth that module writes down, on promtool over the readings as
Prometheus stores them.

The rules judged each MIG instance a pod holds on its own for every field: a field of the whole device, which the
exporter repeats on each instance, was read once per instance (team-q/dual's power, 300 W on its whole GPU and 200 W
on the A100 two of whose instances it holds: 700 W in all for 500, a mean of 233 W for 250, 400 W on GPU 1 for 200),
and a count counted instances (3 GPUs for 2, 2 on GPU 1 for 1). A field of the instance (framebuffer, engine activity)
was judged per instance where the pod is kept (dual's least framebuffer 1,000 MiB, 3,000 at most on GPU 1) while the
panels and the rules per namespace read a GPU's instances the group holds combined (4,000 MiB on GPU 1): the rules
read the pod's use of each GPU now, as the panels do.
"""

from __future__ import annotations

import pytest

from generator.model import Alarm, Condition, Query
from generator.project import load_project
from generator.promql import expression, label_lookback
from generator.render.alarms import prometheus_expression
from tests.integration.test_mig_twins import built_with
from tests.support import mixed_fleet, two_instances
from tests.support.promtool_rules import promtool_test
from tests.support.two_instances import ENGINE, FB_FREE, FB_USED, POWER, TEMP, UTIL

STEP, STEPS = 30, 30  # fifteen minutes of 30 s scrapes
SHORT = {POWER: "power", TEMP: "temp", UTIL: "util", FB_USED: "fb", FB_FREE: "free", ENGINE: "engine"}
BY = {"pod": ("pod",), "podgpu": ("pod", "gpu"), "ns": ("namespace",)}
# (field, aggregation, grouping) of the rules checked: each field, of the device and of the instance, and every count
# per each grouping
CASES = [(field, aggregation, by) for field in (POWER, TEMP, FB_USED, FB_FREE, ENGINE)
         for aggregation in ("count", "sum", "avg", "max", "min") for by in BY] \
    + [(UTIL, "count", by) for by in BY]


def _id(field: str, aggregation: str, by: str) -> str:
    return f"q-{SHORT[field]}-{aggregation}-{by}"


def _alarm(field: str, aggregation: str, by: str) -> Alarm:
    return Alarm(_id(field, aggregation, by), "T", Condition(Query(field, aggregation, BY[by]), ">", 0),
                 description="d", runbook="r", missing_data="ignore")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    # the rules' expressions are made below (prometheus_expression): CloudWatch refuses some of these alarms
    # (tests/unit/test_pod_two_instances_alarms.py), which would stop the build
    return built_with(tmp_path_factory.mktemp("two-instances"), {}, settings="agent:\n  pipeline: otel\n")


def _series() -> list[dict[str, str]]:
    gauges = tuple(f"{field}{{" for field in mixed_fleet.GAUGES)
    return [{"series": series, "values": " ".join(values)} for node in two_instances.FLEET
            for series, values in mixed_fleet.stored(node, gauges, STEPS, STEP).items()]


def test_the_truth_is_where_reading_each_instance_differs():
    """The pod's GPU counted once differs from each instance counted: the case the rules got wrong."""
    def group(**labels: str) -> tuple:
        return tuple(sorted(labels.items()))
    dual, dual_gpu1 = group(namespace="team-q", pod="dual"), group(namespace="team-q", pod="dual", gpu="1")
    assert two_instances.truth(POWER, "sum", ("pod",))[dual] == 500
    assert two_instances.truth(POWER, "avg", ("pod",))[dual] == 250
    assert two_instances.truth(UTIL, "count", ("pod",))[dual] == 2
    assert two_instances.truth(POWER, "sum", ("pod", "gpu"))[dual_gpu1] == 200
    assert two_instances.truth(UTIL, "count", ("pod", "gpu"))[dual_gpu1] == 1
    assert two_instances.truth(POWER, "sum", ("namespace",))[group(namespace="team-q")] == 500
    assert two_instances.truth(FB_USED, "sum", ("pod",))[dual] == 14000
    assert two_instances.truth(ENGINE, "avg", ("pod",))[dual] == 0.5
    assert two_instances.truth(ENGINE, "max", ("pod", "gpu"))[dual_gpu1] == 0.5  # the mean of 0.25 and 0.75
    assert two_instances.truth(FB_USED, "min", ("pod",))[dual] == 4000  # its GPU 1: 1,000 + 3,000 MiB
    assert two_instances.truth(FB_USED, "max", ("pod", "gpu"))[dual_gpu1] == 4000
    assert two_instances.truth(FB_USED, "min", ("namespace",))[group(namespace="team-q")] == 6000
    assert two_instances.truth(FB_FREE, "min", ("pod",))[dual] == 7000  # instance 2 (3,000 of 10,000 used)
    assert two_instances.truth(FB_FREE, "max", ("pod", "gpu"))[dual_gpu1] == 16000


def test_each_rule_grouped_by_pod_or_namespace_reads_the_truth(built):
    """Each rule's expression (its value where it holds: every group, each value over the threshold of 0) at the
    fifteenth minute equals the truth of each group."""
    _, folder = built
    project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
    checks = []
    for field, aggregation, by in CASES:
        expected = two_instances.truth(field, aggregation, BY[by])
        expr = prometheus_expression(_alarm(field, aggregation, by), project.catalog, project.settings)
        checks.append({"expr": expr, "eval_time": f"{STEPS * STEP // 60 - 1}m",
                       "exp_samples": [{"labels": "{" + ", ".join(f'{k}="{v}"' for k, v in key) + "}", "value": value}
                                       for key, value in sorted(expected.items())]})
    promtool_test(folder, "two_instances.yaml", [{"interval": f"{STEP}s", "input_series": _series(),
                                                   "promql_expr_test": checks}], evaluation_interval=f"{STEP}s")


def test_each_panel_query_reads_the_truth(built):
    """The dashboards' queries of the same fields and counts (each GPU once per group, a field of the instance per GPU,
    the group's instances of it combined), at the fifteenth minute, rate windows aside (gauges)."""
    _, folder = built
    project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
    checks = []
    for field, aggregation, by in CASES:
        if (field, aggregation) == (FB_FREE, "min"):
            continue  # a pod's headroom: the panel shows its total free memory per GPU, the rule each instance's
        expr = expression(Query(field, aggregation, BY[by]), project.settings.labels, project.catalog,
                          resolution=f"{STEP}s", named_within=label_lookback(STEP))
        expected = two_instances.truth(field, aggregation, BY[by])
        checks.append({"expr": expr, "eval_time": f"{STEPS * STEP // 60 - 1}m",
                       "exp_samples": [{"labels": "{" + ", ".join(f'{k}="{v}"' for k, v in key) + "}",
                                        "value": value} for key, value in sorted(expected.items())]})
    promtool_test(folder, "two_instances_panels.yaml", [{"interval": f"{STEP}s", "input_series": _series(),
                                                          "promql_expr_test": checks}], evaluation_interval=f"{STEP}s")

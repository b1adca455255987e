"""A namespace's widgets and alarms on agent.pipeline: otel read its use of each GPU (cloudwatch_query.namespace_plan):
the agent makes, at each scrape, one point per namespace and GPU its pods hold (render/agent_otel.namespace_readings,
namespace_sums), so a GPU split into MIG instances counts, adds and weighs once per namespace, and a field MIG reports
per instance is the namespace's instances of the GPU added (framebuffer) or averaged (engine activity), as the
Prometheus rule and the panels read it (tests/support/two_instances.py writes the truth down).

The fleet here is two_instances' with its third MIG instance held by a pod of a second namespace (team-r), so GPU 1 is
used by two namespaces at once: team-q on GPU 0 (whole) and on two instances of GPU 1, team-r on one instance of GPU 1.
Before, over the per-pod set, team-q counted 3 GPUs for 2, drew 700 W for 500, read its mean framebuffer 4,667 MiB for
7,000 and its engine activity 0.5 + 0.25 + 0.75 = 1.5 for 1.0."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from generator.cloudwatch_query import NAMESPACE_GPU
from generator.artifacts import build
from generator.output import encode
from tests.support import cloudwatch_eval, two_instances
from tests.support.agent_points import alarm_values, through_agent
from tests.support.cloudwatch_widgets import widgets
from tests.support.lint_input import agent_lint
from tests.support.projects import defined_project
from tests.support.two_instances import ENGINE, FB_FREE, FB_USED, POWER, TEMP, UTIL

STEP, END, PERIOD = 30, 900, 300
CASES = [(POWER, "count"), (POWER, "sum"), (POWER, "avg"), (TEMP, "avg"),
         *((field, aggregation) for field in (FB_USED, FB_FREE, ENGINE) for aggregation in ("sum", "avg", "max", "min"))]
# GPU utilization, which MIG does not report: a MIG GPU reads the mean engine activity (x 100) of the instances the
# namespace holds on it, as the rule's MIG branch reads it (team-q: GPU 0 at 50 %, GPU 1 by 0.25 and 0.75: 50 %;
# team-r: GPU 1 by 0.125: 12.5 %). Over the per-pod set team-q had GPU 0 alone (1 GPU, 50 %) and team-r nothing.
UTIL_TRUTH = {"count": {"team-q": 2, "team-r": 1}, "sum": {"team-q": 100, "team-r": 12.5},
              "avg": {"team-q": 50, "team-r": 12.5}, "min": {"team-q": 50, "team-r": 12.5}}
CASES += [(UTIL, aggregation) for aggregation in UTIL_TRUTH]
SHORT = {POWER: "power", TEMP: "temp", FB_USED: "fb", FB_FREE: "free", ENGINE: "engine", UTIL: "util"}


def _fleet():
    (node,) = two_instances.FLEET
    whole, split = node.gpus
    first, second, third = split.instances
    return (replace(node, gpus=(whole, replace(split, instances=(first, second,
                                                                 replace(third, pod=("team-r", "other")))))),)


FLEET = _fleet()


def _name(field: str, aggregation: str) -> str:
    return f"ns-{SHORT[field]}-{aggregation}"


DASHBOARDS = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
              "    panels = [Panel(title, Query(metric, aggregation, ('namespace',)), description='d')\n"
              "              for title, metric, aggregation in " + repr([(_name(*c), *c) for c in CASES]) + "]\n"
              "    yield Dashboard(id='ns', title='Namespaces', rows=[Row('all', panels)])\n")
ALARMS = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm({_name(field, aggregation)!r}, 'T', Condition(Query({field!r}, {aggregation!r}, ('namespace',)), "
    f"'>=', 1), description='d', runbook='r')\n" for field, aggregation in CASES))


def _truth(field: str, aggregation: str) -> dict[str, float]:
    if field == UTIL:
        return UTIL_TRUTH[aggregation]
    return {dict(key)["namespace"]: value for key, value in two_instances.truth(field, aggregation, ("namespace",),
                                                                                 fleet=FLEET).items()}


def test_the_truth_has_two_namespaces_on_one_gpu():
    assert _truth(POWER, "count") == {"team-q": 2, "team-r": 1}
    assert _truth(FB_USED, "avg") == {"team-q": 7000, "team-r": 2000}
    assert _truth(ENGINE, "sum") == {"team-q": 1.0, "team-r": 0.125}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    project = defined_project(tmp_path_factory.mktemp("namespaces"), "agent:\n  pipeline: otel\n",
                              dashboards=DASHBOARDS, alarms=ALARMS)
    files = encode(build(project))
    return project, files, through_agent(files, STEP, END, FLEET)


@pytest.mark.parametrize("case", CASES, ids=[_name(*c) for c in CASES])
def test_each_namespace_widget_reads_the_truth(built, case):
    _, files, points = built
    (properties,) = [p for _, p in widgets(files) if p["title"].startswith(_name(*case))]
    lines = {label: series for label, series in cloudwatch_eval.widget(properties, points, 0, END).items() if series}
    expected = _truth(*case)
    assert {label.split()[-1] for label in lines} == set(expected), lines
    for label, series in lines.items():
        assert list(series.values()) == pytest.approx([expected[label.split()[-1]]] * len(series)), (label, series)


@pytest.mark.parametrize("case", CASES, ids=[_name(*c) for c in CASES])
def test_each_namespace_alarm_reads_the_truth(built, case):
    project, files, points = built
    requests = {a["Request"]["AlarmName"]: a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    (request,) = [r for name, r in requests.items() if f"-{_name(*case)}-" in name]
    assert NAMESPACE_GPU[0] in request["Metrics"][0]["Expression"]
    values = {dict(key)["namespace"]: value for key, value in alarm_values(request, points, END, PERIOD).items()}
    assert values == pytest.approx(_truth(*case))


def test_the_agent_publishes_a_namespaces_use_of_a_gpu_only_where_a_pod_holds_it(built):
    """One point per namespace, GPU and scrape, under the namespace's set: GPU 1 once per namespace using it."""
    _, _, points = built
    held = {(p.dimensions, p.metric) for p in points if NAMESPACE_GPU[0] in p.dims()}
    pairs = {(dict(d)["namespace"], dict(d)["gpu"]) for d, name in held if name == POWER}
    assert pairs == {("team-q", "0"), ("team-q", "1"), ("team-r", "1")}


def _no_namespace_readings(otel):
    """The namespaces' uses of a GPU after the blank filter (a device field's, engine activity's) not made."""
    processor = otel["processors"]["metricstransform/gpudash"]
    processor["transforms"] = [t for t in processor["transforms"]
                               if not any(op.get("new_label") == NAMESPACE_GPU[0] for op in t.get("operations") or [])]


def test_lint_names_a_namespace_set_no_transform_makes(built):
    project, _, _ = built
    assert agent_lint(project, "AG001") == []
    found = agent_lint(project, "AG001", _no_namespace_readings)
    where = "[ClusterName, node, gpu, namespace, namespace_gpu]"
    assert {message.split(" ")[0] for message in found} == {POWER, TEMP, ENGINE, UTIL}
    assert f"{ENGINE} {where} is published under namespace_gpu but no transform of metricstransform/gpudash-pods or " \
           f"metricstransform/gpudash makes it: the widgets and alarms reading it read nothing" in found

"""A CloudWatch widget over groups of GPUs (a node's, the cluster's) of a field MIG reports per instance - framebuffer
used and free (a MIG GPU's value is its instances' sum) and graphics engine activity (their mean) - reads each
physical GPU once on agent.pipeline: otel, as the Grafana panel of the same query does (promql: the instances combined
per GPU by the field's per_gpu_aggregation, then the group's aggregation over GPUs).

Before, the per-GPU set held one series per MIG instance: the mixed fleet's MIG node (two A100s of two instances each)
counted 4 GPUs for 2 and added engine activity to 1.8 for 0.9 (the GPUs' means 0.6 and 0.3), its mean weighed
instances, and a node's largest, smallest or mean framebuffer was refused. The agent now publishes each GPU's reading
once per scrape of such a field too (render/agent_otel.once_per_gpu: a GPU instance's copies by `max`, then the GPU's
instances by the field's sum or mean), read as a device field's is.

On agent.pipeline: classic nothing merges a GPU's instances: each chart is true, or its header says how it differs
(a MIG GPU weighs once per instance), or it is left out with its reason ("On Grafana only"). Values read through the
build's agent model and Metrics Insights' semantics (cloudwatch_widgets.shown_through_agent)."""

from __future__ import annotations

import json
from dataclasses import replace
from statistics import mean

import pytest

from generator import cost
from generator.artifacts import build
from generator.cloudwatch_query import COPIES_COUNTED, MIG_INSTANCES_WEIGH, WEIGHS_PER_SERIES
from generator.errors import InputError
from generator.output import encode
from generator.render.alarms import cloudwatch_alarms
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import SHARED, alarm_values, alarms_through_agent, through_agent
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import (header, latest_values, notes, said, shown_through_agent,
                                              widgets_read)
from tests.support.dcgm_fleet import exporter_targets
from tests.support.projects import defined_project
from tests.unit.test_cloudwatch_fleet_over_500 import AGENT_FILE

STEP, END = 30, 1800
# field: (the instance's fact, the unit, how a GPU's instances make its value)
FIELDS = {"DCGM_FI_DEV_FB_USED": ("fb_used", "mebibyte", sum), "DCGM_FI_DEV_FB_FREE": ("fb_free", "mebibyte", sum),
          "DCGM_FI_PROF_GR_ENGINE_ACTIVE": ("engine", "ratio", mean)}
HOW = {"count": len, "sum": sum, "avg": mean, "max": max, "min": min}
GROUPS = {"node": ("node",), "cluster": ()}
PANELS = {f"{how} {field} per {group}": (field, how, by) for field in FIELDS for how in HOW
          for group, by in GROUPS.items()}
DASHBOARD = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
             "    yield Dashboard(id='instances', title='Instances', rows=[Row('Groups', [\n" + "".join(
                 f"        Panel({title!r}, Query({field!r}, {how!r}, {by!r}), "
                 f"unit={'count' if how == 'count' else FIELDS[field][1]!r}),\n"
                 for title, (field, how, by) in PANELS.items())
             + "    ])])\n")


def _gpu_value(field: str, gpu: mixed_fleet.Gpu) -> float:
    fact, _, combine = FIELDS[field]
    return combine([getattr(instance, fact) for instance in gpu.instances])


def _truth(field: str, how: str, by: tuple, fleet=mixed_fleet.FLEET) -> dict[str, float]:
    """{group: value} from the fleet's facts: each GPU's value (its instances combined), then the group's."""
    groups: dict[str, list[float]] = {}
    for node in fleet:
        for gpu in node.gpus:
            groups.setdefault(node.name if by else "", []).append(1.0 if how == "count" else _gpu_value(field, gpu))
    return {group: HOW[how](values) for group, values in groups.items()}


def _shown(values: dict[str, float], by: tuple) -> dict[str, float]:
    """A widget's lines by group: a node's line is labelled by the node; the cluster's one line by ""."""
    return values if by else {"": value for value in values.values()}


@pytest.fixture(scope="module", params=["otel", "classic"])
def shown(request, tmp_path_factory):
    return shown_through_agent(tmp_path_factory.mktemp(request.param), request.param, DASHBOARD, "instances",
                               STEP, END)


def test_the_premise_the_mig_node_has_two_gpus_of_two_instances_each():
    (node,) = [node for node in mixed_fleet.FLEET if node.name == "gpu-node-mig"]
    assert [len(gpu.instances) for gpu in node.gpus] == [2, 2]
    assert _truth("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "sum", ("node",))[node.name] == pytest.approx(0.9)
    assert _truth("DCGM_FI_DEV_FB_USED", "count", ("node",))[node.name] == 2


@pytest.mark.parametrize("title", PANELS)
def test_each_chart_reads_each_gpu_once_or_says_how_it_does_not(shown, title):
    """OTel: every chart shows the truth, and nothing of MIG is said of it (a count's or total's per-scrape mean and
    the 500 GPUs a query returns are said as of any field). Classic: true, or its header says a MIG GPU weighs once
    per instance, or it is left out with its reason."""
    pipeline, values, text = shown
    field, how, by = PANELS[title]
    truth = _truth(field, how, by)
    if pipeline == "otel":
        assert title in values, notes(text)  # shown, not left out
        assert _shown(values[title], by) == pytest.approx(truth)
        assert not [note for note in notes(text).get(title, ()) if "MIG" in note], notes(text)[title]
    elif title not in values:  # left out, with its reason
        assert f"{title} (" in text.split("On Grafana only: ", 1)[1]
    else:
        assert _shown(values[title], by) == pytest.approx(truth) or said(text, title, WEIGHS_PER_SERIES[:40]), \
            (values[title], truth)


def test_cost_prices_one_metric_per_gpu_as_the_agent_publishes(tmp_path):
    """Each field read so is one metric per physical GPU in the set of readings once: through the agent model the mixed
    fleet's 11 GPUs publish 11 of engine activity and of framebuffer used ([ClusterName, node, gpu, readings]; a MIG
    GPU's two instances one), and `gpudash cost` adds one metric per GPU for each (100 GPUs: 200). (A total per GPU
    index over the nodes reads that set; a node's total reads the node's totals per scrape the agent makes.)"""

    fields = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED")
    text = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
            "    yield Dashboard(id='instances', title='Instances', rows=[Row('Nodes', [\n"
            + "".join(f"        Panel('{field}', Query({field!r}, 'sum', ('gpu',)), unit={FIELDS[field][1]!r}),\n"
                      for field in fields) + "    ])])\n")

    def metrics(folder, dashboards: str | None) -> tuple[float, list]:
        folder.mkdir()
        project = defined_project(folder, "agent:\n  pipeline: otel\n", dashboards=dashboards)
        artifacts = build(project)
        lines = cost.estimates(project, cost.Fleet(clusters=1, pods=10, churn=0, gpus=100), None, artifacts)
        quantity = {line["item"]: line for line in lines["group_by"]["lines"]}["custom metrics"]["quantity"]
        return quantity, through_agent(encode(artifacts), STEP, 4 * STEP)

    added, points = metrics(tmp_path / "mine", text)
    none, _ = metrics(tmp_path / "none", "def dashboards(ctx):\n    return []\n")
    once = {(p.metric, p.dimensions) for p in points if "readings" in p.dims() and p.metric in fields}
    gpus = sum(len(node.gpus) for node in mixed_fleet.FLEET)
    assert {field: sum(1 for metric, _ in once if metric == field) for field in fields} == dict.fromkeys(fields, gpus)
    assert added - none == len(fields) * 100


NODES, PER_NODE = 63, 8  # 504 GPUs: past the 500 series a query returns, the fleet's values read every reading
ENGINE, FB_USED = "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED"
FLEET_VALUES = {"Mean engine activity": (ENGINE, "avg", "ratio"), "GPUs using framebuffer": (FB_USED, "count", "count"),
                "Framebuffer used": (FB_USED, "sum", "mebibyte")}


def _half_mig_page(node: int) -> str:
    """Node `node`'s GPUs: the even ones split into two instances (engine 0.8 and 0.4, 10,000 and 5,000 MiB), the odd
    ones whole (0.9, 20,000 MiB)."""
    def series(name: str, gpu: int, instance: str, value: float) -> str:
        mig = f',GPU_I_PROFILE="3g.20gb",GPU_I_ID="{instance}"' if instance else ""
        return (f'{name}{{gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A100-SXM4-40GB",'
                f'Hostname="n{node}"{mig}}} {value}')
    values = {ENGINE: ((0.8, 0.4), 0.9), FB_USED: ((10000, 5000), 20000)}
    lines = []
    for name, (split, whole) in values.items():
        lines.append(f"# TYPE {name} gauge")
        for gpu in range(PER_NODE):
            lines += [series(name, gpu, str(1 + i), value) for i, value in enumerate(split)] if gpu % 2 == 0 \
                else [series(name, gpu, "", whole)]
    return "\n".join(lines) + "\n"


def test_past_500_gpus_the_fleets_values_read_each_gpu_once(tmp_path):
    """504 GPUs, half split into two MIG instances: the fleet's mean engine activity is the GPUs' mean (0.75: MIG GPUs
    at 0.6, whole ones at 0.9; the instances' mean is 0.7), the GPUs using framebuffer 504 (not 756 instances), its
    total 504 / 2 x 35,000 MiB. Past 500 GPUs the values read every reading of the cluster in the minute
    ([ClusterName, readings]), each GPU's reading once: the agent combines a MIG GPU's instances before."""

    text = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
            "    yield Dashboard(id='fleet', title='Fleet', rows=[Row('Fleet', [\n"
            + "".join(f"        Panel({title!r}, Query({field!r}, {how!r}), kind='stat', unit={unit!r}),\n"
                      for title, (field, how, unit) in FLEET_VALUES.items()) + "    ])])\n")

    files = encode(build(defined_project(tmp_path, "agent:\n  pipeline: otel\n", dashboards=text)))
    config, job = agent_config(files[AGENT_FILE])
    targets = exporter_targets(job, NODES)
    points = Agent(config, job).run([Scrape(30.0 * k, _half_mig_page(n), targets[n])
                                     for k in range(-1, 8) for n in range(NODES)])
    body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-fleet.json"])["DashboardBody"])
    shown = {}
    for widget in body["widgets"]:
        if widget["type"] == "metric":
            (line,) = cloudwatch_eval.widget(widget["properties"], points, 0, 240, now=240).values()
            shown[widget["properties"]["title"]] = line[max(line)]
    gpus = NODES * PER_NODE
    assert shown == pytest.approx({"Mean engine activity": 0.75, "GPUs using framebuffer": gpus,
                                   "Framebuffer used": gpus // 2 * (15000 + 20000)})


def test_a_gpu_one_of_whose_instances_reads_a_blank_has_no_framebuffer_total(tmp_path):
    """DCGM's blank on one MIG instance's free framebuffer: the GPU's free memory (its instances' sum) is unknown, and
    the node's mean, largest and smallest read its other GPU alone, as the Prometheus side reads it (promql.merged
    gives such a GPU no value): the agent adds a GPU's instances up before its blank filter, which drops a sum holding
    a blank. Added after it, the GPU read its other instance's 12,000 MiB as its whole free memory. The node's total
    is the node's total per scrape the agent makes, dropped whole at a scrape holding a blank, as a pod's is (docs/
    cloudwatch.md "A pod's totals per scrape"): no line, not the other GPU's memory as the node's."""

    (mig,) = [node for node in mixed_fleet.FLEET if node.name == "gpu-node-mig"]
    gpu = mig.gpus[1]
    blank = replace(gpu, instances=(gpu.instances[0],
                                    replace(gpu.instances[1], fb_free=float(mixed_fleet.NOT_SUPPORTED))))
    fleet = tuple(replace(node, gpus=(node.gpus[0], blank)) if node is mig else node for node in mixed_fleet.FLEET)
    field = "DCGM_FI_DEV_FB_FREE"
    titles = {f"{how} {field} per node": how for how in ("sum", "avg", "max", "min")}
    text = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
            "    yield Dashboard(id='blank', title='Blank', rows=[Row('Nodes', [\n"
            + "".join(f"        Panel({title!r}, Query({field!r}, {how!r}, ('node',)), unit='mebibyte'),\n"
                      for title, how in titles.items()) + "    ])])\n")
    files = encode(build(defined_project(tmp_path, "agent:\n  pipeline: otel\n", dashboards=text)))
    values = latest_values(files, through_agent(files, STEP, END, fleet, only=widgets_read(files)), END)
    alone = _gpu_value(field, mig.gpus[0])  # 400 + 15,000 MiB
    total = f"sum {field} per node"
    assert "gpu-node-mig" not in values.get(total, {}) and values[total], values.get(total)  # the others are drawn
    assert {title: values[title]["gpu-node-mig"] for title in titles if title != total} == \
        pytest.approx(dict.fromkeys(set(titles) - {total}, alone))


def _rule(field: str, how: str, group: str) -> str:
    return f"{how}-{FIELDS[field][0].replace('_', '-')}-{group}"


ALARMS = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm({_rule(field, how, group)!r}, 'X', Condition(Query({field!r}, {how!r}, {by!r}), '>=', 1),\n"
    f"                description='x', runbook='y')\n" for field in FIELDS for how in HOW for group, by in GROUPS.items())


def _alarms(tmp_path, pipeline: str) -> tuple[dict, list] | dict:
    """{rule: request} and the mixed fleet's points through the agent model; on classic {rule: request, or the
    refusal} (each rule built alone)."""
    project = defined_project(tmp_path, f"agent:\n  pipeline: {pipeline}\n", alarms=ALARMS)
    if pipeline == "otel":
        requests, points = alarms_through_agent(project, STEP, END)
        return {name.removeprefix("gpudash-gpu-cluster-").removesuffix("-warning"): r
                for name, r in requests.items()}, points
    result = {}
    for alarm in project.alarms:
        try:
            (request,) = cloudwatch_alarms((alarm,), project.settings, project.catalog)
            result[alarm.id] = request["Request"]
        except InputError as exc:
            result[alarm.id] = exc
    return result


def test_an_alarm_over_groups_of_gpus_reads_each_gpu_once_as_its_rule_does(tmp_path):
    """The same aggregations in alarms (a node's, the cluster's), on the OTel pipeline: each alarm's value over a
    period is the truth per group, each GPU once (its Prometheus rule combines a MIG GPU's instances per GPU before
    the group's aggregation: promql's merge of the field's per_gpu_aggregation), and nothing says copies count. Before,
    the MIG node's count read 4 GPUs and its engine activity summed to 1.8 (said in the description: COPIES_COUNTED),
    and a node's mean, largest or smallest framebuffer, and largest or smallest engine activity, were refused."""
    requests, points = _alarms(tmp_path, "otel")
    for field in FIELDS:
        for how in HOW:
            for group, by in GROUPS.items():
                request = requests[_rule(field, how, group)]
                values = {dict(key).get("node", ""): value
                          for key, value in alarm_values(request, points, END, 300).items()}
                assert values == pytest.approx(_truth(field, how, by)), (field, how, group)
                assert COPIES_COUNTED not in request["AlarmDescription"]


def test_on_classic_an_alarm_over_groups_of_gpus_is_exact_said_or_refused(tmp_path):
    """agent.pipeline: classic combines no GPU's instances: a total of framebuffer over the per-instance set is exact,
    a count or sum or mean of the per-GPU set says a MIG GPU counts once per instance (COPIES_COUNTED), and an
    extreme or mean of a GPU's instances' sum or mean is refused naming the alarm."""
    built = _alarms(tmp_path, "classic")
    for rule, made in built.items():
        if isinstance(made, InputError):
            assert f"'{rule}'" in str(made) and "of its instances" in str(made)
        else:
            assert COPIES_COUNTED in made["AlarmDescription"] or rule.startswith("sum-fb-"), rule


def test_with_a_copy_per_pod_sharing_a_gpu_each_gpu_is_read_once_too(tmp_path):
    """exporter.virtual_gpus (a copy per pod sharing a GPU, tests/support/agent_points.SHARED): the copies of a GPU
    instance are merged by `max` before its GPU's instances are combined, so the shared GPU counts once; framebuffer
    used, which the exporter splits per process there, is read from the device's series per GPU instance (no reading
    once: merged_copies): true, or said, or left out (its count per node read the MIG node's 2 GPUs as 4, said
    nothing)."""
    files = encode(build(defined_project(tmp_path, "agent:\n  pipeline: otel\nexporter:\n  virtual_gpus: true\n",
                                         dashboards=DASHBOARD)))
    values = latest_values(files, through_agent(files, STEP, END, SHARED, only=widgets_read(files)), END)
    text = header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-instances.json")
    for title, (field, how, by) in PANELS.items():
        truth = _truth(field, how, by, SHARED)
        if field != FB_USED:
            assert _shown(values[title], by) == pytest.approx(truth), title
        elif title not in values:
            assert f"{title} (" in text.split("On Grafana only: ", 1)[1]
        else:
            assert _shown(values[title], by) == pytest.approx(truth) or said(text, title, MIG_INSTANCES_WEIGH), \
                (title, values[title])

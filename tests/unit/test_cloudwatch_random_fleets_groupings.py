"""A user's panels and alarms grouped by node, by namespace and over the whole cluster read the truth of fleets no test
wrote by hand, on the default agent pipeline.

tests/unit/test_cloudwatch_random_fleets.py holds the bundled dashboards and alarms (per pod, per GPU) to the seeded
random fleets' facts; mixed_fleet.truth answers those groupings only. A user's definitions may group by `node` or
`namespace`, or not at all, which the agent publishes through sets of their own (a node's totals and GPU counts per
scrape, a namespace's GPUs, the GPUs' readings once): each such widget's every period and each such alarm's
contributors in ALARM are held here to what the facts say (a mean over the GPUs, a total, the GPUs counted, a MIG GPU's
use by the instances the namespace holds, a counter's increase over the period), computed from the fleet's facts
alone. exporter.virtual_gpus is off and no GPU is shared by pods of two namespaces: the headers and lint's notes say
how those lines weigh a shared GPU's copies (AL019, AL024), and the default agent pipeline (otel) is the one whose
values are exact; agent.pipeline: classic counts a MIG GPU once per instance, as its notes say.
"""

from __future__ import annotations

import json
import operator
from statistics import mean

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.render.cloudwatch import panel_title
from tests.support import cloudwatch_eval, random_fleet
from tests.support.cloudwatch_widgets import close, widgets
from tests.support.mig_variant import END, START, variant_datapoints, variant_project
from tests.support.mixed_fleet import FIELDS, FLEET, _per_gpu

TEMP, POWER, UTIL = "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL"
CLOCK, FB, REPLAYS = "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
# title: (field, aggregation, grouping)
PANELS = {
    "Node mean temperature": (TEMP, "avg", ("node",)),
    "Node power": (POWER, "sum", ("node",)),
    "Node hottest GPU": (TEMP, "max", ("node",)),
    "Node GPUs": (TEMP, "count", ("node",)),
    "Node slowest SM clock": (CLOCK, "min", ("node",)),
    "Node PCIe replays": (REPLAYS, "sum", ("node",)),
    "Namespace power": (POWER, "sum", ("namespace",)),
    "Namespace GPUs": (TEMP, "count", ("namespace",)),
    "Namespace utilization": (UTIL, "avg", ("namespace",)),
    "Cluster utilization": (UTIL, "avg", ()),
    "Cluster GPUs": (TEMP, "count", ()),
    "Cluster framebuffer used": (FB, "sum", ()),
}
# alarm id: (field, aggregation, grouping, comparison, threshold); a counter's as its increase over the period
ALARMS = {
    "node-power": (POWER, "sum", ("node",), ">", 300),
    "node-hot": (TEMP, "max", ("node",), ">", 80),
    "node-cool": (TEMP, "avg", ("node",), "<", 60),
    "node-gpus": (TEMP, "count", ("node",), "<", 2),
    "node-replays": (REPLAYS, "sum", ("node",), ">", 100),
    "ns-gpus": (TEMP, "count", ("namespace",), ">", 1),
    "ns-power": (POWER, "sum", ("namespace",), ">", 300),
    "ns-idle": (UTIL, "avg", ("namespace",), "<", 20),
    "cluster-idle": (UTIL, "avg", (), "<", 30),
    "cluster-gpus": (TEMP, "count", (), "<", 6),
    "cluster-power": (POWER, "sum", (), ">", 800),
}
DASHBOARD = f"""
from generator.model import Dashboard, Panel, Query, Row

PANELS = {PANELS!r}


def dashboards(ctx):
    yield Dashboard(id="groups", title="Groups", rows=[Row("All", [
        Panel(title=title, queries=[Query(metric, how, by)], description="A user's grouping.")
        for title, (metric, how, by) in PANELS.items()])])
"""
ALARM_FILE = f"""
from generator.model import Alarm, Condition, Query

ALARMS = {ALARMS!r}
COUNTERS = ({REPLAYS!r},)


def alarms(ctx):
    for name, (metric, how, by, comparison, level) in ALARMS.items():
        yield Alarm(name, name, Condition(Query(metric, how, by, as_increase=metric in COUNTERS), comparison, level),
                    description="A user's grouping.")
"""
OPERATORS = {">": operator.gt, "<": operator.lt}
AGGREGATE = {"avg": mean, "sum": sum, "max": max, "min": min, "count": len}


def _groups(fleet, by):
    """{group's name: [(node, GPU, the instances of it the group holds)]}: a node's GPUs, a namespace's (those a pod of
    it holds, with the instances its pods hold), or every GPU of the cluster (named "")."""
    groups: dict[str, list] = {}
    for node in fleet:
        for gpu in node.gpus:
            if by == ("node",):
                groups.setdefault(node.name, []).append((node, gpu, list(gpu.instances)))
            elif by == ("namespace",):
                for namespace in sorted({ns for ns, _ in gpu.holders()}):
                    groups.setdefault(namespace, []).append(
                        (node, gpu, [i for i in gpu.instances if any(ns == namespace for ns, _ in i.pods())]))
            else:
                groups.setdefault("", []).append((node, gpu, list(gpu.instances)))
    return groups


def _truth(fleet, metric, how, by, period=300):
    """{group: value} from the facts: each GPU's reading (a MIG GPU's use: the mean engine activity of the instances the
    group holds; its memory: their sum), a counter's growth over the period, then the group's aggregation over its
    GPUs with a reading (a count: its GPUs)."""
    values = {}
    for name, members in _groups(fleet, by).items():
        readings = []
        for node, gpu, instances in members:
            if how == "count":
                readings.append(1.0)
            elif metric == REPLAYS:
                readings.append(None if gpu.replays_per_s is None else gpu.replays_per_s * period)
            else:
                readings.append(_per_gpu(metric, gpu, instances, frozenset(FIELDS), node))
        readings = [r for r in readings if r is not None]
        if readings:
            values[name] = float(AGGREGATE[how](readings))
    return values


@pytest.fixture(scope="module", params=[0, 1, 3, "mixed"], ids=lambda p: f"seed-{p}" if p != "mixed" else p)
def shown(request, tmp_path_factory):
    """(fleet, build files, the fleet's datapoints through the build's agent model)."""
    folder = tmp_path_factory.mktemp("groupings")
    fleet = FLEET if request.param == "mixed" else random_fleet.fleet(request.param)
    (folder / "dashboards").mkdir()
    (folder / "dashboards" / "groups.py").write_text(DASHBOARD)
    (folder / "alarms").mkdir()
    (folder / "alarms" / "groups.py").write_text(ALARM_FILE)
    project = variant_project(folder, "definitions:\n  dashboards: [dashboards]\n  alarms: [alarms]\n")
    files = encode(build(project, grafana=False))
    return fleet, files, variant_datapoints(files, fleet)


def test_each_grouped_widget_draws_the_truth_at_every_period(shown):
    fleet, files, points = shown
    drawn = {}
    for path, properties in widgets(files):
        title = panel_title(properties["title"])
        if title in PANELS:
            drawn[title] = {label: series for label, series in
                            cloudwatch_eval.widget(properties, points, START, END).items() if series}
    assert set(drawn) == set(PANELS)
    for title, (metric, how, by) in PANELS.items():
        expected = {(name or title): value for name, value in _truth(fleet, metric, how, by).items()}
        assert set(drawn[title]) == set(expected), (title, sorted(drawn[title]), sorted(expected))
        for label, value in expected.items():
            if metric == REPLAYS:
                value /= 300  # a counter's line is its rate per second
            wrong = {period: v for period, v in drawn[title][label].items() if not close(v, value)}
            assert not wrong, (title, label, value, wrong)


def test_each_grouped_alarm_fires_for_the_groups_past_its_threshold(shown):
    fleet, files, points = shown
    requests = json.loads(files["cloudwatch/alarms.json"])["alarms"]
    for name, (metric, how, by, comparison, level) in ALARMS.items():
        truth = _truth(fleet, metric, how, by)
        expected = {group for group, value in truth.items() if OPERATORS[comparison](value, level)}
        mine = [r["Request"] for r in requests if {"Key": "gpudash:rule", "Value": name} in r["Request"]["Tags"]]
        assert mine, name
        fired = set()
        for request in mine:
            for key, state in cloudwatch_eval.alarm(request, points, END).items():
                if state == "ALARM":
                    fired.add(dict(key).get(by[0], "") if by else "")
        assert fired == expected, (name, sorted(fired), truth)

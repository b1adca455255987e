"""A failed scrape is not a lost GPU, but a CloudWatch alarm whose count of GPUs or total of a gauge over several GPUs
is the period's readings over the scrapes it holds reads it as one: the mixed fleet (11 GPUs) through the build's agent
model, one scrape of a node's exporter failed (nothing of that node in that scrape), reads that period's count as
11 - g/10 (g: the node's GPUs) and its total short by a tenth of the node's watts. Metrics Insights cannot count the
GPUs with a reading in a period in one query (a statistic per GPU, then a count of them), and an alarm on it takes no
math: the alarm's description says what a failed scrape does, and lint notes it (AL024); a mean over the GPUs of several
nodes weighs each by its readings, so a node whose scrape failed weighs its GPUs less: said and noted too. A pod's or
a node's count or total (the agent's per pod or node and scrape, AVG of those that arrived: the failed node reads its
GPUs and watts whole) and a GPU's own series are a mean of what arrived: no note.
The Prometheus rules count a GPU with a reading in the period: tests/integration/test_failed_scrape_twins.py."""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build, notes
from generator.output import encode
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import AGENT_FILE, alarm_values
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header, notes as header_notes, widgets
from tests.support.dcgm_fleet import target_labels
from tests.support.projects import defined_project

STEP, END, PERIOD = 30, 1800, 300
POWER, TEMP = "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP"
CASES = {"count-all-low": (TEMP, "count", (), "<"), "count-all-high": (TEMP, "count", (), ">="),
         "count-node": (TEMP, "count", ("node",), "<"), "sum-all": (POWER, "sum", (), "<"),
         "sum-node": (POWER, "sum", ("node",), ">"),
         # a mean of what arrived: not read low by a failed scrape
         "count-pod": (TEMP, "count", ("pod",), "<"), "sum-pod": (POWER, "sum", ("pod",), "<"),
         "max-gpu": (TEMP, "max", ("node", "gpu"), ">"), "avg-all": (TEMP, "avg", (), ">")}
NOTED = {"count-all-low", "count-all-high", "sum-all"}  # per node: the agent's count or total per scrape, AVG
WEIGHED = {"avg-all"}  # a mean over several nodes' GPUs: each weighs by its readings (a failed scrape's node's less)
ALARMS = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm({rule!r}, 'X', Condition(Query({metric!r}, {how!r}, {by!r}), {comparison!r}, 1),\n"
    f"                description='x', runbook='y')\n" for rule, (metric, how, by, comparison) in CASES.items())
FAILED_NODE = mixed_fleet.FLEET[0]
FAILED_AT = END - PERIOD + 4 * STEP  # a scrape inside the last period


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    project = defined_project(tmp_path_factory.mktemp("failed-scrape"), "", alarms=ALARMS)
    files = encode(build(project))
    requests = {a["Request"]["AlarmName"].removeprefix("gpudash-gpu-cluster-").removesuffix("-warning"): a["Request"]
                for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(k * STEP, mixed_fleet.payload(node, k * STEP, STEP),
                                            target_labels(job, node.name))
                                     for k in range(-2, END // STEP) for node in mixed_fleet.FLEET
                                     if not (node is FAILED_NODE and k * STEP == FAILED_AT)])
    return project, requests, points


def test_the_alarms_that_read_a_failed_scrape_as_gpus_lost_say_so(built):
    project, requests, _ = built
    said = {rule for rule, request in requests.items() if "one failed scrape of a node's exporter" in
            request["AlarmDescription"]}
    assert said == NOTED
    assert "so it can fire for the period" in requests["count-all-low"]["AlarmDescription"]
    assert "so it can miss for the period" in requests["count-all-high"]["AlarmDescription"]
    assert "9/10 of them" in requests["sum-all"]["AlarmDescription"]  # 300 s of 30 s scrapes
    weighed = {rule for rule, request in requests.items() if "its mean weighs each GPU by its readings" in
               request["AlarmDescription"]}
    assert weighed == WEIGHED
    noted = {note.message.split("'")[1] for note in notes(project) if note.rule == "AL024"}
    assert noted == NOTED | WEIGHED


def test_what_the_note_says_holds_on_the_agent_model(built):
    """The period holding the failed scrape reads the failed node's GPUs as 9/10 of them: the count of 11 GPUs reads
    11 - g/10 (so `< 11` breaches and `>= 11` does not) and the total is short by a tenth of the node's watts; the
    noted alarms' rules count 11 and add every watt. A pod's and a GPU's values are as without the failed scrape."""
    _, requests, points = built
    gpus = sum(len(node.gpus) for node in mixed_fleet.FLEET)
    lost = len(FAILED_NODE.gpus)
    (count,) = alarm_values(requests["count-all-low"], points, END, PERIOD).values()
    assert count == pytest.approx(gpus - lost / 10)
    assert count < gpus  # `count < 11` breaches with every GPU reporting: the false alarm the note names
    # per node, the agent's count of the node's GPUs per scrape, read as AVG, is a mean of the scrapes that arrived
    nodes = alarm_values(requests["count-node"], points, END, PERIOD)
    assert nodes == {(("node", node.name),): pytest.approx(len(node.gpus)) for node in mixed_fleet.FLEET}
    watts = alarm_values(requests["sum-node"], points, END, PERIOD)
    assert watts[(("node", FAILED_NODE.name),)] == pytest.approx(sum(gpu.power for gpu in FAILED_NODE.gpus))
    (total,) = alarm_values(requests["sum-all"], points, END, PERIOD).values()
    watts = sum(gpu.power for node in mixed_fleet.FLEET for gpu in node.gpus)
    assert total == pytest.approx(watts - sum(gpu.power for gpu in FAILED_NODE.gpus) / 10)
    # the period before holds every scrape: the truth
    (before,) = alarm_values(requests["count-all-low"], points, END - PERIOD, PERIOD).values()
    assert before == pytest.approx(gpus)


def test_at_one_scrape_per_period_a_failed_scrape_reads_as_its_rule_reads_it_and_no_note_says_otherwise(tmp_path):
    """A period holding one scrape (60 s scrapes, 60 s periods): a failed scrape leaves the node's GPUs out of the
    period, and its rule, whose window holds that one scrape too, has no reading of them either: the count reads the
    GPUs with a reading in the period (11 - g), the total their watts, as the rule does. No description compares it
    with a rule that reads otherwise, and lint notes none (AL024)."""
    step = period = 60
    project = defined_project(tmp_path, "scrape:\n  interval: 60s\n",
                              alarms=ALARMS.replace("description='x'", f"period_seconds={period}, description='x'"))
    files = encode(build(project))
    requests = {a["Request"]["AlarmName"].removeprefix("gpudash-gpu-cluster-").removesuffix("-warning"): a["Request"]
                for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    assert [rule for rule, request in requests.items() if "failed scrape" in request["AlarmDescription"]
            or "weighs each GPU by its readings" in request["AlarmDescription"]] == []
    assert [note.message for note in notes(project) if note.rule == "AL024"] == []
    config, job = agent_config(files[AGENT_FILE])
    failed_at = END - period
    points = Agent(config, job).run([Scrape(k * step, mixed_fleet.payload(node, k * step, step),
                                            target_labels(job, node.name))
                                     for k in range(-2, END // step) for node in mixed_fleet.FLEET
                                     if not (node is FAILED_NODE and k * step == failed_at)])
    read = [node for node in mixed_fleet.FLEET if node is not FAILED_NODE]  # the nodes with a reading in the period
    (count,) = alarm_values(requests["count-all-low"], points, END, period).values()
    assert count == pytest.approx(sum(len(node.gpus) for node in read))
    (total,) = alarm_values(requests["sum-all"], points, END, period).values()
    assert total == pytest.approx(sum(gpu.power for node in read for gpu in node.gpus))
    (before,) = alarm_values(requests["count-all-low"], points, END - period, period).values()
    assert before == pytest.approx(sum(len(node.gpus) for node in mixed_fleet.FLEET))


def test_a_nodes_count_reads_a_gpu_whose_field_is_blank_at_some_scrapes(tmp_path):
    """The agent counts a node's GPUs at each scrape after its blank filter: a GPU reading DCGM's blank at every other
    scrape is not in every scrape's count, but has readings in every period, so its rule counts it. The alarm reads the
    most GPUs one scrape counted (MAX): 4, where a mean of the counts read 3.5 and `< 4` fired without its twin."""
    from generator.artifacts import build
    from generator.output import encode
    from tests.support import cloudwatch_eval
    from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
    from tests.support.dcgm_fleet import target_labels
    from tests.support.projects import defined_project

    temp, node, step, end = "DCGM_FI_DEV_GPU_TEMP", "ip-10-0-1-1", 30, 1200
    alarms = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
              f"    yield Alarm('nodes', 'T', Condition(Query({temp!r}, 'count', ('node',)), '<', 4))\n")
    files = encode(build(defined_project(tmp_path, "agent:\n  pipeline: otel\n", alarms=alarms)))
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])

    def payload(t: int) -> str:
        lines = [f"# HELP {temp} {temp}.", f"# TYPE {temp} gauge"]
        for i in range(4):
            value = "140737488355328" if i == 3 and (t // step) % 2 else "45"
            lines.append(f'{temp}{{gpu="{i}",UUID="GPU-{node}-{i}",device="nvidia{i}",modelName="NVIDIA A100-SXM4-40GB",'
                         f'Hostname="{node}",container="main",namespace="ml",pod="p{i}"}} {value}')
        return "\n".join(lines) + "\n"

    points = Agent(config, job).run([Scrape(float(t), payload(t), target_labels(job, node)) for t in range(0, end, step)])
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    read = cloudwatch_eval.metrics_insights(request["Metrics"][0]["Expression"], points, end - 600, end, 300)
    assert [value for series in read.values() for value in series.values()] == [4.0, 4.0], read


@pytest.fixture(scope="module")
def part_blank(tmp_path_factory):
    """(the cluster's count of GPUs' alarm request, its value over the last period, the lint notes): one node of 4
    GPUs through the build's agent model (agent.pipeline: otel, which drops DCGM's blank), GPU 3 reading the blank at
    3 of each period's 10 scrapes."""
    temp, node, step, end = TEMP, "ip-10-0-1-1", 30, 1200
    alarms = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
              f"    yield Alarm('gpus', 'T', Condition(Query({temp!r}, 'count', ()), '<', 4), description='d', "
              "runbook='r')\n")
    dashboards = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
                  "    yield Dashboard(id='blank', title='B', description='d', rows=[Row('R', [Panel('GPUs by namespace', "
                  f"Query({temp!r}, 'count', ('namespace',)), width=24)])])\n")
    project = defined_project(tmp_path_factory.mktemp("part-blank"), "agent:\n  pipeline: otel\n", alarms=alarms,
                              dashboards=dashboards)
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])

    def payload(t: int) -> str:
        lines = [f"# HELP {temp} {temp}.", f"# TYPE {temp} gauge"]
        for i in range(4):
            value = "9223372036854775794" if i == 3 and (t // step) % 10 < 3 else "45"
            lines.append(f'{temp}{{gpu="{i}",UUID="GPU-{node}-{i}",device="nvidia{i}",modelName="NVIDIA A100-SXM4-40GB",'
                         f'Hostname="{node}",container="main",namespace="ml",pod="p{i}"}} {value}')
        return "\n".join(lines) + "\n"

    points = Agent(config, job).run([Scrape(float(t), payload(t), target_labels(job, node)) for t in range(0, end, step)])
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    (value,) = alarm_values(request, points, end, PERIOD).values()  # over the threshold's scale: the rule's is 4
    (chart,) = [p for _, p in widgets(files) if p["title"].startswith("GPUs by namespace")]
    drawn = {label: series[end - PERIOD] for label, series in
             cloudwatch_eval.widget(chart, points, end - 3600, end, period=PERIOD).items()}
    return request, value * 4, [n for n in notes(project) if n.rule == "AL024"], drawn, \
        header(files, "cloudwatch/dashboards/gpudash-gpu-cluster-blank.json")


def test_a_gpu_blank_at_some_scrapes_counts_for_the_share_it_was_read_at_and_says_so(part_blank):
    """A GPU reading DCGM's blank at 3 of a period's 10 scrapes has readings in the period, so its rule counts it; the
    agent drops the blank, and the count of the period's readings over its scrapes reads it as 0.7 of a GPU: 3.7 of
    4, so `< 4` fires without its twin. The description and lint (AL024) said it of a failed scrape only."""
    request, value, noted, _, _ = part_blank
    assert value == pytest.approx(3.7)
    said = "a GPU reading DCGM's blank at some of its scrapes (dropped by the agent) counts for the share of them it " \
           "was read at (blank at 3 of 10: 0.7 of it)"
    assert said in request["AlarmDescription"], request["AlarmDescription"]
    assert len(noted) == 1 and said in noted[0].message, noted


@pytest.mark.xfail(strict=True, reason="a count of a period's readings over its scrapes reads a GPU blank at 3 of 10 "
                                       "scrapes as 0.7 of a GPU (3.7 for 4): Metrics Insights has no count of "
                                       "distinct series (a documented limit; the alarm's description, the header and "
                                       "lint AL024 say it)")
def test_a_gpu_blank_at_some_scrapes_counts_whole(part_blank):
    assert part_blank[1] == pytest.approx(4.0)


def test_a_chart_counting_a_gpu_blank_at_some_scrapes_says_it_reads_part_of_it(part_blank):
    """The same count per namespace on a chart: 3.7 GPUs of 4 in the period, the header said a missed scrape only."""
    _, _, _, drawn, text = part_blank
    assert drawn == {"ml": pytest.approx(3.7)}, drawn
    said = header_notes(text)["GPUs by namespace"]
    assert any("a GPU reading DCGM's blank at m of them (the agent drops it) reads as (n - m) / n of that GPU" in note
               for note in said), said

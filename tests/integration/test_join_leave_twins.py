"""A GPU node that joins or leaves inside a period: what a count, total, mean, least and largest reading per period
read, per cluster, node, namespace and pod, on Prometheus and on CloudWatch.

The truth (docs/cloudwatch.md, "A GPU that joins or leaves inside a period"): a GPU with a reading in the period
reports in it and
counts once; a total adds each such GPU's mean over its readings in the period, a mean is the mean of those means (the
total over the count), as the overview's values now read a minute; the least and largest are of the period's
readings. A GPU there for half the period is no half GPU: a failed scrape, which the data cannot tell from a GPU
leaving and coming back, must not lose it either (tests/integration/test_failed_scrape_twins.py).

Three nodes scraped every 30 s; the period judged is [1,500 s, 1,800 s) (its 10 scrapes):
- node-a all along: GPU 0 (100 W) held by team-a/a0, GPU 1 (200 W) held by team-b/b0;
- node-j joins at 1,650 s (5 of the 10 scrapes, one of which fails): GPUs 0 and 1 (400 W each), both held by
  team-b/j0;
- node-l leaves after 1,590 s (4 of the 10 scrapes): GPU 0 (300 W) held by team-a/l0.
Truth: 5 GPUs, 1,400 W, a mean of 280 W (the period's readings weigh node-j at 0.4 and node-l at 0.4: 231 W); per
namespace team-a 2 GPUs, 400 W, 200 W; team-b 3, 1,000 W, 333 W.

The Prometheus rules (promtool, evaluated 10 s before the period's end, so that their window holds the same 10
scrapes) read the truth. The CloudWatch alarms (the build's agent model, the period's statistic) read a pod's and a
node's count, total and mean (the agent's per pod or node and scrape, read as AVG: a mean of the scrapes that arrived,
so neither node-j's joining nor its failed scrape moves its 2 GPUs and 800 W), and every least and largest reading,
truly; a count or total over a namespace or the cluster is the period's readings over its scrapes (the cluster 3.2
GPUs), and a mean over several nodes weighs each reading (231 W): one Metrics Insights query cannot count the GPUs with
a reading in a period or average their means. On agent.pipeline: classic, which makes no total at the agent, a node's
and a pod's count and total are the period's readings over its scrapes too (node-j: 0.8 GPU and 320 W). The alarms
say so (AL024); the strict xfails below pin what they read on each pipeline."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_mig_twins import built_with
from tests.support import mixed_fleet
from tests.support.agent_points import AGENT_FILE
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_eval import metrics_insights
from tests.support.dcgm_fleet import target_labels
from tests.support.mixed_fleet import Gpu, Instance, Node
from tests.support.promtool_rules import alert_names, expected_alert, promtool_test

STEP, PERIOD, END = 30, 300, 1800
START = END - PERIOD
JOINS, LEAVES = END - 150, START + 90  # node-j's first scrape; node-l's last
FAILED = END - 60  # node-j's scrape that fails (its exporter timing out once)


def _gpu(index: int, power: float, pod: tuple[str, str]) -> Gpu:
    return Gpu(index, temp=50, power=power, sm_clock=1400, xid=0, energy_mw=100_000, replays_per_s=0, memory_temp=50,
               util=50, instances=(Instance(fb_used=1000, fb_free=20_000, engine=0.5, pod=pod),))


NODES = {  # node: (its GPUs, the scrapes it is in)
    "node-a": ((_gpu(0, 100, ("team-a", "a0")), _gpu(1, 200, ("team-b", "b0"))), range(0, END + STEP, STEP)),
    "node-j": ((_gpu(0, 400, ("team-b", "j0")), _gpu(1, 400, ("team-b", "j0"))),
               [at for at in range(JOINS, END + STEP, STEP) if at != FAILED]),
    "node-l": ((_gpu(0, 300, ("team-a", "l0")),), range(0, LEAVES + STEP, STEP)),
}
FLEET = {name: Node(name, "Hostname", f"e-{name}", gpus) for name, (gpus, _) in NODES.items()}


def _readings() -> dict[tuple[str, str, str, str], list[float]]:
    """{(node, gpu, namespace, pod): its power readings in the period}."""
    return {(name, str(gpu.index), *gpu.instances[0].pod): [gpu.power for at in scrapes if START <= at < END]
            for name, (gpus, scrapes) in NODES.items() for gpu in gpus}


GROUPS = {"cluster": lambda key: (), "node": lambda key: (("node", key[0]),),
          "namespace": lambda key: (("namespace", key[2]),),
          "pod": lambda key: (("namespace", key[2]), ("pod", key[3]))}


def truth(how: str, scope: str) -> dict[tuple, float]:
    """{group: the truth} of `how` over the period: each GPU with a reading in it once, with its mean."""
    groups: dict[tuple, list[list[float]]] = {}
    for key, readings in _readings().items():
        groups.setdefault(GROUPS[scope](key), []).append(readings)
    means = {group: [sum(r) / len(r) for r in gpus] for group, gpus in groups.items()}
    return {group: {"count": len(m), "sum": sum(m), "avg": sum(m) / len(m), "min": min(min(r) for r in groups[group]),
                    "max": max(max(r) for r in groups[group])}[how] for group, m in means.items()}


def read(how: str, scope: str) -> dict[tuple, float]:
    """{group: what the period's readings give} (a count or total over the 10 scrapes, a mean over every reading):
    what CloudWatch's statistic over the period's observations reads of a node, namespace or the cluster."""
    groups: dict[tuple, list[float]] = {}
    for key, readings in _readings().items():
        groups.setdefault(GROUPS[scope](key), []).extend(readings)
    n = PERIOD // STEP
    return {group: {"count": len(r) / n, "sum": sum(r) / n, "avg": sum(r) / len(r), "min": min(r), "max": max(r)}[how]
            for group, r in groups.items()}


# (aggregation, scope, the group each case's thresholds pin): 0.5 either side of its truth
CASES = [(how, scope, pinned) for how, pinned_by_scope in (
    ("count", {"cluster": (), "node": (("node", "node-j"),), "namespace": (("namespace", "team-b"),),
               "pod": (("namespace", "team-b"), ("pod", "j0"))}),
    ("sum", {"cluster": (), "node": (("node", "node-j"),), "namespace": (("namespace", "team-b"),),
             "pod": (("namespace", "team-b"), ("pod", "j0"))}),
    ("avg", {"cluster": (), "node": (("node", "node-l"),), "namespace": (("namespace", "team-a"),),
             "pod": (("namespace", "team-b"), ("pod", "j0"))}),
    ("min", {"cluster": (), "node": (("node", "node-a"),), "namespace": (("namespace", "team-a"),),
             "pod": (("namespace", "team-a"), ("pod", "l0"))}),
    ("max", {"cluster": (), "node": (("node", "node-j"),), "namespace": (("namespace", "team-b"),),
             "pod": (("namespace", "team-a"), ("pod", "l0"))}),
) for scope, pinned in pinned_by_scope.items()]
BY = {"cluster": (), "node": ("node",), "namespace": ("namespace",), "pod": ("pod",)}
METRIC = {"count": "DCGM_FI_DEV_GPU_TEMP"}  # every other aggregation: power


def _rule(how: str, scope: str, side: str) -> str:
    return f"{how}-{scope}-{side}"


def _threshold(how: str, scope: str, pinned: tuple, side: str) -> float:
    return truth(how, scope)[pinned] + (-0.5 if side == "lo" else 0.5)


ALARMS = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm({_rule(how, scope, side)!r}, {_rule(how, scope, side)!r}, Condition(Query("
    f"{METRIC.get(how, 'DCGM_FI_DEV_POWER_USAGE')!r}, {how!r}, {BY[scope]!r}), {'>' if side == 'lo' else '<'!r}, "
    f"{_threshold(how, scope, pinned, side)!r}), evaluation_periods=1, datapoints_to_alarm=1, description='Look.', "
    f"runbook='Look.')\n" for how, scope, pinned in CASES for side in ("lo", "hi"))


def test_the_cases_tell_the_truth_from_the_readings():
    """Each pinned group's readings over the period's scrapes are more than 0.5 from its truth where the case is one
    CloudWatch cannot read (a count or total over several GPUs that do not come and go together, a mean over GPUs of
    several nodes), so the thresholds tell them apart."""
    assert truth("count", "cluster") == {(): 5} and read("count", "cluster") == {(): pytest.approx(3.2)}
    assert truth("sum", "cluster") == {(): 1400} and read("sum", "cluster") == {(): pytest.approx(740)}
    assert truth("avg", "cluster") == {(): 280} and read("avg", "cluster")[()] == pytest.approx(7400 / 32)
    assert truth("avg", "namespace")[(("namespace", "team-a"),)] == 200
    assert read("avg", "namespace")[(("namespace", "team-a"),)] == pytest.approx(2200 / 14)
    apart = {(how, scope) for how, scope, pinned in CASES if scope != "pod"  # a pod's: the agent's totals per scrape
             and abs(read(how, scope)[pinned] - truth(how, scope)[pinned]) > 0.5}
    assert apart == UNREAD


# what the period's readings cannot give: a count or total over GPUs that do not come and go together, a mean over
# several nodes; the OTel pipeline's agent makes a node's count and total per scrape (read as AVG: true), classic
# makes no total at the agent, so a pod's count and total are its readings over the scrapes there too
UNREAD = {("count", "cluster"), ("count", "node"), ("count", "namespace"), ("sum", "cluster"), ("sum", "node"),
          ("sum", "namespace"), ("avg", "cluster"), ("avg", "namespace")}
UNREAD_BY = {"otel": UNREAD - {("count", "node"), ("sum", "node")},
             "classic": UNREAD | {("count", "pod"), ("sum", "pod")}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("join-leave"), {"joins.py": ALARMS},
                      fields=("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"))


def _fired(how: str, scope: str, side: str) -> list[dict[str, str]]:
    """The groups whose truth is past the case's threshold (every group of the scope, not the pinned one alone)."""
    pinned = next(p for h, s, p in CASES if (h, s) == (how, scope))
    threshold = _threshold(how, scope, pinned, side)
    return [dict(group) for group, value in sorted(truth(how, scope).items())
            if (value > threshold if side == "lo" else value < threshold)]


def _series() -> list[dict[str, str]]:
    """The fleet's temperature and power as Prometheus stores them: a sample at each of a node's scrapes (10 s
    slots), a staleness marker at node-j's failed scrape and at the first scrape after node-l left, nothing before
    node-j joined."""
    slots = END // 10 + 3
    series = []
    for name, node in FLEET.items():
        scrapes = set(NODES[name][1])
        for line in mixed_fleet.payload(node, 0, STEP).splitlines():
            if not line.startswith(("DCGM_FI_DEV_GPU_TEMP{", "DCGM_FI_DEV_POWER_USAGE{")):
                continue
            labels, value = line.rsplit(" ", 1)
            values = []
            for slot in range(slots):
                at = slot * 10
                if at % STEP or at not in scrapes and at not in (max(scrapes) + STEP, FAILED):
                    values.append("_")
                else:
                    values.append(value if at in scrapes else "stale")
            series.append({"series": f'{labels[:-1]},node="{name}",instance="{name}:9400",job="dcgm-exporter"}}',
                           "values": " ".join(values)})
    return series


def test_prometheus_rules_read_the_truth(built):
    """Each case's two alerts (above the truth less 0.5, below it plus 0.5) fire for every group whose truth is past
    their threshold, at the evaluation whose window holds the period's 10 scrapes."""
    _, folder = built
    alerts = alert_names(folder)
    checks = [{"eval_time": f"{END - 10}s", "alertname": alerts[_rule(how, scope, side)],
               "exp_alerts": [expected_alert(folder, alerts[_rule(how, scope, side)], **labels)
                              for labels in _fired(how, scope, side)]}
              for how, scope, _ in CASES for side in ("lo", "hi")]
    promtool_test(folder, "join_leave.yaml", [{"interval": "10s", "input_series": _series(),
                                                "alert_rule_test": checks}], evaluation_interval="10s")


@pytest.fixture(scope="module")
def classic(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("join-leave-classic"), {"joins.py": ALARMS},
                      fields=("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"),
                      settings="agent:\n  pipeline: classic\n")


@pytest.fixture(scope="module")
def cloudwatch(request, built, classic):
    """(pipeline, the build's files, the fleet's datapoints through the build's agent model) of the pipeline
    `request.param` (indirect)."""
    files = (built if request.param == "otel" else classic)[0]
    config, job = agent_config(files[AGENT_FILE])
    return request.param, files, Agent(config, job).run([
        Scrape(float(at), mixed_fleet.payload(FLEET[name], at, STEP), target_labels(job, name))
        for at in range(0, END + STEP, STEP) for name in FLEET if at in NODES[name][1]])


def cloudwatch_reads(files, points, how: str, scope: str) -> dict[tuple, float]:
    """{group: the value} of the case's CloudWatch alarm over the period: its query's result over its Threshold times
    the definition's threshold (the query's scale: a count or total of readings over the scrapes a period holds)."""
    pinned = next(p for h, s, p in CASES if (h, s) == (how, scope))
    name = _rule(how, scope, "lo")
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if {"Key": "gpudash:rule", "Value": name} in a["Request"]["Tags"]]
    (metric,) = request["Metrics"]
    result = metrics_insights(metric["Expression"], points, START, END, PERIOD)
    scale = _threshold(how, scope, pinned, "lo") / request["Threshold"]
    return {tuple((k, v) for k, v in key if k in ("node", "namespace", "pod")): series[START] * scale
            for key, series in result.items()}


def _spoken(values: dict[tuple, float]) -> str:
    return ", ".join(f"{'/'.join(v for _, v in group) or 'cluster'} {value:.4g}" for group, value in values.items())


def _case(pipeline: str, how: str, scope: str):
    name = f"{pipeline}-{how}-{scope}"
    if (how, scope) not in UNREAD_BY[pipeline]:
        return pytest.param(pipeline, how, scope, id=name)
    said = {"count": "the period's readings over its 10 scrapes", "sum": "the period's readings over its 10 scrapes",
            "avg": "the mean of every reading"}[how]
    made = f" (agent.pipeline: classic makes no total per {scope} at the agent)" if scope in ("node", "pod") else ""
    return pytest.param(pipeline, how, scope, id=name, marks=pytest.mark.xfail(strict=True, reason=(
        f"CloudWatch reads {said}: {_spoken(read(how, scope))} for {_spoken(truth(how, scope))}; one Metrics "
        f"Insights query cannot take a statistic per GPU and then count, add or average them{made}")))


@pytest.mark.parametrize("cloudwatch, how, scope", [_case(pipeline, how, scope) for pipeline in sorted(UNREAD_BY)
                                                    for how, scope, _ in CASES], indirect=["cloudwatch"])
def test_cloudwatch_alarms_read_the_truth(cloudwatch, how, scope):
    assert cloudwatch_reads(*cloudwatch[1:], how, scope) == pytest.approx(truth(how, scope))


@pytest.mark.parametrize("cloudwatch, how, scope", [
    pytest.param(pipeline, how, scope, id=f"{pipeline}-{how}-{scope}")
    for pipeline, unread in sorted(UNREAD_BY.items()) for how, scope in sorted(unread)], indirect=["cloudwatch"])
def test_what_cloudwatch_reads_instead(cloudwatch, how, scope):
    """The cases CloudWatch cannot read: a count or total over the period's scrapes, a mean over every reading."""
    assert cloudwatch_reads(*cloudwatch[1:], how, scope) == pytest.approx(read(how, scope))


@pytest.mark.parametrize("cloudwatch", sorted(UNREAD_BY), indirect=True)
def test_the_alarms_that_cannot_read_it_say_so(cloudwatch):
    """Each case CloudWatch cannot read says what a node added or removed inside a period does (lint AL024); the
    others do not."""
    pipeline, files, _ = cloudwatch
    said = {(how, scope) for how, scope, _ in CASES for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
            if {"Key": "gpudash:rule", "Value": _rule(how, scope, "lo")} in a["Request"]["Tags"]
            and "a node added or removed inside" in a["Request"]["AlarmDescription"]}
    assert said == UNREAD_BY[pipeline]

"""The data-missing alarm and its Prometheus twin fire when the exporter or the agent stops, and not
when no pod holds a GPU or the GPU node group is at zero.

Each situation is one story of a two-node fleet: healthy for 20 minutes, then the change, healthy again from
minute 40, judged each minute of the hour (nothing before the change, in ALARM by minute 30 and until the
recovery, nothing from minute 46) and by name at minute 35. The CloudWatch form is evaluated over what the agent
model makes of the scrapes (the generated scrape jobs and metric declarations, the documented metric-math and
missing-data semantics); the Prometheus form by `promtool test rules` over the same story as series. The rule has
two CloudWatch alarms: the cluster's metric-math alarm and a GROUP BY alarm per node (per GPU on classic); the rule
fires on CloudWatch when either does. The stories at the end (crash loops, restarts, nodes coming and going) judge both twins minute by
minute against the story's truth.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass

import pytest

from generator.artifacts import build
from generator.catalog import PRESENCE
from generator.data_missing import AGENT_PERIODS
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval, kube_state
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, scrape_jobs
from tests.support.dcgm_fleet import FLEET, STEP, Gpu, payload, scrapes, target_labels
from tests.support.promtool_rules import SAMPLES, evaluated_at, judged_rules, rule_groups

END, CHANGE = 2100, 1200  # judged at minute 35; the change at minute 20
RECOVER, FINAL = 2400, 3600  # healthy again from minute 40; the timeline ends at minute 60
# What the alarms state: in ALARM within two periods (10 minutes) of the change, for as long as it lasts, and clear
# within a period and a minute of the recovery (the per-node count: 10 of the window's 20 scrapes 5 minutes after).
FIRED_BY, CLEARED_BY = CHANGE // 60 + 10, RECOVER // 60 + 6
NODES = ("ip-10-0-1-1", "ip-10-0-1-2")
EXPORTER = {"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter"}
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
ALARM = "gpudash-gpu-cluster-gpu-data-missing-critical"
PER_NODE_ALARM = "gpudash-gpu-cluster-gpu-data-missing-per-node-critical"  # agent.pipeline: otel (the default)
PER_GPU_ALARM = "gpudash-gpu-cluster-gpu-data-missing-per-gpu-critical"  # agent.pipeline: classic
AGENT_ALARM = "gpudash-gpu-cluster-gpu-data-missing-agent-critical"  # the agent's own reads of kube-state-metrics


EMPTY = "\n"  # a page without one series: the exporter answers 200 with nothing to say


@dataclass(frozen=True)
class Situation:
    name: str
    reporting: tuple[str, ...]  # nodes whose exporter serves GPU data after the change
    desired: int | None  # the exporter DaemonSet's desired pods after the change (None: no DaemonSet)
    available: int
    cloudwatch: bool  # the CloudWatch alarm fires
    prometheus: bool | None  # the Prometheus alert fires (None: Prometheus cannot watch itself)
    ksm: bool = True  # kube-state-metrics is scraped
    agent: bool = True  # the CloudWatch agent runs
    idle: bool = False  # no pod holds a GPU
    down: tuple[str, ...] = ()  # nodes whose exporter target is there but does not answer
    empty: tuple[str, ...] = ()  # nodes whose exporter answers (200) without one DCGM series (its host engine lost)
    blank: bool = False  # every GPU's presence fields (catalog.PRESENCE) read DCGM's blank, its exporter running


NOT_SUPPORTED = "9223372036854775794"  # DCGM's int64 "not supported" sentinel


def _blanked(text: str) -> str:
    """An exporter's page with every GPU's presence fields (temperature, power, ...: whichever the data-missing alarm
    reads, the first collected) DCGM's blank."""
    return re.sub(rf"^((?:{'|'.join(PRESENCE)})\{{.*\}}) \S+$", rf"\1 {NOT_SUPPORTED}", text, flags=re.MULTILINE)


SITUATIONS = (
    Situation("healthy", NODES, 2, 2, False, False),
    Situation("no pod holds a GPU", NODES, 2, 2, False, False, idle=True),
    Situation("GPU node group scaled to zero", (), 0, 0, False, False),
    Situation("exporter pod stopped on one node", NODES[:1], 2, 1, True, True, down=NODES[1:]),
    Situation("exporter DaemonSet deleted", (), None, 0, True, True),
    Situation("every exporter silent, pods available", (), 2, 2, True, True, down=NODES),
    # The DaemonSet's counts cannot see it; the target's `up`, per node, can, on both sides.
    Situation("exporter hung on one node, pod available", NODES[:1], 2, 2, True, True, down=NODES[1:]),
    # dcgm-exporter keeps serving HTTP when DCGM fails under it: its target is up, its page has no DCGM series
    Situation("exporter up but serving no GPU series on one node", NODES[:1], 2, 2, True, True, empty=NODES[1:]),
    Situation("kube-state-metrics missing", NODES, 2, 2, True, True, ksm=False),
    # DCGM reads no GPU (it lost them, or does not read the presence field there) while the exporters serve every
    # other field: no GPU reports, on both sides (the OTel agent drops the blank; the rule counts readings)
    Situation("every GPU's presence fields blank, exporters running", NODES, 2, 2, True, True, blank=True),
    Situation("CloudWatch agent stopped", (), 2, 2, True, None, agent=False),
)


@pytest.fixture(scope="module")
def generated():
    project = load_project()
    files = encode(build(project))
    return project, files


# --- CloudWatch -------------------------------------------------------------------------

_HEALTHY: dict = {}  # (project, agent file, idle) -> (project, the agent after the healthy 20 minutes, their datapoints)


def _datapoints(project, files, situation: Situation, until: int = FINAL, exporter: dict[str, str] = EXPORTER,
                more: tuple[tuple[dict[str, str], int, int], ...] = (), agent_file: str = AGENT_FILE):
    """What the agent publishes of the situation's story up to `until` (an alarm judged at a time reads no later
    datapoint, and the agent's state there depends on no later scrape). Every story of a fleet is the same until the
    change: the agent that ran it (its state, its datapoints) is kept once per project and fleet, and each situation
    goes on from a copy of it (the scrapes before the change all come first in time: the same run). `exporter`: the
    namespace and name of the exporter DaemonSet kube-state-metrics reports; `more`: other DaemonSets it reports after
    the change (labels, desired, available); `agent_file`: the cluster's agent ConfigMaps."""
    config, job = agent_config(files[agent_file])
    jobs = scrape_jobs(files[agent_file])
    ksm_job = jobs["gpudash-kube-state-metrics"]
    gpus = tuple(Gpu(g.node, g.index) for g in FLEET) if situation.idle else FLEET
    key = (id(project), files[agent_file], situation.idle, tuple(exporter.items()))
    if key not in _HEALTHY:
        before = scrapes(job, project.catalog, -1, CHANGE // STEP - 1, gpus)
        healthy = [kube_state.scrape(ksm_job, t, exporter, 2, 2) for t in range(-STEP, CHANGE, STEP)]
        agent = Agent(config, job, others=[ksm_job])
        _HEALTHY[key] = (project, agent, agent.run(before + healthy))  # (the project kept: its id stays its own)
    _, agent, points = _HEALTHY[key]
    agent = copy.deepcopy(agent)
    after = [(Scrape(s.timestamp, _blanked(s.payload), s.target_labels) if situation.blank else s)
             if s.target_labels["node"] in situation.reporting else
             Scrape(s.timestamp, EMPTY if s.target_labels["node"] in situation.empty else "", s.target_labels)
             for s in scrapes(job, project.catalog, CHANGE // STEP, RECOVER // STEP - 1, gpus)
             if s.target_labels["node"] in situation.reporting + situation.down + situation.empty] \
        if situation.agent else []
    recovered = scrapes(job, project.catalog, RECOVER // STEP, FINAL // STEP - 1, gpus)  # healthy again
    ksm = []
    if situation.agent and situation.ksm:
        ksm = [kube_state.scrape(ksm_job, t, exporter if situation.desired is not None else None,
                                 situation.desired or 0, situation.available, more=more)
               for t in range(CHANGE, RECOVER, STEP)]
    ksm += [kube_state.scrape(ksm_job, t, exporter, 2, 2) for t in range(RECOVER, FINAL, STEP)]
    return points + agent.run([s for s in after + recovered + ksm if s.timestamp <= until])


def _rule_alarms(files, second: str = PER_NODE_ALARM, cluster: str = "gpu-cluster") -> list[dict]:
    """The rule's CloudWatch alarms of the cluster: the cluster's metric-math alarm and its GROUP BY alarm per node
    (or, on agent.pipeline: classic, per GPU)."""
    names = [name.replace("-gpu-cluster-", f"-{cluster}-", 1) for name in (ALARM, second, AGENT_ALARM)]
    requests = [i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if i["Request"]["AlarmName"].startswith(names[0].removesuffix("-critical"))]
    assert sorted(r["AlarmName"] for r in requests) == sorted(names)
    return requests


def _in_alarm(requests: list[dict], points, end: float) -> dict[str, list[tuple]]:
    """{alarm name: its contributors in ALARM at `end`} of the alarms with any, each judged at every length of the
    evaluation range (cloudwatch_eval.alarm refuses a state the length decides)."""
    result = {}
    for request in requests:
        alarming = [key for key, state in cloudwatch_eval.alarm(request, points, end).items() if state == "ALARM"]
        if alarming:
            result[request["AlarmName"]] = alarming
    return result


@pytest.mark.parametrize("situation", SITUATIONS, ids=lambda s: s.name)
def test_cloudwatch_alarm(generated, situation):
    """Each minute of the hour: nothing fires before the change (minute 20); a situation of missing data fires by
    minute 30 and stays in ALARM until the recovery (minute 40); nothing fires from minute 46 on. The rule's
    twin (test_prometheus_rule_fires_on_the_same_situations) is judged at the same minutes."""
    project, files = generated
    requests, points = _rule_alarms(files), _datapoints(project, files, situation)
    fired = _in_alarm(requests, points, END)
    assert bool(fired) == situation.cloudwatch, (situation.name, fired)
    # the per-node alarm names each node whose scrapes stopped bringing GPU data, and no other
    assert sorted(dict(k)["node"] for k in fired.get(PER_NODE_ALARM, [])) == \
        (sorted(situation.down + situation.empty) if situation.agent else []), (situation.name, fired)
    for minute in range(1, FINAL // 60 + 1):
        fired = _in_alarm(requests, points, minute * 60)
        if minute <= CHANGE // 60 or minute >= CLEARED_BY or not situation.cloudwatch:
            assert not fired, (situation.name, minute, fired)
        elif FIRED_BY <= minute < RECOVER // 60:
            assert fired, (situation.name, minute)


def test_the_per_node_alarm_clears_when_its_window_does_at_every_length_of_the_evaluation_range(generated):
    """An exporter hung on one node from minute 20 to 40. The agent publishes each scrape's flag (1 brought no GPU data,
    0 did), so the node's window holds a data point whenever its target is scraped and CloudWatch judges that one:
    the alarm is in ALARM for the node exactly while more than 10 of its window's 20 scrapes were bad, at every length
    of the range, and stays OK after (before, the agent published only the bad scrapes: OK at 46, ALARM again from
    50 to 54 at every length, the window empty and the period before it judged). The rule resolves at the same
    minute (test_prometheus_rule_fires_on_the_same_situations)."""
    project, files = generated
    (situation,) = [s for s in SITUATIONS if s.name == "exporter hung on one node, pod available"]
    (request,) = [r for r in _rule_alarms(files) if r["AlarmName"] == PER_NODE_ALARM]
    points = _datapoints(project, files, situation)
    node = (("node", NODES[1]),)
    steps = "1" * (CHANGE // STEP) + "0" * ((RECOVER - CHANGE) // STEP) + "1" * ((FINAL - RECOVER) // STEP)
    for minute in range(CHANGE // 60, FINAL // 60):
        ranges = cloudwatch_eval.alarm_ranges(request, points, minute * 60 + 1)[node]
        expected = "ALARM" if _bad_in_window(steps, minute) > WINDOW_LIMIT else "OK"
        assert set(ranges.values()) == {expected}, (minute, _bad_in_window(steps, minute), ranges)


def test_the_agent_publishes_the_exporter_daemonset_only(generated):
    """The kube-state-metrics job keeps the exporter DaemonSet's three series, and of the nodes' series their info and
    the GPU resource's capacity (whether a GPU node exists); aws-node's, the CPU capacity and every other series of
    kube-state-metrics never become metrics (each would cost one, or merge into the cluster's)."""
    project, files = generated
    points = _datapoints(project, files, SITUATIONS[0])
    cluster_only = {(p.metric, p.value) for p in points if p.dimensions == (("ClusterName", "gpu-cluster"),)}
    # beside the GPU field per cluster (the alarm's and PERIOD()'s temperature; the fleet's values past 500 GPUs read
    # each GPU's readings once, [ClusterName, readings])
    assert {m for m, _ in cluster_only} == {"DCGM_FI_DEV_GPU_TEMP",
                                            kube_state.DESIRED, kube_state.AVAILABLE, kube_state.UPDATED,
                                            "kube_node_info", "kube_node_status_capacity"}
    assert {(m, v) for m, v in cluster_only if not m.startswith("DCGM_")} == {
        (kube_state.DESIRED, 2.0), (kube_state.AVAILABLE, 2.0), (kube_state.UPDATED, 2.0), ("kube_node_info", 1.0),
        ("kube_node_status_capacity", 8.0)}  # the node's nvidia_com_gpu, not its cpu


# --- Prometheus -------------------------------------------------------------------------

def _samples(before: str | None, after: str | None) -> str:
    """promtool values at 30 s steps: 40 before the change, 30 after; None: no sample (stale when it ends)."""
    head = f"{before}x39" if before is not None else "_x39"
    if after is None:
        return head + (" stale" if before is not None else "")
    return f"{head} {after}x30"


def _timeline(before: str, after: str | None) -> str:
    """promtool values at 30 s steps over the hour: `before` until the change and again from the recovery,
    `after` between (None: no sample, a staleness marker where a series stops)."""
    values = [before] * (CHANGE // STEP) + [after] * ((RECOVER - CHANGE) // STEP) + \
        [before] * ((FINAL - RECOVER) // STEP)
    return " ".join(v if v is not None else "stale" if k and values[k - 1] is not None else "_"
                    for k, v in enumerate(values))


def _series(situation: Situation, exporter: dict[str, str] = EXPORTER,
            marks: dict[str, str] = kube_state.OPERATOR_LABELS) -> list[dict[str, str]]:
    """The situation's series; `exporter`: the exporter DaemonSet's namespace and name, `marks` its labels as
    kube_daemonset_labels carries them."""
    series = []
    gpus = tuple(Gpu(g.node, g.index) for g in FLEET) if situation.idle else FLEET
    for node in NODES:
        n = node[-1]
        target = f'job="dcgm-exporter",instance="10.0.1.{n}:9400",node="{node}",exporter_pod="nvidia-dcgm-exporter-{n}"'
        up_after = "1" if node in situation.reporting + situation.empty else "0" if node in situation.down else None
        series.append({"series": f"up{{{target}}}", "values": _timeline("1", up_after)})
        kept = "4" if node in situation.reporting else "0" if up_after is not None else None
        series.append({"series": f"{SAMPLES}{{{target}}}", "values": _timeline("4", kept)})
        for gpu in (g for g in gpus if g.node == node):
            pod = f',namespace="{gpu.namespace}",pod="{gpu.pod}"' if gpu.held else ""
            series.append({"series": f'DCGM_FI_DEV_GPU_TEMP{{{target},gpu="{gpu.index}"{pod}}}',
                           "values": _timeline("60", (NOT_SUPPORTED if situation.blank else "60")
                                               if node in situation.reporting else None)})
    ksm = 'job="kube-state-metrics",instance="10.0.2.9:8080"'
    for labels, desired, available in ((exporter, situation.desired, situation.available),
                                       (kube_state.OTHER, 5, 3)):
        present = situation.ksm and (desired is not None or labels is kube_state.OTHER)
        selector = f'{ksm},namespace="{labels["namespace"]}",daemonset="{labels["daemonset"]}"'
        series.append({"series": f"{kube_state.DESIRED}{{{selector}}}",
                       "values": _timeline("5" if labels is kube_state.OTHER else "2",
                                          str(desired) if present else None)})
        series.append({"series": f"{kube_state.AVAILABLE}{{{selector}}}",
                       "values": _timeline("3" if labels is kube_state.OTHER else "2",
                                          str(available) if present else None)})
        names = ",".join(f'{k}="{v}"' for k, v in (
            {k: v for k, v in labels.items() if k.startswith("label_")} if labels is kube_state.OTHER else marks).items())
        series.append({"series": f"{kube_state.LABELS}{{{selector},{names}}}",
                       "values": _timeline("1", "1" if present else None)})
    return series


def test_prometheus_rule_fires_on_the_same_situations(generated, tmp_path):
    _, files = generated
    (tmp_path / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    rule = next(r for g in rule_groups(files["prometheus/rules.yaml"].decode()) for r in g["rules"]
                if r.get("alert") == "GpudashGpuDataMissing")
    tests = []
    for situation in SITUATIONS:
        if situation.prometheus is None:
            continue
        tests.append({"name": situation.name, "interval": "30s", "input_series": _series(situation),
                      "alert_rule_test": [  # before the change, through it, after the recovery
                          {"eval_time": f"{m}m", "alertname": rule["alert"],
                           "exp_alerts": _fired(rule, situation) if situation.prometheus and FIRED_BY <= m < RECOVER // 60
                           else []}
                          for m in range(1, FINAL // 60 + 1) if not CHANGE // 60 < m < FIRED_BY
                          and not RECOVER // 60 <= m < CLEARED_BY]})
    _rules_apart(files, tmp_path, "data_missing_test.yaml", tests)


def _rules_apart(files, folder, name: str, tests: list[dict], evaluation_interval: str = "30s") -> None:
    """Pass promtool `tests` of the data-missing alert with its two rules apart: the cluster's rule over each group as
    it is (its branches read kube-state-metrics' series and any GPU's, which each group has its own), and the
    per-target rule over one group holding the exporter targets of every group judged at the same times, each group's
    under its own node, address and pod (the rule judges each target by its own series: a group's targets cannot
    change another's alerts), so promtool evaluates it once per step for them all instead of once per group. The
    alerts are shared out by their reason: the per-target rule has its own. Should either run fail, the groups run as
    they are, both rules together, for promtool's own message, and the test fails."""
    from tests.support.promtool_rules import promtool_test

    groups = rule_groups(files["prometheus/rules.yaml"].decode())
    assert {case["alertname"] for test in tests for case in test["alert_rule_test"]} == {"GpudashGpuDataMissing"}

    def moved_labels(labels: dict[str, str], i: int) -> dict[str, str]:
        return {k: f"{v}-{i}" if k in ("node", "instance", "exporter_pod") else v for k, v in labels.items()}

    def mine(alert: dict) -> bool:
        return alert["exp_labels"].get("reason") == REASON
    cluster = [{**test, "alert_rule_test": [{**case, "exp_alerts": [a for a in case["exp_alerts"] if not mine(a)]}
                                            for case in test["alert_rule_test"]]} for test in tests]
    judged_alike: dict[tuple, list[int]] = {}  # the groups of one input interval judged at the same times
    for i, test in enumerate(tests):
        judged_alike.setdefault((test["interval"], tuple(c["eval_time"] for c in test["alert_rule_test"])), []).append(i)
    targets = [{"name": f"the targets of {len(alike)} groups", "interval": interval,
                "input_series": [{**series, "series": _moved(series["series"], i)} for i in alike
                                 for series in tests[i]["input_series"] if 'job="dcgm-exporter"' in series["series"]],
                "alert_rule_test": [{**case, "exp_alerts": [{**a, "exp_labels": moved_labels(a["exp_labels"], i)}
                                                            for i in alike
                                                            for a in tests[i]["alert_rule_test"][j]["exp_alerts"]
                                                            if mine(a)]}
                                    for j, case in enumerate(tests[alike[0]]["alert_rule_test"])]}
               for (interval, _), alike in judged_alike.items()]
    assert all(t["input_series"] for t in targets) and sorted(
        _per_target(r) for g in groups for r in g["rules"]
        if r.get("alert") == "GpudashGpuDataMissing") == [False, True]
    try:
        for part, keep, parts in (("cluster", lambda r: not _per_target(r), cluster), ("target", _per_target, targets)):
            (folder / part).mkdir()
            (folder / part / "rules.yaml").write_text(json.dumps({"groups": _alone(groups, keep)}))
            promtool_test(folder / part, name, parts, evaluation_interval=evaluation_interval)
    except AssertionError:
        promtool_test(folder, name, tests, evaluation_interval=evaluation_interval)
        raise


def _per_target(rule: dict) -> bool:
    """Whether `rule` is the data-missing rule's per-target alert (its own reason), not the cluster's."""
    return rule["labels"].get("reason") == REASON


def _alone(groups: list[dict], keep) -> list[dict]:
    """The rule groups with only the data-missing rules `keep` picks."""
    return [{**g, "rules": [r for r in g["rules"] if r.get("alert") != "GpudashGpuDataMissing" or keep(r)]}
            for g in groups]


def _moved(text: str, i: int) -> str:
    """A series of group i's exporter target: its node, address and pod marked `-i`."""
    return re.sub(r'\b(node|instance|exporter_pod)="([^"]*)"', lambda m: f'{m[1]}="{m[2]}-{i}"', text)


def _fired(rule: dict, situation: Situation, exporter: dict[str, str] = EXPORTER) -> list[dict]:
    """The alerts the rule raises in a situation: one per exporter target down, one per reason."""
    labels = {**rule["labels"]}
    alerts = []

    def alert(reason: str, **extra: str) -> dict:
        return {"exp_labels": {**labels, **extra, "reason": reason},
                "exp_annotations": {**rule["annotations"],
                                    "summary": rule["annotations"]["summary"].replace("{{ $labels.reason }}", reason)}}

    for node in situation.down + situation.empty:
        n = node[-1]
        alerts.append(alert("a node's exporter brought no GPU data most of the time", job="dcgm-exporter", node=node))
    ksm = {"job": "kube-state-metrics", "instance": "10.0.2.9:8080", **exporter}
    if situation.desired is None or not situation.ksm:
        alerts.append(alert("kube-state-metrics reports no exporter DaemonSet (deleted, kube-state-metrics not "
                            "scraped, or its --metric-labels-allowlist lacks daemonsets=[app,app.kubernetes.io/name])"))
    elif situation.desired > 0 and (not situation.reporting or situation.blank):
        alerts.append(alert("exporters are expected but no GPU reported", **ksm))
    if situation.desired is not None and situation.ksm and situation.available < situation.desired:
        alerts.append(alert("fewer exporter pods available than desired", **ksm))
    return alerts


# --- a crash loop fires; a rolling restart and a failed scrape do not -------------------------

THREE = ("ip-10-0-1-1", "ip-10-0-1-2", "ip-10-0-1-3")
CRASH_LOOP = " ".join(["0"] * 8 + ["1"] * 2)  # 30 s steps: answering (and available) 1 minute of every 5


def _target(node: str, pod: str) -> dict[str, str]:
    return {"job": "dcgm-exporter", "instance": f"{node}:9400", "node": node, "exporter_pod": pod}


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def _three_node_story(up: dict[tuple[str, str], str], available: str) -> list[dict]:
    """The GPU operator's DaemonSet on three GPU nodes (desired 3), `available` pods; each target's `up`."""
    ksm = f'job="kube-state-metrics",instance="10.0.2.9:8080",{_labels(EXPORTER)}'
    series = [{"series": f"{kube_state.DESIRED}{{{ksm}}}", "values": "3x80"},
              {"series": f"{kube_state.AVAILABLE}{{{ksm}}}", "values": available},
              {"series": f"{kube_state.LABELS}{{{ksm},{_labels(kube_state.OPERATOR_LABELS)}}}", "values": "1x80"}]
    for (node, pod), values in up.items():
        series.append({"series": f"up{{{_labels(_target(node, pod))}}}", "values": values})
    series.append({"series": f'DCGM_FI_DEV_GPU_TEMP{{{_labels(_target(THREE[0], "ex-1"))},gpu="0"}}',
                   "values": "60x80"})
    return series


def test_an_exporter_in_a_crash_loop_fires_a_rolling_restart_does_not(generated, tmp_path):
    """One exporter of three in CrashLoopBackOff at its 5-minute cap: its target answers, and its pod is available,
    one minute of every five. Each period holds a moment of full availability, so the DaemonSet's count never
    fires; its target, down most of the time, does, and names the node. A rolling restart of the exporter
    DaemonSet (each pod replaced once, its target down a minute, then gone, the new pod's target answering) and
    one failed scrape of a healthy target fire nothing."""
    from tests.support.promtool_rules import promtool_test

    _, files = generated
    (tmp_path / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    rule = next(r for g in rule_groups(files["prometheus/rules.yaml"].decode()) for r in g["rules"]
                if r.get("alert") == "GpudashGpuDataMissing")
    reason = "a node's exporter brought no GPU data most of the time"
    crashing = _target(THREE[2], "ex-3")
    crash_loop = _three_node_story(
        {(THREE[0], "ex-1"): "1x80", (THREE[1], "ex-2"): "1x80", (THREE[2], "ex-3"): " ".join([CRASH_LOOP] * 8)},
        " ".join([" ".join(["2"] * 8 + ["3"] * 2)] * 8))
    # From minute 20 each node's pod in turn: its target down 1 minute then gone, the new one answering
    # 30 s later; 2 pods available meanwhile, 3 for 30 s between nodes. ex-2 misses one scrape at minute 10.
    up, available = {}, ["3"] * 40
    for i, node in enumerate(THREE):
        start = 40 + 3 * i
        old = ("1x19 0 1x18" if i == 1 else "1x39") + (f" 1x{3 * i - 1}" if i else "") + " 0 0 stale"
        up[(node, f"ex-{i + 1}")] = old
        up[(node, f"ex-{i + 1}-new")] = f"_x{start + 2} 1x{80 - start - 3}"
        available += ["2", "2", "3"]
    rolling = _three_node_story(up, " ".join(available) + f" 3x{80 - len(available)}")
    expected = [{"exp_labels": {**rule["labels"], **node_labels(crashing), "reason": reason},
                 "exp_annotations": {**rule["annotations"],
                                     "summary": rule["annotations"]["summary"].replace("{{ $labels.reason }}",
                                                                                       reason)}}]
    promtool_test(tmp_path, "crash_loop_test.yaml", [
        {"name": "crash loop", "interval": "30s", "input_series": crash_loop,
         "alert_rule_test": [{"eval_time": t, "alertname": rule["alert"], "exp_alerts": expected}
                             for t in ("25m", "39m")]},
        {"name": "rolling restart and a failed scrape", "interval": "30s", "input_series": rolling,
         "alert_rule_test": [{"eval_time": t, "alertname": rule["alert"], "exp_alerts": []}
                             for t in ("11m", "21m", "24m", "27m", "30m", "39m")]},
    ], evaluation_interval="30s")


# --- the agent's kube-state-metrics job, on a real Prometheus ------------------------------

def test_the_generated_kube_state_metrics_job_keeps_the_exporter_daemonset_only(generated, tmp_path):
    """The job the agent runs, with Kubernetes discovery swapped for file discovery carrying the same
    meta labels: it keeps the kube-state-metrics pod's metrics port (not its telemetry port, not another
    pod on 8080) and, of everything kube-state-metrics serves, the exporter DaemonSet's three series, the node's info
    and its GPU capacity (not its CPU's)."""
    from tests.support.prometheus_server import for_file_sd
    from tests.support.prometheus_server import Prometheus
    from tests.support.replay_exporter import ReplayExporter

    _, files = generated
    job = for_file_sd(scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"], [str(tmp_path / "ksm.json")])
    job["scrape_interval"], job["scrape_timeout"] = "1s", "1s"
    with ReplayExporter(kube_state.payload(EXPORTER, 2, 1)) as ksm, \
            ReplayExporter(kube_state.payload(EXPORTER, 7, 7)) as decoy:
        meta = {k: v for k, v in kube_state.KSM_POD.items() if k != "__address__"}
        groups = [{"targets": [ksm.address], "labels": meta},
                  {"targets": [decoy.address], "labels": {**meta, "__meta_kubernetes_pod_container_port_number": "8081"}},
                  {"targets": [decoy.address], "labels": {**meta, "__meta_kubernetes_pod_label_app_kubernetes_io_name":
                                                          "some-app"}}]
        (tmp_path / "ksm.json").write_text(json.dumps(groups))
        config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "scrape_configs": [job]}
        with Prometheus(tmp_path, config) as prometheus:
            prometheus.wait_for('up{job="gpudash-kube-state-metrics"}')
            series = prometheus.wait_for('{job="gpudash-kube-state-metrics", __name__!~"up|scrape_.*"}', count=5)
            targets = prometheus.api("targets")["activeTargets"]
    assert [t["scrapeUrl"] for t in targets] == [ksm.url]
    assert sorted((s["metric"]["__name__"], s["metric"].get("namespace", ""), s["metric"].get("daemonset", ""),
                   s["metric"].get("resource", ""), s["value"][1]) for s in series) == [
        (kube_state.DESIRED, "gpu-operator", "nvidia-dcgm-exporter", "", "2"),
        (kube_state.AVAILABLE, "gpu-operator", "nvidia-dcgm-exporter", "", "1"),
        (kube_state.UPDATED, "gpu-operator", "nvidia-dcgm-exporter", "", "2"),
        ("kube_node_info", "", "", "", "1"), ("kube_node_status_capacity", "", "", "nvidia_com_gpu", "8")]


def test_a_counters_csv_without_gpu_temperature_keeps_the_alarm(tmp_path):
    """The alarm counts the observations of a field every GPU reports; with a counters CSV that does not
    collect GPU temperature it counts another one, instead of vanishing from both backends unsaid (a
    stopped exporter would then page no one)."""
    from generator.resources import default_counters

    csv = tmp_path / "counters.csv"
    csv.write_text("".join(line for line in default_counters().read_text().splitlines(True)
                           if not line.startswith("DCGM_FI_DEV_GPU_TEMP")))
    (tmp_path / "gpudash.yaml").write_text(f"counters: {csv}\n")
    project = load_project(tmp_path / "gpudash.yaml")
    assert "DCGM_FI_DEV_GPU_TEMP" not in project.catalog
    files = encode(build(project))
    assert "GpudashGpuDataMissing" in files["prometheus/rules.yaml"].decode()
    requests = _rule_alarms(files)
    for situation in SITUATIONS:
        assert bool(_in_alarm(requests, _datapoints(project, files, situation, END), END)) == situation.cloudwatch, \
            situation.name


# --- exporter DaemonSets found by their labels, whatever their names ----------------------------

POOLS = {"gpu-metrics-pool-a": ("ip-10-0-1-1", "ip-10-0-1-2"), "gpu-metrics-pool-b": ("ip-10-0-2-1",)}


def _daemonset_series(namespace: str, name: str, marks: dict[str, str], desired: tuple[str, str | None],
                      available: tuple[str, str | None]) -> list[dict]:
    ksm = f'job="kube-state-metrics",instance="10.0.2.9:8080",namespace="{namespace}",daemonset="{name}"'
    names = "".join(f',{k}="{v}"' for k, v in marks.items())
    return [{"series": f"{kube_state.DESIRED}{{{ksm}}}", "values": _samples(*desired)},
            {"series": f"{kube_state.AVAILABLE}{{{ksm}}}", "values": _samples(*available)},
            {"series": f"{kube_state.LABELS}{{{ksm}{names}}}", "values": _samples("1", "1")}]


def _node_series(node: str, exporter_pod: str, up_after: str, gpus: int) -> list[dict]:
    target = f'job="dcgm-exporter",instance="{node}:9400",node="{node}",exporter_pod="{exporter_pod}"'
    reporting = "60" if up_after == "1" else None
    capacity = (f'kube_node_status_capacity{{job="kube-state-metrics",instance="10.0.2.9:8080",node="{node}",'
                f'resource="nvidia_com_gpu",unit="integer"}}')  # the device plugin's, as kube-state-metrics writes it
    return [{"series": f"up{{{target}}}", "values": _samples("1", up_after)},
            {"series": capacity, "values": _samples(str(gpus), str(gpus))},
            *({"series": f'DCGM_FI_DEV_GPU_TEMP{{{target},gpu="{i}"}}', "values": _samples("60", reporting)}
              for i in range(gpus))]


def test_the_rule_reads_every_exporter_daemonset_by_its_labels(generated, tmp_path):
    """kube-state-metrics' series as a real Prometheus rule engine (promtool) evaluates them: the GPU operator's
    DaemonSet, or two Helm DaemonSets installed per node pool under custom names (fullnameOverride keeps the
    chart's app.kubernetes.io/name), with a node without GPUs beside them (no exporter DaemonSet counts it). Healthy,
    nothing fires, though no DaemonSet has the default name; an exporter down on the one node of pool b fires for
    that node and for pool b's DaemonSet; a kube-state-metrics that exposes no DaemonSet labels (its allowlist
    unset) fires the reason that says so."""
    from tests.support.promtool_rules import promtool_test

    _, files = generated
    (tmp_path / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    rule = next(r for g in rule_groups(files["prometheus/rules.yaml"].decode()) for r in g["rules"]
                if r.get("alert") == "GpudashGpuDataMissing")
    cpu_node = [{"series": 'kube_node_info{job="kube-state-metrics",instance="10.0.2.9:8080",node="ip-10-0-9-9"}',
                 "values": _samples("1", "1")}]
    operator = [*_daemonset_series("gpu-operator", "nvidia-dcgm-exporter", kube_state.OPERATOR_LABELS, ("2", "2"),
                                   ("2", "2")),
                *(s for n in NODES for s in _node_series(n, f"nvidia-dcgm-exporter-{n[-1]}", "1", 2))]

    def helm(pool_b_down: bool, marks=kube_state.HELM_LABELS) -> list[dict]:
        series = []
        for name, nodes in POOLS.items():
            down = pool_b_down and name.endswith("-b")
            series += _daemonset_series("dcgm", name, marks, (str(len(nodes)), str(len(nodes))),
                                        (str(len(nodes)), "0" if down else str(len(nodes))))
            series += [s for n in nodes for s in _node_series(n, f"{name}-{n[-1]}", "0" if down else "1", 4)]
        return series

    def alert(reason: str, **labels: str) -> dict:
        return {"exp_labels": {**rule["labels"], **labels, "reason": reason},
                "exp_annotations": {**rule["annotations"],
                                    "summary": rule["annotations"]["summary"].replace("{{ $labels.reason }}", reason)}}

    node_b = "ip-10-0-2-1"
    pool_b = {"job": "kube-state-metrics", "instance": "10.0.2.9:8080", "namespace": "dcgm",
              "daemonset": "gpu-metrics-pool-b"}
    stories = {
        "one operator DaemonSet": (operator, []),
        "two Helm DaemonSets with custom names": (helm(False), []),
        "an exporter down on one node": (helm(True), [
            alert("a node's exporter brought no GPU data most of the time", job="dcgm-exporter", node=node_b),
            alert("fewer exporter pods available than desired", **pool_b)]),
        "kube-state-metrics without the DaemonSet labels": (helm(False, marks={}), [alert(
            "kube-state-metrics reports no exporter DaemonSet (deleted, kube-state-metrics not scraped, or its "
            "--metric-labels-allowlist lacks daemonsets=[app,app.kubernetes.io/name])")]),
    }
    promtool_test(tmp_path, "daemonsets_test.yaml", [
        {"name": name, "interval": "30s", "input_series": series + cpu_node,
         "alert_rule_test": [{"eval_time": "35m", "alertname": rule["alert"], "exp_alerts": alerts}]}
        for name, (series, alerts) in stories.items()], evaluation_interval="30s")


# `helm install gpu-metrics gpu-helm-charts/dcgm-exporter -n monitoring`: the chart names the DaemonSet
# <release>-<chart> (the release name alone when it holds the chart's name; fullnameOverride when set)
HELM_RELEASE = {"namespace": "monitoring", "daemonset": "gpu-metrics-dcgm-exporter"}
# A second cluster whose release is named otherwise (`helm install ml-b ...`), in clusters[].exporter.daemonset
RELEASE_B = {"namespace": "monitoring", "daemonset": "ml-b-dcgm-exporter"}
RELEASES = (("gpu-cluster", HELM_RELEASE), ("gpu-cluster-b", RELEASE_B))
RELEASE_SITUATIONS = ("healthy", "exporter pod stopped on one node", "exporter DaemonSet deleted")


@pytest.fixture(scope="module")
def helm_release(tmp_path_factory):
    """The project of two clusters whose exporters are Helm releases: gpu-cluster's DaemonSet named in
    exporter.daemonset, gpu-cluster-b's (another release name) in its clusters[].exporter.daemonset."""
    folder = tmp_path_factory.mktemp("helm-release")
    (folder / "gpudash.yaml").write_text(
        "clusters:\n  - {name: gpu-cluster, region: us-east-1}\n"
        f"  - {{name: gpu-cluster-b, region: us-east-1, exporter: {{daemonset: {RELEASE_B['daemonset']}}}}}\n"
        "exporter:\n  deployment: helm\n  namespace: monitoring\n  daemonset: gpu-metrics-dcgm-exporter\n")
    project = load_project(folder / "gpudash.yaml")
    return project, encode(build(project))


def test_each_clusters_data_missing_alarm_names_the_setting_its_daemonset_comes_from(helm_release):
    """The alarm's description names the DaemonSet the agent reads and the setting to change: the cluster's own
    clusters[].exporter.daemonset where it has one (it said exporter.daemonset, the global one it overrides)."""
    _, files = helm_release
    said = {cluster: next(r["AlarmDescription"] for r in _rule_alarms(files, cluster=cluster)
                          if r["AlarmName"] == ALARM.replace("-gpu-cluster-", f"-{cluster}-"))
            for cluster, _ in RELEASES}
    assert "monitoring/gpu-metrics-dcgm-exporter (exporter.daemonset; " in said["gpu-cluster"]
    assert "monitoring/ml-b-dcgm-exporter (clusters[].exporter.daemonset; " in said["gpu-cluster-b"]


def test_a_helm_release_named_in_the_settings_is_read_by_the_alarm_as_by_the_rule(helm_release, tmp_path):
    """Each cluster's alarm reads the DaemonSet its settings name (exporter.daemonset, or the cluster's own
    clusters[].exporter.daemonset), as the rule finds it by its labels: OK while the release's exporters report, ALARM
    when one stops (its pod not available) or the DaemonSet is deleted, and the rule fires on the same situations
    (before exporter.daemonset, the agent kept only monitoring/dcgm-exporter's series, and before the cluster's own,
    both clusters' agents kept gpu-metrics-dcgm-exporter's: the desired count never arrived and the alarm was in ALARM
    while every GPU reported)."""
    project, files = helm_release
    situations = [s for s in SITUATIONS if s.name in RELEASE_SITUATIONS]
    # the second cluster's, to minute 35: each situation whose counts name a DaemonSet (a deleted one's story, and
    # every recovery, are the first's)
    first = RELEASES[0][0]
    judged = [(cluster, release, [s for s in situations if s.desired is not None or cluster == first])
              for cluster, release in RELEASES]
    for cluster, release, its in judged:
        requests = _rule_alarms(files, cluster=cluster)
        alarm = ALARM.replace("-gpu-cluster-", f"-{cluster}-")
        until = FINAL if cluster == first else END
        for situation in its:
            points = _datapoints(project, files, situation, until, exporter=release,
                                 agent_file=AGENT_FILE.replace("gpu-cluster", cluster))
            for minute in (m for m in (CHANGE // 60, END // 60, FINAL // 60) if m * 60 <= until):
                fired = _in_alarm(requests, points, minute * 60)
                expected = situation.cloudwatch and minute == END // 60
                assert (alarm in fired) == expected, (cluster, situation.name, minute, fired)
    rule = next(r for g in rule_groups(files["prometheus/rules.yaml"].decode()) for r in g["rules"]
                if r.get("alert") == "GpudashGpuDataMissing")
    tests = [{"name": f"{release['daemonset']}: {situation.name}", "interval": "30s",
              "input_series": _series(situation, release, kube_state.HELM_LABELS),
              "alert_rule_test": [{"eval_time": f"{m}m", "alertname": rule["alert"],
                                   "exp_alerts": _fired(rule, situation, release) if m == END // 60 else []}
                                  for m in (CHANGE // 60, END // 60, FINAL // 60)]}
             for _, release, its in judged for situation in its]
    assert [bool(t["alert_rule_test"][1]["exp_alerts"]) for t in tests] == [s.cloudwatch for _, _, its in judged
                                                                            for s in its]
    _rules_apart(files, tmp_path, "helm_release_test.yaml", tests)


def test_a_second_release_per_node_pool_is_not_read_by_the_alarm(helm_release):
    """A known gap, pinned: a second exporter DaemonSet in the namespace (a release per node pool) is not among the
    counts the agent publishes, so its exporter pod gone from its one node leaves the cluster's alarm OK (the rule
    fires for it: test_the_rule_reads_every_exporter_daemonset_by_its_labels). What the agent publishes with
    [ClusterName] stays the named DaemonSet's alone: two DaemonSets' counts in that one set would mix."""
    project, files = helm_release
    (healthy,) = [s for s in SITUATIONS if s.name == "healthy"]
    pool_b = {"namespace": "monitoring", "daemonset": "gpu-metrics-pool-b-dcgm-exporter", **kube_state.HELM_LABELS}
    points = _datapoints(project, files, healthy, END, exporter=HELM_RELEASE, more=((pool_b, 1, 0),))
    assert ALARM not in _in_alarm(_rule_alarms(files), points, END)
    counts = {(p.metric, p.value) for p in points if p.dimensions == (("ClusterName", "gpu-cluster"),)
              and not p.metric.startswith("DCGM_")}
    assert counts == {(kube_state.DESIRED, 2.0), (kube_state.AVAILABLE, 2.0), (kube_state.UPDATED, 2.0),
                      ("kube_node_info", 1.0), ("kube_node_status_capacity", 8.0)}  # and whether a GPU node exists


# --- stories of exporters that answer now and then, and of nodes that come and go -------------------------
#
# Each story gives, per 30 s scrape from minute 0 to 60, what each node's exporter did ("1" answered, "0" failed
# while its pod stayed, "." no exporter pod: the node not there, or not yet) and what kube-state-metrics counted
# of the exporter DaemonSet. The truth is the story's: the nodes whose GPUs stopped feeding data while they exist
# (a crash loop from minute 20 to 40). Both twins are judged on the same story each minute of the hour: the
# CloudWatch alarms over what the agent model publishes of it (CloudWatch evaluates every minute, over periods that
# end then), the rule by promtool: nothing before minute 20, the node by minute 30 and until 40, nothing from 46.

STEPS = FINAL // STEP
CRASH_LOOP_STEPS = "00000000" "11"  # CrashLoopBackOff at its 5-minute cap: answering 1 minute of every 5
THIRD = "ip-10-0-1-3"
SHARED = (Gpu(NODES[1], 1, "ml", "infer-2"), Gpu(NODES[1], 1, "ml", "infer-3"))  # with infer-1: 3 pods, one GPU


@dataclass(frozen=True)
class Story:
    name: str
    answering: dict[str, str]  # node -> one character per scrape
    desired: tuple[int, ...]  # the exporter DaemonSet's desired pods at each scrape
    available: tuple[int, ...]
    missing: tuple[str, ...]  # the truth: nodes whose GPUs exist and stopped feeding data
    shared: bool = False  # GPU 1 of the second node is shared by three pods (three copies of each of its series)


def _steps(*parts: tuple[int, str]) -> str:
    text = "".join(part * count for count, part in parts)
    return (text + text[-1] * STEPS)[:STEPS]


def _counts(answering: dict[str, str], present=lambda c: c != ".") -> tuple[int, ...]:
    return tuple(sum(present(p[k]) for p in answering.values()) for k in range(STEPS))


def _story(name: str, answering: dict[str, str], missing: tuple[str, ...] = (), **kw) -> Story:
    """Desired: the nodes with an exporter pod; available: those answering (a crash-looping pod is available while
    it runs, the minute it answers)."""
    return Story(name, answering, _counts(answering), _counts(answering, lambda c: c == "1"), missing, **kw)


HEALTHY = _steps((STEPS, "1"))
CRASHING = _steps((40, "1"), (4, CRASH_LOOP_STEPS))
STORIES = (
    _story("an exporter in a crash loop", {NODES[0]: HEALTHY, NODES[1]: CRASHING}, missing=NODES[1:]),
    _story("an exporter in a crash loop on a GPU three pods share", {NODES[0]: HEALTHY, NODES[1]: CRASHING},
           missing=NODES[1:], shared=True),
    _story("a rolling restart of the exporters", {NODES[0]: _steps((40, "1"), (3, "0"), (1, "1")),
                                                  NODES[1]: _steps((45, "1"), (3, "0"), (1, "1"))}),
    _story("a GPU node added mid-period", {**dict.fromkeys(NODES, HEALTHY), THIRD: _steps((47, "."), (2, "0"),
                                                                                             (1, "1"))}),
    # the second node goes in the first minute of the period ending at minute 30, a third node comes in the last
    # minute of the next one: two GPUs short in two periods running, each in one
    _story("a GPU node removed, another added in the next period", {
        NODES[0]: HEALTHY, NODES[1]: _steps((51, "1"), (1, ".")), THIRD: _steps((68, "."), (1, "1"))}),
)


def _payload(node: str, k: int, catalog, shared: bool) -> str:
    if node == THIRD:  # a node like the second one, its GPUs its own
        return payload(NODES[1], k, catalog).replace(NODES[1], THIRD)
    return payload(node, k, catalog, FLEET + SHARED if shared else FLEET)


def _story_points(project, files, story: Story) -> list:
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    scrapes_ = [Scrape(k * STEP, _payload(node, k, project.catalog, story.shared) if c == "1" else
                       EMPTY if c == "e" else "", target_labels(job, node))
                for node, steps in story.answering.items() for k, c in enumerate(steps) if c != "."]
    ksm = [kube_state.scrape(ksm_job, k * STEP, EXPORTER, d, a)
           for k, (d, a) in enumerate(zip(story.desired, story.available))]
    return _run_on_from_the_change(project, files, Agent(config, job, others=[ksm_job]), scrapes_ + ksm)


_BEFORE_THE_CHANGE: dict = {}  # (project, agent file, the scrapes before the change) -> (project, agent, datapoints)


def _run_on_from_the_change(project, files, agent, scrapes_: list) -> list:
    """What `agent` publishes of `scrapes_`. Most stories are the same until the change (minute 20): the agent that
    ran that part is kept once per project and those scrapes, and each story goes on from a copy of it. The scrapes
    before the change all come first in time, so the two runs take them in the order one run does (sorted by time,
    ties in the list's order): the same datapoints in the same order."""
    before = [s for s in scrapes_ if s.timestamp < CHANGE]
    key = (id(project), files[AGENT_FILE],
           tuple((s.timestamp, s.payload, tuple(s.target_labels.items())) for s in before))
    if key not in _BEFORE_THE_CHANGE:
        _BEFORE_THE_CHANGE[key] = (project, agent, agent.run(before))  # (the project kept: its id stays its own)
    _, ran, points = _BEFORE_THE_CHANGE[key]
    return points + copy.deepcopy(ran).run([s for s in scrapes_ if s.timestamp >= CHANGE])


@pytest.mark.parametrize("story", STORIES, ids=lambda s: s.name)
def test_cloudwatch_alarms_fire_on_the_stories_truth(generated, story):
    """A node whose exporter answers now and then is a contributor of the per-node alarm (its target's up), also
    when three pods share one of its GPUs; a rolling restart, a node added mid-period, and a node removed with
    another added in the next period are not missing data."""
    project, files = generated
    requests = _rule_alarms(files)
    read = {m["MetricStat"]["Metric"]["MetricName"] if "MetricStat" in m else cloudwatch_eval.parse(m["Expression"]).metric
            for r in requests for m in r.get("Metrics", []) if "MetricStat" in m or m["Expression"].startswith("SELECT")}
    read |= {r["MetricName"] for r in requests if "MetricName" in r}  # the agent alarm, a standard alarm
    points = [p for p in _story_points(project, files, story) if p.metric in read]
    for minute in range(1, FINAL // 60 + 1):
        fired = {name: sorted(dict(key)["node"] for key in keys)
                 for name, keys in _in_alarm(requests, points, minute * 60).items()}
        if story.missing and FIRED_BY <= minute < RECOVER // 60:
            assert fired == {PER_NODE_ALARM: sorted(story.missing)}, (story.name, minute, fired)
        elif not story.missing or minute <= CHANGE // 60 or minute >= CLEARED_BY:
            assert fired == {}, (story.name, minute, fired)


def _promtool_values(steps: str, value: str) -> str:
    """A series' values at each scrape: `value` where it answered, a staleness marker where it stopped, else none."""
    out, last = [], False
    for c in steps:
        live = c == "1"
        out.append(value if live else "stale" if last else "_")
        last = live
    return " ".join(out)


def _up_values(steps: str) -> str:
    out, last = [], False
    for c in steps:
        out.append("1" if c == "1" else "0" if c == "0" else "stale" if last else "_")
        last = c != "."
    return " ".join(out)


REASON = "a node's exporter brought no GPU data most of the time"


def _data_missing_rule(files, folder) -> dict:
    """The generated rules written to folder/rules.yaml for promtool; the data-missing rule."""
    (folder / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    return next(r for g in rule_groups(files["prometheus/rules.yaml"].decode()) for r in g["rules"]
                if r.get("alert") == "GpudashGpuDataMissing")


def _ksm_series(desired: str, available: str, length: int, updated: str | None = None) -> list[dict]:
    """kube-state-metrics' view of the operator's exporter DaemonSet: promtool values of its counts (updated: the
    nodes running its current template; none: the series is not there)."""
    ksm = f'job="kube-state-metrics",instance="10.0.2.9:8080",{_labels(EXPORTER)}'
    return [{"series": f"{kube_state.DESIRED}{{{ksm}}}", "values": desired},
            {"series": f"{kube_state.AVAILABLE}{{{ksm}}}", "values": available},
            *([{"series": f"{kube_state.UPDATED}{{{ksm}}}", "values": updated}] if updated else []),
            {"series": f"{kube_state.LABELS}{{{ksm},{_labels(kube_state.OPERATOR_LABELS)}}}",
             "values": f"1x{length - 1}"}]


def node_labels(target: dict[str, str]) -> dict[str, str]:
    """The labels of the rule's alert on a node whose exporter brought no GPU data: its targets' labels but each exporter
    pod's own (the count is the node's, whatever pod answered: data_missing.OWN_POD_LABELS)."""
    return {k: v for k, v in target.items() if k not in ("exporter_pod", "pod", "instance")}


def _story_target(node: str) -> dict[str, str]:
    """The labels of a node's exporter target in the stories."""
    return _target(node, f"nvidia-dcgm-exporter-{node[-1]}") | {"instance": f"10.0.1.{node[-1]}:9400"}


def _no_data_alert(rule: dict, node: str) -> dict:
    """The alert the rule raises for a node's exporter target that brought no GPU data most of the time."""
    return {"exp_labels": {**rule["labels"], **node_labels(_story_target(node)), "reason": REASON},
            "exp_annotations": {**rule["annotations"],
                                "summary": rule["annotations"]["summary"].replace("{{ $labels.reason }}", REASON)}}


def test_the_rule_fires_on_the_stories_truth(generated, tmp_path):
    """The Prometheus twin over the same stories: the crash-looping node's target fires; the rest fire nothing."""
    _, files = generated
    rule = _data_missing_rule(files, tmp_path)
    tests = []
    for story in STORIES:
        series = _ksm_series(" ".join(map(str, story.desired)), " ".join(map(str, story.available)), STEPS)
        for node, steps in story.answering.items():
            target = _story_target(node)
            series.append({"series": f"up{{{_labels(target)}}}", "values": _up_values(steps)})
            on_node = [g for g in (FLEET + SHARED if story.shared else FLEET) if g.node == (NODES[1] if node == THIRD
                                                                                           else node)]
            for gpu in on_node:
                pod = f',namespace="{gpu.namespace}",pod="{gpu.pod}"' if gpu.held else ""
                series.append({"series": f'DCGM_FI_DEV_GPU_TEMP{{{_labels(target)},gpu="{gpu.index}"{pod}}}',
                               "values": _promtool_values(steps, "60")})
        expected = [_no_data_alert(rule, node) for node in story.missing]
        checks = [{"eval_time": f"{m}m", "alertname": rule["alert"],
                   "exp_alerts": expected if FIRED_BY <= m < RECOVER // 60 else []}
                  for m in range(1, FINAL // 60 + 1)
                  if not story.missing or not (CHANGE // 60 < m < FIRED_BY or RECOVER // 60 <= m < CLEARED_BY)]
        tests.append({"name": story.name, "interval": "30s", "input_series": series, "alert_rule_test": checks})
    _rules_apart(files, tmp_path, "stories_test.yaml", tests)


def test_on_the_classic_pipeline_the_per_gpu_alarm_counts_each_series_as_its_description_says(tmp_path):
    """agent.pipeline: classic merges nothing, so the per-GPU alarm counts the data-missing field, one observation per
    series of a GPU and scrape: a crash loop on whole GPUs fires for each; the GPU three pods share writes three
    series, 3 x 2 = 6 observations a period against a threshold of 5, and is not seen - the limit its description
    states (seen only below 1/(2k) of its scrapes)."""
    (tmp_path / "gpudash.yaml").write_text("agent:\n  pipeline: classic\n")
    project = load_project(tmp_path / "gpudash.yaml")
    files = encode(build(project))
    requests = _rule_alarms(files, PER_GPU_ALARM)
    (per_gpu,) = [r for r in requests if r["AlarmName"] == PER_GPU_ALARM]
    assert "below 1/(2k) of its scrapes" in per_gpu["AlarmDescription"]
    story = next(s for s in STORIES if s.shared)
    points = _story_points(project, files, story)
    for minute in range(1, FINAL // 60 + 1):  # the crash loop from minute 20 to 40, each minute of the hour
        fired = {name: sorted((dict(key)["node"], dict(key)["gpu"]) for key in keys)
                 for name, keys in _in_alarm(requests, points, minute * 60).items()}
        if FIRED_BY <= minute < RECOVER // 60:
            assert fired == {PER_GPU_ALARM: [(NODES[1], "0")]}, (minute, fired)
        elif minute <= CHANGE // 60 or minute >= CLEARED_BY:
            assert fired == {}, (minute, fired)


# --- a node's scrapes judged over one window, the same on both sides --------------------------------------------
#
# A mean is not monotone: "below half in each of two 5-minute periods" (CloudWatch's two datapoints, as the per-node
# alarm was) and "below half over 15 minutes, kept for 5" (the rule's `for`, as its branch was) fire on different
# patterns: an outage of 6 minutes straddling two periods breached both halves and never the 15-minute mean; down
# 40%, 70%, 40% of three periods breached neither. Both sides now count one node's scrapes that brought no GPU data
# ("0" failed, "e" answered without a DCGM series) over the rule's window, 10 minutes: more than 10 of the 20 fires.

WINDOW_STEPS, WINDOW_LIMIT = 20, 10  # the window's scrapes at 30 s; more bad ones than this fire


def _spread(bad: int, of: int = 10, kind: str = "0") -> str:
    """`of` scrapes with `bad` of them spread among the rest (failed: "0", empty: "e")."""
    return "".join(kind if (i * bad) // of != ((i + 1) * bad) // of else "1" for i in range(of))


WINDOW_STEPS_TOTAL = 120  # 60 minutes
PATTERNS = {
    "down 40%, 70%, 40% of three periods": "1" * 40 + _spread(4) + _spread(7) + _spread(4) + "1" * 50,
    "down 6 minutes straddling two periods": "1" * 46 + "0" * 12 + "1" * 62,
    "down 5 minutes, half the window": "1" * 40 + "0" * 10 + "1" * 70,
    "down 70% of one period, 40% of the next": "1" * 40 + _spread(7) + _spread(4) + "1" * 60,
    "crash loop for 20 minutes, then healthy": "1" * 40 + ("0" * 8 + "11") * 4 + "1" * 40,
    "answering without DCGM series for 15 minutes, then healthy": "1" * 40 + "e" * 30 + "1" * 50,
    "half failed, half empty for 8 minutes": "1" * 40 + "0e" * 8 + "1" * 64,
}


def _bad_in_window(steps: str, minute: int) -> int:
    """The truth: the node's scrapes of the last 10 minutes ((t - 10 min, t]) that brought no GPU data."""
    last = minute * 60 // STEP
    return sum(c in "0e" for c in steps[max(0, last - WINDOW_STEPS + 1):last + 1])


def _pattern_story(name: str, steps: str) -> Story:
    assert len(steps) == WINDOW_STEPS_TOTAL, name
    answering = {NODES[0]: "1" * WINDOW_STEPS_TOTAL, NODES[1]: steps}
    return Story(name, answering, (2,) * WINDOW_STEPS_TOTAL, (2,) * WINDOW_STEPS_TOTAL, ())


@pytest.mark.parametrize("name", PATTERNS)
def test_the_per_node_alarm_counts_a_nodes_scrapes_over_one_window(generated, name):
    """Each minute, the per-node alarm is in ALARM for the node exactly when more than 10 of its scrapes of the last
    10 minutes brought no GPU data (evaluated a second after the minute, so its window [t - 10 min, t) holds the
    scrapes the rule's (t - 10 min, t] holds), and the cluster's alarm stays OK (the pod stays available)."""
    project, files = generated
    requests = _rule_alarms(files)
    steps = PATTERNS[name]
    points = _story_points(project, files, _pattern_story(name, steps))
    for minute in range(1, WINDOW_STEPS_TOTAL // 2):
        fired = {n: sorted(dict(key)["node"] for key in keys)
                 for n, keys in _in_alarm(requests, points, minute * 60 + 1).items()}
        expected = {PER_NODE_ALARM: [NODES[1]]} if _bad_in_window(steps, minute) > WINDOW_LIMIT else {}
        assert fired == expected, (name, minute, _bad_in_window(steps, minute))


def test_the_rule_counts_a_nodes_scrapes_over_the_same_window(generated, tmp_path):
    """The rule over the same patterns, each minute: the node's target fires exactly when its alarm does. The patterns
    run in one promtool group, each pattern's second node under its own name, address and pod, the first node's and
    kube-state-metrics' series (the same in every pattern) once: the per-target branch judges each target by its own
    series, and the cluster's branches read kube-state-metrics' series and whether any GPU reported (the first node
    always does), so no pattern changes another's alerts; promtool evaluates the rule once per minute for them all
    instead of once per pattern. Should the group fail, each pattern runs alone for its own message."""
    from tests.support.promtool_rules import promtool_test

    _, files = generated
    rule = _data_missing_rule(files, tmp_path)
    ksm = _ksm_series(f"2x{WINDOW_STEPS_TOTAL - 1}", f"2x{WINDOW_STEPS_TOTAL - 1}", WINDOW_STEPS_TOTAL)

    def node_series(target: dict[str, str], node_steps: str) -> list[dict]:
        labels = _labels(target)
        return [{"series": f"up{{{labels}}}", "values": " ".join("0" if c == "0" else "1" for c in node_steps)},
                {"series": f"{SAMPLES}{{{labels}}}", "values": " ".join("4" if c == "1" else "0" for c in node_steps)},
                {"series": f'DCGM_FI_DEV_GPU_TEMP{{{labels},gpu="0"}}', "values": _promtool_values(node_steps, "60")}]

    def fired(target: dict[str, str]) -> dict:
        alert = _no_data_alert(rule, NODES[1])
        return {**alert, "exp_labels": {**alert["exp_labels"], **node_labels(target)}}
    healthy = node_series(_story_target(NODES[0]), "1" * WINDOW_STEPS_TOTAL)
    minutes = range(1, WINDOW_STEPS_TOTAL // 2)
    alone = [{"name": name, "interval": "30s", "input_series": ksm + healthy + node_series(_story_target(NODES[1]), steps),
              "alert_rule_test": [{"eval_time": f"{m}m", "alertname": rule["alert"],
                                   "exp_alerts": [fired(_story_target(NODES[1]))]
                                   if _bad_in_window(steps, m) > WINDOW_LIMIT else []} for m in minutes]}
             for name, steps in PATTERNS.items()]
    targets = {name: {k: f"{v}-{i}" if k in ("node", "instance", "exporter_pod") else v
                      for k, v in _story_target(NODES[1]).items()} for i, name in enumerate(PATTERNS)}
    together = {"name": "every pattern", "interval": "30s",
                "input_series": ksm + healthy + [s for name, steps in PATTERNS.items()
                                                 for s in node_series(targets[name], steps)],
                "alert_rule_test": [{"eval_time": f"{m}m", "alertname": rule["alert"],
                                     "exp_alerts": [fired(targets[name]) for name, steps in PATTERNS.items()
                                                    if _bad_in_window(steps, m) > WINDOW_LIMIT]} for m in minutes]}
    try:
        promtool_test(tmp_path, "window_together_test.yaml", [together], evaluation_interval="30s")
    except AssertionError:
        promtool_test(tmp_path, "window_test.yaml", alone, evaluation_interval="30s")
        raise


# --- a long rollout of the exporter DaemonSet ----------------------------------------------------------------------
#
# 20 GPU nodes, the DaemonSet's RollingUpdate with maxUnavailable 1: from minute 10 the controller deletes one old pod,
# the node's target is gone for a minute until the new pod answers, and it deletes the next old pod as soon as the
# new one is available - so kube-state-metrics, scraped every 30 s, reads 19 of 20 available for 20 minutes running.
# Each node's GPU data is missing a minute once: neither form may fire.

ROLLOUT_NODES = tuple(f"ip-10-0-3-{i + 1}" for i in range(20))
ROLLOUT_STEPS, ROLLOUT_START = 80, 20  # 40 minutes; the rollout from minute 10 to 30
ROLLOUT = {node: "1" * (ROLLOUT_START + 2 * i) + ".." + "1" * (ROLLOUT_STEPS - ROLLOUT_START - 2 * i - 2)
           for i, node in enumerate(ROLLOUT_NODES)}
ROLLOUT_AVAILABLE = tuple(19 if ROLLOUT_START <= k < ROLLOUT_START + 2 * len(ROLLOUT_NODES) else 20
                          for k in range(ROLLOUT_STEPS))
# the nodes running the new template: 0 when the rollout starts, one more as each old pod is replaced
ROLLOUT_UPDATED = tuple(min(20, max(0, (k - ROLLOUT_START) // 2 + 1)) if k >= ROLLOUT_START else 20
                        for k in range(ROLLOUT_STEPS))


def _one_gpu_page(node: str) -> str:
    """An exporter page of one GPU's temperature (the rollout's alarms read no other field)."""
    return ("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
            f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-{node}-0",device="nvidia0",modelName="NVIDIA A10G"}} 60\n')


_ROLLOUT_POINTS: dict[tuple, list] = {}  # (agent file, story) -> what the agent published of it


def _rollout_points(files, answering: dict[str, str], available: tuple, updated: tuple,
                    desired: tuple | None = None) -> list:
    """What the agent publishes of one-GPU exporters answering as `answering` says (per 30 s step) and
    kube-state-metrics' counts of their DaemonSet (desired: every node unless given). Settings that change the
    alarms but not the agent's configuration publish the same: each story is run once per agent file (callers only
    read the list)."""
    desired = desired or (len(answering),) * len(available)
    key = (files[AGENT_FILE], tuple(answering.items()), tuple(available), tuple(updated), tuple(desired))
    if key not in _ROLLOUT_POINTS:
        _ROLLOUT_POINTS[key] = _run_rollout(files, answering, available, updated, desired)
    return _ROLLOUT_POINTS[key]


def _run_rollout(files, answering: dict[str, str], available: tuple, updated: tuple, desired: tuple) -> list:
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    scrapes_ = [Scrape(k * STEP, _one_gpu_page(node), target_labels(job, node))
                for node, steps in answering.items() for k, c in enumerate(steps) if c == "1"]
    scrapes_ += [kube_state.scrape(ksm_job, k * STEP, EXPORTER, d, a, u)
                 for k, (d, a, u) in enumerate(zip(desired, available, updated))]
    return Agent(config, job, others=[ksm_job]).run(scrapes_)


def test_a_long_rollout_of_the_exporters_fires_no_cloudwatch_alarm(generated):
    project, files = generated
    points = _rollout_points(files, ROLLOUT, ROLLOUT_AVAILABLE, ROLLOUT_UPDATED)
    requests = _rule_alarms(files)
    fired = {minute: _in_alarm(requests, points, minute * 60) for minute in range(1, ROLLOUT_STEPS // 2 + 1)}
    assert {m: f for m, f in fired.items() if f} == {}


def test_a_long_rollout_of_the_exporters_fires_no_rule(generated, tmp_path):
    from tests.support.promtool_rules import promtool_test

    _, files = generated
    rule = _data_missing_rule(files, tmp_path)
    series = _ksm_series(f"{len(ROLLOUT_NODES)}x{ROLLOUT_STEPS - 1}", " ".join(map(str, ROLLOUT_AVAILABLE)),
                         ROLLOUT_STEPS, " ".join(map(str, ROLLOUT_UPDATED)))
    for i, (node, steps) in enumerate(ROLLOUT.items()):
        cut = steps.index(".")
        for pod, part in ((f"ex-{i}", steps[:cut] + "." * (len(steps) - cut)),
                          (f"ex-{i}-new", "." * (cut + 2) + steps[cut + 2:])):
            target = _labels(_target(node, pod))
            series += [{"series": f"up{{{target}}}", "values": _up_values(part)},
                       {"series": f"{SAMPLES}{{{target}}}", "values": _promtool_values(part, "1")},
                       {"series": f'DCGM_FI_DEV_GPU_TEMP{{{target},gpu="0"}}', "values": _promtool_values(part, "60")}]
    promtool_test(tmp_path, "rollout_test.yaml", [
        {"name": "rollout", "interval": "30s", "input_series": series,
         "alert_rule_test": [{"eval_time": f"{m}m", "alertname": rule["alert"], "exp_alerts": []}
                             for m in range(1, ROLLOUT_STEPS // 2 + 1)]}], evaluation_interval="30s")


def test_a_longer_window_is_the_same_on_both_forms_and_in_the_descriptions(tmp_path):
    """A data-missing definition judged over three periods: the per-node alarm counts over 15 minutes (more than 15
    of 30 scrapes), the rule's branch over the same 15 minutes, and the descriptions say so, as classic's per-GPU
    alarm says three periods: nothing says two."""
    from dataclasses import replace

    from generator.render.alarms import cloudwatch_alarms, prometheus_rules

    for pipeline in ("otel", "classic"):
        (tmp_path / "gpudash.yaml").write_text(f"agent:\n  pipeline: {pipeline}\n")
        project = load_project(tmp_path / "gpudash.yaml")
        alarms = tuple(replace(a, evaluation_periods=3, datapoints_to_alarm=3) if a.absent else a
                       for a in project.alarms)
        requests = {i["Request"]["AlarmName"]: i["Request"]
                    for i in cloudwatch_alarms(alarms, project.settings, project.catalog)}
        if pipeline == "otel":
            node = requests[PER_NODE_ALARM]
            assert (node["Metrics"][0]["Period"], node["EvaluationPeriods"], node["Threshold"]) == (900, 1, 15.0)
            assert "more than 15 of its 30 scrapes over the last 15 minutes" in node["AlarmDescription"]
            (first, second) = [r for g in prometheus_rules(alarms, project.catalog, project.settings)["groups"]
                               for r in g["rules"] if r.get("alert") == "GpudashGpuDataMissing"]
            assert "[899999ms:5s])) > 15 and" in second["expr"] and "reason" in second["labels"]
            # the cluster's branches over each of the three periods, as CloudWatch's metric math: no `for`
            assert "for" not in first and "for" not in second
            assert "[5m] offset 10m" in first["expr"] and "offset 15m" not in first["expr"]
        else:
            gpu = requests[PER_GPU_ALARM]
            assert gpu["EvaluationPeriods"] == 3 and "in each of three periods running" in gpu["AlarmDescription"]
        assert not any("two periods" in r["AlarmDescription"] for r in requests.values()
                       if r["AlarmName"].startswith(ALARM.removesuffix("-critical")))


# --- an exporter lost on one node while a rollout replaces the others -----------------------------------------------
#
# 40 GPU nodes; from minute 10 a rollout replaces the other 39, one a minute (each target gone a minute); at minute 12
# the exporter pod of the last node goes and its replacement never gets a scrape target (stuck Pending): the rollout
# goes on (a DaemonSet whose maxUnavailable 2 leaves room for it, one at a time), the updated count moves every period,
# and 2 pods are missing all the time, more than the settings' exporter.max_unavailable (the default 1). The node's GPU data is missing from minute 12 for good: both forms fire from about 11 minutes later on,
# though the rollout runs until minute 49.

LOST_NODES = tuple(f"ip-10-0-4-{i + 1}" for i in range(40))
LOST_STEPS, LOST_START, LOST_AT = 160, 20, 24  # 80 minutes at 30 s; the rollout from minute 10, the pod lost at 12
LOST = {**{node: "1" * (LOST_START + 2 * i) + ".." + "1" * (LOST_STEPS - LOST_START - 2 * i - 2)
           for i, node in enumerate(LOST_NODES[:-1])},
        LOST_NODES[-1]: "1" * LOST_AT + "." * (LOST_STEPS - LOST_AT)}
LOST_AVAILABLE = tuple(sum(s[k] == "1" for s in LOST.values()) for k in range(LOST_STEPS))
# the nodes running the new template: the replaced ones, and the lost node's new (Pending) pod from when it was made
LOST_UPDATED = tuple(40 if k < LOST_START else min(39, (k - LOST_START) // 2 + 1) + (k >= LOST_AT)
                     for k in range(LOST_STEPS))
LOST_ROLLOUT_END = (LOST_START + 2 * 38 + 2) // 2  # minute 49: the last node replaced
# Minutes judged: quiet until the pod is lost; in alarm from 11 minutes after it until the rollout ends, and from 11
# minutes after the rollout's end on. Between, the window holds the rollout's last moves and one pod missing, which
# reads as the rollout's own (the stated limit): not judged.
LOST_JUDGED = {**{m: False for m in range(1, LOST_AT // 2 + 1)},
               **{m: True for m in range(LOST_AT // 2 + 11, LOST_ROLLOUT_END)},
               **{m: True for m in range(LOST_ROLLOUT_END + 11, LOST_STEPS // 2 + 1)}}


def test_an_exporter_lost_during_a_rollout_elsewhere_fires_the_cloudwatch_alarm(generated):
    project, files = generated
    points = _rollout_points(files, LOST, LOST_AVAILABLE, LOST_UPDATED)
    requests = _rule_alarms(files)
    wrong = [m for m, fires in LOST_JUDGED.items() if bool(_in_alarm(requests, points, m * 60)) != fires]
    assert wrong == []


def _rule_fired_minutes(files, folder, answering: dict[str, str], desired: tuple, available: tuple,
                        updated: tuple) -> set[int]:
    """The minutes at which promtool finds the data-missing rule firing over the same story as _rollout_points
    (a target whose exporter answers again after a gap is a new pod's: a new target)."""
    rule = _data_missing_rule(files, folder)
    steps = len(available)
    series = _ksm_series(" ".join(map(str, desired)), " ".join(map(str, available)), steps,
                         " ".join(map(str, updated)))
    for i, (node, line) in enumerate(answering.items()):
        cut = line.index(".") if "." in line else len(line)
        parts = [(f"ex-{i}", line[:cut] + "." * (len(line) - cut))] if cut else []
        if "1" in line[cut:]:
            start = line.index("1", cut)
            parts.append((f"ex-{i}-new", "." * start + line[start:]))
        for pod, part in parts:
            target = _labels(_target(node, pod))
            series += [{"series": f"up{{{target}}}", "values": _up_values(part)},
                       {"series": f"{SAMPLES}{{{target}}}", "values": _promtool_values(part, "1")},
                       {"series": f'DCGM_FI_DEV_GPU_TEMP{{{target},gpu="0"}}', "values": _promtool_values(part, "60")}]
    return _promtool_fired(folder, rule, series, steps)


def _promtool_fired(folder, rule: dict, series: list[dict], steps: int) -> set[int]:
    """The whole minutes of a story of `steps` 30 s steps (promtool's `input_series`) at which `rule` fires."""
    import subprocess

    from tests.support.prometheus_server import binary

    tests = [{"name": "story", "interval": "30s", "input_series": series,
              "alert_rule_test": [{"eval_time": f"{m}m", "alertname": rule["alert"], "exp_alerts": []}
                                  for m in range(1, steps // 2 + 1)]}]
    (folder / "story_test.yaml").write_text(json.dumps({
        "rule_files": [judged_rules(folder, "story_test.yaml", {rule["alert"]})],
        "evaluation_interval": evaluated_at(tests, "30s"), "tests": tests}))
    result = subprocess.run([binary("promtool"), "test", "rules", "story_test.yaml"], capture_output=True, text=True,
                            cwd=folder)
    fired = set()  # every minute judged expects no alert: promtool names each minute one fired at
    for block in (result.stdout + result.stderr).split(f"alertname: {rule['alert']}, time: ")[1:]:
        hours, mins = re.match(r"(?:(\d+)h)?(?:(\d+)m)?", block).groups()
        if "Labels:" in block.split("got:", 1)[1]:
            fired.add(int(hours or 0) * 60 + int(mins or 0))
    assert (result.returncode != 0) == bool(fired), result.stdout + result.stderr
    return fired


def test_an_exporter_lost_during_a_rollout_elsewhere_fires_the_rule(generated, tmp_path):
    _, files = generated
    fired = _rule_fired_minutes(files, tmp_path, LOST, (len(LOST_NODES),) * LOST_STEPS, LOST_AVAILABLE, LOST_UPDATED)
    wrong = [m for m, fires in LOST_JUDGED.items() if (m in fired) != fires]
    assert wrong == [], sorted(fired)


# A known gap of both forms: GPU nodes added every few minutes. A node counts in the desired count a minute before its
# exporter is available, and the updated count rises with it, so each period reads as a rollout or as a node joining
# (the least desired against the most available). An exporter lost on one node (no scrape target) while the
# autoscaler adds a GPU node every 8 minutes is not seen by the rule, and the CloudWatch alarm is in ALARM only at
# single minutes: the two forms disagree, and neither pages as it should. Pinned as stated in the README.

CHURN_NODES = LOST_NODES[:8]
CHURN_STEPS, CHURN_LOST, CHURN_EVERY = 120, 24, 16  # 60 minutes; the pod lost at minute 12; a node every 8 minutes
CHURN_JOINS = tuple(range(20, CHURN_STEPS, CHURN_EVERY))
CHURN = {**{node: "1" * CHURN_STEPS for node in CHURN_NODES[:-1]},
         CHURN_NODES[-1]: "1" * CHURN_LOST + "." * (CHURN_STEPS - CHURN_LOST),
         **{f"ip-10-0-5-{j + 1}": "." * (k + 2) + "1" * (CHURN_STEPS - k - 2) for j, k in enumerate(CHURN_JOINS)}}
CHURN_DESIRED = tuple(len(CHURN_NODES) + sum(k >= j for j in CHURN_JOINS) for k in range(CHURN_STEPS))
CHURN_AVAILABLE = tuple(sum(line[k] == "1" for line in CHURN.values()) for k in range(CHURN_STEPS))


def test_gpu_nodes_added_every_few_minutes_hide_an_exporter_lost_on_both_forms(generated, tmp_path):
    _, files = generated
    points = _rollout_points(files, CHURN, CHURN_AVAILABLE, CHURN_DESIRED, CHURN_DESIRED)
    requests = _rule_alarms(files)
    alarmed = [m for m in range(1, CHURN_STEPS // 2 + 1) if _in_alarm(requests, points, m * 60)]
    assert all(m > CHURN_LOST // 2 for m in alarmed)
    assert len(alarmed) < (CHURN_STEPS // 2 - CHURN_LOST // 2) // 4, alarmed  # in ALARM under a quarter of the time
    fired = _rule_fired_minutes(files, tmp_path, CHURN, CHURN_DESIRED, CHURN_AVAILABLE, CHURN_DESIRED)
    assert fired == set()


# --- the agent, or kube-state-metrics, up a minute of every five ------------------------------------------------
#
# CrashLoopBackOff at its 5-minute cap from minute 20 to 40: running (or answering) one minute of every five. Every
# period holds an observation of each series, so the cluster's alarm passes it; the agent alarm counts the agent's
# own scrapes of kube-state-metrics (the datapoints of the desired count it publishes): fewer than half a period's
# in each of three periods running (AGENT_PERIODS: a pod read at every scrape is short in its first and last period
# only). The truth each minute: each of the three periods that end then holds some of those scrapes and fewer than
# half (a period with none is the agent stopped or not yet started: the cluster's alarm's, or nothing).

def _up_a_minute_in_five(k: int) -> bool:
    """30 s steps: always before minute 20 and from minute 40, then one minute of every five."""
    return not 40 <= k < 80 or (k - 40) % 10 >= 8


def _read_in_under_half(read, minute: int, periods: int = AGENT_PERIODS, shift: int = 0) -> bool:
    """The truth: each of the `periods` 5-minute periods that end at `minute` holds fewer than half its 10 scrapes
    that read kube-state-metrics, and at least one (read(k): the scrape at step k did). A period holds the scrape at
    its start and not the one at its end, as CloudWatch's; `shift` 1: the one at its end and not at its start, as a
    PromQL range (the stories scrape at whole minutes: a scrape never lands on a period's edge in a real fleet)."""
    ends = [minute * 2 - 10 * p + shift for p in range(periods)]
    return all(0 < sum(read(k) for k in range(end - 10, end)) < 5 for end in ends)


AGENT_STEPS = 120


def test_a_crash_looping_agent_fires_the_agent_alarm(generated):
    """The CloudWatch agent in a crash loop from minute 20 to 40 on four GPU nodes: most of every GPU's data never
    reaches CloudWatch. The agent alarm is in ALARM exactly at the minutes of the truth (from minute 33, three periods
    each holding one minute of scrapes, until minute 41), and it is the only alarm that fires; an agent that starts
    (the story's first minutes: nothing before 0) or comes back fires nothing. Prometheus does not go through the
    agent: not its business."""
    _, files = generated
    answering = {node: "".join("1" if _up_a_minute_in_five(k) else "." for k in range(AGENT_STEPS))
                 for node in LOST_NODES[:4]}
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    scrapes_ = [Scrape(k * STEP, _one_gpu_page(node), target_labels(job, node))
                for node, line in answering.items() for k, c in enumerate(line) if c == "1"]
    scrapes_ += [kube_state.scrape(ksm_job, k * STEP, EXPORTER, 4, 4, 4) for k in range(AGENT_STEPS)
                 if _up_a_minute_in_five(k)]
    points = Agent(config, job, others=[ksm_job]).run(scrapes_)
    requests = _rule_alarms(files)
    truth = {m for m in range(1, AGENT_STEPS // 2 + 1) if _read_in_under_half(_up_a_minute_in_five, m)}
    assert min(truth) == 33 and max(truth) == 41
    fired = {m: _in_alarm(requests, points, m * 60) for m in range(1, AGENT_STEPS // 2 + 1)}
    assert {m for m, f in fired.items() if f} == truth
    assert all(set(f) == {AGENT_ALARM} for f in fired.values() if f)


def _reporting(nodes) -> list[dict]:
    """promtool's input series of one-GPU `nodes` whose exporters answer every scrape of AGENT_STEPS with DCGM data."""
    series = []
    for node in nodes:
        target = _labels(_story_target(node))
        series += [{"series": f"up{{{target}}}", "values": f"1x{AGENT_STEPS - 1}"},
                   {"series": f"{SAMPLES}{{{target}}}", "values": f"1x{AGENT_STEPS - 1}"},
                   {"series": f'DCGM_FI_DEV_GPU_TEMP{{{target},gpu="0"}}', "values": f"60x{AGENT_STEPS - 1}"}]
    return series


def test_kube_state_metrics_answering_a_minute_in_five_fires_both_forms_at_the_same_minutes(generated, tmp_path):
    """kube-state-metrics in a crash loop from minute 20 to 40 (answering one minute of every five), the agent and
    Prometheus running: the agent alarm counts the agent's scrapes of it that brought its series, the rule counts its
    target's `up`; both fire at the minutes of the truth, nothing else fires."""
    from tests.support.promtool_rules import promtool_test

    _, files = generated
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    nodes = LOST_NODES[:4]
    scrapes_ = [Scrape(k * STEP, _one_gpu_page(node), target_labels(job, node))
                for node in nodes for k in range(AGENT_STEPS)]
    scrapes_ += [kube_state.scrape(ksm_job, k * STEP, EXPORTER, 4, 4, 4) if _up_a_minute_in_five(k) else
                 Scrape(k * STEP, "", kube_state.target_labels(ksm_job)) for k in range(AGENT_STEPS)]
    points = Agent(config, job, others=[ksm_job]).run(scrapes_)
    requests = _rule_alarms(files)
    truth = {m for m in range(1, AGENT_STEPS // 2 + 1) if _read_in_under_half(_up_a_minute_in_five, m)}
    # judged: the minutes whose truth does not depend on the side of a period's edge a scrape there falls (41 is not)
    judged = {m for m in range(1, AGENT_STEPS // 2 + 1) if (m in truth) == _read_in_under_half(_up_a_minute_in_five, m,
                                                                                                shift=1)}
    assert len(judged) == AGENT_STEPS // 2 - 1
    alarmed = {m: _in_alarm(requests, points, m * 60) for m in judged}
    assert {m for m, f in alarmed.items() if f} == truth & judged
    assert all(set(f) == {AGENT_ALARM} for f in alarmed.values() if f)

    rule = _data_missing_rule(files, tmp_path)
    ksm_target = {"job": "kube-state-metrics", "instance": "10.0.2.9:8080"}
    answered = [_up_a_minute_in_five(k) for k in range(AGENT_STEPS)]

    def when_answered(value: str) -> str:
        return " ".join(value if a else "stale" if k and answered[k - 1] else "_" for k, a in enumerate(answered))

    ksm = f'{_labels(ksm_target)},{_labels(EXPORTER)}'
    series = [{"series": f"up{{{_labels(ksm_target)}}}",
               "values": " ".join("1" if a else "0" for a in answered)},
              *({"series": f"{metric}{{{ksm}}}", "values": when_answered("4")}
                for metric in (kube_state.DESIRED, kube_state.AVAILABLE, kube_state.UPDATED)),
              {"series": f"{kube_state.LABELS}{{{ksm},{_labels(kube_state.OPERATOR_LABELS)}}}",
               "values": when_answered("1")}]
    series += _reporting(nodes)
    reason = "kube-state-metrics answered under half its scrapes"
    fires = [{"exp_labels": {**rule["labels"], **ksm_target, "reason": reason},
              "exp_annotations": {**rule["annotations"],
                                  "summary": rule["annotations"]["summary"].replace("{{ $labels.reason }}", reason)}}]
    promtool_test(tmp_path, "ksm_crash_loop_test.yaml", [
        {"name": "kube-state-metrics in a crash loop", "interval": "30s", "input_series": series,
         "alert_rule_test": [{"eval_time": f"{m}m", "alertname": rule["alert"], "exp_alerts": fires if m in truth else []}
                             for m in sorted(judged)]}], evaluation_interval="30s")


# --- a rollout's move and a brief recovery in different periods ----------------------------------------------------
#
# 10 GPU nodes; from minute 5 the exporter pods of two are gone (no scrape target: Pending) for good, but for one
# moment at minute 27.5 one of them answers and is available; at minute 23.5 a new pod template is applied (the
# updated count drops to 0: a rollout that cannot progress with two pods unavailable). Each 5-minute period holds two
# pods missing all period (a shortfall no rollout keeps) or one missing and no move, so it breaches, unless one
# period holds both the move and the recovery: CloudWatch alarms at minute 31 (the move in [21, 26), the recovery in
# [26, 31)) and at every minute whose two periods split the two moments so. A rule that held one condition for 5
# minutes (`for`) was reset by the windows holding both and fired minutes later.

SPLIT_NODES = tuple(f"ip-10-0-6-{i + 1}" for i in range(10))
SPLIT_STEPS, SPLIT_DOWN, SPLIT_MOVE, SPLIT_BACK = 90, 10, 47, 55  # 45 minutes; down at 5, moved at 23.5, back at 27.5
SPLIT = {**{node: "1" * SPLIT_STEPS for node in SPLIT_NODES[:-2]},
         SPLIT_NODES[-2]: "1" * SPLIT_DOWN + "." * (SPLIT_STEPS - SPLIT_DOWN),
         SPLIT_NODES[-1]: "1" * SPLIT_DOWN + "." * (SPLIT_BACK - SPLIT_DOWN) + "1" + "." * (SPLIT_STEPS - SPLIT_BACK - 1)}
SPLIT_AVAILABLE = tuple(sum(line[k] == "1" for line in SPLIT.values()) for k in range(SPLIT_STEPS))
SPLIT_UPDATED = tuple(len(SPLIT_NODES) if k < SPLIT_MOVE else 0 for k in range(SPLIT_STEPS))
# Minutes judged: quiet until a whole period has two pods missing; in alarm from then on, but at the two minutes one
# of whose periods starts at minute 23 (28 and 33): whether that period sees the move depends on which side of its
# start the sample at exactly 23:00 falls (CloudWatch's periods hold their start, a PromQL range does not): not judged.
SPLIT_JUDGED = {**{m: False for m in range(1, SPLIT_DOWN // 2 + 10)},
                **{m: True for m in range(SPLIT_DOWN // 2 + 11, SPLIT_STEPS // 2 + 1) if m not in (28, 33)}}


def test_a_rollouts_move_and_a_brief_recovery_in_different_periods_fire_both_forms_at_once(generated, tmp_path):
    _, files = generated
    points = _rollout_points(files, SPLIT, SPLIT_AVAILABLE, SPLIT_UPDATED)
    requests = _rule_alarms(files)
    alarmed = {m for m in range(1, SPLIT_STEPS // 2 + 1) if _in_alarm(requests, points, m * 60)}
    fired = _rule_fired_minutes(files, tmp_path, SPLIT, (len(SPLIT_NODES),) * SPLIT_STEPS, SPLIT_AVAILABLE,
                                SPLIT_UPDATED)
    assert 31 in alarmed and 31 in fired  # the move 7 minutes back, the recovery 3 minutes back: two periods
    assert [m for m, fires in SPLIT_JUDGED.items() if (m in alarmed) != fires] == [], sorted(alarmed)
    assert [m for m, fires in SPLIT_JUDGED.items() if (m in fired) != fires] == [], sorted(fired)


# --- a rollout that keeps several exporters unavailable (maxUnavailable above 1) -------------------------------------
#
# kube-state-metrics does not expose a DaemonSet's maxUnavailable: exporter.max_unavailable says it. 60 GPU nodes, a
# RollingUpdate with maxUnavailable 3: from minute 10 the controller deletes three old pods at once, their targets are
# gone a minute until the new pods answer, then the next three: 57 of 60 available for 20 minutes, the updated count
# rising by three each minute. Each node's data is missing a minute once: no form fires when the settings say 3 (or 5%
# of 60, rounded up), and both fire when they keep the default 1.

WIDE_NODES = tuple(f"ip-10-0-7-{i + 1}" for i in range(60))
WIDE_BATCH = 3
WIDE = {node: "1" * (ROLLOUT_START + 2 * (i // WIDE_BATCH)) + ".."
        + "1" * (ROLLOUT_STEPS - ROLLOUT_START - 2 * (i // WIDE_BATCH) - 2) for i, node in enumerate(WIDE_NODES)}
WIDE_AVAILABLE = tuple(sum(line[k] == "1" for line in WIDE.values()) for k in range(ROLLOUT_STEPS))
WIDE_UPDATED = tuple(min(len(WIDE_NODES), WIDE_BATCH * ((k - ROLLOUT_START) // 2 + 1)) if k >= ROLLOUT_START
                     else len(WIDE_NODES) for k in range(ROLLOUT_STEPS))


def _files(folder, settings: str):
    (folder / "gpudash.yaml").write_text(settings)
    return encode(build(load_project(folder / "gpudash.yaml")))


@pytest.mark.parametrize("allowed", ["3", "'5%'", None], ids=["3", "5%", "default 1"])
def test_a_rollout_of_three_exporters_at_once_is_the_rollouts_own_when_the_settings_say_so(tmp_path, allowed):
    files = _files(tmp_path, f"exporter:\n  max_unavailable: {allowed}\n" if allowed else "")
    points = _rollout_points(files, WIDE, WIDE_AVAILABLE, WIDE_UPDATED)
    requests = _rule_alarms(files)
    alarmed = {m for m in range(1, ROLLOUT_STEPS // 2 + 1) if _in_alarm(requests, points, m * 60)}
    fired = _rule_fired_minutes(files, tmp_path, WIDE, (len(WIDE_NODES),) * ROLLOUT_STEPS, WIDE_AVAILABLE,
                                WIDE_UPDATED)
    # not judged: minute 30, whose period ends with the rollout's last pod available at exactly 30:00 (CloudWatch's
    # periods leave out the sample at their end, a PromQL range holds it; scrapes never land there exactly)
    end = WIDE_AVAILABLE.index(len(WIDE_NODES), ROLLOUT_START) // 2
    assert alarmed - {end} == fired - {end}
    if allowed:
        assert fired == set()
    else:  # three missing all period is more than the default allows: both forms fire once two periods hold it
        assert set(range(ROLLOUT_START // 2 + 10, end)) <= fired


# The same rollout with one exporter lost on a node at minute 12 (its new pod never gets a scrape target). The DaemonSet
# controller counts that node's pod as unavailable against maxUnavailable 3 (pkg/controller/daemon/update.go
# rollingUpdate), so the rollout goes on two nodes at a time and the shortfall stays 3: no count tells the lost pod from
# the rollout's own while the updated count moves (the stated limit). When the rollout ends the shortfall is 1 with no
# move, which both forms see once two whole periods hold no move: at the same minutes. Three pods lost use up the
# budget: the controller stops the rollout, and both forms fire as on a rollout stuck.

def _wide_rollout_with_lost(lost: int) -> tuple[dict[str, str], tuple, tuple, int]:
    """(answering, available, updated, the step the rollout ends) with `lost` exporters lost at minute 12."""
    nodes, at = WIDE_NODES[:40], 24
    gone = nodes[-lost:]
    answering = {node: "1" * at + "." * (ROLLOUT_STEPS * 2 - at) for node in gone}
    step, batch, left = ROLLOUT_START, WIDE_BATCH, list(nodes[:-lost])
    while left and (step < at or WIDE_BATCH - lost > 0):
        batch = WIDE_BATCH if step < at else WIDE_BATCH - lost
        for node in left[:batch]:
            answering[node] = "1" * step + ".." + "1" * (ROLLOUT_STEPS * 2 - step - 2)
        left, step = left[batch:], step + 2
    for node in left:  # never replaced: the rollout stopped
        answering[node] = "1" * ROLLOUT_STEPS * 2
    answering = {node: answering[node] for node in nodes}
    steps = ROLLOUT_STEPS * 2
    available = tuple(sum(line[k] == "1" for line in answering.values()) for k in range(steps))
    replaced = [line.index(".") for node, line in answering.items() if "." in line and node not in gone]
    updated = tuple(0 if k < ROLLOUT_START else sum(r <= k for r in replaced) + lost * (k >= at) for k in range(steps))
    updated = tuple(len(nodes) if k < ROLLOUT_START else u for k, u in enumerate(updated))
    return answering, available, updated, step


@pytest.mark.parametrize("lost", [1, 3])
def test_an_exporter_lost_during_a_wide_rollout_fires_both_forms_when_the_rollout_cannot_explain_it(tmp_path, lost):
    files = _files(tmp_path, "exporter:\n  max_unavailable: 3\n")
    answering, available, updated, end = _wide_rollout_with_lost(lost)
    points = _rollout_points(files, answering, available, updated)
    requests = _rule_alarms(files)
    minutes = range(1, len(available) // 2 + 1)
    alarmed = {m for m in minutes if _in_alarm(requests, points, m * 60)}
    fired = _rule_fired_minutes(files, tmp_path, answering, (len(answering),) * len(available), available, updated)
    assert alarmed == fired, (sorted(alarmed), sorted(fired))
    # quiet until the pod is lost; in alarm from two whole periods after the updated count's last move on
    moved = max(k for k in range(1, len(updated)) if updated[k] != updated[k - 1]) // 2
    assert not {m for m in fired if m <= 12}
    assert set(range(moved + 11, len(available) // 2 + 1)) <= fired, (moved, sorted(fired))
    if lost == 3:  # the rollout stops at once: the last move is the loss's
        assert moved == 12


def test_on_the_classic_pipeline_a_gpu_writing_only_the_blank_still_counts_as_its_lint_note_says(tmp_path):
    """agent.pipeline: classic publishes DCGM's blank, and the alarms count observations whatever their value: every
    GPU's temperature blank (the rule fires: no GPU reports a reading) leaves them quiet there, the limit lint AL010
    notes of the alarm; the default OTel pipeline drops the blank and fires (test_cloudwatch_alarm)."""
    from generator.lint.runner import lint_project

    (tmp_path / "gpudash.yaml").write_text("agent:\n  pipeline: classic\n")
    project = load_project(tmp_path / "gpudash.yaml")
    files = encode(build(project))
    situation = next(s for s in SITUATIONS if s.blank)
    assert _in_alarm(_rule_alarms(files, PER_GPU_ALARM), _datapoints(project, files, situation), END) == {}
    assert any(f.rule == "AL010" and f.where.endswith(ALARM) and "only DCGM's blank" in f.message
               for f in lint_project(project))

"""A GPU's counter alarm and its Prometheus twin fire for the same GPUs, from the same exporter payloads.

The PCIe replays rule compares a GPU's replays per 5 minutes with 50: on CloudWatch the SUM of the agent's
deltas per GPU instance over a 5-minute period, in Prometheus `increase(...[5m])`. One fleet is served to
both: a whole GPU at 60 and one at 40 per 5 minutes, a GPU whose counter restarts from 0 at 60, a GPU cut in
seven MIG instances (the device counter repeats on each) at 60, a GPU no pod holds at 60, and a GPU two pods
of two namespaces share by time-slicing at 30 (its exporter, without KUBERNETES_VIRTUAL_GPUS, writes it once,
under one of the two), with one scrape in ten missing on every node. CloudWatch's
side goes through the model of the agent driven by the generated config into the generated alarm; the
Prometheus side is the same payloads, as the generated scrape job stores them, through `promtool test
rules` on the generated rule. Both fire for the GPUs the truth names and no other (the time-sliced GPU's 30 is
below the threshold on both; copies per pod, which the agent's pipeline merges, are test_device_counters').
One more GPU at 60 has its exporter replaced mid-run (a restart or an upgrade: a new exporter pod and
address, a scrape lost between them, and the new version adds the pod's UID to the pod's copy); the
device's counter goes on counting, so the 5 minutes across the replacement still hold 60 replays.
Counter resets near the threshold (below) are judged minute by minute on both forms: each window's truth is the sum
of its readings' deltas, a reading after a fall counted as it is.
"""

from __future__ import annotations

import json
import re

import pytest

from generator.project import load_project
from generator.render.scrape import prometheus_scrape_job
from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import EXPORTER_NAMESPACE, discovered
from tests.support.mixed_fleet import Gpu, Instance, Node
from tests.support.promtool_batches import judged_in_halves
from tests.support.promtool_rules import expected_alert, parsed_rules, promtool_test

STEP, STEPS = 30, 80  # forty minutes of 30 s scrapes
MISSED = {k for k in range(STEPS) if k % 10 == 3}
RESET_AT = 30  # the reset GPU's counter reads from 0 again at this scrape
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
METRIC = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"


def _gpu(per_five_minutes: float, *instances: Instance) -> Gpu:
    return Gpu(0, temp=50, power=100, sm_clock=1400, xid=0, energy_mw=100_000, replays_per_s=per_five_minutes / 300,
               memory_temp=50, instances=instances)


def _held(namespace: str, pod: str, **more) -> Instance:
    return Instance(fb_used=1000, fb_free=9000, engine=0.5, pod=(namespace, pod), **more)


FLEET = (
    Node("gpu-node-1", "Hostname", "e-1", (_gpu(60, _held("team-a", "w")),)),
    Node("gpu-node-2", "Hostname", "e-2", (_gpu(40, _held("team-a", "l")),)),
    Node("gpu-node-3", "Hostname", "e-3", (_gpu(60, _held("team-a", "r")),)),
    Node("gpu-node-4", "Hostname", "e-4", (_gpu(60, *(_held("team-m", f"m{i}", id=str(i), profile="1g.10gb")
                                                      for i in range(1, 8))),)),
    Node("gpu-node-5", "Hostname", "e-5", (_gpu(60, Instance(fb_used=1000, fb_free=9000, engine=0.5)),)),
    Node("gpu-node-6", "Hostname", "e-6", (_gpu(30, _held("team-a", "t", also=(("team-b", "t"),))),)),
    Node("gpu-node-7", "Hostname", "e-7", (_gpu(60, _held("team-a", "u")),)),
)
TRUTH = {"gpu-node-1", "gpu-node-3", "gpu-node-4", "gpu-node-5", "gpu-node-7"}  # over 50 replays per 5 minutes
REPLACED, REPLACED_AT = "gpu-node-7", 36  # its exporter's first scrape after the replacement (k=35 is lost)
UID = 'pod_uid="0b1c3d6e-1111-4a2b-9c3d-000000000001"'


def _exporter(node: Node, k: int) -> tuple[str, str]:
    """The exporter pod serving the node at scrape k, and its address."""
    if node.name == REPLACED and k >= REPLACED_AT:
        return "nvidia-dcgm-exporter-new7", "10.0.2.7:9400"
    return f"nvidia-dcgm-exporter-{node.name[-1]}", f"10.0.1.{node.name[-1]}:9400"


def _lost(node: Node, k: int) -> bool:
    return k in MISSED or (node.name == REPLACED and k == REPLACED_AT - 1)


def _target(job: dict, node: Node, k: int) -> dict[str, str]:
    pod, address = _exporter(node, k)
    return discovered(job, {"__address__": address, "__meta_kubernetes_namespace": EXPORTER_NAMESPACE,
                            "__meta_kubernetes_pod_name": pod, "__meta_kubernetes_pod_node_name": node.name,
                            "__meta_kubernetes_pod_container_port_number": "9400",
                            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter"})


def _served(node: Node, k: int) -> str:
    """The node's payload at scrape k; the reset node's counter counts from 0 again at RESET_AT."""
    text = mixed_fleet.payload(node, k * STEP)
    if node.name == REPLACED and k >= REPLACED_AT:  # the new version writes the pod's UID as well
        return text.replace('pod="u"', f'pod="u",{UID}')
    if node.name != "gpu-node-3" or k < RESET_AT:
        return text
    grown = int(node.gpus[0].replays_per_s * (k - RESET_AT) * STEP)
    return re.sub(rf"^({METRIC}\{{.*\}}) \d+ ", rf"\g<1> {grown} ", text, flags=re.M)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("counter-twins"), {})


def test_the_cloudwatch_alarm_names_the_truth(built):
    files, _ = built
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(float(k * STEP), _served(node, k), _target(job, node, k))
               for k in range(-1, STEPS) for node in FLEET if not _lost(node, k)]
    points = Agent(config, job).run(scrapes)
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if {"Key": "gpudash:rule", "Value": "pcie-replays"} in a["Request"]["Tags"]]
    assert "once per pod" not in request["AlarmDescription"]
    for end in (600, 900, 1200, 2100, 2400):  # before, across and after the reset and the replacement
        fired = {dict(key)["node"] for key, state in cloudwatch_eval.alarm(request, points, end).items()
                 if state == "ALARM"}
        assert fired == TRUTH, end


def _stored(node: Node, job: dict) -> list[dict[str, str]]:
    """The node's PCIe replay series as Prometheus stores them (with the labels the scrape job gives the
    exporter's target), a missed scrape a gap."""
    values: dict[str, list[str]] = {}
    for k in range(STEPS):
        target = ",".join(f'{name}="{value}"' for name, value in sorted(_target(job, node, k).items()))
        for series, value in re.findall(rf"^({METRIC}\{{.*\}}) (\S+)(?: \d+)?$", _served(node, k), flags=re.M):
            values.setdefault(f"{series[:-1]},{target}}}", ["_"] * STEPS)[k] = "_" if _lost(node, k) else value
    return [{"series": series, "values": " ".join(v)} for series, v in values.items()]


def test_the_prometheus_rule_names_the_truth(built):
    _, folder = built
    groups = parsed_rules((folder / "rules.yaml").read_text())["groups"]
    (alert,) = [r["alert"] for g in groups for r in g["rules"] if "alert" in r and r["labels"]["gpudash_rule"] == "pcie-replays"]
    job = prometheus_scrape_job(load_project().settings)

    def judge(part) -> None:  # the nodes in halves where promtool's sample limit stops a run (7 nodes at 54e34c05)
        names = {node.name for node in part}
        checks = [{"eval_time": f"{seconds // 60}m", "alertname": alert,
                   "exp_alerts": [expected_alert(folder, alert, node=node, gpu="0") for node in sorted(TRUTH & names)]}
                  for seconds in (600, 900, 1200, 2100, 2340)]
        series = [s for node in part for s in _stored(node, job)]
        promtool_test(folder, f"counter_twins_{FLEET.index(part[0])}.yaml", [
            {"interval": f"{STEP}s", "input_series": series, "alert_rule_test": checks}],
            evaluation_interval=f"{STEP}s")

    judged_in_halves(list(FLEET), judge)


# --- counter resets near the threshold, judged minute by minute ---------------------------------------------------
# One GPU per node, scraped at 15 s past each half minute (t = 15 + 30 k) for half an hour; each node's story is the
# counter at each scrape. A GPU reset makes the counter start over: the agent sends the reading after a fall as it
# is (the counter's growth since the reset), so the truth of a window is the sum of its readings' deltas, a fall's
# reading counted as it is. Prometheus's increase() would scale a window's readings up to its length (1, 17, 33, 50
# read as 55.6 over 270 s of a 5-minute window) and fire at 50.
RESET_SCRAPES = 60
BLANK = 9223372036854775792  # DCGM's int64 blank
RESET_FIELDS = (METRIC, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS")


def _after_reset(before: list[int], after: list[int], reset_at: int = 20) -> list[int]:
    """The counter at each scrape: `before` ending at scrape reset_at - 1 (its last value held from the start),
    then `after` from the reset on, its last value held to the end."""
    head = [before[0]] * (reset_at - len(before)) + before
    return head + after + [after[-1]] * (RESET_SCRAPES - len(head) - len(after))


RESET_STORIES = {  # node -> (field, readings, threshold the rule compares with)
    "reset-to-50": (METRIC, _after_reset([1000], [1, 17, 33, 50])),  # 50 since the reset: never more than 50
    "reset-to-51": (METRIC, _after_reset([1000], [1, 17, 33, 51])),  # 51: fires while the window holds all four
    "grown-then-reset-40": (METRIC, _after_reset([990, 1000], [10, 25, 40])),  # 10 before, 40 after: 50
    "grown-then-reset-41": (METRIC, _after_reset([990, 1000], [10, 25, 41])),  # 10 + 41 = 51: fires
    "rows-reset-to-0": ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", _after_reset([2], [0])),  # no row remapped
    "rows-reset-then-1": ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", _after_reset([2], [0, 0, 1])),  # one row
    # 8 replays a scrape (80 in 5 minutes) with DCGM's blank at one scrape, or at every ninth: the agent drops a
    # blank before its deltas, so the next reading counts from the one before the blank and the alarm holds
    "steady-with-a-blank": (METRIC, [BLANK if k == 30 else 8 * k for k in range(RESET_SCRAPES)]),
    "steady-blank-every-9": (METRIC, [BLANK if k % 9 == 8 else 8 * k for k in range(RESET_SCRAPES)]),
    # a second exporter on the node (an upgrade's new pod beside the old one) reads the same counter, but reads a
    # blank: always, or at every twentieth scrape, the last of the windows ending at minutes 10, 20 and 30 (55
    # replays in each window, 11 every 2 scrapes). The agent drops a copy's blank before it merges the copies, so the
    # other copy's reading stands; a blank that won the merge would lose the step (no value at all, or its replays
    # counted in the next window: 50 at those minutes)
    "copy-always-blank": (METRIC, [6 * k for k in range(RESET_SCRAPES)]),
    "copy-blank-at-ends": (METRIC, [11 * k // 2 for k in range(RESET_SCRAPES)]),
}
SECOND_COPY = {  # node -> the second exporter's readings of the same counter
    "copy-always-blank": [BLANK] * RESET_SCRAPES,
    "copy-blank-at-ends": [BLANK if k % 20 == 19 else 11 * k // 2 for k in range(RESET_SCRAPES)],
}
RESET_RULES = {METRIC: ("pcie-replays", 50), "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": ("uncorrectable-rows", 0)}
RESET_MINUTES = range(5, RESET_SCRAPES // 2 + 1)  # every minute from the first whole 5 minutes to the end


def _scrape_time(k: int) -> int:
    return 15 + STEP * k


def _window_sum(readings: list[int], end: int) -> int | None:
    """The sum of the deltas of the readings taken in the 5 minutes before `end` (none at a window's edge here), a
    fall's reading counted as it is; the first scrape sends nothing."""
    kept = [(k, v) for k, v in enumerate(readings) if v < BLANK]  # a blank is no reading (the agent drops it)
    deltas = [(b - a if b >= a else b) for (_, a), (k, b) in zip(kept, kept[1:]) if end - 300 < _scrape_time(k) < end]
    return sum(deltas) if deltas else None


def _merged(node: str) -> list[int]:
    """The GPU's reading at each scrape: the largest of its copies' that is not a blank (a blank when all are)."""
    copies = [RESET_STORIES[node][1], *([SECOND_COPY[node]] if node in SECOND_COPY else [])]
    return [max((v for v in read if v < BLANK), default=BLANK) for read in zip(*copies)]


def _copies(job: dict, index: int, node: str) -> list[tuple[list[int], dict[str, str]]]:
    """Each exporter's readings of the story's counter and its scrape target (the second on another pod)."""
    first = (RESET_STORIES[node][1], _reset_target(job, index, node))
    return [first, (SECOND_COPY[node], _reset_target(job, 100 + index, node))] if node in SECOND_COPY else [first]


def _reset_truth(field: str) -> dict[int, set[str]]:
    """{minute: the nodes whose story passes the field's rule in the 5 minutes before it}."""
    _, threshold = RESET_RULES[field]
    return {minute: {node for node, (f, _) in RESET_STORIES.items()
                     if f == field and (_window_sum(_merged(node), minute * 60) or 0) > threshold}
            for minute in RESET_MINUTES}


def test_the_reset_stories_are_told_apart():
    truth = _reset_truth(METRIC)
    fired = set().union(*truth.values())
    blanks = {"steady-with-a-blank", "steady-blank-every-9", "copy-always-blank", "copy-blank-at-ends"}
    assert fired == {"reset-to-51", "grown-then-reset-41"} | blanks
    assert all(truth[m] >= blanks for m in RESET_MINUTES if m > 5)  # at 5, 9 deltas: 11 * 9 // 2 for the last
    assert all(max(_window_sum(RESET_STORIES[n][1], m * 60) or 0 for m in RESET_MINUTES) == 50
               for n in ("reset-to-50", "grown-then-reset-40"))
    assert set().union(*_reset_truth("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS").values()) == {"rows-reset-then-1"}
    assert 3 <= sum("reset-to-51" in nodes for nodes in truth.values()) < len(RESET_MINUTES) - 10


def _reset_payload(node: str, k: int, readings: list[int]) -> str:
    field, _ = RESET_STORIES[node]
    # each node's GPU its own (a GPU is its UUID): the two exporters of a node read one GPU
    labels = f'gpu="0",UUID="GPU-{node}",device="nvidia0",modelName="NVIDIA A10G",Hostname="nvidia-dcgm-exporter-x"'
    return f"# TYPE {field} counter\n{field}{{{labels}}} {readings[k]}\n"


def _reset_target(job: dict, index: int, node: str) -> dict[str, str]:
    return discovered(job, {"__address__": f"10.0.3.{index}:9400", "__meta_kubernetes_namespace": EXPORTER_NAMESPACE,
                            "__meta_kubernetes_pod_name": f"nvidia-dcgm-exporter-r{index}",
                            "__meta_kubernetes_pod_node_name": node,
                            "__meta_kubernetes_pod_container_port_number": "9400",
                            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter"})


@pytest.fixture(scope="module")
def reset_built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("counter-resets"), {}, RESET_FIELDS)


@pytest.mark.parametrize("field", RESET_FIELDS)
def test_the_cloudwatch_alarm_judges_a_reset_by_the_sum_of_the_deltas(reset_built, field):
    files, _ = reset_built
    config, job = agent_config(files[AGENT_FILE])
    nodes = [n for n, (f, _) in RESET_STORIES.items() if f == field]
    scrapes = [Scrape(float(_scrape_time(k)), _reset_payload(node, k, readings), target)
               for k in range(RESET_SCRAPES) for i, node in enumerate(nodes) for readings, target in _copies(job, i, node)]
    points = Agent(config, job).run(scrapes)
    rule, _ = RESET_RULES[field]
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if {"Key": "gpudash:rule", "Value": rule} in a["Request"]["Tags"]]
    for minute, truth in _reset_truth(field).items():
        states = cloudwatch_eval.alarm(request, points, minute * 60)
        fired = {dict(key)["node"] for key, state in states.items() if state == "ALARM"}
        assert fired == truth, (minute, states)


@pytest.mark.parametrize("field", RESET_FIELDS)
def test_the_prometheus_rule_judges_a_reset_by_the_sum_of_the_deltas(reset_built, field):
    _, folder = reset_built
    rule, _ = RESET_RULES[field]
    groups = parsed_rules((folder / "rules.yaml").read_text())["groups"]
    (alert,) = [r["alert"] for g in groups for r in g["rules"] if "alert" in r and r["labels"]["gpudash_rule"] == rule]
    job = prometheus_scrape_job(load_project().settings)
    series = []
    for i, node in enumerate(n for n, (f, _) in RESET_STORIES.items() if f == field):
        for readings, scraped in _copies(job, i, node):
            target = ",".join(f'{k}="{v}"' for k, v in sorted(scraped.items()))
            labels = f'gpu="0",UUID="GPU-{node}",device="nvidia0",modelName="NVIDIA A10G",' \
                     'Hostname="nvidia-dcgm-exporter-x"'
            # input at 5 s slots: the scrape at 15 + 30 k is slot 3 + 6 k
            values = ["_"] * (RESET_SCRAPES * 6)
            for k, value in enumerate(readings):
                values[3 + 6 * k] = str(value)
            series.append({"series": f"{field}{{{labels},{target}}}", "values": " ".join(values)})
    checks = [{"eval_time": f"{minute}m", "alertname": alert,
               "exp_alerts": [expected_alert(folder, alert, node=node, gpu="0") for node in sorted(nodes)]}
              for minute, nodes in _reset_truth(field).items()]
    promtool_test(folder, f"counter_resets_{rule}.yaml", [{"interval": "5s", "input_series": series,
                                                           "alert_rule_test": checks}])

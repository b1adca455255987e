"""Readings that change at every scrape, through the agent models into the generated widgets and alarms, against what
the readings say: an independent check of the CloudWatch semantics on stories no other file holds (the seeded fleets
of tests/support/random_fleet.py read one value at every scrape; the stories elsewhere are written by hand).

Each seeded story: two nodes of two GPUs, on the OTel pipeline some GPUs split into MIG instances; pods holding GPUs or
instances of their node, or none; at every scrape (30 s, for an hour) each GPU's utilization (a MIG instance's engine
activity), temperature, power and framebuffer are drawn afresh, and its energy and PCIe replay counters grow by drawn
amounts, one of them falling to near 0 on some GPUs (a GPU reset); some utilization readings are DCGM's blank, none in
the last 10 minutes (the fleet's mean of a minute weighs a GPU by its readings there: a known limit, said in the
overview's header and pinned in test_cloudwatch_fleet_gpu_in_part.py). The truth is worked out here from the drawn
readings alone: a line's point is the mean of the readings its period holds; a pod's total is its GPUs' (instances')
sum at each scrape, averaged over the period; a counter's point is its growth in the period (a fall counts the
reading after it, as the agent sends it and Prometheus' increase() counts it) over the period; the fleet's mean
utilization of the latest minute is the mean over GPUs of each GPU's mean (a MIG GPU's, its instances' mean engine
activity x 100); the alarms judge their conditions on the latest periods. On agent.pipeline: classic, which publishes
DCGM's blank (AL010) and draws a MIG GPU's counters per instance, the stories have neither.
"""

from __future__ import annotations

import json
import random

import pytest

from tests.support import cloudwatch_eval
from tests.support.built import files as built_files
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import widgets
from tests.support.dcgm_fleet import target_labels

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
STEP, END, PERIOD = 30, 3600, 300
BLANK = "9223372036854775794"  # DCGM's "not supported"
COUNTERS = ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER")
SCRAPES = range(-2, END // STEP)
NODE_PODS = ((("a", "p0"), ("b", "p0"), None), (("a", "p1"), ("c", "q"), None))  # a pod runs on one node


def _story(seed: int, mig: bool, blanks: bool):
    """{node: [(gpu, [(instance id or None, profile, pod)])]} and the readings {(node, gpu, instance, scrape): {...}},
    the device's fields (temperature, power, counters) under instance None."""
    r = random.Random(seed)
    nodes = {}
    for n, pods in enumerate(NODE_PODS):
        gpus = []
        for g in range(2):
            if mig and r.random() < 0.4:
                gpus.append((g, [(str(i + 1), r.choice(["3g.20gb", "2g.10gb"]), r.choice(pods))
                                 for i in range(r.randint(1, 3))]))
            else:
                gpus.append((g, [(None, None, r.choice(pods))]))
        nodes[f"ip-10-0-{n}-1"] = gpus
    readings = {}
    for node, gpus in nodes.items():
        for g, instances in gpus:
            draw = random.Random(f"{seed}-{node}-{g}")
            base, hot, energy, replays = draw.choice([1, 3, 40, 90]), draw.choice([60, 84, 86]), 10_000_000, 1_000
            reset = draw.choice([None, draw.randint(10, 110)])
            for k in SCRAPES:
                energy, replays = ((draw.randint(0, 5000), draw.randint(0, 3)) if k == reset else
                                   (energy + draw.randint(1000, 9000) * STEP, replays + draw.choice([0, 0, 1, 5, 20])))
                blank = blanks and k * STEP < END - 600 and draw.random() < 0.1
                readings[(node, g, None, k)] = {
                    "temp": hot + draw.randint(-3, 3), "power": draw.randint(80, 320), "energy": energy,
                    "replays": replays, "util": None if blank else max(0, min(100, base + draw.randint(-3, 3)))}
                for instance, _, _ in instances:
                    readings[(node, g, instance, k)] = {**readings[(node, g, None, k)], "fb": draw.randint(0, 20000),
                                                        "engine": draw.random()}
    return nodes, readings


def _payload(nodes, readings, node: str, k: int) -> str:
    lines = []
    for g, instances in nodes[node]:
        for instance, profile, pod in instances:
            v = readings[(node, g, instance, k)]
            labels = f'gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A100-SXM4-40GB"'
            labels += f',GPU_I_PROFILE="{profile}",GPU_I_ID="{instance}"' if instance else ""
            labels += f',Hostname="{node}"' + (f',container="main",namespace="{pod[0]}",pod="{pod[1]}"' if pod else "")
            util = BLANK if v["util"] is None else v["util"]
            for metric, value in (("DCGM_FI_DEV_GPU_TEMP", v["temp"]), ("DCGM_FI_DEV_POWER_USAGE", v["power"]),
                                  ("DCGM_FI_DEV_FB_USED", v["fb"]), ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", v["engine"]),
                                  ("DCGM_FI_DEV_GPU_UTIL", 0 if instance else util),
                                  (COUNTERS[0], v["energy"]), (COUNTERS[1], v["replays"])):
                lines += [f"# TYPE {metric} {'counter' if metric in COUNTERS else 'gauge'}",
                          f"{metric}{{{labels}}} {value}"]
    return "\n".join(lines) + "\n"


def _published(seed: int, pipeline: str, mig: bool, blanks: bool):
    files = built_files(f"agent:\n  pipeline: {pipeline}\n")
    nodes, readings = _story(seed, mig, blanks)
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(k * STEP), _payload(nodes, readings, node, k),
                                            target_labels(job, node)) for k in SCRAPES for node in nodes])
    return files, nodes, readings, points


def _in(start: int, seconds: int = PERIOD) -> list[int]:
    return [k for k in SCRAPES if start <= k * STEP < start + seconds]


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _growth(before: float, after: float) -> float:
    return after - before if after >= before else after  # a fall: the reading after it is the growth


def _held(nodes) -> dict[tuple, list[tuple]]:
    held: dict[tuple, list[tuple]] = {}
    for node, gpus in nodes.items():
        for g, instances in gpus:
            for instance, _, pod in instances:
                if pod:
                    held.setdefault(pod, []).append((node, g, instance))
    return held


def _lines(files, points, title: str, start: int = 0, now: float | None = None) -> dict:
    """The lines of the widget `title` (its panel's: a chart's title may add which lines it draws) over the story."""
    (found,) = [p for _, p in widgets(files) if p["title"].split(" (the ")[0] == title]
    return cloudwatch_eval.widget(found, points, start, END, now=now)


def _wrong(shown: dict, truth: dict) -> dict:
    """{(line, period): (truth, shown)} where a line's point is not the truth (None: no point)."""
    wrong = {}
    for line, series in truth.items():
        for start, value in series.items():
            got = shown.get(line, {}).get(start)
            if (value is None) != (got is None) or value is not None and abs(value - got) > 1e-6 * max(1.0, value):
                wrong[(line, start)] = (value, got)
    return wrong


CASES = [("otel", True, True, seed) for seed in range(4)] + [("classic", False, False, seed) for seed in range(2)]


@pytest.mark.parametrize("pipeline, mig, blanks, seed", CASES)
def test_lines_and_pod_totals_follow_changing_readings(pipeline, mig, blanks, seed):
    files, nodes, readings, points = _published(seed, pipeline, mig, blanks)
    periods = range(0, END, PERIOD)
    suffix = " MIG none" if pipeline == "classic" else ""  # classic's counter lines are per GPU instance
    gpus = [(node, g, instances) for node, gs in nodes.items() for g, instances in gs]
    whole = [(node, g) for node, g, instances in gpus if instances[0][0] is None]
    assert _wrong(_lines(files, points, "GPU utilization"), {f"{n} GPU {g}": {t: _mean(
        [readings[(n, g, None, k)]["util"] for k in _in(t)]) for t in periods} for n, g in whole}) == {}
    assert _wrong(_lines(files, points, "Framebuffer memory used"), {f"{n} GPU {g} MIG {i or 'none'}": {t: _mean(
        [readings[(n, g, i, k)]["fb"] for k in _in(t)]) for t in periods} for n, g, instances in gpus
        for i, _, _ in instances}) == {}
    assert _wrong(_lines(files, points, "PCIe replays"), {f"{n} GPU {g}{suffix}": {t: sum(_growth(
        readings[(n, g, None, k - 1)]["replays"], readings[(n, g, None, k)]["replays"]) for k in _in(t)) / PERIOD
        for t in periods} for n, g, _ in gpus}) == {}
    held = _held(nodes)
    pods = {f"Pod {ns}/{pod}": xs for (ns, pod), xs in held.items()}
    assert _wrong(_lines(files, points, "Framebuffer used by pod"), {line: {t: _mean(
        [sum(readings[(n, g, i, k)]["fb"] for n, g, i in xs) for k in _in(t)]) for t in periods}
        for line, xs in pods.items()}) == {}
    assert _wrong(_lines(files, points, "Power draw of each pod's GPUs"), {line: {t: _mean(
        [sum(readings[(n, g, None, k)]["power"] for n, g in {(n, g) for n, g, _ in xs}) for k in _in(t)])
        for t in periods} for line, xs in pods.items()}) == {}
    assert _wrong(_lines(files, points, "Energy use rate of each pod's GPUs"), {line: {t: sum(_growth(
        readings[(n, g, None, k - 1)]["energy"], readings[(n, g, None, k)]["energy"])
        for n, g in {(n, g) for n, g, _ in xs} for k in _in(t)) / PERIOD for t in periods}
        for line, xs in pods.items()}) == {}
    on_whole = {line: [(n, g) for n, g, i in xs if i is None] for line, xs in pods.items()}
    assert _wrong(_lines(files, points, "GPU utilization by pod"), {line: {t: _mean(
        [readings[(n, g, None, k)]["util"] for n, g in xs for k in _in(t)]) for t in periods}
        for line, xs in on_whole.items() if xs}) == {}
    now = END + 60  # drawn a minute after the story: its latest whole minute
    (shown,) = _lines(files, points, "Average GPU utilization", start=END - 240, now=now).values()
    latest = max(shown)

    def gpu_mean(n, g, instances):
        if instances[0][0] is None:
            return _mean([readings[(n, g, None, k)]["util"] for k in _in(latest, 60)])
        return _mean([100 * sum(readings[(n, g, i, k)]["engine"] for i, _, _ in instances) / len(instances)
                      for k in _in(latest, 60)])
    assert shown[latest] == pytest.approx(_mean([gpu_mean(*gpu) for gpu in gpus]))


@pytest.mark.parametrize("pipeline, mig, blanks, seed", CASES)
def test_alarms_follow_changing_readings(pipeline, mig, blanks, seed):
    files, nodes, readings, points = _published(seed, pipeline, mig, blanks)
    requests = {a["Request"]["AlarmName"].split("gpu-cluster-", 1)[1]: a["Request"]
                for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    last = range(END - PERIOD, END, PERIOD)
    six = range(END - 6 * PERIOD, END, PERIOD)
    gpus = [(node, g) for node, gs in nodes.items() for g, _ in gs]

    def states(name):
        return {tuple(v for _, v in key): state for key, state in
                cloudwatch_eval.alarm(requests[name], points, END).items()}
    assert states("gpu-temp-critical-critical") == {(n, str(g)): "ALARM" if any(
        readings[(n, g, None, k)]["temp"] > 87 for t in last for k in _in(t)) else "OK" for n, g in gpus}
    replays = states("pcie-replays-warning")
    assert {key[:2]: state for key, state in replays.items()} == {(n, str(g)): "ALARM" if sum(_growth(
        readings[(n, g, None, k - 1)]["replays"], readings[(n, g, None, k)]["replays"])
        for t in last for k in _in(t)) > 50 else "OK" for n, g in gpus}
    def idle_in(n, g, t):  # a period without a reading is neither idle nor busy: it does not breach
        mean = _mean([readings[(n, g, None, k)]["util"] for k in _in(t)])
        return mean is not None and mean < 5
    idle = {(ns, pod, str(g)): "ALARM" if all(idle_in(n, g, t) for t in six) else "OK"
            for (ns, pod), xs in _held(nodes).items() for n, g, i in xs if i is None}
    assert states("gpu-idle-warning") == idle

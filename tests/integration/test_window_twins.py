"""Level alarms and their Prometheus twins fire on the same readings, those their descriptions name.

"GPU temperature high" means a GPU stayed above 80 °C at every reading of 10 minutes: on CloudWatch the lowest
temperature of each of two 5-minute periods, both breaching; in Prometheus the lowest over 5 minutes, held for 5
minutes. Both judge the readings of the 10 minutes before the evaluation. "Pod's GPU memory nearly full" means a
GPU (or MIG instance) the pod holds had under 1024 MiB free at some reading of the last 5 minutes (an allocation
fails at the peak): the least free of one 5-minute period, and `min_over_time` over 5 minutes.

One fleet goes to both: two brief readings in adjacent 5-minute blocks (t = 30 s and 570 s), one brief
reading, a level held 15 minutes, the same with one reading back under the level in its middle, and a pod
holding two GPUs of which one alone is hot and full. CloudWatch's side goes through the model of the agent driven by the
generated config into the generated alarms; the Prometheus side is the same readings through `promtool test
rules` on the generated rules. Each is evaluated 15 s after a scrape (no reading sits on a window's edge, where
Prometheus 2 and CloudWatch include opposite ends). At each minute both name what the readings say, and nothing
else.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.mixed_fleet import Gpu, Instance, Node
from tests.support.promtool_rules import alert_names, expected_alert, parsed_rules, promtool_test, shifted_later

STEP, STEPS = 30, 60  # thirty minutes of 30 s scrapes
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
HOT, COOL = 85.0, 60.0  # the warning level is 80 °C, the critical 87 °C
FULL, ROOMY = 500.0, 20_000.0  # MiB free; the level is 1024


# When each node's GPU 0 reads the level (scrape k at k * 30 s); GPU 1 of "gpu-node-5" stays roomy and cool.
AT_LEVEL = {
    "gpu-node-1": lambda k: k in (1, 19),  # the brief readings of two adjacent 5-minute blocks
    "gpu-node-2": lambda k: k == 12,  # one brief reading
    "gpu-node-3": lambda k: 10 <= k <= 40,  # held from 300 s to 1,200 s
    "gpu-node-4": lambda k: 10 <= k <= 55 and k != 25,  # held, but one reading back at 750 s
    "gpu-node-5": lambda k: 10 <= k <= 55,  # held on one of the pod's two GPUs
}


def _gpu(index: int, pod: str, level: bool) -> Gpu:
    return Gpu(index, temp=HOT if level else COOL, power=100, sm_clock=1400, xid=0, energy_mw=100_000,
               replays_per_s=0, memory_temp=50,
               instances=(Instance(fb_used=24_000 - (FULL if level else ROOMY), fb_free=FULL if level else ROOMY,
                                   engine=0.5, pod=("team-a", pod)),))


def _node(name: str, k: int) -> Node:
    level = AT_LEVEL[name](k)
    gpus = (_gpu(0, f"p{name[-1]}", level),)
    if name == "gpu-node-5":
        gpus += (_gpu(1, "p5", False),)
    return Node(name, "Hostname", f"e-{name[-1]}", gpus)


NODES = sorted(AT_LEVEL)


def truth(end: int) -> dict[str, set[str]]:
    """What the readings say at `end`: the nodes whose GPU stayed above 80 °C through (end - 600 s, end], the pods
    that had a GPU under 1024 MiB free at a reading of (end - 300 s, end]."""
    def ks(seconds: int) -> list[int]:
        return [k for k in range(STEPS) if end - seconds < k * STEP <= end]

    return {"gpu-temp-high": {name for name in NODES if all(AT_LEVEL[name](k) for k in ks(600))},
            "framebuffer-full": {f"p{name[-1]}" for name in NODES if any(AT_LEVEL[name](k) for k in ks(300))}}


ENDS = range(600, STEPS * STEP, 60)
LATER = -(ENDS[0] + 15) % ENDS.step  # a multiple of the rules' 5 s step: each reading keeps its place on their grid


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("window-twins"), {})


def test_the_cases_are_told_apart():
    """The readings hold each case: only the held levels breach, and each only for a while."""
    fired = {end: truth(end) for end in ENDS}
    assert {n for t in fired.values() for n in t["gpu-temp-high"]} == {"gpu-node-3", "gpu-node-4", "gpu-node-5"}
    assert truth(840)["gpu-temp-high"] == set() and truth(870)["gpu-temp-high"] == {"gpu-node-3", "gpu-node-5"}
    assert truth(1320)["gpu-temp-high"] == {"gpu-node-5"}
    assert truth(1380)["gpu-temp-high"] == {"gpu-node-4", "gpu-node-5"}
    assert truth(600)["framebuffer-full"] == {"p1", "p2", "p3", "p4", "p5"}
    assert truth(660)["framebuffer-full"] == {"p1", "p3", "p4", "p5"} and truth(1620)["framebuffer-full"] == {"p4", "p5"}


def _requests(files) -> dict[str, dict]:
    return {rule: next(a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                       if {"Key": "gpudash:rule", "Value": rule} in a["Request"]["Tags"])
            for rule in ("gpu-temp-high", "framebuffer-full")}


def test_cloudwatch_alarms_judge_the_ten_minutes(built):
    files, _ = built
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(float(k * STEP), mixed_fleet.payload(_node(name, k), k * STEP), target_labels(job, name))
               for k in range(STEPS) for name in NODES]
    points = Agent(config, job).run(scrapes)
    requests = _requests(files)
    assert "at every reading of its two latest 5-minute periods with readings" in \
        requests["gpu-temp-high"]["AlarmDescription"]
    assert "under 1024 MiB of memory free at a reading of the last 5 minutes" in \
        requests["framebuffer-full"]["AlarmDescription"]
    for end in ENDS:
        want = truth(end)
        for rule, request in requests.items():
            states = cloudwatch_eval.alarm(request, points, end + 15)  # 15 s after the scrape at `end`
            fired = {dict(key).get("node") or dict(key)["pod"] for key, state in states.items() if state == "ALARM"}
            assert fired == want[rule], (rule, end)


def _stored(metric: str) -> list[dict[str, str]]:
    """Each series of `metric` as the generated scrape job stores it (it attaches `node`)."""
    values: dict[str, list[str]] = {}
    for k in range(STEPS):
        for name in NODES:
            for series, value in [line.rsplit(" ", 1) for line in
                                  mixed_fleet.payload(_node(name, k), k * STEP).splitlines()
                                  if line.startswith(metric + "{")]:
                values.setdefault(f'{series[:-1]},node="{name}"}}', []).append(value)
    return [{"series": series, "values": " ".join(v)} for series, v in values.items()]


def test_prometheus_rules_judge_the_ten_minutes(built):
    _, folder = built
    alerts = alert_names(folder)
    checks = []
    for end in ENDS:
        want = truth(end)
        checks += [{"eval_time": f"{end + 15 + LATER}s", "alertname": alerts["gpu-temp-high"],
                    "exp_alerts": [expected_alert(folder, alerts["gpu-temp-high"], node=n, gpu="0")
                                   for n in sorted(want["gpu-temp-high"])]},
                   {"eval_time": f"{end + 15 + LATER}s", "alertname": alerts["framebuffer-full"],
                    "exp_alerts": [expected_alert(folder, alerts["framebuffer-full"], namespace="team-a", pod=p)
                                   for p in sorted(want["framebuffer-full"])]}]
    # the story moved 45 s later: its judged times fall on promtool's evaluations once a minute (test_period_twins)
    series = [shifted_later(s, STEP, LATER) for s in _stored("DCGM_FI_DEV_GPU_TEMP") + _stored("DCGM_FI_DEV_FB_FREE")]
    promtool_test(folder, "window_twins.yaml", [{"interval": f"{math.gcd(STEP, LATER)}s", "input_series": series,
                                                  "alert_rule_test": checks}], evaluation_interval="15s")


def test_the_former_forms_fired_on_brief_readings(built):
    """The form the temperature alarm replaces (the highest temperature of two periods) fires on the two brief
    readings of gpu-node-1: the cases tell the difference."""
    files, _ = built
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(float(k * STEP), mixed_fleet.payload(_node("gpu-node-1", k), k * STEP),
                      target_labels(job, "gpu-node-1")) for k in range(STEPS)]
    points = Agent(config, job).run(scrapes)
    request = _requests(files)["gpu-temp-high"]
    former = {**request, "Metrics": [{**request["Metrics"][0],
                                      "Expression": request["Metrics"][0]["Expression"].replace("MIN(", "MAX(")
                                      .replace("MIN()", "MAX()")}]}
    assert "ALARM" in cloudwatch_eval.alarm(former, points, 600).values()
    assert "ALARM" not in cloudwatch_eval.alarm(request, points, 600).values()


# PCIe replays: a burst of 100 within 30 s across a 5-minute clock boundary (+50 at 570 s, +50 at 600 s).
BURST_NODE, REPLAYS = "gpu-node-6", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
BURST_ENDS = range(540, 961, 30)


def _burst_payload(k: int) -> str:
    grown = 1_000_000_000 + (0 if k < 19 else 50 if k == 19 else 100)
    text = mixed_fleet.payload(Node(BURST_NODE, "Hostname", "e-6", (_gpu(0, "p6", False),)), k * STEP)
    return "\n".join(f"{line.split(' ')[0] if '}' not in line else line[:line.rindex('}') + 1]} {grown}"
                     if line.startswith(REPLAYS + "{") else line for line in text.splitlines()) + "\n"


def _burst_truth(end: int) -> bool:
    """More than 50 replays between the scrape 5 minutes before `end` and the one at `end`."""
    return 600 <= end <= 840


def test_a_burst_across_a_clock_boundary_fires_both_forms(built):
    """CloudWatch's evaluation window slides with each evaluation (PutMetricAlarm's default SlidingWindow; the
    request sets no WallClockWindow), so the 5 minutes it sums end where it evaluates, not on the clock's
    5-minute marks; Prometheus' increase reads the samples of the 5 minutes before its evaluation. Both fire
    from the evaluation after the burst's last replay until the burst leaves the window, and at no other time.
    Only fixed clock blocks ([300, 600) and [600, 900): 50 each) would miss it. Prometheus' increase() would
    also fire with 50 replays in its window (it scales the nine steps it sees to five minutes: 55.6); the rule
    takes the exact difference of the samples 5 minutes apart, as CloudWatch sums the deltas."""
    files, folder = built
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(k * STEP), _burst_payload(k), target_labels(job, BURST_NODE))
                                     for k in range(STEPS)])
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if {"Key": "gpudash:rule", "Value": "pcie-replays"} in a["Request"]["Tags"]]
    assert "EvaluationWindow" not in request and "within 5 minutes" in request["AlarmDescription"]
    for end in BURST_ENDS:
        fired = "ALARM" in cloudwatch_eval.alarm(request, points, end + 15).values()
        assert fired == _burst_truth(end), end
    assert "ALARM" not in {*cloudwatch_eval.alarm(request, points, 600).values(),
                           *cloudwatch_eval.alarm(request, points, 900).values()}  # the clock blocks: 50 each

    groups = parsed_rules((folder / "rules.yaml").read_text())["groups"]
    alert = next(r["alert"] for g in groups for r in g["rules"] if "alert" in r and r["labels"]["gpudash_rule"] == "pcie-replays")
    values: dict[str, list[str]] = {}
    for k in range(STEPS):
        for series, value in [line.rsplit(" ", 1) for line in _burst_payload(k).splitlines()
                              if line.startswith(REPLAYS + "{")]:
            values.setdefault(f'{series[:-1]},node="{BURST_NODE}"}}', []).append(value)
    later = -(BURST_ENDS[0] + 15) % BURST_ENDS.step  # judged times on every evaluation, 30 s apart
    checks = [{"eval_time": f"{end + 15 + later}s", "alertname": alert,
               "exp_alerts": [expected_alert(folder, alert, node=BURST_NODE, gpu="0")] if _burst_truth(end) else []}
              for end in BURST_ENDS]
    promtool_test(folder, "burst_twins.yaml", [{"interval": f"{math.gcd(STEP, later)}s", "input_series": [
        shifted_later({"series": s, "values": " ".join(v)}, STEP, later) for s, v in values.items()],
        "alert_rule_test": checks}], evaluation_interval="15s")

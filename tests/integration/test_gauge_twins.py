"""Each gauge alarm and its Prometheus twin fire on the same situations when a GPU's readings come in several
series, or one reading is DCGM's blank, judged at every evaluation of each story, not at one instant.

A GPU's readings start a new series when its exporter is replaced (a new exporter pod: `Hostname` and
`instance` change), when its pod moves to another GPU, or when the GPU changes holder (its pod labels change).
The window's statistic is the min, mean or max of the GPU's (the pod's GPU's) readings whatever series carried
them, as CloudWatch takes it over the observations of the period; a blank reading leaves that reading out, not
the window. Each story's readings go through the model of the agent (the generated agent configuration) into the
CloudWatch alarm, and into `promtool test rules` (rules evaluated every 15 s, or every minute) for the rule;
the truth is computed here from the story's readings. XID and the idle rule's MIG branch (engine activity of a
MIG instance) read blanks and series the same way.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, field, replace
from typing import Callable

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.render.alarms import RULE_STEP_SECONDS
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Agent, Datapoint, Scrape, agent_config
from tests.support.container_insights_addon import DECLARATIONS, NAMESPACE
from tests.support.dcgm_fleet import target_labels
from tests.support.promtool_rules import (STORY_OWN, alert_rule, expected_alert, joins_across_stories, promtool_test,
                                          rule_groups, shifted_later, value_text)

STEP = 30
BLANK = 9223372036854775794
CLASSIC = "agent:\n  pipeline: classic\n"
OLD, NEW = ("nvidia-dcgm-exporter-aaaaa", "10.0.1.11:9400"), ("nvidia-dcgm-exporter-bbbbb", "10.0.1.12:9400")


@dataclass(frozen=True)
class Source:
    """Who carries a reading: the exporter pod (its `Hostname` and address), the node, the workload pod, the GPU."""

    exporter: tuple[str, str] = OLD
    node: str = "ip-10-0-1-1"
    pod: str = "a"
    uuid: str = "GPU-1"
    mig: bool = False  # the pod holds MIG instance `instance` of the GPU
    gpu: int = 0
    instance: str = "1"

    def labels(self) -> str:
        instance = f',GPU_I_ID="{self.instance}",GPU_I_PROFILE="1g.10gb"' if self.mig else ""
        return (f'gpu="{self.gpu}",UUID="{self.uuid}",device="nvidia{self.gpu}",modelName="NVIDIA A100-SXM4-80GB",'
                f'Hostname="{self.exporter[0]}",DCGM_FI_DRIVER_VERSION="535.104.05"{instance},container="main",'
                f'namespace="ml",pod="{self.pod}"')


@dataclass(frozen=True)
class Story:
    rule: str  # the rule's id
    metric: str
    scrapes: int
    reading: Callable[[int], float | None]  # None: no scrape
    source: Callable[[int], Source]
    truth: Callable[[float], bool]  # does the rule fire at an evaluation at this time
    alert: dict[str, str]  # the labels the alert carries
    evaluations: list[int]
    every: int = 15  # rules evaluated every ... seconds
    second: Callable[[int], float | None] | None = None  # the readings of a second GPU (GPU 1) the pod holds
    second_truth: Callable[[float], bool] | None = None  # does the rule fire for the second GPU (its own alert)
    second_is: dict = field(default_factory=lambda: {"gpu": 1, "uuid": "GPU-2"})  # the second GPU's Source fields
    # the alarm judged over the user guide's example range (cloudwatch_eval.example_range), where the story's state
    # depends on the range's unpublished length; None: at every plausible length, which must agree
    example_range: bool = False
    kind: str = "gauge"  # the field's type in the exporter's payload (a counter: the agent sends its deltas)

    def alerts(self, t: float) -> list[dict[str, str]]:
        """The alerts at an evaluation at t: the first GPU's, and the second GPU's (per GPU rules; per MIG instance,
        its instance's)."""
        found = [self.alert] if self.truth(t) else []
        if self.second_truth is not None and self.second_truth(t):
            second = {"gpu": str(self.second_is.get("gpu", self.alert["gpu"])),
                      **({"GPU_I_ID": self.second_is["instance"]} if "instance" in self.second_is else {})}
            found.append({**self.alert, **second})
        return found

    def readings(self, k: int) -> list[tuple[Source, float]]:
        """The readings of scrape k, and who carries each."""
        found = [(self.source(k), self.reading(k))]
        if self.second is not None:
            found.append((replace(self.source(k), **self.second_is), self.second(k)))
        return [(source, value) for source, value in found if value is not None]


def _idle_truth(readings: Callable[[int], list[float]], scrapes: int, scale: float = 1) -> Callable[[float], bool]:
    """Idle at t: 25 minutes after the first reading, and every 5-minute window of the last 30 minutes (the
    windows ending at each evaluation) holds readings whose mean (times `scale`, in %) is under 5 %. Each window's
    verdict is worked out once (the evaluations' windows overlap)."""
    @functools.cache
    def quiet(end: int) -> bool:
        values = [v for k in range(max(0, (end - 300) // STEP), min(scrapes, end // STEP + 1))
                  if end - 300 < k * STEP <= end for v in readings(k) if v != BLANK]
        return bool(values) and sum(values) / len(values) * scale < 5  # a window without readings: no verdict

    def truth(t: float) -> bool:
        return t >= 1515 and all(quiet(end) for end in range(int(t) - 1500, int(t) + 1, 15))
    return truth


# The idle rule judges each GPU a pod holds: its alert names the pod and the GPU, and on MIG the instance.
IDLE = {"namespace": "ml", "pod": "a", "gpu": "0"}
IDLE_MIG = {**IDLE, "GPU_I_ID": "1", "GPU_I_PROFILE": "1g.10gb"}


def _restart_idle(move: bool) -> Story:
    """Pod ml/a reads 0 % except 40 % at t=2100 s; then its exporter is replaced (one scrape missed), or (move)
    the pod is rescheduled to a GPU of another node. Every window's mean stays under 5 % (40 / 9 at most). The rule
    judges each GPU: after a move the pod holds another GPU, idle 30 minutes after it arrives, so the move is judged
    up to it (its first GPU idle through the exporter's scrapes until it leaves)."""
    def reading(k): return None if k == 71 else 40.0 if k == 70 else 0.0

    def source(k):
        if k < 71:
            return Source()
        return Source(NEW, node="ip-10-0-1-2", uuid="GPU-2") if move else Source(NEW)
    return Story("gpu-idle", "DCGM_FI_DEV_GPU_UTIL", 140, reading, source, _idle_truth(lambda k: [v for v in [reading(k)] if v is not None], 140),
                 IDLE, [k * STEP + 15 for k in range(50, 71 if move else 140)])


def _blank_idle() -> Story:
    """Pod ml/a reads 1 % with three blank readings at t=1800..1860 s: idle throughout."""
    def reading(k): return BLANK if 60 <= k <= 62 else 1.0
    return Story("gpu-idle", "DCGM_FI_DEV_GPU_UTIL", 140, reading, lambda k: Source(), _idle_truth(lambda k: [v for v in [reading(k)] if v is not None], 140),
                 IDLE, [k * STEP + 15 for k in range(50, 140)])


def _two_gpus_idle() -> Story:
    """Pod ml/a holds GPU 0 at 0 % and GPU 1, whose utilization is blank until t=2100 s, then blank except 40 % at
    every fifth scrape. GPU 0 is idle from 25 minutes on, whatever GPU 1 reads; GPU 1 never (no reading until
    2100 s, a blank reading is none, then 40 %). A mean over the pod's GPUs (80 / 12 readings = 6.7 % in the windows
    holding GPU 1's 40 %) would call GPU 0 busy from then on."""
    def second(k): return 40.0 if k >= 70 and k % 5 == 0 else BLANK
    return Story("gpu-idle", "DCGM_FI_DEV_GPU_UTIL", 140, lambda k: 0.0, lambda k: Source(),
                 _idle_truth(lambda k: [0.0], 140), IDLE, [k * STEP + 15 for k in range(50, 140)], second=second,
                 second_truth=_idle_truth(lambda k: [v for v in [second(k)] if v != BLANK], 140))


def _one_gpu_of_two_used(busy: float, idle: float, mig: bool = False, one_gpu: bool = False) -> Story:
    """Pod ml/a holds two GPUs (MIG instances on two GPUs, `mig`; instances 1 and 2 of GPU 0, `one_gpu`), GPU 0 at
    `busy` %, GPU 1 at `idle` % all along (a job using its first GPU only). GPU 1 is idle from 25 minutes on, GPU 0
    when `busy` is under 5 % too: each GPU (each instance) the pod holds is judged, not their mean (100 and 0 mean
    50 %: never idle; 0 and 9 mean 4.5 %: idle)."""
    scale = 100 if mig else 1
    metric = "DCGM_FI_PROF_GR_ENGINE_ACTIVE" if mig else "DCGM_FI_DEV_GPU_UTIL"
    return Story("gpu-idle", metric, 140, lambda k: busy / scale, lambda k: Source(mig=mig),
                 _idle_truth(lambda k: [busy], 140), IDLE_MIG if mig else IDLE, [k * STEP + 15 for k in range(50, 140)],
                 second=lambda k: idle / scale, second_truth=_idle_truth(lambda k: [idle], 140),
                 **({"second_is": {"instance": "2"}} if one_gpu else {}))


def _mig_idle() -> Story:
    """Pod ml/a holds a MIG instance whose engine is 1 % active (0.01), 40 % at t=2100 s, blank at three scrapes from
    t=1800 s; its exporter is replaced after the scrape at 2100 s (one scrape missed). Idle throughout."""
    def reading(k): return None if k == 71 else BLANK if 60 <= k <= 62 else 0.4 if k == 70 else 0.01
    return Story("gpu-idle", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 140, reading,
                 lambda k: Source(OLD if k < 71 else NEW, mig=True), _idle_truth(lambda k: [v for v in [reading(k)] if v is not None], 140, 100),
                 IDLE_MIG, [k * STEP + 15 for k in range(50, 140)])


def _blank_xid() -> Story:
    """A GPU reports XID 43 from t=180 s on, with one blank reading at t=2100 s: in error at every evaluation."""
    return Story("xid-error", "DCGM_FI_DEV_XID_ERRORS", 140, lambda k: BLANK if k == 70 else 43.0 if k >= 6 else 0.0,
                 lambda k: Source(("ip-10-0-1-1", OLD[1])), lambda t: True, {"node": "ip-10-0-1-1", "gpu": "0"},
                 [k * STEP + 15 for k in range(50, 140)])


def _blank_temp_critical() -> Story:
    """A GPU at 90 °C with one blank reading at t=2100 s: critical at every evaluation."""
    return Story("gpu-temp-critical", "DCGM_FI_DEV_GPU_TEMP", 140, lambda k: BLANK if k == 70 else 90.0,
                 lambda k: Source(), lambda t: True, {"node": "ip-10-0-1-1", "gpu": "0"},
                 [k * STEP + 15 for k in range(50, 140)])


def _restart_framebuffer(last: bool) -> Story:
    """Pod ml/a's GPU has 20,000 MiB free except 500 MiB at one scrape; its exporter is replaced after the scrape at
    570 s. `last`: the full reading is the old exporter's last one, and rules are evaluated once a minute."""
    dip = 19 if last else 18

    def reading(k): return 500.0 if k == dip else 20000.0

    def truth(t): return any(reading(k) < 1024 for k in range(40) if t - 300 < k * STEP <= t)
    evaluations = list(range(300, 40 * STEP, 60)) if last else [k * STEP + 15 for k in range(10, 40)]
    return Story("framebuffer-full", "DCGM_FI_DEV_FB_FREE", 40, reading,
                 lambda k: Source() if k < 20 else Source(NEW), truth, {"namespace": "ml", "pod": "a"},
                 evaluations, every=60 if last else 15)


def _crash_loop_temp_critical() -> Story:
    """A GPU at 90 °C at every reading; its exporter crash-loops as in _crash_loop_temp_high. Critical at every
    evaluation: at the one evaluation of ten minutes whose latest 5 minutes hold no reading (t = 585 s, 1185 s, ...),
    CloudWatch (1 of 1 period) judges the period before, the readings' latest, as the rule now does."""
    def reading(k): return 90.0 if (k * STEP // 300) % 2 == 0 else None
    return Story("gpu-temp-critical", "DCGM_FI_DEV_GPU_TEMP", 120, reading, lambda k: Source(("ip-10-0-1-1", OLD[1])),
                 lambda t: True, {"node": "ip-10-0-1-1", "gpu": "0"}, [k * STEP + 15 for k in range(0, 120)])


def _handover_temp_high() -> Story:
    """A GPU at 85 °C except 75 °C at t=540 s; pod ml/a holds it until 570 s, ml/b from 600 s. High once ten
    minutes hold no reading at or under 80 °C: from t=1155 s."""
    def reading(k): return 75.0 if k == 18 else 85.0

    def truth(t): return t >= 600 and all(reading(k) > 80 for k in range(60) if t - 600 < k * STEP <= t)
    return Story("gpu-temp-high", "DCGM_FI_DEV_GPU_TEMP", 60, reading,
                 lambda k: Source(("ip-10-0-1-1", OLD[1]), pod="a" if k < 20 else "b"), truth,
                 {"node": "ip-10-0-1-1", "gpu": "0"}, [k * STEP + 15 for k in range(20, 60)])


def _crash_loop_temp_high() -> Story:
    """A GPU at 85 °C at every reading; its exporter crash-loops at Kubernetes' 5-minute back-off: it answers for five
    minutes, then is down for five. High once ten minutes hold readings and none at or under 80 °C: from t=600 s, at
    every evaluation (every 10 minutes hold a run of readings). CloudWatch's evaluation range judges the two most
    recent real datapoints when a period is empty (user guide, "How alarm state is evaluated when data is missing"):
    at the last evaluation before each run of readings resumes, the period before the latest holds none, and the
    one before it is judged; a rule judging only its two latest periods paused there once every ten minutes."""
    def reading(k): return 85.0 if (k * STEP // 300) % 2 == 0 else None

    def truth(t):
        window = [reading(k) for k in range(120) if t - 600 < k * STEP <= t and reading(k) is not None]
        return t >= 600 and bool(window) and all(v > 80 for v in window)
    return Story("gpu-temp-high", "DCGM_FI_DEV_GPU_TEMP", 120, reading, lambda k: Source(("ip-10-0-1-1", OLD[1])),
                 truth, {"node": "ip-10-0-1-1", "gpu": "0"}, [k * STEP + 15 for k in range(20, 120)])


def _range_truth(period_value: Callable[[float, float], float | None], breaches: Callable[[float], bool],
                 periods: int, needed: int, missing: str) -> Callable[[float], bool]:
    """In ALARM at t as CloudWatch judges the story's own readings (no agent, no query) over the user guide's example
    evaluation range (periods + 2 periods of 5 minutes ending at t, each `period_value(start, end)`, none without a
    datapoint): the truth of a story whose state the range's length decides."""
    length = periods + cloudwatch_eval.EXAMPLE_EXTRA_PERIODS

    def truth(t: float) -> bool:
        values = [period_value(t - (k + 1) * 300, t - k * 300) for k in reversed(range(length))]  # oldest first
        return cloudwatch_eval.judge(values, needed, periods, missing, breaches) == "ALARM"
    return truth


def _gauge_periods(reading: Callable[[int], float | None], scrapes: int,
                   statistic: Callable[[list], float]) -> Callable[[float, float], float | None]:
    """A gauge's period value: the statistic of its readings in [start, end), none without one."""
    def value(start: float, end: float) -> float | None:
        found = [v for j in range(scrapes) if start <= j * STEP < end for v in [reading(j)]
                 if v is not None and v != BLANK]
        return statistic(found) if found else None
    return value


def _counter_periods(reading: Callable[[int], float | None], scrapes: int,
                     within: int = 600) -> Callable[[float, float], float | None]:
    """A counter's period value: the sum of the deltas of its readings in [start, end), each less the reading
    before it (the reading itself after a fall), none for a reading with none before it within `within` seconds (the
    rule's horizon: an event alarm's, `> 0`, an hour, render.alarms.gap_reach, a level's 10 minutes,
    promql.WINDOW_PREVIOUS_WITHIN; the agent's awsemf cache holds one 15 to 30 minutes, so after a gap of 10 to 30
    minutes a level's alarm counts what this does not: GAP_IN_ONE_PERIOD); none where no reading has a delta."""
    def value(start: float, end: float) -> float | None:
        deltas = []
        for j in range(scrapes):
            if start <= j * STEP < end and reading(j) is not None:
                before = [reading(i) for i in range(j - 1, max(j - within // STEP - 1, -1), -1)
                          if reading(i) is not None]
                if before:
                    deltas.append(reading(j) - before[0] if reading(j) >= before[0] else reading(j))
        return sum(deltas) if deltas else None
    return value


CRASH_SCRAPES = 80  # two cycles of the longest crash loop judged after its first 10 minutes


def _crash_loop(rule: str, metric: str, value: float, up: int, down: int, phase: int = 0, first: int = 20) -> Story:
    """A GPU at `value` at every reading (a counter: growing by `value` a scrape, counting on while its exporter is
    down); its exporter crash-loops: it answers for `up` seconds, then is down for `down`, from `phase` seconds into
    its cycle at t = 0. 40 minutes, judged at every scrape from minute 10 (15 s after it). The truth is CloudWatch's over the user
    guide's example range (_range_truth): with a gap as long as two periods or more, the state depends on the range's
    length (temperature-high, 5 minutes up and 10 down: H - - H at the evaluation before the readings resume, ALARM
    at 4 periods and more, OK at 3; the rules judged 3 before). A counter's period without a delta has no datapoint,
    and its alarm judges an older period (its rule read an increase of 0 there, the period's latest reading's, and
    cleared)."""
    counter = rule in ("pcie-replays", "uncorrectable-rows")

    def reading(k):
        return (value * k if counter else value) if (k * STEP + phase) % (up + down) < up else None
    of_period = _counter_periods(reading, CRASH_SCRAPES, 3600 if rule == "uncorrectable-rows" else 600) \
        if counter else None
    judged = {"gpu-temp-high": (min, lambda v: v > 80, 2, 2, "missing"),
              "gpu-temp-critical": (max, lambda v: v > 87, 1, 1, "missing"),
              "xid-error": (max, lambda v: v > 0, 1, 1, "notBreaching"),
              "pcie-replays": (None, lambda v: v > 50, 1, 1, "notBreaching"),
              "uncorrectable-rows": (None, lambda v: v > 0, 1, 1, "notBreaching")}[rule]
    statistic, rest = judged[0], judged[1:]
    return Story(rule, metric, CRASH_SCRAPES, reading, lambda k: Source(("ip-10-0-1-1", OLD[1])),
                 _range_truth(of_period or _gauge_periods(reading, CRASH_SCRAPES, statistic), *rest),
                 {"node": "ip-10-0-1-1", "gpu": "0"}, [k * STEP + 15 for k in range(first, CRASH_SCRAPES)],
                 example_range=True,
                 kind="counter" if counter else "gauge")


def _idle_gap(gap: int) -> Story:
    """Pod ml/a reads 0 % (idle) all along except for one gap of `gap` scrapes from t=1800 s (its exporter down). The
    idle alarm (6 of 6 periods, `notBreaching`) judges the 6 most recent real periods of its range: through a gap of
    one or two periods the pod stays idle on both forms, the evaluations whose latest 8 periods hold fewer than 6
    with readings excepted (_range_truth; the former story truth, every window holding readings, had no verdict
    there)."""
    def reading(k): return None if 60 <= k < 60 + gap else 0.0
    return Story("gpu-idle", "DCGM_FI_DEV_GPU_UTIL", 140, reading, lambda k: Source(),
                 _range_truth(_gauge_periods(reading, 140, lambda v: sum(v) / len(v)), lambda v: v < 5, 6, 6,
                              "notBreaching"),
                 IDLE, [k * STEP + 15 for k in range(50, 140)], example_range=True)


STORIES = {
    "idle-exporter-restart": (_restart_idle(False), ""),
    "idle-exporter-restart-classic": (_restart_idle(False), CLASSIC),
    "idle-pod-moves-gpu": (_restart_idle(True), ""),
    "idle-blank-readings": (_blank_idle(), ""),
    "idle-pod-of-two-gpus-one-mostly-blank": (_two_gpus_idle(), ""),
    "idle-pod-using-one-of-two-gpus": (_one_gpu_of_two_used(100, 0), ""),
    "idle-pod-using-one-of-two-gpus-classic": (_one_gpu_of_two_used(100, 0), CLASSIC),
    "idle-pod-of-two-gpus-at-0-and-9": (_one_gpu_of_two_used(9, 0), ""),
    "mig-idle-pod-using-one-of-two-instances": (_one_gpu_of_two_used(100, 0, mig=True), ""),
    "mig-idle-pod-using-one-of-two-instances-of-one-gpu": (_one_gpu_of_two_used(100, 0, mig=True, one_gpu=True), ""),
    "temp-critical-blank-reading": (_blank_temp_critical(), ""),
    "xid-blank-reading": (_blank_xid(), ""),
    "mig-idle-blank-readings-and-exporter-restart": (_mig_idle(), ""),
    "framebuffer-exporter-restart": (_restart_framebuffer(False), ""),
    "framebuffer-last-reading-of-old-exporter": (_restart_framebuffer(True), ""),
    "temp-high-holder-change": (_handover_temp_high(), ""),
    "temp-high-holder-change-classic": (_handover_temp_high(), CLASSIC),
    "temp-high-exporter-crash-loop": (_crash_loop_temp_high(), ""),
    "temp-critical-exporter-crash-loop": (_crash_loop_temp_critical(), ""),
    "temp-high-crash-loop-5m-up-10m-down": (_crash_loop("gpu-temp-high", "DCGM_FI_DEV_GPU_TEMP", 85.0, 300, 600), ""),
    "temp-high-crash-loop-5m-up-10m-down-shifted": (
        _crash_loop("gpu-temp-high", "DCGM_FI_DEV_GPU_TEMP", 85.0, 300, 600, phase=150), ""),
    "temp-high-crash-loop-5m-up-15m-down": (_crash_loop("gpu-temp-high", "DCGM_FI_DEV_GPU_TEMP", 85.0, 300, 900), ""),
    "temp-high-crash-loop-10m-up-5m-down": (_crash_loop("gpu-temp-high", "DCGM_FI_DEV_GPU_TEMP", 85.0, 600, 300), ""),
    "temp-high-crash-loop-2m-up-8m-down": (_crash_loop("gpu-temp-high", "DCGM_FI_DEV_GPU_TEMP", 85.0, 120, 480), ""),
    # judged from another scrape: not in one promtool group with the temperature-high stories (90 °C is high too)
    "temp-critical-crash-loop-5m-up-15m-down": (
        _crash_loop("gpu-temp-critical", "DCGM_FI_DEV_GPU_TEMP", 90.0, 300, 900, first=22), ""),
    "xid-crash-loop-5m-up-12m-down": (_crash_loop("xid-error", "DCGM_FI_DEV_XID_ERRORS", 43.0, 300, 720), ""),
    "pcie-replays-crash-loop-5m-up-15m-down": (
        _crash_loop("pcie-replays", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 20.0, 300, 900), ""),
    "pcie-replays-crash-loop-10m-up-12m-down": (
        _crash_loop("pcie-replays", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 20.0, 600, 720, phase=150), ""),
    "uncorrectable-rows-crash-loop-5m-up-15m-down": (
        _crash_loop("uncorrectable-rows", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 1.0, 300, 900), ""),
    "idle-single-gap-of-12-minutes": (_idle_gap(24), ""),
    "idle-single-gap-of-17-minutes": (_idle_gap(34), ""),
}


_BUILT: dict[str, dict] = {}


def _build(tmp_path, settings: str):
    """The generated files of `settings` (built once per settings), and a folder holding its rules."""
    if settings not in _BUILT:
        (tmp_path / "gpudash.yaml").write_text(settings)
        _BUILT[settings] = encode(build(load_project(tmp_path / "gpudash.yaml")))
    files = _BUILT[settings]
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    return files, folder


def _alert(folder, rule: str) -> str:
    groups = rule_groups((folder / "rules.yaml").read_text())
    return next(r["alert"] for g in groups for r in g["rules"] if "alert" in r and r["labels"]["gpudash_rule"] == rule)


def _cloudwatch_request(files, rule: str, metric: str) -> dict:
    return next(a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if {"Key": "gpudash:rule", "Value": rule} in a["Request"]["Tags"]
                and metric.removeprefix("DCGM_FI_DEV_") in json.dumps(a["Request"]["Metrics"]))


def _prometheus_wrong(folder, stories: list[tuple[str, list, dict]], every: int, interval: int = STEP) -> list[str]:
    """The evaluations where the rule's alert differs from the expected one, each story (its rule's alert, its series,
    its expected alert labels: {time: labels or None}) judged at the same times in one test group.

    Stories of 30 s scrapes judged at evenly spaced times are judged folded first (_folded_wrong: copies of them at a
    few of the evaluations, as many times fewer); the times of the folded cases that fail, a set holding every time
    where the rule differs, are then judged each at its own evaluation (_judged_wrong), so the times reported are
    exactly those where it differs."""
    if interval == STEP:
        suspect = _folded_wrong(folder, stories, every)
        if suspect is not None:
            if not suspect:
                return []
            stories = [(alert, series, {t: e for t, e in expected.items() if t in suspect})
                       for alert, series, expected in stories]
    return _judged_wrong(folder, stories, every, interval)


def _judged_wrong(folder, stories: list[tuple[str, list, dict]], every: int, interval: int = STEP) -> list[str]:
    """_prometheus_wrong's evaluations, each judged time at its own evaluation.

    promtool evaluates the rules at every multiple of its evaluation interval from 0, and the judged times of most
    stories are 15 s past each 30 s scrape: at a 15 s interval, half its evaluations would be judged by no case. The
    story is moved later by the `shift` that puts every judged time on a multiple of the times' spacing (a multiple of
    the rules' 5 s step: each reading keeps its place on their subquery grid, each judged time its place between the
    readings), so promtool evaluates once per judged time. The rules read no absolute time; the times reported are
    the story's own."""
    times = list(stories[0][2])
    assert all(list(expected) == times for _, _, expected in stories)
    spacing = math.gcd(*(b - a for a, b in zip(times, times[1:]))) or every
    shift = -times[0] % spacing
    assert shift % RULE_STEP_SECONDS == 0 and shift % every == 0, (shift, every)
    cases = [{"eval_time": f"{t + shift}s", "alertname": alert,
              "exp_alerts": [expected_alert(folder, alert, **labels) for a, _, expected in stories
                             if a == alert for labels in _listed(expected[t])]}
             for t in times for alert in dict.fromkeys(a for a, _, _ in stories)]
    try:
        promtool_test(folder, "story.yaml", [{"interval": f"{math.gcd(interval, shift)}s",
                                                "input_series": [shifted_later(s, interval, shift)
                                                                 for _, series, _ in stories for s in series],
                                                "alert_rule_test": cases}], evaluation_interval=f"{every}s")
    except AssertionError as failure:
        return [_go_duration(_seconds(line.split("time: ")[1].strip(" ,")) - shift)
                for line in str(failure).splitlines() if "time:" in line] or [str(failure)[:2000]]
    return []


def _listed(expected: dict | list | None) -> list[dict]:
    """The alerts expected at one evaluation: none (None), one (its labels) or a list of them."""
    return [] if not expected else [expected] if isinstance(expected, dict) else expected


def _seconds(duration: str) -> int:
    """A Go duration promtool prints (`1h2m45s`) in seconds."""
    return sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in re.findall(r"(\d+)([hms])", duration))


def _go_duration(seconds: int) -> str:
    """`seconds` as Go prints a duration: 45s, 14m45s, 1h0m45s."""
    hours, minutes = seconds // 3600, seconds % 3600 // 60
    return (f"{hours}h{minutes}m" if hours else f"{minutes}m" if minutes else "") + f"{seconds % 60}s"


def _prometheus_case(story: Story, mark: str = "") -> tuple[list, dict]:
    """The story as promtool input series (each distinct source one series, as stored: the scrape job adds node and
    instance) and its expected alert labels at each evaluation ({time: labels or None}). `mark` is appended to every
    namespace, node, GPU UUID and exporter target the story names, so that stories judged in one promtool run share no alert and no
    GPU (a GPU is its UUID: two stories' GPU-1 would be one GPU's copies)."""
    def marked(text: str) -> str:
        return re.sub(rf'\b({"|".join(STORY_OWN)})="([^"]*)"', lambda m: f'{m[1]}="{m[2]}{mark}"', text)

    values: dict[Source, list[str]] = {}
    for k in range(story.scrapes):
        for source, value in story.readings(k):
            values.setdefault(source, ["_"] * story.scrapes)[k] = value_text(value)
    series = [{"series": marked(f'{story.metric}{{{source.labels()},node="{source.node}",instance="{source.exporter[1]}"}}'),
               "values": " ".join(v)} for source, v in values.items()]
    def alert(labels): return {k: v + mark if k in ("namespace", "node") else v for k, v in labels.items()}
    return series, {t: [alert(labels) for labels in story.alerts(t)] for t in story.evaluations}


_VERDICTS: dict[str, list[str]] = {}  # story name -> the evaluations where the rule differs from the truth


def _prometheus_verdict(tmp_path_factory, name: str) -> list[str]:
    """The evaluations where the story's rule differs from its truth. The stories judged at the same instants (the
    same rules, interval and evaluations) run as one promtool test group, each under its own namespace and node:
    promtool's cost is in evaluating the rules at each step, whatever the series. The rules aggregate by namespace
    and pod or by node and GPU and join series only on labels a story marks as its own (checked:
    joins_across_stories), so one story's series cannot change another's alerts. Should the group fail (a story
    wrong, or promtool's limit of 10,000 samples a query: a batch of 14 idle stories of 6 copies each exceeds it), it
    is halved and each half judged the same way (_right_in_halves); a story that fails even alone runs alone, one
    evaluation per judged time, for the evaluations where it is wrong."""
    if name not in _VERDICTS:
        story, settings = STORIES[name]
        rules = {o: _build(tmp_path_factory.mktemp("settings"), o)[0]["prometheus/rules.yaml"]
                 for o in dict.fromkeys(o for _, o in STORIES.values())}
        batch = [n for n, (s, o) in STORIES.items() if n not in _VERDICTS and (s.every, s.evaluations) ==
                 (story.every, story.evaluations) and rules[o] == rules[settings]]
        folder = tmp_path_factory.mktemp("stories")
        files, folder = _build(folder, settings)
        alerts = {n: _alert(folder, STORIES[n][0].rule) for n in batch}
        joined = joins_across_stories([alert_rule(folder, a)["expr"] for a in set(alerts.values())])
        marks = {n: f"-{i}" for i, n in enumerate(batch)}  # each story's own marks, in whichever part it is judged

        def right(part: list[str]) -> bool:
            return _all_right(_build(tmp_path_factory.mktemp("stories"), settings)[1], [
                (alerts[n], *_prometheus_case(STORIES[n][0], marks[n])) for n in part], story.every)

        together = set() if joined else _right_in_halves(batch, right)
        for n in batch:
            if n in together:
                _VERDICTS[n] = []
            else:
                _, single = _build(tmp_path_factory.mktemp("story"), settings)
                _VERDICTS[n] = _prometheus_wrong(single, [(alerts[n], *_prometheus_case(STORIES[n][0]))], story.every)
    return _VERDICTS[name]


def _right_in_halves(batch: list[str], right: Callable[[list[str]], bool]) -> set[str]:
    """The stories of `batch` shown right together: the whole batch if `right(batch)`, else those of each half shown
    so (down to a story alone). Each part is one promtool run whose stories share no alert and no GPU
    (_prometheus_case's marks), so a story right in a part is right: it is judged on its own series, at its own times,
    as alone. A part over promtool's sample limit costs little: the test group stops at that query."""
    if not batch:
        return set()
    if right(batch):
        return set(batch)
    if len(batch) == 1:
        return set()
    half = len(batch) // 2
    return _right_in_halves(batch[:half], right) | _right_in_halves(batch[half:], right)


def _all_right(folder, stories: list[tuple[str, list, dict]], every: int) -> bool:
    """Whether every story's rule gives the expected alerts at every time it is judged (as _prometheus_wrong finds
    none): judged folded (_folded_wrong) where the times are evenly spaced, else as they are."""
    wrong = _folded_wrong(folder, stories, every)
    return not _judged_wrong(folder, stories, every) if wrong is None else not wrong


# the labels _folded_wrong's copies have their own values of (a workload's namespace renamed by the GPU operator's
# ServiceMonitor too): a rule joining on none of them keeps them apart
COPIES_OWN = ("namespace", "exported_namespace", "node", "UUID")


def _folded_wrong(folder, stories: list[tuple[str, list, dict]], every: int) -> set[int] | None:
    """The judged times of the folded cases where a story's rule does not give the expected alerts (an empty set: it
    gives them at every time), judged at a few of the evaluations; None where the stories cannot be judged so (times
    not evenly spaced, a rule that may join one copy's series with another's, an alert that names no copy's own label).
    Judged one per scrape, a story needs promtool to evaluate the rules at every scrape; here each story is judged
    `copies` times over (up to 6), each copy under its own marks (COPIES_OWN): copy j at its (j+1)-th,
    (j+1+copies)-th, ... times, moved later so that they fall on the same evaluations as every other copy's. promtool
    evaluates the rules at each step from 0 (the stories' first 25 minutes are judged by no case), so `copies` times
    the series at 1/`copies` of the steps costs less (the idle batch: 7.3 s at 2 copies, 6.0 at 6; a single idle story
    judged every 30 s, 6.3 s at each scrape, 1.6 s folded). Each move is a multiple of the rules' 5 s step (see
    _judged_wrong). A folded case that fails names the times of all its copies: each is a time where the rule may
    differ, and every time where it does is among them."""
    times = list(stories[0][2])
    spacing = times[1] - times[0] if len(times) > 1 else 0
    copies = next((n for n in (6, 5, 4, 3, 2) if len(times) % n == 0), 0)
    if not copies or not spacing or times != list(range(times[0], times[-1] + 1, spacing)):
        return None
    assert all(list(expected) == times for _, _, expected in stories)
    alerts = list(dict.fromkeys(a for a, _, _ in stories))
    named = [labels for _, _, expected in stories for at in times for labels in _listed(expected[at])]
    # each copy's alerts its own (an alert of the rule names its namespace or node, marked: no aggregation merges two
    # copies' series), and no join matches one copy's series with another's
    if not named or not all(set(COPIES_OWN) & set(labels) for labels in named) \
            or joins_across_stories([alert_rule(folder, a)["expr"] for a in alerts], COPIES_OWN):
        return None
    group = copies * spacing
    # copy j is moved by late - j * spacing: its judged times[j::copies] fall on the multiples of `group`
    late = -(-(times[0] + (copies - 1) * spacing) // group) * group - times[0]
    moves = [late - j * spacing for j in range(copies)]
    assert moves[-1] >= 0 and all(m % RULE_STEP_SECONDS == 0 for m in moves) and group % every == 0
    interval = math.gcd(STEP, *moves)

    def copy(text: str, j: int) -> str:  # copy j's namespaces, node and GPU UUID (a GPU is its UUID)
        return re.sub(rf'\b({"|".join(COPIES_OWN)})="([^"]*)"', lambda m: f'{m[1]}="{m[2]}-c{j}"', text)

    def marked(labels: dict, j: int) -> dict:
        return {k: f"{v}-c{j}" if k in COPIES_OWN else v for k, v in labels.items()}
    series = [shifted_later({**s, "series": copy(s["series"], j)}, STEP, moves[j])
              for j in range(copies) for _, ss, _ in stories for s in ss]
    cases, judged_at = [], {}
    for i in range(len(times) // copies):
        judged = times[i * copies:(i + 1) * copies]  # copy j's judged time: judged[j], all at judged[0] + late
        judged_at[judged[0] + late] = judged
        for alert in alerts:
            expected = [expected_alert(folder, alert, **marked(labels, j)) for j, at in enumerate(judged)
                        for a, _, e in stories if a == alert for labels in _listed(e[at])]
            cases.append({"eval_time": f"{judged[0] + late}s", "alertname": alert, "exp_alerts": expected})
    try:
        promtool_test(folder, "stories.yaml", [{"interval": f"{interval}s", "input_series": series,
                                                  "alert_rule_test": cases}], evaluation_interval=f"{every}s")
    except AssertionError as failure:
        failed = [_seconds(line.split("time: ")[1].strip(" ,"))
                  for line in str(failure).splitlines() if "time:" in line]
        if not failed or not set(failed) <= set(judged_at):
            return set(times)  # a failure that names no judged case: every time judged again
        return {at for t in failed for at in judged_at[t]}
    return set()


# A link replaying 20 a scrape (200 per 5 minutes) whose exporter crash-loops down 12 to 15 minutes: awsemf still
# holds the reading before the gap (15 to 30 minutes), so the alarm's first period back holds the whole gap's growth
# (480 to 600 replays) and fires at the evaluations just after the return, where the rule (a level's horizon, 10
# minutes) counts the period's own deltas (20 to 60, under 50 at the first two or three). No CloudWatch form tells
# the gap's delta from a period's own growth: the description says so (cloudwatch_query.OTEL_GAP_LEVEL), and this
# pins what the user sees. An event alarm's story (uncorrectable-rows) counts the gap on both forms.
GAP_IN_ONE_PERIOD = {"pcie-replays-crash-loop-5m-up-15m-down", "pcie-replays-crash-loop-10m-up-12m-down"}


@pytest.mark.parametrize("name", [name for name in STORIES if name not in GAP_IN_ONE_PERIOD])
def test_both_forms_fire_on_the_truth_at_every_evaluation(name, tmp_path, tmp_path_factory):
    story, settings = STORIES[name]
    files, folder = _build(tmp_path, settings)
    expected = {t: story.alerts(t) for t in story.evaluations}
    assert any(expected.values())  # the story has a situation to find

    wrong = _prometheus_verdict(tmp_path_factory, name)
    assert not wrong, f"the Prometheus rule differs from the truth at {wrong}"
    cloudwatch = _cloudwatch_wrong(story, files, expected)
    assert not cloudwatch, f"the CloudWatch alarm differs from the truth at {cloudwatch}"


@pytest.mark.parametrize("name", sorted(GAP_IN_ONE_PERIOD))
def test_a_level_alarm_fires_on_a_gaps_growth_landed_in_its_first_period_back(name, tmp_path, tmp_path_factory):
    """The rule follows the story's truth at every evaluation; the alarm differs only by firing within the first 90
    seconds after the exporter's return from its gap (the gap's growth in the period), and says so."""
    from generator.cloudwatch_query import OTEL_GAP_LEVEL

    story, settings = STORIES[name]
    files, folder = _build(tmp_path, settings)
    expected = {t: story.alerts(t) for t in story.evaluations}
    wrong = _prometheus_verdict(tmp_path_factory, name)
    assert not wrong, f"the Prometheus rule differs from the truth at {wrong}"
    read = [k for k in range(story.scrapes) if story.readings(k)]
    returns = [k * STEP for k in read if k > 0 and k - 1 not in read]
    cloudwatch = _cloudwatch_wrong(story, files, expected)
    assert cloudwatch and all(not expected[t] and any(0 < t - back <= 90 for back in returns) for t in cloudwatch), \
        (cloudwatch, returns)
    assert OTEL_GAP_LEVEL in _cloudwatch_request(files, story.rule, story.metric)["AlarmDescription"]


def _cloudwatch_wrong(story: Story, files: dict, expected: dict) -> list[int]:
    """The evaluations where the generated alarm differs from `expected`, the story's scrapes through the agent's
    model (the alarm judged at every plausible length of its evaluation range)."""
    read = [k for k in range(story.scrapes) if story.readings(k)]
    config, job = agent_config(files[next(f for f in files if f.startswith("k8s/cwagent-prometheus-config"))])

    def scrape(k: int) -> Scrape:
        source = story.source(k)
        target = target_labels(job, source.node)
        target.update({key: value for key, value in (("exporter_pod", source.exporter[0]),
                                                      ("instance", source.exporter[1])) if key in target})
        lines = "".join(f"{story.metric}{{{s.labels()}}} {value_text(value)}\n" for s, value in story.readings(k))
        return Scrape(float(k * STEP), f"# TYPE {story.metric} {story.kind}\n{lines}", target)
    points = Agent(config, job).run([scrape(k) for k in read])
    request = _cloudwatch_request(files, story.rule, story.metric)

    def fired(t: float) -> object:
        """In ALARM at t; for a story of two GPUs, which GPUs' (MIG instances') contributors (the alarm judges each)."""
        states = cloudwatch_eval.alarm(request, points, t, evaluation_range=cloudwatch_eval.example_range(request)
                                       if story.example_range else None)
        if story.second_truth is None:
            return "ALARM" in states.values()
        return {(dict(key).get("gpu"), dict(key).get("GPU_I_ID")) for key, state in states.items() if state == "ALARM"}

    def said(labels) -> object:
        return bool(labels) if story.second_truth is None else {(a["gpu"], a.get("GPU_I_ID")) for a in _listed(labels)}
    return [t for t, labels in expected.items() if fired(t) != said(labels)]


def test_a_gpu_gone_while_critical_alerts_on_both_forms_while_its_last_datapoint_is_judged(tmp_path):
    """A GPU at 90 °C whose exporter stops for good after the scrape at 1170 s (the node removed). The alarm (1 of 1
    period, missing data `missing`) judges the last real datapoint of its evaluation range, breaching: ALARM at every
    length of the range 7 minutes after the stop, and the rule, which judges the period before its latest when that
    one holds no reading, fires too. 20 minutes after it the alarm is ALARM or OK as the range's unpublished length
    reaches that datapoint or not; the rule, its two periods empty, no longer fires."""
    def reading(k): return 90.0 if k < 40 else None
    seven, twenty = 1200 + 7 * 60 + 15, 1200 + 20 * 60
    story = Story("gpu-temp-critical", "DCGM_FI_DEV_GPU_TEMP", 80, reading, lambda k: Source(("ip-10-0-1-1", OLD[1])),
                  lambda t: t < 1170 + 600, {"node": "ip-10-0-1-1", "gpu": "0"}, [seven, twenty])
    files, folder = _build(tmp_path, "")
    expected = {t: story.alerts(t) for t in story.evaluations}
    assert _prometheus_wrong(folder, [(_alert(folder, story.rule), *_prometheus_case(story))], story.every) == []
    assert expected[seven] and not expected[twenty]
    assert _cloudwatch_wrong(replace(story, evaluations=[seven]), files, {seven: expected[seven]}) == []
    with pytest.raises(cloudwatch_eval.RangeDependent):
        _cloudwatch_wrong(replace(story, evaluations=[twenty]), files, {twenty: None})


def test_container_insights_framebuffer_rule_fires_on_a_memory_peak(tmp_path):
    """cloudwatch.source: container-insights judges the pod's used share (used / (used + free)) of each reading.
    A pod's A10G reads 12,000 MiB used of 24,000 except 23,500 used, 500 free at t=600 s: over 95 % at one
    reading, so both forms fire for the five minutes after it. The share is of one reading: the largest used over
    the largest used plus the largest free (12,000 free at other readings) is under 95 % at every window."""
    from pathlib import Path

    settings = (Path(__file__).parents[1] / "golden" / "builds" / "container-insights.yaml").read_text()
    files, folder = _build(tmp_path, settings)
    scrapes, spike = 60, 20

    def used(k): return 23500.0 if k == spike else 12000.0

    def truth(t): return t - 300 < spike * STEP <= t
    evaluations = [k * STEP + 15 for k in range(12, scrapes)]
    alert = {"namespace": "ml", "pod": "train-0"}
    expected = {t: alert if truth(t) else None for t in evaluations}
    labels = ('gpu="0",UUID="GPU-1",device="nvidia0",modelName="NVIDIA A10G",Hostname="ip-10-0-1-1",'
              'node="ip-10-0-1-1",namespace="ml",pod="train-0",container="main"')
    series = [{"series": f"DCGM_FI_DEV_FB_USED{{{labels}}}", "values": " ".join(f"{used(k):g}" for k in range(scrapes))},
              {"series": f"DCGM_FI_DEV_FB_FREE{{{labels}}}",
               "values": " ".join(f"{24000 - used(k):g}" for k in range(scrapes))}]
    wrong = _prometheus_wrong(folder, [(_alert(folder, "framebuffer-full"), series, expected)], 15)
    assert not wrong, f"the Prometheus rule differs from the truth at {wrong}"

    # CloudWatch: the add-on publishes the pod's used share once a minute (at even scrapes: the peak among them)
    request = next(a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                   if {"Key": "gpudash:rule", "Value": "framebuffer-full"} in a["Request"]["Tags"])
    attrs = {"ClusterName": "gpu-cluster", "Namespace": "ml", "PodName": "train", "FullPodName": "train-0",
             "ContainerName": "main", "NodeName": "ip-10-0-1-1", "InstanceId": "i-1", "InstanceType": "g5.xlarge",
             "GpuDevice": "nvidia0"}
    points = [Datapoint(NAMESPACE, "pod_gpu_memory_utilization", tuple(sorted((d, attrs[d]) for d in dims)),
                        float(k * STEP), used(k) / 24000 * 100)
              for k in range(0, scrapes, 2)
              for dims in DECLARATIONS["pod"] if all(d in attrs for d in dims)]
    cloudwatch = [t for t, labels in expected.items()
                  if ("ALARM" in cloudwatch_eval.alarm(request, points, t).values()) != bool(labels)]
    assert not cloudwatch, f"the CloudWatch alarm differs from the truth at {cloudwatch}"


def test_rules_read_readings_off_the_step_grid_without_lag(tmp_path):
    """At a 150 s scrape interval, scraped 37 s after each multiple of 150 s, a GPU reads 50 °C except 90 °C at
    t=337 s: temperature-critical holds while a 5-minute window ending at the evaluation holds that reading, from
    t=337 s to before t=637 s, judged every 15 s (evaluations off the multiples of the interval). A rule that reads
    its subquery at steps of the scrape interval (placed at multiples of it since the epoch) would see the reading
    only from t=450 s and keep it to t=750 s."""
    files, folder = _build(tmp_path, "scrape:\n  interval: 150s\n")
    scrapes, offset, hot = 8, 37, 2

    def at(k): return k * 150 + offset

    def truth(t): return t - 300 < at(hot) <= t
    alert = {"node": "ip-10-0-1-1", "gpu": "0"}
    expected = {t: alert if truth(t) else None for t in range(300, 1000, 15)}
    values = ["_"] * (at(scrapes - 1) + 1)
    for k in range(scrapes):
        values[at(k)] = "90" if k == hot else "50"
    source = Source(("ip-10-0-1-1", OLD[1]))
    series = [{"series": f'DCGM_FI_DEV_GPU_TEMP{{{source.labels()},node="{source.node}",instance="{OLD[1]}"}}',
               "values": " ".join(values)}]
    wrong = _prometheus_wrong(folder, [(_alert(folder, "gpu-temp-critical"), series, expected)], 15, interval=1)
    assert not wrong, f"the Prometheus rule differs from the truth at {wrong}"

"""The bundled data-missing rule at a scrape interval its periods are too short for, and the copy its warning (lint AL029)
tells the user to make, judged through the agent model of each build's own configuration and CloudWatch's documented
evaluation, every minute of two-hour stories of two nodes' exporters (a change from minute 40 to 60).

At scrape.interval 150s the copy the fix names on agent.pipeline: otel, one period of 600 s (the rule's window of
2 x 300 s kept), fires at the minutes the bundled rule fires, each alarm alike, and at none where nothing stopped; two
periods of 600 s, which a longer period alone gave, fire a stopped exporter pod at 2 of its 20 minutes. On
agent.pipeline: classic one period is no fix: its per-GPU alarm fires for a node removed or added.

At scrape.interval 5m, scrapes landing at the minute's edge, the bundled rule's cluster alarm fires where every exporter
fails every other scrape and nothing stopped, as its warning says.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval, kube_state
from tests.support.agent_points import AGENT_FILE
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, scrape_jobs
from tests.support.dcgm_fleet import target_labels

HOURS, START, STOP = 7200, 2400, 3600  # two hours; the change from minute 40 to 60
NODES = ("ip-10-0-1-1", "ip-10-0-1-2")
EXPORTER = {"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter"}
BUNDLED = Path(__file__).resolve().parents[2] / "alarms" / "gpu_alarms.py"
RULE_PERIODS = 'evaluation_periods=2,\n              datapoints_to_alarm=2,'


def _page(node: str) -> str:
    return ("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
            f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-{node}-0",device="nvidia0",modelName="NVIDIA A10G"}} 60\n')


def _during(t: float) -> bool:
    return START <= t < STOP


# story -> (what node n's exporter did at its k-th scrape, at t: "1" answered, "0" failed, "." no target; the exporter
# DaemonSet's (desired, available) at t; whether the agent runs at t)
STORIES = {
    "healthy": (lambda n, k, t: "1", lambda t: (2, 2), lambda t: True),
    "an exporter pod stopped": (lambda n, k, t: "." if n and _during(t) else "1",
                                lambda t: (2, 1) if _during(t) else (2, 2), lambda t: True),
    "an exporter hung, its pod available": (lambda n, k, t: "0" if n and _during(t) else "1", lambda t: (2, 2),
                                            lambda t: True),
    "the agent stopped": (lambda n, k, t: "1", lambda t: (2, 2), lambda t: not _during(t)),
    "a node removed": (lambda n, k, t: "." if n and t >= START else "1", lambda t: (1, 1) if t >= START else (2, 2),
                       lambda t: True),
    "a node added": (lambda n, k, t: "." if n and t < START + 30 else "1",
                     lambda t: (2, 2) if t >= START + 30 else (1, 1), lambda t: True),
    "every exporter failing every other scrape": (lambda n, k, t: "10"[k % 2], lambda t: (2, 2), lambda t: True),
}


def _built(folder: Path, interval: int, pipeline: str, periods: str | None = None) -> dict[str, str]:
    """The build at scrape.interval `interval` s of the bundled alarms, or (`periods`) of a copy of them whose
    data-missing rule's periods are those written (the other rules as the bundled)."""
    folder.mkdir()
    settings = f"scrape:\n  interval: {interval}s\nagent:\n  pipeline: {pipeline}\n"
    if periods:
        text = BUNDLED.read_text()
        assert RULE_PERIODS in text
        (folder / "alarms").mkdir()
        (folder / "alarms" / "gpu_alarms.py").write_text(text.replace(RULE_PERIODS, periods))
        settings += "definitions:\n  alarms: [alarms]\n"
    (folder / "gpudash.yaml").write_text(settings)
    return encode(build(load_project(folder / "gpudash.yaml"), grafana=False))


def _fired(files: dict[str, str], story: str, times: list[float]) -> dict[str, set[int]]:
    """{the data-missing alarm's kind (cluster, per-node, per-gpu, agent): the minutes from 20 to 120 it is in ALARM at
    (at any length of the evaluation range)}."""
    did, counts, running = STORIES[story]
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    scrapes = []
    for k, t in enumerate(times):
        if not running(t):
            continue
        desired, available = counts(t)
        scrapes.append(kube_state.scrape(ksm_job, t, EXPORTER, desired, available, desired))
        scrapes += [Scrape(t, _page(node) if did(n, k, t) == "1" else "", target_labels(job, node))
                    for n, node in enumerate(NODES) if did(n, k, t) != "."]
    points = Agent(config, job, others=[ksm_job]).run(scrapes)
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if "-gpu-data-missing-" in a["Request"]["AlarmName"]]
    fired: dict[str, set[int]] = {}
    for request in requests:
        kind = request["AlarmName"].split("-gpu-data-missing-")[1].removesuffix("critical").strip("-") or "cluster"
        for minute in range(20, HOURS // 60 + 1):
            ranges = cloudwatch_eval.alarm_ranges(request, points, minute * 60)
            if any("ALARM" in judged.values() for judged in ranges.values()):
                fired.setdefault(kind, set()).add(minute)
    return fired


def _times(interval: int) -> list[float]:
    """Scrapes 37 s past each multiple of the interval."""
    return [k * interval + 37 for k in range(HOURS // interval)]


@pytest.fixture(scope="module")
def at_150s(tmp_path_factory):
    folder = tmp_path_factory.mktemp("at-150s")
    return {"bundled": _built(folder / "bundled", 150, "otel"),
            "one period": _built(folder / "one", 150, "otel", "evaluation_periods=1, datapoints_to_alarm=1, "
                                                               "period_seconds=600,"),
            "two periods": _built(folder / "two", 150, "otel", "evaluation_periods=2, datapoints_to_alarm=2, "
                                                                "period_seconds=600,")}


@pytest.mark.parametrize("story", [s for s in STORIES if s != "every exporter failing every other scrape"])
def test_the_bundled_data_missing_fix_followed_at_150s_fires_as_the_rule_does(at_150s, story):
    bundled, one = (_fired(at_150s[name], story, _times(150)) for name in ("bundled", "one period"))
    assert one == bundled
    assert bool(bundled) == (story in ("an exporter pod stopped", "an exporter hung, its pod available",
                                       "the agent stopped"))
    if story == "an exporter pod stopped":
        assert bundled == {"cluster": set(range(49, 61))}
        # a longer period alone doubles the window: the pod stopped 20 minutes is seen at the last 2
        assert _fired(at_150s["two periods"], story, _times(150)) == {"cluster": {59, 60}}


def _one_period(files: dict[str, str]) -> dict[str, str]:
    """A build of the rule over two periods whose per-GPU alarm is judged over one (generate refuses the rule of one
    period on agent.pipeline: classic, so the alarm judged is the two periods' alarm edited so)."""
    document = json.loads(files["cloudwatch/alarms.json"])
    for alarm in document["alarms"]:
        if alarm["Request"]["AlarmName"].endswith("-gpu-data-missing-per-gpu-critical"):
            alarm["Request"].update({"EvaluationPeriods": 1, "DatapointsToAlarm": 1})
    return {**files, "cloudwatch/alarms.json": json.dumps(document)}


@pytest.mark.parametrize("interval, period, story, fired", [
    (150, 600, "a node removed", 18), (150, 600, "a node added", 3),
    (60, 300, "a node removed", 12), (60, 300, "a node added", 2)])
def test_on_classic_one_period_of_the_data_missing_rule_fires_for_a_node_coming_or_going(interval, period, story, fired,
                                                                                        tmp_path):
    """Why its fix on agent.pipeline: classic keeps two periods (data_missing.fewest_periods) and a rule of the user's
    of one period is refused there (render.alarms.churn_problem): its per-GPU alarm over one period reads the period a
    node came or left as short of observations."""
    two = _built(tmp_path / "two", interval, "classic",
                 f"evaluation_periods=2, datapoints_to_alarm=2, period_seconds={period},")
    assert _fired(two, story, _times(interval)) == {}
    assert len(_fired(_one_period(two), story, _times(interval)).get("per-gpu", set())) == fired


def test_at_five_minute_scrapes_at_the_minutes_edge_the_cluster_alarm_fires_where_no_exporter_stopped(tmp_path):
    """Every exporter failing every other scrape, each scrape within 0.3 s of the minute: a 300 s period holds no
    scrape at times, which the cluster alarm reads as no GPU reporting, and next to one holding only a failed round it
    is in ALARM (3 of the 71 minutes from 50 to 120); with scrapes 37 s past the minute at none. The per-node alarm,
    whose 600 s window holds three scrapes at times, two of them failed, fires at 2 of its 101 minutes from 20."""
    files = _built(tmp_path / "bundled", 300, "otel")
    jitter = random.Random(1)
    edge = [k * 300 + 59.9 + jitter.uniform(-0.3, 0.3) for k in range(HOURS // 300)]
    story = "every exporter failing every other scrape"
    fired = _fired(files, story, edge)
    assert {m for m in fired.get("cluster", set()) if m >= 50} == {51, 91, 111}
    assert fired.get("per-node") == {46, 96}
    assert _fired(files, story, _times(300)) == {}

"""Every bundled GROUP BY alarm past 500 series: its ORDER BY keeps the series that breaches among the 500 evaluated.

A multi-time-series alarm evaluates the 500 series its Metrics Insights query returns: past 500, "if you use an ORDER
BY clause ... the 500 that have the highest or lowest values according to your ORDER BY clause are returned. If you
do not include an ORDER BY clause, you can't control which 500 matching metrics are returned" (Metrics Insights
quotas), and it names at most 100 contributors in ALARM ("100+ time series evaluated to ALARM", alarm-limits.html).
The tests' model (tests/support/cloudwatch_eval.py) returns, without ORDER BY, the first 500 series the datapoints
give, and raises ContributorsCapped past 100 contributors in ALARM unless asked for every series evaluated.

Each story here has more than 500 series where the one breaching series comes last (the last node's last GPU, or the
last node): without ORDER BY the model cuts it (the alarm stays OK while a GPU breaches), with the bundled ORDER BY it
is evaluated and alone in ALARM. Every bundled GROUP BY alarm of the default build is judged (a new one without a
story fails `test_every_bundled_group_by_alarm_has_a_story`). tests/unit/test_cloudwatch_hot_over_500.py and
test_cloudwatch_idle_over_500.py hold the harder cases of the two alarms judged over several periods (series that came
within the window ranking before one breaching all along).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

import pytest

from tests.support import built, cloudwatch_eval, kube_state
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, scrape_jobs
from tests.support.dcgm_fleet import discovered, exporter_targets

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
PREFIX = "gpudash-gpu-cluster-"
PER_NODE = 8
NODES = 65  # 520 GPUs, each held by its own pod: 520 series per GPU or per pod
LAST = NODES * PER_NODE - 1  # the breaching GPU: the last node's last GPU
STEP = 30
END = 7200
START = END - 3600 - 2 * STEP  # the widest evaluation range (6 periods + 5) and a counter's baseline before it

# alarm (without its prefix): (the story, the contributor that breaches)
BREACHING_GPU = (("node", f"node-{NODES - 1}"), ("gpu", str(PER_NODE - 1)))
BREACHING_POD = (("namespace", "ml"), ("pod", f"p-{LAST}"))
STORIES = {
    "framebuffer-full-warning": ("whole", BREACHING_POD),
    "gpu-idle-warning": ("whole", (*BREACHING_POD, ("gpu", str(PER_NODE - 1)))),
    "gpu-idle-mig-warning": ("mig", (*BREACHING_POD, ("gpu", str(PER_NODE - 1)), ("GPU_I_ID", "1"),
                                     ("GPU_I_PROFILE", "7g.80gb"))),
    "gpu-temp-critical-critical": ("whole", BREACHING_GPU),
    "gpu-temp-high-warning": ("whole", BREACHING_GPU),
    "pcie-replays-warning": ("whole", BREACHING_GPU),
    "row-remap-failure-critical": ("whole", BREACHING_GPU),
    "uncorrectable-rows-warning": ("whole", BREACHING_GPU),
    "xid-error-critical": ("whole", BREACHING_GPU),
    "gpu-data-missing-per-node-critical": ("nodes", (("node", "node-504"),)),
    # 505 nodes of two GPUs, the last one's GPU 0 lost all along (a hole below its highest index)
    "gpu-stopped-reporting-critical": ("holes", (("node", "node-504"),)),
    # 520 kube-state-metrics pods in the agent's reach, the last answering under half its scrapes
    "gpu-data-missing-agent-critical": ("ksm", (("kube_state_metrics_pod", "monitoring/kube-state-metrics-519"),)),
}
KSM_PODS = 520
GAUGES = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
          "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_XID_ERRORS")
COUNTERS = ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS")


def _values(i: int, t: float, hot: set[int]) -> dict[str, float]:
    """GPU i's readings at t: a GPU of `hot` breaches every alarm (90 °C, 500 MiB free, 1 % busy, 60 PCIe replays
    per 5 minutes, a row remap failure, XID 79, a row remapped 150 s before END); every other GPU none (60 °C, 20,000
    MiB free, 50 % busy, no replay, no XID)."""
    if i in hot:
        return {"DCGM_FI_DEV_GPU_TEMP": 90.0, "DCGM_FI_DEV_FB_FREE": 500.0, "DCGM_FI_DEV_GPU_UTIL": 1.0,
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.01, "DCGM_FI_DEV_ROW_REMAP_FAILURE": 1.0,
                "DCGM_FI_DEV_XID_ERRORS": 79.0, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 1000 + 6 * (t - START) / STEP,
                "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": 2.0 + (t >= END - 150)}
    return {"DCGM_FI_DEV_GPU_TEMP": 60.0, "DCGM_FI_DEV_FB_FREE": 20000.0, "DCGM_FI_DEV_GPU_UTIL": 50.0,
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.5, "DCGM_FI_DEV_ROW_REMAP_FAILURE": 0.0, "DCGM_FI_DEV_XID_ERRORS": 0.0,
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 3.0, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": 0.0}


def _page(node: int, t: float, hot: set[int], mig: bool) -> str:
    """Node `node`'s exporter page: each GPU held by its own pod (`mig`: as one MIG instance, 7g.80gb)."""
    lines = {name: [f"# TYPE {name} {'counter' if name in COUNTERS else 'gauge'}"] for name in (*GAUGES, *COUNTERS)}
    for g in range(PER_NODE):
        i = node * PER_NODE + g
        instance = ',GPU_I_ID="1",GPU_I_PROFILE="7g.80gb"' if mig else ""
        labels = (f'gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",modelName="NVIDIA A100",Hostname="node-{node}"'
                  f'{instance},namespace="ml",pod="p-{i}",container="main"')
        for name, value in _values(i, t, hot).items():
            if name == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" and not mig:
                continue
            lines[name].append(f"{name}{{{labels}}} {value:g}")
    return "\n".join(line for block in lines.values() for line in block) + "\n"


@lru_cache(maxsize=None)
def _files():
    return built.files("{}\n")


def _requests() -> dict[str, dict]:
    return {entry["Request"]["AlarmName"].removeprefix(PREFIX): entry["Request"]
            for entry in json.loads(_files()["cloudwatch/alarms.json"])["alarms"]}


def _grouped(request: dict) -> str | None:
    """The Metrics Insights query of a GROUP BY alarm, else None."""
    for metric in request.get("Metrics", []):
        expression = metric.get("Expression", "")
        if cloudwatch_eval._is_query(expression) and " GROUP BY " in expression:
            return expression
    return None


@lru_cache(maxsize=None)
def _points(story: str, hot: frozenset[int], alone: str | None = None):
    """The datapoints every alarm of `story` reads, through the build's agent model; `alone`: only those the alarm of
    that name reads, scraped only over the widest evaluation range the model judges it at (cloudwatch_eval.alarm:
    EvaluationPeriods + EXTRA_PERIODS of its period) and a scrape interval before it: an alarm reads no datapoint of
    another metric nor of a time before its range."""
    config, job = agent_config(_files()[AGENT_FILE])
    reads = cloudwatch_eval.reads(*[r for name, r in _requests().items()
                                    if (name == alone if alone else STORIES.get(name, ("",))[0] == story)])
    start = START
    if alone:
        request = _requests()[alone]
        period = max(metric["Period"] for metric in request["Metrics"] if "Period" in metric)
        start = max(START, END - (request["EvaluationPeriods"] + cloudwatch_eval.EXTRA_PERIODS) * period - 2 * STEP)
    if story == "ksm":  # kube-state-metrics pods, each scraped at every step; one of `hot` answers two of every five
        ksm_job = scrape_jobs(_files()[AGENT_FILE])["gpudash-kube-state-metrics"]
        pods = [discovered(ksm_job, {**kube_state.KSM_POD, "__address__": f"10.0.{n // 250}.{n % 250}:8080",
                                     "__meta_kubernetes_pod_name": f"kube-state-metrics-{n}"}) for n in range(KSM_PODS)]
        page = kube_state.payload({"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter"}, 2, 2)
        scrapes = [Scrape(float(t), "" if n in hot and (t // STEP) % 5 >= 2 else page, pods[n])
                   for t in range(start, END, STEP) for n in range(KSM_PODS)]
        return Agent(config, job, others=[ksm_job], only=reads).run(scrapes)
    if story == "holes":  # 505 nodes of two GPUs each: one of `hot` serves GPU 1 alone (DCGM lost GPU 0)
        targets = exporter_targets(job, 505)
        page = lambda n: "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + "".join(
            f'DCGM_FI_DEV_GPU_TEMP{{gpu="{g}",UUID="GPU-{n}-{g}",device="nvidia{g}",modelName="NVIDIA A100",'
            f'Hostname="node-{n}"}} 60\n' for g in range(2) if not (g == 0 and n in hot))
        scrapes = [Scrape(float(t), page(n), targets[n]) for t in range(start, END, STEP) for n in range(505)]
        return Agent(config, job, only=reads).run(scrapes)
    if story == "nodes":  # 505 nodes of one GPU each: the last serves no DCGM series (its host engine lost)
        targets = exporter_targets(job, 505)
        page = lambda n: (f'# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-{n}-0",'
                          f'device="nvidia0",modelName="NVIDIA A100",Hostname="node-{n}"}} 60\n')
        scrapes = [Scrape(float(t), "" if n in hot else page(n), targets[n])
                   for t in range(start, END, STEP) for n in range(505)]
    else:
        targets = exporter_targets(job, NODES)
        scrapes = [Scrape(float(t), _page(n, t, set(hot), story == "mig"), targets[n])
                   for t in range(start, END, STEP) for n in range(NODES)]
    return Agent(config, job, only=reads).run(scrapes)


def _unordered(request: dict) -> dict:
    """The alarm with its query's ORDER BY removed (the form AWS says gives no control over which 500 are returned)."""
    metrics = [dict(m, Expression=re.sub(r" ORDER BY \w+\(\) (ASC|DESC)", "", m["Expression"]))
               if "Expression" in m else m for m in request["Metrics"]]
    return dict(request, Metrics=metrics)


def test_every_bundled_group_by_alarm_has_a_story():
    grouped = {name for name, request in _requests().items() if _grouped(request)}
    assert grouped == set(STORIES), sorted(grouped ^ set(STORIES))
    assert all(" ORDER BY " in _grouped(_requests()[name]) for name in grouped)


@pytest.mark.parametrize("name", sorted(STORIES))
def test_past_500_series_the_order_by_keeps_the_breaching_series(name):
    """520 series (505 nodes for the per-node alarm, 520 kube-state-metrics pods for the agent alarm), the breaching one
    last: with the bundled ORDER BY it is among
    the 500 evaluated and alone in ALARM; without one the model's first 500 leave it out and the alarm reads OK."""
    story, breaching = STORIES[name]
    request = _requests()[name]
    # a story told for this alarm alone is scraped over this alarm's range alone (_points: it reads nothing before)
    alone = name if [s for s, _ in STORIES.values()].count(story) == 1 else None
    points = _points(story, frozenset({LAST} if story == "whole" or story == "mig" else {504}
                                      if story in ("nodes", "holes") else {KSM_PODS - 1}), alone)
    states = cloudwatch_eval.alarm(request, points, END)
    assert len(states) == 500, len(states)
    assert {key for key, state in states.items() if state == "ALARM"} == {breaching}, (states.get(breaching))
    unordered = cloudwatch_eval.alarm(_unordered(request), points, END)
    assert len(unordered) == 500 and breaching not in unordered
    assert "ALARM" not in unordered.values()


def _temperatures(hot: frozenset[int]):
    """The datapoints the critical-temperature alarm reads of 520 GPUs whose exporters serve their temperature alone
    (those of `hot` at 90 °C, the others at 60 °C, as _values has them), scraped over the alarm's range and a scrape
    interval before it (as _points does for an alarm alone): the alarm reads no other metric. Each node's page is the
    same at every scrape, so the agent model works each out once (the whole story's pages, whose counters move at
    every scrape for a hot GPU, were worked out anew for each: 3 of the file's 11 CPU-s)."""
    request = _requests()["gpu-temp-critical-critical"]
    config, job = agent_config(_files()[AGENT_FILE])
    targets = exporter_targets(job, NODES)
    period = max(metric["Period"] for metric in request["Metrics"] if "Period" in metric)
    start = max(START, END - (request["EvaluationPeriods"] + cloudwatch_eval.EXTRA_PERIODS) * period - 2 * STEP)
    pages = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" + "".join(
        f'DCGM_FI_DEV_GPU_TEMP{{gpu="{g}",UUID="GPU-{n}-{g}",device="nvidia{g}",modelName="NVIDIA A100",'
        f'Hostname="node-{n}",namespace="ml",pod="p-{n * PER_NODE + g}",container="main"}} '
        f'{_values(n * PER_NODE + g, END, hot)["DCGM_FI_DEV_GPU_TEMP"]:g}\n' for g in range(PER_NODE))
        for n in range(NODES)]
    return Agent(config, job, only=cloudwatch_eval.reads(request)).run(
        [Scrape(float(t), pages[n], targets[n]) for t in range(start, END, STEP) for n in range(NODES)])


def test_past_100_contributors_in_alarm_cloudwatch_names_100_plus():
    """150 GPUs at 90 °C among 520: the temperature alarm is in ALARM with 150 contributors, of which CloudWatch names
    at most 100 ("100+ time series evaluated to ALARM"): the model will not say which (ContributorsCapped), and gives
    every series it evaluated when asked."""
    request = _requests()["gpu-temp-critical-critical"]
    points = _temperatures(frozenset(range(LAST - 149, LAST + 1)))
    with pytest.raises(cloudwatch_eval.ContributorsCapped):
        cloudwatch_eval.alarm(request, points, END)
    states = cloudwatch_eval.alarm(request, points, END, evaluated=True)
    assert sum(state == "ALARM" for state in states.values()) == 150
    assert cloudwatch_eval.state_reason(states) == "100+ time series evaluated to ALARM"
    assert cloudwatch_eval.alarm_state(states) == "ALARM"
    few = cloudwatch_eval.alarm(request, _temperatures(frozenset(range(LAST - 94, LAST + 1))), END)
    assert cloudwatch_eval.state_reason(few) == "95 out of 500 time series evaluated to ALARM"


def _hot_earlier(node: int, t: float) -> str:
    """The last GPU at 88 °C all along; 505 GPUs at 95 °C until 20 minutes before END, 45 °C since; the rest 45 °C."""
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for g in range(PER_NODE):
        i = node * PER_NODE + g
        temp = 88.0 if i == LAST else 95.0 if i < 505 and t < END - 1200 else 45.0
        lines.append(f'DCGM_FI_DEV_GPU_TEMP{{gpu="{g}",UUID="GPU-{node}-{g}",device="nvidia{g}",'
                     f'modelName="NVIDIA A100",Hostname="node-{node}"}} {temp:g}')
    return "\n".join(lines) + "\n"


@pytest.mark.xfail(strict=True, reason="a one-period GROUP BY alarm ranks its series over its evaluation range, not "
                                       "its period: 505 GPUs at 95 C until 20 minutes ago rank before one at 88 C now, "
                                       "which is not evaluated where the range holds 6 periods (AWS does not publish "
                                       "the range's length nor the window ORDER BY ranks over; docs/alarms.md)")
def test_past_500_series_gpus_hot_earlier_in_the_range_leave_no_gpu_hot_now_unjudged():
    """The critical-temperature alarm (MAX > 87 over one 5-minute period, ranked by MAX() DESC) with 520 GPUs: the
    last at 88 °C all along, 505 that were at 95 °C until 20 minutes ago. Ranked over a range of 2 or 3 periods the GPU
    at 88 °C is evaluated and alone in ALARM; over 6 periods (EvaluationPeriods + 5, the widest the model judges) the
    505 take the 500 places and the alarm reads OK. No function of the window ranks a series breaching now before
    ones that breached higher earlier in it (a sum of flags past the level, as temp-high ranks, still ranks 505 GPUs
    hot for 10 minutes before one hot for the last 5)."""
    request = _requests()["gpu-temp-critical-critical"]
    config, job = agent_config(_files()[AGENT_FILE])
    targets = exporter_targets(job, NODES)
    points = Agent(config, job, only=cloudwatch_eval.reads(request)).run(
        [Scrape(float(t), _hot_earlier(n, t), targets[n]) for t in range(END - 1800, END, STEP) for n in range(NODES)])
    for length in (2, 3):  # the GPU hot now is evaluated, and fires
        assert cloudwatch_eval.alarm(request, points, END, evaluation_range=length).get(BREACHING_GPU) == "ALARM"
    with pytest.raises(cloudwatch_eval.RangeDependent):  # the model, judging every length, will not say
        cloudwatch_eval.alarm(request, points, END)
    assert cloudwatch_eval.alarm(request, points, END, evaluation_range=6).get(BREACHING_GPU) == "ALARM"

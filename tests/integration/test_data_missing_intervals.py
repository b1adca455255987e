"""The data-missing rule's count of an exporter target's scrapes and its CloudWatch twin per node fire and resolve
at the same minutes, at any scrape interval, whatever the scrapes' place in the interval.

Each story is a whole hour of one node's exporter among two: answering, failing its scrapes with its pod still
available ("0"), or answering without one DCGM series ("e"), as a function of the time. Its scrapes are taken every
`scrape.interval` seconds, some seconds off the multiples of the interval (a target's scrapes are placed by a hash of
its labels, not at multiples of the interval since the epoch). The truth at each minute t: more than half of the
node's scrapes taken in (t - 10 min, t] brought no GPU data. The CloudWatch alarms are evaluated over what the agent
model publishes of the scrapes, the rule by promtool over the same scrapes, each minute of the hour.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.integration.test_data_missing import (AGENT_FILE, EMPTY, EXPORTER, NODES, PER_NODE_ALARM, REASON,
                                                 _data_missing_rule, _in_alarm, _labels, _one_gpu_page, _rule_alarms,
                                                 _story_target, node_labels)
from tests.support import kube_state
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, scrape_jobs
from tests.support.dcgm_fleet import target_labels
from tests.support.promtool_rules import SAMPLES, promtool_test

HOUR, WINDOW = 3600, 600
# scrape interval (seconds) -> how far after each multiple of it the targets are scraped
INTERVALS = {30: 13, 60: 23, 150: 37}


def _crash_loop(t: int) -> str:
    """CrashLoopBackOff at its 5-minute cap from minute 20 to 40: answering one minute of every five."""
    return "1" if not 1200 <= t < 2400 or (t - 1200) % 300 >= 240 else "0"


# story -> what the second node's exporter did at a scrape taken at t (the first node's answers every time)
STORIES = {
    "hung 7 minutes from minute 20:20": lambda t: "0" if 1220 <= t < 1640 else "1",
    "answering without DCGM series for 15 minutes from minute 20:10": lambda t: "e" if 1210 <= t < 2110 else "1",
    "in a crash loop from minute 20 to 40": _crash_loop,
    "failing and answering empty by turns for 8 minutes": lambda t: ("0" if t // 60 % 2 else "e") if 1200 <= t < 1680
    else "1",
}


def _times(interval: int) -> list[int]:
    return list(range(INTERVALS[interval], HOUR, interval))


def _truth(interval: int, story) -> dict[int, bool]:
    """Each minute: the node's scrapes of the last 10 minutes that brought no GPU data are more than half of them."""
    limit = WINDOW / interval / 2
    return {m: sum(story(t) != "1" for t in _times(interval) if m * 60 - WINDOW < t <= m * 60) > limit
            for m in range(1, HOUR // 60 + 1)}


@pytest.fixture(scope="module", params=sorted(INTERVALS), ids=lambda s: f"{s}s")
def built(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"scrape-{request.param}s")
    (folder / "gpudash.yaml").write_text(f"scrape:\n  interval: {request.param}s\n")
    project = load_project(folder / "gpudash.yaml")
    return request.param, encode(build(project)), folder


@pytest.mark.parametrize("name", STORIES)
def test_the_per_node_alarm_fires_at_the_minutes_of_the_truth(built, name):
    interval, files, _ = built
    story = STORIES[name]
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    scrapes = [kube_state.scrape(ksm_job, t, EXPORTER, 2, 2, 2) for t in _times(interval)]
    for node, did in ((NODES[0], lambda t: "1"), (NODES[1], story)):
        scrapes += [Scrape(t, {"1": _one_gpu_page(node), "0": "", "e": EMPTY}[did(t)], target_labels(job, node))
                    for t in _times(interval)]
    points = Agent(config, job, others=[ksm_job]).run(scrapes)
    requests = _rule_alarms(files)
    truth = _truth(interval, story)
    assert any(truth.values())
    wrong = {}
    for minute, fires in truth.items():
        fired = {alarm: sorted(dict(key)["node"] for key in keys)
                 for alarm, keys in _in_alarm(requests, points, minute * 60).items()}
        if fired != ({PER_NODE_ALARM: [NODES[1]]} if fires else {}):
            wrong[minute] = fired
    assert wrong == {}, sorted(m for m, fires in truth.items() if fires)


def _values(interval: int, value) -> str:
    """promtool values at 1 s steps over the hour: `value(t)` at each scrape (None: no sample), none between."""
    tokens, last = [], 0
    for t in _times(interval):
        sample = value(t)
        tokens += [f"_x{t - last}"] if t > last else []
        tokens.append(sample if sample is not None else "_")
        last = t + 1
    return " ".join(tokens)


def test_the_rule_fires_at_the_same_minutes(built):
    """The rule over the same scrapes, by promtool, evaluated each minute: the node's target exactly at the minutes
    of the truth (and so of the per-node alarm, test_the_per_node_alarm_fires_at_the_minutes_of_the_truth)."""
    interval, files, folder = built
    rule = _data_missing_rule(files, folder)
    ksm = f'job="kube-state-metrics",instance="10.0.2.9:8080",{_labels(EXPORTER)}'
    cluster = [{"series": f"{metric}{{{ksm}}}", "values": _values(interval, lambda t: "2")}
               for metric in (kube_state.DESIRED, kube_state.AVAILABLE, kube_state.UPDATED)]
    cluster.append({"series": f"{kube_state.LABELS}{{{ksm},{_labels(kube_state.OPERATOR_LABELS)}}}",
                    "values": _values(interval, lambda t: "1")})
    alert = {"exp_labels": {**rule["labels"], **node_labels(_story_target(NODES[1])), "reason": REASON},
             "exp_annotations": {**rule["annotations"],
                                 "summary": rule["annotations"]["summary"].replace("{{ $labels.reason }}", REASON)}}
    def node_series(target: dict[str, str], did) -> list[dict]:
        labels = _labels(target)
        return [{"series": f"up{{{labels}}}", "values": _values(interval, lambda t: "0" if did(t) == "0" else "1")},
                {"series": f"{SAMPLES}{{{labels}}}",
                 "values": _values(interval, lambda t: "1" if did(t) == "1" else "0")},
                {"series": f'DCGM_FI_DEV_GPU_TEMP{{{labels},gpu="0"}}',
                 "values": _values(interval, lambda t: "60" if did(t) == "1" else None)}]

    def fired(target: dict[str, str]) -> dict:
        return {**alert, "exp_labels": {**alert["exp_labels"], **node_labels(target)}}
    tests = [{"name": name, "interval": "1s",
              "input_series": cluster + node_series(_story_target(NODES[0]), lambda t: "1")
              + node_series(_story_target(NODES[1]), story),
              "alert_rule_test": [{"eval_time": f"{m}m", "alertname": rule["alert"],
                                   "exp_alerts": [alert] if fires else []} for m, fires in _truth(interval, story).items()]}
             for name, story in STORIES.items()]
    # All stories in one group, each story's node under its own name and address: the per-target branch judges each
    # target by its own series, and the cluster's branches read kube-state-metrics' series, the same in every story,
    # and whether any GPU reported (the first node always does). promtool evaluates the rule once per minute for
    # them all instead of once per story. Should the group fail, each story runs alone for its own verdict.
    targets = {name: {k: f"{v}-{i}" if k in ("node", "instance", "exporter_pod") else v
                      for k, v in _story_target(NODES[1]).items()} for i, name in enumerate(STORIES)}
    truths = {name: _truth(interval, story) for name, story in STORIES.items()}
    together = {"name": "every story", "interval": "1s",
                "input_series": cluster + node_series(_story_target(NODES[0]), lambda t: "1") + [
                    s for name, story in STORIES.items() for s in node_series(targets[name], story)],
                "alert_rule_test": [{"eval_time": f"{m}m", "alertname": rule["alert"],
                                     "exp_alerts": [fired(targets[name]) for name in STORIES if truths[name][m]]}
                                    for m in truths[next(iter(STORIES))]]}
    try:
        promtool_test(folder, f"intervals_{interval}s_together_test.yaml", [together], evaluation_interval="1m")
    except AssertionError:
        promtool_test(folder, f"intervals_{interval}s_test.yaml", tests, evaluation_interval="1m")
        raise

"""A row remapped while a GPU's exporter is away, judged by the `uncorrectable-rows` CloudWatch alarm (the payloads
through the model of the agent's OTel pipeline, awsemf's delta cache as its source has it) and by its Prometheus
rule (`promtool test rules` on the generated rules): do the twins fire after the same gaps?

awsemf keeps a counter's previous reading in a cache swept every 15 minutes from the exporter's start, each sweep
dropping the readings 15 minutes old or more (internal/aws/metrics/metric_calculator.go of the amazon-contributing
fork, `cleanInterval = 15 * time.Minute` at 306057926a7b0902da29f4dc9a9b77cbec6161cf; the agent builds that copy in
place of upstream's, where it is 5 minutes, from 1.300058.0 on: go.mod's replace of internal/aws/metrics, a8af9da70,
and RELEASE_NOTES "Increased data cache TTL and cleanup interval"). A failed scrape's staleness markers are dropped
by awsemf (IsStaleNaNInf) and leave the cached reading in place. So the first reading after a gap of under 15
minutes carries the gap's increase whenever the sweeps fall, one after 15 to 30 minutes only when no sweep fell
between the reading's fifteenth minute and the return, one after 30 minutes or more never. The rule counts the
increase when the reading before the gap is within promql.WINDOW_PREVIOUS_WITHIN (10 minutes) of the return.

Each GPU is alone on its node; its exporter fails every scrape of its gap (each series marked stale at the first),
the counter reads 7 before it and 8 from the first scrape back: the truth is one row remapped in the 5 minutes that
hold the return, whatever the gap's length (an event alarm, `> 0`: a row remapped during an exporter's crash loop or
upgrade is one). The rule counts it when the reading before the gap is within an hour (render.alarms.gap_reach, the
copy's own raw samples): after gaps of 4.5 to 50 minutes, not after 65. The alarm counts it only while awsemf keeps
the reading: 4.5, 9.5 and 12.5 minutes whatever the phase of awsemf's sweep, 20 minutes unless a sweep fell in the
gap's last 5 minutes, 40 minutes and more never. No CloudWatch form can do better (the agent publishes no delta for
the reading back once it forgot the one before): the alarm's description and lint AL018 say so, and
test_the_alarm_says_what_it_misses pins what the user reads.
"""

from __future__ import annotations

import pytest

from tests.integration.test_device_counters import FIELDS, REPLAYS, ROWS
from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval
from tests.support.alarm_requests import alarm_request
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.promtool_rules import parsed_rules

STEP, STEPS = 30, 180  # an hour and a half of 30 s scrapes, k = 0 .. 179, and k = -1 before
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
LAST = 40  # each GPU's last scrape before its gap (1,200 s)
# node -> scrapes its exporter fails after LAST (the gap between its clean readings is one scrape longer)
AWAY = {"gap-4m": 8, "gap-9m": 18, "gap-12m": 24, "gap-20m": 39, "gap-40m": 80, "gap-50m": 100, "gap-65m": 130}
RULE_COUNTS = ("gap-4m", "gap-9m", "gap-12m", "gap-20m", "gap-40m", "gap-50m")  # the reading before within an hour
ENDS = range(300, STEPS * STEP + 1, 300)


def _back(node: str) -> int:
    """The scrape of the node's first reading after its gap."""
    return LAST + AWAY[node] + 1


def _series(node: str, k: int) -> dict[str, float] | None:
    """{series text: value} the node's exporter serves at scrape k; None: the scrape fails."""
    if LAST < k < _back(node):
        return None
    labels = (f'gpu="0",UUID="GPU-{node}",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="{node}",'
              f'DCGM_FI_DRIVER_VERSION="550.54.15"')
    return {f"{REPLAYS}{{{labels}}}": 1_000.0, f"{ROWS}{{{labels}}}": 8.0 if k >= _back(node) else 7.0}


def _payload(node: str, k: int) -> str:
    served = _series(node, k)
    if served is None:
        return ""
    return "\n".join([f"# TYPE {name} counter" for name in FIELDS] +
                     [f"{series} {value:.0f}" for series, value in served.items()]) + "\n"


def truth(node: str) -> set[int]:
    """The ends of the 5-minute windows holding the row's remap (between the reading before the gap and the return)."""
    return {end for end in ENDS if end // STEP - 11 < _back(node) <= end // STEP - 1}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("counter-gap-twins"), {}, FIELDS)


def _alarm_fires(files, phase: float) -> dict[str, set[int]]:
    """{node: the ends at which the CloudWatch alarm is in ALARM for its GPU}, awsemf sweeping its cache at
    `phase` + k x 900 s."""
    config, job = agent_config(files[AGENT_FILE])
    agent = Agent(config, job)
    agent.sweep_phase = phase
    points = agent.run([Scrape(float(k * STEP), _payload(node, k), target_labels(job, node))
                        for k in range(-1, STEPS) for node in AWAY])
    rows = alarm_request(files, "uncorrectable-rows")
    return {node: set() for node in AWAY} | cloudwatch_eval.fired_at(rows, points, ENDS, "node")


# the 20-minute gap's reading (1,200 s) is dropped by a sweep between 2,100 s (its fifteenth minute) and the return
# (2,400 s): sweeps at 0, 900, 1,800, 2,700 s or at 700, 1,600, 2,500 s keep it, at 420, 1,320, 2,220 s drop it
PHASES = {"kept": 0.0, "also kept": 700.0, "swept": 420.0}


def test_the_alarm_counts_the_gap_increase_as_long_as_awsemf_keeps_the_reading_before_it(built):
    files, _ = built
    for name, phase in PHASES.items():
        fired = _alarm_fires(files, phase)
        assert {node: ends for node, ends in fired.items() if ends} == {
            node: truth(node) for node in ("gap-4m", "gap-9m", "gap-12m")
            + (("gap-20m",) if name != "swept" else ())}, name


def _stored(node: str) -> dict[str, str]:
    """The node's row counter as Prometheus stores it from the generated scrape job (which attaches `node`), on
    promtool's grid (scrape k at (k + 1) x 30 s): a failed scrape marks the series stale."""
    values, before = [], False
    name = None
    for k in range(-1, STEPS):
        served = _series(node, k)
        if served is not None:
            name, value = next((s, v) for s, v in served.items() if s.startswith(ROWS))
            values.append(f"{value:.0f}")
        else:
            values.append("stale" if before else "_")
        before = served is not None
    return {"series": f'{name[:-1]},node="{node}"}}', "values": " ".join(values)}


_RULE_VERDICT: dict[str, str | None] = {}  # the rules' folder -> promtool's failure judging every node's gap, or None


def _rule_verdict(built) -> str | None:
    """promtool's failure judging the rule on every node's gap at once, or None: each node's GPU (its own node and UUID)
    is its own alert, expected at the ends its truth holds the remap (none after 65 minutes). One run for the seven
    gaps: promtool evaluates the rule at every step whatever the series, so seven runs of one series cost about seven
    times one of seven. The rule joins no node's series with another's (checked, as for test_counter_copies_hostile's
    stories told apart by their node); a run over promtool's sample limit is halved (tests/support/promtool_batches)."""
    from tests.support.promtool_rules import stories_alert_failure
    import yaml

    _, folder = built
    if str(folder) not in _RULE_VERDICT:
        groups = parsed_rules((folder / "rules.yaml").read_text())["groups"]
        (rule,) = [r for g in groups for r in g["rules"] if r["labels"]["gpudash_rule"] == "uncorrectable-rows"]
        _RULE_VERDICT[str(folder)] = stories_alert_failure(
            folder, rule, AWAY, ENDS, lambda node, end: node in RULE_COUNTS and end in truth(node), _stored, STEP,
            "gap_twins")
    return _RULE_VERDICT[str(folder)]


@pytest.mark.parametrize("node", list(AWAY))
def test_the_rule_counts_a_row_remapped_during_a_gap_of_up_to_an_hour(built, node):
    """The rule, on the same readings, fires at the ends of the windows holding the first reading back after every
    gap up to an hour (where the alarm fires, and after 20 minutes whatever awsemf's sweep, 40 and 50 minutes where the
    alarm never does); after 65 minutes it stays silent. On the rule of main (the reading before looked for 10
    minutes back) it stayed silent from the 12.5-minute gap on. Every node's gap is judged in one promtool run
    (_rule_verdict): a node's wrong alert fails every node's test, promtool's message naming the node."""
    files, _ = built
    fires = truth(node) if node in RULE_COUNTS else set()
    assert fires or node == "gap-65m"
    assert _alarm_fires(files, PHASES["kept"])[node] <= fires  # where the alarm fires, the rule does
    failure = _rule_verdict(built)
    assert failure is None, failure


def test_the_alarm_says_what_it_misses(built):
    """What the user reads where the alarm misses a gap's row: its description on CloudWatch, and lint's note."""
    import json

    from generator.cloudwatch_query import OTEL_GAP_EVENTS, OTEL_GAP_LEVEL
    from generator.lint.runner import lint_project
    from generator.project import load_project

    files, folder = built
    requests = {a["Request"]["AlarmName"]: a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    rows = alarm_request(files, "uncorrectable-rows")
    assert OTEL_GAP_EVENTS in rows["AlarmDescription"] and len(rows["AlarmDescription"]) <= 1024
    assert "missed past 15 minutes" in rows["AlarmDescription"] and "up to an hour" in rows["AlarmDescription"]
    assert OTEL_GAP_LEVEL not in rows["AlarmDescription"]
    notes = {f.where.split()[-1]: f.message for f in lint_project(load_project(folder / "gpudash.yaml", folder / "counters.csv"))
             if f.rule == "AL018"}
    assert notes[rows["AlarmName"]].endswith(OTEL_GAP_EVENTS), notes
    replays = alarm_request(files, "pcie-replays")
    assert OTEL_GAP_LEVEL in replays["AlarmDescription"] and notes[replays["AlarmName"]].endswith(OTEL_GAP_LEVEL)
    assert set(notes) <= set(requests)

"""The counter alarms on CloudWatch (the OTel pipeline) and their Prometheus rules on the same exporter rollouts: the
same scrapes of one node's old and new exporter pods (tests/unit/test_cloudwatch_exporter_overlap.py `scrapes`),
pushed through the agent model into the generated alarm, evaluated as CloudWatch documents, and written as the
series gpudash's Prometheus scrape job stores (its relabelling, the exporter's labels) for `promtool test rules` on
the generated rules file. Both are judged at every minute from 6 to 30 (the rules' 5-minute window full).

Where they differ is the CloudWatch agent's doing (docs/cloudwatch.md, "Two exporter pods on one node"): it keeps one
delta series
per exporter revision, so the seconds two revisions run together count twice there, and the increase between the old
pod's last reading and the new pod's first counts nowhere; the rules read each GPU once across its exporters' copies,
the largest of their latest readings at each step (promql.held_reading).
"""

from __future__ import annotations

import json
import math

import pytest
import yaml

from tests.support import cloudwatch_eval
from tests.support import exporter_overlap as overlap
from tests.support.promtool_rules import expected_alert, promtool_test, rules  # noqa: F401 (a fixture)

MINUTES = range(6, overlap.END // 60 + 1)
REPLAYS, ROWS = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
ALARMS = {"GpudashPcieReplays": "gpudash-gpu-cluster-pcie-replays-warning",
          "GpudashUncorrectableRows": "gpudash-gpu-cluster-uncorrectable-rows-warning"}
STEP = 10  # s: the input series' interval (the old pod is scraped on the half minute, the new one 10 s past)
INTERVAL = 30  # s: the scrape interval


def _cloudwatch(alert: str, old_until: int, new_from: int, remapped_at: float = math.inf) -> set[int]:
    """The minutes at whose end the CloudWatch alarm of `alert` is in ALARM (judged on its 3 periods, as
    test_cloudwatch_exporter_overlap does)."""
    files, points = overlap.published_points("otel", old_until, new_from, remapped_at=remapped_at)
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if a["Request"]["AlarmName"] == ALARMS[alert]]
    return {m for m in MINUTES
            if "ALARM" in cloudwatch_eval.alarm(request, points, m * 60, evaluation_range=3).values()}


def _readings(remapped_at: float) -> dict:
    """The counters the stories store, each a function of the instant its reading is taken."""
    return {REPLAYS: lambda taken: str(overlap.replays_at(taken)), ROWS: lambda taken: str(int(taken >= remapped_at))}


def _series(old_until: int, new_from: int, remapped_at: float = math.inf, readings: dict | None = None) -> list[dict]:
    """The two exporter pods' series as gpudash's Prometheus scrape job stores them, one sample per scrape at 10 s
    steps from 0; the old pod's target gone, a staleness marker where its next scrape would have been (Prometheus'
    scrape loop, endOfRunStaleness)."""
    files = overlap.overlap_build("otel")
    (job,) = [j for j in yaml.safe_load(files["prometheus/additional-scrape-configs.yaml"])["prometheus"][
        "prometheusSpec"]["additionalScrapeConfigs"] if j["job_name"] == "dcgm-exporter"]
    targets = {"old": overlap.revision_target(job, "nvidia-dcgm-exporter-old", "10.0.1.10", "5d8f7c9b6d"),
               "new": overlap.revision_target(job, "nvidia-dcgm-exporter-new", "10.0.1.11", "7c9d6f5b48")}
    hosts = {"old": ("Hostname", "nvidia-dcgm-exporter-old"), "new": ("hostname", overlap.NODE)}
    slots = overlap.END // STEP + 1
    readings = readings or _readings(remapped_at)
    values = {(who, metric): ["_"] * slots for who in targets for metric in readings}
    last = {}
    for who, scraped, taken in overlap.scrapes(old_until, new_from):
        if scraped < 0:
            continue
        slot = int(scraped) // STEP
        for metric, reading in readings.items():
            values[who, metric][slot] = reading(taken)
        last[who] = slot
    if old_until < overlap.END:
        for metric in readings:
            values["old", metric][last["old"] + INTERVAL // STEP] = "stale"
    series = []
    for (who, metric), samples in values.items():
        labels = {**targets[who], "gpu": "0", "UUID": "GPU-0", "device": "nvidia0", "modelName": "NVIDIA A10G",
                  hosts[who][0]: hosts[who][1], "pod": "train-0", "namespace": "ml", "container": "main"}
        text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        series.append({"series": f"{metric}{{{text}}}", "values": " ".join(samples)})
    return series


# The stories each alert is judged on: (old pod's last scrape, new pod's first, a row remapped at) -> the minutes of
# MINUTES at which the rule fires
OVERLAPS = {"5-minute-overlap": 600, "1-minute-overlap": 840}
ROWS_GAP = (900, 930, 890)  # maxSurge 0: the row remapped between the old pod's last reading and the new one's first
ROWS_OUTSIDE_THE_GAP = {"after-the-new-pods-first-reading": ((900, 930, 1000), range(18, 23)),
                        "in-a-surge-overlap": ((900, 600, 890), range(16, 21))}
FIRING = {"GpudashPcieReplays": {(900, new_from, math.inf): set() for new_from in OVERLAPS.values()},
          "GpudashUncorrectableRows": {ROWS_GAP: {16, 17, 18, 19, 20},
                                       **{story: set(minutes) for story, minutes in ROWS_OUTSIDE_THE_GAP.values()}}}
_FAILED: dict[tuple, str | None] = {}  # (the rules' folder, alert) -> promtool's failure judging its stories, or None


def _prometheus_fires(rules, alert: str, story: tuple[int, int, float]) -> None:
    """Pass when the rule's alert fires at the story's minutes of FIRING and at no other minute of MINUTES. Every
    story of the alert is judged in one promtool run, each under its own namespace, node and GPU UUID
    (test_counter_copies_hostile._stories_own), its alerts expected on its own node: promtool's cost is evaluating the
    rule at each step, whatever the series. The rule joins no story's series with another's (judged_apart); a run over
    promtool's sample limit is halved (tests/support/promtool_batches); any other failure fails every story's test of
    the alert with promtool's message (the node of a story's alert ends in its -s<k>)."""
    from tests.support.promtool_rules import judged_apart, stories_own
    from tests.support.promtool_rules import alert_rule
    from tests.support.promtool_batches import batch_failure

    stories = list(FIRING[alert].items())
    key = (str(rules), alert)
    if key not in _FAILED:
        assert judged_apart(alert_rule(rules, alert)["expr"])

        def judge(part: list[int]) -> None:
            series = [{**one, "series": stories_own(one["series"], k)} for k in part
                      for one in _series(*stories[k][0][:2], remapped_at=stories[k][0][2])]
            cases = [{"eval_time": f"{m}m", "alertname": alert,
                      "exp_alerts": [expected_alert(rules, alert, node=f"{overlap.NODE}-s{k}", gpu="0")
                                     for k in part if m in stories[k][1]]} for m in MINUTES]
            promtool_test(rules, f"rollout_{alert}_{part[0]}.yaml", [
                {"interval": f"{STEP}s", "input_series": series, "alert_rule_test": cases}])

        _FAILED[key] = batch_failure(list(range(len(stories))), judge)
    k = [s for s, _ in stories].index(story)
    if _FAILED[key] is not None:
        pytest.fail(f"{alert} over its stories judged together (this story's node ends in -s{k}):\n{_FAILED[key]}")


@pytest.mark.parametrize("new_from", list(OVERLAPS.values()), ids=list(OVERLAPS))
def test_the_pcie_replays_rule_stays_silent_through_a_surge_rollout(rules, new_from):
    # 30 replays per 5 minutes, threshold 50, however many exporters read the link. The rule read the copies sampled
    # in each step: where the new exporter's reading was older than the old one's latest (10,085 after 10,086) the
    # merged readings stepped down, read as a reset, the counter since boot as one increase: it fired from minute 11
    # to 19 (5-minute overlap), 15 to 19 (1-minute overlap). The CloudWatch alarm is ALARM at minutes 14 to 16 of the
    # 5-minute overlap, where the agent's two revision series count 57 (test_cloudwatch_exporter_overlap; README).
    assert FIRING["GpudashPcieReplays"][(900, new_from, math.inf)] == set()
    _prometheus_fires(rules, "GpudashPcieReplays", (900, new_from, math.inf))


def test_a_row_remapped_between_the_old_pods_last_reading_and_the_new_ones_first_is_counted_by_the_rule_alone(rules):
    # maxSurge 0: the old pod's last reading at 869 s, the new one's first at 912 s, a row remapped at 890 s. The rule
    # reads the GPU's copies as one series (0, then 1): it fires from minute 16 to 20. The CloudWatch agent takes the
    # new revision's first reading as its baseline: the alarm never fires (README: the rollout's gap is lost).
    assert ROWS_GAP == (900, 930, 890) and FIRING["GpudashUncorrectableRows"][ROWS_GAP] == {16, 17, 18, 19, 20}
    _prometheus_fires(rules, "GpudashUncorrectableRows", ROWS_GAP)
    assert _cloudwatch("GpudashUncorrectableRows", 900, 930, remapped_at=890) == set()


@pytest.mark.parametrize("story", list(ROWS_OUTSIDE_THE_GAP))
def test_a_row_remapped_outside_a_rollouts_gap_fires_both(rules, story):
    (old_until, new_from, remapped_at), minutes = ROWS_OUTSIDE_THE_GAP[story]
    _prometheus_fires(rules, "GpudashUncorrectableRows", (old_until, new_from, remapped_at))
    assert _cloudwatch("GpudashUncorrectableRows", old_until, new_from, remapped_at=remapped_at) == set(minutes)


_ENERGY_FAILED: dict[str, str | None] = {}  # the rules' folder -> promtool's failure judging both overlaps, or None


@pytest.mark.parametrize("new_from", list(OVERLAPS.values()), ids=list(OVERLAPS))
def test_grafanas_energy_rate_reads_the_gpus_power_through_a_surge_rollout(rules, new_from):
    # "All metrics" DEV_TOTAL_ENERGY_CONSUMPTION (per GPU, mW), with Grafana's $__rate_interval for 30 s scrapes (2m)
    # and every variable at All; the GPU draws 200 W throughout. It reads the counter's recording (the rules file's
    # counter group, evaluated by promtool at the scrape interval); rate() of the copies' merged readings read 4.18e8 mW
    # at minutes 15 and 16 after either overlap (at the step where the old exporter's staleness marker falls, the new
    # one's reading taken before the old one's last read as a reset). Both overlaps are judged in one promtool run,
    # each under its own namespace, node and GPU UUID (as _prometheus_fires judges its stories).
    from tests.support.promtool_rules import judged_apart, stories_own
    from tests.support.promtool_batches import batch_failure

    files = overlap.overlap_build("otel")
    (expr,) = [p["targets"][0]["expr"] for p in json.loads(files["grafana/gpudash-all-metrics.json"])["panels"]
               if p.get("title") == "DEV_TOTAL_ENERGY_CONSUMPTION"]
    expr = expr.replace("$__rate_interval", "2m").replace("$__range", "1d")  # a dashboard range holding the scene
    for variable in ("$namespace", "$pod", "$gpu", "$node"):
        expr = expr.replace(variable, ".*")
    overlaps = list(OVERLAPS.values())
    if str(rules) not in _ENERGY_FAILED:
        from tests.support.promtool_rules import rule_groups

        recorded = [r["expr"] for g in rule_groups((rules / "rules.yaml").read_text()) for r in g["rules"]
                    if r.get("record") and r["record"] in expr]
        assert recorded and all(judged_apart(e) for e in [expr, *recorded])  # neither the panel nor its recording joins

        def judge(part: list[int]) -> None:
            series = [{**one, "series": stories_own(one["series"], k)} for k in part for one in _series(
                900, overlaps[k], readings={ENERGY: lambda taken: f"{overlap.energy_at(taken):.0f}"})]
            watts = [{"labels": f'{{gpu="0", node="{overlap.NODE}-s{k}"}}', "value": overlap.WATTS * 1000}
                     for k in part]
            promtool_test(rules, f"rollout_energy_{part[0]}.yaml", [{
                "interval": f"{STEP}s", "input_series": series,
                "promql_expr_test": [{"expr": expr, "eval_time": f"{m}m", "exp_samples": watts} for m in range(8, 27)]}])

        _ENERGY_FAILED[str(rules)] = batch_failure(list(range(len(overlaps))), judge)
    if _ENERGY_FAILED[str(rules)] is not None:
        pytest.fail(f"the energy rate over both overlaps judged together (this one's node ends in "
                    f"-s{overlaps.index(new_from)}):\n{_ENERGY_FAILED[str(rules)]}")


ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"

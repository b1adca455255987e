"""A failed scrape is not a lost GPU: a count of GPUs, and a total of their readings, per period of an alarm.

Seven GPUs on four nodes report all along, each node's exporter scraped every 30 s at its own phase (Prometheus
spreads its targets' scrapes over the interval: node-b 10 s and node-c 20 s after node-a and node-d). Four scrapes
fail (a node's exporter timing out once), and Prometheus writes a staleness marker for each series of the target at
the failed scrape, as it does: node-c at 16m20s, node-b at 19m10s, node-d at 19m and 19m30s. promtool runs the
generated rules over those series (each alarm 2 of 3 periods of 5 minutes):
- "fewer than 7 GPUs report" never fires and "7 or more" fires at every evaluation: a GPU with a reading in a period is
  counted in it (the count read the latest sample at the evaluation's instant, the same for every period, and lost the
  failed target's GPUs wherever the instant fell after a marker);
- the cluster's and each node's total power, each GPU's mean over its readings in the period added up, equal the
  GPUs' power (the mean over 5 s steps of the GPUs read at each step read about a third of it: each step holds one
  phase's scrapes only; a failed scrape cut one step's total);
- a GPU gone for whole periods (its node's exporter stopped) is not counted: "fewer than 7" fires once two of the
  three periods lack it, and the total drops by its power.
The CloudWatch side (a count of the period's observations over n scrapes) cannot tell a failed scrape from a lost GPU
in one Metrics Insights query: its alarms say so (tests/unit/test_failed_scrape_notes.py)."""

from __future__ import annotations

import pytest

from tests.integration.test_mig_twins import built_with
from tests.support.promtool_rules import alert_names, expected_alert, promtool_test

SLOT = 10  # the series' resolution: each node's scrapes every 3 slots, at its own phase
SLOTS = 180  # thirty minutes
NODES = {"node-a": (0, (100, 150)), "node-b": (1, (200, 120)), "node-c": (2, (300,)), "node-d": (0, (80, 90))}
FAILED = {("node-c", 98), ("node-b", 115), ("node-d", 114), ("node-d", 117)}  # (node, slot): 16m20s, 19m10s, ...
GPUS = sum(len(power) for _, power in NODES.values())  # 7
TOTAL = sum(sum(power) for _, power in NODES.values())  # 1040 W
RULES = f'''
from generator.model import Alarm, Condition, Query

NODE_TOTALS = {{name: sum(power) for name, (_, power) in {NODES!r}.items()}}


def alarms(ctx):
    def alarm(rule, query, comparison, threshold):
        return Alarm(rule, rule, Condition(query, comparison, threshold), evaluation_periods=3, datapoints_to_alarm=2,
                     description="Look.", runbook="Look.")
    temp, power = "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"
    yield alarm("gpus-few", Query(temp, "count", ()), "<", {GPUS})
    yield alarm("gpus-all", Query(temp, "count", ()), ">=", {GPUS})
    yield alarm("node-gpus-few", Query(temp, "count", ("node",)), "<", 2)
    yield alarm("power-low", Query(power, "sum", ()), "<", {TOTAL - 1})
    yield alarm("power-all", Query(power, "sum", ()), ">=", {TOTAL - 1})
    yield alarm("node-power-low", Query(power, "sum", ("node",)), "<", 165)
'''
EVALUATIONS = range(15 * 60, 29 * 60 + 1, 10)  # every 10 s from 15 to 29 minutes: before, across and after the fails
# What one more promtool file costs in evaluations of these rules over the history (promtool_rules.evaluation_plans):
# the file's twelve rules parsed and its series loaded, 90 ms; an evaluation, 33 ms. The instants run in one file at
# 10 s (175 evaluations: 6.1 CPU-s), not in one file per instant or two (the default's 65 files: 7.9 CPU-s)
FILE_COST = 3


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("failed-scrapes"), {"failed.py": RULES},
                      fields=("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"))


def _series(gone: tuple[str, int] | None = None) -> list[dict[str, str]]:
    """The fleet's temperature and power as Prometheus stores them: a sample at each of a node's scrapes, a
    staleness marker at a failed one, nothing between (`_`); `gone` (node, slot): its exporter stops there (a
    marker, then nothing)."""
    series = []
    for name, (phase, power) in NODES.items():
        for gpu, watts in enumerate(power):
            labels = (f'gpu="{gpu}",UUID="GPU-{name}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A100-SXM4-40GB",'
                      f'Hostname="{name}",node="{name}",instance="{name}:9400",job="dcgm-exporter"')
            for metric, value in (("DCGM_FI_DEV_GPU_TEMP", 50 + gpu), ("DCGM_FI_DEV_POWER_USAGE", watts)):
                values = []
                for slot in range(SLOTS):
                    stop = gone is not None and gone[0] == name and slot >= gone[1]
                    if slot % 3 != phase or (stop and slot > gone[1] + 2):
                        values.append("_")
                    elif (name, slot) in FAILED or stop:
                        values.append("stale")
                    else:
                        values.append(str(value))
                series.append({"series": f"{metric}{{{labels}}}", "values": " ".join(values)})
    return series


def _run(built, name: str, series, fired) -> None:
    """promtool at every EVALUATIONS instant: `fired(rule, seconds)` the label sets each alert fires for."""
    _, folder = built
    alerts = alert_names(folder)
    checks = [{"eval_time": f"{seconds}s", "alertname": alerts[rule],
               "exp_alerts": [expected_alert(folder, alerts[rule], **labels) for labels in fired(rule, seconds)]}
              for seconds in EVALUATIONS for rule in ("gpus-few", "gpus-all", "node-gpus-few", "power-low",
                                                      "power-all", "node-power-low")]
    promtool_test(folder, name, [{"interval": f"{SLOT}s", "input_series": series, "alert_rule_test": checks}],
                  evaluation_interval=f"{SLOT}s", file_cost=FILE_COST)


def test_the_premise():
    assert GPUS == 7 and TOTAL == 1040
    assert min(sum(power) for _, power in NODES.values()) > 165 and len(NODES["node-c"][1]) == 1
    failed = [s for s in _series() if "stale" in s["values"]]
    assert len(failed) == 2 * (2 + 1 + 2)  # each series of node-b, node-c and node-d is marked stale at its fails


def test_a_failed_scrape_loses_no_gpu_and_no_watt(built):
    steady = {"gpus-few": [], "gpus-all": [{}], "node-gpus-few": [{"node": "node-c"}], "power-low": [],
              "power-all": [{}], "node-power-low": []}
    _run(built, "failed_scrapes.yaml", _series(), lambda rule, seconds: steady[rule])


GONE = 16 * 60  # node-c's exporter stops: its GPU has no reading after 16m


def test_a_gpu_gone_for_whole_periods_is_not_counted(built):
    """node-c's GPU has no reading from 16m on: a period holds none of it from 21m (16m + 5m) on; two of the three
    periods from 26m on. Before 21m every period holds it."""
    def fired(rule, seconds):
        lost = seconds >= GONE + 2 * 300 + SLOT  # two whole periods without its reading
        kept = seconds < GONE + 300  # every period holds a reading of it
        if rule in ("gpus-few", "power-low"):
            return [{}] if lost else [] if kept else None
        if rule in ("gpus-all", "power-all"):
            return [] if lost else [{}] if kept else None
        if rule == "node-gpus-few":
            return [{"node": "node-c"}] if kept else None
        return []
    series = _series(gone=("node-c", GONE // SLOT + 2))  # its last reading at 16m20s
    # between, the verdict depends on which of the three periods hold the last reading: not judged
    _, folder = built
    alerts = alert_names(folder)
    checks = []
    for seconds in EVALUATIONS:
        for rule in ("gpus-few", "gpus-all", "node-gpus-few", "power-low", "power-all", "node-power-low"):
            expected = fired(rule, seconds)
            if expected is not None:
                checks.append({"eval_time": f"{seconds}s", "alertname": alerts[rule],
                               "exp_alerts": [expected_alert(folder, alerts[rule], **labels) for labels in expected]})
    promtool_test(folder, "gpu_gone.yaml", [{"interval": f"{SLOT}s", "input_series": series,
                                              "alert_rule_test": checks}], evaluation_interval=f"{SLOT}s",
                  file_cost=FILE_COST)

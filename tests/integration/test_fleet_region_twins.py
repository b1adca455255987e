"""A fleet rule that judges its clusters together (grouped by nothing) reads, on one Prometheus holding clusters of two
Regions, the clusters its CloudWatch twin reads: one alarm per Region, each over that Region's clusters (a Metrics
Insights query reads one Region), so the rule judges a value per Region and fires per Region, as CloudWatch does.

Three clusters run the crafted fleet (tests/support/dcgm_fleet.FLEET) into one Prometheus: `a` and `c` in us-east-1,
`b` in eu-west-1. In a every GPU idles at 2 % and GPU 1 of ip-10-0-1-2 reads 85 C; in c every GPU works at 14 %; b's
GPUs work at the fleet's 20-89 %, at most 77 C. us-east-1's mean utilization is 8 % (under 10: its alarm fires), its
hottest GPU 85 C, its power the sum of two clusters'; eu-west-1's mean is about 48 %, its hottest GPU 77 C. Read
together, the rule judged the fleet's mean (21.2 %: no alert where us-east-1's alarm fires) and its hottest GPU with
no Region (85 C: one alert for the fleet, where CloudWatch's eu-west-1 alarm reads 77 C).

Each cluster's scrapes go through the model of the agent (its generated configuration) into CloudWatch points; each
Region's alarm is evaluated over the points of its Region's clusters (tests/support/cloudwatch_eval), and the rule's
period value per Region, evaluated by promtool on the series the one Prometheus stores, equals that Region's
Metrics Insights value of the same period.
"""

from __future__ import annotations

import functools
import json
import math
import re
import subprocess

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.render.alarms import period_value
from tests.support import cloudwatch_eval, dcgm_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.payload_edits import with_value
from tests.support.projects import defined_project
from tests.support.prometheus_server import binary
from tests.support.promtool_rules import alert_names, expected_alert, promtool_test

STEP = dcgm_fleet.STEP
STEPS = 70  # 35 minutes: the idle rule's three periods and the two more CloudWatch's range holds
END = STEPS * STEP  # the evaluation: a period's end
PERIOD = 300
FIELDS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE")
REGIONS = {"a": "us-east-1", "b": "eu-west-1", "c": "us-east-1"}
SETTINGS = """\
clusters:
  - {name: a, region: us-east-1, prometheus_label: a}
  - {name: b, region: eu-west-1, prometheus_label: b}
  - {name: c, region: us-east-1, prometheus_label: c}
"""
ALARMS = """\
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("fleet-hot", "A GPU hot", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ()), ">", 80),
                severity="warning", scope="fleet", description="A GPU above 80 C.", runbook="Check cooling.")
    yield Alarm("fleet-idle", "Fleet idle", Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ()), "<", 10),
                severity="warning", evaluation_periods=3, scope="fleet", description="Mean under 10 %.",
                runbook="Give back GPUs.")
    yield Alarm("fleet-power", "Fleet power", Condition(Query("DCGM_FI_DEV_POWER_USAGE", "sum", ()), ">", 1500),
                severity="warning", scope="fleet", description="Over 1,500 W.", runbook="Shed load.")
    yield Alarm("fleet-few", "Few GPUs", Condition(Query("DCGM_FI_DEV_GPU_UTIL", "count", ()), "<", 10),
                severity="warning", scope="fleet", description="Under 10 GPUs report.", runbook="Scale up.")
"""
RULES = ("fleet-hot", "fleet-idle", "fleet-power", "fleet-few")


def _story(cluster: str, payload: str) -> str:
    """A cluster's payload: a idle and one GPU hot, c at 14 %, b as the fleet reads."""
    if cluster == "a":
        return with_value(with_value(payload, "DCGM_FI_DEV_GPU_UTIL", "UUID=", "2"),
                    "DCGM_FI_DEV_GPU_TEMP", 'UUID="GPU-ip-10-0-1-2-1"', "85")
    if cluster == "c":
        return with_value(payload, "DCGM_FI_DEV_GPU_UTIL", "UUID=", "14")
    return payload


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("region-twins")
    project = defined_project(folder, SETTINGS, alarms=ALARMS)
    files = encode(build(project))
    (folder / "rules.yaml").write_bytes(files["prometheus/rules.yaml"])  # what promtool's tests read
    points = {}
    for cluster in REGIONS:
        config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{cluster}.yaml"])
        scrapes = [Scrape(s.timestamp, _story(cluster, s.payload), s.target_labels)
                   for s in dcgm_fleet.scrapes(job, project.catalog, 0, STEPS - 1)]
        points[cluster] = Agent(config, job).run(scrapes)
    requests = {}
    for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        request = item["Request"]
        for rule in RULES:
            if request["AlarmName"].startswith(f"gpudash-fleet-{rule}-warning"):
                requests[rule, item["Region"]] = request
    assert set(requests) == {(rule, region) for rule in RULES for region in set(REGIONS.values())}, sorted(requests)
    return project, folder, requests, points


def _region_points(points, region: str) -> list:
    return sorted((p for cluster, found in points.items() if REGIONS[cluster] == region for p in found),
                  key=lambda p: p.timestamp)


def _series(project) -> list[dict[str, str]]:
    """The three clusters' gauges of FIELDS as one Prometheus stores them, each series with its cluster and node."""
    return dcgm_fleet.stored_series(project.catalog, {cluster: functools.partial(_story, cluster) for cluster in REGIONS},
                                    FIELDS, STEPS)


_SAMPLE = re.compile(r"\{([^}]*)\} ([0-9.eE+-]+)")


def _evaluated(folder, name: str, expr: str, series: list[dict]) -> dict[tuple, float]:
    """`expr`'s samples at END as promtool evaluates it over `series`, by their label pairs (read from its report of
    what it got where nothing was expected)."""
    test = {"rule_files": [], "evaluation_interval": f"{STEP}s", "tests": [{
        "interval": f"{STEP}s", "input_series": series,
        "promql_expr_test": [{"expr": expr, "eval_time": f"{END}s", "exp_samples": []}]}]}
    path = folder / f"{name}.json"
    path.write_text(json.dumps(test))
    out = subprocess.run([binary("promtool"), "test", "rules", str(path)], capture_output=True, text=True)
    report = (out.stdout + out.stderr).split("got:")[-1]
    return {tuple(sorted(re.findall(r'(\w+)="([^"]*)"', labels))): float(value)
            for labels, value in _SAMPLE.findall(report)}


def test_the_stories_hold(built):
    project, _, _, points = built
    # each GPU's own readings (a node's total and count of them, node_mean, are other points of the metric)
    temperatures = {c: max(p.value for p in found if p.metric == "DCGM_FI_DEV_GPU_TEMP" and "node_mean" not in p.dims())
                    for c, found in points.items()}
    assert temperatures["a"] == 85 and temperatures["b"] < 80 and temperatures["c"] < 80, temperatures


@pytest.mark.parametrize("rule", ["fleet-hot", "fleet-idle", "fleet-few"])
def test_the_rule_s_value_per_region_is_its_region_s_cloudwatch_value(built, rule):
    """The latest period's value per Region: the rule's (promtool) and the Region's Metrics Insights query over its
    clusters' points, the same observations (a count: the GPUs reporting, 12 in us-east-1, 6 in eu-west-1)."""
    project, folder, requests, points = built
    alarm = next(a for a in project.alarms if a.id == rule)
    found = _evaluated(folder, rule, period_value(alarm, project.catalog, project.settings), _series(project))
    expected = {}
    for region in set(REGIONS.values()):
        (query,) = [m for m in requests[rule, region]["Metrics"] if "Expression" in m]
        result = cloudwatch_eval.metrics_insights(query["Expression"], _region_points(points, region),
                                                  END - PERIOD, END, PERIOD)
        ((series),) = result.values()
        # a count over the period's observations is the GPUs' count times the readings a period holds: the alarm's
        # threshold is the rule's times as many (1 for a max or a mean)
        readings = requests[rule, region]["Threshold"] / alarm.condition.threshold
        expected[region] = series[END - PERIOD] / readings
    got = {dict(labels).get("region"): value for labels, value in found.items()}
    assert set(got) == set(expected), (got, expected)
    for region, value in expected.items():
        assert math.isclose(got[region], value, rel_tol=1e-9), (region, got, expected)


def test_each_region_s_rule_fires_where_its_region_s_alarm_does(built):
    project, folder, requests, points = built
    alerts = alert_names(folder)
    checks, firing = [], {}
    for rule in RULES:
        regions = sorted(region for region in set(REGIONS.values())
                         if cloudwatch_eval.alarm(requests[rule, region], _region_points(points, region), END)
                         == {(): "ALARM"})
        firing[rule] = regions
        checks.append({"eval_time": f"{END}s", "alertname": alerts[rule],
                       "exp_alerts": [expected_alert(folder, alerts[rule], region=region) for region in regions]})
    # the stories: us-east-1's hottest GPU, its mean and its two clusters' power past the levels; eu-west-1's six
    # GPUs under ten (us-east-1 has twelve; the fleet eighteen)
    assert firing == {"fleet-hot": ["us-east-1"], "fleet-idle": ["us-east-1"], "fleet-power": ["us-east-1"],
                      "fleet-few": ["eu-west-1"]}, firing
    promtool_test(folder, "region_twins.yaml", [{"interval": f"{STEP}s", "input_series": _series(project),
                                                  "alert_rule_test": checks}], evaluation_interval=f"{STEP}s")

"""The shipped alert rules on a real Prometheus whose storage already holds the GPUs' history when the rules are
loaded: a first deployment, a rules file re-created under another name, or recorded series lost. CloudWatch judges the
periods from the data it holds; so must the rules: a GPU hot at every reading of the last 45 minutes, and a pod's GPU
idle through them, are alarmed at the first evaluation. The group's recording rules, if it has any, have run at that
evaluation alone (tests/support/group_evaluations).
"""

from __future__ import annotations

import pytest

from generator.render.alarms import prometheus_expression, prometheus_rules
from tests.support.group_evaluations import group_evaluated
from tests.support.projects import project_fixture

STEP = 30  # s: the scrape interval
SPAN = 45 * 60  # the history: 9 periods, more than the idle rule's evaluation range (8)
HOT = 'Hostname="n1",instance="10.0.0.1:9400",job="dcgm-exporter",UUID="GPU-n1-0",gpu="0"'
IDLE = ('Hostname="n2",instance="10.0.0.2:9400",job="dcgm-exporter",UUID="GPU-n2-0",gpu="0",container="main",'
        'namespace="ml",pod="train-0"')
project = project_fixture()


def _openmetrics(start: int) -> str:
    instants = [start + k * STEP for k in range(SPAN // STEP + 1)]
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge",
             *(f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} {value} {at}" for at in instants
               for labels, value in ((HOT, 95), (IDLE, 40))),
             "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
             *(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {value} {at}" for at in instants
               for labels, value in ((HOT, 100), (IDLE, 0)))]
    return "\n".join(lines) + "\n# EOF\n"


def _named(series: list[dict]) -> set[tuple]:
    return {tuple(sorted(s["metric"].items())) for s in series}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory, project):
    """The shipped group, its recording rules run only at the last minute of the history, and the alerts' instant."""
    rules = [r for g in prometheus_rules(project.alarms, project.catalog, project.settings)["groups"]
             for r in g["rules"]]
    with group_evaluated(tmp_path_factory.mktemp("rules-load"), _openmetrics, SPAN, STEP, rules,
                         lambda start, end: [(end - 60, end)]) as (server, at):
        yield server, at, rules


def test_a_gpu_hot_and_a_pod_idle_through_the_stored_history_are_alarmed_when_the_rules_are_loaded(loaded, project):
    server, at, rules = loaded
    alerts = {r["alert"]: r for r in rules if "alert" in r}
    fired = {name: server.query(rule["expr"], at=at) for name, rule in alerts.items()}
    assert [(s["metric"].get("node"), s["metric"].get("gpu")) for s in fired["GpudashGpuTempHigh"]] == [("n1", "0")]
    assert [(s["metric"].get("namespace"), s["metric"].get("pod")) for s in fired["GpudashGpuIdle"]] == \
        [("ml", "train-0")]


def test_every_shipped_alert_names_what_its_one_expression_names_at_the_first_evaluation(loaded, project):
    """The control: each alert's condition as one expression, which reads the stored readings of every period."""
    server, at, rules = loaded
    by_id = {a.id: a for a in project.alarms}
    differ, firing = {}, set()
    for rule in (r for r in rules if "alert" in r and "reason" not in r["labels"]):
        alarm = by_id[rule["labels"]["gpudash_rule"]]
        one = _named(server.query(prometheus_expression(alarm, project.catalog, project.settings), at=at))
        shipped = _named(server.query(rule["expr"], at=at))
        firing |= {alarm.id} if one else set()
        if shipped != one:
            differ[rule["alert"]] = (sorted(shipped), sorted(one))
    assert {"gpu-temp-high", "gpu-idle"} <= firing  # the truth, as one expression reads it
    assert not differ

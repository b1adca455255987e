"""A rule per GPU whose `cloudwatch=` condition is per MIG instance, in a fleet whose clusters differ in exporter.mig:
the rule on each cluster's Prometheus fires for the GPUs its CloudWatch alarms are in ALARM for.

Cluster `plain` says exporter.mig: none and runs the mixed fleet's whole GPUs (tests/support/mixed_fleet.WHOLE: gpu-node-b
GPU 0 at 40,000 MiB used and ip-10-0-3-7.ec2.internal GPU 0 at 30,000 over the level of 15,000); cluster `split` runs
the whole mixed fleet (its MIG node's GPU 0 instance 1 at 19,600 MiB). CloudWatch judges plain's GPUs on the rule's own
condition (scope cluster: plain's own alarm; scope fleet: the Region's `<rule>-whole` alarm) and split's MIG instances
on the `cloudwatch=` one. The one rules file both Prometheus servers load read the `cloudwatch=` condition (MIG instances
alone) everywhere: on plain's Prometheus it fired for no GPU, where plain's alarm is in ALARM for two; and split's whole
GPUs over the level, which generate's note (AL012) says the Prometheus rule evaluates, were judged by no rule either.
Now the rule judges MIG instances on the `cloudwatch=` condition and whole GPUs on its own (render.alarms.OWN_WHOLE).
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import scrapes
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.projects import defined_project
from tests.support.promtool_rules import alert_names, expected_alert, promtool_test

FIELD = "DCGM_FI_DEV_FB_USED"
STEP, STEPS = 30, 30  # fifteen minutes of 30 s scrapes
END = STEP * STEPS - STEP  # the last scrape's instant: the rule's evaluation and the alarm's
LEVEL = 15000


def _definition(scope: str, periods: str = "") -> str:
    return f'''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpu-fb-high", "GPU memory high",
                Condition(Query("{FIELD}", "max", ("node", "gpu")), ">", {LEVEL}), scope="{scope}",{periods}
                cloudwatch=Condition(Query("{FIELD}", "max", ("node", "gpu", "mig_instance")), ">", {LEVEL}))
'''


SETTINGS = """clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
"""
FLEETS = {"split": mixed_fleet.FLEET, "plain": mixed_fleet.WHOLE}


@pytest.fixture(scope="module", params=["cluster", "fleet"])
def built(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"whole-beside-mig-{request.param}")
    project = defined_project(folder, SETTINGS, alarms=_definition(request.param),
                              dashboards="def dashboards(ctx):\n    return []\n")
    files = encode(build(project, grafana=False))
    (folder / "rules.yaml").write_bytes(files["prometheus/rules.yaml"])
    return folder, files


def _alarmed(files, cluster: str) -> list[dict[str, str]]:
    """The contributors in ALARM at END, over `cluster`'s points, of every alarm of the rule: the alert labels each
    names (node, GPU and, for a MIG instance, its id and profile)."""
    config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{cluster}.yaml"])
    points = Agent(config, job).run(scrapes(job, STEP, END + 1, FLEETS[cluster]))
    found = []
    for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        if "gpu-fb-high" not in item["Request"]["AlarmName"]:
            continue
        for key, state in cloudwatch_eval.alarm(item["Request"], points, END).items():
            labels = dict(key)
            if state == "ALARM" and labels.get("ClusterName") in (cluster, None):
                found.append({k: labels[k] for k in ("node", "gpu", "GPU_I_ID", "GPU_I_PROFILE") if k in labels})
    return sorted(found, key=lambda labels: sorted(labels.items()))


def _rule_fires(folder, cluster: str, expected: list[dict[str, str]]) -> None:
    """promtool: on `cluster`'s own Prometheus (its fleet's series alone), the rule's alerts at END are `expected`."""
    alert = alert_names(folder)["gpu-fb-high"]
    promtool_test(folder, f"{cluster}.yaml", [{
        "interval": f"{STEP}s", "input_series": mixed_fleet.scraped_series((FIELD,), STEP, STEPS, FLEETS[cluster]),
        "alert_rule_test": [{"eval_time": f"{END}s", "alertname": alert,
                             "exp_alerts": [expected_alert(folder, alert, **labels) for labels in expected]}]}],
        evaluation_interval=f"{STEP}s")


def test_the_stories_hold(built):
    _, files = built
    assert _alarmed(files, "plain") == [{"node": "gpu-node-b", "gpu": "0"},
                                        {"node": "ip-10-0-3-7.ec2.internal", "gpu": "0"}]
    assert _alarmed(files, "split") == [{"node": "gpu-node-mig", "gpu": "0", "GPU_I_ID": "1",
                                         "GPU_I_PROFILE": "3g.20gb"}]


def test_on_a_cluster_saying_no_mig_the_rule_fires_for_the_gpus_its_alarm_does(built):
    folder, files = built
    _rule_fires(folder, "plain", _alarmed(files, "plain"))


def test_on_a_cluster_whose_gpus_may_be_split_the_rule_judges_its_instances_and_its_whole_gpus(built):
    folder, files = built
    whole = [{"node": "gpu-node-b", "gpu": "0"}, {"node": "ip-10-0-3-7.ec2.internal", "gpu": "0"}]
    _rule_fires(folder, "split", _alarmed(files, "split") + whole)


SHARED = """clusters:
  - {name: split, region: us-east-1, prometheus_label: split}
  - {name: plain, region: us-east-1, prometheus_label: plain, exporter: {mig: none}}
"""


@pytest.mark.parametrize("scope, periods", [("cluster", ""), ("fleet", ""),
                                            ("fleet", " evaluation_periods=3, datapoints_to_alarm=2,")])
def test_on_one_prometheus_holding_both_clusters_the_rule_fires_for_each_cluster_s_alarmed_gpus(tmp_path, scope,
                                                                                                 periods):
    """Both clusters scraped into one Prometheus (clusters[].prometheus_label): the rule fires for plain's whole GPUs
    its alarm is in ALARM for, split's MIG instance its alarm is in ALARM for and split's whole GPUs, each with its
    cluster (2 of 3 periods: each period's statistic recorded once per kind, whole GPUs and instances)."""
    project = defined_project(tmp_path, SHARED, alarms=_definition(scope, periods),
                              dashboards="def dashboards(ctx):\n    return []\n")
    files = encode(build(project, grafana=False))
    (tmp_path / "rules.yaml").write_bytes(files["prometheus/rules.yaml"])
    series = [{**s, "series": s["series"].replace("{", f'{{cluster="{cluster}",', 1)}
              for cluster, fleet in FLEETS.items() for s in mixed_fleet.scraped_series((FIELD,), STEP, STEPS, fleet)]
    whole = [{"node": "gpu-node-b", "gpu": "0"}, {"node": "ip-10-0-3-7.ec2.internal", "gpu": "0"}]
    expected = [{**labels, "cluster": "plain"} for labels in _alarmed(files, "plain")]
    expected += [{**labels, "cluster": "split"} for labels in _alarmed(files, "split") + whole]
    alert = alert_names(tmp_path)["gpu-fb-high"]
    promtool_test(tmp_path, "shared.yaml", [{
        "interval": f"{STEP}s", "input_series": series,
        "alert_rule_test": [{"eval_time": f"{END}s", "alertname": alert,
                             "exp_alerts": [expected_alert(tmp_path, alert, **labels) for labels in expected]}]}],
        evaluation_interval=f"{STEP}s")

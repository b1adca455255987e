"""A cluster whose CloudWatch widgets and alarms read nothing gets an agent that publishes every DCGM series with all
its labels as dimensions (as 735e7221 and 96eb7546 left it).

awsemf with no metric declarations does not publish nothing: it publishes every metric of every point it gets, the
point's labels its one dimension set (exporter/awsemfexporter metric_translator.go, translateGroupedMetricToCWMetric:
`if len(config.MetricDeclarations) == 0 { cwm := groupedMetricToCWMeasurement(groupedMetric, config) ...`; the
agent's translator passes emf_processor.metric_declaration through as they are on the classic path too). Each DCGM
series (UUID, pci_bus_id, exporter pod and revision, pod, ... among its labels) is then a custom metric of its own,
new ones at every exporter rollout and pod, read by nothing. tests/support/cloudwatch_otel.py models declarations only
(it publishes nothing without one), so the test reads what reaches awsemf (OtelAgent.exported).

Now such an agent declares one declaration that selects no metric name (render/agent.NOTHING_DECLARED): awsemf
publishes nothing. Before, since 735e7221 a cluster's declarations are its exporter.mig group's reads, and since 96eb7546 a panel per MIG
instance is left out where no GPU is split. A project whose CloudWatch reads are per MIG instance (a MIG capacity
dashboard, no alarms) then gives the cluster saying exporter.mig: none `metric_declarations: []` while its receiver
keeps DCGM_.* (before 735e7221 / 96eb7546 it declared the MIG instances' set, which published nothing there). lint:
0 errors, 0 warnings. (A project with no CloudWatch read at all had `[]` before too.)
"""

from __future__ import annotations

import re

import pytest

from generator.artifacts import build
from generator.output import encode
from tests.support import mixed_fleet
from tests.support.agent_points import scrapes
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.projects import defined_project

WHOLE = mixed_fleet.WHOLE
DASHBOARD = '''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="mig", title="MIG", backends=("cloudwatch",), rows=[Row("r", [
        Panel("Framebuffer per GPU instance", (Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")),)),
    ])])
'''
NO_ALARMS = '''
def alarms(ctx):
    return []
'''
FLEETS = {
    "clusters differing in exporter.mig": "clusters:\n  - {name: split, region: us-east-1}\n"
                                          "  - {name: plain, region: us-east-1, exporter: {mig: none}}\n",
    "every cluster saying none": "exporter:\n  mig: none\nclusters:\n  - {name: plain, region: us-east-1}\n",
}


@pytest.mark.parametrize("fleet", FLEETS)
def test_a_cluster_reading_nothing_on_cloudwatch_sends_no_series_to_an_awsemf_without_declarations(tmp_path, fleet):
    project = defined_project(tmp_path, FLEETS[fleet], dashboards=DASHBOARD, alarms=NO_ALARMS)
    files = encode(build(project, grafana=False))
    config, job = agent_config(files["k8s/cwagent-prometheus-config-plain.yaml"])
    (emf,) = [c for name, c in config["exporters"].items() if name.startswith("awsemf")]
    agent = Agent(config, job)
    points = agent.run(scrapes(job, 30, 300, WHOLE))
    assert agent.exported, "the story needs series reaching awsemf"
    assert emf["metric_declarations"], \
        f"no declaration, and awsemf gets {len(agent.exported)} metrics: {sorted(agent.exported)[:5]}"
    # and no declaration selects any of them: nothing is published
    selected = {name for name in agent.exported for declaration in emf["metric_declarations"]
                for selector in declaration["metric_name_selectors"] if re.search(selector, name)}
    assert not selected, sorted(selected)
    assert not points, points[:3]

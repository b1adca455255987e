"""Every metric line of a CloudWatch widget names a metric the generated agent publishes.

A widget whose math divides by the period its query used (a rate, a value per scrape) or that is drawn only at its
own period (a value now) reads PERIOD() of a hidden metric line: the user guide documents PERIOD for "metrics, not
the results of other expressions", and says nothing of a metric without data. The line named the widget's field
with [ClusterName], a set the agent publishes for GPU temperature only (the data-missing alarm's): "Total power
draw", "Average GPU utilization", "Energy use rate of each pod's GPUs", "PCIe replays" and others divided by PERIOD()
of a metric that never exists. Here the crafted fleet runs through the model of the agent (either pipeline, with and
without the data-missing alarm) and every metric line of every generated widget must be one it published.
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.dcgm_fleet import scrapes

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"


@pytest.mark.parametrize("settings", ["", "agent:\n  pipeline: classic\n", "alarms:\n  expected_gpus: none\n"],
                         ids=["otel", "classic", "no-data-missing-alarm"])
def test_every_metric_line_of_a_widget_is_published(project_dir, settings):
    project = load_project(project_dir(settings))
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run(scrapes(job, project.catalog, -1, 10))
    published = {(p.namespace, p.metric, p.dimensions) for p in points}
    unpublished = set()
    for path, text in files.items():
        if not path.startswith("cloudwatch/dashboards/"):
            continue
        for widget in json.loads(json.loads(text)["DashboardBody"])["widgets"]:
            for line in widget.get("properties", {}).get("metrics", []):
                if "expression" in line[-1]:
                    continue
                namespace, metric, *pairs = line[:-1]
                dimensions = tuple(sorted(zip(pairs[::2], pairs[1::2])))
                if (namespace, metric, dimensions) not in published:
                    unpublished.add((widget["properties"]["title"], metric, dimensions))
    # seen on main: ('Total power draw', 'DCGM_FI_DEV_POWER_USAGE', (('ClusterName', 'gpu-cluster'),)) and 9 more
    assert unpublished == set()

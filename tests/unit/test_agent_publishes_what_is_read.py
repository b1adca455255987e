"""Every (metric, dimension set) the CloudWatch agent's configuration publishes is read by a widget or an alarm of the
same build: each one not read is a custom metric billed a month for nothing.

Read from the artifacts alone, not from the product's own list of what it queries (render.cloudwatch.queried_sets,
which lint's AG001/AG002 compare the agent's declarations with, so a set both sides take from it passes them unread):
the agent's awsemf declarations (OTel pipeline) or EMF declarations (classic), and every Metrics Insights query
(SELECT ... FROM SCHEMA(...)) and metric line or MetricStat of the dashboards and alarms. With exporter.virtual_gpus
a GPU's line of a mean reads each GPU's reading once (62a475ff), and the fleet values read each node's series (a0dfbc84),
so nothing read a GPU's power in the per-GPU set any more while the agent still published it: one metric per GPU
(seen on cce1a787).
"""

from __future__ import annotations

import json
import re

import pytest

from generator.artifacts import build
from generator.cost import Fleet, log_events
from generator.names import KUBE_STATE_METRICS_JOB
from generator.output import encode
from generator.project import load_project
from tests.support.cloudwatch_agent import safe_load, safe_load_all
from tests.support.projects import defined_project

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
SETTINGS = {
    "defaults": "",
    "virtual-gpus": "exporter:\n  virtual_gpus: true\n",
    "virtual-gpus-no-mig": "exporter:\n  virtual_gpus: true\n  mig: none\n",
    "no-mig": "exporter:\n  mig: none\n",
    "classic": "agent:\n  pipeline: classic\n",
}
_QUERY = re.compile(r'SELECT \w+\("([^"]+)"\) FROM SCHEMA\("[^"]+"((?:, "[^"]+")*)\)')


def _published(files: dict[str, bytes]) -> set[tuple[str, frozenset[str]]]:
    """(metric name, dimension names) of every pair the agent's configuration declares."""
    pairs = set()
    for document in safe_load_all(files[AGENT_FILE]):
        for key, text in (document.get("data") or {}).items():
            if key.endswith(".yaml") and "exporters" in (config := safe_load(text) or {}):
                declarations = [(d["metric_name_selectors"], d["dimensions"])
                                for name, exporter in config["exporters"].items() if name.startswith("awsemf")
                                for d in exporter.get("metric_declarations", [])]
            elif key == "cwagentconfig.json" and "prometheus" in json.loads(text).get("logs", {}).get(
                    "metrics_collected", {}):
                emf = json.loads(text)["logs"]["metrics_collected"]["prometheus"]["emf_processor"]
                declarations = [(d["metric_selectors"], d["dimensions"]) for d in emf.get("metric_declaration", [])]
            else:
                continue
            for selectors, dimension_sets in declarations:
                for selector in selectors:
                    name = selector.removeprefix("^").removesuffix("$")
                    assert re.fullmatch(r"[A-Za-z_:][A-Za-z0-9_:]*", name), selector  # one metric per selector
                    pairs |= {(name, frozenset(dims)) for dims in dimension_sets}
    return pairs


def _read(files: dict[str, bytes]) -> set[tuple[str, frozenset[str]]]:
    """(metric name, dimension names) of every query, metric line and MetricStat of the dashboards and alarms."""
    pairs = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            if "MetricName" in node and "Dimensions" in node:
                pairs.add((node["MetricName"], frozenset(d["Name"] for d in node["Dimensions"])))
            for value in node.values():
                if isinstance(value, str):
                    pairs.update((m[1], frozenset(re.findall(r'"([^"]+)"', m[2]))) for m in _QUERY.finditer(value))
                walk(value)
        elif isinstance(node, list):
            if len(node) > 2 and all(isinstance(part, str) for part in node[:-1]) and isinstance(node[-1], dict) \
                    and "/" in node[0]:  # a widget's metric line: namespace, metric, dimension name / value pairs
                pairs.add((node[1], frozenset(node[2:-1][0::2])))
            for value in node:
                walk(value)

    for path, content in files.items():
        if path.startswith("cloudwatch/dashboards/"):
            walk(json.loads(json.loads(content)["DashboardBody"]))
        elif path == "cloudwatch/alarms.json":
            walk(json.loads(content))
    return pairs


@pytest.mark.parametrize("name", SETTINGS)
def test_the_agent_publishes_only_what_a_widget_or_alarm_reads(tmp_path, name):
    (tmp_path / "gpudash.yaml").write_text(SETTINGS[name])
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    published, read = _published(files), _read(files)
    assert published, "no declaration found"
    assert sorted((m, sorted(d)) for m, d in published - read) == []
    assert {(m, d) for m, d in read if m.startswith("DCGM_")} <= published  # and the readers are published (AG001)


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_without_a_data_missing_alarm_the_agent_publishes_no_kube_state_metrics_count(tmp_path, pipeline):
    """alarms.expected_gpus: kube-state-metrics, and alarms of the user's own, none of them the data-missing alarm: the
    agent published the exporter DaemonSet's three pod counts and the nodes' two counts, which only that alarm reads
    (five custom metrics a cluster billed for nothing), because a widget's PERIOD() line reads the cluster's set."""
    (tmp_path / "alarms").mkdir()
    (tmp_path / "alarms" / "hot.py").write_text(
        "from generator.model import Alarm, Condition, Query\n\n\n"
        "def alarms(ctx):\n"
        "    yield Alarm('gpu-hot', 'GPU hot', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'max', ('node', 'gpu')), '>', 85))\n")
    (tmp_path / "gpudash.yaml").write_text(f"agent:\n  pipeline: {pipeline}\ndefinitions:\n  alarms: [alarms]\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    published, read = _published(files), _read(files)
    assert sorted((m, sorted(d)) for m, d in published - read) == []
    assert {(m, d) for m, d in read if m.startswith("DCGM_")} <= published


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_without_a_data_missing_alarm_the_agent_scrapes_no_kube_state_metrics(tmp_path, pipeline):
    """A job scraped where nothing reads its series: logged as EMF events the log group bills (gpudash cost priced 7
    a scrape on a 3-GPU-node fleet, 8 on otel: the DaemonSet's, two per node and the scrape's flag of no GPU data),
    published nowhere. With the data-missing alarm the job is there, and priced."""
    project = defined_project(tmp_path, f"agent:\n  pipeline: {pipeline}\n", alarms=(
        "from generator.model import Alarm, Condition, Query\n\n\n"
        "def alarms(ctx):\n"
        "    yield Alarm('gpu-hot', 'GPU hot',\n"
        "                Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'max', ('node', 'gpu')), '>', 85))\n"))
    assert _scraped(project) == (["dcgm-exporter"], 0)
    assert _scraped(load_project(_settings(tmp_path, f"agent:\n  pipeline: {pipeline}\n"))) == \
        (["dcgm-exporter", KUBE_STATE_METRICS_JOB], 1 + 2 * 3 + (pipeline == "otel"))  # (and its no-data flag)


def _settings(tmp_path, text: str):
    (tmp_path / "bundled").mkdir()
    (tmp_path / "bundled" / "gpudash.yaml").write_text(text)
    return tmp_path / "bundled" / "gpudash.yaml"


def _scraped(project) -> tuple[list[str], float]:
    """(the agent's scrape jobs, the kube-state-metrics events per scrape gpudash cost prices on 3 GPU nodes)."""
    files = encode(build(project))
    jobs = [job["job_name"] for document in safe_load_all(files[AGENT_FILE])
            for key, text in (document.get("data") or {}).items() if key == "prometheus.yaml"
            for job in safe_load(text)["scrape_configs"]]
    fleet = Fleet(clusters=1, pods=6, churn=0, gpus=6, nodes=3)
    return jobs, sum(e.count for e in log_events(project, fleet) if e.what.startswith("kube-state-metrics"))

"""A GPU's line of a mean on CloudWatch weighs each scrape once, however many pods share the GPU at that scrape.

With KUBERNETES_VIRTUAL_GPUS (exporter.virtual_gpus) the exporter writes a field of a GPU pods share by time-slicing
once per pod holding it, each copy the device's reading (tests/support/virtual_gpus.py, from dcgm-exporter's source).
Pods come and go on a time-sliced GPU, and the GPU works harder while more of them hold it. One GPU, 30 s scrapes:
one pod holds it at the first five scrapes of each 5-minute period (100 W, 60 °C, SM clock 1,410 MHz), three pods at
the last five (400 W, 80 °C, 1,980 MHz). Each period's mean of the GPU's readings is 250 W, 70 °C and 1,695 MHz, what
the Prometheus side and Grafana read (each GPU once per scrape). The per-GPU set holds one observation per copy, so
its AVG weighed the three-pod scrapes three times: "Power draw" read 325 W, the overview's "GPU temperature" 75 °C
and "SM clock" 1,837.5 MHz (seen on 92763f30). On the OTel pipeline these lines now read each GPU's reading once
per scrape, the set the agent merges a GPU's copies into by its UUID (cloudwatch_query.once_widget), as a node's or the
cluster's lines already did. Through the agent model of the build's own configuration, for dcgm-exporter 4.5.3 and later
("per-process") and 4.5.2 ("copies", each field once per pod); the widgets drawn as CloudWatch documents
(tests/support/cloudwatch_eval).
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support import cloudwatch_eval
from tests.support import virtual_gpus as vg
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels

STEP, STEPS = 30, 20  # two 5-minute periods
NODE = "gpu-node-on"
HOLDERS = tuple(vg.Holder("team-a", f"ts-{i}", 10, 1000, str(i)) for i in range(3))
FEW, MANY = (100.0, 60.0, 1410.0), (400.0, 80.0, 1980.0)  # power, temperature, SM clock
CLOCK = "DCGM_FI_DEV_SM_CLOCK"
# each chart's line per period: the mean of the GPU's readings (the health page's temperature is their largest)
EXPECTED = {("overview", "Power draw"): 250.0, ("overview", "GPU temperature"): 70.0, ("overview", "SM clock"): 1695.0,
            ("health", "Power draw"): 250.0, ("health", "GPU temperature"): 80.0, ("health", "SM clock"): 1695.0}


def _payload(k: int, mode: str) -> str:
    """Scrape k: one pod at the first five scrapes of each period, three at the last five."""
    power, temp, clock = FEW if k % 10 < 5 else MANY
    gpu = vg.Gpu(0, 50, 3000, 37000, temp, power, HOLDERS[:1] if k % 10 < 5 else HOLDERS)
    node = vg.Node(NODE, mode, (gpu,))
    clocks = [f"{CLOCK}{{{labels}}} {clock:g}" for labels, _ in vg._series(node, gpu, vg.TEMP)]
    return vg.payload(node) + f"# TYPE {CLOCK} gauge\n" + "\n".join(clocks) + "\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("shared")
    (folder / "gpudash.yaml").write_text("exporter:\n  virtual_gpus: true\n")
    return encode(build(load_project(folder / "gpudash.yaml"), grafana=False))


@pytest.mark.parametrize("mode", ["per-process", "copies"])
def test_a_gpus_mean_weighs_each_scrape_once(files, mode):
    config, job = agent_config(files["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    points = Agent(config, job).run([Scrape(float(k * STEP), _payload(k, mode), target_labels(job, NODE))
                                     for k in range(STEPS)])
    read = {}
    for page in {page for page, _ in EXPECTED}:
        for widget in json.loads(json.loads(files[f"cloudwatch/dashboards/gpudash-gpu-cluster-{page}.json"])
                                 ["DashboardBody"])["widgets"]:
            title = widget["properties"].get("title", "").split(" (the ")[0]
            if widget["type"] == "metric" and (page, title) in EXPECTED:
                lines = cloudwatch_eval.widget(widget["properties"], points, 0, STEPS * STEP)
                read[(page, title)] = {label: dict(series) for label, series in lines.items()}
    assert set(read) == set(EXPECTED), read
    for chart, lines in read.items():
        assert lines == {f"{NODE} GPU 0": {0: EXPECTED[chart], 300: EXPECTED[chart]}}, chart


# The same mean in an alarm per GPU (a user's "a GPU's mean power above a level"): one 5-minute period, the GPU's mean
# 250 W each period. Over the per-GPU set it read 325 W and fired above 300 (seen on 62a475ff), where the Prometheus
# rule reads each GPU once per step; the level below the mean fires either way (the alarm is judged at all).
ALARMS = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm('mean-power-{level}', 'X', Condition(Query('DCGM_FI_DEV_POWER_USAGE', 'avg', ('node', 'gpu')), "
    f"'>', {level}), description='x', runbook='y')\n" for level in (300, 200)))


@pytest.mark.parametrize("mode", ["per-process", "copies"])
def test_an_alarm_on_a_gpus_mean_weighs_each_scrape_once(tmp_path, mode):
    from tests.integration.test_mig_twins import built_with
    from tests.support.alarm_requests import alarm_requests

    built, _ = built_with(tmp_path, {"mean.py": ALARMS}, (*vg.FIELDS, CLOCK), "exporter:\n  virtual_gpus: true\n")
    config, job = agent_config(built["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])
    points = Agent(config, job).run([Scrape(float(k * STEP), _payload(k, mode), target_labels(job, NODE))
                                     for k in range(STEPS)])
    requests = alarm_requests(built)
    fired = {level: {dict(key)["gpu"] for key, state in cloudwatch_eval.alarm(
        requests[f"mean-power-{level}"], points, STEPS * STEP).items() if state == "ALARM"} for level in (300, 200)}
    assert fired == {300: set(), 200: {"0"}}

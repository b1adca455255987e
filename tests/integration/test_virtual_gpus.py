"""Grafana panels and Prometheus alert rules read the truth of a fleet whose exporters run with
KUBERNETES_VIRTUAL_GPUS=true (settings `exporter.virtual_gpus: true`), on a real Prometheus.

The payloads (tests/support/virtual_gpus.py, whose docstring cites the exporter's source) mix a node on
dcgm-exporter 4.5.3+ with the setting on (GPU utilization and framebuffer used written as the device's series
plus each pod's own share; other fields once per pod), a node with the setting off, and a node mid-upgrade
still on 4.5.2 with the setting on (every copy the device's value). Each per-GPU and fleet panel must read
the device's value (a GPU at 90 % that three pods share at 30, 25 and 0 % reads 90, not 36.25), framebuffer
totals count a GPU once, and each per-pod panel reads the pod's own share. Two scrape paths: gpudash's job
(the workload as `pod`), and the GPU operator's ServiceMonitor (honorLabels: false: the workload as
`exported_pod`, the device's own series with the exporter's `pod`).
"""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor

import pytest

from generator.artifacts import grafana_dashboards
from generator.exporter_styles import STYLES
from generator.model import Query, Row
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from generator.promql import legend
from generator.render.alarms import alert_name, cloudwatch_condition, prometheus_rules
from generator.render.scrape import prometheus_scrape_job
from generator.resources import default_counters
from generator.settings import parse_settings
from tests.integration.test_fleet_truth import EXPORTED
from tests.support import virtual_gpus
from tests.support.alert_periods import latest_period
from tests.support.operator_scrape import endpoint_target, operator_monitor, scrape_config
from tests.support.prometheus_server import Prometheus, for_file_sd, scraped_every, range_macros
from tests.support.replay_exporter import ReplayExporter
from tests.support.virtual_gpus import FIELDS, FLEET, TEMP, UTIL, truth

OPERATOR = STYLES["gpu-operator"]
VIRTUAL = "exporter:\n  virtual_gpus: true\n"


PATHS = {"gpudash-job": VIRTUAL, "operator-servicemonitor": VIRTUAL + EXPORTED}


def _job(path: str, exporters: list[ReplayExporter], workdir, reference) -> dict:
    sd_file = workdir / "targets.json"
    if path == "gpudash-job":
        targets = [{"targets": [exporter.address], "labels": {
            "__meta_kubernetes_namespace": "gpu-operator", "__meta_kubernetes_pod_name": node.exporter_pod,
            "__meta_kubernetes_pod_node_name": node.name, "__meta_kubernetes_pod_container_name": OPERATOR.container,
            "__meta_kubernetes_pod_container_port_number": "9400",
            "__meta_kubernetes_pod_label_app": OPERATOR.pod_label[1]}} for node, exporter in zip(FLEET, exporters)]
        job = for_file_sd(prometheus_scrape_job(parse_settings(PATHS[path], "<test>", workdir)), [str(sd_file)])
        job["scrape_interval"], job["scrape_timeout"] = "1s", "1s"
    else:
        targets = [endpoint_target(exporter.address, namespace="gpu-operator", service=OPERATOR.service,
                                   service_labels={"app": OPERATOR.pod_label[1]}, port=OPERATOR.service_port,
                                   pod=node.exporter_pod, container=OPERATOR.container, node=node.name)
                   for node, exporter in zip(FLEET, exporters)]
        job = scrape_config(operator_monitor(reference, node_relabeling=True), str(sd_file))
    sd_file.write_text(json.dumps(targets))
    return job


@pytest.fixture(scope="module")
def servers(tmp_path_factory, reference):
    exporters = [ReplayExporter(virtual_gpus.payload(node)).__enter__() for node in FLEET]
    started = {}
    try:
        for path in PATHS:
            workdir = tmp_path_factory.mktemp(path)
            started[path] = Prometheus(workdir, {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                                                 "scrape_configs": [_job(path, exporters, workdir, reference)]})
        with ThreadPoolExecutor(len(started)) as pool:
            list(pool.map(Prometheus.start, started.values()))
        for server in started.values():
            # a few scrapes in: alert rules read one reading per step, a sample counting at the step after it; an
            # instant before the latest scrapes at which every series has them and is not stale (a query at "now" reads
            # nothing of a series whose latest scrape timed out on a loaded machine): every query reads it
            server.at = server.settled(f"count_over_time({UTIL}[1m]) >= 3 and {UTIL}",
                                       count=virtual_gpus.series_count(UTIL))
        yield started
    finally:
        for server in started.values():
            server.stop()
        for exporter in exporters:
            exporter.__exit__(None, None, None)


def _project(tmp_path, settings: str):
    wanted = set(FIELDS) | {"DCGM_FI_DRIVER_VERSION"}
    csv = tmp_path / "counters.csv"
    csv.write_text("\n".join(line for line in default_counters().read_text().splitlines()
                             if line and not line.startswith("#") and line.split(",")[0].strip() in wanted) + "\n")
    (tmp_path / "gpudash.yaml").write_text(settings)
    return load_project(tmp_path / "gpudash.yaml", csv)


def _all(expr: str) -> str:
    return interpolate(expr, {"__rate_interval": "3s", **range_macros("3s"),
                              **variables({}, ("namespace", "pod", "node", "gpu", "cluster"))})


def _shown(prometheus: Prometheus, expr: str, legend: str, by: bool) -> dict[str, float]:
    result = prometheus.query(_all(expr), at=prometheus.at)
    shown = {render_legend(legend, s["metric"]) if by else "": float(s["value"][1]) for s in result}
    assert len(shown) == len(result), f"two series share a legend: {result}"
    return shown


def _panels(project):
    for dashboard in grafana_dashboards(project):
        neutral = next(d for d in project.dashboards if dashboard.uid.endswith(f"-{d.id}"))
        models = [panel for row in neutral.rows if isinstance(row, Row) for panel in row.panels]
        rendered = [p for p in dashboard.model["panels"] if p["type"] != "row"]
        for panel, model in zip(rendered, models, strict=True):
            for target, query in zip(panel["targets"], model.queries, strict=True):
                yield f"{dashboard.uid} / {panel['title']}", target, query


@pytest.mark.parametrize("path", PATHS)
def test_every_panel_reads_the_device_per_gpu_and_each_pods_share_per_pod(servers, path, tmp_path):
    prometheus, project = servers[path], _project(tmp_path, PATHS[path])
    checked = set()
    for where, target, query in _panels(project):
        shown = _shown(prometheus, target["expr"], target["legendFormat"], bool(query.by))
        expected = truth(query)
        if query.by == ("node", "gpu", "mig_instance"):
            expected = {}  # no GPU of this fleet is split into MIG instances
        assert set(shown) == set(expected), f"{where}\n{target['expr']}"
        wrong = {k: (shown[k], v) for k, v in expected.items() if not math.isclose(shown[k], v, rel_tol=1e-9)}
        assert not wrong, f"{where}: shown vs true {wrong}\n{target['expr']}"
        checked.add((query.metric, query.by, query.over))
    # the views the mode misreads were among them: per GPU, fleet and per pod, utilization and framebuffer
    for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"):
        assert {by for m, by, _ in checked if m == metric} >= {(), ("node", "gpu"), ("pod",)}, metric
    assert truth(Query(UTIL, "avg", ("node", "gpu")))["gpu-node-on GPU 0"] == 90
    assert truth(Query(UTIL, "avg", ("pod",)))["Pod team-a/ts-1"] == 25


def test_without_the_setting_the_same_fleet_reads_wrong(servers, tmp_path):
    """The fleet does tell the two apart. Per GPU the default queries read the device's value all the same (the
    copies of one GPU merge by their largest, and no pod's share exceeds the device's), but a pod's framebuffer
    share divides its own share by its own copy's used + free, not by the GPU's memory."""
    prometheus, project = servers["gpudash-job"], _project(tmp_path, "")
    per_gpu, share = {}, {}
    for where, target, query in _panels(project):
        if query.metric == UTIL and query.by == ("node", "gpu"):
            per_gpu = _shown(prometheus, target["expr"], target["legendFormat"], True)
        if query.metric == "DCGM_FI_DEV_FB_USED" and query.by == ("pod",) and query.over:
            share = _shown(prometheus, target["expr"], target["legendFormat"], True)
            expected = truth(query)
    assert per_gpu["gpu-node-on GPU 0"] == 90
    assert expected["Pod team-a/ts-0"] == pytest.approx(0.3)
    assert share["Pod team-a/ts-0"] != pytest.approx(0.3)


@pytest.mark.parametrize("path", PATHS)
def test_alert_rules_judge_each_pod_on_its_share_and_each_gpu_on_the_device(servers, path, tmp_path):
    prometheus, project = servers[path], _project(tmp_path, PATHS[path])
    settings = project.settings
    rules = {r["alert"]: r for g in prometheus_rules(project.alarms, project.catalog, settings)["groups"]
             for r in g["rules"] if "alert" in r}  # beside the alerts: recordings some of them read
    fired = {}
    for alarm in project.alarms:
        if alarm.absent:
            continue
        rule = rules[alert_name(alarm.id)]
        condition = cloudwatch_condition(alarm, settings)
        template = legend(condition.query, settings.labels)
        # the rule reads one reading per step of the scrape interval: this Prometheus scrapes every second
        expr = scraped_every(latest_period(alarm, project.catalog, settings, rule["expr"]), settings.scrape.seconds, 1)
        firing = {render_legend(template, s["metric"]) for s in prometheus.query(expr, at=prometheus.at)}
        compare = {">": float.__gt__, "<": float.__lt__}[condition.comparison]
        expected = {k for k, v in truth(condition.query).items() if compare(v, float(condition.threshold))}
        assert firing == expected, (rule["alert"], rule["expr"])
        fired[rule["alert"]] = firing
    # a pod whose processes do nothing on a GPU others keep busy is idle; the GPU itself is not
    assert fired["GpudashGpuIdle"] == {"Pod team-b/ts-0 GPU 0"}
    # memory is the GPU's: both pods sharing the nearly full GPU are told, whatever their own share
    assert fired["GpudashFramebufferFull"] == {"Pod team-e/a", "Pod team-e/b"}


def test_the_fleet_is_what_the_exporter_writes():
    """A guard on the fixture: the device's series and the shares on the 4.5.3 node, copies elsewhere."""
    on = virtual_gpus.payload(FLEET[0])
    assert 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-gpu-node-on-0",' in on  # the device's series, no pod
    assert 'pod="ts-1",pod_uid="uid-team-a-ts-1",vgpu="1"} 25' in on
    assert f'{TEMP}{{gpu="0"' in on and f'{TEMP}{{gpu="0",UUID="GPU-gpu-node-on-0",pci_bus_id="00000000:10:00.0",' \
        f'device="nvidia0",modelName="NVIDIA A10G",Hostname="gpu-node-on",DCGM_FI_DRIVER_VERSION="570.133.20"}}' not in on
    assert virtual_gpus.series_count(UTIL) == 4 + 2 + 1 + 3 + 2 + 2

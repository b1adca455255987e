"""Every panel, variable and alert rule tells the truth about a mixed fleet, through every scrape path.

The fleet (tests/support/mixed_fleet.py) mixes `Hostname` and `hostname` exporters, an old
exporter that writes its own pod name as Hostname, one pod name in two namespaces, GPUs no pod
holds, a MIG node and "not supported" values, a GPU two pods time-slice that its exporter (without
KUBERNETES_VIRTUAL_GPUS) names under each of them at alternate scrapes (the latest scrape's series of it name one pod,
the other's is marked stale; a per-pod panel shows it under both, each pod a scrape of its lookback named, and a
per-pod rule, over many scrapes, reads both), and a
node whose exporter adds each pod's UID and labels
(`POD_IDENTITY`: a GPU's copies differ by more than the workload's labels). Replay exporters serve it; one real Prometheus per
scrape path scrapes it:

* gpudash's job (Kubernetes pod discovery, as file discovery with the same meta labels);
* gpudash's ServiceMonitor, as prometheus-operator turns it into a job (honorLabels: true);
* both of gpudash's paths again, generated for settings that name the workload labels `exported_*`
  (as the GPU operator's ServiceMonitor gives them): the queries use those names, so must the paths;
* the GPU operator's own ServiceMonitor (honorLabels: false, workload labels as exported_*), with
  the node relabeling the README tells users to add, and without it.

Each generated query runs with the dashboard variables at their default (All); its legends and
values must equal what the fleet's facts say.
"""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from generator.artifacts import grafana_dashboards
from generator.exporter_styles import STYLES
from generator.model import Panel, Row
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from generator.promql import label_lookback, legend, with_cluster
from generator.render.alarms import alert_name, cloudwatch_condition, prometheus_rules, watched_clusters
from generator.render.scrape import prometheus_scrape_job, service_monitor
from generator.resources import default_counters
from generator.settings import parse_settings
from tests.support import kube_state, mixed_fleet
from tests.support.alert_periods import latest_period
from tests.support.mixed_fleet import FIELDS, POD_IDENTITY
from tests.support.operator_scrape import endpoint_target, operator_monitor, scrape_config
from tests.support.prometheus_server import Prometheus, counted_inline, for_file_sd, scraped_every, range_macros
from tests.support.promtool_rules import rendered as annotation
from tests.support.replay_exporter import ReplayExporter

FLEET = (*mixed_fleet.FLEET, POD_IDENTITY)


def truth(query, node_names, clusters=("",), collected=frozenset(FIELDS), scrape=None):
    return mixed_fleet.truth(query, node_names, clusters, collected, FLEET, scrape)


RATE_WINDOW = "3s"
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")
OPERATOR = STYLES["gpu-operator"]
EXPORTED = "labels:\n  pod: exported_pod\n  namespace: exported_namespace\n  container: exported_container\n"
# what generate and lint warn about (PR003): the pod renamed, the namespace read unrenamed
MIXED = "labels:\n  pod: exported_pod\n  namespace: namespace\n  container: exported_container\n"


SHARED = """
clusters:
  - {name: east, region: us-east-1, prometheus_label: east}
  - {name: west, region: us-west-2, prometheus_label: west}
  - {name: north, region: eu-north-1, prometheus_label: north}   # its data never arrives
"""


@dataclass(frozen=True)
class Path_:
    name: str
    settings: str
    node_names_set: bool = True  # False: the path cannot know the node of an exporter without NODE_NAME
    clusters: tuple[str, ...] = ("",)  # several: one Prometheus holds clusters that run this same fleet


PATHS = (Path_("gpudash-job", ""), Path_("gpudash-servicemonitor", ""),
         Path_("gpudash-job-exported", EXPORTED), Path_("gpudash-servicemonitor-exported", EXPORTED),
         Path_("operator-servicemonitor", EXPORTED), Path_("operator-servicemonitor-plain", EXPORTED, False),
         Path_("shared-prometheus", SHARED, clusters=("east", "west")))
# Paths whose per-pod panels are also drawn over a range (test_per_pod_panels_show_both_pods_...): scraped for
# RANGED_SPAN seconds at least, the others only until their instant settles
RANGED = (PATHS[0], PATHS[4])
RANGED_SPAN = 12
# the pods sharing the moving GPUs (a series each): every one is named within the rate window at the settled instant
SHARING = sum(len(i.pods()) for node in FLEET if node.moves for gpu in node.gpus for i in gpu.instances)


def _ksm_job(ksm: ReplayExporter, cluster: str = "") -> dict:
    """kube-state-metrics as kube-prometheus-stack scrapes it (honorLabels: its namespace and daemonset stay)."""
    job = {"job_name": f"kube-state-metrics{'-' + cluster if cluster else ''}", "honor_labels": True,
           "static_configs": [{"targets": [ksm.address]}]}
    if cluster:
        job["relabel_configs"] = [{"target_label": "cluster", "replacement": cluster, "action": "replace"}]
    return job


def _jobs(path: Path_, exporters: dict[str, ReplayExporter], workdir: Path, reference: Path) -> list[dict]:
    """The path's scrape jobs, each sending the exporters its own query string: an exporter counts each job's
    scrapes apart (ReplayExporter `counted`), so every job's data names a time-sliced GPU's pods in turn."""
    jobs = _path_jobs(path, exporters, workdir, reference)
    for job in jobs:
        job["params"] = {"scraper": [f"{path.name}/{job['job_name']}"]}
    return jobs


def _path_jobs(path: Path_, exporters: dict[str, ReplayExporter], workdir: Path, reference: Path) -> list[dict]:
    if path.name != "shared-prometheus":
        return [_job(path, exporters, workdir, reference), _ksm_job(exporters["kube-state-metrics"])]
    jobs = []
    for cluster in path.clusters:  # each cluster's Prometheus job, as one Prometheus would hold them
        job = _job(Path_("gpudash-job", ""), exporters, workdir, reference)
        job["job_name"] = f"dcgm-{cluster}"
        job["relabel_configs"].append({"target_label": "cluster", "replacement": cluster, "action": "replace"})
        jobs += [job, _ksm_job(exporters["kube-state-metrics"], cluster)]
    return jobs


def _job(path: Path_, exporters: dict[str, ReplayExporter], workdir: Path, reference: Path) -> dict:
    sd_file = workdir / f"{path.name}.json"
    settings = parse_settings(path.settings, "<test>", workdir)  # the scrape paths of the path's own settings
    if path.name.startswith("gpudash-job"):
        targets = [{"targets": [exporters[node.name].address], "labels": {
            "__meta_kubernetes_namespace": "gpu-operator", "__meta_kubernetes_pod_name": node.exporter_pod,
            "__meta_kubernetes_pod_node_name": node.name, "__meta_kubernetes_pod_container_name": OPERATOR.container,
            "__meta_kubernetes_pod_container_port_number": "9400",
            "__meta_kubernetes_pod_label_app": OPERATOR.pod_label[1]}} for node in FLEET]
        job = for_file_sd(prometheus_scrape_job(settings), [str(sd_file)])
        job["scrape_interval"], job["scrape_timeout"] = "1s", "1s"
    else:
        targets = [endpoint_target(exporters[node.name].address, namespace="gpu-operator", service=OPERATOR.service,
                                   service_labels={"app": OPERATOR.pod_label[1]}, port=OPERATOR.service_port,
                                   pod=node.exporter_pod, container=OPERATOR.container, node=node.name)
                   for node in FLEET]
        monitor = service_monitor(settings) if path.name.startswith("gpudash-servicemonitor") \
            else operator_monitor(reference, node_relabeling=path.node_names_set)
        job = scrape_config(monitor, str(sd_file))
    sd_file.write_text(json.dumps(targets))
    return job


@pytest.fixture(scope="module")
def exporters():
    started = {node.name: ReplayExporter(mixed_fleet.served(node), counted=True).__enter__() for node in FLEET}
    # the exporter DaemonSet runs on every node of the fleet, each pod available
    started["kube-state-metrics"] = ReplayExporter(kube_state.payload(
        {"namespace": "gpu-operator", "daemonset": OPERATOR.daemonset, **kube_state.OPERATOR_LABELS}, len(FLEET),
        len(FLEET))).__enter__()
    yield started
    for exporter in started.values():
        exporter.__exit__(None, None, None)


@dataclass(frozen=True)
class Stack:
    prometheus: Prometheus
    at: int  # the instant every query reads (mixed_fleet.settled_time): each counter series sampled at it and
    # every second of the rate window before it
    scrape: dict[str, int]  # per cluster, the scrape whose gauges are read at `at` (the pod it names the moving GPU
    # under)


@pytest.fixture(scope="module")
def stacks(tmp_path_factory, reference, exporters, projects) -> dict[str, Stack]:
    """One Prometheus per path, each scraping the fleet until an instant is settled; then they scrape no more (what
    they stored stays: every test queries it at that instant). Each loads the rule group of the clusters the settings
    watch (a shared Prometheus' cluster variable lists them: render.alarms.watched_clusters), as a deployment does."""
    servers = {}
    try:
        for path in PATHS:
            workdir = tmp_path_factory.mktemp(path.name)
            watched = workdir / "gpudash-clusters.rules.yaml"
            watched.write_text(yaml.safe_dump({"groups": watched_clusters(projects[path.name].settings)}))
            config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "rule_files": [str(watched)],
                      "scrape_configs": _jobs(path, exporters, workdir, reference)}
            servers[path.name] = Prometheus(workdir, config)
        with ThreadPoolExecutor(len(servers)) as pool:  # start them side by side
            list(pool.map(Prometheus.start, servers.values()))
        for path in PATHS:
            servers[path.name].wait_for("DCGM_FI_DEV_GPU_TEMP", count=_series(path))
        began = time.monotonic()
        still = {path.name: _series(path) - len(path.clusters) * len(mixed_fleet.moving(FLEET)) for path in PATHS}
        settled = {}
        for path in sorted(PATHS, key=lambda p: p in RANGED):  # the ranged ones last, once they hold their span
            if path in RANGED:
                time.sleep(max(0.0, began + RANGED_SPAN - time.monotonic()))
            while True:
                settled[path.name] = mixed_fleet.settled_time(servers[path.name], int(RATE_WINDOW[:-1]),
                                                              still[path.name], fleet=FLEET,
                                                              named=len(path.clusters) * SHARING)
                # a range of steps 4 s apart from the first instant every series' first sample is a lookback old
                if path not in RANGED or settled[path.name] >= _ranged_first(servers[path.name], settled[path.name]) + 4:
                    break
                assert time.monotonic() < began + 120, "no ranged span settled in 120 s"
                time.sleep(1)
            servers[path.name].stop_scraping()
            servers[path.name].remember_answers()  # every test queries at the settled instant, before any change
        yield {path.name: Stack(servers[path.name], settled[path.name],
                                _scrape(servers[path.name], settled[path.name], path)) for path in PATHS}
    finally:
        for server in servers.values():
            server.stop()


def _ranged_first(prometheus: Prometheus, at: int) -> int:
    """The first whole second at which every series' first sample (up to `at`) is a lookback old: the first step of
    a per-pod panel drawn over a range (a series first stored late, on a loaded machine, starts it late)."""
    firsts = prometheus.query("min_over_time(timestamp(DCGM_FI_DEV_GPU_TEMP)[5m:1s])", at=at)
    return math.ceil(max(float(s["value"][1]) for s in firsts)) + int(label_lookback(1)[:-1])


def _scrape(prometheus: Prometheus, at: int, path: Path_) -> dict[str, int]:
    """Per cluster, the scrape whose gauges an instant query at `at` reads, told by the pod it names the moving GPU
    under (scrape k names the GPU's pod k mod n: mixed_fleet.Node.moves; a scrape leaving a series out marks it
    stale, so one pod's shows); which scrape that is depends on when it ran."""
    pod = parse_settings(path.settings, "<test>", Path(".")).labels.pod
    (uuid,) = mixed_fleet.moving(FLEET)
    (node,) = [n for n in FLEET if n.moves]
    holders = [p for _, p in node.gpus[0].instances[0].pods()]
    gauges = prometheus.query(f'DCGM_FI_DEV_GPU_TEMP{{UUID="{uuid}"}}', at=at)
    named = {s["metric"].get("cluster", ""): holders.index(s["metric"][pod]) for s in gauges}
    assert len(named) == len(gauges) == len(path.clusters), gauges  # one pod at a time per cluster
    return named


def _series(path: Path_) -> int:
    """Series of one field the path's Prometheus holds at an instant: one per GPU and MIG instance, and per pod sharing
    it where its exporter writes a copy per pod."""
    return len(path.clusters) * sum(len(node.labelled(i, 0)) or 1 for node in FLEET for gpu in node.gpus
                                    for i in gpu.instances)


def _counters(folder: Path, fields: set[str]) -> Path:
    """The bundled counters CSV cut down to `fields` (and the driver-version label)."""
    wanted = fields | {"DCGM_FI_DRIVER_VERSION"}
    csv = folder / "counters.csv"
    csv.write_text("\n".join(line for line in default_counters().read_text().splitlines()
                             if line and not line.startswith("#") and line.split(",")[0].strip() in wanted) + "\n")
    return csv


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    """Per path: the default definitions over the fields this fleet reports."""
    folder = tmp_path_factory.mktemp("projects")
    csv = _counters(folder, set(FIELDS))
    result = {}
    for path in PATHS:
        config = folder / f"{path.name}.yaml"
        config.write_text(path.settings)
        result[path.name] = load_project(config, csv)
    return result


def _node_names(path: Path_, exporters: dict[str, ReplayExporter]) -> dict[str, str]:
    """The name each node can be known by: the Kubernetes node where the path attaches it, else what
    the exporter writes (its own pod name without NODE_NAME), else the scrape target's address."""
    def name(node) -> str:
        if path.node_names_set:
            return node.name
        if node.spelling is None:
            return exporters[node.name].address
        return node.written_hostname
    return {node.name: name(node) for node in FLEET}


def _substitute(expr: str, window: str = RATE_WINDOW, **selected: str) -> str:
    """Grafana's interpolation, as the preview does it: macros, and each variable as its regex (All:
    `.*`; a picked value escaped as Grafana escapes it for Prometheus)."""
    values = {"__rate_interval": window, **range_macros(window), **variables(selected, VARIABLES)}
    return interpolate(expr, values)


def _close(actual: float, expected: float) -> bool:
    """Equal but for float rounding: counters grow linearly with their own timestamps, and every
    query runs at an instant whose rate window has a sample at each end (`settled_time`)."""
    return math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-9)


_DASHBOARDS: dict[int, tuple] = {}


def _dashboards(project) -> list:
    """The project's Grafana dashboards, rendered once per project (tests read them many times, never change them)."""
    if id(project) not in _DASHBOARDS:
        _DASHBOARDS[id(project)] = (project, grafana_dashboards(project))  # the project kept: its id stays its own
    return _DASHBOARDS[id(project)][1]


def _panels(project, dashboard_uid: str) -> list[Panel]:
    neutral = next(d for d in project.dashboards if f"{project.settings.grafana.uid_prefix}-{d.id}" == dashboard_uid)
    return [panel for row in neutral.rows if isinstance(row, Row) for panel in row.panels]


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_every_panel_shows_the_truth(stacks, projects, path, exporters):
    assert _check_panels(stacks[path.name], projects[path.name], path, exporters, frozenset(FIELDS)) >= 30


def _check_panels(stack: Stack, project, path: Path_, exporters, collected: frozenset[str]) -> int:
    """Every panel query's legends and values against the truth; the number of queries checked."""
    prometheus, at = stack.prometheus, stack.at
    checked = 0
    for dashboard in _dashboards(project):
        rendered = [p for p in dashboard.model["panels"] if p["type"] != "row"]
        for panel, model in zip(rendered, _panels(project, dashboard.uid), strict=True):
            assert panel["title"] == model.title
            for target, query in zip(panel["targets"], model.queries, strict=True):
                where = f"{path.name}: {dashboard.uid} / {panel['title']}"
                result = prometheus.query(_substitute(scraped_every(counted_inline(target["expr"], project),
                                                                    project.settings.scrape.seconds, 1)),
                                          at=at)
                shown = {render_legend(target["legendFormat"], s["metric"]) if query.by else "": float(s["value"][1])
                         for s in result}
                assert len(shown) == len(result), f"{where}: two series share a legend: {result}"
                if path.clusters != ("",) and query.by:
                    query = with_cluster(query)
                # the moving GPU under both pods, each named by a scrape of the panel's lookback (a gauge) or rate
                # window (a counter's rate per pod: the GPU's, read from all its copies)
                expected = truth(query, _node_names(path, exporters), path.clusters, collected)
                assert set(shown) == set(expected), f"{where}\n{target['expr']}"
                wrong = {k: (shown[k], expected[k]) for k in expected if not _close(shown[k], expected[k])}
                assert not wrong, f"{where}: shown vs true {wrong}\n{target['expr']}"
                checked += 1
    return checked


def _variable_values(stack: Stack, variable: dict, **selected: str) -> set[str]:
    prometheus = stack.prometheus
    query = _substitute(variable["query"], **selected)
    expr = re.fullmatch(r"query_result\((.*)\)", query).group(1)
    regex = re.compile(variable["regex"].strip("/"))
    values = set()
    for series in prometheus.query(expr, at=stack.at):
        labels = ",".join(f'{k}="{v}"' for k, v in series["metric"].items())
        text = f'{{{labels}}} {series["value"][1]} {int(series["value"][0] * 1000)}'
        match = regex.search(text)
        if match:
            values.add(match.group(1))
    return values


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_variables_list_what_holds_a_gpu_and_nothing_else(stacks, projects, path, exporters):
    stack, project = stacks[path.name], projects[path.name]
    holders = mixed_fleet.namespaces_and_pods(FLEET)
    expected = {"namespace": {ns for ns, _ in holders}, "pod": {pod for _, pod in holders},
                **({"cluster": set(path.clusters)} if path.clusters != ("",) else {}),
                "node": set(_node_names(path, exporters).values()),
                "gpu": {str(gpu.index) for node in FLEET for gpu in node.gpus}}
    for dashboard in _dashboards(project):
        variables = {v["name"]: v for v in dashboard.model["templating"]["list"] if v["type"] == "query"}
        assert set(variables) == set(expected)
        for name, variable in variables.items():
            assert _variable_values(stack, variable) == expected[name], (path.name, dashboard.uid, name)


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_alerts_fire_for_exactly_the_right_objects(stacks, projects, path, exporters):
    stack, project = stacks[path.name], projects[path.name]
    fired = _check_alerts(stack, project, path, exporters, frozenset(FIELDS))
    assert fired == {alert: {f"{cluster} {name}".lstrip() for cluster in path.clusters for name in names}
                     for alert, names in {
        "GpudashXidError": {"gpu-node-b GPU 0"},
        "GpudashGpuTempHigh": {"gpu-node-a GPU 0", "gpu-node-mig GPU 1"},
        "GpudashGpuTempCritical": {"gpu-node-mig GPU 1"},
        "GpudashFramebufferFull": {"Pod team-a/mig-a"},  # one MIG instance full; its GPU is not
        # not the MIG pods whose GPU_UTIL reads 0; both pods of the idle time-sliced GPU, named at alternate scrapes
        "GpudashGpuIdle": {"Pod team-a/infer-1 GPU 0", "Pod team-d/ts-0 GPU 0", "Pod team-d/ts-1 GPU 0"},
        "GpudashPcieReplays": {"gpu-node-a GPU 0"},  # not the "not supported" counter of node c
    }.items()}


def _check_alerts(stack: Stack, project, path: Path_, exporters,
                  collected: frozenset[str]) -> dict[str, set[str]]:
    """Each alert fires for exactly the objects the truth puts past its threshold; what fired."""
    labels = project.settings.labels
    rules: dict[str, dict] = {}  # each alert's first rule (the data-missing alert's second is judged below)
    every = [r for g in prometheus_rules(project.alarms, project.catalog, project.settings)["groups"] for r in g["rules"]
             if "alert" in r]
    for r in every:
        rules.setdefault(r["alert"], r)
    assert len(rules) >= 7
    prometheus, at = stack.prometheus, stack.at  # 3 s of counters at least
    fired: dict[str, set[str]] = {}
    for alarm in project.alarms:
        rule = rules[alert_name(alarm.id)]
        if alarm.stopped:  # every GPU of the fleet reports at every scrape: none stopped while its node reports
            assert prometheus.query(rule["expr"], at=stack.at) == [], rule["expr"]
            continue
        condition = cloudwatch_condition(alarm, project.settings)  # the one both forms of the rule evaluate
        # the rule merges a counter's copies at the scrape interval it was made for; this Prometheus scrapes every 1 s
        expr = latest_period(alarm, project.catalog, project.settings, rule["expr"])
        result = prometheus.query(scraped_every(expr, project.settings.scrape.seconds, 1), at=at)
        if alarm.absent:  # data stopped: on a shared Prometheus, the silent cluster and only it
            # and its rule on each exporter target's scrapes: every target of the fleet brings GPU data
            (second,) = [r for r in every if r["alert"] == rule["alert"] and r is not rule]
            assert prometheus.query(second["expr"], at=at) == [], second["expr"]
            silent = [{"cluster": "north",
                       "reason": "kube-state-metrics reports no exporter DaemonSet (deleted, kube-state-metrics not "
                                 "scraped, or its --metric-labels-allowlist lacks "
                                 "daemonsets=[app,app.kubernetes.io/name])"}] if path.clusters != ("",) else []
            assert [s["metric"] for s in result] == silent, rule["expr"]
            if silent:
                summary = annotation(rule["annotations"]["summary"], result[0]["metric"])
                assert summary == f"No GPU metrics arriving on cluster north ({silent[0]['reason']})", summary
            continue
        query = with_cluster(condition.query) if path.clusters != ("",) else condition.query
        template = legend(query, labels)
        firing = {render_legend(template, s["metric"]) for s in result}
        values = truth(query, _node_names(path, exporters), path.clusters, collected)
        if condition.query.as_increase:  # increase over the window: at least 2 s of the fleet's rate
            values = {k: v * 2 for k, v in values.items()}
        compare = {">": float.__gt__, ">=": float.__ge__, "<": float.__lt__, "<=": float.__le__}[condition.comparison]
        expected = {k for k, v in values.items() if compare(float(v), float(condition.threshold))}
        assert firing == expected, (path.name, rule["alert"], expr)
        fired[rule["alert"]] = firing
        # the summary names the object with the labels the alert carries
        for series in result:
            summary = annotation(rule["annotations"]["summary"], series["metric"])
            assert "{{" not in summary and " /" not in summary and "  " not in summary, summary
    return fired


def test_without_the_mig_stand_in_mig_gpus_show_no_utilization(stacks, tmp_path, exporters):
    """A counters CSV without DCGM_FI_PROF_GR_ENGINE_ACTIVE (the exporter's plain default set) has no
    stand-in for the GPU utilization MIG does not report: MIG GPUs and pods give no utilization,
    never the 0 their instances write, and no pod on them is called idle."""
    path = PATHS[0]
    collected = frozenset(FIELDS) - {"DCGM_FI_PROF_GR_ENGINE_ACTIVE"}
    (tmp_path / "gpudash.yaml").write_text(path.settings)
    project = load_project(tmp_path / "gpudash.yaml", _counters(tmp_path, set(collected)))
    assert _check_panels(stacks[path.name], project, path, exporters, collected) >= 20
    assert _check_alerts(stacks[path.name], project, path, exporters, collected)["GpudashGpuIdle"] == \
        {"Pod team-a/infer-1 GPU 0", "Pod team-d/ts-0 GPU 0", "Pod team-d/ts-1 GPU 0"}


def test_the_truth_is_the_fleet_facts():
    """The figures the fleet was built for, written out (a guard on `truth` itself)."""
    from generator.model import Query

    names = {node.name: node.name for node in FLEET}
    power = truth(Query("DCGM_FI_DEV_POWER_USAGE", "sum"), names)
    assert power == {"": 2680}  # each MIG GPU once, not once per instance; a time-sliced GPU once
    by_pod = truth(Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("pod",)), names)
    assert by_pod["Pod team-c/mig-b"] == 500 and by_pod["Pod team-a/mig-a"] == 350
    memory = truth(Query("DCGM_FI_DEV_FB_USED", "sum", ("pod",)), names)
    assert memory["Pod team-a/worker-0"] == 9000 and memory["Pod team-b/worker-0"] == 40000
    per_gpu = truth(Query("DCGM_FI_DEV_FB_USED", "avg", ("node", "gpu")), names)
    assert per_gpu["gpu-node-mig GPU 0"] == 24600  # instances add up
    util = truth(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("node", "gpu")), names)
    assert util["gpu-node-a GPU 0"] == 90 and util["gpu-node-b GPU 0"] == 35 and util["gpu-node-mig GPU 1"] == 30
    assert truth(Query("DCGM_FI_DEV_GPU_TEMP", "count"), names) == {"": 13}
    # copies that differ by the pods' UIDs and labels: the GPU once, its instances' memory added up
    assert per_gpu["gpu-node-uid GPU 0"] == 15000 and by_pod["Pod team-v/infer-0"] == 250
    # a pod holding two GPUs: its utilization averages them, its memory and power add up
    assert truth(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("pod",)), names)["Pod team-f/trainer.v2-0"] == 60
    assert memory["Pod team-f/trainer.v2-0"] == 40000 and by_pod["Pod team-f/trainer.v2-0"] == 500
    assert per_gpu["gpu-node-ts GPU 0"] == 12000  # the time-sliced GPU once
    # its exporter (no KUBERNETES_VIRTUAL_GPUS) names one of the two pods sharing it at each scrape, ts-0 and ts-1 in
    # turn: over scrapes each shows the GPU's value; at one scrape the one it names, the other not at all
    assert memory["Pod team-d/ts-0"] == memory["Pod team-d/ts-1"] == 12000 and by_pod["Pod team-d/ts-1"] == 200
    assert mixed_fleet.unnamed(FLEET) == set()
    now = truth(Query("DCGM_FI_DEV_FB_USED", "sum", ("pod",)), names, scrape=1)
    assert now["Pod team-d/ts-1"] == 12000 and "Pod team-d/ts-0" not in now
    assert "gpu-node-c GPU 0" not in truth(Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "max", ("node", "gpu")), names)
    instances = truth(Query("DCGM_FI_DEV_FB_USED", "avg", ("node", "gpu", "mig_instance")), names)
    assert instances == {"gpu-node-mig GPU 0 MIG 1 (3g.20gb)": 19600, "gpu-node-mig GPU 0 MIG 2 (3g.20gb)": 5000,
                         "gpu-node-mig GPU 1 MIG 1 (4g.20gb)": 8000, "gpu-node-mig GPU 1 MIG 2 (3g.20gb)": 0,
                         "gpu-node-uid GPU 0 MIG 1 (3g.20gb)": 10000, "gpu-node-uid GPU 0 MIG 2 (3g.20gb)": 5000}


def _target(project, uid: str, title: str) -> tuple[dict, object]:
    dashboard = next(d for d in _dashboards(project) if d.uid == uid)
    rendered = [p for p in dashboard.model["panels"] if p["type"] != "row"]
    panel, model = next((p, m) for p, m in zip(rendered, _panels(project, uid)) if p["title"] == title)
    query = with_cluster(model.queries[0]) if project.settings.shared_prometheus else model.queries[0]
    return panel["targets"][0], query


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_a_selected_node_or_namespace_shows_only_itself(stacks, projects, path, exporters):
    """The variables filter as they list: one node (whichever label names it), one namespace."""
    stack, project = stacks[path.name], projects[path.name]
    names = _node_names(path, exporters)
    target, query = _target(project, "gpudash-overview", "GPU temperature")
    variables = {v["name"]: v for v in _dashboards(project)[0].model["templating"]["list"]}
    everything = truth(query, names, path.clusters)
    for node in FLEET:
        result = stack.prometheus.query(_substitute(target["expr"], node=names[node.name]), at=stack.at)
        shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
        assert shown == {k: v for k, v in everything.items() if f"{names[node.name]} GPU " in k}, node.name
        gpus = _variable_values(stack, variables["gpu"], node=names[node.name])
        assert gpus == {str(gpu.index) for gpu in node.gpus}, node.name
    target, query = _target(project, "gpudash-by-pod", "Framebuffer used by pod")
    everything = truth(query, names, path.clusters)  # the moving GPU under both pods
    for namespace in sorted({ns for ns, _ in mixed_fleet.namespaces_and_pods(FLEET)}):
        result = stack.prometheus.query(_substitute(scraped_every(target["expr"], 30, 1), namespace=namespace),
                                        at=stack.at)
        shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
        assert shown == {k: v for k, v in everything.items() if f"Pod {namespace}/" in k}, namespace
        pods = _variable_values(stack, variables["pod"], namespace=namespace)
        assert pods == {pod for ns, pod in mixed_fleet.namespaces_and_pods(FLEET) if ns == namespace}, namespace


def test_the_warned_label_mix_shows_the_exporters_namespace_through_the_operators_servicemonitor(
        stacks, projects, exporters, tmp_path):
    """`labels:` reading exported_pod beside an unrenamed namespace (warned, PR003), through the GPU operator's
    ServiceMonitor: every pod is shown in the exporter's namespace, and worker-0 of team-a and of team-b is one
    line; all three read as exported_* (the fix the warning names), each pod is in its own namespace."""
    path = next(p for p in PATHS if p.name == "operator-servicemonitor")
    stack = stacks[path.name]
    config = tmp_path / "mixed.yaml"
    config.write_text(MIXED)
    shown = {}
    for name, project in (("mixed", load_project(config, _counters(tmp_path, set(FIELDS)))),
                          ("exported", projects[path.name])):
        target, query = _target(project, "gpudash-by-pod", "Framebuffer used by pod")
        result = stack.prometheus.query(_substitute(scraped_every(target["expr"], 30, 1)), at=stack.at)
        shown[name] = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
    true = truth(query, _node_names(path, exporters))
    assert set(shown["exported"]) == set(true) and all(_close(shown["exported"][k], v) for k, v in true.items())
    assert {"Pod team-a/worker-0", "Pod team-b/worker-0"} <= set(true)
    assert shown["mixed"] and {k.split("/")[0] for k in shown["mixed"]} == {"Pod gpu-operator"}, shown["mixed"]
    assert {k.split("/", 1)[1] for k in shown["mixed"]} == {k.split("/", 1)[1] for k in true}
    assert len(shown["mixed"]) == len(true) - 1  # the two worker-0 pods read as one


def test_pods_on_gpus_lists_both_pods_of_a_time_sliced_gpu(stacks, projects, exporters):
    """The table of pods holding GPUs now, on the GPU ts-0 and ts-1 share, which the exporter names under each at
    alternate scrapes: the latest scrape's series of the GPU name one of them (the other pod's series is marked stale
    by that scrape, so an instant selector reads one pod), and the table lists both, each holding 1 GPU, as every
    other pod with the GPUs it holds: the truth."""
    path = PATHS[0]
    stack, project = stacks[path.name], projects[path.name]
    (uuid,) = mixed_fleet.moving(FLEET)
    assert len(stack.prometheus.query(f'DCGM_FI_DEV_GPU_TEMP{{UUID="{uuid}"}}', at=stack.at)) == 1  # one pod now
    target, query = _target(project, "gpudash-by-pod", "Pods on GPUs")
    shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1])
             for s in stack.prometheus.query(_substitute(scraped_every(target["expr"], 30, 1)), at=stack.at)}
    assert shown == truth(query, _node_names(path, exporters))
    assert shown["Pod team-d/ts-0"] == shown["Pod team-d/ts-1"] == 1 and shown["Pod team-f/trainer.v2-0"] == 2
    panel = next(p for d in _dashboards(project) for p in d.model["panels"] if p["title"] == "Pods on GPUs")
    assert "a GPU pods share by time-slicing or MPS, which an exporter without KUBERNETES_VIRTUAL_GPUS names under one "\
           "of them per scrape (not always the same one), shows under each pod so named" in panel["description"]


# Per-pod gauge panels (and the table), as Grafana draws a range: an instant query at each step
PER_POD_GAUGES = ("GPU utilization by pod", "Framebuffer used by pod", "Framebuffer used share by pod",
                  "Power draw of each pod's GPUs", "SM clock by pod", "Pods on GPUs")


@pytest.mark.parametrize("path", RANGED, ids=lambda p: p.name)
def test_per_pod_panels_show_both_pods_of_a_time_sliced_gpu_at_every_step(stacks, projects, exporters, path):
    """Per-pod panels drawn over a range, at steps of 1, 2 and 4 scrapes: at every step each pod shows with its GPUs'
    value, the time-sliced GPU under both ts-0 and ts-1 with its whole value (power 200 W, not shared out, and not
    counted twice in a pod's line). Before, each step showed the pod the latest scrape named: at a step of an even
    number of scrapes, the same pod at every step, the other never."""
    stack, project = stacks[path.name], projects[path.name]
    names = _node_names(path, exporters)
    lookback = int(label_lookback(1)[:-1])
    first = _ranged_first(stack.prometheus, stack.at)
    # the sharing pods a stored scrape named within the lookback before each step: on a loaded machine a scrape that
    # timed out stored nothing, and two stored in a row can name one pod (the other is then not shown: the truth)
    pod = parse_settings(path.settings, "<test>", Path(".")).labels.pod
    (uuid,) = mixed_fleet.moving(FLEET)
    sharing = {f"Pod team-d/{p}" for p in ("ts-0", "ts-1")}
    checked, both = 0, 0
    for title in PER_POD_GAUGES:
        target, query = _target(project, "gpudash-by-pod", title)
        true = truth(query, names, path.clusters)
        assert sharing <= set(true), title
        expr = _substitute(scraped_every(target["expr"], project.settings.scrape.seconds, 1))
        for step in (1, 2, 4):
            count = (stack.at - first) // step + 1
            assert count >= 2, (first, stack.at)
            begin = stack.at - (count - 1) * step
            named = {at: {f"Pod team-d/{s['metric'][pod]}" for s in result} for at, result in stack.prometheus.query_at(
                f'count_over_time(DCGM_FI_DEV_GPU_TEMP{{UUID="{uuid}"}}[{lookback}s])', begin, count, step).items()}
            for at, result in stack.prometheus.query_at(expr, begin, count, step,
                                                        instant=bool(target.get("instant"))).items():
                shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
                expected = {k: v for k, v in true.items() if k not in sharing - named[at]}
                assert set(shown) == set(expected), (title, step, at, named[at])
                assert all(_close(shown[k], v) for k, v in expected.items()), (title, step, at, shown, expected)
                checked += 1
                both += named[at] == sharing
    assert checked >= 3 * len(PER_POD_GAUGES), checked
    assert both >= checked // 2, (both, checked)  # most steps hold both pods: the story is told

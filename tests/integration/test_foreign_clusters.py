"""A cluster the settings do not name, on a Prometheus shared with the settings' clusters, never counts, shows or fires.

Settings name clusters `alpha` and `beta` (clusters[].prometheus_label: one Prometheus holds both). The same Prometheus
also holds `gamma`, another team's cluster gpudash does not manage, with GPUs in the same states (hot, idle, XID 79,
replaying, rows remapped; its exporter's target down). Two real Prometheus servers (Debian's) are backfilled with 40
minutes of 30 s scrapes: one with the three clusters, one with alpha and beta alone. Every alert rule and every Grafana
panel (each variable at its default, All) must answer the same on both: gamma's GPUs are none of gpudash's. Before,
the rules read every cluster on the Prometheus: gamma's XID, temperature, idle and replay alerts, and its data-missing
alerts, fired from gpudash's rules; and the dashboards' cluster variable listed every cluster holding DCGM series, its
All `.*` counting gamma's GPUs in every panel ("GPUs reporting" 6 for 4). The variable now lists the clusters the
rules' group gpudash-clusters records (one series per cluster of the settings: a dashboard several settings files
generate stays one text), its All those clusters.
"""

from __future__ import annotations

import math

import pytest

from generator.artifacts import build, grafana_dashboards
from generator.preview.interpolate import defaults, interpolate
from tests.support.projects import defined_project
from tests.support.prometheus_server import backfilled, counted_inline, range_macros

STEP, SPAN = 30, 40 * 60
OURS, FOREIGN = ("alpha", "beta"), "gamma"
SETTINGS = """clusters:
  - {name: alpha, region: us-east-1, prometheus_label: alpha}
  - {name: beta, region: us-east-1, prometheus_label: beta}
"""
# (field, its reading at scrape k): every GPU in a state some rule alarms on
GAUGES = {"DCGM_FI_DEV_GPU_TEMP": 95, "DCGM_FI_DEV_POWER_USAGE": 300, "DCGM_FI_DEV_FB_USED": 80000,
          "DCGM_FI_DEV_FB_FREE": 100, "DCGM_FI_DEV_GPU_UTIL": 0, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0,
          "DCGM_FI_DEV_SM_CLOCK": 1400, "DCGM_FI_DEV_XID_ERRORS": 79, "DCGM_FI_DEV_ROW_REMAP_FAILURE": 1}
COUNTERS = {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 100, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": 0.1,
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 9000}  # growth per scrape


def _gpus(cluster: str):
    """(labels, held) of each GPU of the cluster: one node of the same name in every cluster (the cluster label tells
    them apart), a GPU a pod holds and an idle one."""
    for gpu, pod in ((0, 'pod="train-0",namespace="ml",container="main",'), (1, "")):
        yield (f'cluster="{cluster}",node="gpu-node-1",gpu="{gpu}",UUID="GPU-{cluster}-{gpu}",device="nvidia{gpu}",'
               f'modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-1",{pod}job="dcgm-exporter",'
               f'instance="10.0.1.1:9400"')


def _openmetrics(clusters: tuple[str, ...]):
    def written(start: int) -> str:
        lines = []
        for field in (*GAUGES, *COUNTERS):
            lines.append(f"# TYPE {field} gauge")
            for cluster in clusters:
                for labels in _gpus(cluster):
                    for k, taken in enumerate(range(start, start + SPAN, STEP)):
                        value = GAUGES[field] if field in GAUGES else round(1000 + COUNTERS[field] * k, 3)
                        lines.append(f"{field}{{{labels}}} {value} {taken}")
        for name, labels, value in _scraped():
            lines.append(f"# TYPE {name} gauge")
            for cluster in clusters:
                # gamma's exporter and kube-state-metrics are down, its exporter DaemonSet short of pods
                if cluster == FOREIGN and name == "gpudash:cluster:watched":
                    continue  # no settings file names it
                answered = value if cluster != FOREIGN or name not in FOREIGN_DOWN else FOREIGN_DOWN[name]
                for taken in range(start, start + SPAN, STEP):
                    lines.append(f'{name}{{cluster="{cluster}",{labels}}} {answered} {taken}')
        return "\n".join(lines) + "\n# EOF\n"
    return written


EXPORTER = 'job="dcgm-exporter",instance="10.0.1.1:9400",node="gpu-node-1",exporter_pod="nvidia-dcgm-exporter-abcde"'
KSM = 'job="kube-state-metrics",instance="10.0.2.1:8080"'
DAEMONSET = f'{KSM},namespace="gpu-operator",daemonset="nvidia-dcgm-exporter"'
FOREIGN_DOWN = {"up": 0, "scrape_samples_post_metric_relabeling": 0, "kube_daemonset_status_number_available": 0}


def _scraped():
    """(metric, labels, value) of the scrape job's and kube-state-metrics' series each cluster's Prometheus holds."""
    yield "up", EXPORTER, 1
    yield "scrape_samples_post_metric_relabeling", EXPORTER, 40
    yield "up", KSM, 1
    yield "kube_daemonset_labels", f'{DAEMONSET},label_app="nvidia-dcgm-exporter"', 1
    for name in ("kube_daemonset_status_desired_number_scheduled", "kube_daemonset_status_number_available",
                 "kube_daemonset_status_updated_number_scheduled"):
        yield name, DAEMONSET, 1
    yield "kube_node_info", f'{KSM},node="gpu-node-1"', 1
    yield "kube_node_status_capacity", f'{KSM},node="gpu-node-1",resource="nvidia_com_gpu",unit="integer"', 2
    # the settings' clusters as the rules' group gpudash-clusters records them (render.alarms.watched_clusters; a
    # backfilled Prometheus evaluates no rule)
    yield "gpudash:cluster:watched", 'gpudash_rule="gpudash-clusters"', 1


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return defined_project(tmp_path_factory.mktemp("foreign-clusters"), SETTINGS)


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    with backfilled(tmp_path_factory.mktemp("shared"), _openmetrics((*OURS, FOREIGN)), SPAN, STEP) as shared, \
            backfilled(tmp_path_factory.mktemp("ours"), _openmetrics(OURS), SPAN, STEP) as ours:
        yield shared, ours


def _answers(server, expr: str) -> dict[tuple, float]:
    prometheus, start = server
    at = start + SPAN - STEP + 5  # just after the last scrape
    return {tuple(sorted(s["metric"].items())): float(s["value"][1]) for s in prometheus.query(expr, at=at)}


def _same(shared: dict, ours: dict) -> bool:
    return shared.keys() == ours.keys() and all(
        math.isclose(shared[k], ours[k], rel_tol=1e-9, abs_tol=1e-9) or math.isnan(shared[k]) and math.isnan(ours[k])
        for k in shared)


def test_no_rule_reads_a_cluster_the_settings_do_not_name(project, servers):
    """Every alert and every recording (the counters' steps Grafana's rate panels read) answers the same."""
    shared, ours = servers
    rules = [rule for group in build(project, grafana=False).prometheus_rules["groups"] for rule in group["rules"]]
    assert any(rule.get("record", "").endswith(":step_increase") for rule in rules)
    fired = set()
    for rule in rules:
        name = rule.get("alert") or rule["record"]
        with_foreign, without = _answers(shared, rule["expr"]), _answers(ours, rule["expr"])
        assert FOREIGN not in {dict(key).get("cluster") for key in with_foreign}, name
        assert _same(with_foreign, without), (name, with_foreign, without)
        fired |= {name for key in without if dict(key).get("cluster") in OURS}
    # the rules judged the settings' clusters' GPUs (so their silence on gamma's is no silence on every GPU)
    assert {"GpudashXidError", "GpudashGpuTempCritical", "GpudashGpuIdle", "GpudashPcieReplays"} <= fired


def test_no_panel_counts_a_cluster_the_settings_do_not_name(project, servers):
    shared, ours = servers
    checked = 0
    for dashboard in grafana_dashboards(project):
        cluster = next(v for v in dashboard.model["templating"]["list"] if v["name"] == "cluster")
        # the cluster variable lists the clusters gpudash watches, and its All is those (Grafana's alternation of the
        # values listed, where no allValue is set), not `.*`
        listed = {dict(key)["cluster"] for key in _answers(shared, interpolate(
            cluster["query"].removeprefix("query_result(").removesuffix(")"), range_macros("30m")))}
        assert listed == set(OURS) and "allValue" not in cluster
        every = "(" + "|".join(sorted(listed)) + ")"
        values = {**defaults(dashboard.model), "cluster": every, "__rate_interval": "2m", **range_macros("30m")}
        for panel in (p for p in dashboard.model["panels"] if p.get("targets")):
            for target in panel["targets"]:
                expr = interpolate(counted_inline(target["expr"], project), values)
                with_foreign, without = _answers(shared, expr), _answers(ours, expr)
                assert _same(with_foreign, without), (dashboard.uid, panel["title"], with_foreign, without)
                checked += bool(without)
    assert checked >= 20

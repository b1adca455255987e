"""gpudash cost: counts follow the generated agent config, dashboards and alarms; prices come from the dated file."""

from __future__ import annotations

import json
import re

import pytest

from generator import cost
from generator.cost import Fleet, load_prices, tiered
from generator.errors import InputError
from generator.project import load_project
from tests.conftest import REPO
from tests.support import documentation


_BUILT: dict = {}  # id(project) -> (the project, its artifact set)


def estimates(project, fleet, prices=None, artifacts=None):
    """cost.estimates, given the project's artifact set built once per project object: without one, estimates
    builds it, the same set at every call for the same (frozen) project, and only reads it. Calling
    cost.estimates itself without a set is test_the_dashboards_priced_are_those_of_the_artifact_set's, and the
    command's (test_cost_command_json_and_table)."""
    if artifacts is None:
        from generator.artifacts import build

        if id(project) not in _BUILT:
            _BUILT[id(project)] = (project, build(project))  # the project kept: its id is not given to another
        artifacts = _BUILT[id(project)][1]
    return cost.estimates(project, fleet, prices, artifacts)


def _lines(result, mode="group_by"):
    return {line["item"]: line for line in result[mode]["lines"]}


@pytest.fixture(scope="module")
def project():
    return load_project()


@pytest.fixture(scope="module")
def everything(tmp_path_factory):
    """agent.metric_selection: all (every series field per pod and per GPU; the default is `used`)."""
    path = tmp_path_factory.mktemp("everything") / "gpudash.yaml"
    path.write_text("agent:\n  metric_selection: all\n")
    return load_project(path)


def test_group_by_needs_one_alarm_per_rule_and_cluster_static_one_per_pod(project):
    """The idle rule (GPU utilization, which MIG instances do not report) has a second GROUP BY alarm for MIG
    pods; with static per-pod alarms, a second per listed pod. The count is what the build makes."""
    import json

    from generator.artifacts import build
    from generator.output import encode

    per_pod_rules = sum(1 for a in project.alarms if a.per_pod)
    # the GPU stopped reporting rule makes its alarm per node on the OTel pipeline (on classic none: lint AL027)
    cluster_rules = len(project.alarms) - per_pod_rules
    result = estimates(project, Fleet(clusters=2, pods=500, churn=1000))
    made = json.loads(encode(build(project, grafana=False))["cloudwatch/alarms.json"])["alarms"]
    mig = sum(1 for r in made if r["Request"]["AlarmName"].endswith("-mig-warning"))
    # the data-missing rule's second alarm judges each node (a GROUP BY alarm), its third the agent's reads of
    # kube-state-metrics, in either mode
    per_gpu = sum(1 for r in made if r["Request"]["AlarmName"].endswith("-per-node-critical"))
    agent = sum(1 for r in made if r["Request"]["AlarmName"].endswith("-agent-critical"))
    assert mig == 1 and per_gpu == agent == 1 and result["group_by"]["alarms"] == 2 * len(made)  # one cluster, twice
    assert result["group_by"]["alarms"] == (per_pod_rules + cluster_rules + mig + per_gpu + agent) * 2
    # static: each cluster makes every listed pod's alarm of each per-pod rule (500 pods listed), and the idle rule's
    # second on the MIG instances each holds
    assert result["static"]["alarms"] == (per_pod_rules * 500 + mig * 500 + cluster_rules + per_gpu + agent) * 2


def test_the_static_idle_alarm_is_priced_per_gpu_of_its_pod_it_analyzes(project):
    """With alarms.per_pod: static the idle rule (each GPU a pod holds judged on its own) is a Metrics Insights alarm
    per pod, billed per metric it analyzes: the pod's GPUs, every pod GPU of the fleet once (as the GROUP BY alarm
    analyzes them); the framebuffer rule stays a classic alarm per pod, one metric each."""
    prices = load_prices()
    result = cost.estimates(project, Fleet(clusters=2, pods=400, churn=0, gpus=600))
    group_by, static = _lines(result), _lines(result, "static")
    pods = static["per-pod alarms (static, Metrics Insights, one per pod)"]
    assert pods["quantity"] == group_by["per-pod alarms (GROUP BY pod)"]["quantity"] - 400 == 600  # less framebuffer's
    assert pods["unit_price"] == prices["rates"]["metrics_insights_alarm_metric_month"]["price"]
    assert "1 rule judging each GPU a pod holds x 400 pods x 2 clusters (each makes every listed pod's) = 800 alarms" \
        in pods["basis"]
    assert static["per-pod alarms (static, one per pod)"]["quantity"] == 800  # framebuffer's, in each cluster


def test_custom_metrics_are_per_gpu_and_per_pod_as_the_agent_publishes(project, everything, project_dir):
    fleet = Fleet(clusters=1, pods=80, churn=0, gpus=100)
    all_settings = everything
    everything = _lines(estimates(all_settings, fleet))["custom metrics"]
    # agent.metric_selection: all: both sets for every shipped field, framebuffer once more per GPU instance (a whole GPU is one; the OTel
    # pipeline publishes the device counters charted or alarmed per GPU, PCIe replays, NVLink bandwidth and rows
    # remapped two ways, once per physical GPU, in the per-GPU set alone), and
    # the cluster's ten metrics (the data-missing alarm's seven: its GPU observations, the exporter DaemonSet's
    # desired, available and updated pods, the desired count per kube-state-metrics pod (the agent alarm's: one pod),
    # kube-state-metrics' node info and GPU capacity; and GPU temperature,
    # utilization and power, each GPU's reading once per scrape, the fleet values' readings past 500 GPUs),
    # per pod the OTel pipeline's five totals per scrape (power, framebuffer
    # and PCIe both ways summed, GPUs counted), and the exporters' scrapes without DCGM samples per GPU node
    # (counted per GPU), and the idle alarms' utilization per pod and GPU (one per GPU a pod holds), and the
    # temperature-high alarm's flags past its level per GPU, and each GPU's utilization once (the fleet's mean
    # utilization reads every GPU once, a MIG GPU by its stand-in)
    # and per GPU node (counted per GPU) its total and count of GPUs read of the fleet's mean temperature and
    # utilization, and its total alone of power (the one kind "Total power draw" reads), and its GPUs unread below its
    # highest index (the GPU stopped reporting rule's alarm)
    assert everything["quantity"] == 25 * 100 + 25 * 80 + 1 * 100 + 10 + 5 * 80 + 1 * 100 + 1 * 100 + 1 * 100 + 1 * 100 \
        + 5 * 100 + 1 * 100
    # agent.pipeline: classic lists those three device counters per GPU instance too, makes no totals, its
    # scraper drops the scrape's own series, and its fleet values past 500 GPUs read the temperature's [ClusterName]
    # metric the data-missing alarm reads (its copies are not merged: one metric fewer)
    classic = _lines(estimates(load_project(project_dir("agent:\n  pipeline: classic\n  metric_selection: all\n")),
                               fleet))["custom metrics"]
    # (no flags, no utilization once, no node's totals and counts, no node's GPUs unread: lint AL027)
    assert classic["quantity"] == everything["quantity"] + 3 * 100 - 5 * 80 - 1 * 100 - 1 - 1 * 100 - 1 * 100 - 5 * 100 \
        - 1 * 100
    # no pod holds a GPU: the idle alarms' per-pod-per-GPU metrics are not published (a GPU's temperature flags and
    # utilization once are)
    idle = _lines(estimates(all_settings, Fleet(clusters=1, pods=0, churn=0, gpus=100)))["custom metrics"]
    assert idle["quantity"] == 25 * 100 + 1 * 100 + 10 + 1 * 100 + 1 * 100 + 1 * 100 + 5 * 100 + 1 * 100
    assert "GPUs held by pods" not in idle["basis"]
    used = _lines(estimates(load_project(project_dir("agent:\n  metric_selection: used\n")), fleet))["custom metrics"]
    assert 0 < used["quantity"] < everything["quantity"]
    # the default publishes only what is queried: 14 per GPU (framebuffer per GPU instance among them) and 12 per
    # pod (the five totals among them), and as above the cluster's ten, the scrapes' flags, the idle alarms' own and the
    # nodes' GPUs unread
    default = _lines(estimates(project, fleet))["custom metrics"]
    assert default == used
    assert default["quantity"] == 14 * 100 + 12 * 80 + 10 + 1 * 100 + 1 * 100 + 1 * 100 + 5 * 100 + 1 * 100


def test_tiers_lower_the_price_of_a_large_fleet(everything):
    prices = load_prices()
    tiers = prices["rates"]["custom_metric_month"]["tiers"]
    assert tiered(10_000, tiers) == pytest.approx(3_000)
    assert tiered(250_000, tiers) == pytest.approx(3_000 + 24_000)
    assert tiered(1_250_000, tiers) == pytest.approx(3_000 + 24_000 + 37_500 + 5_000)
    large = _lines(estimates(everything, Fleet(clusters=10, pods=5000, churn=0)))["custom metrics"]
    # framebuffer per GPU instance (5,000 whole GPUs), the pods' totals per scrape, the exporters' scrapes without
    # DCGM samples (per GPU), the idle alarms' utilization per pod and GPU, the temperature flags per GPU, each GPU's
    # utilization once
    # (and each node's total and count of GPUs read, and its GPUs unread, counted per GPU)
    assert large["quantity"] == 250_000 + 1 * 5_000 + 10 * 10 + 5 * 5_000 + 1 * 5_000 + 1 * 5_000 + 1 * 5_000 + 1 * 5_000 \
        + 5 * 5_000 + 1 * 5_000
    # the free tier's first 10 at the first tier's $0.30; flat at the first tier it would be 99,024
    assert large["monthly"] == pytest.approx(27_000 + 80_100 * 0.05 - 10 * 0.30)
    assert large["unit_price"] < 0.30


def test_tiers_count_each_regions_metrics_apart(project_dir):
    """The custom metrics' tiers are each Region's: the bill prices a Region's metrics by its own tiers ("$0.30 per
    metric-month for the first 10,000 metrics - Asia Pacific (Tokyo)", a line per Region, the usage type
    Region-prefixed; the price file's unit: "tiers over the account's metrics in the Region"); the free tier's 10 once,
    for the account. Two clusters in two Regions at 5,000 pods: each Region's 87,510 start at $0.30, where pooled
    they would fill the first tier once ($19,499.00, what one Region's two clusters cost)."""
    clusters = ("clusters:\n  - name: a\n    region: us-east-1\n  - name: b\n    region: {}\n")
    fleet = Fleet(clusters=2, pods=5000, churn=0)
    apart = _lines(estimates(load_project(project_dir(clusters.format("eu-west-1"))), fleet))["custom metrics"]
    together = _lines(estimates(load_project(project_dir(clusters.format("us-east-1"))), fleet))["custom metrics"]
    assert apart["quantity"] == together["quantity"] == 175_020
    assert together["monthly"] == pytest.approx(3_000 + 165_020 * 0.10 - 10 * 0.30)
    assert apart["monthly"] == pytest.approx(2 * (3_000 + 77_510 * 0.10) - 10 * 0.30)
    assert "tiered per Region (2 Regions)" in apart["basis"]
    # --clusters 3 over the two Regions: two in one (116,678.67 metrics), one in the other (58,339.33)
    three = _lines(estimates(load_project(project_dir(clusters.format("eu-west-1"))),
                             Fleet(clusters=3, pods=5000, churn=0)))["custom metrics"]
    per_cluster = three["quantity"] / 3
    assert three["monthly"] == pytest.approx(tiered(2 * per_cluster, _TIERS) + tiered(per_cluster, _TIERS) - 10 * 0.30)
    # one cluster of the fleet: one Region's tiers, whatever Regions the settings name
    one = _lines(estimates(load_project(project_dir(clusters.format("eu-west-1"))),
                           Fleet(clusters=1, pods=5000, churn=0)))["custom metrics"]
    assert one["monthly"] == pytest.approx(tiered(one["quantity"], _TIERS) - 10 * 0.30)


_TIERS = load_prices()["rates"]["custom_metric_month"]["tiers"]


def test_the_data_missing_alarm_reads_seven_metrics_of_each_cluster(project, project_dir):
    """A metric-math alarm over static metrics: billed per metric it reads, one per cluster (the agent alarm, a
    Metrics Insights alarm, is billed per kube-state-metrics pod it analyzes); none when alarms.expected_gpus is none
    (the alarms are left out)."""
    fleet = Fleet(clusters=3, pods=10, churn=0)
    line = _lines(estimates(project, fleet))["data-missing alarms (metric math)"]
    # the exporter DaemonSet's desired, available, updated pods (their most and least), the GPU observations, the
    # nodes and GPU nodes kube-state-metrics reads
    assert (line["quantity"], line["unit_price"]) == (21, 0.10)
    insights = _lines(estimates(project, fleet))["GPU and cluster alarms (Metrics Insights)"]
    assert "+ 3 analyzing the kube-state-metrics pods the agent reads" in insights["basis"]
    none = estimates(load_project(project_dir("alarms:\n  expected_gpus: none\n")), fleet)
    assert "data-missing alarms (metric math)" not in _lines(none)
    # its three kube-state-metrics counts and two node series of each cluster, the desired count per
    # kube-state-metrics pod (one a cluster), and the exporters' scrapes its per-node alarm reads (counted per GPU); the
    # cluster's GPU temperature stays: the widgets' PERIOD() lines read it
    assert _lines(none)["custom metrics"]["quantity"] == \
        _lines(estimates(project, fleet))["custom metrics"]["quantity"] - 9 - 6 - 3 - 10
    # on the Container Insights add-on: seven of the add-on's metrics (running agent, GPU capacity, GPU
    # observations, the exporter DaemonSet's available and unavailable pods under two names); the GPU nodes
    # reporting come from a Metrics Insights query, not a metric of the alarm
    addon = _lines(estimates(load_project(project_dir("cloudwatch:\n  source: container-insights\n")), fleet))
    assert (addon["data-missing alarms (metric math)"]["quantity"], addon["data-missing alarms (metric math)"]
            ["unit_price"]) == (21, 0.10)


def test_emf_ingestion_and_storage_of_the_agents_log_group(everything, project_dir):
    fleet = Fleet(clusters=1, pods=500, churn=0)
    result = estimates(everything, fleet)  # agent.metric_selection: all
    lines = _lines(result)
    # 500 GPUs held by a pod each, a node each (no --nodes): every 30 s per GPU an event of its 21 gauges (2.5 KB)
    # and two of its 4 counters (per pod, merged), per pod two of its totals, and kube-state-metrics' series (the
    # filter drops up and scrape_*, but each scrape's flag of no GPU data, an event per node and one of
    # kube-state-metrics'), per GPU one of its readings once (the fleet values' past 500 GPUs) and per pod GPU one of
    # the unused share of its utilization (the idle alarm's), and kube-state-metrics' info and GPU capacity of each
    # GPU node, and per GPU one of its temperature's flag past the level (the temperature-high alarm's): about 392 GB
    # a month
    # and per GPU node (one per GPU here) two of its total and count of GPUs read (the fleet's values per node) and one
    # of its GPUs unread (the GPU stopped reporting alarm's)
    assert result["group_by"]["log_events"]["per_scrape"] == \
        3 * 500 + 2 * 500 + 1 + 500 + 1 + 500 + 500 + 2 * 500 + 500 + 2 * 500 + 500
    # (347 GB before the nodes' totals and counts, 392 before their GPUs unread)
    assert 405 < lines["EMF log ingestion (GB)"]["quantity"] < 415
    longer = _lines(estimates(load_project(project_dir("agent:\n  metric_selection: all\n  log_retention_days: 30\n")),
                              fleet))
    assert longer["EMF log storage (GB-month)"]["quantity"] == pytest.approx(
        lines["EMF log storage (GB-month)"]["quantity"] * 30 / 7)
    # The agent logs every scraped field; metric_selection only decides which become metrics (and are named in
    # the events' directives)
    used = estimates(load_project(project_dir("agent:\n  metric_selection: used\n")), fleet)
    assert used["group_by"]["log_events"]["per_scrape"] == result["group_by"]["log_events"]["per_scrape"]
    assert 0.8 < _lines(used)["EMF log ingestion (GB)"]["quantity"] / lines["EMF log ingestion (GB)"]["quantity"] < 1
    slower = _lines(estimates(load_project(project_dir("agent:\n  metric_selection: all\nscrape:\n  interval: 60s\n")),
                              fleet))
    assert slower["EMF log ingestion (GB)"]["quantity"] == pytest.approx(lines["EMF log ingestion (GB)"]["quantity"] / 2)


def test_free_dashboards_only_while_they_show_at_most_50_metrics(project):
    tiny = _lines(estimates(project, Fleet(clusters=1, pods=1, churn=0)))["dashboards"]
    assert tiny["quantity"] == 0
    busy = _lines(estimates(project, Fleet(clusters=1, pods=500, churn=0)))["dashboards"]
    assert busy["quantity"] == 3 and "0 free" in busy["basis"]


def test_dashboards_are_those_of_one_cluster_whatever_the_other_clusters_are_named(project, project_dir):
    """A cluster whose name starts with the first cluster's name and a dash (gpu, gpu-train) has dashboards of
    its own: they are not the first cluster's."""
    fleet = Fleet(clusters=1, pods=500, churn=0)
    two = load_project(project_dir("clusters:\n  - name: gpu\n    region: us-east-1\n"
                                   "  - name: gpu-train\n    region: us-east-1\n"))
    assert _lines(estimates(two, fleet))["dashboards"] == _lines(estimates(project, fleet))["dashboards"]


def test_the_dashboards_priced_are_those_of_the_artifact_set(project):
    """cost reads the CloudWatch dashboards of the artifact set it is given, as they ship: a set without the
    per-pod dashboard has two dashboards to pay for and its reads are gone from the bill."""
    from dataclasses import replace

    from generator.artifacts import build

    fleet = Fleet(clusters=1, pods=500, churn=0)
    built = build(project)
    assert estimates(project, fleet, artifacts=built) == cost.estimates(project, fleet)  # it builds the same set
    by_pod = [d for d in built.cloudwatch_dashboards if d.name.endswith("-by-pod")]
    assert len(by_pod) == 1
    fewer = replace(built, cloudwatch_dashboards=tuple(d for d in built.cloudwatch_dashboards if d not in by_pod))
    read = "dashboard reads (metrics analyzed, thousands)"
    whole, without = _lines(estimates(project, fleet)), _lines(estimates(project, fleet, artifacts=fewer))
    assert whole["dashboards"]["quantity"] == 3 and without["dashboards"]["quantity"] == 2
    assert 0 < without[read]["quantity"] < whole[read]["quantity"]


def test_reads_are_metrics_analyzed_and_follow_viewing(project):
    base = _lines(estimates(project, Fleet(clusters=1, pods=100, churn=0)))
    more_pods = _lines(estimates(project, Fleet(clusters=1, pods=1000, churn=0)))
    longer = _lines(estimates(project, Fleet(clusters=1, pods=100, churn=0, dashboard_view_hours=80)))
    read = "dashboard reads (metrics analyzed, thousands)"
    assert more_pods[read]["quantity"] == pytest.approx(base[read]["quantity"] * 10)  # analyzed, not LIMITed
    assert longer[read]["quantity"] == pytest.approx(base[read]["quantity"] * 2)


def test_dashboard_reads_in_the_console_cost_nothing_unless_a_price_file_says_so(project, tmp_path):
    """Metrics Insights queries the CloudWatch console runs (a dashboard viewed there) are free of charge
    (user guide, Building your queries in CloudWatch Metrics Insights); the reads are still counted."""
    read = "dashboard reads (metrics analyzed, thousands)"
    fleet = Fleet(clusters=1, pods=500, churn=0)
    free = _lines(estimates(project, fleet))[read]
    assert free["quantity"] > 0 and free["monthly"] == 0
    override = tmp_path / "prices.json"
    override.write_text(json.dumps({"rates": {"console_metrics_analyzed_per_1000": {"price": 0.01}}}))
    priced = _lines(estimates(project, fleet, load_prices(overrides=override)))[read]
    assert priced["monthly"] == pytest.approx(free["quantity"] * 0.01)


def test_prices_come_from_the_data_file_and_can_be_overridden(everything, tmp_path):
    prices = load_prices()
    assert prices["as_of"] and all(rate.get("source") for rate in prices["rates"].values())
    override = tmp_path / "prices.json"
    override.write_text(json.dumps({"rates": {"custom_metric_month": {"tiers": [[None, 0.60]]}}}))
    fleet = Fleet(clusters=1, pods=10, churn=0)
    changed = load_prices(overrides=override)
    result = estimates(everything, fleet, changed)
    assert _lines(result)["custom metrics"]["monthly"] == pytest.approx(
        (500 + 1 * 10 + 10 + 5 * 10 + 1 * 10 + 1 * 10 + 1 * 10 + 1 * 10 + 5 * 10 + 1 * 10 - 10) * 0.60)
    assert result["overridden_rates"] == ["custom_metric_month"]
    assert "metrics_insights_alarm_metric_month" in result["uncertain_rates"]


def test_counts_written_whole_and_amounts_in_fractions_are_kept(everything, tmp_path):
    """Counts are whole (3.0 is 3), 0 among them (the account's other use takes the free tier); GB and prices take
    fractions. A count of half a thing or a tier of a fraction of a unit is refused (test_bad_input)."""
    override = tmp_path / "prices.json"
    override.write_text(json.dumps({"rates": {"free_dashboards": {"count": 3.0}, "free_tier": {
        "custom_metrics": 0, "log_gb": 2.5}, "custom_metric_month": {"tiers": [[10000.0, 0.3], [None, 0.1]]}}}))
    fleet = Fleet(clusters=1, pods=10, churn=0)
    bundled, changed = (_lines(estimates(everything, fleet, prices)) for prices in (load_prices(),
                                                                                   load_prices(overrides=override)))
    # the bundled free tier's 10 metrics now billed at the first tier's $0.30
    assert changed["custom metrics"]["monthly"] == pytest.approx(bundled["custom metrics"]["monthly"] + 10 * 0.30)
    assert changed["dashboards"]["monthly"] == bundled["dashboards"]["monthly"]


def test_cost_command_json_and_table(cli, tmp_path):
    code, stdout, _ = cli("cost", "--pods", "500", "--clusters", "3", "--churn", "3000", "--output", "json")
    result = json.loads(stdout)
    assert code == 0
    assert result["fleet"] == {"clusters": 3, "pods": 500, "churn": 3000, "dashboard_view_hours": 40.0,
                               "refresh_minutes": 5, "gpus": 500, "nodes": 500, "mig_instances": 1,
                               "virtual_gpus": False}  # exporter.virtual_gpus: no copy per pod sharing a GPU
    assert result["group_by"]["alarms"] < result["static"]["alarms"]
    code, stdout, _ = cli("cost", "--pods", "500", "--gpus", "800")
    assert code == 0 and "GROUP BY" in stdout and "prices as of 2025-05" in stdout and "800 GPUs" in stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, stderr = cli("cost", "--pods", "5", "--prices", str(bad))
    assert code == 2 and "bad.json:1: prices file is not JSON" in stderr and "Traceback" not in stderr


def test_clusters_in_a_region_the_prices_are_not_for_are_said(cli, project_dir, tmp_path):
    """The bundled rates are one Region's (the price file's `region`, us-east-1); a cluster in another Region is
    billed at that Region's rates (CloudWatch Logs' ingestion among those that differ), which the estimate does not
    hold: said under the table and in JSON, never silently priced as if it were us-east-1. A --prices file naming the
    Region its rates are for says where they hold."""
    settings = project_dir("clusters:\n  - name: a\n    region: us-east-1\n  - name: b\n    region: eu-west-1\n")
    code, stdout, _ = cli("cost", "--config", str(settings), "--pods", "50")
    assert code == 0
    assert ("rates of us-east-1 (the prices' Region): the settings' clusters in eu-west-1 are billed at their "
            "Region's rates, which this estimate does not hold") in stdout
    code, stdout, _ = cli("cost", "--config", str(settings), "--pods", "50", "--output", "json")
    assert json.loads(stdout)["rates_region"] == "us-east-1"
    assert json.loads(stdout)["clusters_priced_elsewhere"] == ["eu-west-1"]
    ireland = tmp_path / "eu-west-1.json"
    ireland.write_text(json.dumps({"region": "eu-west-1", "rates": {"log_ingestion_gb": {"price": 0.57}}}))
    code, stdout, _ = cli("cost", "--config", str(settings), "--pods", "50", "--prices", str(ireland))
    assert code == 0 and "the settings' clusters in us-east-1 are billed at their Region's rates" in stdout
    code, stdout, _ = cli("cost", "--pods", "50")  # the bundled cluster is in us-east-1: nothing to say
    assert code == 0 and "(the prices' Region)" not in stdout


def test_every_price_date_the_documentation_quotes_is_the_data_files():
    as_of = json.loads((REPO / "generator/defaults/cloudwatch-prices.json").read_text())["as_of"]
    quoted = re.findall(r"prices as of ([0-9][0-9-]*)", documentation.text())
    assert quoted and set(quoted) == {as_of}, quoted


def test_a_fleet_past_the_metrics_insights_limits_is_told_so(project):
    """500 series per query, 10,000 metrics processed: at 5,000 GPUs in one cluster the fleet's values now read every
    reading of the cluster (not one series per GPU) and alarms evaluate 500; at 20,000 GPUs some are in no query.
    Spread over 10 clusters, none of it (tests/unit/test_cost_limits_named.py: each limit, counted per query)."""
    assert estimates(project, Fleet(clusters=1, pods=50, churn=0))["limits"] == []
    series, alarms = estimates(project, Fleet(clusters=1, pods=5000, churn=0))["limits"]
    assert "5,000 GPUs per cluster" in series and "the fleet's values now read one series per node up to 248 nodes" \
        in series and "past them every reading of the cluster" in series
    # the idle alarm's evaluated set past 500 (tests/unit/test_cloudwatch_idle_over_500.py)
    assert "a pod that came within them reading low (still loading) ranks before one idle all along" in series
    assert "on agent.pipeline: otel the 500 pod GPUs of the largest unused share summed over its 30 minutes" in series
    assert alarms.startswith("GROUP BY alarms past 500 series per cluster: ") and "gpu-idle-warning 5,000 pod GPUs" in alarms
    past = estimates(project, Fleet(clusters=1, pods=20000, churn=0))["limits"]
    assert len(past) == 3 and past[2].startswith("queries past 10,000 metrics per cluster: ")
    assert estimates(project, Fleet(clusters=10, pods=5000, churn=0))["limits"] == []


def test_a_dashboards_metrics_count_its_hidden_period_metrics_as_lint_does(project_dir):
    """On a fleet that fills every chart, the most metrics a dashboard shows (the free tier's condition) is what
    lint counts: each chart's lines and each widget's hidden metric line that its PERIOD() reads (top_pods 220:
    the by-pod dashboard, 11 charts of 220 lines and 2 hidden metrics (the energy rate's and the table of pods
    now's, drawn only at its own period), shows the most; its sums and counts per pod are the agent's totals per
    scrape, which need no PERIOD())."""
    from generator.artifacts import build
    from generator.dashboard_limit import metrics_shown

    project = load_project(project_dir("cloudwatch:\n  top_pods: 220\n"))
    bodies = [d.body for d in build(project).cloudwatch_dashboards]
    hidden = sum(1 for body in bodies for w in body["widgets"] for line in w.get("properties", {}).get("metrics", [])
                 if "expression" not in line[-1])
    assert hidden >= 3
    most = max(metrics_shown(body) for body in bodies)
    assert most == 11 * 220 + 2
    basis = _lines(estimates(project, Fleet(clusters=1, pods=2000, churn=0, gpus=2000)))["dashboards"]["basis"]
    assert f"these show up to {most:,}" in basis, basis


def test_the_exporters_up_is_counted_per_gpu_node_when_the_fleet_says_how_many(project, project_dir):
    """On the OTel pipeline each exporter target's up is one custom metric per GPU node, which the data-missing
    rule's alarm per node analyzes; without --nodes both are counted per GPU (an upper bound)."""
    per_gpu = _lines(estimates(project, Fleet(clusters=1, pods=80, churn=0, gpus=100)))
    per_node = _lines(estimates(project, Fleet(clusters=1, pods=80, churn=0, gpus=100, nodes=13)))
    # (and each node's total and count of GPUs read of the fleet's mean temperature and utilization, its total of
    # power: 5 per node; and its GPUs unread below its highest index, which the GPU stopped reporting alarm analyzes)
    assert per_gpu["custom metrics"]["quantity"] - per_node["custom metrics"]["quantity"] == (1 + 5 + 1) * (100 - 13)
    alarms = "GPU and cluster alarms (Metrics Insights)"
    assert per_gpu[alarms]["quantity"] - per_node[alarms]["quantity"] == 2 * (100 - 13)
    # the two alarms that analyze every GPU node are named
    assert "('gpu-data-missing' and 'gpu-stopped-reporting' per node: every GPU node)" in per_node[alarms]["basis"]
    assert "per node: every GPU node, counted per GPU without --nodes)" in per_gpu[alarms]["basis"]
    classic = load_project(project_dir("agent:\n  pipeline: classic\n"))  # its scraper drops up
    # (its log events count kube-state-metrics' two node series per GPU node)
    logs = ("EMF log ingestion (GB)", "EMF log storage (GB-month)")
    with_nodes = _lines(estimates(classic, Fleet(clusters=1, pods=80, churn=0, gpus=100, nodes=13)))
    without = _lines(estimates(classic, Fleet(clusters=1, pods=80, churn=0, gpus=100)))
    assert {k: v for k, v in with_nodes.items() if k not in logs} == {k: v for k, v in without.items() if k not in logs}


def test_the_worked_example_is_what_the_command_says(project, project_dir):
    """Each row of docs/cost.md's worked example (one pod per GPU, eight GPUs per node) is the estimate of its fleet:
    every line's quantity and price as the table shows them, the total, and the total with metric_selection: all;
    the README's summary of it shows the same totals."""
    text = documentation.text("cost.md")
    readme = documentation.text("README.md")
    section = text[text.index("Worked example: one pod per GPU, eight GPUs per node"):]
    everything = load_project(project_dir("agent:\n  metric_selection: all\n"))
    rows, events = 0, []
    for gpus, nodes, clusters in ((50, 7, 1), (500, 63, 1), (5000, 625, 10)):
        (row,) = [line for line in section.splitlines() if line.startswith(f"| {gpus:,} GPUs, {nodes} nodes")]
        fleet = Fleet(clusters=clusters, pods=gpus, churn=0, nodes=nodes)
        result = estimates(project, fleet)
        lines = _lines(result)
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        metrics, ingestion, storage = (lines[k] for k in ("custom metrics", "EMF log ingestion (GB)",
                                                          "EMF log storage (GB-month)"))
        assert cells[1] == f"{metrics['quantity']:,.0f} → ${metrics['monthly']:,.2f}"
        assert cells[2] == f"{ingestion['quantity']:,.1f} GB → ${ingestion['monthly']:,.2f}"
        assert cells[3] == f"{storage['quantity']:,.1f} GB → ${storage['monthly']:,.2f}"
        assert cells[4] == f"${lines['dashboards']['monthly']:,.2f}"
        assert cells[5] == f"${lines['dashboard reads (metrics analyzed, thousands)']['monthly']:,.2f}"
        alarms = ("GPU and cluster alarms (Metrics Insights)", "data-missing alarms (metric math)",
                  "per-pod alarms (GROUP BY pod)")
        assert cells[6] == " + ".join(f"${lines[k]['monthly']:,.2f}" for k in alarms)
        assert cells[7] == f"**${result['group_by']['total']:,.2f}**"
        assert cells[8] == f"${estimates(everything, fleet)['group_by']['total']:,.2f}"
        (summary,) = [line for line in readme.splitlines() if line.startswith(f"| {gpus:,} GPUs, {nodes} nodes")]
        assert [cell.strip() for cell in summary.strip("|").split("|")] == [cells[0], cells[7], cells[8]]
        events.append(f"{result['group_by']['log_events']['per_scrape']:,.0f}")
        rows += 1
    assert rows == 3
    assert f"The agent writes {events[0]}, {events[1]} and {events[2]} log events every 30 s" in " ".join(
        section.split())


def test_the_free_tier_takes_its_metrics_alarm_metrics_and_logs_off_the_bill(project, tmp_path):
    """The pricing page's free tier, per account and month: 10 custom metrics, 10 alarm metrics of standard alarms
    that list their metrics (not Metrics Insights alarms), 5 GB of logs ingested and stored together. A small fleet
    pays for its metrics but the first 10, no logs and no data-missing alarm; a price file without the free tier
    pays for all of it."""
    fleet = Fleet(clusters=1, pods=2, churn=0)
    lines = _lines(estimates(project, fleet))
    metrics, ingestion, storage = (lines[k] for k in ("custom metrics", "EMF log ingestion (GB)",
                                                      "EMF log storage (GB-month)"))
    assert metrics["monthly"] == pytest.approx((metrics["quantity"] - 10) * 0.30)
    assert 0 < ingestion["quantity"] + storage["quantity"] < 5
    assert ingestion["monthly"] == storage["monthly"] == 0
    assert lines["data-missing alarms (metric math)"]["quantity"] == 7
    assert lines["data-missing alarms (metric math)"]["monthly"] == 0
    insights = lines["GPU and cluster alarms (Metrics Insights)"]
    assert insights["monthly"] == pytest.approx(insights["quantity"] * 0.10)  # no free tier for these
    static = estimates(project, Fleet(clusters=1, pods=20, churn=0))["static"]
    per_pod = next(line for line in static["lines"] if line["item"] == "per-pod alarms (static, one per pod)")
    assert per_pod["monthly"] == pytest.approx((per_pod["quantity"] - 3) * 0.10)  # what the math alarms leave
    big = _lines(estimates(project, Fleet(clusters=1, pods=500, churn=0)))["EMF log ingestion (GB)"]
    assert big["monthly"] == pytest.approx((big["quantity"] - 5) * 0.50)
    override = tmp_path / "prices.json"
    override.write_text(json.dumps({"rates": {"free_tier": {"custom_metrics": 0, "alarm_metrics": 0, "log_gb": 0}}}))
    paid = _lines(estimates(project, fleet, load_prices(overrides=override)))
    assert paid["custom metrics"]["monthly"] == pytest.approx(metrics["quantity"] * 0.30)
    assert paid["EMF log ingestion (GB)"]["monthly"] == pytest.approx(ingestion["quantity"] * 0.50)
    assert paid["EMF log storage (GB-month)"]["monthly"] == pytest.approx(storage["quantity"] * 0.03)
    assert paid["data-missing alarms (metric math)"]["monthly"] == pytest.approx(0.70)


@pytest.mark.parametrize("args", [("--pods", "4", "--gpus", "3", "--nodes", "5"), ("--pods", "2", "--nodes", "3")])
def test_more_gpu_nodes_than_gpus_is_a_usage_error(cli, args):
    code, stdout, stderr = cli("cost", *args)
    assert code == 2 and stdout == "" and "a GPU node has at least one GPU" in stderr and "--nodes" in stderr, stderr
    assert "Traceback" not in stderr
    code, _, _ = cli("cost", "--pods", "4", "--gpus", "3", "--nodes", "3")
    assert code == 0


@pytest.mark.parametrize("args", [("--pods", "4", "--nodes", "0"), ("--pods", "0", "--gpus", "8", "--nodes", "0")])
def test_no_gpu_node_for_gpus_is_a_usage_error(cli, args):
    code, stdout, stderr = cli("cost", *args)
    assert code == 2 and stdout == "" and "every GPU is on a node" in stderr and "--nodes" in stderr, stderr
    assert "Traceback" not in stderr
    code, _, _ = cli("cost", "--pods", "0", "--gpus", "0", "--nodes", "0")  # a fleet scaled to zero
    assert code == 0


def test_each_exporter_daemonset_of_a_cluster_is_priced(project, project_dir):
    """exporter.more_daemonsets: kube-state-metrics' three series, the desired count per kube-state-metrics pod and a
    data-missing alarm (seven metrics) per exporter DaemonSet of each cluster, the agent alarm (a Metrics Insights alarm)
    still one per cluster, analyzing each DaemonSet's count; the cluster's set keeps its GPU field alone."""
    fleet = Fleet(clusters=3, pods=10, churn=0)
    pools = load_project(project_dir("exporter:\n  more_daemonsets: [pool-b, gpu-pools/pool-c]\n"))
    one, three = _lines(estimates(project, fleet)), _lines(estimates(pools, fleet))
    line = three["data-missing alarms (metric math)"]
    assert (line["quantity"], line["unit_price"]) == (3 * 3 * 7, 0.10)
    assert "9 alarms x 7 metrics" in line["basis"] and "one alarm per exporter DaemonSet" in line["basis"]
    assert three["custom metrics"]["quantity"] == one["custom metrics"]["quantity"] - 3 * 4 + 3 * 3 * 4
    assert "4 x 9 exporter DaemonSets" in three["custom metrics"]["basis"]
    assert estimates(pools, fleet)["group_by"]["alarms"] == estimates(project, fleet)["group_by"]["alarms"] + 3 * 2
    # the agent alarm of each cluster analyzes its kube-state-metrics pod's count of each DaemonSet (one pod counted)
    insights = "GPU and cluster alarms (Metrics Insights)"
    assert three[insights]["quantity"] == one[insights]["quantity"] + 3 * 2
    assert "one pod a cluster, of each exporter DaemonSet" in three[insights]["basis"]


def test_each_clusters_own_exporter_daemonsets_are_priced(project_dir):
    """Clusters naming different exporter DaemonSets (clusters[].exporter.more_daemonsets) are each priced with their
    own, as generate makes their alarms: cost priced every cluster with the most any cluster names (28 alarms where
    generate made 26; a cluster overriding the fleet's list with none, 26 where it made 25; each cluster's GPU stopped reporting alarm one more)."""
    import json

    from generator.artifacts import build
    from generator.output import encode

    for settings, made, daemonsets in (("clusters:\n  - {name: a, region: us-east-1, exporter: {more_daemonsets: [x/y, x/z]}}\n"
                            "  - {name: b, region: us-east-1}\n", 28, 3 + 1),
                           ("exporter:\n  more_daemonsets: [x/y]\nclusters:\n"
                            "  - {name: a, region: us-east-1, exporter: {more_daemonsets: []}}\n"
                            "  - {name: b, region: us-east-1}\n", 27, 1 + 2)):
        project = load_project(project_dir(settings))
        artifacts = build(project)
        alarms = json.loads(encode(artifacts)["cloudwatch/alarms.json"])["alarms"]
        assert len(alarms) == made
        assert estimates(project, Fleet(clusters=2, pods=10, churn=0))["group_by"]["alarms"] == made
        # each settings' cluster stands for half the fleet's clusters: twice the fleet, twice the alarms
        assert estimates(project, Fleet(clusters=4, pods=20, churn=0))["group_by"]["alarms"] == 2 * made
        line = _lines(estimates(project, Fleet(clusters=2, pods=10, churn=0)))["data-missing alarms (metric math)"]
        # the data-missing rule's alarm per exporter DaemonSet of each cluster
        assert f"{daemonsets} alarms x 7 metrics" in line["basis"], line["basis"]
        assert line["quantity"] == daemonsets * 7  # (the agent's alarm, one per cluster, is a Metrics Insights alarm)


# Three pods holding every GPU of two nodes: one pod name in two namespaces, a pod of two GPUs and one of three.
_HELD = tuple(__import__("tests.support.dcgm_fleet", fromlist=["Gpu"]).Gpu(node, index, namespace, pod)
              for node, index, namespace, pod in (("ip-10-0-1-1", 0, "ml", "train-0"), ("ip-10-0-1-1", 1, "ml", "train-0"),
                                                  ("ip-10-0-1-1", 2, "research", "train-0"),
                                                  ("ip-10-0-1-1", 3, "ml", "big"), ("ip-10-0-1-2", 0, "ml", "big"),
                                                  ("ip-10-0-1-2", 1, "ml", "big")))


def _metrics_read(project, artifacts, picks) -> dict[str, int]:
    """{alarm: the metrics its Metrics Insights queries read} of the alarms of a query `picks` (its text) takes, the
    _HELD fleet's scrapes through the build's agent model."""
    from generator.output import encode
    from tests.support import cloudwatch_eval, dcgm_fleet
    from tests.support.cloudwatch_agent import Agent, agent_config

    files = encode(artifacts)
    config, job = agent_config(next(v for k, v in files.items() if k.startswith("k8s/cwagent-prometheus-config")))
    points = Agent(config, job).run(dcgm_fleet.scrapes(job, project.catalog, 0, 12, _HELD))
    read: dict[str, int] = {}
    for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        for metric in item["Request"].get("Metrics", []):
            text = metric.get("Expression", "")
            if text.startswith("SELECT") and picks(text):
                query = cloudwatch_eval.parse(text)
                name = item["Request"]["AlarmName"]
                read[name] = read.get(name, 0) + len(
                    {(p.namespace, p.dimensions) for p in points if p.metric == query.metric
                     and cloudwatch_eval._group_key(query, p.namespace, p.dimensions) is not None})
    return read


def test_group_by_alarms_are_priced_per_metric_they_read_a_pods_gpus_each_where_judged_apart(project):
    """A per-pod GROUP BY alarm is billed per metric it analyzes: the framebuffer alarm one per pod, the idle alarm
    one per GPU a pod holds (it judges each apart). Pushed through the agent model, the metrics each such alarm's
    query reads, over a fleet of pods holding several GPUs, are what cost prices (it priced one per pod: 6 for 9)."""
    from generator.artifacts import build

    artifacts = build(project)
    read = sum(_metrics_read(project, artifacts, lambda text: "pod" in text.split("GROUP BY")[-1]).values())
    fleet = Fleet(clusters=1, pods=3, churn=0, gpus=6, nodes=2)
    line = _lines(estimates(project, fleet, artifacts=artifacts))["per-pod alarms (GROUP BY pod)"]
    assert read == line["quantity"] == 3 + 6, (read, line)
    assert "each GPU a pod holds" in line["basis"]


def test_the_static_idle_alarms_are_priced_per_metric_they_read(project_dir):
    """With alarms.per_pod: static listing the fleet's three pods (one name in two namespaces), each pod's idle alarm
    is a Metrics Insights query on the pod, billed per metric it analyzes. Pushed through the agent model, the metrics
    the three queries read (2, 1 and 3 GPUs: ml/train-0's query reads none of research/train-0's) are what cost's
    line of them prices."""
    from generator.artifacts import build

    project = load_project(project_dir("alarms:\n  per_pod: static\n"
                                       "  static_pods: [ml/train-0, research/train-0, ml/big]\n"))
    artifacts = build(project)
    read = _metrics_read(project, artifacts, lambda text: "\"pod\" = " in text)  # a listed pod's query
    # (and its second, on the MIG instances it holds: none in this fleet, counted, not priced)
    assert read == {f"gpudash-gpu-cluster-gpu-idle{mig}-warning-{pod}": 0 if mig else gpus
                    for pod, gpus in (("ml-train-0", 2), ("research-train-0", 1), ("ml-big", 3))
                    for mig in ("", "-mig")}
    fleet = Fleet(clusters=1, pods=3, churn=0, gpus=6, nodes=2)
    line = _lines(estimates(project, fleet, artifacts=artifacts), "static")[
        "per-pod alarms (static, Metrics Insights, one per pod)"]
    assert line["quantity"] == sum(read.values())


def test_static_per_pod_alarms_are_counted_per_cluster_as_the_build_makes_them(project_dir):
    """alarms.static_pods is one list for every cluster: each cluster makes each listed pod's alarms (a classic one
    per rule, the idle rule's a Metrics Insights one), whatever cluster the pod runs in. Two clusters listing three
    pods make 18 static alarms (6 on MIG instances); cost counted 6 (one per pod and rule), billing half the classic ones. The Metrics
    Insights line still prices the metrics analyzed: a pod's GPUs in its own cluster, none in the other."""
    from generator.artifacts import build
    from generator.output import encode

    project = load_project(project_dir("alarms:\n  per_pod: static\n  static_pods: [ml/a, ml/b, ml/c]\n"
                                       "clusters:\n  - {name: one, region: us-east-1}\n"
                                       "  - {name: two, region: us-east-1}\n"))
    artifacts = build(project)
    made = [item["Request"]["AlarmName"] for item in json.loads(encode(artifacts)["cloudwatch/alarms.json"])["alarms"]]
    static = [name for name in made if name.endswith(("-ml-a", "-ml-b", "-ml-c"))]
    assert len(static) == 18 and sum("-gpu-idle-mig-" in name for name in static) == 6
    result = estimates(project, Fleet(clusters=2, pods=3, churn=0, gpus=3), artifacts=artifacts)["static"]
    lines = _lines({"static": result}, "static")
    assert lines["per-pod alarms (static, one per pod)"]["quantity"] == 6
    pods = lines["per-pod alarms (static, Metrics Insights, one per pod)"]
    assert pods["quantity"] == 3 and "= 6 alarms" in pods["basis"], pods["basis"]
    assert result["alarms"] == len(made)


def test_a_started_pod_publishes_its_per_gpu_metrics_for_each_gpu_it_holds(project):
    """Pod churn: each pod started in the month publishes its per-pod fields and, per GPU it holds, its per-GPU
    ones (the idle alarm's utilization per pod GPU), prorated by the hour; the per-GPU ones were left out."""
    fleet = Fleet(clusters=1, pods=3, churn=0, gpus=6, nodes=2)
    still = _lines(estimates(project, fleet))["custom metrics"]
    churned = _lines(estimates(project, Fleet(clusters=1, pods=3, churn=7300, gpus=6, nodes=2)))["custom metrics"]
    per_pod = int(re.search(r"\+ (\d+) fields x 3 pods", still["basis"])[1])
    per_pod_gpu = int(re.search(r"\+ (\d+) x 6 GPUs held by pods", still["basis"])[1])
    assert per_pod and per_pod_gpu
    # 7,300 pod starts a month, each publishing for an hour: 10 metric-months per metric a pod publishes; two GPUs a pod
    assert churned["quantity"] - still["quantity"] == pytest.approx(10 * (per_pod + per_pod_gpu * 2))


def test_an_alarm_per_namespace_over_a_copy_of_the_per_pod_set_is_priced_per_pod(tmp_path):
    """A namespace's lowest temperature over two periods reads the agent-made flags copy of the per-pod set, one
    metric per pod, as the same alarm per pod does: it was priced one metric per GPU (100 for 500 pods)."""
    from tests.support.projects import defined_project

    text = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
            "    yield Alarm('hot', 'Hot', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'min', {by}), '>', 80),\n"
            "                evaluation_periods=2, datapoints_to_alarm=2)\n")
    fleet = Fleet(clusters=1, pods=500, churn=0, gpus=100, nodes=13)
    priced = {}
    for name, by in (("namespace", "('namespace',)"), ("pod", "('pod',)")):
        (tmp_path / name).mkdir()
        project = defined_project(tmp_path / name, alarms=text.format(by=by))
        lines = _lines(estimates(project, fleet))
        priced[name] = sum(line["quantity"] for item, line in lines.items() if "alarms" in item and "data-missing" not in item)
    assert priced == {"namespace": 500, "pod": 500}, priced


def test_a_flags_copy_of_mig_instances_is_an_event_per_instance_and_none_on_whole_gpus(tmp_path):
    """An alarm judging each MIG instance's temperature past a level over two periods has the agent make a flags copy
    in the set naming the instance and its profile, which keeps MIG instances' points only (the agent model writes 4
    for the mixed fleet's 2 MIG GPUs of 2 instances): cost counted one event per GPU (100 on 100 whole GPUs where
    there is none, 100 for 700 instances)."""
    from generator.cost import log_events
    from tests.support.projects import defined_project

    text = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
            "    yield Alarm('hot', 'Hot', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'min', ('node', 'gpu', 'mig_instance')),"
            " '>', 80), evaluation_periods=2, datapoints_to_alarm=2)\n")
    project = defined_project(tmp_path, alarms=text)

    def flags(fleet):
        return [(e.count, e.what) for e in log_events(project, fleet) if "flags" in e.what]

    assert flags(Fleet(clusters=1, pods=100, churn=0, gpus=100)) == []
    assert [count for count, _ in flags(Fleet(clusters=1, pods=700, churn=0, gpus=100, mig_instances=7))] == [700]


def test_the_pod_gpu_pairs_are_said_as_an_estimate_not_a_bound(project):
    """Pairs of a pod and a GPU it holds (the idle alarm's per-pod-GPU metrics) are estimated from the pods and GPUs
    given: max(GPUs, pods). Five pods on five GPUs, three sharing one by time-slicing and one holding two, publish 6:
    the basis said "at most" 5. It says what the estimate is and what makes it more."""
    for line in ("custom metrics", "per-pod alarms (GROUP BY pod)"):
        basis = _lines(estimates(project, Fleet(clusters=1, pods=5, churn=0, gpus=5, nodes=3)))[line]["basis"]
        assert "held by pods, at most" not in basis and "every pod's GPU, 5 at most" not in basis, basis
        assert "estimated as one per GPU held, or per pod where pods share GPUs" in basis


def _with_and_without(tmp_path, alarms: str, fleet: Fleet) -> tuple[dict[str, float], dict[str, dict]]:
    """({"with", "without"}: the custom metrics priced, the log events by what they are) of a project holding
    `alarms` (the lines of an alarms() generator) and of one holding none."""
    from tests.support.projects import defined_project

    head = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n    yield from ()\n"
    quantity, events = {}, {}
    for name, text in (("with", head + alarms), ("without", head)):
        (tmp_path / name).mkdir()
        project = defined_project(tmp_path / name, alarms=text)
        quantity[name] = _lines(estimates(project, fleet))["custom metrics"]["quantity"]
        events[name] = {e.what: e for e in cost.log_events(project, fleet)}
    return quantity, events


def test_a_namespaces_use_of_each_gpu_is_priced_per_namespace_and_gpu(tmp_path):
    """A namespace's alarm of a field MIG reports per instance reads the set the agent makes of its use of each GPU
    (cloudwatch_query.NAMESPACE_GPU): one metric per namespace and GPU its pods hold, at most one per GPU instance a
    pod holds (500 pods on 100 GPUs of 7 instances: 500), and an EMF event per such pair and scrape. It was priced
    as a field of the per-GPU set (100), and its events not at all."""
    alarm = "    yield Alarm('fb', 'Fb', Condition(Query('DCGM_FI_DEV_FB_USED', 'avg', ('namespace',)), '>', 8000))\n"
    fleet = Fleet(clusters=1, pods=500, churn=0, gpus=100, nodes=13, mig_instances=7)
    assert fleet.namespace_gpus == 500
    quantity, events = _with_and_without(tmp_path, alarm, fleet)
    assert quantity["with"] - quantity["without"] == 500
    used = events["with"]["a namespace's use of a GPU"]
    assert (used.count, used.fields, used.published) == (500, 1, 1)
    assert "a namespace's use of a GPU" not in events["without"]


def test_a_nodes_totals_are_priced_per_node(tmp_path):
    """An alarm counting GPUs or adding a gauge per node reads the node's count or total per scrape the agent makes
    (cloudwatch_query.NODE_TOTALS): one metric per node and field (13 nodes: 13 each for the count and the total),
    and an EMF event per node, mark and scrape; not a field of the per-GPU set (100 GPUs)."""
    alarms = ("    yield Alarm('few', 'Few', Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'count', ('node',)), '<', 8))\n"
              "    yield Alarm('hot', 'Hot', Condition(Query('DCGM_FI_DEV_POWER_USAGE', 'sum', ('node',)), '>', 3000)"
              ")\n")
    fleet = Fleet(clusters=1, pods=100, churn=0, gpus=100, nodes=13)
    quantity, events = _with_and_without(tmp_path, alarms, fleet)
    assert quantity["with"] - quantity["without"] == 2 * 13
    for mark in ("node_gpus", "node_total"):
        made = events["with"][f"a node's totals ({mark})"]
        assert (made.count, made.fields, made.published) == (13, 1, 1)
    assert not any("a node's totals" in what for what in events["without"])


def test_cost_says_which_rules_have_no_cloudwatch_alarm(project_dir, cli):
    """A rule CloudWatch cannot judge (gpu-stopped-reporting, lint AL027) is priced at nothing: the estimate says it
    has no CloudWatch alarm, in text and in JSON, so a fleet on CloudWatch alone knows a GPU lost there alerts no one."""
    config = str(project_dir("agent:\n  pipeline: classic\nthresholds:\n  pcie_replays_per_minute: 0\n"))
    code, stdout, _ = cli("cost", "--config", config, "--pods", "10")
    assert code == 0
    (line,) = [line for line in stdout.splitlines() if "gpu-stopped-reporting" in line]
    assert line.startswith("not priced: alarm 'gpu-stopped-reporting' has no CloudWatch alarm, only its "
                           "Prometheus rule"), line
    code, stdout, _ = cli("cost", "--config", config, "--pods", "10", "--output", "json")
    assert code == 0 and [message.split(":")[0] for message in json.loads(stdout)["prometheus_only"]] == \
        ["alarm 'gpu-stopped-reporting' has no CloudWatch alarm, only its Prometheus rule"]


@pytest.mark.parametrize("rates", [{"dashboard_month": {"price": 1e308}},
                                   {"custom_metric_month": {"tiers": [[None, 1e307]]}}],
                         ids=["dashboard", "custom-metric-tier"])
def test_rates_whose_products_pass_every_number_are_refused_not_printed_infinite(cli, tmp_path, rates):
    """A --prices rate that is a finite number can still make a line's product pass the largest float: a dashboard at
    $1e308 a month (3 dashboards) printed `total $inf a month`, and `--output json` wrote `Infinity`, which is no JSON
    value (json.loads in strict mode, jq and every other JSON parser refuse the answer); exit 0 both. Refused, exit 2,
    naming the file and the line."""
    prices = tmp_path / "huge.json"
    prices.write_text(json.dumps({"rates": rates}))
    for output in ("table", "json"):
        code, stdout, stderr = cli("cost", "--pods", "10", "--prices", str(prices), "--output", output)
        assert code == 2, (output, stdout[-300:])
        assert "huge.json" in (stderr + stdout) and "no finite sum of money" in (stderr + stdout)
        assert "inf" not in stdout.replace("finite", "") and "Infinity" not in stdout and "Traceback" not in stderr


def test_a_copy_of_the_bundled_price_file_is_a_valid_override(everything, tmp_path):
    """The override is 'a JSON object of the same keys' (the bundled file's source text): a copy of the bundled file,
    to edit, carries its `currency` and each rate's `uncertain` flag. It was refused ('unknown key 'currency'', then
    'rates.free_tier has no field 'uncertain''); it prices as the bundled file, and a rate marked checked (`uncertain`
    false) is no longer listed as one to check. Another currency than the rates' is refused: the bill prints $."""
    bundled = load_prices()
    override = tmp_path / "prices.json"
    copied = json.loads(json.dumps(bundled))
    copied["rates"]["free_tier"]["uncertain"] = False
    override.write_text(json.dumps(copied))
    fleet = Fleet(clusters=1, pods=10, churn=0)
    result = estimates(everything, fleet, load_prices(overrides=override))
    assert result["group_by"]["total"] == estimates(everything, fleet, bundled)["group_by"]["total"] > 0
    assert "free_tier" not in result["uncertain_rates"] and "emf_event_bytes" in result["uncertain_rates"]
    override.write_text(json.dumps({"currency": "EUR"}))
    with pytest.raises(InputError, match="currency"):
        load_prices(overrides=override)

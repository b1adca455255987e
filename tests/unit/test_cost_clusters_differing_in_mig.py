"""`gpudash cost` of a fleet whose clusters differ in exporter.mig prices what each cluster's agent publishes
(not mended by 735e7221).

Since 735e7221 each cluster's agent declares what its own exporter.mig group's widgets and alarms read
(artifacts.agents). `gpudash cost` still prices render.cloudwatch.queried_sets over every cluster together
(cost._what_is_published): every GPU and pod of the fleet is priced with both groups' sets. A rule per namespace reads
the namespace_gpu set where GPUs may be split and the per-pod set where none is: two clusters, one saying none, 100
pods, 100 GPUs: 3,218 custom metrics, where the same fleet all split prices 3,118 and all whole 3,118 (each cluster
publishes one group's sets, never both: the fleet of the two can cost no more than the dearer of them). Before
735e7221 every cluster published both groups' sets, and 3,218 was what they published.

The agent's EMF log events are counted alike: each kind's events on its share. Before, every kind's reads were taken
together (cost._what_is_published): the namespace's use of each GPU, an event per GPU that the split clusters' agents
alone log, was counted for every GPU of the mixed fleet (1,102 events per scrape, the split fleet's, where the mixed
fleet logged 1,052, when every agent logged kube-state-metrics' series too).
"""

from __future__ import annotations

import json

import pytest

from click.testing import CliRunner

from generator.cli import main

ALARM = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("ns-fb", "Namespace GPU memory high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("namespace",)), ">", 15000))
'''
FLEETS = {"mixed": ("", ", exporter: {mig: none}"), "split": ("", ""),
          "whole": (", exporter: {mig: none}", ", exporter: {mig: none}")}


def _estimate(folder, first: str, second: str, *more: str) -> dict:
    """The group_by estimate of the fleet of clusters a and b (`first`, `second`: what each says of exporter.mig)."""
    folder.mkdir()
    (folder / "alarms").mkdir()
    (folder / "alarms" / "alarms.py").write_text(ALARM)
    (folder / "gpudash.yaml").write_text(f"clusters:\n  - {{name: a, region: us-east-1{first}}}\n"
                                         f"  - {{name: b, region: us-east-1{second}}}\n"
                                         "definitions:\n  alarms: [alarms]\n")
    result = CliRunner().invoke(main, ["cost", "--config", str(folder / "gpudash.yaml"), "--pods", "100",
                                       "--output", "json", *more])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["group_by"]


def _custom_metrics(folder, first: str, second: str) -> float:
    (line,) = [line for line in _estimate(folder, first, second)["lines"] if line["item"] == "custom metrics"]
    return line["quantity"]


def test_a_fleet_of_clusters_differing_in_mig_costs_no_more_custom_metrics_than_the_dearer_alike_fleet(tmp_path):
    quantity = {name: _custom_metrics(tmp_path / name, *clusters) for name, clusters in FLEETS.items()}
    assert quantity["mixed"] <= max(quantity["split"], quantity["whole"]), quantity


def test_each_kind_of_cluster_is_priced_on_its_share_of_the_fleet(tmp_path):
    """Two clusters, one of each kind: half the fleet's clusters publish the split kind's sets, half the whole kind's."""
    quantity = {name: _custom_metrics(tmp_path / name, *clusters) for name, clusters in FLEETS.items()}
    assert quantity["mixed"] == pytest.approx((quantity["split"] + quantity["whole"]) / 2), quantity


NAMESPACE_EVENT = "a namespace's use of a GPU"  # logged by the split clusters' agents alone (the rule per namespace)


def test_each_kind_of_cluster_logs_its_own_events_on_its_share_of_the_fleet(tmp_path):
    """Two clusters, one of each kind: 100 pods on 100 GPUs. The split kind's agents log an event per GPU more (the
    namespace's use of it): 900 events per scrape all split, 800 all whole, 850 mixed (the namespace's use of a GPU on
    half the fleet's GPUs); the ingested GB and the bill's ingestion line follow. No data-missing alarm reads
    kube-state-metrics here, so the agents neither scrape nor log its series."""
    estimate = {name: _estimate(tmp_path / name, *clusters) for name, clusters in FLEETS.items()}
    events = {name: answer["log_events"] for name, answer in estimate.items()}
    assert {name: e["per_scrape"] for name, e in events.items()} == {"split": 900, "whole": 800, "mixed": 850}
    counted = {name: {kind["what"]: kind["count"] for kind in e["kinds"]} for name, e in events.items()}
    assert (counted["split"][NAMESPACE_EVENT], NAMESPACE_EVENT in counted["whole"], counted["mixed"][NAMESPACE_EVENT]) \
        == (100, False, 50)
    assert events["mixed"]["bytes_per_scrape"] == pytest.approx(
        (events["split"]["bytes_per_scrape"] + events["whole"]["bytes_per_scrape"]) / 2)
    ingested = {name: next(line for line in answer["lines"] if line["item"] == "EMF log ingestion (GB)")
                for name, answer in estimate.items()}
    assert ingested["mixed"]["quantity"] == pytest.approx(
        (ingested["split"]["quantity"] + ingested["whole"]["quantity"]) / 2)
    assert "2 kinds of cluster log their own events (exporter.mig)" in ingested["mixed"]["basis"]
    assert "kinds of cluster" not in ingested["split"]["basis"] + ingested["whole"]["basis"]


def test_a_kind_standing_for_more_of_the_fleets_clusters_logs_more(tmp_path):
    """The settings' two clusters standing for 3 of the fleet's (--clusters 3): a, the split one, stands for one, b
    for two, so the namespace's use of a GPU is logged for a third of the fleet's 100 GPUs."""
    events = _estimate(tmp_path / "mixed", *FLEETS["mixed"], "--clusters", "3")["log_events"]
    counted = {kind["what"]: kind["count"] for kind in events["kinds"]}
    assert counted[NAMESPACE_EVENT] == pytest.approx(100 / 3)
    assert events["per_scrape"] == pytest.approx(800 + 100 / 3)  # no kube-state-metrics events: nothing reads them


def _line(answer: dict, item: str) -> dict:
    return next(line for line in answer["lines"] if line["item"] == item)


READS = "dashboard reads (metrics analyzed, thousands)"


def test_each_kind_of_clusters_dashboards_is_priced_on_its_share_of_the_fleet(tmp_path):
    """The bundled overview has two widgets per MIG instance where GPUs may be split, left out where none is: 1,776
    thousand metrics analyzed a month all split, 1,680 all whole (100 pods, 2 clusters, 40 h viewed each). A mixed fleet's were priced as its first
    cluster's, as many times as it has clusters: 1,776 with the split cluster first, 1,680 with the whole one first.
    Each kind's now on its share: 1,728 either way."""
    estimate = {name: _estimate(tmp_path / name, *clusters) for name, clusters in FLEETS.items()}
    estimate["mixed, whole first"] = _estimate(tmp_path / "swapped", *FLEETS["mixed"][::-1])
    reads = {name: _line(answer, READS)["quantity"] for name, answer in estimate.items()}
    assert reads == {"split": 1776, "whole": 1680, "mixed": 1728, "mixed, whole first": 1728}
    assert "2 kinds of cluster (exporter.mig) show their own widgets" in _line(estimate["mixed"], READS)["basis"]
    assert {_line(answer, "dashboards")["quantity"] for answer in estimate.values()} == {6}


def test_mig_instances_split_the_gpus_of_the_clusters_that_may_be_split_alone(tmp_path):
    """--mig-instances 7 on the mixed fleet: the split cluster's GPUs are split, the plain cluster's (exporter.mig:
    none) whole, so each kind is priced as the fleet alike of it: the split fleet with 7 instances per GPU (5,008
    custom metrics, 2,300 events per scrape, 2,640 thousand metrics analyzed by the dashboards) and the whole fleet
    (3,108, 800, 1,680), each on its half. The plain cluster's GPUs were priced split too: 4,318, 2,452 and 2,304.
    (These alarms hold no data-missing alarm: kube-state-metrics' five counts per cluster are not published, 10 fewer
    custom metrics and 202 fewer events per scrape than when the agent published them for nothing.)"""
    seven = ("--mig-instances", "7")
    estimate = {"mixed": _estimate(tmp_path / "mixed", *FLEETS["mixed"], *seven),
                "split": _estimate(tmp_path / "split", *FLEETS["split"], *seven),
                "whole": _estimate(tmp_path / "whole", *FLEETS["whole"])}
    figures = {name: (_line(answer, "custom metrics")["quantity"], answer["log_events"]["per_scrape"],
                      _line(answer, READS)["quantity"]) for name, answer in estimate.items()}
    assert figures == {"split": (5008, 2300, 2640), "whole": (3108, 800, 1680), "mixed": (4058, 1550, 2160)}


def test_mig_instances_where_every_cluster_says_none_is_refused(tmp_path):
    folder = tmp_path / "whole"
    folder.mkdir()
    (folder / "gpudash.yaml").write_text("exporter:\n  mig: none\n")
    result = CliRunner().invoke(main, ["cost", "--config", str(folder / "gpudash.yaml"), "--pods", "100",
                                       "--mig-instances", "7"])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--mig-instances': 7 MIG instances per GPU, but every cluster of the settings says no " \
           "GPU is split (exporter.mig or clusters[].exporter.mig: none)" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("settings, hint", [("exporter:\n  mig: none\n", False), ("", True),
                                            ("clusters:\n  - {name: a, region: us-east-1}\n"
                                             "  - {name: b, region: us-east-1, exporter: {mig: none}}\n", True)],
                         ids=["every cluster none", "unset", "mixed"])
def test_more_pods_than_gpus_asks_for_mig_instances_only_where_gpus_may_be_split(tmp_path, settings, hint):
    """200 pods on 100 GPUs are counted as pods sharing GPUs; the warning asks for --mig-instances if the GPUs are
    split, which the settings rule out where every cluster says exporter.mig: none (and --mig-instances is refused
    there): it was asked for all the same."""
    (tmp_path / "gpudash.yaml").write_text(settings)
    result = CliRunner().invoke(main, ["cost", "--config", str(tmp_path / "gpudash.yaml"), "--pods", "200", "--gpus",
                                       "100", "--output", "json"])
    assert result.exit_code == 0, result.output
    (warning,) = json.loads(result.stdout)["warnings"]
    assert warning.startswith("200 pods on 100 GPUs: counted as pods sharing GPUs (time-slicing or MPS)")
    assert ("give --mig-instances N" in warning) is hint, warning

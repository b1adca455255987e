"""`gpudash cost` where the clusters differ in exporter.mig: what it says of kinds of cluster is what they publish and
read.

The agents' sets are worked out once per kind and Region (render/cloudwatch.reads_by_cluster), and cost counted each
object as a kind: a cluster saying exporter.mig: none beside a split one in us-east-1 (b) and one alone in us-west-2
(w), whose agents publish the same, were "3 kinds of cluster publish their own sets" with two kinds (the figures were
right: each part priced on its share). And a fleet alarm past 500 series was named by the clusters of the kind it was
counted as, fleet-wide ("gpudash-fleet-...-us-east-1 2,000 GPUs in clusters b, w": w is in us-west-2), and counted as
that kind where its Region held none of it (a Region of split clusters alone, whose GPUs report no utilization, was
said to return 1,000 GPUs)."""

from __future__ import annotations

from generator import cost
from generator.artifacts import build
from generator.cost import Fleet, limits
from tests.support.projects import defined_project
from tests.unit.test_fleet_rule_per_mig_instance_condition_in_mixed_region import ALARM, NO_DASHBOARDS

SPLIT = "  - {name: a, region: us-east-1}\n"
BESIDE = "  - {name: b, region: us-east-1, exporter: {mig: none}}\n"
ALONE = "  - {name: w, region: us-west-2, exporter: {mig: none}}\n"
BUSY = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpu-busy", "GPU busy",
                Condition(Query("DCGM_FI_DEV_GPU_UTIL", "max", ("node", "gpu")), ">", 95), scope="fleet")
'''


def _metrics(folder, clusters: str) -> dict:
    project = defined_project(folder, "clusters:\n" + clusters, alarms=ALARM, dashboards=NO_DASHBOARDS)
    lines = cost.estimates(project, Fleet(clusters=30, pods=3000, churn=0, mig_instances=7), None,
                           build(project, grafana=False))["group_by"]["lines"]
    return {line["item"]: line for line in lines}


def test_clusters_publishing_alike_in_two_regions_are_one_kind(tmp_path):
    (tmp_path / "apart").mkdir()
    (tmp_path / "together").mkdir()
    apart = _metrics(tmp_path / "apart", SPLIT + BESIDE + ALONE)
    together = _metrics(tmp_path / "together", SPLIT + BESIDE + ALONE.replace("us-west-2", "us-east-1"))
    said = apart["custom metrics"]["basis"]
    assert "; 2 kinds of cluster publish their own sets (exporter.mig)" in said, said
    assert "; 2 kinds of cluster log their own events" in apart["EMF log ingestion (GB)"]["basis"]
    # the same agents, the same metrics and events, wherever w is
    for item in ("custom metrics", "EMF log ingestion (GB)"):
        assert apart[item]["quantity"] == together[item]["quantity"], item


def test_a_fleet_alarm_is_counted_and_named_by_the_clusters_it_reads(tmp_path):
    """--mig-instances 7: a split cluster's GPUs report no utilization, so the rule reads none of a's or z's GPUs."""
    project = defined_project(tmp_path, "clusters:\n" + SPLIT + BESIDE + ALONE
                              + "  - {name: z, region: eu-west-1}\n", alarms=BUSY, dashboards=NO_DASHBOARDS)
    notes = limits(Fleet(clusters=3, pods=3000, churn=0, mig_instances=7), project, build(project, grafana=False))
    said = [note.split(" (in each")[0] for note in notes if note.startswith("GROUP BY alarms")]
    # us-east-1's reads b's whole GPUs beside a's split ones; us-west-2's, w's alone; eu-west-1's, split z's, none
    assert said == ["GROUP BY alarms past 500 series per cluster: gpudash-fleet-gpu-busy-warning-us-east-1 1,000 GPUs "
                    "in cluster b; gpudash-fleet-gpu-busy-warning-us-west-2 1,000 GPUs"], said

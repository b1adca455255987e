"""`gpudash cost` names the Metrics Insights limits each kind of cluster passes where the clusters differ in
exporter.mig, whichever cluster the settings list first.

fleet_limits counted the queries of the first cluster's dashboards and alarms alone ("clusters alike: one cluster's
queries stand for each"). A rule per GPU whose `cloudwatch=` condition is per MIG instance is made in a cluster whose
GPUs may be split on that condition (a set naming GPU_I_PROFILE: no metric where the fleet's GPUs are whole) and in a
cluster saying exporter.mig: none on its own (one series per GPU). With 2,000 pods on 2,000 GPUs over two clusters
(1,000 GPUs each), plain's alarm returns 1,000 series, of which a Metrics Insights alarm evaluates 500; `cost` said
so when plain came first and said nothing when split did. Each kind's first cluster's queries are now counted, a
query some kinds alone run named with their clusters.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.cost import Fleet, limits
from tests.support.mig_rules import FB_PER_GPU_CLOUDWATCH_PER_INSTANCE
from tests.support.projects import defined_project

ALARM = FB_PER_GPU_CLOUDWATCH_PER_INSTANCE
NO_DASHBOARDS = "def dashboards(ctx):\n    return []\n"
SPLIT = "  - {name: split, region: us-east-1}\n"
PLAIN = "  - {name: plain, region: us-east-1, exporter: {mig: none}}\n"
PAST_500 = ("GROUP BY alarms past 500 series per cluster: gpu-fb-high-warning (cluster plain) 1,000 GPUs (in each "
            "alarm's window: those there and, per pod, those started in it)")


def _limits(tmp_path, clusters: str) -> list[str]:
    project = defined_project(tmp_path, "clusters:\n" + clusters, alarms=ALARM, dashboards=NO_DASHBOARDS)
    return limits(Fleet(clusters=2, pods=2000, churn=0), project, build(project, grafana=False))


@pytest.mark.parametrize("clusters", [SPLIT + PLAIN, PLAIN + SPLIT], ids=["split first", "plain first"])
def test_the_plain_clusters_alarm_past_500_series_is_named(tmp_path, clusters):
    said = [note for note in _limits(tmp_path, clusters) if note.startswith("GROUP BY alarms")]
    assert [note.split(": a Metrics")[0] for note in said] == [PAST_500], said


def test_a_fleet_alike_names_no_cluster(tmp_path):
    said = [note for note in _limits(tmp_path, PLAIN + PLAIN.replace("plain", "calm"))
            if note.startswith("GROUP BY alarms")]
    assert [note.split(": a Metrics")[0] for note in said] == [PAST_500.replace(" (cluster plain)", "")], said


BUSY = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpu-busy", "GPU busy",
                Condition(Query("DCGM_FI_DEV_GPU_UTIL", "max", ("node", "gpu")), ">", 95))
'''


@pytest.mark.parametrize("clusters, said", [
    (SPLIT + PLAIN, ["GROUP BY alarms past 500 series per cluster: gpu-busy-warning 1,000 GPUs in cluster plain"]),
    (SPLIT + SPLIT.replace("split", "other"), [])], ids=["mixed", "all split"])
def test_mig_instances_leave_the_plain_clusters_gpus_whole(tmp_path, clusters, said):
    """--mig-instances 7, 2,000 GPUs over two clusters: a rule per GPU on GPU utilization, which MIG does not report,
    reads no GPU of a split cluster (its GPUs are all split), and each of plain's 1,000 whole GPUs: past 500 series
    there. The whole fleet was counted split, plain's alarm with it: nothing said."""
    project = defined_project(tmp_path, "clusters:\n" + clusters, alarms=BUSY, dashboards=NO_DASHBOARDS)
    notes = limits(Fleet(clusters=2, pods=2000, churn=0, mig_instances=7), project, build(project, grafana=False))
    assert [note.split(" (in each")[0] for note in notes if note.startswith("GROUP BY alarms")] == said


FLEET_RULE = FB_PER_GPU_CLOUDWATCH_PER_INSTANCE.replace("15000))\n", "15000), scope=\"fleet\")\n")


def test_a_fleet_alarm_judging_part_of_its_region_is_counted_in_its_own_region(tmp_path):
    """split in us-east-1; plain (exporter.mig: none) and split2 in eu-west-1, whose fleet rule is judged in two alarms,
    the whole one over plain alone (WHERE ClusterName != 'split2'). 3,000 GPUs over three clusters, two a Region at
    most: the whole alarm reads plain's 1,000 GPUs. Its share of its Region was worked out in the first cluster's
    Region (us-east-1, where split2 is not): 2,000 GPUs, and it was named after plain's kind, as if plain's alone."""
    assert 'scope="fleet"' in FLEET_RULE
    project = defined_project(tmp_path, "clusters:\n" + SPLIT + PLAIN.replace("us-east-1", "eu-west-1")
                              + SPLIT.replace("split", "split2").replace("us-east-1", "eu-west-1"),
                              alarms=FLEET_RULE, dashboards=NO_DASHBOARDS)
    notes = limits(Fleet(clusters=3, pods=3000, churn=0), project, build(project, grafana=False))
    assert [note.split(" (in each")[0] for note in notes if note.startswith("GROUP BY alarms")] == [
        "GROUP BY alarms past 500 series per cluster: gpudash-fleet-gpu-fb-high-whole-warning-eu-west-1 1,000 GPUs"]

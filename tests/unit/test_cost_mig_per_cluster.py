"""gpudash cost prices the CloudWatch alarms each cluster's exporter.mig makes (clusters[].exporter.mig), as generate
makes them: a rule left out where GPUs may be split (a half alarm) is not priced there, and the MIG instances' second
alarm only where GPUs may be split."""

from __future__ import annotations

import json

from generator import cost
from generator.artifacts import build
from generator.cost import Fleet
from generator.output import encode
from tests.support.mig_alarm_truth import per_cluster_alarms, two_cluster_settings
from tests.support.projects import defined_project
from tests.unit.test_mig_per_cluster import GPU_MEAN, NAMESPACE_MAX, NAMESPACE_MEAN


def test_alarms_priced_per_cluster_are_those_each_clusters_mig_setting_makes(tmp_path):
    project = defined_project(tmp_path, two_cluster_settings("classic", False),
                              alarms=per_cluster_alarms(NAMESPACE_MEAN, GPU_MEAN, NAMESPACE_MAX))
    artifacts = build(project)
    made = sorted(item["Request"]["AlarmName"] for item in json.loads(encode(artifacts)["cloudwatch/alarms.json"])["alarms"])
    # the mean per namespace only in the whole cluster (a half alarm where GPUs are split); the GPU mean in both, with
    # its MIG instances' alarm in the split cluster only; the largest per namespace in both
    assert made == ["gpudash-split-gpu-mean-low-mig-warning", "gpudash-split-gpu-mean-low-warning",
                    "gpudash-split-ns-max-high-warning", "gpudash-whole-gpu-mean-low-warning",
                    "gpudash-whole-ns-max-high-warning", "gpudash-whole-ns-mean-low-warning"]
    result = cost.estimates(project, Fleet(clusters=2, pods=20, churn=0), None, artifacts)
    assert result["group_by"]["alarms"] == len(made) == 6
    lines = {line["item"]: line for line in result["group_by"]["lines"]}
    basis = lines["GPU and cluster alarms (Metrics Insights)"]["basis"]
    assert basis.startswith("5 alarms,"), basis  # the MIG instances' alarm is counted apart (not priced)
    # twice the fleet: each cluster's share of it twice, the same rules made in each
    doubled = cost.estimates(project, Fleet(clusters=4, pods=40, churn=0), None, artifacts)
    assert doubled["group_by"]["alarms"] == 12

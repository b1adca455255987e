"""`gpudash verify` judges each cluster's exporter by that cluster's exporter.mig (clusters[].exporter.mig, else the
fleet's), on series as the exporter writes them (tests/support/mixed_fleet: a MIG node's two A100s split into 3g.20gb
and 4g.20gb instances, GPU_I_PROFILE / GPU_I_ID on each, device fields repeated per instance; a node of whole GPUs
with blank MIG labels absent). A cluster said to have no MIG GPU whose exporter reports MIG instances fails, naming
the cluster, the node, each GPU and instance, and the setting to write; a cluster that may have MIG GPUs does not."""

from __future__ import annotations

import pytest

from generator.checks.exporter import _url_cluster, analyse
from generator.checks.kube import mig_cluster
from generator.project import load_project
from tests.support import mixed_fleet

MIG_NODE = next(node for node in mixed_fleet.FLEET if node.name == "gpu-node-mig")
WHOLE_NODE = next(node for node in mixed_fleet.FLEET if node.name == "gpu-node-b")
CLUSTER_NONE = ("clusters:\n  - name: whole\n    region: us-east-1\n    exporter:\n      mig: none\n"
                "  - name: split\n    region: us-east-1\n")
FLEET_NONE = ("exporter:\n  mig: none\nclusters:\n  - name: whole\n    region: us-east-1\n"
              "  - name: split\n    region: us-east-1\n    exporter:\n      mig: some\n")


def _project(tmp_path, settings: str):
    (tmp_path / "gpudash.yaml").write_text(settings)
    return load_project(tmp_path / "gpudash.yaml")


def _checks(project, node, cluster: str | None, unknown: str = "") -> dict:
    picked = next((c for c in project.settings.clusters if c.name == cluster), None)
    return {c.name: c for c in analyse(project, mixed_fleet.payload(node, 60, 30), node.name, picked, unknown)}


@pytest.mark.parametrize("settings", [CLUSTER_NONE, FLEET_NONE], ids=["cluster-none", "fleet-none"])
def test_a_cluster_said_to_have_no_mig_fails_on_mig_instances_naming_cluster_node_gpus_and_the_fix(tmp_path,
                                                                                                  settings):
    said = _checks(_project(tmp_path, settings), MIG_NODE, "whole")["no MIG"]
    assert said.status == "fail"
    setting = "clusters[].exporter.mig" if settings is CLUSTER_NONE else "exporter.mig"
    assert said.detail.startswith(f"cluster whole says {setting}: none"), said.detail
    assert "4 MIG instance(s) report on node gpu-node-mig: gpu-node-mig gpu 0 MIG instance 1 (3g.20gb), " \
           "gpu-node-mig gpu 0 MIG instance 2 (3g.20gb), gpu-node-mig gpu 1 MIG instance 1 (4g.20gb), " \
           "gpu-node-mig gpu 1 MIG instance 2 (3g.20gb)" in said.detail, said.detail
    assert said.fix.startswith("write clusters[].exporter.mig: some for cluster whole"), said.fix
    assert "generate again" in said.fix


@pytest.mark.parametrize("settings", [CLUSTER_NONE, FLEET_NONE], ids=["cluster-none", "fleet-none"])
def test_the_cluster_that_may_have_mig_gpus_is_not_judged_no_mig(tmp_path, settings):
    checks = _checks(_project(tmp_path, settings), MIG_NODE, "split")
    assert "no MIG" not in checks and checks["MIG"].status == "warn"


@pytest.mark.parametrize("settings", [CLUSTER_NONE, FLEET_NONE], ids=["cluster-none", "fleet-none"])
def test_whole_gpus_pass_in_the_cluster_said_to_have_no_mig(tmp_path, settings):
    checks = _checks(_project(tmp_path, settings), WHOLE_NODE, "whole")
    assert checks["no MIG"].status == "ok" and "cluster whole" in checks["no MIG"].detail


def test_a_single_cluster_fleet_is_told_to_remove_the_setting(tmp_path):
    project = _project(tmp_path, "exporter:\n  mig: none\n")
    said = {c.name: c for c in analyse(project, mixed_fleet.payload(MIG_NODE, 60, 30), MIG_NODE.name)}["no MIG"]
    assert said.status == "fail" and said.fix.startswith("remove exporter.mig: none"), said.fix
    assert said.detail.startswith("cluster gpu-cluster says exporter.mig: none, but 4 MIG instance(s) report on node "
                                  "gpu-node-mig"), said.detail


def test_where_the_cluster_cannot_be_told_mig_instances_are_a_warning_naming_the_clusters_said_none(tmp_path):
    project = _project(tmp_path, CLUSTER_NONE)
    said = _checks(project, MIG_NODE, None, "cannot tell which cluster this kube context is")["no MIG"]
    assert said.status == "warn" and "cluster whole says exporter.mig: none" in said.detail, said.detail
    assert "gpu-node-mig gpu 0 MIG instance 1 (3g.20gb)" in said.detail and "--cluster" in said.fix
    assert "no MIG" not in _checks(project, WHOLE_NODE, None, "cannot tell which cluster this kube context is")


def test_the_cluster_judged_is_the_one_this_context_is_where_the_clusters_differ(tmp_path):
    project = _project(tmp_path, CLUSTER_NONE)
    assert _url_cluster(project, "whole")[0].name == "whole"
    assert _url_cluster(project, None)[0] is None and "exporter.mig" in _url_cluster(project, None)[1]
    assert mig_cluster(lambda name: None, project, "split")[0].name == "split"
    cluster, why = mig_cluster(lambda name: None, project, None)
    assert cluster is None and "cannot tell which cluster" in why
    # clusters alike in it: any one judges (the first)
    alike = _project(tmp_path, "exporter:\n  mig: none\nclusters:\n  - name: a\n    region: us-east-1\n"
                               "  - name: b\n    region: us-east-1\n")
    assert mig_cluster(lambda name: None, alike, None) == (alike.settings.clusters[0], "")
    assert _url_cluster(alike, None) == (alike.settings.clusters[0], "")

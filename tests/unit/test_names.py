"""Generated names come from one module, which also recognises them; ownership marks are spelled once."""

from __future__ import annotations

import json
import re
from pathlib import Path

import generator
from generator import markers, names

from tests.unit.test_golden_builds import golden


def _build(name: str) -> dict[str, bytes]:
    build = golden.stored(name)
    assert "manifest.json" in build, name
    return build


def test_every_name_a_build_generates_is_recognised_as_gpudash_s():
    """What prune and push look for: every CloudWatch dashboard, alarm and Grafana uid of the golden builds
    (all made with the default prefixes)."""
    prefixes = {"dashboard": "gpudash", "alarm": "gpudash", "uid": "gpudash"}
    for build_name in golden.names():
        build = _build(build_name)
        dashboards = [json.loads(body)["DashboardName"] for path, body in build.items()
                      if path.startswith("cloudwatch/dashboards/")]
        alarms = [item["Request"]["AlarmName"] for item in json.loads(build["cloudwatch/alarms.json"])["alarms"]]
        uids = [json.loads(body)["uid"] for path, body in build.items()
                if path.startswith("grafana/") and path.count("/") == 1]
        assert dashboards and alarms and uids, build_name
        for name in dashboards:
            assert names.is_cloudwatch_dashboard_name(prefixes["dashboard"], name), name
            assert name.startswith(names.cloudwatch_dashboard_name_start(prefixes["dashboard"]))
        for name in alarms:
            assert names.is_alarm_name(prefixes["alarm"], name), name
            assert name.startswith(names.alarm_name_start(prefixes["alarm"]))
        for uid in uids:
            assert names.is_grafana_uid(uid, prefixes["uid"]), uid


def test_names_of_other_forms_are_not_recognised():
    assert not names.is_cloudwatch_dashboard_name("gpudash", "gpudash-only")  # no cluster and id
    assert not names.is_cloudwatch_dashboard_name("gpudash", "team-gpudash-a-b")
    assert not names.is_cloudwatch_dashboard_name("gpudash", "gpudash-" + "a" * 255)
    assert not names.is_alarm_name("gpudash", "gpudashboard-a-b-critical")
    assert not names.is_grafana_uid("gpudash-Copy-of", "gpudash")  # Grafana's "Save as" uids are not generated
    assert not names.is_grafana_uid("other-gpu", "gpudash")


def test_the_forms_names_documents():
    assert names.alarm_name("gpudash", "eks-a", "gpu-idle", "warning") == "gpudash-eks-a-gpu-idle-warning"
    assert names.alarm_name("p", None, "xid", "critical", ("ml", "train-0")) == "p-fleet-xid-critical-ml-train-0"
    assert names.regional_alarm_name("p-fleet-x-critical", "eu-west-1", 2) == "p-fleet-x-critical-eu-west-1"
    assert names.regional_alarm_name("p-fleet-x-critical", "eu-west-1", 1) == "p-fleet-x-critical"
    assert names.alert_name("gpu-data_missing") == "GpudashGpuDataMissing"
    assert names.logical_id("Alarm", "gpudash-eks-a-gpu-idle-warning") == "AlarmGpudashEksAGpuIdleWarning"
    assert names.grafanalib_uid("My GPUs: Team B!") == "my-gpus-team-b"
    assert names.grafanalib_uid("!!!") == "dashboard"


# Every literal spelling of a mark, and the modules allowed to spell it.
_MARKS = re.compile(r"ManagedBy|gpudash-managed|app\.kubernetes\.io/managed-by|gpudash:rule|gpudash:sha256|"
                    r"gpudash sha256|gpudash_rule|Managed by gpudash|[\"']ClusterName[\"']")


def test_ownership_marks_are_spelled_only_in_markers():
    package = Path(generator.__file__).parent
    found = [f"{path.relative_to(package)}:{number}: {line.strip()}"
             for path in sorted(package.rglob("*.py")) if path.name != "markers.py"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if _MARKS.search(line)]
    assert not found, "spell these through generator/markers.py:\n" + "\n".join(found)
    assert markers.ALARM_OWNER_TAG == {"Key": "ManagedBy", "Value": "gpudash"}


def test_hints_name_build_files_through_output_only():
    """Every fix verify prints that points at a build file takes the folder and the file's path from
    `output` (BUILD, built(), the *_FILE names): a renamed file cannot leave a hint pointing at nothing."""
    import ast

    checks = Path(generator.__file__).parent / "checks"
    spelled = []
    for path in sorted(checks.glob("*.py")) + [Path(generator.__file__).parent / "verify.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "build/" in node.value:
                spelled.append(f"{path.name}:{node.lineno}: {node.value!r}")
    assert spelled == []


def test_a_name_is_read_with_the_longest_cluster_or_uid_prefix_it_is_seen_with():
    defined = ["gpudash-prod-gpu-temp-high-warning", "gpudash-prod-overview"]
    tails = names.name_tails("gpudash", defined, ("prod",))
    assert tails == {"gpu-temp-high-warning", "overview"}
    listed = [*defined, "gpudash-prod-eu-overview", "gpudash-prod-eu-old-view", "gpudash-prod-old-view"]
    seen = names.clusters_named("gpudash", listed, tails)
    assert seen == {"prod", "prod-eu"}
    for name, ours in (("gpudash-prod-old-view", True), ("gpudash-prod-eu-old-view", False),
                       ("gpudash-prod-eu-gpu-temp-high-warning", False), ("gpudash-production-x", False)):
        assert names.names_cluster("gpudash", name, {"prod"}, seen) is ours, name
        assert names.names_cluster("gpudash", name, {"prod-eu"}, seen) is name.startswith("gpudash-prod-eu-"), name
    prefixes = names.grafana_uid_prefixes("gpudash", ["gpudash-eu-overview", "team-x"], ["gpudash-overview"])
    assert prefixes == {"gpudash-eu"}
    assert names.is_grafana_uid("gpudash-eu-old", "gpudash") and not names.is_grafana_uid("gpudash-eu-old", "gpudash",
                                                                                           prefixes)
    assert names.is_grafana_uid("gpudash-eu-old", "gpudash-eu", prefixes)
    assert names.is_grafana_uid("gpudash-old", "gpudash", prefixes)


def test_two_projects_or_a_project_and_none_never_name_one_stack():
    """Each (project, cluster) and (project, Region) of one account names a stack of its own: a project whose name
    holds one of the words that part a stack's name ("cluster", "region") could otherwise meet another project's
    cluster stack (ml / train-cluster-a and ml-cluster-train / a), a project's cluster stack its own Region stack
    (p / x-region-us-east-1 and p-cluster-x's fleet alarms), or settings without a project (cluster-x and project
    "cluster"'s x). Deployed under one name, the second template updates the first's stack and CloudFormation deletes
    what it no longer declares."""
    pairs = [
        (names.cluster_stack("train-cluster-a", "ml"), names.cluster_stack("a", "ml-cluster-train")),
        (names.cluster_stack("x-region-us-east-1", "p"), names.region_stack("us-east-1", "p-cluster-x")),
        (names.cluster_stack("cluster-x"), names.cluster_stack("x", "cluster")),
        (names.cluster_stack("region-us-east-1"), names.region_stack("us-east-1", "cluster")),
        # a part of a cluster split over several templates (render/cloudformation.split_cluster)
        (names.cluster_stack("cluster-y", "a", part=2), names.cluster_stack("y", "a-cluster2")),
        (names.cluster_stack("x", part=2), names.cluster_stack("x", "cluster2")),
        (names.cluster_stack("c00", part=2), names.cluster_stack("2-c00")),
        (names.cluster_stack("c00", part=2), names.cluster_stack("c00", part=3)),
    ]
    for one, other in pairs:
        assert one != other
        assert names.is_stack_name(one) and names.is_stack_name(other), (one, other)
    # a project without these words keeps its plain name
    assert names.cluster_stack("gpu-cluster", "ml-platform-prod") == "gpudash-ml-platform-prod-cluster-gpu-cluster"
    assert names.region_stack("us-east-1", "team-a") == "gpudash-team-a-region-us-east-1"
    assert names.cluster_stack("c00", part=2) == "gpudash-cluster2-c00" and names.cluster_stack("c00", part=1) == \
        names.cluster_stack("c00") == "gpudash-cluster-c00"
    assert not names.is_stack_name("gpudash-cluster1-c00") and not names.is_stack_name("gpudash-cluster02-c00")

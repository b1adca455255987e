"""A template resource's logical id is a function of its kind and name alone.

CloudFormation knows a stack's resource by its logical id: a resource whose id changes between two deploys is created
anew under the same name and the old one then deleted (an alarm or dashboard of that name is gone after the update,
a log group's creation fails and the update rolls back). Before, two names that give one id (`trainer-1` and
`trainer1`: an id keeps a name's letters and digits) ended in a digest only while both were in one template: adding
or removing one of them, or splitting the cluster's alarms over several templates, changed the other's id.
"""

from __future__ import annotations

import json
import re

from generator import names
from generator.artifacts import build
from generator.project import load_project
from generator.render import cloudformation


def _alarm(cluster: str, name: str) -> dict:
    return {"Cluster": cluster, "Region": "us-east-1",
            "Request": {"AlarmName": name, "Namespace": "ContainerInsights/Prometheus", "MetricName": "m",
                        "Statistic": "Average", "Period": 60, "EvaluationPeriods": 1, "Threshold": 1,
                        "ComparisonOperator": "GreaterThanThreshold"}}


def _ids(clusters: list[str], alarms: list[tuple[str, str]]) -> dict[str, dict[str, str]]:
    """{stack: {resource name: its logical id}} of the templates of `clusters` (a dashboard and log group each) and
    the alarms (cluster, name)."""
    templates = cloudformation.templates(
        [(cluster, "us-east-1") for cluster in clusters],
        [(f"gpudash-{cluster}-health", cluster, {"widgets": []}, None) for cluster in clusters],
        [_alarm(cluster, name) for cluster, name in alarms],
        [(cluster, names.agent_log_group(cluster), 7) for cluster in clusters])
    key = {"AWS::CloudWatch::Alarm": "AlarmName", "AWS::CloudWatch::Dashboard": "DashboardName",
           "AWS::Logs::LogGroup": "LogGroupName"}
    return {stack: {r["Properties"][key[r["Type"]]]: id_ for id_, r in template["Resources"].items()}
            for stack, template in templates.items()}


def _flat(ids: dict[str, dict[str, str]]) -> dict[str, str]:
    return {name: id_ for held in ids.values() for name, id_ in held.items()}


def test_adding_or_removing_an_alarm_of_the_same_id_changes_no_other_resources_id():
    """`trainer-1` and `trainer1` (and `Trainer-1`, `trainer_1`) capitalise to one Trainer1. Seen on main ddc22e6:
    `gpudash-a-trainer-1` alone had AlarmGpudashATrainer1, and with `gpudash-a-trainer1` beside it
    AlarmGpudashATrainer1753CC93362 (a digest on a collision in the template): its id changed with another alarm."""
    base = [("a", "gpudash-a-xid-critical"), ("a", "gpudash-a-trainer-1")]
    same_id = ["gpudash-a-trainer1", "gpudash-a-Trainer-1", "gpudash-a-trainer_1", "gpudash-a-trainer--1"]
    alone = _flat(_ids(["a"], base))
    assert alone["gpudash-a-trainer-1"] == "AlarmGpudashATrainer1"  # the id a deployed stack holds
    seen = {}
    for added in same_id:
        together = _flat(_ids(["a"], base + [("a", added)]))
        assert {name: id_ for name, id_ in together.items() if name != added} == alone, added
        seen[added] = together[added]
    everything = _flat(_ids(["a"], base + [("a", name) for name in same_id]))
    assert {name: everything[name] for name in same_id} == seen  # each added name's id is its own, with or without
    assert len(set(everything.values())) == len(everything)  # the others: no two alike


def test_splitting_a_cluster_over_templates_or_not_changes_no_logical_id(project_dir, monkeypatch):
    """250 static per-pod targets split a cluster's alarms over 2 templates; the same build unsplit (one template,
    which CloudFormation would refuse) and with 4 parts gives every dashboard, alarm and log group the same id.
    Pods `p1` and `p-1` (`p4` and `p.4`, `p5` and `p--5`) give alarms of one capitalised id: they kept the plain id
    or took a digest by which of them landed in one template."""
    pods = ", ".join([f"ml/p{i}" for i in range(245)] + ["ml/p-1", "ml/p-2", "ml/p-3", "ml/p.4", "ml/p--5"])
    config = project_dir("clusters:\n  - {name: c-a, region: us-east-1}\n"
                         f"exporter:\n  mig: none\nalarms:\n  per_pod: static\n  static_pods: [{pods}]\n")
    project = load_project(config)
    kinds = {"AWS::CloudWatch::Alarm": ("Alarm", "AlarmName"),
             "AWS::CloudWatch::Dashboard": ("Dashboard", "DashboardName"),
             "AWS::Logs::LogGroup": ("LogGroup", "LogGroupName")}
    def ids(parts: int, fill: float) -> tuple[int, dict[str, tuple[str, str]]]:
        monkeypatch.setattr(cloudformation, "MAX_PARTS", parts)
        monkeypatch.setattr(cloudformation, "FILL", fill)
        templates = build(project, grafana=False).cloudformation
        held = {}
        for template in templates.values():
            for id_, resource in template["Resources"].items():
                kind, key = kinds[resource["Type"]]
                assert resource["Properties"][key] not in held
                held[resource["Properties"][key]] = (kind, id_)
        return len(templates), held

    (one, unsplit), (two, split) = ids(1, cloudformation.FILL), ids(64, cloudformation.FILL)
    four, more = ids(64, 0.3)  # more parts than the quotas need
    assert (one, two, four) == (1, 2, 4)
    assert unsplit == split == more and len(unsplit) > 500
    assert len({id_ for _, id_ in unsplit.values()}) == len(unsplit)
    assert all(re.fullmatch(r"[A-Za-z0-9]{1,255}", id_) for _, id_ in unsplit.values())
    assert all(id_ == names.logical_id(kind, name) for name, (kind, id_) in unsplit.items())
    pod_ids = {name: id_ for name, (_, id_) in unsplit.items() if name.startswith("gpudash-c-a-gpu-idle-warning-ml-")}
    assert pod_ids["gpudash-c-a-gpu-idle-warning-ml-p-1"] == "AlarmGpudashCAGpuIdleWarningMlP1"


# Names that give one capitalised id, and names gpudash writes whose ids deployed stacks hold
_SAME_WORDS = ["trainer-1", "trainer1", "Trainer-1", "trainer_1", "trainer--1", "-trainer-1", "trainer-1-",
               "a-b", "a_b", "aB", "ab", "a.b", "a/b", "a--b", "AB", "A-B",
               "c00", "c-00", "c-0-0", "gpu-a100-pool", "gpu-a-100-pool", "p4d", "p-4d", "x", "X", "1", "-1", ""]
_WRITTEN = {"gpudash-gpu-cluster-xid-error-critical": "GpudashGpuClusterXidErrorCritical",
            "gpudash-infer-east-gpu-idle-warning-ml-train-0": "GpudashInferEastGpuIdleWarningMlTrain0",
            "gpudash-fleet-xid-critical-us-east-1": "GpudashFleetXidCriticalUsEast1",
            "gpudash-eks-a-gpu-idle-warning": "GpudashEksAGpuIdleWarning",
            "gpudash-trainer-1-health": "GpudashTrainer1Health"}


def test_logical_ids_are_unique_valid_and_keep_the_ids_written_names_had():
    long = ["w" * 250 + "-a", "w" * 250 + "-b", "w" * 199 + "-x", "w" * 200 + "-x", "W" * 300]
    for kind in ("Alarm", "Dashboard", "LogGroup"):
        spellings = _SAME_WORDS + long + [names.agent_log_group(n) for n in _SAME_WORDS[:8] + ["gpu-cluster"]]
        ids = {name: names.logical_id(kind, name) for name in spellings}
        assert len(set(ids.values())) == len(ids), kind
        assert all(re.fullmatch(r"[A-Za-z0-9]{1,255}", id_) and id_.startswith(kind) for id_ in ids.values())
    for name, words in _WRITTEN.items():
        assert names.logical_id("Alarm", name) == "Alarm" + words
    assert names.logical_id("LogGroup", "/aws/containerinsights/gpu-cluster/prometheus") == \
        "LogGroupAwsContainerinsightsGpuClusterPrometheus"
    # of the names of one capitalised id, the one spelled lower-case with `-` (trailing digits a word) keeps it
    assert names.logical_id("Alarm", "trainer-1") == "AlarmTrainer1"
    assert names.logical_id("Alarm", "trainer1").startswith("AlarmTrainer1") and \
        len(names.logical_id("Alarm", "trainer1")) == len("AlarmTrainer1") + 10


def test_the_common_names_shortcut_gives_the_ids_reading_back_gives():
    """logical_id tells whether a name of lower-case letters, digits and `-` keeps its plain id without reading the
    id back (names._SPELLED): over every such name of up to 6 characters of `a`, `b`, `0`, `1` and `-`, it tells as
    reading back does."""
    from itertools import product

    for length in range(1, 7):
        for letters in product("ab01-", repeat=length):
            name = "".join(letters)
            words = "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", name) if part)
            assert bool(names._SPELLED.fullmatch(name)) == (names.spelled("Alarm", words) == name), name


def test_generate_names_the_resources_whose_logical_id_an_older_build_gave_otherwise(cli, project_dir, tmp_path,
                                                                                      monkeypatch):
    """A build written by a gpudash that gave every name its plain words (ddc22e6: no digest without a collision in
    the template) in the folder: cluster `c00`'s names are not spelled as their ids read back, so its dashboards, log
    group and alarms have other ids now; deploying the new template as it is deletes them. generate names them, with
    the fix; cluster `eks-a`'s ids are as they were, and a second build over the first says nothing."""
    config = project_dir("clusters:\n  - {name: c00, region: us-east-1}\n  - {name: eks-a, region: us-east-1}\n")
    build = tmp_path / "build"
    monkeypatch.setattr(cloudformation, "logical_id", names.plain_logical_id)
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0 and "another logical id" not in stderr, stderr
    old = json.loads((build / "cloudformation" / "gpudash-cluster-c00.json").read_bytes())["Resources"]
    monkeypatch.undo()
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0, stderr
    new = json.loads((build / "cloudformation" / "gpudash-cluster-c00.json").read_bytes())["Resources"]
    assert len(new) == len(old) and not set(new) & set(old)  # every id of c00's stack changed
    first = min(old)  # resources are listed by stack, then as the old template holds them (sorted ids)
    name = old[first]["Properties"].get("AlarmName") or old[first]["Properties"].get("DashboardName") or \
        old[first]["Properties"]["LogGroupName"]
    said = (f"warning: {build}: {len(old)} CloudFormation resource(s) of the previous build have another logical id "
            f"now (first: {name} in gpudash-cluster-c00, {first} -> ")
    assert said in stderr and "fix: before deploying, rename each in its stack with CloudFormation's stack " \
        "refactoring" in stderr, stderr
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0 and "another logical id" not in stderr, stderr


def test_two_resources_whose_ids_meet_are_one_clear_input_error(cli, project_dir, tmp_path):
    """Pod `trainer1`'s alarm id is its words and its name's digest; a pod spelled as those words
    (`trainer-1-<digest's words>`) has the same id, in the same template. Seen on main 95f630a: `internal error:
    ValueError: two template resources under one logical id` (exit 1). Now an input error (exit 2) naming both
    resources, no traceback."""
    plain = "gpudash-c-a-gpu-idle-warning-ml-"
    twin = names.spelled("Alarm", names.logical_id("Alarm", plain + "trainer1")[len("Alarm"):])[len(plain):]
    assert twin.startswith("trainer-1-")
    config = project_dir("clusters:\n  - {name: c-a, region: us-east-1}\n"
                         f"alarms:\n  per_pod: static\n  static_pods: [ml/trainer1, ml/{twin}]\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    assert code == 2, stderr
    assert f"error: CloudFormation resources '{plain}{twin}' and '{plain}trainer1' would have one logical id in " \
           f"one template, {names.logical_id('Alarm', plain + 'trainer1')}" in stderr, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr


_TWO_HEALTHS = '''
from generator.model import Dashboard, Row
from generator.panels import per_pod


def dashboards(ctx):
    yield Dashboard("x-health", "X", [Row("Pods", [per_pod("DCGM_FI_DEV_GPU_UTIL", "util")])])
    yield Dashboard("health", "Health", [Row("Pods", [per_pod("DCGM_FI_DEV_GPU_UTIL", "util")])])
'''


def test_two_dashboards_of_one_name_are_one_clear_input_error(cli, project_dir, tmp_path):
    """Cluster `c`'s dashboard `x-health` and cluster `c-x`'s dashboard `health` are both `gpudash-c-x-health`: a
    CloudWatch dashboard is global, so one would overwrite the other (and both were put in one template). Seen on
    main 95f630a: `internal error: ValueError: two template resources under one logical id DashboardGpudashCXHealth`.
    Now an input error (exit 2) naming both definitions, from generate and from apply alike (one build)."""
    config = project_dir("clusters:\n  - {name: c, region: us-east-1}\n  - {name: c-x, region: us-east-1}\n",
                         dashboards={"two.py": _TWO_HEALTHS})
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    assert code == 2, stderr
    assert "CloudWatch dashboard 'gpudash-c-x-health' is made twice, by dashboard 'x-health' of cluster 'c' (at " \
           "dashboards/two.py:" in stderr, stderr
    assert "and dashboard 'health' of cluster 'c-x': one would overwrite the other" in stderr
    assert "fix: rename one dashboard, cluster or cloudwatch.dashboard_prefix so the names differ" in stderr
    assert "Traceback" not in stderr and "internal error" not in stderr

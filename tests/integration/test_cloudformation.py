"""The CloudFormation templates (one per cluster) hold the same dashboards and alarms, and pass cfn-lint."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project


def test_templates_match_the_artifacts_one_stack_per_cluster_and_pass_cfn_lint(tmp_path, project_dir):
    """One template per cluster, named by the project (test) and the cluster alone and deployed in its Region (its
    Metadata says which):
    its dashboards, alarms and log group; together they hold every dashboard and alarm of the build once."""
    config = project_dir("clusters:\n  - {name: east, region: us-east-1}\n  - {name: eu, region: eu-west-1}\n"
                         "  - {name: east_2, region: us-east-1}\n")
    files = encode(build(load_project(config)))
    stacks = {"east": "gpudash-test-cluster-east", "eu": "gpudash-test-cluster-eu",
              "east_2": "gpudash-test-cluster-east-2-" + hashlib.sha256(b"east_2").hexdigest()[:10]}
    assert sorted(p for p in files if p.startswith("cloudformation/")) == \
        sorted(f"cloudformation/{stack}.json" for stack in stacks.values())
    alarms = json.loads(files["cloudwatch/alarms.json"])["alarms"]
    dashboards = {json.loads(d)["DashboardName"]: json.loads(d)["DashboardBody"]
                  for p, d in files.items() if p.startswith("cloudwatch/dashboards/")}
    seen_alarms, seen_dashboards = [], {}
    for cluster, region in (("east", "us-east-1"), ("eu", "eu-west-1"), ("east_2", "us-east-1")):
        template = json.loads(files[f"cloudformation/{stacks[cluster]}.json"])
        assert template["Metadata"] == {"gpudash": {"Region": region, "Cluster": cluster}}
        mine = {r["Properties"]["DashboardName"]: r["Properties"]["DashboardBody"]
                for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Dashboard"}
        assert mine and all(name.startswith(f"gpudash-{cluster}-") for name in mine)
        seen_dashboards.update(mine)
        names = [r["Properties"]["AlarmName"] for r in template["Resources"].values()
                 if r["Type"] == "AWS::CloudWatch::Alarm"]
        assert names and all(name.startswith(f"gpudash-{cluster}-") for name in names)
        assert {a["Region"] for a in alarms if a["Request"]["AlarmName"] in names} == {region}
        seen_alarms += names
        # The agent's EMF log group of the cluster, with the configured retention.
        (group,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Logs::LogGroup"]
        assert group["Properties"] == {"LogGroupName": f"/aws/containerinsights/{cluster}/prometheus",
                                       "RetentionInDays": 7}
        assert group["DeletionPolicy"] == "Retain"
    assert seen_dashboards == dashboards
    assert sorted(seen_alarms) == sorted(a["Request"]["AlarmName"] for a in alarms)
    cfn_lint = shutil.which("cfn-lint", path=str(Path(sys.executable).parent))
    paths = []
    for stack in stacks.values():
        paths.append(tmp_path / f"{stack}.json")
        paths[-1].write_bytes(files[f"cloudformation/{stack}.json"])
    result = subprocess.run([cfn_lint, *map(str, paths)], capture_output=True, text=True)  # one start-up for all
    assert result.returncode == 0, result.stdout + result.stderr


def test_clusters_whose_names_differ_only_in_punctuation_or_case_keep_every_resource(project_dir):
    """A logical id keeps a name's letters and digits: a-b, a_b, a--b and aB gave their alarms, dashboards and
    log groups one id, and the template kept one cluster's of each; each is a stack now, a_b's named a-b's with a
    digest (a stack name takes no `_`), and a template still keeps every name it holds apart. (Names that differ only in case, aB and ab,
    are refused by the settings: their build files would be one file on a case-insensitive file system.)"""
    config = project_dir("clusters:\n  - {name: a-b, region: us-east-1}\n  - {name: a_b, region: us-east-1}\n"
                         "  - {name: aB, region: us-east-1}\n  - {name: a--b, region: us-east-1}\n")
    files = encode(build(load_project(config)))
    templates = [json.loads(data) for path, data in files.items() if path.startswith("cloudformation/")]
    assert len(templates) == 4  # a stack each: a_b's name is a-b's with a digest
    resources = [(id_, r) for template in templates for id_, r in template["Resources"].items()]
    kept = {kind: sorted(r["Properties"][key] for _, r in resources if r["Type"] == kind)
            for kind, key in (("AWS::CloudWatch::Alarm", "AlarmName"), ("AWS::CloudWatch::Dashboard", "DashboardName"),
                              ("AWS::Logs::LogGroup", "LogGroupName"))}
    assert kept["AWS::CloudWatch::Alarm"] == sorted(a["Request"]["AlarmName"]
                                                    for a in json.loads(files["cloudwatch/alarms.json"])["alarms"])
    assert kept["AWS::CloudWatch::Dashboard"] == sorted(json.loads(d)["DashboardName"] for p, d in files.items()
                                                        if p.startswith("cloudwatch/dashboards/"))
    assert kept["AWS::Logs::LogGroup"] == sorted(f"/aws/containerinsights/{c}/prometheus" for c in ("a--b", "a-b", "a_b", "aB"))
    assert all(id_.isalnum() and len(id_) <= 255 for id_, _ in resources)


def test_a_fleet_alarm_has_its_regions_stack_and_no_clusters(tmp_path, project_dir):
    """A scope="fleet" rule's alarm watches every cluster of a Region: it goes in that Region's stack
    (gpudash-<project>-region-<region>), so a cluster's stack keeps depending on that cluster alone."""
    folder = _fleet_rule_folder(tmp_path / "alarms", 5)
    config = project_dir(f"definitions: {{alarms: [{folder}]}}\nclusters:\n  - {{name: a, region: us-east-1}}\n"
                         "  - {name: b, region: us-east-1}\n  - {name: c, region: eu-west-1}\n")
    files = encode(build(load_project(config)))
    alarms = {a["Request"]["AlarmName"]: a["Region"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
    fleet = {name: region for name, region in alarms.items() if "fleet-idle" in name}
    assert set(fleet.values()) == {"eu-west-1", "us-east-1"}  # (the rule and its MIG form, in each Region)
    held = {}
    for path, data in files.items():
        if path.startswith("cloudformation/"):
            template = json.loads(data)
            for r in template["Resources"].values():
                if r["Type"] == "AWS::CloudWatch::Alarm":
                    held[r["Properties"]["AlarmName"]] = (path, template["Metadata"]["gpudash"]["Region"])
    assert held.keys() == alarms.keys()
    assert {name: held[name] for name in fleet} == {
        name: (f"cloudformation/gpudash-test-region-{region}.json", region) for name, region in fleet.items()}
    assert all(path == f"cloudformation/gpudash-test-cluster-{name.split('-')[1]}.json" and alarms[name] == region
               for name, (path, region) in held.items() if name not in fleet)


def _fleet_rule_folder(folder: Path, threshold: float) -> Path:
    """A definitions folder: the bundled alarms and a scope="fleet" rule."""
    folder.mkdir(exist_ok=True)
    bundled = (Path(__file__).parents[2] / "alarms" / "gpu_alarms.py").read_text()
    rule = ('        Alarm("fleet-idle", "GPUs idle across the fleet",\n'
            f'              Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", POD), "<", {threshold}),\n'
            '              severity="warning", scope="fleet", missing_data="notBreaching",\n'
            '              description="A pod holds an idle GPU somewhere in the fleet.", runbook="Ask its owner."),\n'
            '    ]\n    # An alarm on a field')
    (folder / "gpu_alarms.py").write_text(bundled.replace("    ]\n    # An alarm on a field", rule))
    return folder


def test_two_projects_in_one_account_deploy_stacks_of_their_own(tmp_path):
    """Two projects of one account and Region (a project's name is unique in the account), each with a fleet alarm
    (their alarm prefixes differ): both builds wrote gpudash-region-us-east-1, and a stack deployed with another
    template deletes the resources the new one does not declare (CloudFormation's stack update), so deploying the
    second project's deleted the first's fleet alarms. Each project's stacks are its own now (named with the project;
    a build without `project` keeps the names it had), and hold only its own resources."""
    stacks = {}
    for project, prefix, cluster in (("research.ml", "lab", "shared"), ("research-ml", "prod", "shared-2")):
        folder = _fleet_rule_folder(tmp_path / f"alarms-{prefix}", 5)
        (tmp_path / project).mkdir()
        config = tmp_path / project / "gpudash.yaml"
        config.write_text(f"project: {project}\nalarms: {{name_prefix: {prefix}}}\ncloudwatch: {{dashboard_prefix: {prefix}}}\n"
                          f"definitions: {{alarms: [{folder}]}}\nclusters:\n  - {{name: {cluster}, region: us-east-1}}\n")
        files = encode(build(load_project(config)))
        stacks[project] = {path: {r["Properties"].get("AlarmName") or r["Properties"].get("DashboardName")
                                  or r["Properties"]["LogGroupName"] for r in json.loads(data)["Resources"].values()}
                           for path, data in files.items() if path.startswith("cloudformation/")}
        assert all(name.startswith((f"{prefix}-", "/aws/containerinsights/")) for held in stacks[project].values()
                   for name in held)
    # seen: both wrote cloudformation/gpudash-region-us-east-1.json
    assert not set(stacks["research.ml"]) & set(stacks["research-ml"]), (stacks["research.ml"].keys(),
                                                                          stacks["research-ml"].keys())
    assert any("-region-us-east-1" in path for path in stacks["research.ml"])
    digest = hashlib.sha256(b"research.ml").hexdigest()[:10]
    assert set(stacks["research.ml"]) == {f"cloudformation/gpudash-research-ml-{digest}-cluster-shared.json",
                                          f"cloudformation/gpudash-research-ml-{digest}-region-us-east-1.json"}
    assert set(stacks["research-ml"]) == {"cloudformation/gpudash-research-ml-cluster-shared-2.json",
                                          "cloudformation/gpudash-research-ml-region-us-east-1.json"}

"""The CloudFormation template holds the same dashboards and alarms, and passes cfn-lint."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project


def test_template_matches_the_artifacts_and_passes_cfn_lint(tmp_path, project_dir):
    config = project_dir("clusters:\n  - {name: east, region: us-east-1}\n  - {name: eu, region: eu-west-1}\n")
    files = encode(build(load_project(config)))
    primary = json.loads(files["cloudformation/gpudash.json"])
    other = json.loads(files["cloudformation/gpudash-eu-west-1.json"])
    dashboards = {r["Properties"]["DashboardName"]: r["Properties"]["DashboardBody"]
                  for r in primary["Resources"].values() if r["Type"] == "AWS::CloudWatch::Dashboard"}
    expected = {json.loads(d)["DashboardName"]: json.loads(d)["DashboardBody"]
                for p, d in files.items() if p.startswith("cloudwatch/dashboards/")}
    assert dashboards == expected
    alarms = json.loads(files["cloudwatch/alarms.json"])["alarms"]
    for template, region in ((primary, "us-east-1"), (other, "eu-west-1")):
        names = {r["Properties"]["AlarmName"] for r in template["Resources"].values()
                 if r["Type"] == "AWS::CloudWatch::Alarm"}
        assert names == {a["Request"]["AlarmName"] for a in alarms if a["Region"] == region}
    # The agent's EMF log group of each cluster, in its Region, with the configured retention.
    for template, region, cluster in ((primary, "us-east-1", "east"), (other, "eu-west-1", "eu")):
        (group,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Logs::LogGroup"]
        assert group["Properties"] == {"LogGroupName": f"/aws/containerinsights/{cluster}/prometheus",
                                       "RetentionInDays": 7}
        assert group["DeletionPolicy"] == "Retain"
    cfn_lint = shutil.which("cfn-lint", path=str(Path(sys.executable).parent))
    paths = []
    for name in ("gpudash.json", "gpudash-eu-west-1.json"):
        paths.append(tmp_path / name)
        paths[-1].write_bytes(files[f"cloudformation/{name}"])
    result = subprocess.run([cfn_lint, *map(str, paths)], capture_output=True, text=True)  # one start-up for both
    assert result.returncode == 0, result.stdout + result.stderr


def test_clusters_whose_names_differ_only_in_punctuation_or_case_keep_every_resource(project_dir):
    """A logical id keeps a name's letters and digits: a-b, a_b, a--b and aB gave their alarms, dashboards and
    log groups one id, and the template kept one cluster's of each. (Names that differ only in case, aB and ab,
    are refused by the settings: their build files would be one file on a case-insensitive file system.)"""
    config = project_dir("clusters:\n  - {name: a-b, region: us-east-1}\n  - {name: a_b, region: us-east-1}\n"
                         "  - {name: aB, region: us-east-1}\n  - {name: a--b, region: us-east-1}\n")
    files = encode(build(load_project(config)))
    resources = json.loads(files["cloudformation/gpudash.json"])["Resources"]
    kept = {kind: sorted(r["Properties"][key] for r in resources.values() if r["Type"] == kind)
            for kind, key in (("AWS::CloudWatch::Alarm", "AlarmName"), ("AWS::CloudWatch::Dashboard", "DashboardName"),
                              ("AWS::Logs::LogGroup", "LogGroupName"))}
    assert kept["AWS::CloudWatch::Alarm"] == sorted(a["Request"]["AlarmName"]
                                                    for a in json.loads(files["cloudwatch/alarms.json"])["alarms"])
    assert kept["AWS::CloudWatch::Dashboard"] == sorted(json.loads(d)["DashboardName"] for p, d in files.items()
                                                        if p.startswith("cloudwatch/dashboards/"))
    assert kept["AWS::Logs::LogGroup"] == sorted(f"/aws/containerinsights/{c}/prometheus" for c in ("a--b", "a-b", "a_b", "aB"))
    assert all(id_.isalnum() and len(id_) <= 255 for id_ in resources)

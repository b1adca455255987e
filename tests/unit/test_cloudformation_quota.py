"""A fleet of any size deploys with CloudFormation: one template per cluster (names.cluster_stack), each within
CloudFormation's quotas (500 resources, 1,000,000 bytes read from S3). A template still over them (one cluster's own
definitions too many) is said so, by generate and by lint, with its file and what is over."""

from __future__ import annotations

import json

from generator.lint import run
from generator.lint.cloudwatch_rules import RULES
from generator.output import read
from generator.project import load_project
from tests.support.lint_input import lint_input

CF001 = [rule for rule in RULES if rule.id == "CF001"]


def _fleet(project_dir, count: int, more: str = ""):
    clusters = "".join(f"  - {{name: c{i:02}, region: us-east-1}}\n" for i in range(count))
    return project_dir(f"clusters:\n{clusters}{more}")


def test_a_fleet_of_40_clusters_in_one_region_gets_templates_cloudformation_takes(cli, project_dir, tmp_path):
    """40 clusters in one Region: 3 dashboards, 12 alarms and a log group each. One template held them all (640
    resources, 2.4 MB): CloudFormation refused it, and the fleet had no template to deploy."""
    config = _fleet(project_dir, 40)
    build = tmp_path / "build"
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0 and "CloudFormation refuses" not in stderr, stderr
    templates = sorted((build / "cloudformation").iterdir())
    assert [t.name for t in templates] == [f"gpudash-cluster-c{i:02}.json" for i in range(40)]
    alarms = json.loads((build / "cloudwatch" / "alarms.json").read_bytes())["alarms"]
    held = []
    for template in templates:
        resources = json.loads(template.read_bytes())["Resources"]
        assert len(resources) <= 500 and template.stat().st_size <= 1_000_000, template
        held += [r["Properties"]["AlarmName"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert sorted(held) == sorted(a["Request"]["AlarmName"] for a in alarms) and len(held) == 40 * 12
    project = load_project(config)
    assert run(CF001, lint_input(project)) == []
    assert run(CF001, lint_input(project, read(build, settings=project.settings))) == []


def test_generate_and_lint_say_which_template_cloudformation_refuses(cli, project_dir, tmp_path):
    """One cluster of 250 static per-pod alarm targets: over 500 alarms in its own template."""
    pods = ", ".join(f"ml/p{i}" for i in range(250))
    config = _fleet(project_dir, 2, f"alarms:\n  per_pod: static\n  static_pods: [{pods}]\n")
    build = tmp_path / "build"
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0, stderr
    template = build / "cloudformation" / "gpudash-cluster-c00.json"
    resources = len(json.loads(template.read_bytes())["Resources"])
    size = template.stat().st_size
    assert resources > 500 and size > 1_000_000
    said = f"warning: {template}: {resources:,} resources (CloudFormation takes at most 500) and {size:,} bytes " \
           "(CloudFormation reads at most 1,000,000 from S3): CloudFormation refuses the template\n  fix: each " \
           "template holds one cluster's"
    assert said in stderr, stderr

    # lint judges the build read back (bodies as their texts) and the set built in the process (bodies as data) alike
    project = load_project(config)
    from_build = run(CF001, lint_input(project, read(build, settings=project.settings)))
    built = run(CF001, lint_input(project))
    assert from_build == built
    assert [(f.where, f.severity) for f in built] == [("cloudformation/gpudash-cluster-c00.json", "warning"),
                                                      ("cloudformation/gpudash-cluster-c01.json", "warning")]
    assert built[0].message.startswith(f"{resources:,} resources (CloudFormation takes at most 500) and {size:,} "
                                       "bytes "), built

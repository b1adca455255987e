"""A CloudFormation template CloudFormation would refuse (over 500 resources or 1,000,000 bytes) is said so, by
generate and by lint, with its file and what is over; a fleet within the quotas gets no word."""

from __future__ import annotations

import json

from generator.lint import run
from generator.lint.cloudwatch_rules import RULES
from generator.output import read
from generator.project import load_project
from tests.support.lint_input import lint_input

CF001 = [rule for rule in RULES if rule.id == "CF001"]


def _fleet(project_dir, count: int):
    clusters = "".join(f"  - {{name: c{i:02}, region: us-east-1}}\n" for i in range(count))
    return project_dir(f"clusters:\n{clusters}")


def test_generate_and_lint_say_which_template_cloudformation_refuses(cli, project_dir, tmp_path):
    """40 clusters in one Region: 3 dashboards, 12 alarms and a log group each, all in one template."""
    config = _fleet(project_dir, 40)
    build = tmp_path / "build"
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(build))
    assert code == 0, stderr
    template = build / "cloudformation" / "gpudash.json"
    resources = len(json.loads(template.read_bytes())["Resources"])
    size = template.stat().st_size
    assert resources > 500 and size > 1_000_000
    said = f"warning: {template}: {resources:,} resources (CloudFormation takes at most 500) and {size:,} bytes " \
           "(CloudFormation reads at most 1,000,000 from S3): CloudFormation refuses the template\n  fix: publish " \
           "with `gpudash apply`"
    assert said in stderr, stderr

    # lint judges the build read back (bodies as their texts) and the set built in the process (bodies as data) alike
    project = load_project(config)
    (from_build,) = run(CF001, lint_input(project, read(build, settings=project.settings)))
    (built,) = run(CF001, lint_input(project))
    assert from_build == built
    assert (built.where, built.severity) == ("cloudformation/gpudash.json", "warning")
    assert built.message.startswith(f"{resources:,} resources (CloudFormation takes at most 500) and {size:,} bytes "), \
        built


def test_a_fleet_within_the_quotas_gets_no_word(cli, project_dir, tmp_path):
    config = _fleet(project_dir, 2)
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    assert code == 0 and "CloudFormation refuses" not in stderr, stderr
    assert run(CF001, lint_input(load_project(config))) == []

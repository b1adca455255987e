"""A cluster's EMF log group is declared by one stack of the account and Region, however many projects watch it.

Each cluster's stack creates the agent's log group, `/aws/containerinsights/<cluster>/prometheus`, named by the
cluster alone. Two projects of one account (stacks of their own since 38db07d) watching clusters of one name in one
Region both declared it: CloudFormation creates a named resource in one stack only, so the second project's stack
failed to create ("... already exists") and rolled back, its dashboards and alarms with it; an import cannot help,
the group belongs to the first stack. `agent.log_group_in_stack: false` leaves the group out of a project's stacks;
its agent still writes the group and, on the OTel pipeline, sets the retention where it creates the group itself.
"""

from __future__ import annotations

import json
from collections import Counter

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support.cloudwatch_otel import otel_config

GROUP = "/aws/containerinsights/shared/prometheus"


def _build(tmp_path, project: str, agent: str = "") -> dict[str, bytes]:
    (tmp_path / project).mkdir()
    config = tmp_path / project / "gpudash.yaml"
    config.write_text(f"project: {project}\n{agent}clusters:\n  - {{name: shared, region: us-east-1}}\n")
    return encode(build(load_project(config)))


def _log_groups(files: dict[str, bytes]) -> dict[str, dict]:
    """{log group name: its resource's properties} over every stack of a build."""
    return {r["Properties"]["LogGroupName"]: r["Properties"] for path, data in files.items()
            if path.startswith("cloudformation/") for r in json.loads(data)["Resources"].values()
            if r["Type"] == "AWS::Logs::LogGroup"}


def test_two_projects_watching_one_cluster_name_declare_its_log_group_once(tmp_path):
    first = _build(tmp_path, "ml-train")
    both = _build(tmp_path, "ml-dash")
    # seen on main 3d6321a: each project's stack declares the group: the second stack's creation fails
    assert set(_log_groups(first)) == set(_log_groups(both)) == {GROUP}
    second = _build(tmp_path, "ml-watch", "agent:\n  log_group_in_stack: false\n")
    declared = Counter(name for files in (first, second) for name in _log_groups(files))
    assert declared == {GROUP: 1} and _log_groups(first)[GROUP] == {"LogGroupName": GROUP, "RetentionInDays": 7}
    # the second project's stack holds its dashboards and alarms still, and its agent writes the same group, setting
    # the retention where it creates the group itself
    (stack,) = [json.loads(data) for path, data in second.items() if path.startswith("cloudformation/")]
    kinds = Counter(r["Type"] for r in stack["Resources"].values())
    assert kinds["AWS::CloudWatch::Dashboard"] == 3 and kinds["AWS::CloudWatch::Alarm"] > 0
    emf = otel_config(second["k8s/cwagent-prometheus-config-shared.yaml"])["exporters"]["awsemf/gpudash"]
    assert (emf["log_group_name"], emf["log_retention"]) == (GROUP, 7)

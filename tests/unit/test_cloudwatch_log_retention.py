"""The agent's EMF log group keeps its events for `agent.log_retention_days`, however it comes to exist.

`gpudash cost` prices the log group's storage at `agent.log_retention_days` and the CloudFormation template creates
the group with that retention. With `gpudash apply` (no stack) the group is created by the agent's awsemf exporter at
its first PutLogEvents: awsemf creates a missing log group and sets a retention policy on it only when its own
`log_retention` is not 0, otherwise the group never expires (internal/aws/cwlogs/cwlog_client.go, CreateStream: "For
newly created log groups, set the log retention policy if specified or non-zero. Otherwise, set to Never Expire").
"""

from __future__ import annotations

import json

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support.cloudwatch_otel import otel_config


def _created_by_awsemf(emf: dict) -> int | None:
    """The retention, in days, of the log group awsemf creates (None: never expires), as cwlog_client.go sets it."""
    return emf.get("log_retention") or None


@pytest.mark.parametrize("days", [None, 30])
def test_the_log_group_the_agent_creates_keeps_events_as_long_as_cost_prices_them(project_dir, days):
    settings = "" if days is None else f"agent:\n  log_retention_days: {days}\n"
    project = load_project(project_dir(settings + "clusters:\n  - {name: a, region: us-east-1}\n"
                                                  "  - {name: b, region: eu-west-1}\n"))
    wanted = project.settings.agent.log_retention_days
    files = encode(build(project))
    stack = {r["Properties"]["LogGroupName"]: r["Properties"]["RetentionInDays"]
             for cluster in ("a", "b")
             for r in json.loads(files[f"cloudformation/gpudash-cluster-{cluster}.json"])["Resources"].values()
             if r["Type"] == "AWS::Logs::LogGroup"}
    created = {}
    for cluster in ("a", "b"):
        emf = otel_config(files[f"k8s/cwagent-prometheus-config-{cluster}.yaml"])["exporters"]["awsemf/gpudash"]
        created[emf["log_group_name"]] = _created_by_awsemf(emf)
    # seen on main 8c246c5: {'/aws/containerinsights/a/prometheus': None, ...}: never expires, priced at 7 days
    assert created == {f"/aws/containerinsights/{c}/prometheus": wanted for c in ("a", "b")}
    assert set(stack.values()) <= {wanted}  # the template, where it creates the group, says the same


@pytest.mark.parametrize("pipeline, in_stack, warned", [("classic", "false", True), ("classic", "true", False),
                                                        ("otel", "false", False)])
def test_generate_warns_where_no_artifact_gives_the_log_group_a_retention(cli, tmp_path, pipeline, in_stack, warned):
    """On agent.pipeline: classic the agent's JSON has no retention setting (its translator maps none to awsemf's
    log_retention), so a group the agent creates never expires; the CloudFormation stack sets one where it creates
    the group. With agent.log_group_in_stack false nothing does: generate says so, naming the group and the command
    that sets it, and the otel pipeline (awsemf's log_retention) or a stack that creates the group needs nothing."""
    (tmp_path / "gpudash.yaml").write_text(f"agent:\n  pipeline: {pipeline}\n  log_group_in_stack: {in_stack}\n"
                                           f"  log_retention_days: 30\n")
    code, _, err = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "build"))
    assert code == 0
    said = [line for line in err.splitlines() if "never expires" in line]
    assert bool(said) == warned, err
    if warned:
        assert "/aws/containerinsights/gpu-cluster/prometheus" in said[0] and "30 days" in said[0]
        assert ("aws logs put-retention-policy --log-group-name /aws/containerinsights/gpu-cluster/prometheus "
                "--retention-in-days 30") in err

"""`apply` (moto over HTTP) as a Region gains and loses a cluster saying exporter.mig: none beside a split one, with a
fleet rule per GPU whose `cloudwatch=` condition is per MIG instance (two alarms in a Region mixing the kinds:
render/alarms._kinds_apart). The split clusters' alarm keeps its name and its query, which names no cluster either
way (plain's agent publishes nothing in the set of MIG instances alone); the `-whole` alarm is made when plain
arrives and pruned with --prune --removed-cluster when it goes, nothing else of the rule deleted."""

from __future__ import annotations

from tests.support.cloudwatch_world import alarms
from tests.support.projects import defined_project
from tests.unit.test_fleet_rule_per_mig_instance_condition_in_mixed_region import (ALARM, NAMES, NO_DASHBOARDS,
                                                                                    SETTINGS, SPLIT_ALONE)

SPLIT, WHOLE = NAMES


def _config(folder, settings: str) -> str:
    folder.mkdir()
    defined_project(folder, "project: test\n" + settings, alarms=ALARM, dashboards=NO_DASHBOARDS)
    return str(folder / "gpudash.yaml")


def _rule(client) -> dict[str, str]:
    """{alarm name: its query} of the rule's alarms in us-east-1."""
    return {name: alarm["Metrics"][0]["Expression"] for name, alarm in alarms(client).items() if "gpu-fb-high" in name}


def test_a_plain_cluster_joining_and_leaving_the_region(aws, tmp_path):
    client, apply = aws
    alone, mixed = _config(tmp_path / "alone", SPLIT_ALONE), _config(tmp_path / "mixed", SETTINGS)
    code, _, stderr = apply("--config", alone)
    assert code == 0, stderr
    before = _rule(client)
    assert list(before) == [SPLIT] and "WHERE" not in before[SPLIT]

    code, report, stderr = apply("--config", mixed)
    assert code == 0, stderr
    now = _rule(client)
    assert sorted(now) == [SPLIT, WHOLE]
    assert now[SPLIT] == before[SPLIT]  # the same query: plain is in no series it reads
    assert now[WHOLE].count("WHERE \"ClusterName\" != 'split' GROUP BY") == 1

    code, report, stderr = apply("--prune", "--removed-cluster", "plain", "--config", alone)
    assert code == 0, stderr
    assert _rule(client) == before
    assert WHOLE in report["written"] and SPLIT in report["written"]  # deleted; its description rewritten
    assert not [name for name in alarms(client) if name.startswith("gpudash-plain-")]

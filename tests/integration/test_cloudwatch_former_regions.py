"""A cluster removed from the settings together with its whole Region (moto over HTTP): the Region is no longer
among those the settings use, so nothing reads it unless --former-region names it; then its alarms are pruned
on the same evidence as anywhere, and a Region that cannot be read fails the run."""

from __future__ import annotations

import json

import pytest

from tests.support.cloudwatch_world import ALWAYS, alarms, fresh, writes
from tests.support.fault_proxy import Rule

BOTH = "project: test\nclusters:\n  - {name: east, region: us-east-1}\n  - {name: west, region: us-west-2}\n"
EAST = "project: test\nclusters:\n  - {name: east, region: us-east-1}\n"


def _settings(tmp_path, name, text):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return str(path)


def _west_alarms(moto):
    return sorted(alarms(moto.client("cloudwatch", "us-west-2")))


def test_a_cluster_removed_with_its_region_is_pruned_there_only_when_that_region_is_read(aws, tmp_path, moto):
    client, apply = aws
    assert apply("--config", _settings(tmp_path, "both", BOTH))[0] == 0
    west = _west_alarms(moto)
    assert len(west) == 13 and all("-west-" in name for name in west)
    east = _settings(tmp_path, "east", EAST)
    code, report, stderr = apply("--prune", "--removed-cluster", "west", "--config", east)
    assert code == 0, stderr
    assert sorted(n for n in report["written"] if "-west-" in n) == [  # (east's objects now record east alone)
        "gpudash-west-by-pod", "gpudash-west-health", "gpudash-west-overview"]
    assert _west_alarms(moto) == west  # us-west-2 was not read: its alarms stay, and the note says how to reach them
    assert "read Region(s) us-west-2, which these settings no longer use" in stderr
    assert "`--former-region us-west-2` reads them too" in stderr
    code, report, stderr = apply("--prune", "--config", east, "--former-region", "us-west-2")
    assert code == 0 and report["written"] == [], stderr  # read, but they record west too: not these settings' alone
    assert "--removed-cluster west" in stderr and _west_alarms(moto) == west
    code, report, stderr = apply("--prune", "--removed-cluster", "west", "--former-region", "us-west-2",
                                 "--config", east)
    assert code == 0, stderr
    assert sorted(report["written"]) == west and _west_alarms(moto) == []
    assert len(alarms(client)) == 13  # east's alarms in us-east-1 untouched


def test_an_unreadable_former_region_fails_the_prune_and_nothing_is_published(proxied, tmp_path, moto):
    proxy, client, apply = proxied
    assert apply("--config", _settings(tmp_path, "both", BOTH))[0] == 0
    west = _west_alarms(moto)
    before = sorted(alarms(client))
    fresh(proxy)
    denied = {"__type": "AccessDeniedException", "message": "explicit deny in a service control policy"}
    proxy.inject(Rule(path="/", operation="DescribeAlarms", action="status", times=ALWAYS, status=400,
                      body=json.dumps(denied).encode(), region="us-west-2"))
    code, report, stderr = apply("--prune", "--removed-cluster", "west", "--former-region", "us-west-2",
                                 "--config", _settings(tmp_path, "east", EAST))
    assert code == 3 and "AccessDenied" in stderr and "nothing was published" in stderr, stderr
    assert writes(proxy) == [] and _west_alarms(moto) == west and sorted(alarms(client)) == before


@pytest.mark.parametrize("region", ["us-west", "US-WEST-2", "uswest2"])
def test_a_former_region_that_is_not_a_region_name_is_a_usage_error(aws, region):
    _, apply = aws
    code, stdout, stderr = apply("--former-region", region)
    assert code == 2 and "is not an AWS Region name" in stderr and "Traceback" not in stderr


def test_a_former_region_another_settings_file_still_uses_loses_nothing_of_that_file(aws, tmp_path, moto):
    """--former-region given for a Region another settings file of the project publishes in: its alarms are read
    and left (they record that file's clusters), with the note that says so; only evidence prunes."""
    _, apply = aws
    west_file = _settings(tmp_path, "west", "project: test\nclusters:\n  - {name: west, region: us-west-2}\n")
    east = _settings(tmp_path, "east", EAST)
    assert apply("--config", west_file)[0] == 0 and apply("--config", east)[0] == 0
    west = _west_alarms(moto)
    code, report, stderr = apply("--prune", "--former-region", "us-west-2", "--config", east)
    assert code == 0 and report["written"] == [], stderr
    assert "13 alarm(s) of project 'test' not defined here were published by other settings" in stderr, stderr
    assert _west_alarms(moto) == west

"""Alarm settings a person may set in the console that gpudash never writes: an alarm's evaluation window (a wall
clock window), its warm-up period and its action configuration (the alarm's tags in its notifications). PutMetricAlarm
overwrites an alarm's whole configuration (AWS documents it: what a request leaves out is reset), and DeleteAlarms
deletes it: such a setting is a person's edit, which neither may undo without --force.

moto (5.2.5) keeps none of these settings: a person's is modelled in DescribeAlarms' answers (through the proxy), as
CloudWatch reports it, until a PutMetricAlarm of that alarm (which would reset it) or its delete."""

from __future__ import annotations

import json

import pytest

from tests.support.cloudwatch_world import ALWAYS, EDITED, RETIRED_EDITED, TWO_CLUSTERS, alarms, fault, other_cluster

SETTINGS = {
    "EvaluationWindow": {"WallClockWindow": {"Timezone": "Europe/Berlin"}},
    "WarmUpConfiguration": {"WarmUpPeriodDurationInMinutes": 30, "OnlyStartEvaluatingAfterWarmUpPeriodEnds": True},
    "ActionConfiguration": {"AlarmTagsPropagation": {"Enabled": True, "IncludedTagKeys": ["team"]}},
}


def _set_in_console(proxy, name: str, key: str, value) -> dict[str, bool]:
    """A person sets `key` on alarm `name` in the console: DescribeAlarms reports it from now on, until a
    PutMetricAlarm of the alarm, which resets it (`kept["set"]` turns False)."""
    kept = {"set": True}

    def reported(body: bytes) -> bytes:
        answer = json.loads(body)
        for alarm in answer.get("MetricAlarms", []):
            if kept["set"] and alarm.get("AlarmName") == name:
                alarm[key] = value
        return json.dumps(answer).encode()

    proxy.inject(fault("PutMetricAlarm", "before", times=ALWAYS, naming=name, callback=lambda: kept.update(set=False)),
                 fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=reported))
    return kept


@pytest.mark.parametrize("key", sorted(SETTINGS))
def test_a_retired_alarm_with_a_setting_a_person_made_is_pruned_only_with_force(proxied, published, project_dir,
                                                                               key):
    """The retired cluster's alarm carries a person's warm-up period (or wall clock window, or tags in its
    notifications): no field gpudash hashed changed, so --prune deleted it, exit 0, nothing said."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    _set_in_console(proxy, RETIRED_EDITED, key, SETTINGS[key])
    code, report, _ = apply("--prune", "--removed-cluster", "other")
    assert [n for n in alarms(client) if other_cluster(n)] == [RETIRED_EDITED], report
    assert code == 1 and report["refused"] == [RETIRED_EDITED], report


@pytest.mark.parametrize("key", sorted(SETTINGS))
def test_a_setting_a_person_made_is_not_reset_by_an_update_without_force(proxied, published, project_dir, key):
    """A threshold change in the settings rewrites the alarm (PutMetricAlarm, the whole configuration): the person's
    setting on it was reset, exit 0. It is now drift, refused without --force, the setting kept."""
    proxy, client, apply = proxied
    published()
    kept = _set_in_console(proxy, EDITED, key, SETTINGS[key])
    config = project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n")
    code, report, _ = apply("--config", str(config))
    assert kept["set"] and alarms(client)[EDITED]["Threshold"] == 87.0, report
    assert code == 1 and report["refused"] == [EDITED], report


def test_a_setting_at_its_documented_default_is_no_edit(proxied, published):
    """CloudWatch may report a setting at its documented default (a sliding window, no warm-up, no tags in
    notifications): that is the alarm gpudash wrote, not an edit; the next apply writes nothing."""
    proxy, client, apply = proxied
    published()
    for key, value in (("EvaluationWindow", {"SlidingWindow": {}}),
                       ("WarmUpConfiguration", {"WarmUpPeriodDurationInMinutes": 0,
                                                "OnlyStartEvaluatingAfterWarmUpPeriodEnds": False}),
                       ("ActionConfiguration", {"AlarmTagsPropagation": {"Enabled": False}})):
        _set_in_console(proxy, EDITED, key, value)
    code, report, _ = apply()
    assert code == 0 and report["written"] == [] and report["refused"] == [], report




# A member of a metric alarm botocore's model lacks, which its parser drops: a setting CloudWatch added after the
# installed botocore, which a person may set in the console like any other
UNKNOWN = ("FutureSetting", {"Mode": "console"})


def _named_unknown(report, name: str) -> bool:
    """Whether the report says of `name` that botocore does not know what CloudWatch lists for it, and how to fix it."""
    details = " ".join(d for c in report["changes"] if c["name"] == name for d in c["details"])
    return f"CloudWatch lists {UNKNOWN[0]} for it, which botocore" in details and "update boto3 and botocore" in details


def test_a_setting_botocore_does_not_know_is_not_reset_by_an_update_without_force(proxied, published, project_dir):
    """botocore kept no trace of the member: the alarm read as gpudash wrote it, and the threshold change rewrote it
    (resetting the person's setting), exit 0. Now nothing shows whether a person edited it: refused, the member
    named, the setting kept, while the dashboards the change rewrites are written as before; --force rewrites it."""
    proxy, client, apply = proxied
    published()
    kept = _set_in_console(proxy, EDITED, *UNKNOWN)
    config = project_dir("thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90}\n")
    code, report, _ = apply("--config", str(config))
    assert kept["set"] and alarms(client)[EDITED]["Threshold"] == 87.0, report
    assert code == 1 and report["refused"] == [EDITED] and _named_unknown(report, EDITED), report
    assert sorted(report["written"]) == ["gpudash-gpu-cluster-health", "gpudash-gpu-cluster-overview"], report
    code, report, _ = apply("--config", str(config), "--force")
    assert code == 0 and report["written"] == [EDITED], report
    assert not kept["set"] and alarms(client)[EDITED]["Threshold"] == 90.0, report


def test_a_retired_alarm_with_a_setting_botocore_does_not_know_is_pruned_only_with_force(proxied, published,
                                                                                          project_dir):
    """The retired cluster's alarm carries a member botocore does not know: --prune deleted it with the others,
    exit 0. Now it is left (the others deleted), named; --prune --force deletes it."""
    proxy, client, apply = proxied
    published("--config", str(project_dir(TWO_CLUSTERS)))
    _set_in_console(proxy, RETIRED_EDITED, *UNKNOWN)
    code, report, _ = apply("--prune", "--removed-cluster", "other")
    assert [n for n in alarms(client) if other_cluster(n)] == [RETIRED_EDITED], report
    assert code == 1 and report["refused"] == [RETIRED_EDITED] and _named_unknown(report, RETIRED_EDITED), report
    code, report, _ = apply("--prune", "--removed-cluster", "other", "--force")
    assert code == 0 and [n for n in alarms(client) if other_cluster(n)] == [], report


def test_a_member_botocore_does_not_know_as_gpudash_wrote_it_is_no_edit(proxied, published):
    """CloudWatch lists the member of every alarm, whatever was put: no evidence written before shows it, so nothing
    shows whether a person set it (refused); once gpudash's own write was read back with it, the evidence covers it,
    and the next apply writes nothing."""
    proxy, client, apply = proxied
    published()

    def listed(body: bytes) -> bytes:
        answer = json.loads(body)
        for alarm in answer.get("MetricAlarms", []):
            alarm[UNKNOWN[0]] = UNKNOWN[1]
        return json.dumps(answer).encode()

    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=listed))
    code, report, _ = apply()
    assert code == 1 and report["refused"] == sorted(alarms(client)) and _named_unknown(report, EDITED), report
    code, report, _ = apply("--force")
    assert code == 0 and report["written"] == sorted(alarms(client)), report
    code, report, _ = apply()
    assert code == 0 and report["written"] == [] and report["refused"] == [], report

"""Several gpudash projects in one AWS account (moto over HTTP): --prune deletes only what carries this
project's name (the gpudash:project tag on alarms, the name and project a dashboard's stamp binds), never
another project's, a person's copy of a dashboard, or what an older gpudash wrote without a project."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.cloudwatch_world import TWO_CLUSTERS, alarms
from tests.support.fleet_rule import fleet_rule_definitions, judged_level


def _dashboards(client):
    return sorted(d["DashboardName"] for d in client.list_dashboards()["DashboardEntries"])


def _settings(tmp_path, name, text):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return str(path)


def _all_alarms(client):
    return sorted(a["AlarmName"] for a in client.describe_alarms()["MetricAlarms"])


def test_another_projects_alarms_and_dashboards_are_never_pruned(aws, tmp_path, cli):
    client, apply = aws
    b = _settings(tmp_path, "b", "project: team-b\nclusters:\n  - {name: team-b, region: us-east-1}\n")
    nested = _settings(tmp_path, "prod", "project: prod\nclusters:\n  - {name: east, region: us-east-1}\n"
                                         "alarms: {name_prefix: gpudash-prod}\ncloudwatch: {dashboard_prefix: gpudash-prod}\n")
    a = _settings(tmp_path, "a", "project: team-a\nclusters:\n  - {name: team-a, region: us-east-1}\n"
                                 "  - {name: east, region: us-east-1}\n")
    for settings in (b, nested, a):
        assert apply("--config", settings)[0] == 0
    others = ([n for n in _all_alarms(client) if n.startswith(("gpudash-team-b-", "gpudash-prod-"))],
              [n for n in _dashboards(client) if n.startswith(("gpudash-team-b-", "gpudash-prod-"))])
    assert (len(others[0]), len(others[1])) == (26, 6)
    code, stdout, _ = cli("plan", "--no-grafana", "--config", a)
    assert code == 0 and "delete" not in stdout
    code, report, _ = apply("--prune", "--config", a)
    assert code == 0 and report["written"] == []
    assert ([n for n in _all_alarms(client) if n.startswith(("gpudash-team-b-", "gpudash-prod-"))],
            [n for n in _dashboards(client) if n.startswith(("gpudash-team-b-", "gpudash-prod-"))]) == others
    # The project's own retired cluster is still pruned, when the settings say it is gone (team-a's objects, which
    # recorded both clusters, record team-a alone)
    only_a = _settings(tmp_path, "a2", "project: team-a\nclusters:\n  - {name: team-a, region: us-east-1}\n")
    code, report, _ = apply("--prune", "--removed-cluster", "east", "--config", only_a)
    assert code == 0 and len([n for n in report["written"] if "-east-" in n]) == 16
    assert all("-east-" in n or "-team-a-" in n for n in report["written"])
    assert not [n for n in _all_alarms(client) if n.startswith("gpudash-east-")]


def test_prune_is_refused_while_the_settings_name_no_project(aws, published, tmp_path):
    client, apply = aws
    published()
    before = (_all_alarms(client), _dashboards(client))
    code, stdout, stderr = apply("--prune", "--config", _settings(tmp_path, "none", "clusters:\n"
                                                                  "  - {name: other, region: us-east-1}\n"))
    assert code == 2 and set(stdout) == {"error"} and "--prune needs the settings to name the project" in stderr
    assert "add `project: <a name for this project>`" in stderr
    assert (_all_alarms(client), _dashboards(client)) == before


def test_a_persons_copy_of_a_dashboard_is_never_pruned(aws, published, cli):
    client, apply = aws
    published()
    body = client.get_dashboard(DashboardName="gpudash-gpu-cluster-overview")["DashboardBody"]
    copies = ["gpudash-gpu-cluster-overview-alice", "gpudash-oncall-copy"]
    for name in copies:  # "Save as" in the console: the same body under a name of their own
        client.put_dashboard(DashboardName=name, DashboardBody=body)
    code, stdout, _ = cli("plan", "--no-grafana")
    assert code == 0 and not any(name in stdout for name in copies)
    code, report, _ = apply("--prune", "--force")
    assert code == 0 and report["written"] == []
    assert [n for n in _dashboards(client) if n in copies] == sorted(copies)


def test_what_an_older_gpudash_wrote_without_a_project_is_kept_and_can_be_adopted(aws, tmp_path, cli):
    """Objects written while the settings named no project carry no project mark: once a project is named,
    the defined ones are marked on the next apply, and the retired ones are left, with a note saying how to
    adopt them; tagged as the note says, the alarms are pruned."""
    client, apply = aws
    unnamed = _settings(tmp_path, "unnamed", "clusters:\n  - {name: gpu-cluster, region: us-east-1}\n"
                                             "  - {name: other, region: us-east-1}\n")
    assert apply("--config", unnamed)[0] == 0
    code, report, stderr = apply("--prune")  # the defaults, named project "test", without cluster "other"
    assert code == 0 and report["refused"] == []
    assert sorted(report["written"]) == sorted(n for n in [*alarms(client), *_dashboards(client)]
                                               if n.startswith("gpudash-gpu-cluster-"))  # marked now
    retired = [n for n in _all_alarms(client) if n.startswith("gpudash-other-")]
    assert len(retired) == 13 and len([n for n in _dashboards(client) if n.startswith("gpudash-other-")]) == 3
    assert "13 alarm(s) no longer defined were written by an older gpudash that marked no project" in stderr
    assert "3 dashboard(s) no longer defined" in stderr and "delete-dashboards" in stderr
    assert "--tags Key=gpudash:project,Value=test" in stderr
    code, report, _ = apply("--prune")
    assert code == 0 and report["written"] == []
    listed = alarms(client)
    for name in retired:  # adopted as the note says
        client.tag_resource(ResourceARN=listed[name]["AlarmArn"], Tags=[{"Key": "gpudash:project", "Value": "test"}])
    code, report, _ = apply("--prune")
    assert code == 0 and sorted(report["written"]) == retired
    assert not [n for n in _all_alarms(client) if n.startswith("gpudash-other-")]
    code, stdout, _ = cli("plan", "--no-grafana")
    assert code == 0 and json.dumps(stdout).count("delete") == 0


def test_dashboards_are_global_a_fleet_over_two_regions_plans_and_prunes_each_once(aws, tmp_path, cli, moto):
    """As in AWS, the test world keeps one set of dashboards whichever Region's endpoint is called."""
    client, apply = aws
    two = _settings(tmp_path, "two", "project: test\nclusters:\n  - {name: east, region: us-east-1}\n"
                                     "  - {name: west, region: us-west-2}\n")
    code, report, _ = apply("--config", two)
    assert code == 0
    names = _dashboards(client)
    assert len(names) == 6 and _dashboards(moto.client("cloudwatch", "us-west-2")) == names
    code, stdout, _ = cli("plan", "--no-grafana", "--config", two)
    assert code == 0 and "delete" not in stdout
    assert stdout.count("cloudwatch dashboard") == 6
    code, report, _ = apply("--prune", "--config", two)
    assert code == 0 and report["written"] == [] and _dashboards(client) == names
    east = _settings(tmp_path, "east", "project: test\nclusters:\n  - {name: east, region: us-east-1}\n"
                                       "  - {name: west2, region: us-west-2}\n")
    code, report, _ = apply("--prune", "--renamed-from", "west", "--config", east)  # west renamed: its dashboards go, once
    assert code == 0 and sorted(n for n in report["written"] if n in names and "-west-" in n) == [
        n for n in names if "-west-" in n]
    assert [n for n in _dashboards(client) if "-west-" in n] == []


def test_another_projects_alarm_of_the_same_name_is_foreign_not_taken_over(aws, tmp_path, cli):
    """Two projects define a cluster of one name: the alarms of the first are never retagged, overwritten
    or (after the second drops the cluster) pruned by the second without --force."""
    client, apply = aws
    b = _settings(tmp_path, "b", "project: team-b\nclusters:\n  - {name: shared, region: us-east-1}\n")
    a = _settings(tmp_path, "a", "project: team-a\nclusters:\n  - {name: shared, region: us-east-1}\n"
                  "  - {name: a1, region: us-east-1}\n  - {name: a2, region: us-east-1}\n"
                  "thresholds:\n  gpu_temp_celsius: {warning: 70, critical: 90}\n")
    assert apply("--config", b)[0] == 0
    shared = {a["AlarmName"]: a for a in client.describe_alarms()["MetricAlarms"] if "-shared-" in a["AlarmName"]}
    tags = {name: client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"] for name, alarm in shared.items()}
    code, stdout, _ = cli("plan", "--no-grafana", "--output", "json", "--config", a)
    planned = {c["name"]: c for c in json.loads(stdout)["changes"] if "-shared-" in c["name"] and c["kind"] == "alarm"}
    assert {c["action"] for c in planned.values()} == {"foreign"}
    assert all("belongs to gpudash project 'team-b'" in c["details"][0] for c in planned.values())
    code, report, _ = apply("--config", a)
    assert code == 1 and set(shared) <= set(report["refused"])
    a2 = _settings(tmp_path, "a2", "project: team-a\nclusters:\n  - {name: a1, region: us-east-1}\n"
                   "  - {name: a2, region: us-east-1}\n  - {name: a3, region: us-east-1}\n")
    code, report, stderr = apply("--prune", "--config", a2)
    assert code == 0, stderr  # the retired cluster's alarms are not this project's: nothing to refuse or delete
    assert not any("-shared-" in name for name in report["written"])
    assert any("-a3-" in a["AlarmName"] for a in client.describe_alarms()["MetricAlarms"])
    after = {a["AlarmName"]: a for a in client.describe_alarms()["MetricAlarms"] if "-shared-" in a["AlarmName"]}
    assert after == shared  # not one field changed, none deleted
    assert {name: client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]
            for name, alarm in after.items()} == tags


def test_two_settings_files_of_one_project_never_prune_each_others_dashboards_or_alarms(aws, tmp_path, cli):
    """One project split over settings files (one per Region, or per team in one Region): dashboards are
    listed account-wide and alarms Region-wide, but what one file published is not the other's to prune; a
    cluster removed from a file is still pruned when the settings say it is gone (--removed-cluster), and the
    file's other objects then record its clusters now."""
    client, apply = aws
    east = _settings(tmp_path, "east", "project: fleet\nclusters:\n  - {name: east, region: us-east-1}\n"
                                       "  - {name: east2, region: us-east-1}\n")
    west = _settings(tmp_path, "west", "project: fleet\nclusters:\n  - {name: west, region: us-west-2}\n")
    more = _settings(tmp_path, "more", "project: fleet\nclusters:\n  - {name: more, region: us-east-1}\n")
    for settings in (east, west, more):
        assert apply("--config", settings)[0] == 0
    published = (_all_alarms(client), _dashboards(client))
    assert len(published[1]) == 12 and len(published[0]) == 39
    for settings in (west, more):
        code, stdout, stderr = cli("plan", "--no-grafana", "--config", settings)
        assert code == 0 and "delete" not in stdout
        assert "published by other settings of project 'fleet'" in stderr
        code, report, stderr = apply("--prune", "--config", settings)
        assert code == 0 and report["written"] == [], stderr
        assert (_all_alarms(client), _dashboards(client)) == published
    east_only = _settings(tmp_path, "east1", "project: fleet\nclusters:\n  - {name: east, region: us-east-1}\n")
    code, report, stderr = apply("--prune", "--config", east_only)  # east2 removed: it may be another file's now
    assert code == 0 and [n for n in report["written"] if "-east2-" in n] == [], stderr
    assert "--prune --removed-cluster east2` retires them" in stderr, stderr
    code, report, stderr = apply("--prune", "--removed-cluster", "east2", "--config", east_only)
    assert code == 0, stderr
    pruned = sorted(n for n in [*published[0], *published[1]] if "-east2-" in n)
    assert sorted(report["written"]) == pruned
    assert (_all_alarms(client), _dashboards(client)) == tuple([n for n in names if n not in pruned]
                                                                 for names in published)
    added = _settings(tmp_path, "east3", "project: fleet\nclusters:\n  - {name: east, region: us-east-1}\n"
                                         "  - {name: east3, region: us-east-1}\n")
    assert apply("--config", added)[0] == 0
    code, report, _ = apply("--prune", "--removed-cluster", "east", "--config",
                            _settings(tmp_path, "east4", "project: fleet\nclusters:\n  - {name: east3, region: us-east-1}\n"))
    assert code == 0 and sorted(n for n in report["written"] if "-east-" in n) == sorted(
        n for n in published[0] + published[1] if "-east-" in n)


def _paged_metric_alarms(client):
    alarms, token = [], None
    while True:
        page = client.describe_alarms(**({"NextToken": token} if token else {}), MaxRecords=100)
        alarms += page["MetricAlarms"]
        token = page.get("NextToken")
        if not token:
            return alarms


def _paged_alarms(client):
    names, token = [], None
    while True:
        page = client.describe_alarms(**({"NextToken": token} if token else {}), MaxRecords=100)
        names += [a["AlarmName"] for a in page["MetricAlarms"]]
        token = page.get("NextToken")
        if not token:
            return sorted(names)


def test_a_file_whose_cluster_list_passes_a_tags_length_keeps_its_alarms_from_another_files_prune(aws, tmp_path):
    """A tag value holds 256 characters: four long cluster names pass it. The other file's prune still
    leaves every alarm of this file; this file's own prune still deletes what it retired."""
    client, apply = aws
    long = [f"ml-training-prod-us-east-1-p5-48xlarge-nodegroup-{c}-0000000000000000000000" for c in "abcd"]
    assert len(" ".join(long)) > 256
    listed = "".join(f"  - {{name: {n}, region: us-east-1}}\n" for n in long)
    a = _settings(tmp_path, "a", "project: fleet\nclusters:\n" + listed)
    fewer = _settings(tmp_path, "a-fewer", "project: fleet\nclusters:\n" + "".join(
        f"  - {{name: {n}, region: us-east-1}}\n" for n in long[:3]))
    b = _settings(tmp_path, "b", "project: fleet\nclusters:\n  - {name: team-b, region: us-east-1}\n")
    assert apply("--config", a)[0] == 0 and apply("--config", b)[0] == 0
    a_alarms = [n for n in _paged_alarms(client) if "ml-training" in n]
    assert len(a_alarms) == 52
    code, report, stderr = apply("--prune", "--allow-mass-prune", "--config", b)  # (no guard hides a wrong delete)
    assert code == 0, stderr
    assert [n for n in _paged_alarms(client) if "ml-training" in n] == a_alarms
    code, report, stderr = apply("--prune", "--allow-mass-prune", "--config", fewer)
    assert code == 0, stderr
    left = [n for n in _paged_alarms(client) if "ml-training" in n]
    assert len(left) == 39 and not any(long[3] in n for n in left)


def test_a_fleet_alarm_both_files_define_does_not_make_one_files_clusters_the_others(aws, published, tmp_path):
    """A scope='fleet' rule names no cluster: two files of one project in one Region define the same alarm, which
    records the clusters of the file that wrote it (A: team-a). A's other alarms were written by a gpudash that
    recorded no clusters (nor a hash of its marks), all but one A changed since (it records team-a). B's prune
    leaves every one of A's: the fleet alarm B defines does not make team-a a cluster of B's lineage, so A's
    unrecorded alarms, named for team-a, are not read as B's (they were, and B's prune deleted them)."""
    client, apply = aws
    common = f"project: fleet\ndefinitions: {{alarms: [{fleet_rule_definitions(tmp_path / 'alarms', 5)}]}}\n"
    a = _settings(tmp_path, "a", common + "clusters:\n  - {name: team-a, region: us-east-1}\n")
    b = _settings(tmp_path, "b", common + "clusters:\n  - {name: team-b, region: us-east-1}\n"
                                          "  - {name: team-b2, region: us-east-1}\n")
    published("--config", a)  # the state its apply leaves (copied after the first: two tests below publish it too)
    assert apply("--config", b)[0] == 0
    assert _fleet_alarm_marks(client)[1] == "team-a"
    changed = "gpudash-team-a-xid-error-critical"
    unrecorded = {n: alarm for n, alarm in alarms(client).items() if n.startswith("gpudash-team-a-") and n != changed}
    assert changed in alarms(client) and len(unrecorded) == 12
    for name, alarm in unrecorded.items():
        _written_before_marks(client, name, None, alarm["AlarmArn"])
    before = _paged_alarms(client)
    code, report, stderr = apply("--prune", "--allow-mass-prune", "--config", b)  # (no guard hides a wrong delete)
    assert code == 0 and report["written"] == [], stderr
    assert _paged_alarms(client) == before
    assert "13 alarm(s) of project 'fleet' not defined here were published by other settings" in stderr, stderr


def test_a_fleet_alarm_two_files_define_differently_is_not_overwritten_by_the_file_that_did_not_write_it(
        aws, published, tmp_path, cli):
    """Two files of one project define the same scope='fleet' alarm with different thresholds: its clusters
    tag says the file that wrote it last (none of the other's clusters); the other file's plan shows it foreign
    and its apply leaves it (before, each apply overwrote the other's); --force overwrites it."""
    client, apply = aws
    common = "project: fleet\n"
    settings = {}
    for team, threshold in (("a", 5), ("b", 10)):
        folder = fleet_rule_definitions(tmp_path / ("alarms" if team == "a" else f"alarms-{team}"), threshold)
        settings[team] = _settings(tmp_path, team, common + f"definitions: {{alarms: [{folder}]}}\n"
                                   f"clusters:\n  - {{name: team-{team}, region: us-east-1}}\n")
    published("--config", settings["a"])  # the state its apply leaves: A's settings as the test above publishes them

    def fleet_alarms():
        return {a["AlarmName"]: judged_level(a) for a in _paged_metric_alarms(client) if "-fleet-idle-" in a["AlarmName"]}

    written_by_a = fleet_alarms()
    assert written_by_a["gpudash-fleet-fleet-idle-warning"] == 5
    code, stdout, stderr = cli("plan", "--no-grafana", "--config", settings["b"])
    assert "published by other settings of project 'fleet' (clusters team-a" in stdout + stderr, stdout
    code, report, stderr = apply("--config", settings["b"])
    assert not set(report["written"]) & set(written_by_a) and fleet_alarms() == written_by_a
    code, report, stderr = apply("--force", "--config", settings["b"])
    assert code == 0 and "gpudash-fleet-fleet-idle-warning" in report["written"], stderr
    assert fleet_alarms()["gpudash-fleet-fleet-idle-warning"] == 10


def _fleet_alarm_marks(client, name="gpudash-fleet-fleet-idle-warning"):
    alarm = client.describe_alarms(AlarmNames=[name])["MetricAlarms"][0]
    tags = {t["Key"]: t["Value"] for t in client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]}
    return judged_level(alarm), tags.get("gpudash:clusters")


def test_a_cluster_renamed_in_its_only_settings_file_takes_its_fleet_alarm_back_with_renamed_from(aws, tmp_path, cli):
    """The only settings file renames its cluster (team-a to team-z) and changes its fleet alarm: the alarm records
    team-a, which nothing tells from another file's, so it is refused, and the message says how to take it back
    (not --force); with --renamed-from team-a it is written with the new name, --prune retires team-a's
    objects, and later changes are written without the flag."""
    client, apply = aws
    common = "project: fleet\nclusters:\n  - {name: CLUSTER, region: us-east-1}\n"

    def settings(cluster, threshold):  # (the threshold in the text too: each text is built once)
        folder = fleet_rule_definitions(tmp_path / "alarms", threshold)
        return _settings(tmp_path, f"{cluster}-{threshold}", common.replace("CLUSTER", cluster)
                         + f"definitions: {{alarms: [{folder}]}}  # fleet-idle below {threshold}\n")

    assert apply("--config", settings("team-a", 5))[0] == 0
    old = [n for n in [*_paged_alarms(client), *_dashboards(client)] if "-team-a-" in n]
    assert len(old) == 16 and _fleet_alarm_marks(client) == (5, "team-a")
    renamed = settings("team-z", 7)
    code, stdout, stderr = cli("plan", "--no-grafana", "--config", renamed)
    assert code == 1 and re.search(r"foreign +cloudwatch alarm gpudash-fleet-fleet-idle-warning", stdout), stdout
    assert "`gpudash apply --renamed-from team-a` takes it back" in stdout
    assert "`gpudash apply --renamed-from team-a` takes them back" in stderr  # the old cluster's objects
    code, report, stderr = apply("--prune", "--config", renamed)  # the protection stands without the flag
    assert code == 1 and "gpudash-fleet-fleet-idle-warning" in report["refused"]
    assert _fleet_alarm_marks(client) == (5, "team-a") and not set(old) & set(report["written"])
    code, stdout, _ = cli("plan", "--no-grafana", "--renamed-from", "team-a", "--config", renamed)
    assert code == 1 and "foreign" not in stdout and len(re.findall(r"delete +cloudwatch", stdout)) == 16, stdout
    code, report, stderr = apply("--prune", "--renamed-from", "team-a", "--config", renamed)
    assert code == 0 and report["refused"] == [], stderr
    assert sorted(n for n in report["written"] if "-team-a-" in n) == sorted(old)
    assert _fleet_alarm_marks(client) == (7, "team-z")
    assert not [n for n in [*_paged_alarms(client), *_dashboards(client)] if "-team-a-" in n]
    code, report, stderr = apply("--prune", "--config", settings("team-z", 9))  # no flag needed any more
    assert code == 0 and report["refused"] == [] and report["written"] == [
        "gpudash-fleet-fleet-idle-mig-warning", "gpudash-fleet-fleet-idle-warning"], stderr
    assert _fleet_alarm_marks(client) == (9, "team-z")
    code, report, stderr = apply("--prune", "--renamed-from", "team-a", "--config", settings("team-z", 9))
    assert code == 0 and report["written"] == [], stderr  # the flag left in a CI job: it takes nothing, and says so
    assert "--renamed-from team-a: no object of project 'fleet' records the cluster 'team-a'" in stderr, stderr
    code, _, stderr = apply("--renamed-from", "team-z", "--config", settings("team-z", 9))
    assert code == 2 and "the settings still define the cluster 'team-z'" in stderr


def test_a_fleet_alarm_as_generated_records_the_new_cluster_names_with_renamed_from(aws, published, tmp_path):
    """Renamed without other change, the fleet alarm is as generated: a new list of clusters alone is not written
    (it would let one file take another's alarm), but with --renamed-from its clusters tag is; the next change
    needs no flag."""
    client, apply = aws
    folder = fleet_rule_definitions(tmp_path / "alarms", 5)
    a = _settings(tmp_path, "a", f"project: fleet\ndefinitions: {{alarms: [{folder}]}}\n"
                                 "clusters:\n  - {name: team-a, region: us-east-1}\n")
    z = _settings(tmp_path, "z", f"project: fleet\ndefinitions: {{alarms: [{folder}]}}\n"
                                 "clusters:\n  - {name: team-z, region: us-east-1}\n")
    published("--config", a)  # the state its apply leaves: these settings as the tests above publish them
    code, report, stderr = apply("--config", z)
    assert code == 0 and _fleet_alarm_marks(client) == (5, "team-a"), stderr
    code, report, stderr = apply("--renamed-from", "team-a", "--config", z)
    assert code == 0 and report["written"] == ["gpudash-fleet-fleet-idle-mig-warning",
                                               "gpudash-fleet-fleet-idle-warning"], stderr
    assert _fleet_alarm_marks(client) == (5, "team-z")
    code, report, stderr = apply("--config", z)
    assert code == 0 and report["written"] == [], stderr


def test_an_alarm_whose_clusters_tag_a_person_removed_is_not_pruned_by_another_file(aws, tmp_path):
    """The other file's prune refuses it (its gpudash:sha256 tag recorded the marks it was written with)."""
    client, apply = aws
    a = _settings(tmp_path, "a", "project: fleet\nclusters:\n  - {name: team-a, region: us-east-1}\n")
    b = _settings(tmp_path, "b", "project: fleet\nclusters:\n  - {name: team-b, region: us-east-1}\n")
    assert apply("--config", a)[0] == 0 and apply("--config", b)[0] == 0
    name = "gpudash-team-a-xid-error-critical"
    arn = client.describe_alarms(AlarmNames=[name])["MetricAlarms"][0]["AlarmArn"]
    client.untag_resource(ResourceARN=arn, TagKeys=["gpudash:clusters"])
    code, report, stderr = apply("--prune", "--config", b)
    assert code == 1 and report["refused"] == [name], stderr
    assert name in _paged_alarms(client) and name not in report["written"]


def _published_by(client, name, clusters, as_name=None, project="test"):
    """Rewrite the dashboard `name` (or write it as `as_name`) as gpudash writes it for project test from settings
    listing `clusters`; None: as a gpudash that recorded no clusters wrote it (a stamp of this name and project,
    no clusters line)."""
    from generator.ownership import stamp_cloudwatch_body, unstamped_cloudwatch_body, with_publication

    body = unstamped_cloudwatch_body(json.loads(client.get_dashboard(DashboardName=name)["DashboardBody"]))
    header = body["widgets"][0]["properties"]
    header["markdown"] = re.sub(r"\n\n`gpudash clusters: [^`]*`", "", header["markdown"])
    if clusters is not None:
        body = with_publication(body, clusters)
    name = as_name or name
    client.put_dashboard(DashboardName=name, DashboardBody=json.dumps(stamp_cloudwatch_body(body, name, project)))


def test_a_dashboard_published_before_clusters_were_recorded_is_not_pruned_by_another_file(aws, published, tmp_path):
    """File A (the defaults: gpu-cluster) and file B (other) of project test; one of B's dashboards was written by
    a gpudash that recorded no clusters. A's prune leaves all of B's dashboards: while a dashboard of the project
    shows another file publishing, one that names no clusters is nobody's to prune."""
    client, apply = aws
    published("--config", _settings(tmp_path, "two", TWO_CLUSTERS))
    for name in _dashboards(client):
        clusters = ["gpu-cluster"] if name.startswith("gpudash-gpu-cluster-") else ["other"]
        _published_by(client, name, None if name == "gpudash-other-overview" else clusters)
    before = _dashboards(client)
    code, report, stderr = apply("--prune")
    assert code == 0, stderr
    assert _dashboards(client) == before and not [n for n in report["written"] if n in before]
    assert "3 dashboard(s) of project 'test' not defined here were published by other settings" in stderr


def test_a_rewritten_clusters_tag_or_line_transfers_no_ownership_it_is_refused(aws, published, tmp_path):
    """File B (cluster other) and file A (the defaults: gpu-cluster) of project test. A person rewrites which
    settings published objects: a B alarm's gpudash:clusters to A's cluster, an A alarm's to both files'
    clusters (which would make every B alarm A's), a B dashboard's clusters line to A's. A's prune deletes
    and rewrites nothing: the two alarms are refused (their sha256 tag recorded other marks), the dashboard's
    stamp no longer matches; --force writes A's alarm's marks again."""
    client, apply = aws
    published("--config", _settings(tmp_path, "b", "project: test\nclusters:\n  - {name: other, region: us-east-1}\n"))
    assert apply()[0] == 0
    claimed, widened = "gpudash-other-xid-error-critical", "gpudash-gpu-cluster-xid-error-critical"
    for name, value in ((claimed, "gpu-cluster"), (widened, "gpu-cluster other")):
        client.tag_resource(ResourceARN=alarms(client)[name]["AlarmArn"],
                            Tags=[{"Key": "gpudash:clusters", "Value": value}])
    body = client.get_dashboard(DashboardName="gpudash-other-health")["DashboardBody"]
    assert body.count("gpudash clusters: other`") == 1
    client.put_dashboard(DashboardName="gpudash-other-health",
                         DashboardBody=body.replace("gpudash clusters: other`", "gpudash clusters: gpu-cluster`"))
    before = (_paged_alarms(client), _dashboards(client))
    assert len([n for n in before[0] if n.startswith("gpudash-other-")]) == 13
    code, report, stderr = apply("--prune")
    assert code == 1, stderr
    assert (_paged_alarms(client), _dashboards(client)) == before and report["written"] == []
    assert sorted(report["refused"]) == sorted([claimed, widened])
    details = {c["name"]: " ".join(c["details"]) for c in report["changes"]}
    for name in (claimed, widened):
        assert ("gpudash:clusters, gpudash:project or gpudash:rule tag was changed since gpudash wrote it"
                in details[name])
    code, report, stderr = apply("--force")
    assert code == 0 and report["written"] == [widened], stderr
    tags = client.list_tags_for_resource(ResourceARN=alarms(client)[widened]["AlarmArn"])["Tags"]
    assert {"Key": "gpudash:clusters", "Value": "gpu-cluster"} in tags


def _written_before_marks(client, name, clusters, arn=None):
    """An alarm as a gpudash that recorded `clusters` (None: none) but no hash of its marks left it (`arn`: the
    alarm's, when the caller listed it already)."""
    arn = arn or alarms(client)[name]["AlarmArn"]
    tags = {t["Key"]: t["Value"] for t in client.list_tags_for_resource(ResourceARN=arn)["Tags"]}
    client.tag_resource(ResourceARN=arn, Tags=[{"Key": "gpudash:sha256", "Value": tags["gpudash:sha256"].split("/")[0]}]
                        + ([{"Key": "gpudash:clusters", "Value": clusters}] if clusters else []))
    if clusters is None:
        client.untag_resource(ResourceARN=arn, TagKeys=["gpudash:clusters"])


def _other_written_before_clusters(client, published, tmp_path) -> None:
    """TWO_CLUSTERS published, then cluster other's objects as a gpudash that recorded no clusters wrote them (and
    gpu-cluster's recording gpu-cluster alone)."""
    published("--config", _settings(tmp_path, "two", TWO_CLUSTERS))
    for name in _dashboards(client):
        _published_by(client, name, ["gpu-cluster"] if name.startswith("gpudash-gpu-cluster-") else None)
    for name, alarm in alarms(client).items():
        _written_before_marks(client, name, "gpu-cluster" if name.startswith("gpudash-gpu-cluster-") else None,
                              alarm["AlarmArn"])


def test_objects_that_record_no_clusters_are_pruned_only_when_named_for_a_cluster_of_these_settings(
        aws, published, tmp_path):
    """File B (other) was published only by gpudash versions that recorded no clusters, so none of its
    dashboards and alarms shows another file: A's prune still leaves them (named for no cluster of A's), and
    says how to delete one by hand; A's own retired dashboard of that age (named for A's cluster) is pruned when
    its name reads one way only, and left, listed in the note, when a longer cluster could have given it the
    name (`gpudash-gpu-cluster-old-view`: `gpu-cluster`'s `old-view` or a cluster `gpu-cluster-old`'s `view`)."""
    client, apply = aws
    _other_written_before_clusters(client, published, tmp_path)
    retired, two_ways = "gpudash-gpu-cluster-retired", "gpudash-gpu-cluster-old-view"
    for name in (retired, two_ways):
        _published_by(client, "gpudash-gpu-cluster-health", None, as_name=name)
    before = (_dashboards(client), _all_alarms(client))
    code, report, stderr = apply("--prune", "--max-prune-share", "60")  # (B's would be 4 of 8 dashboards)
    assert code == 0, stderr
    assert (_dashboards(client), _all_alarms(client)) == ([n for n in before[0] if n != retired], before[1])
    assert retired in report["written"] and not [n for n in report["written"] if n.startswith("gpudash-other-")]
    assert "4 dashboard(s) of project 'test' not defined here record no clusters" in stderr and two_ways in stderr
    others = [n for n in before[1] if n.startswith("gpudash-other-")]
    assert others and f"{len(others)} alarm(s) of project 'test' not defined here record no clusters" in stderr
    assert "delete-dashboards --dashboard-names NAME" in stderr and "delete-alarms --region us-east-1" in stderr


def _person_alarm(client, name):
    client.put_metric_alarm(AlarmName=name, Namespace="AWS/EC2", MetricName="CPUUtilization", Statistic="Average",
                            Period=300, EvaluationPeriods=1, Threshold=90.0, ComparisonOperator="GreaterThanThreshold")


@pytest.mark.parametrize("mine,theirs", [("prod", "prod-eu"), ("prod-eu", "prod")])
def test_an_unrecorded_object_of_a_cluster_whose_name_continues_this_ones_is_not_this_files(
        aws, published, tmp_path, mine, theirs):
    """File A (cluster `mine`) and file B (cluster `theirs`) of project test; one name continues the other
    with a dash. B's dashboards and alarms, and a retired dashboard of B's, record no clusters: A's prune
    reads each name with the longest cluster it is seen for and leaves every one of B's, whichever file has
    the shorter name. A's own retired dashboard of that age is pruned; a person's dashboard and alarm named
    in A's form are left."""
    client, apply = aws
    both = _settings(tmp_path, "both", f"project: test\nclusters:\n  - {{name: {mine}, region: us-east-1}}\n"
                                       f"  - {{name: {theirs}, region: us-east-1}}\n")
    published("--config", both)  # the state its apply leaves (prod, prod-eu: as the next test's, copied after the first)
    def ours(name):  # named for `mine`, read with the longer cluster when both names fit
        return max((c for c in (mine, theirs) if name.startswith(f"gpudash-{c}-")), key=len) == mine

    for name in _dashboards(client):
        _published_by(client, name, [mine] if ours(name) else None)
    for name, alarm in alarms(client).items():
        _written_before_marks(client, name, mine if ours(name) else None, alarm["AlarmArn"])
    retired, theirs_retired = f"gpudash-{mine}-retired", f"gpudash-{theirs}-old-view"
    _published_by(client, f"gpudash-{mine}-health", None, as_name=retired)
    _published_by(client, f"gpudash-{theirs}-health", None, as_name=theirs_retired)
    person = f"gpudash-{mine}-old-board"
    client.put_dashboard(DashboardName=person, DashboardBody=json.dumps({"widgets": []}))
    _person_alarm(client, f"gpudash-{mine}-old-rule-warning")
    before = (_dashboards(client), _all_alarms(client))
    assert len([n for n in before[1] if n.startswith(f"gpudash-{theirs}-")]) >= 11
    code, report, stderr = apply("--prune", "--allow-mass-prune", "--config",
                                 _settings(tmp_path, "a", f"project: test\nclusters:\n  - {{name: {mine}, "
                                                          f"region: us-east-1}}\n"))
    assert code == 0, stderr
    assert retired in report["written"] and not [n for n in report["written"] if not ours(n)]
    assert (_dashboards(client), _all_alarms(client)) == ([n for n in before[0] if n != retired], before[1])
    assert "4 dashboard(s) of project 'test' not defined here record no clusters" in stderr, stderr


def _as_rule(client, name, as_name, rule):
    """Write the alarm `name` again as `as_name`, with its tags and the rule tag `rule` (another file's rule)."""
    alarm = alarms(client)[name]
    tags = client.list_tags_for_resource(ResourceARN=alarm["AlarmArn"])["Tags"]
    fields = {k: v for k, v in alarm.items() if k in ("AlarmDescription", "ActionsEnabled", "OKActions", "AlarmActions",
                                                     "InsufficientDataActions", "EvaluationPeriods", "DatapointsToAlarm",
                                                     "Threshold", "ComparisonOperator", "TreatMissingData", "Metrics")}
    client.put_metric_alarm(AlarmName=as_name, **fields, Tags=[
        t if t["Key"] != "gpudash:rule" else {"Key": "gpudash:rule", "Value": rule} for t in tags])


def test_an_unrecorded_object_whose_name_a_longer_cluster_could_have_given_is_not_pruned(aws, published, tmp_path):
    """File B (cluster `prod-eu`) defines a dashboard and an alarm rule that file A (`prod`) does not, written by
    a gpudash that recorded no clusters, and none of B's other objects is there to show `prod-eu`. Their names
    (`gpudash-prod-eu-inference`, `gpudash-prod-eu-inference-stall-warning`) read as A's retired `eu-inference`
    too; nothing proves they are A's, so A's --prune (even with --force) leaves them and says so in its notes;
    A's own retired dashboard of that age, whose name reads one way, is pruned."""
    client, apply = aws
    both = _settings(tmp_path, "both", "project: test\nclusters:\n  - {name: prod, region: us-east-1}\n"
                                       "  - {name: prod-eu, region: us-east-1}\n")
    published("--config", both)  # the state its apply leaves, as the test above publishes it first
    for name in _dashboards(client):
        _published_by(client, name, None if name.startswith("gpudash-prod-eu-") else ["prod"])
    for name, alarm in alarms(client).items():
        _written_before_marks(client, name, None if name.startswith("gpudash-prod-eu-") else "prod", alarm["AlarmArn"])
    _published_by(client, "gpudash-prod-eu-health", None, as_name="gpudash-prod-eu-inference")
    _published_by(client, "gpudash-prod-health", None, as_name="gpudash-prod-retired")
    _as_rule(client, "gpudash-prod-eu-gpu-idle-warning", "gpudash-prod-eu-inference-stall-warning", "inference-stall")
    for name in _dashboards(client):  # of B's, only what A does not define is left
        if name.startswith("gpudash-prod-eu-") and name != "gpudash-prod-eu-inference":
            client.delete_dashboards(DashboardNames=[name])
    client.delete_alarms(AlarmNames=[n for n in alarms(client)
                                     if n.startswith("gpudash-prod-eu-") and "inference" not in n])
    before = (_dashboards(client), _all_alarms(client))
    code, report, stderr = apply("--prune", "--force", "--allow-mass-prune", "--config",
                                 _settings(tmp_path, "a", "project: test\nclusters:\n  - {name: prod, region: us-east-1}\n"))
    assert code == 0, stderr
    assert (_dashboards(client), _all_alarms(client)) == ([n for n in before[0] if n != "gpudash-prod-retired"],
                                                          before[1])
    assert "1 dashboard(s) of project 'test' not defined here record no clusters" in stderr
    assert "1 alarm(s) of project 'test' not defined here record no clusters" in stderr
    assert "gpudash-prod-eu-inference" in stderr and "gpudash-prod-eu-inference-stall-warning" in stderr


def test_projects_whose_prefixes_continue_one_another_never_prune_each_others_unrecorded_objects(aws, tmp_path):
    """Projects prod (prefixes gpudash-prod) and prod-eu (gpudash-prod-eu), cluster main each. prod's retired objects
    of its cluster eu-main, written before clusters were recorded, are named gpudash-prod-eu-main-...: in prod-eu's
    form for its own cluster main, with a tail that reads one way. Neither project's --prune deletes the other's
    (the project each binds tells them apart); each deletes its own retired object of that age."""
    client, apply = aws

    def settings(project):
        return _settings(tmp_path, project, f"project: {project}\nalarms: {{name_prefix: gpudash-{project}}}\n"
                         f"cloudwatch: {{dashboard_prefix: gpudash-{project}}}\n"
                         "clusters:\n  - {name: main, region: us-east-1}\n")

    for project in ("prod", "prod-eu"):
        assert apply("--config", settings(project))[0] == 0
        for name in [n for n in _dashboards(client) if n.startswith(f"gpudash-{project}-main-")]:
            _published_by(client, name, None, project=project)
        for name, alarm in alarms(client).items():
            if name.startswith(f"gpudash-{project}-main-"):
                _written_before_marks(client, name, None, alarm["AlarmArn"])
    for project, retired in (("prod", "gpudash-prod-eu-main-old"), ("prod", "gpudash-prod-main-retired"),
                             ("prod-eu", "gpudash-prod-eu-main-retired")):
        _published_by(client, f"gpudash-{project}-main-health", None, as_name=retired, project=project)
    _as_rule(client, "gpudash-prod-main-gpu-idle-warning", "gpudash-prod-eu-main-inference-stall-warning",
             "inference-stall")
    _written_before_marks(client, "gpudash-prod-eu-main-inference-stall-warning", None)
    before = [*_dashboards(client), *_all_alarms(client)]
    for project in ("prod-eu", "prod"):  # (each marks its own defined objects with its clusters as it goes)
        code, report, stderr = apply("--prune", "--force", "--config", settings(project))
        assert code == 0 and f"gpudash-{project}-main-retired" in report["written"], stderr
        assert all(c["name"].startswith(f"gpudash-{project}-main-") for c in report["changes"]
                   if c["name"] in report["written"]), report["written"]
    assert [*_dashboards(client), *_all_alarms(client)] == [
        n for n in before if n not in ("gpudash-prod-eu-main-retired", "gpudash-prod-main-retired")]


def _clusters(*names):
    return "project: shop\nclusters:\n" + "".join(f"  - {{name: {name}, region: us-east-1}}\n" for name in names)


def test_a_settings_file_split_in_two_never_prunes_the_other_files_objects(aws, published, tmp_path, cli):
    """A file of clusters alpha and beta applied, then split into A (alpha) and B (beta), one per team. Before
    B applies, A's --prune leaves beta's objects: they record alpha and beta, and beta may be another file's now
    (a note says how to retire them if beta is gone). B's apply records beta's objects as B's though their
    content is unchanged; then A's --prune leaves them as another file's, and nothing of either is deleted."""
    client, apply = aws
    whole, a, b = (_settings(tmp_path, name, _clusters(*clusters))
                   for name, clusters in (("whole", ("alpha", "beta")), ("a", ("alpha",)), ("b", ("beta",))))
    published("--config", whole)  # the state its apply leaves, copied after the first
    everything = (_all_alarms(client), _dashboards(client))
    beta = [n for n in everything[0] + everything[1] if "-beta-" in n]
    assert len(beta) == 16
    code, report, stderr = apply("--prune", "--config", a)
    assert code == 0 and not [n for n in report["written"] if "-beta-" in n], stderr
    assert "were published with clusters of which these settings define only some" in stderr
    assert "--prune --removed-cluster beta` retires them" in stderr, stderr
    assert (_all_alarms(client), _dashboards(client)) == everything
    code, report, stderr = apply("--config", b)  # records beta's objects as B's: their content is unchanged
    assert code == 0 and sorted(report["written"]) == sorted(beta), stderr
    tags = client.list_tags_for_resource(ResourceARN=client.describe_alarms(
        AlarmNames=["gpudash-beta-xid-error-critical"])["MetricAlarms"][0]["AlarmArn"])["Tags"]
    assert {t["Key"]: t["Value"] for t in tags}["gpudash:clusters"] == "beta"
    for settings in (a, b):
        code, report, stderr = apply("--prune", "--config", settings)
        assert code == 0 and report["written"] == [], stderr
        assert (_all_alarms(client), _dashboards(client)) == everything
    code, stdout, _ = cli("plan", "--no-grafana", "--config", a)
    assert code == 0 and "delete" not in stdout


def test_removed_cluster_is_a_cluster_these_settings_no_longer_define(aws, tmp_path):
    client, apply = aws
    code, _, stderr = apply("--prune", "--removed-cluster", "alpha", "--config",
                            _settings(tmp_path, "a", _clusters("alpha")))
    assert code == 2 and "--removed-cluster alpha: the settings still define the cluster 'alpha'" in stderr, stderr


def test_a_split_files_prune_leaves_what_the_other_file_recorded_first(aws, published, tmp_path):
    """As above, but B applies first: its objects record beta alone while A's still record alpha and beta (which
    makes beta one of A's earlier clusters); A's --prune still leaves them, and records A's own."""
    client, apply = aws
    whole, a, b = (_settings(tmp_path, name, _clusters(*clusters))
                   for name, clusters in (("whole", ("alpha", "beta")), ("a", ("alpha",)), ("b", ("beta",))))
    published("--config", whole)  # the state its apply leaves, copied after the first
    everything = (_all_alarms(client), _dashboards(client))
    assert apply("--config", b)[0] == 0
    code, report, stderr = apply("--prune", "--config", a)
    assert code == 0 and report["written"] and not [n for n in report["written"] if "-beta-" in n], stderr
    assert (_all_alarms(client), _dashboards(client)) == everything
    code, report, stderr = apply("--prune", "--config", a)
    assert code == 0 and report["written"] == [] and "published by other settings of project 'shop'" in stderr


def test_renamed_from_a_cluster_another_settings_file_published_last_is_refused(aws, published, tmp_path, cli):
    """A file of clusters alpha and beta is split into A (alpha) and B (beta); B applies, so beta's objects record
    beta alone. A, which adds gamma, says beta was renamed: A's own objects record alpha and beta, an earlier list
    of A's that beta's objects do not record, so the flag is refused (exit 2, naming beta's objects and the list
    they record) and nothing is written; before, --prune deleted B's 16 objects. So is --removed-cluster beta
    (it deleted them too)."""
    client, apply = aws
    whole, b, a = (_settings(tmp_path, name, _clusters(*clusters)) for name, clusters in
                   (("whole", ("alpha", "beta")), ("b", ("beta",)), ("a", ("alpha", "gamma"))))
    published("--config", whole)  # the state its apply leaves, copied after the first
    assert apply("--config", b)[0] == 0
    everything = (_all_alarms(client), _dashboards(client))
    code, stdout, stderr = cli("plan", "--no-grafana", "--renamed-from", "beta", "--config", a)
    assert code == 2 and stdout == "", stdout
    code, report, stderr = apply("--prune", "--renamed-from", "beta", "--config", a)
    assert code == 2, (report, stderr)
    assert ("--renamed-from beta: 16 object(s) of project 'shop' recording the cluster 'beta' were last published "
            "by settings with clusters beta, not by an earlier version of these (clusters alpha gamma; their "
            "objects record alpha beta)") in stderr, stderr
    assert "leave out --renamed-from beta" in stderr
    assert (_all_alarms(client), _dashboards(client)) == everything
    # --removed-cluster beta is no more the user's word: beta's objects record beta alone, none of A's clusters
    code, report, stderr = apply("--prune", "--removed-cluster", "beta", "--config", a)
    assert code == 2, (report, stderr)
    assert ("--removed-cluster beta: 16 object(s) of project 'shop' recording the cluster 'beta' were last "
            "published by settings with clusters beta, none of which these settings define") in stderr, stderr
    assert (_all_alarms(client), _dashboards(client)) == everything


def test_two_files_sharing_a_cluster_do_not_take_turns_rewriting_its_objects(aws, tmp_path):
    """Two settings files of the project that both define beta, each with a cluster the other does not (alpha and
    beta, beta and gamma): beta's objects record the file that wrote them first, and later applies of either file
    write nothing, as they did before clusters were re-recorded (each apply used to rewrite beta's 16 objects)."""
    client, apply = aws
    a, b = (_settings(tmp_path, name, _clusters(*clusters)) for name, clusters in (("a", ("alpha", "beta")),
                                                                                  ("b", ("beta", "gamma"))))
    code, report, stderr = apply("--config", a)
    assert code == 0 and len(report["written"]) == 32, stderr
    code, report, stderr = apply("--config", b)  # gamma's objects; beta's are as generated, recording A's list
    assert code == 0 and sorted(report["written"]) == sorted(n for n in _all_alarms(client) + _dashboards(client)
                                                              if "-gamma-" in n), stderr
    for settings in (a, b, a):
        code, report, stderr = apply("--config", settings)
        assert code == 0 and report["written"] == [], (settings, report["written"], stderr)
    # B renames gamma: beta's objects record A's list, which is no earlier list of B's, so they do not refuse it
    gamma = sorted(n for n in _all_alarms(client) + _dashboards(client) if "-gamma-" in n)
    code, report, stderr = apply("--prune", "--renamed-from", "gamma", "--config",
                                 _settings(tmp_path, "b2", _clusters("beta", "delta")))
    assert code == 0 and sorted(n for n in report["written"] if "-gamma-" in n) == gamma, stderr
    assert not [n for n in _all_alarms(client) + _dashboards(client) if "-gamma-" in n]


def test_removed_cluster_takes_the_objects_named_for_it_that_record_no_clusters(aws, published, tmp_path):
    """Cluster `other`'s dashboards and alarms were written by a gpudash that recorded no clusters: nothing records
    `other`, but their names are in the form gpudash gives it, and `--prune --removed-cluster other` prunes them on
    that evidence (it is not refused as a name no object carries), those a longer cluster's name could have given
    too left and named; a typo of it is refused, before any write."""
    client, apply = aws
    _other_written_before_clusters(client, published, tmp_path)
    before = (_dashboards(client), _all_alarms(client))
    code, report, stderr = apply("--prune", "--removed-cluster", "othr", "--allow-mass-prune")
    assert code == 2 and "did you mean 'other'?" in stderr and (_dashboards(client), _all_alarms(client)) == before
    code, report, stderr = apply("--prune", "--removed-cluster", "other", "--allow-mass-prune")
    assert code == 0, stderr
    gone = [n for n in [*before[0], *before[1]] if n.startswith("gpudash-other-")]
    left = [n for n in [*_dashboards(client), *_all_alarms(client)] if n.startswith("gpudash-other-")]
    assert len(left) < len(gone) and sorted(set(gone) - set(left)) == sorted(
        n for n in report["written"] if n.startswith("gpudash-other-")), report
    assert all(name in stderr for name in left), stderr  # (`gpudash-other-by-pod` may be a cluster other-by's)


def test_a_no_op_apply_reads_no_dashboard_of_another_project_sharing_the_prefix(proxied, tmp_path):
    """Project lab publishes 3 clusters, project shop 1, with the default prefixes, in one account: a no-op apply of
    shop writes nothing and reads its own 3 dashboards, not lab's 9 (it read each, to learn from its body's stamp that
    shop did not write it, though only a prune or the flags' records judge a dashboard no longer defined)."""
    from tests.support.cloudwatch_world import fresh

    proxy, client, apply = proxied
    lab = _settings(tmp_path, "lab", "project: lab\nclusters:\n" + "".join(
        f"  - {{name: lab{i}, region: us-east-1}}\n" for i in range(3)))
    shop = _settings(tmp_path, "shop", "project: shop\nclusters:\n  - {name: shop0, region: us-east-1}\n")
    assert apply("--config", lab)[0] == 0 and apply("--config", shop)[0] == 0
    fresh(proxy)
    code, report, stderr = apply("--config", shop)
    assert code == 0 and report["written"] == [], stderr
    read = proxy.operations.count("GetDashboard")
    assert read <= len([n for n in _dashboards(client) if n.startswith("gpudash-shop0-")]), read

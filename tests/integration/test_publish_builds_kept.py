"""The publishing tests' build cache (tests/support/projects.builds_kept, behind the `built_once` fixture): a project
is its settings, counters and definitions, so two projects whose settings read alike but whose counters CSV or
definitions beside them differ each publish their own build (a cache keyed by the settings' text gave the second
the first one's)."""

from __future__ import annotations

from generator import cli_publish
from generator.resources import default_counters
from tests.support.fleet_rule import fleet_rule_definitions, judged_level

FLEET = "gpudash-fleet-fleet-idle-warning"


def _alarms(config) -> dict[str, dict]:
    """{alarm name: its request} of the project's build."""
    _, desired = cli_publish._desired(str(config), None, None, grafana=False)
    return {alarm["Request"]["AlarmName"]: alarm["Request"] for alarm in desired.alarms}


def test_the_same_settings_text_beside_other_definitions_builds_their_alarms(built_once, tmp_path):
    text = "project: fleet\ndefinitions: {alarms: [alarms]}\nclusters:\n  - {name: team-a, region: us-east-1}\n"
    read = {}
    for folder, threshold in (("a", 5), ("b", 10), ("c", 5)):
        (tmp_path / folder).mkdir()
        fleet_rule_definitions(tmp_path / folder / "alarms", threshold)
        (tmp_path / folder / "gpudash.yaml").write_text(text)
        read[folder] = judged_level(_alarms(tmp_path / folder / "gpudash.yaml")[FLEET])
    assert read == {"a": 5, "b": 10, "c": 5}


def test_the_same_settings_text_beside_another_counters_csv_builds_its_alarms(built_once, tmp_path):
    text = "project: fleet\ncounters: counters.csv\nclusters:\n  - {name: team-a, region: us-east-1}\n"
    bundled = default_counters().read_text()
    without_xid = "".join(line for line in bundled.splitlines(keepends=True) if "DCGM_FI_DEV_XID_ERRORS" not in line)
    read = {}
    for folder, csv in (("all", bundled), ("no-xid", without_xid)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "counters.csv").write_text(csv)
        (tmp_path / folder / "gpudash.yaml").write_text(text)
        read[folder] = sorted(name for name in _alarms(tmp_path / folder / "gpudash.yaml") if "xid" in name)
    assert read["all"] and read["no-xid"] == [], read


def test_the_state_published_for_a_project_is_not_another_projects_with_the_same_settings_text(aws, moto, published,
                                                                                              tmp_path):
    # `published` keeps moto's state after a project's first apply by the project: alike text, other definitions
    client, _ = aws
    text = "project: fleet\ndefinitions: {alarms: [alarms]}\nclusters:\n  - {name: team-a, region: us-east-1}\n"
    read = {}
    for folder, threshold in (("a", 5), ("b", 10)):
        (tmp_path / folder).mkdir()
        fleet_rule_definitions(tmp_path / folder / "alarms", threshold)
        (tmp_path / folder / "gpudash.yaml").write_text(text)
        moto.reset()
        published("--config", str(tmp_path / folder / "gpudash.yaml"))
        read[folder] = judged_level(client.describe_alarms(AlarmNames=[FLEET])["MetricAlarms"][0])
    assert read == {"a": 5, "b": 10}

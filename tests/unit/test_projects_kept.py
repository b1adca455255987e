"""The commands' project cache of test_verify (tests/support/projects.projects_kept): a run gets back a project loaded
before only from the same settings, counters CSV and definition files, and still finds, names and fails on its
settings as the command does."""

from __future__ import annotations

import pytest

from generator import project as projects
from generator.errors import InputError
from generator.resources import default_counters
from tests.support.fleet_rule import fleet_rule_definitions
from tests.support.projects import projects_kept

FLEET = "fleet-idle"


@pytest.fixture
def kept(monkeypatch):
    projects_kept(monkeypatch)


def _fleet_threshold(config) -> float:
    (alarm,) = [a for a in projects.load_project(config).alarms if a.id == FLEET]
    return alarm.condition.threshold


def test_a_definition_edited_between_runs_is_read_anew(kept, tmp_path):
    (tmp_path / "gpudash.yaml").write_text("definitions: {alarms: [alarms]}\n")
    read = []
    for threshold in (5, 10, 5):
        fleet_rule_definitions(tmp_path / "alarms", threshold)
        read.append(_fleet_threshold(tmp_path / "gpudash.yaml"))
    assert read == [5, 10, 5]


def test_the_same_settings_text_beside_other_definitions_reads_its_own(kept, tmp_path):
    read = {}
    for folder, threshold in (("a", 5), ("b", 10), ("c", 5)):
        (tmp_path / folder).mkdir()
        fleet_rule_definitions(tmp_path / folder / "alarms", threshold)
        (tmp_path / folder / "gpudash.yaml").write_text("definitions: {alarms: [alarms]}\n")
        read[folder] = _fleet_threshold(tmp_path / folder / "gpudash.yaml")
    assert read == {"a": 5, "b": 10, "c": 5}


def test_the_settings_and_the_counters_csv_edited_between_runs_are_read_anew(kept, tmp_path):
    config = tmp_path / "gpudash.yaml"
    config.write_text("counters: counters.csv\nscrape: {interval: 30s}\n")
    bundled = default_counters().read_text()
    (tmp_path / "counters.csv").write_text(bundled)
    first = projects.load_project(config)
    without_xid = "".join(line for line in bundled.splitlines(keepends=True) if "DCGM_FI_DEV_XID_ERRORS" not in line)
    (tmp_path / "counters.csv").write_text(without_xid)
    second = projects.load_project(config)
    config.write_text("counters: counters.csv\nscrape: {interval: 15s}\n")
    third = projects.load_project(config)
    assert "DCGM_FI_DEV_XID_ERRORS" in first.catalog and "DCGM_FI_DEV_XID_ERRORS" not in second.catalog
    assert (first.settings.scrape.interval, third.settings.scrape.interval) == ("30s", "15s")
    assert projects.load_project(config) is third  # the same input: the project loaded before


def test_each_run_names_the_settings_it_found_and_fails_on_them_every_time(kept, tmp_path, monkeypatch):
    config = tmp_path / "gpudash.yaml"
    config.write_text("scrape: {interval: 30s}\n")
    named = []
    projects.load_project(config, read=lambda settings: named.append(settings.origin))
    monkeypatch.setenv("GPUDASH_CONFIG", str(config))
    projects.load_project(None, read=lambda settings: named.append(settings.origin))
    assert named[0] != named[1] and "GPUDASH_CONFIG" in named[1], named
    config.write_text("scrape: {interval: [30s]}\n")
    for _ in range(2):
        with pytest.raises(InputError):
            projects.load_project(config)


SHARING_SETTINGS = (
    "clusters:\n  - {name: a, region: us-east-1}\n",
    "labels:\n  pod: exported_pod\n  namespace: exported_namespace\n",
    "clusters:\n  - {name: p1, region: us-east-1, prometheus_label: p1}\n"
    "  - {name: p2, region: us-west-2, prometheus_label: lab2}\n",
    "scrape: {interval: 15s}\nclusters:\n  - {name: b, region: eu-west-1}\n",
)


def _built_files(config) -> dict[str, str]:
    from generator.artifacts import build
    from generator.output import encode

    return encode(build(projects.load_project(config)))


def test_projects_sharing_a_catalog_build_what_each_builds_alone(monkeypatch, tmp_path):
    """Projects of different settings over the bundled CSV get one catalog object (catalogs_shared), so the PromQL
    answers one worked out are handed to the next: every file each builds is the file it builds with a catalog of its
    own (no answer of another project's carried over). Built alone first, each in a fresh catalog; then shared, one
    after the other, twice round."""
    from generator import catalog

    configs = []
    for index, text in enumerate(SHARING_SETTINGS):
        (tmp_path / str(index)).mkdir()
        configs.append(tmp_path / str(index) / "gpudash.yaml")
        configs[-1].write_text(text)
    load = catalog.load_counters
    while hasattr(load, "unshared"):  # (tests/unit/conftest.py shares them for every module)
        load = load.unshared
    with monkeypatch.context() as alone_loading:
        alone_loading.setattr(catalog, "load_counters", load)
        alone_loading.setattr(projects, "load_counters", load)
        loaded = [projects.load_project(config) for config in configs]  # (held: ids of the living are their own)
        assert len({id(project.catalog) for project in loaded}) == len(configs)
        alone = [_built_files(config) for config in configs]
    projects_kept(monkeypatch)
    shared = [projects.load_project(config) for config in configs]
    assert len({id(project.catalog) for project in shared}) == 1
    for _ in range(2):
        assert [_built_files(config) for config in configs] == alone

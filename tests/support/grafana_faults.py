"""A Grafana API test server behind a fault proxy, holding a live state gpudash must not harm (dashboards it saved,
one a person edited, one it does not own, a save-as copy, one retired from the build), gpudash's CLI pointed through
the proxy (run), and what holds after a fault: nothing harmed (assert_safe) and a rerun converges
(assert_converges)."""

from __future__ import annotations

import copy
import json

import pytest

from generator.artifacts import build
from generator.desired import desired_from
from generator.markers import GRAFANA_OWNER_TAG
from generator.output import read, settings_record, write
from generator.ownership import grafana_message
from generator.project import load_project
from tests.support.fault_proxy import FaultProxy
from tests.support.grafana_server import ADMIN, GrafanaTestServer


SAVE, SEARCH = r"^/api/dashboards/db$", r"^/api/search$"
CREATED, UPDATED, RETIRED = ("gpudash-all-metrics", "gpudash-by-pod"), "gpudash-overview", "gpudash-retired"
EDITED, FOREIGN, COPY = "gpudash-health", "team-board", "x7Hq2LmZa"


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    """One reviewed build that every push in this module publishes (`push --from`)."""
    project = load_project()
    out = tmp_path_factory.mktemp("build") / "build"
    write(out, build(project), settings_record(project.settings))
    return out


@pytest.fixture(scope="module")
def desired(build_dir):
    return desired_from(read(build_dir)).grafana


@pytest.fixture
def grafana(reference, desired):
    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as server:
        live_state(server, desired)
        yield server
        assert server.state.spec_errors == []


@pytest.fixture
def proxy(grafana):
    with FaultProxy(grafana.url) as server:
        yield server


def gpudash_saved(server: GrafanaTestServer, model: dict, folder: str = "gpudash") -> None:
    server._store(model["uid"], model, folder, grafana_message(model, "abc123 earlier commit"), "gpudash-sa")


def live_state(server: GrafanaTestServer, desired: dict) -> None:
    state = server.state
    for uid, title in (("gpudash", "GPU monitoring"), ("team", "Team")):
        state.folders[uid] = {"id": state.next_id, "uid": uid, "title": title}
        state.next_id += 1
    gpudash_saved(server, {**desired[UPDATED], "refresh": "5m"})  # an older build's version
    gpudash_saved(server, desired[EDITED])
    server.edit_in_ui(EDITED, lambda d: d.update(refresh="10s"))  # alice's change
    gpudash_saved(server, {"uid": RETIRED, "title": "Retired board", "tags": [GRAFANA_OWNER_TAG], "panels": []})
    server._store(FOREIGN, {"title": "Team board", "tags": ["team"], "panels": []}, "gpudash", "", "bob")
    by_pod = copy.deepcopy(desired["gpudash-by-pod"])
    server._store(COPY, {**by_pod, "uid": COPY, "title": "GPU usage by pod (mine)"}, "team", "", "carol")


def snapshot(server: GrafanaTestServer, uid: str) -> str:
    return json.dumps(server.state.dashboards[uid], sort_keys=True)


_KEPT: dict = {}  # the module build's exact files -> what `push` made of them with the bundled settings


@pytest.fixture
def run(cli, proxy, build_dir, monkeypatch):
    import click

    from generator import cli_publish
    from generator.settings import discover

    make = cli_publish._desired

    def desired(config, csv, from_dir, grafana=True):
        """Every push here publishes the module's build with the bundled settings: the settings are loaded and
        the build read and checked once for its exact files (a folder changed in any byte is read anew); any
        other input is read at every call, as the command does."""
        if config or csv or from_dir != str(build_dir) or discover(None).path is not None or not grafana:
            return make(config, csv, from_dir, grafana=grafana)
        files = tuple(sorted((str(p.relative_to(build_dir)), p.read_bytes()) for p in build_dir.rglob("*")
                             if p.is_file()))
        if _KEPT.get("files") != files:
            _KEPT.clear()
            _KEPT["desired"] = make(config, csv, from_dir)  # (an error raised here keeps nothing)
            _KEPT["files"] = files
        else:
            click.echo(f"settings: {_KEPT['desired'][0].settings.origin}", err=True)  # as the command says
        return _KEPT["desired"]

    monkeypatch.setattr(cli_publish, "_desired", desired)

    def push(*args: str):
        env = {"GRAFANA_URL": proxy.url, "GRAFANA_TOKEN": ADMIN}
        code, stdout, stderr = cli("push", "--skip-verify", "--prune", "--from", str(build_dir), "--output", "json",
                                   *args, env=env)
        return code, (json.loads(stdout) if stdout.strip() else {}), stderr
    return push


def content_of(entry: dict) -> dict:
    return {k: v for k, v in entry["dashboard"].items() if k not in ("id", "version")}


def assert_safe(grafana, before: dict[str, str], edited: dict[str, str]) -> None:
    """Nothing foreign changed; every person's edit is still there."""
    for uid in (FOREIGN, COPY):
        assert snapshot(grafana, uid) == before[uid], f"{uid} was changed"
    for uid, refresh in edited.items():
        assert grafana.state.dashboards[uid]["dashboard"]["refresh"] == refresh, f"the edit of {uid} was lost"


def assert_converges(grafana, proxy, run, desired, before, edited) -> None:
    proxy.clear()
    code, report, stderr = run()
    assert code == 1, stderr  # only the edited dashboards are refused
    assert sorted(report["refused"]) == sorted(edited)
    for uid in {*CREATED, UPDATED} - set(edited):
        assert content_of(grafana.state.dashboards[uid]) == {k: v for k, v in desired[uid].items() if k != "id"}
    assert RETIRED not in grafana.state.dashboards
    assert_safe(grafana, before, edited)
    writes = len(grafana.writes())
    code, report, _ = run()
    assert code == 1 and report["written"] == [] and len(grafana.writes()) == writes  # the third run writes nothing

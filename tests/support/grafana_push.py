"""A Grafana API test server (grafana) and gpudash's CLI pointed at it (run), a push with its outcome as JSON
(push_json), what each dashboard shows (dashboard_contents), and a team's settings files sharing the default folder
(team_settings) with what a push of them wrote (pushed_written)."""

from __future__ import annotations

import json

import pytest

from generator.resources import bundled
from tests.support.grafana_server import ADMIN, GrafanaTestServer
from tests.support.projects import builds_kept, projects_kept


@pytest.fixture
def grafana(reference):
    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as server:
        yield server
        assert server.state.spec_errors == []  # every request and response followed Grafana's spec


@pytest.fixture
def run(cli, grafana, defaults_built_once, monkeypatch):
    """gpudash's CLI pointed at the test server (or `url`), its builds and projects kept by value (a push of the same
    settings, counters and definitions gets the project loaded and the build made before: builds_kept,
    projects_kept)."""
    builds_kept(monkeypatch)
    projects_kept(monkeypatch)

    def invoke(*args, token=ADMIN, url=None):
        env = {"GRAFANA_URL": url or grafana.url, "GRAFANA_TOKEN": token}
        return cli(*args, env=env)
    return invoke


def push_json(run, *args, **kwargs):
    return run("push", "--skip-verify", "--output", "json", *args, **kwargs)


DASHBOARDS_DIR = bundled("dashboards")


TEAM_DASHBOARD = ("from generator.model import Dashboard, Row\nfrom generator.panels import per_pod\n"
                  "dashboard = Dashboard('team-a-training', 'Team A training GPUs', "
                  "[Row('r', [per_pod('DCGM_FI_DEV_GPU_UTIL', 'Util')])])\n")


def dashboard_contents(grafana) -> dict[str, str]:
    """What each dashboard shows: its model less the id and version Grafana sets at every save (a save that records
    a claim changes only those)."""
    return {uid: json.dumps({k: v for k, v in entry["dashboard"].items() if k not in ("id", "version")},
                            sort_keys=True) for uid, entry in grafana.state.dashboards.items()}


TEAM = "gpudash-team-a-training"


def team_settings(tmp_path, name: str, clusters, team: bool = True, bundled: bool = True, project: str = "shop",
                  more: str = "") -> str:
    """A settings file of `project` in a folder of its own, grafana: at its defaults (folder and uid prefix gpudash):
    the bundled dashboards (unless not `bundled`) and, with `team`, the team's own, the same in every file."""
    folder = tmp_path / name
    (folder / "dash").mkdir(parents=True)
    if team:
        (folder / "dash" / "team_a.py").write_text(TEAM_DASHBOARD)
    text = f"project: {project}\nclusters:\n" + "".join(
        f"  - {{name: {c}, region: us-east-1, prometheus_label: {c}}}\n" for c in clusters)
    dirs = ([str(DASHBOARDS_DIR)] if bundled else []) + (["dash"] if team or not bundled else [])
    (folder / "gpudash.yaml").write_text(text + f"definitions:\n  dashboards: [{', '.join(dirs)}]\n" + more)
    return str(folder / "gpudash.yaml")


def built_uids(config: str, *, leave: tuple[str, ...] = ()) -> list[str]:
    """The uids of the dashboards the settings file `config` builds, sorted, but those in `leave`: a dashboard too
    large for one sidecar ConfigMap (a shared Prometheus' all-metrics, near the limit) is cut into parts, each a
    dashboard of its own (dashboard_parts), so no test of whole pushes names a fixed list."""
    from pathlib import Path

    from generator.artifacts import grafana_dashboards
    from generator.project import load_project

    return sorted(d.uid for d in grafana_dashboards(load_project(Path(config))) if d.uid not in leave)


def last_message(grafana, uid: str = TEAM) -> str:
    return grafana.state.dashboards[uid]["versions"][-1]["message"]


def pushed_written(run, config: str, *flags: str) -> list[str]:
    code, stdout, stderr = push_json(run, "--config", config, *flags)
    assert code == 0, stderr
    return sorted(json.loads(stdout)["written"])


def team_saved(client, folder: dict[str, str], model: dict) -> None:
    """The team dashboard `model` pushed by gpudash through `client` (the plan and push of one dashboard)."""
    from generator.targets import grafana_sync

    grafana_sync.push(client, grafana_sync.plan(client, {TEAM: model}, folder, uid_prefix="gpudash"),
                      {TEAM: model}, folder, "", uid_prefix="gpudash", force=False, prune=False, dry_run=False)


def forced_prune(client, changes, folder: dict[str, str]):
    """The outcomes of pushing the planned `changes` with --prune --force (no definitions left)."""
    from generator.targets import grafana_sync

    return grafana_sync.push(client, changes, {}, folder, "", uid_prefix="gpudash", force=True, prune=True,
                             dry_run=False, allow_mass_prune=True)


def retired_team_dashboard(grafana, run, tmp_path) -> tuple[str, int]:
    """The team dashboard saved by settings A, then retired from them: (the settings that prune it, its version)."""
    pushed_written(run, team_settings(tmp_path, "a", ["alpha"]))
    return team_settings(tmp_path, "a2", ["alpha"], team=False), grafana.state.dashboards[TEAM]["dashboard"]["version"]

"""Publishing from a project's subfolder (its definitions, its build): no ./gpudash.yaml there, so the command reads
the bundled defaults (a cluster gpu-cluster in us-east-1), another fleet's. push and apply refuse to write them where
a gpudash.yaml above says this is a project; the project's dashboards stay as it pushed them. A dry run, diff and
generate still go on (they write nothing remote), saying which settings they read."""

from __future__ import annotations

import json

from tests.support.grafana_push import (dashboard_contents, grafana, push_json, run,  # noqa: F401 (fixtures)
                                        team_settings)


def _project_pushed(grafana, run, tmp_path, monkeypatch):
    """A project (gpudash.yaml, its definitions) pushed from its own folder; the test then stands in its subfolder."""
    config = team_settings(tmp_path, "shop", ["train-east"])
    project = tmp_path / "shop"
    monkeypatch.chdir(project)
    code, stdout, stderr = push_json(run, "--force")
    assert code == 0 and json.loads(stdout)["written"], stderr
    (project / "dash" / "deeper").mkdir()
    monkeypatch.chdir(project / "dash" / "deeper")
    return config, dashboard_contents(grafana)


def test_push_from_a_projects_subfolder_is_refused_and_writes_nothing(grafana, run, tmp_path, monkeypatch):
    _, before = _project_pushed(grafana, run, tmp_path, monkeypatch)
    code, stdout, stderr = push_json(run, "--force")
    assert code == 2, (code, stdout, stderr)
    assert "would publish the bundled defaults, and ../../gpudash.yaml (a project's settings, in a folder above) " \
           "is not read" in stderr and "pass --config ../../gpudash.yaml, or run from its folder" in stderr, stderr
    assert "Traceback" not in stderr
    assert dashboard_contents(grafana) == before


def test_a_dry_run_from_a_subfolder_goes_on_and_writes_nothing(grafana, run, tmp_path, monkeypatch):
    _, before = _project_pushed(grafana, run, tmp_path, monkeypatch)
    code, _, stderr = push_json(run, "--dry-run")
    assert code in (0, 1), stderr
    assert "../../gpudash.yaml, in a folder above, is not read" in stderr
    assert dashboard_contents(grafana) == before


def test_push_with_config_from_the_subfolder_reads_the_project(grafana, run, tmp_path, monkeypatch):
    _, before = _project_pushed(grafana, run, tmp_path, monkeypatch)
    code, stdout, stderr = push_json(run, "--config", "../../gpudash.yaml")
    assert code == 0 and json.loads(stdout)["written"] == [], (stdout, stderr)
    assert dashboard_contents(grafana) == before


def test_apply_from_a_projects_subfolder_is_refused_before_reading_aws(cli, tmp_path, monkeypatch):
    """No AWS credentials, no endpoint: the refusal comes first, exit 2, naming the settings above."""
    (tmp_path / "gpudash.yaml").write_text("project: shop\nclusters:\n  - {name: train-east, region: us-east-1}\n")
    (tmp_path / "build").mkdir()
    monkeypatch.chdir(tmp_path / "build")
    code, stdout, stderr = cli("apply", "--skip-verify", env={"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""})
    assert code == 2, (code, stdout, stderr)
    assert "pass --config ../gpudash.yaml, or run from its folder" in stderr and "Traceback" not in stderr, stderr


def test_a_stray_file_in_the_home_folder_or_above_the_repository_is_no_project(cli, tmp_path, monkeypatch):
    """A gpudash.yaml left in the home folder, or above the repository the command runs in, is not a project's:
    nothing refuses the bundled defaults for it (the command goes on to ask for Grafana's URL)."""
    from generator.settings import settings_above

    home, repository = tmp_path / "home", tmp_path / "home" / "src" / "repo"
    (repository / ".git").mkdir(parents=True)
    (repository / "dash").mkdir()
    monkeypatch.setenv("HOME", str(home))
    (home / "gpudash.yaml").write_text("clusters: []\n")
    (home / "src" / "gpudash.yaml").write_text("clusters: []\n")
    assert settings_above(repository / "dash") is None
    assert settings_above(home / "src" / "elsewhere") == "../gpudash.yaml"  # (no repository: up to the home folder)
    assert settings_above(home / "elsewhere") is None
    (repository / "gpudash.yaml").write_text("clusters: []\n")
    assert settings_above(repository / "dash") == "../gpudash.yaml"
    (home / "elsewhere").mkdir()
    monkeypatch.chdir(home / "elsewhere")
    code, _, stderr = cli("push", "--skip-verify", env={"GRAFANA_URL": "", "GRAFANA_TOKEN": ""})
    assert code == 2 and "GRAFANA_URL is not set" in stderr, stderr


def test_a_home_folder_reached_through_a_symbolic_link_still_ends_the_look(cli, tmp_path, monkeypatch):
    """HOME may name the home folder through a symbolic link (/home a link to /var/home on Fedora's atomic desktops):
    the current folder is the real path, so the home folder is met as its real path, and a stray gpudash.yaml there is
    still no project's (push goes on to ask for Grafana's URL)."""
    from generator.settings import settings_above

    real, link = tmp_path / "var" / "home" / "user", tmp_path / "home"
    (real / "elsewhere").mkdir(parents=True)
    link.symlink_to(real)
    (real / "gpudash.yaml").write_text("clusters: []\n")
    monkeypatch.setenv("HOME", str(link))
    assert settings_above(real / "elsewhere") is None
    monkeypatch.chdir(link / "elsewhere")
    code, _, stderr = cli("push", "--skip-verify", env={"GRAFANA_URL": "", "GRAFANA_TOKEN": ""})
    assert code == 2 and "GRAFANA_URL is not set" in stderr, stderr


def test_push_of_a_build_from_a_projects_subfolder_is_refused_as_well(grafana, run, tmp_path, monkeypatch):
    """A build generated in the subfolder (of the bundled defaults, as the settings line said) and pushed with --from
    is refused as a push of the definitions is: the build is the bundled defaults', made and read where the
    project's settings are not."""
    _, before = _project_pushed(grafana, run, tmp_path, monkeypatch)
    code, _, stderr = run("generate", "--out", "build")
    assert code == 0, stderr
    code, stdout, stderr = push_json(run, "--from", "build", "--force")
    assert code == 2 and "would publish the bundled defaults, and ../../gpudash.yaml" in stderr, (code, stdout, stderr)
    assert dashboard_contents(grafana) == before

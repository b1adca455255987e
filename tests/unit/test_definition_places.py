"""Where a message says a definition is: a path a person can open, telling one definitions folder from another."""

from __future__ import annotations

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support.alarm_requests import alarm_requests

DASHBOARD = """from generator.model import Dashboard, Row
from generator.panels import per_pod


def dashboards(ctx):
    yield Dashboard(id="{id}", title="{id}", rows=[Row("GPU", [per_pod("{field}", "Utilization")])])
"""


def _generated_by_two_teams(tmp_path, monkeypatch, cli, name: str, ml: str, infer: str) -> tuple[int, str]:
    """generate's exit code and stderr where teams/ml/dashboards and teams/infer/dashboards each hold `name`."""
    for team, text in (("ml", ml), ("infer", infer)):
        folder = tmp_path / "teams" / team / "dashboards"
        folder.mkdir(parents=True)
        (folder / name).write_text(text)
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [teams/ml/dashboards, teams/infer/dashboards]\n")
    monkeypatch.chdir(tmp_path)
    code, _, stderr = cli("generate", "--out", str(tmp_path / "build"), env={"GPUDASH_CONFIG": None})
    return code, stderr


def test_two_folders_of_one_name_are_told_apart(tmp_path, monkeypatch, cli):
    code, stderr = _generated_by_two_teams(tmp_path, monkeypatch, cli, "gpu.py",
                                           DASHBOARD.format(id="ml", field="DCGM_FI_DEV_GPU_UTIL"),
                                           DASHBOARD.format(id="infer", field="DCGM_FI_DEV_GPU_UTILL"))
    assert code == 2 and "unknown metric DCGM_FI_DEV_GPU_UTILL" in stderr
    assert "error: teams/infer/dashboards/gpu.py:6: " in stderr, stderr


ALARM = """from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("{id}-hot", "Hot", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), ">", 85))
"""


def test_an_alarm_description_names_its_file_apart_and_one_folder_of_a_name_keeps_its_last_name(tmp_path):
    """What the build records of a definition's place says which of two folders of one name holds it; a folder whose
    name no other definitions folder shares is named by it alone, wherever it lies."""
    for team in ("ml", "infer"):
        (tmp_path / "teams" / team / "alarms").mkdir(parents=True)
        (tmp_path / "teams" / team / "alarms" / "hot.py").write_text(ALARM.format(id=team))
    (tmp_path / "teams" / "ml" / "boards").mkdir()
    (tmp_path / "teams" / "ml" / "boards" / "gpu.py").write_text(DASHBOARD.format(id="ml",
                                                                                  field="DCGM_FI_DEV_GPU_UTIL"))
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [teams/ml/boards]\n"
                                           "  alarms: [teams/ml/alarms, teams/infer/alarms]\n")
    project = load_project(tmp_path / "gpudash.yaml")
    requests = alarm_requests(encode(build(project)))
    for team in ("ml", "infer"):
        said = requests[f"{team}-hot"]["AlarmDescription"]
        assert f"(teams/{team}/alarms/hot.py, rule {team}-hot)" in said, said
    assert project.dashboards[0].defined_at == "boards/gpu.py:6"


def test_a_bundled_folder_of_a_users_folders_name_keeps_its_own_and_the_users_is_told_apart(tmp_path):
    """A dashboards folder named `alarms` beside the bundled alarms: the user's files are named by their path, the
    bundled ones keep `alarms/gpu_alarms.py` (their path is where gpudash is installed, which a build must not hold)."""
    (tmp_path / "teams" / "alarms").mkdir(parents=True)
    (tmp_path / "teams" / "alarms" / "gpu.py").write_text(DASHBOARD.format(id="ml", field="DCGM_FI_DEV_GPU_UTIL"))
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [teams/alarms]\n")
    project = load_project(tmp_path / "gpudash.yaml")
    assert project.dashboards[0].defined_at == "teams/alarms/gpu.py:6"
    assert {alarm.defined_at.rsplit(":", 1)[0] for alarm in project.alarms} == {"alarms/gpu_alarms.py"}


def test_a_project_loaded_after_another_leaves_the_first_ones_places_as_they_were(tmp_path):
    """Two definitions folders of one name are named apart in what a project's build records however many projects
    the process loads after it: a build is the same whatever was loaded before it."""
    first, second = tmp_path / "first", tmp_path / "second"
    for team in ("train", "serve"):
        (first / "teams" / team / "alarms").mkdir(parents=True)
        (first / "teams" / team / "alarms" / "hot.py").write_text(ALARM.format(id=team))
    (first / "gpudash.yaml").write_text("definitions:\n  alarms: [teams/train/alarms, teams/serve/alarms]\n")
    second.mkdir()
    (second / "gpudash.yaml").write_text("definitions: {}\n")
    project = load_project(first / "gpudash.yaml")
    load_project(second / "gpudash.yaml")
    requests = alarm_requests(encode(build(project)))
    for team in ("train", "serve"):
        said = requests[f"{team}-hot"]["AlarmDescription"]
        assert f"(teams/{team}/alarms/hot.py, rule {team}-hot)" in said, said


GRAFANALIB = """from grafanalib.core import Dashboard

dashboard = Dashboard(title="Legacy {team}", uid="legacy-{team}", panels=[{panel}])
"""


def test_a_grafanalib_dashboards_place_is_told_apart_where_it_is_written(tmp_path, monkeypatch, cli):
    """A grafanalib dashboard is written as JSON after the definitions have loaded: a mistake found then names its
    file apart from the other folder of that name, as one found while loading does."""
    code, stderr = _generated_by_two_teams(tmp_path, monkeypatch, cli, "legacy.py",
                                           GRAFANALIB.format(team="ml", panel=""),
                                           GRAFANALIB.format(team="infer", panel="object()"))
    assert code == 2 and "the grafanalib dashboard cannot be written as JSON" in stderr, stderr
    assert "error: teams/infer/dashboards/legacy.py:3: " in stderr, stderr

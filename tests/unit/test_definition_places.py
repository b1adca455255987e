"""Where a message says a definition is: a path a person can open, telling one definitions folder from another."""

from __future__ import annotations

import pytest

DASHBOARD = """from generator.model import Dashboard, Row
from generator.panels import per_pod


def dashboards(ctx):
    yield Dashboard(id="{id}", title="{id}", rows=[Row("GPU", [per_pod("{field}", "Utilization")])])
"""


@pytest.mark.xfail(strict=True, reason="a definition is named by its folder's last name and its file name alone, so "
                                       "two definitions folders of one name (teams/ml/dashboards beside "
                                       "teams/infer/dashboards) give one place for both: a message does not say "
                                       "which file to fix")
def test_two_folders_of_one_name_are_told_apart(tmp_path, monkeypatch, cli):
    for team, field in (("ml", "DCGM_FI_DEV_GPU_UTIL"), ("infer", "DCGM_FI_DEV_GPU_UTILL")):
        folder = tmp_path / "teams" / team / "dashboards"
        folder.mkdir(parents=True)
        (folder / "gpu.py").write_text(DASHBOARD.format(id=team, field=field))
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [teams/ml/dashboards, teams/infer/dashboards]\n")
    monkeypatch.chdir(tmp_path)

    code, _, stderr = cli("generate", "--out", str(tmp_path / "build"), env={"GPUDASH_CONFIG": None})

    assert code == 2 and "unknown metric DCGM_FI_DEV_GPU_UTILL" in stderr
    assert "error: teams/infer/dashboards/gpu.py:6: " in stderr, stderr

"""An installed gpudash finds its bundled dashboards, schemas and defaults outside the checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO


def test_installed_package_generates_outside_the_repository(tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(REPO)], check=True, capture_output=True)
    assert (target / "generator/_bundled/dashboards/gpu_by_pod.py").is_file()
    assert (target / "generator/_bundled/schemas/config.schema.json").is_file()
    assert (target / "generator/defaults/dcgm-counters.csv").is_file()
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run([sys.executable, "-c", "from generator.cli import main; main()", "generate",
                             "--out", "out", "--output", "json"],
                            cwd=work, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "grafana/gpudash-by-pod.json" in json.loads(result.stdout)["files"]
    probe = subprocess.run([sys.executable, "-c", "import generator; print(generator.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True)
    assert probe.stdout.startswith(str(target))  # really the installed copy, not the checkout

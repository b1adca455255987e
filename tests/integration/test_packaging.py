"""An installed gpudash finds its bundled dashboards, schemas and defaults outside the checkout.

The package is built from a copy of the sources: building in the checkout would leave build/lib
and build/bdist.* in the user's build/ folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

SOURCES = ("pyproject.toml", "README.md", "generator", "dashboards", "alarms", "schemas")


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()} \
        if folder.is_dir() else {}


@pytest.fixture
def checkout_untouched():
    """The checkout's build/ and egg-info are the same after the test as before it."""
    watched = [REPO / "build", *REPO.glob("*.egg-info")]
    before = {str(folder): _tree(folder) for folder in watched}
    yield
    assert {str(folder): _tree(folder) for folder in watched} == before
    assert not (REPO / "build" / "lib").exists() and not list((REPO / "build").glob("bdist.*"))


def test_installed_package_generates_outside_the_repository(tmp_path, checkout_untouched):
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy2
        copy(REPO / name, source / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                            if (REPO / name).is_dir() else {}))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(source)], check=True, capture_output=True, cwd=tmp_path)
    assert (target / "generator/_bundled/dashboards/gpu_by_pod.py").is_file()
    assert (target / "generator/_bundled/schemas/config.schema.json").is_file()
    assert (target / "generator/defaults/dcgm-counters.csv").is_file()
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run([sys.executable, "-c", "from generator.cli import run; run()", "generate",
                             "--out", "out", "--output", "json"],
                            cwd=work, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "grafana/gpudash-by-pod.json" in json.loads(result.stdout)["files"]
    probe = subprocess.run([sys.executable, "-c", "import generator; print(generator.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True)
    assert probe.stdout.startswith(str(target))  # really the installed copy, not the checkout


@pytest.mark.parametrize("script", ["verify.py"])  # publish.py still prints its CloudWatch figures
def test_benchmarks_without_reference_data_skip_with_a_message(script, tmp_path):
    env = {**os.environ, "GPUDASH_REFERENCE": str(tmp_path / "absent")}
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / script)], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"skipped benchmarks/{script}: reference data not found")
    assert "Traceback" not in result.stderr

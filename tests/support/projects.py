"""Projects the test modules load: the bundled one, one whose counters CSV is the bundled CSV with lines added, or one
a module writes into a folder of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from generator.project import load_project
from generator.resources import default_counters


def counters_with(folder: Path, added: str = "") -> Path:
    """The bundled counters CSV with the lines `added` after it, written as `folder`/counters.csv."""
    csv = folder / "counters.csv"
    csv.write_text(default_counters().read_text() + added)
    return csv


def project_fixture(added_counters: str | None = None, write: Callable[[Path], Path] | None = None):
    """A module fixture (assign it to the module-level name `project`), the project loaded once for the module: the
    bundled one; with `added_counters`, the bundled settings over the bundled CSV with those lines added; with `write`,
    the gpudash.yaml that `write(folder)` writes into a new folder."""
    @pytest.fixture(scope="module")
    def project(tmp_path_factory):
        if write is not None:
            return load_project(write(tmp_path_factory.mktemp("project")))
        if added_counters is not None:
            return load_project(None, counters_with(tmp_path_factory.mktemp("counters"), added_counters))
        return load_project()
    return project

"""Shared fixtures: the reference data folder, the CLI runner, small projects on disk."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main

REPO = Path(__file__).resolve().parent.parent
# CI lays shared/ beside the clone; GPUDASH_REFERENCE points elsewhere for other checkouts.
REFERENCE = Path(os.environ.get("GPUDASH_REFERENCE", REPO.parent / "shared" / "reference"))


@pytest.fixture(autouse=True)
def away_from_the_checkout(tmp_path_factory, monkeypatch):
    """Every test runs in a scratch folder with no GPUDASH_CONFIG: a gpudash.yaml or build/ that the
    user keeps in the checkout is neither read nor written by the tests."""
    monkeypatch.delenv("GPUDASH_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="session")
def reference() -> Path:
    if not REFERENCE.is_dir():
        pytest.skip(f"reference data not found at {REFERENCE} (it sits beside the repository in CI)")
    return REFERENCE


@pytest.fixture
def cli():
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""

    def invoke(*args: str, env: dict[str, str] | None = None):
        result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return invoke


@pytest.fixture
def project_dir(tmp_path: Path):
    """A user project: gpudash.yaml plus a dashboards/ folder with the given files."""

    def make(config: str = "", dashboards: dict[str, str] | None = None, csv: str | None = None) -> Path:
        lines = [textwrap.dedent(config)]
        if dashboards is not None:
            folder = tmp_path / "dashboards"
            folder.mkdir(exist_ok=True)
            for name, text in dashboards.items():
                (folder / name).write_text(textwrap.dedent(text))
            lines.append("definitions:\n  dashboards: [dashboards]\n")
        if csv is not None:
            (tmp_path / "counters.csv").write_text(textwrap.dedent(csv))
            lines.append("counters: counters.csv\n")
        (tmp_path / "gpudash.yaml").write_text("\n".join(lines))
        return tmp_path / "gpudash.yaml"

    return make


@pytest.fixture(autouse=True)
def deadline_clock(monkeypatch):
    """Publishing's backoff and Retry-After waits advance a fake clock: no test sleeps for them."""
    from generator.clients import deadline
    from tests.support.clock import FakeClock

    fake = FakeClock()
    monkeypatch.setattr(deadline, "CLOCK", fake)
    return fake


@pytest.fixture(autouse=True, scope="session")
def botocore_models_read_once():
    """Every boto3 session the CLI opens in-process reads botocore's service models (JSON, about 50 ms
    of CPU per client) from one shared loader instead of parsing them again: the models never change."""
    try:
        import botocore.loaders
        import botocore.session
    except ImportError:
        yield
        return
    original = botocore.session.create_loader
    loaders: dict = {}

    def create_loader(search_path_string=None):
        if search_path_string not in loaders:
            loaders[search_path_string] = original(search_path_string)
        return loaders[search_path_string]

    botocore.session.create_loader = create_loader
    yield
    botocore.session.create_loader = original

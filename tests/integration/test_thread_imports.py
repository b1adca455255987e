"""Publishing's threads (each Region's, the reads', each remote call's under the deadline) import nothing: what they
use is imported before they start. The command runs in a fresh interpreter, which imports as a user's run does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.cloudwatch_world import moto  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
TWO_REGIONS = "project: test\nclusters:\n  - {name: east, region: us-east-1}\n  - {name: west, region: eu-west-1}\n"


def _first_on_a_thread(tmp_path: Path, *args: str, **env: str) -> list[str]:
    (tmp_path / "gpudash.yaml").write_text(TWO_REGIONS)
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "thread_imports.py"), *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "GPUDASH_CONFIG": str(tmp_path / "gpudash.yaml"),
                               **env})
    lines = done.stdout.splitlines()
    start = len(lines) - 1 - lines[::-1].index("exit")
    assert lines[start + 1] == "0", done.stderr
    return lines[start + 2:]


def test_an_apply_over_two_regions_imports_nothing_on_its_threads(tmp_path, moto):  # noqa: F811
    """Both Regions' calls start at once: the socket layer's idna codec, looked up at each connection, was first
    imported on a remote call's thread."""
    assert _first_on_a_thread(tmp_path, "apply", "--skip-verify", AWS_ENDPOINT_URL=moto.url, AWS_ACCESS_KEY_ID="x",
                              AWS_SECRET_ACCESS_KEY="x") == []



def test_an_apply_answered_by_the_tests_moto_in_process_imports_nothing_on_its_threads(tmp_path):
    """The tests' moto answers in the caller's thread: the first call's thread made moto's applications, importing
    moto.cloudwatch and, for the tagging API, moto.s3 and moto.iam, while another thread of the test process could
    be importing what they import."""
    assert _first_on_a_thread(tmp_path, "--in-process-moto", "apply", "--skip-verify") == []

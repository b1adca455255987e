"""The Prometheus `gpudash preview` starts is told from another process answering on its port by its storage folder,
read from /api/v1/status/flags: any answer there that is not that Prometheus' is "address already in use by another
process", never an internal error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from generator.errors import GpudashError
from generator.preview.sample import _wait_ready
from tests.support.canned_server import CannedServer


@pytest.mark.parametrize("flags", ['{"status": "success", "data": {"storage.tsdb.path": "/elsewhere"}}',
                                   "[" * 100_000 + "]" * 100_000, '{"data": {"storage.tsdb.path": NaN}}'],
                         ids=["another-prometheus", "nested-100000-deep", "a-nan-token"])
def test_another_process_answering_on_the_port_is_said_so(tmp_path, flags):
    """Another process answers ready on the port preview chose, and its flags with something else than this
    Prometheus' storage: another Prometheus's folder, or a text no JSON parser reads (nested 100,000 deep: read with
    json.loads catching ValueError alone, its RecursionError ended preview as "a bug in gpudash")."""
    with CannedServer("{}") as other:
        other.routes["/api/v1/status/flags"] = (200, flags)
        process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            with pytest.raises(GpudashError, match="address already in use by another process answering there"):
                _wait_ready(f"http://{other.address}", process, tmp_path / "log", 10.0, "preview's Prometheus",
                            storage=str(tmp_path / "data"))
        finally:
            process.kill()
            process.wait()

"""verify's deadline in tests. `gpudash verify` gives the whole run 10 s by default, and in a test that run
includes importing the Kubernetes client; on the CI machine (2 cores, 5 test workers, other suites) a whole
group then reads "no answer within 10 s" instead of the check the test is about. Tests that are not about the
deadline give it HANG_DETECTOR: long enough for a loaded machine, short enough to end a hung run. The deadline
itself is proven by the tests that pass their own --timeout."""

from __future__ import annotations

import json

HANG_DETECTOR = 120.0  # seconds; verify accepts up to 300


def deadline(args) -> tuple[str, ...]:
    """--timeout HANG_DETECTOR, unless `args` set their own --timeout."""
    return () if "--timeout" in args else ("--timeout", f"{HANG_DETECTOR:g}")


def verify_json(cli, *args):
    """`gpudash verify --output json` with `args`: its exit code and its checks by (group, name)."""
    code, stdout, stderr = cli("verify", "--output", "json", *deadline(args), *args)
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert stdout.startswith("{"), stderr
    return code, {(c["group"], c["name"]): c for c in json.loads(stdout)["checks"]}

"""verify's deadline in tests. `gpudash verify` gives the whole run 10 s by default, and in a test that run
includes importing the Kubernetes client; on the CI machine (2 cores, 5 test workers, other suites) a whole
group then reads "no answer within 10 s" instead of the check the test is about. Tests that are not about the
deadline give it HANG_DETECTOR: long enough for a loaded machine, short enough to end a hung run. The deadline
itself is proven by the tests that pass their own --timeout."""

from __future__ import annotations

HANG_DETECTOR = 120.0  # seconds; verify accepts up to 300


def deadline(args) -> tuple[str, ...]:
    """--timeout HANG_DETECTOR, unless `args` set their own --timeout."""
    return () if "--timeout" in args else ("--timeout", f"{HANG_DETECTOR:g}")

"""The reference data some benchmarks replay; without it they are skipped with a message."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = Path(os.environ.get("GPUDASH_REFERENCE", ROOT.parent / "shared" / "reference"))


def reference_or_skip(script: str, *needed: str) -> Path:
    """The reference folder, or exit 0 with one line saying what was skipped and why."""
    missing = [name for name in needed if not (REFERENCE / name).exists()]
    if missing:
        print(f"skipped {script}: reference data not found ({REFERENCE / missing[0]}); "
              f"set GPUDASH_REFERENCE to the folder that holds it")
        sys.exit(0)
    return REFERENCE

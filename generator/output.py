"""The build directory: written whole or not at all, with a manifest of sha256 sums.

A run writes into a fresh sibling directory and swaps it into place, so a
failed run leaves the previous build untouched. A directory that holds files
but no gpudash manifest is not gpudash's, and is never replaced.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import __version__
from .errors import OutputError
from .serialize import to_json

MANIFEST = "manifest.json"


def with_manifest(files: dict[str, bytes]) -> dict[str, bytes]:
    manifest = {
        "generator": f"gpudash {__version__}",
        "files": {path: hashlib.sha256(data).hexdigest() for path, data in sorted(files.items())},
    }
    return {**files, MANIFEST: to_json(manifest)}


def _owned(out: Path) -> bool:
    return not out.exists() or (out.is_dir() and (not any(out.iterdir()) or (out / MANIFEST).is_file()))


def write(out: Path, files: dict[str, bytes]) -> None:
    """Replace `out` with exactly `files` (plus the manifest), atomically."""
    out = out.absolute()
    if out.exists() and not out.is_dir():
        raise OutputError("the output path is a file, not a directory", where=str(out),
                          hint="pass --out with a directory")
    if not _owned(out):
        raise OutputError("the output directory holds files gpudash did not write (no manifest.json)",
                          where=str(out), hint="choose another --out, or empty the directory")
    everything = with_manifest(files)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    except OSError as exc:
        raise OutputError(f"cannot create the output directory ({exc.strerror})", where=str(out.parent),
                          hint="check the path and its permissions") from None
    try:
        for relative, data in everything.items():
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        os.chmod(staging, 0o755)
        if out.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.replace(out, retired / "build")
            os.replace(staging, out)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, out)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise OutputError(f"cannot write the build ({exc.strerror})", where=str(exc.filename or out),
                          hint="check free space and permissions; the previous build is unchanged") from None


@dataclass(frozen=True)
class Difference:
    path: str
    change: str  # "missing", "changed", "extra"


def compare(out: Path, files: dict[str, bytes]) -> list[Difference]:
    """What differs between `out` on disk and what would be generated."""
    expected = with_manifest(files)
    present = {str(p.relative_to(out)): p for p in out.rglob("*") if p.is_file()} if out.is_dir() else {}
    differences = []
    for path in sorted(set(expected) | set(present)):
        if path not in present:
            differences.append(Difference(path, "missing"))
        elif path not in expected:
            differences.append(Difference(path, "extra"))
        elif present[path].read_bytes() != expected[path]:
            differences.append(Difference(path, "changed"))
    return differences

